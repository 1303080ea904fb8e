"""Jain's fairness index (Jain, Chiu & Hawe 1984, DEC-TR-301, eq. 1).

    J(x_1..x_n) = (sum x_i)^2 / (n * sum x_i^2)

J is 1 when all n allocations are equal and 1/n when one flow takes everything.

Note on paper 000 (the primary study): its printed formula (1) reads sum(x^2) / (n * sum(x)), which is
wrong (it is not scale-free and is not bounded by 1); the values in its Table 4 were computed with the
correct formula above (e.g. 10.61 and 8.27 Mbit/s give 0.985), so this module implements the correct one.
"""
from __future__ import annotations

import numpy as np
import pandas as pd


def jain_index(values, n: int | None = None) -> float:
    """Jain's fairness index of ``values`` (dimensionless, in [1/n, 1]).

    ``values``: per-flow throughputs (any one unit, e.g. Mbit/s), each measured over the SAME time
    window -- choosing that common window is the caller's job. ``n``: number of flows that share the
    resource (defaults to ``len(values)``); pass it explicitly to count flows that got nothing and are
    absent from ``values``. Raises ValueError for empty, negative, non-finite or all-zero input.
    """
    x = np.asarray(values, dtype=float).ravel()
    if x.size == 0:
        raise ValueError("jain_index: no throughput values given")
    if not np.all(np.isfinite(x)):
        raise ValueError("jain_index: throughput values must be finite numbers")
    if np.any(x < 0):
        raise ValueError("jain_index: throughput values must not be negative")
    if n is None:
        n = x.size
    if int(n) != n or n < x.size:
        raise ValueError(f"jain_index: n={n} must be an integer >= the number of values ({x.size})")
    s2 = float(np.sum(x * x))
    if s2 == 0.0:
        raise ValueError("jain_index: all throughput values are zero; fairness is undefined")
    return float(np.sum(x)) ** 2 / (int(n) * s2)



def pair_jain(rows: pd.DataFrame, column: str = "goodput_mbps") -> pd.Series:
    """Jain's index of each two-flow run, J = (x1 + x2)^2 / (2 (x1^2 + x2^2)) of ``column`` in the run's flow-1 and
    flow-2 rows (dimensionless; the index above with n = 2): a pandas Series indexed by run_id. Runs without both
    flows, with a non-finite or negative value, or with both values zero are left out. With ``goodput_mbps`` (each
    flow's goodput over its own run) it is the index of the paper 000's Table 4, computed there from the two flows'
    mean throughputs (each over its own iperf3 run)."""
    if rows.empty:
        return pd.Series(dtype=float, name="jain")
    w = rows.pivot_table(index="run_id", columns="flow", values=column, aggfunc="first")
    if 1 not in w.columns or 2 not in w.columns:
        return pd.Series(dtype=float, name="jain")
    x1, x2 = w[1].to_numpy(float), w[2].to_numpy(float)
    ok = np.isfinite(x1) & np.isfinite(x2) & (x1 >= 0) & (x2 >= 0) & ((x1 > 0) | (x2 > 0))
    x1, x2 = x1[ok], x2[ok]
    return pd.Series((x1 + x2) ** 2 / (2 * (x1 * x1 + x2 * x2)), index=w.index[ok], name="jain")
