#!/usr/bin/env bash
# Congestion controls for a run: the kernel's own where it has one, else this directory's BPF port, else "skipped".
# Runs on the node that sends (the host for the netns backend, a VM for the vagrant backend).
# usage: ccctl.sh status [CC...]        JSON: per CC, which implementation a run would get (nothing is registered)
#        ccctl.sh acquire CC HOLDER     make CC usable for HOLDER (a live PID); JSON on stdout. Exit 3 with the
#                                       one-line reason on stdout when CC cannot be had here.
#        ccctl.sh release CC HOLDER     HOLDER is done; the last holder's release unregisters a port we registered
#        ccctl.sh gc                    forget dead holders, unregister ports nobody holds (after a SIGKILL)
#        ccctl.sh build                 build the BPF objects (make -C testbed/cc)
#        ccctl.sh counters CC           JSON: the kernel-defect guard's repair counters of the registered port
#                                       (cc_guard.h, docs/cc-guard.md; null for a kernel CC or an unregistered one)
# Registrations are shared by concurrent runs (the kernel's CC list is global, a name registers once): a flock'd
# state directory counts holders per CC and remembers the struct_ops id we registered, which is what we unregister.
# A CC we did not register (the kernel's, or another tool's BPF CC) is never unregistered here.
# Transactions (every step below holds the lock): acquire writes its holder LAST, after the CC is usable and its JSON is
# made, so a failed or killed acquire leaves no holder; a registration without a live holder (its acquire failed, was
# killed, or its holders died) is unregistered by the next acquire, release or gc of that CC. A registration that was
# under way when its ccctl.sh was killed is adopted from its intent file ($CC.registering) and then pruned the same
# way. Every state file is replaced atomically (write, then rename). release is idempotent.
# Exit status: 0 done; 3 the CC cannot be had on this kernel (acquire: the run is SKIPPED); anything else is a failure
# (a run that gets one is incomplete and is recorded again).
# MPCC_CC_BPF=0 turns the BPF ports off (kernel CCs only, as before they existed).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
STATE="${MPCC_CC_STATE:-/run/mpcc-cc}"
BUILD="$HERE/build"

die() { echo "error: $*" >&2; exit 2; }
usage() { sed -n '3,10p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
valid_cc() { [[ "$1" =~ ^[a-z][a-z0-9_]{0,14}$ ]]; }   # TCP_CA_NAME_MAX 16 with the NUL
valid_holder() { [[ "$1" =~ ^[1-9][0-9]*$ ]]; }

available() { [[ " $(cat /proc/sys/net/ipv4/tcp_available_congestion_control) " == *" $1 "* ]]; }
# shellcheck source=testbed/cc/struct_ops_lib.sh
source "$HERE/struct_ops_lib.sh"   # struct_ops_id
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
    id=$(struct_ops_id "$cc") || return 2
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

with_lock() { # run "$@" holding the state lock (released by the kernel when this process dies, even by SIGKILL)
    mkdir -p "$STATE"
    exec 9>"$STATE/lock"
    flock 9
    rm -f "$STATE"/*.tmp.*   # half-written state of a ccctl.sh killed while it held the lock
    "$@"
}

# put FILE: standard input becomes FILE atomically (a reader, or a SIGKILL, never sees half a file)
put() { cat > "$1.tmp.$$" && mv -f "$1.tmp.$$" "$1"; }

alive() { # holder "pid:starttime" still running (the start time guards against PID reuse)
    local pid=${1%%:*} st=${1#*:} now
    [[ -r "/proc/$pid/stat" ]] || return 1
    now=$(awk '{sub(/^.*\) /, ""); print $20}' "/proc/$pid/stat" 2>/dev/null) || return 1
    [[ "$now" == "$st" ]]
}
holder_key() { # PID -> "pid:starttime"; fails when PID is gone
    local st
    st=$(awk '{sub(/^.*\) /, ""); print $20}' "/proc/$1/stat" 2>/dev/null) || return 1
    [[ -n "$st" ]] || return 1
    echo "$1:$st"
}

# forget CC: our registration's bookkeeping goes (the id file first: without it the rest means nothing)
forget() { rm -f "$STATE/$1.id" "$STATE/$1.sha256" "$STATE/$1.blob" "$STATE/$1.registering"; }

prune() { # CC: drop dead holders; unregister our registration when no live holder is left
    local cc=$1 h id now live=()
    # a registration under way when its ccctl.sh was killed: adopt it if the kernel has it (we held the lock, so the
    # struct_ops of that name is ours), so that it is unregistered below like any other unheld one
    if [[ -f "$STATE/$cc.registering" && ! -f "$STATE/$cc.id" ]]; then
        now=$(struct_ops_id "$cc") || return 2
        [[ -z "$now" ]] || echo "$now" | put "$STATE/$cc.id"
        rm -f "$STATE/$cc.registering"
    fi
    if [[ -f "$STATE/$cc.holders" ]]; then
        while read -r h; do [[ -n "$h" ]] && alive "$h" && live+=("$h"); done < "$STATE/$cc.holders"
    fi
    if [[ ${#live[@]} -gt 0 ]]; then
        printf '%s\n' "${live[@]}" | put "$STATE/$cc.holders"
        return 0
    fi
    rm -f "$STATE/$cc.holders"
    [[ -f "$STATE/$cc.id" ]] || return 0
    id=$(cat "$STATE/$cc.id")
    now=$(struct_ops_id "$cc") || return 2
    if [[ -n "$now" && "$now" == "$id" ]]; then
        if ! bpftool struct_ops unregister id "$id" >/dev/null 2>&1; then
            now=$(struct_ops_id "$cc") || return 2
            if [[ "$now" == "$id" ]]; then
                echo "error: could not unregister $cc (struct_ops id $id)" >&2
                return 2
            fi
        fi
    fi
    forget "$cc"
}

register_port() { # CC -> registers build/CC.bpf.o, records id, sha256, source blob. 3: cannot be had; 2: failed
    local cc=$1 obj out id
    make -s -C "$HERE" "build/$cc.bpf.o" >&2 || { echo "$cc: not available on this kernel — skipped (BPF port failed to build)"; return 3; }
    obj="$BUILD/$cc.bpf.o"
    sha256_of "$obj" | put "$STATE/$cc.sha256" || return 2
    (cd "$HERE" && git_blob_of "$cc.bpf.c") | put "$STATE/$cc.blob" || return 2
    : > "$STATE/$cc.registering"
    out=$(bpftool struct_ops register "$obj" 2>&1) || true
    id=$(struct_ops_id "$cc") || return 2
    if [[ -z "$id" ]]; then
        forget "$cc"
        echo "$cc: not available on this kernel — skipped (BPF port did not register: $(tr '\n' ' ' <<<"$out" | cut -c1-160))"
        return 3
    fi
    echo "$id" | put "$STATE/$cc.id" || return 2
    rm -f "$STATE/$cc.registering"
}

# do_acquire CC HOLDER: the holder line is written last, after the CC is usable and its JSON made; any failure before
# it leaves nothing held (a registration it made is unheld and goes at the next prune: right here on failure)
do_acquire() {
    local cc=$1 holder=$2 key id rc=0 info
    prune "$cc" || return 2
    key=$(holder_key "$holder") || { echo "error: holder $holder exited" >&2; return 2; }
    id=$(struct_ops_id "$cc") || return 2
    if available "$cc" || { [[ -z "$id" ]] && try_module "$cc"; }; then
        :  # the kernel's own, or a registration that already exists (ours or another tool's)
    else
        local why
        why=$(port_blocker "$cc")
        [[ -z "$why" ]] || { echo "$cc: not available on this kernel — skipped (no tcp_$cc; BPF port: $why)"; return 3; }
        register_port "$cc" || rc=$?
        if [[ $rc -ne 0 ]]; then prune "$cc" || true; return "$rc"; fi
    fi
    info=$(impl_json "$cc") || { prune "$cc" || true; return 2; }
    # only registrations of ours are counted: the kernel's own CCs and others' need no bookkeeping
    if [[ -f "$STATE/$cc.id" ]]; then
        { if [[ -f "$STATE/$cc.holders" ]]; then grep -v -- "^$holder:" "$STATE/$cc.holders" || true; fi; echo "$key"; } \
            | put "$STATE/$cc.holders" || { prune "$cc" || true; return 2; }
    fi
    echo "$info"
}

do_release() { # idempotent: a holder that holds nothing (any more) is fine
    local cc=$1 holder=$2
    if [[ -f "$STATE/$cc.holders" ]]; then
        { grep -v -- "^$holder:" "$STATE/$cc.holders" || true; } | put "$STATE/$cc.holders"
    fi
    prune "$cc"
}

do_gc() {
    local f cc rc=0
    for f in "$STATE"/*.id "$STATE"/*.registering "$STATE"/*.holders; do
        [[ -e "$f" ]] || continue
        cc=$(basename "$f"); cc=${cc%.*}
        prune "$cc" || rc=2
    done
    return "$rc"
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
        [[ $# -gt 0 ]] || set -- reno cubic bbr bic westwood westwood_e pcc_vivace pcc_vivace_usp bic415
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
    counters)
        [[ $# -eq 1 ]] || usage
        valid_cc "$1" || die "bad cc name '$1'"
        [[ $EUID -eq 0 ]] || die "ccctl.sh counters needs root (bpftool)"
        guard_counters "$1" ;;
    *) usage ;;
esac
