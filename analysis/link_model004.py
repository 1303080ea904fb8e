"""Study 004's paper protocol under its two link models, configuration by configuration (issue 29, item 4).

**Arms.** ``htb``: the protocol's first 337 runs, recorded before it moved to ns-2's links (:data:`HTB_ARM`); each link
lets a packet go at the start of its turn at the link rate and the veth delivers it at once, so a packet's delay
lacks its own transmission time; htb counts the 14-byte Ethernet header in the rate (a 592-byte packet costs 606), its
pfifo holds ``buffer_pkts`` and its default burst lets about 2.5 packets go at once. ``store-and-forward``: the
protocol recorded again with ``testbed/chain.sh --store-and-forward`` (:func:`store_and_forward_arm`: data/study004
once promoted, data/study004-paper while it records): each packet is also delayed by its transmission time at the
link's rate (IP bytes), the pfifo holds ``buffer_pkts - 1`` and htb's burst is one packet (ns-2's DropTail and
duplex link; docs/ns2-004.md, docs/families.md "Study 004"). The arms differ by the whole link model, not by the
transmission time alone.

**Quantities** (:data:`QUANTITIES`), one value per run (``load_campaign`` rows, the run-level columns): the mean
one-way delay of every received data packet, sender capture to receiver capture (``run_delay_mean_ms``, ms: the delay
both arms have; the htb arm has no capture after the first link's queue), the bytes the receivers got
(``total_received_bytes``, bytes) and the sender's time-averaged cwnd (``cwnd_mean_pkts``, mean over the run's
flows, packets). Runs touched by the kernel defect of the BPF ports (``analysis.cc_guard``, docs/cc-guard.md: a cwnd
of millions of packets in their ss samples; recorded before testbed/cc/cc_guard.h) are flagged (``kernel_defect``)
and left out of the effects: the defect, not the link model, moved them.

**Effects** (:func:`effects`): per (experiment, cc, level) and quantity, each arm's mean over its runs and
store-and-forward minus htb with a Welch 95 % interval (``analysis.ablation.est_diff``); ``moved`` when the interval
excludes 0. For the delay, :func:`store_and_forward_ms` of the flow's path is what a store-and-forward path adds to a
packet crossing it idle (the sum of its transmission times); ``tx_inside`` says whether the interval holds it: outside
it, the links changed the queueing as well.
"""
from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import cc_guard
from analysis.ablation import est_diff, est_mean, excludes_zero
from analysis.claims.westwood import LEVEL

ROOT = Path(__file__).resolve().parents[1]
HTB_ARM = "data/study004-paper-htb"
#: where the store-and-forward recording lives: the study's main dataset once promoted, its recording bundle before
SF_CANDIDATES = ("data/study004", "data/study004-paper")
ARMS = ("htb", "store-and-forward")
ALPHA = 0.05
PACKET_BYTES = 592          # IP packet on every link (the testbed's MTU; docs/families.md "Packet size")
# per experiment: the data path's link rates (Mbit/s, in path order; None: the run's bandwidth_mbit on all four links)
# and its one-way propagation delay per flow (ms) — testbed/families/004/<experiment>.json
PATHS = {
    "client_server": ((0.5,), (50.0,)),
    "multihop_varied": ((2.0, 0.5, 0.5, 2.0), (160.0,)),
    "multihop_uniform": (None, (160.0,)),
    "bottleneck": ((2.0, 0.3, 0.5), (190.0, 180.0)),
}
UNIFORM_LINKS = 4
#: quantity -> (per-run column of load_campaign's rows, how the run's flow rows combine, unit)
QUANTITIES = {
    "delay_ms": ("run_delay_mean_ms", "first", "ms"),
    "received_bytes": ("total_received_bytes", "first", "bytes"),
    "cwnd_mean_pkts": ("cwnd_mean_pkts", "mean", "packets"),
}


def store_and_forward_ms(rates_mbit, packet_bytes: int = PACKET_BYTES) -> float:
    """Time (ms) one ``packet_bytes``-byte packet spends being transmitted on links of ``rates_mbit`` (Mbit/s), one
    after the other — what a store-and-forward link (ns-2's) adds to a packet's delay on an empty path."""
    return sum(packet_bytes * 8.0 / (float(r) * 1e6) for r in rates_mbit) * 1e3


def path_rates(experiment: str, level: float | None = None):
    """The link rates (Mbit/s) of ``experiment``'s data path; multihop_uniform's are its ``level`` (bandwidth_mbit) on
    each of its four links. None when unknown."""
    rates = PATHS.get(experiment, (None,))[0]
    if rates is None and experiment == "multihop_uniform" and level is not None and np.isfinite(level) and level > 0:
        return (float(level),) * UNIFORM_LINKS
    return rates


def run_values(df: pd.DataFrame) -> pd.DataFrame:
    """One row per run of study-004 flow rows ``df`` (``load_campaign``): run_id, experiment, cc, level (error rate,
    or multihop_uniform's bandwidth_mbit in Mbit/s), link_model (htb where not recorded), and the
    :data:`QUANTITIES`, kernel_defect (:func:`analysis.cc_guard.affected_runs`)."""
    cols = ["run_id", "experiment", "cc", "level", "link_model", *QUANTITIES, "kernel_defect"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    d = df.copy()
    d.attrs = {}
    lm = d["link_model"] if "link_model" in d else pd.Series("htb", index=d.index)
    d["link_model"] = lm.fillna("htb").astype(str)
    lvl = [d.at[i, LEVEL.get(e, "error_rate")] for i, e in zip(d.index, d["experiment"])]
    d["level"] = pd.to_numeric(pd.Series(lvl, index=d.index), errors="coerce").round(9)
    g = d.groupby("run_id", sort=True)
    out = g[["experiment", "cc", "level", "link_model"]].first()
    for q, (col, how, _unit) in QUANTITIES.items():
        x = pd.to_numeric(d[col], errors="coerce") if col in d else pd.Series(np.nan, index=d.index)
        out[q] = x.groupby(d["run_id"]).agg(how)
    out["kernel_defect"] = out.index.isin(cc_guard.affected_runs(df))     # df keeps attrs: its guarded runs
    return out.reset_index()[cols]


def effects(runs: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """Per (experiment, cc, level, quantity) with runs in both arms: n_htb, n_sf, htb and sf (each arm's mean over its
    runs), diff (sf - htb), ci_low, ci_high (Welch 1 - ``alpha`` interval), moved (the interval excludes 0), unit;
    for the delay also tx_ms (:func:`store_and_forward_ms` of the path at that level) and tx_inside (the interval
    holds tx_ms). ``runs``: :func:`run_values` of both arms, concatenated; runs flagged kernel_defect are left out."""
    rows = []
    if "kernel_defect" in runs:
        runs = runs[~runs["kernel_defect"].fillna(False).astype(bool)]
    for (exp, cc, lv), g in runs.groupby(["experiment", "cc", "level"], sort=True):
        arms = {a: g[g["link_model"] == a] for a in ARMS}
        if any(x.empty for x in arms.values()):
            continue
        for q, (_col, _how, unit) in QUANTITIES.items():
            h, s = est_mean(arms["htb"][q]), est_mean(arms["store-and-forward"][q])
            if not (h.n and s.n):
                continue
            d = est_diff(s, h)
            lo, hi = d.interval(alpha)
            row = dict(experiment=exp, cc=cc, level=float(lv), quantity=q, unit=unit, n_htb=h.n, n_sf=s.n,
                       htb=h.mean, sf=s.mean, diff=d.mean, ci_low=lo, ci_high=hi,
                       moved=excludes_zero(lo, hi), tx_ms=math.nan, tx_inside=None)
            if q == "delay_ms":
                rates = path_rates(exp, lv)
                if rates is not None:
                    row["tx_ms"] = store_and_forward_ms(rates)
                    row["tx_inside"] = bool(np.isfinite(lo) and lo <= row["tx_ms"] <= hi)
            rows.append(row)
    cols = ["experiment", "cc", "level", "quantity", "unit", "n_htb", "n_sf", "htb", "sf", "diff", "ci_low",
            "ci_high", "moved", "tx_ms", "tx_inside"]
    return pd.DataFrame(rows, columns=cols)


def summary(eff: pd.DataFrame) -> pd.DataFrame:
    """Per (experiment, quantity): cells (cc x level compared), moved (how many intervals exclude 0), the smallest,
    median and largest difference (sf - htb), relative ones in % of the htb arm's mean (diff_pct_median), and for the
    delay the transmission time a store-and-forward path adds (tx_ms_min, tx_ms_max over the levels) and the cells
    whose interval holds it (tx_inside)."""
    rows = []
    for (exp, q), g in eff.groupby(["experiment", "quantity"], sort=True):
        pct = 100.0 * g["diff"] / g["htb"].where(g["htb"] != 0)
        r = dict(experiment=exp, quantity=q, unit=g["unit"].iloc[0], cells=len(g), moved=int(g["moved"].sum()),
                 diff_min=float(g["diff"].min()), diff_median=float(g["diff"].median()),
                 diff_max=float(g["diff"].max()), diff_pct_median=float(pct.median()),
                 tx_ms_min=float(g["tx_ms"].min()), tx_ms_max=float(g["tx_ms"].max()),
                 tx_inside=int(g["tx_inside"].fillna(False).astype(bool).sum()) if q == "delay_ms" else None)
        rows.append(r)
    return pd.DataFrame(rows)


def _is_sf_bundle(d: Path) -> bool:
    """A bundle of campaign paper004 whose runs ran store-and-forward links (their run ids end ``__sf__repNN``)."""
    try:
        meta = json.loads((d / "bundle.json").read_text())
    except (OSError, ValueError):
        return False
    if meta.get("campaign") != "paper004":
        return False
    parts = sorted((d / "runs").glob("*.parquet"))     # the columnar bundle's run listing (analysis.bundle_store)
    names = pd.concat([pd.read_parquet(p, columns=["run_id"]) for p in parts])["run_id"] if parts else []
    return len(names) > 0 and all("__sf__rep" in str(n) for n in names)


def store_and_forward_arm(root: Path = ROOT, complete_only: bool = True) -> Path | None:
    """The bundle of the store-and-forward recording (the first of :data:`SF_CANDIDATES` that is one), or None; with
    ``complete_only`` only once it holds every run its campaign plans (a recording in progress is bundled between
    sessions; its partial effects are not reported, as ``analysis.ablation`` does not cite a partial ablation)."""
    from analysis.bundle_store import finished_and_planned
    for c in SF_CANDIDATES:
        if _is_sf_bundle(root / c):
            done, planned = finished_and_planned(root / c)
            return root / c if not complete_only or done >= planned else None
    return None


@lru_cache(maxsize=4)
def _load_cached(htb: str, sf: str, stamps: tuple) -> pd.DataFrame:
    from analysis.dataset import load_campaign
    parts = [run_values(load_campaign(d, progress=False)) for d in (htb, sf)]
    return pd.concat(parts, ignore_index=True)


def load(htb_dir=None, sf_dir=None, complete_only: bool = True) -> pd.DataFrame | None:
    """:func:`run_values` of both arms (default :data:`HTB_ARM` and :func:`store_and_forward_arm`, complete only
    unless ``complete_only`` is False), or None when either is missing. Cached per bundle and modification time of
    its bundle.json."""
    h = Path(htb_dir) if htb_dir is not None else ROOT / HTB_ARM
    s = Path(sf_dir) if sf_dir is not None else store_and_forward_arm(complete_only=complete_only)
    if s is None or not (h / "bundle.json").is_file() or not (s / "bundle.json").is_file():
        return None
    stamps = tuple((d / "bundle.json").stat().st_mtime_ns for d in (h, s))
    return _load_cached(str(h.resolve()), str(s.resolve()), stamps)

