#!/usr/bin/env bash
# Real netem against the delay shim's emulation of it, in ONE Debian 12 VM (kernel 6.1 with sch_netem), booted
# directly with qemu-system-x86_64 under TCG (no libvirt, no vagrant at run time): the calibration of
# docs/netem-semantics.md section 7, step 2, for every queue model of testbed/nodes/switch.sh (section 10 there).
#   1. builds testbed/delayshim/delayshim on this host (make -C testbed/delayshim) and snapshots it, with the shared
#      libraries the box lacks (libnetfilter_queue.so.1, libnfnetlink.so.0, libmnl.so.0, as ldd resolves them here;
#      host and box are both Debian 12), into DIR/shim/
#   2. makes sure the project's Debian box exists (testbed/vagrant/build-box.sh: a no-op when it is current)
#   3. boots the box's image (a throw-away qcow2 overlay; the box is not modified) with its own kernel and initrd,
#      user-mode networking with an ssh port forward on 127.0.0.1, the vagrant insecure key
#   4. copies the shim, its libraries, testbed/nodes/switch.sh (self-contained: tc, iptables, ethtool, sysctl, awk,
#      all in the box) and testbed/delayshim/validate-guest.sh into the guest (scp) and runs the guest script there
#      (sudo): per rep, every (queue model, delay, netem | shim) arm in a shuffled order, a 12 Mbit/s UDP overload
#      through a -> sw -> b with captures on both of sw's interfaces
#   5. copies the results back into --out DIR, writes DIR/meta.json and kills the VM (also on error or interrupt)
# Results: DIR/runs/repNN-MODEL-dD-IMPL/{run.json,iperf3.json,sw-a.pcap.gz,sw-b.pcap.gz,tc.txt.gz,...},
# DIR/setup.json (guest: kernel, its Debian package, the netem patches K4/K5/K6 in its changelog), DIR/meta.json
# (host, VM, sha256 of the shim and switch.sh, timings), DIR/shim/ (the bytes the guest ran), DIR/guest.log,
# DIR/console.log. Analyse: python -m analysis.netem_validation DIR
# Needs root (mmdebstrap in build-box.sh) and: qemu-system-x86 qemu-utils mmdebstrap e2fsprogs vagrant openssh-client
# jq make gcc libnetfilter-queue-dev (Debian: apt-get install -y --no-install-recommends ...).
# Exit 0 when every arm passed its checks, 1 when an arm failed one (see DIR/guest.log), 2 on usage or set-up errors.
# usage: validate-vm.sh --out DIR [--reps N] [--duration-s S] [--delays "5 25 50"] [--models "fifo-after-delay tbf-netem netem-tbf netem-tbf-k6"]
#                       [--box NAME] [--memory-mb M] [--cpus C] [--boot-timeout-s T] [--seed N] [--tc-interval-s I]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
# shellcheck source=testbed/lib/qemu_box.sh
source "$ROOT/testbed/lib/qemu_box.sh"   # qbox_key, qbox_prepare, qbox_boot, gssh, qbox_teardown
SWITCH="$ROOT/testbed/nodes/switch.sh"
out="" reps=10 duration=20 delays="5 25 50" models="fifo-after-delay tbf-netem netem-tbf netem-tbf-k6"
box="${MPCC_VAGRANT_BOX:-mpcc/debian12}" mem_mb=2048 cpus=2 boot_timeout=900 seed="" tc_interval=0.01
GUEST_IN=/tmp/nvval-in GUEST_OUT=/var/tmp/nvval-out
SHIM_LIBS=(libnetfilter_queue.so.1 libnfnetlink.so.0 libmnl.so.0)

die() { echo "error: $*" >&2; exit 2; }
log() { echo "[$(date -u +%H:%M:%S)] validate-vm: $*" >&2; }
usage() { sed -n '23,24p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --out) out=${2:-}; shift 2 || usage ;;
        --reps) reps=${2:-}; shift 2 || usage ;;
        --duration-s) duration=${2:-}; shift 2 || usage ;;
        --delays) delays=${2:-}; shift 2 || usage ;;
        --models) models=${2:-}; shift 2 || usage ;;
        --box) box=${2:-}; shift 2 || usage ;;
        --memory-mb) mem_mb=${2:-}; shift 2 || usage ;;
        --cpus) cpus=${2:-}; shift 2 || usage ;;
        --boot-timeout-s) boot_timeout=${2:-}; shift 2 || usage ;;
        --seed) seed=${2:-}; shift 2 || usage ;;
        --tc-interval-s) tc_interval=${2:-}; shift 2 || usage ;;
        -h|--help) usage ;;
        *) die "unknown option '$1' (validate-vm.sh --help)" ;;
    esac
done
# ---- every argument is checked before anything runs as root
[[ -n "$out" ]] || die "--out DIR is required"
if [[ -e "$out" && ! -d "$out" ]]; then die "--out $out exists and is not a directory"; fi
if [[ -d "$out" ]] && [[ -n "$(ls -A "$out")" ]]; then die "--out $out exists and is not empty"; fi
[[ "$reps" =~ ^[1-9][0-9]{0,2}$ ]] || die "--reps must be an integer 1..999, got '$reps'"
if ! [[ "$duration" =~ ^[1-9][0-9]{0,3}$ ]] || (( duration < 5 )); then
    die "--duration-s must be an integer 5..9999 (the plateau is read over the last 60 % of the flow), got '$duration'"
fi
read -r -a DELAYS <<<"$delays"
[[ ${#DELAYS[@]} -gt 0 ]] || die "--delays is empty"
for d in "${DELAYS[@]}"; do
    [[ "$d" =~ ^[1-9][0-9]{0,2}$ ]] || die "--delays: each one-way delay must be an integer 1..999 ms, got '$d'"
done
[[ $(printf '%s\n' "${DELAYS[@]}" | sort -u | wc -l) -eq ${#DELAYS[@]} ]] || die "--delays lists a delay twice"
read -r -a MODELS <<<"$models"
[[ ${#MODELS[@]} -gt 0 ]] || die "--models is empty"
for m in "${MODELS[@]}"; do
    [[ "$m" =~ ^(fifo-after-delay|tbf-netem|netem-tbf|netem-tbf-k6)$ ]] || die "--models: each must be fifo-after-delay, tbf-netem, netem-tbf or netem-tbf-k6, got '$m'"
done
[[ $(printf '%s\n' "${MODELS[@]}" | sort -u | wc -l) -eq ${#MODELS[@]} ]] || die "--models lists a model twice"
[[ "$box" =~ ^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)?$ ]] || die "bad box name '$box'"
if ! [[ "$mem_mb" =~ ^[1-9][0-9]{2,5}$ ]] || (( mem_mb < 512 )); then die "--memory-mb must be an integer >= 512, got '$mem_mb'"; fi
[[ "$cpus" =~ ^[1-9][0-9]?$ ]] || die "--cpus must be an integer 1..99, got '$cpus'"
[[ "$boot_timeout" =~ ^[1-9][0-9]{1,4}$ ]] || die "--boot-timeout-s must be an integer 10..99999, got '$boot_timeout'"
if [[ -z "$seed" ]]; then seed=$(( $(date +%s) % 1000000 )); fi
[[ "$seed" =~ ^[0-9]{1,9}$ ]] || die "--seed must be an integer 0..999999999, got '$seed'"
[[ "$tc_interval" =~ ^(0\.[0-9]*[1-9][0-9]*|[1-9][0-9]*(\.[0-9]+)?)$ ]] || die "--tc-interval-s must be a positive number, got '$tc_interval'"
awk -v s="$tc_interval" 'BEGIN {exit !(s >= 0.001 && s <= 10)}' || die "--tc-interval-s must be in 0.001..10, got '$tc_interval'"
[[ -f "$SWITCH" ]] || die "testbed/nodes/switch.sh not found at $SWITCH"
[[ -f "$HERE/validate-guest.sh" ]] || die "testbed/delayshim/validate-guest.sh not found"
[[ $EUID -eq 0 ]] || die "validate-vm.sh needs root (build-box.sh runs mmdebstrap in root mode)"
missing=()
for t in qemu-system-x86_64 qemu-img mmdebstrap mkfs.ext4 vagrant ssh scp jq make cc ldd sha256sum tar ss; do
    command -v "$t" >/dev/null || missing+=("$t")
done
[[ ${#missing[@]} -eq 0 ]] || die "missing ${missing[*]}: apt-get update && apt-get install -y --no-install-recommends \
qemu-system-x86 qemu-utils mmdebstrap e2fsprogs vagrant openssh-client jq make gcc libc-bin libnetfilter-queue-dev iproute2"

qbox_key

T0=$(date +%s)
mkdir -p "$out"
out="$(cd "$out" && pwd)"

# ---- VM teardown: always (the VM stopped, DIR/console.log kept, on exit, error or signal)
qbox_traps "$out"

# ---- 1. the shim, built here, and copied at once with its libraries: what the guest runs, what meta.json describes
# and DIR/shim/ keeps are the same bytes even if testbed/delayshim is rebuilt meanwhile
log "building the delay shim (make -C testbed/delayshim)"
make -s -C "$HERE" >&2
[[ -x "$HERE/delayshim" ]] || die "make did not produce testbed/delayshim/delayshim"
mkdir -p "$out/shim/lib"
cp "$HERE/delayshim" "$out/shim/delayshim"
cp "$SWITCH" "$out/shim/switch.sh"
cp "$HERE/validate-guest.sh" "$out/shim/validate-guest.sh"
ldd_txt=$(ldd "$out/shim/delayshim") || die "ldd testbed/delayshim/delayshim failed"
libs_json="{}"
for lib in "${SHIM_LIBS[@]}"; do
    path=$(awk -v l="$lib" '$1 == l && $2 == "=>" {p = $3} END {print p}' <<<"$ldd_txt")
    [[ -n "$path" && -f "$path" ]] || die "ldd does not resolve $lib for the shim (apt-get install libnetfilter-queue1): $(tr '\n' ' ' <<<"$ldd_txt")"
    cp -L "$path" "$out/shim/lib/$lib"
    libs_json=$(jq -c --arg l "$lib" --arg from "$(readlink -f "$path")" \
        --arg sha "$(sha256sum "$out/shim/lib/$lib" | cut -d' ' -f1)" '. + {($l): {resolved:$from, sha256:$sha}}' <<<"$libs_json")
done

# ---- 2. the box
qbox_prepare "$box"

# ---- 3. boot
qbox_boot mpcc-nvval "$cpus" "$mem_mb" "$boot_timeout"
guest_kernel_pkg=$(gssh "dpkg-query -W -f='\${Package} \${Version}' linux-image-\$(uname -r)" 2>/dev/null || echo "")
log "guest up after $T_BOOT s: kernel $guest_kernel (${guest_kernel_pkg:-package not found})"

# ---- 4. copy in, run
gssh "rm -rf $GUEST_IN && mkdir -p $GUEST_IN/lib"
scp -q "${SCP_OPTS[@]}" "$out/shim/delayshim" "$out/shim/switch.sh" "$out/shim/validate-guest.sh" "vagrant@127.0.0.1:$GUEST_IN/"
scp -q "${SCP_OPTS[@]}" "$out"/shim/lib/* "vagrant@127.0.0.1:$GUEST_IN/lib/"
t=$(date +%s)
set +e
gssh "sudo rm -rf $GUEST_OUT && sudo bash $GUEST_IN/validate-guest.sh --shimdir $GUEST_IN --switch $GUEST_IN/switch.sh \
      --out $GUEST_OUT --reps $reps --duration-s $duration --delays '${DELAYS[*]}' --models '${MODELS[*]}' \
      --seed $seed --tc-interval-s $tc_interval" 2>&1 | tee "$out/guest.log" >&2
grc=${PIPESTATUS[0]}
set -e
T_RUNS=$(( $(date +%s) - t ))
log "guest script exited $grc after $T_RUNS s"

# ---- 5. copy back
t=$(date +%s)
gssh "sudo tar -C $GUEST_OUT -cf - ." | tar -C "$out" -xf - || die "copying the results out of the guest failed"
T_COPY=$(( $(date +%s) - t ))
jq -n --arg host_kernel "$(uname -r)" --arg host_os "$(. /etc/os-release && echo "$PRETTY_NAME")" \
    --arg qemu "$(qemu-system-x86_64 --version | sed -n 1p)" --arg qemu_args "${QEMU_ARGS[*]}" \
    --arg guest_kernel "$guest_kernel" --arg guest_kernel_pkg "$guest_kernel_pkg" --arg box "$box" --arg box_rev "$box_rev" \
    --arg box_sha "$(sha256sum "$boxdir/box.img" | cut -d' ' -f1)" \
    --arg commit "$(cd "$ROOT" && git rev-parse HEAD 2>/dev/null || echo)" \
    --arg dirty "$(cd "$ROOT" && git status --porcelain -- testbed/delayshim testbed/nodes/switch.sh 2>/dev/null | tr '\n' ';')" \
    --arg shim_sha "$(sha256sum "$out/shim/delayshim" | cut -d' ' -f1)" \
    --arg shim_blob "$(cd "$ROOT" && git hash-object testbed/delayshim/delayshim.c 2>/dev/null || echo)" \
    --arg switch_sha "$(sha256sum "$out/shim/switch.sh" | cut -d' ' -f1)" \
    --arg switch_blob "$(cd "$ROOT" && git hash-object testbed/nodes/switch.sh 2>/dev/null || echo)" \
    --arg guest_sha "$(sha256sum "$out/shim/validate-guest.sh" | cut -d' ' -f1)" --argjson libs "$libs_json" \
    --argjson reps "$reps" --argjson dur "$duration" --arg delays "${DELAYS[*]}" --arg models "${MODELS[*]}" \
    --argjson seed "$seed" --arg tci "$tc_interval" --argjson cpus "$cpus" --argjson mem "$mem_mb" --argjson grc "$grc" \
    --argjson t_box "$T_BOX" --argjson t_boot "$T_BOOT" --argjson t_runs "$T_RUNS" --argjson t_copy "$T_COPY" \
    --argjson t_total "$(( $(date +%s) - T0 ))" --arg host_cpus "$(nproc)" \
    --arg host_cpu "$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | sed -n 1p)" \
    '{host_kernel:$host_kernel, host_os:$host_os, host_cpus:($host_cpus|tonumber), host_cpu:$host_cpu,
      qemu:$qemu, accel:"tcg", qemu_args:$qemu_args, vm_cpus:$cpus, vm_memory_mb:$mem,
      guest_kernel:$guest_kernel, guest_kernel_package:(if $guest_kernel_pkg == "" then null else $guest_kernel_pkg end),
      box:$box, box_revision:$box_rev, box_image_sha256:$box_sha,
      git_commit:$commit, git_dirty:$dirty,
      shim:{binary:"shim/delayshim", built_from:"testbed/delayshim/delayshim", binary_sha256:$shim_sha,
            source:"testbed/delayshim/delayshim.c", source_git_blob:(if $shim_blob == "" then null else $shim_blob end),
            libs:$libs},
      switch_sh:{copy:"shim/switch.sh", sha256:$switch_sha, git_blob:(if $switch_blob == "" then null else $switch_blob end)},
      guest_script_sha256:$guest_sha, reps:$reps, duration_s:$dur, delays_ms:($delays|split(" ")|map(tonumber)),
      models:($models|split(" ")), implementations:["netem","shim"], seed:$seed, tc_interval_s:($tci|tonumber),
      guest_exit:$grc,
      seconds:{build_box:$t_box, boot:$t_boot, runs:$t_runs, copy_back:$t_copy, total:$t_total}}' >"$out/meta.json"
log "results in $out ($(find "$out/runs" -name run.json | wc -l) arms; box $T_BOX s, boot $T_BOOT s, runs $T_RUNS s, copy $T_COPY s)"
log "analyse: python -m analysis.netem_validation $out"
exit "$grc"
