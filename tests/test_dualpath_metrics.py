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


def _ping_text(rtts, tx, t=T0, lost=()):
    """ping -D output: one request every 0.2 s from t, seq 1..tx; the requests ``lost`` get no reply, the others
    get the RTTs ``rtts`` in turn."""
    lines = [f"PING {SRV} ({SRV}) from {CLI1} : 56(84) bytes of data."]
    answered = [i for i in range(1, tx + 1) if i not in lost][:len(rtts)]
    for i, r in zip(answered, rtts):
        lines.append(f"[{t + 0.2 * i + r / 1e3:.6f}] 64 bytes from {SRV}: icmp_seq={i} ttl=63 time={r} ms")
    lines += ["", f"--- {SRV} ping statistics ---",
              f"{tx} packets transmitted, {len(rtts)} received, {100 * (1 - len(rtts) / tx):g}% packet loss, time 1000ms"]
    return "\n".join(lines) + "\n"


def test_ping_stats(tmp_path):
    f = tmp_path / "path1.txt"
    f.write_text(_ping_text([20.1, 30.5, 25.0, 40.0], tx=5, lost=(3,)))
    s = dp.ping_stats(f)
    assert s["ping_rtt_mean_ms"] == pytest.approx((20.1 + 30.5 + 25.0 + 40.0) / 4)
    assert s["ping_rtt_median_ms"] == pytest.approx(27.75)
    assert s["ping_loss_pct"] == pytest.approx(20.0)              # seq 3 of 5
    # ping's deadline: a request sent within the largest RTT of the last reply was still in flight, not lost
    f.write_text(_ping_text([20.0, 30.0, 25.0, 300.0], tx=5))     # seq 5 sent at 1.0 s, last reply at 1.1 s
    assert dp.ping_stats(f)["ping_loss_pct"] == 0.0


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


def test_ping_jitter_follows_sequence_order_and_skips_duplicates():
    """Study 003's jitter over ping's RTTs (section III.D): replies in icmp_seq order, a lost request left out, a
    duplicate reply counted once."""
    text = "\n".join([
        f"PING {SRV} ({SRV}) from {CLI1} : 56(84) bytes of data.",
        f"[{T0 + 1.030:.6f}] 64 bytes from {SRV}: icmp_seq=1 ttl=63 time=30.0 ms",
        f"[{T0 + 2.050:.6f}] 64 bytes from {SRV}: icmp_seq=2 ttl=63 time=50.0 ms",
        f"[{T0 + 2.060:.6f}] 64 bytes from {SRV}: icmp_seq=2 ttl=63 time=60.0 ms (DUP!)",
        # seq 3 lost; seq 5's reply overtakes seq 4's
        f"[{T0 + 5.020:.6f}] 64 bytes from {SRV}: icmp_seq=5 ttl=63 time=20.0 ms",
        f"[{T0 + 5.100:.6f}] 64 bytes from {SRV}: icmp_seq=4 ttl=63 time=1100.0 ms",
        "", f"--- {SRV} ping statistics ---",
        "6 packets transmitted, 4 received, +1 duplicates, 33.3333% packet loss, time 5000ms", ""]).encode()
    log = dp.parse_ping(text)
    assert list(log.seq) == [1, 2, 4, 5] and list(log.rtt_ms) == [30.0, 50.0, 1100.0, 20.0]
    s = dp.ping_stats(log)
    assert s["ping_jitter_ms"] == pytest.approx((20 + 1050 + 1080) / 3)
    # answerable: sent by the last arrival (5.1 s) minus the largest RTT (1.1 s) = 4.0 s, seq 1-4; seq 3 lost
    assert s["ping_loss_pct"] == pytest.approx(25.0)
    assert s["ping_rtt_mean_ms"] == pytest.approx(300.0)
    # send times: answered ones at arrival - RTT (1, 2, 4, 5 s), seq 3 between its neighbours, seq 6 one step on
    seqs, t = dp.ping_send_times(log)
    assert list(seqs) == [1, 2, 3, 4, 5, 6]
    assert t - T0 == pytest.approx([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    w = dp.ping_window_stats(log, T0 + 2.5, T0 + 6.5)          # sent in it: 3 (lost), 4; 5, 6 too late to count
    assert w["flood_ping_loss_pct"] == pytest.approx(50.0)
    assert w["flood_ping_rtt_mean_ms"] == pytest.approx(560.0)  # replies arriving in it: seq 4 and 5
    assert w["flood_ping_jitter_ms"] == pytest.approx(1080.0)
    assert np.isnan(dp.ping_stats(dp.parse_ping(b""))["ping_jitter_ms"])


def test_rows_without_captures_get_the_ping_columns_of_a_newer_definition(tmp_path):
    """A run whose captures are gone (as in a bundle) and whose cached rows predate the ping columns: the columns
    that need only the ping output are recomputed; the capture columns stay as cached."""
    from analysis.dataset import load_campaign

    d = _write_run(tmp_path)
    (d / "ping" / "path1.txt").write_text(_ping_text([25.0, 35.0, 20.0], tx=4, lost=(2,)))
    first = load_campaign(tmp_path, progress=False, jobs=1)
    fp = json.loads((d / "derived" / "fingerprint.json").read_text())
    fp["version"] = dp.DERIVED_VERSION - 1                     # rows cached by an older definition ...
    (d / "derived" / "fingerprint.json").write_text(json.dumps(fp))
    old = pd.read_parquet(d / "derived" / "flows.parquet").drop(columns=["ping_jitter_ms", "ping_interval_s"])
    old.to_parquet(d / "derived" / "flows.parquet")
    for p in d.glob("*.pcap"):                                 # ... and no captures to analyse again
        p.unlink()
    df = load_campaign(tmp_path, progress=False, jobs=1)
    p1 = df[df["path"] == 1].iloc[0]
    assert p1["ping_jitter_ms"] == pytest.approx((10 + 15) / 2)
    assert p1["ping_loss_pct"] == pytest.approx(100 / 3)       # seq 4 was still in flight at the deadline
    assert p1["owd_mean_ms"] == pytest.approx(first[first["path"] == 1]["owd_mean_ms"].iloc[0])
    assert np.isnan(p1["ping_interval_s"])                     # not a parameter of this hand-built run


def test_columnar_rows_without_captures_get_the_ping_columns(tmp_path, monkeypatch):
    """The same for a columnar bundle: its stored rows of an older definition, no captures shipped, the ping output
    in its files table."""
    from analysis import bundle_store
    from analysis.dataset import load_campaign

    src = tmp_path / "src"
    d = _write_run(src)
    (d / "ping" / "path1.txt").write_text(_ping_text([25.0, 35.0, 20.0], tx=4, lost=(2,)))
    for p in d.glob("*.pcap"):
        p.unlink()
    (d / "derived").mkdir()
    stored = dp.analyze_run(_write_run(tmp_path / "with-captures")).assign(ping_jitter_ms=np.nan)
    stored.to_parquet(d / "derived" / "flows.parquet")
    (d / "derived" / "fingerprint.json").write_text(json.dumps({"version": dp.DERIVED_VERSION, "files": {}}))
    (src / "bundle.json").write_text(json.dumps({"campaign": "t"}))
    bundle_store.write_columnar(src, tmp_path / "col")
    assert not (tmp_path / "col" / "captures").exists()
    assert load_campaign(tmp_path / "col", progress=False, jobs=1)["ping_jitter_ms"].isna().all()
    monkeypatch.setattr(dp, "DERIVED_VERSION", dp.DERIVED_VERSION + 1)   # a newer definition of the rows
    df = load_campaign(tmp_path / "col", progress=False, jobs=1)
    p1 = df[df["path"] == 1].iloc[0]
    assert p1["ping_jitter_ms"] == pytest.approx(12.5) and p1["ping_loss_pct"] == pytest.approx(100 / 3)
    assert p1["owd_mean_ms"] == pytest.approx(stored["owd_mean_ms"].iloc[0])
