#!/usr/bin/env bash
# Study 004's four configurations in the paper's own simulator family, ns-2 (docs/ns2-004.md). The paper (Sukiswo,
# "Perbaikan TCP Westwood+", section "Evaluasi Performansi") ran ns-2 2.29.3 with Mascolo's Westwood+ module; this
# runs Debian's ns-2 2.35 with Agent/TCP/Linux `select_ca westwood` (Linux's tcp_westwood.c, i.e. Westwood+).
# For every topology of --topologies and every row of --levels it generates the ns-2 Tcl FROM
# testbed/families/004/<topology>.json (nodes n0, n1, ... created in that order, so ns-2 node k is nK as in the
# paper's figures; each link a duplex-link at rate_mbit / delay_ms, DropTail with queue-limit buffer_pkts in both
# directions; an ErrorModel (unit pkt, uniform) on the a -> b direction of each link that has error_flows; one
# Agent/TCP/Linux -> Agent/TCPSink/Sack1 per flow, packetSize_ = mtu - 40 (ns-2's 40-byte TCP/IP header), fid_ =
# flow, FTP from START_S = 0.1 s for --duration-s seconds, all flows together (the bottleneck's two sources start
# together, docs/families.md "Two sources")), runs it with `ns` and keeps the trace.
# Rows (the paper's table rows, 1-based): row k is error rate k/100 for Tables 1, 2 and 4 (client_server,
# multihop_varied, bottleneck) and k Mbit/s on every link of bandwidth_links at the file's defaults.error_rate (0.01,
# "error rate konstan 0.01") for Table 3 (multihop_uniform).
# Output (--out DIR must not exist; nothing is ever overwritten):
#   DIR/meta.json                 ns version (`ns -version` as printed, and Tcl [ns-version]), Debian package
#                                 version, host, date, command, repository commit, wall time
#   DIR/runs/<run>/sim.tcl        the generated script          <run> = <topology>__<cc>__err<P>[__bw<B>mbit]
#   DIR/runs/<run>/params.json    the run's parameters (links, flows with ns-2 node ids, window, seed, ...)
#   DIR/runs/<run>/trace.tr.gz    ns-2's trace-all (normal wired format), gzip
#   DIR/runs/<run>/cwnd.tr.gz     `trace cwnd_` of every TCP agent (time saddr sport daddr dport cwnd_ value)
#   DIR/runs/<run>/ns.log         ns's stdout and stderr
# --tcl-only writes sim.tcl and params.json only (no `ns` needed, nothing is run).
# --ns-binary PATH runs another ns-2 build (default: `ns` on PATH), e.g. one with a Westwood+e TCP-Linux module
# (docs/ns2-004.md, "Adding Westwood+e"); --cc is then any module name of that build ([a-z_], checked by ns itself).
# Analyse: python -m analysis.ns2_004 DIR
# Exit 0 when every run completed, 1 when ns failed on a run, 2 on a bad argument or a missing tool.
# usage: run.sh --out DIR [--window 20] [--duration-s 120] [--seed 1] [--cc westwood]
#               [--topologies client_server,multihop_varied,multihop_uniform,bottleneck] [--levels 1,2,...,10]
#               [--ns-binary ns] [--tcl-only]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
FAMILY_DIR="$ROOT/testbed/families/004"
ALL_TOPOLOGIES="client_server,multihop_varied,multihop_uniform,bottleneck"
# congestion-control modules compiled into ns-2.35's TCP-Linux (tcp/linux/src/ and tcp/linux/tcp_naivereno.c)
NS2_LINUX_CCS=" reno naive_reno bic cubic highspeed htcp hybla illinois lp scalable vegas veno westwood yeah compound "
START_S=0.1
HDR_BYTES=40

die() { echo "error: $*" >&2; exit 2; }
log() { echo "[$(date -u +%H:%M:%S)] ns2_004: $*" >&2; }
usage() { sed -n '/^# usage:/,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }

out="" window=20 duration=120 seed=1 cc=westwood topologies="$ALL_TOPOLOGIES" levels="1,2,3,4,5,6,7,8,9,10" tcl_only=0
ns_bin=ns
cmdline="testbed/ns2_004/run.sh${*:+ $*}"
while [[ $# -gt 0 ]]; do
    case "$1" in
        --out|--window|--duration-s|--seed|--cc|--topologies|--levels|--ns-binary)
            [[ $# -ge 2 ]] || die "$1 needs a value"
            case "$1" in
                --out) out="$2" ;; --window) window="$2" ;; --duration-s) duration="$2" ;; --seed) seed="$2" ;;
                --cc) cc="$2" ;; --topologies) topologies="$2" ;; --levels) levels="$2" ;; --ns-binary) ns_bin="$2" ;;
            esac
            shift 2 ;;
        --tcl-only) tcl_only=1; shift ;;
        -h|--help) usage ;;
        *) die "unknown argument '$1' (run.sh --help)" ;;
    esac
done

# ---- every parameter is checked before anything is written
[[ -n "$out" ]] || die "--out DIR is required"
[[ ! -e "$out" ]] || die "--out $out exists (a new directory is required; nothing is overwritten)"
[[ -d "$(dirname "$out")" ]] || die "--out $out: parent directory $(dirname "$out") does not exist"
[[ "$window" =~ ^[1-9][0-9]{0,6}$ ]] || die "--window must be an integer 1..9999999 (packets), got '$window'"
if ! [[ "$duration" =~ ^[0-9]{1,4}([.][0-9]{1,6})?$ ]] \
        || ! awk -v d="$duration" 'BEGIN {exit !(d > 0 && d <= 3600)}'; then
    die "--duration-s must be a number in (0, 3600] (seconds), got '$duration'"
fi
[[ "$seed" =~ ^[1-9][0-9]{0,8}$ ]] \
    || die "--seed must be an integer 1..999999999 (0 would be ns-2's time-based seed), got '$seed'"
if [[ "$ns_bin" == ns ]]; then
    [[ "$cc" =~ ^[a-z_]{1,20}$ && "$NS2_LINUX_CCS" == *" $cc "* ]] \
        || die "--cc must be one of ns-2.35's TCP-Linux modules:$NS2_LINUX_CCS(got '$cc';" \
               "westwood_e needs a module compiled into ns-2, docs/ns2-004.md)"
else
    [[ "$cc" =~ ^[a-z_]{1,20}$ ]] || die "--cc must be a TCP-Linux module name of [a-z_], got '$cc'"
    [[ "$ns_bin" == */* ]] || die "--ns-binary must be a path to an ns-2 binary (or ns), got '$ns_bin'"
    [[ -x "$ns_bin" && -f "$ns_bin" ]] || die "--ns-binary $ns_bin is not an executable file"
    ns_bin="$(cd "$(dirname "$ns_bin")" && pwd)/$(basename "$ns_bin")"
fi
IFS=, read -r -a TOPOS <<< "$topologies"
[[ ${#TOPOS[@]} -gt 0 ]] || die "--topologies is empty"
declare -A seen=()
for t in "${TOPOS[@]}"; do
    [[ ",$ALL_TOPOLOGIES," == *",$t,"* ]] || die "--topologies: unknown topology '$t' (one of $ALL_TOPOLOGIES)"
    [[ -z "${seen[$t]:-}" ]] || die "--topologies: '$t' given twice"
    seen[$t]=1
done
IFS=, read -r -a LEVELS <<< "$levels"
[[ ${#LEVELS[@]} -gt 0 ]] || die "--levels is empty"
seen=()
for l in "${LEVELS[@]}"; do
    [[ "$l" =~ ^([1-9]|10)$ ]] || die "--levels: '$l' is not a table row 1..10"
    [[ -z "${seen[$l]:-}" ]] || die "--levels: row '$l' given twice"
    seen[$l]=1
done
command -v jq >/dev/null || die "jq not found (Debian: apt-get install jq)"
command -v gzip >/dev/null || die "gzip not found"
if [[ $tcl_only == 0 ]]; then
    command -v "$ns_bin" >/dev/null || die "ns (ns-2) not found (Debian: apt-get install ns2)"
fi

# A topology file is checked as a whole (first problem is the error) before anything is generated.
# shellcheck disable=SC2016  # jq programs: $names are jq variables
CHECK_JQ='
def num_pos: type == "number" and . > 0;
. as $t
| [$t.nodes | to_entries[] | select(.value.role == "host" or .value.role == "router") | .key] as $nodes
| [
    (if ($t.mtu | type) == "number" and $t.mtu > 40 and $t.mtu == ($t.mtu | floor) then empty
     else "mtu must be an integer > 40" end),
    (if ($t.defaults.error_rate | type) == "number" and $t.defaults.error_rate >= 0 and $t.defaults.error_rate <= 0.5
     then empty else "defaults.error_rate must be a number in [0, 0.5]" end),
    ($nodes[] | select(test("^n[0-9]+$") | not) | "node \(.) is not named n<number>"),
    (if ($nodes | map(ltrimstr("n") | tonumber) | sort) == [range(0; $nodes | length)] then empty
     else "host/router nodes must be n0 .. n\(($nodes | length) - 1)" end),
    (if ($t.links | type) == "array" and ($t.links | length) > 0 then empty else "links must be a non-empty list" end),
    ($t.links[]? | select((.a as $a | $nodes | index($a)) == null or (.b as $b | $nodes | index($b)) == null)
     | "link \(.name): ends \(.a), \(.b) must be host/router nodes"),
    ($t.links[]? | select((.rate_mbit | num_pos) and (.delay_ms | type == "number" and . >= 0)
                          and (.buffer_pkts | type == "number" and . >= 1 and . == floor) | not)
     | "link \(.name): rate_mbit > 0, delay_ms >= 0 and buffer_pkts >= 1 (integer) are required"),
    (if ($t.flows | type) == "array" and ($t.flows | length) > 0 then empty else "flows must be a non-empty list" end),
    ($t.flows[]? | select((.sender as $s | $nodes | index($s)) == null or (.receiver as $r | $nodes | index($r)) == null)
     | "flow \(.flow): sender and receiver must be host/router nodes"),
    ($t.links[]?.error_flows[]? as $f | select(([$t.flows[]?.flow] | index($f)) == null) | "error flow \($f) is not a flow"),
    ([$t.bandwidth_links[]? as $b | select(([$t.links[]?.name] | index($b)) == null) | "bandwidth link \($b) is not a link"][])
  ] | .[0] // empty'

# The Tcl of one run. Arguments (jq --argjson): window, dur, start, seed, err, bw (null: the file's rates), pkt.
# shellcheck disable=SC2016
TCL_JQ='
. as $t
| def rate($l): (if $bw != null and (($t.bandwidth_links // []) | index($l.name)) != null then $bw else $l.rate_mbit end);
  ($start + $dur) as $stop_t
| [$t.nodes | to_entries[] | select(.value.role == "host" or .value.role == "router") | .key
   | {name: ., id: (ltrimstr("n") | tonumber)}] | sort_by(.id) as $nodes
| [
  "# Generated by testbed/ns2_004/run.sh from testbed/families/004/\($t.name).json (docs/ns2-004.md); do not edit.",
  "# Study 004 (\"Perbaikan TCP Westwood+\"), configuration \($t.name): error rate \($err), "
    + (if $bw == null then "the file'"'"'s link rates" else "bandwidth \($bw) Mbit/s on \($t.bandwidth_links | join(", "))" end)
    + ", cc \($cc), window_ \($window), seed \($seed), flows \($start)-\($stop_t) s.",
  "set ns [new Simulator]",
  "$defaultRNG seed \($seed)",
  "set tf [open trace.tr w]",
  "$ns trace-all $tf",
  "set cf [open cwnd.tr w]",
  "# nodes in the paper'"'"'s order: ns-2 node k is nK",
  ($nodes[] | "set n(\(.name)) [$ns node]"),
  "# links: rate, one-way delay (each direction), DropTail buffer in packets (each direction)",
  ($t.links[] | . as $l
   | "$ns duplex-link $n(\(.a)) $n(\(.b)) \(rate($l))Mb \(.delay_ms)ms DropTail   ;# \(.name)",
     "$ns queue-limit $n(\(.a)) $n(\(.b)) \(.buffer_pkts)",
     "$ns queue-limit $n(\(.b)) $n(\(.a)) \(.buffer_pkts)"),
  "# error models: packet unit, uniform, on the a -> b (data) direction of each flow'"'"'s error link, at the link'"'"'s head",
  ($t.links[] | select((.error_flows // []) | length > 0)
   | "set em(\(.name)) [new ErrorModel]   ;# flows \(.error_flows | map(tostring) | join(", "))",
     "$em(\(.name)) unit pkt",
     "$em(\(.name)) set rate_ \($err)",
     "$em(\(.name)) ranvar [new RandomVariable/Uniform]",
     "$ns lossmodel $em(\(.name)) $n(\(.a)) $n(\(.b))"),
  "# flows: Agent/TCP/Linux (select_ca \($cc)) -> Agent/TCPSink/Sack1, FTP",
  ($t.flows[] | (.flow | tostring) as $f
   | "set tcp(\($f)) [new Agent/TCP/Linux]",
     "$tcp(\($f)) set fid_ \($f)",
     "$tcp(\($f)) set packetSize_ \($pkt)",
     "$tcp(\($f)) set window_ \($window)",
     "$ns attach-agent $n(\(.sender)) $tcp(\($f))",
     "set sink(\($f)) [new Agent/TCPSink/Sack1]",
     "$ns attach-agent $n(\(.receiver)) $sink(\($f))",
     "$ns connect $tcp(\($f)) $sink(\($f))",
     "$ns at 0 \"$tcp(\($f)) select_ca \($cc)\"",
     "$tcp(\($f)) attach $cf",
     "$tcp(\($f)) trace cwnd_",
     "set ftp(\($f)) [new Application/FTP]",
     "$ftp(\($f)) attach-agent $tcp(\($f))",
     "$ns at \($start) \"$ftp(\($f)) start\"",
     "$ns at \($stop_t) \"$ftp(\($f)) stop\""),
  "proc finish {} {",
  "    global ns tf cf",
  "    $ns flush-trace",
  "    close $tf",
  "    close $cf",
  "    exit 0",
  "}",
  "$ns at \($stop_t) \"finish\"",
  "$ns run"
  ] | .[]'

# params.json of one run (same arguments as TCL_JQ plus table, level, run, cc, topology file and its sha256).
# shellcheck disable=SC2016
PARAMS_JQ='
. as $t
| ($start + $dur) as $stop_t
| {run: $run, family: "004", topology: $t.name, table: $table, level_row: $level, cc: $cc, window: $window,
   duration_s: $dur, start_s: $start, end_s: $stop_t, seed: $seed, error_rate: $err, bandwidth_mbit: $bw,
   packet_size: $pkt, ip_packet_bytes: ($pkt + $hdr), header_bytes: $hdr,
   topology_file: ("testbed/families/004/" + $t.name + ".json"), topology_sha256: $sha,
   simulator: "ns-2, Agent/TCP/Linux select_ca \($cc), Agent/TCPSink/Sack1, Application/FTP",
   nodes: ([$t.nodes | to_entries[] | select(.value.role == "host" or .value.role == "router")
            | {key: .key, value: (.key | ltrimstr("n") | tonumber)}] | from_entries),
   links: [$t.links[] | . as $l | {name, a, b, a_id: (.a | ltrimstr("n") | tonumber), b_id: (.b | ltrimstr("n") | tonumber),
            rate_mbit: (if $bw != null and (($t.bandwidth_links // []) | index($l.name)) != null then $bw else .rate_mbit end),
            delay_ms, buffer_pkts,
            error_rate: (if ((.error_flows // []) | length) > 0 then $err else 0 end),
            error_direction: (if ((.error_flows // []) | length) > 0 then "\(.a)->\(.b)" else null end),
            error_flows: (.error_flows // [])}],
   flows: [$t.flows[] | {flow, fid: .flow, sender, receiver,
            sender_id: (.sender | ltrimstr("n") | tonumber), receiver_id: (.receiver | ltrimstr("n") | tonumber),
            path, start_s: $start, stop_s: $stop_t}]}'

table_of() { case "$1" in client_server) echo 1 ;; multihop_varied) echo 2 ;; multihop_uniform) echo 3 ;; bottleneck) echo 4 ;; esac; }

# check every topology file and build the plan before anything is written
declare -a PLAN=()
for t in "${TOPOS[@]}"; do
    f="$FAMILY_DIR/$t.json"
    [[ -f "$f" ]] || die "topology file testbed/families/004/$t.json not found"
    jq empty "$f" 2>/dev/null || die "testbed/families/004/$t.json is not valid JSON"
    msg="$(jq -r "$CHECK_JQ" "$f")"
    [[ -z "$msg" ]] || die "testbed/families/004/$t.json: $msg"
    for l in "${LEVELS[@]}"; do
        if [[ "$t" == multihop_uniform ]]; then
            [[ "$(jq '(.bandwidth_links // []) | length' "$f")" -gt 0 ]] || die "$t.json has no bandwidth_links"
            err="$(jq '.defaults.error_rate' "$f")" bw="$l"
            run="${t}__${cc}__err${err}__bw${bw}mbit"
        else
            err="$(awk -v l="$l" 'BEGIN {printf "%.2f", l / 100}')" bw=null
            run="${t}__${cc}__err${err}"
        fi
        PLAN+=("$t|$l|$err|$bw|$run")
    done
done

mkdir "$out"
mkdir "$out/runs"
t_start="$(date +%s.%N)"
n_done=0
for item in "${PLAN[@]}"; do
    IFS='|' read -r t l err bw run <<< "$item"
    f="$FAMILY_DIR/$t.json"
    d="$out/runs/$run"
    mkdir "$d"
    mtu="$(jq '.mtu' "$f")"
    pkt=$((mtu - HDR_BYTES))
    sha="$(sha256sum "$f" | cut -d' ' -f1)"
    jq -r --argjson window "$window" --argjson dur "$duration" --argjson start "$START_S" --argjson seed "$seed" \
        --argjson err "$err" --argjson bw "$bw" --argjson pkt "$pkt" --arg cc "$cc" "$TCL_JQ" "$f" > "$d/sim.tcl"
    jq --argjson window "$window" --argjson dur "$duration" --argjson start "$START_S" --argjson seed "$seed" \
        --argjson err "$err" --argjson bw "$bw" --argjson pkt "$pkt" --argjson hdr "$HDR_BYTES" --arg cc "$cc" \
        --arg run "$run" --argjson table "$(table_of "$t")" --argjson level "$l" --arg sha "$sha" \
        "$PARAMS_JQ" "$f" > "$d/params.json"
    if [[ $tcl_only == 1 ]]; then
        n_done=$((n_done + 1))
        continue
    fi
    log "$run"
    r0="$(date +%s.%N)"
    if ! (cd "$d" && "$ns_bin" sim.tcl < /dev/null > ns.log 2>&1); then
        echo "error: ns failed on $run (see $d/ns.log)" >&2
        exit 1
    fi
    r1="$(date +%s.%N)"
    [[ -s "$d/trace.tr" ]] || { echo "error: ns wrote no trace for $run (see $d/ns.log)" >&2; exit 1; }
    # TCP-Linux falls back to its default and goes on when select_ca names no module it has
    if grep -q "as a congestion control algorithm" "$d/ns.log"; then
        echo "error: ns did not run cc $cc on $run (see $d/ns.log)" >&2
        exit 1
    fi
    gzip -6 "$d/trace.tr" "$d/cwnd.tr"
    wall="$(awk -v a="$r0" -v b="$r1" 'BEGIN {printf "%.2f", b - a}')"
    jq --argjson wall "$wall" '. + {ns_wall_s: $wall}' "$d/params.json" > "$d/params.json.tmp"
    mv "$d/params.json.tmp" "$d/params.json"
    n_done=$((n_done + 1))
done
t_end="$(date +%s.%N)"

ns_flag="" ns_tcl="" pkg=""
if [[ $tcl_only == 0 ]]; then
    ns_flag="$("$ns_bin" -version < /dev/null 2>&1 || true)"
    tmp_tcl="$(mktemp)"
    echo 'puts [ns-version]; exit 0' > "$tmp_tcl"
    ns_tcl="$("$ns_bin" "$tmp_tcl" < /dev/null 2>&1 || true)"
    rm -f "$tmp_tcl"
    if [[ "$ns_bin" == ns ]]; then
        pkg="$(dpkg-query -W -f='${Version}' ns2 2>/dev/null || true)"
    else
        pkg="not the Debian package: --ns-binary $(sha256sum "$ns_bin" | cut -d' ' -f1)"
    fi
fi
commit="$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || true)"
dirty="$(git -C "$ROOT" status --porcelain -- testbed/ns2_004 testbed/families/004 2>/dev/null || true)"
dirty=${dirty:0:2000}
jq -n --arg ns_flag "$ns_flag" --arg ns_tcl "$ns_tcl" --arg pkg "$pkg" --arg host "$(hostname)" \
    --arg date "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --arg cmd "$cmdline" --arg commit "$commit" --arg dirty "$dirty" \
    --arg kernel "$(uname -r)" --argjson runs "$n_done" --argjson tcl_only "$tcl_only" \
    --argjson wall "$(awk -v a="$t_start" -v b="$t_end" 'BEGIN {printf "%.2f", b - a}')" \
    --argjson window "$window" --argjson dur "$duration" --argjson seed "$seed" --arg cc "$cc" \
    --arg topologies "$topologies" --arg levels "$levels" \
    '{what: "study 004 configurations simulated in ns-2 (testbed/ns2_004/run.sh, docs/ns2-004.md); simulations, not captures",
      ns_version_flag_output: $ns_flag, ns_version: $ns_tcl,
      debian_package: (if $pkg == "" then null elif ($pkg | startswith("not ")) then $pkg else "ns2 " + $pkg end),
      host: $host, kernel: $kernel, date: $date, command: $cmd, repo_commit: $commit,
      repo_dirty_paths: ($dirty | split("\n") | map(select(length > 0))),
      cc: $cc, window: $window, duration_s: $dur, seed: $seed, topologies: ($topologies | split(",")),
      levels: ($levels | split(",") | map(tonumber)), runs: $runs, tcl_only: ($tcl_only == 1), wall_s: $wall}' \
    > "$out/meta.json"
log "$n_done runs in $out"
