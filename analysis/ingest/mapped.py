"""A capture file's bytes as a read-only memory map followed by zero padding, without copying them.

``fast_reader.load_buffer`` needs the file's bytes in one ``uint8`` array followed by ``pad`` zero bytes (bounded
over-reads of the decoders stay inside it). Reading a large file into a fresh array costs the kernel zeroing every
new page and copying the page cache into it: two passes over the file, which dominate the decode of a capture of
full-size packets (a 244,000-packet capture of 1,514-byte frames is 255 MB; bench/README.md). Mapping the page cache
instead costs neither: an anonymous zeroed mapping of ``size + pad`` bytes is reserved, and the file is mapped over
its first ``size`` bytes (``MAP_FIXED``, read-only, private, pre-faulted with ``MAP_POPULATE``). The bytes past the
end of the file in its last page read as zero (POSIX mmap), and the pad that follows lies in the anonymous mapping,
also zero.

Linux only (glibc ``mmap`` through ctypes); :func:`map_padded` returns None wherever mapping is not possible, and the
caller reads the file instead. The mapping lives as long as the returned array (and any view of it). A file that is
truncated while it is mapped makes a later read of the lost pages fail with SIGBUS: captures are only read after
their run finished writing them.
"""
from __future__ import annotations

import ctypes
import mmap
import os
import sys
import weakref

import numpy as np

#: files smaller than this are read, not mapped (mapping costs a few system calls; reading a small file is cheaper)
MIN_BYTES = 8 << 20
_MAP_FIXED = 0x10
_MAP_POPULATE = getattr(mmap, "MAP_POPULATE", 0x8000)
_LIBC = None


def _libc():
    global _LIBC
    if _LIBC is None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                              ctypes.c_long]
        libc.munmap.restype = ctypes.c_int
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        _LIBC = libc
    return _LIBC


def map_padded(f, size: int, pad: int) -> np.ndarray | None:
    """The first ``size`` bytes of the open file ``f`` (a real file of at least that size) followed by ``pad`` zero
    bytes, as a read-only ``uint8`` array of ``size + pad`` elements backed by a memory map; None when the platform
    or the file does not allow it (then read the file)."""
    if not sys.platform.startswith("linux") or size <= 0 or pad < 0:
        return None
    try:
        fd = f.fileno()
        libc = _libc()
    except (OSError, AttributeError, ValueError):
        return None
    total = size + pad
    failed = ctypes.c_void_p(-1).value
    base = libc.mmap(None, total, mmap.PROT_READ, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
    if base in (None, failed):
        return None
    got = libc.mmap(base, size, mmap.PROT_READ, mmap.MAP_PRIVATE | _MAP_FIXED | _MAP_POPULATE, fd, 0)
    if got in (None, failed) or got != base:
        libc.munmap(base, total)
        return None
    block = (ctypes.c_uint8 * total).from_address(base)
    weakref.finalize(block, libc.munmap, base, total)   # unmapped when the last view of the array is gone
    arr = np.frombuffer(block, np.uint8)
    arr.flags.writeable = False
    return arr


def wanted(size: int) -> bool:
    """Whether a file of ``size`` bytes is worth mapping (``MIN_BYTES``; ``MPCC_NO_MMAP=1`` turns mapping off)."""
    return size >= MIN_BYTES and os.environ.get("MPCC_NO_MMAP", "") in ("", "0")
