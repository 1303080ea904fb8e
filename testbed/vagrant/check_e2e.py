#!/usr/bin/env python3
"""Check the vagrant end-to-end campaign (testbed/vagrant/e2e.yaml) from its captures.

Checks (exit 0 only if all hold; one line per check on stdout, JSON summary with --json):
* both runs COMPLETE, backend "vagrant" in meta.json;
* goodput ratio multipath / single >= 1.8 — goodput of the flow-1 TCP data direction in router1.pcap
  (analysis.metrics.throughput.goodput_mbps: new sequence bytes x 8 / active window, Mbit/s);
* SACK present: the multipath run's receiver.pcap / router1.pcap carry SACK-permitted SYNs, and ACKs with SACK blocks
  (per-packet round-robin reorders segments, so the receiver sends SACKs, RFC 2018);
* both paths used: router1's round-robin counters (meta.json self_check) count packets on path 1 and on path 2.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))


def flow1(run_dir: Path):
    from analysis.flows import split_flows
    from analysis.ingest import read_pcap
    from analysis.ingest.schema import TCP
    df = read_pcap(run_dir / "router1.pcap", cache=False)
    flows = [f for f in split_flows(df) if f.proto == TCP and f.dst == "10.4.1.2" and f.dport == 5201]
    if not flows:
        raise SystemExit(f"error: no iperf3 data flow 10.1.1.2 -> 10.4.1.2:5201 in {run_dir / 'router1.pcap'}")
    return max(flows, key=lambda f: int(f.data["payload_len"].sum()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("campaign_dir")
    ap.add_argument("--min-ratio", type=float, default=1.8)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    from analysis.metrics.throughput import goodput_mbps
    runs = {}
    for d in sorted((Path(a.campaign_dir) / "runs").iterdir()):
        if d.is_dir() and "incomplete" not in d.name:
            p = json.loads((d / "params.json").read_text())
            runs[p["path_mode"]] = d
    res, ok = {}, True

    def check(name, cond, detail):
        nonlocal ok
        ok &= bool(cond)
        res[name] = {"ok": bool(cond), "detail": detail}
        print(f"{'PASS' if cond else 'FAIL'} {name}: {detail}")

    for pm in ("single", "multipath"):
        d = runs.get(pm)
        complete = d is not None and (d / "COMPLETE").exists()
        check(f"{pm}_complete", complete, str(d))
        if not complete:
            return 1
        meta = json.loads((d / "meta.json").read_text())
        check(f"{pm}_backend", meta.get("backend") == "vagrant", f"backend={meta.get('backend')} kernel={meta.get('kernel')}")
    g = {}
    for pm, d in runs.items():
        f = flow1(d)
        g[pm] = goodput_mbps(f.data)
        res.setdefault("goodput_mbps", {})[pm] = round(g[pm], 3)
    ratio = g["multipath"] / g["single"] if g["single"] > 0 else float("nan")
    check("goodput_ratio", ratio >= a.min_ratio,
          f"multipath {g['multipath']:.2f} / single {g['single']:.2f} Mbit/s = {ratio:.3f} (need >= {a.min_ratio})")
    fm = flow1(runs["multipath"])
    syn = fm.data[(fm.data["flags"] & 0x02) != 0]
    synack = fm.ack[(fm.ack["flags"] & 0x02) != 0]
    sack_perm = bool(syn["sack_permitted"].any()) and bool(synack["sack_permitted"].any())
    sack_acks = int((fm.ack["sack_blocks"] > 0).sum())
    check("sack_present", sack_perm and sack_acks > 0,
          f"SACK-permitted on SYN and SYN-ACK: {sack_perm}; ACKs with SACK blocks: {sack_acks}")
    meta = json.loads((runs["multipath"] / "meta.json").read_text())
    rr = meta.get("self_check", {}).get("round_robin", {}).get("router1", {})
    p1, p2 = rr.get("path1_pkts", 0), rr.get("path2_pkts", 0)
    check("both_paths_used", p1 > 0 and p2 > 0, f"router1 round-robin counters: path1 {p1}, path2 {p2} packets")
    res["clock"] = meta.get("clock")
    if a.json:
        print(json.dumps(res, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
