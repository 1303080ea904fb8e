#!/usr/bin/env bash
# Host set-up, run INSIDE the host node (namespace or VM): sysctls, offloads off, fq where available.
# usage: host.sh [--fq]
set -euo pipefail
want_fq=0
[[ "${1:-}" == "--fq" ]] && want_fq=1
for s in tcp_sack tcp_dsack tcp_timestamps tcp_window_scaling; do
    sysctl -qw "net.ipv4.$s=1"
done
for path in /sys/class/net/*; do
    dev=${path##*/}
    [[ "$dev" == lo ]] && continue
    ethtool -K "$dev" tso off gso off gro off 2>/dev/null || true
    if [[ $want_fq == 1 ]]; then
        if tc qdisc replace dev "$dev" root fq 2>/dev/null; then
            echo "fq: $dev"
        else
            echo "fq: not available"
        fi
    fi
done
