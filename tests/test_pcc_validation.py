"""analysis.pcc_validation on small synthetic results directories (ss text and iperf3 JSON written here, each with
a known answer): per-run RTT inflation, retransmission share, pacing rate and Jain's index over two data
connections, the CC-name and stream-count checks, the module-vs-port comparison and the pacing trajectory."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from analysis import pcc_validation as pv
from analysis.errors import AnalysisError

HEADER = "State Recv-Q Send-Q Local Address:Port Peer Address:Port Process"
CTRL = ("ESTAB 0 0 10.71.1.1:40000 10.71.2.1:5201\n"
        "\t cubic wscale:7,7 rto:212 rtt:31.2/0.6 mss:1448 cwnd:10 bytes_sent:180 bytes_acked:181 segs_out:9\n")


def conn_line(port, cc, rtt, minrtt, pacing_mbps, sent_segs, retrans, acked):
    return (f"ESTAB 0 100000 10.71.1.1:{port} 10.71.2.1:5201\n"
            f"\t ts sack {cc} wscale:7,7 rto:240 rtt:{rtt}/2.1 mss:1448 pmtu:1500 cwnd:30 "
            f"bytes_sent:{sent_segs * 1448} bytes_acked:{acked} pacing_rate {pacing_mbps * 1e6:.0f}bps "
            f"delivery_rate 4.5Mbps retrans:0/{retrans} minrtt:{minrtt}\n")


def ss_text(cc="pcc", flows=2, blocks=20, dt=0.5, pacing=((3.0, 4.0), (5.0, 6.0)), t0=1700000000.0) -> str:
    """Blocks every dt s; connection A: srtt 40 ms, minrtt 31; B: srtt 44, minrtt 30.5. Pacing (A, B) Mbit/s is
    pacing[0] before 5 s and pacing[1] from 5 s. At the last block A has sent 1000 segments (10 retransmitted), B
    3000 (30)."""
    out = []
    for i in range(blocks):
        t = i * dt
        pa, pb = pacing[0] if t < 5 else pacing[1]
        last = i == blocks - 1
        lines = [f"# ts={t0 + t:.6f}", HEADER, CTRL.rstrip("\n")]
        lines.append(conn_line(40002, cc, 40, 31, pa, 1000 if last else 10 * (i + 1), 10 if last else 0,
                               50_000 * (i + 1)).rstrip("\n"))
        if flows > 1:
            lines.append(conn_line(40004, cc, 44, 30.5, pb, 3000 if last else 30 * (i + 1), 30 if last else 0,
                                   60_000 * (i + 1)).rstrip("\n"))
        out.append("\n".join(lines) + "\n")
    return "".join(out)


def iperf3_doc(flow_mbps=(4.0, 6.0), rtt_us=(41000, 45000)) -> dict:
    return {"start": {"test_start": {"protocol": "TCP", "duration": 30, "num_streams": len(flow_mbps)}},
            "intervals": [],
            "end": {"streams": [{"sender": {"bits_per_second": m * 1e6 * 1.01, "mean_rtt": r},
                                 "receiver": {"bits_per_second": m * 1e6}} for m, r in zip(flow_mbps, rtt_us)],
                    "sum_sent": {"bits_per_second": sum(flow_mbps) * 1e6 * 1.01, "retransmits": 40},
                    "sum_received": {"bits_per_second": sum(flow_mbps) * 1e6}}}


def write_run(root: Path, rep, impl, *, loss=1, flows=2, goodput=(4.0, 6.0), ss=None, check="pass", order=1,
              cc_name=None) -> Path:
    name = cc_name or ("pcc" if impl == "kernel" else "pcc_vivace")
    d = root / "runs" / f"rep{rep:02d}-pcc_vivace-l{loss}-f{flows}-{impl}"
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({
        "rep": rep, "cc": "pcc_vivace", "implementation": impl, "order_in_rep": order, "cc_name": name,
        "loss_pct": loss, "flows": flows, "ack_path_delay_ms": 30, "check": check,
        "reason": None if check == "pass" else "iperf3 exited 1"}))
    (d / "iperf3.json").write_text(json.dumps(iperf3_doc(goodput[:flows], (41000, 45000)[:flows])))
    (d / "ss.txt").write_text(ss if ss is not None else ss_text(cc=name, flows=flows))
    return d


def test_one_run_known_answers(tmp_path):
    d = write_run(tmp_path, 1, "kernel")
    row, pacing = pv.load_run(d)
    assert row["valid"], row["problem"]
    assert row["goodput_mbps"] == pytest.approx(10.0)
    assert row["jain"] == pytest.approx(100 / (2 * (16 + 36)))       # (4+6)^2 / (2 (4^2+6^2))
    assert row["rtt_ms"] == pytest.approx(42.0)                       # median of 20 x 40 and 20 x 44
    assert row["base_rtt_ms"] == pytest.approx(30.5)
    assert row["rtt_inflation_ms"] == pytest.approx(11.5)
    assert row["retrans_pct"] == pytest.approx(100 * 40 / 4000)       # 1 %
    assert row["pacing_mbps"] == pytest.approx(11.0)                  # 5 + 6 from 5 s on
    assert row["iperf3_rtt_ms"] == pytest.approx(43.0)
    assert row["n_conns"] == 2 and row["n_blocks"] == 20
    assert len(pacing) == 20
    assert pacing.loc[pacing["t_s"] < 5, "pacing_mbps"].tolist() == pytest.approx([7.0] * 10)
    assert row["start_peak_mbps"] == pytest.approx(7.0)                # 3 + 4, the largest before 5 s


def test_start_peak_is_the_largest_rate_before_the_steady_part(tmp_path):
    # a start phase of x1.5 steps (4, 6, 9, 13.5 Mbit/s, then back to 9), then 20 Mbit/s from 5 s: the peak is 13.5
    blocks = []
    for i, p in enumerate((4.0, 6.0, 9.0, 13.5, 9.0, 9.0, 20.0, 20.0)):
        t = (0, 1, 2, 3, 4, 4.9, 5, 6)[i]
        blocks.append(ss_text(flows=1, blocks=1, pacing=((p, 0), (p, 0)), t0=1700000000.0 + t))
    row, _ = pv.load_run(write_run(tmp_path, 1, "kernel", flows=1, goodput=(9.0,), ss="".join(blocks)))
    assert row["start_peak_mbps"] == pytest.approx(13.5)
    assert row["pacing_mbps"] == pytest.approx(20.0)


def test_single_flow_has_no_jain(tmp_path):
    row, _ = pv.load_run(write_run(tmp_path, 1, "bpf", flows=1, goodput=(9.0,)))
    assert row["valid"], row["problem"]
    assert np.isnan(row["jain"])
    assert row["rtt_inflation_ms"] == pytest.approx(9.0)             # 40 - 31
    assert row["retrans_pct"] == pytest.approx(1.0)
    assert row["pacing_mbps"] == pytest.approx(5.0)


def test_wrong_cc_on_the_data_connection_invalidates(tmp_path):
    d = write_run(tmp_path, 1, "kernel", ss=ss_text(cc="cubic"))
    row, _ = pv.load_run(d)
    assert not row["valid"] and "expected pcc" in row["problem"]


def test_stream_count_mismatch_invalidates(tmp_path):
    d = write_run(tmp_path, 1, "bpf", ss=ss_text(cc="pcc_vivace", flows=1))   # ss shows one of the two flows
    row, _ = pv.load_run(d)
    assert not row["valid"] and "1 data connections" in row["problem"]


def test_compare_equivalent_and_different(tmp_path):
    # loss 0: the port within 1 % of the module's goodput; loss 1: 20 % below
    for rep, (gk, gb) in enumerate([(9.5, 9.45), (9.6, 9.52), (9.4, 9.41), (9.55, 9.5)], start=1):
        write_run(tmp_path, rep, "kernel", loss=0, flows=1, goodput=(gk,))
        write_run(tmp_path, rep, "bpf", loss=0, flows=1, goodput=(gb,), order=2)
    for rep, (gk, gb) in enumerate([(9.0, 7.2), (9.1, 7.3), (8.9, 7.1), (9.05, 7.25)], start=1):
        write_run(tmp_path, rep, "kernel", loss=1, flows=1, goodput=(gk,))
        write_run(tmp_path, rep, "bpf", loss=1, flows=1, goodput=(gb,), order=2)
    res = pv.load_results(tmp_path)
    c = pv.compare(res)
    g = c[c["metric"] == "goodput"].set_index("loss_pct")
    assert g.loc[0.0, "verdict"] == "equivalent"
    assert g.loc[1.0, "verdict"] == "not shown"
    assert g.loc[1.0, "diff"] == pytest.approx(np.mean([7.2, 7.3, 7.1, 7.25]) - np.mean([9.0, 9.1, 8.9, 9.05]))
    assert g.loc[1.0, "delta"] == pytest.approx(0.05 * np.mean([9.0, 9.1, 8.9, 9.05]))
    assert "Jain's index of the flows' goodputs" not in set(c["metric"])          # one flow: no Jain row
    text = pv.report(res, markdown=True, per_run=True)
    assert "| 1 % | 1 | goodput (Mbit/s) |" in text and "not shown" in text


def test_invalid_runs_are_left_out_of_the_comparison(tmp_path):
    for rep in (1, 2, 3):
        write_run(tmp_path, rep, "kernel", flows=2)
        write_run(tmp_path, rep, "bpf", flows=2, order=2)
    write_run(tmp_path, 4, "bpf", flows=2, check="fail")
    res = pv.load_results(tmp_path)
    c = pv.compare(res)
    assert set(c["bpf_n"]) == {3}
    j = c[c["metric"].str.startswith("Jain")].iloc[0]
    assert j["verdict"] == "equivalent" and j["diff"] == 0          # identical runs: exact difference 0
    assert "Excluded runs: rep04" in pv.report(res, markdown=True)


def test_trajectory_bins_and_summary(tmp_path):
    for rep in (1, 2, 3):
        write_run(tmp_path, rep, "kernel", flows=2)
        # the port paces 1 Mbit/s more per flow from 5 s on, and a little differently per rep before
        ss = ss_text(cc="pcc_vivace", pacing=((3.0 + 0.01 * rep, 4.0), (6.0, 7.0)))
        write_run(tmp_path, rep, "bpf", flows=2, ss=ss, order=2)
    res = pv.load_results(tmp_path)
    tr = pv.trajectory(res, bin_s=1.0)
    assert list(tr["t_s"]) == [float(i) for i in range(10)]
    late = tr[tr["t_s"] >= 5]
    assert late["kernel_mean"].tolist() == pytest.approx([11.0] * 5)
    assert late["bpf_mean"].tolist() == pytest.approx([13.0] * 5)
    s = pv.trajectory_summary(tr).iloc[0]
    # before 5 s the port is 0.01-0.03 Mbit/s above (sd 0.01 over 3 runs): 95 % interval [-0.005, 0.045] holds 0
    assert s["bins"] == 10 and s["bins_differ"] == 5
    assert s["largest_abs_diff_mbps"] == pytest.approx(2.0)
    with pytest.raises(AnalysisError):
        pv.trajectory(res, bin_s=0)


def test_cli_bad_input_is_one_line(tmp_path, capsys):
    assert pv.main([str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:")


def test_bundle_copies_small_files_and_build_log(tmp_path):
    src = tmp_path / "src"
    write_run(src, 1, "kernel")
    write_run(src, 1, "bpf", order=2)
    (src / "pcc-build.log").write_text("make: Entering directory\n")
    (src / "meta.json").write_text(json.dumps({"reps": 1, "duration_s": 30}))
    dest = tmp_path / "dest"
    assert pv.main([str(src), "--bundle", str(dest), "--markdown"]) == 0
    assert (dest / "pcc-build.log").is_file()
    from analysis import validation_store as vs
    names = {n for n, _ in vs.members(dest)}
    assert {n.split("/")[1] for n in names} == {p.name for p in (src / "runs").iterdir()}
    assert {n for n in names if n.endswith("/ss.txt")} == {f"runs/{p.name}/ss.txt" for p in (src / "runs").iterdir()}
    assert not list(dest.rglob("*.ko"))


ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("args, message", [
    (["--losses", "1 x"], "--losses: bad loss percentage 'x'"),
    (["--flows", "1 9"], "--flows: flow counts are 1..8, got '9'"),
    (["--rtt-ms", "0"], "--rtt-ms must be an integer 1..9999, got '0'"),
    (["--ccs", "nosuchcc"], "no BPF port testbed/cc/nosuchcc.bpf.c"),
])
def test_vm_harness_rejects_bad_case_options_before_doing_anything(tmp_path, args, message):
    import subprocess
    out = tmp_path / "out"
    p = subprocess.run(["bash", str(ROOT / "testbed/cc/validate-vm.sh"), "--out", str(out), *args],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]
    assert not out.exists()


@pytest.mark.parametrize("kmod", ["pcc_vivace=pcc", "pcc_vivace=pcc:relative/tcp_pcc.ko", "Bad=pcc:/x.ko"])
def test_guest_script_rejects_a_bad_kmod_option(tmp_path, kmod):
    import subprocess
    p = subprocess.run(["bash", str(ROOT / "testbed/cc/validate-guest.sh"), "--objdir", str(tmp_path), "--out",
                        str(tmp_path / "o"), "--kmod", kmod], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert p.stderr.strip() == f"error: --kmod must be CC=NAME:/ABSOLUTE/PATH.ko, got '{kmod}'"


def test_committed_comparison_is_the_docs_table():
    """data/pcc-validation (the VM comparison of 2026-11-26) gives the tables docs/pcc-vivace.md prints, line for
    line, and what the doc says of them: 80 valid runs, goodput equivalent in all four cases."""
    data = ROOT / "data" / "pcc-validation"
    res = pv.load_results(data)
    assert len(res.runs) == 80 and res.runs["valid"].all()
    md = pv.report(res, markdown=True)
    doc = (ROOT / "docs" / "pcc-vivace.md").read_text()
    rows = [ln for ln in md.splitlines() if ln.startswith("|")]
    assert len(rows) > 30 and all(ln in doc for ln in rows)
    good = [ln for ln in rows if "| goodput (Mbit/s) |" in ln]
    assert len(good) == 4 and all("| equivalent |" in ln for ln in good)
