# shellcheck shell=bash
# Options and validation shared by both capture tools (sourced, not executed): capture_tools/run_experiment.sh
# (netns) and testbed/vagrant/run_experiment.sh (VMs) take the same options and reject the same bad values.
# parse_experiment_args BACKEND "$@" sets: backend out experiment cc cc2 cbr_mbps path_mode link_delay_ms loss_pct
# duration_s flow2_offset_s path_skew_ms rep. Every value is checked here, before any root command runs.
# shellcheck disable=SC2034  # the variables are the callers'
die() { echo "error: $*" >&2; exit 2; }
num() { [[ "$1" =~ ^[0-9]+([.][0-9]+)?$ ]]; }

parse_experiment_args() {
    local want=$1
    shift
    backend="" out="" experiment="" cc="" cc2="" cbr_mbps="" path_mode="" link_delay_ms="" loss_pct="" duration_s=""
    flow2_offset_s=0 path_skew_ms=0 rep=1
    while [[ $# -gt 0 ]]; do
        if [[ "$1" == -h || "$1" == --help ]]; then
            # the calling script's header comment is its usage text
            sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
            exit 0
        fi
        [[ $# -ge 2 ]] || die "option $1 needs a value"
        case "$1" in
            --backend) backend=$2 ;; --out) out=$2 ;; --experiment) experiment=$2 ;; --cc) cc=$2 ;; --cc2) cc2=$2 ;;
            --cbr-mbps) cbr_mbps=$2 ;; --path-mode) path_mode=$2 ;; --link-delay-ms) link_delay_ms=$2 ;;
            --loss-pct) loss_pct=$2 ;; --duration-s) duration_s=$2 ;; --flow2-offset-s) flow2_offset_s=$2 ;;
            --path-skew-ms) path_skew_ms=$2 ;; --rep) rep=$2 ;;
            *) die "unknown option $1" ;;
        esac
        shift 2
    done
    [[ "$backend" == "$want" ]] || die "--backend must be $want for this capture tool, got '$backend'"
    [[ -n "$out" ]] || die "--out is required"
    [[ "$experiment" =~ ^(single_vs_multi|link_delay|loss_rate|tcp_fairness|udp_fairness)$ ]] || die "bad --experiment '$experiment'"
    local cc_re='^(reno|cubic|bbr|bic|westwood|westwood_e|pcc_vivace)$'
    [[ "$cc" =~ $cc_re ]] || die "--cc must be one of reno cubic bbr bic westwood westwood_e pcc_vivace, got '$cc'"
    [[ -z "$cc2" || "$cc2" =~ $cc_re ]] || die "--cc2 must be one of reno cubic bbr bic westwood westwood_e pcc_vivace, got '$cc2'"
    [[ -z "$cbr_mbps" ]] || num "$cbr_mbps" || die "--cbr-mbps must be a number, got '$cbr_mbps'"
    [[ -z "$cc2" || -z "$cbr_mbps" ]] || die "give --cc2 or --cbr-mbps, not both"
    [[ "$path_mode" == single || "$path_mode" == multipath ]] || die "--path-mode must be single or multipath"
    num "$link_delay_ms" || die "--link-delay-ms must be a number"
    num "$loss_pct" || die "--loss-pct must be a number"
    [[ "$duration_s" =~ ^[1-9][0-9]*$ ]] || die "--duration-s must be a positive integer"
    [[ "$flow2_offset_s" =~ ^[0-9]+$ ]] || die "--flow2-offset-s must be a non-negative integer"
    (( flow2_offset_s < duration_s )) || die "--flow2-offset-s must be smaller than --duration-s"
    num "$path_skew_ms" || die "--path-skew-ms must be a number"
    [[ "$rep" =~ ^[1-9][0-9]*$ ]] || die "--rep must be a positive integer"
    [[ $EUID -eq 0 ]] || die "the $want backend needs root"
    if [[ -e "$out/COMPLETE" || -e "$out/SKIPPED" ]]; then die "$out is already finished; refusing to overwrite"; fi
}
