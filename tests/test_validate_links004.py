"""tools/validate_links004.py: study 004's store-and-forward links against ns-2 under UDP CBR load (docs/ns2-004.md,
section 11). Hand-built inputs with known answers for the matching (IPv4 IDs across a wrap, lost packets), the per-run
figures, the per-packet pairing, the verdict at the tolerance's edges, the ns-2 trace reading and the Tcl; the
command's one-line errors; the committed results' report; and one real 3-s run at 50 % on client_server, both sides
(root, network namespaces and ns-2: marked netns like the other testbed tests)."""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.ns2_004 import parse_trace

REPO = Path(__file__).resolve().parents[1]
TOOL = REPO / "tools" / "validate_links004.py"
COMMITTED = REPO / "data" / "ns2-004" / "links-validation"
sys.path.insert(0, str(REPO / "tools"))
import validate_links004 as v  # noqa: E402

TX_MS = 592 * 8 / 500.0          # one 592-byte packet at 0.5 Mbit/s: 9.472 ms


def _cap(times, ids):
    return pd.DataFrame({"ts": np.asarray(times, dtype=float), "ip_id": np.asarray(ids, dtype=np.int64)})


# ------------------------------------------------------------------------------------------------ matching

def test_unwrap16_counts_on_across_the_wrap():
    assert v.unwrap16([65534, 65535, 0, 1, 5]).tolist() == [65534, 65535, 65536, 65537, 65541]
    # the receiver's sequence, unwrapped from the sender's first ID: its first packet (ID 1) is 65537
    assert v.unwrap16([1, 3], start=65534).tolist() == [65537, 65539]
    assert v.unwrap16([]).tolist() == []


def test_match_packets_across_a_wrap_with_losses():
    # sender: IDs 65533 .. 2 (six packets, the wrap after 65535), 10 ms apart; the receiver misses the first and the
    # fourth (ID 0), the others arrive 60 ms after they were sent
    ids = [65533, 65534, 65535, 0, 1, 2]
    sent = _cap([0.00, 0.01, 0.02, 0.03, 0.04, 0.05], ids)
    rcvd = _cap([0.07, 0.08, 0.10, 0.11], [65534, 65535, 1, 2])
    m = v.match_packets(sent, rcvd)
    assert m["key"].tolist() == [65533, 65534, 65535, 65536, 65537, 65538]
    assert m["t_rx"].isna().tolist() == [True, False, False, True, False, False]
    got = m.dropna()
    assert np.allclose(got["t_rx"] - got["t_tx"], 0.06)


def test_match_packets_refuses_what_is_not_one_socket():
    with pytest.raises(ValueError, match="one by one"):
        v.match_packets(_cap([0, 0.01, 0.02], [10, 11, 13]), _cap([0.1], [10]))
    with pytest.raises(ValueError, match="does not hold"):
        v.match_packets(_cap([0, 0.01], [10, 11]), _cap([0.1, 0.2], [10, 12]))


# ------------------------------------------------------------------------------------------------ figures

def test_packet_stats_known_answers():
    # five packets 10 ms apart; delays 60, 70, (lost), 80, 90 ms
    pk = pd.DataFrame({"t_tx": [0.00, 0.01, 0.02, 0.03, 0.04],
                       "t_rx": [0.06, 0.08, math.nan, 0.11, 0.13]})
    st = v.packet_stats(pk, bottleneck_mbit=0.5)
    assert (st["sent"], st["received"], st["lost"]) == (5, 4, 1)
    assert st["loss_pct"] == pytest.approx(20.0)
    assert st["delay_mean_ms"] == pytest.approx(75.0)
    assert st["delay_median_ms"] == pytest.approx(75.0)
    assert st["delay_p95_ms"] == pytest.approx(88.5)             # numpy linear: 80 + 0.85 x 10
    assert (st["delay_min_ms"], st["delay_max_ms"]) == (pytest.approx(60.0), pytest.approx(90.0))
    assert st["offered_rate_mbit"] == pytest.approx(4 * 592 * 8 / 0.04 / 1e6)     # 0.4736
    assert st["delivered_rate_mbit"] == pytest.approx(3 * 592 * 8 / 0.07 / 1e6)
    # last third of the 40-ms send span: sent at >= 26.7 ms -> the 80 and 90 ms packets
    assert st["delay_late_mean_ms"] == pytest.approx(85.0)
    # arrival gaps 20, 30, 20 ms: none shorter than 0.9 x 9.472 ms
    assert st["rx_gap_min_ms"] == pytest.approx(20.0) and st["rx_gap_short_share"] == 0.0
    assert st["bottleneck_tx_ms"] == pytest.approx(TX_MS)
    assert st["timeline"] == [{"s": 0, "sent": 5, "received": 4, "delay_mean_ms": 75.0}]


def test_short_arrival_gaps_are_counted():
    # two packets leave a 0.5 Mbit/s bottleneck 1 ms apart (an htb burst), the third 9.472 ms later
    pk = pd.DataFrame({"t_tx": [0.0, 0.0005, 0.001], "t_rx": [0.05, 0.051, 0.051 + TX_MS / 1e3]})
    st = v.packet_stats(pk, bottleneck_mbit=0.5)
    assert st["rx_gap_short_share"] == pytest.approx(0.5)
    assert st["rx_gap_min_ms"] == pytest.approx(1.0)


def test_paired_diff_same_packets():
    ours = pd.DataFrame({"t_tx": [0.0, 0.1, 0.2, 0.3, 0.4], "t_rx": [0.0601, 0.1602, math.nan, 0.3605, 0.4650]})
    ns2 = pd.DataFrame({"t_tx": [0.0, 0.1, 0.2, 0.3, 0.4], "t_rx": [0.0600, 0.1600, 0.2600, math.nan, 0.4600]})
    p = v.paired_diff(ours, ns2)
    assert (p["packets"], p["both_delivered"], p["only_ours_delivered"], p["only_ns2_delivered"]) == (5, 3, 1, 1)
    assert p["diff_mean_ms"] == pytest.approx((0.1 + 0.2 + 5.0) / 3)
    assert p["diff_median_ms"] == pytest.approx(0.2)
    assert p["within_1ms_share"] == pytest.approx(2 / 3)
    assert p["diff_first_half_s_median_ms"] == pytest.approx(0.2)     # all three sent in the first 0.5 s
    assert p["diff_last_third_median_ms"] == pytest.approx(5.0)       # sent at >= 0.267 s: the last one


def test_compare_at_the_tolerance_edges():
    ns2 = {"delay_mean_ms": 100.0, "delay_median_ms": 20.0, "delay_p95_ms": 500.0, "delivered_rate_mbit": 0.5,
           "loss_pct": 7.0}
    ok = {"delay_mean_ms": 101.99, "delay_median_ms": 20.99, "delay_p95_ms": 509.9, "delivered_rate_mbit": 0.50499,
          "loss_pct": 7.99}
    c = v.compare(ns2, ok)
    assert c["verdict"] == "matches"
    assert c["delay_mean_tol_ms"] == pytest.approx(2.0)       # 2 % of 100 ms
    assert c["delay_median_tol_ms"] == pytest.approx(1.0)     # at least 1 ms
    assert c["delay_p95_tol_ms"] == pytest.approx(10.0)
    bad = {"delay_mean_ms": 97.9, "delay_median_ms": 20.5, "delay_p95_ms": 500.0, "delivered_rate_mbit": 0.4949,
           "loss_pct": 8.1}
    c = v.compare(ns2, bad)
    assert c["verdict"] == "differs (mean delay, rate, loss)"
    assert c["delay_mean_diff_ms"] == pytest.approx(-2.1)
    assert c["rate_diff_pct"] == pytest.approx(-1.02)
    assert c["loss_diff_pp"] == pytest.approx(1.1)


# ------------------------------------------------------------------------------------------------ ns-2 side

# client_server at 0.5 Mbit/s, 50 ms: uid 0 sent at once (59.472 ms), uid 1 behind it (waits 9.472 ms), uid 2
# dropped by n0's queue ('+' then 'd'); a packet of another flow (fid 2) is ignored
TRACE = """\
+ 0 0 1 cbr 592 ------- 1 0.0 1.0 0 0
- 0 0 1 cbr 592 ------- 1 0.0 1.0 0 0
+ 0.001 0 1 cbr 592 ------- 1 0.0 1.0 1 1
+ 0.002 0 1 cbr 592 ------- 1 0.0 1.0 2 2
d 0.002 0 1 cbr 592 ------- 1 0.0 1.0 2 2
- 0.009472 0 1 cbr 592 ------- 1 0.0 1.0 1 1
r 0.059472 0 1 cbr 592 ------- 1 0.0 1.0 0 0
r 0.068944 0 1 cbr 592 ------- 1 0.0 1.0 1 1
+ 0.1 0 1 cbr 592 ------- 2 0.0 1.0 0 3
"""


def test_ns2_packets_and_drops_from_a_trace():
    tr = parse_trace(TRACE)
    pk = v.ns2_packets(tr, sender=0, receiver=1)
    assert pk["uid"].tolist() == [0, 1, 2]
    assert np.allclose((pk["t_rx"] - pk["t_tx"]).dropna() * 1e3, [59.472, 67.944])
    assert pk["t_rx"].isna().tolist() == [False, False, True]
    topo = v.load_topology("client_server")
    assert v.ns2_drops(tr, topo) == {"L1": {"a_to_b": 1, "b_to_a": 0}}


def test_tcl_from_the_topology_files():
    cs = v.load_topology("client_server")
    tcl = v.ns2_tcl_cbr(cs, 50, 30)
    assert "$ns duplex-link $n(n0) $n(n1) 0.5Mb 50ms DropTail" in tcl
    assert "$ns queue-limit $n(n0) $n(n1) 50" in tcl and "$ns queue-limit $n(n1) $n(n0) 50" in tcl
    assert "$cbr set packetSize_ 592" in tcl and "$cbr set rate_ 250000" in tcl and "$cbr set random_ 0" in tcl
    assert '$ns at 30 "$cbr stop"' in tcl and '$ns at 35.000000 "finish"' in tcl
    assert "ErrorModel" not in tcl                                   # error rate 0
    mv = v.load_topology("multihop_varied")
    tcl = v.ns2_tcl_cbr(mv, 110, 30)
    assert tcl.count("duplex-link") == 4 and "$cbr set rate_ 550000" in tcl    # 110 % of the slowest 0.5 Mbit/s
    assert "$ns attach-agent $n(n4) $null" in tcl
    rp = v.ns2_tcl_replay(cs, 29.99)
    assert "send_times.txt" in rp and "$udp send 592 x" in rp and '$ns at 34.990000 "finish"' in rp


def test_rates_and_no_queue_delays():
    cs, mv = (v.path_links(v.load_topology(t)) for t in ("client_server", "multihop_varied"))
    assert v.slowest_rate_mbit(mv) == 0.5
    assert v.offered_rate_bps(90, cs) == pytest.approx(450_000)
    assert v.iperf3_bitrate(250_000) == 238_176                     # iperf3's -b counts 564 of 592 bytes
    assert v.noqueue_delay_ms(cs) == pytest.approx(59.472)
    assert v.noqueue_delay_ms(mv) == pytest.approx(183.68)


@pytest.mark.skipif(shutil.which("ns") is None, reason="ns-2 not installed (Debian: apt-get install ns2)")
def test_ns2_counts_a_udp_packet_as_sent(tmp_path):
    """ns-2 adds no header to a UDP packet (the trace shows 592), and its DropTail queue-limit 50 holds 50 packets
    with the one on the wire: 60 sent at once, 10 dropped."""
    cs = v.load_topology("client_server")
    d = tmp_path / "r"
    d.mkdir()
    (d / "send_times.txt").write_text("0.0\n" * 60)
    pk = v.run_ns2(d, cs, v.ns2_tcl_replay(cs, 0.0), "ns", keep_trace=False)
    assert len(pk) == 60 and int(pk["t_rx"].notna().sum()) == 50
    assert pk.attrs["drops"] == {"L1": {"a_to_b": 10, "b_to_a": 0}}
    assert (pk["t_rx"].iloc[0] - pk["t_tx"].iloc[0]) * 1e3 == pytest.approx(59.472)
    assert (pk["t_rx"].iloc[49] - pk["t_tx"].iloc[49]) * 1e3 == pytest.approx(59.472 + 49 * TX_MS)


# ------------------------------------------------------------------------------------------------ command

@pytest.mark.parametrize("extra, msg", [
    (["--loads", "0"], "--loads"),
    (["--loads", "50,x"], "--loads"),
    (["--topologies", "bottleneck"], "unknown topology"),
    (["--duration-s", "0"], "--duration-s"),
    (["--repeat", "client_server"], "TOPOLOGY:LOAD"),
    (["--htb", "client_server:900"], "1..500"),
    (["--sides", "neither"], "--sides"),
    (["--prefix", "mpcc-"], "--prefix"),
    (["--bogus"], "unrecognized"),
])
def test_bad_input_is_one_line(tmp_path, extra, msg):
    r = subprocess.run([sys.executable, str(TOOL), "--out", str(tmp_path / "out"), "--sides", "ns2", *extra],
                       capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("error: ") and r.stderr.count("\n") == 1 and msg in r.stderr
    assert not (tmp_path / "out").exists()


def test_existing_out_and_missing_out(tmp_path):
    r = subprocess.run([sys.executable, str(TOOL), "--out", str(tmp_path), "--sides", "ns2"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "exists" in r.stderr
    r = subprocess.run([sys.executable, str(TOOL)], capture_output=True, text=True)
    assert r.returncode == 2 and "--out DIR is required" in r.stderr


@pytest.mark.skipif(os.geteuid() == 0 or shutil.which("ns") is None, reason="checks the refusal without root")
def test_our_side_needs_root(tmp_path):
    r = subprocess.run([sys.executable, str(TOOL), "--out", str(tmp_path / "o")], capture_output=True, text=True)
    assert r.returncode == 2 and "needs root" in r.stderr


def test_committed_results_report_themselves():
    """data/ns2-004/links-validation: comparison.md is what --report makes of its summaries; every cell of the
    store-and-forward matrix has a verdict against an ns-2 run."""
    r = subprocess.run([sys.executable, str(TOOL), "--report", str(COMMITTED)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout == (COMMITTED / "comparison.md").read_text()
    meta = json.loads((COMMITTED / "meta.json").read_text())
    assert meta["status"] == "complete" and meta["duration_s"] == 30
    df = pd.read_csv(COMMITTED / "comparison.csv")
    sf = df[df["link_model"] == "store-and-forward"]
    assert len(sf) == len(meta["topologies"]) * len(meta["loads_pct"]) + len(meta["repeat"])
    assert not sf["verdict"].str.startswith("no ns-2").any()


# ------------------------------------------------------------------------------------------------ real run

NETNS_TOOLS = ["ns", "iperf3", "tcpdump", "iptables", "jq", "tc", "ping", "ss"]


@pytest.mark.netns
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root")
@pytest.mark.skipif(any(shutil.which(t) is None for t in NETNS_TOOLS), reason="testbed tools or ns-2 missing")
def test_quick_real_run_both_sides(tmp_path):
    """A 3-s run at 50 % on client_server, both sides: no queue anywhere, so ns-2 gives 59.472 ms for every packet
    and our link the same within the tolerance; nothing lost; the namespaces are gone afterwards."""
    prefix = f"vt{os.getpid() % 10000}-"
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, str(TOOL), "--out", str(out), "--topologies", "client_server", "--loads", "50",
                        "--duration-s", "3", "--repeat", "none", "--htb", "none", "--tuned-q", "none",
                        "--tuned-qb", "none", "--prefix", prefix], capture_output=True, text=True, timeout=300)
    gone = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert prefix not in gone
    assert r.returncode == 0, r.stderr[-2000:]
    ns2 = json.loads((out / "runs" / "ns2__client_server__load050" / "summary.json").read_text())
    ours = json.loads((out / "runs" / "ours__client_server__load050" / "summary.json").read_text())
    assert ns2["delay_min_ms"] == pytest.approx(59.472, abs=1e-6) and ns2["delay_max_ms"] == pytest.approx(59.472)
    assert ns2["lost"] == 0 and ours["lost"] == 0 and ours["sent"] > 100
    assert abs(ours["delay_mean_ms"] - 59.472) <= 1.0
    assert ours["delivered_rate_mbit"] == pytest.approx(0.25, rel=0.01)
    assert ours["capture_kernel_drops"] == 0
    assert (out / "runs" / "ours__client_server__load050" / "sender.pcap").is_file()
    df = pd.read_csv(out / "comparison.csv")
    assert df["verdict"].tolist() == ["matches"]
    replay = json.loads((out / "runs" / "ns2replay__client_server__load050" / "summary.json").read_text())
    assert replay["paired_ours_minus_ns2"]["both_delivered"] == ours["sent"]
