"""Jitter (paper 003, RFC 3550) and loss-rate metrics on hand-computed examples."""
import numpy as np
import pytest

from analysis.metrics.jitter import interarrival_times_ms, mean_abs_delay_variation, rfc3550_jitter
from analysis.metrics.loss import loss_pct, loss_pct_from_seq


def test_paper003_jitter():
    # delays 10, 12, 11, 15 ms: |10-12|+|12-11|+|11-15| = 2+1+4 = 7 over n-1 = 3 -> 2.333 ms
    assert mean_abs_delay_variation([10, 12, 11, 15]) == pytest.approx(7 / 3)
    assert mean_abs_delay_variation([5, 5, 5]) == 0.0
    with pytest.raises(ValueError):
        mean_abs_delay_variation([1])


def test_interarrival():
    assert interarrival_times_ms([1.0, 1.001, 1.003]) == pytest.approx([1.0, 2.0])


def test_rfc3550_jitter():
    # sent every 20 ms; received with transit 10, 14, 12 ms.
    s = np.array([0.000, 0.020, 0.040])
    r = s + np.array([0.010, 0.014, 0.012])
    # |D(1,2)| = 4 ms -> J = 4/16 = 0.25; |D(2,3)| = 2 ms -> J = 0.25 + (2-0.25)/16 = 0.359375
    assert rfc3550_jitter(s, r) == pytest.approx(0.359375)
    assert rfc3550_jitter(s, r, series=True) == pytest.approx([0.0, 0.25, 0.359375])
    # constant transit time (any clock offset) -> zero jitter
    assert rfc3550_jitter(s, s + 5.0) == pytest.approx(0.0)
    with pytest.raises(ValueError):
        rfc3550_jitter([0, 1], [0])


def test_loss_counts():
    assert loss_pct(100, 87) == pytest.approx(13.0)
    assert loss_pct(10, 10) == 0.0
    for bad in [(0, 0), (5, 6), (-1, 0)]:
        with pytest.raises(ValueError):
            loss_pct(*bad)


def test_loss_from_seq():
    # 1..10 with 4 and 7 missing, 5 duplicated: expected 10, received 8, lost 2 -> 20 %
    r = loss_pct_from_seq([1, 2, 3, 5, 5, 6, 8, 9, 10])
    assert r == {"expected": 10, "received": 8, "lost": 2, "loss_pct": 20.0}
    assert loss_pct_from_seq([3, 1, 2])["loss_pct"] == 0.0
    with pytest.raises(ValueError):
        loss_pct_from_seq([])
