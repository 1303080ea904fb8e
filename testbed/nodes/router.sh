#!/usr/bin/env bash
# Router set-up, run INSIDE router1/router2 (namespace or VM): path_mode single | multipath (per-packet round-robin).
# usage: router.sh MODE IN_IF1 IN_IF2 REMOTE_NET NH_PATH1 NH_PATH2 [RR_MECH]
#   RR_MECH: teql (kernel has sch_teql) or nft (nftables numgen inc mod 2 + fwmark tables 101/102); default nft.
#   TEQL: both switch-facing interfaces are teql0 slaves, REMOTE_NET is routed on teql0 and the switches answer ARP
#   for it (proxy_arp, set by switch.sh), as in the LARTC TEQL recipe.
set -euo pipefail
die() { echo "error: $*" >&2; exit 2; }
[[ $# -ge 6 ]] || die "usage: router.sh MODE IN_IF1 IN_IF2 REMOTE_NET NH_PATH1 NH_PATH2 [RR_MECH]"
mode=$1 in1=$2 in2=$3 remote=$4 nh1=$5 nh2=$6 mech=${7:-nft}
[[ "$mode" == single || "$mode" == multipath ]] || die "MODE must be single or multipath, got '$mode'"
[[ "$mech" == nft || "$mech" == teql ]] || die "RR_MECH must be nft or teql, got '$mech'"
[[ "$remote" =~ ^[0-9.]+/[0-9]+$ ]] || die "REMOTE_NET must be an IPv4 prefix, got '$remote'"
[[ "$nh1" =~ ^[0-9.]+$ && "$nh2" =~ ^[0-9.]+$ ]] || die "next hops must be IPv4 addresses"
out_if() { ip -o route get "$1" | sed -n 's/.* dev \([^ ]*\).*/\1/p'; }
out1=$(out_if "$nh1") out2=$(out_if "$nh2")
[[ -n "$out1" && -n "$out2" ]] || die "cannot find the interfaces towards $nh1 / $nh2"

sysctl -qw net.ipv4.ip_forward=1
for f in /proc/sys/net/ipv4/conf/*/rp_filter; do echo 0 > "$f"; done
for path in /sys/class/net/*; do
    dev=${path##*/}
    [[ "$dev" == lo ]] && continue
    ethtool -K "$dev" tso off gso off gro off 2>/dev/null || true
done
# idempotent: remove both mechanisms' state, then apply the requested one
nft delete table ip mpcc_rr 2>/dev/null || true
ip rule del fwmark 1 table 101 2>/dev/null || true
ip rule del fwmark 2 table 102 2>/dev/null || true
for dev in "$out1" "$out2"; do
    if [[ "$(tc qdisc show dev "$dev" root)" == *teql* ]]; then tc qdisc del dev "$dev" root; fi
done
ip route replace "$remote" via "$nh1"
if [[ "$mode" == single ]]; then
    echo "round_robin: none (single path)"
elif [[ "$mech" == teql ]]; then
    tc qdisc replace dev "$out1" root teql0
    tc qdisc replace dev "$out2" root teql0
    ip link set teql0 up
    ip route replace "$remote" dev teql0
    echo "round_robin: teql0 over $out1 $out2"
else
    ip route replace "$remote" via "$nh1" table 101
    ip route replace "$remote" via "$nh2" table 102
    ip rule add fwmark 1 table 101
    ip rule add fwmark 2 table 102
    nft -f - <<NFT
table ip mpcc_rr {
    chain pre {
        type filter hook prerouting priority mangle; policy accept;
        iifname { "$in1", "$in2" } meta mark set numgen inc mod 2 offset 1 counter
    }
    chain rrcount {
        type filter hook forward priority 0; policy accept;
        meta mark 1 counter
        meta mark 2 counter
    }
}
NFT
    echo "round_robin: nft numgen inc mod 2 + fwmark tables 101/102"
fi
