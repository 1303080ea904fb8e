"""analysis.claims.side_by_side on hand-made claim tables: every kind of verdict change, claims in one table only,
the transition counts, and bad input."""
import pandas as pd
import pytest

from analysis.claims import side_by_side as sbs


def table(rows):
    return pd.DataFrame(rows, columns=["claim_id", "statement", "verdict", "ours", "ci_low", "ci_high", "n", "note",
                                       "explanation_kind"])


A = table([("S01", "a", "inconclusive", 1.0, 0.5, 1.5, 3, "", "too-few-runs"),
           ("S02", "b", "reproduced", 2.0, 1.8, 2.2, 3, "", None),
           ("S03", "c", "reproduced", 3.0, 2.9, 3.1, 3, "", None),
           ("S04", "d", "not reproduced", 4.0, 3.9, 4.1, 3, "", "open"),
           ("S05", "e", "not comparable", 5.0, None, None, 3, "", "paper-incomplete"),
           ("S06", "f", "reproduced", 6.0, 5.0, 7.0, 3, "", None)])
B = table([("S01", "a", "reproduced", 1.1, 1.0, 1.2, 10, "", None),
           ("S02", "b", "inconclusive", 2.0, 1.0, 3.0, 10, "", "too-few-runs"),
           ("S03", "c", "not reproduced", 2.5, 2.4, 2.6, 10, "", "open"),
           ("S04", "d", "not reproduced", 4.1, 4.0, 4.2, 10, "", "open"),
           ("S05", "e", "reproduced", 5.0, 4.9, 5.1, 10, "", None),
           ("S07", "g", "not run", None, None, None, 0, "kernel", "testbed-difference")])


def test_changes_and_order():
    t = sbs.side_by_side(A, B, ("sample", "paper"))
    assert list(t["claim_id"]) == ["S01", "S02", "S03", "S04", "S05", "S06", "S07"]
    assert list(t["change"]) == ["settled", "unsettled", "flipped", "same", "other", "only in A", "only in B"]
    assert t.loc[0, "n_sample"] == 3 and t.loc[0, "n_paper"] == 10 and t.loc[0, "ours_paper"] == 1.1
    assert t.loc[6, "statement"] == "g" and pd.isna(t.loc[6, "verdict_sample"])
    assert sbs.change_counts(t) == {"same": 1, "settled": 1, "unsettled": 1, "flipped": 1, "other": 1,
                                    "only in A": 1, "only in B": 1}
    x = sbs.transitions(t, ("sample", "paper"))
    assert x.loc["inconclusive", "reproduced"] == 1 and x.loc["reproduced", "absent"] == 1
    assert x.loc["absent", "not run"] == 1 and int(x.to_numpy().sum()) == 7


def test_bad_input():
    with pytest.raises(ValueError):
        sbs.side_by_side(A, B, ("x", "x"))
    with pytest.raises(ValueError):
        sbs.side_by_side(pd.concat([A, A]), B)
    with pytest.raises(ValueError):
        sbs.change(None, float("nan"))
