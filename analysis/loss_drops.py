"""The goodput drop under random loss (study 000, statements S06 and S07 of section 4.2) per arm of an experiment that
varies one thing about the senders: what ``analysis.recovery000`` (RACK's reordering window) and
``analysis.kernel415`` (the paper's Linux 4.15 against Debian's 6.1) share.

Input: flow-1 rows of study 000's loss_rate runs (``analysis.dataset.load_campaign``) with an arm column (``arm``
names it; its values are the arms). One value per run: ``goodput_mbps`` (Mbit/s, what dst1 received per second of
the flow: the claims' column), ``retransmissions`` and ``spurious_retransmissions`` (data segments per run, router-1
capture; spurious by RFC 2883 D-SACK evidence).

- :func:`table`: per (cc, arm, loss_pct) the runs, the goodput mean with its t interval and the mean retransmissions.
- :func:`drops`: per (claim, cc, arm) goodput(0 %) - goodput(loss) with its Welch interval, judged as the claim judges
  it (``analysis.claims.core.two_sample``: the interval inside the paper's value +- ``TOL_MBPS``).
- :func:`effects`: per (claim, cc) one arm's drop minus the baseline arm's, with a 95 % interval (the standard errors
  of the four means combined, Welch-Satterthwaite degrees of freedom: ``analysis.ablation.est_diff``); ``moved`` when
  it excludes 0, ``toward_paper`` when the other arm's drop is nearer the paper's value.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.ablation import Est, est_diff, est_mean, excludes_zero
from analysis.claims import core
from analysis.claims.loss_rate import TOL_MBPS

CCS = ("reno", "bic", "cubic")
#: statement -> (loss %, the paper's drop in Mbit/s)
CLAIMS = {"S06": (1.0, 7.0), "S07": (10.0, 17.0)}
ALPHA = 0.05


def loss_rate_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Flow-1 rows of the multipath loss_rate runs of ``df`` (a copy, without the frame's attrs)."""
    m = (df["flow"] == 1) & (df["experiment"] == "loss_rate") & (df["path_mode"] == "multipath")
    out = df.loc[m].reset_index(drop=True).copy()
    out.attrs = {}
    return out


def sample(d: pd.DataFrame, arm: str, cc: str, value, loss: float, column: str = "goodput_mbps") -> np.ndarray:
    """One value per run of (cc, arm ``value``, loss_pct ``loss``): ``column`` as a float array."""
    return core.sample(d[(d["cc"] == cc) & (d[arm] == value) & (d["loss_pct"] == loss)], column)


def _levels(d: pd.DataFrame) -> list[float]:
    return sorted(float(x) for x in d["loss_pct"].dropna().unique())


def table(d: pd.DataFrame, arm: str, arms, alpha: float = ALPHA) -> pd.DataFrame:
    """Per (cc, arm, loss_pct): runs, goodput mean with its (1 - alpha) t interval (Mbit/s), and the mean
    retransmitted and spuriously retransmitted data segments per run."""
    rows = []
    for cc in CCS:
        for a in arms:
            for loss in _levels(d):
                g = est_mean(sample(d, arm, cc, a, loss))
                if not g.n:
                    continue
                lo, hi = g.interval(alpha)
                rows.append({"cc": cc, arm: a, "loss_pct": loss, "runs": g.n, "goodput_mbps": g.mean,
                             "goodput_low": lo, "goodput_high": hi,
                             "retransmissions": est_mean(sample(d, arm, cc, a, loss, "retransmissions")).mean,
                             "spurious_retransmissions": est_mean(sample(d, arm, cc, a, loss,
                                                                         "spurious_retransmissions")).mean})
    return pd.DataFrame(rows, columns=["cc", arm, "loss_pct", "runs", "goodput_mbps", "goodput_low",
                                       "goodput_high", "retransmissions", "spurious_retransmissions"])


def drop(d: pd.DataFrame, arm: str, cc: str, value, loss: float) -> Est:
    """goodput(0 %) - goodput(``loss``) of one (cc, arm value) as an estimate (Mbit/s)."""
    return est_diff(est_mean(sample(d, arm, cc, value, 0.0)), est_mean(sample(d, arm, cc, value, loss)))


def drops(d: pd.DataFrame, arm: str, arms, alpha: float = ALPHA) -> pd.DataFrame:
    """Per (claim S06/S07, cc, arm): the drop goodput(0 %) - goodput(loss) in Mbit/s with its Welch interval and the
    verdict the claim's own rule gives it (``core.two_sample`` against the paper's value +- ``TOL_MBPS``,
    ``core.decide``)."""
    rows = []
    for sid, (loss, paper) in CLAIMS.items():
        reg = core.region("approx", paper, tol=TOL_MBPS)
        for cc in CCS:
            for a in arms:
                x, y = sample(d, arm, cc, a, 0.0), sample(d, arm, cc, a, loss)
                if not (x.size and y.size):
                    continue
                e = core.two_sample(x, y, reg, alpha)
                rows.append({"claim": sid, "cc": cc, arm: a, "loss_pct": loss, "paper_drop_mbps": paper,
                             "drop_mbps": e.value, "drop_low": e.lo, "drop_high": e.hi, "n": e.n,
                             "verdict": core.decide(e, reg)[0]})
    return pd.DataFrame(rows, columns=["claim", "cc", arm, "loss_pct", "paper_drop_mbps", "drop_mbps",
                                       "drop_low", "drop_high", "n", "verdict"])


def effects(d: pd.DataFrame, arm: str, baseline, other, alpha: float = ALPHA) -> pd.DataFrame:
    """Per (claim, cc): the drop under ``baseline`` and ``other`` and other minus baseline with its (1 - alpha)
    interval (Mbit/s); ``moved`` when that interval excludes 0; ``toward_paper`` True/False when it moved nearer to /
    farther from the paper's drop, None when it did not move."""
    rows = []
    for sid, (loss, paper) in CLAIMS.items():
        for cc in CCS:
            base, oth = drop(d, arm, cc, baseline, loss), drop(d, arm, cc, other, loss)
            if not (base.n and oth.n):
                continue
            e = est_diff(oth, base)
            lo, hi = e.interval(alpha)
            moved = excludes_zero(lo, hi)
            nearer = bool(abs(oth.mean - paper) < abs(base.mean - paper))
            rows.append({"claim": sid, "cc": cc, "loss_pct": loss, "paper_drop_mbps": paper,
                         "baseline_drop_mbps": base.mean, "other_drop_mbps": oth.mean, "diff": e.mean,
                         "diff_low": lo, "diff_high": hi, "p_value": e.p_value(), "moved": moved,
                         "toward_paper": (nearer if moved else None)})
    return pd.DataFrame(rows, columns=["claim", "cc", "loss_pct", "paper_drop_mbps", "baseline_drop_mbps",
                                       "other_drop_mbps", "diff", "diff_low", "diff_high", "p_value", "moved",
                                       "toward_paper"])


def citation(dr: pd.DataFrame, ef: pd.DataFrame, arm: str, claim: str, cc: str, runs: int, key=str) -> dict | None:
    """What an experiment measured for ``claim`` and ``cc`` from its :func:`drops` (``dr``) and :func:`effects`
    (``ef``) tables: ``runs``, ``drop`` {key(arm value): (mean, low, high, verdict)} and the effect's diff, diff_low,
    diff_high, moved, toward_paper, paper_drop_mbps and loss_pct; None without rows for them."""
    dr = dr[(dr["claim"] == claim) & (dr["cc"] == cc)]
    ef = ef[(ef["claim"] == claim) & (ef["cc"] == cc)]
    if dr.empty or ef.empty:
        return None
    return {"runs": runs,
            "drop": {key(getattr(r, arm)): (r.drop_mbps, r.drop_low, r.drop_high, r.verdict) for r in dr.itertuples()},
            **{k: ef.iloc[0][k] for k in ("diff", "diff_low", "diff_high", "moved", "toward_paper", "paper_drop_mbps",
                                          "loss_pct")}}
