# shellcheck shell=bash
# Helpers of the capture tools (sourced, not executed): capture_tools/run_experiment.sh (study 000) and
# capture_tools/run_dualpath.sh (studies 001, 003) measure host load and stop captures with the same code, so runs of
# every study family are recorded on one scale (same meta.json fields).

# host_load_sample -> JSON {wall_us, psi_some_us (null without PSI), loadavg1, ncpu}
host_load_sample() {
    local psi=null la wall
    wall=$(date +%s%6N)
    if [[ -r /proc/pressure/cpu ]]; then
        psi=$(sed -n 's/^some .*total=\([0-9]*\)$/\1/p' /proc/pressure/cpu)
        [[ "$psi" =~ ^[0-9]+$ ]] || psi=null
    fi
    read -r la _ < /proc/loadavg
    printf '{"wall_us":%s,"psi_some_us":%s,"loadavg1":%s,"ncpu":%s}' "$wall" "$psi" "$la" "$(nproc)"
}

# host_load_summary SAMPLE0 SAMPLE1 -> meta.json host_load: host CPU contention while the flows ran.
# PSI "some" stall share = delta(total stall us) / delta(wall us) (Linux Documentation/accounting/psi.rst).
host_load_summary() {
    jq -n --argjson a "$1" --argjson b "$2" '
    {loadavg_1min_start:$a.loadavg1, loadavg_1min_end:$b.loadavg1, ncpu:$a.ncpu,
     cpu_pressure_some_pct:(if $a.psi_some_us != null and $b.psi_some_us != null and $b.wall_us > $a.wall_us
        then ((($b.psi_some_us - $a.psi_some_us) / ($b.wall_us - $a.wall_us) * 1000 | round) / 10) else null end)}'
}

# stop_captures: SIGINT to every PID in the caller's array tcpdump_pids (tcpdump flushes), TERM after 3 s if a
# SIGINT was lost; empties the array.
stop_captures() {
    local p i alive
    [[ ${#tcpdump_pids[@]} -gt 0 ]] || return 0
    for p in "${tcpdump_pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
    for i in $(seq 30); do
        alive=0
        for p in "${tcpdump_pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
        [[ $alive == 0 ]] && break
        [[ $i == 30 ]] && for p in "${tcpdump_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
        sleep 0.1
    done
    for p in "${tcpdump_pids[@]}"; do wait "$p" 2>/dev/null || true; done
    tcpdump_pids=()
}

# wait_pid_timeout PID SECONDS: wait for a child; TERM it (then KILL) when it outlives SECONDS. Returns its status.
wait_pid_timeout() {
    local pid=$1 t=$2 i
    for ((i = 0; i < t * 10; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        sleep 1
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null
}
