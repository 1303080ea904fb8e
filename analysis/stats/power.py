"""Sample size for a two-sample, equal-n Student t-test (two-sided by default).

Power at n per group for standardised effect d (Cohen 1988, ch. 2):
  df = 2n - 2, ncp = d·sqrt(n/2), t_c = t_{1-alpha/2, df},
  power = P(T'_{df,ncp} > t_c) + P(T'_{df,ncp} < -t_c)  with T' the noncentral t (scipy.stats.nct).
reps_needed returns the smallest n >= 2 with power >= target (Cohen's table: d=0.8, alpha=.05, power=.8 -> 26).

n_for_halfwidth is the plain projection instead: the smallest n whose Student t half-width t_{1-alpha/2, n-1}·s/√n
falls below a distance d, the spread s taken as known (no power, no sampling error of s).
"""
import numpy as np
from scipy import stats as _st

from analysis.errors import AnalysisError
from analysis.stats._validate import probability


def power_two_sample(d, n, alpha=0.05, two_sided=True):
    """Power of the two-sample t-test with n per group and effect size d."""
    n = int(n)
    if n < 2:
        raise AnalysisError(f"power: n must be >= 2, got {n}")
    df = 2 * n - 2
    ncp = abs(float(d)) * np.sqrt(n / 2.0)
    if two_sided:
        tc = _st.t.ppf(1 - alpha / 2, df)
        return float(_st.nct.sf(tc, df, ncp) + _st.nct.cdf(-tc, df, ncp))
    tc = _st.t.ppf(1 - alpha, df)
    return float(_st.nct.sf(tc, df, ncp))


def reps_needed(d, alpha=0.05, power=0.8, two_sided=True, max_n=100000):
    """Smallest replicates per group reaching ``power`` for effect size ``d`` (Cohen's d)."""
    d = float(d)
    if not np.isfinite(d) or d == 0:
        raise AnalysisError(f"reps_needed: effect size must be finite and non-zero, got {d}")
    alpha = probability(alpha, "alpha")
    power = probability(power, "power")
    n = 2
    while power_two_sample(d, n, alpha, two_sided) < power:
        n += 1
        if n > max_n:
            raise AnalysisError(f"reps_needed: more than {max_n} per group needed")
    return n


def n_for_halfwidth(s, d, alpha=0.05, n_min=2, max_n=1000):
    """Smallest n in [n_min, max_n] with t_{1-alpha/2, n-1}·s/√n < d (the two-sided (1 − alpha) t interval of a mean
    of n values of spread s narrower, on one side, than d; s and d in one unit), or None when no n up to max_n
    does. The half-width falls with n, so the smallest such n is found by bisection."""
    n_min = max(int(n_min), 2)

    def narrow(n):
        return float(_st.t.ppf(1 - alpha / 2, n - 1)) * s / np.sqrt(n) < d

    if n_min > max_n or not narrow(max_n):
        return None
    lo, hi = n_min, max_n          # narrow(hi) holds; find the first n in [lo, hi] where it does
    while lo < hi:
        mid = (lo + hi) // 2
        if narrow(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo
