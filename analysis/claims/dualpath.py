"""Claims of studies 001 and 003 (``data/reference/<family>/statements.csv``, one check per statement), judged on
dual-path rows (``analysis.families.dualpath``) with the verdict rules of ``analysis.claims.core``.

What each paper quantity is measured as here (units: Mbit/s, ms, %):

* throughput_mbps: iperf3 receiver goodput of the connection (``throughput_mbps``); min_interval_throughput_mbps:
  its smallest 1-s interval (``min_interval_mbps``).
* delay_ms (001): mean one-way delay of the connection's data segments on both paths (``conn_owd_mean_ms``); the
  paper's ns-3 "delay" is a per-packet delay, its exact definition is not printed.
* study 003 measures "Throughput, Latency dan Packet Loss menggunakan alat ukur Iperf3 dan Ping" and computes
  jitter by its equation from the delays D_i (section III.D). iperf3's TCP test prints no latency and no loss, so
  latency and loss are ping's, and the delays D_i the jitter is computed from are ping's round-trip times:
  latency_ms = mean ping RTT over path 1 during the flow (``ping_rtt_mean_ms``; the ping's target path is not printed:
  path 1 carries TCP's flow and MPTCP's initial subflow, the server's address routes over it); jitter_ms =
  Σ|D_i − D_{i+1}|/(n − 1) over those RTTs in icmp_seq order (``ping_jitter_ms``); packet_loss_pct = ping's loss
  (``ping_loss_pct``). The "during flood" variants use the pings of the flood window (``flood_ping_*``). The
  capture's one-way data-segment delays and losses on path 1 (``jitter_ms``, ``loss_pct``, ``flood_jitter_ms``,
  ``flood_path_loss_pct``) are a second reading, given in the explanations, never the verdict.
* *_gap_mptcp_minus_max_single / *_minus_min_single: MPTCP minus the better single-path mode (by mean) at each
  buffer level, Welch interval; *_large_minus_small_buffer: largest minus smallest buffer, per mode;
  *_minus_max/min_of_other_table2_scenarios: the scenario minus the best other Table 2 scenario.

Tolerances for "approx" (the papers give none): throughput ±10 % of the paper's value (at least ±0.1 Mbit/s),
delays ±20 % (at least ±1 ms), jitter ±0.25 ms, loss ±2 percentage points (:func:`tolerance`).

Where a statement is about MPTCP's redundant scheduler and the kernel lacks it, its check is "not run" with the
SKIPPED reason, and a second row ``<id>/default`` judges the same statement on the default scheduler's runs
(``substitute_for``: shown apart, never counted as the statement's verdict). Absolute values of study 001 depend on
its LTE/WiFi link models, which the paper does not print (ours: testbed/families/001/topology.json): those claims
are "not comparable", and the explanation says what the interval alone would have said.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis.claims import core

# quantity -> (column, path or None for a connection-level column)
QUANTITY = {
    "throughput_mbps": ("throughput_mbps", None),
    "min_interval_throughput_mbps": ("min_interval_mbps", None),
    "delay_ms": ("conn_owd_mean_ms", None),
    "latency_ms": ("ping_rtt_mean_ms", 1),
    "jitter_ms": ("ping_jitter_ms", 1),
    "packet_loss_pct": ("ping_loss_pct", 1),
    "latency_ms_during_flood": ("flood_ping_rtt_mean_ms", 1),
    "jitter_ms_during_flood": ("flood_ping_jitter_ms", 1),
    "packet_loss_pct_during_flood": ("flood_ping_loss_pct", 1),
}
# quantity -> unit of ours (the column's unit; a difference of two values of a quantity keeps it): the scorecard's unit
UNIT = {"throughput_mbps": "Mbit/s", "min_interval_throughput_mbps": "Mbit/s", "delay_ms": "ms", "latency_ms": "ms",
        "jitter_ms": "ms", "packet_loss_pct": "%", "latency_ms_during_flood": "ms", "jitter_ms_during_flood": "ms",
        "packet_loss_pct_during_flood": "%"}
IGNORED_CONDITIONS = ("udp_flood_start_s", "udp_flood_end_s")   # a scaled profile shortens the flood's timeline
BUFFER_KEY = {"001": "buffer_bytes", "003": "queue_pkts"}
SINGLE_MODES = {"001": ("tcp_lte", "tcp_wifi"), "003": ("tcp_path1",)}
MPTCP_SUBSTITUTE = "default"


def tolerance(quantity: str, value: float) -> float:
    """Half-width of the band around an "approx" value (the papers print none)."""
    q = quantity.replace("_during_flood", "")
    if q.startswith(("throughput", "min_interval")):
        return max(0.1 * abs(value), 0.1)
    if q in ("delay_ms", "latency_ms"):
        return max(0.2 * abs(value), 1.0)
    if q == "jitter_ms":
        return 0.25
    if q == "packet_loss_pct":
        return 2.0
    return 0.1 * abs(value)


def parse_condition(text) -> dict:
    """``name=value;name=lo-hi;name=a,b`` -> {name: value | (lo, hi) | [a, b]} (numbers as floats)."""
    out = {}
    if not isinstance(text, str) or not text.strip():
        return out
    for part in text.split(";"):
        if "=" not in part:
            continue
        k, v = (x.strip() for x in part.split("=", 1))
        if "," in v:
            out[k] = [_num_or_text(x) for x in v.split(",")]
        elif "-" in v[1:] and all(_is_num(x) for x in v.split("-", 1)):
            lo, hi = v.split("-", 1)
            out[k] = (float(lo), float(hi))
        else:
            out[k] = _num_or_text(v)
    return out


def _is_num(x) -> bool:
    try:
        float(x)
        return True
    except ValueError:
        return False


def _num_or_text(x):
    return float(x) if _is_num(x) else x


class _Data:
    """Per-run values of one campaign's dual-path rows."""

    def __init__(self, ctx: core.Ctx, family: str):
        self.ctx, self.family = ctx, family
        self.df = ctx.df
        self.buffer = BUFFER_KEY[family]

    def levels(self) -> list[float]:
        return sorted(set(pd.to_numeric(self.df[self.buffer], errors="coerce").dropna()))

    def select(self, mode, *, buffer=None, scheduler=None, experiment=None, flood=None) -> pd.DataFrame:
        d = self.df
        m = d["mode"] == mode
        if buffer is not None:
            m &= np.isclose(pd.to_numeric(d[self.buffer], errors="coerce"), float(buffer))
        if mode == "mptcp" and scheduler is not None:
            m &= d["mptcp_scheduler"] == scheduler
        if experiment is not None:
            m &= d["experiment"] == experiment
        if flood is not None:
            m &= np.isclose(pd.to_numeric(d["udp_flood_mbps"], errors="coerce"), float(flood))
        return d[m]

    def sample(self, sel: pd.DataFrame, quantity: str) -> np.ndarray:
        col, path = QUANTITY[quantity]
        if path is not None:
            sel = sel[sel["path"] == path]
        return core.sample(sel, col)


def _schedulers(cond: dict, data: _Data) -> list[tuple[str, str]]:
    """[(scheduler to use, claim-id suffix)]: the statement's own; for a scheduler without runs here, also the
    default scheduler as a labelled substitute."""
    want = cond.get("mptcp_scheduler")
    if want in (None, MPTCP_SUBSTITUTE):
        return [(MPTCP_SUBSTITUTE, "")]
    return [(want, ""), (MPTCP_SUBSTITUTE, f"/{MPTCP_SUBSTITUTE}")]


def _modes(st, cond) -> list[str]:
    m = cond.get("mode")
    if isinstance(m, list):
        return [str(x) for x in m]
    if m is not None:
        return [str(m)]
    return []


def _not_run(ctx, data: _Data, mode, scheduler, what) -> str:
    runs = ctx.runs
    if runs is not None and len(runs) and "mptcp_scheduler" in runs:
        r = runs[(runs["mode"] == mode) & (runs["mptcp_scheduler"].astype(str) == str(scheduler))] \
            if mode == "mptcp" else runs[runs["mode"] == mode]
        sk = r[r["status"] == "skipped"]
        if len(sk):
            return str(sk["reason"].iloc[0])
    return f"no complete runs of {what} in this campaign"


def _levels_in(cond_value, levels) -> list[float]:
    if isinstance(cond_value, tuple):
        return [lv for lv in levels if cond_value[0] <= lv <= cond_value[1]]
    if cond_value == "large":
        return levels[-1:]
    if isinstance(cond_value, float):
        return [cond_value]
    return list(levels)


def _paper_value(st) -> str:
    rel, v, lo, hi = st.relation, st.value, st.low, st.high
    if rel in ("between", "approx_between"):
        return f"{lo:g}-{hi:g} {st.unit}"
    return f"{rel} {v:g} {st.unit}" if rel != "approx" else f"about {v:g} {st.unit}"


def _absolute(st, data: _Data, cond, sid_suffix, scheduler, notes) -> list[dict]:
    ctx, fam = data.ctx, data.family
    out = []
    modes = _modes(st, cond) or ["mptcp"]
    flood = cond.get("udp_flood_mbps")
    levels = _levels_in(cond.get(data.buffer), data.levels())
    for mode in modes:
        cid = st.id + (f"-{mode}" if len(modes) > 1 else "") + sid_suffix
        sel = pd.concat([data.select(mode, buffer=lv, scheduler=scheduler, experiment=st.experiment, flood=flood)
                         for lv in levels]) if levels else data.df.iloc[0:0]
        x = data.sample(sel, st.quantity)
        reg = core.region(st.relation, st.value, st.low, st.high,
                          tol=tolerance(st.quantity, st.value if math.isfinite(st.value) else 0.0))
        stmt = f"{mode}{f' ({scheduler} scheduler)' if mode == 'mptcp' else ''}: {st.quantity} {_paper_value(st)}"
        if x.size == 0:
            out.append(core.row(cid, st.section, st.experiment, stmt, _paper_value(st), None, "one-sample t",
                                "not run", _not_run(ctx, data, mode, scheduler,
                                                    f"{mode}{f' ({scheduler} scheduler)' if mode == 'mptcp' else ''}"
                                                    f" at {data.buffer}={', '.join(f'{lv:g}' for lv in levels)}"),
                                unit=UNIT[st.quantity]))
            continue
        e = core.one_sample(x, reg, ctx.alpha)
        v, note = core.decide(e, reg)
        r = core.row(cid, st.section, st.experiment, stmt, _paper_value(st), e, "one-sample t", v,
                     "; ".join([n for n in [note] + list(notes) if n]), unit=UNIT[st.quantity])
        if fam == "001" and st.relation == "approx":
            r["verdict"] = "not comparable"
            core.explain(r, "paper-incomplete",
                         f"The paper (ns-3) does not print its LTE/WiFi link models (rates, delays, loss, queue "
                         f"discipline), so an absolute {st.quantity} has nothing to be compared against; ours comes from "
                         f"our own link model (testbed/families/001/topology.json): {core.fmt(e.value, 4)} {st.unit}, "
                         f"95 % interval {core.fmt(e.lo, 4)} to {core.fmt(e.hi, 4)}, which on its own would say "
                         f"'{v}' against the paper's {core.fmt(st.value, 4)}.",
                         ours=e.value, ci=[e.lo, e.hi], paper=st.value, interval_alone_says=v,
                         link_model="testbed/families/001/topology.json")
        out.append(r)
    return out


def _best_other(data: _Data, samples: dict, quantity: str, want_max: bool):
    """The (label, sample) with the highest (or lowest) mean among ``samples`` that have data."""
    have = {k: v for k, v in samples.items() if v.size}
    if not have:
        return None, np.zeros(0)
    k = (max if want_max else min)(have, key=lambda k: float(np.mean(have[k])))
    return k, have[k]


def _gap_vs_single(st, data: _Data, cond, sid_suffix, scheduler, notes) -> list[dict]:
    """MPTCP minus the best single-path mode at every buffer level of the statement's range."""
    ctx = data.ctx
    q = "throughput_mbps" if st.quantity.startswith("throughput") else "delay_ms"
    want_max = q == "throughput_mbps"
    levels = _levels_in(cond.get(data.buffer), data.levels())
    reg = core.region(st.relation, st.value)

    def est_at(lv):
        x = data.sample(data.select("mptcp", buffer=lv, scheduler=scheduler, experiment=st.experiment), q)
        singles = {m: data.sample(data.select(m, buffer=lv, experiment=st.experiment), q)
                   for m in SINGLE_MODES[data.family]}
        _, y = _best_other(data, singles, q, want_max)
        if not x.size or not y.size:
            return None
        return core.two_sample(x, y, reg, ctx.alpha), reg

    stmt = (f"MPTCP ({scheduler} scheduler) {'throughput above' if want_max else 'delay below'} the better "
            f"single path, at every {data.buffer} level")
    r = core.level_claim(ctx, claim_id=st.id + sid_suffix, section=st.section, experiment=st.experiment,
                         statement=stmt, paper_value=_paper_value(st), test="Welch t", levels=levels,
                         level_name=data.buffer, est_at=est_at, reason_ccs=[], what="MPTCP and single-path runs",
                         notes=notes, unit=UNIT[q])
    if r["verdict"] == "not run":
        r["note"] = _not_run(ctx, data, "mptcp", scheduler, "MPTCP runs")
    return [r]


def _large_minus_small(st, data: _Data, cond, sid_suffix, scheduler, notes) -> list[dict]:
    """Largest minus smallest buffer, for every mode (MPTCP: ``scheduler``'s runs); a mode without runs at both leaves
    the claim undecided."""
    ctx = data.ctx
    head, unit_suffix = st.quantity.split("_large_minus_small_buffer")
    q = head + unit_suffix             # throughput_…_mbps -> throughput_mbps, packet_loss_…_pct -> packet_loss_pct
    levels = data.levels()
    reg = core.region(st.relation, st.value)
    modes = list(SINGLE_MODES[data.family]) + ["mptcp"]

    def est_at(i):
        mode = modes[int(i)]
        sched = scheduler if mode == "mptcp" else None
        x = data.sample(data.select(mode, buffer=levels[-1], scheduler=sched, experiment=st.experiment), q)
        y = data.sample(data.select(mode, buffer=levels[0], scheduler=sched, experiment=st.experiment), q)
        if len(levels) < 2 or not x.size or not y.size:
            return None
        return core.two_sample(x, y, reg, ctx.alpha), reg

    stmt = (f"{q} with the largest {data.buffer} ({levels[-1]:g}) minus the smallest ({levels[0]:g}) "
            f"{st.relation} 0, for every mode" if len(levels) >= 2 else f"{q}: large minus small buffer")
    r = core.level_claim(ctx, claim_id=st.id + sid_suffix, section=st.section, experiment=st.experiment,
                         statement=stmt, paper_value=_paper_value(st), test="Welch t",
                         levels=list(range(len(modes))), level_name="mode#", est_at=est_at, reason_ccs=[],
                         what="runs at two buffer sizes",
                         notes=list(notes) + ["modes: " + ", ".join(f"{i}={m}" for i, m in enumerate(modes))
                                              + f" (MPTCP scheduler {scheduler})"],
                         unit=UNIT[q])
    return [r]


def _vs_other_scenarios(st, data: _Data, cond, notes) -> list[dict]:
    """A Table 2 scenario minus the best of the other scenarios (003): ``…_of_other_table2_scenarios`` all three
    others, ``…_of_queue1000_table2_scenarios`` those without queue management (1000-packet queue: "skenario tanpa
    optimasi")."""
    ctx = data.ctx
    base_q = st.quantity.split("_minus_")[0]
    want_max = st.relation == ">"
    mode, buf = cond.get("mode"), cond.get(data.buffer)
    levels = [1000.0] if "_queue1000_" in st.quantity else data.levels()
    scen = [(m, b) for m in ("tcp_path1", "mptcp") for b in levels]
    x = data.sample(data.select(mode, buffer=buf, experiment="scenario"), base_q)
    others = {f"{m} {data.buffer}={b:g}": data.sample(data.select(m, buffer=b, experiment="scenario"), base_q)
              for m, b in scen if not (m == mode and b == buf)}
    lab, y = _best_other(data, others, base_q, want_max)
    reg = core.region(st.relation, st.value)
    which = "the 1000-packet-queue scenarios" if "_queue1000_" in st.quantity else "the scenarios"
    stmt = f"{mode} {data.buffer}={buf:g}: {base_q} {'highest' if want_max else 'lowest'} of {which}"
    return [_welch_row(st, stmt, x, y, reg, ctx, notes, "no complete runs of the scenarios", before=[f"against {lab}"],
                       unit=UNIT[base_q])]


def _flood_minus_without(st, data: _Data, cond, notes) -> list[dict]:
    """The flood window's value minus the same configuration's without a flood (003 §IV.C, "meningkat … akibat banjir
    trafik"): e.g. ping loss during the flood (resilience runs) minus ping loss of the Table 2 scenario runs."""
    ctx = data.ctx
    q_flood = st.quantity.replace("_minus_without_flood", "")
    q_base = q_flood.replace("_during_flood", "")
    mode, buf = cond.get("mode", "mptcp"), cond.get(data.buffer)
    x = data.sample(data.select(mode, buffer=buf, experiment=st.experiment, flood=cond.get("udp_flood_mbps"),
                                scheduler=MPTCP_SUBSTITUTE), q_flood)
    y = data.sample(data.select(mode, buffer=buf, experiment="scenario", scheduler=MPTCP_SUBSTITUTE), q_base)
    reg = core.region(st.relation, st.value)
    stmt = f"{mode} {data.buffer}={buf:g}: {q_base} during the flood {st.relation} without it"
    return [_welch_row(st, stmt, x, y, reg, ctx, list(notes), "no complete runs with and without the flood",
                       before=["against the scenario runs without a flood"], unit=UNIT[q_base])]


def _welch_row(st, stmt, x, y, reg, ctx, notes, missing, before=(), unit="") -> dict:
    """A statement judged on the Welch difference mean(x) - mean(y) (``unit``: theirs); "not run" (``missing``)
    without both."""
    if not x.size or not y.size:
        return core.row(st.id, st.section, st.experiment, stmt, _paper_value(st), None, "Welch t", "not run", missing,
                        unit=unit)
    e = core.two_sample(x, y, reg, ctx.alpha)
    v, note = core.decide(e, reg)
    return core.row(st.id, st.section, st.experiment, stmt, _paper_value(st), e, "Welch t", v,
                    "; ".join(n for n in [note, *before, e.detail, *notes] if n), unit=unit)


def _mptcp_minus_single(st, data: _Data, cond, notes) -> list[dict]:
    ctx = data.ctx
    buf = cond.get(data.buffer)
    x = data.sample(data.select("mptcp", buffer=buf, experiment="scenario"), "throughput_mbps")
    y = data.sample(data.select(SINGLE_MODES[data.family][0], buffer=buf, experiment="scenario"), "throughput_mbps")
    reg = core.region(st.relation, st.value)
    stmt = f"MPTCP throughput above single-path TCP ({data.buffer}={buf:g})"
    return [_welch_row(st, stmt, x, y, reg, ctx, list(notes), "no complete runs of both modes",
                       unit=UNIT["throughput_mbps"])]


def _mark_substitute(rows: list[dict], statement_id: str) -> list[dict]:
    """Rows that judge ``statement_id`` on the default scheduler's runs: shown apart, never the statement's verdict
    (``substitute_for``), each explained by the substitution itself when it is not "reproduced"."""
    for r in rows:
        r["note"] = f"substitute: the default scheduler's runs; {r['note']}"
        r["substitute_for"] = r["claim_id"].split("/")[0]
    return rows


def claims(ctx: core.Ctx, family: str, statements: pd.DataFrame) -> list[dict]:
    """One row per statement of ``family`` (and per substitute scheduler), columns ``core.COLUMNS`` minus paper."""
    data = _Data(ctx, family)
    out = []
    for st in statements.itertuples(index=False):
        cond = parse_condition(st.condition)
        notes = []
        if any(k in cond for k in IGNORED_CONDITIONS):
            notes.append("flood timeline as recorded (a scaled profile shortens the paper's minutes 5-10)")
        q = st.quantity
        if "gap_mptcp_minus_max_single" in q or "gap_mptcp_minus_min_single" in q:
            for sched, suffix in _schedulers(cond, data):
                rows = _gap_vs_single(st, data, cond, suffix, sched, notes)
                out.extend(_mark_substitute(rows, st.id) if suffix else rows)
        elif "large_minus_small_buffer" in q:
            for sched, suffix in _schedulers(cond, data):
                rows = _large_minus_small(st, data, cond, suffix, sched, notes)
                out.extend(_mark_substitute(rows, st.id) if suffix else rows)
        elif "_minus_" in q and "table2_scenarios" in q:
            out.extend(_vs_other_scenarios(st, data, cond, notes))
        elif q.endswith("_during_flood_minus_without_flood"):
            out.extend(_flood_minus_without(st, data, cond, notes))
        elif q == "throughput_gap_mptcp_minus_single_path_mbps":
            out.extend(_mptcp_minus_single(st, data, cond, notes))
        elif q in QUANTITY:
            scheds = _schedulers(cond, data) if "mptcp" in _modes(st, cond) else [(None, "")]
            for sched, suffix in scheds:
                rows = _absolute(st, data, cond, suffix, sched, notes)
                out.extend(_mark_substitute(rows, st.id) if suffix else rows)
        else:
            out.append(core.row(st.id, st.section, st.experiment, f"{q} {_paper_value(st)}", _paper_value(st),
                                None, "", "not run", f"no measurement defined for quantity {q!r}",
                                unit=st.unit if isinstance(st.unit, str) else ""))
    return out


def tiphon_claims(ctx: core.Ctx, family: str, tiphon: pd.DataFrame) -> list[dict]:
    """The TIPHON classes a paper assigns (``tiphon.csv`` rows of kind "assignment"): for each metric named, the
    class's range under ``analysis.metrics.tiphon``'s thresholds as the target region of our mean's interval."""
    from analysis.metrics import tiphon as tp

    data = _Data(ctx, family)
    bounds = {"latency": tp.DELAY_MS, "jitter": tp.JITTER_MS, "packet_loss": tp.LOSS_PCT}
    out = []
    for t in tiphon.itertuples(index=False):
        if t.kind != "assignment":
            continue
        cond = parse_condition(t.condition)
        idx = {v: k for k, v in tp.CATEGORIES.items()}.get(str(t[6]))      # column "class"
        for metric in str(t.metric).split(";"):
            kind = next((k for k in bounds if metric.startswith(k)), None)
            cid = f"{t.id}-{metric.split('_')[0]}"
            stmt = f"TIPHON class of {metric}: {t[6]}"
            unit = UNIT.get(metric, "")
            if kind is None or idx is None or metric not in QUANTITY:
                out.append(core.row(cid, t.section, t.experiment, stmt, t[6], None, "", "not run",
                                    f"no TIPHON thresholds for {metric!r}", unit=unit))
                continue
            b = bounds[kind]
            lo = -math.inf if idx == 4 else b[3 - idx]     # class k spans (bound of k+1, bound of k]
            hi = b[4 - idx] if idx > 1 else math.inf
            reg = (0.0 if idx == 4 else lo, hi, idx != 4, False)
            sel = data.select(cond.get("mode", "mptcp"), buffer=cond.get(data.buffer), scheduler=MPTCP_SUBSTITUTE,
                              experiment=t.experiment, flood=cond.get("udp_flood_mbps"))
            x = data.sample(sel, metric)
            if not x.size:
                out.append(core.row(cid, t.section, t.experiment, stmt, t[6], None, "one-sample t", "not run",
                                    "no complete runs of this configuration", unit=unit))
                continue
            e = core.one_sample(x, reg, ctx.alpha)
            v, note = core.decide(e, reg)
            extra = f"class range {reg[0]:g}-{reg[1]:g} (analysis.metrics.tiphon)"
            r = core.row(cid, t.section, t.experiment, stmt, t[6], e, "one-sample t", v,
                         "; ".join(n for n in [note, extra] if n), unit=unit)
            if reg[1] - reg[0] <= 0:
                _degenerate_class(r, ctx, family, t, metric, kind, idx, e, b)
            out.append(r)
    return out


def _degenerate_class(r, ctx, family, t, metric, kind, idx, e, bounds) -> None:
    """A class whose band is a single value (TIPHON's 'Sangat Bagus' jitter is exactly 0 ms) contains no measured
    value, the paper's own included: no interval can be inside it, so the check decides nothing ("not comparable").
    The explanation gives the class the table puts the paper's own value in, and the classes of our interval."""
    from analysis import reference
    from analysis.metrics import tiphon as tp

    st = reference.load_statements(reference.REFERENCE_DIR / family).set_index("id")
    paper_vals = [float(v) for v, q, c in zip(st["value"], st["quantity"], st["condition"])
                  if q == metric and parse_condition(c).get("mode") == parse_condition(t.condition).get("mode")]
    index_of = {"latency": tp.delay_index, "jitter": tp.jitter_index, "packet_loss": tp.loss_index}[kind]
    unit = "%" if kind == "packet_loss" else "ms"
    ours = sorted({tp.category(index_of(max(v, 0.0))) for v in (e.lo, e.hi) if math.isfinite(v)})
    paper_cls = [f"{v:g} -> {tp.category(index_of(v))}" for v in paper_vals]
    r["verdict"] = "not comparable"
    core.explain(r, "paper-inconsistent",
                 f"The TIPHON table's '{tp.category(idx)}' {kind} is the single value {bounds[0]:g} {unit}, so no measured "
                 f"value falls in it: the paper assigns the class to its own {', '.join(f'{v:g}' for v in paper_vals)}"
                 f" {unit}, which the same table puts in {', '.join(p.split(' -> ')[1] for p in paper_cls) or '?'}. Ours "
                 f"({core.fmt(e.value, 4)} {unit}, 95 % interval {core.fmt(e.lo, 4)} to {core.fmt(e.hi, 4)}) is in "
                 f"{' / '.join(ours)} by that table.",
                 paper_value_class=paper_cls, ours_interval_classes=ours, class_band=[bounds[0], bounds[0]])
