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
