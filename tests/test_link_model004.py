"""analysis.link_model004: study 004's two link models compared configuration by configuration, on hand-made runs
with known answers (one value per run; Welch intervals; the transmission time of the path; runs touched by the
kernel defect left out)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis import link_model004 as lm


def _rows(run_id, experiment, cc, link_model, delay, received, cwnd, level=0.01, bw=np.nan, flows=1, cwnd_max=10.0):
    return [dict(run_id=run_id, experiment=experiment, cc=cc, error_rate=level, bandwidth_mbit=bw,
                 link_model=link_model, flow=k, run_delay_mean_ms=delay, total_received_bytes=received,
                 cwnd_mean_pkts=cwnd + k - 1, cwnd_max_pkts=cwnd_max) for k in range(1, flows + 1)]


def test_store_and_forward_time_of_a_path():
    # 592 bytes at 0.5 Mbit/s: 9.472 ms; four links at 2 Mbit/s: 4 x 2.368 ms
    assert lm.store_and_forward_ms((0.5,)) == pytest.approx(9.472)
    assert lm.store_and_forward_ms(lm.path_rates("multihop_uniform", 2.0)) == pytest.approx(9.472)
    assert lm.path_rates("multihop_uniform", None) is None
    assert lm.store_and_forward_ms(lm.path_rates("bottleneck")) == pytest.approx(2.368 + 15.786667 + 9.472, abs=1e-4)


def test_run_values_one_row_per_run_with_its_level():
    df = pd.DataFrame(_rows("b1", "bottleneck", "westwood", None, 200.0, 1e6, 4.0, flows=2)
                      + _rows("u1", "multihop_uniform", "westwood", "store-and-forward", 163.0, 2e6, 8.0, bw=5.0))
    r = lm.run_values(df).set_index("run_id")
    assert list(r.index) == ["b1", "u1"]
    assert r.loc["b1", "link_model"] == "htb" and r.loc["b1", "level"] == 0.01
    assert r.loc["b1", "cwnd_mean_pkts"] == 4.5          # mean over the run's two flows
    assert r.loc["u1", "level"] == 5.0                    # multihop_uniform's level is its bandwidth
    assert not r["kernel_defect"].any()


def test_effects_difference_interval_and_transmission_time():
    rows = []
    htb = [50.0, 52.0, 54.0]
    sf = [60.0, 62.0, 64.0, 66.0]
    for i, d in enumerate(htb):
        rows += _rows(f"h{i}", "client_server", "westwood", "htb", d, 1000.0 + i, 5.0)
    for i, d in enumerate(sf):
        rows += _rows(f"s{i}", "client_server", "westwood", "store-and-forward", d, 1000.0 + i, 5.0)
    # a run touched by the defect (cwnd of millions) is left out
    rows += _rows("bad", "client_server", "westwood", "store-and-forward", 500.0, 1.0, 5.0, cwnd_max=3e8)
    runs = lm.run_values(pd.DataFrame(rows))
    assert runs.set_index("run_id").loc["bad", "kernel_defect"]
    e = lm.effects(runs).set_index("quantity")
    d = e.loc["delay_ms"]
    assert (d["n_htb"], d["n_sf"]) == (3, 4)
    assert d["htb"] == pytest.approx(52.0) and d["sf"] == pytest.approx(63.0) and d["diff"] == pytest.approx(11.0)
    # Welch: se^2 = 4/3 + (20/3)/4; df by Welch-Satterthwaite
    va, vb = 4.0 / 3, (20.0 / 3) / 4
    se = math.sqrt(va + vb)
    df = se ** 4 / (va ** 2 / 2 + vb ** 2 / 3)
    from scipy import stats
    t = stats.t.ppf(0.975, df)
    assert d["ci_low"] == pytest.approx(11.0 - t * se) and d["ci_high"] == pytest.approx(11.0 + t * se)
    assert bool(d["moved"])
    assert d["tx_ms"] == pytest.approx(9.472) and bool(d["tx_inside"])
    assert math.isnan(e.loc["received_bytes", "tx_ms"])
    s = lm.summary(e.reset_index()).set_index("quantity")
    assert s.loc["delay_ms", "cells"] == 1 and s.loc["delay_ms", "moved"] == 1 and s.loc["delay_ms", "tx_inside"] == 1


def test_a_configuration_missing_from_one_arm_is_not_compared():
    rows = _rows("h0", "client_server", "westwood", "htb", 50.0, 1.0, 5.0) \
        + _rows("s0", "client_server", "westwood_e", "store-and-forward", 60.0, 1.0, 5.0)
    assert lm.effects(lm.run_values(pd.DataFrame(rows))).empty


def test_the_store_and_forward_arm_is_used_once_complete(tmp_path):
    import json
    d = tmp_path / "data" / "study004-paper"
    (d / "runs").mkdir(parents=True)
    pd.DataFrame({"run_id": ["client_server__westwood__err0.01__sf__rep01"]}).to_parquet(d / "runs" / "s1.parquet")
    (d / "campaign.json").write_text(json.dumps({"n_runs": 2}))
    (d / "bundle.json").write_text(json.dumps({"campaign": "paper004", "runs_total": 1}))
    assert lm.store_and_forward_arm(tmp_path) is None                       # 1 of 2 runs: still recording
    assert lm.store_and_forward_arm(tmp_path, complete_only=False) == d
    (d / "bundle.json").write_text(json.dumps({"campaign": "paper004", "runs_total": 2}))
    assert lm.store_and_forward_arm(tmp_path) == d
    # an htb recording is no store-and-forward arm
    pd.DataFrame({"run_id": ["client_server__westwood__err0.01__rep01"]}).to_parquet(d / "runs" / "s1.parquet")
    assert lm.store_and_forward_arm(tmp_path, complete_only=False) is None
