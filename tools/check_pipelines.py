#!/usr/bin/env python3
"""Find pipelines whose reader may quit before its writer is done, in the project's shell scripts.

Every script here runs with ``set -o pipefail``. A reader that stops reading early (``head``, ``grep -q``/``-m``/
``-l``, an ``awk`` program with ``exit``, ``sed`` with ``q``, the ``read`` builtin) makes the writer die of SIGPIPE
(exit 141) whenever the writer has more to write after the reader quit: a race, decided by how the writer buffers
and by the machine's load. Under pipefail the whole pipeline then fails: an ``if`` takes the wrong branch, ``set -e``
ends the script. ``testbed/cc/ccctl.sh`` failed so in CI (``bpftool struct_ops show | awk '... exit'`` with several
struct_ops registered, bpftool writing a line at a time), and a run was recorded as SKIPPED for a CC the kernel had.

The fix at the root is a reader that reads all of its input: ``sed -n 1p`` for ``head -1``, ``awk`` without ``exit``
(a flag that keeps the first match), or the writer's output captured first (``x=$(cmd)``) and tested afterwards
(``grep -qx -- "$y" <<<"$x"``: a here-string is written before the reader starts).

usage: check_pipelines.py [PATH ...]   (default: testbed/ capture_tools/ tools/ .ci/run). Prints FILE:LINE: why,
one per finding; exit 1 when there is any, 0 when there is none, 2 on a bad argument.
"""
from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ["testbed", "capture_tools", "tools", ".ci/run"]

_GREP_EARLY = re.compile(r"^-[A-Za-z]*[qlLm]")   # -q, -qx, -qs, -l, -L, -m N, -m1
_GREP_LONG_EARLY = ("--quiet", "--silent", "--max-count", "--files-with-matches", "--files-without-match")
_SED_QUIT = re.compile(r"(^|[;{}\s0-9$/])[qQ]\s*[0-9]*\s*($|[;}])")
_AWK_EXIT = re.compile(r"\bexit\b")


def logical_lines(text: str):
    """(first line number, text) of each logical line: continuation backslashes joined, comments dropped."""
    buf, start = "", None
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not buf and stripped.startswith("#"):
            continue
        if start is None:
            start = n
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1] + " "
            continue
        buf += line
        yield start, buf
        buf, start = "", None
    if buf:
        yield start, buf


def _split_pipes(line: str) -> list[str]:
    """The stages of the pipelines on one line: split on a single ``|`` outside quotes (not ``||``, not ``|&``
    inside a word). Quote-aware enough for this project's scripts; stages keep their quotes."""
    stages, cur, quote, i = [], "", None, 0
    while i < len(line):
        c = line[i]
        if quote:
            cur += c
            if c == quote:
                quote = None
        elif c == "'":
            quote = c   # single quotes hide everything (awk and sed programs); double quotes do not hide $(...)
            cur += c
        elif c == "\\" and i + 1 < len(line):
            cur += c + line[i + 1]
            i += 1
        elif c == "#" and (not cur or cur[-1].isspace()):
            break   # a comment to the end of the line
        elif c == "|" and line[i + 1:i + 2] == "|":
            stages.append(cur)
            stages.append(None)   # '||': ends a pipeline
            cur = ""
            i += 1
        elif c == "|":
            stages.append(cur)
            cur = ""
        elif c == "&" and (cur.endswith(">") or cur.endswith("<") or line[i + 1:i + 2] == ">"):
            cur += c   # a redirection (2>&1, &>file), not a background or list operator
        elif c in ";&(){}" or (c == "$" and line[i + 1:i + 2] == "("):
            stages.append(cur)
            stages.append(None)   # a new command: what follows is no reader of what came before
            cur = ""
        else:
            cur += c
        i += 1
    stages.append(cur)
    # rebuild pipelines: a None separates commands; a reader is a stage that follows a '|'
    readers, out, seq = [], [], []
    for s in stages:
        if s is None:
            out.append(seq)
            seq = []
        else:
            seq.append(s)
    out.append(seq)
    for seq in out:
        readers.extend(seq[1:])
    return readers


def early_reader(stage: str) -> str | None:
    """Why ``stage``, as a pipeline's reader, may stop reading before its input ends (None if it reads it all)."""
    try:
        words = shlex.split(stage, posix=True)
    except ValueError:
        words = stage.split()
    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
        words = words[1:]   # VAR=value cmd
    if not words:
        return None
    cmd, args = Path(words[0]).name, words[1:]
    if cmd == "head":
        return "head stops reading after its lines (use sed -n 1p, or capture the output first)"
    if cmd in ("grep", "egrep", "fgrep"):
        for a in args:
            if a == "--":
                break
            if (a.startswith("-") and not a.startswith("--") and _GREP_EARLY.match(a)) or a.startswith(_GREP_LONG_EARLY):
                return f"grep {a} stops at the first match (capture the output first, then grep <<<\"$x\")"
        return None
    if cmd in ("awk", "gawk", "mawk"):
        # an exit in the END block comes after all input is read: only one before END quits early
        if any(_AWK_EXIT.search(a.split("END")[0]) for a in args if not a.startswith("-")):
            return "awk program with exit stops reading (keep the first match with a flag instead)"
        return None
    if cmd == "sed":
        for a in args:
            if not a.startswith("-") and _SED_QUIT.search(a):
                return "sed q stops reading (use sed -n with a line address and no q)"
        return None
    if cmd == "read":
        return "read takes one line and the pipeline's writer may still be writing"
    return None


def check_text(text: str) -> list[tuple[int, str]]:
    """(line, why) of every early-quitting pipeline reader in one shell script's text."""
    found = []
    for n, line in logical_lines(text):
        if "|" not in line:
            continue
        for stage in _split_pipes(line):
            why = early_reader(stage)
            if why:
                found.append((n, why))
    return found


def shell_files(paths: list[Path]) -> list[Path]:
    files = []
    for p in paths:
        if p.is_dir():
            files.extend(sorted(f for f in p.rglob("*.sh") if f.is_file()))
        elif p.is_file():
            files.append(p)
        else:
            raise FileNotFoundError(p)
    return files


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] if argv else [ROOT / d for d in DEFAULT]
    try:
        files = shell_files(paths)
    except FileNotFoundError as e:
        print(f"error: no such file or directory: {e}", file=sys.stderr)
        return 2
    n = 0
    for f in files:
        for line, why in check_text(f.read_text(errors="replace")):
            rel = f.resolve().relative_to(ROOT) if f.resolve().is_relative_to(ROOT) else f
            print(f"{rel}:{line}: {why}")
            n += 1
    return 1 if n else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
