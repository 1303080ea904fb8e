"""The paper's reference values load and are internally consistent."""
import glob
import os
import re

import numpy as np
import pytest

from analysis.reference import load_quotes, load_statements, load_table2, load_table3, load_table4

CCS = {"reno", "bic", "cubic", "bbr"}


def test_table3_loads_and_multipath_doubles_throughput():
    t3 = load_table3()
    assert len(t3) == 8
    assert set(t3.cc) == CCS and set(t3.path_mode) == {"single", "multipath"}
    wide = t3.pivot(index="cc", columns="path_mode", values="throughput_mbps")
    ratio = wide["multipath"] / wide["single"]
    assert np.allclose(ratio, 2.0, atol=0.05), ratio.to_dict()
    sack = t3.pivot(index="cc", columns="path_mode", values="sack_blocks")
    # statement S01 says "more than 11x"; Table 3 itself gives 41x (reno), 39x (cubic), inf (bbr, 0 on single)
    # but only 10.69x for bic (129205 / 12089): the paper's text and table disagree (see data/reference/README.md).
    assert (sack.loc[["reno", "cubic"], "multipath"] > 11 * sack.loc[["reno", "cubic"], "single"]).all()
    assert sack.loc["bbr", "single"] == 0
    assert sack.loc["bic", "multipath"] / sack.loc["bic", "single"] == pytest.approx(10.688, abs=1e-3)
    assert t3.loc[(t3.cc == "reno") & (t3.path_mode == "multipath"), "throughput_mbps"].item() == 19.1


def test_table4_jain_matches_formula():
    t4 = load_table4()
    assert len(t4) == 6
    for row in t4.itertuples():
        x = np.array([row.throughput1_mbps, row.throughput2_mbps])
        j = x.sum() ** 2 / (2 * (x ** 2).sum())
        # throughputs are printed to 0.01 Mbit/s, so the recomputed index can differ in the 3rd decimal:
        # pair 4 gives 0.96984 where the paper prints 0.969 (truncated, or computed from unrounded values).
        assert abs(j - row.jain) <= 1e-3, (row.pair, j, row.jain)
    assert (t4.jain > 0.9).all()  # statement S16


def test_table2_pairs_match_table4():
    t2, t4 = load_table2(), load_table4()
    assert list(zip(t2.cc, t2.cc2)) == list(zip(t4.cc1, t4.cc2))
    assert len({frozenset(p) for p in zip(t2.cc, t2.cc2)}) == 6


def test_statements_well_formed():
    st = load_statements(with_quotes=True)
    assert st.id.is_unique and st.quote.notna().all()
    assert set(st.relation) <= {">", ">=", "<", "<=", "approx", "between", "approx_between"}
    ranged = st.relation.isin(["between", "approx_between"])
    assert st.loc[ranged, ["low", "high"]].notna().all().all()
    assert (st.loc[ranged, "low"] < st.loc[ranged, "high"]).all()
    assert st.loc[~ranged, "value"].notna().all()
    assert set(st.experiment) <= {"single_vs_multi", "link_delay", "loss_rate", "tcp_fairness", "udp_fairness"}
    # each statement's number appears in its source sentence
    for r in st.itertuples():
        nums = [r.low, r.high] if r.relation in ("between", "approx_between") else [r.value]
        for v in nums:
            if v == 0:  # S04: "lebih tinggi dari link delay" has no number
                continue
            shown = {f"{v:g}", f"{v * 100:g}%"}
            assert any(s in r.quote for s in shown), (r.id, v, r.quote)


def test_total_two_flow_throughput_about_19():
    t4 = load_table4()
    total = t4.throughput1_mbps + t4.throughput2_mbps
    assert ((total > 18.4) & (total < 19.2)).all()


def _paper_text():
    # the papers' text copies are not part of this repository: MPCC_PAPERS names a directory holding them
    papers = os.environ.get("MPCC_PAPERS")
    paths = glob.glob(os.path.join(papers, "000_*.txt")) if papers else []
    if not paths:
        pytest.skip("set MPCC_PAPERS to a directory with the paper's text copy (000_*.txt) to check the quotes")
    with open(paths[0], encoding="utf-8") as f:
        lines = [ln for ln in f.read().splitlines() if not re.match(r"^(Gambar|Tabel) \d+\.", ln)]
    return re.sub(r"\s+", " ", " ".join(lines).replace("*", ""))


def test_quotes_are_verbatim_in_paper():
    text = _paper_text()
    for q in load_quotes().itertuples():
        assert re.sub(r"\s+", " ", q.text) in text, q.quote_id


def test_table_numbers_in_paper():
    text = _paper_text()
    t3 = load_table3().pivot(index="cc", columns="path_mode")
    names = {"reno": "Reno", "bic": "BIC", "cubic": "CUBIC", "bbr": "BBR"}
    for cc, r in t3.iterrows():
        row = (f"{names[cc]} {r[('sack_blocks', 'single')]} {r[('throughput_mbps', 'single')]:g} "
               f"{r[('sack_blocks', 'multipath')]} {r[('throughput_mbps', 'multipath')]:g}")
        assert row in text, row
    for r in load_table4().itertuples():
        row = f"{names[r.cc1]} {r.throughput1_mbps:g} {names[r.cc2]} {r.throughput2_mbps:g} {r.jain:g}"
        assert row in text, row
