"""Real captures (tests/data/real, see its README) vs tshark: counts of the iperf3 data flow must agree."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REAL = sorted((Path(__file__).parent / "data" / "real").glob("*.pcap"))

pytestmark = pytest.mark.tshark


def _tshark_counts(pcap, sport, dport):
    out = subprocess.run(
        ["tshark", "-r", str(pcap), "-Y", "tcp", "-T", "fields", "-e", "tcp.srcport", "-e", "tcp.dstport",
         "-e", "tcp.len", "-e", "tcp.options.sack.count", "-e", "tcp.analysis.retransmission",
         "-e", "tcp.analysis.fast_retransmission"],
        capture_output=True, text=True, check=True).stdout
    c = dict(data_packets=0, data_bytes=0, sack_acks=0, sack_blocks=0, retransmissions=0)
    for line in out.splitlines():
        f = line.split("\t")
        k = (int(f[0]), int(f[1]))
        if k == (sport, dport):
            if f[2] and int(f[2]) > 0:
                c["data_packets"] += 1
                c["data_bytes"] += int(f[2])
            if f[4] or f[5]:
                c["retransmissions"] += 1
        elif k == (dport, sport) and f[3]:
            n = sum(int(x) for x in f[3].split(","))
            if n > 0:
                c["sack_acks"] += 1
                c["sack_blocks"] += n
    return c


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
@pytest.mark.parametrize("pcap", REAL, ids=[p.name for p in REAL])
def test_analyze_matches_tshark(pcap):
    r = subprocess.run([sys.executable, "-m", "mpcc.cli", "analyze", str(pcap), "--json"],
                       capture_output=True, text=True, check=True)
    flows = [f for f in json.loads(r.stdout)["flows"] if f["proto"] == "tcp"]
    data = max(flows, key=lambda f: f["data_bytes"])  # the iperf3 data connection (not the control one)
    ts = _tshark_counts(pcap, data["sport"], data["dport"])
    for k in ("data_packets", "data_bytes", "sack_acks", "sack_blocks"):
        assert data[k] == ts[k], (k, data[k], ts[k])
    assert abs(data["retransmissions"] - ts["retransmissions"]) <= 0.02 * max(ts["retransmissions"], 1)
