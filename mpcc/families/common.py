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
