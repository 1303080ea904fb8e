"""The smoke profile of study 002 for real on the netns backend (root; CI runs it): ``campaigns/paper002.yaml
--profile smoke`` (test 1 x cubic / pcc_vivace, test 5 with both at once) end to end through the campaign runner, then the dataset and the
scorecard on it: every statement of data/reference/002 gets a verdict (or "not run" with its reason)."""
import json
import os
import shutil
from pathlib import Path

import pytest

from tests.netns_helpers import run_campaign

REPO = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.netns, pytest.mark.slow,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
              pytest.mark.skipif(shutil.which("ffmpeg") is None or shutil.which("curl") is None,
                                 reason="ffmpeg and curl are needed (apt-get install ffmpeg curl)")]
PREFIX = "ssmk-"


@pytest.fixture(scope="module")
def smoke002(tmp_path_factory):
    return run_campaign(REPO / "campaigns/paper002.yaml", tmp_path_factory.mktemp("paper002"), PREFIX,
                        "--profile", "smoke")


def _runs(out):
    return {d.name: d for d in (out / "runs").iterdir() if ".incomplete-" not in d.name}


def test_002_smoke_runs_complete(smoke002):
    runs = _runs(smoke002)
    assert sorted(runs) == ["test1__cubic__t8s__rep01", "test1__pcc_vivace__t8s__rep01",
                            "test5__cubic+pcc_vivace__t6s__rep01"]
    for name, d in runs.items():
        if (d / "SKIPPED").exists():   # a kernel without BPF struct_ops congestion controls
            assert "not available on this kernel" in (d / "SKIPPED").read_text(), name
            continue
        assert (d / "COMPLETE").exists(), name
        clients = (1, 2) if "+" in name else (1, 2, 3)
        for f in ("server.pcap", *(f"client{k}.pcap" for k in clients), "meta.json", "ss/server.txt",
                  "video/client1.progress"):
            assert (d / f).exists(), f"{name}: {f}"
        meta = json.loads((d / "meta.json").read_text())
        assert meta["status"] == "complete" and meta["params"]["run_id"] == name


def test_002_smoke_dataset_and_scorecard(smoke002):
    from analysis import reference
    from analysis.claims.registry import evaluate
    from analysis.dataset import load_campaign

    df = load_campaign(smoke002, progress=False)
    complete = [n for n, d in _runs(smoke002).items() if (d / "COMPLETE").exists()]
    assert set(df["run_id"]) == set(complete)
    assert sorted(set(df["client"])) == [1, 2, 3]
    t5 = df[df["experiment"] == "test5"]                      # both ccs at once, one client each
    if len(t5):
        assert sorted(zip(t5["client"], t5["cc"])) == [(1, "cubic"), (2, "pcc_vivace")]
    # each client gets about the video's bitrate (3600 kbit/s) without background
    t1 = df[df["experiment"] == "test1"]
    assert ((t1["throughput_kbps"] > 0.75 * 3600) & (t1["throughput_kbps"] < 1.25 * 3600)).all(), t1["throughput_kbps"]
    scores = evaluate(df, n_boot=200)
    statements = reference.load_statements(reference.REFERENCE_DIR / "002")
    assert set(statements["id"]) <= {c.split("/")[0] for c in scores["claim_id"]}
    assert set(scores["paper"]) == {"002"}
    assert scores.loc[scores["verdict"] == "not run", "note"].fillna("").str.len().gt(0).all()
