#!/usr/bin/env bash
# netns backend for the study-000 testbed: 8 namespaces named ${MPCC_NS_PREFIX:-mpcc-}<node>.
# usage: netns.sh up [--path-mode single|multipath] [--link-delay-ms D] [--loss-pct L] [--path-skew-ms K]
#                   [--queue-model fifo-after-delay|tbf-netem|netem-tbf|netem-tbf-k6]
#        netns.sh down | check | counters | rtt | shim-stats | features | exec NODE -- CMD...
# shim-stats: each switch's delay-shim counters since the last shim-stats (JSON): packets released, released > 1 ms
# and > 5 ms late, dropped at the netem limit, the most packets counted against it (docs/netem-semantics.md)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=testbed/nodes/common.sh
source "$HERE/nodes/common.sh"
SHIM="$HERE/delayshim/delayshim"
RUNSTATE="/run/mpcc-netns/${NS_PREFIX}"

usage() { echo "usage: netns.sh up [--path-mode single|multipath] [--link-delay-ms D] [--loss-pct L] [--path-skew-ms K] [--queue-model fifo-after-delay|tbf-netem|netem-tbf|netem-tbf-k6] | down | check | counters | rtt | shim-stats | features | exec NODE -- CMD..." >&2; exit 2; }

ifname() { echo "$(short_of "$1")-$(short_of "$2")"; }

do_down() {
    local n ns
    for sw in switch1 switch2; do
        if [[ -f "$RUNSTATE/shim-$sw.pid" ]]; then
            kill "$(cat "$RUNSTATE/shim-$sw.pid")" 2>/dev/null || true
            rm -f "$RUNSTATE/shim-$sw.pid"
        fi
    done
    for n in "${NODES[@]}"; do
        ns=$(ns_of "$n")
        if ip netns list | awk -v n="$ns" '$1 == n {f = 1} END {exit !f}'; then
            # kill anything still running in the namespace (started by this testbed)
            for p in $(ip netns pids "$ns" 2>/dev/null); do kill "$p" 2>/dev/null || true; done
            ip netns del "$ns" 2>/dev/null || true
        fi
    done
    rm -rf "$RUNSTATE"
    log "down: removed namespaces with prefix $NS_PREFIX"
}

build() {
    local n an bn aa ba pfx
    for n in "${NODES[@]}"; do
        ip netns add "$(ns_of "$n")"
        ip -n "$(ns_of "$n")" link set lo up
    done
    while IFS=$'\t' read -r an aa bn ba pfx; do
        ip link add "$(ifname "$an" "$bn")" netns "$(ns_of "$an")" type veth peer name "$(ifname "$bn" "$an")" netns "$(ns_of "$bn")"
        ip -n "$(ns_of "$an")" addr add "$aa/$pfx" dev "$(ifname "$an" "$bn")"
        ip -n "$(ns_of "$bn")" addr add "$ba/$pfx" dev "$(ifname "$bn" "$an")"
        ip -n "$(ns_of "$an")" link set "$(ifname "$an" "$bn")" up
        ip -n "$(ns_of "$bn")" link set "$(ifname "$bn" "$an")" up
    done < <(jq -r '.links[] | [.a.node, .a.addr, .b.node, .b.addr, .prefix] | @tsv' "$TOPOLOGY")
    # host default routes
    ip -n "$(ns_of src1)" route replace default via 10.1.1.1
    ip -n "$(ns_of src2)" route replace default via 10.1.2.1
    ip -n "$(ns_of dst1)" route replace default via 10.4.1.1
    ip -n "$(ns_of dst2)" route replace default via 10.4.2.1
    # switch routes
    ip -n "$(ns_of switch1)" route replace 10.1.0.0/16 via 10.2.1.1
    ip -n "$(ns_of switch1)" route replace 10.4.0.0/16 via 10.3.1.1
    ip -n "$(ns_of switch2)" route replace 10.1.0.0/16 via 10.2.2.1
    ip -n "$(ns_of switch2)" route replace 10.4.0.0/16 via 10.3.2.1
}

do_up() {
    # shellcheck disable=SC2034  # fq: set by parse_up_args, unused here (the capture tool applies fq per host)
    local path_mode link_delay_ms loss_pct path_skew_ms queue_model fq
    parse_up_args 0 "$@"
    [[ $EUID -eq 0 ]] || die "netns backend needs root"

    local mech=shim
    if ip netns list | awk -v n="$(ns_of switch1)" '$1 == n {f = 1} END {exit !f}'; then
        :  # existing testbed of this prefix: re-apply parameters only
    else
        do_down 2>/dev/null || true
        log "up: building 8 namespaces with prefix $NS_PREFIX"
        build
    fi
    mkdir -p "$RUNSTATE"
    local feat rr
    feat=$(bash "$HERE/features.sh")
    if [[ "$(jq -r .netem <<<"$feat")" == true ]]; then mech=netem; fi
    rr=nft
    [[ "$(jq -r .mechanism.round_robin <<<"$feat")" == teql ]] && rr=teql
    if [[ $mech == shim && ! -x "$SHIM" ]]; then
        make -s -C "$HERE/delayshim" >&2 || die "cannot build the delay shim (need gcc + libnetfilter-queue-dev)"
    fi
    local n
    for n in src1 src2 dst1 dst2; do ip netns exec "$(ns_of "$n")" bash "$HERE/nodes/host.sh" >/dev/null; done
    ip netns exec "$(ns_of router1)" bash "$HERE/nodes/router.sh" "$path_mode" r1-src1 r1-src2 10.4.0.0/16 10.2.1.2 10.2.2.2 "$rr" >&2
    ip netns exec "$(ns_of router2)" bash "$HERE/nodes/router.sh" "$path_mode" r2-dst1 r2-dst2 10.1.0.0/16 10.3.1.2 10.3.2.2 "$rr" >&2
    local half half2 burst qm
    burst=$(jq -r .defaults.tbf_burst_bytes.netns "$TOPOLOGY")
    qm=$queue_model
    [[ -n $qm ]] || { if [[ $mech == netem ]]; then qm=tbf-netem; else qm=fifo-after-delay; fi; }
    half=$(awk -v d="$link_delay_ms" 'BEGIN{printf "%g", d/2}')
    half2=$(awk -v d="$link_delay_ms" -v k="$path_skew_ms" 'BEGIN{printf "%g", d/2+k}')
    ip netns exec "$(ns_of switch1)" bash "$HERE/nodes/switch.sh" sw1-r1 sw1-r2 "$half" "$loss_pct" "$mech" "$SHIM" "$RUNSTATE/shim-switch1.pid" "$burst" --queue-model "$qm" >&2
    ip netns exec "$(ns_of switch2)" bash "$HERE/nodes/switch.sh" sw2-r1 sw2-r2 "$half2" "$loss_pct" "$mech" "$SHIM" "$RUNSTATE/shim-switch2.pid" "$burst" --queue-model "$qm" >&2
    jq -n --arg pm "$path_mode" --argjson d "$link_delay_ms" --argjson l "$loss_pct" --argjson k "$path_skew_ms" --arg mech "$mech" --arg rr "$(jq -r .mechanism.round_robin <<<"$feat")" --argjson b "$burst" --arg qm "$qm" \
        '{path_mode:$pm, link_delay_ms:$d, loss_pct:$l, path_skew_ms:$k, queue_model:$qm, tbf_burst_bytes:$b, delay_mechanism:$mech, round_robin_mechanism:(if $pm=="multipath" then $rr else "none" end)}' > "$RUNSTATE/params.json"
    log "up: path_mode=$path_mode link_delay_ms=$link_delay_ms loss_pct=$loss_pct path_skew_ms=$path_skew_ms queue_model=$qm delay=$mech"
}

do_exec() {
    local node=${1:-}
    shift || usage
    [[ "${1:-}" == "--" ]] && shift
    [[ " ${NODES[*]} " == *" $node "* ]] || die "unknown node '$node' (one of: ${NODES[*]})"
    exec ip netns exec "$(ns_of "$node")" "$@"
}

nft_counter() { # NODE CHAIN-RULE-PATTERN -> packets
    ip netns exec "$(ns_of "$1")" nft list chain ip mpcc_rr rrcount 2>/dev/null | awk -v m="meta mark 0x0000000$2" 'index($0, m) {for(i=1;i<=NF;i++) if($i=="packets") print $(i+1)}' || true
}

# Per-path packet counters of both routers (JSON): tx packets of each switch-facing interface (any mechanism) and,
# with the nft mechanism, the per-mark forward counters. router1 carries the data direction, router2 the ACKs.
do_counters() {
    [[ $EUID -eq 0 ]] || die "netns backend needs root"
    local r sw1 sw2 t1 t2 m1 m2 out="{}"
    for r in router1 router2; do
        sw1=$(ifname "$r" switch1); sw2=$(ifname "$r" switch2)
        t1=$(ip netns exec "$(ns_of "$r")" cat "/sys/class/net/$sw1/statistics/tx_packets")
        t2=$(ip netns exec "$(ns_of "$r")" cat "/sys/class/net/$sw2/statistics/tx_packets")
        m1=$(nft_counter "$r" 1); m2=$(nft_counter "$r" 2)
        out=$(jq -c --arg r "$r" --argjson t1 "$t1" --argjson t2 "$t2" --argjson m1 "${m1:-null}" --argjson m2 "${m2:-null}" \
            '. + {($r): {path1_tx_pkts:$t1, path2_tx_pkts:$t2, nft_mark1_pkts:$m1, nft_mark2_pkts:$m2}}' <<<"$out")
    done
    echo "$out"
}

# Idle RTT src1 -> dst1: 20 pings 50 ms apart; prints the median in ms (or null)
rtt_median() {
    ip netns exec "$(ns_of src1)" ping -n -c 20 -i 0.05 10.4.1.2 2>/dev/null | sed -n 's/.*time=\([0-9.]*\).*/\1/p' | sort -n |
        awk '{v[NR]=$1} END{if(NR==0){print "null"} else if(NR%2){print v[(NR+1)/2]} else {print (v[NR/2]+v[NR/2+1])/2}}'
}

do_check() {
    [[ $EUID -eq 0 ]] || die "netns backend needs root"
    [[ -f "$RUNSTATE/params.json" ]] || die "testbed with prefix $NS_PREFIX is not up"
    local d pm med ok_rtt parity_ok=null a1 a2 b1 b2 rate rate_ok
    d=$(jq -r .link_delay_ms "$RUNSTATE/params.json"); pm=$(jq -r .path_mode "$RUNSTATE/params.json")
    a1=$(nft_counter router1 1); a2=$(nft_counter router1 2)
    med=$(rtt_median)
    local k exp_rtt
    k=$(jq -r .path_skew_ms "$RUNSTATE/params.json")
    # multipath: request and reply each take path 2 (+k one way) half the time -> median RTT d + k
    exp_rtt=$d; [[ $pm == multipath ]] && exp_rtt=$(awk -v d="$d" -v k="$k" 'BEGIN{print d+k}')
    if [[ $med == null ]]; then ok_rtt=false; else ok_rtt=$(awk -v m="$med" -v d="$exp_rtt" 'BEGIN{print ((m-d)<=1 && (d-m)<=1) ? "true":"false"}'); fi
    if [[ $pm == multipath ]]; then
        b1=$(nft_counter router1 1); b2=$(nft_counter router1 2)
        parity_ok=$(awk -v x=$((b1-a1)) -v y=$((b2-a2)) 'BEGIN{print (x==y && x==10) ? "true":"false"}')
        a1=$((b1-a1)); a2=$((b2-a2))
    else
        a1=0; a2=0
    fi
    local srvpid
    ip netns exec "$(ns_of dst1)" iperf3 -s -1 -p 5299 >/dev/null 2>&1 &
    srvpid=$!
    sleep 0.5
    rate=$(ip netns exec "$(ns_of src1)" iperf3 -c 10.4.1.2 -p 5299 -t 3 -C cubic --json 2>/dev/null | jq '.end.sum_received.bits_per_second/1e6' || echo null)
    wait "$srvpid" 2>/dev/null || true
    local expect=10
    [[ $pm == multipath ]] && expect=20
    # TCP goodput over a 10 Mbit/s TBF (L2 rate) is ~95.5 % of the rate: accept within 5 % of rate*0.955
    rate_ok=$(awk -v r="$rate" -v e="$expect" 'BEGIN{t=e*0.955; print (r>=t*0.95 && r<=t*1.05) ? "true":"false"}')
    jq -n --arg pm "$pm" --argjson d "$d" --argjson er "$exp_rtt" --argjson med "$med" --argjson okr "$ok_rtt" \
        --argjson p1 "$a1" --argjson p2 "$a2" --argjson pok "$parity_ok" --argjson rate "${rate:-null}" --argjson rok "$rate_ok" \
        '{path_mode:$pm, rtt_median_ms:$med, expected_rtt_ms:$er, link_delay_ms:$d, rtt_ok:$okr,
          round_robin:{path1_pkts:$p1, path2_pkts:$p2, parity_ok:$pok},
          tcp_goodput_mbps:$rate, expected_goodput_mbps:(if $pm=="multipath" then 19.1 else 9.55 end), rate_ok:$rok,
          ok:($okr and ($pok != false) and $rok)}'
}

# shim-stats: SIGUSR1 to each switch's shim (it prints its counters since the previous report and restarts them), then
# the last report line of each as JSON; null for a switch without a shim (netem, or zero delay)
do_shim_stats() {
    [[ $EUID -eq 0 ]] || die "netns backend needs root"
    local sw pidf logf pid line out="{}" before i
    for sw in switch1 switch2; do
        pidf="$RUNSTATE/shim-$sw.pid" logf="$RUNSTATE/shim-$sw.log" line=""
        if [[ -f $pidf ]] && pid=$(cat "$pidf") && kill -0 "$pid" 2>/dev/null; then
            before=0
            [[ -f $logf ]] && before=$(grep -c '^delayshim: released' "$logf" || true)
            kill -USR1 "$pid"
            for ((i = 0; i < 50; i++)); do   # the shim reports within one poll round (<= its delay)
                if [[ -f $logf ]] && (( $(grep -c '^delayshim: released' "$logf" || true) > before )); then break; fi
                sleep 0.02
            done
            [[ -f $logf ]] && line=$(grep '^delayshim: released' "$logf" | tail -n 1 || true)
        fi
        out=$(jq -c --arg sw "$sw" --arg line "$line" '. + {($sw): (if $line == "" then null else
              ($line | [scan("([a-z_0-9]+) ([0-9]+)")] | map({key: .[0], value: (.[1] | tonumber)}) | from_entries) end)}' <<<"$out")
    done
    echo "$out"
}

cmd=${1:-}
shift || usage
case "$cmd" in
    up) do_up "$@" ;;
    down) [[ $EUID -eq 0 ]] || die "netns backend needs root"; do_down ;;
    check) do_check ;;
    counters) do_counters ;;
    rtt) [[ $EUID -eq 0 ]] || die "netns backend needs root"; rtt_median ;;
    shim-stats) do_shim_stats ;;
    features) exec bash "$HERE/features.sh" ;;
    exec) do_exec "$@" ;;
    *) usage ;;
esac
