#!/usr/bin/env bash
# The VLC replication of study 002 (docs/vlc002.md): one run of the paper's own streaming set-up on study 002's star
# testbed (testbed/families/002/topology.json, built by testbed/chain.sh as capture_tools/run_streaming.sh builds it):
# VLC media player serves one video to three clients at once, over RTSP (the paper's CUBIC arm, its Table 2) or HTTP
# (its PCC arm), under study 002's constant-rate UDP background (iperf3 -u, tg -> sink, at the test's rate).
#
# VLC's RTSP server (stream output `#rtp{sdp=rtsp://...}`) answers a SETUP only for "RTP/AVP" over UDP; its source
# says '"interleaved" is not implemented' (modules/stream_out/rtsp.c). Every rtsp run asks once for interleaved TCP and
# records the answer (meta.json interleaved_probe), then the clients take the media as RTP over UDP. The clients are
# ffmpeg's RTSP and HTTP clients (Debian 12's VLC has no RTSP client: its live555 module is not packaged), copying the
# streams to nothing (no decoding).
#
# usage: run.sh --out RUN_DIR --experiment test1|...|test5 --stream rtsp|http --cc C --duration-s S [--rep N]
#   C: the server's congestion control, cubic or pcc_vivace (the kernel's, else the BPF port of testbed/cc); over
#      rtsp it governs only the RTSP control connection (the media is UDP).
#   S: seconds each client receives (ffmpeg -t S), 5..600. Background: test1 none, test2/3/4/5 8/16/24/90 Mbit/s at
#      the IP layer (1500-byte IP packets; the paper's fractions of its link), for S + 4 s.
# Output: server.pcap (the server's interface), clientK.pcap (client K's interface), K = 1..3, tcpdump -s 128;
# clientK.log (ffmpeg), vlc.log, background/iperf3-*.json, meta.json; COMPLETE last. Exit 0 = COMPLETE, 3 = SKIPPED
# (cc not available), other = failed. Never overwrites a finished run directory.
# The video (testsrc2 1920x1080, 29 fps, H.264 CBR 3475 kbit/s + AAC 125 kbit/s: the paper's 1080p, 29 fps and
# 125 kbit/s audio, section 3; 3600 kbit/s in all, its test-1 throughput) is made once with ffmpeg and cached in
# /var/cache/mpcc/video/, never in the repository. VLC refuses to run as root: it runs as the user nobody.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TB="$HERE/.."
CT="$HERE/../../capture_tools"
# shellcheck source=capture_tools/experiment_args.sh
source "$CT/experiment_args.sh"   # die, parse_long_options
# shellcheck source=capture_tools/capture_lib.sh
source "$CT/capture_lib.sh"       # start_capture, stop_run_processes, acquire_cc, release_ccs, host_load_*

out="" experiment="" stream="" cc="" duration_s="" rep=1
parse_long_options "--out=out --experiment=experiment --stream=stream --cc=cc --duration-s=duration_s --rep=rep" "$@"
declare -A BG=([test1]=0 [test2]=8 [test3]=16 [test4]=24 [test5]=90)
[[ -n "$out" ]] || die "--out is required"
[[ "$experiment" =~ ^test[1-5]$ ]] || die "--experiment must be one of test1 test2 test3 test4 test5, got '$experiment'"
[[ "$stream" =~ ^(rtsp|http)$ ]] || die "--stream must be rtsp or http, got '$stream'"
[[ "$cc" =~ ^(cubic|pcc_vivace)$ ]] || die "--cc must be cubic or pcc_vivace, got '$cc'"
if ! [[ "$duration_s" =~ ^[1-9][0-9]{0,2}$ ]] || ((duration_s < 5 || duration_s > 600)); then
    die "--duration-s must be a whole number of seconds in [5, 600], got '$duration_s'"
fi
[[ "$rep" =~ ^[1-9][0-9]{0,5}$ ]] || die "--rep must be a positive integer, got '$rep'"
for t in cvlc ffmpeg ffprobe iperf3 tcpdump jq runuser; do
    command -v "$t" >/dev/null ||
        die "$t is not installed (apt-get install --no-install-recommends vlc-bin vlc-plugin-base ffmpeg iperf3 tcpdump jq)"
done
bg_mbps=${BG[$experiment]}
TOPO="$TB/families/002/topology.json"
plan=$("$TB/chain.sh" check --topology "$TOPO" 2>&1) || die "testbed/chain.sh check failed: $(head -1 <<<"$plan")"
refuse_to_start   # root; never over a finished run

export MPCC_NS_PREFIX="${MPCC_NS_PREFIX:-vlc-}"
P=$MPCC_NS_PREFIX
open_run_dir
SHARED=$(jq -r .shared_link "$TOPO")
L_NS=$(jq -r --arg l "$SHARED" '.links[] | select(.name == $l) | .ns' <<<"$plan")
SRV=srv SADDR=$(jq -r '.streams[0].server_addr' "$TOPO") SIF=$(jq -r '.streams[0].server_if' "$TOPO")
declare -A CLI CIF
for k in 1 2 3; do
    IFS=$'\t' read -r "CLI[$k]" "CIF[$k]" < <(jq -r --argjson k "$k" \
        '.streams[] | select(.stream == $k) | [.client, .client_if] | @tsv' "$TOPO")
done
IFS=$'\t' read -r BG_SND BG_RCV BG_SADDR BG_RADDR BG_PORT BG_PAYLOAD < <(jq -r \
    '.background | [.sender, .receiver, .sender_addr, .receiver_addr, .port, .payload_bytes] | @tsv' "$TOPO")

pids=() tcpdump_pids=() held_ccs=() cc_impl='{}' srv_default_set=0
teardown() {
    local rc=$?
    stop_run_processes
    if [[ $srv_default_set == 1 ]]; then
        ip netns exec "$P$SRV" sysctl -qw net.ipv4.tcp_congestion_control=reno 2>>"$LOG" || true
    fi
    "$TB/chain.sh" down --topology "$TOPO" 2>>"$LOG" || true
    release_ccs
    exit "$rc"
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
say "vlc002: $experiment stream $stream cc $cc ${duration_s}s background $bg_mbps Mbit/s rep $rep"
acquire_cc "$cc"

# the video, once (flock: concurrent runs make it once)
VIDEO_CACHE=/var/cache/mpcc/video
venc=(-f lavfi -i "testsrc2=size=1920x1080:rate=29" -f lavfi -i "sine=frequency=440:sample_rate=48000" -t 60
      -c:v libx264 -preset ultrafast -pix_fmt yuv420p -g 58 -b:v 3475k -minrate 3475k -maxrate 3475k -bufsize 3475k
      -x264-params nal-hrd=cbr -c:a aac -b:a 125k -ac 2 -movflags +faststart -f mp4)
ffmpeg_version=$(ffmpeg -version 2>/dev/null | sed -n 1p)
vkey=$(printf '%s\n' "$ffmpeg_version" "${venc[@]}" | sha256sum | cut -c1-12)
VIDEO="$VIDEO_CACHE/vlc002-testsrc2-1920x1080-29fps-3475k-aac125k-60s-$vkey.mp4"
mkdir -p "$VIDEO_CACHE"
(
    flock 8
    if [[ ! -s "$VIDEO" ]]; then
        ffmpeg -nostdin -hide_banner -loglevel error -y "${venc[@]}" "$VIDEO.tmp" 2>&3
        mv "$VIDEO.tmp" "$VIDEO"
    fi
) 8>"$VIDEO_CACHE/.lock"
chmod 644 "$VIDEO"
video_info=$(jq -n --arg f "$(basename "$VIDEO")" --arg args "${venc[*]}" --arg sha "$(sha256sum "$VIDEO" | cut -d' ' -f1)" \
    --argjson size "$(stat -c %s "$VIDEO")" --argjson dur "$(ffprobe -v error -show_entries format=duration -of csv=p=0 "$VIDEO")" \
    '{file: $f, encode_args: $args, sha256: $sha, size_bytes: $size, duration_s: $dur,
      measured_kbps: ($size * 8 / $dur / 1000)}')
say "video $(jq -c . <<<"$video_info")"

start_time=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
"$TB/chain.sh" up --topology "$TOPO" >>"$LOG" 2>&1
allowed=$(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control)
if [[ " $allowed " == *" $cc "* ]]; then
    ip netns exec "$P$SRV" sysctl -qw "net.ipv4.tcp_congestion_control=$cc"
    srv_default_set=1
    cc_setting="sysctl net.ipv4.tcp_congestion_control=$cc in the server namespace"
else
    while IFS=$'\t' read -r dst via; do
        ip -n "$P$SRV" route replace "$dst" via "$via" congctl "$cc"
    done < <(jq -r --arg n "$SRV" '.routes[$n][] | [.dst, .via] | @tsv' "$TOPO")
    cc_setting="ip route ... congctl $cc on every route of the server namespace (not in tcp_allowed_congestion_control)"
fi
say "server cc: $cc_setting"
qdisc_json() { ip netns exec "$P$L_NS" tc -s -j qdisc show; }
queues0=$(qdisc_json)

# the VLC server, as the paper's: one instance serving every client
if [[ $stream == rtsp ]]; then
    URL="rtsp://$SADDR:8554/s" SOUT="#rtp{sdp=$URL}" LPORT=8554
else
    URL="http://$SADDR:8080/s" SOUT="#standard{access=http,mux=ts,dst=$SADDR:8080/s}" LPORT=8080
fi
ip netns exec "$P$SRV" runuser -u nobody -- cvlc -I dummy --no-media-library "$VIDEO" --loop --sout "$SOUT" \
    --sout-keep >"$out/vlc.log" 2>&1 &
pids+=("$!")
vlc_listening() { local ls; ls=$(ip netns exec "$P$SRV" ss -tln); grep -q ":$LPORT " <<<"$ls"; }
for ((i = 0; i < 200; i++)); do
    vlc_listening && break
    sleep 0.05
done
vlc_listening || die "VLC did not listen on port $LPORT (see $out/vlc.log)"
sleep 1   # VLC's stream output starts with the input

start_capture "$P$SRV" "$SIF" "$out/server.pcap" 128
for k in 1 2 3; do start_capture "$P${CLI[$k]}" "${CIF[$k]}" "$out/client$k.pcap" 128; done
wait_captures_listening || exit 1

interleaved_probe=null
if [[ $stream == rtsp ]]; then
    # what the server answers to RTP interleaved over the RTSP TCP connection (RFC 2326 section 10.12)
    probe=$(ip netns exec "$P${CLI[1]}" timeout 10 ffmpeg -nostdin -hide_banner -loglevel error -rtsp_transport tcp \
        -i "$URL" -t 1 -c copy -f null - 2>&1 || true)
    interleaved_probe=$(jq -cn --arg m "$(grep -m1 -i 'SETUP' <<<"$probe" || head -1 <<<"$probe")" \
        '{asked: "RTP/AVP/TCP;interleaved (ffmpeg -rtsp_transport tcp)", answer: $m}')
    say "interleaved probe: $interleaved_probe"
fi

bg_s=$((duration_s + 4))
if ((bg_mbps > 0)); then
    ip netns exec "$P$BG_RCV" iperf3 -s -1 -B "$BG_RADDR" -p "$BG_PORT" --json > "$out/background-iperf3-server.json" 2>>"$LOG" &
    bgs=$!; pids+=("$bgs")
    sleep 0.5
    # iperf3 -b counts UDP payload: payload rate = IP rate x payload / (payload + 28)
    bg_bps=$(awk -v r="$bg_mbps" -v p="$BG_PAYLOAD" 'BEGIN{printf "%.0f", r * 1e6 * p / (p + 28)}')
    ip netns exec "$P$BG_SND" iperf3 -c "$BG_RADDR" -B "$BG_SADDR" -p "$BG_PORT" -u -b "$bg_bps" -l "$BG_PAYLOAD" \
        -t "$bg_s" --json > "$out/background-iperf3-client.json" 2>>"$LOG" &
    bgc=$!; pids+=("$bgc")
    sleep 1
fi

load0=$(host_load_sample)
declare -A CPID
for k in 1 2 3; do
    tr=()
    [[ $stream == rtsp ]] && tr=(-rtsp_transport udp)
    ip netns exec "$P${CLI[$k]}" ffmpeg -nostdin -hide_banner -loglevel info "${tr[@]}" -i "$URL" -map 0 -t "$duration_s" \
        -c copy -f null - > "$out/client$k.log" 2>&1 &
    CPID[$k]=$!; pids+=("$!")
done
declare -A CRC
for k in 1 2 3; do
    rc=0
    wait_pid_timeout "${CPID[$k]}" $((duration_s + 30)) || rc=$?
    CRC[$k]=$rc
done
load1=$(host_load_sample)
if ((bg_mbps > 0)); then wait_pid_timeout "$bgc" $((bg_s + 10)) || true; wait_pid_timeout "$bgs" 10 || true; fi
sleep 0.5
queues1=$(qdisc_json)
end_processes
clients=$(for k in 1 2 3; do jq -cn --argjson k "$k" --argjson rc "${CRC[$k]}" '{client: $k, ffmpeg_exit: $rc}'; done | jq -cs .)
jq -n --arg start "$start_time" --arg exp "$experiment" --arg stream "$stream" --arg cc "$cc" --argjson dur "$duration_s" \
    --argjson rep "$rep" --argjson bg "$bg_mbps" --arg url "$URL" --arg sout "$SOUT" --argjson video "$video_info" \
    --argjson probe "$interleaved_probe" --arg ccs "$cc_setting" --argjson impl "$cc_impl" --argjson q0 "$queues0" \
    --argjson q1 "$queues1" --argjson load "$(host_load_summary "$load0" "$load1")" --argjson clients "$clients" \
    --arg vlc "vlc-bin $(dpkg-query -W -f='${Version}' vlc-bin 2>/dev/null || echo unknown)" --arg ffm "$ffmpeg_version" --arg ipf "$(iperf3 --version | sed -n 1p)" \
    --arg kernel "$(uname -r)" --arg shared "$L_NS" \
    '{params: {experiment: $exp, stream: $stream, cc: $cc, duration_s: $dur, rep: $rep, background_mbps: $bg},
      start_time: $start, url: $url, vlc_sout: $sout, video: $video, interleaved_probe: $probe,
      cc_setting: $ccs, cc_impl: $impl, shared_link_ns: $shared, queues_before: $q0, queues_after: $q1,
      host_load: $load, clients: $clients, background_tool: (if $bg > 0 then "iperf3 -u" else null end),
      tools: {vlc: $vlc, ffmpeg: $ffm, iperf3: $ipf}, kernel: $kernel}' > "$out/meta.json"
for k in 1 2 3; do
    [[ ${CRC[$k]} == 0 ]] || die "client $k: ffmpeg exited ${CRC[$k]} (see $out/client$k.log); the run is incomplete"
done
date -u +%Y-%m-%dT%H:%M:%SZ > "$out/COMPLETE"
say "complete"
