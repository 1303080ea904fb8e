"""Vectorised ingest (analysis.ingest.fast_reader) == dpkt reference decoder, column by column, packet by packet.

Every capture is decoded by the dpkt path, the numpy fast path (Python record walk) and, when numba is installed,
the compiled fast path; all tables must be identical (values and dtypes).  Captures: the committed real ones
(tests/data/real), hand-built edge cases (tests/pcapgen.py + raw bytes; answers known by construction), and
seeded random byte mutations of a real capture.  Also: gzip, Parquet cache, engine selection, `mpcc ingest`.
"""
import gzip
import ipaddress
import json
import random
import struct
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from pcapgen import frame, tcp, udp, write_pcap  # noqa: E402

from analysis.errors import CaptureError
from analysis.ingest import cache as pcache
from analysis.ingest import fast_reader, read_pcap
from analysis.ingest.dpkt_reader import read_pcap as read_dpkt
from analysis.ingest.schema import COLUMNS

REAL = sorted((Path(__file__).parent / "data" / "real").glob("*.pcap"))
A, B = "10.0.0.1", "10.0.0.2"
A6, B6 = "fd00::1", "fd00::2"
HAVE_NUMBA = fast_reader.have_numba()
ACCELS = [False, True] if HAVE_NUMBA else [False]


def _decode_all(path):
    """(dpkt table, [fast tables], dpkt warnings, [fast warnings]) for one capture."""
    with warnings.catch_warnings(record=True) as w0:
        warnings.simplefilter("always")
        ref = read_dpkt(path)
    outs, ws = [], []
    for accel in ACCELS:
        with warnings.catch_warnings(record=True) as w1:
            warnings.simplefilter("always")
            outs.append(fast_reader.read_pcap_fast(path, accel=accel))
        ws.append([str(x.message) for x in w1])
    return ref, outs, [str(x.message) for x in w0], ws


def assert_same(path):
    """Every column of every packet equal in all decoders (and the same warnings); returns the dpkt table."""
    ref, outs, w0, ws = _decode_all(path)
    assert list(ref.columns) == list(COLUMNS)
    for out, w in zip(outs, ws):
        assert list(out.columns) == list(ref.columns)
        assert [str(t) for t in out.dtypes] == [str(t) for t in ref.dtypes]
        pd.testing.assert_frame_equal(out, ref, check_exact=True)
        assert w == w0
    return ref


def _raw_pcap(path, records, linktype=1, big=False, nano=True, snaplen=65535):
    """Write a classic pcap by hand: records = [(t, captured bytes, orig_len or None)]."""
    e = ">" if big else "<"
    magic = 0xA1B23C4D if nano else 0xA1B2C3D4
    out = [struct.pack(e + "IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype)]
    for t, data, orig in records:
        sec = int(t)
        frac = round((t - sec) * (1e9 if nano else 1e6))
        out.append(struct.pack(e + "IIII", sec, frac, len(data), orig or len(data)) + data)
    Path(path).write_bytes(b"".join(out))
    return path


def _pkts(a=A, b=B):
    return [
        tcp(a, 40000, b, 5201, seq=100, ack=0, flags="S", t=0.0, mss=1460, wscale=7, sack_permitted=True,
            ts_opt=(1, 0)),
        tcp(a, 40000, b, 5201, seq=101, ack=7, flags="PA", payload=1000, t=0.010, ts_opt=(2, 9)),
        tcp(b, 5201, a, 40000, seq=7, ack=101, flags="A", t=0.020, ts_opt=(9, 2),
            sack=[(1101, 2101), (3101, 4101), (5101, 6101)]),
        udp(a, 4000, b, 5000, payload=300, t=0.030),
        tcp(b, 5201, a, 40000, seq=2**32 - 1, ack=2**32 - 2, flags=0xFF, win=0, t=0.040,
            sack=[(2**32 - 5, 3), (10, 20), (30, 40), (50, 60)]),
        tcp(a, 1, b, 2, t=0.050),  # no options at all
    ]


def _tcp_raw(opts: bytes, *, src=A, dst=B, payload=10, hlen=None, seq=1):
    """TCP packet with exactly these option bytes (NOT padded) and optional forced data offset (bytes)."""
    h = hlen if hlen is not None else 20 + len(opts)
    hdr = struct.pack("!HHIIBBHHH", 1234, 80, seq, 2, (h // 4) << 4, 0x10, 1000, 0, 0)
    return _ipv4(hdr + opts + bytes(payload), 6, src, dst)


def _ipv4(l4: bytes, proto, src=A, dst=B, *, ip_opts=b"", ihl=None, frag=0, ip_len=None, ip_id=7):
    import ipaddress
    words = ihl if ihl is not None else 5 + len(ip_opts) // 4
    total = ip_len if ip_len is not None else 20 + len(ip_opts) + len(l4)
    h = struct.pack("!BBHHHBBH4s4s", 0x40 | words, 0, total, ip_id, frag, 64, proto, 0,
                    ipaddress.IPv4Address(src).packed, ipaddress.IPv4Address(dst).packed)
    return h + ip_opts + l4


def _ipv6(l4: bytes, nh, src=A6, dst=B6, *, ext=b"", plen=None):
    import ipaddress
    pl = plen if plen is not None else len(ext) + len(l4)
    return (struct.pack("!IHBB", 6 << 28, pl, nh, 64) + ipaddress.IPv6Address(src).packed
            + ipaddress.IPv6Address(dst).packed + ext + l4)


def _tcp_l4(opts=b"", payload=5):
    return struct.pack("!HHIIBBHHH", 5, 6, 7, 8, ((20 + len(opts)) // 4) << 4, 0x18, 9, 0, 0) + opts + bytes(payload)


# ------------------------------------------------------------------------------------------ real captures

@pytest.mark.parametrize("pcap", REAL, ids=[p.name for p in REAL])
def test_real_captures_identical(pcap):
    df = assert_same(pcap)
    assert len(df) > 1000 and (df["tsval"] >= 0).mean() > 0.9  # iperf3 over Linux: timestamps on


def test_real_capture_gzip_identical(tmp_path):
    gz = tmp_path / "r.pcap.gz"
    gz.write_bytes(gzip.compress(REAL[0].read_bytes()))
    pd.testing.assert_frame_equal(assert_same(gz), read_dpkt(REAL[0]), check_exact=True)
    pd.testing.assert_frame_equal(read_pcap(gz), read_pcap(REAL[0]), check_exact=True)


@pytest.mark.parametrize("seed", range(12))
def test_random_mutations_identical(tmp_path, seed):
    """Flip random bytes inside packet data (record headers untouched): any header field or option can
    become anything, and the decoders must still agree."""
    rng = random.Random(seed)
    data = bytearray(REAL[seed % len(REAL)].read_bytes())
    offs, *_ = fast_reader.walk_records(np.frombuffer(bytes(data) + bytes(64), np.uint8), len(data), False,
                                        accel=False)
    offs = offs[:600]
    end = offs[-1]
    data = data[:end]
    for off in offs[:-1]:
        incl = struct.unpack_from("<I", data, off + 8)[0]
        for _ in range(rng.choice((0, 1, 2, 4))):
            pos = off + 16 + rng.randrange(min(incl, 90))
            data[pos] = rng.randrange(256)
    p = tmp_path / "m.pcap"
    p.write_bytes(bytes(data))
    assert_same(p)


# ------------------------------------------------------------------------------------------ formats / links

@pytest.mark.parametrize("link", ["eth", "sll", "sll2", "raw"])
@pytest.mark.parametrize("v6", [False, True])
@pytest.mark.parametrize("snaplen", [None, 128, 60])
def test_links_identical(tmp_path, link, v6, snaplen):
    p = write_pcap(tmp_path / "x.pcap", _pkts(A6, B6) if v6 else _pkts(), link=link, snaplen=snaplen)
    df = assert_same(p)
    if snaplen != 60:
        assert df["sack_blocks"].tolist() == [0, 0, 3, 0, 4, 0]
        assert df.loc[4, ["sack1_left", "sack1_right", "sack4_right"]].tolist() == [2**32 - 5, 3, 60]
        assert df["flags"].tolist()[4] == 0xFF and df["seq"].tolist()[4] == 2**32 - 1


@pytest.mark.parametrize("linktype", [101, 228, 229, 12, 14])
def test_raw_ip_linktypes(tmp_path, linktype):
    recs = [(1.5, ipb, None) for _, ipb in _pkts()] + [(2.0, ipb, None) for _, ipb in _pkts(A6, B6)]
    recs.append((3.0, b"\x50" + bytes(40), None))  # IP version 5: not IP
    recs.append((3.1, b"", None))                   # empty record
    df = assert_same(_raw_pcap(tmp_path / "r.pcap", recs, linktype=linktype))
    assert len(df) == 12 and df["pkt_no"].tolist() == list(range(1, 13))


@pytest.mark.parametrize("big", [False, True])
def test_null_loopback(tmp_path, big):
    e = ">" if big else "<"
    recs = []
    for fam in (2, 10, 24, 28, 30, 7):
        ipb = _pkts()[1][1] if fam == 2 else _pkts(A6, B6)[1][1]
        recs.append((1.0, struct.pack(e + "I", fam) + ipb, None))
    recs.append((1.0, b"\x02\x00", None))  # shorter than the 4-byte family
    df = assert_same(_raw_pcap(tmp_path / "n.pcap", recs, linktype=0))
    assert df["ip_version"].tolist() == [4, 6, 6, 6, 6]


@pytest.mark.parametrize("big", [False, True])
@pytest.mark.parametrize("nano", [False, True])
def test_byte_order_and_resolution(tmp_path, big, nano):
    recs = [(1_700_000_000 + 0.123456 + i * 0.000001, frame(ipb, "eth"), None) for i, (_, ipb) in enumerate(_pkts())]
    df = assert_same(_raw_pcap(tmp_path / "e.pcap", recs, big=big, nano=nano))
    assert abs(df["ts"].iloc[0] - 1_700_000_000.123456) < 1e-6
    assert df["tsval"].tolist()[:3] == [1, 2, 9]


def test_zero_packets(tmp_path):
    p = _raw_pcap(tmp_path / "z.pcap", [])
    df = assert_same(p)
    assert len(df) == 0 and list(df.columns) == list(COLUMNS)


def test_no_ip_packets_at_all(tmp_path):
    arp = b"\xff" * 12 + b"\x08\x06" + bytes(28)
    df = assert_same(_raw_pcap(tmp_path / "a.pcap", [(1.0, arp, None)] * 3))
    assert len(df) == 0


def test_pcapng_goes_to_dpkt(tmp_path):
    p = write_pcap(tmp_path / "x.pcapng", _pkts(), fmt="pcapng")
    pd.testing.assert_frame_equal(read_pcap(p), read_dpkt(p), check_exact=True)
    with pytest.raises(CaptureError) as ei:
        read_pcap(p, engine="fast")
    assert "\n" not in str(ei.value)
    gz = tmp_path / "x.pcapng.gz"
    gz.write_bytes(gzip.compress(p.read_bytes()))
    pd.testing.assert_frame_equal(read_pcap(gz), read_dpkt(p), check_exact=True)


# ------------------------------------------------------------------------------------------ TCP options

OPTION_CASES = {
    "eol_then_mss": b"\x01\x00\x02\x04\x05\xb4\x01\x01",          # kind 0 ends the list: MSS ignored
    "eol_first": b"\x00\x08\x0a" + bytes(9),
    "mss_then_eol": b"\x02\x04\x05\xb4\x00\x00\x00\x00",
    "len1": b"\x03\x01\x02\x04\x05\xb4\x01\x01",                  # length < 2 stops
    "len0": b"\x08\x00\x02\x04\x05\xb4\x01\x01",
    "past_end": b"\x02\x04\x05\xb4\x08\x0a\x00\x00",              # TS runs past the header: stops, MSS kept
    "kind_at_last_byte": b"\x01\x01\x01\x02",                       # no room for a length byte
    "wrong_len_known": b"\x02\x05\x05\xb4\x00" + b"\x03\x04\x07\x00" + b"\x08\x08" + bytes(6) + b"\x05\x0b"
                       + bytes(9) + b"\x01\x01\x01\x01",
    "wscale_200": b"\x03\x03\xc8\x01",
    "unknown_kinds": b"\x1e\x06\x00\x00\x00\x00" + b"\xfe\x04\xab\xcd" + b"\x02\x04\x01\x00" + b"\x01\x01",
    "two_sack_opts": b"\x05\x0a" + struct.pack("!II", 1, 2) + b"\x05\x0a" + struct.pack("!II", 3, 4)
                     + b"\x05\x0a" + struct.pack("!II", 5, 6) + b"\x05\x0a" + struct.pack("!II", 7, 8),
    "sack_zero_blocks": b"\x05\x02\x01\x01",
    "ts_twice_last_wins": b"\x08\x0a" + struct.pack("!II", 1, 2) + b"\x08\x0a" + struct.pack("!II", 3, 4),
    "all_nop": b"\x01" * 40,
    "sack_4_blocks": b"\x01\x01\x05\x22" + b"".join(struct.pack("!II", i, i + 1) for i in range(4)) + b"\x01\x01\x01\x01",
    "linux_ts_then_sack": b"\x01\x01\x08\x0a" + struct.pack("!II", 77, 88) + b"\x01\x01\x05\x0a"
                          + struct.pack("!II", 100, 200),
    "linux_prefix_bad_len": b"\x01\x01\x08\x0b" + bytes(8),       # looks like NOP NOP TS but length 11
}


@pytest.mark.parametrize("name", list(OPTION_CASES))
def test_tcp_option_edge_cases(tmp_path, name):
    opts = OPTION_CASES[name]
    assert len(opts) % 4 == 0 and len(opts) <= 40
    p = _raw_pcap(tmp_path / "o.pcap", [(1.0, frame(_tcp_raw(opts), "eth"), None)])
    df = assert_same(p)
    assert len(df) == 1
    r = df.iloc[0]
    expect = {
        "eol_then_mss": dict(mss=-1), "eol_first": dict(tsval=-1), "mss_then_eol": dict(mss=1460),
        "len1": dict(mss=-1, wscale=-1), "len0": dict(mss=-1), "past_end": dict(mss=1460, tsval=-1),
        "kind_at_last_byte": dict(mss=-1), "wrong_len_known": dict(mss=-1, wscale=-1, tsval=-1, sack_blocks=0),
        "wscale_200": dict(wscale=-56), "unknown_kinds": dict(mss=256),
        "two_sack_opts": dict(sack_blocks=4, sack4_right=8), "sack_zero_blocks": dict(sack_blocks=0),
        "ts_twice_last_wins": dict(tsval=3, tsecr=4), "all_nop": dict(mss=-1, tsval=-1),
        "sack_4_blocks": dict(sack_blocks=4, sack1_left=0, sack4_right=4),
        "linux_ts_then_sack": dict(tsval=77, tsecr=88, sack_blocks=1, sack1_right=200),
        "linux_prefix_bad_len": dict(tsval=-1),
    }[name]
    for k, v in expect.items():
        assert r[k] == v, (name, k, r[k], v)


@pytest.mark.parametrize("hlen_words", [0, 1, 4, 5, 6, 15])
def test_tcp_data_offset_odd_values(tmp_path, hlen_words):
    """Data offset below 5 (no options, payload from ip length) or beyond the captured bytes."""
    ipb = _tcp_raw(b"\x02\x04\x05\xb4", hlen=hlen_words * 4, payload=3)
    df = assert_same(_raw_pcap(tmp_path / "h.pcap", [(1.0, frame(ipb, "eth"), None)]))
    assert df["tcp_hlen"].tolist() == [hlen_words * 4]


@pytest.mark.parametrize("snap", list(range(34, 34 + 20 + 40 + 2, 3)) + [14, 15, 20, 33])
def test_snaplen_cuts_everywhere(tmp_path, snap):
    """Cuts inside the Ethernet/IP/TCP headers and inside the options (SYN with MSS/WS/SACKP/TS + SACK)."""
    full = [frame(ipb, "eth") for _, ipb in _pkts()]
    full.append(frame(_tcp_raw(OPTION_CASES["linux_ts_then_sack"]), "eth"))
    recs = [(1.0 + i, f[:snap], len(f)) for i, f in enumerate(full)]
    assert_same(_raw_pcap(tmp_path / "s.pcap", recs, snaplen=snap))


# ------------------------------------------------------------------------------------------ IP layer

def test_ipv4_options_fragments_and_odd_headers(tmp_path):
    l4 = _tcp_l4(b"\x08\x0a" + struct.pack("!II", 5, 6) + b"\x01\x01")
    recs = [
        _ipv4(l4, 6, ip_opts=b"\x01\x01\x01\x00"),              # IP options (ihl 6)
        _ipv4(l4, 6, ip_opts=bytes(40)),                          # ihl 15
        _ipv4(l4, 6, frag=0x2000),                                # first fragment (MF): kept
        _ipv4(l4, 6, frag=0x2000 | 100),                          # non-first fragment: dropped
        _ipv4(l4, 6, frag=0x4000),                                # DF: kept
        _ipv4(l4, 6, ihl=3),                                      # ihl < 5
        _ipv4(l4, 6, ihl=0),
        _ipv4(l4, 6, ip_len=10),                                  # ip length shorter than the headers
        _ipv4(l4, 1),                                             # ICMP: dropped
        _ipv4(l4, 17),                                            # reads the TCP bytes as UDP
        _ipv4(b"\x00" * 3, 17),                                   # UDP header cut
        _ipv4(l4, 6, src="255.255.255.255", dst="0.0.0.0"),
    ]
    df = assert_same(_raw_pcap(tmp_path / "i.pcap", [(1.0, frame(x, "eth"), None) for x in recs]))
    assert 4 not in df["pkt_no"].tolist() and 9 not in df["pkt_no"].tolist() and 3 in df["pkt_no"].tolist()


def test_ipv6_extension_headers(tmp_path):
    l4 = _tcp_l4(b"\x01\x01\x08\x0a" + struct.pack("!II", 11, 12))
    hbh = struct.pack("!BB", 60, 0) + bytes(6)            # hop-by-hop -> destination options
    dst = struct.pack("!BB", 6, 1) + bytes(14)            # destination options (16 bytes) -> TCP
    ah = struct.pack("!BB", 6, 4) + bytes(22)             # AH: (4+2)*4 = 24 bytes -> TCP
    frag0 = struct.pack("!BBHI", 6, 0, 0x0001, 99)        # fragment offset 0 (M set) -> TCP
    fragn = struct.pack("!BBHI", 6, 0, 0x0008, 99)        # offset 1: dropped
    rt = struct.pack("!BB", 17, 0) + bytes(6)             # routing -> UDP
    udp_l4 = struct.pack("!HHHH", 7, 8, 12, 0) + bytes(4)
    recs = [
        _ipv6(l4, 0, ext=hbh + dst), _ipv6(l4, 51, ext=ah), _ipv6(l4, 44, ext=frag0), _ipv6(l4, 44, ext=fragn),
        _ipv6(udp_l4, 43, ext=rt), _ipv6(l4, 0, ext=hbh[:1] + b"\x07" + hbh[2:] + bytes(8)),  # bogus ext length
        _ipv6(b"", 0, ext=b"\x3b\x00"),  # chain cut before 8 bytes
        _ipv6(l4, 58),                   # ICMPv6 number: dropped
        _ipv6(l4, 6, plen=4),            # payload length below the TCP header
        _ipv6(l4, 6, src="::", dst="2001:db8::ff00:42:8329"),
    ]
    frames = [frame(x, "eth") for x in recs]
    df = assert_same(_raw_pcap(tmp_path / "v6.pcap", [(1.0, f, None) for f in frames]))
    assert df["pkt_no"].tolist()[:3] == [1, 2, 3] and 4 not in df["pkt_no"].tolist()
    assert df["tsval"].tolist()[:3] == [11, 11, 11]
    assert df["dst"].tolist()[-1] == "2001:db8::ff00:42:8329"


def test_ipv6_addresses_whose_halves_recur_in_other_pairs(tmp_path):
    # the fast path factorizes the two 8-byte halves of an IPv6 address separately, then the pair: addresses that
    # share a high half (or a low half) with another, in every combination, must still come out distinct and right
    highs, lows = ["fd00:0:0:1", "fd00:0:0:2", "2001:db8:0:0"], ["0:0:0:1", "0:0:0:2", "dead:beef:0:0"]
    addrs = [f"{h}:{lo}" for h in highs for lo in lows] + ["::", "::1", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"]
    l4 = _tcp_l4(b"")
    recs = []
    for i, a in enumerate(addrs):
        for b in (addrs[(i * 5 + 1) % len(addrs)], addrs[(i * 7 + 3) % len(addrs)]):
            recs.append(_ipv6(l4, 6, src=a, dst=b))
    recs += [_pkts()[2][1]]                                  # one IPv4 packet among them
    df = assert_same(_raw_pcap(tmp_path / "halves.pcap", [(1.0 + i, frame(x, "eth"), None)
                                                           for i, x in enumerate(recs)]))
    want = [str(ipaddress.IPv6Address(a)) for a in addrs]
    assert sorted(set(df["src"]) - {df["src"].iloc[-1]}) == sorted(want)


def test_vlan_and_ethertypes(tmp_path):
    ipb = _pkts()[2][1]
    eth = b"\x02" * 12
    recs = [
        eth + b"\x81\x00\x00\x05\x08\x00" + ipb,                              # 802.1Q
        eth + b"\x88\xa8\x00\x05\x81\x00\x00\x06\x08\x00" + ipb,              # QinQ
        eth + b"\x91\x00\x00\x05\x86\xdd" + _pkts(A6, B6)[2][1],             # old QinQ tag, IPv6
        eth + b"\x81\x00\x00",                                                 # tag cut
        eth + b"\x08\x00" + _pkts(A6, B6)[2][1],                              # IPv4 type, IPv6 inside
        eth + b"\x86\xdd" + ipb,                                               # IPv6 type, IPv4 inside
        eth + b"\x88\x47" + ipb,                                               # MPLS: not decoded
        eth[:13],                                                              # runt
    ]
    df = assert_same(_raw_pcap(tmp_path / "v.pcap", [(1.0, r, None) for r in recs]))
    assert df["pkt_no"].tolist() == [1, 2, 3, 5, 6]


# ------------------------------------------------------------------------------------------ damaged files

def test_truncated_and_corrupt_records(tmp_path):
    good = write_pcap(tmp_path / "g.pcap", _pkts()).read_bytes()
    for name, data in {"cut_data": good[:-10], "cut_header": good + b"\x01\x02\x03",
                       "corrupt_len": good + struct.pack("<IIII", 1, 0, 0x5000000, 0x5000000) + bytes(32),
                       "header_only": good[:24], "big_incl_ok": good}.items():
        p = tmp_path / f"{name}.pcap"
        p.write_bytes(data)
        ref = assert_same(p)
        assert len(ref) == {"cut_data": 5, "header_only": 0}.get(name, 6)


@pytest.mark.parametrize("content", [b"", b"\xd4\xc3\xb2\xa1\x02\x00", b"not a capture at all, really"])
def test_bad_files_same_error(tmp_path, content):
    p = tmp_path / "bad.pcap"
    p.write_bytes(content)
    for engine in ("auto", "dpkt", "fast"):
        with pytest.raises(CaptureError) as ei:
            read_pcap(p, engine=engine)
        assert "\n" not in str(ei.value)


def test_unsupported_linktype_goes_to_dpkt_error(tmp_path):
    p = _raw_pcap(tmp_path / "lt.pcap", [(1.0, b"abc", None)], linktype=147)
    for engine in ("auto", "fast"):
        with pytest.raises(CaptureError):
            read_pcap(p, engine=engine)


def test_real_capture_xz_identical(tmp_path):
    import lzma
    xz = tmp_path / "r.pcap.xz"
    xz.write_bytes(lzma.compress(REAL[2].read_bytes(), format=lzma.FORMAT_XZ))
    pd.testing.assert_frame_equal(assert_same(xz), read_dpkt(REAL[2]), check_exact=True)
    pd.testing.assert_frame_equal(read_pcap(xz), read_pcap(REAL[2]), check_exact=True)


def test_xz_cut_off_keeps_what_is_recoverable(tmp_path):
    import lzma
    xz = tmp_path / "c.pcap.xz"
    xz.write_bytes(lzma.compress(REAL[0].read_bytes(), format=lzma.FORMAT_XZ)[:-1000])
    with pytest.warns(UserWarning):
        df = read_pcap(xz, engine="dpkt")
    assert 0 < len(df) < len(read_pcap(REAL[0]))


def test_gzip_cut_off(tmp_path):
    gz = tmp_path / "g.pcap.gz"
    gz.write_bytes(gzip.compress(REAL[0].read_bytes())[:-1000])
    ref = assert_same(gz)
    assert 1000 < len(ref) < len(read_dpkt(REAL[0]))


def test_engine_argument():
    with pytest.raises(ValueError):
        read_pcap(REAL[0], engine="tshark")
    for engine in ("auto", "fast", "dpkt"):
        assert len(read_pcap(REAL[0], engine=engine, cache=False)) > 1000


# ------------------------------------------------------------------------------------------ cache

def test_cache_roundtrip_and_key(tmp_path, monkeypatch):
    cdir = tmp_path / "cache"
    src = tmp_path / "a.pcap"
    src.write_bytes(REAL[1].read_bytes())
    ref = read_dpkt(src)
    df1 = read_pcap(src, cache=cdir)
    entries = list(cdir.glob("*.parquet"))
    assert len(entries) == 1 and entries[0].name.startswith(pcache.content_sha256(src.read_bytes()))
    pd.testing.assert_frame_equal(df1, ref, check_exact=True)

    # a hit never decodes, and gives the identical table (dtypes included)
    def boom(*a, **k):
        raise AssertionError("decoded although cached")
    monkeypatch.setattr("analysis.ingest._decode", boom)
    pd.testing.assert_frame_equal(read_pcap(src, cache=cdir), ref, check_exact=True)
    # same content under another name, gzip'd: same entry (content key, hash of the uncompressed bytes)
    gz = tmp_path / "copy.pcap.gz"
    gz.write_bytes(gzip.compress(src.read_bytes()))
    pd.testing.assert_frame_equal(read_pcap(gz, cache=cdir), ref, check_exact=True)
    assert len(list(cdir.glob("*.parquet"))) == 1
    monkeypatch.undo()
    # changed content: new entry, new table
    src.write_bytes(REAL[0].read_bytes())
    pd.testing.assert_frame_equal(read_pcap(src, cache=cdir), read_dpkt(REAL[0]), check_exact=True)
    assert len(list(cdir.glob("*.parquet"))) == 2


def test_cache_keeps_warnings(tmp_path):
    cdir = tmp_path / "c"
    p = tmp_path / "cut.pcap"
    p.write_bytes(write_pcap(tmp_path / "g.pcap", _pkts()).read_bytes()[:-10])
    for _ in range(2):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            df = read_pcap(p, cache=cdir)
        assert len(df) == 5 and any("truncated" in str(x.message) for x in w)


def test_cache_default_is_opt_in(tmp_path, monkeypatch):
    monkeypatch.delenv("MPCC_CACHE_DIR", raising=False)
    monkeypatch.setattr(pcache, "default_cache_dir", lambda: tmp_path / "nope")
    big = tmp_path / "big.pcap"
    big.write_bytes(_big_capture())
    read_pcap(big)
    assert not (tmp_path / "nope").exists()          # default: no cache unless opted in
    monkeypatch.setenv("MPCC_CACHE_DIR", str(tmp_path / "env"))
    monkeypatch.setattr(pcache, "default_cache_dir", lambda: tmp_path / "env")
    read_pcap(big)
    assert len(list((tmp_path / "env").glob("*.parquet"))) == 1
    read_pcap(REAL[0])                               # < 1 MB: not cached automatically
    assert len(list((tmp_path / "env").glob("*.parquet"))) == 1
    read_pcap(REAL[0], cache=True)
    assert len(list((tmp_path / "env").glob("*.parquet"))) == 2


def _big_capture() -> bytes:
    """>= 1 MB classic pcap: a real capture's records repeated."""
    raw = REAL[0].read_bytes()
    return raw + raw[24:] * (1_000_000 // len(raw) + 1)


# ------------------------------------------------------------------------------------------ mpcc ingest

def _mpcc(*args, env=None):
    import os
    e = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, "-m", "mpcc.cli", "ingest", *map(str, args)], capture_output=True,
                          text=True, env=e, cwd=Path(__file__).parents[1])


def test_cli_ingest_campaign_dir(tmp_path):
    camp = tmp_path / "camp"
    for i, src in enumerate(REAL):
        d = camp / "runs" / f"r{i}"
        d.mkdir(parents=True)
        (d / "router1.pcap").write_bytes(src.read_bytes())
    (camp / "runs" / "r0" / "receiver.pcap.gz").write_bytes(gzip.compress(REAL[1].read_bytes()))
    cdir = tmp_path / "cache"
    r = _mpcc(camp, "--jobs", "2", "--cache-dir", cdir, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["captures"] == 4 and out["failed"] == 0
    assert out["packets"] == sum(len(read_dpkt(p)) for p in REAL) + len(read_dpkt(REAL[1]))
    assert len(list(cdir.glob("*.parquet"))) == 3    # the .gz holds the same content as REAL[1]
    r2 = _mpcc(camp, "--jobs", "1", "--cache-dir", cdir, "--json")
    assert r2.returncode == 0 and json.loads(r2.stdout)["packets"] == out["packets"]


def test_cli_ingest_bad_input_one_line(tmp_path):
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"garbage")
    for args in ([tmp_path / "missing"], [bad], [REAL[0], "--engine", "nope"], [tmp_path / "empty_dir"]):
        (tmp_path / "empty_dir").mkdir(exist_ok=True)
        r = _mpcc(*args, "--cache-dir", tmp_path / "c")
        assert r.returncode != 0
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_cli_scheduler_without_dask(tmp_path):
    # the pinned environment has dask (requirements.lock): the command runs with its import made to fail
    no_dask = ("import sys; sys.modules.update(dict.fromkeys(['dask', 'dask.distributed', 'distributed'])); "
               "from mpcc.cli import main; sys.exit(main(sys.argv[1:]))")
    r = subprocess.run([sys.executable, "-c", no_dask, "ingest", str(REAL[0]), "--scheduler", "tcp://127.0.0.1:1",
                        "--cache-dir", str(tmp_path / "c")], capture_output=True, text=True,
                       cwd=Path(__file__).parents[1])
    assert r.returncode != 0 and "dask" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_dask_scheduler_same_cache_as_process_pool(tmp_path):
    pytest.importorskip("distributed")
    from dask.distributed import LocalCluster

    from analysis.ingest.parallel import ingest_many
    caps = REAL + [tmp_path / "x.pcapng"]
    write_pcap(caps[-1], _pkts(), fmt="pcapng")
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as lc:
        r1 = ingest_many(caps, scheduler=lc.scheduler_address, cache_dir=tmp_path / "d", progress=False)
    r2 = ingest_many(caps, jobs=2, cache_dir=tmp_path / "p", progress=False)
    assert [r["packets"] for r in r1] == [r["packets"] for r in r2] == [len(read_dpkt(p)) for p in caps]
    names = sorted(p.name for p in (tmp_path / "d").glob("*.parquet"))
    assert names == sorted(p.name for p in (tmp_path / "p").glob("*.parquet")) and len(names) == 4


def _random_records(rng, n, maxlen, *, big=False, nano=False, snap=65535, zero_orig=False, tail=b""):
    e = ">" if big else "<"
    out = [struct.pack(e + "IHHiIII", 0xA1B23C4D if nano else 0xA1B2C3D4, 2, 4, 0, 0, snap, 1)]
    for i in range(n):
        ln = rng.choice([rng.randrange(maxlen), 54, 66, 128, rng.randrange(16)])
        orig = 0 if zero_orig else ln + rng.randrange(3)
        body = bytes(rng.randrange(256) for _ in range(min(ln, 4))) + bytes(max(ln - 4, 0))
        out.append(struct.pack(e + "IIII", 1_700_000_000 + i // 100, rng.randrange(10**6), ln, orig) + body)
    return b"".join(out) + tail


@pytest.mark.parametrize("chunk", [1024, 8192])
@pytest.mark.parametrize("trial", range(8))
def test_numpy_record_walk_equals_sequential(trial, chunk, monkeypatch):
    """The chunked lock-step walk (pure numpy) finds exactly the records of the sequential walk, with the same
    end status, on files of random record lengths (some longer than a chunk), odd headers, and damaged ends /
    middles (small chunks here, so that these files span many)."""
    monkeypatch.setattr(fast_reader, "_CHUNK", chunk)
    rng = random.Random(trial)
    big = trial % 2 == 1
    e = ">" if big else "<"
    tail = [b"", b"\x01\x02\x03", struct.pack(e + "IIII", 1, 0, 500, 500) + bytes(100),
            struct.pack(e + "IIII", 1, 0, 0x5000000, 0)][trial % 4]
    data = _random_records(rng, 2500, rng.choice([900, 3000]), big=big, nano=trial % 3 == 0,
                           snap=[128, 65535, 262144, 0][trial % 4], zero_orig=trial == 5, tail=tail)
    if trial in (3, 6):  # a damaged header in the middle
        d = bytearray(data)
        p = rng.randrange(len(d) // 3, len(d))
        d[p:p + 4] = b"\xff\xff\xff\x7f"
        data = bytes(d)
    assert len(data) > 16 * chunk + 24
    buf = np.frombuffer(data + bytes(fast_reader._PAD), np.uint8)
    a = fast_reader._walk_py(buf, len(data), big)
    b = fast_reader._walk_np(buf, len(data), big)
    assert a[1:] == b[1:]
    assert np.array_equal(a[0], b[0])
