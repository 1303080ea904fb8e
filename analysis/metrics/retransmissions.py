"""Retransmissions seen at the capture point.

A data segment (payload > 0) is a **retransmission** when its byte range [seq, seq+len) (unwrapped, see
``analysis.flows``) was already fully sent earlier in this direction at this capture point (RFC 9293 sec. 3.4
sequence space; union of all earlier segments' ranges). It is **spurious** when a later D-SACK block (RFC 2883 sec. 4,
``analysis.metrics.sack.dsack_mask``) covers its range, i.e. the receiver reports it got those bytes twice.
"""
from __future__ import annotations

import bisect

import numpy as np
import pandas as pd

from analysis.metrics.sack import dsack_mask


def retransmission_mask(data: pd.DataFrame) -> np.ndarray:
    """Boolean per data-direction packet (time order): a retransmission (definition in module docstring).

    The definition as a loop is :func:`_retransmission_mask_loop`.  With numba installed and a flow of at least
    ``NUMBA_MIN_SEGMENTS`` packets that same loop runs compiled (``interval_union_kernel``).  Otherwise the mask is
    computed without a per-packet loop: the byte ranges are cut at every segment edge into elementary pieces, each
    piece gets the index of the first segment covering it ("first coverer", a minimum over the segments spread
    down a sparse table), and a segment is a retransmission iff it is the first coverer of no piece, i.e. every
    byte of it was already covered by an earlier segment.  Inputs outside what a flow table holds (non-integer
    columns, or a segment with payload but end <= start) take the Python loop.  tests/test_metrics_vectorised_equal.py
    requires all three to agree with the frozen original."""
    s = data["seq_un"].to_numpy()
    e = data["end_un"].to_numpy()
    plen = data["payload_len"].to_numpy()
    if not (_is_int64_safe(s) and _is_int64_safe(e)):
        return _retransmission_mask_loop(s, e, plen)
    s = s.astype(np.int64, copy=False)
    e = e.astype(np.int64, copy=False)
    has = plen > 0
    if np.any(e[has] <= s[has]):
        return _retransmission_mask_loop(s, e, plen)
    out = np.zeros(len(data), dtype=bool)
    if len(data) >= NUMBA_MIN_SEGMENTS and have_numba():
        _NUMBA["kernel"](np.ascontiguousarray(s), np.ascontiguousarray(e), np.ascontiguousarray(has), out)
        return out
    rows = np.flatnonzero(has)
    if rows.size:
        out[rows] = ~_first_coverer_of_some_byte(s[rows], e[rows])
    return out


_NUMBA: dict = {}
NUMBA_MIN_SEGMENTS = 2000   # shorter flows: the numpy path takes a few ms, not worth importing numba


def have_numba() -> bool:
    """True if numba is importable (``retransmission_mask`` then runs the definition's loop compiled)."""
    if "kernel" not in _NUMBA:
        try:
            from analysis.metrics.interval_union_kernel import retransmission_kernel
            _NUMBA["kernel"] = retransmission_kernel
        except Exception:  # noqa: BLE001 - numba absent or broken: the numpy path
            _NUMBA["kernel"] = None
    return _NUMBA["kernel"] is not None


def _is_int64_safe(a: np.ndarray) -> bool:
    return a.dtype.kind == "i" or (a.dtype.kind == "u" and a.dtype.itemsize < 8)


def _first_coverer_of_some_byte(s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """For half-open ranges [s[i], e[i]) (s < e), in order: True where range i holds a byte no earlier range holds."""
    n = s.size
    edges = np.sort(np.concatenate((s, e)))    # == np.unique(...), without numpy 2's slow hash path
    edges = edges[np.concatenate(([True], edges[1:] != edges[:-1]))]
    lo = np.searchsorted(edges, s)          # range i = elementary pieces lo[i] .. hi[i]-1 (piece t = [edges[t], edges[t+1]))
    hi = np.searchsorted(edges, e)
    m = edges.size - 1                      # number of pieces (>= 1)
    length = hi - lo                        # >= 1
    lev = (np.frexp(length.astype(np.float64))[1] - 1).astype(np.int64)   # floor(log2(length)), exact below 2**53
    nlev = int(lev.max()) + 1
    idx = np.arange(n, dtype=np.int64)
    # tab[k, j] = smallest range index covering all of pieces j .. j + 2**k - 1 (n: none); each range is the union of
    # two such blocks of size 2**lev (they may overlap)
    tab = np.full((nlev, m), n, dtype=np.int64)
    np.minimum.at(tab, (lev, lo), idx)
    np.minimum.at(tab, (lev, hi - (np.int64(1) << lev)), idx)
    for k in range(nlev - 1, 0, -1):        # push every block down to its two halves
        h = 1 << (k - 1)
        top = tab[k]
        np.minimum(tab[k - 1], top, out=tab[k - 1])
        np.minimum(tab[k - 1, h:], top[:m - h], out=tab[k - 1, h:])
    first = tab[0]                          # first coverer of every piece
    mark = np.zeros(n + 1, dtype=bool)
    mark[first] = True
    return mark[:n]


def _retransmission_mask_loop(s, e, plen) -> np.ndarray:
    """The definition as a loop: disjoint sorted union of the earlier ranges, one bisect per segment."""
    out = np.zeros(len(s), dtype=bool)
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
    """Boolean per data packet: a retransmission whose range a later D-SACK block covers. A range retransmitted more
    than once has every such retransmission marked, although one D-SACK block reports one duplicate arrival (RFC
    2883 sec. 4): then the count is an upper bound."""
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
    rows = np.flatnonzero(rt)
    step = max(1, (1 << 20) // dts.size)    # a block of retransmissions x every D-SACK block, <= ~1 M cells
    for k in range(0, rows.size, step):
        i = rows[k:k + step]
        out[i] = ((dts[None, :] >= ts[i, None]) & (dl[None, :] <= s[i, None]) & (e[i, None] <= dr[None, :])).any(axis=1)
    return out


def spurious_retransmissions(data: pd.DataFrame, ack: pd.DataFrame) -> int:
    """Number of spurious retransmissions (covered by a later D-SACK block), packets."""
    return int(spurious_mask(data, ack).sum())
