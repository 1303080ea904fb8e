"""`mpcc scorecard`: text and JSON output on a synthetic campaign, errors, and (netns) a real small campaign."""
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_dataset import build_campaign  # noqa: E402

from analysis.claims import VERDICTS, evaluate
from analysis.claims.core import EXPLANATION_KINDS
from analysis.dataset import load_campaign
from mpcc.cli import main

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def camp(tmp_path_factory):
    return build_campaign(tmp_path_factory.mktemp("sc") / "camp", reps=3)


def test_json_is_one_object_with_claims(camp, capsys):
    assert main(["scorecard", str(camp), "--json", "--no-progress", "--n-boot", "500"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["campaign"] == "synth"
    assert out["runs"] == {"complete": 5, "skipped": 1, "incomplete": 1, "superseded": 0, "analysis_failed": 0,
                           "total": 7}
    ref = evaluate(load_campaign(camp, jobs=1, progress=False), n_boot=500)
    assert [c["claim_id"] for c in out["claims"]] == list(ref["claim_id"])
    assert set(out["verdicts"]) == set(VERDICTS)
    # the headline counts behavioural claims only; sanity checks and substitutes are counted apart
    assert sum(out["verdicts"].values()) == out["headline_claims"] == sum(
        c["tier"] == "behaviour" and c["substitute_for"] is None for c in out["claims"])
    assert out["headline_claims"] + sum(out["sanity_verdicts"].values()) + sum(out["substitute_verdicts"].values()) \
        == len(out["claims"])
    for c in out["claims"]:   # every verdict but "reproduced" is explained, as data
        if c["verdict"] == "reproduced":
            assert c["explanation"] is None
        else:
            assert c["explanation"]["kind"] in EXPLANATION_KINDS and c["explanation"]["text"].strip(), c
    by = {c["claim_id"]: c for c in out["claims"]}
    # 3 identical reps of 0.808 Mbit/s: the interval collapses to the value, far from Table 3's 19.08
    t3 = by["T3-TPUT-cubic-multipath"]
    assert t3["verdict"] == "not reproduced" and t3["n"] == 3
    assert t3["ours"] == pytest.approx(0.808, rel=1e-5) and t3["ci_low"] == pytest.approx(t3["ci_high"])
    assert by["S01-cubic"]["verdict"] == "not run"                  # no single-path run in this campaign
    assert by["S01-bic"]["verdict"] == "not run" and by["S01-bic"]["note"].startswith("bic: not available")
    assert by["S14-pair1"]["verdict"] == "inconclusive" and "n=1 < 3 reps" in by["S14-pair1"]["note"]
    assert by["S14-pair1"]["ci_low"] is None                        # NaN -> null, valid JSON


def test_text_one_line_per_claim(camp, capsys):
    assert main(["scorecard", str(camp), "--no-progress", "--n-boot", "500", "--alpha", "0.1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    claims = [ln for ln in lines if not ln.startswith("#") and not ln.startswith(" ")]   # "why" lines are indented
    assert len(claims) == len(evaluate(load_campaign(camp, jobs=1, progress=False), n_boot=500))
    assert all(ln.split()[0] in ("reproduced", "not", "inconclusive") for ln in claims)
    t3 = next(ln for ln in claims if " T3-TPUT-cubic-multipath " in ln)
    assert t3.startswith("not reproduced") and "paper: 19.08 Mbit/s" in t3 and "ours: 0.808" in t3 and "n=3" in t3
    assert lines[0].startswith("# scorecard") and "5 complete, 1 skipped, 1 incomplete" in lines[0]
    assert lines[-1].startswith("# verdicts (headline):")
    assert any(ln.lstrip().startswith("why (") for ln in lines)


@pytest.mark.parametrize("args,msg", [
    (["/nonexistent/campaign"], "no such campaign directory"),
    (["/"], "not a campaign directory"),
    (["CAMP", "--alpha", "0"], "--alpha must be between 0 and 1"),
    (["CAMP", "--jobs", "0"], "--jobs must be >= 1"),
    (["CAMP", "--arm", "netem-shared"], "--arm: unknown queue model 'netem-shared'"),
    (["CAMP", "--arm", "tbf-netem", "--no-progress"], "--arm tbf-netem: no complete run of that arm"),
])
def test_bad_input_one_line_exit_2(camp, args, msg):
    args = [str(camp) if a == "CAMP" else a for a in args]
    r = subprocess.run([sys.executable, "-m", "mpcc.cli", "scorecard", *args], capture_output=True, text=True,
                       cwd=REPO, timeout=120)
    assert r.returncode == 2
    assert r.stdout == "" and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and msg in r.stderr


CAMPAIGN = """\
name: h4t-mini
description: scorecard mechanics on real captures (3 reps of one Table 3 pair, plus a bic run)
reps: 3
seed: 7
defaults:
  duration_s: 2
  link_delay_ms: 10
  loss_pct: 0
  path_mode: multipath
experiments:
  - experiment: single_vs_multi
    cc: cubic
    path_mode: [single, multipath]
  - experiment: loss_rate
    cc: bic
    loss_pct: 2
"""


@pytest.mark.netns
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")
def test_scorecard_on_real_campaign(tmp_path):
    spec = tmp_path / "mini.yaml"
    spec.write_text(CAMPAIGN)
    out = tmp_path / "camp"
    env = {**os.environ, "MPCC_NS_PREFIX": "h4t-"}
    r = subprocess.run([sys.executable, "-m", "mpcc.cli", "campaign", "run", str(spec), "--backend", "netns",
                        "--out", str(out)], env=env, capture_output=True, text=True, timeout=600, cwd=REPO)
    assert "Traceback" not in r.stderr
    assert r.returncode == 0, r.stderr[-2000:]
    r = subprocess.run([sys.executable, "-m", "mpcc.cli", "scorecard", str(out), "--json", "--no-progress"],
                       capture_output=True, text=True, timeout=300, cwd=REPO)
    assert r.returncode == 0, r.stderr[-2000:]
    sc = json.loads(r.stdout)
    assert sc["campaign"] == "h4t-mini"
    assert sc["runs"]["complete"] >= 6 and sc["runs"]["analysis_failed"] == 0
    by = {c["claim_id"]: c for c in sc["claims"]}
    for cid in ("T3-TPUT-cubic-single", "T3-TPUT-cubic-multipath", "T3-RATIO-cubic", "S01-cubic"):
        c = by[cid]
        assert c["n"] == 3 and c["verdict"] != "not run"
        # JSON has no infinity: an unbounded interval end (e.g. a SACK ratio over a run with 0 blocks) is "inf"
        assert c["ci_low"] is not None and float(c["ci_low"]) <= float(c["ours"]) <= float(c["ci_high"])
    # real captures: multipath carries about twice the single-path goodput and shows SACK blocks
    assert by["T3-RATIO-cubic"]["ours"] > 1.5
    skipped = (out / "runs" / "loss_rate__bic__multipath__d10ms__l2pct__rep01" / "SKIPPED")
    if skipped.exists():
        assert sc["runs"]["skipped"] == 3
        assert by["S10-bic"]["verdict"] == "not run"
        assert by["S10-bic"]["note"] == skipped.read_text().strip()
    assert not math.isnan(float(by["S01-cubic"]["ours"]))
    leftovers = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert "h4t-" not in leftovers
