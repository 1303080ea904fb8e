"""How fast a TCP sender's congestion window grows back after a loss, read from ``ss -ti`` samples.

A window reduction is a sample whose ssthresh differs from the previous sample's (``ss`` shows ssthresh, packets, once
it is finite); the largest window sampled in the few samples before it is that episode's Wmax (study 004: "the last
congestion window when a packet loss was detected"). Recovery is over at the first later sample whose window is at or
below the new ssthresh. From there, over ``rtts`` smoothed RTTs (``rtt_ms`` of that sample), the window's growth is
measured — unless the next reduction comes first (then the episode is skipped) — and only episodes that start below
Wmax with the window at ssthresh (congestion avoidance; an episode that restarts in slow start after a timeout does
not count). (Right after a recovery the sender is often not window-limited for about an RTT — the pipe drained — and
the kernel then does not grow the window at all, so more than one RTT is the steadier measure.) This is the phase
where study 004's eq. (8) and Reno's additive increase differ (Reno-like: ~1 packet per RTT; eq. (8): up to one
packet per ACK).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

COLUMNS = ["ts", "w_max_pkts", "cwnd_start_pkts", "cwnd_after_rtt_pkts", "rtt_ms", "growth_pkts_per_rtt",
           "regained_frac"]


def growth_after_recovery(samples: pd.DataFrame, *, lookback: int = 5, rtts: float = 1.0) -> pd.DataFrame:
    """One row per loss episode of one connection's ``ss`` samples (columns ts s, cwnd_pkts, ssthresh_pkts, rtt_ms;
    e.g. ``analysis.figures.ss_samples.data_connection``): ts (s, recovery over), w_max_pkts (largest window in the
    ``lookback`` samples before the reduction), cwnd_start_pkts (window when recovery is over), cwnd_after_rtt_pkts
    (window ``rtts`` smoothed RTTs later), rtt_ms, growth_pkts_per_rtt = their difference / ``rtts`` (packets per
    RTT), regained_frac = (cwnd_after_rtt − cwnd_start) / (w_max − cwnd_start), the share of the gap to Wmax closed in
    that time (Reno-like increase: ~``rtts`` / gap; eq. (8) with a small alpha: ~1)."""
    if not rtts > 0:
        raise ValueError(f"rtts must be positive, got {rtts!r}")
    s = samples.sort_values("ts", kind="stable")
    t = s["ts"].to_numpy(dtype=float)
    w = s["cwnd_pkts"].to_numpy(dtype=float)
    th = s["ssthresh_pkts"].to_numpy(dtype=float)
    rtt = s["rtt_ms"].to_numpy(dtype=float)
    red = [i for i in range(1, len(s)) if np.isfinite(th[i]) and th[i] != th[i - 1]]
    rows = []
    for k, a in enumerate(red):
        end = red[k + 1] if k + 1 < len(red) else len(s)
        w_max = float(np.nanmax(w[max(0, a - lookback):a])) if a > 0 else np.nan
        start = next((i for i in range(a, end) if w[i] <= th[i]), None)
        if start is None or not np.isfinite(rtt[start]) or not w[start] < w_max:
            continue
        if w[start] < th[start]:
            continue           # slow start (e.g. after a retransmission timeout), not the increase phase
        t1 = t[start] + rtts * rtt[start] / 1e3
        j = int(np.searchsorted(t, t1))
        if j >= end:
            continue           # the next reduction came within the RTT
        rows.append((t[start], w_max, w[start], w[j], rtt[start], (w[j] - w[start]) / rtts,
                     (w[j] - w[start]) / (w_max - w[start])))
    return pd.DataFrame(rows, columns=COLUMNS)
