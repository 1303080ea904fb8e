"""Study 004's chain testbed on the real netns backend (root; CI runs it): testbed/chain.sh builds the four topology
files of testbed/families/004, capture_tools/run_chain.sh records one short run per topology (docs/families.md
"Study 004"), and the captures, iperf3 and the link counters show what the links did. The four runs (6-s flows) run
at once, each under its own namespace prefix."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import dpkt
import pytest

from tests.netns_helpers import complete_run, ip_packets, namespaces, root_tool_traps, without_options

ROOT = Path(__file__).resolve().parents[1]
CHAIN = ROOT / "testbed" / "chain.sh"
RUN = ROOT / "capture_tools" / "run_chain.sh"
TOPO_DIR = ROOT / "testbed" / "families" / "004"
TOOLS = ["iperf3", "tcpdump", "iptables", "iptables-save", "jq", "tc", "ping", "ethtool", "ss"]
TOPOLOGIES = ("client_server", "multihop_varied", "multihop_uniform", "bottleneck")

pytestmark = [
    pytest.mark.netns,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root"),
    pytest.mark.skipif(any(shutil.which(t) is None for t in TOOLS), reason="testbed tools missing"),
]
PREFIX = f"tc4{os.getpid() % 1000}"          # + a letter per run, e.g. tc4123a-
MTU = 592
DURATION = 6
ERROR_RATE = 0.02
# (cc, extra options) per topology: multihop_uniform at 4 Mbit/s on every link
SPEC = {"client_server": ("westwood_e", []), "multihop_varied": ("westwood", []),
        "multihop_uniform": ("westwood_e", ["--bandwidth-mbit", "4"]), "bottleneck": ("westwood", [])}


def _prefix(tag: str) -> str:
    return f"{PREFIX}{tag}-"


def _namespaces(prefix: str = PREFIX) -> list[str]:
    return namespaces(prefix)


def _env(tag: str, **extra) -> dict:
    return dict(os.environ, MPCC_NS_PREFIX=_prefix(tag), **extra)


def _topology(name: str) -> dict:
    return json.loads((TOPO_DIR / f"{name}.json").read_text())


def _path_links(topo: dict, flow: dict, bandwidth: float | None) -> list[dict]:
    links = {link["name"]: dict(link) for link in topo["links"]}
    for name in topo.get("bandwidth_links", []) if bandwidth is not None else []:
        links[name]["rate_mbit"] = bandwidth
    return [links[n] for n in flow["path"]]


@pytest.fixture(scope="module", autouse=True)
def no_leftovers():
    yield
    for tag in ("a", "b", "c", "d", "u", "s"):
        subprocess.run([str(CHAIN), "down"], env=_env(tag), capture_output=True)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One 6-s run per topology, all four at once (separate namespace prefixes), error rate 0.02."""
    base = tmp_path_factory.mktemp("chain")
    procs = {}
    for tag, topo in zip("abcd", TOPOLOGIES):
        cc, extra = SPEC[topo]
        d = base / topo
        args = [str(RUN), "--backend", "netns", "--out", str(d), "--family", "004", "--experiment", topo,
                "--topology", topo, "--cc", cc, "--duration-s", str(DURATION), "--error-rate", str(ERROR_RATE), *extra]
        procs[topo] = (d, subprocess.Popen(args, env=_env(tag), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                           text=True))
    out = {}
    for topo, (d, p) in procs.items():
        _, err = p.communicate(timeout=DURATION + 100)
        out[topo] = (d, p.returncode, err)
    assert _namespaces() == [], _namespaces()
    return out


def _complete(runs, topo) -> tuple[Path, dict]:
    d, rc, err = runs[topo]
    return complete_run(d, rc, err, topo)


@pytest.mark.parametrize("topo", TOPOLOGIES)
def test_run_directory_and_meta(runs, topo):
    d, meta = _complete(runs, topo)
    t = _topology(topo)
    cc, _ = SPEC[topo]
    nflows = len(t["flows"])
    for k in range(1, nflows + 1):
        for f in (f"flow{k}-sender.pcap", f"flow{k}-receiver.pcap", f"iperf3/flow{k}-client.json",
                  f"iperf3/flow{k}-server.json", f"ss/flow{k}.txt"):
            assert (d / f).stat().st_size > 0, f
        assert (d / f"ss/flow{k}.txt").read_text().startswith("# ts=")
        client = json.loads((d / f"iperf3/flow{k}-client.json").read_text())
        assert client["start"]["connecting_to"]["port"] == 5200 + k
        assert client["start"]["test_start"]["duration"] == DURATION
    for link in t["links"]:
        assert "pfifo" in (d / f"links/{link['name']}.txt").read_text()
    assert (d / "capture.log").exists()
    assert meta["status"] == "complete"
    assert meta["params"] == {"family": "004", "experiment": topo, "topology": topo, "cc": cc, "error_rate": ERROR_RATE,
                              "bandwidth_mbit": 4 if topo == "multihop_uniform" else None, "duration_s": DURATION,
                              "rep": 1, "backend": "netns", "mtu": MTU}
    for key in ("delay_mechanism", "queue_mechanism", "self_check", "cc_impl", "host_load", "ss_interval_s",
                "capture_kernel_drops", "kernel", "start_time", "tool_versions", "flow_start_epoch"):
        assert meta.get(key) is not None, key
    assert meta["queue_mechanism"].startswith("htb+") and meta["ss_interval_s"] == 0.1
    assert meta["cc_impl"][cc]["implementation"] in ("kernel", "bpf")
    assert meta["capture_kernel_drops"] == 0
    assert meta["topology"]["file"] == f"testbed/families/004/{topo}.json"
    assert meta["topology"]["sha256"] == hashlib.sha256((TOPO_DIR / f"{topo}.json").read_bytes()).hexdigest()
    # links as applied: the file's values, the error rate on each flow's error link (side a -> b) and 0 elsewhere
    assert [link["name"] for link in meta["links"]] == [link["name"] for link in t["links"]]
    for applied, link in zip(meta["links"], t["links"]):
        rate = 4 if topo == "multihop_uniform" else link["rate_mbit"]
        assert (applied["a"], applied["b"], applied["rate_mbit"], applied["delay_ms"], applied["buffer_pkts"]) == \
            (link["a"], link["b"], rate, link["delay_ms"], link["buffer_pkts"])
        if link["error_flows"]:
            assert applied["error_rate"] == ERROR_RATE and applied["error_direction"] == f"{link['a']}->{link['b']}"
        else:
            assert applied["error_rate"] == 0 and applied["error_direction"] is None
        q = meta["queues"][link["name"]]
        for direction in ("a_to_b", "b_to_a"):
            assert q[direction]["leaf"]["kind"] == "pfifo" and q[direction]["leaf"]["limit"] == link["buffer_pkts"]
            assert q[direction]["root"]["kind"] == "htb"
        assert q["a_to_b"]["leaf"]["packets"] > 0
    assert [f["flow"] for f in meta["flows"]] == list(range(1, nflows + 1))
    for f, tf in zip(meta["flows"], t["flows"]):
        for key in ("sender", "receiver", "sender_addr", "receiver_addr", "port", "sender_if", "receiver_if"):
            assert f[key] == tf[key], key
        assert f["error_link"] == tf["path"][0]   # docs/families.md: the flow's first link


@pytest.mark.parametrize("topo", TOPOLOGIES)
def test_self_check_rtt_is_twice_the_path_delay(runs, topo):
    _, meta = _complete(runs, topo)
    t = _topology(topo)
    assert meta["self_check"]["ok"] is True, meta["self_check"]
    for flow in t["flows"]:
        expected = 2 * sum(link["delay_ms"] for link in _path_links(t, flow, None))
        sc = meta["self_check"][f"flow{flow['flow']}"]
        assert sc["expected_rtt_ms"] == expected
        for rtt in (sc["rtt_median_ms"], sc["rtt_avg_ms"]):
            assert abs(rtt - expected) <= max(1.0, 0.05 * expected), (flow["flow"], rtt, expected)


@pytest.mark.parametrize("topo", TOPOLOGIES)
def test_packets_fit_the_592_byte_mtu(runs, topo):
    d, meta = _complete(runs, topo)
    for f in meta["flows"]:
        k, port = f["flow"], f["port"]
        for side in ("sender", "receiver"):
            lens, mss, data = [], [], 0
            for _, ip in ip_packets(d / f"flow{k}-{side}.pcap"):
                lens.append(ip.len)
                tcp = ip.data
                if isinstance(tcp, dpkt.tcp.TCP) and port in (tcp.dport, tcp.sport):
                    if tcp.flags & dpkt.tcp.TH_SYN:
                        mss += [int.from_bytes(v, "big") for o, v in dpkt.tcp.parse_opts(tcp.opts) if o == dpkt.tcp.TCP_OPT_MSS]
                    data += tcp.dport == port and ip.len - ip.hl * 4 - tcp.off * 4 > 0
            assert lens and max(lens) <= MTU, (side, max(lens))
            assert max(lens) == MTU   # full-sized segments: the MTU, not a smaller default, limits them
            assert set(mss) == {MTU - 40}, mss
            assert data > 20, (side, data)


@pytest.mark.parametrize("topo", TOPOLOGIES)
def test_goodput_below_the_slowest_link(runs, topo):
    d, meta = _complete(runs, topo)
    t = _topology(topo)
    for flow in t["flows"]:
        k = flow["flow"]
        slowest = min(link["rate_mbit"] for link in _path_links(t, flow, 4 if topo == "multihop_uniform" else None))
        assert meta["flows"][k - 1]["path_min_rate_mbit"] == slowest
        server = json.loads((d / f"iperf3/flow{k}-server.json").read_text())["end"]["sum_received"]
        client = json.loads((d / f"iperf3/flow{k}-client.json").read_text())["end"]["sum_received"]
        for rcv in (server, client):
            assert 0 < rcv["bits_per_second"] / 1e6 <= slowest, (k, rcv["bits_per_second"], slowest)


def test_bottleneck_both_flows_carry_data(runs):
    d, meta = _complete(runs, "bottleneck")
    got = {}
    for k in (1, 2):
        server = json.loads((d / f"iperf3/flow{k}-server.json").read_text())
        got[k] = server["end"]["sum_received"]["bytes"]
        assert meta["data_pkts"][f"flow{k}"]["receiver"] > 20, meta["data_pkts"]
    assert all(v > 20 * 540 for v in got.values()), got
    # started together: both data connections' first SYNs within 2 s of each other
    syns = []
    for k, port in ((1, 5201), (2, 5202)):
        syns.append(min(ts for ts, ip in ip_packets(d / f"flow{k}-sender.pcap")
                        if isinstance(ip.data, dpkt.tcp.TCP) and ip.data.dport == port and ip.data.flags & dpkt.tcp.TH_SYN))
    assert abs(syns[0] - syns[1]) < 2, syns
    # both share the 20-packet bottleneck L3
    assert meta["queues"]["L3"]["a_to_b"]["leaf"]["limit"] == 20


def test_error_model_drops_only_on_error_links(runs):
    arrivals = drops = 0
    for topo in TOPOLOGIES:
        _, meta = _complete(runs, topo)
        t = _topology(topo)
        for link in t["links"]:
            em = meta["error_model"][link["name"]]
            assert em["arrivals"] > 0, (topo, link["name"])
            if link["error_flows"]:
                arrivals += em["arrivals"]
                drops += em["drops"]
            else:
                assert em["drops"] == 0, (topo, link["name"], em)
    # ~1500 packets at 0.02: the observed rate is near the configured one (binomial sd ~0.004)
    assert arrivals > 500 and 0.005 <= drops / arrivals <= 0.045, (drops, arrivals)


def test_builder_up_exec_reapply_down():
    env = _env("u")
    up = subprocess.run([str(CHAIN), "up", "--topology-name", "client_server", "--error-rate", "0.1"], env=env,
                        capture_output=True, text=True, timeout=60)
    assert up.returncode == 0, up.stderr
    applied = json.loads(up.stdout)
    assert applied["error_rate"] == 0.1 and applied["mtu"] == MTU and applied["links"][0]["error_rate"] == 0.1
    assert sorted(_namespaces(_prefix("u"))) == sorted(_prefix("u") + n for n in ("n0", "n1", "l1"))

    def ex(node, *cmd):
        return subprocess.run([str(CHAIN), "exec", node, "--", *cmd], env=env, capture_output=True, text=True,
                              timeout=30)
    for node, dev in (("n0", "n0-l1"), ("l1", "l1-n0"), ("l1", "l1-n1"), ("n1", "n1-l1")):
        assert f"mtu {MTU} " in ex(node, "ip", "link", "show", dev).stdout
        k = ex(node, "ethtool", "-k", dev).stdout
        for feat in ("tcp-segmentation-offload", "generic-segmentation-offload", "generic-receive-offload"):
            assert f"{feat}: off" in k, (dev, feat)
    qd = ex("l1", "tc", "qdisc", "show").stdout
    assert qd.count("htb 1:") == 2 and qd.count("pfifo 10:") == 2 and "limit 50p" in qd
    assert "rate 500Kbit" in ex("l1", "tc", "class", "show", "dev", "l1-n1").stdout
    fw = ex("l1", "iptables", "-S", "FORWARD").stdout
    assert "-i l1-n0 -m statistic --mode random --probability 0.1" in fw and "NFQUEUE" in fw
    assert "l1-n1 -m statistic" not in fw   # the reverse (ACK) direction has no error model
    ping = ex("n0", "ping", "-n", "-c", "3", "-i", "0.2", "10.104.12.1")   # the error link drops 10 % of them
    assert int(re.search(r"(\d+) received", ping.stdout).group(1)) >= 1, ping.stdout
    # the same prefix again: only the link parameters change
    up2 = subprocess.run([str(CHAIN), "up", "--topology-name", "client_server", "--error-rate", "0"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert up2.returncode == 0, up2.stderr
    assert "statistic" not in ex("l1", "iptables", "-S", "FORWARD").stdout
    down = subprocess.run([str(CHAIN), "down"], env=env, capture_output=True, text=True, timeout=60)
    assert down.returncode == 0 and _namespaces(_prefix("u")) == []
    assert not Path(f"/run/mpcc-chain/{_prefix('u')}").exists()


def test_store_and_forward_links_add_each_packets_transmission_time(tmp_path):
    """--store-and-forward (campaign key link_model: store-and-forward): a link delays side a's packets by their
    transmission time at its rate as well (592 B at 0.5 Mbit/s: 9.472 ms), side b's by a 52-byte ACK's (0.832 ms),
    as an ns-2 link delivers a packet after its last bit; ping's RTT over client_server grows by both, and the run's
    delay from the first link's queue is ns-2's (and the paper's Table 1) 59.472 ms (docs/ns2-004.md)."""
    from analysis.families import chain as fam
    env = _env("s")
    up = subprocess.run([str(CHAIN), "up", "--topology-name", "client_server", "--error-rate", "0",
                         "--store-and-forward"], env=env, capture_output=True, text=True, timeout=60)
    assert up.returncode == 0, up.stderr
    link = json.loads(up.stdout)["links"][0]
    assert json.loads(up.stdout)["store_and_forward"] is True
    assert link["tx_ms_a"] == pytest.approx(9.472) and link["tx_ms_b"] == pytest.approx(0.832)
    rtt = subprocess.run([str(CHAIN), "exec", "n0", "--", "ping", "-n", "-c", "5", "-i", "0.3", "-s", "564",
                          "10.104.12.1"], env=env, capture_output=True, text=True, timeout=30).stdout
    avg = float(re.search(r"= [\d.]+/([\d.]+)/", rtt).group(1))
    assert avg == pytest.approx(100 + 9.472 + 0.832, abs=1.0), rtt
    fw = subprocess.run([str(CHAIN), "exec", "l1", "--", "iptables", "-S", "FORWARD"], env=env, capture_output=True,
                        text=True, timeout=30).stdout
    assert "-i l1-n0 -j NFQUEUE --queue-num 0" in fw and "-i l1-n1 -j NFQUEUE --queue-num 1" in fw
    qd = subprocess.run([str(CHAIN), "exec", "l1", "--", "tc", "-d", "qdisc", "show", "dev", "l1-n1"], env=env,
                        capture_output=True, text=True, timeout=30).stdout
    assert "overhead -14" in qd        # the rate counts IP bytes, as ns-2's: 592-byte packets every 9.472 ms
    assert subprocess.run([str(CHAIN), "down"], env=env, capture_output=True, timeout=60).returncode == 0
    d = tmp_path / "sf"
    r = subprocess.run([str(RUN), "--backend", "netns", "--out", str(d), "--family", "004", "--experiment",
                        "client_server", "--topology", "client_server", "--cc", "westwood", "--duration-s",
                        str(DURATION), "--error-rate", "0.01", "--link-model", "store-and-forward"],
                       env=env, capture_output=True, text=True, timeout=DURATION + 100)
    d, meta = complete_run(d, r.returncode, r.stderr, "client_server store-and-forward")
    assert meta["link_model"] == "store-and-forward" and meta["params"]["link_model"] == "store-and-forward"
    assert meta["self_check"]["ok"] and meta["self_check"]["flow1"]["expected_rtt_ms"] == pytest.approx(110.304)
    assert (d / "flow1-first-link.pcap").is_file()
    row = fam.analyze_run(d).iloc[0]
    assert row["link_model"] == "store-and-forward"
    assert row["delay_from_dequeue_mean_ms"] == pytest.approx(59.472, abs=0.5)     # ns-2's '-' delay, Table 1's
    assert row["delay_mean_ms"] >= row["delay_from_dequeue_mean_ms"] - 0.1        # the sender's side adds the queue
    assert _namespaces(_prefix("s")) == []


# ---------------------------------------------------------------------------------------------------------------
# bad input: exit 2, one "error:" line, and not a single root command (the tools that touch the system are replaced
# by stand-ins that record any call)
ROOT_TOOLS = ("ip", "tc", "iptables", "iptables-save", "ethtool", "tcpdump", "iperf3", "ping", "bpftool", "ss",
              "sysctl", "make")


@pytest.fixture()
def trap_root_tools(tmp_path):
    calls = tmp_path / "calls.log"
    return _env("x", PATH=root_tool_traps(tmp_path / "bin", calls, ROOT_TOOLS)), calls


GOOD = ["--family", "004", "--experiment", "client_server", "--topology", "client_server", "--cc", "westwood",
        "--duration-s", "6"]


@pytest.mark.parametrize("args,msg", [
    (GOOD + ["--error-rate", "0.6"], "--error-rate must be a fraction in [0, 0.5]"),
    (GOOD + ["--error-rate", "-0.1"], "--error-rate"),
    (GOOD + ["--error-rate", "1e-2"], "--error-rate"),
    (GOOD + ["--bandwidth-mbit", "4"], "--bandwidth-mbit applies only to a topology with bandwidth_links"),
    (without_options(GOOD, "--experiment", "--topology") + ["--experiment", "multihop_uniform", "--topology",
                                                     "multihop_uniform", "--bandwidth-mbit", "0"], "--bandwidth-mbit must be"),
    (without_options(GOOD, "--topology") + ["--topology", "bottleneck"], "--topology must equal the experiment's topology"),
    (without_options(GOOD, "--experiment", "--topology") + ["--experiment", "ring", "--topology", "ring"], "--experiment must be one of"),
    (without_options(GOOD, "--family") + ["--family", "003"], "--family must be 004"),
    (without_options(GOOD, "--cc") + ["--cc", "vegas"], "--cc must be one of reno cubic bbr bic westwood westwood_e"),
    (without_options(GOOD, "--cc"), "--cc must be one of"),
    (without_options(GOOD, "--duration-s") + ["--duration-s", "2.5"], "--duration-s must be a positive integer"),
    (GOOD + ["--rep", "0"], "--rep must be a positive integer"),
    (GOOD + ["--backend", "vagrant"], "--backend must be netns"),
    (GOOD + ["--error-rate", "0.1", "--error-rate", "0.2"], "given twice"),
    (GOOD + ["--bogus", "1"], "unknown option --bogus"),
    (GOOD + ["--link-model", "ns2"], "--link-model must be htb or store-and-forward"),
    (GOOD + ["--rep"], "option --rep needs a value"),
])
def test_capture_tool_rejects_bad_values_before_any_root_command(tmp_path, trap_root_tools, args, msg):
    env, calls = trap_root_tools
    out = tmp_path / "bad"
    res = subprocess.run([str(RUN), "--out", str(out), *args], env=env, capture_output=True, text=True, timeout=30)
    assert res.returncode == 2 and res.stderr.startswith("error:") and msg in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert not calls.exists(), calls.read_text()
    assert not out.exists() and _namespaces() == []


def _bad_topology(tmp_path, edit) -> Path:
    t = _topology("bottleneck")
    edit(t)
    f = tmp_path / "t.json"
    f.write_text(json.dumps(t))
    return f


@pytest.mark.parametrize("edit,msg", [
    (lambda t: t["veths"][0]["a"].__setitem__("addr", "10.104.11.300"), "bad IPv4 address"),
    (lambda t: t.__setitem__("mtu", 20), "mtu must be an integer"),
    (lambda t: t["nodes"]["n2"].__setitem__("role", "switch"), "role must be host, router or link"),
    (lambda t: t["links"][2].__setitem__("rate_mbit", 0), "link L3: rate_mbit"),
    (lambda t: t["links"][2].__setitem__("buffer_pkts", 2.5), "link L3: buffer_pkts"),
    (lambda t: t["links"][0].__setitem__("if_a", "l1-n2"), "link L1: if_a must be the interface of l1"),
    (lambda t: t["links"][1].__setitem__("error_flows", [1]), "flow 1: exactly one link"),
    (lambda t: t["flows"][1].__setitem__("path", ["L2", "L4"]), "flow 2: path must lead from n1 to n5"),
    (lambda t: t["flows"][0].__setitem__("sender_addr", "10.104.21.1"), "flow 1: sender_addr must be"),
    (lambda t: t["flows"][1].__setitem__("port", 5201), "flow 2: port must be 5202"),
    (lambda t: t["routes"]["n2"].append({"dst": "10.104.99.0/24", "via": "bad"}), "routes of n2: bad route"),
])
def test_builder_rejects_a_bad_topology_file(tmp_path, trap_root_tools, edit, msg):
    env, calls = trap_root_tools
    res = subprocess.run([str(CHAIN), "up", "--topology", str(_bad_topology(tmp_path, edit))], env=env,
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 2 and res.stderr.startswith("error:") and msg in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert not calls.exists(), calls.read_text()


@pytest.mark.parametrize("args,msg", [
    (["up", "--topology-name", "ring"], "--topology-name must be one of bottleneck client_server"),
    (["up"], "up needs --topology-name"),
    (["up", "--topology-name", "client_server", "--error-rate", "0.51"], "--error-rate must be"),
    (["up", "--topology-name", "bottleneck", "--bandwidth-mbit", "2"], "--bandwidth-mbit applies only"),
    (["up", "--topology-name", "multihop_uniform", "--bandwidth-mbit", "1001"], "--bandwidth-mbit must be"),
    (["up", "--topology-name", "client_server", "--bogus", "1"], "unknown option: --bogus"),
    (["up", "--topology-name", "client_server", "--topology", "x.json"], "not both"),
])
def test_builder_rejects_bad_values_before_any_root_command(trap_root_tools, args, msg):
    env, calls = trap_root_tools
    res = subprocess.run([str(CHAIN), *args], env=env, capture_output=True, text=True, timeout=30)
    assert res.returncode == 2 and res.stderr.startswith("error:") and msg in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert not calls.exists(), calls.read_text()
    assert _namespaces() == []


def test_nothing_left_behind(runs):
    """After the runs: no namespaces or state of ours, and no congestion-control holder of ours (every holder
    ccctl.sh still lists is a live process)."""
    assert _namespaces() == []
    assert not list(Path("/run/mpcc-chain").glob(f"{PREFIX}*"))
    state = Path(os.environ.get("MPCC_CC_STATE", "/run/mpcc-cc"))
    for holders in state.glob("*.holders"):
        for line in holders.read_text().split():
            assert Path(f"/proc/{line.split(':')[0]}").exists(), (holders.name, line)
