"""Study 000's fidelity ablation (``campaigns/fidelity000.yaml``; docs/netem-semantics.md): which switch queue model and
which UDP datagram size moves each quantity behind a claim our recordings do not reproduce, and how far.

**Arms.** ``queue_model`` in ``fifo-after-delay`` (the baseline: every earlier namespace recording), ``tbf-netem``
(recipe A: one limit of 100 for delay line and queue), ``netem-tbf`` (recipe B as the paper's Linux 4.15 had it);
for UDP runs also ``udp_len_bytes`` None (iperf3's default here: one datagram per packet) or 8192 (the paper era's
iperf3 default: 6 IPv4 fragments per datagram). A run's arm is read from its run_id, which ``mpcc/families/f000.py``
builds from the parameters (``__q-MODEL`` when a queue model is set, ``__lenNB`` when udp_len_bytes is): no suffix
means fifo-after-delay and None (:func:`arms`).

**Quantities** (:data:`QUANTITIES`): the numbers the claims are about, per configuration, from the per-flow rows of
``analysis.dataset.load_campaign`` (one value per run: replicates are runs). Plain ones are a column's mean over runs
(``goodput_mbps`` of flow 1 or 2 in Mbit/s, each flow's over its own run as the claims take it, ``rtt_mean_ms`` in
ms, Jain's index of a two-flow run's goodputs, ``analysis.metrics.fairness.pair_jain``);
differences are between two configurations' means (e.g. the loss-based flow's mean RTT minus BBR's at the same link
delay), with a Welch standard error. Each estimate carries mean, standard error and Welch degrees of freedom; the
95 % interval is t-based.

**Effects** (:func:`effects`): each arm minus the baseline arm (fifo-after-delay, and None for the datagram size) in
the same configuration, with a 95 % interval (standard errors combined, Welch-Satterthwaite degrees of freedom);
``moved`` when the interval excludes 0 (beyond run-to-run noise), ``toward_paper`` when the arm's distance to the
paper's value (:func:`distance`) is smaller than the baseline's. :func:`best_fit` counts, per claim, in how many
configurations each arm is nearest the paper: an inference about which recipe the paper's numbers fit best, not a
measurement of the paper's testbed.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as _st

from analysis import reference
from analysis.claims import core
from analysis.errors import AnalysisError
from analysis.metrics.fairness import pair_jain

BASELINE = ("fifo-after-delay", None)
QUEUE_MODELS = ("fifo-after-delay", "tbf-netem", "netem-tbf")
CAPACITY_MBPS = 20.0            # two 10 Mbit/s paths
ALPHA = 0.05
FAITHFUL = ("tbf-netem", "netem-tbf")
#: the paper era's iperf3 UDP datagram (bytes; docs/netem-semantics.md section 5): the other paper-faithful setting
PAPER_DATAGRAM = 8192
#: campaigns/paper.yaml's switch and UDP datagram: the paper protocol's faithful settings (issue 28 item 5)
PAPER_ARM = ("tbf-netem", PAPER_DATAGRAM)
_Q_RE = re.compile(r"__q-([a-z0-9-]+?)(?=__rep\d+$|__)")
_LEN_RE = re.compile(r"__len(\d+)B(?=__)")


def arms(run_ids) -> pd.DataFrame:
    """(queue_model, udp_len_bytes) of each run_id: ``__q-MODEL`` and ``__lenNB`` of the run_id grammar of
    mpcc/families/f000.py; without them fifo-after-delay and None (<NA>)."""
    rid = pd.Series(list(run_ids), dtype=object).astype(str)
    qm = rid.str.extract(_Q_RE, expand=False).fillna("fifo-after-delay")
    ln = pd.to_numeric(rid.str.extract(_LEN_RE, expand=False), errors="coerce").astype("Int64")
    return pd.DataFrame({"run_id": rid, "queue_model": qm, "udp_len_bytes": ln})


def arm_set(df: pd.DataFrame) -> list[tuple]:
    """The distinct (queue_model, udp_len_bytes or None) arms of a study-000 dataset's rows, sorted. The datagram
    size belongs to the UDP runs (udp_fairness) only: a queue model's arms are its UDP runs' sizes, and
    (queue_model, None) when it has no UDP runs; its TCP-only runs belong to every arm of it (:func:`select_arm`).
    So a dataset recorded with one queue model and one UDP size (campaigns/paper.yaml) is one arm."""
    if "run_id" not in df or df.empty:
        return []
    a = arms(df["run_id"].unique())
    udp = a["run_id"].str.startswith("udp_fairness")
    out = set()
    for q, g in a.groupby("queue_model", sort=False):
        lens = {None if pd.isna(n) else int(n) for n in g.loc[udp[g.index], "udp_len_bytes"]}
        out |= {(q, n) for n in (lens or {None})}
    return sorted(out, key=lambda k: (k[0], k[1] or 0))


def parse_arm(text: str) -> tuple:
    """``MODEL`` or ``MODEL,LEN`` (e.g. "tbf-netem", "fifo-after-delay,8192") -> (queue_model, udp_len_bytes or
    None). Raises AnalysisError for an unknown model or a bad length."""
    model, _, ln = str(text).partition(",")
    if model not in QUEUE_MODELS:
        raise AnalysisError(f"unknown queue model {model!r} (one of {', '.join(QUEUE_MODELS)})")
    if ln and not ln.isdigit():
        raise AnalysisError(f"bad UDP datagram size {ln!r} in arm {text!r} (bytes, e.g. 8192)")
    return model, int(ln) if ln else None


def select_arm(df: pd.DataFrame, arm: tuple) -> pd.DataFrame:
    """The rows of ``df`` (and of its ``attrs["runs"]`` listing) whose run_id is of ``arm`` = (queue_model,
    udp_len_bytes or None). Runs without UDP traffic have no datagram size: with a size given, TCP-only runs of the
    queue model are kept too."""
    def keep(run_ids) -> np.ndarray:
        a = arms(run_ids)
        m = (a["queue_model"] == arm[0]).to_numpy()
        if arm[1] is None:
            return m & a["udp_len_bytes"].isna().to_numpy()
        tcp_only = ~pd.Series(list(run_ids), dtype=object).astype(str).str.startswith("udp_fairness").to_numpy()
        return m & ((a["udp_len_bytes"] == arm[1]).fillna(False).to_numpy() | (a["udp_len_bytes"].isna().to_numpy()
                                                                             & tcp_only))
    runs = df.attrs.get("runs")
    out = df[keep(df["run_id"])] if len(df) else df
    out = out.copy()
    if runs is not None:
        out.attrs["runs"] = runs[keep(runs["run_id"])].reset_index(drop=True) if len(runs) else runs
    return out


def with_arms(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` (rows of load_campaign) with the columns queue_model and udp_len_bytes of :func:`arms`."""
    a = arms(df["run_id"]).drop(columns="run_id")
    out = df.reset_index(drop=True).copy()
    out.attrs = {}
    out["queue_model"] = a["queue_model"].to_numpy()
    out["udp_len_bytes"] = a["udp_len_bytes"].to_numpy()
    return out


# --------------------------------------------------------------------------------------------- estimates
@dataclass(frozen=True)
class Est:
    """An estimate: mean, standard error, Welch degrees of freedom, n (runs; for a difference the smaller side)."""
    mean: float
    se: float
    df: float
    n: int

    def interval(self, alpha: float = ALPHA) -> tuple[float, float]:
        if not (np.isfinite(self.se) and np.isfinite(self.df) and self.df > 0):
            return math.nan, math.nan
        h = float(_st.t.ppf(1 - alpha / 2, self.df)) * self.se
        return self.mean - h, self.mean + h

    def p_value(self) -> float:
        """Two-sided p of mean = 0 (Welch t with ``df`` degrees of freedom); NaN without a standard error. A zero
        standard error (every run gave the same value) gives 1 for a zero mean and 0 otherwise."""
        if not (np.isfinite(self.mean) and np.isfinite(self.se)):
            return math.nan
        if self.se == 0:
            return 1.0 if self.mean == 0 else 0.0
        if not (np.isfinite(self.df) and self.df > 0):
            return math.nan
        return float(2 * _st.t.sf(abs(self.mean / self.se), self.df))


NO_EST = Est(math.nan, math.nan, math.nan, 0)


def excludes_zero(lo: float, hi: float) -> bool:
    """Whether the interval [lo, hi] lies wholly on one side of 0: a change beyond run-to-run noise (False for an
    interval that could not be computed)."""
    return bool(np.isfinite(lo) and np.isfinite(hi) and (lo > 0 or hi < 0))


def est_mean(x) -> Est:
    """Mean of the finite values of ``x`` with its standard error (s / sqrt(n)) and n - 1 degrees of freedom."""
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return NO_EST
    if x.size == 1:
        return Est(float(x[0]), math.nan, math.nan, 1)
    return Est(float(x.mean()), float(x.std(ddof=1) / math.sqrt(x.size)), float(x.size - 1), int(x.size))


def est_diff(a: Est, b: Est) -> Est:
    """a - b for independent estimates: standard errors combined, Welch-Satterthwaite degrees of freedom."""
    if not (a.n and b.n):
        return NO_EST
    se = math.sqrt(a.se ** 2 + b.se ** 2) if np.isfinite(a.se) and np.isfinite(b.se) else math.nan
    if np.isfinite(se) and se > 0:
        df = se ** 4 / (a.se ** 4 / a.df + b.se ** 4 / b.df)
    elif np.isfinite(se):
        df = min(a.df, b.df)
    else:
        df = math.nan
    return Est(a.mean - b.mean, se, df, min(a.n, b.n))


def per_run(df: pd.DataFrame, column: str, flow: int = 1, **cond) -> np.ndarray:
    """One value of ``column`` per run (the row of ``flow``; ``analysis.claims.core.sample``) among the rows matching
    every ``column=value`` of ``cond`` (a None value matches a missing one); finite values only."""
    m = df["flow"] == flow
    for k, v in cond.items():
        m &= df[k].isna() if v is None else (df[k] == v)
    return core.sample(df.loc[m], column)


# --------------------------------------------------------------------------------------------- quantities
def _target(rel, value=math.nan, low=math.nan, high=math.nan) -> dict:
    return {"relation": rel, "value": value, "low": low, "high": high}


def distance(x: float, target: dict) -> float:
    """How far ``x`` is from the paper's statement ``target`` (units of x): "between"/"approx_between": 0 inside
    [low, high], else the distance to the nearer bound; "approx": |x - value|; ">"/">=": 0 when satisfied, else
    value - x; "<"/"<=": 0 when satisfied, else x - value. NaN for a NaN x."""
    if not np.isfinite(x):
        return math.nan
    rel = target["relation"]
    if rel in ("between", "approx_between"):
        return 0.0 if target["low"] <= x <= target["high"] else min(abs(x - target["low"]), abs(x - target["high"]))
    if rel == "approx":
        return abs(x - target["value"])
    if rel in (">", ">="):
        return max(0.0, target["value"] - x)
    if rel in ("<", "<="):
        return max(0.0, x - target["value"])
    raise AnalysisError(f"unknown relation {rel!r}")


SINGLE = ("single_vs_multi", "link_delay", "loss_rate")
LOSS_BASED = ("reno", "bic", "cubic")


def _single(df, cc, d, loss, column="goodput_mbps"):
    m = (df["experiment"].isin(SINGLE) & df["cc2"].isna() & df["cbr_mbps"].isna() & (df["path_mode"] == "multipath")
         & (df["cc"] == cc) & (df["link_delay_ms"] == float(d)) & (df["loss_pct"] == float(loss)))
    return per_run(df[m], column)


def quantities(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (claims, quantity, configuration, arm) present in ``df`` (rows of the fidelity campaign, any
    other study-000 dataset works too: its runs are the baseline arm): claims (the statement ids it decides, ";"),
    quantity, unit, config (text), queue_model, udp_len_bytes, n, mean, se, df, ci_low, ci_high (95 %), and the
    paper's target (relation, value, low, high) with ``distance`` (:func:`distance` of the mean)."""
    st = reference.load_statements().set_index("id")
    t4 = reference.load_table4()
    d = with_arms(df)
    out = []

    def add(claims, quantity, unit, config, arm, est: Est, target: dict):
        lo, hi = est.interval()
        out.append({"claims": claims, "quantity": quantity, "unit": unit, "config": config, "queue_model": arm[0],
                    "udp_len_bytes": arm[1], "n": est.n, "mean": est.mean, "se": est.se, "df": est.df,
                    "ci_low": lo, "ci_high": hi, **target, "distance": distance(est.mean, target)})

    def tgt(sid):
        r = st.loc[sid]
        return _target(r["relation"], float(r["value"]) if pd.notna(r["value"]) else math.nan,
                       float(r["low"]) if pd.notna(r["low"]) else math.nan,
                       float(r["high"]) if pd.notna(r["high"]) else math.nan)

    for (qm, ln), g in d.groupby(["queue_model", d["udp_len_bytes"].astype(object).where(d["udp_len_bytes"].notna(),
                                                                                          -1)], sort=True):
        arm = (qm, None if ln == -1 else int(ln))
        # S05 / S23: the loss-based flow's mean RTT minus BBR's, single flow, loss 0, per link delay
        for dl in (10, 50, 100):
            bbr = est_mean(_single(g, "bbr", dl, 0, "rtt_mean_ms"))
            for cc in LOSS_BASED:
                e = est_diff(est_mean(_single(g, cc, dl, 0, "rtt_mean_ms")), bbr)
                if e.n:
                    add("S05;S23", f"RTT gap {cc} − bbr", "ms", f"link delay {dl} ms, loss 0 %", arm, e, tgt("S05"))
        # S06 / S07: goodput lost to random loss (loss 0 at link delay 10 ms minus loss L); S08-S10: goodput under loss
        for cc in LOSS_BASED + ("bbr",):
            g0 = est_mean(_single(g, cc, 10, 0))
            for loss in (1, 5, 10):
                gl = est_mean(_single(g, cc, 10, loss))
                if cc != "bbr" and loss in (1, 10):
                    e = est_diff(g0, gl)
                    if e.n:
                        add("S06" if loss == 1 else "S07", f"goodput drop {cc}", "Mbit/s",
                            f"link delay 10 ms, loss {loss} % vs 0 %", arm, e, tgt("S06" if loss == 1 else "S07"))
                if gl.n:
                    if cc == "bbr":
                        add("S08;S09;S24", "goodput bbr", "Mbit/s", f"link delay 10 ms, loss {loss} %", arm, gl,
                            tgt("S08"))
                    else:
                        frac = Est(gl.mean / CAPACITY_MBPS, gl.se / CAPACITY_MBPS, gl.df, gl.n)
                        add("S10;S25", f"goodput fraction {cc}", "fraction of 20 Mbit/s",
                            f"link delay 10 ms, loss {loss} %", arm, frac, tgt("S10"))
        # S11-S13: mean RTT under loss
        for loss in (1, 5, 10):
            rb = est_mean(_single(g, "bbr", 10, loss, "rtt_mean_ms"))
            if loss == 1 and rb.n:
                add("S12", "RTT bbr", "ms", "link delay 10 ms, loss 1 %", arm, rb, tgt("S12"))
            for cc in LOSS_BASED:
                rc = est_mean(_single(g, cc, 10, loss, "rtt_mean_ms"))
                if loss == 1 and rc.n:
                    add("S11", f"RTT {cc}", "ms", "link delay 10 ms, loss 1 %", arm, rc, tgt("S11"))
                e = est_diff(rb, rc)
                if e.n:
                    add("S13", f"RTT gap bbr − {cc}", "ms", f"link delay 10 ms, loss {loss} %", arm, e, tgt("S13"))
        # Table 4 / S16 / C-CUBIC-FAIREST: Jain's index of each pair, and each flow's goodput over its own run
        tf = g[g["experiment"] == "tcp_fairness"]
        for _, p in t4.iterrows():
            sel = tf[(tf["cc"] == p["cc1"]) & (tf["cc2"] == p["cc2"])]
            e = est_mean(pair_jain(sel).to_numpy(float))
            if e.n:
                cfg = f"pair {int(p['pair'])}: {p['cc1']} + {p['cc2']}"
                add("T4;S16", "Jain's index", "index", cfg, arm, e, _target("approx", float(p["jain"])))
                for flow, cc, col in ((1, p["cc1"], "throughput1_mbps"), (2, p["cc2"], "throughput2_mbps")):
                    add("T4", f"goodput {cc} (flow {flow})", "Mbit/s", cfg, arm,
                        est_mean(per_run(sel, "goodput_mbps", flow=flow)), _target("approx", float(p[col])))
        # S17-S21: TCP against UDP CBR, each flow over its own run
        uf = g[g["experiment"] == "udp_fairness"]
        for cc in LOSS_BASED + ("bbr",):
            for cbr in (12, 16, 20):
                sel = uf[(uf["cc"] == cc) & (uf["cbr_mbps"] == float(cbr))]
                if sel.empty:
                    continue
                cfg = f"cbr {cbr} Mbit/s"
                if cc != "bbr":
                    add("S17", f"TCP goodput {cc}", "Mbit/s", cfg, arm,
                        est_mean(per_run(sel, "goodput_mbps", flow=1)), tgt("S17"))
                    add("S18", f"UDP goodput against {cc}", "Mbit/s", cfg, arm,
                        est_mean(per_run(sel, "goodput_mbps", flow=2)), tgt("S18"))
                sid = "S21" if cc == "bbr" else ("S20" if cc in ("reno", "cubic") else "S19")
                add(sid if sid != "S20" else "S19;S20", f"Jain's index {cc} + UDP", "index", cfg, arm,
                    est_mean(pair_jain(sel).to_numpy(float)), tgt(sid))
    cols = ["claims", "quantity", "unit", "config", "queue_model", "udp_len_bytes", "n", "mean", "se", "df",
            "ci_low", "ci_high", "relation", "value", "low", "high", "distance"]
    q = pd.DataFrame(out, columns=cols)
    q["udp_len_bytes"] = q["udp_len_bytes"].astype("Int64")
    return q


def _arm_key(qm, ln) -> tuple:
    return qm, (None if ln is None or pd.isna(ln) else int(ln))


def _nearer(arm_distance: float, baseline_distance: float) -> bool | None:
    """True when the arm is nearer the paper than the baseline, False when farther, None when as near (equal up to
    rounding: a mean computed two ways may differ in its last bits) or either distance is unknown."""
    if not (np.isfinite(arm_distance) and np.isfinite(baseline_distance)) or math.isclose(
            arm_distance, baseline_distance, rel_tol=1e-9, abs_tol=1e-12):
        return None
    return bool(arm_distance < baseline_distance)


def effects(q: pd.DataFrame) -> pd.DataFrame:
    """Each non-baseline arm of :func:`quantities` against the baseline arm (fifo-after-delay, datagram size None)
    in the same (quantity, config): diff = arm - baseline (units of the quantity), its 95 % interval and Welch
    p-value (:meth:`Est.p_value`), ``moved``
    (the interval excludes 0), the two distances to the paper and ``toward_paper`` (True: the arm is nearer, False:
    farther, None: as near or unknown; :func:`_nearer`)."""
    rows = []
    for (claims, quantity, unit, config), g in q.groupby(["claims", "quantity", "unit", "config"], sort=False):
        base = g[(g["queue_model"] == BASELINE[0]) & g["udp_len_bytes"].isna()]
        if base.empty:
            continue
        b = base.iloc[0]
        eb = Est(b["mean"], b["se"], b["df"], int(b["n"]))
        for _, r in g.iterrows():
            if _arm_key(r["queue_model"], r["udp_len_bytes"]) == BASELINE:
                continue
            e = est_diff(Est(r["mean"], r["se"], r["df"], int(r["n"])), eb)
            lo, hi = e.interval()
            rows.append({"claims": claims, "quantity": quantity, "unit": unit, "config": config,
                         "queue_model": r["queue_model"], "udp_len_bytes": r["udp_len_bytes"],
                         "baseline_mean": b["mean"], "arm_mean": r["mean"], "diff": e.mean, "diff_low": lo,
                         "diff_high": hi, "p_value": e.p_value(), "moved": excludes_zero(lo, hi),
                         "baseline_distance": b["distance"], "arm_distance": r["distance"],
                         "toward_paper": _nearer(r["distance"], b["distance"])})
    out = pd.DataFrame(rows, columns=["claims", "quantity", "unit", "config", "queue_model", "udp_len_bytes",
                                      "baseline_mean", "arm_mean", "diff", "diff_low", "diff_high", "p_value", "moved",
                                      "baseline_distance", "arm_distance", "toward_paper"])
    out["udp_len_bytes"] = out["udp_len_bytes"].astype("Int64")
    return out


def paper_settings_effects(eff: pd.DataFrame) -> pd.DataFrame:
    """The effect rows of campaigns/paper.yaml's settings (:data:`PAPER_ARM`): per (claims, quantity, config) the
    arm with its queue model and, where the cell has UDP datagram-size arms, its datagram size; cells without UDP
    arms (TCP-only quantities) take the queue model with one datagram per packet (the size does not apply)."""
    if eff.empty:
        return eff.copy()
    qm, ln = PAPER_ARM
    keys = ["claims", "quantity", "config"]
    has_len = eff.groupby(keys, sort=False)["udp_len_bytes"].transform(lambda x: x.notna().any())
    want = (eff["queue_model"] == qm) & (
        (has_len & (eff["udp_len_bytes"] == ln).fillna(False)) | (~has_len & eff["udp_len_bytes"].isna()))
    return eff[want.astype(bool)].copy()


def rerecord_decision(eff: pd.DataFrame, alpha: float = ALPHA) -> dict:
    """Issue 28 item 5: do the paper protocol's faithful settings move any quantity behind a claim beyond run-to-run
    noise? Over the cells of :func:`paper_settings_effects` with a p-value, Holm's correction
    (``analysis.stats.multiple.holm``, family-wise error ``alpha``): ``moved`` counts the cells whose adjusted p is
    below ``alpha``, of them ``toward`` / ``away`` from the paper's value; ``rerecord`` is True when any moved (the
    study-000 protocol is then recorded again under campaigns/paper.yaml). Returns also ``cells`` (rows),
    ``tested`` (rows with a p-value) and ``table`` (the rows with ``p_holm`` and ``moved_holm``)."""
    from analysis.stats.multiple import holm
    t = paper_settings_effects(eff)
    t["p_holm"] = np.nan
    ok = t["p_value"].notna()
    if ok.any():
        t.loc[ok, "p_holm"] = holm(t.loc[ok, "p_value"].to_numpy(dtype=float))
    t["moved_holm"] = t["p_holm"] < alpha
    m = t[t["moved_holm"]]
    return {"cells": int(len(t)), "tested": int(ok.sum()), "moved": int(len(m)),
            "toward": int((m["toward_paper"] == True).sum()),  # noqa: E712 - object column of True/False/None
            "away": int((m["toward_paper"] == False).sum()),  # noqa: E712
            "rerecord": bool(len(m)), "alpha": float(alpha), "table": t}


def best_fit(q: pd.DataFrame) -> pd.DataFrame:
    """Per claims group: for each arm, in how many (quantity, config) cells it is the arm nearest the paper's
    target (ties count for every tied arm), out of how many cells; an inference about which switch recipe (and
    datagram size) the paper's numbers fit best."""
    rows = []
    for claims, g in q.dropna(subset=["distance"]).groupby("claims", sort=False):
        counts: dict[tuple, int] = {}
        cells = 0
        for _, c in g.groupby(["quantity", "config"], sort=False):
            cells += 1
            best = c["distance"].min()
            for _, r in c[np.isclose(c["distance"], best)].iterrows():
                k = _arm_key(r["queue_model"], r["udp_len_bytes"])
                counts[k] = counts.get(k, 0) + 1
        arms_seen = {_arm_key(a, b) for a, b in zip(g["queue_model"], g["udp_len_bytes"])}
        for k in sorted(arms_seen, key=lambda a: (QUEUE_MODELS.index(a[0]) if a[0] in QUEUE_MODELS else 99,
                                                  a[1] or 0)):
            rows.append({"claims": claims, "queue_model": k[0], "udp_len_bytes": k[1], "nearest": counts.get(k, 0),
                         "cells": cells})
    out = pd.DataFrame(rows, columns=["claims", "queue_model", "udp_len_bytes", "nearest", "cells"])
    out["udp_len_bytes"] = out["udp_len_bytes"].astype("Int64")
    return out


# --------------------------------------------------------------------------------------------- the bundle
#: the committed ablation bundle (campaigns/fidelity000.yaml recorded and bundled), relative to the repository
BUNDLE = Path(__file__).resolve().parent.parent / "data" / "fidelity000"


def faithful(queue_model, udp_len_bytes=None) -> bool:
    """Whether an arm applies one of the paper's mechanisms: a queue model of :data:`FAITHFUL` (the paper's NetEm
    semantics) or the paper era's datagram size (:data:`PAPER_DATAGRAM`)."""
    return queue_model in FAITHFUL or _arm_key(queue_model, udp_len_bytes)[1] == PAPER_DATAGRAM


@lru_cache(maxsize=4)
def _effects_cached(bundle: str, stamp: float) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    from analysis.dataset import load_campaign
    df = load_campaign(bundle, progress=False)
    q = quantities(df)
    runs = df.attrs.get("runs")
    n = int((runs["status"] == "complete").sum()) if runs is not None and "status" in runs else int(df["run_id"].nunique())
    return q, effects(q), n


def load_effects(bundle=None):
    """(quantities, effects, complete runs) of the ablation bundle (default :data:`BUNDLE`), or None when it has not
    been recorded and bundled yet. Cached per bundle and modification time of its bundle.json."""
    b = Path(bundle) if bundle is not None else BUNDLE
    marker = b / "bundle.json"
    if not marker.is_file():
        return None
    return _effects_cached(str(b.resolve()), marker.stat().st_mtime)


def recording_progress(bundle=None) -> tuple[int, int] | None:
    """(complete runs, planned runs) of the ablation bundle (default :data:`BUNDLE`): bundle.json's ``runs_total``
    (complete and skipped runs) and campaign.json's ``n_runs`` (the campaign's matrix); None without a bundle. A
    recording in progress is bundled (and committed) between sessions so that it resumes on another machine; its
    effects are cited only once every planned run is in (:func:`complete`). Cached per bundle and modification time and
    size of its bundle.json."""
    b = Path(bundle) if bundle is not None else BUNDLE
    marker = b / "bundle.json"
    if not marker.is_file():
        return None
    st = marker.stat()
    return _progress_cached(str(b.resolve()), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=8)
def _progress_cached(bundle: str, mtime_ns: int, size: int) -> tuple[int, int]:
    from analysis.bundle_store import finished_and_planned
    done, planned = finished_and_planned(bundle)
    return done, planned or done


def complete(bundle=None) -> bool:
    """True when the ablation bundle holds every run its campaign planned (:func:`recording_progress`)."""
    got = recording_progress(bundle)
    return got is not None and got[0] >= got[1]


def arm_label(queue_model, udp_len_bytes=None) -> str:
    """An arm in words: the queue model, and ", 8192-byte datagrams" when the UDP datagram size is set."""
    ln = None if udp_len_bytes is None or pd.isna(udp_len_bytes) else int(udp_len_bytes)
    return queue_model + (f", {ln}-byte datagrams" if ln else "")


def cite(eff: pd.DataFrame, claim: str, quantity_has: str | None = None) -> dict:
    """What the ablation measured for statement ``claim`` (e.g. "S05"): its effect rows (claims containing it,
    quantity containing ``quantity_has`` when given) as a summary: ``cells`` (rows), ``moved`` / ``toward`` /
    ``away`` (rows whose 95 % interval of arm - baseline excludes 0, and of those the ones nearer to / farther from
    the paper's value than the baseline), ``faithful_toward`` (moved toward the paper under an arm that applies
    one of the paper's mechanisms, :func:`faithful`), and ``items``: one dict per row (quantity, config, arm,
    queue_model, udp_len_bytes (int or None), faithful, baseline_mean, arm_mean, diff, diff_low, diff_high, unit, moved, toward_paper)."""
    m = eff["claims"].str.split(";").apply(lambda ids: claim in ids)
    if quantity_has:
        m &= eff["quantity"].str.contains(quantity_has, regex=False)
    e = eff[m]
    items = [{"quantity": r.quantity, "config": r.config, "arm": arm_label(r.queue_model, r.udp_len_bytes),
              "queue_model": r.queue_model, "udp_len_bytes": _arm_key(r.queue_model, r.udp_len_bytes)[1],
              "faithful": faithful(r.queue_model, r.udp_len_bytes),
              "baseline_mean": r.baseline_mean, "arm_mean": r.arm_mean,
              "diff": r.diff, "diff_low": r.diff_low, "diff_high": r.diff_high, "unit": r.unit,
              "moved": bool(r.moved), "toward_paper": r.toward_paper} for r in e.itertuples()]
    moved = [i for i in items if i["moved"]]
    return {"cells": len(items), "moved": len(moved), "toward": sum(1 for i in moved if i["toward_paper"] is True),
            "away": sum(1 for i in moved if i["toward_paper"] is False),
            "faithful_toward": sum(1 for i in moved if i["toward_paper"] is True and i["faithful"]),
            "items": items}
