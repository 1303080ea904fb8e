# shellcheck shell=bash
# Namespace builder shared by the topology-file testbeds (sourced, not executed): testbed/dualpath.sh (studies 001,
# 003) and testbed/chain.sh (study 004). A topology file holds nodes, veth pairs with addresses, extra addresses,
# routes, policy-routing rules and MPTCP settings as data; this builds them as namespaces ${NS_PREFIX}<node>.
# The caller provides log() and die() (one line "error: ...", exit 2) and sets:
#   NS_PREFIX   namespace prefix (check it with nsb_check_prefix before any root command)
#   RUNSTATE    state directory of this prefix (node list, delay-shim pidfiles shim-*.pid, params.json)
#   TOPO        the topology file, absolute path, set by load_topology once it validated
#   VALIDATE_JQ the caller's jq validation program (it may start with $NSB_JQ_DEFS and call common_errors)
#   NSB_VETHS   key of the veth-pair list in the topology file (default "links": dualpath's files)
NSB_TESTBED="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck disable=SC2034  # used by the sourcing script
NSB_SHIM="$NSB_TESTBED/delayshim/delayshim"

num() { [[ "$1" =~ ^[0-9]+([.][0-9]+)?$ ]]; }
ns_of() { echo "${NS_PREFIX}$1"; }
nsb_check_prefix() {
    [[ "$NS_PREFIX" =~ ^[A-Za-z0-9_.-]{1,20}$ ]] || die "MPCC_NS_PREFIX must be 1-20 of [A-Za-z0-9_.-], got '$NS_PREFIX'"
}
ns_exists() { ip netns list | awk -v n="$1" '$1 == n {f = 1} END {exit !f}'; }

# ---------------------------------------------------------------------------------------------------------------
# Validation: jq definitions and the checks every topology file gets (nodes, veth pairs, addresses, routes, rules,
# MPTCP). common_errors($vk; $what; $roles) emits one message per problem: $vk is the key of the veth list, $what
# how the messages call one veth pair, $roles the allowed node roles.
# shellcheck disable=SC2016,SC2034  # a jq program ($names are jq variables), used by the sourcing script
NSB_JQ_DEFS='
def ipv4: type == "string" and test("^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$");
def cidr: type == "string" and (split("/") | (.[0] | ipv4) and (length == 1 or (length == 2 and (.[1] | test("^([0-9]|[12][0-9]|3[0-2])$")))));
def intin(a; b): type == "number" and . == floor and . >= a and . <= b;
def numin(a; b): type == "number" and . >= a and . <= b;
def ifname: type == "string" and test("^[A-Za-z0-9_-]{1,15}$");
def veth_ifs($t; $vk): [$t[$vk][]? | (.a, .b) | {node, ifname}];
def if_in($ifs; $n; $i): any($ifs[]; .node == $n and .ifname == $i) or ($i == "lo");
def either($r): if ($r | length) <= 2 then ($r | join(" or ")) else (($r[:-1] | join(", ")) + " or " + $r[-1]) end;
def common_errors($vk; $what; $roles):
  . as $t
  | ($t.nodes // {}) as $nodes
  | veth_ifs($t; $vk) as $ifs
  | def has_if($n; $i): if_in($ifs; $n; $i);
    (if ($t.nodes | type) != "object" or ($t.nodes | length) == 0 then "nodes must be a non-empty object" else empty end),
    ($nodes | to_entries[] | select((.key | test("^[a-z][a-z0-9_]{0,15}$")) | not) | "node name \(.key | tojson) must match [a-z][a-z0-9_]{0,15}"),
    ($nodes | to_entries[] | select(.value.role as $r | any($roles[]; . == $r) | not) | "node \(.key): role must be \(either($roles))"),
    (if ($t[$vk] | type) != "array" or ($t[$vk] | length) == 0 then "\($vk) must be a non-empty list" else empty end),
    ($t[$vk][]? | . as $l | (.a, .b) | select(($nodes[.node?] // null) == null) | "\($what) \($l.name // "?"): unknown node \(.node | tojson)"),
    ($t[$vk][]? | . as $l | (.a, .b) | select((.ifname | ifname) | not) | "\($what) \($l.name // "?"): ifname must be 1-15 of [A-Za-z0-9_-]"),
    ($t[$vk][]? | . as $l | (.a, .b) | select((.addr | ipv4) | not) | "\($what) \($l.name // "?"): bad IPv4 address \(.addr | tojson)"),
    ($t[$vk][]? | select((.prefix | intin(1; 32)) | not) | "\($what) \(.name // "?"): prefix must be an integer 1..32"),
    ($ifs | group_by([.node, .ifname])[] | select(length > 1) | "interface \(.[0].ifname) defined twice on \(.[0].node)"),
    ($t.addresses[]? | select(($nodes[.node] // null) == null or ((.addr | ipv4) | not) or ((.prefix | intin(1; 32)) | not) or (has_if(.node; .dev) | not))
        | "addresses: bad entry \(tojson)"),
    ($t.routes // {} | to_entries[] | . as $e | if ($nodes[$e.key] // null) == null then "routes: unknown node \($e.key)" else
        ($e.value[] | select(((.dst == "default") or (.dst | cidr)) and (.via | ipv4) and ((.table // 254) | intin(1; 254))
                             and ((.dev // null) == null or has_if($e.key; .dev)) | not) | "routes of \($e.key): bad route \(tojson)") end),
    ($t.rules // {} | to_entries[] | . as $e | if ($nodes[$e.key] // null) == null then "rules: unknown node \($e.key)" else
        ($e.value[] | select((.from | cidr) and (.table | intin(1; 252)) and ((.priority // 1000) | intin(1; 32765)) | not)
         | "rules of \($e.key): bad rule \(tojson)") end),
    ($t.mptcp // {} | to_entries[] | . as $e | if ($nodes[$e.key] // null) == null then "mptcp: unknown node \($e.key)" else
        (($e.value.limits // {}) | to_entries[] | select(((.key == "subflow" or .key == "add_addr_accepted") and (.value | intin(0; 8))) | not)
         | "mptcp limits of \($e.key): bad \(.key)"),
        ($e.value.endpoints[]? | select((.addr | ipv4) and has_if($e.key; .dev) and (.flags | test("^(subflow|signal|backup|fullmesh)( (subflow|signal|backup|fullmesh))*$")) | not)
         | "mptcp endpoints of \($e.key): bad endpoint \(tojson)") end);
'

load_topology() { # FILE: validate it as a whole (VALIDATE_JQ; the first problem is the error), then set TOPO
    local f=$1 err
    [[ -f "$f" && -r "$f" ]] || die "topology file not found: $f"
    jq -e . "$f" >/dev/null 2>&1 || die "$f: not valid JSON"
    err=$(jq -r "$VALIDATE_JQ" "$f" 2>&1) || die "$f: cannot validate ($(head -1 <<<"$err"))"
    [[ -z "$err" ]] || die "$f: $err"
    TOPO=$(cd "$(dirname "$f")" && pwd)/$(basename "$f")
}
nodes_of() { jq -r '.nodes | keys_unsorted[]' "$TOPO"; }

# ---------------------------------------------------------------------------------------------------------------
do_down() { # kill the delay shims and everything running in the namespaces (the topology's and the recorded ones)
    local n ns p sw nodes=()
    if [[ -n "$TOPO" ]]; then mapfile -t nodes < <(nodes_of); fi
    if [[ -f "$RUNSTATE/nodes" ]]; then
        while read -r n; do [[ " ${nodes[*]} " == *" $n "* ]] || nodes+=("$n"); done < "$RUNSTATE/nodes"
    fi
    for sw in "$RUNSTATE"/shim-*.pid; do
        [[ -f "$sw" ]] || continue
        while read -r p; do kill "$p" 2>/dev/null || true; done < "$sw"   # one pid a line
        rm -f "$sw"
    done
    for n in "${nodes[@]}"; do
        ns=$(ns_of "$n")
        if ns_exists "$ns"; then
            for p in $(ip netns pids "$ns" 2>/dev/null); do kill "$p" 2>/dev/null || true; done
            ip netns del "$ns" 2>/dev/null || true
        fi
    done
    rm -rf "$RUNSTATE"
    log "down: removed namespaces of prefix $NS_PREFIX (${nodes[*]:-none known})"
}

sysctl_all_ifs() { # NS KEY VALUE: net.ipv4.conf.{all,default,<each if>}.KEY = VALUE
    # shellcheck disable=SC2016  # $f expands in the namespace's shell
    ip netns exec "$1" sh -c 'for f in /proc/sys/net/ipv4/conf/*/'"$2"'; do echo '"$3"' > "$f"; done'
}

build() { # every namespace, veth, address, route, rule and MPTCP setting of $TOPO
    local n an ai aa bn bi ba pfx dev addr table via dst from prio flags mtu role
    local vk=${NSB_VETHS:-links}
    mtu=$(jq -r '.mtu // empty' "$TOPO")   # optional: one MTU for every veth (study 004: 592)
    mkdir -p "$RUNSTATE"
    nodes_of > "$RUNSTATE/nodes"
    while read -r n; do
        ip netns add "$(ns_of "$n")"
        ip -n "$(ns_of "$n")" link set lo up
    done < <(nodes_of)
    while IFS=$'\t' read -r an ai aa bn bi ba pfx; do
        ip link add "$ai" netns "$(ns_of "$an")" type veth peer name "$bi" netns "$(ns_of "$bn")"
        ip -n "$(ns_of "$an")" addr add "$aa/$pfx" dev "$ai"
        ip -n "$(ns_of "$bn")" addr add "$ba/$pfx" dev "$bi"
        if [[ -n "$mtu" ]]; then
            ip -n "$(ns_of "$an")" link set dev "$ai" mtu "$mtu"
            ip -n "$(ns_of "$bn")" link set dev "$bi" mtu "$mtu"
        fi
        # offloads off on every veth so that the captures show real segments
        ip netns exec "$(ns_of "$an")" ethtool -K "$ai" tso off gso off gro off >/dev/null 2>&1 || true
        ip netns exec "$(ns_of "$bn")" ethtool -K "$bi" tso off gso off gro off >/dev/null 2>&1 || true
        ip -n "$(ns_of "$an")" link set "$ai" up
        ip -n "$(ns_of "$bn")" link set "$bi" up
    done < <(jq -r --arg vk "$vk" '.[$vk][] | [.a.node, .a.ifname, .a.addr, .b.node, .b.ifname, .b.addr, .prefix] | @tsv' "$TOPO")
    while IFS=$'\t' read -r n dev addr pfx; do
        ip -n "$(ns_of "$n")" addr add "$addr/$pfx" dev "$dev"
    done < <(jq -r '.addresses[]? | [.node, .dev, .addr, .prefix] | @tsv' "$TOPO")
    # every node: asymmetric routes are legitimate here (per-path source routing), so no reverse-path filter
    while read -r n; do sysctl_all_ifs "$(ns_of "$n")" rp_filter 0; done < <(nodes_of)
    while read -r n; do
        role=$(jq -r --arg n "$n" '.nodes[$n].role' "$TOPO")
        if [[ "$role" == host ]]; then
            ip netns exec "$(ns_of "$n")" bash "$NSB_TESTBED/nodes/host.sh" >/dev/null
        elif [[ "$role" == router ]]; then   # a plain forwarding node (no shaping; chain.sh's routers)
            ip netns exec "$(ns_of "$n")" sysctl -qw net.ipv4.ip_forward=1
        fi
    done < <(nodes_of)
    while IFS=$'\t' read -r n dst via table dev; do
        local extra=()
        [[ -n "$dev" ]] && extra=(dev "$dev")
        ip -n "$(ns_of "$n")" route replace "$dst" via "$via" "${extra[@]}" table "$table"
    done < <(jq -r '.routes // {} | to_entries[] | .key as $n | .value[] | [$n, .dst, .via, (.table // 254), (.dev // "")] | @tsv' "$TOPO")
    while IFS=$'\t' read -r n from table prio; do
        ip -n "$(ns_of "$n")" rule add from "$from" lookup "$table" priority "$prio"
    done < <(jq -r '.rules // {} | to_entries[] | .key as $n | .value[] | [$n, .from, .table, (.priority // 1000)] | @tsv' "$TOPO")
    # MPTCP: limits and endpoints per node (kernel path manager; harmless for plain TCP sockets)
    while IFS=$'\t' read -r n sub acc; do
        ip -n "$(ns_of "$n")" mptcp limits set subflow "$sub" add_addr_accepted "$acc"
    done < <(jq -r '.mptcp // {} | to_entries[] | [.key, (.value.limits.subflow // 2), (.value.limits.add_addr_accepted // 2)] | @tsv' "$TOPO")
    while IFS=$'\t' read -r n addr dev flags; do
        # shellcheck disable=SC2086  # flags is a space-separated list of endpoint flags (validated)
        ip -n "$(ns_of "$n")" mptcp endpoint add "$addr" dev "$dev" $flags
    done < <(jq -r '.mptcp // {} | to_entries[] | .key as $n | .value.endpoints[]? | [$n, .addr, .dev, .flags] | @tsv' "$TOPO")
}

# netem where the kernel has it (tested in namespace NS), else the NFQUEUE shim (built here if needed)
delay_mechanism_in() { # NS
    if ip netns exec "$1" tc qdisc replace dev lo root netem delay 1ms >/dev/null 2>&1; then
        ip netns exec "$1" tc qdisc del dev lo root >/dev/null 2>&1 || true
        echo netem
    else
        echo shim
    fi
}
nsb_ensure_shim() {
    [[ -x "$NSB_SHIM" ]] || make -s -C "$NSB_TESTBED/delayshim" >&2 || die "cannot build the delay shim (need gcc + libnetfilter-queue-dev)"
}
