"""mpcc bundle / mpcc reproduce: argument checks and the capture priority (no root needed)."""
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

from mpcc.commands import bundle

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))   # test_dataset's hand-built campaign


def _mpcc(*args):
    code = ("import sys, mpcc.cli as c\n"
            "c.COMMANDS.append('bundle') if 'bundle' not in c.COMMANDS else None\n"
            "sys.exit(c.main(sys.argv[1:]))")
    return subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, capture_output=True, text=True, timeout=120)


def test_bisect_order_spreads_values():
    assert bundle._bisect_order([10, 20, 30, 40, 50]) == [10, 50, 30, 20, 40]
    assert bundle._bisect_order(["single", "multipath"]) == ["multipath", "single"]
    assert bundle._bisect_order([]) == []


def test_capture_priority_one_rep_per_configuration():
    runs = pd.DataFrame([
        {"run_id": f"link_delay__{cc}__d{d}__rep{r:02d}", "status": st, "experiment": "link_delay", "cc": cc,
         "cc2": None, "path_mode": "multipath", "link_delay_ms": d, "loss_pct": 0, "cbr_mbps": None,
         "path_skew_ms": 0, "rep": r}
        for cc in ("reno", "bbr") for d in (10, 50, 100) for r, st in ((1, "incomplete"), (2, "complete"), (3, "complete"))
    ] + [{"run_id": "single_vs_multi__reno__single__rep01", "status": "complete", "experiment": "single_vs_multi",
          "cc": "reno", "cc2": None, "path_mode": "single", "link_delay_ms": 10, "loss_pct": 0, "cbr_mbps": None,
          "path_skew_ms": 0, "rep": 1},
         {"run_id": "single_vs_multi__bic__single__rep01", "status": "skipped", "experiment": "single_vs_multi",
          "cc": "bic", "cc2": None, "path_mode": "single", "link_delay_ms": 10, "loss_pct": 0, "cbr_mbps": None,
          "path_skew_ms": 0, "rep": 1}])
    order = bundle.capture_priority(runs)
    assert order[0] == "single_vs_multi__reno__single__rep01"  # Table 3 first, skipped runs never
    ld = [r for r in order if r.startswith("link_delay")]
    assert len(ld) == 6 and all(r.endswith("rep02") for r in ld)  # lowest COMPLETE rep of each configuration
    assert ld[:4] == ["link_delay__reno__d10__rep02", "link_delay__bbr__d10__rep02",
                      "link_delay__reno__d100__rep02", "link_delay__bbr__d100__rep02"]


def test_bundle_rejects_bad_input(tmp_path):
    r = _mpcc("bundle", str(tmp_path / "nope"), "--out", str(tmp_path / "b"))
    assert r.returncode != 0 and "not a campaign directory" in r.stderr and "Traceback" not in r.stderr
    camp = tmp_path / "camp"
    (camp / "runs").mkdir(parents=True)
    out = tmp_path / "occupied"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    r = _mpcc("bundle", str(camp), "--out", str(out), "--force")
    assert r.returncode != 0 and "not a bundle" in r.stderr
    assert (out / "precious.txt").read_text() == "keep me"
    r = _mpcc("bundle", str(camp), "--out", str(out))
    assert r.returncode != 0 and "--force" in r.stderr


def test_bundle_of_an_empty_campaign(tmp_path):
    camp = tmp_path / "camp"
    (camp / "runs").mkdir(parents=True)
    r = _mpcc("bundle", str(camp), "--out", str(tmp_path / "b"))
    assert r.returncode == 0, r.stderr
    m = json.loads((tmp_path / "b" / "bundle.json").read_text())
    assert m["runs_total"] == 0 and (tmp_path / "b" / "README.md").is_file()


def test_reproduce_rejects_bad_input(tmp_path):
    r = _mpcc("reproduce", "--data", str(tmp_path / "nope"), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "not a campaign directory" in r.stderr and "Traceback" not in r.stderr
    (tmp_path / "c" / "runs").mkdir(parents=True)
    r = _mpcc("reproduce", "--data", str(tmp_path / "c"), "--inplace")
    assert r.returncode == 2 and "--inplace" in r.stderr
    r = _mpcc("reproduce", "--data", str(tmp_path / "c"), "--only", "zz*")
    assert r.returncode == 2 and "no notebooks match" in r.stderr


def test_reproduce_runs_this_python_quietly(tmp_path):
    """The notebooks' kernel is this environment's python (the Makefile's .venv), and executing them prints only the
    progress bar and the summary: no kernel transport warning ("running over TCP without encryption")."""
    import nbformat
    nb_dir, camp, out = tmp_path / "nb", tmp_path / "camp", tmp_path / "out"
    nb_dir.mkdir()
    (camp / "runs").mkdir(parents=True)
    params = nbformat.v4.new_code_cell('campaign_dir = ""\noutput_dir = ""\nalpha = 0.05\nn_boot = 9999\nderived_dir = None',
                                       metadata={"tags": ["parameters"]})  # all of mpcc's: papermill warns otherwise
    probe = nbformat.v4.new_code_cell("import pathlib, sys\n"
                                      "pathlib.Path(output_dir, 'kernel.json').write_text("
                                      "__import__('json').dumps([sys.prefix, sys.executable]))")
    nb = nbformat.v4.new_notebook(cells=[params, probe], metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"}})
    nbformat.write(nb, str(nb_dir / "probe.ipynb"))
    r = _mpcc("reproduce", "--data", str(camp), "--notebooks", str(nb_dir), "--out", str(out), "--no-html")
    assert r.returncode == 0, r.stderr
    prefix, exe = json.loads((out / "kernel.json").read_text())
    assert prefix == sys.prefix and exe == sys.executable
    lines = [ln.strip() for ln in r.stderr.replace("\r", "\n").splitlines() if ln.strip()]
    assert not [ln for ln in lines if "without encryption" in ln or "warning" in ln.lower()], r.stderr
    assert all(ln.startswith("reproduce:") for ln in lines[:-2]) and lines[-2].startswith("mpcc reproduce: 1 of 1"), lines
    assert lines[-1] == f"mpcc reproduce: report: {out / 'index.html'} (data: {camp.resolve()})", lines


def _synthetic_campaign(root: Path) -> Path:
    from test_dataset import build_campaign
    return build_campaign(root, reps=2)


def test_runs_without_raw_captures_are_not_counted_as_captured(tmp_path):
    """A run restored from a bundle that did not ship its captures (derived table only) is not a candidate: the
    configuration's captures come from its lowest repetition that has them, and every run listed as captured has
    its captures in the bundle."""
    from analysis.dataset import load_campaign

    camp = _synthetic_campaign(tmp_path / "camp")
    load_campaign(camp, jobs=1, progress=False)                 # derived tables, as a recorded campaign has them
    rep1 = camp / "runs" / "single_vs_multi__cubic__multipath__d10ms__l0pct__rep01"
    for p in rep1.glob("*.pcap"):
        p.unlink()
    r = _mpcc("bundle", str(camp), "--out", str(tmp_path / "b"), "--max-mb", "5")
    assert r.returncode == 0, r.stderr
    m = json.loads((tmp_path / "b" / "bundle.json").read_text())
    assert m["runs_without_raw_captures_in_source"] == [rep1.name]
    assert rep1.name not in m["captured_runs"]
    assert rep1.name.replace("rep01", "rep02") in m["captured_runs"]
    for rid in m["captured_runs"]:
        assert (tmp_path / "b" / "runs" / rid / "router1.pcap.xz").is_file(), rid
    assert not list((tmp_path / "b" / "runs" / rep1.name).glob("*.pcap*"))
    assert "1 run(s) had no raw captures" in (tmp_path / "b" / "README.md").read_text()


def test_captures_stop_being_compressed_when_nothing_more_fits(tmp_path, monkeypatch):
    """With room for the runs and one run's captures only, the first candidate's captures go in, and the other
    candidates are not xz'd once the room left is smaller than every run's captures so far; all are listed."""
    from analysis.dataset import load_campaign

    camp = _synthetic_campaign(tmp_path / "camp")
    load_campaign(camp, jobs=1, progress=False)
    seen = {}
    fill, add = bundle._fill_with_captures, bundle._add_captures

    def spy_fill(camp_, tmp, stage, candidates, size, *a):
        seen["runs_only"] = size
        return fill(camp_, tmp, stage, candidates, size, *a)

    def spy_add(src, dst, stage=None):
        seen[src.name] = add(src, dst, stage)
        return seen[src.name]
    monkeypatch.setattr(bundle, "_fill_with_captures", spy_fill)
    monkeypatch.setattr(bundle, "_add_captures", spy_add)
    assert bundle.run(bundle_args(camp, tmp_path / "all", 50)) == 0
    order = json.loads((tmp_path / "all" / "bundle.json").read_text())["captured_runs"]
    assert len(order) == 3      # 3 configurations (two reps of one), all fit
    xz_calls = []
    real = bundle._xz_to
    monkeypatch.setattr(bundle, "_xz_to", lambda src, dst: xz_calls.append(src) or real(src, dst))
    # the runs with the room bundle.json and README.md take, then one run's captures with its README line
    budget = seen["runs_only"] + seen[order[0]] + bundle.CAPTURED_RUN_BYTES["dirs"] + 100
    assert all(seen[r] > 100 for r in order[1:])
    assert bundle.run(bundle_args(camp, tmp_path / "small", budget / 1e6)) == 0
    m = json.loads((tmp_path / "small" / "bundle.json").read_text())
    assert m["captured_runs"] == order[:1]
    assert m["configurations_without_captures"] == order[1:] and m["configurations_not_tried"] == 2
    assert bundle._dir_size(tmp_path / "small") <= budget     # bundle.json and README.md counted in the budget
    assert [p.name for p in xz_calls] == ["router1.pcap", "receiver.pcap"]      # the first run's only


def bundle_args(camp: Path, out: Path, max_mb: float, jobs: int = 1, fmt: str = "dirs"):
    import argparse
    return argparse.Namespace(campaign=str(camp), out=str(out), max_mb=max_mb, derived_dir=None, jobs=jobs,
                              force=False, ss_reps=None, format=fmt, convert=None)


def test_ss_samples_of_the_lowest_repetitions_only(tmp_path):
    """--ss-reps 1: the ss samples of each configuration's lowest complete repetition are bundled, the other
    repetitions keep their derived tables (same rows) without them; bad values are one-line errors."""
    from analysis.dataset import load_campaign

    camp = _synthetic_campaign(tmp_path / "camp")
    for d in (camp / "runs").iterdir():
        (d / "ss").mkdir(exist_ok=True)
        (d / "ss" / "flow1.txt").write_text(f"ESTAB 0 0 10.0.1.2:40001 10.0.3.2:5201 cubic cwnd:10 {d.name}\n")
    r = _mpcc("bundle", str(camp), "--out", str(tmp_path / "b"), "--max-mb", "5", "--ss-reps", "1")
    assert r.returncode == 0, r.stderr
    runs = tmp_path / "b" / "runs"
    stem = "single_vs_multi__cubic__multipath__d10ms__l0pct__rep0"
    assert (runs / f"{stem}1" / "ss" / "flow1.txt.xz").is_file()
    assert not (runs / f"{stem}2" / "ss").exists() and (runs / f"{stem}2" / "derived" / "flows.parquet").is_file()
    assert (runs / "tcp_fairness__cubic+reno__multipath__d10ms__l0pct__rep01" / "ss" / "flow1.txt.xz").is_file()
    m = json.loads((tmp_path / "b" / "bundle.json").read_text())
    readme = (tmp_path / "b" / "README.md").read_text()
    assert m["ss_reps"] == 1 and "only of the 1 lowest complete repetition" in readme and "--ss-reps 1 --force" in readme
    pd.testing.assert_frame_equal(load_campaign(tmp_path / "b", progress=False).reset_index(drop=True),
                                  load_campaign(camp, progress=False).reset_index(drop=True))
    for bad in ("0", "x"):
        r = _mpcc("bundle", str(camp), "--out", str(tmp_path / f"c{bad}"), "--ss-reps", bad)
        assert r.returncode == 2 and "Traceback" not in r.stderr
        assert "--ss-reps" in r.stderr.strip().splitlines()[-1]        # (argparse puts its usage lines first)


def test_rebundling_a_restored_bundle_keeps_its_record(tmp_path):
    """A campaign directory restored from a bundle (`--resume-from` on a new machine, or to re-bundle within a
    smaller --max-mb) bundles again with the same rows, the incomplete runs the first bundle left out (by id and
    per experiment) and the campaign's run order."""
    from types import SimpleNamespace

    from analysis.dataset import load_campaign
    from mpcc.campaign.runner import restore_from_bundle

    camp = _synthetic_campaign(tmp_path / "camp")
    (camp / "campaign.yaml").write_text("name: synth\n")
    meta = json.loads((camp / "campaign.json").read_text())
    meta["order"] = sorted(d.name for d in (camp / "runs").iterdir())
    (camp / "campaign.json").write_text(json.dumps(meta))
    assert bundle.run(bundle_args(camp, tmp_path / "b1", 50)) == 0
    m1 = json.loads((tmp_path / "b1" / "bundle.json").read_text())
    assert m1["incomplete_runs"] == ["link_delay__reno__multipath__d20ms__l0pct__rep01"]
    campaign = SimpleNamespace(name="synth", runs=[SimpleNamespace(run_id=rid) for rid in meta["order"]])
    restore_from_bundle(tmp_path / "b1", tmp_path / "restored", camp / "campaign.yaml", campaign, "netns", 1)
    assert bundle.run(bundle_args(tmp_path / "restored", tmp_path / "b2", 50)) == 0
    m2 = json.loads((tmp_path / "b2" / "bundle.json").read_text())
    assert m2["incomplete_runs"] == m1["incomplete_runs"] and m2["experiments"] == m1["experiments"]
    assert m2["captured_runs"] == m1["captured_runs"]
    assert json.loads((tmp_path / "b2" / "campaign.json").read_text())["order"] == meta["order"]
    pd.testing.assert_frame_equal(load_campaign(tmp_path / "b2", progress=False).reset_index(drop=True),
                                  load_campaign(camp, progress=False).reset_index(drop=True))


def test_a_restored_incomplete_run_recorded_again_counts_as_what_it_is_now(tmp_path):
    """An id an earlier bundle left out as incomplete stays listed only while no directory of it exists here: once
    recorded again (complete, or cut again), it counts from its own directory."""
    (tmp_path / "campaign.json").write_text(json.dumps({"incomplete_runs_restored": ["a__rep01", "b__rep01",
                                                                                     "c__rep01"]}))
    runs = pd.DataFrame({"run_id": ["a__rep01", "b__rep01", "d__rep01"],
                         "status": ["complete", "incomplete", "incomplete"]})
    cmeta = bundle._campaign_json(tmp_path)
    assert bundle._incomplete_runs(cmeta, runs) == (["b__rep01", "c__rep01", "d__rep01"], ["c__rep01"])


def test_stage_captures_recompresses_a_queue_xz(tmp_path):
    """The recording queue xz's a finished run's captures quickly (xz -1, tools/record_queue.sh compress_raw); the
    bundle stages them again at preset 9 from their decompressed bytes (they were shipped at preset 1 before, too
    large for the budget: study 002's paper bundle of 2026-11-28 lost its one captured configuration that way)."""
    import lzma
    import json as _json
    run = tmp_path / "camp" / "runs" / "test1__cubic__rep01"
    run.mkdir(parents=True)
    (run / "params.json").write_text(_json.dumps({"family": "002"}))
    data = (b"\xd4\xc3\xb2\xa1" + bytes(range(256)) * 64) * 400            # compressible, about 6.5 MB
    (run / "client1.pcap.xz").write_bytes(lzma.compress(data, format=lzma.FORMAT_XZ, preset=1))
    stage = tmp_path / "stage"
    bundle._stage_captures(tmp_path / "camp", [run.name], stage, jobs=1)
    staged = stage / run.name / "client1.pcap.xz"
    assert lzma.decompress(staged.read_bytes()) == data
    assert staged.stat().st_size <= (run / "client1.pcap.xz").stat().st_size
