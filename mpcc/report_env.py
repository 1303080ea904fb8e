"""The analysis environment a report was made with (issue 31): the interpreter, the versions of the packages that
compute its numbers, and whether every package is at the version ``requirements.lock`` pins (the lock the Makefile
and CI install from, hash-checked; tools/lock.sh writes it). ``mpcc reproduce`` stores this in ``reproduce.json``
and prints it at the foot of ``index.html``."""
from __future__ import annotations

import hashlib
import platform
import re
from importlib import metadata
from pathlib import Path

LOCK = "requirements.lock"
#: the packages whose versions a reader of the numbers wants to see first (all are pinned in the lock)
KEY = ("numpy", "scipy", "pandas", "pyarrow", "numba", "dpkt", "matplotlib", "seaborn", "papermill", "nbconvert",
       "ipykernel")
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)")


def _norm(name: str) -> str:
    """A distribution name as PEP 503 compares them (case and -_. runs folded)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_pins(lock: Path) -> dict[str, str]:
    """{normalised name: version} of every ``name==version`` line of a pip-compile lock file."""
    pins = {}
    for line in lock.read_text(encoding="utf-8").splitlines():
        m = _PIN.match(line)
        if m:
            pins[_norm(m.group(1))] = m.group(2)
    return pins


def installed() -> dict[str, str]:
    """{normalised name: version} of the distributions importable by this interpreter."""
    out = {}
    for d in metadata.distributions():
        name = d.metadata["Name"]
        if name:
            out.setdefault(_norm(name), d.version)
    return out


def environment(repo: Path) -> dict:
    """The environment as data: python, platform, the KEY packages' versions, and the lock comparison
    (``lock_sha256``, ``pinned`` count, ``differs``: {name: {"lock", "installed"}} of pins not met)."""
    have = installed()
    env = {"python": platform.python_version(), "implementation": platform.python_implementation(),
           "machine": platform.machine(), "packages": {k: have[k] for k in KEY if k in have}}
    lock = Path(repo) / LOCK
    if lock.is_file():
        pins = lock_pins(lock)
        env.update(lock=LOCK, lock_sha256=hashlib.sha256(lock.read_bytes()).hexdigest(), pinned=len(pins),
                   differs={n: {"lock": v, "installed": have.get(n)} for n, v in sorted(pins.items())
                            if have.get(n) != v})
    return env


def describe(env: dict) -> str:
    """One paragraph of plain text: ``Python 3.11.7 (CPython, x86_64); numpy 2.4.6, ...; all 80 packages at the
    versions requirements.lock pins (sha256 1a2b3c4d5e6f)`` or which pins are not met."""
    pk = ", ".join(f"{k} {v}" for k, v in env["packages"].items())
    text = f"Python {env['python']} ({env['implementation']}, {env['machine']}); {pk}"
    if "lock" not in env:
        return text + f"; no {LOCK} in this checkout: versions not pinned"
    sha = env["lock_sha256"][:12]
    if not env["differs"]:
        return text + f"; all {env['pinned']} packages at the versions {env['lock']} pins (sha256 {sha})"
    diff = ", ".join(f"{n} {d['installed'] or 'missing'} (lock {d['lock']})" for n, d in env["differs"].items())
    return text + (f"; NOT the pinned environment: {len(env['differs'])} of {env['pinned']} packages differ from "
                   f"{env['lock']} (sha256 {sha}): {diff}")
