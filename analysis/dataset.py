"""Campaign dataset: one tidy row per (run, flow) of a campaign directory, with the run's parameters and metrics.

``load_campaign(DIR)`` walks ``DIR/runs/<run_id>/`` (layout: docs/architecture.md). Only runs with ``COMPLETE``
give metric rows; every run directory found (complete, skipped with its SKIPPED reason, incomplete) is listed in
``df.attrs["runs"]`` / :func:`run_status`, so nothing is silently mixed in or dropped.

The rows of each study family (columns, units) are its module's: ``analysis.families`` (study 000:
``analysis.families.roundrobin``). This module is the pipeline they share: listing, cache, loading.

Cache: ``RUN_DIR/derived/flows.parquet`` + ``RUN_DIR/derived/fingerprint.json`` (size, mtime and sha256 of every
input file plus the loader's version). A run is re-analysed only when an input's content changed: equal
size+mtime is trusted without re-hashing, and a changed size or mtime with an equal sha256 is not a change (the
sha256 of a gzip'd capture is that of its decompressed content, so gzip'ing captures keeps the cache valid). When the raw captures
are absent but ``derived/`` exists, the derived rows are used as they are. ``derived_dir=DIR`` puts the cache in
``DIR/<run_id>/`` instead (for campaign directories that must stay read-only).

A columnar bundle (bundle.json ``"format": "columnar/1"``, ``analysis.bundle_store``) has no run directories: its
rows and runs listing are read from its Parquet tables, the same as those of the run-directory bundle it was made from.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import warnings
from pathlib import Path

import pandas as pd

from analysis.errors import AnalysisError, AnalysisWarning
from analysis import runmeta

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


def _columnar(campaign_dir) -> bool:
    """``campaign_dir`` is a columnar bundle (``analysis.bundle_store``; AnalysisError for an unknown format)."""
    from analysis import bundle_store
    return bundle_store.is_columnar(campaign_dir)


def campaign_family_id(campaign_dir) -> str:
    """The study family of a campaign directory or bundle: the family of its first run (a campaign file names one
    family, so all its runs share it), "000" for an empty campaign."""
    from analysis.families import family_of_run
    if _columnar(campaign_dir):
        from analysis import bundle_store
        return bundle_store.family_id(campaign_dir)
    dirs = _run_dirs(campaign_dir)
    return family_of_run(dirs[0]) if dirs else "000"


def campaign_name(campaign_dir) -> str:
    """The campaign name a campaign directory or bundle records (campaign.json ``name``, else bundle.json
    ``campaign``), "" if neither says."""
    for name, key in (("campaign.json", "name"), ("bundle.json", "campaign")):
        try:
            v = json.loads((Path(campaign_dir) / name).read_text()).get(key)
        except (OSError, ValueError, AttributeError):
            continue
        if v:
            return str(v)
    return ""


def campaign_family(campaign_dir):
    """The analysis module (``analysis.families``) of a campaign directory's study family (:func:`campaign_family_id`)."""
    from analysis.families import get
    return get(campaign_family_id(campaign_dir))


def listing(records, cols) -> pd.DataFrame:
    """The runs table of :func:`run_status` from ``records`` (run_id, status, reason, parameters dict) in that order:
    columns ``cols`` (a family's ``RUNS_COLUMNS``: run_id, status, reason, then parameters)."""
    return pd.DataFrame([{"run_id": rid, "status": status, "reason": reason, **{k: p.get(k) for k in cols[3:]}}
                         for rid, status, reason, p in records], columns=cols)


def run_status(campaign_dir) -> pd.DataFrame:
    """Every run directory of ``campaign_dir/runs/``: run_id, status (complete | skipped | incomplete), reason
    (SKIPPED's text; "no COMPLETE marker" for incomplete ones; "superseded: ..." for directories moved aside as
    ``<run_id>.incomplete-<suffix>``, which never count as results whatever markers they hold), and the run's parameters from params.json where readable.
    A columnar bundle (``analysis.bundle_store``) lists the runs it holds, as the run-directory bundle it was made from."""
    cols = campaign_family(campaign_dir).RUNS_COLUMNS
    if _columnar(campaign_dir):
        from analysis import bundle_store
        return bundle_store.run_status(campaign_dir, cols)
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
        rows.append((d.name, status, reason, p))
    return listing(rows, cols)


def run_metas(campaign_dir):
    """(run_id, meta.json as a dict, {} where a run has none or it is unreadable) for every run of ``campaign_dir``
    that is not a superseded ``.incomplete-`` directory, from run directories or a columnar bundle."""
    if _columnar(campaign_dir):
        from analysis import bundle_store
        runs = bundle_store.read_table(campaign_dir, "runs", columns=["meta_json"])
        for rid, text in zip(runs["run_id"], runs["meta_json"]):
            try:
                meta = json.loads(text) if isinstance(text, str) and text else {}   # null: a run without meta.json
            except ValueError:
                meta = {}
            yield rid, meta if isinstance(meta, dict) else {}
        return
    for d in _run_dirs(campaign_dir):
        if ".incomplete-" in d.name:
            continue
        try:
            meta = runmeta.read_meta(d)
        except AnalysisError:
            meta = {}
        yield d.name, meta if isinstance(meta, dict) else {}


def complete_markers(campaign_dir) -> dict[str, str]:
    """{run_id: its COMPLETE marker's text (the capture tool's UTC end time)} for every run with one that is not a
    superseded ``.incomplete-`` directory, from run directories or a columnar bundle's runs table (no run is
    materialised). Which runs count as complete is :func:`run_status`'s."""
    if _columnar(campaign_dir):
        from analysis import bundle_store
        runs = bundle_store.read_table(campaign_dir, "runs", columns=["status", "marker"])
        done = runs[runs["status"] == "complete"]
        return {rid: m for rid, m in zip(done["run_id"], done["marker"]) if isinstance(m, str)}
    out = {}
    for d in _run_dirs(campaign_dir):
        if ".incomplete-" not in d.name and (d / "COMPLETE").is_file():
            out[d.name] = (d / "COMPLETE").read_text()
    return out


def run_hosts(campaign_dir, metas=None) -> pd.DataFrame:
    """The host and kernel that recorded each run of ``campaign_dir`` (``runmeta.recorded_on``: meta.json, else
    the first line of runner.log): columns run_id, host, kernel (None where not recorded). ``metas``: the
    :func:`run_metas` pairs when the caller has read them already. A campaign recorded on several hosts (``mpcc
    campaign run --scheduler``) is audited with ``analysis.stats.host_effect``."""
    metas = run_metas(campaign_dir) if metas is None else metas
    runs = None if _columnar(campaign_dir) else Path(campaign_dir) / "runs"
    recs = []
    for rid, meta in metas:
        need_log = runs is not None and (meta.get("host") is None or meta.get("kernel") is None)
        recs.append({"run_id": rid, **runmeta.recorded_on(meta, runmeta.runner_log_head(runs / rid) if need_log
                                                             else None)})
    return pd.DataFrame(recs, columns=["run_id", "host", "kernel"])


# ------------------------------------------------------------------------------------------------ cache

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
    if fam is None:
        from analysis.families import get
        fam = get("000")
    df = _with_columns(pd.read_parquet(ddir / "flows.parquet"), fam)
    return fam.typed(df) if typed else df


def _with_columns(df: pd.DataFrame, fam) -> pd.DataFrame:
    """``df`` with the family's columns in order, NaN for those it lacks (rows cached before they existed)."""
    missing = [c for c in fam.COLUMNS if c not in df.columns]
    if missing:
        df = df.assign(**dict.fromkeys(missing, NAN))
    return df[fam.COLUMNS]


def _filled_without_captures(run_dir: Path, ddir: Path, df: pd.DataFrame, fam, typed: bool) -> pd.DataFrame:
    """Cached rows of a run without its captures: when they are of an older definition version than the family's
    and the family can recompute some columns from the run's small files (``fill_without_captures``, e.g. the
    dual-path family's ping columns), those columns recomputed; else ``df`` as it is."""
    from analysis.ingest.compressed import open_decompressed
    fill = getattr(fam, "fill_without_captures", None)
    try:
        version = json.loads((ddir / "fingerprint.json").read_text()).get("version")
    except (OSError, ValueError, AttributeError):
        version = None
    if fill is None or version == fam.DERIVED_VERSION:
        return df

    def read_file(rel: str) -> bytes | None:
        p = runmeta.capture_path(run_dir, rel)      # plain or compressed
        if p is None:
            return None
        with open_decompressed(p) as f:
            return f.read()

    meta = runmeta._read_json(run_dir / "meta.json") or {}
    out = _with_columns(fill(df, read_file, meta), fam)
    return fam.typed(out) if typed else out


def cached_rows(run_dir, derived_root=None, typed: bool = True) -> pd.DataFrame | None:
    """The cached rows of ``run_dir`` when the cache is valid (or raw captures are absent), else None."""
    run_dir = Path(run_dir)
    ddir = run_cache_dir(run_dir, derived_root)
    pq = ddir / "flows.parquet"
    if not pq.is_file():
        return None
    fam = _family(run_dir)
    if not fam.has_raw(run_dir):
        return _filled_without_captures(run_dir, ddir, _read_cached(ddir, typed, fam), fam, typed)
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
    A columnar bundle (bundle.json ``"format": "columnar/1"``, ``analysis.bundle_store``) gives the same rows and
    listing as the run-directory bundle it was made from, read from its Parquet tables.
    """
    jobs = (os.cpu_count() or 1) if jobs is None else int(jobs)
    if jobs < 1:
        raise AnalysisError(f"jobs must be >= 1, got {jobs}")
    if _columnar(campaign_dir):
        from analysis import bundle_store
        frames, runs = bundle_store.rows_and_runs(campaign_dir, jobs=jobs, derived_dir=derived_dir)
        return _assemble(frames, runs, campaign_family(campaign_dir), campaign_dir)
    from tqdm import tqdm

    runs = run_status(campaign_dir)
    root = _runs_root(campaign_dir)
    complete = [root / r for r in runs.loc[runs["status"] == "complete", "run_id"]]
    parts, reasons = {}, {}
    with tqdm(total=len(complete), unit="run", desc="load_campaign", file=sys.stderr, disable=not progress) as bar:
        it = (_map_dask(complete, scheduler, derived_dir, bar) if scheduler
              else _map_local(complete, jobs, derived_dir, bar))
        for d, (df, reason) in it:
            if df is not None:
                parts[d.name] = df
            if reason:
                reasons[d.name] = reason
    runs = with_reasons(runs, reasons)
    return _assemble([parts[k] for k in sorted(parts)], runs, campaign_family(campaign_dir), campaign_dir)


def with_reasons(runs: pd.DataFrame, reasons: dict) -> pd.DataFrame:
    """``runs`` (a :func:`run_status` table) with the reasons of ``reasons`` ({run_id: reason}) set."""
    if not reasons:
        return runs
    runs = runs.copy()
    m = runs["run_id"].isin(list(reasons))
    runs.loc[m, "reason"] = runs.loc[m, "run_id"].map(reasons)
    return runs


def _assemble(frames: list, runs: pd.DataFrame, fam, campaign_dir) -> pd.DataFrame:
    """The campaign's rows: ``frames`` (per-run or per-partition rows) concatenated, typed once, sorted by the
    family's ``SORT``, with ``attrs`` runs and campaign_dir."""
    with warnings.catch_warnings():  # all-NA columns in some runs' rows: typed() sets every column's dtype below
        warnings.simplefilter("ignore", FutureWarning)
        df = fam.typed(pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=fam.COLUMNS))
    df = df.sort_values(fam.SORT, kind="stable").reset_index(drop=True)
    df.attrs["runs"] = runs
    df.attrs["campaign_dir"] = str(Path(campaign_dir))
    return df


# ------------------------------------------------------------------------------------------------ family interface
# study 000's rows are this module's own (analysis.families): the names every family module provides
