"""Make a study's paper-protocol bundle its main dataset (issue 29): ``python tools/promote_bundle.py 003`` renames
data/study003 (the reduced sample) to data/study003-sample, labelled as such, and the complete data/study003-paper
to data/study003; the recording queue's entry then names data/study003. Both with ``git mv`` where tracked (nothing is
deleted or overwritten; nothing is committed). Then: ``python tools/make_family_notebooks.py NN`` (the notebook's
compare_dir becomes the sample), ``mpcc reproduce --inplace --only 'NN_*'`` and nbval.

Refused (one line, exit 2) unless the paper bundle holds every run of its campaign (complete or skipped) and
data/study00N-sample does not exist yet."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from analysis.bundle_store import finished_and_planned  # noqa: E402
LABEL = ("**The reduced sample** of this study, recorded before its paper protocol (fewer repetitions or levels, "
         "shorter runs: see the campaign file). The study's main dataset is `{main}`, the paper protocol in full; "
         "notebook {nb} shows the verdicts of both side by side. Kept because the data budget allows.\n")
NOTEBOOK = {"001": "09", "003": "10", "004": "11", "002": "12"}


def die(msg: str) -> None:
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(2)


def tracked(root: Path, path: Path) -> bool:
    r = subprocess.run(["git", "ls-files", "--error-unmatch", str(path.relative_to(root))], cwd=root,
                       capture_output=True)
    return r.returncode == 0


def move(root: Path, src: Path, dst: Path) -> None:
    if tracked(root, src):
        subprocess.run(["git", "mv", str(src.relative_to(root)), str(dst.relative_to(root))], cwd=root, check=True)
    else:
        src.rename(dst)


def renamed(text: str, old: str, new: str) -> str:
    """``text`` with the path ``old`` (not followed by more of a path name) replaced by ``new``."""
    return re.sub(re.escape(old) + r"(?![\w-])", new, text)


def relabel(bundle: Path, old: str, new: str, label: str | None = None) -> None:
    """The bundle's bundle.json ``bundle_dir`` and README paths from ``old`` to ``new``; ``label`` under the title."""
    m = json.loads((bundle / "bundle.json").read_text())
    if m.get("bundle_dir") == old:
        m["bundle_dir"] = new
    (bundle / "bundle.json").write_text(json.dumps(m, indent=1, sort_keys=True))   # as mpcc bundle writes it
    readme = bundle / "README.md"
    text = renamed(readme.read_text(), old, new)
    if label:
        head, _, rest = text.partition("\n\n")
        text = f"{head}\n\n{label}\n{rest}"
    readme.write_text(text)


def main(argv: list[str]) -> int:
    root = REPO
    if len(argv) == 3 and argv[1] == "--root":      # a checkout other than this one (tests)
        root = Path(argv[2]).resolve()
        argv = argv[:1]
    if len(argv) != 1 or argv[0] not in NOTEBOOK:
        die(f"usage: python tools/promote_bundle.py STUDY [--root CHECKOUT] (STUDY one of "
            f"{', '.join(sorted(NOTEBOOK))})")
    n = argv[0]
    queue = root / "campaigns" / "recording-queue.tsv"
    main_dir, paper, sample = (root / "data" / f"study{n}{s}" for s in ("", "-paper", "-sample"))
    if sample.exists():
        die(f"data/study{n}-sample exists already: study {n} was promoted before")
    if not (paper / "bundle.json").is_file():
        die(f"data/study{n}-paper: no bundle (tools/record_queue.sh bundle ...)")
    done, planned = finished_and_planned(paper)
    if not planned or done < planned:
        die(f"data/study{n}-paper holds {done} of its campaign's {planned} runs: record the rest first")
    if main_dir.exists():
        move(root, main_dir, sample)
        relabel(sample, f"data/study{n}", f"data/study{n}-sample",
                LABEL.format(main=f"data/study{n}", nb=f"notebooks/{NOTEBOOK[n]}"))
    move(root, paper, main_dir)
    relabel(main_dir, f"data/study{n}-paper", f"data/study{n}")
    if queue.is_file():
        queue.write_text(queue.read_text().replace(f"\tdata/study{n}-paper\t", f"\tdata/study{n}\t"))
    for p in (main_dir, sample, queue):
        if p.exists():
            subprocess.run(["git", "add", str(p.relative_to(root))], cwd=root, check=True)
    print(f"data/study{n}: the paper protocol ({done} runs); data/study{n}-sample: the reduced sample. Next: python "
          f"tools/make_family_notebooks.py {NOTEBOOK[n]}; mpcc reproduce --inplace --only '{NOTEBOOK[n]}_*'; nbval")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
