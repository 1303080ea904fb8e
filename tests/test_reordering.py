"""Reordering metrics (RFC 4737, RFC 5236) on streams whose answers are derived by hand below."""
import json

import dpkt
import numpy as np
import pandas as pd
import pytest

from analysis.metrics.reordering import rfc4737, rfc5236_rbd, rfc5236_rd, tcp_reordering, unwrap_seq


# ------------------------------------------------------------------ RFC 4737

def test_rfc4737_late_packet():
    # Arrival 1,2,3,5,6,7,8,9,10,4 (L = 10). NextExp: 1->2->3->4; 5>=4 -> 6; ... 10 -> NextExp 11;
    # 4 < 11 -> the only reordered packet. Ratio 1/10.
    # Extent: 4 arrives at i = 10; earliest j with s[j] > 4 is j = 4 (s[4] = 5) -> e = 10 - 4 = 6.
    # n-reordering, n = 3: s[7..9] = 8, 9, 10 all > 4 -> 3-reordered.
    r = rfc4737([1, 2, 3, 5, 6, 7, 8, 9, 10, 4])
    assert r["received"] == 10 and r["reordered"] == 1
    assert r["reordered_ratio"] == pytest.approx(0.1) and r["reordered_pct"] == pytest.approx(10.0)
    assert r["extents"] == [6] and r["extent_max"] == 6 and r["extent_mean"] == 6.0
    assert r["n3_reordered"] == 1


def test_rfc4737_early_packet():
    # Arrival 1,10,2,3,4,5: after 10 NextExp = 11, so 2,3,4,5 are all reordered: 4/6.
    # Extents (earliest earlier larger is always 10 at j = 2): 2 at i=3 -> 1, 3 at i=4 -> 2,
    # 4 at i=5 -> 3, 5 at i=6 -> 4: max 4, mean 2.5.
    # n = 3: 2 (i=3) needs s[0..2], s[0] does not exist -> no; 3 (i=4): s[1] = 1 < 3 -> no;
    # 4 (i=5): s[3] = 2 < 4 -> no; 5 (i=6): s[3..5] = 2,3,4 < 5 -> no. n3_reordered = 0.
    r = rfc4737([1, 10, 2, 3, 4, 5])
    assert r["reordered"] == 4
    assert r["reordered_ratio"] == pytest.approx(4 / 6)
    assert r["extents"] == [1, 2, 3, 4] and r["extent_max"] == 4 and r["extent_mean"] == pytest.approx(2.5)
    assert r["n3_reordered"] == 0


def test_rfc4737_in_order_and_loss():
    for s in ([1, 2, 3, 4, 5], [1, 2, 4, 5, 7]):    # losses are not reordering
        r = rfc4737(s)
        assert (r["reordered"], r["extent_max"], r["n3_reordered"]) == (0, 0, 0)
        assert r["reordered_ratio"] == 0.0


def test_rfc4737_single_swap_and_duplicates():
    # 1,3,2,4: 2 reordered, extent 3-2 = 1; only 1 preceding larger packet -> not 3-reordered.
    r = rfc4737([1, 3, 2, 4])
    assert (r["reordered"], r["extents"], r["n3_reordered"]) == (1, [1], 0)
    # a duplicate copy of 3 is ignored
    r = rfc4737([1, 3, 3, 2, 4])
    assert (r["received"], r["duplicates"], r["reordered"]) == (4, 1, 1)


# ------------------------------------------------------------------ RFC 5236

def test_rd_no_loss():
    # [1,2,4,5,3,7,6], DT = 3, D = RI - S:
    # RI 1:S1 D0 | RI 2:S2 D0 | RI 3:S4 D-1 (buffer 4) | RI 4:S5 D-1 | RI 5:S3 D+2 | RI 6:S7 D-1 | RI 7:S6 D+1
    assert rfc5236_rd([1, 2, 4, 5, 3, 7, 6], dt=3, counts=True) == {-1: 3, 0: 2, 1: 1, 2: 1}
    rd = rfc5236_rd([1, 2, 4, 5, 3, 7, 6], dt=3)
    assert rd[-1] == pytest.approx(3 / 7) and sum(rd.values()) == pytest.approx(1.0)


def test_rd_with_loss():
    # [1,2,4,6,5,7,8], 3 lost, DT = 3: RI 3 is in neither window nor buffer -> RI = min = 4;
    # S4 D0 | RI 5: S6 D-1 | RI 6: S5 D+1 | S7 D0 | S8 D0
    assert rfc5236_rd([1, 2, 4, 6, 5, 7, 8], dt=3, counts=True) == {-1: 1, 0: 5, 1: 1}


def test_rd_threshold_discards():
    # 4 displaced by 6 > DT = 3: RI skips past it, the late 4 is then below RI -> discarded.
    assert rfc5236_rd([1, 2, 3, 5, 6, 7, 8, 9, 10, 4], dt=3, counts=True) == {0: 9}
    # with DT = 6 it is kept: 5..10 each early by 1 (D = -1), 4 late by 6.
    assert rfc5236_rd([1, 2, 3, 5, 6, 7, 8, 9, 10, 4], dt=6, counts=True) == {-1: 6, 0: 3, 6: 1}


def test_rbd():
    # [1,2,4,5,3,7,6], BT = 3, occupancy after each arrival: 0,0,1,2,0 (3 frees 4,5),1,0
    assert rfc5236_rbd([1, 2, 4, 5, 3, 7, 6], bt=3, counts=True) == {0: 4, 1: 2, 2: 1}
    rbd = rfc5236_rbd([1, 2, 3, 4], bt=3)
    assert rbd == {0: 1.0}


def test_in_order_all_zero():
    s = list(range(1, 51))
    assert rfc5236_rd(s, counts=True) == {0: 50}
    assert rfc5236_rbd(s, counts=True) == {0: 50}


# ------------------------------------------------------------------ TCP wrapper

MSS = 1000


def _frame(rows):
    return pd.DataFrame(rows, columns=["ts", "src", "dst", "proto", "sport", "dport", "seq", "payload_len"])


def _segments(order, isn, t0=0.0, src="10.0.0.1", dst="10.0.1.1"):
    return [(t0 + k * 1e-3, src, dst, 6, 40000, 5201, (isn + i * MSS) % 2**32, MSS) for k, i in enumerate(order)]


def test_unwrap():
    raw = np.array([2**32 - 1000, 2**32 - 1000 + 500, 104, 1104])
    assert unwrap_seq(raw, raw[0]).tolist() == [0, 500, 1104, 2104]


def test_tcp_receiver_only_with_wrap_and_retransmission():
    isn = 2**32 - 2500                          # segments 3.. wrap past 2**32
    order = [0, 1, 3, 2, 4, 5, 6]               # a single swap
    rows = _segments(order, isn)
    rows.append((1.0, "10.0.0.1", "10.0.1.1", 6, 40000, 5201, (isn + 5 * MSS) % 2**32, MSS))  # retransmitted 5
    rows.append((0.5, "10.0.1.1", "10.0.0.1", 6, 5201, 40000, 1, 0))                           # a pure ACK
    rows += [(0.2 + k, "10.9.9.9", "10.0.1.1", 6, 1, 2, k * 10, 10) for k in range(3)]         # a small flow
    r = tcp_reordering(_frame(rows))
    assert r["basis"] == "receiver-only"
    assert r["flow"] == {"src": "10.0.0.1", "dst": "10.0.1.1", "sport": 40000, "dport": 5201}
    # seg 5 excluded (arrived twice, both copies) but still numbered: packet number = rank among all
    # distinct sequence numbers seen (segs 0..6 -> 1..7), evaluated 1,2,4,3,5,7 -> one reordered
    assert r["received"] == 6 and r["reordered"] == 1 and r["extent_max"] == 1 and r["n3_reordered"] == 0
    assert r["rd"] and r["rbd"]


def test_tcp_sender_filtered():
    isn = 1000
    rx = _segments([0, 2, 1, 3, 4], isn)
    # sender sent 0..4 once, and 2 twice (spurious retransmission) -> 2 excluded everywhere
    tx = _segments([0, 1, 2, 3, 4, 2], isn)
    r = tcp_reordering(_frame(rx), _frame(tx))
    assert r["basis"] == "sender-filtered"
    assert r["received"] == 4 and r["reordered"] == 0
    r2 = tcp_reordering(_frame(rx), _frame(_segments([0, 1, 2, 3, 4], isn)))
    assert r2["reordered"] == 1 and r2["extent_max"] == 1


def test_tcp_no_data():
    from analysis.errors import NoTrafficError
    with pytest.raises(NoTrafficError):
        tcp_reordering(_frame([(0.0, "a", "b", 6, 1, 2, 0, 0)]))


# ------------------------------------------------------------------ command on a dpkt-built pcap

def _write_pcap(path, order, isn=5000):
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_EN10MB)
        for k, i in enumerate(order):
            tcp = dpkt.tcp.TCP(sport=40000, dport=5201, seq=(isn + i * 100) % 2**32, ack=1,
                               flags=dpkt.tcp.TH_ACK, data=b"x" * 100)
            ip = dpkt.ip.IP(src=bytes([10, 0, 0, 1]), dst=bytes([10, 0, 1, 1]), p=6, data=tcp, ttl=64)
            ip.len = 20 + len(bytes(tcp))
            eth = dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=dpkt.ethernet.ETH_TYPE_IP, data=ip)
            w.writepkt(bytes(eth), ts=1.0 + k * 1e-3)


def test_command_json(tmp_path, capsys):
    from mpcc.cli import main
    p = tmp_path / "rx.pcap"
    _write_pcap(p, [0, 1, 2, 4, 5, 6, 7, 8, 9, 3])   # same shape as the RFC 4737 late-packet example
    assert main(["reorder", "--receiver", str(p), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["basis"] == "receiver-only"
    assert (out["reordered"], out["extent_max"], out["n3_reordered"]) == (1, 6, 1)
    assert out["reordered_ratio"] == pytest.approx(0.1)
    assert out["rd"] == {"0": 1.0}                    # displacement 6 > DT = 3 -> discarded
    assert main(["reorder", "--receiver", str(p), "--sender", str(p)]) == 0
    text = capsys.readouterr().out
    assert "sender-filtered" in text and "extent_max      6" in text


def test_command_bad_input(tmp_path, capsys):
    from mpcc.cli import main
    assert main(["reorder", "--receiver", str(tmp_path / "missing.pcap")]) != 0
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"not a pcap at all")
    assert main(["reorder", "--receiver", str(bad)]) != 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 2
