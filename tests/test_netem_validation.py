"""analysis.netem_validation on hand-built results (captures written with tests/pcapgen.py whose sojourns are known
by construction, tc sample text and run.json written here): the sojourn matching, the quantiles, the steady window
and plateau, section 4's predictions, the TOST verdicts on made-up per-arm numbers, the TCP arms (sequence-space
goodput, iperf3's RTT samples, retransmissions matched by sequence number, random-loss counters, histograms and the
KS distance), the committed form (derived.json) and the Markdown entry point.
No namespace, no root: the harness itself (testbed/delayshim/validate-vm.sh) is not run here."""
from __future__ import annotations

import gzip
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import netem_validation as nv
from analysis.errors import AnalysisError

sys.path.insert(0, str(Path(__file__).parent))
from pcapgen import tcp, udp, write_pcap  # noqa: E402

T0 = 1_700_000_000.0          # pcapgen's epoch offset
A, B, SW = "10.91.1.1", "10.91.2.1", "10.91.1.2"
SPORT, DPORT = 40000, 5301
LEN = 1448


def dgram(t, ip_id, payload=LEN, src=A, dst=B, sport=SPORT, dport=DPORT):
    return udp(src, sport, dst, dport, payload=payload, t=t, ip_id=ip_id)


def table(pkts, tmp_path, name="x.pcap"):
    """Write ``pkts`` as a snaplen-96 Ethernet pcap (as the guest's tcpdump does) and read it back."""
    return nv.read_pcap(write_pcap(tmp_path / name, pkts, snaplen=96), cache=False)


# ---------------------------------------------------------------- matching
def test_match_sojourns_known_answers(tmp_path):
    # ids 1..10 arrive 1 ms apart; id 4 is dropped; the others leave after 25 ms + id ms
    ing = [dgram(i * 0.001, i) for i in range(1, 11)]
    ing += [dgram(0.0005, 99, payload=4),                       # iperf3's 4-byte connect datagram
            udp(B, DPORT, A, SPORT, payload=LEN, t=0.002, ip_id=3),  # the other direction
            udp("10.91.1.9", SPORT, B, DPORT, payload=LEN, t=0.003, ip_id=5)]  # another host, same id
    egr = [dgram(i * 0.001 + 0.025 + i * 0.001, i) for i in range(1, 11) if i != 4]
    ti, te = nv.flow_packets(table(ing, tmp_path, "in.pcap")), nv.flow_packets(table(egr, tmp_path, "out.pcap"))
    assert len(ti) == 10 and len(te) == 9
    m, c = nv.match_sojourns(ti, te)
    assert c == {"n_in": 10, "n_out": 9, "n_matched": 9, "n_unmatched_out": 0, "n_unmatched_in": 1, "n_ambiguous": 0}
    assert list(m["ip_id"]) == [1, 2, 3, 5, 6, 7, 8, 9, 10]
    np.testing.assert_allclose(m["sojourn_ms"], [25 + i for i in (1, 2, 3, 5, 6, 7, 8, 9, 10)], atol=1e-3)


def test_match_takes_the_recent_arrival_after_an_id_repeats(tmp_path):
    # id 7 at t = 0 (dropped) and again at t = 10 s (after a 16-bit wrap): the egress packet at 10.030 is the second
    ing = [dgram(0.0, 7), dgram(5.0, 8), dgram(10.0, 7)]
    egr = [dgram(5.040, 8), dgram(10.030, 7), dgram(11.0, 1234)]   # and one egress packet nobody sent
    m, c = nv.match_sojourns(nv.flow_packets(table(ing, tmp_path, "i.pcap")),
                             nv.flow_packets(table(egr, tmp_path, "o.pcap")))
    np.testing.assert_allclose(sorted(m["sojourn_ms"]), [30.0, 40.0], atol=1e-3)
    assert c["n_unmatched_in"] == 1 and c["n_unmatched_out"] == 1 and c["n_ambiguous"] == 0


def test_match_flags_ids_that_repeat_within_the_window():
    # a sender without per-socket ids (all 0): FIFO order, every match but the last one is ambiguous
    def mk(ts):
        return pd.DataFrame({"ts": ts, "src": A, "dst": B, "sport": SPORT, "dport": DPORT, "ip_id": 0,
                             "payload_len": LEN})
    m, c = nv.match_sojourns(mk([0.0, 0.001, 0.002]), mk([0.050, 0.051, 0.052]))
    np.testing.assert_allclose(m["sojourn_ms"], [50.0, 50.0, 50.0], atol=1e-9)
    assert c["n_ambiguous"] == 2


# ---------------------------------------------------------------- quantiles, window, plateau
def test_quantiles_and_window():
    q = nv.quantiles(np.arange(1, 101, dtype=float))
    assert q == {"n": 100, "median": 50.5, "p95": pytest.approx(95.05), "p99": pytest.approx(99.01)}
    assert nv.quantiles([np.nan])["n"] == 0 and np.isnan(nv.quantiles([])["median"])
    assert nv.steady_window(0.0, 10.0) == (4.0, 10.0)
    with pytest.raises(AnalysisError):
        nv.steady_window(5.0, 1.0)


def qdisc_block(ts, qdiscs):
    """One sampler block: ``qdiscs`` = [(kind, handle, parent, qlen, dropped), ...]."""
    out = [f"# ts={ts:.6f}"] if ts is not None else []
    for kind, handle, parent, qlen, dropped in qdiscs:
        where = "root refcnt 2" if parent == "root" else f"parent {parent}"
        out += [f"qdisc {kind} {handle} {where} limit 100",
                f" Sent {1490 * 1000} bytes 1000 pkt (dropped {dropped}, overlimits 7 requeues 0) ",
                f" backlog {qlen * 1490}b {qlen}p requeues 0"]
    return "\n".join(out) + "\n"


def test_parse_tc_and_root_dropped():
    text = ("qdisc tbf 1: root refcnt 2 rate 10Mbit burst 10000b lat 120.6ms \n"
            " Sent 29800 bytes 20 pkt (dropped 31, overlimits 5 requeues 0) \n"
            " backlog 147Kb 101p requeues 0\n"
            "qdisc bfifo 10: parent 1:1 limit 151400b\n"
            " Sent 29800 bytes 20 pkt (dropped 31, overlimits 0 requeues 0) \n"
            " backlog 150490b 101p requeues 0\n")
    t = nv.parse_tc(text)
    assert list(t["handle"]) == ["1:", "10:"] and list(t["parent"]) == ["root", "1:1"]
    assert t["backlog_bytes"].iloc[0] == 147 * 1024 and list(t["qlen"]) == [101, 101]
    assert t["ts"].isna().all() and list(t["sample"]) == [0, 0]
    assert nv.root_dropped(text) == 31 and np.isnan(nv.root_dropped(""))
    s = nv.parse_tc(qdisc_block(T0, [("tbf", "1:", "root", 3, 0)])
                    + qdisc_block(T0 + 0.01, [("tbf", "1:", "root", 4, 1)]))
    assert list(s["sample"]) == [0, 1] and list(s["ts"]) == [T0, T0 + 0.01] and list(s["qlen"]) == [3, 4]


def samples_text(t_first, t_last, handles, plateau_qlen, step=0.01):
    """tc samples every ``step`` s from t_first to t_last: qlen 0 in the first 40 % of the flow (the queue
    filling), ``plateau_qlen[h]`` afterwards, for each (kind, handle, parent) in ``handles``."""
    out = []
    t = t_first
    cut = t_first + 0.4 * (t_last - t_first)
    while t <= t_last + 1e-9:
        out.append(qdisc_block(t, [(k, h, p, plateau_qlen[h] if t >= cut else 0, 0) for k, h, p in handles]))
        t += step
    return "".join(out)


def test_plateau_is_the_median_of_the_last_60_percent():
    ts = np.arange(0, 10.001, 0.5)
    v = np.where(ts < 4, 0.0, 58.0)
    v[-1] = 200.0                                        # one outlier does not move a median
    assert nv.plateau(ts, v, 0.0, 10.0) == 58.0
    assert np.isnan(nv.plateau([1.0], [5.0], 0.0, 10.0))  # no sample in the window


@pytest.mark.parametrize("model,impl,handles,qlen,expect", [
    # shim: the delay is outside the qdiscs, the root tbf holds the queue
    ("tbf-netem", "shim", [("tbf", "1:", "root"), ("pfifo", "10:", "1:1")], {"1:": 79, "10:": 79}, 79.0),
    # real recipe A: the root tbf counts netem's delayed packets too: 100 - d/s
    ("tbf-netem", "netem", [("tbf", "1:", "root"), ("netem", "10:", "1:1")], {"1:": 100, "10:": 100},
     100 - 25 / nv.S_MS),
    # real recipe B: netem at the root (delay line + child on K6), the tbf 10: holds the queue
    ("netem-tbf", "netem", [("netem", "1:", "root"), ("tbf", "10:", "1:1")], {"1:": 100, "10:": 79}, 79.0),
    ("fifo-after-delay", "netem", [("netem", "1:", "root"), ("tbf", "10:", "1:1"), ("pfifo", "20:", "10:1")],
     {"1:": 121, "10:": 100, "20:": 100}, 100.0),
])
def test_tc_plateau_reads_the_qdisc_of_each_model(model, impl, handles, qlen, expect):
    s = nv.parse_tc(samples_text(T0, T0 + 20, handles, qlen))
    r = nv.tc_plateau(s, model, impl, T0, T0 + 20, 25)
    assert r["tc_queue_pkts"] == pytest.approx(expect)
    assert r["tc_samples"] >= 2000 and r["tc_interval_ms"] == pytest.approx(10.0, abs=0.01)


# ---------------------------------------------------------------- predictions, shim line
def test_section4_predictions():
    s = 1490 * 8 / 10e6 * 1e3
    assert nv.S_MS == pytest.approx(1.192) and nv.BFIFO_PKTS == 101
    p = nv.predicted_queue_pkts
    assert p("fifo-after-delay", 50, "k6") == 100
    assert p("tbf-netem", 50, "k6") == pytest.approx(100 - 50 / s)          # 58.05
    assert p("tbf-netem", 50, "pre-k4") == pytest.approx(100 - 50 / s)
    assert p("tbf-netem", 50, "k4") == pytest.approx(101 - 50 / s)
    assert p("netem-tbf", 5, "k6") == pytest.approx(100 - 5 / s)            # min(101, 95.8)
    assert p("netem-tbf", 25, "shim") == 101                                 # the bfifo: -m delayline never binds
    assert p("netem-tbf", 100, "pre-k4") == 101                              # capped at 1000/s, still > 839/s
    assert p("netem-tbf", 150, "pre-k4") == 0                                # capped at 667/s < 839/s drained
    assert nv.predicted_for("tbf-netem", 25, "shim", "k4") == pytest.approx(100 - 25 / s)
    assert nv.kernel_form({"netem_patches": {"K4": True, "K5": True, "K6": True}}) == "k6"
    assert nv.kernel_form({"netem_patches": {"K4": True, "K5": True, "K6": False}}) == "k4"
    assert nv.kernel_form({"netem_patches": {"K4": False, "K5": False, "K6": False}}) == "pre-k4"
    assert nv.kernel_form({}) == "unknown"
    # a changelog that names none of them: the package's version decides (docs/netem-kernel-versions.md)
    none = {"K4": False, "K5": False, "K6": False}
    assert nv.kernel_form({"netem_patches": none, "kernel_package": "linux-image-6.1.0-56-amd64 6.1.192-2"}) == "k6"
    assert nv.kernel_form({"netem_patches": none}, {"guest_kernel_package": "linux-image-6.1.0-28-amd64 6.1.119-1"}) \
        == "pre-k4"
    assert nv.kernel_form({"kernel_package": "linux-image-6.1.0-44-amd64 6.1.174-1"}) == "k4"
    assert nv.kernel_form({"kernel_package": "linux-image-5.10.0-46-amd64 5.10.262-1"}) == "k6"
    assert nv.kernel_form({"kernel_package": "linux-image-6.12.9-amd64 6.12.9-1"}) == "unknown"
    assert nv.expected_verdict("tbf-netem", 50, "k6") == "equivalent"
    assert nv.expected_verdict("netem-tbf", 25, "k6") == "not equivalent"   # 101 vs 79: 26 ms
    assert nv.expected_verdict("netem-tbf", 5, "pre-k4") == "equivalent"
    with pytest.raises(AnalysisError):
        p("netem", 5, "k6")


def test_parse_shim_line():
    line = ("delayshim: released 16800 late_over_1ms 42 late_over_5ms 0 max_late_us 2100 dropped_at_limit 3900 "
            "max_counted 100")
    assert nv.parse_shim_line(line) == {"released": 16800, "late_over_1ms": 42, "late_over_5ms": 0,
                                        "max_late_us": 2100, "dropped_at_limit": 3900, "max_counted": 100}
    assert nv.parse_shim_line("") == {} and nv.parse_shim_line(None) == {}


# ---------------------------------------------------------------- TOST on made-up per-arm numbers
def made_up_results(cells, form_patches=None) -> nv.Results:
    """cells: {(model, delay): {impl: {column: [values per rep]}}} -> Results with those valid arms."""
    rows = []
    for (model, delay), impls in cells.items():
        for impl, cols in impls.items():
            n = len(next(iter(cols.values())))
            for k in range(n):
                r = {c: np.nan for c in nv.RUN_COLUMNS}
                r.update(run=f"rep{k + 1:02d}-{model}-d{delay}-{impl}", rep=k + 1, model=model, delay_ms=float(delay),
                         implementation=impl, valid=True, problem="", tc_qdisc="", traffic="udp", cc="",
                         loss_pct=0.0)
                r.update({c: v[k] for c, v in cols.items()})
                rows.append(r)
    setup = {"netem_patches": form_patches or {"K4": True, "K5": True, "K6": True}}
    return nv.Results(pd.DataFrame(rows, columns=nv.RUN_COLUMNS), {}, setup)


NOISE = np.array([-0.4, 0.3, -0.1, 0.5, -0.3, 0.2, 0.0, -0.2, 0.4, -0.4])


def test_tost_verdicts_on_made_up_numbers():
    a_q = 100 - 25 / nv.S_MS
    res = made_up_results({
        ("tbf-netem", 25): {   # the emulation matches: same queue, 0.5 ms apart
            "netem": {"qdelay_median_ms": a_q * nv.S_MS + NOISE, "qdelay_p95_ms": a_q * nv.S_MS + 2 + NOISE,
                      "goodput_mbps": 9.72 + NOISE / 100, "drops_per_1000": 190 + NOISE * 5,
                      "queue_pkts": a_q + NOISE / nv.S_MS},
            "shim": {"qdelay_median_ms": a_q * nv.S_MS + 0.5 + NOISE[::-1],
                     "qdelay_p95_ms": a_q * nv.S_MS + 2.5 + NOISE[::-1],
                     "goodput_mbps": 9.70 + NOISE[::-1] / 100, "drops_per_1000": 192 + NOISE[::-1] * 5,
                     "queue_pkts": a_q + (0.5 + NOISE[::-1]) / nv.S_MS}},
        ("netem-tbf", 25): {   # K6's recipe B (79 packets) against the shim's pre-K6 form (101): 26 ms apart
            "netem": {"qdelay_median_ms": a_q * nv.S_MS + NOISE, "qdelay_p95_ms": a_q * nv.S_MS + 2 + NOISE,
                      "goodput_mbps": 9.72 + NOISE / 100, "drops_per_1000": 190 + NOISE * 5},
            "shim": {"qdelay_median_ms": 101 * nv.S_MS + NOISE, "qdelay_p95_ms": 101 * nv.S_MS + 2 + NOISE,
                     "goodput_mbps": 9.72 + NOISE / 100, "drops_per_1000": 250 + NOISE * 5}},   # +32 %
    })
    c = nv.compare(res)
    get = lambda model, metric: c[(c["model"] == model) & (c["metric"] == metric)].iloc[0]  # noqa: E731
    r = get("tbf-netem", "queueing delay, median")
    assert r["verdict"] == "equivalent" and r["expected"] == "equivalent" and r["tost_p"] < 0.05
    assert r["diff"] == pytest.approx(0.5) and r["diff_low"] < 0.5 < r["diff_high"]
    assert r["delta"] == 5.0 and r["netem_n"] == 10 and r["shim_n"] == 10
    assert get("tbf-netem", "goodput")["verdict"] == "equivalent"
    assert get("tbf-netem", "goodput")["delta"] == pytest.approx(0.05 * 9.72)
    assert get("tbf-netem", "drops")["verdict"] == "equivalent"
    assert get("tbf-netem", "drops")["delta"] == pytest.approx(0.15 * 190)
    assert get("tbf-netem", "queueing delay, p99")["verdict"] == ""          # reported, not tested
    assert get("tbf-netem", "standing queue (sojourn)")["predicted_diff"] == pytest.approx(0.0)
    b = get("netem-tbf", "queueing delay, median")
    assert b["verdict"] == "not shown" and b["expected"] == "not equivalent"
    assert b["diff"] == pytest.approx((101 - a_q) * nv.S_MS) and b["predicted_diff"] == pytest.approx(b["diff"])
    assert b["diff_low"] > 5.0                                              # the whole interval beyond the margin
    assert get("netem-tbf", "goodput")["verdict"] == "equivalent"
    assert get("netem-tbf", "drops")["verdict"] == "not shown"
    # the report renders every cell
    md = nv.report(res)
    assert "| tbf-netem | 25 | queueing delay, median (ms) |" in md and "not equivalent" in md


def test_equivalence_needs_enough_arms():
    res = made_up_results({("tbf-netem", 5): {"netem": {"qdelay_median_ms": [60.0]},
                                              "shim": {"qdelay_median_ms": [61.0, 60.5]}}})
    r = nv.compare(res)
    r = r[r["metric"] == "queueing delay, median"].iloc[0]
    assert r["verdict"] == "n/a" and r["diff"] == pytest.approx(-0.25 + 1.0)


def test_positive_control_detects_the_missing_delay_line():
    res = made_up_results({
        ("fifo-after-delay", 50): {"shim": {"qdelay_median_ms": 100 * nv.S_MS + NOISE}},
        ("tbf-netem", 50): {"netem": {"qdelay_median_ms": (100 - 50 / nv.S_MS) * nv.S_MS + NOISE[::-1]}},
    })
    pc = nv.positive_control(res).iloc[0]
    assert pc["diff"] == pytest.approx(50.0) and pc["predicted_diff"] == pytest.approx(50.0)
    assert pc["detected"] and pc["verdict"] == "not shown"


# ---------------------------------------------------------------- a whole arm from files
D_MS = 25.0


def write_arm(root: Path, rep: int, model: str, impl: str, q_ms: float, drop_every: int = 10, check="pass",
              n: int = 400, dt: float = 0.001) -> Path:
    """One arm directory: ``n`` datagrams arrive ``dt`` s apart; every ``drop_every``-th is dropped; the others leave
    after D_MS + (0 in the first 40 % of the flow, ``q_ms`` afterwards). tc samples show a queue of round(q/s) at
    the tbf root (shim) / tbf 10: or the shared count (netem); drops 17 at the qdisc, 23 at the shim."""
    d = root / "runs" / f"rep{rep:02d}-{model}-d{D_MS:g}-{impl}"
    d.mkdir(parents=True)
    t_last = (n - 1) * dt
    cut = 0.4 * t_last
    ing = [dgram(i * dt, i + 1) for i in range(n)]
    egr = [dgram(i * dt + (D_MS + (q_ms if i * dt >= cut else 0.0)) / 1e3, i + 1)
           for i in range(n) if (i + 1) % drop_every]
    write_pcap(d / "sw-a.raw", ing, snaplen=96)
    with open(d / "sw-a.raw", "rb") as f, gzip.open(d / "sw-a.pcap.gz", "wb") as g:
        shutil.copyfileobj(f, g)
    (d / "sw-a.raw").unlink()
    write_pcap(d / "sw-b.pcap", egr, snaplen=96)
    qp = round(q_ms / nv.S_MS)
    kind, handle, what = nv.TC_QUEUE[(model, impl)]
    shown = qp + round(D_MS / nv.S_MS) if what == "shared" else qp
    handles = [(kind, handle, "root" if handle == "1:" else "1:1")]
    (d / "tc.txt").write_text(samples_text(T0, T0 + t_last, handles, {handle: shown}, step=0.005))
    tc_b = qdisc_block(None, [("tbf", "1:", "root", 0, 2)])
    tc_a = qdisc_block(None, [("tbf", "1:", "root", 0, 19)])
    shim = None
    if impl == "shim":
        shim = {"report_before": "delayshim: released 3 late_over_1ms 0 late_over_5ms 0 max_late_us 10 "
                                 "dropped_at_limit 0 max_counted 0",
                "report_after": "delayshim: released 400 late_over_1ms 4 late_over_5ms 0 max_late_us 1500 "
                                "dropped_at_limit 23 max_counted 100"}
    run = {"rep": rep, "model": model, "delay_ms": D_MS, "implementation": impl, "order_in_rep": 1,
           "params": {"udp_len_bytes": LEN, "a_ip": A, "b_ip": B}, "tc_before": tc_b, "tc_after": tc_a,
           "shim": shim, "tcpdump": {"sw_a": {"captured": n, "dropped_by_kernel": 0},
                                     "sw_b": {"captured": len(egr), "dropped_by_kernel": 0}},
           "check": check, "reason": None if check == "pass" else "iperf3 exited 1"}
    (d / "run.json").write_text(json.dumps(run))
    (d / "iperf3.json").write_text(json.dumps({"end": {"sum": {"bits_per_second": 9.7e6}}}))
    return d


@pytest.mark.parametrize("impl", ["netem", "shim"])
def test_load_arm_from_files(tmp_path, impl):
    d = write_arm(tmp_path, 1, "tbf-netem", impl, q_ms=12.0)
    r = nv.load_arm(d)
    assert r["valid"], r["problem"]
    n, dt = 400, 0.001
    assert (r["n_in"], r["n_out"], r["n_matched"], r["n_unmatched_out"]) == (n, 360, 360, 0)
    assert r["drops_pcap"] == 40 and r["drops_pcap_per_1000"] == pytest.approx(100.0)
    assert r["qdelay_median_ms"] == pytest.approx(12.0, abs=1e-3)
    assert r["qdelay_p99_ms"] == pytest.approx(12.0, abs=1e-3)
    assert r["sojourn_min_ms"] == pytest.approx(D_MS, abs=1e-3)
    assert r["queue_pkts"] == pytest.approx(12.0 / nv.S_MS, abs=1e-3)
    assert r["tc_queue_pkts"] == pytest.approx(round(12.0 / nv.S_MS) + (round(D_MS / nv.S_MS) - D_MS / nv.S_MS
                                                                        if impl == "netem" else 0))
    # drops: the root qdisc's counter over the flow (19 - 2) plus, for the shim, its drops at the limit
    assert r["drops_qdisc"] == 17 and r["drops_shim"] == (23 if impl == "shim" else 0)
    assert r["drops_per_1000"] == pytest.approx(1000 * (17 + (23 if impl == "shim" else 0)) / n)
    # goodput: payload of the egress packets inside the steady window over its length
    t1 = T0 + (n - 1) * dt
    t0 = t1 - 0.6 * (n - 1) * dt
    out_ts = np.array([T0 + i * dt + (D_MS + (12.0 if i * dt >= 0.4 * (n - 1) * dt else 0.0)) / 1e3
                       for i in range(n) if (i + 1) % 10])
    inside = ((out_ts >= t0 - 1e-7) & (out_ts <= t1 + 1e-7)).sum()
    assert r["goodput_mbps"] == pytest.approx(inside * LEN * 8 / (t1 - t0) / 1e6, rel=2e-3)
    assert r["iperf3_mbps"] == pytest.approx(9.7)
    if impl == "shim":
        assert r["shim_late1_share"] == pytest.approx(4 / 400) and r["shim_max_counted"] == 100


def test_failed_and_incomplete_arms_are_excluded(tmp_path):
    bad = write_arm(tmp_path, 1, "netem-tbf", "shim", q_ms=20.0, check="fail")
    r = nv.load_arm(bad)
    assert not r["valid"] and "guest check: iperf3 exited 1" in r["problem"]
    gone = write_arm(tmp_path, 2, "netem-tbf", "netem", q_ms=20.0)
    (gone / "sw-b.pcap").unlink()
    r = nv.load_arm(gone)
    assert not r["valid"] and "no capture sw-b" in r["problem"]
    early = write_arm(tmp_path, 3, "netem-tbf", "netem", q_ms=-5.0)      # leaves 5 ms before its delay is over
    r = nv.load_arm(early)
    assert not r["valid"] and "sojourns below the 25-ms delay" in r["problem"]
    (gone / "run.json").write_text(json.dumps({"model": "netem", "implementation": "shim", "delay_ms": 5}))
    with pytest.raises(AnalysisError):
        nv.load_arm(gone)
    with pytest.raises(AnalysisError):
        nv.load_results(tmp_path / "nothing")


def test_main_prints_markdown(tmp_path, capsys):
    for rep in (1, 2):
        write_arm(tmp_path, rep, "tbf-netem", "netem", q_ms=12.0 + 0.1 * rep)
        write_arm(tmp_path, rep, "tbf-netem", "shim", q_ms=12.2 - 0.1 * rep)
    write_arm(tmp_path, 3, "tbf-netem", "shim", q_ms=12.0, check="fail")
    (tmp_path / "setup.json").write_text(json.dumps({"uname_r": "6.1.0-56-amd64",
                                                     "kernel_package": "linux-image-6.1.0-56-amd64 6.1.192-2",
                                                     "netem_patches": {"K4": True, "K5": True, "K6": True}}))
    assert nv.main([str(tmp_path), "--runs"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Arms: 4 valid of 5; guest kernel 6.1.0-56-amd64 (linux-image-6.1.0-56-amd64 6.1.192-2)")
    assert "| model | d (ms) | metric | real netem | shim |" in out
    assert "| tbf-netem | 25 | queueing delay, median (ms) | 12.15 [" in out
    assert "Calibration (section 7, step 2)" in out and "Per arm:" in out
    assert "Excluded arms: rep03-tbf-netem-d25-shim (guest check: iperf3 exited 1)" in out
    assert nv.main([str(tmp_path / "none")]) == 2


# ---------------------------------------------------------------- TCP arms
MSS = 1448


def write_tcp_arm(root: Path, rep: int, model: str, impl: str, q_ms: float, loss: float = 1.0, cc: str = "cubic",
                  n: int = 500, dt: float = 0.001, rtt_ms: float = 80.0) -> Path:
    """One TCP arm: ``n`` full segments (seq k x MSS, IP id k + 1) arrive ``dt`` s apart; every 25th is lost
    at the switch and sent again 0.1 s later with a new IP id (k + 10001) and the same seq; the others, and the
    retransmissions, leave after D_MS + (0 in the first 40 % of the flow, ``q_ms`` afterwards). A pure ACK and a
    segment of the other direction are in the ingress capture too (not data a -> b). iperf3.json: 10 intervals of
    0.5 s with the sender's RTT ``rtt_ms`` + interval index ms, 20 retransmits. Drops: 12 at the root qdisc
    (netem's counter then holds the loss too), 5 at the iptables rule (the shim's loss)."""
    d = root / "runs" / f"rep{rep:02d}-{model}-d{D_MS:g}-l{loss:g}-{cc}-{impl}"
    d.mkdir(parents=True)
    cut = 0.4 * (n - 1) * dt

    def delay(t):
        return (D_MS + (q_ms if t >= cut else 0.0)) / 1e3

    ing, egr = [], []
    for k in range(n):
        t = k * dt
        ing.append(tcp(A, 40000, B, 5301, seq=1000 + k * MSS, payload=MSS, t=t, ip_id=k + 1))
        if (k + 1) % 25:
            egr.append(tcp(A, 40000, B, 5301, seq=1000 + k * MSS, payload=MSS, t=t + delay(t), ip_id=k + 1))
        else:
            tr = t + 0.1
            if tr <= (n - 1) * dt:
                ing.append(tcp(A, 40000, B, 5301, seq=1000 + k * MSS, payload=MSS, t=tr, ip_id=k + 10001))
                egr.append(tcp(A, 40000, B, 5301, seq=1000 + k * MSS, payload=MSS, t=tr + delay(tr), ip_id=k + 10001))
    ing += [tcp(A, 40000, B, 5301, seq=0, payload=0, t=0.0005, ip_id=77777 % 65536),
            tcp(B, 5301, A, 40000, seq=5, payload=MSS, t=0.0007, ip_id=3)]
    # iperf3's control connection: a few small segments from another port, unrelated sequence numbers
    ctl = [tcp(A, 39999, B, 5301, seq=3_000_000_000 + 37 * k, payload=37, t=0.0002 + 0.2 * k, ip_id=500 + k)
           for k in range(3)]
    ing += ctl
    egr += [tcp(A, 39999, B, 5301, seq=3_000_000_000 + 37 * k, payload=37, t=0.0002 + 0.2 * k + D_MS / 1e3,
                ip_id=500 + k) for k in range(3)]
    ing.sort(key=lambda x: x[0])
    egr.sort(key=lambda x: x[0])
    write_pcap(d / "sw-a.pcap", ing, snaplen=96)
    write_pcap(d / "sw-b.pcap", egr, snaplen=96)
    tc_b = qdisc_block(None, [("tbf", "1:", "root", 0, 2)])
    tc_a = qdisc_block(None, [("tbf", "1:", "root", 0, 14)])
    shim = None
    if impl == "shim":
        shim = {"report_before": "delayshim: released 0 dropped_at_limit 0 max_counted 0",
                "report_after": "delayshim: released 480 late_over_1ms 0 dropped_at_limit 3 max_counted 60"}
    run = {"rep": rep, "model": model, "delay_ms": D_MS, "implementation": impl, "order_in_rep": 2,
           "traffic": "tcp", "cc": cc, "loss_pct": loss, "params": {"a_ip": A, "b_ip": B, "cc": cc},
           "tc_before": tc_b, "tc_after": tc_a, "shim": shim,
           "drops": {"iptables_loss": 5 if impl == "shim" else None},
           "tcpdump": {"sw_a": {"captured": len(ing), "dropped_by_kernel": 0},
                       "sw_b": {"captured": len(egr), "dropped_by_kernel": 0}}, "check": "pass", "reason": None}
    (d / "run.json").write_text(json.dumps(run))
    iv = [{"streams": [{"end": 0.5 * (i + 1), "rtt": int((rtt_ms + i) * 1000)}], "sum": {}} for i in range(10)]
    (d / "iperf3.json").write_text(json.dumps({"intervals": iv, "end": {
        "sum_received": {"bits_per_second": 9.5e6}, "sum_sent": {"bits_per_second": 9.6e6, "retransmits": 20},
        "streams": [{"sender": {"mean_rtt": 84000}}]}}))
    return d


@pytest.mark.parametrize("impl", ["netem", "shim"])
def test_load_tcp_arm_from_files(tmp_path, impl):
    n, dt = 500, 0.001
    d = write_tcp_arm(tmp_path, 1, "tbf-netem", impl, q_ms=30.0)
    r = nv.load_arm(d)
    assert r["valid"], r["problem"]
    assert (r["traffic"], r["cc"], r["loss_pct"]) == ("tcp", "cubic", 1.0)
    retx = [k for k in range(n) if not (k + 1) % 25 and k * dt + 0.1 <= (n - 1) * dt]
    n_in = n + len(retx)                              # the ACK and the other direction are not data a -> b
    assert (r["n_in"], r["n_out"], r["n_unmatched_out"], r["n_ambiguous"]) == (n_in, n - 20 + len(retx), 0, 0)
    assert r["drops_pcap"] == 20                      # the 20 first transmissions that never left
    assert r["qdelay_median_ms"] == pytest.approx(30.0, abs=1e-3)
    assert r["queue_pkts"] == pytest.approx(30.0 / nv.TCP_S_MS, abs=1e-3)
    assert r["sojourn_min_ms"] == pytest.approx(D_MS, abs=1e-3)
    # drops: qdisc 14 - 2 (netem's counter holds its own loss), the shim adds its limit drops and the iptables rule
    assert r["drops_qdisc"] == 12
    assert (r["drops_shim"], r["drops_loss"]) == ((3, 5) if impl == "shim" else (0, 0))
    assert r["drops_per_1000"] == pytest.approx(1000 * (12 + (8 if impl == "shim" else 0)) / n_in)
    # RTT: the intervals ending in the last 60 % of the 5-s test (ends 2.0 .. 5.0 s: rtt 83 .. 89 ms)
    assert r["rtt_samples"] == 7 and r["rtt_mean_ms"] == pytest.approx(86.0)
    assert r["rtt_p95_ms"] == pytest.approx(np.quantile(np.arange(83, 90), 0.95))
    assert r["retransmits"] == 20 and r["retrans_per_1000"] == pytest.approx(20000 / n_in)
    assert r["iperf3_mbps"] == pytest.approx(9.5)
    # goodput: sequence progress through the switch in the steady window (each byte once)
    t_last = (n - 1) * dt
    t0, t1 = T0 + 0.4 * t_last, T0 + t_last
    outs = []                                          # (ts, end of seq) of every egress segment
    for k in range(n):
        t = k * dt
        if (k + 1) % 25:
            outs.append((T0 + t + (D_MS + (30.0 if t >= 0.4 * t_last else 0)) / 1e3, 1000 + (k + 1) * MSS))
        elif k in retx:
            tr = t + 0.1
            outs.append((T0 + tr + (D_MS + (30.0 if tr >= 0.4 * t_last else 0)) / 1e3, 1000 + (k + 1) * MSS))
    outs.sort()
    ts = np.array([o[0] for o in outs])
    top = np.maximum.accumulate(np.array([o[1] for o in outs]))
    want = (top[np.searchsorted(ts, t1, "right") - 1] - top[np.searchsorted(ts, t0, "left") - 1]) * 8 / (t1 - t0) / 1e6
    assert r["goodput_mbps"] == pytest.approx(want, rel=1e-6)


def test_seq_goodput_counts_each_byte_once_across_the_wrap():
    base = 2**32 - 3 * MSS
    e = pd.DataFrame({"ts": [0.0, 1.0, 2.0, 2.5, 3.0],
                      "seq": [base, (base + MSS) % 2**32, (base + 2 * MSS) % 2**32, (base + MSS) % 2**32,
                              (base + 3 * MSS) % 2**32],
                      "payload_len": [MSS] * 5})
    # over [0.5, 3.0]: from the end of the first segment to the end of the fourth new one: 3 segments; the
    # retransmission at 2.5 s adds nothing
    assert nv.seq_goodput_mbps(e, 0.5, 3.0) == pytest.approx(3 * MSS * 8 / 2.5 / 1e6)
    assert np.isnan(nv.seq_goodput_mbps(e, 3.0, 3.0)) and np.isnan(nv.seq_goodput_mbps(e.iloc[:1], 0.0, 1.0))


def test_iperf3_rtt_without_samples():
    assert nv.iperf3_rtt({})["rtt_samples"] == 0 and np.isnan(nv.iperf3_rtt({"intervals": []})["rtt_mean_ms"])


def test_histograms_and_ks():
    h1 = nv.qdelay_histogram([0.1, 0.2, 10.0, 10.2, -7.0])
    assert h1["bins"] == [0, 10, 30] and h1["counts"] == [1, 2, 2]     # -7 ms clips to the first bin
    assert nv.ks_distance(h1, h1) == 0.0
    h2 = nv.qdelay_histogram([20.0] * 5)
    assert nv.ks_distance(h1, h2) == pytest.approx(1.0)
    h3 = nv.qdelay_histogram([0.1, 0.2, 20.0, 20.0, 20.0])              # 2 of 5 shared at the bottom
    assert nv.ks_distance(h1, h3) == pytest.approx(0.6)
    m = nv.merge_histograms([h1, h3])
    assert sum(m["counts"]) == 10 and m["bins"] == sorted(m["bins"])
    assert np.isnan(nv.ks_distance(h1, nv.qdelay_histogram([])))


def test_tcp_cells_compare_and_distribution(tmp_path):
    for rep in (1, 2, 3):
        write_tcp_arm(tmp_path, rep, "tbf-netem", "netem", q_ms=30.0 + 0.2 * rep, rtt_ms=80.0 + rep)
        write_tcp_arm(tmp_path, rep, "tbf-netem", "shim", q_ms=30.5 - 0.2 * rep, rtt_ms=81.0 + 0.5 * rep)
    write_arm(tmp_path, 1, "tbf-netem", "netem", q_ms=12.0)            # a UDP arm: not in the TCP table
    res = nv.load_results(tmp_path)
    assert set(res.runs["traffic"]) == {"udp", "tcp"} and len(res.valid_runs) == 7
    c = nv.compare(res, "tcp")
    assert set(c["cc"]) == {"cubic"} and set(c["loss_pct"]) == {1.0}
    q = c[c["metric"] == "queueing delay, median"].iloc[0]
    assert q["netem_n"] == 3 and q["shim_n"] == 3 and q["diff"] == pytest.approx(0.5 - 0.4 * 2, abs=1e-3)
    rtt = c[c["metric"] == "RTT, mean"].iloc[0]
    assert rtt["delta"] == pytest.approx(max(3.0, 0.05 * rtt["netem_mean"]))
    assert rtt["verdict"] in ("equivalent", "not shown")
    assert (c["expected"] == "").all()
    assert nv.compare(res, "udp")["model"].tolist()[0] == "tbf-netem"
    with pytest.raises(AnalysisError):
        nv.compare(res, "sctp")
    dist = nv.distribution(res, "tcp")
    assert list(dist["pct"]) == list(nv.QGRID)
    assert dist["ks"].iloc[0] >= 0 and dist["ks"].nunique() == 1
    md = nv.report(res)
    assert "TCP arms: one iperf3 flow per arm" in md and "| tbf-netem | cubic | 1 | 25 | RTT, mean (ms) |" in md
    assert "TCP queueing-delay distributions" in md


def test_export_keeps_the_rows_without_the_captures(tmp_path):
    src = tmp_path / "res"
    for rep in (1, 2):
        write_tcp_arm(src, rep, "netem-tbf-k6", "netem", q_ms=20.0)
        write_tcp_arm(src, rep, "netem-tbf-k6", "shim", q_ms=21.0)
    write_arm(src, 1, "tbf-netem", "shim", q_ms=12.0)
    (src / "meta.json").write_text(json.dumps({"reps": 2, "duration_s": 20, "tcp_duration_s": 20}))
    before = nv.load_results(src)
    dst = tmp_path / "committed"
    assert nv.main([str(src), "--export", str(dst)]) == 0
    assert not list(dst.rglob("*.pcap*")) and not list(dst.rglob("tc.txt*"))
    assert (dst / "meta.json").is_file() and (dst / "runs.tar.xz").is_file() and not (dst / "runs").exists()
    from analysis import validation_store as vs
    names = {n.split("/", 2)[2] for n, _ in vs.members(dst)}
    assert names == {"run.json", "iperf3.json", "derived.json"}      # what the synthetic arms had, packed plain
    after = nv.load_results(dst)
    assert set(after.runs["source"]) == {"derived.json"} and set(before.runs["source"]) == {"captures"}
    cols = [c for c in nv.RUN_COLUMNS if c != "source"]
    pd.testing.assert_frame_equal(before.runs[cols], after.runs[cols], check_dtype=False)
    assert after.hists == before.hists
    assert nv.report(before) == nv.report(after)
    with pytest.raises(AnalysisError):
        nv.export(src, dst)                                          # never overwrites
    assert nv.main([str(src), "--export", str(dst)]) == 2


def test_punctuality_of_the_shim_per_tcp_cell():
    """nv.punctuality: per TCP cell the shim arms' mean late shares and largest lateness, beside the cell's TOST
    verdicts (here given: 1 of 2 tested metrics equivalent)."""
    from analysis import netem_validation as nv
    rows = []
    for rep, (l1, l5, mx) in enumerate([(0.2, 0.01, 9.0), (0.4, 0.03, 21.5)], start=1):
        r = {c: np.nan for c in nv.RUN_COLUMNS}
        r.update(run=f"rep{rep:02d}-tbf-netem-d25-l1-bbr-shim", rep=rep, traffic="tcp", model="tbf-netem", cc="bbr",
                 loss_pct=1.0, delay_ms=25.0, implementation="shim", valid=True, shim_late1_share=l1,
                 shim_late5_share=l5, shim_max_late_ms=mx)
        rows.append(r)
    res = nv.Results(pd.DataFrame(rows, columns=nv.RUN_COLUMNS), {}, {})
    cmp_ = pd.DataFrame({"model": ["tbf-netem"] * 3, "cc": ["bbr"] * 3, "loss_pct": [1.0] * 3,
                         "delay_ms": [25.0] * 3, "verdict": ["equivalent", "not shown", ""]})
    p = nv.punctuality(res, cmp_).iloc[0]
    assert (p["arms"], p["tested"], p["equivalent"]) == (2, 2, 1)
    assert p["late1"] == pytest.approx(0.3) and p["late5"] == pytest.approx(0.02) and p["max_late_ms"] == 21.5


def test_lateness_dependence_known_line():
    """nv.lateness_dependence: shim - netem goodput built as exactly -0.5 % per point of late releases plus 1 % in
    one cell and plus 3 % in the other (relative to the cell's netem mean of 10 Mbit/s): slope -0.5 within cells,
    the cells' mean intercept 2 %, rho -1; pairs are matched by cell and rep; a cell without netem arms contributes
    nothing."""
    from analysis import netem_validation as nv
    rows = []

    def arm(rep, model, d, impl, goodput, late=np.nan):
        r = {c: np.nan for c in nv.RUN_COLUMNS}
        r.update(run=f"rep{rep:02d}-{model}-d{d}-l1-bbr-{impl}", rep=rep, traffic="tcp", model=model, cc="bbr",
                 loss_pct=1.0, delay_ms=float(d), implementation=impl, valid=True, goodput_mbps=goodput,
                 shim_late1_share=late)
        rows.append(r)
    for model, d in (("tbf-netem", 5), ("netem-tbf-k6", 25)):
        for rep, (late, net) in enumerate([(0.05, 9.9), (0.10, 10.1), (0.20, 9.8), (0.40, 10.2)], start=1):
            arm(rep, model, d, "netem", net)
            arm(rep, model, d, "shim", net + 10.0 * ((1.0 if d == 5 else 3.0) - 0.5 * 100 * late) / 100, late)
    arm(1, "tbf-netem", 50, "shim", 5.0, 0.9)            # no netem arm in its cell: unpaired
    ld = nv.lateness_dependence(nv.Results(pd.DataFrame(rows, columns=nv.RUN_COLUMNS), {}, {}))
    r = ld.iloc[0]
    assert (r["cc"], r["loss_pct"], r["n"], r["cells"]) == ("bbr", 1.0, 8, 2) and r["late_min_pct"] == pytest.approx(5)
    assert r["intercept_pct"] == pytest.approx(2.0) and r["slope"] == pytest.approx(-0.5)
    assert r["rho"] == pytest.approx(-1.0) and r["late_mean_pct"] == pytest.approx(18.75)
    assert "line at no lateness" in nv.report(nv.Results(pd.DataFrame(rows, columns=nv.RUN_COLUMNS), {}, {}))


def test_committed_validation_data_quote_no_host_paths():
    """The committed forms (data/netem-validation, data/cc-validation) carry no path of the recording host: its
    Vagrant home and the VM's scratch directory are written as ~/.vagrant.d and $TMPDIR/mpcc-NAME.XXXXXX
    (nv.portable_paths, applied by export)."""
    from pathlib import Path
    from analysis import netem_validation as nv
    assert nv.portable_paths("file:/var/tmp/mpcc-nvval.lMfYnT/c.log -kernel /root/.vagrant.d/b /home/u/.vagrant.d/b") \
        == "file:$TMPDIR/mpcc-nvval.XXXXXX/c.log -kernel ~/.vagrant.d/b ~/.vagrant.d/b"
    from analysis import validation_store as vs
    root = Path(__file__).resolve().parents[1] / "data"
    for d in ("netem-validation", "cc-validation", "cc-validation/westwood-confirmation", "pcc-validation"):
        for p in [*(root / d).glob("*.json"), *(root / d).glob("*.log")]:
            assert nv.portable_paths(p.read_text()) == p.read_text(), p
        for name, data in vs.members(root / d):                      # the runs' files, in runs.tar.xz
            text = data.decode("utf-8", errors="replace")
            assert nv.portable_paths(text) == text, f"{d}: {name}"
