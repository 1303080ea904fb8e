"""Section 4.3 B: flow 1 TCP (cc), flow 2 UDP constant bit rate (CBR 2-20 Mbit/s, step 2), multipath, link delay
10 ms, no loss. The paper's claims cover CBR 12-20 Mbit/s (Jain < 0.9 for BBR: 14-20).

Throughputs are ``goodput_mbps``, each flow's over its own run as the paper's figures average each iperf3 run (TCP:
goodput at router1; UDP: what iperf3's server received); Jain's index is that of the run's two goodputs
(``analysis.metrics.fairness.pair_jain``). (Until 2026-11-27 all three were taken over the window in which both flows
run, ``overlap_goodput_mbps`` and ``jain``: docs/claims.md.)
"""
from __future__ import annotations

from analysis.claims import core
from analysis.metrics.fairness import pair_jain

EXP = "udp_fairness"
LOSS_BASED = ("reno", "bic", "cubic")
CBR_12_20 = (12, 14, 16, 18, 20)
CBR_14_20 = (14, 16, 18, 20)
TOL_RANGE_MBPS = 0.5   # "sekitar 8-10 Mbps": [7.5, 10.5]
TOL_JAIN = 0.01        # "0.99": [0.98, 1]
JAIN = "pair_jain"     # Jain's index of the run's two goodputs (computed, not a row column)
FAIRER, LESS_FAIR = ("reno", "cubic"), ("bic", "bbr")   # section 4.3: "Reno dan CUBIC lebih adil ... dibandingkan
                                                        # dengan BIC dan BBR"


def _x(ctx, cc, cbr, flow, col):
    """Per-run values of ``col`` of ``flow`` (JAIN: Jain's index of the run's two goodputs) at CBR ``cbr``."""
    sel = core.rows(ctx, flow=None if col == JAIN else flow, experiment=EXP, cc=cc, cbr_mbps=float(cbr),
                    path_mode="multipath", link_delay_ms=10.0, loss_pct=0.0)
    if col == JAIN:
        return pair_jain(sel).to_numpy(float)
    return core.sample(sel, col)


def _claim(ctx, cid, cc, levels, flow, col, reg, stmt, pv, test, notes=(), unit=""):
    def est(lv):
        x = _x(ctx, cc, lv, flow, col)
        return (core.one_sample(x, reg, ctx.alpha), reg) if x.size else None
    return core.level_claim(ctx, claim_id=cid, section="4.3", experiment=EXP, statement=stmt, paper_value=pv,
                            test=test, levels=levels, level_name="cbr_mbps", est_at=est, reason_ccs=cc,
                            what=f"{cc} vs UDP CBR {levels[0]}-{levels[-1]} Mbit/s", notes=notes,
                            match=dict(experiment=EXP, cc=cc, cbr_mbps=levels), unit=unit)


def claims(ctx) -> list[dict]:
    out = []
    for cc in LOSS_BASED:
        out.append(_claim(
            ctx, f"S17-{cc}", cc, CBR_12_20, 1, "goodput_mbps",
            core.region("approx_between", low=8, high=10, tol=TOL_RANGE_MBPS),
            f"{cc} throughput about 8-10 Mbit/s against UDP CBR 12-20 Mbit/s",
            "about 8-10 Mbit/s (S17); tolerance +-0.5",
            "t-interval per CBR within [7.5, 10.5]; p = TOST; effect: Cohen's d vs 9", unit="Mbit/s"))
        out.append(_claim(
            ctx, f"S18-{cc}", cc, CBR_12_20, 2, "goodput_mbps",
            core.region("approx_between", low=7, high=9, tol=TOL_RANGE_MBPS),
            f"UDP throughput about 7-9 Mbit/s against {cc} at CBR 12-20 Mbit/s",
            "about 7-9 Mbit/s (S18); tolerance +-0.5",
            "t-interval per CBR within [6.5, 9.5]; p = TOST; effect: Cohen's d vs 8", unit="Mbit/s"))
        out.append(_claim(
            ctx, f"S19-{cc}", cc, CBR_12_20, 1, JAIN, core.region(">", 0.9),
            f"{cc} vs UDP Jain's index > 0.9 at CBR 12-20 Mbit/s", "> 0.9 (S19)",
            "t-interval per CBR above 0.9; p = one-sided t; effect: Cohen's d vs 0.9", unit=""))
    for cc in ("reno", "cubic"):
        out.append(_claim(
            ctx, f"S20-{cc}", cc, CBR_12_20, 1, JAIN, core.region("approx", 0.99, tol=TOL_JAIN),
            f"{cc} vs UDP Jain's index about 0.99 at CBR 12-20 Mbit/s", "0.99 (S20); tolerance +-0.01",
            "t-interval per CBR within [0.98, 1.0]; p = TOST; effect: Cohen's d vs 0.99", unit=""))
    out.append(_claim(
        ctx, "S21-bbr", "bbr", CBR_14_20, 1, JAIN, core.region("<", 0.9),
        "bbr vs UDP Jain's index < 0.9 at CBR 14-20 Mbit/s", "< 0.9 (S21)",
        "t-interval per CBR below 0.9; p = one-sided t; effect: Cohen's d vs 0.9", unit=""))
    out.append(_fairer(ctx))
    return out


def _fairer(ctx) -> dict:
    """Section 4.3's conclusion after S20, "Reno dan CUBIC lebih adil dalam berbagi throughput dengan UDP dibandingkan
    dengan BIC dan BBR": at every CBR level of 12-20 Mbit/s, each of reno's and cubic's Jain index against UDP above
    each of bic's and bbr's (``core.dominance`` over the comparisons within a level, Holm over all of them)."""
    samples = {f"{cc}@{cbr}": _x(ctx, cc, cbr, 1, JAIN) for cc in FAIRER + LESS_FAIR for cbr in CBR_12_20}
    pairs = [(f"{h}@{cbr}", f"{low}@{cbr}") for cbr in CBR_12_20 for h in FAIRER for low in LESS_FAIR]
    return core.dominance(
        ctx, "C-RENO-CUBIC-FAIRER-UDP", "4.3", EXP, samples,
        [f"{cc}@{cbr}" for cc in FAIRER for cbr in CBR_12_20], [f"{cc}@{cbr}" for cc in LESS_FAIR for cbr in CBR_12_20],
        "Jain's index against UDP of reno and of cubic above that of bic and of bbr at every CBR of 12-20 Mbit/s",
        "'Reno dan CUBIC lebih adil dalam berbagi throughput dengan UDP dibandingkan dengan BIC dan BBR' (section "
        "4.3, the conclusion of S19-S21)",
        core.not_run_reason(ctx, list(FAIRER + LESS_FAIR), "udp_fairness runs", dict(experiment=EXP)), pairs=pairs)
