// SPDX-License-Identifier: GPL-2.0
/*
 * Westwood+e (study 004) as a BPF struct_ops congestion control, registered as "westwood_e".
 *
 * Westwood+ (westwood.bpf.c: the bandwidth estimation, the RTT minimum and the loss response ssthresh = BWE * RTTmin,
 * shared code in westwood_bwe.h) with the increase phase replaced by study 004's eq. (8), the BIC-like logarithmic
 * increase of TCP Logwestwood+ (Kliazovich, Granelli, Miorandi 2005):
 *
 *     W <- W + max( (Wmax - W) / (alpha * W), 1 / W )          per ACK, in congestion avoidance   (8)
 *
 * "Wmax is the last congestion window when a packet loss was detected ... eq. (8) selects W by choosing a point
 * between the current W and Wmax, set by alpha. alpha controls the aggressiveness: doubled when a drop is detected
 * before W reaches Wmax, reduced by the same factor for every error-free increase in the same interval. The lower
 * bound is 2 (initial value) ... In this simulation alpha = 0.01" (study 004, section 2.4, our translation).
 *
 * Interpretation (docs/westwood-e.md gives the reasoning): per RTT (W ACKs) eq. (8) adds max((Wmax - W)/alpha, 1)
 * segments. Read literally with alpha = 0.01 that is 100 x the distance to Wmax per RTT, i.e. ~100 segments per ACK.
 * The paper's own words bound it: the new W is "a point between the current W and Wmax". So here:
 *   - below Wmax the window grows by (Wmax - W)/alpha per RTT but never past Wmax within that RTT, and by at most one
 *     segment per ACK (the kernel's tcp_cong_avoid_ai with a count of ACKs per segment, as tcp_bic.c's binary
 *     search does); with alpha = 0.01 that is slow-start-like growth straight back to Wmax;
 *   - at or above Wmax (or with no loss yet): 1/W per ACK, Reno's additive increase (the max(.., 1/W) term);
 *   - alpha adapts per connection as described: x2 on a loss that comes before W reached Wmax; /2 for each RTT of
 *     loss-free increase; never below min(alpha_init, 2) (the paper's lower bound 2 would forbid its own 0.01, so the
 *     configured value is the floor when it is smaller).
 * alpha is a build parameter, in hundredths: make -C testbed/cc WESTWOOD_E_ALPHA_X100=1 (default 1 = 0.01).
 * Slow start, ssthresh, undo and the loss response are Westwood+'s (kernel tcp_reno_* kfuncs and westwood_bwe.h).
 * Every hook first calls cc_guard() (cc_guard.h, docs/cc-guard.md), as westwood.bpf.c's do (with the same .set_state
 * and .min_tso_segs hooks).
 */
#include "westwood_bwe.h"

char _license[] SEC("license") = "GPL";

#ifndef WESTWOOD_E_ALPHA_X100
#define WESTWOOD_E_ALPHA_X100 1        /* alpha = 0.01, study 004's simulation value */
#endif
#define ALPHA_FLOOR_X100 (WESTWOOD_E_ALPHA_X100 < 200 ? WESTWOOD_E_ALPHA_X100 : 200)
#define ALPHA_MAX_X100 (1U << 20)

/* Westwood+'s state first (westwood_bwe.h reads it through inet_csk_ca), then eq. (8)'s */
struct bpf_westwood_e {
	struct bpf_westwood w;
	__u32 w_max;          /* cwnd at the last loss, segments (0: no loss yet) */
	__u32 alpha_x100;     /* alpha x 100 */
	__u32 round_end;      /* snd_nxt when the current RTT round started: an ACK past it ends the round */
	__u8  loss_in_round;  /* a loss happened in the current round */
};

CC_GUARD_FITS(struct bpf_westwood_e);   /* and so fits ICSK_CA_PRIV_SIZE */

SEC("struct_ops/westwood_e_init")
void BPF_PROG(westwood_e_init, struct sock *sk)
{
	struct bpf_westwood_e *e = inet_csk_ca(sk);

	westwood_init(sk);
	e->w_max = 0;
	e->alpha_x100 = WESTWOOD_E_ALPHA_X100;
	e->round_end = tcp_sk(sk)->snd_nxt;
	e->loss_in_round = 0;
	cc_guard_init(sk);
}

SEC("struct_ops/westwood_e_pkts_acked")
void BPF_PROG(westwood_e_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	cc_guard(sk);
	westwood_pkts_acked(sk, sample);
}

SEC("struct_ops/westwood_e_ack")
void BPF_PROG(westwood_e_ack, struct sock *sk, __u32 ack_flags)
{
	cc_guard(sk);
	westwood_ack(sk, ack_flags);
}

SEC("struct_ops/westwood_e_event")
void BPF_PROG(westwood_e_event, struct sock *sk, enum tcp_ca_event event)
{
	cc_guard(sk);
	westwood_event(sk, event);
}

/* Called once per loss episode (tcp_init_cwnd_reduction) before Westwood+ sets ssthresh from BWE * RTTmin
 * (CA_EVENT_LOSS / CA_EVENT_COMPLETE_CWR): record Wmax and adapt alpha. */
SEC("struct_ops/westwood_e_ssthresh")
__u32 BPF_PROG(westwood_e_ssthresh, struct sock *sk)
{
	struct bpf_westwood_e *e = inet_csk_ca(sk);
	__u32 cwnd;

	cc_guard(sk);
	cwnd = tcp_snd_cwnd(tcp_sk(sk));

	if (e->w_max && cwnd < e->w_max && e->alpha_x100 < ALPHA_MAX_X100)
		e->alpha_x100 *= 2;            /* a drop before W reached Wmax: gentler */
	e->w_max = cwnd;
	e->loss_in_round = 1;
	return tcp_reno_ssthresh(sk);
}

/* eq. (8) in congestion avoidance; Reno's slow start below ssthresh */
SEC("struct_ops/westwood_e_cong_avoid")
void BPF_PROG(westwood_e_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bpf_westwood_e *e = inet_csk_ca(sk);
	__u32 cwnd, cnt;

	cc_guard(sk);
	if (!tcp_is_cwnd_limited(sk))
		return;
	if (tcp_in_slow_start(tp)) {
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}
	/* an RTT round ends when the ACK passes what was outstanding at its start */
	if ((__s32)(ack - e->round_end) >= 0) {
		if (!e->loss_in_round && e->w_max && tcp_snd_cwnd(tp) < e->w_max) {
			e->alpha_x100 /= 2;    /* a loss-free increase: more aggressive */
			if (e->alpha_x100 < ALPHA_FLOOR_X100)
				e->alpha_x100 = ALPHA_FLOOR_X100;
		}
		e->loss_in_round = 0;
		e->round_end = tp->snd_nxt;
	}
	cwnd = tcp_snd_cwnd(tp);
	if (e->w_max > cwnd) {
		/* per RTT (cwnd ACKs) (Wmax - W) / alpha segments, i.e. one segment every
		 * cnt = W * alpha / (Wmax - W) ACKs; at least 1 (one segment per ACK, as tcp_bic.c), and growth stops at
		 * Wmax: the point eq. (8) chooses lies between W and Wmax */
		__u64 num = (__u64)cwnd * e->alpha_x100;
		__u64 den = (__u64)(e->w_max - cwnd) * 100;

		cnt = (__u32)(num / den);
		if (cnt < 1)
			cnt = 1;
		if (cnt > cwnd)
			cnt = cwnd;        /* the max(., 1/W) term: never slower than Reno */
	} else {
		cnt = cwnd;                /* at or above Wmax, or before the first loss: 1/W per ACK */
	}
	tcp_cong_avoid_ai(tp, cnt, acked);
	if (e->w_max > cwnd && tcp_snd_cwnd(tp) > e->w_max)
		tcp_snd_cwnd_set(tp, e->w_max);
}

SEC("struct_ops/westwood_e_undo_cwnd")
__u32 BPF_PROG(westwood_e_undo_cwnd, struct sock *sk)
{
	cc_guard(sk);
	return tcp_reno_undo_cwnd(sk);
}

/* the guard alone (cc_guard.h) */
SEC("struct_ops/westwood_e_state")
void BPF_PROG(westwood_e_state, struct sock *sk, __u8 new_state)
{
	cc_guard(sk);
}

/* not in the module: the guard before every transmission decision, returning the kernel's default (cc_guard.h) */
SEC("struct_ops/westwood_e_min_tso_segs")
__u32 BPF_PROG(westwood_e_min_tso_segs, struct sock *sk)
{
	return cc_guard_min_tso_segs(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops westwood_e = {
	.init		= (void *)westwood_e_init,
	.ssthresh	= (void *)westwood_e_ssthresh,
	.cong_avoid	= (void *)westwood_e_cong_avoid,
	.undo_cwnd	= (void *)westwood_e_undo_cwnd,
	.cwnd_event	= (void *)westwood_e_event,
	.in_ack_event	= (void *)westwood_e_ack,
	.pkts_acked	= (void *)westwood_e_pkts_acked,
	.set_state	= (void *)westwood_e_state,
	.min_tso_segs	= (void *)westwood_e_min_tso_segs,
	.flags		= TCP_CONG_NON_RESTRICTED,
	.name		= "westwood_e",
};
