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
# TEQL needs the sch_teql qdisc AND a teql0 master device in the routers' network namespace: the kernel creates
# teql0 only in the initial namespace, so on the netns backend TEQL is unusable even where the kernel has it.
if ip netns exec "$scratch" tc qdisc replace dev d0 root teql0 >/dev/null 2>&1; then teql_qdisc=true; else teql_qdisc=false; fi
if [[ $teql_qdisc == true ]] && ip netns exec "$scratch" ip link show teql0 >/dev/null 2>&1; then teql=true; else teql=false; fi
# congestion controls: the kernel's own, or a BPF port from testbed/cc (registered per run by ccctl.sh)
ccs=$(bash "$(dirname "${BASH_SOURCE[0]}")/cc/ccctl.sh" status reno cubic bbr bic westwood westwood_e pcc_vivace pcc_vivace_usp bic415)
if [[ $netem == true ]]; then delay=netem; else delay=nfqueue-shim; fi
# round-robin: TEQL where the kernel has it (the paper's mechanism), nftables numgen + fwmark otherwise;
# MPCC_RR_MECH=nft forces the fallback (e.g. to compare the two on a kernel that has both)
if [[ $teql == true && "${MPCC_RR_MECH:-auto}" != nft ]]; then rr=teql; else rr=nft-numgen-fwmark; fi
jq -n --arg kernel "$(uname -r)" --argjson netem "$netem" --argjson teql "$teql" --argjson teql_qdisc "$teql_qdisc" \
    --argjson fq "$fq" --argjson ccs "$ccs" --arg delay "$delay" --arg rr "$rr" \
    '{kernel:$kernel, netem:$netem, teql:$teql, teql_qdisc:$teql_qdisc, fq:$fq,
      cc:($ccs | map_values(.implementation != null)), cc_impl:($ccs | map_values(.implementation)),
      cc_unavailable_reason:($ccs | map_values(select(.reason != null) | .reason)),
      mechanism:{delay:$delay, round_robin:$rr, loss:"iptables-statistic", rate:"tbf+pfifo"}}' 
