"""`mpcc ingest CAPTURE_OR_CAMPAIGN_DIR... [--jobs N] [--scheduler ADDRESS] [--engine E]`: fill the packet cache.

Decodes every capture (directories are searched recursively for *.pcap, *.pcap.gz, *.pcapng[.gz]) into the
Parquet packet cache (``analysis.ingest.cache``: ``$MPCC_CACHE_DIR``, default ``<repo>/data/processed/packets``),
in parallel, with a progress bar; later ``read_pcap`` calls (and the campaign loader) then read the cache.
"""
from __future__ import annotations

import json
import sys
import time

from mpcc.errors import UserError

NAME = "ingest"
HELP = "decode captures (files or campaign directories) into the Parquet packet cache, in parallel"
_ENGINES = ("auto", "fast", "dpkt")


def add_arguments(parser):
    parser.add_argument("paths", nargs="+", metavar="CAPTURE_OR_CAMPAIGN_DIR",
                        help="capture files (pcap, pcapng, optionally .gz) or directories to search")
    parser.add_argument("--jobs", "-j", type=int, default=None, help="worker processes (default: CPU count)")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="dask.distributed scheduler (tcp://host:port) instead of local processes")
    parser.add_argument("--engine", default="auto", help="decoder: auto (default), fast or dpkt")
    parser.add_argument("--cache-dir", default=None,
                        help="cache directory (default: $MPCC_CACHE_DIR or <repo>/data/processed/packets)")
    parser.add_argument("--json", action="store_true", help="print one JSON summary object")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args) -> int:
    from pathlib import Path

    from analysis.ingest import cache as pcache
    from analysis.ingest.parallel import DaskMissingError, find_captures, ingest_many

    if args.engine not in _ENGINES:
        raise UserError(f"--engine must be one of {', '.join(_ENGINES)}, not {args.engine!r}")
    if args.jobs is not None and args.jobs < 1:
        raise UserError("--jobs must be >= 1")
    for p in args.paths:
        if not Path(p).exists():
            raise UserError(f"{p}: no such file or directory")
    captures = find_captures(args.paths)
    if not captures:
        raise UserError(f"no captures (*.pcap, *.pcap.gz, *.pcapng) found under {' '.join(args.paths)}")
    cache_dir = Path(args.cache_dir) if args.cache_dir else pcache.default_cache_dir()
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{cache_dir}: cannot create the cache directory ({exc.strerror})") from None
    t0 = time.perf_counter()
    try:
        recs = ingest_many(captures, jobs=args.jobs, scheduler=args.scheduler, engine=args.engine,
                           cache_dir=cache_dir, progress=not args.no_progress and len(captures) > 1)
    except DaskMissingError as exc:
        raise UserError(str(exc)) from None
    except OSError as exc:  # e.g. the dask scheduler cannot be reached
        raise UserError(f"{args.scheduler}: {exc}") from None
    wall = time.perf_counter() - t0
    failed = [r for r in recs if r["error"]]
    packets = sum(r["packets"] for r in recs)
    summary = {"captures": len(recs), "failed": len(failed), "packets": packets, "seconds": round(wall, 3),
               "packets_per_s": round(packets / wall) if wall > 0 else None, "cache_dir": str(cache_dir),
               "warnings": sum(len(r["warnings"]) for r in recs),
               "already_cached": sum(1 for r in recs if r.get("cached"))}
    for r in recs:  # caught in the workers (ingest_one): each is printed here, once
        for w in r["warnings"]:
            print(f"mpcc: warning: {w}", file=sys.stderr)
    for r in failed:
        print(f"mpcc: error: {r['error']}", file=sys.stderr)
    if args.json:
        summary["errors"] = [r["error"] for r in failed]
        print(json.dumps(summary))
    else:
        print(f"{len(recs) - len(failed)}/{len(recs)} captures ({summary['already_cached']} already cached), "
              f"{packets:,} packets in {wall:.1f} s ({summary['packets_per_s'] or 0:,} packets/s) -> {cache_dir}")
    return 1 if failed else 0
