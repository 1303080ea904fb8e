"""Reference decoder: pcap / pcapng file -> per-packet table (``analysis.ingest.schema``).

Records are read with dpkt (``dpkt.pcap.Reader`` framing is re-implemented here for classic pcap so that a
truncated last record can be skipped with a warning; ``dpkt.pcapng.Reader`` for pcapng).  Headers are parsed
from the raw bytes so that snaplen-truncated records (``tcpdump -s 128``) still yield every header field;
lengths come from the IP header, never from the captured length.

TCP options are parsed per RFC 9293 section 3.1: kind 0 (End of Option List) stops parsing, kind 1 (NOP) is
one byte, every other option is kind/length/data; a length < 2 or running past the header stops parsing.
"""
from __future__ import annotations

import contextlib
import ipaddress
import os
import struct
import sys
import warnings

import dpkt
import pandas as pd
from tqdm import tqdm

from analysis.errors import CaptureError, CaptureWarning
from analysis.ingest.schema import COLUMNS, COLUMN_NAMES, MAX_SACK_BLOCKS, TCP, UDP


# link types (tcpdump.org/linktypes.html)
LINKTYPE_NULL = 0
LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101
LINKTYPE_LINUX_SLL = 113
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
LINKTYPE_LINUX_SLL2 = 276
_RAW_DLTS = {12, 14, LINKTYPE_RAW, LINKTYPE_IPV4, LINKTYPE_IPV6}
_SUPPORTED = {LINKTYPE_NULL, LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2} | _RAW_DLTS

_PCAP_MAGICS = {
    b"\xd4\xc3\xb2\xa1": ("<", 1e-6), b"\xa1\xb2\xc3\xd4": (">", 1e-6),
    b"\x4d\x3c\xb2\xa1": ("<", 1e-9), b"\xa1\xb2\x3c\x4d": (">", 1e-9),
}
_PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
_IPV6_EXT = {0, 43, 60, 51}  # hop-by-hop, routing, destination options, AH (fragment 44 handled apart)


def _l3_offset(linktype: int, buf: bytes):
    """Return (offset of the IP header, ip version hint) or None if the frame is not IPv4/IPv6."""
    if linktype == LINKTYPE_ETHERNET:
        off, etype = 12, None
        if len(buf) < 14:
            return None
        etype = struct.unpack_from("!H", buf, 12)[0]
        off = 14
        while etype in (0x8100, 0x88A8, 0x9100) and len(buf) >= off + 4:  # VLAN tags
            etype = struct.unpack_from("!H", buf, off + 2)[0]
            off += 4
    elif linktype == LINKTYPE_LINUX_SLL:
        if len(buf) < 16:
            return None
        etype, off = struct.unpack_from("!H", buf, 14)[0], 16
    elif linktype == LINKTYPE_LINUX_SLL2:
        if len(buf) < 20:
            return None
        etype, off = struct.unpack_from("!H", buf, 0)[0], 20
    elif linktype == LINKTYPE_NULL:
        if len(buf) < 4:
            return None
        fam = struct.unpack_from("<I", buf, 0)[0]
        if fam > 0xFFFF:
            fam = struct.unpack_from(">I", buf, 0)[0]
        etype, off = (0x0800 if fam == 2 else 0x86DD if fam in (10, 24, 28, 30) else None), 4
    else:  # raw IP
        if not buf:
            return None
        v = buf[0] >> 4
        etype, off = (0x0800 if v == 4 else 0x86DD if v == 6 else None), 0
    if etype == 0x0800:
        return off
    if etype == 0x86DD:
        return off
    return None


def iter_tcp_options(opts: bytes):
    """The options of a TCP header's option bytes as (kind, data) pairs, per RFC 9293 sec. 3.1: kind 0 (End of
    Option List) stops, kind 1 (NOP) is one byte and yields nothing, every other option is kind/length/data; a length
    < 2 or an option running past the bytes stops."""
    i, n = 0, len(opts)
    while i < n:
        kind = opts[i]
        if kind == 0:
            return
        if kind == 1:
            i += 1
            continue
        if i + 1 >= n:
            return
        olen = opts[i + 1]
        if olen < 2 or i + olen > n:
            return
        yield kind, opts[i + 2:i + olen]
        i += olen


def parse_tcp_options(opts: bytes):
    """Parse TCP options per RFC 9293 sec. 3.1 (and RFC 7323 timestamps, RFC 2018 SACK).

    Returns (mss, wscale, sack_permitted, tsval, tsecr, [(left, right), ...]); absent values are -1.
    Parsing stops at End of Option List (kind 0), at a length < 2, or at an option running past the bytes.
    """
    mss = wscale = tsval = tsecr = -1
    sackp = False
    blocks: list[tuple[int, int]] = []
    for kind, data in iter_tcp_options(opts):
        olen = len(data) + 2
        if kind == 2 and olen == 4:
            mss = struct.unpack("!H", data)[0]
        elif kind == 3 and olen == 3:
            wscale = data[0]
        elif kind == 4 and olen == 2:
            sackp = True
        elif kind == 5 and (olen - 2) % 8 == 0:
            for j in range(0, olen - 2, 8):
                blocks.append(struct.unpack_from("!II", data, j))
        elif kind == 8 and olen == 10:
            tsval, tsecr = struct.unpack("!II", data)
    return mss, wscale, sackp, tsval, tsecr, blocks


def parse_ip_header(buf: bytes, off: int):
    """Parse the IPv4/IPv6 header at ``off`` (IPv6 extension headers skipped). Returns (version, src, dst, proto,
    ip_id, ip_len, l4 offset, l4 length from the IP header) or None for a non-IP, too-short or non-first fragment."""
    if len(buf) < off + 1:
        return None
    ver = buf[off] >> 4
    if ver == 4:
        if len(buf) < off + 20:
            return None
        ihl = (buf[off] & 0x0F) * 4
        ip_len, ip_id, frag, proto = struct.unpack_from("!H H H x B", buf, off + 2)
        if frag & 0x1FFF:  # non-first fragment: no transport header
            return None
        src = str(ipaddress.IPv4Address(buf[off + 12:off + 16]))
        dst = str(ipaddress.IPv4Address(buf[off + 16:off + 20]))
        l4 = off + ihl
        l4_total = ip_len - ihl
    elif ver == 6:
        if len(buf) < off + 40:
            return None
        plen = struct.unpack_from("!H", buf, off + 4)[0]
        proto = buf[off + 6]
        src = str(ipaddress.IPv6Address(buf[off + 8:off + 24]))
        dst = str(ipaddress.IPv6Address(buf[off + 24:off + 40]))
        ip_id, ip_len = -1, plen + 40
        l4 = off + 40
        while proto in _IPV6_EXT or proto == 44:
            if len(buf) < l4 + 8:
                return None
            nxt = buf[l4]
            if proto == 44:
                if struct.unpack_from("!H", buf, l4 + 2)[0] & 0xFFF8:
                    return None
                hl = 8
            elif proto == 51:
                hl = (buf[l4 + 1] + 2) * 4
            else:
                hl = (buf[l4 + 1] + 1) * 8
            proto, l4 = nxt, l4 + hl
        l4_total = plen - (l4 - off - 40)
    else:
        return None
    return ver, src, dst, proto, ip_id, ip_len, l4, l4_total


def _parse_ip(buf: bytes, off: int, pkt_no: int, ts: float, cap_len: int):
    """Parse IP + TCP/UDP headers from raw bytes at ``off``; return a row tuple or None."""
    ip = parse_ip_header(buf, off)
    if ip is None:
        return None
    ver, src, dst, proto, ip_id, ip_len, l4, l4_total = ip
    if proto == TCP:
        if len(buf) < l4 + 20:
            return None
        sport, dport, seq, ack, offx, flags, win = struct.unpack_from("!HHIIBBH", buf, l4)
        hlen = (offx >> 4) * 4
        opts = buf[l4 + 20:l4 + max(hlen, 20)]
        mss, wscale, sackp, tsval, tsecr, blocks = parse_tcp_options(opts)
        payload = max(l4_total - hlen, 0)
        row = [pkt_no, ts, cap_len, ver, src, dst, TCP, ip_id, ip_len, sport, dport, payload, seq, ack, flags, win,
               hlen, mss, wscale, sackp, tsval, tsecr, len(blocks)]
        for k in range(MAX_SACK_BLOCKS):
            row.extend(blocks[k] if k < len(blocks) else (-1, -1))
        return row
    if proto == UDP:
        if len(buf) < l4 + 4:
            return None
        sport, dport = struct.unpack_from("!HH", buf, l4)
        row = [pkt_no, ts, cap_len, ver, src, dst, UDP, ip_id, ip_len, sport, dport, max(l4_total - 8, 0),
               -1, -1, 0, -1, -1, -1, -1, False, -1, -1, 0]
        row.extend([-1] * (2 * MAX_SACK_BLOCKS))
        return row
    return None


def _iter_pcap(f, path):
    head = f.read(24)
    if len(head) < 24:
        raise CaptureError(f"{path}: corrupt pcap header (file shorter than 24 bytes)")
    endian, unit = _PCAP_MAGICS[head[:4]]
    _vmaj, _vmin, _tz, _sig, _snap, linktype = struct.unpack(endian + "HHiIII", head[4:])
    linktype &= 0x0FFFFFFF
    if linktype not in _SUPPORTED:
        raise CaptureError(f"{path}: unsupported link type {linktype}")
    hdr = struct.Struct(endian + "IIII")

    def gen():
        n = 0
        while True:
            rec = f.read(16)
            if not rec:
                return
            n += 1
            if len(rec) < 16:
                _warn(f"{path}: truncated record header at record {n}; skipped")
                return
            sec, frac, incl, _orig = hdr.unpack(rec)
            if incl > 0x4000000:
                _warn(f"{path}: corrupt record {n} (length {incl}); rest of file skipped")
                return
            data = f.read(incl)
            if len(data) < incl:
                _warn(f"{path}: truncated last record {n} ({len(data)} of {incl} bytes); skipped")
                return
            yield n, sec + frac * unit, linktype, data
    return gen()


def _iter_pcapng(f, path):
    try:
        rd = dpkt.pcapng.Reader(f)
    except Exception as exc:  # noqa: BLE001
        raise CaptureError(f"{path}: corrupt pcapng header ({exc})") from None
    linktype = rd.datalink()
    if linktype not in _SUPPORTED:
        raise CaptureError(f"{path}: unsupported link type {linktype}")

    def gen():
        n = 0
        it = iter(rd)
        while True:
            try:
                ts, buf = next(it)
            except StopIteration:
                return
            except Exception as exc:  # noqa: BLE001 - dpkt raises various errors on a cut block
                _warn(f"{path}: truncated or corrupt block after record {n} ({type(exc).__name__}); rest skipped")
                return
            n += 1
            yield n, float(ts), linktype, buf
    return gen()


def _warn(msg: str):
    """Report damage that was skipped: one ``CaptureWarning`` (no log record besides, which would print it twice)."""
    warnings.warn(msg, CaptureWarning, stacklevel=3)


@contextlib.contextmanager
def open_records(path):
    """The records of a pcap or pcapng file (optionally gzip'd or xz'd): yields an iterator of (record number, ts,
    link type, frame bytes). ``CaptureError`` (one line) for an empty, non-capture or corrupt-header file; a truncated
    last record ends the iteration with a ``CaptureWarning``."""
    path = str(path)
    from analysis.ingest.compressed import compression_of, decompress_file
    if os.path.isfile(path) and compression_of(path):
        import io
        opener = lambda: io.BytesIO(decompress_file(path))  # noqa: E731
    else:
        opener = lambda: open(path, "rb")  # noqa: E731
    with opener() as f:
        magic = f.read(4)
        if not magic:
            raise CaptureError(f"{path}: empty file, not a capture")
        f.seek(0)
        if magic in _PCAP_MAGICS:
            yield _iter_pcap(f, path)
        elif magic == _PCAPNG_MAGIC:
            yield _iter_pcapng(f, path)
        else:
            raise CaptureError(f"{path}: not a pcap or pcapng file")


def read_pcap(path) -> pd.DataFrame:
    """Read a pcap or pcapng file (optionally gzip'd or xz'd) into the per-packet table of ``analysis.ingest.schema`` (one row per
    IPv4/IPv6 TCP or UDP packet; ``pkt_no`` counts every record, like tshark ``frame.number``).

    Raises ``CaptureError`` (one-line message) for an empty file, a file that is not pcap/pcapng or a
    corrupt header; a truncated last record is skipped with a warning.
    """
    rows = []
    with open_records(path) as records:
        big = os.path.getsize(str(path)) > 50_000_000  # progress bar (stderr) only for long reads
        for n, ts, linktype, buf in tqdm(records, unit="pkt", desc="read_pcap", disable=not big, file=sys.stderr):
            off = _l3_offset(linktype, buf)
            if off is None:
                continue
            row = _parse_ip(buf, off, n, ts, len(buf))
            if row is not None:
                rows.append(row)
    df = pd.DataFrame(rows, columns=COLUMN_NAMES) if rows else pd.DataFrame({c: [] for c in COLUMN_NAMES})
    return df.astype(COLUMNS)
