#!/usr/bin/env bash
# Shared helpers for the netns backend and the node scripts (sourced, not executed).
# shellcheck disable=SC2034
TESTBED_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOPOLOGY="${MPCC_TOPOLOGY:-$TESTBED_DIR/topology.json}"
NS_PREFIX="${MPCC_NS_PREFIX:-mpcc-}"
NODES=(src1 src2 router1 switch1 switch2 router2 dst1 dst2)

log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }
die() { echo "error: $*" >&2; exit 2; }

ns_of() { echo "${NS_PREFIX}$1"; }
short_of() { jq -r --arg n "$1" '.nodes[$n].short' "$TOPOLOGY"; }
role_of() { jq -r --arg n "$1" '.nodes[$n].role' "$TOPOLOGY"; }

# is_number VALUE: non-negative decimal number
is_number() { [[ "$1" =~ ^[0-9]+([.][0-9]+)?$ ]]; }
is_int() { [[ "$1" =~ ^[0-9]+$ ]]; }

# parse_up_args ALLOW_FQ [--path-mode M] [--link-delay-ms D] [--loss-pct L] [--path-skew-ms K] [--queue-model Q] [--fq]
# The backends' `up` options (ALLOW_FQ=1: --fq is accepted): sets path_mode link_delay_ms loss_pct path_skew_ms queue_model fq,
# defaults from the topology file, every value validated (one-line error, exit 2) before any root command.
parse_up_args() {
    local allow_fq=$1
    shift
    path_mode=$(jq -r .defaults.path_mode "$TOPOLOGY")
    link_delay_ms=$(jq -r .defaults.link_delay_ms "$TOPOLOGY")
    loss_pct=$(jq -r .defaults.loss_pct "$TOPOLOGY")
    path_skew_ms=$(jq -r .defaults.path_skew_ms "$TOPOLOGY")
    queue_model=""   # empty: the delay mechanism's own (switch.sh --queue-model)
    fq=0
    while [[ $# -gt 0 ]]; do
        case "$1" in
            --path-mode|--link-delay-ms|--loss-pct|--path-skew-ms|--queue-model)
                [[ $# -ge 2 ]] || die "option $1 needs a value"
                case "$1" in
                    --path-mode) path_mode=$2 ;; --link-delay-ms) link_delay_ms=$2 ;;
                    --loss-pct) loss_pct=$2 ;; --path-skew-ms) path_skew_ms=$2 ;;
                    --queue-model) queue_model=$2 ;;
                esac
                shift 2 ;;
            --fq) [[ $allow_fq == 1 ]] || die "unknown option for up: --fq"; fq=1; shift ;;
            *) die "unknown option for up: $1" ;;
        esac
    done
    [[ "$path_mode" == single || "$path_mode" == multipath ]] || die "--path-mode must be single or multipath, got '$path_mode'"
    is_number "$link_delay_ms" || die "--link-delay-ms must be a non-negative number, got '$link_delay_ms'"
    is_number "$loss_pct" || die "--loss-pct must be a number in [0,100], got '$loss_pct'"
    awk -v l="$loss_pct" 'BEGIN{exit !(l<=100)}' || die "--loss-pct must be in [0,100], got '$loss_pct'"
    is_number "$path_skew_ms" || die "--path-skew-ms must be a non-negative number, got '$path_skew_ms'"
    [[ -z "$queue_model" || "$queue_model" =~ ^(fifo-after-delay|tbf-netem|netem-tbf|netem-tbf-k6)$ ]] ||
        die "--queue-model must be fifo-after-delay, tbf-netem, netem-tbf or netem-tbf-k6, got '$queue_model'"
}
