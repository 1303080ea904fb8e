"""Transparent gzip: captures may be stored compressed (``router1.pcap.gz``); detected by the gzip magic bytes."""
from __future__ import annotations

import gzip
import logging
import warnings
import zlib

from analysis.errors import CaptureError

log = logging.getLogger(__name__)
GZIP_MAGIC = b"\x1f\x8b"


def is_gzip(path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == GZIP_MAGIC


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
        msg = f"{path}: gzip stream cut off ({exc}); using the {len(data)} bytes recovered"
        log.warning(msg)
        warnings.warn(msg, stacklevel=3)
        return data
