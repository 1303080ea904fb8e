#!/usr/bin/env bash
# ONE run of study 000's loss_rate experiment with the repository's own capture tool, as root INSIDE the VM that
# testbed/kernel415/run-vm.sh boots (the box's Debian 12 userspace on either of its kernels: Ubuntu's 4.15, the
# paper's, or Debian's 6.1). docs/kernel-415.md describes the experiment.
#   capture_tools/run_experiment.sh --backend netns runs exactly as on the host: the same eight namespaces
#   (testbed/netns.sh), the switches' TBF 10 Mbit/s with real netem (delay, loss and its 100-packet limit: the kernel
#   has sch_netem, so testbed/features.sh picks it), per-packet round robin by nftables numgen (TEQL's teql0 exists
#   only in the initial namespace), iperf3, tcpdump on router1 and at the receiver, `ss -ti` on the sender.
#   Before it: the congestion-control modules are loaded (a kernel lists a module CC as available only once loaded).
#   After it: RUN_DIR.guest.json (beside the run directory, whose COMPLETE marker stays its last file; run-vm.sh moves
#   it in) records the guest: kernel, its TCP loss-detection sysctls, tool versions.
# Exit: run_experiment.sh's (0 complete, 3 skipped, other failed); 2 on usage errors.
# usage: run-guest.sh --tb DIR --out RUN_DIR -- RUN_EXPERIMENT_ARGS...
set -euo pipefail
export LC_ALL=C
tb="" out=""
die() { echo "error: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --tb) tb=${2:-}; shift 2 || die "--tb needs a value" ;;
        --out) out=${2:-}; shift 2 || die "--out needs a value" ;;
        --) shift; break ;;
        *) die "unknown option '$1' (usage: run-guest.sh --tb DIR --out RUN_DIR -- RUN_EXPERIMENT_ARGS...)" ;;
    esac
done
[[ -n "$tb" && -f "$tb/capture_tools/run_experiment.sh" ]] || die "--tb must hold capture_tools/run_experiment.sh"
[[ -n "$out" && "$out" == /* ]] || die "--out must be an absolute path"
[[ $# -gt 0 ]] || die "no run_experiment.sh arguments after --"
[[ $EUID -eq 0 ]] || die "run-guest.sh needs root"

grep -q "[[:space:]]$(hostname)\$" /etc/hosts || echo "127.0.1.1 $(hostname)" >> /etc/hosts   # sudo's lookup
for m in tcp_bic tcp_bbr sch_netem sch_tbf sch_fq; do modprobe -q "$m" 2>/dev/null || true; done

set +e
bash "$tb/capture_tools/run_experiment.sh" --backend netns --out "$out" "$@"
rc=$?
set -e
if [[ -d "$out" ]]; then
    jq -n --arg uname "$(uname -a)" --arg release "$(uname -r)" --arg version "$(cat /proc/version)" \
        --arg recovery "$(sysctl -n net.ipv4.tcp_recovery)" --arg fack "$(sysctl -n net.ipv4.tcp_fack 2>/dev/null)" \
        --arg reordering "$(sysctl -n net.ipv4.tcp_reordering)" --arg sack "$(sysctl -n net.ipv4.tcp_sack)" \
        --arg dsack "$(sysctl -n net.ipv4.tcp_dsack)" --arg frto "$(sysctl -n net.ipv4.tcp_frto)" \
        --arg early "$(sysctl -n net.ipv4.tcp_early_retrans)" --arg cca "$(sysctl -n net.ipv4.tcp_available_congestion_control)" \
        --arg iperf3 "$(dpkg-query -W -f='${Version}' iperf3)" --arg iproute2 "$(dpkg-query -W -f='${Version}' iproute2)" \
        --arg tcpdump "$(dpkg-query -W -f='${Version}' tcpdump)" --arg nft "$(dpkg-query -W -f='${Version}' nftables)" \
        --arg nproc "$(nproc)" --argjson rc "$rc" \
        '{uname:$uname, kernel:$release, proc_version:$version, vcpus:($nproc|tonumber), run_experiment_exit:$rc,
          tcp_sysctls:{tcp_recovery:$recovery, tcp_fack:(if $fack == "" then null else $fack end), tcp_reordering:$reordering,
                       tcp_sack:$sack, tcp_dsack:$dsack, tcp_frto:$frto, tcp_early_retrans:$early},
          available_congestion_control:$cca, packages:{iperf3:$iperf3, iproute2:$iproute2, tcpdump:$tcpdump, nftables:$nft}}' \
        > "$out.guest.json"
fi
exit "$rc"
