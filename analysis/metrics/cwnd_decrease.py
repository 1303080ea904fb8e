"""Multiplicative decrease of a TCP sender's congestion window, read from ``ss -ti`` samples.

A loss response sets the slow-start threshold from the window at the loss (RFC 5681 eq. (4): ssthresh =
max(FlightSize / 2, 2·SMSS) for Reno; BIC: ssthresh = cwnd · beta / 1024 with beta = 819 above low_window = 14
packets, Linux net/ipv4/tcp_bic.c bictcp_recalc_ssthresh; Westwood+: ssthresh = BWE · RTTmin / MSS,
net/ipv4/tcp_westwood.c). ``ss`` shows ``ssthresh`` (packets) once it is finite, so each change of ssthresh to a value
below the preceding sample's cwnd marks a reduction, and its ratio to the window before it is the decrease factor.

Sampling limits what this sees: the window at the loss is estimated by the largest cwnd sampled since the previous
reduction (it can only be under-estimated, so ratios are upper bounds of the true factor by at most the growth between
the last sample and the loss), and two reductions between consecutive samples show as one. A reduction that sets
ssthresh to the value it already had is not seen at all: e.g. a loss-free BIC flow that settles into a cycle whose
every loss comes at the same window (109 packets -> ssthresh 87 each time, measured on the netns testbed).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

COLUMNS = ["ts", "cwnd_before_pkts", "ssthresh_pkts", "ratio", "cwnd_last_pkts", "ratio_last"]


def decrease_events(samples: pd.DataFrame) -> pd.DataFrame:
    """Reductions of one connection's window from its ``ss`` samples (columns ts, cwnd_pkts, ssthresh_pkts, as
    :func:`analysis.figures.ss_samples.parse_ss` gives them; one connection, e.g. ``data_connection``'s rows).

    Returns one row per reduction: ts (s, the first sample showing it), cwnd_before_pkts (largest cwnd sampled since
    the previous reduction, packets), ssthresh_pkts (the new threshold, packets), ratio = ssthresh / cwnd_before,
    cwnd_last_pkts (cwnd of the sample just before the reduction, packets) and ratio_last = ssthresh / cwnd_last.

    ``ratio`` suits coarse sampling (0.1 s: the last sample can be a whole RTT before the loss); ``ratio_last`` suits
    fine sampling (a few ms), where the peak can precede a dip of the window that does not touch ssthresh (e.g. the
    end of a previous recovery), so the last sample is the better estimate of the window at the loss."""
    s = samples.sort_values("ts", kind="stable")
    cwnd = s["cwnd_pkts"].to_numpy(dtype=float)
    ssth = s["ssthresh_pkts"].to_numpy(dtype=float)
    ts = s["ts"].to_numpy(dtype=float)
    rows = []
    peak = np.nan
    for i in range(len(s)):
        if i > 0 and np.isfinite(ssth[i]) and not (ssth[i] == ssth[i - 1]) and np.isfinite(cwnd[i - 1]) \
                and ssth[i] < cwnd[i - 1]:
            last = cwnd[i - 1]
            rows.append((ts[i], peak, ssth[i], ssth[i] / peak if peak > 0 else np.nan,
                         last, ssth[i] / last if last > 0 else np.nan))
            peak = np.nan
        if np.isfinite(cwnd[i]) and not (cwnd[i] <= peak):
            peak = cwnd[i]
    return pd.DataFrame(rows, columns=COLUMNS)
