"""Study 003's Table 2 scenarios under two switch queue disciplines, in the Debian 12 VM
(``testbed/qdisc003/run-vm.sh``; docs/qdisc-003.md): does an fq_codel switch queue, instead of Mininet's netem
leaf, give the paper's latency and jitter?

Input: a results directory as the harness writes it (or its committed form, ``runs.tar.xz`` beside the top-level
files, analysis/validation_store.py)::

    DIR/params.json, DIR/meta.json, DIR/setup.json        the plan, the host/VM/box, the guest (optional here)
    DIR/runs/<run>/meta.json        arm ("netem" | "fq_codel" | "pfifo"), mode ("tcp_path1" | "mptcp"), queue_pkts,
                                    rep, duration_s, ping_interval_s, self_check, path_bytes_to_server, status
    DIR/runs/<run>/COMPLETE         the run passed its checks (only such runs are read)
    DIR/runs/<run>/iperf3/server.json, client.json        iperf3 --json of the data flow
    DIR/runs/<run>/ping/path1.txt, path2.txt              ``ping -D -i I -w T`` over each path during the flow
    DIR/runs/<run>/switches/{sw1,sw2,server}-{before,after}.json   ``tc -s -j qdisc show`` of each node

One row per run (:func:`load_run`, columns :data:`RUN_COLUMNS`), with these units:

* goodput_mbps: the data connection's goodput as iperf3's receiver reports it (server JSON ``end.sum_received``;
  the client's copy of it when the server JSON lacks it), Mbit/s;
* retransmits: TCP retransmissions iperf3's sender reports (``end.sum_sent.retransmits``), segments;
* flow_rtt_mean_ms: the data flow's own RTT, the mean of the sender's smoothed RTT as iperf3 samples it
  (``end.streams[0].sender.mean_rtt``, µs → ms); for MPTCP the kernel answers TCP_INFO on the MPTCP socket with
  its first subflow's (path 1's) figures;
* per path K = 1, 2: ping_rtt_mean_ms_pK (mean RTT of the replies, ms), ping_jitter_ms_pK (study 003's equation
  Σ|D_i − D_{i+1}| / (n − 1) over the replies' RTTs in icmp_seq order, ms), ping_loss_pct_pK (requests never
  answered among those that had time to be answered, %), ping_replies_pK (count): the functions of
  :mod:`analysis.families.dualpath` (``parse_ping``, ``ping_stats``: ``ping_jitter_ms``, ``ping_loss_pct``), the same as the
  namespace testbed's rows;
* drops_to_server_pK, drops_to_client_pK: packets the leaf qdisc (handle ``10:``) behind the htb class of path K's
  switch dropped on its egress towards the server (the data direction) / the client (ACKs), over the run (after −
  before), packets; fq_codel counts its CoDel drops and its overflow drops (``drop_overlimit``) in ``drops``;
  overlimit_drops_to_server_pK: fq_codel's ``drop_overlimit`` alone (NaN for other leaves);
* sent_to_server_pK: bytes path K's switch sent towards the server (its htb root), bytes;
* server_delay_drops: drops of the server-side delay netem (fq_codel / pfifo arms; 0 expected, NaN without one);
* idle_rtt_ms_pK: median idle RTT over path K before the flow (10 pings), ms.

:func:`summary` gives per (arm, mode, queue_pkts) the mean and the 95 % Student-t interval over reps of each metric
(:func:`t_interval`), :func:`facts` a small JSON-able dict of it for the claims' explanations.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.errors import AnalysisError
from analysis.families.dualpath import parse_ping, ping_stats
from analysis.validation_store import export_results, run_dirs

ARMS = ("netem", "fq_codel", "pfifo")
MODES = ("tcp_path1", "mptcp")
KEYS = ["arm", "mode", "queue_pkts"]
PARAM_COLUMNS = ["run", "arm", "mode", "queue_pkts", "rep", "duration_s", "ping_interval_s", "cc", "kernel"]
PATH_METRICS = ["ping_rtt_mean_ms", "ping_jitter_ms", "ping_loss_pct", "ping_replies", "drops_to_server",
                "drops_to_client", "overlimit_drops_to_server", "sent_to_server", "idle_rtt_ms"]
RUN_COLUMNS = (PARAM_COLUMNS + ["goodput_mbps", "retransmits", "flow_rtt_mean_ms"]
               + [f"{m}_p{k}" for k in (1, 2) for m in PATH_METRICS] + ["server_delay_drops"])
#: the metrics :func:`summary` and :func:`facts` report (per path where the name ends in _pK)
SUMMARY_METRICS = ["goodput_mbps", "ping_rtt_mean_ms_p1", "ping_jitter_ms_p1", "ping_loss_pct_p1",
                   "drops_to_server_p1", "ping_rtt_mean_ms_p2", "ping_jitter_ms_p2", "ping_loss_pct_p2",
                   "drops_to_server_p2", "retransmits", "flow_rtt_mean_ms"]
#: the switch of each path and its two egress interfaces (testbed/families/003/topology.json: switch_ifs =
#: [towards the client, towards the server])
SWITCHES = {1: ("sw1", "sw1-cl", "sw1-srv"), 2: ("sw2", "sw2-cl", "sw2-srv")}
NAN = math.nan


# ------------------------------------------------------------------------------------------------ one run

def receiver_goodput_mbps(server_json: dict, client_json: dict | None = None) -> float:
    """iperf3's receiver goodput of the flow, Mbit/s: ``end.sum_received.bits_per_second`` of the server's JSON, else
    of the client's (iperf3 copies the server's figure there); NaN when neither has it."""
    for doc in (server_json, client_json or {}):
        v = ((doc or {}).get("end") or {}).get("sum_received", {}).get("bits_per_second")
        if isinstance(v, (int, float)) and math.isfinite(v):
            return float(v) / 1e6
    return NAN


def sender_retransmits(client_json: dict) -> float:
    """TCP retransmissions iperf3's sender reports over the flow (``end.sum_sent.retransmits``), segments; NaN
    without it."""
    v = ((client_json or {}).get("end") or {}).get("sum_sent", {}).get("retransmits")
    return float(v) if isinstance(v, (int, float)) else NAN


def flow_rtt_mean_ms(client_json: dict) -> float:
    """The mean of the sender's smoothed RTT over the flow as iperf3 reports it (``end.streams[0].sender.mean_rtt``,
    µs), in ms; NaN without it (or 0: no sample)."""
    streams = ((client_json or {}).get("end") or {}).get("streams") or [{}]
    v = (streams[0].get("sender") or {}).get("mean_rtt")
    return float(v) / 1e3 if isinstance(v, (int, float)) and v > 0 else NAN


def ping_metrics(text: bytes) -> dict:
    """RTT mean (ms), study 003's jitter over the RTTs in icmp_seq order (ms), loss (%) and the number of replies of
    one ``ping -D`` output (:mod:`analysis.families.dualpath`'s parser and definitions)."""
    log = parse_ping(text)
    st = ping_stats(log)
    return {**{k: st[k] for k in ("ping_rtt_mean_ms", "ping_jitter_ms", "ping_loss_pct")},
            "ping_replies": float(log.rtt_ms.size)}


def _qdisc(q: list, dev: str, *, handle: str | None = None, root: bool = False) -> dict:
    for e in q:
        if e.get("dev") == dev and ((root and e.get("root")) or (handle is not None and e.get("handle") == handle)):
            return e
    return {}


def counter_delta(before: list, after: list, dev: str, key: str, *, handle: str | None = None,
                  root: bool = False) -> float:
    """``after − before`` of counter ``key`` of one qdisc in two ``tc -s -j qdisc show`` lists (the qdisc of ``dev``
    with ``handle``, or its root qdisc), in the counter's own unit (packets, bytes); NaN when ``after`` lacks the
    qdisc or the counter (a missing ``before`` entry counts as 0: the qdisc was made between the two)."""
    a = _qdisc(after, dev, handle=handle, root=root)
    if key not in a:
        return NAN
    b = _qdisc(before, dev, handle=handle, root=root)
    return float(a[key]) - float(b.get(key, 0))


def switch_metrics(before: list, after: list, k: int) -> dict:
    """Path ``k``'s switch counters over the run (``tc -s -j qdisc show`` before and after): the leaf's drops towards
    the server and the client, fq_codel's overflow drops towards the server, bytes sent towards the server (packets,
    packets, packets, bytes)."""
    _, to_client, to_server = SWITCHES[k]
    return {f"drops_to_server_p{k}": counter_delta(before, after, to_server, "drops", handle="10:"),
            f"drops_to_client_p{k}": counter_delta(before, after, to_client, "drops", handle="10:"),
            f"overlimit_drops_to_server_p{k}": counter_delta(before, after, to_server, "drop_overlimit", handle="10:"),
            f"sent_to_server_p{k}": counter_delta(before, after, to_server, "bytes", root=True)}


def read_json(p: Path, default):
    """The JSON document in file ``p``, or ``default`` when it is missing or not JSON."""
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return default


def run_start(run_dir: Path, param_columns) -> tuple[dict, dict, dict]:
    """(meta, row, server) of one complete run directory of a VM experiment: its meta.json; the row's ``run``, its
    ``param_columns`` after the first (from meta.json) and the flow's goodput_mbps, retransmits and flow_rtt_mean_ms
    (iperf3/server.json, client.json); the receiver's iperf3 JSON, for what else a caller reads of it.
    AnalysisError unless meta.json says the run is complete."""
    d = Path(run_dir)
    meta = read_json(d / "meta.json", None)
    if not isinstance(meta, dict) or meta.get("status") != "complete":
        raise AnalysisError(f"{d}: meta.json missing or not complete")
    row = {"run": d.name, **{c: meta.get(c) for c in param_columns[1:]}}
    server, client = read_json(d / "iperf3" / "server.json", {}), read_json(d / "iperf3" / "client.json", {})
    row["goodput_mbps"] = receiver_goodput_mbps(server, client)
    row["retransmits"] = sender_retransmits(client)
    row["flow_rtt_mean_ms"] = flow_rtt_mean_ms(client)
    return meta, row, server


def path_ping_row(run_dir: Path, meta: dict, k: int) -> dict:
    """Path ``k``'s ping readings (:func:`ping_metrics` of ping/pathK.txt, NaN without the file) and the idle RTT
    the run's self-check measured before the flow (``idle_rtt_ms_pK``, ms), with the ``_pK`` suffix."""
    p = Path(run_dir) / "ping" / f"path{k}.txt"
    vals = ping_metrics(p.read_bytes()) if p.is_file() else dict.fromkeys(
        ["ping_rtt_mean_ms", "ping_jitter_ms", "ping_loss_pct", "ping_replies"], NAN)
    row = {f"{m}_p{k}": v for m, v in vals.items()}
    idle = ((meta.get("self_check") or {}).get(f"path{k}") or {}).get("rtt_median_ms")
    row[f"idle_rtt_ms_p{k}"] = float(idle) if isinstance(idle, (int, float)) else NAN
    return row


def load_run(run_dir) -> dict:
    """The :data:`RUN_COLUMNS` row of one complete run directory (see the module docstring for units)."""
    d = Path(run_dir)
    meta, row, _ = run_start(d, PARAM_COLUMNS)
    for k in (1, 2):
        row.update(path_ping_row(d, meta, k))
        sw = SWITCHES[k][0]
        row.update(switch_metrics(read_json(d / "switches" / f"{sw}-before.json", []),
                                  read_json(d / "switches" / f"{sw}-after.json", []), k))
    srv_b = read_json(d / "switches" / "server-before.json", [])
    srv_a = read_json(d / "switches" / "server-after.json", [])
    drops = [counter_delta(srv_b, srv_a, e["dev"], "drops", root=True) for e in srv_a
             if e.get("root") and e.get("kind") == "netem"]
    row["server_delay_drops"] = float(sum(drops)) if drops else NAN
    return row


def load_runs(root) -> pd.DataFrame:
    """One :data:`RUN_COLUMNS` row per complete run of a results directory (``DIR/runs`` or ``DIR/runs.tar.xz``),
    sorted by (arm, mode, queue_pkts, rep)."""
    with run_dirs(root, ("COMPLETE",)) as dirs:
        rows = [load_run(d) for d in dirs]
    if not rows:
        raise AnalysisError(f"{root}: no complete run (runs/*/COMPLETE)")
    df = pd.DataFrame(rows, columns=RUN_COLUMNS)
    return df.sort_values(["arm", "mode", "queue_pkts", "rep"]).reset_index(drop=True)


# ------------------------------------------------------------------------------------------------ statistics

def t_interval(x, alpha: float = 0.05) -> tuple[float, float, float, int]:
    """(mean, low, high, n) of the finite values of ``x``: the two-sided (1 − alpha) Student-t interval of the mean
    over them (reps as independent samples; ``analysis.claims.core.mean_ci``), in ``x``'s unit; low and high NaN for
    n = 1 (no interval), all NaN for n = 0."""
    from analysis.claims.core import mean_ci

    v = np.asarray(x, dtype=float)
    e = mean_ci(v[np.isfinite(v)], alpha)
    return e.value, e.lo, e.hi, e.n


def summary(runs: pd.DataFrame, metrics=SUMMARY_METRICS, alpha: float = 0.05, keys=KEYS) -> pd.DataFrame:
    """Per cell of ``keys`` (here arm, mode, queue_pkts): for each metric its mean, ``_lo`` and ``_hi`` (the
    (1 − alpha) t interval, :func:`t_interval`) and ``n`` (reps), in the metrics' units."""
    out = []
    for key, g in runs.groupby(keys, sort=True):
        rec = dict(zip(keys, key))
        rec["n"] = int(len(g))
        for m in metrics:
            mean, lo, hi, _ = t_interval(g[m], alpha)
            rec[m], rec[f"{m}_lo"], rec[f"{m}_hi"] = mean, lo, hi
        out.append(rec)
    return pd.DataFrame(out)


def _clean(v):
    if isinstance(v, (float, np.floating)):
        return None if not math.isfinite(float(v)) else round(float(v), 4)
    if isinstance(v, (np.integer,)):
        return int(v)
    return v


def cells(s: pd.DataFrame, keys, metrics) -> dict:
    """:func:`summary`'s rows as JSON-able cells named by their keys joined with "/" (queue_pkts as an integer):
    ``{"KEY/...": {"n", METRIC: {"mean", "lo", "hi"}}}``, values rounded to 4 decimals, NaN as None."""
    out = {}
    for _, r in s.iterrows():
        key = "/".join(str(int(r[k])) if k == "queue_pkts" else str(r[k]) for k in keys)
        out[key] = {"n": int(r["n"])}
        for m in metrics:
            out[key][m] = {"mean": _clean(r[m]), "lo": _clean(r[f"{m}_lo"]), "hi": _clean(r[f"{m}_hi"])}
    return out


def facts(runs_or_root, alpha: float = 0.05) -> dict:
    """What the claims' explanations can cite: ``{"source", "alpha", "units", "cells": {"ARM/MODE/QUEUE": {"n",
    METRIC: {"mean", "lo", "hi"}}}}``, e.g. ``cells["fq_codel/tcp_path1/50"]["ping_rtt_mean_ms_p1"]["mean"]`` (ms).
    Values are rounded to 4 decimals, NaN becomes None. ``runs_or_root``: :func:`load_runs`'s frame or a results
    directory."""
    runs = runs_or_root if isinstance(runs_or_root, pd.DataFrame) else load_runs(runs_or_root)
    return {"source": str(runs_or_root) if not isinstance(runs_or_root, pd.DataFrame) else None, "alpha": alpha,
            "units": {"goodput_mbps": "Mbit/s (iperf3 receiver)", "ping_rtt_mean_ms_pK": "ms", "ping_jitter_ms_pK":
                      "ms (study 003's equation over ping RTTs, icmp_seq order)", "ping_loss_pct_pK": "%",
                      "drops_to_server_pK": "packets (switch leaf qdisc, data direction)", "retransmits": "segments",
                      "flow_rtt_mean_ms": "ms (iperf3 sender's mean smoothed RTT; MPTCP: its first subflow)"},
            "cells": cells(summary(runs, alpha=alpha), KEYS, SUMMARY_METRICS)}


# ------------------------------------------------------------------------------------------------ output

def fmt_ci(m, lo, hi, nd=2) -> str:
    """"m [lo, hi]" with ``nd`` decimals; "m" without an interval, "–" without a mean."""
    if not math.isfinite(m):
        return "–"
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return f"{m:.{nd}f}"
    return f"{m:.{nd}f} [{lo:.{nd}f}, {hi:.{nd}f}]"


def markdown_table(s: pd.DataFrame, keys, cols) -> str:
    """:func:`summary`'s rows as a markdown table: the ``keys`` (queue_pkts headed "queue"), then per ``cols`` entry
    (metric, header, decimals) the mean [95 % t interval] (:func:`fmt_ci`), then n."""
    head = [("queue" if k == "queue_pkts" else k) for k in keys]
    lines = ["| " + " | ".join(head + [c[1] for c in cols]) + " | n |", "|" + "---|" * (len(cols) + len(keys) + 1)]
    for _, r in s.iterrows():
        row = [str(int(r[k])) if k == "queue_pkts" else str(r[k]) for k in keys]
        row += [fmt_ci(r[m], r[f"{m}_lo"], r[f"{m}_hi"], nd) for m, _, nd in cols]
        lines.append("| " + " | ".join(row) + f" | {r['n']} |")
    return "\n".join(lines)


def markdown(s: pd.DataFrame) -> str:
    """The summary as a markdown table: per (arm, mode, queue_pkts) goodput, path 1's ping RTT, jitter and loss,
    path 1's data-direction drops, the flow's own RTT, path 2's ping RTT and jitter and drops, n; mean [95 % t
    interval]."""
    return markdown_table(s, KEYS, [
        ("goodput_mbps", "goodput Mbit/s", 2), ("ping_rtt_mean_ms_p1", "ping RTT p1 ms", 2),
        ("ping_jitter_ms_p1", "ping jitter p1 ms", 2), ("ping_loss_pct_p1", "ping loss p1 %", 2),
        ("drops_to_server_p1", "drops p1 pkts", 0), ("flow_rtt_mean_ms", "flow RTT ms", 1),
        ("ping_rtt_mean_ms_p2", "ping RTT p2 ms", 2),
        ("ping_jitter_ms_p2", "ping jitter p2 ms", 2), ("drops_to_server_p2", "drops p2 pkts", 0)])


def export(results_dir, dest) -> int:
    """The committed form of a results directory in ``dest`` (``analysis.validation_store.export_results``: complete
    runs packed, top-level files portable, logs xz'd) with ``facts.json`` (:func:`facts`); returns the runs written."""
    return export_results(results_dir, dest, lambda root: facts(load_runs(root)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m analysis.qdisc_vm003", description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", help="results directory of testbed/qdisc003/run-vm.sh (or its committed form)")
    ap.add_argument("--runs", action="store_true", help="also print one row per run")
    ap.add_argument("--json", action="store_true", help="print facts() as JSON instead of the table")
    ap.add_argument("--export", metavar="DEST", help="write the committed form of DIR into DEST (new directory)")
    a = ap.parse_args(argv)
    try:
        if a.export:
            print(f"{export(a.dir, a.export)} runs written to {a.export}")
            return 0
        runs = load_runs(a.dir)
        if a.json:
            print(json.dumps(facts(runs), indent=1, sort_keys=True))
            return 0
        print(markdown(summary(runs)))
        if a.runs:
            with pd.option_context("display.width", 250, "display.max_columns", 60, "display.max_rows", 500):
                print(runs[["run", "goodput_mbps", "flow_rtt_mean_ms", "ping_rtt_mean_ms_p1", "ping_jitter_ms_p1",
                            "ping_loss_pct_p1",
                            "drops_to_server_p1", "ping_rtt_mean_ms_p2", "drops_to_server_p2", "retransmits",
                            "idle_rtt_ms_p1", "idle_rtt_ms_p2", "server_delay_drops"]].round(3).to_string(index=False))
    except AnalysisError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
