"""Holm (1979) step-down correction of a family of p-values (controls the family-wise error rate).

Sort p ascending p_(1) <= ... <= p_(m); adjusted p_(i) = max_{j<=i} min(1, (m - j + 1)·p_(j)).
Returned in the input order.
"""
import numpy as np

from analysis.errors import AnalysisError


def holm(pvalues):
    """Holm-adjusted p-values, same order and length as ``pvalues``."""
    p = np.asarray(pvalues, dtype=float).ravel()
    if p.size == 0:
        raise AnalysisError("holm: empty p-value list")
    if np.any(~np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise AnalysisError("holm: p-values must be finite and within [0, 1]")
    m = p.size
    order = np.argsort(p, kind="mergesort")
    adj = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adj = np.maximum.accumulate(adj)
    out = np.empty(m)
    out[order] = adj
    return out
