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
GUEST_FILES=(testbed/mininet003/run-guest.sh testbed/mininet003/topo003.py testbed/families/003/topology.json)
box="${MPCC_VAGRANT_BOX:-mpcc/debian12}" mem_mb=2048 cpus=2 boot_timeout=900 out="" resume=0 max_runs=0
GUEST_IN=/tmp/mn003-in GUEST_OUT=/var/tmp/mn003-out
MATRIX=(reps duration queues modes ping_interval sample_interval cc delay_links seed)
declare -A P=() DEF=([reps]=3 [duration]=60 [queues]="1000 50" [modes]="tcp_path1 mptcp" [ping_interval]=1
    [sample_interval]=1 [cc]=cubic [delay_links]=client [seed]="")

die() { echo "error: $*" >&2; exit 2; }
log() { echo "[$(date -u +%H:%M:%S)] mininet003-vm: $*" >&2; }
usage() { sed -n '/^# usage:/,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --out) out=${2:-}; shift 2 || usage ;;
        --resume) resume=1; shift ;;
        --reps) P[reps]=${2:-}; shift 2 || usage ;;
        --duration-s) P[duration]=${2:-}; shift 2 || usage ;;
        --queues) P[queues]=${2:-}; shift 2 || usage ;;
        --modes) P[modes]=${2:-}; shift 2 || usage ;;
        --ping-interval-s) P[ping_interval]=${2:-}; shift 2 || usage ;;
        --sample-interval-s) P[sample_interval]=${2:-}; shift 2 || usage ;;
        --cc) P[cc]=${2:-}; shift 2 || usage ;;
        --delay-links) P[delay_links]=${2:-}; shift 2 || usage ;;
        --seed) P[seed]=${2:-}; shift 2 || usage ;;
        --max-runs) max_runs=${2:-}; shift 2 || usage ;;
        --box) box=${2:-}; shift 2 || usage ;;
        --memory-mb) mem_mb=${2:-}; shift 2 || usage ;;
        --cpus) cpus=${2:-}; shift 2 || usage ;;
        --boot-timeout-s) boot_timeout=${2:-}; shift 2 || usage ;;
        -h|--help) usage ;;
        *) die "unknown option '$1' (run-vm.sh --help)" ;;
    esac
done
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
[[ "$max_runs" =~ ^[0-9]{1,4}$ ]] || die "--max-runs must be an integer 0..9999 (0: all), got '$max_runs'"
[[ "$box" =~ ^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)?$ ]] || die "bad box name '$box'"
if ! [[ "$mem_mb" =~ ^[1-9][0-9]{2,5}$ ]] || (( mem_mb < 512 )); then die "--memory-mb must be an integer >= 512, got '$mem_mb'"; fi
[[ "$cpus" =~ ^[1-9][0-9]?$ ]] || die "--cpus must be an integer 1..99, got '$cpus'"
[[ "$boot_timeout" =~ ^[1-9][0-9]{1,4}$ ]] || die "--boot-timeout-s must be an integer 10..99999, got '$boot_timeout'"
for f in "${GUEST_FILES[@]}"; do [[ -f "$ROOT/$f" ]] || die "$f not found in the repository"; done
[[ $EUID -eq 0 ]] || die "run-vm.sh needs root (build-box.sh runs mmdebstrap in root mode)"
missing=()
for t in qemu-system-x86_64 qemu-img mmdebstrap mkfs.ext4 vagrant ssh scp jq sha256sum tar ss; do
    command -v "$t" >/dev/null || missing+=("$t")
done
[[ ${#missing[@]} -eq 0 ]] || die "missing ${missing[*]}: apt-get update && apt-get install -y --no-install-recommends \
qemu-system-x86 qemu-utils mmdebstrap e2fsprogs vagrant openssh-client jq iproute2"

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
run_name() { printf 'rep%02d__%s__q%s' "$1" "$2" "$3"; }   # REP MODE QUEUE
if (( resume )); then   # the plan as it was written (the runs' order does not depend on this script's version)
    mapfile -t PLAN < <(jq -r '.plan[] | "\(.rep) \(.mode) \(.queue_pkts)"' "$out/params.json")
    [[ ${#PLAN[@]} -gt 0 ]] || die "--resume: $out/params.json has no plan"
else
    mapfile -t PLAN < <(plan)
fi

qbox_key
T0=$(date +%s)
mkdir -p "$out/runs"
out="$(cd "$out" && pwd)"
STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
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
todo=()
for line in "${PLAN[@]}"; do
    read -r rep mode q <<<"$line"
    name=$(run_name "$rep" "$mode" "$q")
    [[ -f "$out/runs/$name/COMPLETE" ]] && continue
    if [[ -e "$out/runs/$name" ]]; then
        mkdir -p "$out/incomplete"
        mv "$out/runs/$name" "$out/incomplete/$name.$(date -u +%Y%m%dT%H%M%SZ)"
        log "$name was not complete: moved to incomplete/"
    fi
    todo+=("$line")
done
if (( ${#todo[@]} == 0 )); then log "every run of $out is complete"; exit 0; fi
if (( max_runs > 0 && ${#todo[@]} > max_runs )); then todo=("${todo[@]:0:max_runs}"); fi
log "${#todo[@]} of ${#PLAN[@]} runs to go, ${duration} s each: about $(( (${#todo[@]} * (duration + 60) + 120) / 60 )) min under TCG (~60 s per run besides the flow, ~2 min to boot)"

# ---- VM teardown: always (the VM stopped, DIR/console.log kept, on exit, error or signal)
qbox_traps "$out"
qbox_prepare "$box"
(( box_rev >= 6 )) 2>/dev/null || die "box $box is revision '${box_rev}', Mininet needs revision 6 (testbed/vagrant/build-box.sh)"
qbox_boot mpcc-mininet "$cpus" "$mem_mb" "$boot_timeout"
guest_kernel_pkg=$(gssh "dpkg-query -W -f='\${Package} \${Version}' linux-image-\$(uname -r)" 2>/dev/null || echo "")
log "guest up after $T_BOOT s: kernel $guest_kernel (${guest_kernel_pkg:-package not found}), box revision $box_rev"

# ---- copy the repository's files in (their own layout under GUEST_IN), and describe the guest once per session
gssh "rm -rf $GUEST_IN && mkdir -p $GUEST_IN"
tar -C "$ROOT" -cf - "${GUEST_FILES[@]}" | gssh "tar -C $GUEST_IN -xf -"
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

PREV_SESSIONS='[]'
if [[ -f "$out/meta.json" ]]; then PREV_SESSIONS=$(jq -c '.sessions // []' "$out/meta.json"); fi
n_ok=0 n_fail=0 T_RUNS=0
box_sha=$(sha256sum "$boxdir/box.img" | cut -d' ' -f1)   # once: hashing the image costs a core for seconds
write_meta() {
    jq -n --arg host_kernel "$(uname -r)" --arg host_os "$(. /etc/os-release && echo "$PRETTY_NAME")" \
        --arg qemu "$(qemu-system-x86_64 --version | sed -n 1p)" --arg qemu_args "${QEMU_ARGS[*]}" \
        --arg guest_kernel "$guest_kernel" --arg guest_kernel_pkg "$guest_kernel_pkg" --arg box "$box" --arg box_rev "$box_rev" \
        --arg box_sha "$box_sha" \
        --arg commit "$(cd "$ROOT" && git rev-parse HEAD 2>/dev/null || echo)" \
        --argjson files "$(for f in "${GUEST_FILES[@]}"; do
                jq -n --arg f "$f" --arg sha "$(sha256sum "$ROOT/$f" | cut -d' ' -f1)" \
                      --arg blob "$(cd "$ROOT" && git hash-object "$f")" '{($f): {sha256:$sha, git_blob:$blob}}'
            done | jq -s add)" \
        --arg host_cpus "$(nproc)" --arg host_cpu "$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | sed -n 1p)" \
        --argjson cpus "$cpus" --argjson mem "$mem_mb" --arg started "$STARTED" \
        --argjson ok "$n_ok" --argjson fail "$n_fail" --argjson t_box "$T_BOX" --argjson t_boot "$T_BOOT" \
        --argjson t_runs "$T_RUNS" --argjson t_total "$(( $(date +%s) - T0 ))" --argjson prev "$PREV_SESSIONS" \
        --argjson complete "$(find "$out/runs" -name COMPLETE | wc -l)" --argjson planned "${#PLAN[@]}" \
        '{host_kernel:$host_kernel, host_os:$host_os, host_cpus:($host_cpus|tonumber), host_cpu:$host_cpu,
          qemu:$qemu, accel:"tcg", qemu_args:$qemu_args, vm_cpus:$cpus, vm_memory_mb:$mem,
          guest_kernel:$guest_kernel, guest_kernel_package:(if $guest_kernel_pkg == "" then null else $guest_kernel_pkg end),
          box:$box, box_revision:$box_rev, box_image_sha256:$box_sha, guest_files:$files,
          runs_planned:$planned, runs_complete:$complete,
          sessions:($prev + [{started_utc:$started, commit:$commit, runs_ok:$ok, runs_failed:$fail,
                              seconds:{build_box:$t_box, boot:$t_boot, runs:$t_runs, total:$t_total}}])}' > "$out/meta.json.tmp"
    mv "$out/meta.json.tmp" "$out/meta.json"
}
write_meta

# ---- one run per call, copied out at once
k=0
for line in "${todo[@]}"; do
    read -r rep mode q <<<"$line"
    name=$(run_name "$rep" "$mode" "$q")
    k=$(( k + 1 ))
    t=$(date +%s)
    log "run $k/${#todo[@]}: $name"
    set +e
    gssh "sudo rm -rf $GUEST_OUT && sudo mkdir -p $GUEST_OUT && sudo bash $GUEST_IN/testbed/mininet003/run-guest.sh \
          --dir $GUEST_IN --out $GUEST_OUT/$name --mode $mode --queue-pkts $q --rep $rep --duration-s $duration \
          --ping-interval-s $ping_interval --sample-interval-s $sample_interval --cc $cc --delay-links $delay_links" \
          >>"$out/progress.log" 2>&1
    grc=$?
    set -e
    (( grc <= 1 )) || die "the guest script failed on $name (exit $grc; $out/progress.log)"
    gssh "sudo tar -C $GUEST_OUT -cf - $name" | tar -C "$out/runs" -xf - || die "copying $name out of the guest failed"
    T_RUNS=$(( T_RUNS + $(date +%s) - t ))
    if [[ -f "$out/runs/$name/COMPLETE" ]]; then n_ok=$(( n_ok + 1 )); else n_fail=$(( n_fail + 1 )); fi
    write_meta
    log "$name: $([[ -f "$out/runs/$name/COMPLETE" ]] && echo complete || echo "FAILED ($(jq -r .reason "$out/runs/$name/meta.json" 2>/dev/null))") in $(( $(date +%s) - t )) s; $(find "$out/runs" -name COMPLETE | wc -l)/${#PLAN[@]} complete"
done
log "results in $out ($n_ok complete, $n_fail failed this session; box $T_BOX s, boot $T_BOOT s, runs $T_RUNS s)"
log "analyse: python -m analysis.mininet_vm003 $out"
(( n_fail == 0 )) || exit 1
exit 0
