#!/usr/bin/env bash
# Study 000's loss experiment (statements S06/S07: the goodput drop under random loss) on the paper's own kernel,
# Linux 4.15 (its section 2.1: Ubuntu 16.04 with the hardware-enablement kernel 4.15), beside Debian 12's 6.1, in ONE
# VM booted directly with qemu-system-x86_64 under TCG (testbed/lib/qemu_box.sh). Both arms boot the same box image
# (testbed/vagrant/build-box.sh --extra-kernel ubuntu:4.15.0-54.58: Debian 12's userspace with Ubuntu's kernel
# beside Debian's); only the kernel differs. docs/kernel-415.md describes the question, the arms and the results.
#   1. makes sure the box exists with the extra kernel (build-box.sh --name BOX --extra-kernel ubuntu:KVER)
#   2. per kernel block of the plan: boots the box on that kernel (a throw-away qcow2 overlay), copies the
#      repository's capture tool and namespace testbed into the guest as they are (GUEST_FILES) with
#      testbed/kernel415/run-guest.sh, and runs ONE RUN PER CALL: capture_tools/run_experiment.sh --backend netns
#      --experiment loss_rate (the paper's switch: TBF with netem's delay, loss and 100-packet limit, queue_model
#      tbf-netem; two paths, per-packet round robin) for each (cc, loss) of the block, in an order shuffled by --seed
#      and rep; the VM is stopped at the end of the block
#   3. each run is copied back at once into DIR/<arm>/runs/<run_id>/ (run_id as mpcc/families/f000.py names it), with
#      guest.json (the guest's kernel and TCP sysctls) and vm_host.json (this host's CPU pressure over the run: TCG's
#      timing depends on it), COMPLETE last; DIR/<arm>/campaign.json makes each arm a campaign directory that
#      `mpcc bundle` packages
# Kernel blocks: rep 1 runs the kernels in --kernels order, rep 2 in reverse, and so on (ABBA: drift over the session
# hits both arms alike; a boot per block, about 1 min).
# Arms: KREL of an extra kernel in the box (4.15.0-54-generic) or "default" (the box's Debian kernel); DIR/<arm> is
# linux-<major.minor of the booted kernel>.
# An interrupted session continues with --resume DIR: the plan is read from DIR/params.json (options given again must
# agree), complete runs are kept, a run directory without COMPLETE is moved to DIR/incomplete/ (never deleted).
# --redo-contended PCT: a complete run whose host CPU pressure (vm_host.json, PSI some) exceeded PCT % is moved to
# DIR/incomplete/<run_id>.<time>-contended (kept, never analysed) and recorded again: under TCG the guest's timing
# depends on this host, and an idle host gives 5-9 %.
# Analyse: python -m analysis.kernel415 DIR (or the bundles: mpcc bundle DIR/<arm> --format columnar --out ...)
# Needs root (build-box.sh runs mmdebstrap) and: qemu-system-x86 qemu-utils mmdebstrap e2fsprogs vagrant
# openssh-client jq curl (Debian: apt-get install -y --no-install-recommends ...).
# Exit 0 when every run is complete, 1 when a run failed (see its capture.log; --resume runs it again), 2 on usage or
# set-up errors.
# usage: run-vm.sh --out DIR [--resume] [--reps 5] [--duration-s 100] [--ccs "reno bic cubic"] [--losses "0 1"]
#                  [--kernels "4.15.0-54-generic default"] [--link-delay-ms 10] [--seed N] [--max-runs N] [--redo-contended PCT]
#                  [--box mpcc/debian12-k415] [--memory-mb 2048] [--cpus 2] [--boot-timeout-s 900]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
# shellcheck source=testbed/lib/qemu_box.sh
source "$ROOT/testbed/lib/qemu_box.sh"   # qbox_key, qbox_prepare, qbox_boot, gssh, qbox_teardown, qbox_traps
# shellcheck source=testbed/lib/qemu_runs.sh
source "$ROOT/testbed/lib/qemu_runs.sh"  # qbox_parse_args, qbox_check_vm_args, qbox_require_host, qbox_pending
# shellcheck source=capture_tools/capture_lib.sh
source "$ROOT/capture_tools/capture_lib.sh"   # host_load_sample, host_load_summary (this host's side of each run)
GUEST_FILES=(capture_tools/run_experiment.sh capture_tools/experiment_args.sh capture_tools/capture_lib.sh
             testbed/netns.sh testbed/features.sh testbed/topology.json testbed/lib/nsbuild.sh
             testbed/nodes/common.sh testbed/nodes/host.sh testbed/nodes/router.sh testbed/nodes/switch.sh
             testbed/cc/ccctl.sh testbed/cc/struct_ops_lib.sh testbed/kernel415/run-guest.sh)
EXTRA_KERNEL=ubuntu:4.15.0-54.58   # the box's extra kernel (build-box.sh --extra-kernel; docs/kernel-415.md)
box="${MPCC_VAGRANT_BOX:-mpcc/debian12-k415}" mem_mb=2048 cpus=2 boot_timeout=900 out="" resume=0 max_runs=0
GUEST_IN=/tmp/k415-in GUEST_OUT=/var/tmp/k415-out
MATRIX=(reps duration ccs losses kernels link_delay_ms seed)
declare -A P=() DEF=([reps]=5 [duration]=100 [ccs]="reno bic cubic" [losses]="0 1"
    [kernels]="4.15.0-54-generic default" [link_delay_ms]=10 [seed]="")

die() { echo "error: $*" >&2; exit 2; }
log() { echo "[$(date -u +%H:%M:%S)] kernel415-vm: $*" >&2; }
usage() { sed -n '/^# usage:/,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }
redo_contended=""
args=()
while [[ $# -gt 0 ]]; do   # this harness's own option; the rest is qemu_runs.sh's (qbox_parse_args)
    if [[ "$1" == --redo-contended ]]; then redo_contended=${2:-}; shift 2 || usage; else args+=("$1"); shift; fi
done
qbox_parse_args ${args[@]+"${args[@]}"}
# ---- every argument is checked before anything runs as root
[[ -n "$out" ]] || die "--out DIR is required"
if [[ -e "$out" && ! -d "$out" ]]; then die "--out $out exists and is not a directory"; fi
command -v jq >/dev/null || die "jq is not installed (apt-get install -y jq)"
if (( resume )); then
    qbox_resume_plan "$out" plan
else
    if [[ -d "$out" ]] && [[ -n "$(ls -A "$out")" ]]; then die "--out $out exists and is not empty (continue it with --resume)"; fi
    for k in "${MATRIX[@]}"; do [[ -v "P[$k]" ]] || P[$k]=${DEF[$k]}; done
fi
reps=${P[reps]} duration=${P[duration]} link_delay_ms=${P[link_delay_ms]} seed=${P[seed]}
[[ "$reps" =~ ^[1-9][0-9]{0,2}$ ]] || die "--reps must be an integer 1..999, got '$reps'"
if ! [[ "$duration" =~ ^[1-9][0-9]{0,4}$ ]] || (( duration < 10 )); then die "--duration-s must be an integer 10..99999, got '$duration'"; fi
[[ "$link_delay_ms" =~ ^[0-9]{1,4}$ ]] || die "--link-delay-ms must be an integer 0..9999, got '$link_delay_ms'"
read -r -a CCS <<<"${P[ccs]}"
[[ ${#CCS[@]} -gt 0 ]] || die "--ccs is empty"
for c in "${CCS[@]}"; do [[ "$c" =~ ^(reno|bic|cubic|bbr)$ ]] || die "--ccs: each must be reno, bic, cubic or bbr, got '$c'"; done
[[ $(printf '%s\n' "${CCS[@]}" | sort -u | wc -l) -eq ${#CCS[@]} ]] || die "--ccs lists a cc twice"
read -r -a LOSSES <<<"${P[losses]}"
[[ ${#LOSSES[@]} -gt 0 ]] || die "--losses is empty"
for l in "${LOSSES[@]}"; do
    if ! [[ "$l" =~ ^(0|[1-9][0-9]?)(\.[0-9]*[1-9])?$ ]] || ! awk -v l="$l" 'BEGIN {exit !(l <= 10)}'; then
        die "--losses: each must be a loss percentage 0..10 written without trailing zeros (1, 0.5), got '$l'"
    fi
done
[[ $(printf '%s\n' "${LOSSES[@]}" | sort -u | wc -l) -eq ${#LOSSES[@]} ]] || die "--losses lists a level twice"
read -r -a KERNELS <<<"${P[kernels]}"
[[ ${#KERNELS[@]} -gt 0 ]] || die "--kernels is empty"
for k in "${KERNELS[@]}"; do [[ "$k" == default || "$k" =~ ^[0-9]+\.[0-9]+\.[0-9]+-[0-9]+-generic$ ]] \
    || die "--kernels: each must be 'default' (the box's Debian kernel) or an extra kernel's release (4.15.0-54-generic), got '$k'"; done
[[ $(printf '%s\n' "${KERNELS[@]}" | sort -u | wc -l) -eq ${#KERNELS[@]} ]] || die "--kernels lists a kernel twice"
if [[ -z "$seed" ]]; then seed=$(( $(date +%s) % 1000000 )); fi
[[ "$seed" =~ ^[0-9]{1,9}$ ]] || die "--seed must be an integer 0..999999999, got '$seed'"
if [[ -n "$redo_contended" ]] && ! [[ "$redo_contended" =~ ^[0-9]{1,2}(\.[0-9]+)?$ ]]; then
    die "--redo-contended must be a CPU pressure in % (0-99.9), got '$redo_contended'"
fi
qbox_check_vm_args
qbox_require_host
command -v curl >/dev/null || die "curl is not installed (build-box.sh downloads the extra kernel with it)"

# ---- the plan: one line per run, "rep kernel cc loss", in the order they run
plan() {
    local rep b order=() ks=("${KERNELS[@]}") k s
    for rep in $(seq "$reps"); do
        if (( rep % 2 == 0 )); then   # ABBA: every other rep runs the kernels in reverse order
            ks=(); for (( b = ${#KERNELS[@]} - 1; b >= 0; b-- )); do ks+=("${KERNELS[b]}"); done
        else
            ks=("${KERNELS[@]}")
        fi
        for k in "${ks[@]}"; do
            # the (cc, loss) of this block in an order shuffled by seed, rep and kernel
            mapfile -t order < <(for c in "${CCS[@]}"; do for l in "${LOSSES[@]}"; do
                    printf '%s\t%s %s\n' "$(printf '%s:%s:%s:%s:%s' "$seed" "$rep" "$k" "$c" "$l" | sha256sum | cut -c1-16)" "$c" "$l"
                done; done | sort -k1,1 | cut -f2)
            for s in "${order[@]}"; do echo "$rep $k $s"; done
        done
    done
}
run_id_of() {   # cc loss rep: mpcc/families/f000.py's run_id of this loss_rate run
    printf 'loss_rate__%s__multipath__d%sms__l%spct__q-tbf-netem__rep%02d' "$1" "$link_delay_ms" "$2" "$3"
}
arm_of() { if [[ $1 == default ]]; then echo "${ARM_DEFAULT:-linux-default}"; else echo "linux-$(cut -d. -f1,2 <<<"$1")"; fi; }
run_name_of() { local rep k c l; read -r rep k c l <<<"$1"; echo "$(arm_of "$k")/runs/$(run_id_of "$c" "$l" "$rep")"; }
if (( resume )); then
    mapfile -t PLAN < <(jq -r '.plan[] | "\(.rep) \(.kernel) \(.cc) \(.loss_pct)"' "$out/params.json")
    [[ ${#PLAN[@]} -gt 0 ]] || die "--resume: $out/params.json has no plan"
    ARM_DEFAULT=$(jq -r '.arm_default // "linux-default"' "$out/params.json")
else
    mapfile -t PLAN < <(plan)
fi

qbox_key
T0=$(date +%s)
mkdir -p "$out"
out="$(cd "$out" && pwd)"
STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
COMMIT=$(cd "$ROOT" && git rev-parse HEAD 2>/dev/null || echo)   # once per session (campaign.json after every run)
QEMU_VERSION=$(qemu-system-x86_64 --version | sed -n 1p)
if (( ! resume )); then
    jq -n --argjson reps "$reps" --argjson duration "$duration" --arg ccs "${CCS[*]}" --arg losses "${LOSSES[*]}" \
        --arg kernels "${KERNELS[*]}" --argjson d "$link_delay_ms" --argjson seed "$seed" --arg box "$box" \
        --arg extra "$EXTRA_KERNEL" --arg plan "$(printf '%s\n' "${PLAN[@]}")" \
        --arg commit "$COMMIT" \
        --arg dirty "$(cd "$ROOT" && git status --porcelain -- "${GUEST_FILES[@]}" testbed/kernel415 2>/dev/null | tr '\n' ';')" \
        '{reps:$reps, duration:$duration, ccs:$ccs, losses:$losses, kernels:$kernels, link_delay_ms:$d, seed:$seed,
          box:$box, extra_kernel:$extra, experiment:"loss_rate", path_mode:"multipath", queue_model:"tbf-netem",
          plan:($plan | split("\n") | map(select(. != "") | split(" ") | {rep:(.[0]|tonumber), kernel:.[1], cc:.[2], loss_pct:.[3]})),
          git_commit:$commit, git_dirty:$dirty}' > "$out/params.json"
fi

# ---- which runs remain; a run directory without COMPLETE is moved aside (never deleted)
pending() {
    local line name
    todo=()
    for line in "${PLAN[@]}"; do
        name=$(run_name_of "$line")
        if [[ -f "$out/$name/COMPLETE" && -n "$redo_contended" ]] \
           && jq -e --argjson t "$redo_contended" '(.host_load.cpu_pressure_some_pct // 0) > $t' "$out/$name/vm_host.json" >/dev/null 2>&1; then
            mkdir -p "$out/incomplete"
            mv "$out/$name" "$out/incomplete/$(basename "$name").$(date -u +%Y%m%dT%H%M%SZ)-contended"
            log "$name ran under host CPU pressure above $redo_contended %: moved to incomplete/, recorded again"
        fi
        [[ -f "$out/$name/COMPLETE" ]] && continue
        if [[ -e "$out/$name" ]]; then
            mkdir -p "$out/incomplete"
            mv "$out/$name" "$out/incomplete/$(basename "$name").$(date -u +%Y%m%dT%H%M%SZ)"
            log "$name was not complete: moved to incomplete/"
        fi
        todo+=("$line")
    done
    if (( max_runs > 0 && ${#todo[@]} > max_runs )); then todo=("${todo[@]:0:max_runs}"); fi
}
pending
if (( ${#todo[@]} == 0 )); then log "every run of $out is complete"; exit 0; fi
log "${#todo[@]} of ${#PLAN[@]} runs to go, ${duration} s each: about $(( (${#todo[@]} * (duration + 40) + 120 * (reps + 1)) / 60 )) min under TCG"

qbox_traps "$out"
booted=""   # the kernel of the VM that is up ("" none)
MPCC_BOX_EXTRA_KERNEL=$EXTRA_KERNEL
export MPCC_BOX_EXTRA_KERNEL
up() {   # KERNEL: the box booted on it, the guest files copied in
    local k=$1
    [[ -z "$booted" ]] || qbox_teardown "$out"
    booted=""
    if [[ $k == default ]]; then qbox_prepare "$box"; else qbox_prepare "$box" "$k"; fi
    qbox_boot mpcc-k415 "$cpus" "$mem_mb" "$boot_timeout"
    booted=$k
    [[ $k == default || $guest_kernel == "$k" ]] || die "asked for kernel $k, the guest runs $guest_kernel"
    if [[ $k == default && -z "${ARM_DEFAULT:-}" ]]; then
        ARM_DEFAULT="linux-$(cut -d. -f1,2 <<<"$guest_kernel")"
        jq --arg a "$ARM_DEFAULT" '. + {arm_default:$a}' "$out/params.json" > "$out/params.json.tmp" && mv "$out/params.json.tmp" "$out/params.json"
    fi
    log "guest up after $T_BOOT s: kernel $guest_kernel, box revision $box_rev"
    gssh "rm -rf $GUEST_IN && mkdir -p $GUEST_IN"
    tar -C "$ROOT" -cf - "${GUEST_FILES[@]}" | gssh "tar -C $GUEST_IN -xf -"
    box_sha=$(sha256sum "$boxdir/box.img" | cut -d' ' -f1)
    guest_files_json=$(for f in "${GUEST_FILES[@]}"; do
            jq -n --arg f "$f" --arg sha "$(sha256sum "$ROOT/$f" | cut -d' ' -f1)" '{($f): $sha}'; done | jq -cs add)
}
campaign_json() {   # ARM: DIR/ARM/campaign.json (what `mpcc bundle` reads of a campaign directory)
    local arm=$1 d="$out/$1"
    jq -n --arg name "kernel415-$arm" --argjson seed "$seed" --arg box "$box" --arg k "$guest_kernel" \
        --arg qemu "$QEMU_VERSION" --arg qemu_args "${QEMU_ARGS[*]}" \
        --arg box_sha "$box_sha" --arg box_rev "$box_rev" --arg commit "$COMMIT" \
        --argjson order "$(printf '%s\n' "${PLAN[@]}" | while read -r line; do
                n=$(run_name_of "$line"); [[ $n == "$arm/"* ]] && basename "$n"; done | jq -R . | jq -s .)" \
        --argjson prev "$(jq -c '.sessions // []' "$d/campaign.json" 2>/dev/null || echo '[]')" --arg started "$STARTED" \
        --argjson gf "${guest_files_json:-null}" \
        '{name:$name, seed:$seed, backend:"qemu-tcg netns (testbed/kernel415/run-vm.sh)", order:$order, n_runs:($order|length),
          vm:{box:$box, box_revision:$box_rev, box_image_sha256:$box_sha, guest_kernel:$k, qemu:$qemu, qemu_args:$qemu_args},
          sessions:(if ($prev | map(.started_utc) | index($started)) then $prev
                    else $prev + [{started_utc:$started, commit:$commit, guest_files_sha256:$gf}] end)}' \
        > "$d/campaign.json.tmp"
    mv "$d/campaign.json.tmp" "$d/campaign.json"
}

n_ok=0 n_fail=0 k=0
for line in "${todo[@]}"; do
    read -r rep kern c l <<<"$line"
    [[ "$booted" == "$kern" ]] || up "$kern"
    name=$(run_name_of "$line")
    arm=${name%%/*} rid=$(basename "$name")
    k=$(( k + 1 ))
    mkdir -p "$out/$arm/runs"
    log "run $k/${#todo[@]}: $name"
    t=$(date +%s)
    s0=$(host_load_sample)
    set +e
    gssh "sudo rm -rf $GUEST_OUT && sudo mkdir -p $GUEST_OUT && sudo bash $GUEST_IN/testbed/kernel415/run-guest.sh \
          --tb $GUEST_IN --out $GUEST_OUT/$rid -- --experiment loss_rate --cc $c --path-mode multipath \
          --link-delay-ms $link_delay_ms --loss-pct $l --duration-s $duration --queue-model tbf-netem --rep $rep" \
        >>"$out/progress.log" 2>&1
    grc=$?
    set -e
    s1=$(host_load_sample)
    part="$out/$arm/runs/.$rid.partial"
    rm -rf "$part"; mkdir -p "$part"
    gssh "sudo tar -C $GUEST_OUT/$rid -cf - ." 2>>"$out/progress.log" | tar -C "$part" -xf - \
        || die "copying $rid out of the guest failed (guest exit $grc; $out/progress.log)"
    gssh "sudo cat $GUEST_OUT/$rid.guest.json" > "$part/guest.json" 2>>"$out/progress.log" || rm -f "$part/guest.json"
    host_load_summary "$s0" "$s1" | jq --argjson grc "$grc" '{host_load:., guest_exit:$grc,
        note:"this host (qemu TCG runs the guest): its CPU pressure over the run; meta.json host_load is the guest'"'"'s"}' > "$part/vm_host.json"
    if [[ -f "$part/COMPLETE" ]]; then   # the marker stays the last file written
        rm -f "$part/COMPLETE"; sync; : > "$part/COMPLETE"; state=complete; n_ok=$(( n_ok + 1 ))
    else
        state="FAILED (guest exit $grc)"; n_fail=$(( n_fail + 1 ))
    fi
    mv "$part" "$out/$name"
    campaign_json "$arm"
    log "$name: $state in $(( $(date +%s) - t )) s, host PSI $(jq -r .host_load.cpu_pressure_some_pct "$out/$name/vm_host.json") %; $(find "$out" -path '*/runs/*/COMPLETE' | wc -l)/${#PLAN[@]} complete"
done
log "results in $out ($n_ok complete, $n_fail failed this session, $(( $(date +%s) - T0 )) s)"
log "analyse: python -m analysis.kernel415 $out"
(( n_fail == 0 )) || exit 1
exit 0
