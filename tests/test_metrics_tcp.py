"""TCP metrics on a hand-built connection whose answers are known by construction.

Sender A:40000 -> B:5201, 100-byte segments, initial seq 2**32-250 so that the stream wraps at offset 250.
  d1 off 0    t=0.000     a1 ack 100 t=0.010
  d2 off 100  t=0.001     a2 ack 200 t=0.012
  d3 off 200  t=0.002 (lost)       a3 ack 200 SACK[300,400) t=0.013
  d4 off 300  t=0.003     d5 off 200 t=0.014 (retransmission)
                          a4 ack 400 t=0.030
  d6 off 0    t=0.031 (spurious retransmission)   a5 ack 400 SACK[0,100) = D-SACK below ACK t=0.041
  d7 off 400  t=0.045, d8 off 500 t=0.046        a6 ack 400 SACK[520,560)[500,600) = D-SACK inside 2nd t=0.050
"""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from pcapgen import tcp, write_pcap  # noqa: E402

from analysis.flows import split_flows
from analysis.ingest import read_pcap
from analysis.metrics import rtt, sack, throughput
from analysis.metrics.retransmissions import retransmission_mask, retransmissions, spurious_retransmissions

A, B = "10.0.0.1", "10.0.0.2"
S0 = 2**32 - 250


def d(off, t, tsval):
    return tcp(A, 40000, B, 5201, seq=S0 + off, ack=1, flags="A", payload=100, t=t, ts_opt=(tsval, 7))


def a(off, t, tsecr, blocks=None):
    return tcp(B, 5201, A, 40000, seq=1, ack=S0 + off, flags="A", t=t, ts_opt=(7, tsecr),
               sack=[(S0 + l, S0 + r) for l, r in blocks] if blocks else None)


PKTS = [d(0, 0.000, 1), d(100, 0.001, 2), d(200, 0.002, 3), d(300, 0.003, 4),
        a(100, 0.010, 1), a(200, 0.012, 2), a(200, 0.013, 4, [(300, 400)]),
        d(200, 0.014, 5), a(400, 0.030, 5), d(0, 0.031, 6), a(400, 0.041, 6, [(0, 100)]),
        d(400, 0.045, 7), d(500, 0.046, 8), a(400, 0.050, 8, [(520, 560), (500, 600)])]


@pytest.fixture(scope="module")
def flow(tmp_path_factory):
    p = write_pcap(tmp_path_factory.mktemp("m") / "c.pcap", PKTS, snaplen=128)
    (f,) = split_flows(read_pcap(p))
    return f


def test_direction_and_unwrap(flow):
    assert (flow.src, flow.sport, flow.dst, flow.dport) == (A, 40000, B, 5201)
    assert flow.data["seq_un"].tolist() == [0, 100, 200, 300, 200, 0, 400, 500]
    assert flow.ack["ack_un"].tolist() == [100, 200, 200, 400, 400, 400]
    assert flow.ack["sack1_left_un"].tolist()[2] == 300


def test_retransmissions(flow):
    assert retransmission_mask(flow.data).tolist() == [False] * 4 + [True, True, False, False]
    assert retransmissions(flow.data) == 2
    assert spurious_retransmissions(flow.data, flow.ack) == 1


def test_sack_counts(flow):
    assert sack.sack_acks(flow.ack) == 3
    assert sack.sack_blocks(flow.ack) == 4
    assert sack.dsack_mask(flow.ack).tolist() == [False, False, False, False, True, True]
    assert sack.dsack_blocks(flow.ack) == 2


def test_rtt_karn(flow):
    # d1 (retransmitted later as d6) and d3 (retransmitted as d5) give no sample: Karn's rule
    assert np.allclose(rtt.ack_rtt_ms(flow.data, flow.ack), [11.0, 27.0], atol=1e-3)
    assert rtt.summary_ms([11.0, 27.0])["median"] == pytest.approx(19.0)


def test_ts_rtt(flow):
    # tsecr 1 @10ms (tsval 1 @0), 2 @12ms (@1ms), 4 @13ms (@3ms), 5 @30ms (@14ms), 6 @41ms (@31ms), 8 @50ms (@46ms)
    assert np.allclose(rtt.ts_rtt_ms(flow.data, flow.ack), [10, 11, 10, 16, 10, 4], atol=1e-3)


def test_ts_rtt_takes_a_tsecr_of_zero(tmp_path):
    """RFC 7323 sec. 3.2: with the ACK bit set, TSecr is valid whatever its value, 0 included."""
    pk = [d(0, 0.000, 0), d(100, 0.001, 1), a(100, 0.010, 0), a(200, 0.011, 1)]
    (f,) = split_flows(read_pcap(write_pcap(tmp_path / "ts0.pcap", pk)))
    assert np.round(rtt.ts_rtt_ms(f.data, f.ack), 3).tolist() == [10.0, 10.0]


def test_data_on_a_syn_starts_after_its_sequence_number(tmp_path):
    """RFC 9293 sec. 3.4: a SYN occupies the ISN, so 100 bytes on a SYN (TCP Fast Open) are [ISN+1, ISN+101); the same
    bytes sent again at ISN+1 are a retransmission and add no new sequence space."""
    isn = 1000
    pk = [tcp(A, 40000, B, 5201, seq=isn, flags="S", payload=100, t=0.0),
          tcp(B, 5201, A, 40000, seq=7, ack=isn + 101, flags="SA", t=0.010),
          tcp(A, 40000, B, 5201, seq=isn + 1, ack=8, flags="A", payload=100, t=0.011),
          tcp(A, 40000, B, 5201, seq=isn + 101, ack=8, flags="A", payload=100, t=0.012)]
    (f,) = split_flows(read_pcap(write_pcap(tmp_path / "tfo.pcap", pk)))
    assert f.data["seq_un"].tolist() == [1, 1, 101] and f.data["end_un"].tolist() == [101, 101, 201]
    assert retransmission_mask(f.data).tolist() == [False, True, False]
    assert throughput.new_bytes(f.data).tolist() == [100, 0, 100]


def test_goodput(flow):
    assert throughput.goodput_mbps(flow.data) == pytest.approx(600 * 8 / 0.046 / 1e6)
    assert throughput.raw_throughput_mbps(flow.data) == pytest.approx(800 * 8 / 0.046 / 1e6)
    assert throughput.goodput_mbps(flow.data, 0.0 + flow.data["ts"].min(), 0.01 + flow.data["ts"].min()) == \
        pytest.approx(400 * 8 / 0.01 / 1e6)
    s = throughput.goodput_series(flow.data, bin_s=0.01)
    assert s.tolist() == pytest.approx([400 * 8 / 0.01 / 1e6, 0, 0, 0, 200 * 8 / 0.01 / 1e6])


def test_dsack_edges(tmp_path):
    """RFC 2883 sec. 4: right edge == cumulative ACK is a D-SACK; a first block above the ACK and not inside the
    second is a plain SACK block."""
    pk = [d(0, 0.0, 1), d(100, 0.001, 2), d(300, 0.002, 3),
          a(200, 0.010, 1, [(100, 200)]),             # at the ACK -> D-SACK
          a(200, 0.011, 2, [(300, 400), (500, 600)]),  # plain SACK
          a(200, 0.012, 3, [(300, 350), (300, 400)])]  # inside the second -> D-SACK
    (f,) = split_flows(read_pcap(write_pcap(tmp_path / "ds.pcap", pk)))
    assert sack.dsack_mask(f.ack).tolist() == [True, False, True]
    assert sack.sack_blocks(f.ack) == 5 and sack.sack_acks(f.ack) == 3
