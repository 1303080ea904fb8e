#!/usr/bin/env bash
# One experiment on the vagrant testbed -> one run directory ON THE HOST, same layout as the netns backend
# (docs/architecture.md). Same options and exit codes as capture_tools/run_experiment.sh:
#   run_experiment.sh --backend vagrant --out RUN_DIR --experiment E --cc C [--cc2 C2] [--cbr-mbps R]
#       --path-mode M --link-delay-ms D --loss-pct L --duration-s T [--flow2-offset-s S] [--path-skew-ms K] [--rep N]
# exit 0 = COMPLETE, 3 = SKIPPED, other = failed.
# The capture steps run ON the VMs over ssh (testbed/vagrant/backend.sh exec): tcpdump on router1/router2, iperf3 on
# src*/dst*, `ss -ti` sampling on src*; the files are copied back with `cat` over ssh. The VMs stay up between runs
# (only `backend.sh down` destroys them). Clock offsets of all VMs vs the host are measured (clock_offsets.py) and
# stored in meta.json "clock".
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BE="$HERE/backend.sh"
# shellcheck source=capture_tools/experiment_args.sh
source "$HERE/../../capture_tools/experiment_args.sh"
parse_experiment_args vagrant "$@"
if [[ -n "${MPCC_SS_INTERVAL_S:-}" && ! "$MPCC_SS_INTERVAL_S" =~ ^(0\.[0-9]*[1-9][0-9]*|[1-9][0-9]*(\.[0-9]+)?)$ ]]; then
    die "MPCC_SS_INTERVAL_S must be a positive number of seconds, got '$MPCC_SS_INTERVAL_S'"
fi

mkdir -p "$out/iperf3" "$out/ss"
out=$(cd "$out" && pwd)
LOG="$out/capture.log"
exec 3>>"$LOG"
say() { echo "[$(date -u +%H:%M:%S.%N)] $*" >&3; }
trap 'say "failed at line $LINENO: $BASH_COMMAND"' ERR
on() { local n=$1; shift; bash "$BE" exec "$n" -- bash -c "$*"; }   # run a shell string as root on a VM
G=/dev/shm/mpcc-run   # run directory inside each VM (tmpfs: no emulated disk I/O per captured packet)
GUEST_CCCTL=/opt/mpcc/testbed/cc/ccctl.sh   # the testbed's copy on every VM (backend.sh GUEST_TB)

flow2=0
[[ -n "$cc2" || -n "$cbr_mbps" ]] && flow2=1
fq_opt=()
[[ "$cc" == bbr || "$cc2" == bbr ]] && fq_opt=(--fq)

started=()   # "NODE PID" of background guest processes to stop at teardown
held=()      # "NODE CC HOLDER-PID" of congestion controls acquired with ccctl.sh, released at teardown
teardown() {
    local rc=$?
    # further INT/TERM must not cut the teardown short: a killed runner's parent-death signal can arrive more than
    # once (once per exiting thread of the runner), and a user may press Ctrl-C twice
    trap - EXIT
    trap '' INT TERM
    local e
    for e in "${started[@]}"; do
        # shellcheck disable=SC2086
        on ${e%% *} "kill -INT -- -${e#* } 2>/dev/null; sleep 0.5; kill -- -${e#* } 2>/dev/null; true" >/dev/null 2>&1 || true
    done
    for e in "${held[@]}"; do
        read -r n c h <<<"$e"
        on "$n" "bash $GUEST_CCCTL release $c $h" >/dev/null 2>&1 || true
    done
    exit "$rc"
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

start_time=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
say "up: $path_mode delay=$link_delay_ms loss=$loss_pct skew=$path_skew_ms (vagrant)"
qm_opt=()
[[ -z "$queue_model" ]] || qm_opt=(--queue-model "$queue_model")
bash "$BE" up --path-mode "$path_mode" --link-delay-ms "$link_delay_ms" --loss-pct "$loss_pct" --path-skew-ms "$path_skew_ms" "${fq_opt[@]}" "${qm_opt[@]}" 2>>"$LOG"
features=$(bash "$BE" features 2>>"$LOG")
# the senders' loss detection: set on every run (the VMs outlive runs; unset means the kernel's default, 1); without
# bit 0x1 it asks for the RFC 6675 detection, which a guest kernel from 6.17 no longer has: SKIPPED
if [[ -n "$tcp_recovery" ]]; then
    why=$(tcp_recovery_blocker "$(on src1 "uname -r")" "src1's kernel")
    if [[ -n "$why" ]]; then echo "$why" > "$out/SKIPPED"; say "SKIPPED: $why"; echo "$why" >&2; exit 3; fi
fi
for n in src1 src2; do on "$n" "sysctl -qw net.ipv4.tcp_recovery=${tcp_recovery:-1}" >>"$LOG" 2>&1; done

host_sched=$(bash "$BE" host-sched 2>>"$LOG") || host_sched='null'
jq -e . >/dev/null 2>&1 <<<"$host_sched" || host_sched='null'
# `ss -ti` sampling interval: every sample forks `ss` on the sender VM; under qemu TCG that costs the VM ~1-2 ms of
# CPU per sample on a host whose cores the 6 busy VMs already saturate, so TCG guests are sampled every 0.5 s
# (MPCC_SS_INTERVAL_S overrides; the netns backend samples every 0.1 s)
if [[ -n "${MPCC_SS_INTERVAL_S:-}" ]]; then
    ss_interval_s=$MPCC_SS_INTERVAL_S
elif [[ "$(jq -r '.domain_type? // empty' <<<"$host_sched")" == qemu ]]; then
    ss_interval_s=0.5
else
    ss_interval_s=0.1
fi
say "measuring clock offsets"
clock=$(bash "$BE" clock-offsets 2>>"$LOG") || clock='null'

ifof() { on "$1" "ip -o -4 addr show | awk -v a=$2 '{split(\$4,x,\"/\"); if (x[1]==a) print \$2}'"; }
r1_if1=$(ifof router1 10.1.1.1); r2_if1=$(ifof router2 10.4.1.1)
r1_if2=$(ifof router1 10.1.2.1); r2_if2=$(ifof router2 10.4.2.1)
[[ -n "$r1_if1" && -n "$r2_if1" ]] || die "cannot find the capture interfaces on router1/router2"

for n in router1 router2 src1 src2 dst1 dst2; do on "$n" "rm -rf $G && mkdir -p $G"; done
bg() { # NODE NAME CMD: start CMD detached (own session and process group) on NODE, remember its pid (= pgid)
    local pid
    pid=$(on "$1" "setsid nohup bash -c $(printf '%q' "$3") > $G/$2.out 2> $G/$2.err < /dev/null & echo \$!")
    [[ "$pid" =~ ^[0-9]+$ ]] || die "could not start $2 on $1"
    started+=("$1 $pid")
    echo "$pid"
}
# Each flow's CC on its sender VM (flow 1: src1, flow 2: src2), by testbed/cc/ccctl.sh as on the netns backend: the
# guest kernel's own (node-up.sh loads Debian's tcp_bic/tcp_westwood modules), else the BPF port built on the host
# (shipped with the testbed), else SKIPPED with the reason. A sleeper process on the VM holds the registration for
# the run; teardown kills it and releases (the last release unregisters by id).
cc_impl='{}'
for pair in "src1 $cc" ${cc2:+"src2 $cc2"}; do
    node=${pair% *} c=${pair#* }
    holder=$(bg "$node" "cc-holder-$c" "sleep 1000000")
    held+=("$node $c $holder")
    rc=0
    info=$(on "$node" "bash $GUEST_CCCTL acquire $c $holder" 2>>"$LOG") || rc=$?
    if [[ $rc -ne 0 && $rc -ne 3 ]]; then   # a failure, not "this kernel cannot have it": incomplete, redone on resume
        say "cc $c on $node: ccctl.sh acquire failed (exit $rc): the run is incomplete"
        echo "error: $c: ccctl.sh acquire on $node failed (exit $rc, see capture.log); a resume records the run again" >&2
        exit 1
    fi
    if [[ $rc -eq 3 ]]; then
        echo "$info" > "$out/SKIPPED"
        say "SKIPPED: $info"
        echo "$info" >&2
        exit 3
    fi
    cc_impl=$(jq -c --argjson i "$info" --arg n "$node" '. + {($i.cc): ($i | del(.cc) + {node: $n})}' <<<"$cc_impl")
    say "cc $c on $node: $(jq -r .implementation <<<"$info")"
done

rr_counts() { # ROUTER -> JSON {path1_pkts, path2_pkts}: tx packets of its path-1/path-2 interfaces (TEQL or nft)
    local p1 p2
    read -r p1 p2 < <(bash "$BE" path-counters "$1")
    printf '{"path1_pkts": %d, "path2_pkts": %d}\n' "$p1" "$p2"
}
rr_before1=$(rr_counts router1); rr_before2=$(rr_counts router2)
rtt_med=$(on src1 "ping -n -c 10 -i 0.1 10.4.1.2 || true" | sed -n 's/.*time=\([0-9.]*\).*/\1/p' | sort -n \
          | awk 'NF{v[++n]=$1} END{if(n==0){print "null"} else if(n%2){print v[(n+1)/2]} else {print (v[n/2]+v[n/2+1])/2}}')

tcpd=()
tcpd+=("router1 $(bg router1 tcpdump-r1 "tcpdump -i $r1_if1 -s 128 -n -w $G/router1.pcap")")
tcpd+=("router2 $(bg router2 tcpdump-r2 "tcpdump -i $r2_if1 -s 128 -n -w $G/receiver.pcap")")
if [[ $flow2 == 1 ]]; then
    tcpd+=("router1 $(bg router1 tcpdump-r1f2 "tcpdump -i $r1_if2 -s 128 -n -w $G/router1-flow2.pcap")")
    tcpd+=("router2 $(bg router2 tcpdump-r2f2 "tcpdump -i $r2_if2 -s 128 -n -w $G/receiver-flow2.pcap")")
fi
srv1=$(bg dst1 srv1 "iperf3 -s -1 -p 5201 --json > $G/flow1-server.json")
srv2=""
[[ $flow2 == 1 ]] && srv2=$(bg dst2 srv2 "iperf3 -s -1 -p 5202 --json > $G/flow2-server.json")
sleep 2   # tcpdump and iperf3 start slowly on TCG guests
# ss sampler, one fork per sample (under TCG every fork+exec costs the sender VM milliseconds): bash's EPOCHREALTIME
# (bash >= 5; `date` on older guests) and a read timeout on a private FIFO instead of /bin/sleep
# shellcheck disable=SC2016  # $EPOCHREALTIME and $(date) expand in the guest
ssl='f=$(mktemp -u /dev/shm/mpcc-tick.XXXXXX); mkfifo "$f"; exec 9<>"$f"; rm -f "$f"; while :; do echo "# ts=${EPOCHREALTIME:-$(date +%s.%N)}"; ss -tin dst DST; read -r -t INTERVAL -u 9 || :; done'
ssl=${ssl/INTERVAL/$ss_interval_s}
ss1=$(bg src1 ss1 "${ssl/DST/10.4.1.2} > $G/ss-flow1.txt")
say "flow1 start cc=$cc"
on src1 "iperf3 -c 10.4.1.2 -p 5201 -C $cc -t $duration_s --json" > "$out/iperf3/flow1-client.json" 2>>"$LOG" &
c1=$!
c2="" ss2=""
if [[ $flow2 == 1 ]]; then
    sleep "$flow2_offset_s"
    d2=$((duration_s - flow2_offset_s))
    if [[ -n "$cc2" ]]; then
        ss2=$(bg src2 ss2 "${ssl/DST/10.4.2.2} > $G/ss-flow2.txt")
        say "flow2 start cc2=$cc2"
        on src2 "iperf3 -c 10.4.2.2 -p 5202 -C $cc2 -t $d2 --json" > "$out/iperf3/flow2-client.json" 2>>"$LOG" &
    else
        say "flow2 start udp cbr=$cbr_mbps"
        on src2 "iperf3 -c 10.4.2.2 -p 5202 -u -b ${cbr_mbps}M ${udp_len_bytes:+-l $udp_len_bytes} -t $d2 --json" > "$out/iperf3/flow2-client.json" 2>>"$LOG" &
    fi
    c2=$!
fi
wait "$c1" || { say "flow1 client failed"; exit 1; }
[[ -z "$c2" ]] || wait "$c2" || { say "flow2 client failed"; exit 1; }
# servers exit by themselves after one test (-1)
for e in "dst1 $srv1" ${srv2:+"dst2 $srv2"}; do
    on "${e%% *}" "for i in \$(seq 100); do kill -0 ${e#* } 2>/dev/null || exit 0; sleep 0.1; done; kill -- -${e#* }" >/dev/null 2>&1 || true
done
say "flows done"
on src1 "kill -- -$ss1" || true
[[ -z "$ss2" ]] || on src2 "kill -- -$ss2" || true
rr_after1=$(rr_counts router1); rr_after2=$(rr_counts router2)
for e in "${tcpd[@]}"; do   # SIGINT lets tcpdump flush
    on "${e%% *}" "kill -INT -- -${e#* }; for i in \$(seq 50); do kill -0 ${e#* } 2>/dev/null || exit 0; sleep 0.1; done; kill -- -${e#* }" >/dev/null 2>&1 || true
done
started=()

# copy back (same names as the netns backend)
fetch() { on "$1" "cat $G/$2" > "$out/$3"; }
fetch router1 router1.pcap router1.pcap
fetch router2 receiver.pcap receiver.pcap
if [[ $flow2 == 1 ]]; then
    fetch router1 router1-flow2.pcap router1-flow2.pcap
    fetch router2 receiver-flow2.pcap receiver-flow2.pcap
    fetch dst2 flow2-server.json iperf3/flow2-server.json
fi
fetch dst1 flow1-server.json iperf3/flow1-server.json
fetch src1 ss-flow1.txt ss/flow1.txt
[[ -z "$ss2" ]] || fetch src2 ss-flow2.txt ss/flow2.txt
for n in router1 router2 src1 src2 dst1 dst2; do
    for f in tcpdump-r1 tcpdump-r2 tcpdump-r1f2 tcpdump-r2f2 srv1 srv2; do
        on "$n" "test -s $G/$f.err && sed 's/^/[$n $f] /' $G/$f.err || true" >&3 2>/dev/null || true
    done
done

qd=""
for n in switch1 switch2 src1 src2; do qd+="== $n ==\n$(on "$n" "tc -s qdisc show")\n"; done
kernels=$(for n in src1 src2 router1 switch1 switch2 router2 dst1 dst2; do printf '%s\t%s\n' "$n" "$(on "$n" "uname -r")"; done \
          | jq -Rn '[inputs | split("\t") | {(.[0]): .[1]}] | add')
params='{}'
[[ -f "$out/params.json" ]] && params=$(cat "$out/params.json")
rr1=$(jq -n --argjson a "$rr_before1" --argjson b "$rr_after1" '{path1_pkts: ($b.path1_pkts-$a.path1_pkts), path2_pkts: ($b.path2_pkts-$a.path2_pkts)}')
rr2=$(jq -n --argjson a "$rr_before2" --argjson b "$rr_after2" '{path1_pkts: ($b.path1_pkts-$a.path1_pkts), path2_pkts: ($b.path2_pkts-$a.path2_pkts)}')
jq -n --argjson params "$params" --argjson features "$features" --arg start "$start_time" --arg kernel "$(on src1 "uname -r")" \
   --argjson kernels "$kernels" --argjson clock "$clock" --argjson host_sched "$host_sched" --arg ssi "$ss_interval_s" \
   --argjson burst "$(on switch1 "jq .tbf_burst_bytes /run/mpcc-node.json" 2>/dev/null || echo null)" --argjson rr1 "$rr1" --argjson rr2 "$rr2" --argjson rtt "$rtt_med" \
   --arg qd "$(printf '%b' "$qd")" --arg exp "$experiment" --arg cc "$cc" --arg cc2 "$cc2" --arg cbr "$cbr_mbps" \
   --arg pm "$path_mode" --argjson d "$link_delay_ms" --argjson l "$loss_pct" --argjson t "$duration_s" \
   --argjson off "$flow2_offset_s" --argjson k "$path_skew_ms" --argjson rep "$rep" \
   --arg sysctls "$(on src1 "sysctl net.ipv4.tcp_sack net.ipv4.tcp_dsack net.ipv4.tcp_timestamps net.ipv4.tcp_window_scaling net.ipv4.tcp_recovery")" \
   --arg iperf3v "$(on src1 "iperf3 --version 2>&1 | sed -n 1p")" --arg tcpdumpv "$(on router1 "tcpdump --version 2>&1 | sed -n 1p")" \
   --arg host_kernel "$(uname -r)" --arg host "$(uname -n)" --arg provider "${VAGRANT_DEFAULT_PROVIDER:-libvirt}" --argjson cc_impl "$cc_impl" \
   --arg qm "$queue_model" --arg ulen "$udp_len_bytes" --arg rec "$tcp_recovery" \
   '($pm == "multipath") as $mp
    | (if $mp then $d + $k else $d end) as $exp_rtt
    | (if $rtt == null then false else (($rtt - $exp_rtt) <= 3 and ($exp_rtt - $rtt) <= 1) end) as $rtt_ok
    | ($rr1 + {parity_ok: (if $mp then (($rr1.path1_pkts - $rr1.path2_pkts) | fabs) <= ([2, ($rr1.path1_pkts + $rr1.path2_pkts) * 0.001] | max) and $rr1.path1_pkts > 0 else null end)}) as $r1
    | ($rr2 + {parity_ok: (if $mp then (($rr2.path1_pkts - $rr2.path2_pkts) | fabs) <= ([2, ($rr2.path1_pkts + $rr2.path2_pkts) * 0.001] | max) and $rr2.path1_pkts > 0 else null end)}) as $r2
    | {params: ($params + {experiment:$exp, cc:$cc, cc2:(if $cc2=="" then null else $cc2 end),
       cbr_mbps:(if $cbr=="" then null else ($cbr|tonumber) end), path_mode:$pm, link_delay_ms:$d, loss_pct:$l,
       duration_s:$t, flow2_offset_s:$off, path_skew_ms:$k, rep:$rep, backend:"vagrant",
       udp_len_bytes:(if $ulen == "" then null else ($ulen|tonumber) end),
       tcp_recovery:(if $rec == "" then null else ($rec|tonumber) end),
       queue_model:(if $qm != "" then $qm elif $features.mechanism.delay == "netem" then "tbf-netem"
                    else "fifo-after-delay" end)}),
     backend:"vagrant", vagrant_provider:$provider, kernel:$kernel, kernels:$kernels, host:$host, host_kernel:$host_kernel,
     start_time:$start, sysctls:($sysctls|split("\n")), qdisc:$qd,
     tool_versions:{iperf3:$iperf3v, tcpdump:$tcpdumpv},
     delay_mechanism:$features.mechanism.delay, round_robin_mechanism:(if $mp then $features.mechanism.round_robin else "none" end),
     fq:(if $features.fq then "fq" else "fq: not available" end), features:$features, cc_impl:$cc_impl,
     clock:$clock, host_sched:$host_sched, ss_interval_s:($ssi|tonumber), tbf_burst_bytes:$burst,
     self_check:{rtt_median_ms:$rtt, expected_rtt_ms:$exp_rtt, rtt_ok:$rtt_ok,
                 round_robin:{router1:$r1, router2:$r2},
                 ok:($rtt_ok and ($r1.parity_ok != false) and ($r2.parity_ok != false)),
                 note:"round-robin counts: tx packets of the two switch-facing interfaces over the whole run (router1: data direction, router2: ACKs); parity: difference <= max(2, 0.1 %); rtt: 10 pings before the flows, +3/-1 ms tolerance for TCG guests"},
     status:"complete"}' > "$out/meta.json.tmp"
mv "$out/meta.json.tmp" "$out/meta.json"
date -u +%Y-%m-%dT%H:%M:%SZ > "$out/COMPLETE"
say "COMPLETE"
