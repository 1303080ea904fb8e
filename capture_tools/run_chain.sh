#!/usr/bin/env bash
# One run of study 004 (Westwood+ vs Westwood+e over chain topologies; docs/families.md "Study 004") -> one run
# directory: the topology testbed/families/004/<T>.json built by testbed/chain.sh, one iperf3 TCP flow per flow of
# the topology (bottleneck: two, started together, both with the run's cc), captured at the sender's and the
# receiver's interface and where it leaves its first link's queue (that link's interface towards the receiver:
# flowK-first-link.pcap, from which the paper's delay, ns-2's from the packet's dequeue at the sender, follows).
# usage: run_chain.sh [--backend netns] --out RUN_DIR --family 004 --experiment E --topology T --cc C --duration-s S
#        [--error-rate P] [--bandwidth-mbit B] [--link-model htb|store-and-forward] [--rep N]
#   E: client_server, multihop_varied, multihop_uniform or bottleneck; T must equal E (one topology per experiment).
#   C: reno cubic bbr bic westwood westwood_e (the kernel's, else the BPF port of testbed/cc, else SKIPPED).
#   P: fraction of each flow's packets dropped on its error link (its first link, from the sender's side), 0..0.5;
#      default the topology's defaults.error_rate. B: Mbit/s of every link of multihop_uniform (only there); default
#      the topology's rate. --link-model: htb (default; every recording before 2026-11-27: a packet's delay lacks its
#      own transmission time) or store-and-forward (ns-2's links: testbed/chain.sh --store-and-forward).
# exit 0 = COMPLETE, 3 = SKIPPED (cc not available on this kernel), other = failed.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TB="$HERE/../testbed"
# shellcheck source=capture_tools/experiment_args.sh
source "$HERE/experiment_args.sh"   # die, num (the same one-line errors as the other capture tools)
# shellcheck source=capture_tools/capture_lib.sh
source "$HERE/capture_lib.sh"       # host_load_sample/host_load_summary, stop_captures, wait_pid_timeout

# ---------------------------------------------------------------------------------------------------------------
# options: every value is validated here, before any root command
backend=netns out="" family="" experiment="" topology="" cc="" duration_s="" error_rate="" bandwidth="" rep=1
link_model=htb
parse_long_options "--backend=backend --out=out --family=family --experiment=experiment --topology=topology --cc=cc
    --duration-s=duration_s --error-rate=error_rate --bandwidth-mbit=bandwidth --link-model=link_model --rep=rep" "$@"
EXPERIMENTS="client_server multihop_varied multihop_uniform bottleneck"
[[ "$backend" == netns ]] || die "--backend must be netns for this capture tool (study 004 runs on netns only), got '$backend'"
[[ -n "$out" ]] || die "--out is required"
[[ "$family" == 004 ]] || die "--family must be 004 for this capture tool, got '$family'"
[[ " $EXPERIMENTS " == *" $experiment "* && -n "$experiment" ]] ||
    die "--experiment must be one of $EXPERIMENTS, got '$experiment'"
[[ "$topology" == "$experiment" ]] ||
    die "--topology must equal the experiment's topology ($experiment), got '$topology'"
[[ "$cc" =~ ^(reno|cubic|bbr|bic|westwood|westwood_e)$ ]] ||
    die "--cc must be one of reno cubic bbr bic westwood westwood_e, got '$cc'"
[[ "$duration_s" =~ ^[1-9][0-9]{0,4}$ ]] || die "--duration-s must be a positive integer (s, at most 99999), got '$duration_s'"
[[ "$rep" =~ ^[1-9][0-9]{0,5}$ ]] || die "--rep must be a positive integer"
[[ "$link_model" == htb || "$link_model" == store-and-forward ]] ||
    die "--link-model must be htb or store-and-forward, got '$link_model'"
TOPO="$TB/families/004/$topology.json"
chain_args=(--topology-name "$topology")
[[ -z "$error_rate" ]] || chain_args+=(--error-rate "$error_rate")
[[ -z "$bandwidth" ]] || chain_args+=(--bandwidth-mbit "$bandwidth")
[[ "$link_model" == htb ]] || chain_args+=(--store-and-forward)
# the topology file and the link parameters: chain.sh's own validation (no root command), its one-line error as ours
if ! plan=$("$TB/chain.sh" check "${chain_args[@]}" 2>&1); then
    grep -m1 '^error: ' <<<"$plan" >&2 || echo "error: testbed/chain.sh check failed: $(head -1 <<<"$plan")" >&2
    exit 2
fi
refuse_to_start   # root, and never over a finished run (capture_lib.sh)

# ---------------------------------------------------------------------------------------------------------------
P="${MPCC_NS_PREFIX:-mpcc-}"
open_run_dir   # $out absolute, capture.log on fd 3 (capture_lib.sh)
CH=("$TB/chain.sh")
SNAPLEN=$(jq -r '.defaults.capture_snaplen // 128' "$TOPO")
mapfile -t FLOWS < <(jq -r '.flows[].flow' <<<"$plan")
mapfile -t LINKS < <(jq -r '.links[].name' <<<"$plan")
declare -A SND RCV SADDR RADDR SIF RIF PORT PDELAY PTX FIRST LNS LIFA LIFB
for k in "${FLOWS[@]}"; do
    IFS=$'\t' read -r "SND[$k]" "RCV[$k]" "SADDR[$k]" "RADDR[$k]" "SIF[$k]" "RIF[$k]" "PORT[$k]" "PDELAY[$k]" "PTX[$k]" "FIRST[$k]" < <(jq -r --argjson k "$k" \
        '.flows[] | select(.flow == $k) | [.sender, .receiver, .sender_addr, .receiver_addr, .sender_if, .receiver_if, .port, .path_delay_ms, .path_tx_rtt_ms, .path[0]] | @tsv' <<<"$plan")
done
for l in "${LINKS[@]}"; do
    IFS=$'\t' read -r "LNS[$l]" "LIFA[$l]" "LIFB[$l]" < <(jq -r --arg l "$l" '.links[] | select(.name == $l) | [.ns, .if_a, .if_b] | @tsv' <<<"$plan")
done

pids=() tcpdump_pids=() held_ccs=()
teardown() {
    local rc=$?
    stop_run_processes   # capture_lib.sh
    "${CH[@]}" down --topology-name "$topology" 2>>"$LOG" || true
    release_ccs
    exit "$rc"
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
say "run_chain: family 004 experiment $experiment cc $cc duration ${duration_s}s ${chain_args[*]} rep $rep"

# the congestion control: the kernel's, else its BPF port (testbed/cc), else SKIPPED (capture_lib.sh)
cc_impl='{}'
acquire_cc "$cc"

# ---------------------------------------------------------------------------------------------------------------
mkdir -p "$out/iperf3" "$out/ss" "$out/links"
start_time=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
applied=$("${CH[@]}" up "${chain_args[@]}" 2>>"$LOG")
for k in "${FLOWS[@]}"; do
    for n in "${SND[$k]}" "${RCV[$k]}"; do
        if [[ "$cc" == bbr ]]; then ip netns exec "$P$n" bash "$TB/nodes/host.sh" --fq >>"$LOG" 2>&1 || true; fi
    done
done

# self-check before traffic: idle RTT sender -> receiver of each flow (10 pings 50 ms apart; the error link drops
# some) vs 2 x the sum of the path's one-way delays, within 5 % or 1 ms
rtt_stats() { # FLOW -> "median_ms replies avg_ms" (null without a reply); ping prints whole ms from 100 ms on, its
    # summary line keeps microseconds (the average)
    local txt
    txt=$(ip netns exec "$P${SND[$1]}" ping -n -c 10 -i 0.05 -W 2 -I "${SADDR[$1]}" "${RADDR[$1]}" 2>/dev/null || true)
    sed -n 's/.*time=\([0-9.]*\).*/\1/p' <<<"$txt" | sort -n |
        awk -v avg="$(sed -n 's|^rtt min/avg/max/mdev = [0-9.]*/\([0-9.]*\)/.*|\1|p' <<<"$txt")" '
            {v[NR]=$1} END{if(NR==0){m="null"} else if(NR%2){m=v[(NR+1)/2]} else {m=(v[NR/2]+v[NR/2+1])/2}
                           print m, NR, (avg == "" ? "null" : avg)}'
}
self_check='{}'
for k in "${FLOWS[@]}"; do
    # a median above the tolerance is measured again (rtt_measure_again), up to 3 times; all medians are recorded
    meds='[]'
    for attempt in 1 2 3; do
        read -r med nrep avg < <(rtt_stats "$k")
        meds=$(jq -c --argjson m "$med" '. + [$m]' <<<"$meds")
        rtt_measure_again "$med" "$(awk -v d="${PDELAY[$k]}" -v x="${PTX[$k]}" 'BEGIN{print 2 * d + x}')" || break
        [[ $attempt == 3 ]] || say "self-check: flow $k idle RTT median $med ms above the tolerance; measuring again"
    done
    self_check=$(jq -c --arg k "flow$k" --argjson m "$med" --argjson n "$nrep" --argjson avg "$avg" --argjson d "${PDELAY[$k]}" \
        --argjson x "${PTX[$k]}" \
        --argjson meds "$meds" --argjson path "$(jq -c --argjson k "$k" '.flows[] | select(.flow == $k) | .path' <<<"$plan")" '
        . + {($k): {rtt_median_ms: $m, rtt_avg_ms: $avg, expected_rtt_ms: (2 * $d + $x), replies: $n, pings: 10, path: $path,
                    rtt_median_attempts_ms: $meds,
                    rtt_ok: (if $m == null then false else ((($m - 2 * $d - $x) | fabs) <= ([1, 0.05 * (2 * $d + $x)] | max)) end)}}' <<<"$self_check")
done
self_check=$(jq -c '. + {ok: ([.[] | .rtt_ok] | all)}' <<<"$self_check")
say "self_check: $self_check"

# ---------------------------------------------------------------------------------------------------------------
cap() { # NODE IF FILE
    start_capture "$P$1" "$2" "$out/$3" "$SNAPLEN"   # capture_lib.sh
}
for k in "${FLOWS[@]}"; do
    cap "${SND[$k]}" "${SIF[$k]}" "flow$k-sender.pcap"
    cap "${RCV[$k]}" "${RIF[$k]}" "flow$k-receiver.pcap"
    cap "${LNS[${FIRST[$k]}]}" "${LIFB[${FIRST[$k]}]}" "flow$k-first-link.pcap"
done
declare -A SRV CLI
for k in "${FLOWS[@]}"; do
    ip netns exec "$P${RCV[$k]}" iperf3 -s -1 -B "${RADDR[$k]}" -p "${PORT[$k]}" --json -I "$out/iperf3/flow$k-server.pid" \
        > "$out/iperf3/flow$k-server.json" 2>>"$LOG" &
    SRV[$k]=$!; pids+=("$!")
done
wait_captures_listening || exit 1   # capture_lib.sh
sleep 1

SS_INTERVAL_S=0.1   # `ss -tin` sampling interval (meta.json ss_interval_s), as the other capture tools
for k in "${FLOWS[@]}"; do
    # blocks of `ss -tin dst RECEIVER` on the sender, each preceded by `# ts=<epoch s>`
    # shellcheck disable=SC2016  # $(date) must expand inside the namespace shell
    ip netns exec "$P${SND[$k]}" bash -c 'while :; do echo "# ts=$(date +%s.%N)"; ss -tin dst '"${RADDR[$k]}"'; sleep '"$SS_INTERVAL_S"'; done' \
        > "$out/ss/flow$k.txt" 2>/dev/null &
    pids+=("$!")
done
host_load0=$(host_load_sample)
guard0=$(guard_sample)
flow_start_epoch=$(date +%s.%N)
say "flow start: ${#FLOWS[@]} flow(s) cc=$cc ${duration_s}s"
# every flow at once (bottleneck: both sources start together); the connect timeout leaves room for SYNs the error
# link drops (retransmitted after 1, 3, 7, 15 s)
for k in "${FLOWS[@]}"; do
    ip netns exec "$P${SND[$k]}" iperf3 -c "${RADDR[$k]}" -B "${SADDR[$k]}" -p "${PORT[$k]}" -C "$cc" -t "$duration_s" \
        --connect-timeout 20000 --json > "$out/iperf3/flow$k-client.json" 2>>"$LOG" &
    CLI[$k]=$!; pids+=("$!")
done
for k in "${FLOWS[@]}"; do
    wait_pid_timeout "${CLI[$k]}" $((duration_s + 60)) || { say "flow $k client failed (exit $?)"; exit 1; }
    iperf_ok "$out/iperf3/flow$k-client.json" || exit 1
done
for k in "${FLOWS[@]}"; do wait_pid_timeout "${SRV[$k]}" 15 || say "flow $k server exit status $?"; done
say "flows done"
host_load1=$(host_load_sample)
guard1=$(guard_sample)
sleep 0.5
end_processes   # capture_lib.sh

# ---------------------------------------------------------------------------------------------------------------
# after the flows: link queues (drops), the error model's counters, what the captures show
error_counts() { # LINK -> {arrivals, drops} of the packets arriving from side a (iptables counters)
    ip netns exec "$P${LNS[$1]}" iptables-save -c -t filter 2>/dev/null | awk -v ifa="${LIFA[$1]}" '
        $2 == "-A" && $3 == "FORWARD" && $4 == "-i" && $5 == ifa {
            n = substr($1, 2); sub(/:.*/, "", n)
            if ($0 ~ /-j DROP/) d += n; else if (NF == 5) a += n }
        END {printf "{\"arrivals\":%d,\"drops\":%d}", a, d}'
}
queues='{}' errors='{}'
for l in "${LINKS[@]}"; do
    ns="$P${LNS[$l]}"
    { echo "== tc -s qdisc show ($l, namespace ${LNS[$l]}) =="; ip netns exec "$ns" tc -s qdisc show
      echo "== ip -s link show ($l) =="; ip netns exec "$ns" ip -s link show
      echo "== iptables -L FORWARD -v -x -n ($l) =="; ip netns exec "$ns" iptables -w -L FORWARD -v -x -n; } > "$out/links/$l.txt" 2>&1
    queues=$(ip netns exec "$ns" tc -s -j qdisc show | jq -c --arg l "$l" --arg ifa "${LIFA[$l]}" --arg ifb "${LIFB[$l]}" \
        --argjson q "$queues" '
        . as $t | def dir($dev): ($t | map(select(.dev == $dev))
            | {dev: $dev, root: (map(select(.root)) | .[0] | {kind, packets, drops, overlimits}),
               leaf: (map(select(.handle == "10:")) | .[0] | {kind, limit: .options.limit, packets, drops})});
        $q + {($l): {a_to_b: dir($ifb), b_to_a: dir($ifa)}}')
    errors=$(jq -c --arg l "$l" --argjson e "$(error_counts "$l")" \
        '. + {($l): ($e + {observed_rate: (if $e.arrivals > 0 then $e.drops / $e.arrivals else null end)})}' <<<"$errors")
done
DATA_FILTER() { echo "tcp and dst port $1 and (ip[2:2] - ((ip[0]&0xf)<<2) - ((tcp[12]&0xf0)>>2)) > 0"; }
data_pkts='{}'
for k in "${FLOWS[@]}"; do
    s=$(tcpdump -r "$out/flow$k-sender.pcap" -nn "$(DATA_FILTER "${PORT[$k]}")" 2>/dev/null | wc -l)
    r=$(tcpdump -r "$out/flow$k-receiver.pcap" -nn "$(DATA_FILTER "${PORT[$k]}")" 2>/dev/null | wc -l)
    data_pkts=$(jq -c --arg k "flow$k" --argjson s "$s" --argjson r "$r" '. + {($k): {sender: $s, receiver: $r}}' <<<"$data_pkts")
done
host_load=$(host_load_summary "$host_load0" "$host_load1")
# packets the captures lost in the kernel (tcpdump's own count at exit, in capture.log): should be 0
capture_drops=$(sed -n 's/^\([0-9]*\) packets dropped by kernel$/\1/p' "$LOG" | awk '{s += $1} END {print s + 0}')
first_sender=${SND[${FLOWS[0]}]}
jq -n --argjson applied "$applied" --arg start "$start_time" --arg kernel "$(uname -r)" --arg host "$(uname -n)" \
   --arg exp "$experiment" --arg topo_name "$topology" --arg cc "$cc" --argjson t "$duration_s" --argjson rep "$rep" \
   --argjson self_check "$self_check" --argjson host_load "$host_load" --arg ssi "$SS_INTERVAL_S" --argjson cc_impl "$cc_impl" --argjson cc_guard "$(guard_summary "$guard0" "$guard1")" \
   --argjson queues "$queues" --argjson errors "$errors" --argjson dp "$data_pkts" --arg t0 "$flow_start_epoch" \
   --argjson cdrops "$capture_drops" --argjson snaplen "$SNAPLEN" \
   --arg topo_sha "$(sha256sum "$TOPO" | cut -d' ' -f1)" \
   --arg sysctls "$(ip netns exec "$P$first_sender" sysctl net.ipv4.tcp_sack net.ipv4.tcp_dsack net.ipv4.tcp_timestamps net.ipv4.tcp_window_scaling)" \
   --arg iperf3v "$(iperf3 --version 2>&1 | sed -n 1p)" --arg tcpdumpv "$(tcpdump --version 2>&1 | sed -n 1p)" \
   --arg pingv "$(ping -V 2>&1 | sed -n 1p)" --arg ipv "$(ip -V 2>&1 | sed -n 1p)" --arg iptv "$(iptables --version 2>&1 | sed -n 1p)" \
   '{params: ({family: "004", experiment: $exp, topology: $topo_name, cc: $cc, error_rate: $applied.error_rate,
              bandwidth_mbit: $applied.bandwidth_mbit, duration_s: $t, rep: $rep, backend: "netns", mtu: $applied.mtu}
              + (if $applied.store_and_forward then {link_model: "store-and-forward"} else {} end)),
     family: "004", backend: "netns", host: $host, kernel: $kernel, start_time: $start, sysctls: ($sysctls | split("\n")),
     topology: {name: $topo_name, file: ("testbed/families/004/" + $topo_name + ".json"), sha256: $topo_sha},
     tool_versions: {iperf3: $iperf3v, tcpdump: $tcpdumpv, ping: $pingv, iproute2: $ipv, iptables: $iptv},
     link_model: (if $applied.store_and_forward then "store-and-forward" else "htb" end),
     links: [$applied.links[] | {name, a, b, rate_mbit, delay_ms, buffer_pkts, error_rate, error_direction, ns, if_a, if_b}
                                + ({tx_ms_a, tx_ms_b, tx_bytes_a, tx_bytes_b} | with_entries(select(.value != null)))],
     flows: [$applied.flows[] | {flow, sender, receiver, sender_addr, receiver_addr, port, sender_if, receiver_if, error_link,
                                 path, path_delay_ms, path_min_rate_mbit, path_tx_rtt_ms}],
     delay_mechanism: $applied.delay_mechanism, shaper: $applied.shaper, queue_mechanism: $applied.queue_mechanism,
     loss_mechanism: $applied.loss_mechanism, cc_impl: $cc_impl, cc_guard: $cc_guard,
     self_check: $self_check, queues: $queues, error_model: $errors, data_pkts: $dp,
     flow_start_epoch: ($t0 | tonumber), capture_snaplen: $snaplen,
     capture_kernel_drops: $cdrops, host_load: $host_load, ss_interval_s: ($ssi | tonumber), status: "complete"}' > "$out/meta.json.tmp"
mv "$out/meta.json.tmp" "$out/meta.json"
date -u +%Y-%m-%dT%H:%M:%SZ > "$out/COMPLETE"
say "COMPLETE"
