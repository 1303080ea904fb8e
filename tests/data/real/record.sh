#!/usr/bin/env bash
# Record a small real capture: iperf3 ing-a -> ing-r -> ing-b, tbf 10mbit on r->b, nft 2 % random forward loss,
# tcpdump -s 128 on the router's a-facing interface.  Usage: record.sh OUT.pcap CC SECONDS
set -euo pipefail
out=${1:?usage: record.sh OUT.pcap CC SECONDS}
cc=${2:?cc}
secs=${3:?seconds}
[[ $cc =~ ^(reno|cubic|bbr)$ ]] || { echo "bad cc: $cc" >&2; exit 2; }
if ! [[ $secs =~ ^[0-9]+$ ]] || (( secs < 1 || secs > 10 )); then echo "bad seconds: $secs" >&2; exit 2; fi
cleanup() {
  if [[ -f /tmp/ing-iperf3.pid ]]; then kill "$(cat /tmp/ing-iperf3.pid)" 2>/dev/null || true; rm -f /tmp/ing-iperf3.pid; fi
  if [[ -n ${DUMP:-} ]]; then kill "$DUMP" 2>/dev/null || true; fi
  for n in ing-a ing-r ing-b; do ip netns del "$n" 2>/dev/null || true; done
}
trap cleanup EXIT
for n in ing-a ing-r ing-b; do ip netns add "$n"; ip -n "$n" link set lo up; done
ip link add ia-r netns ing-a type veth peer name ir-a netns ing-r
ip link add ib-r netns ing-b type veth peer name ir-b netns ing-r
ip -n ing-a addr add 10.77.1.1/24 dev ia-r; ip -n ing-r addr add 10.77.1.254/24 dev ir-a
ip -n ing-b addr add 10.77.2.1/24 dev ib-r; ip -n ing-r addr add 10.77.2.254/24 dev ir-b
for pair in ing-a:ia-r ing-r:ir-a ing-r:ir-b ing-b:ib-r; do
  ip -n "${pair%%:*}" link set "${pair#*:}" up
  ip netns exec "${pair%%:*}" ethtool -K "${pair#*:}" tso off gso off gro off >/dev/null 2>&1 || true
done
ip -n ing-a route add default via 10.77.1.254
ip -n ing-b route add default via 10.77.2.254
ip netns exec ing-r sysctl -qw net.ipv4.ip_forward=1
ip netns exec ing-r tc qdisc replace dev ir-b root handle 1: tbf rate 10mbit burst 3028 limit 151400
ip netns exec ing-r nft add table ip ingl
ip netns exec ing-r nft add chain ip ingl fw '{ type filter hook forward priority 0; }'
ip netns exec ing-r nft add rule ip ingl fw iifname ir-a numgen random mod 10000 '<' 200 drop
ip netns exec ing-b iperf3 -s -1 -D -I /tmp/ing-iperf3.pid
sleep 0.5
ip netns exec ing-r tcpdump -q -i ir-a -s 128 -w "$out" 2>/dev/null &
DUMP=$!
sleep 1
ip netns exec ing-a iperf3 -c 10.77.2.1 -t "$secs" -C "$cc" >/dev/null
sleep 0.5
kill "$DUMP"; wait "$DUMP" || true; DUMP=
