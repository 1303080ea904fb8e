#!/usr/bin/env bash
# One run of a dual-path study family (001, 003: one client dual-homed to one server over two heterogeneous paths,
# single-path TCP vs MPTCP; docs/families.md) -> one run directory (contract: docs/architecture.md).
# usage: run_dualpath.sh [--backend netns] --out RUN_DIR --family 001|003 --experiment E --duration-s T
#        --transport tcp|mptcp [--tcp-path 1|2] [--cc C] [--mptcp-scheduler NAME]
#        [--path1-rate-mbit R] [--path1-delay-ms D] [--path1-buffer-pkts N | --path1-buffer-bytes B]
#        [--path2-rate-mbit R] [--path2-delay-ms D] [--path2-buffer-pkts N | --path2-buffer-bytes B]
#        [--udp-flood-mbps R --udp-flood-start-s S --udp-flood-end-s E] [--ping-interval-s I] [--rep N]
#   Path parameters (rate, ONE-WAY delay per direction, switch buffer) default to the family's topology file
#   testbed/families/NNN/topology.json. --cc defaults to cubic, --tcp-path to 1, --mptcp-scheduler to default,
#   --ping-interval-s to 0.2. The UDP flood goes client -> server over path 1, from S to E seconds after the flow
#   starts. MPTCP runs use mptcpize (Debian package mptcpize) around iperf3 on both ends.
# exit 0 = COMPLETE, 3 = SKIPPED (cc, MPTCP or MPTCP scheduler not available on this kernel), other = failed.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TB="$HERE/../testbed"
# shellcheck source=capture_tools/experiment_args.sh
source "$HERE/experiment_args.sh"   # die, num (the same one-line errors as study 000's tool)
# shellcheck source=capture_tools/capture_lib.sh
source "$HERE/capture_lib.sh"       # host_load_sample/host_load_summary, stop_captures, wait_pid_timeout

# ---------------------------------------------------------------------------------------------------------------
# options: every value is validated here, before any root command
backend=netns out="" family="" experiment="" transport="" tcp_path="" cc=cubic sched=default duration_s=""
flood_mbps="" flood_start="" flood_end="" ping_interval=0.2 rep=1
declare -A PA=()
in_range() { # VALUE LO HI LO_INCLUSIVE(1|0): a plain decimal number within the bounds
    num "$1" && awk -v v="$1" -v lo="$2" -v hi="$3" -v inc="$4" 'BEGIN{exit !((inc ? v >= lo : v > lo) && v <= hi)}'
}
parse_long_options "--backend=backend --out=out --family=family --experiment=experiment --transport=transport
    --tcp-path=tcp_path --cc=cc --mptcp-scheduler=sched --duration-s=duration_s --udp-flood-mbps=flood_mbps
    --udp-flood-start-s=flood_start --udp-flood-end-s=flood_end --ping-interval-s=ping_interval --rep=rep
    $(for k in 1 2; do for a in rate-mbit delay-ms buffer-pkts buffer-bytes; do echo "--path$k-$a=PA[$k-$a]"; done; done)" "$@"
[[ "$backend" == netns ]] || die "--backend must be netns for this capture tool (dual-path families run on netns only), got '$backend'"
[[ -n "$out" ]] || die "--out is required"
[[ "$family" =~ ^[0-9]{3}$ && -f "$TB/families/$family/topology.json" ]] ||
    die "--family must be a dual-path study family with testbed/families/NNN/topology.json (001, 003), got '$family'"
TOPO="$TB/families/$family/topology.json"
jq -e --arg e "$experiment" '.experiments | index($e) != null' "$TOPO" >/dev/null ||
    die "--experiment must be one of $(jq -r '.experiments | join(" ")' "$TOPO") for family $family, got '$experiment'"
[[ "$transport" == tcp || "$transport" == mptcp ]] || die "--transport must be tcp or mptcp, got '$transport'"
if [[ "$transport" == tcp ]]; then
    tcp_path=${tcp_path:-1}
    [[ "$tcp_path" == 1 || "$tcp_path" == 2 ]] || die "--tcp-path must be 1 or 2, got '$tcp_path'"
    [[ "$sched" == default ]] || die "--mptcp-scheduler is for --transport mptcp"
else
    [[ -z "$tcp_path" ]] || die "--tcp-path is for --transport tcp (MPTCP uses both paths)"
fi
[[ "$cc" =~ ^(reno|cubic|bbr|bic|westwood)$ ]] || die "--cc must be one of reno cubic bbr bic westwood, got '$cc'"
[[ "$sched" =~ ^[a-z][a-z0-9_]{0,15}$ ]] || die "--mptcp-scheduler must be a scheduler name ([a-z][a-z0-9_]*), got '$sched'"
[[ "$duration_s" =~ ^[1-9][0-9]{0,4}$ ]] || die "--duration-s must be a positive integer (s, at most 99999), got '$duration_s'"
if [[ -n "$flood_mbps$flood_start$flood_end" ]]; then
    [[ -n "$flood_mbps" && -n "$flood_start" && -n "$flood_end" ]] ||
        die "give all of --udp-flood-mbps, --udp-flood-start-s and --udp-flood-end-s, or none"
    in_range "$flood_mbps" 0 10000 0 || die "--udp-flood-mbps must be a number in (0, 10000], got '$flood_mbps'"
    [[ "$flood_start" =~ ^[0-9]{1,5}$ ]] || die "--udp-flood-start-s must be a non-negative integer, got '$flood_start'"
    [[ "$flood_end" =~ ^[0-9]{1,5}$ ]] || die "--udp-flood-end-s must be a non-negative integer, got '$flood_end'"
    (( 10#$flood_start < 10#$flood_end )) || die "--udp-flood-start-s must be smaller than --udp-flood-end-s"
    (( 10#$flood_end <= 10#$duration_s )) || die "--udp-flood-end-s must not exceed --duration-s"
fi
in_range "$ping_interval" 0.01 60 1 || die "--ping-interval-s must be a number in [0.01, 60], got '$ping_interval'"
[[ "$rep" =~ ^[1-9][0-9]*$ ]] || die "--rep must be a positive integer"
# per-path parameters: given, else the topology's defaults; the same bounds as testbed/dualpath.sh
declare -A RATE DELAY BKIND BUF
for k in 1 2; do
    [[ -z "${PA[$k-buffer-pkts]:-}" || -z "${PA[$k-buffer-bytes]:-}" ]] ||
        die "give --path$k-buffer-pkts or --path$k-buffer-bytes, not both"
    RATE[$k]=${PA[$k-rate-mbit]:-$(jq -r --arg k "$k" '.paths[$k].rate_mbit' "$TOPO")}
    DELAY[$k]=${PA[$k-delay-ms]:-$(jq -r --arg k "$k" '.paths[$k].delay_ms' "$TOPO")}
    if [[ -n "${PA[$k-buffer-pkts]:-}" ]]; then BKIND[$k]=pkts BUF[$k]=${PA[$k-buffer-pkts]}
    elif [[ -n "${PA[$k-buffer-bytes]:-}" ]]; then BKIND[$k]=bytes BUF[$k]=${PA[$k-buffer-bytes]}
    elif [[ "$(jq -r --arg k "$k" '.paths[$k].buffer_pkts // "null"' "$TOPO")" != null ]]; then
        BKIND[$k]=pkts BUF[$k]=$(jq -r --arg k "$k" '.paths[$k].buffer_pkts' "$TOPO")
    else
        BKIND[$k]=bytes BUF[$k]=$(jq -r --arg k "$k" '.paths[$k].buffer_bytes' "$TOPO")
    fi
    in_range "${RATE[$k]}" 0 100000 0 || die "--path$k-rate-mbit must be a number in (0, 100000], got '${RATE[$k]}'"
    in_range "${DELAY[$k]}" 0 10000 1 || die "--path$k-delay-ms must be a number in [0, 10000], got '${DELAY[$k]}'"
    if [[ ${BKIND[$k]} == pkts ]]; then
        [[ "${BUF[$k]}" =~ ^[1-9][0-9]{0,5}$ ]] || die "--path$k-buffer-pkts must be an integer 1..999999, got '${BUF[$k]}'"
    elif ! [[ "${BUF[$k]}" =~ ^[1-9][0-9]{3,8}$ ]] || (( BUF[$k] < 1514 )); then
        die "--path$k-buffer-bytes must be an integer 1514..999999999 (at least one full frame), got '${BUF[$k]}'"
    fi
done
refuse_to_start   # root, and never over a finished run (capture_lib.sh)

# ---------------------------------------------------------------------------------------------------------------
P="${MPCC_NS_PREFIX:-mpcc-}"
open_run_dir   # $out absolute, capture.log on fd 3 (capture_lib.sh)
DP=("$TB/dualpath.sh")
SERVICE=$(jq -r .service.addr "$TOPO")
CLIENT=$(jq -r .client "$TOPO")
SERVER=$(jq -r .service.node "$TOPO")
declare -A SW CIF SIF CADDR
for k in 1 2; do
    SW[$k]=$(jq -r --arg k "$k" '.paths[$k].switch' "$TOPO")
    CIF[$k]=$(jq -r --arg k "$k" '.paths[$k].client_if' "$TOPO")
    SIF[$k]=$(jq -r --arg k "$k" '.paths[$k].server_if' "$TOPO")
    CADDR[$k]=$(jq -r --arg k "$k" '.paths[$k].client_addr' "$TOPO")
done
DATA_PORT=5201 FLOOD_PORT=5202

pids=() tcpdump_pids=() held_ccs=()
teardown() {
    local rc=$?
    stop_run_processes   # capture_lib.sh
    "${DP[@]}" down --family "$family" 2>>"$LOG" || true
    release_ccs
    exit "$rc"
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
say "run_dualpath: family $family experiment $experiment transport $transport${tcp_path:+ path $tcp_path} cc $cc"

# MPTCP and its scheduler: the kernel's list decides; a scheduler it lacks makes the run SKIPPED (a kernel that has
# it runs it). The list is global; the scheduler is set per namespace below.
avail_sched=""
if [[ "$transport" == mptcp ]]; then
    [[ -r /proc/sys/net/mptcp/enabled ]] || skip "mptcp: not available on this kernel (no net.mptcp sysctls) — skipped"
    avail_sched=$(sysctl -n net.mptcp.available_schedulers 2>/dev/null || true)
    if [[ -z "$avail_sched" ]]; then
        # kernels before 6.6 have no scheduler choice: their only scheduler is the default one
        [[ "$sched" == default ]] || skip "mptcp scheduler $sched: not available on this kernel (no scheduler choice: default only) — skipped"
    elif [[ " $avail_sched " != *" $sched "* ]]; then
        skip "mptcp scheduler $sched: not available on this kernel (available: ${avail_sched// /, }) — skipped"
    fi
    command -v mptcpize >/dev/null || die "mptcpize not installed (Debian: apt-get install mptcpize): iperf3 has no --mptcp here"
fi

# the congestion control: the kernel's, else its BPF port (testbed/cc), else SKIPPED (capture_lib.sh)
cc_impl='{}'
acquire_cc "$cc"

# ---------------------------------------------------------------------------------------------------------------
mkdir -p "$out/iperf3" "$out/ss" "$out/ping" "$out/switches" "$out/nstat"
start_time=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
up_args=()
for k in 1 2; do
    up_args+=("--path$k-rate-mbit" "${RATE[$k]}" "--path$k-delay-ms" "${DELAY[$k]}" "--path$k-buffer-${BKIND[$k]}" "${BUF[$k]}")
done
say "up: ${up_args[*]}"
applied=$("${DP[@]}" up --family "$family" "${up_args[@]}" 2>>"$LOG")
features=$("${DP[@]}" features --family "$family" 2>>"$LOG")
for n in "$CLIENT" "$SERVER"; do
    if [[ "$cc" == bbr ]]; then ip netns exec "$P$n" bash "$TB/nodes/host.sh" --fq >>"$LOG" 2>&1 || true; fi
    if [[ "$transport" == mptcp && -n "$avail_sched" ]]; then
        ip netns exec "$P$n" sysctl -qw "net.mptcp.scheduler=$sched" 2>>"$LOG"
    fi
done
sched_in_use=null
if [[ "$transport" == mptcp ]]; then
    sched_in_use=$(ip netns exec "$P$CLIENT" sysctl -n net.mptcp.scheduler 2>/dev/null || echo default)
    sched_in_use=$(jq -n --arg s "$sched_in_use" '$s')
fi

# self-check before traffic: idle RTT over each path (10 pings 50 ms apart) vs two-way delay
rtt_median() { # PATH -> median ms or null
    ip netns exec "$P$CLIENT" ping -n -c 10 -i 0.05 -I "${CADDR[$1]}" "$SERVICE" 2>/dev/null | sed -n 's/.*time=\([0-9.]*\).*/\1/p' | sort -n |
        awk '{v[NR]=$1} END{if(NR==0){print "null"} else if(NR%2){print v[(NR+1)/2]} else {print (v[NR/2]+v[NR/2+1])/2}}'
}
# a median above the tolerance is measured again (rtt_measure_again), up to 3 times; every median is recorded and the
# last one is judged
rtt_attempts() { # PATH -> JSON array of medians
    local k m all='[]'
    for k in 1 2 3; do
        m=$(rtt_median "$1")
        all=$(jq -c --argjson m "$m" '. + [$m]' <<<"$all")
        rtt_measure_again "$m" "$(awk -v d="${DELAY[$1]}" 'BEGIN{print 2 * d}')" || break
        say "self-check: path $1 idle RTT median $m ms, expected $(awk -v d="${DELAY[$1]}" 'BEGIN{print 2 * d}'); measuring again"
    done
    printf '%s' "$all"
}
rtt1=$(rtt_attempts 1) rtt2=$(rtt_attempts 2)
self_check=$(jq -n --argjson a1 "$rtt1" --argjson a2 "$rtt2" --argjson d1 "${DELAY[1]}" --argjson d2 "${DELAY[2]}" '
    def chk(a; d): (a[-1]) as $m | {rtt_median_ms: $m, expected_rtt_ms: (2 * d), rtt_median_attempts_ms: a,
                    rtt_ok: (if $m == null then false else ((($m - 2 * d) | fabs) <= ([1, 0.05 * 2 * d] | max)) end)};
    {path1: chk($a1; $d1), path2: chk($a2; $d2)} | .ok = (.path1.rtt_ok and .path2.rtt_ok)')
say "self_check: $(jq -c . <<<"$self_check")"

# ---------------------------------------------------------------------------------------------------------------
cap() { # NODE IF FILE (sender side: the client's interfaces; receiver side: the server's)
    start_capture "$P$1" "$2" "$out/$3" 128   # capture_lib.sh
}
for k in 1 2; do
    cap "$CLIENT" "${CIF[$k]}" "client-path$k.pcap"
    cap "$SERVER" "${SIF[$k]}" "server-path$k.pcap"
done
wrap=()
[[ "$transport" == mptcp ]] && wrap=(mptcpize run)
# the servers listen on the service address only: replies (UDP too) then leave from it, whichever path they take
ip netns exec "$P$SERVER" "${wrap[@]}" iperf3 -s -1 -B "$SERVICE" -p "$DATA_PORT" --json -I "$out/iperf3/flow1-server.pid" \
    > "$out/iperf3/flow1-server.json" 2>>"$LOG" &
srv=$!; pids+=("$srv")
fsrv=""
if [[ -n "$flood_mbps" ]]; then
    ip netns exec "$P$SERVER" iperf3 -s -1 -B "$SERVICE" -p "$FLOOD_PORT" --json -I "$out/iperf3/flood-server.pid" \
        > "$out/iperf3/flood-server.json" 2>>"$LOG" &
    fsrv=$!; pids+=("$fsrv")
fi
wait_captures_listening || exit 1   # capture_lib.sh
sleep 1

SS_INTERVAL_S=0.1   # `ss -tin` sampling interval (meta.json ss_interval_s), as run_experiment.sh
ss_loop() { # OPTS FILE: blocks of `ss OPTS dst SERVICE`, each preceded by `# ts=<epoch s>`
    # shellcheck disable=SC2016  # $(date) must expand inside the namespace shell
    ip netns exec "$P$CLIENT" bash -c 'while :; do echo "# ts=$(date +%s.%N)"; ss '"$1"' dst '"$SERVICE"'; sleep '"$SS_INTERVAL_S"'; done' > "$2" 2>/dev/null &
    pids+=("$!")
}
ss_loop -tin "$out/ss/flow1.txt"
[[ "$transport" == mptcp ]] && ss_loop -Min "$out/ss/mptcp.txt"
host_load0=$(host_load_sample)
# ping over each path during the flow, one timestamp (-D, epoch s) per line
for k in 1 2; do
    ip netns exec "$P$CLIENT" ping -n -D -i "$ping_interval" -w "$duration_s" -I "${CADDR[$k]}" "$SERVICE" \
        > "$out/ping/path$k.txt" 2>>"$LOG" &
    pids+=("$!")
done
bind=${CADDR[${tcp_path:-1}]}   # MPTCP: the initial subflow on path 1; the path-2 endpoint adds the second
flow_start_epoch=$(date +%s.%N)
say "flow start: $transport from $bind cc=$cc ${duration_s}s"
ip netns exec "$P$CLIENT" "${wrap[@]}" iperf3 -c "$SERVICE" -B "$bind" -p "$DATA_PORT" -C "$cc" -t "$duration_s" \
    --connect-timeout 5000 --json > "$out/iperf3/flow1-client.json" 2>>"$LOG" &
cli=$!; pids+=("$cli")
fcli=""
if [[ -n "$flood_mbps" ]]; then
    # the flood: UDP client -> server over path 1 (bound to the path-1 address), from S to E s after the flow start
    # shellcheck disable=SC2016
    ip netns exec "$P$CLIENT" bash -c 'sleep "$1"; exec iperf3 -u -c "$2" -B "$3" -p "$4" -b "$5M" -t "$6" --json' _ \
        "$flood_start" "$SERVICE" "${CADDR[1]}" "$FLOOD_PORT" "$flood_mbps" "$((10#$flood_end - 10#$flood_start))" \
        > "$out/iperf3/flood-client.json" 2>>"$LOG" &
    fcli=$!; pids+=("$fcli")
    say "flood scheduled: ${flood_mbps} Mbit/s UDP over path 1 from ${flood_start}s to ${flood_end}s"
fi
# each client waited for in the order they end (the flood ends first when its window closes before the flow), so
# that its exit status is read while bash still holds it (wait_pid_timeout)
if [[ -n "$fcli" ]]; then
    wait_pid_timeout "$fcli" $((10#$flood_end + 60)) || { say "flood client failed (exit $?)"; exit 1; }
    iperf_ok "$out/iperf3/flood-client.json" || exit 1
fi
wait_pid_timeout "$cli" $((duration_s + 60)) || { say "flow client failed (exit $?)"; exit 1; }
iperf_ok "$out/iperf3/flow1-client.json" || exit 1
wait_pid_timeout "$srv" 15 || say "flow server exit status $?"
if [[ -n "$fsrv" ]]; then wait_pid_timeout "$fsrv" 15 || say "flood server exit status $?"; fi
say "flows done"
host_load1=$(host_load_sample)
sleep 0.5
end_processes   # capture_lib.sh

# ---------------------------------------------------------------------------------------------------------------
# after the flow: switch queues (drops), MPTCP counters, what the captures show
for k in 1 2; do
    s=${SW[$k]}
    { echo "== tc -s qdisc show ($s, path $k) =="; ip netns exec "$P$s" tc -s qdisc show
      echo "== ip -s link show ($s, path $k) =="; ip netns exec "$P$s" ip -s link show; } > "$out/switches/$s.txt" 2>&1
done
queues=$(for k in 1 2; do
    s=${SW[$k]}
    ip netns exec "$P$s" tc -s -j qdisc show | jq -c --arg k "$k" --arg s "$s" \
        --argjson ifs "$(jq -c --arg k "$k" '.paths[$k].switch_ifs' "$TOPO")" '
        . as $q | {("path" + $k): {switch: $s,
          to_server: ($q | map(select(.dev == $ifs[1])) | {root: (map(select(.root)) | .[0] | {kind, packets, drops, overlimits}),
                                                         leaf: (map(select(.handle == "10:")) | .[0] | {kind, limit: .options.limit, packets, drops})}),
          to_client: ($q | map(select(.dev == $ifs[0])) | {root: (map(select(.root)) | .[0] | {kind, packets, drops, overlimits}),
                                                         leaf: (map(select(.handle == "10:")) | .[0] | {kind, limit: .options.limit, packets, drops})})}}'
done | jq -s 'add')
for n in "$CLIENT" "$SERVER"; do
    ip netns exec "$P$n" nstat -asz 'MPTcp*' > "$out/nstat/$n.txt" 2>>"$LOG" || true
done
nstat_json() { ip netns exec "$P$1" nstat -asz -j 'MPTcp*' 2>/dev/null | jq -c '.kernel | with_entries(select(.value != 0))' 2>/dev/null || echo '{}'; }
nc_client=$(nstat_json "$CLIENT") nc_server=$(nstat_json "$SERVER")

DATA_FILTER="tcp and dst port $DATA_PORT and (ip[2:2] - ((ip[0]&0xf)<<2) - ((tcp[12]&0xf0)>>2)) > 0"
subflow_lines=""   # "<path> <src addr.port> <data pkts>" per TCP connection to the data port, client side
declare -A DATA_PKTS
for k in 1 2; do
    subflow_lines+=$(tcpdump -r "$out/client-path$k.pcap" -nn "$DATA_FILTER" 2>/dev/null | awk '{print $3}' | sort | uniq -c |
        awk -v k="$k" '{print k, $2, $1}')$'\n'
    for side in client server; do
        DATA_PKTS[$side$k]=$(tcpdump -r "$out/$side-path$k.pcap" -nn "$DATA_FILTER" 2>/dev/null | wc -l)
    done
done
SUBFLOW_MIN_PKTS=20   # a subflow "carried data" with at least this many data segments (iperf3's control
                      # connection to the same port carries a handful)
subflows=$(awk -v m="$SUBFLOW_MIN_PKTS" 'NF == 3 && $3 >= m {printf "%s{\"path\":%d,\"src\":\"%s\",\"data_pkts\":%d}", (n++ ? "," : ""), $1, $2, $3}
    END {}' <<<"$subflow_lines")
subflows="[$subflows]"
flow_syn=$(for k in 1 2; do tcpdump -r "$out/client-path$k.pcap" -nn -tt "tcp dst port $DATA_PORT and tcp[tcpflags] & tcp-syn != 0" 2>/dev/null | sed -n 1p | awk '{print $1}'; done |
    sort -n | sed -n 1p)
[[ -n "$flow_syn" ]] || flow_syn=null
flood_obs=null
if [[ -n "$flood_mbps" ]]; then
    read -r f_first f_last f_n < <(tcpdump -r "$out/client-path1.pcap" -nn -tt "udp and dst port $FLOOD_PORT" 2>/dev/null |
        awk 'NR == 1 {f = $1} {l = $1} END {print (NR ? f : "null"), (NR ? l : "null"), NR}')
    f_rx=$(tcpdump -r "$out/server-path1.pcap" -nn "udp and dst port $FLOOD_PORT" 2>/dev/null | wc -l)
    flood_obs=$(jq -n --argjson a "$f_first" --argjson b "$f_last" --argjson n "$f_n" --argjson rx "$f_rx" --argjson t0 "$flow_syn" '
        {first_pkt_epoch: $a, last_pkt_epoch: $b, client_pkts: $n, server_pkts: $rx,
         start_s: (if $a != null and $t0 != null then ((($a - $t0) * 1000 | round) / 1000) else null end),
         end_s: (if $b != null and $t0 != null then ((($b - $t0) * 1000 | round) / 1000) else null end)}')
fi
ping_summary() { # FILE -> {sent, replies, rtt_median_ms, rtt_mean_ms}
    local sent
    sent=$(sed -n 's/^\([0-9]*\) packets transmitted.*/\1/p' "$1")
    sed -n 's/.*time=\([0-9.]*\) ms.*/\1/p' "$1" | sort -n | awk -v sent="${sent:-null}" '
        {v[NR] = $1; s += $1}
        END {med = "null"; mean = "null"
             if (NR) { med = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; mean = s / NR }
             printf "{\"sent\":%s,\"replies\":%d,\"rtt_median_ms\":%s,\"rtt_mean_ms\":%s}", sent, NR, med, mean}'
}
pings=$(jq -n --argjson a "$(ping_summary "$out/ping/path1.txt")" --argjson b "$(ping_summary "$out/ping/path2.txt")" '{path1: $a, path2: $b}')

# MPTCP must really have used both paths; single-path TCP must have stayed on its path
n_sub=$(jq 'length' <<<"$subflows")
mptcp_meta=null single_path_ok=null
if [[ "$transport" == mptcp ]]; then
    mptcp_meta=$(jq -n --arg req "$sched" --argjson inuse "$sched_in_use" --arg avail "$avail_sched" --argjson subs "$subflows" \
        --argjson cc "$nc_client" --argjson cs "$nc_server" --argjson min "$SUBFLOW_MIN_PKTS" '
        {scheduler: ($inuse // $req), scheduler_requested: $req,
         available_schedulers: (if $avail == "" then ["default"] else ($avail | split(" ") | map(select(. != ""))) end),
         subflows_seen: ($subs | length), subflows: $subs, subflow_min_data_pkts: $min,
         counters_client: $cc, counters_server: $cs}')
    paths_used=$(jq '[.[].path] | unique | length' <<<"$subflows")
    if (( n_sub < 2 || paths_used < 2 )); then
        say "mptcp: only $n_sub subflow(s) on $paths_used path(s) carried data (client pcaps): $(jq -c . <<<"$subflows")"
        echo "error: mptcp run used $n_sub subflow(s) on $paths_used path(s), expected one per path" >&2
        exit 1
    fi
else
    other=$((3 - tcp_path))
    if (( ${DATA_PKTS[client$other]} < SUBFLOW_MIN_PKTS )); then single_path_ok=true; else single_path_ok=false; fi
    [[ $single_path_ok == true ]] || say "tcp on path $tcp_path: path $other carried ${DATA_PKTS[client$other]} data packets"
fi
host_load=$(host_load_summary "$host_load0" "$host_load1")
# packets the four captures lost in the kernel (tcpdump's own count at exit, in capture.log): should be 0
capture_drops=$(sed -n 's/^\([0-9]*\) packets dropped by kernel$/\1/p' "$LOG" | awk '{s += $1} END {print s + 0}')
params='{}'
[[ -f "$out/params.json" ]] && params=$(cat "$out/params.json")
jq -n --argjson params "$params" --argjson features "$features" --argjson applied "$applied" --arg start "$start_time" \
   --arg kernel "$(uname -r)" --arg host "$(uname -n)" --arg fam "$family" --arg exp "$experiment" --arg tr "$transport" --arg tp "${tcp_path:-}" \
   --arg cc "$cc" --arg sched "$sched" --argjson t "$duration_s" --arg fm "$flood_mbps" --arg fs "$flood_start" \
   --arg fe "$flood_end" --argjson pi "$ping_interval" --argjson rep "$rep" \
   --argjson self_check "$self_check" --argjson host_load "$host_load" --arg ssi "$SS_INTERVAL_S" --argjson cc_impl "$cc_impl" \
   --argjson queues "$queues" --argjson mptcp "$mptcp_meta" --argjson spo "$single_path_ok" --argjson pings "$pings" \
   --argjson flood_obs "$flood_obs" --arg t0 "$flow_start_epoch" --argjson syn "$flow_syn" --argjson cdrops "$capture_drops" \
   --argjson dp "$(jq -n --argjson c1 "${DATA_PKTS[client1]}" --argjson c2 "${DATA_PKTS[client2]}" \
                    --argjson s1 "${DATA_PKTS[server1]}" --argjson s2 "${DATA_PKTS[server2]}" \
                    '{client_path1: $c1, client_path2: $c2, server_path1: $s1, server_path2: $s2}')" \
   --argjson topo "$(jq -c '{family, service, paths: (.paths | map_values({label: .label, switch: .switch, client_addr: .client_addr, client_if: .client_if, server_if: .server_if}))}' "$TOPO")" \
   --arg topo_sha "$(sha256sum "$TOPO" | cut -d' ' -f1)" \
   --arg sysctls "$(ip netns exec "$P$CLIENT" sysctl net.ipv4.tcp_sack net.ipv4.tcp_dsack net.ipv4.tcp_timestamps net.ipv4.tcp_window_scaling net.mptcp.enabled)" \
   --arg iperf3v "$(iperf3 --version 2>&1 | sed -n 1p)" --arg tcpdumpv "$(tcpdump --version 2>&1 | sed -n 1p)" \
   --arg mptcpizev "$( (mptcpize -V 2>&1 || true) | sed -n 1p)" --arg pingv "$(ping -V 2>&1 | sed -n 1p)" --arg ipv "$(ip -V 2>&1 | sed -n 1p)" \
   '{params: ($params + {family:$fam, experiment:$exp, transport:$tr, tcp_path:(if $tp == "" then null else ($tp|tonumber) end),
       cc:$cc, mptcp_scheduler:(if $tr == "mptcp" then $sched else null end),
       path1_rate_mbit:$applied.path1.rate_mbit, path1_delay_ms:$applied.path1.delay_ms,
       path1_buffer_pkts:$applied.path1.buffer_pkts, path1_buffer_bytes:$applied.path1.buffer_bytes,
       path2_rate_mbit:$applied.path2.rate_mbit, path2_delay_ms:$applied.path2.delay_ms,
       path2_buffer_pkts:$applied.path2.buffer_pkts, path2_buffer_bytes:$applied.path2.buffer_bytes,
       duration_s:$t, udp_flood_mbps:(if $fm == "" then null else ($fm|tonumber) end),
       udp_flood_start_s:(if $fs == "" then null else ($fs|tonumber) end), udp_flood_end_s:(if $fe == "" then null else ($fe|tonumber) end),
       ping_interval_s:$pi, rep:$rep, backend:"netns"}),
     family:$fam, backend:"netns", host:$host, kernel:$kernel, start_time:$start, sysctls:($sysctls|split("\n")),
     topology:($topo + {file: ("testbed/families/" + $fam + "/topology.json"), sha256: $topo_sha}),
     tool_versions:{iperf3:$iperf3v, tcpdump:$tcpdumpv, mptcpize:$mptcpizev, ping:$pingv, iproute2:$ipv},
     delay_mechanism:$applied.delay_mechanism, shaper:$applied.shaper, queue_mechanism:$applied.queue_mechanism,
     ovs:$features.ovs, features:$features, cc_impl:$cc_impl, mptcp:$mptcp,
     data_pkts:$dp, single_path_ok:$spo, self_check:$self_check, ping:$pings, queues:$queues,
     flow_start_epoch:($t0|tonumber), flow_first_syn_epoch:$syn,
     flood:(if $fm == "" then null else {mbps:($fm|tonumber), start_s:($fs|tonumber), end_s:($fe|tonumber), path:1,
            direction:"client->server", protocol:"udp", observed:$flood_obs} end),
     capture_kernel_drops:$cdrops, host_load:$host_load, ss_interval_s:($ssi|tonumber), status:"complete"}' > "$out/meta.json.tmp"
mv "$out/meta.json.tmp" "$out/meta.json"
date -u +%Y-%m-%dT%H:%M:%SZ > "$out/COMPLETE"
say "COMPLETE"
