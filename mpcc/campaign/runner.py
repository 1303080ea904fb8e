"""Run a campaign on a backend: randomised order with a recorded seed, progress bar, resumable.

Layout of ``OUT``::

    OUT/campaign.yaml      copy of the campaign file (a resumed run must use the same file)
    OUT/campaign.json      name, seed, backend, run order, sessions (start time, runs at once, git commit; on a
                           dask cluster also the scheduler and every worker: address, host, kernel, slots)
    OUT/runs/<run_id>/     one run directory each (see docs/architecture.md)

A run directory with ``COMPLETE`` or ``SKIPPED`` is never touched again. ``resume_from`` (a bundle of the same
campaign made by ``mpcc bundle``, e.g. data/paper) copies its finished runs into ``OUT`` first, so a campaign that takes
longer than one machine's life resumes on another machine from what was bundled and committed. One without either marker is incomplete: it is
moved aside to ``<run_id>.incomplete-<UTC time>`` (never deleted) and the run is redone.

``jobs > 1`` (netns backend only) runs that many runs at once, each worker on its own testbed (namespace prefix
``$MPCC_NS_PREFIX<k>-``). The runs are independent (separate namespaces, links, queues and shims); each run's
``meta.json`` records the host's CPU contention while its flows ran (``host_load``), and ``campaign.json`` records the
number of workers per session.

Before each run the free space of ``OUT``'s file system is checked against a floor (``mpcc.campaign.room``): below
it no further run starts, the runs in flight finish, and the outcome says why (``Outcome.stopped``).

``scheduler`` (``--scheduler tcp://HOST:PORT``) records the runs on the hosts of a dask.distributed cluster instead,
each worker on its own slots, and lands every finished run directory here (``mpcc.campaign.distributed``,
docs/multi-host.md); the order, resume and markers are the same. Each run's ``runner.log`` starts with the host and
kernel that recorded it (``meta.json`` ``host`` and ``kernel`` say it too).
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
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from analysis.runmeta import iperf3_errors
from mpcc.campaign.room import Room
from mpcc.campaign.spec import Campaign, Run
from mpcc.errors import UserError
from mpcc.families import get_family

REPO = Path(__file__).resolve().parents[2]
BACKENDS = ("netns", "vagrant")
EXIT_SKIPPED = 3
EXIT_NO_ROOM = 4   # mpcc campaign run: stopped before the output's file system filled (mpcc.campaign.room)
CCCTL = REPO / "testbed" / "cc" / "ccctl.sh"


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


def experiment_script(backend: str, family: str = "000") -> Path:
    """The capture tool that produces one run directory of ``family`` on ``backend`` (the family's module says)."""
    return get_family(family).capture_tool(backend)


def run_status(run_dir: Path) -> str:
    """'complete', 'skipped', 'incomplete' (directory without a marker) or 'pending' (no directory)."""
    if (run_dir / "COMPLETE").exists():
        return "complete"
    if (run_dir / "SKIPPED").exists():
        return "skipped"
    return "incomplete" if run_dir.exists() else "pending"


def cc_gc() -> None:
    """Unregister the BPF congestion controls that no live run holds (testbed/cc/ccctl.sh gc): a campaign starts and
    ends with none of ours left registered, also after a SIGKILL of an earlier runner."""
    try:
        subprocess.run(["bash", str(CCCTL), "gc"], stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        print(f"runner: ccctl.sh gc: {e}", file=sys.stderr)


def supersede(out: Path, runs: list[Run], why: str, keep) -> int:
    """Move the run directories of ``runs`` for which ``keep(run_dir)`` is false aside as
    ``<run_id>.incomplete-<UTC>-<why>`` (superseded, never deleted; docs/architecture.md) so that the campaign
    records them again. Returns how many were moved."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    moved = 0
    for run in runs:
        d = out / "runs" / run.run_id
        if d.exists() and not keep(d):
            d.rename(d.with_name(f"{d.name}.incomplete-{stamp}-{why}"))
            moved += 1
    return moved


def host_pressure_pct(run_dir: Path) -> float | None:
    """The host CPU contention a run was recorded under (meta.json host_load.cpu_pressure_some_pct, %), or None."""
    try:
        v = json.loads((run_dir / "meta.json").read_text())["host_load"]["cpu_pressure_some_pct"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return float(v) if isinstance(v, (int, float)) else None


def reuse_path(campaign: Campaign) -> Path:
    """The bundle named by the campaign's ``reuse_runs_from`` (relative to the repository) as a path."""
    return REPO / campaign.reuse_from


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


def _ns_prefix(worker: int | None) -> str:
    base = os.environ.get("MPCC_NS_PREFIX", "mpcc-")
    return base if worker is None else f"{base}{worker}-"


@dataclass
class Outcome:
    complete: int = 0
    skipped: int = 0
    failed: int = 0
    already: int = 0
    stopped: str | None = None   # why no further run was started (mpcc.campaign.room), or None
    left: int = 0                # runs not started because of it


def _prepare_out(out: Path, campaign_file: Path, campaign: Campaign, backend: str, seed: int, order: list[Run],
                 jobs: int = 1, session: dict | None = None):
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
    if meta and meta.get("name") not in (None, campaign.name):
        raise UserError(f"{out} holds campaign {meta.get('name')!r}, not {campaign.name!r} (another profile?); "
                        f"use another --out directory")
    if meta and (meta.get("seed") != seed or meta.get("backend") != backend):
        raise UserError(f"{out} was started with seed {meta.get('seed')} on backend {meta.get('backend')}; "
                        f"resume with the same --seed and --backend")
    meta.update({"name": campaign.name, "seed": seed, "backend": backend, "order": [r.run_id for r in order],
                 "n_runs": len(order)})
    meta.setdefault("sessions", []).append({"started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                            "jobs": jobs, **source_version(), **(session or {})})
    tmp = meta_path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(meta, indent=2))
    tmp.replace(meta_path)


def restore_from_bundle(bundle: Path, out: Path, campaign_file: Path, campaign: Campaign, backend: str,
                        seed: int, *, reuse: bool = False) -> int:
    """Copy the finished runs (``COMPLETE`` or ``SKIPPED``) of a bundle of this campaign into ``out`` where ``out``
    has no directory for them yet (nothing in ``out`` is replaced), and merge the bundle's recording sessions, and
    the incomplete runs it left out (``incomplete_runs_restored``, so that a bundle of ``out`` still lists them),
    into ``out/campaign.json``. Checks that the bundle holds the same campaign file, seed and backend. A columnar
    bundle's runs are materialised first (``analysis.bundle_store.materialize``, in ``out``). Returns the number of
    runs copied.

    ``reuse``: the bundle holds another campaign whose runs this one repeats (the campaign file's
    ``reuse_runs_from``, e.g. a paper protocol whose repetitions an extended campaign adds to). Instead of the same
    campaign file, every run copied must have been recorded with the parameters this campaign gives it, its
    ``campaign`` name aside (which keeps naming the campaign that recorded it): one that differs is a one-line error
    and nothing is copied. Its sessions are merged with ``campaign`` naming that campaign; its name, order and
    incomplete runs are not this campaign's and are left out."""
    import shutil

    from analysis.bundle_store import bundle_format
    from analysis.errors import AnalysisError
    what = "reuse_runs_from" if reuse else "--resume-from"
    try:
        columnar = bundle_format(bundle) is not None
    except AnalysisError as exc:
        raise UserError(f"{what} {exc}") from None
    if not (bundle / "bundle.json").is_file() or not (bundle / "runs").is_dir():
        raise UserError(f"{what} {bundle}: not a bundle (no bundle.json and runs/; made by mpcc bundle)")
    if not reuse and (not (bundle / "campaign.yaml").is_file()
                      or (bundle / "campaign.yaml").read_text() != campaign_file.read_text()):
        raise UserError(f"--resume-from {bundle}: its campaign.yaml differs from {campaign_file}")
    try:
        bmeta = json.loads((bundle / "campaign.json").read_text())
    except (OSError, ValueError):
        raise UserError(f"{what} {bundle}: no readable campaign.json") from None
    if (not reuse and bmeta.get("name") != campaign.name) or bmeta.get("seed") != seed or \
            bmeta.get("backend") != backend:
        raise UserError(f"{what} {bundle}: it holds campaign {bmeta.get('name')!r}, seed {bmeta.get('seed')}, "
                        f"backend {bmeta.get('backend')}; this is {campaign.name!r}, seed {seed}, backend {backend}")
    (out / "runs").mkdir(parents=True, exist_ok=True)
    wanted = {r.run_id for r in campaign.runs}
    planned = {r.run_id: r for r in campaign.runs} if reuse else None
    stage = out / f".restore-{os.getpid()}" if columnar else None
    try:
        copied = _restore_runs(bundle, stage, out, wanted,
                               (lambda d: _same_run(d, planned[d.name], seed, backend, bundle)) if reuse else None)
    finally:
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)
    meta_path = out / "campaign.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    have = {json.dumps(x, sort_keys=True) for x in meta.get("sessions", [])}
    theirs = [{**x, "campaign": bmeta.get("name")} if reuse else x for x in bmeta.get("sessions", [])]
    merged = [x for x in theirs if json.dumps(x, sort_keys=True) not in have]
    merged += meta.get("sessions", [])
    merged.sort(key=lambda x: str(x.get("started_utc", "")))
    if not reuse:
        meta.update({k: bmeta[k] for k in ("name", "seed", "backend") if k in bmeta})
        for k in ("order", "n_runs"):
            if k in bmeta:
                meta.setdefault(k, bmeta[k])
    meta["sessions"] = merged
    try:
        left_out = [] if reuse else json.loads((bundle / "bundle.json").read_text()).get("incomplete_runs", [])
    except (OSError, ValueError):
        left_out = []
    left_out = set(left_out) | set(meta.get("incomplete_runs_restored", []))
    if left_out:
        meta["incomplete_runs_restored"] = sorted(left_out)
    tmpj = meta_path.with_suffix(".json.tmp")
    tmpj.write_text(json.dumps(meta, indent=2))
    tmpj.replace(meta_path)
    if not (out / "campaign.yaml").exists():
        (out / "campaign.yaml").write_text(campaign_file.read_text())
    return copied


def recorded_on() -> dict:
    """The host recording runs here: ``host`` (the node name, ``uname -n``) and ``kernel`` (``uname -r``)."""
    u = os.uname()
    return {"host": u.nodename, "kernel": u.release}


def _run_one(run: Run, run_dir: Path, campaign: Campaign, backend: str, seed: int, worker: int | None = None,
             procs: dict | None = None, *, prefix: str | None = None, pass_fds: tuple = (), stop=None,
             where: str = "") -> str:
    """Record ``run`` into ``run_dir`` with the family's capture tool; 'complete', 'skipped' or 'failed'.
    ``worker``: the slot of ``--jobs`` (namespace prefix ``$MPCC_NS_PREFIX<worker>-``); ``prefix``: the namespace
    prefix itself (a dask worker's slot, ``mpcc.campaign.distributed``); ``pass_fds``: descriptors the capture tool
    inherits (the slot's lock, held until its teardown is over); ``stop``: polled once a second, true = the result is
    no longer wanted: the capture tool gets one SIGINT (its trap tears down) and the run is 'interrupted'."""
    status = run_status(run_dir)
    if status == "incomplete":
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        run_dir.rename(run_dir.with_name(f"{run_dir.name}.incomplete-{stamp}"))
    run_dir.mkdir()
    params = {**run.params(), "campaign": campaign.name, "seed": seed, "backend": backend}
    (run_dir / "params.json").write_text(json.dumps(params, indent=2))
    cmd = ["bash", str(experiment_script(backend, run.family)), "--backend", backend, "--out", str(run_dir),
           *run.args()]
    ns_prefix = prefix if prefix is not None else _ns_prefix(worker)
    env = {**os.environ, "MPCC_NS_PREFIX": ns_prefix}
    me = recorded_on()
    with open(run_dir / "runner.log", "w") as log:
        # which host recorded the run (skipped runs have no meta.json to say it)
        log.write(f"runner: recording on host {me['host']} (kernel {me['kernel']}), namespaces {ns_prefix}*"
                  f"{where}\n")
        log.flush()
        # own session: a terminal's Ctrl-C reaches only the runner, which forwards exactly ONE SIGINT (a second
        # signal could cut the capture tool's teardown short)
        if worker is None and prefix is None:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                    preexec_fn=_die_with_parent, start_new_session=True)
        else:  # worker thread: preexec_fn is unsafe with threads; setpriv sets the parent-death signal instead
            proc = subprocess.Popen(["setpriv", "--pdeathsig", "TERM", *cmd], stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, env=env, start_new_session=True, pass_fds=pass_fds)
            if procs is not None:
                procs[worker] = proc
        try:
            rc = _wait(proc, stop)
        except KeyboardInterrupt:  # SIGINT or SIGTERM to the runner: the capture tool's trap tears down, then stop
            _stop_tool(proc)
            raise
    if rc is None:
        return "interrupted"
    if rc == 0 and run_status(run_dir) == "complete":
        return "complete"
    if rc == EXIT_SKIPPED and run_status(run_dir) == "skipped":
        return "skipped"
    return "failed"


def _stop_tool(proc) -> None:
    """One SIGINT to a capture tool (its trap tears down), SIGKILL if it has not ended after 90 s."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=90)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _wait(proc, stop) -> int | None:
    """The capture tool's exit status; None when ``stop()`` became true first (the tool was stopped)."""
    if stop is None:
        return proc.wait()
    while True:
        try:
            return proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            pass
        if stop():
            _stop_tool(proc)
            return None


def _run_parallel(todo, out, campaign, backend, seed, jobs, bar, result, failed_ids, room=None):
    """``jobs`` worker threads take runs from one queue in the campaign's order. On SIGINT/SIGTERM the main thread
    stops handing out runs, sends each running capture tool exactly one SIGINT (its trap tears down) and waits.
    ``room`` (``mpcc.campaign.room.Room``): checked before each run is taken; short of room, no worker takes another
    and the runs in flight finish."""
    queue = list(reversed(todo))
    guard = threading.Lock()
    stop = threading.Event()
    procs: dict = {}

    def worker(k: int):
        while not stop.is_set():
            with guard:
                if not queue or result.stopped is not None:
                    return
                short = room.shortfall() if room is not None else None
                if short is not None:
                    result.stopped, result.left = short, len(queue)
                    return
                run = queue.pop()
            try:
                outcome = _run_one(run, out / "runs" / run.run_id, campaign, backend, seed, worker=k, procs=procs)
            except Exception as e:  # noqa: BLE001 - reported as a failed run, never lost
                print(f"runner: {run.run_id}: {e}", file=sys.stderr)
                outcome = "failed"
            with guard:
                if stop.is_set() and outcome == "failed":
                    return  # interrupted: the incomplete directory is redone on resume
                setattr(result, outcome, getattr(result, outcome) + 1)
                if outcome == "failed":
                    failed_ids.append(run.run_id)
                if room is not None:
                    room.seen(out / "runs" / run.run_id)
                bar.set_postfix_str(run.run_id[:60])
                bar.update(1)

    threads = [threading.Thread(target=worker, args=(k,), name=f"run-worker-{k}") for k in range(1, jobs + 1)]
    for t in threads:
        t.start()
    try:
        while any(t.is_alive() for t in threads):
            for t in threads:
                t.join(timeout=0.2)
    except KeyboardInterrupt:
        stop.set()
        for p in list(procs.values()):
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        for t in threads:
            t.join(timeout=120)
        raise


def _restore_runs(bundle: Path, stage: Path | None, out: Path, wanted: set, check=None) -> int:
    """Copy the finished runs of ``wanted`` that ``out`` lacks from the bundle's run directories (a columnar bundle's:
    materialised into ``stage`` first) into ``out/runs/``; returns how many. ``check(run_dir)``: called on every run
    to copy before any is copied (it raises UserError to refuse them all)."""
    import shutil

    def missing(rid):
        return not ((out / "runs" / rid).exists() or (out / "runs" / rid).is_symlink())
    src = bundle / "runs"
    if stage is not None:
        from analysis.bundle_store import materialize
        materialize(bundle, stage, sorted(r for r in wanted if missing(r)))
        src = stage / "runs"
    todo = [d for d in (sorted(src.iterdir()) if src.is_dir() else [])
            if d.is_dir() and d.name in wanted and missing(d.name) and run_status(d) in ("complete", "skipped")]
    for d in todo if check is not None else ():
        check(d)
    copied = 0
    for d in todo:
        dst = out / "runs" / d.name
        tmp = dst.with_name(f".{d.name}.restore-{os.getpid()}")
        shutil.copytree(d, tmp)
        tmp.rename(dst)
        copied += 1
    return copied


def _same_run(run_dir: Path, run: Run, seed: int, backend: str, bundle: Path) -> None:
    """UserError unless the bundle's run ``run_dir`` was recorded with the parameters this campaign gives ``run``
    (``params.json`` as :func:`_run_one` writes it; its ``campaign`` name aside)."""
    try:
        theirs = json.loads((run_dir / "params.json").read_text())
    except (OSError, ValueError):
        raise UserError(f"reuse_runs_from {bundle}: run {run_dir.name} has no readable params.json") from None
    ours = json.loads(json.dumps({**run.params(), "seed": seed, "backend": backend}))   # as params.json holds it
    theirs = {k: v for k, v in theirs.items() if k != "campaign"}
    diff = sorted(k for k in set(ours) | set(theirs) if ours.get(k, "(none)") != theirs.get(k, "(none)"))
    if diff:
        k = diff[0]
        raise UserError(f"reuse_runs_from {bundle}: run {run_dir.name} was recorded with {k}="
                        f"{theirs.get(k, '(none)')}, this campaign gives it {ours.get(k, '(none)')}"
                        + (f" ({len(diff) - 1} more parameter(s) differ)" if len(diff) > 1 else "")
                        + "; nothing reused")


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def run_campaign(campaign: Campaign, campaign_file: Path, out: Path, backend: str, seed: int,
                 jobs: int = 1, retry: bool = False, redo_contended_pct: float | None = None,
                 experiments: set[str] | None = None, resume_from: Path | None = None,
                 scheduler: str | None = None, profile: str | None = None,
                 min_free_gb: float | None = None) -> Outcome:
    """Record the campaign's runs that are not done yet. ``retry``: record SKIPPED runs again;
    ``redo_contended_pct``: record again the complete runs whose host CPU pressure exceeded it; ``experiments``:
    this session records only runs of these experiments (the rest stay pending for a later resume); ``resume_from``:
    a bundle of this campaign whose finished runs count as done (:func:`restore_from_bundle`); ``scheduler``: a
    dask.distributed scheduler whose workers record the runs on their hosts (``mpcc.campaign.distributed``; this
    process needs no root then), ``profile``: the campaign file's profile, which the workers read it with;
    ``min_free_gb``: the free-space floor of ``out``'s file system below which no further run starts (None: estimated,
    ``mpcc.campaign.room``; 0: none)."""
    if backend not in BACKENDS:
        raise UserError(f"unknown backend {backend!r} (known: {', '.join(BACKENDS)})")
    if jobs < 1:
        raise UserError(f"--jobs must be >= 1, got {jobs}")
    if min_free_gb is not None and not min_free_gb >= 0:
        raise UserError(f"--min-free-gb must be >= 0, got {min_free_gb:g}")
    if jobs > 1 and backend != "netns":
        raise UserError(f"--jobs {jobs}: only the netns backend can run several testbeds at once")
    if scheduler is not None:
        if backend != "netns":
            raise UserError(f"--scheduler: workers record on the netns backend, not {backend}")
        if jobs != 1:
            raise UserError(f"--jobs {jobs} with --scheduler: each worker's slots (dask worker --resources slots=N) "
                            f"set how many runs it records at once")
    elif os.geteuid() != 0:
        raise UserError("running a campaign needs root (network namespaces, tc, nft); try --dry-run")
    fam = get_family(campaign.family)
    if backend not in fam.BACKENDS:
        raise UserError(f"family {fam.FAMILY} runs on the {' or '.join(fam.BACKENDS)} backend, not {backend}")
    if scheduler is None and not experiment_script(backend, fam.FAMILY).exists():
        raise UserError(f"missing {experiment_script(backend, fam.FAMILY)}")
    order = ordered_runs(campaign, seed)
    client = workers = None
    if scheduler is not None:   # every worker checked before anything is written or recorded
        from mpcc.campaign import distributed
        client = distributed.connect(scheduler)
        try:
            workers = distributed.check_workers(client, scheduler, backend, fam.FAMILY)
        except BaseException:
            client.close()
            raise
        jobs = sum(w["slots"] for w in workers)
        print(f"runner: {scheduler}: {distributed.describe_workers(workers)}", file=sys.stderr)
        here = source_version()["git_commit"]
        other = sorted({f"{w['host']} ({(w['git_commit'] or 'no git')[:12]})" for w in workers
                        if w["git_commit"] != here})
        if other:   # recorded per worker in campaign.json; the runs' results may depend on the code that ran them
            print(f"runner: warning: workers on another commit than this checkout ({(here or 'no git')[:12]}): "
                  f"{', '.join(other)}", file=sys.stderr)
    try:
        return _record(campaign, campaign_file, out, backend, seed, order, jobs, retry, redo_contended_pct,
                       experiments, resume_from, scheduler, profile, client, workers, min_free_gb)
    finally:
        if client is not None:
            client.close()


def _record(campaign, campaign_file, out, backend, seed, order, jobs, retry, redo_contended_pct, experiments,
            resume_from, scheduler, profile, client, workers, min_free_gb=None) -> Outcome:
    """:func:`run_campaign` once its inputs (and a cluster's workers: ``client``, ``workers``) are checked."""
    out.mkdir(parents=True, exist_ok=True)
    lock = open(out / ".campaign.lock", "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        raise UserError(f"another campaign runner is using {out}") from None
    if resume_from is not None:
        n = restore_from_bundle(resume_from, out, campaign_file, campaign, backend, seed)
        print(f"runner: {n} finished run(s) restored from {resume_from}", file=sys.stderr)
    if campaign.reuse_from is not None:
        n = restore_from_bundle(reuse_path(campaign), out, campaign_file, campaign, backend, seed, reuse=True)
        print(f"runner: {n} finished run(s) of {campaign.reuse_from} reused (the campaign file's reuse_runs_from)",
              file=sys.stderr)
    session = None
    if scheduler is not None:
        from mpcc.campaign import distributed
        session = distributed.session_record(scheduler, workers)
        distributed.clear_landings(out)
    _prepare_out(out, campaign_file, campaign, backend, seed, order, jobs, session)
    if experiments:
        order = [r for r in order if r.experiment in experiments]
    if retry:
        n = supersede(out, order, "skipped", lambda d: run_status(d) != "skipped")
        print(f"runner: {n} skipped run(s) moved aside to be recorded again", file=sys.stderr)
    if redo_contended_pct is not None:
        def calm(d):
            p = host_pressure_pct(d)
            return run_status(d) != "complete" or p is None or p <= redo_contended_pct
        n = supersede(out, order, "contended", calm)
        print(f"runner: {n} run(s) recorded under host CPU pressure > {redo_contended_pct:g} % moved aside to be "
              f"recorded again", file=sys.stderr)
    n = supersede(out, order, "flowerror", lambda d: run_status(d) != "complete" or not iperf3_errors(d))
    if n:
        print(f"runner: {n} run(s) marked complete although an iperf3 client failed (its JSON holds an error) moved "
              f"aside to be recorded again", file=sys.stderr)
    local_gc = backend == "netns" and scheduler is None
    if local_gc:
        cc_gc()
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
    room = Room.start(out, jobs, min_free_gb)
    bar = tqdm(total=len(order), initial=result.already, unit="run", desc=campaign.name, file=sys.stderr,
               dynamic_ncols=True)
    interrupted = False
    try:
        if scheduler is not None:
            from mpcc.campaign import distributed
            distributed._report_sweeps(distributed.sweep_hosts(client, 0), final=False)
            distributed.run_on_cluster(client, scheduler, workers, todo, campaign, campaign_file, profile, out,
                                       backend, seed, bar, result, room)
        elif jobs == 1:
            for i, run in enumerate(todo):
                short = room.shortfall()
                if short is not None:
                    result.stopped, result.left = short, len(todo) - i
                    break
                bar.set_postfix_str(run.run_id[:60])
                outcome = _run_one(run, out / "runs" / run.run_id, campaign, backend, seed)
                setattr(result, outcome, getattr(result, outcome) + 1)
                if outcome == "failed":
                    failed_ids.append(run.run_id)
                room.seen(out / "runs" / run.run_id)
                bar.update(1)
        else:
            _run_parallel(todo, out, campaign, backend, seed, jobs, bar, result, failed_ids, room)
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        bar.close()
        if local_gc:
            cc_gc()
        if scheduler is not None and not interrupted:   # nothing of ours left on any host
            from mpcc.campaign import distributed
            try:
                reports = distributed.sweep_hosts(client, distributed.SWEEP_WAIT_S)
                distributed._report_sweeps(reports, final=True)
            except Exception as exc:  # noqa: BLE001 - the runs are landed; a host unreachable now is reported
                print(f"runner: sweeping the workers' hosts: {type(exc).__name__}: {exc}", file=sys.stderr)
        lock.close()
    for rid in failed_ids:
        print(f"failed: {rid} (see {out / 'runs' / rid / 'runner.log'})", file=sys.stderr)
    return result
