"""Runs touched by the kernel defect of the BPF congestion controls (docs/cc-guard.md, testbed/cc/cc_guard.h).

On this repository's development kernel a connection run by a BPF struct_ops port now and then holds
snd_ssthresh = 2165326096 that no hook wrote; the kernel's rate reduction then sets cwnd to hundreds of millions of
packets and the sender sends its whole receive window at once. Ports built with cc_guard.h repair it at their next
hook; runs recorded before (every study-004 run up to 2026-11-28, study 000's bic) were not protected.

:func:`affected_runs` names the unguarded runs whose ``ss`` samples show the defect: a cwnd of at least
:data:`CWND_IMPOSSIBLE_PKTS` packets (the corrupted ssthresh divided by any plausible prior cwnd lies far above it; no
path of these studies holds more than a few hundred packets); :func:`transient_runs` the guarded runs where one sample
caught the value before the guard repaired it. A run without ss samples of the data connection is not judged.
:func:`guard_repairs` reads what the guard repaired while a run's flows ran (meta.json ``cc_guard``; host-wide
counters, so concurrent runs of the same cc share them).
"""
from __future__ import annotations

import pandas as pd

CWND_IMPOSSIBLE_PKTS = 2 ** 20     # packets


def impossible_cwnd_runs(df: pd.DataFrame, column: str = "cwnd_max_pkts") -> set[str]:
    """run_ids of per-flow rows ``df`` (``load_campaign``) whose largest ss cwnd (``column``, packets) reached
    :data:`CWND_IMPOSSIBLE_PKTS` in any flow."""
    if df.empty or column not in df:
        return set()
    x = pd.to_numeric(df[column], errors="coerce")
    return set(df.loc[x >= CWND_IMPOSSIBLE_PKTS, "run_id"].astype(str))


def guarded_runs(campaign_dir) -> set[str]:
    """run_ids of ``campaign_dir`` whose meta.json records a guard for the run's cc (``cc_guard``: recorded with
    testbed/cc/cc_guard.h); empty when the directory cannot be read."""
    from analysis.dataset import run_metas
    out = set()
    try:
        for rid, meta in run_metas(campaign_dir):
            if guard_repairs(meta).get((meta.get("params") or {}).get("cc")) is not None:
                out.add(str(rid))
    except Exception:     # noqa: BLE001  (a dataset without a readable listing has no guarded runs to name)
        return set()
    return out


def _guarded(df: pd.DataFrame) -> set[str]:
    d = df.attrs.get("campaign_dir")
    return guarded_runs(d) if d else set()


def split(df: pd.DataFrame, column: str = "cwnd_max_pkts", guarded: set[str] | None = None) -> tuple[set, set]:
    """(:func:`affected_runs`, :func:`transient_runs`) of ``df`` from one reading of its listing."""
    hit = impossible_cwnd_runs(df, column)
    if not hit:
        return set(), set()
    g = _guarded(df) if guarded is None else guarded
    return hit - g, hit & g


def affected_runs(df: pd.DataFrame, column: str = "cwnd_max_pkts", guarded: set[str] | None = None) -> set[str]:
    """Runs the defect hit without a guard: :func:`impossible_cwnd_runs` not among ``guarded`` (default: the runs of
    ``df.attrs["campaign_dir"]`` recorded with the guard, :func:`guarded_runs`). Such a run sent its whole receive
    window at once, so every measurement of it is the defect's."""
    return split(df, column, guarded)[0]


def transient_runs(df: pd.DataFrame, column: str = "cwnd_max_pkts", guarded: set[str] | None = None) -> set[str]:
    """Guarded runs with an impossible ss cwnd: a sample caught the defect's value in the moment before the guard's
    next hook repaired it (measured: one sample, cwnd 240,591,796 with 10 packets unacknowledged, then 4). Their
    delays and bytes are the controller's; their cwnd statistics (max, time average) are that one sample's."""
    return split(df, column, guarded)[1]


def guard_repairs(meta: dict) -> dict:
    """{cc: {"ssthresh_repairs": n, "cwnd_repairs": n}} of one run's meta.json (``cc_guard``; runs recorded before the
    guard have none: {}). None for a cc without a guard."""
    out = {}
    for cc, v in (meta.get("cc_guard") or {}).items():
        out[cc] = None if v is None else {k: int(v.get(k, 0)) for k in ("ssthresh_repairs", "cwnd_repairs")}
    return out
