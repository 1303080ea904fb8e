"""Explanations of study 001's verdicts other than "reproduced" (see analysis.claims.explain; docs/claims.md).

The paper ran MPTCP's redundant scheduler in ns-3; this kernel has only the default one
(``net.mptcp.available_schedulers``), so its statements about the redundant scheduler are "not run" and a labelled
substitute row judges them on the default scheduler. A substitute that differs is explained by that substitution:
the redundant scheduler sends every segment on both subflows, the default one splits them. Absolute values are "not
comparable" (explained where they are made, ``analysis.claims.dualpath``)."""
from __future__ import annotations

from analysis.claims import core


def _redundant_skip_reason(ctx: core.Ctx) -> str | None:
    """The SKIPPED reason of this dataset's redundant-scheduler MPTCP runs (None when none was skipped)."""
    runs = ctx.runs
    if runs is None or runs.empty or "reason" not in runs:
        return None
    skipped = runs[(runs["status"] == "skipped") & runs["reason"].astype(str).str.contains("redundant")]
    return str(skipped["reason"].iloc[0]) if len(skipped) else None


def explain(todo: list[dict], ctx: core.Ctx, rows: list[dict]) -> None:
    """Explain the substitute rows in ``todo`` (in place), and the statements over every mode left undecided only
    because the redundant scheduler's mode could not run here; the rest gets the generic explanation."""
    skip = _redundant_skip_reason(ctx)
    for r in todo:
        note = str(r.get("note") or "")
        if (skip and not r.get("substitute_for") and r["verdict"] == "inconclusive"
                and "(MPTCP scheduler redundant)" in note and "mode# levels run" in note
                and "interval straddles" not in note):
            core.explain(r, "testbed-difference",
                         f"It holds for every mode this kernel can run, but the paper's MPTCP mode (the redundant "
                         f"scheduler) could not run here: {skip}. Row {r['claim_id']}/default judges it with the "
                         f"default scheduler in that mode.", reason=skip, substitute=f"{r['claim_id']}/default")
            continue
        if r.get("substitute_for") and r["verdict"] == "not reproduced":
            core.explain(r, "testbed-difference",
                         f"Judged on MPTCP's default scheduler, which splits segments between the subflows, because "
                         f"this kernel lacks the redundant scheduler the paper ran, which sends every segment on both "
                         f"subflows. The statement "
                         f"{r['substitute_for']} itself stays 'not run'; this row says what the default scheduler does.",
                         statement=r["substitute_for"], scheduler_used="default", scheduler_of_paper="redundant")
    return None
