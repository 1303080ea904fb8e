#!/usr/bin/env bash
# Router set-up, run INSIDE router1/router2: path_mode single | multipath (per-packet round-robin).
# usage: router.sh MODE IN_IF1 IN_IF2 REMOTE_NET NH_PATH1 NH_PATH2
# Multipath uses nft numgen marks + fwmark policy routing (TEQL is absent on the target kernel).
set -euo pipefail
mode=$1 in1=$2 in2=$3 remote=$4 nh1=$5 nh2=$6
sysctl -qw net.ipv4.ip_forward=1
for f in /proc/sys/net/ipv4/conf/*/rp_filter; do echo 0 > "$f"; done
for path in /sys/class/net/*; do
    dev=${path##*/}
    [[ "$dev" == lo ]] && continue
    ethtool -K "$dev" tso off gso off gro off 2>/dev/null || true
done
ip route replace "$remote" via "$nh1"
ip route replace "$remote" via "$nh1" table 101
ip route replace "$remote" via "$nh2" table 102
ip rule del fwmark 1 table 101 2>/dev/null || true
ip rule del fwmark 2 table 102 2>/dev/null || true
ip rule add fwmark 1 table 101
ip rule add fwmark 2 table 102
nft delete table ip mpcc_rr 2>/dev/null || true
if [[ "$mode" == multipath ]]; then
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
else
    echo "round_robin: none (single path)"
fi
