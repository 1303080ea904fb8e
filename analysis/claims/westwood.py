"""Claims of study 004 (Sukiswo, "Perbaikan TCP Westwood+": Westwood+e vs Westwood+), one check per statement of
``data/reference/004/statements.csv``, judged on the per-(run, flow) rows of ``analysis.families.chain`` with the
verdict rules of ``analysis.claims.core`` (reproduced / not reproduced / inconclusive / not run with a reason).

Per run (the replicate): ``received`` = total_received_bytes (bytes over all the run's flows), ``delay`` =
run_delay_from_dequeue_mean_ms (from each data packet's dequeue at its first link to the receiver, ns-2's and so the
paper's definition: docs/ns2-004.md) when every run has it, else run_delay_mean_ms (from the sender's capture, which
includes the first link's queue), mean over every received data packet of the run, ms; ``cwnd_max`` = the largest of
the flows' cwnd_max_pkts, ``cwnd_mean`` = the mean of the flows' cwnd_mean_pkts (packets), ``jain`` = jain_index.
The paper's rows are the levels of ``error_rate`` (Tables 1, 2, 4) or ``bandwidth_mbit`` (Table 3, error_rate 0.01);
m(l, cc) is the mean over the repetitions at level l. Reference delays are printed in seconds: multiplied by 1000
here (our columns are ms).

Quantities (README of data/reference/004 for the paper's definitions):

* received_bytes_mean_gain_pct = mean over levels l of 100·(m(l, westwood_e)/m(l, westwood) − 1) (%);
  delay_ms_mean_over_rows = mean_l m(l, cc) (ms); delay_ms_mean_gap_westwood_e_minus_westwood = mean_l m(l, e) −
  mean_l m(l, w) (ms); delay_ms_mean_gain_pct = 100·(mean_l m(l, e)/mean_l m(l, w) − 1) (%);
  delay_ms_range_over_rows = max_l m(l, cc) − min_l m(l, cc) (ms), for each cc named.
  Interval: the union of a percentile bootstrap (the repetitions resampled within each (level, cc), ``n_boot``
  resamples, fixed seed) and a delta-method t interval (numerical gradient of the statistic in the group means,
  Welch–Satterthwaite df), as ``core.ratio_ci`` widens its bootstrap (the percentile bootstrap under-covers with a
  handful of repetitions). n = the smallest group. Computed over the levels recorded for both ccs within the
  statement's range (levels the paper's table does not have are left out).

Same levels on both sides (as ``analysis.claims.streaming``'s means over tests): an aggregate over a table's rows is
judged against the paper's value over the SAME levels. With every level of the paper's range recorded, that is the
printed value. With only some (the ``sample`` profile: 4 of 10), it is the paper's statistic recomputed from its own
table (table1-4.csv) over the levels recorded — provided the table over all its rows gives the printed value within
the claim's tolerance, i.e. the table is what the statement summarises; the band keeps the printed value's width.
Otherwise (Table 4's misprinted cell, S28/S37; Table 4's 2,1 %, S31/S41) the paper's value over the levels recorded
cannot be known and the verdict is "inconclusive", the note naming the missing levels (``same_levels_value``).
Statements without a printed number (a range approx 0 or > 0, a slope < 0) are judged on part of the range only
where the paper's own table satisfies the statement over the same levels (``paper_range_holds``, ``paper_slope``);
"at every level" statements need every level of the paper's range for "reproduced" (``core.all_levels``); a pooled
gap over a sweep whose table prints no per-level value (S14/S15's cwnd) needs the whole sweep. The note gives the
paper's value over all its rows and over the levels recorded, and the levels missing.

* delay_ms_gap_… / received_bytes_gap_westwood_e_minus_westwood: westwood_e minus westwood at EVERY level recorded
  in the range, Welch interval per level, combined by ``core.all_levels`` (intersection-union).
* delay_ms_change_per_bandwidth_step: OLS slope of the runs' delay on bandwidth_mbit (ms per Mbit/s, the paper's step
  is 1 Mbit/s), t interval with n − 2 df, for each cc.
* delay_ms at one level (S25): mean delay of the runs at that level, t interval, for each cc.
* max_cwnd_gap_… / mean_cwnd_gap_…: Welch difference westwood_e − westwood of the runs' cwnd_max / cwnd_mean over all
  the experiment's runs (levels recorded for both ccs; the paper's cwnd figures print no error rate).
* jain_gap_westwood_e_minus_westwood (S42): Welch difference of the bottleneck runs' Jain index.

p_value: the bootstrap fraction outside the target region (level bootstrap), the one-way ANOVA p over the levels
(ranges), the one-sided or TOST t p-value (Welch, one-sample, slope).

Statements naming both ccs ("westwood;westwood_e") get one row: reproduced only when reproduced for each cc, not
reproduced when contradicted for one; the note gives both.

Tolerances (the paper prints none):

* "approx" percentages (received-bytes and delay gains): ±5 percentage points of the printed value.
* "approx" absolute delays (means over rows, delay at a level): ±20 % of the printed value (as studies 001/003).
* "approx" delay gaps (S10, S30): ±max(20 % of |value|, 5 ms).
* "unchanged" / "no more delay" (delay_ms_range approx 0; delay gap approx 0 or <= 0): an equivalence /
  non-inferiority margin δ = max(1 ms, 5 % of westwood's mean delay — over the rows for a range, at the level for a
  gap). The paper's tables show these delays exactly equal, so without a margin equal delays could never be shown;
  5 % is below every delay change the paper calls an increase (Table 2: 10.5 %, Table 4: 11.4 % recomputed).
  delay_ms_range > 0 ("berubah-ubah") needs the range's interval above δ and a one-way ANOVA over the levels with
  p < alpha (the range of noisy means is biased upward); approx 0 is contradicted only under the same two conditions.
* "tidak mengurangi fairness" (S42, >= 0): non-inferiority margin 0.02 on Jain's index.
* Strict comparisons (received bytes gap > 0, cwnd gaps > 0, slope < 0): no margin.

Absolute received bytes depend on the run length, which the paper does not print: only relative quantities are
judged. Absolute delays (ms) are comparable.

Tier: S25 (delay ≈ 0.16 s at 10 Mbit/s) holds by construction of the testbed (``SANITY``: the configured 160 ms
propagation delay plus at most one full queue at 10 Mbit/s lies inside its band): a sanity check, shown apart; every
other statement is about the congestion controls (tier "behaviour"). Each row keeps what it was judged on as
``_judged`` (target region, levels used and missing; not a column) for ``analysis.claims.explain.f004``.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as _st

from analysis.claims import core
from analysis.claims.dualpath import parse_condition

W, E = "westwood", "westwood_e"
LEVEL = {"client_server": "error_rate", "multihop_varied": "error_rate", "multihop_uniform": "bandwidth_mbit",
         "bottleneck": "error_rate"}
TABLE = {"client_server": 1, "multihop_varied": 2, "multihop_uniform": 3, "bottleneck": 4}
PAPER_ROWS = 10
GAIN_PCT_TOL = 5.0            # percentage points
DELAY_REL_TOL = 0.20          # of the printed delay
DELAY_GAP_TOL = (0.20, 5.0)   # (fraction of |value|, ms floor)
EQUIV_REL, EQUIV_ABS_MS = 0.05, 1.0
JAIN_MARGIN = 0.02
NAN = float("nan")
# quantity -> unit of ours and its interval (the scorecard's ``unit``) for a row whose builder names none (a "not run"
# row); the builders' ``unit`` (kept in ``_judged`` for the explanations) agree, Jain's "index" printed as ""
UNIT = {"received_bytes_mean_gain_pct": "%", "delay_ms_mean_over_rows": "ms",
        "delay_ms_mean_gap_westwood_e_minus_westwood": "ms", "delay_ms_mean_gain_pct": "%",
        "delay_ms_range_over_rows": "ms", "delay_ms_gap_westwood_e_minus_westwood": "ms",
        "received_bytes_gap_westwood_e_minus_westwood": "bytes", "delay_ms_change_per_bandwidth_step": "ms per Mbit/s",
        "delay_ms": "ms", "max_cwnd_gap_westwood_e_minus_westwood": "packets",
        "mean_cwnd_gap_westwood_e_minus_westwood": "packets", "jain_gap_westwood_e_minus_westwood": ""}
PRINTED_UNIT = {"index": "", "s": "ms"}   # a builder's or the statement's unit -> the scorecard's (delays in ms here)
KNOWN = {   # the paper's own inconsistencies (data/reference/004/README.md), repeated where a verdict depends on them
    "004-S08": "the Kesimpulan prints 8,3 % for the same table (S35)",
    "004-S10": "the printed means do not follow from Table 2 (README)",
    "004-S11": "12 % follows from the printed means, Table 2 gives 10.5 %",
    "004-S12": "the printed means do not follow from Table 2 (README)",
    "004-S13": "the printed means do not follow from Table 2 (README)",
    "004-S14": "Table 3 has no cwnd column; read as all the sweep's runs",
    "004-S15": "Table 3 has no cwnd column; read as all the sweep's runs",
    "004-S28": "Table 4's first westwood_e cell 32358912 is probably misprinted (README)",
    "004-S31": "2,1 % looks like the gap 0.021376 s x 100; the printed means give 11.4 %",
    "004-S37": "Table 4's first westwood_e cell 32358912 is probably misprinted (README)",
    "004-S41": "2,1 % looks like the gap 0.021376 s x 100; the printed means give 11.4 %",
}
# statements the testbed satisfies by construction, whatever the cc does (tier "sanity", shown apart), with the reason
SANITY = {
    "004-S25": "the delay at 10 Mbit/s lies between the 160 ms propagation delay configured from Table 3's fit "
               "(docs/families.md, Study 004) and that plus one full 50-packet queue at 10 Mbit/s (50 x 606 B x 8 / "
               "10 Mbit/s = 24.2 ms; htb counts 606 bytes per 592-byte packet), inside the ±32 ms band",
}


# --------------------------------------------------------------------------------------------- per-run values

def delays_from_dequeue(df: pd.DataFrame) -> bool:
    """True when every row of ``df`` has the paper's delay, measured from the packet's dequeue at its first link
    (``run_delay_from_dequeue_mean_ms``: runs recorded with the first-link capture, docs/ns2-004.md): the claims then
    judge that delay; otherwise the delay from the sender's capture (``run_delay_mean_ms``) for every run, never a
    mix."""
    col = "run_delay_from_dequeue_mean_ms"
    return bool(len(df)) and col in df and bool(pd.to_numeric(df[col], errors="coerce").notna().all())


def judged_rows(ctx: core.Ctx) -> tuple[pd.DataFrame, set[str], set[str]]:
    """(rows, bad, transient): chain rows ``ctx.df`` as the claims and their explanations use them, without the
    unguarded runs the kernel defect of the BPF ports hit (``bad``) and with no cwnd statistics for the guarded runs
    where one ss sample caught it (``transient``; ``analysis.cc_guard.split``, docs/cc-guard.md). Worked out once per
    ctx (it reads the dataset's meta.json listing)."""
    cache = ctx.__dict__.setdefault("_judged_rows", {})
    if "rows" not in cache:
        from analysis import cc_guard
        df = ctx.df
        bad, transient = cc_guard.split(df)
        out = df[~df["run_id"].astype(str).isin(bad)] if bad else df
        if transient:
            out = out.copy()
            out.loc[out["run_id"].astype(str).isin(transient), ["cwnd_max_pkts", "cwnd_mean_pkts"]] = np.nan
        cache["rows"] = (out, bad, transient)
    return cache["rows"]


def run_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per run of chain rows ``df``: run_id, experiment, cc, error_rate, bandwidth_mbit, rep, received
    (total_received_bytes, bytes), delay (ms: run_delay_from_dequeue_mean_ms, the paper's definition, when every run
    has it, else run_delay_mean_ms: :func:`delays_from_dequeue`), cwnd_max (max over flows), cwnd_mean (mean over
    flows) (packets), jain (jain_index)."""
    cols = ["run_id", "experiment", "cc", "error_rate", "bandwidth_mbit", "rep", "received", "delay", "cwnd_max",
            "cwnd_mean", "jain"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    num = lambda c: pd.to_numeric(df[c], errors="coerce")   # noqa: E731
    delay = "run_delay_from_dequeue_mean_ms" if delays_from_dequeue(df) else "run_delay_mean_ms"
    d = pd.DataFrame({"run_id": df["run_id"].astype(str), "experiment": df["experiment"], "cc": df["cc"],
                      "error_rate": num("error_rate"), "bandwidth_mbit": num("bandwidth_mbit"), "rep": num("rep"),
                      "received": num("total_received_bytes"), "delay": num(delay),
                      "cwnd_max": num("cwnd_max_pkts"), "cwnd_mean": num("cwnd_mean_pkts"), "jain": num("jain_index")})
    g = d.groupby("run_id", sort=True)
    out = g[["experiment", "cc", "error_rate", "bandwidth_mbit", "rep", "received", "delay", "jain"]].first()
    out["cwnd_max"] = g["cwnd_max"].max()
    out["cwnd_mean"] = g["cwnd_mean"].mean()
    return out.reset_index()[cols]


def _key(x) -> float:
    return round(float(x), 9)


def select(runs: pd.DataFrame, experiment: str, cond: dict) -> pd.DataFrame:
    """Runs of ``experiment`` within condition ``cond`` (``parse_condition``: a (lo, hi) range or a value per
    column), with a ``level`` column (the experiment's level variable)."""
    lvl = LEVEL[experiment]
    r = runs[runs["experiment"] == experiment]
    for k, v in cond.items():
        x = pd.to_numeric(r[k], errors="coerce") if k in r else pd.Series(np.nan, index=r.index)
        if isinstance(v, tuple):
            r = r[(x >= v[0] - 1e-9) & (x <= v[1] + 1e-9)]
        elif isinstance(v, float):
            r = r[np.isclose(x, v)]
    r = r.copy()
    r["level"] = [_key(v) if np.isfinite(v) else NAN for v in pd.to_numeric(r[lvl], errors="coerce")]
    return r[np.isfinite(r["level"])]


def groups(sel: pd.DataFrame, column: str, ccs, levels=None) -> dict:
    """{(level, cc): finite values of ``column``} for ``ccs`` at ``levels`` (default every level of ``sel``)."""
    out = {}
    for (lv, cc), g in sel.groupby(["level", "cc"], sort=True):
        if cc not in ccs or (levels is not None and lv not in levels):
            continue
        x = g[column].to_numpy(dtype=float)
        x = x[np.isfinite(x)]
        if x.size:
            out[(lv, cc)] = x
    return out


def common_levels(g: dict, ccs) -> list[float]:
    """Levels at which every cc of ``ccs`` has a value."""
    return sorted(set.intersection(*[{lv for (lv, c) in g if c == cc} for cc in ccs])) if ccs else []


# --------------------------------------------------------------------------------------------- statistics

def gain_pct(levels):
    """mean over levels of 100·(m(l, westwood_e)/m(l, westwood) − 1), %."""
    def f(m):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.mean([100.0 * (m[(lv, E)] / m[(lv, W)] - 1.0) for lv in levels], axis=0)
    return f


def mean_over(levels, cc):
    """mean over levels of m(l, cc)."""
    return lambda m: np.mean([m[(lv, cc)] for lv in levels], axis=0)


def gap_of_means(levels):
    """mean_l m(l, westwood_e) − mean_l m(l, westwood)."""
    return lambda m: mean_over(levels, E)(m) - mean_over(levels, W)(m)


def gain_of_means(levels):
    """100·(mean_l m(l, westwood_e) / mean_l m(l, westwood) − 1), %."""
    def f(m):
        with np.errstate(divide="ignore", invalid="ignore"):
            return 100.0 * (mean_over(levels, E)(m) / mean_over(levels, W)(m) - 1.0)
    return f


def range_over(levels, cc):
    """max_l m(l, cc) − min_l m(l, cc)."""
    def f(m):
        s = np.array([m[(lv, cc)] for lv in levels], dtype=float)
        return s.max(axis=0) - s.min(axis=0)
    return f


def level_bootstrap(g: dict, statistic, *, alpha: float, n_boot: int, seed: int) -> core.Est:
    """``statistic`` of the group means of ``g`` ({key: values}) with the union of a percentile bootstrap interval
    (each group's values resampled on their own) and a delta-method t interval (module docstring)."""
    if not g:
        return core.Est()
    keys = sorted(g)
    sizes = [g[k].size for k in keys]
    n = int(min(sizes))
    det = f"n={n}{'' if n == max(sizes) else f'-{max(sizes)}'} per level and cc"
    means = {k: float(g[k].mean()) for k in keys}
    value = float(statistic(means))
    if n < 2:
        return core.Est(value, NAN, NAN, n, detail=det)
    rng = np.random.default_rng(seed)
    boot = {k: g[k][rng.integers(0, g[k].size, (n_boot, g[k].size))].mean(axis=1) for k in keys}
    rb = np.asarray(statistic(boot), dtype=float)
    rb = rb[np.isfinite(rb)]
    lo = float(np.quantile(rb, alpha / 2, method="inverted_cdf")) if rb.size else NAN
    hi = float(np.quantile(rb, 1 - alpha / 2, method="inverted_cdf")) if rb.size else NAN
    # delta method: var = sum_g (dS/dm_g)^2 s_g^2 / n_g, Welch–Satterthwaite df
    v = []
    for k in keys:
        h = 1e-6 * max(abs(means[k]), 1.0)
        up = dict(means)
        up[k] = means[k] + h
        grad = (float(statistic(up)) - value) / h
        v.append((grad ** 2 * float(g[k].var(ddof=1)) / g[k].size, g[k].size))
    tot = sum(x for x, _ in v)
    if np.isfinite(value) and tot > 0:
        df = tot ** 2 / sum(x ** 2 / (nk - 1) for x, nk in v if x > 0)
        half = float(_st.t.ppf(1 - alpha / 2, df)) * math.sqrt(tot)
        lo = min(lo, value - half) if np.isfinite(lo) else value - half
        hi = max(hi, value + half) if np.isfinite(hi) else value + half
    elif np.isfinite(value) and not (np.isfinite(lo) and np.isfinite(hi)):
        lo = hi = value
    e = core.Est(value, lo, hi, n, detail=det)
    e._boot = rb
    return e


def _with_p(e: core.Est, reg) -> core.Est:
    if np.isfinite(e.lo):
        e.p = core._boot_p(e, reg[0], reg[1]) if hasattr(e, "_boot") else NAN
    return e


def anova_p(g: dict, cc) -> float:
    """p-value of the one-way ANOVA F test over the levels of ``cc``'s groups (NaN when not computable; 0 when the
    groups have no spread but different means, 1 when all values are equal)."""
    xs = [v for (lv, c), v in sorted(g.items()) if c == cc]
    if len(xs) < 2 or sum(x.size for x in xs) <= len(xs):
        return NAN
    if all(np.ptp(x) == 0 for x in xs):
        return 1.0 if len({float(x[0]) for x in xs}) == 1 else 0.0
    return float(_st.f_oneway(*xs).pvalue)


def slope_ci(x, y, alpha: float) -> core.Est:
    """OLS slope of y on x with its t interval (n − 2 df); n = number of points."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.size < 3 or np.ptp(x) == 0:
        return core.Est(NAN, NAN, NAN, int(x.size))
    r = _st.linregress(x, y)
    half = float(_st.t.ppf(1 - alpha / 2, x.size - 2)) * float(r.stderr)
    e = core.Est(float(r.slope), float(r.slope) - half, float(r.slope) + half, int(x.size))
    if r.stderr > 0:
        e.p = float(_st.t.cdf(r.slope / r.stderr, x.size - 2))    # one-sided, for "slope < 0"
    return e


# --------------------------------------------------------------------------------------------- the paper's tables

def paper_table(directory: Path, experiment: str, metric: str) -> dict:
    """{(level, cc): value} of the experiment's table (table1-4.csv) for ``metric`` (received_bytes in bytes,
    delay_ms in ms: the printed seconds x 1000); {} without the file."""
    p = Path(directory) / f"table{TABLE[experiment]}.csv"
    if not p.is_file():
        return {}
    t = pd.read_csv(p)
    t = t[(t["experiment"] == experiment) & (t["metric"] == metric)]
    scale = 1000.0 if metric == "delay_ms" else 1.0
    lvl = LEVEL[experiment]
    return {(_key(r[lvl]), r["cc"]): float(r["value"]) * scale for _, r in t.iterrows()}


def _paper_stat(table: dict, make, levels) -> float:
    """``make(levels)`` applied to the paper's table values (NaN when a cell is missing or no level is given)."""
    try:
        return float(make(levels)(table)) if levels else NAN
    except KeyError:
        return NAN


def _levels_txt(name, levels) -> str:
    return f"{name}={', '.join(f'{lv:g}' for lv in levels)}"


def table_levels(directory: Path, experiment: str, cond: dict) -> list[float]:
    """The rows (levels of the experiment's level variable) of the paper's table within the statement's condition
    ``cond`` (a (lo, hi) range or one value of that variable; none: every row); [] without the table."""
    t = paper_table(directory, experiment, "received_bytes")
    out = sorted({lv for lv, _ in t})
    c = cond.get(LEVEL[experiment])
    if isinstance(c, tuple):
        out = [lv for lv in out if c[0] - 1e-9 <= lv <= c[1] + 1e-9]
    elif isinstance(c, float):
        out = [lv for lv in out if np.isclose(lv, c)]
    return out


def same_levels_value(printed: float, rec_all: float, rec_sub: float, tol: float, missing,
                      unit: str = "") -> tuple[float, str]:
    """The paper's value of an aggregate over the levels recorded here, and where it comes from (module docstring).

    ``printed``: the statement's value; ``rec_all`` / ``rec_sub``: the statistic recomputed from the paper's table over
    all its rows / over the levels recorded; ``tol``: the claim's tolerance (the statistic's unit, ``unit`` for the
    text); ``missing``: the paper's levels not recorded (None: unknown, no table). Returns (printed, "printed")
    when every level is recorded; (rec_sub, "table") when the table over all its rows gives the printed value within
    ``tol``; else (NaN, why)."""
    if missing is not None and not missing:
        return float(printed), "printed"
    if missing is None:
        return NAN, "without the paper's table the levels of its range are unknown"
    if not (np.isfinite(rec_all) and np.isfinite(rec_sub)):
        return NAN, "the paper's table lacks a cell of the levels recorded"
    if abs(rec_all - float(printed)) > tol:
        u = f" {unit}" if unit else ""
        return NAN, (f"the paper's table over all its rows gives {core.fmt(rec_all, 5)}{u}, which differs from the "
                     f"printed {float(printed):g}{u} by {core.fmt(abs(rec_all - printed), 3)}, more than the "
                     f"tolerance ±{tol:.3g}: the table cannot stand in for the printed value at the levels recorded")
    return float(rec_sub), "table"


def partial(verdict: str, note: str, why: str) -> tuple[str, str]:
    """(verdict, note) of a statement over the paper's range judged on part of it when the paper's side cannot be
    restricted to the same levels (``why``): a decided verdict becomes "inconclusive"."""
    if verdict in ("reproduced", "not reproduced"):
        return "inconclusive", f"{why}: the levels recorded cannot decide it (they alone say {verdict})"
    return verdict, "; ".join(t for t in (note, why) if t)


# --------------------------------------------------------------------------------------------- not run

def not_run_reason(ctx: core.Ctx, experiment: str, cc: str, cond_text, levels_seen) -> str:
    """Why ``experiment`` has no usable run of ``cc`` under the statement's condition: a SKIPPED reason, failed or
    incomplete runs (the run listing), runs only at other levels, or no such run in the campaign."""
    r = ctx.runs
    what = f"{experiment} with {cc}"
    if r is not None and len(r) and "experiment" in r and "cc" in r:
        r = r[~r["reason"].astype(str).str.startswith("superseded")]
        cfg = r[(r["experiment"] == experiment) & (r["cc"] == cc)]
        sk = cfg[cfg["status"] == "skipped"]
        if len(sk):
            return str(sk["reason"].iloc[0])
        if not len(levels_seen):
            bad = cfg[cfg["reason"].astype(str).str.startswith("analysis failed")]
            if len(bad):
                return f"{what}: {bad['reason'].iloc[0]}"
            if (cfg["status"] == "incomplete").any():
                return f"{what}: {int((cfg['status'] == 'incomplete').sum())} run(s) incomplete (no COMPLETE marker)"
    if len(levels_seen):
        return (f"no runs of {what} at {cond_text} (levels recorded: "
                f"{', '.join(f'{lv:g}' for lv in sorted(levels_seen))})")
    return f"no runs of {what} in this campaign"


# --------------------------------------------------------------------------------------------- one statement

class _S:
    """One statement with its selection: the experiment's runs within the condition, the level variable."""

    def __init__(self, ctx: core.Ctx, runs: pd.DataFrame, st, directory: Path):
        self.ctx, self.st, self.directory = ctx, st, directory
        self.exp = st.experiment
        self.level = LEVEL.get(self.exp)
        self.cond = parse_condition(st.condition)
        self.all_runs = runs
        self.sel = select(runs, self.exp, self.cond) if self.level else runs.iloc[0:0]
        self.ccs = [E, W] if "vs" in str(st.ccs) else [c for c in str(st.ccs).split(";") if c]
        self.notes = [KNOWN[st.id]] if st.id in KNOWN else []
        self.paper_levels = table_levels(directory, self.exp, self.cond) if self.level else []

    def span(self, g: dict, ccs) -> tuple[list[float], list[float] | None]:
        """(levels to use, the paper's levels missing): the levels of ``g`` with a value for every cc of ``ccs`` that
        the paper's table has (all recorded ones, and missing None, without the table)."""
        rec = common_levels(g, ccs)
        if not self.paper_levels:
            return rec, None
        used = [lv for lv in rec if lv in self.paper_levels]
        return used, [lv for lv in self.paper_levels if lv not in used]

    def target(self) -> float:
        """The printed value in our unit (s -> ms)."""
        return float(self.st.value) * (1000.0 if self.st.unit == "s" else 1.0)

    def paper_value(self) -> str:
        st, v = self.st, self.target()
        unit = "ms" if st.unit == "s" else st.unit
        if st.quantity == "delay_ms_change_per_bandwidth_step":
            unit = "ms per Mbit/s"
        printed = f" (printed {st.value:g} s)" if st.unit == "s" and st.value != 0 else ""
        every = " at every level" if st.quantity in ("delay_ms_gap_westwood_e_minus_westwood",
                                                     "received_bytes_gap_westwood_e_minus_westwood") else ""
        if st.relation == "approx":
            return f"about {v:g} {unit}{printed}{every}"
        return f"{st.relation} {v:g} {unit}{every}"

    def column_unit(self) -> str:
        """The unit of ours and its interval from the statement's quantity (:data:`UNIT`; else its printed unit)."""
        u = UNIT.get(self.st.quantity, str(self.st.unit) if isinstance(self.st.unit, str) else "")
        return PRINTED_UNIT.get(u, u)

    def statement(self) -> str:
        cond = self.st.condition if isinstance(self.st.condition, str) and self.st.condition else "all runs"
        return f"{self.st.quantity} {self.paper_value()} ({self.st.ccs}; {cond})"

    def missing(self, column: str) -> str | None:
        """A "not run" reason when a needed cc has no finite ``column`` value in the selection (the reasons of every
        such cc, joined), else None."""
        why = []
        for cc in self.ccs:
            s = self.sel[(self.sel["cc"] == cc) & np.isfinite(pd.to_numeric(self.sel[column], errors="coerce"))]
            if s.empty:
                if not self.sel[self.sel["cc"] == cc].empty:     # runs there, but the value is missing (e.g. no ss)
                    why.append(f"no finite {column} value in the runs of {self.exp} with {cc}")
                    continue
                every = select(self.all_runs, self.exp, {})
                seen = sorted(set(every.loc[every["cc"] == cc, "level"]))
                why.append(not_run_reason(self.ctx, self.exp, cc, self.st.condition, seen))
        return "; ".join(dict.fromkeys(why)) or None

    def row(self, est, test, verdict, note_parts, **judged) -> dict:
        """A claim row; ``judged``: what the verdict was decided on (``region``: (lo, hi) of the target, ``levels``
        used, ``missing`` levels of the paper's range, ``per_level``: whether n counts repetitions per level or runs
        pooled over ``levels``, ...), kept on the row as ``_judged`` for the explanations (not a column). The row's
        ``unit`` column: ``judged["unit"]`` when the builder gives one (Jain's "index" printed ""), else
        :meth:`column_unit`."""
        note = "; ".join(n for n in list(note_parts) + self.notes if n)
        tier = "sanity" if self.st.id in SANITY else "behaviour"
        if tier == "sanity":
            note = "; ".join(t for t in (note, f"sanity check: {SANITY[self.st.id]}") if t)
        unit = PRINTED_UNIT.get(judged["unit"], judged["unit"]) if "unit" in judged else self.column_unit()
        r = core.row(self.st.id, self.st.section, self.exp, self.statement(), self.paper_value(), est, test,
                     verdict, note, tier=tier, unit=unit)
        r["_judged"] = {"experiment": self.exp, "level_name": self.level, "paper_levels": list(self.paper_levels),
                        "quantity": self.st.quantity, "ccs": list(self.ccs), "relation": self.st.relation, **judged}
        return r

    def not_run(self, reason) -> dict:
        return self.row(None, "", "not run", [reason])

    def coverage(self, levels, ccs=(E, W), missing=None) -> str:
        who = "both ccs" if len(ccs) > 1 else ccs[0]
        rows = len(self.paper_levels) if self.paper_levels else f"{PAPER_ROWS} (table{TABLE[self.exp]}.csv missing)"
        gone = f"; missing {', '.join(f'{lv:g}' for lv in missing)}" if missing else ""
        return (f"over the {len(levels)} {self.level} level(s) recorded for {who} "
                f"({', '.join(f'{lv:g}' for lv in levels)}; the paper's table has {rows}{gone})")


def _aggregate(s: _S, column: str, make, ccs, tol: float, metric: str) -> dict:
    """A statistic over the table's rows (``make(levels)``) with its level bootstrap, against the paper's value over
    the same levels ± tol (``same_levels_value``)."""
    ctx, st = s.ctx, s.st
    why = s.missing(column)
    if why:
        return s.not_run(why)
    g = groups(s.sel, column, ccs)
    levels, missing = s.span(g, ccs)
    if not levels:
        return s.not_run(f"no {s.level} level of the paper's table has runs of both {' and '.join(ccs)}")
    g = {k: v for k, v in g.items() if k[0] in levels}
    e = level_bootstrap(g, make(levels), alpha=ctx.alpha, n_boot=ctx.n_boot, seed=ctx.seed)
    table = paper_table(s.directory, s.exp, metric)
    unit = "ms" if metric == "delay_ms" and "pct" not in st.quantity else "%"
    rec_all = _paper_stat(table, make, s.paper_levels)
    rec_sub = _paper_stat(table, make, levels)
    target, source = same_levels_value(s.target(), rec_all, rec_sub, tol, missing, unit)
    if np.isfinite(target):
        reg = core.region(st.relation, target, tol=tol)
        _with_p(e, reg)
        v, why = core.decide(e, reg)
        against = ("judged against the printed value" if source == "printed" else
                   f"judged against Table {TABLE[s.exp]} over the same levels, {core.fmt(target, 5)} {unit}")
    else:
        v, why = "inconclusive", f"the paper's value over the levels recorded is unknown: {source}"
        against = ""
    paper = (f"paper: printed {s.paper_value()}; recomputed from Table {TABLE[s.exp]}: {core.fmt(rec_all, 5)} {unit} "
             f"over its {len(s.paper_levels)} rows, {core.fmt(rec_sub, 5)} {unit} over the levels recorded here")
    tol_unit = "percentage points" if unit == "%" else unit
    return s.row(e, "level bootstrap", v, [why, s.coverage(levels, ccs, missing), against,
                                           f"tolerance ±{tol:.3g} {tol_unit}", paper, e.detail],
                 region=(reg[0], reg[1]) if np.isfinite(target) else None, levels=levels, missing=missing,
                 coverage="same" if np.isfinite(target) else "unknown", coverage_why=source,
                 per_level=True, unit=unit, printed=s.target(), target=target, source=source, rec_all=rec_all,
                 rec_sub=rec_sub)


def _combine(parts: list) -> tuple:
    """(estimate, verdict, note) of a statement that must hold for every cc: ``parts`` = [(cc, Est, verdict, note)]."""
    vs = [p[2] for p in parts]
    if "not reproduced" in vs:
        i = vs.index("not reproduced")
        v = "not reproduced"
    elif all(x == "reproduced" for x in vs):
        i, v = 0, "reproduced"
    else:
        i = next(k for k, x in enumerate(vs) if x != "reproduced")
        v = "inconclusive"
    txt = "; ".join(f"{cc}: {core.fmt(e.value, 4)} [{core.fmt(e.lo, 4)}, {core.fmt(e.hi, 4)}] {vv}"
                    + (f" ({n})" if n else "") for cc, e, vv, n in parts)
    return parts[i][1], v, f"shown: {parts[i][0]}; {txt}"


def paper_range_holds(relation: str, paper_range_ms: float, paper_mean_w_ms: float) -> bool:
    """Whether the paper's own table satisfies a range statement over some levels: its range (ms) within
    δ = max(1 ms, 5 % of its westwood mean, ms) for "approx" 0, above δ for "> 0"; False when not computable."""
    if not (np.isfinite(paper_range_ms) and np.isfinite(paper_mean_w_ms)):
        return False
    delta = max(EQUIV_ABS_MS, EQUIV_REL * paper_mean_w_ms)
    return paper_range_ms <= delta if relation == "approx" else paper_range_ms > delta


def _shown(parts: list, e) -> str:
    """The cc of ``parts`` ([(cc, Est, verdict, note)]) whose estimate ``e`` is the one a row shows."""
    return next(cc for cc, pe, *_ in parts if pe is e)


def _range(s: _S) -> dict:
    """delay_ms_range_over_rows for each cc named: approx 0 ("unchanged") or > 0 ("varies"). On part of the paper's
    range only where the paper's table satisfies the statement over the same levels (``paper_range_holds``)."""
    ctx, st = s.ctx, s.st
    why = s.missing("delay")
    if why:
        return s.not_run(why)
    g = groups(s.sel, "delay", s.ccs)
    levels, missing = s.span(g, s.ccs)
    if len(levels) < 2:
        return s.not_run(f"a range needs two {s.level} levels of the paper's table with runs of "
                         f"{' and '.join(s.ccs)}; recorded: {', '.join(f'{lv:g}' for lv in levels) or 'none'}")
    table = paper_table(s.directory, s.exp, "delay_ms")
    parts, regions, capped = [], {}, {}
    for cc in s.ccs:
        gc = {k: v for k, v in g.items() if k[1] == cc and k[0] in levels}
        e = level_bootstrap(gc, range_over(levels, cc), alpha=ctx.alpha, n_boot=ctx.n_boot, seed=ctx.seed)
        ref = W if W in s.ccs else cc
        delta = max(EQUIV_ABS_MS, EQUIV_REL * float(mean_over(levels, ref)(
            {k: float(v.mean()) for k, v in g.items() if k[0] in levels})))
        p = anova_p(gc, cc)
        e.p = p
        differs = np.isfinite(p) and p < ctx.alpha
        regions[cc] = core.region("approx", 0.0, tol=delta) if st.relation == "approx" else core.region(">", delta)
        if st.relation == "approx":
            v, n = core.decide(e, regions[cc])
            if v == "not reproduced" and not differs:
                v, n = "inconclusive", f"range above δ but ANOVA p={core.fmt(p, 3)} >= alpha"
        else:
            v, n = core.decide(e, regions[cc])
            if v == "reproduced" and not differs:
                v, n = "inconclusive", f"range above δ but ANOVA p={core.fmt(p, 3)} >= alpha"
        rec = _paper_stat(table, lambda lv: range_over(lv, cc), s.paper_levels)
        rec_sub = _paper_stat(table, lambda lv: range_over(lv, cc), levels)
        if missing is None or (missing and not paper_range_holds(
                st.relation, rec_sub, _paper_stat(table, lambda lv: mean_over(lv, ref), levels))):
            capped[cc] = ("the paper's table does not show the statement over the levels recorded" if missing
                          else "without the paper's table the levels of its range are unknown")
            v, n = partial(v, n, capped[cc])
        parts.append((cc, e, v, "; ".join(t for t in [n, f"δ={delta:.3g} ms", f"ANOVA p={core.fmt(p, 3)}",
                                                      f"paper's range {core.fmt(rec, 4)} ms over its rows, "
                                                      f"{core.fmt(rec_sub, 4)} ms over the levels recorded"] if t)))
    e, v, note = _combine(parts)
    shown = _shown(parts, e)
    return s.row(e, "level bootstrap + ANOVA", v, [note, s.coverage(levels, missing=missing), e.detail],
                 region=regions[shown][:2], shown=shown, levels=levels, missing=missing, per_level=True, unit="ms",
                 coverage="impossible" if shown in capped else "same", coverage_why=capped.get(shown, ""))


def _gap_every_level(s: _S, column: str, metric: str) -> dict:
    """westwood_e − westwood at every level recorded in the range (Welch per level, ``core.all_levels``: "reproduced"
    only with every level of the paper's range recorded)."""
    ctx, st = s.ctx, s.st
    why = s.missing(column)
    if why:
        return s.not_run(why)
    g = groups(s.sel, column, [E, W])
    levels, missing = s.span(g, [E, W])
    if not levels:
        return s.not_run(f"no {s.level} level of the paper's table has runs of both {E} and {W}")
    per = []
    for lv in levels:
        x, y = g[(lv, E)], g[(lv, W)]
        if column == "delay" and (st.relation in ("<=", "approx")):
            delta = max(EQUIV_ABS_MS, EQUIV_REL * float(y.mean()))
            reg = core.region("<=", delta) if st.relation == "<=" else core.region("approx", 0.0, tol=delta)
        else:
            reg = core.region(st.relation, s.target())
        per.append((f"{s.level}={lv:g}", core.two_sample(x, y, reg, ctx.alpha), reg))
    expected = len(s.paper_levels) if s.paper_levels else max(PAPER_ROWS, len(levels))
    e, v, note = core.all_levels(per, expected, s.level)
    at = next((lv for lv, (_, pe, _) in zip(levels, per) if pe is e), None)
    table = paper_table(s.directory, s.exp, metric)
    gaps = [table[(lv, E)] - table[(lv, W)] for lv in levels if (lv, E) in table and (lv, W) in table]
    unit = "ms" if metric == "delay_ms" else "bytes"
    paper = (f"paper's Table {TABLE[s.exp]} gap over the levels recorded: "
             f"{core.fmt(min(gaps), 6)} to {core.fmt(max(gaps), 6)} {unit}" if gaps else "")
    margin = ("margin δ = max(1 ms, 5 % of westwood's mean delay at the level)"
              if column == "delay" and st.relation in ("<=", "approx") else "")
    return s.row(e, "Welch t", v, [note, s.coverage(levels, missing=missing), margin, paper,
                                   e.detail if e is not None else ""],
                 region=next((reg[:2] for _, pe, reg in per if pe is e), None), shown_level=at, levels=levels,
                 missing=missing, per_level=True, unit=unit, coverage="every")


def _slope(s: _S) -> dict:
    """delay_ms_change_per_bandwidth_step < 0, for each cc: OLS slope of the runs' delay on bandwidth_mbit. On part of
    the paper's range only where the paper's own slope over the same levels satisfies the statement."""
    ctx, st = s.ctx, s.st
    why = s.missing("delay")
    if why:
        return s.not_run(why)
    g = groups(s.sel, "delay", s.ccs)
    levels, missing = s.span(g, s.ccs)
    if len(levels) < 2:
        return s.not_run(f"a slope needs two {s.level} levels of the paper's table; recorded: "
                         f"{', '.join(f'{lv:g}' for lv in levels) or 'none'}")
    reg = core.region(st.relation, s.target())
    table = paper_table(s.directory, s.exp, "delay_ms")
    parts, capped = [], {}
    for cc in s.ccs:
        xs = [(lv, y) for lv in levels for y in g[(lv, cc)]]
        e = slope_ci([a for a, _ in xs], [b for _, b in xs], ctx.alpha)
        e.n = int(min(g[(lv, cc)].size for lv in levels))   # repetitions per level, as the other checks
        v, n = core.decide(e, reg)
        ps, ps_sub = paper_slope(table, cc, s.paper_levels), paper_slope(table, cc, levels)
        if missing is None or (missing and not (np.isfinite(ps_sub) and reg[0] < ps_sub < reg[1])):
            capped[cc] = ("the paper's own slope over the levels recorded does not satisfy the statement" if missing
                          else "without the paper's table the levels of its range are unknown")
            v, n = partial(v, n, capped[cc])
        slopes = (f"paper's slope {core.fmt(ps, 4)} ms per Mbit/s over its rows, {core.fmt(ps_sub, 4)} over the "
                  f"levels recorded")
        parts.append((cc, e, v, "; ".join(t for t in [n, slopes] if t)))
    e, v, note = _combine(parts)
    shown = _shown(parts, e)
    return s.row(e, "OLS slope t", v, [note, "ms per Mbit/s", s.coverage(levels, missing=missing)],
                 region=reg[:2], shown=shown, levels=levels, missing=missing, per_level=True, unit="ms per Mbit/s",
                 coverage="impossible" if shown in capped else "same", coverage_why=capped.get(shown, ""))


def paper_slope(table: dict, cc: str, levels) -> float:
    """OLS slope of the paper's delays (ms) of ``cc`` on the level at ``levels`` (ms per level unit); NaN when fewer
    than two of them have a cell."""
    pl = [lv for lv in levels if (lv, cc) in table]
    return float(_st.linregress(pl, [table[(lv, cc)] for lv in pl]).slope) if len(pl) >= 2 else NAN


def _at_level(s: _S) -> dict:
    """delay_ms at one level (S25), for each cc: mean of the runs there against value ± 20 %."""
    ctx, st = s.ctx, s.st
    why = s.missing("delay")
    if why:
        return s.not_run(why)
    tol = DELAY_REL_TOL * abs(s.target())
    reg = core.region(st.relation, s.target(), tol=tol)
    table = paper_table(s.directory, s.exp, "delay_ms")
    lv = _key(s.cond[s.level])
    parts = []
    for cc in s.ccs:
        x = s.sel.loc[s.sel["cc"] == cc, "delay"].to_numpy(dtype=float)
        e = core.one_sample(x[np.isfinite(x)], reg, ctx.alpha)
        v, n = core.decide(e, reg)
        paper = f"paper's table {core.fmt(table.get((lv, cc)), 6)} ms"
        parts.append((cc, e, v, "; ".join(t for t in [n, paper] if t)))
    e, v, note = _combine(parts)
    return s.row(e, "one-sample t", v, [note, f"{s.level}={lv:g}", f"tolerance ±{tol:.3g} ms"],
                 region=reg[:2], shown=_shown(parts, e), levels=[lv], missing=[], per_level=True, unit="ms",
                 coverage="same")


def _pooled_gap(s: _S, column: str, margin: float = 0.0) -> dict:
    """westwood_e − westwood of a per-run value over all the experiment's runs (the levels recorded for both ccs),
    Welch interval; ``margin``: a non-inferiority margin below the bound. A statement over a sweep (a condition on the
    level variable, S14/S15) is decided only with every level of the sweep: the paper prints no per-level value of
    these quantities to restrict it to fewer."""
    ctx, st = s.ctx, s.st
    why = s.missing(column)
    if why:
        return s.not_run(why)
    g = groups(s.sel, column, [E, W])
    over_sweep = s.level in s.cond
    levels, missing = s.span(g, [E, W]) if over_sweep else (common_levels(g, [E, W]), [])
    if not levels:
        return s.not_run(f"no {s.level} level has runs of both {E} and {W}")
    x = np.concatenate([g[(lv, E)] for lv in levels])
    y = np.concatenate([g[(lv, W)] for lv in levels])
    reg = core.region(st.relation, s.target() - margin)
    e = core.two_sample(x, y, reg, ctx.alpha)
    v, why = core.decide(e, reg)
    capped = ""
    if over_sweep and (missing is None or missing):
        capped = (f"the statement is over the paper's whole sweep and Table {TABLE[s.exp]} prints no per-level "
                  f"{column} to restrict it to the levels recorded")
        v, why = partial(v, why, capped)
    extra = f"non-inferiority margin {margin:g}" if margin else ""
    return s.row(e, "Welch t", v, [why, f"pooled {s.coverage(levels, missing=missing)}", extra, e.detail],
                 region=reg[:2], levels=levels, missing=missing, per_level=False,
                 unit="index" if column == "jain" else "packets",
                 coverage="impossible" if capped else ("same" if over_sweep else "pooled"), coverage_why=capped)


def claims(ctx: core.Ctx, statements: pd.DataFrame, directory) -> list[dict]:
    """One row per statement of study 004 (columns ``core.COLUMNS`` minus paper), judged on ``ctx.df`` (chain rows).
    Runs whose ss samples show the kernel defect of the BPF ports (``analysis.cc_guard.affected_runs``: a window of
    millions of packets, recorded before testbed/cc/cc_guard.h; docs/cc-guard.md) are left out, and every row says
    how many: such a run measures the defect, not the congestion control."""
    rows, bad, transient = judged_rows(ctx)
    runs = run_table(rows)
    out = []
    for st in statements.itertuples(index=False):
        s = _S(ctx, runs, st, Path(directory))
        q = st.quantity
        if s.level is None:
            out.append(s.not_run(f"unknown experiment {st.experiment!r} for study 004"))
        elif q == "received_bytes_mean_gain_pct":
            out.append(_aggregate(s, "received", gain_pct, [E, W], GAIN_PCT_TOL, "received_bytes"))
        elif q == "delay_ms_mean_over_rows":
            cc = s.ccs[0]
            out.append(_aggregate(s, "delay", lambda lv, cc=cc: mean_over(lv, cc), [cc],
                                  DELAY_REL_TOL * abs(s.target()), "delay_ms"))
        elif q == "delay_ms_mean_gap_westwood_e_minus_westwood":
            tol = max(DELAY_GAP_TOL[0] * abs(s.target()), DELAY_GAP_TOL[1])
            out.append(_aggregate(s, "delay", gap_of_means, [E, W], tol, "delay_ms"))
        elif q == "delay_ms_mean_gain_pct":
            out.append(_aggregate(s, "delay", gain_of_means, [E, W], GAIN_PCT_TOL, "delay_ms"))
        elif q == "delay_ms_range_over_rows":
            out.append(_range(s))
        elif q == "delay_ms_gap_westwood_e_minus_westwood":
            out.append(_gap_every_level(s, "delay", "delay_ms"))
        elif q == "received_bytes_gap_westwood_e_minus_westwood":
            out.append(_gap_every_level(s, "received", "received_bytes"))
        elif q == "delay_ms_change_per_bandwidth_step":
            out.append(_slope(s))
        elif q == "delay_ms" and isinstance(s.cond.get(s.level), float):
            out.append(_at_level(s))
        elif q == "max_cwnd_gap_westwood_e_minus_westwood":
            out.append(_pooled_gap(s, "cwnd_max"))
        elif q == "mean_cwnd_gap_westwood_e_minus_westwood":
            out.append(_pooled_gap(s, "cwnd_mean"))
        elif q == "jain_gap_westwood_e_minus_westwood":
            out.append(_pooled_gap(s, "jain", margin=JAIN_MARGIN))
        else:
            out.append(s.not_run(f"no measurement defined for quantity {q!r}"))
    left = []
    if bad:
        left.append(f"{len(bad)} run(s) left out: their ss samples show the kernel defect of the BPF congestion "
                    f"controls (a window of millions of packets; docs/cc-guard.md)")
    if transient:
        left.append(f"the cwnd of {len(transient)} guarded run(s) left out: one ss sample caught the kernel defect's "
                    f"value before the guard repaired it (docs/cc-guard.md)")
    for r in out:
        r["note"] = "; ".join(t for t in (r.get("note"), *left) if t)
    return out
