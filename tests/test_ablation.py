"""analysis.ablation on made-up rows whose answers are known by construction: the arm parsed from the run_id, the
quantities behind the claims (means, differences with Welch standard errors), the effects against the baseline arm
and the nearest-to-paper count."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis import ablation as ab

sys.path.insert(0, str(Path(__file__).parent))
from test_claims import _split  # noqa: E402  (two goodputs with a given sum and Jain's index)

NOISE = np.array([-0.2, 0.1, 0.0, 0.2, -0.1])     # mean 0, sd sqrt(0.1 / 4) = 0.158


def _rid(exp, ccs, d, loss, rep, qm=None, cbr=None, ln=None):
    parts = [exp, ccs, "multipath", f"d{d}ms", f"l{loss}pct"]
    if cbr is not None:
        parts.append(f"cbr{cbr}mbps")
    if ln is not None:
        parts.append(f"len{ln}B")
    if qm is not None:
        parts.append(f"q-{qm}")
    parts.append(f"rep{rep:02d}")
    return "__".join(parts)


def _row(rid, exp, cc, d, loss, flow=1, cc2=None, cbr=None, **m):
    r = {"run_id": rid, "experiment": exp, "cc": cc, "cc2": cc2, "path_mode": "multipath", "link_delay_ms": float(d),
         "loss_pct": float(loss), "cbr_mbps": float(cbr) if cbr is not None else np.nan, "flow": flow,
         "goodput_mbps": np.nan, "rtt_mean_ms": np.nan, "jain": np.nan, "overlap_goodput_mbps": np.nan}
    r.update(m)
    return r


def made_up() -> pd.DataFrame:
    """link_delay d = 100 ms, loss 0: cubic's RTT 200 + noise (fifo) / 160 + noise (tbf-netem), bbr's 110 + noise in
    both; cubic at d 10 ms: goodput 19 (loss 0) and 12 (loss 1 %); the pair cubic + reno: Jain 0.95 / 0.99;
    udp_fairness cubic at 12 Mbit/s with and without 8192-byte datagrams (TCP 15 / 9 Mbit/s, UDP a third of it)."""
    rows = []
    for qm, cubic_rtt in (("fifo-after-delay", 200.0), ("tbf-netem", 160.0)):
        for k in range(5):
            rep = k + 1
            rows.append(_row(_rid("link_delay", "cubic", 100, 0, rep, qm), "link_delay", "cubic", 100, 0,
                             rtt_mean_ms=cubic_rtt + NOISE[k], goodput_mbps=18.0))
            rows.append(_row(_rid("link_delay", "bbr", 100, 0, rep, qm), "link_delay", "bbr", 100, 0,
                             rtt_mean_ms=110.0 + NOISE[::-1][k], goodput_mbps=19.0))
            rows.append(_row(_rid("link_delay", "cubic", 10, 0, rep, qm), "link_delay", "cubic", 10, 0,
                             goodput_mbps=19.0 + NOISE[k]))
            rows.append(_row(_rid("loss_rate", "cubic", 10, 1, rep, qm), "loss_rate", "cubic", 10, 1,
                             goodput_mbps=12.0 + NOISE[k], rtt_mean_ms=14.0))
            j = 0.95 if qm == "fifo-after-delay" else 0.99
            rid = _rid("tcp_fairness", "cubic+reno", 10, 0, rep, qm)
            x1, x2 = _split(19.0, j + NOISE[k] / 100, True)     # each flow's goodput over its own run
            rows.append(_row(rid, "tcp_fairness", "cubic", 10, 0, cc2="reno", goodput_mbps=x1))
            rows.append(_row(rid, "tcp_fairness", "cubic", 10, 0, flow=2, cc2="reno", goodput_mbps=x2))
            for ln, tcp in ((None, 15.0), (8192, 9.0)):   # UDP a third of TCP: Jain's index 0.8 in every arm
                rid = _rid("udp_fairness", "cubic", 10, 0, rep, qm, cbr=12, ln=ln)
                rows.append(_row(rid, "udp_fairness", "cubic", 10, 0, cbr=12, goodput_mbps=tcp + NOISE[k]))
                rows.append(_row(rid, "udp_fairness", "cubic", 10, 0, flow=2, cbr=12,
                                 goodput_mbps=(tcp + NOISE[k]) / 3))
    return pd.DataFrame(rows)


def test_arms_from_run_ids():
    a = ab.arms(["link_delay__cubic__multipath__d10ms__l0pct__rep01",
                 "link_delay__cubic__multipath__d10ms__l0pct__q-tbf-netem__rep02",
                 "udp_fairness__bbr__multipath__d10ms__l0pct__cbr12mbps__len8192B__q-netem-tbf__rep03",
                 "udp_fairness__bbr__multipath__d10ms__l0pct__cbr12mbps__len8192B__rep03"])
    assert list(a["queue_model"]) == ["fifo-after-delay", "tbf-netem", "netem-tbf", "fifo-after-delay"]
    assert a["udp_len_bytes"].isna().tolist() == [True, True, False, False]
    assert a["udp_len_bytes"].iloc[2] == 8192


def test_estimates():
    e = ab.est_mean(5 + NOISE)
    assert (e.mean, e.n, e.df) == (pytest.approx(5.0), 5, 4.0)
    assert e.se == pytest.approx(math.sqrt(0.1 / 4) / math.sqrt(5))
    lo, hi = e.interval()
    assert hi - 5 == pytest.approx(stats.t.ppf(0.975, 4) * e.se)
    d = ab.est_diff(e, ab.est_mean(3 + NOISE))
    assert d.mean == pytest.approx(2.0) and d.se == pytest.approx(math.sqrt(2) * e.se) and d.df == pytest.approx(8.0)
    assert ab.est_diff(e, ab.NO_EST).n == 0 and math.isnan(ab.est_mean([7.0]).interval()[0])


def test_distance():
    assert ab.distance(30, ab._target("between", low=26, high=58)) == 0
    assert ab.distance(70, ab._target("between", low=26, high=58)) == 12
    assert ab.distance(0.85, ab._target(">", 0.9)) == pytest.approx(0.05)
    assert ab.distance(0.95, ab._target(">", 0.9)) == 0
    assert ab.distance(0.6, ab._target("<", 0.55)) == pytest.approx(0.05)
    assert ab.distance(17, ab._target("approx", 19)) == 2 and math.isnan(ab.distance(math.nan, ab._target("approx", 1)))


def test_quantities_effects_and_best_fit():
    q = ab.quantities(made_up())
    gap = q[(q["quantity"] == "RTT gap cubic − bbr") & (q["config"] == "link delay 100 ms, loss 0 %")]
    fifo = gap[gap["queue_model"] == "fifo-after-delay"].iloc[0]
    tbf = gap[gap["queue_model"] == "tbf-netem"].iloc[0]
    assert fifo["mean"] == pytest.approx(90.0) and tbf["mean"] == pytest.approx(50.0)
    assert fifo["claims"] == "S05;S23" and (fifo["low"], fifo["high"]) == (26, 58)
    assert fifo["distance"] == pytest.approx(32.0) and tbf["distance"] == 0
    drop = q[q["quantity"] == "goodput drop cubic"].iloc[0]
    assert drop["claims"] == "S06" and drop["mean"] == pytest.approx(7.0) and drop["distance"] == pytest.approx(0)
    jain = q[(q["quantity"] == "Jain's index") & (q["queue_model"] == "tbf-netem")].iloc[0]
    assert jain["config"] == "pair 1: cubic + reno" and jain["mean"] == pytest.approx(0.99)
    assert jain["value"] == pytest.approx(0.985)
    udp = q[q["quantity"] == "TCP goodput cubic"]
    assert sorted(udp["udp_len_bytes"].fillna(0).astype(int)) == [0, 0, 8192, 8192]
    e = ab.effects(q)
    g = e[(e["quantity"] == "RTT gap cubic − bbr") & (e["queue_model"] == "tbf-netem")].iloc[0]
    assert g["diff"] == pytest.approx(-40.0) and g["moved"] and g["toward_paper"] and g["diff_high"] < 0
    # the datagram size: TCP goodput 15 -> 9 Mbit/s, into the paper's 8-10 range
    u = e[(e["quantity"] == "TCP goodput cubic") & (e["queue_model"] == "fifo-after-delay")].iloc[0]
    assert u["udp_len_bytes"] == 8192 and u["diff"] == pytest.approx(-6.0) and u["moved"] and u["toward_paper"]
    # goodput under loss does not depend on the queue model here: not moved
    d = e[(e["quantity"] == "goodput drop cubic") & (e["queue_model"] == "tbf-netem")].iloc[0]
    assert d["diff"] == pytest.approx(0.0) and not d["moved"]
    b = ab.best_fit(q)
    s05 = b[b["claims"] == "S05;S23"].set_index("queue_model")
    assert s05.loc["tbf-netem", "nearest"] == 1 and s05.loc["fifo-after-delay", "nearest"] == 0
    assert (s05["cells"] == 1).all()


def test_cite_counts_moved_cells_toward_and_away():
    e = ab.effects(ab.quantities(made_up()))
    c = ab.cite(e, "S05", "RTT gap cubic")
    assert (c["cells"], c["moved"], c["toward"], c["away"], c["faithful_toward"]) == (1, 1, 1, 0, 1)
    i = c["items"][0]
    assert i["arm"] == "tbf-netem" and i["diff"] == pytest.approx(-40.0) and i["unit"] == "ms"
    d = ab.cite(e, "S06")                          # the loss response does not move with the queue model here
    assert (d["cells"], d["moved"], d["faithful_toward"]) == (1, 0, 0)
    u = ab.cite(e, "S17", "cubic")                 # 8192-byte datagrams (baseline queue) and tbf-netem (both sizes)
    assert u["cells"] == 3 and {i["arm"] for i in u["items"]} == {"fifo-after-delay, 8192-byte datagrams",
                                                                  "tbf-netem", "tbf-netem, 8192-byte datagrams"}
    assert ab.cite(e, "S99")["cells"] == 0


class _Ctx:
    def __init__(self, run_ids):
        self.df = pd.DataFrame({"run_id": run_ids})


def test_explanations_cite_the_ablation(monkeypatch):
    """analysis.claims.explain.f000._ablation: testbed-difference when the explained dataset ran the baseline queue
    model and a faithful one moved the quantity toward the paper; open when nothing moved or when the dataset
    already ran a faithful queue model; the text carries the numbers and the interval."""
    from analysis.claims.explain import f000
    q = ab.quantities(made_up())
    monkeypatch.setattr(ab, "load_effects", lambda bundle=None: (q, ab.effects(q), 40))
    monkeypatch.setattr(ab, "recording_progress", lambda bundle=None: (40, 40))
    base = _Ctx(["link_delay__cubic__multipath__d10ms__l0pct__rep01"])
    kind, text, ev = f000._ablation({"claim_id": "S05-cubic"}, base, "S05", "RTT gap cubic")
    assert kind == "testbed-difference"
    assert "40 runs of 100 s" in text and "1 moved beyond run-to-run noise, 1 toward the paper and 0 away" in text
    assert "90 under fifo-after-delay, 50 under tbf-netem (-40 ms, 95 % interval" in text
    assert ev["ablation"]["faithful_toward"] == 1 and ev["ablation_bundle"] == "data/fidelity000"
    kind, text, _ = f000._ablation({"claim_id": "S06-cubic"}, base, "S06", "goodput drop cubic")
    assert kind == "open" and "does not account for the difference" in text and "largest change" in text
    faithful = _Ctx(["link_delay__cubic__multipath__d10ms__l0pct__q-tbf-netem__rep01"])
    kind, text, _ = f000._ablation({"claim_id": "S05-cubic"}, faithful, "S05", "RTT gap cubic")
    assert kind == "open" and "already ran tbf-netem" in text
    monkeypatch.setattr(ab, "load_effects", lambda bundle=None: None)
    kind, text, ev = f000._ablation({"claim_id": "S05-cubic"}, base, "S05", "RTT gap cubic", undecided=", X,")
    assert kind == "open" and text.startswith("Not yet measured: the fidelity ablation") and ", X, decides it" in text
    assert ev == {}
    monkeypatch.setattr(ab, "load_effects", lambda bundle=None: (q, ab.effects(q), 40))
    monkeypatch.setattr(ab, "recording_progress", lambda bundle=None: (40, 810))   # a recording in progress
    kind, text, ev = f000._ablation({"claim_id": "S05-cubic"}, base, "S05", "RTT gap cubic", undecided=", X,")
    assert kind == "open" and text.startswith("Being recorded: the fidelity ablation") and "40 of 810 runs" in text
    assert ev == {}


def test_recording_progress_reads_the_bundle_and_its_campaign(tmp_path):
    import json
    assert ab.recording_progress(tmp_path) is None and not ab.complete(tmp_path)
    (tmp_path / "bundle.json").write_text(json.dumps({"runs_total": 57}))
    (tmp_path / "campaign.json").write_text(json.dumps({"name": "fidelity000", "n_runs": 810}))
    assert ab.recording_progress(tmp_path) == (57, 810) and not ab.complete(tmp_path)
    (tmp_path / "bundle.json").write_text(json.dumps({"runs_total": 810}))
    assert ab.complete(tmp_path)


def test_arms_are_never_pooled_and_one_can_be_selected():
    from analysis.claims import evaluate
    from analysis.errors import AnalysisError
    df = made_up()
    df.attrs["runs"] = pd.DataFrame({"run_id": df["run_id"].unique(), "status": "complete", "reason": ""})
    assert ab.arm_set(df) == [("fifo-after-delay", None), ("fifo-after-delay", 8192), ("tbf-netem", None),
                              ("tbf-netem", 8192)]
    with pytest.raises(AnalysisError, match="mixes switch queue models"):
        evaluate(df, n_boot=200)
    assert ab.parse_arm("tbf-netem") == ("tbf-netem", None)
    assert ab.parse_arm("fifo-after-delay,8192") == ("fifo-after-delay", 8192)
    for bad in ("netem-shared", "tbf-netem,8k"):
        with pytest.raises(AnalysisError):
            ab.parse_arm(bad)
    one = ab.select_arm(df, ("tbf-netem", None))
    assert ab.arm_set(one) == [("tbf-netem", None)] and len(one) == 40   # (3 link-delay + 1 loss + 2 pair + 2 UDP rows) x 5 reps
    assert set(one.attrs["runs"]["run_id"]) == set(one["run_id"])
    big = ab.select_arm(df, ("tbf-netem", 8192))                              # its UDP runs and every TCP-only run
    assert set(big.loc[big["experiment"] == "udp_fairness", "run_id"].str.contains("len8192B")) == {True}
    assert big["experiment"].value_counts()["link_delay"] == 15


def test_explanations_describe_the_datasets_own_buffer_and_datagram():
    """The texts of S05 and the UDP claims say which queue model and datagram size the explained dataset ran (the
    baseline's FIFO after the delay line, or the paper's NetEm limit under TBF since the campaigns' default changed),
    never the other one."""
    from analysis.claims.explain import f000
    df = made_up()
    old = ab.select_arm(df, ("fifo-after-delay", None))
    new = ab.select_arm(df, ("tbf-netem", 8192))
    assert "FIFO after the delay line" in f000._buffer(_Ctx(list(old["run_id"])))
    b = f000._buffer(_Ctx(list(new["run_id"])))
    assert "queue model tbf-netem" in b and "FIFO" not in b
    assert "ran the queue models fifo-after-delay, tbf-netem" in f000._buffer(_Ctx(list(df["run_id"])))

    class Rows:
        def __init__(self, d):
            self.df = d
    assert "one MSS, 1448 bytes" in f000._datagram(Rows(old))
    d = f000._datagram(Rows(new))
    assert "8192-byte datagrams" in d and "arrived whole" in d
    assert f000._datagram(Rows(old[old["experiment"] != "udp_fairness"])) == ""


def test_one_queue_model_and_one_udp_size_is_one_arm():
    """campaigns/paper.yaml since issue 28 item 5: every run tbf-netem, the UDP runs 8192-byte datagrams, the TCP runs
    none: one arm, which the scorecard scores (it refuses only real mixtures); a TCP-only dataset is (model, None)."""
    from analysis.claims import evaluate
    df = ab.select_arm(made_up(), ("tbf-netem", 8192))
    assert ab.arm_set(df) == [("tbf-netem", 8192)]
    runs = df.drop_duplicates("run_id")[["run_id", "cc", "cc2"]].assign(status="complete", reason="")
    df.attrs["runs"] = runs.reset_index(drop=True)
    assert len(evaluate(df, n_boot=200))
    tcp = df[df["experiment"] != "udp_fairness"]
    assert ab.arm_set(tcp) == [("tbf-netem", None)]
    mixed = pd.concat([df, ab.select_arm(made_up(), ("tbf-netem", None))])
    assert ab.arm_set(mixed) == [("tbf-netem", None), ("tbf-netem", 8192)]


def test_explanations_credit_the_mechanism_that_moved_and_read_cleanly(monkeypatch):
    """UDP claims: the paper era's datagram moves TCP goodput under UDP (made_up: 15 -> 9 Mbit/s under both queue
    models) and the queue model alone does not, so the datagram is credited and NetEm's queue semantics are not;
    an unchanged quantity is neither toward nor away from the paper; a single run per arm gives no interval; a
    claim without runs names what would decide it."""
    from analysis.claims.explain import f000
    q = ab.quantities(made_up())
    e = ab.effects(q)
    monkeypatch.setattr(ab, "load_effects", lambda bundle=None: (q, e, 40))
    monkeypatch.setattr(ab, "recording_progress", lambda bundle=None: (40, 40))
    base = _Ctx(["udp_fairness__cubic__multipath__d10ms__l0pct__cbr12mbps__rep01"])
    kind, text, ev = f000._ablation({"claim_id": "S17-cubic"}, base, "S17", "cubic")
    assert kind == "testbed-difference"
    assert "under the paper's NetEm semantics and datagram size: of 3 cells" in text
    assert text.endswith("This dataset ran the baseline (a FIFO after the delay line, one datagram per packet); the "
                         "paper era's 8192-byte datagrams move the result toward the paper's.")
    assert "NetEm's queue semantics" not in text.split("This dataset")[-1]
    # Jain's index does not change with any arm: no direction, and the claim stays open naming both factors
    assert e.loc[e["quantity"].str.startswith("Jain's index cubic + UDP"), "toward_paper"].isna().all()
    kind, text, _ = f000._ablation({"claim_id": "S20-cubic"}, base, "S20", "cubic")
    assert kind == "open" and "away from the paper" not in text
    assert text.endswith("Neither the queue model nor the datagram size accounts for the difference here: it stays "
                         "open.")
    # one run per arm: no interval, said in words; one cell: singular
    one = made_up()
    one = one[one["run_id"].str.endswith("rep01")]
    q1 = ab.quantities(one)
    monkeypatch.setattr(ab, "load_effects", lambda bundle=None: (q1, ab.effects(q1), 8))
    tcp = _Ctx(["link_delay__cubic__multipath__d10ms__l0pct__rep01"])
    kind, text, _ = f000._ablation({"claim_id": "S05-cubic"}, tcp, "S05", "RTT gap cubic")
    assert kind == "open" and "of 1 cell (quantity" in text and "no interval: a single run in an arm" in text
    assert "nan" not in text
    kind, text, _ = f000._ablation({"claim_id": "S99-cubic"}, tcp, "S99", None, undecided=", the X under each Y,")
    assert text == "The fidelity ablation (data/fidelity000) has no runs for S99 (the X under each Y)."


def test_p_value_and_the_rerecord_decision():
    """Est.p_value is the two-sided Welch t p; rerecord_decision tests campaigns/paper.yaml's settings (tbf-netem;
    8192-byte datagrams where the cell has datagram arms) cell by cell with Holm's correction. made_up: cubic's RTT
    gap falls by 40 ms under tbf-netem and TCP goodput under UDP by 6 Mbit/s with 8192-byte datagrams: both moved;
    the rest do not move."""
    d = ab.est_diff(ab.est_mean(5 + NOISE), ab.est_mean(3 + NOISE))
    assert d.p_value() == pytest.approx(2 * stats.t.sf(2.0 / d.se, d.df))
    assert ab.Est(0.0, 0.0, 4.0, 5).p_value() == 1.0 and ab.Est(0.3, 0.0, 4.0, 5).p_value() == 0.0
    assert math.isnan(ab.est_mean([7.0]).p_value())
    e = ab.effects(ab.quantities(made_up()))
    t = ab.paper_settings_effects(e)
    assert (t["queue_model"] == "tbf-netem").all()
    udp = t["quantity"].str.contains("UDP|TCP goodput")
    assert (t.loc[udp, "udp_len_bytes"] == 8192).all() and t.loc[~udp, "udp_len_bytes"].isna().all()
    assert len(t) == t[["claims", "quantity", "config"]].drop_duplicates().shape[0]   # one arm per cell
    dec = ab.rerecord_decision(e)
    moved = dec["table"][dec["table"]["moved_holm"]]
    assert dec["rerecord"] and dec["moved"] == len(moved) and dec["tested"] <= dec["cells"] == len(t)
    assert {"RTT gap cubic − bbr", "TCP goodput cubic"} <= set(moved["quantity"])
    p = dec["table"].dropna(subset=["p_value"])
    assert (p["p_holm"] >= p["p_value"]).all()
    unmoved = e[e["quantity"] == "goodput drop cubic"]
    assert not ab.rerecord_decision(unmoved)["rerecord"]
