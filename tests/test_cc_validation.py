"""analysis.cc_validation on small synthetic results directories (ss text and iperf3 JSON written here): decrease
ratios with known answers, per-run metrics, the kernel-vs-BPF comparison, exclusion of bad runs, bundling."""
from __future__ import annotations

import json
import lzma
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import cc_validation as cv
from analysis.errors import AnalysisError

HEADER = "State Recv-Q Send-Q Local Address:Port Peer Address:Port Process"
CTRL = ("ESTAB 0 0 10.71.1.1:40000 10.71.2.1:5201\n"
        "\t cubic wscale:7,7 rto:212 rtt:11.2/0.6 mss:1448 cwnd:10 bytes_sent:180 bytes_acked:181 segs_out:9\n")


def ss_text(samples, cc="bic", t0=1700000000.0, dt=0.1) -> str:
    """ss -tin blocks: samples = [(cwnd, ssthresh or None), ...] for the data connection, plus iperf3's control
    connection in every block."""
    out = []
    acked = 0
    for i, (cwnd, ssth) in enumerate(samples):
        acked += 1_000_000
        st = f" ssthresh:{ssth}" if ssth is not None else ""
        out.append(f"# ts={t0 + i * dt:.6f}\n{HEADER}\n{CTRL}"
                   f"ESTAB 0 100000 10.71.1.1:40002 10.71.2.1:5201\n"
                   f"\t ts sack {cc} wscale:7,7 rto:216 rtt:15.3/2.1 mss:1448 pmtu:1500 rcvmss:536 advmss:1448 "
                   f"cwnd:{cwnd}{st} bytes_sent:{acked + 50000} bytes_acked:{acked} segs_out:{i * 700} "
                   f"delivery_rate 9.5Mbps busy:{i * 100}ms unacked:{cwnd} retrans:0/{i} reordering:3 "
                   f"minrtt:10.9\n")
    return "".join(out)


def iperf3_doc(goodput_mbps, retrans, cc="bic") -> dict:
    return {"start": {"test_start": {"protocol": "TCP", "duration": 30}, "congestion": cc},
            "intervals": [],
            "end": {"sum_sent": {"seconds": 30.0, "bytes": int(goodput_mbps * 1e6 / 8 * 30),
                                 "bits_per_second": goodput_mbps * 1e6 * 1.01, "retransmits": retrans},
                    "sum_received": {"seconds": 30.04, "bytes": int(goodput_mbps * 1e6 / 8 * 30),
                                     "bits_per_second": goodput_mbps * 1e6},
                    "sender_tcp_congestion": cc, "receiver_tcp_congestion": cc}}


# BIC: a loss at cwnd 174 (above low_window) -> ssthresh 139 = floor(174*819/1024), then one at 160 -> 128
BIC_SAMPLES = [(10, None), (40, None), (120, None), (174, None), (139, 139), (150, 139), (160, 139), (128, 128),
               (130, 128)]


def write_run(root: Path, rep, cc, impl, goodput, retrans, samples, *, order=1, check="pass", ss_cc=None,
              xz=False) -> Path:
    d = root / "runs" / f"rep{rep:02d}-{cc}-{impl}"
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({
        "rep": rep, "cc": cc, "implementation": impl, "order_in_rep": order,
        "struct_ops_id": 40 + rep if impl == "bpf" else None,
        "object_sha256": "ab" * 32 if impl == "bpf" else None, "uname_r": "6.1.0-test-amd64",
        "lsmod_tcp": "tcp_bic 16384 0" if impl == "kernel" else "", "check": check,
        "reason": None if check == "pass" else "synthetic failure"}))
    (d / "iperf3.json").write_text(json.dumps(iperf3_doc(goodput, retrans, cc)))
    text = ss_text(samples, cc=ss_cc or cc)
    if xz:
        (d / "ss.txt.xz").write_bytes(lzma.compress(text.encode()))
    else:
        (d / "ss.txt").write_text(text)
    return d


def make_results(root: Path, bpf_goodputs, kernel_goodputs, cc="bic", samples=BIC_SAMPLES) -> Path:
    for i, (gk, gb) in enumerate(zip(kernel_goodputs, bpf_goodputs), start=1):
        kfirst = i % 2 == 1
        write_run(root, i, cc, "kernel", gk, 100 + i, samples, order=1 if kfirst else 2)
        write_run(root, i, cc, "bpf", gb, 102 + i, samples, order=2 if kfirst else 1)
    (root / "meta.json").write_text(json.dumps({"host_kernel": "6.18.0-test", "guest_kernel": "6.1.0-test-amd64",
                                                "reps": len(kernel_goodputs), "duration_s": 30}))
    return root


# ---------------------------------------------------------------- per run
def test_bic_decrease_ratio_known_answer(tmp_path):
    d = write_run(tmp_path, 1, "bic", "bpf", 9.5, 120, BIC_SAMPLES)
    row, ev, cwnd = cv.load_run(d)
    assert list(ev["ssthresh_pkts"]) == [139, 128]
    assert list(ev["cwnd_before_pkts"]) == [174, 160]
    assert ev["ratio"].iloc[0] == pytest.approx(139 / 174)
    assert round(ev["ratio"].iloc[0], 3) == 0.799
    assert ev["ratio"].iloc[1] == pytest.approx(0.8)
    assert list(ev["counted"]) == [True, True]
    assert row["n_events"] == 2 and row["n_events_counted"] == 2
    assert row["median_ratio"] == pytest.approx((139 / 174 + 0.8) / 2)
    assert row["goodput_mbps"] == pytest.approx(9.5)
    assert row["retransmits"] == 120
    assert row["valid"] and row["cc_seen"] == "bic"
    assert len(cwnd) == len(BIC_SAMPLES) and cwnd["ts"].iloc[0] == 0
    assert cwnd["cwnd_pkts"].max() == 174


def test_bic_low_window_events_do_not_count(tmp_path):
    # losses at cwnd 12 (<= low_window 14: BIC halves) are events but do not count towards beta
    samples = [(10, None), (12, None), (6, 6), (9, 6), (12, 6), (6, 6), (20, 6), (30, 6), (24, 24)]
    row, ev, _ = cv.load_run(write_run(tmp_path, 1, "bic", "kernel", 9.0, 50, samples))
    assert list(ev["cwnd_before_pkts"]) == [12, 30]
    assert list(ev["cwnd_last_pkts"]) == [12, 30]
    assert list(ev["counted"]) == [False, True]
    assert row["median_ratio"] == pytest.approx(24 / 30)


def test_westwood_counts_every_event(tmp_path):
    samples = [(10, None), (30, None), (10, 10), (16, 10), (9, 9), (12, 9)]
    row, ev, _ = cv.load_run(write_run(tmp_path, 1, "westwood", "bpf", 9.5, 80, samples))
    assert list(ev["counted"]) == [True, True]
    assert list(ev["ratio"]) == pytest.approx([10 / 30, 9 / 16])
    assert row["median_ratio"] == pytest.approx((10 / 30 + 9 / 16) / 2)


def test_iperf3_metrics():
    m = cv.iperf3_metrics(iperf3_doc(9.41, 321))
    assert m["goodput_mbps"] == pytest.approx(9.41)
    assert m["sender_mbps"] == pytest.approx(9.41 * 1.01)
    assert m["retransmits"] == 321
    with pytest.raises(AnalysisError):
        cv.iperf3_metrics({"error": "unable to connect"})
    with pytest.raises(AnalysisError):
        cv.iperf3_metrics({"end": {}})


def test_compressed_ss_and_wrong_cc_is_invalid(tmp_path):
    row, ev, _ = cv.load_run(write_run(tmp_path, 1, "bic", "bpf", 9.5, 1, BIC_SAMPLES, xz=True))
    assert row["valid"] and len(ev) == 2
    row, _, _ = cv.load_run(write_run(tmp_path, 2, "bic", "bpf", 9.5, 1, BIC_SAMPLES, ss_cc="cubic"))
    assert not row["valid"] and "cubic" in row["problem"]
    row, _, _ = cv.load_run(write_run(tmp_path, 3, "bic", "kernel", 9.5, 1, BIC_SAMPLES, check="fail"))
    assert not row["valid"] and "synthetic failure" in row["problem"]


def test_default_cc_before_iperf3_sets_it_is_allowed(tmp_path):
    # iperf3 sets TCP_CONGESTION after connecting: a first sample with only the cookie acked may show cubic
    d = write_run(tmp_path, 1, "bic", "bpf", 9.5, 1, BIC_SAMPLES)
    early = (f"# ts=1699999999.950000\n{HEADER}\nESTAB 0 37 10.71.1.1:40002 10.71.2.1:5201\n"
             "\t cubic wscale:7,7 rto:212 rtt:10.4/5.2 mss:1448 cwnd:10 bytes_sent:37 bytes_acked:1 segs_out:3\n")
    (d / "ss.txt").write_text(early + (d / "ss.txt").read_text())
    row, ev, cwnd = cv.load_run(d)
    assert row["valid"] and row["cc_seen"] == "bic"
    assert len(cwnd) == len(BIC_SAMPLES) and len(ev) == 2      # the cubic sample is not a bic sample


# ---------------------------------------------------------------- comparison
def test_equivalent_goodput(tmp_path):
    rng = np.random.default_rng(1)
    k = 9.40 + rng.normal(0, 0.03, 10)
    b = 9.41 + rng.normal(0, 0.03, 10)
    res = cv.load_results(make_results(tmp_path, b, k))
    assert len(res.valid_runs) == 20
    c = cv.compare(res).set_index("metric")
    g = c.loc["goodput"]
    assert g["kernel_n"] == 10 and g["bpf_n"] == 10
    assert g["kernel_mean"] == pytest.approx(k.mean())
    assert g["kernel_t_low"] < g["kernel_mean"] < g["kernel_t_high"]
    assert g["delta"] == pytest.approx(0.05 * k.mean())
    assert g["diff"] == pytest.approx(b.mean() - k.mean())
    assert g["diff_low"] < g["diff"] < g["diff_high"]
    assert g["verdict"] == "equivalent" and g["tost_p"] < 0.05
    r = c.loc["retransmits"]
    assert r["kernel_mean"] == pytest.approx(np.mean(np.arange(1, 11) + 100))
    assert r["diff"] == pytest.approx(2.0)
    # identical ss samples everywhere: zero-variance medians, exactly equal -> equivalent by the exact rule
    m = c.loc["median decrease ratio"]
    assert m["kernel_mean"] == pytest.approx((139 / 174 + 0.8) / 2) and m["diff"] == 0
    assert m["verdict"] == "equivalent" and m["expected"] == pytest.approx(819 / 1024)


def test_different_goodput_is_not_equivalent(tmp_path):
    rng = np.random.default_rng(2)
    k = 9.40 + rng.normal(0, 0.03, 10)
    b = 8.50 + rng.normal(0, 0.03, 10)    # ~10 % lower: outside the 5 % margin
    c = cv.compare(cv.load_results(make_results(tmp_path, b, k))).set_index("metric")
    assert c.loc["goodput", "verdict"] == "not shown"
    assert c.loc["goodput", "welch_p"] < 1e-6


def test_invalid_runs_are_excluded(tmp_path):
    root = make_results(tmp_path, [9.4, 9.5, 9.45], [9.4, 9.5, 9.45])
    write_run(root, 4, "bic", "bpf", 1.0, 1, BIC_SAMPLES, ss_cc="reno")
    res = cv.load_results(root)
    assert len(res.runs) == 7 and len(res.valid_runs) == 6
    c = cv.compare(res).set_index("metric")
    assert c.loc["goodput", "bpf_n"] == 3
    assert "rep04-bic-bpf" in cv.report(res, markdown=True)


def test_ratio_and_cwnd_tables(tmp_path):
    res = cv.load_results(make_results(tmp_path, [9.4, 9.5], [9.4, 9.5]))
    rt = cv.ratio_table(res).set_index("implementation")
    assert rt.loc["kernel", "events"] == 4 and rt.loc["kernel", "counted"] == 4
    assert rt.loc["bpf", "p50"] == pytest.approx(np.median([139 / 174, 0.8] * 2))
    assert rt.loc["bpf", "within_0.02"] == 1.0
    ct = cv.cwnd_table(res).iloc[0]
    assert ct["kernel_n"] == ct["bpf_n"] == 2 * len(BIC_SAMPLES)
    assert ct["ks_d"] == 0.0            # identical samples
    assert ct["kernel_p50"] == np.median([s[0] for s in BIC_SAMPLES])


def test_no_runs_is_an_error(tmp_path):
    with pytest.raises(AnalysisError):
        cv.load_results(tmp_path)
    assert cv.main([str(tmp_path)]) == 2


def test_markdown_cli_and_bundle_reproduce_the_table(tmp_path, capsys):
    rng = np.random.default_rng(3)
    src = make_results(tmp_path / "src", 9.4 + rng.normal(0, 0.05, 4), 9.4 + rng.normal(0, 0.05, 4))
    (src / "runs" / "rep01-bic-bpf" / "client.err").write_text("")
    assert cv.main([str(src), "--markdown"]) == 0
    md = capsys.readouterr().out
    assert "| bic | goodput (Mbit/s) |" in md and "equivalence" in md and "KS D" in md
    dest = tmp_path / "bundle"
    assert cv.main([str(src), "--markdown", "--bundle", str(dest)]) == 0
    assert capsys.readouterr().out == md
    from analysis import validation_store as vs
    assert (dest / "runs.tar.xz").is_file() and not (dest / "runs").exists()
    names = {n for n, _ in vs.members(dest)}
    assert "runs/rep01-bic-bpf/ss.txt" in names and "runs/rep01-bic-bpf/run.json" in names
    assert "runs/rep01-bic-bpf/client.err" not in names
    assert cv.main([str(dest), "--markdown"]) == 0
    assert capsys.readouterr().out == md          # the bundled copy gives the same table
    with pytest.raises(AnalysisError):
        cv.bundle(src, dest)                      # refuses a non-empty destination


def test_plain_report_runs(tmp_path):
    res = cv.load_results(make_results(tmp_path, [9.4, 9.5, 9.3], [9.4, 9.5, 9.6]))
    txt = cv.report(res, per_run=True)
    assert "goodput" in txt and "rep03-bic-kernel" in txt
    assert isinstance(cv.compare(res), pd.DataFrame)


def test_last_sample_ratio_ignores_an_earlier_peak():
    """A window that dips without a new ssthresh (end of a recovery) before the loss: the peak since the previous
    reduction over-estimates the window at the loss, the last sample does not (cwnd_decrease.decrease_events)."""
    from analysis.metrics.cwnd_decrease import decrease_events
    import pandas as pd
    s = pd.DataFrame({"ts": [0.0, 0.01, 0.02, 0.03, 0.04],
                      "cwnd_pkts": [117.0, 111.0, 108.0, 110.0, 100.0],
                      "ssthresh_pkts": [94.0, 94.0, 94.0, 94.0, 87.0]})
    ev = decrease_events(s)
    assert len(ev) == 1
    assert ev["cwnd_before_pkts"].iloc[0] == 117 and ev["ratio"].iloc[0] == pytest.approx(87 / 117)
    assert ev["cwnd_last_pkts"].iloc[0] == 110 and ev["ratio_last"].iloc[0] == pytest.approx(87 / 110)


def test_growth_after_recovery_known_answer():
    """Two loss episodes: the first recovers to cwnd 20 (Wmax 30) and one RTT (30 ms) later has 26 packets; the
    second has no sample one RTT after its recovery and does not count (analysis.metrics.cwnd_growth)."""
    from analysis.metrics.cwnd_growth import growth_after_recovery
    import pandas as pd
    ts = [0.00, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.10]
    cw = [28.0, 30.0, 25.0, 20.0, 22.0, 24.0, 26.0, 26.0, 27.0, 18.0, 27.0]
    th = [None, None, 20.0, 20.0, 20.0, 20.0, 20.0, 20.0, 20.0, 27.0, 27.0]
    s = pd.DataFrame({"ts": ts, "cwnd_pkts": cw, "ssthresh_pkts": [float("nan") if x is None else x for x in th],
                      "rtt_ms": [30.0] * 11})
    g = growth_after_recovery(s)
    assert len(g) == 1
    r = g.iloc[0]
    assert r["w_max_pkts"] == 30 and r["cwnd_start_pkts"] == 20 and r["ts"] == pytest.approx(0.03)
    assert r["cwnd_after_rtt_pkts"] == 26 and r["growth_pkts_per_rtt"] == 6


# ---------------------------------------------------------------- the kernel-defect guard's counters
def _with_guard(d: Path, ssthresh_repairs, cwnd_repairs, flows=1, duration_s=30):
    meta = json.loads((d / "run.json").read_text())
    meta.update(flows=flows, duration_s=duration_s, loss_pct=8)
    if ssthresh_repairs is not None:
        meta["cc_guard"] = {"guard_ssthresh_repairs": ssthresh_repairs, "guard_cwnd_repairs": cwnd_repairs}
    else:
        meta["cc_guard"] = None
    (d / "run.json").write_text(json.dumps(meta))
    return d


def test_guard_counters_and_impossible_cwnd_samples(tmp_path):
    # the defect as ss shows it: one sample with a cwnd of 240,591,796 packets (on the data connection)
    defect = BIC_SAMPLES[:4] + [(240_591_796, 139)] + BIC_SAMPLES[4:]
    _with_guard(write_run(tmp_path, 1, "westwood", "bpf", 9.0, 80, defect), 3, 2, flows=6, duration_s=60)
    _with_guard(write_run(tmp_path, 2, "westwood", "bpf", 9.1, 81, BIC_SAMPLES), 1, 0, flows=6, duration_s=60)
    _with_guard(write_run(tmp_path, 1, "westwood", "kernel", 9.2, 82, BIC_SAMPLES), None, None, flows=6,
                duration_s=60)
    res = cv.load_results(tmp_path)
    runs = res.runs.set_index("run")
    assert runs.loc["rep01-westwood-bpf", "impossible_cwnd_samples"] == 1
    assert runs.loc["rep02-westwood-bpf", "impossible_cwnd_samples"] == 0
    assert runs.loc["rep01-westwood-bpf", "guard_ssthresh_repairs"] == 3
    assert np.isnan(runs.loc["rep01-westwood-kernel", "guard_ssthresh_repairs"])
    gt = cv.guard_table(res).set_index("implementation")
    assert gt.loc["bpf", "runs"] == 2 and gt.loc["bpf", "flow_minutes"] == pytest.approx(12.0)
    assert gt.loc["bpf", "ssthresh_repairs"] == 4 and gt.loc["bpf", "cwnd_repairs"] == 2
    assert gt.loc["bpf", "impossible_cwnd_samples"] == 1
    assert gt.loc["kernel", "runs_with_counters"] == 0 and np.isnan(gt.loc["kernel", "ssthresh_repairs"])
    md = cv.report(res, markdown=True)
    assert "| westwood | bpf | 2 | 12.0 | 4 | 2 | 1 |" in md
    assert "| westwood | kernel | 1 | 6.0 | — | — | 0 |" in md


def test_no_guard_table_without_counters(tmp_path):
    res = cv.load_results(make_results(tmp_path, [9.4, 9.5], [9.4, 9.5]))
    assert cv.guard_table(res).empty
    assert "kernel-defect guard" not in cv.report(res, markdown=True)


def test_bundled_guarded_round():
    """data/cc-validation/guarded (the ports with the kernel-defect guard, docs/cc-validation.md): 40 valid runs,
    goodput equivalent to the kernel's modules for both CCs, every BPF run recorded the guard's counters."""
    root = Path(__file__).resolve().parents[1] / "data" / "cc-validation" / "guarded"
    res = cv.load_results(root)
    assert len(res.valid_runs) == 40 == len(res.runs)
    c = cv.compare(res).set_index(["cc", "metric"])
    assert c.loc[("bic", "goodput"), "verdict"] == "equivalent"
    assert c.loc[("westwood", "goodput"), "verdict"] == "equivalent"
    g = cv.guard_table(res).set_index(["cc", "implementation"])
    assert g.loc[("bic", "bpf"), "runs_with_counters"] == 10 == g.loc[("westwood", "bpf"), "runs_with_counters"]
    assert int(g["impossible_cwnd_samples"].sum()) == 0


def test_contrast_of_two_versions_known_answer(tmp_path):
    """A round with bic and bic415 reports bic415 - bic per implementation (Welch); one with only bic none."""
    make_results(tmp_path, [9.0, 9.2, 9.1], [9.1, 9.0, 9.2], cc="bic")
    for i, (gk, gb) in enumerate(zip([7.0, 7.2, 7.1], [7.1, 7.0, 7.2]), start=1):
        write_run(tmp_path, i, "bic415", "kernel", gk, 50, BIC_SAMPLES)
        write_run(tmp_path, i, "bic415", "bpf", gb, 50, BIC_SAMPLES, order=2)
    ct = cv.contrast(cv.load_results(tmp_path))
    g = ct[ct["metric"] == "goodput"].set_index("implementation")
    assert set(g.index) == {"kernel", "bpf"}
    assert g.loc["kernel", "diff"] == pytest.approx(7.1 - 9.1)
    assert g.loc["bpf", "a_mean"] == pytest.approx(9.1) and g.loc["bpf", "b_mean"] == pytest.approx(7.1)
    assert g.loc["kernel", "diff_high"] < 0 and g.loc["kernel", "welch_p"] < 0.001
    assert "tell the versions apart" in cv.report(cv.load_results(tmp_path), markdown=True)
    only_bic = tmp_path / "only"
    make_results(only_bic, [9.0, 9.2], [9.1, 9.0])
    assert cv.contrast(cv.load_results(only_bic)).empty


ROOT_DIR = Path(__file__).resolve().parents[1]


def test_bundled_bic415_rounds_are_the_docs_tables():
    """data/cc-validation/bic415 and .../bic415-confirmation (the VM comparisons of 2026-11-28: Linux 4.15's BIC, port
    against 4.15's own tcp_bic.c built as a module) give the tables docs/cc-validation.md prints, line for line, and
    the contrast the doc reads: 4.15's BIC below 6.1's by more than 2 Mbit/s in both implementations."""
    doc = (ROOT_DIR / "docs" / "cc-validation.md").read_text()
    for name, n in (("bic415", 40), ("bic415-confirmation", 20)):
        res = cv.load_results(ROOT_DIR / "data" / "cc-validation" / name)
        assert len(res.runs) == n and res.runs["valid"].all()
        rows = [ln for ln in cv.report(res, markdown=True).splitlines() if ln.startswith("| bic")]
        assert rows and all(ln in doc for ln in rows), [ln for ln in rows if ln not in doc]
    ct = cv.contrast(cv.load_results(ROOT_DIR / "data" / "cc-validation" / "bic415"))
    g = ct[ct["metric"] == "goodput"]
    assert len(g) == 2 and (g["diff_high"] < -2.0).all()
