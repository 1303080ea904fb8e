"""`mpcc reorder`: RFC 4737 / RFC 5236 reordering metrics of the largest TCP flow of a capture."""
from __future__ import annotations

import json

from mpcc.errors import UserError

NAME = "reorder"
HELP = "packet reordering (RFC 4737, RFC 5236) of the largest TCP flow in a receiver-side capture"


def add_arguments(parser):
    parser.add_argument("--receiver", required=True, metavar="RX.pcap", help="capture taken at/near the receiver")
    parser.add_argument("--sender", metavar="TX.pcap",
                        help="capture at the sender side: only segments sent exactly once are evaluated")
    parser.add_argument("--dt", type=int, default=3, help="RFC 5236 RD displacement threshold DT, packets (default 3)")
    parser.add_argument("--bt", type=int, default=3, help="RFC 5236 RBD buffer-occupancy threshold BT, packets (default 3)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def _fmt_density(d: dict) -> str:
    return " ".join(f"{k}:{v:.4f}" for k, v in d.items()) or "-"


def run(args) -> int:
    if args.dt < 0 or args.bt < 0:
        raise UserError("--dt and --bt must be non-negative integers")
    from analysis.ingest import read_pcap  # lazy: heavy import only when the command runs
    from analysis.metrics.reordering import tcp_reordering

    rx = read_pcap(args.receiver)
    tx = read_pcap(args.sender) if args.sender else None
    try:
        res = tcp_reordering(rx, tx, dt=args.dt, bt=args.bt)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    res.pop("extents", None)
    if args.json:
        out = dict(res)
        out["rd"] = {str(k): v for k, v in res["rd"].items()}
        out["rbd"] = {str(k): v for k, v in res["rbd"].items()}
        print(json.dumps(out, sort_keys=True))
        return 0
    f = res["flow"]
    print(f"flow            {f['src']}:{f['sport']} -> {f['dst']}:{f['dport']}")
    print(f"basis           {res['basis']}")
    print(f"segments        {res['segments']} (evaluated {res['received']})")
    print(f"reordered       {res['reordered']}")
    print(f"reordered_ratio {res['reordered_ratio']:.6f}")
    print(f"extent_max      {res['extent_max']}")
    print(f"extent_mean     {res['extent_mean']:.3f}")
    print(f"n3_reordered    {res['n3_reordered']}")
    print(f"rd (DT={res['dt']})      {_fmt_density(res['rd'])}")
    print(f"rbd (BT={res['bt']})     {_fmt_density(res['rbd'])}")
    return 0
