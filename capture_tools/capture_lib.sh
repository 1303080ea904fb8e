# shellcheck shell=bash
# Helpers of the capture tools (sourced, not executed): run_experiment.sh (study 000), run_dualpath.sh (001, 003),
# run_chain.sh (004) and run_streaming.sh (002) measure host load, stop captures, log, skip and acquire the cc with
# the same code, so runs of every study family are recorded on one scale (same meta.json fields).

# host_load_sample -> JSON {wall_us, psi_some_us (null without PSI), loadavg1, ncpu, steal_ticks, cpu_ticks}
# (steal and all ticks of /proc/stat's "cpu" line: user nice system idle iowait irq softirq steal, proc(5))
host_load_sample() {
    local psi=null la wall steal=null ticks=null
    local -a stat
    wall=$(date +%s%6N)
    if [[ -r /proc/pressure/cpu ]]; then
        psi=$(sed -n 's/^some .*total=\([0-9]*\)$/\1/p' /proc/pressure/cpu)
        [[ "$psi" =~ ^[0-9]+$ ]] || psi=null
    fi
    read -r -a stat < /proc/stat
    if [[ ${stat[0]} == cpu && ${#stat[@]} -ge 9 ]]; then
        steal=${stat[8]} ticks=$(( stat[1] + stat[2] + stat[3] + stat[4] + stat[5] + stat[6] + stat[7] + stat[8] ))
    fi
    read -r la _ < /proc/loadavg
    printf '{"wall_us":%s,"psi_some_us":%s,"loadavg1":%s,"ncpu":%s,"steal_ticks":%s,"cpu_ticks":%s}' \
        "$wall" "$psi" "$la" "$(nproc)" "$steal" "$ticks"
}

# host_load_summary SAMPLE0 SAMPLE1 -> meta.json host_load: host CPU contention while the flows ran.
# PSI "some" stall share = delta(total stall us) / delta(wall us) (Linux Documentation/accounting/psi.rst).
# Steal share = delta(steal ticks) / delta(all ticks): time the hypervisor ran something else while this machine's
# CPUs had work (a VM's CPU contention that PSI does not count).
host_load_summary() {
    jq -n --argjson a "$1" --argjson b "$2" '
    {loadavg_1min_start:$a.loadavg1, loadavg_1min_end:$b.loadavg1, ncpu:$a.ncpu,
     cpu_pressure_some_pct:(if $a.psi_some_us != null and $b.psi_some_us != null and $b.wall_us > $a.wall_us
        then ((($b.psi_some_us - $a.psi_some_us) / ($b.wall_us - $a.wall_us) * 1000 | round) / 10) else null end),
     cpu_steal_pct:(if ($a.steal_ticks // null) != null and ($b.steal_ticks // null) != null and $b.cpu_ticks > $a.cpu_ticks
        then ((($b.steal_ticks - $a.steal_ticks) / ($b.cpu_ticks - $a.cpu_ticks) * 1000 | round) / 10) else null end)}'
}

# rtt_measure_again MEDIAN_MS EXPECTED_MS: true when an idle-RTT self-check should measure again: no reply, or a
# median above the expected two-way delay by more than the tolerance (max(1 ms, 5 %)). A host that does not schedule
# the delay shim (CPU contention, hypervisor steal) can only add delay, so a median below the tolerance is never
# measured again: it is a wrong path.
rtt_measure_again() {
    [[ "$1" == null ]] && return 0
    awk -v m="$1" -v e="$2" 'BEGIN { t = 0.05 * e; if (t < 1) t = 1; exit !(m > e + t) }'
}

if ! [[ "${MPCC_CAPTURE_START_S:-30}" =~ ^[1-9][0-9]*$ ]]; then   # checked when sourced: before any root command
    echo "error: MPCC_CAPTURE_START_S must be a whole number of seconds > 0, got '${MPCC_CAPTURE_START_S}'" >&2
    exit 2
fi
# start_capture NETNS IFACE FILE SNAPLEN [FILTER]: tcpdump in namespace NETNS on IFACE into FILE, packet-buffered (-U);
# its PID joins the caller's array tcpdump_pids; its messages ("listening on ...", at exit its drop counts) go to $LOG.
# The first capture of a batch (tcpdump_pids empty) notes $LOG's length for wait_captures_listening.
capture_log_mark=0
start_capture() {
    [[ ${#tcpdump_pids[@]} -gt 0 ]] || capture_log_mark=$(wc -l < "$LOG")
    ip netns exec "$1" tcpdump -i "$2" -s "$4" -n -U -w "$3" ${5:+"$5"} 2>>"$LOG" &
    tcpdump_pids+=("$!")
}

# wait_captures_listening: wait until every tcpdump in tcpdump_pids said "listening on" in $LOG since the batch's
# first start_capture, so that no traffic starts before its captures record (a loaded host can take seconds to start
# tcpdump). One-line error and status 1 when a capture exits first or MPCC_CAPTURE_START_S (default 30 s) passes.
wait_captures_listening() {
    local limit=${MPCC_CAPTURE_START_S:-30} i p have
    for ((i = 0; i < limit * 10; i++)); do
        # tcpdump writes "tcpdump: " and "listening on ..." separately: count the phrase, not whole lines
        have=$(tail -n +"$((capture_log_mark + 1))" "$LOG" | grep -o 'listening on ' | wc -l)
        [[ $have -ge ${#tcpdump_pids[@]} ]] && return 0
        for p in "${tcpdump_pids[@]}"; do
            live_child "$p" || { echo "error: a capture (tcpdump) exited before the traffic started; see $LOG" >&2; return 1; }
        done
        sleep 0.1
    done
    echo "error: the captures did not start within ${limit} s ($have of ${#tcpdump_pids[@]} listening); see $LOG" >&2
    return 1
}

# stop_captures: SIGINT to every PID in the caller's array tcpdump_pids (tcpdump flushes), TERM after 3 s if a
# SIGINT was lost; empties the array.
stop_captures() {
    local p i alive
    [[ ${#tcpdump_pids[@]} -gt 0 ]] || return 0
    for p in "${tcpdump_pids[@]}"; do signal_child INT "$p"; done
    for i in $(seq 30); do
        alive=0
        for p in "${tcpdump_pids[@]}"; do live_child "$p" && alive=1; done
        [[ $alive == 0 ]] && break
        [[ $i == 30 ]] && for p in "${tcpdump_pids[@]}"; do signal_child TERM "$p"; done
        sleep 0.1
    done
    for p in "${tcpdump_pids[@]}"; do wait "$p" 2>/dev/null || true; done
    tcpdump_pids=()
}

# Child processes by PID, safely. A PID from $! names our background job only while that job runs: once it has
# ended, the kernel gives the PID to the next process it creates, and with kernel.pid_max 32768 the many short
# processes of a long run (ss samples, sleeps) and of the runs beside it recycle PIDs within minutes. So a PID is
# signalled only while it is a running job of this shell (bash's own job table, `jobs -pr`): never a process of
# another run that inherited it.
# live_child PID: PID is a running background job of this shell.
live_child() {
    local p
    for p in $(jobs -pr); do [[ "$p" == "$1" ]] && return 0; done
    return 1
}

# signal_child SIG PID: SIG to PID if it is a running job of this shell (else nothing); status 0.
signal_child() {
    if live_child "$2"; then kill "-$1" "$2" 2>/dev/null || true; fi
    return 0
}

# wait_pid_timeout PID SECONDS: wait for a child; TERM it (then KILL) when it outlives SECONDS. Returns its status,
# or 0 with a line in capture.log when bash no longer knows it: a job that ended long before (bash forgets a job's
# status when a later child of this shell is given the same PID). Callers check what the process wrote (iperf_ok).
wait_pid_timeout() {
    local pid=$1 t=$2 i rc=0
    for ((i = 0; i < t * 10; i++)); do
        live_child "$pid" || break
        sleep 0.1
    done
    if live_child "$pid"; then
        signal_child TERM "$pid"
        sleep 1
        signal_child KILL "$pid"
    fi
    wait "$pid" 2>/dev/null || rc=$?
    if [[ $rc == 127 ]]; then
        say "pid $pid ended earlier; its exit status is no longer known (its PID was used again)"
        rc=0
    fi
    return "$rc"
}

# iperf_ok FILE: the iperf3 client whose --json output is FILE finished its test. iperf3 (3.12) exits 0 even when its
# test failed, e.g. a UDP test whose 4-byte connect datagram or its reply was lost (the client gives up after 30 s
# with "unable to read from stream socket"): its JSON then holds "error". On an error: capture.log and stderr get it,
# status 1 (the caller fails the run without a marker, so that a resume records it again).
iperf_ok() {
    local err
    err=$(jq -rs 'if length == 1 and (.[0] | type) == "object" then (.[0].error // empty) else "no JSON output" end' \
          "$1" 2>/dev/null) || err="no JSON output"
    [[ -z "$err" ]] || { say "$(basename "$1"): $err"; echo "error: iperf3 ($(basename "$1")): $err" >&2; return 1; }
}

# Run bookkeeping shared by the capture tools of the study families (the caller set out and TB, opened the run
# directory with open_run_dir, and keeps the array held_ccs and cc_impl='{}'):
# open_run_dir: create the run directory $out (made absolute) and open its capture.log ($LOG) on fd 3.
open_run_dir() {
    mkdir -p "$out"
    out=$(cd "$out" && pwd)
    LOG="$out/capture.log"
    exec 3>>"$LOG"
}

# say MSG: a timestamped line in capture.log.
say() { echo "[$(date -u +%H:%M:%S.%N)] $*" >&3; }

# skip REASON: the run is SKIPPED: the one-line reason in $out/SKIPPED, in capture.log and on stderr; exit 3.
# shellcheck disable=SC2154  # out is the caller's run directory
skip() {
    echo "$1" > "$out/SKIPPED"
    say "SKIPPED: $1"
    echo "$1" >&2
    exit 3
}

# acquire_cc CC: the congestion control for this run (PID $$): the kernel's, else its BPF port (testbed/cc/ccctl.sh),
# else the run is SKIPPED with ccctl's one-line reason (exit 3: this kernel cannot have CC). Any other failure of
# ccctl.sh is no reason to skip: the run fails without a marker (incomplete), so that a resume records it again. CC
# goes into held_ccs first, so the caller's teardown releases whatever a failed acquire may have left (release is
# idempotent); its implementation goes into cc_impl (meta.json).
acquire_cc() {
    local c=$1 info rc=0
    held_ccs+=("$c")
    info=$("$TB/cc/ccctl.sh" acquire "$c" "$$" 2>>"$LOG") || rc=$?
    [[ $rc -ne 3 ]] || skip "$info"
    if [[ $rc -ne 0 ]]; then
        say "cc $c: ccctl.sh acquire failed (exit $rc): the run is incomplete"
        die "$c: ccctl.sh acquire failed (exit $rc, see capture.log); the run is incomplete and a resume records it again"
    fi
    cc_impl=$(jq -c --argjson i "$info" '. + {($i.cc): ($i | del(.cc))}' <<<"$cc_impl")
    say "cc $c: $(jq -r .implementation <<<"$info")"
}

# guard_sample: JSON {cc: counters} of the held ccs' kernel-defect guards now (testbed/cc/ccctl.sh counters, cc_guard.h,
# docs/cc-guard.md; null for a kernel cc or a port without one). Taken beside host_load's samples, around the flows.
guard_sample() {
    local c s j='{}'
    for c in "${held_ccs[@]}"; do
        s=$("$TB/cc/ccctl.sh" counters "$c" 2>>"$LOG") || s=null
        j=$(jq -c --arg c "$c" --argjson s "${s:-null}" '. + {($c): $s}' <<<"$j")
    done
    echo "$j"
}

# guard_summary START END: meta.json cc_guard, per cc {ssthresh_repairs, cwnd_repairs, host_wide: true}: the repairs
# the guard made while the flows ran, by every socket of that cc on the host (concurrent runs included: the counters are
# the registered object's); null where there is no guard or the object was registered again in between.
guard_summary() {
    jq -cn --argjson a "$1" --argjson b "$2" '
        [$a | keys[] as $c | {($c): (if $a[$c] == null or $b[$c] == null then null else
            {ssthresh_repairs: ($b[$c].guard_ssthresh_repairs - $a[$c].guard_ssthresh_repairs),
             cwnd_repairs: ($b[$c].guard_cwnd_repairs - $a[$c].guard_cwnd_repairs), host_wide: true}
            | if .ssthresh_repairs < 0 or .cwnd_repairs < 0 then null else . end end)}] | add // {}'
}

# refuse_to_start: the last check before the first root command: the netns backend needs root, and a finished run
# directory (COMPLETE or SKIPPED in $out) is never overwritten. One-line errors (die, exit 2).
refuse_to_start() {
    [[ $EUID -eq 0 ]] || die "the netns backend needs root"
    if [[ -e "$out/COMPLETE" || -e "$out/SKIPPED" ]]; then die "$out is already finished; refusing to overwrite"; fi
}

# stop_run_processes: the first half of every teardown. Further INT/TERM must not cut the teardown short: a killed
# runner's parent-death signal can arrive more than once (once per exiting thread of the runner), and a user may
# press Ctrl-C twice. Then end_processes.
stop_run_processes() {
    trap - EXIT
    trap '' INT TERM
    end_processes
}

# end_processes: the captures stop, and the run's processes ($pids) are killed, reaped and forgotten (after the
# flows, and in the teardown).
# shellcheck disable=SC2154  # pids is the caller's
end_processes() {
    local p
    stop_captures
    for p in "${pids[@]}"; do signal_child TERM "$p"; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    pids=()
}

# release_ccs: the last step of a teardown: every congestion control acquire_cc took for this run (PID $$) is given
# back (testbed/cc/ccctl.sh unregisters a BPF one when no run holds it any more).
release_ccs() {
    local c
    for c in "${held_ccs[@]}"; do "$TB/cc/ccctl.sh" release "$c" "$$" 2>>"$LOG" || true; done
}
