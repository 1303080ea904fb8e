#!/usr/bin/env bash
# Set up ONE VM of the vagrant testbed, run INSIDE the guest as root (by `vagrant provision` and by backend.sh up).
# Idempotent: addresses, routes, qdiscs and nft tables are replaced, never added twice.
# usage: node-up.sh [--install] NODE [--path-mode M] [--link-delay-ms D] [--loss-pct L] [--path-skew-ms K] [--fq]
#                   [--rr-mech auto|teql|nft] [--tbf-burst-bytes B] [--queue-model fifo-after-delay|tbf-netem|netem-tbf|netem-tbf-k6]
#   --rr-mech  round-robin mechanism of the routers: auto = TEQL when the guest kernel has it (the paper's), else nft
#   --tbf-burst-bytes  the switches' TBF bucket [topology.json defaults.tbf_burst_bytes.vagrant: 10000, the
#              tc-tbf(8) minimum for 10 Mbit/s; a VM's qdisc timer fires late whenever its vCPU waits for a host core]
#   --install  install missing guest packages with apt (boxes other than the locally built Debian box)
# Link NICs are found by MAC (52:54:0a:aa:bb:cc for address 10.a.b.c, see the Vagrantfile), then the SAME node scripts as
# the netns backend run: testbed/nodes/host.sh, router.sh, switch.sh.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TB="$(cd "$HERE/.." && pwd)"
TOPOLOGY="$TB/topology.json"
die() { echo "error: $*" >&2; exit 2; }
is_number() { [[ "$1" =~ ^[0-9]+([.][0-9]+)?$ ]]; }

install=0
[[ "${1:-}" == "--install" ]] && { install=1; shift; }
node=${1:-}
shift || die "usage: node-up.sh [--install] NODE [--path-mode M] [--link-delay-ms D] [--loss-pct L] [--path-skew-ms K] [--fq]"
[[ "$node" =~ ^(src1|src2|router1|switch1|switch2|router2|dst1|dst2)$ ]] || die "unknown node '$node'"
[[ $EUID -eq 0 ]] || die "node-up.sh runs as root inside the guest"

if [[ $install == 1 ]]; then
    need=()
    for t in jq:jq iperf3:iperf3 tcpdump:tcpdump ethtool:ethtool nft:nftables iptables:iptables ss:iproute2 ping:iputils-ping; do
        command -v "${t%%:*}" >/dev/null || need+=("${t#*:}")
    done
    if [[ ${#need[@]} -gt 0 ]]; then
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    fi
fi
command -v jq >/dev/null || die "jq missing in the guest (run with --install)"

path_mode=$(jq -r .defaults.path_mode "$TOPOLOGY")
link_delay_ms=$(jq -r .defaults.link_delay_ms "$TOPOLOGY")
loss_pct=$(jq -r .defaults.loss_pct "$TOPOLOGY")
path_skew_ms=$(jq -r .defaults.path_skew_ms "$TOPOLOGY")
tbf_burst_bytes=$(jq -r .defaults.tbf_burst_bytes.vagrant "$TOPOLOGY")   # switches' TBF bucket (switch.sh)
fq=0 rr_mech=auto queue_model=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --path-mode) path_mode=${2:-}; shift 2 || die "--path-mode needs a value" ;;
        --link-delay-ms) link_delay_ms=${2:-}; shift 2 || die "--link-delay-ms needs a value" ;;
        --loss-pct) loss_pct=${2:-}; shift 2 || die "--loss-pct needs a value" ;;
        --path-skew-ms) path_skew_ms=${2:-}; shift 2 || die "--path-skew-ms needs a value" ;;
        --fq) fq=1; shift ;;
        --rr-mech) rr_mech=${2:-}; shift 2 || die "--rr-mech needs a value" ;;
        --tbf-burst-bytes) tbf_burst_bytes=${2:-}; shift 2 || die "--tbf-burst-bytes needs a value" ;;
        --queue-model) queue_model=${2:-}; shift 2 || die "--queue-model needs a value" ;;
        *) die "unknown option $1" ;;
    esac
done
[[ "$path_mode" == single || "$path_mode" == multipath ]] || die "--path-mode must be single or multipath"
[[ "$rr_mech" =~ ^(auto|teql|nft)$ ]] || die "--rr-mech must be auto, teql or nft"
is_number "$link_delay_ms" || die "--link-delay-ms must be a non-negative number"
is_number "$loss_pct" || die "--loss-pct must be a number"
is_number "$path_skew_ms" || die "--path-skew-ms must be a non-negative number"
[[ -z "$queue_model" || "$queue_model" =~ ^(fifo-after-delay|tbf-netem|netem-tbf|netem-tbf-k6)$ ]] ||
    die "--queue-model must be fifo-after-delay, tbf-netem, netem-tbf or netem-tbf-k6"
if ! [[ "$tbf_burst_bytes" =~ ^[1-9][0-9]{3,8}$ ]] || (( tbf_burst_bytes < 1514 )); then die "--tbf-burst-bytes must be an integer >= 1514"; fi

# kernel modules the study needs (absent modules are reported by features.sh, not fatal here)
for m in sch_netem sch_teql sch_fq sch_tbf tcp_bic tcp_westwood tcp_bbr; do modprobe -q "$m" 2>/dev/null || true; done
# every available CC may be used by unprivileged sockets too (iperf3 -C needs it in some kernels)
sysctl -qw net.ipv4.tcp_allowed_congestion_control="$(cat /proc/sys/net/ipv4/tcp_available_congestion_control)" || true

mac_of() { # 10.a.b.c -> 52:54:0a:aa:bb:cc
    local IFS=.
    # shellcheck disable=SC2086
    set -- $1
    printf '52:54:%02x:%02x:%02x:%02x' "$1" "$2" "$3" "$4"
}
if_by_mac() {
    local p
    for p in /sys/class/net/*; do
        [[ "$(cat "$p/address" 2>/dev/null)" == "$1" ]] && { echo "${p##*/}"; return 0; }
    done
    return 1
}
if_of() { # ADDR -> interface holding it
    ip -o -4 addr show | awk -v a="$1" '{split($4, x, "/"); if (x[1] == a && !found) {found = 1; print $2}}'
}

# addresses (idempotent), no IPv6 chatter on the test links
while IFS=$'\t' read -r addr pfx; do
    mac=$(mac_of "$addr")
    dev=$(if_by_mac "$mac") || die "$node: no NIC with MAC $mac for $addr (is this VM from the mpcc Vagrantfile?)"
    sysctl -qw "net.ipv6.conf.$dev.disable_ipv6=1" 2>/dev/null || true
    ip link set dev "$dev" up
    ip addr replace "$addr/$pfx" dev "$dev"
done < <(jq -r --arg n "$node" '.links[] | . as $l | (.a, .b) | select(.node == $n) | [.addr, ($l.prefix|tostring)] | @tsv' "$TOPOLOGY")

addr_of() { jq -r --arg n "$1" --arg m "$2" '.links[] | select((.a.node==$n and .b.node==$m) or (.a.node==$m and .b.node==$n)) | if .a.node==$n then .a.addr else .b.addr end' "$TOPOLOGY"; }

role=$(jq -r --arg n "$node" '.nodes[$n].role' "$TOPOLOGY")
case "$role" in
    host)
        case "$node" in
            src1|src2) gw=$(addr_of router1 "$node") ;;
            dst1|dst2) gw=$(addr_of router2 "$node") ;;
        esac
        # test traffic (10.0.0.0/8 minus the links) via the router; the management NIC keeps the default route
        for net in 10.1.0.0/16 10.2.0.0/16 10.3.0.0/16 10.4.0.0/16; do ip route replace "$net" via "$gw"; done
        if [[ $fq == 1 ]]; then bash "$TB/nodes/host.sh" --fq; else bash "$TB/nodes/host.sh"; fi
        ;;
    router)
        if [[ $node == router1 ]]; then
            in1=$(if_of "$(addr_of router1 src1)") in2=$(if_of "$(addr_of router1 src2)")
            remote=10.4.0.0/16 nh1=$(addr_of switch1 router1) nh2=$(addr_of switch2 router1)
            ip route replace 10.3.0.0/16 via "$nh1"
        else
            in1=$(if_of "$(addr_of router2 dst1)") in2=$(if_of "$(addr_of router2 dst2)")
            remote=10.1.0.0/16 nh1=$(addr_of switch1 router2) nh2=$(addr_of switch2 router2)
            ip route replace 10.2.0.0/16 via "$nh1"
        fi
        # TEQL needs the teql0 master, which the kernel creates in the initial namespace once sch_teql is loaded: a VM
        # has it (unlike a netns router)
        if [[ $rr_mech == auto ]]; then
            rr_mech=nft
            ip link show teql0 >/dev/null 2>&1 && rr_mech=teql
        fi
        [[ $rr_mech == nft ]] || ip link show teql0 >/dev/null 2>&1 || die "$node: --rr-mech teql but no teql0 in this guest"
        bash "$TB/nodes/router.sh" "$path_mode" "$in1" "$in2" "$remote" "$nh1" "$nh2" "$rr_mech"
        ;;
    switch)
        r1=$(addr_of router1 "$node") r2=$(addr_of router2 "$node")
        if_src=$(if_of "$(addr_of "$node" router1)") if_dst=$(if_of "$(addr_of "$node" router2)")
        ip route replace 10.1.0.0/16 via "$r1"
        ip route replace 10.4.0.0/16 via "$r2"
        half=$(awk -v d="$link_delay_ms" 'BEGIN{printf "%g", d/2}')
        [[ $node == switch2 ]] && half=$(awk -v d="$link_delay_ms" -v k="$path_skew_ms" 'BEGIN{printf "%g", d/2+k}')
        mech=netem
        [[ -d /sys/module/sch_netem ]] || mech=shim
        [[ $mech == netem ]] || [[ -x "$TB/delayshim/delayshim" ]] || die "$node: no netem and no delay shim in this guest"
        qm_args=()
        [[ -z "$queue_model" ]] || qm_args=(--queue-model "$queue_model")
        bash "$TB/nodes/switch.sh" "$if_src" "$if_dst" "$half" "$loss_pct" "$mech" "$TB/delayshim/delayshim" /run/mpcc-shim.pid "$tbf_burst_bytes" "${qm_args[@]}"
        ;;
    *) die "unknown role '$role' for $node" ;;
esac
[[ $role == router ]] || rr_mech=none
jq -n --arg n "$node" --arg pm "$path_mode" --argjson d "$link_delay_ms" --argjson l "$loss_pct" --argjson k "$path_skew_ms" \
    --arg rr "$rr_mech" --argjson b "$tbf_burst_bytes" '{node:$n, path_mode:$pm, link_delay_ms:$d, loss_pct:$l, path_skew_ms:$k, tbf_burst_bytes:$b, rr_mech:$rr}' > /run/mpcc-node.json
echo "node-up: $node ($role) ok" >&2
