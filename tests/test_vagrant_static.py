"""Vagrant backend, CI level (no VMs are booted here; `make test-vagrant` does that):
`vagrant validate` on the top-level Vagrantfile when vagrant is installed, the Vagrantfile's topology and MAC scheme
against testbed/topology.json, argument validation of the backend scripts, the clock-offset method against a local
"ssh", shellcheck of the scripts, and the runner's dispatch to the vagrant capture tool."""
from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
VDIR = ROOT / "testbed" / "vagrant"
VAGRANTFILE = ROOT / "Vagrantfile"
TOPOLOGY = json.loads((ROOT / "testbed" / "topology.json").read_text())
SCRIPTS = sorted(VDIR.glob("*.sh"))


def _vagrant_env(tmp_path, **extra):
    env = dict(os.environ, VAGRANT_CWD=str(ROOT), VAGRANT_DOTFILE_PATH=str(tmp_path / "dot"),
               VAGRANT_HOME=str(tmp_path / "home"), VAGRANT_CHECKPOINT_DISABLE="1")
    env.update(extra)
    return env


# CI installs vagrant (.ci/run), so there these must run, not skip
NO_VAGRANT = shutil.which("vagrant") is None and not os.environ.get("CI")


@pytest.mark.skipif(NO_VAGRANT, reason="vagrant not installed (CI: apt-get install vagrant vagrant-libvirt)")
def test_vagrant_validate(tmp_path):
    r = subprocess.run(["vagrant", "validate"], env=_vagrant_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "validated successfully" in r.stdout


@pytest.mark.skipif(NO_VAGRANT, reason="vagrant not installed")
def test_vagrant_validate_rejects_bad_driver(tmp_path):
    r = subprocess.run(["vagrant", "validate"], env=_vagrant_env(tmp_path, MPCC_LIBVIRT_DRIVER="xen"),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    assert "MPCC_LIBVIRT_DRIVER" in r.stdout + r.stderr


def test_vagrantfile_reads_the_shared_topology():
    text = VAGRANTFILE.read_text()
    assert 'File.join(__dir__, "testbed", "topology.json")' in text
    order = re.search(r"NODE_ORDER = %w\[([^\]]*)\]", text).group(1).split()
    assert sorted(order) == sorted(TOPOLOGY["nodes"])
    # the sizing: 1 vCPU each, 768 MB, router1 2 GB; the paper's NIC type for VirtualBox
    assert '"MPCC_VM_MEMORY_MB", "768"' in text and '"MPCC_ROUTER1_MEMORY_MB", "2048"' in text
    assert "vb.cpus = 1" in text and "lv.cpus = 1" in text
    assert '"82540EM"' in text and "allow-all" in text
    # provisioning runs the shared node scripts through node-up.sh
    assert "testbed/vagrant/node-up.sh" in text


def _mac_vagrantfile(addr: str) -> str:
    """The Vagrantfile's mac_of: "5254" + the 4 octets as 2-digit upper-case hex."""
    return "5254" + "".join(f"{int(o):02X}" for o in addr.split("."))


def test_link_macs_are_unique_and_match_node_up():
    macs = {}
    for link in TOPOLOGY["links"]:
        for end in ("a", "b"):
            addr = link[end]["addr"]
            ipaddress.IPv4Address(addr)
            macs[addr] = _mac_vagrantfile(addr)
    assert len(set(macs.values())) == len(macs)
    for addr, mac in macs.items():
        assert int(mac[:2], 16) & 0x02 and not int(mac[:2], 16) & 0x01  # locally administered, unicast
        # node-up.sh's mac_of must produce the same address, colon-separated lower case
        r = subprocess.run(["bash", "-c", f'source <(sed -n "/^mac_of()/,/^}}/p" {VDIR / "node-up.sh"}); mac_of {addr}'],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == ":".join(mac[i:i + 2] for i in range(0, 12, 2)).lower()


def _run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=60, **kw)


@pytest.mark.parametrize("args, msg", [
    (["up", "--path-mode", "triple"], "--path-mode must be single or multipath"),
    (["up", "--link-delay-ms", "-3"], "--link-delay-ms must be a non-negative number"),
    (["up", "--loss-pct", "150"], "--loss-pct must be in [0,100]"),
    (["up", "--bogus", "1"], "unknown option for up"),
    (["frobnicate"], "usage:"),
])
def test_backend_rejects_bad_input(args, msg):
    r = _run(["bash", str(VDIR / "backend.sh"), *args])
    assert r.returncode == 2
    assert msg in r.stderr
    assert "Traceback" not in r.stderr


def test_backend_rejects_bad_prefix():
    r = _run(["bash", str(VDIR / "backend.sh"), "status"], env=dict(os.environ, MPCC_VAGRANT_PREFIX="Bad_Prefix"))
    assert r.returncode == 2 and "MPCC_VAGRANT_PREFIX" in r.stderr


@pytest.mark.parametrize("args, msg", [
    (["--backend", "netns"], "--backend must be vagrant"),
    (["--backend", "vagrant", "--out", "X", "--experiment", "nope"], "bad --experiment"),
    (["--backend", "vagrant", "--out", "X", "--experiment", "single_vs_multi", "--cc", "vegas"], "--cc must be one of"),
    (["--backend", "vagrant", "--out", "X", "--experiment", "single_vs_multi", "--cc", "cubic", "--path-mode", "x"],
     "--path-mode must be single or multipath"),
    (["--backend", "vagrant", "--out", "X", "--experiment", "loss_rate", "--cc", "cubic", "--path-mode", "multipath",
      "--link-delay-ms", "10", "--loss-pct", "1", "--duration-s", "5", "--tcp-recovery", "9"],
     "--tcp-recovery must be a bitmap 0..7"),
])
def test_vagrant_run_experiment_rejects_bad_input(tmp_path, args, msg):
    r = _run(["bash", str(VDIR / "run_experiment.sh"), *args], cwd=tmp_path)
    assert r.returncode == 2
    assert msg in r.stderr
    assert not (tmp_path / "X").exists()


def test_build_box_rejects_bad_input():
    r = _run(["bash", str(VDIR / "build-box.sh"), "--size-gb", "0"])
    assert r.returncode == 2 and "--size-gb must be a positive integer" in r.stderr
    r = _run(["bash", str(VDIR / "build-box.sh"), "--name", "bad name"])
    assert r.returncode == 2 and "bad box name" in r.stderr
    # an extra kernel is Ubuntu's, by version, and only one whose packages' sha256 the script knows
    r = _run(["bash", str(VDIR / "build-box.sh"), "--extra-kernel", "4.15.0-54.58"])
    assert r.returncode == 2 and "--extra-kernel must be ubuntu:VERSION" in r.stderr
    r = _run(["bash", str(VDIR / "build-box.sh"), "--extra-kernel", "ubuntu:4.15.0-20.21"])
    assert r.returncode == 2 and "no known sha256 for Ubuntu's 4.15.0-20.21" in r.stderr and "4.15.0-54.58" in r.stderr


def test_node_up_rejects_unknown_node():
    r = _run(["bash", str(VDIR / "node-up.sh"), "router9"])
    assert r.returncode == 2 and "unknown node" in r.stderr


def test_clock_offsets_against_a_local_ssh(tmp_path):
    """A fake `ssh` that runs the remote loop locally: the guest clock IS the host clock, so every offset must lie
    within its own error bound of 0 (the bound is half the smallest round trip)."""
    fake = tmp_path / "bin" / "ssh"
    fake.parent.mkdir()
    fake.write_text('#!/usr/bin/env bash\n# last argument is the remote command\nexec bash -c "${@: -1}"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    env = dict(os.environ, PATH=f"{fake.parent}:{os.environ['PATH']}")
    r = _run([sys.executable, str(VDIR / "clock_offsets.py"), "--ssh-config", "/dev/null", "-n", "15", "src1", "dst1"],
             env=env)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert set(res["nodes"]) == {"src1", "dst1"}
    for v in res["nodes"].values():
        assert v["error_bound_ms"] >= 0
        # bound + 1 ms slack for date(1)'s own fork/exec time, which is on the guest side of the exchange
        assert abs(v["offset_ms"]) <= v["error_bound_ms"] + 1.0, v
    assert res["max_pairwise_error_bound_ms"] >= 0


def test_clock_offsets_reports_a_dead_ssh(tmp_path):
    fake = tmp_path / "bin" / "ssh"
    fake.parent.mkdir()
    fake.write_text("#!/usr/bin/env bash\nexit 255\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    env = dict(os.environ, PATH=f"{fake.parent}:{os.environ['PATH']}")
    r = _run([sys.executable, str(VDIR / "clock_offsets.py"), "--ssh-config", "/dev/null", "src1"], env=env)
    assert r.returncode == 1
    assert r.stderr.startswith("error: clock offset measurement failed")
    assert "Traceback" not in r.stderr


def test_runner_dispatches_vagrant_to_its_capture_tool():
    from mpcc.campaign import runner
    assert runner.experiment_script("vagrant") == VDIR / "run_experiment.sh"
    assert runner.experiment_script("netns").name == "run_experiment.sh"
    assert runner.experiment_script("netns").parent.name == "capture_tools"
    assert "vagrant" in runner.BACKENDS


def test_e2e_campaign_expands_to_single_and_multipath():
    from mpcc.campaign.spec import load_campaign
    c = load_campaign(str(VDIR / "e2e.yaml"))
    modes = sorted(r.params()["path_mode"] for r in c.runs)
    assert modes == ["multipath", "single"]
    assert all(r.params()["cc"] == "cubic" and r.params()["duration_s"] == 10 for r in c.runs)


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed")
def test_scripts_are_shellcheck_clean():
    r = _run(["shellcheck", "-x", *map(str, SCRIPTS)], cwd=ROOT)
    assert r.returncode == 0, r.stdout
    for s in SCRIPTS:
        head = s.read_text().splitlines()[:15]
        assert head[0] == "#!/usr/bin/env bash"
        assert "set -euo pipefail" in head


def test_round_robin_mechanism_is_validated():
    r = _run(["bash", str(VDIR / "backend.sh"), "status"], env=dict(os.environ, MPCC_RR_MECH="ecmp"))
    assert r.returncode == 2 and "MPCC_RR_MECH must be auto, teql or nft" in r.stderr
    r = _run(["bash", str(VDIR / "node-up.sh"), "router1", "--rr-mech", "ecmp"])
    assert r.returncode == 2 and "--rr-mech must be auto, teql or nft" in r.stderr


# ------------------------------------------------------------------ host CPU placement of the switch VMs (host-sched.sh)

@pytest.mark.parametrize("env, msg", [
    ({"MPCC_VAGRANT_SCHED": "sometimes"}, "MPCC_VAGRANT_SCHED must be off, auto or always"),
    ({"MPCC_VAGRANT_SCHED_PRIO": "rr:0"}, "rr:N needs 1 <= N <= 99"),
    ({"MPCC_VAGRANT_SCHED_PRIO": "nice:-30"}, "nice:N needs -20 <= N <= 19"),
    ({"MPCC_VAGRANT_SCHED_PRIO": "fifo:1"}, "must be rr:N, nice:N or none"),
    ({"MPCC_VAGRANT_PREFIX": "Bad_Prefix"}, "MPCC_VAGRANT_PREFIX must match"),
])
def test_host_sched_rejects_bad_input(env, msg):
    r = _run(["bash", str(VDIR / "host-sched.sh"), "apply"], env=dict(os.environ, **env))
    assert r.returncode == 2 and msg in r.stderr


def _fake_qemus(tmp_path, tcg: bool):
    """Processes standing in for the 8 VMs' qemu (one thread each), with libvirt-style pid files."""
    procs = {}
    piddir = tmp_path / "qemu"
    piddir.mkdir()
    accel = ["-accel", "tcg"] if tcg else ["-accel", "kvm"]
    for n in ("src1", "src2", "router1", "switch1", "switch2", "router2", "dst1", "dst2"):
        p = subprocess.Popen(["bash", "-c", "sleep 60; :", *accel])
        procs[n] = p
        (piddir / f"mpcctest-{n}.pid").write_text(str(p.pid))
    return procs, piddir


def _placement(pid):
    cpus = subprocess.run(["taskset", "-pc", str(pid)], capture_output=True, text=True).stdout.split(":")[-1].strip()
    return cpus, os.getpriority(os.PRIO_PROCESS, pid)


@pytest.mark.skipif(os.geteuid() != 0 or (os.cpu_count() or 1) < 2, reason="needs root and 2 CPUs (CI has both)")
@pytest.mark.parametrize("tcg", [True, False])
def test_host_sched_places_the_switch_vms(tmp_path, tcg):
    procs, piddir = _fake_qemus(tmp_path, tcg)
    env = dict(os.environ, MPCC_VAGRANT_PREFIX="mpcctest-", MPCC_LIBVIRT_PIDDIR=str(piddir), MPCC_VAGRANT_SCHED="auto")
    hs = str(VDIR / "host-sched.sh")
    try:
        all_cpus = _placement(os.getpid())[0]
        r = _run(["bash", hs, "apply"], env=env)
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        if not tcg:   # KVM guests are left alone unless asked
            assert out["applied"] is False and "KVM" in out["reason"] and out["domain_type"] == "kvm"
            assert _placement(procs["switch1"].pid) == (all_cpus, 0)
            return
        assert out["applied"] is True and out["domain_type"] == "qemu" and out["priority"] == "nice:-10"
        c1, c2 = out["switch1_cpu"], out["switch2_cpu"]
        assert c1 != c2
        assert _placement(procs["switch1"].pid) == (c1, -10)
        assert _placement(procs["switch2"].pid) == (c2, -10)
        assert _placement(procs["router1"].pid) == (all_cpus, 0)
        # the default is off
        r = _run(["bash", hs, "apply"], env={k: v for k, v in env.items() if k != "MPCC_VAGRANT_SCHED"})
        assert json.loads(r.stdout)["applied"] is False and _placement(procs["switch1"].pid) == (all_cpus, 0)
        r = _run(["bash", hs, "apply"], env=env)
        assert out["vms"]["switch1"]["cpus"] == c1 and out["vms"]["src1"]["nice"] == 0
        # SCHED_RR instead of a nice value
        r = _run(["bash", hs, "apply"], env=dict(env, MPCC_VAGRANT_SCHED_PRIO="rr:1"))
        assert r.returncode == 0 and json.loads(r.stdout)["vms"]["switch2"]["policy"] == "SCHED_RR"
        # apply is idempotent from the default placement: "off" undoes it
        r = _run(["bash", hs, "apply"], env=dict(env, MPCC_VAGRANT_SCHED="off"))
        assert json.loads(r.stdout) == {"applied": False, "reason": "MPCC_VAGRANT_SCHED=off", "domain_type": "qemu"}
        for n in ("switch1", "switch2"):
            assert _placement(procs[n].pid) == (all_cpus, 0)
        assert json.loads(_run(["bash", hs, "show"], env=env).stdout)["switch2"]["policy"] == "SCHED_OTHER"
    finally:
        for p in procs.values():
            p.kill()
            p.wait()
