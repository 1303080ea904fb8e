#!/usr/bin/env python3
"""ONE run of study 003's Table 2 scenarios with the paper's own tool chain: Mininet + Open vSwitch, as root INSIDE
the Debian 12 VM that testbed/mininet003/run-vm.sh boots (testbed/mininet003/run-guest.sh calls this script;
docs/mininet-003.md describes the experiment).

The topology is built as Mininet builds it (study 003, Segara, Riza, Sihombing, section III.A and Table 1): two
hosts, h1 (client, "Host 1") and h2 (server, "Host 2"), dual-homed over two Open vSwitch bridges s1 (path 1) and s2
(path 2) (``OVSBridge``: ``OVSSwitch`` in standalone fail mode, no controller), every link a ``TCLink``:

    h1-eth0 -- s1-eth1 [s1] s1-eth2 -- h2-eth0      path 1: bw R1 Mbit/s, delay D1 ms   (10 / 2, topology.json)
    h1-eth1 -- s2-eth1 [s2] s2-eth2 -- h2-eth1      path 2: bw R2 Mbit/s, delay D2 ms   (2 / 10)

TCLink shapes BOTH ends of a link with the same parameters; for ``bw=R, delay=D, max_queue_size=Q`` Mininet runs
(mininet/link.py, TCIntf.config) on each of the link's two interfaces:

    tc qdisc add dev IF root handle 5:0 htb default 1
    tc class add dev IF parent 5:0 classid 5:1 htb rate R.000000Mbit burst 15k
    tc qdisc add dev IF  parent 5:1  handle 10: netem delay Dms limit Q

(``max_queue_size`` is netem's ``limit``: that is how Mininet sizes a switch queue). With ``--delay-links client``
(the default) the host-1 link of each path carries the path's delay and the switch-host-2 link only its rate and
queue (``netem limit Q``), so a path's round trip is 2 x D, as testbed/families/003/topology.json reads Table 1; with
``--delay-links both`` both links carry D (round trip 4 x D). Every tc command Mininet runs is recorded (the class
method ``TCIntf.tc`` is wrapped; Open vSwitch clears a port's qdisc when it takes the port, and Mininet applies its
configuration again afterwards: both rounds are in the record).

Addresses (as data from topology.json): h1 has path K's client address on h1-eth(K-1); h2 has the address the
namespace testbed gives path K's router on its h2-eth(K-1) (an L2 switch needs none; it is h1's next hop on path K)
and the service address on lo. h1 routes the service address over path 1 (main table) and, per source address, over
its own path (tables 101/102, rules from ADDR), as testbed/families/003/topology.json does. MPTCP: net.mptcp.enabled
1, limits subflow 2 / add_addr_accepted 2 on both hosts, h1's path-2 address a ``subflow`` endpoint.

The flow: iperf3 h1 -> h2's service address (cc --cc, -t T), single-path TCP bound to h1's path-1 address (mode
tcp_path1) or MPTCP through ``mptcpize run`` on both ends (mode mptcp; initial subflow on path 1). During it
``ping -n -D -i I -w T`` from h1 over each path (bound to the path's h1 address), and every --sample-interval-s the
qdiscs of every interface (``tc -s -j qdisc show``: backlog, drops) into tc/samples.jsonl.

RUN_DIR: meta.json, iperf3/{client,server}.json, ping/path{1,2}.txt, ping/{warmup,idle}-path{1,2}.txt,
tc/{h1,h2,s1,s2}-{before,after}.{txt,json}, tc/samples.jsonl, tc/commands.json (every tc command Mininet ran, in
order, with its output), ovs/{show.txt,qos.json}, nstat/{h1,h2}.txt; COMPLETE when every check passed (else
meta.json status "failed" and a reason). Exit 0 = complete, 1 = a check failed, 2 = usage or set-up error.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

PORT = 5201
MIN_BYTES = 100000   # a path "carried the flow" with at least this many bytes towards the server (pings: ~100 B/s)
SYSCTLS = ["net.ipv4.tcp_congestion_control", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_ecn",
           "net.ipv4.tcp_sack", "net.ipv4.tcp_timestamps", "net.ipv4.tcp_limit_output_bytes", "net.mptcp.enabled",
           "net.core.rmem_max", "net.core.wmem_max", "net.core.netdev_max_backlog", "net.core.default_qdisc"]
OFFLOADS = ["tcp-segmentation-offload", "generic-segmentation-offload", "generic-receive-offload",
            "tx-checksumming", "rx-checksumming"]
#: the fields of one qdisc kept in the samples
SAMPLE_KEYS = ("dev", "kind", "handle", "parent", "root", "bytes", "packets", "drops", "overlimits", "backlog", "qlen")


class Usage(Exception):
    pass


class Failed(Exception):
    pass


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="topo003.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--topology", required=True, help="testbed/families/003/topology.json")
    ap.add_argument("--out", required=True, help="run directory (must not exist)")
    ap.add_argument("--mode", required=True)
    ap.add_argument("--queue-pkts", required=True)
    ap.add_argument("--rep", required=True)
    ap.add_argument("--duration-s", required=True)
    ap.add_argument("--ping-interval-s", default="1")
    ap.add_argument("--sample-interval-s", default="1")
    ap.add_argument("--cc", default="cubic")
    ap.add_argument("--delay-links", default="client")
    a = ap.parse_args(argv)
    if a.mode not in ("tcp_path1", "mptcp"):
        raise Usage(f"--mode must be tcp_path1 or mptcp, got '{a.mode}'")
    if not re.fullmatch(r"[1-9][0-9]{0,5}", a.queue_pkts):
        raise Usage(f"--queue-pkts must be an integer 1..999999, got '{a.queue_pkts}'")
    if not re.fullmatch(r"[1-9][0-9]{0,2}", a.rep):
        raise Usage(f"--rep must be an integer 1..999, got '{a.rep}'")
    if not re.fullmatch(r"[1-9][0-9]{0,4}", a.duration_s):
        raise Usage(f"--duration-s must be an integer 1..99999, got '{a.duration_s}'")
    for name in ("ping_interval_s", "sample_interval_s"):
        v = getattr(a, name)
        try:
            f = float(v)
        except ValueError:
            f = -1.0
        if not (re.fullmatch(r"[0-9]+(\.[0-9]+)?", v) and 0.01 <= f <= 60):
            raise Usage(f"--{name.replace('_', '-')} must be a number in [0.01, 60], got '{v}'")
    if a.cc not in ("reno", "cubic", "bbr"):
        raise Usage(f"--cc must be reno, cubic or bbr, got '{a.cc}'")
    if a.delay_links not in ("client", "both"):
        raise Usage(f"--delay-links must be client or both, got '{a.delay_links}'")
    if not Path(a.topology).is_file():
        raise Usage(f"--topology {a.topology} not found")
    if Path(a.out).exists():
        raise Usage(f"--out {a.out} exists (a run directory is written once)")
    a.queue_pkts, a.rep, a.duration_s = int(a.queue_pkts), int(a.rep), int(a.duration_s)
    a.ping_interval_s, a.sample_interval_s = float(a.ping_interval_s), float(a.sample_interval_s)
    return a


def read_topology(path) -> dict:
    """Rates, delays and addresses of testbed/families/003/topology.json: {"service": ADDR, "paths": {K: {rate_mbit,
    delay_ms, client_addr, server_addr, prefix}}} (server_addr: the address topology.json gives path K's router on
    the client's link)."""
    t = json.loads(Path(path).read_text())
    paths = {}
    for k in (1, 2):
        p = t["paths"][str(k)]
        link = next(lk for lk in t["links"] if lk["a"]["ifname"] == p["client_if"])
        paths[k] = {"rate_mbit": float(p["rate_mbit"]), "delay_ms": float(p["delay_ms"]),
                    "client_addr": p["client_addr"], "server_addr": link["b"]["addr"], "prefix": int(link["prefix"])}
    return {"service": t["service"]["addr"], "paths": paths}


# ------------------------------------------------------------------------------------------------ helpers

def first_line(args) -> str:
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return ((r.stdout or r.stderr).strip().splitlines() or [""])[0]


def pexec(node, args, timeout=60) -> tuple[int, str, str]:
    """Run ``args`` (a list) in ``node``'s namespace (Mininet's popen: ``mnexec -da PID``); a switch (not in a
    namespace) runs it in the root namespace. (exit status, stdout, stderr)."""
    if node is None or not getattr(node, "inNamespace", True):
        p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    else:
        p = node.popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        return 124, out.decode(errors="replace"), err.decode(errors="replace")
    return p.returncode, out.decode(errors="replace"), err.decode(errors="replace")


def must(node, args, log):
    rc, out, err = pexec(node, args)
    log.write(f"[{getattr(node, 'name', 'root')}] {' '.join(args)} -> {rc} {err.strip()}\n")
    if rc != 0:
        raise Failed(f"{getattr(node, 'name', 'root')}: {' '.join(args)} exited {rc}: {err.strip()}")
    return out


def tc_blocks(text: str, devs) -> str:
    """The blocks of a ``tc -s qdisc show`` text (a ``qdisc ...`` line and the statistics lines under it) whose
    qdisc line names one of ``devs`` (``... dev DEV ...``), in their order."""
    keep, out = False, []
    for line in text.splitlines(keepends=True):
        if line.startswith("qdisc "):
            keep = any(f" dev {d} " in line for d in devs)
        if keep:
            out.append(line)
    return "".join(out)


def qdiscs(node, devs=None) -> tuple[str, list]:
    """``tc -s qdisc show`` (text) and ``tc -s -j qdisc show`` (list) of a node's namespace, only the interfaces
    ``devs`` when given (a switch's ports in the root namespace)."""
    text = pexec(node, ["tc", "-s", "qdisc", "show"])[1]
    try:
        js = [e for e in json.loads(pexec(node, ["tc", "-s", "-j", "qdisc", "show"])[1] or "[]") if isinstance(e, dict)]
    except ValueError:
        js = []
    if devs:
        text, js = tc_blocks(text, devs), [e for e in js if e.get("dev") in devs]
    return text, js


def median(v):
    v = sorted(v)
    if not v:
        return None
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def rtts(text: str) -> list:
    return [float(m) for m in re.findall(r"time=([0-9.]+)", text)]


def root_bytes(lst: list, dev: str) -> int:
    for e in lst:
        if e.get("dev") == dev and e.get("root"):
            return int(e.get("bytes", 0))
    return 0


def qdisc_list(node) -> list:
    """``tc -s -j qdisc show`` of a node's namespace (the root namespace for a switch), [] when it fails."""
    try:
        lst = json.loads(pexec(node, ["tc", "-s", "-j", "qdisc", "show"])[1] or "[]")
    except ValueError:
        return []
    return [e for e in lst if isinstance(e, dict)]


class Sampler(threading.Thread):
    """Every ``interval`` s: the qdiscs of each host's namespace and of the switches' ports (one ``tc -s -j qdisc
    show`` each: three calls a round, which under TCG take ~0.1 s each), as JSON lines {"t": epoch s, "node": NAME,
    "qdiscs": [...]} (:data:`SAMPLE_KEYS`) in ``path``, until stopped. ``hosts``: [(name, node)]; ``switches``:
    {name: [device, ...]} (in the root namespace)."""

    def __init__(self, hosts, switches, interval, path):
        super().__init__(daemon=True)
        self.hosts, self.switches, self.interval, self.path = hosts, switches, interval, path
        self.halt = threading.Event()
        self.n = 0

    def run(self):
        def line(t, name, lst):
            return json.dumps({"t": round(t, 3), "node": name,
                               "qdiscs": [{k: e[k] for k in SAMPLE_KEYS if k in e} for e in lst]}) + "\n"
        with open(self.path, "w") as f:
            nxt = time.time()
            while not self.halt.is_set():
                for name, node in self.hosts:
                    t = time.time()
                    f.write(line(t, name, qdisc_list(node)))
                t = time.time()
                lst = qdisc_list(None)
                for name, devs in self.switches.items():
                    f.write(line(t, name, [e for e in lst if e.get("dev") in devs]))
                f.flush()
                self.n += 1
                nxt += self.interval
                self.halt.wait(max(0.0, nxt - time.time()))


# ------------------------------------------------------------------------------------------------ the run

def build(a, topo, log, tc_calls):
    """The Mininet network (not started): h1, h2, OVSBridge s1, s2, four TCLinks."""
    from mininet.link import TCIntf, TCLink
    from mininet.net import Mininet
    from mininet.node import OVSBridge

    orig_tc = TCIntf.tc

    def recorded_tc(self, cmd, tc="tc"):
        out = orig_tc(self, cmd, tc)
        tc_calls.append({"t": round(time.time(), 3), "node": self.node.name, "intf": self.name,
                         "cmd": cmd % (tc, self), "output": (out or "").replace("\r", "")})
        return out
    TCIntf.tc = recorded_tc

    net = Mininet(topo=None, switch=OVSBridge, link=TCLink, controller=None, autoSetMacs=True, build=False)
    h1 = net.addHost("h1", ip=None)
    h2 = net.addHost("h2", ip=None)
    links = {}
    for k in (1, 2):
        p = topo["paths"][k]
        s = net.addSwitch(f"s{k}")
        delay = f"{p['delay_ms']:g}ms"
        client_link = {"bw": p["rate_mbit"], "delay": delay, "max_queue_size": a.queue_pkts}
        server_link = {"bw": p["rate_mbit"], "max_queue_size": a.queue_pkts}
        if a.delay_links == "both":
            server_link["delay"] = delay
        net.addLink(h1, s, **client_link)    # h1-eth(k-1) <-> sK-eth1
        net.addLink(s, h2, **server_link)    # sK-eth2 <-> h2-eth(k-1)
        links[k] = {"h1-s": client_link, "s-h2": server_link}
    log.write(f"links: {json.dumps(links)}\n")
    return net, links


def configure(net, topo, log):
    h1, h2 = net.get("h1"), net.get("h2")
    svc = topo["service"]
    for k in (1, 2):
        p = topo["paths"][k]
        must(h1, ["ip", "addr", "add", f"{p['client_addr']}/{p['prefix']}", "dev", f"h1-eth{k - 1}"], log)
        must(h2, ["ip", "addr", "add", f"{p['server_addr']}/{p['prefix']}", "dev", f"h2-eth{k - 1}"], log)
    must(h2, ["ip", "addr", "add", f"{svc}/32", "dev", "lo"], log)
    p1, p2 = topo["paths"][1], topo["paths"][2]
    must(h1, ["ip", "route", "add", f"{svc}/32", "via", p1["server_addr"], "dev", "h1-eth0"], log)
    for k, table in ((1, "101"), (2, "102")):
        p = topo["paths"][k]
        must(h1, ["ip", "route", "add", f"{svc}/32", "via", p["server_addr"], "dev", f"h1-eth{k - 1}",
                  "table", table], log)
        must(h1, ["ip", "rule", "add", "from", p["client_addr"], "table", table, "priority", str(1000 + k)], log)
    for h in (h1, h2):
        for dev in ("all", "default", f"{h.name}-eth0", f"{h.name}-eth1"):
            must(h, ["sysctl", "-qw", f"net.ipv4.conf.{dev}.rp_filter=0"], log)
        must(h, ["sysctl", "-qw", "net.mptcp.enabled=1"], log)
        must(h, ["ip", "mptcp", "limits", "set", "subflow", "2", "add_addr_accepted", "2"], log)
    must(h1, ["ip", "mptcp", "endpoint", "add", p2["client_addr"], "dev", "h1-eth1", "subflow"], log)


def describe(net, log) -> dict:
    """Per host: sysctls, offloads of its interfaces, MPTCP endpoints and limits, routes; per switch: offloads."""
    d = {}
    for name in ("h1", "h2", "s1", "s2"):
        n = net.get(name)
        devs = [i.name for i in n.intfList() if i.name != "lo"]
        entry = {"interfaces": devs, "offloads": {}}
        for dev in devs:
            txt = pexec(n, ["ethtool", "-k", dev])[1]
            entry["offloads"][dev] = {k: (re.search(rf"^{k}: (\S+)", txt, re.M) or [None, None])[1] for k in OFFLOADS}
        if name.startswith("h"):
            entry["sysctls"] = {}
            for s in SYSCTLS:
                rc, out, _ = pexec(n, ["sysctl", "-n", s])
                entry["sysctls"][s] = " ".join(out.split()) if rc == 0 else None
            entry["mptcp_endpoints"] = pexec(n, ["ip", "mptcp", "endpoint", "show"])[1].strip()
            entry["mptcp_limits"] = pexec(n, ["ip", "mptcp", "limits", "show"])[1].strip()
            entry["addresses"] = pexec(n, ["ip", "-br", "addr"])[1].strip()
            entry["rules"] = pexec(n, ["ip", "rule"])[1].strip()
            entry["routes"] = {t: pexec(n, ["ip", "route", "show", "table", t])[1].strip()
                               for t in ("main", "101", "102")}
        d[name] = entry
    return d


def run(a) -> int:
    topo = read_topology(a.topology)
    out = Path(a.out)
    for sub in ("iperf3", "ping", "tc", "ovs", "nstat"):
        (out / sub).mkdir(parents=True)
    log = open(out / "run.log", "a", buffering=1)

    def say(msg):
        line = f"[{time.strftime('%H:%M:%S', time.gmtime())}] {msg}"
        log.write(line + "\n")
        print(line, file=sys.stderr, flush=True)

    from mininet.log import setLogLevel
    from mininet.net import VERSION as MN_VERSION
    setLogLevel("info")
    svc = topo["service"]
    caddr = {k: topo["paths"][k]["client_addr"] for k in (1, 2)}
    start_time = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    say(f"run: mode {a.mode} queue {a.queue_pkts} pkts rep {a.rep} {a.duration_s}s ping every {a.ping_interval_s}s "
        f"cc {a.cc} delay on {a.delay_links} links; Mininet {MN_VERSION}")
    tc_calls: list = []
    procs: list = []
    net = None
    meta = {"mode": a.mode, "queue_pkts": a.queue_pkts, "rep": a.rep, "duration_s": a.duration_s,
            "ping_interval_s": a.ping_interval_s, "sample_interval_s": a.sample_interval_s, "cc": a.cc,
            "delay_links": a.delay_links, "transport": "mptcp" if a.mode == "mptcp" else "tcp",
            "tcp_path": None if a.mode == "mptcp" else 1, "family": "003", "experiment": "scenario",
            "backend": "mininet-ovs-qemu-tcg-guest", "kernel": os.uname().release, "host": os.uname().nodename,
            "start_time": start_time, "topology": {"file": "testbed/families/003/topology.json", **topo}}
    try:
        t0 = time.time()
        net, links = build(a, topo, log, tc_calls)
        net.start()
        meta["links"] = links
        meta["seconds_to_start"] = round(time.time() - t0, 1)
        say(f"network up in {meta['seconds_to_start']} s")
        h1, h2 = net.get("h1"), net.get("h2")
        configure(net, topo, log)
        nodes = [("h1", h1, None), ("h2", h2, None), ("s1", None, ["s1-eth1", "s1-eth2"]),
                 ("s2", None, ["s2-eth1", "s2-eth2"])]

        def snap(when):
            res = {}
            for name, node, devs in nodes:
                text, lst = qdiscs(node, devs)
                (out / "tc" / f"{name}-{when}.txt").write_text(text)
                (out / "tc" / f"{name}-{when}.json").write_text(json.dumps(lst))
                res[name] = (text, lst)
            return res

        # idle RTT over each path before any traffic (10 pings 50 ms apart) against the path's round trip, after
        # two pings that resolve the next hop's address and let the bridge learn the hosts' MAC addresses (its
        # first packets go up to ovs-vswitchd: ~45 ms under TCG)
        idle = {}
        for k in (1, 2):
            txt = pexec(h1, ["ping", "-n", "-c", "2", "-i", "0.2", "-I", caddr[k], svc])[1]
            (out / "ping" / f"warmup-path{k}.txt").write_text(txt)
            txt = pexec(h1, ["ping", "-n", "-c", "10", "-i", "0.05", "-I", caddr[k], svc])[1]
            (out / "ping" / f"idle-path{k}.txt").write_text(txt)
            idle[k] = median(rtts(txt))
        before = snap("before")
        (out / "tc" / "commands.json").write_text(json.dumps(tc_calls, indent=1))
        (out / "ovs" / "show.txt").write_text(pexec(None, ["ovs-vsctl", "show"])[1])
        ovs = {}
        for table in ("qos", "queue"):
            try:
                ovs[table] = json.loads(pexec(None, ["ovs-vsctl", "--format=json", "list", table])[1] or "{}")
            except ValueError:
                ovs[table] = None
        for s in ("s1", "s2"):
            ovs[f"{s}_fail_mode"] = pexec(None, ["ovs-vsctl", "get-fail-mode", s])[1].strip()
            ovs[f"{s}_controller"] = pexec(None, ["ovs-vsctl", "get-controller", s])[1].strip()
            ovs[f"{s}_ports"] = pexec(None, ["ovs-vsctl", "list-ports", s])[1].split()
            ovs[f"{s}_port_qos"] = {p: pexec(None, ["ovs-vsctl", "get", "port", p, "qos"])[1].strip()
                                    for p in ovs[f"{s}_ports"]}
        (out / "ovs" / "qos.json").write_text(json.dumps(ovs, indent=1))
        meta["ovs"] = {k: v for k, v in ovs.items() if k not in ("qos", "queue")}
        meta["ovs"]["qos_rows"] = len((ovs.get("qos") or {}).get("data", []))
        meta["nodes"] = describe(net, log)

        # the flow
        wrap = ["mptcpize", "run"] if a.mode == "mptcp" else []
        srv = h2.popen(wrap + ["iperf3", "-s", "-1", "-B", svc, "-p", str(PORT), "--json"],
                       stdout=open(out / "iperf3" / "server.json", "wb"), stderr=log)
        procs.append(srv)
        for _ in range(100):
            if pexec(h2, ["ss", "-Hltn", f"sport = :{PORT}"])[1].strip():
                break
            time.sleep(0.1)
        else:
            raise Failed("iperf3 server not listening after 10 s")
        sampler = Sampler([("h1", h1), ("h2", h2)], {name: devs for name, node, devs in nodes if devs},
                          a.sample_interval_s, out / "tc" / "samples.jsonl")
        sampler.start()
        pings = []
        for k in (1, 2):
            p = h1.popen(["ping", "-n", "-D", "-i", f"{a.ping_interval_s:g}", "-w", str(a.duration_s), "-I", caddr[k],
                          svc], stdout=open(out / "ping" / f"path{k}.txt", "wb"), stderr=log)
            procs.append(p)
            pings.append(p)
        flow_start = time.time()
        say(f"flow start: {a.mode} from {caddr[1]}")
        cli = h1.popen(["timeout", "-k", "5", str(a.duration_s + 60)] + wrap
                       + ["iperf3", "-c", svc, "-B", caddr[1], "-p", str(PORT), "-C", a.cc, "-t", str(a.duration_s),
                          "--connect-timeout", "5000", "--json"],
                       stdout=open(out / "iperf3" / "client.json", "wb"), stderr=log)
        procs.append(cli)
        crc = cli.wait()
        flow_end = time.time()
        try:
            srv.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
        for p in pings:   # their deadline is the flow's duration: their last replies arrive now
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
        sampler.halt.set()
        sampler.join(timeout=30)
        after = snap("after")
        for name, node in (("h1", h1), ("h2", h2)):
            (out / "nstat" / f"{name}.txt").write_text(pexec(node, ["nstat", "-asz", "MPTcp*"])[1])
        mptcp = {}
        for name, node in (("h1", h1), ("h2", h2)):
            try:
                k = json.loads(pexec(node, ["nstat", "-asz", "-j", "MPTcp*"])[1])["kernel"]
                mptcp[name] = {c: v for c, v in k.items() if v}
            except (ValueError, KeyError, TypeError):
                mptcp[name] = {}
        (out / "tc" / "commands.json").write_text(json.dumps(tc_calls, indent=1))

        # checks: the flow ran and took the paths its mode asks for (bytes the switches sent towards the server)
        b = {k: root_bytes(after[f"s{k}"][1], f"s{k}-eth2") - root_bytes(before[f"s{k}"][1], f"s{k}-eth2")
             for k in (1, 2)}

        def chk(m, rtt):
            return {"rtt_median_ms": m, "expected_rtt_ms": rtt,
                    "rtt_ok": m is not None and abs(m - rtt) <= max(1.0, 0.05 * rtt)}
        per_link = 2 if a.delay_links == "both" else 1
        sc = {f"path{k}": chk(idle[k], 2 * per_link * topo["paths"][k]["delay_ms"]) for k in (1, 2)}
        sc["ok"] = sc["path1"]["rtt_ok"] and sc["path2"]["rtt_ok"]
        meta.update({
            "self_check": sc, "flow_start_epoch": flow_start, "flow_end_epoch": flow_end,
            "path_bytes_to_server": {"path1": b[1], "path2": b[2]}, "mptcp_counters": mptcp,
            "tc_commands": [f"{c['cmd']}" for c in tc_calls if " qdisc show " not in c["cmd"]],
            "qdiscs_as_built": {n: before[n][0] for n in before}, "tc_samples": sampler.n,
            "tool_versions": {"mininet": MN_VERSION, "ovs-vsctl": first_line(["ovs-vsctl", "--version"]),
                              "ovs-vswitchd": first_line(["ovs-vswitchd", "--version"]),
                              "iperf3": first_line(["iperf3", "--version"]), "ping": first_line(["ping", "-V"]),
                              "mptcpize": first_line(["mptcpize", "-V"]), "iproute2": first_line(["ip", "-V"]),
                              "python3": sys.version.split()[0]},
            "root_sysctls": {s: first_line(["sysctl", "-n", s]) for s in SYSCTLS}})
        if crc != 0:
            raise Failed(f"iperf3 client exited {crc}")
        try:
            doc = json.loads((out / "iperf3" / "client.json").read_text())
        except ValueError:
            raise Failed("iperf3 client: no JSON output") from None
        if isinstance(doc, dict) and doc.get("error"):
            raise Failed(f"iperf3 client: {doc['error']}")
        if a.mode == "mptcp":
            if not (b[1] >= MIN_BYTES and b[2] >= MIN_BYTES):
                raise Failed(f"mptcp: path bytes to the server {b[1]} / {b[2]}, expected both >= {MIN_BYTES}")
        elif b[2] >= MIN_BYTES:
            raise Failed(f"tcp_path1: path 2 carried {b[2]} bytes towards the server")
        meta["status"] = "complete"
        (out / "meta.json").write_text(json.dumps(meta, indent=1))
        (out / "COMPLETE").write_text(time.strftime("%Y-%m-%dT%H:%M:%SZ\n", time.gmtime()))
        say(f"COMPLETE: path bytes to server {b[1]} / {b[2]}; idle RTT {idle[1]} / {idle[2]} ms; "
            f"{sampler.n} tc samples")
        return 0
    except Exception as e:   # a failed check (Failed) or anything Mininet raised: the run is kept, failed
        reason = str(e) if isinstance(e, Failed) else f"{type(e).__name__}: {e}"
        say(f"FAILED: {reason}")
        meta.update({"status": "failed", "reason": reason})
        (out / "meta.json").write_text(json.dumps(meta, indent=1, default=str))
        if tc_calls:
            (out / "tc" / "commands.json").write_text(json.dumps(tc_calls, indent=1))
        return 1
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        if net is not None:
            net.stop()
        log.close()


def main(argv=None) -> int:
    try:
        a = parse_args(sys.argv[1:] if argv is None else argv)
    except Usage as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("error: topo003.py needs root (Mininet)", file=sys.stderr)
        return 2
    try:
        import mininet.net  # noqa: F401
    except ImportError:
        print("error: Mininet's Python API is not installed (Debian package mininet; box revision 6)", file=sys.stderr)
        return 2
    return run(a)


if __name__ == "__main__":
    sys.exit(main())
