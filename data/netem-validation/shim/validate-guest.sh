#!/usr/bin/env bash
# Real netem against the delay shim, in ONE machine whose kernel has sch_netem (Debian 12's 6.1). Runs as root inside
# the VM that testbed/delayshim/validate-vm.sh boots (docs/netem-semantics.md sections 7 and 10); needs iproute2,
# iptables, ethtool, iperf3, tcpdump, jq, gawk (its time extension), gzip, kmod.
#
# Path, as tests/test_queue_model_netns.py builds it: three namespaces  a --- sw --- b  (veth a-sw/sw-a and
# b-sw/sw-b; a 10.91.1.1/24, sw 10.91.1.2/24 and 10.91.2.2/24, b 10.91.2.1/24; a routes 10.91.2.0/24 via sw, b
# routes 10.91.1.0/24 via sw). sw is configured by testbed/nodes/switch.sh (SWITCH) with one-way delay D ms per
# interface, no loss, DELAY_MECH netem or shim, TBF burst 10000 bytes (testbed/topology.json
# defaults.tbf_burst_bytes.vagrant) and --queue-model MODEL. The shim runs from SHIMDIR with LD_LIBRARY_PATH=SHIMDIR/lib
# (a wrapper that execs it, so switch.sh's pidfile holds the shim's own pid).
# Two kinds of arm, IMPL in {netem, shim} for each:
#   udp (the calibration, docs/netem-semantics.md section 7 step 2): every (MODEL in --models, D) once per rep for
#       reps 1..UDP_REPS: one `iperf3 -u -b 12M -l 1448 -t S --json` flow a -> b (1036 datagrams/s of 1490-byte frames
#       against a 10 Mbit/s TBF: 20 % overload), no loss.
#   tcp (the comparison of step 4 with the issue's matrix): every (MODEL in --tcp-models, CC in --ccs, D, LOSS in
#       --losses) once per rep: one `iperf3 -C CC -t T -i 0.5 --json` flow a -> b (TCP_DURATION s). Loss LOSS % on the
#       data direction only (packets a -> b): with real netem netem's own `loss` on sw-b's netem (switch.sh gets loss
#       0, then `tc qdisc change`: the real mechanism, drawn at netem's enqueue before its limit check); with the shim
#       switch.sh's iptables `statistic` DROP on packets from sw-a (what the namespace backend runs). No fq: bbr paces
#       itself (as on the namespace backend, whose kernel has no sch_fq).
# Per rep the arms run in an order shuffled with seed SEED + rep (gawk srand/rand; recorded per arm); --only-rep R runs
# rep R alone (validate-vm.sh runs one rep per call and copies it out, so an interrupted validation resumes by rep).
# Per arm: fresh namespaces (TSO/GSO/GRO off on a's and b's veths, as testbed/nodes/host.sh does: the switch's
# qdiscs must count wire packets); switch.sh; an iperf3 server in b; tcpdump in sw on sw-a (-Q in: arrival at the
# switch) and sw-b (-Q out: departure after the egress qdisc), snaplen 96, the flow's protocol a -> b only;
# `tc -s qdisc show dev sw-b` every TC_INTERVAL s (one `tc -s -batch -` process fed on a fixed schedule, each block
# stamped `# ts=<epoch s>` by gawk when it arrives: no fork per sample, which costs ~40 ms under TCG); the shim's
# counters restarted (SIGUSR1) before and reported (SIGUSR1) after the flow, as the namespace test does;
# `tc -s qdisc show dev sw-b` (and for loss arms `iptables -L FORWARD -vnx`) before and after the flow; then the
# namespaces are deleted.
# Per arm OUT/runs/repNN-MODEL-dD-IMPL/ (udp) or OUT/runs/repNN-MODEL-dD-lLOSS-CC-IMPL/ (tcp): run.json (parameters,
# times, drops, shim counters, checks), iperf3.json, sw-a.pcap.gz, sw-b.pcap.gz, tc.txt.gz, switch.log, shim.log,
# tcpdump-sw-a.err, tcpdump-sw-b.err, server.log.
# OUT/setup.json: the machine (uname, the kernel's Debian package, the netem patches K4/K5/K6 found in its changelog,
# tool versions, the seed). Captures and samples are written to /dev/shm during the flow and gzip'd afterwards.
# An arm that fails a check (switch.sh, tcpdump, iperf3, empty capture, no shim report) is recorded in its run.json
# and the next arm runs. No namespace or process of ours is left, also on interrupt (trap). Exit 0 when every arm
# passed its checks, 1 when an arm failed one, 2 on bad usage / a set-up error.
# usage: validate-guest.sh --shimdir DIR --switch PATH --out DIR [--reps N] [--only-rep R] [--duration-s S] [--delays "5 25 50"]
#                          [--models "fifo-after-delay tbf-netem netem-tbf netem-tbf-k6"] [--udp-reps N] [--seed N] [--tc-interval-s 0.01]
#                          [--tcp-models "tbf-netem netem-tbf-k6"] [--ccs "cubic bbr"] [--losses "0 1"] [--tcp-duration-s T]
set -euo pipefail
export LC_ALL=C   # EPOCHREALTIME and printf with a '.' decimal point
shimdir="" switch="" out="" reps=10 duration=20 delays="5 25 50" models="fifo-after-delay tbf-netem netem-tbf netem-tbf-k6"
seed=1 tc_interval=0.01 only_rep="" udp_reps="" tcp_models="" ccs="" losses="0" tcp_duration=20
NS_A=nvv-a NS_SW=nvv-sw NS_B=nvv-b
A_IP=10.91.1.1 SWA_IP=10.91.1.2 SWB_IP=10.91.2.2 B_IP=10.91.2.1
PORT=5301 BURST=10000 UDP_RATE=12M UDP_LEN=1448 SNAPLEN=96
IMPLS=(netem shim)
SHM=/dev/shm/nvval
# netem patch subjects as the Debian kernel changelog lists them (docs/netem-kernel-versions.md)
K4_SUBJ="netem: account for backlog updates from child qdisc"
K5_SUBJ="netem: Update sch->q.qlen before qdisc_tree_reduce_backlog()"
K6_SUBJ="netem: fix queue limit check to include reordered packets"

die() { echo "error: $*" >&2; exit 2; }
log() { echo "[$(date -u +%H:%M:%S)] guest: $*" >&2; }
usage() { sed -n '/^# usage:/,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --shimdir) shimdir=${2:-}; shift 2 || usage ;;
        --switch) switch=${2:-}; shift 2 || usage ;;
        --out) out=${2:-}; shift 2 || usage ;;
        --reps) reps=${2:-}; shift 2 || usage ;;
        --duration-s) duration=${2:-}; shift 2 || usage ;;
        --delays) delays=${2:-}; shift 2 || usage ;;
        --models) models=${2:-}; shift 2 || usage ;;
        --seed) seed=${2:-}; shift 2 || usage ;;
        --tc-interval-s) tc_interval=${2:-}; shift 2 || usage ;;
        --only-rep) only_rep=${2:-}; shift 2 || usage ;;
        --udp-reps) udp_reps=${2:-}; shift 2 || usage ;;
        --tcp-models) tcp_models=${2:-}; shift 2 || usage ;;
        --ccs) ccs=${2:-}; shift 2 || usage ;;
        --losses) losses=${2:-}; shift 2 || usage ;;
        --tcp-duration-s) tcp_duration=${2:-}; shift 2 || usage ;;
        -h|--help) usage ;;
        *) die "unknown option '$1'" ;;
    esac
done
[[ -n "$shimdir" && -x "$shimdir/delayshim" ]] || die "--shimdir must name a directory with the delayshim binary"
[[ -n "$switch" && -f "$switch" ]] || die "--switch must name testbed/nodes/switch.sh"
[[ -n "$out" ]] || die "--out DIR is required"
[[ "$reps" =~ ^[1-9][0-9]{0,2}$ ]] || die "--reps must be an integer 1..999, got '$reps'"
if ! [[ "$duration" =~ ^[1-9][0-9]{0,3}$ ]] || (( duration < 5 )); then die "--duration-s must be an integer 5..9999, got '$duration'"; fi
read -r -a DELAYS <<<"$delays"
[[ ${#DELAYS[@]} -gt 0 ]] || die "--delays is empty"
for d in "${DELAYS[@]}"; do [[ "$d" =~ ^[1-9][0-9]{0,2}$ ]] || die "--delays: bad one-way delay '$d' (integer 1..999 ms)"; done
read -r -a MODELS <<<"$models"
[[ ${#MODELS[@]} -gt 0 ]] || die "--models is empty"
for m in "${MODELS[@]}"; do
    [[ "$m" =~ ^(fifo-after-delay|tbf-netem|netem-tbf|netem-tbf-k6)$ ]] || die "--models: bad queue model '$m'"
done
[[ "$seed" =~ ^[0-9]{1,9}$ ]] || die "--seed must be an integer 0..999999999, got '$seed'"
[[ -z "$udp_reps" ]] && udp_reps=$reps
if ! [[ "$udp_reps" =~ ^[0-9]{1,3}$ ]] || (( udp_reps > reps )); then die "--udp-reps must be an integer 0..--reps, got '$udp_reps'"; fi
if [[ -n "$only_rep" ]]; then
    if ! [[ "$only_rep" =~ ^[1-9][0-9]{0,2}$ ]] || (( only_rep > reps )); then die "--only-rep must be an integer 1..--reps, got '$only_rep'"; fi
fi
read -r -a TCP_MODELS <<<"$tcp_models"
for m in "${TCP_MODELS[@]}"; do
    [[ "$m" =~ ^(fifo-after-delay|tbf-netem|netem-tbf|netem-tbf-k6)$ ]] || die "--tcp-models: bad queue model '$m'"
done
read -r -a CCS <<<"$ccs"
for c in "${CCS[@]}"; do [[ "$c" =~ ^(cubic|bbr|reno)$ ]] || die "--ccs: each must be cubic, bbr or reno, got '$c'"; done
(( ${#TCP_MODELS[@]} == 0 )) || (( ${#CCS[@]} > 0 )) || die "--tcp-models needs --ccs"
read -r -a LOSSES <<<"$losses"
[[ ${#LOSSES[@]} -gt 0 ]] || die "--losses is empty"
for l in "${LOSSES[@]}"; do
    [[ "$l" =~ ^(0|[1-9][0-9]?)(\.[0-9]{1,2})?$ ]] || die "--losses: each must be a percentage 0..99.99, got '$l'"
done
if ! [[ "$tcp_duration" =~ ^[1-9][0-9]{0,3}$ ]] || (( tcp_duration < 5 )); then die "--tcp-duration-s must be an integer 5..9999, got '$tcp_duration'"; fi
[[ "$tc_interval" =~ ^(0\.[0-9]*[1-9][0-9]*|[1-9][0-9]*(\.[0-9]+)?)$ ]] || die "--tc-interval-s must be a positive number"
[[ $EUID -eq 0 ]] || die "needs root (namespaces, tc, iptables, tcpdump)"
for t in ip tc ethtool iptables iperf3 tcpdump jq gawk gzip zcat sha256sum timeout ss sysctl modprobe dpkg-query df mkfifo ldd; do
    command -v "$t" >/dev/null || die "$t not installed"
done
(( BASH_VERSINFO[0] >= 5 )) || die "bash 5 needed (EPOCHREALTIME)"
if [[ -e "$out" ]] && [[ -n "$(ls -A "$out" 2>/dev/null)" ]]; then die "--out $out exists and is not empty"; fi
tc_step_us=$(gawk -v s="$tc_interval" 'BEGIN {printf "%d", s * 1000000}')
(( tc_step_us >= 1000 )) || die "--tc-interval-s must be at least 0.001"

# the shim with its own libraries (copied from the host: the box has no libnetfilter-queue)
deps=$(LD_LIBRARY_PATH="$shimdir/lib" ldd "$shimdir/delayshim" 2>&1) || die "ldd $shimdir/delayshim failed: $(tr '\n' ' ' <<<"$deps")"
if grep -q 'not found' <<<"$deps"; then die "the shim's libraries do not resolve: $(tr '\n' ' ' <<<"$deps")"; fi
# gawk's time extension stamps the tc samples
gawk -l time 'BEGIN {printf "%.6f\n", gettimeofday()}' >/dev/null 2>&1 || die "gawk cannot load its time extension (gettimeofday)"
for mod in sch_netem sch_tbf nfnetlink_queue xt_NFQUEUE xt_statistic tcp_bbr; do modprobe -q "$mod" 2>/dev/null || true; done
[[ -d /sys/module/sch_netem ]] || die "this kernel has no sch_netem (modprobe sch_netem)"
for c in "${CCS[@]}"; do
    grep -qw "$c" /proc/sys/net/ipv4/tcp_available_congestion_control || die "congestion control $c not available (modprobe tcp_$c)"
done
# disk: captures gzip'd ~150 kB per second of flow and arm (2 x 112-byte records x 1036 + 839 packets/s, payload random)
n_reps_here=$reps n_udp_here=$udp_reps
if [[ -n "$only_rep" ]]; then n_reps_here=1; n_udp_here=$(( only_rep <= udp_reps ? 1 : 0 )); fi
n_udp=$(( n_udp_here * ${#MODELS[@]} * ${#DELAYS[@]} * ${#IMPLS[@]} ))
n_tcp=$(( n_reps_here * ${#TCP_MODELS[@]} * ${#CCS[@]} * ${#DELAYS[@]} * ${#LOSSES[@]} * ${#IMPLS[@]} ))
n_arms=$(( n_udp + n_tcp ))
(( n_arms > 0 )) || die "no arm to run (--udp-reps 0 and no --tcp-models)"
mkdir -p "$out/runs"
need_kb=$(( n_udp * duration * 150 + n_tcp * tcp_duration * 150 + 51200 ))
avail_kb=$(df -Pk "$out" | gawk 'NR == 2 {a = $4} END {print a + 0}')
(( avail_kb >= need_kb )) || die "not enough disk for $n_arms arms of $duration s: need ~$(( need_kb / 1024 )) MB, $(( avail_kb / 1024 )) MB free under $out (fewer --reps or a shorter --duration-s)"

# ---------------------------------------------------------------- teardown (always)
PIDS=()          # processes of the current arm started here with `ip netns exec ... &` ($! is the program)
SHIM_PID=""      # the current arm's shim (started by switch.sh, pid from its pidfile)
work=""          # this script's scratch directory (the shim's wrapper)
# shellcheck disable=SC2317  # also called from the EXIT trap
stop_pids() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    PIDS=()
}
# shellcheck disable=SC2317
stop_shim() {
    [[ -n "$SHIM_PID" ]] || return 0
    kill "$SHIM_PID" 2>/dev/null || true     # SIGTERM: it releases what it holds and prints its last report
    for _ in $(seq 100); do [[ -e "/proc/$SHIM_PID" ]] || break; sleep 0.05; done
    if [[ "$(cat "/proc/$SHIM_PID/comm" 2>/dev/null || true)" == delayshim ]]; then kill -9 "$SHIM_PID" 2>/dev/null || true; fi
    SHIM_PID=""
}
# shellcheck disable=SC2317
teardown_chain() { # kill what still runs in our namespaces (only ours: we created them), then delete them
    local ns p killed=0
    for ns in "$NS_A" "$NS_SW" "$NS_B"; do
        [[ -e "/run/netns/$ns" ]] || continue
        for p in $(ip netns pids "$ns" 2>/dev/null); do kill "$p" 2>/dev/null || true; killed=1; done
    done
    if (( killed )); then sleep 0.5; fi
    for ns in "$NS_A" "$NS_SW" "$NS_B"; do
        [[ -e "/run/netns/$ns" ]] || continue
        for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
        ip netns del "$ns" 2>/dev/null || true
    done
}
# shellcheck disable=SC2317  # the EXIT trap
teardown() {
    local rc=$?
    trap - EXIT INT TERM HUP
    stop_pids
    stop_shim
    teardown_chain
    rm -rf "$SHM" ${work:+"$work"}
    exit "$rc"
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# the shim as switch.sh starts it (SHIM_BIN): exec keeps the pid that switch.sh writes to its pidfile
work=$(mktemp -d /var/tmp/nvval-run.XXXXXX)   # not /run: the box mounts it noexec
SHIMRUN="$work/delayshim-run"
printf '#!/bin/sh\nLD_LIBRARY_PATH=%q exec %q "$@"\n' "$shimdir/lib" "$shimdir/delayshim" >"$SHIMRUN"
chmod 0755 "$SHIMRUN"

# ---------------------------------------------------------------- path (as tests/test_queue_model_netns.py)
in_ns() { local ns=$1; shift; ip netns exec "$ns" "$@"; }
setup_chain() {
    local ns pair
    teardown_chain
    for ns in "$NS_A" "$NS_SW" "$NS_B"; do
        ip netns add "$ns"
        in_ns "$ns" ip link set lo up
    done
    ip link add a-sw netns "$NS_A" type veth peer name sw-a netns "$NS_SW"
    ip link add b-sw netns "$NS_B" type veth peer name sw-b netns "$NS_SW"
    in_ns "$NS_A" ip addr add "$A_IP/24" dev a-sw
    in_ns "$NS_SW" ip addr add "$SWA_IP/24" dev sw-a
    in_ns "$NS_SW" ip addr add "$SWB_IP/24" dev sw-b
    in_ns "$NS_B" ip addr add "$B_IP/24" dev b-sw
    for pair in "$NS_A:a-sw" "$NS_SW:sw-a" "$NS_SW:sw-b" "$NS_B:b-sw"; do
        in_ns "${pair%%:*}" ip link set "${pair#*:}" up
    done
    in_ns "$NS_A" ip route add 10.91.2.0/24 via "$SWA_IP"
    in_ns "$NS_A" ethtool -K a-sw tso off gso off gro off >/dev/null 2>&1 || true
    in_ns "$NS_B" ethtool -K b-sw tso off gso off gro off >/dev/null 2>&1 || true
    in_ns "$NS_B" ip route add 10.91.1.0/24 via "$SWB_IP"
}

# ---------------------------------------------------------------- samplers and parsers
# The tc sampler, run by `bash -c` in sw: "qdisc show dev $1" into one `tc -s -batch -` every $2 us on a fixed
# schedule (the next command is due one step after the previous one was due; bash's own `read -t` on a FIFO nobody
# writes to waits, `printf -v` formats: no fork per sample) until the file $3 exists. tc flushes its output after each
# batch command; gawk ($4) stamps each block when its root qdisc line arrives. The writer stops on its own, so tc and
# gawk see EOF and end normally.
# shellcheck disable=SC2016  # expanded by the sampler's own shell
TC_SAMPLER='fifo=$(mktemp -u /tmp/nvv-tick.XXXXXX); mkfifo "$fifo"; exec 3<>"$fifo"; rm -f "$fifo"
ticks() {
    local next now d frac
    next=${EPOCHREALTIME/./}
    while [[ ! -e $3 ]]; do
        echo "qdisc show dev $1"
        next=$((next + $2)); now=${EPOCHREALTIME/./}; d=$((next - now))
        if (( d > 0 )); then printf -v frac %06d $((d % 1000000)); read -r -t "$((d / 1000000)).$frac" -u 3 || true; else next=$now; fi
    done
}
ticks "$1" "$2" "$3" | tc -s -batch - | gawk -l time "$4"'
STAMP_AWK='/^qdisc [^ ]+ [0-9a-f]+: root/ {printf "# ts=%.6f\n", gettimeofday()} {print}'
# root_dropped TEXT: the "dropped N" of the root qdisc in `tc -s qdisc show` output (the root counts its children's
# drops: tbf_enqueue and netem_dequeue add a child's drop to their own counter); empty if there is no root qdisc
root_dropped() {
    gawk '/^qdisc [^ ]+ [0-9a-f]+: root/ {r = 1; next}
          r && match($0, /dropped ([0-9]+)/, m) {v = m[1]; r = 0}
          END {print v}' <<<"$1"
}
# tcpdump_stats ERRFILE -> JSON {captured, received_by_filter, dropped_by_kernel} from tcpdump's exit lines
tcpdump_stats() {
    [[ -f "$1" ]] || { echo '{"captured":null,"received_by_filter":null,"dropped_by_kernel":null}'; return 0; }
    gawk 'match($0, /^([0-9]+) packets? (captured|received by filter|dropped by kernel)/, m) {
              k = m[2]; gsub(/ /, "_", k); v[k] = m[1] }
          END { printf "{\"captured\":%s,\"received_by_filter\":%s,\"dropped_by_kernel\":%s}\n",
                ("captured" in v) ? v["captured"] : "null",
                ("received_by_filter" in v) ? v["received_by_filter"] : "null",
                ("dropped_by_kernel" in v) ? v["dropped_by_kernel"] : "null" }' "$1" 2>/dev/null \
        || echo '{"captured":null,"received_by_filter":null,"dropped_by_kernel":null}'
}
count_reports() { # LOG: how many report lines the shim has written
    local n=0
    [[ -f "$1" ]] && n=$(gawk '/^delayshim: released/ {n++} END {print n + 0}' "$1")
    echo "$n"
}
# shim_report LOG: SIGUSR1 to the shim, wait (<= 5 s) for its new report line and print it (empty if none came)
shim_report() {
    local log=$1 before
    [[ -n "$SHIM_PID" ]] || return 0
    before=$(count_reports "$log")
    kill -USR1 "$SHIM_PID" 2>/dev/null || return 0
    for _ in $(seq 100); do
        (( $(count_reports "$log") > before )) && break
        sleep 0.05
    done
    gawk '/^delayshim: released/ {l = $0} END {print l}' "$log" 2>/dev/null || true
}
# wait_for_text FILE TEXT TIMEOUT_S: until FILE contains TEXT (0) or the time is up (1)
wait_for_text() {
    for _ in $(seq $(( $3 * 10 ))); do
        grep -qF -- "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# ---------------------------------------------------------------- one arm
FAILED=0
# iptables_dropped TEXT: packets of the FORWARD rule `-m statistic ... -j DROP` in `iptables -L FORWARD -vnx` (empty if none)
iptables_dropped() {
    gawk '$3 == "DROP" && /statistic/ {n += $1; f = 1} END {if (f) print n}' <<<"$1"
}
run_arm() { # REP MODEL DELAY_MS IMPL ORDER SHUFFLE_SEED TRAFFIC CC LOSS_PCT
    local rep=$1 model=$2 d=$3 impl=$4 order=$5 sseed=$6 traffic=$7 cc=$8 loss=$9
    local dir shm pidfile swout swrc=0 crc=-1 srv cli smp tda tdb t0="" t1="" started check=pass why=""
    local line_before="" line_after="" tc_before="" tc_after="" qsetup="" drop_b drop_a p f
    local sw_loss=0 loss_mech=none ipt_before="" ipt_after="" filter flow_s nspec=() nlimit=100 netem_change=""
    if [[ $traffic == udp ]]; then
        dir=$(printf '%s/runs/rep%02d-%s-d%s-%s' "$out" "$rep" "$model" "$d" "$impl")
        filter="udp and src host $A_IP and dst host $B_IP" flow_s=$duration
    else
        dir=$(printf '%s/runs/rep%02d-%s-d%s-l%s-%s-%s' "$out" "$rep" "$model" "$d" "$loss" "$cc" "$impl")
        filter="tcp and src host $A_IP and dst host $B_IP" flow_s=$tcp_duration
    fi
    if gawk -v l="$loss" 'BEGIN {exit !(l > 0)}'; then
        if [[ $impl == shim ]]; then sw_loss=$loss loss_mech="iptables statistic DROP (FORWARD, from sw-a)"
        else loss_mech="netem loss (sw-b's netem)"; fi
    fi
    case "$model" in
        tbf-netem) nspec=(parent 1:1 handle 10:) ;;
        fifo-after-delay) nspec=(root handle 1:) nlimit=65536 ;;
        *) nspec=(root handle 1:) ;;
    esac
    mkdir -p "$dir"
    shm="$SHM/arm"
    rm -rf "$shm"
    mkdir -p "$shm"
    pidfile="$shm/shim.pid"
    started=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
    setup_chain
    swout=$(in_ns "$NS_SW" bash "$switch" sw-a sw-b "$d" "$sw_loss" "$impl" "$SHIMRUN" "$pidfile" "$BURST" \
            --queue-model "$model" 2>&1) || swrc=$?
    printf '%s\n' "$swout" >"$dir/switch.log"
    if [[ $swrc -ne 0 || "$swout" != *"switch ok"* ]]; then
        check=fail why="switch.sh exited $swrc: $(tail -c 300 <<<"$swout" | tr '\n' ' ')"
    elif [[ $impl == netem && $loss_mech != none ]]; then
        # netem's own loss on the data direction's netem (switch.sh set it up without loss)
        netem_change="tc qdisc change dev sw-b ${nspec[*]} netem delay ${d}ms limit $nlimit loss ${loss}%"
        if ! p=$(in_ns "$NS_SW" tc qdisc change dev sw-b "${nspec[@]}" netem delay "${d}ms" limit "$nlimit" loss "${loss}%" 2>&1); then
            check=fail why="$netem_change failed: $(tr '\n' ' ' <<<"$p" | tail -c 200)"
        fi
    fi
    if [[ $check == pass && $impl == shim ]]; then
        for _ in $(seq 50); do [[ -s "$pidfile" ]] && break; sleep 0.1; done
        SHIM_PID=$(cat "$pidfile" 2>/dev/null || true)
        if ! [[ "$SHIM_PID" =~ ^[0-9]+$ ]] || ! kill -0 "$SHIM_PID" 2>/dev/null; then
            check=fail why="the shim is not running (pidfile '${SHIM_PID}'): $(tail -c 300 "$shm/shim.log" 2>/dev/null | tr '\n' ' ')"
            SHIM_PID=""
        fi
    fi
    qsetup=$(in_ns "$NS_SW" tc qdisc show dev sw-b 2>&1 || true)
    if [[ $check == pass ]]; then
        sleep 0.3
        ip netns exec "$NS_B" iperf3 -s -1 -B "$B_IP" -p "$PORT" >"$dir/server.log" 2>&1 &
        srv=$!; PIDS+=("$srv")
        for _ in $(seq 100); do
            [[ -n "$(in_ns "$NS_B" ss -Hltn "sport = :$PORT")" ]] && break
            sleep 0.1
        done
        ip netns exec "$NS_SW" tcpdump -i sw-a -Q in -s "$SNAPLEN" -n -Z root -w "$shm/sw-a.pcap" \
            "$filter" 2>"$shm/tcpdump-sw-a.err" &
        tda=$!; PIDS+=("$tda")
        ip netns exec "$NS_SW" tcpdump -i sw-b -Q out -s "$SNAPLEN" -n -Z root -w "$shm/sw-b.pcap" \
            "$filter" 2>"$shm/tcpdump-sw-b.err" &
        tdb=$!; PIDS+=("$tdb")
        if ! wait_for_text "$shm/tcpdump-sw-a.err" "listening on" 20 || ! wait_for_text "$shm/tcpdump-sw-b.err" "listening on" 20; then
            check=fail why="tcpdump did not start: $(cat "$shm"/tcpdump-sw-*.err 2>/dev/null | tr '\n' ' ' | tail -c 300)"
        fi
    fi
    if [[ $check == pass ]]; then
        ip netns exec "$NS_SW" bash -c "$TC_SAMPLER" tcsampler sw-b "$tc_step_us" "$shm/tc.stop" "$STAMP_AWK" \
            >"$shm/tc.txt" 2>"$shm/tc.err" &
        smp=$!; PIDS+=("$smp")
        line_before=$(shim_report "$shm/shim.log")     # restarts the shim's counters (empty for netem)
        tc_before=$(in_ns "$NS_SW" tc -s qdisc show dev sw-b 2>&1 || true)
        ipt_before=$(in_ns "$NS_SW" iptables -w -L FORWARD -vnx 2>&1 || true)
        t0=$EPOCHREALTIME
        if [[ $traffic == udp ]]; then
            ip netns exec "$NS_A" timeout "$((flow_s + 60))" iperf3 -c "$B_IP" -p "$PORT" -u -b "$UDP_RATE" \
                -l "$UDP_LEN" -t "$flow_s" --json >"$dir/iperf3.json" 2>"$dir/client.err" &
        else
            ip netns exec "$NS_A" timeout "$((flow_s + 60))" iperf3 -c "$B_IP" -p "$PORT" -C "$cc" \
                -t "$flow_s" -i 0.5 --json >"$dir/iperf3.json" 2>"$dir/client.err" &
        fi
        cli=$!; PIDS+=("$cli")
        crc=0
        wait "$cli" || crc=$?
        t1=$EPOCHREALTIME
        sleep 1                                        # the last packets leave the delay line and the queue
        line_after=$(shim_report "$shm/shim.log")
        tc_after=$(in_ns "$NS_SW" tc -s qdisc show dev sw-b 2>&1 || true)
        ipt_after=$(in_ns "$NS_SW" iptables -w -L FORWARD -vnx 2>&1 || true)
        touch "$shm/tc.stop"
        for _ in $(seq 50); do kill -0 "$smp" 2>/dev/null || break; sleep 0.1; done
        for p in "$tda" "$tdb"; do kill -INT "$p" 2>/dev/null || true; done   # SIGINT: tcpdump flushes and reports
        for _ in $(seq 30); do kill -0 "$tda" 2>/dev/null || kill -0 "$tdb" 2>/dev/null || break; sleep 0.1; done
        for _ in $(seq 50); do kill -0 "$srv" 2>/dev/null || break; sleep 0.1; done
    fi
    stop_pids
    stop_shim
    teardown_chain
    for f in sw-a.pcap sw-b.pcap tc.txt; do
        [[ -f "$shm/$f" ]] && gzip -1 -c "$shm/$f" >"$dir/$f.gz"
    done
    for f in tcpdump-sw-a.err tcpdump-sw-b.err shim.log tc.err; do
        [[ -f "$shm/$f" ]] && cp "$shm/$f" "$dir/$f"
    done

    local size_a=0 size_b=0
    [[ -f "$shm/sw-a.pcap" ]] && size_a=$(stat -c %s "$shm/sw-a.pcap")
    [[ -f "$shm/sw-b.pcap" ]] && size_b=$(stat -c %s "$shm/sw-b.pcap")
    if [[ $check == pass ]]; then
        if [[ $crc -ne 0 ]]; then check=fail why="iperf3 exited $crc: $(head -c 300 "$dir/client.err" | tr '\n' ' ')"
        elif ! jq -e '(.error | not) and ((.end.sum // .end.sum_received) != null)' "$dir/iperf3.json" >/dev/null 2>&1; then
            check=fail why="iperf3 JSON has an error or no end.sum / end.sum_received: $(jq -r '(.error // "") | .[:200]' "$dir/iperf3.json" 2>/dev/null || true)"
        elif (( size_a <= 24 )); then check=fail why="the capture on sw-a (ingress) holds no packet"
        elif (( size_b <= 24 )); then check=fail why="the capture on sw-b (egress) holds no packet"
        elif [[ $impl == shim && -z "$line_after" ]]; then check=fail why="no report line from the shim after the flow"
        fi
    fi
    [[ $check == pass ]] || { FAILED=1; log "arm $(basename "$dir") FAILED: $why"; }
    rm -rf "$shm"
    drop_b=$(root_dropped "$tc_before")
    drop_a=$(root_dropped "$tc_after")
    jq -n --argjson rep "$rep" --arg model "$model" --argjson d "$d" --arg impl "$impl" --argjson order "$order" \
        --argjson sseed "$sseed" --argjson dur "$flow_s" --arg tci "$tc_interval" --arg uname "$(uname -r)" \
        --arg traffic "$traffic" --arg cc "$cc" --argjson loss "$loss" --arg lmech "$loss_mech" --arg nchg "$netem_change" \
        --arg iptb "$ipt_before" --arg ipta "$ipt_after" --arg ipdb "$(iptables_dropped "$ipt_before")" \
        --arg ipda "$(iptables_dropped "$ipt_after")" \
        --arg started "$started" --arg t0 "$t0" --arg t1 "$t1" --argjson swrc "$swrc" --arg swout "$swout" \
        --arg qsetup "$qsetup" --arg tcb "$tc_before" --arg tca "$tc_after" --arg db "$drop_b" --arg da "$drop_a" \
        --arg lb "$line_before" --arg la "$line_after" --argjson crc "$crc" \
        --argjson tcpa "$(tcpdump_stats "$dir/tcpdump-sw-a.err")" --argjson tcpb "$(tcpdump_stats "$dir/tcpdump-sw-b.err")" \
        --argjson sza "$size_a" --argjson szb "$size_b" --arg check "$check" --arg why "$why" \
        --arg a_ip "$A_IP" --arg b_ip "$B_IP" --argjson port "$PORT" --argjson burst "$BURST" --arg rate "$UDP_RATE" \
        --argjson ulen "$UDP_LEN" --argjson snap "$SNAPLEN" \
        'def num: if . == "" then null else tonumber end;
         def stats: if . == "" then null
                    else [scan("([a-z_0-9]+) ([0-9]+)")] | map({(.[0]): (.[1] | tonumber)}) | add end;
         {rep:$rep, model:$model, delay_ms:$d, implementation:$impl, order_in_rep:$order, shuffle_seed:$sseed,
          traffic:$traffic, cc:(if $traffic == "tcp" then $cc else null end), loss_pct:$loss,
          params:({one_way_delay_ms:$d, loss_pct:$loss, loss_mech:$lmech, delay_mech:$impl, queue_model:$model,
                  tbf_rate_mbit:10, tbf_burst_bytes:$burst, duration_s:$dur, traffic:$traffic,
                  tc_interval_s:($tci | tonumber), snaplen:$snap, a_ip:$a_ip, b_ip:$b_ip, port:$port}
                  + (if $traffic == "udp" then {udp_rate:$rate, udp_len_bytes:$ulen}
                     else {cc:$cc, iperf3_interval_s:0.5, offloads:"tso gso gro off on a-sw, b-sw, sw-a, sw-b"} end)),
          netem_loss_change:(if $nchg == "" then null else $nchg end),
          iptables_before:$iptb, iptables_after:$ipta,
          uname_r:$uname, started_utc:$started, flow_start_epoch:($t0 | num), flow_end_epoch:($t1 | num),
          switch:{exit:$swrc, output:$swout}, qdisc_setup:$qsetup, tc_before:$tcb, tc_after:$tca,
          drops:{qdisc_root_before:($db | num), qdisc_root_after:($da | num),
                 qdisc_root:(if ($db | num) != null and ($da | num) != null then ($da | num) - ($db | num) else null end),
                 shim_dropped_at_limit:(if $impl == "shim" then ($la | stats | if . == null then null else .dropped_at_limit end) else null end),
                 iptables_loss:(if ($ipdb | num) != null and ($ipda | num) != null then ($ipda | num) - ($ipdb | num) else null end)},
          shim:(if $impl == "shim" then {report_before:$lb, report_after:$la, stats:($la | stats)} else null end),
          tcpdump:{sw_a:$tcpa, sw_b:$tcpb},
          files:{ingress_pcap:"sw-a.pcap.gz", egress_pcap:"sw-b.pcap.gz", tc_samples:"tc.txt.gz",
                 ingress_pcap_bytes:$sza, egress_pcap_bytes:$szb},
          iperf3_exit:(if $crc < 0 then null else $crc end),
          check:$check, reason:(if $why == "" then null else $why end)}' >"$dir/run.json"
    local mbps dla rtt
    mbps=$(jq -r '((.end.sum_received // .end.sum).bits_per_second // 0) / 1e6 | . * 100 | round / 100' "$dir/iperf3.json" 2>/dev/null || echo "?")
    dla=$(jq -r '.drops.shim_dropped_at_limit // "-"' "$dir/run.json")
    rtt=$(jq -r '(.end.streams[0].sender.mean_rtt // null) | if . == null then "-" else (. / 1000 | . * 10 | round / 10 | tostring) + " ms" end' "$dir/iperf3.json" 2>/dev/null || echo "-")
    log "$(basename "$dir") (order $order): $check; iperf3 $mbps Mbit/s, mean rtt $rtt, qdisc drops $(( ${drop_a:-0} - ${drop_b:-0} )), shim drops at limit $dla"
}

# ---------------------------------------------------------------- main
changelog_has() { # SUBJECT: true / false from the running kernel's Debian changelog(s), null when there is none
    local docdir f found=none n
    docdir="/usr/share/doc/linux-image-$(uname -r)"
    for f in "$docdir"/changelog*; do
        [[ -f "$f" ]] || continue
        [[ $found == none ]] && found=false
        n=$(zcat -f -- "$f" | grep -c -F -- "$1" || true)
        (( ${n:-0} > 0 )) && found=true
    done
    [[ $found == none ]] && found=null
    echo "$found"
}
log "kernel $(uname -r); udp: models ${MODELS[*]}, reps 1..$udp_reps, $duration s; tcp: models ${TCP_MODELS[*]:-none}, ccs ${CCS[*]:-none}, losses ${LOSSES[*]} %, $tcp_duration s; delays ${DELAYS[*]} ms; ${only_rep:+rep $only_rep of }$reps reps; $n_arms arms here; seed $seed"
kpkg=$(dpkg-query -W -f='${Package} ${Version}' "linux-image-$(uname -r)" 2>/dev/null || true)
jq -n --arg uname "$(uname -a)" --arg unamer "$(uname -r)" --arg osr "$(. /etc/os-release && echo "$PRETTY_NAME")" \
    --arg procv "$(cat /proc/version)" --arg kpkg "$kpkg" \
    --argjson k4 "$(changelog_has "$K4_SUBJ")" --argjson k5 "$(changelog_has "$K5_SUBJ")" --argjson k6 "$(changelog_has "$K6_SUBJ")" \
    --arg docs "$(for f in "/usr/share/doc/linux-image-$(uname -r)"/*; do [[ -e $f ]] && printf '%s ' "${f##*/}"; done)" \
    --arg iperf "$(iperf3 --version 2>&1 | sed -n 1p)" --arg tcpdumpv "$(tcpdump --version 2>&1 | sed -n 1p)" \
    --arg tcv "$(tc -V 2>&1)" --arg iptv "$(iptables -V 2>&1)" --arg gawkv "$(gawk --version 2>&1 | sed -n 1p)" \
    --arg bashv "$BASH_VERSION" --argjson nproc "$(nproc)" \
    --arg hz "$(grep -h '^CONFIG_HZ=' "/boot/config-$(uname -r)" 2>/dev/null || true)" \
    --arg mods "$(lsmod | gawk '$1 ~ /^(sch_netem|sch_tbf|nfnetlink_queue|xt_NFQUEUE|nft_queue|xt_statistic)$/ {print $1}' | tr '\n' ' ')" \
    --arg shim_sha "$(sha256sum "$shimdir/delayshim" | cut -d' ' -f1)" --arg switch_sha "$(sha256sum "$switch" | cut -d' ' -f1)" \
    --arg ldd "$deps" --arg models "${MODELS[*]}" --arg delays "${DELAYS[*]}" --argjson reps "$reps" \
    --argjson dur "$duration" --argjson seed "$seed" --arg tci "$tc_interval" --argjson burst "$BURST" \
    --arg started "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --argjson udp_reps "$udp_reps" --arg tcp_models "${TCP_MODELS[*]}" \
    --arg ccs "${CCS[*]}" --arg losses "${LOSSES[*]}" --argjson tcp_dur "$tcp_duration" --arg only "$only_rep" \
    --arg ccavail "$(cat /proc/sys/net/ipv4/tcp_available_congestion_control)" \
    '{uname:$uname, uname_r:$unamer, os:$osr, proc_version:$procv,
      kernel_package:(if $kpkg == "" then null else $kpkg end),
      netem_patches:{K4:$k4, K5:$k5, K6:$k6, source:"changelog of the running kernel package (zcat | grep -F subject)",
                     doc_files:($docs | split(" ") | map(select(. != "")))},
      iperf3:$iperf, tcpdump:$tcpdumpv, tc:$tcv, iptables:$iptv, gawk:$gawkv, bash:$bashv, nproc:$nproc,
      config_hz:$hz, modules:($mods | split(" ") | map(select(. != ""))), shim_sha256:$shim_sha,
      switch_sh_sha256:$switch_sha, shim_ldd:$ldd, models:($models | split(" ")), delays_ms:($delays | split(" ") | map(tonumber)),
      implementations:["netem","shim"], reps:$reps, duration_s:$dur, seed:$seed, tc_interval_s:($tci | tonumber),
      tbf_burst_bytes:$burst, started_utc:$started, udp_reps:$udp_reps,
      tcp_models:($tcp_models | split(" ") | map(select(. != ""))), ccs:($ccs | split(" ") | map(select(. != ""))),
      losses_pct:($losses | split(" ") | map(tonumber)), tcp_duration_s:$tcp_dur,
      only_rep:(if $only == "" then null else ($only | tonumber) end), tcp_available_congestion_control:$ccavail}' >"$out/setup.json"
log "netem patches in this kernel's changelog: K4 $(jq -r .netem_patches.K4 "$out/setup.json"), K5 $(jq -r .netem_patches.K5 "$out/setup.json"), K6 $(jq -r .netem_patches.K6 "$out/setup.json")"

for rep in $(seq "$reps"); do
    [[ -z "$only_rep" || "$rep" == "$only_rep" ]] || continue
    arms=()
    if (( rep <= udp_reps )); then
        for model in "${MODELS[@]}"; do
            for d in "${DELAYS[@]}"; do
                for impl in "${IMPLS[@]}"; do arms+=("udp $model $d $impl - 0"); done
            done
        done
    fi
    for model in "${TCP_MODELS[@]}"; do
        for cc in "${CCS[@]}"; do
            for d in "${DELAYS[@]}"; do
                for l in "${LOSSES[@]}"; do
                    for impl in "${IMPLS[@]}"; do arms+=("tcp $model $d $impl $cc $l"); done
                done
            done
        done
    done
    sseed=$(( seed + rep ))
    mapfile -t arm_order < <(printf '%s\n' "${arms[@]}" | gawk -v s="$sseed" '
        {a[NR] = $0}
        END {srand(s); for (i = NR; i > 1; i--) {j = int(rand() * i) + 1; t = a[i]; a[i] = a[j]; a[j] = t}
             for (i = 1; i <= NR; i++) print a[i]}')
    (( ${#arm_order[@]} == ${#arms[@]} )) || die "shuffling the arms of rep $rep failed"
    for k in "${!arm_order[@]}"; do
        read -r traffic model d impl cc l <<<"${arm_order[$k]}"
        run_arm "$rep" "$model" "$d" "$impl" "$((k + 1))" "$sseed" "$traffic" "$cc" "$l"
    done
done
jq --arg t "$(date -u +%Y-%m-%dT%H:%M:%SZ)" '. + {ended_utc:$t}' "$out/setup.json" >"$out/setup.json.tmp" \
    && mv "$out/setup.json.tmp" "$out/setup.json"
log "done: $(find "$out/runs" -name run.json | wc -l) arms in $out"
exit "$FAILED"
