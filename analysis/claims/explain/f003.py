"""Explanations of study 003's verdicts other than "reproduced" (see analysis.claims.explain; docs/claims.md).

Study 003's paths (Table 1): path 1 10 Mbit/s, 2 ms one way; path 2 2 Mbit/s, 10 ms; switch queues of 1000 packets
("no queue management") or 50 (OVS queue sizing). What the rules use:
* a FIFO of Q full-size (1500-byte) packets drained at 10 Mbit/s adds Q x 1.2 ms of queueing delay when a flow keeps
  it full (50 packets: 60 ms; 1000: 1.2 s), which is what a single loss-based flow does here;
* the paper prints TCP at 12.98 Mbit/s over the 10 Mbit/s path 1 (paper-inconsistent);
* its latency, jitter and loss tools and the ping's path are not printed.
"""
from __future__ import annotations

import math

from analysis.claims import core
from analysis.claims.core import fmt

PKT_MS_AT_10MBIT = 1500 * 8 / 10e6 * 1e3   # 1.2 ms per full-size packet on path 1
DEFAULT_QDISC = ("the Table 2 scenarios recorded in the Debian VM with fq_codel, the default qdisc of the paper's "
                 "Linux era, at each switch (this kernel lacks fq_codel), with ping on each path")


def _mean(ctx, col, mode, queue, path=1, experiment="scenario") -> float:
    d = ctx.df
    sel = d[(d["mode"] == mode) & (d["experiment"] == experiment) & (d["path"] == path)
            & (d["queue_pkts"].astype(float) == float(queue))]
    x = core.sample(sel, col)
    return float(x.mean()) if x.size else math.nan


def _throughput(r, ctx):
    if r["claim_id"] not in ("003-S03", "003-S04"):
        return None
    ours = _mean(ctx, "throughput_mbps", "tcp_path1", 1000)
    return core.explain(r, "paper-inconsistent",
                        "The paper prints single-path TCP at 12.98 Mbit/s (Table 2, TCP Baseline) over path 1, which "
                        "its Table 1 gives as 10 Mbit/s (both paths together: 12 Mbit/s); no TCP flow on one path can "
                        f"exceed that path's rate. Ours: {fmt(ours, 4)} Mbit/s.", paper_tcp_mbps=12.98,
                        path1_rate_mbps=10.0, ours_mbps=ours)


def _latency(r, ctx):
    rtt50 = _mean(ctx, "ping_rtt_mean_ms", "tcp_path1", 50)
    rtt1000 = _mean(ctx, "ping_rtt_mean_ms", "tcp_path1", 1000)
    flood = _mean(ctx, "flood_ping_rtt_mean_ms", "mptcp", 50, experiment="resilience")
    text = (f"Our ping RTT over path 1 while TCP runs is {fmt(rtt50, 3)} ms with the 50-packet queue and "
            f"{fmt(rtt1000, 4)} ms with the 1000-packet one (during the flood, MPTCP: {fmt(flood, 3)} ms): a full "
            f"FIFO adds {fmt(50 * PKT_MS_AT_10MBIT, 3)} ms and {fmt(1000 * PKT_MS_AT_10MBIT, 4)} ms at 10 Mbit/s. The "
            "paper's 16.66 ms (queue 50), 34.86 ms (queue 1000, Table 2) and 10.32 ms (flood) are far below a full "
            "FIFO of either size, so its flows did not keep a FIFO of that many full-size packets full: either its "
            "switch queue was not a plain FIFO (many Linux distributions of its era default to fq_codel, whose "
            "target keeps the standing queue near 5 ms) or its ping did not cross the loaded queue. Not yet measured: "
            f"{DEFAULT_QDISC} decides it.")
    return core.explain(r, "open", text, ping_rtt_ms_queue50=rtt50, ping_rtt_ms_queue1000=rtt1000,
                        ping_rtt_ms_flood=flood, full_fifo_ms_queue50=50 * PKT_MS_AT_10MBIT,
                        full_fifo_ms_queue1000=1000 * PKT_MS_AT_10MBIT)


def _loss(r, ctx):
    mode = "mptcp" if r["claim_id"].endswith("mptcp") else "tcp_path1"
    seg, ping = _mean(ctx, "loss_pct", mode, 50), _mean(ctx, "ping_loss_pct", mode, 50)
    return core.explain(r, "open",
                        f"Ours with the 50-packet queue, {mode}: {fmt(seg, 3)} % of path 1's data segments lost, "
                        f"{fmt(ping, 3)} % of pings lost; the paper's 19 % is far from both, and it does not name the "
                        "tool behind its loss figure. Not yet measured: the loss of an iperf3 UDP test at the paper's "
                        f"rate (the likely tool), in {DEFAULT_QDISC}.", data_segment_loss_pct=seg, ping_loss_pct=ping)


def _jitter(r, ctx):
    a = _mean(ctx, "jitter_ms", "mptcp", 50)
    b = _mean(ctx, "jitter_ms", "tcp_path1", 1000)
    return core.explain(r, "open",
                        f"Our jitter (mean |D_i - D_i+1| of path 1's one-way data delays) is {fmt(a, 3)} ms for "
                        f"MPTCP with the 50-packet queue and {fmt(b, 3)} ms for TCP with the 1000-packet one: the "
                        "scenarios differ by about a tenth of a millisecond, where the queue discipline and the "
                        f"paper's (unnamed) jitter tool decide the order. Not yet measured: {DEFAULT_QDISC}.",
                        jitter_ms_mptcp_q50=a, jitter_ms_tcp_q1000=b)


def _min_interval(r, ctx):
    m = _mean(ctx, "min_interval_mbps", "mptcp", 1000)
    t = _mean(ctx, "min_interval_mbps", "tcp_path1", 1000)
    return core.explain(r, "open",
                        f"Our worst 1-s interval with the 1000-packet queue is {fmt(m, 3)} Mbit/s for MPTCP and "
                        f"{fmt(t, 3)} Mbit/s for single-path TCP; the paper's drops of MPTCP to 0 Mbit/s come from its "
                        "throughput graphs, which the text describes without numbers. Whether such stalls come from "
                        f"the queue discipline is not yet measured: {DEFAULT_QDISC}.",
                        min_interval_mbps_mptcp=m, min_interval_mbps_tcp=t)


RULES = {"003-S03": _throughput, "003-S04": _throughput, "003-S09": _latency, "003-S10": _latency,
         "003-S15": _latency, "003-S13": _loss, "003-S12": _jitter, "003-S21": _jitter, "003-S06": _min_interval}


def explain(todo: list[dict], ctx: core.Ctx, rows: list[dict]) -> None:
    """Explain the decisive rows of ``todo`` (in place) by their statement's rule."""
    for r in todo:
        if r["verdict"] != "not reproduced":
            continue
        rule = RULES.get(r["claim_id"].rsplit("-", 1)[0] if r["claim_id"].startswith("003-S13") else r["claim_id"])
        if rule is not None:
            rule(r, ctx)
    return None
