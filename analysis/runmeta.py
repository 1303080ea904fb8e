"""Read one run directory (layout: docs/architecture.md): status marker, parameters, meta.json, iperf3 JSON,
and where its captures are (plain, gzip'd or xz'd).

Pure file reading: no packet decoding here (that is ``analysis.ingest``) and no metrics (``analysis.metrics``).
"""
from __future__ import annotations

import json
import math
import re
from datetime import datetime, timezone
from pathlib import Path

from analysis.errors import AnalysisError

# The two flows of a run (testbed/topology.json): flow 1 is src1 -> dst1 on iperf3 port 5201, flow 2 src2 -> dst2 on
# port 5202; two-flow runs keep flow 2's captures in separate files.
FLOWS = {
    1: {"port": 5201, "router1": "router1.pcap", "receiver": "receiver.pcap", "iperf3": "flow1"},
    2: {"port": 5202, "router1": "router1-flow2.pcap", "receiver": "receiver-flow2.pcap", "iperf3": "flow2"},
}
CAPTURES = ("router1.pcap", "receiver.pcap", "router1-flow2.pcap", "receiver-flow2.pcap")
PARAM_KEYS = ("experiment", "cc", "cc2", "path_mode", "link_delay_ms", "loss_pct", "cbr_mbps", "duration_s",
              "flow2_offset_s", "path_skew_ms", "rep", "campaign", "backend")


def run_status(run_dir) -> tuple[str, str]:
    """(status, reason) of a run directory: ("complete", ""), ("skipped", SKIPPED's one-line text) or
    ("incomplete", "no COMPLETE marker"). A run with a COMPLETE marker whose iperf3 client reported an error
    (:func:`iperf3_errors`) is incomplete: one of its flows did not run."""
    d = Path(run_dir)
    if (d / "COMPLETE").exists():
        errors = iperf3_errors(d)
        if errors:
            return "incomplete", f"iperf3 client failed: {errors[0]}"
        return "complete", ""
    if (d / "SKIPPED").exists():
        try:
            text = (d / "SKIPPED").read_text(errors="replace").strip().splitlines()
        except OSError:
            text = []
        return "skipped", (text[0].strip() if text else "skipped (no reason given)")
    return "incomplete", "no COMPLETE marker"


def _read_json(path: Path):
    """JSON of ``path``, or of its compressed form ``path.xz`` / ``path.gz`` (bundles); None if none exists."""
    from analysis.ingest.compressed import open_decompressed
    for cand in (path, path.with_name(path.name + ".xz"), path.with_name(path.name + ".gz")):
        if cand.is_file():
            path = cand
            break
    else:
        return None
    try:
        with open_decompressed(path) as f:
            return json.loads(f.read())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise AnalysisError(f"{path}: unreadable JSON ({exc})") from None


IPERF3_CLIENT_JSON = ("iperf3/*-client.json*", "background/iperf3-client.json*")


def iperf3_errors(run_dir) -> list[str]:
    """``"<file>: <error>"`` for each iperf3 client JSON of a run (``iperf3/*-client.json``,
    ``background/iperf3-client.json``; plain, .xz or .gz) that holds iperf3's ``"error"``. iperf3 3.12 exits 0 with
    --json even when its test failed (a UDP test whose connect datagram or its reply was lost gives up after 30 s
    with "unable to read from stream socket"), so capture tools before capture_lib.sh's ``iperf_ok`` marked such
    runs complete. Unreadable files count as no error here (the metrics report them)."""
    from analysis.ingest.compressed import open_decompressed
    d = Path(run_dir)
    out = []
    for pattern in IPERF3_CLIENT_JSON:
        for f in sorted(d.glob(pattern)):
            try:
                with open_decompressed(f) as fh:
                    raw = fh.read()
                if b'"error"' not in raw:
                    continue
                doc = json.loads(raw)
            except (OSError, ValueError):
                continue
            err = doc.get("error") if isinstance(doc, dict) else None
            if err:
                name = f.name.removesuffix(".xz").removesuffix(".gz")
                out.append(f"{name}: {err}")
    return out


def read_meta(run_dir) -> dict:
    """meta.json as a dict ({} when absent)."""
    return _read_json(Path(run_dir) / "meta.json") or {}


_RUNNER_HOST = re.compile(r"^runner: recording on host (?P<host>\S+) \(kernel (?P<kernel>[^)]*)\)")


def recorded_on(meta: dict, runner_log: str | None = None) -> dict:
    """{"host", "kernel"} of the machine that recorded a run: meta.json's ``host`` (``uname -n``) and ``kernel``, else
    the first line of the runner's ``runner.log`` (a skipped run has no meta.json); None where neither says (runs
    recorded before the capture tools named their host)."""
    host, kernel = meta.get("host"), meta.get("kernel")
    if (host is None or kernel is None) and runner_log:
        m = _RUNNER_HOST.match(runner_log)
        if m:
            host, kernel = host or m["host"], kernel or m["kernel"]
    return {"host": host, "kernel": kernel}


def runner_log_head(run_dir) -> str | None:
    """The first line of a run directory's ``runner.log`` (None without one): where :func:`recorded_on` finds the host
    of a run that has no meta.json."""
    try:
        return (Path(run_dir) / "runner.log").read_text(errors="replace").split("\n", 1)[0]
    except OSError:
        return None



def read_params(run_dir) -> dict:
    """The run's parameters: params.json, completed by meta.json's "params" (params.json wins)."""
    d = Path(run_dir)
    meta = read_meta(d)
    p = dict(meta.get("params") or {})
    p.update(_read_json(d / "params.json") or {})
    return p


def utc_time(stamp: str) -> datetime:
    """An ISO 8601 UTC stamp (``Z``, up to nanoseconds as meta.json writes them, e.g. its ``start_time``) as an aware
    datetime (Python 3.10's ``fromisoformat`` takes neither ``Z`` nor more than 6 fractional digits); ValueError
    when it is not one."""
    s = str(stamp).strip().rstrip("Z")
    head, _, frac = s.partition(".")
    return datetime.fromisoformat(head + ("." + frac[:6] if frac else "")).replace(tzinfo=timezone.utc)


def capture_path(run_dir, name: str) -> Path | None:
    """Path of capture ``name`` (e.g. "router1.pcap"), or of its compressed form ``name.xz`` / ``name.gz``; None if
    none exists."""
    d = Path(run_dir)
    for cand in (d / name, d / f"{name}.xz", d / f"{name}.gz"):
        if cand.is_file():
            return cand
    return None


def has_captures(run_dir) -> bool:
    """The run directory holds at least one of its study family's raw captures (plain, .xz or .gz). A run restored
    from a bundle that did not ship its captures (``mpcc campaign run --resume-from``) has none."""
    from analysis.families import family_of_run, get
    return any(capture_path(run_dir, name) is not None for name in get(family_of_run(run_dir)).CAPTURES)


def run_files(run_dir, captures) -> dict[str, Path]:
    """{logical name: file} of a run's markers (params.json, meta.json, COMPLETE) and of its ``captures`` found plain
    or compressed (:func:`capture_path`), listed under their plain names: the start of every study family's
    ``input_files`` (the derived-table fingerprint)."""
    d = Path(run_dir)
    out = {name: d / name for name in ("params.json", "meta.json", "COMPLETE") if (d / name).is_file()}
    for name in captures:
        p = capture_path(d, name)
        if p is not None:
            out[name] = p
    return out


def read_capture(path, buffer=None):
    """Per-packet table of a capture (plain, .gz or .xz: ``analysis.ingest.read_pcap`` reads all three);
    ``buffer``: its content already read by ``fast_reader.load_buffer``."""
    from analysis.ingest import read_pcap
    return read_pcap(path, buffer=buffer)


def _f(x) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return float("nan")
    return v if math.isfinite(v) else float("nan")


def iperf3_summary(run_dir, flow: int, proto: str) -> dict:
    """Receiver-side iperf3 numbers of ``flow`` (1|2): goodput_mbps (receiver sum, Mbit/s), and for UDP
    loss_pct (%) and jitter_ms (ms, RFC 3550 as iperf3 computes it). NaN for what the JSON lacks.

    TCP: server JSON ``end.sum_received`` (fallback: client JSON ``end.sum_received``).
    UDP: server JSON ``end.sum_received`` (iperf3 3.12 leaves ``end.sum`` bytes at 0 on the server), fallback
    ``end.sum``, then the client's ``end.sum_received``."""
    d = Path(run_dir) / "iperf3"
    stem = FLOWS[flow]["iperf3"]
    server = _read_json(d / f"{stem}-server.json") or {}
    client = _read_json(d / f"{stem}-client.json") or {}
    cands = []
    for js in (server, client):
        end = js.get("end") or {}
        for key in ("sum_received", "sum") if proto == "udp" else ("sum_received",):
            s = end.get(key)
            if isinstance(s, dict) and _f(s.get("bytes")) > 0:
                cands.append(s)
    out = {"goodput_mbps": float("nan"), "loss_pct": float("nan"), "jitter_ms": float("nan")}
    if cands:
        s = cands[0]
        out["goodput_mbps"] = _f(s.get("bits_per_second")) / 1e6
        if proto == "udp":
            out["loss_pct"] = _f(s.get("lost_percent"))
            out["jitter_ms"] = _f(s.get("jitter_ms"))
    return out
