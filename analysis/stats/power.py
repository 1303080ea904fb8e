"""Sample size for a two-sample, equal-n Student t-test (two-sided by default).

Power at n per group for standardised effect d (Cohen 1988, ch. 2):
  df = 2n - 2, ncp = d·sqrt(n/2), t_c = t_{1-alpha/2, df},
  power = P(T'_{df,ncp} > t_c) + P(T'_{df,ncp} < -t_c)  with T' the noncentral t (scipy.stats.nct).
reps_needed returns the smallest n >= 2 with power >= target (Cohen's table: d=0.8, alpha=.05, power=.8 -> 26).
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
