"""Section 4.2 B, 5 and the abstract: one TCP flow over both paths, link delay 10 ms, forward loss 1-10 %.

The loss-0 baseline of the "drop" claims is every single-flow multipath run at link delay 10 ms and loss 0 (e.g.
single_vs_multi and link_delay d10 runs). Throughput: flow 1 ``goodput_mbps``; RTT: ``rtt_mean_ms``.
"""
from __future__ import annotations

from analysis.claims import core

LOSS_BASED = ("reno", "bic", "cubic")
LEVELS = tuple(range(1, 11))
EXP = "loss_rate"
M = dict(cc2=None, cbr_mbps=None, path_mode="multipath", link_delay_ms=10.0)
TOL_MBPS = 1.0   # "sekitar X Mbit/s" / "mencapai X Mbit/s": X +- 1 Mbit/s (5 % of 20 Mbit/s)
TOL_RTT_MS = 3.0  # "sekitar X ms": X +- 3 ms


def _sel(ctx, cc, loss):
    return core.rows(ctx, single_flow=True, cc=cc, path_mode="multipath", link_delay_ms=10.0, loss_pct=float(loss))


def _x(ctx, cc, loss, col):
    return core.sample(_sel(ctx, cc, loss), col)


def claims(ctx) -> list[dict]:
    out = []
    a = ctx.alpha
    cap = core.CAPACITY_MBPS
    for cc in LOSS_BASED:
        for sid, loss, drop in (("S06", 1, 7.0), ("S07", 10, 17.0)):
            reg = core.region("approx", drop, tol=TOL_MBPS)

            def est(level, cc=cc, loss=loss, reg=reg):
                x, y = _x(ctx, cc, 0, "goodput_mbps"), _x(ctx, cc, loss, "goodput_mbps")
                return (core.two_sample(x, y, reg, a), reg) if x.size and y.size else None

            out.append(core.level_claim(
                ctx, claim_id=f"{sid}-{cc}", section="4.2", experiment=EXP,
                statement=f"{cc} throughput at loss {loss} % about {drop:g} Mbit/s below loss 0 %",
                paper_value=f"drop about {drop:g} Mbit/s ({sid}); tolerance +-{TOL_MBPS:g}",
                test="Welch interval of throughput(loss 0) - throughput(loss) within tolerance; p = TOST; "
                     "effect: Hedges' g",
                levels=(loss,), level_name="loss_pct", est_at=est, reason_ccs=cc, match={**M, "loss_pct": (0.0, float(loss))},
                what=f"{cc} multipath d10 ms at loss 0 and {loss} %", unit="Mbit/s"))
    reg08 = core.region("approx", 19.0, tol=TOL_MBPS)
    reg09 = core.region(">=", 0.95 * cap)
    for cid, reg, stmt, pv, sec, test in (
            ("S08-bbr", reg08, "bbr throughput about 19 Mbit/s at every loss rate 1-10 %",
             "about 19 Mbit/s ('mencapai', S08); tolerance +-1", "4.2",
             "t-interval per loss within 19 +- 1; p = TOST; effect: Cohen's d vs 19"),
            ("S09-bbr", reg09, "bbr throughput >= 95 % of 20 Mbit/s at every loss rate 1-10 %",
             ">= 95 % of 20 Mbit/s = 19 Mbit/s (S09, S24)", "4.2/5",
             "t-interval per loss at or above 19; p = one-sided t; effect: Cohen's d vs 19")):
        out.append(core.level_claim(
            ctx, claim_id=cid, section=sec, experiment=EXP, statement=stmt, paper_value=pv, test=test,
            levels=LEVELS, level_name="loss_pct",
            est_at=lambda lv, reg=reg: ((core.one_sample(_x(ctx, "bbr", lv, "goodput_mbps"), reg, a), reg)
                                        if _x(ctx, "bbr", lv, "goodput_mbps").size else None),
            reason_ccs="bbr", what="bbr multipath d10 ms loss 1-10 %", match={**M, "loss_pct": LEVELS},
            unit="Mbit/s"))
    reg10 = core.region("<", 0.55 * cap)
    for cc in LOSS_BASED:
        out.append(core.level_claim(
            ctx, claim_id=f"S10-{cc}", section="4.2/5", experiment=EXP,
            statement=f"{cc} throughput < 55 % of 20 Mbit/s at every loss rate 1-10 %",
            paper_value="< 55 % of 20 Mbit/s = 11 Mbit/s (S10, S25)",
            test="t-interval per loss below 11; p = one-sided t; effect: Cohen's d vs 11",
            levels=LEVELS, level_name="loss_pct",
            est_at=lambda lv, cc=cc: ((core.one_sample(_x(ctx, cc, lv, "goodput_mbps"), reg10, a), reg10)
                                      if _x(ctx, cc, lv, "goodput_mbps").size else None),
            reason_ccs=cc, what=f"{cc} multipath d10 ms loss 1-10 %", match={**M, "loss_pct": LEVELS},
            unit="Mbit/s"))
    for cid, cc, value in [(f"S11-{c}", c, 12.0) for c in LOSS_BASED] + [("S12-bbr", "bbr", 24.0)]:
        reg = core.region("approx", value, tol=TOL_RTT_MS)
        out.append(core.level_claim(
            ctx, claim_id=cid, section="4.2", experiment=EXP,
            statement=f"{cc} mean RTT about {value:g} ms at loss 1 %",
            paper_value=f"about {value:g} ms ({cid[:3]}); tolerance +-{TOL_RTT_MS:g} ms",
            test=f"t-interval within {value:g} +- {TOL_RTT_MS:g} ms; p = TOST; effect: Cohen's d vs {value:g}",
            levels=(1,), level_name="loss_pct",
            est_at=lambda lv, cc=cc, reg=reg: ((core.one_sample(_x(ctx, cc, lv, "rtt_mean_ms"), reg, a), reg)
                                               if _x(ctx, cc, lv, "rtt_mean_ms").size else None),
            reason_ccs=cc, what=f"{cc} multipath d10 ms loss 1 %", match={**M, "loss_pct": 1.0}, unit="ms"))
    reg13 = core.region("approx", 12.0, tol=TOL_RTT_MS)
    reg26 = (0.0, 12.0, True, False)
    for cc in LOSS_BASED:
        def gap(lv, col, reg, cc=cc):
            x, y = _x(ctx, "bbr", lv, col), _x(ctx, cc, lv, col)
            return (core.two_sample(x, y, reg, a), reg) if x.size and y.size else None

        out.append(core.level_claim(
            ctx, claim_id=f"S13-{cc}", section="4.2", experiment=EXP,
            statement=f"{cc} mean RTT about 12 ms below bbr's at every loss rate 1-10 %",
            paper_value="about 12 ms ('sekitar', S13); tolerance +-3 ms",
            test="Welch interval of RTT(bbr) - RTT(cc) within 12 +- 3 ms per loss; p = TOST; effect: Hedges' g",
            levels=LEVELS, level_name="loss_pct", est_at=lambda lv, cc=cc: gap(lv, "rtt_mean_ms", reg13, cc),
            reason_ccs=[cc, "bbr"], what=f"{cc} and bbr multipath d10 ms loss 1-10 %",
            match={**M, "loss_pct": LEVELS}, unit="ms"))
        out.append(core.level_claim(
            ctx, claim_id=f"S26-{cc}", section="abstract", experiment=EXP,
            statement=f"bbr throughput higher than {cc}'s by up to 12 Mbit/s at every loss rate 1-10 %",
            paper_value="higher by up to 12 Mbit/s (S26): 0 < gap <= 12",
            test="Welch interval of throughput(bbr) - throughput(cc) in (0, 12] per loss; p = one-sided t; "
                 "effect: Hedges' g",
            levels=LEVELS, level_name="loss_pct", est_at=lambda lv, cc=cc: gap(lv, "goodput_mbps", reg26, cc),
            reason_ccs=[cc, "bbr"], what=f"{cc} and bbr multipath d10 ms loss 1-10 %",
            match={**M, "loss_pct": LEVELS}, unit="Mbit/s",
            notes=["paper inconsistency: S07 + S08 imply a gap of about 17 Mbit/s at 10 % loss "
                   "(19 - (19.1 - 17)), above this statement's 12"]))
    return out
