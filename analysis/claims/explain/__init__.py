"""Explanations of verdicts other than "reproduced", as data: ``{kind, text, evidence}`` on each claim row
(``analysis.claims.core.explain``; kinds in ``core.EXPLANATION_KINDS``, docs/claims.md).

One module per study (``f000`` ... ``f004``) explains what is known of that study's claims from the paper's own
numbers and our measurements; :func:`attach` runs it, then gives the rows it left a generic explanation that follows
from the verdict itself (too few repetitions or levels, a configuration this kernel cannot run); an interval still
undecided on a dataset that holds the paper's whole protocol is "underpowered" (``analysis.claims.protocol``). A
difference that nothing measured explains is ``open``, and its text names the experiment that would decide it."""
from __future__ import annotations

import importlib
import math

import pandas as pd

from analysis.claims import core, protocol

STUDIES = ("000", "001", "002", "003", "004")


def attach(rows: list[dict], ctx: core.Ctx, study: str) -> list[dict]:
    """Explain every row of ``rows`` (one study's claim rows, before they become a table) whose verdict is not
    "reproduced"; rows already explained by their claim module keep theirs. Returns ``rows``."""
    if study not in STUDIES:
        raise ValueError(f"unknown study {study!r}")
    module = importlib.import_module(f"analysis.claims.explain.f{study}")
    todo = [r for r in rows if r["verdict"] != "reproduced" and not r.get("explanation_kind")]
    if todo:
        module.explain(todo, ctx, rows)
    for r in rows:
        if r["verdict"] != "reproduced" and not r.get("explanation_kind"):
            generic(r)
    return protocol.mark_underpowered(rows, ctx, study)


def _ci(r) -> str:
    lo, hi = r.get("ci_low"), r.get("ci_high")
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return "no interval"
    return f"95 % interval {core.fmt(lo, 4)} to {core.fmt(hi, 4)}"


def generic(r: dict) -> dict:
    """The explanation that follows from a verdict and its note alone (used where a study module says nothing)."""
    v, note, n = r["verdict"], str(r.get("note") or ""), int(r.get("n") or 0)
    if v == "not run":
        if "not available on this kernel" in note:
            return core.explain(r, "testbed-difference", f"This kernel cannot run the paper's mechanism: {note}.",
                                reason=note)
        return core.explain(r, "too-few-runs", f"No complete run of this configuration in this dataset: {note}.",
                            n=n)
    if v == "inconclusive":
        if n < core.MIN_REPS:
            return core.explain(r, "too-few-runs", f"Only {n} repetition(s) where a decision needs at least "
                                f"{core.MIN_REPS}: {note}.", n=n)
        if "not significant after Holm" in note:
            return core.explain(r, "too-few-runs", f"Not every comparison is significant after Holm's correction over "
                                f"them (ours is the smallest difference, {_ci(r)}, n = {n}): more repetitions would "
                                f"narrow them ({note}).", n=n, ci=[r.get("ci_low"), r.get("ci_high")])
        if "levels run" in note and "holds at every level run but only" in note:
            return core.explain(r, "too-few-runs", f"It holds at every level recorded, but the dataset lacks some of "
                                f"the paper's levels ({note}).", n=n)
        return core.explain(r, "too-few-runs", f"The {_ci(r)} (n = {n}) contains both outcomes: more repetitions "
                            f"would narrow it ({note or 'the interval straddles the bound'}).", n=n,
                            reps_to_decide=core.reps_from_note(note),
                            ci=[r.get("ci_low"), r.get("ci_high")])
    return core.explain(r, "open", f"No measurement explains this yet ({note or 'no note'}); docs/claims.md lists "
                        f"the experiment that would decide it.", n=n)


def evidence_of(res: pd.DataFrame) -> pd.Series:
    """The explanation of each row of a claims table as one object ``{kind, text, evidence}`` (None if none)."""
    return pd.Series([{"kind": k, "text": t, "evidence": e if isinstance(e, dict) else None}
                      if isinstance(k, str) else None
                      for k, t, e in zip(res["explanation_kind"], res["explanation_text"], res["explanation_evidence"])],
                     index=res.index, dtype=object)


def markdown(res: pd.DataFrame, prefixes: tuple[str, ...] | None = None) -> str:
    """The explanations of the claims in ``res`` whose id starts with one of ``prefixes`` (all when None), as a
    Markdown list: one item per claim that is not "reproduced" — id, verdict, kind, full text. The notebooks show
    their "why we differ" from this, so that the scorecard is the one source of the text."""
    sel = res if not prefixes else res[res["claim_id"].str.startswith(tuple(prefixes))]
    items = []
    for r in sel.itertuples():
        if r.verdict == "reproduced" or not isinstance(r.explanation_kind, str):
            continue
        tier = " — sanity check" if r.tier == "sanity" else ""
        sub = f" — substitute for {r.substitute_for}" if isinstance(r.substitute_for, str) else ""
        items.append(f"- **{r.claim_id}** ({r.verdict}{tier}{sub}; *{r.explanation_kind}*): {r.explanation_text}")
    if not items:
        return "Every claim shown here is reproduced on this dataset."
    return "\n".join(items)
