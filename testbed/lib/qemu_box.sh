# shellcheck shell=bash
# One Debian 12 box booted directly with qemu-system-x86_64 under TCG (no libvirt, no vagrant at run time): the VM of
# the validation harnesses (testbed/cc/validate-vm.sh: BPF congestion controls against the kernel's modules;
# testbed/delayshim/validate-vm.sh: the delay shim's queue models against real netem; testbed/qdisc003/run-vm.sh and
# testbed/mininet003/run-vm.sh, which run a plan of runs in it with testbed/lib/qemu_runs.sh). Sourced, not executed;
# the caller defines die() and log() and sets a trap that calls qbox_teardown.
#   qbox_key                       -> key: vagrant's insecure private key (the box authorises its public half)
#   qbox_prepare BOX [KREL]        -> boxdir, box_rev, cmdline, T_BOX, qbox_vmlinuz, qbox_initrd: the box
#                                     (testbed/vagrant/build-box.sh, a no-op when it is current), its kernel command
#                                     line and the kernel to boot: the box's own, or with KREL the extra kernel the box
#                                     ships as vmlinuz-KREL/initrd.img-KREL (build-box.sh --extra-kernel; refused if
#                                     the box lacks it: MPCC_BOX_EXTRA_KERNEL=ubuntu:VERSION lets build-box.sh add it)
#   qbox_boot NAME CPUS MEM_MB BOOT_TIMEOUT_S
#                                  -> work, qpid, port, QEMU_ARGS, SSH_OPTS, SCP_OPTS, T_BOOT, guest_kernel: a
#                                     throw-away qcow2 overlay (the box is not modified), user-mode networking with an
#                                     ssh port forward on 127.0.0.1, waiting until ssh answers; gssh CMD runs CMD there
#   qbox_teardown OUT              stops the VM (TERM, then KILL after 10 s), keeps OUT/console.log, removes work
#   qbox_traps OUT                 qbox_teardown OUT on exit and on INT/TERM/HUP (exit 130/143/129), the exit status kept
#   qbox_resume_plan OUT WORD      --resume: each key of the caller's MATRIX array read into its associative array P
#                                  from OUT/params.json; refused (die) where P already holds another value
# shellcheck disable=SC2034  # the variables are the callers'
QBOX_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="" qpid=""

qbox_key() {
    key=""
    local k
    for k in /usr/share/rubygems-integration/all/gems/vagrant-*/keys/vagrant /opt/vagrant/embedded/gems/gems/vagrant-*/keys/vagrant \
             /usr/lib/ruby/vendor_ruby/vagrant/keys/vagrant; do
        [[ -f "$k" ]] && { key=$k; break; }
    done
    [[ -n "$key" ]] || die "cannot find vagrant's insecure private key (keys/vagrant; the box authorises its public half)"
}

qbox_prepare() {
    local box=$1 krel=${2:-} t f
    t=$(date +%s)
    log "box $box (testbed/vagrant/build-box.sh)"
    bash "$QBOX_ROOT/testbed/vagrant/build-box.sh" --name "$box" ${MPCC_BOX_EXTRA_KERNEL:+--extra-kernel "$MPCC_BOX_EXTRA_KERNEL"} >&2
    T_BOX=$(( $(date +%s) - t ))
    boxdir="${VAGRANT_HOME:-$HOME/.vagrant.d}/boxes/${box//\//-VAGRANTSLASH-}/0/libvirt"
    qbox_vmlinuz=vmlinuz qbox_initrd=initrd.img
    if [[ -n "$krel" ]]; then qbox_vmlinuz="vmlinuz-$krel" qbox_initrd="initrd.img-$krel"; fi
    for f in box.img "$qbox_vmlinuz" "$qbox_initrd" Vagrantfile; do
        [[ -f "$boxdir/$f" ]] || die "box $box has no $f in $boxdir${krel:+ (build it with testbed/vagrant/build-box.sh --name $box --extra-kernel ubuntu:VERSION)}"
    done
    box_rev=$(sed -n 's/^# mpcc-box-revision: //p' "$boxdir/Vagrantfile")
    cmdline=$(sed -n 's/^ *lv\.cmd_line = "\(.*\)"$/\1/p' "$boxdir/Vagrantfile")
    [[ -n "$cmdline" ]] || cmdline="root=/dev/vda rw console=ttyS0 net.ifnames=0 biosdevname=0 quiet mitigations=off"
}

# shellcheck disable=SC2029  # the remote command line is built by the caller on purpose
gssh() { ssh "${SSH_OPTS[@]}" vagrant@127.0.0.1 "$@"; }

qbox_boot() {
    local name=$1 cpus=$2 mem_mb=$3 boot_timeout=$4 p t deadline
    work=$(mktemp -d "/var/tmp/$name.XXXXXX")
    qemu-img create -q -f qcow2 -F qcow2 -b "$boxdir/box.img" "$work/disk.qcow2"
    install -m 0600 "$key" "$work/key"
    port=""
    for _ in $(seq 50); do
        p=$(( 20000 + RANDOM % 20000 ))
        if [[ -z "$(ss -Htln "sport = :$p")" ]]; then port=$p; break; fi
    done
    [[ -n "$port" ]] || die "no free local port for the ssh forward"
    QEMU_ARGS=(-name "$name" -machine pc -accel "tcg,tb-size=256" -cpu qemu64 -smp "$cpus" -m "$mem_mb"
        -nodefaults -display none -monitor none -serial "file:$work/console.log"
        -kernel "$boxdir/${qbox_vmlinuz:-vmlinuz}" -initrd "$boxdir/${qbox_initrd:-initrd.img}" -append "$cmdline"
        -drive "file=$work/disk.qcow2,if=virtio,format=qcow2,cache=unsafe"
        -netdev "user,id=n0,hostfwd=tcp:127.0.0.1:$port-:22" -device "virtio-net-pci,netdev=n0"
        -device virtio-rng-pci)
    t=$(date +%s)
    log "booting: qemu-system-x86_64 (TCG, cpu qemu64, $cpus vCPU, $mem_mb MB), ssh on 127.0.0.1:$port; console $work/console.log"
    qemu-system-x86_64 "${QEMU_ARGS[@]}" </dev/null >"$work/qemu.log" 2>&1 &
    qpid=$!
    SSH_OPTS=(-i "$work/key" -p "$port" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR
              -o IdentitiesOnly=yes -o BatchMode=yes -o ConnectTimeout=10 -o ServerAliveInterval=15 -o ServerAliveCountMax=20)
    SCP_OPTS=(-i "$work/key" -P "$port" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR
              -o IdentitiesOnly=yes -o BatchMode=yes -o ConnectTimeout=10)
    deadline=$(( $(date +%s) + boot_timeout ))
    until gssh true 2>/dev/null; do
        if ! kill -0 "$qpid" 2>/dev/null; then
            die "qemu exited during boot: $(tail -5 "$work/qemu.log" | tr '\n' ' '); console tail: $(tail -20 "$work/console.log" | tr -d '\r' | tr '\n' '|')"
        fi
        if (( $(date +%s) > deadline )); then
            die "no ssh after ${boot_timeout} s; console tail: $(tail -20 "$work/console.log" | tr -d '\r' | tr '\n' '|')"
        fi
        sleep 5
    done
    T_BOOT=$(( $(date +%s) - t ))
    guest_kernel=$(gssh uname -r)
}

qbox_teardown() {
    local out=$1
    if [[ -n "$qpid" ]] && kill -0 "$qpid" 2>/dev/null; then
        log "stopping the VM (qemu pid $qpid)"
        kill "$qpid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$qpid" 2>/dev/null || break; sleep 0.2; done
        kill -9 "$qpid" 2>/dev/null || true
        wait "$qpid" 2>/dev/null || true
    fi
    if [[ -n "$work" && -d "$work" ]]; then
        cp "$work/console.log" "$out/console.log" 2>/dev/null || true
        rm -rf "$work"
    fi
}

qbox_traps() {
    QBOX_OUT=$1
    trap _qbox_exit EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    trap 'exit 129' HUP
}

# shellcheck disable=SC2317  # the EXIT trap of qbox_traps
_qbox_exit() {
    local rc=$?
    trap - EXIT INT TERM HUP
    qbox_teardown "$QBOX_OUT"
    exit "$rc"
}

qbox_resume_plan() {
    local out=$1 word=$2 k v
    [[ -f "$out/params.json" ]] || die "--resume: $out/params.json not found (not a results directory of this script)"
    for k in "${MATRIX[@]}"; do
        v=$(jq -r --arg k "$k" '.[$k] // "" | tostring' "$out/params.json") || die "--resume: cannot read $out/params.json"
        if [[ -v "P[$k]" && "${P[$k]}" != "$v" ]]; then
            die "--resume: ${k//_/-} '${P[$k]}' differs from '$v' in $out/params.json (give the same $word, or none)"
        fi
        P["$k"]=$v
    done
}
