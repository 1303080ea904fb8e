"""Helpers of capture_tools/capture_lib.sh that decide what a run records (no root needed)."""
import subprocess
from pathlib import Path

import pytest

LIB = Path(__file__).resolve().parents[1] / "capture_tools" / "capture_lib.sh"


@pytest.mark.parametrize("median, expected, again", [
    ("null", 20, True),        # no reply
    ("21.25", 20, True),       # 1.25 ms above: tolerance max(1 ms, 5 %) = 1 ms (the dual-path smoke run's miss)
    ("20.9", 20, False),
    ("19", 20, False),         # below the tolerance: a wrong path, never measured again (a stall only adds delay)
    ("0.5", 20, False),
    ("105", 100, False),       # tolerance 5 % = 5 ms
    ("105.1", 100, True),
])
def test_rtt_measure_again(median, expected, again):
    r = subprocess.run(["bash", "-c", f'source "{LIB}"; rtt_measure_again {median} {expected}'], capture_output=True)
    assert (r.returncode == 0) is again, r.stderr


@pytest.mark.parametrize("doc, ok", [
    ('{"start": {}, "intervals": [{}], "end": {"sum_received": {"bytes": 1}}}', True),
    # iperf3 3.12's JSON (exit status 0) when a UDP test's connect datagram or its reply was lost
    ('{"start": {}, "intervals": [], "end": {}, "error": "unable to read from stream socket: Resource temporarily '
     'unavailable"}', False),
    ("", False),                # no output at all
    ("not json", False),
])
def test_iperf_ok_fails_a_client_whose_json_holds_an_error(tmp_path, doc, ok):
    f = tmp_path / "flow2-client.json"
    f.write_text(doc)
    r = subprocess.run(["bash", "-c", f'source "{LIB}"; exec 3>"{tmp_path}/log"; iperf_ok "{f}"'],
                       capture_output=True, text=True)
    assert (r.returncode == 0) is ok, r.stderr
    if not ok:
        assert r.stderr.startswith("error: iperf3 (flow2-client.json): ") and len(r.stderr.splitlines()) == 1
        assert "flow2-client.json: " in (tmp_path / "log").read_text()


def _lib(script, tmp_path, timeout=30):
    return subprocess.run(["bash", "-c", f'set -euo pipefail; source "{LIB}"; exec 3>>"{tmp_path}/log"; {script}'],
                          capture_output=True, text=True, timeout=timeout)


def test_wait_pid_timeout_returns_the_status_of_a_child_and_stops_one_that_outlives_it(tmp_path):
    r = _lib('(sleep 0.2; exit 3) & p=$!; rc=0; wait_pid_timeout "$p" 5 || rc=$?; echo "$rc"', tmp_path)
    assert r.stdout.strip() == "3", r.stderr
    r = _lib('sleep 30 & p=$!; rc=0; wait_pid_timeout "$p" 1 || rc=$?; echo "$rc"', tmp_path)
    assert r.stdout.strip() == "143", r.stderr                 # TERM after 1 s


def test_a_pid_that_is_not_a_running_job_of_the_shell_is_never_signalled(tmp_path):
    """With kernel.pid_max 32768 a long run's PIDs are recycled within minutes: a PID kept from $! may belong to a
    process of another run by the time the run ends. wait_pid_timeout and end_processes signal only running jobs of
    their own shell; a PID they no longer know ends with status 0 and a line in capture.log (the caller checks the
    process's output, iperf_ok)."""
    other = subprocess.Popen(["sleep", "30"])                  # stands for another run's process with a reused PID
    try:
        r = _lib(f'rc=0; wait_pid_timeout {other.pid} 1 || rc=$?; echo "$rc"; '
                 f'sleep 30 & mine=$!; pids=({other.pid} "$mine"); tcpdump_pids=(); end_processes; '
                 f'echo "mine $(kill -0 "$mine" 2>/dev/null && echo alive || echo gone)"', tmp_path)
        assert r.stdout.split("\n")[:2] == ["0", "mine gone"], r.stderr
        assert other.poll() is None                            # never signalled
        assert f"pid {other.pid} ended earlier; its exit status is no longer known" in (tmp_path / "log").read_text()
    finally:
        other.kill()
        other.wait()
