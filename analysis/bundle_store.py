"""Columnar bundles (bundle.json ``"format": "columnar/1"``): a bundled campaign in a handful of Parquet files instead
of one directory per run, partitioned by recording session, so that bundling more runs adds files and leaves the
earlier ones byte-identical.

Layout of a columnar bundle (P: a partition, i.e. one recording session of campaign.json ``sessions``, named from
its ``started_utc``, e.g. ``s20261124T051711Z``; a run belongs to the last session started at or before its
meta.json ``start_time``; a run started before every session to ``sYYYYMMDD`` of its start day (UTC); a run without
a start time, e.g. one SKIPPED before meta.json was written, to ``s-unknown``)::

    bundle.json         the manifest of ``mpcc bundle`` plus "format": "columnar/1" and "partitions": {P: {session
                        (its campaign.json record: started_utc, git_commit, git_dirty, jobs; null for the partitions
                        that are not a session), runs, complete, skipped, files: {path: {bytes, sha256}}}}: the index
                        of every file below
    README.md, campaign.yaml, campaign.json     as in a run-directory bundle
    runs/P.parquet      one row per run: run_id, status (complete | skipped), reason (as ``load_campaign`` lists it),
                        params (JSON of ``runmeta.read_params``: params.json over meta.json's params), and the run's
                        files verbatim as text, null where it has none: params_json, meta_json, marker (the COMPLETE
                        or SKIPPED file), capture_log, fingerprint_json (derived/fingerprint.json without the
                        files' mtime_ns, which every copy changes; derived_version is its "version", -1 without one)
    rows/P.parquet      the study family's rows (``load_campaign``'s columns and types) of P's complete runs
    ss/P.parquet        run_id, path (relative to the run directory: "ss/flow1.txt"), content (bytes, decompressed)
    iperf3/P.parquet    run_id, path ("iperf3/flow1-server.json"), content
    files/P.parquet     run_id, path, content: every other file of the run (ping/, switches/, nstat/, links/, video/,
                        background/ ...)
    captures/RUN_ID/    the raw captures of the runs that ship them, as they are in the run directory (*.pcap.xz)

A table without rows in P has no file. Parquet is written with zstd (level 19), without statistics or pandas/Arrow
schema metadata, rows sorted, so the same content gives the same bytes; and an existing partition file whose
content is unchanged is kept as it is (a new pyarrow, whose version the Parquet footer records, rewrites nothing).
A run found in two partitions counts from the later one.

Reading: ``analysis.dataset.load_campaign`` / ``run_status`` detect the format and call :func:`rows_and_runs` /
:func:`run_status`; :func:`materialize` recreates run directories for code that needs them (``mpcc campaign run
--resume-from``), :func:`run_dir` / :func:`resolve_run_dir` give one from a cache (``data/processed/bundles/``).
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
import tempfile
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from analysis import runmeta
from analysis.errors import AnalysisError

FORMAT = "columnar/1"
TABLES = ("runs", "rows", "ss", "iperf3", "files")
FILE_TABLES = ("ss", "iperf3", "files")
ZSTD_LEVEL = 19
UNKNOWN = "s-unknown"
MARKERS = ("COMPLETE", "SKIPPED")
RUN_FILES = ("params.json", "meta.json", "capture.log") + MARKERS   # stored in the runs table
BOOL_COLUMNS = ("self_check_ok",)   # the one non-text object column of every family's rows
REPO = Path(__file__).resolve().parents[1]
RUNS_SCHEMA = pa.schema([("run_id", pa.string()), ("status", pa.string()), ("reason", pa.string()),
                         ("params", pa.string()), ("params_json", pa.string()), ("meta_json", pa.string()),
                         ("marker", pa.string()), ("capture_log", pa.string()), ("fingerprint_json", pa.string()),
                         ("derived_version", pa.int64())])
FILES_SCHEMA = pa.schema([("run_id", pa.string()), ("path", pa.string()), ("content", pa.binary())])
_BIG = ("content", "params", "params_json", "meta_json", "marker", "capture_log", "fingerprint_json")


# ------------------------------------------------------------------------------------------------ format

def manifest(bundle) -> dict | None:
    """``bundle/bundle.json`` as a dict, None without one; AnalysisError (one line) when unreadable."""
    f = Path(bundle) / "bundle.json"
    if not f.is_file():
        return None
    try:
        m = json.loads(f.read_text())
    except (OSError, ValueError) as exc:
        raise AnalysisError(f"{f}: unreadable bundle manifest ({exc})") from None
    if not isinstance(m, dict):
        raise AnalysisError(f"{f}: not a bundle manifest (no JSON object)")
    return m


def bundle_format(bundle) -> str | None:
    """The bundle's format: :data:`FORMAT`, or None for run directories (``runs/<run_id>/``, also a campaign
    directory without bundle.json); AnalysisError for a format this code does not know."""
    m = manifest(bundle)
    fmt = None if m is None else m.get("format")
    if fmt not in (None, FORMAT):
        raise AnalysisError(f"{bundle}: bundle format {fmt!r} is unknown to this code (it reads {FORMAT} and run "
                            "directories): update the checkout")
    return fmt


def is_columnar(bundle) -> bool:
    return bundle_format(bundle) == FORMAT


# ------------------------------------------------------------------------------------------------ partitions

def _name(t) -> str:
    """The partition name of a session started at ``t`` (aware datetime): ``s20261124T051711Z``."""
    return "s" + t.strftime("%Y%m%dT%H%M%SZ")


def session_starts(campaign_json: dict) -> dict:
    """{partition name: session record} of campaign.json's ``sessions`` with a readable ``started_utc``."""
    out = {}
    for s in campaign_json.get("sessions") or []:
        try:
            out[_name(runmeta.utc_time(s["started_utc"]))] = s
        except (KeyError, TypeError, ValueError):
            continue
    return out


def partition_of(start_time, sessions) -> str:
    """The partition of a run started at ``start_time`` (meta.json's ISO UTC stamp, or None) given ``sessions``
    (names of :func:`session_starts`): the last session started at or before it, else its day ``sYYYYMMDD``, and
    ``s-unknown`` without a readable start."""
    try:
        t = runmeta.utc_time(start_time)
    except (TypeError, ValueError):
        return UNKNOWN
    before = [s for s in sessions if s <= _name(t)]
    return max(before) if before else "s" + t.strftime("%Y%m%d")


# ------------------------------------------------------------------------------------------------ writing

def check_out(out, force: bool) -> None:
    """Refuse to write a bundle at ``out`` when it holds anything but a bundle, or a bundle without ``force``."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        if not force:
            raise AnalysisError(f"{out} exists and is not empty: use --force to replace a previous bundle")
        if not (out / "bundle.json").is_file():
            raise AnalysisError(f"{out} is not a bundle (no bundle.json): refusing to replace it")


def replace_dir(tmp: Path, out: Path) -> None:
    """Move the finished bundle ``tmp`` to ``out``, replacing what is there (same file system: two renames)."""
    if out.exists():
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        out.rename(old)
        tmp.rename(out)
        shutil.rmtree(old)
    else:
        tmp.rename(out)


def _text(path: Path) -> str | None:
    """The text of ``path`` or of its ``.xz`` / ``.gz`` form, None when neither exists."""
    for cand in (path, path.with_name(path.name + ".xz"), path.with_name(path.name + ".gz")):
        if cand.is_file():
            try:
                return _content(cand).decode("utf-8")
            except UnicodeDecodeError:
                raise AnalysisError(f"{cand}: not UTF-8 text") from None
    return None


def _content(path: Path) -> bytes:
    """The bytes of ``path``, decompressed when it is a .xz or .gz file."""
    from analysis.ingest.compressed import open_decompressed
    if path.suffix not in (".xz", ".gz"):
        return path.read_bytes()
    with open_decompressed(path) as f:
        return f.read()


def _plain(rel: str) -> str:
    """A run file's path without the .xz / .gz a bundle adds."""
    return rel[:-3] if rel.endswith((".xz", ".gz")) else rel


def _is_capture(rel: str) -> bool:
    return "/" not in rel and _plain(rel).endswith((".pcap", ".pcapng"))


def _members(run_dir: Path) -> tuple[dict, list[Path]]:
    """({table: [(path, bytes)]}, capture files) of a run directory: every file but those of the runs table and
    ``derived/``, decompressed under its plain path (a plain file wins over a compressed copy); captures as they are."""
    out = {t: {} for t in FILE_TABLES}
    caps = []
    for f in sorted(run_dir.rglob("*")):
        rel = f.relative_to(run_dir).as_posix()
        if not f.is_file() or _plain(rel) in RUN_FILES or rel.startswith("derived/"):
            continue
        if _is_capture(rel):
            caps.append(f)
            continue
        top = rel.split("/")[0]
        table = top if top in ("ss", "iperf3") and "/" in rel else "files"
        if rel != _plain(rel) and _plain(rel) in out[table]:
            continue
        out[table][_plain(rel)] = _content(f)
    return {t: sorted(v.items()) for t, v in out.items()}, caps


def _fingerprint(path: Path) -> tuple[str | None, int]:
    """(text, version) of a derived/fingerprint.json without its files' ``mtime_ns``: a file's mtime changes with every
    copy (a checkout, a restored campaign), so keeping it would change a partition each time the same runs are
    bundled again; size and sha256 stay (``analysis.dataset`` compares the sha256 when size or mtime differ).
    (None, -1) without one; an unreadable one is kept verbatim."""
    text = _text(path)
    try:
        fp = json.loads(text)
        for e in (fp.get("files") or {}).values():
            e.pop("mtime_ns", None)
        return json.dumps(fp, indent=1, sort_keys=True), int(fp["version"])
    except (ValueError, KeyError, TypeError, AttributeError):
        return text, -1


def _run_record(run_dir: Path, status: str, reason: str, derived_root=None) -> dict:
    """The runs-table row of one run directory (module docstring)."""
    try:
        params = runmeta.read_params(run_dir)
    except AnalysisError:
        params = {}
    from analysis.dataset import run_cache_dir
    fp, version = _fingerprint(run_cache_dir(run_dir, derived_root) / "fingerprint.json")
    marker = "COMPLETE" if status == "complete" else "SKIPPED"
    return {"run_id": run_dir.name, "status": status, "reason": reason or "",
            "params": json.dumps(params, sort_keys=True), "params_json": _text(run_dir / "params.json"),
            "meta_json": _text(run_dir / "meta.json"), "marker": _text(run_dir / marker),
            "capture_log": _text(run_dir / "capture.log"), "fingerprint_json": fp, "derived_version": version}


def rows_schema(fam) -> pa.Schema:
    """The Arrow schema of a family's rows: float64 and int64 as ``fam.typed`` makes them, bool for
    :data:`BOOL_COLUMNS`, string for the rest (text)."""
    empty = fam.typed(pd.DataFrame({c: pd.Series(dtype=object) for c in fam.COLUMNS}))
    kind = {"f": pa.float64(), "i": pa.int64(), "u": pa.int64()}
    return pa.schema([(c, pa.bool_() if c in BOOL_COLUMNS else kind.get(empty[c].dtype.kind, pa.string()))
                      for c in fam.COLUMNS])


def rows_table(rows: pd.DataFrame, fam) -> pa.Table:
    """``rows`` (a family's typed rows) as an Arrow table of :func:`rows_schema`, without pandas metadata; columns the
    rows lack (stored under an older definition version) are null."""
    from analysis.dataset import _with_columns
    rows = _with_columns(rows, fam).reset_index(drop=True)
    rows.attrs = {}   # load_campaign's runs listing: not part of the rows
    try:
        return pa.Table.from_pandas(rows, schema=rows_schema(fam), preserve_index=False).replace_schema_metadata(None)
    except (pa.ArrowException, ValueError, TypeError) as exc:
        raise AnalysisError(f"rows do not fit the family's column types: {str(exc).splitlines()[0]}") from None


def _files_table(items: list) -> pa.Table:
    """(run_id, path, bytes) items as a table of :data:`FILES_SCHEMA`, sorted."""
    items = sorted(items)
    return pa.table([pa.array([i[0] for i in items], pa.string()), pa.array([i[1] for i in items], pa.string()),
                     pa.array([i[2] for i in items], pa.binary())], schema=FILES_SCHEMA)


def _write_parquet(table: pa.Table, dst: Path, level: int = ZSTD_LEVEL) -> None:
    """Deterministic Parquet: zstd, no statistics, no embedded schema; dictionaries for the small columns only."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, dst, compression="zstd", compression_level=level, write_statistics=False,
                   store_schema=False, use_dictionary=[c for c in table.column_names if c not in _BIG])


def _same_content(path: Path, table: pa.Table) -> bool:
    try:
        return pq.read_table(path).equals(table)
    except (OSError, pa.ArrowException):
        return False


def _write_or_keep(table: pa.Table, dst: Path, previous: Path | None, level: int) -> None:
    """Write ``table`` to ``dst``, or copy ``previous`` (the file of the bundle being replaced) when it holds the same
    content, so that an unchanged partition keeps its bytes whatever the pyarrow version."""
    if previous is not None and previous.is_file() and _same_content(previous, table):
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(previous, dst)
    else:
        _write_parquet(table, dst, level)


def _file_entry(path: Path) -> dict:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return {"bytes": path.stat().st_size, "sha256": h.hexdigest()}


def _partition_tables(src: Path, ids: list, status: dict, df: pd.DataFrame, fam) -> tuple[dict, dict]:
    """({table: Arrow table}, {run_id: capture files}) of the runs ``ids`` of the run-directory bundle ``src``."""
    recs, items, caps = [], {t: [] for t in FILE_TABLES}, {}
    for rid in ids:
        d = src / "runs" / rid
        recs.append(_run_record(d, *status[rid]))
        members, caps[rid] = _members(d)
        for t, v in members.items():
            items[t] += [(rid, path, content) for path, content in v]
    tables = {"runs": pa.Table.from_pylist(sorted(recs, key=lambda r: r["run_id"]), schema=RUNS_SCHEMA),
              "rows": rows_table(df[df["run_id"].isin(ids)], fam)}
    tables.update({t: _files_table(v) for t, v in items.items()})
    return tables, caps


def _write_partition(src: Path, tmp: Path, p: str, ids: list, status: dict, df, fam, previous, level) -> dict:
    """Write partition ``p`` (run ids ``ids``) into ``tmp``; returns its bundle.json entry (without the session)."""
    tables, caps = _partition_tables(src, ids, status, df, fam)
    files = {}
    for name in TABLES:
        if tables[name].num_rows == 0 and name != "runs":
            continue
        rel = f"{name}/{p}.parquet"
        _write_or_keep(tables[name], tmp / rel, previous / rel if previous else None, level)
        files[rel] = _file_entry(tmp / rel)
    for rid in sorted(caps):
        for f in caps[rid]:
            rel = f"captures/{rid}/{f.name}"
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, tmp / rel)
            files[rel] = _file_entry(tmp / rel)
    n = {s: sum(status[r][0] == s for r in ids) for s in ("complete", "skipped")}
    return {"runs": len(ids), **n, "files": files}


def _tree_bytes(d: Path) -> int:
    """Bytes as ``du -sb`` counts them: file sizes plus 4096 per directory."""
    return sum(p.stat().st_size if p.is_file() else 4096 for p in d.rglob("*"))


def _assign(src: Path, ids: list, sessions: dict) -> dict:
    """{partition: [run ids]} of the run directories ``ids`` of ``src``."""
    parts = {}
    for rid in ids:
        start = runmeta.read_meta(src / "runs" / rid).get("start_time")
        parts.setdefault(partition_of(start, sessions), []).append(rid)
    return parts


def source_manifest(src: Path) -> dict:
    """The manifest of the run-directory bundle ``src``; AnalysisError when ``src`` is none."""
    if not src.is_dir():
        raise AnalysisError(f"{src}: no such bundle directory")
    m = manifest(src)
    if m is None or not (src / "runs").is_dir():
        raise AnalysisError(f"{src}: not a bundle (no bundle.json and runs/; bundle a campaign directory with "
                            "mpcc bundle --format columnar)")
    if bundle_format(src) == FORMAT:
        raise AnalysisError(f"{src}: already a {FORMAT} bundle")
    return m


def write_columnar(src, out, *, force: bool = False, readme=None, extra: dict | None = None,
                   level: int = ZSTD_LEVEL, jobs=None, progress: bool = False, digests: bool = False,
                   reuse=None) -> dict:
    """Write the run-directory bundle ``src`` (``mpcc bundle``'s output) as a columnar bundle at ``out`` (layout: module
    docstring) and return its manifest: ``src``'s bundle.json with ``extra``, "format", "partitions" and "size_mb"
    (MB, 1e6 bytes). Complete and skipped runs are stored; rows and reasons are those ``load_campaign(src)`` gives.
    ``readme``: a function manifest -> README.md text (default: ``src``'s README.md). ``out`` is built next to itself
    and moved into place at the end; an existing non-empty ``out`` is replaced only with ``force`` and only if it is
    a bundle; partition files of an ``out`` in this format whose content is unchanged keep their bytes (``reuse``:
    take them from that columnar bundle instead of ``out``). ``digests``: also record the digests of those rows and
    of the runs listing (analysis/bundle_digest.py) as "digests"."""
    from tqdm import tqdm

    from analysis.dataset import campaign_family, load_campaign
    src, out = Path(src), Path(out)
    m = source_manifest(src)
    check_out(out, force)
    df = load_campaign(src, jobs=jobs, progress=progress)
    fam = campaign_family(src)
    runs = df.attrs["runs"]
    runs = runs[runs["status"].isin(["complete", "skipped"])]
    status = {r.run_id: (r.status, r.reason) for r in runs.itertuples()}
    cjson = _json_file(src / "campaign.json")
    sessions = session_starts(cjson)
    parts = _assign(src, sorted(status), sessions)
    previous = out if reuse is None else Path(reuse)
    previous = previous if previous.is_dir() and is_columnar(previous) else None
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.columnar-", dir=out.parent))
    try:
        index = {}
        for p in tqdm(sorted(parts), unit="partition", desc="columnar", disable=not progress):
            index[p] = {"session": sessions.get(p),
                        **_write_partition(src, tmp, p, parts[p], status, df, fam, previous, level)}
        for name in ("campaign.yaml", "campaign.json"):
            if (src / name).is_file():
                shutil.copyfile(src / name, tmp / name)
        if digests:
            from analysis.bundle_digest import rows_digest, runs_digest
            extra = {**(extra or {}), "digests": {
                "rows_sha256": rows_digest(df), "runs_sha256": runs_digest(df),
                "checked": "rows and runs listing of the columnar bundle identical to those of the run-directory "
                           "bundle it was written from (digests)"}}
        m = {**m, **(extra or {}), "format": FORMAT, "partitions": index,
             "size_mb": (_tree_bytes(tmp) + 8000) / 1e6}   # + README/bundle.json
        (tmp / "bundle.json").write_text(json.dumps(m, indent=1, sort_keys=True))
        readme_text = readme(m) if readme else _text(src / "README.md")
        if readme_text is not None:
            (tmp / "README.md").write_text(readme_text)
        replace_dir(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return m


def _json_file(path: Path) -> dict:
    try:
        v = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return v if isinstance(v, dict) else {}


# ------------------------------------------------------------------------------------------------ reading

def _partitions(bundle) -> dict:
    """bundle.json's "partitions" of a columnar bundle, in order (a later partition's run supersedes)."""
    if not is_columnar(bundle):
        raise AnalysisError(f"{bundle}: not a {FORMAT} bundle")
    parts = manifest(bundle).get("partitions")
    if not isinstance(parts, dict):
        raise AnalysisError(f"{Path(bundle) / 'bundle.json'}: no \"partitions\" index")
    return dict(sorted(parts.items()))


def _concat(bundle, table: str, columns=None, run_ids=None) -> pd.DataFrame:
    """Table ``table`` of every partition that has one, with a ``partition`` column (superseded records included);
    ``columns``: only these (and run_id); ``run_ids``: only these runs."""
    bundle = Path(bundle)
    tables = []
    for p, entry in _partitions(bundle).items():
        rel = f"{table}/{p}.parquet"
        if rel in (entry.get("files") or {}):
            t = _read_parquet(bundle / rel, columns, run_ids)
            tables.append(t.append_column("partition", pa.array([p] * t.num_rows, pa.string())))
    if not tables:
        names = columns or {"runs": RUNS_SCHEMA.names[1:], "rows": []}.get(table, FILES_SCHEMA.names[1:])
        return pd.DataFrame(columns=[*dict.fromkeys(["run_id", *names]), "partition"])
    return pa.concat_tables(tables, promote_options="default").to_pandas()


def _read_parquet(path: Path, columns, run_ids) -> pa.Table:
    if not path.is_file():
        raise AnalysisError(f"{path}: missing (listed in bundle.json)")
    cols = None if columns is None else list(dict.fromkeys(["run_id", *columns]))
    try:
        t = pq.read_table(path, columns=cols)
    except (OSError, pa.ArrowException) as exc:
        raise AnalysisError(f"{path}: unreadable ({str(exc).splitlines()[0]})") from None
    if run_ids is None:
        return t
    return t.filter(pc.is_in(t["run_id"], value_set=pa.array(sorted(set(run_ids)), pa.string())))


def _current(df: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """The records of ``df`` from the partition that holds each run's current record (``runs``: :func:`_runs`)."""
    return df[df["partition"] == df["run_id"].map(dict(zip(runs["run_id"], runs["partition"])))].reset_index(drop=True)


def _runs(bundle, columns=("status", "reason", "params", "derived_version"), run_ids=None) -> pd.DataFrame:
    """The runs table, one record per run (from the last partition that holds it), sorted by run_id."""
    runs = _concat(bundle, "runs", list(columns), run_ids)
    runs = runs[runs["partition"] == runs.groupby("run_id")["partition"].transform("max")]
    return runs.sort_values("run_id", kind="stable").reset_index(drop=True)


def read_table(bundle, table: str, columns=None, run_ids=None) -> pd.DataFrame:
    """Table ``table`` (:data:`TABLES`) of a columnar bundle, each run's records from its current partition (the
    last that holds it), with a ``partition`` column; ``columns``: read only these (and run_id); ``run_ids``: only
    these runs. E.g. ``read_table(b, "ss", run_ids=[rid])``: that run's ss sample files (path, content bytes)."""
    if table not in TABLES:
        raise AnalysisError(f"unknown table {table!r} (known: {', '.join(TABLES)})")
    if table == "runs":
        return _runs(bundle, RUNS_SCHEMA.names[1:] if columns is None else columns, run_ids)
    return _current(_concat(bundle, table, columns, run_ids), _runs(bundle, [], run_ids))


def stored_rows(bundle) -> pd.DataFrame:
    """The rows a columnar bundle stores, as they were written (each run's current record; the columns of the
    definition version they were analysed under, typed and sorted as ``load_campaign`` does), without the
    re-analysis or recomputation :func:`rows_and_runs` applies to rows of an older version."""
    from analysis.dataset import campaign_family
    from analysis.families.columns import typed_columns
    fam = campaign_family(bundle)
    rows = _current(_concat(bundle, "rows"), _runs(bundle, []))
    cols = [c for c in fam.COLUMNS if c in rows.columns]
    if cols == list(fam.COLUMNS):
        df = fam.typed(rows[cols])
    else:                        # an older definition's columns: typed the same way, column by column
        ints = [c for c in getattr(fam, "INT_COLS", ()) if c in cols]
        floats = [c for c in fam.FLOAT_COLS if c in cols]
        df = typed_columns(rows[cols], floats, ints, [c for c in cols if c not in floats and c not in ints])
    return df.sort_values(fam.SORT, kind="stable").reset_index(drop=True)


def family_id(bundle) -> str:
    """The study family of a columnar bundle: its first run's (``analysis.families``), "000" without runs."""
    from analysis.families import family_of_params
    runs = _runs(bundle, ["params"])
    return family_of_params(json.loads(runs["params"].iloc[0])) if len(runs) else "000"


def _listing(runs: pd.DataFrame, cols) -> pd.DataFrame:
    from analysis.dataset import listing
    return listing(zip(runs["run_id"], runs["status"], runs["reason"], map(json.loads, runs["params"])), cols)


def run_status(bundle, cols) -> pd.DataFrame:
    """``analysis.dataset.run_status`` of a columnar bundle (``cols``: the family's RUNS_COLUMNS)."""
    return _listing(_runs(bundle), cols)


def rows_and_runs(bundle, *, jobs: int = 1, derived_dir=None) -> tuple[list, pd.DataFrame]:
    """([rows], runs listing) of a columnar bundle for ``analysis.dataset.load_campaign``. A complete run whose stored
    rows are of another definition version than the family's (``DERIVED_VERSION``) and that ships its captures is
    analysed again, from a run directory materialised in a temporary directory (``jobs`` processes; cache in
    ``derived_dir`` when given), as a run-directory bundle's would be; the other runs' rows are used as they are."""
    from analysis.dataset import _with_columns, campaign_family, with_reasons
    fam = campaign_family(bundle)
    runs = _runs(bundle)
    rows = _current(_concat(bundle, "rows"), runs)
    stale = [r.run_id for r in runs.itertuples() if r.status == "complete" and r.derived_version != fam.DERIVED_VERSION
             and (Path(bundle) / "captures" / r.run_id).is_dir()]
    kept = _filled_without_captures(bundle, rows[~rows["run_id"].isin(stale)], runs, fam) if len(rows) else rows
    frames = [_with_columns(kept, fam)] if len(rows) else []
    listing = _listing(runs, fam.RUNS_COLUMNS)
    if stale:
        fresh, reasons = _reanalyse(bundle, stale, jobs, derived_dir)
        frames += fresh
        listing = with_reasons(listing, reasons)
    return frames, listing


def _filled_without_captures(bundle, rows: pd.DataFrame, runs: pd.DataFrame, fam) -> pd.DataFrame:
    """``rows`` with, for each complete run of an older definition version than the family's (which
    :func:`rows_and_runs` could not analyse again: no captures shipped), the columns the family can recompute from
    the run's small files recomputed (``fill_without_captures``; ``analysis.dataset.cached_rows`` does the same for
    run directories)."""
    fill = getattr(fam, "fill_without_captures", None)
    old = sorted(set(runs.loc[(runs["status"] == "complete") & (runs["derived_version"] != fam.DERIVED_VERSION),
                              "run_id"]) & set(rows["run_id"]))
    if fill is None or not old:
        return rows
    files = read_table(bundle, "files", ["path", "content"], old)
    content = {(r, pth): c for r, pth, c in zip(files["run_id"], files["path"], files["content"])}
    metas = dict(zip(*_runs(bundle, ["meta_json"], old)[["run_id", "meta_json"]].T.to_numpy()))
    parts = [rows[~rows["run_id"].isin(old)]]
    for rid in old:
        meta = json.loads(metas.get(rid) or "{}")
        parts.append(fill(rows[rows["run_id"] == rid], lambda rel, rid=rid: content.get((rid, rel)), meta))
    return pd.concat(parts, ignore_index=True)


def _reanalyse(bundle, run_ids: list, jobs: int, derived_dir) -> tuple[list, dict]:
    """(rows, {run_id: reason}) of ``run_ids`` analysed again from their captures (:func:`rows_and_runs`)."""
    from tqdm import tqdm

    from analysis.dataset import _map_local
    frames, reasons = [], {}
    with tempfile.TemporaryDirectory(prefix="mpcc-columnar-") as tmp:
        materialize(bundle, tmp, run_ids, link_captures=True)
        dirs = [Path(tmp) / "runs" / r for r in sorted(run_ids)]
        with tqdm(total=len(dirs), disable=True) as bar:
            for d, (df, reason) in _map_local(dirs, jobs, derived_dir, bar):
                if df is not None:
                    frames.append(df)
                reasons[d.name] = reason
    return frames, reasons


def verify(bundle) -> list[str]:
    """Problems of a columnar bundle's files against bundle.json's index (missing, size or sha256 differs); [] when
    every file is as indexed."""
    bundle = Path(bundle)
    problems = []
    for entry in _partitions(bundle).values():
        for rel, want in sorted((entry.get("files") or {}).items()):
            f = bundle / rel
            if not f.is_file():
                problems.append(f"{rel}: missing")
            elif _file_entry(f) != want:
                problems.append(f"{rel}: content differs from bundle.json")
    return problems


# ------------------------------------------------------------------------------------------------ run directories

def materialize(bundle, dest, run_ids=None, *, link_captures: bool = False) -> list[str]:
    """Recreate the run directories of a columnar bundle under ``dest/runs/<run_id>/`` as a run-directory bundle
    holds them: params.json, meta.json, capture.log, derived/flows.parquet (the run's rows) and fingerprint.json,
    ss/, iperf3/ and the other files (plain, not xz'd), the raw captures (copied, or symlinked with
    ``link_captures``), the COMPLETE or SKIPPED marker last; plus campaign.yaml, campaign.json and bundle.json without
    "format" and "partitions", so that ``dest`` is itself a run-directory bundle. ``run_ids``: only these (ids the
    bundle does not hold are ignored). A run directory already under ``dest/runs/`` is an error. Returns the run ids
    written."""
    bundle, dest = Path(bundle), Path(dest)
    runs = _runs(bundle, RUNS_SCHEMA.names[1:], run_ids)
    for rid in runs["run_id"]:
        if (dest / "runs" / rid).exists():
            raise AnalysisError(f"{dest / 'runs' / rid}: exists; materialize writes new run directories only")
    for table in ("rows", *FILE_TABLES):
        if len(runs):
            _materialize_table(bundle, dest, table, runs)
    for r in runs.itertuples():
        _materialize_run(bundle, dest / "runs" / r.run_id, r, link_captures)
    _materialize_top(bundle, dest)
    return list(runs["run_id"])


def _materialize_table(bundle: Path, dest: Path, table: str, runs: pd.DataFrame) -> None:
    """Write the rows (derived/flows.parquet) or the files of ``table`` of the runs ``runs`` (:func:`_runs`)."""
    df = _current(_concat(bundle, table, run_ids=list(runs["run_id"])), runs)
    if df.empty:
        return
    if table == "rows":
        from analysis.dataset import campaign_family
        df = df.sort_values("run_id", kind="stable")
        t = rows_table(df, campaign_family(bundle))   # one conversion, sliced per run
        start = 0
        for rid, grp in itertools.groupby(df["run_id"]):
            n = len(list(grp))
            dst = dest / "runs" / rid / "derived" / "flows.parquet"
            dst.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(t.slice(start, n), dst, write_statistics=False, use_dictionary=False, store_schema=False)
            start += n
        return
    for rid, path, content in zip(df["run_id"], df["path"], df["content"]):
        dst = dest / "runs" / rid / path
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(content)


def _materialize_run(bundle: Path, d: Path, r, link_captures: bool) -> None:
    """The runs-table files of one run (``r``: its record), its captures, and its marker last."""
    d.mkdir(parents=True, exist_ok=True)
    for name, text in (("params.json", r.params_json), ("meta.json", r.meta_json), ("capture.log", r.capture_log),
                       ("derived/fingerprint.json", r.fingerprint_json)):
        if isinstance(text, str):
            (d / name).parent.mkdir(parents=True, exist_ok=True)
            (d / name).write_text(text)
    caps = bundle / "captures" / r.run_id
    for f in sorted(caps.iterdir()) if caps.is_dir() else []:
        if link_captures:
            os.symlink(f.resolve(), d / f.name)
        else:
            shutil.copyfile(f, d / f.name)
    marker = r.marker if isinstance(r.marker, str) else ""
    (d / ("COMPLETE" if r.status == "complete" else "SKIPPED")).write_text(marker)


def _materialize_top(bundle: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("campaign.yaml", "campaign.json"):
        if (bundle / name).is_file() and not (dest / name).exists():
            shutil.copyfile(bundle / name, dest / name)
    if not (dest / "bundle.json").exists():
        m = {k: v for k, v in manifest(bundle).items() if k not in ("format", "partitions")}
        (dest / "bundle.json").write_text(json.dumps(m, indent=1, sort_keys=True))


def finished_and_planned(bundle) -> tuple[int, int]:
    """(finished runs, planned runs) of a bundle: bundle.json's ``runs_total`` (complete and skipped runs) and
    campaign.json's ``n_runs`` (the campaign's matrix; 0 when it does not say)."""
    b = Path(bundle)
    done = int(json.loads((b / "bundle.json").read_text()).get("runs_total") or 0)
    cj = b / "campaign.json"
    planned = int(json.loads(cj.read_text()).get("n_runs") or 0) if cj.is_file() else 0
    return done, planned


def cache_root() -> Path:
    """Where :func:`run_dir` materialises bundles: ``$MPCC_BUNDLE_CACHE``, else the git-ignored
    ``data/processed/bundles/`` of this checkout."""
    return Path(os.environ.get("MPCC_BUNDLE_CACHE") or REPO / "data" / "processed" / "bundles")


def _cache_dir(bundle: Path) -> Path:
    """This content of ``bundle``'s directory in :func:`cache_root` (named after its bundle.json's sha256); copies of
    earlier contents of a bundle of the same name are removed (a re-bundled or converted bundle leaves none behind)."""
    name = bundle.resolve().name
    d = cache_root() / f"{name}-{hashlib.sha256((bundle / 'bundle.json').read_bytes()).hexdigest()[:16]}"
    if not d.exists():
        cache_root().mkdir(parents=True, exist_ok=True)
        for old in cache_root().glob(f"{name}-*"):
            if old.is_dir() and len(old.name) == len(d.name):
                shutil.rmtree(old, ignore_errors=True)
    return d


def _materialize_into(bundle: Path, d: Path, run_ids=None) -> None:
    """Materialise (captures symlinked) into a temporary directory beside ``d`` and move the result to ``d``: the
    whole bundle when ``run_ids`` is None, else those runs (moved to ``d/runs/<run_id>``)."""
    d.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{d.name}-", dir=d.parent))
    try:
        materialize(bundle, tmp, run_ids, link_captures=True)
        if run_ids is None:
            (tmp / ".complete").write_text("")
            shutil.rmtree(d, ignore_errors=True)      # runs materialised one by one before
            tmp.rename(d)
            return
        for rid in run_ids:
            if (tmp / "runs" / rid).is_dir() and not (d / "runs" / rid).exists():
                (d / "runs").mkdir(parents=True, exist_ok=True)
                (tmp / "runs" / rid).rename(d / "runs" / rid)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def runs_dir(bundle) -> Path:
    """The directory of run directories of a campaign directory or bundle: ``BUNDLE/runs``, or for a columnar bundle
    that of its copy materialised in the cache (:func:`cache_root`), made once per content of its bundle.json
    (captures symlinked)."""
    bundle = Path(bundle)
    if not is_columnar(bundle):
        return bundle / "runs"
    d = _cache_dir(bundle)
    if not (d / ".complete").is_file():
        _materialize_into(bundle, d)
    return d / "runs"


def resolve_run_dir(path) -> Path:
    """``path`` when it exists; for ``BUNDLE/runs/<run_id>`` of a columnar BUNDLE, that run's directory in
    :func:`runs_dir` (so code written for run directories, e.g. notebook 06's ss samples, reads columnar bundles; it
    may not exist when the bundle has no such run). Only that run is materialised."""
    p = Path(path)
    if p.exists() or p.parent.name != "runs" or not is_columnar(p.parent.parent):
        return p
    bundle = p.parent.parent
    d = _cache_dir(bundle)
    if not (d / "runs" / p.name).is_dir():       # only this run: a notebook reading a few runs' ss samples does not
        _materialize_into(bundle, d, [p.name])   # copy the whole bundle (data/paper: 466 MB of plain text)
    return d / "runs" / p.name
