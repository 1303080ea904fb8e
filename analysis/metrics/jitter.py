"""Jitter (packet delay variation) metrics, in milliseconds.

* :func:`mean_abs_delay_variation` -- paper 003 (section III.D):
  Jitter = sum_{i=1}^{n-1} |D_i - D_{i+1}| / (n - 1), D_i the delay of the i-th received packet,
  n the number of received packets. Applied to one-way delays, or (when only a receiver capture exists)
  to inter-arrival times.
* :func:`rfc3550_jitter` -- RFC 3550 section 6.4.1 / appendix A.8 interarrival jitter:
  D(i-1,i) = (R_i - R_{i-1}) - (S_i - S_{i-1});  J += (|D(i-1,i)| - J) / 16, J starting at 0.
"""
from __future__ import annotations

import numpy as np


def _as_1d(name, a):
    x = np.asarray(a, dtype=float).ravel()
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name}: values must be finite numbers")
    return x


def mean_abs_delay_variation(delays_ms) -> float:
    """Paper 003's jitter: mean |D_i - D_{i+1}| over consecutive packets, ms (input in ms).

    ``delays_ms``: per-packet one-way delays (or inter-arrival times) in ms, in arrival order.
    Needs at least 2 values (else ValueError).
    """
    d = _as_1d("mean_abs_delay_variation", delays_ms)
    if d.size < 2:
        raise ValueError("mean_abs_delay_variation: need at least 2 delay values")
    return float(np.mean(np.abs(np.diff(d))))


def interarrival_times_ms(arrival_ts_s) -> np.ndarray:
    """Inter-arrival times in ms from arrival timestamps in seconds (arrival order)."""
    t = _as_1d("interarrival_times_ms", arrival_ts_s)
    return np.diff(t) * 1000.0


def rfc3550_jitter(send_ts_s, recv_ts_s, *, series: bool = False):
    """RFC 3550 (6.4.1, A.8) interarrival jitter, ms.

    ``send_ts_s`` / ``recv_ts_s``: send and receive times (s) of the same packets, in arrival order
    (clock offsets cancel, only differences are used). Returns the final J in ms, or with
    ``series=True`` the array of J after each packet (first packet: 0).
    """
    s = _as_1d("rfc3550_jitter", send_ts_s)
    r = _as_1d("rfc3550_jitter", recv_ts_s)
    if s.size != r.size:
        raise ValueError("rfc3550_jitter: send and receive arrays differ in length")
    if r.size < 2:
        raise ValueError("rfc3550_jitter: need at least 2 packets")
    d = np.abs(np.diff(r) - np.diff(s)) * 1000.0  # |D(i-1,i)|, ms
    j = 0.0
    out = np.zeros(r.size)
    for k, dk in enumerate(d, start=1):
        j += (dk - j) / 16.0
        out[k] = j
    return out if series else float(j)
