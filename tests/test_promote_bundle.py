"""tools/promote_bundle.py: a study's complete paper-protocol bundle becomes its main dataset, its reduced sample
moves beside it labelled as such (git mv, nothing deleted), and the recording queue names the new place."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TOOL = REPO / "tools" / "promote_bundle.py"


def _git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def _checkout(tmp_path) -> Path:
    """A git checkout with data/study004 (the sample, tracked) and data/study004-paper (a complete bundle, not yet
    tracked: both copies of the committed data/study004) and a queue naming data/study004-paper."""
    root = tmp_path / "co"
    (root / "campaigns").mkdir(parents=True)
    shutil.copytree(REPO / "data" / "study004", root / "data" / "study004")
    shutil.copytree(REPO / "data" / "study004", root / "data" / "study004-paper")
    (root / "campaigns" / "recording-queue.tsv").write_text(
        "# id\tcampaign\n"
        "paper004\tcampaigns/paper004.yaml\t-\t-\t4\tdata/study004-paper\t15\t-\t-\n")
    _git(root, "init", "-q")
    _git(root, "add", "data/study004", "campaigns")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "sample")
    return root


def _promote(root, study="004"):
    return subprocess.run([sys.executable, str(TOOL), study, "--root", str(root)], capture_output=True, text=True)


def test_promote_moves_the_sample_aside_and_the_paper_bundle_in(tmp_path):
    root = _checkout(tmp_path)
    before = sorted(p.name for p in (root / "data" / "study004").rglob("*"))
    r = _promote(root)
    assert r.returncode == 0, r.stderr
    main, sample = root / "data" / "study004", root / "data" / "study004-sample"
    assert not (root / "data" / "study004-paper").exists()
    assert sorted(p.name for p in sample.rglob("*")) == before      # the sample kept whole
    assert json.loads((main / "bundle.json").read_text())["bundle_dir"] == "data/study004"
    assert json.loads((sample / "bundle.json").read_text())["bundle_dir"] == "data/study004-sample"
    readme = (sample / "README.md").read_text()
    assert readme.startswith("# data/study004-sample — ") and "**The reduced sample**" in readme
    assert "`data/study004`, the paper protocol" in readme and "notebooks/11" in readme
    assert "\tdata/study004\t" in (root / "campaigns" / "recording-queue.tsv").read_text()
    staged = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True).stdout
    assert "R  data/study004/README.md -> data/study004-sample/README.md" in staged or \
        "data/study004-sample/README.md" in staged
    # once done, a second promotion is refused and changes nothing
    r = _promote(root)
    assert r.returncode == 2 and r.stderr.startswith("error: ") and "promoted before" in r.stderr
    assert "Traceback" not in r.stderr


def test_an_incomplete_paper_bundle_is_refused(tmp_path):
    root = _checkout(tmp_path)
    cj = root / "data" / "study004-paper" / "campaign.json"
    m = json.loads(cj.read_text())
    m["n_runs"] = m["n_runs"] + 1
    cj.write_text(json.dumps(m))
    r = _promote(root)
    assert r.returncode == 2 and "holds 96 of its campaign's 97 runs" in r.stderr
    assert (root / "data" / "study004").is_dir() and not (root / "data" / "study004-sample").exists()


def test_bad_arguments_are_one_line_errors(tmp_path):
    for args in (["9"], [], ["003", "--root"]):
        r = subprocess.run([sys.executable, str(TOOL), *args], capture_output=True, text=True)
        assert r.returncode == 2 and r.stderr.startswith("error: usage:") and len(r.stderr.splitlines()) == 1
