// SPDX-License-Identifier: GPL-2.0
/*
 * BIC (Binary Increase Congestion control) as a BPF struct_ops congestion control, registered as "bic".
 *
 * A line-by-line port of Linux net/ipv4/tcp_bic.c (v6.1, the version Debian 12's kernel ships as the tcp_bic
 * module; the algorithm is unchanged up to 6.18): Lisong Xu, Khaled Harfoush and Injong Rhee, "Binary Increase
 * Congestion Control for Fast, Long Distance Networks", IEEE INFOCOM 2004. Original module by Stephen Hemminger.
 *
 * Differences from the module, all mechanical (none changes a computed value):
 * - the module parameters are constants at the module's defaults (module_param(..., 0644) there): edit and rebuild;
 * - struct bictcp is renamed struct bpf_bic (vmlinux.h already has tcp_cubic's struct bictcp);
 * - tcp_reno_undo_cwnd, tcp_slow_start and tcp_cong_avoid_ai are the kernel's own functions, called as kfuncs;
 * - the struct sets TCP_CONG_NON_RESTRICTED (see tcp_ca_helpers.h);
 * - every hook first calls cc_guard() (cc_guard.h, docs/cc-guard.md), and an .in_ack_event hook does only that, as does
 *   a .min_tso_segs hook that returns the kernel's default: the guard repairs the impossible ssthresh/cwnd a kernel
 *   defect writes now and then, and changes nothing otherwise.
 * Each function below keeps the module's name and body; "tcp_bic.c:" comments give the original's line numbers
 * (linux-source-6.1 6.1.192).
 */
#include "cc_guard.h"   /* tcp_ca_helpers.h and the kernel-defect guard every hook calls first */

char _license[] SEC("license") = "GPL";

#define BICTCP_BETA_SCALE    1024	/* Scale factor beta calculation
					 * max_cwnd = snd_cwnd * beta
					 */
#define BICTCP_B		4	 /*
					  * In binary search,
					  * go to point (max+min)/N
					  */

/* tcp_bic.c:29-34, module parameters at their defaults */
static const int fast_convergence = 1;
static const int max_increment = 16;
static const int low_window = 14;
static const int beta = 819;		/* = 819/1024 (BICTCP_BETA_SCALE) */
static const int initial_ssthresh;
static const int smooth_part = 20;

/* tcp_bic.c:49-58: BIC TCP Parameters */
struct bpf_bic {
	__u32	cnt;		/* increase cwnd by 1 after ACKs */
	__u32	last_max_cwnd;	/* last maximum snd_cwnd */
	__u32	last_cwnd;	/* the last snd_cwnd */
	__u32	last_time;	/* time when updated last_cwnd */
	__u32	epoch_start;	/* beginning of an epoch */
#define ACK_RATIO_SHIFT	4
	__u32	delayed_ack;	/* estimate the ratio of Packets/ACKs << 4 */
};

CC_GUARD_FITS(struct bpf_bic);

/* tcp_bic.c:60-68 */
static __always_inline void bictcp_reset(struct bpf_bic *ca)
{
	ca->cnt = 0;
	ca->last_max_cwnd = 0;
	ca->last_cwnd = 0;
	ca->last_time = 0;
	ca->epoch_start = 0;
	ca->delayed_ack = 2 << ACK_RATIO_SHIFT;
}

/* tcp_bic.c:70-78 */
SEC("struct_ops/bictcp_init")
void BPF_PROG(bictcp_init, struct sock *sk)
{
	struct bpf_bic *ca = inet_csk_ca(sk);

	bictcp_reset(ca);

	if (initial_ssthresh)
		tcp_sk(sk)->snd_ssthresh = initial_ssthresh;
	cc_guard_init(sk);
}

/*
 * Compute congestion window to use.
 * tcp_bic.c:83-138
 */
static __always_inline void bictcp_update(struct bpf_bic *ca, __u32 cwnd)
{
	if (ca->last_cwnd == cwnd &&
	    (__s32)(tcp_jiffies32 - ca->last_time) <= HZ / 32)
		return;

	ca->last_cwnd = cwnd;
	ca->last_time = tcp_jiffies32;

	if (ca->epoch_start == 0) /* record the beginning of an epoch */
		ca->epoch_start = tcp_jiffies32;

	/* start off normal */
	if (cwnd <= low_window) {
		ca->cnt = cwnd;
		return;
	}

	/* binary increase */
	if (cwnd < ca->last_max_cwnd) {
		__u32	dist = (ca->last_max_cwnd - cwnd)
			/ BICTCP_B;

		if (dist > max_increment)
			/* linear increase */
			ca->cnt = cwnd / max_increment;
		else if (dist <= 1U)
			/* binary search increase */
			ca->cnt = (cwnd * smooth_part) / BICTCP_B;
		else
			/* binary search increase */
			ca->cnt = cwnd / dist;
	} else {
		/* slow start AMD linear increase */
		if (cwnd < ca->last_max_cwnd + BICTCP_B)
			/* slow start */
			ca->cnt = (cwnd * smooth_part) / BICTCP_B;
		else if (cwnd < ca->last_max_cwnd + max_increment*(BICTCP_B-1))
			/* slow start */
			ca->cnt = (cwnd * (BICTCP_B-1))
				/ (cwnd - ca->last_max_cwnd);
		else
			/* linear increase */
			ca->cnt = cwnd / max_increment;
	}

	/* if in slow start or link utilization is very low */
	if (ca->last_max_cwnd == 0) {
		if (ca->cnt > 20) /* increase cwnd 5% per RTT */
			ca->cnt = 20;
	}

	ca->cnt = (ca->cnt << ACK_RATIO_SHIFT) / ca->delayed_ack;
	if (ca->cnt == 0)			/* cannot be zero */
		ca->cnt = 1;
}

/* tcp_bic.c:140-155 */
SEC("struct_ops/bictcp_cong_avoid")
void BPF_PROG(bictcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bpf_bic *ca = inet_csk_ca(sk);

	cc_guard(sk);
	if (!tcp_is_cwnd_limited(sk))
		return;

#ifdef BIC_LINUX_4_15
	/* Linux 4.15's tcp_bic.c:147-152 (bic415.bpf.c): slow start drops the segments ACKed beyond ssthresh, and
	 * congestion avoidance counts one segment per ACK whatever the ACK covers */
	if (tcp_in_slow_start(tp))
		tcp_slow_start(tp, acked);
	else {
		bictcp_update(ca, tcp_snd_cwnd(tp));
		tcp_cong_avoid_ai(tp, ca->cnt, 1);
	}
#else
	if (tcp_in_slow_start(tp)) {
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}
	bictcp_update(ca, tcp_snd_cwnd(tp));
	tcp_cong_avoid_ai(tp, ca->cnt, acked);
#endif
}

/*
 *	behave like Reno until low_window is reached,
 *	then increase congestion window slowly
 * tcp_bic.c:161-179
 */
SEC("struct_ops/bictcp_recalc_ssthresh")
__u32 BPF_PROG(bictcp_recalc_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct bpf_bic *ca = inet_csk_ca(sk);

	cc_guard(sk);
	ca->epoch_start = 0;	/* end of epoch */

	/* Wmax and fast convergence */
	if (tcp_snd_cwnd(tp) < ca->last_max_cwnd && fast_convergence)
		ca->last_max_cwnd = (tcp_snd_cwnd(tp) * (BICTCP_BETA_SCALE + beta))
			/ (2 * BICTCP_BETA_SCALE);
	else
		ca->last_max_cwnd = tcp_snd_cwnd(tp);

	if (tcp_snd_cwnd(tp) <= low_window)
		return max(tcp_snd_cwnd(tp) >> 1U, 2U);
	else
		return max((tcp_snd_cwnd(tp) * beta) / BICTCP_BETA_SCALE, 2U);
}

/* tcp_bic.c:181-185 */
SEC("struct_ops/bictcp_state")
void BPF_PROG(bictcp_state, struct sock *sk, __u8 new_state)
{
	cc_guard(sk);
	if (new_state == TCP_CA_Loss)
		bictcp_reset(inet_csk_ca(sk));
}

/* Track delayed acknowledgment ratio using sliding window
 * ratio = (15*ratio + sample) / 16
 * tcp_bic.c:190-200
 */
SEC("struct_ops/bictcp_acked")
void BPF_PROG(bictcp_acked, struct sock *sk, const struct ack_sample *sample)
{
	const struct inet_connection_sock *icsk = inet_csk(sk);

	cc_guard(sk);
	if (BPF_CORE_READ_BITFIELD(icsk, icsk_ca_state) == TCP_CA_Open) {
		struct bpf_bic *ca = inet_csk_ca(sk);

		ca->delayed_ack += sample->pkts_acked -
			(ca->delayed_ack >> ACK_RATIO_SHIFT);
	}
}

/* tcp_bic.c:202-211: .undo_cwnd = tcp_reno_undo_cwnd (the kernel's, as a kfunc) */
SEC("struct_ops/bictcp_undo_cwnd")
__u32 BPF_PROG(bictcp_undo_cwnd, struct sock *sk)
{
	cc_guard(sk);
	return tcp_reno_undo_cwnd(sk);
}

/* not in the module: the guard alone (cc_guard.h) */
SEC("struct_ops/bictcp_ack")
void BPF_PROG(bictcp_ack, struct sock *sk, __u32 ack_flags)
{
	cc_guard(sk);
}

/* not in the module: the guard before every transmission decision, returning the kernel's default (cc_guard.h) */
SEC("struct_ops/bictcp_min_tso_segs")
__u32 BPF_PROG(bictcp_min_tso_segs, struct sock *sk)
{
	return cc_guard_min_tso_segs(sk);
}

/* the struct_ops map's name is the congestion control's name (struct_ops_lib.sh finds a registered CC by it) */
#ifndef BIC_OPS
#define BIC_OPS bic
#endif
#define BIC_STR_(x) #x
#define BIC_STR(x) BIC_STR_(x)

SEC(".struct_ops")
struct tcp_congestion_ops BIC_OPS = {
	.init		= (void *)bictcp_init,
	.ssthresh	= (void *)bictcp_recalc_ssthresh,
	.cong_avoid	= (void *)bictcp_cong_avoid,
	.set_state	= (void *)bictcp_state,
	.undo_cwnd	= (void *)bictcp_undo_cwnd,
	.pkts_acked     = (void *)bictcp_acked,
	.in_ack_event	= (void *)bictcp_ack,
	.min_tso_segs	= (void *)bictcp_min_tso_segs,
	.flags		= TCP_CONG_NON_RESTRICTED,
	.name		= BIC_STR(BIC_OPS),
};
