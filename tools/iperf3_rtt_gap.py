#!/usr/bin/env python3
"""Study 000's RTT gap (loss-based cc minus BBR) by iperf3's own sender RTT, next to the router1 capture's.

Claim S05/S23 compare mean RTTs measured at router1 (ACK-based samples, Karn's rule: ``rtt_mean_ms``). This script
recomputes the same gaps from the senders' own ``end.streams[0].sender.mean_rtt`` (iperf3 JSON, microseconds: the
kernel's smoothed RTT averaged by iperf3) of every single-flow multipath run without loss, so that the RTT definition
can be ruled in or out as the cause of a difference (docs/claims.md, "Open explanations").

usage: python tools/iperf3_rtt_gap.py BUNDLE_OR_CAMPAIGN_DIR [--delays 10,20,50,100]
Prints one line per link delay: BBR's mean RTT and each loss-based cc's gap to it (ms), with the number of runs.
"""
from __future__ import annotations

import argparse
import json
import lzma
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

RUN = re.compile(r"^(link_delay|single_vs_multi)__(\w+?)__multipath__d(\d+)ms__l0pct__rep\d+$")


def sender_mean_rtt_ms(run_dir: Path) -> float | None:
    """iperf3's sender mean RTT of flow 1 in ms (None without a readable client JSON)."""
    for name in ("flow1-client.json.xz", "flow1-client.json"):
        f = run_dir / "iperf3" / name
        if f.is_file():
            raw = lzma.open(f).read() if f.suffix == ".xz" else f.read_bytes()
            try:
                return json.loads(raw)["end"]["streams"][0]["sender"]["mean_rtt"] / 1000.0
            except (ValueError, KeyError, IndexError, TypeError):
                return None
    return None


def gaps(runs_dir: Path, delays: list[int]) -> dict:
    """{delay: {cc: (mean RTT ms, n)}} over complete runs."""
    vals = defaultdict(list)
    for d in runs_dir.iterdir():
        m = RUN.match(d.name)
        if not m or not (d / "COMPLETE").exists() or int(m.group(3)) not in delays:
            continue
        rtt = sender_mean_rtt_ms(d)
        if rtt is not None:
            vals[(int(m.group(3)), m.group(2))].append(rtt)
    return {dl: {cc: (statistics.mean(v), len(v)) for (d2, cc), v in vals.items() if d2 == dl} for dl in delays}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("campaign_dir")
    ap.add_argument("--delays", default="10,20,50,100", help="link delays in ms, comma-separated")
    a = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from analysis.bundle_store import runs_dir
    from analysis.errors import AnalysisError
    try:
        runs = runs_dir(a.campaign_dir)   # a columnar bundle's: materialised once (data/processed/bundles/)
    except AnalysisError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not runs.is_dir():
        print(f"error: {a.campaign_dir}: not a campaign or bundle directory (no runs/)", file=sys.stderr)
        return 2
    try:
        delays = [int(x) for x in a.delays.split(",")]
    except ValueError:
        print(f"error: --delays must be integers separated by commas, got {a.delays!r}", file=sys.stderr)
        return 2
    for dl, by_cc in gaps(runs, delays).items():
        if "bbr" not in by_cc:
            print(f"{dl} ms: no bbr runs")
            continue
        b, nb = by_cc["bbr"]
        rest = ", ".join(f"{cc} {m - b:+.1f} ms (n={n})" for cc, (m, n) in sorted(by_cc.items()) if cc != "bbr")
        print(f"{dl} ms: bbr {b:.1f} ms (n={nb}); gap to bbr: {rest}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
