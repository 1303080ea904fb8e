"""The smoke campaign for real across a dask cluster (issue 32): a scheduler and two workers, separate processes on
this machine, each worker recording on its own namespace testbeds (one slot each), one worker killed mid-run. The
result has the run set and layout of the same campaign recorded locally (--jobs 2), every run names its host and
kernel, and nothing is left on the host: no namespace, process, registered BPF congestion control, ccctl holder,
slot or staging directory."""
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.dask_cluster import LocalCluster, coordinator, env_with, tree
from tests.netns_helpers import env_prefix, namespaces, registered_ccs, run_campaign

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "campaigns/smoke.yaml"
PREFIX = "dsk-"          # the workers' base prefix: their slots' testbeds are dsk-1-*, dsk-2-*
pytestmark = [pytest.mark.netns, pytest.mark.slow,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
              pytest.mark.skipif(not (REPO / "capture_tools/run_experiment.sh").exists(),
                                 reason="capture tool not built")]


def _leftovers():
    """Namespaces of the workers' slots, and processes of their testbeds (they inherit MPCC_NS_PREFIX=dsk-<k>-)."""
    procs = subprocess.run(["pgrep", "-af", "delayshim|iperf3|tcpdump|run_experiment|netns.sh"], capture_output=True,
                           text=True).stdout.splitlines()
    procs = [p for p in procs if "pgrep" not in p and "<defunct>" not in p
             and (env_prefix(p.split()[0]) or "").startswith(PREFIX)]
    return namespaces(PREFIX), procs


def _cc_state() -> Path:
    return Path(os.environ.get("MPCC_CC_STATE", "/run/mpcc-cc"))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    pytest.importorskip("dask.distributed")
    tmp = tmp_path_factory.mktemp("dask")
    local = run_campaign(SMOKE, tmp / "local", "dsl-", "--jobs", "2")
    env = env_with(MPCC_NS_PREFIX=PREFIX, MPCC_WORKER_DIR=tmp / "wdir")
    out = tmp / "dist"
    with LocalCluster(tmp / "cluster", env, workers=2, slots=1) as cl:
        addr = {k: cl.worker_address(k) for k in (0, 1)}
        victim = min(addr, key=addr.get)           # the worker a sweep would ask first, were it still asked
        p = subprocess.Popen(coordinator(SMOKE, out, "--scheduler", cl.address), env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            # inside the run: its testbed is being built or carries traffic
            killed = cl.kill_mid_run(victim, after_s=4)
            _, err = p.communicate(timeout=900)
        finally:
            if p.poll() is None:   # a test that failed: the coordinator stops as after Ctrl-C
                p.send_signal(signal.SIGINT)
                p.wait(timeout=120)
        scheduler = cl.address
    # the killed worker's capture tool tears down on its parent-death signal; the coordinator's last sweep waited for
    # its slot, so this is a formality
    deadline = time.monotonic() + 60
    while _leftovers() != ([], []) and time.monotonic() < deadline:
        time.sleep(1)
    return {"local": local, "out": out, "rc": p.returncode, "err": err, "killed": killed, "addr": addr,
            "survivor": addr[1 - victim], "scheduler": scheduler, "wdir": tmp / "wdir"}


def test_the_campaign_finishes_with_every_run(recorded):
    assert recorded["rc"] == 0, recorded["err"][-3000:]
    assert "Traceback" not in recorded["err"]


def test_same_run_set_and_layout_as_a_local_run(recorded):
    out, local = recorded["out"] / "runs", recorded["local"] / "runs"
    names = sorted(d.name for d in out.iterdir())
    assert names == sorted(d.name for d in local.iterdir())        # no .incomplete-, nothing half-written
    assert len(names) == 7
    for n in names:
        assert ((out / n / "COMPLETE").exists(), (out / n / "SKIPPED").exists()) == \
               ((local / n / "COMPLETE").exists(), (local / n / "SKIPPED").exists()), n
        assert tree(out / n) == tree(local / n), n


def test_the_run_in_flight_on_the_killed_worker_was_redone_on_the_other(recorded):
    d = recorded["out"] / "runs" / recorded["killed"]
    assert (d / "COMPLETE").exists() or (d / "SKIPPED").exists()
    assert recorded["survivor"] in (d / "runner.log").read_text().splitlines()[0]


def test_every_run_names_its_host_and_kernel(recorded):
    me = os.uname()
    for d in (recorded["out"] / "runs").iterdir():
        first = (d / "runner.log").read_text().splitlines()[0]
        assert f"host {me.nodename} (kernel {me.release}), namespaces {PREFIX}" in first, first
        if (d / "COMPLETE").exists():
            meta = json.loads((d / "meta.json").read_text())
            assert (meta["host"], meta["kernel"]) == (me.nodename, me.release)
            assert meta["host_load"]["ncpu"] >= 1          # the contention audit, per run, on its worker's host
    s = json.loads((recorded["out"] / "campaign.json").read_text())["sessions"][-1]
    assert s["scheduler"] == recorded["scheduler"] and s["jobs"] == 2
    assert sorted(w["address"] for w in s["workers"]) == sorted(recorded["addr"].values())


def test_nothing_left_on_the_host(recorded):
    ns, procs = _leftovers()
    assert ns == [] and procs == [], (ns, procs)
    assert not recorded["wdir"].exists(), list(recorded["wdir"].rglob("*"))
    state = _cc_state()
    held = [f.name for f in state.glob("*.holders")] + [f.name for f in state.glob("*.id")] if state.is_dir() else []
    assert held == [], held
    # no congestion control that a run of this campaign registered is still registered
    ids = {info["struct_ops_id"] for d in (recorded["out"] / "runs").iterdir() if (d / "meta.json").exists()
           for info in json.loads((d / "meta.json").read_text()).get("cc_impl", {}).values()
           if info.get("implementation") == "bpf" and info.get("registered_by") == "mpcc"}
    if ids:
        assert not ids & set(registered_ccs().values()), (ids, registered_ccs())
