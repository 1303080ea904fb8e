"""The committed form of a VM validation's results directory: its per-run directories as one archive.

A validation (``testbed/cc/validate-vm.sh``, ``testbed/delayshim/validate-vm.sh``) writes ``DIR/runs/<run>/`` with a
few small files per run; a few hundred runs make thousands of files, which data/ has no room for (its budget: fewer
than 1,000 files, tests/test_bundle_conversion.py). The copy committed under data/ keeps them as one ``runs.tar.xz``
beside the top-level files (meta.json, setup.json, logs). Members are ``runs/<run>/<file>``, sorted, owned by 0:0 with
mtime 0, so the same files give the same archive bytes; files that were xz-compressed one by one are stored
decompressed (the archive compresses them together, better).

The loaders read either form through :func:`run_dirs`: the run directories of ``DIR/runs``, or of the archive unpacked
into a temporary directory for as long as the ``with`` block lasts (the loaders keep values, never paths).
"""
from __future__ import annotations

import io
import json
import lzma
import re
import shutil
import tarfile
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from analysis.errors import AnalysisError

ARCHIVE = "runs.tar.xz"

#: this host's own paths in the recorded command lines (meta.json's qemu_args): the Vagrant home and the VM's scratch
#: directory, replaced in the committed form by what they stand for (the repository quotes no machine's paths)
_HOST_PATHS = ((re.compile(r"(?:/root|/home/[^/\s\"]+)/\.vagrant\.d"), "~/.vagrant.d"),
               (re.compile(r"/(?:var/)?tmp/(mpcc-[a-z0-9]+)\.[A-Za-z0-9]+"), r"$TMPDIR/\1.XXXXXX"))


def portable_paths(text: str) -> str:
    """``text`` with this host's Vagrant home and the VM's scratch directory written as ``~/.vagrant.d`` and
    ``$TMPDIR/mpcc-NAME.XXXXXX`` (the guest's own fixed directories, set by the repository's scripts, stay)."""
    for pat, rep in _HOST_PATHS:
        text = pat.sub(rep, text)
    return text


def _plain(path: Path) -> tuple[str, bytes]:
    """(member name, bytes) of one file: ``x.xz`` decompressed and named ``x``; any other file as it is."""
    if path.suffix == ".xz":
        with lzma.open(path, "rb") as f:
            return path.name[:-3], f.read()
    return path.name, path.read_bytes()


def pack(root) -> int:
    """Replace ``root/runs/`` by ``root/runs.tar.xz`` (see the module docstring) and return the number of files
    archived. The archive is written aside and read back in full before ``runs/`` is removed; an existing archive is
    never overwritten."""
    root = Path(root)
    runs, dest = root / "runs", root / ARCHIVE
    if dest.exists():
        raise AnalysisError(f"{dest} exists: pack never overwrites an archive")
    if not runs.is_dir():
        raise AnalysisError(f"{runs}: no runs directory to pack")
    files = sorted(p for p in runs.rglob("*") if p.is_file())
    if not files:
        raise AnalysisError(f"{runs}: empty")
    tmp = dest.with_name(dest.name + ".partial")
    expected = {}
    with lzma.open(tmp, "wb", preset=9 | lzma.PRESET_EXTREME) as xz, tarfile.open(fileobj=xz, mode="w",
                                                                                   format=tarfile.PAX_FORMAT) as tar:
        for p in files:
            name, data = _plain(p)
            arc = (p.parent / name).relative_to(root).as_posix()
            if arc in expected:
                raise AnalysisError(f"{p}: both {name} and {name}.xz in one run directory")
            info = tarfile.TarInfo(arc)
            info.size, info.mtime, info.mode, info.uid, info.gid, info.uname, info.gname = \
                len(data), 0, 0o644, 0, 0, "", ""
            tar.addfile(info, io.BytesIO(data))
            expected[arc] = data
    got = dict(_members(tmp))
    if got != expected:
        tmp.unlink()
        raise AnalysisError(f"{tmp}: reads back different from {runs}; nothing replaced")
    tmp.rename(dest)
    shutil.rmtree(runs)
    return len(expected)


def _members(archive: Path) -> Iterator[tuple[str, bytes]]:
    with tarfile.open(archive, mode="r:xz") as tar:
        for m in tar:
            if m.isfile():
                f = tar.extractfile(m)
                yield m.name, f.read() if f is not None else b""


def members(root, suffix: str = "") -> Iterator[tuple[str, bytes]]:
    """(path relative to ``root``, bytes) of every run file whose name ends with ``suffix``, from ``root/runs/`` or
    from ``root/runs.tar.xz``."""
    root = Path(root)
    if (root / "runs").is_dir():
        for p in sorted((root / "runs").rglob("*")):
            if p.is_file() and p.name.endswith(suffix):
                yield p.relative_to(root).as_posix(), p.read_bytes()
    elif (root / ARCHIVE).is_file():
        for name, data in _members(root / ARCHIVE):
            if name.endswith(suffix):
                yield name, data


@contextmanager
def run_dirs(root, marker: tuple[str, ...] = ("run.json",)) -> Iterator[list[Path]]:
    """The run directories of ``root`` (each holding one of the ``marker`` files), sorted by name: those of
    ``root/runs/`` when it exists, else those of ``root/runs.tar.xz`` unpacked into a temporary directory that is
    removed when the block ends. Empty list when ``root`` has neither."""
    root = Path(root)

    def dirs(base: Path) -> list[Path]:
        return sorted({p.parent for m in marker for p in base.glob(f"*/{m}")}, key=lambda d: d.name)

    if (root / "runs").is_dir() or not (root / ARCHIVE).is_file():
        yield dirs(root / "runs")
        return
    with tempfile.TemporaryDirectory(prefix="mpcc-validation-") as tmp:
        try:
            with tarfile.open(root / ARCHIVE, mode="r:xz") as tar:
                bad = [m.name for m in tar.getmembers() if not m.name.startswith("runs/") or ".." in m.name.split("/")]
                if bad:
                    raise AnalysisError(f"{root / ARCHIVE}: members outside runs/ ({bad[0]})")
                tar.extractall(tmp, filter="data")
        except (tarfile.TarError, lzma.LZMAError, EOFError) as exc:
            raise AnalysisError(f"{root / ARCHIVE}: unreadable ({exc})") from None
        yield dirs(Path(tmp) / "runs")


def partial_dir(dest: Path) -> Path:
    """Where an export of ``dest`` is written before it is renamed into place, ``DEST.partial`` (a stale one from an
    interrupted export removed); AnalysisError when ``dest`` exists: an export never overwrites."""
    if dest.exists():
        raise AnalysisError(f"{dest} exists: export writes a new directory, it never overwrites")
    tmp = dest.with_name(dest.name + ".partial")
    if tmp.exists():
        shutil.rmtree(tmp)
    return tmp


#: the top-level files of a VM experiment's results directory (testbed/qdisc003, testbed/mininet003) kept as text, and
#: its logs kept xz-compressed, in the committed form (:func:`export_results`)
TOP_FILES = ("params.json", "meta.json", "setup.json")
XZ_FILES = ("progress.log", "console.log")


def export_results(results_dir, dest, facts_of) -> int:
    """Write the committed form of a VM experiment's results directory into ``dest`` (which must not exist): the
    complete runs' directories packed into one ``runs.tar.xz`` (:func:`pack`), :data:`TOP_FILES` with this host's
    paths made portable (:func:`portable_paths`), :data:`XZ_FILES` xz-compressed, and ``facts.json``
    (``facts_of(root)``: the experiment's summary of the runs under ``root``, a JSON-able dict). Runs without COMPLETE
    (and DIR/incomplete/) are left out. Returns the number of runs written."""
    src, dst = Path(results_dir), Path(dest)
    tmp = partial_dir(dst)
    n = 0
    with run_dirs(src, ("COMPLETE",)) as dirs:
        if not dirs:
            raise AnalysisError(f"{src}: no complete run")
        for d in dirs:
            shutil.copytree(d, tmp / "runs" / d.name)
            n += 1
    for name in TOP_FILES:
        if (src / name).is_file():
            (tmp / name).write_text(portable_paths((src / name).read_text()))
    for name in XZ_FILES:
        if (src / name).is_file():
            with open(src / name, "rb") as f, lzma.open(tmp / (name + ".xz"), "wb", preset=9) as g:
                g.write(portable_paths(f.read().decode(errors="replace")).encode())
    pack(tmp)
    doc = facts_of(tmp)
    doc["source"] = dst.as_posix()
    (tmp / "facts.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    tmp.rename(dst)
    return n
