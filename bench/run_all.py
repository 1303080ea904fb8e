#!/usr/bin/env python3
"""`make bench`: every benchmark in bench/, one after the other (timing targets live here, not in tests/).

  bench/ingest_speed.py   one capture: vectorised ingest vs dpkt vs tshark (packets/s, ratios)
  bench/campaign_e2e.py   synthetic campaign (one real run copied N times): load_campaign cold / warm
  bench/metrics_stages.py CPU seconds per analysis stage of one real run, current vs pre-vectorising metric code

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
    print("== bench/metrics_stages.py", flush=True)
    sys.path.insert(0, str(HERE))
    from campaign_e2e import _default_source
    run = _default_source()
    if run is None:
        print("metrics_stages: skipped: no real run directory (set MPCC_BENCH_RUN)")
    else:
        rc |= subprocess.run([sys.executable, str(HERE / "metrics_stages.py"), str(run)]).returncode
    return rc


if __name__ == "__main__":
    sys.exit(main())
