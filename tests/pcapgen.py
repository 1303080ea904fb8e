"""Build small pcap/pcapng files with dpkt for tests (answers known by construction).

API::

    pkts = [tcp("10.0.0.1", 1000, "10.0.0.2", 5201, seq=1, ack=1, flags="A", payload=100,
                ts_opt=(tsval, tsecr), sack=[(l, r)], t=0.001),
            udp("10.0.0.1", 4000, "10.0.0.2", 5000, payload=50, t=0.002)]
    write_pcap(path, pkts, link="eth"|"sll"|"sll2"|"raw", fmt="pcap"|"pcapng", snaplen=None)

Each packet is a ``(t, ip_bytes)`` tuple; addresses containing ':' give IPv6.  ``payload`` is a byte count
(zero bytes) or bytes.  ``flags`` is a string over "FSRPAUEC" or an int.
"""
from __future__ import annotations

import ipaddress
import struct

import dpkt

_FLAG = {"F": 0x01, "S": 0x02, "R": 0x04, "P": 0x08, "A": 0x10, "U": 0x20, "E": 0x40, "C": 0x80}


def tcp_options(mss=None, wscale=None, sack_permitted=False, ts_opt=None, sack=None, raw=b"") -> bytes:
    """Encode TCP options (NOP-padded to a multiple of 4 bytes)."""
    o = b""
    if mss is not None:
        o += struct.pack("!BBH", 2, 4, mss)
    if wscale is not None:
        o += struct.pack("!BBBB", 1, 3, 3, wscale)
    if sack_permitted:
        o += b"\x01\x01\x04\x02"
    if ts_opt is not None:
        o += b"\x01\x01" + struct.pack("!BBII", 8, 10, ts_opt[0], ts_opt[1])
    if sack:
        o += b"\x01\x01" + struct.pack("!BB", 5, 2 + 8 * len(sack)) + b"".join(
            struct.pack("!II", l % 2**32, r % 2**32) for l, r in sack)
    o += raw
    o += b"\x01" * (-len(o) % 4)
    return o


def _ip(src, dst, proto, l4: bytes, ip_id=1):
    if ":" in src:
        h = struct.pack("!IHBB", 6 << 28, len(l4), proto, 64)
        return h + ipaddress.IPv6Address(src).packed + ipaddress.IPv6Address(dst).packed + l4
    ip = dpkt.ip.IP(src=ipaddress.IPv4Address(src).packed, dst=ipaddress.IPv4Address(dst).packed,
                    p=proto, id=ip_id, ttl=64, data=l4)
    ip.len = 20 + len(l4)
    return bytes(ip)


def tcp(src, sport, dst, dport, seq=0, ack=0, flags="A", payload=0, win=65535, t=0.0, ip_id=1, **opts):
    """A TCP packet ``(t, ip_bytes)``; ``opts`` go to :func:`tcp_options`."""
    data = bytes(payload) if isinstance(payload, int) else payload
    fl = flags if isinstance(flags, int) else sum(_FLAG[c] for c in flags)
    o = tcp_options(**opts)
    hdr = struct.pack("!HHIIBBHHH", sport, dport, seq % 2**32, ack % 2**32, ((20 + len(o)) // 4) << 4, fl, win, 0, 0)
    return (t, _ip(src, dst, 6, hdr + o + data, ip_id))


def udp(src, sport, dst, dport, payload=0, t=0.0, ip_id=1):
    """A UDP packet ``(t, ip_bytes)``."""
    data = bytes(payload) if isinstance(payload, int) else payload
    return (t, _ip(src, dst, 17, struct.pack("!HHHH", sport, dport, 8 + len(data), 0) + data, ip_id))


def frame(ip_bytes: bytes, link: str) -> bytes:
    """Wrap IP bytes in a link-layer header: eth, sll, sll2 or raw."""
    etype = 0x86DD if ip_bytes[0] >> 4 == 6 else 0x0800
    if link == "eth":
        return b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01" + struct.pack("!H", etype) + ip_bytes
    if link == "sll":
        return struct.pack("!HHH8sH", 0, 1, 6, b"\x02\x00\x00\x00\x00\x01\x00\x00", etype) + ip_bytes
    if link == "sll2":
        return struct.pack("!HHIHBB8s", etype, 0, 2, 1, 0, 6, b"\x02\x00\x00\x00\x00\x01\x00\x00") + ip_bytes
    if link == "raw":
        return ip_bytes
    raise ValueError(link)


LINKTYPES = {"eth": 1, "sll": 113, "sll2": 276, "raw": 101}


def write_pcap(path, pkts, link="eth", fmt="pcap", snaplen=None, t0=1_700_000_000.0):
    """Write ``pkts`` (list of ``(t, ip_bytes)``) to ``path``; ``snaplen`` truncates captured bytes."""
    with open(path, "wb") as f:
        if fmt == "pcap":
            w = dpkt.pcap.Writer(f, linktype=LINKTYPES[link], snaplen=snaplen or 65535, nano=True)
        else:
            w = dpkt.pcapng.Writer(f, linktype=LINKTYPES[link], snaplen=snaplen or 65535)
        for t, ipb in pkts:
            fr = frame(ipb, link)
            cap = fr[:snaplen] if snaplen else fr
            if fmt == "pcap":
                w.writepkt_time(cap, t0 + t) if hasattr(w, "writepkt_time") else w.writepkt(cap, t0 + t)
            else:
                w.writepkt(cap, ts=t0 + t)
    return path
