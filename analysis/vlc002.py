"""The VLC replication of study 002 (``testbed/vlc002/run.sh``; docs/vlc002.md): VLC media player serving one video
to three clients over RTSP (the paper's CUBIC arm, its Table 2) or HTTP (its PCC arm) on study 002's star testbed,
per run and client, from the server's and the clients' captures.

Input: a run directory of ``run.sh`` (``meta.json``, ``server.pcap``, ``clientK.pcap`` for K = 1, 2, 3, one host
clock), or the directory of many (``campaign.sh``), or the committed form ``data/vlc002/`` whose ``runs.csv`` holds
these rows. Per (run, client), with these units:

* ``transport``: ``rtp-udp`` (rtsp runs: the media as RTP over UDP, RFC 3550; VLC's RTSP server offers no other
  transport) or ``tcp`` (http runs: one TCP connection to the server's port 8080).
* ``sent_pkts`` (packets): the stream's media packets in the server capture addressed to the client: RTP packets
  (UDP, RTP version 2, not RTCP: the second byte outside 200-204, RFC 5761 section 4) for rtp-udp; distinct data
  transmissions for tcp (``analysis.families.chain.flow_capture_metrics``, as study 002's main rows count them).
* ``lost_pkts``, ``loss_pct`` (packets, %): of those, the ones the client capture never saw (matched on RTP SSRC and
  sequence number; for tcp on TCP seq, IPv4 ID and length), i.e. our main dataset's packet loss.
* ``rtp_expected``, ``rtp_lost``, ``rtp_loss_pct`` (packets, %; rtp-udp only): RFC 3550 appendix A.3's cumulative
  loss at the client, summed over the client's RTP streams (SSRCs): expected = extended highest sequence number −
  first + 1, lost = expected − received (duplicates count as received, so it can be negative): what Wireshark's RTP
  stream analysis reports as "Lost".
* ``received_pkts`` (packets): media packets in the client capture; ``payload_bytes`` (bytes): their UDP payload
  (RTP header included) for rtp-udp, the TCP payload delivered for the first time for tcp.
* ``throughput_kbps`` (kbit/s, 1 kbit = 1000 bit): payload_bytes × 8 over the client's first to last media packet.
* ``delay_mean_ms`` (ms): one-way delay server → client of the media packets both captures saw, client capture time
  minus server capture time.
* ``ipt_ms`` (ms): the mean inter-packet time at the client, (last − first media packet) / received_pkts, "total time
  / packets" (``analysis.claims.streaming.inter_packet_ms``'s definition, the paper's likely "delay").
* run-level, on each client's row: ``queue_drops`` (packets: the shared link's qdisc drops during the run, from
  meta.json's ``tc -s`` before and after), ``host_cpu_pressure_pct`` (Linux PSI "some" share while the clients ran).

:func:`summary` pools the runs per (test, stream, cc): means with Student t intervals over the runs and the loss's
exact Clopper-Pearson interval over the pooled packet counts; :func:`export` writes the committed form
(``runs.csv``, ``summary.csv``, ``facts.json``). ``python -m analysis.vlc002 RAW_DIR --out data/vlc002``.
"""
from __future__ import annotations

import argparse
import json
import re
import socket
import sys
from functools import lru_cache
from pathlib import Path

import dpkt
import numpy as np
import pandas as pd

from analysis.errors import AnalysisError

CLIENTS = (1, 2, 3)
HTTP_PORT = 8080
RTCP_TYPES = range(200, 205)   # RFC 5761 section 4: RTCP packet types 200-204 in the second byte
NAN = float("nan")
RUN_COLUMNS = ["run_id", "experiment", "test", "stream", "transport", "cc", "rep", "duration_s", "background_mbps",
               "client", "sent_pkts", "lost_pkts", "loss_pct", "rtp_expected", "rtp_lost", "rtp_loss_pct",
               "received_pkts", "payload_bytes", "throughput_kbps", "delay_mean_ms", "ipt_ms", "queue_drops",
               "host_cpu_pressure_pct"]


def rtp_packets(path, dst: str | None = None) -> pd.DataFrame:
    """The RTP packets (not RTCP) of an IPv4 capture, optionally only those to ``dst``: columns ts (s), src, dst,
    sport, dport, ssrc, seq (16-bit), udp_payload (bytes, RTP header included; from the UDP length field, so a
    snaplen-truncated capture counts every byte)."""
    from analysis.ingest.compressed import open_decompressed
    rows = []
    with open_decompressed(path) as fh:
        for ts, buf in dpkt.pcap.Reader(fh):
            try:
                eth = dpkt.ethernet.Ethernet(buf)
            except (dpkt.UnpackError, dpkt.NeedData):
                continue
            ip = eth.data
            if not isinstance(ip, dpkt.ip.IP) or ip.p != 17 or ip.offset != 0:
                continue
            raw = bytes(buf[14 + ip.hl * 4:])
            if len(raw) < 8 + 12:
                continue
            ulen = int.from_bytes(raw[4:6], "big")
            rtp = raw[8:20]
            if rtp[0] >> 6 != 2 or rtp[1] in RTCP_TYPES:
                continue
            d = socket.inet_ntoa(ip.dst)
            if dst is not None and d != dst:
                continue
            rows.append((float(ts), socket.inet_ntoa(ip.src), d, int.from_bytes(raw[0:2], "big"),
                         int.from_bytes(raw[2:4], "big"), int.from_bytes(rtp[8:12], "big"),
                         int.from_bytes(rtp[2:4], "big"), ulen - 8))
    return pd.DataFrame(rows, columns=["ts", "src", "dst", "sport", "dport", "ssrc", "seq", "udp_payload"])


def extended_seq(seq) -> np.ndarray:
    """RTP sequence numbers (16-bit, in arrival order) extended over their wraps (RFC 3550 appendix A.1: a step back
    by more than half the space is a wrap forward)."""
    s = np.asarray(seq, dtype=np.int64)
    if len(s) == 0:
        return s
    d = np.diff(s)
    wraps = np.concatenate([[0], np.cumsum((d < -32768).astype(np.int64) - (d > 32768).astype(np.int64))])
    return s + 65536 * wraps


def rfc3550_loss(client: pd.DataFrame) -> tuple[int, int]:
    """(expected, lost) summed over the SSRCs of RTP packets ``client`` (arrival order): RFC 3550 appendix A.3,
    expected = extended highest − extended first + 1, lost = expected − received."""
    expected = lost = 0
    for _, g in client.groupby("ssrc", sort=True):
        x = extended_seq(g["seq"].to_numpy())
        e = int(x.max() - x[0] + 1)
        expected += e
        lost += e - len(x)
    return expected, lost


def rtp_metrics(server: pd.DataFrame, client: pd.DataFrame) -> dict:
    """Per-client metrics of an RTP/UDP stream from the server's packets to the client and the client's capture of
    them (both :func:`rtp_packets` tables, one clock)."""
    key = ["ssrc", "seq"]
    s = server.drop_duplicates(key, keep="first")
    c = client.drop_duplicates(key, keep="first")
    m = s.merge(c[key + ["ts"]], on=key, how="left", suffixes=("_s", "_c"))
    seen = m["ts_c"].notna()
    exp, lost = rfc3550_loss(client) if len(client) else (0, 0)
    out = {"sent_pkts": len(s), "lost_pkts": int((~seen).sum()),
           "loss_pct": 100.0 * float((~seen).sum()) / len(s) if len(s) else NAN,
           "rtp_expected": exp, "rtp_lost": lost, "rtp_loss_pct": 100.0 * lost / exp if exp else NAN,
           "received_pkts": len(client), "payload_bytes": int(client["udp_payload"].sum()),
           "delay_mean_ms": float(((m["ts_c"] - m["ts_s"])[seen]).mean() * 1000.0) if seen.any() else NAN}
    span = float(client["ts"].max() - client["ts"].min()) if len(client) > 1 else NAN
    out["throughput_kbps"] = out["payload_bytes"] * 8.0 / span / 1000.0 if span and span > 0 else NAN
    out["ipt_ms"] = span * 1000.0 / len(client) if len(client) > 1 else NAN
    return out


def tcp_metrics(server: pd.DataFrame, client: pd.DataFrame, client_addr: str, where: str) -> dict:
    """Per-client metrics of an HTTP stream (TCP to port 8080) from the per-packet tables (``analysis.ingest``) of the
    server's and the client's captures; the server's is cut to the client's address first (one port, three
    clients)."""
    from analysis.claims.streaming import inter_packet_ms
    from analysis.families.chain import flow_capture_metrics
    s = server[(server["src"] == client_addr) | (server["dst"] == client_addr)]
    m = flow_capture_metrics(s, client, HTTP_PORT, where)
    thr = m["goodput_mbps"] * 1000.0
    lost = int(round(m["sent_pkts"] * m["loss_pct"] / 100.0)) if m["sent_pkts"] else 0
    return {"sent_pkts": int(m["sent_pkts"]), "lost_pkts": lost, "loss_pct": m["loss_pct"], "rtp_expected": NAN,
            "rtp_lost": NAN, "rtp_loss_pct": NAN, "received_pkts": int(m["received_pkts"]),
            "payload_bytes": int(m["received_payload_bytes"]), "throughput_kbps": thr,
            "delay_mean_ms": m["delay_mean_ms"],
            "ipt_ms": inter_packet_ms(m["received_payload_bytes"], thr, m["sent_pkts"], m["loss_pct"])}


def queue_drops(meta: dict) -> float:
    """Drops of the shared link's qdiscs during the run (packets): the sum over ``tc -s -j qdisc show``'s qdiscs of
    ``drops`` after minus before (meta.json ``queues_before``/``queues_after``); NaN when either is missing."""
    def total(q):
        return sum(int(x.get("drops", 0)) for x in q) if isinstance(q, list) else None
    a, b = total(meta.get("queues_before")), total(meta.get("queues_after"))
    return float(b - a) if a is not None and b is not None else NAN


@lru_cache(maxsize=1)         # the topology file, read once per process (every run asks)
def _client_addrs() -> dict:
    topo = json.loads((Path(__file__).resolve().parents[1] / "testbed/families/002/topology.json").read_text())
    return {int(s["stream"]): s["client_addr"] for s in topo["streams"]}


def analyze_run(run_dir) -> pd.DataFrame:
    """Rows (:data:`RUN_COLUMNS`, one per client) of one complete run directory. AnalysisError (one line) when it is
    not complete or a capture is missing."""
    from analysis.ingest import read_pcap
    run_dir = Path(run_dir)
    if not (run_dir / "COMPLETE").exists():
        raise AnalysisError(f"{run_dir}: not a complete run of testbed/vlc002/run.sh (no COMPLETE)")
    meta = json.loads((run_dir / "meta.json").read_text())
    p = meta["params"]
    addrs = _client_addrs()
    base = {"run_id": run_dir.name, "experiment": p["experiment"], "test": int(p["experiment"][-1]),
            "stream": p["stream"], "transport": "rtp-udp" if p["stream"] == "rtsp" else "tcp", "cc": p["cc"],
            "rep": int(p["rep"]), "duration_s": float(p["duration_s"]), "background_mbps": float(p["background_mbps"]),
            "queue_drops": queue_drops(meta),
            "host_cpu_pressure_pct": (meta.get("host_load") or {}).get("cpu_pressure_some_pct", NAN)}
    for name in ["server.pcap"] + [f"client{k}.pcap" for k in CLIENTS]:
        if not (run_dir / name).exists():
            raise AnalysisError(f"{run_dir}: missing capture {name}")
    rows = []
    if p["stream"] == "rtsp":
        server = rtp_packets(run_dir / "server.pcap")
        for k in CLIENTS:
            client = rtp_packets(run_dir / f"client{k}.pcap", dst=addrs[k])
            rows.append(dict(base, client=k, **rtp_metrics(server[server["dst"] == addrs[k]], client)))
    else:
        server = read_pcap(run_dir / "server.pcap")
        for k in CLIENTS:
            client = read_pcap(run_dir / f"client{k}.pcap")
            rows.append(dict(base, client=k, **tcp_metrics(server, client, addrs[k], f"{run_dir.name} client {k}")))
    return pd.DataFrame(rows, columns=RUN_COLUMNS)


def load_runs(root) -> pd.DataFrame:
    """Rows of every complete run under ``root`` (a run directory, a campaign directory, or the committed form with
    ``runs.csv``), sorted by run and client."""
    root = Path(root)
    if (root / "runs.csv").exists():
        return pd.read_csv(root / "runs.csv")
    dirs = [root] if (root / "meta.json").exists() else sorted(d for d in root.iterdir() if (d / "COMPLETE").exists())
    if not dirs:
        raise AnalysisError(f"{root}: no complete run of testbed/vlc002/run.sh")
    return pd.concat([analyze_run(d) for d in dirs], ignore_index=True).sort_values(["run_id", "client"])


def summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (test, stream, cc): runs; throughput, delay and inter-packet time as the mean over runs of the clients'
    mean with a Student t 95 % interval over the runs; the loss pooled over every client of every run (lost of
    sent packets, %) with its exact 95 % interval; the RFC 3550 loss pooled the same way; the shared link's queue
    drops summed over the runs."""
    from analysis.claims import core
    from analysis.claims.streaming import clopper_pearson
    out = []
    for (t, stream, cc), g in runs.groupby(["test", "stream", "cc"], sort=True):
        per_run = g.groupby("run_id").agg(thr=("throughput_kbps", "mean"), delay=("delay_mean_ms", "mean"),
                                          ipt=("ipt_ms", "mean"), drops=("queue_drops", "first"),
                                          psi=("host_cpu_pressure_pct", "first"))
        sent, lost = int(g["sent_pkts"].sum()), int(g["lost_pkts"].sum())
        lo, hi = (100.0 * x for x in clopper_pearson(lost, sent, 0.05))
        row = {"test": int(t), "stream": stream, "transport": g["transport"].iloc[0], "cc": cc, "runs": len(per_run),
               "background_mbps": float(g["background_mbps"].iloc[0]), "sent_pkts": sent, "lost_pkts": lost,
               "loss_pct": 100.0 * lost / sent if sent else NAN, "loss_lo_pct": lo, "loss_hi_pct": hi}
        exp = pd.to_numeric(g["rtp_expected"], errors="coerce")
        if exp.notna().any():
            e, lr = int(exp.sum()), int(pd.to_numeric(g["rtp_lost"], errors="coerce").sum())
            row.update(rtp_expected=e, rtp_lost=lr, rtp_loss_pct=100.0 * lr / e if e else NAN)
        else:
            row.update(rtp_expected=NAN, rtp_lost=NAN, rtp_loss_pct=NAN)
        for name, col in (("throughput_kbps", "thr"), ("delay_mean_ms", "delay"), ("ipt_ms", "ipt")):
            e = core.mean_ci(pd.to_numeric(per_run[col], errors="coerce").dropna(), 0.05)
            row.update({name: e.value, f"{name}_lo": e.lo, f"{name}_hi": e.hi})
        row["queue_drops"] = float(per_run["drops"].sum())
        row["host_cpu_pressure_median_pct"] = float(per_run["psi"].median())
        out.append(row)
    return pd.DataFrame(out)


def facts(root) -> dict:
    """The runs' interleaved-TCP probes (what VLC's RTSP server answered), tools and video, from their meta.json."""
    root = Path(root)
    metas = [json.loads((d / "meta.json").read_text()) for d in sorted(root.iterdir())
             if (d / "COMPLETE").exists() and (d / "meta.json").exists()]
    # ffmpeg prefixes its message with its context's address ("[rtsp @ 0x55...] "): left out
    probes = sorted({re.sub(r"^\[[^]]*\]\s*", "", (m.get("interleaved_probe") or {}).get("answer", ""))
                     for m in metas} - {""})
    return {"runs": len(metas), "interleaved_probe_answers": probes,
            "interleaved_probe_runs": sum(1 for m in metas if m.get("interleaved_probe")),
            "tools": sorted({json.dumps(m.get("tools"), sort_keys=True) for m in metas}),
            "video": sorted({json.dumps(m.get("video"), sort_keys=True) for m in metas}),
            "kernel": sorted({m.get("kernel", "") for m in metas}),
            "recorded": [min(m["start_time"] for m in metas), max(m["start_time"] for m in metas)] if metas else []}


def export(src, dest) -> int:
    """Write ``runs.csv``, ``summary.csv`` and ``facts.json`` of the runs under ``src`` into ``dest``; the number of
    runs."""
    dest = Path(dest)
    runs = load_runs(src)
    dest.mkdir(parents=True, exist_ok=True)
    runs.to_csv(dest / "runs.csv", index=False, float_format="%.6g")
    summary(runs).to_csv(dest / "summary.csv", index=False, float_format="%.6g")
    f = facts(src)
    f["tools"] = [json.loads(t) for t in f["tools"]]
    f["video"] = [json.loads(v) for v in f["video"]]
    (dest / "facts.json").write_text(json.dumps(f, indent=1, sort_keys=True) + "\n")
    return int(runs["run_id"].nunique())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src", help="campaign directory of testbed/vlc002/campaign.sh (or one run directory)")
    ap.add_argument("--out", help="write runs.csv, summary.csv, facts.json here (the committed form)")
    a = ap.parse_args(argv)
    try:
        if a.out:
            n = export(a.src, a.out)
            print(f"{n} runs -> {a.out}")
        else:
            pd.set_option("display.width", 200)
            print(summary(load_runs(a.src)).to_string(index=False))
    except (AnalysisError, OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0



# ------------------------------------------------------------------------------------------- a claim's statistic

ARMS = {"cubic": ("rtsp", "cubic"), "pcc_vivace": ("http", "pcc_vivace")}   # the paper's Table 2: cc -> (stream, cc)
CONTROL = ("http", "cubic")      # CUBIC over HTTP: our main dataset's way, streamed by VLC
METRIC_COLUMN = {"throughput_kbps": "throughput_kbps", "delay_ms": "ipt_ms"}   # the paper's metric -> per-run column


def arm_runs(runs: pd.DataFrame, cc: str, tests, arm=None) -> pd.DataFrame:
    """Per-run means over the clients (columns of :data:`RUN_COLUMNS`) of the paper's arm for ``cc`` (:data:`ARMS`,
    or ``arm`` = (stream, cc)) at ``tests``; loss counts summed over the clients."""
    stream, c = arm or ARMS[cc]
    g = runs[(runs["stream"] == stream) & (runs["cc"] == c) & runs["test"].isin(list(tests))]
    return g.groupby(["run_id", "test"], as_index=False).agg(
        throughput_kbps=("throughput_kbps", "mean"), ipt_ms=("ipt_ms", "mean"), delay_mean_ms=("delay_mean_ms", "mean"),
        sent_pkts=("sent_pkts", "sum"), lost_pkts=("lost_pkts", "sum"))


def claim_estimate(runs: pd.DataFrame, metric: str, kind: str, tests, ccs, alpha: float = 0.05):
    """The replication's value of a study-002 statement (``analysis.claims.streaming.scope``: metric, kind, tests,
    ccs) as ``analysis.claims.core.Est``, each cc streamed as the paper streamed it (:data:`ARMS`). Throughput
    (kbit/s) and delay (the mean inter-packet time, ms: the paper's likely quantity): the mean over the runs of the
    tests with its Student t interval; a gap (PCC − CUBIC) with the Welch interval. Packet loss (%): the tests'
    mean of lost / sent packets pooled over runs and clients, with the exact interval of that linear combination
    (``streaming.exact_linear``: Clopper-Pearson per (test, cc), Bonferroni). n: the fewest runs of a (test, cc)."""
    from analysis.claims import core, streaming as sc
    gap = kind in ("gap", "mean_over_tests_gap")
    use = [sc.P, sc.C] if gap else list(ccs)[:1]
    per = {cc: arm_runs(runs, cc, tests) for cc in use}
    counts = [int((per[cc]["test"] == t).sum()) for cc in use for t in tests]
    n = min(counts) if counts else 0
    if n == 0:
        return core.Est(n=0)
    if metric == "packet_loss_pct":
        cnt = {(t, cc): (int(g["lost_pkts"].sum()), int(g["sent_pkts"].sum()))
               for cc in use for t, g in per[cc].groupby("test")}
        w = {(t, cc): (1.0 if (not gap or cc == sc.P) else -1.0) / len(tests) for cc in use for t in tests}
        value = sum(wi * cnt[g][0] / cnt[g][1] for g, wi in w.items() if cnt.get(g, (0, 0))[1])
        iv = sc.exact_linear(cnt, w, alpha)
        lo, hi = (100.0 * iv[0], 100.0 * iv[1]) if iv else (NAN, NAN)
        return core.Est(100.0 * value, lo, hi, n, detail="exact binomial")
    col = METRIC_COLUMN[metric]
    if gap:
        return core.welch_diff_ci(per[sc.P][col].dropna(), per[sc.C][col].dropna(), alpha)
    return core.mean_ci(per[use[0]][col].dropna(), alpha)


def beside_paper(summ: pd.DataFrame, reference_dir=None) -> pd.DataFrame:
    """The replication's :func:`summary` rows beside the paper's per-test means (Tables 5, 7 and 9 of
    ``data/reference/002``) for the arm the paper ran with each cc (:data:`ARMS`; the control arm, CUBIC over HTTP,
    has no paper value): test, cc, stream, transport, runs, then per metric the paper's value and ours with its
    interval — throughput (kbit/s), delay (the paper's) against our mean inter-packet time and one-way delay (ms),
    packet loss (%)."""
    from analysis import reference
    ref = Path(reference_dir) if reference_dir else reference.REFERENCE_DIR / "002"
    paper = pd.concat([pd.read_csv(ref / f"table{t}.csv") for t in (5, 7, 9)])
    paper = {(r.metric, int(r.test), r.cc): r.value for r in paper.itertuples(index=False)}
    rows = []
    for r in summ.itertuples(index=False):
        own = ARMS.get(r.cc) == (r.stream, r.cc)

        def pv(metric):
            return paper.get((metric, int(r.test), r.cc), NAN) if own else NAN
        rows.append({"test": int(r.test), "cc": r.cc, "stream": r.stream, "transport": r.transport,
                     "arm": "the paper's" if own else "control", "runs": int(r.runs),
                     "paper_throughput_kbps": pv("throughput_kbps"), "throughput_kbps": r.throughput_kbps,
                     "throughput_lo": r.throughput_kbps_lo, "throughput_hi": r.throughput_kbps_hi,
                     "paper_delay_ms": pv("delay_ms"), "inter_packet_ms": r.ipt_ms, "inter_packet_lo": r.ipt_ms_lo,
                     "inter_packet_hi": r.ipt_ms_hi, "one_way_delay_ms": r.delay_mean_ms,
                     "paper_loss_pct": pv("packet_loss_pct"), "lost_pkts": int(r.lost_pkts),
                     "sent_pkts": int(r.sent_pkts),
                     "loss_pct": r.loss_pct, "loss_lo": r.loss_lo_pct, "loss_hi": r.loss_hi_pct})
    return pd.DataFrame(rows).sort_values(["test", "arm", "cc"], ascending=[True, False, True], ignore_index=True)


DATA_DIR = Path(__file__).resolve().parents[1] / "data" / "vlc002"


def load(directory=None) -> pd.DataFrame | None:
    """The committed replication's rows (``data/vlc002/runs.csv``), None when it is not there."""
    d = Path(directory) if directory else DATA_DIR
    return pd.read_csv(d / "runs.csv") if (d / "runs.csv").exists() else None


def load_facts(directory=None) -> dict:
    """The committed replication's ``facts.json`` (:func:`facts`), {} when it is not there."""
    f = (Path(directory) if directory else DATA_DIR) / "facts.json"
    return json.loads(f.read_text()) if f.is_file() else {}


if __name__ == "__main__":
    sys.exit(main())
