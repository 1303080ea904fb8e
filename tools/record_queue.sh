#!/usr/bin/env bash
# tools/record_queue.sh: the paper protocols' recording queue (campaigns/recording-queue.tsv), one campaign at a time
# on this machine, carried from machine to machine by the committed bundles.
# usage: tools/record_queue.sh status [--queue FILE]
#        tools/record_queue.sh run [--queue FILE] [--dry-run]
#        tools/record_queue.sh bundle ID [--queue FILE]
#        tools/record_queue.sh stop
#   status: per entry, its campaign's finished runs here (data/raw/DIR: the runner's directory of the campaign), in
#           its bundle, of the campaign's total, and whether the entry is done.
#   run:    for each entry of the queue not yet done and whose `needs` file exists, in order (an entry whose committed
#           bundle already holds every run it records is done: on another machine too, and after the bundle became a
#           study's main dataset, when the entry's bundle column names that): `mpcc campaign run`
#           with its --jobs (and --experiments) into data/raw/DIR, resumed from its bundle when that exists
#           (--resume-from), the complete
#           runs whose host CPU pressure exceeded MPCC_REDO_CONTENDED % (default 32.4, the threshold study 000's
#           recording used) recorded again (--redo-contended); when the
#           campaign ends complete, `mpcc bundle` into its bundle (columnar, --max-mb, --force: the resumed runs are in
#           data/raw/DIR, so the new bundle holds the old one's runs and more), its raw captures xz'd, and
#           data/raw/.queue-ID.done. Exit 4 of the runner (the disk floor): the finished runs' captures are xz'd and
#           the campaign is run again; exit 1 (failed runs, kept as <run_id>.incomplete-*): run again; three
#           attempts in all. Any other failure, or a third, stops the queue (exit 1). Progress: the runner's own, and
#           one line per step in data/raw/record-queue.log. Run it detached (setsid nohup tools/record_queue.sh run &),
#           as root.
#   bundle: bundle entry ID's campaign's runs so far into its bundle now (a partial bundle, to commit before the
#           machine goes).
#   stop:   stop the queue and its campaign (SIGINT: the runs in flight are kept as <run_id>.incomplete-*, recorded
#           again on resume); waits until they have gone.
# Commit a bundle by hand (git add data/<bundle>); nothing here commits.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${MPCC_PYTHON:-$ROOT/.venv/bin/python}"
RAW="$ROOT/data/raw"
LOG="$RAW/record-queue.log"
die() { echo "error: $*" >&2; exit 2; }
usage() { sed -n '/^# usage:/,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }

cmd=${1:-}
[[ -n "$cmd" ]] || usage
shift
queue="$ROOT/campaigns/recording-queue.tsv" name="" dry=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --queue) [[ $# -ge 2 ]] || die "--queue needs a file"; queue=$2; shift 2 ;;
        --dry-run) dry=1; shift ;;
        -h|--help) usage ;;
        -*) die "unknown option $1" ;;
        *) [[ -z "$name" ]] || die "one ID only"; name=$1; shift ;;
    esac
done
case "$cmd" in status|run|bundle|stop) ;; *) die "unknown command '$cmd' (status, run, bundle, stop)" ;; esac
[[ -f "$queue" ]] || die "$queue: no such queue file"
[[ -x "$PY" ]] || die "$PY: no Python of the project (make install)"
REDO="${MPCC_REDO_CONTENDED:-32.4}"
[[ "$REDO" =~ ^[0-9]{1,2}([.][0-9]{1,3})?$|^100$ ]] || die "MPCC_REDO_CONTENDED must be a percentage 0..100, got '$REDO'"

# the queue: ID CAMPAIGN PROFILE EXPERIMENTS JOBS BUNDLE MAX_MB SS_REPS NEEDS per line, checked before anything runs
declare -a NAMES=()
declare -A CAMP=() PROF=() EXPS=() DIRN=() JOBS=() BUNDLE=() MAXMB=() SSREPS=() NEEDS=()
lineno=0
while IFS= read -r line || [[ -n "$line" ]]; do
    lineno=$((lineno + 1))
    [[ -z "${line//[[:space:]]/}" || "$line" == \#* ]] && continue
    IFS=$'\t' read -r n c p e j b m r x extra <<<"$line"
    where="$queue:$lineno"
    [[ -z "${extra:-}" && -n "${x:-}" ]] || die "$where: 9 tab-separated columns expected"
    [[ "$n" =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || die "$where: bad id '$n'"
    [[ -z "${CAMP[$n]:-}" ]] || die "$where: id '$n' twice"
    [[ -f "$c" ]] || die "$where: no campaign file $c"
    [[ "$p" == - || "$p" =~ ^[a-z0-9_-]+$ ]] || die "$where: bad profile '$p'"
    [[ "$e" == - || "$e" =~ ^[A-Za-z0-9_]+(,[A-Za-z0-9_]+)*$ ]] || die "$where: experiments must be - or E[,E...], got '$e'"
    cname=$(sed -n '/^name:/{s/^name:[[:space:]]*\([A-Za-z0-9._-]*\).*/\1/p;q;}' "$c")
    [[ -n "$cname" ]] || die "$where: $c has no name"
    [[ "$j" =~ ^[1-9][0-9]?$ ]] || die "$where: jobs must be 1..99, got '$j'"
    [[ "$b" =~ ^data/[A-Za-z0-9._-]+$ ]] || die "$where: the bundle must be data/NAME, got '$b'"
    [[ "$m" =~ ^[1-9][0-9]{0,3}$ ]] || die "$where: max_mb must be 1..9999, got '$m'"
    [[ "$r" == - || "$r" =~ ^[1-9][0-9]{0,2}$ ]] || die "$where: ss_reps must be - or 1..999, got '$r'"
    NAMES+=("$n"); CAMP[$n]=$c; PROF[$n]=$p; EXPS[$n]=$e; JOBS[$n]=$j; BUNDLE[$n]=$b; MAXMB[$n]=$m; SSREPS[$n]=$r
    NEEDS[$n]=$x; DIRN[$n]=$cname
    [[ "$p" == - ]] || DIRN[$n]="$cname-$p"
done < "$queue"
[[ ${#NAMES[@]} -gt 0 ]] || die "$queue: no campaign"
[[ -z "$name" || -n "${CAMP[$name]:-}" ]] || die "'$name' is not in $queue (${NAMES[*]})"
[[ "$cmd" != bundle || -n "$name" ]] || die "bundle needs the ID of an entry of the queue"

say() { mkdir -p "$RAW"; echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) $*" | tee -a "$LOG" >&2; }
profile_args() { [[ "${PROF[$1]}" == - ]] || echo "--profile ${PROF[$1]}"; }
finished_here() { # ID -> finished runs of its campaign in data/raw/DIR
    local d="$RAW/${DIRN[$1]}/runs"
    [[ -d "$d" ]] || { echo 0; return; }
    find "$d" -mindepth 2 -maxdepth 2 \( -name COMPLETE -o -name SKIPPED \) ! -path '*.incomplete-*' | wc -l
}
in_bundle() { # ID -> runs its bundle lists, or - without one
    local b="${BUNDLE[$1]}/bundle.json"
    [[ -f "$b" ]] || { echo -; return; }
    "$PY" -c 'import json, sys; print(json.load(open(sys.argv[1])).get("runs_total", "?"))' "$b" 2>/dev/null || echo "?"
}
bundle_complete() { # ID: its bundle holds every run the entry records (complete or skipped), as listed by the
    # analysis (analysis.dataset.run_status: superseded and incomplete runs do not count)
    [[ -f "${BUNDLE[$1]}/bundle.json" ]] || return 1
    "$PY" - "${CAMP[$1]}" "${PROF[$1]}" "${EXPS[$1]}" "${BUNDLE[$1]}" <<'PYEOF' 2>/dev/null
import sys
from pathlib import Path
from analysis.dataset import run_status
from mpcc.campaign.spec import load_campaign
camp, prof, exps, bundle = sys.argv[1:5]
c = load_campaign(Path(camp), None if prof == "-" else prof)
want = {r.run_id for r in c.runs if exps == "-" or r.experiment in exps.split(",")}
st = run_status(Path(bundle))
have = set(st.loc[st["status"].isin(["complete", "skipped"]), "run_id"])
sys.exit(0 if want and want <= have else 1)
PYEOF
}
total_runs() { # ID -> runs of the campaign (its dry run's last line)
    # shellcheck disable=SC2046  # the profile option is two words or none
    "$PY" -m mpcc.cli campaign run "${CAMP[$1]}" $(profile_args "$1") --dry-run --out "$RAW/${DIRN[$1]}" 2>&1 |
        sed -n 's/^\([0-9][0-9]*\) runs, .*/\1/p' | tail -1
}
compress_raw() { # ID: xz the raw captures of its campaign's finished runs (the analysis reads them xz'd)
    local d="$RAW/${DIRN[$1]}/runs" n=0 f
    [[ -d "$d" ]] || return 0
    while IFS= read -r f; do
        [[ -e "$(dirname "$f")/COMPLETE" ]] || continue
        xz -1 -T1 "$f" && n=$((n + 1))
    done < <(find "$d" -mindepth 2 -maxdepth 2 -name '*.pcap' ! -path '*.incomplete-*')
    say "$1: $n capture(s) compressed"
}
bundle_now() { # ID
    local n=$1 opts=() dir=${DIRN[$1]}
    [[ "${SSREPS[$n]}" == - ]] || opts=(--ss-reps "${SSREPS[$n]}")
    [[ -d "$RAW/$dir/runs" ]] || { say "$n: nothing recorded here yet (data/raw/$dir)"; return 1; }
    say "$n: bundling data/raw/$dir into ${BUNDLE[$n]} (--max-mb ${MAXMB[$n]} ${opts[*]})"
    "$PY" -m mpcc.cli bundle "$RAW/$dir" --out "${BUNDLE[$n]}" --force --format columnar --max-mb "${MAXMB[$n]}" \
        "${opts[@]}" >>"$RAW/record-queue-$n.log" 2>&1 ||
        { say "$n: mpcc bundle failed (data/raw/record-queue-$n.log)"; return 1; }
    say "$n: bundled ${BUNDLE[$n]} ($(du -sh "${BUNDLE[$n]}" | cut -f1)); commit it"
}

case "$cmd" in
status)
    printf '%-18s %-38s %5s %9s %7s %6s  %s\n' id campaign jobs finished bundled total state
    for n in "${NAMES[@]}"; do
        label="${CAMP[$n]}"
        [[ "${PROF[$n]}" == - ]] || label+=" (${PROF[$n]})"
        state=pending
        if [[ -e "$RAW/.queue-$n.done" ]]; then state="done"; elif bundle_complete "$n"; then state="done (in its bundle)"; fi
        [[ "${NEEDS[$n]}" == - || -e "${NEEDS[$n]}" ]] || state="waits for ${NEEDS[$n]}"
        printf '%-18s %-38s %5s %9s %7s %6s  %s\n' "$n" "$label" "${JOBS[$n]}" \
            "$(finished_here "$n")" "$(in_bundle "$n")" "$(total_runs "$n")" "$state"
    done
    ;;
stop)
    mapfile -t q < <(pgrep -f "bash .*tools/record_queue.sh run" || true)
    [[ ${#q[@]} -eq 0 ]] || kill "${q[@]}" 2>/dev/null || true
    mapfile -t r < <(pgrep -f "mpcc(.cli)? campaign run" || true)
    if [[ ${#r[@]} -eq 0 ]]; then echo "no campaign is recording" >&2; exit 0; fi
    kill -INT "${r[@]}"
    for _ in $(seq 1 120); do pgrep -f "mpcc(.cli)? campaign run" >/dev/null || break; sleep 1; done
    if pgrep -f "mpcc(.cli)? campaign run" >/dev/null; then echo "error: the campaign runner is still running" >&2; exit 1; fi
    say "stopped (the runs in flight are kept as .incomplete-*; run resumes them)"
    ;;
bundle)
    bundle_now "$name"
    ;;
run)
    [[ $EUID -eq 0 || $dry == 1 ]] || die "recording needs root"
    for n in "${NAMES[@]}"; do
        [[ -e "$RAW/.queue-$n.done" ]] && continue
        if [[ "${NEEDS[$n]}" != - && ! -e "${NEEDS[$n]}" ]]; then
            if [[ $dry == 1 ]]; then echo "# $n waits for ${NEEDS[$n]}"; else say "$n: waits for ${NEEDS[$n]}; skipped"; fi
            continue
        fi
        if bundle_complete "$n"; then
            if [[ $dry == 1 ]]; then echo "# $n is complete in ${BUNDLE[$n]}"; continue; fi
            say "$n: ${BUNDLE[$n]} holds every run it records; done"
            touch "$RAW/.queue-$n.done"
            continue
        fi
        args=(-m mpcc.cli campaign run "${CAMP[$n]}" --jobs "${JOBS[$n]}" --out "$RAW/${DIRN[$n]}" --redo-contended "$REDO")
        [[ "${PROF[$n]}" == - ]] || args+=(--profile "${PROF[$n]}")
        [[ "${EXPS[$n]}" == - ]] || args+=(--experiments "${EXPS[$n]}")
        [[ -f "${BUNDLE[$n]}/bundle.json" ]] && args+=(--resume-from "${BUNDLE[$n]}")
        if [[ $dry == 1 ]]; then echo "$PY ${args[*]}"; continue; fi
        for _ in 1 2 3; do
            say "$n: recording ($PY ${args[*]})"
            rc=0
            "$PY" "${args[@]}" >>"$RAW/record-queue-$n.log" 2>&1 || rc=$?
            say "$n: the runner exited $rc"
            case $rc in
                4) compress_raw "$n" ;;                      # the disk floor: make room and go on
                1) say "$n: some runs failed; they are recorded again" ;;   # kept as .incomplete-*, pending
                *) break ;;
            esac
        done
        [[ $rc -eq 0 ]] || { say "$n: not complete (exit $rc); the queue stops"; exit 1; }
        bundle_now "$n" || exit 1
        compress_raw "$n"
        touch "$RAW/.queue-$n.done"
    done
    [[ $dry == 1 ]] || say "the queue is done (campaigns waiting for a file were skipped)"
    ;;
esac
