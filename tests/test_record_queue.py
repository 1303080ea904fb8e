"""tools/record_queue.sh, the paper protocols' recording queue (campaigns/recording-queue.tsv): the committed queue
names real campaigns with their bundles under data/; bad queue files and commands are one-line errors before anything
runs; `run --dry-run` lists the runner's commands, each resumed from its bundle where one exists, in the queue's
order, and leaves a campaign whose `needs` file is missing waiting."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TOOL = REPO / "tools" / "record_queue.sh"
QUEUE = REPO / "campaigns" / "recording-queue.tsv"


def _queue_rows():
    return [line.split("\t") for line in QUEUE.read_text().splitlines() if line.strip() and not line.startswith("#")]


def _run(*args, cwd=REPO):
    return subprocess.run(["bash", str(TOOL), *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_the_committed_queue_names_real_campaigns_and_bundles():
    from mpcc.campaign.spec import load_campaign
    rows = _queue_rows()
    assert [r[0] for r in rows][:2] == ["fidelity000", "paper003"]
    covered: dict[str, set] = {}
    for ident, campaign, profile, experiments, jobs, bundle, max_mb, ss_reps, needs in rows:
        c = load_campaign(REPO / campaign, None if profile == "-" else profile)
        exps = {r.experiment for r in c.runs}
        want = exps if experiments == "-" else set(experiments.split(","))
        assert want <= exps, (ident, want - exps)
        covered.setdefault(campaign, set()).update(want)
        assert bundle.startswith("data/") and int(jobs) >= 1 and int(max_mb) >= 1
    # every experiment of every campaign of the queue is recorded by some entry
    for campaign, got in covered.items():
        assert got == {r.experiment for r in load_campaign(REPO / campaign).runs}, campaign
    # the study-000 protocol is recorded again only once the fidelity ablation says so
    assert rows[-1][0] == "paper" and rows[-1][-1] == "data/raw/.rerecord-000.approved"


def test_dry_run_lists_the_runner_commands_in_order():
    r = _run("run", "--dry-run")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    cmds = [ln for ln in lines if not ln.startswith("#")]
    names = [row[0] for row in _queue_rows()]
    done = {n for n in names if (REPO / "data" / "raw" / f".queue-{n}.done").exists()}
    # entries whose committed bundle holds all their runs are done on any machine (data/fidelity000 is complete)
    in_bundle = {ln.split()[1] for ln in lines if ln.startswith("# ") and " is complete in data/" in ln}
    assert "fidelity000" in done | in_bundle
    waiting = {row[0] for row in _queue_rows() if row[-1] != "-" and not (REPO / row[-1]).exists()}
    assert len(cmds) == len(set(names) - done - in_bundle - waiting)
    # the pending entries' commands in the queue's order, each naming its campaign and only its experiments
    pending = [row for row in _queue_rows() if row[0] not in done | in_bundle | waiting]
    assert len(pending) == len(cmds)
    for row, c in zip(pending, cmds):
        assert f" campaign run {row[1]} " in c, (row[0], c)
        assert (f" --experiments {row[3]}" in c) == (row[3] != "-"), (row[0], c)
    for c in cmds:
        assert " -m mpcc.cli campaign run campaigns/" in c and " --jobs " in c and " --out " in c
        assert " --redo-contended 32.4" in c                   # contended runs are recorded again
    fid = next(c for c in cmds if "fidelity000.yaml" in c) if "fidelity000" not in done | in_bundle else None
    if fid is not None and (REPO / "data/fidelity000/bundle.json").exists():
        assert fid.endswith("--resume-from data/fidelity000")
    assert all(f"# {n} waits for" in r.stdout for n in waiting)


def test_an_entry_whose_bundle_holds_all_its_runs_is_done(tmp_path):
    """On a new machine (no data/raw/.queue-ID.done) an entry is not recorded again when its committed bundle holds
    every run it records; an entry whose bundle lacks some of its runs is pending."""
    q = tmp_path / "q.tsv"
    q.write_text("a\tcampaigns/fidelity000.yaml\t-\tlink_delay\t3\tdata/fidelity000\t25\t1\t-\n"
                 "b\tcampaigns/smoke.yaml\t-\t-\t1\tdata/fidelity000\t25\t1\t-\n")
    r = _run("run", "--queue", str(q), "--dry-run")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "# a is complete in data/fidelity000"
    assert "campaigns/smoke.yaml" in r.stdout.splitlines()[1]
    r = _run("status", "--queue", str(q))
    assert r.returncode == 0, r.stderr
    states = {ln.split()[0]: ln for ln in r.stdout.splitlines()[1:]}
    assert states["a"].endswith("done (in its bundle)") and states["b"].endswith("pending")


@pytest.mark.parametrize("line,msg", [
    ("a\tcampaigns/smoke.yaml\t-\t-\t1\tdata/x\t5\t-", "9 tab-separated columns expected"),
    ("a b\tcampaigns/smoke.yaml\t-\t-\t1\tdata/x\t5\t-\t-", "bad id"),
    ("a\tcampaigns/nope.yaml\t-\t-\t1\tdata/x\t5\t-\t-", "no campaign file"),
    ("a\tcampaigns/smoke.yaml\t-\ttest 1\t1\tdata/x\t5\t-\t-", "experiments must be - or E[,E...]"),
    ("a\tcampaigns/smoke.yaml\t-\t-\t0\tdata/x\t5\t-\t-", "jobs must be 1..99"),
    ("a\tcampaigns/smoke.yaml\t-\t-\t1\t/tmp/x\t5\t-\t-", "the bundle must be data/NAME"),
    ("a\tcampaigns/smoke.yaml\t-\t-\t1\tdata/x\t0\t-\t-", "max_mb must be 1..9999"),
    ("a\tcampaigns/smoke.yaml\t-\t-\t1\tdata/x\t5\tall\t-", "ss_reps must be - or 1..999"),
])
def test_bad_queue_lines_are_one_line_errors(tmp_path, line, msg):
    q = tmp_path / "q.tsv"
    q.write_text("# a comment\n" + line + "\n")
    r = _run("status", "--queue", str(q))
    assert r.returncode == 2 and r.stderr.startswith("error: ") and msg in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("args,msg", [
    ([], "usage:"), (["bogus"], "unknown command 'bogus'"), (["bundle"], "bundle needs the ID"),
    (["bundle", "nope"], "'nope' is not in"), (["status", "--queue", "/nonexistent.tsv"], "no such queue file"),
    (["run", "--fast"], "unknown option --fast"),
    (["run", "--dry-run", "MPCC_REDO_CONTENDED=high"], "MPCC_REDO_CONTENDED must be a percentage"),
])
def test_bad_commands_are_one_line_errors(args, msg):
    env = [a for a in args if a.startswith("MPCC_")]
    args = [a for a in args if not a.startswith("MPCC_")]
    if env:
        import os
        k, v = env[0].split("=", 1)
        r = subprocess.run(["bash", str(TOOL), *args], capture_output=True, text=True, cwd=REPO, timeout=60,
                           env={**os.environ, k: v})
        assert r.returncode == 2 and msg in r.stderr, r.stderr
        return
    r = _run(*args)
    assert r.returncode == 2 and msg in r.stderr, r.stderr
