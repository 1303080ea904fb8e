"""The campaign runner stops before the output's file system fills (mpcc.campaign.room): the floor rule on its own,
and the runner on a small tmpfs with a stand-in capture tool that writes a 1-MB capture per run."""
import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections import namedtuple
from pathlib import Path

import pytest

from mpcc.campaign import room as room_mod
from mpcc.campaign.room import GB, MIN_FLOOR_BYTES, Room, dir_bytes, estimate

REPO = Path(__file__).resolve().parents[1]
Usage = namedtuple("Usage", "total used free")


def _run_dir(out: Path, name: str, nbytes: int, complete: bool = True) -> Path:
    d = out / "runs" / name
    d.mkdir(parents=True)
    (d / "router1.pcap").write_bytes(b"\0" * nbytes)
    if complete:
        (d / "COMPLETE").write_text("done\n")
    return d


def test_floor_is_the_minimum_until_runs_are_large(tmp_path, monkeypatch):
    out = tmp_path / "o"
    _run_dir(out, "a", 1000)
    _run_dir(out, "b", 5000)
    _run_dir(out, "c", 10 ** 6, complete=False)           # not complete: not measured
    _run_dir(out, "b.incomplete-20260101T000000Z", 10 ** 7)  # moved aside: not measured
    r = Room.start(out, jobs=3)
    assert r.largest == 5000 + len("done\n")
    assert r.floor() == (MIN_FLOOR_BYTES, "the minimum; --min-free-gb sets another")
    r.largest = 10 ** 9                                     # 1 GB runs, 3 at once: 2 x 3 x 1 GB
    floor, why = r.floor()
    assert floor == 6 * GB and "2 x 3 run(s) at once" in why and "1000 MB" in why
    monkeypatch.setattr(room_mod.shutil, "disk_usage", lambda p: Usage(0, 0, 6 * GB))
    assert r.shortfall() is None                            # exactly the floor is enough
    monkeypatch.setattr(room_mod.shutil, "disk_usage", lambda p: Usage(0, 0, 6 * GB - 1))
    msg = r.shortfall()
    assert msg.startswith("6.0 GB free on the file system of") and "below the floor of 6.0 GB" in msg
    assert "\n" not in msg


def test_fixed_floor_and_zero(tmp_path, monkeypatch):
    out = tmp_path / "o"
    out.mkdir()
    monkeypatch.setattr(room_mod.shutil, "disk_usage", lambda p: Usage(0, 0, 10))
    assert Room.start(out, 1, min_free_gb=0).shortfall() is None
    r = Room.start(out, 1, min_free_gb=0.5)
    assert r.floor() == (GB // 2, "--min-free-gb")
    assert "below the floor of 0.5 GB (--min-free-gb)" in r.shortfall()
    with pytest.raises(ValueError):
        Room.start(out, 1, min_free_gb=-1)


def test_dir_bytes_counts_files_not_links(tmp_path):
    d = _run_dir(tmp_path, "r", 123, complete=False)
    (d / "sub").mkdir()
    (d / "sub" / "x").write_bytes(b"ab")
    os.symlink(d / "router1.pcap", d / "link.pcap")
    assert dir_bytes(d) == 125


def test_estimate_for_a_dry_run(tmp_path, monkeypatch):
    out = tmp_path / "o"
    assert estimate(out, 5) is None
    for i, n in enumerate((2 * 10 ** 6, 4 * 10 ** 6, 9 * 10 ** 6)):
        _run_dir(out, f"r{i}", n - len("done\n"))
    monkeypatch.setattr(room_mod.shutil, "disk_usage", lambda p: Usage(0, 0, 50 * GB))
    assert estimate(out, 10) == (f"disk: 3 complete run(s) take 0.015 GB (median 4 MB); the 10 left need ~0.04 GB "
                                 f"at that median; 50.0 GB free on the file system of {out}")


FAKE = textwrap.dedent("""\
    #!/usr/bin/env bash
    # stand-in capture tool: a 1-MB capture per run, the exit-code and marker contract of capture_tools
    set -euo pipefail
    out=""; cc=""
    while [ $# -gt 0 ]; do case "$1" in --out) out=$2; shift 2;; --cc) cc=$2; shift 2;; *) shift;; esac; done
    if [ "$cc" = bic ]; then echo "bic: not available on this kernel — skipped" > "$out/SKIPPED"; exit 3; fi
    head -c 1000000 /dev/zero > "$out/router1.pcap"
    sleep "${FAKE_SLEEP:-0}"
    printf '{"host_load": {"cpu_pressure_some_pct": 5}}' > "$out/meta.json"
    date > "$out/COMPLETE"
    """)


@pytest.fixture
def small_fs(tmp_path):
    """An 8-MiB tmpfs for --out, and the stand-in capture tool."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "fs"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mnt)], check=True)
    script = tmp_path / "fake_run.sh"
    script.write_text(FAKE)
    try:
        yield mnt, {**os.environ, "MPCC_RUN_EXPERIMENT": str(script)}
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _mpcc(args, env):
    return subprocess.run([sys.executable, "-m", "mpcc.cli", *args], env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("jobs", [1, 2])
def test_runner_stops_before_the_disk_fills_and_resumes(small_fs, jobs):
    mnt, env = small_fs
    out = mnt / "out"
    camp = str(REPO / "campaigns/smoke.yaml")   # 7 runs, 1 of them skipped by the stand-in
    args = ["campaign", "run", camp, "--out", str(out), "--jobs", str(jobs)]
    # floor 4.5 MB of 8.4: a run is started only while at most 3.9 MB are used, i.e. at most 3 runs written and,
    # with --jobs 2, one more in flight that has not written yet: 5 runs at most, however the workers interleave
    r = _mpcc([*args, "--min-free-gb", "0.0045"], {**env, "FAKE_SLEEP": "0.3"})
    assert r.returncode == 4, r.stderr
    assert "Traceback" not in r.stderr
    line = [x for x in r.stderr.splitlines() if "stopped before the disk filled" in x]
    assert len(line) == 1 and "below the floor of 0.0045 GB (--min-free-gb)" in line[0], r.stderr
    runs = [d for d in (out / "runs").iterdir()]
    assert 0 < len(runs) <= 5
    # every run started was finished, none lost to a full disk
    assert all((d / "COMPLETE").exists() or (d / "SKIPPED").exists() for d in runs), [d.name for d in runs]
    left = int(re.search(r"; (\d+) run\(s\) not started", line[0]).group(1))
    assert left == 7 - len(runs)
    assert shutil.disk_usage(out).free > 3 * 10 ** 6
    # with room made (here: the floor lifted), the same command records the rest and touches nothing recorded
    stamps = {d.name: (d / "COMPLETE").read_text() for d in runs if (d / "COMPLETE").exists()}
    r = _mpcc([*args, "--min-free-gb", "0"], env)
    assert r.returncode == 0, r.stderr
    final = [d for d in (out / "runs").iterdir()]
    assert len(final) == 7 and all((d / "COMPLETE").exists() or (d / "SKIPPED").exists() for d in final)
    assert all((out / "runs" / n / "COMPLETE").read_text() == s for n, s in stamps.items())


def test_default_floor_refuses_to_start_on_a_nearly_full_disk(small_fs):
    mnt, env = small_fs
    out = mnt / "out"
    r = _mpcc(["campaign", "run", str(REPO / "campaigns/smoke.yaml"), "--out", str(out)], env)
    assert r.returncode == 4 and "Traceback" not in r.stderr
    assert "below the floor of 1.0 GB (the minimum; --min-free-gb sets another); 7 run(s) not started" in r.stderr
    assert not any((out / "runs").iterdir())
    r = _mpcc(["campaign", "run", str(REPO / "campaigns/smoke.yaml"), "--out", str(out), "--min-free-gb", "-1"], env)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "--min-free-gb must be >= 0" in r.stderr


def test_estimate_measures_the_runs_recorded_here_not_those_restored_without_captures(tmp_path, monkeypatch):
    """Runs restored from a bundle (--resume-from) without their captures are a few KB: the median of new runs is
    taken over the runs that hold their captures."""
    out = tmp_path / "o"
    for i, n in enumerate((2 * 10 ** 6, 4 * 10 ** 6)):
        _run_dir(out, f"r{i}", n - len("done\n"))
    for i in range(5):                                   # restored: a derived table, no capture
        d = out / "runs" / f"restored{i}"
        d.mkdir(parents=True)
        (d / "meta.json").write_text("{}")
        (d / "COMPLETE").write_text("done\n")
    monkeypatch.setattr(room_mod.shutil, "disk_usage", lambda p: Usage(0, 0, 50 * GB))
    line = estimate(out, 10)
    assert "7 complete run(s)" in line and "(median of the 2 with their captures 3 MB)" in line, line
    assert "the 10 left need ~0.03 GB" in line, line
