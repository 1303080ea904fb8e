"""`mpcc analyze` end to end on hand-built captures."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from pcapgen import udp, write_pcap  # noqa: E402
from test_metrics_tcp import PKTS  # noqa: E402


def _run(*args):
    return subprocess.run([sys.executable, "-m", "mpcc.cli", "analyze", *map(str, args)], capture_output=True, text=True)


def test_json(tmp_path):
    p = write_pcap(tmp_path / "c.pcapng", PKTS + [udp("10.0.0.9", 7, "10.0.0.8", 8, payload=100, t=0.06),
                                                  udp("10.0.0.9", 7, "10.0.0.8", 8, payload=100, t=0.07)],
                   link="sll2", fmt="pcapng", snaplen=128)
    r = _run(p, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    t, u = out["flows"]
    assert {k: t[k] for k in ["src", "sport", "dst", "dport", "data_packets", "data_bytes", "retransmissions",
                              "sack_acks", "sack_blocks", "dsack_blocks", "rtt_ms_median"]} == {
        "src": "10.0.0.1", "sport": 40000, "dst": "10.0.0.2", "dport": 5201, "data_packets": 8, "data_bytes": 800,
        "retransmissions": 2, "sack_acks": 3, "sack_blocks": 4, "dsack_blocks": 2, "rtt_ms_median": 19.0}
    assert t["goodput_mbps"] == pytest.approx(600 * 8 / 0.046 / 1e6, abs=1e-3)
    assert t["duration_s"] == pytest.approx(0.046)
    assert u["proto"] == "udp" and u["packets"] == 2 and u["bytes"] == 200
    assert u["goodput_mbps"] == pytest.approx(200 * 8 / 0.01 / 1e6, abs=1e-3)


def test_table(tmp_path):
    r = _run(write_pcap(tmp_path / "c.pcap", PKTS))
    assert r.returncode == 0 and "10.0.0.1:40000" in r.stdout


def test_no_tcp_udp(tmp_path):
    import dpkt
    p = tmp_path / "arp.pcap"
    with open(p, "wb") as f:
        dpkt.pcap.Writer(f).writepkt(b"\xff" * 12 + b"\x08\x06" + b"\x00" * 28, 1.0)
    r = _run(p)
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_missing_file(tmp_path):
    r = _run(tmp_path / "nope.pcap")
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1
