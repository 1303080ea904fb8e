"""The smoke profile of study 004 for real on the netns backend (root; CI runs it): every run of
``campaigns/paper004.yaml --profile smoke`` (the four topologies x westwood / westwood_e, 6-s flows) end to end through
the campaign runner, then the dataset and the scorecard on it: every statement of data/reference/004 gets a verdict."""
import json
import os
from pathlib import Path

import pandas as pd
import pytest

from tests.netns_helpers import run_campaign

REPO = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.netns, pytest.mark.slow,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")]
PREFIX = "csmk-"
# the narrowest link each flow crosses (Mbit/s): testbed/families/004/*.json, docs/families.md "Study 004"
SLOWEST = {"client_server": 0.5, "multihop_varied": 0.5, "multihop_uniform": 4.0, "bottleneck": 0.3}


@pytest.fixture(scope="module")
def smoke004(tmp_path_factory):
    return run_campaign(REPO / "campaigns/paper004.yaml", tmp_path_factory.mktemp("paper004"), PREFIX,
                        "--profile", "smoke", "--jobs", "2")


def _runs(out):
    return {d.name: d for d in (out / "runs").iterdir() if ".incomplete-" not in d.name}


def _iperf_bytes(d, k):
    return json.loads((d / f"iperf3/flow{k}-server.json").read_text())["end"]["sum_received"]["bytes"]


def test_004_smoke_runs_complete(smoke004):
    runs = _runs(smoke004)
    assert len(runs) == 8
    for name, d in runs.items():
        if (d / "SKIPPED").exists():   # a kernel without BPF struct_ops congestion controls
            assert "not available on this kernel" in (d / "SKIPPED").read_text(), name
            continue
        assert (d / "COMPLETE").exists(), name
        meta = json.loads((d / "meta.json").read_text())
        exp = meta["params"]["experiment"]
        flows = 2 if exp == "bottleneck" else 1
        for k in range(1, flows + 1):
            for f in (f"flow{k}-sender.pcap", f"flow{k}-receiver.pcap", f"iperf3/flow{k}-client.json",
                      f"iperf3/flow{k}-server.json", f"ss/flow{k}.txt"):
                assert (d / f).exists(), f"{name}: {f}"
            # a flow cannot deliver more than its narrowest link carries in the run (6 s + a margin for the tail)
            assert 0 < _iperf_bytes(d, k) <= SLOWEST[exp] * 1e6 / 8 * 8, (name, k)
        assert len(meta["flows"]) == flows
        assert meta["status"] == "complete" and meta["self_check"]["ok"] is True, meta["self_check"]
        assert meta["params"]["cc"] in ("westwood", "westwood_e")


def test_004_smoke_dataset_and_scorecard(smoke004):
    from analysis.claims.registry import evaluate
    from analysis.dataset import load_campaign
    from analysis import reference

    df = load_campaign(smoke004, progress=False)
    complete = [n for n, d in _runs(smoke004).items() if (d / "COMPLETE").exists()]
    assert set(df["run_id"]) == set(complete)
    assert (df["received_bytes"] > 0).all()
    assert (df["delay_mean_ms"] > 0).all()
    # every one-way delay is at least the path's propagation delay (ms): 50, 160, 160, 50+100+40 or 50+100+30
    floor = {"client_server": 50, "multihop_varied": 160, "multihop_uniform": 160, "bottleneck": 180}
    assert (df["delay_mean_ms"] >= df["experiment"].map(floor) * 0.98).all(), df[["run_id", "delay_mean_ms"]]
    scores = evaluate(df, n_boot=200)
    statements = reference.load_statements(reference.REFERENCE_DIR / "004")
    assert set(statements["id"]) <= {c.split("/")[0] for c in scores["claim_id"]}
    assert set(scores["paper"]) == {"004"}
    not_run = scores[scores["verdict"] == "not run"]
    assert not_run["note"].fillna("").str.len().gt(0).all()
    # one repetition per configuration: nothing can be judged reproduced or refuted with an interval
    assert set(scores["verdict"]) <= {"inconclusive", "not run", "reproduced", "not reproduced"}
    assert isinstance(scores, pd.DataFrame)
