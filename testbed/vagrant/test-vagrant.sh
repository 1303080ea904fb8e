#!/usr/bin/env bash
# End-to-end test of the vagrant backend (`make test-vagrant`; not part of the default CI run):
#   host set-up -> build the local Debian box if missing -> vagrant validate -> all 8 VMs up (libvirt, qemu TCG unless
#   MPCC_LIBVIRT_DRIVER=kvm) -> re-provision check (idempotent) -> `mpcc campaign run testbed/vagrant/e2e.yaml
#   --backend vagrant` (10-s cubic single-path + multipath) -> capture checks (goodput ratio >= 1.8, SACK, both paths)
#   -> destroy everything. Each step's wall time goes to OUT/timings.json and is printed at the end.
# usage: test-vagrant.sh [--keep] [--out DIR]
#   --keep   leave the VMs running (for debugging; `testbed/vagrant/backend.sh down` removes them)
# Environment: MPCC_VAGRANT_PREFIX (default mpcct-), MPCC_LIBVIRT_DRIVER (default qemu), MPCC_VAGRANT_BOX,
#   MPCC_TEST_VAGRANT_HOLD=FILE (wait before the timed runs while FILE exists: for hosts shared with other work).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
keep=0 out=""
die() { echo "error: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --keep) keep=1; shift ;;
        --out) out=${2:-}; shift 2 || die "--out needs a value" ;;
        *) die "usage: test-vagrant.sh [--keep] [--out DIR]" ;;
    esac
done
[[ $EUID -eq 0 ]] || die "test-vagrant.sh needs root (libvirt, box build)"
export MPCC_VAGRANT_PREFIX="${MPCC_VAGRANT_PREFIX:-mpcct-}"
[[ "$MPCC_VAGRANT_PREFIX" =~ ^[a-z0-9-]+$ ]] || die "MPCC_VAGRANT_PREFIX must match [a-z0-9-]+"
export VAGRANT_DEFAULT_PROVIDER=libvirt
export MPCC_LIBVIRT_DRIVER="${MPCC_LIBVIRT_DRIVER:-qemu}"
if [[ -z "${MPCC_LIBVIRT_EMULATOR:-}" && "$MPCC_LIBVIRT_DRIVER" == qemu ]]; then
    export MPCC_LIBVIRT_EMULATOR=/usr/local/libexec/mpcc-qemu-tcg   # installed by host-setup.sh
fi
[[ -n "$out" ]] || out=$(mktemp -d /var/tmp/mpcc-vagrant-test.XXXXXX)
mkdir -p "$out"
out=$(cd "$out" && pwd)
[[ ! -e "$out/campaign" ]] || die "$out/campaign exists; give a fresh --out"
TIMINGS="$out/timings.tsv"
: > "$TIMINGS"
log() { echo "[$(date -u +%H:%M:%S)] test-vagrant: $*" >&2; }

step() { # NAME CMD...: run, time, record
    local name=$1 t0 t1 rc=0
    shift
    log "step $name: $*"
    t0=$(date +%s.%N)
    "$@" || rc=$?
    t1=$(date +%s.%N)
    printf '%s\t%.1f\t%d\n' "$name" "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" "$rc" >> "$TIMINGS"
    log "step $name: rc=$rc, $(tail -1 "$TIMINGS" | cut -f2) s"
    return "$rc"
}

report() {
    jq -Rn '[inputs | split("\t") | {step: .[0], seconds: (.[1]|tonumber), rc: (.[2]|tonumber)}]' "$TIMINGS" > "$out/timings.json"
    echo "== timings (s) ==" >&2
    column -t "$TIMINGS" >&2 2>/dev/null || cat "$TIMINGS" >&2
    echo "results in $out" >&2
}
finish() {
    local rc=$?
    trap - EXIT INT TERM
    if [[ $keep == 0 ]]; then
        step destroy bash "$HERE/backend.sh" down || true
    else
        log "--keep: VMs left running (remove with: MPCC_VAGRANT_PREFIX=$MPCC_VAGRANT_PREFIX bash $HERE/backend.sh down)"
    fi
    report
    if [[ $rc == 0 ]]; then log "PASS"; else log "FAIL (rc=$rc)"; fi
    exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

step host_setup bash "$HERE/host-setup.sh"
step box_build bash "$HERE/build-box.sh"
step vagrant_validate env VAGRANT_CWD="$REPO" vagrant validate
step vms_up bash "$HERE/backend.sh" up

# idempotence: applying the provisioning code again changes nothing (addresses, routes, qdiscs, nft rules; TEQL slave
# qdiscs get a new kernel-chosen handle each time, which is normalised away)
snapshot() {
    local n
    for n in src1 src2 router1 switch1 switch2 router2 dst1 dst2; do
        echo "== $n"
        bash "$HERE/backend.sh" exec "$n" -- bash -c \
            "ip -br -4 addr | sort; ip route | sort; ip rule; tc qdisc show | grep -v '^qdisc \(noqueue\|fq_codel\|pfifo_fast\|mq\)' ; nft list ruleset | sed 's/counter packets [0-9]* bytes [0-9]*/counter/'; iptables -S FORWARD" \
            | sed 's/^qdisc teql0 [0-9a-f]*:/qdisc teql0 AUTO:/'   # router.sh re-creates TEQL slaves: kernel-chosen handle

    done
}
reprovision_check() {
    snapshot > "$out/state-1.txt"
    bash "$HERE/backend.sh" up
    snapshot > "$out/state-2.txt"
    diff -u "$out/state-1.txt" "$out/state-2.txt" >&2
}
step reprovision_idempotent reprovision_check
step self_check bash -c "bash '$HERE/backend.sh' check | tee '$out/check.json'"
# On a shared host, MPCC_TEST_VAGRANT_HOLD=FILE holds the timed runs while FILE exists (other CPU-heavy work would
# lower the goodput the gate measures); the wait is recorded as its own step.
if [[ -n "${MPCC_TEST_VAGRANT_HOLD:-}" ]]; then
    # shellcheck disable=SC2016  # $1 expands in the inner bash
    step hold bash -c 'while [[ -e "$1" ]]; do sleep 5; done' _ "$MPCC_TEST_VAGRANT_HOLD"
fi
step campaign python3 -m mpcc.cli campaign run "$HERE/e2e.yaml" --backend vagrant --out "$out/campaign"
step capture_checks python3 "$HERE/check_e2e.py" --json "$out/campaign"
