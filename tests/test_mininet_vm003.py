"""analysis.mininet_vm003 (study 003's Table 2 scenarios replicated with Mininet + Open vSwitch in the Debian VM,
docs/mininet-003.md) on hand-built result directories with known answers, and the harness scripts' argument checks
(no VM, no Mininet, no namespace)."""
from __future__ import annotations

import importlib.util
import json
import math
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from analysis import mininet_vm003 as m
from analysis import reference
from analysis.errors import AnalysisError

ROOT = Path(__file__).resolve().parents[1]
H = 4.302652729911275 / math.sqrt(3)          # t(0.975, 2) / sqrt(3): the half-width of sd 1 over 3 reps

# four echo requests 1 s apart from t = 100 s; request 3 is never answered; reply 2 arrives (is printed) before 1
PING = b"""PING 10.103.100.1 (10.103.100.1) from 10.103.2.2 : 56(84) bytes of data.
[101.014000] 64 bytes from 10.103.100.1: icmp_seq=2 ttl=64 time=14.0 ms
[100.010000] 64 bytes from 10.103.100.1: icmp_seq=1 ttl=64 time=10.0 ms
[103.011000] 64 bytes from 10.103.100.1: icmp_seq=4 ttl=64 time=11.0 ms

--- 10.103.100.1 ping statistics ---
4 packets transmitted, 3 received, 25% packet loss, time 3003ms
"""

# what Mininet 2.3.0 runs for one TCLink end (bw=10, delay='2ms', max_queue_size=50): the look-up, then OVS has taken
# the port and Mininet applies the configuration again (mininet/node.py, OVSSwitch.batchStartup)
COMMANDS = [
    {"node": "s1", "intf": "s1-eth1", "cmd": "tc qdisc show dev s1-eth1", "output": "qdisc noqueue 0: root"},
    {"node": "s1", "intf": "s1-eth1", "cmd": "tc qdisc add dev s1-eth1 root handle 5:0 htb default 1", "output": ""},
    {"node": "s1", "intf": "s1-eth1",
     "cmd": "tc class add dev s1-eth1 parent 5:0 classid 5:1 htb rate 10.000000Mbit burst 15k", "output": ""},
    {"node": "s1", "intf": "s1-eth1",
     "cmd": "tc qdisc add dev s1-eth1  parent 5:1  handle 10: netem delay 2ms limit 50", "output": ""},
    {"node": "h1", "intf": "h1-eth0", "cmd": "tc qdisc add dev h1-eth0 root handle 5:0 htb default 1", "output": ""},
    {"node": "s1", "intf": "s1-eth1", "cmd": "tc qdisc show dev s1-eth1", "output": "qdisc htb 5: root"},
    {"node": "s1", "intf": "s1-eth1", "cmd": "tc qdisc del dev s1-eth1 root", "output": ""},
    {"node": "s1", "intf": "s1-eth1", "cmd": "tc qdisc add dev s1-eth1 root handle 5:0 htb default 1", "output": ""},
    {"node": "s1", "intf": "s1-eth1",
     "cmd": "tc class add dev s1-eth1 parent 5:0 classid 5:1 htb rate 10.000000Mbit burst 15k", "output": ""},
    {"node": "s1", "intf": "s1-eth1",
     "cmd": "tc qdisc add dev s1-eth1  parent 5:1  handle 10: netem delay 2ms limit 50", "output": ""},
]


def test_ping_metrics_are_the_namespace_testbeds():
    r = m.ping_metrics(PING)
    assert r["ping_rtt_mean_ms"] == pytest.approx(35 / 3)
    assert r["ping_jitter_ms"] == pytest.approx(3.5)          # (|10 - 14| + |14 - 11|) / 2, icmp_seq order
    assert r["ping_loss_pct"] == pytest.approx(100 / 3)       # 1 of the 3 answerable requests
    assert r["ping_replies"] == 3


def test_path_ifs():
    assert m.path_ifs(1) == {"client": ("h1", "h1-eth0"), "sw_to_server": ("s1", "s1-eth2"),
                             "sw_to_client": ("s1", "s1-eth1"), "server": ("h2", "h2-eth0")}
    assert m.path_ifs(2)["client"] == ("h1", "h1-eth1") and m.path_ifs(2)["sw_to_server"] == ("s2", "s2-eth2")


def test_tc_commands_and_what_stays_installed():
    assert m.tc_commands(COMMANDS)[0] == "tc qdisc add dev s1-eth1 root handle 5:0 htb default 1"
    assert len(m.tc_commands(COMMANDS)) == 8 and len(m.tc_commands(COMMANDS, shows=True)) == 10
    inst = m.installed_tc(COMMANDS)
    # the second round replaces the first one: three commands, no del
    assert inst["s1-eth1"] == ["tc qdisc add dev s1-eth1 root handle 5:0 htb default 1",
                               "tc class add dev s1-eth1 parent 5:0 classid 5:1 htb rate 10.000000Mbit burst 15k",
                               "tc qdisc add dev s1-eth1  parent 5:1  handle 10: netem delay 2ms limit 50"]
    assert inst["h1-eth0"] == ["tc qdisc add dev h1-eth0 root handle 5:0 htb default 1"]


def _q(dev, qlen, drops=0, nbytes=0, handle="10:"):
    return [{"kind": "htb", "handle": "5:", "dev": dev, "root": True, "bytes": nbytes, "drops": drops, "qlen": 0},
            {"kind": "netem", "handle": handle, "parent": "5:1", "dev": dev, "bytes": nbytes, "drops": drops,
             "qlen": qlen, "backlog": qlen * 1514}]


def test_queue_lengths_within_the_flow():
    samples = [{"t": 99.0, "node": "h1", "qdiscs": _q("h1-eth0", 40)},       # before the flow: left out
               {"t": 100.0, "node": "h1", "qdiscs": _q("h1-eth0", 10) + _q("h1-eth1", 3)},
               {"t": 100.5, "node": "s1", "qdiscs": _q("s1-eth2", 7)},
               {"t": 101.0, "node": "h1", "qdiscs": _q("h1-eth0", 20)},
               {"t": 102.0, "node": "h1", "qdiscs": [{"dev": "h1-eth0", "handle": "10:"}]}]   # no qlen: skipped
    q = m.queue_lengths(samples, "h1", "h1-eth0", t0=100.0, t1=102.0)
    assert list(q) == [10.0, 20.0]
    assert list(m.queue_lengths(samples, "h1", "h1-eth0")) == [40.0, 10.0, 20.0]
    assert list(m.queue_lengths(samples, "s1", "s1-eth2")) == [7.0]
    assert list(m.queue_lengths(samples, "h1", "h1-eth0", t0=100.0, key="backlog")) == [10 * 1514.0, 20 * 1514.0]
    assert m.queue_lengths(samples, "h2", "h2-eth0").size == 0


def test_read_samples_skips_bad_lines(tmp_path):
    p = tmp_path / "samples.jsonl"
    p.write_text('{"t": 1, "node": "h1", "qdiscs": []}\nnot json\n{"t": 2}\n')
    assert m.read_samples(p) == [{"t": 1, "node": "h1", "qdiscs": []}]
    assert m.read_samples(tmp_path / "none") == []


def _run(root, mode, queue, rep, rtt1, goodput, qlen_client=30, drops_client=5, complete=True):
    """A run directory as testbed/mininet003/topo003.py writes it: path 1's pings at constant RTT ``rtt1``, path 2's
    :data:`PING`; h1's path-1 queue ``qlen_client`` packets in each of two samples within the flow."""
    d = root / "runs" / f"rep{rep:02d}__{mode}__q{queue}"
    for sub in ("iperf3", "ping", "tc"):
        (d / sub).mkdir(parents=True)
    meta = {"mode": mode, "queue_pkts": queue, "rep": rep, "duration_s": 60, "ping_interval_s": 1, "cc": "cubic",
            "delay_links": "client", "kernel": "6.1.0-test", "status": "complete" if complete else "failed",
            "flow_start_epoch": 1000.0, "flow_end_epoch": 1060.0,
            "self_check": {"path1": {"rtt_median_ms": 4.1}, "path2": {"rtt_median_ms": 20.2}}}
    (d / "meta.json").write_text(json.dumps(meta))
    # receiver intervals: 1-s intervals at the goodput, one stall at a tenth of it, a 0.1-s tail (left out) at 0
    iv = [{"sum": {"seconds": s, "bits_per_second": b * 1e6}}
          for s, b in [(1.0, goodput), (1.0, goodput / 10), (1.0, goodput), (0.1, 0.0)]]
    (d / "iperf3" / "server.json").write_text(json.dumps(
        {"intervals": iv, "end": {"sum_received": {"bits_per_second": goodput * 1e6}}}))
    (d / "iperf3" / "client.json").write_text(json.dumps(
        {"end": {"sum_sent": {"retransmits": 4}, "streams": [{"sender": {"mean_rtt": 30000}}]}}))
    lines = [f"[{1000 + i}.5] 64 bytes from 10.103.100.1: icmp_seq={i + 1} ttl=64 time={rtt1} ms" for i in range(5)]
    (d / "ping" / "path1.txt").write_text("\n".join(lines) + "\n5 packets transmitted, 5 received\n")
    (d / "ping" / "path2.txt").write_text(PING.decode())
    before = {"h1": _q("h1-eth0", 0) + _q("h1-eth1", 0), "h2": _q("h2-eth0", 0) + _q("h2-eth1", 0),
              "s1": _q("s1-eth1", 0) + _q("s1-eth2", 0), "s2": _q("s2-eth1", 0) + _q("s2-eth2", 0)}
    after = {"h1": _q("h1-eth0", 0, drops_client, 7_000_000) + _q("h1-eth1", 0, 1, 100),
             "h2": _q("h2-eth0", 0) + _q("h2-eth1", 0),
             "s1": _q("s1-eth1", 0, 2, 300) + _q("s1-eth2", 0, 0, 7_000_000),
             "s2": _q("s2-eth1", 0) + _q("s2-eth2", 0, 0, 5000)}
    for n in before:
        (d / "tc" / f"{n}-before.json").write_text(json.dumps(before[n]))
        (d / "tc" / f"{n}-after.json").write_text(json.dumps(after[n]))
    samples = [{"t": 990.0, "node": "h1", "qdiscs": _q("h1-eth0", 999)},       # before the flow: not counted
               {"t": 1010.0, "node": "h1", "qdiscs": _q("h1-eth0", qlen_client)},
               {"t": 1011.0, "node": "s1", "qdiscs": _q("s1-eth2", 1)},
               {"t": 1020.0, "node": "h1", "qdiscs": _q("h1-eth0", qlen_client + 10)}]
    (d / "tc" / "samples.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples))
    (d / "tc" / "commands.json").write_text(json.dumps(COMMANDS))
    if complete:
        (d / "COMPLETE").write_text("2026-11-28T00:00:00Z\n")
    return d


@pytest.fixture
def results(tmp_path):
    root = tmp_path / "res"
    for rep, (rtt_t, rtt_m, g_t, g_m) in enumerate([(30, 40, 9.4, 11.0), (31, 41, 9.5, 11.5), (32, 42, 9.6, 12.0)],
                                                    start=1):
        _run(root, "tcp_path1", 50, rep, rtt_t, g_t)
        _run(root, "mptcp", 50, rep, rtt_m, g_m, qlen_client=10 * rep)
    _run(root, "tcp_path1", 50, 4, 999, 1.0, complete=False)      # no COMPLETE: never read
    (root / "params.json").write_text(json.dumps({"reps": 3}))
    (root / "meta.json").write_text(json.dumps({"qemu_args": "-drive file=/var/tmp/mpcc-mininet.AbC123/disk.qcow2"}))
    (root / "progress.log").write_text("run 1/6\n")
    return root


def test_load_run_row(results):
    row = m.load_run(results / "runs" / "rep01__tcp_path1__q50")
    assert set(row) == set(m.RUN_COLUMNS)
    assert (row["mode"], row["queue_pkts"], row["rep"], row["delay_links"]) == ("tcp_path1", 50, 1, "client")
    assert row["goodput_mbps"] == pytest.approx(9.4) and row["retransmits"] == 4
    assert row["min_interval_mbps"] == pytest.approx(0.94)        # the stall; iperf3's 0.1-s tail is left out
    assert row["flow_rtt_mean_ms"] == pytest.approx(30.0)
    assert row["ping_rtt_mean_ms_p1"] == pytest.approx(30) and row["ping_jitter_ms_p1"] == 0
    assert row["ping_loss_pct_p1"] == 0 and row["ping_replies_p1"] == 5
    assert row["ping_jitter_ms_p2"] == pytest.approx(3.5) and row["ping_loss_pct_p2"] == pytest.approx(100 / 3)
    assert row["idle_rtt_ms_p1"] == 4.1 and row["idle_rtt_ms_p2"] == 20.2
    assert row["sent_to_server_p1"] == 7_000_000 and row["sent_to_server_p2"] == 5000
    assert row["drops_client_p1"] == 5 and row["drops_sw_to_client_p1"] == 2
    assert row["drops_sw_to_server_p1"] == 0 and row["drops_server_p1"] == 0 and row["drops_client_p2"] == 1
    # samples within the flow only (1000-1060 s): h1's queue 30 and 40 packets, s1's 1
    assert row["qlen_mean_client_p1"] == 35 and row["qlen_max_client_p1"] == 40
    assert row["qlen_mean_sw_to_server_p1"] == 1
    assert row["backlog_mean_client_p1"] == 35 * 1514 and row["backlog_max_client_p1"] == 40 * 1514
    assert math.isnan(row["qlen_mean_client_p2"])                  # no sample of h1-eth1's leaf
    with pytest.raises(AnalysisError):
        m.load_run(results / "runs" / "rep04__tcp_path1__q50")


def test_summary_and_facts(results):
    runs = m.load_runs(results)
    assert len(runs) == 6 and list(runs["mode"].unique()) == ["mptcp", "tcp_path1"]
    s = m.summary(runs)
    t = s[s["mode"] == "tcp_path1"].iloc[0]
    assert t["n"] == 3 and t["ping_rtt_mean_ms_p1"] == pytest.approx(31)
    assert t["ping_rtt_mean_ms_p1_lo"] == pytest.approx(31 - H) and t["ping_rtt_mean_ms_p1_hi"] == pytest.approx(31 + H)
    assert t["goodput_mbps"] == pytest.approx(9.5)
    mp = s[s["mode"] == "mptcp"].iloc[0]
    # per-run means of h1's queue: 15, 25, 35 (samples 10r and 10r + 10): mean 25, sd 10
    assert mp["qlen_mean_client_p1"] == pytest.approx(25)
    assert mp["qlen_mean_client_p1_hi"] == pytest.approx(25 + 10 * H)
    doc = m.facts(runs)
    cell = doc["cells"]["mptcp/50"]
    assert cell["n"] == 3 and cell["goodput_mbps"]["mean"] == pytest.approx(11.5)
    assert cell["goodput_mbps"]["lo"] == pytest.approx(11.5 - 0.5 * H, abs=1e-4)
    json.dumps(doc)                                           # JSON-able: no NaN, no numpy types
    assert "| tcp_path1 | 50 | 9.50 [" in m.markdown(s)


def test_beside_paper_known_answers(results):
    s = m.summary(m.load_runs(results))
    table2 = reference.load_table2(reference.REFERENCE_DIR / "003")
    fifo = {("tcp_path1", 50): {"ping_rtt_mean_ms_p1": {"mean": 54.56, "lo": 53.26, "hi": 55.86}}}
    b = m.beside_paper(s, table2, fifo)
    assert len(b) == 16                                       # Table 2: 4 scenarios x 4 metrics
    lat = b[(b["mode"] == "tcp_path1") & (b["queue_pkts"] == 50) & (b["metric"] == "latency_ms")].iloc[0]
    assert lat["paper"] == pytest.approx(16.66) and lat["mininet"] == pytest.approx(31) and lat["n"] == 3
    assert lat["mininet_lo"] == pytest.approx(31 - H) and lat["paper_inside"] is False
    assert lat["fifo"] == pytest.approx(54.56) and lat["fifo_hi"] == pytest.approx(55.86)
    thr = b[(b["mode"] == "tcp_path1") & (b["queue_pkts"] == 50) & (b["metric"] == "throughput_mbps")].iloc[0]
    assert thr["paper"] == pytest.approx(9.57) and thr["paper_inside"] is True    # 9.5 ± 0.1 H
    assert math.isnan(thr["fifo"])                            # not in the FIFO cells given
    # a scenario not run here: NaN and no verdict
    base = b[(b["mode"] == "tcp_path1") & (b["queue_pkts"] == 1000) & (b["metric"] == "latency_ms")].iloc[0]
    assert base["paper"] == pytest.approx(34.86) and math.isnan(base["mininet"]) and base["paper_inside"] is None
    assert "| TCP+OVS | tcp_path1 | 50 | latency_ms (ms) | 16.66 | 31.00 [" in m.markdown_beside(b)


def test_fifo_cells_of_the_committed_bundle():
    cells = m.fifo_cells()
    if not cells:
        pytest.skip("data/qdisc003-vm is not in this checkout")
    assert set(cells) == {(mo, q) for mo in m.MODES for q in (1000, 50)}
    assert cells[("tcp_path1", 50)]["ping_rtt_mean_ms_p1"]["mean"] == pytest.approx(54.56, abs=0.01)
    assert m.fifo_cells(ROOT / "nothing") == {}


def test_run_tc(results):
    t = m.run_tc(results)
    assert t["run"] == "rep01__mptcp__q50" and len(t["commands"]) == 8 and set(t["installed"]) == {"s1-eth1", "h1-eth0"}


def test_export_round_trip(results, tmp_path):
    dest = tmp_path / "committed"
    assert m.export(results, dest) == 6
    assert (dest / "runs.tar.xz").is_file() and not (dest / "runs").exists()
    assert (dest / "progress.log.xz").is_file() and (dest / "facts.json").is_file()
    assert "/var/tmp/mpcc-mininet.AbC123" not in (dest / "meta.json").read_text()    # no machine paths
    a, b = m.load_runs(results), m.load_runs(dest)
    pd.testing.assert_frame_equal(a, b)
    with pytest.raises(AnalysisError):
        m.export(results, dest)                               # never overwrites


def test_cli(results, capsys):
    assert m.main([str(results), "--tc", "--runs"]) == 0
    out = capsys.readouterr().out
    assert "| mptcp | 50 |" in out and "Beside the paper's Table 2" in out
    assert "netem delay 2ms limit 50" in out and "rep01__tcp_path1__q50" in out
    assert m.main([str(results), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cells"]["tcp_path1/50"]["n"] == 3
    assert m.main([str(results / "nothing")]) == 2


# ------------------------------------------------------------------------------------------------ the guest script
def _topo003():
    spec = importlib.util.spec_from_file_location("topo003", ROOT / "testbed" / "mininet003" / "topo003.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)                              # imports no Mininet at module level
    return mod


def test_topo003_reads_the_topology_as_data():
    t = _topo003().read_topology(ROOT / "testbed" / "families" / "003" / "topology.json")
    assert t["service"] == "10.103.100.1"
    assert t["paths"][1] == {"rate_mbit": 10.0, "delay_ms": 2.0, "client_addr": "10.103.1.2",
                             "server_addr": "10.103.1.1", "prefix": 24}
    assert (t["paths"][2]["rate_mbit"], t["paths"][2]["delay_ms"], t["paths"][2]["server_addr"]) == (2.0, 10.0,
                                                                                                     "10.103.2.1")


@pytest.mark.parametrize("args,msg", [
    (["--mode", "tcp_path2"], "--mode must be"),
    (["--queue-pkts", "0"], "--queue-pkts"),
    (["--duration-s", "x"], "--duration-s"),
    (["--ping-interval-s", "0"], "--ping-interval-s"),
    (["--delay-links", "server"], "--delay-links"),
    (["--cc", "vegas"], "--cc"),
])
def test_topo003_refuses_bad_arguments(tmp_path, args, msg):
    base = {"--topology": str(ROOT / "testbed" / "families" / "003" / "topology.json"), "--out": str(tmp_path / "r"),
            "--mode": "mptcp", "--queue-pkts": "50", "--rep": "1", "--duration-s": "10"}
    for k, v in zip(args[::2], args[1::2]):
        base[k] = v
    argv = [x for kv in base.items() for x in kv]
    mod = _topo003()
    with pytest.raises(mod.Usage, match=msg):
        mod.parse_args(argv)


# ------------------------------------------------------------------------------------------------ the scripts' checks
# Only values that must be refused: each script exits 2 with one "error:" line before it runs anything (no VM, no
# Mininet, no qdisc), so these run anywhere.
@pytest.mark.parametrize("script,args,msg", [
    ("testbed/mininet003/run-vm.sh", [], "--out DIR is required"),
    ("testbed/mininet003/run-vm.sh", ["--queues", "0"], "--queues"),
    ("testbed/mininet003/run-vm.sh", ["--queues", "50 50"], "lists a size twice"),
    ("testbed/mininet003/run-vm.sh", ["--modes", "tcp_path2"], "--modes"),
    ("testbed/mininet003/run-vm.sh", ["--duration-s", "3"], "--duration-s"),
    ("testbed/mininet003/run-vm.sh", ["--ping-interval-s", "0.1"], "--ping-interval-s"),
    ("testbed/mininet003/run-vm.sh", ["--delay-links", "server"], "--delay-links"),
    ("testbed/mininet003/run-vm.sh", ["--seed", "x"], "--seed"),
    ("testbed/mininet003/run-vm.sh", ["--bogus"], "unknown option"),
    ("testbed/mininet003/run-guest.sh", ["--dir", "."], "--out is required"),
    ("testbed/mininet003/run-guest.sh", ["--dir", ".", "--out", "X", "--mode", "foo"], "--mode must be"),
    ("testbed/mininet003/run-guest.sh", ["--dir", ".", "--out", "X", "--mode", "mptcp", "--queue-pkts", "0"],
     "--queue-pkts"),
    ("testbed/mininet003/run-guest.sh", ["--dir", "nowhere"], "--dir must hold"),
])
def test_scripts_refuse_bad_arguments(tmp_path, script, args, msg):
    full = list(args)
    if script.endswith("run-vm.sh") and "--out" not in full and args:
        full = ["--out", str(tmp_path / "new")] + full
    if script.endswith("run-guest.sh") and "--out" in full:
        full[full.index("--out") + 1] = str(tmp_path / "run")
    r = subprocess.run(["bash", str(ROOT / script), *full], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and msg in lines[0], r.stderr
    assert not (tmp_path / "new").exists() and not (tmp_path / "run").exists()


def test_run_vm_refuses_an_existing_out(tmp_path):
    (tmp_path / "old").mkdir()
    r = subprocess.run(["bash", str(ROOT / "testbed/mininet003/run-vm.sh"), "--out", str(tmp_path / "old")],
                       capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 2 and "exists" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_topo003_keeps_the_switch_ports_blocks():
    text = ("qdisc noqueue 0: dev lo root refcnt 2 \n Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n"
            "qdisc htb 5: dev s1-eth1 root refcnt 3 r2q 10 default 0x1\n Sent 10 bytes 1 pkt (dropped 0)\n"
            "qdisc netem 10: dev s1-eth1 parent 5:1 limit 50 delay 2ms\n Sent 10 bytes 1 pkt (dropped 0)\n"
            "qdisc htb 5: dev s1-eth10 root refcnt 3\n Sent 0 bytes 0 pkt\n"
            "qdisc htb 5: dev s2-eth2 root refcnt 3\n Sent 5 bytes 1 pkt\n")
    kept = _topo003().tc_blocks(text, ["s1-eth1", "s1-eth2"])
    assert kept == ("qdisc htb 5: dev s1-eth1 root refcnt 3 r2q 10 default 0x1\n Sent 10 bytes 1 pkt (dropped 0)\n"
                    "qdisc netem 10: dev s1-eth1 parent 5:1 limit 50 delay 2ms\n Sent 10 bytes 1 pkt (dropped 0)\n")


@pytest.mark.skipif(not (ROOT / "data" / "mininet003-vm" / "runs.tar.xz").is_file(),
                    reason="data/mininet003-vm absent")
def test_committed_replication_feeds_the_verdict_explanations():
    """data/mininet003-vm (the full run of 2026-11-27): 12 runs, 3 per Table 2 scenario, its facts.json as the runs
    give it, and study 003's latency explanation on data/study003 cites its cells (computed from the committed runs)
    beside the paper's, with where its queue formed."""
    from analysis.claims.explain import f003
    from analysis.claims.registry import evaluate
    from analysis.dataset import load_campaign
    data = ROOT / "data" / "mininet003-vm"
    runs = m.load_runs(data)
    assert len(runs) == 12 and set(runs.groupby(m.KEYS).size()) == {3}
    assert json.loads((data / "facts.json").read_text())["cells"] == json.loads(json.dumps(m.facts(runs)))["cells"]
    scores = evaluate(load_campaign(ROOT / "data" / "study003", progress=False, jobs=1), n_boot=999).set_index("claim_id")
    text = scores.loc["003-S09", "explanation_text"]
    for mode, q in f003.SCENARIOS:
        assert f"{mode} queue {q}: paper " in text
        assert f"Mininet {f003._cell_text(f003._mn(mode, q, 'ping_rtt_mean_ms_p1'), 'ms')}" in text
    assert "formed at the client's own interface" in text and "remains open" in text
