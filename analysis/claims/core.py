"""Shared machinery of the claim checks: row selection, per-configuration samples, intervals and verdict rules.

Verdict rules (conservative; docs/claims.md):
* "not run": no complete run of a needed configuration (the note says why, e.g. the SKIPPED reason).
* "inconclusive": fewer than ``MIN_REPS`` (3) usable repetitions in a needed group, or the interval straddles the
  bound / the tolerance band, or (for "at every level" claims) not every level of the paper's range was run and
  no level contradicts the claim.
* "reproduced": the whole (1 - alpha) interval lies on the claimed side of the bound, or inside the tolerance band,
  at every level of the paper's range.
* "not reproduced": at some level the whole interval lies on the other side of the bound / outside the band.
Intervals: Student t for means (``analysis.stats.summary``), Welch for differences of means, for ratios of means
the union of a percentile bootstrap and a delta-method t interval (log scale). A two-sided (1 - alpha) interval is
used also for one-sided claims, which makes each decision a test at level alpha/2 (conservative).
* "not comparable": the paper lacks what a comparison needs (e.g. study 001's absolute values without its LTE/WiFi
  link model, a ratio to the paper's own zero baseline). Its explanation says what is missing.

Tiers: ``behaviour`` claims are about the congestion controls and count in a study's headline; ``sanity`` claims
hold by construction of the testbed (the shaper's rate, an RTT above the propagation delay, a bitrate taken from the
paper's own table) and are shown apart. A ``substitute_for`` row judges a statement on a substitute mechanism (study
001's default MPTCP scheduler for the redundant one this kernel lacks): shown apart, never the statement's verdict.

Explanations: every verdict other than "reproduced" carries one, ``{kind, text, evidence}`` (``explain``), as data;
the kinds are ``EXPLANATION_KINDS``.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as _st

from analysis import stats

MIN_REPS = 3
CAPACITY_MBPS = 20.0   # two 10 Mbit/s paths (paper 000, section 2)
VERDICTS = ("reproduced", "not reproduced", "inconclusive", "not comparable", "not run")
TIERS = ("behaviour", "sanity")
# explanation kinds (docs/claims.md): what each means and what its text and evidence must hold
EXPLANATION_KINDS = {
    "paper-inconsistent": "the paper's own numbers contradict the statement or each other; the text gives the "
                          "arithmetic from the paper's values",
    "paper-incomplete": "the paper does not give what a comparison needs (a link model, a threshold, a non-zero "
                        "baseline); the text names what is missing",
    "testbed-difference": "a named difference between our testbed and the paper's; the evidence links the "
                          "measurement that shows its effect (an ablation, a validation document)",
    "metric-definition": "the paper likely measured another quantity; the text says which, with our value under "
                         "that definition where we can compute it",
    "too-few-runs": "the interval is too wide to decide at this number of repetitions; the text gives the "
                    "repetitions a decision would need",
    "underpowered": "the dataset holds the paper's protocol in full (its repetitions of every configuration) and "
                    "the interval still straddles: the difference is below what that protocol resolves; the text "
                    "gives the repetitions a decision would need (analysis.claims.protocol)",
    "open": "nothing measured explains the difference yet; the text names the experiment that would decide it "
            "(docs/claims.md lists every open one)",
}
COLUMNS = ["paper", "claim_id", "section", "experiment", "statement", "paper_value", "ours", "ci_low", "ci_high",
           "unit", "n", "test", "p_value", "effect_size", "verdict", "note", "tier", "substitute_for",
           "explanation_kind", "explanation_text", "explanation_evidence"]
SINGLE_FLOW = ("single_vs_multi", "link_delay", "loss_rate")
NAN = float("nan")


@dataclass
class Ctx:
    """What every claim check needs: the dataset rows, the run listing and the statistics settings."""
    df: pd.DataFrame
    runs: pd.DataFrame
    alpha: float = 0.05
    n_boot: int = 9999
    seed: int = 0


# --------------------------------------------------------------------------------------------- selection

def _eq(col: pd.Series, value) -> pd.Series:
    if value is None:
        return col.isna()
    if isinstance(value, float) or isinstance(value, int):
        return np.isclose(pd.to_numeric(col, errors="coerce").astype(float), float(value))
    return col == value


def _arr(ctx: "Ctx", col: str) -> np.ndarray:
    cache = ctx.__dict__.setdefault("_arrays", {})
    if col not in cache:
        c = ctx.df[col]
        if col in ("link_delay_ms", "loss_pct", "cbr_mbps", "flow", "path_skew_ms"):
            cache[col] = pd.to_numeric(c, errors="coerce").to_numpy(dtype=float)
        else:
            cache[col] = np.array([None if (v is None or (isinstance(v, float) and math.isnan(v))) else v
                                   for v in c.tolist()], dtype=object)
    return cache[col]


def _mask(ctx: "Ctx", col: str, value) -> np.ndarray:
    a = _arr(ctx, col)
    if a.dtype == float:
        if value is None:
            return np.isnan(a)
        return np.isclose(a, float(value))
    if value is None:
        return np.array([v is None for v in a], dtype=bool)
    return a == value


def rows(ctx: Ctx, *, flow: int | None = 1, single_flow: bool = False, **cond) -> pd.DataFrame:
    """Rows of ``ctx.df`` matching every ``column=value`` in ``cond`` (None matches missing values);
    ``single_flow=True`` keeps single-flow runs of any single-flow experiment (the same configuration is pooled
    across experiments, e.g. single_vs_multi multipath d10 l0 and link_delay d10)."""
    df = ctx.df
    if df.empty:
        return df
    key = (flow, single_flow, tuple(sorted((k, str(v)) for k, v in cond.items())))
    memo = ctx.__dict__.setdefault("_rows_memo", {})
    if key in memo:
        return memo[key]
    m = np.ones(len(df), dtype=bool)
    if flow is not None:
        m &= _mask(ctx, "flow", flow)
    if single_flow:
        m &= np.isin(_arr(ctx, "experiment"), list(SINGLE_FLOW)) & _mask(ctx, "cc2", None) & _mask(ctx, "cbr_mbps", None)
    for k, v in cond.items():
        m &= _mask(ctx, k, v)
    memo[key] = df.iloc[np.flatnonzero(m)]
    return memo[key]


def sample(sel: pd.DataFrame, column: str) -> np.ndarray:
    """Finite values of ``column``, one per run (replicate; the first row of each run)."""
    if sel.empty:
        return np.zeros(0)
    _, first = np.unique(sel["run_id"].to_numpy(dtype=object).astype(str), return_index=True)
    x = pd.to_numeric(sel[column].iloc[np.sort(first)], errors="coerce").to_numpy(dtype=float)
    return x[np.isfinite(x)]


def _match_runs(r: pd.DataFrame, match: dict) -> pd.Series:
    m = pd.Series(True, index=r.index)
    for k, v in (match or {}).items():
        if k not in r.columns:
            continue
        col = r[k]
        vals = list(v) if isinstance(v, (list, tuple, set)) else [v]
        mm = pd.Series(False, index=r.index)
        for one in vals:
            mm |= _eq(col, one)
        m &= mm
    return m


def not_run_reason(ctx: Ctx, ccs, what: str, match: dict | None = None) -> str:
    """Why no complete run exists for configuration ``what`` involving ``ccs``. Among the listed runs matching
    ``match`` (columns of the run listing, scalars or lists): the SKIPPED reason, "incomplete" or the analysis
    failure; when the campaign has no such run at all, says so (adding a cc's SKIPPED reason seen elsewhere)."""
    r = ctx.runs
    ccs = [c for c in ([ccs] if isinstance(ccs, str) else list(ccs)) if c]
    if r is None or not len(r):
        return f"no complete runs of {what} in this campaign"
    r = r[~r["reason"].astype(str).str.startswith("superseded")]
    uses = pd.Series(False, index=r.index)
    for c in ccs:
        uses |= (r["cc"] == c) | (r["cc2"] == c)
    cfg = r[uses & _match_runs(r, match)] if match is not None else r.iloc[0:0]
    if len(cfg):
        sk = cfg[cfg["status"] == "skipped"]
        if len(sk):
            return str(sk["reason"].iloc[0])
        bad = cfg[cfg["reason"].astype(str).str.startswith("analysis failed")]
        if len(bad):
            return f"{what}: {bad['reason'].iloc[0]}"
        if (cfg["status"] == "incomplete").any():
            return f"{what}: {int((cfg['status'] == 'incomplete').sum())} run(s) incomplete (no COMPLETE marker)"
    sk = r[uses & (r["status"] == "skipped")]
    if len(sk):
        return str(sk["reason"].iloc[0])
    return f"no complete runs of {what} in this campaign"


# --------------------------------------------------------------------------------------------- intervals

@dataclass
class Est:
    """An estimate with its (1 - alpha) interval over ``n`` replicates (n: the smaller group for 2 samples)."""
    value: float = NAN
    lo: float = NAN
    hi: float = NAN
    n: int = 0
    p: float = NAN            # p-value of the claim's test (one-sided or TOST), NaN when not computable
    effect: float = NAN
    detail: str = ""          # e.g. "n=4/5"


def mean_ci(x, alpha) -> Est:
    """Mean with its Student t interval (the t_low/t_high formula of ``analysis.stats.summary``, without its
    bootstrap); n < 2 gives the value only."""
    x = np.asarray(x, float)
    if x.size == 0:
        return Est()
    if x.size == 1:
        return Est(float(x[0]), NAN, NAN, 1)
    n = x.size
    m = float(x.mean()) if np.ptp(x) else float(x[0])
    sd = float(x.std(ddof=1)) if np.ptp(x) else 0.0
    tq = float(_st.t.ppf(1 - alpha / 2, n - 1))
    se = sd / math.sqrt(n)
    return Est(m, m - tq * se, m + tq * se, n)


def welch_diff_ci(x, y, alpha) -> Est:
    """mean(x) - mean(y) with the Welch (1947) interval; n = min(n_x, n_y)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    n = int(min(x.size, y.size))
    det = f"n={x.size}/{y.size}"
    if x.size == 0 or y.size == 0:
        return Est(n=n, detail=det)
    d = float(x.mean() - y.mean())
    if x.size < 2 or y.size < 2:
        return Est(d, NAN, NAN, n, detail=det)
    va, vb = x.var(ddof=1) / x.size, y.var(ddof=1) / y.size
    se2 = va + vb
    if se2 == 0:
        return Est(d, d, d, n, detail=det)
    df = se2 ** 2 / (va ** 2 / (x.size - 1) + vb ** 2 / (y.size - 1))
    tq = float(_st.t.ppf(1 - alpha / 2, df))
    se = math.sqrt(se2)
    e = Est(d, d - tq * se, d + tq * se, n, detail=det)
    e._se, e._df = se, df  # for p-values
    return e


def ratio_ci(x, y, alpha, n_boot, seed) -> Est:
    """mean(x) / mean(y) with the union of a percentile bootstrap interval (x and y resampled independently,
    ``n_boot`` resamples, fixed ``seed``) and the delta-method t interval on the log scale; inf when mean(y) is 0."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    n = int(min(x.size, y.size))
    det = f"n={x.size}/{y.size}"
    if x.size == 0 or y.size == 0:
        return Est(n=n, detail=det)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = float(x.mean() / y.mean()) if y.mean() != 0 else (math.inf if x.mean() > 0 else NAN)
    if x.size < 2 or y.size < 2:
        return Est(r, NAN, NAN, n, detail=det)
    rng = np.random.default_rng(seed)
    xb = x[rng.integers(0, x.size, (n_boot, x.size))].mean(axis=1)
    yb = y[rng.integers(0, y.size, (n_boot, y.size))].mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rb = np.where(yb != 0, xb / np.where(yb != 0, yb, 1), np.where(xb > 0, np.inf, np.nan))
    rb = rb[~np.isnan(rb)]
    if rb.size == 0:
        return Est(r, NAN, NAN, n, detail=det)
    lo = float(np.quantile(rb, alpha / 2, method="inverted_cdf"))
    hi = float(np.quantile(rb, 1 - alpha / 2, method="inverted_cdf"))
    # the percentile bootstrap under-covers with a handful of reps: widen to the delta-method interval on the
    # log scale, R * exp(+-t * sqrt(se_x^2/mx^2 + se_y^2/my^2)), t with Welch-Satterthwaite df (conservative union)
    mx, my = float(x.mean()), float(y.mean())
    if mx > 0 and my > 0:
        v1, v2 = x.var(ddof=1) / x.size / mx ** 2, y.var(ddof=1) / y.size / my ** 2
        if v1 + v2 > 0:
            df = (v1 + v2) ** 2 / (v1 ** 2 / (x.size - 1) + v2 ** 2 / (y.size - 1))
            h = float(_st.t.ppf(1 - alpha / 2, df)) * math.sqrt(v1 + v2)
            lo, hi = min(lo, r * math.exp(-h)), max(hi, r * math.exp(h))
    e = Est(r, lo, hi, n, detail=det)
    e._boot = rb
    return e


# --------------------------------------------------------------------------------------------- p-values

def _t_p(est: Est, x, target_lo, target_hi):
    """One-sided or TOST p-value for 'the mean lies in [target_lo, target_hi]' (either end may be +-inf)."""
    x = np.asarray(x, float)
    if hasattr(est, "_se"):
        se, df = est._se, est._df
    elif x.size >= 2:
        se, df = float(x.std(ddof=1)) / math.sqrt(x.size), x.size - 1
    else:
        return NAN
    ps = []
    if se == 0:
        return 0.0 if target_lo < est.value < target_hi else 1.0
    if np.isfinite(target_lo):
        ps.append(float(_st.t.sf((est.value - target_lo) / se, df)))
    if np.isfinite(target_hi):
        ps.append(float(_st.t.cdf((est.value - target_hi) / se, df)))
    return max(ps) if ps else NAN


def _boot_p(est: Est, target_lo, target_hi):
    rb = getattr(est, "_boot", None)
    if rb is None:
        return NAN
    return float(np.mean((rb <= target_lo) | (rb >= target_hi)))


# --------------------------------------------------------------------------------------------- verdicts

def region(relation: str, value=None, low=None, high=None, tol=0.0):
    """Target region (lo, hi, lo_open, hi_open) of a relation: '>' '>=' '<' '<=' 'approx' (value ± tol),
    'between' [low, high], 'approx_between' [low - tol, high + tol]."""
    if relation == ">":
        return value, math.inf, True, False
    if relation == ">=":
        return value, math.inf, False, False
    if relation == "<":
        return -math.inf, value, False, True
    if relation == "<=":
        return -math.inf, value, False, False
    if relation == "approx":
        return value - tol, value + tol, False, False
    if relation == "between":
        return low, high, False, False
    if relation == "approx_between":
        return low - tol, high + tol, False, False
    raise ValueError(f"unknown relation {relation!r}")


STRADDLES = "interval straddles the bound/tolerance"   # an undecided interval's note; its projection follows "; "


def decide(est: Est, reg, *, min_n=MIN_REPS) -> tuple[str, str]:
    """Verdict of one estimate against a target region; returns (verdict, note)."""
    lo_t, hi_t, lo_open, hi_open = reg
    if est.n == 0:
        return "not run", "no data"
    if math.isnan(est.value):
        return "inconclusive", "estimate undefined (e.g. 0/0)"
    if est.n < min_n:
        return "inconclusive", f"n={est.n} < {min_n} reps"
    lo, hi = est.lo, est.hi
    if not (np.isfinite(lo) or math.isinf(lo)) or not (np.isfinite(hi) or math.isinf(hi)):
        return "inconclusive", "no interval"
    inside_lo = lo > lo_t if lo_open else lo >= lo_t
    inside_hi = hi < hi_t if hi_open else hi <= hi_t
    if inside_lo and inside_hi:
        return "reproduced", ""
    below = hi <= lo_t if lo_open else hi < lo_t
    above = lo >= hi_t if hi_open else lo > hi_t
    if below or above:
        return "not reproduced", ""
    need = reps_to_decide(est, reg)
    return "inconclusive", STRADDLES if need is None else f"{STRADDLES}; {need}"


def reps_to_decide(est: Est, reg, *, alpha: float = 0.05, max_n: int = 1000) -> str | None:
    """How many repetitions (per group) would decide an estimate whose interval straddles a bound of ``reg``, if the
    mean and the spread stayed as measured. For one bound b inside the interval: the smallest n' with
    t(1 − alpha/2, n' − 1)·s/√n' < |mean − b|, where s = h·√n / t(1 − alpha/2, n − 1) is the spread the measured
    half-width h on b's side implies. A mean inside the target region needs the interval clear of every bound inside
    it (the largest n'); a mean outside needs it clear of the nearest bound only. A projection, not a power analysis
    (the spread's own sampling error is ignored). None when the interval is not finite or no bound lies inside it."""
    lo_t, hi_t = reg[0], reg[1]
    v, lo, hi, n = est.value, est.lo, est.hi, est.n
    if n < 2 or not all(math.isfinite(x) for x in (v, lo, hi)):
        return None
    inside = [b for b in (lo_t, hi_t) if math.isfinite(b) and lo <= b <= hi]
    if not inside:
        return None
    if not lo_t <= v <= hi_t:
        inside = [min(inside, key=lambda x: abs(v - x))]
    tq = float(_st.t.ppf(1 - alpha / 2, n - 1))
    need = 0
    for b in inside:
        d, h = abs(v - b), (v - lo) if b < v else (hi - v)
        if d == 0 or h <= 0:
            return "the estimate sits on the bound: no number of repetitions would decide it at this mean"
        m = stats.n_for_halfwidth(h * math.sqrt(n) / tq, d, alpha, n_min=n + 1, max_n=max_n)
        if m is None:
            return f"more than {max_n} repetitions would be needed at this mean and spread"
        need = max(need, m)
    return f"about {need} repetitions would decide it at this mean and spread"


def reps_from_note(note: str) -> int | None:
    """The repetitions :func:`reps_to_decide` projected into a verdict's note ("about N repetitions"), or None."""
    m = re.search(r"about (\d+) repetitions", note)
    return int(m.group(1)) if m else None


def fmt(x, nd=3, missing="nan"):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return missing
    if isinstance(x, float) and math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.{nd}g}"


def dominance(ctx: Ctx, claim_id: str, section: str, experiment: str, samples: dict, hi: list, lo: list,
              statement: str, paper_value: str, not_run_note: str, unit: str = "", pairs: list | None = None) -> dict:
    """Every group in ``hi`` has a higher mean than every group in ``lo`` (``samples``: {label: per-run values};
    ``pairs``: the (higher, lower) comparisons instead of every combination, e.g. within each level only): Welch t
    per comparison, Holm-adjusted within the claim; "reproduced" when every difference is positive and significant,
    "not reproduced" when one is negative and significant (with at least MIN_REPS runs a group), else
    "inconclusive". Ours is the smallest difference of means (its Welch interval); ``not_run_note``: the note when no
    group has runs (a group without runs is named in the note)."""
    test = "Welch t per (higher, lower) comparison, Holm-adjusted; ours = smallest difference of means"
    pairs = [(h, low) for h in hi for low in lo] if pairs is None else pairs
    missing = [g for g in hi + lo if np.asarray(samples.get(g, ())).size == 0]
    if len(missing) == len(hi + lo):
        return row(claim_id, section, experiment, statement, paper_value, None, test, "not run", not_run_note,
                   unit=unit)
    ests, ps, labels, small = [], [], [], []
    for h, low in pairs:
        x, y = np.asarray(samples.get(h, ()), float), np.asarray(samples.get(low, ()), float)
        if x.size == 0 or y.size == 0:
            continue
        e = welch_diff_ci(x, y, ctx.alpha)
        if e.n < MIN_REPS:
            small.append(f"{h}-{low} n={e.detail[2:]}")
        try:
            p = stats.welch_t(x, y)["p"] if min(x.size, y.size) >= 2 else float("nan")
        except Exception:  # noqa: BLE001 - zero variance in both
            p = 0.0 if e.value != 0 else 1.0
        ests.append(e)
        ps.append(p)
        labels.append((h, low))
    if not ests:
        return row(claim_id, section, experiment, statement, paper_value, None, test, "not run",
                   f"groups not run: {', '.join(map(str, missing))} ({not_run_note})", unit=unit)
    worst = min(range(len(ests)), key=lambda i: ests[i].value)
    e = ests[worst]
    fin = [i for i, p in enumerate(ps) if np.isfinite(p)]
    adj = np.full(len(ps), np.nan)
    if fin:
        adj[fin] = stats.holm([ps[i] for i in fin])
    e.p = float(np.nanmax(adj)) if fin else float("nan")
    name = [f"{h}-{low}" for h, low in labels]
    notes = [f"smallest difference {name[worst]}"]
    if missing:
        notes.append(f"not run: {', '.join(map(str, missing))}")
    if small or missing or not fin:
        verdict = "inconclusive"
        if small:
            notes.insert(0, f"< {MIN_REPS} reps: {', '.join(small)}")
        if [i for i in fin if ests[i].value < 0 and adj[i] < ctx.alpha and ests[i].n >= MIN_REPS]:
            verdict = "not reproduced"
    else:
        contra = [i for i in fin if ests[i].value < 0 and adj[i] < ctx.alpha]
        if contra:
            verdict = "not reproduced"
            notes.insert(0, f"reversed and significant: {name[contra[0]]}")
        elif all(ests[i].value > 0 and adj[i] < ctx.alpha for i in range(len(ests))):
            verdict = "reproduced"
        else:
            verdict = "inconclusive"
            notes.insert(0, "some differences not significant after Holm")
    try:
        h, low = labels[worst]
        e.effect = stats.hedges_g(np.asarray(samples[h], float), np.asarray(samples[low], float))
    except Exception:  # noqa: BLE001 - too few reps or zero pooled sd
        e.effect = float("nan")
    return row(claim_id, section, experiment, statement, paper_value, e, test, verdict, "; ".join(notes), unit=unit)


def row(claim_id, section, experiment, statement, paper_value, est: Est | None, test, verdict, note, *,
        tier: str = "behaviour", substitute_for: str | None = None, unit: str = "") -> dict:
    """One claim row (``COLUMNS`` minus paper). ``unit``: the printed unit of ``ours``, ``ci_low`` and ``ci_high``
    ("Mbit/s", "kbit/s", "ms", "%", "packets", "bytes", "x" for a ratio, "" for a dimensionless quantity such as
    Jain's index); a "not run" row carries it too."""
    est = est or Est()
    if tier not in TIERS:
        raise ValueError(f"unknown tier {tier!r}")
    return {"claim_id": claim_id, "section": section, "experiment": experiment, "statement": statement,
            "paper_value": paper_value, "ours": est.value, "ci_low": est.lo, "ci_high": est.hi, "unit": unit,
            "n": int(est.n), "test": test, "p_value": est.p, "effect_size": est.effect, "verdict": verdict,
            "note": note, "tier": tier, "substitute_for": substitute_for, "explanation_kind": None,
            "explanation_text": None, "explanation_evidence": None}


def explain(r: dict, kind: str, text: str, **evidence) -> dict:
    """Attach an explanation ``{kind, text, evidence}`` to the claim row ``r`` (in place; returned). ``evidence``:
    the numbers behind the text (floats, with units in their names) and references inside the repository (a doc
    section, a bundle, a notebook)."""
    if kind not in EXPLANATION_KINDS:
        raise ValueError(f"unknown explanation kind {kind!r} (one of {', '.join(EXPLANATION_KINDS)})")
    if not text or not str(text).strip():
        raise ValueError("an explanation needs a text")
    r["explanation_kind"], r["explanation_text"] = kind, str(text)
    r["explanation_evidence"] = {k: _plain(v) for k, v in evidence.items()} or None
    return r


def _plain(v):
    """A JSON-ready evidence value: numpy scalars to Python, floats rounded to 4 significant digits, NaN to None and
    an infinite value to "inf" / "-inf" (as ``mpcc scorecard --json`` writes the claims' own numbers: strict JSON has
    neither)."""
    if hasattr(v, "item") and not isinstance(v, (list, tuple, dict)):
        v = v.item()
    if isinstance(v, float):
        if math.isnan(v):
            return None
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return float(f"{v:.4g}")
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    return v


def headline(res: pd.DataFrame) -> pd.DataFrame:
    """The rows a study's headline counts are over: behavioural claims judged on the paper's own mechanisms (no
    sanity check, no substitute row)."""
    if res.empty:
        return res
    return res[(res["tier"] == "behaviour") & res["substitute_for"].isna()]


def _cohen_d(x, ref):
    x = np.asarray(x, float)
    if x.size < 2 or not np.isfinite(ref):
        return NAN
    sd = float(x.std(ddof=1))
    return float((x.mean() - ref) / sd) if sd > 0 else NAN


def _ref_point(reg):
    lo, hi = reg[0], reg[1]
    if np.isfinite(lo) and np.isfinite(hi):
        return (lo + hi) / 2
    return lo if np.isfinite(lo) else hi


def one_sample(x, reg, alpha) -> Est:
    """Mean of x with t interval, p of 'mean in region' (one-sided t or TOST), Cohen's d vs the bound."""
    e = mean_ci(x, alpha)
    if e.n >= 2:
        e.p = _t_p(e, x, reg[0], reg[1])
        e.effect = _cohen_d(x, _ref_point(reg))
    return e


def two_sample(x, y, reg, alpha) -> Est:
    """Welch difference mean(x) - mean(y), p of 'difference in region', Hedges' g of x vs y."""
    e = welch_diff_ci(x, y, alpha)
    if np.isfinite(e.lo):
        e.p = _t_p(e, x, reg[0], reg[1])
        try:
            e.effect = stats.hedges_g(x, y)
        except Exception:  # noqa: BLE001 - zero pooled sd: effect undefined
            e.effect = NAN
    return e


def ratio(x, y, reg, ctx: Ctx) -> Est:
    """Bootstrap ratio of means, bootstrap p of 'ratio in region', Cliff's delta of x vs y."""
    e = ratio_ci(x, y, ctx.alpha, ctx.n_boot, ctx.seed)
    if np.isfinite(e.lo) or math.isinf(e.lo):
        e.p = _boot_p(e, reg[0], reg[1])
        if len(x) and len(y):
            e.effect = stats.cliffs_delta(x, y)
    return e


# --------------------------------------------------------------------------------------------- levels

def all_levels(per_level: list[tuple[str, Est, tuple]], expected_levels: int, level_name: str) -> tuple[Est | None, str, str]:
    """Combine per-level estimates of a claim that must hold at EVERY level of the paper's range
    (intersection-union: each level is tested at level alpha, no multiplicity correction needed).

    ``per_level``: (label, estimate, region) for each level that has data. Returns (deciding estimate, verdict,
    note): any contradicted level -> "not reproduced" (that level is shown); all reproduced and every level run
    -> "reproduced"; otherwise "inconclusive" (the level closest to failing is shown)."""
    if not per_level:
        return None, "not run", ""
    decided = [(lab, e, decide(e, reg), reg) for lab, e, reg in per_level]
    bad = [(lab, e, v) for lab, e, v, _ in decided if v[0] == "not reproduced"]
    levels_run = len(decided)
    cov = f"{levels_run} of {expected_levels} {level_name} levels run"
    if bad:
        lab, e, v = bad[0]
        more = f" (+{len(bad) - 1} more)" if len(bad) > 1 else ""
        return e, "not reproduced", f"contradicted at {lab}{more}; {cov}"
    incon = [t for t in decided if t[2][0] != "reproduced"]
    if incon:
        lab, e, v, reg = max(incon, key=lambda t: (t[1].p if np.isfinite(t[1].p) else 2.0))
        # each level's reason once; the projection (reps_to_decide) of the example level only
        why = sorted({STRADDLES if w[1].startswith(STRADDLES) else w[1] for _, _, w, _ in incon})
        need = reps_to_decide(e, reg) if v[1].startswith(STRADDLES) else None
        return e, "inconclusive", f"{'; '.join(why)} (e.g. {lab}{': ' + need if need else ''}); {cov}"
    lab, e, _, _ = max(decided, key=lambda t: (t[1].p if np.isfinite(t[1].p) else -1.0))
    if levels_run < expected_levels:
        return e, "inconclusive", f"holds at every level run but only {cov}; least margin at {lab}"
    return e, "reproduced", f"holds at all {cov.split(' of ')[1]}; least margin at {lab}"


def level_claim(ctx: Ctx, *, claim_id, section, experiment, statement, paper_value, test, levels, level_name,
                est_at, reason_ccs, what, notes=(), match=None, tier="behaviour", unit: str = "") -> dict:
    """One "holds at every level of the paper's range" claim. ``est_at(level)`` returns (Est, region) or None
    when that level has no complete run; ``tier`` and ``unit`` (of the per-level estimate) as in :func:`row`."""
    per = []
    for lv in levels:
        r = est_at(lv)
        if r is not None and r[0].n > 0:
            per.append((f"{level_name}={lv:g}", r[0], r[1]))
    extra = [n for n in notes if n]
    if not per:
        return row(claim_id, section, experiment, statement, paper_value, None, test, "not run",
                   "; ".join([not_run_reason(ctx, reason_ccs, what, match)] + extra), tier=tier, unit=unit)
    e, v, note = all_levels(per, len(levels), level_name)
    det = [e.detail] if e is not None and e.detail else []
    return row(claim_id, section, experiment, statement, paper_value, e, test, v, "; ".join([note] + det + extra),
               tier=tier, unit=unit)
