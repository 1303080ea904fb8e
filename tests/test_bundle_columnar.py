"""Columnar bundles (analysis.bundle_store, format "columnar/1"): same rows, runs listing and scorecard as the
run-directory bundle they are made from; partitions byte-identical when a session is added; materialize and
--resume-from; bad input is one line (no root needed)."""
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from analysis import bundle_store, dataset
from analysis.errors import AnalysisError
from mpcc.commands import bundle
from mpcc.errors import UserError

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))
from test_bundle_reproduce import bundle_args  # noqa: E402
from test_dataset import build_campaign  # noqa: E402

SESSION1, SESSION2 = "2026-11-21T00:00:00Z", "2026-11-22T00:00:00Z"
P1, P2 = "s20261121T000000Z", "s20261122T000000Z"
SKIPPED_NO_META = "loss_rate__bic__multipath__d10ms__l2pct__rep01"
REP1 = "single_vs_multi__cubic__multipath__d10ms__l0pct__rep01"
SS_TEXT = ("# ts=1.0\nState Recv-Q Send-Q Local Peer\nESTAB 0 0 10.1.1.2:40001 10.4.1.2:5201\n"
           "\t cubic cwnd:10 mss:1448\n")


def _mpcc(*args):
    return subprocess.run([sys.executable, "-m", "mpcc.cli", *map(str, args)], cwd=REPO, capture_output=True, text=True,
                          timeout=300)


def _session(started: str) -> dict:
    return {"started_utc": started, "git_commit": "a" * 40, "git_dirty": False, "jobs": 1}


def _stamp(run_dir: Path, start: str, end: str) -> None:
    """meta.json start_time and host load, the COMPLETE stamp, ss samples and a ping file, as a recorded run has."""
    meta = json.loads((run_dir / "meta.json").read_text())
    meta.update({"start_time": start, "host_load": {"cpu_pressure_some_pct": 1.5}})
    (run_dir / "meta.json").write_text(json.dumps(meta))
    if (run_dir / "COMPLETE").exists():
        (run_dir / "COMPLETE").write_text(end + "\n")
        (run_dir / "ss").mkdir(exist_ok=True)
        (run_dir / "ss" / "flow1.txt").write_text(SS_TEXT + f"# {run_dir.name}\n")
        (run_dir / "ping").mkdir(exist_ok=True)
        (run_dir / "ping" / "path1.txt").write_text(f"[1.0] 64 bytes from 10.4.1.2 {run_dir.name}\n")
    (run_dir / "capture.log").write_text(f"[00:00:00] {run_dir.name}\n")


def _campaign(root: Path) -> Path:
    """test_dataset's hand-made campaign with one recording session, run start times, ss samples, and a skipped run
    without meta.json (partition s-unknown)."""
    camp = build_campaign(root, reps=2)
    (camp / "campaign.yaml").write_text("name: synth\n")
    order = sorted(d.name for d in (camp / "runs").iterdir())
    (camp / "campaign.json").write_text(json.dumps({"name": "synth", "seed": 1, "backend": "netns", "order": order,
                                                    "sessions": [_session(SESSION1)]}))
    for i, rid in enumerate(order):
        _stamp(camp / "runs" / rid, f"2026-11-21T00:{i:02d}:00.123456789Z", f"2026-11-21T00:{i:02d}:30Z")
    (camp / "runs" / SKIPPED_NO_META / "meta.json").unlink()
    dataset.load_campaign(camp, jobs=1, progress=False)   # derived tables, as a recorded campaign has them
    return camp


def _add_session(camp: Path) -> str:
    """A second recording session with one more run (a third repetition); returns its run id."""
    rid = REP1.replace("rep01", "rep03")
    shutil.copytree(camp / "runs" / REP1, camp / "runs" / rid)
    shutil.rmtree(camp / "runs" / rid / "derived")
    p = json.loads((camp / "runs" / rid / "params.json").read_text())
    (camp / "runs" / rid / "params.json").write_text(json.dumps({**p, "rep": 3, "run_id": rid}))
    _stamp(camp / "runs" / rid, "2026-11-22T00:00:10Z", "2026-11-22T00:00:40Z")
    cj = json.loads((camp / "campaign.json").read_text())
    cj["sessions"].append(_session(SESSION2))
    cj["order"].append(rid)
    (camp / "campaign.json").write_text(json.dumps(cj))
    return rid


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """(campaign, run-directory bundle, columnar bundle converted from it by the CLI)."""
    root = tmp_path_factory.mktemp("columnar")
    camp = _campaign(root / "camp")
    assert bundle.run(bundle_args(camp, root / "old", 50)) == 0
    r = _mpcc("bundle", "--convert", root / "old", "--out", root / "col")
    assert r.returncode == 0, r.stderr
    return SimpleNamespace(root=root, camp=camp, old=root / "old", col=root / "col")


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MPCC_BUNDLE_CACHE", str(tmp_path / "cache"))   # never the checkout's data/processed


def _load(d):
    return dataset.load_campaign(d, jobs=1, progress=False)


def _assert_same_load(a, b):
    pd.testing.assert_frame_equal(a, b)
    pd.testing.assert_frame_equal(a.attrs["runs"], b.attrs["runs"])


def _sha(d: Path) -> dict:
    """{relative path: sha256} of the partition files (tables and captures) of a columnar bundle."""
    return {p.relative_to(d).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.rglob("*"))
            if p.is_file() and p.parent != d}


# ----------------------------------------------------------------------------------------------- (a) same tables

def test_columnar_bundle_loads_as_the_run_directory_bundle(made):
    from analysis.claims import evaluate
    old, col = _load(made.old), _load(made.col)
    _assert_same_load(col, old)
    assert len(col) == 6 and set(col.attrs["runs"]["status"]) == {"complete", "skipped"}
    pd.testing.assert_frame_equal(evaluate(col, n_boot=200, seed=0), evaluate(old, n_boot=200, seed=0))
    pd.testing.assert_frame_equal(dataset.run_status(made.col), dataset.run_status(made.old))
    assert dataset.campaign_family_id(made.col) == "000"


def test_layout_and_manifest(made):
    m = json.loads((made.col / "bundle.json").read_text())
    old = json.loads((made.old / "bundle.json").read_text())
    assert m["format"] == "columnar/1" and m["converted"]["from"] and bundle_store.verify(made.col) == []
    assert {k: v for k, v in m.items() if k not in ("format", "partitions", "converted", "size_mb", "bundle_dir")} == \
        {k: v for k, v in old.items() if k not in ("size_mb", "bundle_dir")}
    assert sorted(m["partitions"]) == [bundle_store.UNKNOWN, P1]
    p1 = m["partitions"][P1]
    assert p1["session"]["started_utc"] == SESSION1 and (p1["complete"], p1["skipped"]) == (4, 0)
    assert m["partitions"][bundle_store.UNKNOWN]["skipped"] == 1
    assert set(p1["files"]) >= {f"{t}/{P1}.parquet" for t in bundle_store.TABLES}
    assert any(f.startswith(f"captures/{REP1}/") and f.endswith(".pcap.xz") for f in p1["files"])
    tops = {p.relative_to(made.col).parts[0] for p in made.col.rglob("*") if p.is_file()}
    assert tops == {"bundle.json", "README.md", "campaign.yaml", "campaign.json", "captures", *bundle_store.TABLES}
    assert not (made.col / "runs" / REP1).exists()
    ss = bundle_store.read_table(made.col, "ss", run_ids=[REP1])
    assert list(ss["path"]) == ["ss/flow1.txt"] and ss["content"].iloc[0].decode() == SS_TEXT + f"# {REP1}\n"
    runs = bundle_store.read_table(made.col, "runs").set_index("run_id")
    meta = json.loads(runs.loc[REP1, "meta_json"])
    assert meta["start_time"].startswith("2026-11-21T00:") and meta["host_load"]["cpu_pressure_some_pct"] == 1.5
    assert runs.loc[REP1, "meta_json"] == (made.old / "runs" / REP1 / "meta.json").read_text()
    readme = (made.col / "README.md").read_text()
    assert "columnar/1" in readme and f"`{P1}`" in readme


# ----------------------------------------------------------------------------------------------- (b) partitions stay

def test_a_new_session_adds_files_and_keeps_the_others(made, tmp_path):
    camp = tmp_path / "camp"
    shutil.copytree(made.camp, camp)
    before = _sha(made.col)
    col = tmp_path / "col"
    shutil.copytree(made.col, col)
    rid = _add_session(camp)
    assert bundle.run(bundle_args(camp, tmp_path / "old2", 50)) == 0
    bundle_store.write_columnar(tmp_path / "old2", col, force=True)
    after = _sha(col)
    assert {k: v for k, v in after.items() if P2 not in k} == before       # every earlier file byte-identical
    assert {f"runs/{P2}.parquet", f"rows/{P2}.parquet", f"ss/{P2}.parquet"} <= set(after)
    bundle_store.write_columnar(tmp_path / "old2", tmp_path / "fresh")      # same bytes from scratch, too
    assert _sha(tmp_path / "fresh") == after
    df = _load(col)
    assert rid in set(df["run_id"])
    _assert_same_load(df, _load(tmp_path / "old2"))


def test_a_later_partition_supersedes(made, tmp_path):
    """A run recorded again in a later session (its record in both partitions) counts from the later one."""
    col = tmp_path / "col"
    shutil.copytree(made.col, col)
    m = json.loads((col / "bundle.json").read_text())
    for t in ("runs", "rows"):
        shutil.copyfile(col / t / f"{P1}.parquet", col / t / f"{P2}.parquet")
    m["partitions"][P2] = {"session": None, "runs": 4, "complete": 4, "skipped": 0,
                           "files": {f"{t}/{P2}.parquet": {} for t in ("runs", "rows")}}
    (col / "bundle.json").write_text(json.dumps(m))
    df = _load(col)
    _assert_same_load(df, _load(made.col))
    assert set(bundle_store.read_table(col, "runs")["partition"]) == {P2, bundle_store.UNKNOWN}


# ----------------------------------------------------------------------------------------------- (c) run directories

def test_materialize_gives_a_run_directory_bundle(made, tmp_path):
    ids = bundle_store.materialize(made.col, tmp_path / "m")
    assert len(ids) == 5 and bundle_store.bundle_format(tmp_path / "m") is None
    d = tmp_path / "m" / "runs" / REP1
    for name in ("params.json", "meta.json", "capture.log", "COMPLETE", "derived/flows.parquet",
                 "derived/fingerprint.json", "ss/flow1.txt", "ping/path1.txt", "iperf3/flow1-server.json",
                 "router1.pcap.xz"):
        assert (d / name).is_file(), name
    assert (d / "COMPLETE").read_text() == (made.old / "runs" / REP1 / "COMPLETE").read_text()
    assert (tmp_path / "m" / "runs" / SKIPPED_NO_META / "SKIPPED").is_file()
    _assert_same_load(_load(tmp_path / "m"), _load(made.old))   # the captured run's fingerprint still matches
    with pytest.raises(AnalysisError, match="exists"):
        bundle_store.materialize(made.col, tmp_path / "m", [REP1])


def test_tables_a_bundle_lacks_are_empty(made, tmp_path):
    """A bundle without a files/ (or any but runs/) table, e.g. data/paper's runs hold no other files."""
    col = tmp_path / "col"
    shutil.copytree(made.col, col)
    m = json.loads((col / "bundle.json").read_text())
    for e in m["partitions"].values():
        e["files"] = {k: v for k, v in e["files"].items() if not k.startswith(("files/", "ss/"))}
    (col / "bundle.json").write_text(json.dumps(m))
    assert list(bundle_store.read_table(col, "files").columns) == ["run_id", "path", "content", "partition"]
    bundle_store.materialize(col, tmp_path / "m")
    assert not (tmp_path / "m" / "runs" / REP1 / "ss").exists() and (tmp_path / "m" / "runs" / REP1 / "COMPLETE").is_file()
    _assert_same_load(_load(col), _load(made.col))


def test_resume_from_a_columnar_bundle(made, tmp_path):
    from mpcc.campaign.runner import restore_from_bundle
    order = json.loads((made.camp / "campaign.json").read_text())["order"]
    campaign = SimpleNamespace(name="synth", runs=[SimpleNamespace(run_id=rid) for rid in order])
    n = restore_from_bundle(made.col, tmp_path / "out", made.camp / "campaign.yaml", campaign, "netns", 1)
    assert n == 5 and not [p for p in (tmp_path / "out").iterdir() if p.name.startswith(".restore")]
    assert json.loads((tmp_path / "out" / "campaign.json").read_text())["sessions"] == [_session(SESSION1)]
    _assert_same_load(_load(tmp_path / "out"), _load(made.old))
    assert restore_from_bundle(made.col, tmp_path / "out", made.camp / "campaign.yaml", campaign, "netns", 1) == 0


def _planned(camp: Path, **changed) -> SimpleNamespace:
    """A campaign named "synth-extended" that repeats the hand-made campaign's runs (their params.json without
    campaign, seed and backend, as the runner adds those), with ``changed`` parameters of run REP1 altered."""
    runs = []
    for d in sorted((camp / "runs").iterdir()):
        p = {k: v for k, v in json.loads((d / "params.json").read_text()).items()
             if k not in ("campaign", "seed", "backend")}
        p.update(changed if d.name == REP1 else {})
        runs.append(SimpleNamespace(run_id=d.name, params=(lambda p=p: dict(p))))
    return SimpleNamespace(name="synth-extended", runs=runs)


def test_reuse_copies_the_runs_of_another_campaign_with_their_sessions(made, tmp_path):
    """reuse_runs_from: the other campaign's file and name differ, its runs' parameters do not; the copies keep the
    name of the campaign that recorded them, its sessions are merged naming it, its name and order are not taken."""
    from mpcc.campaign.runner import restore_from_bundle
    other = tmp_path / "other.yaml"
    other.write_text("name: synth\nprofiles: {extended: {reps: 10}}\n")
    out = tmp_path / "out"
    assert restore_from_bundle(made.col, out, other, _planned(made.camp), "netns", 1, reuse=True) == 5
    meta = json.loads((out / "campaign.json").read_text())
    assert meta["sessions"] == [{**_session(SESSION1), "campaign": "synth"}]
    assert "name" not in meta and "order" not in meta
    assert json.loads((out / "runs" / REP1 / "params.json").read_text())["campaign"] == "synth"
    _assert_same_load(_load(out), _load(made.old))
    assert restore_from_bundle(made.col, out, other, _planned(made.camp), "netns", 1, reuse=True) == 0
    with pytest.raises(UserError, match="its campaign.yaml differs"):   # without reuse: the same file only
        restore_from_bundle(made.col, tmp_path / "o2", other, _planned(made.camp), "netns", 1)


def test_reuse_refuses_runs_recorded_with_other_parameters(made, tmp_path):
    from mpcc.campaign.runner import restore_from_bundle
    out = tmp_path / "out"
    with pytest.raises(UserError, match=r"was recorded with loss_pct=0.0, this campaign gives it 1.0; nothing reused"):
        restore_from_bundle(made.col, out, made.camp / "campaign.yaml", _planned(made.camp, loss_pct=1.0),
                            "netns", 1, reuse=True)
    assert not list((out / "runs").iterdir())
    with pytest.raises(UserError, match="seed 1, backend netns; this is 'synth-extended', seed 2"):
        restore_from_bundle(made.col, out, made.camp / "campaign.yaml", _planned(made.camp), "netns", 2, reuse=True)


def test_ss_samples_and_recording_time_read_a_columnar_bundle(made, capsys):
    from analysis.figures import parse_ss, ss_path
    sys.path.insert(0, str(REPO / "tools"))
    import recording_time
    f = ss_path(made.col / "runs" / REP1, 1)
    assert f is not None and parse_ss(f)["cwnd_pkts"].tolist() == [10.0]
    assert ss_path(made.col / "runs" / "no_such_run", 1) is None
    outs = []
    for d in (made.old, made.col):
        assert recording_time.main([str(d)]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1] and outs[0].startswith("4 runs")


def test_recording_time_reads_the_runs_table_without_materialising(made, tmp_path, monkeypatch, capsys):
    """recording_time.py needs each run's meta.json and COMPLETE stamp only: both are in a columnar bundle's runs
    table, so no run is materialised into the cache (data/processed/bundles: 242 MB for data/fidelity000's 810 runs
    of ss text before)."""
    sys.path.insert(0, str(REPO / "tools"))
    import recording_time
    cache = tmp_path / "cache"
    monkeypatch.setenv("MPCC_BUNDLE_CACHE", str(cache))
    assert recording_time.main([str(made.col)]) == 0 and capsys.readouterr().out.startswith("4 runs")
    assert not cache.exists() or not any(cache.rglob("*"))


def test_bundle_format_columnar_from_a_campaign(made, tmp_path):
    """mpcc bundle --format columnar: same load as the run-directory bundle; again on top of itself (--force) reuses
    its captures and leaves every file as it was."""
    args = bundle_args(made.camp, tmp_path / "b", 50, fmt="columnar")
    assert bundle.run(args) == 0
    _assert_same_load(_load(tmp_path / "b"), _load(made.old))
    from analysis.bundle_digest import rows_digest, runs_digest
    rec = json.loads((tmp_path / "b" / "bundle.json").read_text())["digests"]   # what was bundled, checked on it
    got = _load(tmp_path / "b")
    assert (rec["rows_sha256"], rec["runs_sha256"]) == (rows_digest(got), runs_digest(got))
    before = _sha(tmp_path / "b")
    args.force = True
    assert bundle.run(args) == 0
    assert _sha(tmp_path / "b") == before == _sha(made.col)


def test_columnar_budget_is_the_columnar_bundles_size(made, tmp_path):
    """--max-mb bounds the bundle as written: with --format columnar, the runs count as their columnar/1 tables, so a
    budget that the runs as run directories exceed but their tables fit is enough (then captures fill the rest, and
    the bundle stays within it); the same budget for a run-directory bundle is a one-line error."""
    full = tmp_path / "full"
    assert bundle.run(bundle_args(made.camp, full, 50, fmt="columnar")) == 0
    tables = bundle._dir_size(full) - bundle._dir_size(full / "captures") - 4096   # + README, bundle.json
    dirs = tmp_path / "dirs"
    with pytest.raises(Exception, match="the runs alone take") as err:
        bundle.run(bundle_args(made.camp, dirs, (tables + 20_000) / 1e6))
    staged = float(str(err.value).split("take ")[1].split(" MB")[0]) * 1e6
    assert staged > tables + 20_000                      # the run directories do not fit ...
    budget = (tables + 20_000) / 1e6                     # ... their tables do, with 20 kB to spare
    b = tmp_path / "b"
    assert bundle.run(bundle_args(made.camp, b, budget, fmt="columnar")) == 0
    m = json.loads((b / "bundle.json").read_text())
    assert m["max_mb"] == budget and bundle._dir_size(b) <= budget * 1e6 and m["size_mb"] <= budget
    _assert_same_load(_load(b), _load(made.old))
    assert not list(tmp_path.glob(".b.*"))               # no scratch left beside it
    small = tables / 2 / 1e6
    with pytest.raises(Exception, match="as columnar/1 tables"):
        bundle.run(bundle_args(made.camp, tmp_path / "c", small, fmt="columnar"))
    assert not (tmp_path / "c").exists() and not list(tmp_path.glob(".c.*"))


def test_rows_of_an_older_definition_are_analysed_again(made, tmp_path, monkeypatch):
    """A run that ships its captures and whose stored rows have another DERIVED_VERSION is analysed again (as in a
    run-directory bundle); the others' rows are used as they are."""
    from analysis.families import roundrobin
    seen = []
    real = bundle_store._reanalyse
    monkeypatch.setattr(bundle_store, "_reanalyse", lambda b, ids, *a: seen.append(sorted(ids)) or real(b, ids, *a))
    monkeypatch.setattr(roundrobin, "DERIVED_VERSION", roundrobin.DERIVED_VERSION + 1)
    old = tmp_path / "old"
    shutil.copytree(made.old, old)
    captured = json.loads((made.old / "bundle.json").read_text())["captured_runs"]
    _assert_same_load(_load(made.col), _load(old))
    assert seen == [sorted(captured)]


# ----------------------------------------------------------------------------------------------- (d), (e) input

def test_run_directory_bundles_still_load(made):
    assert bundle_store.bundle_format(made.old) is None and len(_load(made.old)) == 6


@pytest.mark.parametrize("case", ["unknown_format", "bad_manifest", "missing_partition", "corrupt_partition"])
def test_bad_bundles_are_one_line_errors(made, tmp_path, case):
    col = tmp_path / "col"
    shutil.copytree(made.col, col)
    m = json.loads((col / "bundle.json").read_text())
    if case == "unknown_format":
        (col / "bundle.json").write_text(json.dumps({**m, "format": "columnar/9"}))
        want = "columnar/9"
    elif case == "bad_manifest":
        (col / "bundle.json").write_text("{not json")
        want = "unreadable bundle manifest"
    elif case == "missing_partition":
        (col / "rows" / f"{P1}.parquet").unlink()
        want = "missing"
    else:
        (col / "rows" / f"{P1}.parquet").write_bytes(b"PAR1 not parquet")
        want = "unreadable"
    with pytest.raises(AnalysisError, match=want):
        _load(col)
    r = _mpcc("scorecard", col, "--no-progress")
    assert r.returncode == 2 and want in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_convert_rejects_bad_input(made, tmp_path):
    cases = [(("--convert", tmp_path / "nope", "--out", tmp_path / "o"), "no such bundle directory"),
             (("--convert", made.camp, "--out", tmp_path / "o"), "not a bundle"),
             (("--convert", made.col, "--out", tmp_path / "o"), "already a columnar/1 bundle"),
             (("--convert", made.old), "--convert needs --out"),
             (("--convert", made.old, "--out", made.camp), "--force")]
    for args, want in cases:
        r = _mpcc("bundle", *args)
        assert r.returncode == 2 and want in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)


def test_one_run_is_materialised_alone_and_old_copies_go(made, tmp_path, monkeypatch):
    """resolve_run_dir copies only the run asked for into the cache (data/paper whole is 466 MB of plain text); a
    changed bundle.json makes a new copy and removes the old one."""
    from analysis import bundle_store
    monkeypatch.setenv("MPCC_BUNDLE_CACHE", str(tmp_path / "cache"))
    col = tmp_path / made.col.name
    shutil.copytree(made.col, col)
    d = bundle_store.resolve_run_dir(col / "runs" / REP1)
    assert d.is_dir() and [p.name for p in d.parent.iterdir()] == [REP1]
    assert (d / "meta.json").read_text() == (made.old / "runs" / REP1 / "meta.json").read_text()
    (col / "bundle.json").write_text((col / "bundle.json").read_text() + "\n")
    d2 = bundle_store.resolve_run_dir(col / "runs" / REP1)
    assert d2 != d and not d.exists() and len(list((tmp_path / "cache").iterdir())) == 1
    assert bundle_store.runs_dir(col) == d2.parent and len(list(d2.parent.iterdir())) > 1
