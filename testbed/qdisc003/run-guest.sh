#!/usr/bin/env bash
# ONE run of study 003's Table 2 scenarios under one switch queue discipline, as root INSIDE the Debian 12 VM that
# testbed/qdisc003/run-vm.sh boots (kernel 6.1: netem and fq_codel). docs/qdisc-003.md describes the experiment.
#
# The topology is the repository's own: testbed/dualpath.sh builds testbed/families/003/topology.json as namespaces
# ${PREFIX}client, sw1, sw2, server (addresses, per-address routing tables, MPTCP endpoints and limits as data), with
# --queue-disc ARM (netem: htb class + netem delay D limit Q, Mininet TCLink's recipe; fq_codel: htb class + fq_codel
# limit Q, the path's two-way delay a netem on the server's egress towards the path; pfifo: htb class + pfifo limit
# Q, delayed as fq_codel) and --pathK-buffer-pkts Q on both paths. Namespaces are built afresh for every run (no
# TCP metrics cache, no counters carried over) and removed afterwards.
# The flow: one iperf3 TCP flow client -> server (cubic, --duration-s T), single-path TCP bound to the path-1 address
# (mode tcp_path1) or MPTCP through `mptcpize run` on both ends (mode mptcp; initial subflow on path 1, the path-2
# endpoint adds the second); during it `ping -n -D -i I -w T` over each path, bound to the path's client address.
# No packet capture (TCG is slow): per-path traffic is read from the switches' qdisc counters.
# RUN_DIR: meta.json (arm, mode, queue_pkts, rep, duration_s, ping_interval_s, cc, kernel, the qdiscs as built,
# self-check, per-path counters, MPTCP counters, checks), iperf3/client.json, iperf3/server.json, ping/path1.txt,
# ping/path2.txt, ping/idle-path{1,2}.txt, switches/{sw1,sw2,server}-{before,after}.{txt,json} (`tc -s qdisc`),
# nstat/{client,server}.txt, run.log; COMPLETE when every check passed (else meta.json status "failed" + reason).
# Exit 0 = complete, 1 = a check failed (RUN_DIR kept), 2 = usage or set-up error.
# usage: run-guest.sh --tb DIR --out RUN_DIR --arm netem|fq_codel|pfifo --mode tcp_path1|mptcp --queue-pkts Q
#                     --rep N --duration-s T [--ping-interval-s 1] [--cc cubic] [--prefix q3-]
set -euo pipefail
export LC_ALL=C
tb="" out="" arm="" mode="" queue="" rep="" duration="" ping_interval=1 cc=cubic prefix=q3-
die() { echo "error: $*" >&2; exit 2; }
usage() { sed -n '/^# usage:/,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --tb) tb=${2:-}; shift 2 || usage ;;
        --out) out=${2:-}; shift 2 || usage ;;
        --arm) arm=${2:-}; shift 2 || usage ;;
        --mode) mode=${2:-}; shift 2 || usage ;;
        --queue-pkts) queue=${2:-}; shift 2 || usage ;;
        --rep) rep=${2:-}; shift 2 || usage ;;
        --duration-s) duration=${2:-}; shift 2 || usage ;;
        --ping-interval-s) ping_interval=${2:-}; shift 2 || usage ;;
        --cc) cc=${2:-}; shift 2 || usage ;;
        --prefix) prefix=${2:-}; shift 2 || usage ;;
        -h|--help) usage ;;
        *) die "unknown option '$1'" ;;
    esac
done
# ---- every argument is checked before anything runs
[[ -n "$tb" && -f "$tb/dualpath.sh" && -f "$tb/families/003/topology.json" ]] || die "--tb must be a testbed directory with dualpath.sh and families/003/topology.json"
[[ -n "$out" ]] || die "--out is required"
if [[ -e "$out" ]]; then die "--out $out exists (a run directory is written once)"; fi
[[ "$arm" =~ ^(netem|fq_codel|pfifo)$ ]] || die "--arm must be netem, fq_codel or pfifo, got '$arm'"
[[ "$mode" =~ ^(tcp_path1|mptcp)$ ]] || die "--mode must be tcp_path1 or mptcp, got '$mode'"
[[ "$queue" =~ ^[1-9][0-9]{0,5}$ ]] || die "--queue-pkts must be an integer 1..999999, got '$queue'"
[[ "$rep" =~ ^[1-9][0-9]{0,2}$ ]] || die "--rep must be an integer 1..999, got '$rep'"
[[ "$duration" =~ ^[1-9][0-9]{0,4}$ ]] || die "--duration-s must be an integer 1..99999, got '$duration'"
[[ "$ping_interval" =~ ^(0\.[0-9]*[1-9][0-9]*|[1-9][0-9]*(\.[0-9]+)?)$ ]] || die "--ping-interval-s must be a positive number, got '$ping_interval'"
awk -v s="$ping_interval" 'BEGIN {exit !(s >= 0.01 && s <= 60)}' || die "--ping-interval-s must be in [0.01, 60], got '$ping_interval'"
[[ "$cc" =~ ^(reno|cubic|bbr)$ ]] || die "--cc must be reno, cubic or bbr, got '$cc'"
[[ "$prefix" =~ ^[A-Za-z0-9_.-]{1,12}$ ]] || die "--prefix must be 1-12 of [A-Za-z0-9_.-], got '$prefix'"
[[ $EUID -eq 0 ]] || die "run-guest.sh needs root"
missing=()
for t in ip tc jq iperf3 ping nstat awk ss timeout; do command -v "$t" >/dev/null || missing+=("$t"); done
[[ $mode != mptcp ]] || command -v mptcpize >/dev/null || missing+=(mptcpize)
[[ ${#missing[@]} -eq 0 ]] || die "missing ${missing[*]} in the guest (testbed/vagrant/build-box.sh revision 5 has them)"

export MPCC_NS_PREFIX=$prefix
TOPO="$tb/families/003/topology.json"
DP=(bash "$tb/dualpath.sh")
SERVICE=$(jq -r .service.addr "$TOPO")
CLIENT=$(jq -r .client "$TOPO")
SERVER=$(jq -r .service.node "$TOPO")
declare -A SW CADDR SWIFS
for k in 1 2; do
    SW[$k]=$(jq -r --arg k "$k" '.paths[$k].switch' "$TOPO")
    CADDR[$k]=$(jq -r --arg k "$k" '.paths[$k].client_addr' "$TOPO")
    SWIFS[$k]=$(jq -c --arg k "$k" '.paths[$k].switch_ifs' "$TOPO")
done
PORT=5201
mkdir -p "$out"/{iperf3,ping,switches,nstat}
out=$(cd "$out" && pwd)
LOG="$out/run.log"
say() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$LOG" >&2; }

pids=()
cleanup() {
    local rc=$? p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    "${DP[@]}" down --family 003 >>"$LOG" 2>&1 || true
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
fail() { # REASON: the run is kept with status failed (no COMPLETE)
    say "FAILED: $*"
    jq -n --arg r "$*" --arg arm "$arm" --arg mode "$mode" --argjson q "$queue" --argjson rep "$rep" \
        '{arm:$arm, mode:$mode, queue_pkts:$q, rep:$rep, status:"failed", reason:$r}' > "$out/meta.json"
    exit 1
}

say "run: arm $arm mode $mode queue $queue pkts rep $rep ${duration}s ping every ${ping_interval}s cc $cc"
start_time=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
"${DP[@]}" down --family 003 >>"$LOG" 2>&1 || true
applied=$("${DP[@]}" up --family 003 --queue-disc "$arm" --path1-buffer-pkts "$queue" --path2-buffer-pkts "$queue" 2>>"$LOG") ||
    fail "dualpath.sh up failed (run.log)"
ns() { echo "$prefix$1"; }
in_ns() { local n=$1; shift; ip netns exec "$(ns "$n")" "$@"; }

# the qdiscs as built, before any traffic but the self-check (text and JSON)
snap() { # WHEN
    local n
    for n in "${SW[1]}" "${SW[2]}" "$SERVER"; do
        in_ns "$n" tc -s qdisc show > "$out/switches/$n-$1.txt" 2>&1 || true
        in_ns "$n" tc -s -j qdisc show > "$out/switches/$n-$1.json" 2>/dev/null || echo '[]' > "$out/switches/$n-$1.json"
    done
}
# self-check: idle RTT over each path (10 pings 50 ms apart) against the two-way delay
idle=()
for k in 1 2; do
    in_ns "$CLIENT" ping -n -c 10 -i 0.05 -I "${CADDR[$k]}" "$SERVICE" > "$out/ping/idle-path$k.txt" 2>>"$LOG" || true
    idle[k]=$(sed -n 's/.*time=\([0-9.]*\).*/\1/p' "$out/ping/idle-path$k.txt" | sort -n |
        awk '{v[NR]=$1} END{if(NR==0){print "null"} else if(NR%2){print v[(NR+1)/2]} else {print (v[NR/2]+v[NR/2+1])/2}}')
done
snap before

wrap=()
[[ $mode == mptcp ]] && wrap=(mptcpize run)
in_ns "$SERVER" "${wrap[@]}" iperf3 -s -1 -B "$SERVICE" -p "$PORT" --json > "$out/iperf3/server.json" 2>>"$LOG" &
srv=$!; pids+=("$srv")
for _ in $(seq 100); do
    [[ -n "$(in_ns "$SERVER" ss -Hltn "sport = :$PORT")" ]] && break
    sleep 0.1
done
[[ -n "$(in_ns "$SERVER" ss -Hltn "sport = :$PORT")" ]] || fail "iperf3 server not listening after 10 s"
load0=$(cat /proc/loadavg)
psi0=$(sed -n 's/^some .*total=\([0-9]*\).*/\1/p' /proc/pressure/cpu 2>/dev/null || true)
for k in 1 2; do
    in_ns "$CLIENT" ping -n -D -i "$ping_interval" -w "$duration" -I "${CADDR[$k]}" "$SERVICE" > "$out/ping/path$k.txt" 2>>"$LOG" &
    pids+=("$!")
done
bind=${CADDR[1]}   # tcp_path1: path 1; mptcp: the initial subflow on path 1
flow_start_epoch=$(date +%s.%N)
say "flow start: $mode from $bind"
set +e
# bounded: a client that outlives its flow by a minute is killed (the run then fails its checks)
timeout -k 5 "$(( duration + 60 ))" ip netns exec "$(ns "$CLIENT")" "${wrap[@]}" iperf3 -c "$SERVICE" -B "$bind" -p "$PORT" \
    -C "$cc" -t "$duration" --connect-timeout 5000 --json > "$out/iperf3/client.json" 2>>"$LOG"
crc=$?
set -e
flow_end_epoch=$(date +%s.%N)
for _ in $(seq 150); do kill -0 "$srv" 2>/dev/null || break; sleep 0.1; done
sleep 1.5   # the pings' deadline is the flow's duration: their last replies arrive now
load1=$(cat /proc/loadavg)
psi1=$(sed -n 's/^some .*total=\([0-9]*\).*/\1/p' /proc/pressure/cpu 2>/dev/null || true)
snap after
for n in "$CLIENT" "$SERVER"; do in_ns "$n" nstat -asz 'MPTcp*' > "$out/nstat/$n.txt" 2>>"$LOG" || true; done
nstat_json() { in_ns "$1" nstat -asz -j 'MPTcp*' 2>/dev/null | jq -c '.kernel | with_entries(select(.value != 0))' 2>/dev/null || echo '{}'; }
nc_client=$(nstat_json "$CLIENT") nc_server=$(nstat_json "$SERVER")

# ---- checks: the flow ran, and took the paths its mode asks for (bytes the switches sent towards the server)
[[ $crc -eq 0 ]] || fail "iperf3 client exited $crc"
err=$(jq -rs 'if length == 1 and (.[0] | type) == "object" then (.[0].error // empty) else "no JSON output" end' "$out/iperf3/client.json" 2>/dev/null) || err="no JSON output"
[[ -z "$err" ]] || fail "iperf3 client: $err"
sent_to_server() { # PATH -> bytes the path's switch root qdisc sent towards the server during the run
    local k=$1 s=${SW[$1]}
    jq -n --slurpfile a "$out/switches/$s-before.json" --slurpfile b "$out/switches/$s-after.json" --argjson ifs "${SWIFS[$k]}" '
        def root($q): ($q | map(select(.dev == $ifs[1] and .root)) | .[0].bytes // 0);
        root($b[0]) - root($a[0])'
}
bytes1=$(sent_to_server 1) bytes2=$(sent_to_server 2)
MIN_BYTES=100000   # a path "carried the flow" with at least this many bytes towards the server (pings: ~100 B/s)
if [[ $mode == mptcp ]]; then
    (( bytes1 >= MIN_BYTES && bytes2 >= MIN_BYTES )) || fail "mptcp: path bytes to the server $bytes1 / $bytes2, expected both >= $MIN_BYTES"
else
    (( bytes2 < MIN_BYTES )) || fail "tcp_path1: path 2 carried $bytes2 bytes towards the server"
fi

jq -n --arg arm "$arm" --arg mode "$mode" --argjson q "$queue" --argjson rep "$rep" --argjson t "$duration" \
   --argjson pi "$ping_interval" --arg cc "$cc" --arg kernel "$(uname -r)" --arg host "$(uname -n)" --arg start "$start_time" \
   --argjson applied "$applied" --argjson i1 "${idle[1]}" --argjson i2 "${idle[2]}" \
   --argjson d1 "$(jq '.path1.delay_ms' <<<"$applied")" --argjson d2 "$(jq '.path2.delay_ms' <<<"$applied")" \
   --arg t0 "$flow_start_epoch" --arg t1 "$flow_end_epoch" --argjson b1 "$bytes1" --argjson b2 "$bytes2" \
   --argjson ncc "$nc_client" --argjson ncs "$nc_server" --arg load0 "$load0" --arg load1 "$load1" \
   --arg psi0 "$psi0" --arg psi1 "$psi1" \
   --arg qd_sw1 "$(cat "$out/switches/${SW[1]}-before.txt")" --arg qd_sw2 "$(cat "$out/switches/${SW[2]}-before.txt")" \
   --arg qd_srv "$(cat "$out/switches/$SERVER-before.txt")" \
   --arg sysctls "$(in_ns "$CLIENT" sysctl net.ipv4.tcp_congestion_control net.ipv4.tcp_ecn net.ipv4.tcp_sack \
        net.ipv4.tcp_timestamps net.mptcp.enabled net.core.default_qdisc 2>&1)" \
   --arg topo_sha "$(sha256sum "$TOPO" | cut -d' ' -f1)" \
   --arg iperf3v "$(iperf3 --version 2>&1 | sed -n 1p)" --arg pingv "$(ping -V 2>&1 | sed -n 1p)" \
   --arg mptcpizev "$( (mptcpize -V 2>&1 || true) | sed -n 1p)" --arg ipv "$(ip -V 2>&1 | sed -n 1p)" '
   def chk(m; d): {rtt_median_ms: m, expected_rtt_ms: (2 * d),
                   rtt_ok: (if m == null then false else (((m - 2 * d) | fabs) <= ([1, 0.05 * 2 * d] | max)) end)};
   {arm:$arm, mode:$mode, queue_pkts:$q, rep:$rep, duration_s:$t, ping_interval_s:$pi, cc:$cc,
    transport:(if $mode == "mptcp" then "mptcp" else "tcp" end), tcp_path:(if $mode == "mptcp" then null else 1 end),
    family:"003", experiment:"scenario", backend:"qemu-tcg-guest", kernel:$kernel, host:$host, start_time:$start,
    topology:{file:"testbed/families/003/topology.json", sha256:$topo_sha},
    applied:$applied, queue_disc:$applied.queue_disc, delay_placement:$applied.delay_placement,
    queue_mechanism:$applied.queue_mechanism,
    qdiscs_as_built:{sw1:$qd_sw1, sw2:$qd_sw2, server:$qd_srv},
    self_check:({path1: chk($i1; $d1), path2: chk($i2; $d2)} | .ok = (.path1.rtt_ok and .path2.rtt_ok)),
    flow_start_epoch:($t0|tonumber), flow_end_epoch:($t1|tonumber),
    path_bytes_to_server:{path1:$b1, path2:$b2},
    mptcp_counters:{client:$ncc, server:$ncs},
    guest_load:{loadavg_start:$load0, loadavg_end:$load1,
                cpu_pressure_some_total_us:{start:(if $psi0 == "" then null else ($psi0|tonumber) end),
                                            end:(if $psi1 == "" then null else ($psi1|tonumber) end)}},
    sysctls:($sysctls|split("\n")),
    tool_versions:{iperf3:$iperf3v, ping:$pingv, mptcpize:$mptcpizev, iproute2:$ipv},
    status:"complete"}' > "$out/meta.json.tmp"
mv "$out/meta.json.tmp" "$out/meta.json"
date -u +%Y-%m-%dT%H:%M:%SZ > "$out/COMPLETE"
say "COMPLETE: path bytes to server $bytes1 / $bytes2; idle RTT ${idle[1]} / ${idle[2]} ms"
