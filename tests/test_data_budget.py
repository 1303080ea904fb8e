"""The bundled datasets stay small enough to clone: every file under data/ together within 300 MB (derived tables
for every run, raw captures for a few; `mpcc bundle --max-mb` sets each bundle's share)."""
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUDGET_MB = 300


def test_bundled_data_within_budget():
    total = sum(f.stat().st_size for f in (REPO / "data").rglob("*") if f.is_file() and "raw" not in f.parts
                and "processed" not in f.parts)
    assert total / 1e6 <= BUDGET_MB, f"data/ holds {total / 1e6:.1f} MB > {BUDGET_MB} MB"
