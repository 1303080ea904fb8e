"""Interrupt a real netns campaign mid-run (SIGINT, SIGKILL), re-run it: it finishes and leaves nothing behind."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.netns_helpers import env_prefix

REPO = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.netns, pytest.mark.slow,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")]

CAMPAIGN = """\
name: interrupt
reps: 2
seed: 3
defaults: {duration_s: 4, link_delay_ms: 10, loss_pct: 0, path_mode: multipath}
experiments:
  - experiment: single_vs_multi
    cc: cubic
    path_mode: [single, multipath]
"""


def _leftovers(prefix):
    ns = [n for n in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
          if n.startswith(prefix)]
    procs = subprocess.run(["pgrep", "-af", f"{prefix}|delayshim|iperf3|tcpdump"], capture_output=True,
                           text=True).stdout
    # zombies (<defunct>) hold no resources; they wait for this sandbox's PID 1, which does not reap
    procs = [p for p in procs.splitlines() if "pgrep" not in p and "pytest" not in p and "<defunct>" not in p]
    # only processes of THIS test's testbed (other testbeds may run concurrently): everything the capture tool and
    # netns.sh start inherits MPCC_NS_PREFIX in its environment
    return ns, [p for p in procs if prefix in p or env_prefix(p.split()[0]) == prefix]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_interrupt_and_resume(tmp_path, sig):
    prefix = f"int{int(sig)}-"
    camp = tmp_path / "interrupt.yaml"
    camp.write_text(CAMPAIGN)
    out = tmp_path / "out"
    env = {**os.environ, "MPCC_NS_PREFIX": prefix}
    cmd = [sys.executable, "-m", "mpcc.cli", "campaign", "run", str(camp), "--backend", "netns", "--out", str(out)]
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(9)  # inside the first or second run
    p.send_signal(sig)
    p.wait(timeout=60)
    assert p.returncode != 0
    # the capture tool's trap tears down (SIGKILL: via the parent-death signal), asynchronously: bash runs the trap
    # only once its foreground command (e.g. `netns.sh up`) has returned, which takes seconds on a loaded machine
    deadline = time.monotonic() + 60
    while True:
        ns, procs = _leftovers(prefix)
        if (ns == [] and procs == []) or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert ns == [] and procs == [], (ns, procs)
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-1500:]
    runs = [d for d in (out / "runs").iterdir() if ".incomplete-" not in d.name]
    assert len(runs) == 4 and all((d / "COMPLETE").exists() for d in runs)
    ns, procs = _leftovers(prefix)
    assert ns == [] and procs == [], (ns, procs)
