"""Study families: one module per study (``fNNN.py``) declares its campaign experiments, their factors and
validation, its run ids and the capture tool that records one run. ``mpcc.campaign.spec`` reads the campaign file's
``family`` (default ``"000"``) and hands the experiments to that module."""
from __future__ import annotations

from types import ModuleType

from mpcc.errors import UserError
from mpcc.families import f000, f001, f002, f003, f004

FAMILIES: dict[str, ModuleType] = {m.FAMILY: m for m in (f000, f001, f002, f003, f004)}


def get_family(name) -> ModuleType:
    """The module of study family ``name`` ("000", ...); a one-line UserError for an unknown one."""
    key = str(name)
    if key not in FAMILIES:
        raise UserError(f"unknown family {name!r} (known: {', '.join(sorted(FAMILIES))})")
    return FAMILIES[key]
