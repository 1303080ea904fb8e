"""Explanations of study 000's verdicts other than "reproduced" (see analysis.claims.explain)."""
from __future__ import annotations

from analysis.claims import core


def explain(todo: list[dict], ctx: core.Ctx, rows: list[dict]) -> None:
    """Explain the rows in ``todo`` (in place) from the paper's numbers and our measurements; ``rows`` is the whole
    study's table (for claims explained by another claim's result)."""
    return None
