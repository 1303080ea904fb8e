"""Descriptive summary of one sample of replicate values (e.g. throughput in Mbit/s over reps).

Formulas:
* mean, sd with ddof=1 (Bessel), se = sd/sqrt(n).
* t-interval: mean ± t_{1-alpha/2, n-1} · se  (Student 1908; any statistics text).
* bootstrap interval: ``scipy.stats.bootstrap`` on the mean, BCa (Efron 1987) with a fixed seed;
  falls back to the percentile method when BCa is undefined (e.g. all values equal).
* median interval (distribution-free, order statistics): with B ~ Binomial(n, 1/2), the interval
  (x_(k), x_(n-k+1)) covers the population median with probability 1 - 2·P(B <= k-1); k is the largest
  value keeping that coverage >= 1 - alpha (Conover, *Practical Nonparametric Statistics*, 3rd ed., §3.2;
  Hollander & Wolfe). For n = 10, alpha = 0.05 this gives (x_(2), x_(9)) with coverage 0.979.
  If even k = 1 does not reach 1 - alpha (n <= 5) the interval is (min, max) with its lower coverage reported.
Units are those of the input.
"""
import inspect
import warnings

import numpy as np
from scipy import stats as _st

from analysis.stats._validate import probability, sample


# scipy >= 1.15 names the generator argument ``rng``; older releases (>= 1.10 supported) use ``random_state``.
_RNG_KW = "rng" if "rng" in inspect.signature(_st.bootstrap).parameters else "random_state"


def _boot(a, alpha, n_boot, seed, method):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # degenerate BCa -> NaN, handled by the caller's fallback
        res = _st.bootstrap((a,), np.mean, confidence_level=1 - alpha, n_resamples=n_boot, method=method,
                            **{_RNG_KW: np.random.default_rng(seed)})
    return res.confidence_interval


def median_ci(x, alpha=0.05):
    """Distribution-free order-statistic CI for the median: returns (low, high, coverage, k)."""
    a = np.sort(sample(x, "x", 1))
    alpha = probability(alpha, "alpha")
    n = a.size
    best_k = 1
    for k in range(1, n // 2 + 1):
        cov = 1.0 - 2.0 * _st.binom.cdf(k - 1, n, 0.5)
        if cov >= 1.0 - alpha:
            best_k = k
        else:
            break
    cov = 1.0 - 2.0 * _st.binom.cdf(best_k - 1, n, 0.5)
    return float(a[best_k - 1]), float(a[n - best_k]), float(cov), best_k


def summary(x, alpha=0.05, n_boot=9999, seed=0):
    """Summarise replicate values ``x`` (1-D, finite, n >= 2).

    Returns a dict: n, mean, sd, se, t_low, t_high, boot_low, boot_high, boot_method ("BCa", "percentile" when
    BCa is undefined, "none" when all values are equal and every interval collapses to the value),
    median, median_low, median_high, median_coverage.
    """
    a = sample(x, "x", 2)
    alpha = probability(alpha, "alpha")
    n = a.size
    mean = float(a.mean())
    constant = bool(np.ptp(a) == 0)
    if constant:  # exact answer; avoids round-off making sd ~1e-15
        mean = float(a[0])
    sd = 0.0 if constant else float(a.std(ddof=1))
    se = sd / np.sqrt(n)
    tq = float(_st.t.ppf(1 - alpha / 2, n - 1))
    boot_low = boot_high = mean
    method = "none"
    if sd > 0:
        lo, hi = _boot(a, alpha, n_boot, seed, "BCa")
        method = "BCa"
        if not (np.isfinite(lo) and np.isfinite(hi)):
            lo, hi = _boot(a, alpha, n_boot, seed, "percentile")
            method = "percentile"
        boot_low, boot_high = float(lo), float(hi)
    mlo, mhi, mcov, _ = median_ci(a, alpha)
    return {
        "n": n, "mean": mean, "sd": sd, "se": float(se),
        "t_low": float(mean - tq * se), "t_high": float(mean + tq * se),
        "boot_low": boot_low, "boot_high": boot_high, "boot_method": method,
        "median": float(np.median(a)), "median_low": mlo, "median_high": mhi,
        "median_coverage": mcov,
    }
