# shellcheck shell=bash
# Options and validation shared by both capture tools (sourced, not executed): capture_tools/run_experiment.sh
# (netns) and testbed/vagrant/run_experiment.sh (VMs) take the same options and reject the same bad values.
# parse_experiment_args BACKEND "$@" sets: backend out experiment cc cc2 cbr_mbps path_mode link_delay_ms loss_pct
# duration_s flow2_offset_s path_skew_ms queue_model udp_len_bytes tcp_recovery rep. Every value is checked here, before any root command runs.
# queue_model: "" (the backend's own: fifo-after-delay with the shim, tbf-netem with netem) or one of
# fifo-after-delay, tbf-netem, netem-tbf (testbed/nodes/switch.sh, docs/netem-semantics.md).
# udp_len_bytes: "" (iperf3's own default: the control connection's MSS since iperf3 3.1.5) or the UDP payload per
# datagram, 16..65507 bytes (iperf3 -l; 8192 was iperf3's default up to 3.1.4), udp_fairness only.
# tcp_recovery: "" (the kernel's default, 1: RACK loss detection) or the senders' net.ipv4.tcp_recovery bitmap 0..7
# (Documentation/networking/ip-sysctl.rst): 0x1 RACK (clear: the RFC 6675 DUPACK threshold instead, on kernels before
# 6.17 only), 0x2 RACK's reordering window static (min_rtt/4, as before 4.18), 0x4 no RACK DUPACK heuristic.
# shellcheck disable=SC2034  # the variables are the callers'
die() { echo "error: $*" >&2; exit 2; }
# rack_only_kernel RELEASE: true when that kernel has RACK as its only loss detection (Linux >= 6.17 removed the RFC
# 6675 code: net.ipv4.tcp_recovery bit 0x1 no longer has an effect), so a tcp_recovery without bit 0x1 cannot run
rack_only_kernel() {
    [[ "$1" =~ ^([0-9]+)\.([0-9]+) ]] || return 1
    (( BASH_REMATCH[1] > 6 || (BASH_REMATCH[1] == 6 && BASH_REMATCH[2] >= 17) ))
}
# tcp_recovery_blocker RELEASE WHOSE: why $tcp_recovery cannot run on the senders' kernel RELEASE (WHOSE names it in
# the reason, e.g. "this kernel"); nothing when it can. Both backends skip the run with this reason.
tcp_recovery_blocker() {
    [[ -n "$tcp_recovery" ]] && (( (tcp_recovery & 1) == 0 )) && rack_only_kernel "$1" || return 0
    echo "tcp_recovery $tcp_recovery asks for the RFC 6675 DUPACK-threshold loss detection, which $2 ($1) no longer has (Linux >= 6.17: RACK is the only one, bit 0x1 has no effect)"
}
num() { [[ "$1" =~ ^[0-9]+([.][0-9]+)?$ ]]; }

# parse_long_options "--opt=VAR ..." "$@": the long options of a capture tool, each taking exactly one value.
# Each option's value goes into the variable (or associative-array element, e.g. PA[1-rate-mbit]) its spec names;
# -h/--help prints the calling script's header comment (its usage text) and exits 0. An unknown option, an option
# without a value or one given twice is a one-line error (exit 2) before anything else runs.
parse_long_options() {
    local -A _lo_var=() _lo_seen=()
    local _lo_spec _lo_specs=()
    read -r -d '' -a _lo_specs <<<"$1" || true    # split on blanks, no pathname expansion of PA[...]
    for _lo_spec in "${_lo_specs[@]}"; do _lo_var[${_lo_spec%%=*}]=${_lo_spec#*=}; done
    shift
    while [[ $# -gt 0 ]]; do
        if [[ "$1" == -h || "$1" == --help ]]; then
            sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
            exit 0
        fi
        [[ -n "${_lo_var[$1]:-}" ]] || die "unknown option $1"
        [[ $# -ge 2 ]] || die "option $1 needs a value"
        [[ -z "${_lo_seen[$1]:-}" ]] || die "option $1 given twice"
        _lo_seen[$1]=1
        printf -v "${_lo_var[$1]}" '%s' "$2"
        shift 2
    done
}

parse_experiment_args() {
    local want=$1
    shift
    backend="" out="" experiment="" cc="" cc2="" cbr_mbps="" path_mode="" link_delay_ms="" loss_pct="" duration_s=""
    flow2_offset_s=0 path_skew_ms=0 rep=1 queue_model="" udp_len_bytes="" tcp_recovery=""
    parse_long_options "--backend=backend --out=out --experiment=experiment --cc=cc --cc2=cc2 --cbr-mbps=cbr_mbps
        --path-mode=path_mode --link-delay-ms=link_delay_ms --loss-pct=loss_pct --duration-s=duration_s
        --flow2-offset-s=flow2_offset_s --path-skew-ms=path_skew_ms --queue-model=queue_model --udp-len-bytes=udp_len_bytes
        --tcp-recovery=tcp_recovery --rep=rep" "$@"
    [[ "$backend" == "$want" ]] || die "--backend must be $want for this capture tool, got '$backend'"
    [[ -n "$out" ]] || die "--out is required"
    [[ "$experiment" =~ ^(single_vs_multi|link_delay|loss_rate|tcp_fairness|udp_fairness)$ ]] || die "bad --experiment '$experiment'"
    local cc_re='^(reno|cubic|bbr|bic|westwood|westwood_e|pcc_vivace|pcc_vivace_usp|bic415)$'
    [[ "$cc" =~ $cc_re ]] || die "--cc must be one of reno cubic bbr bic westwood westwood_e pcc_vivace pcc_vivace_usp bic415, got '$cc'"
    [[ -z "$cc2" || "$cc2" =~ $cc_re ]] || die "--cc2 must be one of reno cubic bbr bic westwood westwood_e pcc_vivace pcc_vivace_usp bic415, got '$cc2'"
    [[ -z "$cbr_mbps" ]] || num "$cbr_mbps" || die "--cbr-mbps must be a number, got '$cbr_mbps'"
    [[ -z "$cc2" || -z "$cbr_mbps" ]] || die "give --cc2 or --cbr-mbps, not both"
    [[ "$path_mode" == single || "$path_mode" == multipath ]] || die "--path-mode must be single or multipath"
    num "$link_delay_ms" || die "--link-delay-ms must be a number"
    num "$loss_pct" || die "--loss-pct must be a number"
    [[ "$duration_s" =~ ^[1-9][0-9]*$ ]] || die "--duration-s must be a positive integer"
    [[ "$flow2_offset_s" =~ ^[0-9]+$ ]] || die "--flow2-offset-s must be a non-negative integer"
    (( flow2_offset_s < duration_s )) || die "--flow2-offset-s must be smaller than --duration-s"
    num "$path_skew_ms" || die "--path-skew-ms must be a number"
    [[ -z "$queue_model" || "$queue_model" =~ ^(fifo-after-delay|tbf-netem|netem-tbf|netem-tbf-k6)$ ]] ||
        die "--queue-model must be fifo-after-delay, tbf-netem, netem-tbf or netem-tbf-k6, got '$queue_model'"
    if [[ -n "$udp_len_bytes" ]]; then
        if ! [[ "$udp_len_bytes" =~ ^[1-9][0-9]{1,4}$ ]] || (( udp_len_bytes < 16 || udp_len_bytes > 65507 )); then
            die "--udp-len-bytes must be an integer 16..65507, got '$udp_len_bytes'"
        fi
        [[ -n "$cbr_mbps" ]] || die "--udp-len-bytes needs the UDP flow (--cbr-mbps)"
    fi
    [[ -z "$tcp_recovery" || "$tcp_recovery" =~ ^[0-7]$ ]] || die "--tcp-recovery must be a bitmap 0..7, got '$tcp_recovery'"
    [[ "$rep" =~ ^[1-9][0-9]*$ ]] || die "--rep must be a positive integer"
    [[ $EUID -eq 0 ]] || die "the $want backend needs root"
    if [[ -e "$out/COMPLETE" || -e "$out/SKIPPED" ]]; then die "$out is already finished; refusing to overwrite"; fi
}
