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
    return ((np.asarray(x, dtype=np.int64) + HALF) % MOD) - HALF


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


def _add_unwrapped(data: pd.DataFrame, ack: pd.DataFrame):
    data = data.copy()
    ack = ack.copy()
    if len(data):
        base = int(data["seq"].iloc[0])
        data["seq_un"] = unwrap_seq(data["seq"].to_numpy(), base)
    else:
        base = int(ack["ack"].iloc[0]) if len(ack) else 0
        data["seq_un"] = np.zeros(0, dtype=np.int64)
    data["end_un"] = data["seq_un"] + data["payload_len"].astype(np.int64)
    if len(ack):
        has_ack = (ack["flags"].to_numpy() & 0x10) != 0
        a = ack["ack"].to_numpy().astype(np.int64)
        a_un = np.full(len(ack), -1, dtype=np.int64)
        if has_ack.any():
            a_un[has_ack] = unwrap_seq(a[has_ack], base)
            # RFC 9293 sec 3.10.7.4: ACK without the ACK bit carries no meaning; fill forward for SACK anchoring
        ack["ack_un"] = a_un
        for i in range(1, MAX_SACK_BLOCKS + 1):
            for side in ("left", "right"):
                raw = ack[f"sack{i}_{side}"].to_numpy().astype(np.int64)
                ok = raw >= 0
                un = np.full(len(ack), -1, dtype=np.int64)
                un[ok] = a_un[ok] + signed32(raw[ok] - a[ok])
                ack[f"sack{i}_{side}_un"] = un
    else:
        ack["ack_un"] = np.zeros(0, dtype=np.int64)
    return data, ack


def split_flows(df: pd.DataFrame) -> list[Flow]:
    """Group the per-packet table into flows: one Flow per TCP connection (data direction = more payload
    bytes, ties: the direction seen first) and one per UDP direction.  Order: first packet time."""
    out: list[tuple[float, Flow]] = []
    if len(df) == 0:
        return []
    df = df.sort_values(["ts", "pkt_no"], kind="stable")
    keys = pd.Series(_dir_key(df), index=df.index)
    groups = {k: g for k, g in df.groupby(keys, sort=False)}
    seen = set()
    for k, g in groups.items():
        if k in seen:
            continue
        src, sport, dst, dport, proto = k
        if proto == UDP:
            seen.add(k)
            empty = g.iloc[0:0].copy()
            out.append((g["ts"].iloc[0], Flow(UDP, src, sport, dst, dport, g.copy(), empty)))
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
