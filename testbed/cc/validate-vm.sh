#!/usr/bin/env bash
# Validate the BPF struct_ops ports in testbed/cc against the kernel's own modules, in ONE Debian 12 VM (kernel 6.1:
# tcp_bic / tcp_westwood modules AND struct_ops), booted directly with qemu-system-x86_64 under TCG (no libvirt, no
# vagrant at run time). docs/cc-validation.md describes the comparison and its results.
#   1. builds testbed/cc/build/CC.bpf.o on this host (make -C testbed/cc; CO-RE objects, vmlinux.h from the host BTF)
#   2. makes sure the project's Debian box exists (testbed/vagrant/build-box.sh: a no-op when it is current)
#   3. boots the box's image (a throw-away qcow2 overlay; the box is not modified) with its own kernel and initrd,
#      user-mode networking with an ssh port forward on 127.0.0.1, the vagrant insecure key
#   4. copies the objects and testbed/cc/validate-guest.sh into the guest (scp) and runs it there (sudo), which
#      compares native and BPF for each CC, REPS times each, alternating the order, per case (--losses x --flows,
#      over a base RTT of --rtt-ms). For pcc_vivace the native side is PCC-Kernel's vivace module (congestion control
#      "pcc"): its source, which this repository does not ship (testbed/cc/pcc-kernel/README.md), is copied into the
#      guest with testbed/cc/pcc-kernel/build.sh and its patches and built there against the guest's kernel headers
#      (DIR/pcc-build.log); the .ko stays in the guest, DIR/meta.json records its sha256. Likewise for bic415 the
#      native side is Linux 4.15's tcp_bic.c (testbed/cc/bic415-kernel/: fetch.sh obtains it, build.sh builds it as
#      tcp_bic415.ko registering "bic415"; DIR/bic415-build.log).
#   5. copies the results back into --out DIR and kills the VM (also on error or interrupt)
# Results: DIR/runs/repNN-CC-IMPL/{iperf3.json,ss.txt,run.json,during.txt,...}, DIR/setup.json (guest),
# DIR/meta.json (host, VM, timings), DIR/objects/CC.bpf.o (the objects the guest loaded), DIR/scripts/ (the guest scripts it ran), DIR/guest.log,
# DIR/console.log. Analyse: python -m analysis.cc_validation DIR
# Needs root (mmdebstrap in build-box.sh) and: qemu-system-x86 qemu-utils mmdebstrap e2fsprogs vagrant openssh-client
# jq clang llvm libbpf-dev bpftool make (Debian: apt-get install -y --no-install-recommends ...).
# Exit 0 when every run passed its checks, 1 when a run failed one (see DIR/guest.log), 2 on usage or set-up errors.
# usage: validate-vm.sh --out DIR [--reps N] [--duration-s S] [--ccs "bic westwood"] [--box NAME] [--memory-mb M]
#                       [--cpus C] [--boot-timeout-s T] [--ss-interval-s I] [--rtt-ms 10] [--losses "1"] [--flows "1"]
# The PCC-Vivace comparison of issue 30 (docs/pcc-vivace.md):
#   validate-vm.sh --out DIR --ccs pcc_vivace --rtt-ms 30 --losses "0 1" --flows "1 2" --reps 10 --duration-s 30
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
# shellcheck source=testbed/lib/qemu_box.sh
source "$ROOT/testbed/lib/qemu_box.sh"   # qbox_key, qbox_prepare, qbox_boot, gssh, qbox_teardown
out="" reps=10 duration=30 ccs="bic westwood" box="${MPCC_VAGRANT_BOX:-mpcc/debian12}" mem_mb=2048 cpus=2
boot_timeout=900 ss_interval=0.1 rtt_ms=10 losses=1 flows=1
PCC_DIR="$HERE/pcc-kernel"   # PCC-Kernel's module: the native side of pcc_vivace
BIC415_DIR="$HERE/bic415-kernel"   # Linux 4.15's tcp_bic.c as a module: the native side of bic415
GUEST_IN=/tmp/ccval-in GUEST_OUT=/var/tmp/ccval-out

die() { echo "error: $*" >&2; exit 2; }
log() { echo "[$(date -u +%H:%M:%S)] validate-vm: $*" >&2; }
usage() { sed -n '/^# usage:/,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --out) out=${2:-}; shift 2 || usage ;;
        --reps) reps=${2:-}; shift 2 || usage ;;
        --duration-s) duration=${2:-}; shift 2 || usage ;;
        --ccs) ccs=${2:-}; shift 2 || usage ;;
        --box) box=${2:-}; shift 2 || usage ;;
        --memory-mb) mem_mb=${2:-}; shift 2 || usage ;;
        --cpus) cpus=${2:-}; shift 2 || usage ;;
        --boot-timeout-s) boot_timeout=${2:-}; shift 2 || usage ;;
        --ss-interval-s) ss_interval=${2:-}; shift 2 || usage ;;
        --rtt-ms) rtt_ms=${2:-}; shift 2 || usage ;;
        --losses) losses=${2:-}; shift 2 || usage ;;
        --flows) flows=${2:-}; shift 2 || usage ;;
        -h|--help) usage ;;
        *) die "unknown option '$1' (validate-vm.sh --help)" ;;
    esac
done
# ---- every argument is checked before anything runs as root
[[ -n "$out" ]] || die "--out DIR is required"
if [[ -e "$out" && ! -d "$out" ]]; then die "--out $out exists and is not a directory"; fi
if [[ -d "$out" ]] && [[ -n "$(ls -A "$out")" ]]; then die "--out $out exists and is not empty"; fi
[[ "$reps" =~ ^[1-9][0-9]{0,2}$ ]] || die "--reps must be an integer 1..999, got '$reps'"
[[ "$duration" =~ ^[1-9][0-9]{0,3}$ ]] || die "--duration-s must be an integer 1..9999, got '$duration'"
[[ "$ss_interval" =~ ^(0\.[0-9]*[1-9][0-9]*|[1-9][0-9]*(\.[0-9]+)?)$ ]] || die "--ss-interval-s must be a positive number, got '$ss_interval'"
[[ "$rtt_ms" =~ ^[1-9][0-9]{0,3}$ ]] || die "--rtt-ms must be an integer 1..9999, got '$rtt_ms'"
for l in $losses; do [[ "$l" =~ ^(0|[1-9][0-9]?)(\.[0-9]+)?$ ]] || die "--losses: bad loss percentage '$l'"; done
for f in $flows; do [[ "$f" =~ ^[1-8]$ ]] || die "--flows: flow counts are 1..8, got '$f'"; done
[[ -n "${losses// /}" && -n "${flows// /}" ]] || die "--losses and --flows must not be empty"
read -r -a CCS <<<"$ccs"
[[ ${#CCS[@]} -gt 0 ]] || die "--ccs is empty"
pcc=0 bic415=0
for cc in "${CCS[@]}"; do
    [[ "$cc" =~ ^[a-z][a-z0-9_]{0,14}$ ]] || die "bad cc name '$cc'"
    [[ -f "$HERE/$cc.bpf.c" ]] || die "no BPF port testbed/cc/$cc.bpf.c for '$cc'"
    [[ $cc != pcc_vivace ]] || pcc=1
    [[ $cc != bic415 ]] || bic415=1
done
if (( pcc )); then   # the module's source must be there, with the sha256 the port was written from
    msg=$(bash "$PCC_DIR/build.sh" --check 2>&1) || die "pcc_vivace's native side: ${msg#build.sh: }"
fi
if (( bic415 )); then
    msg=$(bash "$BIC415_DIR/build.sh" --check 2>&1) || die "bic415's native side: ${msg#build.sh: }"
fi
[[ "$box" =~ ^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)?$ ]] || die "bad box name '$box'"
if ! [[ "$mem_mb" =~ ^[1-9][0-9]{2,5}$ ]] || (( mem_mb < 512 )); then die "--memory-mb must be an integer >= 512, got '$mem_mb'"; fi
[[ "$cpus" =~ ^[1-9][0-9]?$ ]] || die "--cpus must be an integer 1..99, got '$cpus'"
[[ "$boot_timeout" =~ ^[1-9][0-9]{1,4}$ ]] || die "--boot-timeout-s must be an integer 10..99999, got '$boot_timeout'"
[[ $EUID -eq 0 ]] || die "validate-vm.sh needs root (build-box.sh runs mmdebstrap in root mode)"
missing=()
for t in qemu-system-x86_64 qemu-img mmdebstrap mkfs.ext4 vagrant ssh scp jq make clang bpftool sha256sum tar ss; do
    command -v "$t" >/dev/null || missing+=("$t")
done
[[ ${#missing[@]} -eq 0 ]] || die "missing ${missing[*]}: apt-get update && apt-get install -y --no-install-recommends \
qemu-system-x86 qemu-utils mmdebstrap e2fsprogs vagrant openssh-client jq make clang llvm libbpf-dev bpftool iproute2"

qbox_key

T0=$(date +%s)
mkdir -p "$out"
out="$(cd "$out" && pwd)"

# ---- VM teardown: always (the VM stopped, DIR/console.log kept, on exit, error or signal)
qbox_traps "$out"

# ---- 1. the objects, built here (CO-RE: relocated by libbpf against the guest's BTF when it loads them), and copied
# at once: what the guest loads, what meta.json describes and DIR/objects/ keeps are the same bytes even if
# testbed/cc/build is rebuilt meanwhile
log "building the BPF objects (make -C testbed/cc)"
make -s -C "$HERE" >&2
mkdir -p "$out/objects"
for cc in "${CCS[@]}"; do
    [[ -s "$HERE/build/$cc.bpf.o" ]] || die "make did not produce testbed/cc/build/$cc.bpf.o"
    cp "$HERE/build/$cc.bpf.o" "$out/objects/$cc.bpf.o"
done
# the sources and the guest's scripts as they are now, when the objects are built: meta.json describes these and the
# guest runs these copies, even if the working tree changes while the VM runs
src_commit=$(cd "$ROOT" && git rev-parse HEAD 2>/dev/null || echo)
src_dirty=$(cd "$ROOT" && git status --porcelain -- testbed/cc 2>/dev/null | tr '\n' ';')
declare -A SRC_BLOB=()
for cc in "${CCS[@]}"; do SRC_BLOB[$cc]=$(cd "$ROOT" && git hash-object "testbed/cc/$cc.bpf.c" 2>/dev/null || echo); done
mkdir -p "$out/scripts"
cp "$HERE/validate-guest.sh" "$HERE/struct_ops_lib.sh" "$out/scripts/"
guest_sha=$(sha256sum "$out/scripts/validate-guest.sh" | cut -d' ' -f1)

# ---- 2. the box
qbox_prepare "$box"

# ---- 3. boot
qbox_boot mpcc-ccval "$cpus" "$mem_mb" "$boot_timeout"
log "guest up after $T_BOOT s: kernel $guest_kernel"

# ---- 4. copy in, run
gssh "rm -rf $GUEST_IN && mkdir -p $GUEST_IN"
objs=()
for cc in "${CCS[@]}"; do objs+=("$out/objects/$cc.bpf.o"); done
scp -q "${SCP_OPTS[@]}" "${objs[@]}" "$out/scripts/validate-guest.sh" "$out/scripts/struct_ops_lib.sh" "vagrant@127.0.0.1:$GUEST_IN/"
kmod_args="" kmods_json="{}" T_KBUILD=0
# guest_kmod PORT CC_NAME DIR KO SOURCE EXTRA_JSON FILE...: the native side of PORT, a module built in the guest
# against its own kernel's headers: DIR's FILEs (DIR/build.sh among them) copied in, `build.sh OUTDIR` run there
# (its log: OUT/P-build.log, P = DIR's name up to its first '-'), KO passed to the guest script as
# --kmod PORT=CC_NAME:KO and described in meta.json's kernel_modules (EXTRA_JSON's keys added)
guest_kmod() {
    local port=$1 name=$2 dir=$3 ko=$4 source=$5 extra=$6 t ko_sha prefix
    shift 6
    prefix=$(basename "$dir") && prefix=${prefix%%-*}
    t=$(date +%s)
    log "building $ko in the guest (${dir#"$ROOT"/}/build.sh)"
    tar -C "$dir" -cf - "$@" | gssh "mkdir -p $GUEST_IN/$(basename "$dir") && tar -C $GUEST_IN/$(basename "$dir") -xf -"
    gssh "bash $GUEST_IN/$(basename "$dir")/build.sh $GUEST_IN/$prefix-build" >"$out/$prefix-build.log" 2>&1 \
        || die "building $ko in the guest failed: see $out/$prefix-build.log"
    ko_sha=$(gssh "sha256sum $GUEST_IN/$prefix-build/src/$ko" | cut -d' ' -f1)
    T_KBUILD=$(( T_KBUILD + $(date +%s) - t ))
    log "$ko built in $(( $(date +%s) - t )) s (sha256 $ko_sha)"
    kmod_args+=" --kmod $port=$name:$GUEST_IN/$prefix-build/src/$ko"
    kmods_json=$(jq -c --arg port "$port" --arg name "$name" --arg ko "$ko" --arg sha "$ko_sha" \
        --arg script "${dir#"$ROOT"/}/build.sh" --arg log "$prefix-build.log" --arg source "$source" \
        --arg src_sha "$(sha256sum "$dir/src/${ko%.ko}.c" 2>/dev/null | cut -d' ' -f1)" --argjson extra "$extra" \
        '. + {($port): ({cc_name:$name, module:$ko, ko_sha256:$sha, built_in:"guest", build_script:$script,
                         build_log:$log, source:$source, source_sha256:$src_sha} + $extra)}' <<<"$kmods_json")
}
if (( pcc )); then   # PCC-Kernel's vivace module
    guest_kmod pcc_vivace pcc "$PCC_DIR" tcp_pcc.ko \
        "PCC-Kernel src/tcp_pcc.c at ed39d0f0 (not in this repository: testbed/cc/pcc-kernel/README.md)" \
        "$(jq -n --arg series "$(grep -v '^#' "$PCC_DIR/patches/series" | tr '\n' ' ')" \
            '{patches:($series|split(" ")|map(select(. != "")))}')" \
        build.sh patches src/tcp_pcc.c
fi
if (( bic415 )); then   # Linux 4.15's tcp_bic.c, registering "bic415" (testbed/cc/bic415-kernel/README.md)
    guest_kmod bic415 bic415 "$BIC415_DIR" tcp_bic415.ko \
        "Linux 4.15 net/ipv4/tcp_bic.c, Ubuntu linux-source-4.15.0 4.15.0-54.58 (not in this repository: testbed/cc/bic415-kernel/fetch.sh)" \
        "$(jq -n --arg s "$(sha256sum "$BIC415_DIR/src/tcp_bic.c" | cut -d' ' -f1)" '{source_sha256:$s, edits:["name bic -> bic415"]}')" \
        build.sh src/tcp_bic.c
fi
t=$(date +%s)
set +e
gssh "sudo rm -rf $GUEST_OUT && sudo bash $GUEST_IN/validate-guest.sh --objdir $GUEST_IN --out $GUEST_OUT \
      --reps $reps --duration-s $duration --ccs '${CCS[*]}' --ss-interval-s $ss_interval \
      --rtt-ms $rtt_ms --losses '$losses' --flows '$flows' $kmod_args" 2>&1 | tee "$out/guest.log" >&2
grc=${PIPESTATUS[0]}
set -e
T_RUNS=$(( $(date +%s) - t ))
log "guest script exited $grc after $T_RUNS s"

# ---- 5. copy back
gssh "sudo tar -C $GUEST_OUT -cf - ." | tar -C "$out" -xf - || die "copying the results out of the guest failed"
objs_json="{}"
for cc in "${CCS[@]}"; do
    objs_json=$(jq -c --arg cc "$cc" --arg sha "$(sha256sum "$out/objects/$cc.bpf.o" | cut -d' ' -f1)" \
        --arg blob "${SRC_BLOB[$cc]}" \
        '. + {($cc): {object:"objects/\($cc).bpf.o", built_from:"testbed/cc/build/\($cc).bpf.o", object_sha256:$sha, source:"testbed/cc/\($cc).bpf.c",
                      source_git_blob:(if $blob == "" then null else $blob end)}}' <<<"$objs_json")
done
jq -n --arg host_kernel "$(uname -r)" --arg host_os "$(. /etc/os-release && echo "$PRETTY_NAME")" \
    --arg qemu "$(qemu-system-x86_64 --version | sed -n 1p)" --arg qemu_args "${QEMU_ARGS[*]}" \
    --arg guest_kernel "$guest_kernel" --arg box "$box" --arg box_rev "$box_rev" \
    --arg box_sha "$(sha256sum "$boxdir/box.img" | cut -d' ' -f1)" \
    --arg commit "$src_commit" --arg dirty "$src_dirty" --arg guest_sha "$guest_sha" \
    --argjson objs "$objs_json" --argjson reps "$reps" --argjson dur "$duration" --arg ssi "$ss_interval" \
    --argjson kmods "$kmods_json" --argjson rtt "$rtt_ms" --arg losses "$losses" --arg flows "$flows" \
    --argjson t_kbuild "$T_KBUILD" \
    --arg ccs "${CCS[*]}" --argjson cpus "$cpus" --argjson mem "$mem_mb" --argjson grc "$grc" \
    --argjson t_box "$T_BOX" --argjson t_boot "$T_BOOT" --argjson t_runs "$T_RUNS" \
    --argjson t_total "$(( $(date +%s) - T0 ))" --arg host_cpus "$(nproc)" \
    --arg host_cpu "$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | sed -n 1p)" \
    '{host_kernel:$host_kernel, host_os:$host_os, host_cpus:($host_cpus|tonumber), host_cpu:$host_cpu,
      qemu:$qemu, accel:"tcg", qemu_args:$qemu_args, vm_cpus:$cpus, vm_memory_mb:$mem,
      guest_kernel:$guest_kernel, box:$box, box_revision:$box_rev, box_image_sha256:$box_sha,
      git_commit:$commit, git_dirty_testbed_cc:$dirty, guest_script_sha256:$guest_sha, objects:$objs,
      kernel_modules:$kmods, ccs:($ccs|split(" ")), reps:$reps, duration_s:$dur, ss_interval_s:($ssi|tonumber),
      ack_path_delay_ms:$rtt, losses_pct:($losses|split(" ")|map(select(. != "")|tonumber)),
      flows:($flows|split(" ")|map(select(. != "")|tonumber)), guest_exit:$grc,
      seconds:{build_box:$t_box, boot:$t_boot, build_module:$t_kbuild, runs:$t_runs, total:$t_total}}' >"$out/meta.json"
log "results in $out ($(find "$out/runs" -name run.json | wc -l) runs; box $T_BOX s, boot $T_BOOT s, runs $T_RUNS s)"
if [[ $pcc -eq 1 ]]; then
    log "analyse: python -m analysis.pcc_validation $out --markdown"
else
    log "analyse: python -m analysis.cc_validation $out --markdown"
fi
exit "$grc"
