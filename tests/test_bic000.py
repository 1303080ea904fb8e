"""analysis.bic000 (study 000 with the paper's BIC, 4.15's, beside 6.1's) on hand-built rows with known answers: the
arm relabelling, BIC's S06/S07 drop effect, Table 4's BIC pairs' Jain effect, and the claims scored per arm."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis import bic000

NOISE = np.array([-0.2, -0.1, 0.0, 0.1, 0.2])     # mean 0, sd 0.158


def _loss_rows(cc, loss, mean):
    return [{"run_id": f"loss_rate__{cc}__multipath__d10ms__l{loss:g}pct__q-tbf-netem__rep{i:02d}", "flow": 1,
             "experiment": "loss_rate", "path_mode": "multipath", "cc": cc, "cc2": None, "loss_pct": float(loss),
             "link_delay_ms": 10.0, "goodput_mbps": mean + e, "retransmissions": 10.0, "spurious_retransmissions": 0.0}
            for i, e in enumerate(NOISE, start=1)]


def _pair_rows(cc, cc2, g1, g2):
    out = []
    for i, e in enumerate(NOISE, start=1):
        rid = f"tcp_fairness__{cc}+{cc2}__multipath__d10ms__l0pct__q-tbf-netem__rep{i:02d}"
        for flow, g in ((1, g1 + e), (2, g2 - e)):
            out.append({"run_id": rid, "flow": flow, "experiment": "tcp_fairness", "path_mode": "multipath",
                        "cc": cc, "cc2": cc2, "loss_pct": 0.0, "link_delay_ms": 10.0, "goodput_mbps": g,
                        "retransmissions": 0.0, "spurious_retransmissions": 0.0})
    return out


def _df():
    rows = []
    # 6.1's BIC drops 3 Mbit/s at 1 % (19 -> 16), 4.15's 8 (19 -> 11); a reno run that belongs to both arms
    rows += _loss_rows("bic", 0, 19.0) + _loss_rows("bic", 1, 16.0) + _loss_rows("bic", 10, 2.0)
    rows += _loss_rows("bic415", 0, 19.0) + _loss_rows("bic415", 1, 11.0) + _loss_rows("bic415", 10, 2.0)
    rows += _loss_rows("reno", 0, 19.0)
    # pair 2: 6.1's BIC takes 14 of 19 Mbit/s from CUBIC, 4.15's shares evenly
    rows += _pair_rows("bic", "cubic", 14.0, 5.0) + _pair_rows("bic415", "cubic", 9.5, 9.5)
    return pd.DataFrame(rows)


def test_as_paper_bic_relabels_and_keeps_the_others():
    df = _df()
    p = bic000.as_paper_bic(df, "4.15")
    assert set(p["cc"]) == {"bic", "reno"}
    assert set(p.loc[p["experiment"] == "tcp_fairness", "cc"]) == {"bic"}
    # 4.15's loss-1 % runs, relabelled: mean 11
    assert p[(p["cc"] == "bic") & (p["loss_pct"] == 1.0)]["goodput_mbps"].mean() == pytest.approx(11.0)
    b = bic000.as_paper_bic(df, "6.1")
    assert b[(b["cc"] == "bic") & (b["loss_pct"] == 1.0)]["goodput_mbps"].mean() == pytest.approx(16.0)
    assert (b["cc"] == "reno").sum() == 5
    with pytest.raises(bic000.AnalysisError):
        bic000.as_paper_bic(df, "5.4")


def test_drop_effects_known_answer():
    e = bic000.drop_effects(_df()).set_index("claim")
    s06 = e.loc["S06"]
    assert s06["baseline_drop_mbps"] == pytest.approx(3.0)
    assert s06["paper_kernel_drop_mbps"] == pytest.approx(8.0)
    assert s06["diff"] == pytest.approx(5.0) and s06["moved"] and s06["toward_paper"] is True
    s07 = e.loc["S07"]
    assert s07["diff"] == pytest.approx(0.0) and not s07["moved"] and s07["toward_paper"] is None


def test_jain_effects_known_answer():
    j = bic000.jain_effects(_df()).set_index("pair")
    assert list(j.index) == [2]        # pairs 3 and 6 were not run
    r = j.loc[2]
    # J = (x1 + x2)^2 / (2 (x1^2 + x2^2)) with x1 + x2 = 19 in every run: mean over the five runs
    def jain(g1, g2):
        return np.mean([19.0 ** 2 / (2 * ((g1 + e) ** 2 + (g2 - e) ** 2)) for e in NOISE])
    assert r["paper_kernel_jain"] == pytest.approx(jain(9.5, 9.5))
    assert r["baseline_jain"] == pytest.approx(jain(14.0, 5.0))
    assert r["diff"] == pytest.approx(jain(9.5, 9.5) - jain(14.0, 5.0)) and r["moved"]
    assert r["runs_baseline"] == 5 and r["runs_paper_kernel"] == 5


def test_explanation_cites_the_paper_bic_once_complete(monkeypatch):
    """BIC's S06 explanation (analysis.claims.explain.f000._bic415): nothing before the bundle is complete and
    nothing for the other ccs; 4.15's BIC moving the drop beyond noise toward the paper makes the kind
    testbed-difference; within noise the kind stays."""
    from analysis.claims.explain import f000
    monkeypatch.setattr(bic000, "cite", lambda sid, bundle=None: None)
    assert f000._bic415("S06", "bic", "open") == ("open", "", {})
    moved = {"runs": 80, "drop": {"6.1": (3.1, 2.8, 3.4, "not reproduced"), "4.15": (7.2, 6.6, 7.8, "reproduced")},
             "diff": 4.1, "diff_low": 3.4, "diff_high": 4.8, "moved": True, "toward_paper": True,
             "paper_drop_mbps": 7.0, "loss_pct": 1.0}
    monkeypatch.setattr(bic000, "cite", lambda sid, bundle=None: moved)
    assert f000._bic415("S06", "cubic", "open") == ("open", "", {})
    kind, text, ev = f000._bic415("S06", "bic", "open")
    assert kind == "testbed-difference" and "data/bic000: 80 runs" in text and "toward the paper's 7" in text
    assert ev["bic415"]["drop_bic415_mbps"] == 7.2 and ev["bic415_bundle"] == "data/bic000"
    same = dict(moved, diff=0.1, diff_low=-0.3, diff_high=0.5, moved=False, toward_paper=None)
    monkeypatch.setattr(bic000, "cite", lambda sid, bundle=None: same)
    kind, text, _ = f000._bic415("S06", "bic", "open")
    assert kind == "open" and "within run-to-run noise" in text


def test_cite_waits_for_the_whole_campaign(tmp_path):
    """No citation without a bundle (the campaign not recorded yet)."""
    assert bic000.cite("S06", bundle=tmp_path) is None
    assert bic000.cite_rtt(bundle=tmp_path) is None and bic000.cite_jain(2, bundle=tmp_path) is None
    assert bic000.progress(tmp_path) is None


def test_rtt_effect_known_answer():
    """S11: BIC's mean RTT at loss 1 %, 6.1's 17 ms and 4.15's 13 ms (paper 12): moved toward the paper."""
    df = _df()
    df["rtt_mean_ms"] = np.where(df["cc"] == "bic415", 13.0, 17.0) + np.tile(NOISE, len(df) // len(NOISE))
    e = bic000.rtt_effect(df)
    assert e["rtt_ms"]["6.1"][0] == pytest.approx(17.0) and e["rtt_ms"]["4.15"][0] == pytest.approx(13.0)
    assert e["diff"] == pytest.approx(-4.0) and e["diff_low"] < -4.0 < e["diff_high"] < 0
    assert e["moved"] and e["toward_paper"] is True
    assert bic000.rtt_effect(df[df["cc"] != "bic415"]) is None


def test_bic_quantities_explained_by_the_paper_bic(monkeypatch):
    """S11-bic and Table 4's BIC pairs cite study 000 with both BICs (f000._bic415_measured): a move beyond noise
    toward the paper makes the kind testbed-difference; within noise the kind stays and the text says BIC's code
    does not explain it; a dataset that ran 4.15's BIC is not blamed on BIC's code."""
    from analysis.claims.explain import f000
    assert f000._bic415_measured("open", None, False, "x", "ms", "paper_ms") == ("open", "", {})
    rtt = {"runs": 80, "loss_pct": 1.0, "paper_ms": 12.0, "rtt_ms": {"6.1": (17.0, 16.0, 18.0, 5),
                                                                     "4.15": (13.0, 12.0, 14.0, 5)},
           "diff": -4.0, "diff_low": -5.4, "diff_high": -2.6, "moved": True, "toward_paper": True}
    kind, text, ev = f000._bic415_measured("open", rtt, False, "BIC's mean RTT at loss 1 %", "ms", "paper_ms")
    assert kind == "testbed-difference" and "13 ms (95 % interval 12 to 14) against 17 ms" in text
    assert "toward the paper's 12 ms" in text and ev["bic415"]["moved"] is True
    jain = {"runs": 80, "pair": 3, "baseline_jain": 0.836, "paper_kernel_jain": 0.880, "diff": 0.044,
            "diff_low": -0.004, "diff_high": 0.092, "moved": False, "paper_jain": 0.929, "toward_paper": None}
    kind, text, _ = f000._bic415_measured("open", jain, False, "pair 3's Jain index", "index", "paper_jain")
    assert kind == "open" and "0.88 against 0.836" in text and "within run-to-run noise" in text
    assert "0.044 (95 %" in text
    kind, text, ev = f000._bic415_measured("open", rtt, True, "BIC's mean RTT at loss 1 %", "ms", "paper_ms")
    assert kind == "open" and "already the paper's" in text and ev == {"bic_kernel": "4.15"}


def test_cli_one_line_error_without_data(tmp_path):
    import subprocess
    import sys
    res = subprocess.run([sys.executable, "-m", "analysis.bic000", str(tmp_path / "none")], capture_output=True,
                         text=True, timeout=60, cwd=bic000.BUNDLE.parents[1])
    assert res.returncode == 2 and res.stderr.startswith("error:") and "not recorded yet" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
