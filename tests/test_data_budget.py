"""The bundled datasets stay small enough to clone: every file under data/ together within 300 MB on disk (derived
tables for every run, raw captures for a few; `mpcc bundle --max-mb` sets each bundle's share). On disk, as `du`
counts it: each file takes whole 4-KiB blocks and each directory one, which matters for bundles of many small files
(data/paper's 1,340 runs hold ~9 files in 4 directories each)."""
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUDGET_MB = 300
BLOCK = 4096


def test_bundled_data_within_budget():
    paths = [p for p in (REPO / "data").rglob("*") if "raw" not in p.parts and "processed" not in p.parts]
    total = sum(-(-p.stat().st_size // BLOCK) * BLOCK if p.is_file() else BLOCK for p in paths if not p.is_symlink())
    assert total / 1e6 <= BUDGET_MB, f"data/ takes {total / 1e6:.1f} MB on disk > {BUDGET_MB} MB"
