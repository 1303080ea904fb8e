"""analysis.recovery000 (study 000's loss-recovery ablation) on hand-built rows with known answers: the arm from the
run_id, the claims' drops per arm judged as the claims judge them, arm 0's effect and its direction."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis import recovery000 as rec

NOISE = np.array([-0.2, -0.1, 0.0, 0.1, 0.2])     # mean 0, sd 0.158


def _rows(cc, arm, loss, mean, tag=True):
    out = []
    for i, e in enumerate(NOISE, start=1):
        suffix = f"__rec{arm}" if tag else ""
        out.append({"run_id": f"loss_rate__{cc}__multipath__d10ms__l{loss:g}pct{suffix}__q-tbf-netem__rep{i:02d}",
                    "flow": 1, "experiment": "loss_rate", "path_mode": "multipath", "cc": cc, "loss_pct": float(loss),
                    "goodput_mbps": mean + e, "retransmissions": 100.0 * loss + i,
                    "spurious_retransmissions": float(arm == 3) * 10 + i})
    return out


def _df():
    rows = []
    # bic: the adaptive window drops 3 Mbit/s at 1 % (19 -> 16), the static one 7 (19 -> 12); at 10 % both drop 17
    for arm, g1 in ((1, 16.0), (3, 12.0)):
        rows += _rows("bic", arm, 0, 19.0) + _rows("bic", arm, 1, g1) + _rows("bic", arm, 10, 2.0)
    return pd.DataFrame(rows)


def test_arm_from_run_id():
    a = rec.arm_of(["loss_rate__bic__multipath__d10ms__l1pct__rec3__q-tbf-netem__rep01",
                    "loss_rate__bic__multipath__d10ms__l1pct__q-tbf-netem__rep01"])
    assert a.iloc[0] == 3 and pd.isna(a.iloc[1])


def test_table_and_drops_known_answer():
    df = _df()
    t = rec.table(df).set_index(["cc", "tcp_recovery", "loss_pct"])
    assert t.loc[("bic", 3, 1.0), "goodput_mbps"] == pytest.approx(12.0)
    assert t.loc[("bic", 3, 1.0), "runs"] == 5
    assert t.loc[("bic", 1, 10.0), "retransmissions"] == pytest.approx(1003.0)
    assert t.loc[("bic", 3, 0.0), "spurious_retransmissions"] == pytest.approx(13.0)
    d = rec.drops(df).set_index(["claim", "cc", "tcp_recovery"])
    assert d.loc[("S06", "bic", 1), "drop_mbps"] == pytest.approx(3.0)
    assert d.loc[("S06", "bic", 3), "drop_mbps"] == pytest.approx(7.0)
    # the claim's rule: the Welch interval of the drop inside 7 +- 1 (sd 0.158 per group: interval +-0.24)
    assert d.loc[("S06", "bic", 3), "verdict"] == "reproduced"
    assert d.loc[("S06", "bic", 1), "verdict"] == "not reproduced"
    assert d.loc[("S07", "bic", 1), "verdict"] == "reproduced"


def test_effects_direction():
    e = rec.effects(_df()).set_index(["claim", "cc"])
    s06 = e.loc[("S06", "bic")]
    assert s06["diff"] == pytest.approx(4.0) and s06["moved"] and s06["toward_paper"] is True
    assert s06["diff_low"] > 0
    s07 = e.loc[("S07", "bic")]
    assert s07["diff"] == pytest.approx(0.0, abs=1e-9) and not s07["moved"] and s07["toward_paper"] is None


def test_runs_without_the_tag_are_the_kernel_default():
    df = pd.DataFrame(_rows("reno", 1, 0, 19.0, tag=False) + _rows("reno", 1, 1, 12.0, tag=False))
    d = rec.drops(df)
    assert list(d["tcp_recovery"]) == [1] and d["drop_mbps"].iloc[0] == pytest.approx(7.0)


def test_report_and_missing_bundle(tmp_path, capsys):
    md = rec.report(_df())
    assert "| S06 | bic | static RACK window (tcp_recovery 3, as Linux 4.15) | 7 |" in md
    assert rec.load(tmp_path) is None and rec.cite("S06", "bic", tmp_path) is None
    assert rec.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and len(err.strip().splitlines()) == 1


def test_explanation_cites_the_ablation_once_complete(monkeypatch):
    """S06/S07's explanation (analysis.claims.explain.f000._recovery): nothing before the bundle is complete; a drop
    the static reordering window moves toward the paper beyond noise makes the kind testbed-difference; one within
    noise keeps the kind and says the window is not the cause."""
    from analysis.claims.explain import f000
    monkeypatch.setattr(rec, "cite", lambda sid, cc, bundle=None: None)
    assert f000._recovery("S06", "bic", "open") == ("open", "", {})
    moved = {"runs": 90, "drop": {1: (3.2, 2.9, 3.5, "not reproduced"), 3: (6.8, 6.5, 7.1, "reproduced")},
             "diff": 3.6, "diff_low": 3.2, "diff_high": 4.0, "moved": True, "toward_paper": True,
             "paper_drop_mbps": 7.0, "loss_pct": 1.0}
    monkeypatch.setattr(rec, "cite", lambda sid, cc, bundle=None: moved)
    kind, text, ev = f000._recovery("S06", "bic", "open")
    assert kind == "testbed-difference" and "data/recovery000: 90 runs" in text and "toward the paper's 7" in text
    assert ev["recovery_ablation"]["static_window_drop_mbps"] == 6.8 and ev["recovery_bundle"] == "data/recovery000"
    same = dict(moved, diff=0.1, diff_low=-0.3, diff_high=0.5, moved=False, toward_paper=None)
    monkeypatch.setattr(rec, "cite", lambda sid, cc, bundle=None: same)
    kind, text, _ = f000._recovery("S06", "bic", "open")
    assert kind == "open" and "within run-to-run noise" in text and "removed in 6.17" in text


def test_committed_bundle():
    """data/recovery000 (campaigns/recovery000.yaml, recorded 2026-11-28): every planned run is in, both arms at the
    three loss levels for each cc, and the effects table has an interval for each of the six drops."""
    prog = rec.progress()
    assert prog is not None and prog[0] == prog[1] == 90
    df = rec.load()
    t = rec.table(df)
    assert len(t) == 3 * 2 * 3 and set(t["runs"]) == {5}
    ef = rec.effects(df)
    assert len(ef) == 6 and np.isfinite(ef["diff_low"].astype(float)).all()
    c = rec.cite("S06", "bic")
    assert c is not None and c["runs"] == 90 and set(c["drop"]) == {1, 3}
