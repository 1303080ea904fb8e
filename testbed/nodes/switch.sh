#!/usr/bin/env bash
# Switch set-up, run INSIDE switch1/switch2.
# usage: switch.sh IF_FROM_SRC IF_FROM_DST ONE_WAY_DELAY_MS LOSS_PCT DELAY_MECH SHIM_BIN PIDFILE TBF_BURST_BYTES
#   Egress on both interfaces: TBF 10 Mbit/s (bucket TBF_BURST_BYTES: testbed/topology.json defaults.tbf_burst_bytes,
#   per backend) with a 100-packet pfifo. tc-tbf(8): the bucket must hold at least rate/HZ bytes, and "for 10mbit/s on Intel, you need at least 10kbyte
#   buffer if you want to reach your configured rate" -- the token refill is only as timely as the timer that runs
#   the qdisc, which in a namespace on the host is an hrtimer (2 frames reach 9.6 Mbit/s of goodput) and in a VM
#   whose vCPU waits for a host core is late by milliseconds (the vagrant backend uses 10000).
#   Delay ONE_WAY_DELAY_MS per direction (= link_delay_ms/2 per interface): netem if DELAY_MECH=netem,
#   else the NFQUEUE delay shim (both directions traverse FORWARD once).
#   Forward-only random loss LOSS_PCT on packets arriving from the src side.
#   --queue-model M          (study 000's switch only) how the 100-packet buffer and the delay are chained
#                            (docs/netem-semantics.md):
#     fifo-after-delay (the default with the shim; every namespace recording before 2026-11-26): the delay, then
#                      tbf with a pfifo of 100 packets; packets in their delay do not count towards the 100.
#     tbf-netem        (the default with netem) recipe A: tbf at the root, netem (delay, limit 100) its child: packets in their
#                      delay and packets waiting for the rate limiter share one limit of 100, dropped at arrival.
#                      With the shim: it counts its delay line plus the egress qdisc's qlen (delayshim -m shared).
#     netem-tbf        recipe B: netem (delay, limit 100) at the root, tbf (limit 151400 bytes, its default bfifo)
#                      its child: 100 packets of delay line, then 151400 bytes of queue (netem as on the paper's
#                      4.15, before the 2026 fix K6). With the shim: delayshim -m delayline and a bfifo of 151400
#                      bytes behind the tbf.
#     netem-tbf-k6     recipe B on kernels with K6 (e.g. Debian 12's 6.1.176+): netem's 100 counts its delay line and
#                      the tbf's queue; the tbf's 151400 bytes apply too. With the shim: -m shared in front of the tbf
#                      and its bfifo. With real netem it builds what netem-tbf builds (the kernel decides).
#     With real netem (DELAY_MECH=netem) each is built from netem itself; fifo-after-delay is then netem at the
#     root with a limit that never binds (65536), tbf its child and the pfifo of 100 under the tbf.
# Optional trailing flags (studies 001/003, testbed/dualpath.sh; without them nothing above changes):
#   --rate-mbit R            egress rate R Mbit/s instead of 10
#   --buffer-pkts N          the queue behind the rate limiter: pfifo limit N packets (default 100) ...
#   --buffer-bytes B         ... or bfifo limit B bytes
#   --shaper tbf|htb         tbf (as above, bucket TBF_BURST_BYTES) or htb: `htb default 10` + class 1:10 rate=ceil=R
#                            with the fifo as its leaf (what Mininet's TCLink and Open vSwitch's linux-htb QoS use).
#   With netem (DELAY_MECH=netem) the leaf is netem (delay + limit, in packets; a byte buffer becomes
#   ceil(B/1514) packets because netem counts packets), as Mininet's TCLink does; with the shim it is the fifo.
#   --tx-bytes A/B           (study 004's ns-2 links, with --rate-mbit) each packet's transmission time as well: an
#                            ns-2 link delivers a packet after its last bit, size x 8 / rate after it started, where
#                            htb lets it go at the start of its turn and the veth delivers it at once. Packets
#                            arriving from the src side (side a: the data) are delayed by ONE_WAY_DELAY_MS + A x 8 /
#                            rate, those from the dst side (the ACKs) by ONE_WAY_DELAY_MS + B x 8 / rate (A, B:
#                            the IP packet sizes, bytes). With the shim: one shim per direction (NFQUEUE 0 for side
#                            a, 1 for side b; PIDFILE holds both pids), each a constant delay, so each keeps its
#                            direction's order; with netem: each interface's netem leaf its direction's delay.
#                            The htb also counts a packet's IP bytes against the rate, as ns-2 does (a size table,
#                            stab overhead -14, takes off the Ethernet header htb would count: 592-byte packets at
#                            0.5 Mbit/s leave every 9.472 ms, not 9.696), lets one packet go at a time (each class's
#                            burst and cburst one packet of its direction, A or B bytes, not tc's 1600), and the
#                            pfifo holds --buffer-pkts - 1 (ns-2's DropTail limit counts the packet on the wire).
#                            docs/ns2-004.md section 11 measured each against ns-2.
#   --leaf auto|netem|fifo|fq_codel   the leaf behind the rate limiter (studies 001/003; docs/qdisc-003.md):
#                            auto (the default) as just described; netem needs DELAY_MECH=netem; fifo is the
#                            pfifo/bfifo of the buffer; fq_codel is `fq_codel limit N` (packets only; fq_codel's
#                            default target, interval, quantum and ECN). With fifo or fq_codel the switch applies no
#                            delay itself when DELAY_MECH=netem (give ONE_WAY_DELAY_MS 0: testbed/dualpath.sh then
#                            delays at the server); with the shim it delays as ever.
set -euo pipefail
usage() {
    echo "usage: switch.sh IF_FROM_SRC IF_FROM_DST ONE_WAY_DELAY_MS LOSS_PCT DELAY_MECH SHIM_BIN PIDFILE TBF_BURST_BYTES [--queue-model fifo-after-delay|tbf-netem|netem-tbf|netem-tbf-k6 | --rate-mbit R] [--buffer-pkts N | --buffer-bytes B] [--shaper tbf|htb] [--leaf auto|netem|fifo|fq_codel]" >&2
    exit 2
}
[[ $# -ge 8 ]] || usage
if_src=$1 if_dst=$2 delay_ms=$3 loss_pct=$4 mech=$5 shim=$6 pidfile=$7 burst=$8
shift 8
rate_mbit=10 buf_kind=pkts buf=100 shaper=tbf extra=0 nbuf=0 qmodel="" leaf=auto tx_bytes=""
while [[ $# -gt 0 ]]; do
    [[ $# -ge 2 ]] || usage
    case "$1" in
        --queue-model)
            qmodel=$2
            [[ $qmodel =~ ^(fifo-after-delay|tbf-netem|netem-tbf|netem-tbf-k6)$ ]] || {
                echo "error: --queue-model must be fifo-after-delay, tbf-netem, netem-tbf or netem-tbf-k6, got '$qmodel'" >&2; exit 2; }
            shift 2
            continue ;;
        --rate-mbit) rate_mbit=$2 ;;
        --buffer-pkts) buf_kind=pkts buf=$2 nbuf=$((nbuf + 1)) ;;
        --buffer-bytes) buf_kind=bytes buf=$2 nbuf=$((nbuf + 1)) ;;
        --shaper) shaper=$2 ;;
        --leaf) leaf=$2 ;;
        --tx-bytes) tx_bytes=$2 ;;
        *) usage ;;
    esac
    extra=1
    shift 2
done
if ! [[ "$burst" =~ ^[1-9][0-9]{3,8}$ ]] || (( burst < 1514 )); then
    echo "error: TBF burst must be an integer >= 1514 bytes (one full frame), got '$burst'" >&2; exit 2
fi
if [[ -z $qmodel ]]; then
    qmodel="fifo-after-delay"
    [[ "$mech" == netem ]] && qmodel="tbf-netem"
elif [[ $extra == 1 ]]; then
    echo "error: --queue-model is for study 000's switch; not with --rate-mbit/--buffer-*/--shaper" >&2; exit 2
fi
if [[ $extra == 1 ]]; then
    (( nbuf <= 1 )) || { echo "error: give --buffer-pkts or --buffer-bytes, not both" >&2; exit 2; }
    if ! [[ "$rate_mbit" =~ ^[0-9]+([.][0-9]+)?$ ]] || ! awk -v r="$rate_mbit" 'BEGIN{exit !(r>0 && r<=100000)}'; then
        echo "error: --rate-mbit must be a number in (0, 100000], got '$rate_mbit'" >&2; exit 2
    fi
    if [[ $buf_kind == pkts ]]; then
        [[ "$buf" =~ ^[1-9][0-9]{0,6}$ ]] || { echo "error: --buffer-pkts must be an integer 1..9999999, got '$buf'" >&2; exit 2; }
    elif ! [[ "$buf" =~ ^[1-9][0-9]{3,9}$ ]] || (( buf < 1514 )); then
        echo "error: --buffer-bytes must be an integer >= 1514 (one full frame), got '$buf'" >&2; exit 2
    fi
    [[ "$shaper" == tbf || "$shaper" == htb ]] || { echo "error: --shaper must be tbf or htb, got '$shaper'" >&2; exit 2; }
    [[ "$leaf" =~ ^(auto|netem|fifo|fq_codel)$ ]] || { echo "error: --leaf must be auto, netem, fifo or fq_codel, got '$leaf'" >&2; exit 2; }
    [[ "$leaf" != netem || "$mech" == netem ]] || { echo "error: --leaf netem needs DELAY_MECH netem, got '$mech'" >&2; exit 2; }
    [[ "$leaf" != fq_codel || $buf_kind == pkts ]] || { echo "error: --leaf fq_codel takes --buffer-pkts (its limit counts packets)" >&2; exit 2; }
    if [[ "$leaf" =~ ^(fifo|fq_codel)$ && "$mech" == netem ]] && ! awk -v d="$delay_ms" 'BEGIN{exit !(d == 0)}'; then
        echo "error: --leaf $leaf with DELAY_MECH netem applies no delay in the switch: give ONE_WAY_DELAY_MS 0, got '$delay_ms'" >&2; exit 2
    fi
    if [[ $leaf == auto ]]; then leaf=fifo; [[ "$mech" == netem ]] && leaf=netem; fi
fi
# per direction: the one-way delay plus, with --tx-bytes A/B, each packet's transmission time (ms, 6 decimals)
delay_a=$delay_ms delay_b=$delay_ms
if [[ -n $tx_bytes ]]; then
    [[ $extra == 1 ]] || { echo "error: --tx-bytes goes with --rate-mbit (a link of its own rate)" >&2; exit 2; }
    [[ "$tx_bytes" =~ ^([1-9][0-9]{1,4})/([1-9][0-9]{1,4})$ ]] || {
        echo "error: --tx-bytes must be A/B, two IP packet sizes in bytes (e.g. 592/52), got '$tx_bytes'" >&2; exit 2; }
    [[ $leaf == netem || "$mech" == shim ]] || {
        echo "error: --tx-bytes needs a delay of the switch's own (the shim, or the netem leaf)" >&2; exit 2; }
    delay_a=$(awk -v d="$delay_ms" -v s="${BASH_REMATCH[1]}" -v r="$rate_mbit" 'BEGIN{printf "%.6f", d + s * 8 / (r * 1000)}')
    delay_b=$(awk -v d="$delay_ms" -v s="${BASH_REMATCH[2]}" -v r="$rate_mbit" 'BEGIN{printf "%.6f", d + s * 8 / (r * 1000)}')
fi
sysctl -qw net.ipv4.ip_forward=1
for f in /proc/sys/net/ipv4/conf/*/rp_filter; do echo 0 > "$f"; done
# proxy ARP: routers using TEQL resolve remote hosts on each slave link; the switch answers for them
for f in /proc/sys/net/ipv4/conf/*/proxy_arp; do echo 1 > "$f"; done
fifo=(pfifo limit "$buf") netem_limit=$buf
if [[ $buf_kind == bytes ]]; then fifo=(bfifo limit "$buf"); netem_limit=$(( (buf + 1513) / 1514 )); fi
# ns-2's DropTail queue-limit N counts the packet on the wire: N - 1 wait (docs/ns2-004.md section 11, measured)
if [[ -n $tx_bytes && $buf_kind == pkts ]]; then fifo=(pfifo limit "$(( buf > 1 ? buf - 1 : 1 ))"); fi
for dev in "$if_src" "$if_dst"; do
    ethtool -K "$dev" tso off gso off gro off 2>/dev/null || true
    tc qdisc del dev "$dev" root 2>/dev/null || true
    if [[ $extra == 0 ]]; then
        case "$mech/$qmodel" in
            netem/tbf-netem)
                tc qdisc replace dev "$dev" root handle 1: tbf rate 10mbit burst "$burst" limit 151400
                tc qdisc replace dev "$dev" parent 1:1 handle 10: netem delay "${delay_ms}ms" limit 100 ;;
            netem/netem-tbf|netem/netem-tbf-k6)
                tc qdisc replace dev "$dev" root handle 1: netem delay "${delay_ms}ms" limit 100
                tc qdisc replace dev "$dev" parent 1:1 handle 10: tbf rate 10mbit burst "$burst" limit 151400 ;;
            netem/fifo-after-delay)
                tc qdisc replace dev "$dev" root handle 1: netem delay "${delay_ms}ms" limit 65536
                tc qdisc replace dev "$dev" parent 1:1 handle 10: tbf rate 10mbit burst "$burst" limit 151400
                tc qdisc replace dev "$dev" parent 10:1 handle 20: pfifo limit 100 ;;
            */netem-tbf|*/netem-tbf-k6)
                tc qdisc replace dev "$dev" root handle 1: tbf rate 10mbit burst "$burst" limit 151400
                tc qdisc replace dev "$dev" parent 1:1 handle 10: bfifo limit 151400 ;;
            *)
                tc qdisc replace dev "$dev" root handle 1: tbf rate 10mbit burst "$burst" limit 151400
                tc qdisc replace dev "$dev" parent 1:1 handle 10: pfifo limit 100 ;;
        esac
        continue
    fi
    if [[ $shaper == htb ]]; then
        # ns-2's links (--tx-bytes) count a packet's IP bytes against the rate; htb counts the 14-byte Ethernet
        # header too unless a size table takes it off (tc-stab(8): overhead may be negative)
        stab=(); [[ -z $tx_bytes ]] || stab=(stab overhead -14)
        tc qdisc replace dev "$dev" root handle 1: "${stab[@]}" htb default 10
        # ns-2's links send one packet at a time: with --tx-bytes each class's burst is one packet of its
        # direction (side a's packets leave through if_dst), not tc's default 1600 B (~2.5 packets at once)
        bursts=()
        if [[ -n $tx_bytes ]]; then
            b=${tx_bytes%/*}; [[ "$dev" == "$if_src" ]] && b=${tx_bytes#*/}
            bursts=(burst "$b" cburst "$b")
        fi
        tc class replace dev "$dev" parent 1: classid 1:10 htb rate "${rate_mbit}mbit" ceil "${rate_mbit}mbit" \
            "${bursts[@]}"
        parent=1:10
    else
        tc qdisc replace dev "$dev" root handle 1: tbf rate "${rate_mbit}mbit" burst "$burst" limit 151400
        parent=1:1
    fi
    case "$leaf" in
        netem) d=$delay_a; [[ "$dev" == "$if_src" ]] && d=$delay_b   # egress towards dst carries side a's packets
               tc qdisc replace dev "$dev" parent "$parent" handle 10: netem delay "${d}ms" limit "$netem_limit" ;;
        fq_codel) tc qdisc replace dev "$dev" parent "$parent" handle 10: fq_codel limit "$buf" ;;
        *) tc qdisc replace dev "$dev" parent "$parent" handle 10: "${fifo[@]}" ;;
    esac
done
iptables -w -F FORWARD
if [[ -f "$pidfile" ]]; then   # one pid a line (two with --tx-bytes)
    while read -r p; do kill "$p" 2>/dev/null || true; done < "$pidfile"
    rm -f "$pidfile"
fi
if awk -v l="$loss_pct" 'BEGIN{exit !(l>0)}'; then
    prob=$(awk -v l="$loss_pct" 'BEGIN{printf "%.6f", l/100}')
    iptables -w -A FORWARD -i "$if_src" -m statistic --mode random --probability "$prob" -j DROP
fi
if [[ "$mech" == shim && -n $tx_bytes ]]; then
    # one shim per direction, each a constant delay: side a's packets (the data) through queue 0, side b's through 1
    iptables -w -A FORWARD -i "$if_src" -j NFQUEUE --queue-num 0 --queue-bypass
    iptables -w -A FORWARD -i "$if_dst" -j NFQUEUE --queue-num 1 --queue-bypass
    : > "$pidfile"
    for q in 0 1; do
        d=$delay_a; (( q == 1 )) && d=$delay_b
        "$shim" -q "$q" -d "$(awk -v d="$d" 'BEGIN{printf "%d", d * 1000 + 0.5}')" >/dev/null 2>>"${pidfile%.pid}.log" &
        echo $! >> "$pidfile"
    done
elif [[ "$mech" == shim ]] && awk -v d="$delay_ms" 'BEGIN{exit !(d>0)}'; then
    iptables -w -A FORWARD -j NFQUEUE --queue-num 0 --queue-bypass
    usec=$(awk -v d="$delay_ms" 'BEGIN{printf "%d", d*1000}')
    shim_args=(-q 0 -d "$usec")
    case "$qmodel" in
        tbf-netem|netem-tbf-k6) shim_args+=(-l 100 -m shared) ;;
        netem-tbf) shim_args+=(-l 100 -m delayline) ;;
    esac
    # its report lines (SIGUSR1: released, late releases, drops at the limit) go to PIDFILE's .log
    "$shim" "${shim_args[@]}" >/dev/null 2>>"${pidfile%.pid}.log" &
    echo $! > "$pidfile"
fi
if [[ $extra == 0 ]]; then
    echo "switch ok: delay ${delay_ms} ms/direction via $mech, loss $loss_pct %, tbf burst $burst bytes, queue model $qmodel"
else
    echo "switch ok: delay ${delay_ms} ms/direction via $mech${tx_bytes:+ (with transmission: ${delay_a} ms from the src side, ${delay_b} ms from the dst side)}, loss $loss_pct %, $shaper rate ${rate_mbit} Mbit/s, buffer $buf $buf_kind, leaf $leaf"
fi
