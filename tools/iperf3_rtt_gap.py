#!/usr/bin/env python3
"""Study 000's mean RTTs by two definitions side by side: the router1 capture's and iperf3's own sender RTT.

The RTT claims (S05/S23 over link delays, S11/S12/S13 under loss) use ``rtt_mean_ms``: ACK-based samples at router1
with Karn's rule (``analysis.metrics.rtt.ack_rtt_ms``). This script puts next to it, run by run, the sender's own
``end.streams[0].sender.mean_rtt`` (iperf3 JSON, microseconds: the Linux sender's smoothed RTT, RFC 6298, sampled
once per interval and averaged by iperf3), so that the RTT definition can be ruled in or out as the cause of a
difference (docs/claims.md, "Open explanations"). The two differ where ACKs end loss recoveries: a capture-based
sample times the latest segment such an ACK newly acknowledges, sent before the recovery; Linux times no segment an
ACK covering retransmitted data acknowledges (it uses the timestamp echo or a newly SACKed segment instead).

usage: python tools/iperf3_rtt_gap.py BUNDLE_OR_CAMPAIGN_DIR [--experiment link_delay|loss_rate] [--levels 10,20]
  link_delay (default): single-flow multipath runs without loss (link_delay and single_vs_multi), per link delay
                        (ms, default 10,20,50,100);
  loss_rate: single-flow multipath runs at link delay 10 ms, per loss rate (%, default 1,2,5,10).
Prints one line per level and cc: the mean RTT by each definition (ms, mean over runs) and, for the loss-based ccs,
the gap to BBR by each (cc minus BBR), with the number of runs.
"""
from __future__ import annotations

import argparse
import json
import lzma
import statistics
import sys
from collections import defaultdict
from pathlib import Path

LOSS_BASED = ("reno", "bic", "cubic")
DEFAULT_LEVELS = {"link_delay": "10,20,50,100", "loss_rate": "1,2,5,10"}


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


def single_flow_rows(df, experiment: str, levels: list[float]):
    """Flow-1 rows of the single-flow multipath runs of ``experiment`` at ``levels`` with a level column."""
    multi = df[(df["flow"] == 1) & (df["path_mode"] == "multipath") & df["cc2"].isna()]
    if experiment == "link_delay":
        sel = multi[multi["experiment"].isin(["link_delay", "single_vs_multi"]) & (multi["loss_pct"] == 0)]
        return sel.assign(level=sel["link_delay_ms"])[lambda d: d["level"].isin(levels)]
    sel = multi[(multi["experiment"] == "loss_rate") & (multi["link_delay_ms"] == 10)]
    return sel.assign(level=sel["loss_pct"])[lambda d: d["level"].isin(levels)]


def table(rows, runs: Path) -> dict:
    """{(level, cc): {"router1": [ms...], "iperf3": [ms...]}} over ``rows`` (iperf3's where its JSON is readable)."""
    out = defaultdict(lambda: {"router1": [], "iperf3": []})
    for r in rows.itertuples():
        cell = out[(float(r.level), r.cc)]
        cell["router1"].append(float(r.rtt_mean_ms))
        v = sender_mean_rtt_ms(runs / r.run_id)
        if v is not None:
            cell["iperf3"].append(v)
    return out


def lines(cells: dict, unit: str) -> list[str]:
    mean = statistics.mean
    out = []
    for level in sorted({lv for lv, _ in cells}):
        by = {cc: c for (lv, cc), c in cells.items() if lv == level}
        parts = []
        for cc in sorted(by, key=lambda c: (c != "bbr", c)):
            c = by[cc]
            s = f"{cc} router1 {mean(c['router1']):.1f} (n={len(c['router1'])})"
            s += f", iperf3 {mean(c['iperf3']):.1f} (n={len(c['iperf3'])})" if c["iperf3"] else ", iperf3 none"
            if cc in LOSS_BASED and "bbr" in by:
                b = by["bbr"]
                s += f", gap to bbr router1 {mean(c['router1']) - mean(b['router1']):+.1f}"
                if c["iperf3"] and b["iperf3"]:
                    s += f" / iperf3 {mean(c['iperf3']) - mean(b['iperf3']):+.1f}"
            parts.append(s)
        out.append(f"{level:g} {unit}: " + "; ".join(parts))
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("campaign_dir")
    ap.add_argument("--experiment", choices=sorted(DEFAULT_LEVELS), default="link_delay")
    ap.add_argument("--levels", default=None, help="link delays (ms) or loss rates (%%), comma-separated")
    ap.add_argument("--delays", default=None, help=argparse.SUPPRESS)   # the older name of --levels
    a = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from analysis.bundle_store import runs_dir
    from analysis.dataset import load_campaign
    from analysis.errors import AnalysisError
    text = a.levels or a.delays or DEFAULT_LEVELS[a.experiment]
    try:
        levels = [float(x) for x in text.split(",")]
    except ValueError:
        print(f"error: --levels must be numbers separated by commas, got {text!r}", file=sys.stderr)
        return 2
    try:
        runs = runs_dir(a.campaign_dir)   # a columnar bundle's: materialised once (data/processed/bundles/)
        if not runs.is_dir():
            raise AnalysisError(f"{a.campaign_dir}: not a campaign or bundle directory (no runs/)")
        df = load_campaign(a.campaign_dir, progress=False)
    except AnalysisError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    cells = table(single_flow_rows(df, a.experiment, levels), runs)
    if not cells:
        print(f"no single-flow multipath {a.experiment} runs at {text} in {a.campaign_dir}")
        return 0
    print("\n".join(lines(cells, "ms" if a.experiment == "link_delay" else "%")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
