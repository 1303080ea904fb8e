"""Study 000's per-run analysis (Reno, BIC, CUBIC and BBR over two equal-cost paths with per-packet round-robin):
one row per (run, flow), the family module of study 000 behind ``analysis.families`` (as ``dualpath``, ``chain``
and ``streaming`` are for studies 001-004). ``analysis.dataset`` keeps the pipeline every family shares.

Per flow (flow 1: router1.pcap + receiver.pcap, port 5201; flow 2: router1-flow2.pcap + receiver-flow2.pcap,
port 5202). The flow's *data connection* is the TCP connection on its port with the most payload bytes (iperf3's
control connection uses the same hosts and port and is ignored); a UDP flow is the UDP direction to its port.

Columns and units
* parameters: run_id, campaign, experiment, cc (flow 1's cc), cc2, cc_pair ("cc+cc2" in campaign order), path_mode,
  link_delay_ms, loss_pct, cbr_mbps (Mbit/s), duration_s, flow2_offset_s, path_skew_ms, rep, backend, kernel,
  delay_mechanism, round_robin_mechanism; flow (1|2), flow_cc (this flow's cc or "udp"), proto ("tcp"|"udp").
* goodput_mbps: TCP: new-sequence payload bytes x 8 / (last - first data packet time) at router1, Mbit/s
  (``analysis.metrics.throughput``; the flow's own active window). UDP: iperf3 server receiver sum, Mbit/s.
* iperf3_goodput_mbps: iperf3 receiver sum (server JSON end.sum_received), Mbit/s.
* overlap_goodput_mbps, jain (two-flow runs only, else NaN): the *overlap window* is [t0, t1] with t0 = flow 2's
  first data packet and t1 = the earlier of the two flows' last data packets, both seen at router1. TCP: goodput
  over that window at router1; UDP: payload bytes that reached the receiver capture (receiver-flow2.pcap) in the
  window (the router1 side of a UDP flow shows what was sent, not what got through the 10 Mbit/s bottlenecks); in
  runs that set ``udp_len_bytes`` (datagrams that may be IP-fragmented) only the datagrams that arrived whole, their
  fragments reassembled per RFC 791 (``analysis.metrics.udp_datagrams``); data_pkts / data_bytes of such a UDP flow
  count first fragments (one per datagram sent) and UDP payload bytes.
  jain = Jain's index J = (x1 + x2)^2 / (2 (x1^2 + x2^2)) of the two overlap goodputs (Jain et al. 1984,
  ``analysis.metrics.fairness``), the same value on both rows.
* rtt_mean_ms, rtt_median_ms, rtt_p95_ms, rtt_samples: ACK-based RTT at router1 with Karn's rule, ms
  (``analysis.metrics.rtt.ack_rtt_ms``).
* data_pkts, data_bytes: data segments (payload > 0) and their payload bytes at router1, retransmissions included.
* sack_acks, sack_blocks, dsack_blocks (RFC 2018/2883), retransmissions, spurious_retransmissions (packets).
* reorder_ratio (RFC 4737 Type-P-Reordered-Ratio-Stream, fraction), reorder_extent_max (packets), reorder_n3
  (fraction of received packets that are 3-reordered, RFC 4737 sec. 5), rd_nonzero_frac (RFC 5236 Reorder
  Density with DT = 3: fraction of the arrivals RD keeps whose displacement D != 0, i.e. 1 - RD[0]); all at
  receiver.pcap, over segments router1 saw sent exactly once (``tcp_reordering`` "sender-filtered").
* udp_loss_pct (%), udp_jitter_ms (ms): iperf3 server; NaN for TCP. self_check_ok: meta.json "self_check".ok.
* host_cpu_pressure_pct (%): share of wall time some task on the recording host waited for a CPU while the flows
  ran (meta.json "host_load", Linux PSI); NaN for runs recorded before it was measured.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from analysis import runmeta
from analysis.errors import AnalysisError

DERIVED_VERSION = 2  # bump when the rows' definition changes: every cache is then rebuilt

COLUMNS = [
    "run_id", "campaign", "experiment", "cc", "cc2", "cc_pair", "path_mode", "link_delay_ms", "loss_pct",
    "cbr_mbps", "duration_s", "flow2_offset_s", "path_skew_ms", "rep", "backend", "kernel", "delay_mechanism",
    "round_robin_mechanism", "flow", "flow_cc", "proto", "goodput_mbps", "iperf3_goodput_mbps",
    "overlap_goodput_mbps", "jain", "rtt_mean_ms", "rtt_median_ms", "rtt_p95_ms", "rtt_samples", "data_pkts",
    "data_bytes", "sack_acks", "sack_blocks", "dsack_blocks", "retransmissions", "spurious_retransmissions",
    "reorder_ratio", "reorder_extent_max", "reorder_n3", "rd_nonzero_frac", "udp_loss_pct", "udp_jitter_ms",
    "self_check_ok", "host_cpu_pressure_pct",
]
FLOAT_COLS = ["link_delay_ms", "loss_pct", "cbr_mbps", "duration_s", "flow2_offset_s", "path_skew_ms",
              "goodput_mbps", "iperf3_goodput_mbps", "overlap_goodput_mbps", "jain", "rtt_mean_ms",
              "rtt_median_ms", "rtt_p95_ms", "reorder_ratio", "reorder_extent_max", "reorder_n3",
              "rd_nonzero_frac", "udp_loss_pct", "udp_jitter_ms", "host_cpu_pressure_pct", "data_pkts", "data_bytes", "sack_acks",
              "sack_blocks", "dsack_blocks", "retransmissions", "spurious_retransmissions", "rtt_samples"]
RUNS_COLUMNS = ["run_id", "status", "reason", "experiment", "cc", "cc2", "path_mode", "link_delay_ms", "loss_pct",
                "cbr_mbps", "path_skew_ms", "rep"]
NAN = float("nan")


# ------------------------------------------------------------------------------------------------ one run

def _pick_tcp(flows, port):
    from analysis.ingest.schema import TCP
    cands = [f for f in flows if f.proto == TCP and port in (int(f.sport), int(f.dport))]
    if not cands:
        return None
    return max(cands, key=lambda f: int(f.data["payload_len"].sum()))


def _pick_udp(flows, port):
    from analysis.ingest.schema import UDP
    cands = [f for f in flows if f.proto == UDP and int(f.dport) == port]
    if not cands:
        return None
    return max(cands, key=lambda f: int(f.data["payload_len"].sum()))


def _conn_rows(df, f, columns=None):
    """Packets of connection ``f`` (both directions) of a per-packet table (only ``columns``, if given). Compares the
    numeric ports first and the address strings only on those candidates (numpy ``==`` on object arrays)."""
    sp, dp, pr = df["sport"].to_numpy(), df["dport"].to_numpy(), df["proto"].to_numpy()
    fp = (sp == f.sport) & (dp == f.dport)
    rp = (sp == f.dport) & (dp == f.sport)
    c = np.flatnonzero((fp | rp) & (pr == f.proto))
    fwd = fp[c]
    # one pass per address column: each candidate is compared with the address its direction needs
    want_s = np.where(fwd, np.asarray(f.src, dtype=object), np.asarray(f.dst, dtype=object))
    want_d = np.where(fwd, np.asarray(f.dst, dtype=object), np.asarray(f.src, dtype=object))
    ok = (df["src"].to_numpy()[c] == want_s) & (df["dst"].to_numpy()[c] == want_d)
    keep = c[ok & (fwd | rp[c])]
    if columns is None:
        return df.iloc[keep]
    return df.iloc[keep, [df.columns.get_loc(x) for x in columns if x in df.columns]]  # gather only those columns


# the columns analysis.metrics.reordering.tcp_reordering reads
_REORDER_COLS = ["ts", "src", "dst", "sport", "dport", "proto", "seq", "payload_len"]


def _split_conn_rows(f) -> pd.DataFrame:
    """The packets of connection ``f`` (both directions, the columns tcp_reordering reads) from the Flow that
    ``split_flows`` already made of the capture: the same rows ``_conn_rows(capture, f)`` selects, without scanning
    the capture again (tcp_reordering orders them by ts itself)."""
    return pd.concat([f.data[_REORDER_COLS], f.ack[_REORDER_COLS]], ignore_index=True)


def _tcp_metrics(router1, receiver, flow, port, where) -> dict:
    from analysis.errors import NoTrafficError
    from analysis.flows import split_flows
    from analysis.metrics import rtt, sack
    from analysis.metrics.reordering import tcp_reordering
    from analysis.metrics.retransmissions import retransmissions, spurious_retransmissions
    from analysis.metrics.throughput import goodput_mbps

    f = _pick_tcp(split_flows(router1), port)
    if f is None:
        raise AnalysisError(f"{where}: no TCP connection on port {port} in the router1 capture")
    d = f.data
    dd = d[d["payload_len"] > 0]
    if dd.empty:
        raise AnalysisError(f"{where}: the TCP connection on port {port} carries no data")
    t_first, t_last = float(dd["ts"].min()), float(dd["ts"].max())
    samples = rtt.ack_rtt_ms(d, f.ack)
    rs = rtt.summary_ms(samples)
    m = {
        "_flow": f, "_t_first": t_first, "_t_last": t_last,
        "goodput_mbps": goodput_mbps(d, t_first, t_last),
        "rtt_mean_ms": rs["mean"], "rtt_median_ms": rs["median"], "rtt_p95_ms": rs["p95"], "rtt_samples": rs["n"],
        "data_pkts": int(len(dd)), "data_bytes": int(dd["payload_len"].sum()),
        "sack_acks": sack.sack_acks(f.ack), "sack_blocks": sack.sack_blocks(f.ack),
        "dsack_blocks": sack.dsack_blocks(f.ack),
        "retransmissions": retransmissions(d), "spurious_retransmissions": spurious_retransmissions(d, f.ack),
        "reorder_ratio": NAN, "reorder_extent_max": NAN, "reorder_n3": NAN, "rd_nonzero_frac": NAN,
    }
    if receiver is not None:
        try:
            r = tcp_reordering(_conn_rows(receiver, f, _REORDER_COLS), sender_df=_split_conn_rows(f))
        except NoTrafficError:
            r = None
        if r is not None:
            m.update({"reorder_ratio": float(r["reordered_ratio"]), "reorder_extent_max": float(r["extent_max"]),
                      "reorder_n3": float(r["n3_ratio"]),
                      "rd_nonzero_frac": (1.0 - float(r["rd"].get(0, 0.0))) if r["rd"] else NAN})
    return m


def _udp_metrics(router1, port, where) -> dict:
    from analysis.flows import split_flows
    f = _pick_udp(split_flows(router1), port)
    if f is None:
        raise AnalysisError(f"{where}: no UDP flow to port {port} in the router1 capture")
    d = f.data
    return {"_flow": f, "_t_first": float(d["ts"].min()), "_t_last": float(d["ts"].max()),
            "data_pkts": int(len(d)), "data_bytes": int(d["payload_len"].sum())}


def _udp_delivered_mbps(receiver, f, t0, t1, receiver_path=None) -> float:
    """UDP goodput (Mbit/s) of flow ``f`` at the receiver over [t0, t1] (s). With ``receiver_path`` (runs that set
    ``udp_len_bytes``, whose datagrams may exceed the MTU) from the capture's datagrams reassembled per RFC 791, only
    those that arrived whole (``analysis.metrics.udp_datagrams.goodput_mbps``): a datagram that lost one fragment is
    lost to the application. Otherwise, every datagram being one packet, the UDP payload of the receiver's packets."""
    if receiver is None or not t1 > t0:
        return NAN
    if receiver_path is not None:
        from analysis.metrics import udp_datagrams
        dg = udp_datagrams.datagrams(receiver_path, src=f.src, dst=f.dst, sport=int(f.sport), dport=int(f.dport))
        return udp_datagrams.goodput_mbps(dg, t0, t1)
    m = ((receiver["proto"] == f.proto) & (receiver["src"] == f.src) & (receiver["dst"] == f.dst)
         & (receiver["sport"] == f.sport) & (receiver["dport"] == f.dport)
         & (receiver["ts"] >= t0) & (receiver["ts"] <= t1))
    return float(receiver.loc[m, "payload_len"].sum()) * 8 / (t1 - t0) / 1e6


def _num_or_nan(x):
    try:
        return float(x) if x is not None else NAN
    except (TypeError, ValueError):
        return NAN


def analyze_run(run_dir, *, buffers: dict | None = None) -> pd.DataFrame:
    """Metric rows (one per flow, columns :data:`COLUMNS`) of one complete run directory, from its captures.
    Raises AnalysisError when a needed capture is missing or holds no traffic of the flow.
    ``buffers``: captures already read (``fingerprint(run_dir, buffers)``), consumed as they are decoded."""
    from analysis.metrics.fairness import jain_index
    from analysis.metrics.throughput import goodput_mbps

    buffers = {} if buffers is None else buffers
    run_dir = Path(run_dir)
    p = runmeta.read_params(run_dir)
    meta = runmeta.read_meta(run_dir)
    cc, cc2, cbr = p.get("cc"), p.get("cc2"), p.get("cbr_mbps")
    two_flow = bool(cc2) or cbr is not None
    sc = meta.get("self_check") if isinstance(meta.get("self_check"), dict) else None
    base = {
        "run_id": run_dir.name, "campaign": p.get("campaign"),
        "experiment": p.get("experiment"), "cc": cc, "cc2": cc2 or None,
        "cc_pair": f"{cc}+{cc2}" if cc2 else None, "path_mode": p.get("path_mode"),
        "link_delay_ms": _num_or_nan(p.get("link_delay_ms")), "loss_pct": _num_or_nan(p.get("loss_pct")),
        "cbr_mbps": _num_or_nan(cbr), "duration_s": _num_or_nan(p.get("duration_s")),
        "flow2_offset_s": _num_or_nan(p.get("flow2_offset_s")), "path_skew_ms": _num_or_nan(p.get("path_skew_ms", 0)),
        "rep": int(p["rep"]) if p.get("rep") is not None else -1,
        "backend": p.get("backend") or meta.get("backend"), "kernel": meta.get("kernel"),
        "delay_mechanism": meta.get("delay_mechanism"), "round_robin_mechanism": meta.get("round_robin_mechanism"),
        "self_check_ok": (bool(sc["ok"]) if sc is not None and sc.get("ok") is not None else None),
        "host_cpu_pressure_pct": _num_or_nan((meta.get("host_load") or {}).get("cpu_pressure_some_pct")
                                             if isinstance(meta.get("host_load"), dict) else None),
    }
    flows = [(1, "tcp", cc)] + ([(2, "tcp", cc2) if cc2 else (2, "udp", "udp")] if two_flow else [])
    per = {}
    receivers, receiver_paths = {}, {}
    for k, proto, fcc in flows:
        spec = runmeta.FLOWS[k]
        r1p = runmeta.capture_path(run_dir, spec["router1"])
        if r1p is None:
            raise AnalysisError(f"{run_dir.name}: missing capture {spec['router1']}")
        rxp = runmeta.capture_path(run_dir, spec["receiver"])
        r1 = runmeta.read_capture(r1p, buffers.pop(r1p, None))
        rx = runmeta.read_capture(rxp, buffers.pop(rxp, None)) if rxp is not None else None
        receivers[k] = rx
        receiver_paths[k] = rxp
        where = f"{run_dir.name} flow {k}"
        m = _tcp_metrics(r1, rx, k, spec["port"], where) if proto == "tcp" else _udp_metrics(r1, spec["port"], where)
        ip = runmeta.iperf3_summary(run_dir, k, proto)
        m["iperf3_goodput_mbps"] = ip["goodput_mbps"]
        if proto == "udp":
            m["goodput_mbps"] = ip["goodput_mbps"]
            m["udp_loss_pct"], m["udp_jitter_ms"] = ip["loss_pct"], ip["jitter_ms"]
        per[k] = (proto, fcc, m)
    if two_flow:
        t0 = per[2][2]["_t_first"]
        t1 = min(per[1][2]["_t_last"], per[2][2]["_t_last"])
        for k, (proto, _, m) in per.items():
            if not t1 > t0:
                m["overlap_goodput_mbps"] = NAN
            elif proto == "tcp":
                m["overlap_goodput_mbps"] = goodput_mbps(m["_flow"].data, t0, t1)
            else:
                m["overlap_goodput_mbps"] = _udp_delivered_mbps(
                    receivers[k], m["_flow"], t0, t1,
                    receiver_paths[k] if p.get("udp_len_bytes") is not None else None)
        x = [per[1][2]["overlap_goodput_mbps"], per[2][2]["overlap_goodput_mbps"]]
        try:
            j = jain_index(x) if all(np.isfinite(x)) else NAN
        except ValueError:
            j = NAN
        for _, _, m in per.values():
            m["jain"] = j
    rows = []
    for k, (proto, fcc, m) in per.items():
        row = dict.fromkeys(COLUMNS, NAN)
        row.update(base)
        row.update({key: v for key, v in m.items() if not key.startswith("_")})
        row.update({"flow": k, "flow_cc": fcc, "proto": proto})
        rows.append(row)
    return _typed(pd.DataFrame(rows, columns=COLUMNS))


def _typed(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    for c in FLOAT_COLS:
        df[c] = pd.to_numeric(df[c], errors="coerce").astype(float)
    df["flow"] = df["flow"].astype(int)
    df["rep"] = df["rep"].astype(int)
    for c in ("cc2", "cc_pair", "campaign", "backend", "kernel", "delay_mechanism", "round_robin_mechanism"):
        df[c] = df[c].astype(object).where(df[c].notna(), None)
    df["self_check_ok"] = df["self_check_ok"].astype(object).where(df["self_check_ok"].notna(), None)
    return df


def _input_files(run_dir: Path) -> dict[str, Path]:
    """{logical name: file} of the run's inputs; a gzip'd capture is listed under its plain name."""
    out = runmeta.run_files(run_dir, runmeta.CAPTURES)
    ip = run_dir / "iperf3"
    if ip.is_dir():
        for p in sorted(ip.glob("*.json")):
            out[f"iperf3/{p.name}"] = p
    return out


def _has_raw(run_dir: Path) -> bool:
    return runmeta.capture_path(run_dir, "router1.pcap") is not None


typed = _typed
input_files = _input_files
has_raw = _has_raw
SORT = ["run_id", "flow"]
CAPTURES = runmeta.CAPTURES
