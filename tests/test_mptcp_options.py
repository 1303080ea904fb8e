"""MPTCP subflow discovery (analysis/ingest/mptcp_options.py): hand-built handshakes with known keys and tokens
(RFC 8684 sect. 3.1-3.2, RFC 6824 for v0), and a real capture checked against tshark's mptcp.stream."""
from __future__ import annotations

import hashlib
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from analysis.ingest.mptcp_options import key_token, mptcp_options, read_handshake_options, subflows
from tests.pcapgen import tcp, write_pcap

REAL = Path(__file__).resolve().parent / "data" / "real" / "mptcp" / "mptcp-2subflows-head.pcap"

C1, C2, S = "10.30.1.2", "10.30.2.2", "10.33.0.1"
KEY_C, KEY_S = 0x0123456789ABCDEF, 0xFEDCBA9876543210


def mp_capable(version=1, sender=None, receiver=None) -> bytes:
    body = bytes([(0 << 4) | version, 0x81])                  # subtype 0 | version; flags A (checksum) + H
    if sender is not None:
        body += struct.pack("!Q", sender)
    if receiver is not None:
        body += struct.pack("!Q", receiver)
    return bytes([30, 2 + len(body)]) + body


def mp_join_syn(token: int, addr_id=1, backup=False, nonce=0x11223344) -> bytes:
    return bytes([30, 12, (1 << 4) | int(backup), addr_id]) + struct.pack("!II", token, nonce)


def test_token_is_the_top_32_bits_of_sha256_of_the_key():
    digest = hashlib.sha256(struct.pack("!Q", KEY_S)).digest()
    assert key_token(KEY_S) == int.from_bytes(digest[:4], "big")
    assert key_token(KEY_S, version=0) == int.from_bytes(hashlib.sha1(struct.pack("!Q", KEY_S)).digest()[:4], "big")


def test_option_parser_stops_at_end_of_options_and_reads_join_fields():
    opts = b"\x01\x01" + mp_join_syn(0xDEADBEEF, addr_id=7, backup=True) + b"\x00" + mp_capable(1, KEY_C)
    [o] = mptcp_options(opts)                                  # the MP_CAPABLE after End of Option List is ignored
    assert (o["subtype"], o["token"], o["addr_id"], o["backup"]) == (1, 0xDEADBEEF, 7, True)
    assert mptcp_options(bytes([30, 12, 0x01])) == []          # option running past the bytes: stop


def _handshake(t, cport, version, join_token, unmatched=False):
    """A v1 (or v0) MPTCP connection C1:cport -> S:5201 and one MP_JOIN subflow from C2."""
    syn_key = KEY_C if version == 0 else None
    pk = [
        tcp(C1, cport, S, 5201, flags="S", t=t, raw=mp_capable(version, syn_key)),
        tcp(S, 5201, C1, cport, flags="SA", t=t + 0.01, raw=mp_capable(version, KEY_S)),
        tcp(C1, cport, S, 5201, flags="A", t=t + 0.02, raw=mp_capable(version, KEY_C, KEY_S)),
        tcp(C2, cport + 1, S, 5201, flags="S", t=t + 0.03, raw=mp_join_syn(join_token, addr_id=2)),
        tcp(S, 5201, C2, cport + 1, flags="SA", t=t + 0.04),
    ]
    if unmatched:
        pk.append(tcp(C2, cport + 2, S, 5201, flags="S", t=t + 0.05, raw=mp_join_syn(0x0BADF00D)))
    return pk


@pytest.mark.parametrize("version", [1, 0])
def test_joins_are_matched_to_their_connection_by_the_servers_token(tmp_path, version):
    pcap = write_pcap(tmp_path / "mp.pcap",
                      _handshake(0.0, 40000, version, key_token(KEY_S, version), unmatched=True), snaplen=128)
    sf = subflows(read_handshake_options(pcap))
    assert list(sf["kind"]) == ["initial", "join", "join (unmatched)"]
    init, join, orphan = sf.itertuples(index=False)
    assert (init.conn, init.subflow, init.client, init.client_port, init.server) == (0, 0, C1, 40000, S)
    assert (join.conn, join.subflow, join.client, join.client_port, join.addr_id) == (0, 1, C2, 40001, 2)
    assert join.server_token == key_token(KEY_S, version) and join.client_token == key_token(KEY_C, version)
    assert orphan.conn == -1


def test_two_connections_keep_their_own_subflows(tmp_path):
    other_key = 0x1111222233334444
    pk = _handshake(0.0, 40000, 1, key_token(KEY_S))
    second = _handshake(1.0, 41000, 1, key_token(other_key))
    second[1] = tcp(S, 5201, C1, 41000, flags="SA", t=1.01, raw=mp_capable(1, other_key))
    second[2] = tcp(C1, 41000, S, 5201, flags="A", t=1.02, raw=mp_capable(1, KEY_C, other_key))
    sf = subflows(read_handshake_options(write_pcap(tmp_path / "two.pcap", pk + second)))
    got = {(r.conn, r.subflow): r.client_port for r in sf.itertuples(index=False)}
    assert got == {(0, 0): 40000, (0, 1): 40001, (1, 0): 41000, (1, 1): 41001}


def test_plain_tcp_has_no_subflows(tmp_path):
    pcap = write_pcap(tmp_path / "tcp.pcap", [tcp(C1, 1, S, 2, flags="S"), tcp(S, 2, C1, 1, flags="SA")])
    assert subflows(read_handshake_options(pcap)).empty


@pytest.mark.tshark
@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
def test_real_capture_matches_tshark_mptcp_stream():
    """A real capture (Linux 6.18 MPTCP, mptcpize iperf3 over two veth paths; both of iperf3's connections are
    MPTCP, each with one MP_JOIN subflow): our connection of every subflow = tshark's mptcp.stream."""
    # tshark assigns mptcp.stream from the SYN/ACK on (the initial SYN carries no key in v1): the client is its dst
    out = subprocess.run(["tshark", "-r", str(REAL), "-Y", "tcp.flags.syn==1 && tcp.flags.ack==1",
                          "-T", "fields", "-e", "ip.dst", "-e", "tcp.dstport", "-e", "mptcp.stream"],
                         capture_output=True, text=True, check=True).stdout
    theirs = {(s, int(p)): int(m) for s, p, m in (line.split("\t") for line in out.splitlines())}
    sf = subflows(read_handshake_options(REAL))
    ours = {(r.client, r.client_port): r.conn for r in sf.itertuples(index=False)}
    assert len(ours) == 4 and set(sf["kind"]) == {"initial", "join"}
    # same partition of subflows into connections (the numbering may differ)
    assert {frozenset(k for k in ours if ours[k] == c) for c in set(ours.values())} == \
           {frozenset(k for k in theirs if theirs[k] == c) for c in set(theirs.values())}
