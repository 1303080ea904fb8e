/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel-defect guard of the BPF ports (docs/cc-guard.md).
 *
 * Measured on this repository's development kernel (6.18.44, 2026-11-28): a connection run by a BPF struct_ops
 * congestion control now and then holds tp->snd_ssthresh = 2165326096 (0x81104010, the low half of a kernel text
 * address) that no hook of the controller returned or wrote. A diagnostic port that logs every hook call saw its
 * .ssthresh hook return 2 and .set_state(TCP_CA_Recovery) then read 2, and the next hook call on that socket read the
 * other value; the recovery had been entered from the RACK reordering timer. The kernel's proportional rate reduction
 * then sets cwnd to ssthresh x delivered / prior_cwnd (hundreds of millions of packets) and the sender sends its whole
 * receive window at once. Neither value can come from a Linux congestion control: ssthresh is at most
 * TCP_INFINITE_SSTHRESH (0x7fffffff) and cwnd never reaches 2^31.
 *
 * cc_guard(), called first in every hook of a port and by the .min_tso_segs hook each port adds (cc_guard_min_tso_segs:
 * the kernel asks it before every transmission decision, tcp_write_xmit and tcp_xmit_retransmit_queue, so the guard
 * runs before a corrupted window can send; it returns what the kernel uses without the hook, the namespace's
 * net.ipv4.tcp_min_tso_segs), puts back the last valid values it saw on the socket when it
 * finds an impossible one (ssthresh above TCP_INFINITE_SSTHRESH, cwnd above it; with a bad ssthresh also a cwnd above
 * the last valid one, which the kernel's reduction computed from it) and counts each repair in the object's global
 * counters guard_ssthresh_repairs and guard_cwnd_repairs (read by testbed/cc/ccctl.sh counters). With valid values it
 * changes nothing, so the port still computes exactly what the module computes.
 *
 * Its state sits in the last 8 bytes of the controller's private area (icsk_ca_priv); every port asserts that its own
 * state ends before them (CC_GUARD_FITS).
 */
#ifndef MPCC_CC_GUARD_H
#define MPCC_CC_GUARD_H

#include "tcp_ca_helpers.h"

#define TCP_INFINITE_SSTHRESH 0x7fffffffU

struct cc_guard {
	__u32 ssthresh_ok;    /* the last valid snd_ssthresh seen on this socket */
	__u32 cwnd_ok;        /* the last snd_cwnd seen with a valid ssthresh */
};

#define CC_GUARD_OFFSET (sizeof(((struct inet_connection_sock *)0)->icsk_ca_priv) - sizeof(struct cc_guard))
#define CC_GUARD_FITS(state) \
	_Static_assert(sizeof(state) <= CC_GUARD_OFFSET, #state " overlaps the guard's state (cc_guard.h)")

__u64 guard_ssthresh_repairs;   /* repairs of snd_ssthresh since the object was registered (all sockets) */
__u64 guard_cwnd_repairs;       /* repairs of snd_cwnd */

static __always_inline struct cc_guard *cc_guard_of(const struct sock *sk)
{
	return (struct cc_guard *)((char *)inet_csk_ca(sk) + CC_GUARD_OFFSET);
}

/* from .init: the connection's values when the controller takes over are the first valid ones */
static __always_inline void cc_guard_init(struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct cc_guard *g = cc_guard_of(sk);

	g->ssthresh_ok = tp->snd_ssthresh <= TCP_INFINITE_SSTHRESH ? tp->snd_ssthresh : TCP_INFINITE_SSTHRESH;
	g->cwnd_ok = tp->snd_cwnd <= TCP_INFINITE_SSTHRESH ? tp->snd_cwnd : 2;
}

/* first in every other hook */
static __always_inline void cc_guard(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct cc_guard *g = cc_guard_of(sk);
	bool ss_bad = tp->snd_ssthresh > TCP_INFINITE_SSTHRESH;

	if (ss_bad) {
		tp->snd_ssthresh = g->ssthresh_ok ? g->ssthresh_ok : TCP_INFINITE_SSTHRESH;
		__sync_fetch_and_add(&guard_ssthresh_repairs, 1);
	} else {
		g->ssthresh_ok = tp->snd_ssthresh;
	}
	if (tcp_snd_cwnd(tp) > TCP_INFINITE_SSTHRESH || (ss_bad && g->cwnd_ok && tcp_snd_cwnd(tp) > g->cwnd_ok)) {
		tcp_snd_cwnd_set(tp, g->cwnd_ok ? g->cwnd_ok : 2);
		__sync_fetch_and_add(&guard_cwnd_repairs, 1);
	} else if (!ss_bad) {
		g->cwnd_ok = tcp_snd_cwnd(tp);
	}
}

/* the body of the .min_tso_segs hook of every guarded port: the guard, then the kernel's default (tcp_tso_segs():
 * READ_ONCE(sock_net(sk)->ipv4.sysctl_tcp_min_tso_segs) when the congestion control has no such hook) */
static __always_inline __u32 cc_guard_min_tso_segs(struct sock *sk)
{
	cc_guard(sk);
	return BPF_CORE_READ(sk, __sk_common.skc_net.net, ipv4.sysctl_tcp_min_tso_segs);
}

#endif /* MPCC_CC_GUARD_H */
