"""Real netem against the delay shim's emulation of it, in the same Debian 12 VM (``testbed/delayshim/validate-vm.sh``;
docs/netem-semantics.md sections 4, 7, 9 and 10).

Input: a results directory as the harness writes it::

    DIR/meta.json                              host side: qemu, guest kernel and its package, sha256s (optional here)
    DIR/setup.json                             guest side: kernel, ``netem_patches`` {K4, K5, K6} (optional here)
    DIR/runs/repNN-MODEL-dD-IMPL/run.json      rep, model, delay_ms (one-way, per interface), implementation
                                               ("netem" | "shim"), ``tc -s qdisc`` text before/after the flow, the
                                               shim's report line, tcpdump's counters, the guest's ``check``
    DIR/runs/.../sw-a.pcap[.gz|.xz]            UDP a -> b as it reached the switch (tcpdump -Q in on sw-a)
    DIR/runs/.../sw-b.pcap[.gz|.xz]            the same flow as it left the switch's egress qdisc (-Q out on sw-b)
    DIR/runs/.../tc.txt[.gz|.xz]               ``tc -s qdisc show dev sw-b`` blocks, each after ``# ts=<epoch s>``
    DIR/runs/.../iperf3.json                   iperf3 client --json (optional: a cross-check of the goodput)

Per arm (:func:`load_arm`), over the steady window (the last 60 % of the flow, :func:`steady_window`; the flow runs
from the first to the last data packet at the ingress):

* sojourn (ms) of every data packet from the two captures (:func:`match_sojourns`: same 5-tuple, IP id and UDP
  payload length), queueing delay = sojourn - d (ms), its median, p95 and p99 (:func:`quantiles`);
* the standing queue (packets) from the sojourns, ``queue_pkts`` = median queueing delay / s with s = 1.192 ms, the
  time the 10 Mbit/s TBF takes per 1490-byte frame (1448 + 8 + 20 + 14 bytes). This is the primary occupancy
  measure: it is computed the same way for every arm;
* the occupancy from the tc samples as a cross-check (:func:`tc_plateau`): the median qlen (packets) of the qdisc
  :data:`TC_QUEUE` names for the model and implementation. With the shim the delay is outside the qdiscs, so the
  root tbf's qlen is the standing queue. With real netem the root counts netem's delayed packets too: for
  ``tbf-netem`` (recipe A) netem is the tbf's child and holds delay line and queue in one count, so the standing
  queue is read as that qlen minus d/s (the packets in their delay once the limit binds, section 4); for
  ``netem-tbf`` and ``fifo-after-delay`` the tbf under netem (handle 10:) holds exactly the standing queue;
* drops: the root qdisc's ``dropped`` counter over the flow (the root adds its children's drops to its own) plus the
  shim's ``dropped_at_limit``, per 1000 data packets at the ingress (``drops_per_1000``); the drops seen in the
  captures (ingress packets without an egress match) as a cross-check;
* goodput (Mbit/s): UDP payload bytes leaving the switch in the steady window (expected 10 x 1448 / 1490 = 9.72).

TCP arms (``traffic`` "tcp" in run.json: one iperf3 flow of ``cc`` with ``loss_pct`` % random loss on the data
direction; directory ``repNN-MODEL-dD-lLOSS-CC-IMPL``) are read the same way, with these differences: the data
packets are the TCP segments a -> b with payload (:func:`tcp_data_packets`) and a match also needs the same sequence
number (a retransmission has its own IP id); goodput (Mbit/s) is the sequence-space progress of the data leaving the
switch over the steady window (:func:`seq_goodput_mbps`: bytes newly sent through, retransmissions not counted
twice); the RTT (ms) is the sender's smoothed RTT as iperf3 samples it every 0.5 s (``intervals[].streams[0].rtt``,
the kernel's ``tcpi_rtt``) over the steady window, its mean and p95 (:func:`iperf3_rtt`); retransmits are iperf3's
(``end.sum_sent.retransmits``) per 1000 data packets at the ingress; drops count the random loss too (real netem's
root counter holds netem's loss, the shim's arms add the iptables rule's counter), so both sides count the same
events. The queueing delay's distribution is kept per arm as a 0.5-ms histogram of the steady window
(:data:`HIST_BIN_MS`); :func:`distribution` compares the quantile grid (:data:`QGRID`) cell by cell and gives the
Kolmogorov-Smirnov distance of the pooled histograms as a descriptive number (packets within a run are not
independent, so no KS p-value is given).

Per cell (model x delay, and for TCP x cc x loss), shim - netem over the arms (:func:`compare`): mean and 95 % t-interval per implementation,
the difference with its 90 % Welch interval, a TOST at alpha = 0.05 (:func:`analysis.cc_validation.equivalence`)
with the margins fixed here before any run: queueing-delay median and p95 +-5 ms (about 4 packets), goodput +-5 % of
the netem mean, drops per 1000 packets +-15 % of the netem mean, and for TCP the mean RTT +-max(3 ms, 5 % of the
netem mean) (docs/netem-semantics.md section 7, step 6). Section 4's prediction of the standing queue
(:func:`predicted_queue_pkts`) for the kernel the guest ran (its changelog's K4/K5/K6, :func:`kernel_form`) and for
the shim as switch.sh runs it gives the expected verdict of each cell. :func:`calibration` is section 7's step 2 (each
arm's plateau within +-1 packet of the prediction); :func:`positive_control` compares the shim's fifo-after-delay
with real recipe A, a difference of d ms the test must detect.

``python -m analysis.netem_validation DIR [--runs]`` prints the tables in Markdown; ``--export DEST`` writes the
committed form of DIR (:func:`export`: per arm run.json, iperf3.json and ``derived.json``, the row and histogram
computed here, without the captures and tc samples; :func:`load_arm` reads ``derived.json`` when the captures are
absent).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import re
import shutil
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as _st

from analysis import markdown_table
from analysis.cc_validation import _find, _read_json, equivalence  # one reader of a run's (compressed) files
from analysis.errors import AnalysisError
from analysis.ingest import read_pcap
from analysis.ingest.compressed import open_decompressed
from analysis.stats import summary, tost
from analysis.validation_store import ARCHIVE, pack, partial_dir, portable_paths, run_dirs  # noqa: F401 (portable_paths: API)

MODELS = ("fifo-after-delay", "tbf-netem", "netem-tbf", "netem-tbf-k6")
IMPLS = ("netem", "shim")
A_IP, B_IP = "10.91.1.1", "10.91.2.1"   # the chain a -> sw -> b of validate-guest.sh
UDP_LEN = 1448                          # iperf3 -l, bytes of UDP payload per datagram
FRAME_BYTES = UDP_LEN + 8 + 20 + 14     # 1490: the frame as the qdiscs count it (qdisc_pkt_len)
RATE_BPS = 10e6                         # the switch's TBF rate, bit/s
S_MS = FRAME_BYTES * 8 / RATE_BPS * 1e3  # 1.192 ms: the TBF's time per frame
NETEM_LIMIT = 100                       # netem's limit, the pfifo's limit (packets)
TBF_LIMIT_BYTES = 151400                # the tbf's limit = its default bfifo's (bytes)
BFIFO_PKTS = TBF_LIMIT_BYTES // FRAME_BYTES   # 101 frames of 1490 bytes
SEND_PPS = 12e6 / (UDP_LEN * 8)         # 1036 datagrams/s (iperf3 -b 12M counts payload bits)
STEADY_FRACTION = 0.6                   # the plateau and the steady-state measures use the last 60 % of the flow
MAX_SOJOURN_S = 2.0                     # an egress packet matches an ingress packet at most this much older
TCP_FRAME_BYTES = 1448 + 32 + 20 + 14   # 1514: a full TCP segment with timestamps as the qdiscs count it
TCP_S_MS = TCP_FRAME_BYTES * 8 / RATE_BPS * 1e3   # 1.211 ms per full segment at 10 Mbit/s
QGRID = (10, 25, 50, 75, 90, 95, 99)    # the queueing-delay quantiles kept per arm (percent)
HIST_BIN_MS = 0.5                       # the queueing-delay histogram's bin width (ms), from -HIST_LOW_MS
HIST_LOW_MS = 5.0                       # the histogram starts this far below 0 (a sojourn a little under d)
TRAFFICS = ("udp", "tcp")

QDELAY_MARGIN_MS = 5.0       # TOST margin on the queueing-delay median and p95 (ms), about 4 packets
GOODPUT_MARGIN_FRAC = 0.05   # TOST margin on goodput: +-5 % of the netem mean
DROPS_MARGIN_FRAC = 0.15     # TOST margin on drops per 1000 packets: +-15 % of the netem mean
RTT_MARGIN_MS, RTT_MARGIN_FRAC = 3.0, 0.05   # TOST margin on the mean RTT: +-max(3 ms, 5 % of the netem mean)
ALPHA = 0.05
PLATEAU_TOLERANCE_PKTS = 1.0  # section 7 step 2: plateau within +-1 packet of the prediction / of the real arm
MAX_CAPTURE_LOSS = 0.001      # an arm whose captures lost more than 0.1 % of the packets is not used
MAX_AMBIGUOUS = 0.01          # ... or whose IP ids repeat within MAX_SOJOURN_S for more than 1 % of the matches
EARLY_SLACK_MS = 1.0          # ... or whose 1st-percentile sojourn is more than this below d (no packet leaves early)

#: which qdisc's qlen (kind, handle) is the occupancy that tc shows, per (model, implementation), and what it counts:
#: "queue" = the standing queue behind the delay; "shared" = delay line + standing queue (recipe A's one count)
TC_QUEUE = {
    ("fifo-after-delay", "shim"): ("tbf", "1:", "queue"),     # shim, then tbf root + pfifo 10:
    ("tbf-netem", "shim"): ("tbf", "1:", "queue"),            # shim (-m shared), then tbf root + pfifo 10:
    ("netem-tbf", "shim"): ("tbf", "1:", "queue"),            # shim (-m delayline), then tbf root + bfifo 10:
    ("fifo-after-delay", "netem"): ("tbf", "10:", "queue"),   # netem root (limit 65536), tbf 10:, pfifo 20:
    ("tbf-netem", "netem"): ("tbf", "1:", "shared"),          # tbf root, netem 10: (delay line + waiting)
    ("netem-tbf", "netem"): ("tbf", "10:", "queue"),          # netem root, tbf 10: with its default bfifo
    ("netem-tbf-k6", "shim"): ("tbf", "1:", "queue"),         # shim (-m shared), then tbf root + bfifo 10:
    ("netem-tbf-k6", "netem"): ("tbf", "10:", "queue"),       # the same qdiscs as netem-tbf (the kernel decides)
}

RUN_COLUMNS = ["run", "rep", "traffic", "model", "cc", "loss_pct", "delay_ms", "implementation", "order_in_rep",
               "n_in", "n_out", "n_matched", "n_unmatched_out", "n_ambiguous", "sojourn_min_ms", "qdelay_median_ms",
               "qdelay_p95_ms", "qdelay_p99_ms", "qdelay_p10_ms", "qdelay_p25_ms", "qdelay_p75_ms", "qdelay_p90_ms",
               "queue_pkts", "tc_qdisc", "tc_samples", "tc_interval_ms", "tc_plateau_pkts",
               "tc_queue_pkts", "drops_qdisc", "drops_shim", "drops_loss", "drops_counted", "drops_pcap",
               "drops_per_1000", "drops_pcap_per_1000", "goodput_mbps", "iperf3_mbps", "rtt_mean_ms", "rtt_p95_ms",
               "rtt_samples", "retransmits", "retrans_per_1000", "shim_late1_share", "shim_late5_share",
               "shim_max_late_ms", "shim_max_counted",
               "capture_dropped", "source", "guest_check", "valid", "problem"]


# ---------------------------------------------------------------- predictions (section 4)
#: first upstream stable releases carrying K4 / K6, per series (docs/netem-kernel-versions.md: K4 under
#: ChangeLog-6.1.121 / -5.10.232, K6 under ChangeLog-6.1.175 / -5.10.258; Debian's first uploads with them are
#: 6.1.123 / 6.1.176 and 5.10.234 / 5.10.259)
_FIRST_WITH = {(6, 1): (121, 175), (5, 10): (232, 258)}


def _version_form(package: str | None) -> str:
    """The netem counting implied by a kernel package's Debian version ("linux-image-6.1.0-56-amd64 6.1.192-2" ->
    upstream 6.1.192 -> "k6"), for the series docs/netem-kernel-versions.md covers (6.1, 5.10); else "unknown"."""
    m = re.match(r"(\d+)\.(\d+)\.(\d+)", (package or "").split()[-1] if package else "")
    if not m:
        return "unknown"
    first = _FIRST_WITH.get((int(m.group(1)), int(m.group(2))))
    if first is None:
        return "unknown"
    z = int(m.group(3))
    return "k6" if z >= first[1] else "k4" if z >= first[0] else "pre-k4"


def kernel_form(setup: dict, meta: dict | None = None) -> str:
    """Which netem counting the guest's kernel has: "k6" (K6: netem's limit counts ``sch->q.qlen`` = delay line +
    child + parked packet; Debian 6.1.176+, the box's 6.1.192), "k4" (K4 without K6: the limit counts the delay line
    only, one parked packet more fits; 6.1.121-6.1.174), "pre-k4" (v4.15, 6.1.0-6.1.120) or "unknown".

    From ``setup.json`` ``netem_patches`` (K4, K5, K6 found in the running kernel's Debian changelog) when it names
    K4 or K6; when it finds none of them (possibly a changelog without the kernel's history), from the package's
    Debian version (``setup`` ``kernel_package`` or ``meta`` ``guest_kernel_package``, :func:`_version_form`), and
    "pre-k4" only if that says nothing."""
    p = (setup or {}).get("netem_patches") or {}
    if p.get("K6") is True:
        return "k6"
    if p.get("K4") is True:
        return "k4"
    by_version = _version_form((setup or {}).get("kernel_package") or (meta or {}).get("guest_kernel_package"))
    if by_version != "unknown":
        return by_version
    if p.get("K4") is False and p.get("K6") is False:
        return "pre-k4"
    return "unknown"


def predicted_queue_pkts(model: str, delay_ms: float, form: str) -> float:
    """Section 4's standing queue (packets) under a saturating overload of 1490-byte frames at 10 Mbit/s, for the
    one-way delay ``delay_ms`` (ms) per interface. N_d = d / s (s = :data:`S_MS`) is the number of packets in their
    delay once the limit binds (accepted = drained).

    form: the counting of the reference kernel (:func:`kernel_form`: "pre-k4", "k4", "k6"; "unknown" is taken as
    "k6", the box's) or "shim" (the delay shim as switch.sh runs it: ``-m shared`` for tbf-netem counts like netem
    before K4; ``-m delayline`` for netem-tbf caps the delay line only, as netem before K6).

    * fifo-after-delay: 100 (the pfifo behind the delay; real netem's limit 65536 never binds);
    * tbf-netem (recipe A): 100 - N_d; 101 - N_d with "k4" (the parked packet escapes ``t_len``);
    * netem-tbf-k6 with the shim: as netem-tbf on a "k6" kernel (switch.sh runs ``-m shared`` before the bfifo);
    * netem-tbf (recipe B): "k6": min(151400 // 1490, 100 - N_d) = min(101, 100 - N_d) (netem's 100 also counts the
      tbf's queue); otherwise the tbf's bfifo, 101 frames, as long as netem's 100 does not cap the delay line (it
      does when 1036 datagrams/s x d >= 100, d >= 96.5 ms; then the admitted rate 100/d is compared with the drain
      rate and the queue is 101 while it exceeds it, 0 otherwise)."""
    if model not in MODELS:
        raise AnalysisError(f"unknown queue model {model!r}")
    if form not in ("pre-k4", "k4", "k6", "unknown", "shim"):
        raise AnalysisError(f"unknown kernel form {form!r}")
    n_d = float(delay_ms) / S_MS
    if model == "fifo-after-delay":
        return float(NETEM_LIMIT)
    if model == "tbf-netem":
        return NETEM_LIMIT - n_d + (1.0 if form == "k4" else 0.0)
    if model == "netem-tbf-k6" and form == "shim":   # the shim's -m shared in front of the bfifo: the K6 count
        return float(min(BFIFO_PKTS, NETEM_LIMIT - n_d))
    if form in ("k6", "unknown"):
        return float(min(BFIFO_PKTS, NETEM_LIMIT - n_d))
    admitted_pps = min(SEND_PPS, NETEM_LIMIT / (float(delay_ms) / 1e3))
    drain_pps = RATE_BPS / (FRAME_BYTES * 8)
    return float(BFIFO_PKTS) if admitted_pps > drain_pps else 0.0


def predicted_for(model: str, delay_ms: float, implementation: str, form: str) -> float:
    """:func:`predicted_queue_pkts` for an arm: real netem follows the kernel's ``form``, the shim its own."""
    return predicted_queue_pkts(model, delay_ms, form if implementation == "netem" else "shim")


# ---------------------------------------------------------------- captures
def flow_packets(table: pd.DataFrame, src: str = A_IP, dst: str = B_IP, udp_len: int = UDP_LEN) -> pd.DataFrame:
    """The iperf3 data datagrams of a per-packet table (``analysis.ingest.schema``): UDP from ``src`` to ``dst`` with
    ``udp_len`` bytes of payload (iperf3's 4-byte connect datagram and anything else left out), sorted by ts."""
    t = table[(table["proto"] == 17) & (table["src"] == src) & (table["dst"] == dst)
              & (table["payload_len"] == udp_len)]
    return t.sort_values("ts", kind="stable").reset_index(drop=True)


def tcp_data_packets(table: pd.DataFrame, src: str = A_IP, dst: str = B_IP) -> pd.DataFrame:
    """The data segments of the flow's data connection in a per-packet table (``analysis.ingest.schema``): TCP from
    ``src`` to ``dst`` with payload (pure ACKs, SYN and FIN without data left out), of the connection (port pair)
    that carried the most payload bytes, so that iperf3's control connection (a few hundred bytes of JSON) is left
    out; sorted by ts."""
    t = table[(table["proto"] == 6) & (table["src"] == src) & (table["dst"] == dst) & (table["payload_len"] > 0)]
    if len(t):
        by_conn = t.groupby(["sport", "dport"], sort=True)["payload_len"].sum()
        sport, dport = by_conn.idxmax()
        t = t[(t["sport"] == sport) & (t["dport"] == dport)]
    return t.sort_values("ts", kind="stable").reset_index(drop=True)


_KEY = ["src", "dst", "sport", "dport", "ip_id", "payload_len"]
_TCP_KEY = _KEY + ["seq"]


def match_sojourns(ingress: pd.DataFrame, egress: pd.DataFrame,
                   max_sojourn_s: float = MAX_SOJOURN_S, key: list[str] | None = None) -> tuple[pd.DataFrame, dict]:
    """Match each packet leaving the switch (``egress``, per-packet table rows) with its arrival (``ingress``): same
    addresses, ports, IPv4 id and payload length (``key``: these columns by default; TCP adds ``seq``, see
    :data:`_TCP_KEY`), arrived at most ``max_sojourn_s`` (s) before and not matched yet; among several such arrivals (ids repeating: 16-bit wrap, or a sender without per-socket ids) the earliest,
    as a FIFO path delivers them, and the match counts as ambiguous.

    Returns (matched, counts). matched: one row per matched packet with ts_in, ts_out (epoch s), sojourn_ms (ms),
    ip_id, payload_len, sorted by ts_in. counts: n_in, n_out, n_matched, n_unmatched_out (egress packets without an
    arrival: capture loss at the ingress), n_unmatched_in (arrivals never seen leaving: dropped, or capture loss at
    the egress), n_ambiguous."""
    cols = list(key or _KEY)
    groups: dict[tuple, list[float]] = {}
    ing = ingress.sort_values("ts", kind="stable")
    for k, ts in zip(ing[cols].itertuples(index=False, name=None), ing["ts"].to_numpy(dtype=float)):
        groups.setdefault(k, []).append(float(ts))
    ptr = dict.fromkeys(groups, 0)
    eg = egress.sort_values("ts", kind="stable")
    t_in, t_out, ids, lens = [], [], [], []
    unmatched_out = ambiguous = 0
    for key, ts in zip(eg[cols].itertuples(index=False, name=None), eg["ts"].to_numpy(dtype=float)):
        lst = groups.get(key)
        if lst is None:
            unmatched_out += 1
            continue
        p = ptr[key]
        while p < len(lst) and lst[p] < ts - max_sojourn_s:
            p += 1                                   # too old to be this packet: dropped at the switch
        if p < len(lst) and lst[p] <= ts:
            if p + 1 < len(lst) and lst[p + 1] <= ts:
                ambiguous += 1
            t_in.append(lst[p])
            t_out.append(float(ts))
            ids.append(key[4])
            lens.append(key[5])
            p += 1
        else:
            unmatched_out += 1
        ptr[key] = p
    matched = pd.DataFrame({"ts_in": np.asarray(t_in, dtype=float), "ts_out": np.asarray(t_out, dtype=float),
                            "ip_id": np.asarray(ids, dtype=np.int64), "payload_len": np.asarray(lens, dtype=np.int64)})
    matched["sojourn_ms"] = (matched["ts_out"] - matched["ts_in"]) * 1e3
    matched = matched.sort_values("ts_in", kind="stable").reset_index(drop=True)
    counts = {"n_in": int(len(ingress)), "n_out": int(len(egress)), "n_matched": int(len(matched)),
              "n_unmatched_out": int(unmatched_out), "n_unmatched_in": int(len(ingress) - len(matched)),
              "n_ambiguous": int(ambiguous)}
    return matched, counts


def steady_window(t_first: float, t_last: float, fraction: float = STEADY_FRACTION) -> tuple[float, float]:
    """The last ``fraction`` of the flow [t_first, t_last] (s): (t_last - fraction x (t_last - t_first), t_last)."""
    if not (np.isfinite(t_first) and np.isfinite(t_last)) or t_last < t_first:
        raise AnalysisError(f"bad flow interval [{t_first}, {t_last}]")
    if not 0 < fraction <= 1:
        raise AnalysisError(f"fraction must be in (0, 1], got {fraction}")
    return t_last - fraction * (t_last - t_first), t_last


def quantiles(values) -> dict:
    """median, p95, p99 (numpy's default linear interpolation) and n of ``values`` (units of the input; NaN when
    empty)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return {"n": 0, "median": np.nan, "p95": np.nan, "p99": np.nan}
    q = np.quantile(v, [0.5, 0.95, 0.99])
    return {"n": int(v.size), "median": float(q[0]), "p95": float(q[1]), "p99": float(q[2])}


def goodput_mbps(egress: pd.DataFrame, t0: float, t1: float) -> float:
    """UDP payload leaving the switch with ts in [t0, t1] (s), in Mbit/s (NaN for an empty interval)."""
    if not t1 > t0:
        return np.nan
    sel = egress[(egress["ts"] >= t0) & (egress["ts"] <= t1)]
    return float(sel["payload_len"].sum()) * 8 / (t1 - t0) / 1e6


def seq_goodput_mbps(egress: pd.DataFrame, t0: float, t1: float) -> float:
    """TCP goodput through the switch over [t0, t1] (s), Mbit/s: how far the highest sequence number sent through
    (seq + payload, unwrapped modulo 2**32 from the first segment, one connection) advanced between the last segment
    before t0 and the last segment at or before t1, over t1 - t0. A retransmission does not advance it, so each byte
    counts once. NaN for an empty interval or fewer than two segments."""
    if not t1 > t0 or len(egress) < 2:
        return np.nan
    e = egress.sort_values("ts", kind="stable")
    seq = e["seq"].to_numpy(dtype=np.int64)
    rel = (seq - seq[0]) % (1 << 32)
    rel = np.where(rel >= (1 << 31), rel - (1 << 32), rel)      # a retransmission of bytes before the first seen
    top = np.maximum.accumulate(rel + e["payload_len"].to_numpy(dtype=np.int64))
    ts = e["ts"].to_numpy(dtype=float)
    i0 = np.searchsorted(ts, t0, side="left") - 1               # the last segment before t0
    i1 = np.searchsorted(ts, t1, side="right") - 1              # the last segment at or before t1
    if i1 < 0:
        return np.nan
    start = top[i0] if i0 >= 0 else rel[0]
    return float(top[i1] - start) * 8 / (t1 - t0) / 1e6


def iperf3_rtt(doc: dict, fraction: float = STEADY_FRACTION) -> dict:
    """The sender's smoothed RTT as iperf3 samples it once per reporting interval (``intervals[].streams[0].rtt``,
    us, the kernel's ``tcpi_rtt``), over the intervals that end in the last ``fraction`` of the test: mean and p95
    (ms) and the number of samples; NaNs without samples (UDP, or an iperf3 without RTT)."""
    pts = []
    for iv in doc.get("intervals") or []:
        st = (iv.get("streams") or [{}])[0]
        if st.get("rtt") is not None and st.get("end") is not None:
            pts.append((float(st["end"]), float(st["rtt"]) / 1e3))
    if not pts:
        return {"rtt_mean_ms": np.nan, "rtt_p95_ms": np.nan, "rtt_samples": 0}
    ends = np.array([p[0] for p in pts])
    rtt = np.array([p[1] for p in pts])
    sel = ends >= ends.max() * (1 - fraction)
    v = rtt[sel]
    return {"rtt_mean_ms": float(v.mean()), "rtt_p95_ms": float(np.quantile(v, 0.95)), "rtt_samples": int(v.size)}


def qdelay_histogram(qdelay_ms) -> dict:
    """Queueing delays (ms) as a sparse histogram of :data:`HIST_BIN_MS` bins from -:data:`HIST_LOW_MS`:
    {"bin_ms", "low_ms", "bins" (bin indices with a count), "counts"}. Values below the low edge go to bin 0."""
    v = np.asarray(qdelay_ms, dtype=float)
    v = v[np.isfinite(v)]
    idx = np.maximum(np.floor((v + HIST_LOW_MS) / HIST_BIN_MS), 0).astype(np.int64)
    b, c = np.unique(idx, return_counts=True)
    return {"bin_ms": HIST_BIN_MS, "low_ms": -HIST_LOW_MS, "bins": b.tolist(), "counts": c.tolist()}


def ks_distance(h1: dict, h2: dict) -> float:
    """Kolmogorov-Smirnov distance (the largest gap between the two cumulative distributions) of two histograms
    from :func:`qdelay_histogram` with the same binning; NaN when either is empty. Resolution: one bin."""
    n = 1 + max(max(h1["bins"], default=-1), max(h2["bins"], default=-1))
    if n <= 0 or not sum(h1["counts"]) or not sum(h2["counts"]):
        return np.nan
    c1, c2 = np.zeros(n), np.zeros(n)
    np.add.at(c1, np.asarray(h1["bins"], dtype=np.int64), h1["counts"])
    np.add.at(c2, np.asarray(h2["bins"], dtype=np.int64), h2["counts"])
    return float(np.abs(np.cumsum(c1) / c1.sum() - np.cumsum(c2) / c2.sum()).max())


def merge_histograms(hists) -> dict:
    """The sum of histograms from :func:`qdelay_histogram` (same binning)."""
    acc: dict[int, int] = {}
    for h in hists:
        for b, c in zip(h["bins"], h["counts"]):
            acc[int(b)] = acc.get(int(b), 0) + int(c)
    bins = sorted(acc)
    return {"bin_ms": HIST_BIN_MS, "low_ms": -HIST_LOW_MS, "bins": bins, "counts": [acc[b] for b in bins]}


# ---------------------------------------------------------------- tc text
_QDISC_RE = re.compile(r"^qdisc (\S+) ([0-9a-f]+:)\s+(?:dev \S+\s+)?(root|parent (\S+))")
_SENT_RE = re.compile(r"^\s*Sent (\d+) bytes (\d+) pkts? \(dropped (\d+), overlimits (\d+) requeues (\d+)\)")
_BACKLOG_RE = re.compile(r"^\s*backlog (\d+(?:\.\d+)?)([KMG]?)b (\d+)p")
_TS_RE = re.compile(r"^# ts=([0-9.]+)\s*$")
_SIZE = {"": 1, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}
TC_COLUMNS = ["sample", "ts", "kind", "handle", "parent", "sent_bytes", "sent_pkts", "dropped", "overlimits",
              "backlog_bytes", "qlen"]


def parse_tc(text: str) -> pd.DataFrame:
    """``tc -s qdisc show`` output, optionally in blocks after ``# ts=<epoch s>`` lines (the guest's sampler), as one
    row per qdisc and sample: sample (0-based block number; every qdisc before the first ``# ts`` line is block 0 with
    ts NaN), ts (s), kind ("tbf", "netem", "pfifo", ...), handle ("1:"), parent ("root" or the parent's class,
    "1:1"), sent_bytes, sent_pkts, dropped (packets), overlimits, backlog_bytes (bytes; tc's "Kb"/"Mb" are 1024-based),
    qlen (packets). A qdisc whose counters are missing gets NaN."""
    rows = []
    sample, ts, cur = 0, np.nan, None
    started = False
    for line in text.splitlines():
        m = _TS_RE.match(line)
        if m:
            if started:
                sample += 1
            started = True
            ts = float(m.group(1))
            cur = None
            continue
        m = _QDISC_RE.match(line)
        if m:
            started = True
            cur = {"sample": sample, "ts": ts, "kind": m.group(1), "handle": m.group(2),
                   "parent": "root" if m.group(3) == "root" else m.group(4), "sent_bytes": np.nan,
                   "sent_pkts": np.nan, "dropped": np.nan, "overlimits": np.nan, "backlog_bytes": np.nan,
                   "qlen": np.nan}
            rows.append(cur)
            continue
        if cur is None:
            continue
        m = _SENT_RE.match(line)
        if m:
            cur.update(sent_bytes=float(m.group(1)), sent_pkts=float(m.group(2)), dropped=float(m.group(3)),
                       overlimits=float(m.group(4)))
            continue
        m = _BACKLOG_RE.match(line)
        if m:
            cur.update(backlog_bytes=float(m.group(1)) * _SIZE[m.group(2)], qlen=float(m.group(3)))
    return pd.DataFrame(rows, columns=TC_COLUMNS)


def root_dropped(text: str) -> float:
    """The root qdisc's ``dropped`` counter (packets) in one ``tc -s qdisc show dev X`` output; NaN if absent. The
    root counts its children's drops too (tbf_enqueue and netem_dequeue add a child's drop to their own)."""
    t = parse_tc(text or "")
    r = t[t["parent"] == "root"]
    return float(r["dropped"].iloc[0]) if len(r) else np.nan


def plateau(ts, values, t_first: float, t_last: float, fraction: float = STEADY_FRACTION) -> float:
    """Median of ``values`` sampled at ``ts`` (s) within the last ``fraction`` of the flow [t_first, t_last]
    (:func:`steady_window`); NaN when no sample falls there. Units of ``values`` (packets for qlen)."""
    t0, t1 = steady_window(t_first, t_last, fraction)
    ts = np.asarray(ts, dtype=float)
    v = np.asarray(values, dtype=float)
    sel = (ts >= t0) & (ts <= t1) & np.isfinite(v)
    return float(np.median(v[sel])) if sel.any() else np.nan


def tc_plateau(samples: pd.DataFrame, model: str, implementation: str, t_first: float, t_last: float,
               delay_ms: float) -> dict:
    """The tc cross-check of one arm from its samples (:func:`parse_tc` rows): the qdisc :data:`TC_QUEUE` names,
    its plateau qlen (packets, :func:`plateau`), the standing queue it implies (packets: the plateau for a "queue"
    qdisc; plateau - d/s for recipe A's shared count with real netem), the number of its samples in the whole flow
    and their median interval (ms)."""
    kind, handle, what = TC_QUEUE[(model, implementation)]
    s = samples[(samples["kind"] == kind) & (samples["handle"] == handle)].dropna(subset=["ts"])
    s = s[(s["ts"] >= t_first) & (s["ts"] <= t_last)].sort_values("ts")
    raw = plateau(s["ts"], s["qlen"], t_first, t_last) if len(s) else np.nan
    queue = raw - float(delay_ms) / S_MS if what == "shared" else raw
    return {"tc_qdisc": f"{kind} {handle} ({what})", "tc_samples": int(len(s)),
            "tc_interval_ms": float(np.median(np.diff(s["ts"].to_numpy()))) * 1e3 if len(s) > 1 else np.nan,
            "tc_plateau_pkts": raw, "tc_queue_pkts": queue}


def parse_shim_line(line: str | None) -> dict:
    """The counters of one delay-shim report line ("delayshim: released N late_over_1ms N ... dropped_at_limit N
    max_counted N") as {name: int}; {} for an empty or missing line."""
    if not line:
        return {}
    return {k: int(v) for k, v in re.findall(r"([a-z_0-9]+) (\d+)", line.split(":", 1)[-1])}


# ---------------------------------------------------------------- one arm
def _read_text(path: Path) -> str:
    with open_decompressed(path) as f:
        return f.read().decode("utf-8", errors="replace")


def _iperf3_receiver_mbps(doc: dict) -> float:
    """iperf3's received rate (Mbit/s): ``end.sum_received`` if the client JSON has it, else ``end.sum``."""
    end = doc.get("end") or {}
    s = end.get("sum_received") or end.get("sum") or {}
    v = s.get("bits_per_second")
    return float(v) / 1e6 if v is not None else np.nan


def _arm_meta(d: Path) -> tuple[Path, dict]:
    meta_p = _find(d, "run.json")
    if meta_p is None:
        raise AnalysisError(f"{d}: no run.json")
    meta = _read_json(meta_p)
    model, impl, delay = meta.get("model"), meta.get("implementation"), meta.get("delay_ms")
    traffic = meta.get("traffic") or "udp"
    if model not in MODELS or impl not in IMPLS or delay is None or traffic not in TRAFFICS:
        raise AnalysisError(f"{meta_p}: model must be one of {MODELS}, implementation one of {IMPLS}, traffic one of"
                            f" {TRAFFICS} and delay_ms set; got {model!r}, {impl!r}, {traffic!r}, {delay!r}")
    if traffic == "tcp" and not meta.get("cc"):
        raise AnalysisError(f"{meta_p}: a tcp arm needs cc")
    return meta_p, meta


def _jsonable(v):
    if isinstance(v, (np.floating, float)):
        return None if not np.isfinite(v) else float(v)
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.bool_,)):
        return bool(v)
    return v


DERIVED_VERSION = 1


def load_arm(run_dir) -> dict:
    """One arm directory -> a row of :data:`RUN_COLUMNS` (units: ms, packets, Mbit/s, per 1000 packets as named;
    valid False with ``problem`` set when the arm cannot be used). See the module docstring for each measure."""
    return load_arm_full(run_dir)[0]


def load_arm_full(run_dir) -> tuple[dict, dict]:
    """(row, histogram) of one arm: :func:`load_arm`'s row and the steady window's queueing-delay histogram
    (:func:`qdelay_histogram`). From the captures when the directory has them (``source`` "captures"), else from the
    ``derived.json`` that :func:`export` wrote (``source`` "derived.json")."""
    d = Path(run_dir)
    meta_p, meta = _arm_meta(d)
    pa, pb = _find(d, "sw-a.pcap"), _find(d, "sw-b.pcap")
    der = d / "derived.json"
    if (pa is None or pb is None) and der.is_file():
        doc = _read_json(der)
        if doc.get("version") != DERIVED_VERSION or not isinstance(doc.get("row"), dict):
            raise AnalysisError(f"{der}: not a derived.json of version {DERIVED_VERSION}")
        row = {c: doc["row"].get(c, np.nan) for c in RUN_COLUMNS}
        row = {c: (np.nan if v is None else v) for c, v in row.items()}
        row["source"] = "derived.json"
        return row, doc.get("hist") or qdelay_histogram([])
    model, impl, delay = meta["model"], meta["implementation"], float(meta["delay_ms"])
    traffic = meta.get("traffic") or "udp"
    params = meta.get("params") or {}
    udp_len = int(params.get("udp_len_bytes") or UDP_LEN)
    a_ip, b_ip = params.get("a_ip") or A_IP, params.get("b_ip") or B_IP
    s_ms = S_MS if traffic == "udp" else TCP_S_MS
    row = {c: np.nan for c in RUN_COLUMNS}
    row.update(run=d.name, rep=meta.get("rep"), traffic=traffic, model=model,
               cc=meta.get("cc") if traffic == "tcp" else "", loss_pct=float(meta.get("loss_pct") or 0.0),
               delay_ms=delay, implementation=impl, order_in_rep=meta.get("order_in_rep"), tc_qdisc="",
               source="captures", guest_check=meta.get("check"), valid=True, problem="")
    hist = qdelay_histogram([])
    problems = []
    if meta.get("check") not in (None, "pass"):
        problems.append(f"guest check: {meta.get('reason') or meta.get('check')}")

    # drops and the shim's counters (the run.json text, whatever the captures say)
    before, after = root_dropped(meta.get("tc_before") or ""), root_dropped(meta.get("tc_after") or "")
    row["drops_qdisc"] = after - before if np.isfinite(before) and np.isfinite(after) else np.nan
    shim = parse_shim_line((meta.get("shim") or {}).get("report_after")) if impl == "shim" else {}
    if impl == "shim":
        row["drops_shim"] = float(shim["dropped_at_limit"]) if "dropped_at_limit" in shim else np.nan
        if shim.get("released"):
            row["shim_late1_share"] = shim.get("late_over_1ms", 0) / shim["released"]
            row["shim_late5_share"] = shim.get("late_over_5ms", 0) / shim["released"]
        if "max_late_us" in shim:
            row["shim_max_late_ms"] = float(shim["max_late_us"]) / 1e3
        row["shim_max_counted"] = float(shim["max_counted"]) if "max_counted" in shim else np.nan
        if not shim:
            problems.append("no shim report after the flow")
    else:
        row["drops_shim"] = 0.0
    # random loss outside the qdiscs (the shim's arms: the iptables rule); netem's own loss is in its root counter
    ipt = (meta.get("drops") or {}).get("iptables_loss")
    if impl == "shim" and row["loss_pct"] > 0:
        row["drops_loss"] = float(ipt) if ipt is not None else np.nan
        if ipt is None:
            problems.append("loss arm without the iptables rule's counter")
    else:
        row["drops_loss"] = 0.0
    row["drops_counted"] = row["drops_qdisc"] + row["drops_shim"] + row["drops_loss"]
    tcpd = meta.get("tcpdump") or {}
    lost = [(v or {}).get("dropped_by_kernel") for v in tcpd.values()]
    caught = [(v or {}).get("captured") for v in tcpd.values()]
    known = [x for x in lost if x is not None]
    row["capture_dropped"] = float(sum(known)) if known else np.nan

    ipf = _find(d, "iperf3.json")
    ipdoc = {}
    if ipf is not None:
        try:
            ipdoc = _read_json(ipf)
            row["iperf3_mbps"] = _iperf3_receiver_mbps(ipdoc)
        except AnalysisError:
            ipdoc = {}
    if traffic == "tcp":
        row.update(iperf3_rtt(ipdoc))
        r = ((ipdoc.get("end") or {}).get("sum_sent") or {}).get("retransmits")
        row["retransmits"] = float(r) if r is not None else np.nan
        if not row["rtt_samples"]:
            problems.append("no RTT samples in iperf3.json")

    if pa is None or pb is None:
        problems.append("no capture " + " and ".join(n for n, p in (("sw-a", pa), ("sw-b", pb)) if p is None))
        row.update(valid=False, problem="; ".join(problems))
        return row, hist
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")         # a truncated last record: the rest is still usable
            if traffic == "udp":
                ing = flow_packets(read_pcap(pa, cache=False), a_ip, b_ip, udp_len)
                egr = flow_packets(read_pcap(pb, cache=False), a_ip, b_ip, udp_len)
            else:
                ing = tcp_data_packets(read_pcap(pa, cache=False), a_ip, b_ip)
                egr = tcp_data_packets(read_pcap(pb, cache=False), a_ip, b_ip)
    except AnalysisError as exc:
        problems.append(str(exc))
        row.update(valid=False, problem="; ".join(problems))
        return row, hist
    if ing.empty or egr.empty:
        problems.append("no data packet in the " + ("ingress" if ing.empty else "egress") + " capture")
        row.update(valid=False, problem="; ".join(problems))
        return row, hist
    matched, counts = match_sojourns(ing, egr, key=_KEY if traffic == "udp" else _TCP_KEY)
    row.update({k: counts[k] for k in ("n_in", "n_out", "n_matched", "n_unmatched_out", "n_ambiguous")})
    t_first, t_last = float(ing["ts"].iloc[0]), float(ing["ts"].iloc[-1])
    t0, t1 = steady_window(t_first, t_last)
    steady = matched[(matched["ts_in"] >= t0) & (matched["ts_in"] <= t1)]
    qd = (steady["sojourn_ms"] - delay).to_numpy(dtype=float)
    q = quantiles(qd)
    row.update(qdelay_median_ms=q["median"], qdelay_p95_ms=q["p95"], qdelay_p99_ms=q["p99"],
               sojourn_min_ms=float(matched["sojourn_ms"].min()) if len(matched) else np.nan,
               queue_pkts=q["median"] / s_ms)
    if qd.size:
        for pct, v in zip((10, 25, 75, 90), np.quantile(qd, [0.10, 0.25, 0.75, 0.90])):
            row[f"qdelay_p{pct}_ms"] = float(v)
    hist = qdelay_histogram(qd)
    row["goodput_mbps"] = goodput_mbps(egr, t0, t1) if traffic == "udp" else seq_goodput_mbps(egr, t0, t1)
    row["drops_pcap"] = float(counts["n_unmatched_in"])
    row["drops_per_1000"] = 1000 * row["drops_counted"] / counts["n_in"]
    row["drops_pcap_per_1000"] = 1000 * row["drops_pcap"] / counts["n_in"]
    if traffic == "tcp":
        row["retrans_per_1000"] = 1000 * row["retransmits"] / counts["n_in"]

    tcp = _find(d, "tc.txt")
    if tcp is not None:
        row.update(tc_plateau(parse_tc(_read_text(tcp)), model, impl, t_first, t_last, delay))
    else:
        row["tc_qdisc"] = "no tc.txt"

    if not counts["n_matched"]:
        problems.append("no packet matched between the two captures")
    n_caught = sum(x for x in caught if x is not None) if any(x is not None for x in caught) else 0
    if np.isfinite(row["capture_dropped"]) and n_caught and row["capture_dropped"] > MAX_CAPTURE_LOSS * n_caught:
        problems.append(f"tcpdump lost {int(row['capture_dropped'])} packets")
    if counts["n_unmatched_out"] > MAX_CAPTURE_LOSS * counts["n_out"]:
        problems.append(f"{counts['n_unmatched_out']} egress packets without an arrival (ingress capture loss)")
    if counts["n_matched"] and counts["n_ambiguous"] > MAX_AMBIGUOUS * counts["n_matched"]:
        problems.append(f"{counts['n_ambiguous']} ambiguous matches (IP ids repeat)")
    if len(matched) and float(np.quantile(matched["sojourn_ms"], 0.01)) < delay - EARLY_SLACK_MS:
        problems.append(f"sojourns below the {delay:g}-ms delay (1st percentile "
                        f"{float(np.quantile(matched['sojourn_ms'], 0.01)):.2f} ms): delay not applied or bad matching")
    if problems:
        row.update(valid=False, problem="; ".join(problems))
    return row, hist


# ---------------------------------------------------------------- a results directory
class Results:
    """Everything read from a results directory: ``runs`` (one row per arm, :data:`RUN_COLUMNS`), ``meta`` and
    ``setup`` (dicts, {} if absent), ``form`` (:func:`kernel_form` of the guest), ``hists`` (arm name -> its
    queueing-delay histogram, :func:`qdelay_histogram`)."""

    def __init__(self, runs: pd.DataFrame, meta: dict, setup: dict, hists: dict | None = None):
        self.runs, self.meta, self.setup = runs, meta, setup
        self.hists = hists or {}
        self.form = kernel_form(setup, meta)

    @property
    def valid_runs(self) -> pd.DataFrame:
        return self.runs[self.runs["valid"].astype(bool)]


RUN_MARKERS = ("run.json", "run.json.xz", "run.json.gz")


def load_results(results_dir) -> Results:
    """Read every ``runs/*/run.json`` arm of ``results_dir`` (see the module docstring)."""
    root = Path(results_dir)
    rows, hists = [], {}
    with run_dirs(root, RUN_MARKERS) as dirs:
        if not dirs:
            raise AnalysisError(f"{root}: no runs/*/run.json nor {ARCHIVE} (not a netem-validation results directory)")
        for d in dirs:
            row, hist = load_arm_full(d)
            rows.append(row)
            hists[row["run"]] = hist
    runs = pd.DataFrame(rows, columns=RUN_COLUMNS)
    runs["cc"] = runs["cc"].fillna("").astype(str)
    runs["loss_pct"] = runs["loss_pct"].astype(float)
    runs = runs.sort_values(["traffic", "model", "cc", "loss_pct", "delay_ms", "implementation", "rep"],
                            kind="stable").reset_index(drop=True)
    meta = _read_json(root / "meta.json") if (root / "meta.json").is_file() else {}
    setup = _read_json(root / "setup.json") if (root / "setup.json").is_file() else {}
    return Results(runs, meta, setup, hists)


# ---------------------------------------------------------------- comparisons
def _ci(values) -> dict:
    """n, mean and 95 % t-interval (t_low, t_high; NaN with fewer than 2 values) of per-arm values."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size < 2:
        return {"n": int(v.size), "mean": float(v.mean()) if v.size else np.nan, "t_low": np.nan, "t_high": np.nan}
    s = summary(v, alpha=ALPHA)
    return {"n": s["n"], "mean": s["mean"], "t_low": s["t_low"], "t_high": s["t_high"]}


def diff_interval(a, b, level: float = 1 - 2 * ALPHA) -> tuple[float, float, float]:
    """mean(a) - mean(b) and its two-sided ``level`` Welch interval (the exact difference twice when neither sample
    varies; NaNs with fewer than 2 values on a side). Units of the data."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if a.size < 2 or b.size < 2:
        d = float(a.mean() - b.mean()) if a.size and b.size else np.nan
        return d, np.nan, np.nan
    d = float(a.mean() - b.mean())
    if a.var(ddof=1) == 0 and b.var(ddof=1) == 0:
        return d, d, d
    r = tost(a, b, 1.0)   # its diff, se and df
    half = float(_st.t.ppf(0.5 + level / 2, r["df"])) * r["se"]
    return d, r["diff"] - half, r["diff"] + half


METRICS = (  # column, label, unit, TOST margin kind ("abs" | "frac" | "rtt" | None), margin
    ("qdelay_median_ms", "queueing delay, median", "ms", "abs", QDELAY_MARGIN_MS),
    ("qdelay_p95_ms", "queueing delay, p95", "ms", "abs", QDELAY_MARGIN_MS),
    ("qdelay_p99_ms", "queueing delay, p99", "ms", None, np.nan),
    ("goodput_mbps", "goodput", "Mbit/s", "frac", GOODPUT_MARGIN_FRAC),
    ("drops_per_1000", "drops", "per 1000 packets", "frac", DROPS_MARGIN_FRAC),
    ("queue_pkts", "standing queue (sojourn)", "packets", None, np.nan),
    ("tc_queue_pkts", "standing queue (tc cross-check)", "packets", None, np.nan),
)
_QDELAY_METRICS = METRICS[:3]   # queueing-delay median, p95 (tested), p99 (reported): both tables
TCP_METRICS = _QDELAY_METRICS + (   # the TCP arms' table
    ("goodput_mbps", "goodput", "Mbit/s", "frac", GOODPUT_MARGIN_FRAC),
    ("rtt_mean_ms", "RTT, mean", "ms", "rtt", RTT_MARGIN_MS),
    ("rtt_p95_ms", "RTT, p95", "ms", None, np.nan),
    ("drops_per_1000", "drops (overflow + random loss)", "per 1000 packets", "frac", DROPS_MARGIN_FRAC),
    ("retrans_per_1000", "retransmissions", "per 1000 packets", None, np.nan),
)
CELL_KEYS = {"udp": ["model", "delay_ms"], "tcp": ["model", "cc", "loss_pct", "delay_ms"]}


def expected_verdict(model: str, delay_ms: float, form: str) -> str:
    """What section 4 predicts the queueing-delay TOST of a cell to find: "equivalent" when the predicted standing
    queues of shim and real netem differ by at most :data:`PLATEAU_TOLERANCE_PKTS`, "not equivalent" when they
    differ by more than the margin (:data:`QDELAY_MARGIN_MS` / s packets), "borderline" in between."""
    diff = abs(predicted_for(model, delay_ms, "shim", form) - predicted_for(model, delay_ms, "netem", form))
    if diff <= PLATEAU_TOLERANCE_PKTS:
        return "equivalent"
    return "not equivalent" if diff * S_MS > QDELAY_MARGIN_MS else "borderline"


def _cells(res: Results, traffic: str):
    """(cell as {key: value}, its valid arms) for every cell of ``traffic`` (:data:`CELL_KEYS`), in sorted order."""
    if traffic not in TRAFFICS:
        raise AnalysisError(f"traffic must be one of {TRAFFICS}, got {traffic!r}")
    runs = res.valid_runs
    keys = CELL_KEYS[traffic]
    for cell, r in runs[runs["traffic"] == traffic].groupby(keys, sort=True):
        yield dict(zip(keys, cell)), r


def _margin(kind: str, margin: float, netem_mean: float) -> float:
    if kind == "abs":
        return margin
    if kind == "rtt":
        return max(RTT_MARGIN_MS, RTT_MARGIN_FRAC * abs(netem_mean)) if np.isfinite(netem_mean) else RTT_MARGIN_MS
    return margin * abs(netem_mean)


def compare(res: Results, traffic: str = "udp") -> pd.DataFrame:
    """One row per cell (``traffic`` "udp": model, delay_ms; "tcp": model, cc, loss_pct, delay_ms) and metric
    (:data:`METRICS`, :data:`TCP_METRICS`) over the valid arms of that traffic: netem_* and shim_* (n, mean, t_low, t_high: 95 %
    t-interval of the per-arm values), diff (shim - netem) with its 90 % interval (diff_low, diff_high), the TOST
    margin ``delta`` (units of the metric; "frac" margins as a fraction of the netem mean), TOST p and ``verdict``
    ("equivalent", "not shown", "n/a"; "" for metrics without a test), and for the queueing-delay and queue rows the
    predicted difference (``predicted_diff``: ms or packets) and ``expected`` verdict (:func:`expected_verdict`)."""
    rows = []
    for cell, r in _cells(res, traffic):
        model, delay = cell["model"], cell["delay_ms"]
        pred_pkts = (predicted_for(model, delay, "shim", res.form) - predicted_for(model, delay, "netem", res.form)
                     if traffic == "udp" else np.nan)
        for col, label, unit, kind, margin in (METRICS if traffic == "udp" else TCP_METRICS):
            n = r.loc[r["implementation"] == "netem", col].to_numpy(dtype=float)
            s = r.loc[r["implementation"] == "shim", col].to_numpy(dtype=float)
            ns, ss = _ci(n), _ci(s)
            row = dict(cell, metric=label, unit=unit)
            row.update({f"netem_{k}": v for k, v in ns.items()})
            row.update({f"shim_{k}": v for k, v in ss.items()})
            if kind:
                delta = _margin(kind, margin, ns["mean"])
                eq = equivalence(s, n, delta)
                diff, lo, hi, p, verdict = eq["diff"], eq["diff_low"], eq["diff_high"], eq["p"], eq["verdict"]
                if not np.isfinite(diff):
                    diff, lo, hi = diff_interval(s, n)
            else:
                delta, p, verdict = np.nan, np.nan, ""
                diff, lo, hi = diff_interval(s, n)
            if traffic == "tcp":
                pred, expected = np.nan, ""
            elif col in ("qdelay_median_ms", "qdelay_p95_ms"):
                pred, expected = pred_pkts * S_MS, expected_verdict(model, delay, res.form)
            elif col in ("queue_pkts", "tc_queue_pkts"):
                pred, expected = pred_pkts, ""
            else:
                pred, expected = np.nan, ""
            row.update(diff=diff, diff_low=lo, diff_high=hi, delta=delta, tost_p=p, verdict=verdict,
                       predicted_diff=pred, expected=expected)
            rows.append(row)
    return pd.DataFrame(rows)


def calibration(res: Results) -> pd.DataFrame:
    """Section 7 step 2 per (model, delay_ms, implementation) over the valid UDP arms: arms, mean standing queue from
    the sojourns and from tc (packets, with the qdisc read), the prediction (packets, :func:`predicted_for` with the
    guest's kernel form), measured - predicted and ``within_1`` (|measured - predicted| <= 1 packet), the mean
    queueing-delay median (ms), and for the shim the mean share of releases more than 1 ms late."""
    runs = res.valid_runs
    runs = runs[runs["traffic"] == "udp"]
    rows = []
    for (model, delay, impl), r in runs.groupby(["model", "delay_ms", "implementation"], sort=True):
        pred = predicted_for(model, delay, impl, res.form)
        m = float(r["queue_pkts"].mean())
        rows.append({"model": model, "delay_ms": delay, "implementation": impl, "arms": int(len(r)),
                     "queue_pkts": m, "tc_queue_pkts": float(r["tc_queue_pkts"].mean()),
                     "tc_qdisc": TC_QUEUE[(model, impl)][0] + " " + TC_QUEUE[(model, impl)][1]
                     + (" - d/s" if TC_QUEUE[(model, impl)][2] == "shared" else ""),
                     "predicted_pkts": pred, "measured_minus_predicted": m - pred,
                     "within_1": bool(abs(m - pred) <= PLATEAU_TOLERANCE_PKTS) if np.isfinite(m) else False,
                     "qdelay_median_ms": float(r["qdelay_median_ms"].mean()),
                     "shim_late1_share": float(r["shim_late1_share"].mean()) if impl == "shim" else np.nan})
    return pd.DataFrame(rows)


def positive_control(res: Results) -> pd.DataFrame:
    """Per delay: the shim's fifo-after-delay (every earlier namespace recording) against real recipe A (netem
    tbf-netem), median queueing delay (ms): shim - netem with its 90 % interval, the predicted difference (ms,
    section 4: N_d packets = about d ms), the TOST against +-:data:`QDELAY_MARGIN_MS` and ``detected`` (the 90 %
    interval excludes 0). With predicted differences of 25 and 50 ms the TOST must come out "not shown" and the
    difference be detected, or the comparison has no power. UDP arms only."""
    runs = res.valid_runs
    runs = runs[runs["traffic"] == "udp"]
    rows = []
    for delay in sorted(runs["delay_ms"].unique()):
        s = runs.loc[(runs["model"] == "fifo-after-delay") & (runs["implementation"] == "shim")
                     & (runs["delay_ms"] == delay), "qdelay_median_ms"].to_numpy(dtype=float)
        n = runs.loc[(runs["model"] == "tbf-netem") & (runs["implementation"] == "netem")
                     & (runs["delay_ms"] == delay), "qdelay_median_ms"].to_numpy(dtype=float)
        if not (len(s) and len(n)):
            continue
        eq = equivalence(s, n, QDELAY_MARGIN_MS)
        diff, lo, hi = (eq["diff"], eq["diff_low"], eq["diff_high"]) if np.isfinite(eq["diff"]) \
            else diff_interval(s, n)
        pred = (predicted_for("fifo-after-delay", delay, "shim", res.form)
                - predicted_for("tbf-netem", delay, "netem", res.form)) * S_MS
        rows.append({"delay_ms": delay, "shim_n": int(np.isfinite(s).sum()), "netem_n": int(np.isfinite(n).sum()),
                     "diff": diff, "diff_low": lo, "diff_high": hi, "predicted_diff": pred, "tost_p": eq["p"],
                     "verdict": eq["verdict"],
                     "detected": bool(np.isfinite(lo) and np.isfinite(hi) and (lo > 0 or hi < 0))})
    return pd.DataFrame(rows)


QCOL = {10: "qdelay_p10_ms", 25: "qdelay_p25_ms", 50: "qdelay_median_ms", 75: "qdelay_p75_ms",
        90: "qdelay_p90_ms", 95: "qdelay_p95_ms", 99: "qdelay_p99_ms"}


def distribution(res: Results, traffic: str = "tcp") -> pd.DataFrame:
    """The queueing-delay distributions of shim and real netem, cell by cell (:data:`CELL_KEYS`) over the valid arms
    of ``traffic``: one row per cell and quantile of :data:`QGRID` (``pct``) with the mean per-arm quantile of each
    side (ms), shim - netem and its 90 % Welch interval over arms (ms), and per cell the Kolmogorov-Smirnov distance
    ``ks`` of the two pooled steady-window histograms (:func:`ks_distance`; descriptive, resolution
    :data:`HIST_BIN_MS` ms)."""
    rows = []
    for cell, r in _cells(res, traffic):
        rn, rs = r[r["implementation"] == "netem"], r[r["implementation"] == "shim"]
        hn = merge_histograms(res.hists.get(x, qdelay_histogram([])) for x in rn["run"])
        hs = merge_histograms(res.hists.get(x, qdelay_histogram([])) for x in rs["run"])
        ks = ks_distance(hs, hn)
        for pct in QGRID:
            n = rn[QCOL[pct]].to_numpy(dtype=float)
            sh = rs[QCOL[pct]].to_numpy(dtype=float)
            diff, lo, hi = diff_interval(sh, n)
            rows.append(dict(cell, pct=pct, netem_n=int(np.isfinite(n).sum()), shim_n=int(np.isfinite(sh).sum()),
                             netem_mean=float(np.nanmean(n)) if np.isfinite(n).any() else np.nan,
                             shim_mean=float(np.nanmean(sh)) if np.isfinite(sh).any() else np.nan,
                             diff=diff, diff_low=lo, diff_high=hi, ks=ks))
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- output
_f, _p, _mean_ci, _md = markdown_table.num, markdown_table.pvalue, markdown_table.mean_ci, markdown_table.table


def _d(x) -> str:
    return f"{x:g}"


_FORM_TEXT = {"k6": "K6 (netem's limit counts delay line + child queue)",
              "k4": "K4 without K6 (the limit counts the delay line; +1 packet in recipe A)",
              "pre-k4": "neither K4 nor K6 (v4.15 counting)",
              "unknown": "not recorded: predictions assume K6, the box's 6.1.192"}


def _margin_text(r, nd: int) -> str:
    if not np.isfinite(r["delta"]):
        return "—"
    if r["metric"] == "goodput":
        return f"±{_f(r['delta'], nd)} (5 % of netem)"
    if r["metric"].startswith("drops"):
        return f"±{_f(r['delta'], nd)} (15 % of netem)"
    if r["metric"].startswith("RTT"):
        return f"±{_f(r['delta'], nd)} (max of 3 ms, 5 % of netem)"
    return f"±{_f(r['delta'], nd)}"


def _tcp_section(res: Results) -> list[str]:
    cmp_, dist = compare(res, "tcp"), distribution(res, "tcp")
    if not len(cmp_):
        return []
    parts = ["\nTCP arms: one iperf3 flow per arm through the switch, real netem against the shim, per queue model,"
             " congestion control, random loss on the data direction (real netem: netem's own `loss`; shim: the"
             " iptables rule the namespace backend uses) and one-way delay d per interface. Goodput = sequence-space"
             " progress through the switch over the steady window; RTT = iperf3's samples of the sender's smoothed"
             " RTT (every 0.5 s) over the steady window; drops = overflow and random loss, from the qdisc, shim and"
             " iptables counters:\n"]
    rows = []
    for _, r in cmp_.iterrows():
        nd = 3 if r["unit"] == "Mbit/s" else 2
        rows.append([r["model"], r["cc"], _d(r["loss_pct"]), _d(r["delay_ms"]), f"{r['metric']} ({r['unit']})",
                     f"{_mean_ci(r['netem_mean'], r['netem_t_low'], r['netem_t_high'], nd)} (n={r['netem_n']})",
                     f"{_mean_ci(r['shim_mean'], r['shim_t_low'], r['shim_t_high'], nd)} (n={r['shim_n']})",
                     _mean_ci(r["diff"], r["diff_low"], r["diff_high"], nd), _margin_text(r, nd),
                     _p(r["tost_p"]), r["verdict"] or "—"])
    parts.append(_md(["model", "cc", "loss (%)", "d (ms)", "metric", "real netem", "shim", "shim − netem [90 %]",
                      "TOST margin", "TOST p", "equivalence"], rows))
    if len(dist):
        parts.append("\nTCP queueing-delay distributions: shim − netem of each arm's steady-window quantile, mean"
                     " over arms [90 % Welch interval] (ms), and the Kolmogorov-Smirnov distance of the pooled"
                     f" histograms ({HIST_BIN_MS:g}-ms bins; descriptive):\n")
        keys = CELL_KEYS["tcp"]
        drows = []
        for cell, g in dist.groupby(keys, sort=True):
            g = g.set_index("pct")
            drows.append([cell[0], cell[1], _d(cell[2]), _d(cell[3]),
                          f"{g['netem_n'].iloc[0]} / {g['shim_n'].iloc[0]}"]
                         + [_mean_ci(g.loc[p, "diff"], g.loc[p, "diff_low"], g.loc[p, "diff_high"], 1)
                            for p in QGRID] + [_f(g["ks"].iloc[0], 3)])
        parts.append(_md(["model", "cc", "loss (%)", "d (ms)", "arms (netem / shim)"]
                         + [f"p{p}" for p in QGRID] + ["KS"], drows))
    pu = punctuality(res, cmp_)
    if len(pu):
        parts.append("\nThe shim's punctuality in the TCP arms: the share of its releases more than 1 ms and more"
                     " than 5 ms after their due time (mean over arms) and the largest lateness, next to the cell's"
                     " TOST verdicts (metrics tested / shown equivalent). The shim runs in user space; under TCG every"
                     " packet's trip through NFQUEUE is emulated, so lateness here measures the VM as much as the"
                     " shim:\n")
        parts.append(_md(["model", "cc", "loss (%)", "d (ms)", "shim arms", "> 1 ms late", "> 5 ms late",
                          "max late (ms)", "equivalent / tested"],
                         [[r["model"], r["cc"], _d(r["loss_pct"]), _d(r["delay_ms"]), r["arms"],
                           f"{100 * r['late1']:.1f} %", f"{100 * r['late5']:.2f} %", _f(r["max_late_ms"], 1),
                           f"{r['equivalent']} / {r['tested']}"] for _, r in pu.iterrows()]))
    return parts


def punctuality(res: Results, cmp_: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per TCP cell (model, cc, loss_pct, delay_ms): the shim arms' mean share of releases > 1 ms and > 5 ms late,
    the largest lateness (ms), and of the cell's TOST-tested metrics how many were shown equivalent."""
    keys = CELL_KEYS["tcp"]
    runs = res.valid_runs
    sh = runs[(runs["traffic"] == "tcp") & (runs["implementation"] == "shim")]
    if sh.empty:
        return pd.DataFrame(columns=keys + ["arms", "late1", "late5", "max_late_ms", "tested", "equivalent"])
    cmp_ = compare(res, "tcp") if cmp_ is None else cmp_
    rows = []
    for cell, g in sh.groupby(keys, sort=True):
        c = cmp_
        for k, v in zip(keys, cell):
            c = c[c[k] == v]
        tested = c[c["verdict"].isin(["equivalent", "not shown"])]
        rows.append(dict(zip(keys, cell), arms=len(g), late1=float(g["shim_late1_share"].mean()),
                         late5=float(pd.to_numeric(g["shim_late5_share"], errors="coerce").mean()),
                         max_late_ms=float(pd.to_numeric(g["shim_max_late_ms"], errors="coerce").max()),
                         tested=len(tested), equivalent=int((tested["verdict"] == "equivalent").sum())))
    return pd.DataFrame(rows)


def lateness_dependence(res: Results, metric: str = "goodput_mbps") -> pd.DataFrame:
    """Does the shim's lateness explain its TCP differences from netem? An exploratory analysis (added after the
    first five reps showed BBR under loss lower with the shim): per congestion control and loss, every (rep, model,
    delay) pair of a shim arm and the netem arm of the same cell and rep gives the relative difference
    y = 100 * (shim - netem) / (the cell's netem mean) (%) and the shim arm's share of releases more than 1 ms late,
    x (%). Least squares with one intercept per cell (model, delay) and one common slope, y = a_cell + b x:
    ``slope`` (b, % of the metric per percentage point of late releases, from the variation within cells) and
    ``intercept_pct`` (the mean of the a_cell: the difference the line puts at no lateness, an extrapolation below
    ``late_min_pct``), both with 95 % t-intervals; Spearman's rho of x and y after removing each cell's means, with its
    p; n pairs. An association, not a proof of cause."""
    keys = ["model", "cc", "loss_pct", "delay_ms"]
    runs = res.valid_runs
    tcp = runs[runs["traffic"] == "tcp"]
    cols = ["cc", "loss_pct", "n", "cells", "late_mean_pct", "late_min_pct", "intercept_pct", "intercept_low",
            "intercept_high", "slope", "slope_low", "slope_high", "rho", "rho_p"]
    if tcp.empty:
        return pd.DataFrame(columns=cols)
    net = tcp[tcp["implementation"] == "netem"]
    cell_mean = net.groupby(keys)[metric].mean().rename("netem_cell_mean")
    pairs = tcp[tcp["implementation"] == "shim"].merge(
        net[keys + ["rep", metric]].rename(columns={metric: "netem_value"}), on=keys + ["rep"]).merge(
        cell_mean.reset_index(), on=keys)
    pairs = pairs.assign(x=100 * pd.to_numeric(pairs["shim_late1_share"], errors="coerce"),
                         y=100 * (pairs[metric] - pairs["netem_value"]) / pairs["netem_cell_mean"])
    rows = []
    for (cc, loss), g in pairs.groupby(["cc", "loss_pct"], sort=True):
        g = g[np.isfinite(g["x"]) & np.isfinite(g["y"])]
        cell = g.groupby(["model", "delay_ms"], sort=True).ngroup().to_numpy()
        n, k = len(g), int(cell.max()) + 1 if len(g) else 0
        row = dict(cc=cc, loss_pct=loss, n=n, cells=k, late_mean_pct=float(g["x"].mean()) if n else np.nan,
                   late_min_pct=float(g["x"].min()) if n else np.nan)
        x, y = g["x"].to_numpy(), g["y"].to_numpy()
        xc = x - pd.Series(x).groupby(cell).transform("mean").to_numpy()
        if n - k - 1 >= 2 and np.var(xc) > 0:
            design = np.column_stack([np.eye(k)[cell], x])
            beta, *_ = np.linalg.lstsq(design, y, rcond=None)
            dof = n - k - 1
            cov = float(np.sum((y - design @ beta) ** 2)) / dof * np.linalg.inv(design.T @ design)
            w = np.append(np.full(k, 1.0 / k), 0.0)
            a, a_se = float(w @ beta), float(np.sqrt(w @ cov @ w))
            b, b_se = float(beta[-1]), float(np.sqrt(cov[-1, -1]))
            tq = float(_st.t.ppf(0.975, dof))
            yc = y - pd.Series(y).groupby(cell).transform("mean").to_numpy()
            rho, rho_p = _st.spearmanr(xc, yc)
            row.update(intercept_pct=a, intercept_low=a - tq * a_se, intercept_high=a + tq * a_se, slope=b,
                       slope_low=b - tq * b_se, slope_high=b + tq * b_se, rho=float(rho), rho_p=float(rho_p))
        rows.append(row)
    return pd.DataFrame(rows, columns=cols)

def report(res: Results, per_run: bool = False) -> str:
    """The comparison as a Markdown document: the shim - netem table per UDP cell, the TCP arms' table and their
    queueing-delay distributions, the calibration against section 4, the positive control, excluded arms;
    ``per_run`` adds one row per arm."""
    cmp_, cal, pc = compare(res, "udp"), calibration(res), positive_control(res)
    bad = res.runs[~res.runs["valid"].astype(bool)]
    g = res.meta.get("guest_kernel") or res.setup.get("uname_r") or "?"
    pkg = res.meta.get("guest_kernel_package") or res.setup.get("kernel_package")
    parts = [f"Arms: {len(res.valid_runs)} valid of {len(res.runs)}; guest kernel {g}"
             + (f" ({pkg})" if pkg else "") + f"; netem patches: {_FORM_TEXT[res.form]}"
             + (f"; {res.meta['reps']} reps (UDP arms in reps 1..{res.meta.get('udp_reps', res.meta['reps'])},"
                f" {res.meta['duration_s']} s; TCP arms {res.meta.get('tcp_duration_s', '—')} s)"
                if res.meta.get("reps") else "")
             + ". Steady window: the last 60 % of each flow. Mean [95 % t-interval] over arms; shim − netem with its"
             f" 90 % interval (the TOST interval); TOST at alpha = {ALPHA}; \"expected\" is section 4's prediction"
             " for this kernel.\n"]
    rows = []
    for _, r in cmp_.iterrows():
        nd = 3 if r["unit"] == "Mbit/s" else 2
        margin = _margin_text(r, nd)
        rows.append([r["model"], _d(r["delay_ms"]), f"{r['metric']} ({r['unit']})",
                     f"{_mean_ci(r['netem_mean'], r['netem_t_low'], r['netem_t_high'], nd)} (n={r['netem_n']})",
                     f"{_mean_ci(r['shim_mean'], r['shim_t_low'], r['shim_t_high'], nd)} (n={r['shim_n']})",
                     _mean_ci(r["diff"], r["diff_low"], r["diff_high"], nd), _f(r["predicted_diff"], 1), margin,
                     _p(r["tost_p"]), r["verdict"] or "—", r["expected"] or "—"])
    if rows:
        parts.append("UDP calibration arms (12 Mbit/s of 1448-byte datagrams, 20 % overload):\n")
        parts.append(_md(["model", "d (ms)", "metric", "real netem", "shim", "shim − netem [90 %]", "predicted",
                          "TOST margin", "TOST p", "equivalence", "expected"], rows))
    parts.extend(_tcp_section(res))
    ld = lateness_dependence(res)
    if len(ld):
        parts.append("\nExploratory (added after five reps): the TCP arms' goodput difference against the shim's"
                     " lateness, per congestion control and loss. Each pair is a shim arm and the netem arm of the same"
                     " cell and rep; y = (shim − netem) / the cell's netem mean (%), x = the shim arm's releases > 1 ms"
                     " late (%); least squares y = a_cell + b·x (one intercept per model and delay, one slope b from the"
                     " variation within cells); a = the mean of the a_cell, the line at no lateness (an extrapolation"
                     " below the least lateness measured); rho = Spearman's after removing each cell's means:\n")
        parts.append(_md(["cc", "loss (%)", "pairs (cells)", "late > 1 ms, mean / least (%)",
                          "b: % per point of lateness [95 %]", "a: line at no lateness (%) [95 %]", "rho within cells (p)"],
                         [[r["cc"], _d(r["loss_pct"]), f"{r['n']} ({r['cells']})",
                           f"{_f(r['late_mean_pct'], 1)} / {_f(r['late_min_pct'], 1)}",
                           _mean_ci(r["slope"], r["slope_low"], r["slope_high"], 3),
                           _mean_ci(r["intercept_pct"], r["intercept_low"], r["intercept_high"], 2),
                           "—" if not np.isfinite(r["rho"]) else f"{r['rho']:.2f} ({_p(r['rho_p'])})"]
                          for _, r in ld.iterrows()]))
    if len(cal):
        parts.append("\nCalibration (section 7, step 2): standing queue in packets (s = 1.192 ms per 1490-byte frame),"
                     " from the sojourns (median queueing delay / s) and from tc (the qdisc named, median qlen); pass ="
                     " within ±1 packet of section 4's prediction:\n")
        parts.append(_md(["model", "d (ms)", "implementation", "arms", "queue, sojourn (packets)",
                          "queue, tc (packets) [qdisc]", "predicted (packets)", "measured − predicted", "within ±1",
                          "queueing delay, median (ms)", "shim releases > 1 ms late"],
                         [[r["model"], _d(r["delay_ms"]), r["implementation"], r["arms"], _f(r["queue_pkts"], 1),
                           f"{_f(r['tc_queue_pkts'], 1)} [{r['tc_qdisc']}]", _f(r["predicted_pkts"], 1),
                           _f(r["measured_minus_predicted"], 1), "yes" if r["within_1"] else "no",
                           _f(r["qdelay_median_ms"], 1),
                           "—" if not np.isfinite(r["shim_late1_share"]) else f"{100 * r['shim_late1_share']:.2f} %"]
                          for _, r in cal.iterrows()]))
    if len(pc):
        parts.append("\nPositive control: the shim's fifo-after-delay against real recipe A (netem tbf-netem),"
                     " median queueing delay (ms); the comparison has power only if the differences of 25 and 50 ms"
                     " are detected (90 % interval away from 0, TOST not shown):\n")
        parts.append(_md(["d (ms)", "arms (shim / netem)", "shim fifo − netem tbf-netem [90 %]", "predicted",
                          "TOST p (±5 ms)", "equivalence", "detected"],
                         [[_d(r["delay_ms"]), f"{r['shim_n']} / {r['netem_n']}",
                           _mean_ci(r["diff"], r["diff_low"], r["diff_high"], 2), _f(r["predicted_diff"], 1),
                           _p(r["tost_p"]), r["verdict"], "yes" if r["detected"] else "no"]
                          for _, r in pc.iterrows()]))
    if per_run:
        parts.append("\nPer arm:\n")
        parts.append(_md(["arm", "order", "packets in / out / matched", "sojourn min (ms)",
                          "queueing delay median / p95 / p99 (ms)", "queue sojourn / tc (packets)",
                          "tc samples (median interval, ms)",
                          "drops qdisc + shim + loss (pcap)", "drops per 1000", "goodput (Mbit/s)",
                          "RTT mean / p95 (ms)", "retransmits", "valid"],
                         [[r["run"], r["order_in_rep"],
                           f"{_f(r['n_in'], 0)} / {_f(r['n_out'], 0)} / {_f(r['n_matched'], 0)}",
                           _f(r["sojourn_min_ms"], 2),
                           " / ".join(_f(r[c], 1) for c in ("qdelay_median_ms", "qdelay_p95_ms", "qdelay_p99_ms")),
                           f"{_f(r['queue_pkts'], 1)} / {_f(r['tc_queue_pkts'], 1)}",
                           f"{_f(r['tc_samples'], 0)} ({_f(r['tc_interval_ms'], 1)})",
                           f"{_f(r['drops_qdisc'], 0)} + {_f(r['drops_shim'], 0)} + {_f(r['drops_loss'], 0)}"
                           f" ({_f(r['drops_pcap'], 0)})",
                           _f(r["drops_per_1000"], 1), _f(r["goodput_mbps"], 3),
                           f"{_f(r['rtt_mean_ms'], 1)} / {_f(r['rtt_p95_ms'], 1)}", _f(r["retransmits"], 0),
                           "yes" if r["valid"] else f"no: {r['problem']}"] for _, r in res.runs.iterrows()]))
    if len(bad):
        parts.append("\nExcluded arms: " + "; ".join(f"{r['run']} ({r['problem']})" for _, r in bad.iterrows()))
    return "\n".join(parts) + "\n"


# ---------------------------------------------------------------- the committed form
#: what :func:`export` copies of each arm (into the runs archive), and of the results directory
EXPORT_ARM_FILES = ("run.json", "iperf3.json", "switch.log", "shim.log", "tcpdump-sw-a.err", "tcpdump-sw-b.err",
                    "client.err", "server.log", "tc.err")
EXPORT_TOP_FILES = ("meta.json", "setup.json", "params.json")


def export(results_dir, dest) -> int:
    """Write the committed form of a results directory into ``dest`` (which must not exist): per arm the small files
    (:data:`EXPORT_ARM_FILES`) and ``derived.json`` (version :data:`DERIVED_VERSION`: the :data:`RUN_COLUMNS` row and
    the steady window's queueing-delay histogram, computed from the captures here, with the sha256 of each capture and
    of tc.txt it was computed from), all packed into one ``runs.tar.xz`` (analysis/validation_store.py); the captures
    and tc samples themselves are left out. Top level: :data:`EXPORT_TOP_FILES`, setup-rep*.json, guest logs (xz),
    reps/. The shim's bytes (DIR/shim/: the binary, its libraries, switch.sh and the guest script) stay out: meta.json
    names each by sha256 and git blob or commit, and the scripts are the repository's own. Returns the number of arms
    written."""
    src, dst = Path(results_dir), Path(dest)
    tmp = partial_dir(dst)

    def xz_copy(a: Path, b: Path) -> None:
        if a.suffix in (".xz", ".gz"):
            shutil.copy2(a, b.parent / a.name)
            return
        with open(a, "rb") as f, lzma.open(b.with_name(b.name + ".xz"), "wb", preset=9 | lzma.PRESET_EXTREME) as g:
            shutil.copyfileobj(f, g)

    def sha(p: Path | None):
        return hashlib.sha256(p.read_bytes()).hexdigest() if p is not None else None

    with run_dirs(src, RUN_MARKERS) as dirs:
        if not dirs:
            raise AnalysisError(f"{src}: no runs/*/run.json (not a netem-validation results directory)")
        for d in dirs:
            row, hist = load_arm_full(d)
            out = tmp / "runs" / d.name
            out.mkdir(parents=True)
            for name in EXPORT_ARM_FILES:
                p = _find(d, name)
                if p is not None:
                    shutil.copy2(p, out / p.name)
            doc = {"version": DERIVED_VERSION, "computed_by": "analysis.netem_validation.load_arm_full",
                   "from": {"sw-a.pcap": sha(_find(d, "sw-a.pcap")), "sw-b.pcap": sha(_find(d, "sw-b.pcap")),
                            "tc.txt": sha(_find(d, "tc.txt"))},
                   "row": {c: _jsonable(row[c]) for c in RUN_COLUMNS}, "hist": hist}
            (out / "derived.json").write_text(json.dumps(doc, sort_keys=True) + "\n")
        n = len(dirs)
    for name in EXPORT_TOP_FILES:
        if (src / name).is_file():
            (tmp / name).write_text(portable_paths((src / name).read_text()))
    for p in sorted(src.glob("setup-rep*.json")):
        shutil.copy2(p, tmp / p.name)
    for p in sorted(src.glob("guest*.log")) + sorted(src.glob("console.log")):
        xz_copy(p, tmp / p.name)
    if (src / "reps").is_dir():
        shutil.copytree(src / "reps", tmp / "reps")
    pack(tmp)
    tmp.rename(dst)
    return n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m analysis.netem_validation",
                                 description="Real netem vs the delay shim's emulation, per queue model and delay: "
                                             "Markdown tables from a testbed/delayshim/validate-vm.sh results "
                                             "directory.")
    ap.add_argument("results_dir", help="results directory (validate-vm.sh --out)")
    ap.add_argument("--runs", action="store_true", help="also one row per arm")
    ap.add_argument("--export", metavar="DEST", help="write the committed form (no captures: derived.json per arm) "
                                                     "to the new directory DEST instead of printing")
    args = ap.parse_args(argv)
    try:
        if args.export:
            n = export(args.results_dir, args.export)
            print(f"{n} arms exported to {args.export}", file=sys.stderr)
            return 0
        res = load_results(args.results_dir)
        sys.stdout.write(report(res, per_run=args.runs))
    except AnalysisError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
