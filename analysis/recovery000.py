"""Study 000's loss-recovery ablation (``campaigns/recovery000.yaml``; docs/claims.md): how much the goodput drop under
random loss (statements S06 and S07 of section 4.2) depends on the senders' loss detection.

The paper ran Linux 4.15 (its section 2.1): RACK (net.ipv4.tcp_recovery bit 0x1) with a static reordering window
(min_rtt/4) *and* the classic DUPACK threshold (RFC 6675). Since 4.18 RACK's window adapts to D-SACKs and RACK
connections no longer use the RFC 6675 rule; since 6.17 that rule is gone (bit 0x1 has no effect). On this kernel the
part of 4.15's loss detection that can still run is its static window: the arms ``tcp_recovery`` 1 (the kernel's
default and what every other recording here ran: the baseline) and 3 (bit 0x2: "RACK's reordering window static
(min_rtt/4)"). A run's arm is read from its run_id (``__recN``, mpcc/families/f000.py).

**Quantities** (per cc and arm, over runs of flow 1; one value per run): goodput (Mbit/s, what dst1 received per
second of the flow: the claims' ``goodput_mbps``) at loss 0, 1 and 10 %, retransmitted and spuriously retransmitted
data segments per run (``retransmissions``, ``spurious_retransmissions`` of the router-1 capture: RFC 2883 D-SACK
evidence), and the claims' drops: goodput(0 %) - goodput(1 %) (S06: "about 7 Mbit/s") and goodput(0 %) -
goodput(10 %) (S07: "about 17"), each judged as the claim judges it (``analysis.claims.core.two_sample``: Welch
interval of the difference inside the paper's value +- 1 Mbit/s, ``analysis.claims.loss_rate.TOL_MBPS``).

**Effects** (:func:`effects`): the static window's arm minus the baseline for each drop, with a 95 % interval (standard errors of the
four means combined, Welch-Satterthwaite degrees of freedom: ``analysis.ablation.est_diff``); ``moved`` when it
excludes 0, ``toward_paper`` when that arm's drop is nearer the paper's value than the baseline's.

``python -m analysis.recovery000 [BUNDLE] [--markdown]`` prints the tables.
"""
from __future__ import annotations

import argparse
import re
import sys
from functools import lru_cache
from pathlib import Path

import pandas as pd

from analysis import ablation, loss_drops, markdown_table
from analysis.claims.loss_rate import TOL_MBPS
from analysis.errors import AnalysisError, cli_status

BUNDLE = Path(__file__).resolve().parent.parent / "data" / "recovery000"
BASELINE = 1                    # tcp_recovery of every other recording: the kernel's default (RACK alone)
STATIC = 3                      # bit 0x2 on: RACK's reordering window static at min_rtt/4, as in 4.15
ARMS = (BASELINE, STATIC)
ARM_LABEL = {BASELINE: "adaptive RACK window (tcp_recovery 1, today's default)",
             STATIC: "static RACK window (tcp_recovery 3, as Linux 4.15)"}
ARM = "tcp_recovery"            # the arm column
CCS, CLAIMS, ALPHA = loss_drops.CCS, loss_drops.CLAIMS, loss_drops.ALPHA
LEVELS = (0.0, 1.0, 10.0)       # loss_pct
_REC_RE = re.compile(r"__rec(\d)(?=__)")


def arm_of(run_ids) -> pd.Series:
    """tcp_recovery of each run_id (``__recN``), <NA> where the run_id has none (a run of the kernel's default)."""
    rid = pd.Series(list(run_ids), dtype=object).astype(str)
    return pd.to_numeric(rid.str.extract(_REC_RE, expand=False), errors="coerce").astype("Int64")


def with_arm(df: pd.DataFrame) -> pd.DataFrame:
    """Flow-1 rows of a study-000 loss_rate dataset (``analysis.dataset.load_campaign``) with a ``tcp_recovery``
    column (runs without ``__recN`` count as the kernel's default, :data:`BASELINE`)."""
    if df.empty:
        return df.assign(tcp_recovery=pd.Series(dtype="Int64"))
    out = loss_drops.loss_rate_rows(df)
    out["tcp_recovery"] = arm_of(out["run_id"]).fillna(BASELINE).to_numpy()
    return out


def table(df: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """Per (cc, tcp_recovery, loss_pct): runs, goodput mean with its (1 - alpha) t interval (Mbit/s), and the mean
    retransmitted and spuriously retransmitted data segments per run (``analysis.loss_drops.table``)."""
    return loss_drops.table(with_arm(df), ARM, ARMS, alpha)


def drops(df: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """Per (claim S06/S07, cc, tcp_recovery): the drop goodput(0 %) - goodput(loss) in Mbit/s with its Welch
    interval and the verdict the claim's own rule gives it (``analysis.loss_drops.drops``)."""
    return loss_drops.drops(with_arm(df), ARM, ARMS, alpha)


def effects(df: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """Per (claim, cc): the drop under each arm and :data:`STATIC` minus the baseline with its (1 - alpha) interval
    (Mbit/s); ``moved`` when that interval excludes 0; ``toward_paper`` True/False when it moved nearer to / farther
    from the paper's drop, None when it did not move (``analysis.loss_drops.effects``)."""
    return (loss_drops.effects(with_arm(df), ARM, BASELINE, STATIC, alpha)
            .rename(columns={"other_drop_mbps": "static_drop_mbps"}))


# --------------------------------------------------------------------------------------------- the bundle
def load(bundle=None) -> pd.DataFrame | None:
    """Rows of the ablation bundle (default :data:`BUNDLE`), or None before it is recorded and bundled."""
    b = Path(bundle) if bundle is not None else BUNDLE
    if not (b / "bundle.json").is_file():
        return None
    from analysis.dataset import load_campaign
    return load_campaign(b, progress=False)


def progress(bundle=None) -> tuple[int, int] | None:
    """(complete runs, planned runs) of the bundle, None without one (``analysis.ablation.recording_progress``)."""
    return ablation.recording_progress(BUNDLE if bundle is None else bundle)


def cite(claim: str, cc: str, bundle=None) -> dict | None:
    """What the ablation measured for ``claim`` (S06, S07) and ``cc``, once its bundle holds every planned run:
    ``runs`` (complete), ``drop`` {arm: (mean, low, high, verdict)}, and the effect row (diff, diff_low, diff_high,
    moved, toward_paper) as a dict; None before that, or without rows for it."""
    prog = progress(bundle)
    if prog is None or prog[0] < prog[1]:
        return None
    dr, ef = _tables(str(Path(BUNDLE if bundle is None else bundle).resolve()), prog)
    return loss_drops.citation(dr, ef, ARM, claim, cc, prog[0], key=int)


@lru_cache(maxsize=2)
def _tables(bundle: str, prog: tuple[int, int]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(:func:`drops`, :func:`effects`) of a bundle, worked out once per bundle and recording progress (every claim's
    explanation cites them)."""
    df = load(bundle)
    return drops(df), effects(df)


# --------------------------------------------------------------------------------------------- report
_f, _md = markdown_table.num, markdown_table.table


def report(df: pd.DataFrame, alpha: float = ALPHA) -> str:
    """The three tables as Markdown: goodput per arm and loss, the claims' drops per arm, the static window's effect."""
    t, dr, ef = table(df, alpha), drops(df, alpha), effects(df, alpha)
    out = [f"Goodput of flow 1 (Mbit/s, mean [{100 * (1 - alpha):g} % t-interval] over runs) and retransmitted / "
           "spuriously retransmitted data segments per run:\n",
           _md(["cc", "loss detection", "loss (%)", "runs", "goodput (Mbit/s)", "retransmissions", "spurious"],
               [[r.cc, ARM_LABEL[r.tcp_recovery], _f(r.loss_pct, 0), r.runs,
                 markdown_table.mean_ci(r.goodput_mbps, r.goodput_low, r.goodput_high, 2),
                 _f(r.retransmissions, 0), _f(r.spurious_retransmissions, 0)] for r in t.itertuples()]),
           f"\nThe claims' drops, goodput(0 %) - goodput(loss), Welch interval, judged as the claim judges it "
           f"(the paper's value +- {TOL_MBPS:g} Mbit/s):\n",
           _md(["claim", "cc", "loss detection", "paper (Mbit/s)", "drop (Mbit/s)", "verdict"],
               [[r.claim, r.cc, ARM_LABEL[r.tcp_recovery], _f(r.paper_drop_mbps, 0),
                 markdown_table.mean_ci(r.drop_mbps, r.drop_low, r.drop_high, 2), r.verdict]
                for r in dr.itertuples()]),
           "\nThe static window minus the adaptive one (Mbit/s of drop, 95 % interval):\n",
           _md(["claim", "cc", "adaptive window", "static window", "difference", "moved", "toward the paper"],
               [[r.claim, r.cc, _f(r.baseline_drop_mbps, 2), _f(r.static_drop_mbps, 2),
                 markdown_table.mean_ci(r.diff, r.diff_low, r.diff_high, 2), "yes" if r.moved else "no",
                 "—" if r.toward_paper is None else ("yes" if r.toward_paper else "no")] for r in ef.itertuples()])]
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m analysis.recovery000",
                                 description="Study 000's loss-recovery ablation: tables from its bundle.")
    ap.add_argument("bundle", nargs="?", default=str(BUNDLE), help="the bundle (default data/recovery000)")
    args = ap.parse_args(argv)

    def work():
        df = load(args.bundle)
        if df is None:
            raise AnalysisError(f"{args.bundle}: no bundle.json (not recorded and bundled yet: "
                                "tools/record_queue.sh run records campaigns/recovery000.yaml)")
        sys.stdout.write(report(df))
    return cli_status(work)


if __name__ == "__main__":
    sys.exit(main())
