"""Per-run metrics of study 004 (Westwood+ vs Westwood+e over chain topologies; docs/families.md "Study 004").

Run directory (``capture_tools/run_chain.sh``), per flow K (1, or 1 and 2 for ``bottleneck``): ``flowK-sender.pcap``
(the sender host's interface) and ``flowK-receiver.pcap`` (the receiver host's interface), one host clock; the data
connection is TCP to port 5200+K (meta.json ``flows[].port``); ``iperf3/flowK-{client,server}.json``;
``ss/flowK.txt`` (``ss -tin`` on the sender every 0.1 s, blocks headed ``# ts=<epoch s>``); ``meta.json``,
``params.json``.

One row per (run, flow) — columns :data:`COLUMNS`:

* parameters: run_id, campaign, family, experiment, topology, cc, error_rate (fraction of the flow's data packets the
  error link drops), bandwidth_mbit (multihop_uniform's link rate, Mbit/s; NaN elsewhere), duration_s (s), rep,
  backend, kernel, queue_mechanism, delay_mechanism, link_model (htb, or store-and-forward: testbed/chain.sh; htb
  for runs recorded before it existed), self_check_ok, host_cpu_pressure_pct (%), flow (K).
* received_bytes: IP bytes (IPv4 total length, headers included) of the data packets (TCP payload > 0) that reach the
  receiver capture carrying sequence space not seen there before — a retransmission filling a hole counts, a
  duplicate does not (``analysis.metrics.throughput.first_delivery_bytes`` > 0); each such packet counts whole, as
  ns-2's "received bytes" counts whole packets (the paper's Table 1 cells are multiples of its 592-byte packet).
  Bytes. received_payload_bytes: the TCP payload bytes arriving for the first time (sum of first_delivery_bytes),
  bytes; received_pkts: the packets counted in received_bytes.
* iperf3_received_bytes: iperf3's receiver count (server JSON ``end.sum_received.bytes``), bytes.
* goodput_mbps: received_payload_bytes x 8 over [first, last] data packet at the receiver, Mbit/s
  (``analysis.metrics.throughput.delivered_goodput_mbps``).
* delay_mean_ms, delay_median_ms, delay_p95_ms: end-to-end one-way delay of the data packets — receiver capture time
  minus sender capture time of the same transmission, matched on (TCP seq, IPv4 ID, payload length) by
  ``analysis.families.dualpath.one_way_delays`` — over every transmission the receiver saw (a duplicate included: it
  crossed the path), ms. The paper's "Average Delay end to end" (Tables 1-4) is the mean.
* sent_pkts: distinct data transmissions in the sender capture (retransmissions included), packets; loss_pct: of
  those, the ones the receiver capture never saw, % (error-model drops plus queue drops in the path;
  ``analysis.metrics.loss.loss_pct``); retransmissions: data packets at the sender whose sequence range starts below
  the highest sequence sent before them, packets.
* cwnd_max_pkts, cwnd_mean_pkts: the sender's cwnd (packets) in ``ss/flowK.txt``: ESTAB samples of the data
  connection (the socket to the flow's port that moved the most bytes) whose cc is the run's cc (iperf3 sets
  TCP_CONGESTION after connect: the first samples can show the default cc); maximum and **time average**
  (sample-and-hold over [first, last] kept sample, ``analysis.metrics.cwnd_stats``). NaN without such samples.
* run-level, repeated on every flow row of the run: total_received_bytes (sum of the flows' received_bytes, bytes);
  jain_index: Jain's index of the flows' received_bytes, J = (Σx)² / (n·Σx²) (Jain, Chiu & Hawe 1984, eq. 1;
  ``analysis.metrics.fairness``), dimensionless, NaN for a single-flow run; run_delay_mean_ms: mean one-way delay over
  every received data packet of all the run's flows, ms (a two-source run's "average delay").
* delay_from_dequeue_mean_ms: the paper's "Average Delay end to end" as ns-2 measures it (docs/ns2-004.md: the
  definition that gives the paper's Table 1 and Table 3 delays): from the moment the data packet leaves its first
  link's queue (ns-2's '-' event at the sender) to its arrival at the receiver. Ours: receiver capture time minus
  ``flowK-first-link.pcap`` time of the same transmission (``one_way_delays``), plus that link's one-way delay and
  the packet's transmission time on it (meta.json ``links``: ``delay_ms`` and ``tx_ms_a``, 0 on an htb link), which
  our link applies before its queue where ns-2 applies them after; ms, NaN without the capture.
  run_delay_from_dequeue_mean_ms: the same over every received data packet of the run's flows, ms.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from analysis import runmeta
from analysis.errors import AnalysisError
from analysis.families.columns import number as _num, typed_columns

DERIVED_VERSION = 1   # of these rows' definition (the derived cache is rebuilt when it changes)
FLOWS = (1, 2)
BASE_PORT = 5200      # flow K's data connection: TCP to port 5200 + K
CAPTURES = tuple(f"flow{k}-{side}.pcap" for k in FLOWS for side in ("receiver", "sender"))
# where the flow's packets leave its first link's queue (that link's interface towards the receiver): runs recorded
# from 2026-11-27 on; NaN delays from dequeue without it
FIRST_LINK = tuple(f"flow{k}-first-link.pcap" for k in FLOWS)
NAN = float("nan")

PARAM_COLUMNS = [
    "run_id", "campaign", "family", "experiment", "topology", "cc", "error_rate", "bandwidth_mbit", "duration_s",
    "rep", "backend", "kernel", "queue_mechanism", "delay_mechanism", "link_model", "self_check_ok",
    "host_cpu_pressure_pct", "flow",
]
METRIC_COLUMNS = [
    "received_bytes", "received_payload_bytes", "received_pkts", "iperf3_received_bytes", "goodput_mbps",
    "delay_mean_ms", "delay_median_ms", "delay_p95_ms", "sent_pkts", "loss_pct", "retransmissions",
    "cwnd_max_pkts", "cwnd_mean_pkts", "total_received_bytes", "jain_index", "run_delay_mean_ms",
    "delay_from_dequeue_mean_ms", "run_delay_from_dequeue_mean_ms",
]
COLUMNS = PARAM_COLUMNS + METRIC_COLUMNS
TEXT_COLS = ["run_id", "campaign", "family", "experiment", "topology", "cc", "backend", "kernel", "queue_mechanism",
             "delay_mechanism", "link_model"]
INT_COLS = ["flow", "rep"]
FLOAT_COLS = [c for c in COLUMNS if c not in TEXT_COLS + INT_COLS + ["self_check_ok"]]
SORT = ["run_id", "flow"]
RUNS_COLUMNS = ["run_id", "status", "reason", "experiment", "topology", "cc", "error_rate", "bandwidth_mbit",
                "duration_s", "link_model", "rep"]




def typed(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with the dtypes of :data:`COLUMNS` (float for numbers, int flow/rep, None for missing text)."""
    return typed_columns(df, FLOAT_COLS, INT_COLS, TEXT_COLS + ["self_check_ok"])


def _ss_file(run_dir: Path, k: int) -> Path | None:
    from analysis.figures.ss_samples import ss_path
    return ss_path(run_dir, k)


def input_files(run_dir: Path) -> dict[str, Path]:
    """{logical name: file} of a study-004 run's inputs (captures and ss samples under their plain names, also when
    compressed)."""
    run_dir = Path(run_dir)
    out = runmeta.run_files(run_dir, CAPTURES + FIRST_LINK)
    d = run_dir / "iperf3"
    if d.is_dir():
        for p in sorted(d.glob("*.json*")):
            out[f"iperf3/{p.name}"] = p
    for k in FLOWS:
        p = _ss_file(run_dir, k)
        if p is not None:
            out[f"ss/flow{k}.txt"] = p
    return out


def has_raw(run_dir: Path) -> bool:
    return runmeta.capture_path(Path(run_dir), CAPTURES[0]) is not None


# ------------------------------------------------------------------------------------------------ flows of a run

def flow_plan(run_dir: Path, meta: dict) -> list[dict]:
    """[{flow, port}] of the run: meta.json ``flows`` (flow number and port), else every flow K whose
    ``flowK-sender.pcap`` exists, on port 5200 + K."""
    out = []
    for f in meta.get("flows") or []:
        if isinstance(f, dict) and f.get("flow") is not None:
            k = int(f["flow"])
            out.append({"flow": k, "port": int(f.get("port") or BASE_PORT + k)})
    if not out:
        out = [{"flow": k, "port": BASE_PORT + k} for k in FLOWS
               if runmeta.capture_path(run_dir, f"flow{k}-sender.pcap") is not None]
    return sorted(out, key=lambda f: f["flow"])


def data_connection(flows, port: int):
    """The TCP connection to ``port`` with the most payload bytes among ``analysis.flows.split_flows`` flows (iperf3's
    control connection uses the same port and carries a few hundred bytes), or None."""
    from analysis.ingest.schema import TCP
    cands = [f for f in flows if f.proto == TCP and port in (int(f.sport), int(f.dport))
             and int(f.data["payload_len"].sum()) > 0]
    return max(cands, key=lambda f: int(f.data["payload_len"].sum())) if cands else None


# ------------------------------------------------------------------------------------------------ metrics

def received_bytes(recv_data: pd.DataFrame) -> dict:
    """What reached the receiver for the first time, from its capture's data direction (``split_flows`` data with
    ``seq_un``/``end_un``): received_bytes (IP total length of each data packet that delivers new sequence space,
    counted whole, bytes), received_payload_bytes (new sequence space, bytes), received_pkts (packets)."""
    from analysis.metrics.throughput import first_delivery_bytes

    d = recv_data[recv_data["payload_len"] > 0]
    if d.empty:
        return {"received_bytes": 0, "received_payload_bytes": 0, "received_pkts": 0}
    new = first_delivery_bytes(d)
    first = new > 0
    return {"received_bytes": int(d["ip_len"].to_numpy()[first].astype(np.int64).sum()),
            "received_payload_bytes": int(new.sum()), "received_pkts": int(first.sum())}


def delay_stats(owd_ms: np.ndarray) -> dict:
    """Mean, median and 95th percentile (numpy's linear interpolation) of one-way delays (ms); NaN when empty."""
    owd = np.asarray(owd_ms, dtype=float)
    if owd.size == 0:
        return {"delay_mean_ms": NAN, "delay_median_ms": NAN, "delay_p95_ms": NAN}
    return {"delay_mean_ms": float(owd.mean()), "delay_median_ms": float(np.median(owd)),
            "delay_p95_ms": float(np.percentile(owd, 95))}


def flow_capture_metrics(sender: pd.DataFrame, receiver: pd.DataFrame, port: int, where: str) -> dict:
    """Capture metrics of one flow from its sender and receiver captures (per-packet tables, ``analysis.ingest``
    schema, one clock). Key ``_owd`` holds the one-way delays (ms) for the run-level delay; ``_ref`` the data
    connection and ``_recv`` its packets in the receiver capture (:func:`delays_from_dequeue` reads them)."""
    from analysis.families.dualpath import _retransmissions, _same_direction, one_way_delays
    from analysis.flows import split_flows
    from analysis.metrics.loss import loss_pct
    from analysis.metrics.throughput import delivered_goodput_mbps

    f_rcv = data_connection(split_flows(receiver), port)
    f_snd = data_connection(split_flows(sender), port)
    if f_snd is None and f_rcv is None:
        raise AnalysisError(f"{where}: no data connection to port {port} in either capture")
    if f_snd is None:
        raise AnalysisError(f"{where}: the receiver capture has a data connection to port {port} the sender "
                            "capture lacks")
    ref = f_rcv if f_rcv is not None else f_snd
    sent = _same_direction(sender, ref)
    recv = _same_direction(receiver, ref) if f_rcv is not None else receiver.iloc[0:0]
    owd, n_sent, n_lost = one_way_delays(sent, recv)
    out = {"_owd": owd, "_ref": ref, "_recv": recv, "sent_pkts": n_sent,
           "loss_pct": loss_pct(n_sent, n_sent - n_lost) if n_sent else NAN,
           "retransmissions": _retransmissions(f_snd.data) if f_snd.src == ref.src else NAN}
    out.update(delay_stats(owd))
    if f_rcv is None:
        out.update({"received_bytes": 0, "received_payload_bytes": 0, "received_pkts": 0, "goodput_mbps": NAN})
    else:
        out.update(received_bytes(f_rcv.data))
        out["goodput_mbps"] = delivered_goodput_mbps(f_rcv.data)
    return out


def cwnd_samples(samples: pd.DataFrame, cc, port: int | None = None) -> pd.DataFrame:
    """The ``parse_ss`` rows whose cwnd describes the run's congestion control: ESTAB samples of the data connection
    (among sockets to ``port`` when any is, the one that moved the most bytes: ``ss_samples.data_connection``) whose
    cc is ``cc``."""
    from analysis.figures.ss_samples import data_connection as ss_data_connection

    s = samples[samples["state"] == "ESTAB"]
    if port is not None:
        to_port = s["peer"].astype(str).str.endswith(f":{port}")
        if to_port.any():
            s = s[to_port]
    d = ss_data_connection(s)
    return d[d["cc"] == cc] if len(d) else d


def ss_cwnd(path, cc, port: int | None = None) -> dict:
    """cwnd_max_pkts and cwnd_mean_pkts (time average) of an ``ss -tin`` sample file (``cwnd_samples``,
    ``analysis.metrics.cwnd_stats``); NaN without a file or a matching sample."""
    from analysis.figures.ss_samples import parse_ss
    from analysis.metrics.cwnd_stats import cwnd_stats

    if path is None:
        return {"cwnd_max_pkts": NAN, "cwnd_mean_pkts": NAN}
    d = cwnd_samples(parse_ss(Path(path)), cc, port)
    return cwnd_stats(d["ts"].to_numpy(dtype=float), d["cwnd_pkts"].to_numpy(dtype=float))


def iperf3_received_bytes(run_dir: Path, k: int) -> float:
    """iperf3's receiver byte count of flow K: server JSON ``end.sum_received.bytes`` (bytes), NaN without it."""
    js = runmeta._read_json(Path(run_dir) / "iperf3" / f"flow{k}-server.json") or {}
    s = (js.get("end") or {}).get("sum_received") if isinstance(js, dict) else None
    return _num(s.get("bytes")) if isinstance(s, dict) else NAN


def first_link_offset_ms(meta: dict, k: int) -> float:
    """The one-way delay plus the data packet's transmission time (ms) of flow ``k``'s first link (meta.json ``flows``
    path and ``links``; a link without ``tx_ms_a`` adds no transmission time). NaN when meta.json lacks them."""
    flow = next((f for f in meta.get("flows") or [] if isinstance(f, dict) and f.get("flow") == k), None)
    path = (flow or {}).get("path") or []
    link = next((x for x in meta.get("links") or [] if isinstance(x, dict) and path and x.get("name") == path[0]), None)
    if link is None:
        return NAN
    return _num(link.get("delay_ms")) + (_num(link.get("tx_ms_a")) if link.get("tx_ms_a") is not None else 0.0)


def delays_from_dequeue(link: pd.DataFrame, m: dict, offset_ms: float) -> np.ndarray:
    """One-way delays (ms) from the first link's queue (its capture ``link``) to the receiver, ``offset_ms`` added
    (``first_link_offset_ms``), of the data connection :func:`flow_capture_metrics` found (``m``'s ``_ref`` and its
    receiver packets ``_recv``); empty when the receiver saw none."""
    from analysis.families.dualpath import _same_direction, one_way_delays

    if not len(m["_recv"]) or not np.isfinite(offset_ms):
        return np.zeros(0)
    owd, _, _ = one_way_delays(_same_direction(link, m["_ref"]), m["_recv"])
    return owd + offset_ms


def _pooled_mean(arrays: list) -> float:
    """The mean of every value of ``arrays`` (ms arrays of the run's flows) together; NaN when there is none."""
    allv = np.concatenate([np.asarray(a, float) for a in arrays]) if arrays else np.zeros(0)
    return float(allv.mean()) if allv.size else NAN


def run_level(received: list, owds: list, deqs: list = ()) -> dict:
    """Run-level values from the flows' received_bytes (bytes) and one-way delays (ms arrays): total_received_bytes,
    jain_index (J = (Σx)²/(n·Σx²) over the flows; NaN for one flow or when nothing was received),
    run_delay_mean_ms (mean over all the flows' delays) and run_delay_from_dequeue_mean_ms (the same over ``deqs``,
    the flows' delays from their first link's queue)."""
    from analysis.metrics.fairness import jain_index

    x = np.asarray(received, dtype=float)
    j = NAN
    if x.size >= 2 and np.all(np.isfinite(x)) and x.sum() > 0:
        j = jain_index(x)
    return {"total_received_bytes": float(x.sum()) if x.size else NAN, "jain_index": j,
            "run_delay_mean_ms": _pooled_mean(list(owds)), "run_delay_from_dequeue_mean_ms": _pooled_mean(list(deqs))}


# ------------------------------------------------------------------------------------------------ one run

def _base(run_dir: Path, p: dict, meta: dict) -> dict:
    sc = meta.get("self_check") if isinstance(meta.get("self_check"), dict) else None
    hl = meta.get("host_load") if isinstance(meta.get("host_load"), dict) else {}
    rep = _num(p.get("rep"))
    return {
        "run_id": run_dir.name, "campaign": p.get("campaign"), "family": str(p.get("family") or meta.get("family")),
        "experiment": p.get("experiment"), "topology": p.get("topology") or p.get("experiment"), "cc": p.get("cc"),
        "error_rate": _num(p.get("error_rate")), "bandwidth_mbit": _num(p.get("bandwidth_mbit")),
        "duration_s": _num(p.get("duration_s")), "rep": int(rep) if np.isfinite(rep) else -1,
        "backend": p.get("backend") or meta.get("backend"), "kernel": meta.get("kernel"),
        "queue_mechanism": meta.get("queue_mechanism"), "delay_mechanism": meta.get("delay_mechanism"),
        "link_model": p.get("link_model") or meta.get("link_model") or "htb",
        "self_check_ok": bool(sc["ok"]) if sc is not None and sc.get("ok") is not None else None,
        "host_cpu_pressure_pct": _num(hl.get("cpu_pressure_some_pct")),
    }


def analyze_run(run_dir, *, buffers: dict | None = None) -> pd.DataFrame:
    """Rows (one per flow, :data:`COLUMNS`) of one complete study-004 run. Raises AnalysisError (one line) when a
    capture is missing or a flow has no data connection. ``buffers``: captures already read, consumed as decoded."""
    buffers = {} if buffers is None else buffers
    run_dir = Path(run_dir)
    p = runmeta.read_params(run_dir)
    meta = runmeta.read_meta(run_dir)
    base = _base(run_dir, p, meta)
    plan = flow_plan(run_dir, meta)
    if not plan:
        raise AnalysisError(f"{run_dir.name}: no flows (meta.json has no flows and there is no flow1-sender.pcap)")
    per = []
    for f in plan:
        k, port = f["flow"], f["port"]
        caps = {}
        for side in ("sender", "receiver"):
            cp = runmeta.capture_path(run_dir, f"flow{k}-{side}.pcap")
            if cp is None:
                raise AnalysisError(f"{run_dir.name}: missing capture flow{k}-{side}.pcap")
            caps[side] = runmeta.read_capture(cp, buffers.pop(cp, None))
        m = flow_capture_metrics(caps["sender"], caps["receiver"], port, f"{run_dir.name} flow {k}")
        lp = runmeta.capture_path(run_dir, f"flow{k}-first-link.pcap")
        deq = np.zeros(0)
        if lp is not None:
            deq = delays_from_dequeue(runmeta.read_capture(lp, buffers.pop(lp, None)), m,
                                      first_link_offset_ms(meta, k))
        m["_deq"] = deq
        m["delay_from_dequeue_mean_ms"] = float(deq.mean()) if deq.size else NAN
        m.update(ss_cwnd(_ss_file(run_dir, k), base["cc"], port))
        m["iperf3_received_bytes"] = iperf3_received_bytes(run_dir, k)
        m["flow"] = k
        per.append(m)
    run = run_level([m["received_bytes"] for m in per], [m["_owd"] for m in per], [m["_deq"] for m in per])
    rows = []
    for m in per:
        row = dict.fromkeys(COLUMNS, NAN)
        row.update(base)
        row.update({key: v for key, v in m.items() if not key.startswith("_")})
        row.update(run)
        rows.append(row)
    return typed(pd.DataFrame(rows, columns=COLUMNS))
