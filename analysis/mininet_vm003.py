"""Study 003's Table 2 scenarios replicated with the paper's own tool chain, Mininet + Open vSwitch, in the Debian 12
VM (``testbed/mininet003/run-vm.sh``; docs/mininet-003.md): goodput, ping latency, jitter and loss per scenario,
beside the paper's Table 2 and beside the FIFO (netem) arm of the queue-discipline experiment (data/qdisc003-vm,
:mod:`analysis.qdisc_vm003`).

Input: a results directory as the harness writes it (or its committed form, ``runs.tar.xz`` beside the top-level
files, analysis/validation_store.py)::

    DIR/params.json, DIR/meta.json, DIR/setup.json        the plan, the host/VM/box, the guest (optional here)
    DIR/runs/<run>/meta.json        mode ("tcp_path1" | "mptcp"), queue_pkts, rep, duration_s, ping_interval_s, cc,
                                    delay_links, self_check, flow_start_epoch, flow_end_epoch, status, ...
    DIR/runs/<run>/COMPLETE         the run passed its checks (only such runs are read)
    DIR/runs/<run>/iperf3/server.json, client.json        iperf3 --json of the data flow
    DIR/runs/<run>/ping/path1.txt, path2.txt              ``ping -D -i I -w T`` from h1 over each path during the flow
    DIR/runs/<run>/tc/{h1,h2,s1,s2}-{before,after}.json   ``tc -s -j qdisc show`` of each node's shaped interfaces
    DIR/runs/<run>/tc/samples.jsonl                       the same every sample interval during the flow
    DIR/runs/<run>/tc/commands.json                       every tc command Mininet ran, in order

Mininet's network (testbed/mininet003/topo003.py): h1 (client) and h2 (server), OVS bridges s1 (path 1) and s2
(path 2); path K's four shaped interfaces (each: htb class + netem leaf, handle ``10:``), :func:`path_ifs`:
``client`` h1-eth(K-1) (h1's own egress: the data direction's first queue), ``sw_to_server`` sK-eth2 (the switch's
egress towards h2: data), ``sw_to_client`` sK-eth1 (ACKs), ``server`` h2-eth(K-1) (h2's egress: ACKs).

One row per run (:func:`load_run`, columns :data:`RUN_COLUMNS`), with these units:

* goodput_mbps, retransmits, flow_rtt_mean_ms: as :mod:`analysis.qdisc_vm003` reads them from iperf3 (Mbit/s of the
  receiver; segments; ms, the sender's mean smoothed RTT, for MPTCP its first subflow's);
* min_interval_mbps: the worst 1-s interval of iperf3's receiver report, Mbit/s
  (``analysis.families.dualpath.min_interval_mbps``, as the namespace testbed's rows);
* per path K = 1, 2: ping_rtt_mean_ms_pK (ms), ping_jitter_ms_pK (study 003's equation Σ|D_i − D_{i+1}| / (n − 1)
  over the replies' RTTs in icmp_seq order, ms), ping_loss_pct_pK (%), ping_replies_pK (count): the functions of
  :mod:`analysis.families.dualpath` (``parse_ping``, ``ping_stats``), as the namespace testbed's rows;
* idle_rtt_ms_pK: median idle RTT over path K before the flow (10 pings), ms;
* sent_to_server_pK: bytes path K's switch sent towards h2 over the run (the htb root of sK-eth2), bytes;
* drops_ROLE_pK for ROLE in client, sw_to_server, sw_to_client, server: packets the netem leaf (``10:``) of that
  interface dropped over the run (after − before), packets;
* qlen_mean_ROLE_pK, qlen_max_ROLE_pK for ROLE in client, sw_to_server: the netem leaf's queue length in the samples
  taken during the flow (``qlen``), mean and largest, packets (NaN without samples). A "packet" here is an skb: with
  TSO/GSO on (Mininet leaves the veths' segmentation offloads on) one skb may hold several segments, so
* backlog_mean_ROLE_pK, backlog_max_ROLE_pK: the same queue in bytes (``backlog``), bytes; backlog x 8 / the path's
  rate is the queueing delay it adds.

:func:`summary` gives per (mode, queue_pkts) the mean and the 95 % Student-t interval over reps of each metric
(``analysis.claims.core.mean_ci`` through :func:`analysis.qdisc_vm003.t_interval`); :func:`beside_paper` sets them
beside Table 2 (data/reference/003/table2.csv, :mod:`analysis.reference`) and the FIFO arm; :func:`facts` is a small
JSON-able dict of the summary.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import reference
from analysis.errors import AnalysisError
from analysis.families.dualpath import min_interval_mbps
from analysis.qdisc_vm003 import (cells, counter_delta, fmt_ci, markdown_table, path_ping_row, read_json,
                                  run_start)
from analysis.qdisc_vm003 import ping_metrics  # noqa: F401 (API: the ping readings path_ping_row gives each path)
from analysis.qdisc_vm003 import summary as qdisc_summary
from analysis.validation_store import export_results, run_dirs

MODES = ("tcp_path1", "mptcp")
KEYS = ["mode", "queue_pkts"]
ROLES = ("client", "sw_to_server", "sw_to_client", "server")
SAMPLED_ROLES = ("client", "sw_to_server")
PARAM_COLUMNS = ["run", "mode", "queue_pkts", "rep", "duration_s", "ping_interval_s", "cc", "delay_links", "kernel"]
PATH_METRICS = (["ping_rtt_mean_ms", "ping_jitter_ms", "ping_loss_pct", "ping_replies", "idle_rtt_ms",
                 "sent_to_server"] + [f"drops_{r}" for r in ROLES]
                + [f"{q}_{s}_{r}" for r in SAMPLED_ROLES for q in ("qlen", "backlog") for s in ("mean", "max")])
RUN_COLUMNS = (PARAM_COLUMNS + ["goodput_mbps", "min_interval_mbps", "retransmits", "flow_rtt_mean_ms"]
               + [f"{m}_p{k}" for k in (1, 2) for m in PATH_METRICS])
#: the metrics :func:`summary` and :func:`facts` report
SUMMARY_METRICS = ["goodput_mbps", "min_interval_mbps", "ping_rtt_mean_ms_p1", "ping_jitter_ms_p1", "ping_loss_pct_p1",
                   "ping_rtt_mean_ms_p2", "ping_jitter_ms_p2", "ping_loss_pct_p2", "retransmits", "flow_rtt_mean_ms",
                   "drops_client_p1", "drops_sw_to_server_p1", "qlen_mean_client_p1", "qlen_mean_sw_to_server_p1",
                   "backlog_mean_client_p1", "backlog_mean_sw_to_server_p1",
                   "drops_client_p2", "drops_sw_to_server_p2", "qlen_mean_client_p2", "qlen_mean_sw_to_server_p2",
                   "backlog_mean_client_p2", "backlog_mean_sw_to_server_p2"]
#: Table 2's metrics (data/reference/003/table2.csv) and the run metric each is compared with (ping over path 1:
#: an echo request not bound to an address follows h1's main routing table, whose one route is path 1)
TABLE2_METRICS = {"throughput_mbps": "goodput_mbps", "latency_ms": "ping_rtt_mean_ms_p1",
                  "jitter_ms": "ping_jitter_ms_p1", "packet_loss_pct": "ping_loss_pct_p1"}
#: the queue-discipline experiment's committed results (its netem arm is Mininet's leaf on namespace switches)
FIFO_BUNDLE = reference.REFERENCE_DIR.parent / "qdisc003-vm"
NAN = math.nan


def path_ifs(k: int) -> dict:
    """Path ``k``'s shaped interfaces by role: {ROLE: (node, device)} (see the module docstring)."""
    return {"client": ("h1", f"h1-eth{k - 1}"), "sw_to_server": (f"s{k}", f"s{k}-eth2"),
            "sw_to_client": (f"s{k}", f"s{k}-eth1"), "server": ("h2", f"h2-eth{k - 1}")}


# ------------------------------------------------------------------------------------------------ one run

def read_samples(path) -> list:
    """The lines of a ``tc/samples.jsonl`` ({"t", "node", "qdiscs"}); [] without the file, bad lines skipped."""
    out = []
    try:
        text = Path(path).read_text()
    except OSError:
        return out
    for line in text.splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if isinstance(d, dict) and isinstance(d.get("qdiscs"), list):
            out.append(d)
    return out


def queue_lengths(samples: list, node: str, dev: str, *, handle: str = "10:", t0: float | None = None,
                  t1: float | None = None, key: str = "qlen") -> np.ndarray:
    """The queue length (``key`` "qlen": packets; "backlog": bytes) of ``dev``'s qdisc ``handle`` in each of
    ``node``'s samples taken within [t0, t1] (epoch s; open ends when None)."""
    v = []
    for s in samples:
        if s.get("node") != node:
            continue
        t = s.get("t")
        if (t0 is not None and (t is None or t < t0)) or (t1 is not None and (t is None or t > t1)):
            continue
        for e in s["qdiscs"]:
            if e.get("dev") == dev and e.get("handle") == handle and isinstance(e.get(key), (int, float)):
                v.append(float(e[key]))
                break
    return np.asarray(v, dtype=float)


def tc_commands(commands: list, *, shows: bool = False) -> list:
    """The tc command lines of a run's ``tc/commands.json`` (list of {"node", "intf", "cmd", "output"}), in the order
    Mininet ran them; without ``shows`` the ``tc qdisc show`` look-ups Mininet makes before configuring are left
    out."""
    return [c["cmd"] for c in commands if isinstance(c, dict) and "cmd" in c
            and (shows or " qdisc show " not in f" {c['cmd']} ")]


def installed_tc(commands: list) -> dict:
    """Per interface, the tc commands of the LAST configuration Mininet applied to it (Open vSwitch clears a port's
    qdisc when it takes the port and Mininet configures the port again: the last round is what stays):
    {device: [cmd, ...]}, the ``qdisc del`` of an earlier round left out."""
    rounds: dict = {}
    for c in commands:
        if not (isinstance(c, dict) and "cmd" in c and "intf" in c) or " qdisc show " in f" {c['cmd']} ":
            continue
        cmd, dev = f" {c['cmd']} ", c["intf"]
        if " qdisc del " in cmd:
            rounds[dev] = []
            continue
        if " qdisc add " in cmd and " root " in cmd:
            rounds[dev] = []
        rounds.setdefault(dev, []).append(c["cmd"])
    return rounds


def switch_or_host_metrics(before: dict, after: dict, samples: list, k: int, t0=None, t1=None) -> dict:
    """Path ``k``'s counters over the run: bytes its switch sent towards h2, each role's netem drops, the sampled
    queue lengths of the data direction (``before``/``after``: {node: ``tc -s -j qdisc show`` list})."""
    ifs = path_ifs(k)
    node, dev = ifs["sw_to_server"]
    row = {f"sent_to_server_p{k}": counter_delta(before.get(node, []), after.get(node, []), dev, "bytes", root=True)}
    for role, (node, dev) in ifs.items():
        row[f"drops_{role}_p{k}"] = counter_delta(before.get(node, []), after.get(node, []), dev, "drops",
                                                  handle="10:")
    for role in SAMPLED_ROLES:
        node, dev = ifs[role]
        for key in ("qlen", "backlog"):
            q = queue_lengths(samples, node, dev, t0=t0, t1=t1, key=key)
            row[f"{key}_mean_{role}_p{k}"] = float(q.mean()) if q.size else NAN
            row[f"{key}_max_{role}_p{k}"] = float(q.max()) if q.size else NAN
    return row


def load_run(run_dir) -> dict:
    """The :data:`RUN_COLUMNS` row of one complete run directory (see the module docstring for units)."""
    d = Path(run_dir)
    meta, row, server = run_start(d, PARAM_COLUMNS)
    row["min_interval_mbps"] = min_interval_mbps(server)
    nodes = ("h1", "h2", "s1", "s2")
    before = {n: read_json(d / "tc" / f"{n}-before.json", []) for n in nodes}
    after = {n: read_json(d / "tc" / f"{n}-after.json", []) for n in nodes}
    samples = read_samples(d / "tc" / "samples.jsonl")
    t0, t1 = meta.get("flow_start_epoch"), meta.get("flow_end_epoch")
    for k in (1, 2):
        row.update(path_ping_row(d, meta, k))
        row.update(switch_or_host_metrics(before, after, samples, k, t0, t1))
    return row


def load_runs(root) -> pd.DataFrame:
    """One :data:`RUN_COLUMNS` row per complete run of a results directory (``DIR/runs`` or ``DIR/runs.tar.xz``),
    sorted by (mode, queue_pkts, rep)."""
    with run_dirs(root, ("COMPLETE",)) as dirs:
        rows = [load_run(d) for d in dirs]
    if not rows:
        raise AnalysisError(f"{root}: no complete run (runs/*/COMPLETE)")
    df = pd.DataFrame(rows, columns=RUN_COLUMNS)
    return df.sort_values(["mode", "queue_pkts", "rep"]).reset_index(drop=True)


def run_tc(root) -> dict:
    """The tc commands of the first complete run of a results directory (by name): {"run", "commands" (every one,
    in order, ``qdisc show`` left out), "installed" (:func:`installed_tc`)}; {} without any."""
    with run_dirs(root, ("COMPLETE",)) as dirs:
        for d in sorted(dirs, key=lambda p: p.name):
            cmds = read_json(d / "tc" / "commands.json", None)
            if isinstance(cmds, list):
                return {"run": d.name, "commands": tc_commands(cmds), "installed": installed_tc(cmds)}
    return {}


# ------------------------------------------------------------------------------------------------ statistics

def summary(runs: pd.DataFrame, metrics=SUMMARY_METRICS, alpha: float = 0.05) -> pd.DataFrame:
    """Per (mode, queue_pkts): for each metric its mean, ``_lo`` and ``_hi`` (the (1 − alpha) Student-t interval
    over reps) and ``n`` (reps), in the metrics' units (:func:`analysis.qdisc_vm003.summary`)."""
    return qdisc_summary(runs, metrics, alpha, keys=KEYS)


def fifo_cells(bundle=FIFO_BUNDLE) -> dict:
    """The queue-discipline experiment's netem (FIFO) arm, {(mode, queue_pkts): {METRIC: {"mean", "lo", "hi"}}}
    (:func:`analysis.qdisc_vm003.facts` of its committed results); {} when the bundle is absent."""
    b = Path(bundle)
    if not (b / "params.json").is_file():
        return {}
    from analysis.qdisc_vm003 import facts
    out = {}
    for key, cell in facts(b)["cells"].items():
        arm, mode, q = key.split("/")
        if arm == "netem":
            out[(mode, int(q))] = cell
    return out


def _num(v) -> float:
    return NAN if v is None else float(v)


def beside_paper(s: pd.DataFrame, table2: pd.DataFrame, fifo: dict | None = None) -> pd.DataFrame:
    """One row per Table 2 scenario and metric (:data:`TABLE2_METRICS`): ``scenario``, ``mode``, ``queue_pkts``,
    ``metric``, ``unit``, the paper's ``paper`` value, this replication's ``mininet`` mean with ``mininet_lo``,
    ``mininet_hi`` and ``n`` (:func:`summary` ``s``), the FIFO arm's ``fifo``, ``fifo_lo``, ``fifo_hi`` (``fifo``:
    :func:`fifo_cells`; NaN where absent), and ``paper_inside`` (the paper's value within the Mininet interval: True /
    False, None without an interval). Scenarios this replication did not run have NaN in its columns."""
    fifo = fifo or {}
    rows = []
    for r in table2.itertuples():
        if r.metric not in TABLE2_METRICS:
            continue
        col = TABLE2_METRICS[r.metric]
        q = int(r.queue_pkts)
        cell = s[(s["mode"] == r.mode) & (s["queue_pkts"].astype(int) == q)] if len(s) else s
        m = lo = hi = NAN
        n = 0
        if len(cell) and col in cell:
            c = cell.iloc[0]
            m, lo, hi, n = float(c[col]), float(c[f"{col}_lo"]), float(c[f"{col}_hi"]), int(c["n"])
        f = (fifo.get((r.mode, q)) or {}).get(col) or {}
        inside = None
        if math.isfinite(lo) and math.isfinite(hi):
            inside = bool(lo <= float(r.value) <= hi)
        rows.append({"scenario": r.scenario, "mode": r.mode, "queue_pkts": q, "metric": r.metric, "unit": r.unit,
                     "paper": float(r.value), "mininet": m, "mininet_lo": lo, "mininet_hi": hi, "n": n,
                     "fifo": _num(f.get("mean")), "fifo_lo": _num(f.get("lo")), "fifo_hi": _num(f.get("hi")),
                     "paper_inside": inside})
    return pd.DataFrame(rows)


def facts(runs_or_root, alpha: float = 0.05) -> dict:
    """``{"source", "alpha", "units", "cells": {"MODE/QUEUE": {"n", METRIC: {"mean", "lo", "hi"}}}}``, e.g.
    ``cells["tcp_path1/50"]["ping_rtt_mean_ms_p1"]["mean"]`` (ms). Values rounded to 4 decimals, NaN as None.
    ``runs_or_root``: :func:`load_runs`'s frame or a results directory."""
    runs = runs_or_root if isinstance(runs_or_root, pd.DataFrame) else load_runs(runs_or_root)
    return {"source": str(runs_or_root) if not isinstance(runs_or_root, pd.DataFrame) else None, "alpha": alpha,
            "units": {"goodput_mbps": "Mbit/s (iperf3 receiver)",
                      "min_interval_mbps": "Mbit/s (the worst 1-s interval of iperf3's receiver report)", "ping_rtt_mean_ms_pK": "ms",
                      "ping_jitter_ms_pK": "ms (study 003's equation over ping RTTs, icmp_seq order)",
                      "ping_loss_pct_pK": "%", "retransmits": "segments",
                      "flow_rtt_mean_ms": "ms (iperf3 sender's mean smoothed RTT; MPTCP: its first subflow)",
                      "drops_ROLE_pK": "packets (netem leaf of the role's interface, over the run)",
                      "qlen_mean_ROLE_pK": "packets (skbs in the netem leaf, mean over the flow's samples)",
                      "backlog_mean_ROLE_pK": "bytes (the netem leaf's backlog, mean over the flow's samples)"},
            "cells": cells(summary(runs, alpha=alpha), KEYS, SUMMARY_METRICS)}


# ------------------------------------------------------------------------------------------------ output

def markdown(s: pd.DataFrame) -> str:
    """The summary as a markdown table, mean [95 % t interval] per (mode, queue_pkts)."""
    return markdown_table(s, KEYS, [
        ("goodput_mbps", "goodput Mbit/s", 2), ("ping_rtt_mean_ms_p1", "ping RTT p1 ms", 2),
        ("ping_jitter_ms_p1", "ping jitter p1 ms", 2), ("ping_loss_pct_p1", "ping loss p1 %", 2),
        ("qlen_mean_client_p1", "queue h1 p1 pkts", 1), ("backlog_mean_client_p1", "queue h1 p1 bytes", 0),
        ("qlen_mean_sw_to_server_p1", "queue s1 pkts", 1),
        ("drops_client_p1", "drops h1 p1", 0), ("drops_sw_to_server_p1", "drops s1", 0),
        ("flow_rtt_mean_ms", "flow RTT ms", 1), ("ping_rtt_mean_ms_p2", "ping RTT p2 ms", 2),
        ("ping_jitter_ms_p2", "ping jitter p2 ms", 2), ("ping_loss_pct_p2", "ping loss p2 %", 2)])


def markdown_beside(b: pd.DataFrame) -> str:
    """:func:`beside_paper` as a markdown table: per scenario and metric the paper, Mininet and the FIFO arm."""
    lines = ["| scenario | mode | queue | metric | paper | Mininet + OVS (this) | FIFO arm (data/qdisc003-vm) |",
             "|---|---|---|---|---|---|---|"]
    for _, r in b.iterrows():
        lines.append(f"| {r['scenario']} | {r['mode']} | {r['queue_pkts']} | {r['metric']} ({r['unit']}) | "
                     f"{r['paper']:g} | {fmt_ci(r['mininet'], r['mininet_lo'], r['mininet_hi'])} | "
                     f"{fmt_ci(r['fifo'], r['fifo_lo'], r['fifo_hi'])} |")
    return "\n".join(lines)


def export(results_dir, dest) -> int:
    """The committed form of a results directory in ``dest`` (``analysis.validation_store.export_results``: complete
    runs packed, top-level files portable, logs xz'd) with ``facts.json`` (:func:`facts`); returns the runs written."""
    return export_results(results_dir, dest, lambda root: facts(load_runs(root)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m analysis.mininet_vm003", description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", help="results directory of testbed/mininet003/run-vm.sh (or its committed form)")
    ap.add_argument("--runs", action="store_true", help="also print one row per run")
    ap.add_argument("--tc", action="store_true", help="also print the tc commands Mininet ran (first run)")
    ap.add_argument("--json", action="store_true", help="print facts() as JSON instead of the tables")
    ap.add_argument("--fifo", default=None,
                    help="the queue-discipline experiment's results, for its FIFO (netem) arm [data/qdisc003-vm]")
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
        s = summary(runs)
        print(markdown(s))
        fifo_dir = Path(a.fifo) if a.fifo else FIFO_BUNDLE
        table2 = reference.load_table2(reference.REFERENCE_DIR / "003")
        print("\nBeside the paper's Table 2 (ping over path 1; mean [95 % t interval]):\n")
        print(markdown_beside(beside_paper(s, table2, fifo_cells(fifo_dir))))
        if a.tc:
            t = run_tc(a.dir)
            print(f"\ntc commands Mininet ran ({t.get('run', 'no run')}), in order:")
            for c in t.get("commands", []):
                print(f"  {c}")
        if a.runs:
            with pd.option_context("display.width", 250, "display.max_columns", 60, "display.max_rows", 500):
                print(runs[["run", "goodput_mbps", "flow_rtt_mean_ms", "ping_rtt_mean_ms_p1", "ping_jitter_ms_p1",
                            "ping_loss_pct_p1", "qlen_mean_client_p1", "backlog_mean_client_p1",
                            "qlen_mean_sw_to_server_p1",
                            "drops_client_p1", "drops_sw_to_server_p1", "ping_rtt_mean_ms_p2", "sent_to_server_p1",
                            "sent_to_server_p2", "retransmits", "idle_rtt_ms_p1", "idle_rtt_ms_p2"]]
                      .round(3).to_string(index=False))
    except AnalysisError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
