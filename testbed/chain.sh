#!/usr/bin/env bash
# Netns builder of study 004's chain topologies (docs/families.md "Study 004"): builds a topology file
# testbed/families/004/<name>.json as namespaces ${MPCC_NS_PREFIX:-mpcc-}<node>. Hosts and routers are plain
# namespaces with static routes; every ns-2 duplex link is a link namespace lK that forwards, shapes each egress
# direction (htb at the link rate + pfifo of the link's buffer), delays each direction by the link's delay and, on a
# flow's error link, drops packets arriving from side a with probability error_rate (testbed/nodes/switch.sh).
# Study 002's star (testbed/families/002/topology.json, via --topology FILE) uses the same format without "mtu"
# (veths keep 1500), without "flows" (its streams are run_streaming.sh's) and with links of no error model or delay
# (no delay anywhere: no delay mechanism, the pfifo is the leaf).
# usage: chain.sh up (--topology-name T | --topology FILE) [--error-rate P] [--bandwidth-mbit B] [--store-and-forward]
#        chain.sh check (--topology-name T | --topology FILE) [--error-rate P] [--bandwidth-mbit B] [--store-and-forward]
#        chain.sh down [--topology-name T | --topology FILE]
#        chain.sh exec [--topology-name T | --topology FILE] NODE -- CMD...
#   up: P = packet drop probability (fraction, 0..0.5) on each flow's error link (default: the file's
#       defaults.error_rate); B = rate (Mbit/s, (0, 1000]) of the file's bandwidth_links (multihop_uniform only).
#       --store-and-forward: every link also delays each packet by its transmission time at the link's rate, as an
#       ns-2 link delivers a packet after its last bit (docs/ns2-004.md): side a's packets (the data, the file's
#       "mtu" bytes) by mtu x 8 / rate, side b's (pure ACKs, 52 bytes: IP 20 + TCP 20 + timestamps 12) by 52 x 8 /
#       rate (testbed/nodes/switch.sh --tx-bytes). Without it a packet's delay lacks its own transmission time.
#       Prints the applied parameters as JSON on stdout (progress on stderr). On a prefix that is already up with
#       the same topology only the link parameters are re-applied. The file and every value are validated before
#       any root command: a bad one is a one-line "error: ..." and exit 2.
#   check: the same validation, no root command; prints the parameters up would apply (delay_mechanism null).
#   down: kills the delay shims and everything running in the namespaces, deletes them (always completes).
#   exec: runs CMD in NODE's namespace (the topology of the prefix's testbed when none is given).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NS_PREFIX="${MPCC_NS_PREFIX:-mpcc-}"
STATE_ROOT="/run/mpcc-chain"
RUNSTATE="$STATE_ROOT/${NS_PREFIX}"
FAMILY_DIR="$HERE/families/004"
NSB_VETHS=veths

log() { echo "[$(date -u +%H:%M:%S)] chain: $*" >&2; }
die() { echo "error: $*" >&2; exit 2; }
usage() { sed -n '7,10p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
# shellcheck source=testbed/lib/nsbuild.sh
source "$HERE/lib/nsbuild.sh"   # num, ns_of, load_topology, nodes_of, do_down, sysctl_all_ifs, build, delay shim

nsb_check_prefix

# ---------------------------------------------------------------------------------------------------------------
# Topology file: the generic checks (nodes, veths, addresses, routes) plus the chain's links and flows, as a whole
# (one jq program; the first problem is the error) before anything is done.
TOPO=""
# shellcheck disable=SC2016  # a jq program: $names are jq variables
VALIDATE_JQ="$NSB_JQ_DEFS"'
. as $t
| ($t.nodes // {}) as $nodes
| veth_ifs($t; "veths") as $ifs
| ([$t.flows[]?.flow]) as $fids
| def has_if($n; $i): if_in($ifs; $n; $i);
  def peer($n; $i): first($t.veths[]? | if .a.node == $n and .a.ifname == $i then .b.node
                                        elif .b.node == $n and .b.ifname == $i then .a.node else empty end) // null;
  def addr_of($n; $i): first($t.veths[]? | if .a.node == $n and .a.ifname == $i then .a.addr
                                           elif .b.node == $n and .b.ifname == $i then .b.addr else empty end) // null;
  def lnk($n): first($t.links[]? | select(.name == $n)) // null;
  def error_links($f): [$t.links[]? | select(any(.error_flows[]?; . == $f)) | .name];
  [
    common_errors("veths"; "veth"; ["host", "router", "link"]),
    (if ($t | has("mtu") | not) or ($t.mtu | intin(68; 65535)) then empty else "mtu must be an integer 68..65535" end),
    (if (($t.defaults.error_rate // 0) | numin(0; 0.5)) then empty else "defaults.error_rate must be a number in [0, 0.5]" end),
    (if ($t.links | type) != "array" or ($t.links | length) == 0 then "links must be a non-empty list" else empty end),
    ([$t.links[]?.name] | group_by(.)[] | select(length > 1) | "link \(.[0] | tojson) defined twice"),
    ([$t.links[]?.ns] | group_by(.)[] | select(length > 1) | "node \(.[0] | tojson) is the namespace of two links"),
    ($nodes | to_entries[] | select(.value.role == "link") | .key as $k | select(any($t.links[]?; .ns == $k) | not)
        | "node \($k): role link, but no link uses it"),
    ($t.links[]? |
        if (.name | type) != "string" or (.name | test("^L[1-9][0-9]?$") | not) then "link name \(.name | tojson) must match L<number>"
        elif ($nodes[.ns // ""].role // null) != "link" then "link \(.name): ns must name a node of role link"
        elif ($nodes[.a // ""].role // "link") == "link" then "link \(.name): a must name a host or router node"
        elif ($nodes[.b // ""].role // "link") == "link" or .a == .b then "link \(.name): b must name another host or router node"
        elif (.if_a | ifname | not) or (has_if(.ns; .if_a) | not) or peer(.ns; .if_a) != .a
        then "link \(.name): if_a must be the interface of \(.ns) whose veth peer is on \(.a)"
        elif (.if_b | ifname | not) or (has_if(.ns; .if_b) | not) or peer(.ns; .if_b) != .b
        then "link \(.name): if_b must be the interface of \(.ns) whose veth peer is on \(.b)"
        elif (.rate_mbit | numin(0.001; 100000)) | not then "link \(.name): rate_mbit must be a number in [0.001, 100000]"
        elif (.delay_ms | numin(0; 10000)) | not then "link \(.name): delay_ms must be a number in [0, 10000]"
        elif (.buffer_pkts | intin(1; 1000000)) | not then "link \(.name): buffer_pkts must be an integer 1..1000000"
        elif (.error_flows | type) != "array" or any(.error_flows[]; . as $f | any($fids[]; . == $f) | not)
        then "link \(.name): error_flows must be a list of flow numbers"
        else empty end),
    (if ($t | has("flows") | not) then empty   # a file without flows (study 002): the caller runs its own traffic
     elif ($t.flows | type) != "array" or ($t.flows | length) == 0 or ($t.flows | length) > 9 then "flows must be a list of 1..9 flows" else empty end),
    ($t.flows // [] | to_entries[]? | .key as $i | .value as $f |
        if $f.flow != $i + 1 then "flows must be numbered 1, 2, ... in order (flow \($f.flow | tojson) at position \($i + 1))"
        elif ($nodes[$f.sender // ""].role // null) != "host" then "flow \($f.flow): sender must name a host node"
        elif ($nodes[$f.receiver // ""].role // null) != "host" or $f.receiver == $f.sender then "flow \($f.flow): receiver must name another host node"
        elif ($f.sender_if | ifname | not) or addr_of($f.sender; $f.sender_if) == null then "flow \($f.flow): sender_if must be a veth interface of \($f.sender)"
        elif addr_of($f.sender; $f.sender_if) != $f.sender_addr then "flow \($f.flow): sender_addr must be the address of sender_if"
        elif ($f.receiver_if | ifname | not) or addr_of($f.receiver; $f.receiver_if) == null then "flow \($f.flow): receiver_if must be a veth interface of \($f.receiver)"
        elif addr_of($f.receiver; $f.receiver_if) != $f.receiver_addr then "flow \($f.flow): receiver_addr must be the address of receiver_if"
        elif $f.port != 5200 + $f.flow then "flow \($f.flow): port must be \(5200 + $f.flow) (5200 + flow)"
        elif ($f.path | type) != "array" or ($f.path | length) == 0 or any($f.path[]; lnk(.) == null) then "flow \($f.flow): path must be a list of link names"
        elif (reduce $f.path[] as $p ($f.sender; if . != null and lnk($p).a == . then lnk($p).b else null end)) != $f.receiver
        then "flow \($f.flow): path must lead from \($f.sender) to \($f.receiver), each link crossed a -> b"
        elif (error_links($f.flow) | length) != 1 then "flow \($f.flow): exactly one link must name it in error_flows"
        elif (error_links($f.flow)[0] as $e | any($f.path[]; . == $e) | not) then "flow \($f.flow): its error link must be on its path"
        else empty end),
    (if $t | has("bandwidth_links") | not then empty
     elif ($t.bandwidth_links | type) != "array" or ($t.bandwidth_links | length) == 0 or any($t.bandwidth_links[]; lnk(.) == null)
     then "bandwidth_links must be a non-empty list of link names" else empty end)
  ] | .[0] // empty'

# where: --topology-name T (testbed/families/004/T.json) | --topology FILE; sets TOPO (may stay empty) and REST
parse_where() {
    REST=()
    local name="" file=""
    while [[ $# -gt 0 ]]; do
        case "$1" in
            --topology-name) [[ $# -ge 2 ]] || die "option --topology-name needs a value"; name=$2; shift 2 ;;
            --topology) [[ $# -ge 2 ]] || die "option --topology needs a value"; file=$2; shift 2 ;;
            --) REST+=("$@"); break ;;   # exec NODE -- CMD...: the command's own arguments are not ours
            *) REST+=("$1"); shift ;;
        esac
    done
    [[ -z "$name" || -z "$file" ]] || die "give --topology-name or --topology, not both"
    if [[ -n "$name" ]]; then
        if ! [[ "$name" =~ ^[a-z][a-z0-9_]{0,39}$ && -f "$FAMILY_DIR/$name.json" ]]; then
            local known=("$FAMILY_DIR"/*.json)
            known=("${known[@]##*/}")
            die "--topology-name must be one of ${known[*]%.json}, got '$name'"
        fi
        file="$FAMILY_DIR/$name.json"
    fi
    if [[ -n "$file" ]]; then load_topology "$file"; fi
    return 0
}

# ---------------------------------------------------------------------------------------------------------------
# run parameters: --error-rate P, --bandwidth-mbit B; validated here
ERROR_RATE="" BANDWIDTH="" STORE_FORWARD=0 ACK_BYTES=52   # a pure ACK: IP 20 + TCP 20 + timestamps 12
decimal() { [[ "$1" =~ ^(0|[1-9][0-9]{0,5})([.][0-9]{1,9})?$ ]]; }
parse_params() {
    local seen_e=0 seen_b=0
    while [[ $# -gt 0 ]]; do
        case "$1" in
            --store-and-forward) STORE_FORWARD=1; shift; continue ;;
            --error-rate|--bandwidth-mbit) [[ $# -ge 2 ]] || die "option $1 needs a value" ;;
            *) die "unknown option: $1" ;;
        esac
        if [[ "$1" == --error-rate ]]; then
            (( seen_e == 0 )) || die "option --error-rate given twice"; seen_e=1; ERROR_RATE=$2
        else
            (( seen_b == 0 )) || die "option --bandwidth-mbit given twice"; seen_b=1; BANDWIDTH=$2
        fi
        shift 2
    done
    [[ -n "$TOPO" ]] || die "give --topology-name T or --topology FILE"
    [[ -n "$ERROR_RATE" ]] || ERROR_RATE=$(jq -r '.defaults.error_rate // 0' "$TOPO")
    if ! decimal "$ERROR_RATE" || ! awk -v p="$ERROR_RATE" 'BEGIN{exit !(p >= 0 && p <= 0.5)}'; then
        die "--error-rate must be a fraction in [0, 0.5], got '$ERROR_RATE'"
    fi
    if [[ -n "$BANDWIDTH" ]]; then
        jq -e 'has("bandwidth_links")' "$TOPO" >/dev/null ||
            die "--bandwidth-mbit applies only to a topology with bandwidth_links (multihop_uniform), not $(jq -r '.name // "this one"' "$TOPO")"
        if ! decimal "$BANDWIDTH" || ! awk -v b="$BANDWIDTH" 'BEGIN{exit !(b > 0 && b <= 1000)}'; then
            die "--bandwidth-mbit must be a number in (0, 1000] (Mbit/s), got '$BANDWIDTH'"
        fi
    fi
}

params_json() { # MECH (shim|netem|""): the parameters as applied
    jq --arg topo "$TOPO" --arg mech "$1" --arg p "$ERROR_RATE" --arg bw "$BANDWIDTH" --argjson sf "$STORE_FORWARD" \
       --argjson ack "$ACK_BYTES" '
        ($p | tonumber) as $p | (if $bw == "" then null else ($bw | tonumber) end) as $bw
        | (.bandwidth_links // []) as $bl
        | (if $bw == null and (.bandwidth_links // null) != null then .links[] | select(.name == $bl[0]) | .rate_mbit else $bw end) as $bwa
        | [.links[] | . as $l | {name, ns, a, b, if_a, if_b,
            rate_mbit: (if $bw != null and any($bl[]; . == $l.name) then $bw else .rate_mbit end),
            delay_ms, buffer_pkts, error_flows,
            error_rate: (if (.error_flows | length) > 0 then $p else 0 end),
            error_direction: (if (.error_flows | length) > 0 then "\(.a)->\(.b)" else null end)}] as $links0
        | (.mtu // 1500) as $mtu
        | [$links0[] | . + (if $sf == 1 then {tx_bytes_a: $mtu, tx_bytes_b: $ack,
                                              tx_ms_a: ($mtu * 8 / (.rate_mbit * 1000)),
                                              tx_ms_b: ($ack * 8 / (.rate_mbit * 1000))} else {} end)] as $links
        | {topology: $topo, name: .name, family: (.family // null), mtu: (.mtu // 1500), error_rate: $p, bandwidth_mbit: $bwa,
           bandwidth_links: (.bandwidth_links // null),
           delay_mechanism: (if $mech == "shim" then "nfqueue-shim" elif $mech == "netem" then "netem" else null end),
           shaper: "htb",
           store_and_forward: ($sf == 1),
           queue_mechanism: (if $mech == "netem" then "htb+netem on a forwarding namespace" else "htb+pfifo on a forwarding namespace" end),
           loss_mechanism: (if any(.links[]; (.error_flows | length) > 0) then "iptables statistic (random) on the error link, packets arriving from side a" else null end),
           links: $links,
           flows: [(.flows // [])[] | . as $f | . + {error_link: ($links[] | select(any(.error_flows[]; . == $f.flow)) | .name),
                   path_delay_ms: ([$f.path[] as $n | $links[] | select(.name == $n) | .delay_ms] | add),
                   path_min_rate_mbit: ([$f.path[] as $n | $links[] | select(.name == $n) | .rate_mbit] | min),
                   path_tx_rtt_ms: ([$f.path[] as $n | $links[] | select(.name == $n) | (.tx_ms_a // 0) + (.tx_ms_b // 0)] | add)}]}' "$TOPO"
}

# ---------------------------------------------------------------------------------------------------------------
wait_shim() { # NS Q: until its NFQUEUE queue Q is bound (the shim is fail-open: unbound means no delay), at most 5 s
    local i
    for ((i = 0; i < 50; i++)); do
        # shellcheck disable=SC2016  # an awk program
        ip netns exec "$1" awk -v q="$2" '$1 == q {found = 1} END {exit !found}' /proc/net/netfilter/nfnetlink_queue \
            2>/dev/null && return 0
        sleep 0.1
    done
    die "the delay shim of $1 did not bind its queue $2"
}

do_up() {
    parse_params "$@"
    [[ $EUID -eq 0 ]] || die "the chain netns backend needs root"
    local first
    first=$(nodes_of | sed -n 1p)
    if ns_exists "$(ns_of "$first")" && [[ -f "$RUNSTATE/topology" && "$(cat "$RUNSTATE/topology")" == "$TOPO" ]]; then
        :  # this prefix already runs this topology: re-apply the link parameters only
    else
        do_down 2>/dev/null || true
        log "up: building $(nodes_of | wc -l) namespaces of $(jq -r .name "$TOPO") with prefix $NS_PREFIX"
        build
        echo "$TOPO" > "$RUNSTATE/topology"
    fi
    mkdir -p "$RUNSTATE"
    local mech name ns a ia ib rate delay buf nerr txa txb loss
    if jq -e 'any(.links[]; .delay_ms > 0)' "$TOPO" >/dev/null; then
        mech=$(delay_mechanism_in "$(ns_of "$(jq -r '.links[0].ns' "$TOPO")")")
    else
        mech=none   # no link delays anything (study 002): neither netem nor a shim, the fifo is the leaf
    fi
    if [[ $mech == shim ]]; then nsb_ensure_shim; fi
    params_json "$mech" > "$RUNSTATE/params.json"
    while IFS=$'\t' read -r name ns a ia ib rate delay buf nerr txa txb; do
        loss=0
        (( nerr == 0 )) || loss=$(awk -v p="$ERROR_RATE" 'BEGIN{printf "%.7g", 100 * p}')
        sf_args=()
        if (( STORE_FORWARD )); then sf_args=(--tx-bytes "$txa/$txb"); fi   # params_json's tx_bytes_a/b
        ip netns exec "$(ns_of "$ns")" bash "$HERE/nodes/switch.sh" "$ia" "$ib" "$delay" "$loss" "$mech" "$NSB_SHIM" \
            "$RUNSTATE/shim-$ns.pid" 3028 --rate-mbit "$rate" --buffer-pkts "$buf" --shaper htb "${sf_args[@]}" >&2
        # count every packet arriving from side a (before the error model's drop rule): observed loss = drops / arrivals
        ip netns exec "$(ns_of "$ns")" iptables -w -I FORWARD 1 -i "$ia"
        if (( STORE_FORWARD )) && [[ $mech == shim ]]; then
            wait_shim "$(ns_of "$ns")" 0; wait_shim "$(ns_of "$ns")" 1
        elif [[ $mech == shim ]] && awk -v d="$delay" 'BEGIN{exit !(d > 0)}'; then
            wait_shim "$(ns_of "$ns")" 0
        fi
        log "up: $name ($a side $ia) ${rate} Mbit/s ${delay} ms ${buf} pkts loss ${loss} %"
    done < <(jq -r '.links[] | [.name, .ns, .a, .if_a, .if_b, .rate_mbit, .delay_ms, .buffer_pkts, (.error_rate > 0 | if . then 1 else 0 end), (.tx_bytes_a // "-"), (.tx_bytes_b // "-")] | @tsv' \
                "$RUNSTATE/params.json")
    log "up: error rate $ERROR_RATE${BANDWIDTH:+, bandwidth $BANDWIDTH Mbit/s}; delay via $mech"
    cat "$RUNSTATE/params.json"
}

do_exec() {
    local node=${1:-}
    if [[ -z "$TOPO" && -f "$RUNSTATE/topology" ]]; then load_topology "$(cat "$RUNSTATE/topology")"; fi
    [[ -n "$TOPO" ]] || die "exec: no chain testbed of prefix $NS_PREFIX is up (or give --topology-name/--topology)"
    shift || usage
    [[ "${1:-}" == "--" ]] && shift
    nodes_of | awk -v n="$node" '$0 == n {f = 1} END {exit !f}' || die "unknown node '$node' (one of: $(nodes_of | tr '\n' ' '))"
    [[ $# -gt 0 ]] || die "exec: no command"
    exec ip netns exec "$(ns_of "$node")" "$@"
}

cmd=${1:-}
shift || usage
case "$cmd" in
    up) parse_where "$@"; [[ -n "$TOPO" ]] || die "up needs --topology-name T or --topology FILE"; do_up "${REST[@]}" ;;
    check) parse_where "$@"; [[ -n "$TOPO" ]] || die "check needs --topology-name T or --topology FILE"
           parse_params "${REST[@]}"; params_json "" ;;
    down) parse_where "$@"; [[ ${#REST[@]} -eq 0 ]] || die "unknown option for down: ${REST[0]}"
          [[ $EUID -eq 0 ]] || die "the chain netns backend needs root"; do_down ;;
    exec) parse_where "$@"; do_exec "${REST[@]}" ;;
    -h|--help) usage ;;
    *) usage ;;
esac
