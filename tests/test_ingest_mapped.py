"""analysis.ingest.mapped: a capture memory-mapped with zero padding reads exactly like the file read into memory
(page-aligned sizes, a pad that crosses into the next page, tiny files), cannot be written, is unmapped when the last
view goes, and decodes to the same table."""
from __future__ import annotations

import gc
import sys
from pathlib import Path

import numpy as np
import pytest

from analysis.ingest import fast_reader, mapped, read_pcap

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="memory mapping through glibc: Linux")


def _maps_of(path: Path) -> int:
    return sum(1 for line in Path("/proc/self/maps").read_text().splitlines() if line.endswith(str(path)))


@pytest.mark.parametrize("size", [1, 100, 4096, 3 * 4096, 3 * 4096 - 10, 3 * 4096 + 4090])
def test_content_then_zero_pad(tmp_path, size):
    data = np.random.default_rng(size).integers(1, 256, size, dtype=np.uint8).tobytes()   # no zero byte in it
    p = tmp_path / "f.bin"
    p.write_bytes(data)
    with open(p, "rb") as f:
        buf = mapped.map_padded(f, size, 64)
    assert buf is not None and len(buf) == size + 64
    assert buf[:size].tobytes() == data and not buf[size:].any()
    assert not buf.flags.writeable
    with pytest.raises(ValueError):
        buf[0] = 0


def test_unmapped_when_the_last_view_goes(tmp_path):
    p = tmp_path / "f.bin"
    p.write_bytes(b"\x01" * 20000)
    with open(p, "rb") as f:
        buf = mapped.map_padded(f, 20000, 64)
    view = buf[:10]
    del buf
    gc.collect()
    assert _maps_of(p) == 1 and view.tolist() == [1] * 10      # the view keeps the mapping alive
    del view
    gc.collect()
    assert _maps_of(p) == 0


def test_load_buffer_maps_large_files_and_decodes_the_same(tmp_path, monkeypatch):
    cap = max((Path(__file__).parent / "data" / "real").glob("*.pcap"), key=lambda q: q.stat().st_size)
    monkeypatch.setattr(mapped, "MIN_BYTES", 1)
    m = fast_reader.load_buffer(cap)
    assert not m.flags.writeable                                # the mapped path was taken
    monkeypatch.setenv("MPCC_NO_MMAP", "1")
    r = fast_reader.load_buffer(cap)
    assert r.flags.writeable and np.array_equal(m, r)
    a = read_pcap(cap, cache=False)
    monkeypatch.setenv("MPCC_NO_MMAP", "0")
    b = read_pcap(cap, cache=False)
    assert a.equals(b) and len(a) > 0


def test_not_mapped_when_small_or_turned_off(monkeypatch):
    assert not mapped.wanted(mapped.MIN_BYTES - 1) and mapped.wanted(mapped.MIN_BYTES)
    monkeypatch.setenv("MPCC_NO_MMAP", "1")
    assert not mapped.wanted(1 << 30)
