"""What the real-namespace tests share: listing a test's namespaces, reading the IPv4 packets of a capture, and
checking that a capture tool's run directory is complete (exit 0, `COMPLETE` written last, meta.json readable).
A test skips when the tool recorded the run as SKIPPED (exit 3, e.g. a CC this kernel cannot have), with the tool's
reason."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import dpkt
import pytest


def namespaces(prefix: str) -> list[str]:
    """Names of the network namespaces whose name starts with ``prefix`` (a test's MPCC_NS_PREFIX)."""
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(prefix)]


def env_prefix(pid) -> str | None:
    """The MPCC_NS_PREFIX in the environment of process ``pid`` (None if unset or the process is gone): everything a
    capture tool and netns.sh start inherits it, so it tells which test's testbed a process belongs to."""
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    for kv in env:
        if kv.startswith(b"MPCC_NS_PREFIX="):
            return kv.split(b"=", 1)[1].decode()
    return None


def ip_packets(pcap: Path):
    """(timestamp s, dpkt IP) of every IPv4 packet of an Ethernet pcap."""
    with open(pcap, "rb") as f:
        for ts, buf in dpkt.pcap.Reader(f):
            eth = dpkt.ethernet.Ethernet(buf)
            if isinstance(eth.data, dpkt.ip.IP):
                yield ts, eth.data


def complete_run(d: Path, returncode: int, stderr: str, label: str) -> tuple[Path, dict]:
    """Assert that the capture tool finished run directory ``d`` (exit 0 and `COMPLETE`) and return it with its
    meta.json; skip with the tool's reason when it exited 3 (SKIPPED)."""
    if returncode == 3:
        pytest.skip(f"{label}: {(d / 'SKIPPED').read_text().strip()}")
    log = d / "capture.log"
    assert returncode == 0, (label, stderr[-2000:], log.read_text()[-3000:] if log.exists() else "")
    assert (d / "COMPLETE").exists()
    return d, json.loads((d / "meta.json").read_text())


# iperf3 3.12's UDP test starts with a 4-byte connect datagram and its reply, sent once: when the link's random loss
# or a full queue drops either, the client gives up after 30 s (capture_lib.sh iperf_ok fails the run)
UDP_CONNECT_LOST = "unable to read from stream socket"


def udp_connect_lost(text: str) -> bool:
    """True when a capture tool's stderr (or runner.log) says the run failed because iperf3's UDP connect was lost."""
    return "error: iperf3 (" in text and UDP_CONNECT_LOST in text


def run_campaign(campaign: Path, out: Path, prefix: str, *options: str, timeout: int = 900) -> Path:
    """Record ``campaign`` for real with the campaign runner on the netns backend into ``out`` (namespaces named
    ``prefix``...), assert it ended cleanly (exit 0, no traceback, no namespace left) and return ``out``. Runs that
    failed only because iperf3's UDP connect datagram was lost are recorded again by resuming (twice at most), as
    the recording queue does (tools/record_queue.sh)."""
    for attempt in range(3):
        r = subprocess.run([sys.executable, "-m", "mpcc.cli", "campaign", "run", str(campaign), "--backend", "netns",
                            "--out", str(out), *options], env={**os.environ, "MPCC_NS_PREFIX": prefix},
                           capture_output=True, text=True, timeout=timeout)
        assert "Traceback" not in r.stderr
        failed = [line.split()[1] for line in r.stderr.splitlines() if line.startswith("failed: ")]
        lost = [rid for rid in failed
                if udp_connect_lost((out / "runs" / rid / "runner.log").read_text(errors="replace"))]
        if r.returncode == 0 or not failed or len(lost) < len(failed):
            break
    assert r.returncode == 0, r.stderr[-2000:]
    assert namespaces(prefix) == []
    return out


def root_tool_traps(bindir: Path, calls: Path, tools) -> str:
    """Put a stand-in for each root tool (ip, tc, nft, ...) into ``bindir`` that logs its call to ``calls`` and
    fails; returns the PATH that finds them first. A test of input validation then proves that no root command ran:
    ``calls`` must not exist."""
    bindir.mkdir(parents=True, exist_ok=True)
    for tool in tools:
        f = bindir / tool
        f.write_text(f"#!/bin/sh\necho \"{tool} $*\" >> {calls}\nexit 1\n")
        f.chmod(0o755)
    return f"{bindir}:{os.environ['PATH']}"


def without_options(args: list[str], *opts: str) -> list[str]:
    """``args`` without the options ``opts`` and their values."""
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in opts:
            skip = True
            continue
        out.append(a)
    return out


def registered_ccs() -> dict[str, int]:
    """Registered tcp_congestion_ops struct_ops (state INUSE): name -> id, from ``bpftool -j struct_ops dump``. An
    unregistered map lives on in state TOBEFREE while a socket still uses it, and ``bpftool struct_ops show`` lists
    it too, under the same name: only the INUSE one is registered (testbed/cc/struct_ops_lib.sh)."""
    out = subprocess.run(["bpftool", "-j", "struct_ops", "dump"], capture_output=True, text=True, check=True).stdout
    regs, info = {}, None
    for e in json.loads(out or "[]"):
        if "bpf_map_info" in e:
            info = e["bpf_map_info"]
        elif "bpf_struct_ops_tcp_congestion_ops" in e and info is not None:
            if e["bpf_struct_ops_tcp_congestion_ops"]["common"]["state"] == "BPF_STRUCT_OPS_STATE_INUSE":
                regs[info["name"]] = info["id"]
    return regs


def steal_share(run_dir: Path) -> float:
    """The share of CPU time the hypervisor took from this machine while the run's flows ran (meta.json
    ``host_load.cpu_steal_pct`` / 100; 0 when not recorded)."""
    try:
        v = json.loads((Path(run_dir) / "meta.json").read_text())["host_load"].get("cpu_steal_pct")
    except (OSError, ValueError, KeyError, AttributeError):
        return 0.0
    return float(v) / 100 if isinstance(v, (int, float)) else 0.0


def rate_floor(run_dir: Path, quiet_floor: float) -> float:
    """A goodput floor (Mbit/s) for a shaped path: ``quiet_floor`` on a quiet host, scaled by the share of time the
    host kept (1 - steal): a shaper's dequeue timer and the delay shim lose the time the hypervisor takes. Measured on a
    2-core VM: 4.79 of 6 Mbit/s at 24.6 % steal, 8.62 of 10 with steal (9.50-9.56 quiet)."""
    return quiet_floor * (1 - steal_share(run_dir))
