"""core.reps_to_decide: the repetitions a straddling interval would need at the measured mean and spread (known
answers from Student t quantiles), and the note and explanation that carry it."""
from __future__ import annotations

import math

from scipy import stats

from analysis.claims import core
from analysis.claims.explain import generic


def test_known_answer_one_sided():
    # mean 2, interval [-1, 5] at n = 3 against "> 0": s = 3·√3 / t(0.975, 2) = 1.2076; n' = 4 is the first with
    # t(0.975, n' - 1)·s/√n' < 2 (3.182·1.2076/2 = 1.921), n' = 3 gives the measured half-width 3 back
    e = core.Est(2.0, -1.0, 5.0, 3)
    s = 3 * math.sqrt(3) / stats.t.ppf(0.975, 2)
    assert stats.t.ppf(0.975, 3) * s / 2 < 2 < stats.t.ppf(0.975, 2) * s / math.sqrt(3)
    assert core.reps_to_decide(e, core.region(">", 0.0)) == "about 4 repetitions would decide it at this mean and spread"
    v, note = core.decide(e, core.region(">", 0.0))
    assert v == "inconclusive" and note.startswith("interval straddles the bound/tolerance; about 4 repetitions")


def _first(h, d, n):
    s = h * math.sqrt(n) / stats.t.ppf(0.975, n - 1)
    return next(m for m in range(n + 1, 1000) if stats.t.ppf(0.975, m - 1) * s / math.sqrt(m) < d)


def test_a_band_needs_every_bound_inside_or_the_nearest_one():
    band = core.region("approx", 1.0, tol=0.1)          # [0.9, 1.1]
    # mean 1.05 inside the band, interval [0.8, 1.4] holds both bounds: reproduced needs it clear of both, so the
    # larger of 0.9's need (lower half-width 0.25, distance 0.15) and 1.1's (upper half-width 0.35, distance 0.05)
    want = max(_first(0.25, 0.15, 5), _first(0.35, 0.05, 5))
    assert want == _first(0.35, 0.05, 5) > _first(0.25, 0.15, 5)
    assert core.reps_to_decide(core.Est(1.05, 0.8, 1.4, 5), band) == (
        f"about {want} repetitions would decide it at this mean and spread")
    # mean 1.3 above the band, interval [0.85, 1.75]: not reproduced needs it clear of 1.1 only (lower half-width 0.45)
    assert core.reps_to_decide(core.Est(1.3, 0.85, 1.75, 5), band) == (
        f"about {_first(0.45, 0.2, 5)} repetitions would decide it at this mean and spread")


def test_on_the_bound_and_undefined():
    assert "no number of repetitions" in core.reps_to_decide(core.Est(0.0, -1.0, 1.0, 3), core.region(">", 0.0))
    assert core.reps_to_decide(core.Est(1.0, math.nan, math.nan, 3), core.region(">", 0.0)) is None
    assert core.reps_to_decide(core.Est(5.0, 4.0, 6.0, 3), core.region(">", 0.0)) is None    # no bound inside
    assert "more than 10" in core.reps_to_decide(core.Est(0.01, -5.0, 5.0, 3), core.region(">", 0.0), max_n=10)


def test_generic_explanation_carries_the_projection():
    r = {"verdict": "inconclusive", "n": 3, "ci_low": -1.0, "ci_high": 5.0,
         "note": core.decide(core.Est(2.0, -1.0, 5.0, 3), core.region(">", 0.0))[1]}
    generic(r)
    assert r["explanation_kind"] == "too-few-runs"
    assert "about 4 repetitions" in r["explanation_text"] and r["explanation_evidence"]["reps_to_decide"] == 4


def test_every_level_claim_names_the_reason_once_and_its_example_levels_projection():
    reg = core.region(">", 0.0)
    per = [("x=1", core.Est(2.0, -1.0, 5.0, 3, p=0.10), reg), ("x=2", core.Est(1.0, -2.0, 4.0, 3, p=0.30), reg)]
    e, v, note = core.all_levels(per, 2, "x")
    want = core.reps_to_decide(per[1][1], reg)       # the example level is the least decided one (largest p)
    assert v == "inconclusive" and e is per[1][1]
    assert note == f"interval straddles the bound/tolerance (e.g. x=2: {want}); 2 of 2 x levels run"
