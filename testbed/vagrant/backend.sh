#!/usr/bin/env bash
# vagrant backend for the study-000 testbed (backend interface: docs/architecture.md).
# usage: backend.sh up [--path-mode single|multipath] [--link-delay-ms D] [--loss-pct L] [--path-skew-ms K] [--fq]
#   (round-robin: TEQL when the guest kernel has it, as in the paper; MPCC_RR_MECH=nft forces nftables numgen)
#        backend.sh down | check | features | exec NODE -- CMD... | ssh-config | status | clock-offsets | path-counters ROUTER
#        | host-sched (the host CPU placement `up` applied to the switch VMs, JSON; testbed/vagrant/host-sched.sh)
# VMs, libvirt networks and the vagrant state are named with ${MPCC_VAGRANT_PREFIX:-mpcc-}; the provider is
# $VAGRANT_DEFAULT_PROVIDER (libvirt when VirtualBox is absent). `up` creates the VMs only if they are not running
# (slow: minutes per VM under qemu TCG), then re-applies the parameters on all 8 VMs in parallel over ssh (seconds).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
PREFIX="${MPCC_VAGRANT_PREFIX:-mpcc-}"
NODES=(src1 src2 router1 switch1 switch2 router2 dst1 dst2)
STATE="/run/mpcc-vagrant/${PREFIX}"
SSHCFG="$STATE/ssh-config"
GUEST_TB=/opt/mpcc/testbed
export VAGRANT_CWD="$REPO"
export VAGRANT_DOTFILE_PATH="$REPO/.vagrant/${PREFIX%-}"
export MPCC_VAGRANT_PREFIX="$PREFIX"

usage() { echo "usage: backend.sh up [--path-mode M] [--link-delay-ms D] [--loss-pct L] [--path-skew-ms K] [--fq] | down | check | features | exec NODE -- CMD... | ssh-config | status | clock-offsets" >&2; exit 2; }
# shellcheck source=testbed/nodes/common.sh
source "$REPO/testbed/nodes/common.sh"   # is_number, parse_up_args, TOPOLOGY (log/die redefined below)
log() { echo "[$(date -u +%H:%M:%S)] vagrant-backend: $*" >&2; }
die() { echo "error: $*" >&2; exit 2; }
[[ "$PREFIX" =~ ^[a-z0-9-]+$ ]] || die "MPCC_VAGRANT_PREFIX must match [a-z0-9-]+, got '$PREFIX'"
RR_MECH="${MPCC_RR_MECH:-auto}"
[[ "$RR_MECH" =~ ^(auto|teql|nft)$ ]] || die "MPCC_RR_MECH must be auto, teql or nft, got '$RR_MECH'"
valid_node() { [[ " ${NODES[*]} " == *" $1 "* ]] || die "unknown node '$1' (one of: ${NODES[*]})"; }

# ssh options for commands issued by the testbed: they reuse one master connection per VM when it exists (TCG guests
# are slow to accept new connections); masters are started by ensure_masters, never implicitly (an implicit master
# would hold a $(...) capture open).
ssh_opts() { echo "-F $SSHCFG -o ControlMaster=no -o ControlPath=$STATE/cm-%h -o LogLevel=ERROR -o ServerAliveInterval=10"; }

ensure_masters() {
    local n
    for n in "${NODES[@]}"; do
        # shellcheck disable=SC2046
        ssh $(ssh_opts) -O check "$n" >/dev/null 2>&1 && continue
        # shellcheck disable=SC2046
        ssh $(ssh_opts) -o ControlMaster=yes -o ControlPersist=1800 -f -N "$n" </dev/null >/dev/null 2>&1 || log "$n: no ssh master (commands will connect directly)"
    done
}

# vsh NODE CMD...: run CMD (already a shell string) as root on NODE
vsh() {
    local node=$1; shift
    # shellcheck disable=SC2046,SC2029  # option words split on purpose; the command is quoted for the remote shell
    ssh $(ssh_opts) "$node" "sudo -n bash -c $(printf '%q' "$*")"
}

running_nodes() { vagrant status --machine-readable 2>/dev/null | awk -F, '$3=="state" && $4=="running" {print $2}'; }

write_ssh_config() {
    mkdir -p "$STATE"
    vagrant ssh-config "${NODES[@]}" > "$SSHCFG.tmp" 2>/dev/null || die "vagrant ssh-config failed"
    mv "$SSHCFG.tmp" "$SSHCFG"
    ensure_masters
}

ensure_vms() {
    local n missing=() run
    mapfile -t run < <(running_nodes)
    for n in "${NODES[@]}"; do [[ " ${run[*]} " == *" $n "* ]] || missing+=("$n"); done
    if [[ ${#missing[@]} -gt 0 ]]; then
        log "vagrant up ${missing[*]} (prefix $PREFIX)"
        # --no-parallel is not used: vagrant-libvirt boots the machines in parallel, which is what saves time
        vagrant up "${missing[@]}" >&2 || die "vagrant up failed"
        rm -f "$SSHCFG"
    fi
    if [[ -s "$SSHCFG" ]]; then ensure_masters; else write_ssh_config; fi
}

sync_testbed() { # NODE: keep the guest copy of testbed/ identical to the host's (provisioning code lives there)
    local node=$1
    # shellcheck disable=SC2046,SC2029
    tar -C "$REPO" -czf - testbed | ssh $(ssh_opts) "$node" "sudo -n bash -c 'rm -rf /tmp/mpcc-tb && mkdir -p /tmp/mpcc-tb /opt/mpcc && tar -C /tmp/mpcc-tb -xzf - && rm -rf $GUEST_TB && mv /tmp/mpcc-tb/testbed $GUEST_TB'"
}

do_up() {
    local args=() path_mode link_delay_ms loss_pct path_skew_ms queue_model fq
    parse_up_args 1 "$@"
    [[ $EUID -eq 0 ]] || die "the vagrant backend needs root (libvirt system connection)"
    command -v vagrant >/dev/null || die "vagrant not found: run testbed/vagrant/host-setup.sh"

    ensure_vms
    args=(--path-mode "$path_mode" --link-delay-ms "$link_delay_ms" --loss-pct "$loss_pct" --path-skew-ms "$path_skew_ms" --rr-mech "$RR_MECH")
    [[ -z "$queue_model" ]] || args+=(--queue-model "$queue_model")
    local n pids=() fail=0
    for n in "${NODES[@]}"; do
        (
            sync_testbed "$n"
            extra=()
            [[ $fq == 1 && $n == src* ]] && extra=(--fq)
            vsh "$n" "bash $GUEST_TB/vagrant/node-up.sh $n ${args[*]} ${extra[*]}" >"$STATE/up-$n.out" || echo "node-up exited with status $?"
        ) 2>&1 | sed "s/^/[$n] /" >&2 &
        pids+=("$!")
    done
    for p in "${pids[@]}"; do wait "$p" || fail=1; done
    # a failing subshell's status is hidden by the pipe into sed: verify each node wrote its state file
    for n in "${NODES[@]}"; do
        vsh "$n" "jq -e --arg pm $path_mode '.path_mode == \$pm' /run/mpcc-node.json" >/dev/null 2>&1 \
            || { log "$n: node-up failed (its stdout: $STATE/up-$n.out)"; sed "s/^/[$n] /" "$STATE/up-$n.out" >&2 2>/dev/null; fail=1; }
    done
    [[ $fail == 0 ]] || die "up: node set-up failed (see messages above)"
    host_sched
    jq -n --arg pm "$path_mode" --argjson d "$link_delay_ms" --argjson l "$loss_pct" --argjson k "$path_skew_ms" --arg qm "$queue_model" \
        '{path_mode:$pm, link_delay_ms:$d, loss_pct:$l, path_skew_ms:$k, queue_model:(if $qm == "" then null else $qm end)}' > "$STATE/params.json"
    log "up: path_mode=$path_mode link_delay_ms=$link_delay_ms loss_pct=$loss_pct path_skew_ms=$path_skew_ms on 8 VMs"
}

host_sched() { # libvirt: host CPU placement of the switch VMs (host-sched.sh; opt-in MPCC_VAGRANT_SCHED=auto) -> JSON
    if [[ "${VAGRANT_DEFAULT_PROVIDER:-libvirt}" != libvirt ]]; then
        jq -n '{applied:false, reason:"provider is not libvirt"}' > "$STATE/host-sched.json"
        return 0
    fi
    bash "$HERE/host-sched.sh" apply > "$STATE/host-sched.json.tmp" || die "host-sched.sh apply failed"
    mv "$STATE/host-sched.json.tmp" "$STATE/host-sched.json"
    log "host scheduling: $(jq -c 'if .applied then {switch1_cpu, switch2_cpu, priority} else {applied, reason} end' "$STATE/host-sched.json")"
}

do_down() {
    [[ $EUID -eq 0 ]] || die "the vagrant backend needs root"
    log "down: destroying VMs with prefix $PREFIX"
    vagrant destroy -f >&2 || log "vagrant destroy reported an error; removing leftovers with virsh"
    if command -v virsh >/dev/null; then
        local d net
        for n in "${NODES[@]}"; do
            d="${PREFIX}$n"
            if virsh -c qemu:///system dominfo "$d" >/dev/null 2>&1; then
                virsh -c qemu:///system destroy "$d" >/dev/null 2>&1 || true
                virsh -c qemu:///system undefine "$d" --remove-all-storage >/dev/null 2>&1 || true
            fi
        done
        while read -r net; do
            [[ -n "$net" ]] || continue
            virsh -c qemu:///system net-destroy "$net" >/dev/null 2>&1 || true
            virsh -c qemu:///system net-undefine "$net" >/dev/null 2>&1 || true
        done < <(virsh -c qemu:///system net-list --all --name 2>/dev/null | grep "^${PREFIX}" || true)
    fi
    # close ssh control connections, forget state
    if [[ -d "$STATE" ]]; then
        for s in "$STATE"/cm-*; do
            if [[ -S "$s" ]]; then ssh -o ControlPath="$s" -O exit dummy >/dev/null 2>&1 || true; fi
        done
    fi
    rm -rf "$STATE"
    log "down: done"
}

do_exec() {
    local node=${1:-}
    shift || usage
    [[ "${1:-}" == "--" ]] && shift
    valid_node "$node"
    [[ $# -gt 0 ]] || usage
    [[ -s "$SSHCFG" ]] || write_ssh_config
    local q
    q=$(printf '%q ' "$@")
    # shellcheck disable=SC2046,SC2029
    exec ssh $(ssh_opts) "$node" "sudo -n bash -c $(printf '%q' "$q")"
}

path_counters() { # ROUTER -> "p1 p2": tx packets of its path-1 / path-2 (switch-facing) interfaces, any mechanism
    local a1 a2
    if [[ $1 == router1 ]]; then a1=10.2.1.1 a2=10.2.2.1; else a1=10.3.1.1 a2=10.3.2.1; fi
    vsh "$1" "for a in $a1 $a2; do d=\$(ip -o -4 addr show | awk -v a=\$a '{split(\$4,x,\"/\"); if (x[1]==a) print \$2}'); cat /sys/class/net/\$d/statistics/tx_packets; done" \
        | paste -sd' '
}

do_check() {
    [[ -f "$STATE/params.json" ]] || die "testbed with prefix $PREFIX is not up (run backend.sh up)"
    local d pm k exp_rtt rtts med ok_rtt a1 a2 b1 b2 c1 c2 e1 e2 parity1=null parity2=null rate rate_ok expect
    d=$(jq -r .link_delay_ms "$STATE/params.json"); pm=$(jq -r .path_mode "$STATE/params.json"); k=$(jq -r .path_skew_ms "$STATE/params.json")
    read -r a1 a2 < <(path_counters router1); read -r c1 c2 < <(path_counters router2)
    rtts=$(vsh src1 "ping -n -c 20 -i 0.05 10.4.1.2" | sed -n 's/.*time=\([0-9.]*\).*/\1/p' | sort -n)
    med=$(echo "$rtts" | awk 'NF{v[++n]=$1} END{if(n==0){print "null"} else if(n%2){print v[(n+1)/2]} else {print (v[n/2]+v[n/2+1])/2}}')
    exp_rtt=$d; [[ $pm == multipath ]] && exp_rtt=$(awk -v d="$d" -v k="$k" 'BEGIN{print d+k}')
    # VMs under TCG add processing delay: accept +3 ms above the configured RTT (netns: +-1 ms)
    if [[ $med == null ]]; then ok_rtt=false; else ok_rtt=$(awk -v m="$med" -v d="$exp_rtt" 'BEGIN{print ((m-d)<=3 && (d-m)<=1) ? "true":"false"}'); fi
    read -r b1 b2 < <(path_counters router1); read -r e1 e2 < <(path_counters router2)
    a1=$((b1-a1)); a2=$((b2-a2)); c1=$((e1-c1)); c2=$((e2-c2))
    if [[ $pm == multipath ]]; then
        # 20 pings: 10 requests over router1's paths, 10 replies over router2's (+-1 for a stray ARP/ND packet)
        parity1=$(awk -v x="$a1" -v y="$a2" 'BEGIN{print (x>=10 && y>=10 && x-y<=1 && y-x<=1) ? "true":"false"}')
        parity2=$(awk -v x="$c1" -v y="$c2" 'BEGIN{print (x>=10 && y>=10 && x-y<=1 && y-x<=1) ? "true":"false"}')
    fi
    vsh dst1 "iperf3 -s -1 -p 5299 -D" >/dev/null 2>&1 || true
    sleep 1
    rate=$(vsh src1 "iperf3 -c 10.4.1.2 -p 5299 -t 3 -C cubic --json" 2>/dev/null | jq '.end.sum_received.bits_per_second/1e6' 2>/dev/null || echo null)
    [[ -n "$rate" ]] || rate=null
    expect=10; [[ $pm == multipath ]] && expect=20
    rate_ok=$(awk -v r="$rate" -v e="$expect" 'BEGIN{if (r=="null") {print "false"; exit} t=e*0.955; print (r>=t*0.90 && r<=t*1.05) ? "true":"false"}')
    jq -n --arg pm "$pm" --argjson d "$d" --argjson er "$exp_rtt" --argjson med "$med" --argjson okr "$ok_rtt" \
        --argjson p1 "$a1" --argjson p2 "$a2" --argjson q1 "$c1" --argjson q2 "$c2" --argjson pok1 "$parity1" --argjson pok2 "$parity2" \
        --argjson rate "$rate" --argjson rok "$rate_ok" \
        '{backend:"vagrant", path_mode:$pm, rtt_median_ms:$med, expected_rtt_ms:$er, link_delay_ms:$d, rtt_ok:$okr,
          round_robin:{router1:{path1_pkts:$p1, path2_pkts:$p2, parity_ok:$pok1}, router2:{path1_pkts:$q1, path2_pkts:$q2, parity_ok:$pok2}},
          tcp_goodput_mbps:$rate, expected_goodput_mbps:(if $pm=="multipath" then 19.1 else 9.55 end), rate_ok:$rok,
          ok:($okr and ($pok1 != false) and ($pok2 != false) and $rok)}'
}

do_features() {
    [[ -s "$SSHCFG" ]] || write_ssh_config
    # the guest kernel decides: run the same detector inside a VM (it uses a scratch namespace there, where teql0 is
    # never visible); the routers run in the guest's initial namespace, so TEQL is what router1 actually set up
    local feat rr
    feat=$(vsh switch1 "bash $GUEST_TB/features.sh")
    rr=$(vsh router1 "jq -r .rr_mech /run/mpcc-node.json 2>/dev/null || echo nft")
    jq --arg rr "$rr" '. + {teql: (if $rr == "teql" then true else .teql end)}
        | .mechanism.round_robin = (if $rr == "teql" then "teql" else "nft-numgen-fwmark" end)' <<<"$feat"
}

do_clock_offsets() {
    [[ -s "$SSHCFG" ]] || write_ssh_config
    python3 "$HERE/clock_offsets.py" --ssh-config "$SSHCFG" --control-dir "$STATE" "${NODES[@]}"
}

cmd=${1:-}
shift || usage
case "$cmd" in
    up) do_up "$@" ;;
    down) do_down ;;
    check) do_check ;;
    features) do_features ;;
    exec) do_exec "$@" ;;
    ssh-config) write_ssh_config; echo "$SSHCFG" ;;
    status) vagrant status >&2 ;;
    clock-offsets) do_clock_offsets ;;
    host-sched) if [[ -s "$STATE/host-sched.json" ]]; then cat "$STATE/host-sched.json"; else echo null; fi ;;
    path-counters) [[ "${1:-}" == router1 || "${1:-}" == router2 ]] || die "path-counters needs router1 or router2"
                   [[ -s "$SSHCFG" ]] || write_ssh_config; path_counters "$1" ;;
    *) usage ;;
esac
