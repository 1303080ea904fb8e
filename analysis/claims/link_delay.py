"""Section 4.2 A and 5: one TCP flow over both paths, link delay 10-100 ms (step 10), no loss.

Tiers: S02 (throughput above 90 % of the two shapers' 20 Mbit/s) and S04 (mean RTT above the configured link delay)
hold by construction of the testbed, whatever the congestion control does: sanity checks, shown apart.
Throughput: flow 1 ``goodput_mbps`` at router1; RTT: ``rtt_mean_ms`` (ACK-based, Karn) at router1 — the paper's
"rata-rata RTT". Runs of any single-flow experiment with the same parameters are pooled (e.g. single_vs_multi's
multipath d10 runs count at link delay 10 ms).
"""
from __future__ import annotations

from analysis.claims import core

CCS = ("reno", "bic", "cubic", "bbr")
LOSS_BASED = ("reno", "bic", "cubic")
LEVELS = tuple(range(10, 101, 10))
EXP = "link_delay"
M = dict(cc2=None, cbr_mbps=None, path_mode="multipath", loss_pct=0.0, link_delay_ms=LEVELS)
TOL_RTT_RANGE_MS = 5.0   # "sekitar 26 ms - 58 ms": [21, 63] ms


def _sel(ctx, cc, d):
    return core.rows(ctx, single_flow=True, cc=cc, path_mode="multipath", loss_pct=0.0, link_delay_ms=float(d))


def claims(ctx) -> list[dict]:
    out = []
    a = ctx.alpha
    for cc in CCS:
        what = f"{cc} multipath link delay 10-100 ms"

        def tput(d, cc=cc):
            x = core.sample(_sel(ctx, cc, d), "goodput_mbps")
            reg = core.region(">", 0.9 * core.CAPACITY_MBPS)
            return (core.one_sample(x, reg, a), reg) if x.size else None

        out.append(core.level_claim(
            ctx, claim_id=f"S02-{cc}", section="4.2/5", experiment=EXP,
            statement=f"{cc} throughput > 18 Mbit/s (> 90 % of 20 Mbit/s) at every link delay 10-100 ms",
            paper_value="> 18 Mbit/s (S02); > 90 % of 20 Mbit/s (S03, S22)",
            test="t-interval per delay above 18 (all levels); p = one-sided t; effect: Cohen's d vs 18",
            levels=LEVELS, level_name="link_delay_ms", est_at=tput, reason_ccs=cc, what=what, match=M,
            notes=["S03 and S22 state the same bound as a fraction (0.9 x 20 = 18 Mbit/s)"], tier="sanity",
            unit="Mbit/s"))

        def rtt_gap(d, cc=cc):
            sel = _sel(ctx, cc, d)
            x = core.sample(sel, "rtt_mean_ms") - float(d)
            reg = core.region(">", 0.0)
            return (core.one_sample(x, reg, a), reg) if x.size else None

        out.append(core.level_claim(
            ctx, claim_id=f"S04-{cc}", section="4.2", experiment=EXP,
            statement=f"{cc} mean RTT above the link delay at every link delay 10-100 ms",
            paper_value="RTT > link delay ('cenderung', S04)",
            test="t-interval of (mean RTT - link delay) above 0 per delay; p = one-sided t; effect: Cohen's d",
            levels=LEVELS, level_name="link_delay_ms", est_at=rtt_gap, reason_ccs=cc, what=what, match=M,
            tier="sanity", unit="ms"))
    for cc in LOSS_BASED:
        what = f"{cc} and bbr multipath link delay 10-100 ms"

        def gap(d, reg, cc=cc):
            x = core.sample(_sel(ctx, cc, d), "rtt_mean_ms")
            y = core.sample(_sel(ctx, "bbr", d), "rtt_mean_ms")
            if not x.size or not y.size:
                return None
            return core.two_sample(x, y, reg, a), reg

        reg05 = core.region("approx_between", low=26, high=58, tol=TOL_RTT_RANGE_MS)
        out.append(core.level_claim(
            ctx, claim_id=f"S05-{cc}", section="4.2", experiment=EXP,
            statement=f"BBR mean RTT about 26-58 ms below {cc}'s at every link delay 10-100 ms",
            paper_value="26-58 ms lower ('sekitar', S05); tolerance +-5 ms",
            test="Welch interval of RTT(cc) - RTT(bbr) within [21, 63] ms per delay; p = TOST; effect: Hedges' g",
            levels=LEVELS, level_name="link_delay_ms", est_at=lambda d, cc=cc: gap(d, reg05, cc),
            reason_ccs=[cc, "bbr"], what=what, match=M, unit="ms"))
        reg23 = (0.0, 58.0, True, False)
        out.append(core.level_claim(
            ctx, claim_id=f"S23-{cc}", section="5", experiment=EXP,
            statement=f"BBR mean RTT lower than {cc}'s by up to 58 ms at every link delay 10-100 ms",
            paper_value="lower by up to 58 ms (S23): 0 < gap <= 58 ms",
            test="Welch interval of RTT(cc) - RTT(bbr) in (0, 58] ms per delay; p = one-sided t; effect: Hedges' g",
            levels=LEVELS, level_name="link_delay_ms", est_at=lambda d, cc=cc: gap(d, reg23, cc),
            reason_ccs=[cc, "bbr"], what=what, match=M, unit="ms"))
    return out
