"""FROZEN reference copies of the metric implementations as they were before vectorising (issue 7).

Imported only by tests/test_metrics_vectorised_equal.py, which requires the vectorised functions in ``analysis`` to
return identical results (same dtypes, same values, NaN in the same places) for every input.  Do not edit these
functions: they are the oracle.  Copied verbatim (2026-11-21) from analysis/flows.py, analysis/metrics/sack.py,
analysis/metrics/retransmissions.py, analysis/metrics/rtt.py and analysis/metrics/reordering.py; only the imports
were merged (every function here calls the copies in this file, never the package's new code).
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.errors import NoTrafficError
from analysis.ingest.schema import MAX_SACK_BLOCKS, TCP, UDP
# Functions the vectorising left unchanged (identical source, no changed callees) are the live ones, not copies.
from analysis.metrics.reordering import (_flow_rows, _initial_window, _largest_flow, _normalise,  # noqa: F401
                                         _seq_array, rfc4737)
from analysis.metrics.rtt import summary_ms, ts_rtt_ms  # noqa: F401
from analysis.metrics.sack import dsack_blocks, dsack_mask, sack_acks, sack_blocks  # noqa: F401


# ==================================================================================================== analysis/flows.py

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


# ==================================================================================================== analysis/metrics/sack.py

# ==================================================================================================== analysis/metrics/retransmissions.py

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


# ==================================================================================================== analysis/metrics/rtt.py

def ack_rtt_ms(data: pd.DataFrame, ack: pd.DataFrame) -> np.ndarray:
    """RTT samples with Karn's rule, ms (time order of the ACKs)."""
    if len(data) == 0 or len(ack) == 0:
        return np.zeros(0)
    has = ((ack["flags"].to_numpy() & 0x10) != 0) & (ack["ack_un"].to_numpy() >= 0)
    ats = ack["ts"].to_numpy()[has]
    aun = ack["ack_un"].to_numpy()[has]
    if len(ats) == 0:
        return np.zeros(0)
    cm = np.maximum.accumulate(aun)
    plen = data["payload_len"].to_numpy()
    rt = retransmission_mask(data)
    s = data["seq_un"].to_numpy()
    e = data["end_un"].to_numpy()
    ts = data["ts"].to_numpy()
    # Karn: exclude segments overlapping any retransmitted range
    bad = rt.copy()
    if rt.any():
        rs, re_ = s[rt], e[rt]
        order = np.argsort(rs)
        rs, re_ = rs[order], re_[order]
        remax = np.maximum.accumulate(re_)
        k = np.searchsorted(rs, e, side="left")  # retrans ranges starting before segment end
        bad |= (k > 0) & (remax[np.maximum(k - 1, 0)] > s)
    cand = np.flatnonzero((plen > 0) & ~bad)
    if len(cand) == 0:
        return np.zeros(0)
    j = np.maximum(np.searchsorted(cm, e[cand], side="left"), np.searchsorted(ats, ts[cand], side="left"))
    ok = j < len(ats)
    cand, j = cand[ok], j[ok]
    # one sample per ACK: the latest-sent segment it covers
    samples = {}
    for i, jj in zip(cand, j):
        samples[int(jj)] = (ats[jj] - ts[i]) * 1000.0
    return np.array([samples[k] for k in sorted(samples)], dtype=float)


# ==================================================================================================== analysis/metrics/reordering.py

DEFAULT_DT = 3
DEFAULT_BT = 3
TCP_PROTO = 6


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
    """
    if int(dt) != dt or dt < 0:
        raise ValueError("rfc5236_rd: DT must be a non-negative integer")
    arrivals = iter(_seq_array(seq_in_arrival_order).tolist())
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
    return dict(sorted(freq.items())) if counts else _normalise(freq)


def rfc5236_rbd(seq_in_arrival_order, bt: int = DEFAULT_BT, *, counts: bool = False) -> dict:
    """RFC 5236 Reorder Buffer-occupancy Density: {occupancy B (packets): fraction of counted packets}.

    ``bt``: buffer-occupancy threshold BT (packets); window of BT+1 non-duplicate arrivals, the
    smallest of which is the next expected sequence number E (a packet not among them by then is
    treated as lost). B, the number of early packets held in the hypothetical buffer, is recorded once
    per packet taken from the window, after that packet was buffered or released the buffer.
    ``counts=True`` returns the raw frequencies FB[B] instead of the density (FB[B] / sum of FB).
    """
    if int(bt) != bt or bt < 0:
        raise ValueError("rfc5236_rbd: BT must be a non-negative integer")
    arrivals = iter(_seq_array(seq_in_arrival_order).tolist())
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
    return dict(sorted(freq.items())) if counts else _normalise(freq)


# ---------------------------------------------------------------- TCP wrapper over the per-packet table

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
    flow, d = _largest_flow(receiver_df)
    rx = _flow_rows(d, flow)
    base = int(rx["seq"].iloc[0])
    rx_seq = unwrap_seq(rx["seq"].to_numpy(), base)
    rx_len = rx["payload_len"].to_numpy().astype(np.int64)
    if sender_df is not None:
        _, sd = _largest_flow(sender_df)
        tx = _flow_rows(sd, flow)
        if tx.empty:
            raise NoTrafficError("the sender capture holds no data segment of the receiver's largest TCP flow")
        tx_seq = unwrap_seq(tx["seq"].to_numpy(), base)
        tx_len = tx["payload_len"].to_numpy().astype(np.int64)
        pairs = pd.Series(1, index=pd.MultiIndex.from_arrays([tx_seq, tx_len])).groupby(level=[0, 1]).sum()
        once_pairs = set(pairs[pairs == 1].index.tolist())
        start_counts = pd.Series(tx_seq).value_counts()
        once = {p for p in once_pairs if start_counts[p[0]] == 1}
        keep = np.array([(a, b) in once for a, b in zip(rx_seq.tolist(), rx_len.tolist())], dtype=bool)
        basis = "sender-filtered"
    else:
        vc = pd.Series(rx_seq).value_counts()
        keep = (vc.reindex(rx_seq).to_numpy() == 1)
        basis = "receiver-only"
    kept = rx_seq[keep]
    if kept.size == 0:
        raise NoTrafficError("no TCP data segment left to evaluate after excluding retransmissions")
    # source numbering: every distinct first-byte sequence number the sender sent (or, receiver-only,
    # the receiver saw) is one packet, so segments not evaluated or lost leave gaps
    numbering = np.unique(tx_seq if sender_df is not None else rx_seq)
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

