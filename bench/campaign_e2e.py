#!/usr/bin/env python3
"""End-to-end campaign analysis time on a synthetic campaign made by copying ONE real run directory many times.

    python3 bench/campaign_e2e.py [--source RUN_DIR ...] [--copies 8] [--jobs N] [--out DIR] [--keep] [--json]

Each copy is a full copy of a source run (captures, params.json, meta.json, iperf3/...); ``--source`` may be given
several times (e.g. a lossy multipath run, a tcp_fairness and a udp_fairness run): every source is copied N times.  The classic-pcap
captures of copy k get k written into the pcap header's unused ``sigfigs`` field, so every copy has a different
content hash (no cache can serve one copy from another) while decoding to the same packets.

Timed, each in a fresh process state as far as caches go:
  0. ``load_campaign`` cold without a packet cache (``$MPCC_CACHE_DIR`` unset: decode + metrics + derived/ write;
     what a first analysis costs when the user did not opt into the packet cache)
  1. ``analysis.dataset.load_campaign`` cold  (no derived/ tables, empty packet cache: decode + metrics + write)
  2. ``load_campaign`` warm                    (derived/ tables valid: what a re-run costs)
  3. ``load_campaign`` with derived/ removed but the packet cache warm (metrics recomputed from cached packets)
  4. ``analysis.ingest.parallel.ingest_many`` cold and warm (decode into the packet cache only)
The packet cache is a temporary directory (``$MPCC_CACHE_DIR`` is set to it for the run).  The source run
defaults to $MPCC_BENCH_RUN, else the first complete run under data/raw/*/runs/; without one the benchmark is
skipped (exit 0).  Extrapolations to a full campaign are printed as such, not as measurements.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PCAP_MAGICS = (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
FULL_CAMPAIGN_PACKETS = 400e6  # issue 7: ~1,300 captures x 100 s at 20 Mbit/s


def _default_source() -> Path | None:
    env = os.environ.get("MPCC_BENCH_RUN")
    if env:
        return Path(env)
    for d in sorted((ROOT / "data" / "raw").glob("*/runs/*")):
        if (d / "COMPLETE").is_file() and ((d / "router1.pcap").is_file() or (d / "router1.pcap.gz").is_file()):
            return d
    return None


def build_campaign(source: Path, out: Path, copies: int) -> list[Path]:
    """Copy ``source`` ``copies`` times into ``out/runs/``; returns the capture files written."""
    caps = []
    runs = out / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    for k in range(copies):
        dst = runs / f"{source.name}__copy{k:03d}"
        shutil.copytree(source, dst, ignore=shutil.ignore_patterns("derived"))
        for p in dst.iterdir():
            if p.is_file() and p.name.endswith((".pcap", ".pcapng", ".pcap.gz")):
                caps.append(p)
                with open(p, "r+b") as f:
                    if f.read(4) in PCAP_MAGICS:
                        f.seek(12)  # sigfigs: unused by every reader
                        f.write((k + 1).to_bytes(4, "little"))
    return caps


def _use_reference_metrics() -> None:
    """Patch the package to run the frozen loops of tests/reference_metrics_slow.py (worker processes are forked
    after this, so they inherit it)."""
    sys.path.insert(0, str(ROOT / "tests"))
    import reference_metrics_slow as ref

    from analysis import flows
    from analysis.metrics import reordering, retransmissions, rtt
    flows.split_flows = ref.split_flows
    reordering.tcp_reordering = ref.tcp_reordering
    retransmissions.retransmission_mask = ref.retransmission_mask
    retransmissions.retransmissions = ref.retransmissions
    retransmissions.spurious_retransmissions = ref.spurious_retransmissions
    rtt.ack_rtt_ms = ref.ack_rtt_ms


_CPU: list = []   # CPU seconds (this process + its reaped worker processes) of the last _time() call


def _cpu() -> float:
    import resource
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN)))


def _time(fn):
    c0 = _cpu()
    t0 = time.perf_counter()
    out = fn()
    wall = time.perf_counter() - t0
    _CPU[:] = [_cpu() - c0]   # the process pools are shut down (workers reaped) when fn returns
    return wall, out


def _timed(res: dict, key: str, fn):
    """res[key] = wall seconds, res[key + "_cpu"] = CPU seconds of fn(); returns fn's result."""
    res[key], out = _time(fn)
    res[key + "_cpu"] = _CPU[0]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, action="append", default=None,
                    help="a complete run directory of a real campaign (repeatable)")
    ap.add_argument("--copies", type=int, default=8)
    ap.add_argument("--jobs", type=int, default=None, help="worker processes (default: CPU count)")
    ap.add_argument("--out", type=Path, default=None, help="where to build the campaign (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the synthetic campaign")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--reference-metrics", action="store_true",
                    help="time the frozen pre-vectorising metric code (tests/reference_metrics_slow.py) instead, for a "
                         "before/after comparison under the same conditions")
    args = ap.parse_args(argv)
    srcs = args.source or ([_default_source()] if _default_source() is not None else [])
    if not srcs or not all(s.is_dir() for s in srcs):
        print("campaign_e2e: skipped: no real run directory (pass --source RUN_DIR or set MPCC_BENCH_RUN)")
        return 0
    if args.copies < 1:
        print("campaign_e2e: --copies must be >= 1", file=sys.stderr)
        return 2

    from analysis.ingest import read_pcap
    from analysis.ingest.parallel import find_captures, ingest_many
    if args.reference_metrics:
        _use_reference_metrics()
    try:
        from analysis.dataset import load_campaign
    except ImportError:  # the dataset loader is not there yet: only the ingest part is timed
        load_campaign = None

    base = Path(tempfile.mkdtemp(prefix="mpcc-bench-e2e-", dir=args.out))
    camp = base / "campaign"
    old_env = os.environ.get("MPCC_CACHE_DIR")
    try:
        t_build, caps = _time(lambda: [c for src in srcs for c in build_campaign(src, camp, args.copies)])
        per_copy = {f"{p.parent.name}/{p.name}": len(read_pcap(p, cache=False))
                    for p in caps if p.parent.name.endswith("copy000")}
        packets = sum(per_copy.values()) * args.copies
        jobs = args.jobs or os.cpu_count()
        res = {"metrics": "reference" if args.reference_metrics else "current", "sources": [str(s) for s in srcs], "copies": args.copies, "runs": len(srcs) * args.copies,
               "captures": len(caps), "packets": packets, "packets_per_source_copy": per_copy, "jobs": jobs,
               "cpus": os.cpu_count(), "loadavg_before": os.getloadavg()[0], "build_s": t_build,
               "bytes": sum(p.stat().st_size for p in caps)}

        if load_campaign is not None:
            os.environ.pop("MPCC_CACHE_DIR", None)
            df = _timed(res, "load_cold_nocache_s", lambda: load_campaign(camp, jobs=jobs, progress=True))
            res["loadavg_after_nocache"] = os.getloadavg()[0]
            for d in (camp / "runs").glob("*/derived"):
                shutil.rmtree(d)
            os.environ["MPCC_CACHE_DIR"] = str(base / "packets-lc")
            df = _timed(res, "load_cold_s", lambda: load_campaign(camp, jobs=jobs, progress=True))
            res["rows"] = int(len(df))
            _timed(res, "load_warm_s", lambda: load_campaign(camp, jobs=jobs, progress=False))
            for d in (camp / "runs").glob("*/derived"):
                shutil.rmtree(d)
            _timed(res, "load_pktcache_s", lambda: load_campaign(camp, jobs=jobs, progress=False))
        else:
            res["load_campaign"] = "TODO: analysis.dataset.load_campaign not available; only ingest timed"

        cdir = base / "packets-ingest"
        found = find_captures([camp])
        _timed(res, "ingest_cold_s", lambda: ingest_many(found, jobs=jobs, cache_dir=cdir))
        recs = _timed(res, "ingest_warm_s", lambda: ingest_many(found, jobs=jobs, cache_dir=cdir, progress=False))
        res["ingest_failed"] = sum(1 for r in recs if r["error"])
        res["loadavg_after"] = os.getloadavg()[0]
    finally:
        if old_env is None:
            os.environ.pop("MPCC_CACHE_DIR", None)
        else:
            os.environ["MPCC_CACHE_DIR"] = old_env
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)

    if args.json:
        print(json.dumps(res, indent=1))
        return 0
    n = res["packets"]
    if args.reference_metrics:
        print("METRICS: frozen pre-vectorising reference code (tests/reference_metrics_slow.py)")
    print(f"synthetic campaign: {args.copies} copies of each of {', '.join(str(s) for s in srcs)}")
    for name, k in res["packets_per_source_copy"].items():
        print(f"  {name}: {k:,} packets per copy")
    print(f"  {res['captures']} captures, {res['bytes'] / 1e6:.0f} MB, {n:,} TCP/UDP packets; jobs={jobs} on "
          f"{res['cpus']} CPUs, load avg {res['loadavg_before']:.2f} -> {res['loadavg_after']:.2f}")
    rows = [("ingest_many cold (decode + cache write)", "ingest_cold_s"), ("ingest_many warm", "ingest_warm_s")]
    if load_campaign is not None:
        rows = [("load_campaign cold, no packet cache", "load_cold_nocache_s"),
                ("load_campaign cold (packet cache written)", "load_cold_s"),
                ("load_campaign warm (derived/ valid)", "load_warm_s"),
                ("load_campaign, derived/ removed, packet cache warm", "load_pktcache_s")] + rows
    else:
        print(f"  {res['load_campaign']}")
    scale = FULL_CAMPAIGN_PACKETS / n if n else float("nan")
    print(f"  extrapolation factor to a 400 M-packet campaign: 400e6 / {n:,} = {scale:,.1f}")
    print(f"  {'':<52} {'wall':>8}    {'':>7}          {'CPU':>7}  {'pkt/CPU-s':>9}  "
          f"{'400 M: wall x f':>15}  {'CPU x f / ' + str(jobs) + ' cores':>17}")
    for label, key in rows:
        t, c = res[key], res[key + "_cpu"]
        print(f"  {label:<52} {t:8.2f} s  {n / t / 1e6:7.2f} M pkt/s  {c:7.2f} s  {n / c / 1e6:7.2f} M  "
              f"{t * scale / 60:11.1f} min  {c * scale / jobs / 60:13.1f} min")
    print("  (wall x f: this machine as loaded during the run; CPU x f / cores: the same work on dedicated cores, "
          "assuming it parallelises perfectly)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
