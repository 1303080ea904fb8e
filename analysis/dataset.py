"""Campaign dataset: one tidy row per (run, flow) of a campaign directory, with the run's parameters and metrics.

``load_campaign(DIR)`` walks ``DIR/runs/<run_id>/`` (layout: docs/architecture.md). Only runs with ``COMPLETE``
give metric rows; every run directory found (complete, skipped with its SKIPPED reason, incomplete) is listed in
``df.attrs["runs"]`` / :func:`run_status`, so nothing is silently mixed in or dropped.

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
  window (the router1 side of a UDP flow shows what was sent, not what got through the 10 Mbit/s bottlenecks).
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

Cache: ``RUN_DIR/derived/flows.parquet`` + ``RUN_DIR/derived/fingerprint.json`` (size, mtime and sha256 of every
input file plus the loader's version). A run is re-analysed only when an input's content changed: equal
size+mtime is trusted without re-hashing, and a changed size or mtime with an equal sha256 is not a change (the
sha256 of a gzip'd capture is that of its decompressed content, so gzip'ing captures keeps the cache valid). When the raw captures
are absent but ``derived/`` exists, the derived rows are used as they are. ``derived_dir=DIR`` puts the cache in
``DIR/<run_id>/`` instead (for campaign directories that must stay read-only).
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.errors import AnalysisError, AnalysisWarning
from analysis import runmeta

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


# ------------------------------------------------------------------------------------------------ run listing

def _runs_root(campaign_dir) -> Path:
    d = Path(campaign_dir)
    if not d.exists():
        raise AnalysisError(f"{d}: no such campaign directory")
    if not d.is_dir():
        raise AnalysisError(f"{d}: not a directory")
    runs = d / "runs"
    if not runs.is_dir():
        raise AnalysisError(f"{d}: not a campaign directory (no runs/ inside)")
    return runs


def _run_dirs(campaign_dir) -> list[Path]:
    return sorted(p for p in _runs_root(campaign_dir).iterdir() if p.is_dir() and not p.name.startswith("."))


def campaign_family(campaign_dir):
    """The analysis module of a campaign directory's study family (``analysis.families``): the family of its first
    run (a campaign file names one family, so all its runs share it), "000" for an empty campaign."""
    from analysis.families import family_of_run, get
    dirs = _run_dirs(campaign_dir)
    return get(family_of_run(dirs[0]) if dirs else "000")


def run_status(campaign_dir) -> pd.DataFrame:
    """Every run directory of ``campaign_dir/runs/``: run_id, status (complete | skipped | incomplete), reason
    (SKIPPED's text; "no COMPLETE marker" for incomplete ones; "superseded: ..." for directories moved aside as
    ``<run_id>.incomplete-<suffix>``, which never count as results whatever markers they hold), and the run's parameters from params.json where readable."""
    cols = campaign_family(campaign_dir).RUNS_COLUMNS
    rows = []
    for d in _run_dirs(campaign_dir):
        status, reason = runmeta.run_status(d)
        if ".incomplete-" in d.name:
            # moved aside (by a resumed campaign, or by hand, e.g. runs recorded under CPU contention): never a
            # result, even if it holds a COMPLETE marker; the run's canonical directory is runs/<run_id>/
            status = "incomplete"
            reason = f"superseded: moved aside as {d.name}"
        try:
            p = runmeta.read_params(d)
        except AnalysisError:
            p = {}
        rows.append({"run_id": d.name, "status": status, "reason": reason,
                     **{k: p.get(k) for k in cols[3:]}})
    return pd.DataFrame(rows, columns=cols)


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


def _udp_delivered_mbps(receiver, f, t0, t1) -> float:
    if receiver is None or not t1 > t0:
        return NAN
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
    receivers = {}
    for k, proto, fcc in flows:
        spec = runmeta.FLOWS[k]
        r1p = runmeta.capture_path(run_dir, spec["router1"])
        if r1p is None:
            raise AnalysisError(f"{run_dir.name}: missing capture {spec['router1']}")
        rxp = runmeta.capture_path(run_dir, spec["receiver"])
        r1 = runmeta.read_capture(r1p, buffers.pop(r1p, None))
        rx = runmeta.read_capture(rxp, buffers.pop(rxp, None)) if rxp is not None else None
        receivers[k] = rx
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
                m["overlap_goodput_mbps"] = _udp_delivered_mbps(receivers[k], m["_flow"], t0, t1)
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


# ------------------------------------------------------------------------------------------------ cache

def _input_files(run_dir: Path) -> dict[str, Path]:
    """{logical name: file} of the run's inputs; a gzip'd capture is listed under its plain name."""
    out = runmeta.run_files(run_dir, runmeta.CAPTURES)
    ip = run_dir / "iperf3"
    if ip.is_dir():
        for p in sorted(ip.glob("*.json")):
            out[f"iperf3/{p.name}"] = p
    return out


def _sha256(path: Path) -> str:
    """sha256 of the file's content, of the decompressed content for a gzip or xz file (so compressing a capture is
    not a change)."""
    from analysis.ingest.compressed import open_decompressed
    h = hashlib.sha256()
    with open_decompressed(path) as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _stat_entry(p: Path) -> dict:
    st = p.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def fingerprint(run_dir, buffers: dict | None = None) -> dict:
    """{"version", "files": {logical name: {size, mtime_ns, sha256}}} of the run's input files (size and mtime of
    the stored file, sha256 of its content, decompressed for gzip'd captures).

    ``buffers``: a dict to receive each capture's content as ``fast_reader.load_buffer`` returns it, keyed by path,
    so that the analysis decodes the bytes hashed here instead of reading the file a second time."""
    from analysis.ingest import fast_reader
    from analysis.ingest.cache import content_sha256
    run_dir = Path(run_dir)
    fam = _family(run_dir)
    files = {}
    for rel, p in fam.input_files(run_dir).items():
        e = _stat_entry(p)
        if buffers is not None and rel in fam.CAPTURES:
            buf = fast_reader.load_buffer(p)
            e["sha256"] = content_sha256(buf[:len(buf) - fast_reader._PAD])  # the packet cache's key, too
            buffers[p] = buf
        else:
            e["sha256"] = _sha256(p)
        files[rel] = e
    return {"version": fam.DERIVED_VERSION, "files": files}


def _fingerprint_matches(run_dir: Path, stored: dict) -> tuple[bool, dict | None]:
    """(unchanged?, refreshed fingerprint when only sizes/mtimes moved, e.g. a capture was gzip'd)."""
    version = _family(run_dir).DERIVED_VERSION   # each family's rows have their own definition version
    if not isinstance(stored, dict) or stored.get("version") != version:
        return False, None
    old = stored.get("files") or {}
    paths = _family(run_dir).input_files(run_dir)
    if set(paths) != set(old):
        return False, None
    cur = {}
    refreshed = False
    for rel, p in paths.items():
        e = _stat_entry(p)
        o = old[rel]
        if (e["size"], e["mtime_ns"]) != (o.get("size"), o.get("mtime_ns")):
            if _sha256(p) != o.get("sha256"):
                return False, None
            refreshed = True
        e["sha256"] = o.get("sha256")
        cur[rel] = e
    return True, ({"version": version, "files": cur} if refreshed else None)


def run_cache_dir(run_dir, derived_root=None) -> Path:
    """Where the per-run cache of ``run_dir`` lives: ``derived_root/<run name>`` when given, else ``RUN_DIR/derived``."""
    run_dir = Path(run_dir)
    return Path(derived_root) / run_dir.name if derived_root else run_dir / "derived"


def _has_raw(run_dir: Path) -> bool:
    return runmeta.capture_path(run_dir, "router1.pcap") is not None


def _family(run_dir):
    """The analysis module of the run's study family (``analysis.families``)."""
    from analysis.families import family_of_run, get
    return get(family_of_run(run_dir))


def _write_cache(ddir: Path, df: pd.DataFrame, fp: dict) -> None:
    try:
        ddir.mkdir(parents=True, exist_ok=True)
        tmp = ddir / "flows.parquet.tmp"
        df.to_parquet(tmp, index=False)
        tmp.replace(ddir / "flows.parquet")
        tmpj = ddir / "fingerprint.json.tmp"
        tmpj.write_text(json.dumps(fp, indent=1, sort_keys=True))
        tmpj.replace(ddir / "fingerprint.json")
    except OSError as exc:
        warnings.warn(f"cannot write the derived cache in {ddir}: {exc.strerror or exc}", AnalysisWarning, stacklevel=2)


def _read_cached(ddir: Path, typed: bool = True, fam=None) -> pd.DataFrame:
    cols, typer = (COLUMNS, _typed) if fam is None else (fam.COLUMNS, fam.typed)
    df = pd.read_parquet(ddir / "flows.parquet")
    for c in cols:
        if c not in df.columns:
            df[c] = NAN
    return typer(df[cols]) if typed else df[cols]


def cached_rows(run_dir, derived_root=None, typed: bool = True) -> pd.DataFrame | None:
    """The cached rows of ``run_dir`` when the cache is valid (or raw captures are absent), else None."""
    run_dir = Path(run_dir)
    ddir = run_cache_dir(run_dir, derived_root)
    pq = ddir / "flows.parquet"
    if not pq.is_file():
        return None
    fam = _family(run_dir)
    if not fam.has_raw(run_dir):
        return _read_cached(ddir, typed, fam)
    try:
        stored = json.loads((ddir / "fingerprint.json").read_text())
    except (OSError, ValueError):
        return None
    ok, refreshed = _fingerprint_matches(run_dir, stored)
    if not ok:
        return None
    df = _read_cached(ddir, typed, fam)
    # a bundle (data/sample: bundle.json at its root) is a version-controlled artefact: a fresh checkout moves every
    # mtime, so the refreshed fingerprint is not written back (the content hashes matched; nothing changed)
    if refreshed is not None and not (run_dir.parent.parent / "bundle.json").is_file():
        _write_cache(ddir, df, refreshed)
    return df


def process_run(run_dir, derived_root=None, typed: bool = True) -> tuple[pd.DataFrame | None, str]:
    """Rows of one complete run (from the cache when valid, else analysed and cached) and an error reason
    ("" when fine). Never raises for a bad run: the reason says what went wrong. ``typed=False`` skips the
    per-run dtype normalisation (``load_campaign`` does it once over all rows)."""
    run_dir = Path(run_dir)
    try:
        df = cached_rows(run_dir, derived_root, typed)
        if df is not None:
            return df, ""
        fam = _family(run_dir)
        if not fam.has_raw(run_dir):
            return None, f"analysis failed: no {fam.CAPTURES[0]} capture and no derived table"
        buffers = {}
        fp = fingerprint(run_dir, buffers)
        df = fam.analyze_run(run_dir, buffers=buffers)
        _write_cache(run_cache_dir(run_dir, derived_root), df, fp)
        return df, ""
    except (AnalysisError, OSError, ValueError, KeyError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return None, f"analysis failed: {msg}"


# ------------------------------------------------------------------------------------------------ campaign

def load_accelerators() -> None:
    """Load numba's compiled decoders and RFC 5236 loops now (about 0.5 s once per process) so that every capture of
    a campaign, small ones included, takes the compiled paths; a no-op without numba (same results either way)."""
    from analysis.ingest import fast_reader
    from analysis.metrics import reordering
    fast_reader.have_numba()
    reordering.have_numba()


def _map_local(dirs, jobs, derived_root, bar):
    if jobs <= 1 or len(dirs) <= 1:
        if len(dirs) >= 8:
            load_accelerators()
        for d in dirs:
            yield d, process_run(d, derived_root, False)
            bar.update(1)
        return
    from concurrent.futures import ProcessPoolExecutor, as_completed
    with ProcessPoolExecutor(max_workers=jobs, initializer=load_accelerators) as ex:
        futs = {ex.submit(process_run, d, derived_root, False): d for d in dirs}
        for fu in as_completed(futs):
            yield futs[fu], fu.result()
            bar.update(1)


def _map_dask(dirs, scheduler, derived_root, bar):
    try:
        from dask.distributed import Client, as_completed
    except ImportError:
        raise AnalysisError("scheduler given but dask.distributed is not installed "
                            "(pip install 'dask[distributed]')") from None
    try:
        client = Client(scheduler, timeout=10)
    except (OSError, TimeoutError, ValueError) as exc:
        raise AnalysisError(f"cannot reach the dask scheduler {scheduler}: {exc}") from None
    try:
        futs = client.map(process_run, [str(d) for d in dirs], derived_root=derived_root, typed=False, pure=False)
        back = {f.key: d for f, d in zip(futs, dirs)}
        for fu in as_completed(futs):
            yield back[fu.key], fu.result()
            bar.update(1)
    finally:
        client.close()


def load_campaign(campaign_dir, *, jobs=None, progress=True, scheduler=None, derived_dir=None) -> pd.DataFrame:
    """Tidy per-(run, flow) metrics of a campaign directory (module docstring: columns, windows, cache).

    ``jobs``: worker processes for runs needing analysis (default os.cpu_count()); ``scheduler``:
    "tcp://host:port" of a dask.distributed scheduler instead; ``progress``: tqdm bar on stderr;
    ``derived_dir``: put the per-run cache under this directory instead of inside the run directories.
    ``df.attrs["runs"]`` lists every run directory with its status (complete | skipped | incomplete) and reason;
    a complete run that could not be analysed keeps status "complete" with reason "analysis failed: ...".
    """
    from tqdm import tqdm

    runs = run_status(campaign_dir)
    root = _runs_root(campaign_dir)
    complete = [root / r for r in runs.loc[runs["status"] == "complete", "run_id"]]
    jobs = (os.cpu_count() or 1) if jobs is None else int(jobs)
    if jobs < 1:
        raise AnalysisError(f"jobs must be >= 1, got {jobs}")
    parts, reasons = {}, {}
    with tqdm(total=len(complete), unit="run", desc="load_campaign", file=sys.stderr, disable=not progress) as bar:
        it = (_map_dask(complete, scheduler, derived_dir, bar) if scheduler
              else _map_local(complete, jobs, derived_dir, bar))
        for d, (df, reason) in it:
            if df is not None:
                parts[d.name] = df
            if reason:
                reasons[d.name] = reason
    if reasons:
        runs = runs.copy()
        m = runs["run_id"].isin(list(reasons))
        runs.loc[m, "reason"] = runs.loc[m, "run_id"].map(reasons)
    frames = [parts[k] for k in sorted(parts)]
    fam = campaign_family(campaign_dir)
    with warnings.catch_warnings():  # all-NA columns in some runs' rows: typed() sets every column's dtype below
        warnings.simplefilter("ignore", FutureWarning)
        df = fam.typed(pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=fam.COLUMNS))
    df = df.sort_values(fam.SORT, kind="stable").reset_index(drop=True)
    df.attrs["runs"] = runs
    df.attrs["campaign_dir"] = str(Path(campaign_dir))
    return df


# ------------------------------------------------------------------------------------------------ family interface
# study 000's rows are this module's own (analysis.families): the names every family module provides
typed = _typed
input_files = _input_files
has_raw = _has_raw
SORT = ["run_id", "flow"]
CAPTURES = runmeta.CAPTURES
