#!/usr/bin/env python3
"""Measure each VM's clock offset against the host clock (no NTP needed: works offline).

Method (Cristian's algorithm, NTP-style minimum-delay filter): one persistent ssh session per VM runs
``while read x; do date +%s.%N; done``. The host sends a line at host time t0, the guest answers with its clock
reading g, the host receives the answer at t1. For that exchange the offset estimate is ``g - (t0 + t1) / 2`` and the
true offset lies within ``+-(t1 - t0) / 2`` of it (the guest read its clock somewhere between t0 and t1). Of N
exchanges the one with the smallest round trip is kept: its half round trip is the stated error bound.
The offset between two VMs A and B is offset_A - offset_B with error bound bound_A + bound_B.

Output (stdout, JSON): {"method", "reference": "host", "exchanges", "nodes": {NODE: {"offset_ms", "error_bound_ms",
"rtt_min_ms"}}, "max_pairwise_offset_ms", "max_pairwise_error_bound_ms"}.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time


def measure(node: str, ssh_config: str, control_dir: str | None, n: int) -> dict:
    cmd = ["ssh", "-F", ssh_config, "-o", "LogLevel=ERROR", "-T"]
    if control_dir:
        cmd += ["-o", "ControlMaster=no", "-o", f"ControlPath={control_dir}/cm-%h"]
    cmd += [node, "while read x; do date +%s.%N; done"]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    best = None
    try:
        # one warm-up exchange (the remote shell may still be starting)
        proc.stdin.write("w\n")
        proc.stdin.flush()
        if not proc.stdout.readline():
            raise RuntimeError(f"{node}: no answer over ssh")
        for _ in range(n):
            t0 = time.time()
            proc.stdin.write("x\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
            t1 = time.time()
            if not line:
                raise RuntimeError(f"{node}: ssh session ended")
            g = float(line)
            rtt = t1 - t0
            if best is None or rtt < best[0]:
                best = (rtt, g - (t0 + t1) / 2)
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
    rtt, off = best
    return {"offset_ms": round(off * 1e3, 3), "error_bound_ms": round(rtt / 2 * 1e3, 3), "rtt_min_ms": round(rtt * 1e3, 3)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ssh-config", required=True)
    p.add_argument("--control-dir")
    p.add_argument("-n", "--exchanges", type=int, default=20)
    p.add_argument("nodes", nargs="+")
    a = p.parse_args(argv)
    if a.exchanges < 1:
        print("error: --exchanges must be >= 1", file=sys.stderr)
        return 2
    res = {}
    try:
        for node in a.nodes:
            res[node] = measure(node, a.ssh_config, a.control_dir, a.exchanges)
    except (RuntimeError, ValueError, OSError) as e:
        print(f"error: clock offset measurement failed: {e}", file=sys.stderr)
        return 1
    offs = [v["offset_ms"] for v in res.values()]
    bounds = sorted((v["error_bound_ms"] for v in res.values()), reverse=True)
    out = {
        "method": "ssh round trip, guest `date +%s.%N` vs host midpoint, min-RTT of N exchanges (Cristian)",
        "reference": "host",
        "exchanges": a.exchanges,
        "nodes": res,
        "max_pairwise_offset_ms": round(max(offs) - min(offs), 3),
        "max_pairwise_error_bound_ms": round(sum(bounds[:2]), 3),
    }
    json.dump(out, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
