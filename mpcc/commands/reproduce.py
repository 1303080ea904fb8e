"""``mpcc reproduce [--data DIR] [--out reports/]``: execute every notebook on a campaign directory.

Each notebook in ``notebooks/`` is executed with papermill (its ``parameters`` cell gets campaign_dir, output_dir,
alpha, n_boot, derived_dir) into ``OUT/<name>.ipynb``, exported to ``OUT/<name>.html``; the notebooks write their
figures to ``OUT/figures/*.png`` and tables to ``OUT/tables/*.csv``. ``OUT/index.html`` is the report's front page
(``mpcc.report_index``: a section per study with its dataset, verdict counts, key figures and links) and
``OUT/reproduce.json`` records per-notebook status and seconds. One failing notebook does not stop the others; the
exit status is 1 if any failed.

A notebook of another study family (metadata ``mpcc.family``, e.g. "001") runs on ``--data`` when that campaign is
of its family, else on its own bundled campaign (metadata ``mpcc.default_data``, e.g. data/study001); a notebook of
one campaign (metadata ``mpcc.campaign``, e.g. notebook 13 of study 000's fidelity ablation, "fidelity000") runs on
``--data`` only when that is the campaign it names, else on its own bundle: `make
reproduce` reproduces study 000 on data/paper (the paper protocol, 1,340 runs of 100 s) and studies 001-004 on
their bundles.

``--inplace`` re-executes the committed notebooks in ``notebooks/`` themselves, unparameterised (they default to
``../data/sample``), so their stored outputs match what nbval re-computes in CI.

The kernel is the ``python3`` kernel of the environment running this command (in a virtual environment such as the
Makefile's ``.venv``, Jupyter prefers the environment's own kernel spec, whose ``python`` is this interpreter), and
its transport is CurveZMQ-encrypted where jupyter_client offers that: ipykernel otherwise prints a "Kernel is running
over TCP without encryption" warning at every notebook. The kernel logs only critical messages (KERNEL_ARGS):
jupyter_client interrupts every kernel (SIGINT) before asking it to shut down, and ipykernel logs that as "ERROR |
KeyboardInterrupt caught in kernel" after notebooks that succeeded; a cell's real error is in the notebook's outputs
and in this command's status line, not in the kernel's log.
"""
from __future__ import annotations

import fnmatch
import json
import os
import sys
import time
from pathlib import Path

from mpcc.errors import UserError

NAME = "reproduce"
HELP = ("execute every notebook in notebooks/ (study 000 on --data, default data/paper; the other studies on their "
        "bundles): notebooks, HTML, figures, and the report's front page index.html")
REPO = Path(__file__).resolve().parents[2]


def add_arguments(p):
    p.add_argument("--data", default=None, help="campaign directory the notebooks analyse (default data/paper, the "
                   "paper protocol; data/sample with --inplace); another study's campaign is used for its notebooks")
    p.add_argument("--out", default="reports", help="where executed notebooks, HTML, figures/ and tables/ go (default reports)")
    p.add_argument("--notebooks", default=str(REPO / "notebooks"), help="folder of the notebooks")
    p.add_argument("--only", action="append", metavar="GLOB",
                   help="execute only notebooks whose file name matches (repeatable), e.g. --only '0[1-3]*'")
    p.add_argument("--derived-dir", default=None,
                   help="keep the per-run analysis cache here instead of inside the run directories (read-only data)")
    p.add_argument("--alpha", type=float, default=0.05, help="1 - confidence level (default 0.05)")
    p.add_argument("--n-boot", type=int, default=9999, help="bootstrap resamples (default 9999)")
    p.add_argument("--timeout", type=int, default=1800, help="seconds one cell may run (default 1800)")
    p.add_argument("--no-html", action="store_true", help="skip the HTML export")
    p.add_argument("--inplace", action="store_true",
                   help="re-execute notebooks/ in place on data/sample (refreshes the outputs nbval checks)")


KERNEL_ARGS = ["--IPKernelApp.log_level=CRITICAL"]


def _kernel_config():
    """Config for the kernel manager: transport encryption ``auto`` (CurveZMQ keys for kernels whose spec declares
    support in metadata.supported_encryption, as ipykernel 7.4 does) when this jupyter_client has that setting and
    pyzmq has CURVE; else none."""
    import zmq
    from jupyter_client.manager import KernelManager
    from traitlets.config import Config

    cfg = Config()
    if KernelManager.class_traits().get("transport_encryption") is not None and zmq.has("curve"):
        cfg.KernelManager.transport_encryption = "auto"
    return cfg


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    for line in text.splitlines():
        line = line.strip()
        if line and not set(line) <= set("-="):
            return line[:300]
    return type(exc).__name__


def _error_of(nb) -> str:
    """The first error output of an executed notebook ("" if none)."""
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                return f"{out.get('ename', 'Error')}: {out.get('evalue', '')}"[:300]
    return ""


def _select(nb_dir: Path, only) -> list[Path]:
    notebooks = sorted(p for p in nb_dir.glob("*.ipynb") if not p.name.startswith("."))
    if only:
        notebooks = [p for p in notebooks if any(fnmatch.fnmatch(p.name, g) for g in only)]
    return notebooks


def _family_data(nb_path: Path, data: Path, data_family: str) -> tuple[Path, str]:
    """(campaign directory, family) a notebook runs on: ``data`` when the notebook is of ``data``'s family (or
    declares none), else the notebook's own default bundle (metadata mpcc.default_data, relative to the repo)."""
    import nbformat

    meta = (nbformat.read(str(nb_path), as_version=4).metadata.get("mpcc") or {})
    fam = str(meta.get("family", "000"))
    own = (nb_path.resolve().parent.parent / meta["default_data"]).resolve() if meta.get("default_data") else None
    if meta.get("campaign"):   # a notebook of one campaign (e.g. fidelity000): --data only when it is that campaign
        from analysis.dataset import campaign_name
        return (data if campaign_name(data) == meta["campaign"] or own is None else own), fam
    if fam == data_family or own is None:
        return data, fam
    return own, fam


def _first_family(data: Path) -> str:
    from analysis.dataset import campaign_family_id
    return campaign_family_id(data)


HIDE_INPUT_TAG = "hide-input"   # cells whose code the HTML report leaves out (set-up: imports, paths); output kept


def _export_html(nb_path: Path, html_path: Path) -> None:
    """The executed notebook as HTML, without the input of cells tagged HIDE_INPUT_TAG (the notebook keeps it)."""
    import nbformat
    from nbconvert import HTMLExporter
    from traitlets.config import Config

    cfg = Config()
    cfg.TagRemovePreprocessor.enabled = True
    cfg.TagRemovePreprocessor.remove_input_tags = {HIDE_INPUT_TAG}
    body, _ = HTMLExporter(config=cfg).from_notebook_node(nbformat.read(str(nb_path), as_version=4))
    html_path.write_text(body, encoding="utf-8")


def _run_inplace(notebooks, timeout, bar) -> list[dict]:
    import nbformat
    from nbclient import NotebookClient

    results = []
    for nb_path in bar(notebooks):
        t0 = time.monotonic()
        nb = nbformat.read(str(nb_path), as_version=4)
        err = ""
        try:
            NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False, config=_kernel_config(),
                           extra_arguments=KERNEL_ARGS, resources={"metadata": {"path": str(nb_path.parent)}}).execute()
        except Exception as exc:  # noqa: BLE001 - one failure must not hide the others
            err = _error_of(nb) or _first_line(exc)
        if not err:  # never overwrite a committed notebook with a failed execution
            for cell in nb.cells:
                cell.metadata.pop("execution", None)
            nbformat.write(nb, str(nb_path))
        results.append({"notebook": nb_path.name, "status": "failed" if err else "ok",
                        "seconds": time.monotonic() - t0, "error": err})
    return results


def run(args) -> int:
    from tqdm import tqdm

    nb_dir = Path(args.notebooks)
    if not nb_dir.is_dir():
        raise UserError(f"notebook folder not found: {nb_dir}")
    notebooks = _select(nb_dir, args.only)
    if not notebooks:
        raise UserError(f"no notebooks match in {nb_dir}" if args.only else f"no notebooks in {nb_dir}")
    if not 0 < args.alpha < 1:
        raise UserError(f"--alpha must be between 0 and 1, got {args.alpha}")
    if args.n_boot < 100:
        raise UserError(f"--n-boot must be at least 100, got {args.n_boot}")
    if args.timeout < 1:
        raise UserError(f"--timeout must be positive, got {args.timeout}")
    if args.data is None:
        # --inplace: the notebooks' own default (<notebooks>/../data/sample, what nbval re-computes); otherwise study
        # 000's most complete bundle, the paper protocol (data/paper), where the checkout has it
        root = nb_dir.resolve().parent / "data"
        args.data = str(root / ("paper" if not args.inplace and (root / "paper" / "bundle.json").is_file() else "sample"))
    data = Path(args.data).resolve()
    if not (data / "runs").is_dir():
        raise UserError(f"not a campaign directory (no runs/ inside): {args.data}")

    def bar(items):
        return tqdm(items, unit="notebook", file=sys.stderr, desc="reproduce")

    # kernels inherit the environment: make this checkout's analysis/ importable even without `pip install -e .`
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(REPO) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO), *paths])

    if args.inplace:
        expected = (nb_dir.resolve().parent / "data" / "sample").resolve()
        if data != expected:
            raise UserError(f"--inplace executes the notebooks on their default campaign_dir ({expected}); "
                            f"--data {args.data} differs: drop --data")
        results = _run_inplace(notebooks, args.timeout, bar)
        failed = [r for r in results if r["status"] != "ok"]
        for r in failed:
            print(f"mpcc reproduce: {r['notebook']} failed (left unchanged): {r['error']}", file=sys.stderr)
        print(f"mpcc reproduce: {len(results) - len(failed)} of {len(results)} notebooks refreshed in place in {nb_dir}",
              file=sys.stderr)
        return 1 if failed else 0

    import nbformat
    import papermill as pm

    out = Path(args.out).resolve()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create --out {args.out}: {exc.strerror}") from None
    params = {"campaign_dir": str(data), "output_dir": str(out), "alpha": float(args.alpha), "n_boot": int(args.n_boot),
              "derived_dir": str(Path(args.derived_dir).resolve()) if args.derived_dir else None}
    results = []
    data_family = _first_family(data)
    for nb in bar(notebooks):
        t0 = time.monotonic()
        target = out / nb.name
        err = ""
        nb_data, nb_family = _family_data(nb, data, data_family)
        nb_params = {**params, "campaign_dir": str(nb_data)}
        try:
            if not (nb_data / "runs").is_dir():
                raise UserError(f"study {nb_family}: no campaign at {nb_data} (bundle one with mpcc bundle)")
            pm.execute_notebook(str(nb), str(target), parameters=nb_params, progress_bar=False, cwd=str(nb.parent),
                                kernel_name="python3", execution_timeout=args.timeout, config=_kernel_config(),
                                extra_arguments=KERNEL_ARGS)
        except Exception as exc:  # noqa: BLE001 - one failure must not hide the others
            err = ""
            if target.is_file():
                try:
                    err = _error_of(nbformat.read(str(target), as_version=4))
                except Exception:  # noqa: BLE001
                    err = ""
            err = err or _first_line(exc)
        rec = {"notebook": nb.name, "status": "failed" if err else "ok", "seconds": time.monotonic() - t0,
               "error": err, "ipynb": nb.name if target.is_file() else "", "family": nb_family,
               "campaign_dir": str(nb_data)}
        if not args.no_html and target.is_file():
            try:
                _export_html(target, out / f"{nb.stem}.html")
                rec["html"] = f"{nb.stem}.html"
            except Exception as exc:  # noqa: BLE001
                rec["html_error"] = _first_line(exc)
        if err:
            print(f"mpcc reproduce: {nb.name} failed: {err}", file=sys.stderr)
        results.append(rec)
    from mpcc.report_env import environment
    env = environment(REPO)
    (out / "reproduce.json").write_text(json.dumps({"campaign_dir": str(data), "parameters": params,
                                                    "environment": env, "notebooks": results}, indent=1))
    from mpcc.report_index import write as write_index
    shown = write_index(out, results, REPO, alpha=float(args.alpha), n_boot=int(args.n_boot),
                        derived_dir=params["derived_dir"], environment=env)
    failed = [r for r in results if r["status"] != "ok"]
    total = sum(r["seconds"] for r in results)
    used = "; ".join(f"study {sid} {v['data']}" for sid, v in shown.items()) or str(data)
    print(f"mpcc reproduce: {len(results) - len(failed)} of {len(results)} notebooks executed into {out} "
          f"({total:.0f} s){'; failed: ' + ', '.join(r['notebook'] for r in failed) if failed else ''}\n"
          f"mpcc reproduce: report: {out / 'index.html'} (data: {used})", file=sys.stderr)
    return 1 if failed else 0
