"""Flow keys, direction pairing and 32-bit sequence unwrap."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from pcapgen import tcp, udp, write_pcap  # noqa: E402

from analysis.flows import split_flows, unwrap_seq
from analysis.ingest import read_pcap


def test_unwrap_across_wrap_and_backwards():
    assert unwrap_seq([2**32 - 10, 5, 2**32 - 10, 100]).tolist() == [0, 15, 0, 110]
    assert unwrap_seq([10, 20], base=2**32 - 5).tolist() == [15, 25]


def test_pairing_udp_and_order(tmp_path):
    pk = [udp("10.0.0.1", 1, "10.0.0.2", 2, payload=10, t=0.0),
          tcp("10.0.0.3", 5201, "10.0.0.4", 999, seq=5, ack=1, t=0.1),          # ack direction seen first
          tcp("10.0.0.4", 999, "10.0.0.3", 5201, seq=1, ack=5, payload=50, t=0.2),
          udp("10.0.0.2", 2, "10.0.0.1", 1, payload=10, t=0.3)]
    fl = split_flows(read_pcap(write_pcap(tmp_path / "f.pcap", pk)))
    assert [(f.proto, f.src, f.sport) for f in fl] == [(17, "10.0.0.1", 1), (6, "10.0.0.4", 999), (17, "10.0.0.2", 2)]
    assert len(fl[1].data) == 1 and len(fl[1].ack) == 1
