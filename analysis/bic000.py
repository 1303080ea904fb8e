"""Study 000 with the paper's own BIC (``campaigns/bic000.yaml``; docs/kernel-415.md): do study 000's BIC claims
change when BIC computes what the paper's Linux 4.15 computed?

**Arms** (column ``bic_kernel``): ``6.1`` (cc ``bic``: ``testbed/cc/bic.bpf.c``, the port of Linux 6.1's tcp_bic.c,
which every other recording here ran; the baseline) and ``4.15`` (cc ``bic415``: ``testbed/cc/bic415.bpf.c``, the same
port with 4.15's ``bictcp_cong_avoid``: one segment counted per ACK in congestion avoidance, validated in the VM
against 4.15's own file built as a module, testbed/cc/bic415-kernel/README.md). Everything else is the host's:
this kernel's TCP (the loss detection of today's kernels), the paper's switch (queue_model tbf-netem), 100-s runs.

**Quantities**: each arm is scored as study 000's claims score a dataset (``analysis.claims.registry.evaluate``) on
the runs of that BIC, with ``bic415`` read as the paper's BIC (:func:`as_paper_bic`): :func:`claims_by_arm` keeps
the claims about BIC (its own claims and Table 4's BIC pairs) that both arms can judge. :func:`drop_effects` adds,
for S06 and S07, 4.15's drop minus 6.1's with a 95 % Welch interval (``analysis.loss_drops``), and
:func:`jain_effects` each BIC pair's Jain index (Table 4's, of the run's two goodputs) 4.15 minus 6.1, likewise.

``python -m analysis.bic000 [BUNDLE]`` prints the tables.
"""
from __future__ import annotations

import argparse
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import loss_drops, markdown_table, paper_bic
from analysis.ablation import est_diff, est_mean, excludes_zero, recording_progress
from analysis.errors import AnalysisError, cli_status
from analysis.metrics.fairness import pair_jain

BUNDLE = Path(__file__).resolve().parent.parent / "data" / "bic000"
ARM = "bic_kernel"
BASELINE, PAPER_KERNEL = "6.1", "4.15"
ARMS = (BASELINE, PAPER_KERNEL)
#: the cc name of each arm's BIC
CC_OF = paper_bic.CC_OF
ARM_LABEL = {BASELINE: "BIC of Linux 6.1 (bic)", PAPER_KERNEL: "BIC of Linux 4.15, the paper's (bic415)"}
ALPHA = 0.05
#: Table 4's pairs with BIC (analysis/reference: Table 2), as (pair, cc, cc2)
BIC_PAIRS = ((2, "bic", "cubic"), (3, "bic", "reno"), (6, "bbr", "bic"))


def as_paper_bic(df: pd.DataFrame, kernel: str) -> pd.DataFrame:
    """The rows of runs whose BIC is ``kernel``'s (runs of the other BIC left out, runs without BIC kept), with
    ``bic415`` renamed ``bic`` in cc and cc2: the dataset as study 000's claims read it, BIC being that kernel's
    (``analysis.paper_bic.select``)."""
    return paper_bic.select(df, kernel)


def with_arm(df: pd.DataFrame) -> pd.DataFrame:
    """Flow-1 rows of the loss_rate runs of either BIC with a ``bic_kernel`` column and cc ``bic``."""
    d = loss_drops.loss_rate_rows(df)
    d = d[d["cc"].isin(CC_OF.values())].copy()
    d[ARM] = d["cc"].map(paper_bic.KERNEL_OF)
    d["cc"] = "bic"
    return d


def drop_effects(df: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """Per claim S06 / S07: BIC's drop goodput(0 %) - goodput(loss) under each arm and 4.15 minus 6.1 with its
    (1 - alpha) interval, Mbit/s (``analysis.loss_drops.effects``)."""
    return (loss_drops.effects(with_arm(df), ARM, BASELINE, PAPER_KERNEL, alpha)
            .rename(columns={"other_drop_mbps": "paper_kernel_drop_mbps"}))


def drops(df: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """Per claim S06 / S07 and arm: BIC's drop with its Welch interval and the verdict the claim's own rule gives it
    (``analysis.loss_drops.drops``)."""
    return loss_drops.drops(with_arm(df), ARM, ARMS, alpha)


def _pair_jains(df: pd.DataFrame, cc: str, cc2: str) -> np.ndarray:
    """Jain's index of each two-flow run of the pair (``pair_jain`` leaves out runs without two valid goodputs)."""
    return pair_jain(df[(df["experiment"] == "tcp_fairness") & (df["cc"] == cc) & (df["cc2"] == cc2)]).to_numpy(float)


def jain_effects(df: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """Per BIC pair of Table 4: Jain's index of the run's two goodputs (``pair_jain``, as Table 4 computes it) under
    each arm (mean over runs) and 4.15 minus 6.1 with its (1 - alpha) Welch interval; ``moved`` when it excludes 0."""
    rows = []
    for k, cc, cc2 in BIC_PAIRS:
        est = {}
        for a in ARMS:
            name = {"bic": CC_OF[a]}
            est[a] = est_mean(_pair_jains(df, name.get(cc, cc), name.get(cc2, cc2)))
        if not (est[BASELINE].n and est[PAPER_KERNEL].n):
            continue
        e = est_diff(est[PAPER_KERNEL], est[BASELINE])
        lo, hi = e.interval(alpha)
        rows.append({"pair": k, "cc": cc, "cc2": cc2, "runs_baseline": est[BASELINE].n,
                     "runs_paper_kernel": est[PAPER_KERNEL].n, "baseline_jain": est[BASELINE].mean,
                     "paper_kernel_jain": est[PAPER_KERNEL].mean, "diff": e.mean, "diff_low": lo, "diff_high": hi,
                     "moved": excludes_zero(lo, hi)})
    return pd.DataFrame(rows, columns=["pair", "cc", "cc2", "runs_baseline", "runs_paper_kernel", "baseline_jain",
                                       "paper_kernel_jain", "diff", "diff_low", "diff_high", "moved"])


#: S11: BIC's mean RTT at loss 1 % (multipath, 10 ms), the paper's value (ms); data/reference/statements.csv
S11_LOSS_PCT, S11_PAPER_MS = 1.0, 12.0


def rtt_effect(df: pd.DataFrame, alpha: float = ALPHA) -> dict | None:
    """S11 for BIC: flow 1's mean RTT (``rtt_mean_ms``, the capture's ACK-based RTT, ms) at loss 1 % under each arm
    (mean and (1 - alpha) t interval over runs) and 4.15 minus 6.1 with its Welch interval; ``moved`` when that
    excludes 0, ``toward_paper`` (nearer the paper's 12 ms) when it moved. None without runs of both arms."""
    d = with_arm(df)
    d = d[d["loss_pct"] == S11_LOSS_PCT]
    est = {a: est_mean(d.loc[d[ARM] == a, "rtt_mean_ms"].dropna().to_numpy(float)) for a in ARMS}
    if not (est[BASELINE].n and est[PAPER_KERNEL].n):
        return None
    e = est_diff(est[PAPER_KERNEL], est[BASELINE])
    lo, hi = e.interval(alpha)
    moved = excludes_zero(lo, hi)
    arms = {a: (est[a].mean, *est[a].interval(alpha), est[a].n) for a in ARMS}
    nearer = abs(est[PAPER_KERNEL].mean - S11_PAPER_MS) < abs(est[BASELINE].mean - S11_PAPER_MS)
    return {"loss_pct": S11_LOSS_PCT, "paper_ms": S11_PAPER_MS, "rtt_ms": arms, "diff": e.mean, "diff_low": lo,
            "diff_high": hi, "moved": moved, "toward_paper": (bool(nearer) if moved else None)}


def cite_rtt(bundle=None) -> dict | None:
    """:func:`rtt_effect` on the bundle (with ``runs``) once it holds every planned run; None before."""
    got = _complete(bundle)
    if got is None or got[1]["rtt"] is None:
        return None
    return {"runs": got[0], **got[1]["rtt"]}


def cite_jain(pair: int, bundle=None) -> dict | None:
    """Table 4's BIC pair ``pair``: its :func:`jain_effects` row as a dict, with ``runs`` (the bundle's) and
    ``paper_jain`` (Table 4) and ``toward_paper`` (when moved), once the bundle holds every planned run; None before,
    or for a pair without BIC."""
    got = _complete(bundle)
    if got is None:
        return None
    je = got[1]["jain"]
    row = je[je["pair"] == int(pair)]
    if row.empty:
        return None
    r = row.iloc[0].to_dict()
    from analysis import reference
    paper = float(reference.load_table4().set_index("pair").loc[int(pair), "jain"])
    nearer = abs(r["paper_kernel_jain"] - paper) < abs(r["baseline_jain"] - paper)
    return {"runs": got[0], **r, "paper_jain": paper, "toward_paper": (bool(nearer) if r["moved"] else None)}


def _about_bic(res: pd.DataFrame) -> pd.Series:
    return pd.Series([paper_bic.about_bic(c, s) for c, s in zip(res["claim_id"], res["statement"])],
                     index=res.index, dtype=bool)


def claims_by_arm(df: pd.DataFrame, alpha: float = ALPHA, n_boot: int = 9999) -> pd.DataFrame:
    """Study 000's claims about BIC, scored on each arm (``registry.evaluate`` of :func:`as_paper_bic`): one row per
    claim that both arms can judge (neither "not run"), with each arm's estimate, interval and verdict."""
    from analysis.claims.registry import evaluate
    per = {}
    for a in ARMS:
        res = evaluate(as_paper_bic(df, a), alpha=alpha, n_boot=n_boot)
        res = res[_about_bic(res) & (res["verdict"] != "not run")]
        per[a] = res.set_index("claim_id")
    ids = [c for c in per[BASELINE].index if c in per[PAPER_KERNEL].index]
    rows = []
    for c in ids:
        b, p = per[BASELINE].loc[c], per[PAPER_KERNEL].loc[c]
        rows.append({"claim_id": c, "statement": b["statement"], "paper_value": b["paper_value"],
                     "baseline_estimate": b["ours"], "baseline_low": b["ci_low"], "baseline_high": b["ci_high"],
                     "baseline_verdict": b["verdict"], "paper_kernel_estimate": p["ours"],
                     "paper_kernel_low": p["ci_low"], "paper_kernel_high": p["ci_high"],
                     "paper_kernel_verdict": p["verdict"]})
    return pd.DataFrame(rows, columns=["claim_id", "statement", "paper_value", "baseline_estimate", "baseline_low",
                                       "baseline_high", "baseline_verdict", "paper_kernel_estimate",
                                       "paper_kernel_low", "paper_kernel_high", "paper_kernel_verdict"])


# --------------------------------------------------------------------------------------------- the bundle
def load(bundle=None) -> pd.DataFrame | None:
    """Rows of the bundle (default :data:`BUNDLE`), or None before it is recorded and bundled."""
    b = Path(bundle) if bundle is not None else BUNDLE
    if not (b / "bundle.json").is_file() and not (b / "campaign.json").is_file():
        return None
    from analysis.dataset import load_campaign
    return load_campaign(b, progress=False)


def progress(bundle=None) -> tuple[int, int] | None:
    """(complete runs, planned runs) of the bundle, None without one (``analysis.ablation.recording_progress``)."""
    return recording_progress(BUNDLE if bundle is None else bundle)


def cite(claim: str, bundle=None) -> dict | None:
    """What the campaign measured for BIC's ``claim`` (S06, S07) once its bundle holds every planned run: ``runs``,
    ``drop`` {arm: (mean, low, high, verdict)} and the effect (diff, diff_low, diff_high, moved, toward_paper,
    paper_drop_mbps, loss_pct); None before that, or without rows for it."""
    got = _complete(bundle)
    if got is None:
        return None
    return loss_drops.citation(got[1]["drops"], got[1]["drop_effects"], ARM, claim, "bic", got[0])


def _complete(bundle=None) -> tuple[int, dict] | None:
    """(runs, :func:`_tables`) once the bundle holds every planned run; None before (what every citation waits for)."""
    prog = progress(bundle)
    if prog is None or prog[0] < prog[1]:
        return None
    return prog[0], _tables(str(Path(BUNDLE if bundle is None else bundle).resolve()), prog)


@lru_cache(maxsize=2)
def _tables(bundle: str, prog: tuple[int, int]) -> dict:
    """Every table the citations read, of one state of the bundle (loaded once): drops, drop_effects, rtt (S11's
    :func:`rtt_effect`) and jain (:func:`jain_effects`)."""
    df = load(bundle)
    return {"drops": drops(df), "drop_effects": drop_effects(df), "rtt": rtt_effect(df), "jain": jain_effects(df)}


# --------------------------------------------------------------------------------------------- report
_f, _md, _ci = markdown_table.num, markdown_table.table, markdown_table.mean_ci


def report(df: pd.DataFrame, alpha: float = ALPHA) -> str:
    """The three tables as Markdown: BIC's claims per arm, S06/S07's drops, Table 4's BIC pairs' Jain index."""
    cl, de, je = claims_by_arm(df, alpha), drop_effects(df, alpha), jain_effects(df, alpha)
    out = ["Study 000's claims about BIC, scored on each BIC (estimate [95 % interval], verdict):\n",
           _md(["claim", "statement", "paper", f"{ARM_LABEL[BASELINE]}", f"{ARM_LABEL[PAPER_KERNEL]}"],
               [[r.claim_id, r.statement, r.paper_value,
                 f"{_ci(r.baseline_estimate, r.baseline_low, r.baseline_high, 3)} {r.baseline_verdict}",
                 f"{_ci(r.paper_kernel_estimate, r.paper_kernel_low, r.paper_kernel_high, 3)} "
                 f"{r.paper_kernel_verdict}"] for r in cl.itertuples()]),
           "\nBIC's goodput drop under loss (Mbit/s), 4.15's BIC minus 6.1's (95 % interval):\n",
           _md(["claim", "loss (%)", "paper", "6.1's BIC", "4.15's BIC", "difference", "moved", "toward the paper"],
               [[r.claim, _f(r.loss_pct, 0), _f(r.paper_drop_mbps, 0), _f(r.baseline_drop_mbps, 2),
                 _f(r.paper_kernel_drop_mbps, 2), _ci(r.diff, r.diff_low, r.diff_high, 2), "yes" if r.moved else "no",
                 "—" if r.toward_paper is None else ("yes" if r.toward_paper else "no")] for r in de.itertuples()]),
           "\nTable 4's BIC pairs: Jain's index of the two goodputs, 4.15's BIC minus 6.1's (95 % interval):\n",
           _md(["pair", "flows", "runs", "6.1's BIC", "4.15's BIC", "difference", "moved"],
               [[r.pair, f"{r.cc} + {r.cc2}", f"{r.runs_baseline} / {r.runs_paper_kernel}", _f(r.baseline_jain, 3),
                 _f(r.paper_kernel_jain, 3), _ci(r.diff, r.diff_low, r.diff_high, 3), "yes" if r.moved else "no"]
                for r in je.itertuples()])]
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m analysis.bic000",
                                 description="Study 000 with the paper's BIC (4.15's) beside 6.1's: tables.")
    ap.add_argument("bundle", nargs="?", default=str(BUNDLE), help="the bundle or campaign directory (default data/bic000)")
    args = ap.parse_args(argv)

    def work():
        df = load(args.bundle)
        if df is None:
            raise AnalysisError(f"{args.bundle}: no bundle.json or campaign.json (not recorded yet: "
                                "tools/record_queue.sh run records campaigns/bic000.yaml)")
        sys.stdout.write(report(df))
    return cli_status(work)


if __name__ == "__main__":
    sys.exit(main())
