"""Two-sample and k-sample comparisons of replicate values, with effect sizes.

* welch_t: Welch (1947) unequal-variance t-test, two-sided; df by Welch–Satterthwaite.
* mann_whitney: Mann–Whitney U (1947), two-sided, scipy's default method (exact for small n without ties).
* kruskal: Kruskal–Wallis H (1952) across k >= 2 groups (tie-corrected).
* hedges_g: standardised mean difference with pooled sd (ddof=1) and the small-sample correction
  J = 1 - 3/(4(n1+n2) - 9) (Hedges 1981; Hedges & Olkin 1985, eq. 5.4 approximation): g = J·(m1-m2)/s_p,
  s_p = sqrt(((n1-1)s1² + (n2-1)s2²)/(n1+n2-2)).
* cliffs_delta: δ = (#{x_i > y_j} - #{x_i < y_j}) / (n1·n2)  (Cliff 1993), in [-1, 1].
Sign convention: positive effect means x > y.
"""
import numpy as np
from scipy import stats as _st

from analysis.errors import AnalysisError
from analysis.stats._validate import sample


def welch_t(x, y):
    """Welch's t-test (two-sided). Returns dict(t, df, p, diff) where diff = mean(x) - mean(y)."""
    a, b = sample(x, "x"), sample(y, "y")
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    diff = float(a.mean() - b.mean())
    se2 = va + vb
    if se2 == 0:
        raise AnalysisError("welch_t: both samples have zero variance")
    t = diff / np.sqrt(se2)
    df = se2 ** 2 / (va ** 2 / (a.size - 1) + vb ** 2 / (b.size - 1))
    p = 2 * _st.t.sf(abs(t), df)
    return {"t": float(t), "df": float(df), "p": float(p), "diff": diff}


def mann_whitney(x, y):
    """Mann–Whitney U test, two-sided. Returns dict(u, p) with U the statistic for x."""
    a, b = sample(x, "x", 1), sample(y, "y", 1)
    r = _st.mannwhitneyu(a, b, alternative="two-sided")
    return {"u": float(r.statistic), "p": float(r.pvalue)}


def kruskal(*groups):
    """Kruskal–Wallis H test across groups (each 1-D). Returns dict(h, df, p)."""
    if len(groups) < 2:
        raise AnalysisError("kruskal: need at least 2 groups")
    gs = [sample(g, f"group {i}", 1) for i, g in enumerate(groups)]
    if np.ptp(np.concatenate(gs)) == 0:
        raise AnalysisError("kruskal: all values are identical")
    r = _st.kruskal(*gs)
    return {"h": float(r.statistic), "df": len(gs) - 1, "p": float(r.pvalue)}


def hedges_g(x, y):
    """Hedges' g of x relative to y (bias-corrected Cohen's d with pooled sd)."""
    a, b = sample(x, "x"), sample(y, "y")
    n1, n2 = a.size, b.size
    sp = np.sqrt(((n1 - 1) * a.var(ddof=1) + (n2 - 1) * b.var(ddof=1)) / (n1 + n2 - 2))
    if sp == 0:
        raise AnalysisError("hedges_g: pooled standard deviation is zero")
    j = 1.0 - 3.0 / (4.0 * (n1 + n2) - 9.0)
    return float(j * (a.mean() - b.mean()) / sp)


def cliffs_delta(x, y):
    """Cliff's delta of x relative to y: P(X > Y) - P(X < Y) over all pairs."""
    a, b = sample(x, "x", 1), sample(y, "y", 1)
    s = np.sign(a[:, None] - b[None, :])
    return float(s.sum() / s.size)
