#!/usr/bin/env bash
# Switch set-up, run INSIDE switch1/switch2.
# usage: switch.sh IF_FROM_SRC IF_FROM_DST ONE_WAY_DELAY_MS LOSS_PCT DELAY_MECH SHIM_BIN PIDFILE
#   Egress on both interfaces: TBF 10 Mbit/s with a 100-packet pfifo.
#   Delay ONE_WAY_DELAY_MS per direction (= link_delay_ms/2 per interface): netem if DELAY_MECH=netem,
#   else the NFQUEUE delay shim (both directions traverse FORWARD once).
#   Forward-only random loss LOSS_PCT on packets arriving from the src side.
set -euo pipefail
if_src=$1 if_dst=$2 delay_ms=$3 loss_pct=$4 mech=$5 shim=$6 pidfile=$7
sysctl -qw net.ipv4.ip_forward=1
for f in /proc/sys/net/ipv4/conf/*/rp_filter; do echo 0 > "$f"; done
# proxy ARP: routers using TEQL resolve remote hosts on each slave link; the switch answers for them
for f in /proc/sys/net/ipv4/conf/*/proxy_arp; do echo 1 > "$f"; done
for dev in "$if_src" "$if_dst"; do
    ethtool -K "$dev" tso off gso off gro off 2>/dev/null || true
    tc qdisc del dev "$dev" root 2>/dev/null || true
    tc qdisc replace dev "$dev" root handle 1: tbf rate 10mbit burst 3028 limit 151400
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
echo "switch ok: delay ${delay_ms} ms/direction via $mech, loss $loss_pct %"
