// SPDX-License-Identifier: GPL-2.0
/*
 * TCP Westwood+ as a BPF struct_ops congestion control, registered as "westwood".
 *
 * A line-by-line port of Linux net/ipv4/tcp_westwood.c (v6.1, the version Debian 12's kernel ships as the
 * tcp_westwood module; unchanged in substance up to 6.18): L. A. Grieco, S. Mascolo, "Performance evaluation and
 * comparison of Westwood+, New Reno, and Vegas TCP congestion control", ACM CCR 34(2), 2004. Original module by
 * Stephen Hemminger and Angelo Dell'Aera.
 *
 * Westwood+ estimates the bandwidth from the ACK stream once per RTT (at least every 50 ms), low-pass filters it,
 * and after a loss sets ssthresh (and, after CWR, cwnd) to BWE * RTTmin; the probing phase is Reno's.
 *
 * Differences from the module, all mechanical (none changes a computed value):
 * - struct westwood is renamed struct bpf_westwood;
 * - .get_info (the INET_DIAG_VEGASINFO rtt/rtt_min export) is left out: BPF congestion controls may not implement it
 *   (net/ipv4/bpf_tcp_ca.c unsupported_ops), so `ss -ti` shows no "vegas" fields for this port;
 * - tcp_reno_ssthresh, tcp_reno_cong_avoid and tcp_reno_undo_cwnd are the kernel's own, called as kfuncs;
 * - the struct sets TCP_CONG_NON_RESTRICTED (see tcp_ca_helpers.h);
 * - every hook first calls cc_guard() (cc_guard.h, docs/cc-guard.md), and a .set_state hook does only that, as does a
 *   .min_tso_segs hook that returns the kernel's default: the guard repairs the impossible ssthresh/cwnd a kernel
 *   defect writes now and then, and changes nothing otherwise.
 * "tcp_westwood.c:" comments give the original's line numbers (linux-source-6.1 6.1.192).
 */
#include "westwood_bwe.h"   /* the estimator and the original callbacks' bodies (and cc_guard.h) */

CC_GUARD_FITS(struct bpf_westwood);

char _license[] SEC("license") = "GPL";

/* tcp_westwood.c:61-75, 103-110, 225-238, 240-259: the callbacks (bodies in westwood_bwe.h) */
SEC("struct_ops/tcp_westwood_init")
void BPF_PROG(tcp_westwood_init, struct sock *sk)
{
	westwood_init(sk);
	cc_guard_init(sk);
}

SEC("struct_ops/tcp_westwood_pkts_acked")
void BPF_PROG(tcp_westwood_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	cc_guard(sk);
	westwood_pkts_acked(sk, sample);
}

SEC("struct_ops/tcp_westwood_ack")
void BPF_PROG(tcp_westwood_ack, struct sock *sk, __u32 ack_flags)
{
	cc_guard(sk);
	westwood_ack(sk, ack_flags);
}

SEC("struct_ops/tcp_westwood_event")
void BPF_PROG(tcp_westwood_event, struct sock *sk, enum tcp_ca_event event)
{
	cc_guard(sk);
	westwood_event(sk, event);
}

/* tcp_westwood.c:279-291: .ssthresh, .cong_avoid, .undo_cwnd are Reno's (the kernel's, as kfuncs) */
SEC("struct_ops/tcp_westwood_ssthresh")
__u32 BPF_PROG(tcp_westwood_ssthresh, struct sock *sk)
{
	cc_guard(sk);
	return tcp_reno_ssthresh(sk);
}

SEC("struct_ops/tcp_westwood_cong_avoid")
void BPF_PROG(tcp_westwood_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	cc_guard(sk);
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC("struct_ops/tcp_westwood_undo_cwnd")
__u32 BPF_PROG(tcp_westwood_undo_cwnd, struct sock *sk)
{
	cc_guard(sk);
	return tcp_reno_undo_cwnd(sk);
}

/* not in the module: the guard alone (cc_guard.h) */
SEC("struct_ops/tcp_westwood_state")
void BPF_PROG(tcp_westwood_state, struct sock *sk, __u8 new_state)
{
	cc_guard(sk);
}

/* not in the module: the guard before every transmission decision, returning the kernel's default (cc_guard.h) */
SEC("struct_ops/tcp_westwood_min_tso_segs")
__u32 BPF_PROG(tcp_westwood_min_tso_segs, struct sock *sk)
{
	return cc_guard_min_tso_segs(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops westwood = {
	.init		= (void *)tcp_westwood_init,
	.ssthresh	= (void *)tcp_westwood_ssthresh,
	.cong_avoid	= (void *)tcp_westwood_cong_avoid,
	.undo_cwnd      = (void *)tcp_westwood_undo_cwnd,
	.cwnd_event	= (void *)tcp_westwood_event,
	.in_ack_event	= (void *)tcp_westwood_ack,
	.pkts_acked	= (void *)tcp_westwood_pkts_acked,
	.set_state	= (void *)tcp_westwood_state,
	.min_tso_segs	= (void *)tcp_westwood_min_tso_segs,
	.flags		= TCP_CONG_NON_RESTRICTED,
	.name		= "westwood",
};
