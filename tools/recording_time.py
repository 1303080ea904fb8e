"""How long recording took: the README's figure for the paper protocol.

``python tools/recording_time.py DIR [--since 2026-11-25T05:36:00Z]``; DIR is a campaign directory (data/raw/paper)
or a bundle (data/paper; a columnar one's runs table, read as it is). Over its
complete runs as the analysis counts them (``analysis.dataset.run_status``: a
``COMPLETE`` marker, and not moved aside as ``<run_id>.incomplete-*``) started at or after ``--since``: wall clock as
the union of the runs' [meta.json ``start_time``, ``COMPLETE`` stamp] intervals (h, and s per run; runs recorded at
once with ``--jobs`` overlap and count once), runs per experiment, and host CPU pressure while they ran (the bundle
manifest's own summary, ``mpcc.commands.bundle._host_load_summary``)."""
import argparse
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from analysis import runmeta  # noqa: E402
from analysis.dataset import complete_markers, run_metas, run_status  # noqa: E402
from analysis.errors import AnalysisError  # noqa: E402
from mpcc.campaign.pace import union_seconds  # noqa: E402
from mpcc.commands.bundle import _host_load_summary  # noqa: E402


def _since(text: str) -> datetime:
    try:
        return runmeta.utc_time(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO 8601 time") from None


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="recording_time.py", description=__doc__.splitlines()[0])
    ap.add_argument("dir", help="campaign directory or bundle (with runs/ inside)")
    ap.add_argument("--since", type=_since, metavar="ISO-UTC", help="only runs started at or after this time")
    args = ap.parse_args(argv)
    intervals, metas, per_exp = [], {}, Counter()
    try:
        runs = run_status(args.dir)
        all_metas, markers = dict(run_metas(args.dir)), complete_markers(args.dir)
        for r in runs[runs["status"] == "complete"].itertuples():
            meta = all_metas.get(r.run_id, {})
            if not meta.get("start_time"):
                raise AnalysisError(f"{args.dir}: run {r.run_id}: meta.json has no start_time")
            start = runmeta.utc_time(meta["start_time"])
            if args.since and start < args.since:
                continue
            if r.run_id not in markers:
                raise AnalysisError(f"{args.dir}: run {r.run_id}: no COMPLETE marker text")
            intervals.append((start, runmeta.utc_time(markers[r.run_id])))
            metas[r.run_id] = {**meta, "status": "complete"}
            per_exp[r.experiment] += 1
    except (AnalysisError, OSError, ValueError) as exc:
        print(f"recording_time: {exc}", file=sys.stderr)
        return 2
    if not intervals:
        print(f"recording_time: no complete runs in {args.dir}" + (f" since {args.since.isoformat()}" if args.since else ""),
              file=sys.stderr)
        return 1
    wall = union_seconds(intervals)
    print(f"{len(intervals)} runs, wall clock {wall / 3600:.2f} h ({wall / 60:.1f} min), {wall / len(intervals):.1f} s per run")
    print("per experiment:", dict(sorted(per_exp.items())))
    print("host CPU pressure (PSI some, %):", _host_load_summary(metas))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BrokenPipeError:   # piped into head
        sys.exit(0)
