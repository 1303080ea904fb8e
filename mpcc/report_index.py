"""The reproduction report's front page, ``OUT/index.html`` of ``mpcc reproduce``: one section per study (000-004)
with the paper's title, what was reproduced on which testbed and dataset (runs, run length, repetitions), the
headline verdict counts and the explanation kinds of what differs (read from the scorecard table the study's
notebook wrote, ``tables/NN_scorecard.csv``: ``analysis.claims.evaluate`` with the report's alpha and resamples, seed
0, as ``mpcc scorecard`` computes it), the key figures with a caption saying what to look at, and links to each
notebook's HTML and tables. Readable without opening a notebook.
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path


@dataclass(frozen=True)
class Study:
    sid: str
    title: str                  # as printed; an English rendering in parentheses where the paper is Indonesian
    question: str               # what the study asks, one sentence
    testbed: str                # how our testbed reproduces it
    notebooks: tuple            # notebook file-name prefixes ("01", ...)
    scorecard: str              # tables/<name>.csv written by the study's scorecard notebook
    figures: dict = field(default_factory=dict)   # figure stem -> caption (what the reader should see)


STUDIES = (
    Study("000", "Analisis Kinerja Algoritme TCP Congestion Control Berdasarkan Single dan Multiple Flow pada "
          "Multi-path Routing (Performance Analysis of TCP Congestion Control Algorithms Based on Single and Multiple "
          "Flow under Multi-path Routing)",
          "How Reno, BIC, CUBIC and BBR fare over two equal-cost paths with per-packet round-robin: goodput, SACK "
          "blocks, fairness between flows, and the effect of link delay and random loss.",
          "8 network namespaces (src1, src2, router1, switch1, switch2, router2, dst1, dst2) with TBF 10 Mbit/s and "
          "a 100-packet buffer per switch; round-robin by nftables numgen (the kernel has no TEQL); delay by a "
          "userspace NFQUEUE shim and loss by iptables (no netem); BIC as a BPF port (Linux 6.1's; notebook 15 "
          "runs the paper's 4.15 one beside it); iperf3 flows, tcpdump at router1.",
          ("01", "02", "03", "04", "05", "06", "07", "08", "13", "14", "15"), "08_scorecard",
          {"01_table3": "Table 3: goodput and SACK blocks per CC on one path and on two. Compare each bar (ours, 95 % "
                        "CI) with the paper's diamond; multipath should roughly double a CC's goodput.",
           "02_fig3_fig4_link_delay": "Figures 3-4: goodput and RTT against the link delay (10-100 ms). Look at how "
                                      "fast each CC's goodput falls as the delay grows, beside the paper's curves.",
           "03_fig5_fig6_loss_rate": "Figures 5-6: goodput and retransmissions against random loss (0-10 %). The "
                                     "loss-based CCs should collapse with loss; BBR should hold up longer.",
           "04_table4": "Table 4: two TCP flows sharing the paths, Jain's index J = (sum x)^2 / (n sum x^2) per CC "
                        "pair, ours beside the paper's.",
           "05_fig7_fig8_udp": "Figures 7-8: a TCP flow against UDP CBR background of growing rate: the TCP "
                               "goodput left and the fairness between them.",
           "06_fig2_cwnd_vs_bdp": "Figure 2: congestion window over time against the path's bandwidth-delay "
                                  "product; a window far above the BDP is a standing queue.",
           "08_scorecard": "Every quantitative claim of the paper: reproduced, not reproduced, inconclusive, not "
                           "comparable or not run, with the explanation kind of each difference.",
           "13_rtt_gap": "The fidelity ablation (notebook 13, its own dataset): BBR's RTT advantage under each switch "
                         "queue model. How far does the paper's NetEm semantics move the gap toward the paper's "
                         "26-58 ms band?",
           "13_effects": "The fidelity ablation: every quantity behind a claim, the change each faithful queue model "
                         "makes against the FIFO after the delay line (95 % CI); an interval that misses 0 is a move "
                         "beyond run-to-run noise.",
           "14_drops": "The loss-recovery ablation (notebook 14, its own dataset): the goodput lost to 1 % and 10 % "
                       "random loss with RACK's adaptive reordering window (this kernel's default) and with the "
                       "static window of the paper's Linux 4.15; the grey band is the paper's value. Does the window "
                       "move a drop into the band?",
           "15_drops": "Study 000 with the paper's BIC (notebook 15, its own dataset): the goodput BIC loses to 1 % "
                       "and 10 % random loss with Linux 6.1's BIC (every other recording here) and with Linux 4.15's, "
                       "the paper's; the grey band is the paper's value. How far does BIC's own code move the drop?",
           "15_jain": "Study 000 with the paper's BIC: Jain's index of Table 4's three pairs with BIC, with each "
                      "kernel's BIC, beside the paper's diamond."}),
    Study("001", "Analisis Performansi Metode Redundant Multipath TCP pada Bufferbloat Channel di Jaringan LTE/Wi-Fi "
          "(performance analysis of the redundant Multipath TCP method on a bufferbloat channel in LTE/Wi-Fi networks)",
          "Whether MPTCP over an LTE-like and a Wi-Fi-like path beats single-path TCP as the bottleneck buffer grows.",
          "A client dual-homed to a server over two shaped paths (netns); MPTCP with the kernel's default scheduler "
          "(the redundant scheduler is not in this kernel: its rows are substitutes, shown apart).",
          ("09",), "09_scorecard",
          {"09_buffer_sweep": "Throughput and delay against the buffer size, MPTCP and TCP on each path: does "
                              "MPTCP keep its throughput while the delay grows with the buffer?",
           "09_mptcp_per_path": "How MPTCP splits its goodput between the two paths, and each path's one-way delay."}),
    Study("002", "Analisis Unjuk Kerja Performance-oriented Congestion Control (PCC) Menggunakan Video Streaming "
          "(performance analysis of PCC using video streaming)",
          "Whether PCC Vivace streams video better than CUBIC over a shared link with UDP background traffic.",
          "A video server and three clients over a shared 100 Mbit/s link (netns), ffmpeg-made video fetched with "
          "curl, D-ITG UDP background; PCC Vivace as a BPF congestion control (the port of PCC-Kernel's vivace module, "
          "docs/pcc-vivace.md; notebook 12 names the controller each dataset ran).",
          ("12",), "12_scorecard",
          {"12_tests": "Per test (1-5): throughput, loss and delay of PCC Vivace and CUBIC beside the paper's values."}),
    Study("003", "Evaluasi Kinerja Multipath TCP dengan Manajemen Antrian Open vSwitch pada Server dengan Asimetri "
          "Bandwidth (performance evaluation of Multipath TCP with Open vSwitch queue management on a server with "
          "bandwidth asymmetry)",
          "How MPTCP performs over two asymmetric paths as the queue size changes, and under a UDP flood.",
          "A dual-homed client and server over asymmetric paths (netns), pfifo queues of the paper's sizes, an "
          "iperf3 UDP flood on one path.",
          ("10",), "10_scorecard",
          {"10_table2": "Table 2: throughput, delay, jitter and loss per queue size, ours beside the paper's.",
           "10_resilience": "The UDP flood: what each path carries while one of them is flooded."}),
    Study("004", "Perbaikan Tcp Westwood + (Improvement of TCP Westwood+)",
          "Whether Westwood+e (a BIC-like increase, equation 8) improves on Westwood+ over chains of links with "
          "errors.",
          "The paper's four chain topologies as netns chains with shaped links and error models; Westwood+ and "
          "Westwood+e as BPF congestion controls (the kernel has no tcp_westwood).",
          ("11",), "11_scorecard",
          {"11_tables": "The paper's tables: throughput of Westwood+ and Westwood+e per topology and error rate, "
                        "ours beside the paper's.",
           "11_bottleneck_jain": "Fairness (Jain's index) of flows sharing the bottleneck."}),
)


def verdict_summary(scorecard_csv: Path) -> dict | None:
    """Headline verdict counts (``analysis.claims.core.headline``: behavioural claims on the paper's own mechanisms),
    sanity and substitute counts, and the explanation kinds of the headline claims, from a notebook's scorecard table;
    None when the table is missing."""
    import pandas as pd

    from analysis.claims.core import VERDICTS, headline
    if not scorecard_csv.is_file():
        return None
    res = pd.read_csv(scorecard_csv)
    head = headline(res)
    kinds = head["explanation_kind"].dropna().value_counts() if "explanation_kind" in head else pd.Series(dtype=int)
    return {"verdicts": {v: int((head["verdict"] == v).sum()) for v in VERDICTS},
            "headline_claims": int(len(head)),
            "sanity": int((res["tier"] == "sanity").sum()),
            "substitutes": int(res["substitute_for"].notna().sum()),
            "explanation_kinds": {str(k): int(v) for k, v in kinds.items()}}


def dataset_summary(campaign_dir: Path, derived_dir=None) -> dict:
    """Runs (complete, skipped, incomplete), run lengths (s) and repetitions of a campaign or bundle."""
    from analysis.dataset import load_campaign
    df = load_campaign(campaign_dir, progress=False, derived_dir=derived_dir)
    runs = df.attrs["runs"]
    st = runs["status"].astype(str).value_counts()
    reps = sorted({int(r) for r in runs["rep"].dropna()}) if "rep" in runs else []
    return {"complete": int(st.get("complete", 0)), "skipped": int(st.get("skipped", 0)),
            "incomplete": int(st.get("incomplete", 0)),
            "duration_s": sorted({float(x) for x in df["duration_s"].dropna()}) if "duration_s" in df else [],
            "reps": reps[-1] if reps else None}


def _rel(path: str, repo: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(repo))
    except ValueError:
        return str(path)


def _counts_line(v: dict) -> str:
    return ", ".join(f"{n} {k}" for k, n in v["verdicts"].items())


def write(out: Path, results: list[dict], repo: Path, *, alpha: float, n_boot: int, derived_dir=None,
          environment: dict | None = None) -> dict:
    """Write ``out/index.html`` from ``mpcc reproduce``'s per-notebook results (notebook, status, error, html,
    family, campaign_dir). Returns {study id: {"data", "verdicts"...}} of what the page shows."""
    from analysis.claims.core import EXPLANATION_KINDS
    by_nb = {r["notebook"][:2]: r for r in results}
    tables = sorted((out / "tables").glob("*.csv")) if (out / "tables").is_dir() else []
    shown = {}
    page = ["<!doctype html><html><head><meta charset='utf-8'><title>multipath-cc-lab: reproduction report</title>",
            "<style>body{font-family:sans-serif;max-width:1100px;margin:auto;padding:0 1em;line-height:1.4}"
            "figure{margin:1em 0}figcaption{font-size:.95em;color:#333}img{max-width:100%}"
            "table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:3px 8px;text-align:left}"
            ".failed{color:#a00}</style></head><body>",
            "<h1>multipath-cc-lab: reproduction report</h1>",
            f"<p>Five published studies rebuilt on our testbed; every number below comes from our captures or from "
            f"the papers, labelled as such. Confidence level {100 * (1 - alpha):g} %, {n_boot} bootstrap resamples. "
            f"Written {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}.</p>",
            "<p>Verdicts count the headline claims: statements about the congestion controls, judged on the paper's "
            "own mechanisms. Sanity checks (what the testbed guarantees by construction) and substitutes (a "
            "statement judged on another mechanism) are counted apart. docs/claims.md defines the verdicts and the "
            "explanation kinds; every verdict but \"reproduced\" carries one of these:</p>", "<dl>"]
    page += [f"<dt><code>{html.escape(k)}</code></dt><dd>{html.escape(v)}</dd>" for k, v in EXPLANATION_KINDS.items()]
    page += ["</dl>", "<ul>"]
    page += [f'<li><a href="#study{s.sid}">Study {s.sid}</a>: {html.escape(s.title)}</li>' for s in STUDIES]
    page.append("</ul>")
    for s in STUDIES:
        recs = [by_nb[p] for p in s.notebooks if p in by_nb]
        page.append(f'<h2 id="study{s.sid}">Study {s.sid}: {html.escape(s.title)}</h2>')
        page.append(f"<p><b>Question.</b> {html.escape(s.question)}</p>")
        page.append(f"<p><b>Our testbed.</b> {html.escape(s.testbed)}</p>")
        if not recs:
            page.append("<p>Not executed in this report (no notebook of this study was selected).</p>")
            continue
        data = recs[0].get("campaign_dir", "")
        try:
            ds = dataset_summary(Path(data), derived_dir)
            dur = ", ".join(f"{x:g}" for x in ds["duration_s"]) or "-"
            page.append(f"<p><b>Dataset.</b> <code>{html.escape(_rel(data, repo))}</code>: {ds['complete']} complete "
                        f"runs, {ds['skipped']} skipped, {ds['incomplete']} incomplete; run length {dur} s; "
                        f"up to {ds['reps']} repetitions per configuration.</p>")
        except Exception as exc:  # noqa: BLE001 - the page reports what it could not read
            ds = None
            page.append(f"<p><b>Dataset.</b> <code>{html.escape(_rel(data, repo))}</code> (could not be read: "
                        f"{html.escape(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)})</p>")
        try:
            vs = verdict_summary(out / "tables" / f"{s.scorecard}.csv")
        except Exception:  # noqa: BLE001 - an unreadable table is reported like a missing one
            vs = None
        if vs is None:
            page.append("<p class='failed'><b>Verdicts.</b> no scorecard table (its notebook failed; see below).</p>")
        else:
            kinds = ", ".join(f"{n} {k}" for k, n in vs["explanation_kinds"].items()) or "none"
            page.append(f"<p><b>Verdicts</b> ({vs['headline_claims']} headline claims): {_counts_line(vs)}. "
                        f"Explanations of what differs: {html.escape(kinds)}. Also {vs['sanity']} sanity checks and "
                        f"{vs['substitutes']} substitutes.</p>")
        shown[s.sid] = {"data": _rel(data, repo), "dataset": ds, "scorecard": vs}
        for stem, caption in s.figures.items():
            f = out / "figures" / f"{stem}.png"
            if f.is_file():
                page.append(f'<figure><img src="figures/{f.name}" alt="{html.escape(caption)}">'
                            f"<figcaption>{html.escape(caption)} <i>(our measurements; the paper's values where "
                            f"marked)</i></figcaption></figure>")
        page.append("<table><tr><th>notebook</th><th>data</th><th>status</th><th>tables</th></tr>")
        for r in recs:
            name = html.escape(r["notebook"])
            link = f'<a href="{html.escape(r["html"])}">{name}</a>' if r.get("html") else name
            status = ("ok" if r["status"] == "ok" else
                      f"<span class='failed'>failed: {html.escape(r.get('error', ''))}</span>")
            own = [t for t in tables if t.name.startswith(r["notebook"][:3])]
            tl = ", ".join(f'<a href="tables/{t.name}">{html.escape(t.stem)}</a>' for t in own) or "-"
            nd = html.escape(_rel(r.get("campaign_dir", ""), repo)) if r.get("campaign_dir") else "-"
            page.append(f"<tr><td>{link}</td><td><code>{nd}</code></td><td>{status}</td><td>{tl}</td></tr>")
        page.append("</table>")
    if environment is not None:
        from mpcc.report_env import describe
        page.append("<h2>Analysis environment</h2>")
        page.append(f"<p>{html.escape(describe(environment))}.</p>")
    page.append("</body></html>")
    (out / "index.html").write_text("\n".join(page), encoding="utf-8")
    return shown
