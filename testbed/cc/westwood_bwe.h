/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Westwood+'s bandwidth estimation and loss response, shared by westwood.bpf.c (TCP Westwood+, a line-by-line port of
 * Linux net/ipv4/tcp_westwood.c v6.1) and westwood_e.bpf.c (Westwood+e: the same estimator with study 004's
 * increase). Moved here verbatim from westwood.bpf.c; the four struct_ops callbacks of the original
 * (tcp_westwood_init, _pkts_acked, _ack, _event) are the static functions westwood_init, westwood_pkts_acked,
 * westwood_ack and westwood_event, which each port's BPF_PROG calls. "tcp_westwood.c:" comments give the original's
 * line numbers (linux-source-6.1 6.1.192).
 */
#ifndef MPCC_WESTWOOD_BWE_H
#define MPCC_WESTWOOD_BWE_H

#include "cc_guard.h"   /* tcp_ca_helpers.h and the kernel-defect guard every hook calls first */

/* tcp_westwood.c:31-44: TCP Westwood structure */
struct bpf_westwood {
	__u32    bw_ns_est;        /* first bandwidth estimation..not too smoothed 8) */
	__u32    bw_est;           /* bandwidth estimate */
	__u32    rtt_win_sx;       /* here starts a new evaluation... */
	__u32    bk;
	__u32    snd_una;          /* used for evaluating the number of acked bytes */
	__u32    cumul_ack;
	__u32    accounted;
	__u32    rtt;
	__u32    rtt_min;          /* minimum observed RTT */
	__u8     first_ack;        /* flag which infers that this is the first ack */
	__u8     reset_rtt_min;    /* Reset RTT min to next RTT sample*/
};

/* tcp_westwood.c:46-48: TCP Westwood functions and constants */
#define TCP_WESTWOOD_RTT_MIN   (HZ/20)	/* 50ms */
#define TCP_WESTWOOD_INIT_RTT  (20*HZ)	/* maybe too conservative?! */

/*
 * @tcp_westwood_create
 * This function initializes fields used in TCP Westwood+,
 * it is called after the initial SYN, so the sequence numbers
 * are correct but new passive connections we have no
 * information about RTTmin at this time so we simply set it to
 * TCP_WESTWOOD_INIT_RTT. This value was chosen to be too conservative
 * since in this way we're sure it will be updated in a consistent
 * way as soon as possible. It will reasonably happen within the first
 * RTT period of the connection lifetime.
 * tcp_westwood.c:61-75
 */
static __always_inline void westwood_init(struct sock *sk)
{
	struct bpf_westwood *w = inet_csk_ca(sk);

	w->bk = 0;
	w->bw_ns_est = 0;
	w->bw_est = 0;
	w->accounted = 0;
	w->cumul_ack = 0;
	w->reset_rtt_min = 1;
	w->rtt_min = w->rtt = TCP_WESTWOOD_INIT_RTT;
	w->rtt_win_sx = tcp_jiffies32;
	w->snd_una = tcp_sk(sk)->snd_una;
	w->first_ack = 1;
}

/*
 * @westwood_do_filter
 * Low-pass filter. Implemented using constant coefficients.
 * tcp_westwood.c:81-84
 */
static __always_inline __u32 westwood_do_filter(__u32 a, __u32 b)
{
	return ((7 * a) + b) >> 3;
}

/* tcp_westwood.c:86-96 */
static __always_inline void westwood_filter(struct bpf_westwood *w, __u32 delta)
{
	/* If the filter is empty fill it with the first sample of bandwidth  */
	if (w->bw_ns_est == 0 && w->bw_est == 0) {
		w->bw_ns_est = w->bk / delta;
		w->bw_est = w->bw_ns_est;
	} else {
		w->bw_ns_est = westwood_do_filter(w->bw_ns_est, w->bk / delta);
		w->bw_est = westwood_do_filter(w->bw_est, w->bw_ns_est);
	}
}

/*
 * @westwood_pkts_acked
 * Called after processing group of packets.
 * but all westwood needs is the last sample of srtt.
 * tcp_westwood.c:103-110
 */
static __always_inline void westwood_pkts_acked(struct sock *sk, const struct ack_sample *sample)
{
	struct bpf_westwood *w = inet_csk_ca(sk);

	if (sample->rtt_us > 0)
		w->rtt = usecs_to_jiffies(sample->rtt_us);
}

/*
 * @westwood_update_window
 * It updates RTT evaluation window if it is the right moment to do
 * it. If so it calls filter for evaluating bandwidth.
 * tcp_westwood.c:117-146
 */
static __always_inline void westwood_update_window(struct sock *sk)
{
	struct bpf_westwood *w = inet_csk_ca(sk);
	__s32 delta = tcp_jiffies32 - w->rtt_win_sx;

	/* Initialize w->snd_una with the first acked sequence number in order
	 * to fix mismatch between tp->snd_una and w->snd_una for the first
	 * bandwidth sample
	 */
	if (w->first_ack) {
		w->snd_una = tcp_sk(sk)->snd_una;
		w->first_ack = 0;
	}

	/*
	 * See if a RTT-window has passed.
	 * Be careful since if RTT is less than
	 * 50ms we don't filter but we continue 'building the sample'.
	 * This minimum limit was chosen since an estimation on small
	 * time intervals is better to avoid...
	 * Obviously on a LAN we reasonably will always have
	 * right_bound = left_bound + WESTWOOD_RTT_MIN
	 */
	if (w->rtt && delta > max_t(__u32, w->rtt, TCP_WESTWOOD_RTT_MIN)) {
		westwood_filter(w, delta);

		w->bk = 0;
		w->rtt_win_sx = tcp_jiffies32;
	}
}

/* tcp_westwood.c:148-155 */
static __always_inline void update_rtt_min(struct bpf_westwood *w)
{
	if (w->reset_rtt_min) {
		w->rtt_min = w->rtt;
		w->reset_rtt_min = 0;
	} else
		w->rtt_min = min(w->rtt, w->rtt_min);
}

/*
 * @westwood_fast_bw
 * It is called when we are in fast path. In particular it is called when
 * header prediction is successful. In such case in fact update is
 * straight forward and doesn't need any particular care.
 * tcp_westwood.c:163-173
 */
static __always_inline void westwood_fast_bw(struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct bpf_westwood *w = inet_csk_ca(sk);

	westwood_update_window(sk);

	w->bk += tp->snd_una - w->snd_una;
	w->snd_una = tp->snd_una;
	update_rtt_min(w);
}

/*
 * @westwood_acked_count
 * This function evaluates cumul_ack for evaluating bk in case of
 * delayed or partial acks.
 * tcp_westwood.c:180-209
 */
static __always_inline __u32 westwood_acked_count(struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct bpf_westwood *w = inet_csk_ca(sk);

	w->cumul_ack = tp->snd_una - w->snd_una;

	/* If cumul_ack is 0 this is a dupack since it's not moving
	 * tp->snd_una.
	 */
	if (!w->cumul_ack) {
		w->accounted += tp->mss_cache;
		w->cumul_ack = tp->mss_cache;
	}

	if (w->cumul_ack > tp->mss_cache) {
		/* Partial or delayed ack */
		if (w->accounted >= w->cumul_ack) {
			w->accounted -= w->cumul_ack;
			w->cumul_ack = tp->mss_cache;
		} else {
			w->cumul_ack -= w->accounted;
			w->accounted = 0;
		}
	}

	w->snd_una = tp->snd_una;

	return w->cumul_ack;
}

/*
 * TCP Westwood
 * Here limit is evaluated as Bw estimation*RTTmin (for obtaining it
 * in packets we use mss_cache). Rttmin is guaranteed to be >= 2
 * so avoids ever returning 0.
 * tcp_westwood.c:217-223
 */
static __always_inline __u32 tcp_westwood_bw_rttmin(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	const struct bpf_westwood *w = inet_csk_ca(sk);

	return max_t(__u32, (w->bw_est * w->rtt_min) / tp->mss_cache, 2);
}

/* tcp_westwood.c:225-238 */
static __always_inline void westwood_ack(struct sock *sk, __u32 ack_flags)
{
	if (ack_flags & CA_ACK_SLOWPATH) {
		struct bpf_westwood *w = inet_csk_ca(sk);

		westwood_update_window(sk);
		w->bk += westwood_acked_count(sk);

		update_rtt_min(w);
		return;
	}

	westwood_fast_bw(sk);
}

/* tcp_westwood.c:240-259 */
static __always_inline void westwood_event(struct sock *sk, enum tcp_ca_event event)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bpf_westwood *w = inet_csk_ca(sk);

	switch (event) {
	case CA_EVENT_COMPLETE_CWR:
		tp->snd_ssthresh = tcp_westwood_bw_rttmin(sk);
		tcp_snd_cwnd_set(tp, tp->snd_ssthresh);
		break;
	case CA_EVENT_LOSS:
		tp->snd_ssthresh = tcp_westwood_bw_rttmin(sk);
		/* Update RTT_min when next ack arrives */
		w->reset_rtt_min = 1;
		break;
	default:
		/* don't care */
		break;
	}
}

#endif /* MPCC_WESTWOOD_BWE_H */
