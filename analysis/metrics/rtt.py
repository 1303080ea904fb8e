"""Round-trip time samples at the capture point, ms.

* ``ack_rtt_ms``: data segment -> first later ACK of the reverse direction whose cumulative ACK covers the
  segment's end (RFC 9293 sec. 3.4). Karn's rule (Karn & Partridge 1987; RFC 6298 sec. 3): segments that are
  retransmissions, or whose bytes are retransmitted at any time, give no sample. One sample per ACK: from the
  latest-sent of the segments it newly acknowledges that Karn's rule keeps (when the latest-sent one was
  retransmitted, an earlier one it also newly acknowledges). RFC 6298 excludes the retransmitted segments only, and
  so does this: an ACK that repairs a loss and also covers segments sent before the repair gives a sample from one
  of them, whose time includes the recovery (Linux's own estimator, ``tcp_clean_rtx_queue``, takes no sequence
  sample from an ACK that covers any retransmitted data).
* ``ts_rtt_ms``: RFC 7323 sec. 4: an ACK whose TSecr echoes a TSval of the data direction gives
  ack time - time of the first data-direction segment carrying that TSval (first ACK echoing each TSval).
The time is measured at the capture point (so it is the RTT from the capture point to the receiver and back).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.metrics.retransmissions import retransmission_mask


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
    # one sample per ACK: the latest-sent segment it covers (cand is increasing: the last candidate per ACK)
    if len(j) == 0:
        return np.array([], dtype=float)
    acks, last_rev = np.unique(j[::-1], return_index=True)
    seg = cand[len(j) - 1 - last_rev]
    return ((ats[acks] - ts[seg]) * 1000.0).astype(float)


def ts_rtt_ms(data: pd.DataFrame, ack: pd.DataFrame) -> np.ndarray:
    """TSval/TSecr echo RTT samples (RFC 7323), ms."""
    d = data[data["tsval"] >= 0]
    a = ack[(ack["tsecr"] >= 0) & ((ack["flags"] & 0x10) != 0)]   # RFC 7323 sec. 3.2: TSecr 0 is valid with ACK
    if len(d) == 0 or len(a) == 0:
        return np.zeros(0)
    first_sent = d.groupby("tsval", sort=False)["ts"].min()
    a = a.drop_duplicates("tsecr", keep="first")
    t = a["tsecr"].map(first_sent)
    ok = t.notna().to_numpy() & (a["ts"].to_numpy() >= t.fillna(np.inf).to_numpy())
    return (a["ts"].to_numpy()[ok] - t.to_numpy()[ok]) * 1000.0


def summary_ms(samples) -> dict:
    """{"median", "mean", "p95", "n"} of RTT samples in ms (nan when there are none)."""
    x = np.asarray(samples, dtype=float)
    if x.size == 0:
        return {"median": float("nan"), "mean": float("nan"), "p95": float("nan"), "n": 0}
    return {"median": float(np.median(x)), "mean": float(x.mean()), "p95": float(np.percentile(x, 95)), "n": int(x.size)}
