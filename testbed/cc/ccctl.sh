#!/usr/bin/env bash
# Congestion controls for a run: the kernel's own where it has one, else this directory's BPF port, else "skipped".
# Runs on the node that sends (the host for the netns backend, a VM for the vagrant backend).
# usage: ccctl.sh status [CC...]        JSON: per CC, which implementation a run would get (nothing is registered)
#        ccctl.sh acquire CC HOLDER     make CC usable for HOLDER (a live PID); JSON on stdout. Exit 3 with the
#                                       one-line reason on stdout when CC cannot be had here.
#        ccctl.sh release CC HOLDER     HOLDER is done; the last holder's release unregisters a port we registered
#        ccctl.sh gc                    forget dead holders, unregister ports nobody holds (after a SIGKILL)
#        ccctl.sh build                 build the BPF objects (make -C testbed/cc)
# Registrations are shared by concurrent runs (the kernel's CC list is global, a name registers once): a flock'd
# state directory counts holders per CC and remembers the struct_ops id we registered, which is what we unregister.
# A CC we did not register (the kernel's, or another tool's BPF CC) is never unregistered here.
# MPCC_CC_BPF=0 turns the BPF ports off (kernel CCs only, as before they existed).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
STATE="${MPCC_CC_STATE:-/run/mpcc-cc}"
BUILD="$HERE/build"

die() { echo "error: $*" >&2; exit 2; }
usage() { sed -n '3,8p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
valid_cc() { [[ "$1" =~ ^[a-z][a-z0-9_]{0,14}$ ]]; }   # TCP_CA_NAME_MAX 16 with the NUL
valid_holder() { [[ "$1" =~ ^[1-9][0-9]*$ ]]; }

available() { [[ " $(cat /proc/sys/net/ipv4/tcp_available_congestion_control) " == *" $1 "* ]]; }
# struct_ops id of a registered tcp_congestion_ops named $1 (empty if none)
struct_ops_id() {
    command -v bpftool >/dev/null || return 0
    bpftool struct_ops show 2>/dev/null | awk -v n="$1" '$2 == n && $3 == "tcp_congestion_ops" {sub(":", "", $1); print $1; exit}'
}
has_port() { [[ -f "$HERE/$1.bpf.c" ]]; }
# why the BPF port of $1 cannot be used here (empty if it can)
port_blocker() {
    has_port "$1" || { echo "no BPF port in testbed/cc"; return; }
    [[ "${MPCC_CC_BPF:-1}" != 0 ]] || { echo "BPF ports disabled (MPCC_CC_BPF=0)"; return; }
    [[ -r /sys/kernel/btf/vmlinux ]] || { echo "kernel has no BTF (/sys/kernel/btf/vmlinux)"; return; }
    local t
    for t in bpftool make; do command -v "$t" >/dev/null || { echo "$t not installed"; return; }; done
    if [[ ! -f "$BUILD/$1.bpf.o" ]] || [[ "$HERE/$1.bpf.c" -nt "$BUILD/$1.bpf.o" ]] || [[ "$HERE/tcp_ca_helpers.h" -nt "$BUILD/$1.bpf.o" ]]; then
        command -v clang >/dev/null || { echo "clang not installed (apt-get install clang llvm libbpf-dev bpftool)"; return; }
        [[ -f /usr/include/bpf/bpf_helpers.h ]] || { echo "libbpf-dev not installed"; return; }
    fi
}
# try the kernel's own module (VMs with a modular kernel); harmless where modules cannot load
try_module() { command -v modprobe >/dev/null && modprobe -q "tcp_$1" 2>/dev/null; available "$1"; }

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }
git_blob_of() { git hash-object "$1" 2>/dev/null || echo null; }

impl_json() { # CC -> JSON of the implementation in use now
    local cc=$1 id
    id=$(struct_ops_id "$cc")
    if [[ -z "$id" ]]; then
        jq -cn --arg cc "$cc" '{cc:$cc, implementation:"kernel"}'
    elif [[ -f "$STATE/$cc.id" && "$(cat "$STATE/$cc.id")" == "$id" ]]; then
        jq -cn --arg cc "$cc" --argjson id "$id" --arg sha "$(cat "$STATE/$cc.sha256")" --arg blob "$(cat "$STATE/$cc.blob")" \
            --arg src "testbed/cc/$cc.bpf.c" \
            '{cc:$cc, implementation:"bpf", struct_ops_id:$id, object_sha256:$sha, source:$src,
              source_git_blob:(if $blob == "null" then null else $blob end), registered_by:"mpcc"}'
    else
        jq -cn --arg cc "$cc" --argjson id "$id" '{cc:$cc, implementation:"bpf", struct_ops_id:$id, object_sha256:null,
              source:null, source_git_blob:null, registered_by:"external"}'
    fi
}

with_lock() { # run "$@" holding the state lock
    mkdir -p "$STATE"
    exec 9>"$STATE/lock"
    flock 9
    "$@"
}

alive() { # holder "pid:starttime" still running (the start time guards against PID reuse)
    local pid=${1%%:*} st=${1#*:} now
    [[ -r "/proc/$pid/stat" ]] || return 1
    now=$(awk '{sub(/^.*\) /, ""); print $20}' "/proc/$pid/stat" 2>/dev/null) || return 1
    [[ "$now" == "$st" ]]
}
holder_key() { echo "$1:$(awk '{sub(/^.*\) /, ""); print $20}' "/proc/$1/stat")"; }

prune() { # CC: drop dead holders; unregister our registration when none is left
    local cc=$1 h live=()
    if [[ -f "$STATE/$cc.holders" ]]; then
        while read -r h; do [[ -n "$h" ]] && alive "$h" && live+=("$h"); done < "$STATE/$cc.holders"
    fi
    if [[ ${#live[@]} -gt 0 ]]; then
        printf '%s\n' "${live[@]}" > "$STATE/$cc.holders"
        return
    fi
    rm -f "$STATE/$cc.holders"
    if [[ -f "$STATE/$cc.id" ]]; then
        local id
        id=$(cat "$STATE/$cc.id")
        if [[ "$(struct_ops_id "$cc")" == "$id" ]]; then
            bpftool struct_ops unregister id "$id" >/dev/null 2>&1 || echo "warning: could not unregister $cc (struct_ops id $id)" >&2
        fi
        rm -f "$STATE/$cc.id" "$STATE/$cc.sha256" "$STATE/$cc.blob"
    fi
}

register_port() { # CC -> registers build/CC.bpf.o, records id, sha256, source blob
    local cc=$1 obj out id
    make -s -C "$HERE" "build/$cc.bpf.o" >&2 || { echo "$cc: not available on this kernel — skipped (BPF port failed to build)"; return 3; }
    obj="$BUILD/$cc.bpf.o"
    out=$(bpftool struct_ops register "$obj" 2>&1) || true
    id=$(struct_ops_id "$cc")
    if [[ -z "$id" ]]; then
        echo "$cc: not available on this kernel — skipped (BPF port did not register: $(tr '\n' ' ' <<<"$out" | cut -c1-160))"
        return 3
    fi
    echo "$id" > "$STATE/$cc.id"
    sha256_of "$obj" > "$STATE/$cc.sha256"
    (cd "$HERE" && git_blob_of "$cc.bpf.c") > "$STATE/$cc.blob"
}

do_acquire() {
    local cc=$1 holder=$2
    prune "$cc"
    if available "$cc" || { [[ -z "$(struct_ops_id "$cc")" ]] && try_module "$cc"; }; then
        :  # the kernel's own, or a registration that already exists (ours or another tool's)
    else
        local why
        why=$(port_blocker "$cc")
        [[ -z "$why" ]] || { echo "$cc: not available on this kernel — skipped (no tcp_$cc; BPF port: $why)"; return 3; }
        register_port "$cc" || return 3
    fi
    # only registrations of ours are counted: the kernel's own CCs and others' need no bookkeeping
    if [[ -f "$STATE/$cc.id" ]] && ! grep -qs -- "^$holder:" "$STATE/$cc.holders"; then
        holder_key "$holder" >> "$STATE/$cc.holders"
    fi
    impl_json "$cc"
}

do_release() {
    local cc=$1 holder=$2
    if [[ -f "$STATE/$cc.holders" ]]; then
        grep -v -- "^$holder:" "$STATE/$cc.holders" > "$STATE/$cc.holders.tmp" || true
        mv "$STATE/$cc.holders.tmp" "$STATE/$cc.holders"
    fi
    prune "$cc"
}

do_gc() {
    local f
    for f in "$STATE"/*.id; do
        [[ -e "$f" ]] || continue
        prune "$(basename "$f" .id)"
    done
}

do_status() {
    local out="{}" cc impl why
    for cc in "$@"; do
        why=""
        if available "$cc"; then
            impl=$(jq -r .implementation <<<"$(impl_json "$cc")")
        elif has_port "$cc"; then
            why=$(port_blocker "$cc")
            if [[ -z "$why" ]]; then impl=bpf; else impl=null; fi
        else
            impl=null; why="no tcp_$cc in this kernel and no BPF port"
        fi
        out=$(jq -c --arg cc "$cc" --arg impl "$impl" --arg why "$why" \
            '. + {($cc): {implementation:(if $impl == "null" then null else $impl end), reason:(if $why == "" then null else $why end)}}' <<<"$out")
    done
    echo "$out"
}

cmd=${1:-}
shift || usage
case "$cmd" in
    status)
        [[ $# -gt 0 ]] || set -- reno cubic bbr bic westwood westwood_e pcc_vivace
        for c in "$@"; do valid_cc "$c" || die "bad cc name '$c'"; done
        do_status "$@" ;;
    acquire|release)
        [[ $# -eq 2 ]] || usage
        valid_cc "$1" || die "bad cc name '$1'"
        valid_holder "$2" || die "holder must be a PID, got '$2'"
        [[ $EUID -eq 0 ]] || die "ccctl.sh $cmd needs root (bpftool struct_ops)"
        if [[ $cmd == acquire ]]; then
            kill -0 "$2" 2>/dev/null || die "holder $2 is not a running process"
            with_lock do_acquire "$1" "$2"
        else
            with_lock do_release "$1" "$2"
        fi ;;
    gc)
        [[ $EUID -eq 0 ]] || die "ccctl.sh gc needs root"
        with_lock do_gc ;;
    build) make -s -C "$HERE" ;;
    *) usage ;;
esac
