"""Transparent decompression: captures may be stored gzip'd (``router1.pcap.gz``) or xz'd (``router1.pcap.xz``).

Detected by the magic bytes, not the name. xz matters for iperf3 captures: iperf3 re-sends one 128 KB buffer, so
payload bytes repeat at distances far beyond gzip's 32 KB window but inside xz's dictionary (a 15-s, 5.6 MB router1
capture at -s 128: gzip 2.45 MB, xz 0.69 MB).
"""
from __future__ import annotations

import gzip
import lzma
import warnings
import zlib

from analysis.errors import CaptureError, CaptureWarning

GZIP_MAGIC = b"\x1f\x8b"
XZ_MAGIC = b"\xfd7zXZ\x00"
SUFFIXES = (".gz", ".xz")


def compression_of(path) -> str | None:
    """"gzip", "xz" or None (not compressed), from the file's first bytes."""
    with open(path, "rb") as f:
        head = f.read(6)
    if head[:2] == GZIP_MAGIC:
        return "gzip"
    if head == XZ_MAGIC:
        return "xz"
    return None


def open_decompressed(path):
    """A binary stream of the file's content, through gzip or xz when the file is compressed."""
    kind = compression_of(path)
    if kind == "gzip":
        return gzip.open(path, "rb")
    if kind == "xz":
        return lzma.open(path, "rb", format=lzma.FORMAT_XZ)
    return open(path, "rb")


def is_gzip(path) -> bool:
    return compression_of(path) == "gzip"


def _cut_off(path, kind, exc, data):
    msg = f"{path}: {kind} stream cut off ({exc}); using the {len(data)} bytes recovered"
    warnings.warn(msg, CaptureWarning, stacklevel=4)
    return data


def gunzip_file(path) -> bytes:
    """The uncompressed content of a gzip file.  A cut-off stream yields the bytes that could be recovered and a
    warning (the decoders then drop the partial last record as for any truncated capture); a stream that is not
    gzip at all raises ``CaptureError``."""
    with open(path, "rb") as f:
        raw = f.read()
    try:
        return gzip.decompress(raw)
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        d = zlib.decompressobj(wbits=31)
        try:
            data = d.decompress(raw)
        except zlib.error:
            raise CaptureError(f"{path}: corrupt gzip file ({exc})") from None
        return _cut_off(path, "gzip", exc, data)


def unxz_file(path) -> bytes:
    """The uncompressed content of an xz file; a cut-off stream yields what could be recovered and a warning."""
    with open(path, "rb") as f:
        raw = f.read()
    try:
        return lzma.decompress(raw, format=lzma.FORMAT_XZ)
    except (EOFError, lzma.LZMAError) as exc:
        d = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
        try:
            data = d.decompress(raw)
        except lzma.LZMAError:
            raise CaptureError(f"{path}: corrupt xz file ({exc})") from None
        return _cut_off(path, "xz", exc, data)


def decompress_file(path) -> bytes:
    """Uncompressed content of a gzip or xz file (``CaptureError`` if it is neither)."""
    kind = compression_of(path)
    if kind == "gzip":
        return gunzip_file(path)
    if kind == "xz":
        return unxz_file(path)
    raise CaptureError(f"{path}: not a gzip or xz file")
