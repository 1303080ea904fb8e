"""The ``mpcc`` command: one sub-command module per job under ``mpcc/commands/``.

Each module in ``COMMANDS`` defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and
``run(args) -> int``. Bad input becomes a one-line message on stderr and a non-zero exit; set
``MPCC_DEBUG=1`` to see the traceback of an unexpected error.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings

from analysis.errors import AnalysisError, AnalysisWarning
from mpcc.errors import UserError

# Sub-command modules, in the order `mpcc --help` lists them.
COMMANDS = ["analyze", "reorder", "campaign", "scorecard", "reproduce", "bundle", "verify_raw", "ingest"]


def _load_commands():
    mods = []
    for name in COMMANDS:
        try:
            mods.append(importlib.import_module(f"mpcc.commands.{name}"))
        except ModuleNotFoundError as exc:  # a command not built yet
            if exc.name != f"mpcc.commands.{name}":
                raise
    return mods


class _OneLineParser(argparse.ArgumentParser):
    """argparse with one-line errors: ``<prog>: error: <message> (see <prog> --help)`` and exit status 2, instead of
    the usage block first (sub-command parsers inherit it)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(prog="mpcc", description="multipath-cc-lab: testbed runs, capture analysis, statistics.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for mod in _load_commands():
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def _one_line_warnings(show):
    """A ``warnings.showwarning`` that prints the library's own warnings (``AnalysisWarning``, e.g. a truncated
    capture record) as one line ``mpcc: warning: <message>``, and any other warning as ``show`` does."""
    def showwarning(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, AnalysisWarning):
            try:
                print(f"mpcc: warning: {message}", file=file or sys.stderr)
            except OSError:
                pass
        else:
            show(message, category, filename, lineno, file, line)
    return showwarning


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    show = warnings.showwarning
    warnings.showwarning = _one_line_warnings(show)
    try:
        return int(args._run(args) or 0)
    except UserError as exc:
        print(f"mpcc: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except (AnalysisError, FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        msg = str(exc) if isinstance(exc, AnalysisError) else f"{exc.strerror}: {exc.filename}"
        print(f"mpcc: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("mpcc: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 - last line of defence: one line, never a traceback
        if os.environ.get("MPCC_DEBUG"):
            raise
        print(f"mpcc: internal error: {type(exc).__name__}: {exc} (set MPCC_DEBUG=1 for details)", file=sys.stderr)
        return 70
    finally:
        warnings.showwarning = show


if __name__ == "__main__":
    sys.exit(main())
