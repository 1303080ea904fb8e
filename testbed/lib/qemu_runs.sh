# shellcheck shell=bash
# A plan of runs in the Debian box that testbed/lib/qemu_box.sh boots, one guest call per run: what the run harnesses
# (testbed/qdisc003/run-vm.sh, testbed/mininet003/run-vm.sh) share. Sourced after qemu_box.sh, not executed; the
# caller defines die() and log(), the array PLAN (one line per run, in the order they run), GUEST_FILES, GUEST_OUT and
#   run_name_of LINE        the run's directory name for a PLAN line
#   guest_command NAME LINE the guest script and its arguments for that run (run as root in the guest; it writes
#                           GUEST_OUT/NAME and marks it COMPLETE when every check passed)
#   qbox_parse_args "$@"    the command line: --out DIR (out), --resume (resume=1), --max-runs, --box, --memory-mb,
#                           --cpus, --boot-timeout-s, -h/--help (usage), and --NAME[-s] VALUE for each key NAME of the
#                           caller's MATRIX (dashes for underscores) into P[NAME]; any other option is refused (die)
#   qbox_check_vm_args      --max-runs, --box, --memory-mb, --cpus, --boot-timeout-s (max_runs box mem_mb cpus
#                           boot_timeout) checked before anything runs as root
#   qbox_require_host       root and the host tools booting the box needs, checked (die with the apt-get line)
#   qbox_session_start      -> T0, STARTED; out made absolute with out/runs created; qbox_key
#   qbox_pending OUT        -> todo: the PLAN lines without a complete run in OUT/runs, at most max_runs of them (0:
#                           all); a run directory without COMPLETE is moved to OUT/incomplete/NAME.<UTC time> (never
#                           deleted); exits 0 when no run is left
#   qbox_up OUT VM_NAME MIN_BOX_REVISION
#                           the VM torn down on exit (qbox_traps), the box prepared (refused below MIN_BOX_REVISION)
#                           and booted -> guest_kernel_pkg; GUEST_FILES copied into GUEST_IN in their repository layout
#   qbox_meta_init OUT      -> PREV_SESSIONS (OUT/meta.json's), n_ok n_fail T_RUNS (0), box_sha (box image sha256)
#   qbox_write_meta OUT     OUT/meta.json: host, qemu, guest kernel, box and its revision, sha256 and git blob of every
#                           GUEST_FILES file, runs planned and complete, and this session appended to the earlier ones
#                           (globals of qemu_box.sh, ROOT, STARTED, T0, cpus, mem_mb, guest_kernel_pkg)
#   qbox_run_todo OUT MODULE
#                           every todo run, one guest call each, copied into OUT/runs/NAME at once, meta.json after
#                           each; exits 0 when every run of this session is complete, 1 when one failed a check
#                           (its run.log says which), 2 (die) when the guest script or the copy failed
# shellcheck disable=SC2034,SC2154  # the variables are the callers' (and qemu_box.sh's)

qbox_parse_args() {
    local k
    while [[ $# -gt 0 ]]; do
        case "$1" in
            --out) out=${2:-}; shift 2 || usage ;;
            --resume) resume=1; shift ;;
            --max-runs) max_runs=${2:-}; shift 2 || usage ;;
            --box) box=${2:-}; shift 2 || usage ;;
            --memory-mb) mem_mb=${2:-}; shift 2 || usage ;;
            --cpus) cpus=${2:-}; shift 2 || usage ;;
            --boot-timeout-s) boot_timeout=${2:-}; shift 2 || usage ;;
            -h|--help) usage ;;
            *)  k=${1#--}; k=${k%-s}; k=${k//-/_}
                if [[ "$1" == --?* && " ${MATRIX[*]} " == *" $k "* ]]; then
                    P["$k"]=${2:-}; shift 2 || usage
                else
                    die "unknown option '$1' ($(basename "$0") --help)"
                fi ;;
        esac
    done
}

qbox_check_vm_args() {
    [[ "$max_runs" =~ ^[0-9]{1,4}$ ]] || die "--max-runs must be an integer 0..9999 (0: all), got '$max_runs'"
    [[ "$box" =~ ^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)?$ ]] || die "bad box name '$box'"
    if ! [[ "$mem_mb" =~ ^[1-9][0-9]{2,5}$ ]] || (( mem_mb < 512 )); then die "--memory-mb must be an integer >= 512, got '$mem_mb'"; fi
    [[ "$cpus" =~ ^[1-9][0-9]?$ ]] || die "--cpus must be an integer 1..99, got '$cpus'"
    [[ "$boot_timeout" =~ ^[1-9][0-9]{1,4}$ ]] || die "--boot-timeout-s must be an integer 10..99999, got '$boot_timeout'"
}

qbox_require_host() {
    local f t missing=()
    for f in "${GUEST_FILES[@]}"; do [[ -f "$ROOT/$f" ]] || die "$f not found in the repository"; done
    [[ $EUID -eq 0 ]] || die "run-vm.sh needs root (build-box.sh runs mmdebstrap in root mode)"
    for t in qemu-system-x86_64 qemu-img mmdebstrap mkfs.ext4 vagrant ssh scp jq sha256sum tar ss; do
        command -v "$t" >/dev/null || missing+=("$t")
    done
    [[ ${#missing[@]} -eq 0 ]] || die "missing ${missing[*]}: apt-get update && apt-get install -y --no-install-recommends \
qemu-system-x86 qemu-utils mmdebstrap e2fsprogs vagrant openssh-client jq iproute2"
}

qbox_session_start() {
    qbox_key
    T0=$(date +%s)
    mkdir -p "$out/runs"
    out="$(cd "$out" && pwd)"
    STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
}

qbox_up() {
    local out=$1 name=$2 min_rev=$3
    qbox_traps "$out"
    qbox_prepare "$box"
    (( box_rev >= min_rev )) 2>/dev/null \
        || die "box $box is revision '${box_rev}', this harness needs revision $min_rev (testbed/vagrant/build-box.sh)"
    qbox_boot "$name" "$cpus" "$mem_mb" "$boot_timeout"
    guest_kernel_pkg=$(gssh "dpkg-query -W -f='\${Package} \${Version}' linux-image-\$(uname -r)" 2>/dev/null || echo "")
    log "guest up after $T_BOOT s: kernel $guest_kernel (${guest_kernel_pkg:-package not found}), box revision $box_rev"
    gssh "rm -rf $GUEST_IN && mkdir -p $GUEST_IN"
    tar -C "$ROOT" -cf - "${GUEST_FILES[@]}" | gssh "tar -C $GUEST_IN -xf -"
}

qbox_pending() {
    local out=$1 line name
    todo=()
    for line in "${PLAN[@]}"; do
        name=$(run_name_of "$line")
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
}

qbox_meta_init() {
    local out=$1
    PREV_SESSIONS='[]'
    if [[ -f "$out/meta.json" ]]; then PREV_SESSIONS=$(jq -c '.sessions // []' "$out/meta.json"); fi
    n_ok=0 n_fail=0 T_RUNS=0
    box_sha=$(sha256sum "$boxdir/box.img" | cut -d' ' -f1)   # once: hashing the image costs a core for seconds
}

qbox_write_meta() {
    local out=$1
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

qbox_run_todo() {
    local out=$1 module=$2 k=0 line name t grc state
    for line in "${todo[@]}"; do
        name=$(run_name_of "$line")
        k=$(( k + 1 ))
        t=$(date +%s)
        log "run $k/${#todo[@]}: $name"
        set +e
        gssh "sudo rm -rf $GUEST_OUT && sudo mkdir -p $GUEST_OUT && sudo bash $(guest_command "$name" "$line")" \
            >>"$out/progress.log" 2>&1
        grc=$?
        set -e
        (( grc <= 1 )) || die "the guest script failed on $name (exit $grc; $out/progress.log)"
        gssh "sudo tar -C $GUEST_OUT -cf - $name" | tar -C "$out/runs" -xf - || die "copying $name out of the guest failed"
        T_RUNS=$(( T_RUNS + $(date +%s) - t ))
        if [[ -f "$out/runs/$name/COMPLETE" ]]; then
            n_ok=$(( n_ok + 1 )); state=complete
        else
            n_fail=$(( n_fail + 1 )); state="FAILED ($(jq -r .reason "$out/runs/$name/meta.json" 2>/dev/null))"
        fi
        qbox_write_meta "$out"
        log "$name: $state in $(( $(date +%s) - t )) s; $(find "$out/runs" -name COMPLETE | wc -l)/${#PLAN[@]} complete"
    done
    log "results in $out ($n_ok complete, $n_fail failed this session; box $T_BOX s, boot $T_BOOT s, runs $T_RUNS s)"
    log "analyse: python -m $module $out"
    (( n_fail == 0 )) || exit 1
    exit 0
}
