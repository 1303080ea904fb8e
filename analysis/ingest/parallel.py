"""Campaign-wide parallel ingest: decode many captures into the Parquet packet cache (``analysis.ingest.cache``).

Workers decode and write the cache; only a small summary per capture travels back (never the tables), so the
cost is the decoding itself.  Backends: a local process pool (``jobs`` processes), or dask.distributed when a
scheduler address is given (``tcp://host:port``; every worker must see the captures and the cache directory at
the same paths, e.g. a shared filesystem).  Both produce the same cache entries (content-keyed).
"""
from __future__ import annotations

import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from tqdm import tqdm

CAPTURE_SUFFIXES = tuple(f"{base}{z}" for base in (".pcap", ".pcapng", ".cap") for z in ("", ".gz", ".xz"))


class DaskMissingError(RuntimeError):
    """--scheduler given but dask.distributed is not importable."""


def find_captures(paths) -> list[Path]:
    """Capture files named by ``paths``: files as given, directories searched recursively for *.pcap[.gz|.xz],
    *.pcapng[.gz|.xz] and *.cap[.gz|.xz] (``derived/`` directories skipped).  Sorted, duplicates removed."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            for f in sorted(p.rglob("*")):
                if f.is_file() and f.name.endswith(CAPTURE_SUFFIXES) and "derived" not in f.relative_to(p).parts:
                    out.append(f)
        else:
            out.append(p)
    seen, uniq = set(), []
    for f in out:
        k = os.path.realpath(f)
        if k not in seen:
            seen.add(k)
            uniq.append(f)
    return uniq


def ingest_one(path, engine: str = "auto", cache_dir=None) -> dict:
    """Decode one capture into the cache; returns {"path", "packets", "seconds", "error", "warnings", "cached"}."""
    from analysis.errors import AnalysisError
    from analysis.ingest import read_pcap
    t0 = time.perf_counter()
    rec = {"path": str(path), "packets": 0, "seconds": 0.0, "error": None, "warnings": [], "cached": False}
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            df = read_pcap(path, engine=engine, cache=cache_dir if cache_dir is not None else True)
        rec["packets"] = int(len(df))
        rec["warnings"] = [str(w.message) for w in caught]
    except (AnalysisError, OSError) as exc:
        rec["error"] = str(exc) if isinstance(exc, AnalysisError) else f"{path}: {exc.strerror or exc}"
    rec["seconds"] = time.perf_counter() - t0
    return rec


def ingest_many(paths, *, jobs: int | None = None, scheduler: str | None = None, engine: str = "auto",
                cache_dir=None, progress: bool = True) -> list[dict]:
    """Decode every capture in ``paths`` (files) into the cache; one summary dict per capture, input order.
    Captures whose cache entry is valid (same size, mtime and inode as when it was made) are not decoded again.

    ``jobs``: local worker processes (default ``os.cpu_count()``; 1 = in this process).  ``scheduler``: a
    dask.distributed scheduler address; raises ``DaskMissingError`` if dask.distributed is not installed."""
    paths = [str(p) for p in paths]
    cache_dir = str(cache_dir) if cache_dir is not None else None
    bar = tqdm(total=len(paths), unit="capture", desc="ingest", disable=not progress, file=sys.stderr)
    results: dict[int, dict] = {}

    def done(i, rec):
        results[i] = rec
        bar.update(1)
        bar.set_postfix_str(f"{sum(r['packets'] for r in results.values()):,} pkts", refresh=False)

    # captures already in the cache (unchanged since: stat index) are answered here, without any worker
    from analysis.ingest import cache as pcache
    cdir = Path(cache_dir) if cache_dir is not None else pcache.default_cache_dir()
    todo = []
    for i, p in enumerate(paths):
        sha = pcache.known_sha256(cdir, p)
        hit = pcache.entry_summary(cdir, sha) if sha else None
        if hit is None:
            todo.append(i)
        else:
            done(i, {"path": p, "packets": int(hit[0]), "seconds": 0.0, "error": None, "warnings": hit[1],
                     "cached": True})
    try:
        if not todo:
            pass
        elif scheduler:
            try:
                from dask.distributed import Client, as_completed as das_completed
            except ImportError:
                raise DaskMissingError('--scheduler needs dask.distributed: pip install "dask[distributed]"') from None
            with Client(scheduler) as client:
                futs = {client.submit(ingest_one, paths[i], engine, cache_dir, pure=False): i for i in todo}
                for fut in das_completed(futs):
                    done(futs[fut], fut.result())
        elif (jobs or os.cpu_count() or 1) <= 1 or len(todo) <= 1:
            for i in todo:
                done(i, ingest_one(paths[i], engine, cache_dir))
        else:
            # big captures first: better load balance
            order = sorted(todo, key=lambda i: -_size(paths[i]))
            with ProcessPoolExecutor(max_workers=min(jobs or os.cpu_count() or 1, len(todo))) as ex:
                futs = {ex.submit(ingest_one, paths[i], engine, cache_dir): i for i in order}
                for fut in as_completed(futs):
                    done(futs[fut], fut.result())
    finally:
        bar.close()
    return [results[i] for i in range(len(paths))]


def _size(p) -> int:
    try:
        return os.path.getsize(p)
    except OSError:
        return 0
