"""Write notebooks/09_study001_buffer_sweep.ipynb and notebooks/10_study003_queue_sizing.ipynb (the study 001 / 003
notebooks). Run once when their cells change; `make notebooks-refresh` then stores their outputs."""
from pathlib import Path

import nbformat as nbf

NB = Path(__file__).resolve().parents[1] / "notebooks"

SETUP = '''import sys
import pathlib

REPO = pathlib.Path.cwd().resolve().parent  # notebooks/ -> repository root (works without `pip install -e .`)
if (REPO / "analysis" / "__init__.py").is_file() and str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import warnings

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import display

from analysis import reference
from analysis.claims.registry import evaluate
from analysis.dataset import load_campaign
from analysis.figures import line_ci, bar_ci, mean_ci, save_figure, save_table, set_style
from analysis.figures.coverage import apply_filters

warnings.filterwarnings("ignore", category=FutureWarning)  # library deprecation notices are not results
warnings.filterwarnings("ignore", category=DeprecationWarning)
set_style()
pd.set_option("display.precision", 3)
pd.set_option("display.max_columns", 40)
pd.set_option("display.max_rows", 300)
pd.set_option("display.max_colwidth", 110)
pd.set_option("display.width", 200)
df = load_campaign(campaign_dir, progress=False, derived_dir=derived_dir)
runs = df.attrs["runs"]
df = apply_filters(df, filters)
df.attrs["runs"] = runs
print(f"campaign {df['campaign'].iloc[0] if len(df) else '(no complete runs)'}: {df['run_id'].nunique()} complete "
      f"runs ({len(df)} path rows), {int((runs['status'] == 'skipped').sum())} skipped; "
      f"kernel {sorted(df['kernel'].dropna().unique())}; queue {sorted(df['queue_mechanism'].dropna().unique())}")
for r in runs.query("status == 'skipped'")["reason"].unique():
    print("not measured:", r)'''


def params(default):
    return f'''# Parameters (papermill overrides these; paths are relative to notebooks/)
campaign_dir = "{default}"   # a study-{default[-3:]} campaign directory (runs/<run_id>/...)
derived_dir = None                  # None: per-run cache in RUN_DIR/derived/; a directory for read-only campaigns
output_dir = None                   # None: write no files; else figures/ and tables/ go under it
alpha = 0.05                        # 1 - confidence level of the CIs
n_boot = 9999                       # bootstrap resamples (BCa CI of the mean over repetitions)
filters = {{}}                        # column -> value or list of values, e.g. {{"mode": ["tcp_lte", "mptcp"]}}'''


def scorecard(prefix):
    return f'''scores = evaluate(df, alpha=alpha, n_boot=n_boot, seed=0)
save_table(scores, output_dir, "{prefix}_scorecard")
print(scores["verdict"].value_counts().to_string())
display(scores[["claim_id", "statement", "paper_value", "ours", "ci_low", "ci_high", "n", "verdict", "note"]])'''


def notebook(name, family, default, cells):
    nb = nbf.v4.new_notebook()
    nb.metadata.update({"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                        "language_info": {"name": "python"},
                        "mpcc": {"family": family, "default_data": default.replace("../", "")}})
    out = []
    for kind, src, *tags in cells:
        c = nbf.v4.new_markdown_cell(src) if kind == "md" else nbf.v4.new_code_cell(src)
        if tags:
            c.metadata["tags"] = tags
        out.append(c)
    nb.cells = out
    nbf.write(nb, str(NB / name))


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
    ("code", SETUP),
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
display(thr.round(3))
display(dly.round(1))'''),
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
display(side)'''),
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
display(owd.round(1))
display(ping.round(1))'''),
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
`queue_mechanism` above). Throughput: iperf3 receiver goodput; latency: ping RTT over path 1; jitter: the paper's
Σ|D_i − D_{i+1}|/(n − 1) over path 1's one-way data delays (client capture to server capture); packet loss: path 1's
data segments lost in the path; TIPHON classes with `analysis.metrics.tiphon`'s table."""),
    ("code", params("../data/study003"), "parameters"),
    ("code", SETUP),
    ("md", "## Table 2: the four scenarios, paper beside ours (mean and 95 % CI)"),
    ("code", '''from analysis.metrics import tiphon

scen = df[(df["experiment"] == "scenario") & (df["path"] == 1)]
metrics = {"throughput_mbps": "throughput_mbps", "latency_ms": "ping_rtt_mean_ms", "jitter_ms": "jitter_ms",
           "packet_loss_pct": "loss_pct"}
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
display(table2.round(3))'''),
    ("code", '''fig, axes = plt.subplots(1, 4, figsize=(17, 4))
for ax, (metric, col) in zip(axes, metrics.items()):
    s = mean_ci(scen, ["queue_pkts", "mode"], col, alpha=alpha, n_boot=n_boot)
    pp = paper2[paper2["metric"] == metric].rename(columns={"value": metric})
    bar_ci(s, "queue_pkts", hue="mode", ax=ax, paper=pp, paper_y=metric, xlabel="switch queue (packets)",
           ylabel=metric, title=metric)
fig.tight_layout()
save_figure(fig, output_dir, "10_table2")
plt.show()'''),
    ("md", """Known differences: the paper's TCP baseline (12.98 Mbit/s) exceeds its own 10 Mbit/s path, and its 13–19 %
packet loss is far above what a 1000- or 50-packet FIFO drops for one TCP flow here; both are recorded as printed
(`data/reference/003/README.md`). The paper does not say where its ping and jitter were measured; ours are path 1's."""),
    ("md", "## Resilience: an 80 Mbit/s UDP flood over path 1"),
    ("code", '''res = df[df["experiment"] == "resilience"]
if res.empty:
    print("no resilience runs in this campaign")
else:
    cols = ["pre_flood_goodput_mbps", "flood_goodput_mbps", "flood_loss_pct"]
    per_run = res[res["path"] == 1][["run_id", "udp_flood_start_s", "udp_flood_end_s", *cols]]
    display(per_run.round(3))
    fl = pd.concat([mean_ci(res, ["path_label"], c, alpha=alpha, n_boot=n_boot).assign(metric=c)
                    for c in ("flood_owd_mean_ms", "flood_jitter_ms", "flood_path_loss_pct", "flood_ping_rtt_mean_ms")])
    save_table(fl, output_dir, "10_flood_per_path")
    display(fl.round(3))
    fig, ax = plt.subplots(figsize=(6, 4))
    m = res[res["path"] == 1][["pre_flood_goodput_mbps", "flood_goodput_mbps"]]
    ax.bar(["before the flood", "during the flood"], m.mean().to_numpy(), yerr=m.std(ddof=1).fillna(0).to_numpy(),
           capsize=4, color=["#4c72b0", "#dd8452"])
    ax.set_ylabel("MPTCP goodput (Mbit/s)")
    ax.set_title("resilience: goodput before vs during the flood (mean, sd)")
    fig.tight_layout()
    save_figure(fig, output_dir, "10_resilience")
    plt.show()'''),
    ("md", "## Scorecard of study 003's statements and TIPHON classes"),
    ("code", scorecard("10")),
])
