"""Two scorecards of the same study side by side, claim by claim (issue 29): a reduced sample against the paper's
full protocol, or any two datasets of one study. Pure functions over the claim tables that
``analysis.claims.registry.evaluate`` returns (one row per claim_id).

:func:`side_by_side` pairs the claims by id: for each, both verdicts, our value, n (repetitions) and the interval
in each, and ``change``: "same", "settled" (inconclusive or not run in the first, decided in the second: the full
protocol decided it), "unsettled" (the reverse), "flipped" (reproduced <-> not reproduced), "other" (any other
change, e.g. to or from "not comparable"), "only in A" / "only in B". :func:`transitions` counts verdict pairs;
:func:`change_counts` counts the changes."""
from __future__ import annotations

import pandas as pd

DECIDED = ("reproduced", "not reproduced")
UNDECIDED = ("inconclusive", "not run")
CHANGES = ("same", "settled", "unsettled", "flipped", "other", "only in A", "only in B")
_KEEP = ["verdict", "ours", "ci_low", "ci_high", "n", "note", "explanation_kind"]


def change(a, b) -> str:
    """The kind of change from verdict ``a`` (first scorecard) to ``b`` (second); None/NaN means the claim is absent
    from that scorecard."""
    a = None if a is None or (isinstance(a, float) and pd.isna(a)) else a
    b = None if b is None or (isinstance(b, float) and pd.isna(b)) else b
    if a is None and b is None:
        raise ValueError("change: the claim is in neither scorecard")
    if b is None:
        return "only in A"
    if a is None:
        return "only in B"
    if a == b:
        return "same"
    if a in UNDECIDED and b in DECIDED:
        return "settled"
    if a in DECIDED and b in UNDECIDED:
        return "unsettled"
    if a in DECIDED and b in DECIDED:
        return "flipped"
    return "other"


def side_by_side(a: pd.DataFrame, b: pd.DataFrame, labels: tuple[str, str] = ("A", "B")) -> pd.DataFrame:
    """One row per claim_id in either table (order: ``a``'s, then those only in ``b``): claim_id, statement, and
    for each label the columns verdict, ours, ci_low, ci_high, n, note, explanation_kind (suffixed ``_<label>``),
    then ``change`` (:func:`change`). Labels must differ and be non-empty."""
    la, lb = labels
    if not la or not lb or la == lb:
        raise ValueError(f"side_by_side: two different labels are needed, got {labels!r}")
    for name, t in (("first", a), ("second", b)):
        if "claim_id" not in t or t["claim_id"].duplicated().any():
            raise ValueError(f"side_by_side: the {name} scorecard needs unique claim_id values")
    in_a = set(a["claim_id"])
    ids = list(a["claim_id"]) + [c for c in b["claim_id"] if c not in in_a]
    out = pd.DataFrame({"claim_id": ids})
    st_a = a.set_index("claim_id")["statement"] if "statement" in a else pd.Series(dtype=object)
    st_b = b.set_index("claim_id")["statement"] if "statement" in b else pd.Series(dtype=object)
    out["statement"] = [st_a.get(c, st_b.get(c)) for c in ids]
    for label, t in ((la, a), (lb, b)):
        t = t.set_index("claim_id")
        for c in _KEEP:
            out[f"{c}_{label}"] = t[c].reindex(ids).to_numpy() if c in t else None
    out["change"] = [change(x, y) for x, y in zip(out[f"verdict_{la}"], out[f"verdict_{lb}"])]
    return out


def transitions(sbs: pd.DataFrame, labels: tuple[str, str] = ("A", "B")) -> pd.DataFrame:
    """Counts of (verdict in the first, verdict in the second) over :func:`side_by_side`'s rows: rows are the first
    scorecard's verdicts, columns the second's ("absent" where a claim is missing)."""
    la, lb = labels
    x = sbs[f"verdict_{la}"].fillna("absent").rename(la)
    y = sbs[f"verdict_{lb}"].fillna("absent").rename(lb)
    return pd.crosstab(x, y)


def change_counts(sbs: pd.DataFrame) -> dict:
    """{change: count} over :data:`CHANGES`, zeros included."""
    vc = sbs["change"].value_counts()
    return {k: int(vc.get(k, 0)) for k in CHANGES}
