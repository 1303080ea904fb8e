"""Packet reordering metrics: RFC 4737 (sections 3-5) and RFC 5236 (RD and RBD).

Input of the pure functions: the sequence numbers of the received packets **in arrival order**, as
numbered at the source (consecutive integers, as in the RFCs: 1, 2, 3, ...). Lost packets are simply
absent, i.e. they leave gaps. TCP segments are mapped to such packet numbers by :func:`tcp_reordering`.

Texts these functions were checked against (the session that last reviewed them could read only the
first page of each RFC; the definitions below come from the sources named, and the tests in
tests/test_reordering_rfc_examples.py transcribe them literally as oracles):

RFC 4737 (Morton et al. 2006), definitions as quoted from the RFC by third-party copies:
  * Type-P-Reordered (sec. 3): NextExp starts at (or below) the first sequence number; for each
    arrival s: if s >= NextExp it is in order and NextExp = s + 1, else (s < NextExp) it is reordered
    and NextExp is unchanged. Duplicates: "only the first to arrive is considered for further analysis".
  * Type-P-Reordered-Ratio-Stream (sec. 4.1): "R = (Count of packets with Type-P-Reordered=TRUE) /
    ( L ) * 100", "L is the total number of packets received out of the K packets sent. Recall that
    identical copies (duplicates) have been removed, so L <= K." Returned as the fraction
    ``reordered_ratio`` and as ``reordered_pct`` (= R).
  * Reordering extent (sec. 4.2): for a reordered packet with receive index i (position in the
    duplicate-free arrival order), e = i - j with j the earliest (smallest) receive index whose
    sequence number is larger, s[j] > s[i].
  * n-reordering (sec. 5): a packet is n-reordered iff s[j] > s[i] for all j with i-n <= j < i (all n
    immediately preceding arrivals exist and carry larger sequence numbers); counted for the given n
    (key ``n3_reordered`` when n == 3), ``n3_ratio`` = count / L.
  Not implemented: reordering gap, reordering-free runs, late-time and byte-offset metrics.

RFC 5236 (Jayasumana et al. 2008), RD and RBD, following the algorithm pseudo-code published by the
RFC's authors (CSU CNRL, "ALGORITHM FOR COMPUTING REORDER DENSITY (LATE/EARLY)" and "ALGORITHM TO
COMPUTE REORDER BUFFER-OCCUPACNY DENSITY"), statement by statement:
  * RD: "D = RI - S; # compute displacement" (D < 0 early, D > 0 late); "If (absolute(D) <= DT)
    # Apply threshold" the frequency FLE[D] is incremented, else "Discard S" (neither early nor late:
    the packet is treated as lost). Window of the "first unique DT+1 sequence numbers", buffer of early
    arrivals; when RI is in neither, "Next RI is the minimum among window and buffer contents"
    ("If (RI < m) RI = m; Else RI++"). Duplicates and packets below RI are skipped by
    get_next_arrival ("while (newS < RI or newS in buffer or newS in window)").
    "Normalize FLE to get RD": each frequency divided by their sum (the packets counted).
  * RBD: "The smallest element in window is taken as E to neglect lost packets"; an arrival S != E is
    early and buffered; S == E releases the buffered packets that became in order; after every
    packet taken from the window "B = number of occupied slots in buffer; FB[B]++"; "A sequence number
    <= E or present in window or buffer is duplicate" and is skipped. "Normalize FB to get RBD".
  Default thresholds DT = BT = 3 (the TCP duplicate-ACK threshold, RFC 5681); both are parameters.
"""
from __future__ import annotations

from collections import deque

import numpy as np
import pandas as pd

from analysis.errors import NoTrafficError
from analysis.flows import unwrap_seq  # noqa: F401 - one unwrap for the whole package (re-exported)

DEFAULT_DT = 3
DEFAULT_BT = 3
TCP_PROTO = 6


def _seq_array(seq) -> np.ndarray:
    s = np.asarray(seq).ravel()
    if s.size and not np.issubdtype(s.dtype, np.integer):
        if not np.all(np.isfinite(s.astype(float))) or np.any(s.astype(float) != np.round(s.astype(float))):
            raise ValueError("sequence numbers must be integers")
    return s.astype(np.int64)


def rfc4737(seq_in_arrival_order, n: int = 3) -> dict:
    """RFC 4737 sample metrics of one stream (packets). See the module docstring for definitions.

    Returns dict: received (L, distinct packets), duplicates, reordered (count), reordered_ratio
    (fraction), reordered_pct, extent_max, extent_mean (packets; 0 when nothing is reordered),
    extents (list, one per reordered packet, arrival order), n, n3_reordered (count of n-reordered
    packets for the given n; key name fixed to n3 when n == 3, else f"n{n}_reordered"), n3_ratio.
    """
    if int(n) != n or n < 1:
        raise ValueError("rfc4737: n must be a positive integer")
    s_all = _seq_array(seq_in_arrival_order)
    # keep the first copy of every sequence number, in arrival order
    _, first = np.unique(s_all, return_index=True)
    s = s_all[np.sort(first)]
    dups = int(s_all.size - s.size)
    L = int(s.size)
    # NextExp before arrival i is (max of s[0..i-1]) + 1, so s[i] is reordered iff s[i] < that max + 1,
    # i.e. s[i] < prefix max (no duplicates remain). The first arrival is never reordered.
    pmax = np.maximum.accumulate(s) if L else s
    prev_max = np.concatenate(([np.iinfo(np.int64).min], pmax[:-1])) if L else s
    reo = s < prev_max
    idx = np.flatnonzero(reo)
    # earliest j with s[j] > s[i] == first j where the (non-decreasing) prefix max exceeds s[i]
    j = np.searchsorted(pmax, s[idx], side="right")
    extents = (idx - j).astype(np.int64).tolist()
    reordered = int(idx.size)
    n_reo = 0
    cand = idx[idx >= n]
    if cand.size:
        win = np.lib.stride_tricks.sliding_window_view(s, n)   # win[k] = s[k..k+n-1]
        n_reo = int(np.count_nonzero(win[cand - n].min(axis=1) > s[cand]))
    key = "n3" if n == 3 else f"n{n}"
    return {
        "received": L,
        "duplicates": dups,
        "reordered": reordered,
        "reordered_ratio": reordered / L if L else 0.0,
        "reordered_pct": 100.0 * reordered / L if L else 0.0,
        "extent_max": max(extents) if extents else 0,
        "extent_mean": float(np.mean(extents)) if extents else 0.0,
        "extents": extents,
        "n": n,
        f"{key}_reordered": n_reo,
        f"{key}_ratio": n_reo / L if L else 0.0,
    }


def _normalise(freq: dict) -> dict:
    tot = sum(freq.values())
    return {k: (v / tot) for k, v in sorted(freq.items())} if tot else {}


def _initial_window(arrivals, size: int) -> deque:
    """The first ``size`` distinct sequence numbers taken from the iterator ``arrivals`` (RFC 5236 windows)."""
    window: deque = deque()
    for v in arrivals:
        if v not in window:
            window.append(v)
            if len(window) == size:
                break
    return window


def rfc5236_rd(seq_in_arrival_order, dt: int = DEFAULT_DT, *, counts: bool = False) -> dict:
    """RFC 5236 Reorder Density: {displacement D (packets): fraction of counted packets}.

    D = RI - S (receive index minus sequence number): D > 0 late, D < 0 early, 0 in order.
    ``dt``: displacement threshold DT (packets); a packet with |D| > DT, early or late, is discarded
    (not counted: treated as lost). ``counts=True`` returns the raw frequencies FLE[D] instead of the
    density (FLE[D] / sum of FLE). Follows the authors' pseudo-code (module docstring) exactly; the
    one liberty: RI starts at the smallest of the first DT+1 distinct arrivals instead of the literal
    "RI = 1". For streams numbered from 1 (all numbers >= 1) the two are identical: if 1 is in the window, both are 1;
    otherwise the pseudo-code's first step finds RI = 1 in neither window nor (empty) buffer and sets
    RI = min(window). The start also makes a stream numbered from any other origin work.

    Computed by a compiled loop (numba, when installed and the stream is long) that executes the same statements
    as the Python loop :func:`_rd_freq_py` (the fallback), on int64 values; tests/test_metrics_vectorised_equal.py
    requires both to give identical results.
    """
    if int(dt) != dt or dt < 0:
        raise ValueError("rfc5236_rd: DT must be a non-negative integer")
    s = _seq_array(seq_in_arrival_order)
    freq = _rd_freq(s, dt)
    return dict(sorted(freq.items())) if counts else _normalise(freq)


def rfc5236_rbd(seq_in_arrival_order, bt: int = DEFAULT_BT, *, counts: bool = False) -> dict:
    """RFC 5236 Reorder Buffer-occupancy Density: {occupancy B (packets): fraction of counted packets}.

    ``bt``: buffer-occupancy threshold BT (packets); window of BT+1 non-duplicate arrivals, the
    smallest of which is the next expected sequence number E (a packet not among them by then is
    treated as lost). B, the number of early packets held in the hypothetical buffer, is recorded once
    per packet taken from the window, after that packet was buffered or released the buffer.
    ``counts=True`` returns the raw frequencies FB[B] instead of the density (FB[B] / sum of FB).

    Computed by a compiled loop (numba, when installed and the stream is long) over the ranks of the sequence
    numbers (RBD only compares them), executing the statements of the Python loop :func:`_rbd_freq_py` (the
    fallback); tests/test_metrics_vectorised_equal.py requires both to give identical results.
    """
    if int(bt) != bt or bt < 0:
        raise ValueError("rfc5236_rbd: BT must be a non-negative integer")
    s = _seq_array(seq_in_arrival_order)
    freq = _rbd_freq(s, bt)
    return dict(sorted(freq.items())) if counts else _normalise(freq)


# ---------------------------------------------------------------- RFC 5236 loops: Python reference and compiled

def _rd_freq_py(s: np.ndarray, dt) -> dict:
    """FLE[D] of :func:`rfc5236_rd` by the authors' pseudo-code, in Python (the fallback and the definition)."""
    arrivals = iter(s.tolist())
    window = _initial_window(arrivals, dt + 1)  # Step 1: first DT+1 unique sequence numbers
    buffer: set = set()
    freq: dict = {}
    if not window:
        return {}
    ri = min(window)  # == the pseudo-code's "RI = 1" followed by its "RI not found" step (see docstring)

    def next_arrival():
        for v in arrivals:
            if not (v < ri or v in buffer or v in window):
                return v
        return None

    while window:
        if ri in buffer or ri in window:
            s = window.popleft()
            d = ri - s
            if abs(d) <= dt:
                freq[d] = freq.get(d, 0) + 1
                buffer.discard(ri)
                if d < 0:
                    buffer.add(s)
                ri += 1
            # else: displacement beyond threshold -> discard S
            new = next_arrival()
            if new is not None:
                window.append(new)
        else:
            cands = list(window) + list(buffer)
            m = min(cands)
            ri = m if ri < m else ri + 1
    return freq


def _rbd_freq_py(s: np.ndarray, bt) -> dict:
    """FB[B] of :func:`rfc5236_rbd` by the authors' pseudo-code, in Python (the fallback and the definition)."""
    arrivals = iter(s.tolist())
    window = _initial_window(arrivals, bt + 1)
    buffer: set = set()
    freq: dict = {}
    if not window:
        return {}
    while window:
        e = min(window)
        s = window.popleft()
        if s == e:
            while buffer:
                m = min(min(window), min(buffer)) if window else min(buffer)
                if m in buffer:
                    buffer.discard(m)
                else:
                    break
            e = min(window) if window else e
        else:
            buffer.add(s)
        b = len(buffer)
        freq[b] = freq.get(b, 0) + 1
        for v in arrivals:
            if not (v <= e or v in window or v in buffer):
                window.append(v)
                break
    return freq


_NUMBA: dict = {}
NUMBA_MIN_PACKETS = 2000  # shorter streams: the Python loop takes a few ms, not worth importing numba
_SAFE = 1 << 60           # int64 values within +-2**60: RI +- 1, RI - S and the clamped DT cannot overflow


def have_numba() -> bool:
    """True if numba is importable (the RFC 5236 loops are then compiled for long streams)."""
    if "rd" not in _NUMBA:
        try:
            from analysis.metrics import rfc5236_kernel
            _NUMBA["rd"] = rfc5236_kernel.rd_kernel
            _NUMBA["rbd"] = rfc5236_kernel.rbd_kernel
        except Exception:  # noqa: BLE001 - numba absent or broken: the Python loops
            _NUMBA["rd"] = None
    return _NUMBA["rd"] is not None


def _rd_freq(s: np.ndarray, dt, *, accel: bool | None = None) -> dict:
    """FLE[D] ({D: count}, unsorted) of a validated int64 stream. ``accel``: True = compiled loop (error without
    numba), False = Python loop, None = compiled when numba is installed and the stream is long."""
    if accel is None:
        accel = s.size >= NUMBA_MIN_PACKETS and have_numba()
    if not accel or s.size == 0:
        return _rd_freq_py(s, dt)
    if not have_numba():
        raise RuntimeError("numba is not installed")
    vmin, vmax = int(s.min()), int(s.max())
    if vmin < -_SAFE or vmax > _SAFE:
        return _rd_freq_py(s, dt)
    # a DT beyond the stream changes nothing: the window holds at most every distinct arrival (<= n) and
    # |D| = |RI - S| <= vmax + 1 - vmin (RI stays within [vmin, vmax + 1]); clamped, DT fits int64
    dt = min(int(dt), s.size + (vmax - vmin) + 2)
    dout = np.empty(s.size, np.int64)
    k = _NUMBA["rd"](s, dt, dout, vmax)
    if k < 0:
        raise RuntimeError("rfc5236_rd: the RFC 5236 loop cannot progress on this stream")
    d, c = np.unique(dout[:k], return_counts=True)
    return {int(a): int(b) for a, b in zip(d, c)}


def _rbd_freq(s: np.ndarray, bt, *, accel: bool | None = None) -> dict:
    """FB[B] ({B: count}) of a validated int64 stream; ``accel`` as for :func:`_rd_freq`."""
    if accel is None:
        accel = s.size >= NUMBA_MIN_PACKETS and have_numba()
    if not accel or s.size == 0:
        return _rbd_freq_py(s, bt)
    if not have_numba():
        raise RuntimeError("numba is not installed")
    u, r = np.unique(s, return_inverse=True)
    hist = np.zeros(s.size + 1, np.int64)
    bt = min(int(bt), s.size + 1)  # a window larger than the stream changes nothing; clamped, BT fits int64
    _NUMBA["rbd"](r.astype(np.int64).ravel(), int(u.size), bt, hist)
    nz = np.flatnonzero(hist)
    return {int(k): int(hist[k]) for k in nz}


# ---------------------------------------------------------------- TCP wrapper over the per-packet table

def _largest_flow(df: pd.DataFrame):
    need = {"src", "dst", "sport", "dport", "seq", "payload_len", "ts"}
    missing = need - set(df.columns)
    if missing:
        raise ValueError(f"tcp_reordering: packet table lacks columns {sorted(missing)}")
    d = df
    if "proto" in d.columns:
        d = d[d["proto"] == TCP_PROTO]
    d = d[d["payload_len"] > 0]
    if d.empty:
        raise NoTrafficError("no TCP data segments in the capture")
    key = ["src", "dst", "sport", "dport"]
    sizes = d.groupby(key, sort=True)["payload_len"].sum()
    best = sizes.idxmax()
    return best, d


def _flow_rows(d: pd.DataFrame, flow) -> pd.DataFrame:
    src, dst, sport, dport = flow
    m = (d["src"] == src) & (d["dst"] == dst) & (d["sport"] == sport) & (d["dport"] == dport)
    return d[m].sort_values("ts", kind="stable")


_SEG_COLS = ("src", "dst", "sport", "dport", "seq", "payload_len", "ts")
_KEY_COLS = ("src", "dst", "sport", "dport")


def _data_mask(df: pd.DataFrame) -> np.ndarray:
    """Rows of ``df`` that ``_largest_flow`` keeps (TCP data segments), same checks and errors."""
    need = {"src", "dst", "sport", "dport", "seq", "payload_len", "ts"}
    missing = need - set(df.columns)
    if missing:
        raise ValueError(f"tcp_reordering: packet table lacks columns {sorted(missing)}")
    m = df["payload_len"].to_numpy() > 0
    if "proto" in df.columns:
        m &= df["proto"].to_numpy() == TCP_PROTO
    if not m.any():
        raise NoTrafficError("no TCP data segments in the capture")
    return m


def _data_segment_arrays(df: pd.DataFrame) -> dict:
    """The columns of :data:`_SEG_COLS` over the TCP data segments (payload > 0) of ``df``, in ``df``'s order, as
    numpy arrays (the rows ``_largest_flow`` keeps, same checks and errors, without copying the whole table)."""
    m = _data_mask(df)
    return {c: df[c].to_numpy()[m] for c in _SEG_COLS}


def _by_ts(seg: dict, rows: np.ndarray) -> dict:
    """Rows ``rows`` of ``seg`` sorted by ts (stable, NaN last: ``sort_values("ts", kind="stable")``)."""
    rows = rows[np.argsort(seg["ts"][rows], kind="stable")]
    return {c: v[rows] for c, v in seg.items()}


def _constant(a: np.ndarray) -> bool:
    """Every element equals the first, which is a valid key value (not None/NaN)."""
    v = a[0]
    if v is None or (isinstance(v, float) and v != v):
        return False
    return bool(np.all(a == v))


def _largest_flow_arrays(df: pd.DataFrame):
    """(flow key, its data segments sorted by ts) -- :func:`_largest_flow` + :func:`_flow_rows` on arrays: payload
    bytes per (src, dst, sport, dport) summed over groups in sorted key order, the first largest wins (idxmax)."""
    seg = _data_segment_arrays(df)
    n = seg["ts"].size
    if n and all(_constant(seg[c]) for c in _KEY_COLS):   # one connection direction only (the common case)
        return tuple(seg[c][0] for c in _KEY_COLS), _by_ts(seg, np.arange(n))
    code = np.zeros(n, dtype=np.int64)
    ok = np.ones(n, dtype=bool)
    for c in _KEY_COLS:           # lexicographic rank of the key, one column at a time (pandas' sorted groups)
        cc, uniq = pd.factorize(seg[c], sort=True)
        ok &= cc >= 0             # a missing key value: the row belongs to no group (groupby dropna)
        code = pd.factorize(code * np.int64(max(len(uniq), 1)) + np.maximum(cc, 0), sort=True)[0].astype(np.int64)
    if not ok.all():
        if not ok.any():          # no group at all: the pandas path raises what it raises
            flow, d = _largest_flow(df)
            return flow, _data_segment_arrays_of(_flow_rows(d, flow))
        code = np.where(ok, code, -1)
        code = pd.factorize(code, sort=True)[0].astype(np.int64) - 1   # -1 stays lowest; renumber the rest
    good = code >= 0
    sums = np.zeros(int(code.max()) + 1, dtype=np.int64)
    np.add.at(sums, code[good], seg["payload_len"][good].astype(np.int64))
    best = int(np.argmax(sums))
    rows = np.flatnonzero(code == best)
    r = int(rows[0])
    flow = tuple(seg[c][r] for c in _KEY_COLS)
    return flow, _by_ts(seg, rows)


def _data_segment_arrays_of(d: pd.DataFrame) -> dict:
    return {c: d[c].to_numpy() for c in _SEG_COLS}


def _flow_arrays(df: pd.DataFrame, flow) -> dict | None:
    """The data segments of ``flow`` in ``df`` sorted by ts (None when there are none); ports compared first, the
    addresses only on the rows left (numpy's element-wise == on the object column, as pandas' == compares)."""
    src, dst, sport, dport = flow
    rows = np.flatnonzero(_data_mask(df) & (df["sport"].to_numpy() == sport) & (df["dport"].to_numpy() == dport))
    if rows.size:
        rows = rows[np.asarray(df["src"].to_numpy()[rows] == src, dtype=bool)
                    & np.asarray(df["dst"].to_numpy()[rows] == dst, dtype=bool)]
    if rows.size == 0:
        return None
    seg = {c: df[c].to_numpy()[rows] for c in ("seq", "payload_len", "ts")}
    return _by_ts(seg, np.arange(rows.size))


def tcp_reordering(receiver_df: pd.DataFrame, sender_df: pd.DataFrame | None = None,
                   n: int = 3, dt: int = DEFAULT_DT, bt: int = DEFAULT_BT) -> dict:
    """Reordering of the data segments of the largest TCP flow (by payload bytes) of ``receiver_df``.

    Columns used: src, dst, sport, dport, seq (raw 32-bit), payload_len, ts (and proto when present).

    TCP adaptation (the RFCs evaluate test streams whose packets carry unique source sequence numbers
    1, 2, 3, ...; TCP segments do not, so this mapping is ours, not the RFCs'):
    * a packet is a data segment (payload > 0) of the flow, in the receiver capture's order (ts);
    * its packet number is the rank of its unwrapped first-byte sequence number (unwrapped relative to
      the flow's first data segment at the receiver) among all distinct first-byte sequence numbers the
      sender sent (``sender_df``), or, without a sender capture, among all distinct ones the receiver
      capture holds. TCP sends new data in sequence order, so this is the order of first transmission.
      With a sender capture, a segment that never reached the receiver leaves a gap in the numbering,
      as a lost packet does in the RFCs (RFC 5236's RD/RBD depend on the gaps; RFC 4737's metrics do
      not); numbering only the received segments would shift every later number and change RD/RBD.
      Without one, a segment is known only by the copies the receiver saw (see below);
    * a retransmitted segment is one TCP sequence number carried by two or more packets, which the
      RFCs' numbering cannot express, so such segments are not evaluated at all (no copy), and their
      numbers stay as gaps (handled like lost packets):
      - with ``sender_df`` (capture at or near the sender): only segments the sender sent exactly once
        (that seq and length once, and no other segment starting at that seq) are evaluated ->
        ``basis = "sender-filtered"``;
      - without it: every sequence number the receiver capture holds more than once is excluded, all
        copies -> ``basis = "receiver-only"``; a retransmission whose first copy was lost before the
        receiver's capture point arrives once, is evaluated, and looks reordered (late) although the
        network did not reorder it, so this basis over-counts reordering when there is loss.
    * a retransmission re-segmented at other boundaries adds sequence numbers that were never first
      transmissions: extra gaps (more "lost" packets for RD/RBD).
    Returns :func:`rfc4737` results (over the evaluated segments: ``received`` = L) plus rd, rbd
    (RFC 5236 densities, keys in packets), dt, bt, flow, segments (all data segments of the flow in the
    receiver capture), basis.
    """
    flow, rx = _largest_flow_arrays(receiver_df)
    base = int(rx["seq"][0])
    rx_seq = unwrap_seq(rx["seq"], base)
    rx_len = rx["payload_len"].astype(np.int64)
    if sender_df is not None:
        tx = _flow_arrays(sender_df, flow)
        if tx is None:
            _largest_flow(sender_df)   # what the sender check raised first (no data, no usable flow key)
            raise NoTrafficError("the sender capture holds no data segment of the receiver's largest TCP flow")
        tx_seq = unwrap_seq(tx["seq"], base)
        tx_len = tx["payload_len"].astype(np.int64)
        # sent exactly once: the only segment starting at its seq (then also its (seq, len) pair is unique);
        # a received segment is evaluated when its (seq, len) is such a segment of the sender
        u, first, cnt = np.unique(tx_seq, return_index=True, return_counts=True)
        pos = np.minimum(np.searchsorted(u, rx_seq), max(u.size - 1, 0))
        keep = (u[pos] == rx_seq) & (cnt[pos] == 1) & (tx_len[first[pos]] == rx_len)
        basis = "sender-filtered"
    else:
        u, inv, cnt = np.unique(rx_seq, return_inverse=True, return_counts=True)
        keep = cnt[inv.ravel()] == 1
        basis = "receiver-only"
    kept = rx_seq[keep]
    if kept.size == 0:
        raise NoTrafficError("no TCP data segment left to evaluate after excluding retransmissions")
    # source numbering: every distinct first-byte sequence number the sender sent (or, receiver-only,
    # the receiver saw) is one packet, so segments not evaluated or lost leave gaps
    numbering = u   # == np.unique(tx_seq if sender_df is not None else rx_seq), computed above
    idx = np.searchsorted(numbering, kept) + 1   # packet number, 1-based, in arrival order
    res = rfc4737(idx, n=n)
    res["rd"] = rfc5236_rd(idx, dt=dt)
    res["rbd"] = rfc5236_rbd(idx, bt=bt)
    res["dt"] = dt
    res["bt"] = bt
    res["flow"] = {"src": flow[0], "dst": flow[1], "sport": int(flow[2]), "dport": int(flow[3])}
    res["segments"] = int(rx_seq.size)
    res["basis"] = basis
    return res
