#!/usr/bin/env bash
# Real netem against the delay shim's emulation of it, in ONE Debian 12 VM (kernel 6.1 with sch_netem), booted
# directly with qemu-system-x86_64 under TCG (no libvirt, no vagrant at run time): docs/netem-semantics.md sections 7
# and 10, for the queue models of testbed/nodes/switch.sh.
#   1. builds testbed/delayshim/delayshim on this host (make -C testbed/delayshim) and snapshots it, with the shared
#      libraries the box lacks (libnetfilter_queue.so.1, libnfnetlink.so.0, libmnl.so.0, as ldd resolves them here;
#      host and box are both Debian 12), into DIR/shim/ (with --resume: the snapshot already there, unchanged)
#   2. makes sure the project's Debian box exists (testbed/vagrant/build-box.sh: a no-op when it is current)
#   3. boots the box's image (a throw-away qcow2 overlay; the box is not modified) with its own kernel and initrd,
#      user-mode networking with an ssh port forward on 127.0.0.1, the vagrant insecure key
#   4. copies the shim, its libraries, testbed/nodes/switch.sh and testbed/delayshim/validate-guest.sh into the guest
#      and runs the guest script there (sudo) ONE REP PER CALL (--only-rep R): per rep, every arm in a shuffled order:
#      the UDP calibration arms (--models x --delays x {netem, shim}, reps 1..--udp-reps: a 12 Mbit/s UDP overload)
#      and the TCP arms (--tcp-models x --ccs x --delays x --losses x {netem, shim}: one iperf3 flow of
#      --tcp-duration-s), through a -> sw -> b with captures on both of sw's interfaces
#   5. after each rep copies its arms back into DIR/runs/, marks the rep done (DIR/reps/repNN.done) and updates
#      DIR/meta.json; the VM is killed at the end (also on error or interrupt)
# An interrupted validation continues with --resume DIR: the matrix is read from DIR/params.json (options given
# again must agree), the reps not marked done run again (arms copied from an unfinished rep are moved to
# DIR/incomplete/ first, never deleted), with the shim bytes of DIR/shim/.
# Results: DIR/runs/<arm>/{run.json,iperf3.json,sw-a.pcap.gz,sw-b.pcap.gz,tc.txt.gz,...}, DIR/setup.json (guest:
# kernel, its Debian package, the netem patches K4/K5/K6 in its changelog), DIR/meta.json (host, VM, sha256 of the shim
# and switch.sh, timings per session), DIR/params.json, DIR/shim/, DIR/guest-repNN.log, DIR/console.log.
# Analyse: python -m analysis.netem_validation DIR
# Needs root (mmdebstrap in build-box.sh) and: qemu-system-x86 qemu-utils mmdebstrap e2fsprogs vagrant openssh-client
# jq make gcc libnetfilter-queue-dev (Debian: apt-get install -y --no-install-recommends ...).
# Exit 0 when every arm passed its checks, 1 when an arm failed one (see DIR/guest-repNN.log), 2 on usage or set-up errors.
# usage: validate-vm.sh --out DIR [--resume] [--reps N] [--udp-reps N] [--duration-s S] [--delays "5 25 50"]
#                       [--models "fifo-after-delay tbf-netem netem-tbf netem-tbf-k6"] [--tcp-models "tbf-netem netem-tbf-k6"]
#                       [--ccs "cubic bbr"] [--losses "0 1"] [--tcp-duration-s T] [--seed N] [--tc-interval-s I]
#                       [--box NAME] [--memory-mb M] [--cpus C] [--boot-timeout-s T]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
# shellcheck source=testbed/lib/qemu_box.sh
source "$ROOT/testbed/lib/qemu_box.sh"   # qbox_key, qbox_prepare, qbox_boot, gssh, qbox_teardown
SWITCH="$ROOT/testbed/nodes/switch.sh"
box="${MPCC_VAGRANT_BOX:-mpcc/debian12}" mem_mb=2048 cpus=2 boot_timeout=900 out="" resume=0
GUEST_IN=/tmp/nvval-in GUEST_OUT=/var/tmp/nvval-out
SHIM_LIBS=(libnetfilter_queue.so.1 libnfnetlink.so.0 libmnl.so.0)
# the matrix: defaults, what the command line gave (P_*), and with --resume what params.json holds
MATRIX=(reps udp_reps duration delays models tcp_models ccs losses tcp_duration seed tc_interval)
declare -A P=() DEF=([reps]=10 [udp_reps]=3 [duration]=20 [delays]="5 25 50"
    [models]="fifo-after-delay tbf-netem netem-tbf netem-tbf-k6" [tcp_models]="tbf-netem netem-tbf-k6"
    [ccs]="cubic bbr" [losses]="0 1" [tcp_duration]=20 [seed]="" [tc_interval]=0.01)

die() { echo "error: $*" >&2; exit 2; }
log() { echo "[$(date -u +%H:%M:%S)] validate-vm: $*" >&2; }
usage() { sed -n '/^# usage:/,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --out) out=${2:-}; shift 2 || usage ;;
        --resume) resume=1; shift ;;
        --reps) P[reps]=${2:-}; shift 2 || usage ;;
        --udp-reps) P[udp_reps]=${2:-}; shift 2 || usage ;;
        --duration-s) P[duration]=${2:-}; shift 2 || usage ;;
        --delays) P[delays]=${2:-}; shift 2 || usage ;;
        --models) P[models]=${2:-}; shift 2 || usage ;;
        --tcp-models) P[tcp_models]=${2-}; shift 2 || usage ;;
        --ccs) P[ccs]=${2-}; shift 2 || usage ;;
        --losses) P[losses]=${2:-}; shift 2 || usage ;;
        --tcp-duration-s) P[tcp_duration]=${2:-}; shift 2 || usage ;;
        --seed) P[seed]=${2:-}; shift 2 || usage ;;
        --tc-interval-s) P[tc_interval]=${2:-}; shift 2 || usage ;;
        --box) box=${2:-}; shift 2 || usage ;;
        --memory-mb) mem_mb=${2:-}; shift 2 || usage ;;
        --cpus) cpus=${2:-}; shift 2 || usage ;;
        --boot-timeout-s) boot_timeout=${2:-}; shift 2 || usage ;;
        -h|--help) usage ;;
        *) die "unknown option '$1' (validate-vm.sh --help)" ;;
    esac
done
# ---- every argument is checked before anything runs as root
[[ -n "$out" ]] || die "--out DIR is required"
if [[ -e "$out" && ! -d "$out" ]]; then die "--out $out exists and is not a directory"; fi
command -v jq >/dev/null || die "jq is not installed (apt-get install -y jq)"
if (( resume )); then
    qbox_resume_plan "$out" matrix
    [[ -x "$out/shim/delayshim" && -f "$out/shim/switch.sh" && -f "$out/shim/validate-guest.sh" ]] \
        || die "--resume: $out/shim/ lacks the snapshot (delayshim, switch.sh, validate-guest.sh)"
else
    if [[ -d "$out" ]] && [[ -n "$(ls -A "$out")" ]]; then die "--out $out exists and is not empty (continue it with --resume)"; fi
    for k in "${MATRIX[@]}"; do [[ -v "P[$k]" ]] || P[$k]=${DEF[$k]}; done
fi
reps=${P[reps]} udp_reps=${P[udp_reps]} duration=${P[duration]} tcp_duration=${P[tcp_duration]} seed=${P[seed]}
tc_interval=${P[tc_interval]}
[[ "$reps" =~ ^[1-9][0-9]{0,2}$ ]] || die "--reps must be an integer 1..999, got '$reps'"
if ! [[ "$udp_reps" =~ ^[0-9]{1,3}$ ]] || (( udp_reps > reps )); then die "--udp-reps must be an integer 0..--reps, got '$udp_reps'"; fi
for pair in "duration:$duration" "tcp-duration-s:$tcp_duration"; do
    v=${pair#*:}
    if ! [[ "$v" =~ ^[1-9][0-9]{0,3}$ ]] || (( v < 5 )); then
        die "--${pair%%:*} must be an integer 5..9999 (the steady window is the last 60 % of the flow), got '$v'"
    fi
done
read -r -a DELAYS <<<"${P[delays]}"
[[ ${#DELAYS[@]} -gt 0 ]] || die "--delays is empty"
for d in "${DELAYS[@]}"; do
    [[ "$d" =~ ^[1-9][0-9]{0,2}$ ]] || die "--delays: each one-way delay must be an integer 1..999 ms, got '$d'"
done
[[ $(printf '%s\n' "${DELAYS[@]}" | sort -u | wc -l) -eq ${#DELAYS[@]} ]] || die "--delays lists a delay twice"
read -r -a MODELS <<<"${P[models]}"
read -r -a TCP_MODELS <<<"${P[tcp_models]}"
for m in "${MODELS[@]}" "${TCP_MODELS[@]}"; do
    [[ "$m" =~ ^(fifo-after-delay|tbf-netem|netem-tbf|netem-tbf-k6)$ ]] || die "--models / --tcp-models: each must be fifo-after-delay, tbf-netem, netem-tbf or netem-tbf-k6, got '$m'"
done
[[ $(printf '%s\n' "${MODELS[@]}" | sort -u | wc -l) -eq ${#MODELS[@]} ]] || die "--models lists a model twice"
(( ${#MODELS[@]} > 0 || udp_reps == 0 )) || die "--models is empty (give --udp-reps 0 to run no UDP arm)"
read -r -a CCS <<<"${P[ccs]}"
for c in "${CCS[@]}"; do [[ "$c" =~ ^(cubic|bbr|reno)$ ]] || die "--ccs: each must be cubic, bbr or reno, got '$c'"; done
(( ${#TCP_MODELS[@]} == 0 || ${#CCS[@]} > 0 )) || die "--tcp-models needs --ccs"
read -r -a LOSSES <<<"${P[losses]}"
[[ ${#LOSSES[@]} -gt 0 ]] || die "--losses is empty"
for l in "${LOSSES[@]}"; do
    [[ "$l" =~ ^(0|[1-9][0-9]?)(\.[0-9]{1,2})?$ ]] || die "--losses: each must be a percentage 0..99.99, got '$l'"
done
(( udp_reps > 0 || ${#TCP_MODELS[@]} > 0 )) || die "nothing to run: --udp-reps 0 and no --tcp-models"
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
mkdir -p "$out/runs" "$out/reps"
out="$(cd "$out" && pwd)"
STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)

# ---- VM teardown: always (the VM stopped, DIR/console.log kept, on exit, error or signal)
qbox_traps "$out"

# ---- 1. the shim, built here, and copied at once with its libraries: what the guest runs, what meta.json describes
# and DIR/shim/ keeps are the same bytes even if testbed/delayshim is rebuilt meanwhile (with --resume: DIR/shim/ as is)
if (( ! resume )); then
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
    jq -n --argjson reps "$reps" --argjson udp_reps "$udp_reps" --argjson duration "$duration" --arg delays "${DELAYS[*]}" \
        --arg models "${MODELS[*]}" --arg tcp_models "${TCP_MODELS[*]}" --arg ccs "${CCS[*]}" --arg losses "${LOSSES[*]}" \
        --argjson tcp_duration "$tcp_duration" --argjson seed "$seed" --arg tci "$tc_interval" --argjson libs "$libs_json" \
        --arg commit "$(cd "$ROOT" && git rev-parse HEAD 2>/dev/null || echo)" \
        --arg dirty "$(cd "$ROOT" && git status --porcelain -- testbed/delayshim testbed/nodes/switch.sh 2>/dev/null | tr '\n' ';')" \
        --arg shim_blob "$(cd "$ROOT" && git hash-object testbed/delayshim/delayshim.c 2>/dev/null || echo)" \
        --arg switch_blob "$(cd "$ROOT" && git hash-object testbed/nodes/switch.sh 2>/dev/null || echo)" \
        --arg guest_blob "$(cd "$ROOT" && git hash-object testbed/delayshim/validate-guest.sh 2>/dev/null || echo)" \
        '{reps:$reps, udp_reps:$udp_reps, duration:$duration, delays:$delays, models:$models, tcp_models:$tcp_models,
          ccs:$ccs, losses:$losses, tcp_duration:$tcp_duration, seed:$seed, tc_interval:$tci,
          shim_libs:$libs, git_commit:$commit, git_dirty:$dirty, shim_source_git_blob:$shim_blob,
          switch_sh_git_blob:$switch_blob, guest_script_git_blob:$guest_blob}' >"$out/params.json"
fi

# ---- which reps remain; arms copied from a rep that never finished are moved aside (never deleted)
todo=()
for rep in $(seq "$reps"); do
    tag=$(printf 'rep%02d' "$rep")
    [[ -f "$out/reps/$tag.done" ]] && continue
    todo+=("$rep")
    shopt -s nullglob
    partial=("$out/runs/$tag"-*)
    shopt -u nullglob
    if (( ${#partial[@]} )); then
        aside="$out/incomplete/$(date -u +%Y%m%dT%H%M%SZ)-$tag"
        mkdir -p "$aside"
        mv "${partial[@]}" "$aside/"
        log "$tag was not finished: its ${#partial[@]} copied arms moved to ${aside#"$out"/}"
    fi
done
if (( ${#todo[@]} == 0 )); then log "every rep of $out is done already"; exit 0; fi
n_udp_arms=$(( ${#MODELS[@]} * ${#DELAYS[@]} * 2 ))
n_tcp_arms=$(( ${#TCP_MODELS[@]} * ${#CCS[@]} * ${#DELAYS[@]} * ${#LOSSES[@]} * 2 ))
est=0
for rep in "${todo[@]}"; do
    (( rep <= udp_reps )) && est=$(( est + n_udp_arms * (duration + 9) ))
    est=$(( est + n_tcp_arms * (tcp_duration + 9) ))
done
log "reps to run: ${todo[*]} (of $reps); per rep $n_tcp_arms TCP arms of $tcp_duration s + $n_udp_arms UDP arms of $duration s in reps 1..$udp_reps; about $(( est / 60 )) min under TCG (~9 s per arm besides the flow)"

# ---- 2. the box
qbox_prepare "$box"

# ---- 3. boot
qbox_boot mpcc-nvval "$cpus" "$mem_mb" "$boot_timeout"
guest_kernel_pkg=$(gssh "dpkg-query -W -f='\${Package} \${Version}' linux-image-\$(uname -r)" 2>/dev/null || echo "")
log "guest up after $T_BOOT s: kernel $guest_kernel (${guest_kernel_pkg:-package not found})"

# ---- 4. copy in; 5. one rep per call, copied out at once
gssh "rm -rf $GUEST_IN && mkdir -p $GUEST_IN/lib"
scp -q "${SCP_OPTS[@]}" "$out/shim/delayshim" "$out/shim/switch.sh" "$out/shim/validate-guest.sh" "vagrant@127.0.0.1:$GUEST_IN/"
scp -q "${SCP_OPTS[@]}" "$out"/shim/lib/* "vagrant@127.0.0.1:$GUEST_IN/lib/"
# DIR/meta.json: the host, the VM, the snapshot's sha256s, the matrix (params.json) and one entry per session (this
# session's entry rewritten after each rep, the earlier sessions' kept from the previous meta.json)
PREV_SESSIONS=""
write_meta() {
    if [[ -z "$PREV_SESSIONS" ]]; then
        PREV_SESSIONS='[]'
        if [[ -f "$out/meta.json" ]]; then PREV_SESSIONS=$(jq -c '.sessions // []' "$out/meta.json"); fi
    fi
    jq -n --arg host_kernel "$(uname -r)" --arg host_os "$(. /etc/os-release && echo "$PRETTY_NAME")" \
        --arg qemu "$(qemu-system-x86_64 --version | sed -n 1p)" --arg qemu_args "${QEMU_ARGS[*]}" \
        --arg guest_kernel "$guest_kernel" --arg guest_kernel_pkg "$guest_kernel_pkg" --arg box "$box" --arg box_rev "$box_rev" \
        --arg box_sha "$(sha256sum "$boxdir/box.img" | cut -d' ' -f1)" \
        --arg commit "$(cd "$ROOT" && git rev-parse HEAD 2>/dev/null || echo)" \
        --arg shim_sha "$(sha256sum "$out/shim/delayshim" | cut -d' ' -f1)" \
        --arg switch_sha "$(sha256sum "$out/shim/switch.sh" | cut -d' ' -f1)" \
        --arg guest_sha "$(sha256sum "$out/shim/validate-guest.sh" | cut -d' ' -f1)" --slurpfile params "$out/params.json" \
        --arg started "$STARTED" --arg reps_here "${done_here[*]}" --argjson cpus "$cpus" --argjson mem "$mem_mb" \
        --argjson grc "$grc_all" --argjson t_box "$T_BOX" --argjson t_boot "$T_BOOT" --argjson t_runs "$T_RUNS" \
        --argjson t_copy "$T_COPY" --argjson t_total "$(( $(date +%s) - T0 ))" --arg host_cpus "$(nproc)" \
        --arg host_cpu "$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | sed -n 1p)" \
        --arg reps_done "$(find "$out/reps" -name 'rep*.done' -printf '%f\n' | sed 's/^rep0*//; s/\.done$//' | sort -n | tr '\n' ' ')" \
        --argjson prev "$PREV_SESSIONS" \
        '($params[0]) as $p |
         {host_kernel:$host_kernel, host_os:$host_os, host_cpus:($host_cpus|tonumber), host_cpu:$host_cpu,
          qemu:$qemu, accel:"tcg", qemu_args:$qemu_args, vm_cpus:$cpus, vm_memory_mb:$mem,
          guest_kernel:$guest_kernel, guest_kernel_package:(if $guest_kernel_pkg == "" then null else $guest_kernel_pkg end),
          box:$box, box_revision:$box_rev, box_image_sha256:$box_sha,
          git_commit:$p.git_commit, git_dirty:$p.git_dirty,
          shim:{binary:"shim/delayshim", built_from:"testbed/delayshim/delayshim", binary_sha256:$shim_sha,
                source:"testbed/delayshim/delayshim.c", source_git_blob:(if $p.shim_source_git_blob == "" then null else $p.shim_source_git_blob end),
                libs:$p.shim_libs},
          switch_sh:{copy:"shim/switch.sh", sha256:$switch_sha, git_blob:(if $p.switch_sh_git_blob == "" then null else $p.switch_sh_git_blob end)},
          guest_script_sha256:$guest_sha, reps:$p.reps, udp_reps:$p.udp_reps, duration_s:$p.duration,
          tcp_duration_s:$p.tcp_duration, delays_ms:($p.delays|split(" ")|map(tonumber)),
          models:($p.models|split(" ")|map(select(. != ""))), tcp_models:($p.tcp_models|split(" ")|map(select(. != ""))),
          ccs:($p.ccs|split(" ")|map(select(. != ""))), losses_pct:($p.losses|split(" ")|map(tonumber)),
          implementations:["netem","shim"], seed:$p.seed, tc_interval_s:($p.tc_interval|tonumber),
          reps_done:($reps_done|split(" ")|map(select(. != "")|tonumber)),
          guest_exit:$grc,
          sessions:($prev + [{started_utc:$started, commit:$commit, reps:($reps_here|split(" ")|map(select(. != "")|tonumber)),
                                 guest_exit:$grc, seconds:{build_box:$t_box, boot:$t_boot, runs:$t_runs, copy_back:$t_copy,
                                 total:$t_total}}])}' >"$out/meta.json.tmp"
    mv "$out/meta.json.tmp" "$out/meta.json"
}
grc_all=0 done_here=() T_RUNS=0 T_COPY=0
for rep in "${todo[@]}"; do
    tag=$(printf 'rep%02d' "$rep")
    t=$(date +%s)
    set +e
    gssh "sudo rm -rf $GUEST_OUT && sudo bash $GUEST_IN/validate-guest.sh --shimdir $GUEST_IN --switch $GUEST_IN/switch.sh \
          --out $GUEST_OUT --reps $reps --only-rep $rep --udp-reps $udp_reps --duration-s $duration --delays '${DELAYS[*]}' \
          --models '${MODELS[*]}' --tcp-models '${TCP_MODELS[*]}' --ccs '${CCS[*]}' --losses '${LOSSES[*]}' \
          --tcp-duration-s $tcp_duration --seed $seed --tc-interval-s $tc_interval" 2>&1 | tee "$out/guest-$tag.log" >&2
    grc=${PIPESTATUS[0]}
    set -e
    T_RUNS=$(( T_RUNS + $(date +%s) - t ))
    (( grc <= 1 )) || die "the guest script failed on $tag (exit $grc; $out/guest-$tag.log)"
    (( grc == 0 )) || grc_all=1
    t=$(date +%s)
    gssh "sudo tar -C $GUEST_OUT -cf - ." | tar -C "$out" -xf - || die "copying $tag out of the guest failed"
    cp "$out/setup.json" "$out/setup-$tag.json"
    T_COPY=$(( T_COPY + $(date +%s) - t ))
    date -u +%Y-%m-%dT%H:%M:%SZ >"$out/reps/$tag.done"
    done_here+=("$rep")
    write_meta
    log "$tag done (guest exit $grc): $(find "$out/runs" -name run.json | wc -l) arms in $out/runs; $(( reps - $(find "$out/reps" -name '*.done' | wc -l) )) reps left"
done

log "results in $out ($(find "$out/runs" -name run.json | wc -l) arms; box $T_BOX s, boot $T_BOOT s, runs $T_RUNS s, copy $T_COPY s)"
log "analyse: python -m analysis.netem_validation $out"
exit "$grc_all"
