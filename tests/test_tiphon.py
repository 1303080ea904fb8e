"""TIPHON categories (analysis/metrics/tiphon.py): thresholds and boundaries as documented there."""
import math

import pytest

from analysis.metrics.tiphon import category, delay_index, jitter_index, loss_index, throughput_index


@pytest.mark.parametrize("ms,idx", [(0, 4), (10.32, 4), (150, 4), (150.01, 3), (300, 3), (301, 2), (450, 2), (451, 1)])
def test_delay(ms, idx):
    assert delay_index(ms) == idx


@pytest.mark.parametrize("ms,idx", [(0, 4), (1.02, 3), (1.56, 3), (75, 3), (76, 2), (125, 2), (126, 1), (500, 1)])
def test_jitter_is_very_good_only_at_zero(ms, idx):
    assert jitter_index(ms) == idx


@pytest.mark.parametrize("pct,idx", [(0, 4), (3, 4), (13, 3), (15, 3), (19, 2), (25, 2), (34.1, 1)])
def test_loss(pct, idx):
    assert loss_index(pct) == idx


@pytest.mark.parametrize("pct,idx", [(100, 4), (75.1, 4), (75, 3), (50, 3), (49.9, 2), (25, 2), (24.9, 1)])
def test_throughput(pct, idx):
    assert throughput_index(pct) == idx


def test_names_and_bad_input():
    assert [category(i) for i in (4, 3, 2, 1)] == ["Sangat Bagus", "Bagus", "Sedang", "Buruk"]
    for bad in (-1, math.nan, math.inf):
        with pytest.raises(ValueError):
            delay_index(bad)
