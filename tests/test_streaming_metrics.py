"""Per-run metrics of study 002 (analysis.families.streaming) and the playback simulation (analysis.metrics.playback)
on hand-built run directories whose answers are known by construction: per-client throughput (payload arriving at the
client for the first time over its first to last data packet), one-way delay server -> client, loss in the shared
link, a retransmission, playback startup and a known stall from the progress samples, the UDP background's sent /
received rates and loss, and Jain's index over the three clients."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.errors import AnalysisError
from analysis.families import get, streaming
from analysis.metrics.playback import INITIAL_BUFFER_S, playback_stalls
from pcapgen import tcp, udp, write_pcap

T0 = 1_700_000_000.0
PAYLOAD = 1000
SRV = "10.102.1.1"
CLI = {1: "10.102.2.1", 2: "10.102.2.2", 3: "10.102.2.3"}
TG, SINK = "10.102.3.1", "10.102.4.1"
TS = (1, 1)

# client 1: segment 2 is lost in the shared link and retransmitted at 1.0 s with a new IPv4 ID (8 ms)
SENDS = {
    1: [(0, 0.0, 100, 5), (1, 0.1, 101, 6), (2, 0.2, 102, None), (3, 0.3, 103, 5), (4, 0.4, 104, 7),
        (5, 0.5, 105, 5), (6, 0.6, 106, 6), (7, 0.7, 107, 5), (2, 1.0, 200, 8)],
    2: [(i, 0.1 * i, 300 + i, 2) for i in range(4)],
    3: [(i, 0.1 * i, 400 + i, 3) for i in range(4)],
}
SYN_AT = {1: -0.5, 2: -0.2, 3: -0.3}
# client 1's progress (s after T0, bytes): 2 s of video at 1000 kbit/s = 250000 bytes
PROGRESS = {1: [(0, 0), (1, 250_000), (2, 375_000), (5, 375_000), (6, 750_000), (10, 1_250_000)],
            2: [(t, 125_000 * t) for t in range(11)]}


def _stream(k: int):
    """Server and client packet lists of client K's stream: handshake, the HTTP request (120 bytes), data segments
    ``SENDS[k]`` (index, send time s, IPv4 ID, one-way delay ms or None = lost) and an ACK for each arrival."""
    c, cp, port = CLI[k], 50000 + k, 8000 + k
    syn_t = SYN_AT[k]
    # handshake and request: client-sent packets reach the server capture 0.1 ms after the client's, and vice versa
    syn = tcp(c, cp, SRV, port, seq=0, flags="S", t=syn_t, ip_id=1, mss=1460)
    synack = tcp(SRV, port, c, cp, seq=0, ack=1, flags="SA", t=syn_t + 0.01, ip_id=1, mss=1460)
    get = tcp(c, cp, SRV, port, seq=1, ack=1, flags="PA", payload=120, t=syn_t + 0.02, ip_id=2)
    srv = [(syn[0] + 1e-4, syn[1]), synack, (get[0] + 1e-4, get[1])]
    cli = [syn, (synack[0] + 1e-4, synack[1]), get]
    for n, (i, t, ip_id, dl) in enumerate(SENDS[k]):
        seg = tcp(SRV, port, c, cp, seq=1 + PAYLOAD * i, ack=121, flags="PA", payload=PAYLOAD, t=t, ip_id=ip_id,
                  ts_opt=TS)
        srv.append(seg)
        if dl is not None:
            cli.append((t + dl / 1e3, seg[1]))
            ack = tcp(c, cp, SRV, port, seq=121, ack=1 + PAYLOAD * (i + 1), flags="A", t=t + dl / 1e3 + 1e-4,
                      ip_id=500 + n, ts_opt=TS)
            cli.append(ack)
            srv.append((ack[0] + 0.002, ack[1]))
    return sorted(srv, key=lambda p: p[0]), sorted(cli, key=lambda p: p[0])


def _background(lost=(3, 7)):
    """tg and sink packets: 10 datagrams of 1000 payload bytes (IP 1028) every 0.1 s from tg to sink, 1 ms to cross;
    ``lost`` never arrive; plus a 4-byte reply sink -> tg before them (iperf3's UDP handshake), which is not
    background."""
    reply = udp(SINK, 5201, TG, 40000, payload=4, t=-0.1, ip_id=9)
    tg, sink = [reply], [reply]
    for i in range(10):
        d = udp(TG, 40000, SINK, 5201, payload=1000, t=0.1 * i, ip_id=1000 + i)
        tg.append(d)
        if i not in lost:
            sink.append((d[0] + 0.001, d[1]))
    return sorted(tg, key=lambda p: p[0]), sorted(sink, key=lambda p: p[0])


def _write_run(root: Path, name: str, *, experiment="test2", background_mbps=8.0, background=True,
               progress=PROGRESS, measured_kbps=1000.0) -> Path:
    d = root / "runs" / name
    (d / "video").mkdir(parents=True)
    srv_all = []
    for k in streaming.CLIENTS:
        srv, cli = _stream(k)
        srv_all += srv
        write_pcap(d / f"client{k}.pcap", cli, t0=T0, snaplen=128)
    write_pcap(d / "server.pcap", sorted(srv_all, key=lambda p: p[0]), t0=T0, snaplen=128)
    if background:
        tg, sink = _background()
        write_pcap(d / "tg.pcap", tg, t0=T0, snaplen=128)
        write_pcap(d / "sink.pcap", sink, t0=T0, snaplen=128)
    for k, samples in progress.items():
        (d / "video" / f"client{k}.progress").write_text(
            "".join(f"# ts={T0 + t:.6f} bytes={b}\n" for t, b in samples))
        (d / "video" / f"client{k}.json").write_text(json.dumps({"size_download": samples[-1][1]}))
    params = {"run_id": name, "family": "002", "experiment": experiment, "cc": "cubic",
              "background_mbps": background_mbps, "video_kbps": 960, "shared_link_mbit": 100, "duration_s": 10,
              "rep": 1, "campaign": "t", "backend": "netns"}
    (d / "params.json").write_text(json.dumps(params))
    meta = {"params": dict(params, background_tool="iperf3"), "family": "002", "kernel": "test",
            "self_check": {"ok": True}, "host_load": {"cpu_pressure_some_pct": 2.5}, "status": "complete"}
    if measured_kbps is not None:           # as run_streaming.sh writes it: meta.json video and params
        meta["video"] = {"sha256": "0" * 64, "target_kbps": 960, "measured_kbps": measured_kbps}
        meta["params"]["video_measured_kbps"] = measured_kbps
    (d / "meta.json").write_text(json.dumps(meta))
    (d / "COMPLETE").write_text("done\n")
    return d


def test_three_clients_known_answers(tmp_path):
    d = _write_run(tmp_path, "test2__cubic__rep01")
    df = streaming.analyze_run(d)
    assert list(df.columns) == streaming.COLUMNS and list(df["client"]) == [1, 2, 3]
    r1, r2, r3 = (df.iloc[i] for i in range(3))
    assert r1["experiment"] == "test2" and r1["cc"] == "cubic" and r1["background_mbps"] == 8.0
    assert r1["background_tool"] == "iperf3" and r1["video_kbps"] == 960 and r1["shared_link_mbit"] == 100
    assert r1["duration_s"] == 10 and r1["rep"] == 1 and r1["kernel"] == "test"
    assert r1["self_check_ok"] is True and r1["host_cpu_pressure_pct"] == pytest.approx(2.5)
    # client 1: 9 transmissions sent, one lost in the link; its retransmission fills the hole (8 segments delivered:
    # 8000 payload bytes between the first arrival 0.005 s and the last 1.008 s)
    assert r1["sent_pkts"] == 9 and r1["loss_pct"] == pytest.approx(100 / 9) and r1["retransmissions"] == 1
    assert r1["received_payload_bytes"] == 8 * PAYLOAD
    assert r1["throughput_kbps"] == pytest.approx(8 * PAYLOAD * 8 / 1.003 / 1e3, rel=1e-6)
    owd = [5, 6, 5, 7, 5, 6, 5, 8]
    assert r1["delay_mean_ms"] == pytest.approx(np.mean(owd), abs=1e-3)
    assert r1["delay_median_ms"] == pytest.approx(5.5, abs=1e-3)
    assert r1["delay_p95_ms"] == pytest.approx(np.percentile(owd, 95), abs=1e-3)
    # clients 2 and 3: 4 segments over 0.3 s, no loss, 2 and 3 ms
    for r, dl in ((r2, 2.0), (r3, 3.0)):
        assert r["sent_pkts"] == 4 and r["loss_pct"] == 0 and r["retransmissions"] == 0
        assert r["throughput_kbps"] == pytest.approx(4 * PAYLOAD * 8 / 0.3 / 1e3, rel=1e-6)
        assert r["delay_mean_ms"] == pytest.approx(dl, abs=1e-3)
    # playback at meta.json's measured 1000 kbit/s (not the nominal 960): client 1 requests at -0.5 s, has 2 s of
    # video at 1 s (startup 1.5 s), plays; its buffer (2 s at 2 s) empties at 4 s while the download stalls until 5 s,
    # refills to 2 s at 5 + 2/3 s: one stall of 5/3 s
    assert (df["playback_kbps"] == 1000.0).all()
    assert r1["startup_delay_s"] == pytest.approx(1.5) and r1["stall_count"] == 1
    assert r1["stall_time_s"] == pytest.approx(5 / 3)
    # client 2 receives exactly real time: 2 s of video at 2 s after a request at -0.2 s, never stalls
    assert r2["startup_delay_s"] == pytest.approx(2.2) and r2["stall_count"] == 0 and r2["stall_time_s"] == 0
    # client 3 has no progress file
    assert np.isnan(r3["startup_delay_s"]) and np.isnan(r3["stall_count"]) and np.isnan(r3["stall_time_s"])
    # background: 10 datagrams of IP 1028 bytes over 0.9 s sent, 8 received over 0.9 s (the 4-byte reply is not
    # background), 2 of 10 lost; the same on every row
    assert list(df["background_sent_mbps"]) == pytest.approx([10 * 1028 * 8 / 0.9 / 1e6] * 3)
    assert list(df["background_received_mbps"]) == pytest.approx([8 * 1028 * 8 / 0.9 / 1e6] * 3)
    assert list(df["background_loss_pct"]) == pytest.approx([20.0] * 3)
    x = np.array([r1["throughput_kbps"], r2["throughput_kbps"], r3["throughput_kbps"]])
    assert list(df["jain_index"]) == pytest.approx([x.sum() ** 2 / (3 * (x ** 2).sum())] * 3)
    assert 0.9 < df["jain_index"].iloc[0] < 1


def test_nominal_bitrate_without_measured_one_and_no_background(tmp_path):
    d = _write_run(tmp_path, "test1__cubic__rep01", experiment="test1", background_mbps=0.0, background=False,
                   measured_kbps=None, progress={2: [(t, 125_000 * t) for t in range(11)]})
    df = streaming.analyze_run(d)
    assert (df["playback_kbps"] == 960.0).all()
    # at 960 kbit/s, 2 s of video = 240000 bytes: reached at 1.92 s; the request was at -0.2 s
    assert df.iloc[1]["startup_delay_s"] == pytest.approx(2.12) and df.iloc[1]["stall_count"] == 0
    for c in ("background_sent_mbps", "background_received_mbps", "background_loss_pct"):
        assert df[c].isna().all()


def test_missing_capture_and_bad_progress_are_one_line_errors(tmp_path):
    d = _write_run(tmp_path, "a")
    (d / "tg.pcap").unlink()
    with pytest.raises(AnalysisError, match=r"^a: missing capture tg\.pcap$"):
        streaming.analyze_run(d)
    d = _write_run(tmp_path, "b")
    (d / "client2.pcap").unlink()
    with pytest.raises(AnalysisError, match=r"^b: missing capture client2\.pcap$"):
        streaming.analyze_run(d)
    d = _write_run(tmp_path, "c")
    (d / "video" / "client1.progress").write_text("# ts=1 bytes=0\ngarbage\n")
    with pytest.raises(AnalysisError, match=r"client1\.progress:2: not a"):
        streaming.analyze_run(d)
    d = _write_run(tmp_path, "d")
    (d / "server.pcap").unlink()
    assert not streaming.has_raw(d)


def test_load_campaign_uses_the_streaming_rows(tmp_path):
    from analysis.dataset import load_campaign

    assert get("002") is streaming
    _write_run(tmp_path, "test2__cubic__rep01")
    skipped = tmp_path / "runs" / "test2__pcc_vivace__rep01"
    skipped.mkdir()
    (skipped / "params.json").write_text(json.dumps({"family": "002", "experiment": "test2", "cc": "pcc_vivace",
                                                     "background_mbps": 8, "video_kbps": 3600, "rep": 1}))
    (skipped / "SKIPPED").write_text("pcc_vivace: BPF struct_ops unavailable on this kernel\n")
    df = load_campaign(tmp_path, progress=False, jobs=1)
    assert list(df.columns) == streaming.COLUMNS and len(df) == 3
    assert df["throughput_kbps"].iloc[1] == pytest.approx(4 * PAYLOAD * 8 / 0.3 / 1e3, rel=1e-6)
    runs = df.attrs["runs"]
    assert list(runs.columns) == streaming.RUNS_COLUMNS
    assert runs.set_index("run_id").loc["test2__pcc_vivace__rep01", "status"] == "skipped"
    assert set(streaming.input_files(tmp_path / "runs" / "test2__cubic__rep01")) >= {
        "server.pcap", "client1.pcap", "tg.pcap", "sink.pcap", "video/client1.progress", "meta.json"}
    again = load_campaign(tmp_path, progress=False, jobs=1)          # from the derived cache
    pd.testing.assert_frame_equal(df, again)


# ------------------------------------------------------------------------------------------------ the player

def test_playback_known_stall():
    t = [0, 1, 2, 5, 6, 10]
    b = [0, 250_000, 375_000, 375_000, 750_000, 1_250_000]
    assert INITIAL_BUFFER_S == 2.0
    r = playback_stalls(t, b, 1000.0)
    assert r == {"startup_delay_s": 1.0, "stall_count": 1.0, "stall_time_s": pytest.approx(5 / 3)}
    # a smaller resume buffer: 1 s of video again at 5 + 1/3 s
    r = playback_stalls(t, b, 1000.0, resume_buffer_s=1.0)
    assert r["stall_count"] == 1 and r["stall_time_s"] == pytest.approx(4 / 3)
    # the same samples after a request at -0.5 s: startup 1.5 s, the rest unchanged
    assert playback_stalls(t, b, 1000.0, t_request=-0.5)["startup_delay_s"] == pytest.approx(1.5)


def test_playback_end_of_stream_is_not_a_stall_and_stall_at_the_end_counts():
    # 3 s of video by 1 s, nothing more: playback from 2/3 s drains the buffer at 3 + 2/3 s = the end, no stall
    r = playback_stalls([0, 1, 5], [0, 375_000, 375_000], 1000.0)
    assert r == {"startup_delay_s": pytest.approx(2 / 3), "stall_count": 0.0, "stall_time_s": 0.0}
    # 2 s by 1 s, a trickle afterwards (0.1 s of video per s): buffer empties at 1 + 2/0.9 s and never refills to
    # 2 s before the last sample (10 s): one stall lasting to the end
    r = playback_stalls([0, 1, 10], [0, 250_000, 250_000 + 12_500 * 9], 1000.0)
    t_empty = 1 + 2 / 0.9
    assert r["stall_count"] == 1 and r["stall_time_s"] == pytest.approx(10 - t_empty)
    # less than the initial buffer ever received: playback starts when the last byte is in
    assert playback_stalls([0, 1, 3], [0, 100_000, 100_000], 1000.0)["startup_delay_s"] == 1.0
    # nothing received: NaN
    assert all(math.isnan(v) for v in playback_stalls([0, 1], [0, 0], 1000.0).values())


@pytest.mark.parametrize("args, msg", [
    (([0, 1], [0, 1, 2], 1000.0), "2 sample times for 3 byte counts"),
    (([], [], 1000.0), "no received-bytes samples"),
    (([0, 0], [0, 1], 1000.0), "strictly increasing"),
    (([0, 1], [5, 1], 1000.0), "non-decreasing"),
    (([0, 1], [0, 1], 0.0), "positive number of kbit/s"),
])
def test_playback_bad_input(args, msg):
    with pytest.raises(AnalysisError, match=msg):
        playback_stalls(*args)
    with pytest.raises(AnalysisError, match="before the request"):
        playback_stalls([0, 1], [10, 20], 1000.0, t_request=0.5)


def test_two_ccs_at_once_give_one_row_per_streaming_client_with_its_cc(tmp_path):
    """The paper's test 5 ran PCC Vivace and CUBIC "secara bersamaan": one run, stream 1 with cubic and stream 2
    with pcc_vivace (meta.json streams[].cc), client 3 idle (no capture, no stream)."""
    d = _write_run(tmp_path, "test5__cubic+pcc_vivace__rep01", experiment="test5", background_mbps=90.0)
    (d / "client3.pcap").unlink()
    srv_two = [p for k in (1, 2) for p in _stream(k)[0]]
    write_pcap(d / "server.pcap", sorted(srv_two, key=lambda p: p[0]), t0=T0, snaplen=128)
    for f in ("params.json", "meta.json"):
        j = json.loads((d / f).read_text())
        (j if f == "params.json" else j["params"])["cc"] = "cubic+pcc_vivace"
        if f == "meta.json":
            j["streams"] = [{"stream": 1, "cc": "cubic"}, {"stream": 2, "cc": "pcc_vivace"}]
        (d / f).write_text(json.dumps(j))
    df = streaming.analyze_run(d)
    assert list(df["client"]) == [1, 2] and list(df["cc"]) == ["cubic", "pcc_vivace"]
    assert list(df["cc_pair"]) == ["cubic+pcc_vivace"] * 2
    x = df["throughput_kbps"].to_numpy()
    assert list(df["jain_index"]) == pytest.approx([x.sum() ** 2 / (2 * (x ** 2).sum())] * 2)   # n = 2 clients
    one = streaming.analyze_run(_write_run(tmp_path, "test2__cubic__rep01"))
    assert one["cc_pair"].isna().all() and (one["cc"] == "cubic").all()
