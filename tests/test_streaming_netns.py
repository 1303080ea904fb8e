"""Study 002's streaming testbed on the real netns backend (root; CI runs it): capture_tools/run_streaming.sh builds
testbed/families/002/topology.json with testbed/chain.sh and records short runs (docs/families.md "Study 002"): test1
(no background, cubic, 8 s), test5 as the paper ran it (CUBIC and PCC Vivace at once, one client each, 90 Mbit/s of
UDP background with the default generator, D-ITG where installed, 6 s) and test2 with the iperf3 fallback forced (4 s). The runs go one after the other (2 cores: a 90 Mbit/s
background next to another run would measure the machine, not the tool). Nothing is installed here: without ffmpeg
or curl the tests skip with the reason."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import dpkt
import pytest

from tests.netns_helpers import complete_run, ip_packets, namespaces, root_tool_traps, without_options

ROOT = Path(__file__).resolve().parents[1]
CHAIN = ROOT / "testbed" / "chain.sh"
RUN = ROOT / "capture_tools" / "run_streaming.sh"
TOPO_FILE = ROOT / "testbed" / "families" / "002" / "topology.json"
TOOLS = ["iperf3", "tcpdump", "iptables", "jq", "tc", "ping", "ethtool", "ss", "ffprobe"]
MISSING = [t for t in ("ffmpeg", "curl") if shutil.which(t) is None]

pytestmark = [
    pytest.mark.netns,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root"),
    pytest.mark.skipif(bool(MISSING), reason=f"{' and '.join(MISSING)} not installed (apt-get install ffmpeg curl)"),
    pytest.mark.skipif(any(shutil.which(t) is None for t in TOOLS), reason="testbed tools missing"),
]
PREFIX = f"st2{os.getpid() % 1000}"          # + a letter per run, e.g. st2123a-
VIDEO_KBPS = 3600
LINK_MBIT = 100
# tag: (experiment, cc, duration, extra env, background Mbit/s, expected background tool, extra options)
# a and c pass --background-mbps as the campaign runner does (mpcc/families/f002.py: always, 0 for test1)
HAVE_DITG = all(shutil.which(t) for t in ("ITGSend", "ITGRecv", "ITGDec"))
SPEC = {
    "a": ("test1", "cubic", 8, {}, 0, None, ["--background-mbps", "0", "--video-kbps", "3600", "--rep", "1"]),
    "b": ("test5", "cubic+pcc_vivace", 6, {}, 90, "d-itg" if HAVE_DITG else "iperf3", []),
    "c": ("test2", "reno", 4, {"MPCC_BACKGROUND_TOOL": "iperf3"}, 8, "iperf3", ["--background-mbps", "8"]),
}
PARAMS_JSON = {"run_id": "test2__reno__t4s__rep01", "campaign": "pytest", "seed": 1}   # left by the runner (run c)


def _prefix(tag: str) -> str:
    return f"{PREFIX}{tag}-"


def _namespaces(prefix: str = PREFIX) -> list[str]:
    return namespaces(prefix)


def _env(tag: str, **extra) -> dict:
    return dict(os.environ, MPCC_NS_PREFIX=_prefix(tag), **extra)


def _topology() -> dict:
    return json.loads(TOPO_FILE.read_text())


def _addr(ip_bytes: bytes) -> str:
    return ".".join(str(b) for b in ip_bytes)


@pytest.fixture(scope="module", autouse=True)
def no_leftovers():
    yield
    for tag in ("a", "b", "c", "i", "u"):
        subprocess.run([str(CHAIN), "down", "--topology", str(TOPO_FILE)], env=_env(tag), capture_output=True)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("streaming")
    out = {}
    for tag, (exp, cc, dur, extra, _, _, opts) in SPEC.items():
        d = base / f"{exp}-{cc}"
        if tag == "c":
            d.mkdir()
            (d / "params.json").write_text(json.dumps(PARAMS_JSON))
        args = [str(RUN), "--backend", "netns", "--out", str(d), "--family", "002", "--experiment", exp, "--cc", cc,
                "--duration-s", str(dur), *opts]
        p = subprocess.run(args, env=_env(tag, **extra), capture_output=True, text=True, timeout=dur + 180)
        out[tag] = (d, p.returncode, p.stderr)
        assert _namespaces() == [], _namespaces()
    return out


def _complete(runs, tag) -> tuple[Path, dict]:
    d, rc, err = runs[tag]
    return complete_run(d, rc, err, SPEC[tag][1])


def _stream_ccs(tag) -> dict:
    """{stream: its cc}: a cc "a+b" streams a to client 1 and b to client 2 at once (client 3 idle); else all three."""
    cc = SPEC[tag][1]
    return {1: cc.split("+")[0], 2: cc.split("+")[1]} if "+" in cc else {k: cc for k in (1, 2, 3)}


@pytest.mark.parametrize("tag", SPEC)
def test_run_directory_and_meta(runs, tag):
    d, meta = _complete(runs, tag)
    exp, cc, dur, _, bg, tool, _ = SPEC[tag]
    active = _stream_ccs(tag)
    for f in ("server.pcap", *(f"client{k}.pcap" for k in active), "tg.pcap", "sink.pcap", "ss/server.txt",
              "links/shared.txt", "capture.log"):
        assert (d / f).exists(), f
    assert [s["stream"] for s in meta["streams"]] == list(active)
    if len(active) < 3:
        assert not (d / "client3.pcap").exists() and not (d / "video/client3.json").exists()
    assert (d / "ss/server.txt").read_text().startswith("# ts=")
    shared = (d / "links/shared.txt").read_text()
    assert "htb" in shared and "pfifo" in shared and "limit 1000p" in shared
    for k in active:
        assert not (d / f"video/client{k}.ts").exists()           # the received video is not kept
        c = json.loads((d / f"video/client{k}.json").read_text())
        assert {"size_download", "time_total", "speed_download"} <= c.keys()
        assert c["http_code"] == "200" and c["exitcode"] in (0, 28)
        lines = (d / f"video/client{k}.progress").read_text().splitlines()
        parsed = [re.fullmatch(r"# ts=(\d+\.\d+) bytes=(\d+)", line) for line in lines]
        assert all(parsed) and len(parsed) >= 5 * dur, lines[:3]
        ts = [float(m.group(1)) for m in parsed]
        sizes = [int(m.group(2)) for m in parsed]
        assert ts == sorted(ts) and sizes == sorted(sizes)
        assert 0.5 * dur <= ts[-1] - ts[0] <= dur + 5
        assert sizes[-1] == c["size_download"]
        assert 5 <= len([t for t in ts if t - ts[0] < 1]) <= 12   # every 0.1 s
    assert meta["status"] == "complete"
    video = meta["video"]
    assert meta["params"] == {
        **(PARAMS_JSON if tag == "c" else {}), "family": "002", "experiment": exp, "cc": cc, "duration_s": dur, "background_mbps": bg,
        "background_tool": tool, "video_kbps": VIDEO_KBPS, "video_sha256": video["sha256"],
        "video_measured_kbps": video["measured_kbps"], "shared_link_mbit": LINK_MBIT, "shared_link_buffer_pkts": 1000,
        "rep": 1, "backend": "netns", "mtu": 1500}
    # the video: cached outside the repository, CBR at the asked rate (+ MPEG-TS overhead), 29 fps
    vfile = Path(video["file"])
    assert vfile.is_relative_to("/var/cache/mpcc") and not vfile.is_relative_to(ROOT)
    assert hashlib.sha256(vfile.read_bytes()).hexdigest() == video["sha256"]
    assert video["fps"] == 29 and VIDEO_KBPS <= video["measured_kbps"] <= 1.1 * VIDEO_KBPS
    probe = json.loads(subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=codec_name,avg_frame_rate",
                                       "-of", "json", str(vfile)], capture_output=True, text=True).stdout)
    assert probe["streams"][0] == {"codec_name": "h264", "avg_frame_rate": "29/1"}
    for key in ("cc_impl", "cc_setting", "host_load", "self_check", "kernel", "start_time", "tool_versions",
                "flow_start_epoch", "capture_kernel_drops", "ss_interval_s", "queues", "background", "streams"):
        assert meta.get(key) is not None, key
    assert meta["topology"] == {"name": "streaming", "file": "testbed/families/002/topology.json",
                                "sha256": hashlib.sha256(TOPO_FILE.read_bytes()).hexdigest()}
    assert meta["shared_link"]["rate_mbit"] == LINK_MBIT and meta["shared_link"]["delay_ms"] == 0
    assert meta["delay_mechanism"] is None and meta["queue_mechanism"].startswith("htb+pfifo")
    for c in set(active.values()):
        assert meta["cc_impl"][c]["implementation"] in ("kernel", "bpf")
    assert meta["cc_setting"]["mechanism"] in (("route per client",) if len(active) < 3 else ("sysctl", "route"))
    assert meta["cc_observed"] == sorted(set(active.values()))   # what ss saw on the stream connections (srv)
    for s in meta["streams"]:                                     # each stream ran its own cc
        assert s["cc"] == active[s["stream"]] and s["cc_observed"] == [s["cc"]], s
    assert meta["capture_kernel_drops"] == 0 and meta["ss_interval_s"] == 0.1
    assert meta["background_tool"] == tool
    if tool == "d-itg":
        assert meta["tool_versions"]["d_itg"].startswith("ITGSend version")
        assert (d / "background/ditg-receiver.txt").read_text().count("TOTAL RESULTS") == 1
    elif tool == "iperf3":
        assert json.loads((d / "background/iperf3-server.json").read_text())["end"]["sum"]["packets"] > 0


@pytest.mark.parametrize("tag", SPEC)
def test_self_check_idle_rtt_and_link_rate(runs, tag):
    """The idle RTTs pass (a LAN: < 2 ms). The link check measures, up to 3 times, until one attempt carries C within
    5 %, and records every attempt; ok is the conjunction of the checks. Whether an attempt passes depends on the host
    (a 2-core VM with hypervisor steal carried 72-94 Mbit/s of the 100 in some attempts of 2026-11-26, 99.8-103 in
    data/study002), so the test asserts the tool's judgement, and bounds that catch a mis-configured link (a wrong
    unit or rate): no attempt above 105 % of C, the best one at least 50 %."""
    _, meta = _complete(runs, tag)
    sc = meta["self_check"]
    for k in (1, 2, 3):
        assert sc[f"client{k}"]["replies"] == 10 and sc[f"client{k}"]["rtt_median_ms"] < 2
        assert sc[f"client{k}"]["rtt_ok"] is True
    link = sc["link"]
    att = link["attempts"]
    within = [abs(a["link_mbps"] - LINK_MBIT) <= 0.05 * LINK_MBIT for a in att]
    assert [a["within_5pct"] for a in att] == within, att
    assert 1 <= len(att) <= 3 and not any(within[:-1]), att          # measured again only after a miss
    assert len(att) == 3 or within[-1], att
    assert link["link_ok"] is within[-1] and link["link_mbps"] == att[-1]["link_mbps"], link
    assert all(a["link_mbps"] <= 1.05 * LINK_MBIT for a in att), att
    assert max(a["link_mbps"] for a in att) >= 0.5 * LINK_MBIT, att
    assert sc["ok"] is link["link_ok"], sc
    if not link["link_ok"]:
        print(f"run {tag}: the host carried {[round(a['link_mbps'], 1) for a in att]} Mbit/s of {LINK_MBIT}: "
              f"self_check.ok is false in its meta.json")


@pytest.mark.parametrize("tag", SPEC)
def test_each_client_receives_the_video_rate(runs, tag):
    """curl receives for duration_s: about video_kbps x duration each (within 25 %), the three alike."""
    _, meta = _complete(runs, tag)
    dur = SPEC[tag][2]
    got = []
    for s in meta["streams"]:
        kbps = s["curl"]["size_download"] * 8 / dur / 1000
        assert abs(kbps - VIDEO_KBPS) <= 0.25 * VIDEO_KBPS, (s["stream"], kbps)
        assert s["received_bytes"] == s["curl"]["size_download"]
        got.append(kbps)
    assert max(got) - min(got) <= 0.1 * VIDEO_KBPS, got


@pytest.mark.parametrize("tag", SPEC)
def test_server_capture_shows_the_three_streams(runs, tag):
    d, meta = _complete(runs, tag)
    t = _topology()
    srv = t["streams"][0]["server_addr"]
    payload: dict[int, int] = {}
    clients: dict[int, set] = {}
    for _, ip in ip_packets(d / "server.pcap"):
        tcp = ip.data
        if isinstance(tcp, dpkt.tcp.TCP) and _addr(ip.src) == srv and 8001 <= tcp.sport <= 8003:
            n = ip.len - ip.hl * 4 - tcp.off * 4
            payload[tcp.sport] = payload.get(tcp.sport, 0) + n
            clients.setdefault(tcp.sport, set()).add(_addr(ip.dst))
    streams = [s for s in t["streams"] if s["stream"] in _stream_ccs(tag)]
    assert set(payload) == {s["port"] for s in streams}, payload
    for s in streams:
        port = s["port"]
        assert clients.get(port) == {s["client_addr"]}, (port, clients)
        # HTTP headers and chunk framing ride on top of the received bytes; retransmissions add more
        ms = next(m for m in meta["streams"] if m["stream"] == s["stream"])
        received = ms["received_bytes"]
        assert received <= payload[port] <= 1.1 * received, (port, payload[port], received)
        assert ms["server_data_pkts"] > 100
    # and each client's capture holds its own stream only
    for s in streams:
        ports = {ip.data.sport for _, ip in ip_packets(d / f"client{s['stream']}.pcap")
                 if isinstance(ip.data, dpkt.tcp.TCP) and _addr(ip.src) == srv}
        assert ports == {s["port"]}, ports


@pytest.mark.parametrize("tag", SPEC)
def test_background_observed_at_the_sink(runs, tag):
    """The UDP background arrives at the sink at the rate its generator sent (within 10 % of the configured rate, IP
    layer: the shared link does not lose it below capacity), over the whole video. What the generator sends is
    D-ITG's aim, not a guarantee on a loaded 2-core host: a flake hunt measured 77.4 of 90 Mbit/s once (the run records
    it as observed_tg / observed_mbps, which the analysis uses), so the generator's own rate is only required to reach
    75 % of the configured one."""
    d, meta = _complete(runs, tag)
    bg_mbps = SPEC[tag][4]
    t = _topology()["background"]
    pkts = [(ts, ip) for ts, ip in ip_packets(d / "sink.pcap") if isinstance(ip.data, dpkt.udp.UDP)]
    if bg_mbps == 0:
        assert pkts == [] and meta["background"]["tool"] is None
        return
    data = [(ts, ip.len) for ts, ip in pkts if _addr(ip.src) == t["sender_addr"] and ip.len == 1500]
    assert len(data) > 100
    span = data[-1][0] - data[0][0]
    mbps = sum(n for _, n in data) * 8 / span / 1e6
    sent_mbps = meta["background"]["observed_tg"]["mbps"]
    assert abs(mbps - sent_mbps) <= 0.1 * bg_mbps, (mbps, sent_mbps, bg_mbps)
    assert sent_mbps >= 0.75 * bg_mbps, (sent_mbps, bg_mbps)
    assert abs(meta["background"]["observed_mbps"] - mbps) <= 0.01 * bg_mbps
    # it covers the clients' whole reception
    assert data[0][0] <= meta["flow_start_epoch"] and data[-1][0] >= meta["flow_end_epoch"] - 0.5
    assert meta["background"]["observed_tg"]["packets"] >= meta["background"]["observed_sink"]["packets"] > 0
    counts = meta["background"]["counts"]
    assert counts["sent"]["packets"] >= len(data) - 1 > 0


@pytest.mark.parametrize("tag", SPEC)
def test_shared_link_queue(runs, tag):
    _, meta = _complete(runs, tag)
    q = meta["queues"]
    for direction in ("a_to_b", "b_to_a"):
        assert q[direction]["root_kind"] == "htb" and q[direction]["leaf_kind"] == "pfifo"
        assert q[direction]["limit"] == 1000
    # the video and the background cross sw1 -> sw2; the ACKs come back
    assert q["a_to_b"]["packets"] > q["b_to_a"]["packets"] > 0


def test_builder_up_and_down():
    env = _env("u")
    up = subprocess.run([str(CHAIN), "up", "--topology", str(TOPO_FILE)], env=env, capture_output=True, text=True,
                        timeout=60)
    assert up.returncode == 0, up.stderr
    applied = json.loads(up.stdout)
    assert applied["mtu"] == 1500 and applied["delay_mechanism"] is None and applied["flows"] == []
    nodes = _topology()["nodes"]
    assert sorted(_namespaces(_prefix("u"))) == sorted(_prefix("u") + n for n in nodes)

    def ex(node, *cmd):
        return subprocess.run([str(CHAIN), "exec", node, "--", *cmd], env=env, capture_output=True, text=True,
                              timeout=30)
    qd = ex("shared", "tc", "qdisc", "show").stdout
    assert qd.count("htb 1:") == 2 and qd.count("pfifo 10:") == 2 and qd.count("limit 1000p") == 2
    assert "rate 100Mbit" in ex("shared", "tc", "class", "show", "dev", "shared-sw2").stdout
    assert "NFQUEUE" not in ex("shared", "iptables", "-S", "FORWARD").stdout     # no delay: no shim
    for node in ("srv", "tg", "c1", "sink"):
        assert "qdisc htb" not in ex(node, "tc", "qdisc", "show").stdout         # only the shared link is shaped
    assert "mtu 1500 " in ex("srv", "ip", "link", "show", "srv-sw1").stdout
    ping = ex("srv", "ping", "-n", "-c", "3", "-i", "0.2", "10.102.8.8")
    assert " 0% packet loss" in ping.stdout, ping.stdout
    route = ex("c1", "ip", "route", "get", "10.102.2.2").stdout
    assert "via 10.102.5.1" in route
    down = subprocess.run([str(CHAIN), "down", "--topology", str(TOPO_FILE)], env=env, capture_output=True, text=True,
                          timeout=60)
    assert down.returncode == 0 and _namespaces(_prefix("u")) == []


def test_unavailable_cc_is_skipped(tmp_path):
    """A cc ccctl.sh cannot provide: exit 3, its one-line reason, SKIPPED, no testbed built (BPF ports turned off)."""
    avail = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    if "pcc_vivace" in avail:
        pytest.skip("pcc_vivace is registered on this host right now: it cannot be made unavailable")
    out = tmp_path / "skip"
    res = subprocess.run([str(RUN), "--out", str(out), "--family", "002", "--experiment", "test1", "--cc", "pcc_vivace",
                          "--duration-s", "4"], env=_env("s", MPCC_CC_BPF="0"), capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 3, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and res.stderr.startswith("pcc_vivace: not available"), res.stderr
    assert (out / "SKIPPED").read_text().strip() == res.stderr.strip()
    assert not (out / "COMPLETE").exists() and not (out / "meta.json").exists()
    assert _namespaces() == []


def test_interrupted_run_tears_down(tmp_path):
    """SIGTERM while the clients receive (with a background): exit 143 within seconds, no COMPLETE, no namespace,
    no process of the run left."""
    out = tmp_path / "int"
    p = subprocess.Popen([str(RUN), "--out", str(out), "--family", "002", "--experiment", "test3", "--cc", "cubic",
                          "--duration-s", "30"], env=_env("i"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(240):
            if (out / "capture.log").exists() and "clients start" in (out / "capture.log").read_text():
                break
            if p.poll() is not None:
                break
            time.sleep(0.25)
        assert p.poll() is None, p.communicate()
        time.sleep(2)
        assert len(_namespaces(_prefix("i"))) == len(_topology()["nodes"])
        p.terminate()
        rc = p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert rc == 143
    assert not (out / "COMPLETE").exists() and not list((out / "video").glob("*.ts"))
    assert _namespaces(_prefix("i")) == []
    # the servers and ITGRecv lived in the deleted namespaces (chain.sh down kills their processes); these name the run
    for name in ("curl", "ITGSend"):
        ps = subprocess.run(["pgrep", "-af", f"{name}.*{out}"], capture_output=True, text=True).stdout
        assert ps == "", ps


# ---------------------------------------------------------------------------------------------------------------
# bad input: exit 2, one "error:" line, and not a single root command (the tools that touch the system are replaced
# by stand-ins that record any call), no namespace, no run directory
ROOT_TOOLS = ("ip", "tc", "iptables", "iptables-save", "ethtool", "tcpdump", "iperf3", "ping", "bpftool", "ss",
              "sysctl", "make", "ffmpeg", "ffprobe", "curl", "ITGSend", "ITGRecv", "ITGDec", "flock")


@pytest.fixture()
def trap_root_tools(tmp_path):
    calls = tmp_path / "calls.log"
    return _env("x", PATH=root_tool_traps(tmp_path / "bin", calls, ROOT_TOOLS)), calls


GOOD = ["--family", "002", "--experiment", "test5", "--cc", "cubic", "--duration-s", "6"]


@pytest.mark.parametrize("args,env,msg", [
    (without_options(GOOD, "--experiment") + ["--experiment", "test6"], {}, "--experiment must be one of test1 test2"),
    (without_options(GOOD, "--experiment"), {}, "--experiment must be one of"),
    (without_options(GOOD, "--cc") + ["--cc", "vegas"], {}, "--cc must be one of reno cubic bbr bic westwood westwood_e pcc_vivace"),
    (without_options(GOOD, "--cc") + ["--cc", "reno cubic"], {}, "--cc must be one of"),
    (without_options(GOOD, "--cc"), {}, "--cc must be one of"),
    (without_options(GOOD, "--cc") + ["--cc", "cubic+cubic"], {}, "--cc A+B needs two different congestion controls"),
    (without_options(GOOD, "--cc") + ["--cc", "cubic+vegas"], {}, "or two of them joined by +"),
    (without_options(GOOD, "--cc") + ["--cc", "cubic+bbr+reno"], {}, "or two of them joined by +"),
    (without_options(GOOD, "--family") + ["--family", "004"], {}, "--family must be 002"),
    (without_options(GOOD, "--duration-s") + ["--duration-s", "0"], {}, "--duration-s must be a positive integer"),
    (without_options(GOOD, "--duration-s") + ["--duration-s", "2.5"], {}, "--duration-s must be a positive integer"),
    (without_options(GOOD, "--duration-s"), {}, "--duration-s must be a positive integer"),
    (GOOD + ["--background-mbps", "100.5"], {}, "--background-mbps must be 0 or a number in [0.1, 100] (Mbit/s: at most"),
    (GOOD + ["--background-mbps", "0.05"], {}, "--background-mbps must be 0 or a number in [0.1, 100]"),
    (GOOD + ["--background-mbps", "1e2"], {}, "--background-mbps must be 0 or a number"),
    (GOOD + ["--background-mbps", "-8"], {}, "--background-mbps must be 0 or a number"),
    (GOOD + ["--background-mbps", "08"], {}, "--background-mbps must be 0 or a number"),
    (GOOD + ["--video-kbps", "50"], {}, "--video-kbps must be a number in [100, 50000]"),
    (GOOD + ["--video-kbps", "60000"], {}, "--video-kbps must be a number in [100, 50000]"),
    (GOOD + ["--video-kbps", "3.6e3"], {}, "--video-kbps must be a number"),
    (GOOD + ["--rep", "0"], {}, "--rep must be a positive integer"),
    (GOOD + ["--backend", "vagrant"], {}, "--backend must be netns"),
    (GOOD + ["--video-kbps", "3000", "--video-kbps", "4000"], {}, "given twice"),
    (GOOD + ["--bogus", "1"], {}, "unknown option --bogus"),
    (GOOD + ["--rep"], {}, "option --rep needs a value"),
    (GOOD, {"MPCC_BACKGROUND_TOOL": "trafgen"}, "MPCC_BACKGROUND_TOOL must be auto, d-itg or iperf3"),
    (GOOD, {"MPCC_NS_PREFIX": "bad/prefix"}, "MPCC_NS_PREFIX must be"),
])
def test_capture_tool_rejects_bad_values_before_any_root_command(tmp_path, trap_root_tools, args, env, msg):
    base_env, calls = trap_root_tools
    out = tmp_path / "bad"
    res = subprocess.run([str(RUN), "--out", str(out), *args], env={**base_env, **env}, capture_output=True, text=True,
                         timeout=30)
    assert res.returncode == 2 and res.stderr.startswith("error:") and msg in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert not calls.exists(), calls.read_text()
    assert not out.exists() and _namespaces() == []


def test_capture_tool_needs_out(trap_root_tools):
    env, calls = trap_root_tools
    res = subprocess.run([str(RUN), *GOOD], env=env, capture_output=True, text=True, timeout=30)
    assert res.returncode == 2 and res.stderr.strip() == "error: --out is required"
    assert not calls.exists()


def test_nothing_left_behind(runs):
    """After the runs: no namespaces or state of ours, and no congestion-control holder of ours (every holder
    ccctl.sh still lists is a live process)."""
    assert _namespaces() == []
    assert not list(Path("/run/mpcc-chain").glob(f"{PREFIX}*"))
    state = Path(os.environ.get("MPCC_CC_STATE", "/run/mpcc-cc"))
    for holders in state.glob("*.holders"):
        for line in holders.read_text().split():
            assert Path(f"/proc/{line.split(':')[0]}").exists(), (holders.name, line)
