"""Campaign files of studies 004 and 002 (``campaigns/paper004.yaml``, ``mpcc.families.f004``;
``campaigns/paper002.yaml``, ``mpcc.families.f002``): the papers' matrices, run ids, capture-tool arguments, profiles,
and one-line errors for bad values (no network namespaces)."""
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mpcc.campaign.spec import load_campaign
from mpcc.errors import UserError

REPO = Path(__file__).resolve().parents[1]
LEVELS = [round(0.01 * i, 2) for i in range(1, 11)]


def test_paper004_matches_the_papers_tables():
    c = load_campaign(REPO / "campaigns/paper004.yaml")
    assert c.family == "004" and len(c.runs) == 4 * 2 * 10 * 10
    for exp in ("client_server", "multihop_varied", "bottleneck"):   # Tables 1, 2, 4: error rate 0.01-0.10
        runs = [r for r in c.runs if r.experiment == exp]
        assert sorted({r.error_rate for r in runs}) == LEVELS and {r.bandwidth_mbit for r in runs} == {None}
    uni = [r for r in c.runs if r.experiment == "multihop_uniform"]   # Table 3: 1-10 Mbit/s at error rate 0.01
    assert sorted({r.bandwidth_mbit for r in uni}) == list(range(1, 11)) and {r.error_rate for r in uni} == {0.01}
    assert {r.cc for r in c.runs} == {"westwood", "westwood_e"} and {r.rep for r in c.runs} == set(range(1, 11))
    assert {r.duration_s for r in c.runs} == {120}
    # ns-2's links: each packet's transmission time as well (docs/ns2-004.md); the run ids say so
    assert {r.link_model for r in c.runs} == {"store-and-forward"}
    ids = {r.run_id for r in c.runs}
    assert "client_server__westwood_e__err0.01__sf__rep01" in ids
    assert "multihop_uniform__westwood__err0.01__bw4mbit__sf__rep10" in ids
    r = next(r for r in c.runs if r.run_id == "multihop_uniform__westwood__err0.01__bw4mbit__sf__rep10")
    assert r.args() == ["--family", "004", "--experiment", "multihop_uniform", "--topology", "multihop_uniform",
                        "--cc", "westwood", "--duration-s", "120", "--error-rate", "0.01", "--bandwidth-mbit", "4",
                        "--link-model", "store-and-forward", "--rep", "10"]
    assert r.params()["family"] == "004" and r.params()["bandwidth_mbit"] == 4
    assert r.params()["link_model"] == "store-and-forward"


def test_paper004_profiles():
    smoke = load_campaign(REPO / "campaigns/paper004.yaml", "smoke")
    assert len(smoke.runs) == 8 and {r.duration_s for r in smoke.runs} == {6}
    assert {r.experiment for r in smoke.runs} == {"client_server", "multihop_varied", "multihop_uniform", "bottleneck"}
    sample = load_campaign(REPO / "campaigns/paper004.yaml", "sample")
    assert len(sample.runs) == 4 * 4 * 2 * 3 and {r.duration_s for r in sample.runs} == {40}
    assert "client_server__westwood__err0.04__t40s__rep02" in {r.run_id for r in sample.runs}
    # the sample is what data/study004 recorded: htb links, the run ids and parameters they always had
    assert {r.link_model for r in sample.runs} == {"htb"} and "link_model" not in sample.runs[0].params()


def test_link_model_is_validated():
    from mpcc.errors import UserError
    from mpcc.families import f004
    with pytest.raises(UserError, match="link_model must be one of htb, store-and-forward"):
        f004.expand({"experiment": "client_server", "link_model": "ns2"}, dict(f004.DEFAULTS), 1, "t")
    with pytest.raises(UserError, match="link_model is an empty list"):
        f004.check_defaults({**f004.DEFAULTS, "link_model": []}, "t")
    arms = f004.expand({"experiment": "client_server", "link_model": ["htb", "store-and-forward"]},
                       dict(f004.DEFAULTS), 1, "t")
    assert sorted({r.run_id.endswith("__sf__rep01") for r in arms}) == [False, True]


@pytest.mark.parametrize("body, message", [
    ("- experiment: ring\n", "experiment must be one of client_server"),
    ("- experiment: client_server\n  error_rate: 0.9\n", "error_rate=0.9 is outside 0..0.5"),
    ("- experiment: client_server\n  cc: vegas\n", "unknown cc 'vegas'"),
    ("- experiment: client_server\n  bandwidth_mbit: 4\n", "bandwidth_mbit belongs only to multihop_uniform"),
    ("- experiment: multihop_uniform\n", "multihop_uniform needs bandwidth_mbit"),
    ("- experiment: bottleneck\n  duration_s: 2.5\n", "duration_s must be a whole number"),
    ("- experiment: bottleneck\n  buffer_pkts: 20\n", "unknown key(s) buffer_pkts"),
])
def test_bad_values_are_one_line_errors(tmp_path, body, message):
    f = tmp_path / "c.yaml"
    f.write_text("name: t\nfamily: '004'\nexperiments:\n" + textwrap.indent(body, ""))
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_campaign(f)
    r = subprocess.run([sys.executable, "-m", "mpcc.cli", "campaign", "run", str(f), "--dry-run"], cwd=REPO,
                       capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and message.split("(")[0] in r.stderr


def test_family_004_is_netns_only():
    from mpcc.families import get_family
    with pytest.raises(UserError, match="netns backend only"):
        get_family("004").capture_tool("vagrant")


def test_paper002_matches_the_papers_tests():
    c = load_campaign(REPO / "campaigns/paper002.yaml")
    assert c.family == "002" and len(c.runs) == 4 * 2 * 10 + 10      # test 5: both ccs at once, one run each rep
    bg = {r.experiment: r.background_mbps for r in c.runs}
    assert bg == {"test1": 0, "test2": 8, "test3": 16, "test4": 24, "test5": 90}   # fractions of 100 Mbit/s
    dur = {r.experiment: r.duration_s for r in c.runs}
    assert dur == {"test1": 220, "test2": 220, "test3": 220, "test4": 220, "test5": 10}
    assert {r.cc for r in c.runs if r.experiment != "test5"} == {"cubic", "pcc_vivace"}
    assert {r.cc for r in c.runs if r.experiment == "test5"} == {"cubic+pcc_vivace"}    # "secara bersamaan"
    assert {r.video_kbps for r in c.runs} == {3600}
    r = next(r for r in c.runs if r.run_id == "test2__pcc_vivace__rep03")
    assert r.args() == ["--family", "002", "--experiment", "test2", "--cc", "pcc_vivace", "--duration-s", "220",
                        "--background-mbps", "8", "--video-kbps", "3600", "--rep", "3"]
    smoke = load_campaign(REPO / "campaigns/paper002.yaml", "smoke")
    assert sorted(r.run_id for r in smoke.runs) == ["test1__cubic__t8s__rep01", "test1__pcc_vivace__t8s__rep01",
                                                    "test5__cubic+pcc_vivace__t6s__rep01"]
    r5 = next(r for r in smoke.runs if r.experiment == "test5")
    assert r5.args()[:6] == ["--family", "002", "--experiment", "test5", "--cc", "cubic+pcc_vivace"]
    sample = load_campaign(REPO / "campaigns/paper002.yaml", "sample")
    assert len(sample.runs) == 27 and {r.duration_s for r in sample.runs if r.experiment == "test5"} == {10}


def test_paper002_bad_values(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("name: t\nfamily: '002'\nexperiments:\n- experiment: test6\n")
    with pytest.raises(UserError, match="experiment must be one of test1"):
        load_campaign(f)
    f.write_text("name: t\nfamily: '002'\nexperiments:\n- experiment: test2\n  background_mbps: -1\n")
    with pytest.raises(UserError, match=r"background_mbps=-1 is outside 0..1000"):
        load_campaign(f)
    f.write_text("name: t\nfamily: '002'\nexperiments:\n- experiment: test2\n  cc: vivace\n")
    with pytest.raises(UserError, match="unknown cc 'vivace'"):
        load_campaign(f)
    f.write_text("name: t\nfamily: '002'\nexperiments:\n- experiment: test5\n  cc: cubic+cubic\n")
    with pytest.raises(UserError, match="at most two different congestion controls joined by"):
        load_campaign(f)
