"""Jain's fairness index against paper 000 Table 4 (values from the paper) and a hand computation."""
import pytest

from analysis.metrics.fairness import jain_index

# Paper 000, Table 4: throughput pairs (Mbit/s) and the printed Jain index.
TABLE4 = [
    ((10.61, 8.27), 0.985),
    ((10.89, 8.05), 0.978),
    ((12.22, 6.93), 0.929),
    ((7.73, 11.04), 0.969),
    ((7.11, 11.42), 0.949),
    ((7.27, 11.29), 0.955),
]


@pytest.mark.parametrize("pair,expected", TABLE4)
def test_paper000_table4(pair, expected):
    # The paper prints throughputs to 2 decimals and J to 3; recomputing J from the rounded throughputs
    # can differ by one unit in the 3rd decimal (BBR/CUBIC: 0.96984 vs printed 0.969), so allow 1e-3.
    assert jain_index(pair) == pytest.approx(expected, abs=1.0e-3 + 1e-9)


def test_hand_example():
    # (1+3+5)^2 / (3 * (1+9+25)) = 81 / 105 = 0.7714...
    assert jain_index([1, 3, 5]) == pytest.approx(81 / 105)
    assert round(jain_index([1, 3, 5]), 3) == 0.771


def test_bounds_and_explicit_n():
    assert jain_index([4, 4, 4]) == pytest.approx(1.0)
    assert jain_index([5, 0]) == pytest.approx(0.5)
    # a third flow that got nothing, passed via n: 25 / (3 * 25) = 1/3
    assert jain_index([5], n=3) == pytest.approx(1 / 3)


def test_printed_formula_is_not_used():
    # paper 000's printed (1) would give (10.61^2+8.27^2)/(2*(10.61+8.27)) = 4.79..., not 0.985
    assert jain_index([10.61, 8.27]) <= 1.0


@pytest.mark.parametrize("bad,msg", [([], "no throughput"), ([1, -2], "negative"), ([0, 0], "all throughput values are zero"),
                                     ([1, float("nan")], "finite")])
def test_bad_input(bad, msg):
    with pytest.raises(ValueError, match=msg):
        jain_index(bad)


def test_bad_n():
    with pytest.raises(ValueError, match="n="):
        jain_index([1, 2, 3], n=2)


def test_pair_jain_of_each_two_flow_run():
    """Table 4's pair 1 (10.61 and 8.27 Mbit/s give 0.985); single-flow, all-zero and non-finite runs are left out."""
    import pandas as pd

    from analysis.metrics.fairness import pair_jain
    rows = pd.DataFrame({
        "run_id": ["a", "a", "b", "b", "c", "d", "d", "e", "e"],
        "flow": [1, 2, 1, 2, 1, 1, 2, 1, 2],
        "goodput_mbps": [10.61, 8.27, 5.0, 5.0, 19.0, 0.0, 0.0, float("nan"), 3.0]})
    j = pair_jain(rows)
    assert list(j.index) == ["a", "b"]
    assert j["a"] == pytest.approx(0.98487, abs=1e-5) and j["b"] == 1.0
    assert pair_jain(rows[rows["flow"] == 1]).empty and pair_jain(rows.iloc[:0]).empty
