#!/usr/bin/env bash
# Study 003's Table 2 scenarios under two switch queue disciplines, in ONE Debian 12 VM (kernel 6.1: netem and
# fq_codel, which this host's kernel lacks), booted directly with qemu-system-x86_64 under TCG (testbed/lib/qemu_box.sh,
# as testbed/cc/validate-vm.sh and testbed/delayshim/validate-vm.sh boot it). docs/qdisc-003.md describes the question,
# the arms and the results.
#   1. makes sure the project's Debian box exists (testbed/vagrant/build-box.sh: revision 5 has mptcpize)
#   2. boots it (a throw-away qcow2 overlay; the box is not modified), ssh on a forwarded port of 127.0.0.1
#   3. copies the repository's topology code into the guest as it is (testbed/dualpath.sh, testbed/lib/nsbuild.sh,
#      testbed/nodes/switch.sh, testbed/nodes/host.sh, testbed/families/003/topology.json) with
#      testbed/qdisc003/run-guest.sh, and runs the guest script ONE RUN PER CALL: every (rep, scenario, arm) of the
#      plan, each run copied back into DIR/runs/<run>/ at once. Scenarios are Table 2's four, (mode, queue_pkts) in
#      {tcp_path1, mptcp} x --queues; per rep the scenarios run in an order shuffled by --seed and rep, and each
#      scenario's arms run back to back, the first arm alternating by rep and scenario (drift hits every arm alike)
#   4. kills the VM at the end (also on error or interrupt)
# Arms (--arms, testbed/dualpath.sh --queue-disc): netem = htb class + `netem delay D limit Q` leaf at each switch
# egress (Mininet TCLink's recipe); fq_codel = htb class + `fq_codel limit Q` leaf, the path's two-way delay a netem on
# the server's egress towards the path (limit 100000); pfifo = htb class + `pfifo limit Q`, delayed as fq_codel.
# An interrupted run continues with --resume DIR: the plan is read from DIR/params.json (options given again must
# agree), complete runs are kept, a run without COMPLETE is moved to DIR/incomplete/ (never deleted) and run again.
# Results: DIR/runs/<run>/ (testbed/qdisc003/run-guest.sh), DIR/params.json (the plan), DIR/meta.json (host, VM,
# box, sha256 of the scripts, timings per session), DIR/setup.json (guest), DIR/progress.log, DIR/console.log.
# Analyse: python -m analysis.qdisc_vm003 DIR
# Needs root (build-box.sh runs mmdebstrap) and: qemu-system-x86 qemu-utils mmdebstrap e2fsprogs vagrant
# openssh-client jq (Debian: apt-get install -y --no-install-recommends ...).
# Exit 0 when every run is complete, 1 when a run failed a check (see its run.log; --resume runs it again), 2 on
# usage or set-up errors.
# usage: run-vm.sh --out DIR [--resume] [--reps 3] [--duration-s 60] [--arms "netem fq_codel"] [--queues "1000 50"]
#                  [--modes "tcp_path1 mptcp"] [--ping-interval-s 1] [--cc cubic] [--seed N] [--max-runs N]
#                  [--box NAME] [--memory-mb 2048] [--cpus 2] [--boot-timeout-s 900]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
# shellcheck source=testbed/lib/qemu_box.sh
source "$ROOT/testbed/lib/qemu_box.sh"   # qbox_key, qbox_prepare, qbox_boot, gssh, qbox_teardown, qbox_traps
# shellcheck source=testbed/lib/qemu_runs.sh
source "$ROOT/testbed/lib/qemu_runs.sh"  # qbox_parse_args, qbox_check_vm_args, qbox_require_host, qbox_pending, qbox_run_todo
GUEST_FILES=(testbed/dualpath.sh testbed/lib/nsbuild.sh testbed/nodes/switch.sh testbed/nodes/host.sh
             testbed/families/003/topology.json testbed/qdisc003/run-guest.sh)
box="${MPCC_VAGRANT_BOX:-mpcc/debian12}" mem_mb=2048 cpus=2 boot_timeout=900 out="" resume=0 max_runs=0
GUEST_IN=/tmp/qd003-in GUEST_OUT=/var/tmp/qd003-out
MATRIX=(reps duration arms queues modes ping_interval cc seed)
declare -A P=() DEF=([reps]=3 [duration]=60 [arms]="netem fq_codel" [queues]="1000 50" [modes]="tcp_path1 mptcp"
    [ping_interval]=1 [cc]=cubic [seed]="")

die() { echo "error: $*" >&2; exit 2; }
log() { echo "[$(date -u +%H:%M:%S)] qdisc003-vm: $*" >&2; }
usage() { sed -n '/^# usage:/,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }
qbox_parse_args "$@"
# ---- every argument is checked before anything runs as root
[[ -n "$out" ]] || die "--out DIR is required"
if [[ -e "$out" && ! -d "$out" ]]; then die "--out $out exists and is not a directory"; fi
command -v jq >/dev/null || die "jq is not installed (apt-get install -y jq)"
if (( resume )); then
    qbox_resume_plan "$out" plan
else
    if [[ -d "$out" ]] && [[ -n "$(ls -A "$out")" ]]; then die "--out $out exists and is not empty (continue it with --resume)"; fi
    for k in "${MATRIX[@]}"; do [[ -v "P[$k]" ]] || P[$k]=${DEF[$k]}; done
fi
reps=${P[reps]} duration=${P[duration]} ping_interval=${P[ping_interval]} cc=${P[cc]} seed=${P[seed]}
[[ "$reps" =~ ^[1-9][0-9]{0,2}$ ]] || die "--reps must be an integer 1..999, got '$reps'"
if ! [[ "$duration" =~ ^[1-9][0-9]{0,4}$ ]] || (( duration < 5 )); then die "--duration-s must be an integer 5..99999, got '$duration'"; fi
read -r -a ARMS <<<"${P[arms]}"
[[ ${#ARMS[@]} -gt 0 ]] || die "--arms is empty"
for a in "${ARMS[@]}"; do [[ "$a" =~ ^(netem|fq_codel|pfifo)$ ]] || die "--arms: each must be netem, fq_codel or pfifo, got '$a'"; done
[[ $(printf '%s\n' "${ARMS[@]}" | sort -u | wc -l) -eq ${#ARMS[@]} ]] || die "--arms lists an arm twice"
read -r -a QUEUES <<<"${P[queues]}"
[[ ${#QUEUES[@]} -gt 0 ]] || die "--queues is empty"
for q in "${QUEUES[@]}"; do [[ "$q" =~ ^[1-9][0-9]{0,5}$ ]] || die "--queues: each must be an integer 1..999999 (packets), got '$q'"; done
[[ $(printf '%s\n' "${QUEUES[@]}" | sort -u | wc -l) -eq ${#QUEUES[@]} ]] || die "--queues lists a size twice"
read -r -a MODES <<<"${P[modes]}"
[[ ${#MODES[@]} -gt 0 ]] || die "--modes is empty"
for m in "${MODES[@]}"; do [[ "$m" =~ ^(tcp_path1|mptcp)$ ]] || die "--modes: each must be tcp_path1 or mptcp, got '$m'"; done
[[ $(printf '%s\n' "${MODES[@]}" | sort -u | wc -l) -eq ${#MODES[@]} ]] || die "--modes lists a mode twice"
[[ "$ping_interval" =~ ^(0\.[0-9]*[1-9][0-9]*|[1-9][0-9]*(\.[0-9]+)?)$ ]] || die "--ping-interval-s must be a positive number, got '$ping_interval'"
awk -v s="$ping_interval" 'BEGIN {exit !(s >= 0.2 && s <= 60)}' || die "--ping-interval-s must be in [0.2, 60], got '$ping_interval'"
[[ "$cc" =~ ^(reno|cubic|bbr)$ ]] || die "--cc must be reno, cubic or bbr, got '$cc'"
if [[ -z "$seed" ]]; then seed=$(( $(date +%s) % 1000000 )); fi
[[ "$seed" =~ ^[0-9]{1,9}$ ]] || die "--seed must be an integer 0..999999999, got '$seed'"
qbox_check_vm_args
qbox_require_host

# ---- the plan: one line per run, "rep mode queue arm", in the order they run
plan() {
    local rep i=0 order=() a s
    for rep in $(seq "$reps"); do
        # the scenarios of this rep in an order shuffled by seed and rep: sorted by sha256("seed:rep:mode:queue")
        mapfile -t order < <(for m in "${MODES[@]}"; do for q in "${QUEUES[@]}"; do
                printf '%s\t%s %s\n' "$(printf '%s:%s:%s:%s' "$seed" "$rep" "$m" "$q" | sha256sum | cut -c1-16)" "$m" "$q"
            done; done | sort -k1,1 | cut -f2)
        i=0
        for s in "${order[@]}"; do
            # the scenario's arms back to back; the first one alternates by rep and scenario
            if (( (rep + i) % 2 )); then
                for (( a = ${#ARMS[@]} - 1; a >= 0; a-- )); do echo "$rep $s ${ARMS[a]}"; done
            else
                for a in "${ARMS[@]}"; do echo "$rep $s $a"; done
            fi
            i=$(( i + 1 ))
        done
    done
}
run_name_of() { local rep mode q arm; read -r rep mode q arm <<<"$1"; printf 'rep%02d__%s__q%s__%s' "$rep" "$mode" "$q" "$arm"; }
guest_command() {   # NAME LINE: testbed/qdisc003/run-guest.sh for one run (qbox_run_todo)
    local rep mode q arm; read -r rep mode q arm <<<"$2"
    echo "$GUEST_IN/testbed/qdisc003/run-guest.sh --tb $GUEST_IN/testbed --out $GUEST_OUT/$1 --arm $arm --mode $mode \
          --queue-pkts $q --rep $rep --duration-s $duration --ping-interval-s $ping_interval --cc $cc"
}
if (( resume )); then   # the plan as it was written (the runs' order does not depend on this script's version)
    mapfile -t PLAN < <(jq -r '.plan[] | "\(.rep) \(.mode) \(.queue_pkts) \(.arm)"' "$out/params.json")
    [[ ${#PLAN[@]} -gt 0 ]] || die "--resume: $out/params.json has no plan"
else
    mapfile -t PLAN < <(plan)
fi

qbox_session_start
if (( ! resume )); then
    jq -n --argjson reps "$reps" --argjson duration "$duration" --arg arms "${ARMS[*]}" --arg queues "${QUEUES[*]}" \
        --arg modes "${MODES[*]}" --arg pi "$ping_interval" --arg cc "$cc" --argjson seed "$seed" \
        --arg plan "$(printf '%s\n' "${PLAN[@]}")" \
        --arg commit "$(cd "$ROOT" && git rev-parse HEAD 2>/dev/null || echo)" \
        --arg dirty "$(cd "$ROOT" && git status --porcelain -- "${GUEST_FILES[@]}" testbed/qdisc003 2>/dev/null | tr '\n' ';')" \
        '{reps:$reps, duration:$duration, arms:$arms, queues:$queues, modes:$modes, ping_interval:$pi, cc:$cc, seed:$seed,
          plan:($plan | split("\n") | map(select(. != "") | split(" ") | {rep:(.[0]|tonumber), mode:.[1], queue_pkts:(.[2]|tonumber), arm:.[3]})),
          git_commit:$commit, git_dirty:$dirty}' > "$out/params.json"
fi

# ---- which runs remain; a run directory without COMPLETE is moved aside (never deleted)
qbox_pending "$out"
log "${#todo[@]} of ${#PLAN[@]} runs to go, ${duration} s each: about $(( (${#todo[@]} * (duration + 30) + 240) / 60 )) min under TCG (~30 s per run besides the flow, ~4 min to boot)"

# ---- the VM up (torn down on exit, error or signal, DIR/console.log kept) with the repository files copied in
qbox_up "$out" mpcc-qdisc 5

# ---- describe the guest once per session
# shellcheck disable=SC2016  # expanded in the guest
gssh 'sudo bash -c '\''
    ns=qd003setup; ip netns add $ns; ip -n $ns link set lo up
    fqc=$(ip netns exec $ns tc qdisc replace dev lo root fq_codel limit 50 >/dev/null 2>&1 && ip netns exec $ns tc qdisc show dev lo)
    ip netns del $ns
    jq -n --arg uname "$(uname -a)" --arg kpkg "$(dpkg-query -W -f="\${Package} \${Version}" linux-image-$(uname -r) 2>/dev/null)" \
      --arg iperf3 "$(dpkg-query -W -f="\${Version}" iperf3)" --arg mptcpize "$(dpkg-query -W -f="\${Version}" mptcpize 2>/dev/null)" \
      --arg iproute2 "$(dpkg-query -W -f="\${Version}" iproute2)" --arg iputils "$(dpkg-query -W -f="\${Version}" iputils-ping)" \
      --arg default_qdisc "$(sysctl -n net.core.default_qdisc)" --arg cc "$(sysctl -n net.ipv4.tcp_available_congestion_control)" \
      --arg fq_codel_example "$fqc" --arg nproc "$(nproc)" \
      "{uname:\$uname, kernel_package:\$kpkg, packages:{iperf3:\$iperf3, mptcpize:\$mptcpize, iproute2:\$iproute2, \"iputils-ping\":\$iputils},
        default_qdisc:\$default_qdisc, available_congestion_control:\$cc, fq_codel_limit50_as_tc_shows_it:\$fq_codel_example,
        vcpus:(\$nproc|tonumber)}"
'\''' > "$out/setup.json" || die "describing the guest failed"

qbox_meta_init "$out"
qbox_write_meta "$out"

# ---- one run per call, copied out at once
qbox_run_todo "$out" analysis.qdisc_vm003
