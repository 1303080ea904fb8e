"""Write notebooks/13_fidelity000_ablation.ipynb, study 000's fidelity ablation (issue 28; campaigns/fidelity000.yaml,
analysis/ablation.py, docs/netem-semantics.md). Run when its cells change (``python tools/make_ablation_notebook.py``);
``mpcc reproduce --inplace --only '13*'`` then stores its outputs. The notebook reads data/fidelity000 (metadata
``mpcc.campaign``: `mpcc reproduce` gives it its own bundle unless --data is a fidelity000 campaign)."""
from pathlib import Path

import nbgen

NB = Path(__file__).resolve().parents[1] / "notebooks" / "13_fidelity000_ablation.ipynb"

INTRO = """# Study 000's fidelity ablation: the paper's NetEm semantics and iperf3's datagram size

Paper 000 (section 3) emulates link delay, loss **and the 100-packet buffer with NetEm** on each switch, under TBF
10 Mbit/s. Our earlier namespace recordings queue in a 100-packet FIFO *after* the delay line
(`fifo-after-delay`), so the packets in flight on the delay line do not count towards the 100. The paper does not say
how it chained TBF and NetEm; the two usual recipes give different queues (docs/netem-semantics.md):

* **tbf-netem**: TBF at the root, NetEm its child: one limit of 100 for delay line and queue, drop at arrival;
* **netem-tbf**: NetEm at the root (its 100 caps the delay line), TBF its child with a byte queue of its own.

Both emulations were validated against real netem in a Debian VM (docs/netem-semantics.md, the VM comparison table).
The UDP runs also ran with the paper era's iperf3 datagram (8192 bytes: 6 IP fragments over round-robin paths)
beside today's one-MSS datagrams. Every configuration behind a claim our recordings do not reproduce, under each
arm, 100-s runs, 5 repetitions (`campaigns/fidelity000.yaml`).

This notebook shows, claim by claim, which setting moves the result and how far (95 % intervals over repetitions),
whether that is toward or away from the paper, and which recipe the paper's numbers fit best, **an inference from
our measurements, not a measurement of the paper's testbed**."""

PARAMS = nbgen.campaign_params("fidelity000", "scorecards per arm")

SETUP = nbgen.setup('''import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from analysis import ablation
from analysis.claims import evaluate
from analysis.claims.core import headline
from analysis.claims.side_by_side import change_counts, side_by_side, transitions
from analysis.dataset import load_campaign
from analysis.figures import band_panels, legend_outside, readable, save_figure, save_table, set_style
from analysis.figures.coverage import apply_filters''', '''set_style(tables=True)
''' + nbgen.LOAD + '''
arms = ablation.with_arms(df)
one = arms.drop_duplicates("run_id")
per_arm = one.groupby(["queue_model", one["udp_len_bytes"].astype(object).fillna("one MSS")]).size()
''' + nbgen.SUMMARY + '''
display(readable(per_arm.rename("runs").reset_index().rename(columns={"udp_len_bytes": "UDP datagram"})))''')

QUANT = '''q = ablation.quantities(df)
eff = ablation.effects(q)
save_table(q, output_dir, "13_quantities")
save_table(eff, output_dir, "13_effects")
show = eff.assign(arm=[ablation.arm_label(a, b) for a, b in zip(eff["queue_model"], eff["udp_len_bytes"])],
                  change=[f"{d:+.3g} [{lo:+.3g}, {hi:+.3g}]" if np.isfinite(lo) and np.isfinite(hi) else
                          f"{d:+.3g} (no interval: a single run in an arm)"
                          for d, lo, hi in zip(eff["diff"], eff["diff_low"], eff["diff_high"])],
                  direction=np.where(~(np.isfinite(eff["diff_low"].astype(float)) &
                                       np.isfinite(eff["diff_high"].astype(float))), "not determined (one run)",
                            np.where(~eff["moved"], "within noise",
                                     np.where(eff["toward_paper"] == True, "toward the paper",  # noqa: E712
                                              np.where(eff["toward_paper"] == False, "away from the paper",  # noqa: E712
                                                       "moved")))))
cols = ["claims", "quantity", "unit", "config", "arm", "baseline_mean", "arm_mean", "change", "direction"]
display(readable(show[cols].rename(columns={"baseline_mean": "fifo-after-delay (mean)", "arm_mean": "arm (mean)",
                                           "change": "arm − baseline [95 % CI]"})))'''

RTT_FIG = '''gap = q[q["quantity"].str.startswith("RTT gap") & q["claims"].str.contains("S05")].copy()
if len(gap):
    gap["link_delay_ms"] = gap["config"].str.extract(r"link delay (\\d+) ms").astype(float)
    gap["cc"] = gap["quantity"].str.extract(r"RTT gap (\\w+)")
    fig = band_panels(gap, "queue_model", "link_delay_ms", hue="cc", band=(26, 58),
                      band_label="paper: 26-58 ms (S05, S23)", name_fmt="{} − bbr (ours)",
                      panel_order=[m for m in ablation.QUEUE_MODELS if m in set(gap["queue_model"])],
                      panel_title="queue model: {}", xlabel="link delay (ms)", ylabel="RTT gap, loss-based − BBR (ms)",
                      title="S05/S23: BBR's RTT advantage, single flow, loss 0 % (mean, 95 % CI over repetitions)")
    save_figure(fig, output_dir, "13_rtt_gap")
    plt.show()'''

EFFECT_FIG = '''if len(eff):
    e = eff[eff["queue_model"].isin(ablation.FAITHFUL) & eff["udp_len_bytes"].isna()].copy()
    e["cell"] = e["quantity"] + " | " + e["config"]
    e["scaled"] = e["diff"] / e["baseline_mean"].abs().where(e["baseline_mean"].abs() > 0)
    e["lo"] = e["diff_low"] / e["baseline_mean"].abs().where(e["baseline_mean"].abs() > 0)
    e["hi"] = e["diff_high"] / e["baseline_mean"].abs().where(e["baseline_mean"].abs() > 0)
    e = e.dropna(subset=["scaled"])
    cells = list(dict.fromkeys(e["cell"]))
    fig, ax = plt.subplots(figsize=(8.5, max(3.0, 0.22 * len(cells))))
    colours = {"tbf-netem": "#1b7837", "netem-tbf": "#762a83"}
    for k, m in enumerate(ablation.FAITHFUL):
        s = e[e["queue_model"] == m]
        y = np.array([cells.index(c) for c in s["cell"]]) + (k - 0.5) * 0.3
        ax.errorbar(100 * s["scaled"], y, xerr=[100 * (s["scaled"] - s["lo"]), 100 * (s["hi"] - s["scaled"])],
                    fmt="o", ms=3.5, capsize=2, color=colours[m], label=m)
    ax.axvline(0, color="k", lw=0.8)
    ax.set_yticks(range(len(cells)))
    ax.set_yticklabels(cells, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("change against fifo-after-delay (% of the baseline's mean, 95 % CI)")
    ax.set_title("Every quantity behind a claim: what the paper's NetEm semantics change")
    legend_outside(ax)
    fig.tight_layout()
    save_figure(fig, output_dir, "13_effects")
    plt.show()'''

UDP_FIG = '''u = q[q["quantity"].str.startswith("TCP goodput")].copy()
if len(u):
    u["cbr_mbps"] = u["config"].str.extract(r"cbr (\\d+)").astype(float)
    u["cc"] = u["quantity"].str.extract(r"TCP goodput (\\w+)")
    u["arm"] = [ablation.arm_label(a, b) for a, b in zip(u["queue_model"], u["udp_len_bytes"])]
    # one row per datagram size (one MSS, then the paper era's 8192 bytes), one column per queue model
    grid = [ablation.arm_label(m, ln) for ln in (None, ablation.PAPER_DATAGRAM) for m in ablation.QUEUE_MODELS]
    fig = band_panels(u, "arm", "cbr_mbps", hue="cc", band=(8, 10), band_label="paper: TCP 8-10 Mbit/s (S17)",
                      panel_order=[a for a in grid if a in set(u["arm"])], ncols=3,
                      xlabel="UDP CBR (Mbit/s)", ylabel="TCP goodput (Mbit/s)",
                      title="S17: TCP goodput against UDP CBR (each flow over its own run), per queue model and datagram size")
    save_figure(fig, output_dir, "13_udp")
    plt.show()'''

BEST = '''bf = ablation.best_fit(q)
save_table(bf, output_dir, "13_best_fit")
bf = bf.assign(arm=[ablation.arm_label(a, b) for a, b in zip(bf["queue_model"], bf["udp_len_bytes"])])
display(readable(bf[["claims", "arm", "nearest", "cells"]].rename(
    columns={"nearest": "cells where this arm is nearest the paper", "cells": "cells"})))
tot = bf.groupby("arm")["nearest"].sum().sort_values(ascending=False)
print("nearest the paper, summed over claims (ties count for each tied arm):",
      ", ".join(f"{a} {n}" for a, n in tot.items()))'''

DECIDE = '''dec = ablation.rerecord_decision(eff, alpha) if len(eff) else None
prog = ablation.recording_progress(campaign_dir)
if dec is not None:
    t = dec["table"]
    save_table(t, output_dir, "13_rerecord_decision")
    verdict = ("record study 000's paper protocol again under campaigns/paper.yaml's settings" if dec["rerecord"] else
               "no cell moved beyond noise: the paper protocol's faithful settings give no reason to record it again")
    interim = (f" **Interim**: the bundle holds {prog[0]} of the campaign's {prog[1]} runs; the decision is the "
               f"complete bundle's." if prog is not None and prog[0] < prog[1] else "")
    other = dec["moved"] - dec["toward"] - dec["away"]
    untested = dec["cells"] - dec["tested"]
    display(Markdown(f"**{dec['moved']} of {dec['tested']} cells moved** beyond run-to-run noise (Holm, family-wise "
                     f"error {100 * dec['alpha']:g} %"
                     + (f"; {untested} of the {dec['cells']} cells have no p-value" if untested else "") + "): "
                     f"{dec['toward']} toward the paper, {dec['away']} away"
                     + (f", {other} as near the paper as before (within the paper's range both times, or no "
                        f"paper value)" if other else "") + f". Decision: {verdict}.{interim}"))
    show = t.assign(arm=[ablation.arm_label(a, b) for a, b in zip(t["queue_model"], t["udp_len_bytes"])])
    display(readable(show[["claims", "quantity", "unit", "config", "arm", "baseline_mean", "arm_mean", "diff",
                           "p_value", "p_holm", "moved_holm", "toward_paper"]].rename(
        columns={"baseline_mean": "fifo-after-delay (mean)", "arm_mean": "paper settings (mean)",
                 "diff": "difference", "p_value": "p (Welch)", "p_holm": "p (Holm)",
                 "moved_holm": "moved beyond noise", "toward_paper": "toward the paper"})))'''

SCORE = '''cards = {}
for arm in ablation.arm_set(df):
    if arm[1] is not None:
        continue            # the datagram size is a UDP-only arm: its effect is in the tables above
    part = ablation.select_arm(df, arm)
    cards[arm[0]] = evaluate(part, alpha=alpha, n_boot=n_boot, seed=0)
    save_table(cards[arm[0]], output_dir, f"13_scorecard_{arm[0]}")
base = cards.get("fifo-after-delay")
for m in ablation.FAITHFUL:
    if base is None or m not in cards:
        continue
    sbs = side_by_side(headline(base), headline(cards[m]), ("fifo-after-delay", m))
    moved = sbs[sbs["change"] != "same"]
    display(Markdown(f"**fifo-after-delay → {m}**: " + ", ".join(f"{k} {v}" for k, v in change_counts(sbs).items()
                                                                 if v) + " (headline claims of these configurations)"))
    display(readable(transitions(sbs, ("fifo-after-delay", m))))
    if len(moved):
        display(readable(moved[["claim_id", "statement", "ours_fifo-after-delay", "verdict_fifo-after-delay",
                                f"ours_{m}", f"verdict_{m}", "change"]]))'''


def main():
    cells = [
        ("md", INTRO), ("code", PARAMS, "parameters"), ("code", SETUP, "hide-input"),
        ("md", "## Each arm against the baseline, quantity by quantity\n\nFor every quantity a claim is about (a "
               "mean over runs, or a difference of two configurations' means with a Welch standard error): the "
               "baseline arm's mean, the arm's, their difference with its 95 % interval, and whether the arm moved it "
               "beyond run-to-run noise (the interval excludes 0) toward the paper's value or away from it."),
        ("code", QUANT),
        ("md", "## BBR's RTT advantage (S05, S23) under each queue model\n\nThe gap is the standing queue a "
               "loss-based flow keeps and BBR does not; NetEm's shared limit leaves less room for it at long delays."),
        ("code", RTT_FIG),
        ("md", "## All effects at a glance (the two faithful queue models, one-MSS datagrams)"),
        ("code", EFFECT_FIG),
        ("md", "## TCP against UDP CBR (S17-S20): queue model and datagram size"),
        ("code", UDP_FIG),
        ("md", "## Which recipe do the paper's numbers fit best? (an inference)\n\nPer claim, in how many cells "
               "(quantity × configuration) each arm's mean is nearest the paper's value. This says which of our "
               "settings behaves most like the paper's testbed; it does not measure that testbed."),
        ("code", BEST),
        ("md", "## Does study 000 need recording again? (issue 28, item 5)\n\nThe paper protocol's faithful settings "
               "(campaigns/paper.yaml: the `tbf-netem` switch, and 8192-byte datagrams for the UDP runs) against the "
               "baseline every earlier recording ran, cell by cell. A cell moved when its Welch p-value stays below "
               "5 % after Holm's correction over all the cells, so that a few chance crossings among many cells do "
               "not decide it. If any cell moved, the 1,340 runs are recorded again under those settings (the rule "
               "was fixed before the complete ablation was seen)."),
        ("code", DECIDE),
        ("md", "## The verdicts per arm\n\nThe scorecard of these configurations under each queue model (one-MSS "
               "datagrams), and which verdicts change against the baseline."),
        ("code", SCORE),
    ]
    nbgen.write(NB, {"family": "000", "campaign": "fidelity000", "default_data": "data/fidelity000"}, cells)
    print(f"wrote {NB}")


if __name__ == "__main__":
    main()
