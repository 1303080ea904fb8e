"""analysis.paper_bic: a study 000 dataset whose BIC ran as Linux 4.15's (bic415) is read with it as the paper's BIC
(renamed bic, said in the claims' notes, the figures' rows and the S06 explanation); a dataset with both BICs is
refused unless one is chosen (mpcc scorecard --bic)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from analysis import paper_bic
from analysis.errors import AnalysisError
from analysis.figures import experiment_rows

REPO = Path(__file__).resolve().parents[1]


def _rows(ccs):
    rows = []
    for cc, cc2 in ccs:
        rid = f"tcp_fairness__{cc}+{cc2}__rep01" if cc2 else f"loss_rate__{cc}__rep01"
        for flow, c in ((1, cc), (2, cc2)) if cc2 else ((1, cc),):
            rows.append({"run_id": rid, "flow": flow, "experiment": "tcp_fairness" if cc2 else "loss_rate",
                         "cc": cc, "cc2": cc2, "goodput_mbps": 9.0})
    df = pd.DataFrame(rows)
    df.attrs["runs"] = df.drop_duplicates("run_id")[["run_id", "cc", "cc2"]].assign(status="complete", reason="")
    return df


def test_kernels_and_the_one_bic_read_as_the_papers():
    df = _rows([("bic415", None), ("bbr", "bic415"), ("reno", None)])
    assert paper_bic.kernels(df) == ["4.15"]
    out, note = paper_bic.as_paper(df)
    assert "Linux 4.15's, the paper's" in note
    assert set(out["cc"]) == {"bic", "bbr", "reno"} and set(out["cc2"].dropna()) == {"bic"}
    # the column says which rows' runs had BIC; the run listing is relabelled too
    k = out.set_index(["run_id", "flow"])["bic_kernel"]
    assert k[("loss_rate__bic415__rep01", 1)] == "4.15" and k[("tcp_fairness__bbr+bic415__rep01", 1)] == "4.15"
    assert k[("loss_rate__reno__rep01", 1)] == ""
    assert set(out.attrs["runs"]["cc"]) == {"bic", "bbr", "reno"}
    assert "bic415" in set(df["cc"])            # the input is not changed
    # read twice: the same
    again, note2 = paper_bic.as_paper(out)
    assert again is out and note2 == note


def test_6_1_bic_is_said_and_no_bic_is_silent():
    out, note = paper_bic.as_paper(_rows([("bic", None)]))
    assert set(out["cc"]) == {"bic"} and "Linux 6.1's" in note and "not the paper's" in note
    out, note = paper_bic.as_paper(_rows([("reno", None)]))
    assert note == "" and "bic_kernel" not in out.columns


def test_both_bics_refused_unless_one_is_chosen():
    df = _rows([("bic", None), ("bic415", None), ("bic", "cubic"), ("bic415", "cubic"), ("reno", None)])
    with pytest.raises(AnalysisError, match="both BICs.*--bic 4.15"):
        paper_bic.as_paper(df)
    four, _ = paper_bic.as_paper(df, "4.15")
    assert len(four) == len(df) - 3              # 6.1's loss run (1 row) and pair (2 rows) left out
    assert (four.loc[four["cc"] == "bic", "bic_kernel"] == "4.15").all()
    six, _ = paper_bic.as_paper(df, "6.1")
    assert len(six) == len(df) - 3 and (six.loc[six["cc"] == "bic", "bic_kernel"] == "6.1").all()
    with pytest.raises(AnalysisError, match="unknown BIC kernel"):
        paper_bic.select(df, "5.4")
    with pytest.raises(AnalysisError, match="no run with Linux 4.15"):
        paper_bic.as_paper(_rows([("bic", None)]), "4.15")


def test_about_bic():
    assert paper_bic.about_bic("S06-bic", "bic throughput at loss 1 %")
    assert paper_bic.about_bic("T4-JAIN-pair2", "pair 2 bic+cubic: Jain's index about 0.978 (Table 4)")
    assert paper_bic.about_bic("X", "Jain's index of BIC")
    assert not paper_bic.about_bic("S06-cubic", "cubic throughput at loss 1 % about 7 Mbit/s below loss 0 %")
    assert not paper_bic.about_bic("S01-cubic", "bicycles")


def test_figures_rows_show_the_papers_bic_and_say_which():
    said = []
    rows = experiment_rows(_rows([("bic415", None), ("reno", None)]), "loss_rate", {"cc": "bic"}, say=said.append)
    assert list(rows["cc"]) == ["bic"] and any("Linux 4.15's" in s for s in said)


def _bic415_loss_dataset():
    """Study 000 rows with BIC only as bic415: loss 0 and 1 % runs (goodput 19 and 16 Mbit/s, a 3 Mbit/s drop)."""
    rows = []
    for loss, g in ((0.0, 19.0), (1.0, 16.0)):
        for i, e in enumerate((-0.2, -0.1, 0.0, 0.1, 0.2), start=1):
            rows.append({"run_id": f"loss_rate__bic415__multipath__d10ms__l{loss:g}pct__rep{i:02d}", "flow": 1,
                         "experiment": "loss_rate", "path_mode": "multipath", "cc": "bic415", "cc2": None,
                         "loss_pct": loss, "link_delay_ms": 10.0, "goodput_mbps": g + e, "proto": "tcp",
                         "duration_s": 100.0, "retransmissions": 10.0, "spurious_retransmissions": 0.0})
    from analysis.families import roundrobin
    df = pd.DataFrame(rows)
    df = df.reindex(columns=list(dict.fromkeys([*roundrobin.COLUMNS, *df.columns])))
    df.attrs["runs"] = df.drop_duplicates("run_id")[["run_id", "cc", "cc2"]].assign(status="complete", reason="")
    return df


def test_claims_read_bic415_as_the_papers_bic():
    from analysis.claims import evaluate
    res = evaluate(_bic415_loss_dataset(), n_boot=200).set_index("claim_id")
    s06 = res.loc["S06-bic"]
    assert s06["ours"] == pytest.approx(3.0) and s06["verdict"] == "not reproduced"
    assert "Linux 4.15's, the paper's" in s06["note"]
    assert "Linux 4.15's" not in str(res.loc["S06-reno", "note"])
    # the explanation does not put the difference on BIC's code when the dataset ran the paper's BIC
    assert "already the paper's" in s06["explanation_text"]
    assert "counts one segment per ACK" not in s06["explanation_text"]


def test_scorecard_bic_option(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    run = lambda *a: subprocess.run([sys.executable, "-m", "mpcc.cli", "scorecard", *a], capture_output=True,
                                    text=True, timeout=120, cwd=REPO, env=env)
    r = run(str(tmp_path), "--bic", "5.4")
    assert r.returncode != 0 and "invalid choice" in r.stderr and "Traceback" not in r.stderr
    (tmp_path / "runs").mkdir()
    r = run(str(tmp_path), "--bic", "4.15", "--json", "--no-progress")
    assert r.returncode != 0 and "--bic 4.15" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    with pytest.raises(json.JSONDecodeError):
        json.loads(r.stdout or "x")
