"""The reproduction report as a reader sees it: `mpcc reproduce` on the committed bundles (every notebook), then each
page opened in a real headless browser (Chromium, Debian's chromium-headless-shell; CI installs it). Every image of
the front page and of every notebook's HTML must load (decoded, non-zero width), every link to a notebook page or a
table must resolve, and the front page must have a section per study (000-004) with its verdict counts.

The browser reports what it rendered through the DOM it dumps: a copy of each page gets a script that, after the
load event, writes each image's source and natural width into an attribute of <body>."""
import html
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
N_BOOT = 199
BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")
PROBE = """<script>
window.addEventListener("load", function () {
  var imgs = Array.prototype.slice.call(document.images).map(function (i) {
    return [i.getAttribute("src").slice(0, 120), i.complete ? i.naturalWidth : -1];
  });
  var links = Array.prototype.slice.call(document.querySelectorAll("a[href]")).map(function (a) {
    return a.getAttribute("href");
  });
  document.body.setAttribute("data-probe", JSON.stringify({images: imgs, links: links,
                                                           sections: document.querySelectorAll("h2[id^=study]").length}));
});
</script>"""


def _browser() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("no Chromium found: apt-get install chromium-headless-shell (.ci/run installs it)")


def render(page: Path) -> dict:
    """Open ``page`` (a copy with the probe script) in headless Chromium; returns what the probe recorded."""
    probe = page.with_name(f".probe-{page.name}")
    text = page.read_text(encoding="utf-8")
    probe.write_text(text.replace("</body>", PROBE + "</body>") if "</body>" in text else text + PROBE,
                     encoding="utf-8")
    try:
        r = subprocess.run([_browser(), "--headless", "--no-sandbox", "--disable-gpu", "--allow-file-access-from-files",
                            "--virtual-time-budget=20000", "--dump-dom", probe.resolve().as_uri()],
                           capture_output=True, text=True, timeout=180)
    finally:
        probe.unlink()
    m = re.search(r'data-probe="([^"]*)"', r.stdout)
    assert m, f"{page.name}: the browser rendered no probe (exit {r.returncode}): {r.stderr[-800:]}"
    return json.loads(html.unescape(m.group(1)))


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    r = subprocess.run([sys.executable, "-m", "mpcc.cli", "reproduce", "--out", str(out), "--n-boot", str(N_BOOT)],
                       cwd=REPO, capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stderr[-3000:]
    return out, r.stderr


def test_reproduce_log_is_quiet_and_names_report_and_data(report):
    out, log = report
    assert "KeyboardInterrupt" not in log and "without encryption" not in log, log[-3000:]
    assert f"report: {out / 'index.html'}" in log
    for sid in ("000", "001", "002", "003", "004"):
        assert f"study {sid} data/" in log
    assert "study 000 data/paper" in log          # the paper protocol by default


def test_front_page_renders_every_figure_and_section(report):
    out, _ = report
    seen = render(out / "index.html")
    assert seen["sections"] == 5
    assert seen["images"], "the front page shows no figure"
    broken = [src for src, width in seen["images"] if width <= 0]
    assert not broken, f"figures that did not load: {broken}"
    for href in seen["links"]:
        if href.startswith("#") or "://" in href:
            continue
        assert (out / href).is_file(), f"broken link on the front page: {href}"
    page = (out / "index.html").read_text()
    for sid in ("000", "001", "002", "003", "004"):
        section = page.split(f'<h2 id="study{sid}">')[1].split("<h2 ")[0]
        assert re.search(r"<b>Verdicts</b> \(\d+ headline claims\): \d+ reproduced, \d+ not reproduced, "
                         r"\d+ inconclusive, \d+ not comparable, \d+ not run\.", section), sid


def test_every_notebook_page_renders_its_figures(report):
    out, _ = report
    pages = sorted(out.glob("[0-9][0-9]_*.html"))
    assert len(pages) == len(list((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb")))
    for page in pages:
        seen = render(page)
        broken = [src for src, width in seen["images"] if width <= 0]
        assert not broken, f"{page.name}: images that did not load: {broken}"
        cells = re.findall(r"<td>([^<]*)</td>", page.read_text(encoding="utf-8"))
        sci = [c for c in cells if re.fullmatch(r"\s*-?\d+(\.\d+)?e[+-]\d+\s*", c)]
        assert not sci, f"{page.name}: table cells in scientific notation: {sci[:5]}"
        cut = [c for c in cells if c.rstrip().endswith("...")]
        assert not cut, f"{page.name}: table cells cut short: {cut[:3]}"
