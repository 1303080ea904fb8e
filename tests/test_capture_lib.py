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
