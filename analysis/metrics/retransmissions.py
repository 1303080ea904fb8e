"""Retransmissions seen at the capture point.

A data segment (payload > 0) is a **retransmission** when its byte range [seq, seq+len) (unwrapped, see
``analysis.flows``) was already fully sent earlier in this direction at this capture point (RFC 9293 sec. 3.10.7.4
sequence space; union of all earlier segments' ranges). It is **spurious** when a later D-SACK block (RFC 2883 sec. 4,
``analysis.metrics.sack.dsack_mask``) covers its range, i.e. the receiver reports it got those bytes twice.
"""
from __future__ import annotations

import bisect

import numpy as np
import pandas as pd

from analysis.metrics.sack import dsack_mask


def retransmission_mask(data: pd.DataFrame) -> np.ndarray:
    """Boolean per data-direction packet (time order): a retransmission (definition in module docstring)."""
    s = data["seq_un"].to_numpy()
    e = data["end_un"].to_numpy()
    plen = data["payload_len"].to_numpy()
    out = np.zeros(len(data), dtype=bool)
    starts: list[int] = []   # disjoint, sorted covered intervals [starts[i], ends[i])
    ends: list[int] = []
    for i in range(len(s)):
        if plen[i] <= 0:
            continue
        a, b = int(s[i]), int(e[i])
        k = bisect.bisect_right(starts, a) - 1
        if k >= 0 and ends[k] >= b:
            out[i] = True
            continue
        # insert [a, b) and merge
        lo = bisect.bisect_left(ends, a)          # first interval that may touch
        hi = bisect.bisect_right(starts, b)       # intervals before hi may touch
        if lo < hi:
            a = min(a, starts[lo])
            b = max(b, ends[hi - 1])
        starts[lo:hi] = [a]
        ends[lo:hi] = [b]
    return out


def retransmissions(data: pd.DataFrame) -> int:
    """Number of retransmitted data segments, packets."""
    return int(retransmission_mask(data).sum())


def spurious_mask(data: pd.DataFrame, ack: pd.DataFrame) -> np.ndarray:
    """Boolean per data packet: a retransmission whose range a later D-SACK block covers."""
    rt = retransmission_mask(data)
    out = np.zeros(len(data), dtype=bool)
    if not rt.any() or len(ack) == 0:
        return out
    dm = dsack_mask(ack)
    if not dm.any():
        return out
    dts = ack["ts"].to_numpy()[dm]
    dl = ack["sack1_left_un"].to_numpy()[dm]
    dr = ack["sack1_right_un"].to_numpy()[dm]
    ts = data["ts"].to_numpy()
    s = data["seq_un"].to_numpy()
    e = data["end_un"].to_numpy()
    for i in np.flatnonzero(rt):
        out[i] = bool(np.any((dts >= ts[i]) & (dl <= s[i]) & (e[i] <= dr)))
    return out


def spurious_retransmissions(data: pd.DataFrame, ack: pd.DataFrame) -> int:
    """Number of spurious retransmissions (covered by a later D-SACK block), packets."""
    return int(spurious_mask(data, ack).sum())
