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
set -euo pipefail
[[ $# -eq 8 ]] || { echo "usage: switch.sh IF_FROM_SRC IF_FROM_DST ONE_WAY_DELAY_MS LOSS_PCT DELAY_MECH SHIM_BIN PIDFILE TBF_BURST_BYTES" >&2; exit 2; }
if_src=$1 if_dst=$2 delay_ms=$3 loss_pct=$4 mech=$5 shim=$6 pidfile=$7 burst=$8
if ! [[ "$burst" =~ ^[1-9][0-9]{3,8}$ ]] || (( burst < 1514 )); then
    echo "error: TBF burst must be an integer >= 1514 bytes (one full frame), got '$burst'" >&2; exit 2
fi
sysctl -qw net.ipv4.ip_forward=1
for f in /proc/sys/net/ipv4/conf/*/rp_filter; do echo 0 > "$f"; done
# proxy ARP: routers using TEQL resolve remote hosts on each slave link; the switch answers for them
for f in /proc/sys/net/ipv4/conf/*/proxy_arp; do echo 1 > "$f"; done
for dev in "$if_src" "$if_dst"; do
    ethtool -K "$dev" tso off gso off gro off 2>/dev/null || true
    tc qdisc del dev "$dev" root 2>/dev/null || true
    tc qdisc replace dev "$dev" root handle 1: tbf rate 10mbit burst "$burst" limit 151400
    if [[ "$mech" == netem ]]; then
        tc qdisc replace dev "$dev" parent 1:1 handle 10: netem delay "${delay_ms}ms" limit 100
    else
        tc qdisc replace dev "$dev" parent 1:1 handle 10: pfifo limit 100
    fi
done
iptables -w -F FORWARD
if [[ -f "$pidfile" ]]; then kill "$(cat "$pidfile")" 2>/dev/null || true; rm -f "$pidfile"; fi
if awk -v l="$loss_pct" 'BEGIN{exit !(l>0)}'; then
    prob=$(awk -v l="$loss_pct" 'BEGIN{printf "%.6f", l/100}')
    iptables -w -A FORWARD -i "$if_src" -m statistic --mode random --probability "$prob" -j DROP
fi
if [[ "$mech" == shim ]] && awk -v d="$delay_ms" 'BEGIN{exit !(d>0)}'; then
    iptables -w -A FORWARD -j NFQUEUE --queue-num 0 --queue-bypass
    usec=$(awk -v d="$delay_ms" 'BEGIN{printf "%d", d*1000}')
    "$shim" -q 0 -d "$usec" >/dev/null 2>&1 &
    echo $! > "$pidfile"
fi
echo "switch ok: delay ${delay_ms} ms/direction via $mech, loss $loss_pct %, tbf burst $burst bytes"
