# shellcheck shell=bash
# Sourced by ccctl.sh (host and VMs) and validate-guest.sh (the Debian VM): which struct_ops is registered.

# struct_ops id of the REGISTERED tcp_congestion_ops named $1 (empty if none). Two traps, both met in CI:
# - an unregistered struct_ops map lives on (state TOBEFREE, same name, listed first by its lower id) until the last
#   socket using it closes (TIME_WAIT included), so a re-registration has two maps of that name: only the one in state
#   INUSE is registered, and `bpftool struct_ops show` does not say which (its dump does);
# - bpftool's output is read whole before it is parsed: a pipeline reader that quits early (awk's exit, head,
#   grep -q) kills bpftool with SIGPIPE under pipefail (tools/check_pipelines.py finds those).
# - the state's place in the dump: "common": {"state": ...} from Linux 6.9 (struct bpf_struct_ops_common_value, the
#   host), "state" directly before (the Debian VM's 6.1); both are read.
# A failing bpftool is retried, then an error (exit 2: never taken for "not registered").
struct_ops_id() {
    command -v bpftool >/dev/null || return 0
    # struct_ops needs the kernel's BTF (Linux >= 5.6 built with it): a kernel without /sys/kernel/btf/vmlinux (the
    # paper's 4.15, docs/kernel-415.md) can have no registered struct_ops, and bpftool's dump fails there
    [[ -r /sys/kernel/btf/vmlinux ]] || return 0
    local out try
    for try in 1 2 3; do
        if out=$(bpftool -j struct_ops dump 2>/dev/null) && [[ -n "$out" ]]; then
            jq -r --arg n "$1" '
                [foreach .[] as $e ({info: null, hit: null};
                    if $e.bpf_map_info then {info: $e.bpf_map_info, hit: null}
                    else {info: .info, hit: (if .info != null and .info.name == $n
                              and ($e.bpf_struct_ops_tcp_congestion_ops | .common.state // .state)
                                  == "BPF_STRUCT_OPS_STATE_INUSE"
                              then .info.id else null end)} end;
                    .hit) | select(. != null)] | first // empty' <<<"$out" && return 0
        fi
        sleep 0.2
    done
    echo "error: bpftool -j struct_ops dump failed $try times" >&2
    return 2
}

# JSON {"guard_ssthresh_repairs": N, "guard_cwnd_repairs": N} of the REGISTERED tcp_congestion_ops named $1 (the global
# counters of its object's cc_guard.h, docs/cc-guard.md: repairs since it was registered, over every socket), or
# null when it is not registered or its object has no guard (a kernel CC, an external port). Read from the .bss map
# of the object's programs: struct_ops dump -> the .ssthresh program's id -> its maps -> the one named *.bss.
guard_counters() {
    local id dump prog maps m info val
    id=$(struct_ops_id "$1") || return 2
    [[ -n "$id" ]] || { echo null; return 0; }
    dump=$(bpftool -j struct_ops dump id "$id" 2>/dev/null) || { echo null; return 0; }
    [[ $dump == \[* ]] || dump="[$dump]"    # one map: bpftool prints its two objects without the list's brackets
    prog=$(jq -r '[.[] | .bpf_struct_ops_tcp_congestion_ops.data.ssthresh? // empty] | first // ""
                  | capture("prog_id:(?<p>[0-9]+)").p // empty' <<<"$dump")
    [[ -n "$prog" ]] || { echo null; return 0; }
    maps=$(bpftool -j prog show id "$prog" 2>/dev/null | jq -r '.map_ids[]? // empty') || maps=""
    for m in $maps; do
        info=$(bpftool -j map show id "$m" 2>/dev/null) || continue
        [[ $(jq -r '.name // ""' <<<"$info") == *.bss ]] || continue
        val=$(bpftool -j map dump id "$m" 2>/dev/null) || continue
        jq -c '[.[0] | (.formatted.value // .value) | .[".bss"][]? | to_entries[]
                | select(.key | startswith("guard_"))] | from_entries
               | if has("guard_ssthresh_repairs") then . else null end' <<<"$val"
        return 0
    done
    echo null
}
