"""TOST equivalence test (Schuirmann 1987) on the difference of two means, Welch form.

H0: |mean(x) - mean(y)| >= delta, H1: -delta < diff < delta. Two one-sided Welch t-tests:
  t_low  = (diff + delta)/se, p_low  = P(T_df >= t_low)    (H0: diff <= -delta)
  t_high = (diff - delta)/se, p_high = P(T_df <= t_high)   (H0: diff >= +delta)
with se = sqrt(s1²/n1 + s2²/n2) and Welch–Satterthwaite df. p = max(p_low, p_high);
equivalence is declared at level alpha when p < alpha (equivalently the (1-2alpha) CI lies inside ±delta).
delta is in the units of the data (e.g. Mbit/s).
"""
import numpy as np
from scipy import stats as _st

from analysis.errors import AnalysisError
from analysis.stats._validate import sample


def tost(x, y, delta):
    """Return dict(diff, se, df, p_low, p_high, p)."""
    a, b = sample(x, "x"), sample(y, "y")
    delta = float(delta)
    if not delta > 0:
        raise AnalysisError(f"tost: delta must be > 0, got {delta}")
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    se2 = va + vb
    if se2 == 0:
        raise AnalysisError("tost: both samples have zero variance")
    se = np.sqrt(se2)
    df = se2 ** 2 / (va ** 2 / (a.size - 1) + vb ** 2 / (b.size - 1))
    diff = a.mean() - b.mean()
    p_low = _st.t.sf((diff + delta) / se, df)
    p_high = _st.t.cdf((diff - delta) / se, df)
    return {"diff": float(diff), "se": float(se), "df": float(df),
            "p_low": float(p_low), "p_high": float(p_high), "p": float(max(p_low, p_high))}
