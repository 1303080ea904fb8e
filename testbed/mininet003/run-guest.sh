#!/usr/bin/env bash
# ONE run of study 003's Table 2 scenarios with the paper's tool chain (Mininet + Open vSwitch), as root INSIDE the
# Debian 12 VM that testbed/mininet003/run-vm.sh boots (box revision 6: mininet, openvswitch-switch).
# docs/mininet-003.md describes the experiment; testbed/mininet003/topo003.py builds the network and runs the flow
# (its docstring lists the run directory's files).
#   1. checks every argument and the guest's tools, makes sure Open vSwitch runs (ovsdb-server, ovs-vswitchd)
#   2. `mn -c` (Mininet's own clean-up: no bridge, link or process of an earlier run is left)
#   3. python3 topo003.py (Mininet's Python API): builds h1, h2, OVSBridge s1, s2 and the TCLinks, runs the flow
#   4. `mn -c` again on every exit path
# Exit 0 = complete, 1 = a check failed (RUN_DIR kept, meta.json status "failed"), 2 = usage or set-up error.
# usage: run-guest.sh --dir DIR --out RUN_DIR --mode tcp_path1|mptcp --queue-pkts Q --rep N --duration-s T
#                     [--ping-interval-s 1] [--sample-interval-s 1] [--cc cubic] [--delay-links client|both]
#   DIR holds testbed/mininet003/topo003.py and testbed/families/003/topology.json (the repository's layout)
set -euo pipefail
export LC_ALL=C
dir="" out="" mode="" queue="" rep="" duration="" ping_interval=1 sample_interval=1 cc=cubic delay_links=client
die() { echo "error: $*" >&2; exit 2; }
usage() { sed -n '/^# usage:/,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --dir) dir=${2:-}; shift 2 || usage ;;
        --out) out=${2:-}; shift 2 || usage ;;
        --mode) mode=${2:-}; shift 2 || usage ;;
        --queue-pkts) queue=${2:-}; shift 2 || usage ;;
        --rep) rep=${2:-}; shift 2 || usage ;;
        --duration-s) duration=${2:-}; shift 2 || usage ;;
        --ping-interval-s) ping_interval=${2:-}; shift 2 || usage ;;
        --sample-interval-s) sample_interval=${2:-}; shift 2 || usage ;;
        --cc) cc=${2:-}; shift 2 || usage ;;
        --delay-links) delay_links=${2:-}; shift 2 || usage ;;
        -h|--help) usage ;;
        *) die "unknown option '$1'" ;;
    esac
done
# ---- every argument is checked before anything runs
TOPO_PY="$dir/testbed/mininet003/topo003.py" TOPO="$dir/testbed/families/003/topology.json"
[[ -n "$dir" && -f "$TOPO_PY" && -f "$TOPO" ]] || die "--dir must hold testbed/mininet003/topo003.py and testbed/families/003/topology.json"
[[ -n "$out" ]] || die "--out is required"
if [[ -e "$out" ]]; then die "--out $out exists (a run directory is written once)"; fi
[[ "$mode" =~ ^(tcp_path1|mptcp)$ ]] || die "--mode must be tcp_path1 or mptcp, got '$mode'"
[[ "$queue" =~ ^[1-9][0-9]{0,5}$ ]] || die "--queue-pkts must be an integer 1..999999, got '$queue'"
[[ "$rep" =~ ^[1-9][0-9]{0,2}$ ]] || die "--rep must be an integer 1..999, got '$rep'"
[[ "$duration" =~ ^[1-9][0-9]{0,4}$ ]] || die "--duration-s must be an integer 1..99999, got '$duration'"
for v in "$ping_interval" "$sample_interval"; do
    [[ "$v" =~ ^(0\.[0-9]*[1-9][0-9]*|[1-9][0-9]*(\.[0-9]+)?)$ ]] || die "--ping-interval-s and --sample-interval-s must be positive numbers, got '$v'"
    awk -v s="$v" 'BEGIN {exit !(s >= 0.01 && s <= 60)}' || die "--ping-interval-s and --sample-interval-s must be in [0.01, 60], got '$v'"
done
[[ "$cc" =~ ^(reno|cubic|bbr)$ ]] || die "--cc must be reno, cubic or bbr, got '$cc'"
[[ "$delay_links" =~ ^(client|both)$ ]] || die "--delay-links must be client or both, got '$delay_links'"
[[ $EUID -eq 0 ]] || die "run-guest.sh needs root (Mininet)"
missing=()
for t in python3 mn mnexec ovs-vsctl ovs-vswitchd ip tc jq iperf3 ping nstat ss ethtool timeout; do
    command -v "$t" >/dev/null || missing+=("$t")
done
[[ $mode != mptcp ]] || command -v mptcpize >/dev/null || missing+=(mptcpize)
[[ ${#missing[@]} -eq 0 ]] || die "missing ${missing[*]} in the guest (testbed/vagrant/build-box.sh revision 6 has them)"

mkdir -p "$(dirname "$out")"
# Open vSwitch: the box enables its service; start it if it is not running (ovs-vsctl answers within 5 s)
if ! ovs-vsctl -t 5 show >/dev/null 2>&1; then
    systemctl start openvswitch-switch >&2 || die "could not start openvswitch-switch"
    ovs-vsctl -t 10 show >/dev/null 2>&1 || die "ovs-vsctl show does not answer after starting openvswitch-switch"
fi
LOG=$(mktemp /tmp/mn003-clean.XXXXXX)
# shellcheck disable=SC2317  # the EXIT trap
cleanup() {
    local rc=$?
    mn -c >>"$LOG" 2>&1 || true
    if [[ -d "$out" ]]; then cat "$LOG" >> "$out/mn-clean.log"; fi
    rm -f "$LOG"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mn -c >>"$LOG" 2>&1 || true
set +e
python3 "$TOPO_PY" --topology "$TOPO" --out "$out" --mode "$mode" --queue-pkts "$queue" --rep "$rep" \
    --duration-s "$duration" --ping-interval-s "$ping_interval" --sample-interval-s "$sample_interval" --cc "$cc" \
    --delay-links "$delay_links"
rc=$?
set -e
if (( rc > 2 )) || { (( rc == 1 )) && [[ ! -f "$out/meta.json" ]]; }; then   # an uncaught error: keep a failed run
    mkdir -p "$out"
    jq -n --arg mode "$mode" --argjson q "$queue" --argjson rep "$rep" --arg r "topo003.py exited $rc (run.log)" \
        '{mode:$mode, queue_pkts:$q, rep:$rep, status:"failed", reason:$r}' > "$out/meta.json"
    rc=1
fi
exit "$rc"
