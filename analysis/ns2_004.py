"""Study 004's configurations simulated in ns-2 (``testbed/ns2_004/run.sh``; docs/ns2-004.md): received bytes,
end-to-end delay under two definitions, queueing and cwnd, per run and flow, lined up against the paper's tables
(``data/reference/004/table1.csv`` ... ``table4.csv``, Westwood+ column).

Input: the runner's output directory (or one run directory of it, or the committed form ``data/ns2-004/<set>/`` whose
``summary.csv`` holds these rows)::

    DIR/meta.json                      ns version, package, host, date, command
    DIR/runs/<run>/params.json         topology, table, error_rate, bandwidth_mbit, window, seed, start_s, end_s,
                                       header_bytes, links [{name, a, b, a_id, b_id, rate_mbit, delay_ms, ...}],
                                       flows [{flow, fid, sender, receiver, sender_id, receiver_id, path}]
    DIR/runs/<run>/trace.tr.gz         ns-2 trace-all, normal wired format (12 fields a line)
    DIR/runs/<run>/cwnd.tr.gz          ``trace cwnd_`` of every TCP agent (time saddr sport daddr dport cwnd_ value)

A trace line is ``event time from to type size flags fid src dst seq uid`` (event ``+`` enqueue at the link's queue,
``-`` dequeue = start of transmission, ``r`` received by the link's far node, ``d`` dropped; ``src``/``dst`` are
``node.port``; ``uid`` identifies one transmission across every hop). Per (run, flow), with these units:

* ``received_bytes_awk`` (bytes): what the usual ns-2 awk script counts — the sizes of every ``r`` event of a ``tcp``
  packet whose ``to`` is the flow's receiver node (the IP size: payload + ns-2's 40-byte TCP/IP header; the one
  40-byte SYN of ns-2's one-way TCP and duplicate arrivals included); ``received_pkts_awk`` their count;
* ``received_bytes_new`` (bytes): the testbed's definition (docs/families.md "Analysis": the IP bytes of each data
  packet that brings the receiver data it has not had, a retransmission filling a hole counts, a duplicate does not):
  the first arrival of each sequence number among packets larger than the header; ``received_pkts_new`` their count;
* ``delay_enq_mean_ms`` (ms): mean over received data packets (size > header) of t(``r`` at the receiver) −
  t(``+`` at the sender node), i.e. from the enqueue at the first hop, its queueing included;
* ``delay_deq_mean_ms`` (ms): the same from t(``-`` at the sender node), the start of the first transmission: the
  first hop's queueing excluded, every later hop's queueing included; ``n_delay_pkts`` the packets averaged;
* ``delay_deq_all_mean_ms`` (ms): the ``-``-based mean over every ``tcp`` packet of the flow received at the receiver,
  the 40-byte SYN of ns-2's one-way TCP included (an awk script that filters on the packet type only, not on its
  size, averages this); ``n_delay_pkts_all`` its packets;
* ``delay_noqueue_ms`` (ms): the path's delay without any queueing for a packet of the flow's data size,
  Σ over the path's links (delay_ms + size·8 / rate); ``delay_deq_min_ms`` / ``delay_enq_min_ms`` the smallest
  measured;
* ``queued_first_hop_share`` (fraction 0..1): received data packets that waited in the sender's link queue
  (t(``-``) − t(``+``) > 1 µs); ``queued_downstream_share``: those whose ``-``-based delay exceeds
  ``delay_noqueue_ms`` by more than 10 µs (queued at a later hop; ns-2 prints times to the microsecond);
* ``error_drops`` / ``queue_drops`` (packets): ``d`` events of the flow's data packets without / with a ``+`` of the
  same uid on the same link (ns-2's ``lossmodel`` sits at the link's head, before the enqueue trace, so an
  error-model drop has no ``+``); ``sent_data_pkts``: ``+`` events of data packets at the sender node;
* ``cwnd_max_pkts``, ``cwnd_mean_pkts`` (packets): maximum and time average (each traced value holds until the
  next) of the agent's ``cwnd_`` over [start_s, end_s]; ``window`` (packets) is ns-2's ``window_``, the cap on the
  window actually used.

:func:`run_totals` pools a run's flows (bytes summed, delays averaged over all their packets: the bottleneck's two
sources), :func:`compare_with_paper` lines the runs up against the paper's Westwood+ column, :func:`facts` gives a
JSON-ready dict, :func:`export` writes the committed form.
"""
from __future__ import annotations

import argparse
import io
import json
import math
import shutil
import sys
import tarfile
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.errors import AnalysisError
from analysis.markdown_table import num, table
from analysis.reference import REFERENCE_DIR

TRACE_COLUMNS = ["event", "t", "from_node", "to_node", "ptype", "size", "flags", "fid", "src", "dst", "seq", "uid"]
CWND_COLUMNS = ["t", "saddr", "sport", "daddr", "dport", "name", "value"]
PARAM_COLUMNS = ["run", "topology", "table", "level_row", "cc", "window", "seed", "duration_s", "error_rate",
                 "bandwidth_mbit"]
FLOW_METRICS = ["received_bytes_awk", "received_pkts_awk", "received_bytes_new", "received_pkts_new",
                "sent_data_pkts", "error_drops", "queue_drops", "n_delay_pkts", "delay_enq_mean_ms",
                "delay_deq_mean_ms", "n_delay_pkts_all", "delay_deq_all_mean_ms", "delay_enq_min_ms",
                "delay_deq_min_ms", "delay_noqueue_ms",
                "queued_first_hop_share", "queued_downstream_share", "cwnd_max_pkts", "cwnd_mean_pkts"]
FLOW_COLUMNS = ["source"] + PARAM_COLUMNS + ["flow", "sender", "receiver"] + FLOW_METRICS
TABLE_OF = {"client_server": 1, "multihop_varied": 2, "multihop_uniform": 3, "bottleneck": 4}
QUEUED_FIRST_HOP_S = 1e-6      # ns-2 prints event times in whole microseconds
QUEUED_DOWNSTREAM_S = 1e-5


# ---------------------------------------------------------------------------------------------------- parsing

def _text_source(source):
    """A path (``.gz`` read directly) or an in-memory text (str) for pandas."""
    if isinstance(source, str) and "\n" in source:
        return io.StringIO(source)
    p = Path(source)
    if not p.is_file():
        raise AnalysisError(f"file not found: {p}")
    return p


def parse_trace(source) -> pd.DataFrame:
    """An ns-2 normal wired trace (path, ``.gz`` allowed, or the text itself) as one row per line with
    :data:`TRACE_COLUMNS` plus ``src_node``, ``src_port``, ``dst_node``, ``dst_port``; ``t`` in seconds, ``size`` in
    bytes (IP packet as ns-2 sizes it). Raises AnalysisError for a line that is not 12 fields of that format."""
    src = _text_source(source)
    try:
        df = pd.read_csv(src, sep=r"\s+", header=None, names=TRACE_COLUMNS, engine="c",
                         dtype={"event": str, "ptype": str, "flags": str, "src": str, "dst": str},
                         compression="infer" if not isinstance(src, io.StringIO) else None)
    except pd.errors.EmptyDataError:
        return _typed_trace(pd.DataFrame(columns=TRACE_COLUMNS))
    except (pd.errors.ParserError, ValueError, OSError, EOFError, zlib.error) as exc:
        raise AnalysisError(f"not an ns-2 wired trace ({source if not isinstance(src, io.StringIO) else 'text'}): "
                            f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    if df.empty:
        return _typed_trace(df)
    bad = ~df["event"].isin(["+", "-", "r", "d"]) | df["uid"].isna()
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise AnalysisError(f"trace line {i + 1} is not an ns-2 wired trace line (event {df['event'].iloc[i]!r}, "
                            f"12 fields expected)")
    return _typed_trace(df)


def _typed_trace(df: pd.DataFrame) -> pd.DataFrame:
    try:
        out = df.astype({"t": float, "from_node": int, "to_node": int, "size": int, "fid": int, "seq": int,
                         "uid": int})
        s = out["src"].astype(str).str.split(".", n=1, expand=True) if len(out) else None
        d = out["dst"].astype(str).str.split(".", n=1, expand=True) if len(out) else None
        out["src_node"] = s[0].astype(int) if s is not None else pd.Series(dtype=int)
        out["src_port"] = s[1].astype(int) if s is not None else pd.Series(dtype=int)
        out["dst_node"] = d[0].astype(int) if d is not None else pd.Series(dtype=int)
        out["dst_port"] = d[1].astype(int) if d is not None else pd.Series(dtype=int)
    except (ValueError, TypeError, KeyError) as exc:
        raise AnalysisError(f"ns-2 trace with a non-numeric field: {exc}") from None
    return out


def parse_cwnd(source) -> pd.DataFrame:
    """The ``trace cwnd_`` output of ns-2 TCP agents (path, ``.gz`` allowed, or text): one row per ``cwnd_`` line,
    :data:`CWND_COLUMNS` (``t`` s, ``value`` packets). Lines of other traced variables are ignored."""
    src = _text_source(source)
    try:
        df = pd.read_csv(src, sep=r"\s+", header=None, names=CWND_COLUMNS, engine="c",
                         compression="infer" if not isinstance(src, io.StringIO) else None)
    except pd.errors.EmptyDataError:
        return pd.DataFrame(columns=CWND_COLUMNS)
    except (pd.errors.ParserError, ValueError, OSError, EOFError, zlib.error) as exc:
        raise AnalysisError(f"not an ns-2 variable trace: {str(exc).splitlines()[0] if str(exc) else exc}") from None
    df = df[df["name"] == "cwnd_"]
    try:
        return df.astype({"t": float, "saddr": int, "sport": int, "daddr": int, "dport": int, "value": float})
    except (ValueError, TypeError) as exc:
        raise AnalysisError(f"cwnd trace with a non-numeric field: {exc}") from None


# ---------------------------------------------------------------------------------------------------- metrics

def _data_at_receiver(trace: pd.DataFrame, receiver: int, fid: int, header_bytes: int) -> pd.DataFrame:
    """``r`` events at ``receiver`` of flow ``fid``'s tcp packets larger than ``header_bytes`` (all of them for
    ``header_bytes`` < 0)."""
    return trace[(trace["event"] == "r") & (trace["to_node"] == receiver) & (trace["ptype"] == "tcp")
                 & (trace["fid"] == fid) & (trace["size"] > header_bytes)]


def received_bytes_awk(trace: pd.DataFrame, receiver: int) -> tuple[int, int]:
    """(bytes, packets): every ``r`` event of a ``tcp`` packet whose ``to`` node is ``receiver``, sizes summed —
    the usual ns-2 awk count (SYN and duplicates included)."""
    r = trace[(trace["event"] == "r") & (trace["to_node"] == receiver) & (trace["ptype"] == "tcp")]
    return int(r["size"].sum()), int(len(r))


def received_bytes_new(trace: pd.DataFrame, receiver: int, fid: int, header_bytes: int = 40) -> tuple[int, int]:
    """(bytes, packets): data packets (size > ``header_bytes``) of flow ``fid`` arriving at ``receiver`` with a
    sequence number not received before (first arrival of each seq), sizes summed (IP bytes)."""
    r = _data_at_receiver(trace, receiver, fid, header_bytes).drop_duplicates("seq", keep="first")
    return int(r["size"].sum()), int(len(r))


def packet_delays(trace: pd.DataFrame, sender: int, receiver: int, fid: int, header_bytes: int = 40,
                  data_only: bool = True) -> pd.DataFrame:
    """One row per data packet (size > ``header_bytes``; every tcp packet, the SYN included, with ``data_only``
    False) of flow ``fid`` received at ``receiver``: ``uid``, ``seq``, ``size`` (bytes), ``t_enq`` (its ``+`` at
    the sender node), ``t_deq`` (its ``-`` there), ``t_recv`` (its ``r`` at the receiver), all s; ``delay_enq_s`` =
    t_recv − t_enq, ``delay_deq_s`` = t_recv − t_deq (s). A packet without both events at the sender node (a trace
    cut at its start) is left out."""
    rcv = _data_at_receiver(trace, receiver, fid, header_bytes if data_only else -1)[["uid", "seq", "size", "t"]]
    rcv = rcv.drop_duplicates("uid").rename(columns={"t": "t_recv"})
    at_src = trace[(trace["from_node"] == sender) & (trace["fid"] == fid) & (trace["ptype"] == "tcp")]
    enq = at_src[at_src["event"] == "+"].drop_duplicates("uid")[["uid", "t"]].rename(columns={"t": "t_enq"})
    deq = at_src[at_src["event"] == "-"].drop_duplicates("uid")[["uid", "t"]].rename(columns={"t": "t_deq"})
    out = rcv.merge(enq, on="uid", how="inner").merge(deq, on="uid", how="inner")
    out["delay_enq_s"] = out["t_recv"] - out["t_enq"]
    out["delay_deq_s"] = out["t_recv"] - out["t_deq"]
    return out.reset_index(drop=True)


def noqueue_delay_s(links: list[dict], size_bytes: float) -> float:
    """Σ over ``links`` of delay_ms/1000 + size_bytes·8/(rate_mbit·10⁶): one packet's path delay with no queueing
    (propagation plus one store-and-forward transmission per hop), s."""
    return float(sum(lk["delay_ms"] / 1000.0 + size_bytes * 8.0 / (lk["rate_mbit"] * 1e6) for lk in links))


def drops(trace: pd.DataFrame, fid: int, header_bytes: int = 40) -> tuple[int, int]:
    """(error_drops, queue_drops) of flow ``fid``'s data packets: a ``d`` event is a queue drop when the same uid
    has a ``+`` on the same link (from, to), else an error-model drop (ns-2's lossmodel sits before the enqueue
    trace)."""
    f = trace[(trace["fid"] == fid) & (trace["ptype"] == "tcp") & (trace["size"] > header_bytes)]
    d = f[f["event"] == "d"][["uid", "from_node", "to_node"]]
    if d.empty:
        return 0, 0
    enq = f[f["event"] == "+"][["uid", "from_node", "to_node"]].drop_duplicates()
    m = d.merge(enq.assign(_q=1), on=["uid", "from_node", "to_node"], how="left")
    q = int(m["_q"].notna().sum())
    return int(len(d)) - q, q


def cwnd_stats(cwnd: pd.DataFrame, saddr: int, daddr: int, t0: float, t1: float) -> tuple[float, float]:
    """(max, time average) of the ``cwnd_`` of the agent at node ``saddr`` sending to node ``daddr`` over
    [t0, t1] s, packets: each traced value holds until the next; the value in force at t0 counts from t0.
    (nan, nan) without a sample."""
    c = cwnd[(cwnd["saddr"] == saddr) & (cwnd["daddr"] == daddr)].sort_values("t", kind="stable")
    if c.empty or not t1 > t0:
        return math.nan, math.nan
    t = c["t"].to_numpy()
    v = c["value"].to_numpy()
    before = np.flatnonzero(t <= t0)
    start_v = v[before[-1]] if len(before) else None
    inside = (t > t0) & (t < t1)
    ts = np.concatenate([[t0] if start_v is not None else [], t[inside]])
    vs = np.concatenate([[start_v] if start_v is not None else [], v[inside]])
    if len(ts) == 0:
        return math.nan, math.nan
    dur = np.diff(np.append(ts, t1))
    return float(vs.max()), float(np.sum(vs * dur) / np.sum(dur))


def flow_metrics(trace: pd.DataFrame, cwnd: pd.DataFrame | None, params: dict, flow: dict) -> dict:
    """All :data:`FLOW_METRICS` of one flow of one run (``params`` as params.json, ``flow`` one of its flows)."""
    hdr = int(params.get("header_bytes", 40))
    snd, rcv, fid = int(flow["sender_id"]), int(flow["receiver_id"]), int(flow["fid"])
    b_awk, n_awk = received_bytes_awk(trace, rcv)
    b_new, n_new = received_bytes_new(trace, rcv, fid, hdr)
    pd_ = packet_delays(trace, snd, rcv, fid, hdr)
    pall = packet_delays(trace, snd, rcv, fid, hdr, data_only=False)
    links = {lk["name"]: lk for lk in params["links"]}
    try:
        path = [links[name] for name in flow["path"]]
    except KeyError as exc:
        raise AnalysisError(f"{params.get('run', '?')}: flow {flow.get('flow')} names unknown link {exc}") from None
    size = float(pd_["size"].median()) if len(pd_) else float(params.get("ip_packet_bytes", 592))
    noq = noqueue_delay_s(path, size)
    err_d, q_d = drops(trace, fid, hdr)
    sent = int(((trace["event"] == "+") & (trace["from_node"] == snd) & (trace["fid"] == fid)
                & (trace["ptype"] == "tcp") & (trace["size"] > hdr)).sum())
    if cwnd is not None:
        cmax, cmean = cwnd_stats(cwnd, snd, rcv, float(params["start_s"]), float(params["end_s"]))
    else:
        cmax = cmean = math.nan
    n = len(pd_)
    return {
        "flow": int(flow["flow"]), "sender": flow["sender"], "receiver": flow["receiver"],
        "received_bytes_awk": b_awk, "received_pkts_awk": n_awk,
        "received_bytes_new": b_new, "received_pkts_new": n_new,
        "sent_data_pkts": sent, "error_drops": err_d, "queue_drops": q_d, "n_delay_pkts": n,
        "delay_enq_mean_ms": float(pd_["delay_enq_s"].mean() * 1e3) if n else math.nan,
        "delay_deq_mean_ms": float(pd_["delay_deq_s"].mean() * 1e3) if n else math.nan,
        "n_delay_pkts_all": len(pall),
        "delay_deq_all_mean_ms": float(pall["delay_deq_s"].mean() * 1e3) if len(pall) else math.nan,
        "delay_enq_min_ms": float(pd_["delay_enq_s"].min() * 1e3) if n else math.nan,
        "delay_deq_min_ms": float(pd_["delay_deq_s"].min() * 1e3) if n else math.nan,
        "delay_noqueue_ms": noq * 1e3,
        "queued_first_hop_share": float(((pd_["t_deq"] - pd_["t_enq"]) > QUEUED_FIRST_HOP_S).mean()) if n else math.nan,
        "queued_downstream_share": float((pd_["delay_deq_s"] > noq + QUEUED_DOWNSTREAM_S).mean()) if n else math.nan,
        "cwnd_max_pkts": cmax, "cwnd_mean_pkts": cmean,
    }


# ---------------------------------------------------------------------------------------------------- loading

def _read_json(p: Path) -> dict:
    try:
        return json.loads(p.read_text())
    except FileNotFoundError:
        raise AnalysisError(f"missing {p.name} in {p.parent}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise AnalysisError(f"{p}: not valid JSON ({exc})") from None


def _param_row(params: dict) -> dict:
    missing = [k for k in ("run", "topology", "error_rate", "links", "flows", "start_s", "end_s") if k not in params]
    if missing:
        raise AnalysisError(f"params.json of {params.get('run', '?')} lacks {', '.join(missing)}")
    row = {k: params.get(k) for k in PARAM_COLUMNS}
    if row["table"] is None:
        row["table"] = TABLE_OF.get(params["topology"])
    return row


def load_run(run_dir, source: str = "") -> list[dict]:
    """One dict per flow of the run directory ``run_dir`` (params.json, trace.tr[.gz], cwnd.tr[.gz]):
    :data:`FLOW_COLUMNS`; ``source`` names the set of runs it belongs to (the output directory's name)."""
    d = Path(run_dir)
    params = _read_json(d / "params.json")
    base = {"source": source or d.name, **_param_row(params)}
    tr = next((d / n for n in ("trace.tr.gz", "trace.tr") if (d / n).is_file()), None)
    if tr is None:
        raise AnalysisError(f"{d.name}: no trace.tr.gz (runs without their trace are read from summary.csv)")
    trace = parse_trace(tr)
    cw = next((d / n for n in ("cwnd.tr.gz", "cwnd.tr") if (d / n).is_file()), None)
    cwnd = parse_cwnd(cw) if cw is not None else None
    return [{**base, **flow_metrics(trace, cwnd, params, f)} for f in params["flows"]]


def run_dirs(root) -> list[Path]:
    """The run directories under ``root`` (``root/runs/*`` with a params.json, or ``root`` itself)."""
    r = Path(root)
    if (r / "params.json").is_file():
        return [r]
    return sorted(p for p in (r / "runs").glob("*") if (p / "params.json").is_file())


def load_runs(root) -> pd.DataFrame:
    """Rows (run, flow) of :data:`FLOW_COLUMNS` for an output directory of ``testbed/ns2_004/run.sh``, one run
    directory of it, or a committed set with ``summary.csv`` (read as it is). ``source`` is the directory's name
    (the summary's own for a committed set), so that sets of the same runs (e.g. two windows) stay apart."""
    r = Path(root)
    if not r.exists():
        raise AnalysisError(f"no such directory: {r}")
    if (r / "summary.csv").is_file():
        try:
            df = pd.read_csv(r / "summary.csv")
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
            raise AnalysisError(f"{r / 'summary.csv'}: unreadable ({exc})") from None
        missing = [c for c in FLOW_COLUMNS if c not in df.columns]
        if missing:
            raise AnalysisError(f"{r / 'summary.csv'} lacks columns {', '.join(missing)}")
        return df[FLOW_COLUMNS]
    dirs = run_dirs(r)
    if not dirs:
        raise AnalysisError(f"{r}: no run directory (runs/<run>/params.json) and no summary.csv")
    rows = [row for d in dirs for row in load_run(d, r.resolve().name)]
    return pd.DataFrame(rows, columns=FLOW_COLUMNS)


# ---------------------------------------------------------------------------------------------------- aggregation

def run_totals(flows: pd.DataFrame) -> pd.DataFrame:
    """One row per run: bytes and packet counts summed over its flows, delays averaged over all its flows' data
    packets (weights ``n_delay_pkts``), shares likewise, cwnd max of the flows' maxima and mean of their means."""
    if flows.empty:
        return pd.DataFrame(columns=["source"] + PARAM_COLUMNS + ["flows"] + FLOW_METRICS)
    out = []
    for _, g in flows.groupby(["source", "run"], sort=True):
        row = {k: g[k].iloc[0] for k in ["source"] + PARAM_COLUMNS}
        row["flows"] = len(g)
        for k in ("received_bytes_awk", "received_pkts_awk", "received_bytes_new", "received_pkts_new",
                  "sent_data_pkts", "error_drops", "queue_drops", "n_delay_pkts", "n_delay_pkts_all"):
            row[k] = int(g[k].sum())
        for k in ("delay_enq_mean_ms", "delay_deq_mean_ms", "delay_deq_all_mean_ms", "queued_first_hop_share",
                  "queued_downstream_share"):
            w = g["n_delay_pkts_all" if k == "delay_deq_all_mean_ms" else "n_delay_pkts"].to_numpy(float)
            v = g[k].to_numpy(float)
            ok = np.isfinite(v) & (w > 0)
            row[k] = float(np.sum(v[ok] * w[ok]) / np.sum(w[ok])) if ok.any() else math.nan
        for k in ("delay_enq_min_ms", "delay_deq_min_ms", "delay_noqueue_ms"):
            row[k] = float(g[k].min())
        row["cwnd_max_pkts"] = float(g["cwnd_max_pkts"].max())
        row["cwnd_mean_pkts"] = float(g["cwnd_mean_pkts"].mean())
        out.append(row)
    return pd.DataFrame(out)


def load_reference(reference_dir=None) -> pd.DataFrame:
    """The paper's Tables 1-4 (``data/reference/004/table*.csv``; analysis.reference has no loader for study 004's
    tables, so the CSVs are read here) with ``value_si``: bytes for received_bytes, seconds for the delays (the CSVs
    keep the printed seconds under metric ``delay_ms`` with unit ``s``)."""
    d = Path(reference_dir) if reference_dir else REFERENCE_DIR / "004"
    frames = []
    for k in (1, 2, 3, 4):
        p = d / f"table{k}.csv"
        if not p.is_file():
            raise AnalysisError(f"reference file not found: {p}")
        frames.append(pd.read_csv(p))
    ref = pd.concat(frames, ignore_index=True)
    scale = ref["unit"].map({"bytes": 1.0, "s": 1.0, "ms": 1e-3})
    if scale.isna().any():
        raise AnalysisError(f"reference unit not understood: {sorted(set(ref['unit'][scale.isna()]))}")
    ref["value_si"] = ref["value"] * scale
    ref["metric"] = ref["metric"].replace({"delay_ms": "delay_s"})
    return ref


def _level(table_no, bandwidth_mbit, error_rate) -> float:
    """A run's row of the paper's table: Mbit/s for Table 3, else the error rate (fraction)."""
    return float(bandwidth_mbit) if int(table_no) == 3 else round(float(error_rate), 4)


def compare_with_paper(flows: pd.DataFrame, reference_dir=None) -> pd.DataFrame:
    """Long table, one row per (run, metric, definition): ``source``, ``table``, ``topology``, ``level`` (error
    rate, or Mbit/s for Table 3), ``window``, ``duration_s``, ``seed``, ``cc``, ``metric`` (received_bytes |
    delay_s), ``definition`` (awk | new_data for bytes; enqueue ('+') | dequeue ('-') | dequeue_all_tcp ('-', the
    SYN included) for the delay), ``paper`` (the paper's value for the run's cc, NaN when the paper has none),
    ``ns2`` (the run's value pooled over its flows, bytes or s), ``diff`` = ns2 − paper and ``ratio`` =
    ns2 / paper."""
    ref = load_reference(reference_dir)
    runs = run_totals(flows)
    rows = []
    for _, r in runs.iterrows():
        t = int(r["table"])
        lvl = _level(t, r["bandwidth_mbit"], r["error_rate"])
        key = "bandwidth_mbit" if t == 3 else "error_rate"
        cell = ref[(ref["table"] == t) & (ref["cc"] == r["cc"]) & np.isclose(ref[key].astype(float), lvl)]

        def paper(metric):
            v = cell[cell["metric"] == metric]["value_si"]
            return float(v.iloc[0]) if len(v) else math.nan

        for metric, definition, val in (
                ("received_bytes", "awk", float(r["received_bytes_awk"])),
                ("received_bytes", "new_data", float(r["received_bytes_new"])),
                ("delay_s", "enqueue", float(r["delay_enq_mean_ms"]) / 1e3),
                ("delay_s", "dequeue", float(r["delay_deq_mean_ms"]) / 1e3),
                ("delay_s", "dequeue_all_tcp", float(r["delay_deq_all_mean_ms"]) / 1e3)):
            p = paper(metric)
            rows.append({"source": r["source"], "table": t, "topology": r["topology"], "level": lvl,
                         "window": int(r["window"]), "duration_s": float(r["duration_s"]),
                         "seed": int(r["seed"]), "cc": r["cc"], "metric": metric, "definition": definition,
                         "paper": p, "ns2": val, "diff": val - p,
                         "ratio": val / p if p and np.isfinite(p) else math.nan})
    return pd.DataFrame(rows)


def _clean(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        return None if not np.isfinite(v) else float(v)
    return v


def _records(df: pd.DataFrame) -> list[dict]:
    return [{k: _clean(v) for k, v in rec.items()} for rec in df.to_dict(orient="records")]


def facts(runs) -> dict:
    """JSON-ready dict of ``runs`` (a DataFrame of :func:`load_runs`, or a directory): ``flows`` (one record per
    (run, flow)), ``runs`` (:func:`run_totals`), ``comparison`` (:func:`compare_with_paper`) and ``table1_delay``:
    Table 1's delays under both definitions against the paper's constant, per level (s)."""
    flows = runs if isinstance(runs, pd.DataFrame) else load_runs(runs)
    cmp_ = compare_with_paper(flows)
    t1 = cmp_[(cmp_["table"] == 1) & (cmp_["metric"] == "delay_s")]
    table1 = {}
    for lvl, g in t1.groupby("level"):
        table1[f"{lvl:.2f}"] = {"paper_s": _clean(g["paper"].iloc[0]),
                                **{f"{d}_s": _clean(v) for d, v in zip(g["definition"], g["ns2"])}}
    return {"flows": _records(flows), "runs": _records(run_totals(flows)), "comparison": _records(cmp_),
            "table1_delay": table1}


# ---------------------------------------------------------------------------------------------------- output

def markdown(flows: pd.DataFrame) -> str:
    """Two Markdown tables: per (run, flow) metrics, and each run against the paper's Westwood+ column."""
    fl = flows.sort_values(["source", "table", "level_row", "flow"])
    rows = [[r.source, int(r.table), r.topology, f"{_level(r.table, r.bandwidth_mbit, r.error_rate):g}",
             int(r.window), int(r.flow),
             f"{int(r.received_bytes_awk):,}", f"{int(r.received_bytes_new):,}",
             num(r.delay_enq_mean_ms, 3), num(r.delay_deq_mean_ms, 3), num(r.delay_noqueue_ms, 3),
             num(r.queued_first_hop_share, 3), num(r.queued_downstream_share, 3),
             f"{int(r.error_drops)}/{int(r.queue_drops)}", num(r.cwnd_max_pkts, 0), num(r.cwnd_mean_pkts, 1)]
            for r in fl.itertuples()]
    t1 = table(["set", "table", "topology", "level", "window_", "flow", "received B (awk)", "received B (new data)",
                "delay + (ms)", "delay - (ms)", "no-queue (ms)", "queued 1st hop", "queued later",
                "drops err/queue", "cwnd max", "cwnd mean"], rows)
    c = compare_with_paper(flows)
    piv = []
    for (src, tab, lvl), g in c.groupby(["source", "table", "level"], sort=True):
        def v(metric, d):
            x = g[(g["metric"] == metric) & (g["definition"] == d)]
            return x.iloc[0] if len(x) else None
        ba, bn = v("received_bytes", "awk"), v("received_bytes", "new_data")
        de, dd, da = v("delay_s", "enqueue"), v("delay_s", "dequeue"), v("delay_s", "dequeue_all_tcp")
        piv.append([src, tab, f"{lvl:g}", int(g["window"].iloc[0]),
                    f"{ba['paper']:,.0f}" if np.isfinite(ba["paper"]) else "—", f"{ba['ns2']:,.0f}",
                    f"{bn['ns2']:,.0f}", num(de["paper"], 6), num(de["ns2"], 6), num(dd["ns2"], 6),
                    num(da["ns2"], 6)])
    t2 = table(["set", "table", "level", "window_", "paper bytes (W+)", "ns-2 bytes (awk)", "ns-2 bytes (new data)",
                "paper delay (s)", "ns-2 delay + (s)", "ns-2 delay - (s)", "ns-2 delay - incl. SYN (s)"], piv)
    return ("Per run and flow (delays: mean over received data packets, from the packet's enqueue '+' / dequeue '-' "
            "at the sender node to its 'r' at the receiver):\n\n" + t1 + "\n\nAgainst the paper (Westwood+ column; "
            "bottleneck runs: both flows pooled):\n\n" + t2 + "\n")


def export(src, dest, keep_traces=()) -> int:
    """The committed form of the output directory ``src`` in the new directory ``dest``: meta.json, summary.csv
    (:func:`load_runs` rows), comparison.csv, and ``runs.tar.xz`` holding ``runs/<run>/`` sim.tcl, params.json, ns.log
    and cwnd.tr.gz of every run (one file, not hundreds: the repository counts its files); the trace (trace.tr.gz) only
    of the runs named in ``keep_traces``. Returns the number of runs."""
    s, d = Path(src), Path(dest)
    if d.exists():
        raise AnalysisError(f"{d} exists (a new directory is required)")
    dirs = run_dirs(s)
    if not dirs or dirs == [s]:
        raise AnalysisError(f"{s}: not an output directory of testbed/ns2_004/run.sh (runs/<run>/params.json)")
    names = {p.name for p in dirs}
    unknown = [k for k in keep_traces if k not in names]
    if unknown:
        raise AnalysisError(f"--keep-trace: no run {', '.join(unknown)}")
    flows = load_runs(s)
    d.mkdir(parents=True)
    if (s / "meta.json").is_file():
        shutil.copy2(s / "meta.json", d / "meta.json")
    flows.to_csv(d / "summary.csv", index=False, float_format="%.10g")
    compare_with_paper(flows).to_csv(d / "comparison.csv", index=False, float_format="%.10g")
    with tarfile.open(d / "runs.tar.xz", "w:xz") as tar:
        for p in dirs:
            keep = ("sim.tcl", "params.json", "ns.log", "cwnd.tr.gz") + (("trace.tr.gz",) if p.name in keep_traces
                                                                          else ())
            for n in keep:
                if (p / n).is_file():
                    tar.add(p / n, arcname=f"runs/{p.name}/{n}")
    return len(dirs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m analysis.ns2_004",
                                 description="Study 004's configurations in ns-2 (testbed/ns2_004/run.sh): received "
                                             "bytes, delay from '+' and from '-', queueing, cwnd, against the paper.")
    ap.add_argument("dirs", nargs="+", metavar="DIR", help="output directory of run.sh, a run directory of it, or a "
                                                           "committed set with summary.csv")
    ap.add_argument("--json", action="store_true", help="print facts() as JSON instead of Markdown")
    ap.add_argument("--export", metavar="DEST", help="write the committed form of the one DIR into the new DEST")
    ap.add_argument("--keep-trace", action="append", default=[], metavar="RUN",
                    help="with --export: also keep this run's trace.tr.gz (repeatable)")
    args = ap.parse_args(argv)
    try:
        if args.export:
            if len(args.dirs) != 1:
                raise AnalysisError("--export takes exactly one DIR")
            n = export(args.dirs[0], args.export, args.keep_trace)
            print(f"{n} runs exported to {args.export}", file=sys.stderr)
            return 0
        flows = pd.concat([load_runs(d) for d in args.dirs], ignore_index=True)
        if args.json:
            json.dump(facts(flows), sys.stdout, indent=1)
            sys.stdout.write("\n")
        else:
            sys.stdout.write(markdown(flows))
    except AnalysisError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:         # output piped into a reader that stopped (e.g. head)
        sys.stdout = None
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
