"""The pace of a recording from its run directories (mpcc.campaign.pace): union of the runs' intervals, known
answers on hand-made run directories."""
import json
from datetime import datetime, timezone
from pathlib import Path

from mpcc.campaign.pace import eta, recorded, union_seconds


def _t(s: str) -> datetime:
    return datetime.fromisoformat(s).replace(tzinfo=timezone.utc)


def _run(out: Path, name: str, start: str | None, end: str | None):
    d = out / "runs" / name
    d.mkdir(parents=True)
    if start is not None:
        (d / "meta.json").write_text(json.dumps({"start_time": start}))
    if end is not None:
        (d / "COMPLETE").write_text(end + "\n")


def test_union_counts_overlaps_once():
    iv = [(_t("2026-01-01T00:00:00"), _t("2026-01-01T00:01:40")),     # 100 s
          (_t("2026-01-01T00:00:50"), _t("2026-01-01T00:02:30")),     # overlaps: +50 s
          (_t("2026-01-01T01:00:00"), _t("2026-01-01T01:00:10"))]     # after a gap: +10 s
    assert union_seconds(iv) == 160.0
    assert union_seconds([]) == 0.0


def test_recorded_and_eta_on_run_directories(tmp_path):
    out = tmp_path / "c"
    # two runs at once (jobs 2): 0-100 s and 20-120 s -> 120 s; a later session's run: 10 s
    _run(out, "a", "2026-01-01T00:00:00.000000500Z", "2026-01-01T00:01:40.000000900Z")  # ns digits
    _run(out, "b", "2026-01-01T00:00:20Z", "2026-01-01T00:02:00Z")
    _run(out, "c", "2026-01-02T00:00:00Z", "2026-01-02T00:00:10Z")
    _run(out, "d", "2026-01-02T00:00:00Z", None)                              # incomplete: not counted
    _run(out, "e", None, "2026-01-02T00:00:00Z")                              # no start time: not counted
    _run(out, "a.incomplete-20260101T000000Z", "2026-01-01T00:00:00Z", "2026-01-01T09:00:00Z")  # moved aside
    assert recorded(out) == (3, 130.0)
    assert eta(out, 36) == ("pace: 3 run(s) recorded in 0.04 h of wall clock (43.3 s a run, the runs at once counted "
                            "once); the 36 left take ~0.43 h at that pace")
    assert eta(tmp_path / "empty", 5) is None
