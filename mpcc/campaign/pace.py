"""How fast a campaign is being recorded, from its own run directories: the wall clock its complete runs took and
what the runs left will take at that pace (``mpcc campaign run --dry-run``; ``tools/recording_time.py``).

Wall clock is the union of the complete runs' [meta.json ``start_time``, ``COMPLETE`` stamp] intervals, so runs
recorded at once (``--jobs``) count once and the time between sessions not at all."""
from __future__ import annotations

from datetime import datetime
from pathlib import Path

from analysis import runmeta
from mpcc.campaign.room import complete_runs


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


def run_interval(run_dir: Path) -> tuple[datetime, datetime] | None:
    """[start, end] of a complete run: meta.json ``start_time`` and the ``COMPLETE`` stamp; None when either is
    missing or unreadable."""
    try:
        start = runmeta.read_meta(run_dir).get("start_time")
        return (runmeta.utc_time(start), runmeta.utc_time((run_dir / "COMPLETE").read_text())) if start else None
    except (OSError, ValueError, TypeError):
        return None


def recorded(out: Path) -> tuple[int, float]:
    """(complete runs with both times, wall clock s) of a campaign directory's ``runs/`` (moved-aside copies
    excluded)."""
    intervals = [iv for iv in map(run_interval, complete_runs(Path(out))) if iv is not None]
    return len(intervals), union_seconds(intervals)


def eta(out: Path, n_left: int) -> str | None:
    """A dry run's pace line: the complete runs' wall clock and, at that pace, how long the ``n_left`` runs left
    take; None without a timed complete run."""
    n, wall = recorded(out)
    if n == 0 or wall <= 0:
        return None
    per = wall / n
    return (f"pace: {n} run(s) recorded in {wall / 3600:.2f} h of wall clock ({per:.1f} s a run, the runs at once "
            f"counted once); the {n_left} left take ~{per * n_left / 3600:.2f} h at that pace")
