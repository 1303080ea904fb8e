"""Packet loss rate, percent.

* :func:`loss_pct` -- from counts: 100 * (sent - received) / sent.
* :func:`loss_pct_from_seq` -- from sequence-number gaps of packet indices (e.g. RTP/iperf3-UDP
  sequence numbers, or TCP segment indices): expected = max - min + 1, received = number of distinct
  sequence numbers in [min, max]; duplicates are not counted twice. Packets lost before the first or
  after the last received one cannot be seen by this method.
"""
from __future__ import annotations

import numpy as np


def loss_pct(sent: int, received: int) -> float:
    """Loss rate in % from packet counts ``sent`` and ``received`` (packets)."""
    if sent is None or received is None or sent < 0 or received < 0:
        raise ValueError("loss_pct: packet counts must be non-negative integers")
    if sent == 0:
        raise ValueError("loss_pct: no packets sent; loss rate is undefined")
    if received > sent:
        raise ValueError(f"loss_pct: received ({received}) exceeds sent ({sent}); count duplicates once")
    return 100.0 * (sent - received) / sent


def loss_pct_from_seq(seq) -> dict:
    """Loss from gaps in packet sequence numbers (packets). Returns dict(expected, received, lost, loss_pct)."""
    s = np.asarray(seq).ravel()
    if s.size == 0:
        raise ValueError("loss_pct_from_seq: no sequence numbers given")
    s = s.astype(np.int64)
    u = np.unique(s)
    expected = int(u[-1] - u[0] + 1)
    received = int(u.size)
    lost = expected - received
    return {"expected": expected, "received": received, "lost": lost, "loss_pct": 100.0 * lost / expected}
