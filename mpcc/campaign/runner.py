"""Run a campaign on a backend: randomised order with a recorded seed, progress bar, resumable.

Layout of ``OUT``::

    OUT/campaign.yaml      copy of the campaign file (a resumed run must use the same file)
    OUT/campaign.json      name, seed, backend, run order, start times
    OUT/runs/<run_id>/     one run directory each (see docs/architecture.md)

A run directory with ``COMPLETE`` or ``SKIPPED`` is never touched again. One without either marker is incomplete: it is
moved aside to ``<run_id>.incomplete-<UTC time>`` (never deleted) and the run is redone.
"""
from __future__ import annotations

import ctypes
import fcntl
import json
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from mpcc.campaign.spec import Campaign, Run
from mpcc.errors import UserError

REPO = Path(__file__).resolve().parents[2]
RUN_EXPERIMENT = Path(os.environ.get("MPCC_RUN_EXPERIMENT", REPO / "capture_tools" / "run_experiment.sh"))
# the vagrant backend runs the same capture steps on the VMs over ssh and copies the run directory back
RUN_EXPERIMENT_VAGRANT = Path(os.environ.get("MPCC_RUN_EXPERIMENT_VAGRANT",
                                             REPO / "testbed" / "vagrant" / "run_experiment.sh"))
BACKENDS = ("netns", "vagrant")
EXIT_SKIPPED = 3


def source_version() -> dict:
    """The git commit of the code that records the runs (provenance), and whether the work tree had changes."""
    try:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip() != ""
    except (OSError, subprocess.SubprocessError):
        return {"git_commit": None, "git_dirty": None}
    return {"git_commit": commit or None, "git_dirty": dirty if commit else None}


def experiment_script(backend: str) -> Path:
    """The capture tool that produces one run directory on ``backend``."""
    return RUN_EXPERIMENT_VAGRANT if backend == "vagrant" else RUN_EXPERIMENT


def run_status(run_dir: Path) -> str:
    """'complete', 'skipped', 'incomplete' (directory without a marker) or 'pending' (no directory)."""
    if (run_dir / "COMPLETE").exists():
        return "complete"
    if (run_dir / "SKIPPED").exists():
        return "skipped"
    return "incomplete" if run_dir.exists() else "pending"


def ordered_runs(campaign: Campaign, seed: int) -> list[Run]:
    """The campaign's runs in a random order drawn from ``seed`` (same seed, same order)."""
    runs = list(campaign.runs)
    random.Random(seed).shuffle(runs)
    return runs


def _die_with_parent():  # child gets SIGTERM (and its trap tears down) if the runner is SIGKILLed
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


@dataclass
class Outcome:
    complete: int = 0
    skipped: int = 0
    failed: int = 0
    already: int = 0


def _prepare_out(out: Path, campaign_file: Path, campaign: Campaign, backend: str, seed: int, order: list[Run]):
    out.mkdir(parents=True, exist_ok=True)
    (out / "runs").mkdir(exist_ok=True)
    text = campaign_file.read_text()
    copy = out / "campaign.yaml"
    if copy.exists() and copy.read_text() != text:
        raise UserError(f"{out} holds a different campaign ({copy}); use another --out directory")
    if not copy.exists():
        copy.write_text(text)
    meta_path = out / "campaign.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    if meta and (meta.get("seed") != seed or meta.get("backend") != backend):
        raise UserError(f"{out} was started with seed {meta.get('seed')} on backend {meta.get('backend')}; "
                        f"resume with the same --seed and --backend")
    meta.update({"name": campaign.name, "seed": seed, "backend": backend, "order": [r.run_id for r in order],
                 "n_runs": len(order)})
    meta.setdefault("sessions", []).append({"started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                            **source_version()})
    tmp = meta_path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(meta, indent=2))
    tmp.replace(meta_path)


def _run_one(run: Run, run_dir: Path, campaign: Campaign, backend: str, seed: int) -> str:
    status = run_status(run_dir)
    if status == "incomplete":
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        run_dir.rename(run_dir.with_name(f"{run_dir.name}.incomplete-{stamp}"))
    run_dir.mkdir()
    params = {**run.params(), "campaign": campaign.name, "seed": seed, "backend": backend}
    (run_dir / "params.json").write_text(json.dumps(params, indent=2))
    cmd = ["bash", str(experiment_script(backend)), "--backend", backend, "--out", str(run_dir), *run.args()]
    with open(run_dir / "runner.log", "w") as log:
        # own session: a terminal's Ctrl-C reaches only the runner, which forwards exactly ONE SIGINT (a second
        # signal could cut the capture tool's teardown short)
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                preexec_fn=_die_with_parent, start_new_session=True)
        try:
            rc = proc.wait()
        except KeyboardInterrupt:  # SIGINT or SIGTERM to the runner: the capture tool's trap tears down, then stop
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=90)
            except subprocess.TimeoutExpired:
                proc.kill()
            raise
    if rc == 0 and run_status(run_dir) == "complete":
        return "complete"
    if rc == EXIT_SKIPPED and run_status(run_dir) == "skipped":
        return "skipped"
    return "failed"


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def run_campaign(campaign: Campaign, campaign_file: Path, out: Path, backend: str, seed: int) -> Outcome:
    if backend not in BACKENDS:
        raise UserError(f"unknown backend {backend!r} (known: {', '.join(BACKENDS)})")
    if os.geteuid() != 0:
        raise UserError("running a campaign needs root (network namespaces, tc, nft); try --dry-run")
    if not experiment_script(backend).exists():
        raise UserError(f"missing {experiment_script(backend)}")
    order = ordered_runs(campaign, seed)
    _prepare_out(out, campaign_file, campaign, backend, seed, order)
    lock = open(out / ".campaign.lock", "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise UserError(f"another campaign runner is using {out}") from None
    # Ctrl-C works even when started in the background (shells start background jobs with SIGINT ignored), and
    # SIGTERM (kill, a scheduler) stops as cleanly as Ctrl-C: the current run is torn down and redone on resume
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    result = Outcome()
    todo = []
    for run in order:
        if run_status(out / "runs" / run.run_id) in ("complete", "skipped"):
            result.already += 1
        else:
            todo.append(run)
    failed_ids = []
    bar = tqdm(total=len(order), initial=result.already, unit="run", desc=campaign.name, file=sys.stderr,
               dynamic_ncols=True)
    try:
        for run in todo:
            bar.set_postfix_str(run.run_id[:60])
            outcome = _run_one(run, out / "runs" / run.run_id, campaign, backend, seed)
            setattr(result, outcome, getattr(result, outcome) + 1)
            if outcome == "failed":
                failed_ids.append(run.run_id)
            bar.update(1)
    finally:
        bar.close()
        lock.close()
    for rid in failed_ids:
        print(f"failed: {rid} (see {out / 'runs' / rid / 'runner.log'})", file=sys.stderr)
    return result
