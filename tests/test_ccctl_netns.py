"""testbed/cc/ccctl.sh as a transaction (needs root, bpftool and the BPF objects; CI builds them): a holder is
recorded only when its congestion control is really held, a failed or killed acquire leaves nothing registered past
the next acquire/gc, release is idempotent, and a re-registration while the old map still serves sockets is told
apart from it. The stress test runs 8 concurrent acquirers over 4 BPF congestion controls with kill -9 of holders and
of acquisitions in flight."""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.netns_helpers import registered_ccs

ROOT = Path(__file__).resolve().parents[1]
CCCTL = ROOT / "testbed" / "cc" / "ccctl.sh"
PORTS = ["bic", "bic415", "westwood", "westwood_e", "pcc_vivace", "pcc_vivace_usp"]
TOOLS = ["bpftool", "jq", "make", "clang"]

pytestmark = [
    pytest.mark.netns,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root"),
    pytest.mark.skipif(any(shutil.which(t) is None for t in TOOLS), reason="BPF tools missing"),
]


def _registered() -> dict[str, int]:
    return registered_ccs()


def _available() -> list[str]:
    return Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()


def _native(cc: str) -> bool:
    return cc in _available() and cc not in _registered()


@pytest.fixture
def env(tmp_path):
    if any(_native(c) for c in PORTS):
        pytest.fail(f"this kernel has one of {PORTS} itself: the BPF ports' bookkeeping cannot be tested here")
    leftover = set(_registered()) & set(PORTS)
    assert not leftover, f"registered before the test: {leftover}"
    subprocess.run(["make", "-s", "-C", str(CCCTL.parent)], check=True, capture_output=True, timeout=300)
    e = dict(os.environ, MPCC_CC_STATE=str(tmp_path / "cc-state"))
    yield e
    subprocess.run(["bash", str(CCCTL), "gc"], env=e, capture_output=True, timeout=120)


def _ccctl(env, *args, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(CCCTL), *args], env=env, capture_output=True, text=True, timeout=timeout)


def _state_files(env) -> list[str]:
    state = Path(env["MPCC_CC_STATE"])
    return sorted(p.name for p in state.iterdir() if p.name != "lock") if state.exists() else []


def _holder() -> subprocess.Popen:
    return subprocess.Popen(["sleep", "300"])


def test_release_is_idempotent_and_the_last_release_unregisters(env):
    h1, h2 = _holder(), _holder()
    try:
        for h in (h1, h2):
            res = _ccctl(env, "acquire", "bic", str(h.pid))
            assert res.returncode == 0, res.stderr
            info = json.loads(res.stdout)
            assert info["implementation"] == "bpf" and info["registered_by"] == "mpcc"
            assert info["struct_ops_id"] == _registered()["bic"]
        assert _ccctl(env, "release", "bic", str(h1.pid)).returncode == 0
        assert _ccctl(env, "release", "bic", str(h1.pid)).returncode == 0      # again: nothing changes
        assert "bic" in _registered()                                           # h2 still holds it
        assert _ccctl(env, "release", "bic", str(h2.pid)).returncode == 0
        assert "bic" not in _registered() and _state_files(env) == []
        assert _ccctl(env, "release", "bic", str(h2.pid)).returncode == 0      # nothing held: still fine
    finally:
        h1.kill(), h2.kill()


def test_a_re_registration_is_told_apart_from_the_map_still_serving_old_sockets(env):
    """After an unregistration the old map lives on (state TOBEFREE, same name, lower id) while a socket uses it.
    The next acquire registers anew and must record the new map's id, and its release must unregister that one;
    the first-match parse of ``bpftool struct_ops show`` recorded the old id and leaked the new registration."""
    h = _holder()
    try:
        first = json.loads(_ccctl(env, "acquire", "westwood", str(h.pid)).stdout)["struct_ops_id"]
        sock = socket.socket()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"westwood")
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        assert _ccctl(env, "release", "westwood", str(h.pid)).returncode == 0
        assert "westwood" not in _registered()
        res = _ccctl(env, "acquire", "westwood", str(h.pid))
        assert res.returncode == 0, res.stderr
        second = json.loads(res.stdout)
        assert second["struct_ops_id"] != first and second["struct_ops_id"] == _registered()["westwood"]
        assert second["registered_by"] == "mpcc"
        assert _ccctl(env, "release", "westwood", str(h.pid)).returncode == 0
        assert "westwood" not in _registered() and _state_files(env) == []
        sock.close()
    finally:
        h.kill()


def _fake_bpftool(tmp_path: Path, after_register: str) -> dict:
    """A bpftool on PATH that runs the real one, and once it has registered a struct_ops does ``after_register``
    (shell): fail every later dump, or SIGKILL the whole ccctl.sh process group."""
    real = shutil.which("bpftool")
    d = tmp_path / "fakebin"
    d.mkdir()
    flag = tmp_path / "registered"
    (d / "bpftool").write_text(f"""#!/usr/bin/env bash
if [[ "$*" == *"struct_ops register"* ]]; then
    {real} "$@"; rc=$?; touch {flag}
    {after_register}
    exit $rc
fi
if [[ -e {flag} && "$*" == *"struct_ops dump"* && -n "${{FAIL_DUMP_AFTER_REGISTER:-}}" ]]; then exit 1; fi
exec {real} "$@"
""")
    (d / "bpftool").chmod(0o755)
    return {"PATH": f"{d}:{os.environ['PATH']}"}


def test_an_acquire_that_fails_after_registering_holds_nothing_and_gc_unregisters(env, tmp_path):
    h = _holder()
    try:
        fake = _fake_bpftool(tmp_path, ":")
        res = _ccctl(dict(env, **fake, FAIL_DUMP_AFTER_REGISTER="1"), "acquire", "westwood_e", str(h.pid))
        assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)   # a failure, never "skipped" (3)
        assert not any(f.endswith(".holders") for f in _state_files(env)), _state_files(env)
        assert "westwood_e" in _registered()          # the kernel has it, nobody holds it
        assert _ccctl(env, "gc").returncode == 0      # the next gc (or acquire) unregisters it
        assert "westwood_e" not in _registered() and _state_files(env) == []
    finally:
        h.kill()


def test_an_acquire_killed_between_register_and_bookkeeping_is_adopted_and_unregistered(env, tmp_path):
    h = _holder()
    try:
        fake = _fake_bpftool(tmp_path, 'kill -KILL -- "-$(ps -o pgid= -p $$ | tr -d " ")"')
        proc = subprocess.Popen(["bash", str(CCCTL), "acquire", "pcc_vivace", str(h.pid)], env=dict(env, **fake),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        proc.communicate(timeout=120)
        assert proc.returncode == -signal.SIGKILL
        assert "pcc_vivace" in _registered()
        assert "pcc_vivace.registering" in _state_files(env) and "pcc_vivace.id" not in _state_files(env)
        h2 = _holder()
        res = _ccctl(env, "acquire", "pcc_vivace", str(h2.pid))   # the next acquire adopts it, prunes, registers anew
        assert res.returncode == 0, res.stderr
        assert json.loads(res.stdout)["struct_ops_id"] == _registered()["pcc_vivace"]
        h2.kill()
        h2.wait()
        assert _ccctl(env, "gc").returncode == 0
        assert "pcc_vivace" not in _registered() and _state_files(env) == []
    finally:
        h.kill()


def test_stress_concurrent_acquirers_with_kill_9(env):
    """8 acquirers x 100 acquisitions over the BPF ports (PORTS), with a gc now and then. Each
    acquisition's holder is a live process; after acquiring, a socket must be able to use the CC (it is really held).
    Then the holder is released and killed, killed and released, or killed with no release at all (its registration
    must go at the next acquire/gc); and now and then an acquisition is SIGKILLed in flight (not a failure: it was
    killed). Ends with 0 failed acquisitions, no holder, no bookkeeping, nothing registered."""
    n_workers, n_iter = 8, 100
    failures: list[str] = []
    counts = {"acquired": 0, "killed_in_flight": 0, "leaked_holder": 0}
    lock = threading.Lock()
    stop = threading.Event()

    def use(cc: str) -> None:
        s = socket.socket()
        try:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
        finally:
            s.close()

    def worker(k: int) -> None:
        rng = random.Random(1000 + k)
        for i in range(n_iter):
            cc = rng.choice(PORTS)
            h = _holder()
            try:
                if rng.random() < 0.08:   # SIGKILL an acquisition in flight
                    p = subprocess.Popen(["bash", str(CCCTL), "acquire", cc, str(h.pid)], env=env,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
                    time.sleep(rng.uniform(0, 0.4))
                    try:
                        os.killpg(p.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    p.wait()
                    with lock:
                        counts["killed_in_flight"] += 1
                    if rng.random() < 0.5:
                        _ccctl(env, "release", cc, str(h.pid))
                    continue
                res = _ccctl(env, "acquire", cc, str(h.pid))
                if res.returncode != 0:
                    with lock:
                        failures.append(f"worker {k} iter {i} {cc}: exit {res.returncode}: {res.stdout} {res.stderr}")
                    continue
                try:
                    use(cc)
                except OSError as e:
                    with lock:
                        failures.append(f"worker {k} iter {i} {cc}: acquired but unusable: {e}")
                with lock:
                    counts["acquired"] += 1
                r = rng.random()
                if r < 0.5:
                    _ccctl(env, "release", cc, str(h.pid))
                elif r < 0.75:
                    h.kill()
                    h.wait()
                    _ccctl(env, "release", cc, str(h.pid))
                else:
                    with lock:
                        counts["leaked_holder"] += 1
            finally:
                h.kill()
                h.wait()

    def collector() -> None:
        while not stop.wait(2.0):
            _ccctl(env, "gc")

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(n_workers)]
    gc_thread = threading.Thread(target=collector)
    gc_thread.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    gc_thread.join()
    res = _ccctl(env, "gc")
    assert res.returncode == 0, res.stderr
    assert failures == [], failures[:5]
    assert counts["acquired"] + counts["killed_in_flight"] == n_workers * n_iter
    assert counts["killed_in_flight"] > 0 and counts["leaked_holder"] > 0
    assert _state_files(env) == []
    assert not set(_registered()) & set(PORTS), _registered()
    assert not set(_available()) & set(PORTS)
    # and no map of theirs lingers either (the test's sockets never connected: nothing keeps one alive)
    for _ in range(50):
        show = subprocess.run(["bpftool", "struct_ops", "show"], capture_output=True, text=True).stdout
        if not any(line.split()[1:2] and line.split()[1] in PORTS for line in show.splitlines()):
            break
        time.sleep(0.1)
    assert not any(line.split()[1:2] and line.split()[1] in PORTS for line in show.splitlines()), show
