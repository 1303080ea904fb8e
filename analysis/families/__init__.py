"""Per-run analysis of each study family, chosen by the run's ``params.json`` ``family`` (default "000").

A family module provides: ``COLUMNS`` (its rows' columns), ``SORT``, ``RUNS_COLUMNS`` (parameters listed per run),
``CAPTURES`` (capture file names), ``analyze_run(run_dir, buffers=)``, ``typed(df)``, ``input_files(run_dir)`` and
``has_raw(run_dir)``. ``analysis.dataset`` keeps one pipeline (listing, cache, parallel loading) for all of them.
Study 000's rows are ``analysis.families.roundrobin``'s; studies 001 and 003 share ``analysis.families.dualpath``; study 004's
rows (one per run and flow over chain topologies) are ``analysis.families.chain``'s; study 002's (one per run and
video client) ``analysis.families.streaming``'s.
"""
from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

from analysis.errors import AnalysisError

FAMILIES = {"000": "analysis.families.roundrobin", "001": "analysis.families.dualpath", "002": "analysis.families.streaming",
            "003": "analysis.families.dualpath", "004": "analysis.families.chain"}


def get(name) -> ModuleType:
    """The analysis module of study family ``name``; AnalysisError (one line) for an unknown family."""
    key = "000" if name is None else str(name)
    if key not in FAMILIES:
        raise AnalysisError(f"unknown study family {name!r} (known: {', '.join(sorted(FAMILIES))})")
    return importlib.import_module(FAMILIES[key])


def family_of_run(run_dir) -> str:
    """The family a run directory belongs to (params.json / meta.json "family"; "000" when absent)."""
    from analysis import runmeta
    try:
        p = runmeta.read_params(Path(run_dir))
    except AnalysisError:
        p = {}
    return family_of_params(p)


def family_of_params(params: dict) -> str:
    """The family of a run from its parameters (``runmeta.read_params``): "family", "000" when absent."""
    f = params.get("family")
    return "000" if f in (None, "") else str(f)
