"""Every bundled dataset's scorecard explains every verdict other than "reproduced" (kind, text, evidence), counts
no paper statement twice in its headline, and every `open` explanation belongs to a family that docs/claims.md lists
with the experiment that would decide it."""
from __future__ import annotations

import json
import re
from pathlib import Path

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
    d = ROOT / "data" / request.param
    return request.param, evaluate(load_campaign(d, progress=False, jobs=1), n_boot=999)


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
    name, res = scored
    head = headline(res)
    assert head["claim_id"].is_unique
    assert not head["claim_id"].str.contains("/").any(), name
    assert set(res["tier"]) <= {"behaviour", "sanity"}
