"""The host effect within configurations (analysis/stats/host_effect.py), the runs' hosts (analysis.dataset.run_hosts,
analysis.runmeta.recorded_on) and the scorecard's host line: a campaign recorded on several hosts is audited."""
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import runmeta
from analysis.dataset import run_hosts
from analysis.stats.host_effect import campaign_host_effect, configuration_of, host_effect
from mpcc.cli import main

sys.path.insert(0, str(Path(__file__).parent))


def _table(shift=0.0, configs=10, reps=6, hosts=("a", "b"), seed=1, noise=0.3):
    """configs x reps observations; configuration means far apart (5..50), hosts alternate; host b + ``shift``."""
    rng = np.random.default_rng(seed)
    rows = []
    for c in range(configs):
        for r in range(reps):
            h = hosts[r % len(hosts)]
            rows.append({"configuration": f"c{c}", "flow": 1, "host": h,
                         "goodput_mbps": 5.0 * (c + 1) + rng.normal(0, noise) + (shift if h == "b" else 0.0)})
    return pd.DataFrame(rows)


def test_no_host_effect_however_far_apart_the_configurations():
    he = host_effect(_table(), value="goodput_mbps", block=["configuration", "flow"], n_perm=999)
    assert he.hosts == ["a", "b"] and he.blocks == 10 and he.mixed == 10
    assert he.p_value > 0.05 and abs(he.median_spread_pct) < 5
    assert "no evidence that they differ" in he.line()
    assert set(he.per_block["test"]) == {"welch"} and he.per_block["p_holm"].notna().all()


def test_a_host_that_records_more_goodput_is_found():
    he = host_effect(_table(shift=0.5), value="goodput_mbps", block=["configuration", "flow"], n_perm=999)
    assert he.p_value == pytest.approx(1 / 1000) and "differ (stratified permutation test" in he.line()
    assert (he.per_block["host_means"].map(lambda m: m["b"] - m["a"]) > 0).mean() > 0.8


def test_three_hosts_and_the_seed():
    t = _table(reps=9, hosts=("a", "b", "c"))
    a = host_effect(t, value="goodput_mbps", block="configuration", n_perm=199, seed=3)
    b = host_effect(t, value="goodput_mbps", block="configuration", n_perm=199, seed=3)
    assert a.p_value == b.p_value and set(a.per_block["test"]) == {"alexander-govern"}
    assert (a.per_block["n_hosts"] == 3).all()


def test_what_cannot_be_tested_says_so():
    t = _table()
    one = host_effect(t.assign(host="a"), value="goodput_mbps", block="configuration", n_perm=99)
    assert one.p_value is None and one.line().startswith("hosts: one (a)")
    none = host_effect(t.assign(host=None), value="goodput_mbps", block="configuration", n_perm=99)
    assert none.hosts == [] and "not recorded" in none.line()
    # each configuration on one host only: host and configuration cannot be told apart
    split = t.assign(host=np.where(t["configuration"].isin(["c0", "c1", "c2"]), "a", "b"))
    he = host_effect(split, value="goodput_mbps", block="configuration", n_perm=99)
    assert he.mixed == 0 and he.p_value is None and "cannot be told" in he.line()
    with pytest.raises(ValueError):
        host_effect(t, value="goodput_mbps", block="configuration", n_perm=10)


def test_campaign_rows_block_by_configuration_and_flow():
    assert configuration_of("link_delay__bbr__multipath__d40ms__l0pct__rep03") == "link_delay__bbr__multipath__d40ms__l0pct"
    rows, hosts = [], []
    for c, base in (("d10ms", 10.0), ("d40ms", 4.0)):
        for rep in range(1, 7):
            rid = f"link_delay__cubic__multipath__{c}__l0pct__rep{rep:02d}"
            rows += [{"run_id": rid, "flow": 1, "goodput_mbps": base + 0.01 * rep},
                     {"run_id": rid, "flow": 2, "goodput_mbps": base / 2}]
            hosts.append({"run_id": rid, "host": "a" if rep % 2 else "b", "kernel": "k"})
    he = campaign_host_effect(pd.DataFrame(rows), pd.DataFrame(hosts), n_perm=199)
    assert he.value == "goodput_mbps" and he.unit == "Mbit/s" and he.blocks == 4 and he.mixed == 4
    with pytest.raises(ValueError, match="no goodput column"):
        campaign_host_effect(pd.DataFrame({"run_id": ["x__rep01"]}), pd.DataFrame(hosts))


def test_recorded_on_from_meta_else_the_runner_log(tmp_path):
    assert runmeta.recorded_on({"host": "h1", "kernel": "6.1"}) == {"host": "h1", "kernel": "6.1"}
    log = "runner: recording on host lab-2 (kernel 6.18.44-fc), namespaces mpcc-1-*, dask worker tcp://x:1"
    assert runmeta.recorded_on({}, log) == {"host": "lab-2", "kernel": "6.18.44-fc"}
    assert runmeta.recorded_on({"kernel": "6.1"}) == {"host": None, "kernel": "6.1"}
    runs = tmp_path / "c" / "runs"
    (runs / "a__rep01").mkdir(parents=True)
    (runs / "a__rep01" / "meta.json").write_text(json.dumps({"host": "h1", "kernel": "k1"}))
    (runs / "b__rep01").mkdir()
    (runs / "b__rep01" / "SKIPPED").write_text("x\n")
    (runs / "b__rep01" / "runner.log").write_text(log + "\nmore\n")
    (runs / "a__rep01.incomplete-20260101T000000Z").mkdir()
    got = run_hosts(tmp_path / "c")
    assert got.to_dict("records") == [{"run_id": "a__rep01", "host": "h1", "kernel": "k1"},
                                      {"run_id": "b__rep01", "host": "lab-2", "kernel": "6.18.44-fc"}]


def test_scorecard_names_the_hosts(tmp_path, capsys):
    from test_dataset import build_campaign
    camp = build_campaign(tmp_path / "camp", reps=4)
    for k, d in enumerate(sorted((camp / "runs").iterdir())):
        meta = d / "meta.json"
        m = json.loads(meta.read_text())
        meta.write_text(json.dumps({**m, "host": f"lab-{k % 2}"}))
    assert main(["scorecard", str(camp), "--json", "--no-progress", "--n-boot", "200"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["hosts"]["recorded"]) == {"lab-0", "lab-1"} and out["hosts"]["runs_without_host"] == 0
    he = out["hosts"]["host_effect"]
    assert he["value"] == "goodput_mbps" and he["mixed_configurations"] >= 1
    assert main(["scorecard", str(camp), "--no-progress", "--n-boot", "200"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("# hosts: 2 (lab-0, lab-1); goodput_mbps by host within")


def test_bundled_runs_recorded_before_hosts_were_named():
    """Study 001's reduced sample (data/study001-sample) was recorded before meta.json named a host: listed with host
    None (its skipped runs have no meta.json, so no kernel either), and the scorecard's line says the hosts were not
    recorded. Its paper-protocol bundle (data/study001) names the host of every run that ran (its 40 skipped runs of
    the redundant scheduler have no meta.json)."""
    repo = Path(__file__).resolve().parents[1]
    h = run_hosts(repo / "data/study001-sample")
    assert len(h) == 48 and h["host"].isna().all() and h["kernel"].notna().sum() == 36
    full = run_hosts(repo / "data/study001")
    assert len(full) == 160 and full["host"].notna().sum() == 120 and (full["host"].notna() == full["kernel"].notna()).all()
    he = host_effect(pd.DataFrame({"configuration": ["c"], "host": [None], "goodput_mbps": [1.0]}),
                     value="goodput_mbps", block="configuration", n_perm=99)
    assert he.line() == "hosts: not recorded (meta.json without host)"
