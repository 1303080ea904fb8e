"""Write notebooks/09_study001_buffer_sweep.ipynb, 10_study003_queue_sizing.ipynb and 11_study004_westwood.ipynb (the
notebooks of studies 001, 003 and 004). Run once when their cells change (``python tools/make_family_notebooks.py
[11 ...]``: only the notebooks whose names start with the given prefixes); `make notebooks-refresh` then stores their
outputs."""
import sys
from pathlib import Path

import nbgen

ROOT = Path(__file__).resolve().parents[1]
NB = ROOT / "notebooks"

SETUP = nbgen.setup('''import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import display

from analysis import reference
from analysis.claims.registry import evaluate
from analysis.dataset import load_campaign
from analysis.figures import (bar_ci, label, legend_outside, line_ci, mean_ci, readable, save_figure, save_table,
                              set_style)
from analysis.figures.coverage import apply_filters''', '''set_style()
pd.set_option("display.precision", 3)
pd.set_option("display.max_columns", 40)
pd.set_option("display.max_rows", 300)
pd.set_option("display.max_colwidth", None)  # notes and explanations whole
pd.set_option("display.width", 200)
''' + nbgen.LOAD + '''
print(f"campaign {df['campaign'].iloc[0] if len(df) else '(no complete runs)'}: {df['run_id'].nunique()} complete "
      f"runs ({len(df)} path rows), {int((runs['status'] == 'skipped').sum())} skipped; "
      f"kernel {sorted(df['kernel'].dropna().unique())}; queue {sorted(df['queue_mechanism'].dropna().unique())}")
for r in runs.query("status == 'skipped'")["reason"].unique():
    print("not measured:", r)
from analysis import cc_impl
from analysis.dataset import run_metas
print("congestion controls that ran:", cc_impl.line(cc_impl.implementations(run_metas(campaign_dir))))''')


def params(default, compare=None):
    """The parameters cell; ``compare`` (a list of other datasets of the study) defaults to those that exist of its
    reduced sample (data/study00N-sample, once its paper protocol's bundle has become data/study00N,
    tools/promote_bundle.py) and its protocol extended beyond the paper's repetitions (data/study00N-extended)."""
    if compare is None:
        compare = [d for d in (default + "-sample", default + "-extended") if (ROOT / d.replace("../", "")).is_dir()]
    listed = "[" + ", ".join(f'"{d}"' for d in compare) + "]"
    return f'''# Parameters (papermill overrides these; paths are relative to notebooks/)
campaign_dir = "{default}"   # a study-{default[-3:]} campaign directory (runs/<run_id>/...)
derived_dir = None                  # None: per-run cache in RUN_DIR/derived/; a directory for read-only campaigns
output_dir = None                   # None: write no files; else figures/ and tables/ go under it
alpha = 0.05                        # 1 - confidence level of the CIs
n_boot = 9999                       # bootstrap resamples (BCa CI of the mean over repetitions)
filters = {{}}                        # column -> value or list of values, e.g. {{"mode": ["tcp_lte", "mptcp"]}}
compare_dirs = {listed}{" " * max(1, 23 - len(listed))}# other datasets of this study: verdicts side by side ([]: skip)'''


def scorecard(prefix):
    return f'''from analysis.claims.core import headline
from analysis.claims.explain import markdown as explanations
from IPython.display import Markdown
scores = evaluate(df, alpha=alpha, n_boot=n_boot, seed=0)
save_table(scores, output_dir, "{prefix}_scorecard")
head, sanity, subst = headline(scores), scores[scores["tier"] == "sanity"], scores[scores["substitute_for"].notna()]
print("headline (claims about the congestion controls):", head["verdict"].value_counts().to_dict())
print(f"sanity checks: {{len(sanity)}}; substitutes (shown apart, never a statement's verdict): {{len(subst)}}")
cols = ["claim_id", "statement", "paper_value", "ours", "ci_low", "ci_high", "unit", "n", "verdict", "tier", "note"]
display(readable(scores[[c for c in cols if c in scores]]))
display(Markdown("**Why each claim that is not reproduced differs** (the scorecard's explanations; docs/claims.md):"))
display(Markdown(explanations(scores)))
for compare_dir in [d for d in compare_dirs if pathlib.Path(d).resolve() != pathlib.Path(campaign_dir).resolve()]:
    from analysis.claims.side_by_side import change_counts, side_by_side, transitions
    other_df = load_campaign(compare_dir, progress=False, derived_dir=derived_dir)
    other = evaluate(apply_filters(other_df, filters), alpha=alpha, n_boot=n_boot, seed=0)
    labels = (pathlib.Path(campaign_dir).resolve().name, pathlib.Path(compare_dir).resolve().name)
    both = side_by_side(scores, other, labels)
    save_table(both, output_dir, f"{prefix}_datasets_side_by_side_{{labels[1]}}")
    display(Markdown(f"**This dataset ({{labels[0]}}) against {{labels[1]}}**, claim by claim: "
                     + ", ".join(f"{{k}} {{v}}" for k, v in change_counts(both).items() if v)))
    display(readable(transitions(both, labels)))
    moved = both[both["change"] != "same"]
    cols = ["claim_id", "statement", *(f"{{c}}_{{lab}}" for lab in labels for c in ("ours", "n", "verdict")), "change"]
    display(readable(moved[cols]))'''


ONLY = tuple(sys.argv[1:])


def notebook(name, family, default, cells):
    if ONLY and not name.startswith(ONLY):
        return
    nbgen.write(NB / name, {"family": family, "default_data": default.replace("../", "")}, cells)


notebook("09_study001_buffer_sweep.ipynb", "001", "../data/study001", [
    ("md", """# Study 001 — MPTCP vs single-path TCP over LTE and WiFi under bufferbloat

Paper 001 (`data/reference/001/README.md`): one client with an LTE path and a WiFi path to a server, bottleneck
buffers 25 000 / 50 000 / 75 000 / 116 736 bytes, single-path TCP on each path vs MPTCP (the paper: the *redundant*
scheduler), 45-s flows; throughput and delay. Ours: real Linux TCP/MPTCP in network namespaces
(`campaigns/paper001.yaml`; paths `testbed/families/001/topology.json`: LTE 6 Mbit/s / 35 ms, WiFi 4 Mbit/s / 10 ms
one-way — the paper prints no link models, so these are documented choices, and absolute numbers are not comparable
with the paper's). Throughput: iperf3 receiver goodput (Mbit/s); delay: mean one-way delay of the connection's data
segments, client capture to server capture (ms); per path: goodput at the server, one-way delay, ping RTT."""),
    ("code", params("../data/study001"), "parameters"),
    ("code", SETUP, "hide-input"),
    ("md", "## Throughput and delay against the buffer size (mean and 95 % CI over repetitions)"),
    ("code", '''conn = df[df["path"] == 1].copy()        # connection-level columns repeat on both path rows
conn["mode_sched"] = conn["mode"] + conn["mptcp_scheduler"].fillna("").map(lambda s: f" ({s})" if s else "")
thr = mean_ci(conn, ["mode_sched", "buffer_bytes"], "throughput_mbps", alpha=alpha, n_boot=n_boot)
dly = mean_ci(conn, ["mode_sched", "buffer_bytes"], "conn_owd_mean_ms", alpha=alpha, n_boot=n_boot)
save_table(thr, output_dir, "09_throughput_by_buffer")
save_table(dly, output_dir, "09_delay_by_buffer")
fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
line_ci(thr, "buffer_bytes", hue="mode_sched", ax=axes[0], xlabel="bottleneck buffer (bytes)",
        ylabel="throughput (Mbit/s)", title="throughput (iperf3 receiver)")
line_ci(dly, "buffer_bytes", hue="mode_sched", ax=axes[1], xlabel="bottleneck buffer (bytes)",
        ylabel="one-way delay (ms)", title="delay (data segments, client to server)")
fig.tight_layout()
save_figure(fig, output_dir, "09_buffer_sweep")
plt.show()
display(readable(thr))
display(readable(dly))'''),
    ("md", "## The paper's printed values (50 000 bytes) beside ours"),
    ("code", '''paper = reference.load_statements(reference.REFERENCE_DIR / "001", with_quotes=False)
p = paper[(paper["relation"] == "approx") & paper["section"].isin(["4.2.1", "4.2.2"])]
rows = []
for r in p.itertuples(index=False):
    s = thr if r.quantity == "throughput_mbps" else dly
    mode = r.ccs
    sel = s[(s["buffer_bytes"] == 50000) & (s["mode_sched"].str.startswith(mode))]
    for o in sel.itertuples(index=False):
        rows.append({"paper_id": r.id, "quantity": r.quantity, "mode": o.mode_sched, "paper": r.value,
                     "ours_mean": o.mean, "ours_ci": f"[{o.ci_low:.3g}, {o.ci_high:.3g}]", "n": o.n, "unit": r.unit})
    if sel.empty:
        rows.append({"paper_id": r.id, "quantity": r.quantity, "mode": f"{mode} (redundant)", "paper": r.value,
                     "ours_mean": float("nan"), "ours_ci": "not run", "n": 0, "unit": r.unit})
side = pd.DataFrame(rows)
save_table(side, output_dir, "09_paper_vs_ours")
display(readable(side))'''),
    ("md", """The paper's numbers come from ns-3 DCE with link models it does not print (its Table 1 lists 100 Mbit/s links);
its 1–3 Mbit/s throughputs and 3–5 ms delays cannot be compared in absolute terms with our 6 + 4 Mbit/s paths. The
*shape* claims (MPTCP above the better single path, MPTCP's delay below it, larger buffers lower throughput and raise
delay) are judged below. The redundant scheduler is not available on this kernel (no MPTCP scheduler struct_ops):
its statements are "not run" with that reason, and each has a `/default` row judged on the default scheduler's runs
instead, labelled as a substitute."""),
    ("md", "## Per path: goodput share, one-way delay and ping RTT"),
    ("code", '''per = df[df["path_goodput_mbps"] > 0].copy()
per["path"] = per["path_label"].fillna(per["path"].astype(str))
share = mean_ci(per[per["mode"] == "mptcp"], ["path", "buffer_bytes"], "path_goodput_mbps", alpha=alpha, n_boot=n_boot)
owd = mean_ci(per, ["mode", "path", "buffer_bytes"], "owd_mean_ms", alpha=alpha, n_boot=n_boot)
ping = mean_ci(df.assign(path=df["path_label"].fillna(df["path"].astype(str))), ["mode", "path", "buffer_bytes"],
               "ping_rtt_mean_ms", alpha=alpha, n_boot=n_boot)
save_table(share, output_dir, "09_mptcp_goodput_per_path")
save_table(owd, output_dir, "09_owd_per_path")
save_table(ping, output_dir, "09_ping_per_path")
fig, ax = plt.subplots(figsize=(6.5, 4))
line_ci(share, "buffer_bytes", hue="path", ax=ax, xlabel="bottleneck buffer (bytes)", ylabel="goodput (Mbit/s)",
        title="MPTCP: goodput per subflow (server)")
fig.tight_layout()
save_figure(fig, output_dir, "09_mptcp_per_path")
plt.show()
display(readable(owd))
display(readable(ping))'''),
    ("md", "## Scorecard of study 001's statements"),
    ("code", scorecard("09")),
])

notebook("10_study003_queue_sizing.ipynb", "003", "../data/study003", [
    ("md", """# Study 003 — MPTCP with switch queue sizing over asymmetric paths

Paper 003 (`data/reference/003/README.md`): client and server dual-homed over path 1 (10 Mbit/s, 2 ms) and path 2
(2 Mbit/s, 10 ms); switch queue 1000 packets (default) vs 50 packets (the paper's Open vSwitch queue sizing); four
scenarios (TCP on path 1, MPTCP, each with both queues; Table 2) and a resilience test with an 80 Mbit/s UDP flood
over path 1 during minutes 5–10 of a 15-min run. Ours: real Linux TCP/MPTCP in network namespaces
(`campaigns/paper003.yaml`; the queue is htb + pfifo on a forwarding namespace where Open vSwitch is absent, see
`queue_mechanism` above). The paper's tools are iperf3 and ping (section III.D): throughput is iperf3's receiver
goodput; latency, packet loss and jitter are ping's over path 1 (mean RTT; lost echoes; the paper's
Σ|D_i − D_{i+1}|/(n − 1) over the RTTs in sequence order), at the campaign's ping interval (`ping_interval_s`).
A second reading from the captures, the same equation over path 1's one-way data delays and the data segments lost
in the path, is shown apart. TIPHON classes with `analysis.metrics.tiphon`'s table."""),
    ("code", params("../data/study003"), "parameters"),
    ("code", SETUP, "hide-input"),
    ("md", "## Table 2: the four scenarios, paper beside ours (mean and 95 % CI)"),
    ("code", '''from analysis.metrics import tiphon

scen = df[(df["experiment"] == "scenario") & (df["path"] == 1)]
metrics = {"throughput_mbps": "throughput_mbps", "latency_ms": "ping_rtt_mean_ms", "jitter_ms": "ping_jitter_ms",
           "packet_loss_pct": "ping_loss_pct"}
print("ping interval(s), s:", ", ".join(f"{v:g}" for v in sorted(scen["ping_interval_s"].dropna().unique())) or "not recorded")
paper2 = pd.read_csv(reference.REFERENCE_DIR / "003" / "table2.csv")
rows = []
for metric, col in metrics.items():
    s = mean_ci(scen, ["mode", "queue_pkts"], col, alpha=alpha, n_boot=n_boot)
    for o in s.itertuples(index=False):
        p = paper2[(paper2["mode"] == o.mode) & (paper2["queue_pkts"] == o.queue_pkts) & (paper2["metric"] == metric)]
        rows.append({"mode": o.mode, "queue_pkts": int(o.queue_pkts), "metric": metric,
                     "paper": float(p["value"].iloc[0]) if len(p) else float("nan"), "ours_mean": o.mean,
                     "ci_low": o.ci_low, "ci_high": o.ci_high, "n": o.n})
table2 = pd.DataFrame(rows)
def _cls(r):
    f = {"latency_ms": tiphon.delay_index, "jitter_ms": tiphon.jitter_index, "packet_loss_pct": tiphon.loss_index}
    if r["metric"] not in f or pd.isna(r["ours_mean"]):
        return ""
    return tiphon.category(f[r["metric"]](r["ours_mean"]))
table2["tiphon_ours"] = table2.apply(_cls, axis=1)
save_table(table2, output_dir, "10_table2_paper_vs_ours")
display(readable(table2))'''),
    ("code", '''fig, axes = plt.subplots(1, 4, figsize=(17, 4))
for ax, (metric, col) in zip(axes, metrics.items()):
    s = mean_ci(scen, ["queue_pkts", "mode"], col, alpha=alpha, n_boot=n_boot)
    pp = paper2[paper2["metric"] == metric].rename(columns={"value": metric})
    bar_ci(s, "queue_pkts", hue="mode", ax=ax, paper=pp, paper_y=metric, xlabel="switch queue (packets)",
           ylabel=label(metric), title=f"Table 2: {label(metric).split(' (')[0]}")
fig.tight_layout()
save_figure(fig, output_dir, "10_table2")
plt.show()'''),
    ("md", """Where ours and the paper's differ, and why: the scorecard's explanations at the end of this notebook (one
source of truth with `mpcc scorecard`; docs/claims.md lists the open ones with the experiment that would decide
them). The paper does not say over which path it pinged; ours is path 1, the path an unbound ping takes (the
client's one default route; TCP's path and MPTCP's initial subflow). Path 2's ping is in the rows and in the
explanations."""),
    ("md", "### Second reading: jitter and loss of path 1's data segments in the captures (not the paper's tool)"),
    ("code", '''second = pd.concat([mean_ci(scen, ["mode", "queue_pkts"], c, alpha=alpha, n_boot=n_boot).assign(metric=c)
                    for c in ("jitter_ms", "loss_pct")])
save_table(second, output_dir, "10_capture_jitter_loss")
display(readable(second))'''),
    ("md", "## Resilience: an 80 Mbit/s UDP flood over path 1"),
    ("code", '''res = df[df["experiment"] == "resilience"]
if res.empty:
    print("no resilience runs in this campaign")
else:
    cols = ["pre_flood_goodput_mbps", "flood_goodput_mbps", "flood_loss_pct"]
    per_run = res[res["path"] == 1][["run_id", "udp_flood_start_s", "udp_flood_end_s", *cols]]
    display(readable(per_run))
    fl = pd.concat([mean_ci(res, ["path_label"], c, alpha=alpha, n_boot=n_boot).assign(metric=c)
                    for c in ("flood_ping_rtt_mean_ms", "flood_ping_jitter_ms", "flood_ping_loss_pct",
                              "flood_owd_mean_ms", "flood_jitter_ms", "flood_path_loss_pct")])
    save_table(fl, output_dir, "10_flood_per_path")
    display(readable(fl))
    fig, ax = plt.subplots(figsize=(6, 4))
    m = res[res["path"] == 1][["pre_flood_goodput_mbps", "flood_goodput_mbps"]]
    ax.bar(["before the flood", "during the flood"], m.mean().to_numpy(), yerr=m.std(ddof=1).fillna(0).to_numpy(),
           capsize=4, color=["0.75", "0.45"], edgecolor="k", lw=0.5)   # greys: no cc's colour
    ax.set_ylabel("MPTCP goodput (Mbit/s)")
    ax.set_title("resilience: goodput before vs during the flood (mean, sd)")
    fig.tight_layout()
    save_figure(fig, output_dir, "10_resilience")
    plt.show()'''),
    ("md", """## The switch's queue discipline, measured in the Debian VM (`docs/qdisc-003.md`)

Table 2's scenarios in one Debian 12 VM (this kernel has no fq_codel or netem), 60-s runs, 3 repetitions, two switch
leaves behind the same htb rate limiter: Mininet's netem leaf (a FIFO of the queue size, as our testbed) and
fq_codel. Ping over path 1 every second; mean and 95 % t interval (`analysis.qdisc_vm003`, `data/qdisc003-vm`).
Beside them, the paper's own tool chain in the same VM (`docs/mininet-003.md`, `analysis.mininet_vm003`,
`data/mininet003-vm`): Mininet 2.3.0 with Open vSwitch, Table 2's scenarios built with TCLink as Mininet builds them
(the queue then forms at the client's own interface), same runs and repetitions. The paper's values are Table 2's
(diamonds)."""),
    ("code", '''import numpy as np
from IPython.display import Markdown

from analysis import mininet_vm003, qdisc_vm003

vm_runs = qdisc_vm003.load_runs(REPO / "data" / "qdisc003-vm")
vm = qdisc_vm003.summary(vm_runs)
save_table(vm, output_dir, "10_queue_discipline_vm")
display(Markdown(qdisc_vm003.markdown(vm)))
mn = mininet_vm003.summary(mininet_vm003.load_runs(REPO / "data" / "mininet003-vm")).assign(arm="mininet")
save_table(mn, output_dir, "10_mininet_replication_vm")
display(Markdown("Mininet + Open vSwitch (the paper's tool chain), per scenario:\\n\\n" + mininet_vm003.markdown(mn)))
vm = pd.concat([vm, mn], ignore_index=True)
arms = {"netem": ("FIFO (Mininet's netem leaf)", "0.55"), "fq_codel": ("fq_codel", "0.85"),
        "mininet": ("Mininet + OVS (TCLink)", "0.3")}
scen_order = [("tcp_path1", 1000), ("tcp_path1", 50), ("mptcp", 1000), ("mptcp", 50)]
fig, axes = plt.subplots(1, 2, figsize=(13, 4.2))
for ax, (col, metric, what) in zip(axes, [("ping_rtt_mean_ms_p1", "latency_ms", "ping round-trip time over path 1 (ms)"),
                                          ("ping_jitter_ms_p1", "jitter_ms", "ping jitter over path 1 (ms)")]):
    x = np.arange(len(scen_order))
    for i, (arm, (name, colour)) in enumerate(arms.items()):
        cell = [vm[(vm["arm"] == arm) & (vm["mode"] == m) & (vm["queue_pkts"] == q)] for m, q in scen_order]
        mean = np.array([c[col].iloc[0] if len(c) else np.nan for c in cell])
        lo = np.array([c[f"{col}_lo"].iloc[0] if len(c) else np.nan for c in cell])
        hi = np.array([c[f"{col}_hi"].iloc[0] if len(c) else np.nan for c in cell])
        err = np.vstack([mean - np.maximum(lo, mean * 1e-3), hi - mean])
        ax.bar(x + (i - 1) * 0.27, mean, 0.27, yerr=err, capsize=3, color=colour, edgecolor="k", lw=0.5, label=name)
    pv = [paper2[(paper2["mode"] == m) & (paper2["queue_pkts"] == q) & (paper2["metric"] == metric)]["value"]
          for m, q in scen_order]
    ax.scatter(x, [v.iloc[0] if len(v) else np.nan for v in pv], marker="D", color="k", zorder=3, label="paper (Table 2)")
    ax.set_yscale("log")
    ax.set_xticks(x, [f"{'TCP' if m == 'tcp_path1' else 'MPTCP'}\\n{q} pkts" for m, q in scen_order])
    ax.set_xlabel("scenario: transport, switch queue (packets)")
    ax.set_ylabel(what)
    ax.set_title(what.split(" over")[0].capitalize() + " by switch queue and tool chain (VM)")
axes[1].legend(loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
fig.tight_layout()
save_figure(fig, output_dir, "10_queue_discipline_vm")
plt.show()'''),
    ("md", "## Scorecard of study 003's statements and TIPHON classes"),
    ("code", scorecard("10")),
])

SETUP_004 = SETUP.replace("({len(df)} path rows)", "({len(df)} flow rows)").replace(
    "from analysis.claims.registry import evaluate\n",
    "from analysis.claims import westwood\nfrom analysis.claims.registry import evaluate\n")

notebook("11_study004_westwood.ipynb", "004", "../data/study004", [
    ("md", """# Study 004 — TCP Westwood+ vs Westwood+e over chain topologies

Paper 004 (`data/reference/004/README.md`, ns-2 2.29.3): Westwood+ against Westwood+e, whose increase after a loss is
eq. (8)'s BIC-like binary search towards the last loss window (our reading and the α adaptation: `docs/westwood-e.md`),
over a client-server link (0.5 Mbit/s, 50 ms; Table 1), a 5-node multihop chain with varied links (Table 2), the same
chain with uniform links swept 1–10 Mbit/s at error rate 0.01 (Table 3), and a 6-node bottleneck with two TCP sources
and a 20-packet buffer (Table 4); packet error rate 0.01–0.10. Ours: real Linux TCP in network namespaces, both CCs as
BPF struct_ops (`testbed/cc`), the topologies and every unprinted choice in `testbed/families/004/*.json` and
`docs/families.md` ("Study 004"). Received bytes: IP bytes of data packets reaching the receiver for the first time
(ns-2 counts whole packets); delay: mean one-way delay of every data packet of the run (both flows of the
bottleneck), from where it leaves its first link's queue to the receiver when the runs captured that (the paper's
definition, ns-2's: `docs/ns2-004.md`), else from the sender's capture (ms; the paper prints seconds); cwnd from `ss`
on the sender (packets). The paper's run length is not printed, so absolute
received bytes are compared only as Westwood+e's gain over Westwood+ (%)."""),
    ("code", params("../data/study004"), "parameters"),
    ("code", SETUP_004, "hide-input"),
    ("md", "## Received bytes and delay per table: Westwood+e's gain over Westwood+, paper beside ours"),
    ("code", '''TABLES = {"client_server": ("1", "error_rate"), "multihop_varied": ("2", "error_rate"),
          "multihop_uniform": ("3", "bandwidth_mbit"), "bottleneck": ("4", "error_rate")}
runs1 = df.drop_duplicates("run_id")        # run-level columns (total_received_bytes) repeat on each flow row
# the claims' delay (analysis.claims.westwood.run_table): from the first link's queue when every run has it
DELAY = "run_delay_from_dequeue_mean_ms" if westwood.delays_from_dequeue(df) else "run_delay_mean_ms"
print("delay:", "from each packet's dequeue at its first link (the paper's definition)" if DELAY.startswith("run_delay_from")
      else "from the sender's capture (these runs have no first-link capture)")
rows = []
for exp, (tab, level) in TABLES.items():
    paper = pd.read_csv(reference.REFERENCE_DIR / "004" / f"table{tab}.csv")
    ours = runs1[runs1["experiment"] == exp]
    for lv, g in ours.groupby(level):
        m = g.groupby("cc")["total_received_bytes"].mean()
        d = g.groupby("cc")[DELAY].mean()
        p = paper[paper[level].round(6) == round(float(lv), 6)]
        pv = p.set_index(["cc", "metric"])["value"]
        def _p(cc, metric):
            return float(pv.get((cc, metric), float("nan")))
        rows.append({"table": tab, "experiment": exp, "level_name": level, "level": lv, "n_reps": int(g.groupby("cc").size().min()),
                     "ours_gain_pct": 100 * (m.get("westwood_e", float("nan")) / m.get("westwood", float("nan")) - 1),
                     "paper_gain_pct": 100 * (_p("westwood_e", "received_bytes") / _p("westwood", "received_bytes") - 1),
                     "ours_delay_ms_westwood": d.get("westwood", float("nan")),
                     "ours_delay_ms_westwood_e": d.get("westwood_e", float("nan")),
                     "paper_delay_ms_westwood": 1000 * _p("westwood", "delay_ms"),
                     "paper_delay_ms_westwood_e": 1000 * _p("westwood_e", "delay_ms")})
side = pd.DataFrame(rows)
save_table(side, output_dir, "11_paper_vs_ours")
display(readable(side))'''),
    ("code", '''fig, axes = plt.subplots(2, 4, figsize=(19, 8))
for i, (exp, (tab, level)) in enumerate(TABLES.items()):
    sub = df.drop_duplicates("run_id")
    sub = sub[sub["experiment"] == exp]
    paper = pd.read_csv(reference.REFERENCE_DIR / "004" / f"table{tab}.csv")
    dly = mean_ci(sub, ["cc", level], DELAY, alpha=alpha, n_boot=n_boot)
    pd_ = paper[paper["metric"] == "delay_ms"].assign(delay_ms=lambda t: 1000 * t["value"])
    xl = "error rate" if level == "error_rate" else "link rate (Mbit/s)"
    line_ci(dly, level, hue="cc", ax=axes[0, i], paper=pd_, paper_y="delay_ms", xlabel=xl,
            ylabel="one-way delay (ms)", title=f"Table {tab}: {exp.replace('_', ' ')} — delay")
    gain = side[side["experiment"] == exp]
    axes[1, i].plot(gain["level"], gain["ours_gain_pct"], "o-", color="k", label="ours (mean of runs)")
    axes[1, i].plot(gain["level"], gain["paper_gain_pct"], "D", color="k", mfc="none", label="paper (its table)")
    axes[1, i].axhline(0, color="0.5", lw=0.8)
    axes[1, i].set(xlabel=xl, ylabel="received bytes: W+e over W+ (%)", title=f"Table {tab}: {exp.replace('_', ' ')} — gain")
    legend_outside(axes[1, i])
fig.tight_layout()
save_figure(fig, output_dir, "11_tables")
plt.show()'''),
    ("md", """The paper's absolute delays include ns-2's 592-byte packet times on its links; ours use the same packet size
(MTU 592) and link rates, so its delays are comparable in ms. Its received bytes are per simulation of unprinted
length; only the relative gain is compared."""),
    ("md", "## Congestion window (ss on the sender) and the bottleneck's fairness"),
    ("code", '''cw = pd.concat([mean_ci(df, ["experiment", "cc"], c, alpha=alpha, n_boot=n_boot).assign(metric=c)
                for c in ("cwnd_max_pkts", "cwnd_mean_pkts")])
save_table(cw, output_dir, "11_cwnd")
display(readable(cw))
bn = df[df["experiment"] == "bottleneck"].drop_duplicates("run_id")
if bn.empty:
    print("no bottleneck runs in this campaign")
else:
    j = mean_ci(bn, ["cc", "error_rate"], "jain_index", alpha=alpha, n_boot=n_boot)
    save_table(j, output_dir, "11_bottleneck_jain")
    fig, ax = plt.subplots(figsize=(6.5, 4))
    line_ci(j, "error_rate", hue="cc", ax=ax, xlabel="error rate", ylabel="Jain's index (two flows)",
            title="bottleneck: fairness between the two sources")
    fig.tight_layout()
    save_figure(fig, output_dir, "11_bottleneck_jain")
    plt.show()'''),
    ("md", """## The two link models side by side (`analysis/link_model004.py`)
The paper protocol recorded with htb links (`data/study004-paper-htb`) and with ns-2's store-and-forward links (the
study's recording of its paper protocol), configuration by configuration: each arm's mean over its runs and
store-and-forward minus htb with a Welch 95 % interval; for the delay also what a store-and-forward path adds to an idle
packet (tx_ms). Runs touched by the kernel defect of the BPF ports (`docs/cc-guard.md`) are left out."""),
    ("code", '''from analysis import link_model004
arms = link_model004.load()
if arms is None:
    print("needs both arms: data/study004-paper-htb and the complete store-and-forward recording (data/study004 "
          "or data/study004-paper; link_model004.load(complete_only=False) reads a partial one)")
else:
    print(arms.groupby("link_model").agg(runs=("run_id", "size"), kernel_defect=("kernel_defect", "sum")))
    lm_eff = link_model004.effects(arms, alpha=alpha)
    save_table(lm_eff, output_dir, "11_link_models")
    display(readable(link_model004.summary(lm_eff)))'''),
    ("md", "## Scorecard of study 004's statements"),
    ("code", scorecard("11")),
])

SETUP_002 = (SETUP.replace("({len(df)} path rows)", "({len(df)} client rows)")
             .replace("queue {sorted(df['queue_mechanism'].dropna().unique())}",
                      "background {sorted(df['background_tool'].dropna().unique())}"))

notebook("12_study002_pcc_streaming.ipynb", "002", "../data/study002", [
    ("md", """# Study 002 — PCC Vivace vs CUBIC video streaming under UDP background traffic

Paper 002 (`data/reference/002/README.md`): a server streams a video with VLC to three clients through a switch on
1 Gbit/s UTP; D-ITG sends UDP background traffic of 10, 20, 30 MB/s (tests 2–4) and 90 % of capacity (test 5, 10 s);
TCP CUBIC (RTSP) vs PCC Vivace (the PCC-Kernel module, HTTP); throughput (kbit/s), delay (ms) and packet loss (%) per
client from Wireshark captures. Ours: real Linux TCP in network namespaces, PCC Vivace as the BPF congestion control
`pcc_vivace` (`docs/pcc-vivace.md`), a 100 Mbit/s shared link with the background at the paper's **fractions of
capacity** (8/16/24/90 Mbit/s; the video keeps its real ≈ 3.6 Mbit/s, so it takes ≈ 11 % of our link against ≈ 1 % of
the paper's), ffmpeg as the HTTP streaming server and curl as the clients for both CCs (`docs/families.md`,
"Study 002"). Delay: one-way, server capture → client capture; loss: data packets the server sent that never reached
the client; playback stalls from the clients' received bytes against the video's bitrate."""),
    ("code", params("../data/study002"), "parameters"),
    ("code", SETUP_002, "hide-input"),
    ("md", "## Tables 5, 7 and 9: per-test means over the three clients, paper beside ours"),
    ("code", '''REF = reference.REFERENCE_DIR / "002"
paper = pd.concat([pd.read_csv(REF / f"table{t}.csv") for t in (5, 7, 9)])
cols = {"throughput_kbps": "throughput_kbps", "delay_ms": "delay_mean_ms", "packet_loss_pct": "loss_pct"}
per_run = df.groupby(["run_id", "experiment", "cc"], as_index=False)[list(cols.values())].mean()
per_run["test"] = per_run["experiment"].str.replace("test", "").astype(int)
rows = []
for metric, col in cols.items():
    s = mean_ci(per_run, ["test", "cc"], col, alpha=alpha, n_boot=n_boot)
    for o in s.itertuples(index=False):
        p = paper[(paper["metric"] == metric) & (paper["test"] == o.test) & (paper["cc"] == o.cc)]
        rows.append({"metric": metric, "test": int(o.test), "cc": o.cc,
                     "paper": float(p["value"].iloc[0]) if len(p) and pd.notna(p["value"].iloc[0]) else float("nan"),
                     "ours_mean": o.mean, "ci_low": o.ci_low, "ci_high": o.ci_high, "n_runs": o.n})
side = pd.DataFrame(rows)
save_table(side, output_dir, "12_paper_vs_ours")
display(readable(side))'''),
    ("code", '''fig, axes = plt.subplots(1, 3, figsize=(17, 4.2))
for ax, (metric, col) in zip(axes, cols.items()):
    s = mean_ci(per_run, ["test", "cc"], col, alpha=alpha, n_boot=n_boot)
    pp = paper[paper["metric"] == metric].rename(columns={"value": metric})
    bar_ci(s, "test", hue="cc", ax=ax, paper=pp, paper_y=metric, xlabel="test (background 0/8/16/24/90 % of capacity)",
           ylabel=label(metric), title=f"Tables 5, 7, 9: {label(metric).split(' (')[0]} per client")
fig.tight_layout()
save_figure(fig, output_dir, "12_tests")
plt.show()'''),
    ("md", """The paper's 10000 kbit/s cells (TCP, client 1, tests 2–4) lift its TCP averages with background; a client of a
3.6 Mbit/s video cannot receive 10 Mbit/s on average unless something else is counted. Our throughput per client is
bounded by the video's bitrate; comparisons of absolute throughput are meaningful per client only."""),
    ("md", """## The paper's own server: the VLC replication (`docs/vlc002.md`, `data/vlc002`)
The paper streamed with VLC: CUBIC over RTSP, PCC over HTTP (its Table 2). VLC's RTSP server sends media only as RTP
over UDP (its source: "interleaved" is not implemented), so the paper's CUBIC arm was a UDP stream. The replication
serves one 1080p video with VLC 3.0 on this testbed at tests 1–4, each cc as the paper streamed it, and CUBIC over
HTTP as a control; "inter_packet_ms" is the mean time between the stream's packets at the client, the paper's likely
"delay". Loss intervals are exact (Clopper-Pearson) over the pooled packets."""),
    ("code", '''from analysis import vlc002
rep = vlc002.load()
if rep is None:
    print("the VLC replication (data/vlc002) is not in this repository")
else:
    side_vlc = vlc002.beside_paper(vlc002.summary(rep))
    save_table(side_vlc, output_dir, "12_vlc_replication")
    display(readable(side_vlc))'''),
    ("md", "## What a viewer sees: start-up delay and playback stalls"),
    ("code", '''pb = (df.groupby(["experiment", "cc"])
      .agg(client_streams=("run_id", "size"), startup_delay_mean_s=("startup_delay_s", "mean"),
           startup_delay_max_s=("startup_delay_s", "max"),
           streams_with_stall=("stall_count", lambda s: int((s > 0).sum())), stall_time_total_s=("stall_time_s", "sum"))
      .reset_index())
save_table(pb, output_dir, "12_playback")
stalled = int((df["stall_count"] > 0).sum())
start = df["startup_delay_s"].dropna()
print(f"{stalled} of {len(df)} client streams stalled"
      + (" (the player's buffer never ran dry in any test, with either cc)" if stalled == 0 else "")
      + (f"; start-up delay {start.min():.2f}-{start.max():.2f} s: the servers send in real time (ffmpeg -re), so "
         f"filling the player's 2-s start buffer takes about 2 s whatever the cc" if len(start) else ""))
display(readable(pb))
bg = df.drop_duplicates("run_id").groupby(["experiment", "cc"])[["background_sent_mbps", "background_received_mbps",
                                                                   "jain_index"]].mean()
display(readable(bg))'''),
    ("md", "## Scorecard of study 002's statements"),
    ("code", scorecard("12")),
])
