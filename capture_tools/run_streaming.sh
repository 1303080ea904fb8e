#!/usr/bin/env bash
# One run of study 002 (PCC Vivace vs CUBIC video streaming under UDP background traffic; docs/families.md
# "Study 002") -> one run directory: the star testbed/families/002/topology.json built by testbed/chain.sh (the shared
# link sw1 -> sw2, htb 100 Mbit/s + 1000-packet pfifo each way), three ffmpeg HTTP servers on srv streaming one CBR
# MPEG-TS video (paced by -re) to three curl clients c1-c3 started together, constant-rate UDP background tg -> sink
# (D-ITG where ITGSend/ITGRecv exist, else iperf3 -u), the server's congestion control = the run's cc.
# usage: run_streaming.sh [--backend netns] --out RUN_DIR --family 002 --experiment E --cc C --duration-s S
#        [--background-mbps R] [--video-kbps V] [--rep N]
#   E: test1 (no background), test2, test3, test4 (background 8, 16, 24 Mbit/s), test5 (90 Mbit/s).
#   C: reno cubic bbr bic westwood westwood_e pcc_vivace pcc_vivace_usp (the kernel's, else the BPF port of testbed/cc, else SKIPPED);
#      or two of them joined by + (e.g. cubic+pcc_vivace, the paper's test 5 "secara bersamaan"): streams 1 and 2 at
#      once, stream 1 with the first cc, stream 2 with the second (each set on the server's route to its client,
#      ip route CLIENT/32 ... congctl), client 3 idle.
#   S: seconds each client receives (curl --max-time S); the background covers them (it runs S + 2 s).
#   R: background rate, Mbit/s at the IP layer (1500-byte IP packets): 0 (none) or 0.1 up to the shared link's rate
#      (100); default: the experiment's. V: the video's H.264 CBR rate, kbit/s, 100..50000 (default 3600).
#   MPCC_BACKGROUND_TOOL=auto|d-itg|iperf3 (default auto: D-ITG if installed) forces the background generator.
#   A params.json the campaign runner left in RUN_DIR is merged into meta.json's params (ours win).
# The video (testsrc2 640x360, 29 fps, 30 s, looped by the servers) is made once per parameter set with ffmpeg and
# cached in /var/cache/mpcc/video/ (never in the repository). The server namespace's default congestion control is
# set with sysctl net.ipv4.tcp_congestion_control; a cc the host restricts (not in the global, read-only-in-a-namespace
# net.ipv4.tcp_allowed_congestion_control; e.g. cubic when the host's default is bbr) cannot be a namespace's default
# (EPERM), so it is set on the server's routes instead (ip route ... congctl C: the kernel gives it to every
# connection over the route, accepted ones included); meta.json cc_setting says which, cc_observed what ss saw.
# exit 0 = COMPLETE, 3 = SKIPPED (cc not available on this kernel), other = failed.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TB="$HERE/../testbed"
# shellcheck source=capture_tools/experiment_args.sh
source "$HERE/experiment_args.sh"   # die, num (the same one-line errors as the other capture tools)
# shellcheck source=capture_tools/capture_lib.sh
source "$HERE/capture_lib.sh"       # host_load_sample/host_load_summary, stop_captures, wait_pid_timeout

# ---------------------------------------------------------------------------------------------------------------
# options: every value is validated here, before any root command
backend=netns out="" family="" experiment="" cc="" duration_s="" bg_mbps="" video_kbps=3600 rep=1
parse_long_options "--backend=backend --out=out --family=family --experiment=experiment --cc=cc --duration-s=duration_s
    --background-mbps=bg_mbps --video-kbps=video_kbps --rep=rep" "$@"
declare -A BG_DEFAULT=([test1]=0 [test2]=8 [test3]=16 [test4]=24 [test5]=90)
CCS="reno cubic bbr bic westwood westwood_e pcc_vivace pcc_vivace_usp"
[[ "$backend" == netns ]] || die "--backend must be netns for this capture tool (study 002 runs on netns only), got '$backend'"
[[ -n "$out" ]] || die "--out is required"
[[ "$family" == 002 ]] || die "--family must be 002 for this capture tool, got '$family'"
[[ "$experiment" =~ ^test[1-5]$ ]] || die "--experiment must be one of test1 test2 test3 test4 test5, got '$experiment'"
declare -A SCC=()   # stream -> its congestion control; ACTIVE: the streams that run
if [[ "$cc" == *+* ]]; then
    [[ "$cc" =~ ^(${CCS// /|})\+(${CCS// /|})$ ]] ||
        die "--cc must be one of $CCS, or two of them joined by + (streams 1 and 2 at once), got '$cc'"
    [[ "${cc%%+*}" != "${cc#*+}" ]] || die "--cc A+B needs two different congestion controls, got '$cc'"
    ACTIVE=(1 2)
    SCC=([1]="${cc%%+*}" [2]="${cc#*+}")
else
    [[ "$cc" =~ ^(${CCS// /|})$ ]] || die "--cc must be one of $CCS, or two of them joined by + (streams 1 and 2 at once), got '$cc'"
    ACTIVE=(1 2 3)
    SCC=([1]="$cc" [2]="$cc" [3]="$cc")
fi
[[ "$duration_s" =~ ^[1-9][0-9]{0,4}$ ]] || die "--duration-s must be a positive integer (s, at most 99999), got '$duration_s'"
bg_mbps=${bg_mbps:-${BG_DEFAULT[$experiment]}}
[[ "$bg_mbps" =~ ^(0|[1-9][0-9]{0,2})([.][0-9]{1,6})?$ ]] ||
    die "--background-mbps must be 0 or a number in [0.1, 100] (Mbit/s), got '$bg_mbps'"
if ! [[ "$video_kbps" =~ ^[1-9][0-9]{2,4}([.][0-9]{1,3})?$ ]] || ! awk -v v="$video_kbps" 'BEGIN{exit !(v >= 100 && v <= 50000)}'; then
    die "--video-kbps must be a number in [100, 50000] (kbit/s), got '$video_kbps'"
fi
[[ "$rep" =~ ^[1-9][0-9]{0,5}$ ]] || die "--rep must be a positive integer"
BG_TOOL_WANT="${MPCC_BACKGROUND_TOOL:-auto}"
[[ "$BG_TOOL_WANT" =~ ^(auto|d-itg|iperf3)$ ]] || die "MPCC_BACKGROUND_TOOL must be auto, d-itg or iperf3, got '$BG_TOOL_WANT'"
for t in ffmpeg ffprobe curl iperf3 tcpdump jq; do
    command -v "$t" >/dev/null || die "$t is not installed (apt-get install --no-install-recommends ffmpeg curl iperf3 tcpdump jq)"
done
TOPO_REL="testbed/families/002/topology.json"
TOPO="$TB/families/002/topology.json"
# the topology file: chain.sh's own validation (no root command), its one-line error as ours; then the streams and
# the background of the file (this tool's part of the format)
if ! plan=$("$TB/chain.sh" check --topology "$TOPO" 2>&1); then
    grep -m1 '^error: ' <<<"$plan" >&2 || echo "error: testbed/chain.sh check failed: $(head -1 <<<"$plan")" >&2
    exit 2
fi
# shellcheck disable=SC2016  # a jq program
terr=$(jq -r '. as $t
    | def addr($n; $i): first($t.veths[] | (.a, .b) | select(.node == $n and .ifname == $i) | .addr) // null;
      def host($n): ($t.nodes[$n].role // null) == "host";
    [ (if ($t.links | map(select(.name == $t.shared_link)) | length) != 1 then "shared_link must name one link" else empty end),
      (if ($t.streams | type) != "array" or ($t.streams | length) != 3 then "streams must be a list of 3 streams" else empty end),
      ($t.streams // [] | to_entries[] | .key as $i | .value as $s |
        if $s.stream != $i + 1 then "streams must be numbered 1, 2, 3 in order"
        elif (host($s.server) and host($s.client) and $s.server != $s.client) | not then "stream \($s.stream): server and client must be two host nodes"
        elif addr($s.server; $s.server_if) != $s.server_addr or $s.server_addr == null then "stream \($s.stream): server_addr must be the address of server_if"
        elif addr($s.client; $s.client_if) != $s.client_addr or $s.client_addr == null then "stream \($s.stream): client_addr must be the address of client_if"
        elif $s.port != 8000 + $s.stream then "stream \($s.stream): port must be \(8000 + $s.stream)"
        else empty end),
      ($t.background as $b |
        if ($b | type) != "object" then "background must be an object"
        elif (host($b.sender) and host($b.receiver) and $b.sender != $b.receiver) | not then "background: sender and receiver must be two host nodes"
        elif addr($b.sender; $b.sender_if) != $b.sender_addr or $b.sender_addr == null then "background: sender_addr must be the address of sender_if"
        elif addr($b.receiver; $b.receiver_if) != $b.receiver_addr or $b.receiver_addr == null then "background: receiver_addr must be the address of receiver_if"
        elif ($b.port | type) != "number" or $b.port < 1024 or $b.port > 65000 or $b.port == 9000 then "background: port must be 1024..65000, not 9000"
        elif ($b.payload_bytes | type) != "number" or $b.payload_bytes < 64 or $b.payload_bytes > 1472 then "background: payload_bytes must be 64..1472"
        else empty end)
    ] | .[0] // empty' "$TOPO" 2>&1) || die "$TOPO_REL: cannot validate the streams ($(head -1 <<<"$terr"))"
[[ -z "$terr" ]] || die "$TOPO_REL: $terr"
# the background: none (0) or 0.1 Mbit/s up to the shared link's rate
link_rate=$(jq -r '.shared_link as $l | .links[] | select(.name == $l) | .rate_mbit' "$TOPO")
if ! awk -v r="$bg_mbps" -v c="$link_rate" 'BEGIN{exit !(r == 0 || (r >= 0.1 && r <= c))}'; then
    die "--background-mbps must be 0 or a number in [0.1, $link_rate] (Mbit/s: at most the shared link's rate), got '$bg_mbps'"
fi
have_ditg() { command -v ITGSend >/dev/null && command -v ITGRecv >/dev/null && command -v ITGDec >/dev/null; }
bg_tool=none
if awk -v r="$bg_mbps" 'BEGIN{exit !(r > 0)}'; then
    case "$BG_TOOL_WANT" in
        auto) if have_ditg; then bg_tool="d-itg"; else bg_tool=iperf3; fi ;;
        d-itg) have_ditg || die "MPCC_BACKGROUND_TOOL=d-itg but ITGSend/ITGRecv/ITGDec are not installed (apt-get install d-itg)"
               bg_tool="d-itg" ;;
        iperf3) bg_tool=iperf3 ;;
    esac
fi
refuse_to_start   # root, and never over a finished run (capture_lib.sh)

# ---------------------------------------------------------------------------------------------------------------
P="${MPCC_NS_PREFIX:-mpcc-}"
open_run_dir   # $out absolute, capture.log on fd 3 (capture_lib.sh)
CH=("$TB/chain.sh")
SNAPLEN=$(jq -r '.defaults.capture_snaplen // 128' "$TOPO")
SHARED=$(jq -r .shared_link "$TOPO")
IFS=$'\t' read -r L_NS L_IFA L_IFB L_RATE < <(jq -r --arg l "$SHARED" \
    '.links[] | select(.name == $l) | [.ns, .if_a, .if_b, .rate_mbit] | @tsv' <<<"$plan")
declare -A SRVN CLI CADDR CIF SADDR SIF PORT
for k in 1 2 3; do
    IFS=$'\t' read -r "SRVN[$k]" "CLI[$k]" "SADDR[$k]" "CADDR[$k]" "SIF[$k]" "CIF[$k]" "PORT[$k]" < <(jq -r --argjson k "$k" \
        '.streams[] | select(.stream == $k) | [.server, .client, .server_addr, .client_addr, .server_if, .client_if, .port] | @tsv' "$TOPO")
done
SRV=${SRVN[1]}
IFS=$'\t' read -r BG_SND BG_RCV BG_SADDR BG_RADDR BG_SIF BG_RIF BG_PORT BG_PAYLOAD < <(jq -r \
    '.background | [.sender, .receiver, .sender_addr, .receiver_addr, .sender_if, .receiver_if, .port, .payload_bytes] | @tsv' "$TOPO")
BG_IPLEN=$((BG_PAYLOAD + 28))   # IPv4 + UDP headers

pids=() tcpdump_pids=() held_ccs=() srv_default_set=0
teardown() {
    local rc=$?
    stop_run_processes   # capture_lib.sh
    # the namespace's default holds a reference on its cc (a BPF one cannot be unregistered while it does):
    # hand it back before the namespace goes (its deletion is asynchronous)
    if [[ $srv_default_set == 1 ]]; then
        ip netns exec "$P$SRV" sysctl -qw net.ipv4.tcp_congestion_control=reno 2>>"$LOG" || true
    fi
    rm -f "$out"/video/client?.ts
    "${CH[@]}" down --topology "$TOPO" 2>>"$LOG" || true
    release_ccs
    exit "$rc"
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
say "run_streaming: family 002 experiment $experiment cc $cc duration ${duration_s}s background ${bg_mbps} Mbit/s ($bg_tool) video ${video_kbps} kbit/s rep $rep"

# the congestion control: the kernel's, else its BPF port (testbed/cc), else SKIPPED (as run_chain.sh)
cc_impl='{}'
while read -r c; do acquire_cc "$c"; done < <(printf '%s\n' "${SCC[@]}" | sort -u)

# ---------------------------------------------------------------------------------------------------------------
# the video: made once per parameter set, cached outside the repository (flock: concurrent runs make it once)
VIDEO_CACHE=/var/cache/mpcc/video
VIDEO_LOOP_S=30
venc=(-f lavfi -i "testsrc2=size=640x360:rate=29" -t "$VIDEO_LOOP_S" -c:v libx264 -preset ultrafast -pix_fmt yuv420p
      -g 58 -b:v "${video_kbps}k" -minrate "${video_kbps}k" -maxrate "${video_kbps}k" -bufsize "${video_kbps}k"
      -x264-params nal-hrd=cbr -f mpegts)
ffmpeg_version=$(ffmpeg -version 2>/dev/null | sed -n 1p)
vkey=$(printf '%s\n' "$ffmpeg_version" "${venc[@]}" | sha256sum | cut -c1-12)
VIDEO="$VIDEO_CACHE/testsrc2-640x360-29fps-${video_kbps}k-${VIDEO_LOOP_S}s-$vkey.ts"
mkdir -p "$VIDEO_CACHE"
(
    flock 8
    if [[ ! -s "$VIDEO" || ! -s "$VIDEO.json" ]]; then
        tmp="$VIDEO.tmp.$$"
        ffmpeg -nostdin -hide_banner -loglevel error -y "${venc[@]}" "$tmp" 2>&3
        dur=$(ffprobe -v error -show_entries format=duration -of csv=p=0 "$tmp")
        jq -n --arg v "$ffmpeg_version" --arg args "${venc[*]}" --arg sha "$(sha256sum "$tmp" | cut -d' ' -f1)" \
            --argjson size "$(stat -c %s "$tmp")" --argjson dur "$dur" --argjson kbps "$video_kbps" \
            '{ffmpeg_version: $v, encode_args: $args, sha256: $sha, size_bytes: $size, duration_s: $dur,
              target_kbps: $kbps, measured_kbps: ($size * 8 / $dur / 1000), fps: 29, resolution: "640x360",
              codec: "h264 CBR (x264 nal-hrd=cbr)", container: "mpegts"}' > "$VIDEO.json.tmp"
        mv "$tmp" "$VIDEO"
        mv "$VIDEO.json.tmp" "$VIDEO.json"
    fi
) 8>"$VIDEO_CACHE/.lock"
video_info=$(cat "$VIDEO.json")
[[ "$(sha256sum "$VIDEO" | cut -d' ' -f1)" == "$(jq -r .sha256 <<<"$video_info")" ]] ||
    { say "cached video $VIDEO does not match its sha256"; echo "error: cached video $VIDEO is corrupt; delete it" >&2; exit 1; }
say "video $VIDEO ($(jq -r .measured_kbps <<<"$video_info") kbit/s measured)"

# ---------------------------------------------------------------------------------------------------------------
mkdir -p "$out/video" "$out/background" "$out/ss" "$out/links"
start_time=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
applied=$("${CH[@]}" up --topology "$TOPO" 2>>"$LOG")
if [[ " ${SCC[*]} " == *" bbr "* ]]; then ip netns exec "$P$SRV" bash "$TB/nodes/host.sh" --fq >>"$LOG" 2>&1 || true; fi

# the server's congestion control: its namespace's default where the host allows it, else on its routes. Never try
# the sysctl for a restricted cc: the failed attempt leaks a reference on a BPF cc (docs/testbed.md).
allowed=$(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control)
if [[ ${#ACTIVE[@]} -eq 2 ]]; then
    # two ccs at once: each on the server's host route to its stream's client (the kernel gives a route's congctl to
    # every connection over it, accepted ones included)
    for k in "${ACTIVE[@]}"; do
        IFS=$'\t' read -r via dev < <(ip -n "$P$SRV" -j route get "${CADDR[$k]}" | jq -r '.[0] | [(.gateway // ""), .dev] | @tsv')
        [[ -n "$dev" ]] || { say "no route from the server to client $k (${CADDR[$k]})"; echo "error: no route to client $k" >&2; exit 1; }
        gw=()
        [[ -n "$via" ]] && gw=(via "$via")
        ip -n "$P$SRV" route replace "${CADDR[$k]}/32" "${gw[@]}" dev "$dev" congctl "${SCC[$k]}"
    done
    cc_setting=$(jq -cn --arg a "${SCC[1]}" --arg b "${SCC[2]}" --arg routes "$(ip -n "$P$SRV" route show)" \
        '{mechanism: "route per client", what: ("ip route CLIENT/32 ... congctl: stream 1 " + $a + ", stream 2 " + $b),
          routes: ($routes | split("\n"))}')
elif [[ " $allowed " == *" $cc "* ]]; then
    ip netns exec "$P$SRV" sysctl -qw "net.ipv4.tcp_congestion_control=$cc"
    srv_default_set=1
    cc_setting=$(jq -cn --arg cc "$cc" '{mechanism: "sysctl", what: ("net.ipv4.tcp_congestion_control=" + $cc + " in the server namespace")}')
else
    while IFS=$'\t' read -r dst via dev; do
        extra=()
        [[ -n "$dev" ]] && extra=(dev "$dev")
        ip -n "$P$SRV" route replace "$dst" via "$via" "${extra[@]}" congctl "$cc"
    done < <(jq -r --arg n "$SRV" '.routes[$n][] | [.dst, .via, (.dev // "")] | @tsv' "$TOPO")
    cc_setting=$(jq -cn --arg cc "$cc" --arg allowed "$allowed" --arg routes "$(ip -n "$P$SRV" route show)" \
        '{mechanism: "route", what: ("ip route ... congctl " + $cc + " on every route of the server namespace"),
          reason: ($cc + " is not in net.ipv4.tcp_allowed_congestion_control (" + $allowed + "): a namespace cannot make it its default"),
          routes: ($routes | split("\n"))}')
fi
srv_default_cc=$(ip netns exec "$P$SRV" sysctl -n net.ipv4.tcp_congestion_control)
say "server cc: $cc_setting (namespace default now $srv_default_cc)"

# self-check before traffic: idle RTT server -> each client (10 pings, 20 ms apart; no added delay: a LAN, expected
# well under 2 ms), and an unloaded iperf3 TCP flow tg -> sink (2 s after a 1-s warm-up, up to 3 attempts) that must
# carry the shared link's rate C within 5 %: goodput x frame / payload (MSS + 66 bytes of TCP/IP headers with timestamps and Ethernet
# header per MSS, which htb counts)
rtt_stats() { # NS SRC DST -> "median_ms replies avg_ms"
    local txt
    txt=$(ip netns exec "$1" ping -n -c 10 -i 0.02 -W 2 -I "$2" "$3" 2>/dev/null || true)
    sed -n 's/.*time=\([0-9.]*\).*/\1/p' <<<"$txt" | sort -n |
        awk -v avg="$(sed -n 's|^rtt min/avg/max/mdev = [0-9.]*/\([0-9.]*\)/.*|\1|p' <<<"$txt")" '
            {v[NR]=$1} END{if(NR==0){m="null"} else if(NR%2){m=v[(NR+1)/2]} else {m=(v[NR/2]+v[NR/2+1])/2}
                           print m, NR, (avg == "" ? "null" : avg)}'
}
self_check='{}'
for k in 1 2 3; do
    read -r med nrep avg < <(rtt_stats "$P$SRV" "${SADDR[$k]}" "${CADDR[$k]}")
    self_check=$(jq -c --arg k "client$k" --argjson m "$med" --argjson n "$nrep" --argjson avg "$avg" '
        . + {($k): {rtt_median_ms: $m, rtt_avg_ms: $avg, replies: $n, pings: 10, rtt_ok: ($n == 10 and $m != null and $m < 2)}}' <<<"$self_check")
done
# a host that stalls (CPU contention, hypervisor steal) can only make a 2-s measurement slower than the link: an
# attempt below the tolerance is repeated, up to 3 attempts, every attempt recorded; the link is ok when one attempt
# is within 5 % of C (one above it would be a mis-configured link and fails)
link_attempts='[]'
for attempt in 1 2 3; do
    sfx=$([[ $attempt == 1 ]] && echo "" || echo "-$attempt")
    ip netns exec "$P$BG_RCV" iperf3 -s -1 -B "$BG_RADDR" -p 5201 --json > "$out/links/selfcheck-iperf3-server$sfx.json" 2>>"$LOG" &
    sc_srv=$!; pids+=("$sc_srv")
    sleep 0.5
    ip netns exec "$P$BG_SND" iperf3 -c "$BG_RADDR" -B "$BG_SADDR" -p 5201 -C reno -t 2 -O 1 --json \
        > "$out/links/selfcheck-iperf3-client$sfx.json" 2>>"$LOG" || true
    wait_pid_timeout "$sc_srv" 10 || true
    sc_gp=$(jq '.end.sum_received.bits_per_second // 0' "$out/links/selfcheck-iperf3-client$sfx.json" 2>/dev/null || echo 0)
    sc_mss=$(jq '.start.tcp_mss_default // 1448' "$out/links/selfcheck-iperf3-client$sfx.json" 2>/dev/null || echo 1448)
    link_attempts=$(jq -c --argjson gp "$sc_gp" --argjson mss "$sc_mss" --argjson c "$L_RATE" '
        (($gp / 1e6) * ($mss + 66) / $mss) as $link
        | . + [{goodput_mbps: ($gp / 1e6), mss: $mss, link_mbps: $link, within_5pct: ((($link - $c) | fabs) <= 0.05 * $c),
                above: ($link > 1.05 * $c)}]' <<<"$link_attempts")
    jq -e '.[-1] | .within_5pct or .above' <<<"$link_attempts" >/dev/null && break
    say "self-check: link measured $(jq '.[-1].link_mbps' <<<"$link_attempts") Mbit/s of $L_RATE in attempt $attempt; measuring again"
done
self_check=$(jq -c --argjson att "$link_attempts" --argjson c "$L_RATE" '
    ($att | map(select(.within_5pct)) | first) as $ok_att
    | (if $ok_att == null then $att[-1] else $ok_att end) as $a
    | . + {link: {tool: "iperf3 TCP reno tg -> sink, 2 s after 1 s omitted", goodput_mbps: $a.goodput_mbps, mss: $a.mss,
                  link_mbps: $a.link_mbps, shared_link_mbit: $c, attempts: ($att | map(del(.above))),
                  link_ok: ($ok_att != null and ($att | map(.above) | any | not))}}
    | . + {ok: ([.[] | if has("rtt_ok") then .rtt_ok else .link_ok end] | all)}' <<<"$self_check")
say "self_check: $self_check"
qdisc_json() { ip netns exec "$P$L_NS" tc -s -j qdisc show; }
queues0=$(qdisc_json)

# ---------------------------------------------------------------------------------------------------------------
cap() { # NODE IF FILE [FILTER]
    start_capture "$P$1" "$2" "$out/$3" "$SNAPLEN" ${4:+"$4"}   # capture_lib.sh
}
cap "$SRV" "${SIF[1]}" server.pcap
for k in "${ACTIVE[@]}"; do cap "${CLI[$k]}" "${CIF[$k]}" "client$k.pcap"; done
cap "$BG_SND" "$BG_SIF" tg.pcap udp
cap "$BG_RCV" "$BG_RIF" sink.pcap udp
wait_captures_listening || exit 1   # capture_lib.sh

listening() { # NS PROTO(t|u) PORT...: every port has a listening socket
    local p ls
    ls=$(ip netns exec "$1" ss -"$2"ln 2>/dev/null) || return 1
    shift 2
    for p in "$@"; do grep -qE "[:.]${p}[[:space:]]" <<<"$ls" || return 1; done
}
wait_until() { # TIMEOUT_S CMD...: poll every 0.05 s
    local i
    for ((i = 0; i < $1 * 20; i++)); do "${@:2}" && return 0; sleep 0.05; done
    return 1
}
# video servers: one ffmpeg per client, looping the file at its own rate (-re) until stopped
declare -A FFM
for k in "${ACTIVE[@]}"; do
    ip netns exec "$P$SRV" ffmpeg -nostdin -hide_banner -loglevel warning -re -stream_loop -1 -i "$VIDEO" -c copy \
        -f mpegts -listen 1 "http://${SADDR[$k]}:${PORT[$k]}" >>"$LOG" 2>&1 &
    FFM[$k]=$!; pids+=("$!")
done
APORTS=()
for k in "${ACTIVE[@]}"; do APORTS+=("${PORT[$k]}"); done
wait_until 20 listening "$P$SRV" t "${APORTS[@]}" || { say "the video servers did not listen"; echo "error: the ffmpeg servers did not start" >&2; exit 1; }

SS_INTERVAL_S=0.1   # `ss -tin` sampling interval (meta.json ss_interval_s), as the other capture tools
# shellcheck disable=SC2016  # $(date) must expand inside the namespace shell
ip netns exec "$P$SRV" bash -c 'while :; do echo "# ts=$(date +%s.%N)"; ss -tin; sleep '"$SS_INTERVAL_S"'; done' \
    > "$out/ss/server.txt" 2>/dev/null &
pids+=("$!")

# background: constant-rate UDP tg -> sink for S + 2 s, started first; the clients start once the sink receives it
bg_dur_s=$((duration_s + 2))
bg_flows=0 bg_pps=0 bg_start_epoch=null bg_sender_pid="" bg_recv_pid=""
rx_packets() { ip netns exec "$P$BG_RCV" cat "/sys/class/net/$BG_RIF/statistics/rx_packets"; }
bg_flowing() { (( $(rx_packets) >= bg_rx0 + 5 )); }
if [[ $bg_tool != none ]]; then
    bg_pps=$(awk -v r="$bg_mbps" -v l="$BG_IPLEN" 'BEGIN{printf "%.6f", r * 1e6 / (l * 8)}')
    bg_rx0=$(rx_packets)
    if [[ $bg_tool == d-itg ]]; then
        # D-ITG's sender sleeps between packets and falls behind at short intervals: one flow of 7500 packets/s
        # reached 64 % here (89 % with a 1-ns timer slack), 6 flows of 1250/s 94-97 %, 10 flows of 750/s 98.7 %. So
        # the rate is split over ceil(pps / 750) constant-rate flows (ports port, port+1, ...; one multi-flow ITGSend,
        # the flows start together) and ITGSend runs with a 1-ns timer slack, inherited by its threads (nanosleep is
        # otherwise up to 50 us late). ITGSend closes its flows one per second after the traffic ends.
        bg_flows=$(awk -v p="$bg_pps" 'BEGIN{n = int(p / 750); if (n * 750 < p) n++; print (n < 1 ? 1 : n)}')
        per=$(awk -v p="$bg_pps" -v n="$bg_flows" 'BEGIN{printf "%.6f", p / n}')
        for ((f = 0; f < bg_flows; f++)); do
            echo "-a $BG_RADDR -rp $((BG_PORT + f)) -T UDP -C $per -c $BG_PAYLOAD -t $((bg_dur_s * 1000))"
        done > "$out/background/ditg-flows.txt"
        ip netns exec "$P$BG_RCV" ITGRecv -a "$BG_RADDR" > "$out/background/itgrecv.out" 2>&1 &
        bg_recv_pid=$!; pids+=("$!")
        wait_until 10 listening "$P$BG_RCV" t 9000 || { say "ITGRecv did not listen"; echo "error: ITGRecv did not start" >&2; exit 1; }
        # shellcheck disable=SC2016  # "$@" expands in the inner shell
        bash -c 'echo 1 > /proc/self/timerslack_ns; exec "$@"' _ ip netns exec "$P$BG_SND" ITGSend "$out/background/ditg-flows.txt" \
            -l "$out/background/ditg-sender.log" -x "$out/background/ditg-receiver.log" > "$out/background/itgsend.out" 2>&1 &
        bg_sender_pid=$!; pids+=("$!")
    else
        ip netns exec "$P$BG_RCV" iperf3 -s -1 -B "$BG_RADDR" -p "$BG_PORT" --json > "$out/background/iperf3-server.json" 2>>"$LOG" &
        bg_recv_pid=$!; pids+=("$!")
        wait_until 10 listening "$P$BG_RCV" t "$BG_PORT" || { say "iperf3 server did not listen"; echo "error: the iperf3 background server did not start" >&2; exit 1; }
        # iperf3's -b counts UDP payload bits
        ip netns exec "$P$BG_SND" iperf3 -u -c "$BG_RADDR" -B "$BG_SADDR" -p "$BG_PORT" -l "$BG_PAYLOAD" -t "$bg_dur_s" \
            -b "$(awk -v r="$bg_mbps" -v p="$BG_PAYLOAD" -v l="$BG_IPLEN" 'BEGIN{printf "%.0f", r * 1e6 * p / l}')" \
            --json > "$out/background/iperf3-client.json" 2>>"$LOG" &
        bg_sender_pid=$!; pids+=("$!")
        bg_flows=1
    fi
    wait_until 20 bg_flowing || { say "no background reached the sink"; echo "error: the background ($bg_tool) did not reach the sink" >&2; exit 1; }
    bg_start_epoch=$(date +%s.%N)
    say "background flowing: $bg_mbps Mbit/s via $bg_tool ($bg_flows flow(s), $bg_pps packets/s of $BG_IPLEN bytes)"
fi

# the clients: all (the active ones) at once, each receiving for S seconds (curl --max-time S: exit 28 is the normal end), the
# received file's size every 0.1 s in video/clientK.progress
host_load0=$(host_load_sample)
flow_start_epoch=$(date +%s.%N)
say "clients start: ${#ACTIVE[@]} x http://${SADDR[1]}:${PORT[1]}.. cc=$cc ${duration_s}s"
declare -A CURL
for k in "${ACTIVE[@]}"; do : > "$out/video/client$k.progress"; done
# shellcheck disable=SC2016  # a curl -w template
wfmt='{"client":%s,"url":"%%{url_effective}","http_code":"%%{http_code}","exitcode":%%{exitcode},"size_download":%%{size_download},"time_total":%%{time_total},"speed_download":%%{speed_download},"time_connect":%%{time_connect},"time_starttransfer":%%{time_starttransfer}}\\n'
for k in "${ACTIVE[@]}"; do
    # shellcheck disable=SC2059  # the format is ours
    ip netns exec "$P${CLI[$k]}" curl -sS --max-time "$duration_s" --connect-timeout 5 -o "$out/video/client$k.ts" \
        -w "$(printf "$wfmt" "$k")" "http://${SADDR[$k]}:${PORT[$k]}/" > "$out/video/client$k.json" 2>>"$LOG" &
    CURL[$k]=$!; pids+=("$!")
done
# shellcheck disable=SC2016  # expands in the inner shell
bash -c 'while :; do ts=$EPOCHREALTIME; for k in "$@"; do
             echo "# ts=$ts bytes=$(stat -c %s "$0/client$k.ts" 2>/dev/null || echo 0)" >> "$0/client$k.progress"; done
         sleep 0.1; done' "$out/video" "${ACTIVE[@]}" &
prog_pid=$!; pids+=("$!")
for k in "${ACTIVE[@]}"; do
    wait_pid_timeout "${CURL[$k]}" $((duration_s + 30)) || true
done
signal_child TERM "$prog_pid"
wait "$prog_pid" 2>/dev/null || true
for k in "${ACTIVE[@]}"; do echo "# ts=$EPOCHREALTIME bytes=$(stat -c %s "$out/video/client$k.ts" 2>/dev/null || echo 0)" >> "$out/video/client$k.progress"; done
flow_end_epoch=$(date +%s.%N)
host_load1=$(host_load_sample)
say "clients done"
for k in "${ACTIVE[@]}"; do
    j=$(tail -1 "$out/video/client$k.json" 2>/dev/null || true)
    if ! jq -e '(.http_code == "200") and (.exitcode == 0 or .exitcode == 28) and (.size_download > 0)' <<<"$j" >/dev/null 2>&1; then
        say "client $k failed: ${j:-no curl output}"
        echo "error: client $k received no video (curl: ${j:-no output})" >&2
        exit 1
    fi
done
for k in "${ACTIVE[@]}"; do signal_child TERM "${FFM[$k]}"; done

# the background's end, its logs (sent/received packets and bytes)
bg_end_epoch=null
if [[ $bg_tool != none ]]; then
    wait_pid_timeout "$bg_sender_pid" $((bg_dur_s + 60)) || { say "background sender failed (exit $?)"; echo "error: the background sender ($bg_tool) failed" >&2; exit 1; }
    bg_end_epoch=$(date +%s.%N)
    if [[ $bg_tool == d-itg ]]; then
        sleep 0.5
        signal_child TERM "$bg_recv_pid"
        wait "$bg_recv_pid" 2>/dev/null || true
        ITGDec "$out/background/ditg-sender.log" > "$out/background/ditg-sender.txt" 2>/dev/null || true
        ITGDec "$out/background/ditg-receiver.log" > "$out/background/ditg-receiver.txt" 2>/dev/null || true
    else
        wait_pid_timeout "$bg_recv_pid" 15 || say "iperf3 background server exit status $?"
        iperf_ok "$out/background/iperf3-client.json" || exit 1
    fi
fi
# libpcap hands tcpdump its ring buffer's packets in blocks, retired when full or after 1 s: a capture stopped
# earlier than 1 s after its last packet loses them
sleep 1.2
end_processes   # capture_lib.sh
queues1=$(qdisc_json)
{ echo "== tc -s qdisc show (link $SHARED, namespace $L_NS) =="; ip netns exec "$P$L_NS" tc -s qdisc show
  echo "== tc -s class show =="; for d in "$L_IFA" "$L_IFB"; do echo "-- $d"; ip netns exec "$P$L_NS" tc -s class show dev "$d"; done
  echo "== ip -s link show =="; ip netns exec "$P$L_NS" ip -s link show; } > "$out/links/shared.txt" 2>&1

# ---------------------------------------------------------------------------------------------------------------
# what the run shows: per client (curl, the captures, its cc as set and as ss saw it), the background at the sink,
# the shared link's queue, the cc
# the stream connections' cc as ss saw it, per server port (the token before wscale: on their info lines)
cc_by_port=$(awk -v ports=" ${PORT[*]} " '
    /^# ts=/ {want = 0; next}
    /^ESTAB/ {split($4, a, ":"); port = a[length(a)]; want = (index(ports, " " port " ") > 0); next}
    want {for (i = 2; i <= NF; i++) if ($i ~ /^wscale:/) seen[port " " $(i-1)] = 1; want = 0}
    END {for (s in seen) print s}' "$out/ss/server.txt")
streams='[]'
DATA_FILTER() { echo "tcp and src port $1 and (ip[2:2] - ((ip[0]&0xf)<<2) - ((tcp[12]&0xf0)>>2)) > 0"; }
for k in "${ACTIVE[@]}"; do
    obs=$(awk -v p="${PORT[$k]}" '$1 == p {print $2}' <<<"$cc_by_port" | sort -u | jq -Rcs 'split("\n") | map(select(. != ""))')
    sp=$(tcpdump -r "$out/server.pcap" -nn "$(DATA_FILTER "${PORT[$k]}")" 2>/dev/null | wc -l)
    cp=$(tcpdump -r "$out/client$k.pcap" -nn "$(DATA_FILTER "${PORT[$k]}")" 2>/dev/null | wc -l)
    streams=$(jq -c --argjson k "$k" --argjson c "$(tail -1 "$out/video/client$k.json")" --argjson sp "$sp" --argjson cp "$cp" \
        --arg srv "$SRV" --arg cli "${CLI[$k]}" --arg sa "${SADDR[$k]}" --arg ca "${CADDR[$k]}" --arg sif "${SIF[$k]}" \
        --arg cif "${CIF[$k]}" --argjson port "${PORT[$k]}" --argjson t "$duration_s" --arg scc "${SCC[$k]}" --argjson obs "$obs" '
        . + [{stream: $k, server: $srv, client: $cli, server_addr: $sa, client_addr: $ca, server_if: $sif, client_if: $cif,
              port: $port, cc: $scc, cc_observed: $obs, received_bytes: $c.size_download,
              received_kbps: ($c.size_download * 8 / $t / 1000),
              curl: $c, server_data_pkts: $sp, client_data_pkts: $cp}]' <<<"$streams")
done
udp_obs() { # PCAP -> {packets, ip_bytes, first, last, mbps} of the background (UDP to its ports)
    tcpdump -r "$1" -tt -nn "udp and dst host $BG_RADDR and dst portrange $BG_PORT-$((BG_PORT + (bg_flows > 1 ? bg_flows - 1 : 0)))" 2>/dev/null | awk '
        {n++; t=$1; if (n == 1) f=t; l=t; for (i=1; i<NF; i++) if ($i == "length") b += $(i+1) + 28}
        END {if (n < 2) {print "{\"packets\":" n+0 ",\"ip_bytes\":" b+0 ",\"first\":null,\"last\":null,\"mbps\":null}"}
             else printf "{\"packets\":%d,\"ip_bytes\":%d,\"first\":%.6f,\"last\":%.6f,\"mbps\":%.6f}\n", n, b, f, l, b*8/(l-f)/1e6}'
}
bg_counts=null
if [[ $bg_tool == d-itg ]]; then
    dec() { # FILE -> {packets, bytes} (payload bytes) from ITGDec's TOTAL RESULTS
        awk '/TOTAL RESULTS/ {t=1} t && /Total packets/ {p=$NF} t && /Bytes received/ {b=$NF}
             END {printf "{\"packets\":%s,\"payload_bytes\":%s}", (p == "" ? "null" : p), (b == "" ? "null" : b)}' "$1" 2>/dev/null ||
            echo '{"packets":null,"payload_bytes":null}'
    }
    bg_counts=$(jq -cn --argjson s "$(dec "$out/background/ditg-sender.txt")" --argjson r "$(dec "$out/background/ditg-receiver.txt")" \
        '{sent: $s, received: $r}')
elif [[ $bg_tool == iperf3 ]]; then
    bg_counts=$(jq -c '{sent: {packets: .end.sum.packets, payload_bytes: .end.sum.bytes},
                        received: {packets: (.end.sum.packets - .end.sum.lost_packets), lost_packets: .end.sum.lost_packets}}' \
                   "$out/background/iperf3-client.json")
fi
background=$(jq -cn --arg tool "$bg_tool" --argjson r "$bg_mbps" --argjson flows "$bg_flows" --argjson pps "$bg_pps" \
    --argjson counts "$bg_counts" --argjson tg "$(udp_obs "$out/tg.pcap")" --argjson sink "$(udp_obs "$out/sink.pcap")" \
    --argjson t0 "$bg_start_epoch" --argjson t1 "$bg_end_epoch" --argjson dur "$bg_dur_s" --arg snd "$BG_SND" --arg rcv "$BG_RCV" \
    --arg sa "$BG_SADDR" --arg ra "$BG_RADDR" --argjson port "$BG_PORT" --argjson pl "$BG_PAYLOAD" --argjson ipl "$BG_IPLEN" '
    {tool: (if $tool == "none" then null else $tool end), mbps: $r, rate_layer: "IP (packets of ip_bytes bytes)",
     sender: $snd, receiver: $rcv, sender_addr: $sa, receiver_addr: $ra, port: $port, payload_bytes: $pl, ip_bytes: $ipl,
     flows: $flows, packets_per_s: $pps, duration_s: (if $tool == "none" then null else $dur end),
     start_epoch: $t0, end_epoch: $t1, counts: $counts, observed_tg: $tg, observed_sink: $sink,
     observed_mbps: $sink.mbps}')
# every cc ss saw on the stream connections
cc_observed=$(awk '{print $2}' <<<"$cc_by_port" | sort -u | jq -Rcs 'split("\n") | map(select(. != ""))')
queues=$(jq -cn --argjson a "$queues0" --argjson b "$queues1" --arg ifa "$L_IFA" --arg ifb "$L_IFB" '
    def leaf($t; $dev): ($t | map(select(.dev == $dev and .handle == "10:")) | .[0]);
    def root($t; $dev): ($t | map(select(.dev == $dev and .root)) | .[0]);
    def dir($dev): {dev: $dev, root_kind: root($b; $dev).kind, leaf_kind: leaf($b; $dev).kind, limit: leaf($b; $dev).options.limit,
                    packets: (leaf($b; $dev).packets - leaf($a; $dev).packets), bytes: (leaf($b; $dev).bytes - leaf($a; $dev).bytes),
                    drops: (leaf($b; $dev).drops - leaf($a; $dev).drops), note: "during the run (after the self-check)"};
    {a_to_b: dir($ifb), b_to_a: dir($ifa)}')
host_load=$(host_load_summary "$host_load0" "$host_load1")
# packets the captures lost in the kernel (tcpdump's own count at exit, in capture.log): should be 0
capture_drops=$(sed -n 's/^\([0-9]*\) packets dropped by kernel$/\1/p' "$LOG" | awk '{s += $1} END {print s + 0}')
ditg_v=null
params='{}'
if [[ -f "$out/params.json" ]] && jq -e 'type == "object"' "$out/params.json" >/dev/null 2>&1; then params=$(cat "$out/params.json"); fi
if [[ $bg_tool == d-itg ]]; then ditg_v=$({ ITGSend -h 2>&1 || true; } | sed -n 1p | jq -R .); fi
jq -n --argjson params "$params" --argjson applied "$applied" --arg start "$start_time" --arg kernel "$(uname -r)" --arg exp "$experiment" \
   --arg host "$(uname -n)" --arg cc "$cc" --argjson t "$duration_s" --argjson rep "$rep" --argjson bg "$background" --argjson vk "$video_kbps" \
   --argjson video "$video_info" --arg vfile "$VIDEO" --argjson streams "$streams" --argjson queues "$queues" \
   --argjson self_check "$self_check" --argjson host_load "$host_load" --arg ssi "$SS_INTERVAL_S" --argjson cc_impl "$cc_impl" \
   --argjson cc_setting "$cc_setting" --argjson cc_obs "$cc_observed" --arg srv_default "$srv_default_cc" \
   --arg t0 "$flow_start_epoch" --arg t1 "$flow_end_epoch" --argjson cdrops "$capture_drops" --argjson snaplen "$SNAPLEN" \
   --arg shared "$SHARED" --arg topo_rel "$TOPO_REL" --arg topo_sha "$(sha256sum "$TOPO" | cut -d' ' -f1)" \
   --arg sysctls "$(ip netns exec "$P$SRV" sysctl net.ipv4.tcp_sack net.ipv4.tcp_dsack net.ipv4.tcp_timestamps net.ipv4.tcp_window_scaling 2>/dev/null)" \
   --arg ffv "$(ffmpeg -version 2>&1 | sed -n 1p)" --arg curlv "$(curl --version 2>&1 | sed -n 1p)" --argjson ditgv "$ditg_v" \
   --arg iperf3v "$(iperf3 --version 2>&1 | sed -n 1p)" --arg tcpdumpv "$(tcpdump --version 2>&1 | sed -n 1p)" \
   --arg pingv "$(ping -V 2>&1 | sed -n 1p)" --arg ipv "$(ip -V 2>&1 | sed -n 1p)" '
   ($applied.links[] | select(.name == $shared)) as $L
   | {params: ($params + {family: "002", experiment: $exp, cc: $cc, duration_s: $t, background_mbps: $bg.mbps, background_tool: $bg.tool,
               video_kbps: $vk, video_sha256: $video.sha256, video_measured_kbps: $video.measured_kbps,
               shared_link_mbit: $L.rate_mbit, shared_link_buffer_pkts: $L.buffer_pkts, rep: $rep, backend: "netns",
               mtu: $applied.mtu}),
      family: "002", backend: "netns", background_tool: $bg.tool, host: $host, kernel: $kernel, start_time: $start, sysctls: ($sysctls | split("\n")),
      topology: {name: $applied.name, file: $topo_rel, sha256: $topo_sha},
      tool_versions: {ffmpeg: $ffv, curl: $curlv, d_itg: $ditgv, iperf3: $iperf3v, tcpdump: $tcpdumpv, ping: $pingv, iproute2: $ipv},
      shared_link: ($L | {name, ns, a, b, if_a, if_b, rate_mbit, delay_ms, buffer_pkts}),
      links: [$applied.links[] | {name, ns, a, b, if_a, if_b, rate_mbit, delay_ms, buffer_pkts}],
      delay_mechanism: $applied.delay_mechanism, shaper: $applied.shaper, queue_mechanism: $applied.queue_mechanism,
      video: ($video + {file: $vfile, loop: "ffmpeg -re -stream_loop -1 -i FILE -c copy -f mpegts -listen 1 http://ADDR:PORT",
                        client: "curl --max-time duration_s -o FILE (not kept)"}),
      streams: $streams, background: $bg, queues: $queues,
      cc_impl: $cc_impl, cc_setting: $cc_setting, cc_observed: $cc_obs, server_default_cc: $srv_default,
      self_check: $self_check, flow_start_epoch: ($t0 | tonumber), flow_end_epoch: ($t1 | tonumber),
      capture_snaplen: $snaplen, capture_kernel_drops: $cdrops, host_load: $host_load, ss_interval_s: ($ssi | tonumber),
      status: "complete"}' > "$out/meta.json.tmp"
mv "$out/meta.json.tmp" "$out/meta.json"
rm -f "$out"/video/client?.ts
date -u +%Y-%m-%dT%H:%M:%SZ > "$out/COMPLETE"
say "COMPLETE"
