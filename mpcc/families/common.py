"""Helpers every study family's campaign module uses: value checks with one-line errors, number formatting."""
from __future__ import annotations

from pathlib import Path

from mpcc.errors import UserError

REPO = Path(__file__).resolve().parents[2]


def num(x: float) -> str:
    """A number as run ids and command lines spell it (``10``, ``2.5``)."""
    return f"{x:g}"


def as_list(v) -> list:
    return list(v) if isinstance(v, list) else [v]


def check_number(key: str, value, bounds: tuple, where: str) -> float:
    """``value`` as a float if it is a number within ``bounds`` = (lo, hi), else a one-line UserError."""
    lo, hi = bounds
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UserError(f"{where}: {key} must be a number, got {value!r}")
    if not lo <= value <= hi:
        raise UserError(f"{where}: {key}={value} is outside {lo}..{hi}")
    return float(value)


def check_value(key: str, value, numeric: dict, where: str):
    """A campaign value of ``key`` checked against ``numeric`` = {key: (minimum, maximum, integer?)}: an int for an
    integer key, else a float; a one-line UserError otherwise."""
    lo, hi, integer = numeric[key]
    v = check_number(key, value, (lo, hi), where)
    if integer:
        if v != int(v):
            raise UserError(f"{where}: {key} must be a whole number, got {value!r}")
        return int(v)
    return v


def factor_values(key: str, value, numeric: dict, ccs: tuple, where: str) -> list:
    """The values of one factor (a scalar or a list): ``cc`` names from ``ccs``, numbers per ``numeric``."""
    vals = as_list(value)
    if not vals:
        raise UserError(f"{where}: {key} is an empty list")
    if key == "cc":
        for v in vals:
            if not isinstance(v, str) or v not in ccs:
                raise UserError(f"{where}: unknown cc {v!r} (known: {', '.join(ccs)})")
        return vals
    return [check_value(key, v, numeric, where) for v in vals]


def experiment_header(exp, experiments: tuple, allowed: set, reps: int, where: str) -> tuple[str, int]:
    """(experiment name, repetitions) of one campaign experiment mapping, after checking its name, its keys (the
    ``allowed`` ones plus ``experiment`` and ``reps``) and ``reps`` (1..1000); one-line UserErrors."""
    if not isinstance(exp, dict):
        raise UserError(f"{where}: each experiment must be a mapping")
    name = exp.get("experiment")
    if name not in experiments:
        raise UserError(f"{where}: experiment must be one of {', '.join(experiments)}, got {name!r}")
    unknown = set(exp) - set(allowed) - {"experiment", "reps"}
    if unknown:
        raise UserError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    e_reps = exp.get("reps", reps)
    if isinstance(e_reps, bool) or not isinstance(e_reps, int) or not 1 <= e_reps <= 1000:
        raise UserError(f"{where}: reps must be an integer 1..1000")
    return name, e_reps
