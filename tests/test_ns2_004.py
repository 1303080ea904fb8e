"""Study 004 in ns-2 (testbed/ns2_004/run.sh, analysis.ns2_004; docs/ns2-004.md): the trace parser on hand-written
ns-2 trace lines with known answers (received bytes both ways, both delay definitions, drops, cwnd), the Tcl
generator against testbed/families/004/*.json, the runner's argument checks, the committed set data/ns2-004, and one
real 2-s simulation when ns-2 (`ns`, Debian package ns2) is installed."""
from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from analysis import ns2_004 as m
from analysis.errors import AnalysisError

ROOT = Path(__file__).resolve().parents[1]
RUNNER = ROOT / "testbed" / "ns2_004" / "run.sh"
FAMILY = ROOT / "testbed" / "families" / "004"
COMMITTED = ROOT / "data" / "ns2-004"
needs_jq = pytest.mark.skipif(shutil.which("jq") is None, reason="jq not installed (the runner generates Tcl with jq)")
needs_ns = pytest.mark.skipif(shutil.which("ns") is None,
                              reason="ns-2 not installed (Debian: apt-get install ns2; tools/setup_host.sh has it)")

# A 0.5 Mbit/s, 50 ms link n0 -> n1 (client_server): one 592-byte packet takes 9.472 ms to send, 59.472 ms in all.
# uid 0: the 40-byte SYN; uid 1: sent at once; uid 2: waits 9.472 ms behind uid 1 in n0's queue; uid 3 (seq 3):
# dropped by the error model (a 'd' without '+'); uid 4: seq 3 again; uid 5: a spurious retransmission of seq 2
# (a duplicate at the receiver); uid 6: dropped by the queue ('+' then 'd'); ACKs travel n1 -> n0.
TRACE = """\
+ 0.1 0 1 tcp 40 ------- 1 0.0 1.0 0 0
- 0.1 0 1 tcp 40 ------- 1 0.0 1.0 0 0
r 0.15064 0 1 tcp 40 ------- 1 0.0 1.0 0 0
+ 0.15064 1 0 ack 40 ------- 1 1.0 0.0 0 7
- 0.15064 1 0 ack 40 ------- 1 1.0 0.0 0 7
r 0.20128 1 0 ack 40 ------- 1 1.0 0.0 0 7
+ 0.2 0 1 tcp 592 ------- 1 0.0 1.0 1 1
- 0.2 0 1 tcp 592 ------- 1 0.0 1.0 1 1
+ 0.2 0 1 tcp 592 ------- 1 0.0 1.0 2 2
- 0.209472 0 1 tcp 592 ------- 1 0.0 1.0 2 2
d 0.21 0 1 tcp 592 ------- 1 0.0 1.0 3 3
r 0.259472 0 1 tcp 592 ------- 1 0.0 1.0 1 1
r 0.268944 0 1 tcp 592 ------- 1 0.0 1.0 2 2
+ 0.5 0 1 tcp 592 ------- 1 0.0 1.0 3 4
- 0.5 0 1 tcp 592 ------- 1 0.0 1.0 3 4
r 0.559472 0 1 tcp 592 ------- 1 0.0 1.0 3 4
+ 0.6 0 1 tcp 592 ------- 1 0.0 1.0 2 5
- 0.6 0 1 tcp 592 ------- 1 0.0 1.0 2 5
r 0.659472 0 1 tcp 592 ------- 1 0.0 1.0 2 5
+ 0.7 0 1 tcp 592 ------- 1 0.0 1.0 4 6
d 0.7 0 1 tcp 592 ------- 1 0.0 1.0 4 6
"""
# cwnd_ of the agent at node 0 sending to node 1, another agent's and another variable's lines (ignored)
CWND = """\
0.00000  0  0  1  0  cwnd_ 2.000
0.20000  0  0  1  0  cwnd_ 4.000
0.30000  1  0  2  0  cwnd_ 99.000
0.40000  0  0  1  0  ssthresh_ 5.000
0.60000  0  0  1  0  cwnd_ 10.000
"""
PARAMS = {"run": "client_server__westwood__err0.01", "topology": "client_server", "table": 1, "level_row": 1,
          "cc": "westwood", "window": 20, "seed": 1, "duration_s": 1.0, "error_rate": 0.01, "bandwidth_mbit": None,
          "start_s": 0.1, "end_s": 1.1, "header_bytes": 40, "ip_packet_bytes": 592,
          "links": [{"name": "L1", "a": "n0", "b": "n1", "rate_mbit": 0.5, "delay_ms": 50, "buffer_pkts": 50}],
          "flows": [{"flow": 1, "fid": 1, "sender": "n0", "receiver": "n1", "sender_id": 0, "receiver_id": 1,
                     "path": ["L1"]}]}


# ---------------------------------------------------------------- parser, known answers

def test_parse_trace_columns():
    tr = m.parse_trace(TRACE)
    assert len(tr) == 21
    assert tr["uid"].max() == 7 and tr["size"].sum() > 0
    row = tr.iloc[3]
    assert (row["event"], row["from_node"], row["to_node"], row["ptype"]) == ("+", 1, 0, "ack")
    assert (row["src_node"], row["src_port"], row["dst_node"], row["dst_port"]) == (1, 0, 0, 0)


def test_received_bytes_both_definitions():
    tr = m.parse_trace(TRACE)
    assert m.received_bytes_awk(tr, 1) == (40 + 4 * 592, 5)   # SYN and the duplicate counted
    assert m.received_bytes_new(tr, 1, 1) == (3 * 592, 3)     # seq 1, 2, 3 once each
    assert m.received_bytes_awk(tr, 0) == (0, 0)              # ACKs are not tcp packets


def test_delays_from_enqueue_and_dequeue():
    tr = m.parse_trace(TRACE)
    d = m.packet_delays(tr, 0, 1, 1)
    assert sorted(d["uid"]) == [1, 2, 4, 5]
    by = d.set_index("uid")
    assert by.loc[2, "delay_enq_s"] == pytest.approx(0.068944, abs=1e-9)
    assert by.loc[2, "delay_deq_s"] == pytest.approx(0.059472, abs=1e-9)
    assert d["delay_deq_s"].to_numpy() == pytest.approx([0.059472] * 4, abs=1e-9)
    allp = m.packet_delays(tr, 0, 1, 1, data_only=False)
    assert len(allp) == 5 and allp["delay_deq_s"].mean() == pytest.approx((4 * 0.059472 + 0.05064) / 5, abs=1e-9)


def test_drops_error_vs_queue():
    assert m.drops(m.parse_trace(TRACE), 1) == (1, 1)


def test_noqueue_delay():
    assert m.noqueue_delay_s(PARAMS["links"], 592) == pytest.approx(0.059472, abs=1e-12)
    four = [{"delay_ms": d, "rate_mbit": 1} for d in (10, 100, 40, 10)]
    assert m.noqueue_delay_s(four, 592) == pytest.approx(0.178944, abs=1e-12)   # Table 3's 1 Mbit/s row


def test_cwnd_stats_time_average():
    c = m.parse_cwnd(CWND)
    assert len(c) == 4 and set(c["saddr"]) == {0, 1}
    mx, mean = m.cwnd_stats(c, 0, 1, 0.1, 1.1)
    # 2 over [0.1, 0.2), 4 over [0.2, 0.6), 10 over [0.6, 1.1]
    assert mx == 10 and mean == pytest.approx((2 * 0.1 + 4 * 0.4 + 10 * 0.5) / 1.0)
    assert all(math.isnan(x) for x in m.cwnd_stats(c, 5, 6, 0.1, 1.1))


def test_flow_metrics_and_totals():
    row = m.flow_metrics(m.parse_trace(TRACE), m.parse_cwnd(CWND), PARAMS, PARAMS["flows"][0])
    assert row["received_bytes_awk"] == 2408 and row["received_bytes_new"] == 1776
    assert row["delay_enq_mean_ms"] == pytest.approx((59.472 * 3 + 68.944) / 4, abs=1e-6)
    assert row["delay_deq_mean_ms"] == pytest.approx(59.472, abs=1e-6)
    assert row["delay_deq_all_mean_ms"] == pytest.approx((4 * 59.472 + 50.64) / 5, abs=1e-6)
    assert row["delay_noqueue_ms"] == pytest.approx(59.472, abs=1e-9)
    assert row["queued_first_hop_share"] == pytest.approx(0.25) and row["queued_downstream_share"] == 0
    assert (row["error_drops"], row["queue_drops"], row["sent_data_pkts"]) == (1, 1, 5)
    assert row["cwnd_max_pkts"] == 10
    base = {"source": "s", **{k: PARAMS.get(k) for k in m.PARAM_COLUMNS}}
    two = pd.DataFrame([{**base, **row}, {**base, **row, "flow": 2, "delay_deq_mean_ms": 100.0,
                                          "n_delay_pkts": 12}])
    tot = m.run_totals(two).iloc[0]
    assert tot["received_bytes_awk"] == 2 * 2408 and tot["flows"] == 2
    assert tot["delay_deq_mean_ms"] == pytest.approx((4 * 59.472 + 12 * 100.0) / 16)


def test_compare_with_paper_table1():
    row = m.flow_metrics(m.parse_trace(TRACE), None, PARAMS, PARAMS["flows"][0])
    flows = pd.DataFrame([{"source": "s", **{k: PARAMS.get(k) for k in m.PARAM_COLUMNS}, **row}])
    c = m.compare_with_paper(flows)
    assert set(c["definition"]) == {"awk", "new_data", "enqueue", "dequeue", "dequeue_all_tcp"}
    b = c[(c["metric"] == "received_bytes") & (c["definition"] == "awk")].iloc[0]
    assert b["paper"] == 6385904 and b["ns2"] == 2408
    d = c[(c["metric"] == "delay_s") & (c["definition"] == "dequeue")].iloc[0]
    assert d["paper"] == pytest.approx(0.059472) and d["diff"] == pytest.approx(0, abs=1e-9)
    assert "0.059472" in m.markdown(flows)


def test_bad_traces_are_one_line_errors(tmp_path):
    with pytest.raises(AnalysisError, match="trace line 1 is not an ns-2 wired trace line"):
        m.parse_trace("x 0.1 0 1 tcp 40 ------- 1 0.0 1.0 0 0\n")
    with pytest.raises(AnalysisError):
        m.parse_trace("+ 0.1 0 1 tcp 40 ------- 1 0.0 1.0 0 0 extra\n+ 0.2 0 1 tcp 40 ------- 1 0.0 1.0 0 0 1 2\n")
    p = tmp_path / "t.tr.gz"
    p.write_bytes(b"not gzip")
    with pytest.raises(AnalysisError):
        m.parse_trace(p)
    with pytest.raises(AnalysisError, match="file not found"):
        m.parse_trace(tmp_path / "missing.tr")


def test_cli_bad_input(tmp_path, capsys):
    assert m.main([str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    (tmp_path / "runs" / "x").mkdir(parents=True)
    (tmp_path / "runs" / "x" / "params.json").write_text("{")
    assert m.main([str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("error: ")


# ---------------------------------------------------------------- the runner: Tcl generator and argument checks

def _run(args, cwd):
    return subprocess.run(["bash", str(RUNNER), *args], cwd=cwd, capture_output=True, text=True, timeout=120)


@needs_jq
def test_tcl_generator_bottleneck(tmp_path):
    r = _run(["--out", "g", "--tcl-only", "--topologies", "bottleneck", "--levels", "3", "--window", "33",
              "--duration-s", "7", "--seed", "5"], tmp_path)
    assert r.returncode == 0, r.stderr
    d = tmp_path / "g" / "runs" / "bottleneck__westwood__err0.03"
    tcl = (d / "sim.tcl").read_text()
    topo = json.loads((FAMILY / "bottleneck.json").read_text())
    # nodes in the paper's order, ns-2 node k = nK
    assert re.findall(r"^set n\((n\d)\) \[\$ns node\]$", tcl, re.M) == ["n0", "n1", "n2", "n3", "n4", "n5"]
    links = re.findall(r"^\$ns duplex-link \$n\((\w+)\) \$n\((\w+)\) ([\d.]+)Mb ([\d.]+)ms DropTail", tcl, re.M)
    assert [(a, b, float(r_), float(dl)) for a, b, r_, dl in links] == \
        [(lk["a"], lk["b"], float(lk["rate_mbit"]), float(lk["delay_ms"])) for lk in topo["links"]]
    limits = re.findall(r"^\$ns queue-limit \$n\((\w+)\) \$n\((\w+)\) (\d+)$", tcl, re.M)
    for lk in topo["links"]:   # both directions at the link's buffer (L3: the paper's 20)
        buf = str(lk["buffer_pkts"])
        assert (lk["a"], lk["b"], buf) in limits and (lk["b"], lk["a"], buf) in limits
    # an error model on the a -> b direction of exactly the links with error_flows, at the run's rate
    em = re.findall(r"^\$ns lossmodel \$em\((\w+)\) \$n\((\w+)\) \$n\((\w+)\)$", tcl, re.M)
    assert em == [(lk["name"], lk["a"], lk["b"]) for lk in topo["links"] if lk["error_flows"]] == \
        [("L1", "n0", "n2"), ("L2", "n1", "n2")]
    assert re.findall(r"^\$em\(\w+\) set rate_ ([\d.]+)$", tcl, re.M) == ["0.03", "0.03"]
    assert tcl.count("$em(L1) unit pkt") == 1 and "RandomVariable/Uniform" in tcl
    # agents: one Linux TCP per flow on its sender, sink on its receiver, both started together
    for f in topo["flows"]:
        k = f["flow"]
        assert f"$ns attach-agent $n({f['sender']}) $tcp({k})" in tcl
        assert f"$ns attach-agent $n({f['receiver']}) $sink({k})" in tcl
        assert f'$ns at 0 "$tcp({k}) select_ca westwood"' in tcl and f"$tcp({k}) set window_ 33" in tcl
        assert f"$tcp({k}) set packetSize_ {topo['mtu'] - 40}" in tcl and f"$tcp({k}) trace cwnd_" in tcl
        assert f'$ns at 0.1 "$ftp({k}) start"' in tcl and f'$ns at 7.1 "$ftp({k}) stop"' in tcl
    assert "$defaultRNG seed 5" in tcl
    p = json.loads((d / "params.json").read_text())
    assert (p["table"], p["error_rate"], p["window"], p["seed"], p["ip_packet_bytes"]) == (4, 0.03, 33, 5, 592)
    assert [(f["sender_id"], f["receiver_id"]) for f in p["flows"]] == [(0, 4), (1, 5)]
    meta = json.loads((tmp_path / "g" / "meta.json").read_text())
    assert meta["tcl_only"] is True and meta["command"].startswith("testbed/ns2_004/run.sh --out g")


@needs_jq
def test_tcl_generator_uniform_bandwidth(tmp_path):
    r = _run(["--out", "u", "--tcl-only", "--topologies", "multihop_uniform", "--levels", "4"], tmp_path)
    assert r.returncode == 0, r.stderr
    d = tmp_path / "u" / "runs" / "multihop_uniform__westwood__err0.01__bw4mbit"
    rates = re.findall(r"^\$ns duplex-link \S+ \S+ ([\d.]+)Mb ([\d.]+)ms", (d / "sim.tcl").read_text(), re.M)
    assert rates == [("4", "10"), ("4", "100"), ("4", "40"), ("4", "10")]
    p = json.loads((d / "params.json").read_text())
    assert p["bandwidth_mbit"] == 4 and p["error_rate"] == 0.01 and p["table"] == 3


@needs_jq
@pytest.mark.parametrize("args, msg", [
    (["--window", "0"], "--window must be an integer"),
    (["--duration-s", "-1"], "--duration-s must be a number"),
    (["--seed", "0"], "--seed must be an integer"),
    (["--levels", "11"], "--levels: '11' is not a table row"),
    (["--levels", "1,1"], "given twice"),
    (["--topologies", "ring"], "unknown topology 'ring'"),
    (["--cc", "westwood_e"], "westwood_e needs a module compiled into ns-2"),
    (["--bogus"], "unknown argument '--bogus'"),
    (["--ns-binary", "/nonexistent/ns", "--cc", "westwood_e"], "is not an executable file"),
    (["--ns-binary", "/bin/true", "--cc", "West"], "--cc must be a TCP-Linux module name"),
])
def test_runner_rejects_bad_input(tmp_path, args, msg):
    r = _run(["--out", "x", "--tcl-only", *args], tmp_path)
    assert r.returncode == 2 and r.stderr.startswith("error: ") and msg in r.stderr
    assert r.stderr.count("\n") == 1 and not (tmp_path / "x").exists()


@needs_jq
def test_runner_never_overwrites(tmp_path):
    (tmp_path / "x").mkdir()
    r = _run(["--out", "x", "--tcl-only"], tmp_path)
    assert r.returncode == 2 and "exists" in r.stderr


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed")
def test_runner_is_shellcheck_clean():
    r = subprocess.run(["shellcheck", "-x", str(RUNNER)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout
    head = RUNNER.read_text().splitlines()[:40]
    assert head[0] == "#!/usr/bin/env bash" and "set -euo pipefail" in head


# ---------------------------------------------------------------- the committed set

@pytest.mark.skipif(not (COMMITTED / "window20" / "summary.csv").is_file(), reason="data/ns2-004 not present")
def test_committed_set_table1_constant_under_dequeue_definition():
    for name in ("window20", "window10000"):
        flows = m.load_runs(COMMITTED / name)
        assert len(flows) == 50                                    # 40 runs, the bottleneck's with 2 flows
        t1 = flows[flows["table"] == 1]
        assert len(t1) == 10
        assert t1["delay_deq_mean_ms"].to_numpy() == pytest.approx([59.472] * 10, abs=5e-4)
        assert (t1["delay_enq_mean_ms"] > 60).all()
        for f in ("meta.json", "comparison.csv", "README.md"):
            assert (COMMITTED / f).is_file() or (COMMITTED / name / f).is_file()
    assert '"$REPO/testbed/ns2_004/run.sh" --out window20 --window 20 --seed 1' in (COMMITTED / "README.md").read_text()


# ---------------------------------------------------------------- one real simulation

@needs_ns
@needs_jq
def test_real_two_second_simulation(tmp_path, capsys):
    r = _run(["--out", "sim", "--duration-s", "2", "--topologies", "client_server", "--levels", "1"], tmp_path)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "sim"
    run = out / "runs" / "client_server__westwood__err0.01"
    assert (run / "trace.tr.gz").is_file() and (run / "cwnd.tr.gz").is_file()
    meta = json.loads((out / "meta.json").read_text())
    assert meta["ns_version"].startswith("2.") and meta["runs"] == 1
    flows = m.load_runs(out)
    f = flows.iloc[0]
    assert f["received_pkts_new"] > 50                          # ~0.5 Mbit/s for 2 s of 592-byte packets
    assert f["received_bytes_awk"] % 592 == 40                  # whole packets plus ns-2's 40-byte SYN
    assert f["delay_deq_mean_ms"] == pytest.approx(59.472, abs=1e-3)
    assert f["delay_enq_mean_ms"] > f["delay_deq_mean_ms"]      # the window (20) exceeds the path's ~12 packets
    assert 2 <= f["cwnd_max_pkts"] <= 20
    assert m.main([str(out)]) == 0 and "59.472" in capsys.readouterr().out
    dest = tmp_path / "committed"
    assert m.main([str(out), "--export", str(dest), "--keep-trace", run.name]) == 0
    assert (dest / "summary.csv").is_file() and not (dest / "runs").exists()
    import tarfile
    with tarfile.open(dest / "runs.tar.xz") as tar:
        assert f"runs/{run.name}/trace.tr.gz" in tar.getnames() and f"runs/{run.name}/sim.tcl" in tar.getnames()
    back = m.load_runs(dest)
    assert back["received_bytes_awk"].tolist() == flows["received_bytes_awk"].tolist()
    assert m.main([str(out), "--export", str(dest)]) == 2       # never overwrites
