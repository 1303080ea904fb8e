"""analysis.kernel415 (study 000's loss experiment on the paper's Linux 4.15 beside Debian's 6.1, in one VM) on
hand-built rows with known answers: the arms found by directory, the claims' drops per kernel judged as the claims
judge them, 4.15's effect and its direction, the VM beside the host, progress of a raw recording, and the CLI's
one-line error; tools/bundle_kernel415.py's refusal of a directory that is not a results directory."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import kernel415 as k4

REPO = Path(__file__).resolve().parents[1]
NOISE = np.array([-0.2, -0.1, 0.0, 0.1, 0.2])     # mean 0, sd 0.158


def _rows(cc, loss, mean, tag=""):
    return [{"run_id": f"loss_rate__{cc}__multipath__d10ms__l{loss:g}pct{tag}__q-tbf-netem__rep{i:02d}",
             "flow": 1, "experiment": "loss_rate", "path_mode": "multipath", "cc": cc, "loss_pct": float(loss),
             "goodput_mbps": mean + e, "retransmissions": 100.0 * loss + i, "spurious_retransmissions": float(i)}
            for i, e in enumerate(NOISE, start=1)]


def _frames():
    # bic: 6.1 drops 3 Mbit/s at 1 % (18 -> 15), 4.15 drops 7 (18 -> 11); a second flow's row is ignored
    old = pd.DataFrame(_rows("bic", 0, 18.0) + _rows("bic", 1, 11.0))
    new = pd.DataFrame(_rows("bic", 0, 18.0) + _rows("bic", 1, 15.0))
    new = pd.concat([new, new.iloc[[0]].assign(flow=2, goodput_mbps=0.0)], ignore_index=True)
    return {"4.15": old, "6.1": new}


def test_rows_carry_their_kernel():
    df = k4.with_kernel(_frames())
    assert set(df["kernel"]) == {"4.15", "6.1"} and (df["flow"] == 1).all() and len(df) == 20


def test_drops_and_effect_known_answer():
    df = k4.with_kernel(_frames())
    d = k4.drops(df).set_index(["claim", "cc", "kernel"])
    assert d.loc[("S06", "bic", "4.15"), "drop_mbps"] == pytest.approx(7.0)
    assert d.loc[("S06", "bic", "6.1"), "drop_mbps"] == pytest.approx(3.0)
    assert d.loc[("S06", "bic", "4.15"), "verdict"] == "reproduced"       # 7 +- 0.24 inside 7 +- 1
    assert d.loc[("S06", "bic", "6.1"), "verdict"] == "not reproduced"
    assert ("S07", "bic", "4.15") not in d.index                          # no 10 % runs: no S07 row
    e = k4.effects(df).set_index(["claim", "cc"]).loc[("S06", "bic")]
    assert e["diff"] == pytest.approx(4.0) and e["diff_low"] > 0 and e["moved"]
    assert e["toward_paper"] is not None and bool(e["toward_paper"])
    assert e["kernel415_drop_mbps"] == pytest.approx(7.0) and e["baseline_drop_mbps"] == pytest.approx(3.0)
    t = k4.table(df).set_index(["cc", "kernel", "loss_pct"])
    assert t.loc[("bic", "4.15", 1.0), "goodput_mbps"] == pytest.approx(11.0)
    assert t.loc[("bic", "4.15", 1.0), "runs"] == 5


def test_platform_sets_the_vm_beside_the_host():
    df = k4.with_kernel(_frames())
    # the host's untagged (tcp_recovery 1) runs drop 3.5; its __rec3 runs are another arm and stay out
    host = pd.DataFrame(_rows("bic", 0, 19.0) + _rows("bic", 1, 15.5) + _rows("bic", 1, 5.0, tag="__rec3"))
    p = k4.platform(df, host).set_index(["claim", "cc"]).loc[("S06", "bic")]
    assert p["vm_drop_mbps"] == pytest.approx(3.0) and p["host_drop_mbps"] == pytest.approx(3.5)
    assert p["diff"] == pytest.approx(-0.5) and p["diff_high"] < 0 and p["host_n"] == 5
    assert k4.platform(df, None).empty
    assert "VM 6.1" in k4.report(df, host) and "Linux 4.15 minus Linux 6.1" in k4.report(df)


def _raw_arm(root: Path, name: str, complete: int, planned: int):
    runs = root / name / "runs"
    for i in range(complete + 1):
        d = runs / f"loss_rate__bic__multipath__d10ms__l0pct__q-tbf-netem__rep{i + 1:02d}"
        d.mkdir(parents=True)
        if i < complete:                       # the last one is incomplete (no marker)
            (d / "COMPLETE").write_text("")
    (root / name / "campaign.json").write_text(json.dumps({"name": f"kernel415-{name}", "n_runs": planned}))


def test_arms_and_progress_of_a_raw_recording(tmp_path):
    _raw_arm(tmp_path, "linux-4.15", 2, 30)
    _raw_arm(tmp_path, "linux-6.1", 3, 30)
    (tmp_path / "linux-x").mkdir()             # not an arm
    (tmp_path / "incomplete").mkdir()
    assert sorted(k4.arm_dirs(tmp_path)) == ["4.15", "6.1"]
    assert k4.progress(tmp_path) == (5, 60)
    assert k4.cite("S06", "bic", tmp_path) is None          # cited only once every planned run is in
    assert k4.progress(tmp_path / "none") is None and k4.load(tmp_path / "none") is None


def test_cli_one_line_error(tmp_path):
    r = subprocess.run([sys.executable, "-m", "analysis.kernel415", str(tmp_path)], cwd=REPO, capture_output=True,
                       text=True)
    assert r.returncode == 2 and r.stderr.startswith("error: ") and r.stderr.count("\n") == 1


def test_bundler_refuses_a_directory_without_a_plan(tmp_path):
    r = subprocess.run([sys.executable, "tools/bundle_kernel415.py", str(tmp_path), "--out", str(tmp_path / "o")],
                       cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.startswith("error: ") and "params.json" in r.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("script,args,msg", [
    ("testbed/kernel415/run-vm.sh", ["--ccs", "westwood"], "--ccs: each must be reno, bic, cubic or bbr"),
    ("testbed/kernel415/run-vm.sh", ["--ccs", "bic bic"], "lists a cc twice"),
    ("testbed/kernel415/run-vm.sh", ["--losses", "1.0"], "--losses"),
    ("testbed/kernel415/run-vm.sh", ["--losses", "11"], "--losses"),
    ("testbed/kernel415/run-vm.sh", ["--kernels", "4.15"], "--kernels: each must be 'default'"),
    ("testbed/kernel415/run-vm.sh", ["--kernels", "default default"], "lists a kernel twice"),
    ("testbed/kernel415/run-vm.sh", ["--duration-s", "5"], "--duration-s"),
    ("testbed/kernel415/run-vm.sh", ["--reps", "0"], "--reps"),
    ("testbed/kernel415/run-vm.sh", ["--foo", "1"], "unknown option '--foo'"),
    ("testbed/kernel415/run-guest.sh", ["--tb", "/nonexistent"], "--tb must hold capture_tools/run_experiment.sh"),
])
def test_harness_refuses_bad_values(tmp_path, script, args, msg):
    """Every value is checked before anything runs as root or boots: one line on stderr, exit 2, nothing written."""
    out = tmp_path / "out"
    res = subprocess.run(["bash", str(REPO / script), "--out", str(out), *args], cwd=REPO, capture_output=True,
                         text=True, timeout=30)
    assert res.returncode == 2 and res.stderr.startswith("error:") and msg in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and not out.exists()


def test_explanation_cites_the_paper_kernel_once_complete(monkeypatch):
    """S06's explanation (analysis.claims.explain.f000._kernel415): nothing before both arms are complete; a 4.15 drop
    beyond noise toward the paper makes the kind testbed-difference; one within noise keeps the kind; once the kernel
    is measured, the recovery ablation no longer calls RFC 6675 untested."""
    from analysis import recovery000
    from analysis.claims.explain import f000
    monkeypatch.setattr(k4, "cite", lambda sid, cc, root=None: None)
    assert f000._kernel415("S06", "bic", "open") == ("open", "", {})
    moved = {"runs": 60, "drop": {"6.1": (3.1, 2.8, 3.4, "not reproduced"), "4.15": (6.9, 6.5, 7.3, "reproduced")},
             "diff": 3.8, "diff_low": 3.3, "diff_high": 4.3, "moved": True, "toward_paper": True,
             "paper_drop_mbps": 7.0, "loss_pct": 1.0}
    monkeypatch.setattr(k4, "cite", lambda sid, cc, root=None: moved)
    kind, text, ev = f000._kernel415("S06", "bic", "open")
    assert kind == "testbed-difference" and "data/kernel415: 60 runs" in text and "toward the paper's 7" in text
    assert ev["kernel415"]["drop_linux415_mbps"] == 6.9 and ev["kernel415_doc"] == "docs/kernel-415.md"
    same = dict(moved, diff=0.1, diff_low=-0.3, diff_high=0.5, moved=False, toward_paper=None)
    monkeypatch.setattr(k4, "cite", lambda sid, cc, root=None: same)
    kind, text, _ = f000._kernel415("S06", "bic", "open")
    assert kind == "open" and "within run-to-run noise" in text
    rec = {"runs": 90, "drop": {1: (3.2, 2.9, 3.5, "not reproduced"), 3: (3.3, 3.0, 3.6, "not reproduced")},
           "diff": 0.1, "diff_low": -0.3, "diff_high": 0.5, "moved": False, "toward_paper": None,
           "paper_drop_mbps": 7.0, "loss_pct": 1.0}
    monkeypatch.setattr(recovery000, "cite", lambda sid, cc, bundle=None: rec)
    assert "untested" in f000._recovery("S06", "bic", "open")[1]
    assert "untested" not in f000._recovery("S06", "bic", "open", kernel_measured=True)[1]
