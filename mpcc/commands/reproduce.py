"""``mpcc reproduce [--data DIR] [--out reports/]``: execute every notebook with papermill into ``--out``."""
from __future__ import annotations

import sys
from pathlib import Path

from mpcc.errors import UserError

NAME = "reproduce"
HELP = "execute every notebook in notebooks/ with papermill on a campaign directory (default data/sample)"
REPO = Path(__file__).resolve().parents[2]


def add_arguments(p):
    p.add_argument("--data", default="data/sample", help="campaign directory the notebooks analyse")
    p.add_argument("--out", default="reports", help="where executed notebooks, HTML and figures go")
    p.add_argument("--notebooks", default=str(REPO / "notebooks"), help="folder of the notebooks")


def run(args) -> int:
    nb_dir = Path(args.notebooks)
    notebooks = sorted(nb_dir.glob("*.ipynb")) if nb_dir.is_dir() else []
    if not notebooks:
        print(f"mpcc reproduce: no notebooks yet in {nb_dir} — nothing to execute", file=sys.stderr)
        return 0
    if not Path(args.data).is_dir():
        raise UserError(f"data directory not found: {args.data}")
    import papermill as pm
    from tqdm import tqdm

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    failed = []
    for nb in tqdm(notebooks, unit="notebook", file=sys.stderr):
        try:
            pm.execute_notebook(str(nb), str(out / nb.name), parameters={"campaign_dir": str(Path(args.data).resolve()),
                                                                          "output_dir": str(out.resolve())},
                                progress_bar=False, cwd=str(nb.parent))
        except Exception as exc:  # noqa: BLE001 - one failure must not hide the others
            failed.append(nb.name)
            print(f"mpcc reproduce: {nb.name} failed: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
                  file=sys.stderr)
    print(f"mpcc reproduce: {len(notebooks) - len(failed)} of {len(notebooks)} notebooks executed into {out}",
          file=sys.stderr)
    return 1 if failed else 0
