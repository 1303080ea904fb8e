"""Campaign files: validation, expansion, ordering, and the resumable runner (with a stand-in capture tool)."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mpcc.campaign.runner import ordered_runs
from mpcc.campaign.spec import load_campaign
from mpcc.errors import UserError

REPO = Path(__file__).resolve().parents[1]


def test_paper_campaign_matches_protocol():
    c = load_campaign(REPO / "campaigns/paper.yaml")
    # 4 ccs x 2 modes + 4 x 10 delays + 4 x 10 losses + 6 pairs + 4 x 10 cbr = 134 configurations, x 10 reps
    assert len(c.runs) == 134 * 10
    assert all(r.duration_s == 100 for r in c.runs)
    pairs = {(r.cc, r.cc2) for r in c.runs if r.experiment == "tcp_fairness"}
    assert pairs == {("cubic", "reno"), ("bic415", "cubic"), ("bic415", "reno"), ("bbr", "cubic"), ("bbr", "reno"), ("bbr", "bic415")}
    assert {r.cc for r in c.runs} == {"reno", "bic415", "cubic", "bbr"}   # the paper's BIC: Linux 4.15's (docs/kernel-415.md)
    assert sorted({r.link_delay_ms for r in c.runs if r.experiment == "link_delay"}) == list(range(10, 101, 10))
    assert sorted({r.loss_pct for r in c.runs if r.experiment == "loss_rate"}) == list(range(1, 11))
    assert sorted({r.cbr_mbps for r in c.runs if r.experiment == "udp_fairness"}) == list(range(2, 21, 2))
    assert len({r.run_id for r in c.runs}) == len(c.runs)


def test_quick_is_same_matrix_shorter():
    p, q = load_campaign(REPO / "campaigns/paper.yaml"), load_campaign(REPO / "campaigns/quick.yaml")
    strip = lambda r: (r.experiment, r.cc, r.cc2, r.path_mode, r.link_delay_ms, r.loss_pct, r.cbr_mbps, r.rep)
    assert {strip(r) for r in p.runs} == {strip(r) for r in q.runs}
    assert all(r.duration_s < 100 for r in q.runs)


def test_smoke_covers_every_experiment():
    c = load_campaign(REPO / "campaigns/smoke.yaml")
    assert {r.experiment for r in c.runs} == {"single_vs_multi", "link_delay", "loss_rate", "tcp_fairness", "udp_fairness"}
    assert all(3 <= r.duration_s <= 5 for r in c.runs)


def test_queue_model_is_a_factor_that_leaves_earlier_campaigns_unchanged(tmp_path):
    """queue_model (docs/testbed.md) and udp_len_bytes multiply the runs; a campaign without it keeps its run ids, parameters and
    capture-tool flags (the committed bundles resume from them)."""
    f = tmp_path / "q.yaml"
    f.write_text("name: q\nreps: 2\nexperiments: [{experiment: link_delay, cc: cubic, link_delay_ms: [10, 100],\n"
                 "  queue_model: [fifo-after-delay, tbf-netem, netem-tbf]}]\n")
    runs = load_campaign(f).runs
    assert len(runs) == 2 * 3 * 2
    r = next(r for r in runs if r.queue_model == "tbf-netem" and r.link_delay_ms == 100 and r.rep == 1)
    assert r.run_id == "link_delay__cubic__multipath__d100ms__l0pct__q-tbf-netem__rep01"
    assert r.params()["queue_model"] == "tbf-netem" and r.args()[-2:] == ["--queue-model", "tbf-netem"]
    f.write_text("name: u\ndefaults: {udp_len_bytes: [8192, null]}\nexperiments: [{experiment: udp_fairness, cc: cubic,\n"
                 "  cbr_mbps: 12}, {experiment: link_delay, cc: cubic}]\n")
    runs = load_campaign(f).runs
    udp = [r for r in runs if r.experiment == "udp_fairness"]
    assert sorted(str(r.udp_len_bytes) for r in udp) == ["8192", "None"]
    r = next(r for r in udp if r.udp_len_bytes == 8192)
    assert r.run_id == "udp_fairness__cubic__multipath__d10ms__l0pct__cbr12mbps__len8192B__rep01"
    assert r.args()[-2:] == ["--udp-len-bytes", "8192"] and r.params()["udp_len_bytes"] == 8192
    assert [r.udp_len_bytes for r in runs if r.experiment == "link_delay"] == [None]
    f.write_text("name: o\nexperiments: [{experiment: udp_fairness, cc: cubic, cbr_mbps: 12}]\n")
    r, = load_campaign(f).runs
    assert r.queue_model is None and r.udp_len_bytes is None and "queue_model" not in r.params() \
        and "--queue-model" not in r.args() and "--udp-len-bytes" not in r.args() \
        and r.run_id == "udp_fairness__cubic__multipath__d10ms__l0pct__cbr12mbps__rep01"


def test_tcp_recovery_is_a_factor_named_in_run_ids_params_and_flags(tmp_path):
    """tcp_recovery (the senders' net.ipv4.tcp_recovery) multiplies the runs like queue_model; unset, nothing changes."""
    f = tmp_path / "r.yaml"
    f.write_text("name: r\ndefaults: {tcp_recovery: [1, 0], queue_model: tbf-netem}\n"
                 "experiments: [{experiment: loss_rate, cc: [reno, bic], loss_pct: [0, 1]}]\n")
    runs = load_campaign(f).runs
    assert len(runs) == 2 * 2 * 2 and sorted({r.tcp_recovery for r in runs}) == [0, 1]
    r = next(r for r in runs if r.tcp_recovery == 0 and r.cc == "bic" and r.loss_pct == 1)
    assert r.run_id == "loss_rate__bic__multipath__d10ms__l1pct__rec0__q-tbf-netem__rep01"
    assert r.params()["tcp_recovery"] == 0 and r.args()[-2:] == ["--tcp-recovery", "0"]
    f.write_text("name: o\nexperiments: [{experiment: loss_rate, cc: cubic, loss_pct: 1}]\n")
    r, = load_campaign(f).runs
    assert r.tcp_recovery is None and "tcp_recovery" not in r.params() and "--tcp-recovery" not in r.args()
    c = load_campaign(REPO / "campaigns/recovery000.yaml")
    assert len(c.runs) == 90 and {r.tcp_recovery for r in c.runs} == {1, 3}
    assert all(r.queue_model == "tbf-netem" and r.duration_s == 100 for r in c.runs)


@pytest.mark.parametrize("name", ["paper", "quick", "smoke"])
def test_study_000_profiles_run_the_paper_faithful_switch_and_datagram(name):
    """Issue 28 item 5: paper, quick and smoke run the switch as the paper describes it (NetEm's 100-packet limit
    under TBF: queue_model tbf-netem) and UDP with the paper era's iperf3 datagram (8192 bytes); both show in run ids,
    params and the capture tool's flags, so runs recorded before the change (data/paper, data/sample) never merge
    with them."""
    runs = load_campaign(REPO / f"campaigns/{name}.yaml").runs
    assert all(r.queue_model == "tbf-netem" and r.params()["queue_model"] == "tbf-netem" and "__q-tbf-netem__" in r.run_id
               and r.args()[r.args().index("--queue-model") + 1] == "tbf-netem" for r in runs)
    udp = [r for r in runs if r.experiment == "udp_fairness"]
    assert udp and all(r.udp_len_bytes == 8192 and "__len8192B__" in r.run_id for r in udp)
    assert all(r.udp_len_bytes is None for r in runs if r.experiment != "udp_fairness")


def test_order_is_seeded():
    c = load_campaign(REPO / "campaigns/paper.yaml")
    a, b = ordered_runs(c, 7), ordered_runs(c, 7)
    assert [r.run_id for r in a] == [r.run_id for r in b]
    assert [r.run_id for r in a] != [r.run_id for r in ordered_runs(c, 8)]


@pytest.mark.parametrize("body,msg", [
    ("experiments: [{experiment: loss_rate, cc: bogus}]", "unknown cc"),
    ("experiments: [{experiment: loss_rate, cc: cubic, loss_pct: 80}]", "outside"),
    ("experiments: [{experiment: loss_rate, cc: cubic, loss_pct: abc}]", "must be a number"),
    ("experiments: [{experiment: nope, cc: cubic}]", "experiment must be one of"),
    ("name: ../../etc\nexperiments: [{experiment: loss_rate, cc: cubic}]", "name must match"),
    ("experiments: [{experiment: udp_fairness, cc: cubic}]", "needs cbr_mbps"),
    ("experiments: [{experiment: loss_rate, cc: cubic, path_mode: triple}]", "path_mode"),
    ("experiments: [{experiment: tcp_fairness, cc_pair: [[cubic]]}]", "two cc names"),
    ("experiments: [{experiment: loss_rate, cc: cubic, rm_rf: 1}]", "unknown key"),
    (": : :", "not valid YAML"),
    ("family: '042'\nexperiments: [{experiment: loss_rate, cc: cubic}]", "unknown family '042'"),
    ("defaults: [1]\nexperiments: [{experiment: loss_rate, cc: cubic}]", "defaults must be a mapping"),
    # dual-path families (001, 003): a queue size of -1 and a path rate of 0 are rejected at load time
    ("family: '003'\nexperiments: [{experiment: scenario, mode: mptcp, queue_pkts: -1}]", "queue_pkts=-1 is outside"),
    ("family: '003'\nexperiments: [{experiment: scenario, mode: mptcp, path1_rate_mbit: 0}]", "path1_rate_mbit=0 is outside"),
    ("family: '001'\nexperiments: [{experiment: buffer_sweep, mode: tcp_lte, buffer_bytes: -1}]", "buffer_bytes=-1 is outside"),
    ("family: '001'\nexperiments: [{experiment: buffer_sweep, mode: tcp_wifi, path2_rate_mbit: 0}]", "path2_rate_mbit=0 is outside"),
    ("family: '999'\nexperiments: [{experiment: scenario, mode: mptcp}]", "unknown family '999'"),
    ("family: '003'\nexperiments: [{experiment: resilience, mode: mptcp}]", "resilience needs udp_flood_mbps"),
    ("family: '003'\nexperiments: [{experiment: scenario, mode: quic}]", "unknown mode"),
    ("experiments: [{experiment: link_delay, cc: cubic, queue_model: netem}]", "queue_model must be one of"),
    ("defaults: {queue_model: [tbf-netem, bogus]}\nexperiments: [{experiment: link_delay, cc: cubic}]",
     "queue_model must be one of"),
    ("experiments: [{experiment: udp_fairness, cc: cubic, cbr_mbps: 12, udp_len_bytes: 70000}]",
     "udp_len_bytes must be an integer 16..65507"),
    ("experiments: [{experiment: loss_rate, cc: cubic, udp_len_bytes: 8192}]", "belongs only to udp_fairness"),
    ("experiments: [{experiment: loss_rate, cc: cubic, tcp_recovery: 8}]", "tcp_recovery must be an integer 0..7"),
    ("defaults: {tcp_recovery: rack}\nexperiments: [{experiment: loss_rate, cc: cubic}]",
     "tcp_recovery must be an integer 0..7"),
])
def test_bad_campaigns_rejected(tmp_path, body, msg):
    f = tmp_path / "c.yaml"
    f.write_text(body)
    with pytest.raises(UserError, match=msg):
        load_campaign(f)


FAKE = textwrap.dedent("""\
    #!/usr/bin/env bash
    # stand-in for capture_tools/run_experiment.sh: obeys the exit-code and marker contract
    set -euo pipefail
    out=""; cc=""; experiment=""
    while [ $# -gt 0 ]; do case "$1" in --out) out=$2; shift 2;; --cc) cc=$2; shift 2;;
                                        --experiment) experiment=$2; shift 2;; *) shift;; esac; done
    echo started > "$out/router1.pcap"
    if [ "$cc" = bic ] && [ -z "${FAKE_BIC_OK:-}" ]; then echo "bic: not available on this kernel — skipped" > "$out/SKIPPED"; exit 3; fi
    echo "${MPCC_NS_PREFIX:-} $(date +%s.%N)" > "$out/started"
    sleep "${FAKE_SLEEP:-0}"
    if [ -n "${FAKE_FAIL:-}" ] && [ "$cc" = bbr ]; then exit 1; fi
    date +%s.%N > "$out/finished"
    printf '{"host_load": {"cpu_pressure_some_pct": %s}}' "${FAKE_PSI:-5}" > "$out/meta.json"
    mkdir -p "$out/iperf3"
    if [ -n "${FAKE_IPERF_ERROR:-}" ] && [ "$experiment" = udp_fairness ]; then   # capture tools before iperf_ok did
        printf '{"end": {}, "error": "unable to read from stream socket"}' > "$out/iperf3/flow2-client.json"
    fi
    date > "$out/COMPLETE"
    """)


def _mpcc(args, env, **kw):
    return subprocess.run([sys.executable, "-m", "mpcc.cli", *args], env=env, capture_output=True, text=True, **kw)


@pytest.fixture
def fake_env(tmp_path):
    script = tmp_path / "fake_run.sh"
    script.write_text(FAKE)
    return {**os.environ, "MPCC_RUN_EXPERIMENT": str(script)}


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the runner refuses to run without root")


@needs_root
def test_runner_resumes_and_never_overwrites(tmp_path, fake_env):
    out = tmp_path / "out"
    camp = REPO / "campaigns/smoke.yaml"
    r = _mpcc(["campaign", "run", str(camp), "--out", str(out)], {**fake_env, "FAKE_FAIL": "1"})
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr
    runs = out / "runs"
    bbr = runs / "link_delay__bbr__multipath__d40ms__l0pct__q-tbf-netem__rep01"
    assert not (bbr / "COMPLETE").exists()
    assert (runs / "loss_rate__bic__multipath__d10ms__l2pct__q-tbf-netem__rep01" / "SKIPPED").exists()
    done = runs / "single_vs_multi__cubic__single__d10ms__l0pct__q-tbf-netem__rep01" / "COMPLETE"
    stamp = done.read_text()
    params = json.loads((done.parent / "params.json").read_text())
    assert params["cc"] == "cubic" and params["path_mode"] == "single" and params["seed"] == 1
    # resume: only the failed run is redone, its old directory moved aside, completed runs untouched
    r = _mpcc(["campaign", "run", str(camp), "--out", str(out)], fake_env)
    assert r.returncode == 0, r.stderr
    assert "1 completed" in r.stderr and "6 already done" in r.stderr
    assert (bbr / "COMPLETE").exists()
    assert len(list(runs.glob("link_delay__bbr*.incomplete-*"))) == 1
    assert done.read_text() == stamp
    # a different campaign in the same directory is refused
    other = tmp_path / "other.yaml"
    other.write_text(camp.read_text().replace("seed: 1", "seed: 2"))
    r = _mpcc(["campaign", "run", str(other), "--out", str(out)], fake_env)
    assert r.returncode == 2 and "different campaign" in r.stderr


def test_profiles_make_a_smaller_campaign_from_the_same_file(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(textwrap.dedent("""\
        name: demo
        reps: 10
        defaults: {duration_s: 100}
        experiments:
          - {experiment: loss_rate, cc: [cubic, reno], loss_pct: [1, 2, 3]}
        profiles:
          smoke:
            reps: 1
            defaults: {duration_s: 5}
            experiments: [{experiment: loss_rate, cc: cubic, loss_pct: 2}]
          bad: {rm_rf: 1}
        """))
    full = load_campaign(f)
    assert full.name == "demo" and len(full.runs) == 60 and full.runs[0].duration_s == 100
    smoke = load_campaign(f, "smoke")
    assert smoke.name == "demo-smoke" and len(smoke.runs) == 1
    assert smoke.runs[0].duration_s == 5 and smoke.runs[0].loss_pct == 2
    with pytest.raises(UserError, match="no profile 'nightly'"):
        load_campaign(f, "nightly")
    with pytest.raises(UserError, match="may set reps"):
        load_campaign(f, "bad")


@needs_root
def test_retry_skipped_records_skipped_runs_again_and_keeps_the_old_ones(tmp_path, fake_env):
    out = tmp_path / "out"
    camp = REPO / "campaigns/smoke.yaml"
    assert _mpcc(["campaign", "run", str(camp), "--out", str(out)], fake_env).returncode == 0
    runs = out / "runs"
    bic = runs / "loss_rate__bic__multipath__d10ms__l2pct__q-tbf-netem__rep01"
    assert (bic / "SKIPPED").exists()
    done = runs / "single_vs_multi__cubic__single__d10ms__l0pct__q-tbf-netem__rep01" / "COMPLETE"
    stamp = done.read_text()
    # a plain resume leaves the skipped run alone; --retry-skipped records it again (the CC became available)
    r = _mpcc(["campaign", "run", str(camp), "--out", str(out)], {**fake_env, "FAKE_BIC_OK": "1"})
    assert r.returncode == 0 and "7 already done" in r.stderr
    r = _mpcc(["campaign", "run", str(camp), "--out", str(out), "--retry-skipped"], {**fake_env, "FAKE_BIC_OK": "1"})
    assert r.returncode == 0, r.stderr
    assert "1 skipped run(s) moved aside" in r.stderr and "1 completed" in r.stderr
    assert (bic / "COMPLETE").exists() and not (bic / "SKIPPED").exists()
    [old] = runs.glob(bic.name + ".incomplete-*-skipped")
    assert "not available" in (old / "SKIPPED").read_text()
    assert done.read_text() == stamp


@needs_root
def test_experiments_filter_and_redo_contended(tmp_path, fake_env):
    out = tmp_path / "out"
    camp = REPO / "campaigns/smoke.yaml"
    r = _mpcc(["campaign", "run", str(camp), "--out", str(out), "--experiments", "tcp_fairness,udp_fairness"],
              {**fake_env, "FAKE_PSI": "55.5"})
    assert r.returncode == 0, r.stderr
    runs = out / "runs"
    assert sorted(d.name.split("__")[0] for d in runs.iterdir()) == ["tcp_fairness", "udp_fairness"]
    r = _mpcc(["campaign", "run", str(camp), "--out", str(out), "--experiments", "nonsense"], fake_env)
    assert r.returncode == 2 and "nonsense" in r.stderr and "Traceback" not in r.stderr
    # the two contended runs are redone, the rest recorded; the contended directories are kept aside
    r = _mpcc(["campaign", "run", str(camp), "--out", str(out), "--redo-contended", "40"], fake_env)
    assert r.returncode == 0, r.stderr
    assert "2 run(s) recorded under host CPU pressure > 40 % moved aside" in r.stderr
    assert len(list(runs.glob("*.incomplete-*-contended"))) == 2
    assert "6 completed, 1 skipped" in r.stderr   # 2 redone + 4 never recorded; bic skipped
    r = _mpcc(["campaign", "run", str(camp), "--out", str(out), "--redo-contended", "400"], fake_env)
    assert r.returncode == 2 and "percentage" in r.stderr


@needs_root
def test_a_complete_run_whose_iperf3_client_failed_is_recorded_again(tmp_path, fake_env):
    """iperf3 3.12 exits 0 when its test failed; runs marked complete with an error in a client's JSON are moved
    aside (never deleted) and recorded again by any resume, and analysis lists them as incomplete with the error."""
    from analysis.dataset import run_status
    out = tmp_path / "out"
    camp = REPO / "campaigns/smoke.yaml"
    r = _mpcc(["campaign", "run", str(camp), "--out", str(out)], {**fake_env, "FAKE_IPERF_ERROR": "1"})
    assert r.returncode == 0, r.stderr
    runs = out / "runs"
    failed = sorted(d.name for d in runs.iterdir() if (d / "iperf3" / "flow2-client.json").exists())
    assert failed and all(n.startswith("udp_fairness__") for n in failed)
    listed = run_status(out).set_index("run_id")
    assert (listed.loc[failed, "status"] == "incomplete").all()
    assert listed.loc[failed[0], "reason"] == "iperf3 client failed: flow2-client.json: unable to read from stream socket"
    r = _mpcc(["campaign", "run", str(camp), "--out", str(out)], fake_env)
    assert r.returncode == 0, r.stderr
    assert f"{len(failed)} run(s) marked complete although an iperf3 client failed" in r.stderr
    assert f"{len(failed)} completed" in r.stderr
    assert len(list(runs.glob("*.incomplete-*-flowerror"))) == len(failed)
    assert all((runs / n / "COMPLETE").exists() and not (runs / n / "iperf3" / "flow2-client.json").exists()
               for n in failed)
    assert (run_status(out).set_index("run_id").loc[failed, "status"] == "complete").all()


@needs_root
@pytest.mark.parametrize("sig,jobs", [(signal.SIGINT, 1), (signal.SIGKILL, 1), (signal.SIGINT, 2), (signal.SIGTERM, 2)])
def test_interrupted_campaign_finishes_on_rerun(tmp_path, fake_env, sig, jobs):
    out = tmp_path / "out"
    camp = REPO / "campaigns/smoke.yaml"
    env = {**fake_env, "FAKE_SLEEP": "2"}
    cmd = [sys.executable, "-m", "mpcc.cli", "campaign", "run", str(camp), "--out", str(out), "--jobs", str(jobs)]
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def finished():
        runs = out / "runs"
        return {d.name for d in runs.iterdir() if (d / "COMPLETE").exists() or (d / "SKIPPED").exists()} \
            if runs.is_dir() else set()
    deadline = time.monotonic() + 60   # interrupt once a run has finished (not after a fixed time: a cold start of
    while not finished() and p.poll() is None and time.monotonic() < deadline:   # the interpreter varies)
        time.sleep(0.05)
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode != 0 and b"Traceback" not in err
    first = finished()
    assert 0 < len(first) < 7
    r = _mpcc(cmd[3:], env)
    assert r.returncode == 0, r.stderr
    final = [d for d in (out / "runs").iterdir() if ".incomplete-" not in d.name]
    assert len(final) == 7 and all((d / "COMPLETE").exists() or (d / "SKIPPED").exists() for d in final)


@needs_root
def test_jobs_run_concurrently_on_separate_testbeds(tmp_path, fake_env):
    out = tmp_path / "out"
    camp = REPO / "campaigns/smoke.yaml"
    env = {**fake_env, "FAKE_SLEEP": "1", "MPCC_NS_PREFIX": "tj-"}
    r = _mpcc(["campaign", "run", str(camp), "--out", str(out), "--jobs", "2"], env)
    assert r.returncode == 0, r.stderr
    assert "6 completed, 1 skipped, 0 failed" in r.stderr
    started = [(d / "started").read_text().split() + [(d / "finished").read_text().strip()]
               for d in (out / "runs").iterdir() if (d / "finished").exists()]
    assert {s[0] for s in started} == {"tj-1-", "tj-2-"}
    spans = sorted((float(a), float(b)) for _, a, b in started)
    assert any(spans[i + 1][0] < spans[i][1] for i in range(len(spans) - 1)), spans  # two runs overlapped
    meta = json.loads((out / "campaign.json").read_text())
    assert meta["sessions"][-1]["jobs"] == 2


def test_jobs_need_the_netns_backend(tmp_path):
    r = _mpcc(["campaign", "run", str(REPO / "campaigns/smoke.yaml"), "--out", str(tmp_path / "o"),
               "--backend", "vagrant", "--jobs", "2"], dict(os.environ))
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "only the netns backend" in r.stderr


def test_dry_run_lists_runs_without_root(tmp_path):
    r = _mpcc(["campaign", "run", str(REPO / "campaigns/paper.yaml"), "--dry-run", "--out", str(tmp_path)], dict(os.environ))
    assert r.returncode == 0
    assert len(r.stdout.splitlines()) == 1340
    assert "37.22 h" in r.stderr


def test_missing_campaign_is_one_line_error():
    r = _mpcc(["campaign", "run", "/nonexistent.yaml"], dict(os.environ))
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "not found" in r.stderr
