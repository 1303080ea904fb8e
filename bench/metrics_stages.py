#!/usr/bin/env python3
"""CPU seconds per stage of one run's TCP analysis (what ``analysis.families.roundrobin.analyze_run`` does for flow 1), with the
current metric code and with the frozen pre-vectorising code (tests/reference_metrics_slow.py), same inputs.

    python3 bench/metrics_stages.py [--reps 5] [--reference | --no-reference] RUN_DIR

RUN_DIR: a complete run directory with router1.pcap and receiver.pcap (plain, .gz or .xz).  Stages: read_pcap of both
captures (no packet cache), split_flows (router1), the flow pick, ack_rtt_ms, goodput, SACK counters,
retransmissions, spurious_retransmissions, roundrobin._conn_rows (x2) and tcp_reordering (sender-filtered).  Times are
process CPU seconds (``time.process_time``), the mean of ``--reps`` repetitions after one warm-up (imports, numba
kernels loaded), printed with the load average: the machine is often shared.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _impl(reference: bool) -> dict:
    from analysis import flows
    from analysis.metrics import reordering, retransmissions, rtt
    if reference:
        sys.path.insert(0, str(ROOT / "tests"))
        import reference_metrics_slow as ref
        return dict(split=ref.split_flows, reo=ref.tcp_reordering, rtm=ref.retransmissions,
                    spur=ref.spurious_retransmissions, rtt=ref.ack_rtt_ms)
    return dict(split=flows.split_flows, reo=reordering.tcp_reordering, rtm=retransmissions.retransmissions,
                spur=retransmissions.spurious_retransmissions, rtt=rtt.ack_rtt_ms)


def stages(run: Path, impl: dict, reps: int) -> tuple[dict, int]:
    """{stage: mean CPU seconds} and the packet count of the two captures."""
    from analysis import runmeta
    from analysis.families import roundrobin
    from analysis.ingest import read_pcap
    from analysis.metrics import rtt, sack, throughput

    r1p, rxp = runmeta.capture_path(run, "router1.pcap"), runmeta.capture_path(run, "receiver.pcap")
    if r1p is None or rxp is None:
        raise SystemExit(f"metrics_stages: {run}: needs router1.pcap and receiver.pcap")
    tot: dict = {}
    n = 0
    for rep in range(reps + 1):                      # rep 0 warms up (imports, numba kernels) and is not counted
        t_all = {}

        def tick(name, t0):
            t = time.process_time()
            t_all[name] = t_all.get(name, 0.0) + t - t0
            return t

        t = time.process_time()
        r1, rx = read_pcap(r1p, cache=False), read_pcap(rxp, cache=False)
        t = tick("read_pcap router1 + receiver", t)
        f = roundrobin._pick_tcp(impl["split"](r1), runmeta.FLOWS[1]["port"])
        t = tick("split_flows (router1) + pick", t)
        if f is None:
            raise SystemExit(f"metrics_stages: {run}: no TCP connection on port 5201 at router1")
        d = f.data
        rtt.summary_ms(impl["rtt"](d, f.ack))
        t = tick("ack_rtt_ms", t)
        dd = d[d["payload_len"] > 0]
        throughput.goodput_mbps(d, float(dd["ts"].min()), float(dd["ts"].max()))
        sack.sack_acks(f.ack), sack.sack_blocks(f.ack), sack.dsack_blocks(f.ack)
        t = tick("goodput, data filter, SACK counters", t)
        impl["rtm"](d)
        t = tick("retransmissions", t)
        impl["spur"](d, f.ack)
        t = tick("spurious_retransmissions", t)
        a, b = roundrobin._conn_rows(rx, f), roundrobin._conn_rows(r1, f)
        t = tick("roundrobin._conn_rows x2", t)
        impl["reo"](a, sender_df=b)
        tick("tcp_reordering", t)
        n = len(r1) + len(rx)
        if rep:
            for k, v in t_all.items():
                tot[k] = tot.get(k, 0.0) + v / reps
    return tot, n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--reference", action=argparse.BooleanOptionalAction, default=True,
                    help="also time the frozen pre-vectorising code (default: yes)")
    args = ap.parse_args(argv)
    if not args.run.is_dir():
        print(f"metrics_stages: {args.run}: not a directory", file=sys.stderr)
        return 2
    if args.reps < 1:
        print("metrics_stages: --reps must be >= 1", file=sys.stderr)
        return 2
    os.environ.pop("MPCC_CACHE_DIR", None)
    from analysis.ingest import fast_reader
    from analysis.metrics import reordering, retransmissions
    fast_reader.have_numba(), reordering.have_numba(), retransmissions.have_numba()
    results = [("current", *stages(args.run, _impl(False), args.reps))]
    if args.reference:
        results.append(("before vectorising", *stages(args.run, _impl(True), args.reps)))
    print(f"{args.run}: {results[0][2]:,} packets; CPU seconds per run, mean of {args.reps}; "
          f"{os.cpu_count()} CPUs, load avg {os.getloadavg()[0]:.2f}; numba: {reordering.have_numba()}")
    names = list(results[0][1])
    print(f"  {'stage':<38}" + "".join(f"{label:>20}" for label, _, _ in results))
    for k in names:
        print(f"  {k:<38}" + "".join(f"{r[k]:17.3f} s " for _, r, _ in results))
    print(f"  {'total':<38}" + "".join(f"{sum(r.values()):17.3f} s " for _, r, _ in results))
    print(f"  {'packets per CPU-second':<38}" + "".join(f"{n / sum(r.values()) / 1e3:16.0f} k " for _, r, n in results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
