"""``mpcc verify-raw ARCHIVE BUNDLE``: check a raw-capture archive (``mpcc bundle --raw-archive``) against its bundle.

It is the archive the bundle's ``bundle.json`` lists (sha256), every member is intact and is the capture the run's
fingerprint names, and the study family's analysis, run again on the archive's captures with the bundle's other run
files, gives the bundle's per-flow rows (``analysis.raw_archive.verify``). Exit 0 when all holds, 1 with one line
per problem otherwise.
"""
from __future__ import annotations

import sys
from pathlib import Path

from mpcc.errors import UserError

NAME = "verify-raw"
HELP = "check a raw-capture archive against its bundle: checksums, and the bundle's tables re-derived from it"


def add_arguments(p):
    p.add_argument("archive", help="the archive written by `mpcc bundle --raw-archive FILE`")
    p.add_argument("bundle", help="the bundle whose bundle.json lists the archive (e.g. data/paper)")
    p.add_argument("--jobs", type=int, default=None, help="processes for the analysis (default: the CPU count)")


def run(args) -> int:
    import os

    from analysis.raw_archive import verify
    if args.jobs is not None and args.jobs < 1:
        raise UserError(f"--jobs must be at least 1, got {args.jobs}")
    if not Path(args.bundle).is_dir():
        raise UserError(f"not a bundle directory: {args.bundle}")
    res = verify(args.archive, args.bundle, jobs=args.jobs or os.cpu_count() or 1)
    for line in res["problems"] + [f"rows differ: {x}" for x in res["rows_differ"]]:
        print(f"mpcc verify-raw: {line}", file=sys.stderr)
    ok = not res["problems"] and not res["rows_differ"]
    print(f"mpcc verify-raw: {res['members']} captures of {res['runs']} runs: "
          + ("checksums match and the re-derived rows equal the bundle's" if ok else
             f"{len(res['problems'])} problem(s), {len(res['rows_differ'])} run(s) whose rows differ"))
    return 0 if ok else 1
