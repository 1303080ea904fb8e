#!/usr/bin/env bash
# Study 003's Table 2 scenarios replicated with the paper's own tool chain, Mininet + Open vSwitch, in ONE Debian 12
# VM booted directly with qemu-system-x86_64 under TCG (testbed/lib/qemu_box.sh, as testbed/qdisc003/run-vm.sh and
# testbed/cc/validate-vm.sh boot it). docs/mininet-003.md describes what is replicated, what Mininet installs and the
# results.
#   1. makes sure the project's Debian box exists (testbed/vagrant/build-box.sh: revision 6 has mininet and
#      openvswitch-switch)
#   2. boots it (a throw-away qcow2 overlay; the box is not modified), ssh on a forwarded port of 127.0.0.1
#   3. copies testbed/mininet003/run-guest.sh, testbed/mininet003/topo003.py and testbed/families/003/topology.json
#      into the guest as they are, and runs the guest script ONE RUN PER CALL: every (rep, scenario) of the plan, each
#      run copied back into DIR/runs/<run>/ at once. Scenarios are Table 2's four, (mode, queue_pkts) in
#      {tcp_path1, mptcp} x --queues; per rep they run in an order shuffled by --seed and rep
#   4. kills the VM at the end (also on error or interrupt)
# The network of each run is Mininet's (testbed/mininet003/topo003.py): hosts h1 (client) and h2 (server), OVSBridge
# s1 (path 1) and s2 (path 2) in standalone fail mode without a controller, TCLinks bw=R delay=D max_queue_size=Q
# (htb rate R + netem delay D limit Q on both ends of each link, as Mininet installs them); iperf3 h1 -> h2 (MPTCP by
# mptcpize for the mptcp scenarios, single-path TCP bound to path 1's address for tcp_path1) and ping from h1 over
# each path once a --ping-interval-s.
# An interrupted run continues with --resume DIR: the plan is read from DIR/params.json (options given again must
# agree), complete runs are kept, a run without COMPLETE is moved to DIR/incomplete/ (never deleted) and run again.
# Results: DIR/runs/<run>/ (testbed/mininet003/topo003.py), DIR/params.json (the plan), DIR/meta.json (host, VM,
# box, sha256 of the scripts, timings per session), DIR/setup.json (guest: packages, Open vSwitch), DIR/progress.log,
# DIR/console.log. Analyse: python -m analysis.mininet_vm003 DIR
# Needs root (build-box.sh runs mmdebstrap) and: qemu-system-x86 qemu-utils mmdebstrap e2fsprogs vagrant
# openssh-client jq (Debian: apt-get install -y --no-install-recommends ...; tools/setup_host.sh --vm).
# Exit 0 when every run is complete, 1 when a run failed a check (see its run.log; --resume runs it again), 2 on
# usage or set-up errors.
# usage: run-vm.sh --out DIR [--resume] [--reps 3] [--duration-s 60] [--queues "1000 50"] [--modes "tcp_path1 mptcp"]
#                  [--ping-interval-s 1] [--sample-interval-s 1] [--cc cubic] [--delay-links client|both] [--seed N]
#                  [--max-runs N] [--box NAME] [--memory-mb 2048] [--cpus 2] [--boot-timeout-s 900]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
# shellcheck source=testbed/lib/qemu_box.sh
source "$ROOT/testbed/lib/qemu_box.sh"   # qbox_key, qbox_prepare, qbox_boot, gssh, qbox_teardown, qbox_traps
# shellcheck source=testbed/lib/qemu_runs.sh
source "$ROOT/testbed/lib/qemu_runs.sh"  # qbox_parse_args, qbox_check_vm_args, qbox_require_host, qbox_pending, qbox_run_todo
GUEST_FILES=(testbed/mininet003/run-guest.sh testbed/mininet003/topo003.py testbed/families/003/topology.json)
box="${MPCC_VAGRANT_BOX:-mpcc/debian12}" mem_mb=2048 cpus=2 boot_timeout=900 out="" resume=0 max_runs=0
GUEST_IN=/tmp/mn003-in GUEST_OUT=/var/tmp/mn003-out
MATRIX=(reps duration queues modes ping_interval sample_interval cc delay_links seed)
declare -A P=() DEF=([reps]=3 [duration]=60 [queues]="1000 50" [modes]="tcp_path1 mptcp" [ping_interval]=1
    [sample_interval]=1 [cc]=cubic [delay_links]=client [seed]="")

die() { echo "error: $*" >&2; exit 2; }
log() { echo "[$(date -u +%H:%M:%S)] mininet003-vm: $*" >&2; }
usage() { sed -n '/^# usage:/,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }
qbox_parse_args "$@"
# ---- every argument is checked before anything runs as root
[[ -n "$out" ]] || die "--out DIR is required"
if [[ -e "$out" && ! -d "$out" ]]; then die "--out $out exists and is not a directory"; fi
command -v jq >/dev/null || die "jq is not installed (apt-get install -y jq)"
if (( resume )); then
    qbox_resume_plan "$out" plan
else
    if [[ -e "$out" ]]; then die "--out $out exists (a new results directory is made; continue one with --resume)"; fi
    for k in "${MATRIX[@]}"; do [[ -v "P[$k]" ]] || P[$k]=${DEF[$k]}; done
fi
reps=${P[reps]} duration=${P[duration]} ping_interval=${P[ping_interval]} sample_interval=${P[sample_interval]}
cc=${P[cc]} delay_links=${P[delay_links]} seed=${P[seed]}
[[ "$reps" =~ ^[1-9][0-9]{0,2}$ ]] || die "--reps must be an integer 1..999, got '$reps'"
if ! [[ "$duration" =~ ^[1-9][0-9]{0,4}$ ]] || (( duration < 5 )); then die "--duration-s must be an integer 5..99999, got '$duration'"; fi
read -r -a QUEUES <<<"${P[queues]}"
[[ ${#QUEUES[@]} -gt 0 ]] || die "--queues is empty"
for q in "${QUEUES[@]}"; do [[ "$q" =~ ^[1-9][0-9]{0,5}$ ]] || die "--queues: each must be an integer 1..999999 (packets), got '$q'"; done
[[ $(printf '%s\n' "${QUEUES[@]}" | sort -u | wc -l) -eq ${#QUEUES[@]} ]] || die "--queues lists a size twice"
read -r -a MODES <<<"${P[modes]}"
[[ ${#MODES[@]} -gt 0 ]] || die "--modes is empty"
for m in "${MODES[@]}"; do [[ "$m" =~ ^(tcp_path1|mptcp)$ ]] || die "--modes: each must be tcp_path1 or mptcp, got '$m'"; done
[[ $(printf '%s\n' "${MODES[@]}" | sort -u | wc -l) -eq ${#MODES[@]} ]] || die "--modes lists a mode twice"
for o in ping_interval sample_interval; do
    v=${P[$o]}
    [[ "$v" =~ ^(0\.[0-9]*[1-9][0-9]*|[1-9][0-9]*(\.[0-9]+)?)$ ]] || die "--${o//_/-}-s must be a positive number, got '$v'"
    awk -v s="$v" 'BEGIN {exit !(s >= 0.2 && s <= 60)}' || die "--${o//_/-}-s must be in [0.2, 60], got '$v'"
done
[[ "$cc" =~ ^(reno|cubic|bbr)$ ]] || die "--cc must be reno, cubic or bbr, got '$cc'"
[[ "$delay_links" =~ ^(client|both)$ ]] || die "--delay-links must be client or both, got '$delay_links'"
if [[ -z "$seed" ]]; then seed=$(( $(date +%s) % 1000000 )); fi
[[ "$seed" =~ ^[0-9]{1,9}$ ]] || die "--seed must be an integer 0..999999999, got '$seed'"
qbox_check_vm_args
qbox_require_host

# ---- the plan: one line per run, "rep mode queue", in the order they run
plan() {
    local rep
    for rep in $(seq "$reps"); do
        # the scenarios of this rep in an order shuffled by seed and rep: sorted by sha256("seed:rep:mode:queue")
        for m in "${MODES[@]}"; do for q in "${QUEUES[@]}"; do
            printf '%s\t%s %s %s\n' "$(printf '%s:%s:%s:%s' "$seed" "$rep" "$m" "$q" | sha256sum | cut -c1-16)" "$rep" "$m" "$q"
        done; done | sort -k1,1 | cut -f2
    done
}
run_name_of() { local rep mode q; read -r rep mode q <<<"$1"; printf 'rep%02d__%s__q%s' "$rep" "$mode" "$q"; }
guest_command() {   # NAME LINE: testbed/mininet003/run-guest.sh for one run (qbox_run_todo)
    local rep mode q; read -r rep mode q <<<"$2"
    echo "$GUEST_IN/testbed/mininet003/run-guest.sh --dir $GUEST_IN --out $GUEST_OUT/$1 --mode $mode --queue-pkts $q \
          --rep $rep --duration-s $duration --ping-interval-s $ping_interval --sample-interval-s $sample_interval \
          --cc $cc --delay-links $delay_links"
}
if (( resume )); then   # the plan as it was written (the runs' order does not depend on this script's version)
    mapfile -t PLAN < <(jq -r '.plan[] | "\(.rep) \(.mode) \(.queue_pkts)"' "$out/params.json")
    [[ ${#PLAN[@]} -gt 0 ]] || die "--resume: $out/params.json has no plan"
else
    mapfile -t PLAN < <(plan)
fi

qbox_session_start
if (( ! resume )); then
    jq -n --argjson reps "$reps" --argjson duration "$duration" --arg queues "${QUEUES[*]}" --arg modes "${MODES[*]}" \
        --arg pi "$ping_interval" --arg si "$sample_interval" --arg cc "$cc" --arg dl "$delay_links" \
        --argjson seed "$seed" --arg plan "$(printf '%s\n' "${PLAN[@]}")" \
        --arg commit "$(cd "$ROOT" && git rev-parse HEAD 2>/dev/null || echo)" \
        --arg dirty "$(cd "$ROOT" && git status --porcelain -- "${GUEST_FILES[@]}" testbed/mininet003 2>/dev/null | tr '\n' ';')" \
        '{reps:$reps, duration:$duration, queues:$queues, modes:$modes, ping_interval:$pi, sample_interval:$si, cc:$cc,
          delay_links:$dl, seed:$seed,
          plan:($plan | split("\n") | map(select(. != "") | split(" ") | {rep:(.[0]|tonumber), mode:.[1], queue_pkts:(.[2]|tonumber)})),
          git_commit:$commit, git_dirty:$dirty}' > "$out/params.json"
fi

# ---- which runs remain; a run directory without COMPLETE is moved aside (never deleted)
qbox_pending "$out"
log "${#todo[@]} of ${#PLAN[@]} runs to go, ${duration} s each: about $(( (${#todo[@]} * (duration + 60) + 120) / 60 )) min under TCG (~60 s per run besides the flow, ~2 min to boot)"

# ---- the VM up (torn down on exit, error or signal, DIR/console.log kept) with the repository files copied in
qbox_up "$out" mpcc-mininet 6

# ---- describe the guest once per session
# shellcheck disable=SC2016  # expanded in the guest
gssh 'sudo bash -c '\''
    v() { dpkg-query -W -f="\${Version}" "$1" 2>/dev/null; }
    ovs_ok=false; ovs-vsctl -t 30 show >/dev/null 2>&1 && ovs_ok=true
    jq -n --arg uname "$(uname -a)" --arg kpkg "$(dpkg-query -W -f="\${Package} \${Version}" linux-image-$(uname -r) 2>/dev/null)" \
      --arg mininet "$(v mininet)" --arg ovs "$(v openvswitch-switch)" --arg python3 "$(v python3)" \
      --arg iperf3 "$(v iperf3)" --arg mptcpize "$(v mptcpize)" --arg iproute2 "$(v iproute2)" --arg iputils "$(v iputils-ping)" \
      --arg ovs_vswitchd "$(ovs-vswitchd --version 2>/dev/null | sed -n 1p)" --argjson ovs_ok "$ovs_ok" \
      --arg ovs_service "$(systemctl is-active openvswitch-switch 2>/dev/null)" \
      --arg default_qdisc "$(sysctl -n net.core.default_qdisc)" --arg cc "$(sysctl -n net.ipv4.tcp_available_congestion_control)" \
      --arg nproc "$(nproc)" \
      "{uname:\$uname, kernel_package:\$kpkg, packages:{mininet:\$mininet, \"openvswitch-switch\":\$ovs, python3:\$python3,
        iperf3:\$iperf3, mptcpize:\$mptcpize, iproute2:\$iproute2, \"iputils-ping\":\$iputils},
        ovs_vswitchd:\$ovs_vswitchd, ovs_answers:\$ovs_ok, ovs_service:\$ovs_service,
        default_qdisc:\$default_qdisc, available_congestion_control:\$cc, vcpus:(\$nproc|tonumber)}"
'\''' > "$out/setup.json" || die "describing the guest failed"
[[ -n "$(jq -r '.packages.mininet' "$out/setup.json")" ]] || die "the guest has no mininet package (box revision $box_rev)"

qbox_meta_init "$out"
qbox_write_meta "$out"

# ---- one run per call, copied out at once
qbox_run_todo "$out" analysis.mininet_vm003
