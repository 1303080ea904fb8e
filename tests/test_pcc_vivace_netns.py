"""The two PCC Vivace BPF congestion controls of testbed/cc (docs/pcc-vivace.md) on real flows, each registered for the
test (testbed/cc/ccctl.sh acquire/release): iperf3 ``-C <cc>`` through a 10 Mbit/s tbf bottleneck with a 100-packet
pfifo and a ~30 ms base RTT (NFQUEUE delay shim, 15 ms per direction), in three namespaces of its own
(``pv-<pid>-{s,r,d}``). Needs root, clang, bpftool, iperf3, iptables, tc and the shim's build dependencies (gcc,
libnetfilter-queue-dev).

- ``pcc_vivace`` (testbed/cc/pcc_vivace.bpf.c) is the port of PCC-Kernel's vivace module (issue 30). Its test checks
  behaviour specific to the module: the fixed start at 524288 bytes/s and the x1.5 growth per monitor interval, to
  the bit/s, in the flow's ``ss`` pacing rate (test_module_port_starts_at_the_fixed_rate_and_grows_1_5x). Its
  arithmetic is checked against the module itself, without root, by tests/test_pcc_vivace_equivalence.py.
- ``pcc_vivace_usp`` (testbed/cc/pcc_vivace_usp.bpf.c) is the Vivace paper / PCC-Uspace controller of issue 17 (it
  was ``pcc_vivace`` until issue 30). Its criteria (issue 17): one flow reaches >= 90 % of the bottleneck rate as
  iperf3 receiver goodput with a median RTT (``ss`` srtt samples of the flow) within 20 % of the base RTT; two flows
  share (Jain's index >= 0.8). The single-flow criterion is judged on a quiet emulated path; a path the host
  disturbed (the delay shim's release lateness, measured in every attempt) gets weaker criteria or a new attempt
  (single_flow_failures, path_fidelity).

Also a measurement script: ``python3 tests/test_pcc_vivace_netns.py --cc pcc_vivace_usp --runs 3 --duration 20``
prints the numbers docs/pcc-vivace.md reports (as root, from the repository root).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
CC = ROOT / "testbed" / "cc"
CCCTL = CC / "ccctl.sh"
SHIM_DIR = ROOT / "testbed" / "delayshim"
SHIM = SHIM_DIR / "delayshim"
TOOLS = ["iperf3", "iptables", "tc", "ip", "ss", "ping", "clang", "bpftool", "make", "gcc", "jq"]

RATE_MBIT = 10.0          # tbf rate
BUFFER_PKTS = 100         # pfifo behind it
ONE_WAY_MS = 15           # shim delay per direction: base RTT ~30 ms
TBF_BURST = 3028          # testbed/topology.json defaults.tbf_burst_bytes.netns (2 frames)
SERVER = "10.77.2.1"
MODULE_PORT = "pcc_vivace"      # the port of PCC-Kernel's vivace module
USPACE = "pcc_vivace_usp"       # the Vivace paper / PCC-Uspace controller (issue 17)
PORTS = (MODULE_PORT, USPACE)

pytestmark = [
    pytest.mark.netns,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root"),
    pytest.mark.skipif(any(shutil.which(t) is None for t in TOOLS), reason="testbed or BPF tools missing"),
]


def _sh(*cmd, check=True, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, check=check, **kw)


class Bottleneck:
    """sender ``<p>s`` -- router ``<p>r`` -- receiver ``<p>d``. The router forwards through the NFQUEUE delay shim
    (ONE_WAY_MS per direction, as testbed/nodes/switch.sh starts it) and a tbf of RATE_MBIT with a BUFFER_PKTS pfifo
    on both egress interfaces; offloads are off on every interface (testbed/nodes/host.sh), so the queue counts
    MTU-sized packets."""

    def __init__(self, prefix: str | None = None, one_way_ms: float = ONE_WAY_MS):
        self.p = prefix or f"pv-{os.getpid()}-"
        self.one_way_ms = one_way_ms
        self.shim: subprocess.Popen | None = None
        self.shim_log: Path | None = None

    def ns(self, node: str) -> str:
        return f"{self.p}{node}"

    def ex(self, node: str, *cmd, check=True) -> subprocess.CompletedProcess:
        return _sh("ip", "netns", "exec", self.ns(node), *cmd, check=check)

    def up(self) -> "Bottleneck":
        self.down()
        if not os.access(SHIM, os.X_OK):
            _sh("make", "-s", "-C", SHIM_DIR)
        for n in "srd":
            _sh("ip", "netns", "add", self.ns(n))
            _sh("ip", "-n", self.ns(n), "link", "set", "lo", "up")
        _sh("ip", "link", "add", "s0", "netns", self.ns("s"), "type", "veth", "peer", "name", "r0", "netns", self.ns("r"))
        _sh("ip", "link", "add", "d0", "netns", self.ns("d"), "type", "veth", "peer", "name", "r1", "netns", self.ns("r"))
        for node, dev, addr in (("s", "s0", "10.77.1.1/24"), ("r", "r0", "10.77.1.2/24"),
                                ("d", "d0", "10.77.2.1/24"), ("r", "r1", "10.77.2.2/24")):
            _sh("ip", "-n", self.ns(node), "addr", "add", addr, "dev", dev)
            _sh("ip", "-n", self.ns(node), "link", "set", dev, "up")
            self.ex(node, "ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off", check=False)
        _sh("ip", "-n", self.ns("s"), "route", "add", "default", "via", "10.77.1.2")
        _sh("ip", "-n", self.ns("d"), "route", "add", "default", "via", "10.77.2.2")
        self.ex("r", "sysctl", "-qw", "net.ipv4.ip_forward=1")
        for dev in ("r0", "r1"):
            self.ex("r", "tc", "qdisc", "replace", "dev", dev, "root", "handle", "1:", "tbf", "rate",
                    f"{RATE_MBIT:g}mbit", "burst", TBF_BURST, "limit", 151400)
            self.ex("r", "tc", "qdisc", "replace", "dev", dev, "parent", "1:1", "handle", "10:", "pfifo", "limit",
                    BUFFER_PKTS)
        if self.one_way_ms > 0:
            self.ex("r", "iptables", "-w", "-A", "FORWARD", "-j", "NFQUEUE", "--queue-num", "0", "--queue-bypass")
            fd, name = tempfile.mkstemp(prefix=f"{self.p}shim-", suffix=".log")
            self.shim_log = Path(name)
            self.shim = subprocess.Popen(["ip", "netns", "exec", self.ns("r"), str(SHIM), "-q", "0", "-d",
                                          str(int(self.one_way_ms * 1000))],
                                         stdout=subprocess.DEVNULL, stderr=fd)
            os.close(fd)
        time.sleep(0.5)
        return self

    def shim_lateness(self) -> dict | None:
        """The delay shim's release lateness since the previous call (SIGUSR1: it prints its counters and restarts
        them): packets released, share released more than 1 ms and 5 ms after their due time (%), the largest lateness
        (ms). A late release is the emulated path being slower than configured (the shim not scheduled: host CPU
        contention or hypervisor steal), not the congestion control. None without a shim."""
        if self.shim is None or self.shim_log is None:
            return None
        before = self.shim_log.read_text().count("delayshim: released")
        self.shim.send_signal(signal.SIGUSR1)
        for _ in range(100):
            lines = [ln for ln in self.shim_log.read_text().splitlines() if ln.startswith("delayshim: released")]
            if len(lines) > before:
                tok = lines[-1].split()
                n, l1, l5, mx = int(tok[2]), int(tok[4]), int(tok[6]), int(tok[8])
                return {"released": n, "late_over_1ms_pct": 100 * l1 / n if n else 0.0,
                        "late_over_5ms_pct": 100 * l5 / n if n else 0.0, "max_late_ms": mx / 1000}
            time.sleep(0.02)
        return None

    def down(self):
        if self.shim is not None:
            self.shim.terminate()
            try:
                self.shim.wait(5)
            except subprocess.TimeoutExpired:
                self.shim.kill()
            self.shim = None
        if self.shim_log is not None:
            self.shim_log.unlink(missing_ok=True)
            self.shim_log = None
        listed = _sh("ip", "netns", "list", check=False).stdout.split("\n")
        names = {line.split()[0] for line in listed if line.strip()}
        for n in "srd":
            if self.ns(n) in names:
                for pid in _sh("ip", "netns", "pids", self.ns(n), check=False).stdout.split():
                    try:
                        os.kill(int(pid), 15)
                    except (ProcessLookupError, ValueError):
                        pass
                _sh("ip", "netns", "del", self.ns(n), check=False)

    def base_rtt_ms(self, count: int = 20) -> float:
        """median ping RTT on the idle path (the base RTT)"""
        pings = self.ex("s", "ping", "-n", "-c", count, "-i", "0.05", SERVER).stdout
        return statistics.median(_ping_times(pings))


def _ping_times(text: str) -> list[float]:
    return [float(tok.split("=")[1]) for line in text.splitlines() for tok in line.split() if tok.startswith("time=")]


def _ss_sampler(bn: Bottleneck, path: Path, interval_s: float) -> subprocess.Popen:
    """blocks of ``ss -tin dst SERVER`` each preceded by ``# ts=<epoch s>`` (the capture tools' ss/flowN.txt format,
    analysis/figures/ss_samples.py)"""
    script = f'while :; do echo "# ts=$(date +%s.%N)"; ss -tin dst {SERVER}; sleep {interval_s}; done'
    return subprocess.Popen(["ip", "netns", "exec", bn.ns("s"), "bash", "-c", script], stdout=path.open("w"),
                            stderr=subprocess.DEVNULL, start_new_session=True)


def run_flows(bn: Bottleneck, cc: str, n_flows: int, duration_s: int, out: Path, ss_interval_s: float = 0.02) -> dict:
    """n_flows parallel iperf3 flows (one server each) of duration_s with congestion control cc. Returns goodputs
    (receiver, Mbit/s), Jain's index, the flows' ss srtt samples (ms, ESTAB data connections), ping RTTs taken
    during the flows, the base RTT and the cc names ss saw on them once they flowed (``ccs_once_flowing``)."""
    from analysis.figures.ss_samples import ccs_once_flowing, parse_ss

    out.mkdir(parents=True, exist_ok=True)
    base = bn.base_rtt_ms()
    servers = [subprocess.Popen(["ip", "netns", "exec", bn.ns("d"), "iperf3", "-s", "-1", "-p", str(5201 + i)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for i in range(n_flows)]
    time.sleep(0.5)
    ss = _ss_sampler(bn, out / "ss.txt", ss_interval_s)
    ping = subprocess.Popen(["ip", "netns", "exec", bn.ns("s"), "ping", "-n", "-i", "0.1", "-w", str(duration_s),
                             SERVER], stdout=(out / "ping.txt").open("w"), stderr=subprocess.DEVNULL)
    clients = [subprocess.Popen(["ip", "netns", "exec", bn.ns("s"), "iperf3", "-c", SERVER, "-p", str(5201 + i),
                                 "-C", cc, "-t", str(duration_s), "-J"],
                                stdout=(out / f"client{i + 1}.json").open("w"), stderr=subprocess.PIPE, text=True)
               for i in range(n_flows)]
    try:
        errs = [c.communicate(timeout=duration_s + 30)[1] for c in clients]
    finally:
        for p in clients + servers + [ping]:
            if p.poll() is None:
                p.kill()
            p.wait()
        os.killpg(ss.pid, 15)
        ss.wait()
    goodput = []
    for i, c in enumerate(clients):
        res = json.loads((out / f"client{i + 1}.json").read_text() or "{}")
        assert c.returncode == 0 and "end" in res, f"iperf3 flow {i + 1} failed: {errs[i]} {res.get('error')}"
        goodput.append(res["end"]["sum_received"]["bits_per_second"] / 1e6)
    df = parse_ss(out / "ss.txt")
    df = df[df["state"] == "ESTAB"]
    # iperf3's control connections move a few bytes; the data connections megabytes
    moved = df.groupby("local")["bytes_acked"].max()
    data = df[df["local"].isin(moved[moved > 1e6].index)]
    t0 = data["ts"].min()
    return {
        "cc": cc, "n_flows": n_flows, "duration_s": duration_s, "base_rtt_ms": base,
        "goodput_mbit": goodput, "sum_mbit": sum(goodput),
        "jain": sum(goodput) ** 2 / (n_flows * sum(g * g for g in goodput)),
        "ss_rtt_ms": data["rtt_ms"].dropna().tolist(),
        "ss_rtt_ms_after_2s": data.loc[data["ts"] >= t0 + 2, "rtt_ms"].dropna().tolist(),
        "ss_cc": ccs_once_flowing(data),   # samples before iperf3 sets the CC show the namespace's default
        "ping_ms": _ping_times((out / "ping.txt").read_text()),
    }


def summary(r: dict) -> str:
    med = statistics.median(r["ss_rtt_ms"])
    pmed = statistics.median(r["ping_ms"]) if r["ping_ms"] else float("nan")
    return (f"{r['cc']} x{r['n_flows']} {r['duration_s']} s: goodput " + " + ".join(f"{g:.2f}" for g in r["goodput_mbit"])
            + f" = {r['sum_mbit']:.2f} Mbit/s ({100 * r['sum_mbit'] / RATE_MBIT:.1f} % of {RATE_MBIT:g}), Jain "
            f"{r['jain']:.3f}; base RTT {r['base_rtt_ms']:.2f} ms, ss srtt median {med:.2f} ms "
            f"({100 * (med / r['base_rtt_ms'] - 1):+.1f} %, n={len(r['ss_rtt_ms'])}), after 2 s "
            f"{statistics.median(r['ss_rtt_ms_after_2s']):.2f} ms, p90 "
            f"{sorted(r['ss_rtt_ms'])[int(0.9 * len(r['ss_rtt_ms']))]:.2f} ms; ping median {pmed:.2f} ms")


class Registration:
    """``cc`` (one of PORTS) registered for the holder process (ccctl.sh acquire/release: reference counted with other
    users; the last release unregisters only a registration ccctl made)."""

    def __init__(self, cc: str):
        self.cc = cc
        self.holder = subprocess.Popen(["sleep", "3600"])
        res = _sh("bash", CCCTL, "acquire", cc, self.holder.pid, check=False, timeout=180)
        if res.returncode != 0:
            self.release()
            raise RuntimeError(f"{cc} could not be registered: {res.stdout} {res.stderr}")
        self.info = json.loads(res.stdout)

    def release(self):
        _sh("bash", CCCTL, "release", self.cc, self.holder.pid, check=False, timeout=120)
        self.holder.kill()
        self.holder.wait()


@pytest.fixture(scope="module")
def path():
    bn = Bottleneck()
    try:
        bn.up()
        yield bn
    finally:
        bn.down()


@pytest.fixture(scope="module")
def uspace(path):
    """pcc_vivace_usp registered for this file's tests that use it (released after the last test of the file)"""
    reg = Registration(USPACE)
    try:
        yield reg
    finally:
        reg.release()


@pytest.fixture(scope="module")
def module_port(path):
    """pcc_vivace (the port of the module) registered for this file's tests that use it (released after the last
    test of the file)"""
    reg = Registration(MODULE_PORT)
    try:
        yield reg
    finally:
        reg.release()


@pytest.mark.parametrize("cc", PORTS)
def test_object_builds_and_ccctl_lists_it(cc):
    res = _sh("make", "-C", CC, f"build/{cc}.bpf.o", check=False, timeout=300)
    assert res.returncode == 0, res.stderr
    obj = CC / "build" / f"{cc}.bpf.o"
    assert obj.read_bytes()[:4] == b"\x7fELF"
    status = json.loads(_sh("bash", CCCTL, "status", cc).stdout)
    assert status[cc]["implementation"] in ("bpf", "kernel"), status


QUIET_LATE_1MS_PCT = 0.5     # path "quiet": <= 0.5 % of packets released > 1 ms late
FAITHFUL_LATE_5MS_PCT = 2.0  # path "faithful": <= 2 % of packets released > 5 ms late (a sixth of the one-way delay)
ATTEMPTS = 5


def path_fidelity(lateness: dict | None) -> str:
    """'quiet', 'faithful' or 'disturbed' from the delay shim's release lateness during a flow
    (Bottleneck.shim_lateness). The shim holds every packet for ONE_WAY_MS; a host that does not schedule it (CPU
    contention, hypervisor steal) releases packets late and in bursts, which a delay-sensitive congestion control
    reads as congestion and which builds a queue at the tbf."""
    if lateness is None:
        return "quiet"
    if lateness["late_over_1ms_pct"] <= QUIET_LATE_1MS_PCT:
        return "quiet"
    return "faithful" if lateness["late_over_5ms_pct"] <= FAITHFUL_LATE_5MS_PCT else "disturbed"


def single_flow_failures(r: dict, fidelity: str) -> list[str]:
    """The criteria one pcc_vivace_usp flow must meet on a path of this fidelity (empty: met).

    - quiet path (issue 17): goodput >= 90 % of the tbf rate; median ss srtt and median ping RTT <= 1.2 x base RTT
      (docs/pcc-vivace.md: 91.9-92.7 % and +3 to +6 % measured on a quiet host);
    - faithful but jittery path: goodput >= 80 %; median ss srtt and median ping RTT below base + half the buffer's
      drain time (100 packets x 1514 bytes at 10 Mbit/s = 121 ms, half = 60.6 ms), i.e. it does not keep the buffer
      full as a loss-based control does (reno and cubic: base + ~100 ms). Vivace's utility penalises the RTT's
      gradient, not its level, so a queue that the path's bursts built can stand (docs/pcc-vivace.md, "On a
      disturbed host")."""
    if fidelity == "quiet":
        min_mbit, max_rtt, tag = 0.9 * RATE_MBIT, 1.2 * r["base_rtt_ms"], "quiet path"
    else:
        drain_ms = BUFFER_PKTS * 1514 * 8 / (RATE_MBIT * 1e3)
        min_mbit, max_rtt, tag = 0.8 * RATE_MBIT, r["base_rtt_ms"] + drain_ms / 2, "faithful path"
    out = []
    if r["sum_mbit"] < min_mbit:
        out.append(f"{tag}: goodput {r['sum_mbit']:.2f} < {min_mbit:.2f} Mbit/s")
    if statistics.median(r["ss_rtt_ms"]) > max_rtt:
        out.append(f"{tag}: ss srtt median {statistics.median(r['ss_rtt_ms']):.1f} > {max_rtt:.1f} ms")
    if r["ping_ms"] and statistics.median(r["ping_ms"]) > max_rtt:
        out.append(f"{tag}: ping median {statistics.median(r['ping_ms']):.1f} > {max_rtt:.1f} ms")
    return out


def test_one_flow_fills_the_bottleneck_at_base_rtt(path, uspace, tmp_path):
    """pcc_vivace_usp (issue 17's criteria, measured for that controller; the module's port is not held to them: its
    utility and rules differ, docs/pcc-vivace.md). One 20-s flow meets single_flow_failures' criteria for the fidelity
    its path had. An attempt whose emulated path was disturbed (> 2 % of packets released > 5 ms late by the delay
    shim) measures the host, not the congestion control: it is printed and redone, up to ATTEMPTS; the first attempt
    on a quiet or faithful path is judged. The shim's lateness is printed for every attempt."""
    allowed = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control").read_text().split()
    assert USPACE in allowed                  # TCP_CONG_NON_RESTRICTED
    seen = []
    for k in range(ATTEMPTS):
        path.shim_lateness()                  # restart the shim's counters
        r = run_flows(path, USPACE, 1, 20, tmp_path / f"attempt{k + 1}")
        late = path.shim_lateness()
        fidelity = path_fidelity(late)
        line = (f"attempt {k + 1}: path {fidelity} (shim: {late['late_over_1ms_pct']:.2f} % of packets > 1 ms late, "
                f"{late['late_over_5ms_pct']:.2f} % > 5 ms, max {late['max_late_ms']:.1f} ms); {summary(r)}"
                if late else f"attempt {k + 1}: {summary(r)}")
        print(line)
        seen.append(line)
        assert r["ss_cc"] == [USPACE]
        if fidelity != "disturbed":
            failures = single_flow_failures(r, fidelity)
            assert not failures, "; ".join(failures) + "\n" + "\n".join(seen)
            return
    pytest.fail(f"the emulated path was disturbed in all {ATTEMPTS} attempts (host CPU contention): "
                + "\n".join(seen))


def test_two_flows_share(path, uspace, tmp_path):
    """pcc_vivace_usp, two concurrent flows: Jain's index of their goodputs >= 0.8 (measured 0.995-1.000). Their RTT
    is not asserted: with two flows a standing queue builds (docs/pcc-vivace.md)."""
    r = run_flows(path, USPACE, 2, 25, tmp_path)
    print(summary(r))
    assert r["ss_cc"] == [USPACE]
    assert r["jain"] >= 0.8, summary(r)


# ---- pcc_vivace, the port of PCC-Kernel's vivace module: its start, to the bit/s

PCC_RATE_MIN = 1024          # tcp_pcc.c "#define PCC_RATE_MIN 1024u"; pcc_init: "pcc->rate = PCC_RATE_MIN*512;"


def module_start_ladder_bps(n: int) -> dict:
    """The module's STARTING rates as ``ss -tin`` prints them (pacing_rate in bit/s = 8 x sk_pacing_rate in bytes/s),
    in the module's integer arithmetic: rungs r_0 = 524288 bytes/s (pcc_init), r_(k+1) = r_k + r_k / 2
    (pcc_decide_slow_start: "pcc->rate += pcc->rate / 2;"), ``n`` of them; probe rates r * 95 / 100 and
    r * 105 / 100 of each rung (pcc_setup_intervals_probing). The first MI runs at one of r_0's probe rates (pcc_init
    sets up probing intervals); when an MI's utility does not rise, STARTING ends at the rung below and probes around
    it."""
    r, rungs, probes = PCC_RATE_MIN * 512, [], {}
    for _ in range(n):
        rungs.append(8 * r)
        probes[8 * r] = (8 * (r * 95 // 100), 8 * (r * 105 // 100))
        r += r // 2
    return {"rungs": rungs, "first_mi": set(probes[rungs[0]]), "probes": probes}


def module_start_failures(pacing_bps: list[float], min_steps: int = 2) -> tuple[list[str], list[int]]:
    """Whether one flow's pacing rates (``ss`` samples in time order, from the first one that shows the module's
    port on the socket) show the module's start (empty list: they do):

    - the first rate is the fixed start (524288 bytes/s, or its first MI at x0.95 / x1.05), whatever the path;
    - then the rungs r_1, r_2, ... follow exactly and in order, each x1.5 of the one before, at least ``min_steps``
      of them;
    - the first rate after the last rung seen is a probe rate (x0.95 or x1.05) of the rung below it (STARTING ended
      there), or of that rung itself when the samples missed the highest rung.

    Also returns the distinct rates seen (consecutive repeats collapsed), for the message."""
    lad = module_start_ladder_bps(24)
    rungs, start = lad["rungs"], lad["first_mi"] | {lad["rungs"][0]}
    seq: list[int] = []
    for v in pacing_bps:
        v = int(round(v))
        if not seq or seq[-1] != v:
            seq.append(v)
    if not seq:
        return ["no pacing_rate samples of the flow"], seq
    out = []
    if seq[0] not in start:
        out.append(f"first pacing rate {seq[0]} bit/s is not the module's fixed start (524288 bytes/s = "
                   f"{rungs[0]} bit/s; its first MI at x0.95 or x1.05: {sorted(lad['first_mi'])})")
    i = 0
    while i < len(seq) and seq[i] in start:
        i += 1
    k = 0
    while i < len(seq) and k + 1 < len(rungs) and seq[i] == rungs[k + 1]:
        i += 1
        k += 1
    if k < min_steps:
        out.append(f"the x1.5 steps from {rungs[0]} bit/s stop after {k} (need {min_steps}): expected "
                   f"{rungs[k + 1]} bit/s next, saw {seq[i] if i < len(seq) else 'nothing'}")
    elif i < len(seq):
        allowed = set(lad["probes"][rungs[k - 1]]) | set(lad["probes"][rungs[k]])
        if seq[i] not in allowed:
            out.append(f"after the last rung seen, {rungs[k]} bit/s, the rate went to {seq[i]} bit/s, not to a probe "
                       f"rate of the rung below or of that rung ({sorted(allowed)})")
    return out, seq


def pacing_rates(ss_file: Path, cc: str) -> list[float]:
    """The data connection's pacing rates (bit/s) in time order, from the samples that show ``cc`` on it (before
    iperf3 sets its congestion control the socket runs the namespace's default)."""
    from analysis.figures.ss_samples import data_connection, parse_ss

    df = parse_ss(ss_file)
    d = data_connection(df[df["state"] == "ESTAB"])
    return d.loc[d["cc"] == cc, "pacing_rate_bps"].dropna().tolist()


def test_module_port_starts_at_the_fixed_rate_and_grows_1_5x(path, module_port, tmp_path):
    """pcc_vivace, the port of PCC-Kernel's vivace module: a 5-s flow's pacing rate (``ss -tin`` every 10 ms) starts
    at the module's fixed 524288 bytes/s (4194304 bit/s; the first monitor interval at x0.95 or x1.05) whatever the
    path, and grows x1.5 per monitor interval to the bit/s (6291456, 9437184, then 14155776 bit/s, above this 10 Mbit/s
    bottleneck), then goes back to the last rung whose utility rose and probes around it (module_start_failures).
    pcc_vivace_usp, the Uspace-style controller, starts at max(cwnd, 10) x mss / srtt and doubles: it fails this.

    How far the ladder climbs depends on the path (an RTT rise of more than two packets' time within an interval
    lowers the utility and ends STARTING): on a quiet path at least two x1.5 steps are required (9437184 bit/s is
    below the bottleneck), on a faithful path one; an attempt on a path the host disturbed is printed and redone, up
    to ATTEMPTS. Expected from reading the module (docs/pcc-kernel-vivace-spec.md section 8.2), not yet measured."""
    allowed = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control").read_text().split()
    assert MODULE_PORT in allowed             # TCP_CONG_NON_RESTRICTED
    seen = []
    for k in range(ATTEMPTS):
        path.shim_lateness()                  # restart the shim's counters
        out = tmp_path / f"attempt{k + 1}"
        r = run_flows(path, MODULE_PORT, 1, 5, out, ss_interval_s=0.01)
        late = path.shim_lateness()
        fidelity = path_fidelity(late)
        assert r["ss_cc"] == [MODULE_PORT]
        failures, seq = module_start_failures(pacing_rates(out / "ss.txt", MODULE_PORT),
                                              min_steps=2 if fidelity == "quiet" else 1)
        line = (f"attempt {k + 1}: path {fidelity}"
                + (f" (shim: {late['late_over_1ms_pct']:.2f} % of packets > 1 ms late, {late['late_over_5ms_pct']:.2f} "
                   f"% > 5 ms)" if late else "")
                + f"; pacing rates (bit/s, distinct, in order): {seq[:10]}; {summary(r)}")
        print(line)
        seen.append(line)
        if fidelity != "disturbed":
            assert not failures, "; ".join(failures) + "\n" + "\n".join(seen)
            return
    pytest.fail(f"the emulated path was disturbed in all {ATTEMPTS} attempts (host CPU contention): "
                + "\n".join(seen))


def main() -> int:
    ap = argparse.ArgumentParser(description="measure pcc_vivace, pcc_vivace_usp (or another cc) through the test's "
                                             "bottleneck")
    ap.add_argument("--cc", default=MODULE_PORT)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--flows", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--duration", type=int, default=20)
    ap.add_argument("--out", default="/tmp/pcc-vivace-measure")
    ap.add_argument("--json", action="store_true", help="also print each run's result as JSON")
    args = ap.parse_args()
    reg = Registration(args.cc) if args.cc in PORTS else None
    bn = Bottleneck()
    try:
        bn.up()
        for n in args.flows:
            for k in range(args.runs):
                bn.shim_lateness()
                r = run_flows(bn, args.cc, n, args.duration, Path(args.out) / f"{args.cc}-{n}-{k}")
                late = bn.shim_lateness()
                print(summary(r) + (f"; path {path_fidelity(late)} (shim: {late['late_over_1ms_pct']:.2f} % > 1 ms "
                                    f"late, {late['late_over_5ms_pct']:.2f} % > 5 ms, max {late['max_late_ms']:.1f} ms)"
                                    if late else ""), flush=True)
                if args.json:
                    print(json.dumps({k: v for k, v in r.items() if k not in ("ss_rtt_ms", "ss_rtt_ms_after_2s",
                                                                            "ping_ms")}), flush=True)
    finally:
        bn.down()
        if reg:
            reg.release()
    return 0


if __name__ == "__main__":
    sys.exit(main())
