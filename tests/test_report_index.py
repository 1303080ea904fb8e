"""The report's front page (mpcc/report_index.py): a section per study whose verdict counts are those of
`mpcc scorecard --json` on the same bundle, from the scorecard table a notebook writes (analysis.figures.save_table
of analysis.claims.evaluate, as notebooks 08-12 do). No notebook is executed here; `mpcc reproduce` itself is run in
test_bundle_reproduce_netns.py."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
N_BOOT = 199
# study -> (bundle, notebook of its scorecard); study 000 on data/sample (the smaller bundle)
CASES = {"000": ("data/sample", "08_scorecard.ipynb"), "001": ("data/study001", "09_study001_buffer_sweep.ipynb"),
         "002": ("data/study002", "12_study002_pcc_streaming.ipynb"),
         "003": ("data/study003", "10_study003_queue_sizing.ipynb"),
         "004": ("data/study004", "11_study004_westwood.ipynb")}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    from analysis.claims import evaluate
    from analysis.dataset import load_campaign
    from analysis.figures import save_table
    from mpcc.report_index import STUDIES, write

    out = tmp_path_factory.mktemp("report")
    results = []
    for sid, (bundle, nb) in CASES.items():
        df = load_campaign(REPO / bundle, progress=False, jobs=1)
        study = next(s for s in STUDIES if s.sid == sid)
        save_table(evaluate(df, alpha=0.05, n_boot=N_BOOT, seed=0), out, study.scorecard)
        results.append({"notebook": nb, "status": "ok", "error": "", "html": nb.replace(".ipynb", ".html"),
                        "family": sid, "campaign_dir": str(REPO / bundle)})
    results.append({"notebook": "01_single_vs_multipath.ipynb", "status": "failed", "error": "ValueError: boom",
                    "family": "000", "campaign_dir": str(REPO / "data/sample")})
    shown = write(out, results, REPO, alpha=0.05, n_boot=N_BOOT)
    return out, shown, (out / "index.html").read_text()


def _scorecard_json(bundle: str) -> dict:
    r = subprocess.run([sys.executable, "-m", "mpcc.cli", "scorecard", bundle, "--json", "--n-boot", str(N_BOOT),
                        "--no-progress", "--jobs", "1"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("sid", sorted(CASES))
def test_section_verdicts_equal_the_scorecard(report, sid):
    _, shown, page = report
    assert f'<h2 id="study{sid}">' in page
    sc = _scorecard_json(CASES[sid][0])
    assert shown[sid]["scorecard"]["verdicts"] == sc["verdicts"]
    assert shown[sid]["scorecard"]["headline_claims"] == sc["headline_claims"]
    section = page.split(f'<h2 id="study{sid}">')[1].split("<h2 ")[0]
    line = ", ".join(f"{n} {k}" for k, n in sc["verdicts"].items())
    assert f"({sc['headline_claims']} headline claims): {line}." in section
    assert f"<code>{CASES[sid][0]}</code>" in section and "complete runs" in section


def test_page_says_what_failed_and_links_every_notebook(report):
    out, _, page = report
    assert page.count('<h2 id="study') == 5
    assert "failed: ValueError: boom" in page
    for _, nb in CASES.values():
        assert f'href="{nb.replace(".ipynb", ".html")}"' in page
    assert re.search(r'href="tables/09_scorecard\.csv"', page)
    assert str(REPO) not in page          # data paths relative to the repository


def test_page_defines_every_explanation_kind(report):
    from analysis.claims.core import EXPLANATION_KINDS
    _, _, page = report
    for kind in EXPLANATION_KINDS:           # the counts per section name them; the reader needs what each means
        assert f"<dt><code>{kind}</code></dt>" in page


def test_html_reports_leave_out_the_set_up_code(tmp_path):
    """Cells tagged hide-input lose their code in the HTML (the output stays); every committed notebook tags its
    set-up cell (the imports after the parameters cell)."""
    import nbformat

    from mpcc.commands.reproduce import HIDE_INPUT_TAG, _export_html
    nb = nbformat.v4.new_notebook()
    setup = nbformat.v4.new_code_cell("import secret_setup_module_name", metadata={"tags": [HIDE_INPUT_TAG]})
    setup.outputs = [nbformat.v4.new_output("stream", name="stdout", text="1,340 runs loaded\n")]
    nb.cells = [setup, nbformat.v4.new_code_cell("visible_analysis_code = 1")]
    nbformat.write(nb, str(tmp_path / "t.ipynb"))
    _export_html(tmp_path / "t.ipynb", tmp_path / "t.html")
    page = (tmp_path / "t.html").read_text()
    assert "secret_setup_module_name" not in page and "1,340 runs loaded" in page and "visible_analysis_code" in page
    for p in sorted((REPO / "notebooks").glob("*.ipynb")):
        cells = nbformat.read(str(p), as_version=4).cells
        i = next(k for k, c in enumerate(cells) if "parameters" in c.metadata.get("tags", []))
        setup = next(c for c in cells[i + 1:] if c.cell_type == "code")
        assert HIDE_INPUT_TAG in setup.metadata.get("tags", []) and "import" in setup.source, p.name


def test_a_notebook_of_one_campaign_runs_on_its_own_bundle_unless_given_that_campaign(tmp_path):
    """mpcc reproduce: metadata mpcc.campaign (notebook 13: "fidelity000") -> --data only when --data is that
    campaign, else the notebook's default_data; family notebooks keep their rule."""
    import json

    import nbformat

    from mpcc.commands.reproduce import _family_data

    repo = tmp_path / "repo"
    (repo / "notebooks").mkdir(parents=True)
    for name, camp in (("fidelity000", "fidelity000"), ("paper", "paper")):
        (repo / "data" / name / "runs").mkdir(parents=True)
        (repo / "data" / name / "campaign.json").write_text(json.dumps({"name": camp}))
    nb = nbformat.v4.new_notebook()
    nb.metadata["mpcc"] = {"family": "000", "campaign": "fidelity000", "default_data": "data/fidelity000"}
    p = repo / "notebooks" / "13_x.ipynb"
    nbformat.write(nb, str(p))
    own = (repo / "data" / "fidelity000").resolve()
    assert _family_data(p, repo / "data" / "paper", "000") == (own, "000")
    assert _family_data(p, own, "000") == (own, "000")
    nb.metadata["mpcc"] = {"family": "001", "default_data": "data/study001"}
    nbformat.write(nb, str(p))
    assert _family_data(p, repo / "data" / "paper", "000") == ((repo / "data" / "study001").resolve(), "001")
