#!/usr/bin/env bash
# Record mptcp-2subflows-head.pcap (run as root): namespaces mpa (10.91.1.1, 10.91.2.1) and mpb (10.91.1.2,
# 10.91.2.2) joined by two veth pairs; MPTCP with a subflow endpoint on mpa's second address; `mptcpize run iperf3`
# for 3 s; tcpdump -s 128 on both of mpa's interfaces, merged, first 60 frames kept (every handshake).
set -euo pipefail
out=${1:-mptcp-2subflows-head.pcap}
[[ $EUID -eq 0 ]] || { echo "error: needs root" >&2; exit 2; }
for t in mptcpize iperf3 tcpdump mergecap editcap; do command -v "$t" >/dev/null || { echo "error: $t missing" >&2; exit 2; }; done
tmp=$(mktemp -d)
cleanup() { ip netns del mpa 2>/dev/null || true; ip netns del mpb 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
for n in mpa mpb; do ip netns add $n; ip -n $n link set lo up; ip netns exec $n sysctl -qw net.mptcp.enabled=1; done
ip link add a1 netns mpa type veth peer name b1 netns mpb
ip link add a2 netns mpa type veth peer name b2 netns mpb
ip -n mpa addr add 10.91.1.1/24 dev a1; ip -n mpb addr add 10.91.1.2/24 dev b1
ip -n mpa addr add 10.91.2.1/24 dev a2; ip -n mpb addr add 10.91.2.2/24 dev b2
for i in a1 a2; do ip -n mpa link set $i up; ip netns exec mpa ethtool -K $i tso off gso off gro off >/dev/null; done
for i in b1 b2; do ip -n mpb link set $i up; ip netns exec mpb ethtool -K $i tso off gso off gro off >/dev/null; done
ip netns exec mpa tc qdisc replace dev a1 root tbf rate 5mbit burst 3028 limit 30000
ip netns exec mpa tc qdisc replace dev a2 root tbf rate 2mbit burst 3028 limit 30000
ip -n mpa mptcp limits set subflow 2 add_addr_accepted 2; ip -n mpb mptcp limits set subflow 2 add_addr_accepted 2
ip -n mpa mptcp endpoint add 10.91.2.1 dev a2 subflow
ip -n mpa rule add from 10.91.2.1 table 102
ip -n mpa route add 10.91.1.0/24 via 10.91.2.2 dev a2 table 102
ip netns exec mpa tcpdump -i a1 -s 128 -n -U -w "$tmp/a1.pcap" 2>/dev/null & p1=$!
ip netns exec mpa tcpdump -i a2 -s 128 -n -U -w "$tmp/a2.pcap" 2>/dev/null & p2=$!
ip netns exec mpb mptcpize run iperf3 -s -1 -p 5400 >/dev/null 2>&1 &
sleep 1
ip netns exec mpa mptcpize run iperf3 -c 10.91.1.2 -p 5400 -t 3 >/dev/null
sleep 1; kill -INT "$p1" "$p2"; wait "$p1" "$p2" || true
mergecap -F pcap -w "$tmp/both.pcap" "$tmp/a1.pcap" "$tmp/a2.pcap"
editcap -F pcap -r "$tmp/both.pcap" "$out" 1-60
