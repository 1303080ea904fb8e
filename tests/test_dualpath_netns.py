"""Dual-path families (001, 003) on the real netns backend (root; CI runs it): testbed/dualpath.sh builds the
topology files, capture_tools/run_dualpath.sh records single-path TCP and MPTCP runs, and the captures show what
the paths did. Flows are short (4-8 s)."""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
from pathlib import Path

import dpkt
import pytest

from tests.netns_helpers import namespaces

ROOT = Path(__file__).resolve().parents[1]
DUALPATH = ROOT / "testbed" / "dualpath.sh"
RUN = ROOT / "capture_tools" / "run_dualpath.sh"
TOOLS = ["iperf3", "tcpdump", "iptables", "jq", "tc", "ping", "ethtool", "nstat", "mptcpize"]

pytestmark = [
    pytest.mark.netns,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root"),
    pytest.mark.skipif(any(shutil.which(t) is None for t in TOOLS),
                       reason="testbed tools missing (MPTCP: apt-get install mptcpize)"),
]
PREFIX = f"dp{os.getpid() % 10000}-"
ENV = dict(os.environ, MPCC_NS_PREFIX=PREFIX)
DATA_PORT, FLOOD_PORT = 5201, 5202


def _namespaces() -> list[str]:
    return namespaces(PREFIX)


def _run(out: Path, *args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(RUN), "--backend", "netns", "--out", str(out), *args], env=ENV, capture_output=True,
                          text=True, timeout=timeout)


def _goodput_mbps(run_dir: Path) -> float:
    srv = json.loads((run_dir / "iperf3" / "flow1-server.json").read_text())
    return srv["end"]["sum_received"]["bits_per_second"] / 1e6


def _packets(pcap: Path):
    """(ts, ip, l4) of every IPv4 packet of a capture (snaplen 128: payload lengths come from the IP header)."""
    with open(pcap, "rb") as f:
        for ts, buf in dpkt.pcap.Reader(f):
            eth = dpkt.ethernet.Ethernet(buf)
            if isinstance(eth.data, dpkt.ip.IP):
                yield ts, eth.data, eth.data.data


def _tcp_data_pkts(pcap: Path, port: int = DATA_PORT) -> dict:
    """Data segments (payload > 0) towards ``port`` per source address:port."""
    n: dict = {}
    for _, ip, tcp in _packets(pcap):
        if isinstance(tcp, dpkt.tcp.TCP) and tcp.dport == port and ip.len - ip.hl * 4 - tcp.off * 4 > 0:
            key = f"{dpkt.utils.inet_to_str(ip.src)}:{tcp.sport}"
            n[key] = n.get(key, 0) + 1
    return n


def _ping_rtts(path: Path) -> list[float]:
    return [float(line.split("time=")[1].split()[0]) for line in path.read_text().splitlines() if "time=" in line]


@pytest.fixture(scope="module", autouse=True)
def no_leftovers():
    yield
    subprocess.run([str(DUALPATH), "down", "--family", "003"], env=ENV, capture_output=True)
    subprocess.run([str(DUALPATH), "down", "--family", "001"], env=ENV, capture_output=True)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The runs the tests look at, recorded once: 003 MPTCP 6 s; 003 TCP on path 1, 5 s, queue 1000 and 50;
    003 MPTCP + 50-packet queue with an 80 Mbit/s flood from 2 to 6 s of 8; 001 TCP on WiFi (path 2), bic, 4 s."""
    base = tmp_path_factory.mktemp("dualpath")
    spec = {
        "mptcp": ["--family", "003", "--experiment", "scenario", "--transport", "mptcp", "--duration-s", "6"],
        "tcp_q1000": ["--family", "003", "--experiment", "scenario", "--transport", "tcp", "--tcp-path", "1",
                      "--duration-s", "5", "--path1-buffer-pkts", "1000", "--path2-buffer-pkts", "1000"],
        "tcp_q50": ["--family", "003", "--experiment", "scenario", "--transport", "tcp", "--tcp-path", "1",
                    "--duration-s", "5", "--path1-buffer-pkts", "50", "--path2-buffer-pkts", "50"],
        "flood": ["--family", "003", "--experiment", "resilience", "--transport", "mptcp", "--duration-s", "8",
                  "--path1-buffer-pkts", "50", "--path2-buffer-pkts", "50",
                  "--udp-flood-mbps", "80", "--udp-flood-start-s", "2", "--udp-flood-end-s", "6"],
        "wifi_bic": ["--family", "001", "--experiment", "buffer_sweep", "--transport", "tcp", "--tcp-path", "2",
                     "--cc", "bic", "--duration-s", "4", "--path1-buffer-bytes", "50000",
                     "--path2-buffer-bytes", "50000"],
    }
    out = {}
    for name, args in spec.items():
        d = base / name
        res = _run(d, *args)
        out[name] = (d, res)
        assert _namespaces() == [], (name, _namespaces())
    return out


def _complete(runs, name) -> Path:
    d, res = runs[name]
    assert res.returncode == 0, (name, res.stderr[-2000:], (d / "capture.log").read_text()[-2000:])
    assert (d / "COMPLETE").exists()
    return d


def test_build_and_teardown_leave_no_namespaces():
    for fam, n_addr in (("003", "10.103"), ("001", "10.101")):
        up = subprocess.run([str(DUALPATH), "up", "--family", fam], env=ENV, capture_output=True, text=True, timeout=60)
        assert up.returncode == 0, up.stderr
        applied = json.loads(up.stdout)
        assert applied["queue_mechanism"].startswith("htb+") and applied["shaper"] == "htb"
        assert sorted(_namespaces()) == sorted(PREFIX + n for n in ("client", "sw1", "sw2", "server"))
        ex = lambda node, *cmd: subprocess.run([str(DUALPATH), "exec", node, "--", *cmd], env=ENV,  # noqa: E731
                                               capture_output=True, text=True, timeout=30)
        rules = ex("client", "ip", "rule").stdout
        assert f"from {n_addr}.2.2 lookup 102" in rules and f"from {n_addr}.1.2 lookup 101" in rules
        assert "subflow" in ex("client", "ip", "mptcp", "endpoint").stdout
        for k in (1, 2):   # each source address reaches the service address over its own path
            ping = ex("client", "ping", "-n", "-c", "2", "-i", "0.2", "-I", f"{n_addr}.{k}.2", f"{n_addr}.100.1")
            assert ping.returncode == 0, ping.stdout
        qd = ex("sw1", "tc", "qdisc", "show").stdout
        assert "htb 1:" in qd and ("pfifo 10:" in qd if fam == "003" else "bfifo 10:" in qd)
        down = subprocess.run([str(DUALPATH), "down", "--family", fam], env=ENV, capture_output=True, text=True)
        assert down.returncode == 0 and _namespaces() == []


def test_features_report_mptcp_and_ovs():
    res = subprocess.run([str(DUALPATH), "features"], env=ENV, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    f = json.loads(res.stdout)
    assert f["htb"] is True and f["mptcp"]["enabled"] is True and "default" in f["mptcp"]["available_schedulers"]
    assert f["ovs"]["used"] is False and f["ovs"]["reason"]
    assert _namespaces() == []


def test_mptcp_uses_both_paths_and_beats_the_faster_path(runs):
    d = _complete(runs, "mptcp")
    for f in ("client-path1.pcap", "client-path2.pcap", "server-path1.pcap", "server-path2.pcap", "meta.json",
              "iperf3/flow1-client.json", "iperf3/flow1-server.json", "ss/flow1.txt", "ss/mptcp.txt",
              "ping/path1.txt", "ping/path2.txt", "switches/sw1.txt", "switches/sw2.txt", "nstat/client.txt"):
        assert (d / f).exists(), f
    assert (d / "ss" / "flow1.txt").read_text().startswith("# ts=")
    # both subflows carry data: data segments per client interface (the sender side), from the captures
    per_if = {k: _tcp_data_pkts(d / f"client-path{k}.pcap") for k in (1, 2)}
    busy = {k: [s for s, n in per_if[k].items() if n >= 20] for k in (1, 2)}
    assert len(busy[1]) == 1 and len(busy[2]) == 1, per_if
    assert per_if[1][busy[1][0]] > 1000 and per_if[2][busy[2][0]] > 200, per_if
    meta = json.loads((d / "meta.json").read_text())
    assert meta["mptcp"]["subflows_seen"] == 2 and meta["mptcp"]["scheduler"] == "default"
    assert meta["mptcp"]["counters_client"].get("MPTcpExtMPJoinSynAckRx", 0) >= 1
    assert meta["queue_mechanism"] == "htb+pfifo on a forwarding namespace"
    assert meta["self_check"]["ok"] is True, meta["self_check"]
    assert meta["host_load"]["ncpu"] >= 1
    # goodput above the faster path's single-path TCP goodput (path 1, same queue)
    tcp = _complete(runs, "tcp_q1000")
    assert _goodput_mbps(d) > _goodput_mbps(tcp), (_goodput_mbps(d), _goodput_mbps(tcp))


def test_single_path_tcp_stays_on_its_path(runs):
    d = _complete(runs, "tcp_q1000")
    assert sum(_tcp_data_pkts(d / "client-path1.pcap").values()) > 2000
    assert _tcp_data_pkts(d / "client-path2.pcap") == {}
    assert 9.5 * 0.9 <= _goodput_mbps(d) <= 10.0
    meta = json.loads((d / "meta.json").read_text())
    assert meta["single_path_ok"] is True and meta["mptcp"] is None
    # study 001 over WiFi (path 2): only path 2, at about its 4 Mbit/s, with bic (BPF port where the kernel lacks it)
    d, res = runs["wifi_bic"]
    if res.returncode == 3:
        assert "bic: not available on this kernel" in (d / "SKIPPED").read_text()
        return
    d = _complete(runs, "wifi_bic")
    assert _tcp_data_pkts(d / "client-path1.pcap") == {}
    assert sum(_tcp_data_pkts(d / "client-path2.pcap").values()) > 500
    assert 4 * 0.8 <= _goodput_mbps(d) <= 4.1
    meta = json.loads((d / "meta.json").read_text())
    assert meta["cc_impl"]["bic"]["implementation"] in ("kernel", "bpf")
    assert meta["queues"]["path2"]["to_server"]["leaf"]["kind"] == "bfifo"


def test_small_queue_lowers_rtt_under_load(runs):
    """A 50-packet queue holds at most ~60 ms at 10 Mbit/s, a 1000-packet one up to ~1.2 s: with a bulk TCP flow on
    path 1 the pings over path 1 wait much longer behind the larger queue."""
    big = _ping_rtts(_complete(runs, "tcp_q1000") / "ping" / "path1.txt")
    small = _ping_rtts(_complete(runs, "tcp_q50") / "ping" / "path1.txt")
    assert len(big) > 15 and len(small) > 15
    assert statistics.median(small) < 80, small
    assert statistics.median(big) > 1.5 * statistics.median(small), (statistics.median(big), statistics.median(small))


def test_udp_flood_window_in_the_captures(runs):
    d = _complete(runs, "flood")
    syn = min(ts for k in (1, 2) for ts, ip, tcp in _packets(d / f"client-path{k}.pcap")
              if isinstance(tcp, dpkt.tcp.TCP) and tcp.dport == DATA_PORT and tcp.flags & dpkt.tcp.TH_SYN)
    flood = [ts for ts, ip, udp in _packets(d / "client-path1.pcap")
             if isinstance(udp, dpkt.udp.UDP) and udp.dport == FLOOD_PORT]
    assert len(flood) > 10000   # 80 Mbit/s for 4 s: ~27000 datagrams
    assert abs(flood[0] - syn - 2) <= 1.0 and abs(flood[-1] - syn - 6) <= 1.0, (flood[0] - syn, flood[-1] - syn)
    assert not any(isinstance(udp, dpkt.udp.UDP) and udp.dport == FLOOD_PORT
                   for _, ip, udp in _packets(d / "client-path2.pcap"))   # the flood uses path 1 only
    meta = json.loads((d / "meta.json").read_text())
    assert meta["flood"]["path"] == 1 and meta["flood"]["observed"]["client_pkts"] == len(flood)
    assert meta["queues"]["path1"]["to_server"]["leaf"]["drops"] > 1000   # the 50-packet queue overflows
    assert meta["mptcp"]["subflows_seen"] == 2
    assert json.loads((d / "iperf3" / "flood-server.json").read_text())["end"]["sum"]["packets"] > 0


def test_redundant_scheduler_is_skipped_with_the_reason(tmp_path):
    avail = Path("/proc/sys/net/mptcp/available_schedulers").read_text().split()
    if "redundant" in avail:
        pytest.skip("this kernel has the redundant scheduler: the run would be recorded")
    res = _run(tmp_path / "red", "--family", "001", "--experiment", "buffer_sweep", "--transport", "mptcp",
               "--mptcp-scheduler", "redundant", "--duration-s", "4")
    assert res.returncode == 3, res.stderr
    reason = (tmp_path / "red" / "SKIPPED").read_text().strip()
    assert reason == ("mptcp scheduler redundant: not available on this kernel (available: "
                      f"{', '.join(avail)}) — skipped")
    assert not (tmp_path / "red" / "COMPLETE").exists() and _namespaces() == []


@pytest.mark.parametrize("args,msg", [
    (["--transport", "quic"], "--transport must be tcp or mptcp"),
    (["--transport", "mptcp", "--path1-rate-mbit", "0"], "--path1-rate-mbit"),
    (["--transport", "mptcp", "--path2-buffer-pkts", "-1"], "--path2-buffer-pkts"),
    (["--transport", "mptcp", "--path1-buffer-bytes", "100"], "--path1-buffer-bytes"),
    (["--transport", "mptcp", "--path1-buffer-pkts", "5", "--path1-buffer-bytes", "5000"], "not both"),
    (["--transport", "tcp", "--tcp-path", "3"], "--tcp-path"),
    (["--transport", "tcp", "--mptcp-scheduler", "redundant"], "--mptcp-scheduler is for"),
    (["--transport", "mptcp", "--udp-flood-mbps", "80", "--udp-flood-start-s", "5", "--udp-flood-end-s", "3"], "smaller"),
    (["--transport", "mptcp", "--udp-flood-mbps", "80"], "give all of"),
    (["--transport", "mptcp", "--cc", "vegas"], "--cc must be"),
    (["--transport", "mptcp", "--ping-interval-s", "0"], "--ping-interval-s"),
])
def test_bad_values_fail_before_any_root_command(tmp_path, args, msg):
    out = tmp_path / "bad"
    res = _run(out, "--family", "003", "--experiment", "scenario", "--duration-s", "4", *args)
    assert res.returncode == 2 and res.stderr.startswith("error:") and msg in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert not out.exists() and _namespaces() == []


@pytest.mark.parametrize("args,msg", [
    (["up", "--family", "003", "--path1-rate-mbit", "0"], "--path1-rate-mbit"),
    (["up", "--family", "003", "--path2-buffer-pkts", "-1"], "--path2-buffer-pkts"),
    (["up", "--family", "042"], "no topology for family 042"),
    (["up"], "up needs --family"),
    (["up", "--family", "003", "--bogus", "1"], "unknown option"),
    (["up", "--family", "003", "--queue-disc", "red"], "--queue-disc must be auto, pfifo, netem or fq_codel"),
    (["up", "--family", "003", "--queue-disc"], "option --queue-disc needs a value"),
    (["up", "--family", "003", "--queue-disc", "fq_codel", "--path1-buffer-bytes", "30000"], "fq_codel's limit counts packets"),
])
def test_builder_rejects_bad_values_before_any_root_command(args, msg):
    res = subprocess.run([str(DUALPATH), *args], env=ENV, capture_output=True, text=True, timeout=30)
    assert res.returncode == 2 and res.stderr.startswith("error:") and msg in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and _namespaces() == []


def test_builder_rejects_a_bad_topology_file(tmp_path):
    topo = json.loads((ROOT / "testbed/families/003/topology.json").read_text())
    topo["links"][0]["a"]["addr"] = "10.103.1.300"
    topo["paths"]["2"]["rate_mbit"] = 0
    f = tmp_path / "topology.json"
    f.write_text(json.dumps(topo))
    res = subprocess.run([str(DUALPATH), "up", "--topology", str(f)], env=ENV, capture_output=True, text=True)
    assert res.returncode == 2 and "bad IPv4 address" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert _namespaces() == []


def test_nothing_left_behind(runs):
    """After all runs: no namespaces of ours, no shim state, and no congestion-control holder of ours (every holder
    ccctl.sh still lists is a live process)."""
    assert _namespaces() == []
    assert not Path(f"/run/mpcc-dualpath/{PREFIX}").exists()
    state = Path(os.environ.get("MPCC_CC_STATE", "/run/mpcc-cc"))
    for holders in state.glob("*.holders"):
        for line in holders.read_text().split():
            assert Path(f"/proc/{line.split(':')[0]}").exists(), (holders.name, line)
