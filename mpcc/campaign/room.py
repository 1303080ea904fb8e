"""Disk room for a recording: the runner stops handing out runs before the output's file system fills.

A run whose captures hit a full disk is lost (tcpdump stops writing, the run fails and is recorded again), and a full
root file system takes the host's other work down with it. Before it starts each run the runner compares the free
space of ``--out``'s file system (``shutil.disk_usage``, bytes available to this user) with a floor:

* ``--min-free-gb G``: G × 10^9 bytes (0: no floor);
* otherwise the larger of 1 GB and 2 × (runs at once) × the largest run directory recorded so far (the
  :data:`SAMPLE` most recent complete runs of ``--out`` when it starts, then every run it completes), so that the runs
  in flight and the next ones still fit.

Below the floor it starts no further run, lets the runs in flight finish, and says how much room there is; running
the same command again resumes (README, "Recording"). :func:`estimate` gives a dry run's
figures: how much the complete runs take and how much the rest will need at their median size.
"""
from __future__ import annotations

import os
import shutil
import stat
import statistics
from dataclasses import dataclass
from pathlib import Path

GB = 10 ** 9
MIN_FLOOR_BYTES = 1 * GB
SAMPLE = 20


def dir_bytes(d: Path) -> int:
    """Bytes of the regular files under ``d`` (st_size, symlinks not followed)."""
    total = 0
    for root, _dirs, files in os.walk(d):
        for f in files:
            try:
                st = os.lstat(os.path.join(root, f))
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                total += st.st_size
    return total


def complete_runs(out: Path) -> list[Path]:
    """The complete run directories of ``out`` (``runs/<run_id>/COMPLETE``; moved-aside copies excluded), oldest
    first by their marker's mtime."""
    runs = out / "runs"
    if not runs.is_dir():
        return []
    found = [(m.stat().st_mtime, m.parent) for m in runs.glob("*/COMPLETE") if ".incomplete-" not in m.parent.name]
    return [d for _, d in sorted(found)]


def gb(n: float) -> str:
    """Bytes as GB (10^9): one decimal from 1 GB, three significant digits below."""
    return f"{n / GB:.1f} GB" if n >= GB else f"{n / GB:.3g} GB"


@dataclass
class Room:
    """The free-space rule of one recording session (module docstring). ``min_free_bytes``: the fixed floor of
    ``--min-free-gb`` or None for the estimated one; ``largest``: the largest run directory seen (bytes)."""
    out: Path
    jobs: int
    min_free_bytes: int | None = None
    largest: int = 0

    @classmethod
    def start(cls, out: Path, jobs: int, min_free_gb: float | None = None) -> "Room":
        if min_free_gb is not None and min_free_gb < 0:
            raise ValueError(f"the free-space floor must be >= 0 GB, got {min_free_gb:g}")
        room = cls(out, max(1, jobs), None if min_free_gb is None else int(min_free_gb * GB))
        for d in complete_runs(out)[-SAMPLE:]:
            room.seen(d)
        return room

    def seen(self, run_dir: Path) -> None:
        """Count a finished run directory towards the estimate."""
        if run_dir.is_dir():
            self.largest = max(self.largest, dir_bytes(run_dir))

    def floor(self) -> tuple[int, str]:
        """The floor in bytes and why it is that."""
        if self.min_free_bytes is not None:
            return self.min_free_bytes, "--min-free-gb"
        need = 2 * self.jobs * self.largest
        if need > MIN_FLOOR_BYTES:
            return need, (f"2 x {self.jobs} run(s) at once x the largest run so far, "
                          f"{self.largest / 10 ** 6:.0f} MB; --min-free-gb sets another")
        return MIN_FLOOR_BYTES, "the minimum; --min-free-gb sets another"

    def free(self) -> int:
        return shutil.disk_usage(self.out).free

    def shortfall(self) -> str | None:
        """None while there is room for another run; else one line saying how much is free against the floor."""
        floor, why = self.floor()
        if floor <= 0:
            return None
        free = self.free()
        if free >= floor:
            return None
        return f"{gb(free)} free on the file system of {self.out}, below the floor of {gb(floor)} ({why})"


def estimate(out: Path, n_left: int) -> str | None:
    """A dry run's disk line: what the complete runs of ``out`` take, what ``n_left`` more need at the median size
    of the runs that hold their captures (a run restored from a bundle without them is no measure of a new one;
    all runs when none holds them), and the free space; None when ``out`` has no complete run to measure."""
    done = complete_runs(out)
    if not done:
        return None
    from analysis.runmeta import has_captures
    sizes = [dir_bytes(d) for d in done]
    recorded = [b for d, b in zip(done, sizes) if has_captures(d)] or sizes
    med = statistics.median(recorded)
    free = shutil.disk_usage(out).free
    which = "" if len(recorded) == len(sizes) else f" of the {len(recorded)} with their captures"
    return (f"disk: {len(done)} complete run(s) take {gb(sum(sizes))} (median{which} {med / 10 ** 6:.0f} MB); the "
            f"{n_left} left need ~{gb(med * n_left)} at that median; {gb(free)} free on the file system of {out}")
