"""``load_campaign`` on a bundle in the run-directory layout vs its columnar conversion (``analysis.bundle_store``).

``python bench/bundle_load.py [BUNDLE] [--reps 3] [--jobs N] [--columnar DIR]``: copies BUNDLE (default data/paper)
into a temporary directory (the run-directory loader may write refreshed caches into a bundle: nothing under data/ is
touched; a columnar BUNDLE, as every bundle under data/ is since issue 27, is materialised as the run-directory
bundle it was converted from, ``bundle_store.materialize``, and is itself the columnar side), converts the copy (``write_columnar``; zstd-19, a few minutes for data/paper) unless ``--columnar`` names a
conversion made before, checks that both give the same rows and runs listing, then times ``load_campaign`` on each
(``--jobs``: as the notebooks and the scorecard call it, default os.cpu_count(); page cache warm: one untimed load
first) and prints wall seconds (best and median of ``--reps``), file counts and ``du -s`` (KiB, 4-KiB blocks).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _du_kib(d: Path) -> int:
    return int(subprocess.run(["du", "-sk", str(d)], capture_output=True, text=True, check=True).stdout.split()[0])


def _files(d: Path) -> int:
    return sum(1 for p in d.rglob("*") if p.is_file())


def _time_loads(d: Path, reps: int, jobs) -> list[float]:
    from analysis.dataset import load_campaign
    load_campaign(d, progress=False, jobs=jobs)       # warm the page cache (and the process pool's imports)
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        load_campaign(d, progress=False, jobs=jobs)
        out.append(time.perf_counter() - t0)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bundle", nargs="?", default=str(ROOT / "data" / "paper"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--columnar", default=None, help="a columnar conversion of BUNDLE made before (skip converting)")
    args = ap.parse_args(argv)
    import pandas as pd

    from analysis.bundle_store import is_columnar, materialize, write_columnar
    from analysis.dataset import load_campaign
    print(f"cpus {os.cpu_count()}, load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")
    with tempfile.TemporaryDirectory(prefix="bundle-load-") as tmp:
        old = Path(tmp) / "rundirs"
        given = None
        if is_columnar(args.bundle):
            materialize(args.bundle, old)
            given = args.bundle
        else:
            shutil.copytree(args.bundle, old, symlinks=True)
        col = Path(args.columnar or given or Path(tmp) / "columnar")
        if not (args.columnar or given):
            t0 = time.perf_counter()
            write_columnar(old, col)
            print(f"conversion: {time.perf_counter() - t0:.0f} s")
        a, b = load_campaign(old, progress=False), load_campaign(col, progress=False)
        pd.testing.assert_frame_equal(a, b)
        pd.testing.assert_frame_equal(a.attrs["runs"], b.attrs["runs"])
        print(f"same rows ({len(a)}) and runs listing ({len(a.attrs['runs'])})")
        for name, d in (("run directories", old), ("columnar/1", col)):
            t = _time_loads(d, args.reps, args.jobs)
            print(f"{name:16s} load_campaign best {min(t):.2f} s, median {statistics.median(t):.2f} s "
                  f"({args.reps} reps); {_files(d)} files, du -s {_du_kib(d)} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
