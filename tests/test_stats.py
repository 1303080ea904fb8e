"""analysis.stats against independent scipy calls and hand-worked textbook answers."""
import math

import numpy as np
import pytest
from scipy import stats as st

from analysis.errors import AnalysisError
from analysis.stats import (cliffs_delta, hedges_g, holm, kruskal, mann_whitney, median_ci, power_two_sample,
                            reps_needed, summary, tost, welch_t)

X = np.array([19.10, 19.02, 19.21, 18.95, 19.14, 19.08, 19.30, 18.88, 19.05, 19.17])
Y = np.array([18.69, 18.75, 18.52, 18.80, 18.61, 18.70, 18.95, 18.40, 18.66, 18.71, 18.58])


def test_summary_t_interval_and_moments():
    s = summary(X)
    assert s["n"] == 10
    assert s["mean"] == pytest.approx(X.sum() / 10)
    assert s["sd"] == pytest.approx(math.sqrt(((X - X.mean()) ** 2).sum() / 9))
    lo, hi = st.t.interval(0.95, 9, loc=X.mean(), scale=st.sem(X))
    assert (s["t_low"], s["t_high"]) == pytest.approx((lo, hi))
    assert s["boot_method"] == "BCa"
    assert s["boot_low"] < s["mean"] < s["boot_high"]
    # seeded: identical on a second call
    assert summary(X)["boot_low"] == s["boot_low"]
    assert s["median"] == pytest.approx(np.median(X))


def test_median_ci_order_statistics_n10():
    x = np.array([7.0, 3, 9, 1, 5, 10, 2, 8, 4, 6])  # sorted: 1..10
    lo, hi, cov, k = median_ci(x)
    assert (lo, hi, k) == (2.0, 9.0, 2)  # (x_(2), x_(9))
    assert cov == pytest.approx(1 - 2 * 11 / 1024)  # 0.9785 >= 0.95
    assert cov >= 0.95


def test_median_ci_small_n_falls_back_to_range():
    lo, hi, cov, k = median_ci([3.0, 1, 2, 5, 4])
    assert (lo, hi, k) == (1.0, 5.0, 1)
    assert cov == pytest.approx(1 - 2 / 32)  # 0.9375 < 0.95, reported honestly


def test_summary_constant_sample():
    s = summary([9.57] * 10)
    assert s["sd"] == 0 and s["t_low"] == s["t_high"] == pytest.approx(9.57)
    assert s["boot_low"] == s["boot_high"] == pytest.approx(9.57)


def test_welch_matches_scipy():
    r = welch_t(X, Y)
    ref = st.ttest_ind(X, Y, equal_var=False)
    assert r["t"] == pytest.approx(ref.statistic)
    assert r["p"] == pytest.approx(ref.pvalue)
    assert r["diff"] == pytest.approx(X.mean() - Y.mean())


def test_mann_whitney_exact_small():
    r = mann_whitney([1, 2, 3], [4, 5, 6])
    assert r["u"] == 0
    assert r["p"] == pytest.approx(2 / 20)  # exact: 2 extreme orderings of C(6,3)=20
    ref = st.mannwhitneyu(X, Y, alternative="two-sided")
    assert mann_whitney(X, Y)["p"] == pytest.approx(ref.pvalue)


def test_kruskal_hand_example():
    r = kruskal([1, 2, 3], [4, 5, 6], [7, 8, 9])
    # H = 12/(N(N+1)) * sum(R_i^2/n_i) - 3(N+1) = 12/90 * 279 - 30 = 7.2
    assert r["h"] == pytest.approx(7.2)
    assert r["df"] == 2
    assert r["p"] == pytest.approx(math.exp(-3.6))  # chi2 with 2 df: sf(h) = exp(-h/2)


def test_hedges_g_by_hand():
    x, y = [1, 2, 3, 4, 5], [3, 4, 5, 6, 7]
    d = (3 - 5) / math.sqrt(2.5)
    j = 1 - 3 / (4 * 10 - 9)
    assert hedges_g(x, y) == pytest.approx(j * d)
    assert hedges_g(y, x) == pytest.approx(-j * d)


def test_cliffs_delta_by_hand():
    assert cliffs_delta([1, 2, 3], [2, 3, 4]) == pytest.approx(-5 / 9)
    assert cliffs_delta([10, 20], [1, 2]) == 1.0
    assert cliffs_delta([1, 2], [1, 2]) == 0.0


def test_tost_matches_two_shifted_welch_tests():
    delta = 0.5
    r = tost(X, Y, delta)
    p_low = st.ttest_ind(X, Y - delta, equal_var=False, alternative="greater").pvalue
    p_high = st.ttest_ind(X, Y + delta, equal_var=False, alternative="less").pvalue
    assert r["p_low"] == pytest.approx(p_low)
    assert r["p_high"] == pytest.approx(p_high)
    assert r["p"] == pytest.approx(max(p_low, p_high))
    # diff is ~0.42: equivalence within 1 Mbit/s, not within 0.1
    assert tost(X, Y, 1.0)["p"] < 0.05
    assert tost(X, Y, 0.1)["p"] > 0.5


def test_holm_known_vector():
    adj = holm([0.01, 0.04, 0.03, 0.005])
    # sorted .005,.01,.03,.04 times 4,3,2,1 -> .02,.03,.06,.04; running max -> .02,.03,.06,.06
    assert adj == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # 2*0.5 = 1.0, then the step-down running max lifts 0.9 to 1.0
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert holm([0.02]) == pytest.approx([0.02])


def test_reps_needed_cohen_table():
    assert reps_needed(0.8, alpha=0.05, power=0.8) == 26
    assert reps_needed(0.5) == 64
    assert reps_needed(-0.8) == 26
    assert power_two_sample(0.8, 26) >= 0.8 > power_two_sample(0.8, 25)


@pytest.mark.parametrize("call", [
    lambda: summary([1.0]),
    lambda: summary([1.0, float("nan")]),
    lambda: summary([1.0, 2.0], alpha=1.5),
    lambda: welch_t([1, 1], [2, 2]),
    lambda: tost(X, Y, 0),
    lambda: holm([]),
    lambda: holm([1.2]),
    lambda: reps_needed(0),
    lambda: kruskal([1, 2]),
])
def test_bad_input_raises_analysis_error(call):
    with pytest.raises(AnalysisError):
        call()


def test_n_for_halfwidth_is_the_first_n_a_linear_search_finds():
    from analysis.stats import n_for_halfwidth
    for s, d in [(1.2076, 2.0), (1.0, 0.1), (3.0, 0.5), (0.5, 10.0)]:
        want = next((n for n in range(2, 1001) if st.t.ppf(0.975, n - 1) * s / np.sqrt(n) < d), None)
        assert n_for_halfwidth(s, d) == want
    assert n_for_halfwidth(1.2076, 2.0, n_min=4) == 4           # t(0.975, 3)·1.2076/2 = 1.92 < 2
    assert n_for_halfwidth(1.0, 1e-3, max_n=50) is None
