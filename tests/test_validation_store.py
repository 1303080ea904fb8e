"""analysis/validation_store.py: a validation's run directories packed as one runs.tar.xz and read back unchanged."""
import lzma
import tarfile

import pytest

from analysis import validation_store as vs
from analysis.errors import AnalysisError


def make(root, runs=("rep01-a", "rep01-b", "rep02-a")):
    for r in runs:
        d = root / "runs" / r
        d.mkdir(parents=True)
        (d / "run.json").write_text(f'{{"run": "{r}"}}\n')
        with lzma.open(d / "ss.txt.xz", "wb") as f:
            f.write(f"ss of {r}\n".encode())
    (root / "meta.json").write_text("{}\n")
    return root


def tree(dirs):
    return {d.name: {p.name: p.read_bytes() for p in d.iterdir()} for d in dirs}


def test_pack_keeps_every_file_decompresses_xz_members_and_reads_back_the_same(tmp_path):
    root = make(tmp_path / "v")
    with vs.run_dirs(root) as dirs:
        before = tree(dirs)
    assert vs.pack(root) == 6
    assert not (root / "runs").exists() and (root / "meta.json").is_file()
    with vs.run_dirs(root) as dirs:
        after = tree(dirs)
        tmp = dirs[0].parent
    assert not tmp.exists()                                          # unpacked only for the block
    assert sorted(after) == sorted(before) == ["rep01-a", "rep01-b", "rep02-a"]
    for r in before:
        assert after[r]["run.json"] == before[r]["run.json"]
        assert after[r]["ss.txt"] == lzma.decompress(before[r]["ss.txt.xz"])   # stored plain
    assert dict(vs.members(root, "ss.txt"))["runs/rep02-a/ss.txt"] == b"ss of rep02-a\n"


def test_same_files_give_the_same_archive_bytes(tmp_path):
    a, b = make(tmp_path / "a"), make(tmp_path / "b")
    vs.pack(a)
    vs.pack(b)
    assert (a / vs.ARCHIVE).read_bytes() == (b / vs.ARCHIVE).read_bytes()
    with tarfile.open(a / vs.ARCHIVE) as t:
        assert all(m.mtime == 0 and m.uid == 0 and m.gid == 0 for m in t)


def test_pack_never_overwrites_and_refuses_what_it_cannot_pack(tmp_path):
    root = make(tmp_path / "v")
    vs.pack(root)
    make(tmp_path / "w")
    (tmp_path / "w" / vs.ARCHIVE).write_bytes(b"x")
    with pytest.raises(AnalysisError, match="never overwrites"):
        vs.pack(tmp_path / "w")
    assert (tmp_path / "w" / "runs").is_dir()                         # left as it was
    with pytest.raises(AnalysisError, match="no runs directory"):
        vs.pack(tmp_path / "empty")
    d = make(tmp_path / "dup", runs=("r",))
    (d / "runs" / "r" / "ss.txt").write_text("plain too\n")
    with pytest.raises(AnalysisError, match="both ss.txt and ss.txt.xz"):
        vs.pack(d)
    assert not (d / vs.ARCHIVE).exists() and (d / "runs" / "r" / "ss.txt.xz").is_file()


def test_unreadable_or_escaping_archive_is_an_error(tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / vs.ARCHIVE).write_bytes(b"not xz")
    with pytest.raises(AnalysisError, match="unreadable"):
        with vs.run_dirs(bad):
            pass
    esc = tmp_path / "esc"
    esc.mkdir()
    with lzma.open(esc / vs.ARCHIVE, "wb") as xz, tarfile.open(fileobj=xz, mode="w") as t:
        info = tarfile.TarInfo("elsewhere/run.json")
        t.addfile(info)
    with pytest.raises(AnalysisError, match="outside runs/"):
        with vs.run_dirs(esc):
            pass


def test_neither_form_gives_no_runs(tmp_path):
    with vs.run_dirs(tmp_path) as dirs:
        assert dirs == []
    assert list(vs.members(tmp_path)) == []
