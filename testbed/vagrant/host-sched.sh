#!/usr/bin/env bash
# Host CPU placement of the two switch VMs (libvirt provider): switch1 and switch2 pinned to different host cores,
# their qemu threads ahead of the other VMs'. Opt-in (MPCC_VAGRANT_SCHED=auto); nothing inside a VM changes.
# usage: host-sched.sh apply | show | reset
#   apply: reset every testbed VM to the default placement, then place the switch VMs' qemu threads (all threads of
#          the process) when the conditions below hold; the placement (or why none) goes to stdout as JSON
#   show:  the current affinity and scheduling of every testbed VM's qemu threads (JSON)
#   reset: all testbed VMs' threads back to every online CPU and SCHED_OTHER nice 0
# Needs root and the libvirt pid files (/run/libvirt/qemu/DOMAIN.pid).
set -euo pipefail
# Why: per-packet round-robin sends consecutive segments through switch1 and switch2. Under TCG every packet a switch
# forwards needs its VM's qemu threads on a host core; when 8 VMs share 2 cores the two switches get the CPU at
# different moments and the two paths' delays diverge. Measured on the 2-core development host it did not raise
# multipath goodput (docs/vagrant.md, "Host CPU and the TBF bucket under TCG"); it is there for hosts with cores to spare.
# Environment:
#   MPCC_VAGRANT_PREFIX     domain name prefix [mpcc-]
#   MPCC_VAGRANT_SCHED      off | auto | always [off; auto: only when the domains run under TCG (domain type "qemu")
#                           and the host has at least 2 online CPUs; "always" also under KVM]
#   MPCC_VAGRANT_SCHED_PRIO priority of the switch VMs' threads: rr:N (SCHED_RR, 1-99), nice:N (-20..19) or none
#                           [nice:-10]
PREFIX="${MPCC_VAGRANT_PREFIX:-mpcc-}"
MODE="${MPCC_VAGRANT_SCHED:-off}"
PRIO="${MPCC_VAGRANT_SCHED_PRIO:-nice:-10}"
PIDDIR="${MPCC_LIBVIRT_PIDDIR:-/run/libvirt/qemu}"
NODES=(src1 src2 router1 switch1 switch2 router2 dst1 dst2)
die() { echo "error: $*" >&2; exit 2; }
usage() { echo "usage: host-sched.sh apply | show | reset" >&2; exit 2; }

cmd=${1:-}
[[ $# -eq 1 ]] || usage
[[ "$cmd" =~ ^(apply|show|reset)$ ]] || usage
[[ "$PREFIX" =~ ^[a-z0-9-]+$ ]] || die "MPCC_VAGRANT_PREFIX must match [a-z0-9-]+, got '$PREFIX'"
[[ "$MODE" =~ ^(auto|off|always)$ ]] || die "MPCC_VAGRANT_SCHED must be off, auto or always, got '$MODE'"
if [[ "$PRIO" =~ ^rr:([0-9]+)$ ]]; then
    (( BASH_REMATCH[1] >= 1 && BASH_REMATCH[1] <= 99 )) || die "MPCC_VAGRANT_SCHED_PRIO rr:N needs 1 <= N <= 99"
elif [[ "$PRIO" =~ ^nice:(-?[0-9]+)$ ]]; then
    (( BASH_REMATCH[1] >= -20 && BASH_REMATCH[1] <= 19 )) || die "MPCC_VAGRANT_SCHED_PRIO nice:N needs -20 <= N <= 19"
elif [[ "$PRIO" != none ]]; then
    die "MPCC_VAGRANT_SCHED_PRIO must be rr:N, nice:N or none, got '$PRIO'"
fi
[[ $EUID -eq 0 ]] || die "host-sched.sh needs root"
for t in taskset chrt renice jq; do command -v "$t" >/dev/null || die "$t not found (util-linux, jq)"; done

qemu_pid() { # NODE -> pid of its qemu process, or nothing
    local f="$PIDDIR/${PREFIX}$1.pid" pid
    [[ -r "$f" ]] || return 0
    pid=$(tr -dc '0-9' < "$f")
    [[ -n "$pid" && -d "/proc/$pid/task" ]] && echo "$pid"
    return 0
}
domain_type() { # NODE -> kvm | qemu | "" (from the running qemu's command line: accel=tcg or -accel tcg means TCG)
    local pid
    pid=$(qemu_pid "$1")
    [[ -n "$pid" ]] || return 0
    if [[ "$(tr '\0' ' ' < "/proc/$pid/cmdline")" =~ accel=tcg|-accel\ tcg ]]; then echo qemu; else echo kvm; fi
}
online_cpus() { taskset -pc $$ | sed 's/.*: //'; }   # this shell's affinity = what we may use
cpu_list() { # expand "0-3,6" -> "0 1 2 3 6"
    local part a b parts out=()
    IFS=, read -ra parts <<<"$1"
    for part in "${parts[@]}"; do
        if [[ $part == *-* ]]; then
            a=${part%-*}; b=${part#*-}
            while (( a <= b )); do out+=("$a"); a=$((a + 1)); done
        else
            out+=("$part")
        fi
    done
    echo "${out[@]}"
}

place() { # PID CPUS PRIO: every thread of PID
    local pid=$1 cpus=$2 prio=$3 t tid
    for t in "/proc/$pid/task"/*; do
        tid=${t##*/}
        taskset -pc "$cpus" "$tid" >/dev/null 2>&1 || continue   # a thread may exit meanwhile
        case "$prio" in
            rr:*) chrt -r -p "${prio#rr:}" "$tid" >/dev/null 2>&1 || true ;;
            nice:*) chrt -o -p 0 "$tid" >/dev/null 2>&1 || true; renice -n "${prio#nice:}" -p "$tid" >/dev/null 2>&1 || true ;;
            none) chrt -o -p 0 "$tid" >/dev/null 2>&1 || true; renice -n 0 -p "$tid" >/dev/null 2>&1 || true ;;
        esac
    done
}

show() {
    local n pid out=() pol threads
    for n in "${NODES[@]}"; do
        pid=$(qemu_pid "$n")
        [[ -n "$pid" ]] || continue
        threads=("/proc/$pid/task"/*)
        pol=$(chrt -p "$pid" 2>/dev/null | sed -n 's/.*scheduling policy: //p' | sed -n 1p)
        out+=("$(jq -n --arg n "$n" --argjson pid "$pid" --arg cpus "$(taskset -pc "$pid" | sed 's/.*: //')" \
                 --arg pol "$pol" --argjson nice "$(ps -o nice= -p "$pid" | tr -d ' ' | sed 's/^-$/0/')" \
                 --argjson threads "${#threads[@]}" --arg type "$(domain_type "$n")" \
                 '{node:$n, pid:$pid, domain_type:$type, cpus:$cpus, policy:$pol, nice:$nice, threads:$threads}')")
    done
    printf '%s\n' "${out[@]}" | jq -s 'map({(.node): del(.node)}) | add // {}'
}

reset_all() { # every testbed VM's threads: all usable CPUs, SCHED_OTHER nice 0
    local n pid all
    all=$(online_cpus)
    for n in "${NODES[@]}"; do
        pid=$(qemu_pid "$n")
        if [[ -n "$pid" ]]; then place "$pid" "$all" none; fi
    done
}

case "$cmd" in
    show) show; exit 0 ;;
    reset) reset_all; show; exit 0 ;;
esac

# apply: start from the default placement, so that apply is idempotent and MPCC_VAGRANT_SCHED=off undoes it
reset_all
p1=$(qemu_pid switch1); p2=$(qemu_pid switch2)
read -ra cpus <<<"$(cpu_list "$(online_cpus)")"
reason=""
if [[ $MODE == off ]]; then
    reason="MPCC_VAGRANT_SCHED=off"
elif [[ -z "$p1" || -z "$p2" ]]; then
    reason="no qemu pid for ${PREFIX}switch1/${PREFIX}switch2 in $PIDDIR (not libvirt, or not running)"
elif [[ ${#cpus[@]} -lt 2 ]]; then
    reason="fewer than 2 host CPUs"
elif [[ $MODE == auto && "$(domain_type switch1)" != qemu ]]; then
    reason="VMs run under KVM (MPCC_VAGRANT_SCHED=always to place them anyway)"
fi
dtype=""
[[ -z "$p1" ]] || dtype=$(domain_type switch1)
if [[ -n "$reason" ]]; then
    jq -n --arg r "$reason" --arg t "$dtype" '{applied:false, reason:$r, domain_type:(if $t == "" then null else $t end)}'
    exit 0
fi
# switch1 on the first usable CPU, switch2 on the last: different cores
place "$p1" "${cpus[0]}" "$PRIO"
place "$p2" "${cpus[-1]}" "$PRIO"
jq -n --arg prio "$PRIO" --arg c1 "${cpus[0]}" --arg c2 "${cpus[-1]}" --arg t "$dtype" --argjson vms "$(show)" \
    '{applied:true, domain_type:$t, switch1_cpu:$c1, switch2_cpu:$c2, priority:$prio, vms:$vms}'
