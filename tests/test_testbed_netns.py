"""Real netns testbed: namespaces, self-checks and complete run directories (needs root)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.netns_helpers import namespaces, udp_connect_lost

ROOT = Path(__file__).resolve().parents[1]
NETNS = ROOT / "testbed" / "netns.sh"
RUN = ROOT / "capture_tools" / "run_experiment.sh"
TOOLS = ["iperf3", "tcpdump", "nft", "iptables", "jq", "tc", "ping", "gcc"]

pytestmark = [
    pytest.mark.netns,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root"),
    pytest.mark.skipif(any(shutil.which(t) is None for t in TOOLS), reason="testbed tools missing"),
]


@pytest.fixture
def env():
    prefix = f"tt{os.getpid() % 10000}-"
    e = dict(os.environ, MPCC_NS_PREFIX=prefix)
    yield e
    subprocess.run([str(NETNS), "down"], env=e, capture_output=True)


def _namespaces(prefix: str) -> list[str]:
    return namespaces(prefix)


def _run(env, out: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(RUN), "--backend", "netns", "--out", str(out), *args],
                          env=env, capture_output=True, text=True, timeout=120)


def _goodput_mbps(run_dir: Path) -> float:
    """Goodput of flow 1 in Mbit/s from the iperf3 server (receiver) JSON."""
    srv = json.loads((run_dir / "iperf3" / "flow1-server.json").read_text())
    return srv["end"]["sum_received"]["bits_per_second"] / 1e6


def test_up_check_down_leaves_no_namespaces(env):
    prefix = env["MPCC_NS_PREFIX"]
    subprocess.run([str(NETNS), "up", "--path-mode", "multipath"], env=env, check=True, capture_output=True)
    assert len(_namespaces(prefix)) == 8
    res = subprocess.run([str(NETNS), "check"], env=env, capture_output=True, text=True, check=True)
    check = json.loads(res.stdout)
    assert check["round_robin"]["parity_ok"] is True
    assert abs(check["rtt_median_ms"] - 10) <= 1.0
    subprocess.run([str(NETNS), "down"], env=env, check=True, capture_output=True)
    assert _namespaces(prefix) == []


@pytest.mark.parametrize("path_mode,expected", [("single", 9.5), ("multipath", 19.0)])
def test_cubic_run_is_complete_with_expected_goodput(env, tmp_path, path_mode, expected):
    out = tmp_path / path_mode
    res = _run(env, out, "--experiment", "single_vs_multi", "--cc", "cubic", "--path-mode", path_mode,
               "--link-delay-ms", "10", "--loss-pct", "0", "--duration-s", "4")
    assert res.returncode == 0, res.stderr
    for name in ["COMPLETE", "meta.json", "router1.pcap", "receiver.pcap", "capture.log",
                 "iperf3/flow1-client.json", "iperf3/flow1-server.json", "ss/flow1.txt"]:
        assert (out / name).exists(), name
    assert (out / "router1.pcap").stat().st_size > 100_000
    meta = json.loads((out / "meta.json").read_text())
    assert meta["params"]["path_mode"] == path_mode and meta["backend"] == "netns"
    # the queue model that ran (default: the shim's fifo after the delay) and the shims' counters over the flows
    assert meta["params"]["queue_model"] == "fifo-after-delay"
    sw1 = meta["shim_stats"]["switch1"]
    assert sw1["released"] > 100 and sw1["dropped_at_limit"] == 0
    assert (out / "ss" / "flow1.txt").read_text().startswith("# ts=")
    assert abs(_goodput_mbps(out) - expected) <= 0.15 * expected
    assert _namespaces(env["MPCC_NS_PREFIX"]) == []


def test_bad_parameter_fails_before_any_root_command(env, tmp_path):
    res = _run(env, tmp_path / "bad", "--experiment", "single_vs_multi", "--cc", "cubic", "--path-mode", "triple",
               "--link-delay-ms", "10", "--loss-pct", "0", "--duration-s", "4")
    assert res.returncode == 2 and res.stderr.startswith("error:")
    assert _namespaces(env["MPCC_NS_PREFIX"]) == []
    res = _run(dict(env, MPCC_SS_INTERVAL_S="0"), tmp_path / "bad-ss", "--experiment", "single_vs_multi", "--cc",
               "cubic", "--path-mode", "single", "--link-delay-ms", "10", "--loss-pct", "0", "--duration-s", "4")
    assert res.returncode == 2 and res.stderr.startswith("error: MPCC_SS_INTERVAL_S") and not (tmp_path / "bad-ss").exists()
    res = subprocess.run([str(NETNS), "up", "--loss-pct", "abc"], env=env, capture_output=True, text=True)
    assert res.returncode == 2 and "loss-pct" in res.stderr
    res = _run(env, tmp_path / "bad-qm", "--experiment", "single_vs_multi", "--cc", "cubic", "--path-mode", "single",
               "--link-delay-ms", "10", "--loss-pct", "0", "--duration-s", "4", "--queue-model", "netem")
    assert res.returncode == 2 and res.stderr.startswith("error: --queue-model must be") and not (tmp_path / "bad-qm").exists()
    res = _run(env, tmp_path / "bad-len", "--experiment", "udp_fairness", "--cc", "cubic", "--cbr-mbps", "12",
               "--path-mode", "multipath", "--link-delay-ms", "10", "--loss-pct", "0", "--duration-s", "4",
               "--udp-len-bytes", "70000")
    assert res.returncode == 2 and res.stderr.startswith("error: --udp-len-bytes must be") and not (tmp_path / "bad-len").exists()
    res = _run(env, tmp_path / "bad-rec", "--experiment", "loss_rate", "--cc", "cubic", "--path-mode", "multipath",
               "--link-delay-ms", "10", "--loss-pct", "1", "--duration-s", "4", "--tcp-recovery", "rack")
    assert res.returncode == 2 and res.stderr.startswith("error: --tcp-recovery must be") and not (tmp_path / "bad-rec").exists()
    res = _run({**env, "MPCC_CAPTURE_START_S": "soon"}, tmp_path / "bad-wait", "--experiment", "udp_fairness", "--cc",
               "cubic", "--cbr-mbps", "12", "--path-mode", "multipath", "--link-delay-ms", "10", "--loss-pct", "0",
               "--duration-s", "4")
    assert res.returncode == 2 and res.stderr.startswith("error: MPCC_CAPTURE_START_S must be") and not (tmp_path / "bad-wait").exists()
    res = subprocess.run([str(NETNS), "up", "--queue-model", "pfifo"], env=env, capture_output=True, text=True)
    assert res.returncode == 2 and "--queue-model must be" in res.stderr
    assert _namespaces(env["MPCC_NS_PREFIX"]) == []


def test_help_prints_usage_and_touches_nothing(env, tmp_path):
    res = subprocess.run(["bash", str(ROOT / "capture_tools" / "run_experiment.sh"), "--help"], env=env,
                         capture_output=True, text=True)
    assert res.returncode == 0 and res.stdout.splitlines()[1].startswith("usage: run_experiment.sh --backend netns")
    assert _namespaces(env["MPCC_NS_PREFIX"]) == []


def test_tcp_recovery_is_set_in_the_sender_namespaces(env, tmp_path):
    """--tcp-recovery N sets net.ipv4.tcp_recovery in src1/src2 (read back from src1 into meta.json's sysctls, and
    params.tcp_recovery); without it the namespaces keep the kernel's default (1, RACK) and params say null. A value
    without bit 0x1 asks for the RFC 6675 loss detection: on a kernel from 6.17 (RACK only) the run is SKIPPED with
    the reason, before any namespace exists; on an older one it runs."""
    rack_only = tuple(int(x) for x in os.uname().release.split(".")[:2]) >= (6, 17)
    for rec, want in (("3", "3"), (None, "1"), ("0", "0")):
        out = tmp_path / f"rec-{rec}"
        res = _run(env, out, "--experiment", "loss_rate", "--cc", "reno", "--path-mode", "multipath",
                   "--link-delay-ms", "10", "--loss-pct", "1", "--duration-s", "3",
                   *(("--tcp-recovery", rec) if rec is not None else ()))
        if rec == "0" and rack_only:
            assert res.returncode == 3 and "RACK is the only one" in (out / "SKIPPED").read_text()
            assert not (out / "meta.json").exists()
            continue
        assert res.returncode == 0, res.stderr
        meta = json.loads((out / "meta.json").read_text())
        assert f"net.ipv4.tcp_recovery = {want}" in meta["sysctls"]
        assert meta["params"]["tcp_recovery"] == (int(rec) if rec is not None else None)
    assert _namespaces(env["MPCC_NS_PREFIX"]) == []


@pytest.mark.parametrize("loss_pct", [0, 5])
def test_fragmented_udp_datagrams_cross_the_round_robin_paths(env, tmp_path, loss_pct):
    """iperf3 -l 8192 (the paper era's UDP default): each datagram leaves src2 as 6 IPv4 fragments, which router1's
    per-packet round robin spreads over both switches; dst2's kernel reassembles them. With random loss p per packet
    at the switches a datagram survives only with all 6 fragments, (1 - p)^6 (26.5 % datagram loss at p = 5 %), and
    the receiver capture's count of whole reassembled datagrams agrees with iperf3's own loss count."""
    from analysis.metrics import udp_datagrams
    for attempt in range(3):   # iperf3's UDP connect datagram (or its reply) lost to the random loss: run again
        out = tmp_path / f"frag-l{loss_pct}-{attempt}"
        res = _run(env, out, "--experiment", "udp_fairness", "--cc", "cubic", "--cbr-mbps", "4", "--path-mode",
                   "multipath", "--link-delay-ms", "10", "--loss-pct", str(loss_pct), "--duration-s", "4",
                   "--udp-len-bytes", "8192")
        if not (res.returncode == 1 and loss_pct > 0 and udp_connect_lost(res.stderr)):
            break
        assert not (out / "COMPLETE").exists()
    assert res.returncode == 0, res.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert meta["params"]["udp_len_bytes"] == 8192
    # both switches forwarded packets of the run (the round robin works on fragments: no port to hash on)
    assert meta["shim_stats"]["switch1"]["released"] > 500 and meta["shim_stats"]["switch2"]["released"] > 500
    sent = udp_datagrams.datagrams(out / "router1-flow2.pcap", dport=5202)
    got = udp_datagrams.datagrams(out / "receiver-flow2.pcap", dport=5202)
    # iperf3's data datagrams (8 + 8192 bytes; its 4-byte connect datagram is the one other UDP datagram)
    data = sent[sent["udp_len"] == 8200]
    log = (out / "capture.log").read_text()
    assert len(data) > 150 and len(sent) - len(data) <= 1, f"{len(sent)} UDP datagrams at router1; capture.log:\n{log}"
    # the captures recorded before any traffic started (capture_lib.sh wait_captures_listening)
    assert log.count("listening on ") == 4 and log.index("listening on r1-src2") < log.index("flow2 start")
    assert data["complete"].all() and (data["fragments_seen"] == 6).all()
    srv = json.loads((out / "iperf3" / "flow2-server.json").read_text())["end"]["sum_received"]
    sent_n = len(data)
    whole = int((got["complete"] & (got["udp_len"] == 8200)).sum())
    lost_frac = 1 - whole / sent_n
    # udp_fairness runs a TCP flow (flow 1) on the same paths: it fills the switches' 100-packet queues, so some
    # fragments are lost to congestion even without configured loss
    if loss_pct == 0:
        assert lost_frac <= 0.10, lost_frac
    else:
        assert 0.15 <= lost_frac <= 0.45, lost_frac        # (1 - 0.05)^6 = 0.735 survive the random loss alone
    # iperf3 counts what the receiving application got: whole datagrams (its loss % over the datagrams it expected)
    assert abs(srv["lost_percent"] / 100 - lost_frac) <= 0.05
    assert _namespaces(env["MPCC_NS_PREFIX"]) == []
