"""Capture ingest: pcap/pcapng (optionally gzip'd) -> per-packet table (columns in ``analysis.ingest.schema``).

Two decoders give identical tables: the vectorised path (``fast_reader``; classic pcap with Ethernet/VLAN,
Linux cooked SLL/SLL2, BSD loopback or raw-IP link types) and the dpkt reference path (``dpkt_reader``; also
pcapng and anything else).  Decoded tables can be cached as Parquet (``cache``), keyed by the capture's content.
"""
from __future__ import annotations

import os
import struct
import warnings
from pathlib import Path

import pandas as pd

from analysis.errors import CaptureError, CaptureWarning
from analysis.ingest import cache as _cache
from analysis.ingest.dpkt_reader import parse_tcp_options
from analysis.ingest.dpkt_reader import read_pcap as _read_dpkt

__all__ = ["read_pcap", "parse_tcp_options", "fast_path_applies", "ENGINES", "AUTO_CACHE_MIN_BYTES"]

ENGINES = ("auto", "fast", "dpkt")
AUTO_CACHE_MIN_BYTES = 1_000_000  # cache=None caches only captures at least this large (small ones decode in ms)


def _head(path, n=24) -> bytes:
    """First ``n`` bytes of the capture content (through gzip or xz if compressed)."""
    import lzma
    import zlib

    from analysis.ingest.compressed import open_decompressed
    try:
        with open_decompressed(path) as f:
            return f.read(n)
    except (EOFError, zlib.error, lzma.LZMAError):
        return b""


def fast_path_applies(head: bytes) -> bool:
    """True if a capture starting with ``head`` (its first 24 bytes) is classic pcap with a link type the
    vectorised decoder reads."""
    from analysis.ingest.fast_reader import _PCAP_MAGICS, SUPPORTED_LINKTYPES
    if len(head) < 24 or head[:4] not in _PCAP_MAGICS:
        return False
    endian = _PCAP_MAGICS[head[:4]][0]
    return (struct.unpack(endian + "I", head[20:24])[0] & 0x0FFFFFFF) in SUPPORTED_LINKTYPES


def _resolve_cache(cache, path) -> Path | None:
    if cache is False:
        return None
    if cache is None:  # automatic: only when the user opted in (env var or an existing cache directory)
        d = _cache.default_cache_dir()
        if not (os.environ.get("MPCC_CACHE_DIR") or d.is_dir()):
            return None
        try:
            if os.path.getsize(path) < AUTO_CACHE_MIN_BYTES:
                return None
        except OSError:
            return None
        return d
    if cache is True:
        return _cache.default_cache_dir()
    return Path(cache)


def _decode(path, engine: str, buf=None) -> pd.DataFrame:
    from analysis.ingest import fast_reader
    if engine == "dpkt":
        return _read_dpkt(path)
    if buf is not None:
        head = bytes(buf[:24])
    else:
        if os.path.isdir(path):
            raise IsADirectoryError(21, "Is a directory", str(path))
        head = _head(path)
    if fast_path_applies(head):
        return fast_reader.decode_pcap_buffer(buf if buf is not None else fast_reader.load_buffer(path), path)
    if engine == "fast":
        if buf is not None and len(buf) == fast_reader._PAD:
            raise CaptureError(f"{path}: empty file, not a capture")
        raise CaptureError(f"{path}: the fast engine reads classic pcap with Ethernet, SLL, SLL2, loopback or "
                           "raw-IP link types only (use engine 'auto' or 'dpkt')")
    return _read_dpkt(path)


def read_pcap(path, *, engine: str = "auto", cache=None, buffer=None) -> pd.DataFrame:
    """Read a capture into the per-packet table of ``analysis.ingest.schema`` (one row per IPv4/IPv6 TCP or UDP
    packet; ``pkt_no`` counts every record, like tshark ``frame.number``).  ``path`` may be gzip'd
    (``router1.pcap.gz``; detected by content, not by name).

    engine: ``"auto"`` (default) uses the vectorised decoder for classic pcap (µs or ns, either byte order) with
    Ethernet/VLAN, Linux SLL/SLL2, loopback or raw-IP link types and the dpkt reference decoder otherwise (pcapng,
    other link types); ``"fast"`` requires the vectorised decoder (``CaptureError`` if it does not apply);
    ``"dpkt"`` forces the reference decoder.  Both decoders give identical tables.

    cache: ``False`` never touches a cache; ``True`` uses the default cache directory (``$MPCC_CACHE_DIR``, else
    ``<repo>/data/processed/packets``; see ``analysis.ingest.cache``); a path uses that directory; ``None``
    (default) caches automatically only when the user opted in -- ``$MPCC_CACHE_DIR`` is set or the default cache
    directory already exists (``mpcc ingest`` creates it) -- and only captures of at least 1 MB, so tests and
    one-off reads of small files never write into the repository.  Cached tables are keyed by the SHA-256 of the
    uncompressed capture content; warnings raised while decoding (e.g. a truncated last record) are stored with
    the entry and raised again on a hit.

    buffer: the capture's uncompressed content as ``fast_reader.load_buffer(path)`` returns it (content followed by
    ``_PAD`` zero bytes), when the caller has already read the file; it is decoded instead of reading ``path`` again.

    Raises ``CaptureError`` (one-line message) for an empty file, a file that is not pcap/pcapng or a corrupt
    header; a truncated last record is skipped with a warning.
    """
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, not {engine!r}")
    cdir = _resolve_cache(cache, path)
    if cdir is None:
        return _decode(path, engine, buffer if engine != "dpkt" else None)
    sha = _cache.known_sha256(cdir, path)
    if sha is not None:
        hit = _cache.load(cdir, sha)
        if hit is not None:
            return _rewarn(hit)
    from analysis.ingest import fast_reader
    buf = fast_reader.load_buffer(path) if buffer is None else buffer  # uncompressed content + padding
    sha = _cache.content_sha256(buf[:len(buf) - fast_reader._PAD])
    hit = _cache.load(cdir, sha)
    if hit is not None:
        _cache.remember_sha256(cdir, path, sha)
        return _rewarn(hit)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = _decode(path, engine, buf if engine != "dpkt" else None)
    msgs = [str(w.message) for w in caught]
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if _cache.store(cdir, sha, df, msgs) is not None:
        _cache.remember_sha256(cdir, path, sha)
    return df


def _rewarn(hit):
    df, msgs = hit
    for m in msgs:
        warnings.warn(m, CaptureWarning, stacklevel=3)
    return df
