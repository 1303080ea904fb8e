"""Explanations of study 001's verdicts other than "reproduced" (see analysis.claims.explain; docs/claims.md).

The paper ran MPTCP's redundant scheduler in ns-3; this kernel has only the default one
(``net.mptcp.available_schedulers``), so its statements about the redundant scheduler are "not run" and a labelled
substitute row judges them on the default scheduler. A substitute that differs is explained by that substitution:
the redundant scheduler sends every segment on both subflows, the default one splits them. Absolute values are "not
comparable" (explained where they are made, ``analysis.claims.dualpath``)."""
from __future__ import annotations

import math

from analysis.claims import core
from analysis.claims.core import fmt
from analysis.claims.dualpath import SINGLE_MODES

MODES = (*SINGLE_MODES["001"], "mptcp")


def _large_minus_small(ctx: core.Ctx, column: str) -> dict:
    """Per mode, the mean of ``column`` (one value a run) at the largest minus at the smallest buffer, in the column's
    unit; MPTCP over the runs this dataset has (the default scheduler where the redundant one could not run)."""
    d = ctx.df.drop_duplicates("run_id") if "run_id" in ctx.df else ctx.df
    d = d[d["buffer_bytes"].notna()]
    if d.empty:
        return {}
    lo, hi = float(d["buffer_bytes"].min()), float(d["buffer_bytes"].max())
    out, above = {}, []
    for m in MODES:
        x = d[(d["mode"] == m) & (d["buffer_bytes"] == hi)][column].astype(float).to_numpy()
        y = d[(d["mode"] == m) & (d["buffer_bytes"] == lo)][column].astype(float).to_numpy()
        out[m] = float(x.mean() - y.mean()) if len(x) and len(y) else math.nan
        if len(x) >= 2 and len(y) >= 2 and core.welch_diff_ci(x, y, ctx.alpha).lo > 0:
            above.append(m)
    return {"smallest_buffer_bytes": lo, "largest_buffer_bytes": hi, "difference": out, "significantly_above": above}


def _throughput_buffer(r: dict, ctx: core.Ctx, skip: str | None) -> None:
    """001-S05 (throughput lower with the large buffer), not reproduced: each mode's measured difference."""
    diff = _large_minus_small(ctx, "throughput_mbps")
    if not diff:
        return
    per = diff["difference"]
    sched = "default scheduler, the substitute" if skip else "its scheduler"
    parts = [f"{m}{' (' + sched + ')' if m == 'mptcp' else ''} {'+' if v > 0 else ''}{fmt(v, 3)} Mbit/s"
             for m, v in per.items() if math.isfinite(v)]
    rises = [m for m in diff["significantly_above"] if m != "mptcp"]
    core.explain(r, "open",
                 f"Ours, iperf3's receiver goodput with the largest buffer ({fmt(diff['largest_buffer_bytes'], 6)} B) "
                 f"minus the smallest ({fmt(diff['smallest_buffer_bytes'], 5)} B), per mode: " + ", ".join(parts)
                 + ". " + (f"Single-path TCP gains with the larger buffer ({', '.join(rises)}: the Welch interval lies above "
                           "0), as a "
                           "drop-tail queue that holds more of the bandwidth-delay product lets one loss-based flow "
                           "keep its link busier (an inference about the mechanism, not measured apart). "
                           if rises else "")
                 + "The paper's decrease comes from its ns-3 simulation, whose LTE and WiFi models it does not print, "
                 "and its MPTCP ran the redundant scheduler" + (f", which could not run here ({skip})" if skip else "")
                 + ". The experiment that would decide it: the paper's simulation (ns-3 with its LTE and WiFi models "
                 "at the four buffer sizes), and the redundant scheduler on a kernel that has it.",
                 throughput_large_minus_small_mbps=per, smallest_buffer_bytes=diff["smallest_buffer_bytes"],
                 largest_buffer_bytes=diff["largest_buffer_bytes"])


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
        if r["claim_id"] == "001-S05" and r["verdict"] == "not reproduced":
            _throughput_buffer(r, ctx, skip)
            continue
        if r.get("substitute_for") and r["verdict"] == "not reproduced":
            core.explain(r, "testbed-difference",
                         f"Judged on MPTCP's default scheduler, which splits segments between the subflows, because "
                         f"this kernel lacks the redundant scheduler the paper ran, which sends every segment on both "
                         f"subflows. The statement "
                         f"{r['substitute_for']} itself stays 'not run'; this row says what the default scheduler does.",
                         statement=r["substitute_for"], scheduler_used="default", scheduler_of_paper="redundant")
    return None
