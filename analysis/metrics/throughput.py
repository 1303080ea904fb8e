"""Goodput and raw throughput of a flow, Mbit/s.

Definitions (this project):
* **goodput**: unique transport payload bytes that passed the capture point in the window, i.e. for TCP the
  bytes of new sequence space (bytes of data segments beyond everything the data direction sent before;
  retransmitted bytes are not counted again), times 8, divided by the window length; for UDP every payload
  byte (UDP has no retransmissions) — Mbit/s = 1e6 bit/s.
* **raw throughput**: all transport payload bytes in the window (retransmissions included) times 8 / window.
The window defaults to [first packet, last packet] of the data direction.
"""
from __future__ import annotations

import numpy as np
import pandas as pd



def new_bytes(data: pd.DataFrame) -> np.ndarray:
    """Per data-direction packet: bytes of sequence space beyond the highest end any earlier packet reached (bytes):
    "new sequence space" as the module docstring defines goodput. A packet that fills a gap below that front counts
    0, so where a capture point sees gaps (upstream losses, reordering) this counts bytes first seen in order, not
    every byte seen once. Needs ``seq_un``/``end_un`` (``analysis.flows``); for UDP use ``payload_len``."""
    if "seq_un" not in data:
        return data["payload_len"].to_numpy().astype(np.int64)
    s = data["seq_un"].to_numpy()
    e = data["end_un"].to_numpy()
    front = np.maximum.accumulate(np.concatenate(([s[0] if len(s) else 0], e)))[:-1] if len(s) else e
    front = np.maximum(front, s.min() if len(s) else 0)
    return np.clip(e - np.maximum(s, front), 0, None)


def _window(data, t0, t1):
    ts = data["ts"].to_numpy()
    if t0 is None:
        t0 = float(ts.min()) if len(ts) else 0.0
    if t1 is None:
        t1 = float(ts.max()) if len(ts) else 0.0
    return t0, t1, (ts >= t0) & (ts <= t1)


def goodput_mbps(data: pd.DataFrame, t0: float | None = None, t1: float | None = None) -> float:
    """Goodput of the data direction over [t0, t1], Mbit/s (definition in the module docstring).
    Returns nan for an empty or zero-length window."""
    t0, t1, m = _window(data, t0, t1)
    if t1 <= t0:
        return float("nan")
    return float(new_bytes(data)[m].sum()) * 8 / (t1 - t0) / 1e6


def raw_throughput_mbps(data: pd.DataFrame, t0: float | None = None, t1: float | None = None) -> float:
    """Raw throughput over [t0, t1]: all payload bytes incl. retransmissions, Mbit/s."""
    t0, t1, m = _window(data, t0, t1)
    if t1 <= t0:
        return float("nan")
    return float(data["payload_len"].to_numpy()[m].sum()) * 8 / (t1 - t0) / 1e6


def goodput_series(data: pd.DataFrame, t0: float | None = None, bin_s: float = 1.0) -> pd.Series:
    """Goodput per ``bin_s`` second bin starting at t0 (default: first packet), Mbit/s; index = bin start
    relative to t0, s."""
    ts = data["ts"].to_numpy()
    if len(ts) == 0:
        return pd.Series(dtype=float)
    if t0 is None:
        t0 = float(ts.min())
    b = np.floor((ts - t0) / bin_s).astype(np.int64)
    keep = b >= 0
    nb = new_bytes(data)[keep]
    sums = np.bincount(b[keep], weights=nb)
    return pd.Series(sums * 8 / bin_s / 1e6, index=np.arange(len(sums)) * bin_s, name="goodput_mbps")


def first_delivery_bytes(data: pd.DataFrame) -> np.ndarray:
    """Per packet of a TCP data direction captured at (or near) the receiver: the bytes of sequence space this
    packet is the first to carry past the capture point (bytes). Unlike :func:`new_bytes` (the sender's view: bytes
    beyond everything sent before), a retransmission that fills a hole left by a loss upstream counts, because
    those bytes arrive here for the first time; duplicates count 0. Needs ``seq_un``/``end_un`` (``analysis.flows``)."""
    n = len(data)
    if n == 0 or "seq_un" not in data:
        return data["payload_len"].to_numpy().astype(np.int64) if "seq_un" not in data else np.zeros(0, np.int64)
    s = data["seq_un"].to_numpy().astype(np.int64)
    e = data["end_un"].to_numpy().astype(np.int64)
    order = np.argsort(data["ts"].to_numpy(), kind="stable")
    bounds = np.unique(np.concatenate([s, e]))
    lo, hi = np.searchsorted(bounds, s), np.searchsorted(bounds, e)
    owner = np.full(max(len(bounds) - 1, 0), -1, dtype=np.int64)   # first packet (time order) covering each piece
    for i in order[::-1]:                                          # later packets first, earlier ones overwrite
        if hi[i] > lo[i]:
            owner[lo[i]:hi[i]] = i
    out = np.zeros(n, dtype=np.int64)
    has = owner >= 0
    np.add.at(out, owner[has], np.diff(bounds)[has])
    return out


def delivered_goodput_mbps(data: pd.DataFrame, t0: float | None = None, t1: float | None = None) -> float:
    """Goodput at a receiver-side capture over [t0, t1]: bytes arriving there for the first time
    (:func:`first_delivery_bytes`) x 8 / window, Mbit/s; the window defaults to the first and last data segment
    (payload > 0). nan for an empty or zero-length window."""
    d = data[data["payload_len"] > 0]
    t0d, t1d, m = _window(d, t0, t1)
    if t1d <= t0d:
        return float("nan")
    return float(first_delivery_bytes(d)[m].sum()) * 8 / (t1d - t0d) / 1e6
