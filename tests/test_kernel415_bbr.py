"""analysis.kernel415_bbr (study 000's BBR statements on Linux 4.15 and 6.1) on hand-built rows with known answers:
BBR's goodput, wire rate and RTT at loss 1 %, the RTT gaps against the loss-based flows at loss 0 and 1 %, and
each quantity's 4.15 minus 6.1 with its direction relative to the paper."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from analysis import kernel415_bbr as kb

NOISE = np.array([-0.2, -0.1, 0.0, 0.1, 0.2])


def _rows(kernel, cc, loss, goodput, rtt, wire=None):
    wire = goodput if wire is None else wire
    return [{"run_id": f"loss_rate__{cc}__multipath__d10ms__l{loss:g}pct__rep{i:02d}", "flow": 1, "cc": cc,
             "kernel": kernel, "loss_pct": float(loss), "goodput_mbps": goodput + e, "rtt_mean_ms": rtt + e,
             "data_bytes": (wire + e) * 1e6 / 8 * 100.0, "duration_s": 100.0} for i, e in enumerate(NOISE, start=1)]


def _df():
    rows = []
    # 6.1: BBR 17 Mbit/s (wire 19) and 28 ms at 1 %, 20 ms at 0 %; 4.15: BBR 18 Mbit/s and 24 ms at 1 %
    rows += _rows("6.1", "bbr", 0, 19.0, 20.0) + _rows("6.1", "bbr", 1, 17.0, 28.0, wire=19.0)
    rows += _rows("4.15", "bbr", 0, 19.0, 20.0) + _rows("4.15", "bbr", 1, 18.0, 24.0, wire=19.5)
    # cubic: 90 ms at loss 0 on both kernels, 16 ms at 1 %
    for k in ("6.1", "4.15"):
        rows += _rows(k, "cubic", 0, 19.0, 90.0) + _rows(k, "cubic", 1, 11.0, 16.0)
    return pd.DataFrame(rows)


def test_quantities_known_answers():
    t = kb.table(_df()).set_index(["quantity", "kernel"])
    assert t.loc[("goodput_bbr_l1", "6.1"), "mean"] == pytest.approx(17.0)
    assert t.loc[("wire_bbr_l1", "4.15"), "mean"] == pytest.approx(19.5)
    assert t.loc[("rtt_bbr_l1", "4.15"), "mean"] == pytest.approx(24.0)
    assert t.loc[("gap0_cubic", "6.1"), "mean"] == pytest.approx(70.0)        # 90 - 20
    assert t.loc[("gap1_cubic", "6.1"), "mean"] == pytest.approx(12.0)        # 28 - 16
    assert t.loc[("gap1_cubic", "4.15"), "mean"] == pytest.approx(8.0)        # 24 - 16
    assert ("gap0_reno", "6.1") not in t.index                                # no reno runs: no row
    lo, hi = t.loc[("rtt_bbr_l1", "6.1"), ["low", "high"]]
    assert lo < 28.0 < hi and t.loc[("rtt_bbr_l1", "6.1"), "n"] == 5


def test_effects_direction_relative_to_the_paper():
    e = kb.effects(_df()).set_index("quantity")
    # BBR's RTT at 1 %: 28 -> 24 ms, the paper's 24: moved, toward
    r = e.loc["rtt_bbr_l1"]
    assert r["diff"] == pytest.approx(-4.0) and r["moved"] and r["toward_paper"] is True
    # the gap at 1 %: 12 -> 8 ms, the paper's 12: moved, away
    g = e.loc["gap1_cubic"]
    assert g["diff"] == pytest.approx(-4.0) and g["moved"] and g["toward_paper"] is False
    # the gap at loss 0: 70 -> 70: not moved, no direction
    z = e.loc["gap0_cubic"]
    assert z["diff"] == pytest.approx(0.0) and not z["moved"] and z["toward_paper"] is None


def test_cli_one_line_error_without_data(tmp_path):
    res = subprocess.run([sys.executable, "-m", "analysis.kernel415_bbr", str(tmp_path / "none")], capture_output=True,
                         text=True, timeout=60, cwd=kb.kernel415.ROOT)
    assert res.returncode == 2 and res.stderr.startswith("error:") and "run-vm.sh --ccs bbr" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_explanations_cite_it_once_complete(monkeypatch):
    """f000._kernel415_bbr: nothing before the data is complete; a move beyond noise toward the paper makes the kind
    testbed-difference, one away or within noise keeps it and says the kernel does not explain it."""
    from analysis.claims.explain import f000
    monkeypatch.setattr(kb, "cite", lambda q: None)
    assert f000._kernel415_bbr("open", "rtt_bbr_l1", "BBR's mean RTT at loss 1 %", "24 ms") == ("open", "", {})
    c = {"runs": 20, "quantity": "rtt_bbr_l1", "diff": -4.0, "diff_low": -5.0, "diff_high": -3.0, "moved": True,
         "toward_paper": True, "kernels": {"4.15": (24.0, 23.0, 25.0, 5), "6.1": (28.0, 27.0, 29.0, 5)}}
    monkeypatch.setattr(kb, "cite", lambda q: c)
    kind, text, ev = f000._kernel415_bbr("open", "rtt_bbr_l1", "BBR's mean RTT at loss 1 %", "24 ms")
    assert kind == "testbed-difference" and "24 ms (95 % interval 23 to 25) on 4.15 against 28 ms" in text
    assert "toward the paper's 24 ms" in text and ev["kernel415_bbr"]["linux415_ms"] == 24.0
    monkeypatch.setattr(kb, "cite", lambda q: dict(c, toward_paper=False))
    kind, text, _ = f000._kernel415_bbr("open", "gap1_cubic", "BBR's mean RTT minus cubic's at loss 1 %", "12 ms")
    assert kind == "open" and "away from the paper's 12 ms" in text
    monkeypatch.setattr(kb, "cite", lambda q: dict(c, moved=False, toward_paper=None))
    kind, text, _ = f000._kernel415_bbr("testbed-difference", "gap0_reno", "x", "26-58 ms")
    assert kind == "testbed-difference" and "within run-to-run noise" in text


def test_cite_waits_for_the_whole_experiment(tmp_path):
    assert kb.cite("rtt_bbr_l1", root=tmp_path) is None and kb.progress(tmp_path) is None
