#!/usr/bin/env bash
# One experiment -> one run directory (contract: docs/architecture.md).
# usage: run_experiment.sh --backend netns --out RUN_DIR --experiment E --cc C [--cc2 C2] [--cbr-mbps R]
#        --path-mode M --link-delay-ms D --loss-pct L --duration-s T [--flow2-offset-s S] [--path-skew-ms K] [--rep N]
#        [--queue-model fifo-after-delay|tbf-netem|netem-tbf|netem-tbf-k6]   (the switches' buffer and delay: testbed/nodes/switch.sh)
#        [--udp-len-bytes N]                                    (UDP payload per datagram, iperf3 -l; with --cbr-mbps)
#        [--tcp-recovery 0..7]                                  (the senders' net.ipv4.tcp_recovery; unset: the kernel's)
# exit 0 = COMPLETE, 3 = SKIPPED, other = failed.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TB="$HERE/../testbed"
# shellcheck source=capture_tools/experiment_args.sh
source "$HERE/experiment_args.sh"
# shellcheck source=capture_tools/capture_lib.sh
source "$HERE/capture_lib.sh"       # host_load_sample/host_load_summary, run directory, cc, teardown
parse_experiment_args netns "$@"
# `ss -ti` sampling interval, s (meta.json ss_interval_s); MPCC_SS_INTERVAL_S overrides it (0.005-10 s)
SS_INTERVAL_S="${MPCC_SS_INTERVAL_S:-0.1}"
if ! [[ "$SS_INTERVAL_S" =~ ^[0-9]*\.?[0-9]+$ ]] || ! awk -v v="$SS_INTERVAL_S" 'BEGIN{exit !(v >= 0.005 && v <= 10)}'; then
    echo "error: MPCC_SS_INTERVAL_S must be a number of seconds in [0.005, 10], got '$SS_INTERVAL_S'" >&2
    exit 2
fi

refuse_to_start   # root, and never over a finished run (capture_lib.sh)

P="${MPCC_NS_PREFIX:-mpcc-}"
open_run_dir   # $out absolute, capture.log on fd 3 (capture_lib.sh)
mkdir -p "$out/iperf3" "$out/ss"
why=$(tcp_recovery_blocker "$(uname -r)" "this kernel")
[[ -z "$why" ]] || skip "$why"
pids=() tcpdump_pids=() held_ccs=()
teardown() {
    local rc=$?
    stop_run_processes   # capture_lib.sh
    "$TB/netns.sh" down 2>>"$LOG" || true
    release_ccs
    exit "$rc"
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Each CC from the kernel if it has it, else from its BPF port in testbed/cc (registered for this run, released at
# teardown), else the run is SKIPPED with the reason. cc_impl (meta.json) says which implementation ran.
cc_impl='{}'
for c in $cc $cc2; do
    [[ " ${held_ccs[*]} " == *" $c "* ]] || acquire_cc "$c"   # capture_lib.sh
done

start_time=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
say "up: $path_mode delay=$link_delay_ms loss=$loss_pct skew=$path_skew_ms queue_model=${queue_model:-default}"
up_args=(--path-mode "$path_mode" --link-delay-ms "$link_delay_ms" --loss-pct "$loss_pct" --path-skew-ms "$path_skew_ms")
[[ -z "$queue_model" ]] || up_args+=(--queue-model "$queue_model")
"$TB/netns.sh" up "${up_args[@]}" 2>>"$LOG"
features=$("$TB/netns.sh" features 2>>"$LOG")
# the queue model that ran: the one asked for, else the delay mechanism's own (testbed/nodes/switch.sh)
queue_model_used=$queue_model
if [[ -z "$queue_model_used" ]]; then
    queue_model_used=fifo-after-delay
    [[ "$(jq -r .mechanism.delay <<<"$features")" == netem ]] && queue_model_used=tbf-netem
fi
for h in src1 src2; do
    # the senders' loss detection (per namespace; a new namespace starts with the kernel's default)
    [[ -z "$tcp_recovery" ]] || ip netns exec "$P$h" sysctl -qw "net.ipv4.tcp_recovery=$tcp_recovery"
    if [[ "$cc" == bbr || "$cc2" == bbr ]]; then ip netns exec "$P$h" bash "$TB/nodes/host.sh" --fq >>"$LOG" 2>&1 || true; fi
done

# self-check before traffic: idle RTT vs the configured link delay; per-path counters are diffed over the run
rtt_idle=$("$TB/netns.sh" rtt 2>>"$LOG" || echo null)
[[ "$rtt_idle" =~ ^[0-9.]+$ ]] || rtt_idle=null
counters0=$("$TB/netns.sh" counters 2>>"$LOG")
"$TB/netns.sh" shim-stats >/dev/null 2>>"$LOG" || true   # restart the shims' counters: shim_stats covers the flows

flow2=0
[[ -n "$cc2" || -n "$cbr_mbps" ]] && flow2=1
cap() { # NODE IF FILE
    start_capture "$P$1" "$2" "$out/$3" 128   # capture_lib.sh
}
cap router1 r1-src1 router1.pcap
cap router2 r2-dst1 receiver.pcap
if [[ $flow2 == 1 ]]; then
    # flow 2 enters/leaves on other interfaces: same capture points, separate files (Ethernet link type kept)
    cap router1 r1-src2 router1-flow2.pcap
    cap router2 r2-dst2 receiver-flow2.pcap
fi
ip netns exec "${P}dst1" iperf3 -s -1 -p 5201 --json -I "$out/iperf3/flow1-server.pid" > "$out/iperf3/flow1-server.json" 2>>"$LOG" &
srv1=$!; pids+=("$srv1")
if [[ $flow2 == 1 ]]; then
    ip netns exec "${P}dst2" iperf3 -s -1 -p 5202 --json -I "$out/iperf3/flow2-server.pid" > "$out/iperf3/flow2-server.json" 2>>"$LOG" &
    srv2=$!; pids+=("$srv2")
fi
wait_captures_listening || exit 1   # capture_lib.sh
sleep 1

ss_loop() { # NS DST -> file
    local ns=$1 dst=$2 f=$3
    # shellcheck disable=SC2016  # $(date) must expand inside the namespace shell
    ip netns exec "$ns" bash -c 'while :; do echo "# ts=$(date +%s.%N)"; ss -tin dst '"$dst"'; sleep '"$SS_INTERVAL_S"'; done' > "$f" 2>/dev/null &
    pids+=("$!")
}
ss_loop "${P}src1" 10.4.1.2 "$out/ss/flow1.txt"
host_load0=$(host_load_sample)
guard0=$(guard_sample)
say "flow1 start cc=$cc"
ip netns exec "${P}src1" iperf3 -c 10.4.1.2 -p 5201 -C "$cc" -t "$duration_s" --json > "$out/iperf3/flow1-client.json" 2>>"$LOG" &
c1=$!; pids+=("$c1")
c2=""
if [[ $flow2 == 1 ]]; then
    sleep "$flow2_offset_s"
    d2=$((duration_s - flow2_offset_s))
    if [[ -n "$cc2" ]]; then
        ss_loop "${P}src2" 10.4.2.2 "$out/ss/flow2.txt"
        say "flow2 start cc2=$cc2"
        ip netns exec "${P}src2" iperf3 -c 10.4.2.2 -p 5202 -C "$cc2" -t "$d2" --json > "$out/iperf3/flow2-client.json" 2>>"$LOG" &
    else
        say "flow2 start udp cbr=$cbr_mbps"
        len_opt=()
        [[ -z "$udp_len_bytes" ]] || len_opt=(-l "$udp_len_bytes")
        ip netns exec "${P}src2" iperf3 -c 10.4.2.2 -p 5202 -u -b "${cbr_mbps}M" "${len_opt[@]}" -t "$d2" --json > "$out/iperf3/flow2-client.json" 2>>"$LOG" &
    fi
    c2=$!; pids+=("$c2")
fi
wait "$c1" || { say "flow1 client failed"; exit 1; }
iperf_ok "$out/iperf3/flow1-client.json" || exit 1
if [[ -n "$c2" ]]; then
    wait "$c2" || { say "flow2 client failed"; exit 1; }
    iperf_ok "$out/iperf3/flow2-client.json" || exit 1
fi
wait "$srv1" || true
[[ $flow2 == 0 ]] || wait "$srv2" || true
say "flows done"
host_load1=$(host_load_sample)
guard1=$(guard_sample)
counters1=$("$TB/netns.sh" counters 2>>"$LOG")
shim_stats=$("$TB/netns.sh" shim-stats 2>>"$LOG") || shim_stats=null
jq -e . >/dev/null 2>&1 <<<"$shim_stats" || shim_stats=null
# Round-robin parity over the whole run: with strict alternation the two paths' packet counts differ by at most a
# few packets (nft mark counters: |d| <= 2 + 0.1 %; interface tx counters, which also see ARP/ND: |d| <= 4 + 0.5 %).
# Single path: path 2 must stay (almost) idle. RTT: idle median within 1 ms of the expected two-way delay.
self_check=$(jq -n --argjson c0 "$counters0" --argjson c1 "$counters1" --argjson med "$rtt_idle" --arg pm "$path_mode" \
    --argjson d "$link_delay_ms" --argjson k "$path_skew_ms" '
    def rr(r): ($c1[r].path1_tx_pkts - $c0[r].path1_tx_pkts) as $t1 | ($c1[r].path2_tx_pkts - $c0[r].path2_tx_pkts) as $t2 |
      (if $c1[r].nft_mark1_pkts != null and $c0[r].nft_mark1_pkts != null
       then {m1: ($c1[r].nft_mark1_pkts - $c0[r].nft_mark1_pkts), m2: ($c1[r].nft_mark2_pkts - $c0[r].nft_mark2_pkts)}
       else null end) as $m |
      {path1_pkts:$t1, path2_pkts:$t2, nft_mark1_pkts:(if $m then $m.m1 else null end), nft_mark2_pkts:(if $m then $m.m2 else null end),
       parity_ok:(if $pm == "multipath" then
                    (if $m then ((($m.m1 - $m.m2)|fabs) <= 2 + 0.001 * ($m.m1 + $m.m2))
                     else ((($t1 - $t2)|fabs) <= 4 + 0.005 * ($t1 + $t2)) end) and ($t1 > 0)
                  else null end),
       single_path_ok:(if $pm == "single" then ($t2 <= 10) else null end)};
    (if $pm == "multipath" then $d + $k else $d end) as $exp |
    {rtt_median_ms:$med, expected_rtt_ms:$exp,
     rtt_ok:(if $med == null then false else ((($med - $exp)|fabs) <= 1) end),
     round_robin:{router1: rr("router1"), router2: rr("router2")}} |
    .ok = (.rtt_ok and ([.round_robin[] | .parity_ok, .single_path_ok] | all(. != false)))')
say "self_check: $(jq -c . <<<"$self_check")"

# Host CPU contention while the flows ran (the delay/loss shim and the captures share the host's cores):
# PSI "some" stall share = delta(total stall us) / delta(wall us) (Linux Documentation/accounting/psi.rst).
host_load=$(host_load_summary "$host_load0" "$host_load1")
qd=""
for n in switch1 switch2 src1 src2; do qd+="== $n ==\n$(ip netns exec "$P$n" tc -s qdisc show)\n"; done
params='{}'
[[ -f "$out/params.json" ]] && params=$(cat "$out/params.json")
jq -n --argjson params "$params" --argjson features "$features" --arg start "$start_time" --arg kernel "$(uname -r)" --arg host "$(uname -n)" \
   --arg qd "$(printf '%b' "$qd")" --arg exp "$experiment" --arg cc "$cc" --arg cc2 "$cc2" --arg cbr "$cbr_mbps" \
   --arg pm "$path_mode" --argjson d "$link_delay_ms" --argjson l "$loss_pct" --argjson t "$duration_s" \
   --argjson off "$flow2_offset_s" --argjson k "$path_skew_ms" --argjson rep "$rep" --arg qm "$queue_model_used" \
   --argjson shim_stats "$shim_stats" --arg ulen "$udp_len_bytes" --arg rec "$tcp_recovery" \
   --argjson self_check "$self_check" --argjson host_load "$host_load" --arg ssi "$SS_INTERVAL_S" --argjson cc_impl "$cc_impl" --argjson cc_guard "$(guard_summary "$guard0" "$guard1")" \
   --argjson burst "$(jq .defaults.tbf_burst_bytes.netns "$TB/topology.json")" \
   --arg sysctls "$(ip netns exec "${P}src1" sysctl net.ipv4.tcp_sack net.ipv4.tcp_dsack net.ipv4.tcp_timestamps net.ipv4.tcp_window_scaling net.ipv4.tcp_recovery)" \
   --arg iperf3v "$(iperf3 --version 2>&1 | sed -n 1p)" --arg tcpdumpv "$(tcpdump --version 2>&1 | sed -n 1p)" \
   '{params: ($params + {experiment:$exp, cc:$cc, cc2:(if $cc2=="" then null else $cc2 end),
       cbr_mbps:(if $cbr=="" then null else ($cbr|tonumber) end), path_mode:$pm, link_delay_ms:$d, loss_pct:$l,
       duration_s:$t, flow2_offset_s:$off, path_skew_ms:$k, queue_model:$qm,
       udp_len_bytes:(if $ulen == "" then null else ($ulen|tonumber) end),
       tcp_recovery:(if $rec == "" then null else ($rec|tonumber) end), rep:$rep, backend:"netns"}),
     backend:"netns", host:$host, kernel:$kernel, start_time:$start, sysctls:($sysctls|split("\n")), qdisc:$qd,
     tool_versions:{iperf3:$iperf3v, tcpdump:$tcpdumpv},
     delay_mechanism:$features.mechanism.delay, round_robin_mechanism:(if $pm=="multipath" then $features.mechanism.round_robin else "none" end),
     fq:(if $features.fq then "fq" else "fq: not available" end), features:$features, cc_impl:$cc_impl, cc_guard:$cc_guard, shim_stats:$shim_stats, self_check:$self_check, host_load:$host_load, ss_interval_s:($ssi|tonumber), tbf_burst_bytes:$burst, status:"complete"}' > "$out/meta.json.tmp"
mv "$out/meta.json.tmp" "$out/meta.json"
# stop captures before declaring the run complete, so pcaps are flushed
stop_captures
date -u +%Y-%m-%dT%H:%M:%SZ > "$out/COMPLETE"
say "COMPLETE"
