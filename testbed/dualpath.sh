#!/usr/bin/env bash
# Generic netns builder for "one client dual-homed to one server over two paths" topologies (studies 001, 003):
# builds ANY topology file of that shape (testbed/families/NNN/topology.json; docs/families.md) as namespaces
# ${MPCC_NS_PREFIX:-mpcc-}<node>: nodes, veths, addresses, routes, policy-routing rules and MPTCP settings are all
# taken from the file; each path's switch shapes both directions (testbed/nodes/switch.sh --shaper htb).
# usage: dualpath.sh up (--family NNN | --topology FILE)
#            [--path1-rate-mbit R] [--path1-delay-ms D] [--path1-buffer-pkts N | --path1-buffer-bytes B]
#            [--path2-rate-mbit R] [--path2-delay-ms D] [--path2-buffer-pkts N | --path2-buffer-bytes B]
#            [--queue-disc auto|pfifo|netem|fq_codel]
#        dualpath.sh down [--family NNN | --topology FILE]
#        dualpath.sh features [--family NNN | --topology FILE]
#        dualpath.sh exec [--family NNN | --topology FILE] NODE -- CMD...
#   up: per-path defaults (rate, one-way delay per direction, buffer) from the file's "paths"; on a prefix that is
#       already up only the path parameters are re-applied; prints the applied parameters as JSON on stdout
#       (progress on stderr). Every value (and the file) is validated before any root command: a bad one is a
#       one-line "error: ..." and exit 2.
#   --queue-disc: the leaf behind each switch egress's htb class (docs/qdisc-003.md). auto (the default, what every
#       recording so far used): netem (delay D + limit N) where the kernel has netem, else a pfifo/bfifo of N with the
#       delay by the NFQUEUE shim in the switch. netem: that netem leaf, or an error without netem. fq_codel:
#       `fq_codel limit N` (packets; default target/interval/quantum); pfifo: the pfifo (bfifo for a byte buffer).
#       For fq_codel and pfifo the switch adds no delay where the kernel has netem: each path's two-way delay (2 D)
#       is a netem on the server's interface towards that path (egress, limit 100000: a delay line that never fills
#       or drops), so the path's RTT is that of the other arms and its only queue is the switch's leaf; without
#       netem the shim delays in the switch as for auto. A prefix that is up keeps its queue discipline: give a
#       different one after `down`.
#   down: kills the delay shims and everything running in the namespaces, deletes them (always completes).
#   features: JSON: netem, htb, MPTCP (enabled, schedulers), mptcpize, Open vSwitch, CCs, mechanisms used.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NS_PREFIX="${MPCC_NS_PREFIX:-mpcc-}"
STATE_ROOT="/run/mpcc-dualpath"
RUNSTATE="$STATE_ROOT/${NS_PREFIX}"

log() { echo "[$(date -u +%H:%M:%S)] dualpath: $*" >&2; }
die() { echo "error: $*" >&2; exit 2; }
usage() { sed -n '6,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
# shellcheck source=testbed/lib/nsbuild.sh
source "$HERE/lib/nsbuild.sh"   # num, ns_of, load_topology, nodes_of, do_down, sysctl_all_ifs, build, delay shim
SHIM="$NSB_SHIM"

nsb_check_prefix

# ---------------------------------------------------------------------------------------------------------------
# Topology file: validated as a whole (one jq program; the first problem is the error) before anything is done.
TOPO=""
# shellcheck disable=SC2016  # a jq program: $names are jq variables
VALIDATE_JQ="$NSB_JQ_DEFS"'
. as $t
| ($t.nodes // {}) as $nodes
| veth_ifs($t; "links") as $ifs
| def has_if($n; $i): if_in($ifs; $n; $i);
  [
    common_errors("links"; "link"; ["host", "switch"]),
    (if (($t.service.addr // null) | ipv4) and ($nodes[$t.service.node // ""] // null) != null then empty else "service must name a node and an IPv4 addr" end),
    (if ($nodes[$t.client // ""].role // null) == "host" then empty else "client must name a host node" end),
    (if (($t.paths // {}) | keys) == ["1", "2"] then empty else "paths must define exactly \"1\" and \"2\"" end),
    ($t.paths // {} | to_entries[] | . as $p | .value as $v |
        (if ($nodes[$v.switch // ""].role // null) != "switch" then "path \($p.key): switch must name a switch node"
         elif ($v.switch_ifs | type) != "array" or ($v.switch_ifs | length) != 2 or ([$v.switch_ifs[] | has_if($v.switch; .)] | all | not)
         then "path \($p.key): switch_ifs must be the two interfaces of \($v.switch)"
         elif (has_if($t.client; $v.client_if) | not) then "path \($p.key): client_if \($v.client_if | tojson) is not an interface of \($t.client)"
         elif (has_if($t.service.node; $v.server_if) | not) then "path \($p.key): server_if \($v.server_if | tojson) is not an interface of \($t.service.node)"
         elif (any($t.links[]; .a.node == $t.client and .a.ifname == $v.client_if and .a.addr == $v.client_addr) | not)
         then "path \($p.key): client_addr must be the address of client_if"
         elif (($v.rate_mbit | numin(0.001; 100000)) | not) then "path \($p.key): rate_mbit must be a number > 0"
         elif (($v.delay_ms | numin(0; 10000)) | not) then "path \($p.key): delay_ms must be a number >= 0"
         elif ((($v.buffer_pkts // null) == null) == (($v.buffer_bytes // null) == null)) then "path \($p.key): give buffer_pkts or buffer_bytes"
         elif ($v.buffer_pkts // 1 | intin(1; 1000000) | not) or ($v.buffer_bytes // 1514 | intin(1514; 1000000000) | not)
         then "path \($p.key): bad buffer size"
         else empty end))
  ] | .[0] // empty'

# global options common to every command: --family NNN | --topology FILE
parse_where() { # sets TOPO (may stay empty for down) and REST (remaining args)
    REST=()
    local fam="" file=""
    while [[ $# -gt 0 ]]; do
        case "$1" in
            --family) [[ $# -ge 2 ]] || die "option --family needs a value"; fam=$2; shift 2 ;;
            --topology) [[ $# -ge 2 ]] || die "option --topology needs a value"; file=$2; shift 2 ;;
            --) REST+=("$@"); break ;;   # exec NODE -- CMD...: the command's own arguments are not ours
            *) REST+=("$1"); shift ;;
        esac
    done
    [[ -z "$fam" || -z "$file" ]] || die "give --family or --topology, not both"
    if [[ -n "$fam" ]]; then
        [[ "$fam" =~ ^[0-9]{3}$ ]] || die "--family must be a three-digit study number, got '$fam'"
        file="$HERE/families/$fam/topology.json"
        [[ -f "$file" ]] || die "no topology for family $fam ($file)"
    fi
    if [[ -n "$file" ]]; then load_topology "$file"; fi
    return 0
}

# ---------------------------------------------------------------------------------------------------------------
# per-path parameters: defaults from the topology file, then the options; all validated here
declare -A P_RATE P_DELAY P_KIND P_BUF
QDISC=auto
SERVER_DELAY_LIMIT=100000   # packets: the server-side delay line (--queue-disc fq_codel|pfifo) never drops
parse_path_args() {
    local k seen_pkts=() seen_bytes=()
    for k in 1 2; do
        P_RATE[$k]=$(jq -r --arg k "$k" '.paths[$k].rate_mbit' "$TOPO")
        P_DELAY[$k]=$(jq -r --arg k "$k" '.paths[$k].delay_ms' "$TOPO")
        if [[ "$(jq -r --arg k "$k" '.paths[$k].buffer_pkts // "null"' "$TOPO")" != null ]]; then
            P_KIND[$k]=pkts; P_BUF[$k]=$(jq -r --arg k "$k" '.paths[$k].buffer_pkts' "$TOPO")
        else
            P_KIND[$k]=bytes; P_BUF[$k]=$(jq -r --arg k "$k" '.paths[$k].buffer_bytes' "$TOPO")
        fi
        seen_pkts[k]=0 seen_bytes[k]=0
    done
    while [[ $# -gt 0 ]]; do
        if [[ "$1" == --queue-disc ]]; then
            [[ $# -ge 2 ]] || die "option $1 needs a value"
            [[ "$2" =~ ^(auto|pfifo|netem|fq_codel)$ ]] || die "--queue-disc must be auto, pfifo, netem or fq_codel, got '$2'"
            QDISC=$2
            shift 2
            continue
        fi
        [[ "$1" =~ ^--path([12])-(rate-mbit|delay-ms|buffer-pkts|buffer-bytes)$ ]] || die "unknown option for up: $1"
        [[ $# -ge 2 ]] || die "option $1 needs a value"
        k=${BASH_REMATCH[1]}
        case "${BASH_REMATCH[2]}" in
            rate-mbit) P_RATE[$k]=$2 ;;
            delay-ms) P_DELAY[$k]=$2 ;;
            buffer-pkts) P_KIND[$k]=pkts; P_BUF[$k]=$2; seen_pkts[k]=1 ;;
            buffer-bytes) P_KIND[$k]=bytes; P_BUF[$k]=$2; seen_bytes[k]=1 ;;
        esac
        shift 2
    done
    for k in 1 2; do
        [[ "${seen_pkts[k]}${seen_bytes[k]}" != 11 ]] || die "give --path$k-buffer-pkts or --path$k-buffer-bytes, not both"
        if ! num "${P_RATE[$k]}" || ! awk -v r="${P_RATE[$k]}" 'BEGIN{exit !(r>0 && r<=100000)}'; then
            die "--path$k-rate-mbit must be a number in (0, 100000], got '${P_RATE[$k]}'"
        fi
        if ! num "${P_DELAY[$k]}" || ! awk -v d="${P_DELAY[$k]}" 'BEGIN{exit !(d<=10000)}'; then
            die "--path$k-delay-ms must be a number in [0, 10000], got '${P_DELAY[$k]}'"
        fi
        if [[ ${P_KIND[$k]} == pkts ]]; then
            [[ "${P_BUF[$k]}" =~ ^[1-9][0-9]{0,5}$ ]] || die "--path$k-buffer-pkts must be an integer 1..999999, got '${P_BUF[$k]}'"
        elif ! [[ "${P_BUF[$k]}" =~ ^[1-9][0-9]{3,8}$ ]] || (( P_BUF[$k] < 1514 )); then
            die "--path$k-buffer-bytes must be an integer 1514..999999999 (at least one full frame), got '${P_BUF[$k]}'"
        fi
        if [[ $QDISC == fq_codel && ${P_KIND[$k]} != pkts ]]; then
            die "--queue-disc fq_codel needs a buffer in packets (path $k has --path$k-buffer-bytes): fq_codel's limit counts packets"
        fi
    done
}

delay_mechanism() { # netem where the kernel has it (tested in the first switch's namespace), else the NFQUEUE shim
    delay_mechanism_in "$(ns_of "$(jq -r '.paths["1"].switch' "$TOPO")")"
}

do_up() {
    [[ -n "$TOPO" ]] || die "up needs --family NNN or --topology FILE"
    parse_path_args "$@"
    [[ $EUID -eq 0 ]] || die "the dualpath netns backend needs root"
    local first sw was
    first=$(nodes_of | sed -n 1p)
    if ip netns list | awk -v n="$(ns_of "$first")" '$1 == n {f = 1} END {exit !f}'; then
        # existing testbed of this prefix: re-apply the path parameters only, under the same queue discipline
        was=auto
        if [[ -f "$RUNSTATE/params.json" ]]; then was=$(jq -r '.queue_disc // "auto"' "$RUNSTATE/params.json"); fi
        [[ "$was" == "$QDISC" ]] || die "prefix $NS_PREFIX is up with --queue-disc $was: take it down before --queue-disc $QDISC"
    else
        do_down 2>/dev/null || true
        log "up: building $(nodes_of | wc -l) namespaces of $(jq -r '.family // "?"' "$TOPO") with prefix $NS_PREFIX"
        build
    fi
    mkdir -p "$RUNSTATE"
    local mech k ifs leaf sw_delay server_delay=0 srv srv_if placement
    mech=$(delay_mechanism)
    srv=$(jq -r .service.node "$TOPO")
    case $QDISC in
        auto) if [[ $mech == netem ]]; then leaf=netem; else leaf=fifo; fi ;;   # as switch.sh resolves --leaf auto
        netem) [[ $mech == netem ]] || die "--queue-disc netem: this kernel has no netem qdisc"; leaf=netem ;;
        pfifo) leaf=fifo ;;
        fq_codel)
            ip netns exec "$(ns_of "$first")" tc qdisc replace dev lo root fq_codel >/dev/null 2>&1 ||
                die "--queue-disc fq_codel: this kernel has no fq_codel qdisc"
            ip netns exec "$(ns_of "$first")" tc qdisc del dev lo root >/dev/null 2>&1 || true
            leaf=fq_codel ;;
    esac
    if [[ $leaf =~ ^(fifo|fq_codel)$ && $mech == netem ]]; then server_delay=1; fi
    if [[ $mech == shim ]]; then nsb_ensure_shim; fi
    for k in 1 2; do
        sw=$(jq -r --arg k "$k" '.paths[$k].switch' "$TOPO")
        mapfile -t ifs < <(jq -r --arg k "$k" '.paths[$k].switch_ifs[]' "$TOPO")
        sw_delay=${P_DELAY[$k]}
        (( server_delay )) && sw_delay=0
        ip netns exec "$(ns_of "$sw")" bash "$HERE/nodes/switch.sh" "${ifs[0]}" "${ifs[1]}" "$sw_delay" 0 "$mech" "$SHIM" \
            "$RUNSTATE/shim-$sw.pid" 3028 --rate-mbit "${P_RATE[$k]}" "--buffer-${P_KIND[$k]}" "${P_BUF[$k]}" --shaper htb \
            --leaf "$leaf" >&2
        if (( server_delay )); then   # the path's two-way delay as a delay line on the server's egress towards it
            srv_if=$(jq -r --arg k "$k" '.paths[$k].server_if' "$TOPO")
            ip netns exec "$(ns_of "$srv")" tc qdisc replace dev "$srv_if" root handle 1: netem \
                delay "$(awk -v d="${P_DELAY[$k]}" 'BEGIN{printf "%g", 2 * d}')ms" limit "$SERVER_DELAY_LIMIT"
        fi
    done
    local queue="htb+pfifo on a forwarding namespace"
    [[ ${P_KIND[1]}${P_KIND[2]} == pktspkts ]] || queue="htb+bfifo on a forwarding namespace"
    [[ ${P_KIND[1]} == "${P_KIND[2]}" ]] || queue="htb+pfifo/bfifo on a forwarding namespace"
    [[ $leaf == fifo ]] || queue="htb+$leaf on a forwarding namespace"
    placement="switch egress, one way per direction (netem leaf)"
    [[ $mech == shim ]] && placement="switch FORWARD, one way per direction (NFQUEUE shim)"
    (( server_delay )) && placement="server egress towards each path, two-way delay in one netem (limit $SERVER_DELAY_LIMIT)"
    jq -n --arg topo "$TOPO" --arg fam "$(jq -r '.family // ""' "$TOPO")" --arg mech "$mech" --arg queue "$queue" \
        --arg qd "$QDISC" --arg place "$placement" \
        --arg r1 "${P_RATE[1]}" --arg d1 "${P_DELAY[1]}" --arg k1 "${P_KIND[1]}" --arg b1 "${P_BUF[1]}" \
        --arg r2 "${P_RATE[2]}" --arg d2 "${P_DELAY[2]}" --arg k2 "${P_KIND[2]}" --arg b2 "${P_BUF[2]}" '
        def p(r; d; k; b): {rate_mbit: (r|tonumber), delay_ms: (d|tonumber),
            buffer_pkts: (if k == "pkts" then (b|tonumber) else null end), buffer_bytes: (if k == "bytes" then (b|tonumber) else null end)};
        {topology: $topo, family: $fam, delay_mechanism: (if $mech == "shim" then "nfqueue-shim" else "netem" end),
         shaper: "htb", queue_mechanism: $queue, queue_disc: $qd, delay_placement: $place,
         path1: p($r1; $d1; $k1; $b1), path2: p($r2; $d2; $k2; $b2)}' > "$RUNSTATE/params.json"
    log "up: path1 ${P_RATE[1]} Mbit/s ${P_DELAY[1]} ms ${P_BUF[1]} ${P_KIND[1]}; path2 ${P_RATE[2]} Mbit/s ${P_DELAY[2]} ms ${P_BUF[2]} ${P_KIND[2]}; delay via $mech; queue disc $QDISC"
    cat "$RUNSTATE/params.json"
}

# ---------------------------------------------------------------------------------------------------------------
do_features() {
    [[ $EUID -eq 0 ]] || die "features needs root (scratch namespace)"
    local base scratch htb sched avail enabled mptcpize ovs_user ovs_kernel ovs_reason
    base=$(bash "$HERE/features.sh")
    scratch="${NS_PREFIX}dpfeat$$"
    ip netns add "$scratch"
    # shellcheck disable=SC2064
    trap "ip netns del '$scratch' 2>/dev/null || true" EXIT
    ip netns exec "$scratch" ip link add d0 type veth peer name d1
    ip netns exec "$scratch" ip link set d0 up
    if ip netns exec "$scratch" tc qdisc replace dev d0 root htb default 10 >/dev/null 2>&1; then htb=true; else htb=false; fi
    enabled=$(ip netns exec "$scratch" sysctl -n net.mptcp.enabled 2>/dev/null || echo 0)
    avail=$(ip netns exec "$scratch" sysctl -n net.mptcp.available_schedulers 2>/dev/null || echo "")
    sched=$(ip netns exec "$scratch" sysctl -n net.mptcp.scheduler 2>/dev/null || echo "")
    if command -v mptcpize >/dev/null; then mptcpize=true; else mptcpize=false; fi
    if command -v ovs-vswitchd >/dev/null || command -v ovs-vsctl >/dev/null; then ovs_user=true; else ovs_user=false; fi
    if [[ -d /sys/module/openvswitch ]]; then ovs_kernel=true; else ovs_kernel=false; fi
    ovs_reason=""
    [[ $ovs_user == true ]] || ovs_reason="Open vSwitch not installed (no ovs-vswitchd/ovs-vsctl; its userspace datapath would need the openvswitch-switch package)"
    [[ $ovs_kernel == true ]] || ovs_reason+="${ovs_reason:+; }kernel has no openvswitch module (kernel datapath unavailable)"
    jq -n --argjson base "$base" --argjson htb "$htb" --arg enabled "$enabled" --arg avail "$avail" --arg sched "$sched" \
        --argjson mptcpize "$mptcpize" --argjson ovs_user "$ovs_user" --argjson ovs_kernel "$ovs_kernel" --arg ovs_reason "$ovs_reason" '
        $base + {htb: $htb,
          mptcp: {enabled: ($enabled == "1"), available_schedulers: ($avail | split(" ") | map(select(. != ""))),
                  scheduler: (if $sched == "" then null else $sched end), mptcpize: $mptcpize},
          ovs: {userspace: $ovs_user, kernel_datapath: $ovs_kernel, used: false,
                reason: (if $ovs_reason == "" then "installed but not used: the netns backend shapes with htb" else $ovs_reason end)},
          mechanism: ($base.mechanism + {rate: "htb", queue: "htb class + pfifo (packets) or bfifo (bytes) leaf on each switch egress",
                                        round_robin: "none (MPTCP subflows over policy routing)"})}'
}

do_exec() {
    local node=${1:-}
    if [[ -z "$TOPO" && -f "$RUNSTATE/params.json" ]]; then load_topology "$(jq -r .topology "$RUNSTATE/params.json")"; fi
    [[ -n "$TOPO" ]] || die "exec: no testbed of prefix $NS_PREFIX is up (or give --family/--topology)"
    shift || usage
    [[ "${1:-}" == "--" ]] && shift
    nodes_of | awk -v n="$node" '$0 == n {f = 1} END {exit !f}' || die "unknown node '$node' (one of: $(nodes_of | tr '\n' ' '))"
    [[ $# -gt 0 ]] || die "exec: no command"
    exec ip netns exec "$(ns_of "$node")" "$@"
}

cmd=${1:-}
shift || usage
case "$cmd" in
    up) parse_where "$@"; do_up "${REST[@]}" ;;
    down) parse_where "$@"; [[ ${#REST[@]} -eq 0 ]] || die "unknown option for down: ${REST[0]}"
          [[ $EUID -eq 0 ]] || die "the dualpath netns backend needs root"; do_down ;;
    features) parse_where "$@"; [[ ${#REST[@]} -eq 0 ]] || die "unknown option for features: ${REST[0]}"; do_features ;;
    exec) parse_where "$@"; do_exec "${REST[@]}" ;;
    -h|--help) usage ;;
    *) usage ;;
esac
