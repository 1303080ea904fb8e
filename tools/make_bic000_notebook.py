"""Write notebooks/15_bic000_paper_bic.ipynb, study 000 with the paper's BIC (Linux 4.15's, bic415) beside 6.1's
(campaigns/bic000.yaml, analysis/bic000.py, docs/kernel-415.md). Run when its cells change (``python
tools/make_bic000_notebook.py``); ``mpcc reproduce --inplace --only '15*'`` then stores its outputs. The notebook
reads data/bic000 (metadata ``mpcc.campaign``: `mpcc reproduce` gives it its own bundle unless --data is a bic000
campaign)."""
from pathlib import Path

import nbgen

NB = Path(__file__).resolve().parents[1] / "notebooks" / "15_bic000_paper_bic.ipynb"

INTRO = """# Study 000 with the paper's BIC: Linux 4.15's tcp_bic beside 6.1's

Paper 000 ran every machine on Linux 4.15 with its congestion controls' default parameters (sections 2.1 and 2.3).
Its BIC is therefore 4.15's `tcp_bic.c`, which grows the window in congestion avoidance by one segment counted per
ACK (`tcp_cong_avoid_ai(tp, ca->cnt, 1)`), where Linux 6.1's counts the segments each ACK covers; with delayed ACKs
4.15's BIC regrows its window about half as fast after a loss. This host's kernel has no tcp_bic, so every BIC run
here is a BPF port: `bic` (6.1's file) in every recording before this one, and `bic415` (the same port with 4.15's
`bictcp_cong_avoid`), validated in a VM against 4.15's own file built as a module (docs/cc-validation.md).

This campaign (`campaigns/bic000.yaml`) runs study 000's BIC experiments with each BIC on this host, everything else
the paper protocol's (TBF 10 Mbit/s with NetEm's 100-packet limit, 10 ms link delay, per-packet round robin over two
paths, 100-s runs, 5 repetitions): Table 3's single and multipath runs, the loss experiment at 0, 1 and 10 %, and
Table 4's three pairs with BIC. Each arm is scored by study 000's own claims with that BIC read as the paper's."""

PARAMS = nbgen.campaign_params("bic000", "the intervals here are t-based and the claims' own")

SETUP = nbgen.setup('''import matplotlib.pyplot as plt
from IPython.display import Markdown, display
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from analysis import bic000 as b
from analysis import reference
from analysis.dataset import load_campaign
from analysis.figures import cc_palette, legend_outside, readable, save_figure, save_table, set_style
from analysis.figures.coverage import apply_filters
from analysis.metrics.fairness import pair_jain''', '''set_style(tables=True)
''' + nbgen.LOAD + '''
''' + nbgen.SUMMARY + '''
per = df.drop_duplicates("run_id")
arm_of = lambda r: b.ARM_LABEL[b.PAPER_KERNEL] if "bic415" in (r["cc"], r["cc2"]) else b.ARM_LABEL[b.BASELINE]
display(readable(per.assign(bic=per.apply(arm_of, axis=1)).groupby(["bic", "experiment"]).size()
                 .rename("runs").reset_index()))
colour = cc_palette(["bic"])["bic"]           # BIC's colour in every notebook; the arms differ by marker
marker = {b.BASELINE: "o", b.PAPER_KERNEL: "s"}
arm_handles = [Line2D([], [], color=colour, marker=marker[a], mfc=colour if a == b.BASELINE else "white", ls="none",
                      label=b.ARM_LABEL[a]) for a in b.ARMS]''')

CLAIMS = '''cl = b.claims_by_arm(df, alpha, n_boot)
save_table(cl, output_dir, "15_claims_by_bic")
show = cl.assign(**{
    b.ARM_LABEL[b.BASELINE]: [f"{e:.3g} [{lo:.3g}, {hi:.3g}] {v}" for e, lo, hi, v in
                              zip(cl["baseline_estimate"], cl["baseline_low"], cl["baseline_high"], cl["baseline_verdict"])],
    b.ARM_LABEL[b.PAPER_KERNEL]: [f"{e:.3g} [{lo:.3g}, {hi:.3g}] {v}" for e, lo, hi, v in
                                  zip(cl["paper_kernel_estimate"], cl["paper_kernel_low"], cl["paper_kernel_high"],
                                      cl["paper_kernel_verdict"])]})
display(readable(show[["claim_id", "statement", "paper_value", b.ARM_LABEL[b.BASELINE], b.ARM_LABEL[b.PAPER_KERNEL]]]
                 .rename(columns={"claim_id": "claim", "paper_value": "paper"})))
changed = cl[cl["baseline_verdict"] != cl["paper_kernel_verdict"]]
display(Markdown(f"**{len(changed)} of {len(cl)} verdicts differ between the two BICs**" + (": " + "; ".join(
    f"{r.claim_id} {r.baseline_verdict} → {r.paper_kernel_verdict}" for r in changed.itertuples()) + "."
    if len(changed) else ".")))'''

DROPS = '''dr, ef = b.drops(df, alpha), b.drop_effects(df, alpha)
save_table(dr, output_dir, "15_drops")
save_table(ef, output_dir, "15_drop_effects")
fig, axes = plt.subplots(1, 2, figsize=(12, 4.0))
for ax, (sid, (loss, paper)) in zip(axes, b.loss_drops.CLAIMS.items()):
    part = dr[(dr["claim"] == sid) & (dr["cc"] == "bic")]
    ax.axhspan(paper - b.loss_drops.TOL_MBPS, paper + b.loss_drops.TOL_MBPS, color="0.85", zorder=0)
    for k, arm in enumerate(b.ARMS):
        r = part[part[b.ARM] == arm]
        if r.empty:
            continue
        r = r.iloc[0]
        ax.errorbar([k], [r["drop_mbps"]], yerr=[[r["drop_mbps"] - r["drop_low"]], [r["drop_high"] - r["drop_mbps"]]],
                    color=colour, capsize=4, ms=8, ls="none", marker=marker[arm],
                    mfc=colour if arm == b.BASELINE else "white")
    ax.set_xticks(range(len(b.ARMS)))
    ax.set_xticklabels([f"Linux {a}'s BIC" for a in b.ARMS])
    ax.set_xlim(-0.6, len(b.ARMS) - 0.4)
    ax.set_xlabel("BIC's code")
    ax.set_ylabel("goodput drop (Mbit/s)")
    ax.set_title(f"{sid}: BIC, loss 0 % to {loss:g} % (paper: about {paper:g})")
handles = arm_handles + [Patch(color="0.85", label=f"paper's value ± {b.loss_drops.TOL_MBPS:g} Mbit/s")]
legend_outside(axes[-1], handles=handles, labels=[h.get_label() for h in handles])
fig.suptitle(f"Study 000: goodput BIC loses to random loss with each kernel's BIC "
             f"(mean, {100 * (1 - alpha):g} % CI; multipath, 10 ms)")
fig.tight_layout()
save_figure(fig, output_dir, "15_drops")
plt.show()
display(readable(ef.rename(columns={
    "loss_pct": "loss (%)", "paper_drop_mbps": "paper (Mbit/s)", "baseline_drop_mbps": "6.1's BIC (Mbit/s)",
    "paper_kernel_drop_mbps": "4.15's BIC (Mbit/s)", "diff": "difference (Mbit/s)", "diff_low": "CI low",
    "diff_high": "CI high", "p_value": "p (Welch)", "moved": "beyond noise", "toward_paper": "toward the paper"})))'''

JAIN = '''je = b.jain_effects(df, alpha)
save_table(je, output_dir, "15_jain")
t4 = reference.load_table4().set_index("pair")
fig, ax = plt.subplots(figsize=(9, 4.0))
for k, (pair, cc, cc2) in enumerate(b.BIC_PAIRS):
    for j, arm in enumerate(b.ARMS):
        name = {"bic": b.CC_OF[arm]}
        sel = df[(df["experiment"] == "tcp_fairness") & (df["cc"] == name.get(cc, cc)) & (df["cc2"] == name.get(cc2, cc2))]
        x = pair_jain(sel).to_numpy(float)
        if not x.size:
            continue
        e = b.est_mean(x)
        lo, hi = e.interval(alpha)
        ax.errorbar([k + (j - 0.5) * 0.3], [e.mean], yerr=[[e.mean - lo], [hi - e.mean]], color=colour, capsize=4,
                    ms=8, ls="none", marker=marker[arm], mfc=colour if arm == b.BASELINE else "white")
    if pair in t4.index:
        ax.plot([k], [float(t4.loc[pair, "jain"])], marker="D", color="black", ls="none", ms=7)
ax.set_xticks(range(len(b.BIC_PAIRS)))
ax.set_xticklabels([f"pair {p}: {c1} + {c2}" for p, c1, c2 in b.BIC_PAIRS])
ax.set_xlim(-0.6, len(b.BIC_PAIRS) - 0.4)
ax.set_xlabel("Table 4's pair (flow 1 + flow 2)")
ax.set_ylabel("Jain's index of the two goodputs")
ax.set_title(f"Table 4's pairs with BIC: fairness with each kernel's BIC (mean, {100 * (1 - alpha):g} % CI)")
handles = arm_handles + [Line2D([], [], color="black", marker="D", ls="none", label="paper (Table 4)")]
legend_outside(ax, handles=handles, labels=[h.get_label() for h in handles])
fig.tight_layout()
save_figure(fig, output_dir, "15_jain")
plt.show()
display(readable(je.rename(columns={
    "runs_baseline": "runs (6.1's BIC)", "runs_paper_kernel": "runs (4.15's BIC)", "baseline_jain": "6.1's BIC",
    "paper_kernel_jain": "4.15's BIC", "diff": "difference", "diff_low": "CI low", "diff_high": "CI high",
    "moved": "beyond noise"})))'''


def main():
    cells = [
        ("md", INTRO), ("code", PARAMS, "parameters"), ("code", SETUP, "hide-input"),
        ("md", "## Study 000's claims about BIC, on each BIC\n\nEvery claim about BIC that both arms can judge "
               "(its own claims in the experiments run here, and Table 4's pairs with BIC), scored by the claims' "
               "own rules on the runs of each BIC: estimate [95 % interval] and verdict."),
        ("code", CLAIMS),
        ("md", "## The goodput BIC loses to random loss\n\nBIC's drop from loss 0 % to 1 % (S06) and to 10 % "
               "(S07), with its Welch interval, and 4.15's BIC minus 6.1's with a 95 % interval: moved beyond noise "
               "when that interval excludes 0."),
        ("code", DROPS),
        ("md", "## Table 4's pairs with BIC\n\nJain's index J = (Σx)² / (n·Σx²) of each run's two goodputs (as "
               "Table 4 computes it), mean over runs with a t interval, beside the paper's value; the difference "
               "4.15's BIC minus 6.1's with its Welch interval."),
        ("code", JAIN),
    ]
    nbgen.write(NB, {"family": "000", "campaign": "bic000", "default_data": "data/bic000"}, cells)
    print(f"wrote {NB}")


if __name__ == "__main__":
    main()
