#!/usr/bin/env python3
"""`make bench`: every benchmark in bench/, one after the other (timing targets live here, not in tests/).

  bench/ingest_speed.py   one capture: vectorised ingest vs dpkt vs tshark (packets/s, ratios)
  bench/campaign_e2e.py   synthetic campaign (one real run copied N times): load_campaign cold / warm

Inputs: $MPCC_BENCH_CAPTURE (a large real capture; default: the largest in tests/data/real) and
$MPCC_BENCH_RUN (a complete real run directory; default: the first under data/raw/*/runs/, else skipped).
"""
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    rc = 0
    for script in ("ingest_speed.py", "campaign_e2e.py"):
        print(f"== bench/{script}", flush=True)
        rc |= subprocess.run([sys.executable, str(HERE / script)]).returncode
    return rc


if __name__ == "__main__":
    sys.exit(main())
