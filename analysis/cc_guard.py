"""Runs touched by the kernel defect of the BPF congestion controls (docs/cc-guard.md, testbed/cc/cc_guard.h).

On this repository's development kernel a connection run by a BPF struct_ops port now and then holds
snd_ssthresh = 2165326096 that no hook wrote; the kernel's rate reduction then sets cwnd to hundreds of millions of
packets and the sender sends its whole receive window at once. Ports built with cc_guard.h repair it at their next
hook; runs recorded before (every study-004 run up to 2026-11-28, study 000's bic) were not protected.

:func:`affected_runs` names the runs whose ``ss`` samples show the defect: a cwnd of at least
:data:`CWND_IMPOSSIBLE_PKTS` packets (the corrupted ssthresh divided by any plausible prior cwnd lies far above it; no
path of these studies holds more than a few hundred packets). A run without ss samples of the data connection is not
judged. :func:`guard_repairs` reads what the guard repaired while a run's flows ran (meta.json ``cc_guard``; host-wide
counters, so concurrent runs of the same cc share them).
"""
from __future__ import annotations

import pandas as pd

CWND_IMPOSSIBLE_PKTS = 2 ** 20     # packets


def affected_runs(df: pd.DataFrame, column: str = "cwnd_max_pkts") -> set[str]:
    """run_ids of per-flow rows ``df`` (``load_campaign``) whose largest ss cwnd (``column``, packets) reached
    :data:`CWND_IMPOSSIBLE_PKTS` in any flow."""
    if df.empty or column not in df:
        return set()
    x = pd.to_numeric(df[column], errors="coerce")
    return set(df.loc[x >= CWND_IMPOSSIBLE_PKTS, "run_id"].astype(str))


def guard_repairs(meta: dict) -> dict:
    """{cc: {"ssthresh_repairs": n, "cwnd_repairs": n}} of one run's meta.json (``cc_guard``; runs recorded before the
    guard have none: {}). None for a cc without a guard."""
    out = {}
    for cc, v in (meta.get("cc_guard") or {}).items():
        out[cc] = None if v is None else {k: int(v.get(k, 0)) for k in ("ssthresh_repairs", "cwnd_repairs")}
    return out
