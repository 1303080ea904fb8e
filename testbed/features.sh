#!/usr/bin/env bash
# Detect kernel features in a scratch namespace: netem, teql, fq, and congestion controls. JSON on stdout.
set -euo pipefail
scratch="${MPCC_NS_PREFIX:-mpcc-}feat$$"
cleanup() { ip netns del "$scratch" 2>/dev/null || true; }
trap cleanup EXIT INT TERM
ip netns add "$scratch"
ip netns exec "$scratch" ip link add d0 type veth peer name d1
ip netns exec "$scratch" ip link set d0 up
has() { if ip netns exec "$scratch" tc qdisc replace dev d0 root "$@" >/dev/null 2>&1; then echo true; else echo false; fi; }
netem=$(has netem delay 1ms)
fq=$(has fq)
if ip netns exec "$scratch" tc qdisc replace dev d0 root teql0 >/dev/null 2>&1; then teql=true; else teql=false; fi
avail=$(cat /proc/sys/net/ipv4/tcp_available_congestion_control)
ccs=""
for cc in reno cubic bbr bic westwood; do
    ok=false
    for a in $avail; do [[ "$a" == "$cc" ]] && ok=true; done
    ccs+="\"$cc\": $ok, "
done
ccs=${ccs%, }
if [[ $netem == true ]]; then delay=netem; else delay=nfqueue-shim; fi
rr=nft-numgen-fwmark  # TEQL not used even where present: one mechanism everywhere
cat <<JSON
{"kernel": "$(uname -r)", "netem": $netem, "teql": $teql, "fq": $fq, "cc": {$ccs},
 "mechanism": {"delay": "$delay", "round_robin": "$rr", "loss": "iptables-statistic", "rate": "tbf+pfifo"}}
JSON
