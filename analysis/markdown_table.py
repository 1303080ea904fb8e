"""Plain Markdown tables for the validation write-ups (analysis.cc_validation, analysis.netem_validation): numbers
with a fixed number of decimals, p-values, a mean with its interval, and the table itself. "—" marks a missing value."""
from __future__ import annotations

import numpy as np


def num(x, nd=2) -> str:
    """``x`` with ``nd`` decimals; "—" for None or a non-finite float."""
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "—"
    return f"{x:.{nd}f}"


def pvalue(x) -> str:
    """A p-value with 3 decimals, "<0.001" below that; "—" when missing."""
    if x is None or not np.isfinite(x):
        return "—"
    return "<0.001" if x < 0.001 else f"{x:.3f}"


def mean_ci(m, lo, hi, nd) -> str:
    """``m [lo, hi]`` with ``nd`` decimals; the mean alone when the interval is missing; "—" without a mean."""
    if not np.isfinite(m):
        return "—"
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return num(m, nd)
    return f"{num(m, nd)} [{num(lo, nd)}, {num(hi, nd)}]"


def table(header, rows) -> str:
    """A Markdown table: ``header`` (column names) and ``rows`` (sequences of cells, printed with str)."""
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)
