"""Ingest: hand-built pcaps (tests/pcapgen.py) with fields known by construction."""
import struct
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from pcapgen import tcp, udp, write_pcap  # noqa: E402

from analysis.errors import CaptureError, CaptureWarning
from analysis.ingest import parse_tcp_options, read_pcap
from analysis.ingest.schema import COLUMNS

A, B = "10.0.0.1", "10.0.0.2"
A6, B6 = "fd00::1", "fd00::2"


def _pkts(a=A, b=B):
    return [
        tcp(a, 40000, b, 5201, seq=100, ack=0, flags="S", t=0.0, mss=1460, wscale=7, sack_permitted=True, ts_opt=(1, 0)),
        tcp(a, 40000, b, 5201, seq=101, ack=7, flags="PA", payload=1000, t=0.010, ts_opt=(2, 9)),
        tcp(b, 5201, a, 40000, seq=7, ack=101, flags="A", t=0.020, ts_opt=(9, 2),
            sack=[(1101, 2101), (3101, 4101), (5101, 6101)]),
        udp(a, 4000, b, 5000, payload=300, t=0.030),
    ]


@pytest.mark.parametrize("link", ["eth", "sll", "sll2", "raw"])
@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
@pytest.mark.parametrize("v6", [False, True])
def test_fields_all_links(tmp_path, link, fmt, v6):
    p = write_pcap(tmp_path / "x.pcap", _pkts(A6, B6) if v6 else _pkts(), link=link, fmt=fmt, snaplen=128)
    df = read_pcap(p)
    assert list(df.columns) == list(COLUMNS)
    assert [str(t) for t in df.dtypes] == [str(__import__("numpy").dtype(t)) for t in COLUMNS.values()]
    assert df["pkt_no"].tolist() == [1, 2, 3, 4]
    assert df["ip_version"].tolist() == [6 if v6 else 4] * 4
    assert df["proto"].tolist() == [6, 6, 6, 17]
    assert df["payload_len"].tolist() == [0, 1000, 0, 300]
    assert df["mss"].tolist() == [1460, -1, -1, -1]
    assert df["wscale"].tolist() == [7, -1, -1, -1]
    assert df["sack_permitted"].tolist() == [True, False, False, False]
    assert df["tsval"].tolist() == [1, 2, 9, -1]
    assert df["tsecr"].tolist() == [0, 9, 2, -1]
    assert df["sack_blocks"].tolist() == [0, 0, 3, 0]
    assert df.loc[2, ["sack1_left", "sack1_right", "sack3_right", "sack4_left"]].tolist() == [1101, 2101, 6101, -1]
    assert df["flags"].tolist() == [0x02, 0x18, 0x10, 0]
    assert df["seq"].tolist() == [100, 101, 7, -1]
    assert (df["cap_len"] <= 128).all()
    assert abs(df["ts"].iloc[1] - df["ts"].iloc[0] - 0.010) < 1e-6
    if v6:
        assert df["src"].iloc[0] == A6 and (df["ip_id"] == -1).all()
        assert df["ip_len"].tolist()[1] == 40 + 20 + 12 + 1000
    else:
        assert df["ip_len"].tolist()[1] == 20 + 20 + 12 + 1000


def test_snaplen_keeps_lengths(tmp_path):
    p = write_pcap(tmp_path / "s.pcap", _pkts(), snaplen=128)
    df = read_pcap(p)
    assert df["cap_len"].iloc[1] == 128 and df["payload_len"].iloc[1] == 1000


def test_tcp_options_rfc9293():
    # EOL stops parsing: the MSS after kind 0 is ignored
    assert parse_tcp_options(b"\x01\x00\x02\x04\x05\xb4")[0] == -1
    assert parse_tcp_options(b"\x01\x01\x02\x04\x05\xb4")[0] == 1460
    # malformed length (1) stops; length running past the end stops
    assert parse_tcp_options(b"\x03\x01\x02\x04\x05\xb4")[0] == -1
    assert parse_tcp_options(b"\x02\x04\x05\xb4\x08\x0a\x00\x00")[3] == -1
    assert parse_tcp_options(b"\x02\x04\x05\xb4\x08\x0a\x00\x00")[0] == 1460


def test_packets_other_than_ip_are_counted_not_kept(tmp_path):
    p = tmp_path / "arp.pcap"
    import dpkt
    with open(p, "wb") as f:
        w = dpkt.pcap.Writer(f)
        w.writepkt(b"\xff" * 12 + b"\x08\x06" + b"\x00" * 28, 1.0)
        from pcapgen import frame
        w.writepkt(frame(_pkts()[1][1], "eth"), 2.0)
    df = read_pcap(p)
    assert df["pkt_no"].tolist() == [2]


@pytest.mark.parametrize("content", [b"", b"hello world, not a capture at all", b"\xd4\xc3\xb2\xa1\x02\x00"])
def test_bad_input(tmp_path, content):
    p = tmp_path / "bad.pcap"
    p.write_bytes(content)
    with pytest.raises(CaptureError) as ei:
        read_pcap(p)
    assert "\n" not in str(ei.value)


@pytest.mark.parametrize("engine", ["fast", "dpkt"])
def test_truncated_last_record(tmp_path, caplog, engine):
    p = write_pcap(tmp_path / "t.pcap", _pkts())
    data = p.read_bytes()
    (tmp_path / "cut.pcap").write_bytes(data[:-10])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        df = read_pcap(tmp_path / "cut.pcap", engine=engine)
    assert len(df) == 3
    # reported once: one CaptureWarning, no log record besides (that printed the message a second time)
    assert [x.category for x in w] == [CaptureWarning] and "truncated" in str(w[0].message)
    assert not caplog.records


def test_cli_truncated_capture_one_warning_line(tmp_path):
    (tmp_path / "cut.pcap").write_bytes(write_pcap(tmp_path / "t.pcap", _pkts()).read_bytes()[:-10])
    r = subprocess.run([sys.executable, "-m", "mpcc.cli", "analyze", str(tmp_path / "cut.pcap")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"mpcc: warning: {tmp_path / 'cut.pcap'}: truncated last record"), lines


@pytest.mark.parametrize("content", [b"", b"not a pcap", b"\xd4\xc3\xb2\xa1"])
def test_cli_bad_input_one_line(tmp_path, content):
    p = tmp_path / "bad.pcap"
    p.write_bytes(content)
    r = subprocess.run([sys.executable, "-m", "mpcc.cli", "analyze", str(p)], capture_output=True, text=True)
    assert r.returncode != 0
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_truncated_last_block_pcapng(tmp_path):
    data = write_pcap(tmp_path / "t.pcapng", _pkts(), fmt="pcapng").read_bytes()
    (tmp_path / "cut.pcapng").write_bytes(data[:-10])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        df = read_pcap(tmp_path / "cut.pcapng")
    assert len(df) == 3 and w


def test_unsupported_linktype(tmp_path):
    p = tmp_path / "lt.pcap"
    p.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 147))
    with pytest.raises(CaptureError):
        read_pcap(p)
