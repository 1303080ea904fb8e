"""A claim left undecided on a dataset that holds the paper's whole protocol is "underpowered", not "too-few-runs"
(analysis.claims.protocol): hand-built run listings with known repetition counts and run lengths, and the real
bundles (data/paper holds study 000's protocol; data/sample has its repetitions but 15-s runs)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from analysis.claims import core, protocol
from analysis.claims.explain import generic

ROOT = Path(__file__).resolve().parents[1]


def _runs(counts: dict, skipped: int = 0) -> pd.DataFrame:
    """A run listing: ``counts`` maps (experiment, cc, param) -> complete repetitions; plus skipped runs."""
    rows = []
    for (exp, cc, x), n in counts.items():
        rows += [{"run_id": f"{exp}-{cc}-{x}-{k}", "status": "complete", "reason": "", "experiment": exp, "cc": cc,
                  "x": x, "rep": k} for k in range(1, n + 1)]
    rows += [{"run_id": f"skip-{k}", "status": "skipped", "reason": "not available on this kernel",
              "experiment": "e", "cc": "redundant", "x": None, "rep": k} for k in range(1, skipped + 1)]
    return pd.DataFrame(rows)


def _df(runs: pd.DataFrame, dur) -> pd.DataFrame:
    done = runs[runs["status"] == "complete"]
    d = dur if callable(dur) else (lambda e: dur)
    return pd.DataFrame({"run_id": done["run_id"], "experiment": done["experiment"],
                         "duration_s": [d(e) for e in done["experiment"]]})


def _straddling_row(n: int = 10, **ev) -> dict:
    r = {"claim_id": "X", "verdict": "inconclusive", "n": n, "ci_low": -1.0, "ci_high": 5.0,
         "note": core.decide(core.Est(2.0, -1.0, 5.0, n), core.region(">", 0.0))[1]}
    generic(r)
    if ev:
        r["explanation_evidence"] = {**(r["explanation_evidence"] or {}), **ev}
    return r


def test_min_reps_counts_complete_runs_per_configuration():
    runs = _runs({("e", "reno", 1): 10, ("e", "reno", 2): 9, ("e", "bbr", None): 12}, skipped=3)
    assert protocol.min_reps(runs) == 9            # skipped runs count for nothing; None is a value of its own
    assert protocol.min_reps(_runs({("e", "reno", None): 4})) == 4
    assert protocol.min_reps(runs.iloc[0:0]) == 0 and protocol.min_reps(None) == 0


def test_short_runs_by_experiment():
    runs = _runs({("test1", "cubic", 0): 2, ("test5", "cubic", 0): 2})
    assert protocol.short_runs(_df(runs, lambda e: 10.0 if e == "test5" else 220.0), "002") == 0
    assert protocol.short_runs(_df(runs, 30.0), "002") == 2          # tests 1-4 at 30 s: the sample profile
    assert protocol.short_runs(_df(runs, 100.0), "000") == 0
    assert protocol.short_runs(_df(runs, 15.0), "000") == 4
    assert protocol.short_runs(_df(runs, 100.0).drop(columns="duration_s"), "000") == 4   # unknown: short


def test_the_full_protocol_turns_a_straddle_into_underpowered():
    runs = _runs({("e", "reno", 1): 10, ("e", "bbr", 1): 10})
    ctx = core.Ctx(df=_df(runs, 100.0), runs=runs)
    r = protocol.mark_underpowered([_straddling_row()], ctx, "000")[0]
    assert r["explanation_kind"] == "underpowered"
    assert r["explanation_text"].startswith("This dataset holds at least 10 complete repetitions")
    need = core.reps_from_note(r["note"])                                   # the projection is kept
    assert need > 10 and f"about {need} repetitions" in r["explanation_text"]
    ev = r["explanation_evidence"]
    assert ev["protocol_reps"] == 10 and ev["dataset_min_reps"] == 10 and ev["reps_to_decide"] == need


@pytest.mark.parametrize("counts, dur, row", [
    ({("e", "reno", 1): 10, ("e", "bbr", 1): 9}, 100.0, {}),                 # one configuration one run short
    ({("e", "reno", 1): 10, ("e", "bbr", 1): 10}, 15.0, {}),                 # runs shorter than the protocol's
    ({("e", "reno", 1): 10, ("e", "bbr", 1): 10}, 100.0, {"missing_levels": [0.02]}),   # a level is missing
    ({("e", "reno", 1): 10, ("e", "bbr", 1): 10}, 100.0, {"n": 2}),          # fewer than MIN_REPS in the group
])
def test_too_few_runs_stays_when_the_protocol_is_not_held(counts, dur, row):
    runs = _runs(counts)
    ctx = core.Ctx(df=_df(runs, dur), runs=runs)
    n = row.pop("n", 10)
    r = protocol.mark_underpowered([_straddling_row(n, **row)], ctx, "000")[0]
    assert r["explanation_kind"] == "too-few-runs"


def test_three_repetitions_are_study_003s_protocol():
    runs = _runs({("scenario", "cubic", 50): 3, ("resilience", "cubic", 50): 3})
    ctx = core.Ctx(df=_df(runs, 900.0), runs=runs)
    assert protocol.full(ctx, "003") and not protocol.full(ctx, "000")
    r = protocol.mark_underpowered([_straddling_row(3)], ctx, "003")[0]
    assert r["explanation_kind"] == "underpowered" and "'triplo'" in r["explanation_text"]


def test_other_verdicts_and_kinds_are_left_alone():
    runs = _runs({("e", "reno", 1): 10})
    ctx = core.Ctx(df=_df(runs, 100.0), runs=runs)
    rows = [core.explain({"verdict": "not reproduced", "n": 10, "note": core.STRADDLES}, "open", "x"),
            core.explain({"verdict": "inconclusive", "n": 10, "note": "n=1 < 3 reps"}, "too-few-runs", "y")]
    out = protocol.mark_underpowered(rows, ctx, "000")
    assert [r["explanation_kind"] for r in out] == ["open", "too-few-runs"]


@pytest.mark.parametrize("name, study, want", [("paper", "000", True), ("sample", "000", False),
                                               ("study003", "003", True), ("study004-paper-htb", "004", False)])
def test_real_bundles(name, study, want):
    """data/paper is study 000's protocol in full (1,340 runs of 100 s, 10 repetitions): its undecided claims are
    underpowered, none too-few-runs; data/sample has 10 repetitions of 15-s runs and keeps too-few-runs."""
    from analysis.claims import evaluate
    from analysis.dataset import load_campaign
    df = load_campaign(ROOT / "data" / name, progress=False, jobs=1)
    ctx = core.Ctx(df=df, runs=df.attrs["runs"])
    assert protocol.full(ctx, study) is want
    if name in ("paper", "sample"):
        kinds = evaluate(df, n_boot=199).query("verdict == 'inconclusive'")["explanation_kind"]
        assert len(kinds) and set(kinds) == ({"underpowered"} if want else {"too-few-runs"})
