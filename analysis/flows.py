"""Flows of the per-packet table: 5-tuple keys, TCP data/ACK direction pairing, 32-bit sequence unwrap.

A *direction* is (src, sport, dst, dport, proto).  A TCP *connection* pairs a direction with its reverse; the
*data direction* is the one carrying more payload bytes, the *ack direction* its reverse (RFC 9293 sec. 3.4).
Sequence numbers are unwrapped modulo 2**32 relative to the first sequence number seen in the data direction
(captures may start anywhere), so byte offsets grow monotonically across a wrap.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.ingest.schema import MAX_SACK_BLOCKS, TCP, UDP

MOD = 1 << 32
HALF = 1 << 31


def signed32(x):
    """Map a modulo-2**32 difference to the signed range [-2**31, 2**31)."""
    return ((np.asarray(x, dtype=np.int64) + HALF) & (MOD - 1)) - HALF   # & (2**32 - 1) == floor-mod 2**32


def unwrap_seq(seq, base: int | None = None) -> np.ndarray:
    """Unwrap raw 32-bit sequence numbers (in packet order) to byte offsets relative to ``base``
    (default: the first value).  Each step is taken as the signed 32-bit difference to the previous value
    (RFC 9293 sec. 3.4 comparison arithmetic), so wraps and retransmissions below the front are handled."""
    s = np.asarray(seq, dtype=np.int64)
    if s.size == 0:
        return s.copy()
    if base is None:
        base = int(s[0])
    first = signed32(s[0] - base)
    steps = signed32(np.diff(s))
    return np.concatenate(([first], first + np.cumsum(steps))).astype(np.int64)


@dataclass
class Flow:
    """One flow.  For TCP: ``data`` / ``ack`` are the packets of the data and ACK directions (sorted by
    time) with unwrapped columns added; for UDP ``ack`` is empty."""
    proto: int
    src: str
    sport: int
    dst: str
    dport: int
    data: pd.DataFrame
    ack: pd.DataFrame


def _dir_key(df):
    return list(zip(df["src"], df["sport"], df["dst"], df["dport"], df["proto"]))


_DIR_COLS = ("src", "sport", "dst", "dport", "proto")


def _directions(df: pd.DataFrame, perm: np.ndarray | None = None) -> dict:
    """{(src, sport, dst, dport, proto): rows of that direction (df's order)}, directions in order of first packet.

    The same groups as ``df.groupby(pd.Series(_dir_key(df)), sort=False)`` -- keys as Python scalars (what iterating
    the columns gives), frames built the way pandas' splitter builds them (one take of the rows in group order,
    then a slice per group) -- without a Python tuple per packet: each column is factorised and the codes combined.
    A missing value in a key column takes that exact groupby.  ``perm``: group ``df.take(perm)`` instead (its index
    included), still with a single take of the table."""
    n = len(df)
    parts = []                     # (codes, number of distinct values) per key column
    for c in _DIR_COLS:
        v = df[c].to_numpy() if perm is None else df[c].to_numpy()[perm]
        if v.dtype.kind in "iu" and n and int(v.min()) >= 0 and int(v.max()) < (1 << 16):
            parts.append((v.astype(np.int64), 1 << 16))     # ports, protocol: their own codes
            continue
        cc, uniq = pd.factorize(v)
        if n and cc.min() < 0:     # NaN/None in a key: tuples group by equality/identity, leave it to pandas
            if perm is not None:
                return _directions(df.take(perm))
            keys = pd.Series(_dir_key(df), index=df.index)
            return {k: g for k, g in df.groupby(keys, sort=False)}
        parts.append((cc.astype(np.int64), max(len(uniq), 1)))
    code = np.zeros(n, dtype=np.int64)
    span = 1
    for cc, size in parts:         # one integer per distinct key tuple; renumbered before it could overflow
        if span * size >= (1 << 62):
            code = pd.factorize(code)[0].astype(np.int64)
            span = int(code.max()) + 1 if n else 1
        code = code * np.int64(size) + cc
        span *= size
    code = pd.factorize(code)[0].astype(np.int64)
    # code = group number in order of first appearance (factorize numbers values as they first occur)
    order = np.argsort(code, kind="stable")
    sc = code[order]
    starts = np.flatnonzero(np.concatenate(([True], sc[1:] != sc[:-1]))) if n else np.zeros(0, np.int64)
    ends = np.append(starts[1:], n)
    if perm is None:
        sdata = df.take(order)
        cols = [df[c].to_numpy() for c in _DIR_COLS]
    else:   # rows perm[order] of df, with the index df.take(perm).take(order) would have
        sdata = df.take(perm[order])
        sdata = sdata.set_axis(df.index.take(perm).take(order), axis=0)
        cols = [df[c].to_numpy()[perm] for c in _DIR_COLS]
    out = {}
    for a, b in zip(starts.tolist(), ends.tolist()):
        first = int(order[a])
        key = tuple(col[first:first + 1].tolist()[0] for col in cols)
        out[key] = sdata.iloc[a:b]
    return out


_COPY_ON_WRITE = int(pd.__version__.split(".")[0]) >= 3


def _add_unwrapped(data: pd.DataFrame, ack: pd.DataFrame):
    if not _COPY_ON_WRITE:   # pandas 2: slices of the table; pandas >= 3 copies on write by itself
        data = data.copy()
        ack = ack.copy()
    if len(data):
        base = int(data["seq"].iloc[0])
        data["seq_un"] = unwrap_seq(data["seq"].to_numpy(), base)
    else:
        base = int(ack["ack"].iloc[0]) if len(ack) else 0
        data["seq_un"] = np.zeros(0, dtype=np.int64)
    syn_data = ((data["flags"].to_numpy() & 0x02) != 0) & (data["payload_len"].to_numpy() > 0)
    if syn_data.any():   # RFC 9293 sec. 3.4: the SYN occupies ISN; data on a SYN (TCP Fast Open) is [ISN+1, ...)
        data["seq_un"] = data["seq_un"].to_numpy() + syn_data
    data["end_un"] = data["seq_un"] + data["payload_len"].astype(np.int64)
    if len(ack):
        has_ack = (ack["flags"].to_numpy() & 0x10) != 0
        a = ack["ack"].to_numpy().astype(np.int64)
        a_un = np.full(len(ack), -1, dtype=np.int64)
        if has_ack.any():
            a_un[has_ack] = unwrap_seq(a[has_ack], base)
            # RFC 9293 sec. 3.1: the acknowledgment field is meaningful only with the ACK bit; others stay -1
        ack["ack_un"] = a_un
        for i in range(1, MAX_SACK_BLOCKS + 1):
            for side in ("left", "right"):
                raw = ack[f"sack{i}_{side}"].to_numpy().astype(np.int64, copy=False)
                ack[f"sack{i}_{side}_un"] = np.where(raw >= 0, a_un + signed32(raw - a), np.int64(-1))
    else:
        ack["ack_un"] = np.zeros(0, dtype=np.int64)
    return data, ack


def split_flows(df: pd.DataFrame) -> list[Flow]:
    """Group the per-packet table into flows: one Flow per TCP connection (data direction = more payload
    bytes, ties: the direction seen first) and one per UDP direction.  Order: first packet time."""
    out: list[tuple[float, Flow]] = []
    if len(df) == 0:
        return []
    ts, pk = df["ts"].to_numpy(), df["pkt_no"].to_numpy()
    dts, dpk = np.diff(ts), np.diff(pk)
    perm = None
    if not (np.all(dts >= 0) and np.all((dts > 0) | (dpk >= 0))):   # not in (ts, pkt_no) order
        if ts.dtype.kind not in "iuf" or pk.dtype.kind not in "iu" or (ts.dtype.kind == "f" and np.isnan(ts).any()):
            df = df.sort_values(["ts", "pkt_no"], kind="stable")
        else:   # the permutation df.sort_values(["ts", "pkt_no"], kind="stable") applies (lexsort is stable)
            perm = np.lexsort((pk, ts))
    groups = _directions(df, perm)
    seen = set()
    for k, g in groups.items():
        if k in seen:
            continue
        src, sport, dst, dport, proto = k
        if proto == UDP:
            seen.add(k)
            empty = g.iloc[0:0].copy()
            out.append((g["ts"].iloc[0], Flow(UDP, src, sport, dst, dport, g if _COPY_ON_WRITE else g.copy(), empty)))
            continue
        if proto != TCP:
            continue
        rk = (dst, dport, src, sport, proto)
        seen.add(k)
        seen.add(rk)
        r = groups.get(rk, g.iloc[0:0])
        b1, b2 = int(g["payload_len"].sum()), int(r["payload_len"].sum())
        first = min(g["ts"].iloc[0], r["ts"].iloc[0] if len(r) else np.inf)
        if b2 > b1 or (b2 == b1 and len(r) and r["ts"].iloc[0] < g["ts"].iloc[0]):
            g, r = r, g
            src, sport, dst, dport = dst, dport, src, sport
        d, a = _add_unwrapped(g, r)
        out.append((first, Flow(TCP, src, sport, dst, dport, d, a)))
    out.sort(key=lambda x: x[0])
    return [f for _, f in out]
