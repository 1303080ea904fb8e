"""Parquet cache of decoded packet tables, keyed by the SHA-256 of the capture's content.

Layout of a cache directory::

    <dir>/<sha256>.v<CACHE_VERSION>.parquet   one decoded capture (schema.py columns); key = SHA-256 of the
                                              uncompressed capture bytes, so x.pcap and x.pcap.gz share an entry
    <dir>/index/<h>.json                      stat record -> sha256: {"path", "size", "mtime_ns", "ino", "sha256"}
                                              (h = SHA-1 of the resolved path); lets a warm re-run skip hashing

Directory choice (``cache_dir``): ``$MPCC_CACHE_DIR`` if set, else ``<repo>/data/processed/packets/`` for a
source checkout (the repository root is where pyproject.toml is), else ``~/.cache/mpcc/packets``.
Entries are written atomically (temporary file + rename), so parallel workers may share a directory.
Bump ``CACHE_VERSION`` whenever the decoders change what they produce.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.ingest.schema import COLUMNS

CACHE_VERSION = 1


def default_cache_dir() -> Path:
    """``$MPCC_CACHE_DIR``, else ``<repo>/data/processed/packets``, else ``~/.cache/mpcc/packets``."""
    env = os.environ.get("MPCC_CACHE_DIR")
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[2]
    if (repo / "pyproject.toml").is_file():
        return repo / "data" / "processed" / "packets"
    return Path.home() / ".cache" / "mpcc" / "packets"


def content_sha256(buf) -> str:
    """SHA-256 (hex) of a bytes-like capture content."""
    return hashlib.sha256(memoryview(buf)).hexdigest()


def _stat_key(path) -> tuple[Path, dict]:
    p = Path(path).resolve()
    st = p.stat()
    return p, {"path": str(p), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "ino": st.st_ino}


def _index_file(cache_dir: Path, resolved: Path) -> Path:
    return cache_dir / "index" / (hashlib.sha1(str(resolved).encode()).hexdigest() + ".json")


def known_sha256(cache_dir, path) -> str | None:
    """The content hash recorded for ``path`` if the file's size, mtime and inode are unchanged since."""
    try:
        resolved, st = _stat_key(path)
        rec = json.loads(_index_file(Path(cache_dir), resolved).read_text())
    except (OSError, ValueError):
        return None
    if all(rec.get(k) == v for k, v in st.items()) and isinstance(rec.get("sha256"), str):
        return rec["sha256"]
    return None


def remember_sha256(cache_dir, path, sha: str) -> None:
    """Record ``path``'s current stat -> ``sha`` in the index (best effort)."""
    try:
        resolved, st = _stat_key(path)
        _atomic_write(_index_file(Path(cache_dir), resolved), json.dumps({**st, "sha256": sha}).encode())
    except OSError:
        pass


def entry_path(cache_dir, sha: str) -> Path:
    return Path(cache_dir) / f"{sha}.v{CACHE_VERSION}.parquet"


def entry_summary(cache_dir, sha: str):
    """(rows, warnings) of a cache entry from its Parquet footer only, or None if absent/unreadable."""
    p = entry_path(cache_dir, sha)
    if not p.is_file():
        return None
    import pyarrow.parquet as pq
    try:
        md = pq.ParquetFile(p).metadata
        meta = md.metadata or {}
        return md.num_rows, json.loads(meta.get(b"mpcc_warnings", b"[]"))
    except Exception:  # noqa: BLE001 - damaged entry: treat as absent
        return None


def load(cache_dir, sha: str):
    """(DataFrame, warnings list) for a cached capture, or None if absent or unreadable."""
    p = entry_path(cache_dir, sha)
    if not p.is_file():
        return None
    import pyarrow as pa
    import pyarrow.parquet as pq
    try:
        table = pq.read_table(p)
    except Exception:  # noqa: BLE001 - a damaged entry is a miss (it will be rewritten)
        return None
    meta = table.schema.metadata or {}
    warns = json.loads(meta.get(b"mpcc_warnings", b"[]"))
    if table.column_names != list(COLUMNS):
        return None
    # numeric columns straight to numpy; text columns through their dictionary (few distinct addresses), which
    # is much faster than materialising pandas strings and converting them back to object
    data = {}
    for c, t in COLUMNS.items():
        if t is object:
            col = table.column(c).combine_chunks()
            enc = col if pa.types.is_dictionary(col.type) else col.dictionary_encode()
            words = np.array(enc.dictionary.to_pylist() + [None], dtype=object)
            idx = enc.indices.fill_null(len(words) - 1).to_numpy()
            data[c] = pd.Series(words[idx], dtype=object, copy=False)
        else:
            data[c] = table.column(c).to_numpy().astype(t, copy=False)
    return pd.DataFrame(data, copy=False), warns


def store(cache_dir, sha: str, df: pd.DataFrame, warns: list[str]) -> Path | None:
    """Write one decoded capture atomically; returns the entry path (None if the directory is not writable)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    p = entry_path(cache_dir, sha)
    arrays = []
    for c, t in COLUMNS.items():
        if t is object:  # addresses: dictionary-encoded (a capture holds few distinct ones)
            codes, uniq = pd.factorize(df[c].to_numpy(), use_na_sentinel=False)
            arrays.append(pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)),
                                                         pa.array(list(uniq), pa.string())))
        else:
            arrays.append(pa.array(df[c].to_numpy()))
    table = pa.Table.from_arrays(arrays, names=list(COLUMNS))
    table = table.replace_schema_metadata({b"mpcc_warnings": json.dumps(warns).encode()})
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".parquet", dir=p.parent)
        os.close(fd)
        try:
            pq.write_table(table, tmp, compression="lz4", write_statistics=False,
                           use_dictionary=[c for c, t in COLUMNS.items() if t is object])
            os.replace(tmp, p)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError:
        return None
    return p


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)

