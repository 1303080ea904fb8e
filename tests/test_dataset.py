"""analysis.dataset on a synthetic campaign directory built from hand-made pcaps (answers known by construction)."""
import gzip
import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from pcapgen import tcp, udp, write_pcap  # noqa: E402

from analysis import dataset, runmeta
from analysis.families import roundrobin
from analysis.errors import AnalysisError

SRC1, DST1, SRC2, DST2 = "10.1.1.2", "10.4.1.2", "10.1.2.2", "10.4.2.2"
MSS = 1000
ISN = 1000


# ----------------------------------------------------------------------------------------------- builders

def _tcp_flow(src, dst, dport, times, mss, *, sport=40001, retrans_at=None, sack_acks=(), dsack=False,
              swap_at_receiver=None, rtt=0.020):
    """(router1 packets, receiver packets) of one TCP data connection plus a tiny iperf3 control connection.

    Segment i (payload ``mss``) leaves at times[i]; each is ACKed ``rtt`` later. ``retrans_at``: (i, t) resends
    segment i at t; ``sack_acks``: {i: nblocks} ACK i carries that many SACK blocks; ``dsack``: a duplicate ACK
    right after the retransmission's ACK reports it as a D-SACK; ``swap_at_receiver``: i -> segments i and i+1
    arrive at the receiver in swapped order."""
    r1, rx = [], []
    # iperf3 control connection: same hosts and server port, 37 + 10 bytes
    r1.append(tcp(src, 40000, dst, dport, seq=1, ack=1, flags="PA", payload=37, t=times[0] - 0.5))
    r1.append(tcp(dst, dport, src, 40000, seq=1, ack=38, flags="PA", payload=10, t=times[0] - 0.49))
    seg = {}
    for i, t in enumerate(times):
        s = ISN + 1 + i * mss
        seg[i] = s
        r1.append(tcp(src, sport, dst, dport, seq=s, ack=1, flags="A", payload=mss, t=t))
    order = list(range(len(times)))
    if swap_at_receiver is not None:
        k = swap_at_receiver
        order[k], order[k + 1] = order[k + 1], order[k]
    for n, i in enumerate(order):
        rx.append(tcp(src, sport, dst, dport, seq=seg[i], ack=1, flags="A", payload=mss, t=times[n] + 0.005))
    for i, t in enumerate(times):
        end = seg[i] + mss
        k = dict(sack_acks).get(i, 0)
        blocks = [(end + mss * (2 * b + 1), end + mss * (2 * b + 2)) for b in range(k)]
        r1.append(tcp(dst, dport, src, sport, seq=1, ack=end, flags="A", t=t + rtt, sack=blocks or None))
    if retrans_at is not None:
        i, t = retrans_at
        r1.append(tcp(src, sport, dst, dport, seq=seg[i], ack=1, flags="A", payload=mss, t=t))
        rx.append(tcp(src, sport, dst, dport, seq=seg[i], ack=1, flags="A", payload=mss, t=t + 0.005))
        if dsack:
            end = seg[i] + mss
            # duplicate ACK after the ACK of segment i+1 (t_{i+1} + rtt): D-SACK block below the cumulative ACK
            r1.append(tcp(dst, dport, src, sport, seq=1, ack=seg[i + 1] + mss, flags="A",
                          t=times[i + 1] + rtt + 0.001, sack=[(seg[i], end)]))
    r1.sort(key=lambda p: p[0])
    rx.sort(key=lambda p: p[0])
    return r1, rx


def _iperf3(run_dir, stem, *, tcp_bps=None, udp=None):
    d = run_dir / "iperf3"
    d.mkdir(exist_ok=True)
    if tcp_bps is not None:
        end = {"sum_received": {"bytes": 1, "bits_per_second": tcp_bps, "sender": False}}
    else:
        bps, loss, jit = udp
        end = {"sum": {"bytes": 0, "bits_per_second": 0}, "sum_received": {
            "bytes": 1000, "bits_per_second": bps, "lost_percent": loss, "jitter_ms": jit, "sender": False}}
    (d / f"{stem}-server.json").write_text(json.dumps({"end": end}))
    (d / f"{stem}-client.json").write_text(json.dumps({"end": {}}))


def _params(run_dir, **p):
    run_dir.mkdir(parents=True)
    base = {"experiment": "single_vs_multi", "cc": "cubic", "cc2": None, "path_mode": "multipath",
            "link_delay_ms": 10.0, "loss_pct": 0.0, "cbr_mbps": None, "duration_s": 2.0, "flow2_offset_s": 0.5,
            "path_skew_ms": 0.0, "rep": 1, "run_id": run_dir.name, "campaign": "synth", "seed": 1,
            "backend": "netns"}
    base.update(p)
    (run_dir / "params.json").write_text(json.dumps(base))
    meta = {"params": base, "backend": "netns", "kernel": "6.18-test", "delay_mechanism": "nfqueue-shim",
            "round_robin_mechanism": "nft-numgen-fwmark", "self_check": {"ok": True}}
    (run_dir / "meta.json").write_text(json.dumps(meta))


FLOW1_TIMES = [(1000 + 10 * i) / 1000 for i in range(101)]          # 1.000 .. 2.000 s, 101 segments
FLOW2_TIMES = [(1505 + 10 * k) / 1000 for k in range(100)]          # 1.505 .. 2.495 s, 100 segments


def build_campaign(root: Path, *, reps=1) -> Path:
    """A campaign directory: single-flow runs (``reps`` each of cubic multipath), one TCP pair run, one UDP run,
    one skipped and one incomplete run. Known answers: see the tests."""
    root = Path(root)
    runs = root / "runs"
    runs.mkdir(parents=True)
    (root / "campaign.json").write_text(json.dumps({"name": "synth", "seed": 1, "backend": "netns"}))
    for rep in range(1, reps + 1):
        d = runs / f"single_vs_multi__cubic__multipath__d10ms__l0pct__rep{rep:02d}"
        _params(d, rep=rep)
        r1, rx = _tcp_flow(SRC1, DST1, 5201, FLOW1_TIMES, MSS, retrans_at=(5, 1.055), sack_acks={20: 1, 21: 1, 22: 2},
                           dsack=True, swap_at_receiver=10)
        write_pcap(d / "router1.pcap", r1)
        write_pcap(d / "receiver.pcap", rx)
        _iperf3(d, "flow1", tcp_bps=0.8e6)
        (d / "COMPLETE").write_text("2026-11-21T00:00:00Z\n")
    # TCP pair: flow 1 cubic (1000-byte segments), flow 2 reno (500-byte segments) from 1.505 s
    d = runs / "tcp_fairness__cubic+reno__multipath__d10ms__l0pct__rep01"
    _params(d, experiment="tcp_fairness", cc2="reno")
    r1, rx = _tcp_flow(SRC1, DST1, 5201, FLOW1_TIMES, MSS)
    write_pcap(d / "router1.pcap", r1)
    write_pcap(d / "receiver.pcap", rx)
    r1, rx = _tcp_flow(SRC2, DST2, 5202, FLOW2_TIMES, 500, sport=40002)
    write_pcap(d / "router1-flow2.pcap", r1)
    write_pcap(d / "receiver-flow2.pcap", rx)
    _iperf3(d, "flow1", tcp_bps=0.81e6)
    _iperf3(d, "flow2", tcp_bps=0.4e6)
    (d / "COMPLETE").write_text("x\n")
    # TCP vs UDP CBR: UDP 1000-byte datagrams every 10 ms from 1.505 s; only every second one reaches the receiver
    d = runs / "udp_fairness__cubic__multipath__d10ms__l0pct__cbr6mbps__rep01"
    _params(d, experiment="udp_fairness", cbr_mbps=6.0)
    r1, rx = _tcp_flow(SRC1, DST1, 5201, FLOW1_TIMES, MSS)
    write_pcap(d / "router1.pcap", r1)
    write_pcap(d / "receiver.pcap", rx)
    u1 = [udp(SRC2, 50000, DST2, 5202, payload=1000, t=t) for t in FLOW2_TIMES]
    u1.insert(0, tcp(SRC2, 40000, DST2, 5202, seq=1, ack=1, flags="PA", payload=37, t=1.0))
    urx = [udp(SRC2, 50000, DST2, 5202, payload=1000, t=t + 0.005) for k, t in enumerate(FLOW2_TIMES) if k % 2 == 0]
    write_pcap(d / "router1-flow2.pcap", u1)
    write_pcap(d / "receiver-flow2.pcap", urx)
    _iperf3(d, "flow1", tcp_bps=0.8e6)
    _iperf3(d, "flow2", udp=(4.2e6, 50.0, 1.5))
    (d / "COMPLETE").write_text("x\n")
    # skipped and incomplete runs
    d = runs / "loss_rate__bic__multipath__d10ms__l2pct__rep01"
    _params(d, experiment="loss_rate", cc="bic", loss_pct=2.0)
    (d / "SKIPPED").write_text("bic: not available on this kernel — skipped\n")
    d = runs / "link_delay__reno__multipath__d20ms__l0pct__rep01"
    _params(d, experiment="link_delay", cc="reno", link_delay_ms=20.0)
    write_pcap(d / "router1.pcap", [])
    return root


@pytest.fixture
def camp(tmp_path):
    return build_campaign(tmp_path / "camp")


def _row(df, prefix, flow=1):
    r = df[df["run_id"].str.startswith(prefix) & (df["flow"] == flow)]
    assert len(r) == 1
    return r.iloc[0]


# ----------------------------------------------------------------------------------------------- tests

def test_columns_and_status(camp):
    df = dataset.load_campaign(camp, jobs=1, progress=False)
    assert list(df.columns) == roundrobin.COLUMNS
    assert len(df) == 1 + 2 + 2          # single-flow run, pair (2 flows), udp (2 flows)
    runs = df.attrs["runs"].set_index("run_id")
    assert runs.loc["loss_rate__bic__multipath__d10ms__l2pct__rep01", "status"] == "skipped"
    assert runs.loc["loss_rate__bic__multipath__d10ms__l2pct__rep01", "reason"] == \
        "bic: not available on this kernel — skipped"
    assert runs.loc["link_delay__reno__multipath__d20ms__l0pct__rep01", "status"] == "incomplete"
    assert runs.loc["link_delay__reno__multipath__d20ms__l0pct__rep01", "reason"] == "no COMPLETE marker"
    assert not df["run_id"].str.startswith(("loss_rate__bic", "link_delay__reno")).any()
    assert (runs["status"] == "complete").sum() == 3
    pd.testing.assert_frame_equal(dataset.run_status(camp), runs.reset_index()[roundrobin.RUNS_COLUMNS])


def test_single_flow_metrics_known_answers(camp):
    df = dataset.load_campaign(camp, jobs=1, progress=False)
    r = _row(df, "single_vs_multi")
    assert (r.experiment, r.cc, r.cc2, r.cc_pair, r.flow_cc, r.proto) == ("single_vs_multi", "cubic", None, None,
                                                                         "cubic", "tcp")
    assert (r.rep, r.backend, r.kernel, r.self_check_ok) == (1, "netns", "6.18-test", True)
    # 101 new segments of 1000 B between t = 1.000 and 2.000 s (the retransmission adds no new bytes)
    assert r.goodput_mbps == pytest.approx(101 * 1000 * 8 / 1.0 / 1e6, rel=1e-5)
    assert r.iperf3_goodput_mbps == pytest.approx(0.8)
    assert (r.data_pkts, r.data_bytes) == (102, 102_000)      # control connection (37 B) not counted
    assert (r.retransmissions, r.spurious_retransmissions) == (1, 1)
    assert (r.sack_acks, r.sack_blocks, r.dsack_blocks) == (4, 5, 1)
    # every segment except the retransmitted one gives one 20 ms sample (Karn)
    assert r.rtt_samples == 100
    assert r.rtt_mean_ms == pytest.approx(20.0, abs=1e-3)
    assert r.rtt_median_ms == pytest.approx(20.0, abs=1e-3)
    # receiver: segments 10 and 11 swapped; segment 5 (sent twice) excluded -> 100 evaluated, 1 reordered
    assert r.reorder_ratio == pytest.approx(0.01)
    assert r.reorder_extent_max == 1
    assert r.reorder_n3 == 0
    assert r.rd_nonzero_frac == pytest.approx(0.02)          # RD: D = -1 for 11, +1 for 10
    assert np.isnan(r.overlap_goodput_mbps) and np.isnan(r.jain)
    assert np.isnan(r.udp_loss_pct) and np.isnan(r.udp_jitter_ms)


def test_two_tcp_flows_overlap_and_jain(camp):
    df = dataset.load_campaign(camp, jobs=1, progress=False)
    f1, f2 = _row(df, "tcp_fairness", 1), _row(df, "tcp_fairness", 2)
    assert (f1.cc_pair, f1.flow_cc, f2.flow_cc, f2.cc2) == ("cubic+reno", "cubic", "reno", "reno")
    # overlap window [1.505, 2.000]: flow 1 has segments 1.51..2.00 (50 x 1000 B), flow 2 1.505..1.995 (50 x 500 B)
    w = 2.000 - 1.505
    assert f1.overlap_goodput_mbps == pytest.approx(50 * 1000 * 8 / w / 1e6, rel=1e-5)
    assert f2.overlap_goodput_mbps == pytest.approx(50 * 500 * 8 / w / 1e6, rel=1e-5)
    assert f1.jain == pytest.approx(0.9, rel=1e-6) and f2.jain == f1.jain      # (2a + a)^2 / (2 (4a^2 + a^2))
    assert f2.goodput_mbps == pytest.approx(100 * 500 * 8 / 0.99 / 1e6, rel=1e-5)
    assert f2.iperf3_goodput_mbps == pytest.approx(0.4)


def test_udp_flow(camp):
    df = dataset.load_campaign(camp, jobs=1, progress=False)
    t, u = _row(df, "udp_fairness", 1), _row(df, "udp_fairness", 2)
    assert (u.proto, u.flow_cc, u.cbr_mbps) == ("udp", "udp", 6.0)
    assert u.goodput_mbps == pytest.approx(4.2) and u.iperf3_goodput_mbps == pytest.approx(4.2)
    assert (u.udp_loss_pct, u.udp_jitter_ms) == (50.0, 1.5)
    assert (u.data_pkts, u.data_bytes) == (100, 100_000)
    # delivered at the receiver in [1.505, 2.0]: datagrams k = 0, 2, ..., 48 (arrive 5 ms later) -> 25 x 1000 B
    w = 2.000 - 1.505
    assert u.overlap_goodput_mbps == pytest.approx(25 * 1000 * 8 / w / 1e6, rel=1e-5)
    assert t.overlap_goodput_mbps == pytest.approx(50 * 1000 * 8 / w / 1e6, rel=1e-5)
    assert t.jain == pytest.approx(0.9, rel=1e-6)
    assert np.isnan(u.rtt_mean_ms) and np.isnan(u.sack_blocks)


def test_cache_reused_and_rebuilt_on_change(camp, monkeypatch):
    first = dataset.load_campaign(camp, jobs=1, progress=False)
    run = camp / "runs" / "single_vs_multi__cubic__multipath__d10ms__l0pct__rep01"
    assert (run / "derived" / "flows.parquet").is_file()
    fp = json.loads((run / "derived" / "fingerprint.json").read_text())
    assert set(fp["files"]) >= {"router1.pcap", "receiver.pcap", "params.json", "iperf3/flow1-server.json"}
    assert len(fp["files"]["router1.pcap"]["sha256"]) == 64

    calls = []
    real = runmeta.read_capture
    monkeypatch.setattr(runmeta, "read_capture", lambda p, buffer=None: calls.append(p) or real(p, buffer))
    second = dataset.load_campaign(camp, jobs=1, progress=False)
    assert calls == []
    pd.testing.assert_frame_equal(first, second)
    # a new mtime with the same content is not a change
    os.utime(run / "router1.pcap", ns=(1, 1))
    dataset.load_campaign(camp, jobs=1, progress=False)
    assert calls == []
    # changed content: only that run is analysed again
    r1, _ = _tcp_flow(SRC1, DST1, 5201, FLOW1_TIMES[:51], MSS)
    write_pcap(run / "router1.pcap", r1)
    third = dataset.load_campaign(camp, jobs=1, progress=False)
    assert {Path(p).parent.name for p in calls} == {run.name}
    assert _row(third, "single_vs_multi").goodput_mbps == pytest.approx(51 * 8000 / 0.5 / 1e6, rel=1e-5)


def test_cold_run_reads_each_capture_once(camp, monkeypatch):
    """A cold analysis hashes and decodes the same bytes: each capture is read once (issue 7)."""
    from analysis.ingest import fast_reader
    run = camp / "runs" / "single_vs_multi__cubic__multipath__d10ms__l0pct__rep01"
    plain = dataset.fingerprint(run)
    bufs = {}
    assert dataset.fingerprint(run, bufs) == plain
    assert {p.name for p in bufs} == {"router1.pcap", "receiver.pcap"}
    loads, hashed = [], []
    real_load, real_sha = fast_reader.load_buffer, dataset._sha256
    monkeypatch.setattr(fast_reader, "load_buffer", lambda p: loads.append(Path(p).name) or real_load(p))
    monkeypatch.setattr(dataset, "_sha256", lambda p: hashed.append(Path(p).name) or real_sha(p))
    shutil.rmtree(run / "derived", ignore_errors=True)
    df, reason = dataset.process_run(run)
    assert reason == ""
    assert sorted(loads) == ["receiver.pcap", "router1.pcap"]
    assert not [h for h in hashed if ".pcap" in h]
    pd.testing.assert_frame_equal(df, roundrobin.analyze_run(run))
    assert json.loads((run / "derived" / "fingerprint.json").read_text()) == json.loads(json.dumps(plain))


def test_gzip_captures_and_derived_only(camp, monkeypatch):
    ref = dataset.load_campaign(camp, jobs=1, progress=False)
    for run in (camp / "runs").iterdir():
        shutil.rmtree(run / "derived", ignore_errors=True)
        for p in list(run.glob("*.pcap")):
            with open(p, "rb") as src, gzip.open(str(p) + ".gz", "wb") as dst:
                shutil.copyfileobj(src, dst)
            p.unlink()
    gz = dataset.load_campaign(camp, jobs=1, progress=False)
    pd.testing.assert_frame_equal(ref, gz)
    # gzip'ing the captures of an analysed run keeps its cache valid (same decompressed content)
    run = camp / "runs" / "single_vs_multi__cubic__multipath__d10ms__l0pct__rep01"
    for p in (run / "router1.pcap.gz", run / "receiver.pcap.gz"):
        with gzip.open(p, "rb") as src, open(str(p)[:-3], "wb") as dst:
            shutil.copyfileobj(src, dst)
        p.unlink()
    dataset.load_campaign(camp, jobs=1, progress=False)          # cached from .pcap
    for p in (run / "router1.pcap", run / "receiver.pcap"):
        with open(p, "rb") as src, gzip.open(str(p) + ".gz", "wb") as dst:
            shutil.copyfileobj(src, dst)
        p.unlink()
    calls = []
    real = runmeta.read_capture
    monkeypatch.setattr(runmeta, "read_capture", lambda p, buffer=None: calls.append(p) or real(p, buffer))
    pd.testing.assert_frame_equal(ref, dataset.load_campaign(camp, jobs=1, progress=False))
    assert calls == []
    fp = json.loads((run / "derived" / "fingerprint.json").read_text())
    assert fp["files"]["router1.pcap"]["size"] == (run / "router1.pcap.gz").stat().st_size
    # raw captures gone, derived tables kept (as data/sample ships them): rows come from derived/
    for run in (camp / "runs").iterdir():
        for p in list(run.glob("*.pcap.gz")):
            p.unlink()
    derived_only = dataset.load_campaign(camp, jobs=1, progress=False)
    pd.testing.assert_frame_equal(ref, derived_only)


def test_parallel_and_external_derived_dir(camp, tmp_path):
    ref = dataset.load_campaign(camp, jobs=1, progress=False, derived_dir=tmp_path / "d1")
    par = dataset.load_campaign(camp, jobs=2, progress=False, derived_dir=tmp_path / "d2")
    pd.testing.assert_frame_equal(ref, par)
    assert (tmp_path / "d2" / "tcp_fairness__cubic+reno__multipath__d10ms__l0pct__rep01" / "flows.parquet").is_file()
    assert not any((r / "derived").exists() for r in (camp / "runs").iterdir())


def test_unreadable_run_is_listed_not_raised(camp):
    run = camp / "runs" / "udp_fairness__cubic__multipath__d10ms__l0pct__cbr6mbps__rep01"
    (run / "router1-flow2.pcap").write_bytes(b"not a pcap at all")
    df = dataset.load_campaign(camp, jobs=1, progress=False)
    assert not df["run_id"].str.startswith("udp_fairness").any()
    runs = df.attrs["runs"].set_index("run_id")
    assert runs.loc[run.name, "status"] == "complete"
    assert runs.loc[run.name, "reason"].startswith("analysis failed:")


def test_bad_campaign_dirs(tmp_path):
    with pytest.raises(AnalysisError, match="no such campaign directory"):
        dataset.load_campaign(tmp_path / "missing", progress=False)
    with pytest.raises(AnalysisError, match="no runs/"):
        dataset.load_campaign(tmp_path, progress=False)
    (tmp_path / "runs").mkdir()
    df = dataset.load_campaign(tmp_path, progress=False)
    assert df.empty and list(df.columns) == roundrobin.COLUMNS and df.attrs["runs"].empty


def test_scheduler_without_dask_is_one_line_error(camp, monkeypatch):
    import builtins
    real_import = builtins.__import__

    def fake(name, *a, **k):
        if name.startswith("dask"):
            raise ImportError("no dask")
        return real_import(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(AnalysisError, match="dask.distributed is not installed"):
        dataset.load_campaign(camp, progress=False, scheduler="tcp://127.0.0.1:1")


def test_dask_scheduler_gives_the_same_rows(camp, tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    ref = dataset.load_campaign(camp, jobs=1, progress=False, derived_dir=tmp_path / "a")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        got = dataset.load_campaign(camp, progress=False, scheduler=cluster.scheduler_address,
                                    derived_dir=tmp_path / "b")
    pd.testing.assert_frame_equal(ref, got)


def test_moved_aside_directories_never_count_even_with_complete(camp):
    """A run directory moved aside as <run_id>.incomplete-<suffix> (by a resumed campaign, or by hand, e.g. runs
    recorded under CPU contention) is superseded: listed as incomplete, never mixed into the metric rows, even if
    it holds a COMPLETE marker."""
    import shutil
    src = camp / "runs" / "single_vs_multi__cubic__multipath__d10ms__l0pct__rep01"
    aside = camp / "runs" / (src.name + ".incomplete-contended-20261121T205451Z")
    shutil.copytree(src, aside)
    assert (aside / "COMPLETE").exists()
    df = dataset.load_campaign(camp, jobs=1, progress=False)
    runs = df.attrs["runs"].set_index("run_id")
    assert runs.loc[aside.name, "status"] == "incomplete"
    assert runs.loc[aside.name, "reason"].startswith("superseded")
    assert not df["run_id"].str.contains(".incomplete-", regex=False).any()
    assert len(df) == 1 + 2 + 2


def _ipv4_fragments(src, sport, dst, dport, ip_id, data_len=8192, frag=1480):
    """The IP packets of one UDP datagram of ``data_len`` data bytes, fragmented as a 1500-byte MTU does (RFC 791:
    offsets in 8-byte units, MF on every fragment but the last)."""
    import ipaddress
    import struct
    dg = struct.pack("!HHHH", sport, dport, 8 + data_len, 0) + bytes(data_len)
    out = []
    for off in range(0, len(dg), frag):
        mf = 0x2000 if off + frag < len(dg) else 0
        part = dg[off:off + frag]
        out.append(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(part), ip_id, mf | off // 8, 64, 17, 0,
                               ipaddress.IPv4Address(src).packed, ipaddress.IPv4Address(dst).packed) + part)
    return out


def test_udp_overlap_counts_whole_datagrams_when_fragmented(tmp_path):
    # udp_len_bytes 8192 (the paper era's iperf3 default): 6 fragments per datagram over the 1500-byte MTU. Datagram
    # k leaves router1 at 1.505 + 0.01 k (fragments 0.2 ms apart) and reaches the receiver 5 ms later; every 4th
    # (k = 0, 4, 8, ...) loses its fourth fragment on the way, so the receiver's kernel never delivers it.
    root = tmp_path / "camp"
    (root / "runs").mkdir(parents=True)
    (root / "campaign.json").write_text(json.dumps({"name": "synth", "seed": 1, "backend": "netns"}))
    d = root / "runs" / "udp_fairness__cubic__multipath__d10ms__l0pct__cbr6mbps__len8192B__rep01"
    _params(d, experiment="udp_fairness", cbr_mbps=6.0, udp_len_bytes=8192)
    r1, rx = _tcp_flow(SRC1, DST1, 5201, FLOW1_TIMES, MSS)
    write_pcap(d / "router1.pcap", r1)
    write_pcap(d / "receiver.pcap", rx)
    sent, got = [], []
    for k, t in enumerate(FLOW2_TIMES):
        for i, ip in enumerate(_ipv4_fragments(SRC2, 50000, DST2, 5202, k + 1)):
            sent.append((t + 0.0002 * i, ip))
            if not (k % 4 == 0 and i == 3):
                got.append((t + 0.0002 * i + 0.005, ip))
    write_pcap(d / "router1-flow2.pcap", sent)
    write_pcap(d / "receiver-flow2.pcap", got)
    _iperf3(d, "flow1", tcp_bps=0.8e6)
    _iperf3(d, "flow2", udp=(3.0e6, 25.0, 1.0))
    (d / "COMPLETE").write_text("x\n")
    df = dataset.load_campaign(root, jobs=1, progress=False)
    u = _row(df, "udp_fairness", 2)
    # window [1.505, 2.000]: datagram k whole at 1.511 + 0.01 k -> k = 0..48; whole unless k % 4 == 0 (13 of them)
    w = 2.000 - 1.505
    assert u.overlap_goodput_mbps == pytest.approx(36 * 8192 * 8 / w / 1e6, rel=1e-6)
    assert u.data_pkts == 100                       # first fragments at router1: one per datagram sent
    # the packet path (runs without udp_len_bytes) would count each first fragment that arrived, whole datagram or
    # not, by its IP payload: 50 x 1472 bytes in the window, not the 36 datagrams the application received
    from analysis.flows import split_flows
    f = roundrobin._pick_udp(split_flows(runmeta.read_capture(d / "router1-flow2.pcap")), 5202)
    t0 = float(f.data["ts"].min())
    old = roundrobin._udp_delivered_mbps(runmeta.read_capture(d / "receiver-flow2.pcap"), f, t0, t0 + w)
    assert old == pytest.approx(50 * 1472 * 8 / w / 1e6, rel=1e-6)
