"""Per-run metrics of study 002 (PCC Vivace vs CUBIC video streaming to three clients under UDP background traffic;
docs/families.md "Study 002").

Run directory (``capture_tools/run_streaming.sh``): ``server.pcap`` (the server's interface: the three streams),
``clientK.pcap`` (client K's interface), K = 1, 2, 3, all on one host clock; client K's stream is the TCP connection to
the server's port 8000+K (data server -> client); ``tg.pcap`` / ``sink.pcap`` (UDP only: the background at the traffic
generator and at the sink); ``video/clientK.progress`` (``# ts=<epoch s> bytes=<n>`` every 0.1 s: the size of the file
curl is receiving), ``video/clientK.json`` (curl's ``-w`` line); ``meta.json``, ``params.json``.

The paper (its Table 3) defines throughput (kbit/s) as the data sent and received over time, delay (ms) as the time the
data takes from source to destination and packet loss (%) as the packets lost of those sent, all read from Wireshark
captures; how each is computed from the capture is not printed (data/reference/002/README.md). Here, one row per
(run, client) — columns :data:`COLUMNS`:

* parameters: run_id, campaign, family, experiment (test1..test5), cc (the congestion control of this client's
  stream: meta.json ``streams[].cc``, else the run's), cc_pair (the run's ``a+b`` when two ccs streamed at once, one
  client each, the paper's test 5; None otherwise), background_mbps (configured UDP background,
  Mbit/s), background_tool (d-itg | iperf3), video_kbps (the video's nominal CBR bitrate, kbit/s), shared_link_mbit
  (the shared link's rate, Mbit/s), duration_s (s), rep, backend, kernel, host_cpu_pressure_pct (%), self_check_ok,
  client (K; the clients that streamed: meta.json ``streams``, else 1-3).
* throughput_kbps: TCP payload arriving at the client capture for the first time (a retransmission filling a hole
  counts, a duplicate does not: ``analysis.metrics.throughput.first_delivery_bytes``) x 8 over the stream's first to
  last data packet there, kbit/s (1 kbit = 1000 bit); received_payload_bytes: that payload, bytes.
* delay_mean_ms, delay_median_ms, delay_p95_ms: one-way delay server -> client of the stream's data packets: client
  capture time minus server capture time of the same transmission (matched on TCP seq, IPv4 ID and payload length by
  ``analysis.families.dualpath.one_way_delays``), over every transmission the client saw, ms.
* sent_pkts: distinct data transmissions in the server capture (retransmissions included), packets; loss_pct: of
  those, the ones the client capture never saw (drops in the shared link's queue), %; retransmissions: data packets at
  the server whose sequence range starts below the highest sequence sent before them, packets. (These three and the
  delays are ``analysis.families.chain.flow_capture_metrics`` with the server as sender, the client as receiver.)
* playback_kbps: the rate the simulated player consumes the received bytes at, kbit/s: meta.json's measured bitrate
  of the video file (``video.measured_kbps``, or the parameter ``video_measured_kbps``) when recorded, else
  video_kbps.
* startup_delay_s, stall_count, stall_time_s: a player fed by ``video/clientK.progress`` (``analysis.metrics.playback``:
  starts after :data:`INITIAL_BUFFER_S` = 2 s of video, plays in real time, stalls on an empty buffer while more of
  the stream is to come, resumes after 2 s of video are buffered again); the request time (startup delay's origin)
  is the client's first packet of its stream in ``clientK.pcap`` (its SYN). NaN without a progress file.
* run-level, repeated on every client row of the run: background_sent_mbps (IP bytes — IPv4 total length — of the
  background's UDP datagrams in ``tg.pcap`` x 8 over their first to last datagram, Mbit/s), background_received_mbps
  (the same datagrams in ``sink.pcap``, over their own first to last), background_loss_pct (100 · (sent − received) /
  sent, datagram counts; NaN when the sink saw more than the generator's capture, i.e. a capture drop); the
  background is the UDP traffic from the address sending the most UDP bytes in ``tg.pcap`` to its main destination;
  NaN without background datagrams (test 1). jain_index: Jain's index J = (Σx)² / (n·Σx²) of the clients'
  throughput_kbps (n = the number of clients that streamed; a client without a value counts as 0;
  ``analysis.metrics.fairness``).
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import runmeta
from analysis.errors import AnalysisError
from analysis.families.columns import number as _num, typed_columns
from analysis.metrics.playback import INITIAL_BUFFER_S

DERIVED_VERSION = 1   # of these rows' definition (the derived cache is rebuilt when it changes)
CLIENTS = (1, 2, 3)
BASE_PORT = 8000      # client K's stream: TCP to the server's port 8000 + K
CAPTURES = ("server.pcap",) + tuple(f"client{k}.pcap" for k in CLIENTS) + ("tg.pcap", "sink.pcap")
NAN = float("nan")

PARAM_COLUMNS = [
    "run_id", "campaign", "family", "experiment", "cc", "cc_pair", "background_mbps", "background_tool", "video_kbps",
    "shared_link_mbit", "duration_s", "rep", "backend", "kernel", "host_cpu_pressure_pct", "self_check_ok", "client",
]
METRIC_COLUMNS = [
    "throughput_kbps", "received_payload_bytes", "delay_mean_ms", "delay_median_ms", "delay_p95_ms", "sent_pkts",
    "loss_pct", "retransmissions", "playback_kbps", "startup_delay_s", "stall_count", "stall_time_s",
    "background_sent_mbps", "background_received_mbps", "background_loss_pct", "jain_index",
]
COLUMNS = PARAM_COLUMNS + METRIC_COLUMNS
TEXT_COLS = ["run_id", "campaign", "family", "experiment", "cc", "cc_pair", "background_tool", "backend", "kernel"]
INT_COLS = ["client", "rep"]
FLOAT_COLS = [c for c in COLUMNS if c not in TEXT_COLS + INT_COLS + ["self_check_ok"]]
SORT = ["run_id", "client"]
RUNS_COLUMNS = ["run_id", "status", "reason", "experiment", "cc", "background_mbps", "video_kbps", "duration_s",
                "rep"]


def typed(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with the dtypes of :data:`COLUMNS` (float for numbers, int client/rep, None for missing text)."""
    return typed_columns(df, FLOAT_COLS, INT_COLS, TEXT_COLS + ["self_check_ok"])


def input_files(run_dir: Path) -> dict[str, Path]:
    """{logical name: file} of a study-002 run's inputs (captures and progress files under their plain names, also
    when compressed)."""
    run_dir = Path(run_dir)
    out = runmeta.run_files(run_dir, CAPTURES)
    for k in CLIENTS:
        p = runmeta.capture_path(run_dir, f"video/client{k}.progress")
        if p is not None:
            out[f"video/client{k}.progress"] = p
    return out


def has_raw(run_dir: Path) -> bool:
    return runmeta.capture_path(Path(run_dir), CAPTURES[0]) is not None


# ------------------------------------------------------------------------------------------------ progress

_PROGRESS = re.compile(rb"^#\s*ts=(?P<ts>[0-9]+(?:\.[0-9]*)?)\s+bytes=(?P<b>[0-9]+)\s*$")


def read_progress(path) -> tuple[np.ndarray, np.ndarray]:
    """(sample epoch times s, received bytes) of a ``video/clientK.progress`` file (plain or compressed): one
    ``# ts=<epoch s> bytes=<n>`` line per sample; blank lines are skipped, any other line is an AnalysisError."""
    from analysis.ingest.compressed import open_decompressed

    ts, nb = [], []
    with open_decompressed(path) as f:
        for i, line in enumerate(f.read().splitlines(), 1):
            if not line.strip():
                continue
            m = _PROGRESS.match(line.strip())
            if m is None:
                raise AnalysisError(f"{Path(path).name}:{i}: not a '# ts=<s> bytes=<n>' line")
            ts.append(float(m["ts"]))
            nb.append(int(m["b"]))
    return np.asarray(ts, dtype=float), np.asarray(nb, dtype=float)


def playback_rate_kbps(meta: dict, params: dict, video_kbps: float) -> float:
    """The rate the player consumes received bytes at, kbit/s: meta.json's measured bitrate of the video file
    (``video.measured_kbps``, else the parameter ``video_measured_kbps``), else the nominal ``video_kbps``."""
    v = meta.get("video") if isinstance(meta.get("video"), dict) else {}
    for x in (v.get("measured_kbps"), params.get("video_measured_kbps")):
        r = _num(x)
        if np.isfinite(r) and r > 0:
            return r
    return _num(video_kbps)


def client_playback(progress_path, rate_kbps: float, t_request: float | None) -> dict:
    """startup_delay_s, stall_count, stall_time_s of one client (``analysis.metrics.playback``, B0 = 2 s) from its
    progress samples (sorted, one per instant) and its request time ``t_request`` (epoch s; ignored, the first sample
    taken instead, when the samples show bytes before it); NaN without a progress file, samples or a playback rate."""
    from analysis.metrics.playback import playback_stalls

    nan = {"startup_delay_s": NAN, "stall_count": NAN, "stall_time_s": NAN}
    if progress_path is None or not np.isfinite(rate_kbps):
        return nan
    ts, nb = read_progress(progress_path)
    if ts.size == 0:
        return nan
    order = np.argsort(ts, kind="stable")
    ts, nb = ts[order], nb[order]
    last = np.r_[np.diff(ts) > 0, True]          # one sample per instant (the last written)
    ts, nb = ts[last], nb[last]
    if t_request is not None and t_request > ts[0] and np.any(nb[ts < t_request] > 0):
        t_request = None          # the sampler's clock disagrees with the capture's: fall back to the first sample
    return playback_stalls(ts, nb, rate_kbps, initial_buffer_s=INITIAL_BUFFER_S, t_request=t_request)


# ------------------------------------------------------------------------------------------------ background

def background_stats(tg: pd.DataFrame, sink: pd.DataFrame) -> dict:
    """background_sent_mbps, background_received_mbps (IP bytes x 8 over first..last datagram, Mbit/s) and
    background_loss_pct (% of the datagrams sent, by count) of the UDP background (per-packet tables of ``tg.pcap``
    and ``sink.pcap``): the datagrams from the address sending the most UDP bytes in ``tg`` to its main destination.
    NaN without such datagrams."""
    from analysis.ingest.schema import UDP

    out = {"background_sent_mbps": NAN, "background_received_mbps": NAN, "background_loss_pct": NAN}
    u = tg[tg["proto"] == UDP]
    if u.empty:
        return out
    by = u.groupby(["src", "dst"], sort=True)["ip_len"].sum()
    src, dst = by.idxmax()
    sent = u[(u["src"] == src) & (u["dst"] == dst)]
    recv = sink[(sink["proto"] == UDP) & (sink["src"] == src) & (sink["dst"] == dst)]

    def rate(d):
        if len(d) < 2:
            return NAN
        span = float(d["ts"].max() - d["ts"].min())
        return float(d["ip_len"].to_numpy(dtype=np.int64).sum()) * 8 / span / 1e6 if span > 0 else NAN

    out["background_sent_mbps"] = rate(sent)
    out["background_received_mbps"] = rate(recv) if len(recv) else 0.0
    if len(recv) <= len(sent):
        out["background_loss_pct"] = 100.0 * (len(sent) - len(recv)) / len(sent)
    return out


def jain_of_clients(values, n: int) -> float:
    """Jain's index of the clients' throughputs (any one unit) with ``n`` clients sharing the link (a client without a
    finite value counts as 0); NaN for fewer than two clients or when nothing was received."""
    from analysis.metrics.fairness import jain_index

    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if n < 2 or x.size == 0 or x.sum() <= 0:
        return NAN
    return jain_index(x, n=n)


# ------------------------------------------------------------------------------------------------ one run

def _base(run_dir: Path, p: dict, meta: dict) -> dict:
    sc = meta.get("self_check") if isinstance(meta.get("self_check"), dict) else None
    hl = meta.get("host_load") if isinstance(meta.get("host_load"), dict) else {}
    rep = _num(p.get("rep"))
    return {
        "run_id": run_dir.name, "campaign": p.get("campaign"), "family": str(p.get("family") or meta.get("family")),
        "experiment": p.get("experiment"), "cc": p.get("cc"),
        "cc_pair": p.get("cc") if "+" in str(p.get("cc") or "") else None,
        "background_mbps": _num(p.get("background_mbps")),
        "background_tool": p.get("background_tool") or meta.get("background_tool"),
        "video_kbps": _num(p.get("video_kbps")), "shared_link_mbit": _num(p.get("shared_link_mbit")),
        "duration_s": _num(p.get("duration_s")), "rep": int(rep) if np.isfinite(rep) else -1,
        "backend": p.get("backend") or meta.get("backend"), "kernel": meta.get("kernel"),
        "host_cpu_pressure_pct": _num(hl.get("cpu_pressure_some_pct")),
        "self_check_ok": bool(sc["ok"]) if sc is not None and sc.get("ok") is not None else None,
    }


def _on_port(df: pd.DataFrame, port: int) -> pd.DataFrame:
    m = (df["sport"].to_numpy() == port) | (df["dport"].to_numpy() == port)
    return df[m]


def _request_time(client: pd.DataFrame, port: int) -> float | None:
    """The client's first packet to ``port`` (its SYN) in its capture, epoch s; None without one."""
    d = client[client["dport"].to_numpy() == port]
    return float(d["ts"].min()) if len(d) else None


def analyze_run(run_dir, *, buffers: dict | None = None) -> pd.DataFrame:
    """Rows (one per client, :data:`COLUMNS`) of one complete study-002 run. Raises AnalysisError (one line) when a
    capture is missing or a client's stream is in neither capture. ``buffers``: captures already read, consumed as
    decoded."""
    from analysis.families.chain import flow_capture_metrics

    buffers = {} if buffers is None else buffers
    run_dir = Path(run_dir)
    p = runmeta.read_params(run_dir)
    meta = runmeta.read_meta(run_dir)
    base = _base(run_dir, p, meta)
    rate = playback_rate_kbps(meta, p, base["video_kbps"])

    def capture(name, required=True):
        cp = runmeta.capture_path(run_dir, name)
        if cp is None:
            if required:
                raise AnalysisError(f"{run_dir.name}: missing capture {name}")
            return None
        return runmeta.read_capture(cp, buffers.pop(cp, None))

    server = capture("server.pcap")
    streams = {int(st["stream"]): st for st in meta.get("streams") or []
               if isinstance(st, dict) and isinstance(st.get("stream"), int)}
    clients = sorted(streams) or list(CLIENTS)
    per = []
    for k in clients:
        port = BASE_PORT + k
        client = capture(f"client{k}.pcap")
        m = flow_capture_metrics(_on_port(server, port), _on_port(client, port), port, f"{run_dir.name} client {k}")
        m["throughput_kbps"] = m.pop("goodput_mbps") * 1000.0
        m["playback_kbps"] = rate
        prog = runmeta.capture_path(run_dir, f"video/client{k}.progress")
        m.update(client_playback(prog, rate, _request_time(client, port)))
        m["client"] = k
        m["cc"] = (streams.get(k) or {}).get("cc") or base["cc"]
        per.append(m)
    background_expected = np.isfinite(base["background_mbps"]) and base["background_mbps"] > 0
    tg, sink = capture("tg.pcap", background_expected), capture("sink.pcap", background_expected)
    bg = (background_stats(tg, sink) if tg is not None and sink is not None else
          {"background_sent_mbps": NAN, "background_received_mbps": NAN, "background_loss_pct": NAN})
    run = dict(bg, jain_index=jain_of_clients([m["throughput_kbps"] for m in per], len(clients)))
    rows = []
    for m in per:
        row = dict.fromkeys(COLUMNS, NAN)
        row.update(base)
        row.update({key: v for key, v in m.items() if key in COLUMNS})
        row.update(run)
        rows.append(row)
    return typed(pd.DataFrame(rows, columns=COLUMNS))
