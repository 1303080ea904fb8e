"""Explanations of study 000's verdicts other than "reproduced" (see analysis.claims.explain; docs/claims.md).

Each rule is keyed by a claim family (the claim id before ``-``) and writes its text from the paper's own numbers
(``data/reference``) and from our rows in ``ctx.df``; it never looks at the paper's number to decide which
explanation applies. Units: Mbit/s, ms, Jain's index (dimensionless).

What is measured and what is open (docs/claims.md, "Open explanations"):
* S01 for BIC: the paper's own Table 3 gives 10.69x, below its text's "more than 11x" (paper-inconsistent).
* S08/S09 (BBR under loss): our goodput next to router1's bytes on the wire including retransmissions, which fit the
  paper's "about 19 Mbit/s" (metric-definition).
* S10 at 1 % loss and S26: the paper's own S06/S07/S08 contradict them (paper-inconsistent, arithmetic in the text).
* S05/S23/S11/S12/S13 (RTT), S06/S07/S10 (loss response), Table 4's pair Jain indices and the UDP-fairness claims
  S17-S20: what study 000's fidelity ablation (``data/fidelity000``, ``analysis.ablation``, notebook 13) measured
  for the claim's quantities under the paper's NetEm semantics (queue models tbf-netem and netem-tbf against the
  baseline fifo-after-delay; 8192-byte UDP datagrams against one MSS) is cited with its intervals
  (:func:`_ablation`). The kind is ``testbed-difference`` when the dataset being explained ran the baseline queue
  model and a faithful queue model moved one of the claim's quantities toward the paper beyond run-to-run noise;
  otherwise the difference stays ``open`` and the text says what the ablation ruled out (or, before the ablation
  is bundled, which experiment decides it).
"""
from __future__ import annotations

import math
from functools import lru_cache

import pandas as pd

from analysis import ablation, bic000, kernel415, kernel415_bbr, recovery000, reference
from analysis.claims import core
from analysis.claims.core import fmt
from analysis.metrics.fairness import pair_jain

PAPER_RUN_S = 100.0
FIDELITY = "the fidelity ablation of study 000 (docs/claims.md, 'Open explanations')"


def _mean(ctx, col, **cond) -> float:
    x = core.sample(core.rows(ctx, **cond), col)
    return float(x.mean()) if x.size else math.nan


def _single(ctx, cc, d, loss, col) -> float:
    return _mean(ctx, col, single_flow=True, cc=cc, path_mode="multipath", link_delay_ms=float(d),
                 loss_pct=float(loss))


def _durations(ctx) -> list[float]:
    if "duration_s" not in ctx.df or ctx.df.empty:
        return []
    return sorted({float(x) for x in ctx.df["duration_s"].dropna()})


def _cc(r) -> str:
    return r["claim_id"].split("-", 1)[1] if "-" in r["claim_id"] else ""


def _unit(u: str) -> str:
    return "" if u in ("index", "fraction of 20 Mbit/s") else f" {u}"


# what this dataset's switches did with the 100-packet buffer (docs/netem-semantics.md, sections 3, 9 and 11)
_BUFFER = {
    "fifo-after-delay": "Our switches (queue model fifo-after-delay) hold 100 packets in a FIFO after the delay line; "
                        "the paper's NetEm counts the packets in its delay line towards its 100-packet limit, and the "
                        "paper does not say how it chained TBF and NetEm, so its queue may have been smaller.",
    "tbf-netem": "Our switches ran the paper's NetEm as TBF's child (queue model tbf-netem, the emulation compared with "
                 "real netem in docs/netem-semantics.md section 10): one limit of 100 packets for the delay line and "
                 "the queue, our reading of the paper's text (NetEm sets the delay, the loss and the 100-packet "
                 "buffer, its section 2.1; it does not say how it chained TBF and NetEm).",
    "netem-tbf": "Our switches ran NetEm before TBF (queue model netem-tbf): NetEm's 100 caps the delay line, and the "
                 "queue stands in TBF's own 151,400 bytes behind it.",
}


def _buffer(ctx) -> str:
    """One sentence: how the switches of the dataset behind ``ctx`` held their 100-packet buffer."""
    qms = sorted({qm for qm, _ in ablation.arm_set(ctx.df)})
    if len(qms) == 1 and qms[0] in _BUFFER:
        return _BUFFER[qms[0]]
    return f"This dataset ran the queue models {', '.join(qms) or 'none'}."


def _datagram(ctx) -> str:
    """One sentence: the UDP datagram size of the dataset's udp_fairness runs (iperf3 -l, docs/netem-semantics.md
    section 5)."""
    df = ctx.df
    udp = df[df["experiment"] == "udp_fairness"] if "experiment" in df else df.iloc[0:0]
    lens = sorted({ln for _, ln in ablation.arm_set(udp)}, key=lambda x: x or 0)
    if not lens:
        return ""
    if lens == [None]:
        return ("Our UDP runs sent iperf3's default datagram (one MSS, 1448 bytes here, one packet each), not the "
                "8192 bytes that the paper's iperf3 most likely sent by default (an inference: it names no version, "
                "and its Ubuntu Server 16.04, section 2.1, predates iperf3 3.1.5).")
    if len(lens) == 1:
        return (f"Our UDP runs sent {lens[0]}-byte datagrams (iperf3 -l; the paper's, most likely older than 3.1.5, "
                "sent 8192 by default), fragmented over the round robin; UDP goodput counts the datagrams that arrived "
                "whole.")
    return "This dataset's UDP runs mix datagram sizes " + ", ".join("default" if x is None else f"{x} B" for x in lens) + "."


def _interval(i: dict) -> str:
    """An effect's 95 % interval in words; none when an arm has a single run (no spread to estimate)."""
    lo, hi = i["diff_low"], i["diff_high"]
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return "no interval: a single run in an arm"
    return f"95 % interval {fmt(lo, 3)} to {fmt(hi, 3)}"


def _datagram_arms(items: list[dict]) -> bool:
    """Whether the cited cells include datagram-size arms (UDP claims)."""
    return any(i["udp_len_bytes"] is not None for i in items)


def _mechanism_parts(items: list[dict]) -> list[str]:
    """The paper's mechanisms that moved the cells ``items`` toward the paper, each credited by the arm that applies
    it alone (a faithful queue model with one datagram per packet; the paper era's datagram under fifo-after-delay);
    an arm that applies both is credited to the two together only when neither alone moved a cell."""
    big = f"{ablation.PAPER_DATAGRAM}-byte datagrams"
    paper_len = [i["udp_len_bytes"] == ablation.PAPER_DATAGRAM for i in items]
    queue = any(i["queue_model"] in ablation.FAITHFUL and not d for i, d in zip(items, paper_len))
    datagram = any(i["queue_model"] not in ablation.FAITHFUL and d for i, d in zip(items, paper_len))
    parts = (["NetEm's queue semantics"] if queue else []) + ([f"the paper era's {big}"] if datagram else [])
    if not parts and items:
        parts = [f"NetEm's queue semantics together with the paper era's {big}"]
    return parts


def _mechanisms(items: list[dict]) -> str:
    """Which of the paper's mechanisms moved the cells ``items`` toward the paper, in words."""
    return " and ".join(_mechanism_parts(items)) or "the paper's mechanisms"


def _ablation(r, ctx, claim: str, quantity_has: str | None = None, config_has: str | None = None,
              undecided: str = "") -> tuple[str, str, dict]:
    """(kind, text, evidence) from the fidelity ablation for statement ``claim`` (its effect rows whose quantity
    contains ``quantity_has`` and config ``config_has``). kind: "testbed-difference" when ``ctx``'s runs all ran the
    baseline (queue model fifo-after-delay, one datagram per packet) and at least one cell moved toward the paper
    beyond noise under an arm that applies one of the paper's mechanisms (``analysis.ablation.faithful``: NetEm's
    queue semantics or the paper era's 8192-byte datagrams; the text credits each by the arm that applies it alone,
    :func:`_mechanism_parts`); else "open". A change within noise is given without a direction. Before the ablation
    is bundled, or while its bundle holds only part of the campaign's runs (a recording in progress): "open" and ``undecided`` (the experiment that would decide it)."""
    prog = ablation.recording_progress()
    if prog is not None and not ablation.complete():
        return "open", (f"Being recorded: {FIDELITY}{undecided} decides it; its bundle (data/fidelity000) holds "
                        f"{prog[0]} of {prog[1]} runs so far."), {}
    got = ablation.load_effects()
    if got is None:
        return "open", f"Not yet measured: {FIDELITY}{undecided} decides it.", {}
    _, eff, n_runs = got
    if config_has:
        eff = eff[eff["config"].str.contains(config_has, regex=False)]
    c = ablation.cite(eff, claim, quantity_has)
    if not c["cells"]:
        what = undecided.strip(" ,")
        return "open", (f"The fidelity ablation (data/fidelity000) has no runs for {claim}"
                        + (f" ({what})" if what else "") + "."), {}
    items = c["items"]
    moved = sorted([i for i in items if i["moved"]], key=lambda i: (not i["faithful"], -abs(i["diff"])))
    helped = [i for i in moved if i["toward_paper"] is True and i["faithful"]]
    shown = moved[:3] if moved else sorted(items, key=lambda i: -abs(i["diff"]) if math.isfinite(i["diff"]) else 0)[:1]
    eg = "; ".join(f"{i['quantity']} at {i['config']}: {fmt(i['baseline_mean'], 3)} under fifo-after-delay, "
                   f"{fmt(i['arm_mean'], 3)} under {i['arm']} ({fmt(i['diff'], 3)}{_unit(i['unit'])}, {_interval(i)}"
                   + ("" if not i["moved"] else ", toward the paper" if i["toward_paper"] is True else
                      ", away from the paper" if i["toward_paper"] is False else "") + ")" for i in shown)
    n, udp = c["cells"], _datagram_arms(items)
    text = (f"The fidelity ablation (data/fidelity000: {n_runs} runs of 100 s, notebook 13) ran this claim's "
            f"quantities under the paper's NetEm semantics{' and datagram size' if udp else ''}: of {n} "
            f"cell{'s' if n != 1 else ''} (quantity x configuration x arm) {c['moved']} moved beyond run-to-run "
            f"noise, {c['toward']} toward the paper and {c['away']} away "
            f"({'e.g. ' if moved else 'largest change: '}{eg}).")
    arms = ablation.arm_set(ctx.df)
    baseline = bool(arms) and not any(ablation.faithful(qm, ln) for qm, ln in arms)
    factors = "the queue model nor the datagram size" if udp else None
    if baseline and c["faithful_toward"]:
        kind = "testbed-difference"
        text += (f" This dataset ran the baseline (a FIFO after the delay line"
                 f"{', one datagram per packet' if udp else ''}); {_mechanisms(helped)} move the result toward the "
                 f"paper's.")
    else:
        kind = "open"
        if not c["faithful_toward"]:
            text += (f" Neither {factors} accounts for the difference here: it stays open." if factors else
                     " The queue model does not account for the difference here: it stays open.")
        else:
            text += (f" This dataset already ran {', '.join(ablation.arm_label(qm, ln) for qm, ln in arms)}: what "
                     f"remains is not {'the queue model or the datagram size' if factors else 'the queue model'}.")
    ev = {"ablation": {k: c[k] for k in ("cells", "moved", "toward", "away", "faithful_toward")},
          "ablation_cells": shown, "ablation_bundle": "data/fidelity000", "notebook": "notebooks/13"}
    return kind, text, ev


# --------------------------------------------------------------------------------------------- rules

def _s01(r, ctx):
    cc = _cc(r)
    t3 = reference.load_table3().set_index(["cc", "path_mode"])
    s, m = t3.loc[(cc, "single"), "sack_blocks"], t3.loc[(cc, "multipath"), "sack_blocks"]
    if s and m / s <= 11:
        return core.explain(r, "paper-inconsistent",
                            f"The paper's own Table 3 gives {cc}'s multipath/single-path SACK blocks as {int(m)}/{int(s)} "
                            f"= {fmt(m / s, 4)}x, not more than 11x as its text says; ours is {fmt(r['ours'], 4)}x.",
                            paper_table3_ratio=m / s, ours_ratio=r["ours"])
    return None


def _rtt_queue(r, ctx):
    """S05/S23 (BBR's RTT advantage over link delays) and S11/S12/S13 (RTT under loss): the standing queue."""
    sid, cc = r["claim_id"].split("-", 1)
    if sid in ("S05", "S23"):
        gaps = {d: _single(ctx, cc, d, 0, "rtt_mean_ms") - _single(ctx, "bbr", d, 0, "rtt_mean_ms")
                for d in range(10, 101, 10)}
        shown = {f"{d} ms": g for d, g in gaps.items() if math.isfinite(g)}
        text = (f"Our {cc} flow's mean RTT exceeds BBR's by "
                + ", ".join(f"{fmt(g, 3)} ms at {d}" for d, g in list(shown.items())[::3])
                + " of link delay (paper: 26-58 ms). The gap is the standing queue that a loss-based flow keeps in the "
                "100-packet buffers and BBR does not. " + _buffer(ctx) + " The RTT definition is ruled out (iperf3's own "
                "sender mean RTT gives the same gaps, docs/claims.md). ")
        kind, more, ev = _ablation(r, ctx, "S05", f"RTT gap {cc}",
                                   undecided=", the queue models at link delays 10/50/100 ms,")
        kind, more2, ev2 = _kernel415_bbr(kind, f"gap0_{cc}", f"{cc}'s mean RTT minus BBR's at loss 0 % and link "
                                          "delay 10 ms (the paper's range spans 10-100 ms)", "26-58 ms")
        return core.explain(r, kind, text + more + more2, gap_ms_by_link_delay=shown, paper_gap_ms=[26, 58], **ev,
                            **ev2)
    rtts = {loss: _single(ctx, cc, 10, loss, "rtt_mean_ms") for loss in (0, 1, 5, 10)}
    shown = {f"{k} %": v for k, v in rtts.items() if math.isfinite(v)}
    text = (f"Our {cc} flow's mean RTT at link delay 10 ms is "
            + ", ".join(f"{fmt(v, 3)} ms at loss {k}" for k, v in shown.items())
            + ". Under random loss the RTT is the propagation delay plus the queue the flow keeps in the buffers, "
            "so it depends on the same buffer semantics as S05 (NetEm's 100-packet limit in the paper, section 2.1). "
            + ("The RTT definition matters here too: in data/paper, iperf3's own sender RTT (the kernel's smoothed RTT, "
               "which times no segment an ACK covering retransmitted data acknowledges) gives BBR a lower mean RTT than "
               "the capture's ACK-based RTT at every loss rate, falling with loss where the paper has BBR's RTT "
               "stable; for reno, bic and cubic the two agree within a few ms (docs/claims.md, "
               "tools/iperf3_rtt_gap.py). "
               if cc == "bbr" or sid == "S13" else
               "The RTT definition does not move it: in data/paper, iperf3's own sender RTT agrees with the capture's "
               "within a few ms for the loss-based flows (docs/claims.md, tools/iperf3_rtt_gap.py). "))
    qty = {"S11": f"RTT {cc}", "S12": "RTT bbr", "S13": f"RTT gap bbr − {cc}"}.get(sid)
    kind, more, ev = _ablation(r, ctx, sid, qty, undecided=" at loss 1/5/10 %")
    q415 = {"S12": ("rtt_bbr_l1", "BBR's mean RTT at loss 1 %", "24 ms"),
            "S13": (f"gap1_{cc}", f"BBR's mean RTT minus {cc}'s at loss 1 %", "12 ms")}.get(sid)
    if q415:
        kind, more2, ev2 = _kernel415_bbr(kind, *q415)
        more, ev = more + more2, {**ev, **ev2}
    if sid == "S11" and cc == "bic":
        kind, more2, ev2 = _bic415_measured(kind, bic000.cite_rtt(), _bic_kernel(ctx) == "4.15",
                                            "BIC's mean RTT at loss 1 %", "ms", "paper_ms")
        more, ev = more + more2, {**ev, **ev2}
    return core.explain(r, kind, text + more, rtt_ms_by_loss=shown, **ev)


def _loss_drop(r, ctx):
    """S06/S07: throughput drop from loss 0 % to 1 % / 10 %."""
    sid, cc = r["claim_id"].split("-", 1)
    loss = 1 if sid == "S06" else 10
    g0, g1 = _single(ctx, cc, 10, 0, "goodput_mbps"), _single(ctx, cc, 10, loss, "goodput_mbps")
    text = (f"Ours: {cc} {fmt(g0, 4)} Mbit/s at loss 0 % and {fmt(g1, 4)} Mbit/s at {loss} %, a drop of "
            f"{fmt(g0 - g1, 3)} Mbit/s. The loss is where the paper puts it: on the data direction only (its section "
            "2.2: loss only on packets from the source host to the destination host), a random drop as packets "
            "enter the switch, before its delay and buffer, where NetEm draws its loss in either chaining of TBF "
            "and NetEm (docs/netem-semantics.md, section 2.3). ")
    kind, more, ev = _ablation(r, ctx, sid, f"goodput drop {cc}", undecided=" at loss 1/5/10 %")
    paper_bic_ran = cc == "bic" and _bic_kernel(ctx) == "4.15"
    kind, more3, ev3 = _kernel415(sid, cc, kind, paper_bic_ran=paper_bic_ran)
    kind, more2, ev2 = _recovery(sid, cc, kind, kernel_measured=bool(more3))
    kind, more4, ev4 = _bic415(sid, cc, kind, paper_bic_ran=paper_bic_ran)
    return core.explain(r, kind, text + more + more2 + more3 + more4, goodput_loss0_mbps=g0, goodput_loss_mbps=g1,
                        loss_pct=loss, **ev, **ev2, **ev3, **ev4)


def _drop_text(d) -> str:
    """One arm's cited drop (mean, low, high, verdict) as the explanations write it."""
    return f"{fmt(d[0], 3)} Mbit/s (95 % interval {fmt(d[1], 3)} to {fmt(d[2], 3)}, {d[3]})"


def _difference(kind: str, c: dict, unit: str, paper: str, credit: str, not_it: str,
                within: str) -> tuple[str, str]:
    """(kind, text) of a cited experiment's effect ``c`` (diff, diff_low, diff_high, moved, toward_paper): "the
    difference D (95 % interval L to H) is " and its outcome: beyond noise toward the paper's ``paper`` (then
    ``credit``, and the kind "testbed-difference"), beyond noise away from it (``not_it``), or within noise
    (``within``); ``kind`` unchanged but in the first case."""
    text = (f"the difference {fmt(c['diff'], 3)}{_unit(unit)} (95 % interval {fmt(c['diff_low'], 3)} to "
            f"{fmt(c['diff_high'], 3)}) is ")
    if c["moved"] and c["toward_paper"]:
        return "testbed-difference", f"{text}beyond run-to-run noise and toward the paper's {paper}: {credit}"
    if c["moved"]:
        return kind, f"{text}beyond run-to-run noise but away from the paper's {paper}: {not_it}"
    return kind, f"{text}within run-to-run noise: {within}"


def _recovery(sid: str, cc: str, kind: str, kernel_measured: bool = False) -> tuple[str, str, dict]:
    """(kind, text, evidence) from the loss-recovery ablation (analysis.recovery000, data/recovery000) for S06/S07 and
    ``cc``, once its bundle holds every planned run; ``kind`` unchanged and no text before. The paper's Linux 4.15 ran
    RACK with a static reordering window (and the RFC 6675 DUPACK rule, which this kernel no longer has); ours adapts
    the window: a drop that the static window moves beyond noise toward the paper's value makes the kind
    "testbed-difference" (the kernel's loss detection, measured); one it leaves within noise keeps ``kind`` and says
    that this is not the cause either. ``kernel_measured``: the paper's whole kernel was measured too
    (:func:`_kernel415`), so the RFC 6675 rule is no longer called untested here."""
    c = recovery000.cite(sid, cc)
    if c is None:
        return kind, "", {}
    adaptive, static = c["drop"].get(recovery000.BASELINE), c["drop"].get(recovery000.STATIC)
    if adaptive is None or static is None:
        return kind, "", {}

    text = (f" The loss-recovery ablation (data/recovery000: {c['runs']} runs of 100 s, notebook 14) ran this drop "
            f"with the paper's switch under RACK's adaptive reordering window (this kernel's default, what data/paper "
            f"ran) and under the static window of the paper's Linux 4.15: {_drop_text(adaptive)} against {_drop_text(static)}; ")
    kind, more = _difference(
        kind, c, "Mbit/s", f"{fmt(c['paper_drop_mbps'], 3)} Mbit/s",
        "the sender's loss detection, which changed between the paper's kernel and ours, accounts for at least part "
        "of the difference. 4.15's other loss rule (RFC 6675's DUPACK threshold) no longer exists in this kernel and "
        "was not measured.",
        "the reordering window does not explain the difference.",
        "the reordering window does not explain the difference either.")
    text += more
    if kind != "testbed-difference" and not kernel_measured:
        text += (" 4.15's RFC 6675 DUPACK threshold, which this kernel no longer has (removed in 6.17), stays "
                 "untested: a 4.15-era kernel would decide it.")
    ev = {"recovery_ablation": {"runs": c["runs"], "adaptive_window_drop_mbps": adaptive[0],
                                "static_window_drop_mbps": static[0], "diff_mbps": c["diff"],
                                "diff_low": c["diff_low"], "diff_high": c["diff_high"], "moved": bool(c["moved"]),
                                "toward_paper": c["toward_paper"]},
          "recovery_bundle": "data/recovery000", "recovery_notebook": "notebooks/14"}
    return kind, text, ev


def _kernel415(sid: str, cc: str, kind: str, paper_bic_ran: bool = False) -> tuple[str, str, dict]:
    """(kind, text, evidence) from the paper's own kernel (analysis.kernel415, data/kernel415: the drop on Linux
    4.15, the paper's, and on Debian's 6.1, same VM image and path) for S06/S07 and ``cc``, once both arms hold every
    planned run; ``kind`` unchanged and no text before. A 4.15 drop beyond noise from 6.1's and toward the paper's
    value makes the kind "testbed-difference" (the kernel, measured); otherwise ``kind`` stays and the text says the
    kernel does not explain the difference. ``paper_bic_ran``: the scored dataset's BIC is already 4.15's, so the
    sentence locating the difference in BIC's code is left out."""
    c = kernel415.cite(sid, cc)
    if c is None:
        return kind, "", {}
    old, new = c["drop"].get(kernel415.PAPER_KERNEL), c["drop"].get(kernel415.BASELINE)
    if old is None or new is None:
        return kind, "", {}

    text = (f" On the paper's own kernel (data/kernel415: {c['runs']} runs of 100 s in one qemu VM, the same box image "
            f"booted on Ubuntu's Linux 4.15.0-54 and on Debian's 6.1, the paper's switch with real netem; "
            f"docs/kernel-415.md) this drop is {_drop_text(old)} on 4.15 against {_drop_text(new)} on 6.1; ")
    kind, more = _difference(
        kind, c, "Mbit/s", f"{fmt(c['paper_drop_mbps'], 3)} Mbit/s",
        "the kernel the paper ran (its congestion control and loss detection together) accounts for at least part of "
        "the difference.",
        "the kernel does not explain the difference.",
        "the paper's kernel (its RACK, RFC 6675 rule and congestion controls together) does not explain the "
        "difference either.")
    text += more
    if c["moved"] and c["toward_paper"] and cc == "bic" and not paper_bic_ran:
        text += (" Where: 4.15's tcp_bic.c counts one segment per ACK in congestion avoidance "
                 "(tcp_cong_avoid_ai(tp, ca->cnt, 1)) where 6.1's, and the BPF port every recording here ran, "
                 "count the segments each ACK covers, so with delayed ACKs 4.15's BIC regrows its window about "
                 "half as fast after a loss; 4.15's Reno and CUBIC already counted them, and their drops did not "
                 "move (source; the port of 4.15's BIC, bic415, tests it on this host: campaigns/bic000.yaml).")
    ev = {"kernel415": {"runs": c["runs"], "drop_linux415_mbps": old[0], "drop_linux61_mbps": new[0],
                        "diff_mbps": c["diff"], "diff_low": c["diff_low"], "diff_high": c["diff_high"],
                        "moved": bool(c["moved"]), "toward_paper": c["toward_paper"]},
          "kernel415_data": "data/kernel415", "kernel415_doc": "docs/kernel-415.md"}
    return kind, text, ev


def _bic_kernel(ctx) -> str:
    """The kernel whose BIC the scored dataset ran ("4.15", "6.1"; "" without BIC runs): ``analysis.paper_bic``'s
    column, which ``registry.evaluate`` adds."""
    col = ctx.df.get("bic_kernel")
    ks = sorted(set(col.dropna().astype(str)) - {""}) if col is not None else []
    return ks[0] if len(ks) == 1 else ""


def _kernel415_bbr(kind: str, quantity: str, what: str, paper: str) -> tuple[str, str, dict]:
    """(kind, text, evidence) from BBR on the paper's own kernel (analysis.kernel415_bbr: data/kernel415-bbr beside
    data/kernel415's loss-based flows, one qemu VM booted on Linux 4.15 and on 6.1) for one of its quantities, once
    its data is complete; ``kind`` unchanged and no text before. Moved beyond noise toward the paper's value (the
    paper's statement ``paper``): "testbed-difference" (the kernel, measured); otherwise ``kind`` stays and the text
    says the kernel does not explain the difference."""
    c = kernel415_bbr.cite(quantity)
    if c is None:
        return kind, "", {}
    old, new = c["kernels"].get(kernel415.PAPER_KERNEL), c["kernels"].get(kernel415.BASELINE)
    if old is None or new is None:
        return kind, "", {}
    ms = lambda v: f"{fmt(v[0], 3)} ms (95 % interval {fmt(v[1], 3)} to {fmt(v[2], 3)})"  # noqa: E731
    text = (f" On the paper's own kernel (data/kernel415-bbr and data/kernel415: runs of 100 s in one qemu VM, the same "
            f"box image booted on Ubuntu's Linux 4.15.0-54 and on Debian's 6.1, the paper's switch with real netem; "
            f"docs/kernel-415.md) {what} is {ms(old)} on 4.15 against {ms(new)} on 6.1; ")
    kind, more = _difference(kind, c, "ms", paper,
                             "the kernel the paper ran (its congestion controls and TCP stack) accounts for at least "
                             "part of the difference.",
                             "the kernel does not explain the difference.",
                             "the paper's kernel does not explain the difference either.")
    text += more
    ev = {"kernel415_bbr": {"quantity": quantity, "runs": c["runs"], "linux415_ms": old[0], "linux61_ms": new[0],
                            "diff_ms": c["diff"], "diff_low": c["diff_low"], "diff_high": c["diff_high"],
                            "moved": bool(c["moved"]), "toward_paper": c["toward_paper"]},
          "kernel415_bbr_data": "data/kernel415-bbr", "kernel415_doc": "docs/kernel-415.md"}
    return kind, text, ev


#: what the explanations say when the scored dataset already ran the paper's BIC
_PAPER_BIC_RAN = (" This dataset's BIC is already the paper's (bic415: Linux 4.15's tcp_bic.c, validated against "
                  "4.15's own module; docs/kernel-415.md), so BIC's code is not what differs here.")


def _bic415(sid: str, cc: str, kind: str, paper_bic_ran: bool = False) -> tuple[str, str, dict]:
    """(kind, text, evidence) for BIC's S06/S07 from the port of the paper's BIC run on this host (analysis.bic000,
    data/bic000: Linux 4.15's tcp_bic as bic415 beside 6.1's as bic, the paper's switch), once its bundle holds every
    planned run; ``kind`` unchanged and no text before, and for the other ccs. A drop that 4.15's BIC moves beyond
    noise toward the paper's value makes the kind "testbed-difference" (the congestion control, measured).
    ``paper_bic_ran``: the scored dataset's BIC is already 4.15's (bic415), so BIC's code is not a difference
    between it and the paper: the text says so and ``kind`` stays."""
    if cc != "bic":
        return kind, "", {}
    if paper_bic_ran:
        return kind, _PAPER_BIC_RAN, {"bic_kernel": "4.15"}
    c = bic000.cite(sid)
    if c is None:
        return kind, "", {}
    old, new = c["drop"].get(bic000.PAPER_KERNEL), c["drop"].get(bic000.BASELINE)
    if old is None or new is None:
        return kind, "", {}
    kind, text = _bic415_text(kind, c, "this drop", _drop_text(old), _drop_text(new), "Mbit/s",
                              fmt(c["paper_drop_mbps"], 3) + " Mbit/s")
    ev = {"bic415": {"runs": c["runs"], "drop_bic415_mbps": old[0], "drop_bic_mbps": new[0], "diff_mbps": c["diff"],
                     "diff_low": c["diff_low"], "diff_high": c["diff_high"], "moved": bool(c["moved"]),
                     "toward_paper": c["toward_paper"]},
          "bic415_bundle": "data/bic000", "bic415_doc": "docs/kernel-415.md"}
    return kind, text, ev


def _bic415_text(kind: str, c: dict, what: str, old_t: str, new_t: str, unit: str, paper: str) -> tuple[str, str]:
    """(kind, text) citing study 000 with both BICs for one quantity: ``what`` is ``old_t`` with 4.15's BIC against
    ``new_t`` with 6.1's; the difference (``c``'s diff, diff_low, diff_high, moved, toward_paper) beyond noise toward
    ``paper`` makes the kind "testbed-difference"."""
    text = (f" With the paper's BIC on this host (data/bic000: {c['runs']} runs of 100 s, the paper's switch; bic415, "
            f"the port of Linux 4.15's tcp_bic.c validated against 4.15's own file built as a module, "
            f"docs/kernel-415.md) {what} is {old_t} against {new_t} with 6.1's BIC; ")
    kind, more = _difference(kind, c, unit, paper,
                             "BIC's own code, as the paper's kernel had it, accounts for at least part of the "
                             "difference, on today's TCP stack.",
                             "BIC's code does not explain the difference.",
                             "BIC's code alone does not explain the difference.")
    return kind, text + more


def _bic415_measured(kind: str, c: dict | None, paper_bic_ran: bool, what: str, unit: str,
                     paper_key: str) -> tuple[str, str, dict]:
    """(kind, text, evidence) for a BIC quantity other than the drops (S11's RTT, a Table 4 pair's Jain index) from
    study 000 with both BICs (analysis.bic000: ``c`` is its cite_rtt / cite_jain, None before the bundle is
    complete: ``kind`` unchanged, no text). Moved beyond noise toward the paper's value: "testbed-difference" (BIC's
    code, measured); otherwise ``kind`` stays and the text says BIC's code does not explain it. ``paper_bic_ran``:
    the scored dataset already ran 4.15's BIC; the text says so and ``kind`` stays."""
    if c is None:
        return kind, "", {}
    if paper_bic_ran:
        return kind, _PAPER_BIC_RAN, {"bic_kernel": "4.15"}
    if "rtt_ms" in c:
        old, new = c["rtt_ms"][bic000.PAPER_KERNEL], c["rtt_ms"][bic000.BASELINE]
        old_t, new_t = (f"{fmt(v[0], 3)}{_unit(unit)} (95 % interval {fmt(v[1], 3)} to {fmt(v[2], 3)})" for v in (old, new))
    else:
        old_t, new_t = fmt(c["paper_kernel_jain"], 3), fmt(c["baseline_jain"], 3)
    kind, text = _bic415_text(kind, c, what, old_t, new_t, unit, fmt(c[paper_key], 3) + _unit(unit))
    ev = {"bic415": {"runs": c["runs"], "diff": c["diff"], "diff_low": c["diff_low"], "diff_high": c["diff_high"],
                     "moved": bool(c["moved"]), "toward_paper": c["toward_paper"]},
          "bic415_bundle": "data/bic000", "bic415_doc": "docs/kernel-415.md"}
    return kind, text, ev


def _bbr_loss(r, ctx):
    """S08/S09: BBR's throughput under 1-10 % loss; the paper's figure fits bytes on the wire."""
    good, wire = {}, {}
    for loss in range(1, 11):
        sel = core.rows(ctx, single_flow=True, cc="bbr", path_mode="multipath", link_delay_ms=10.0,
                        loss_pct=float(loss))
        if sel.empty:
            continue
        g = core.sample(sel, "goodput_mbps")
        w = core.sample(sel.assign(_wire=sel["data_bytes"] * 8 / sel["duration_s"] / 1e6), "_wire")
        if g.size and w.size:
            good[f"{loss} %"], wire[f"{loss} %"] = float(g.mean()), float(w.mean())
    if not wire:
        return None
    lo, hi = min(wire.values()), max(wire.values())
    text = (f"Our BBR goodput (iperf3's bytes delivered, at router1) is {fmt(min(good.values()), 3)}-"
            f"{fmt(max(good.values()), 3)} Mbit/s at loss 1-10 %; the bytes it puts on the wire at router1, "
            f"retransmissions included, are {fmt(lo, 3)}-{fmt(hi, 3)} Mbit/s. The paper's 'about 19 Mbit/s' "
            f"(>= 95 % of 20) fits the latter: a capture-based throughput (the paper captured at router1 with "
            f"tcpdump) counts retransmitted bytes, goodput does not.")
    return core.explain(r, "metric-definition", text, goodput_mbps_by_loss=good, wire_mbps_by_loss=wire)


def _s10(r, ctx):
    """S10 (loss-based throughput < 55 % of 20 Mbit/s at every loss 1-10 %): contradicted only at 1 %?"""
    cc = _cc(r)
    bad = []
    for loss in range(1, 11):
        x = core.sample(core.rows(ctx, single_flow=True, cc=cc, path_mode="multipath", link_delay_ms=10.0,
                                  loss_pct=float(loss)), "goodput_mbps")
        reg = core.region("<", 0.55 * core.CAPACITY_MBPS)
        if x.size and core.decide(core.one_sample(x, reg, ctx.alpha), reg)[0] == "not reproduced":
            bad.append(loss)
    t3 = reference.load_table3().set_index(["cc", "path_mode"])
    base = float(t3.loc[(cc, "multipath"), "throughput_mbps"])
    implied = base - 7.0
    if bad == [1] and implied > 0.55 * core.CAPACITY_MBPS:
        return core.explain(r, "paper-inconsistent",
                            f"Contradicted only at loss 1 %, where the paper contradicts itself: Table 3 gives {cc} "
                            f"{base:g} Mbit/s at loss 0 % and S06 a drop of about 7 Mbit/s at 1 %, i.e. about "
                            f"{fmt(implied, 3)} Mbit/s = {fmt(implied / core.CAPACITY_MBPS * 100, 3)} % of 20 Mbit/s, "
                            f"above S10's 55 %. Ours at 1 %: {fmt(_single(ctx, cc, 10, 1, 'goodput_mbps'), 4)} Mbit/s.",
                            contradicted_at_loss_pct=bad, paper_implied_mbps_at_1pct=implied)
    kind, more, ev = _ablation(r, ctx, "S10", f"goodput fraction {cc}")
    return core.explain(r, kind, f"Contradicted at loss {', '.join(map(str, bad)) or '-'} %; the loss response "
                        f"depends on how loss is applied (see S06). " + more, contradicted_at_loss_pct=bad, **ev)


def _s26(r, ctx):
    t3 = reference.load_table3().set_index(["cc", "path_mode"])
    cc = _cc(r)
    base = float(t3.loc[(cc, "multipath"), "throughput_mbps"])
    gap = 19.0 - (base - 17.0)
    return core.explain(r, "paper-inconsistent",
                        f"The paper's own numbers exceed its bound at 10 % loss: S07 puts {cc} about 17 Mbit/s below its "
                        f"Table 3 {base:g} Mbit/s (about {fmt(base - 17, 3)}) and S08 BBR at about 19 Mbit/s, a gap of "
                        f"about {fmt(gap, 3)} Mbit/s, not 'up to 12'. Ours: {fmt(r['ours'], 4)} Mbit/s where the claim "
                        f"is decided.", paper_implied_gap_mbps=gap)


def _table4(r, ctx, rows):
    """S16, T4-JAIN, C-CUBIC-FAIREST: how two flows share the two paths."""
    t4 = reference.load_table4().set_index("pair")
    shares = {}
    for p in reference.load_table2().itertuples():
        k, ref = int(p.pair), t4.loc[int(p.pair)]
        paper = {ref.cc1: float(ref.throughput1_mbps), ref.cc2: float(ref.throughput2_mbps)}
        sel = core.rows(ctx, flow=None, experiment="tcp_fairness", cc=p.cc, cc2=p.cc2)
        if sel.empty or p.cc not in paper or p.cc2 not in paper:
            continue
        f1 = core.sample(sel[sel["flow"] == 1], "goodput_mbps")
        f2 = core.sample(sel[sel["flow"] == 2], "goodput_mbps")
        if f1.size and f2.size:
            shares[f"pair{k} {p.cc}+{p.cc2}"] = {"ours_mbps": [float(f1.mean()), float(f2.mean())],
                                                 "paper_mbps": [paper[p.cc], paper[p.cc2]]}
    pair = r["claim_id"].rsplit("-pair", 1)[-1] if "-pair" in r["claim_id"] else None
    one = next((v for k, v in shares.items() if pair and k.startswith(f"pair{pair} ")), None)
    lead = (f"Ours {fmt(one['ours_mbps'][0], 3)} vs {fmt(one['ours_mbps'][1], 3)} Mbit/s, the paper "
            f"{one['paper_mbps'][0]:g} vs {one['paper_mbps'][1]:g}. " if one else "")
    text = (lead + "How two flows share the bottleneck depends on the buffer they share. " + _buffer(ctx) + " Reno, "
            "CUBIC and BBR are the kernel's own; the BPF BIC's goodput and decrease ratio are equivalent to the "
            "kernel's tcp_bic (docs/cc-validation.md). ")
    kind, more, ev = _ablation(r, ctx, "T4", "Jain's index", config_has=f"pair {pair}:" if pair else None,
                               undecided=", the Table 4 pairs under each queue model,")
    if pair and int(pair) in {k for k, *_ in bic000.BIC_PAIRS}:
        kind, more2, ev2 = _bic415_measured(kind, bic000.cite_jain(int(pair)), _bic_kernel(ctx) == "4.15",
                                            f"pair {pair}'s Jain index", "index", "paper_jain")
        more, ev = more + more2, {**ev, **ev2}
    return core.explain(r, kind, text + more, shares=shares if not one else one, validation="docs/cc-validation.md",
                        **ev)


def _udp(r, ctx):
    """S17-S20: TCP against UDP CBR 12-20 Mbit/s."""
    cc = _cc(r)
    per = {}
    for cbr in (12, 14, 16, 18, 20):
        sel = core.rows(ctx, flow=None, experiment="udp_fairness", cc=cc, cbr_mbps=float(cbr))
        if sel.empty:
            continue
        t = core.sample(sel[sel["flow"] == 1], "goodput_mbps")
        u = core.sample(sel[sel["flow"] == 2], "goodput_mbps")
        if t.size and u.size:
            per[f"cbr {cbr}"] = {"tcp_mbps": float(t.mean()), "udp_mbps": float(u.mean())}
    show = ", ".join(f"{k}: TCP {fmt(v['tcp_mbps'], 3)} / UDP {fmt(v['udp_mbps'], 3)}" for k, v in per.items())
    text = (f"Ours (Mbit/s): {show or 'no runs'}; the paper: TCP about 8-10 and UDP about 7-9 at CBR 12-20. On "
            "drop-tail buffers a CBR flow loses the same share p of its packets as TCP does, so for TCP to keep 8-10 "
            "of 20 Mbit/s against CBR 20, p must be near 0.5; with 8-KB datagrams fragmented into ~6 IP packets "
            "over round-robin paths, whole datagrams would then survive with probability (1 - p)^6, about 2 %: "
            "fragmentation alone cannot give both of the paper's numbers. Two candidates: the UDP datagram size "
            "(the paper names no iperf3 version; its Ubuntu Server 16.04, section 2.1, predates 3.1.5, before which "
            "iperf3 sent 8192-byte datagrams; since 3.1.5 it sends one MSS: docs/netem-semantics.md) and whether "
            "the paper's UDP figure is sender- or receiver-side (not measured). "
            + (f"{dg} " if (dg := _datagram(ctx)) else ""))
    sid = r["claim_id"].split("-", 1)[0]
    kind, more, ev = _ablation(r, ctx, sid, cc or None, undecided=", with 8192-byte datagrams and each queue model,")
    return core.explain(r, kind, text + more, per_cbr=per, **ev)


def _udp_fairer(r, ctx):
    """C-RENO-CUBIC-FAIRER-UDP: which cc shares more fairly with UDP CBR 12-20 Mbit/s."""
    per = {}
    for cc in ("reno", "cubic", "bic", "bbr"):
        sel = core.rows(ctx, flow=None, experiment="udp_fairness", cc=cc)
        sel = sel[pd.to_numeric(sel["cbr_mbps"], errors="coerce").between(12, 20)]
        j = pair_jain(sel)
        if len(j):
            per[cc] = float(j.mean())
    show = ", ".join(f"{cc} {fmt(v, 3)}" for cc, v in per.items())
    text = (f"Ours, Jain's index against UDP CBR 12-20 Mbit/s (mean over runs and levels): {show or 'no runs'}; the "
            "paper: reno and cubic about 0.99 (S20), bic above 0.9 (S19), bbr below 0.9 from CBR 14 (S21). How a CBR "
            "flow and a TCP flow share drop-tail buffers depends on the same mechanisms as S17-S20: the UDP datagram "
            "size and the queue model. ")
    kind, more, ev = _ablation(r, ctx, "S19", "Jain's index",
                               undecided=", with 8192-byte datagrams and each queue model,")
    return core.explain(r, kind, text + more, jain_by_cc=per, **ev)


#: study 000's paper protocol (campaigns/paper.yaml, 100-s runs): the run-length ablation of shorter datasets
PAPER_BUNDLE = reference.REFERENCE_DIR.parent / "paper"
_IN_PAPER_SCORES = []   # re-entrancy guard: scoring the paper bundle never consults itself


@lru_cache(maxsize=2)
def _paper_scores(path: str, stamp: float, alpha: float, n_boot: int, seed: int):
    from analysis.claims.registry import evaluate
    from analysis.dataset import load_campaign
    _IN_PAPER_SCORES.append(path)
    try:
        res = evaluate(load_campaign(path, progress=False), alpha=alpha, n_boot=n_boot, seed=seed)
    finally:
        _IN_PAPER_SCORES.pop()
    return res.set_index("claim_id")


def _paper_protocol(claim_id: str, ctx) -> dict | None:
    """The claim on the paper protocol's bundle (data/paper): verdict, ours, interval, n; None when the bundle is
    absent, is being scored, or lacks the claim."""
    marker = PAPER_BUNDLE / "bundle.json"
    if _IN_PAPER_SCORES or not marker.is_file():
        return None
    scores = _paper_scores(str(PAPER_BUNDLE), marker.stat().st_mtime, float(ctx.alpha), int(ctx.n_boot),
                           int(ctx.seed))
    if claim_id not in scores.index:
        return None
    p = scores.loc[claim_id]
    return {"bundle": "data/paper", "run_length_s": PAPER_RUN_S, "verdict": p["verdict"], "ours": p["ours"],
            "ci_low": p["ci_low"], "ci_high": p["ci_high"], "n": int(p["n"]) if pd.notna(p["n"]) else 0}


def _short_runs(r, ctx):
    durs = _durations(ctx)
    if durs and max(durs) < PAPER_RUN_S:
        text = (f"This dataset's runs last {', '.join(f'{d:g}' for d in durs)} s, the paper's {PAPER_RUN_S:g} s: "
                "SACK counts, loss responses and shares grow or settle with run length.")
        p = _paper_protocol(r["claim_id"], ctx)
        if p is not None:
            text += (f" The same claim on the paper protocol (data/paper, {PAPER_RUN_S:g}-s runs; notebook 08 shows "
                     f"both side by side): {p['verdict']}, ours {fmt(p['ours'], 4)}"
                     + (f" (95 % interval {fmt(p['ci_low'], 4)} to {fmt(p['ci_high'], 4)})"
                        if pd.notna(p["ci_low"]) and pd.notna(p["ci_high"]) else "") + f", n = {p['n']}.")
        else:
            text += " The paper protocol (100-s runs, 10 repetitions) decides it: bundle it as data/paper."
        return core.explain(r, "testbed-difference", text, run_length_s=durs, paper_run_length_s=PAPER_RUN_S,
                            **({"run_length_ablation": p} if p is not None else {}))
    return None


RULES = {"S01": _s01, "S05": _rtt_queue, "S23": _rtt_queue, "S11": _rtt_queue, "S12": _rtt_queue,
         "S13": _rtt_queue, "S06": _loss_drop, "S07": _loss_drop, "S08": _bbr_loss, "S09": _bbr_loss,
         "S10": _s10, "S26": _s26, "S17": _udp, "S18": _udp, "S19": _udp, "S20": _udp}
TABLE4 = ("S16", "T4-JAIN", "C-CUBIC")


def explain(todo: list[dict], ctx: core.Ctx, rows: list[dict]) -> None:
    """Explain the rows in ``todo`` (in place). Inconclusive and not-run rows are left to the generic explanation
    (too few runs or levels) unless a rule knows more; decisive differences get their claim family's rule; a
    difference no rule covers, in a dataset of runs shorter than the paper's, is put down to the run length."""
    durs = _durations(ctx)
    short = bool(durs) and max(durs) < PAPER_RUN_S
    for r in todo:
        if r["verdict"] in ("inconclusive", "not run"):
            continue
        fam = r["claim_id"].split("-", 1)[0]
        done = None
        if r["claim_id"].startswith(TABLE4):
            done = _table4(r, ctx, rows)
        elif r["claim_id"] == "C-RENO-CUBIC-FAIRER-UDP":
            done = _udp_fairer(r, ctx)
        elif fam in RULES:
            done = RULES[fam](r, ctx)
        if done is None:
            _short_runs(r, ctx)
        elif short:
            r["explanation_text"] += (f" (This dataset's runs last {max(durs):g} s, the paper's "
                                      f"{PAPER_RUN_S:g} s; data/paper holds the paper protocol.)")
    return None


__all__ = ["explain", "RULES"]
