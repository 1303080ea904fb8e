"""Raw-capture archives: every run's captures of a campaign in one file, for a data repository (Zenodo-style) next to
the git bundle, which ships only a few runs' captures (``mpcc bundle --raw-archive FILE``; ``mpcc verify-raw``).

Format ``raw-archive/1``: a POSIX tar (uncompressed container, so members can be listed and read one at a time) of

    <run_id>/<capture>.xz   each capture xz'd on its own (preset 9: iperf3 re-sends one 128 KB buffer that xz's
                            dictionary spans), members sorted by name, owner root, mode 0644, mtime 0
    MANIFEST.json           last: {"format", "campaign", "members": {"<run_id>/<capture>": entry}}

where an entry is {"bytes", "sha256"} of the capture as tcpdump wrote it (decompressed: the sha256 the run's
``derived/fingerprint.json`` records) and {"xz_bytes", "xz_sha256"} of the member. The bundle's ``bundle.json``
lists the same entries under ``raw_archive`` with the archive's own name, size and sha256.

:func:`verify` checks an archive against a bundle: the archive is the one the bundle lists, every member is intact
and is the capture the bundle's fingerprints name, and the family's analysis of the runs, re-run from the archive's
captures with the bundle's other run files (meta.json, iperf3 JSON, ss samples), gives the bundle's rows.
"""
from __future__ import annotations

import hashlib
import io
import json
import lzma
import shutil
import tarfile
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd

from analysis.errors import AnalysisError

FORMAT = "raw-archive/1"
MANIFEST = "MANIFEST.json"
XZ_PRESET = 9


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _xz_member(src: Path) -> tuple[bytes, dict]:
    """(xz'd bytes, entry) of one capture file, plain, .xz or .gz (an .xz file is stored as it is)."""
    from analysis.ingest.compressed import compression_of, decompress_file
    comp = compression_of(src)
    raw = decompress_file(src) if comp is not None else src.read_bytes()
    packed = src.read_bytes() if comp == "xz" else lzma.compress(raw, format=lzma.FORMAT_XZ, preset=XZ_PRESET)
    return packed, {"bytes": len(raw), "sha256": _sha256(raw), "xz_bytes": len(packed), "xz_sha256": _sha256(packed)}


def _tarinfo(name: str, size: int) -> tarfile.TarInfo:
    ti = tarfile.TarInfo(name)
    ti.size, ti.mtime, ti.mode, ti.uid, ti.gid, ti.uname, ti.gname = size, 0, 0o644, 0, 0, "root", "root"
    return ti


def write(captures: dict, dest, *, campaign: str, jobs: int = 1, progress: bool = True) -> dict:
    """Write the archive of ``captures`` ({run_id: {capture name: file}}) to ``dest`` (through ``dest.partial``,
    renamed at the end; an existing ``dest`` is an AnalysisError: an archive is never overwritten). ``jobs``
    threads xz (lzma releases the GIL). Returns the bundle manifest's ``raw_archive`` record: format, file (name),
    bytes, sha256, members."""
    from tqdm import tqdm
    dest = Path(dest)
    if dest.exists():
        raise AnalysisError(f"{dest}: exists; give a new file for the raw archive (an archive is never overwritten)")
    work = sorted((f"{rid}/{name}", Path(p)) for rid, caps in captures.items() for name, p in caps.items())
    partial = dest.with_name(dest.name + ".partial")
    members = {}
    try:
        with tarfile.open(partial, "w", format=tarfile.PAX_FORMAT) as tar, \
                ThreadPoolExecutor(max_workers=max(1, jobs)) as ex, \
                tqdm(total=len(work), unit="capture", desc="raw archive", disable=not progress) as bar:
            for i in range(0, len(work), max(1, jobs)):
                chunk = work[i:i + max(1, jobs)]
                for (name, _), (packed, entry) in zip(chunk, ex.map(lambda w: _xz_member(w[1]), chunk)):
                    tar.addfile(_tarinfo(f"{name}.xz", len(packed)), io.BytesIO(packed))
                    members[name] = entry
                    bar.update(1)
            doc = json.dumps({"format": FORMAT, "campaign": campaign, "members": members}, indent=1,
                             sort_keys=True).encode()
            tar.addfile(_tarinfo(MANIFEST, len(doc)), io.BytesIO(doc))
        partial.rename(dest)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return {"format": FORMAT, "file": dest.name, "bytes": dest.stat().st_size, "sha256": _file_sha256(dest),
            "members": members}


# ------------------------------------------------------------------------------------------------ verification

def _bundle_runs(bundle: Path, run_ids: list, dest: Path) -> None:
    """The bundle's run directories of ``run_ids`` under ``dest/runs/`` (materialised from a columnar bundle, copied
    from a run-directory one), without their captures or derived tables, plus its campaign files."""
    from analysis import bundle_store
    from analysis.families import family_of_run, get
    if bundle_store.is_columnar(bundle):
        bundle_store.materialize(bundle, dest, run_ids)
    else:
        for rid in run_ids:
            shutil.copytree(bundle / "runs" / rid, dest / "runs" / rid, symlinks=True)
        for name in ("campaign.yaml", "campaign.json", "bundle.json"):
            if (bundle / name).is_file():
                shutil.copyfile(bundle / name, dest / name)
    for rid in run_ids:
        d = dest / "runs" / rid
        for name in get(family_of_run(d)).CAPTURES:
            for f in (d / name, d / f"{name}.xz", d / f"{name}.gz"):
                f.unlink(missing_ok=True)
        shutil.rmtree(d / "derived", ignore_errors=True)


def _fingerprint_sha(run_dir_or_record) -> dict:
    """{capture name: sha256} from a run's derived/fingerprint.json text."""
    try:
        files = json.loads(run_dir_or_record)["files"]
        return {k: v["sha256"] for k, v in files.items() if isinstance(v, dict) and "sha256" in v}
    except (TypeError, ValueError, KeyError):
        return {}


def _bundle_fingerprints(bundle: Path, run_ids: list) -> dict:
    """{run_id: {file: sha256}} of the bundle's stored fingerprints."""
    from analysis import bundle_store
    if bundle_store.is_columnar(bundle):
        runs = bundle_store.read_table(bundle, "runs", ["fingerprint_json"], run_ids)
        return {r.run_id: _fingerprint_sha(r.fingerprint_json) for r in runs.itertuples()}
    out = {}
    for rid in run_ids:
        f = bundle / "runs" / rid / "derived" / "fingerprint.json"
        out[rid] = _fingerprint_sha(f.read_text()) if f.is_file() else {}
    return out


def _compare(ours: pd.DataFrame, theirs: pd.DataFrame) -> list[str]:
    """Run ids whose rows differ (with the first differing column), [] when the tables are equal."""
    bad = []
    for rid in sorted(set(ours["run_id"]) | set(theirs["run_id"])):
        a = ours[ours["run_id"] == rid].reset_index(drop=True)
        b = theirs[theirs["run_id"] == rid].reset_index(drop=True)
        if len(a) != len(b):
            bad.append(f"{rid}: {len(a)} rows from the archive, {len(b)} in the bundle")
            continue
        try:
            pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=1e-9, atol=0)
        except AssertionError as exc:
            first = str(exc).strip().splitlines()[0]
            bad.append(f"{rid}: {first}")
    return bad


def verify(archive, bundle, *, jobs: int = 1, progress: bool = True) -> dict:
    """Check ``archive`` against ``bundle`` (module docstring). Returns {"runs", "members", "problems": [...],
    "rows_differ": [...]}: the archive is verified when both lists are empty. AnalysisError (one line) when the
    bundle lists no raw archive or the archive cannot be read."""
    from analysis import bundle_store
    from analysis.dataset import load_campaign
    archive, bundle = Path(archive), Path(bundle)
    m = bundle_store.manifest(bundle)
    if m is None:
        raise AnalysisError(f"{bundle}: not a bundle (no bundle.json)")
    want = m.get("raw_archive")
    if not isinstance(want, dict) or not isinstance(want.get("members"), dict):
        raise AnalysisError(f"{bundle}: its bundle.json lists no raw archive (mpcc bundle --raw-archive FILE)")
    if not archive.is_file():
        raise AnalysisError(f"{archive}: no such file")
    problems = []
    if _file_sha256(archive) != want.get("sha256"):
        problems.append(f"{archive.name}: sha256 differs from the one bundle.json lists for {want.get('file')}")
    members = want["members"]
    run_ids = sorted({name.split("/", 1)[0] for name in members})
    stored_fp = _bundle_fingerprints(bundle, run_ids)
    with tempfile.TemporaryDirectory(prefix="mpcc-verify-raw-") as tmp:
        tmp = Path(tmp)
        _bundle_runs(bundle, run_ids, tmp / "camp")
        try:
            tar = tarfile.open(archive, "r:")
        except (OSError, tarfile.TarError) as exc:
            raise AnalysisError(f"{archive}: not a readable tar archive ({exc})") from None
        with tar:
            names = set(tar.getnames())
            for name, entry in sorted(members.items()):
                rid, cap = name.split("/", 1)
                if f"{name}.xz" not in names:
                    problems.append(f"{name}: missing from the archive")
                    continue
                packed = tar.extractfile(f"{name}.xz").read()
                if _sha256(packed) != entry.get("xz_sha256"):
                    problems.append(f"{name}: xz member differs from bundle.json")
                    continue
                try:
                    raw = lzma.decompress(packed)
                except lzma.LZMAError:
                    problems.append(f"{name}: xz member does not decompress")
                    continue
                if _sha256(raw) != entry.get("sha256"):
                    problems.append(f"{name}: capture differs from bundle.json")
                    continue
                fp = stored_fp.get(rid, {}).get(cap)
                if fp is not None and fp != entry["sha256"]:
                    problems.append(f"{name}: not the capture the run's fingerprint names")
                d = tmp / "camp" / "runs" / rid
                if d.is_dir():
                    (d / f"{cap}.xz").write_bytes(packed)
        dirs = [tmp / "camp" / "runs" / rid for rid in run_ids if (tmp / "camp" / "runs" / rid).is_dir()]
        problems += [f"{rid}: in the archive, not a run of the bundle" for rid in run_ids
                     if not (tmp / "camp" / "runs" / rid).is_dir()]
        ours = load_campaign(tmp / "camp", jobs=max(1, jobs), progress=progress, derived_dir=tmp / "derived")
        listed = ours.attrs["runs"]
        for r in listed.itertuples():
            if str(r.reason or "").startswith("analysis failed"):
                problems.append(f"{r.run_id}: analysis of the archive's captures failed ({r.reason})")
    theirs = load_campaign(bundle, progress=False, jobs=max(1, jobs))
    theirs = theirs[theirs["run_id"].isin({d.name for d in dirs})]
    key = [c for c in ("run_id", "flow") if c in theirs.columns]
    ours = ours[list(theirs.columns)].sort_values(key, kind="stable").reset_index(drop=True)
    theirs = theirs.sort_values(key, kind="stable").reset_index(drop=True)
    return {"runs": len(dirs), "members": len(members), "problems": problems, "rows_differ": _compare(ours, theirs)}
