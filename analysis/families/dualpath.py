"""Per-run metrics of the dual-path families (studies 001 and 003): one client, two paths, one server.

Run directory (``capture_tools/run_dualpath.sh``; docs/families.md): ``client-pathK.pcap`` (the client's interface
towards path K's switch) and ``server-pathK.pcap`` (the server's interface from it), K = 1, 2, all captured on one
host clock; ``iperf3/flow1-{client,server}.json`` (the data flow, port 5201), ``iperf3/flood-*.json`` (study 003's
UDP flood, port 5202), ``ping/pathK.txt`` (``ping -D`` over each path during the flow), ``meta.json``, ``params.json``.

One row per (run, path) — columns :data:`COLUMNS`; connection-level values repeat on both rows of a run:

* parameters: run_id, campaign, family, experiment, mode, transport ("tcp" | "mptcp"), tcp_path (TCP's path; NaN for
  MPTCP), cc, mptcp_scheduler, buffer_bytes (001), queue_pkts (003), duration_s, udp_flood_mbps,
  udp_flood_start_s, udp_flood_end_s (s after the flow start), rep, backend, kernel, queue_mechanism,
  delay_mechanism, self_check_ok, host_cpu_pressure_pct (%); path (1 | 2), path_label (e.g. "LTE"),
  path_rate_mbit (Mbit/s), path_delay_ms (one-way, ms), path_buffer_bytes / path_buffer_pkts.
* throughput_mbps: the connection's goodput as iperf3's receiver reports it (server JSON end.sum_received), Mbit/s.
* conn_goodput_mbps: the data connection's payload arriving at the server for the first time (subflow sequence
  space; a retransmission filling a hole counts, a duplicate does not) over [first, last] data segment of the
  connection on either path, Mbit/s (``analysis.metrics.throughput.delivered_goodput_mbps``); path_goodput_mbps:
  this path's part over the same window (the two rows add up to conn_goodput_mbps; an MPTCP reinjection of data
  already delivered on the other subflow would count on both); path_share = path / connection.
* subflow_kind: "tcp" (single-path TCP), "initial" or "join" (MPTCP subflow, from the MP_CAPABLE / MP_JOIN
  handshake options, RFC 8684 sect. 3.1-3.2, ``analysis.ingest.mptcp_options``), None when the path carried no
  data connection.
* data_pkts, data_bytes: data segments (payload > 0) of the path's subflow the client sent (retransmissions
  included), packets and payload bytes; retransmissions: of those, segments whose sequence range was sent before
  (packets).
* owd_mean_ms, owd_median_ms, owd_p95_ms: one-way delay client -> server of the path's data segments, ms: server
  capture time minus client capture time of the same transmission (matched on TCP sequence number, IPv4 ID and
  payload length; a retransmission has its own IPv4 ID).
* jitter_ms: study 003's jitter, Σ|D_i − D_{i+1}| / (n − 1) over those one-way delays in arrival order, ms
  (``analysis.metrics.jitter.mean_abs_delay_variation``).
* loss_pct: data segments the client sent on the path that never reached the server capture, % of those sent
  (``analysis.metrics.loss.loss_pct``): drops in the path's queue.
* reorder_ratio, reorder_extent_max: RFC 4737 Type-P-Reordered-Ratio-Stream (fraction) and the largest extent
  (packets) of the subflow's segments at the server, over segments the client sent exactly once
  (``analysis.metrics.reordering.tcp_reordering``, "sender-filtered").
* ping_rtt_mean_ms, ping_rtt_median_ms, ping_rtt_p95_ms, ping_loss_pct, ping_jitter_ms: ICMP echo over the path
  during the flow (``ping -D`` replies; loss = requests never answered among those that had time to be answered
  before ping's deadline, :func:`ping_loss_pct`; jitter = study 003's
  Σ|D_i − D_{i+1}| / (n − 1) over the replies' RTTs in icmp_seq order, :func:`ping_jitter_ms`), ms and %;
  ping_interval_s: the interval between echo requests (``ping -i``, the run's parameter), s.
* flood_goodput_mbps, pre_flood_goodput_mbps: the connection's goodput at the server (both paths) while the UDP
  flood ran (its first to last datagram at the client, meta.json flood.observed; the scheduled window when none was
  seen) and before it (first data segment to the flood's start), Mbit/s; flood_loss_pct: flood datagrams the client
  sent on path 1 that never reached the server capture, % (meta.json flood.observed client_pkts/server_pkts).
  NaN without a flood. During the flood, per path: flood_owd_mean_ms, flood_jitter_ms (study 003's jitter) and
  flood_path_loss_pct of the data segments sent in the flood window (:func:`window_delay_stats`), and of ping
  (:func:`ping_window_stats`): flood_ping_rtt_mean_ms and flood_ping_jitter_ms over the replies received in it,
  flood_ping_loss_pct of the requests sent in it, ms and %.
* conn_owd_mean_ms: mean one-way delay over every received data segment of the connection on both paths, ms (the
  connection's packet delay, as a simulator's flow monitor reports it).
* min_interval_mbps: the smallest per-interval goodput iperf3's receiver reports (1-s intervals), Mbit/s.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from analysis import runmeta
from analysis.errors import AnalysisError
from analysis.families.columns import number as _num, typed_columns

DERIVED_VERSION = 5   # of these rows' definition (the derived cache is rebuilt when it changes)
DATA_PORT = 5201
PATHS = (1, 2)
CAPTURES = tuple(f"{side}-path{k}.pcap" for k in PATHS for side in ("client", "server"))
NAN = float("nan")

COLUMNS = [
    "run_id", "campaign", "family", "experiment", "mode", "transport", "tcp_path", "cc", "mptcp_scheduler",
    "buffer_bytes", "queue_pkts", "duration_s", "udp_flood_mbps", "udp_flood_start_s", "udp_flood_end_s", "rep",
    "backend", "kernel", "queue_mechanism", "delay_mechanism", "self_check_ok", "host_cpu_pressure_pct", "path",
    "path_label", "path_rate_mbit", "path_delay_ms", "path_buffer_bytes", "path_buffer_pkts", "throughput_mbps",
    "conn_goodput_mbps", "path_goodput_mbps", "path_share", "subflow_kind", "data_pkts", "data_bytes",
    "retransmissions", "owd_mean_ms", "owd_median_ms", "owd_p95_ms", "jitter_ms", "loss_pct", "reorder_ratio",
    "reorder_extent_max", "ping_rtt_mean_ms", "ping_rtt_median_ms", "ping_rtt_p95_ms", "ping_loss_pct",
    "ping_jitter_ms", "ping_interval_s", "flood_goodput_mbps", "pre_flood_goodput_mbps", "flood_loss_pct",
    "conn_owd_mean_ms", "min_interval_mbps", "flood_owd_mean_ms", "flood_jitter_ms", "flood_path_loss_pct",
    "flood_ping_rtt_mean_ms", "flood_ping_jitter_ms", "flood_ping_loss_pct",
]
TEXT_COLS = ["run_id", "campaign", "family", "experiment", "mode", "transport", "cc", "mptcp_scheduler", "backend",
             "kernel", "queue_mechanism", "delay_mechanism", "path_label", "subflow_kind"]
INT_COLS = ["path", "rep"]
FLOAT_COLS = [c for c in COLUMNS if c not in TEXT_COLS + INT_COLS + ["self_check_ok"]]
SORT = ["run_id", "path"]
RUNS_COLUMNS = ["run_id", "status", "reason", "experiment", "mode", "transport", "cc", "mptcp_scheduler",
                "buffer_bytes", "queue_pkts", "udp_flood_mbps", "rep"]




def typed(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with the dtypes of :data:`COLUMNS` (float for numbers, int path/rep, None for missing text)."""
    return typed_columns(df, FLOAT_COLS, INT_COLS, TEXT_COLS + ["self_check_ok"])


def input_files(run_dir: Path) -> dict[str, Path]:
    """{logical name: file} of a dual-path run's inputs (captures under their plain names, also when xz'd)."""
    out = runmeta.run_files(run_dir, CAPTURES)
    d = run_dir / "iperf3"
    if d.is_dir():
        for p in sorted(d.glob("*.json")):
            out[f"iperf3/{p.name}"] = p
    for k in PATHS:   # ping output, plain or xz'd (a bundle), under its plain name
        for p in (run_dir / "ping" / f"path{k}.txt", run_dir / "ping" / f"path{k}.txt.xz"):
            if p.is_file():
                out[f"ping/path{k}.txt"] = p
                break
    return out


def has_raw(run_dir: Path) -> bool:
    return runmeta.capture_path(run_dir, "server-path1.pcap") is not None


# ------------------------------------------------------------------------------------------------ ping

_REPLY = re.compile(rb"^\[(?P<ts>[0-9.]+)\].*icmp_seq=(?P<seq>\d+).*time=(?P<rtt>[0-9.]+) ms")
_SUMMARY = re.compile(rb"(?P<tx>\d+) packets transmitted, (?P<rx>\d+) received")
PING_COLUMNS = ["ping_rtt_mean_ms", "ping_rtt_median_ms", "ping_rtt_p95_ms", "ping_loss_pct", "ping_jitter_ms"]
FLOOD_PING_COLUMNS = ["flood_ping_rtt_mean_ms", "flood_ping_jitter_ms", "flood_ping_loss_pct"]


class PingLog(NamedTuple):
    """The echo replies of one ``ping -D`` output, in icmp_seq order (a duplicate reply counts once, the first):
    seq (icmp_seq), ts_s (epoch s at which the reply arrived), rtt_ms; transmitted / received from ping's summary
    line (None without one)."""
    seq: np.ndarray
    ts_s: np.ndarray
    rtt_ms: np.ndarray
    transmitted: int | None
    received: int | None


def parse_ping(text: bytes) -> PingLog:
    """:class:`PingLog` of the text of a ``ping -D`` run (iputils)."""
    seen, ts, rtts, seqs, tx, rx = set(), [], [], [], None, None
    for line in text.splitlines():
        m = _REPLY.match(line)
        if m:
            q = int(m["seq"])
            if q not in seen:              # "(DUP!)" replies repeat a sequence number
                seen.add(q)
                seqs.append(q)
                ts.append(float(m["ts"]))
                rtts.append(float(m["rtt"]))
            continue
        s = _SUMMARY.search(line)
        if s:
            tx, rx = int(s["tx"]), int(s["rx"])
    order = np.argsort(np.asarray(seqs, dtype=np.int64), kind="stable")
    return PingLog(np.asarray(seqs, dtype=np.int64)[order], np.asarray(ts, dtype=float)[order],
                   np.asarray(rtts, dtype=float)[order], tx, rx)


def ping_replies(path) -> PingLog:
    """:class:`PingLog` of a ``ping -D`` output file (plain or xz'd)."""
    from analysis.ingest.compressed import open_decompressed

    with open_decompressed(path) as f:
        return parse_ping(f.read())


def ping_jitter_ms(rtt_ms) -> float:
    """Study 003's jitter (section III.D: Σ|D_i − D_{i+1}| / (n − 1)) over ping's round-trip times D_i in icmp_seq
    order, lost requests left out (consecutive replies), ms; NaN with fewer than two replies."""
    from analysis.metrics.jitter import mean_abs_delay_variation

    r = np.asarray(rtt_ms, dtype=float)
    return mean_abs_delay_variation(r) if r.size >= 2 else NAN


def ping_stats(log) -> dict:
    """RTT (ms), loss (%) and study 003's jitter (ms) of a ping run (:class:`PingLog`, or a ``ping -D`` file): mean,
    median and 95th percentile of the replies' times; loss :func:`ping_loss_pct`; jitter :func:`ping_jitter_ms`."""
    log = log if isinstance(log, PingLog) else ping_replies(log)
    r = log.rtt_ms
    return {"ping_rtt_mean_ms": float(r.mean()) if r.size else NAN,
            "ping_rtt_median_ms": float(np.median(r)) if r.size else NAN,
            "ping_rtt_p95_ms": float(np.percentile(r, 95)) if r.size else NAN,
            "ping_loss_pct": ping_loss_pct(log),
            "ping_jitter_ms": ping_jitter_ms(r)}


def _answerable(log: PingLog, seqs: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The requests among ``seqs`` (send times ``t``) that had time to be answered before ping stopped: sent no later
    than the last reply's arrival minus the largest RTT seen. ``ping -w`` stops at its deadline with requests still
    in flight, which its summary counts as lost (with a 1-s queue, the last second's echoes)."""
    return seqs[t <= log.ts_s.max() - log.rtt_ms.max() / 1e3]


def ping_loss_pct(log: PingLog) -> float:
    """Echo requests never answered, % of those that had time to be answered (:func:`_answerable`; send times
    :func:`ping_send_times`). With fewer than two replies no send time can be placed: 100 (1 − received /
    transmitted) from ping's summary line (NaN without one)."""
    seqs, t = ping_send_times(log)
    if not seqs.size:
        return 100.0 * (1 - (log.received or 0) / log.transmitted) if log.transmitted else NAN
    sent = _answerable(log, seqs, t)
    return 100.0 * np.setdiff1d(sent, log.seq).size / sent.size if sent.size else NAN


def ping_send_times(log: PingLog) -> tuple[np.ndarray, np.ndarray]:
    """(icmp_seq 1..transmitted, estimated send time of each request, epoch s). A reply's request left at its arrival
    minus its RTT; an unanswered request's time is interpolated between the answered ones around it by sequence
    number, and beyond them extrapolated at the median spacing (ping sends on a fixed interval, ``-i``). Without a
    summary line the requests are 1..the highest answered; without two replies, nothing can be placed (empty)."""
    if log.seq.size < 2:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    sent = log.ts_s - log.rtt_ms / 1e3
    last = max(int(log.transmitted or 0), int(log.seq[-1]))
    seqs = np.arange(1, last + 1, dtype=np.int64)
    step = float(np.median(np.diff(sent) / np.diff(log.seq)))
    t = np.interp(seqs, log.seq, sent)
    lo, hi = seqs < log.seq[0], seqs > log.seq[-1]
    t[lo] = sent[0] - (log.seq[0] - seqs[lo]) * step
    t[hi] = sent[-1] + (seqs[hi] - log.seq[-1]) * step
    return seqs, t


def ping_window_stats(log: PingLog, t0: float, t1: float) -> dict:
    """Ping during [t0, t1] (epoch s, e.g. the UDP flood): flood_ping_rtt_mean_ms and flood_ping_jitter_ms over the
    replies that arrived in it (ms; jitter :func:`ping_jitter_ms`), flood_ping_loss_pct = unanswered requests among
    those sent in it that had time to be answered (send times :func:`ping_send_times`; :func:`_answerable`), %."""
    sel = (log.ts_s >= t0) & (log.ts_s <= t1)
    r = log.rtt_ms[sel]
    seqs, ts = ping_send_times(log)
    inside = (ts >= t0) & (ts <= t1)
    sent = _answerable(log, seqs[inside], ts[inside]) if seqs.size else seqs
    lost = np.setdiff1d(sent, log.seq).size
    return {"flood_ping_rtt_mean_ms": float(r.mean()) if r.size else NAN,
            "flood_ping_jitter_ms": ping_jitter_ms(r),
            "flood_ping_loss_pct": 100.0 * lost / sent.size if sent.size else NAN}


def ping_columns(log: PingLog, flood_window: tuple[float, float] | None) -> dict:
    """The row's ping columns of one path: :func:`ping_stats`, and :func:`ping_window_stats` over ``flood_window``
    (epoch s) when the run had a flood."""
    vals = ping_stats(log)
    if flood_window is not None:
        vals.update(ping_window_stats(log, *flood_window))
    return vals


def flood_window_from_meta(meta: dict) -> tuple[float, float] | None:
    """The UDP flood's observed window (epoch s: its first to last datagram at the client, meta.json flood.observed),
    None when meta.json does not record one."""
    fl = meta.get("flood") if isinstance(meta, dict) else None
    obs = (fl.get("observed") or {}) if isinstance(fl, dict) else {}
    a, b = _num(obs.get("first_pkt_epoch")), _num(obs.get("last_pkt_epoch"))
    return (a, b) if np.isfinite(a) and np.isfinite(b) and b > a else None


def fill_without_captures(rows: pd.DataFrame, read_file, meta: dict) -> pd.DataFrame:
    """``rows`` of one run whose captures are gone (a bundle ships few), recorded under an older ``DERIVED_VERSION``,
    with the columns that need only the run's ping output recomputed (:data:`PING_COLUMNS`, and
    :data:`FLOOD_PING_COLUMNS` over the flood's observed window; NaN when meta.json has none). ``read_file(rel)``:
    the content (bytes, plain) of the run's file ``rel`` or None."""
    rows = rows.copy()
    for c in PING_COLUMNS + FLOOD_PING_COLUMNS:
        if c not in rows:
            rows[c] = NAN
    rows["ping_interval_s"] = _num(((meta.get("params") if isinstance(meta, dict) else None) or {})
                                   .get("ping_interval_s"))
    flood = np.isfinite(pd.to_numeric(rows["udp_flood_mbps"], errors="coerce")).any()
    window = flood_window_from_meta(meta) if flood else None
    for i, k in zip(rows.index, rows["path"]):
        text = read_file(f"ping/path{int(k)}.txt")
        if text is not None:
            for c, v in ping_columns(parse_ping(text), window).items():
                rows.at[i, c] = v
    return rows


# ------------------------------------------------------------------------------------------------ captures

def _data_subflow(flows):
    """The TCP connection to the data port with the most payload bytes in one path's capture (iperf3's control
    connection uses the same port and carries a few hundred bytes), or None."""
    from analysis.ingest.schema import TCP
    cands = [f for f in flows if f.proto == TCP and DATA_PORT in (int(f.sport), int(f.dport))
             and int(f.data["payload_len"].sum()) > 0]
    return max(cands, key=lambda f: int(f.data["payload_len"].sum())) if cands else None


def _same_direction(df: pd.DataFrame, f) -> pd.DataFrame:
    """Packets of ``df`` in flow ``f``'s data direction (same addresses and ports)."""
    m = ((df["sport"].to_numpy() == f.sport) & (df["dport"].to_numpy() == f.dport)
         & (df["src"].to_numpy() == f.src) & (df["dst"].to_numpy() == f.dst))
    return df[m]


def matched_transmissions(sent: pd.DataFrame, received: pd.DataFrame) -> pd.DataFrame:
    """Each data segment a sender capture holds, with its arrival in a receiver capture on the same clock.

    ``sent`` / ``received``: per-packet rows (``analysis.ingest`` schema) of one subflow's data direction. A
    transmission is identified by (seq, ip_id, payload_len): Linux gives every IPv4 packet of a socket its own ID, a
    retransmission included; keys seen more than once (IPv4 ID wrap) count once, the first copy. Returns columns
    ts_tx, ts_rx (s; NaN when the receiver never saw it), one row per distinct sent segment in sending order."""
    key = ["seq", "ip_id", "payload_len"]
    s = sent.loc[sent["payload_len"] > 0, key + ["ts"]].drop_duplicates(key, keep="first")
    r = received.loc[received["payload_len"] > 0, key + ["ts"]].drop_duplicates(key, keep="first")
    m = s.merge(r, on=key, how="left", suffixes=("_tx", "_rx"))
    return m[["ts_tx", "ts_rx"]].reset_index(drop=True)


def one_way_delays(sent: pd.DataFrame, received: pd.DataFrame) -> tuple[np.ndarray, int, int]:
    """(one-way delays of the received transmissions in the receiver's arrival order, ms; segments sent; segments
    sent that the receiver never saw) — :func:`matched_transmissions`."""
    return _delays_of(matched_transmissions(sent, received))


def _delays_of(m: pd.DataFrame) -> tuple[np.ndarray, int, int]:
    """(delays in arrival order, ms; sent; lost) of :func:`matched_transmissions` rows."""
    got = m.dropna(subset=["ts_rx"]).sort_values("ts_rx", kind="stable")
    owd = (got["ts_rx"].to_numpy() - got["ts_tx"].to_numpy()) * 1e3
    return owd, len(m), int(m["ts_rx"].isna().sum())


def window_delay_stats(m: pd.DataFrame, t0: float, t1: float) -> dict:
    """One-way delay (mean, ms), study 003's jitter (ms) and loss (%) of the transmissions sent in [t0, t1]
    (``matched_transmissions`` rows)."""
    from analysis.metrics.jitter import mean_abs_delay_variation

    w = m[(m["ts_tx"] >= t0) & (m["ts_tx"] <= t1)]
    got = w.dropna(subset=["ts_rx"]).sort_values("ts_rx", kind="stable")
    owd = (got["ts_rx"].to_numpy() - got["ts_tx"].to_numpy()) * 1e3
    return {"owd_mean_ms": float(owd.mean()) if owd.size else NAN,
            "jitter_ms": mean_abs_delay_variation(owd) if owd.size >= 2 else NAN,
            "loss_pct": 100.0 * float(w["ts_rx"].isna().mean()) if len(w) else NAN}


def _retransmissions(data: pd.DataFrame) -> int:
    """Data segments whose sequence range starts below the highest sequence sent before them (packets)."""
    if "seq_un" not in data or not len(data):
        return 0
    s, e = data["seq_un"].to_numpy(), data["end_un"].to_numpy()
    front = np.maximum.accumulate(np.concatenate(([s[0]], e)))[:-1]
    return int(((s < front) & (e > s)).sum())


def _path_metrics(client: pd.DataFrame, server: pd.DataFrame, where: str) -> dict:
    """Capture metrics of one path: the data subflow at the server and its matched client transmissions."""
    from analysis.flows import split_flows
    from analysis.metrics.jitter import mean_abs_delay_variation
    from analysis.metrics.loss import loss_pct
    from analysis.metrics.reordering import tcp_reordering
    from analysis.errors import NoTrafficError

    f_srv = _data_subflow(split_flows(server))
    if f_srv is None:
        return {"_data": None}
    f_cli = _data_subflow(split_flows(client))
    out = {"_data": f_srv.data, "_key": (f_srv.src, f_srv.sport, f_srv.dst, f_srv.dport)}
    if f_cli is None:
        raise AnalysisError(f"{where}: the server capture has a data connection the client capture lacks")
    sent = _same_direction(client, f_srv)
    recv = _same_direction(server, f_srv)
    m = out["_matched"] = matched_transmissions(sent, recv)
    owd, n_sent, n_lost = _delays_of(m)
    out.update({
        "data_pkts": int((sent["payload_len"] > 0).sum()), "data_bytes": int(sent["payload_len"].sum()),
        "retransmissions": _retransmissions(f_cli.data) if f_cli.src == f_srv.src else NAN,
        "owd_mean_ms": float(owd.mean()) if owd.size else NAN,
        "owd_median_ms": float(np.median(owd)) if owd.size else NAN,
        "owd_p95_ms": float(np.percentile(owd, 95)) if owd.size else NAN,
        "jitter_ms": mean_abs_delay_variation(owd) if owd.size >= 2 else NAN,
        "loss_pct": loss_pct(n_sent, n_sent - n_lost) if n_sent else NAN,
    })
    try:
        ro = tcp_reordering(recv, sent)
        out["reorder_ratio"] = float(ro["reordered_ratio"])
        out["reorder_extent_max"] = float(ro["extent_max"])
    except (NoTrafficError, KeyError):
        out["reorder_ratio"] = out["reorder_extent_max"] = NAN
    return out


def _min_interval_mbps(run_dir: Path) -> float:
    """:func:`min_interval_mbps` of the run's iperf3 server JSON."""
    return min_interval_mbps(runmeta._read_json(run_dir / "iperf3" / "flow1-server.json") or {})


def min_interval_mbps(js: dict) -> float:
    """The smallest per-interval goodput in iperf3's receiver report ``js`` (the server's JSON: intervals[].sum),
    Mbit/s; the last interval is left out when it is shorter than half the others (iperf3's partial tail)."""
    iv = [i.get("sum") or {} for i in (js or {}).get("intervals") or [] if isinstance(i, dict)]
    secs = np.array([_num(x.get("seconds")) for x in iv])
    bps = np.array([_num(x.get("bits_per_second")) for x in iv])
    ok = np.isfinite(secs) & np.isfinite(bps)
    if ok.sum() >= 2 and secs[ok][-1] < 0.5 * np.median(secs[ok]):
        ok[np.flatnonzero(ok)[-1]] = False
    return float(bps[ok].min() / 1e6) if ok.any() else NAN


def _subflow_kinds(run_dir: Path) -> dict:
    """{(src, sport, dst, dport): "initial" | "join"} of the MPTCP subflows in the client captures."""
    from analysis.ingest.mptcp_options import read_handshake_options, subflows

    opts = [read_handshake_options(p) for k in PATHS
            if (p := runmeta.capture_path(run_dir, f"client-path{k}.pcap")) is not None]
    if not opts:
        return {}
    # the initial subflow's MP_CAPABLE is in one path's capture and the MP_JOIN in the other's: one table, in time
    # order (one clock), numbered afresh so that subflows() sees the handshakes in the order they happened
    o = pd.concat(opts, ignore_index=True).sort_values("ts", kind="stable")
    o["pkt_no"] = np.arange(1, len(o) + 1, dtype=np.int64)
    return {(r.client, int(r.client_port), r.server, int(r.server_port)): r.kind
            for r in subflows(o).itertuples(index=False)}


# ------------------------------------------------------------------------------------------------ one run

def analyze_run(run_dir, *, buffers: dict | None = None) -> pd.DataFrame:
    """Rows (one per path, :data:`COLUMNS`) of one complete dual-path run. Raises AnalysisError when a capture is
    missing or no path carried the data connection. ``buffers``: captures already read, consumed as decoded."""
    from analysis.metrics.throughput import delivered_goodput_mbps as goodput_mbps

    buffers = {} if buffers is None else buffers
    run_dir = Path(run_dir)
    p = runmeta.read_params(run_dir)
    meta = runmeta.read_meta(run_dir)
    sc = meta.get("self_check") if isinstance(meta.get("self_check"), dict) else None
    hl = meta.get("host_load") if isinstance(meta.get("host_load"), dict) else {}
    topo = (meta.get("topology") or {}).get("paths") or {}
    base = {
        "run_id": run_dir.name, "campaign": p.get("campaign"), "family": str(p.get("family") or meta.get("family")),
        "experiment": p.get("experiment"), "mode": p.get("mode"), "transport": p.get("transport"),
        "tcp_path": _num(p.get("tcp_path")), "cc": p.get("cc"), "mptcp_scheduler": p.get("mptcp_scheduler"),
        "buffer_bytes": _num(p.get("buffer_bytes")), "queue_pkts": _num(p.get("queue_pkts")),
        "duration_s": _num(p.get("duration_s")), "udp_flood_mbps": _num(p.get("udp_flood_mbps")),
        "udp_flood_start_s": _num(p.get("udp_flood_start_s")), "udp_flood_end_s": _num(p.get("udp_flood_end_s")),
        "rep": int(p["rep"]) if p.get("rep") is not None else -1,
        "backend": p.get("backend") or meta.get("backend"), "kernel": meta.get("kernel"),
        "queue_mechanism": meta.get("queue_mechanism"), "delay_mechanism": meta.get("delay_mechanism"),
        "self_check_ok": bool(sc["ok"]) if sc is not None and sc.get("ok") is not None else None,
        "host_cpu_pressure_pct": _num(hl.get("cpu_pressure_some_pct")),
        "ping_interval_s": _num(p.get("ping_interval_s")),
    }
    ip = runmeta.iperf3_summary(run_dir, 1, "tcp")
    base["throughput_mbps"] = ip["goodput_mbps"]
    per = {}
    for k in PATHS:
        paths = {side: runmeta.capture_path(run_dir, f"{side}-path{k}.pcap") for side in ("client", "server")}
        for side, cp in paths.items():
            if cp is None:
                raise AnalysisError(f"{run_dir.name}: missing capture {side}-path{k}.pcap")
        if p.get("transport") == "tcp" and _num(p.get("tcp_path")) != k:
            per[k] = {"_data": None}     # single-path TCP: the other path carries no data (at most iperf3's control)
            continue
        caps = {side: runmeta.read_capture(cp, buffers.pop(cp, None)) for side, cp in paths.items()}
        per[k] = _path_metrics(caps["client"], caps["server"], f"{run_dir.name} path {k}")
    datas = [m["_data"] for m in per.values() if m["_data"] is not None and (m["_data"]["payload_len"] > 0).any()]
    if not datas:
        raise AnalysisError(f"{run_dir.name}: no path carried the data connection (port {DATA_PORT})")
    t0 = min(float(d.loc[d["payload_len"] > 0, "ts"].min()) for d in datas)
    t1 = max(float(d.loc[d["payload_len"] > 0, "ts"].max()) for d in datas)
    path_gp = {k: (goodput_mbps(m["_data"], t0, t1) if m["_data"] is not None else 0.0) for k, m in per.items()}
    conn = float(sum(path_gp.values())) if t1 > t0 else NAN
    kinds = _subflow_kinds(run_dir) if p.get("transport") == "mptcp" else {}
    flood = {"flood_goodput_mbps": NAN, "pre_flood_goodput_mbps": NAN, "flood_loss_pct": NAN}
    flood_window = None
    fs, fe = base["udp_flood_start_s"], base["udp_flood_end_s"]
    if np.isfinite(fs) and np.isfinite(fe):
        def window(a, b):
            return float(sum(goodput_mbps(m["_data"], a, b) for m in per.values() if m["_data"] is not None))
        obs = ((meta.get("flood") or {}).get("observed") or {}) if isinstance(meta.get("flood"), dict) else {}
        # no observed flood packets: the scheduled window
        a, b = flood_window = flood_window_from_meta(meta) or (t0 + fs, t0 + fe)
        flood["flood_goodput_mbps"] = window(a, b)
        flood["pre_flood_goodput_mbps"] = window(t0, a) if a > t0 else NAN
        tx, rx = _num(obs.get("client_pkts")), _num(obs.get("server_pkts"))
        if np.isfinite(tx) and np.isfinite(rx) and tx > 0 and rx <= tx:
            flood["flood_loss_pct"] = 100.0 * (tx - rx) / tx
    owds = [((mm["ts_rx"] - mm["ts_tx"]) * 1e3).dropna().to_numpy() for m in per.values()
            if (mm := m.get("_matched")) is not None]
    allo = np.concatenate(owds) if owds else np.zeros(0)
    base["conn_owd_mean_ms"] = float(allo.mean()) if allo.size else NAN
    base["min_interval_mbps"] = _min_interval_mbps(run_dir)
    pings = {}
    for k in PATHS:
        pf = run_dir / "ping" / f"path{k}.txt"
        pf = pf if pf.is_file() else pf.with_name(pf.name + ".xz")
        if pf.is_file():
            pings[k] = ping_replies(pf)
    rows = []
    for k, m in per.items():
        t = topo.get(str(k)) or {}
        if flood_window is not None:
            if m.get("_matched") is not None:
                w = window_delay_stats(m["_matched"], *flood_window)
                m.update({"flood_owd_mean_ms": w["owd_mean_ms"], "flood_jitter_ms": w["jitter_ms"],
                          "flood_path_loss_pct": w["loss_pct"]})
        row = dict.fromkeys(COLUMNS, NAN)
        row.update(base)
        row.update(flood)
        row.update({key: v for key, v in m.items() if not key.startswith("_")})
        if k in pings:
            row.update(ping_columns(pings[k], flood_window))
        kind = None
        if m["_data"] is not None:
            kind = "tcp" if p.get("transport") != "mptcp" else kinds.get(m["_key"], "unknown")
        row.update({
            "path": k, "path_label": t.get("label"),
            "path_rate_mbit": _num(p.get(f"path{k}_rate_mbit")), "path_delay_ms": _num(p.get(f"path{k}_delay_ms")),
            "path_buffer_bytes": _num(p.get(f"path{k}_buffer_bytes")),
            "path_buffer_pkts": _num(p.get(f"path{k}_buffer_pkts")),
            "conn_goodput_mbps": conn, "path_goodput_mbps": path_gp[k],
            "path_share": path_gp[k] / conn if conn and np.isfinite(conn) else NAN, "subflow_kind": kind,
        })
        if m["_data"] is None:
            row.update({"data_pkts": 0, "data_bytes": 0, "retransmissions": 0})
        rows.append(row)
    return typed(pd.DataFrame(rows, columns=COLUMNS))
