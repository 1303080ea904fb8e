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
