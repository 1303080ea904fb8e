"""Congestion window samples from ``ss -ti`` (run directory ``ss/flowN.txt``; architecture.md) for Figure 2
(cwnd against the bandwidth-delay product).

File format: blocks, each starting with a line ``# ts=<epoch seconds>``, then ``ss`` output: a header line
(``State Recv-Q ...``), and per socket one line ``STATE RECV-Q SEND-Q LOCAL PEER`` followed by one indented line of
``key:value`` details (``cwnd:<packets>``, ``rtt:<srtt ms>/<rttvar ms>``, ``mss:<bytes>``, ``bytes_acked:<bytes>``,
``ssthresh:<packets>``, ``minrtt:<ms>``, ``delivery_rate <bit/s>bps`` ...). iperf3's control connection to the same
server port appears too: :func:`data_connection` picks the data connection (the one that moved the most bytes).
"""
import re
from pathlib import Path

import numpy as np
import pandas as pd

_STATES = {"ESTAB", "SYN-SENT", "SYN-RECV", "FIN-WAIT-1", "FIN-WAIT-2", "TIME-WAIT", "CLOSE-WAIT", "LAST-ACK",
           "CLOSING", "CLOSED", "UNCONN", "LISTEN"}
_FLAGS = {"ts", "sack", "ecn", "ecnseen", "fastopen", "app_limited", "cong_alg"}
_NUM = r"([0-9.]+)"
_KV = {  # column -> regex on the detail line
    "cwnd_pkts": re.compile(r"\bcwnd:(\d+)"),
    "ssthresh_pkts": re.compile(r"\bssthresh:(\d+)"),
    "mss_bytes": re.compile(r"\bmss:(\d+)"),
    "minrtt_ms": re.compile(r"\bminrtt:" + _NUM),
    "bytes_acked": re.compile(r"\bbytes_acked:(\d+)"),
    "bytes_sent": re.compile(r"\bbytes_sent:(\d+)"),
    "unacked_pkts": re.compile(r"\bunacked:(\d+)"),
    "delivery_rate_bps": re.compile(r"\bdelivery_rate " + _NUM + "bps"),
    "pacing_rate_bps": re.compile(r"\bpacing_rate " + _NUM + "bps"),
}
_RTT = re.compile(r"(?<![a-z_])rtt:" + _NUM + "/" + _NUM)
_RETRANS = re.compile(r"\bretrans:(\d+)/(\d+)")
COLUMNS = ["ts", "state", "local", "peer", "cc", "cwnd_pkts", "ssthresh_pkts", "mss_bytes", "rtt_ms", "rttvar_ms",
           "minrtt_ms", "bytes_acked", "bytes_sent", "unacked_pkts", "retrans_total", "delivery_rate_bps",
           "pacing_rate_bps"]


def _details(conn: dict, line: str):
    toks = line.split()
    for t in toks:  # the cc name is the first bare word that is not a flag (e.g. "ts sack cubic wscale:7,7 ...")
        if ":" in t or t in _FLAGS:
            continue
        if re.fullmatch(r"[a-z][a-z0-9_]*", t):
            conn["cc"] = t
        break
    for col, rx in _KV.items():
        m = rx.search(line)
        if m:
            conn[col] = float(m.group(1))
    m = _RTT.search(line)
    if m:
        conn["rtt_ms"], conn["rttvar_ms"] = float(m.group(1)), float(m.group(2))
    m = _RETRANS.search(line)
    if m:
        conn["retrans_total"] = float(m.group(2))


def ss_path(run_dir, flow: int = 1) -> Path | None:
    """``RUN_DIR/ss/flow<N>.txt`` or its compressed form ``.txt.xz`` (the bundled data/sample) / ``.txt.gz``; None if
    none exists. ``RUN_DIR`` = ``BUNDLE/runs/<run_id>`` of a columnar bundle gives the file of the run's materialised
    directory (``analysis.bundle_store.resolve_run_dir``)."""
    from analysis.bundle_store import resolve_run_dir
    run_dir = resolve_run_dir(run_dir)
    for name in (f"flow{flow}.txt", f"flow{flow}.txt.xz", f"flow{flow}.txt.gz"):
        p = Path(run_dir) / "ss" / name
        if p.is_file():
            return p
    return None


def _read_text(source) -> str:
    if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source and Path(source).is_file()):
        from analysis.ingest.compressed import open_decompressed
        with open_decompressed(Path(source)) as f:  # plain, gzip or xz (by magic bytes)
            return f.read().decode(errors="replace")
    return str(source)


def parse_ss(source) -> pd.DataFrame:
    """Parse an ``ss -ti`` sample file (path, optionally ``.gz``/``.xz``, or the text itself) into one row per
    (sample, socket).

    Columns: ts (epoch s), state, local, peer, cc, cwnd_pkts / ssthresh_pkts / unacked_pkts (packets), mss_bytes,
    bytes_acked, bytes_sent (bytes), rtt_ms, rttvar_ms, minrtt_ms (ms), retrans_total (segments),
    delivery_rate_bps, pacing_rate_bps (bit/s). Missing fields are NaN."""
    text = _read_text(source)
    rows, ts, conn = [], np.nan, None
    for line in text.splitlines():
        if line.startswith("# ts="):
            ts = float(line[5:].strip())
            conn = None
            continue
        if not line.strip() or line.startswith("State"):
            continue
        if line[0].isspace():
            if conn is not None:
                _details(conn, line)
            continue
        f = line.split()
        if f[0] in _STATES and len(f) >= 5:
            conn = {"ts": ts, "state": f[0], "local": f[3], "peer": f[4]}
            rows.append(conn)
    df = pd.DataFrame(rows)
    for c in COLUMNS:
        if c not in df:
            df[c] = np.nan
    return df[COLUMNS]


def data_connection(samples: pd.DataFrame) -> pd.DataFrame:
    """Rows of the data connection: among sockets (local, peer), the one with the largest bytes_acked (iperf3's
    control connection moves a few hundred bytes, the data connection megabytes). Empty input -> empty output."""
    if samples.empty:
        return samples
    acked = samples.groupby(["local", "peer"])["bytes_acked"].max().fillna(0)
    sent = samples.groupby(["local", "peer"])["bytes_sent"].max().fillna(0)
    key = (acked + sent * 1e-9).idxmax()
    return samples[(samples["local"] == key[0]) & (samples["peer"] == key[1])].sort_values("ts")


#: bytes acked from which a data connection's samples must show the CC under test (iperf3's cookie is 37 bytes)
CC_CHECK_MIN_ACKED = 10_000


def ccs_once_flowing(samples: pd.DataFrame, min_acked_bytes: int = CC_CHECK_MIN_ACKED) -> list[str]:
    """The congestion controls ``ss`` names on samples with at least ``min_acked_bytes`` bytes acked, sorted.

    iperf3 sets TCP_CONGESTION on its data socket after connect() returns, so a sample taken before that (SYN-SENT,
    or ESTAB with nothing but iperf3's cookie acked) shows the namespace's default CC; from ``min_acked_bytes`` on,
    every sample of a flow on the CC under test names it. Pass one connection's samples (:func:`data_connection`)
    or several flows' at once."""
    return sorted(set(samples.loc[samples["bytes_acked"].fillna(0) >= min_acked_bytes, "cc"].dropna()))


def cwnd_series(samples: pd.DataFrame) -> pd.DataFrame:
    """The data connection's cwnd over time: t_s (seconds since the file's first sample), cwnd_pkts, rtt_ms,
    mss_bytes, cwnd_bytes = cwnd_pkts * mss_bytes."""
    d = data_connection(samples)
    out = pd.DataFrame({"t_s": d["ts"] - samples["ts"].min(), "cwnd_pkts": d["cwnd_pkts"], "rtt_ms": d["rtt_ms"],
                        "minrtt_ms": d["minrtt_ms"], "mss_bytes": d["mss_bytes"], "cc": d["cc"]})
    out["cwnd_bytes"] = out["cwnd_pkts"] * out["mss_bytes"]
    return out.reset_index(drop=True)


def bdp_packets(rate_mbps: float, rtt_ms: float, mss_bytes: float) -> float:
    """Bandwidth-delay product in packets: rate (Mbit/s) × RTT (ms) / MSS (bytes) = rate·1e6/8 · rtt/1e3 / mss."""
    return float(rate_mbps) * 1e6 / 8.0 * float(rtt_ms) / 1e3 / float(mss_bytes)
