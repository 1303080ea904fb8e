"""Exceptions the analysis library raises for bad input (reported as one line by the CLI)."""
import sys


class AnalysisWarning(UserWarning):
    """Base class of the library's own warnings: one line for the user (the CLI prints ``mpcc: warning: <message>``)."""


class CaptureWarning(AnalysisWarning):
    """A capture read with damage skipped: a truncated or corrupt record, a cut-off gzip/xz stream."""


class AnalysisError(Exception):
    """Base class: an input the library cannot analyse; the message is one line for the user."""


class CaptureError(AnalysisError):
    """A capture file that cannot be read: empty, not pcap/pcapng, corrupt header, unsupported link type."""


class NoTrafficError(AnalysisError):
    """A readable capture that holds no packet of the kind asked for (e.g. no TCP)."""


def cli_status(work) -> int:
    """Exit status of a module's command line: 0 after ``work()``, 2 with the one-line ``error: <message>`` on stderr
    when it raises AnalysisError (bad input is never a traceback)."""
    try:
        work()
    except AnalysisError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
