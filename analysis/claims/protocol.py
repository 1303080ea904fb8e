"""Whether a dataset holds a paper's protocol in full, and what that makes of a claim still undecided on it.

A claim whose interval straddles its bound on a dataset with fewer repetitions than the paper made is undecided for
lack of repetitions (``too-few-runs``): recording the paper's protocol would narrow it. On a dataset that holds every
configuration at least as often as the paper's protocol repeats it, the same interval says something else: the
difference is smaller than the paper's own protocol resolves at the spread measured (``underpowered``); only
repetitions beyond the paper's would decide it, and the text still gives how many.

``PROTOCOL_REPS`` is each paper's repetitions per configuration as its text gives them, or the paper profile's where
the paper prints none (a simulation gives one value per cell; we record 10 and the campaign file says so);
``PROTOCOL_RUN_S`` the protocol's run length: a dataset of shorter runs (a sample profile) does not hold it.
"""
from __future__ import annotations

import pandas as pd

from analysis.claims import core

# study -> (repetitions per configuration of the paper's protocol, where that number comes from)
PROTOCOL_REPS = {
    "000": (10, "the paper's 10 repetitions of every scenario, its Table 1 and section 2.2"),
    "001": (10, "the paper profile's 10 repetitions, campaigns/paper001.yaml; the paper prints one value per "
                "point and no repetition count"),
    "002": (10, "the paper profile's 10 repetitions, campaigns/paper002.yaml; the paper prints no repetition "
                "count"),
    "003": (3, "the paper's three repetitions of every scenario, Table 2 and section IV.B ('triplo')"),
    "004": (10, "the paper profile's 10 repetitions, campaigns/paper004.yaml; the paper prints one ns-2 value "
                "per cell and no repetition count"),
}
# study -> the paper protocol's run length (s): one number, or per experiment with "*" for the others (the paper
# profiles' run lengths; scorecard headers give the paper's own words)
PROTOCOL_RUN_S = {"000": 100.0, "001": 45.0, "002": {"test5": 10.0, "*": 220.0}, "003": 900.0, "004": 120.0}
_NOT_PARAMS = ("run_id", "status", "reason", "rep")


def min_reps(runs: pd.DataFrame | None) -> int:
    """The fewest complete repetitions of any configuration present in ``runs`` (``analysis.dataset.run_status``:
    one row per run, its status and parameters); a configuration is every parameter but the repetition. 0 when no
    run is complete. Skipped runs (a mechanism this kernel lacks) and incomplete ones count for nothing."""
    if runs is None or runs.empty or "status" not in runs:
        return 0
    done = runs[runs["status"] == "complete"]
    if done.empty:
        return 0
    keys = [c for c in done.columns if c not in _NOT_PARAMS]
    if not keys:
        return int(len(done))
    # a missing parameter (None, NaN) is a value of its own: one configuration, never dropped
    return int(done.groupby(keys, sort=False, dropna=False).size().min())


def short_runs(df: pd.DataFrame, study: str) -> int:
    """How many of the dataset's runs (``df``: one row per run and flow, with ``run_id``, ``experiment`` and
    ``duration_s`` in s) are shorter than the paper protocol's run length for their experiment
    (``PROTOCOL_RUN_S``). A dataset without run lengths counts every run as short."""
    if df is None or df.empty:
        return 0
    if "duration_s" not in df or "run_id" not in df:
        return int(df["run_id"].nunique()) if "run_id" in df else len(df)
    want = PROTOCOL_RUN_S[study]
    runs = df.drop_duplicates("run_id")
    exp = runs["experiment"] if "experiment" in runs else pd.Series("*", index=runs.index)
    need = exp.map(lambda e: want.get(e, want["*"]) if isinstance(want, dict) else want).astype(float)
    have = pd.to_numeric(runs["duration_s"], errors="coerce")
    return int((~(have >= need - 1e-9)).sum())


def full(ctx: core.Ctx, study: str) -> bool:
    """True when every configuration of the dataset has at least the paper protocol's repetitions complete and no
    run is shorter than the protocol's run length."""
    reps, _ = PROTOCOL_REPS[study]
    return _min_reps(ctx) >= reps and short_runs(ctx.df, study) == 0


def _min_reps(ctx: core.Ctx) -> int:
    """:func:`min_reps` over the runs the claims read: the run listing restricted to the rows' runs (a dataset cut
    to one arm or one experiment keeps the listing of the whole campaign)."""
    runs = ctx.runs
    if runs is not None and not runs.empty and ctx.df is not None and "run_id" in ctx.df and "run_id" in runs:
        runs = runs[runs["run_id"].isin(set(ctx.df["run_id"]))]
    return min_reps(runs)


def undecided_by_interval(r: dict) -> bool:
    """An "inconclusive" row whose only obstacle is the width of its interval: it straddles its bound or Holm's
    correction leaves a comparison insignificant, with at least ``core.MIN_REPS`` repetitions and no level of the
    paper's range missing (a missing level is decided by recording it, not by more repetitions)."""
    if r.get("verdict") != "inconclusive" or r.get("explanation_kind") != "too-few-runs":
        return False
    note, ev, n = str(r.get("note") or ""), r.get("explanation_evidence") or {}, r.get("n")
    if not (isinstance(n, (int, float)) and n >= core.MIN_REPS) or "< 3 reps" in note or ev.get("missing_levels"):
        return False
    return core.STRADDLES in note or "not significant after Holm" in note


def mark_underpowered(rows: list[dict], ctx: core.Ctx, study: str) -> list[dict]:
    """Turn the ``too-few-runs`` explanations of ``rows`` that only the interval's width keeps undecided into
    ``underpowered`` when the dataset holds the paper's protocol in full: the text opens with the protocol's
    repetitions and the dataset's, then keeps what the study module said (the interval, the repetitions a decision
    would need). Other rows are left as they are. Returns ``rows``."""
    reps, source = PROTOCOL_REPS[study]
    have = _min_reps(ctx)
    if have < reps or short_runs(ctx.df, study):      # what full() says, the repetitions counted once
        return rows
    for r in rows:
        if not undecided_by_interval(r):
            continue
        lead = (f"This dataset holds at least {have} complete repetitions of every configuration at the protocol's "
                f"run length, as many as the paper's protocol ({source}): at the spread measured that protocol "
                f"cannot decide this claim, and only repetitions beyond it could. ")
        ev = dict(r.get("explanation_evidence") or {})
        ev.update(protocol_reps=reps, protocol_run_s=PROTOCOL_RUN_S[study], dataset_min_reps=have)
        core.explain(r, "underpowered", lead + str(r["explanation_text"]), **ev)
    return rows
