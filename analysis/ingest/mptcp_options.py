"""Multipath TCP handshakes in a capture: which TCP connections are subflows of which MPTCP connection.

RFC 8684 (MPTCP v1; RFC 6824 for v0), TCP option kind 30, subtypes read here:

* MP_CAPABLE (subtype 0, sect. 3.1) on the initial subflow's handshake. v1: the SYN carries no key (length 4), the
  SYN/ACK carries the server's key (12), the third ACK both keys (20; 22/24 with data); v0: SYN and SYN/ACK carry the
  sender's key (12), the third ACK both (20).
* MP_JOIN (subtype 1, sect. 3.2) on an additional subflow's SYN (length 12): backup flag B, address ID, the
  receiver's 32-bit token, the sender's random number.

A host's token is the most significant 32 bits of SHA-256 of its key (v1, sect. 3.2; SHA-1 in v0), so an MP_JOIN
SYN whose token is the server's token joins that server's connection. Only handshake packets are decoded: the option
bytes of every SYN and of every segment carrying MP_CAPABLE (captures with ``-s 128`` keep all TCP options).
"""
from __future__ import annotations

import hashlib
import struct

import pandas as pd

from analysis.ingest.dpkt_reader import _l3_offset, iter_tcp_options, open_records, parse_ip_header
from analysis.ingest.schema import TCP

MPTCP_KIND = 30
MP_CAPABLE, MP_JOIN = 0, 1
SYN, ACK = 0x02, 0x10

OPTION_COLUMNS = ["pkt_no", "ts", "src", "sport", "dst", "dport", "flags", "subtype", "version", "sender_key",
                  "receiver_key", "token", "addr_id", "backup"]
SUBFLOW_COLUMNS = ["conn", "subflow", "kind", "client", "client_port", "server", "server_port", "syn_ts", "version",
                   "addr_id", "backup", "server_token", "client_token"]


def mptcp_options(opts: bytes) -> list[dict]:
    """The MP_CAPABLE / MP_JOIN options among TCP option bytes (RFC 9293 sect. 3.1 option list: parsing stops at
    End of Option List, a length < 2 or an option running past the bytes). Each: subtype, version (MP_CAPABLE),
    sender_key / receiver_key (64-bit ints or None), token, addr_id, backup (MP_JOIN SYN), length."""
    found = []
    for kind, d in iter_tcp_options(opts):
        olen = len(d) + 2
        if kind == MPTCP_KIND and olen >= 3:
            sub = d[0] >> 4
            o = {"subtype": sub, "length": olen, "version": None, "sender_key": None, "receiver_key": None,
                 "token": None, "addr_id": None, "backup": None}
            if sub == MP_CAPABLE:
                o["version"] = d[0] & 0x0F
                if olen >= 12:
                    o["sender_key"] = struct.unpack_from("!Q", d, 2)[0]
                if olen >= 20:
                    o["receiver_key"] = struct.unpack_from("!Q", d, 10)[0]
                found.append(o)
            elif sub == MP_JOIN and olen == 12:   # the SYN form: token and random number
                o["backup"] = bool(d[0] & 0x01)
                o["addr_id"] = d[1]
                o["token"] = struct.unpack_from("!I", d, 2)[0]
                found.append(o)
    return found


def key_token(key: int, version: int = 1) -> int:
    """A key's token: the most significant 32 bits of SHA-256 (v1, RFC 8684 sect. 3.2) or SHA-1 (v0, RFC 6824
    sect. 3.2) of the 64-bit key in network byte order."""
    h = (hashlib.sha256 if version >= 1 else hashlib.sha1)(struct.pack("!Q", key)).digest()
    return struct.unpack_from("!I", h)[0]


def read_handshake_options(path) -> pd.DataFrame:
    """One row per MP_CAPABLE or MP_JOIN option on a SYN, or MP_CAPABLE on any segment, in capture ``path``
    (columns ``OPTION_COLUMNS``; keys as unsigned 64-bit ints, token 32-bit, absent values None)."""
    rows = []
    with open_records(path) as records:
        for n, ts, linktype, buf in records:
            off = _l3_offset(linktype, buf)
            if off is None:
                continue
            ip = parse_ip_header(buf, off)
            if ip is None or ip[3] != TCP:
                continue
            _ver, src, dst, _proto, _id, _len, l4, _tot = ip
            if len(buf) < l4 + 20:
                continue
            sport, dport = struct.unpack_from("!HH", buf, l4)
            hlen = (buf[l4 + 12] >> 4) * 4
            flags = buf[l4 + 13]
            if hlen <= 20:
                continue
            for o in mptcp_options(buf[l4 + 20:l4 + hlen]):
                if o["subtype"] == MP_JOIN and not flags & SYN:
                    continue
                rows.append([n, ts, src, sport, dst, dport, flags, o["subtype"], o["version"], o["sender_key"],
                             o["receiver_key"], o["token"], o["addr_id"], o["backup"]])
    # object columns keep 64-bit keys exact (a float column would round them) and absent values None
    df = pd.DataFrame(rows, columns=OPTION_COLUMNS, dtype=object)
    return df.astype({"pkt_no": "int64", "ts": "float64", "sport": "int32", "dport": "int32", "flags": "int16",
                      "subtype": "int8"})


def subflows(options: pd.DataFrame) -> pd.DataFrame:
    """MPTCP connections and their subflows from :func:`read_handshake_options` rows.

    conn numbers the MP_CAPABLE connections in the order of their SYNs; subflow 0 is the initial (MP_CAPABLE)
    subflow, 1.. the MP_JOIN subflows in SYN order. kind: "initial" | "join" | "join (unmatched)" (a join whose token
    matches no connection in the capture: conn is -1). client/server are the SYN's sender/receiver."""
    cols = SUBFLOW_COLUMNS
    if options.empty:
        return pd.DataFrame(columns=cols)
    o = options.sort_values("pkt_no", kind="stable")
    four = lambda r: (r.src, r.sport, r.dst, r.dport)  # noqa: E731
    conns = []   # dicts: 4-tuple (client side first), version, keys
    by_tuple = {}
    for r in o.itertuples(index=False):
        if r.subtype != MP_CAPABLE:
            continue
        syn, ack = bool(r.flags & SYN), bool(r.flags & ACK)
        if syn and not ack:
            key = four(r)
            if key not in by_tuple:
                by_tuple[key] = len(conns)
                conns.append({"tuple": key, "syn_ts": r.ts, "version": r.version, "client_key": None,
                              "server_key": None})
            if r.sender_key is not None:          # v0 SYN: the client's key
                conns[by_tuple[key]]["client_key"] = r.sender_key
        elif syn and ack:                         # SYN/ACK from the server: its key
            c = by_tuple.get((r.dst, r.dport, r.src, r.sport))
            if c is not None and r.sender_key is not None:
                conns[c]["server_key"] = r.sender_key
        else:                                     # third ACK (or first data): sender = client, receiver = server
            c = by_tuple.get(four(r))
            if c is not None:
                if r.sender_key is not None:
                    conns[c]["client_key"] = r.sender_key
                if r.receiver_key is not None and conns[c]["server_key"] is None:
                    conns[c]["server_key"] = r.receiver_key
    tokens = {}
    rows = []
    for i, c in enumerate(conns):
        v = c["version"] if c["version"] is not None else 1
        st = key_token(c["server_key"], v) if c["server_key"] is not None else None
        ct = key_token(c["client_key"], v) if c["client_key"] is not None else None
        if st is not None:
            tokens[st] = (i, "server")
        if ct is not None:
            tokens[ct] = (i, "client")
        cl, cp, sv, sp = c["tuple"]
        rows.append([i, 0, "initial", cl, cp, sv, sp, c["syn_ts"], c["version"], 0, False, st, ct])
    seen = set()
    nsub = {i: 1 for i in range(len(conns))}
    for r in o.itertuples(index=False):
        if r.subtype != MP_JOIN or (r.flags & ACK) or four(r) in seen:
            continue
        seen.add(four(r))
        hit = tokens.get(r.token)
        if hit is None:
            rows.append([-1, -1, "join (unmatched)", r.src, r.sport, r.dst, r.dport, r.ts, None, r.addr_id,
                         r.backup, None, None])
            continue
        i = hit[0]
        rows.append([i, nsub[i], "join", r.src, r.sport, r.dst, r.dport, r.ts, conns[i]["version"], r.addr_id,
                     r.backup, rows[i][11], rows[i][12]])
        nsub[i] += 1
    return pd.DataFrame(rows, columns=cols)
