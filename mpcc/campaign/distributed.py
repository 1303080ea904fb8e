"""A campaign spread over hosts: ``mpcc campaign run CAMPAIGN --scheduler tcp://HOST:PORT`` (docs/multi-host.md).

The coordinator (the ``mpcc campaign run`` process; needs no root) holds the campaign directory ``OUT`` as a local
campaign does. Each recording host runs a dask.distributed worker as root, from its own checkout of this repository
(with the BPF objects built for its kernel), started with ``--resources slots=N``: N runs at once on that host.

How a run travels:

1. The coordinator validates the campaign, checks every worker (:func:`worker_info`: root, ``setpriv``, the
   family's capture tool, namespace prefix) and hands out the runs in the order drawn from the campaign's seed, never
   more at once than the cluster has slots (the next run starts when a slot frees; dask ``priority`` keeps the order
   among runs waiting for one).
2. A worker (:func:`record_run`) validates the campaign file again with its own code, finds the run by its run_id,
   and claims a free slot of its host: the lowest ``k`` whose lock file ``$MPCC_WORKER_DIR/slot-<P><k>-.lock`` it
   can flock, where ``P`` is the worker's ``$MPCC_NS_PREFIX`` (default ``mpcc-``). The run's namespaces are named
   ``<P><k>-<node>``, as ``--jobs`` names a local runner's slots, so two workers on one host never collide. The
   capture tool inherits the lock and holds it until its teardown is over.
3. The run is recorded into the slot's staging directory ``$MPCC_WORKER_DIR/slot-<P><k>-/<run_id>/`` (the same
   capture tool, markers and exit codes as a local run), packed as a gzip'd tar and returned as the task's result;
   the staging directory is removed.
4. The coordinator unpacks it into ``OUT/runs/.<run_id>.landing-<pid>/`` and renames it to ``OUT/runs/<run_id>``
   (one rename: a run directory appears whole or not at all). A run lands as complete only when the capture tool
   exited 0 and wrote ``COMPLETE`` (skipped: 3 and ``SKIPPED``); a failed run lands without a marker (incomplete, as
   a local failed run: a resume moves it aside and records it again), or aside as ``<run_id>.incomplete-<time>-failed``
   should it hold a marker anyway.

A worker that dies mid-run (SIGKILL, host lost): its capture tool gets SIGTERM (parent-death signal) and tears its
testbed down; the half-written run never leaves that host, and the scheduler gives the run to another worker (dask
reschedules the tasks of a lost worker; after ``distributed.scheduler.allowed-failures`` deaths, 3 by default, the run
counts as failed and stays pending for a resume). Its staging directory goes with the next claim of that slot or the
sweep (:func:`sweep`) that the coordinator runs on every host at the start and the end of a session, which also
unregisters BPF congestion controls nobody holds (``testbed/cc/ccctl.sh gc``) and reports namespaces left. A
coordinator that stops (Ctrl-C, SIGTERM, or killed: the scheduler then releases its tasks) cancels the runs in flight:
each worker's capture tool gets one SIGINT and tears down, nothing lands, and the same command resumes.
"""
from __future__ import annotations

import fcntl
import io
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from pathlib import Path

from mpcc.campaign import runner as _runner
from mpcc.errors import UserError

SLOTS = "slots"                  # the worker resource: runs a worker records at once
WORKER_DIR_ENV = "MPCC_WORKER_DIR"
PREFIX_RE = re.compile(r"^[A-Za-z0-9_.-]{1,16}$")   # leaves room for "<k>-" in the testbed's 20 characters
WORKER_WAIT_S = 60               # how long the coordinator waits for a worker with slots to connect
SWEEP_WAIT_S = 90                # at the end: how long a sweep waits for a slot whose capture tool still tears down
MAX_ATTEMPTS = 3                 # a run handed back unrecorded (its worker closing) is handed out again this often


# ------------------------------------------------------------------------------------------------ worker side

def worker_dir() -> Path:
    """This host's slot locks and staging directories: ``$MPCC_WORKER_DIR``, default ``<tmp>/mpcc-worker``. Every
    worker of one host must use the same (they claim slots through it)."""
    return Path(os.environ.get(WORKER_DIR_ENV) or Path(tempfile.gettempdir()) / "mpcc-worker")


def _private_dir_problem(root: Path) -> str | None:
    """Why ``root`` (the worker directory) must not be used: a symlink, or a directory another user could write."""
    try:
        st = os.lstat(root)
    except FileNotFoundError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        return (f"{WORKER_DIR_ENV} {root} is not a directory of this user that only it can write (a symlink, another "
                f"user's, or group/world-writable): remove it or set {WORKER_DIR_ENV}")
    return None


def ns_base() -> str:
    """The namespace prefix a worker's slots extend (``$MPCC_NS_PREFIX``, default ``mpcc-``)."""
    return os.environ.get("MPCC_NS_PREFIX", "mpcc-")


def _lock(path: Path, deadline: float | None = None) -> int | None:
    """An fd holding an exclusive flock on ``path`` (created if missing), or None when another process holds it
    (until ``deadline``, monotonic; None: do not wait). A lock file unlinked by a sweep while we waited is not the
    one at ``path`` any more: we try again on the new one."""
    while True:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except FileNotFoundError:   # the directory went (a sweep removed it) between mkdir and open
            continue
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if deadline is None or time.monotonic() > deadline:
                    os.close(fd)
                    return None
                time.sleep(0.5)
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)


class Slot:
    """A claimed slot of this host: ``prefix`` (namespace prefix ``<base><k>-``), ``fd`` (its lock), ``stage`` (its
    staging directory, emptied on claim: whatever a dead worker left in it is gone)."""

    def __init__(self, base: str | None = None, root: Path | None = None, limit: int = 99):
        base = ns_base() if base is None else base
        root = worker_dir() if root is None else root
        for k in range(1, limit + 1):
            prefix = f"{base}{k}-"
            fd = _lock(root / f"slot-{prefix}.lock")
            if fd is not None:
                self.k, self.prefix, self.fd, self.stage = k, prefix, fd, root / f"slot-{prefix}"
                break
        else:
            raise RuntimeError(f"no free slot among {base}1- .. {base}{limit}- in {root}")
        shutil.rmtree(self.stage, ignore_errors=True)
        self.stage.mkdir(parents=True)

    def release(self) -> None:
        """Empty the staging directory and free the slot; its lock file goes too unless a process the capture tool
        left behind still holds it (the sweep takes it once that has ended)."""
        shutil.rmtree(self.stage, ignore_errors=True)
        os.close(self.fd)
        lock = self.stage.with_name(f"{self.stage.name}.lock")
        fd = _lock(lock, time.monotonic() + 10)   # the tool's last children may still be on their way out
        if fd is not None:
            try:
                lock.unlink()
            finally:
                os.close(fd)
            try:
                self.stage.parent.rmdir()
            except OSError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


def worker_info(backend: str, family: str) -> dict:
    """What the coordinator checks on every worker before the first run (run there by ``Client.run``): host,
    kernel, code version, and ``problems`` (one line each) that keep it from recording."""
    from mpcc.families import get_family
    info = {**_runner.recorded_on(), **_runner.source_version(), "worker_dir": str(worker_dir()),
            "ns_base": ns_base(), "problems": []}
    problems = info["problems"]
    if backend != "netns":
        problems.append(f"backend {backend}: only the netns backend records on workers")
    if os.geteuid() != 0:
        problems.append("not root (the netns backend needs root: run the worker as root)")
    if shutil.which("setpriv") is None:
        problems.append("setpriv not found (util-linux)")
    why = _private_dir_problem(worker_dir())
    if why:
        problems.append(why)
    if not PREFIX_RE.match(info["ns_base"]):
        problems.append(f"MPCC_NS_PREFIX must be 1-16 of [A-Za-z0-9_.-], got {info['ns_base']!r}")
    try:
        tool = get_family(family).capture_tool(backend)
        if not tool.exists():
            problems.append(f"missing {tool}")
    except UserError as exc:
        problems.append(str(exc))
    return info


def _stop_probe():
    """A function that is true once this task's result is no longer wanted (cancelled: the coordinator stopped or
    went away) or this worker is closing; None outside a dask worker."""
    try:
        from distributed import get_worker
        w = get_worker()
        key = w.get_current_task()
    except (ImportError, ValueError, KeyError):
        return None
    gone = {"closing", "closing_gracefully", "closed", "stopping", "stopped", "failed"}

    def stop() -> bool:
        if getattr(w.status, "name", "") in gone:
            return True
        ts = w.state.tasks.get(key)
        return ts is None or ts.state in ("cancelled", "released", "forgotten")
    return stop


def pack(run_dir: Path) -> bytes:
    """A run directory as a gzip'd tar (members ``<run_id>/...``)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:
        tar.add(run_dir, arcname=run_dir.name)
    return buf.getvalue()


def record_run(campaign_text: str, campaign_path: str, profile: str | None, run_id: str, seed: int,
               backend: str) -> dict:
    """The dask task: record run ``run_id`` of the campaign file ``campaign_text`` on this worker's host and return
    ``{run_id, outcome, host, kernel, prefix, seconds, tar}`` (``tar``: :func:`pack` of the run directory; None when
    the run was interrupted). Every value is validated (the campaign file, by this worker's code) before any root
    command."""
    from mpcc.campaign.spec import campaign_from_text
    me = _runner.recorded_on()
    campaign = campaign_from_text(campaign_text, campaign_path, profile)
    info = worker_info(backend, campaign.family)
    if info["problems"]:
        raise RuntimeError(f"worker on {me['host']}: {'; '.join(info['problems'])}")
    run = next((r for r in campaign.runs if r.run_id == run_id), None)
    if run is None:
        raise RuntimeError(f"worker on {me['host']}: {campaign_path} has no run {run_id} here "
                           f"(another version of mpcc: commit {info['git_commit']})")
    try:
        from distributed import get_worker
        where = f", dask worker {get_worker().address}"
    except (ImportError, ValueError):
        where = ""
    stop = _stop_probe()
    t0 = time.monotonic()
    with Slot() as slot:
        run_dir = slot.stage / run_id
        outcome = _runner._run_one(run, run_dir, campaign, backend, seed, prefix=slot.prefix, pass_fds=(slot.fd,),
                                   stop=stop, where=where)
        tar = None if outcome == "interrupted" else pack(run_dir)
    return {"run_id": run_id, "outcome": outcome, **me, "prefix": slot.prefix,
            "seconds": round(time.monotonic() - t0, 1), "tar": tar}


def _namespaces(prefix: str) -> list[str]:
    try:
        out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [ln.split()[0] for ln in out.splitlines() if ln.startswith(prefix)]


def sweep(wait_s: float = 0.0, gc: bool = True) -> dict:
    """Leave nothing of ours on this host: remove the staging directory and lock of every free slot (waiting up to
    ``wait_s`` for a slot whose capture tool still tears down), then ``$MPCC_WORKER_DIR`` itself when empty, and
    unregister the BPF congestion controls no live run holds (``ccctl.sh gc``, ``gc``). Returns host, ``busy``
    (slots still held: a run in progress, e.g. of another campaign) and ``namespaces_left`` (namespaces of a free
    slot: a capture tool killed outright; ``netns.sh down`` with that prefix removes them)."""
    root = worker_dir()
    busy, left, removed = [], [], 0
    deadline = time.monotonic() + wait_s
    for lock in sorted(root.glob("slot-*.lock")) if root.is_dir() else []:
        prefix = lock.name[len("slot-"):-len(".lock")]
        fd = _lock(lock, deadline if wait_s > 0 else None)
        if fd is None:
            if lock.exists():
                busy.append(prefix)
            continue
        try:
            stage = root / f"slot-{prefix}"
            if stage.exists():
                shutil.rmtree(stage, ignore_errors=True)
                removed += 1
            left += _namespaces(prefix)
            lock.unlink()
        finally:
            os.close(fd)
    try:
        root.rmdir()
    except OSError:
        pass
    if gc:
        _runner.cc_gc()
    return {**_runner.recorded_on(), "worker_dir": str(root), "busy": busy, "stages_removed": removed,
            "namespaces_left": left}


# ------------------------------------------------------------------------------------------------ coordinator side

def _say(msg: str) -> None:
    """One line on stderr that leaves the progress bar whole."""
    from tqdm import tqdm
    tqdm.write(msg, file=sys.stderr)


def connect(scheduler: str):
    """A dask.distributed Client of ``scheduler``; one-line UserErrors when dask is missing or it cannot be reached."""
    try:
        from dask.distributed import Client
    except ImportError:
        raise UserError("--scheduler needs dask.distributed (in requirements.lock; pip install 'dask[distributed]')") \
            from None
    try:   # a malformed address is refused before a Client exists (a half-made one hangs the interpreter's exit)
        from distributed.comm.addressing import parse_address, parse_host_port
        from distributed.comm.registry import get_backend
        scheme, loc = parse_address(scheduler)
        get_backend(scheme)
        if scheme in ("tcp", "tls"):
            parse_host_port(loc)
    except ValueError as exc:
        raise UserError(f"--scheduler {scheduler!r}: not a dask scheduler address ({exc}); e.g. tcp://HOST:8786") \
            from None
    try:
        return Client(scheduler, timeout=10, set_as_default=False)
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UserError(f"cannot reach the dask scheduler {scheduler}: {why}") from None


def slot_workers(client) -> dict:
    """{address: worker info} of the scheduler's workers that offer the ``slots`` resource."""
    workers = client.scheduler_info(n_workers=-1).get("workers", {})
    return {a: w for a, w in workers.items() if (w.get("resources") or {}).get(SLOTS, 0) >= 1}


def total_slots(client) -> int:
    """The slots of the workers connected now; 0 while the scheduler cannot be asked (the coordinator waits, and
    gives up after WORKER_WAIT_S)."""
    try:
        return int(sum(w["resources"][SLOTS] for w in slot_workers(client).values()))
    except Exception:  # noqa: BLE001 - the scheduler gone or restarting: treated as no worker
        return 0


def check_workers(client, scheduler: str, backend: str, family: str, wait_s: float = WORKER_WAIT_S) -> list[dict]:
    """Every worker with slots, checked (:func:`worker_info`) before the first run: one entry each (address, host,
    kernel, slots, nthreads, code version). A UserError names every problem, or says that no worker offers slots."""
    deadline = time.monotonic() + wait_s
    while not (workers := slot_workers(client)):
        if time.monotonic() > deadline:
            raise UserError(f"no worker of {scheduler} offers the resource '{SLOTS}' after {wait_s:g} s "
                            f"(start each recording host's worker with --resources {SLOTS}=N; docs/multi-host.md)")
        time.sleep(0.5)
    try:
        infos = client.run(worker_info, backend, family, workers=list(workers))
    except Exception as exc:  # noqa: BLE001 - e.g. a worker without mpcc installed
        raise UserError(f"checking the workers of {scheduler}: {type(exc).__name__}: {exc}") from None
    problems, out = [], []
    for addr, w in sorted(workers.items()):
        info = infos.get(addr)
        if info is None:
            problems.append(f"{addr}: did not answer")
            continue
        slots = int(w["resources"][SLOTS])
        if w.get("nthreads", slots) < slots:
            info["problems"].append(f"--nthreads {w.get('nthreads')} < {SLOTS}={slots}")
        problems += [f"{addr} ({info['host']}): {p}" for p in info["problems"]]
        out.append({"address": addr, "host": info["host"], "kernel": info["kernel"], "slots": slots,
                    "nthreads": w.get("nthreads"), "git_commit": info["git_commit"], "git_dirty": info["git_dirty"],
                    "worker_dir": info["worker_dir"], "ns_base": info["ns_base"]})
    if problems:
        raise UserError("workers not fit to record: " + "; ".join(problems))
    return out


def _where() -> dict:
    """This worker's host and worker directory (which hosts share slots)."""
    return {"host": _runner.recorded_on()["host"], "worker_dir": str(worker_dir())}


def sweep_hosts(client, wait_s: float, gc: bool = True) -> list[dict]:
    """:func:`sweep` once per host and worker directory, as a task on one of the workers with slots connected now
    (a worker that died since the session started is not asked); the reports."""
    alive = sorted(slot_workers(client))
    where = client.run(_where, workers=alive, on_error="ignore") if alive else {}
    seen, futs = set(), []
    for addr in alive:
        w = where.get(addr)
        if not isinstance(w, dict) or (w["host"], w["worker_dir"]) in seen:
            continue
        seen.add((w["host"], w["worker_dir"]))
        futs.append((w, client.submit(sweep, wait_s, gc, workers=[addr], allow_other_workers=False, pure=False,
                                      key=f"mpcc-sweep-{uuid.uuid4().hex}")))
    deadline = time.monotonic() + wait_s + 60
    while not all(f.done() for _, f in futs) and time.monotonic() < deadline:
        time.sleep(0.2)
    reports = []
    for w, f in futs:
        if f.status == "finished":
            reports.append(f.result())
        else:
            _say(f"runner: the sweep of {w['host']} did not finish ({f.status}): look at {w['worker_dir']} and "
                 f"the namespaces there")
        f.cancel()
    return reports


def _report_sweeps(reports: list[dict], final: bool) -> None:
    for r in reports:
        if r["busy"] and final:
            _say(f"runner: host {r['host']}: slot(s) {', '.join(r['busy'])} still held after {SWEEP_WAIT_S} s (a "
                 f"capture tool still tearing down, or another campaign's run)")
        if r["namespaces_left"]:
            _say(f"runner: host {r['host']}: namespaces left by a capture tool killed outright: "
                 f"{' '.join(r['namespaces_left'])} (remove them with MPCC_NS_PREFIX=<prefix> testbed/netns.sh down)")


def _safe_members(tar: tarfile.TarFile, run_id: str) -> list:
    members = tar.getmembers()
    for m in members:
        parts = Path(m.name).parts
        if (not parts or parts[0] != run_id or m.name.startswith("/") or ".." in parts
                or not (m.isfile() or m.isdir())):
            raise ValueError(f"unexpected member {m.name!r}")
    return members


def land(out: Path, res: dict) -> tuple[str, Path]:
    """Put a worker's result into ``out/runs`` atomically (module docstring, step 4); (outcome, where it landed).
    Outcome 'complete' or 'skipped' only when the markers agree with the capture tool's exit; else 'failed'."""
    rid = res["run_id"]
    runs = out / "runs"
    tmp = runs / f".{rid}.landing-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        with tarfile.open(fileobj=io.BytesIO(res["tar"]), mode="r:gz") as tar:
            members = _safe_members(tar, rid)
            if hasattr(tarfile, "data_filter"):
                tar.extractall(tmp, members=members, filter="data")
            else:  # Python < 3.10.12 / 3.11.4: members checked above (plain files and directories inside <run_id>/)
                tar.extractall(tmp, members=members)  # noqa: S202
        src = tmp / rid
        if not src.is_dir():
            raise ValueError("no run directory in it")
        status = _runner.run_status(src)
        outcome = res["outcome"]
        if not ((outcome == "complete" and status == "complete") or (outcome == "skipped" and status == "skipped")):
            outcome = "failed"
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        dst = runs / rid
        if outcome == "failed" and status != "incomplete":
            dst = runs / f"{rid}.incomplete-{stamp}-failed"   # a marker without the exit to match: never a result
        elif _runner.run_status(dst) in ("complete", "skipped"):
            dst = runs / f"{rid}.incomplete-{stamp}-duplicate"  # recorded once already: the first one stays
            outcome = "duplicate"
        elif dst.exists():   # an incomplete directory of an earlier session: moved aside, as a local resume does
            dst.rename(dst.with_name(f"{rid}.incomplete-{stamp}"))
        src.rename(dst)
        return outcome, dst
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def clear_landings(out: Path) -> None:
    """Remove half-unpacked results a killed coordinator left (``runs/.<run_id>.landing-<pid>``): never run
    directories; their runs are recorded again."""
    for d in (out / "runs").glob(".*.landing-*"):
        shutil.rmtree(d, ignore_errors=True)


def run_on_cluster(client, scheduler: str, workers: list[dict], todo: list, campaign, campaign_file: Path,
                   profile: str | None, out: Path, backend: str, seed: int, bar, result, room=None) -> None:
    """Record ``todo`` (in that order) on the cluster, landing each run in ``out`` as it comes back; counts into
    ``result`` (an ``Outcome``) and ``bar`` (tqdm). On KeyboardInterrupt the runs in flight are cancelled (their
    capture tools tear down on the workers) and it is raised again. ``room`` (``mpcc.campaign.room.Room``, for
    ``out``, where every run lands): checked before each run is handed out; short of room, none is, and the runs in
    flight land."""
    text = campaign_file.read_text()
    session = uuid.uuid4().hex[:8]
    n = len(todo)
    pending = list(enumerate(todo))        # (position in the order, run): position = dask priority
    inflight: dict = {}                    # future -> (position, run, attempt)
    no_workers_since = None

    def submit(pos, run, attempt):
        f = client.submit(record_run, text, campaign_file.name, profile, run.run_id, seed, backend,
                          key=f"mpcc-run-{session}-{attempt}-{run.run_id}", resources={SLOTS: 1},
                          priority=n - pos, pure=False)
        inflight[f] = (pos, run, attempt)

    def handle(f):
        pos, run, attempt = inflight.pop(f)
        try:
            res = f.result()
        except Exception as exc:  # noqa: BLE001 - KilledWorker, a worker's refusal, a lost scheduler: one line
            msg = str(exc).splitlines()[0] if str(exc) else ""
            _say(f"failed: {run.run_id}: {type(exc).__name__}: {msg}")
            result.failed += 1
            bar.update(1)
            return
        finally:
            f.release()
        if res["outcome"] == "interrupted":   # its worker closed before the run ended: hand it out again
            if attempt < MAX_ATTEMPTS:
                submit(pos, run, attempt + 1)
                return
            _say(f"failed: {run.run_id}: interrupted {attempt} times (workers closing)")
            result.failed += 1
            bar.update(1)
            return
        try:
            outcome, where = land(out, res)
        except (OSError, ValueError, tarfile.TarError) as exc:
            _say(f"failed: {run.run_id}: its run directory from {res['host']} could not be unpacked: {exc}")
            result.failed += 1
            bar.update(1)
            return
        if outcome == "duplicate":
            _say(f"runner: {run.run_id} was recorded already; the copy from {res['host']} is kept as {where.name}")
            result.already += 1
        else:
            setattr(result, outcome, getattr(result, outcome) + 1)
            if outcome == "failed":
                _say(f"failed: {run.run_id} on {res['host']} (see {where / 'runner.log'})")
        if room is not None:
            room.seen(where)
        bar.set_postfix_str(f"{run.run_id[:48]} @ {res['host']}")
        bar.update(1)

    try:
        while pending or inflight:
            slots = total_slots(client)
            if slots == 0:
                no_workers_since = no_workers_since or time.monotonic()
                if time.monotonic() - no_workers_since > WORKER_WAIT_S:
                    left = len(pending) + len(inflight)
                    client.cancel(list(inflight))
                    _say(f"runner: no worker with {SLOTS} on {scheduler} for {WORKER_WAIT_S} s: {left} run(s) "
                         f"left unrecorded (run the same command again to record them)")
                    result.failed += left
                    return
            else:
                no_workers_since = None
            while pending and len(inflight) < slots:
                short = room.shortfall() if room is not None else None
                if short is not None:
                    result.stopped, result.left = short, len(pending)
                    pending.clear()
                    break
                submit(*pending.pop(0), 1)
            if not inflight:
                time.sleep(1)
                continue
            done = [f for f in inflight if f.done()]
            if not done:
                time.sleep(0.5)
                continue
            for f in sorted(done, key=lambda x: inflight[x][0]):
                handle(f)
    except KeyboardInterrupt:
        for f in [f for f in inflight if f.status == "finished"]:   # back already: land it rather than lose it
            try:
                handle(f)
            except Exception:  # noqa: BLE001 - interrupted: what could not land is recorded again on resume
                pass
        client.cancel(list(inflight))
        _say(f"runner: {len(inflight)} run(s) in flight cancelled; their workers tear them down")
        raise


def session_record(scheduler: str, workers: list[dict]) -> dict:
    """What ``campaign.json`` records of a session on a cluster: the scheduler and every worker that could record."""
    return {"scheduler": scheduler, "workers": [{k: w[k] for k in ("address", "host", "kernel", "slots",
                                                                   "git_commit", "git_dirty")} for w in workers]}


def describe_workers(workers: list[dict]) -> str:
    hosts: dict = {}
    for w in workers:
        hosts.setdefault((w["host"], w["kernel"]), 0)
        hosts[(w["host"], w["kernel"])] += w["slots"]
    return ", ".join(f"{h} ({k}): {s} slot(s)" for (h, k), s in sorted(hosts.items()))

