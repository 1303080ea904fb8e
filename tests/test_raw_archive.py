"""Raw-capture archives (``mpcc bundle --raw-archive``, ``mpcc verify-raw``, analysis/raw_archive.py) on the
hand-built campaign of test_dataset (known captures; no root needed). The real smoke campaign is archived and
verified in test_bundle_reproduce_netns.py."""
import hashlib
import io
import json
import lzma
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))   # test_dataset's hand-built campaign


def _mpcc(*args):
    return subprocess.run([sys.executable, "-m", "mpcc.cli", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def archived(tmp_path_factory):
    """The campaign, bundled twice with its raw archive: as run directories and columnar."""
    from test_dataset import build_campaign
    root = tmp_path_factory.mktemp("raw")
    camp = build_campaign(root / "camp", reps=2)
    r = _mpcc("bundle", camp, "--out", root / "dirs", "--max-mb", "5", "--raw-archive", root / "dirs.tar")
    assert r.returncode == 0, r.stderr
    r = _mpcc("bundle", camp, "--out", root / "col", "--format", "columnar", "--raw-archive", root / "col.tar")
    assert r.returncode == 0, r.stderr
    return root


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_archive_holds_every_capture_with_its_checksums(archived):
    camp = archived / "camp" / "runs"
    m = json.loads((archived / "dirs" / "bundle.json").read_text())
    ra = m["raw_archive"]
    want = {f"{d.name}/{p.name}" for d in camp.iterdir() if (d / "COMPLETE").exists() for p in d.glob("*.pcap")}
    assert set(ra["members"]) == want and len(want) >= 8
    assert ra["sha256"] == _sha((archived / "dirs.tar").read_bytes()) and ra["file"] == "dirs.tar"
    with tarfile.open(archived / "dirs.tar") as tar:
        names = tar.getnames()
        assert names[-1] == "MANIFEST.json" and names[:-1] == sorted(f"{k}.xz" for k in want)
        inner = json.loads(tar.extractfile("MANIFEST.json").read())
        assert inner["members"] == ra["members"] and inner["format"] == "raw-archive/1"
        for name, entry in ra["members"].items():
            packed = tar.extractfile(f"{name}.xz").read()
            raw = (camp / name).read_bytes()
            assert lzma.decompress(packed) == raw
            assert (entry["sha256"], entry["bytes"]) == (_sha(raw), len(raw))
            assert (entry["xz_sha256"], entry["xz_bytes"]) == (_sha(packed), len(packed))
    # the bundle's fingerprints name the same captures
    for name, entry in ra["members"].items():
        rid, cap = name.split("/")
        fp = json.loads((archived / "dirs" / "runs" / rid / "derived" / "fingerprint.json").read_text())
        assert fp["files"][cap]["sha256"] == entry["sha256"]
    assert "## Raw-capture archive" in (archived / "dirs" / "README.md").read_text()
    # the bundle ships one repetition per configuration with captures: the archive has the others too
    assert len(m["captured_runs"]) < len({k.split("/")[0] for k in ra["members"]})


@pytest.mark.parametrize("fmt", ["dirs", "col"])
def test_verify_raw_rederives_the_bundles_rows(archived, fmt):
    r = _mpcc("verify-raw", archived / f"{fmt}.tar", archived / fmt, "--jobs", "1")
    assert r.returncode == 0, r.stdout + r.stderr
    n = len(json.loads((archived / fmt / "bundle.json").read_text())["raw_archive"]["members"])
    assert f"{n} captures of" in r.stdout and "re-derived rows equal the bundle's" in r.stdout


def test_a_damaged_member_is_named(archived, tmp_path):
    bad = tmp_path / "col.tar"
    with tarfile.open(archived / "col.tar") as src, tarfile.open(bad, "w", format=tarfile.PAX_FORMAT) as dst:
        for i, ti in enumerate(src.getmembers()):
            data = src.extractfile(ti).read()
            if i == 0:   # another capture under the first member's name
                data = lzma.compress(lzma.decompress(data)[:-1] + b"\x00", format=lzma.FORMAT_XZ)
                ti.size = len(data)
                victim = ti.name[:-3]
            dst.addfile(ti, io.BytesIO(data))
    r = _mpcc("verify-raw", bad, archived / "col")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "sha256 differs from the one bundle.json lists" in r.stderr
    assert f"{victim}: xz member differs from bundle.json" in r.stderr


def test_rows_that_the_captures_do_not_give_are_reported(archived, tmp_path):
    """A bundle whose stored rows of a run are not what its captures give (here: one value changed in a run the
    bundle ships without captures) fails verification, naming the run."""
    b = tmp_path / "dirs"
    shutil.copytree(archived / "dirs", b)
    m = json.loads((b / "bundle.json").read_text())
    rid = sorted({k.split("/")[0] for k in m["raw_archive"]["members"]} - set(m["captured_runs"]))[0]
    f = b / "runs" / rid / "derived" / "flows.parquet"
    df = pd.read_parquet(f)
    col = next(c for c in df.columns if df[c].dtype.kind == "f" and df[c].notna().any())
    df[col] = df[col] * 2 + 1
    df.to_parquet(f)
    r = _mpcc("verify-raw", archived / "dirs.tar", b)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"rows differ: {rid}" in r.stderr


def test_bad_input_is_one_line(archived, tmp_path):
    precious = tmp_path / "exists.tar"
    precious.write_text("keep me")
    r = _mpcc("bundle", archived / "camp", "--out", tmp_path / "b", "--raw-archive", precious)
    assert r.returncode != 0 and "exists" in r.stderr and "Traceback" not in r.stderr
    assert precious.read_text() == "keep me" and not (tmp_path / "b").exists()
    r = _mpcc("bundle", archived / "camp", "--out", tmp_path / "b", "--raw-archive", tmp_path / "no" / "x.tar")
    assert r.returncode != 0 and "no such directory" in r.stderr
    plain = tmp_path / "plain"
    assert _mpcc("bundle", archived / "camp", "--out", plain).returncode == 0
    r = _mpcc("verify-raw", archived / "dirs.tar", plain)
    assert r.returncode == 2 and "lists no raw archive" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = _mpcc("verify-raw", tmp_path / "missing.tar", archived / "dirs")
    assert r.returncode == 2 and "no such file" in r.stderr and "Traceback" not in r.stderr
    r = _mpcc("verify-raw", precious, archived / "dirs")
    assert r.returncode != 0 and "Traceback" not in r.stderr
