#!/usr/bin/env python3
"""Ingest speed on ONE capture, side by side: the vectorised path, the dpkt reference decoder, a plain dpkt
per-packet loop, and ``tshark -T fields`` (if installed); prints packets/s and ratios.

    python3 bench/ingest_speed.py [CAPTURE] [--repeat 3] [--slow-limit N] [--no-tshark] [--json]

CAPTURE defaults to $MPCC_BENCH_CAPTURE, else the largest capture in tests/data/real (small: for a meaningful
number use a large real capture, e.g. a 60-s multipath iperf3 run concatenated to ~1 M packets).
``--slow-limit N`` times the slow tools (dpkt, tshark) on the first N records only (written to a temporary
file) and reports their rate; the fast path always reads the whole capture.
Numbers depend on the machine and its load: the script prints the load average and CPU count with the result.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _default_capture() -> Path:
    env = os.environ.get("MPCC_BENCH_CAPTURE")
    if env:
        return Path(env)
    return max((ROOT / "tests" / "data" / "real").glob("*.pcap"), key=lambda p: p.stat().st_size)


_CPU = {}


def _best(fn, repeat):
    """Best wall time of ``repeat`` calls (and, in _CPU["last"], the CPU time of that call: on a shared machine
    packets per CPU-second is the fairer per-core figure)."""
    times, out = [], None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        times.append((time.perf_counter() - t0, time.process_time() - c0))
    best = min(times)
    _CPU["last"] = best[1]
    return best[0], out


def fast_path(path, accel=None):
    from analysis.ingest import fast_reader
    return fast_reader.read_pcap_fast(path, accel=accel)


def dpkt_reference(path):
    from analysis.ingest.dpkt_reader import read_pcap
    return read_pcap(path)


def dpkt_loop(path) -> int:
    """The textbook dpkt loop: Reader + Ethernet/IP/TCP objects + option parsing, one tuple per TCP/UDP packet."""
    import dpkt
    rows = []
    with open(path, "rb") as f:
        rd = dpkt.pcap.Reader(f)
        dl = rd.datalink()
        for ts, buf in rd:
            try:
                if dl == dpkt.pcap.DLT_EN10MB:
                    ip = dpkt.ethernet.Ethernet(buf).data
                elif dl == 113:
                    ip = dpkt.sll.SLL(buf).data
                else:
                    ip = dpkt.ip.IP(buf)
                l4 = ip.data
                if isinstance(l4, dpkt.tcp.TCP):
                    opts = dpkt.tcp.parse_opts(l4.opts) if l4.opts else []
                    rows.append((ts, ip.src, ip.dst, l4.sport, l4.dport, l4.seq, l4.ack, l4.flags, l4.win,
                                 len(l4.data), opts))
                elif isinstance(l4, dpkt.udp.UDP):
                    rows.append((ts, ip.src, ip.dst, l4.sport, l4.dport, len(l4.data)))
            except (dpkt.UnpackError, AttributeError):
                continue
    return len(rows)


TSHARK_FIELDS = ["frame.number", "frame.time_epoch", "frame.cap_len", "ip.src", "ip.dst", "ip.id", "ip.len",
                 "tcp.srcport", "tcp.dstport", "udp.srcport", "udp.dstport", "tcp.len", "tcp.seq_raw",
                 "tcp.ack_raw", "tcp.flags", "tcp.window_size_value", "tcp.hdr_len", "tcp.options.mss_val",
                 "tcp.options.wscale.shift", "tcp.options.timestamp.tsval", "tcp.options.timestamp.tsecr",
                 "tcp.options.sack.count", "tcp.options.sack_le", "tcp.options.sack_re"]


def tshark_fields(path) -> int:
    cmd = ["tshark", "-n", "-r", str(path), "-Y", "tcp or udp", "-T", "fields"]
    for f in TSHARK_FIELDS:
        cmd += ["-e", f]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True)
    return p.stdout.count(b"\n")


def _prefix(path, n) -> Path:
    """First n records of a classic pcap in a temporary file."""
    from analysis.ingest import fast_reader
    buf = fast_reader.load_buffer(path)
    size = len(buf) - fast_reader._PAD
    big = bytes(buf[:4]) in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d")
    offs, *_ = fast_reader.walk_records(buf, size, big)
    end = int(offs[n]) if n < len(offs) else size
    fd, tmp = tempfile.mkstemp(suffix=".pcap", prefix="mpcc-bench-")
    with os.fdopen(fd, "wb") as f:
        f.write(bytes(buf[:end]))
    return Path(tmp)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("capture", nargs="?", type=Path, default=None)
    ap.add_argument("--repeat", type=int, default=3, help="fast-path repetitions (best is reported)")
    ap.add_argument("--slow-limit", type=int, default=None, help="time dpkt/tshark on the first N records only")
    ap.add_argument("--no-tshark", action="store_true")
    ap.add_argument("--no-dpkt-loop", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    cap = args.capture or _default_capture()
    if not cap.is_file():
        print(f"ingest_speed: {cap}: no such capture", file=sys.stderr)
        return 2

    from analysis.ingest import fast_reader, read_pcap

    res = {"capture": str(cap), "bytes": cap.stat().st_size, "cpus": os.cpu_count(),
           "loadavg_before": os.getloadavg()[0], "numba": fast_reader.have_numba()}
    # warm-up (numba compile or load from its cache, page cache) -- reported, not counted
    t0 = time.perf_counter()
    df = fast_path(cap)
    res["fast_first_call_s"] = time.perf_counter() - t0
    n = len(df)
    res["packets"] = n
    t, _ = _best(lambda: fast_path(cap), args.repeat)
    res["fast_s"], res["fast_pps"] = t, n / t
    res["fast_cpu_s"] = _CPU["last"]
    res["fast_pps_per_cpu_s"] = n / _CPU["last"] if _CPU["last"] > 0 else None
    if res["numba"]:
        t, _ = _best(lambda: fast_path(cap, accel=False), max(1, args.repeat - 1))
        res["fast_numpy_s"], res["fast_numpy_pps"] = t, n / t

    # Parquet cache: cold (decode + hash + write) and warm (stat index -> Parquet read)
    with tempfile.TemporaryDirectory(prefix="mpcc-bench-cache-") as cdir:
        t0 = time.perf_counter()
        read_pcap(cap, cache=cdir)
        res["cache_cold_s"] = time.perf_counter() - t0
        t, _ = _best(lambda: read_pcap(cap, cache=cdir), args.repeat)
        res["cache_warm_s"], res["cache_warm_pps"] = t, n / t
        res["cache_entry_bytes"] = sum(p.stat().st_size for p in Path(cdir).glob("*.parquet"))

    slow = _prefix(cap, args.slow_limit) if args.slow_limit else cap
    try:
        n_slow = len(dpkt_reference(slow)) if slow != cap else n
        t, _ = _best(lambda: dpkt_reference(slow), 1)
        res["dpkt_reference_s"], res["dpkt_reference_pps"] = t, n_slow / t
        if not args.no_dpkt_loop:
            t, k = _best(lambda: dpkt_loop(slow), 1)
            res["dpkt_loop_s"], res["dpkt_loop_pps"], res["dpkt_loop_rows"] = t, n_slow / t, k
        if not args.no_tshark and shutil.which("tshark"):
            t, k = _best(lambda: tshark_fields(slow), 1)
            res["tshark_s"], res["tshark_pps"], res["tshark_rows"] = t, n_slow / t, k
        res["slow_packets"] = n_slow
    finally:
        if slow != cap:
            slow.unlink()
    res["loadavg_after"] = os.getloadavg()[0]

    if args.json:
        print(json.dumps(res, indent=1))
        return 0
    print(f"capture {cap}  ({res['bytes'] / 1e6:.1f} MB, {n:,} TCP/UDP packets; {res['cpus']} CPUs, "
          f"load avg {res['loadavg_before']:.2f} -> {res['loadavg_after']:.2f}; numba {res['numba']})")
    print(f"  fast path (best of {args.repeat})      {res['fast_s']:8.3f} s  {res['fast_pps'] / 1e6:8.2f} M pkt/s"
          f"   (first call {res['fast_first_call_s']:.2f} s: + numba import/compile-cache load, cold page cache)")
    if res.get("fast_pps_per_cpu_s"):
        print(f"    = {res['fast_pps_per_cpu_s'] / 1e6:.2f} M packets per CPU-second ({res['fast_cpu_s']:.3f} CPU-s)")
    if "fast_numpy_pps" in res:
        print(f"  fast path, numpy fallback     {res['fast_numpy_s']:8.3f} s  {res['fast_numpy_pps'] / 1e6:8.2f} M pkt/s")
    print(f"  Parquet cache warm read       {res['cache_warm_s']:8.3f} s  {res['cache_warm_pps'] / 1e6:8.2f} M pkt/s"
          f"   (cold: decode+hash+write {res['cache_cold_s']:.2f} s, entry {res['cache_entry_bytes'] / 1e6:.1f} MB)")
    note = f" (first {res['slow_packets']:,} packets)" if slow != cap else ""
    for key, label in (("dpkt_reference", "dpkt reference decoder"), ("dpkt_loop", "dpkt per-packet loop"),
                       ("tshark", "tshark -T fields")):
        if f"{key}_pps" in res:
            print(f"  {label:<29} {res[f'{key}_s']:8.3f} s  {res[f'{key}_pps'] / 1e6:8.3f} M pkt/s{note}"
                  f"   fast path = {res['fast_pps'] / res[f'{key}_pps']:6.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
