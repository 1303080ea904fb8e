"""Native kernel module vs BPF struct_ops port of the same TCP congestion control (``testbed/cc/validate-vm.sh``;
docs/cc-validation.md).

Input: a results directory as the validation writes it (or its bundled copy, ``data/cc-validation``)::

    DIR/meta.json                       host side: kernels, qemu, objects' sha256, timings (optional here)
    DIR/setup.json                      guest side: uname, path (qdiscs), tool versions (optional here)
    DIR/runs/repNN-CC-IMPL/run.json     rep, cc, implementation ("kernel" | "bpf"), struct_ops id, object sha256,
                                        the guest's own checks (``check``: "pass" | "fail")
    DIR/runs/repNN-CC-IMPL/iperf3.json  iperf3 client --json (also read as iperf3.json.xz / .gz)
    DIR/runs/repNN-CC-IMPL/ss.txt       ``ss -tin`` blocks, each after ``# ts=<epoch s>`` (also ss.txt.xz / .gz)

Per run (:func:`load_run`): goodput (Mbit/s, what the receiver got: iperf3 ``end.sum_received.bits_per_second``),
retransmissions (segments, iperf3 ``end.sum_sent.retransmits``), the multiplicative-decrease events of the data
connection (:func:`analysis.metrics.cwnd_decrease.decrease_events`: a sample whose ssthresh changes to a value below
the preceding sample's cwnd; ratio = new ssthresh / largest cwnd sampled since the previous event) and its cwnd
samples (packets). BIC's expected ratio is beta = 819/1024 = 0.7998 when cwnd > low_window = 14 packets
(tcp_bic.c bictcp_recalc_ssthresh; at or below low_window it halves), so only BIC events with cwnd before > 14 count
towards its per-run median. Westwood+ has no fixed factor (after a loss ssthresh = BWE * RTTmin / MSS,
tcp_westwood.c), so every event counts and its distribution is reported as it is.

Comparison per CC (:func:`compare`), kernel vs bpf, over runs: mean and 95 % t-interval of per-run goodput,
retransmissions and median decrease ratio (:func:`analysis.stats.summary`); Welch's t-test
(:func:`analysis.stats.welch_t`); TOST equivalence (:func:`analysis.stats.tost`, Welch form, level alpha) on
goodput with margin +-5 % of the kernel mean and on the median decrease ratio with margin +-0.02; the cwnd
distribution (:func:`cwnd_table`): 10/50/90 % quantiles of the pooled samples per implementation and the two-sample
Kolmogorov-Smirnov test between them. The ss samples of one flow are strongly autocorrelated (0.1 s apart), so the
KS p-value treats far more samples as independent than there are: read D (the largest CDF distance), not p.

``python -m analysis.cc_validation DIR [--markdown] [--runs] [--bundle DEST]`` prints the tables; ``--bundle`` copies
the small files (run.json, iperf3.json, during.txt, ss.txt as ss.txt.xz, meta/setup JSON, guest.log) to DEST.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as _st

from analysis import markdown_table
from analysis.cc_guard import CWND_IMPOSSIBLE_PKTS
from analysis.errors import AnalysisError
from analysis.figures.ss_samples import ccs_once_flowing, data_connection, parse_ss
from analysis.ingest.compressed import open_decompressed
from analysis.metrics.cwnd_decrease import decrease_events
from analysis.stats import summary, tost, welch_t
from analysis.validation_store import ARCHIVE, pack, portable_paths, run_dirs

IMPLS = ("kernel", "bpf")
#: multiplicative-decrease factor a CC is expected to apply (ssthresh / cwnd), where it has a fixed one
EXPECTED_RATIO = {"bic": 819 / 1024, "bic415": 819 / 1024}
#: windows (packets) at or below which a CC reduces differently: BIC halves there (low_window, tcp_bic.c; the same
#: rule in Linux 4.15's, which bic415 ports)
LOW_WINDOW = {"bic": 14, "bic415": 14}
GOODPUT_MARGIN_FRAC = 0.05   # TOST margin on goodput: +-5 % of the kernel's mean
RATIO_MARGIN = 0.02          # TOST margin on the per-run median decrease ratio (dimensionless)
ALPHA = 0.05
RUN_COLUMNS = ["run", "rep", "cc", "implementation", "order_in_rep", "struct_ops_id", "object_sha256", "uname_r",
               "goodput_mbps", "sender_mbps", "retransmits", "n_events", "n_events_counted", "median_ratio",
               "n_cwnd", "cc_seen", "guest_check", "valid", "problem",
               "loss_pct", "flows", "duration_s", "guard_ssthresh_repairs", "guard_cwnd_repairs",
               "impossible_cwnd_samples"]


# ---------------------------------------------------------------- reading one run
def _find(run_dir: Path, name: str) -> Path | None:
    for cand in (name, name + ".xz", name + ".gz"):
        p = run_dir / cand
        if p.is_file():
            return p
    return None


def _read_json(path: Path) -> dict:
    try:
        with open_decompressed(path) as f:
            return json.loads(f.read())
    except (OSError, ValueError) as exc:
        raise AnalysisError(f"{path}: unreadable JSON ({exc})") from None


def iperf3_metrics(doc: dict) -> dict:
    """Per-run numbers from an iperf3 client ``--json`` document.

    Returns goodput_mbps (Mbit/s received by the server, ``end.sum_received.bits_per_second`` / 1e6), sender_mbps
    (Mbit/s sent, ``end.sum_sent``), retransmits (segments the sender retransmitted, ``end.sum_sent.retransmits``),
    seconds (the receiver's measured duration, s). Raises AnalysisError when iperf3 reported an error or no totals."""
    if doc.get("error"):
        raise AnalysisError(f"iperf3 reported an error: {doc['error']}")
    end = doc.get("end") or {}
    rcv, snd = end.get("sum_received"), end.get("sum_sent")
    if not rcv or not snd or "bits_per_second" not in rcv:
        raise AnalysisError("iperf3 JSON has no end.sum_received / end.sum_sent")
    return {"goodput_mbps": float(rcv["bits_per_second"]) / 1e6,
            "sender_mbps": float(snd.get("bits_per_second", np.nan)) / 1e6,
            "retransmits": float(snd.get("retransmits", np.nan)),
            "seconds": float(rcv.get("seconds", np.nan))}


def counted_events(events: pd.DataFrame, cc: str) -> pd.DataFrame:
    """The decrease events (:func:`decrease_events` rows) that count towards ``cc``'s ratio: for a CC with a low
    window (BIC: 14 packets) only those with cwnd_before_pkts above it, else all."""
    low = LOW_WINDOW.get(cc)
    if low is None:
        return events
    return events[events["cwnd_before_pkts"] > low]


def load_run(run_dir) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    """One run directory -> (row, events, cwnd).

    row: the :data:`RUN_COLUMNS` (goodput_mbps / sender_mbps in Mbit/s, retransmits in segments, median_ratio the
    median of the counted decrease ratios, n_cwnd the number of cwnd samples, cc_seen the CC names ss showed on the
    data connection once ``CC_CHECK_MIN_ACKED`` bytes were acked (``ss_samples.ccs_once_flowing``), valid False with
    ``problem`` set when the run cannot be used). Samples of the data connection that name another CC (only its
    first milliseconds, before iperf3 sets the CC) are left out of events and cwnd. events: decrease events with
    run, cc, implementation and ``counted`` columns (ratio dimensionless, cwnd/ssthresh in packets). cwnd: ts (s since
    the first sample of the run) and cwnd_pkts of the data connection."""
    d = Path(run_dir)
    meta_p = d / "run.json"
    if not meta_p.is_file():
        raise AnalysisError(f"{d}: no run.json")
    meta = _read_json(meta_p)
    cc, impl = meta.get("cc"), meta.get("implementation")
    if impl not in IMPLS or not cc:
        raise AnalysisError(f"{meta_p}: implementation must be one of {IMPLS} and cc set, got {impl!r}, {cc!r}")
    row = {c: np.nan for c in RUN_COLUMNS}
    row.update(run=d.name, rep=meta.get("rep"), cc=cc, implementation=impl, order_in_rep=meta.get("order_in_rep"),
               struct_ops_id=meta.get("struct_ops_id"), object_sha256=meta.get("object_sha256"),
               uname_r=meta.get("uname_r"), guest_check=meta.get("check"), valid=True, problem="",
               loss_pct=meta.get("loss_pct", np.nan), flows=meta.get("flows", 1),
               duration_s=meta.get("duration_s", np.nan))
    guard = meta.get("cc_guard")      # the port's kernel-defect guard counters over the run (absent: not recorded)
    if isinstance(guard, dict):
        row.update(guard_ssthresh_repairs=guard.get("guard_ssthresh_repairs", np.nan),
                   guard_cwnd_repairs=guard.get("guard_cwnd_repairs", np.nan))
    problems = []
    if meta.get("check") not in (None, "pass"):
        problems.append(f"guest check: {meta.get('reason') or meta.get('check')}")
    if impl == "bpf" and meta.get("struct_ops_id") is None:
        problems.append("bpf run without a struct_ops id")

    ip = _find(d, "iperf3.json")
    if ip is None:
        problems.append("no iperf3.json")
    else:
        try:
            m = iperf3_metrics(_read_json(ip))
            row.update({k: m[k] for k in ("goodput_mbps", "sender_mbps", "retransmits")})
        except AnalysisError as exc:
            problems.append(str(exc))

    events = pd.DataFrame(columns=["ts", "cwnd_before_pkts", "ssthresh_pkts", "ratio"])
    cwnd = pd.DataFrame(columns=["ts", "cwnd_pkts"])
    sp = _find(d, "ss.txt")
    if sp is None:
        problems.append("no ss.txt")
    else:
        samples = parse_ss(sp)
        # every socket's samples, not only the data connection's: the defect's cwnd (docs/cc-guard.md) on any flow
        row["impossible_cwnd_samples"] = int((pd.to_numeric(samples.get("cwnd_pkts"), errors="coerce")
                                              >= CWND_IMPOSSIBLE_PKTS).sum()) if len(samples) else 0
        conn = data_connection(samples)
        conn = conn[conn["cwnd_pkts"].notna()]
        seen = ccs_once_flowing(conn)     # samples before iperf3 sets the CC show the default one
        row["cc_seen"] = ",".join(seen)
        if seen != [cc]:
            problems.append(f"ss shows CC {seen or 'none'} on the data connection, expected {cc}")
        conn = conn[conn["cc"] == cc]
        if not conn.empty:
            events = decrease_events(conn)
            cwnd = pd.DataFrame({"ts": conn["ts"].to_numpy() - conn["ts"].min(),
                                 "cwnd_pkts": conn["cwnd_pkts"].to_numpy(dtype=float)})
    events = events.assign(run=d.name, cc=cc, implementation=impl)
    events["counted"] = events.index.isin(counted_events(events, cc).index)
    cwnd = cwnd.assign(run=d.name, cc=cc, implementation=impl)
    counted = events.loc[events["counted"], "ratio"].dropna()
    row.update(n_events=len(events), n_events_counted=len(counted),
               median_ratio=float(counted.median()) if len(counted) else np.nan, n_cwnd=len(cwnd))
    if problems:
        row.update(valid=False, problem="; ".join(problems))
    return row, events, cwnd


# ---------------------------------------------------------------- a results directory
class Results:
    """Everything read from a results directory: ``runs`` (one row per run, :data:`RUN_COLUMNS`), ``events``
    (decrease events of all runs), ``cwnd`` (cwnd samples of all runs), ``meta`` / ``setup`` (dicts, {} if absent)."""

    def __init__(self, runs, events, cwnd, meta, setup):
        self.runs, self.events, self.cwnd, self.meta, self.setup = runs, events, cwnd, meta, setup

    @property
    def valid_runs(self) -> pd.DataFrame:
        return self.runs[self.runs["valid"].astype(bool)]

    def _valid(self, df: pd.DataFrame) -> pd.DataFrame:
        return df[df["run"].isin(set(self.valid_runs["run"]))]


def load_results(results_dir) -> Results:
    """Read every ``runs/*/run.json`` run of ``results_dir`` (see the module docstring)."""
    root = Path(results_dir)
    rows, evs, cws = [], [], []
    with run_dirs(root) as dirs:
        if not dirs:
            raise AnalysisError(f"{root}: no runs/*/run.json nor {ARCHIVE} (not a cc-validation results directory)")
        for d in dirs:
            r, e, c = load_run(d)
            rows.append(r)
            evs.append(e)
            cws.append(c)
    runs = pd.DataFrame(rows, columns=RUN_COLUMNS).sort_values(["cc", "rep", "order_in_rep"], kind="stable")
    events = pd.concat([e for e in evs if len(e)], ignore_index=True) if any(len(e) for e in evs) else \
        pd.DataFrame(columns=["ts", "cwnd_before_pkts", "ssthresh_pkts", "ratio", "run", "cc", "implementation",
                              "counted"])
    cwnd = pd.concat([c for c in cws if len(c)], ignore_index=True) if any(len(c) for c in cws) else \
        pd.DataFrame(columns=["ts", "cwnd_pkts", "run", "cc", "implementation"])
    meta = _read_json(root / "meta.json") if (root / "meta.json").is_file() else {}
    setup = _read_json(root / "setup.json") if (root / "setup.json").is_file() else {}
    return Results(runs.reset_index(drop=True), events, cwnd, meta, setup)


# ---------------------------------------------------------------- comparisons
def _ci(values) -> dict:
    """mean, 95 % t-interval (t_low, t_high) and n of per-run values (NaN when fewer than 2)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size < 2:
        return {"n": int(v.size), "mean": float(v.mean()) if v.size else np.nan, "t_low": np.nan, "t_high": np.nan}
    s = summary(v, alpha=ALPHA)
    return {"n": s["n"], "mean": s["mean"], "t_low": s["t_low"], "t_high": s["t_high"]}


def equivalence(bpf, kernel, delta: float, alpha: float = ALPHA) -> dict:
    """TOST of mean(bpf) - mean(kernel) against +-delta (units of the data), level alpha, via
    :func:`analysis.stats.tost`. Adds the (1 - 2 alpha) Welch interval of the difference (diff_low, diff_high) and
    ``verdict``: "equivalent" (p < alpha), "not shown" (p >= alpha) or "n/a" (too few values). When both samples
    have zero variance the difference is exact: equivalent iff |diff| < delta (p reported as 0 or 1)."""
    a = np.asarray(bpf, dtype=float)
    b = np.asarray(kernel, dtype=float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    out = {"delta": float(delta), "diff": np.nan, "diff_low": np.nan, "diff_high": np.nan, "p": np.nan,
           "verdict": "n/a"}
    if a.size < 2 or b.size < 2 or not np.isfinite(delta) or delta <= 0:
        return out
    diff = float(a.mean() - b.mean())
    if a.var(ddof=1) == 0 and b.var(ddof=1) == 0:
        eq = abs(diff) < delta
        return {**out, "diff": diff, "diff_low": diff, "diff_high": diff, "p": 0.0 if eq else 1.0,
                "verdict": "equivalent" if eq else "not shown"}
    r = tost(a, b, delta)
    half = float(_st.t.ppf(1 - alpha, r["df"])) * r["se"]
    return {**out, "diff": r["diff"], "diff_low": r["diff"] - half, "diff_high": r["diff"] + half, "p": r["p"],
            "verdict": "equivalent" if r["p"] < alpha else "not shown"}


def _welch_p(a, b) -> float:
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if a.size < 2 or b.size < 2 or (a.var(ddof=1) == 0 and b.var(ddof=1) == 0):
        return np.nan
    return welch_t(a, b)["p"]


METRICS = (  # column, label, unit, TOST margin kind
    ("goodput_mbps", "goodput", "Mbit/s", "frac"),
    ("retransmits", "retransmits", "segments", None),
    ("median_ratio", "median decrease ratio", "ssthresh/cwnd", "abs"),
)


def compare(res: Results, goodput_margin_frac: float = GOODPUT_MARGIN_FRAC,
            ratio_margin: float = RATIO_MARGIN) -> pd.DataFrame:
    """One row per (cc, metric) over the valid runs: kernel_* and bpf_* (n, mean, t_low, t_high: 95 % t-interval of
    the per-run values), diff (bpf - kernel) with its 90 % interval, TOST margin ``delta`` (goodput: fraction of the
    kernel mean; median decrease ratio: absolute), TOST p and verdict, Welch's p of the difference, and
    ``expected`` (the CC's fixed decrease factor, for the ratio row)."""
    runs = res.valid_runs
    rows = []
    for cc in sorted(runs["cc"].unique()):
        r = runs[runs["cc"] == cc]
        for col, label, unit, kind in METRICS:
            k = r.loc[r["implementation"] == "kernel", col].to_numpy(dtype=float)
            b = r.loc[r["implementation"] == "bpf", col].to_numpy(dtype=float)
            ks, bs = _ci(k), _ci(b)
            row = {"cc": cc, "metric": label, "unit": unit}
            row.update({f"kernel_{x}": v for x, v in ks.items()})
            row.update({f"bpf_{x}": v for x, v in bs.items()})
            if kind == "frac":
                delta = goodput_margin_frac * ks["mean"]
            elif kind == "abs":
                delta = ratio_margin
            else:
                delta = np.nan
            if kind:
                eq = equivalence(b, k, delta)
            else:  # no equivalence test: the difference and its 90 % Welch interval only
                eq = difference(b, k)
            row.update({"diff": eq["diff"], "diff_low": eq["diff_low"], "diff_high": eq["diff_high"],
                        "delta": eq["delta"], "tost_p": eq["p"], "verdict": eq["verdict"],
                        "welch_p": _welch_p(b, k),
                        "expected": EXPECTED_RATIO.get(cc, np.nan) if col == "median_ratio" else np.nan})
            rows.append(row)
    return pd.DataFrame(rows)


def difference(a, b) -> dict:
    """mean(a) - mean(b) with its 90 % Welch interval, for a metric reported without an equivalence test: the keys of
    :func:`equivalence` (delta and p NaN, verdict "")."""
    lo, hi = _welch_interval(a, b, 1 - 2 * ALPHA)
    return {"delta": np.nan, "diff": _diff(a, b), "diff_low": lo, "diff_high": hi, "p": np.nan, "verdict": ""}


def _welch_interval(a, b, level: float) -> tuple[float, float]:
    """Two-sided ``level`` Welch interval of mean(a) - mean(b), from the standard error and Welch-Satterthwaite df
    that :func:`analysis.stats.tost` computes (NaN, NaN with fewer than 2 values; the exact difference twice when
    neither sample varies)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if a.size < 2 or b.size < 2:
        return np.nan, np.nan
    if a.var(ddof=1) == 0 and b.var(ddof=1) == 0:
        d = float(a.mean() - b.mean())
        return d, d
    r = tost(a, b, 1.0)   # only its diff, se and df are used
    half = float(_st.t.ppf(0.5 + level / 2, r["df"])) * r["se"]
    return r["diff"] - half, r["diff"] + half


def _diff(a, b) -> float:
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    return float(a.mean() - b.mean()) if a.size and b.size else np.nan


#: pairs of CCs a round may hold both of, whose difference it reports (the power check: can the comparison tell
#: two versions of one algorithm apart?): 6.1's BIC and 4.15's (bic415, docs/kernel-415.md)
CONTRASTS = (("bic", "bic415"),)


def contrast(res: Results) -> pd.DataFrame:
    """For each pair (A, B) of :data:`CONTRASTS` that the round holds, per implementation and metric: B - A over the
    valid runs with its 95 % Welch interval and Welch's p (per-run values as in :func:`compare`)."""
    runs = res.valid_runs
    rows = []
    for a, b in CONTRASTS:
        if not {a, b} <= set(runs["cc"]):
            continue
        for impl in IMPLS:
            for col, label, unit, _ in METRICS:
                x = runs.loc[(runs["cc"] == a) & (runs["implementation"] == impl), col].to_numpy(dtype=float)
                y = runs.loc[(runs["cc"] == b) & (runs["implementation"] == impl), col].to_numpy(dtype=float)
                lo, hi = _welch_interval(y, x, 1 - ALPHA)
                rows.append({"cc_a": a, "cc_b": b, "implementation": impl, "metric": label, "unit": unit,
                             "a_mean": _ci(x)["mean"], "b_mean": _ci(y)["mean"], "diff": _diff(y, x),
                             "diff_low": lo, "diff_high": hi, "welch_p": _welch_p(y, x)})
    return pd.DataFrame(rows, columns=["cc_a", "cc_b", "implementation", "metric", "unit", "a_mean", "b_mean", "diff",
                                       "diff_low", "diff_high", "welch_p"])


def ratio_table(res: Results) -> pd.DataFrame:
    """Pooled decrease events per (cc, implementation) over the valid runs: events (all), counted (those that count
    for the CC, see :func:`counted_events`), the 10/50/90 % quantiles and mean of the counted ratios, and the share
    of counted ratios within +-0.02 of the expected factor (NaN where the CC has none)."""
    ev = res._valid(res.events)
    rows = []
    for cc in sorted(res.valid_runs["cc"].unique()):
        for impl in IMPLS:
            e = ev[(ev["cc"] == cc) & (ev["implementation"] == impl)]
            c = e.loc[e["counted"].astype(bool), "ratio"].dropna().to_numpy(dtype=float)
            exp = EXPECTED_RATIO.get(cc, np.nan)
            q = np.quantile(c, [0.1, 0.5, 0.9]) if c.size else [np.nan] * 3
            rows.append({"cc": cc, "implementation": impl, "events": len(e), "counted": int(c.size),
                         "p10": q[0], "p50": q[1], "p90": q[2], "mean": float(c.mean()) if c.size else np.nan,
                         "expected": exp,
                         "within_0.02": float(np.mean(np.abs(c - exp) <= 0.02)) if c.size and np.isfinite(exp)
                         else np.nan})
    return pd.DataFrame(rows)


def cwnd_table(res: Results) -> pd.DataFrame:
    """cwnd samples (packets) pooled over the valid runs, per cc: for each implementation the number of samples and
    the 10/50/90 % quantiles; the two-sample Kolmogorov-Smirnov statistic D (largest distance between the two
    empirical CDFs) and its p-value (samples taken as independent, which they are not: see the module docstring)."""
    cw = res._valid(res.cwnd)
    rows = []
    for cc in sorted(res.valid_runs["cc"].unique()):
        row = {"cc": cc}
        vals = {}
        for impl in IMPLS:
            v = cw.loc[(cw["cc"] == cc) & (cw["implementation"] == impl), "cwnd_pkts"].to_numpy(dtype=float)
            vals[impl] = v
            q = np.quantile(v, [0.1, 0.5, 0.9]) if v.size else [np.nan] * 3
            row.update({f"{impl}_n": int(v.size), f"{impl}_p10": q[0], f"{impl}_p50": q[1], f"{impl}_p90": q[2]})
        if vals["kernel"].size and vals["bpf"].size:
            ks = _st.ks_2samp(vals["bpf"], vals["kernel"])
            row.update(ks_d=float(ks.statistic), ks_p=float(ks.pvalue))
        else:
            row.update(ks_d=np.nan, ks_p=np.nan)
        rows.append(row)
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- output
_f, _p, _mean_ci, _md = markdown_table.num, markdown_table.pvalue, markdown_table.mean_ci, markdown_table.table


def guard_table(res: Results) -> pd.DataFrame:
    """What the kernel-defect guard (testbed/cc/cc_guard.h, docs/cc-guard.md) met, per (cc, implementation) over the
    valid runs: runs, flow_minutes (flows x run length, min), the guard's ssthresh and cwnd repairs (summed over the
    runs that recorded its counters; NaN for the kernel's module, which has no guard, and for runs recorded before
    the counters were), impossible_cwnd_samples (ss samples of any socket with cwnd >= 2^20 packets, which no path
    here can hold: the defect visible to ss). Empty when no run recorded guard counters."""
    v = res.valid_runs
    if v.empty or v["guard_ssthresh_repairs"].isna().all():
        return pd.DataFrame(columns=["cc", "implementation", "runs", "flow_minutes", "runs_with_counters",
                                     "ssthresh_repairs", "cwnd_repairs", "impossible_cwnd_samples"])
    rows = []
    for (cc, impl), g in v.groupby(["cc", "implementation"], sort=True):
        has = g["guard_ssthresh_repairs"].notna()
        rows.append({"cc": cc, "implementation": impl, "runs": len(g),
                     "flow_minutes": float((pd.to_numeric(g["flows"]) * pd.to_numeric(g["duration_s"])).sum() / 60),
                     "runs_with_counters": int(has.sum()),
                     "ssthresh_repairs": g.loc[has, "guard_ssthresh_repairs"].sum() if has.any() else np.nan,
                     "cwnd_repairs": g.loc[has, "guard_cwnd_repairs"].sum() if has.any() else np.nan,
                     "impossible_cwnd_samples": int(g["impossible_cwnd_samples"].fillna(0).sum())})
    return pd.DataFrame(rows)


def _nd(metric: str) -> int:
    return {"goodput": 3, "retransmits": 1, "median decrease ratio": 4}.get(metric, 3)


def report(res: Results, markdown: bool = False, per_run: bool = False) -> str:
    """The comparison as text: a Markdown document (``markdown=True``: the tables of docs/cc-validation.md) or plain
    tables. ``per_run`` adds one row per run."""
    cmp_, rat, cw = compare(res), ratio_table(res), cwnd_table(res)
    bad = res.runs[~res.runs["valid"].astype(bool)]
    parts = []
    if markdown:
        g = res.meta.get("guest_kernel") or (res.valid_runs["uname_r"].dropna().iloc[0]
                                            if res.valid_runs["uname_r"].notna().any() else "?")
        parts.append(f"Runs: {len(res.valid_runs)} valid of {len(res.runs)}; guest kernel {g}"
                     + (f"; host kernel {res.meta['host_kernel']}" if res.meta.get("host_kernel") else "")
                     + (f"; {res.meta['reps']} reps x {res.meta['duration_s']} s" if res.meta.get("reps") else "")
                     + ". Mean [95 % t-interval] over runs; BPF − kernel with its 90 % interval (the TOST interval);"
                     f" TOST at alpha = {ALPHA} with the margin shown; Welch p tests for any difference.\n")
        rows = []
        for _, r in cmp_.iterrows():
            nd = _nd(r["metric"])
            margin = "—" if not np.isfinite(r["delta"]) else (
                f"±{_f(r['delta'], nd)} (5 % of kernel)" if r["metric"] == "goodput" else f"±{_f(r['delta'], nd)}")
            rows.append([r["cc"], f"{r['metric']} ({r['unit']})",
                         f"{_mean_ci(r['kernel_mean'], r['kernel_t_low'], r['kernel_t_high'], nd)} (n={r['kernel_n']})",
                         f"{_mean_ci(r['bpf_mean'], r['bpf_t_low'], r['bpf_t_high'], nd)} (n={r['bpf_n']})",
                         _mean_ci(r["diff"], r["diff_low"], r["diff_high"], nd), margin, _p(r["tost_p"]),
                         r["verdict"] or "—", _p(r["welch_p"])])
        parts.append(_md(["CC", "metric", "kernel module", "BPF port", "BPF − kernel [90 %]", "TOST margin",
                          "TOST p", "equivalence", "Welch p"], rows))
        parts.append("\nDecrease ratios (ssthresh after / largest cwnd before), pooled events; BIC counts events"
                     " with cwnd before > 14 packets (low_window), Westwood+ all:\n")
        parts.append(_md(["CC", "implementation", "events", "counted", "p10", "median", "p90", "mean", "expected",
                          "share within ±0.02 of expected"],
                         [[r["cc"], r["implementation"], r["events"], r["counted"], _f(r["p10"], 4), _f(r["p50"], 4),
                           _f(r["p90"], 4), _f(r["mean"], 4), _f(r["expected"], 4), _f(r["within_0.02"], 3)]
                          for _, r in rat.iterrows()]))
        parts.append("\ncwnd samples (packets, every ss sample of the data connection), pooled over runs;"
                     " KS D = largest distance between the two empirical CDFs (p treats the autocorrelated samples"
                     " as independent):\n")
        parts.append(_md(["CC", "kernel n", "kernel p10 / p50 / p90", "BPF n", "BPF p10 / p50 / p90", "KS D", "KS p"],
                         [[r["cc"], r["kernel_n"],
                           f"{_f(r['kernel_p10'], 0)} / {_f(r['kernel_p50'], 0)} / {_f(r['kernel_p90'], 0)}",
                           r["bpf_n"], f"{_f(r['bpf_p10'], 0)} / {_f(r['bpf_p50'], 0)} / {_f(r['bpf_p90'], 0)}",
                           _f(r["ks_d"], 3), _p(r["ks_p"])] for _, r in cw.iterrows()]))
        ct = contrast(res)
        if len(ct):
            parts.append("\nThe two versions of one algorithm against each other (B − A, 95 % Welch interval), per"
                         " implementation: a comparison that finds the port equal to its module can also tell the"
                         " versions apart:\n")
            parts.append(_md(["A", "B", "implementation", "metric", "A", "B", "B − A [95 %]", "Welch p"],
                             [[r["cc_a"], r["cc_b"], r["implementation"], f"{r['metric']} ({r['unit']})",
                               _f(r["a_mean"], _nd(r["metric"])), _f(r["b_mean"], _nd(r["metric"])),
                               _mean_ci(r["diff"], r["diff_low"], r["diff_high"], _nd(r["metric"])),
                               _p(r["welch_p"])] for _, r in ct.iterrows()]))
        gt = guard_table(res)
        if len(gt):
            parts.append("\nThe kernel-defect guard (testbed/cc/cc_guard.h): its repairs over the runs (the kernel's"
                         " module has none), and ss samples of any socket with cwnd >= 2^20 packets:\n")
            parts.append(_md(["CC", "implementation", "runs", "flow-minutes", "ssthresh repairs", "cwnd repairs",
                              "ss samples with cwnd >= 2^20"],
                             [[r["cc"], r["implementation"], r["runs"], _f(r["flow_minutes"], 1),
                               "—" if pd.isna(r["ssthresh_repairs"]) else int(r["ssthresh_repairs"]),
                               "—" if pd.isna(r["cwnd_repairs"]) else int(r["cwnd_repairs"]),
                               r["impossible_cwnd_samples"]] for _, r in gt.iterrows()]))
        if per_run:
            parts.append("\nPer run:\n")
            parts.append(_md(["run", "order", "goodput (Mbit/s)", "retransmits", "events (counted)", "median ratio",
                              "struct_ops id", "valid"],
                             [[r["run"], r["order_in_rep"], _f(r["goodput_mbps"], 3), _f(r["retransmits"], 0),
                               f"{r['n_events']} ({r['n_events_counted']})", _f(r["median_ratio"], 4),
                               "—" if pd.isna(r["struct_ops_id"]) else int(r["struct_ops_id"]),
                               "yes" if r["valid"] else f"no: {r['problem']}"] for _, r in res.runs.iterrows()]))
        if len(bad):
            parts.append("\nExcluded runs: " + "; ".join(f"{r['run']} ({r['problem']})" for _, r in bad.iterrows()))
        return "\n".join(parts) + "\n"
    with pd.option_context("display.width", 200, "display.max_columns", 40, "display.float_format", "{:.4g}".format):
        parts.append(cmp_.to_string(index=False))
        parts.append("\n" + rat.to_string(index=False))
        parts.append("\n" + cw.to_string(index=False))
        ct = contrast(res)
        if len(ct):
            parts.append("\n" + ct.to_string(index=False))
        gt = guard_table(res)
        if len(gt):
            parts.append("\n" + gt.to_string(index=False))
        if per_run:
            parts.append("\n" + res.runs.drop(columns=["object_sha256"]).to_string(index=False))
    if len(bad):
        parts.append("\nexcluded runs: " + "; ".join(f"{r['run']} ({r['problem']})" for _, r in bad.iterrows()))
    return "\n".join(parts) + "\n"


# ---------------------------------------------------------------- bundling the small files
BUNDLE_RUN_FILES = ("run.json", "iperf3.json", "during.txt", "kernel.log")
BUNDLE_TOP_FILES = ("meta.json", "setup.json", "guest.log")


def bundle(results_dir, dest) -> list[Path]:
    """Copy what the tables need (and the runs' metadata) from ``results_dir`` to ``dest``: per run run.json,
    iperf3.json, during.txt, kernel.log (when the run kept one) and ss.txt, packed into one ``runs.tar.xz``
    (analysis/validation_store.py); meta.json, setup.json, guest.log beside it, with the recording host's paths made
    portable (``portable_paths``). ``dest`` must not exist or be empty. Returns the files written."""
    src, dst = Path(results_dir), Path(dest)
    if dst.exists() and any(dst.iterdir()):
        raise AnalysisError(f"{dst} exists and is not empty")
    written = []
    with run_dirs(src) as dirs:
        if not dirs:
            raise AnalysisError(f"{src}: no runs/*/run.json nor {ARCHIVE}")
        dst.mkdir(parents=True, exist_ok=True)
        for name in BUNDLE_TOP_FILES:
            if (src / name).is_file():   # the recording host's paths written as what they stand for
                (dst / name).write_text(portable_paths((src / name).read_text(errors="replace")))
                written.append(dst / name)
        for d in dirs:
            o = dst / "runs" / d.name
            o.mkdir(parents=True)
            for name in BUNDLE_RUN_FILES + ("ss.txt",):
                p = _find(d, name)
                if p is not None:
                    shutil.copyfile(p, o / p.name)
    pack(dst)
    return written + [dst / ARCHIVE]


def cli(argv, *, prog: str, description: str, dir_help: str, markdown_help: str, load, report_fn, bundle_fn) -> int:
    """The command line shared by the native-vs-port validations (this module, ``analysis.pcc_validation``):
    ``RESULTS_DIR [--markdown] [--runs] [--bundle DEST]``; ``load(dir)`` -> results, ``report_fn(results,
    markdown=, per_run=)`` -> text, ``bundle_fn(dir, dest)`` -> files written. Exit 2 with a one-line error on bad
    input."""
    ap = argparse.ArgumentParser(prog=prog, description=description)
    ap.add_argument("results_dir", help=dir_help)
    ap.add_argument("--markdown", action="store_true", help=markdown_help)
    ap.add_argument("--runs", action="store_true", help="also one row per run")
    ap.add_argument("--bundle", metavar="DEST", help="copy the small result files to DEST first (the runs' as one "
                                                     "runs.tar.xz)")
    args = ap.parse_args(argv)
    try:
        if args.bundle:
            files = bundle_fn(args.results_dir, args.bundle)
            size = sum(f.stat().st_size for f in files)
            print(f"bundled {len(files)} files, {size / 1e6:.2f} MB, into {args.bundle}", file=sys.stderr)
        res = load(args.results_dir)
        sys.stdout.write(report_fn(res, markdown=args.markdown, per_run=args.runs))
    except AnalysisError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def main(argv=None) -> int:
    return cli(argv, prog="python -m analysis.cc_validation",
               description="Native kernel module vs BPF port of a TCP congestion control: tables from a "
                           "testbed/cc/validate-vm.sh results directory.",
               dir_help="results directory (validate-vm.sh --out, or data/cc-validation)",
               markdown_help="Markdown tables (as in docs/cc-validation.md)",
               load=load_results, report_fn=report, bundle_fn=bundle)


if __name__ == "__main__":
    sys.exit(main())
