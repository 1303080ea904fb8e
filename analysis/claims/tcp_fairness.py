"""Section 4.3 A / Tables 2 and 4: two TCP flows with different ccs (flow 1 = Table 2's source host 1), multipath,
link delay 10 ms, no loss.

Per-flow throughput is ``goodput_mbps``: each flow's goodput over its own run, as the paper's Table 4 gives each
flow's mean throughput over its own iperf3 run (flow 1's mean includes the 5 of 100 s before flow 2 starts). Jain's
index: that of the run's two goodputs (``analysis.metrics.fairness.pair_jain``), as Table 4 computes it from the two
means. (Until 2026-11-27 both were taken over the window in which both flows run, ``overlap_goodput_mbps`` and
``jain``: docs/claims.md.)
"""
from __future__ import annotations

import numpy as np

from analysis import reference
from analysis.claims import core
from analysis.claims.core import fmt
from analysis.metrics.fairness import pair_jain

EXP = "tcp_fairness"
TOL_MBPS = 1.0     # "mencapai 19 Mbps": 19 +- 1
TOL_JAIN = 0.02    # Table 4 Jain +- 0.02


def _pair_rows(ctx, cc, cc2):
    return core.rows(ctx, flow=None, experiment=EXP, cc=cc, cc2=cc2, path_mode="multipath",
                     link_delay_ms=10.0, loss_pct=0.0)


def _per_run(sel):
    """(flow-1 goodputs, flow-2 goodputs, Jain's index of the two) aligned by run: only runs with both flows."""
    if sel.empty:
        return np.zeros(0), np.zeros(0), np.zeros(0)
    w = sel.pivot_table(index="run_id", columns="flow", values="goodput_mbps", aggfunc="first")
    if 1 not in w.columns or 2 not in w.columns:
        return np.zeros(0), np.zeros(0), np.zeros(0)
    w = w.dropna(subset=[1, 2])
    j = pair_jain(sel).reindex(w.index)
    return w[1].to_numpy(float), w[2].to_numpy(float), j.to_numpy(float)


def claims(ctx) -> list[dict]:
    t2 = reference.load_table2()
    t4 = reference.load_table4().set_index("pair")
    a = ctx.alpha
    out = []
    jains = {}
    for r in t2.itertuples():
        k, cc, cc2 = int(r.pair), r.cc, r.cc2
        ref = t4.loc[k]
        x1, x2, jj = _per_run(_pair_rows(ctx, cc, cc2))
        jains[k] = jj[np.isfinite(jj)]
        what = f"pair {k} ({cc} + {cc2}) multipath d10 ms"
        label = f"pair {k} {cc}+{cc2}"
        tot_ref = ref.throughput1_mbps + ref.throughput2_mbps

        def one(cid, sec, stmt, pv, test, x, reg, notes=(), tier="behaviour", unit=""):
            if x.size == 0:
                out.append(core.row(cid, sec, EXP, stmt, pv, None, test, "not run",
                                    "; ".join([core.not_run_reason(ctx, [cc, cc2], what, dict(experiment=EXP, cc=cc, cc2=cc2))] + list(notes)),
                                    tier=tier, unit=unit))
                return
            e = core.one_sample(x, reg, a)
            v, why = core.decide(e, reg)
            out.append(core.row(cid, sec, EXP, stmt, pv, e, test, v, "; ".join([w for w in [why, *notes] if w]),
                                tier=tier, unit=unit))

        tot = x1 + x2
        one(f"S14-pair{k}", "4.3", f"{label}: total throughput about 19 Mbit/s",
            f"about 19 Mbit/s (S14); Table 4 total {fmt(tot_ref, 4)}; tolerance +-{TOL_MBPS:g}",
            "t-interval of flow1+flow2 goodput within 19 +- 1; p = TOST; effect: Cohen's d vs 19",
            tot, core.region("approx", 19.0, tol=TOL_MBPS), tier="sanity", unit="Mbit/s")
        one(f"S15-pair{k}", "4.3", f"{label}: total throughput >= 95 % of 20 Mbit/s",
            f">= 19 Mbit/s (S15); Table 4 total {fmt(tot_ref, 4)}",
            "t-interval of the total at or above 19; p = one-sided t; effect: Cohen's d vs 19",
            tot, core.region(">=", 0.95 * core.CAPACITY_MBPS),
            notes=["paper inconsistency: Table 4 totals are 18.53-19.15 Mbit/s, only pair 3 reaches 19"], tier="sanity",
            unit="Mbit/s")
        one(f"S16-pair{k}", "4.3", f"{label}: Jain's index > 0.9",
            f"> 0.9 (S16); Table 4: {ref.jain}",
            "t-interval of Jain above 0.9; p = one-sided t; effect: Cohen's d vs 0.9",
            jains[k], core.region(">", 0.9), unit="")
        jnotes = []
        if k == 4:
            jnotes.append("paper inconsistency: Table 4 prints 0.969; its throughputs 7.73/11.04 give 0.970")
        one(f"T4-JAIN-pair{k}", "4.3", f"{label}: Jain's index about {ref.jain} (Table 4)",
            f"{ref.jain} (Table 4); tolerance +-{TOL_JAIN:g}",
            f"t-interval of Jain within {ref.jain} +- {TOL_JAIN:g}; p = TOST; effect: Cohen's d",
            jains[k], core.region("approx", float(ref.jain), tol=TOL_JAIN), notes=jnotes, unit="")
        # which flow gets more: sign of the per-run difference flow1 - flow2
        more = cc if ref.throughput1_mbps > ref.throughput2_mbps else cc2
        less = cc2 if more == cc else cc
        d = x1 - x2
        reg = core.region(">", 0.0) if ref.throughput1_mbps > ref.throughput2_mbps else core.region("<", 0.0)
        one(f"T4-SHARE-pair{k}", "4.3", f"{label}: {more} gets more throughput than {less}",
            f"{cc} {ref.throughput1_mbps} vs {cc2} {ref.throughput2_mbps} Mbit/s (Table 4)",
            "paired t-interval of flow1 - flow2 goodput excludes 0 on the paper's side; p = one-sided "
            "paired t; effect: Cohen's d of the differences",
            d, reg, notes=(["BBR's share lower than the loss-based flow's (section 4.3)"] if "bbr" in (cc, cc2)
                           else []), unit="Mbit/s")
    # CUBIC pairs fairest: every CUBIC pair's Jain above every non-CUBIC pair's
    cub = [int(r.pair) for r in t2.itertuples() if "cubic" in (r.cc, r.cc2)]
    oth = [int(r.pair) for r in t2.itertuples() if "cubic" not in (r.cc, r.cc2)]
    out.append(_dominance(ctx, "C-CUBIC-FAIREST", jains, cub, oth,
                          "Jain's index of every CUBIC pair (1, 2, 4) above every other pair (3, 5, 6)",
                          "CUBIC pairs 0.985/0.978/0.969 vs others 0.929/0.949/0.955 (Table 4, section 4.3)", t2))
    out.append(_dominance(ctx, "C-CUBIC-RENO-FAIREST", jains, [1], [p for p in jains if p != 1],
                          "Jain's index of CUBIC+Reno (pair 1) highest of all pairs",
                          "0.985, the highest in Table 4 (section 4.3)", t2))
    return out


def _dominance(ctx, cid, jains, hi_pairs, lo_pairs, stmt, pv, t2) -> dict:
    """Every pair in ``hi_pairs`` has a higher mean Jain than every pair in ``lo_pairs`` (``core.dominance``). Ours is
    a difference of Jain indices: dimensionless (unit "")."""
    ccs = sorted({c for r in t2.itertuples() for c in (r.cc, r.cc2)})
    return core.dominance(ctx, cid, "4.3", EXP, {f"pair{k}": v for k, v in jains.items()},
                          [f"pair{k}" for k in hi_pairs], [f"pair{k}" for k in lo_pairs], stmt, pv,
                          core.not_run_reason(ctx, ccs, "tcp_fairness pairs", dict(experiment=EXP)))
