"""Input checks shared by the stats modules (one-line AnalysisError messages)."""
import numpy as np

from analysis.errors import AnalysisError


def sample(x, name="x", min_n=2):
    """Return ``x`` as a 1-D float array of finite values; raise AnalysisError otherwise."""
    a = np.asarray(x, dtype=float).ravel()
    if a.size < min_n:
        raise AnalysisError(f"{name}: need at least {min_n} values, got {a.size}")
    if not np.all(np.isfinite(a)):
        raise AnalysisError(f"{name}: contains NaN or infinite values")
    return a


def probability(p, name):
    """Check 0 < p < 1."""
    p = float(p)
    if not 0.0 < p < 1.0:
        raise AnalysisError(f"{name} must be in (0, 1), got {p}")
    return p
