"""`mpcc analyze PCAP [--json]`: per-flow TCP/UDP metrics of one capture."""
from __future__ import annotations

import json
import math
import os

from analysis.errors import NoTrafficError
from mpcc.errors import UserError

NAME = "analyze"
HELP = "per-flow metrics of a capture (data packets/bytes, retransmissions, SACK/D-SACK, RTT, goodput)"


def add_arguments(parser):
    parser.add_argument("pcap", metavar="PCAP", help="pcap or pcapng file")
    parser.add_argument("--json", action="store_true", help="print one JSON object {\"flows\": [...]}")


def _num(x, nd=3):
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), nd)


def flow_records(df) -> list[dict]:
    """One dict per flow (TCP connection data direction, or UDP direction)."""
    # imported here, not at module level: every `mpcc` invocation loads this module to build its parser
    from analysis.flows import split_flows
    from analysis.ingest.schema import TCP
    from analysis.metrics import rtt, sack, throughput
    from analysis.metrics.retransmissions import retransmissions, spurious_retransmissions

    out = []
    for f in split_flows(df):
        d = f.data
        dur = float(d["ts"].max() - d["ts"].min()) if len(d) else 0.0
        if f.proto == TCP:
            dd = d[d["payload_len"] > 0]
            samples = rtt.ack_rtt_ms(d, f.ack)
            ts_s = rtt.ts_rtt_ms(d, f.ack)
            out.append({
                "proto": "tcp", "src": f.src, "sport": int(f.sport), "dst": f.dst, "dport": int(f.dport),
                "packets": int(len(d)), "data_packets": int(len(dd)), "data_bytes": int(dd["payload_len"].sum()),
                "retransmissions": retransmissions(d),
                "spurious_retransmissions": spurious_retransmissions(d, f.ack),
                "ack_packets": int(len(f.ack)),
                "sack_acks": sack.sack_acks(f.ack), "sack_blocks": sack.sack_blocks(f.ack),
                "dsack_blocks": sack.dsack_blocks(f.ack),
                "rtt_ms_median": _num(rtt.summary_ms(samples)["median"]),
                "rtt_ms_mean": _num(rtt.summary_ms(samples)["mean"]),
                "rtt_ms_p95": _num(rtt.summary_ms(samples)["p95"]),
                "rtt_samples": int(len(samples)),
                "ts_rtt_ms_median": _num(rtt.summary_ms(ts_s)["median"]),
                "goodput_mbps": _num(throughput.goodput_mbps(d)),
                "throughput_mbps": _num(throughput.raw_throughput_mbps(d)),
                "duration_s": _num(dur, 6),
            })
        else:
            out.append({
                "proto": "udp", "src": f.src, "sport": int(f.sport), "dst": f.dst, "dport": int(f.dport),
                "packets": int(len(d)), "bytes": int(d["payload_len"].sum()),
                "goodput_mbps": _num(throughput.goodput_mbps(d)), "duration_s": _num(dur, 6),
            })
    return out


def run(args) -> int:
    if not os.path.isfile(args.pcap):
        raise UserError(f"not a capture file (missing or not a regular file): {args.pcap}")
    from analysis.ingest import read_pcap

    df = read_pcap(args.pcap)
    if len(df) == 0:
        raise NoTrafficError(f"{args.pcap}: no TCP or UDP packets in the capture")
    flows = flow_records(df)
    if args.json:
        print(json.dumps({"flows": flows}))
        return 0
    hdr = f"{'proto':5} {'src':>22} {'dst':>22} {'pkts':>7} {'bytes':>10} {'retx':>5} {'sackA':>6} {'sackB':>6} {'dsack':>5} {'rtt_ms':>8} {'Mbit/s':>8} {'dur_s':>7}"
    print(hdr)
    for r in flows:
        tcp = r["proto"] == "tcp"
        print(f"{r['proto']:5} {r['src'] + ':' + str(r['sport']):>22} {r['dst'] + ':' + str(r['dport']):>22} "
              f"{(r['data_packets'] if tcp else r['packets']):>7} {(r['data_bytes'] if tcp else r['bytes']):>10} "
              f"{(r['retransmissions'] if tcp else '-'):>5} {(r['sack_acks'] if tcp else '-'):>6} "
              f"{(r['sack_blocks'] if tcp else '-'):>6} {(r['dsack_blocks'] if tcp else '-'):>5} "
              f"{str(r.get('rtt_ms_median', '-')):>8} {str(r['goodput_mbps']):>8} {str(r['duration_s']):>7}")
    return 0
