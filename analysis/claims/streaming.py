"""Claims of study 002 (Saputri, Nuha & Prabowo, "Analisis Unjuk Kerja PCC Menggunakan Video Streaming": PCC Vivace
vs TCP CUBIC streaming video to three clients under UDP background traffic), one check per statement of
``data/reference/002/statements.csv``, judged on the per-(run, client) rows of ``analysis.families.streaming`` with the
verdict rules of ``analysis.claims.core`` (reproduced / not reproduced / inconclusive / not run with a reason).

Per run (the replicate), the paper's "rata-rata" of Tables 5, 7 and 9 — the mean over the clients: ``thr`` = mean of
the clients' throughput_kbps (kbit/s = 1000 bit/s, the paper's kbps), ``delay`` = mean of their delay_mean_ms (one-way
server -> client, ms; the paper's Table 3 defines delay as the time data takes from source to destination, its
computation from the Wireshark capture is not printed), ``loss`` = mean of their loss_pct (server data packets never
seen at the client capture, %; the paper: packets lost of those sent). For test 5 the paper printed client 1 only
(clients 2 and 3 "-"); ours is the mean over the three clients of the run, which stream alike.
A test's value m(test, cc) is the mean over its repetitions. The tests are our experiments test1..test5 (the paper's
"Pengujian" 1-5).

Quantities (data/reference/002/README.md):

* ``<metric>`` at one test, one cc (``approx``): mean of the runs' values, Student t interval, against value ± tol.
* ``<metric>_mean_over_tests`` (test=2-4 or 1-4): mean over the tests of m(test, cc); interval: the union of a
  percentile bootstrap (repetitions resampled within each (test, cc)) and a delta-method t interval
  (``analysis.claims.westwood.level_bootstrap``); against value ± tol.
* ``<metric>_gap_pcc_vivace_minus_cubic`` at one test (``>``/``<`` 0): Welch difference pcc_vivace − cubic of the
  runs' values, no margin. Over several tests (the overall verdicts "PCC ... lebih baik": S07-S09 and S66 with
  test=1-4, S44 and S55 without a condition, i.e. tests 1-5): the gap of the means over those tests,
  mean_t m(t, pcc_vivace) − mean_t m(t, cubic), level bootstrap as above. ``..._mean_over_tests_gap_...``
  (test=2-4): the same over the condition's tests.
* ``delay_ms_gap_minus_test1`` (S27, cubic): m(t, cubic) − m(1, cubic) > 0 at EVERY test t of 2-4, Welch per test,
  combined by ``core.all_levels`` (intersection-union).

Tolerances of ``approx`` values (the paper prints none): throughput ±10 % of the printed value (as studies 001/003);
delay ±20 % of the printed value (as studies 001/003/004; no floor: the printed 0,004-0,005 ms of test 5 are judged
as printed); packet loss ±20 % of the printed value, no floor — the printed losses lie between 0,016 and 1,612 %, so
studies 001/003's ±2 points would accept 0 % for every one of them, and so did a floor of 0.1 points for the five
printed 0,016-0,033 % (until 2026-11-27; a claim audit found it); losses are counted over ~100,000 packets per (test,
cc), with exact intervals. Comparisons (gaps) have no margin.

Coverage: a statement over several tests is computed over the tests recorded for every cc it needs; when a test of its
range is missing the verdict is at most "inconclusive" (the note names the missing tests and why). "not run" when a
needed cc has no usable run at all: the SKIPPED text (e.g. pcc_vivace unavailable on the kernel), a failed analysis, or
"no runs".

Scaling (docs/families.md "Study 002"): the paper's link is 1 Gbit/s, ours 100 Mbit/s; the background keeps its
fraction of capacity (tests 2-4: 0.08/0.16/0.24 -> 8/16/24 Mbit/s, test 5: 90 %), the video keeps its bitrate, so the
video takes ≈ 11 % of our link against ≈ 1 % of the paper's. Relative statements (PCC vs TCP) are comparable;
absolute throughput is comparable per client only, because each client's stream is paced at the video's bitrate (ours
``video_kbps``, 3600 kbit/s by default; the paper's bitrate is not printed, its per-client cells are 3110-3754 kbps
apart from three 10000 cells). Absolute delays and losses depend on the link and its queue, which the paper does not
print. Statements the README lists as inconsistent with the paper's own tables are judged against the printed value;
the note says what the tables give.

The paper streamed with VLC, TCP CUBIC over RTSP and PCC over HTTP in tests 1-3 (test 4: PCC's protocol not printed),
both over RTSP in test 5 run "at the same time"; ours: both ccs stream over HTTP (ffmpeg server, curl client), each cc
in its own runs in tests 1-4; in test 5 the paper profile runs both at once (``cc: cubic+pcc_vivace``: client 1 cubic,
client 2 pcc_vivace, one stream each, as the paper's client-1-only rows), and a gap at test 5 is then the paired
difference within each run (one-sample t of the per-run differences: the two streams compete for one link, so they
are not independent samples); runs recorded with each cc alone (the earlier reading) are judged as before, by Welch.
Said in the note of every comparison.

Tiers (``core.row``): throughput and packet loss are set by the testbed, not by the cc, wherever the shared link is
never filled: an application-limited stream gets the video's bitrate (``video_kbps``, chosen from the paper's Table 4)
and loses no packet whatever its cc. A throughput or loss statement whose every test has a configured offered load
(background_mbps + 3 clients x video_kbps) of at most :data:`UNFILLED_MAX_LOAD` of the shared link's rate
(``shared_link_mbit``, else :data:`SHARED_LINK_MBPS`) is therefore tier "sanity" (tests 1-4 here: at most 35 %);
statements that involve test 5 (90 % background) stay "behaviour". Delay statements stay "behaviour" everywhere (a
sender's bursts and pacing set the queueing it causes itself).

Collapsed intervals (:func:`guard`): a zero-width interval from n >= 2 repetitions that all gave the same value (e.g.
0 % loss in every run) is not certainty and never decides. For packet loss, the interval is then computed from the
packet counts instead: exact Clopper-Pearson per (test, cc) group (lost of sent packets, pooled over its runs and
clients), combined over the groups of the statistic with a Bonferroni split of alpha (:func:`exact_linear`). For the
other metrics the row gets no interval (at most "inconclusive").
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as _st

from analysis.claims import core
from analysis.claims.dualpath import parse_condition
from analysis.claims.westwood import _with_p, level_bootstrap, mean_over, not_run_reason
from analysis.families.streaming import CLIENTS

P, C = "pcc_vivace", "cubic"
TESTS = (1, 2, 3, 4, 5)
BACKGROUND_MBPS = {1: 0.0, 2: 8.0, 3: 16.0, 4: 24.0, 5: 90.0}   # the paper's fraction of capacity on 100 Mbit/s
VIDEO_KBPS = 3600.0
# metric -> (per-run column, per-client table, per-test mean table, unit)
METRICS = {"throughput_kbps": ("thr", 4, 5, "kbps"), "delay_ms": ("delay", 6, 7, "ms"),
           "packet_loss_pct": ("loss", 8, 9, "%")}
SHARED_LINK_MBPS = 100.0   # the shared link's rate when a run does not record shared_link_mbit (docs/families.md)
UNFILLED_MAX_LOAD = 0.5    # configured offered load / link rate up to which the link never fills (tests 1-4: <= 0.35)
SET_BY_TESTBED = ("throughput_kbps", "packet_loss_pct")   # metrics an unfilled link sets whatever the cc
THR_REL_TOL = 0.10
DELAY_REL_TOL = 0.20
LOSS_TOL = (0.20, 0.0)      # (fraction of the printed value, percentage-point floor: none, see the docstring)
NAN = float("nan")
_SD_NOTE = ("README: the printed value is not a mean of anything printed; it equals the sample SD (n − 1) of Table 5's "
            "tests 1-4 (1064.841 for TCP; 150.852 for PCC, printed 150,825)")
KNOWN = {   # the paper's own inconsistencies (data/reference/002/README.md), repeated where a verdict depends on them
    "002-S01": _SD_NOTE, "002-S02": _SD_NOTE, "002-S40": _SD_NOTE + "; the abstract prints 1064,841",
    "002-S41": _SD_NOTE,
    "002-S10": "§4.1.1 prints 3643,444; Table 5 and §5 print 3643,334 (mean of Table 4's cells 3643.333)",
    "002-S34": "Table 5 rounds 3643.333 up to 3643,334",
    "002-S16": "Table 5's cubic tests 2-4 include client 1's three 10000 kbps cells (about 2.7x every other cell); "
               "without them TCP's tests 2-4 would average 3566.0/3618.5/3614.5 kbps",
    "002-S37": "Table 5's cubic tests 2-4 include client 1's three 10000 kbps cells (README)",
    "002-S17": "the mean of Table 5's tests 2-4 is 3397.778, not the printed 3397,111",
    "002-S38": "the mean of Table 5's tests 2-4 is 3397.778, not the printed 3397,111",
    "002-S18": "most of the paper's gap (-2335.3 kbps, Table 5) is cubic client 1's three 10000 kbps cells; without "
               "them Table 4 gives -201.9 kbps (cubic 3599.7, PCC 3397.8)",
    "002-S39": "most of the paper's gap (-2335.3 kbps, Table 5) is cubic client 1's three 10000 kbps cells; without "
               "them Table 4 gives -201.9 kbps (cubic 3599.7, PCC 3397.8)",
    "002-S09": "README: contradicts test 1, where PCC's throughput is the higher (S11, S36)",
    "002-S44": "README: contradicts test 1, where PCC's throughput is the higher (S11, S36)",
    "002-S07": "README: the abstract omits §5's exception at 90 % background (loss, S64-S67)",
    "002-S08": "README: the abstract omits §5's exception at 90 % background: TCP's loss is lower there (S64-S67)",
    "002-S24": "§5 prints 4,231 ms for the same scenario (S48, = mean of Table 7's tests 2-4); 9,280 is reproduced "
               "by no mean, sum or SD of Tables 6/7",
    "002-S25": "§5 prints 5,525 ms for the same scenario (S49, = mean of Table 7's tests 2-4); 12,391 exceeds every "
               "TCP delay cell (max 5,594)",
    "002-S29": "Table 9 prints 1,433; the mean of Table 8's cells is 1.443",
    "002-S57": "Table 9 prints 1,433; the mean of Table 8's cells is 1.443",
    "002-S31": "0,033 is test 2's value alone; the mean of Table 9's tests 2-4 is 0.011",
    "002-S32": "1,612 is reproduced by no mean of Tables 8/9 (mean of tests 2-4: 0.725, S59; a 1,61 cell is TCP "
               "test 4 client 3)",
    "002-S60": "the mean of Table 9's tests 2-4 is 0.011; the printed 0,111 has an extra digit",
    "002-S06": "Table 9's mean over tests 1-4 is 0.0165 (cells 0.0167), printed 0,016",
    "002-S63": "Table 9's mean over tests 1-4 is 0.0165 (cells 0.0167), printed 0,016",
    "002-S05": "= mean of the twelve cells of tests 1-4 (0.905); the mean of Table 9 as printed is 0.902 (its 1,433)",
    "002-S62": "= mean of the twelve cells of tests 1-4 (0.905); the mean of Table 9 as printed is 0.902 (its 1,433)",
    "002-S53": "README: ~1000x below every other delay (2,205-9,716 ms) under the heaviest background; no unit change "
               "is stated",
    "002-S54": "README: ~1000x below every other delay (2,205-9,716 ms) under the heaviest background; no unit change "
               "is stated",
}


def tolerance(metric: str, value: float) -> float:
    """Half-width of the band around an "approx" value of ``metric`` (module docstring), in the metric's unit."""
    v = abs(float(value))
    if metric == "throughput_kbps":
        return THR_REL_TOL * v
    if metric == "delay_ms":
        return DELAY_REL_TOL * v
    return max(LOSS_TOL[0] * v, LOSS_TOL[1])


def split_quantity(quantity: str) -> tuple[str | None, str]:
    """(metric, kind) of a statement quantity: kind "value", "mean_over_tests", "gap", "mean_over_tests_gap" or
    "gap_minus_test1"; (None, quantity) when the metric is unknown."""
    for m in METRICS:
        if quantity == m or quantity.startswith(m + "_"):
            rest = quantity[len(m):].lstrip("_")
            kind = {"": "value", "mean_over_tests": "mean_over_tests",
                    "gap_pcc_vivace_minus_cubic": "gap",
                    "mean_over_tests_gap_pcc_vivace_minus_cubic": "mean_over_tests_gap",
                    "gap_minus_test1": "gap_minus_test1"}.get(rest)
            return (m, kind) if kind else (None, quantity)
    return None, quantity


def test_number(experiment) -> float:
    """3 for "test3"; NaN for anything else."""
    s = str(experiment or "")
    return float(s[4:]) if s.startswith("test") and s[4:].isdigit() else NAN


# --------------------------------------------------------------------------------------------- per-run values

def inter_packet_ms(payload_bytes, throughput_kbps, sent_pkts, loss_pct):
    """Mean inter-packet time of a stream at its receiver, ms: the time from its first to its last data packet
    (payload_bytes x 8 / throughput_kbps: bit / (kbit/s) = ms, the span ``throughput_kbps`` is computed over) divided
    by the data packets received (sent_pkts x (1 - loss_pct / 100)), i.e. "total time / packets" as Wireshark-based
    QoS papers compute a "delay". Element-wise on arrays; NaN where an input is missing or not positive."""
    b, thr, n, loss = (np.asarray(pd.to_numeric(pd.Series(np.atleast_1d(v)), errors="coerce"), dtype=float)
                       for v in (payload_bytes, throughput_kbps, sent_pkts, loss_pct))
    pkts = n * (1.0 - loss / 100.0)
    ok = (b > 0) & (thr > 0) & (pkts > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(ok, b * 8.0 / thr / pkts, np.nan)
    return out if np.ndim(payload_bytes) else float(out[0])


def run_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per run of streaming rows ``df``: run_id, experiment, test (1-5), cc, background_mbps, video_kbps,
    duration_s, rep, link_mbit (the shared link's rate, Mbit/s; NaN when not recorded), thr (mean of the clients'
    throughput_kbps, kbit/s), delay (mean of their delay_mean_ms, ms), loss (mean of their loss_pct, %), ipt (mean of
    their :func:`inter_packet_ms`, ms); a mean over the clients with a finite value. sent_pkts and lost_pkts: the
    run's data packets sent and lost (sum over its clients of sent_pkts and loss_pct / 100 x sent_pkts, rounded;
    NaN when a client lacks either)."""
    cols = ["run_id", "experiment", "test", "cc", "cc_pair", "background_mbps", "video_kbps", "duration_s", "rep",
            "link_mbit", "thr", "delay", "loss", "ipt", "sent_pkts", "lost_pkts"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    num = lambda c: (pd.to_numeric(df[c], errors="coerce") if c in df.columns   # noqa: E731
                     else pd.Series(np.nan, index=df.index, dtype=float))
    sent, loss = num("sent_pkts"), num("loss_pct")
    pair = df["cc_pair"] if "cc_pair" in df.columns else pd.Series(None, index=df.index, dtype=object)
    d = pd.DataFrame({"run_id": df["run_id"].astype(str), "experiment": df["experiment"], "cc": df["cc"],
                      "cc_pair": pair,
                      "background_mbps": num("background_mbps"), "video_kbps": num("video_kbps"),
                      "duration_s": num("duration_s"), "rep": num("rep"), "link_mbit": num("shared_link_mbit"),
                      "thr": num("throughput_kbps"), "delay": num("delay_mean_ms"), "loss": loss,
                      "ipt": inter_packet_ms(num("received_payload_bytes").to_numpy(),
                                             num("throughput_kbps").to_numpy(), sent.to_numpy(), loss.to_numpy()),
                      "sent_pkts": sent, "lost_pkts": (loss / 100.0 * sent).round()})
    g = d.groupby(["run_id", "cc"], sort=True)   # a run of two ccs at once (cc_pair) is one replicate of each
    out = g[["experiment", "cc_pair", "background_mbps", "video_kbps", "duration_s", "rep", "link_mbit"]].first()
    for c in ("thr", "delay", "loss", "ipt"):
        out[c] = g[c].mean()          # NaN-skipping mean over the run's clients
    for c in ("sent_pkts", "lost_pkts"):
        out[c] = g[c].sum(min_count=1).where(g[c].count() == g.size())   # NaN unless every client has it
    out["test"] = [test_number(e) for e in out["experiment"]]
    out["cc_pair"] = out["cc_pair"].astype(object).where(out["cc_pair"].notna(), None)
    return out.reset_index()[cols]


def paired_differences(runs: pd.DataFrame, column: str, test: int, a: str, b: str) -> np.ndarray | None:
    """Per-run differences a − b of ``column`` when every run of ``test`` with a or b ran both at once (``cc_pair``)
    and has a finite value for each (the replicate is the run); None otherwise (runs of one cc each: independent)."""
    r = runs[(runs["test"] == test) & runs["cc"].isin([a, b])]
    if r.empty or r["cc_pair"].isna().any():
        return None
    w = r.pivot_table(index="run_id", columns="cc", values=column, aggfunc="first")
    if set(w.columns) != {a, b} or w.isna().any().any():
        return None
    return (w[a] - w[b]).to_numpy(dtype=float)


def paper_configuration(runs: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The runs of each test at one configuration: when a test was recorded at several (background_mbps, video_kbps),
    those at the test's default background (the paper's fraction of capacity) and, among them, at 3600 kbit/s (else
    the most frequent video bitrate). Returns (runs kept, notes naming what was left out)."""
    keep, notes = [], []
    for t, g in runs.groupby("test", sort=True):
        cfg = g[["background_mbps", "video_kbps"]].round(6).astype(str).agg("/".join, axis=1)
        if cfg.nunique() <= 1:
            keep.append(g)
            continue
        sel = g[np.isclose(g["background_mbps"], BACKGROUND_MBPS.get(int(t), NAN))]
        sel = sel if len(sel) else g
        if np.isclose(sel["video_kbps"], VIDEO_KBPS).any():
            sel = sel[np.isclose(sel["video_kbps"], VIDEO_KBPS)]
        else:
            sel = sel[np.isclose(sel["video_kbps"], sel["video_kbps"].mode().iloc[0])]
        keep.append(sel)
        notes.append(f"test {int(t)}: only runs at background {sel['background_mbps'].iloc[0]:g} Mbit/s and video "
                     f"{sel['video_kbps'].iloc[0]:g} kbit/s used ({len(g) - len(sel)} other run(s) left out)")
    return (pd.concat(keep) if keep else runs.iloc[0:0]), notes


def groups(runs: pd.DataFrame, column: str, tests, ccs) -> dict:
    """{(test, cc): finite values of ``column``} for ``tests`` and ``ccs``."""
    out = {}
    for (t, cc), g in runs.groupby(["test", "cc"], sort=True):
        if cc not in ccs or int(t) not in tests:
            continue
        x = g[column].to_numpy(dtype=float)
        x = x[np.isfinite(x)]
        if x.size:
            out[(int(t), cc)] = x
    return out


def counts(runs: pd.DataFrame, tests, ccs) -> dict:
    """{(test, cc): (lost, sent)} data packets of ``runs`` pooled over each group's runs (and their clients), for
    ``tests`` and ``ccs``; a group is left out when a run of it lacks the counts."""
    out = {}
    for (t, cc), g in runs.groupby(["test", "cc"], sort=True):
        if cc not in ccs or int(t) not in tests:
            continue
        k, n = pd.to_numeric(g["lost_pkts"], errors="coerce"), pd.to_numeric(g["sent_pkts"], errors="coerce")
        if len(g) and k.notna().all() and n.notna().all() and float(n.sum()) > 0:
            out[(int(t), cc)] = (int(k.sum()), int(n.sum()))
    return out


# --------------------------------------------------------------------------------------------- what a test exercises

def offered_load(runs: pd.DataFrame, test: int) -> float:
    """The configured load offered to the shared link in ``test``, as a fraction of its rate: (background_mbps +
    3 clients x video_kbps / 1000) / link rate, the largest over the test's runs; without runs, the test's default
    background (:data:`BACKGROUND_MBPS`) and video (:data:`VIDEO_KBPS`). The link rate is ``link_mbit`` where
    recorded, else :data:`SHARED_LINK_MBPS`."""
    r = runs[runs["test"] == test] if len(runs) else runs
    if not len(r):
        return (BACKGROUND_MBPS.get(int(test), NAN) + len(CLIENTS) * VIDEO_KBPS / 1000.0) / SHARED_LINK_MBPS
    bg = pd.to_numeric(r["background_mbps"], errors="coerce").fillna(0.0).to_numpy(dtype=float)
    video = pd.to_numeric(r["video_kbps"], errors="coerce").fillna(VIDEO_KBPS).to_numpy(dtype=float)
    link = pd.to_numeric(r["link_mbit"], errors="coerce").to_numpy(dtype=float)
    link = np.where(np.isfinite(link) & (link > 0), link, SHARED_LINK_MBPS)
    return float(np.max((bg + len(CLIENTS) * video / 1000.0) / link))


def tier(metric: str | None, tests, runs: pd.DataFrame) -> tuple[str, str]:
    """(tier, note) of a statement on ``metric`` over ``tests``: "sanity" for throughput and packet loss when every
    test leaves the shared link unfilled (:func:`offered_load` <= :data:`UNFILLED_MAX_LOAD`), since there the video's
    bitrate and a loss-free queue set them whatever the cc; else "behaviour" (note "")."""
    if metric not in SET_BY_TESTBED or not tests:
        return "behaviour", ""
    loads = {t: offered_load(runs, t) for t in tests}
    if not all(np.isfinite(x) and x <= UNFILLED_MAX_LOAD for x in loads.values()):
        return "behaviour", ""
    what = ("each stream's throughput is the video's bitrate (video_kbps, chosen from the paper's Table 4)"
            if metric == "throughput_kbps" else "the queue drops no packet")
    return "sanity", (f"sanity check: the configuration offers the shared link at most "
                      f"{100 * max(loads.values()):.0f} % of its rate in test(s) {_tests_txt(sorted(loads))} "
                      f"(background + 3 x video_kbps), so {what} whatever the cc: this checks the testbed, not the cc")


# --------------------------------------------------------------------------------------------- collapsed intervals

def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    """Exact (Clopper & Pearson 1934) two-sided (1 - alpha) interval of a binomial proportion with ``k`` events in
    ``n`` trials, as fractions; (NaN, NaN) when n < 1 or k is outside 0..n. For k = 0 the upper end is
    1 - (alpha/2)^(1/n) (about 3.7/n at alpha = 0.05, the "rule of three" at one-sided 5 %)."""
    if n < 1 or not 0 <= k <= n:
        return NAN, NAN
    lo = 0.0 if k == 0 else float(_st.beta.ppf(alpha / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(_st.beta.ppf(1 - alpha / 2, k + 1, n - k))
    return lo, hi


def exact_linear(cnt: dict, weights: dict, alpha: float) -> tuple[float, float] | None:
    """Interval (fractions) of sum_g w_g p_g, p_g = lost/sent of group g (``cnt`` {g: (lost, sent)}, ``weights``
    {g: w_g}): each group's Clopper-Pearson interval at alpha / G (Bonferroni over the G groups: simultaneous coverage
    >= 1 - alpha), the low end taking each group's low end where w_g > 0 and its high end where w_g < 0. Packets are
    taken as independent trials. None when a group has no counts."""
    if not weights or any(g not in cnt for g in weights):
        return None
    a = alpha / len(weights)
    lo = hi = 0.0
    for g, w in weights.items():
        gl, gh = clopper_pearson(*cnt[g], a)
        lo += w * (gl if w > 0 else gh)
        hi += w * (gh if w > 0 else gl)
    return lo, hi


def _exact_p(k: int, n: int, reg) -> float:
    """p of "the proportion (%) lies in region ``reg``" by exact binomial tests on k of n (the larger of the one-sided
    p-values against the region's finite ends inside 0-100 %)."""
    ps = []
    lo_t, hi_t = reg[0] / 100.0, reg[1] / 100.0
    if np.isfinite(hi_t) and 0 < hi_t < 1:
        ps.append(float(_st.binom.cdf(k, n, hi_t)))
    if np.isfinite(lo_t) and 0 < lo_t < 1:
        ps.append(float(_st.binom.sf(k - 1, n, lo_t)))
    return max(ps) if ps else NAN


def collapsed(e: core.Est) -> bool:
    """True when ``e`` rests on n >= 2 repetitions but its interval has zero width (every repetition gave the same
    value, e.g. 0 % loss in every run): a zero-variance sample, not certainty."""
    return e.n >= 2 and np.isfinite(e.lo) and np.isfinite(e.hi) and e.hi <= e.lo


def guard(e: core.Est, metric: str | None, cnt: dict, weights: dict, alpha: float, reg=None) -> tuple[core.Est, str]:
    """``e`` unchanged when its interval is not :func:`collapsed`; else, for packet loss, the estimate with the
    interval of :func:`exact_linear` over the packet counts ``cnt`` of the statistic sum_g w_g loss_g (``weights``;
    in %, exact p for a single group and region ``reg``); otherwise (or without counts) without an interval, so that
    it decides nothing. Returns (estimate, note: "" or what was done)."""
    if not collapsed(e):
        return e, ""
    ex = exact_linear(cnt, weights, alpha) if metric == "packet_loss_pct" else None
    if ex is None:
        return (core.Est(e.value, NAN, NAN, e.n, detail=e.detail),
                f"all {e.n} repetitions gave the same value: a zero-width interval is not certainty (no interval)")
    out = core.Est(e.value, 100.0 * ex[0], 100.0 * ex[1], e.n, detail=e.detail)
    if len(weights) == 1 and reg is not None:
        out.p = _exact_p(*cnt[next(iter(weights))], reg)
    lost = sum(cnt[g][0] for g in weights)
    sent = sum(cnt[g][1] for g in weights)
    over = f" in {len(weights)} (test, cc) groups, Bonferroni over them" if len(weights) > 1 else ""
    return out, (f"every repetition gave the same loss, {core.fmt(e.value, 3)} %: exact Clopper-Pearson interval of "
                 f"the packet counts ({lost} of {sent} packets lost{over}) instead of a zero-width t interval")


# --------------------------------------------------------------------------------------------- the paper's tables

def paper_means(directory: Path) -> dict:
    """{(metric, test, cc): value} of Tables 5, 7, 9 (the mean over the clients as printed); test 5, absent from Tables
    7 and 9, from client 1 of Tables 6 and 8 (the only client printed, as Table 5 does). {} without the files."""
    out = {}
    for metric, (_, per_client, per_test, _) in METRICS.items():
        for tab, client in ((per_test, None), (per_client, 1)):
            p = Path(directory) / f"table{tab}.csv"
            if not p.is_file():
                continue
            t = pd.read_csv(p)
            t = t[(t["metric"] == metric) & t["value"].notna()]
            if client is not None:
                t = t[(pd.to_numeric(t["client"], errors="coerce") == client) & (t["test"] == 5)]
            for r in t.itertuples(index=False):
                out.setdefault((metric, int(r.test), r.cc), float(r.value))
    return out


# --------------------------------------------------------------------------------------------- one statement

def scope(st) -> tuple[str | None, str, list[int], list[str], bool]:
    """(metric, kind, tests, ccs, overall) of a statement row of statements.csv: ``split_quantity`` of its quantity,
    the tests of its condition (every test, and overall=True, when it has none) and the ccs it needs."""
    metric, kind = split_quantity(str(st.quantity))
    t = parse_condition(st.condition).get("test")
    if isinstance(t, tuple):
        tests, overall = list(range(int(t[0]), int(t[1]) + 1)), False
    elif isinstance(t, float):
        tests, overall = [int(t)], False
    else:
        tests, overall = list(TESTS), True
    ccs = [P, C] if "vs" in str(st.ccs) else [c for c in str(st.ccs).split(";") if c]
    return metric, kind, tests, ccs, overall


class _S:
    """One statement: its metric and kind, the tests and ccs it needs, the runs."""

    def __init__(self, ctx: core.Ctx, runs: pd.DataFrame, st, paper: dict, extra: list[str]):
        self.ctx, self.st, self.runs, self.paper, self.extra = ctx, st, runs, paper, extra
        self.metric, self.kind, self.tests, self.ccs, self.overall = scope(st)
        self.column = METRICS[self.metric][0] if self.metric else None
        self.notes = [KNOWN[st.id]] if st.id in KNOWN else []
        self.tier, tier_note = tier(self.metric, self.tests, runs)
        self.notes += [tier_note] if tier_note else []
        self.cnt = counts(runs, self.tests, self.ccs) if self.metric == "packet_loss_pct" else {}

    # ---- text
    def unit(self) -> str:
        return METRICS[self.metric][3] if self.metric else str(self.st.unit)

    def column_unit(self) -> str:
        """The unit of ours and its interval (the scorecard's ``unit``): kbit/s, ms or % (a gap keeps its metric's
        unit; a loss gap is in percentage points, printed "%")."""
        return {"kbps": "kbit/s"}.get(self.unit(), self.unit())

    def paper_value(self) -> str:
        st = self.st
        every = " at every test" if self.kind == "gap_minus_test1" else ""
        if st.relation == "approx":
            return f"about {st.value:g} {self.unit()}"
        return f"{st.relation} {st.value:g} {self.unit()}{every}"

    def statement(self) -> str:
        cond = self.st.condition if isinstance(self.st.condition, str) and self.st.condition else "all tests"
        return f"{self.st.quantity} {self.paper_value()} ({self.st.ccs}; {cond})"

    def row(self, est, test, verdict, parts) -> dict:
        note = "; ".join(n for n in list(parts) + self.notes + self.context() + self.extra if n)
        return core.row(self.st.id, self.st.section, self.st.experiment, self.statement(), self.paper_value(), est,
                        test, verdict, note, tier=self.tier, unit=self.column_unit())

    def guard(self, e: core.Est, weights: dict, reg=None) -> tuple[core.Est, str]:
        """:func:`guard` with this statement's metric, packet counts and alpha."""
        return guard(e, self.metric, self.cnt, weights, self.ctx.alpha, reg)

    def not_run(self, reason) -> dict:
        return self.row(None, "", "not run", [reason])

    def context(self) -> list[str]:
        """What every row of this statement should say: scaling, protocols, test 5, the metric's comparability."""
        out = []
        if self.metric == "throughput_kbps" and self.kind in ("value", "mean_over_tests"):
            out.append("absolute throughput comparable per client only: each client's stream is paced at the video's "
                       "bitrate (ours video_kbps; the paper's is not printed)")
        elif self.metric == "delay_ms" and self.kind in ("value", "mean_over_tests"):
            out.append("ours: one-way delay server -> client capture; the paper's computation is not printed")
        elif self.metric == "packet_loss_pct" and self.kind in ("value", "mean_over_tests"):
            out.append("ours: server data packets never seen at the client capture")
        if any(t > 1 for t in self.tests):
            out.append("scaled: 100 Mbit/s link (paper 1 Gbit/s), background at the paper's fraction of capacity")
        if 5 in self.tests:
            five = self.runs[self.runs["test"] == 5]
            together = len(five) and five["cc_pair"].notna().all()
            out.append("test 5: the paper ran both ccs at once and printed client 1 only; ours: "
                       + ("both at once in each run, one client each" if together
                          else "separate runs, mean over the 3 clients"))
        if len(self.ccs) > 1 and any(t <= 4 for t in self.tests):
            out.append("paper: cubic over RTSP, PCC over HTTP (tests 1-3); ours: both over HTTP")
        return out

    # ---- data
    def reasons(self, g: dict, tests) -> dict:
        """{(test, cc): why there is no value} for the needed combinations missing from ``g``."""
        out = {}
        for t in tests:
            for cc in self.ccs:
                if (t, cc) in g:
                    continue
                r = self.runs[(self.runs["test"] == t) & (self.runs["cc"] == cc)]
                out[(t, cc)] = (f"no finite {self.metric} value in the runs of test{t} with {cc}" if len(r)
                                else not_run_reason(self.ctx, f"test{t}", cc, self.st.condition, []))
        return out

    def common(self, g: dict, tests) -> list[int]:
        return [t for t in tests if all((t, cc) in g for cc in self.ccs)]

    def tol_note(self, tol: float) -> str:
        u = "percentage points" if self.metric == "packet_loss_pct" else self.unit()
        return f"tolerance ±{tol:.3g} {u}"

    def recomputed(self, make, tests) -> str:
        """The paper's own value of this statistic from Tables 5/7/9 (test 5: client 1 of Tables 4/6/8)."""
        try:
            m = {(t, cc): self.paper[(self.metric, t, cc)] for t in tests for cc in self.ccs}
        except KeyError:
            return ""
        where = f"tests {_tests_txt(tests)}" if len(tests) > 1 else f"test {tests[0]}"
        return f"paper's tables give {core.fmt(float(make(m)), 6)} {self.unit()} over {where}"


def _tests_txt(tests) -> str:
    tests = list(tests)
    if len(tests) > 1 and tests == list(range(tests[0], tests[-1] + 1)):
        return f"{tests[0]}-{tests[-1]}"
    return ", ".join(str(t) for t in tests)


def _gap_stat(tests):
    return lambda m: mean_over(tests, P)(m) - mean_over(tests, C)(m)


def _single(s: _S) -> dict:
    """A value or a gap at one test: one-sample t / Welch t."""
    ctx, st = s.ctx, s.st
    t = s.tests[0]
    g = groups(s.runs, s.column, [t], s.ccs)
    why = s.reasons(g, [t])
    if why:
        return s.not_run("; ".join(dict.fromkeys(why.values())))
    if s.kind == "value":
        cc = s.ccs[0]
        tol = tolerance(s.metric, st.value)
        reg = core.region(st.relation, float(st.value), tol=tol)
        e, why_ci = s.guard(core.one_sample(g[(t, cc)], reg, ctx.alpha), {(t, cc): 1.0}, reg)
        v, n = core.decide(e, reg)
        return s.row(e, "exact binomial" if why_ci and np.isfinite(e.lo) else "one-sample t", v,
                     [n, why_ci, f"test {t}, {e.n} run(s)", s.tol_note(tol), s.recomputed(lambda m: m[(t, cc)], [t])])
    reg = core.region(st.relation, float(st.value))
    diff = paired_differences(s.runs, s.column, t, P, C)
    est = core.one_sample(diff, reg, ctx.alpha) if diff is not None else core.two_sample(g[(t, P)], g[(t, C)], reg,
                                                                                         ctx.alpha)
    e, why_ci = s.guard(est, {(t, P): 1.0, (t, C): -1.0})
    v, n = core.decide(e, reg)
    test = "exact binomial" if why_ci and np.isfinite(e.lo) else ("paired t" if diff is not None else "Welch t")
    pairing = f"paired within {e.n} run(s) of both ccs at once" if diff is not None else ""
    return s.row(e, test, v, [n, why_ci, f"test {t}", pairing, e.detail,
                              s.recomputed(lambda m: m[(t, P)] - m[(t, C)], [t])])


def _over_tests(s: _S) -> dict:
    """A mean over tests (one cc, approx) or a gap of means over tests (pcc_vivace − cubic, > / < 0): level
    bootstrap over the tests recorded for every cc needed."""
    ctx, st = s.ctx, s.st
    g = groups(s.runs, s.column, s.tests, s.ccs)
    tests = s.common(g, s.tests)
    why = s.reasons(g, s.tests)
    if not tests:
        return s.not_run("; ".join(dict.fromkeys(why.values())) or "no runs")
    g = {k: v for k, v in g.items() if k[0] in tests}
    gap = s.kind in ("gap", "mean_over_tests_gap")
    if gap:
        make, reg, tol = _gap_stat, core.region(st.relation, float(st.value)), None
        weights = {**{(t, P): 1.0 / len(tests) for t in tests}, **{(t, C): -1.0 / len(tests) for t in tests}}
    else:
        cc = s.ccs[0]
        make = lambda ts, cc=cc: mean_over(ts, cc)   # noqa: E731
        tol = tolerance(s.metric, st.value)
        reg = core.region(st.relation, float(st.value), tol=tol)
        weights = {(t, cc): 1.0 / len(tests) for t in tests}
    e = level_bootstrap(g, make(tests), alpha=ctx.alpha, n_boot=ctx.n_boot, seed=ctx.seed)
    _with_p(e, reg)
    e, why_ci = s.guard(e, weights, reg)
    v, n = core.decide(e, reg)
    parts = [n, why_ci]
    if len(tests) < len(s.tests):
        if v in ("reproduced", "not reproduced"):
            parts.append(f"would be {v} over the tests recorded")
            v = "inconclusive"
        missing = [t for t in s.tests if t not in tests]
        parts.append(f"only tests {_tests_txt(tests)} of {_tests_txt(s.tests)} recorded for "
                     f"{' and '.join(s.ccs)}; missing test(s) {_tests_txt(missing)}: "
                     + "; ".join(dict.fromkeys(r for (t, _), r in why.items() if t in missing)))
    else:
        parts.append(f"over tests {_tests_txt(tests)}")
    if tol is not None:
        parts.append(s.tol_note(tol))
    parts.append(s.recomputed(make(s.tests), s.tests))
    if s.metric == "throughput_kbps" and s.kind == "mean_over_tests" and s.st.id in ("002-S01", "002-S02",
                                                                                       "002-S40", "002-S41"):
        means = [float(g[(t, s.ccs[0])].mean()) for t in tests]
        if len(means) >= 2:
            parts.append(f"ours, the SD of the test means: {core.fmt(float(np.std(means, ddof=1)), 5)} kbps")
    if s.overall:
        parts.append("no condition printed: read as the gap of the means over every test (1-5)")
    parts.append(e.detail)
    return s.row(e, "exact binomial" if why_ci and np.isfinite(e.lo) else "level bootstrap", v, parts)


def _minus_test1(s: _S) -> dict:
    """m(t, cc) − m(1, cc) on the statement's side of 0 at every test t of the range (Welch per test)."""
    ctx, st = s.ctx, s.st
    cc = s.ccs[0]
    tests = [t for t in s.tests if t != 1]
    g = groups(s.runs, s.column, [1] + tests, [cc])
    why = s.reasons(g, [1] + tests)
    if (1, cc) in why or not any((t, cc) in g for t in tests):
        return s.not_run("; ".join(dict.fromkeys(why.values())))
    reg = core.region(st.relation, float(st.value))
    per, why_ci = [], []
    for t in tests:
        if (t, cc) in g:
            e, w = s.guard(core.two_sample(g[(t, cc)], g[(1, cc)], reg, ctx.alpha), {(t, cc): 1.0, (1, cc): -1.0})
            per.append((f"test={t}", e, reg))
            why_ci += [f"test {t}: {w}"] if w else []
    e, v, note = core.all_levels(per, len(tests), "test")
    paper = [f"test {t}: {core.fmt(s.paper[(s.metric, t, cc)] - s.paper[(s.metric, 1, cc)], 4)} {s.unit()}"
             for t in tests if (s.metric, t, cc) in s.paper and (s.metric, 1, cc) in s.paper]
    return s.row(e, "Welch t", v, [note, *why_ci, "vs test 1, per test", e.detail if e is not None else "",
                                   ("paper's Table 7 gaps: " + ", ".join(paper)) if paper else ""])


def claims(ctx: core.Ctx, statements: pd.DataFrame, directory) -> list[dict]:
    """One row per statement of study 002 (columns ``core.COLUMNS`` minus paper), judged on ``ctx.df`` (streaming
    rows, ``analysis.families.streaming``)."""
    runs = run_table(ctx.df)
    runs = runs[np.isfinite(pd.to_numeric(runs["test"], errors="coerce"))]
    runs, extra = paper_configuration(runs)
    paper = paper_means(Path(directory))
    out = []
    for st in statements.itertuples(index=False):
        s = _S(ctx, runs, st, paper, extra)
        if s.metric is None:
            out.append(s.not_run(f"no measurement defined for quantity {st.quantity!r}"))
        elif s.kind == "gap_minus_test1":
            out.append(_minus_test1(s))
        elif len(s.tests) == 1 and s.kind in ("value", "gap"):
            out.append(_single(s))
        else:
            out.append(_over_tests(s))
    return out
