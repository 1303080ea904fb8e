"""analysis.qdisc_vm003 (study 003's Table 2 scenarios under netem vs fq_codel switch leaves, docs/qdisc-003.md) on
hand-built inputs with known answers: ping -D text, iperf3 JSON snippets, tc -s -j qdisc lists, whole run
directories, and the committed form (runs.tar.xz)."""
from __future__ import annotations

import json
import math

import pytest

from analysis import qdisc_vm003 as q
from analysis.errors import AnalysisError

# four echo requests 1 s apart from t = 100 s; request 3 is never answered; reply 2 arrives (is printed) before 1
PING = b"""PING 10.103.100.1 (10.103.100.1) from 10.103.1.2 : 56(84) bytes of data.
[101.014000] 64 bytes from 10.103.100.1: icmp_seq=2 ttl=63 time=14.0 ms
[100.010000] 64 bytes from 10.103.100.1: icmp_seq=1 ttl=63 time=10.0 ms
[103.011000] 64 bytes from 10.103.100.1: icmp_seq=4 ttl=63 time=11.0 ms

--- 10.103.100.1 ping statistics ---
4 packets transmitted, 3 received, 25% packet loss, time 3003ms
"""


def test_ping_metrics_known_answers():
    m = q.ping_metrics(PING)
    assert m["ping_rtt_mean_ms"] == pytest.approx(35 / 3)
    # icmp_seq order 1, 2, 4: (|10 - 14| + |14 - 11|) / 2
    assert m["ping_jitter_ms"] == pytest.approx(3.5)
    # requests answerable before ping stopped: sent by 103.011 - 0.014 s, i.e. 1, 2, 3; 3 was lost
    assert m["ping_loss_pct"] == pytest.approx(100 / 3)
    assert m["ping_replies"] == 3


def test_ping_metrics_without_replies():
    m = q.ping_metrics(b"PING x\n\n--- x ping statistics ---\n5 packets transmitted, 0 received, 100% packet loss\n")
    assert math.isnan(m["ping_rtt_mean_ms"]) and math.isnan(m["ping_jitter_ms"])
    assert m["ping_loss_pct"] == 100.0 and m["ping_replies"] == 0


def test_receiver_goodput_and_retransmits():
    server = {"end": {"sum_received": {"bits_per_second": 9.5e6}}}
    client = {"end": {"sum_received": {"bits_per_second": 9.4e6}, "sum_sent": {"retransmits": 17},
                      "streams": [{"sender": {"mean_rtt": 55241}}]}}
    assert q.receiver_goodput_mbps(server, client) == pytest.approx(9.5)
    assert q.receiver_goodput_mbps({}, client) == pytest.approx(9.4)          # the server JSON lacks it
    assert math.isnan(q.receiver_goodput_mbps({}, {}))
    assert q.sender_retransmits(client) == 17
    assert math.isnan(q.sender_retransmits({}))
    assert q.flow_rtt_mean_ms(client) == pytest.approx(55.241)
    assert math.isnan(q.flow_rtt_mean_ms({"end": {"streams": [{"sender": {"mean_rtt": 0}}]}}))
    assert math.isnan(q.flow_rtt_mean_ms({}))


def _tc(drops_srv, overlimit, bytes_srv, drops_cl=0, kind="fq_codel"):
    leaf = {"kind": kind, "handle": "10:", "dev": "sw1-srv", "parent": "1:10", "drops": drops_srv, "bytes": bytes_srv}
    if kind == "fq_codel":
        leaf["drop_overlimit"] = overlimit
    return [{"kind": "noqueue", "handle": "0:", "dev": "lo", "root": True, "bytes": 0, "drops": 0},
            {"kind": "htb", "handle": "1:", "dev": "sw1-cl", "root": True, "bytes": 50, "drops": drops_cl},
            {"kind": kind, "handle": "10:", "dev": "sw1-cl", "parent": "1:10", "drops": drops_cl, "bytes": 50},
            {"kind": "htb", "handle": "1:", "dev": "sw1-srv", "root": True, "bytes": bytes_srv, "drops": drops_srv},
            leaf]


def test_switch_metrics_are_after_minus_before():
    m = q.switch_metrics(_tc(2, 0, 1000), _tc(12, 5, 91000, drops_cl=1), 1)
    assert m == {"drops_to_server_p1": 10, "drops_to_client_p1": 1, "overlimit_drops_to_server_p1": 5,
                 "sent_to_server_p1": 90000}
    # a netem leaf has no drop_overlimit: NaN, not 0
    m = q.switch_metrics(_tc(0, 0, 0, kind="netem"), _tc(3, 0, 500, kind="netem"), 1)
    assert m["drops_to_server_p1"] == 3 and math.isnan(m["overlimit_drops_to_server_p1"])
    # a qdisc made between the two snapshots counts from 0; one missing afterwards is NaN
    assert q.counter_delta([], _tc(4, 0, 10), "sw1-srv", "drops", handle="10:") == 4
    assert math.isnan(q.counter_delta(_tc(4, 0, 10), [], "sw1-srv", "drops", handle="10:"))


def test_t_interval_known_answer():
    m, lo, hi, n = q.t_interval([1.0, 2.0, 3.0, float("nan")])
    h = 4.302652729911275 / math.sqrt(3)          # t(0.975, 2) x sd 1 / sqrt(3)
    assert (m, n) == (2.0, 3) and lo == pytest.approx(2 - h) and hi == pytest.approx(2 + h)
    m, lo, hi, n = q.t_interval([5.0])
    assert (m, n) == (5.0, 1) and math.isnan(lo) and math.isnan(hi)
    assert q.t_interval([])[3] == 0


def _run(root, arm, mode, queue, rep, rtt1, goodput, drops=3, complete=True):
    """A run directory as testbed/qdisc003/run-guest.sh writes it, with path 1's pings at constant RTT ``rtt1``."""
    d = root / "runs" / f"rep{rep:02d}__{mode}__q{queue}__{arm}"
    for sub in ("iperf3", "ping", "switches"):
        (d / sub).mkdir(parents=True)
    meta = {"arm": arm, "mode": mode, "queue_pkts": queue, "rep": rep, "duration_s": 60, "ping_interval_s": 1,
            "cc": "cubic", "kernel": "6.1.0-test", "status": "complete" if complete else "failed",
            "self_check": {"path1": {"rtt_median_ms": 4.2}, "path2": {"rtt_median_ms": 20.3}}}
    (d / "meta.json").write_text(json.dumps(meta))
    (d / "iperf3" / "server.json").write_text(json.dumps({"end": {"sum_received": {"bits_per_second": goodput * 1e6}}}))
    (d / "iperf3" / "client.json").write_text(json.dumps({"end": {"sum_sent": {"retransmits": 2}}}))
    lines = [f"[{100 + i}.5] 64 bytes from 10.103.100.1: icmp_seq={i + 1} ttl=63 time={rtt1} ms" for i in range(5)]
    (d / "ping" / "path1.txt").write_text("\n".join(lines) + "\n5 packets transmitted, 5 received\n")
    (d / "ping" / "path2.txt").write_text(PING.decode())
    kind = "fq_codel" if arm == "fq_codel" else "netem"
    for sw in ("sw1", "sw2"):
        before, after = _tc(0, 0, 0, kind=kind), _tc(drops, 1, 10000, kind=kind)
        for lst in (before, after):
            for e in lst:
                e["dev"] = e["dev"].replace("sw1", sw)
        (d / "switches" / f"{sw}-before.json").write_text(json.dumps(before))
        (d / "switches" / f"{sw}-after.json").write_text(json.dumps(after))
    srv = [{"kind": "netem", "handle": "1:", "dev": "srv-sw1", "root": True, "drops": 0, "bytes": 0}]
    srv = srv if arm != "netem" else []
    (d / "switches" / "server-before.json").write_text(json.dumps(srv))
    (d / "switches" / "server-after.json").write_text(json.dumps(srv))
    if complete:
        (d / "COMPLETE").write_text("2026-11-27T00:00:00Z\n")
    return d


@pytest.fixture
def results(tmp_path):
    root = tmp_path / "res"
    for rep, (r_n, r_f, g_n, g_f) in enumerate([(50, 5, 9.5, 9.0), (60, 6, 9.6, 9.2), (70, 7, 9.7, 9.4)], start=1):
        _run(root, "netem", "tcp_path1", 50, rep, r_n, g_n)
        _run(root, "fq_codel", "tcp_path1", 50, rep, r_f, g_f)
    _run(root, "fq_codel", "tcp_path1", 50, 4, 999, 1.0, complete=False)      # no COMPLETE: never read
    (root / "params.json").write_text(json.dumps({"reps": 3}))
    (root / "meta.json").write_text(json.dumps({"qemu_args": "-drive file=/var/tmp/mpcc-qdisc.AbC123/disk.qcow2"}))
    (root / "progress.log").write_text("run 1/6\n")
    return root


def test_load_run_row(results):
    row = q.load_run(results / "runs" / "rep01__tcp_path1__q50__fq_codel")
    assert set(row) == set(q.RUN_COLUMNS)
    assert (row["arm"], row["mode"], row["queue_pkts"], row["rep"]) == ("fq_codel", "tcp_path1", 50, 1)
    assert row["goodput_mbps"] == pytest.approx(9.0) and row["retransmits"] == 2
    assert row["ping_rtt_mean_ms_p1"] == pytest.approx(5) and row["ping_jitter_ms_p1"] == 0
    assert row["ping_loss_pct_p1"] == 0 and row["ping_replies_p1"] == 5
    assert row["ping_jitter_ms_p2"] == pytest.approx(3.5)
    assert row["drops_to_server_p1"] == 3 and row["overlimit_drops_to_server_p2"] == 1
    assert row["sent_to_server_p1"] == 10000 and row["server_delay_drops"] == 0
    assert row["idle_rtt_ms_p1"] == 4.2 and row["idle_rtt_ms_p2"] == 20.3
    assert math.isnan(q.load_run(results / "runs" / "rep01__tcp_path1__q50__netem")["server_delay_drops"])
    with pytest.raises(AnalysisError):
        q.load_run(results / "runs" / "rep04__tcp_path1__q50__fq_codel")


def test_summary_and_facts(results):
    runs = q.load_runs(results)
    assert len(runs) == 6                                   # the incomplete rep 4 is left out
    s = q.summary(runs)
    f = s[s["arm"] == "fq_codel"].iloc[0]
    h = 4.302652729911275 / math.sqrt(3)
    assert f["n"] == 3 and f["ping_rtt_mean_ms_p1"] == pytest.approx(6)
    assert f["ping_rtt_mean_ms_p1_lo"] == pytest.approx(6 - h) and f["ping_rtt_mean_ms_p1_hi"] == pytest.approx(6 + h)
    assert f["goodput_mbps"] == pytest.approx(9.2)
    doc = q.facts(runs)
    cell = doc["cells"]["netem/tcp_path1/50"]
    assert cell["n"] == 3 and cell["ping_rtt_mean_ms_p1"]["mean"] == 60
    assert cell["ping_rtt_mean_ms_p1"]["lo"] == pytest.approx(60 - 10 * h, abs=1e-4)
    json.dumps(doc)                                          # JSON-able: no NaN, no numpy types
    assert "| fq_codel | tcp_path1 | 50 | 9.20 [" in q.markdown(s)


def test_export_round_trip(results, tmp_path):
    dest = tmp_path / "committed"
    assert q.export(results, dest) == 6
    assert (dest / "runs.tar.xz").is_file() and not (dest / "runs").exists()
    assert (dest / "progress.log.xz").is_file() and (dest / "facts.json").is_file()
    assert "/var/tmp/mpcc-qdisc.AbC123" not in (dest / "meta.json").read_text()    # no machine paths
    a, b = q.load_runs(results), q.load_runs(dest)
    assert a.equals(b)
    assert json.loads((dest / "facts.json").read_text())["cells"] == json.loads(json.dumps(q.facts(a)))["cells"]
    with pytest.raises(AnalysisError):
        q.export(results, dest)                              # never overwrites


def test_cli(results, capsys):
    assert q.main([str(results)]) == 0
    assert "| netem | tcp_path1 | 50 |" in capsys.readouterr().out
    assert q.main([str(results / "nothing")]) == 2


# ------------------------------------------------------------------------------------------------ the scripts' checks
# Only values that must be refused: each script exits 2 with one "error:" line before it runs anything (no VM, no
# namespace, no qdisc), so these run anywhere.
import subprocess  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("script,args,msg", [
    ("testbed/qdisc003/run-vm.sh", ["--arms", "foo"], "--arms: each must be netem, fq_codel or pfifo"),
    ("testbed/qdisc003/run-vm.sh", ["--arms", "netem netem"], "lists an arm twice"),
    ("testbed/qdisc003/run-vm.sh", ["--queues", "0"], "--queues"),
    ("testbed/qdisc003/run-vm.sh", ["--modes", "tcp_path2"], "--modes"),
    ("testbed/qdisc003/run-vm.sh", ["--duration-s", "3"], "--duration-s"),
    ("testbed/qdisc003/run-vm.sh", ["--ping-interval-s", "0.1"], "--ping-interval-s"),
    ("testbed/qdisc003/run-guest.sh", ["--tb", "testbed", "--arm", "foo"], "--arm must be"),
    ("testbed/qdisc003/run-guest.sh", ["--tb", "testbed", "--arm", "netem", "--mode", "mptcp", "--queue-pkts", "0"],
     "--queue-pkts"),
])
def test_harness_refuses_bad_values(tmp_path, script, args, msg):
    out = tmp_path / "out"
    res = subprocess.run(["bash", str(ROOT / script), "--out", str(out), *args], cwd=ROOT, capture_output=True,
                         text=True, timeout=30)
    assert res.returncode == 2 and res.stderr.startswith("error:") and msg in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and not out.exists()


@pytest.mark.parametrize("args,msg", [
    (["2", "0", "netem", "--leaf", "foo"], "--leaf must be auto, netem, fifo or fq_codel"),
    (["2", "0", "netem", "--leaf", "fq_codel"], "give ONE_WAY_DELAY_MS 0"),
    (["0", "0", "shim", "--leaf", "netem"], "--leaf netem needs DELAY_MECH netem"),
])
def test_switch_refuses_bad_leaves(args, msg):
    delay, loss, mech, *rest = args
    cmd = ["bash", str(ROOT / "testbed/nodes/switch.sh"), "x-a", "x-b", delay, loss, mech, "/nonexistent",
           "/nonexistent.pid", "3028", "--rate-mbit", "10", "--buffer-pkts", "50", "--shaper", "htb", *rest]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    assert res.returncode == 2 and res.stderr.startswith("error:") and msg in res.stderr, res.stderr


@pytest.mark.skipif(not (ROOT / "data" / "qdisc003-vm" / "runs.tar.xz").is_file(), reason="data/qdisc003-vm absent")
def test_committed_data_gives_the_docs_table():
    """data/qdisc003-vm (the VM session of 2026-11-27) gives, line for line, the table docs/qdisc-003.md prints, and
    its facts.json."""
    data = ROOT / "data" / "qdisc003-vm"
    runs = q.load_runs(data)
    assert len(runs) == 24 and set(runs.groupby(q.KEYS).size()) == {3}
    doc = (ROOT / "docs" / "qdisc-003.md").read_text()
    for line in q.markdown(q.summary(runs)).splitlines():
        assert line in doc, line
    assert json.loads((data / "facts.json").read_text())["cells"] == json.loads(json.dumps(q.facts(runs)))["cells"]
