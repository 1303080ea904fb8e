"""The smoke profiles of studies 001 and 003 for real on the netns backend (root; CI runs them): every run of
``campaigns/paper001.yaml --profile smoke`` and ``campaigns/paper003.yaml --profile smoke`` end to end through the
campaign runner, each COMPLETE or SKIPPED with its reason."""
import json
import os
import shutil
from pathlib import Path

import pytest

from tests.netns_helpers import rate_floor, run_campaign, steal_share

REPO = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.netns, pytest.mark.slow,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
              pytest.mark.skipif(shutil.which("mptcpize") is None, reason="mptcpize not installed")]
PREFIX = "dsmk-"


def _campaign(tmp_path_factory, name):
    out = run_campaign(REPO / f"campaigns/{name}.yaml", tmp_path_factory.mktemp(name), PREFIX, "--profile", "smoke",
                       timeout=600)
    return {d.name: d for d in (out / "runs").iterdir() if ".incomplete-" not in d.name}


@pytest.fixture(scope="module")
def smoke003(tmp_path_factory):
    return _campaign(tmp_path_factory, "paper003")


@pytest.fixture(scope="module")
def smoke001(tmp_path_factory):
    return _campaign(tmp_path_factory, "paper001")


def _check_all(runs):
    for name, d in runs.items():
        if (d / "SKIPPED").exists():
            assert "not available on this kernel" in (d / "SKIPPED").read_text(), name
            continue
        assert (d / "COMPLETE").exists(), name
        for f in ("client-path1.pcap", "client-path2.pcap", "server-path1.pcap", "server-path2.pcap", "meta.json",
                  "params.json", "iperf3/flow1-client.json", "iperf3/flow1-server.json", "ping/path1.txt"):
            assert (d / f).exists(), f"{name}: {f}"
        meta = json.loads((d / "meta.json").read_text())
        params = json.loads((d / "params.json").read_text())
        assert meta["params"]["run_id"] == name == params["run_id"]
        assert meta["kernel"] and meta["status"] == "complete" and meta["self_check"]["ok"] is True, meta["self_check"]


def _mbps(d):
    return json.loads((d / "iperf3/flow1-server.json").read_text())["end"]["sum_received"]["bits_per_second"] / 1e6


def test_003_smoke_runs_complete(smoke003):
    assert len(smoke003) == 5
    _check_all(smoke003)
    r = {n.split("__t8s")[0]: d for n, d in smoke003.items()}
    assert all((d / "COMPLETE").exists() for d in r.values())
    tcp, mptcp = _mbps(r["scenario__tcp-path1__q1000pkt"]), _mbps(r["scenario__mptcp__q1000pkt"])
    # path 1 is shaped at 10 Mbit/s (payload ceiling 9.56; data/study003-sample: 9.50-9.56 over 180 s). The floor 9.0 is
    # scaled by the share of time the host kept (netns_helpers.rate_floor): a CI run with steal carried 8.62.
    d = r["scenario__tcp-path1__q1000pkt"]
    assert rate_floor(d, 9.0) <= tcp <= 10.0 and mptcp > tcp, (tcp, mptcp, f"steal {100 * steal_share(d):.1f} %")
    ping = lambda k: json.loads((r[k] / "meta.json").read_text())["ping"]["path1"]["rtt_median_ms"]  # noqa: E731
    assert ping("scenario__tcp-path1__q50pkt") < ping("scenario__tcp-path1__q1000pkt")
    flood = json.loads((r["resilience__mptcp__q50pkt"] / "meta.json").read_text())["flood"]
    assert abs(flood["observed"]["start_s"] - 2) <= 1 and abs(flood["observed"]["end_s"] - 6) <= 1, flood


def test_001_smoke_runs_complete_or_skipped(smoke001):
    assert len(smoke001) == 4
    _check_all(smoke001)
    red = smoke001["buffer_sweep__mptcp-redundant__b50000B__t8s__rep01"]
    if "redundant" not in Path("/proc/sys/net/mptcp/available_schedulers").read_text().split():
        assert (red / "SKIPPED").read_text().startswith("mptcp scheduler redundant: not available on this kernel")
    d_lte, d_wifi = smoke001["buffer_sweep__tcp-lte__b50000B__t8s__rep01"], smoke001["buffer_sweep__tcp-wifi__b50000B__t8s__rep01"]
    lte, wifi = _mbps(d_lte), _mbps(d_wifi)
    mptcp = _mbps(smoke001["buffer_sweep__mptcp__b50000B__t8s__rep01"])
    # floors of 80 % of the shaped rate, scaled by the time the host kept (a CI run: 4.79 of 6 at 24.6 % steal)
    assert rate_floor(d_lte, 6 * 0.8) <= lte <= 6.1 and rate_floor(d_wifi, 4 * 0.8) <= wifi <= 4.1 and mptcp > lte, \
        (lte, wifi, mptcp, f"steal {100 * steal_share(d_lte):.1f} / {100 * steal_share(d_wifi):.1f} %")
