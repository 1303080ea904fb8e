"""PCC-Kernel's vivace module (congestion control "pcc") vs its BPF port ``pcc_vivace``, run one after the other on
the same path in the Debian VM (``testbed/cc/validate-vm.sh --ccs pcc_vivace --rtt-ms 30 --losses "0 1"
--flows "1 2"``; issue 30, docs/pcc-vivace.md).

Input: a results directory as the validation writes it (or its bundled copy, ``data/pcc-validation``)::

    DIR/meta.json, DIR/setup.json       host / guest side (optional here)
    DIR/runs/<run>/run.json             rep, cc ("pcc_vivace"), implementation ("kernel" = the module | "bpf" = the
                                        port), cc_name (what iperf3 set: "pcc" | "pcc_vivace"), loss_pct, flows,
                                        ack_path_delay_ms, the guest's own checks (``check``)
    DIR/runs/<run>/iperf3.json          iperf3 client --json with ``-P flows`` (also .xz / .gz)
    DIR/runs/<run>/ss.txt               ``ss -tin`` blocks, each after ``# ts=<epoch s>`` (also .xz / .gz)

Per run (:func:`load_run`), over the data connections (those with at least ``CC_CHECK_MIN_ACKED`` bytes acked;
iperf3's control connection acks a few hundred bytes):

* goodput_mbps: Mbit/s the receiver got, all flows (iperf3 ``end.sum_received.bits_per_second`` / 1e6);
  jain: Jain's index J = (sum x)^2 / (n sum x^2) of the per-flow receiver rates (``end.streams[].receiver``),
  NaN for one flow;
* rtt_ms: median of the smoothed RTT samples (ss ``rtt:<srtt>/<rttvar>``, ms) of the data connections, pooled;
  base_rtt_ms: the smallest ``minrtt`` any of them saw; rtt_inflation_ms = rtt_ms - base_rtt_ms (the queueing delay
  the controller keeps, ms); iperf3_rtt_ms: iperf3's own mean RTT (``end.streams[].sender.mean_rtt``, us -> ms),
  averaged over the flows, as a cross-check;
* retrans_pct: 100 x retransmitted segments / segments sent, summed over the data connections, from each one's last
  sample (ss ``retrans:<cur>/<total>``; segments sent = ``bytes_sent`` / ``mss``, retransmissions included);
* pacing_mbps: the time mean, over the samples from ``STEADY_FROM_S`` s on, of the pacing rate summed over the data
  connections of one ss block (ss ``pacing_rate``, Mbit/s); the controller's own rate decision.
* start_peak_mbps: the largest of those summed pacing rates before ``STEADY_FROM_S`` s (Mbit/s): where the start
  phase (the module's STARTING state, ×1.5 per interval) ended.

Comparison per case (loss, flows) (:func:`compare`), module vs port, over the valid runs: mean and 95 % t-interval
of the per-run values, the difference (port - module) with its 90 % Welch interval, TOST equivalence
(:func:`analysis.cc_validation.equivalence`, level 0.05) against margins fixed before the data were seen:
goodput and pacing rate +-5 % of the module's mean; RTT inflation +-2 full-size packets' transmission time at the
bottleneck's 10 Mbit/s (2.42 ms: the module's own RTT dead-band, below which it treats an RTT change as none);
retransmissions +-0.25 percentage points; Jain's index +-0.05; and Welch's p.

Pacing-rate trajectory (:func:`trajectory`): per run the mean summed pacing rate in each ``bin_s`` bin of time since
the run's first data-connection sample; per case, bin and implementation the mean over runs with its 95 %
t-interval, and the port-minus-module difference with its 95 % Welch interval; :func:`trajectory_summary` counts the
bins whose interval excludes 0. ss samples 0.1 s apart are autocorrelated; each run gives ONE value per bin, so the
intervals are over runs, not samples.

``python -m analysis.pcc_validation DIR [--markdown] [--runs] [--bundle DEST]`` prints the tables; ``--bundle``
copies the small files (as ``analysis.cc_validation.bundle`` does, plus the guest's module build log) to DEST.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import markdown_table
from analysis.cc_validation import (_ci, _diff, _find, _read_json, _welch_interval, _welch_p, cli, difference,
                                    equivalence)
from analysis.cc_validation import bundle as _bundle_small_files
from analysis.errors import AnalysisError
from analysis.figures.ss_samples import CC_CHECK_MIN_ACKED, ccs_once_flowing, parse_ss
from analysis.metrics.fairness import jain_index
from analysis.validation_store import ARCHIVE, portable_paths, run_dirs

IMPLS = ("kernel", "bpf")
IMPL_LABEL = {"kernel": "module", "bpf": "port"}
BOTTLENECK_MBPS = 10.0                      # the validation path's tbf rate (validate-guest.sh)
FRAME_BYTES = 1514                          # a full-size Ethernet frame at MTU 1500
TWO_PACKETS_MS = 2 * FRAME_BYTES * 8 / (BOTTLENECK_MBPS * 1e6) * 1e3   # 2.42 ms
STEADY_FROM_S = 5.0                         # pacing_mbps averages from here on (s since the first sample)
ALPHA = 0.05
#: column, label, unit, TOST margin: ("frac", f) = f x the module's mean, ("abs", d) = d in the column's unit
METRICS = (
    ("goodput_mbps", "goodput", "Mbit/s", ("frac", 0.05)),
    ("rtt_inflation_ms", "RTT inflation (median srtt - min RTT)", "ms", ("abs", TWO_PACKETS_MS)),
    ("retrans_pct", "retransmitted segments", "% of segments sent", ("abs", 0.25)),
    ("pacing_mbps", f"pacing rate (mean from {STEADY_FROM_S:g} s)", "Mbit/s", ("frac", 0.05)),
    ("jain", "Jain's index of the flows' goodputs", "", ("abs", 0.05)),
    ("rtt_ms", "median srtt", "ms", None),
    ("iperf3_rtt_ms", "iperf3 mean RTT", "ms", None),
)
RUN_COLUMNS = ["run", "rep", "cc", "implementation", "cc_name", "loss_pct", "flows", "order_in_rep",
               "goodput_mbps", "jain", "rtt_ms", "base_rtt_ms", "rtt_inflation_ms", "iperf3_rtt_ms", "retrans_pct",
               "pacing_mbps", "start_peak_mbps", "n_conns", "n_blocks", "guest_check", "valid", "problem"]
CASE = ["loss_pct", "flows"]


# ---------------------------------------------------------------- one run
def iperf3_flows(doc: dict) -> dict:
    """From an iperf3 client ``--json`` document: goodput_mbps (all flows, receiver side), flow_mbps (list, one per
    stream, receiver side) and iperf3_rtt_ms (mean over streams of ``sender.mean_rtt``, us -> ms; NaN if absent).
    Raises AnalysisError when iperf3 reported an error or has no totals."""
    if doc.get("error"):
        raise AnalysisError(f"iperf3 reported an error: {doc['error']}")
    end = doc.get("end") or {}
    rcv = end.get("sum_received") or {}
    if "bits_per_second" not in rcv:
        raise AnalysisError("iperf3 JSON has no end.sum_received")
    streams = end.get("streams") or []
    flows = [float(s["receiver"]["bits_per_second"]) / 1e6 for s in streams
             if isinstance(s.get("receiver"), dict) and "bits_per_second" in s["receiver"]]
    rtts = [float(s["sender"]["mean_rtt"]) / 1e3 for s in streams
            if isinstance(s.get("sender"), dict) and s["sender"].get("mean_rtt") is not None]
    return {"goodput_mbps": float(rcv["bits_per_second"]) / 1e6, "flow_mbps": flows,
            "iperf3_rtt_ms": float(np.mean(rtts)) if rtts else np.nan}


def data_connections(samples: pd.DataFrame, min_acked_bytes: int = CC_CHECK_MIN_ACKED) -> pd.DataFrame:
    """The samples of every connection (local, peer) that acked at least ``min_acked_bytes`` bytes at some sample,
    sorted by time, with a ``conn`` column (0, 1, ... in order of the connections' first sample)."""
    if samples.empty:
        return samples.assign(conn=pd.Series(dtype=int))
    acked = samples.groupby(["local", "peer"])["bytes_acked"].max().fillna(0)
    keep = acked[acked >= min_acked_bytes].index
    s = samples.set_index(["local", "peer"])
    s = s[s.index.isin(keep)].reset_index().sort_values("ts", kind="stable")
    first = s.groupby(["local", "peer"])["ts"].min().sort_values(kind="stable")
    order = {k: i for i, k in enumerate(first.index)}
    s["conn"] = [order[(a, b)] for a, b in zip(s["local"], s["peer"])]
    return s.reset_index(drop=True)


def pacing_blocks(conns: pd.DataFrame) -> pd.DataFrame:
    """One row per ss block: t_s (s since the run's first data-connection sample) and pacing_mbps (the pacing rates
    of the data connections in that block, summed, Mbit/s). Blocks where no connection shows a pacing rate are
    left out."""
    c = conns[conns["pacing_rate_bps"].notna()]
    if c.empty:
        return pd.DataFrame({"t_s": pd.Series(dtype=float), "pacing_mbps": pd.Series(dtype=float)})
    g = c.groupby("ts")["pacing_rate_bps"].sum()
    t0 = conns["ts"].min()
    return pd.DataFrame({"t_s": g.index.to_numpy(dtype=float) - t0, "pacing_mbps": g.to_numpy(dtype=float) / 1e6})


def retrans_pct(conns: pd.DataFrame) -> float:
    """100 x sum(retransmitted segments) / sum(segments sent) over the connections, each from its last sample that
    has bytes_sent and mss (segments sent = bytes_sent / mss; NaN when no connection has them)."""
    seg, ret = 0.0, 0.0
    for _, c in conns.groupby("conn"):
        c = c[c["bytes_sent"].notna() & c["mss_bytes"].notna() & (c["mss_bytes"] > 0)]
        if c.empty:
            continue
        last = c.iloc[-1]
        seg += float(last["bytes_sent"]) / float(last["mss_bytes"])
        ret += 0.0 if pd.isna(last["retrans_total"]) else float(last["retrans_total"])
    return 100.0 * ret / seg if seg > 0 else np.nan


def load_run(run_dir) -> tuple[dict, pd.DataFrame]:
    """One run directory -> (row, pacing): row has the :data:`RUN_COLUMNS` (units in the module docstring; valid
    False with ``problem`` set when the run cannot be used); pacing has t_s, pacing_mbps (:func:`pacing_blocks`) and
    the run's run, implementation, loss_pct, flows."""
    d = Path(run_dir)
    if not (d / "run.json").is_file():
        raise AnalysisError(f"{d}: no run.json")
    meta = _read_json(d / "run.json")
    impl, cc = meta.get("implementation"), meta.get("cc")
    if impl not in IMPLS or not cc:
        raise AnalysisError(f"{d / 'run.json'}: implementation must be one of {IMPLS} and cc set, got {impl!r}, {cc!r}")
    name = meta.get("cc_name") or cc
    flows = int(meta.get("flows", 1))
    row = {c: np.nan for c in RUN_COLUMNS}
    row.update(run=d.name, rep=meta.get("rep"), cc=cc, implementation=impl, cc_name=name,
               loss_pct=float(meta.get("loss_pct", np.nan)), flows=flows, order_in_rep=meta.get("order_in_rep"),
               guest_check=meta.get("check"), valid=True, problem="")
    problems = []
    if meta.get("check") not in (None, "pass"):
        problems.append(f"guest check: {meta.get('reason') or meta.get('check')}")
    ip = _find(d, "iperf3.json")
    if ip is None:
        problems.append("no iperf3.json")
    else:
        try:
            m = iperf3_flows(_read_json(ip))
            row.update(goodput_mbps=m["goodput_mbps"], iperf3_rtt_ms=m["iperf3_rtt_ms"])
            if len(m["flow_mbps"]) != flows:
                problems.append(f"iperf3 reports {len(m['flow_mbps'])} streams, the run had {flows}")
            elif flows > 1:
                row["jain"] = jain_index(m["flow_mbps"]) if sum(m["flow_mbps"]) > 0 else np.nan
        except AnalysisError as exc:
            problems.append(str(exc))
    pacing = pacing_blocks(pd.DataFrame(columns=["ts", "pacing_rate_bps"]))
    sp = _find(d, "ss.txt")
    if sp is None:
        problems.append("no ss.txt")
    else:
        conns = data_connections(parse_ss(sp))
        seen = ccs_once_flowing(conns)
        if seen != [name]:
            problems.append(f"ss shows CC {seen or 'none'} on the data connections, expected {name}")
        n = int(conns["conn"].nunique()) if len(conns) else 0
        if n != flows:
            problems.append(f"ss shows {n} data connections, the run had {flows}")
        conns = conns[conns["cc"] == name]
        row.update(n_conns=n, n_blocks=int(conns["ts"].nunique()))
        if not conns.empty:
            rtt = conns["rtt_ms"].dropna()
            row["rtt_ms"] = float(rtt.median()) if len(rtt) else np.nan
            base = conns["minrtt_ms"].dropna()
            row["base_rtt_ms"] = float(base.min()) if len(base) else np.nan
            row["rtt_inflation_ms"] = row["rtt_ms"] - row["base_rtt_ms"]
            row["retrans_pct"] = retrans_pct(conns)
            pacing = pacing_blocks(conns)
            steady = pacing.loc[pacing["t_s"] >= STEADY_FROM_S, "pacing_mbps"]
            row["pacing_mbps"] = float(steady.mean()) if len(steady) else np.nan
            start = pacing.loc[pacing["t_s"] < STEADY_FROM_S, "pacing_mbps"]
            row["start_peak_mbps"] = float(start.max()) if len(start) else np.nan
    pacing = pacing.assign(run=d.name, implementation=impl, loss_pct=row["loss_pct"], flows=flows)
    if problems:
        row.update(valid=False, problem="; ".join(problems))
    return row, pacing


# ---------------------------------------------------------------- a results directory
class Results:
    """``runs`` (one row per run, :data:`RUN_COLUMNS`), ``pacing`` (the pacing blocks of all runs), ``meta`` /
    ``setup`` (dicts, {} if absent)."""

    def __init__(self, runs, pacing, meta, setup):
        self.runs, self.pacing, self.meta, self.setup = runs, pacing, meta, setup

    @property
    def valid_runs(self) -> pd.DataFrame:
        return self.runs[self.runs["valid"].astype(bool)]


def load_results(results_dir) -> Results:
    """Read every ``runs/*/run.json`` run of ``results_dir`` (see the module docstring)."""
    root = Path(results_dir)
    if not root.is_dir():
        raise AnalysisError(f"{root}: not a directory")
    rows, pac = [], []
    with run_dirs(root) as dirs:
        if not dirs:
            raise AnalysisError(f"{root}: no runs/*/run.json nor {ARCHIVE} (not a validation results directory)")
        for d in dirs:
            r, p = load_run(d)
            rows.append(r)
            pac.append(p)
    runs = pd.DataFrame(rows, columns=RUN_COLUMNS).sort_values(CASE + ["rep", "order_in_rep"], kind="stable")
    pacing = pd.concat([p for p in pac if len(p)], ignore_index=True) if any(len(p) for p in pac) else \
        pd.DataFrame(columns=["t_s", "pacing_mbps", "run", "implementation", "loss_pct", "flows"])
    meta = _read_json(root / "meta.json") if (root / "meta.json").is_file() else {}
    setup = _read_json(root / "setup.json") if (root / "setup.json").is_file() else {}
    return Results(runs.reset_index(drop=True), pacing, meta, setup)


# ---------------------------------------------------------------- comparisons
def compare(res: Results) -> pd.DataFrame:
    """One row per (loss_pct, flows, metric) over the valid runs: kernel_* / bpf_* (n, mean, t_low, t_high: 95 %
    t-interval of the per-run values; kernel = the module, bpf = the port), diff (port - module) with its 90 %
    Welch interval, the TOST margin delta (in the metric's unit), TOST p and verdict ("equivalent", "not shown",
    "n/a"; "" for metrics reported without a test), Welch's p. Jain's index only for cases with more than one flow."""
    runs = res.valid_runs
    rows = []
    for (loss, flows), r in runs.groupby(CASE, sort=True):
        for col, label, unit, margin in METRICS:
            if col == "jain" and flows < 2:
                continue
            k = r.loc[r["implementation"] == "kernel", col].to_numpy(dtype=float)
            b = r.loc[r["implementation"] == "bpf", col].to_numpy(dtype=float)
            ks, bs = _ci(k), _ci(b)
            row = {"loss_pct": loss, "flows": int(flows), "metric": label, "unit": unit}
            row.update({f"kernel_{x}": v for x, v in ks.items()})
            row.update({f"bpf_{x}": v for x, v in bs.items()})
            if margin is not None:
                kind, m = margin
                delta = m * ks["mean"] if kind == "frac" else m
                eq = equivalence(b, k, delta)
            else:
                eq = difference(b, k)
            row.update(diff=eq["diff"], diff_low=eq["diff_low"], diff_high=eq["diff_high"], delta=eq["delta"],
                       tost_p=eq["p"], verdict=eq["verdict"], welch_p=_welch_p(b, k))
            rows.append(row)
    return pd.DataFrame(rows)


def trajectory(res: Results, bin_s: float = 1.0) -> pd.DataFrame:
    """Pacing-rate trajectory per (loss_pct, flows, bin): t_s (bin start, s), kernel_* / bpf_* (n runs, mean, 95 %
    t-interval of the runs' bin means, Mbit/s), diff (port - module) and its 95 % Welch interval (diff_low,
    diff_high). Only valid runs; a run contributes the mean of its blocks in the bin."""
    if not bin_s > 0:
        raise AnalysisError(f"trajectory: bin_s must be > 0, got {bin_s}")
    valid = set(res.valid_runs["run"])
    p = res.pacing[res.pacing["run"].isin(valid)].copy()
    if p.empty:
        return pd.DataFrame(columns=["loss_pct", "flows", "t_s", "kernel_n", "kernel_mean", "kernel_t_low",
                                     "kernel_t_high", "bpf_n", "bpf_mean", "bpf_t_low", "bpf_t_high", "diff",
                                     "diff_low", "diff_high"])
    p["bin"] = np.floor(p["t_s"].to_numpy(dtype=float) / bin_s).astype(int)
    per_run = p.groupby(CASE + ["bin", "implementation", "run"], sort=True)["pacing_mbps"].mean().reset_index()
    rows = []
    for (loss, flows, b), g in per_run.groupby(CASE + ["bin"], sort=True):
        k = g.loc[g["implementation"] == "kernel", "pacing_mbps"].to_numpy(dtype=float)
        x = g.loc[g["implementation"] == "bpf", "pacing_mbps"].to_numpy(dtype=float)
        ks, bs = _ci(k), _ci(x)
        lo, hi = _welch_interval(x, k, 1 - ALPHA)
        row = {"loss_pct": loss, "flows": int(flows), "t_s": b * bin_s}
        row.update({f"kernel_{c}": v for c, v in ks.items()})
        row.update({f"bpf_{c}": v for c, v in bs.items()})
        row.update(diff=_diff(x, k), diff_low=lo, diff_high=hi)
        rows.append(row)
    return pd.DataFrame(rows)


def trajectory_summary(traj: pd.DataFrame) -> pd.DataFrame:
    """Per (loss_pct, flows): bins (with an interval), bins_differ (the 95 % Welch interval of port - module
    excludes 0), largest_abs_diff_mbps and at_s (the bin where it is), mean_abs_diff_mbps."""
    rows = []
    for (loss, flows), g in traj.groupby(CASE, sort=True):
        g = g[np.isfinite(g["diff_low"].astype(float)) & np.isfinite(g["diff_high"].astype(float))]
        if g.empty:
            continue
        differ = (g["diff_low"] > 0) | (g["diff_high"] < 0)
        i = g["diff"].abs().idxmax()
        rows.append({"loss_pct": loss, "flows": int(flows), "bins": len(g), "bins_differ": int(differ.sum()),
                     "largest_abs_diff_mbps": float(abs(g.loc[i, "diff"])), "at_s": float(g.loc[i, "t_s"]),
                     "mean_abs_diff_mbps": float(g["diff"].abs().mean())})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- text
_f, _p, _mean_ci, _md = markdown_table.num, markdown_table.pvalue, markdown_table.mean_ci, markdown_table.table


def _nd(col: str) -> int:
    return {"jain": 3, "retrans_pct": 3}.get(col, 2)


def report(res: Results, markdown: bool = False, per_run: bool = False) -> str:
    """The comparison and the trajectory summary (and with ``per_run`` one row per run): Markdown tables
    (``markdown=True``: those of docs/pcc-vivace.md) or plain text tables."""
    cmp_, ts = compare(res), trajectory_summary(trajectory(res))
    bad = res.runs[~res.runs["valid"].astype(bool)]
    cols = {label: col for col, label, _, _ in METRICS}
    parts = []
    if markdown:
        g = res.meta.get("guest_kernel") or res.setup.get("uname", "?")
        parts.append(f"Runs: {len(res.valid_runs)} valid of {len(res.runs)}; guest kernel {g}"
                     + (f"; {res.meta['reps']} reps x {res.meta['duration_s']} s" if res.meta.get("reps") else "")
                     + ". Module = PCC-Kernel's vivace (\"pcc\"), port = pcc_vivace. Mean [95 % t-interval] over runs;"
                     " port − module with its 90 % interval (the TOST interval); TOST at alpha = "
                     f"{ALPHA} with the margin shown; Welch p tests for any difference.\n")
        rows = []
        for _, r in cmp_.iterrows():
            nd = _nd(cols[r["metric"]])
            rows.append([f"{_f(r['loss_pct'], 0)} %", r["flows"], r["metric"] + (f" ({r['unit']})" if r["unit"] else ""),
                         f"{_mean_ci(r['kernel_mean'], r['kernel_t_low'], r['kernel_t_high'], nd)} (n={r['kernel_n']})",
                         f"{_mean_ci(r['bpf_mean'], r['bpf_t_low'], r['bpf_t_high'], nd)} (n={r['bpf_n']})",
                         _mean_ci(r["diff"], r["diff_low"], r["diff_high"], nd),
                         "—" if not np.isfinite(r["delta"]) else f"±{_f(r['delta'], nd)}", _p(r["tost_p"]),
                         r["verdict"] or "—", _p(r["welch_p"])])
        parts.append(_md(["loss", "flows", "metric", "module", "port", "port − module [90 %]", "TOST margin",
                          "TOST p", "equivalence", "Welch p"], rows))
        if len(ts):
            parts.append("\nPacing-rate trajectory (sum over the flows, Mbit/s), 1-s bins; per bin the runs' means"
                         " and the 95 % Welch interval of port − module:\n")
            parts.append(_md(["loss", "flows", "bins", "bins whose interval excludes 0", "largest |port − module|",
                              "at (s)", "mean |port − module|"],
                             [[f"{_f(r['loss_pct'], 0)} %", int(r["flows"]), int(r["bins"]), int(r["bins_differ"]),
                               _f(r["largest_abs_diff_mbps"]), _f(r["at_s"], 0), _f(r["mean_abs_diff_mbps"])]
                              for _, r in ts.iterrows()]))
        if per_run:
            parts.append("\nPer run:\n")
            parts.append(_md(["run", "order", "goodput (Mbit/s)", "Jain", "srtt median (ms)", "RTT inflation (ms)",
                              "retransmitted (%)", "pacing (Mbit/s)", "start peak (Mbit/s)", "valid"],
                             [[r["run"], r["order_in_rep"], _f(r["goodput_mbps"], 3), _f(r["jain"], 3),
                               _f(r["rtt_ms"]), _f(r["rtt_inflation_ms"]), _f(r["retrans_pct"], 3),
                               _f(r["pacing_mbps"]), _f(r["start_peak_mbps"]), "yes" if r["valid"] else f"no: {r['problem']}"]
                              for _, r in res.runs.iterrows()]))
        if len(bad):
            parts.append("\nExcluded runs: " + "; ".join(f"{r['run']} ({r['problem']})" for _, r in bad.iterrows()))
        return "\n".join(parts) + "\n"
    with pd.option_context("display.width", 220, "display.max_columns", 40, "display.float_format", "{:.4g}".format):
        parts.append(cmp_.to_string(index=False))
        if len(ts):
            parts.append("\n" + ts.to_string(index=False))
        if per_run:
            parts.append("\n" + res.runs.to_string(index=False))
    if len(bad):
        parts.append("\nexcluded runs: " + "; ".join(f"{r['run']} ({r['problem']})" for _, r in bad.iterrows()))
    return "\n".join(parts) + "\n"


def bundle(results_dir, dest) -> list[Path]:
    """The small files of ``results_dir`` into ``dest`` (:func:`analysis.cc_validation.bundle`) plus the guest's
    module build log ``pcc-build.log``. The module's .ko never leaves the guest."""
    written = _bundle_small_files(results_dir, dest)
    log = Path(results_dir) / "pcc-build.log"
    if log.is_file():
        (Path(dest) / log.name).write_text(portable_paths(log.read_text(errors="replace")))
        written.append(Path(dest) / log.name)
    return written


def main(argv=None) -> int:
    return cli(argv, prog="python -m analysis.pcc_validation",
               description="PCC-Kernel's vivace module vs the BPF port pcc_vivace: tables from a "
                           "testbed/cc/validate-vm.sh --ccs pcc_vivace results directory.",
               dir_help="results directory (validate-vm.sh --out, or data/pcc-validation)",
               markdown_help="Markdown tables (as in docs/pcc-vivace.md)",
               load=load_results, report_fn=report, bundle_fn=bundle)


if __name__ == "__main__":
    sys.exit(main())
