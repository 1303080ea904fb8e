"""Summary statistics of a congestion-window time series sampled at irregular instants (``ss -ti`` samples).

* maximum: the largest sampled cwnd (packets; Linux counts cwnd in segments, ns-2 in packets).
* time average: the samples taken as a step function (sample-and-hold: each value holds from its own sample until the
  next one), averaged over [first sample, last sample]:

      cwnd_mean = sum_{i<n} c_i (t_{i+1} - t_i) / (t_n - t_1)

  so a burst of closely spaced samples does not weigh more than a quiet stretch (``ss`` every 0.1 s slows down under
  load). With one sample, or all samples at one instant, the mean of the samples.
"""
from __future__ import annotations

import numpy as np

NAN = float("nan")


def cwnd_stats(ts, cwnd) -> dict:
    """{"cwnd_max_pkts", "cwnd_mean_pkts"} of samples ``cwnd`` (packets) at times ``ts`` (s, any origin): the
    maximum and the sample-and-hold time average (module docstring). Samples with a non-finite time or value are left
    out; NaN for both when none is left."""
    t = np.asarray(ts, dtype=float).ravel()
    c = np.asarray(cwnd, dtype=float).ravel()
    if t.shape != c.shape:
        raise ValueError(f"cwnd_stats: {t.size} times for {c.size} values")
    ok = np.isfinite(t) & np.isfinite(c)
    t, c = t[ok], c[ok]
    if t.size == 0:
        return {"cwnd_max_pkts": NAN, "cwnd_mean_pkts": NAN}
    order = np.argsort(t, kind="stable")
    t, c = t[order], c[order]
    span = float(t[-1] - t[0])
    mean = float(np.sum(c[:-1] * np.diff(t)) / span) if span > 0 else float(c.mean())
    return {"cwnd_max_pkts": float(c.max()), "cwnd_mean_pkts": mean}
