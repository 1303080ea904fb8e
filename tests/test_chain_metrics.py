"""Per-run metrics of study 004 (analysis.families.chain) on hand-built run directories whose answers are known by
construction: received bytes (whole 592-byte packets arriving for the first time: a retransmission filling a hole
counts, a duplicate does not), one-way delay, loss in the path, retransmissions, cwnd from ``ss`` samples of the run's
cc only, and Jain's index of a two-flow run."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.errors import AnalysisError
from analysis.families import chain, get
from analysis.metrics.cwnd_stats import cwnd_stats
from pcapgen import tcp, write_pcap

T0 = 1_700_000_000.0
PAYLOAD = 540            # MSS 552 minus the 12-byte timestamp option: IP packets of 592 bytes
IP_LEN = 20 + 32 + PAYLOAD
TS = (1, 1)


def _seg(src, sport, dst, dport, i, t, ip_id):
    return tcp(src, sport, dst, dport, seq=1 + PAYLOAD * i, ack=1, flags="PA", payload=PAYLOAD, t=t, ip_id=ip_id,
               ts_opt=TS)


def _flow_packets(src, sport, dst, dport, sends):
    """Sender and receiver packet lists of one flow: a handshake, iperf3's control connection (37 bytes to the same
    port), ``sends`` = [(segment index, send time s, IPv4 ID, one-way delay ms or None = lost)] and an ACK for each
    arrival."""
    snd, rcv = [], []
    hs = [tcp(src, sport, dst, dport, seq=0, flags="S", t=-0.2, ip_id=1, mss=552),
          tcp(dst, dport, src, sport, seq=0, ack=1, flags="SA", t=-0.15, ip_id=1, mss=552)]
    ctl = [tcp(src, sport + 1, dst, dport, seq=1, ack=1, flags="PA", payload=37, t=-0.3, ip_id=2)]
    snd += hs + ctl
    rcv += [(t + 0.001, b) for t, b in hs + ctl]
    for n, (i, t, ip_id, d) in enumerate(sends):
        snd.append(_seg(src, sport, dst, dport, i, t, ip_id))
        if d is not None:
            rcv.append(_seg(src, sport, dst, dport, i, t + d / 1e3, ip_id))
            ack = tcp(dst, dport, src, sport, seq=1, ack=1 + PAYLOAD * (i + 1), flags="A", t=t + d / 1e3 + 1e-4,
                      ip_id=500 + n, ts_opt=TS)
            rcv.append(ack)
            snd.append((ack[0] + 0.01, ack[1]))
    return sorted(snd, key=lambda p: p[0]), sorted(rcv, key=lambda p: p[0])


def _ss_block(ts, lines):
    return f"# ts={ts:.6f}\nState    Recv-Q Send-Q Local Address:Port  Peer Address:PortProcess\n" + "".join(lines)


def _sock(state, local, peer, details):
    return f"{state} 0      0        {local}  {peer}\n\t {details}\n"


def _ss_text(src, sport, dst, dport):
    """iperf3's control socket (cubic), the data socket first under the default cc (cubic, before TCP_CONGESTION;
    cwnd 100 must not count), then westwood: cwnd 10, 20, 30, 16 at 0.1, 0.2, 0.4, 0.5 s; a FIN-WAIT-1 sample (cwnd 50)
    must not count either."""
    loc, ctl, peer = f"{src}:{sport}", f"{src}:{sport + 1}", f"{dst}:{dport}"
    control = _sock("ESTAB", ctl, peer, "cubic wscale:7,7 rto:1000 rtt:100/50 mss:540 cwnd:10 bytes_sent:37 "
                                        "bytes_acked:38")
    def data(cc, cw, acked, st="ESTAB"):
        return _sock(st, loc, peer, f"ts sack {cc} wscale:7,7 rto:1000 rtt:100/50 mss:540 cwnd:{cw} "
                                    f"bytes_sent:{acked} bytes_acked:{acked}")
    return "".join([
        _ss_block(T0 - 0.05, [control, _sock("SYN-SENT", loc, peer, "cubic rto:1000 mss:524 cwnd:10 segs_out:1")]),
        _ss_block(T0 + 0.0, [control, data("cubic", 100, 1)]),
        _ss_block(T0 + 0.1, [control, data("westwood", 10, 540)]),
        _ss_block(T0 + 0.2, [control, data("westwood", 20, 1080)]),
        _ss_block(T0 + 0.4, [control, data("westwood", 30, 2160)]),
        _ss_block(T0 + 0.5, [control, data("westwood", 16, 4320)]),
        _ss_block(T0 + 0.6, [control, data("westwood", 50, 4320, "FIN-WAIT-1")]),
    ])


def _write_run(root: Path, name: str, experiment: str, flows: list[dict], *, ss=True, cc="westwood") -> Path:
    """A complete study-004 run directory: per flow {src, dst, port, sends, iperf3_bytes}."""
    d = root / "runs" / name
    (d / "iperf3").mkdir(parents=True)
    (d / "ss").mkdir()
    meta_flows = []
    for k, f in enumerate(flows, 1):
        snd, rcv = _flow_packets(f["src"], 40000 + 10 * k, f["dst"], f["port"], f["sends"])
        write_pcap(d / f"flow{k}-sender.pcap", snd, t0=T0, snaplen=128)
        write_pcap(d / f"flow{k}-receiver.pcap", rcv, t0=T0, snaplen=128)
        (d / "iperf3" / f"flow{k}-server.json").write_text(json.dumps(
            {"end": {"sum_received": {"bytes": f["iperf3_bytes"], "bits_per_second": 1e4}}}))
        (d / "iperf3" / f"flow{k}-client.json").write_text(json.dumps({"end": {}}))
        if ss:
            (d / "ss" / f"flow{k}.txt").write_text(_ss_text(f["src"], 40000 + 10 * k, f["dst"], f["port"]))
        meta_flows.append({"flow": k, "sender": f"n{k}", "receiver": "n9", "sender_addr": f["src"],
                           "receiver_addr": f["dst"], "port": f["port"], "error_link": f"L{k}"})
    params = {"run_id": name, "family": "004", "experiment": experiment, "topology": experiment, "cc": cc,
              "error_rate": 0.02, "bandwidth_mbit": None, "duration_s": 1, "rep": 1, "campaign": "t",
              "backend": "netns"}
    (d / "params.json").write_text(json.dumps(params))
    (d / "meta.json").write_text(json.dumps({
        "params": params, "family": "004", "kernel": "test", "queue_mechanism": "htb+pfifo on a forwarding namespace",
        "delay_mechanism": "netem", "flows": meta_flows, "self_check": {"ok": True},
        "host_load": {"cpu_pressure_some_pct": 1.5}, "status": "complete"}))
    (d / "COMPLETE").write_text("done\n")
    return d


# segment 2 is lost (error link) and retransmitted at 1.0 s with a new IPv4 ID (58 ms: it fills the hole and counts);
# segment 5 is retransmitted spuriously at 1.1 s (50 ms: a duplicate, it does not count as received bytes)
SINGLE = [(0, 0.0, 100, 50), (1, 0.1, 101, 60), (2, 0.2, 102, None), (3, 0.3, 103, 55), (4, 0.4, 104, 70),
          (5, 0.5, 105, 50), (6, 0.6, 106, 65), (7, 0.7, 107, 52), (2, 1.0, 200, 58), (5, 1.1, 201, 50)]


def test_single_flow_known_answers(tmp_path):
    d = _write_run(tmp_path, "client_server__westwood__err0.02__t1s__rep01", "client_server",
                   [{"src": "10.104.1.1", "dst": "10.104.2.1", "port": 5201, "sends": SINGLE, "iperf3_bytes": 4320}])
    df = chain.analyze_run(d)
    assert list(df.columns) == chain.COLUMNS and len(df) == 1
    r = df.iloc[0]
    assert r["flow"] == 1 and r["experiment"] == "client_server" and r["cc"] == "westwood"
    assert r["error_rate"] == pytest.approx(0.02) and np.isnan(r["bandwidth_mbit"])
    assert r["self_check_ok"] is True and r["host_cpu_pressure_pct"] == pytest.approx(1.5)
    # segments 0-7 arrive for the first time (2 via its retransmission); the duplicate of 5 does not count
    assert r["received_pkts"] == 8
    assert r["received_bytes"] == 8 * 592 and IP_LEN == 592
    assert r["received_payload_bytes"] == 8 * PAYLOAD
    assert r["iperf3_received_bytes"] == 4320
    # 10 transmissions sent, one never arrived; 2 retransmissions at the sender
    assert r["sent_pkts"] == 10 and r["loss_pct"] == pytest.approx(10.0) and r["retransmissions"] == 2
    owd = [50, 60, 55, 70, 50, 65, 52, 58, 50]                  # every arrival, the duplicate included
    assert r["delay_mean_ms"] == pytest.approx(np.mean(owd), abs=1e-3)
    assert r["delay_median_ms"] == pytest.approx(55.0, abs=1e-3)
    assert r["delay_p95_ms"] == pytest.approx(np.percentile(owd, 95), abs=1e-3)
    # first data arrival 0.050 s, last 1.150 s
    assert r["goodput_mbps"] == pytest.approx(8 * PAYLOAD * 8 / 1.1 / 1e6, rel=1e-6)
    # cwnd: westwood ESTAB samples only: 10, 20, 30, 16 at 0.1, 0.2, 0.4, 0.5 s -> max 30,
    # time average (10·0.1 + 20·0.2 + 30·0.1) / 0.4 = 20 (the sample mean would be 19)
    assert r["cwnd_max_pkts"] == 30 and r["cwnd_mean_pkts"] == pytest.approx(20.0)
    # run level: one flow
    assert r["total_received_bytes"] == 8 * 592 and np.isnan(r["jain_index"])
    assert r["run_delay_mean_ms"] == pytest.approx(np.mean(owd), abs=1e-3)


def test_two_flows_jain_and_run_level(tmp_path):
    f1 = [(i, 0.1 * i, 100 + i, dl) for i, dl in enumerate([10, 20, 30, 40])]
    f2 = [(i, 0.1 * i, 300 + i, dl) for i, dl in enumerate([100, 200])]
    d = _write_run(tmp_path, "bottleneck__westwood__err0.02__t1s__rep01", "bottleneck",
                   [{"src": "10.104.11.1", "dst": "10.104.42.1", "port": 5201, "sends": f1, "iperf3_bytes": 2160},
                    {"src": "10.104.21.1", "dst": "10.104.52.1", "port": 5202, "sends": f2, "iperf3_bytes": 1080}])
    df = chain.analyze_run(d)
    assert list(df["flow"]) == [1, 2]
    assert list(df["received_bytes"]) == [4 * 592, 2 * 592]
    assert list(df["delay_mean_ms"]) == pytest.approx([25.0, 150.0], abs=1e-3)
    # J = (4 + 2)^2 / (2 (16 + 4)) = 0.9, the same on both rows (any unit: J is scale-free)
    assert list(df["jain_index"]) == pytest.approx([0.9, 0.9])
    assert list(df["total_received_bytes"]) == [6 * 592] * 2
    assert list(df["run_delay_mean_ms"]) == pytest.approx([400 / 6] * 2, abs=1e-3)
    assert (df["loss_pct"] == 0).all() and (df["retransmissions"] == 0).all()


def test_without_ss_file_cwnd_is_nan_and_other_cc_has_no_samples(tmp_path):
    sends = SINGLE[:2]
    flow = [{"src": "10.104.1.1", "dst": "10.104.2.1", "port": 5201, "sends": sends, "iperf3_bytes": 1080}]
    r = chain.analyze_run(_write_run(tmp_path, "a", "client_server", flow, ss=False)).iloc[0]
    assert np.isnan(r["cwnd_max_pkts"]) and np.isnan(r["cwnd_mean_pkts"]) and r["received_bytes"] == 2 * 592
    r = chain.analyze_run(_write_run(tmp_path, "b", "client_server", flow, cc="westwood_e")).iloc[0]
    assert np.isnan(r["cwnd_max_pkts"])          # the samples show cubic and westwood, never westwood_e


def test_missing_capture_is_one_line_error(tmp_path):
    d = _write_run(tmp_path, "c", "client_server",
                   [{"src": "10.104.1.1", "dst": "10.104.2.1", "port": 5201, "sends": SINGLE, "iperf3_bytes": 1}])
    (d / "flow1-receiver.pcap").unlink()
    assert not chain.has_raw(d)
    (d / "flow1-sender.pcap").rename(d / "keep.pcap")
    with pytest.raises(AnalysisError, match=r"^c: missing capture flow1-sender\.pcap$"):
        chain.analyze_run(d)


def test_load_campaign_uses_the_chain_rows(tmp_path):
    from analysis.dataset import load_campaign

    assert get("004") is chain
    _write_run(tmp_path, "client_server__westwood__err0.02__t1s__rep01", "client_server",
               [{"src": "10.104.1.1", "dst": "10.104.2.1", "port": 5201, "sends": SINGLE, "iperf3_bytes": 4320}])
    df = load_campaign(tmp_path, progress=False, jobs=1)
    assert list(df.columns) == chain.COLUMNS and len(df) == 1 and df["received_bytes"].iloc[0] == 8 * 592
    runs = df.attrs["runs"]
    assert list(runs.columns) == chain.RUNS_COLUMNS and runs["experiment"].iloc[0] == "client_server"
    again = load_campaign(tmp_path, progress=False, jobs=1)          # from the derived cache
    pd.testing.assert_frame_equal(df, again)


def test_cwnd_stats_time_average():
    s = cwnd_stats([0.4, 0.1, 0.2, 0.5], [30, 10, 20, 16])            # unsorted input
    assert s == {"cwnd_max_pkts": 30.0, "cwnd_mean_pkts": pytest.approx(20.0)}
    assert cwnd_stats([1.0], [7]) == {"cwnd_max_pkts": 7.0, "cwnd_mean_pkts": 7.0}
    assert all(np.isnan(v) for v in cwnd_stats([], []).values())
