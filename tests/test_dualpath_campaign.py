"""Campaign files of the dual-path families (001, 003): expansion, run ids, capture-tool arguments, profiles, and
the runner with a stand-in capture tool (no network namespaces)."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from mpcc.campaign.spec import load_campaign
from mpcc.errors import UserError
from mpcc.families import get_family

REPO = Path(__file__).resolve().parents[1]


def test_paper003_matches_the_paper():
    c = load_campaign(REPO / "campaigns/paper003.yaml")
    assert c.family == "003" and len(c.runs) == 5 * 3
    scen = {(r.mode, r.buffer) for r in c.runs if r.experiment == "scenario"}
    assert scen == {("tcp_path1", 1000), ("mptcp", 1000), ("tcp_path1", 50), ("mptcp", 50)}
    res = [r for r in c.runs if r.experiment == "resilience"]
    assert len(res) == 3 and all(r.udp_flood_mbps == 80 and (r.udp_flood_start_s, r.udp_flood_end_s) == (300, 600)
                                 and r.mode == "mptcp" and r.buffer == 50 for r in res)
    assert all(r.duration_s == 900 for r in c.runs)
    assert all((r.path1_rate_mbit, r.path1_delay_ms, r.path2_rate_mbit, r.path2_delay_ms) == (10, 2, 2, 10)
               for r in c.runs)
    ids = {r.run_id for r in c.runs}
    assert "scenario__mptcp__q50pkt__rep01" in ids and "scenario__tcp-path1__q1000pkt__rep03" in ids
    assert "resilience__mptcp__q50pkt__flood80mbps-300-600s__rep02" in ids


def test_paper003_profiles():
    smoke = load_campaign(REPO / "campaigns/paper003.yaml", "smoke")
    assert len(smoke.runs) == 5 and all(r.duration_s <= 8 for r in smoke.runs)
    assert {r.experiment for r in smoke.runs} == {"scenario", "resilience"}
    scaled = load_campaign(REPO / "campaigns/paper003.yaml", "scaled")
    full = load_campaign(REPO / "campaigns/paper003.yaml")
    strip = lambda r: (r.experiment, r.mode, r.buffer, r.rep)  # noqa: E731
    assert {strip(r) for r in scaled.runs} == {strip(r) for r in full.runs}
    [f] = {(r.udp_flood_start_s / r.duration_s, r.udp_flood_end_s / r.duration_s)
           for r in scaled.runs if r.udp_flood_mbps}
    assert f == (300 / 900, 600 / 900)   # the paper's timeline, scaled


def test_paper003_extended_repeats_the_paper_protocol_and_reuses_its_runs():
    """The extended profile: the paper's matrix and timeline at 10 repetitions; its first three are the paper
    protocol's runs, parameter for parameter, reused from data/study003 (mpcc campaign run --dry-run says so)."""
    full = load_campaign(REPO / "campaigns/paper003.yaml")
    ext = load_campaign(REPO / "campaigns/paper003.yaml", "extended")
    assert ext.name == "paper003-extended" and ext.reps == 10 and len(ext.runs) == 50
    assert ext.reuse_from == "data/study003" and full.reuse_from is None
    mine = {r.run_id: r.params() for r in ext.runs}
    assert all(mine[r.run_id] == r.params() for r in full.runs)
    r = subprocess.run([sys.executable, "-m", "mpcc.cli", "campaign", "run", "campaigns/paper003.yaml", "--profile",
                        "extended", "--dry-run", "--out", "/nonexistent/x"], cwd=REPO, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and "reuse_runs_from data/study003: 15 of these runs finished there" in r.stderr


@pytest.mark.parametrize("value", ["../x", "/abs/data/x", "data/../x", 3, "data/"])
def test_reuse_runs_from_names_a_bundle_under_data(tmp_path, value):
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump({"name": "c", "family": "003", "reps": 1, "reuse_runs_from": value,
                                 "experiments": [{"experiment": "scenario", "mode": "mptcp", "queue_pkts": 50}]}))
    with pytest.raises(UserError, match="reuse_runs_from must name a bundle as data/NAME"):
        load_campaign(f)


def test_paper001_buffer_sweep():
    c = load_campaign(REPO / "campaigns/paper001.yaml")
    assert c.family == "001" and len(c.runs) == (3 * 4 + 4) * 10
    assert {r.buffer for r in c.runs} == {25000, 50000, 75000, 116736}
    assert {(r.mode, r.mptcp_scheduler) for r in c.runs} == {("tcp_lte", None), ("tcp_wifi", None),
                                                              ("mptcp", "default"), ("mptcp", "redundant")}
    assert all(r.duration_s == 45 for r in c.runs)
    ids = {r.run_id for r in c.runs}
    assert "buffer_sweep__tcp-lte__b25000B__rep01" in ids and "buffer_sweep__mptcp-redundant__b116736B__rep10" in ids
    smoke = load_campaign(REPO / "campaigns/paper001.yaml", "smoke")
    assert len(smoke.runs) == 4 and all(r.duration_s <= 8 for r in smoke.runs)


def test_args_and_params_for_the_capture_tool():
    c = load_campaign(REPO / "campaigns/paper001.yaml")
    r = next(r for r in c.runs if r.run_id == "buffer_sweep__tcp-wifi__b75000B__rep02")
    a = r.args()
    assert a[:6] == ["--family", "001", "--experiment", "buffer_sweep", "--transport", "tcp"]
    assert a[a.index("--tcp-path") + 1] == "2" and "--mptcp-scheduler" not in a
    assert a[a.index("--path1-buffer-bytes") + 1] == "75000" and a[a.index("--path2-buffer-bytes") + 1] == "75000"
    assert a[a.index("--duration-s") + 1] == "45" and a[-2:] == ["--rep", "2"]
    p = r.params()
    assert p["run_id"] == r.run_id and p["family"] == "001" and p["tcp_path"] == 2 and p["buffer_bytes"] == 75000
    json.dumps(p)
    m = next(r for r in c.runs if r.mode == "mptcp" and r.mptcp_scheduler == "redundant")
    assert m.args()[m.args().index("--mptcp-scheduler") + 1] == "redundant" and "--tcp-path" not in m.args()
    c3 = load_campaign(REPO / "campaigns/paper003.yaml")
    fl = next(r for r in c3.runs if r.experiment == "resilience")
    a = fl.args()
    assert a[a.index("--udp-flood-mbps") + 1] == "80" and a[a.index("--udp-flood-start-s") + 1] == "300"
    assert a[a.index("--path1-buffer-pkts") + 1] == "50"


def test_factors_and_non_default_values_make_distinct_ids(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(textwrap.dedent("""\
        family: "003"
        reps: 2
        experiments:
          - experiment: scenario
            mode: [tcp_path1, tcp_path2, mptcp]
            mptcp_scheduler: [default, redundant]
            queue_pkts: [50, 100]
            path2_delay_ms: [10, 40]
            cc: [cubic, bbr]
        """))
    c = load_campaign(f)
    # TCP modes ignore the scheduler: (2 tcp + 2 mptcp schedulers) x 2 queues x 2 delays x 2 ccs x 2 reps
    assert len(c.runs) == 4 * 2 * 2 * 2 * 2 == len({r.run_id for r in c.runs})
    assert "scenario__tcp-path2__q100pkt__bbr__p2d40ms__rep02" in {r.run_id for r in c.runs}


def test_family_modules_declare_the_netns_backend_only():
    for fam in ("001", "003"):
        m = get_family(fam)
        assert m.BACKENDS == ("netns",) and m.capture_tool("netns").name == "run_dualpath.sh"
        with pytest.raises(UserError):
            m.capture_tool("vagrant")
        m.check_defaults(m.DEFAULTS, "x")


FAKE = textwrap.dedent("""\
    #!/usr/bin/env bash
    # stand-in for capture_tools/run_dualpath.sh: obeys the exit-code and marker contract, records its arguments
    set -euo pipefail
    out=""; sched=default
    args=("$@")
    while [ $# -gt 0 ]; do case "$1" in --out) out=$2; shift 2;; --mptcp-scheduler) sched=$2; shift 2;; *) shift;; esac; done
    printf '%s\\n' "${args[@]}" > "$out/args.txt"
    if [ "$sched" = redundant ]; then
      echo "mptcp scheduler redundant: not available on this kernel (available: default) — skipped" > "$out/SKIPPED"; exit 3
    fi
    printf '{"host_load": {"cpu_pressure_some_pct": 1}}' > "$out/meta.json"
    date > "$out/COMPLETE"
    """)


@pytest.mark.skipif(os.geteuid() != 0, reason="the runner refuses to run without root")
def test_runner_hands_dualpath_runs_to_their_capture_tool(tmp_path):
    script = tmp_path / "fake.sh"
    script.write_text(FAKE)
    env = {**os.environ, "MPCC_RUN_DUALPATH": str(script)}
    out = tmp_path / "out"
    mpcc = lambda *a: subprocess.run([sys.executable, "-m", "mpcc.cli", *a], env=env, capture_output=True,  # noqa: E731
                                     text=True)
    r = mpcc("campaign", "run", str(REPO / "campaigns/paper001.yaml"), "--profile", "smoke", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "3 completed, 1 skipped" in r.stderr
    d = out / "runs" / "buffer_sweep__tcp-lte__b50000B__t8s__rep01"
    args = (d / "args.txt").read_text().split("\n")
    assert args[:4] == ["--backend", "netns", "--out", str(d)] and "--tcp-path" in args
    assert json.loads((d / "params.json").read_text())["buffer_bytes"] == 50000
    r = mpcc("campaign", "run", str(REPO / "campaigns/paper001.yaml"), "--profile", "smoke", "--out",
             str(tmp_path / "v"), "--backend", "vagrant")
    assert r.returncode == 2 and "runs on the netns backend, not vagrant" in r.stderr
