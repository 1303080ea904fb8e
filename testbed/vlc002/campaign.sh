#!/usr/bin/env bash
# The VLC replication's matrix (docs/vlc002.md): tests 1-4 x three arms x N repetitions, one run at a time, each by
# testbed/vlc002/run.sh into OUT/<test>__<stream>__<cc>__rep<N>. Arms: rtsp/cubic (the paper's CUBIC arm: VLC over
# RTSP), http/pcc_vivace (its PCC arm: VLC over HTTP) and http/cubic (the control: CUBIC over the paper's HTTP path,
# as our main dataset streams it). A run directory with COMPLETE is kept and not recorded again (resume); one left
# unfinished by an earlier attempt is moved aside to <dir>.incomplete-<UTC time>, never deleted.
# usage: campaign.sh --out OUT [--duration-s S] [--reps N] [--tests test1,test2,...] [--arms rtsp/cubic,...]
#   (defaults 45, 3, test1-test4, the three arms). Test 5 as the paper ran it: --tests test5 --arms rtsp/cubic
#   --duration-s 10 (both ccs at once over RTSP, i.e. three RTP/UDP streams; 10 s, the paper's).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=capture_tools/experiment_args.sh
source "$HERE/../../capture_tools/experiment_args.sh"   # die, parse_long_options
out="" duration_s=45 reps=3 tests="test1,test2,test3,test4" arms="rtsp/cubic,http/pcc_vivace,http/cubic"
parse_long_options "--out=out --duration-s=duration_s --reps=reps --tests=tests --arms=arms" "$@"
[[ -n "$out" ]] || die "--out is required"
if ! [[ "$duration_s" =~ ^[1-9][0-9]{0,2}$ ]] || ((duration_s < 5 || duration_s > 600)); then
    die "--duration-s must be a whole number of seconds in [5, 600], got '$duration_s'"
fi
[[ "$reps" =~ ^[1-9][0-9]?$ ]] || die "--reps must be 1..99, got '$reps'"
[[ "$tests" =~ ^test[1-5](,test[1-5])*$ ]] || die "--tests must be test1..test5 joined by commas, got '$tests'"
ARM_RE="(rtsp/cubic|http/pcc_vivace|http/cubic)"
[[ "$arms" =~ ^$ARM_RE(,$ARM_RE)*$ ]] || die "--arms must be rtsp/cubic, http/pcc_vivace, http/cubic joined by commas, got '$arms'"
[[ $EUID -eq 0 ]] || die "the netns backend needs root"
IFS=, read -r -a ARMS <<<"${arms//\// }"
IFS=, read -r -a TESTS <<<"$tests"
total=$(( ${#TESTS[@]} * ${#ARMS[@]} * reps )) n=0 failed=0
mkdir -p "$out"
for ((rep = 1; rep <= reps; rep++)); do
    for t in "${TESTS[@]}"; do
        for arm in "${ARMS[@]}"; do
            read -r stream cc <<<"$arm"
            n=$((n + 1))
            d="$out/${t}__${stream}__${cc}__rep${rep}"
            [[ -e "$d/COMPLETE" ]] && { echo "[$n/$total] $(basename "$d"): complete, kept"; continue; }
            [[ -e "$d" ]] && mv "$d" "$d.incomplete-$(date -u +%Y%m%dT%H%M%SZ)"
            echo "[$n/$total] $(basename "$d") ($(date -u +%H:%M:%S))"
            if ! bash "$HERE/run.sh" --out "$d" --experiment "$t" --stream "$stream" --cc "$cc" \
                    --duration-s "$duration_s" --rep "$rep"; then
                failed=$((failed + 1))
                echo "[$n/$total] $(basename "$d"): failed (see $d/capture.log)"
            fi
        done
    done
done
echo "done: $((total - failed)) of $total runs complete in $out"
((failed == 0))
