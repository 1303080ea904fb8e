"""Every bundled dataset's scorecard explains every verdict other than "reproduced" (kind, text, evidence), counts
no paper statement twice in its headline, and every `open` explanation belongs to a family that docs/claims.md lists
with the experiment that would decide it."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from analysis.claims import evaluate
from analysis.claims.core import EXPLANATION_KINDS, headline
from analysis.dataset import load_campaign

ROOT = Path(__file__).resolve().parents[1]
BUNDLES = sorted(p.parent.name for p in (ROOT / "data").glob("*/bundle.json"))
SUFFIX = re.compile(r"-(reno|bic|cubic|bbr|pair\d+|tcp_path1|mptcp|tcp_lte|tcp_wifi)$")


def _open_section() -> str:
    text = (ROOT / "docs" / "claims.md").read_text()
    start = text.index("## Open explanations")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def family(claim_id: str) -> str:
    """The claim family an open explanation is listed under: the id without its cc, pair or mode suffix."""
    return SUFFIX.sub("", claim_id.split("/")[0])


@pytest.fixture(scope="module", params=BUNDLES)
def scored(request):
    """A bundle's scorecard; an ablation bundle (several queue-model arms, data/fidelity000) is scored on each arm
    of one-MSS datagrams, every arm's rows together (claim ids suffixed with the arm)."""
    from analysis.ablation import arm_set, select_arm
    d = ROOT / "data" / request.param
    df = load_campaign(d, progress=False, jobs=1)
    arms = arm_set(df) if "run_id" in df and not ("family" in df and df["family"].notna().any()) else []
    from analysis import paper_bic
    if len(arms) <= 1 and "cc" in df and len(paper_bic.kernels(df)) > 1:
        # both BICs (data/bic000): each scored as the paper's BIC, claim ids suffixed with the BIC's kernel
        parts = []
        for k in paper_bic.kernels(df):
            r = evaluate(paper_bic.select(df, k), n_boot=999)
            parts.append(r.assign(claim_id=r["claim_id"] + "/bic-" + k, arm="bic-" + k))
        return request.param, pd.concat(parts, ignore_index=True)
    if len(arms) <= 1:
        return request.param, evaluate(df, n_boot=999)
    parts = []
    for arm in arms:
        if arm[1] is None:
            r = evaluate(select_arm(df, arm), n_boot=999)
            parts.append(r.assign(claim_id=r["claim_id"] + "/" + arm[0], arm=arm[0]))
    return request.param, pd.concat(parts, ignore_index=True)


def test_bundles_exist():
    assert {"paper", "sample", "study001", "study002", "study003", "study004"} <= set(BUNDLES)


def test_every_verdict_but_reproduced_is_explained(scored):
    name, res = scored
    for r in res.itertuples():
        if r.verdict == "reproduced":
            assert not isinstance(r.explanation_kind, str), (name, r.claim_id)
            continue
        assert r.explanation_kind in EXPLANATION_KINDS, (name, r.claim_id, r.explanation_kind)
        assert isinstance(r.explanation_text, str) and r.explanation_text.strip(), (name, r.claim_id)
        json.dumps(r.explanation_evidence, allow_nan=False)   # strict JSON, as mpcc scorecard --json writes it


def test_open_explanations_are_listed_with_their_experiment(scored):
    name, res = scored
    section = _open_section()
    missing = sorted({family(c) for c, k in zip(res["claim_id"], res["explanation_kind"])
                      if k == "open" and family(c) not in section})
    assert not missing, f"{name}: open explanations not listed in docs/claims.md: {missing}"


def test_no_statement_counted_twice_in_the_headline(scored):
    """Within one scorecard (an ablation bundle: one per arm, its ids without the arm suffix the fixture adds)."""
    name, res = scored
    cards = ([g.assign(claim_id=g["claim_id"].str.removesuffix("/" + arm)) for arm, g in res.groupby("arm")]
             if "arm" in res else [res])
    for card in cards:
        head = headline(card)
        assert head["claim_id"].is_unique
        assert not head["claim_id"].str.contains("/").any(), name
    assert set(res["tier"]) <= {"behaviour", "sanity"}


def test_study000_testbed_differences_cite_an_ablation(scored):
    """Issue 28: a study-000 claim that is not reproduced and explained as a testbed difference cites a measured
    ablation: the fidelity ablation (evidence ``ablation``) or the run-length one, the same claim on the paper
    protocol (``run_length_ablation``)."""
    name, res = scored
    rows = res[(res["paper"] == "000") & (res["verdict"] == "not reproduced")
               & (res["explanation_kind"] == "testbed-difference")]
    missing = [r.claim_id for r in rows.itertuples()
               if not (isinstance(r.explanation_evidence, dict)
                       and ({"ablation", "run_length_ablation"} & set(r.explanation_evidence)))]
    assert not missing, f"{name}: testbed-difference without an ablation result: {missing}"
