"""nbval on the committed notebooks: re-execute notebooks/*.ipynb on data/sample and compare every output with the
stored one (sanitised by tests/nbval_sanitize.cfg: timestamps, elapsed times, progress bars, addresses, absolute
paths; PNG bytes are not compared). A change in the analysis that moves a printed number fails here.

Refresh the stored outputs after an intended change with ``make notebooks-refresh``
(= ``mpcc reproduce --inplace``).
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9]*.ipynb"))
SAMPLE = REPO / "data" / "sample"


def _has_outputs(nb: Path) -> bool:
    cells = json.loads(nb.read_text())["cells"]
    return any(c.get("outputs") for c in cells if c.get("cell_type") == "code")


def test_notebooks_exist_with_parameters_cell():
    assert NOTEBOOKS, "no notebooks in notebooks/"
    for nb in NOTEBOOKS:
        cells = json.loads(nb.read_text())["cells"]
        tagged = [c for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])]
        assert len(tagged) == 1, f"{nb.name}: needs exactly one cell tagged 'parameters'"
        src = "".join(tagged[0]["source"])
        for name in ("campaign_dir", "output_dir", "alpha", "n_boot", "filters"):
            assert f"{name} =" in src, f"{nb.name}: parameters cell lacks {name}"


@pytest.mark.slow
def test_nbval_on_data_sample():
    if not (SAMPLE / "runs").is_dir():
        pytest.skip("data/sample has no runs/ yet (bundle it with `mpcc bundle`)")
    missing = [nb.name for nb in NOTEBOOKS if not _has_outputs(nb)]
    assert not missing, f"notebooks without stored outputs (run `make notebooks-refresh`): {missing}"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval", "--nbval-current-env",
           "--nbval-sanitize-with", str(REPO / "tests" / "nbval_sanitize.cfg"), *map(str, NOTEBOOKS)]
    res = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1800)
    assert res.returncode == 0, f"nbval failed:\n{res.stdout[-6000:]}\n{res.stderr[-2000:]}"
