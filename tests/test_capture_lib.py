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
