"""Tables and labels in words with units, numbers in fixed notation (analysis/figures/readable.py; issue 31)."""
import math

import pandas as pd
import pytest

from analysis.figures.readable import label, number, readable, tick


@pytest.mark.parametrize("name, words", [
    ("goodput_mbps", "goodput (Mbit/s)"), ("throughput_kbps", "throughput (kbit/s)"),
    ("packet_loss_pct", "packet loss (%)"), ("latency_ms", "latency (ms)"), ("startup_delay_s", "startup delay (s)"),
    ("cwnd_max_pkts", "cwnd max (packets)"), ("sack_blocks_per_100s", "SACK blocks per 100 s"),
    ("dsack_blocks_per_1k_pkts", "D-SACK blocks per 1,000 packets"), ("queue_pkts", "queue (packets)"),
    ("ours_delay_ms_westwood_e", "ours delay (ms) Westwood+e"), ("ci_low", "CI low"), ("p_value", "p-value"),
    ("flood_owd_mean_ms", "flood one-way delay mean (ms)"), ("cc", "congestion control"),
    ("S02 (> 18 Mbit/s at every delay)", "S02 (> 18 Mbit/s at every delay)"),
])
def test_label(name, words):
    assert label(name) == words


@pytest.mark.parametrize("x, text", [
    (5.7101, "5.71"), (25000.0, "25000"), (116736.0, "116736"), (0.000123456, "0.000123"), (1e-5, "0.00001"),
    (-0.5, "-0.5"), (0.99999, "1.000"), (12.05, "12.1"), (19.127472, "19.1"), (0.0, "0"), (3, "3"),
    (float("nan"), ""), (None, ""), (pd.NA, ""), (True, "yes"), (math.inf, "∞"), (2e-9, "< 0.000001"),
    (123456.789, "123457"), ("text", "text"),
])
def test_number_is_fixed_notation(x, text):
    assert number(x) == text


def test_tick_prints_whole_floats_as_integers():
    assert [tick(v) for v in (50.0, 1000.0, 0.01, "test1")] == ["50", "1000", "0.01", "test1"]


def test_readable_table():
    df = pd.DataFrame({"queue_pkts": [50.0, 1000.0], "ci_low": [5.71, 1e-5], "note": ["x" * 300, None],
                       "paper_in_ci": pd.array([True, None], dtype="boolean")})
    out = readable(df)
    assert list(out.columns) == ["queue (packets)", "CI low", "note", "paper's value in our CI"]
    assert out.iloc[:, 0].tolist() == ["50", "1000"]
    assert out.iloc[:, 1].tolist() == ["5.71", "0.00001"]
    assert out.iloc[0, 2] == "x" * 300 and out.iloc[1, 2] == ""      # text whole, missing as blank
    assert out.iloc[:, 3].tolist() == ["yes", ""]
    assert df["queue_pkts"].tolist() == [50.0, 1000.0]                # the input is not changed
    piv = readable(df.set_index("queue_pkts")[["ci_low"]])
    assert piv.index.name == "queue (packets)" and list(piv.index) == ["50", "1000"]
