"""A dask.distributed cluster on this machine for the tests of campaigns across hosts (mpcc.campaign.distributed): a
scheduler and workers, each its own process (``dask scheduler``, ``dask worker --no-nanny``: a worker is one process,
so killing it kills the worker as a host's crash would), all stopped again by the test that started them."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

DASK = Path(sys.executable).with_name("dask")


def _children(pid: int) -> list[int]:
    """The child processes of ``pid`` (all its threads': a dask worker starts a capture tool from a task thread)."""
    kids = []
    for t in Path(f"/proc/{pid}/task").glob("*"):
        try:
            kids += [int(x) for x in (t / "children").read_text().split()]
        except OSError:
            pass
    return kids


class LocalCluster:
    """``workers`` workers of ``slots`` slots each (``--resources slots=N``) with environment ``env``; ``preload``:
    a Python file each worker runs first (``--preload``). ``address`` is the scheduler's."""

    def __init__(self, tmp: Path, env: dict, workers: int = 2, slots: int = 1, preload: Path | None = None):
        self.tmp, self.env, self.procs = Path(tmp), env, []
        self.tmp.mkdir(parents=True, exist_ok=True)
        sched_file = self.tmp / "scheduler.json"
        self.scheduler = self._start("scheduler", [str(DASK), "scheduler", "--host", "127.0.0.1", "--port", "0",
                                                   "--no-dashboard", "--dashboard-address", "127.0.0.1:0",
                                                   "--scheduler-file", str(sched_file)])
        deadline = time.monotonic() + 60
        while not sched_file.exists():
            assert time.monotonic() < deadline and self.scheduler.poll() is None, self.log("scheduler")
            time.sleep(0.2)
        time.sleep(0.2)
        self.address = json.loads(sched_file.read_text())["address"]
        self.workers = []
        for k in range(workers):
            cmd = [str(DASK), "worker", self.address, "--name", f"w{k}", "--nthreads", str(slots), "--resources",
                   f"slots={slots}", "--no-nanny", "--no-dashboard", "--local-directory", str(self.tmp / f"w{k}")]
            if preload is not None:
                cmd += ["--preload", str(preload)]
            self.workers.append(self._start(f"w{k}", cmd))
        self.wait_for_workers(workers)

    def _start(self, name: str, cmd: list[str]) -> subprocess.Popen:
        log = open(self.tmp / f"{name}.log", "w")
        p = subprocess.Popen(cmd, env=self.env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        self.procs.append(p)
        return p

    def log(self, name: str) -> str:
        return (self.tmp / f"{name}.log").read_text()[-3000:]

    def wait_for_workers(self, n: int, timeout: float = 60) -> None:
        from dask.distributed import Client
        with Client(self.address, timeout=30, set_as_default=False) as c:
            c.wait_for_workers(n, timeout=timeout)

    def worker_address(self, k: int) -> str:
        """The address of worker ``k`` (its name is ``w<k>``)."""
        from dask.distributed import Client
        with Client(self.address, timeout=30, set_as_default=False) as c:
            return next(a for a, w in c.scheduler_info(n_workers=-1)["workers"].items() if w["name"] == f"w{k}")

    def kill_mid_run(self, k: int, after_s: float = 1, timeout: float = 300) -> str:
        """SIGKILL worker ``k`` once it is recording a run (its child process, the capture tool, has been running for
        ``after_s``); the run_id of that run (the tool's ``--out``)."""
        p = self.workers[k]
        deadline = time.monotonic() + timeout
        while True:
            assert time.monotonic() < deadline and p.poll() is None, self.log(f"w{k}")
            for c in _children(p.pid):
                try:
                    argv = Path(f"/proc/{c}/cmdline").read_bytes().decode().split("\0")
                except OSError:
                    continue
                if "--out" not in argv:
                    continue
                time.sleep(after_s)   # well inside the run, if it is still on
                if c not in _children(p.pid):
                    break             # over already (e.g. skipped in a second): wait for the next one
                p.send_signal(signal.SIGKILL)
                p.wait(timeout=30)
                return Path(argv[argv.index("--out") + 1]).name
            time.sleep(0.1)

    def stop(self) -> None:
        """Stop every process this cluster started, by its own pid: the workers first (a worker whose scheduler
        closes under it while it closes may hang), then the scheduler."""
        for group in ([p for p in self.procs if p is not self.scheduler], [self.scheduler]):
            for p in group:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            for p in group:
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def coordinator(campaign: Path, out: Path, *options: str, patch_gc: bool = False) -> list[str]:
    """The command of ``mpcc campaign run CAMPAIGN --out OUT OPTIONS`` (``patch_gc``: with ``ccctl.sh gc`` replaced
    by nothing, for a stand-in capture tool that registers no congestion control)."""
    args = ["campaign", "run", str(campaign), "--out", str(out), *options]
    if not patch_gc:
        return [sys.executable, "-m", "mpcc.cli", *args]
    return [sys.executable, "-c", "import sys, mpcc.campaign.runner as r; r.cc_gc = lambda: None; "
            "from mpcc.cli import main; sys.exit(main(sys.argv[1:]))", *args]


def tree(run_dir: Path) -> set[str]:
    """The files of a run directory, relative to it (its layout)."""
    return {str(p.relative_to(run_dir)) for p in run_dir.rglob("*") if p.is_file()}


def env_with(**kv) -> dict:
    return {**os.environ, **{k: str(v) for k, v in kv.items()}}
