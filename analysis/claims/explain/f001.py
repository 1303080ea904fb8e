"""Explanations of study 001's verdicts other than "reproduced" (see analysis.claims.explain; docs/claims.md).

The paper ran MPTCP's redundant scheduler in ns-3; this kernel has only the default one
(``net.mptcp.available_schedulers``), so its statements about the redundant scheduler are "not run" and a labelled
substitute row judges them on the default scheduler. A substitute that differs is explained by that substitution:
the redundant scheduler sends every segment on both subflows, the default one splits them. Absolute values are "not
comparable" (explained where they are made, ``analysis.claims.dualpath``)."""
from __future__ import annotations

from analysis.claims import core


def explain(todo: list[dict], ctx: core.Ctx, rows: list[dict]) -> None:
    """Explain the substitute rows in ``todo`` (in place); the rest gets the generic explanation."""
    for r in todo:
        if r.get("substitute_for") and r["verdict"] == "not reproduced":
            core.explain(r, "testbed-difference",
                         f"Judged on MPTCP's default scheduler, which splits segments between the subflows, because "
                         f"this kernel lacks the redundant scheduler the paper ran, which sends every segment on both "
                         f"subflows. The statement "
                         f"{r['substitute_for']} itself stays 'not run'; this row says what the default scheduler does.",
                         statement=r["substitute_for"], scheduler_used="default", scheduler_of_paper="redundant")
    return None
