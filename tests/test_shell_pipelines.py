"""Pipelines whose reader quits early, under ``set -o pipefail`` (tools/check_pipelines.py), and what a failing
congestion-control acquisition makes of a run (capture_tools/capture_lib.sh ``acquire_cc``). No root needed."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import check_pipelines  # noqa: E402


def test_the_project_has_no_early_quitting_pipeline_reader():
    res = subprocess.run([sys.executable, str(ROOT / "tools" / "check_pipelines.py")], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout


@pytest.mark.parametrize("line", [
    """bpftool struct_ops show 2>/dev/null | awk -v n="$1" '$2 == n {print $1; exit}'""",
    """x=$(iperf3 --version 2>&1 | head -1)""",
    """--arg v "$(tcpdump --version 2>&1 | head -n 1)" \\""",
    """if ip netns list | awk '{print $1}' | grep -qx "$ns"; then""",
    """tc qdisc show dev "$dev" | grep -q teql && echo yes""",
    """dmesg | grep -m1 error""",
    """ls | grep --quiet foo""",
    """cmd | sed -n '/x/{p;q}'""",
    """cmd | sed 1q""",
    """cmd | read -r first""",
    """(mptcpize -V 2>&1 || true) | head -1""",
])
def test_the_checker_finds_each_early_reader(line):
    assert check_pipelines.check_text(line + "\n"), line


@pytest.mark.parametrize("line", [
    """bpftool struct_ops show | awk -v n="$1" '$2 == n && !found {found = 1; print $1}'""",
    """ip netns list | awk -v n="$ns" '$1 == n {f = 1} END {exit !f}'""",
    """x=$(iperf3 --version 2>&1 | sed -n 1p)""",
    """grep -qx -- "$node" <<<"$nodes" || die "unknown" """,
    """a || grep -q x file""",
    """echo "usage: up [--path-mode single|multipath]" >&2; exit 2""",
    """sed -n 's/^model name\\s*: //p' /proc/cpuinfo | sed -n 1p""",
    """# a comment | head -1""",
    """cmd 2>&1 | tee -a log""",
])
def test_the_checker_passes_readers_that_read_everything(line):
    assert check_pipelines.check_text(line + "\n") == [], line


def test_an_early_reader_really_kills_its_writer_under_pipefail():
    """The race the checker guards against, made certain: the writer writes more (64 KiB: past mawk's 4-KiB input
    buffer, which hides the race for small outputs; gawk and head quit at once) after the reader has quit."""
    writer = "(echo '1: bic'; sleep 0.3; printf '%065536d\\n' 0)"
    for reader, code in [("awk '$2 == \"bic\" {print $1; exit}'", 141), ("head -1", 141),
                         ("awk '$2 == \"bic\" && !f {f = 1; print $1}'", 0), ("sed -n 1p", 0)]:
        res = subprocess.run(["bash", "-c", f"set -o pipefail; {writer} | {reader}"], capture_output=True, text=True)
        assert res.returncode == code, (reader, res.returncode)     # 141: SIGPIPE (128 + 13)
        assert res.stdout.split()[0] == "1:"


def _acquire_with_fake_ccctl(tmp_path: Path, rc: int, stdout: str) -> tuple[subprocess.CompletedProcess, Path]:
    """capture_lib.sh's acquire_cc against a stand-in ccctl.sh that prints ``stdout`` and exits ``rc``."""
    tb = tmp_path / "tb"
    (tb / "cc").mkdir(parents=True)
    fake = tb / "cc" / "ccctl.sh"
    fake.write_text(f"#!/usr/bin/env bash\necho '{stdout}'\nexit {rc}\n")
    fake.chmod(0o755)
    out = tmp_path / "run"
    script = f"""set -euo pipefail
source {ROOT}/capture_tools/experiment_args.sh
source {ROOT}/capture_tools/capture_lib.sh
TB={tb} out={out} held_ccs=() cc_impl='{{}}'
open_run_dir
acquire_cc westwood_e
echo "held: ${{held_ccs[*]}} impl: $cc_impl"
"""
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30), out


def test_a_failed_acquisition_makes_the_run_incomplete_not_skipped(tmp_path):
    """ccctl.sh dying of SIGPIPE (exit 141) is no property of the kernel: no SKIPPED marker, a one-line error, a
    status that the campaign runner counts as failed (the run is redone on resume)."""
    res, out = _acquire_with_fake_ccctl(tmp_path, 141, "")
    assert res.returncode not in (0, 3)
    assert not (out / "SKIPPED").exists() and not (out / "COMPLETE").exists()
    assert res.stderr.strip().count("\n") == 0 and res.stderr.startswith("error: westwood_e: ccctl.sh acquire failed")
    assert "the run is incomplete" in (out / "capture.log").read_text()


def test_a_cc_the_kernel_cannot_have_skips_the_run(tmp_path):
    why = "westwood_e: not available on this kernel — skipped (no tcp_westwood_e; BPF port: bpftool not installed)"
    res, out = _acquire_with_fake_ccctl(tmp_path, 3, why)
    assert res.returncode == 3
    assert (out / "SKIPPED").read_text().strip() == why


def test_an_acquired_cc_is_held_and_recorded(tmp_path):
    res, _ = _acquire_with_fake_ccctl(tmp_path, 0, '{"cc":"westwood_e","implementation":"bpf","struct_ops_id":7}')
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == 'held: westwood_e impl: {"westwood_e":{"implementation":"bpf","struct_ops_id":7}}'
