"""UDP datagrams reassembled from IPv4 fragments (analysis.metrics.udp_datagrams) on hand-built pcaps whose answers
are known by construction: iperf3's 1448-byte datagrams (one packet each) and the paper era's 8192-byte datagrams
(8200 bytes of IP payload: 5 fragments of 1480 bytes + 1 of 800, IP packets of 5 x 1500 + 820 bytes)."""
from __future__ import annotations

import gzip
import ipaddress
import lzma
import math
import struct

import dpkt
import pandas as pd
import pytest

from analysis.errors import CaptureError
from analysis.metrics.udp_datagrams import COLUMNS, datagrams, goodput_mbps, summary
from pcapgen import LINKTYPES, frame, tcp, udp

T0 = 1_700_000_000.0
A, B, C = "10.0.0.1", "10.0.1.2", "10.0.2.3"
BIG = 8192        # the paper era's iperf3 UDP payload (bytes)
FRAG = 1480       # IP payload per fragment over a 1500-byte MTU (bytes, a multiple of 8)


def ipv4(src, dst, ip_id, frag_field, payload: bytes, proto=17) -> bytes:
    """An IPv4 packet (20-byte header) with the given Identification and flags/fragment-offset field."""
    return struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), ip_id, frag_field, 64, proto, 0,
                       ipaddress.IPv4Address(src).packed, ipaddress.IPv4Address(dst).packed) + payload


def fragments(src, sport, dst, dport, ip_id, data_len=BIG) -> list[bytes]:
    """The IP packets of one UDP datagram with ``data_len`` data bytes, fragmented as a 1500-byte MTU does
    (RFC 791: offsets in 8-byte units, MF on every fragment but the last)."""
    dgram = struct.pack("!HHHH", sport, dport, 8 + data_len, 0) + bytes(data_len)
    out = []
    for off in range(0, len(dgram), FRAG):
        mf = 0x2000 if off + FRAG < len(dgram) else 0
        out.append(ipv4(src, dst, ip_id, mf | off // 8, dgram[off:off + FRAG]))
    return out


def write(path, pkts, link="eth", snaplen=65535):
    """A nanosecond classic pcap of ``pkts``: (t s after T0, IP bytes) or (t, frame bytes, True) for a raw frame."""
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f, linktype=LINKTYPES[link], snaplen=snaplen, nano=True)
        for p in pkts:
            fr = p[1] if len(p) == 3 else frame(p[1], link)
            w.writepkt(fr[:snaplen], T0 + p[0])
    return path


def big_run(n=20, lose=()):
    """``n`` 8192-byte datagrams A:40000 -> B:5201 (ids 1..n), datagram j sent at 0.005 + 0.01 j s, its fragments
    0.2 ms apart; ``lose``: (datagram, fragment) pairs left out."""
    pkts = []
    for j in range(n):
        for i, ip in enumerate(fragments(A, 40000, B, 5201, j + 1)):
            if (j, i) not in lose:
                pkts.append((0.005 + 0.01 * j + 0.0002 * i, ip))
    return pkts


def test_unfragmented_1448_byte_datagrams_all_complete(tmp_path):
    pkts = [udp(A, 40000, B, 5201, payload=1448, t=0.005 + 0.01 * i, ip_id=i) for i in range(100)]
    df = datagrams(write(tmp_path / "u.pcap", pkts))
    assert list(df.columns) == list(COLUMNS) and len(df) == 100
    assert df["complete"].all() and (df["fragments_seen"] == 1).all() and (df["n_fragments_expected"] == 1).all()
    assert (df["udp_len"] == 1456).all() and (df["payload_bytes_seen"] == 1456).all()
    assert (df["sport"] == 40000).all() and (df["dport"] == 5201).all() and df["ip_id"].tolist() == list(range(100))
    assert (df["ts_first"] == df["ts_last"]).all()
    assert goodput_mbps(df, T0, T0 + 1.0) == 100 * 1448 * 8 / 1e6 == 1.1584
    assert goodput_mbps(df, T0, T0 + 0.5) == 50 * 1448 * 8 / 0.5 / 1e6
    assert summary(df) == {"datagrams": 100, "complete": 100, "incomplete": 0, "loss_fraction": 0.0,
                           "fragments_per_datagram_median": 1.0}


@pytest.mark.parametrize("link,snaplen", [("eth", 65535), ("sll", 65535), ("eth", 128)])
def test_8192_byte_datagrams_in_six_fragments_complete(tmp_path, link, snaplen):
    pkts = big_run()
    assert [len(ip) for _, ip in pkts[:6]] == [1500] * 5 + [820]
    df = datagrams(write(tmp_path / "f.pcap", pkts, link=link, snaplen=snaplen))   # -s 128: lengths from IP headers
    assert len(df) == 20 and df["complete"].all()
    assert (df["fragments_seen"] == 6).all() and (df["n_fragments_expected"] == 6).all()
    assert (df["udp_len"] == 8200).all() and (df["payload_bytes_seen"] == 8200).all()
    assert df["ip_id"].tolist() == list(range(1, 21))
    assert goodput_mbps(df, T0, T0 + 1.0) == 20 * 8192 * 8 / 1e6 == 1.31072
    assert summary(df)["fragments_per_datagram_median"] == 6.0


def test_missing_middle_fragment_loses_exactly_that_datagram(tmp_path):
    df = datagrams(write(tmp_path / "m.pcap", big_run(lose={(7, 2)})))
    assert len(df) == 20
    bad = df[~df["complete"]]
    assert bad["ip_id"].tolist() == [8]
    assert bad[["fragments_seen", "payload_bytes_seen", "n_fragments_expected", "udp_len"]].iloc[0].tolist() == [
        5, 8200 - 1480, 6, 8200]
    assert goodput_mbps(df, T0, T0 + 1.0) == 19 * 8192 * 8 / 1e6 == 1.245184
    assert summary(df) == {"datagrams": 20, "complete": 19, "incomplete": 1, "loss_fraction": 0.05,
                           "fragments_per_datagram_median": 6.0}


def test_fragments_interleaved_across_two_paths_still_complete(tmp_path):
    """Per-packet round-robin over a 2-ms and a 15-ms path: fragments of consecutive datagrams interleave, and for
    every other datagram the first fragment takes the slow path and arrives after the later ones."""
    arrivals = []   # (arrival t, datagram, IP bytes)
    for j in range(30):
        for i, ip in enumerate(fragments(A, 40000, B, 5201, j + 1)):
            path = (i + j) % 2
            arrivals.append((0.01 * j + 0.0002 * i + (0.002, 0.015)[path], j, ip))
    arrivals.sort(key=lambda a: a[0])
    order = [j for _, j, _ in arrivals]
    assert order[:12] == [0, 0, 0, 1, 1, 1, 0, 0, 0, 2, 2, 2]   # interleaved: datagram 0's slow fragments come late
    df = datagrams(write(tmp_path / "rr.pcap", [(t, ip) for t, _, ip in arrivals]))
    assert len(df) == 30 and df["complete"].all() and (df["fragments_seen"] == 6).all()
    by_id = df.set_index("ip_id")
    for j in range(30):
        ts = [T0 + t for t, k, _ in arrivals if k == j]
        assert by_id.loc[j + 1, "ts_first"] == pytest.approx(min(ts), abs=1e-6)
        assert by_id.loc[j + 1, "ts_last"] == pytest.approx(max(ts), abs=1e-6)
    assert goodput_mbps(df, T0, T0 + 1.0) == 30 * 8192 * 8 / 1e6


def test_lost_last_or_first_fragment_is_incomplete(tmp_path):
    df = datagrams(write(tmp_path / "l.pcap", big_run(n=10, lose={(3, 5), (6, 0)})))
    assert len(df) == 10 and df["complete"].sum() == 8
    last = df[df["ip_id"] == 4].iloc[0]
    assert (bool(last["complete"]), last["fragments_seen"], last["payload_bytes_seen"], last["n_fragments_expected"],
            last["udp_len"], last["dport"]) == (False, 5, 5 * 1480, 6, 8200, 5201)
    first = df[df["ip_id"] == 7].iloc[0]
    assert not first["complete"] and first["fragments_seen"] == 5 and first["payload_bytes_seen"] == 4 * 1480 + 800
    assert pd.isna(first["sport"]) and pd.isna(first["dport"]) and pd.isna(first["udp_len"])
    assert pd.isna(first["n_fragments_expected"])
    assert goodput_mbps(df, T0, T0 + 1.0) == 8 * 8192 * 8 / 1e6
    assert summary(df)["loss_fraction"] == 0.2 and summary(df)["fragments_per_datagram_median"] == 6.0


def test_ip_id_reuse_in_a_long_capture_gives_separate_datagrams(tmp_path):
    """The 16-bit id wraps after 65 536 datagrams (215 s at 305 datagrams/s): each reuse of an id is its own datagram.
    id 3: two unfragmented datagrams (rule 2: the first was complete); id 7: two whole 8192-byte datagrams 1 s apart
    (rule 2); id 8: the first lost its offset-0 fragment, the id comes back 215 s later (rule 3, 30-s timeout);
    id 9: the first lost its last fragment, the id comes back 5 s later (rule 4: a second offset-0 fragment)."""
    f = {k: fragments(A, 40000, B, 5201, k) for k in (7, 8, 9)}
    pkts = [udp(A, 40000, B, 5201, payload=1448, t=0.0, ip_id=3)]
    pkts += [(0.001 + 0.0002 * i, ip) for i, ip in enumerate(f[7])]
    pkts += [(0.003 + 0.0002 * i, ip) for i, ip in enumerate(f[8]) if i != 0]
    pkts += [(0.005 + 0.0002 * i, ip) for i, ip in enumerate(f[9]) if i != 5]
    pkts += [udp(A, 40000, B, 5201, payload=1448, t=0.5, ip_id=3)]
    pkts += [(1.0 + 0.0002 * i, ip) for i, ip in enumerate(f[7])]
    pkts += [(5.0 + 0.0002 * i, ip) for i, ip in enumerate(f[9])]
    pkts += [(215.0 + 0.0002 * i, ip) for i, ip in enumerate(f[8])]
    path = write(tmp_path / "reuse.pcap", pkts)
    df = datagrams(path)
    got = [(r.ip_id, round(r.ts_first - T0, 3), r.fragments_seen, r.complete) for r in df.itertuples()]
    assert got == [(3, 0.0, 1, True), (7, 0.001, 6, True), (8, 0.003, 5, False), (9, 0.005, 5, False),
                   (3, 0.5, 1, True), (7, 1.0, 6, True), (9, 5.0, 6, True), (8, 215.0, 6, True)]
    assert summary(df)["complete"] == 6 and summary(df)["incomplete"] == 2
    assert goodput_mbps(df, T0, T0 + 300.0) == (2 * 1448 + 4 * 8192) * 8 / 300.0 / 1e6
    # with a 300-s timeout, id 8's late first fragment fills the old hole (rule 3 off); its other 5 start anew
    long = datagrams(path, reassembly_timeout_s=300.0)
    got8 = [(round(r.ts_first - T0, 3), round(r.ts_last - T0, 3), r.fragments_seen, r.complete)
            for r in long[long["ip_id"] == 8].itertuples()]
    assert got8 == [(0.003, 215.0, 6, True), (215.0, 215.001, 5, False)]


def test_port_filters(tmp_path):
    """A -> B carries two flows (dport 5201, 5202); C -> B one (dport 5203).  A datagram whose first fragment was lost
    has no ports: on C -> B it can only be flow 5203's, on A -> B it is nobody's."""
    pkts, t = [], 0.0
    for sport, dst_port, ids, src, lost in ((40000, 5201, range(1, 6), A, None), (40001, 5202, range(101, 106), A, 103),
                                            (40002, 5203, range(201, 204), C, 202)):
        for k in ids:
            for i, ip in enumerate(fragments(src, sport, B, dst_port, k)):
                if not (k == lost and i == 0):
                    pkts.append((t, ip))
                t += 0.0002
    path = write(tmp_path / "ports.pcap", pkts)
    assert len(datagrams(path)) == 13 and len(datagrams(path, dst=B)) == 13
    d1 = datagrams(path, dport=5201)
    assert d1["ip_id"].tolist() == [1, 2, 3, 4, 5] and d1["complete"].all()
    d2 = datagrams(path, dport=5202)
    assert d2["ip_id"].tolist() == [101, 102, 104, 105] and d2["complete"].all()
    assert datagrams(path, src=A, sport=40001).equals(d2)
    d3 = datagrams(path, dport=5203)
    assert d3["ip_id"].tolist() == [201, 202, 203] and d3["complete"].tolist() == [True, False, True]
    assert datagrams(path, sport=40002, dport=5203).equals(d3) and datagrams(path, src=C).equals(d3)
    assert datagrams(path, sport=40000, dport=5202).empty and datagrams(path, src=B).empty


def test_compressed_capture_gives_the_same_table(tmp_path):
    path = write(tmp_path / "m.pcap", big_run(lose={(7, 2), (12, 0)}))
    raw = path.read_bytes()
    (tmp_path / "m.pcap.gz").write_bytes(gzip.compress(raw))
    (tmp_path / "m.pcap.xz").write_bytes(lzma.compress(raw, format=lzma.FORMAT_XZ))
    plain = datagrams(path)
    assert summary(plain)["incomplete"] == 2
    pd.testing.assert_frame_equal(datagrams(tmp_path / "m.pcap.gz"), plain)
    pd.testing.assert_frame_equal(datagrams(tmp_path / "m.pcap.xz"), plain)


def test_non_ip_tcp_ipv6_and_non_udp_fragments_are_ignored(tmp_path):
    arp = b"\xff" * 6 + b"\x02\x00\x00\x00\x00\x01" + b"\x08\x06" + bytes(28)
    pkts = [(0.0, arp, True),
            tcp(A, 40000, B, 5201, seq=1, ack=1, flags="A", payload=1448, t=0.001, ip_id=5),
            (0.002, ipv4(A, B, 6, 0x2000 | 185, bytes(1480), proto=6)),       # a non-first fragment of a TCP packet
            udp("fd00::1", 40000, "fd00::2", 5201, payload=100, t=0.003),
            udp(A, 40000, B, 5201, payload=1448, t=0.004, ip_id=5)]
    df = datagrams(write(tmp_path / "mix.pcap", pkts))
    assert len(df) == 1 and bool(df["complete"].iloc[0]) and df["udp_len"].iloc[0] == 1456


def test_inconsistent_datagrams_are_incomplete(tmp_path):
    """id 1: one packet whose UDP length (1500) exceeds its IP payload (1456); id 2: an 8192-byte datagram with one
    more fragment, past the end of the last (MF = 0) one, arriving before that last one (once the six had made the
    datagram whole, a later fragment would start a new datagram: id-reuse rule 2)."""
    short = struct.pack("!HHHH", 40000, 5201, 1500, 0) + bytes(1448)
    extra = ipv4(A, B, 2, 0x2000 | (8200 // 8), bytes(8))
    frags = fragments(A, 40000, B, 5201, 2)
    pkts = [(0.001, ipv4(A, B, 1, 0, short))]
    pkts += [(0.002 + 0.0002 * i, ip) for i, ip in enumerate(frags[:5] + [extra] + frags[5:])]
    df = datagrams(write(tmp_path / "bad.pcap", pkts))
    assert df[["ip_id", "udp_len", "fragments_seen", "complete"]].values.tolist() == [[1, 1500, 1, False],
                                                                                      [2, 8200, 7, False]]
    assert goodput_mbps(df, T0, T0 + 1.0) == 0.0


def test_empty_and_non_pcap_files(tmp_path):
    df = datagrams(write(tmp_path / "empty.pcap", []))
    assert df.empty and list(df.columns) == list(COLUMNS)
    s = summary(df)
    assert (s["datagrams"], s["complete"], s["incomplete"]) == (0, 0, 0) and math.isnan(s["loss_fraction"])
    assert goodput_mbps(df, T0, T0 + 1.0) == 0.0
    with pytest.raises(ValueError):
        goodput_mbps(df, T0, T0)
    (tmp_path / "junk.pcap").write_bytes(b"not a capture at all, not even close")
    with pytest.raises(CaptureError):
        datagrams(tmp_path / "junk.pcap")
