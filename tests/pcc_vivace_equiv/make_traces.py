#!/usr/bin/env python3
"""Record (or check) the reference traces of PCC-Kernel's vivace module in tests/pcc_vivace_equiv/traces/.

    python3 tests/pcc_vivace_equiv/make_traces.py           # regenerate: rewrites a trace whose content changed
    python3 tests/pcc_vivace_equiv/make_traces.py --check   # exit 1 if regenerating would change any trace

Both need the module's source, which this repository does not ship: testbed/cc/pcc-kernel/src/tcp_pcc.c, obtained as
testbed/cc/pcc-kernel/README.md says; its sha256 is checked first. The traces are what the module computed on the
event sequences of driver.c that traces/manifest.txt lists (format: driver.c's header and traces/README.md);
tests/test_pcc_vivace_equivalence.py replays them on the port, with or without the module's source, and uses this
file's helpers to build the driver. Needs gcc.
"""
from __future__ import annotations

import argparse
import hashlib
import lzma
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EQ = ROOT / "tests" / "pcc_vivace_equiv"
TRACES = EQ / "traces"
MANIFEST = TRACES / "manifest.txt"
PORT = ROOT / "testbed" / "cc" / "pcc_vivace.bpf.c"
MODULE_SRC = ROOT / "testbed" / "cc" / "pcc-kernel" / "src" / "tcp_pcc.c"
# sha256 of PCC-Kernel src/tcp_pcc.c at commit ed39d0f0fa07e4a922e97dae0b531ccac8c976c9
# (testbed/cc/pcc-kernel/README.md)
MODULE_SHA256 = "fb044cd55c1da95e08365610f8264955871c7f6b6599f585975b8ce6ad37d12b"
CFLAGS = ["-std=gnu11", "-O2", "-fwrapv", "-Wall", "-Wno-unused-function", "-Wno-unused-variable",
          "-Wno-unused-but-set-variable", "-Wno-misleading-indentation", "-Werror=incompatible-pointer-types",
          "-Werror=implicit-function-declaration"]
# xz settings of the committed files; their content is compared decompressed (another liblzma may pack differently)
XZ_PRESET = 9 | lzma.PRESET_EXTREME


def module_problem() -> str | None:
    """None if the module's source is present and is the expected file; otherwise why not, in one line."""
    rel = MODULE_SRC.relative_to(ROOT)
    if not MODULE_SRC.is_file():
        return f"{rel} is missing (this repository does not ship it: testbed/cc/pcc-kernel/README.md says how to get it)"
    got = hashlib.sha256(MODULE_SRC.read_bytes()).hexdigest()
    if got != MODULE_SHA256:
        return f"{rel} has sha256 {got}, expected {MODULE_SHA256} (testbed/cc/pcc-kernel/README.md)"
    return None


def _gcc(*args, cwd: Path) -> None:
    res = subprocess.run(["gcc", *CFLAGS, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        raise RuntimeError(f"gcc {' '.join(map(str, args))} failed:\n{res.stderr}")


def build_driver(dest: Path, *, with_module: bool, port: Path = PORT) -> Path:
    """Compile driver.c with the port (and, with_module, the module's source) into dest; return the executable.

    The port is compiled unmodified next to bpf/tcp_ca_helpers.h, the stand-in for its real helper header."""
    if with_module and (problem := module_problem()):
        raise RuntimeError(problem)
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(EQ / "bpf" / "tcp_ca_helpers.h", dest)
    shutil.copy(EQ / "port_glue.c", dest)
    shutil.copy(port, dest / "pcc_vivace.bpf.c")
    _gcc("-I", EQ, "-I", dest, "-c", "port_glue.c", "-o", "port.o", cwd=dest)
    _gcc("-I", EQ, "-c", EQ / "driver.c", "-o", "driver.o", cwd=dest)
    objs = ["driver.o", "port.o"]
    if with_module:
        _gcc("-I", EQ, "-I", EQ / "kernel", "-I", MODULE_SRC.parent, "-c", EQ / "mod_glue.c", "-o", "mod.o", cwd=dest)
        objs.append("mod.o")
    exe = dest / ("driver_module" if with_module else "driver_port")
    _gcc("-o", exe, *objs, cwd=dest)
    return exe


@dataclass(frozen=True)
class Trace:
    file: str
    seed: int
    events: int
    sequences: tuple[str, ...]      # driver arguments: "N" or "N:CAP"


def manifest() -> list[Trace]:
    entries: list[list[str]] = []
    for line in MANIFEST.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if line[0].isspace():
            entries[-1].extend(line.split())     # continues the entry above
        else:
            entries.append(line.split())
    out = []
    for name, seed, events, *seqs in entries:
        args: list[str] = []
        for s in seqs:
            if "-" in s:
                lo, hi = map(int, s.split("-"))
                args.extend(str(i) for i in range(lo, hi + 1))
            else:
                args.append(s)
        out.append(Trace(name, int(seed), int(events), tuple(args)))
    return out


def record(driver: Path, trace: Trace) -> bytes:
    res = subprocess.run([str(driver), "record", str(trace.seed), str(trace.events), *trace.sequences],
                         capture_output=True, timeout=600)
    if res.returncode != 0:
        raise RuntimeError(f"driver record for {trace.file} failed: {res.stderr.decode(errors='replace')}")
    return res.stdout


def committed(trace: Trace) -> bytes:
    """The committed trace, decompressed."""
    return lzma.decompress((TRACES / trace.file).read_bytes())


def replay(driver: Path, data: bytes, side: str = "port") -> subprocess.CompletedProcess:
    return subprocess.run([str(driver), "replay", side], input=data, capture_output=True, timeout=600)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="only compare; exit 1 if any trace would change")
    args = ap.parse_args(argv)
    if problem := module_problem():
        print(f"make_traces.py: {problem}", file=sys.stderr)
        return 1
    if shutil.which("gcc") is None:
        print("make_traces.py: gcc is missing", file=sys.stderr)
        return 1
    changed = []
    with tempfile.TemporaryDirectory(prefix="pcc_vivace_traces.") as tmp:
        driver = build_driver(Path(tmp), with_module=True)
        for trace in manifest():
            data = record(driver, trace)
            path = TRACES / trace.file
            same = path.is_file() and committed(trace) == data
            if not same:
                changed.append(trace.file)
                if not args.check:
                    path.write_bytes(lzma.compress(data, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64,
                                                   preset=XZ_PRESET))
            events = sum(1 for line in data.splitlines() if line[:1] in b"IASNRQ")
            print(f"{trace.file}: {events} events, {len(data)} bytes, "
                  f"{'unchanged' if same else 'differs' if args.check else 'written'}"
                  f"{'' if args.check else f', {path.stat().st_size} bytes xz'}")
    if args.check and changed:
        print(f"make_traces.py: would change {', '.join(changed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
