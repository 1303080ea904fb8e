"""UDP datagrams of a capture, reassembled from their IPv4 fragments: which arrived whole, and the goodput they give.

The paper's iperf3 (most likely older than 3.1.5: its Ubuntu 16.04) sends 8192-byte UDP payloads, which IPv4
fragments into 6 packets over a 1500-byte MTU (docs/netem-semantics.md section 5); the receiver's kernel delivers a
datagram only when all its fragments arrived.
The per-packet table of ``analysis.ingest`` drops non-first fragments (they carry no UDP header), so this module reads
the capture itself (records with dpkt, headers from the raw bytes) and counts datagrams, not packets.

Definitions (IPv4 only; IPv6 packets and every protocol but UDP, 17, are ignored):

* **fragment** (RFC 791 section 3.1): an IPv4 packet of protocol 17; its offset is the Fragment Offset field times
  8 bytes, MF the More Fragments flag, its length the Total Length field minus the header (IHL x 4), so that
  snaplen-truncated captures (``tcpdump -s 128``) count every byte.  An unfragmented datagram is a one-fragment
  datagram (offset 0, MF = 0).
* **datagram**: the fragments with one reassembly key (source, destination, protocol 17, Identification), as RFC 791
  (sections 2.3 and 3.2) reassembles them, split into successive datagrams by the **id-reuse rule** below.  Its UDP
  header (RFC 768: source port, destination port, length = 8-byte header + data) is read from its first fragment.
* **complete**: the first fragment (offset 0) was seen, the fragments with MF = 0 all end at the same byte ``end``,
  the fragments cover [0, end) without a hole and none reaches past ``end``, and the UDP length equals ``end`` (the
  reassembled IP payload is exactly the UDP datagram).  That is when the receiver's kernel can deliver it.
* **id-reuse rule** (the 16-bit Identification wraps after 65 536 datagrams of one source/destination pair, and a
  reassembly queue lives until it completes or times out).  In capture order, a fragment joins the open datagram of
  its key, unless it starts a new one because
    1. there is no open datagram with that key, or
    2. the open one is complete (the kernel delivered it and dropped its reassembly queue), or
    3. the fragment arrived more than ``reassembly_timeout_s`` after the open one's first fragment (default 30 s,
       Linux's ``net.ipv4.ipfrag_time``; RFC 791 section 3.2 recommends a 15-s initial timer; on expiry the
       receiver drops the queue), or
    4. the fragment has offset 0 and the open one already holds an offset-0 fragment (an id reused while the earlier
       datagram, which lost a fragment, was still waiting).
  The datagram left behind keeps what it had (incomplete unless rule 2).  Limitation: a non-first fragment of a
  reused id that arrives before that datagram's first fragment, within the timeout of an earlier datagram that lost
  a fragment, is attributed to the earlier one (the kernel would misassemble it too, RFC 4963); and a duplicated
  first fragment would start a datagram of its own (no capture of this project duplicates packets).

A datagram whose fragments were still in flight when the capture stopped counts as incomplete.  Units: time in s
(the capture's clock), lengths in bytes, rates in Mbit/s (1e6 bit/s).
"""
from __future__ import annotations

import ipaddress
import math
import struct
import warnings

import dpkt
import numpy as np
import pandas as pd

from analysis.errors import CaptureError, CaptureWarning
from analysis.ingest.compressed import open_decompressed

UDP = 17
REASSEMBLY_TIMEOUT_S = 30.0   # Linux net.ipv4.ipfrag_time default (s)
COLUMNS = ("ts_first", "ts_last", "src", "dst", "sport", "dport", "ip_id", "udp_len", "fragments_seen",
           "payload_bytes_seen", "complete", "n_fragments_expected")
_INT_NA = ("sport", "dport", "udp_len", "n_fragments_expected")  # pandas Int64: <NA> without the first fragment
_ETHERNET, _LINUX_SLL, _LINUX_SLL2 = 1, 113, 276
_RAW = (12, 14, 101, 228)
_VLAN_ETYPES = (0x8100, 0x88A8, 0x9100)


def _ipv4_offset(linktype: int, buf: bytes):
    """Offset of the IPv4 header in a frame (Ethernet with VLAN tags, Linux SLL, SLL2, raw IP), None if not IPv4."""
    if linktype == _ETHERNET:
        off = 14
        etype = struct.unpack_from("!H", buf, 12)[0] if len(buf) >= 14 else None
        while etype in _VLAN_ETYPES and len(buf) >= off + 4:
            etype, off = struct.unpack_from("!H", buf, off + 2)[0], off + 4
    elif linktype == _LINUX_SLL:
        etype, off = (struct.unpack_from("!H", buf, 14)[0] if len(buf) >= 16 else None), 16
    elif linktype == _LINUX_SLL2:
        etype, off = (struct.unpack_from("!H", buf, 0)[0] if len(buf) >= 20 else None), 20
    else:  # raw IP
        etype, off = (0x0800 if buf and buf[0] >> 4 == 4 else None), 0
    return off if etype == 0x0800 else None


def _fragments(capture_path):
    """(ts s, src, dst, ip_id, offset bytes, MF, length bytes, UDP header (sport, dport, length) or None) of every
    IPv4 UDP fragment of a classic pcap file (optionally gzip'd or xz'd), in capture order."""
    with open_decompressed(capture_path) as f:
        try:
            rd = dpkt.pcap.Reader(f)
        except (ValueError, dpkt.NeedData) as exc:
            raise CaptureError(f"{capture_path}: not a classic pcap file ({exc})") from None
        linktype = rd.datalink() & 0x0FFFFFFF
        if linktype not in (_ETHERNET, _LINUX_SLL, _LINUX_SLL2) + _RAW:
            raise CaptureError(f"{capture_path}: unsupported link type {linktype}")
        it = iter(rd)
        while True:
            try:
                ts, buf = next(it)
            except StopIteration:
                return
            except dpkt.NeedData:
                warnings.warn(f"{capture_path}: truncated last record header; skipped", CaptureWarning, stacklevel=3)
                return
            o = _ipv4_offset(linktype, buf)
            if o is None or len(buf) < o + 20 or buf[o] >> 4 != 4:
                continue
            ihl = (buf[o] & 0x0F) * 4
            ip_len, ip_id, frag, proto = struct.unpack_from("!HHHxB", buf, o + 2)
            if proto != UDP or ip_len < ihl:
                continue
            offset, mf = (frag & 0x1FFF) * 8, bool(frag & 0x2000)
            udp = struct.unpack_from("!HHH", buf, o + ihl) if offset == 0 and len(buf) >= o + ihl + 8 else None
            yield (float(ts), str(ipaddress.IPv4Address(buf[o + 12:o + 16])),
                   str(ipaddress.IPv4Address(buf[o + 16:o + 20])), ip_id, offset, mf, ip_len - ihl, udp)


class _Datagram:
    """The fragments of one datagram seen so far (one reassembly queue)."""

    def __init__(self, ts, src, dst, ip_id):
        self.ts_first = self.ts_last = ts
        self.src, self.dst, self.ip_id = src, dst, ip_id
        self.udp = None            # (sport, dport, udp_len) from the first fragment
        self.first_len = None      # length (bytes) and MF of the first fragment
        self.first_mf = False
        self.spans = []            # [offset, offset + length) of every fragment seen (bytes)
        self.last_ends = set()     # end of every fragment with MF = 0 (bytes)
        self.payload = 0
        self.complete = False

    def add(self, ts, offset, mf, length, udp):
        self.ts_last = max(self.ts_last, ts)
        self.spans.append((offset, offset + length))
        self.payload += length
        if offset == 0:
            self.first_len, self.first_mf = length, mf
            self.udp = udp
        if not mf:
            self.last_ends.add(offset + length)
        self.complete = self._whole()

    def _whole(self) -> bool:
        if self.first_len is None or self.udp is None or len(self.last_ends) != 1:
            return False
        end, covered = next(iter(self.last_ends)), 0
        for a, b in sorted(self.spans):
            if a > covered:
                return False   # a hole
            covered = max(covered, b)
        return covered == end and self.udp[2] == end

    def row(self):
        sport, dport, udp_len = self.udp if self.udp is not None else (None, None, None)
        if self.first_len is None or udp_len is None:
            expected = None
        elif not self.first_mf:
            expected = 1
        else:   # the sender cuts every fragment but the last to the first one's size (a multiple of 8)
            expected = math.ceil(udp_len / self.first_len) if self.first_len else None
        return (self.ts_first, self.ts_last, self.src, self.dst, sport, dport, self.ip_id, udp_len,
                len(self.spans), self.payload, self.complete, expected)


def _flow_ports(df: pd.DataFrame) -> list:
    """(sport, dport) of every datagram: its first fragment's; for a datagram whose first fragment never appeared,
    those of the only flow of its (src, dst) pair (it can belong to no other), (None, None) if the pair carries
    several flows or none with a first fragment."""
    rows = list(zip(df["src"], df["dst"], df["sport"], df["dport"]))
    flows = {}
    for s, d, sp, dp in rows:
        if not pd.isna(sp):
            flows.setdefault((s, d), set()).add((int(sp), int(dp)))
    out = []
    for s, d, sp, dp in rows:
        if pd.isna(sp):
            pair = flows.get((s, d), ())
            out.append(next(iter(pair)) if len(pair) == 1 else (None, None))
        else:
            out.append((int(sp), int(dp)))
    return out


def datagrams(capture_path, *, src=None, dst=None, sport=None, dport=None,
              reassembly_timeout_s: float = REASSEMBLY_TIMEOUT_S) -> pd.DataFrame:
    """One row per IPv4 UDP datagram (RFC 768) seen in a classic pcap capture (Ethernet, Linux SLL/SLL2 or raw IP;
    optionally gzip'd or xz'd), its fragments reassembled per RFC 791 by (src, dst, 17, IP id) and the module's
    id-reuse rule.  Rows in order of ``ts_first``; columns :data:`COLUMNS`:

    ts_first, ts_last (s): arrival of the datagram's first and last fragment to arrive (for a complete datagram,
    ts_last is when it became whole); src, dst (dotted quads); sport, dport, udp_len (bytes, UDP header included),
    from the offset-0 fragment, <NA> when it never appeared; ip_id; fragments_seen; payload_bytes_seen (bytes of IP
    payload over all fragments seen, UDP header included); complete (bool, see the module docstring);
    n_fragments_expected: ceil(udp_len / first fragment's length), 1 for an unfragmented datagram, <NA> without the
    first fragment.

    ``src``/``dst`` (address strings) and ``sport``/``dport`` (ints) keep only the matching datagrams: ports are those
    of the first fragment (a datagram without one is attributed to the only flow of its (src, dst) pair, if there is
    one flow; see ``_flow_ports``).  ``reassembly_timeout_s``: rule 3 of the id-reuse rule (s).
    Raises ``CaptureError`` for a file that is not a classic pcap or has an unsupported link type."""
    open_, done = {}, []
    for ts, s, d, ip_id, offset, mf, length, udp in _fragments(capture_path):
        key = (s, d, ip_id)
        dg = open_.get(key)
        if (dg is None or dg.complete or ts - dg.ts_first > reassembly_timeout_s
                or (offset == 0 and dg.first_len is not None)):
            if dg is not None:
                done.append(dg)
            dg = open_[key] = _Datagram(ts, s, d, ip_id)
        dg.add(ts, offset, mf, length, udp)
    done.extend(open_.values())
    df = pd.DataFrame([g.row() for g in done], columns=list(COLUMNS))
    df = df.astype({"ts_first": float, "ts_last": float, "src": object, "dst": object, "ip_id": np.int64,
                    "fragments_seen": np.int64, "payload_bytes_seen": np.int64, "complete": bool}
                   | dict.fromkeys(_INT_NA, "Int64"))
    df = df.sort_values(["ts_first", "ts_last"], kind="stable").reset_index(drop=True)
    keep = pd.Series(True, index=df.index)
    if src is not None:
        keep &= df["src"] == src
    if dst is not None:
        keep &= df["dst"] == dst
    if sport is not None or dport is not None:
        ports = _flow_ports(df)
        keep &= np.array([(sport is None or sp == int(sport)) and (dport is None or dp == int(dport))
                          for sp, dp in ports], dtype=bool)
    return df[keep].reset_index(drop=True)


def goodput_mbps(datagrams_df: pd.DataFrame, t0: float, t1: float) -> float:
    """UDP goodput in Mbit/s: the UDP data bytes (``udp_len`` - 8, RFC 768) of the complete datagrams whose last
    fragment arrived in [t0, t1] (s, the capture's clock, both ends included), times 8, divided by t1 - t0 and by 1e6.
    Raises ValueError unless t1 > t0."""
    if not t1 > t0:
        raise ValueError(f"goodput_mbps: empty window [{t0}, {t1}]")
    d = datagrams_df
    m = d["complete"].astype(bool) & (d["ts_last"] >= t0) & (d["ts_last"] <= t1)
    data_bytes = int((d.loc[m, "udp_len"].astype("int64") - 8).sum())
    return data_bytes * 8 / (t1 - t0) / 1e6


def summary(datagrams_df: pd.DataFrame) -> dict:
    """Counts of a :func:`datagrams` table: ``datagrams`` seen, ``complete``, ``incomplete`` (at least one fragment
    missing), ``loss_fraction`` = incomplete / datagrams (NaN without datagrams) and
    ``fragments_per_datagram_median`` (median of fragments_seen, NaN without datagrams).  Datagrams none of whose
    fragments reached the capture point cannot be seen, so they are not in these counts."""
    n = int(len(datagrams_df))
    c = int(datagrams_df["complete"].astype(bool).sum())
    return {"datagrams": n, "complete": c, "incomplete": n - c, "loss_fraction": (n - c) / n if n else math.nan,
            "fragments_per_datagram_median": float(datagrams_df["fragments_seen"].median()) if n else math.nan}
