"""Claims of study 004 (Sukiswo, "Perbaikan TCP Westwood+": Westwood+e vs Westwood+), one check per statement of
``data/reference/004/statements.csv``, judged on the per-(run, flow) rows of ``analysis.families.chain`` with the
verdict rules of ``analysis.claims.core`` (reproduced / not reproduced / inconclusive / not run with a reason).

Per run (the replicate): ``received`` = total_received_bytes (bytes over all the run's flows), ``delay`` =
run_delay_mean_ms (mean one-way delay of every received data packet of the run, ms), ``cwnd_max`` = the largest of the
flows' cwnd_max_pkts, ``cwnd_mean`` = the mean of the flows' cwnd_mean_pkts (packets), ``jain`` = jain_index.
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
  statement's range; the note names them and gives the paper's own value recomputed from its table (table1-4.csv)
  over all its rows and over the same levels, beside the printed one.
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


# --------------------------------------------------------------------------------------------- per-run values

def run_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per run of chain rows ``df``: run_id, experiment, cc, error_rate, bandwidth_mbit, rep, received
    (total_received_bytes, bytes), delay (run_delay_mean_ms, ms), cwnd_max (max over flows), cwnd_mean (mean over
    flows) (packets), jain (jain_index)."""
    cols = ["run_id", "experiment", "cc", "error_rate", "bandwidth_mbit", "rep", "received", "delay", "cwnd_max",
            "cwnd_mean", "jain"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    num = lambda c: pd.to_numeric(df[c], errors="coerce")   # noqa: E731
    d = pd.DataFrame({"run_id": df["run_id"].astype(str), "experiment": df["experiment"], "cc": df["cc"],
                      "error_rate": num("error_rate"), "bandwidth_mbit": num("bandwidth_mbit"), "rep": num("rep"),
                      "received": num("total_received_bytes"), "delay": num("run_delay_mean_ms"),
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

    def row(self, est, test, verdict, note_parts) -> dict:
        note = "; ".join(n for n in list(note_parts) + self.notes if n)
        return core.row(self.st.id, self.st.section, self.exp, self.statement(), self.paper_value(), est, test,
                        verdict, note)

    def not_run(self, reason) -> dict:
        return self.row(None, "", "not run", [reason])

    def coverage(self, levels, ccs=(E, W)) -> str:
        who = "both ccs" if len(ccs) > 1 else ccs[0]
        return (f"over the {len(levels)} {self.level} level(s) recorded for {who} "
                f"({', '.join(f'{lv:g}' for lv in levels)}; the paper's table has {PAPER_ROWS})")


def _aggregate(s: _S, column: str, make, ccs, tol: float, metric: str) -> dict:
    """A statistic over the table's rows (``make(levels)``) with its level bootstrap, against value ± tol."""
    ctx, st = s.ctx, s.st
    why = s.missing(column)
    if why:
        return s.not_run(why)
    g = groups(s.sel, column, ccs)
    levels = common_levels(g, ccs)
    if not levels:
        return s.not_run(f"no {s.level} level has runs of both {' and '.join(ccs)}")
    g = {k: v for k, v in g.items() if k[0] in levels}
    e = level_bootstrap(g, make(levels), alpha=ctx.alpha, n_boot=ctx.n_boot, seed=ctx.seed)
    reg = core.region(st.relation, s.target(), tol=tol)
    _with_p(e, reg)
    v, why = core.decide(e, reg)
    table = paper_table(s.directory, s.exp, metric)
    paper_levels = sorted({lv for lv, _ in table})
    unit = "ms" if metric == "delay_ms" and "pct" not in st.quantity else "%"
    rec_all = _paper_stat(table, make, paper_levels)
    rec_sub = _paper_stat(table, make, [lv for lv in levels if any(np.isclose(lv, paper_levels))])
    paper = (f"paper: printed {s.paper_value()}; recomputed from Table {TABLE[s.exp]}: {core.fmt(rec_all, 5)} {unit} "
             f"over its {len(paper_levels)} rows, {core.fmt(rec_sub, 5)} {unit} over the levels recorded here")
    tol_unit = "percentage points" if unit == "%" else unit
    return s.row(e, "level bootstrap", v, [why, s.coverage(levels, ccs), f"tolerance ±{tol:.3g} {tol_unit}", paper,
                                           e.detail])


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


def _range(s: _S) -> dict:
    """delay_ms_range_over_rows for each cc named: approx 0 ("unchanged") or > 0 ("varies")."""
    ctx, st = s.ctx, s.st
    why = s.missing("delay")
    if why:
        return s.not_run(why)
    g = groups(s.sel, "delay", s.ccs)
    levels = common_levels(g, s.ccs)
    if len(levels) < 2:
        return s.not_run(f"a range needs two {s.level} levels with runs of {' and '.join(s.ccs)}; "
                         f"recorded: {', '.join(f'{lv:g}' for lv in levels) or 'none'}")
    table = paper_table(s.directory, s.exp, "delay_ms")
    parts = []
    for cc in s.ccs:
        gc = {k: v for k, v in g.items() if k[1] == cc and k[0] in levels}
        e = level_bootstrap(gc, range_over(levels, cc), alpha=ctx.alpha, n_boot=ctx.n_boot, seed=ctx.seed)
        delta = max(EQUIV_ABS_MS, EQUIV_REL * float(mean_over(levels, W if W in s.ccs else cc)(
            {k: float(v.mean()) for k, v in g.items() if k[0] in levels})))
        p = anova_p(gc, cc)
        e.p = p
        differs = np.isfinite(p) and p < ctx.alpha
        if st.relation == "approx":
            v, n = core.decide(e, core.region("approx", 0.0, tol=delta))
            if v == "not reproduced" and not differs:
                v, n = "inconclusive", f"range above δ but ANOVA p={core.fmt(p, 3)} >= alpha"
        else:
            v, n = core.decide(e, core.region(">", delta))
            if v == "reproduced" and not differs:
                v, n = "inconclusive", f"range above δ but ANOVA p={core.fmt(p, 3)} >= alpha"
        paper_levels = sorted({lv for lv, c in table if c == cc})
        rec = _paper_stat(table, lambda lv: range_over(lv, cc), paper_levels)
        rec_sub = _paper_stat(table, lambda lv: range_over(lv, cc),
                              [lv for lv in levels if any(np.isclose(lv, paper_levels))])
        parts.append((cc, e, v, "; ".join(t for t in [n, f"δ={delta:.3g} ms", f"ANOVA p={core.fmt(p, 3)}",
                                                      f"paper's range {core.fmt(rec, 4)} ms over its rows, "
                                                      f"{core.fmt(rec_sub, 4)} ms over the levels recorded"] if t)))
    e, v, note = _combine(parts)
    return s.row(e, "level bootstrap + ANOVA", v, [note, s.coverage(levels), e.detail])


def _gap_every_level(s: _S, column: str, metric: str) -> dict:
    """westwood_e − westwood at every level recorded in the range (Welch per level, ``core.all_levels``)."""
    ctx, st = s.ctx, s.st
    why = s.missing(column)
    if why:
        return s.not_run(why)
    g = groups(s.sel, column, [E, W])
    levels = common_levels(g, [E, W])
    if not levels:
        return s.not_run(f"no {s.level} level has runs of both {E} and {W}")
    per = []
    for lv in levels:
        x, y = g[(lv, E)], g[(lv, W)]
        if column == "delay" and (st.relation in ("<=", "approx")):
            delta = max(EQUIV_ABS_MS, EQUIV_REL * float(y.mean()))
            reg = core.region("<=", delta) if st.relation == "<=" else core.region("approx", 0.0, tol=delta)
        else:
            reg = core.region(st.relation, s.target())
        per.append((f"{s.level}={lv:g}", core.two_sample(x, y, reg, ctx.alpha), reg))
    e, v, note = core.all_levels(per, len(levels), s.level)
    table = paper_table(s.directory, s.exp, metric)
    gaps = [table[(lv, E)] - table[(lv, W)] for lv in levels if (lv, E) in table and (lv, W) in table]
    unit = "ms" if metric == "delay_ms" else "bytes"
    paper = (f"paper's Table {TABLE[s.exp]} gap over the levels recorded: "
             f"{core.fmt(min(gaps), 6)} to {core.fmt(max(gaps), 6)} {unit}" if gaps else "")
    margin = ("margin δ = max(1 ms, 5 % of westwood's mean delay at the level)"
              if column == "delay" and st.relation in ("<=", "approx") else "")
    return s.row(e, "Welch t", v, [note, s.coverage(levels), margin, paper, e.detail if e is not None else ""])


def _slope(s: _S) -> dict:
    """delay_ms_change_per_bandwidth_step < 0, for each cc: OLS slope of the runs' delay on bandwidth_mbit."""
    ctx, st = s.ctx, s.st
    why = s.missing("delay")
    if why:
        return s.not_run(why)
    g = groups(s.sel, "delay", s.ccs)
    levels = common_levels(g, s.ccs)
    if len(levels) < 2:
        return s.not_run(f"a slope needs two {s.level} levels; recorded: "
                         f"{', '.join(f'{lv:g}' for lv in levels) or 'none'}")
    reg = core.region(st.relation, s.target())
    table = paper_table(s.directory, s.exp, "delay_ms")
    parts = []
    for cc in s.ccs:
        xs = [(lv, y) for lv in levels for y in g[(lv, cc)]]
        e = slope_ci([a for a, _ in xs], [b for _, b in xs], ctx.alpha)
        e.n = int(min(g[(lv, cc)].size for lv in levels))   # repetitions per level, as the other checks
        v, n = core.decide(e, reg)
        pl = sorted(lv for lv, c in table if c == cc)
        ps = _st.linregress(pl, [table[(lv, cc)] for lv in pl]).slope if len(pl) >= 2 else NAN
        parts.append((cc, e, v, "; ".join(t for t in [n, f"paper's slope {core.fmt(ps, 4)} ms per Mbit/s"] if t)))
    e, v, note = _combine(parts)
    return s.row(e, "OLS slope t", v, [note, "ms per Mbit/s", s.coverage(levels)])


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
    return s.row(e, "one-sample t", v, [note, f"{s.level}={lv:g}", f"tolerance ±{tol:.3g} ms"])


def _pooled_gap(s: _S, column: str, margin: float = 0.0) -> dict:
    """westwood_e − westwood of a per-run value over all the experiment's runs (the levels recorded for both ccs),
    Welch interval; ``margin``: a non-inferiority margin below the bound."""
    ctx, st = s.ctx, s.st
    why = s.missing(column)
    if why:
        return s.not_run(why)
    g = groups(s.sel, column, [E, W])
    levels = common_levels(g, [E, W])
    if not levels:
        return s.not_run(f"no {s.level} level has runs of both {E} and {W}")
    x = np.concatenate([g[(lv, E)] for lv in levels])
    y = np.concatenate([g[(lv, W)] for lv in levels])
    reg = core.region(st.relation, s.target() - margin)
    e = core.two_sample(x, y, reg, ctx.alpha)
    v, why = core.decide(e, reg)
    extra = f"non-inferiority margin {margin:g}" if margin else ""
    return s.row(e, "Welch t", v, [why, f"pooled {s.coverage(levels)}", extra, e.detail])


def claims(ctx: core.Ctx, statements: pd.DataFrame, directory) -> list[dict]:
    """One row per statement of study 004 (columns ``core.COLUMNS`` minus paper), judged on ``ctx.df`` (chain rows)."""
    runs = run_table(ctx.df)
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
    return out
