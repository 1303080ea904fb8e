"""Bad command lines give one line on stderr (no usage block, no traceback) and exit status 2."""
import os
import subprocess
import sys

import pytest


@pytest.mark.parametrize("args, says", [
    (["campaign", "run", "campaigns/smoke.yaml", "--min-free-gb", "abc"],
     "mpcc campaign run: error: argument --min-free-gb: invalid float value: 'abc' (see mpcc campaign run --help)"),
    (["campaign", "run", "campaigns/smoke.yaml", "--jobs", "x"], "argument --jobs: invalid int value: 'x'"),
    (["frobnicate"], "mpcc: error: argument COMMAND: invalid choice: 'frobnicate'"),
    (["scorecard"], "mpcc scorecard: error: the following arguments are required: CAMPAIGN_DIR"),
    (["campaign", "run", "campaigns/smoke.yaml", "--bogus"], "unrecognized arguments: --bogus"),
])
def test_bad_command_lines_are_one_line(args, says):
    r = subprocess.run([sys.executable, "-m", "mpcc.cli", *args], capture_output=True, text=True,
                       env=dict(os.environ), timeout=60)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and says in r.stderr and "usage:" not in r.stderr, r.stderr
