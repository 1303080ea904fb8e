"""Per-run metrics of the dual-path families (analysis.families.dualpath) on hand-built captures whose answers are
known by construction: one-way delay, study 003's jitter, loss in the path, per-path goodput, ping statistics, and
MPTCP subflow kinds from a real two-subflow capture."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.families import dualpath as dp
from pcapgen import tcp, write_pcap

T0 = 1_700_000_000.0
CLI1, CLI2, SRV = "10.101.1.2", "10.101.2.2", "10.101.100.1"
MSS = 1000
REAL = Path(__file__).parent / "data" / "real" / "mptcp"


def _ping_text(rtts, tx, t=T0):
    lines = [f"PING {SRV} ({SRV}) from {CLI1} : 56(84) bytes of data."]
    for i, r in enumerate(rtts, 1):
        lines.append(f"[{t + 0.2 * i:.6f}] 64 bytes from {SRV}: icmp_seq={i} ttl=63 time={r} ms")
    lines += ["", f"--- {SRV} ping statistics ---",
              f"{tx} packets transmitted, {len(rtts)} received, {100 * (1 - len(rtts) / tx):g}% packet loss, time 1000ms"]
    return "\n".join(lines) + "\n"


def test_ping_stats(tmp_path):
    f = tmp_path / "path1.txt"
    f.write_text(_ping_text([20.1, 30.5, 25.0, 40.0], tx=5))
    s = dp.ping_stats(f)
    assert s["ping_rtt_mean_ms"] == pytest.approx((20.1 + 30.5 + 25.0 + 40.0) / 4)
    assert s["ping_rtt_median_ms"] == pytest.approx(27.75)
    assert s["ping_loss_pct"] == pytest.approx(20.0)


def _frame(rows):
    return pd.DataFrame(rows, columns=["seq", "ip_id", "payload_len", "ts"])


def test_one_way_delays_match_each_transmission():
    # segment 3 is lost and retransmitted with a new IPv4 ID; arrivals out of order for segment 5
    sent = _frame([(1, 10, 100, 0.0), (101, 11, 100, 0.1), (201, 12, 100, 0.2), (301, 13, 100, 0.3),
                   (401, 14, 100, 0.4), (201, 15, 100, 0.5), (501, 16, 0, 0.6)])
    recv = _frame([(1, 10, 100, 0.010), (101, 11, 100, 0.112), (401, 14, 100, 0.410), (301, 13, 100, 0.420),
                   (201, 15, 100, 0.530)])
    owd, n_sent, n_lost = dp.one_way_delays(sent, recv)
    assert n_sent == 6 and n_lost == 1                     # the pure ACK (payload 0) is not a data segment
    assert owd == pytest.approx([10, 12, 10, 120, 30])     # arrival order, ms


def _write_run(root: Path, *, transport="tcp", tcp_path=1):
    """A 1-s single-path TCP run over path 1: 10 segments of 1000 bytes, one every 0.1 s; segment 5 is dropped
    in the path and retransmitted at 1.0 s; one-way delays 10, 12, 10, 14, (lost), 10, 12, 10, 14, 10, then 11 ms for
    the retransmission. Path 2 carries only iperf3's control connection (a few bytes)."""
    d = root / "runs" / "scenario__tcp-path1__q50p__rep01"
    d.mkdir(parents=True)
    delays = [10, 12, 10, 14, None, 10, 12, 10, 14, 10]
    cli, srv = [], []
    hs = [tcp(CLI1, 40000, SRV, 5201, seq=0, flags="S", t=-0.05, ip_id=1),
          tcp(SRV, 5201, CLI1, 40000, seq=0, ack=1, flags="SA", t=-0.04, ip_id=1)]
    cli += hs
    srv += hs
    for i, dl in enumerate(delays):
        t = 0.1 * i
        p = dict(seq=1 + MSS * i, ack=1, flags="PA", payload=MSS, ip_id=100 + i)
        cli.append(tcp(CLI1, 40000, SRV, 5201, t=t, **p))
        if dl is not None:
            srv.append(tcp(CLI1, 40000, SRV, 5201, t=t + dl / 1e3, **p))
    re = dict(seq=1 + MSS * 4, ack=1, flags="PA", payload=MSS, ip_id=200)
    cli.append(tcp(CLI1, 40000, SRV, 5201, t=1.0, **re))
    srv.append(tcp(CLI1, 40000, SRV, 5201, t=1.011, **re))
    write_pcap(d / "client-path1.pcap", sorted(cli, key=lambda p: p[0]), t0=T0)
    write_pcap(d / "server-path1.pcap", sorted(srv, key=lambda p: p[0]), t0=T0)
    ctl = [tcp(CLI2, 40001, SRV, 5201, seq=1, ack=1, flags="PA", payload=37, t=0.0, ip_id=1)]
    write_pcap(d / "client-path2.pcap", ctl, t0=T0)
    write_pcap(d / "server-path2.pcap", [(p[0] + 0.01, p[1]) for p in ctl], t0=T0)
    (d / "ping").mkdir()
    (d / "ping" / "path1.txt").write_text(_ping_text([25.0, 35.0], tx=2))
    (d / "ping" / "path2.txt").write_text(_ping_text([20.0], tx=2))
    (d / "iperf3").mkdir()
    (d / "iperf3" / "flow1-server.json").write_text(json.dumps({"end": {"sum_received": {"bytes": 10_000,
                                                                                              "bits_per_second": 8.0e4}}}))
    params = {"family": "003", "experiment": "scenario", "mode": "tcp_path1", "transport": transport,
              "tcp_path": tcp_path, "cc": "cubic", "queue_pkts": 50, "path1_rate_mbit": 10, "path1_delay_ms": 2,
              "path1_buffer_pkts": 50, "path2_rate_mbit": 2, "path2_delay_ms": 10, "path2_buffer_pkts": 50,
              "duration_s": 1, "rep": 1, "campaign": "t", "backend": "netns"}
    (d / "params.json").write_text(json.dumps(params))
    (d / "meta.json").write_text(json.dumps({"params": params, "family": "003", "kernel": "test",
                                             "queue_mechanism": "htb+pfifo on a forwarding namespace",
                                             "topology": {"paths": {"1": {"label": "A"}, "2": {"label": "B"}}}}))
    (d / "COMPLETE").write_text("done\n")
    return d


def test_analyze_run_known_answers(tmp_path):
    d = _write_run(tmp_path)
    df = dp.analyze_run(d)
    assert list(df["path"]) == [1, 2]
    p1, p2 = df.iloc[0], df.iloc[1]
    owd = [10, 12, 10, 14, 10, 12, 10, 14, 10, 11]             # arrival order at the server
    assert p1["owd_mean_ms"] == pytest.approx(np.mean(owd), abs=1e-3)
    assert p1["jitter_ms"] == pytest.approx(np.abs(np.diff(owd)).sum() / (len(owd) - 1), abs=1e-3)
    assert p1["loss_pct"] == pytest.approx(100 / 11)
    assert p1["data_pkts"] == 11 and p1["data_bytes"] == 11 * MSS and p1["retransmissions"] == 1
    # 10 000 bytes arrive at the server for the first time between its first (0.010 s) and last (1.011 s) data
    # segment (the retransmission fills the hole: it counts)
    assert p1["path_goodput_mbps"] == pytest.approx(10_000 * 8 / 1.001 / 1e6)
    assert p2["path_goodput_mbps"] == 0 and p1["path_share"] == 1
    assert p1["subflow_kind"] == "tcp" and p1["path_label"] == "A"
    assert p1["ping_rtt_mean_ms"] == pytest.approx(30.0) and p1["ping_loss_pct"] == 0
    assert p1["throughput_mbps"] == pytest.approx(0.08)
    # path 2 carries a connection to the data port (iperf3's control connection), but a TCP run's data is on its path
    assert p2["data_pkts"] == 0 and p2["subflow_kind"] is None and p2["ping_loss_pct"] == pytest.approx(50.0)
    assert p1["conn_goodput_mbps"] == pytest.approx(p1["path_goodput_mbps"] + p2["path_goodput_mbps"])
    assert np.isnan(p1["flood_goodput_mbps"])


def test_load_campaign_uses_the_family_rows(tmp_path):
    from analysis.dataset import load_campaign

    _write_run(tmp_path)
    df = load_campaign(tmp_path, progress=False, jobs=1)
    assert list(df.columns) == dp.COLUMNS and len(df) == 2
    runs = df.attrs["runs"]
    assert list(runs.columns) == dp.RUNS_COLUMNS and runs["mode"].iloc[0] == "tcp_path1"
    again = load_campaign(tmp_path, progress=False, jobs=1)          # from the derived cache
    pd.testing.assert_frame_equal(df, again)


def test_subflow_kinds_across_the_two_path_captures(tmp_path):
    """A real MPTCP capture (tests/data/real/mptcp): the initial subflow and the join, found whichever capture
    holds each handshake."""
    d = tmp_path / "run"
    d.mkdir()
    shutil.copy(REAL / "mptcp-2subflows-head.pcap", d / "client-path1.pcap")
    kinds = dp._subflow_kinds(d)
    assert sorted(kinds.values()).count("initial") >= 1 and "join" in kinds.values()


def test_window_delay_stats_and_min_interval(tmp_path):
    m = pd.DataFrame({"ts_tx": [0.0, 1.0, 2.0, 3.0, 4.0], "ts_rx": [0.010, 1.030, np.nan, 3.020, 4.010]})
    w = dp.window_delay_stats(m, 0.5, 3.5)          # sent at 1, 2 (lost), 3
    assert w["owd_mean_ms"] == pytest.approx(25.0) and w["jitter_ms"] == pytest.approx(10.0)
    assert w["loss_pct"] == pytest.approx(100 / 3)
    (tmp_path / "iperf3").mkdir()
    iv = [{"sum": {"seconds": 1.0, "bits_per_second": b}} for b in (5e6, 2e6, 7e6)]
    iv.append({"sum": {"seconds": 0.1, "bits_per_second": 1e5}})   # iperf3's partial last interval
    (tmp_path / "iperf3" / "flow1-server.json").write_text(json.dumps({"intervals": iv}))
    assert dp._min_interval_mbps(tmp_path) == pytest.approx(2.0)
