"""End to end on the netns backend (root; CI runs it): a real smoke campaign -> `mpcc bundle` -> `mpcc reproduce`
on the bundle. Every notebook must execute headless, and write its HTML, figures and tables."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]
PREFIX = os.environ.get("MPCC_TEST_NS_PREFIX", "bnd-")
pytestmark = [pytest.mark.netns, pytest.mark.slow,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
              pytest.mark.skipif(not (REPO / "capture_tools/run_experiment.sh").exists(),
                                 reason="capture tool not built")]
MPCC = ("import sys, mpcc.cli as c\n"
        "c.COMMANDS.append('bundle') if 'bundle' not in c.COMMANDS else None\n"
        "sys.exit(c.main(sys.argv[1:]))")


def _mpcc(*args, timeout=900, env=None):
    return subprocess.run([sys.executable, "-c", MPCC, *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def bundled(tmp_path_factory):
    root = tmp_path_factory.mktemp("e2e")
    r = _mpcc("campaign", "run", str(REPO / "campaigns/smoke.yaml"), "--backend", "netns", "--out",
              str(root / "smoke"), env={"MPCC_NS_PREFIX": PREFIX})
    assert "Traceback" not in r.stderr
    assert (root / "smoke" / "runs").is_dir(), r.stderr[-2000:]
    r = _mpcc("bundle", str(root / "smoke"), "--out", str(root / "sample"), "--max-mb", "20")
    assert r.returncode == 0, r.stderr[-2000:]
    return root


def test_bundle_contents(bundled):
    sample = bundled / "sample"
    m = json.loads((sample / "bundle.json").read_text())
    assert m["size_mb"] <= 20 and m["kernels"]
    src_runs = {d.name for d in (bundled / "smoke" / "runs").iterdir()
                if (d / "COMPLETE").exists() or (d / "SKIPPED").exists()}
    assert {d.name for d in (sample / "runs").iterdir()} == src_runs
    for d in (sample / "runs").iterdir():
        if (d / "SKIPPED").exists():
            assert (d / "params.json").is_file()
            continue
        assert (d / "COMPLETE").is_file() and (d / "meta.json").is_file() and (d / "params.json").is_file()
        assert (d / "derived" / "flows.parquet").is_file()
        assert (d / "ss" / "flow1.txt.xz").is_file()
    assert m["captured_runs"], "the smoke campaign fits entirely: every configuration has its captures"
    for rid in m["captured_runs"]:
        assert (sample / "runs" / rid / "router1.pcap.xz").is_file()
        assert (sample / "runs" / rid / "iperf3" / "flow1-server.json").is_file()
    readme = (sample / "README.md").read_text()
    assert "git commit" in readme and "Regenerate" in readme


def test_bundle_loads_like_the_campaign(bundled):
    from analysis.dataset import load_campaign

    a = load_campaign(bundled / "sample", progress=False)
    b = load_campaign(bundled / "smoke", progress=False)
    assert list(a["run_id"]) == list(b["run_id"])
    # every column of every row, although the bundle stores the derived tables slimmed and the text files xz'd
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True))


def test_reproduce_on_the_bundle(bundled):
    out = bundled / "reports"
    r = _mpcc("reproduce", "--data", str(bundled / "sample"), "--out", str(out), "--n-boot", "999", timeout=1500)
    rep = json.loads((out / "reproduce.json").read_text())
    failed = {n["notebook"]: n["error"] for n in rep["notebooks"] if n["status"] != "ok"}
    assert r.returncode == 0 and not failed, failed or r.stderr[-2000:]
    names = [n["notebook"] for n in rep["notebooks"]]
    assert len(names) == len(list((REPO / "notebooks").glob("*.ipynb")))
    for n in names:
        assert (out / n).is_file() and (out / n.replace(".ipynb", ".html")).is_file()
    assert len(list((out / "figures").glob("*.png"))) >= 8
    assert (out / "tables" / "08_scorecard.csv").is_file()
    assert (out / "index.html").is_file()


def test_resume_from_the_bundle_on_a_new_machine(bundled):
    """A campaign longer than one machine's life: a new machine has only the committed bundle. `--resume-from`
    copies its finished runs into a new campaign directory (nothing recorded again), and bundling that directory
    gives the same rows, runs, captures and recording sessions (plus the new session)."""
    from analysis.dataset import load_campaign

    fresh = bundled / "new-machine"
    r = _mpcc("campaign", "run", str(REPO / "campaigns/smoke.yaml"), "--backend", "netns", "--out", str(fresh),
              "--resume-from", str(bundled / "sample"), env={"MPCC_NS_PREFIX": PREFIX})
    n = len([d for d in (bundled / "sample" / "runs").iterdir()])
    assert r.returncode == 0, r.stderr[-2000:]
    assert f"{n} finished run(s) restored" in r.stderr and "0 completed" in r.stderr and f"{n} already done" in r.stderr
    sessions = json.loads((fresh / "campaign.json").read_text())["sessions"]
    old = json.loads((bundled / "sample" / "campaign.json").read_text())["sessions"]
    assert sessions[:len(old)] == old and len(sessions) == len(old) + 1
    r = _mpcc("bundle", str(fresh), "--out", str(bundled / "again"), "--max-mb", "20")
    assert r.returncode == 0, r.stderr[-2000:]
    a = load_campaign(bundled / "sample", progress=False)
    b = load_campaign(bundled / "again", progress=False)
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True))
    m1 = json.loads((bundled / "sample" / "bundle.json").read_text())
    m2 = json.loads((bundled / "again" / "bundle.json").read_text())
    assert m2["captured_runs"] == m1["captured_runs"] and m2["experiments"] == m1["experiments"]
    for d in (bundled / "sample" / "runs").iterdir():
        for f in d.rglob("*"):
            if f.is_file() and f.name != "fingerprint.json":
                assert (bundled / "again" / "runs" / d.name / f.relative_to(d)).is_file(), f
    # a bundle of another campaign is refused before anything is recorded
    r = _mpcc("campaign", "run", str(REPO / "campaigns/quick.yaml"), "--backend", "netns", "--out",
              str(bundled / "other"), "--resume-from", str(bundled / "sample"))
    assert r.returncode == 2 and "differs" in r.stderr and "Traceback" not in r.stderr
    assert not (bundled / "other" / "runs").exists() or not any((bundled / "other" / "runs").iterdir())


def test_raw_archive_of_the_real_campaign(bundled):
    """`mpcc bundle --raw-archive` on the recorded smoke campaign writes every complete run's captures into one
    archive, bundle.json lists them with the sha256 the runs' fingerprints record, and `mpcc verify-raw` re-derives
    the columnar bundle's rows from the archive (issue 27, item 4)."""
    archive = bundled / "smoke-raw.tar"
    r = _mpcc("bundle", str(bundled / "smoke"), "--out", str(bundled / "columnar"), "--format", "columnar",
              "--max-mb", "20", "--raw-archive", str(archive))
    assert r.returncode == 0, r.stderr[-2000:]
    members = json.loads((bundled / "columnar" / "bundle.json").read_text())["raw_archive"]["members"]
    runs = bundled / "smoke" / "runs"
    want = {f"{d.name}/{p.name}" for d in runs.iterdir() if (d / "COMPLETE").exists() for p in d.glob("*.pcap")}
    assert set(members) == want and len(want) >= 10
    for name, entry in members.items():
        rid, cap = name.split("/")
        fp = json.loads((runs / rid / "derived" / "fingerprint.json").read_text())
        assert fp["files"][cap]["sha256"] == entry["sha256"], name
    r = _mpcc("verify-raw", str(archive), str(bundled / "columnar"))
    assert r.returncode == 0, r.stdout + r.stderr[-2000:]
    assert f"{len(want)} captures of" in r.stdout and "re-derived rows equal the bundle's" in r.stdout
