"""Campaigns across hosts (mpcc.campaign.distributed) with a stand-in capture tool: slots, landing, sweeping, and a
local dask cluster (a scheduler and two workers, separate processes) that records the smoke campaign with one worker
killed mid-run. The same on the real testbed: tests/test_campaign_dask_netns.py."""
import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from mpcc.campaign import distributed
from mpcc.campaign.runner import ordered_runs
from mpcc.campaign.spec import campaign_from_text, load_campaign
from mpcc.errors import UserError
from tests.dask_cluster import LocalCluster, coordinator, env_with, tree

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "campaigns/smoke.yaml"
RID = "single_vs_multi__cubic__single__d10ms__l0pct__q-tbf-netem__rep01"

# a stand-in capture tool as in tests/test_campaign.py: obeys the exit-code and marker contract; on SIGINT or SIGTERM
# it stops its child and exits as the real one's trap does, and notes the signal in $FAKE_SIGNALS
FAKE = """\
#!/usr/bin/env bash
set -euo pipefail
out=""; cc=""; child=""
while [ $# -gt 0 ]; do case "$1" in --out) out=$2; shift 2;; --cc) cc=$2; shift 2;; *) shift;; esac; done
note() { echo "$1 $(basename "$out")" >> "${FAKE_SIGNALS:-/dev/null}"; [ -z "$child" ] || kill "$child" 2>/dev/null || true; }
trap 'note INT; exit 130' INT
trap 'note TERM; exit 143' TERM
echo started > "$out/router1.pcap"
if [ "$cc" = bic ]; then echo "bic: not available on this kernel — skipped" > "$out/SKIPPED"; exit 3; fi
echo "${MPCC_NS_PREFIX:-} $(date +%s.%N)" > "$out/started"
sleep "$(cat "${FAKE_SLEEP_FILE:-/nonexistent}" 2>/dev/null || echo "${FAKE_SLEEP:-0}")" & child=$!
wait "$child"
child=""
date +%s.%N > "$out/finished"
printf '{"host": "%s", "kernel": "%s", "host_load": {"cpu_pressure_some_pct": 5}}' "$(uname -n)" "$(uname -r)" > "$out/meta.json"
date > "$out/COMPLETE"
"""
# the stand-in registers no congestion control: the workers skip testbed/cc/ccctl.sh gc
PRELOAD = "import mpcc.campaign.runner as r\nr.cc_gc = lambda: None\n"

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="workers refuse to record without root")


def _dask():
    return pytest.importorskip("dask.distributed")


# ------------------------------------------------------------------------------------------------ slots, sweep

def test_slots_on_one_host_are_distinct_and_a_dead_owners_slot_is_emptied(tmp_path):
    a = distributed.Slot("t-", tmp_path)
    b = distributed.Slot("t-", tmp_path)
    assert (a.prefix, b.prefix) == ("t-1-", "t-2-")
    (a.stage / "left-by-a-dead-worker").write_text("x")
    os.close(a.fd)                      # the owner died: the lock is free, its staging directory is still there
    c = distributed.Slot("t-", tmp_path)
    assert c.prefix == "t-1-" and list(c.stage.iterdir()) == []
    c.release()
    b.release()
    assert not c.stage.exists() and not b.stage.exists()


def test_sweep_removes_free_slots_and_reports_busy_ones(tmp_path, monkeypatch):
    root = tmp_path / "w"
    monkeypatch.setenv("MPCC_WORKER_DIR", str(root))
    monkeypatch.setenv("MPCC_NS_PREFIX", "tsw-")
    held = distributed.Slot()
    dead = distributed.Slot()
    (dead.stage / "x").mkdir()
    os.close(dead.fd)
    r = distributed.sweep(gc=False)
    assert r["busy"] == ["tsw-1-"] and r["stages_removed"] == 1 and r["namespaces_left"] == []
    assert sorted(p.name for p in root.iterdir()) == ["slot-tsw-1-", "slot-tsw-1-.lock"]
    held.release()
    r = distributed.sweep(gc=False)
    assert r["busy"] == [] and not root.exists()


def test_a_slot_waits_out_a_sweep_that_unlinked_its_lock(tmp_path):
    s = distributed.Slot("u-", tmp_path)
    s.release()
    fd = distributed._lock(tmp_path / "slot-u-1-.lock")
    (tmp_path / "slot-u-1-.lock").unlink()   # a sweep removed the file while we held it
    os.close(fd)
    t = distributed.Slot("u-", tmp_path)     # the next claim takes a fresh lock file, not the unlinked one
    assert t.prefix == "u-1-" and os.fstat(t.fd).st_ino == os.stat(tmp_path / "slot-u-1-.lock").st_ino
    t.release()


# ------------------------------------------------------------------------------------------------ landing

def _result(tmp_path, rid=RID, outcome="complete", marker="COMPLETE", extra=None):
    d = tmp_path / "worker" / rid
    d.mkdir(parents=True)
    (d / "params.json").write_text("{}")
    (d / "iperf3").mkdir()
    (d / "iperf3" / "flow1-client.json").write_text("{}")
    if marker:
        (d / marker).write_text("x\n")
    res = {"run_id": rid, "outcome": outcome, "host": "h1", "kernel": "k", "tar": distributed.pack(d)}
    return {**res, **(extra or {})}


def _out(tmp_path):
    out = tmp_path / "out"
    (out / "runs").mkdir(parents=True)
    return out


def test_a_complete_run_lands_whole_and_an_earlier_incomplete_one_is_kept_aside(tmp_path):
    out = _out(tmp_path)
    (out / "runs" / RID).mkdir()     # incomplete, from a local session killed mid-run
    outcome, where = distributed.land(out, _result(tmp_path))
    assert outcome == "complete" and where == out / "runs" / RID
    assert tree(where) == {"params.json", "COMPLETE", "iperf3/flow1-client.json"}
    names = sorted(p.name for p in (out / "runs").iterdir())
    assert names[0] == RID and names[1].startswith(f"{RID}.incomplete-") and len(names) == 2


def test_a_half_written_run_never_lands_as_complete(tmp_path):
    out = _out(tmp_path)
    # the tool failed (no marker): lands incomplete, as a local failed run, and a resume records it again
    outcome, where = distributed.land(out, _result(tmp_path / "a", outcome="failed", marker=None))
    assert outcome == "failed" and where == out / "runs" / RID and distributed._runner.run_status(where) == "incomplete"
    # the tool said complete but wrote no marker: failed
    outcome, _ = distributed.land(out, _result(tmp_path / "b", outcome="complete", marker=None))
    assert outcome == "failed"
    # a marker without the exit status to match: kept aside, never a result
    outcome, where = distributed.land(out, _result(tmp_path / "c", outcome="failed", marker="COMPLETE"))
    assert outcome == "failed" and where.name.startswith(f"{RID}.incomplete-") and where.name.endswith("-failed")
    assert not (out / "runs" / RID / "COMPLETE").exists()
    assert not list((out / "runs").glob(".*"))


def test_a_run_recorded_twice_keeps_the_first(tmp_path):
    out = _out(tmp_path)
    distributed.land(out, _result(tmp_path / "a"))
    first = (out / "runs" / RID / "COMPLETE").stat().st_ino
    outcome, where = distributed.land(out, _result(tmp_path / "b"))
    assert outcome == "duplicate" and where.name.endswith("-duplicate")
    assert (out / "runs" / RID / "COMPLETE").stat().st_ino == first


@pytest.mark.parametrize("name", ["../evil", f"{RID}/../../evil", "/etc/evil", "other_run/x"])
def test_a_result_with_members_outside_its_run_is_refused(tmp_path, name):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo(name)
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    out = _out(tmp_path)
    with pytest.raises(ValueError):
        distributed.land(out, {"run_id": RID, "outcome": "complete", "host": "h", "tar": buf.getvalue()})
    assert list((out / "runs").iterdir()) == [] and not (tmp_path / "evil").exists()


def test_a_worker_reads_the_campaign_as_the_coordinator_does():
    text = SMOKE.read_text()
    a, b = load_campaign(SMOKE), campaign_from_text(text, "smoke.yaml")
    assert [r.run_id for r in a.runs] == [r.run_id for r in b.runs] and a.name == b.name == "smoke"
    with pytest.raises(UserError, match="reps must be"):
        campaign_from_text(text.replace("reps: 1", "reps: 0"), "smoke.yaml")


# ------------------------------------------------------------------------------------------------ command line

def _mpcc(args, env=None, **kw):
    return subprocess.run([sys.executable, "-m", "mpcc.cli", *args], env=env or dict(os.environ),
                          capture_output=True, text=True, **kw)


@pytest.mark.parametrize("address,extra,msg", [
    ("tcp://127.0.0.1:9", ["--jobs", "2"], "each worker's slots"),
    ("tcp://127.0.0.1:9", ["--backend", "vagrant"], "netns backend"),
    ("foo", [], "not a dask scheduler address"),
    ("http://127.0.0.1:9", [], "not a dask scheduler address"),
    ("tcp://127.0.0.1:9", [], "cannot reach the dask scheduler"),
])
def test_scheduler_errors_are_one_line(tmp_path, address, extra, msg):
    _dask()
    r = _mpcc(["campaign", "run", str(SMOKE), "--out", str(tmp_path / "o"), "--scheduler", address, *extra],
              timeout=120)
    assert r.returncode == 2 and msg in r.stderr and r.stderr.strip().count("\n") == 0, r.stderr
    assert not (tmp_path / "o").exists()    # nothing written before the workers were checked


def test_scheduler_without_dask_is_one_line(tmp_path):
    no_dask = ("import sys; sys.modules.update(dict.fromkeys(['dask', 'dask.distributed', 'distributed'])); "
               "from mpcc.cli import main; sys.exit(main(sys.argv[1:]))")
    r = subprocess.run([sys.executable, "-c", no_dask, "campaign", "run", str(SMOKE), "--out", str(tmp_path / "o"),
                        "--scheduler", "tcp://127.0.0.1:9"], capture_output=True, text=True)
    assert r.returncode == 2 and "needs dask.distributed" in r.stderr and r.stderr.strip().count("\n") == 0


# ------------------------------------------------------------------------------------------------ a cluster

@pytest.fixture
def fake(tmp_path):
    script = tmp_path / "fake_run.sh"
    script.write_text(FAKE)
    preload = tmp_path / "preload.py"
    preload.write_text(PRELOAD)
    return {"env": env_with(MPCC_RUN_EXPERIMENT=script, MPCC_WORKER_DIR=tmp_path / "wdir", MPCC_NS_PREFIX="tdk-",
                            FAKE_SLEEP=3),
            "preload": preload}


@needs_root
@pytest.mark.slow
def test_two_workers_one_killed_mid_run_give_the_local_result(tmp_path, fake):
    _dask()
    env = fake["env"]
    local = tmp_path / "local"
    r = subprocess.run(coordinator(SMOKE, local, "--jobs", "2", patch_gc=True),
                       env={**env, "MPCC_NS_PREFIX": "tdl-", "FAKE_SLEEP": "0"}, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "dist"
    with LocalCluster(tmp_path / "cluster", env, workers=2, slots=1, preload=fake["preload"]) as cl:
        # the victim is the worker whose address sorts first: the one a sweep would ask first, were it still asked
        addr = {k: cl.worker_address(k) for k in (0, 1)}
        victim = min(addr, key=addr.get)
        addr_b = addr[1 - victim]
        p = subprocess.Popen(coordinator(SMOKE, out, "--scheduler", cl.address), env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            killed = cl.kill_mid_run(victim)
            _, err = p.communicate(timeout=180)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        assert p.returncode == 0, err[-3000:]
        assert "Traceback" not in err and "6 completed, 1 skipped, 0 failed" in err, err[-2000:]
    # the run set and every run's layout are the local run's; nothing half-written landed
    names = sorted(d.name for d in (out / "runs").iterdir())
    assert names == sorted(d.name for d in (local / "runs").iterdir())
    for name in names:
        assert tree(out / "runs" / name) == tree(local / "runs" / name), name
    # every run names the host and kernel that recorded it; the run in flight on the killed worker was redone on
    # the other one
    logs = {n: (out / "runs" / n / "runner.log").read_text().splitlines()[0] for n in names}
    assert all(f"host {os.uname().nodename} (kernel {os.uname().release})" in v for v in logs.values()), logs
    assert addr_b in logs[killed] and (out / "runs" / killed / "COMPLETE").exists(), (killed, logs)
    # nothing left on the host: no slot, no staging directory
    assert not (tmp_path / "wdir").exists()
    s = json.loads((out / "campaign.json").read_text())["sessions"][-1]
    assert s["scheduler"] == cl.address and s["jobs"] == 2 and len(s["workers"]) == 2
    assert {w["host"] for w in s["workers"]} == {os.uname().nodename}
    # the campaign's order: runs start in it, but for the one redone after the kill
    order = [r.run_id for r in ordered_runs(load_campaign(SMOKE), 1)]
    started = {n: float((out / "runs" / n / "started").read_text().split()[1]) for n in names
               if (out / "runs" / n / "started").exists()}
    assert [n for n in sorted(started, key=started.get) if n != killed] == [n for n in order if n in started
                                                                            and n != killed]


@needs_root
@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_stopping_the_coordinator_cancels_the_runs_in_flight_and_a_rerun_finishes(tmp_path, fake, sig):
    _dask()
    signals, sleep = tmp_path / "signals.log", tmp_path / "sleep"
    sleep.write_text("60")     # the workers' capture tools read it (they have the workers' environment)
    env = {**fake["env"], "FAKE_SLEEP_FILE": str(sleep), "FAKE_SIGNALS": str(signals)}
    out = tmp_path / "dist"
    with LocalCluster(tmp_path / "cluster", env, workers=2, slots=1, preload=fake["preload"]) as cl:
        cmd = coordinator(SMOKE, out, "--scheduler", cl.address)
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while len(list((tmp_path / "wdir").glob("slot-*/*/started"))) < 2:
            assert time.monotonic() < deadline and p.poll() is None
            time.sleep(0.1)
        in_flight = sorted(d.parent.name for d in (tmp_path / "wdir").glob("slot-*/*/started"))
        p.send_signal(sig)
        _, err = p.communicate(timeout=60)
        assert p.returncode == (130 if sig == signal.SIGINT else -9) and "Traceback" not in err, err[-2000:]
        if sig == signal.SIGINT:
            assert "2 run(s) in flight cancelled" in err, err[-2000:]
        # each worker stops its capture tool with one SIGINT (long before its 60 s are over), lands nothing, and
        # empties its slot
        deadline = time.monotonic() + 30
        while sorted(signals.read_text().split()[1::2] if signals.exists() else []) != in_flight:
            assert time.monotonic() < deadline, (in_flight, signals.read_text() if signals.exists() else "")
            time.sleep(0.2)
        assert signals.read_text().split()[0::2] == ["INT", "INT"]
        while (tmp_path / "wdir").exists():
            assert time.monotonic() < deadline, list((tmp_path / "wdir").rglob("*"))
            time.sleep(0.2)
        assert not (out / "runs").exists() or list((out / "runs").iterdir()) == []
        sleep.write_text("0")
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)
        assert r.returncode == 0, r.stderr[-2000:]
    final = sorted(d.name for d in (out / "runs").iterdir())
    assert len(final) == 7 and all(".incomplete-" not in n for n in final)
    assert not (tmp_path / "wdir").exists()
