"""How long recording took: the README's figure for the paper protocol.

``python tools/recording_time.py DIR [--since 2026-11-25T05:36:00Z]``; DIR is a campaign directory (data/raw/paper)
or a bundle (data/paper). Over the complete runs (those with a ``COMPLETE`` marker) started at or after ``--since``:
wall clock as the union of the runs' [meta.json ``start_time``, ``COMPLETE`` stamp] intervals (h, and s per run; runs
recorded at once with ``--jobs`` overlap and count once), runs per experiment, and host CPU pressure while they ran
(the bundle manifest's own summary, ``mpcc.commands.bundle._host_load_summary``)."""
import json
import sys
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from mpcc.commands.bundle import _host_load_summary  # noqa: E402


def _utc(stamp: str) -> datetime:
    """An ISO 8601 UTC stamp (``Z``, up to nanoseconds as meta.json writes them) as an aware datetime."""
    s = stamp.strip().rstrip("Z")
    head, _, frac = s.partition(".")
    return datetime.fromisoformat(head + ("." + frac[:6] if frac else "")).replace(tzinfo=timezone.utc)


def union_seconds(intervals: list[tuple[datetime, datetime]]) -> float:
    """Length of the union of [start, end] intervals, s."""
    total, cur = 0.0, None
    for a, b in sorted(intervals):
        if cur and a <= cur[1]:
            cur[1] = max(cur[1], b)
            continue
        if cur:
            total += (cur[1] - cur[0]).total_seconds()
        cur = [a, b]
    return total + ((cur[1] - cur[0]).total_seconds() if cur else 0.0)


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-") or (len(argv) not in (1, 3)) or (len(argv) == 3 and argv[1] != "--since"):
        print("usage: recording_time.py DIR [--since ISO-UTC]", file=sys.stderr)
        return 2
    runs = Path(argv[0]) / "runs"
    if not runs.is_dir():
        print(f"recording_time: {argv[0]} has no runs/ directory", file=sys.stderr)
        return 2
    try:
        since = _utc(argv[2]) if len(argv) == 3 else None
    except ValueError:
        print(f"recording_time: --since {argv[2]!r} is not an ISO 8601 time", file=sys.stderr)
        return 2
    intervals, metas, per_exp = [], {}, Counter()
    for d in sorted(runs.iterdir()):
        if not (d / "COMPLETE").is_file():
            continue
        meta = json.loads((d / "meta.json").read_text())
        start = _utc(meta["start_time"])
        if since and start < since:
            continue
        intervals.append((start, _utc((d / "COMPLETE").read_text())))
        metas[d.name] = {**meta, "status": "complete"}
        per_exp[d.name.split("__")[0]] += 1   # run ids start with their experiment
    if not intervals:
        print(f"recording_time: no complete runs in {runs}" + (f" since {argv[2]}" if since else ""), file=sys.stderr)
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
