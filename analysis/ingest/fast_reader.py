"""Vectorised decoder: classic pcap file -> per-packet table (``analysis.ingest.schema``), numpy over the whole file.

The file is one ``uint8`` array: read into memory, or for an uncompressed capture of at least 8 MB memory-mapped
(``analysis.ingest.mapped``: no copy).  With numba installed (optional accelerator) a compiled loop walks the
record headers and decodes every packet in one pass (``fast_kernel``).  Without it (or for captures under
``NUMBA_MIN_BYTES``) the pure-numpy path runs: the record chain is walked by lock-step chunk walkers
(:func:`_walk_np`) and every header field is gathered for all packets at once through unaligned big-endian views
of the buffer.  TCP options are parsed only for packets whose
TCP header is longer than 20 bytes, one option per packet per vectorised step, with exactly the rules of the
reference decoder (``analysis.ingest.dpkt_reader.parse_tcp_options``, RFC 9293 sec. 3.1): kind 0 (End of Option
List) stops parsing, kind 1 (NOP) is one byte, any other option is kind/length/data and a length < 2 or an option
running past the captured header stops parsing.  Known options: MSS (kind 2, RFC 9293), window scale (3, RFC 7323),
SACK-permitted (4) and SACK (5, RFC 2018), timestamps (8, RFC 7323).

Supported: classic pcap (microsecond and nanosecond magic, both byte orders) with link types Ethernet (incl. 802.1Q
/ 802.1ad VLAN tags), Linux cooked SLL and SLL2, BSD loopback (NULL) and raw IP (101, 228, 229, 12, 14).  pcapng
and every other case go to the dpkt reference path (``analysis.ingest.read_pcap`` chooses).  Both paths give the
same columns, dtypes and values, packet for packet (tests/test_fast_ingest.py checks it).

Units as in ``schema``: ts in s, lengths in bytes.
"""
from __future__ import annotations

import ipaddress
import logging
import os
import struct
import warnings

import numpy as np
import pandas as pd

from analysis.errors import CaptureError, CaptureWarning
from analysis.ingest.schema import COLUMNS, COLUMN_NAMES, MAX_SACK_BLOCKS, TCP, UDP

log = logging.getLogger(__name__)

_PCAP_MAGICS = {
    b"\xd4\xc3\xb2\xa1": ("<", 1e-6), b"\xa1\xb2\xc3\xd4": (">", 1e-6),
    b"\x4d\x3c\xb2\xa1": ("<", 1e-9), b"\xa1\xb2\x3c\x4d": (">", 1e-9),
}
LINKTYPE_NULL, LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2 = 0, 1, 113, 276
_RAW_DLTS = (12, 14, 101, 228, 229)
SUPPORTED_LINKTYPES = frozenset((LINKTYPE_NULL, LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2)
                                + _RAW_DLTS)
_MAX_RECORD = 0x4000000  # a record length above this is treated as corruption (as in the dpkt path)
_PAD = 64                # zero bytes appended to the buffer so that bounded over-reads stay inside it
_VLAN_ETYPES = (0x8100, 0x88A8, 0x9100)
_IPV6_EXT = (0, 43, 60, 51, 44)  # hop-by-hop, routing, destination options, AH, fragment

# --------------------------------------------------------------------------------------------- record walk

WALK_OK, WALK_SHORT_HEADER, WALK_CORRUPT, WALK_TRUNCATED = 0, 1, 2, 3


def _walk_py(buf: np.ndarray, size: int, big_endian: bool):
    """Offsets of the record headers (pure Python fallback of the numba kernel ``fast_kernel.walk_kernel``).

    Returns (offsets int64 array, status, record number of the bad record, its incl_len, bytes present)."""
    mv = memoryview(buf)
    unpack = struct.Struct(">I" if big_endian else "<I").unpack_from
    offs = []
    append = offs.append
    off = 24
    while off < size:
        if size - off < 16:
            return np.array(offs, np.int64), WALK_SHORT_HEADER, len(offs) + 1, 0, 0
        incl = unpack(mv, off + 8)[0]
        if incl > _MAX_RECORD:
            return np.array(offs, np.int64), WALK_CORRUPT, len(offs) + 1, incl, 0
        if off + 16 + incl > size:
            return np.array(offs, np.int64), WALK_TRUNCATED, len(offs) + 1, incl, size - off - 16
        append(off)
        off += 16 + incl
    return np.array(offs, np.int64), WALK_OK, 0, 0, 0


_CHUNK = 1 << 16  # bytes per walker of the vectorised walk


def _walk_np(buf: np.ndarray, size: int, big_endian: bool):
    """Record walk in numpy (no compiler): same result as :func:`_walk_py`, several times faster on big files.

    The record chain is sequential (each header gives the next one's offset), so the file is cut into 64-KiB
    chunks and one walker per chunk runs in lock-step with all the others:
      1. seeds: in the first bytes of every chunk, the offsets whose 16 bytes look like a record header
         (plausible time, fraction, lengths); every seed is walked, with the exact rules of the sequential walk,
         to the first offset at or past its chunk's end (walkers that stop looking like headers are dropped);
      2. stitching: from offset 24, chunk by chunk, the true entry of each chunk is the previous chunk's exit;
         if no surviving seed started exactly there, that chunk is walked sequentially in Python; the records
         are the offsets visited by the walkers chosen this way (plus those of the sequential chunks).
    Only step 2 decides which offsets are records, and it follows the exact chain, so a wrong guess in step 1 costs
    time, never correctness."""
    nchunks = (size - 24 + _CHUNK - 1) // _CHUNK
    if nchunks < 16 or size < 24 + 16:
        return _walk_py(buf, size, big_endian)
    rd = np.ndarray((len(buf) - 3,), dtype=">u4" if big_endian else "<u4", buffer=buf, offset=0, strides=(1,))
    lim = len(rd) - 1

    def u32(pos):
        return rd[np.minimum(pos, lim)].astype(np.int64)

    ends = np.minimum(24 + (np.arange(nchunks, dtype=np.int64) + 1) * _CHUNK, size)
    starts = 24 + np.arange(nchunks, dtype=np.int64) * _CHUNK

    # ---- 1. seeds and their exits
    snap = int(u32(np.array([16]))[0])
    nano = bytes(buf[:4]) in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    maxincl = snap if 0 < snap <= _MAX_RECORD else _MAX_RECORD
    sec0 = int(u32(np.array([24]))[0])
    window = 16 + min(maxincl, 2048)

    def plausible(q):
        incl, orig = u32(q + 8), u32(q + 12)
        return ((incl <= maxincl) & (orig >= incl) & (orig <= _MAX_RECORD)
                & (u32(q + 4) < (1_000_000_000 if nano else 1_000_000)) & (np.abs(u32(q) - sec0) <= 400 * 86400)
                & (q + 16 <= size))

    q = (starts[1:, None] + np.arange(window)).ravel()
    qk = np.repeat(np.arange(1, nchunks), window)
    keep = (q < ends[qk]) & (q + 16 <= size)
    q, qk = q[keep], qk[keep]
    m = plausible(q)
    seed_pos = np.concatenate([[24], q[m]])
    seed_chunk = np.concatenate([[0], qk[m]])
    exit_pos = np.full(len(seed_pos), -1, np.int64)  # >= 0: exit offset; -1: dropped; -2: stopped on an error
    cur = np.arange(len(seed_pos))
    pos = seed_pos.copy()
    step = 0
    rec_ids, rec_pos = [], []  # (walker, record offset) of every successful step
    while len(cur):
        p = pos[cur]
        if 0 < step <= 3:  # false seeds rarely survive 3 plausible-looking hops (the seed itself is never dropped)
            ok = plausible(p)
            cur, p = cur[ok], p[ok]
        step += 1
        incl = u32(p + 8)
        err = (size - p < 16) | (incl > _MAX_RECORD) | (p + 16 + incl > size)
        exit_pos[cur[err]] = -2
        cur, p, incl = cur[~err], p[~err], incl[~err]
        rec_ids.append(cur)
        rec_pos.append(p)
        p = p + 16 + incl
        pos[cur] = p
        out = p >= ends[seed_chunk[cur]]
        exit_pos[cur[out]] = p[out]
        cur = cur[~out]
    seed_exit = {sp: (i, x) for i, (sp, x) in enumerate(zip(seed_pos.tolist(), exit_pos.tolist()))}
    chosen = np.zeros(len(seed_pos), bool)

    def found():
        ids = np.concatenate(rec_ids) if rec_ids else np.zeros(0, np.int64)
        offs = np.concatenate(rec_pos)[chosen[ids]] if rec_ids else np.zeros(0, np.int64)
        return np.sort(np.concatenate([offs, np.array(py_offs, np.int64)]))

    # ---- 2. stitching
    unpack = struct.Struct(">I" if big_endian else "<I").unpack_from
    mv = memoryview(buf)
    py_offs = []   # offsets found by the sequential fallback
    entry = 24
    while entry < size:
        k = (entry - 24) // _CHUNK
        e = int(ends[k])
        i, x = seed_exit.get(entry, (-1, -1))
        if x >= 0:
            chosen[i] = True
            entry = x
            continue
        # sequential walk of this chunk (an error stops the whole file, as in _walk_py)
        off = entry
        while off < e:
            if size - off < 16:
                offs = found()
                return offs, WALK_SHORT_HEADER, len(offs) + 1, 0, 0
            incl = unpack(mv, off + 8)[0]
            if incl > _MAX_RECORD or off + 16 + incl > size:
                offs = found()
                if incl > _MAX_RECORD:
                    return offs, WALK_CORRUPT, len(offs) + 1, incl, 0
                return offs, WALK_TRUNCATED, len(offs) + 1, incl, size - off - 16
            py_offs.append(off)
            off += 16 + incl
        entry = off

    offs = found()
    return offs, WALK_OK, 0, 0, 0


_NUMBA = {}  # lazily imported: numba costs ~0.5 s to import, worth it only for large captures
NUMBA_MIN_BYTES = 8_000_000  # below this the Python walk takes a few ms (unless numba is loaded already)


def _use_numba(size: int) -> bool:
    """numba for captures of at least NUMBA_MIN_BYTES, and for every capture once numba is loaded (a campaign's
    workers load it up front: ``analysis.dataset``), since only its import is costly."""
    if _NUMBA.get("walk") is not None:
        return True
    return size >= NUMBA_MIN_BYTES and have_numba()


def have_numba() -> bool:
    """True if numba is importable (the compiled record walk and decoder are then used for large captures)."""
    if "walk" not in _NUMBA:
        try:
            from analysis.ingest.fast_kernel import decode, walk
            _NUMBA["walk"] = walk
            _NUMBA["decode"] = decode
        except Exception:  # noqa: BLE001 - numba absent or broken: pure Python walk
            _NUMBA["walk"] = None
    return _NUMBA["walk"] is not None


def walk_records(buf: np.ndarray, size: int, big_endian: bool, *, accel: bool | None = None):
    """Offsets of every complete record header in a classic pcap buffer (first record at byte 24).

    ``accel``: True = numba (error if absent), False = numpy (:func:`_walk_np`), None = numba when installed
    and the capture is at least ``NUMBA_MIN_BYTES`` or numba is loaded already.
    Returns (offsets, status, bad record number, its incl_len, bytes present) with status one of WALK_*."""
    use_nb = _use_numba(size) if accel is None else accel
    if use_nb:
        if not have_numba():
            raise RuntimeError("numba is not installed")
        out = np.empty(max((size - 24) // 16, 0), np.int64)  # at most one record per 16 bytes
        n, status, bad, incl, have = _NUMBA["walk"](buf, size, big_endian, out)
        return out[:n].copy(), int(status), int(bad), int(incl), int(have)
    return _walk_np(buf, size, big_endian)


# --------------------------------------------------------------------------------------------- byte gathers

class _Gather:
    """Unaligned big-endian reads at arbitrary byte offsets of one buffer (indices are clipped into it)."""

    def __init__(self, buf: np.ndarray):
        self.buf = buf
        n = len(buf)
        self.last = n - 4
        self._u16 = np.ndarray((n - 1,), dtype=">u2", buffer=buf, offset=0, strides=(1,))
        self._u32 = np.ndarray((n - 3,), dtype=">u4", buffer=buf, offset=0, strides=(1,))
        self._u32le = np.ndarray((n - 3,), dtype="<u4", buffer=buf, offset=0, strides=(1,))

    def _c(self, idx):
        return np.minimum(idx, self.last)

    def u8(self, idx):
        return self.buf[self._c(idx)].astype(np.int64)

    def u16(self, idx):
        return self._u16[self._c(idx)].astype(np.int64)

    def u32(self, idx):
        return self._u32[self._c(idx)].astype(np.int64)

    def u32le(self, idx):
        return self._u32le[self._c(idx)].astype(np.int64)


# --------------------------------------------------------------------------------------------- loading

def load_buffer(path) -> np.ndarray:
    """The capture's bytes (decompressed when the file starts with the gzip or xz magic) in a uint8 array followed by
    ``_PAD`` zero bytes (so ``len(buf) - _PAD`` is the capture size). An uncompressed file of at least
    ``mapped.MIN_BYTES`` is memory-mapped (read-only, no copy: ``analysis.ingest.mapped``), a smaller one read."""
    from analysis.ingest import mapped
    from analysis.ingest.compressed import compression_of, decompress_file
    with open(path, "rb") as f:
        if compression_of(path) is None:
            f.seek(0)
            size = os.fstat(f.fileno()).st_size
            if mapped.wanted(size):
                buf = mapped.map_padded(f, size, _PAD)
                if buf is not None:
                    return buf
            buf = np.empty(size + _PAD, np.uint8)
            got = f.readinto(memoryview(buf)[:size])
            buf[got:] = 0
            return buf[:got + _PAD]
    data = decompress_file(path)
    buf = np.empty(len(data) + _PAD, np.uint8)
    buf[:len(data)] = np.frombuffer(data, np.uint8)
    buf[len(data):] = 0
    return buf


def _warn(msg: str):
    """Report damage that was skipped: one ``CaptureWarning`` (no log record besides, which would print it twice)."""
    warnings.warn(msg, CaptureWarning, stacklevel=4)


def _empty_frame() -> pd.DataFrame:
    return pd.DataFrame({c: [] for c in COLUMN_NAMES}).astype(COLUMNS)


# --------------------------------------------------------------------------------------------- decoding

def decode_pcap_buffer(buf: np.ndarray, path="<buffer>", *, accel: bool | None = None) -> pd.DataFrame:
    """Decode a classic pcap held in ``buf`` (uint8, followed by ``_PAD`` spare bytes) into the schema table."""
    size = len(buf) - _PAD
    path = str(path)
    if size <= 0:
        raise CaptureError(f"{path}: empty file, not a capture")
    head = bytes(buf[:24]) if size >= 24 else bytes(buf[:size])
    if head[:4] not in _PCAP_MAGICS:
        raise CaptureError(f"{path}: not a classic pcap file")
    if size < 24:
        raise CaptureError(f"{path}: corrupt pcap header (file shorter than 24 bytes)")
    endian, unit = _PCAP_MAGICS[head[:4]]
    linktype = struct.unpack(endian + "I", head[20:24])[0] & 0x0FFFFFFF
    if linktype not in SUPPORTED_LINKTYPES:
        raise CaptureError(f"{path}: unsupported link type {linktype}")
    big = endian == ">"

    use_nb = _use_numba(size) if accel is None else accel
    try:
        offs, status, bad, incl_bad, have = walk_records(buf, size, big, accel=use_nb)
    except Exception as exc:  # noqa: BLE001 - a broken numba install must not stop ingest: Python walk
        if accel or not use_nb:
            raise
        log.warning("numba record walk failed (%s: %s); using the Python walk", type(exc).__name__, exc)
        use_nb = False
        offs, status, bad, incl_bad, have = walk_records(buf, size, big, accel=False)
    if status == WALK_SHORT_HEADER:
        _warn(f"{path}: truncated record header at record {bad}; skipped")
    elif status == WALK_CORRUPT:
        _warn(f"{path}: corrupt record {bad} (length {incl_bad}); rest of file skipped")
    elif status == WALK_TRUNCATED:
        _warn(f"{path}: truncated last record {bad} ({have} of {incl_bad} bytes); skipped")
    if len(offs) == 0:
        return _empty_frame()
    if use_nb:
        try:
            return _decode_compiled(buf, offs, unit, big, linktype)
        except Exception as exc:  # noqa: BLE001 - a broken numba install must not stop ingest: numpy path
            if accel:
                raise
            log.warning("numba decoder failed (%s: %s); using the numpy path", type(exc).__name__, exc)

    g = _Gather(buf)
    rd32 = g._u32 if big else g._u32le
    sec = rd32[offs].astype(np.float64)
    frac = rd32[offs + 4].astype(np.float64)
    cap = rd32[offs + 8].astype(np.int64)
    ts = sec + frac * unit
    data = offs + 16  # absolute offset of each record's first captured byte
    pkt_no = np.arange(1, len(offs) + 1, dtype=np.int64)

    # ---- link layer -> l3 (offset of the IP header relative to the record data), like dpkt_reader._l3_offset
    l3, ok = _link_layer(g, linktype, data, cap)
    idx = np.flatnonzero(ok)
    d, L, o = data[idx], cap[idx], l3[idx]
    has1 = L >= o + 1
    idx, d, L, o = idx[has1], d[has1], L[has1], o[has1]
    ver = g.u8(d + o) >> 4

    parts = [_ipv4(g, idx[ver == 4], d[ver == 4], L[ver == 4], o[ver == 4]),
             _ipv6(g, idx[ver == 6], d[ver == 6], L[ver == 6], o[ver == 6])]
    parts = [p for p in parts if p is not None and len(p["idx"])]
    if not parts:
        return _empty_frame()
    ip = {k: np.concatenate([p[k] for p in parts]) for k in parts[0] if k not in ("src", "dst")}
    # addresses: v4 parts give uint32 codes, v6 parts give 16-byte void values; format each distinct value once
    src = np.empty(len(ip["idx"]), dtype=object)
    dst = np.empty(len(ip["idx"]), dtype=object)
    pos = 0
    for p in parts:
        n = len(p["idx"])
        s, t = _format_addresses(p["src"], p["dst"], p["ver"])
        src[pos:pos + n], dst[pos:pos + n] = s, t
        pos += n
    order = np.argsort(ip["idx"], kind="stable")
    if not np.all(order == np.arange(len(order))):
        ip = {k: v[order] for k, v in ip.items()}
        src, dst = src[order], dst[order]

    # ---- transport
    return _transport(g, ip, src, dst, pkt_no, ts, cap, data)


def _decode_compiled(buf, offs, unit, big, linktype) -> pd.DataFrame:
    """The numba one-pass decoder (``fast_kernel.decode_kernel``) over the walked records."""
    n = len(offs)
    cols = {c: np.empty(n, COLUMNS[c]) for c in COLUMN_NAMES if c not in ("src", "dst") and "_left" not in c
            and "_right" not in c}
    sack = np.empty((n, 2 * MAX_SACK_BLOCKS), np.int64)
    addr = np.empty((n, 2), np.int64)
    k = _NUMBA["decode"](buf, offs, unit, big, linktype, cols["pkt_no"], cols["ts"], cols["cap_len"],
                         cols["ip_version"], cols["proto"], cols["ip_id"], cols["ip_len"], cols["sport"],
                         cols["dport"], cols["payload_len"], cols["seq"], cols["ack"], cols["flags"], cols["win"],
                         cols["tcp_hlen"], cols["mss"], cols["wscale"], cols["sack_permitted"], cols["tsval"],
                         cols["tsecr"], cols["sack_blocks"], sack, addr)
    if k == 0:
        return _empty_frame()
    ver = cols["ip_version"][:k]
    src = np.empty(k, dtype=object)
    dst = np.empty(k, dtype=object)
    for v in (4, 6):
        sel = np.flatnonzero(ver == v) if (ver != 4).any() else None
        if v == 4:
            a = addr[:k] if sel is None else addr[sel]
            s, t = _format_addresses(a[:, 0], a[:, 1], 4)
        else:
            if sel is None or not len(sel):
                continue
            s, t = _format_addresses(_gather_bytes(buf, addr[sel, 0], 16), _gather_bytes(buf, addr[sel, 1], 16), 6)
        if sel is None:
            src, dst = s, t
        else:
            src[sel], dst[sel] = s, t
    data = {}
    for c in COLUMN_NAMES:
        if c == "src":
            data[c] = pd.Series(src, dtype=object, copy=False)
        elif c == "dst":
            data[c] = pd.Series(dst, dtype=object, copy=False)
        elif c.startswith("sack") and c[4].isdigit():
            i = int(c[4]) - 1
            data[c] = sack[:k, 2 * i + (1 if c.endswith("right") else 0)]
        else:
            data[c] = cols[c][:k]
    return pd.DataFrame(data, copy=False)


def _link_layer(g: _Gather, linktype: int, data, cap):
    n = len(data)
    if linktype == LINKTYPE_ETHERNET:
        ok = cap >= 14
        etype = np.where(ok, g.u16(data + 12), -1)
        off = np.full(n, 14, np.int64)
        while True:
            m = np.isin(etype, _VLAN_ETYPES) & (cap >= off + 4)
            if not m.any():
                break
            mi = np.flatnonzero(m)
            etype[mi] = g.u16(data[mi] + off[mi] + 2)
            off[mi] += 4
    elif linktype == LINKTYPE_LINUX_SLL:
        ok = cap >= 16
        etype = np.where(ok, g.u16(data + 14), -1)
        off = np.full(n, 16, np.int64)
    elif linktype == LINKTYPE_LINUX_SLL2:
        ok = cap >= 20
        etype = np.where(ok, g.u16(data), -1)
        off = np.full(n, 20, np.int64)
    elif linktype == LINKTYPE_NULL:
        ok = cap >= 4
        fam = g.u32le(data)
        fam = np.where(fam > 0xFFFF, g.u32(data), fam)
        etype = np.where(fam == 2, 0x0800, np.where(np.isin(fam, (10, 24, 28, 30)), 0x86DD, -1))
        etype = np.where(ok, etype, -1)
        off = np.full(n, 4, np.int64)
    else:  # raw IP
        ok = cap >= 1
        v = g.u8(data) >> 4
        etype = np.where(ok & (v == 4), 0x0800, np.where(ok & (v == 6), 0x86DD, -1))
        off = np.zeros(n, np.int64)
    ok = ok & ((etype == 0x0800) | (etype == 0x86DD))
    return off, ok


def _ipv4(g, idx, d, L, o):
    m = L >= o + 20
    idx, d, L, o = idx[m], d[m], L[m], o[m]
    b = d + o
    ihl = (g.u8(b) & 0x0F) * 4
    frag = g.u16(b + 6)
    m = (frag & 0x1FFF) == 0  # non-first fragments carry no transport header
    idx, d, L, o, b, ihl = idx[m], d[m], L[m], o[m], b[m], ihl[m]
    ip_len = g.u16(b + 2)
    return {"idx": idx, "d": d, "L": L, "ver": np.full(len(idx), 4, np.int64), "ip_id": g.u16(b + 4),
            "ip_len": ip_len, "proto": g.u8(b + 9), "l4": o + ihl, "l4_total": ip_len - ihl,
            "src": g._u32[np.minimum(b + 12, g.last)], "dst": g._u32[np.minimum(b + 16, g.last)]}


def _ipv6(g, idx, d, L, o):
    m = L >= o + 40
    idx, d, L, o = idx[m], d[m], L[m], o[m]
    b = d + o
    plen = g.u16(b + 4)
    proto = g.u8(b + 6)
    l4 = o + 40
    keep = np.ones(len(idx), bool)
    # extension-header chain, one header per step for every packet still in it
    cur = np.flatnonzero(np.isin(proto, _IPV6_EXT))
    while len(cur):
        short = L[cur] < l4[cur] + 8
        keep[cur[short]] = False
        cur = cur[~short]
        h = d[cur] + l4[cur]
        nxt = g.u8(h)
        p = proto[cur]
        is_frag = p == 44
        frag_off = np.where(is_frag, g.u16(h + 2) & 0xFFF8, 0)
        bad = is_frag & (frag_off != 0)
        keep[cur[bad]] = False
        hl = np.where(is_frag, 8, np.where(p == 51, (g.u8(h + 1) + 2) * 4, (g.u8(h + 1) + 1) * 8))
        good = ~bad
        cur, nxt, hl = cur[good], nxt[good], hl[good]
        proto[cur] = nxt
        l4[cur] += hl
        cur = cur[np.isin(nxt, _IPV6_EXT)]
    idx, d, L, o, b, plen, proto, l4 = (a[keep] for a in (idx, d, L, o, b, plen, proto, l4))
    src = _gather_bytes(g.buf, b + 8, 16)
    dst = _gather_bytes(g.buf, b + 24, 16)
    return {"idx": idx, "d": d, "L": L, "ver": np.full(len(idx), 6, np.int64), "ip_id": np.full(len(idx), -1, np.int64),
            "ip_len": plen + 40, "proto": proto, "l4": l4, "l4_total": plen - (l4 - o - 40), "src": src, "dst": dst}


def _gather_bytes(buf, start, n):
    """``n`` bytes at each offset of ``start`` as an array of void(n) scalars (an offset past the end reads the last
    ``n`` bytes; the decoders keep offsets inside the buffer, which ends in ``_PAD`` >= n zero bytes). Rows of a
    sliding-window view are copied, so no (len(start), n) index matrix is built."""
    win = np.lib.stride_tricks.sliding_window_view(np.asarray(buf), n)
    m = win[np.minimum(np.asarray(start, dtype=np.int64), len(buf) - n)]
    return np.ascontiguousarray(m).view(np.dtype((np.void, n))).ravel()


def _format_addresses(src, dst, ver):
    """Text addresses for uint32 (IPv4) or void16 (IPv6) values, each distinct value formatted once."""
    both = np.concatenate([src, dst])
    if both.dtype.kind == "V":
        # factorize the two 8-byte halves, then the pair of codes: no Python object per packet
        w = np.ascontiguousarray(both).view(np.uint64).reshape(len(both), -1)
        c0, u0 = pd.factorize(w[:, 0])
        c1, u1 = pd.factorize(w[:, 1])
        codes, _ = pd.factorize(c0.astype(np.int64) * max(len(u1), 1) + c1)
        # codes count up in order of first appearance: code k first occurs where the running maximum reaches k
        first = np.flatnonzero(np.diff(np.maximum.accumulate(codes), prepend=-1) > 0)
        text = np.array([str(ipaddress.IPv6Address(both[i].tobytes())) for i in first], dtype=object)
    else:
        codes, uniq = pd.factorize(both.astype(np.int64))
        text = np.array([str(ipaddress.IPv4Address(int(u))) for u in uniq], dtype=object)
    out = text[codes]
    return out[:len(src)], out[len(src):]


def _transport(g, ip, src, dst, pkt_no, ts, cap, data):
    d, L, l4, proto = ip["d"], ip["L"], ip["l4"], ip["proto"]
    is_tcp = (proto == TCP) & (L >= l4 + 20)
    is_udp = (proto == UDP) & (L >= l4 + 4)
    keep = is_tcp | is_udp
    if not keep.all():
        ip = {k: v[keep] for k, v in ip.items()}
        src, dst = src[keep], dst[keep]
        d, L, l4, proto, is_tcp = ip["d"], ip["L"], ip["l4"], ip["proto"], is_tcp[keep]
    n = len(d)
    if n == 0:
        return _empty_frame()
    rec = ip["idx"]
    t = d + l4  # absolute offset of the transport header
    sport = g.u16(t)
    dport = g.u16(t + 2)
    neg1 = np.full(n, -1, np.int64)
    ti = np.flatnonzero(is_tcp)
    tt = t[ti]
    seq, ack, win, hlen = neg1.copy(), neg1.copy(), neg1.copy(), neg1.copy()
    flags = np.zeros(n, np.int64)
    seq[ti] = g.u32(tt + 4)
    ack[ti] = g.u32(tt + 8)
    hlen[ti] = (g.u8(tt + 12) >> 4) * 4
    flags[ti] = g.u8(tt + 13)
    win[ti] = g.u16(tt + 14)
    l4_total = ip["l4_total"]
    payload = np.maximum(l4_total - np.where(is_tcp, hlen, 8), 0)

    opt = _tcp_options(g, ti, d[ti], L[ti], l4[ti], hlen[ti], n)

    cols = {
        "pkt_no": pkt_no[rec], "ts": ts[rec], "cap_len": cap[rec], "ip_version": ip["ver"], "src": src, "dst": dst,
        "proto": proto, "ip_id": ip["ip_id"], "ip_len": ip["ip_len"], "sport": sport, "dport": dport,
        "payload_len": payload, "seq": seq, "ack": ack, "flags": flags, "win": win, "tcp_hlen": hlen,
    }
    cols.update(opt)
    return pd.DataFrame({c: pd.Series(np.asarray(cols[c]).astype(COLUMNS[c], copy=False), dtype=COLUMNS[c],
                                      copy=False) for c in COLUMN_NAMES}, copy=False)


def _tcp_options(g, ti, d, L, l4, hlen, n):
    """Option columns for all n rows (TCP rows ``ti``); semantics of dpkt_reader.parse_tcp_options."""
    mss = np.full(n, -1, np.int64)
    wscale = np.full(n, -1, np.int64)
    sackp = np.zeros(n, bool)
    tsval = np.full(n, -1, np.int64)
    tsecr = np.full(n, -1, np.int64)
    nblk = np.zeros(n, np.int64)
    left = [np.full(n, -1, np.int64) for _ in range(MAX_SACK_BLOCKS)]
    right = [np.full(n, -1, np.int64) for _ in range(MAX_SACK_BLOCKS)]
    # option bytes: buf[l4+20 : l4+max(hlen,20)] cut at the captured length
    olen = np.minimum(np.maximum(hlen, 20), L - l4) - 20
    has = olen > 0
    rows = ti[has]
    base = (d + l4 + 20)[has]
    end = olen[has]
    pos = np.zeros(len(rows), np.int64)
    # common Linux layout first: NOP NOP TS(10) -> timestamps, continue at byte 12
    if len(rows):
        pre = (end >= 12) & (g.u32(base) == 0x0101080A)
        pi = np.flatnonzero(pre)
        tsval[rows[pi]] = g.u32(base[pi] + 4)
        tsecr[rows[pi]] = g.u32(base[pi] + 8)
        pos[pi] = 12
    cur = np.flatnonzero(pos < end)
    while len(cur):
        p = base[cur] + pos[cur]
        kind = g.u8(p)
        nop = kind == 1
        nops = cur[nop]
        pos[nops] += 1
        other = (kind != 0) & ~nop
        cur, p, kind = cur[other], p[other], kind[other]
        room = pos[cur] + 1 < end[cur]
        cur, p, kind = cur[room], p[room], kind[room]
        ol = g.u8(p + 1)
        valid = (ol >= 2) & (pos[cur] + ol <= end[cur])
        cur, p, kind, ol = cur[valid], p[valid], kind[valid], ol[valid]
        r = rows[cur]
        m = (kind == 2) & (ol == 4)
        mss[r[m]] = g.u16(p[m] + 2)
        m = (kind == 3) & (ol == 3)
        wscale[r[m]] = g.u8(p[m] + 2)
        m = (kind == 4) & (ol == 2)
        sackp[r[m]] = True
        m = (kind == 8) & (ol == 10)
        tsval[r[m]] = g.u32(p[m] + 2)
        tsecr[r[m]] = g.u32(p[m] + 6)
        m = np.flatnonzero((kind == 5) & ((ol - 2) % 8 == 0))
        if len(m):
            nb = (ol[m] - 2) // 8
            rm, pm = r[m], p[m]
            for j in range(int(nb.max())):
                mj = np.flatnonzero(nb > j)
                slot = nblk[rm[mj]] + j
                for k in range(MAX_SACK_BLOCKS):
                    sk = mj[slot == k]
                    left[k][rm[sk]] = g.u32(pm[sk] + 2 + 8 * j)
                    right[k][rm[sk]] = g.u32(pm[sk] + 6 + 8 * j)
            nblk[rm] += nb
        pos[cur] += ol
        cur = np.concatenate([nops, cur])
        cur = cur[pos[cur] < end[cur]]
    out = {"mss": mss, "wscale": wscale, "sack_permitted": sackp, "tsval": tsval, "tsecr": tsecr,
           "sack_blocks": nblk}
    for k in range(MAX_SACK_BLOCKS):
        out[f"sack{k + 1}_left"] = left[k]
        out[f"sack{k + 1}_right"] = right[k]
    return out


def read_pcap_fast(path, *, accel: bool | None = None) -> pd.DataFrame:
    """Decode a classic pcap (optionally gzip'd) with the vectorised path; raises ``CaptureError`` otherwise."""
    return decode_pcap_buffer(load_buffer(path), path, accel=accel)
