#!/usr/bin/env python3
"""Study 004's emulated links against ns-2's own under load (docs/ns2-004.md, section 11).

The same offered traffic, UDP constant bit rate (no congestion control, so neither simulator's TCP gets in the way),
over flow 1's path of a study 004 topology (testbed/families/004/<T>.json, error rate 0 on both sides):

* **ns-2 side** (Debian's ns-2 2.35, ``ns``): a generated Tcl script (``sim.tcl``) builds the topology as
  testbed/ns2_004/run.sh does (nodes n0, n1, ... in order; every link a ``duplex-link`` at rate_mbit / delay_ms with
  a DropTail ``queue-limit`` of buffer_pkts in both directions), and sends ``Agent/UDP`` + ``Application/Traffic/CBR``
  with ``packetSize_ 592`` (ns-2 adds no header to a UDP packet: the trace shows the CBR's packetSize_, so 592 is the
  IP packet of our side, 20 IP + 8 UDP + 564 payload) at ``rate_`` = load × the path's slowest link rate (bit/s of
  592-byte packets), from 0 s for ``--duration-s`` seconds, ``random_`` 0. One-way delay of a packet: its ``r`` at
  the receiver node minus its ``+`` at the sender node (the first link's queue included), per ns-2 uid.
* **our side** (root): ``MPCC_NS_PREFIX=<prefix> testbed/chain.sh up --topology-name T --error-rate 0
  --store-and-forward``, an idle ping (ARP and the delay shims' queues, the only warm-up: no traffic is discarded),
  tcpdump (snaplen 128, ``udp port 5201``) on the flow's ``sender_if`` in ``<prefix><sender>`` and ``receiver_if`` in
  ``<prefix><receiver>``, ``iperf3 -s -1`` on the receiver and ``iperf3 -c RECEIVER -B SENDER -u -b B -l 564 -t S``
  (iperf3's -b counts UDP payload bits: B = the IP rate × 564 / 592), then each link's ``tc -s qdisc`` (pfifo drops)
  and its delay shims' own release-lateness report (SIGUSR1), then ``chain.sh down`` (always: a finally clause).
  Packets are matched between the two captures on their IPv4 ID (iperf3's connected UDP socket numbers its packets
  one by one; unwrapped past 65535 along each capture's order, which a FIFO path keeps).
* **ns-2 replay** of every run of ours: the same ns-2 topology fed our sender capture's send times (one
  ``$udp send 592`` per captured packet, ``send_times.txt``), so that the link models are compared packet for
  packet with iperf3's pacing taken out; per-packet differences ours − ns-2.

Per run (``summary.json``; units in the key names): packets sent, received, lost, ``loss_pct``;
``offered_rate_mbit`` and ``delivered_rate_mbit`` (IP bytes: (n − 1) × 592 × 8 over the span from the first to the
last send, resp. arrival, Mbit/s); one-way delay ``delay_mean_ms``, ``delay_median_ms``, ``delay_p95_ms`` (numpy's
linear percentile), min, max, ``delay_late_mean_ms`` (packets sent in the last third of the send span: the queue's
steady state under overload); ``rx_gap_short_share`` (arrival gaps shorter than 0.9 × the slowest link's 592-byte
transmission time: packets that left the bottleneck faster than its rate, which a store-and-forward link never lets
happen); ``timeline`` (per second of send time: sent, received, mean delay). Ours also: ``queues`` (each link's pfifo
packets/drops per direction), ``shim`` (per link, the data direction's shim: released, late > 1 ms, late > 5 ms,
max lateness µs), ``idle_ping``, host load averages.

Verdict per (topology, load), tolerances fixed before the runs (:data:`TOLERANCE`): mean, median and p95 delay
within max(1 ms, 2 % of ns-2's), delivered rate within 1 % of ns-2's, loss within 1 percentage point.

usage: python tools/validate_links004.py --out DIR [--topologies client_server,multihop_varied]
           [--loads 50,90,110,150] [--duration-s 30] [--repeat client_server:110] [--htb client_server:110,...]
           [--tuned-q T:L,...] [--tuned-qb T:L,...] [--sides both|ns2|ours] [--prefix vsf-] [--ns-binary ns]
           [--summaries-only]
       python tools/validate_links004.py --report DIR      # the comparison of a results directory, Markdown
       python tools/validate_links004.py --pack DIR        # its committed form: runs/ packed into runs.tar.xz
  --repeat T:L,...   our side once more at these cells (repeatability; "none" for none)
  --htb T:L,...      our side also without --store-and-forward (the htb links of the recordings before 2026-11-27;
                     "none" for none); default client_server:110,multihop_varied:110
  --tuned-q T:L,...  our side also with each pfifo one packet shorter (49: ns-2's DropTail queue-limit 50 holds 49
                     waiting packets besides the one on the wire); default client_server:110,multihop_varied:110
  --tuned-qb T:L,... the same and each htb class's burst/cburst one packet (592 B, tc's default is 1600 B); same
                     default. Both diagnostic: they change only this run's own namespaces, never chain.sh
  --summaries-only   delete the pcaps and ns-2 traces once summarised (what data/ns2-004/links-validation keeps)
Writes DIR (must not exist; nothing is overwritten): meta.json, comparison.csv, comparison.md,
runs/<side>__<topology>__load<NNN>[__htb|__q|__qb][__repN]/ (side ns2, ours, ns2replay). Exit 0 done, 1 a run failed,
2 bad input (one line "error: ...").
"""
from __future__ import annotations

import argparse
import datetime as _dt
import gzip
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from analysis.ns2_004 import noqueue_delay_s, parse_trace  # noqa: E402

FAMILY_DIR = REPO / "testbed" / "families" / "004"
CHAIN = REPO / "testbed" / "chain.sh"
TOPOLOGIES = ("client_server", "multihop_varied")
PKT_BYTES = 592            # IP packet (the topologies' mtu)
UDP_PAYLOAD = 564          # 592 - 20 (IP) - 8 (UDP)
PORT = 5201
SNAPLEN = 128
DRAIN_S = 5.0              # ns-2 runs this long past the last send (the longest queue + path is < 1 s)
SHORT_GAP = 0.9            # an arrival gap below 0.9 x the bottleneck's transmission time is "short"
TOLERANCE = {"delay_abs_ms": 1.0, "delay_rel": 0.02, "rate_rel": 0.01, "loss_pp": 1.0}
DELAY_KEYS = ("delay_mean_ms", "delay_median_ms", "delay_p95_ms")
DEFAULTS = {"topologies": ",".join(TOPOLOGIES), "loads": "50,90,110,150", "duration": 30,
            "repeat": "client_server:110", "htb": "client_server:110,multihop_varied:110",
            "tuned": "client_server:110,multihop_varied:110", "prefix": "vsf-"}


class InputError(Exception):
    """Bad input: printed as one line ``error: ...``, exit 2."""


def log(msg: str) -> None:
    print(f"[{_dt.datetime.now(_dt.timezone.utc):%H:%M:%S}] validate_links004: {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------------ topology

def load_topology(name: str) -> dict:
    if name not in TOPOLOGIES:
        raise InputError(f"topology must be one of {', '.join(TOPOLOGIES)}, got '{name}'")
    return json.loads((FAMILY_DIR / f"{name}.json").read_text())


def path_links(topo: dict, flow: int = 1) -> list[dict]:
    """The links flow ``flow`` crosses, in order (dicts of the topology file)."""
    by_name = {lk["name"]: lk for lk in topo["links"]}
    f = next(f for f in topo["flows"] if f["flow"] == flow)
    return [by_name[n] for n in f["path"]]


def slowest_rate_mbit(links: list[dict]) -> float:
    return float(min(lk["rate_mbit"] for lk in links))


def offered_rate_bps(load_pct: float, links: list[dict]) -> float:
    """The offered IP rate (bit/s of 592-byte packets) at ``load_pct`` % of the path's slowest link."""
    return load_pct / 100.0 * slowest_rate_mbit(links) * 1e6


def iperf3_bitrate(ip_rate_bps: float, payload: int = UDP_PAYLOAD, ip_bytes: int = PKT_BYTES) -> int:
    """iperf3's ``-b`` (it counts UDP payload bits) for an IP rate of ``ip_rate_bps``, whole bit/s."""
    return int(round(ip_rate_bps * payload / ip_bytes))


def noqueue_delay_ms(links: list[dict], size: int = PKT_BYTES) -> float:
    """A lone packet's one-way delay: Σ (delay + size·8 / rate), ms (``analysis.ns2_004.noqueue_delay_s``)."""
    return 1000.0 * noqueue_delay_s(links, size)


def parse_cells(spec: str, what: str) -> list[tuple[str, int]]:
    """``T:L,T:L`` (or "none"/"") -> [(topology, load %)]."""
    if spec in ("", "none"):
        return []
    out = []
    for item in spec.split(","):
        m = re.fullmatch(r"([a-z_]+):([0-9]{1,3})", item)
        if not m:
            raise InputError(f"{what}: '{item}' is not TOPOLOGY:LOAD (e.g. client_server:110)")
        t, ld = m.group(1), int(m.group(2))
        if t not in TOPOLOGIES:
            raise InputError(f"{what}: unknown topology '{t}' (one of {', '.join(TOPOLOGIES)})")
        if not 1 <= ld <= 500:
            raise InputError(f"{what}: load {ld} must be 1..500 (% of the slowest link)")
        if (t, ld) in out:
            raise InputError(f"{what}: '{item}' given twice")
        out.append((t, ld))
    return out


# ------------------------------------------------------------------------------------------------ ns-2 side

def _tcl_common(topo: dict, header: list[str]) -> list[str]:
    nodes = sorted((k for k, v in topo["nodes"].items() if v["role"] in ("host", "router")), key=lambda n: int(n[1:]))
    f = next(f for f in topo["flows"] if f["flow"] == 1)
    lines = [f"# {h}" for h in header] + [
        "set ns [new Simulator]",
        "set tf [open trace.tr w]",
        "$ns trace-all $tf",
        "# nodes in order: ns-2 node k is nK",
        *[f"set n({n}) [$ns node]" for n in nodes],
        "# links: rate, one-way delay (each direction), DropTail buffer in packets (each direction)",
    ]
    for lk in topo["links"]:
        lines += [f"$ns duplex-link $n({lk['a']}) $n({lk['b']}) {lk['rate_mbit']}Mb {lk['delay_ms']}ms DropTail"
                  f"   ;# {lk['name']}",
                  f"$ns queue-limit $n({lk['a']}) $n({lk['b']}) {lk['buffer_pkts']}",
                  f"$ns queue-limit $n({lk['b']}) $n({lk['a']}) {lk['buffer_pkts']}"]
    lines += [
        f"# flow 1: Agent/UDP at {f['sender']} -> Agent/Null at {f['receiver']}, fid 1, no error model (error rate 0);",
        "# ns-2's UDP adds no header: a packet is the size it is sent with (592 = our IP packet)",
        "set udp [new Agent/UDP]",
        "$udp set fid_ 1",
        "$udp set packetSize_ 1000",
        f"$ns attach-agent $n({f['sender']}) $udp",
        "set null [new Agent/Null]",
        f"$ns attach-agent $n({f['receiver']}) $null",
        "$ns connect $udp $null",
    ]
    return lines


def _tcl_finish(end_s: float) -> list[str]:
    return ["proc finish {} {", "    global ns tf", "    $ns flush-trace", "    close $tf", "    exit 0", "}",
            f"$ns at {end_s:.6f} \"finish\"", "$ns run"]


def ns2_tcl_cbr(topo: dict, load_pct: float, duration_s: float) -> str:
    """The Tcl of one CBR run: 592-byte packets at ``load_pct`` % of the path's slowest link for ``duration_s``."""
    rate = offered_rate_bps(load_pct, path_links(topo))
    lines = _tcl_common(topo, [
        f"Generated by tools/validate_links004.py from testbed/families/004/{topo['name']}.json (docs/ns2-004.md "
        "section 11); do not edit.",
        f"UDP CBR, {PKT_BYTES}-byte packets at {load_pct} % of the path's slowest link = {rate:.0f} bit/s, "
        f"0-{duration_s} s.",
    ])
    lines += ["set cbr [new Application/Traffic/CBR]",
              f"$cbr set packetSize_ {PKT_BYTES}",
              f"$cbr set rate_ {rate:.0f}",
              "$cbr set random_ 0",
              "$cbr attach-agent $udp",
              "$ns at 0.0 \"$cbr start\"",
              f"$ns at {duration_s} \"$cbr stop\""]
    return "\n".join(lines + _tcl_finish(duration_s + DRAIN_S)) + "\n"


def ns2_tcl_replay(topo: dict, last_send_s: float) -> str:
    """The Tcl of a replay: one 592-byte UDP packet at each time (s) of ``send_times.txt`` (one a line)."""
    lines = _tcl_common(topo, [
        f"Generated by tools/validate_links004.py from testbed/families/004/{topo['name']}.json (docs/ns2-004.md "
        "section 11); do not edit.",
        f"Replay: one {PKT_BYTES}-byte UDP packet at each time of send_times.txt (our sender capture's send times, "
        "s from its first packet).",
    ])
    lines += ["set st [open send_times.txt r]",
              "while {[gets $st line] >= 0} {",
              f"    if {{$line ne \"\"}} {{ $ns at $line \"$udp send {PKT_BYTES} x\" }}",
              "}",
              "close $st"]
    return "\n".join(lines + _tcl_finish(last_send_s + DRAIN_S)) + "\n"


def ns2_packets(trace: pd.DataFrame, sender: int, receiver: int, fid: int = 1) -> pd.DataFrame:
    """One row per packet of flow ``fid`` enqueued at node ``sender`` (its ``+`` there), in uid (= send) order:
    ``uid``, ``size`` (bytes), ``t_tx`` (s, the ``+``), ``t_rx`` (s, its ``r`` at node ``receiver``; NaN when it
    never arrived)."""
    f = trace[trace["fid"] == fid]
    enq = (f[(f["event"] == "+") & (f["from_node"] == sender)].drop_duplicates("uid")[["uid", "size", "t"]]
           .rename(columns={"t": "t_tx"}))
    rcv = (f[(f["event"] == "r") & (f["to_node"] == receiver)].drop_duplicates("uid")[["uid", "t"]]
           .rename(columns={"t": "t_rx"}))
    return enq.merge(rcv, on="uid", how="left").sort_values("uid", kind="stable").reset_index(drop=True)


def ns2_drops(trace: pd.DataFrame, topo: dict, fid: int = 1) -> dict:
    """Drops of flow ``fid`` per link and direction, e.g. {"L2": {"a_to_b": 3, "b_to_a": 0}} (ns-2's ``d`` events,
    all of them queue drops here: there is no error model)."""
    d = trace[(trace["event"] == "d") & (trace["fid"] == fid)]
    out = {}
    for lk in topo["links"]:
        a, b = int(lk["a"][1:]), int(lk["b"][1:])
        out[lk["name"]] = {"a_to_b": int(((d["from_node"] == a) & (d["to_node"] == b)).sum()),
                           "b_to_a": int(((d["from_node"] == b) & (d["to_node"] == a)).sum())}
    return out


def run_ns2(d: Path, topo: dict, tcl: str, ns_bin: str, keep_trace: bool) -> pd.DataFrame:
    """Write ``sim.tcl`` into ``d``, run ns there, parse its trace: :func:`ns2_packets` rows."""
    (d / "sim.tcl").write_text(tcl)
    t0 = time.monotonic()
    r = subprocess.run([ns_bin, "sim.tcl"], cwd=d, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    (d / "ns.log").write_text(r.stdout + r.stderr)
    if r.returncode != 0 or not (d / "trace.tr").is_file():
        raise RuntimeError(f"ns failed in {d.name} (see its ns.log)")
    trace = parse_trace(d / "trace.tr")
    f = next(f for f in topo["flows"] if f["flow"] == 1)
    pk = ns2_packets(trace, int(f["sender"][1:]), int(f["receiver"][1:]))
    sizes = set(pk["size"].unique().tolist())
    if sizes != {PKT_BYTES}:
        raise RuntimeError(f"ns-2 traced packet sizes {sorted(sizes)}, not {PKT_BYTES}, in {d.name}")
    drops = ns2_drops(trace, topo)
    if keep_trace:
        with open(d / "trace.tr", "rb") as src, gzip.open(d / "trace.tr.gz", "wb", compresslevel=6) as dst:
            shutil.copyfileobj(src, dst)
    (d / "trace.tr").unlink()
    pk.attrs["drops"] = drops
    pk.attrs["wall_s"] = round(time.monotonic() - t0, 2)
    return pk


# ------------------------------------------------------------------------------------------------ our side: matching

def unwrap16(ids, start: int | None = None) -> np.ndarray:
    """A sequence of 16-bit counters that only counts up (IPv4 IDs of one socket, in capture order) as int64 that
    never wraps: each step is the forward distance mod 65536 from the previous. ``start``: the unwrapped value the
    first element must be at or after (the sender's first ID for the receiver's sequence, which may miss packets);
    default the first element itself."""
    a = np.asarray(ids, dtype=np.int64)
    if a.size == 0:
        return a
    first = int(a[0]) if start is None else int(start) + ((int(a[0]) - int(start)) % 65536)
    steps = np.diff(a) % 65536
    return first + np.concatenate([[0], np.cumsum(steps)])


def match_packets(sent: pd.DataFrame, received: pd.DataFrame) -> pd.DataFrame:
    """Sender-capture rows ``sent`` and receiver-capture rows ``received`` (columns ``ts`` s, ``ip_id``; capture
    order) of one UDP flow -> one row per sent packet in send order: ``key`` (unwrapped IPv4 ID), ``t_tx``, ``t_rx``
    (s; NaN when never received). Raises ValueError when the sender's IDs do not count up one by one (not one
    connected socket) or a received key was never sent."""
    s = sent.sort_values("ts", kind="stable")
    r = received.sort_values("ts", kind="stable")
    sk = unwrap16(s["ip_id"].to_numpy())
    if sk.size > 1 and not np.all(np.diff(sk) == 1):
        raise ValueError("the sender's IPv4 IDs do not count up one by one")
    rk = unwrap16(r["ip_id"].to_numpy(), start=int(s["ip_id"].iloc[0]) if len(s) else None)
    tx = pd.DataFrame({"key": sk, "t_tx": s["ts"].to_numpy()})
    rx = pd.DataFrame({"key": rk, "t_rx": r["ts"].to_numpy()}).drop_duplicates("key", keep="first")
    if len(rx) and not rx["key"].isin(tx["key"]).all():
        raise ValueError("the receiver captured packets the sender capture does not hold")
    return tx.merge(rx, on="key", how="left")


# ------------------------------------------------------------------------------------------------ statistics

def _rate_mbit(times: np.ndarray, size: int) -> float:
    t = np.sort(times[np.isfinite(times)])
    if t.size < 2 or t[-1] <= t[0]:
        return math.nan
    return (t.size - 1) * size * 8 / (t[-1] - t[0]) / 1e6


def packet_stats(pk: pd.DataFrame, bottleneck_mbit: float, size: int = PKT_BYTES) -> dict:
    """Per-run figures of :func:`ns2_packets` / :func:`match_packets` rows (columns t_tx, t_rx in s): see the module
    docstring. Times are made relative to the first send for the timeline."""
    tx = pk["t_tx"].to_numpy(dtype=float)
    rx = pk["t_rx"].to_numpy(dtype=float)
    got = np.isfinite(rx)
    owd = (rx[got] - tx[got]) * 1e3
    n, nr = int(tx.size), int(got.sum())
    t0 = float(tx.min()) if n else math.nan
    span = float(tx.max() - t0) if n else math.nan
    late = got & (tx >= t0 + 2 * span / 3) if n else got
    arr = np.sort(rx[got])
    gaps = np.diff(arr) * 1e3
    tx_ms = size * 8 / (bottleneck_mbit * 1000.0)
    rel = tx - t0 if n else tx
    timeline = []
    for sec in range(int(math.floor(span)) + 1 if n else 0):
        sel = (rel >= sec) & (rel < sec + 1)
        d = (rx[sel & got] - tx[sel & got]) * 1e3
        timeline.append({"s": sec, "sent": int(sel.sum()), "received": int((sel & got).sum()),
                         "delay_mean_ms": round(float(d.mean()), 4) if d.size else None})

    def q(p):
        return float(np.percentile(owd, p)) if owd.size else math.nan
    return {
        "sent": n, "received": nr, "lost": n - nr, "loss_pct": 100.0 * (n - nr) / n if n else math.nan,
        "send_span_s": span,
        "offered_rate_mbit": _rate_mbit(tx, size), "delivered_rate_mbit": _rate_mbit(rx, size),
        "delivered_rate_late_mbit": (_rate_mbit(arr[arr >= arr[0] + (arr[-1] - arr[0]) / 3], size) if arr.size
                                     else math.nan),
        "delay_mean_ms": float(owd.mean()) if owd.size else math.nan, "delay_median_ms": q(50),
        "delay_p95_ms": q(95), "delay_min_ms": float(owd.min()) if owd.size else math.nan,
        "delay_max_ms": float(owd.max()) if owd.size else math.nan,
        "delay_late_mean_ms": float(((rx[late] - tx[late]) * 1e3).mean()) if late.any() else math.nan,
        "rx_gap_min_ms": float(gaps.min()) if gaps.size else math.nan,
        "rx_gap_short_share": float((gaps < SHORT_GAP * tx_ms).mean()) if gaps.size else math.nan,
        "bottleneck_tx_ms": tx_ms,
        "timeline": timeline,
    }


def paired_diff(ours: pd.DataFrame, ns2: pd.DataFrame) -> dict:
    """Packet i of ours against packet i of the ns-2 replay of ours (both in send order, t_tx/t_rx in s): delay
    difference ours − ns-2 over packets both delivered (ms: mean, median, p5, p95, share within ±1 ms; the median
    over the packets sent in the first 0.5 s, while a queue builds, and over those sent in the last third of the
    send span, a full queue under overload), and the packets delivered by one side only."""
    n = min(len(ours), len(ns2))
    o = ours.iloc[:n]
    s = ns2.iloc[:n]
    do = (o["t_rx"].to_numpy(dtype=float) - o["t_tx"].to_numpy(dtype=float)) * 1e3
    ds = (s["t_rx"].to_numpy(dtype=float) - s["t_tx"].to_numpy(dtype=float)) * 1e3
    both = np.isfinite(do) & np.isfinite(ds)
    diff = do[both] - ds[both]
    tx = o["t_tx"].to_numpy(dtype=float)[both]
    t0, span = (float(tx.min()), float(tx.max() - tx.min())) if tx.size else (0.0, 0.0)
    early, late = diff[tx < t0 + 0.5], diff[tx >= t0 + 2 * span / 3]

    def q(p):
        return float(np.percentile(diff, p)) if diff.size else math.nan
    return {"packets": n, "both_delivered": int(both.sum()),
            "only_ours_delivered": int((np.isfinite(do) & ~np.isfinite(ds)).sum()),
            "only_ns2_delivered": int((~np.isfinite(do) & np.isfinite(ds)).sum()),
            "diff_mean_ms": float(diff.mean()) if diff.size else math.nan, "diff_median_ms": q(50),
            "diff_p5_ms": q(5), "diff_p95_ms": q(95),
            "within_1ms_share": float((np.abs(diff) <= 1.0).mean()) if diff.size else math.nan,
            "diff_first_half_s_median_ms": float(np.median(early)) if early.size else math.nan,
            "diff_last_third_median_ms": float(np.median(late)) if late.size else math.nan}


def compare(ns2: dict, ours: dict, tol: dict = TOLERANCE) -> dict:
    """Ours against ns-2 for one cell: the differences (ours − ns-2) and whether each is within ``tol``; ``verdict``
    "matches" when all are, else "differs (<metrics>)"."""
    out, bad = {}, []
    for k in DELAY_KEYS:
        lim = max(tol["delay_abs_ms"], tol["delay_rel"] * abs(ns2[k]))
        dlt = ours[k] - ns2[k]
        ok = bool(abs(dlt) <= lim)
        out[k.replace("_ms", "_diff_ms")] = dlt
        out[k.replace("_ms", "_ok")] = ok
        out[k.replace("_ms", "_tol_ms")] = lim
        bad += [] if ok else [k.replace("delay_", "").replace("_ms", "") + " delay"]
    rd = ours["delivered_rate_mbit"] - ns2["delivered_rate_mbit"]
    out["rate_diff_pct"] = 100.0 * rd / ns2["delivered_rate_mbit"]
    out["rate_ok"] = bool(abs(rd) <= tol["rate_rel"] * ns2["delivered_rate_mbit"])
    bad += [] if out["rate_ok"] else ["rate"]
    out["loss_diff_pp"] = ours["loss_pct"] - ns2["loss_pct"]
    out["loss_ok"] = bool(abs(out["loss_diff_pp"]) <= tol["loss_pp"])
    bad += [] if out["loss_ok"] else ["loss"]
    out["verdict"] = "matches" if not bad else f"differs ({', '.join(bad)})"
    return out


# ------------------------------------------------------------------------------------------------ our side: running

def _ns(prefix: str, node: str) -> str:
    return f"{prefix}{node}"


def _nsexec(prefix: str, node: str, *cmd) -> list[str]:
    return ["ip", "netns", "exec", _ns(prefix, node), *cmd]


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return None if not np.isfinite(o) else float(o)
    raise TypeError(type(o))


def _clean(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_clean(x) for x in v]
    return v


def write_json(p: Path, doc) -> None:
    p.write_text(json.dumps(_clean(doc), indent=1, default=_json_default) + "\n")


def _wait_listening(errfile: Path, proc: subprocess.Popen, limit_s: float = 30) -> None:
    for _ in range(int(limit_s * 10)):
        if "listening on" in errfile.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise RuntimeError(f"tcpdump exited before listening ({errfile.name})")
        time.sleep(0.1)
    raise RuntimeError(f"tcpdump did not start within {limit_s} s ({errfile.name})")


def _shim_pids(prefix: str, link_ns: str) -> list[int]:
    f = Path("/run/mpcc-chain") / prefix / f"shim-{link_ns}.pid"
    try:
        return [int(x) for x in f.read_text().split()]
    except (OSError, ValueError):
        return []


def _shim_report(prefix: str, link_ns: str, pid: int) -> dict | None:
    """SIGUSR1 to one shim: its report line since the last one (released, late > 1 ms, > 5 ms, max µs)."""
    logf = Path("/run/mpcc-chain") / prefix / f"shim-{link_ns}.log"
    before = logf.read_text(errors="replace").count("\n") if logf.is_file() else 0
    try:
        os.kill(pid, signal.SIGUSR1)
    except ProcessLookupError:
        return None
    for _ in range(30):
        time.sleep(0.05)
        lines = logf.read_text(errors="replace").splitlines() if logf.is_file() else []
        for ln in lines[before:]:
            m = re.search(r"released (\d+) late_over_1ms (\d+) late_over_5ms (\d+) max_late_us (\d+)", ln)
            if m:
                return dict(zip(("released", "late_over_1ms", "late_over_5ms", "max_late_us"),
                                map(int, m.groups())))
    return None


def _queues(prefix: str, links: list[dict]) -> dict:
    out = {}
    for lk in links:
        r = subprocess.run(_nsexec(prefix, lk["ns"], "tc", "-s", "-j", "qdisc", "show"), capture_output=True, text=True)
        try:
            qd = json.loads(r.stdout)
        except json.JSONDecodeError:
            out[lk["name"]] = None
            continue

        def leaf(dev):
            q = next((x for x in qd if x.get("dev") == dev and x.get("handle") == "10:"), None)
            return None if q is None else {"kind": q.get("kind"), "packets": q.get("packets"), "drops": q.get("drops")}
        cls = subprocess.run(_nsexec(prefix, lk["ns"], "tc", "-d", "class", "show", "dev", lk["if_b"]),
                             capture_output=True, text=True).stdout
        burst = re.search(r" burst (\S+)", cls)
        out[lk["name"]] = {"a_to_b": leaf(lk["if_b"]), "b_to_a": leaf(lk["if_a"]),
                           "htb_burst_a_to_b": burst.group(1) if burst else None}
    return out


def _kill(proc: subprocess.Popen | None, sig=signal.SIGTERM, wait_s: float = 5) -> None:
    if proc is None or proc.poll() is not None:
        return
    try:
        proc.send_signal(sig)
        proc.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    except ProcessLookupError:
        pass


def run_ours(d: Path, topo_name: str, load_pct: int, duration_s: int, prefix: str, store_forward: bool,
             tune: dict | None = None) -> dict:
    """One run of our side into ``d``: chain up, captures, iperf3 UDP, link counters, chain down (always).
    ``tune`` (the diagnostic variant): {"pfifo_minus": k, "htb_burst": B} re-sets every link's pfifo to its
    buffer_pkts − k packets and its htb class's burst and cburst to B bytes, both directions, after chain.sh up (in
    this run's own namespaces only). Returns {"packets": match_packets rows, "extra": {...}}; the pcaps stay in
    ``d``."""
    from analysis.ingest import read_pcap
    env = dict(os.environ, MPCC_NS_PREFIX=prefix)
    args = ["--topology-name", topo_name, "--error-rate", "0"] + (["--store-and-forward"] if store_forward else [])
    procs: list[subprocess.Popen] = []
    handles = []

    def _fh(path):
        handles.append(open(path, "w"))
        return handles[-1]
    chainlog = _fh(d / "chain.log")
    try:
        up = subprocess.run(["bash", str(CHAIN), "up", *args], env=env, stdout=subprocess.PIPE, stderr=chainlog,
                            text=True)
        if up.returncode != 0:
            raise RuntimeError(f"chain.sh up failed (exit {up.returncode}; see chain.log)")
        applied = json.loads(up.stdout)
        applied["topology"] = f"testbed/families/004/{topo_name}.json"   # chain.sh prints the absolute path
        (d / "chain.json").write_text(json.dumps(applied, indent=1) + "\n")
        flow = next(f for f in applied["flows"] if f["flow"] == 1)
        snd, rcv = flow["sender"], flow["receiver"]
        links = [lk for lk in applied["links"] if lk["name"] in flow["path"]]
        if tune:
            for lk in applied["links"]:
                for dev in (lk["if_a"], lk["if_b"]):
                    cmds = [["tc", "qdisc", "change", "dev", dev, "parent", "1:10", "handle", "10:", "pfifo",
                             "limit", str(lk["buffer_pkts"] - tune["pfifo_minus"])]]
                    if tune.get("htb_burst"):
                        cmds.append(["tc", "class", "change", "dev", dev, "parent", "1:", "classid", "1:10", "htb",
                                     "rate", f"{lk['rate_mbit']}mbit", "ceil", f"{lk['rate_mbit']}mbit", "burst",
                                     str(tune["htb_burst"]), "cburst", str(tune["htb_burst"])])
                    for cmd in cmds:
                        r = subprocess.run(_nsexec(prefix, lk["ns"], *cmd), capture_output=True, text=True)
                        if r.returncode != 0:
                            raise RuntimeError(f"tuning {lk['name']} failed: {' '.join(cmd)}: {r.stderr.strip()[:200]}")
        # warm-up: ARP both ways and the shims' queues; the idle RTT against 2 x the path's delays + transmissions
        ping = subprocess.run(_nsexec(prefix, snd, "ping", "-n", "-c", "5", "-i", "0.2", "-W", "2", "-I",
                                      flow["sender_addr"], flow["receiver_addr"]), capture_output=True, text=True)
        (d / "ping.txt").write_text(ping.stdout + ping.stderr)
        m = re.search(r"= [0-9.]+/([0-9.]+)/", ping.stdout)
        idle = {"rtt_avg_ms": float(m.group(1)) if m else None,
                "expected_ms": 2 * flow["path_delay_ms"] + flow["path_tx_rtt_ms"]}
        caps = {}
        for side, node, ifname in (("sender", snd, flow["sender_if"]), ("receiver", rcv, flow["receiver_if"])):
            err = d / f"tcpdump-{side}.log"
            p = subprocess.Popen(_nsexec(prefix, node, "tcpdump", "-i", ifname, "-s", str(SNAPLEN), "-n", "-U",
                                         "-w", str(d / f"{side}.pcap"), "udp", "port", str(PORT)),
                                 stdout=subprocess.DEVNULL, stderr=_fh(err))
            procs.append(p)
            caps[side] = (p, err)
        for p, err in caps.values():
            _wait_listening(err, p)
        srv = subprocess.Popen(_nsexec(prefix, rcv, "iperf3", "-s", "-1", "-B", flow["receiver_addr"], "-p",
                                       str(PORT), "--json"),
                               stdout=_fh(d / "iperf3-server.json"), stderr=_fh(d / "iperf3-server.log"))
        procs.append(srv)
        for _ in range(100):
            ss = subprocess.run(_nsexec(prefix, rcv, "ss", "-Hltn", f"sport = :{PORT}"), capture_output=True, text=True)
            if ss.stdout.strip():
                break
            time.sleep(0.1)
        else:
            raise RuntimeError("the iperf3 server did not listen within 10 s")
        data_shims = [(lk["name"], lk["ns"], pids[0]) for lk in links if (pids := _shim_pids(prefix, lk["ns"]))]
        for _, lns, pid in data_shims:      # reset the counters: the next report covers this run only
            _shim_report(prefix, lns, pid)
        load0 = Path("/proc/loadavg").read_text().split()[:3]
        ip_rate = offered_rate_bps(load_pct, links)
        b = iperf3_bitrate(ip_rate)
        t_cli = time.monotonic()
        cli = subprocess.run(_nsexec(prefix, snd, "iperf3", "-c", flow["receiver_addr"], "-B", flow["sender_addr"],
                                     "-p", str(PORT), "-u", "-b", str(b), "-l", str(UDP_PAYLOAD), "-t", str(duration_s),
                                     "--json"), capture_output=True, text=True, timeout=duration_s + 60)
        (d / "iperf3-client.json").write_text(cli.stdout)
        if cli.returncode != 0:
            raise RuntimeError(f"iperf3 client failed (exit {cli.returncode}): {cli.stderr.strip()[:200]}")
        cli_wall = time.monotonic() - t_cli
        try:
            srv.wait(timeout=15)
        except subprocess.TimeoutExpired:
            log("iperf3 server did not exit within 15 s")
        time.sleep(1.0)                     # the queues drain (< 1 s)
        load1 = Path("/proc/loadavg").read_text().split()[:3]
        shim = {name: _shim_report(prefix, lns, pid) for name, lns, pid in data_shims}
        queues = _queues(prefix, links)
        for p, _ in caps.values():
            _kill(p, signal.SIGINT)
        kdrops = 0
        for _, err in caps.values():
            mm = re.search(r"(\d+) packets dropped by kernel", err.read_text(errors="replace"))
            kdrops += int(mm.group(1)) if mm else 0
    finally:
        for p in procs:
            _kill(p)
        subprocess.run(["bash", str(CHAIN), "down", "--topology-name", topo_name], env=env, stdout=chainlog,
                       stderr=chainlog)
        for h in handles:
            h.close()

    def data_rows(path):
        df = read_pcap(path, cache=False)
        return df[(df["proto"] == 17) & (df["src"] == flow["sender_addr"]) & (df["dst"] == flow["receiver_addr"])
                  & (df["dport"] == PORT) & (df["ip_len"] == PKT_BYTES)]
    pk = match_packets(data_rows(d / "sender.pcap"), data_rows(d / "receiver.pcap"))
    return {"packets": pk, "links": links, "flow": flow, "extra": {
        "iperf3_b": b, "offered_ip_rate_bps": ip_rate, "idle_ping": idle, "queues": queues, "shim": shim,
        "capture_kernel_drops": kdrops, "loadavg_before": load0, "loadavg_after": load1,
        "iperf3_wall_s": round(cli_wall, 2), "delay_mechanism": applied.get("delay_mechanism"),
        "store_and_forward": applied.get("store_and_forward")}}


# ------------------------------------------------------------------------------------------------ orchestration

VARIANTS = {"sf": "store-and-forward", "q": "store-and-forward, pfifo N-1",
            "qb": "store-and-forward, pfifo N-1, burst 1 pkt", "htb": "htb"}
VARIANT_ORDER = {v: i for i, v in enumerate(VARIANTS.values())}
# the diagnostic variants: "q" makes each pfifo one packet shorter (ns-2's DropTail queue-limit N holds N − 1 waiting
# packets besides the one on the wire; Linux's pfifo limit N holds N waiting, the one htb let go is gone); "qb" also
# sets each htb class's burst and cburst to one packet (the topology's mtu, 592 B) instead of tc's default 1600 B
TUNES = {"q": {"pfifo_minus": 1, "htb_burst": None}, "qb": {"pfifo_minus": 1, "htb_burst": PKT_BYTES}}


def run_name(side: str, topo: str, load: int, variant: str = "sf", rep: int = 1) -> str:
    return (f"{side}__{topo}__load{load:03d}" + ("" if variant == "sf" else f"__{variant}")
            + (f"__rep{rep}" if rep > 1 else ""))


def _ours_and_replay(out: Path, topo: dict, load: int, args, variant: str, rep: int, ns_bin: str) -> None:
    name = run_name("ours", topo["name"], load, variant, rep)
    htb = variant == "htb"
    d = out / "runs" / name
    d.mkdir()
    log(f"{name}: our side ({VARIANTS[variant]}), {args.duration_s} s")
    t0 = time.monotonic()
    tune = TUNES.get(variant)
    res = run_ours(d, topo["name"], load, args.duration_s, args.prefix, store_forward=not htb, tune=tune)
    pk = res["packets"]
    links = path_links(topo)
    st = packet_stats(pk, slowest_rate_mbit(links))
    t_first = float(pk["t_tx"].min())
    rel = pk.assign(t_tx=pk["t_tx"] - t_first, t_rx=pk["t_rx"] - t_first)
    rel.assign(delay_ms=(rel["t_rx"] - rel["t_tx"]) * 1e3).to_csv(
        d / "packets.csv.gz", index=False, float_format="%.6f", columns=["key", "t_tx", "t_rx", "delay_ms"])
    write_json(d / "summary.json", {"run": name, "side": "ours", "topology": topo["name"], "load_pct": load,
                                    "link_model": VARIANTS[variant], "tune": tune, "rep": rep,
                                    "duration_s": args.duration_s, "packet_bytes": PKT_BYTES,
                                    "noqueue_delay_ms": noqueue_delay_ms(links), **st, **res["extra"],
                                    "wall_s": round(time.monotonic() - t0, 1)})
    if args.summaries_only:
        for f in ("sender.pcap", "receiver.pcap"):
            (d / f).unlink(missing_ok=True)
    for f in ("iperf3-client.json", "iperf3-server.json"):
        p = d / f
        if p.is_file():
            with open(p, "rb") as src, gzip.open(str(p) + ".gz", "wb") as dst:
                shutil.copyfileobj(src, dst)
            p.unlink()
    # the ns-2 replay of exactly these send times
    rname = run_name("ns2replay", topo["name"], load, variant, rep)
    rd = out / "runs" / rname
    rd.mkdir()
    (rd / "send_times.txt").write_text("".join(f"{t:.6f}\n" for t in rel["t_tx"]))
    rp = run_ns2(rd, topo, ns2_tcl_replay(topo, float(rel["t_tx"].max())), ns_bin, not args.summaries_only)
    if len(rp) != len(pk):
        raise RuntimeError(f"{rname}: ns-2 sent {len(rp)} packets, the capture holds {len(pk)}")
    with open(rd / "send_times.txt", "rb") as src, gzip.open(rd / "send_times.txt.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    (rd / "send_times.txt").unlink()
    write_json(rd / "summary.json", {"run": rname, "side": "ns2replay", "topology": topo["name"], "load_pct": load,
                                     "replay_of": name, "packet_bytes": PKT_BYTES,
                                     "noqueue_delay_ms": noqueue_delay_ms(links),
                                     **packet_stats(rp, slowest_rate_mbit(links)), "drops": rp.attrs["drops"],
                                     "ns_wall_s": rp.attrs["wall_s"],
                                     "paired_ours_minus_ns2": paired_diff(rel, rp)})


def run_matrix(args, out: Path) -> None:
    ns_bin = args.ns_binary
    topos = {t: load_topology(t) for t in args.topology_list}
    for t, topo in topos.items():
        for load in args.load_list:
            if args.sides in ("both", "ns2"):
                name = run_name("ns2", t, load)
                d = out / "runs" / name
                d.mkdir()
                log(f"{name}: ns-2 CBR, {args.duration_s} s")
                pk = run_ns2(d, topo, ns2_tcl_cbr(topo, load, args.duration_s), ns_bin, not args.summaries_only)
                links = path_links(topo)
                write_json(d / "summary.json", {"run": name, "side": "ns2", "topology": t, "load_pct": load,
                                                "duration_s": args.duration_s, "packet_bytes": PKT_BYTES,
                                                "cbr_rate_bps": offered_rate_bps(load, links),
                                                "noqueue_delay_ms": noqueue_delay_ms(links),
                                                **packet_stats(pk, slowest_rate_mbit(links)),
                                                "drops": pk.attrs["drops"], "ns_wall_s": pk.attrs["wall_s"]})
            if args.sides in ("both", "ours"):
                _ours_and_replay(out, topo, load, args, "sf", rep=1, ns_bin=ns_bin)
    if args.sides in ("both", "ours"):
        for t, load in args.repeat_cells:
            _ours_and_replay(out, topos.get(t) or load_topology(t), load, args, "sf", rep=2, ns_bin=ns_bin)
        for t, load in args.htb_cells:
            _ours_and_replay(out, topos.get(t) or load_topology(t), load, args, "htb", rep=1, ns_bin=ns_bin)
        for variant in ("q", "qb"):
            for t, load in args.tuned_cells[variant]:
                _ours_and_replay(out, topos.get(t) or load_topology(t), load, args, variant, rep=1, ns_bin=ns_bin)


# ------------------------------------------------------------------------------------------------ report

def load_summaries(out: Path) -> dict:
    """{run name: summary} of a results directory: runs/*/summary.json, or the same members of runs.tar.xz (the
    committed form, one file instead of hundreds: ``pack``)."""
    runs = {}
    for p in sorted((out / "runs").glob("*/summary.json")):
        runs[p.parent.name] = json.loads(p.read_text())
    if not runs and (out / "runs.tar.xz").is_file():
        with tarfile.open(out / "runs.tar.xz") as tar:
            for m in sorted(tar.getmembers(), key=lambda m: m.name):
                parts = m.name.split("/")
                if len(parts) == 3 and parts[0] == "runs" and parts[2] == "summary.json":
                    runs[parts[1]] = json.loads(tar.extractfile(m).read())
    if not runs:
        raise InputError(f"{out}: no runs/*/summary.json")
    return runs


def pack(out: Path) -> int:
    """Replace ``out``/runs/ by ``out``/runs.tar.xz holding the same files (the committed form); returns the files
    packed. Refused when runs.tar.xz exists."""
    if (out / "runs.tar.xz").exists():
        raise InputError(f"{out}/runs.tar.xz exists")
    files = sorted(p for p in (out / "runs").rglob("*") if p.is_file())
    with tarfile.open(out / "runs.tar.xz", "w:xz") as tar:
        for p in files:
            tar.add(p, arcname=str(p.relative_to(out)))
    shutil.rmtree(out / "runs")
    return len(files)


def _nan(v):
    return math.nan if v is None else v


def comparison_rows(runs: dict) -> pd.DataFrame:
    """One row per run of ours (store-and-forward, repeats, htb) against the ns-2 CBR run of its cell, with the
    replay's paired differences."""
    rows = []
    for name, o in runs.items():
        if o["side"] != "ours":
            continue
        n = runs.get(run_name("ns2", o["topology"], o["load_pct"]))
        rp = runs.get(name.replace("ours__", "ns2replay__", 1))
        row = {"topology": o["topology"], "load_pct": o["load_pct"], "link_model": o["link_model"], "rep": o["rep"],
               "run": name}
        for k in ("delay_mean_ms", "delay_median_ms", "delay_p95_ms", "delay_late_mean_ms", "delivered_rate_mbit",
                  "offered_rate_mbit", "delivered_rate_late_mbit", "loss_pct", "sent", "received", "rx_gap_short_share",
                  "delay_min_ms", "delay_max_ms"):
            row[f"ns2_{k}"] = _nan(n.get(k)) if n else math.nan
            row[f"ours_{k}"] = _nan(o.get(k))
        if n:
            c = compare({k: _nan(n.get(k)) for k in (*DELAY_KEYS, "delivered_rate_mbit", "loss_pct")},
                        {k: _nan(o.get(k)) for k in (*DELAY_KEYS, "delivered_rate_mbit", "loss_pct")})
            row.update(c)
        else:
            row["verdict"] = "no ns-2 run"
        if rp:
            row["replay_delay_mean_ms"] = _nan(rp.get("delay_mean_ms"))
            row["replay_loss_pct"] = _nan(rp.get("loss_pct"))
            for k, v in rp["paired_ours_minus_ns2"].items():
                row[f"paired_{k}"] = _nan(v)
        shim = o.get("shim") or {}
        row["shim_late_over_1ms"] = sum((s or {}).get("late_over_1ms", 0) for s in shim.values())
        row["shim_max_late_us"] = max([(s or {}).get("max_late_us", 0) for s in shim.values()] or [0])
        rows.append(row)
    df = pd.DataFrame(rows)
    if len(df):
        df = df.assign(_m=df["link_model"].map(VARIANT_ORDER)).sort_values(["_m", "topology", "load_pct", "rep"]).drop(
            columns="_m").reset_index(drop=True)
    return df


LINK_LABEL = {"store-and-forward": "s&f", "store-and-forward, pfifo N-1": "s&f, pfifo 49",
              "store-and-forward, pfifo N-1, burst 1 pkt": "s&f, pfifo 49, burst 592 B", "htb": "htb"}


def _f(x, nd=2):
    return "—" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.{nd}f}"


def markdown(df: pd.DataFrame) -> str:
    lines = ["| topology | load | link | delay mean ns-2 / ours (ms) | median | p95 | rate ns-2 / ours (Mbit/s) | "
             "loss ns-2 / ours (%) | verdict |", "|---|---|---|---|---|---|---|---|---|"]
    for r in df.itertuples():
        link = LINK_LABEL.get(r.link_model, r.link_model) + (f" rep{r.rep}" if r.rep > 1 else "")
        lines.append(
            f"| {r.topology} | {r.load_pct} % | {link} | {_f(r.ns2_delay_mean_ms)} / {_f(r.ours_delay_mean_ms)} | "
            f"{_f(r.ns2_delay_median_ms)} / {_f(r.ours_delay_median_ms)} | {_f(r.ns2_delay_p95_ms)} / "
            f"{_f(r.ours_delay_p95_ms)} | {_f(r.ns2_delivered_rate_mbit, 4)} / {_f(r.ours_delivered_rate_mbit, 4)} | "
            f"{_f(r.ns2_loss_pct)} / {_f(r.ours_loss_pct)} | {r.verdict} |")
    lines += ["", "Same packets (ns-2 fed our sender's send times), ours − ns-2 per packet:", "",
              "| topology | load | link | offered ours (Mbit/s) | mean (ms) | p5 | median | p95 | within ±1 ms | "
              "median, first 0.5 s | median, last third | delivered by one side only (ours / ns-2) | "
              "shim releases > 1 ms late (max µs) |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in df.itertuples():
        link = LINK_LABEL.get(r.link_model, r.link_model) + (f" rep{r.rep}" if r.rep > 1 else "")
        def g(k, nd=3, scale=1.0):
            return _f(scale * getattr(r, f"paired_{k}", math.nan), nd)
        one_side = " / ".join(str(int(getattr(r, f"paired_only_{k}_delivered", 0) or 0)) for k in ("ours", "ns2"))
        lines.append(
            f"| {r.topology} | {r.load_pct} % | {link} | {_f(r.ours_offered_rate_mbit, 4)} | {g('diff_mean_ms')} | "
            f"{g('diff_p5_ms')} | {g('diff_median_ms')} | {g('diff_p95_ms')} | {g('within_1ms_share', 1, 100)} % | "
            f"{g('diff_first_half_s_median_ms')} | {g('diff_last_third_median_ms')} | {one_side} | "
            f"{int(r.shim_late_over_1ms)} ({int(r.shim_max_late_us)}) |")
    tol = TOLERANCE
    lines += ["", f"Tolerance (fixed before the runs): mean, median, p95 delay within max({tol['delay_abs_ms']:g} "
              f"ms, {100 * tol['delay_rel']:g} % of ns-2's); delivered rate within {100 * tol['rate_rel']:g} %; loss "
              f"within {tol['loss_pp']:g} percentage point."]
    return "\n".join(lines) + "\n"


def write_report(out: Path) -> pd.DataFrame:
    df = comparison_rows(load_summaries(out))
    df.to_csv(out / "comparison.csv", index=False, float_format="%.6g")
    (out / "comparison.md").write_text(markdown(df))
    return df


# ------------------------------------------------------------------------------------------------ CLI

def parse_args(argv):
    p = argparse.ArgumentParser(prog="validate_links004.py", add_help=True,
                                description="Study 004's store-and-forward links against ns-2 under UDP CBR load.")
    p.add_argument("--out")
    p.add_argument("--report")
    p.add_argument("--pack")
    p.add_argument("--topologies", default=DEFAULTS["topologies"])
    p.add_argument("--loads", default=DEFAULTS["loads"])
    p.add_argument("--duration-s", default=str(DEFAULTS["duration"]))
    p.add_argument("--repeat", default=DEFAULTS["repeat"])
    p.add_argument("--htb", default=DEFAULTS["htb"])
    p.add_argument("--tuned-q", default=DEFAULTS["tuned"])
    p.add_argument("--tuned-qb", default=DEFAULTS["tuned"])
    p.add_argument("--sides", default="both")
    p.add_argument("--prefix", default=DEFAULTS["prefix"])
    p.add_argument("--ns-binary", default="ns")
    p.add_argument("--summaries-only", action="store_true")

    def err(msg):
        raise InputError(msg)
    p.error = err
    a = p.parse_args(argv)
    if a.pack:
        if a.out or a.report:
            raise InputError("give --pack alone")
        if not (Path(a.pack) / "runs").is_dir():
            raise InputError(f"--pack {a.pack}: no runs/ directory")
        return a
    if a.report:
        if a.out:
            raise InputError("give --out or --report, not both")
        if not Path(a.report).is_dir():
            raise InputError(f"--report {a.report}: no such directory")
        return a
    if not a.out:
        raise InputError("--out DIR is required (or --report DIR)")
    out = Path(a.out)
    if out.exists():
        raise InputError(f"--out {a.out} exists (a new directory is required; nothing is overwritten)")
    if not out.resolve().parent.is_dir():
        raise InputError(f"--out {a.out}: parent directory does not exist")
    a.topology_list = [t for t in a.topologies.split(",")]
    for t in a.topology_list:
        if t not in TOPOLOGIES:
            raise InputError(f"--topologies: unknown topology '{t}' (one of {', '.join(TOPOLOGIES)})")
    if len(set(a.topology_list)) != len(a.topology_list) or not a.topology_list:
        raise InputError("--topologies: empty or a topology given twice")
    try:
        a.load_list = [int(x) for x in a.loads.split(",")]
    except ValueError:
        raise InputError(f"--loads must be whole percentages, comma-separated, got '{a.loads}'") from None
    if any(not 1 <= x <= 500 for x in a.load_list) or len(set(a.load_list)) != len(a.load_list):
        raise InputError(f"--loads: each 1..500 (% of the slowest link), none twice, got '{a.loads}'")
    if not re.fullmatch(r"[1-9][0-9]{0,2}", a.duration_s) or int(a.duration_s) > 600:
        raise InputError(f"--duration-s must be a whole number of seconds 1..600, got '{a.duration_s}'")
    a.duration_s = int(a.duration_s)
    a.repeat_cells = parse_cells(a.repeat, "--repeat")
    a.htb_cells = parse_cells(a.htb, "--htb")
    a.tuned_cells = {"q": parse_cells(a.tuned_q, "--tuned-q"), "qb": parse_cells(a.tuned_qb, "--tuned-qb")}
    if a.sides not in ("both", "ns2", "ours"):
        raise InputError(f"--sides must be both, ns2 or ours, got '{a.sides}'")
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,20}", a.prefix) or a.prefix.startswith("mpcc-"):
        raise InputError(f"--prefix must be 1-20 of [A-Za-z0-9_.-] and not the recordings' mpcc-, got '{a.prefix}'")
    if shutil.which(a.ns_binary) is None:
        raise InputError(f"ns-2 binary '{a.ns_binary}' not found (Debian: apt-get install ns2)")
    if a.sides in ("both", "ours"):
        if os.geteuid() != 0:
            raise InputError("our side needs root (network namespaces); run as root or --sides ns2")
        for tool in ("ip", "tc", "tcpdump", "iperf3", "iptables", "jq", "ping", "ss"):
            if shutil.which(tool) is None:
                raise InputError(f"{tool} not found (tools/setup_host.sh installs the testbed's tools)")
        taken = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
        if any(n.startswith(a.prefix) for n in taken):
            raise InputError(f"namespaces of prefix {a.prefix} exist (another run?): take them down "
                             f"(MPCC_NS_PREFIX={a.prefix} testbed/chain.sh down) or give another --prefix")
    return a


def _tool_version(cmd) -> str:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
        return (r.stdout + r.stderr).strip().splitlines()[0] if (r.stdout + r.stderr).strip() else ""
    except (OSError, subprocess.TimeoutExpired):
        return ""


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = parse_args(argv)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.pack:
        try:
            print(f"{pack(Path(args.pack))} files packed into {args.pack}/runs.tar.xz", file=sys.stderr)
        except InputError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        return 0
    if args.report:
        try:
            print(markdown(comparison_rows(load_summaries(Path(args.report)))), end="")
        except InputError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        return 0

    def on_term(signum, _frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)
    out = Path(args.out)
    out.mkdir()
    (out / "runs").mkdir()
    t0 = time.monotonic()
    meta = {"what": "study 004's store-and-forward links (testbed/chain.sh --store-and-forward) against ns-2 2.35 "
                    "under UDP CBR load: one side ns-2 simulations, the other real captures of our testbed "
                    "(docs/ns2-004.md section 11)",
            "command": "python tools/validate_links004.py " + " ".join(argv),
            "date": f"{_dt.datetime.now(_dt.timezone.utc):%Y-%m-%dT%H:%M:%SZ}", "host": socket.gethostname(),
            "kernel": os.uname().release, "topologies": args.topology_list, "loads_pct": args.load_list,
            "duration_s": args.duration_s, "repeat": args.repeat_cells, "htb": args.htb_cells,
            "tuned": args.tuned_cells,
            "tunes": TUNES, "sides": args.sides,
            "packet_bytes": PKT_BYTES, "udp_payload_bytes": UDP_PAYLOAD, "tolerance": TOLERANCE,
            "warm_up": "an idle ping (5 x 0.2 s) before each run of ours; no traffic is discarded",
            "tool_versions": {"ns2": _tool_version(["dpkg-query", "-W", "-f=${Version}", "ns2"]),
                              "iperf3": _tool_version(["iperf3", "--version"]),
                              "tcpdump": _tool_version(["tcpdump", "--version"])},
            "status": "running"}
    try:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
        meta["repo_commit"] = commit.strip()
    except OSError:
        pass
    write_json(out / "meta.json", meta)
    rc = 0
    try:
        run_matrix(args, out)
        meta["status"] = "complete"
    except (RuntimeError, ValueError, subprocess.TimeoutExpired) as exc:
        print(f"error: {exc}", file=sys.stderr)
        meta["status"] = f"failed: {exc}"
        rc = 1
    except SystemExit as exc:
        meta["status"] = f"stopped (signal, exit {exc.code})"
        rc = int(exc.code) if isinstance(exc.code, int) else 1
    finally:
        meta["wall_s"] = round(time.monotonic() - t0, 1)
        write_json(out / "meta.json", meta)
    if any((out / "runs").glob("*/summary.json")):
        df = write_report(out)
        if rc == 0 and len(df):
            log("verdicts: " + "; ".join(f"{r.topology} {r.load_pct}% {r.link_model}"
                                         f"{' rep' + str(r.rep) if r.rep > 1 else ''}: {r.verdict}"
                                         for r in df.itertuples()))
    log(f"done in {meta['wall_s']} s: {out}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
