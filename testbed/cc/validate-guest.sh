#!/usr/bin/env bash
# Native kernel module vs BPF struct_ops port of the same TCP congestion control, in ONE machine whose kernel has
# both (Debian 12's 6.1: tcp_bic / tcp_westwood modules AND struct_ops). Runs as root inside the VM that
# testbed/cc/validate-vm.sh boots (docs/cc-validation.md); needs iproute2, ethtool, iperf3, bpftool, kmod, jq, gawk.
#
# Path: three namespaces  snd --- mid --- rcv  (veth pairs, offloads off). mid's egress towards rcv is the bottleneck:
# tbf 10 Mbit/s (burst 10000 B) with a child netem that drops LOSS % (--losses, default 1) and holds 100 packets;
# mid's egress towards snd (the ACK path) is netem delay --rtt-ms (default 10 ms), so the base RTT is that (+1.2 ms
# serialisation of a 1514-B frame).
# Per rep (1..N), case (each loss of --losses x each flow count of --flows) and CC, both implementations run, kernel
# first on odd reps and bpf first on even reps:
#   kernel  no struct_ops of that name registered; the kernel's module: `modprobe tcp_CC`, or with
#           --kmod CC=NAME:PATH.ko a module built elsewhere (`insmod PATH.ko`, registering the congestion control
#           NAME; e.g. PCC-Kernel's tcp_pcc.ko, "pcc", for the port pcc_vivace: testbed/cc/pcc-kernel/README.md)
#   bpf     the module unloaded (`rmmod`), `bpftool struct_ops register OBJDIR/CC.bpf.o`, afterwards `unregister id N`
# iperf3 snd -> rcv with --flows parallel streams (`-C CC -P F -t S --json`) and `ss -tin` on snd every SS_INTERVAL s
# (blocks `# ts=<epoch>`).
# Per run OUT/runs/repNN-CC-IMPL/ (repNN-CC-lL-fF-IMPL when --losses, --flows or --rtt-ms is not the default):
# iperf3.json, ss.txt, run.json (implementation, the CC name run, loss, flows, RTT, struct_ops id, object sha256,
# uname -r, `lsmod | grep tcp_`, the CC name check of the ss samples and, for a port, cc_guard: the repair counters
# of its kernel-defect guard over the run, testbed/cc/cc_guard.h, null without one), during.txt (lsmod, struct_ops and the
# available CCs 3 s into the flow), kernel.log (the kernel log written during the run, `dmesg -w`). OUT/setup.json describes the machine and the path.
# Nothing stays registered and no namespace is left, also on interrupt. Exit 0 when every run passed its checks,
# 1 when a run failed a check (its run.json says which), 2 on bad usage / a set-up error.
# usage: validate-guest.sh --objdir DIR --out DIR [--reps N] [--duration-s S] [--ccs "bic westwood"]
#                          [--ss-interval-s 0.1] [--rtt-ms 10] [--losses "1"] [--flows "1"] [--kmod CC=NAME:PATH.ko]...
set -euo pipefail
objdir="" out="" reps=10 duration=30 ccs="bic westwood" ss_interval=0.1 rtt_ms=10 losses=1 flows=1
declare -A KCC=() KO=()      # per port CC: the kernel implementation's CC name and the .ko to insmod (--kmod)
NS_SND=ccv-snd NS_MID=ccv-mid NS_RCV=ccv-rcv
SND_IP=10.71.1.1 MID_SND_IP=10.71.1.2 MID_RCV_IP=10.71.2.2 RCV_IP=10.71.2.1
PORT=5201

die() { echo "error: $*" >&2; exit 2; }
log() { echo "[$(date -u +%H:%M:%S)] guest: $*" >&2; }
usage() { sed -n '/^# usage:/,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --objdir) objdir=${2:-}; shift 2 || usage ;;
        --out) out=${2:-}; shift 2 || usage ;;
        --reps) reps=${2:-}; shift 2 || usage ;;
        --duration-s) duration=${2:-}; shift 2 || usage ;;
        --ccs) ccs=${2:-}; shift 2 || usage ;;
        --ss-interval-s) ss_interval=${2:-}; shift 2 || usage ;;
        --rtt-ms) rtt_ms=${2:-}; shift 2 || usage ;;
        --losses) losses=${2:-}; shift 2 || usage ;;
        --flows) flows=${2:-}; shift 2 || usage ;;
        --kmod) kmod=${2:-}; shift 2 || usage
                [[ "$kmod" =~ ^([a-z][a-z0-9_]{0,14})=([a-z][a-z0-9_]{0,14}):(/[A-Za-z0-9._/-]+\.ko)$ ]] \
                    || die "--kmod must be CC=NAME:/ABSOLUTE/PATH.ko, got '$kmod'"
                KCC[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]} KO[${BASH_REMATCH[1]}]=${BASH_REMATCH[3]} ;;
        -h|--help) usage ;;
        *) die "unknown option '$1'" ;;
    esac
done
[[ -n "$objdir" && -d "$objdir" ]] || die "--objdir must name a directory with the CC.bpf.o objects"
[[ -n "$out" ]] || die "--out DIR is required"
[[ "$reps" =~ ^[1-9][0-9]{0,2}$ ]] || die "--reps must be an integer 1..999, got '$reps'"
[[ "$duration" =~ ^[1-9][0-9]{0,3}$ ]] || die "--duration-s must be an integer 1..9999, got '$duration'"
[[ "$ss_interval" =~ ^(0\.[0-9]*[1-9][0-9]*|[1-9][0-9]*(\.[0-9]+)?)$ ]] || die "--ss-interval-s must be a positive number"
[[ "$rtt_ms" =~ ^[1-9][0-9]{0,3}$ ]] || die "--rtt-ms must be an integer 1..9999, got '$rtt_ms'"
read -r -a LOSSES <<<"$losses"
read -r -a FLOWS <<<"$flows"
[[ ${#LOSSES[@]} -gt 0 && ${#FLOWS[@]} -gt 0 ]] || die "--losses and --flows must not be empty"
for l in "${LOSSES[@]}"; do [[ "$l" =~ ^(0|[1-9][0-9]?)(\.[0-9]+)?$ ]] || die "--losses: bad loss percentage '$l'"; done
for f in "${FLOWS[@]}"; do [[ "$f" =~ ^[1-8]$ ]] || die "--flows: flow counts are 1..8, got '$f'"; done
# the run directory names carry the case only when it is not the bic/westwood validation's single default case
case_in_name=0
if [[ "$losses" != 1 || "$flows" != 1 || "$rtt_ms" != 10 ]]; then case_in_name=1; fi
read -r -a CCS <<<"$ccs"
[[ ${#CCS[@]} -gt 0 ]] || die "--ccs is empty"
for cc in "${CCS[@]}"; do
    [[ "$cc" =~ ^[a-z][a-z0-9_]{0,14}$ ]] || die "bad cc name '$cc'"
    [[ -f "$objdir/$cc.bpf.o" ]] || die "$objdir/$cc.bpf.o missing"
    if [[ -n "${KO[$cc]:-}" ]]; then [[ -f "${KO[$cc]}" ]] || die "--kmod $cc: ${KO[$cc]} not found"; fi
done
for cc in "${!KCC[@]}"; do [[ " ${CCS[*]} " == *" $cc "* ]] || die "--kmod names $cc, which is not in --ccs"; done
[[ $EUID -eq 0 ]] || die "needs root (namespaces, modprobe, bpftool struct_ops)"
for t in ip tc ethtool iperf3 bpftool modprobe insmod rmmod lsmod jq gawk ss sha256sum timeout; do
    command -v "$t" >/dev/null || die "$t not installed"
done
if [[ -e "$out" ]] && [[ -n "$(ls -A "$out" 2>/dev/null)" ]]; then die "--out $out exists and is not empty"; fi
mkdir -p "$out/runs"

# ---------------------------------------------------------------- teardown (always)
REG_ID="" REG_CC=""          # the struct_ops registration of ours that is live now
PIDS=()                      # processes of the current run (started with `ip netns exec ... &`: $! is the program)
# struct_ops_id CC: the registered (state INUSE) tcp_congestion_ops of that name -> its id (empty if none)
# shellcheck source=testbed/cc/struct_ops_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/struct_ops_lib.sh"
# shellcheck disable=SC2317  # also called from the EXIT trap
stop_pids() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    PIDS=()
}
unregister_ours() {
    [[ -n "$REG_ID" ]] || return 0
    if [[ "$(struct_ops_id "$REG_CC")" == "$REG_ID" ]]; then
        bpftool struct_ops unregister id "$REG_ID" >/dev/null || log "warning: could not unregister $REG_CC (id $REG_ID)"
    fi
    REG_ID="" REG_CC=""
}
# shellcheck disable=SC2317  # the EXIT trap
teardown() {
    local rc=$?
    trap - EXIT INT TERM HUP
    stop_pids
    unregister_ours
    local ns
    for ns in "$NS_SND" "$NS_MID" "$NS_RCV"; do ip netns del "$ns" 2>/dev/null || true; done
    exit "$rc"
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# ---------------------------------------------------------------- path
in_ns() { local ns=$1; shift; ip netns exec "$ns" "$@"; }
setup_path() {
    local ns
    for ns in "$NS_SND" "$NS_MID" "$NS_RCV"; do
        ip netns del "$ns" 2>/dev/null || true
        ip netns add "$ns"
        in_ns "$ns" ip link set lo up
        in_ns "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 2>/dev/null || true
    done
    ip link add s0 netns "$NS_SND" type veth peer name ms netns "$NS_MID"
    ip link add mr netns "$NS_MID" type veth peer name r0 netns "$NS_RCV"
    in_ns "$NS_SND" ip addr add "$SND_IP/24" dev s0
    in_ns "$NS_MID" ip addr add "$MID_SND_IP/24" dev ms
    in_ns "$NS_MID" ip addr add "$MID_RCV_IP/24" dev mr
    in_ns "$NS_RCV" ip addr add "$RCV_IP/24" dev r0
    local pair
    for pair in "$NS_SND:s0" "$NS_MID:ms" "$NS_MID:mr" "$NS_RCV:r0"; do
        in_ns "${pair%%:*}" ip link set "${pair#*:}" up
        in_ns "${pair%%:*}" ethtool -K "${pair#*:}" tso off gso off gro off >/dev/null
    done
    in_ns "$NS_SND" ip route add default via "$MID_SND_IP"
    in_ns "$NS_RCV" ip route add default via "$MID_RCV_IP"
    in_ns "$NS_MID" sysctl -qw net.ipv4.ip_forward=1
    # bottleneck towards rcv: 10 Mbit/s token bucket, its child drops 1 % and queues at most 100 packets
    in_ns "$NS_MID" tc qdisc replace dev mr root handle 1: tbf rate 10mbit burst 10000 limit 151400
    in_ns "$NS_MID" tc qdisc replace dev mr parent 1:1 handle 10: netem loss "${LOSSES[0]}%" limit 100
    # ACK path towards snd: the base RTT
    in_ns "$NS_MID" tc qdisc replace dev ms root netem delay "${rtt_ms}ms" limit 1000
    # no cached ssthresh/RTT from the previous run's connection (tcp_metrics), on either end
    in_ns "$NS_SND" sysctl -qw net.ipv4.tcp_no_metrics_save=1
    in_ns "$NS_RCV" sysctl -qw net.ipv4.tcp_no_metrics_save=1
}

# ---------------------------------------------------------------- implementations
available() { [[ " $(cat /proc/sys/net/ipv4/tcp_available_congestion_control) " == *" $1 "* ]]; }
kcc() { echo "${KCC[$1]:-$1}"; }                      # the kernel implementation's CC name
kmod_name() { if [[ -n "${KO[$1]:-}" ]]; then basename "${KO[$1]}" .ko; else echo "tcp_$1"; fi; }
module_loaded() { lsmod | awk -v m="$(kmod_name "$1")" '$1 == m {f=1} END {exit !f}'; }
load_module() { # CC: modprobe tcp_CC, or insmod the --kmod file (once)
    local cc=$1
    if [[ -n "${KO[$cc]:-}" ]]; then
        module_loaded "$cc" || insmod "${KO[$cc]}" || die "insmod ${KO[$cc]} failed"
    else
        modprobe "tcp_$cc" || die "modprobe tcp_$cc failed"
    fi
}
use_kernel() { # CC: the kernel's module, nothing of ours registered under that name
    local cc=$1 id
    id=$(struct_ops_id "$cc")
    [[ -z "$id" ]] || die "a struct_ops '$cc' (id $id) is registered that this script did not register"
    load_module "$cc"
    module_loaded "$cc" || die "$(kmod_name "$cc") is not a loaded module after loading it (built in?)"
    available "$(kcc "$cc")" || die "$(kcc "$cc") not in tcp_available_congestion_control after loading $(kmod_name "$cc")"
}
use_bpf() { # CC OBJ: unload the module, register the port; sets REG_ID/REG_CC
    local cc=$1 obj=$2 res mod
    mod=$(kmod_name "$cc")
    for _ in $(seq 40); do   # sockets of the previous run may hold the module for a moment after they closed
        module_loaded "$cc" || break
        rmmod "$mod" 2>/dev/null && break
        sleep 0.25
    done
    ! module_loaded "$cc" || die "cannot rmmod $mod: $(lsmod | awk -v m="$mod" '$1 == m')"
    ! available "$cc" || die "$cc still available after rmmod (built in, or registered by someone else)"
    ! available "$(kcc "$cc")" || die "$(kcc "$cc") still available after rmmod $mod"
    res=$(bpftool struct_ops register "$obj" 2>&1) || die "bpftool struct_ops register $obj failed: $res"
    REG_ID=$(struct_ops_id "$cc")
    [[ -n "$REG_ID" ]] || die "bpftool struct_ops register $obj did not register '$cc': $(tr '\n' ' ' <<<"$res")"
    REG_CC=$cc
    available "$cc" || die "$cc not in tcp_available_congestion_control after registering"
}

# ---------------------------------------------------------------- one run
# ss CC check -> "matched other other-names" over the detail lines with bytes_acked >= 10 kB: the data connection
# once data flows (iperf3 sets TCP_CONGESTION on it just after connecting, so its first milliseconds may show the
# default CC; the control connection acks a few hundred bytes). analysis/cc_validation.py checks the same way.
cc_check() {
    gawk -v want="$2" '
        /^[ \t]/ && match($0, /bytes_acked:([0-9]+)/, m) && m[1] + 0 >= 10000 {
            name = ""
            for (i = 1; i <= NF; i++) {
                if ($i ~ /:/ || $i ~ /^(ts|sack|ecn|ecnseen|fastopen|app_limited|cong_alg)$/) continue
                if ($i ~ /^[a-z][a-z0-9_]*$/) name = $i
                break
            }
            if (name == want) ok++; else { bad++; names[name == "" ? "?" : name] = 1 }
        }
        END { s = ""; for (n in names) s = s (s == "" ? "" : ",") n; printf "%d %d %s\n", ok, bad, s }' "$1"
}

# The ss sampler, run by `bash -c` in snd: a block every $2 us on a fixed schedule (the next block is due one step
# after the previous one was due, not after it ended). Under TCG every fork+exec costs ~40 ms and `ss` ~75 ms, so
# the wait is bash's own `read -t` on a FIFO nobody writes to (no `sleep` process); a block that ends after the next
# one is due starts the next at once and the schedule restarts from there.
# shellcheck disable=SC2016  # expanded by the sampler's own shell
SAMPLER='fifo=$(mktemp -u /tmp/ccv-tick.XXXXXX); mkfifo "$fifo"; exec 3<>"$fifo"; rm -f "$fifo"
next=${EPOCHREALTIME/./}
while :; do
    echo "# ts=$EPOCHREALTIME"; ss -tin dst "$1"
    next=$((next + $2)); now=${EPOCHREALTIME/./}; d=$((next - now))
    if (( d > 0 )); then read -r -t "$((d / 1000000)).$(printf %06d $((d % 1000000)))" -u 3 || true; else next=$now; fi
done'
ss_step_us=$(awk -v s="$ss_interval" 'BEGIN {printf "%d", s * 1000000}')
(( ss_step_us >= 1000 )) || die "--ss-interval-s must be at least 0.001"

FAILED=0
run_one() { # REP CC IMPL ORDER LOSS FLOWS
    local rep=$1 cc=$2 impl=$3 order=$4 loss=$5 nflows=$6 dir obj="" sha="" id="" t0 t1 crc=0 srv smp cli klog name tag=""
    local guard=null
    (( case_in_name )) && tag="-l${loss}-f${nflows}"
    dir=$(printf '%s/runs/rep%02d-%s%s-%s' "$out" "$rep" "$cc" "$tag" "$impl")
    mkdir -p "$dir"
    in_ns "$NS_MID" tc qdisc change dev mr parent 1:1 handle 10: netem loss "${loss}%" limit 100
    if [[ $impl == kernel ]]; then
        use_kernel "$cc"
        name=$(kcc "$cc")
        [[ -z "${KO[$cc]:-}" ]] || sha=$(sha256sum "${KO[$cc]}" | cut -d' ' -f1)
    else
        name=$cc
        obj="$objdir/$cc.bpf.o"
        use_bpf "$cc" "$obj"
        id=$REG_ID
        sha=$(sha256sum "$obj" | cut -d' ' -f1)
    fi
    local lsmod_txt objname=""
    if [[ -n "$obj" ]]; then objname=$(basename "$obj"); elif [[ -n "${KO[$cc]:-}" ]]; then objname=$(basename "${KO[$cc]}"); fi
    lsmod_txt=$(lsmod | grep tcp_ || true)
    in_ns "$NS_SND" ip tcp_metrics flush all 2>/dev/null || true
    in_ns "$NS_RCV" ip tcp_metrics flush all 2>/dev/null || true

    ip netns exec "$NS_RCV" iperf3 -s -1 -B "$RCV_IP" -p "$PORT" >"$dir/server.log" 2>&1 &
    srv=$!; PIDS+=("$srv")
    for _ in $(seq 100); do
        [[ -n "$(in_ns "$NS_RCV" ss -Hltn "sport = :$PORT")" ]] && break
        sleep 0.1
    done
    ip netns exec "$NS_SND" bash -c "$SAMPLER" sampler "$RCV_IP" "$ss_step_us" >"$dir/ss.txt" 2>/dev/null &
    smp=$!; PIDS+=("$smp")
    # the kernel log of this run, read as it is written (a module's printk, e.g. PCC-Kernel's per-interval lines, can
    # outrun the ring buffer): cleared first, followed into kernel.log until the run ends
    dmesg -C 2>/dev/null || true
    dmesg -w >"$dir/kernel.log" 2>/dev/null &
    klog=$!; PIDS+=("$klog")
    t0=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
    ip netns exec "$NS_SND" timeout "$((duration + 60))" iperf3 -c "$RCV_IP" -p "$PORT" -C "$name" -P "$nflows" \
        -t "$duration" --json \
        >"$dir/iperf3.json" 2>"$dir/client.err" &
    cli=$!; PIDS+=("$cli")
    sleep 3
    { echo "## lsmod | grep tcp_"; lsmod | grep tcp_ || true
      echo "## bpftool struct_ops show"; bpftool struct_ops show 2>&1 || true
      echo "## tcp_available_congestion_control"; cat /proc/sys/net/ipv4/tcp_available_congestion_control
      echo "## ss -tin (snd)"; in_ns "$NS_SND" ss -tin dst "$RCV_IP"; } >"$dir/during.txt" 2>&1
    wait "$cli" || crc=$?
    t1=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
    sleep 0.3
    kill "$smp" 2>/dev/null || true; wait "$smp" 2>/dev/null || true
    kill "$klog" 2>/dev/null || true; wait "$klog" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$srv" 2>/dev/null || break; sleep 0.1; done
    kill "$srv" 2>/dev/null || true; wait "$srv" 2>/dev/null || true
    PIDS=()
    if [[ $impl == bpf ]]; then
        # the kernel-defect guard's repair counters of this registration (cc_guard.h; null for an object without it)
        guard=$(guard_counters "$cc" 2>/dev/null) || guard=null
        [[ -n "$guard" ]] || guard=null
        unregister_ours
        [[ -z "$(struct_ops_id "$cc")" ]] || die "struct_ops $cc (id $id) still registered after unregister"
    fi

    local ok bad names check=pass why="" mbps retr
    read -r ok bad names < <(cc_check "$dir/ss.txt" "$name")
    if [[ $crc -ne 0 ]]; then check=fail; why="iperf3 exited $crc: $(head -c 300 "$dir/client.err" | tr '\n' ' ')"
    elif ! jq -e '.end.sum_received.bits_per_second' "$dir/iperf3.json" >/dev/null 2>&1; then check=fail; why="iperf3 JSON has no end.sum_received"
    elif [[ $bad -gt 0 ]]; then check=fail; why="ss shows other CC names on the data connection: $names"
    elif [[ $ok -eq 0 ]]; then check=fail; why="ss shows no sample of the data connection naming $name"
    fi
    [[ $check == pass ]] || { FAILED=1; log "run $(basename "$dir") FAILED: $why"; }
    jq -n --argjson rep "$rep" --arg cc "$cc" --arg impl "$impl" --argjson order "$order" --arg name "$name" \
        --argjson loss "$loss" --argjson nflows "$nflows" --argjson rtt "$rtt_ms" \
        --arg id "$id" --arg obj "$objname" \
        --arg sha "$sha" --arg uname "$(uname -r)" \
        --arg lsmod "$lsmod_txt" --arg t0 "$t0" --arg t1 "$t1" --argjson dur "$duration" --arg ssi "$ss_interval" \
        --argjson crc "$crc" --argjson guard "$guard" --argjson ok "$ok" --argjson bad "$bad" --arg names "$names" --arg check "$check" --arg why "$why" \
        '{rep:$rep, cc:$cc, implementation:$impl, order_in_rep:$order, cc_name:$name, loss_pct:$loss, flows:$nflows,
          ack_path_delay_ms:$rtt,
          struct_ops_id:(if $id == "" then null else ($id|tonumber) end),
          object:(if $obj == "" then null else $obj end), object_sha256:(if $sha == "" then null else $sha end),
          uname_r:$uname, lsmod_tcp:$lsmod, started_utc:$t0, ended_utc:$t1, duration_s:$dur,
          ss_interval_s:($ssi|tonumber), iperf3_exit:$crc, cc_guard:$guard,
          ss_cc_check:{expected:$name, matched_lines:$ok, other_lines:$bad,
                       other_names:(if $names == "" then [] else ($names|split(",")) end)},
          check:$check, reason:(if $why == "" then null else $why end)}' >"$dir/run.json"
    mbps=$(jq -r '(.end.sum_received.bits_per_second // 0) / 1e6 | . * 100 | round / 100' "$dir/iperf3.json" 2>/dev/null || echo "?")
    retr=$(jq -r '.end.sum_sent.retransmits // "?"' "$dir/iperf3.json" 2>/dev/null || echo "?")
    log "$(basename "$dir"): $mbps Mbit/s, $retr retransmits, ss $name lines $ok/$((ok + bad))${id:+, struct_ops id $id}"
}

# ---------------------------------------------------------------- main
log "kernel $(uname -r); CCs: ${CCS[*]}; $reps reps x $duration s; losses ${LOSSES[*]} %; flows ${FLOWS[*]}; ACK-path delay $rtt_ms ms; ss every $ss_interval s"
for cc in "${CCS[@]}"; do   # start from a clean slate: nothing of these names registered as struct_ops
    [[ -z "$(struct_ops_id "$cc")" ]] || die "struct_ops '$cc' already registered (id $(struct_ops_id "$cc")): not started by this script"
    load_module "$cc" 2>/dev/null || true
done
setup_path
ping_txt=$(in_ns "$NS_SND" ping -c 5 -i 0.2 "$RCV_IP" 2>&1 | tail -2 || true)
jq -n --arg uname "$(uname -a)" --arg osr "$(. /etc/os-release && echo "$PRETTY_NAME")" \
    --arg debver "$(cat /proc/version)" --arg iperf "$(iperf3 --version 2>&1 | sed -n 1p)" \
    --arg bpftool "$(bpftool version 2>&1 | tr '\n' ' ')" --arg ss "$(ss -V 2>&1)" --argjson nproc "$(nproc)" \
    --arg hz "$(grep -h '^CONFIG_HZ=' "/boot/config-$(uname -r)" 2>/dev/null || true)" \
    --arg qdisc_rcv "$(in_ns "$NS_MID" tc qdisc show dev mr)" --arg qdisc_snd "$(in_ns "$NS_MID" tc qdisc show dev ms)" \
    --arg tcp_sysctl "$(in_ns "$NS_SND" sysctl -a 2>/dev/null | grep '^net.ipv4.tcp_' || true)" \
    --arg allowed "$(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control)" --arg ping "$ping_txt" \
    --arg ccs "${CCS[*]}" --argjson reps "$reps" --argjson dur "$duration" --arg ssi "$ss_interval" \
    --arg losses "${LOSSES[*]}" --arg flows "${FLOWS[*]}" --argjson rtt "$rtt_ms" \
    --argjson kmods "$(for c in "${!KCC[@]}"; do jq -n --arg c "$c" --arg n "${KCC[$c]}" --arg k "${KO[$c]}" \
        --arg sha "$(sha256sum "${KO[$c]}" | cut -d' ' -f1)" --arg mi "$(modinfo "${KO[$c]}" 2>/dev/null | tr '\n' ';')" \
        '{($c): {cc_name:$n, ko:($k|split("/")|last), ko_sha256:$sha, modinfo:$mi}}'; done | jq -s 'add // {}')" \
    --arg started "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    '{uname:$uname, os:$osr, proc_version:$debver, iperf3:$iperf, bpftool:$bpftool, iproute2_ss:$ss, nproc:$nproc,
      config_hz:$hz, qdisc_mid_to_rcv:$qdisc_rcv, qdisc_mid_to_snd:$qdisc_snd, snd_tcp_sysctl:$tcp_sysctl,
      tcp_allowed_congestion_control:$allowed, ping_snd_to_rcv:$ping, ccs:($ccs|split(" ")), reps:$reps,
      duration_s:$dur, ss_interval_s:($ssi|tonumber), ack_path_delay_ms:$rtt,
      losses_pct:($losses|split(" ")|map(tonumber)), flows:($flows|split(" ")|map(tonumber)), kernel_modules:$kmods,
      started_utc:$started}' >"$out/setup.json"
log "path up: $(tr '\n' ' ' <<<"$ping_txt")"

for rep in $(seq "$reps"); do
    for loss in "${LOSSES[@]}"; do
        for nf in "${FLOWS[@]}"; do
            for cc in "${CCS[@]}"; do
                if (( rep % 2 == 1 )); then order=(kernel bpf); else order=(bpf kernel); fi
                run_one "$rep" "$cc" "${order[0]}" 1 "$loss" "$nf"
                run_one "$rep" "$cc" "${order[1]}" 2 "$loss" "$nf"
            done
        done
    done
done
jq --arg t "$(date -u +%Y-%m-%dT%H:%M:%SZ)" '. + {ended_utc:$t}' "$out/setup.json" >"$out/setup.json.tmp" \
    && mv "$out/setup.json.tmp" "$out/setup.json"
log "done: $(find "$out/runs" -name run.json | wc -l) runs in $out"
exit "$FAILED"
