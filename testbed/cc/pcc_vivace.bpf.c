// SPDX-License-Identifier: GPL-2.0
/*
 * PCC Vivace as PCC-Kernel's vivace module computes it, as a BPF struct_ops congestion control registered as
 * "pcc_vivace".
 *
 * A port of src/tcp_pcc.c of PCC-Kernel (github.com/PCCproject/PCC-Kernel, commit
 * ed39d0f0fa07e4a922e97dae0b531ccac8c976c9, a Vivace version of the module; Tomer Gilad, Nathan Jay, Nogah Frankel;
 * the file declares MODULE_LICENSE("Dual BSD/GPL")), the module that study 002 ran (its reference [5], "A PCC-Vivace
 * Kernel Module for Congestion Control"; which commit the study built is not known: docs/pcc-kernel-vivace-spec.md
 * section 1). This repository does not ship the module's code; testbed/cc/pcc-kernel/README.md says how to obtain the
 * file. "tcp_pcc.c:N-M" below are line numbers in that file, and each function here names the module function whose
 * results it computes. docs/pcc-kernel-vivace-spec.md specifies the module; docs/pcc-vivace.md lists what this port
 * cannot do identically and its expected effect. The Vivace paper / PCC-Uspace controller that was registered as
 * "pcc_vivace" before is testbed/cc/pcc_vivace_usp.bpf.c ("pcc_vivace_usp").
 *
 * Same results, this port's own code: every rule, constant and state variable of the module is here, with the
 * module's types and integer arithmetic wherever they decide a value (C division truncating toward zero, u32
 * truncations, unsigned wrap-around of the packet counters; the Makefile builds this file with -fwrapv, as Linux builds
 * the module with -fno-strict-overflow). Names, structure and the way each rule is written are this port's: where the
 * module computes a value it never uses, or writes a field that is overwritten before anyone reads it, the port leaves
 * it out. tests/test_pcc_vivace_equivalence.py checks, event by event, that both compute the same socket outputs and
 * the same state (field by field: the comments at struct vv_mi and struct vv_state give the module's names).
 * Differences, all mechanical:
 * 1. State: the module's struct pcc_data lives in a BPF_MAP_TYPE_SK_STORAGE map (struct vv_state), with its
 *    2 x 4 intervals inline, instead of icsk_ca_priv plus a kzalloc()ed array (BPF cannot allocate; 8 intervals of 80
 *    bytes do not fit the 104-byte icsk_ca_priv). The storage's existence stands for "intervals != NULL" in
 *    pcc_valid(). Interval indices are masked with VV_MI_MASK (0..7, the size of the module's array) so that the
 *    verifier sees them bounded; the module's indices never leave 0..3 (docs/pcc-vivace.md).
 * 2. The utility function pointer (util_func, always the Vivace utility) is a direct call; the Allegro utility and
 *    pcc_exp(), which the vivace version never calls, are not ported.
 * 3. Signed 64-bit division goes through vv_sdiv() (C's truncation toward zero): BPF before cpu v4 has no signed
 *    division instruction.
 * 4. The module's one random byte (get_random_bytes()) is the low byte of bpf_get_prandom_u32().
 * 5. tcp_packets_in_flight() (an inline of include/net/tcp.h) is re-implemented below.
 * 6. The cmpxchg() on sk_pacing_status is a test and a store (.init runs with the socket locked).
 * 7. Dropped: the printk() lines and the debug counters they print (id, decisions_count); the values the vivace
 *    version computes and never uses (adjust_utility, prev_adjust_utility and extra_rate in pcc_decide_slow_start());
 *    the unused field packets_sent; last_decision, which nothing in the module writes, so that it is always
 *    PCC_RATE_UP (pcc_decide_moving() compares with it: here, "the new rate is higher"); the empty .cong_avoid,
 *    .pkts_acked, .in_ack_event and .cwnd_event (a BPF congestion control needs only one of .cong_avoid and
 *    .cong_control); .release (kfree of the intervals: the storage goes with the socket, and .init zeroes it as
 *    kzalloc() does).
 * 8. .cong_control reads only its first argument (struct sock *sk), as the module ignores the rate_sample: the
 *    same object loads on 6.1 (.cong_control(sk, rs)) and >= 6.10 (.cong_control(sk, ack, flag, rs)).
 * 9. Name "pcc_vivace" instead of "pcc", so that the module and the port can be registered side by side.
 */
#include "tcp_ca_helpers.h"

char _license[] SEC("license") = "GPL";

/* The module's constants (tcp_pcc.c:33-58, 236-237 are Allegro's), under this port's names. */
#define VV_PROBE_MIS 4			/* PCC_INTERVALS: a probing round is two pairs of monitor intervals (MIs) */
#define VV_NR_MI (2 * VV_PROBE_MIS)	/* the module allocates twice PCC_INTERVALS (tcp_pcc.c:729) */
#define VV_MI_MASK (VV_NR_MI - 1)
#define VV_PROBE_PCT 5			/* PCC_PROBING_EPS / PCC_PROBING_EPS_PART: probes at +-5 % */
#define VV_MILLI 1000			/* PCC_SCALE: ratios, utilities and gradients are in thousandths */
#define VV_MIN_RATE 1024u		/* PCC_RATE_MIN, bytes/s: the pacing floor */
#define VV_START_RATE (VV_MIN_RATE * 512)	/* tcp_pcc.c:741: every flow starts at 524288 bytes/s */
#define VV_FLOOR_PKTS 2			/* PCC_RATE_MIN_PACKETS_PER_RTT: a move never goes below 2 packets per srtt */
#define VV_MI_MIN_SEGS 50		/* PCC_INTERVAL_MIN_PACKETS */
#define VV_EDGE_PKTS 10			/* the literal 10 of tcp_pcc.c:630 and :702 (PCC_IGNORE_PACKETS is unused) */
#define VV_GRAD_GAIN 25			/* PCC_GRAD_STEP_SIZE */
#define VV_SWING_MAX 2			/* PCC_MAX_SWING_BUFFER */
#define VV_LAT_NOISE 30			/* PCC_LAT_INFL_FILTER: |latency inflation| < 3 % counts as none */
#define VV_GRAD_MIN_DIFF 20		/* PCC_MIN_RATE_DIFF_RATIO_FOR_GRAD: no gradient from rates < 2 % apart */
#define VV_BOUND_MIN 100		/* PCC_MIN_CHANGE_BOUND */
#define VV_BOUND_STEP 70		/* PCC_CHANGE_BOUND_STEP */
#define VV_AMP_START 2			/* PCC_AMP_MIN */
#define VV_LAT_COEF 900			/* utility coefficients, literals of tcp_pcc.c:314 */
#define VV_LOSS_COEF 11
#define VV_START_LOSS_IGNORE 100	/* tcp_pcc.c:311: while starting, loss below 10 % counts as none */

/* The kernel's constants with the kernel's types: include/vdso/time64.h USEC_PER_MSEC and USEC_PER_SEC are signed
 * long (tcp_ca_helpers.h's USEC_PER_SEC is unsigned; the module's signed divisions need the signed one). */
#define VV_USEC_PER_MSEC 1000LL
#define VV_USEC_PER_SEC 1000000LL
#define TCP_INFINITE_SSTHRESH 0x7fffffff
#define VV_S64_MIN (-(__s64)(~0ULL >> 1) - 1)

/* One monitor interval: the module's struct pcc_interval (tcp_pcc.c:68-86); its field names in brackets. */
struct vv_mi {
	__u64 target;		/* [rate] the rate it is paced at, bytes/s */
	__s64 ack_t0, ack_t1;	/* [recv_start, recv_end] tcp_mstamp at its first and latest counted ACK, us */
	__s64 tx_t0, tx_t1;	/* [send_start, send_end] tcp_mstamp when it started and stopped sending */
	__s64 srtt0, srtt1;	/* [start_rtt, end_rtt] srtt (us) at its first and latest counted ACK */
	__u32 segs_from;	/* [packets_sent_base] data_segs_out when it started, at least 1 (0: not started) */
	__u32 segs_to;		/* [packets_ended] data_segs_out when it stopped sending (0: still sending) */
	__s64 utility;		/* [utility] */
	__u32 lost;		/* [lost] segments marked lost while it collected */
	__u32 delivered;	/* [delivered] segments delivered while it collected */
};

/* The per-socket state: the module's struct pcc_data (tcp_pcc.c:89-121) without the fields of difference 7. */
struct vv_state {
	struct vv_mi mi[VV_NR_MI];	/* [intervals] */
	int tx_mi;			/* [send_index] the MI being sent */
	int rx_mi;			/* [recive_index] the MI collecting ACKs */
	__s64 rate;			/* [rate] bytes/s */
	__s64 prev_rate;		/* [last_rate] */
	bool starting;			/* [start_mode] */
	bool moving;			/* [moving] following the gradient */
	bool in_loss;			/* [loss_state] between an RTO and the end of TCP_CA_Loss */
	bool idle;			/* [wait] no MI is being sent: pace at .rate */
	__u32 lost_seen;		/* [lost_base] tp->lost at the previous ACK */
	__u32 delivered_seen;		/* [delivered_base] tp->delivered at the previous ACK */
	__u32 counted;			/* [packets_counted] tp->delivered + tp->lost - .spare */
	__u32 spare;			/* [spare] what the loss episodes took out of that count */
	__s32 amp;			/* [amplifier] */
	__s32 swing;			/* [swing_buffer] */
	__s32 bound;			/* [change_bound] largest change per step, in thousandths of the rate */
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct vv_state);
} pcc_vivace_state SEC(".maps");

/* Difference 3: n / d as C computes it for signed 64-bit values (the quotient truncated toward zero), for BPF without
 * the cpu-v4 sdiv instruction. The module never divides by zero (every divisor is tested there, or is a constant, a
 * rate or an RTT that is never 0); BPF would give 0 where the kernel would trap. */
static __always_inline __s64 vv_sdiv(__s64 n, __s64 d)
{
	__u64 abs_n = n < 0 ? 0 - (__u64)n : (__u64)n;
	__u64 abs_d = d < 0 ? 0 - (__u64)d : (__u64)d;
	__u64 q = abs_n / abs_d;

	return (n < 0) == (d < 0) ? (__s64)q : (__s64)(0 - q);
}

/* -bound < v < bound: the module's test "v < bound && v > -1 * bound" (false for every v when bound <= 0) */
static __always_inline bool vv_inside(__s64 v, __s64 bound)
{
	return v > -bound && v < bound;
}

/* Difference 5: include/net/tcp.h tcp_packets_in_flight(), "packets_out - tcp_left_out(tp) + retrans_out" */
static __always_inline unsigned int tcp_packets_in_flight(const struct tcp_sock *tp)
{
	return tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out;
}

/* pcc_get_rtt() (tcp_pcc.c:126-137): srtt in us, at least 1; 1 ms while the socket has no RTT sample */
static __always_inline __u32 vv_rtt_us(const struct tcp_sock *tp)
{
	__u32 us = tp->srtt_us >> 3;

	if (!tp->srtt_us)
		return VV_USEC_PER_MSEC;
	return us ? us : 1;
}

/* pcc_set_cwnd() (tcp_pcc.c:139-155): twice the pacing rate's bytes per srtt, in segments, at least 4, then truncated
 * to u32 and capped by snd_cwnd_clamp. The products and quotients are u64, in the module's order. */
static __always_inline void vv_fit_cwnd(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u64 segs = (__u64)sk->sk_pacing_rate * vv_rtt_us(tp) / tp->mss_cache / USEC_PER_SEC * 2;
	__u32 w;

	if (segs < 4)
		segs = 4;
	w = (__u32)segs;
	tp->snd_cwnd = w < tp->snd_cwnd_clamp ? w : tp->snd_cwnd_clamp;
}

/* pcc_valid() (tcp_pcc.c:158-162); the storage stands for the module's intervals array (difference 1) */
static __always_inline bool vv_valid(const struct vv_state *st)
{
	return st && st->mi[0].target;
}

/* pcc_setup_intervals_probing() (tcp_pcc.c:168-198): a probing round of two pairs around .rate, r * 105 / 100 and
 * r * 95 / 100 (s64 products, u64 quotients); bit p of one random byte puts the lower rate first in pair p. */
static __always_inline void vv_arm_probes(struct vv_state *st)
{
	__u64 above = (__u64)(st->rate * (100 + VV_PROBE_PCT)) / 100;
	__u64 below = (__u64)(st->rate * (100 - VV_PROBE_PCT)) / 100;
	__u32 coin = bpf_get_prandom_u32();	/* difference 4: bits 0 and 1 are used */
	int p;

	for (p = 0; p < VV_PROBE_MIS / 2; p++) {
		struct vv_mi *lead = &st->mi[2 * p];
		struct vv_mi *next = &st->mi[2 * p + 1];
		bool lower_first = (coin >> p) & 1;

		lead->target = lower_first ? below : above;
		next->target = lower_first ? above : below;
		lead->segs_from = 0;
		next->segs_from = 0;
	}
	st->tx_mi = 0;
	st->rx_mi = 0;
	st->idle = false;
}

/* pcc_setup_intervals_moving() (tcp_pcc.c:200-208): a single MI at .rate */
static __always_inline void vv_arm_move(struct vv_state *st)
{
	st->mi[0].target = st->rate;
	st->mi[0].segs_from = 0;
	st->tx_mi = 0;
	st->rx_mi = 0;
	st->idle = false;
}

/* start_interval() (tcp_pcc.c:210-231): unless idle, the MI at tx_mi starts sending now and sets the rate; otherwise
 * .rate does. The pacing rate is that rate, at least the floor and at most SO_MAX_PACING_RATE; then cwnd follows. */
static __always_inline void vv_pace(struct sock *sk, struct vv_state *st)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u64 bps = st->rate;

	if (!st->idle) {
		struct vv_mi *mi = &st->mi[st->tx_mi & VV_MI_MASK];

		mi->segs_from = tp->data_segs_out ? tp->data_segs_out : 1;
		mi->segs_to = 0;
		mi->lost = 0;
		mi->delivered = 0;
		mi->tx_t0 = tp->tcp_mstamp;
		bps = mi->target;
	}
	if (bps < VV_MIN_RATE)
		bps = VV_MIN_RATE;
	if (bps > sk->sk_max_pacing_rate)
		bps = sk->sk_max_pacing_rate;
	sk->sk_pacing_rate = bps;
	vv_fit_cwnd(sk);
}

/* pcc_calc_utility_vivace() (tcp_pcc.c:266-322), in s64. In real units u = x (1 - 900 dRTT/dT - 11 L), x the MI's
 * target rate in bytes/s; dRTT/dT the change of srtt over the MI's ACKs divided by its sending time (in thousandths),
 * counted as 0 when the srtt change is under two packets' time at the MI's goodput, and when under 3 %; L = lost /
 * (lost + delivered) in thousandths. While starting, a negative dRTT/dT and L under 10 % count as 0. An MI that
 * delivered nothing has utility 0. */
static __always_inline void vv_utility(const struct vv_state *st, struct vv_mi *mi, const struct sock *sk)
{
	__s64 mss = tcp_sk(sk)->mss_cache;
	__s64 dlv = mi->delivered;
	__s64 lost = mi->lost;
	__s64 x = mi->target;
	__s64 tx_us = mi->tx_t1 - mi->tx_t0;
	__s64 rx_us = mi->ack_t1 - mi->ack_t0;
	__s64 d_srtt = mi->srtt1 - mi->srtt0;
	__s64 goodput = 0, two_pkts_us = 0, infl = 0, loss;

	if (!dlv) {
		mi->utility = 0;
		return;
	}
	if (rx_us > 0)
		goodput = vv_sdiv(VV_USEC_PER_SEC * dlv * mss, rx_us);
	if (goodput > 0)
		two_pkts_us = vv_sdiv(2 * VV_USEC_PER_SEC * mss, goodput);
	if (tx_us > 0 && !vv_inside(d_srtt, two_pkts_us))
		infl = vv_sdiv(VV_MILLI * d_srtt, tx_us);
	if (vv_inside(infl, VV_LAT_NOISE) || (infl < 0 && st->starting))
		infl = 0;

	loss = vv_sdiv(lost * VV_MILLI, lost + dlv);
	if (st->starting && loss < VV_START_LOSS_IGNORE)
		loss = 0;

	mi->utility = x - vv_sdiv(x * (VV_LAT_COEF * infl + VV_LOSS_COEF * loss), VV_MILLI);
}

/* pcc_calc_util_grad() (tcp_pcc.c:254-264): d(utility)/d(rate) in millionths, or 0 when the two rates are less than
 * 2 % apart (measured against r_a) */
static __always_inline __s64 vv_grad(__s64 r_a, __s64 u_a, __s64 r_b, __s64 u_b)
{
	__s64 dr = r_b - r_a;

	if (vv_inside(vv_sdiv(VV_MILLI * dr, r_a), VV_GRAD_MIN_DIFF))
		return 0;
	return vv_sdiv(VV_MILLI * VV_MILLI * (u_b - u_a), dr);
}

/* pcc_decide_rate() (tcp_pcc.c:373-397): both pairs must prefer the same direction; then the winner of the second pair
 * becomes .prev_rate and lends its utility to MI 0, and its rate is the result. Returned as u32, as the module does
 * (rates above 2^32 bytes/s are truncated there too). */
static __always_inline __u32 vv_probe_verdict(struct vv_state *st)
{
	bool first_pair_lead_won = st->mi[0].utility > st->mi[1].utility;
	bool second_pair_lead_won = st->mi[2].utility > st->mi[3].utility;
	bool same_lead_rate = st->mi[0].target == st->mi[2].target;
	struct vv_mi *winner;

	if ((first_pair_lead_won == second_pair_lead_won) != same_lead_rate)
		return st->rate;
	winner = second_pair_lead_won ? &st->mi[2] : &st->mi[3];
	st->prev_rate = winner->target;
	st->mi[0].utility = winner->utility;
	return winner->target;
}

/* pcc_decide() (tcp_pcc.c:399-427): the four probing MIs are scored; a verdict other than the current rate starts a
 * move (its first MI is still paced at the old rate: vv_arm_move() runs before .rate changes), otherwise the probing
 * starts over. */
static __always_inline void vv_probes_done(struct sock *sk, struct vv_state *st)
{
	__u32 verdict;

	/* the four probes, written out (a loop here stays a loop in the BPF object, which the verifier then walks) */
	vv_utility(st, &st->mi[0], sk);
	vv_utility(st, &st->mi[1], sk);
	vv_utility(st, &st->mi[2], sk);
	vv_utility(st, &st->mi[3], sk);
	verdict = vv_probe_verdict(st);
	if (verdict == st->rate) {
		vv_arm_probes(st);
	} else {
		st->moving = true;
		vv_arm_move(st);
	}
	st->rate = verdict;
	vv_pace(sk, st);
}

/* pcc_update_step_params() (tcp_pcc.c:429-443): a step against the direction of the last rate change resets the
 * amplifier and the change bound and fills the swing buffer (up to 2); a step along it first empties the swing buffer,
 * then raises the amplifier. A zero step counts as downward. */
static __always_inline void vv_adapt_gain(struct vv_state *st, __s64 step)
{
	if ((step > 0) != (st->rate > st->prev_rate)) {
		st->swing = st->swing < VV_SWING_MAX ? st->swing + 1 : VV_SWING_MAX;
		st->amp = VV_AMP_START;
		st->bound = VV_BOUND_MIN;
	} else if (st->swing > 0) {
		st->swing--;
	} else {
		st->amp++;
	}
}

/* pcc_apply_change_bound() (tcp_pcc.c:445-466): a step larger than .bound thousandths of the rate is cut to that and
 * widens the bound by 7 %; any other step resets the bound to 10 %. The sign is kept (zero counts as negative). */
static __always_inline __s64 vv_bound_step(struct vv_state *st, __s64 step)
{
	bool down = step <= 0;
	__s64 size = down ? -step : step;

	if (!st->rate)
		return step;
	if (vv_sdiv(VV_MILLI * size, st->rate) > st->bound) {
		size = vv_sdiv(st->rate * st->bound, VV_MILLI);
		st->bound += VV_BOUND_STEP;
	} else {
		st->bound = VV_BOUND_MIN;
	}
	return down ? -size : size;
}

/* pcc_decide_rate_moving() (tcp_pcc.c:468-505): the gradient between this MI (at .rate) and the previous one (at
 * .prev_rate, with the utility MI 0 held before) times 25, times the amplifier, in thousandths, bounded; at least 2.2 %
 * of the rate either way (a zero gradient steps up). Returned as u32, as the module does. */
static __always_inline __u32 vv_move_target(struct sock *sk, struct vv_state *st)
{
	struct vv_mi *mi = &st->mi[0];
	__s64 held = mi->utility;
	__s64 step, least;

	vv_utility(st, mi, sk);
	step = vv_grad(st->rate, mi->utility, st->prev_rate, held) * VV_GRAD_GAIN;
	vv_adapt_gain(st, step);
	step = vv_bound_step(st, vv_sdiv(step * st->amp, VV_MILLI));

	least = vv_sdiv(st->rate * VV_GRAD_MIN_DIFF, VV_MILLI) * 11;	/* the 2 % gradient spacing, plus a tenth */
	least = vv_sdiv(least, 10);
	if (step >= 0) {
		if (step < least)
			step = least;
	} else if (step > -least) {
		step = -least;
	}
	return st->rate + step;
}

/* pcc_decide_moving() (tcp_pcc.c:507-538): the move goes on while the new rate is higher (the module compares the
 * direction with last_decision, which stays PCC_RATE_UP: difference 7); otherwise the new rate is kept and probed
 * around (USE_PROBING is defined). Either way the new rate is at least 2 packets per srtt. */
static __always_inline void vv_move_done(struct sock *sk, struct vv_state *st)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__s64 next = vv_move_target(sk, st);
	bool higher = next > st->rate;
	__s64 floor = vv_sdiv(VV_USEC_PER_SEC * VV_FLOOR_PKTS * tp->mss_cache, vv_rtt_us(tp));

	st->prev_rate = st->rate;
	st->rate = next > floor ? next : floor;
	if (higher) {
		vv_arm_move(st);
	} else {
		st->moving = false;
		vv_arm_probes(st);
	}
	vv_pace(sk, st);
}

/* pcc_decide_slow_start() (tcp_pcc.c:540-597): while each MI's utility beats the one before, the rate grows by half
 * (one MI at a time); the first MI that does not ends the start, back at the rate before, probing (USE_PROBING). */
static __always_inline void vv_start_done(struct sock *sk, struct vv_state *st)
{
	struct vv_mi *mi = &st->mi[0];
	__s64 held = mi->utility;
	__s64 before = st->prev_rate;

	vv_utility(st, mi, sk);
	st->prev_rate = st->rate;
	if (mi->utility > held) {
		st->rate += vv_sdiv(st->rate, 2);
		vv_arm_move(st);	/* its segs_from = 0 is overwritten by vv_pace() below, as in the module */
	} else {
		st->rate = before;
		st->starting = false;
		vv_arm_probes(st);
	}
	vv_pace(sk, st);
}

/* send_interval_ended() and start_next_send_interval() (tcp_pcc.c:605-621, 633-645): the MI being sent stops once it
 * has sent 50 segments (counted as int) and the count of delivered + lost has passed its start; the next one starts,
 * or, after the fourth probe or while starting or moving, the socket idles at .rate. */
static __always_inline void vv_check_sent(struct sock *sk, struct vv_state *st)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct vv_mi *mi = &st->mi[st->tx_mi & VV_MI_MASK];

	if ((int)(tp->data_segs_out - mi->segs_from) < VV_MI_MIN_SEGS || st->counted <= mi->segs_from)
		return;
	mi->segs_to = tp->data_segs_out;
	mi->tx_t1 = tp->tcp_mstamp;
	st->tx_mi++;
	if (st->tx_mi == VV_PROBE_MIS || st->starting || st->moving)
		st->idle = true;
	vv_pace(sk, st);
}

/* pcc_update_interval() (tcp_pcc.c:647-669): the ACK's time and srtt (the first ones too, if the MI has counted
 * nothing yet) and the increments of tp->lost and tp->delivered since the previous ACK (u32) */
static __always_inline void vv_collect(struct vv_mi *mi, const struct vv_state *st, const struct tcp_sock *tp)
{
	if ((__u32)(mi->lost + mi->delivered) == 0) {
		mi->ack_t0 = tp->tcp_mstamp;
		mi->srtt0 = tp->srtt_us >> 3;
	}
	mi->ack_t1 = tp->tcp_mstamp;
	mi->srtt1 = tp->srtt_us >> 3;
	mi->lost += tp->lost - st->lost_seen;
	mi->delivered += tp->delivered - st->delivered_seen;
}

/* pcc_process() (tcp_pcc.c:671-718), on every ACK: cwnd follows the pacing rate; outside a loss episode the MI being
 * sent may stop, and the MI collecting ACKs (once started) counts the ACK when the count had passed 10 packets beyond
 * its start, and closes when the count passes its last segment less 10, which calls the decision of the current
 * mode. The counters of the previous ACK are kept in all cases. */
static __always_inline void vv_on_ack(struct sock *sk, struct vv_state *st)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct vv_mi *mi;
	__u32 counted_before;

	if (!vv_valid(st))
		return;
	vv_fit_cwnd(sk);
	if (!st->in_loss) {
		if (!st->idle)
			vv_check_sent(sk, st);
		mi = &st->mi[st->rx_mi & VV_MI_MASK];
		counted_before = st->counted;
		st->counted = tp->delivered + tp->lost - st->spare;
		if (mi->segs_from) {
			if (counted_before > mi->segs_from + VV_EDGE_PKTS)
				vv_collect(mi, st, tp);
			if (mi->segs_to && mi->segs_to - VV_EDGE_PKTS < st->counted) {
				st->rx_mi++;	/* recive_interval_ended(): the decision of the current mode */
				if (st->starting)
					vv_start_done(sk, st);
				else if (st->moving)
					vv_move_done(sk, st);
				else if (st->rx_mi == VV_PROBE_MIS)
					vv_probes_done(sk, st);
			}
		}
	}
	st->lost_seen = tp->lost;
	st->delivered_seen = tp->delivered;
}

/* .cong_control: pcc_process_sample() (tcp_pcc.c:720-723), which ignores the rate_sample (difference 8) */
SEC("struct_ops/vv_cong_control")
void BPF_PROG(vv_cong_control, struct sock *sk)
{
	vv_on_ack(sk, bpf_sk_storage_get(&pcc_vivace_state, sk, NULL, 0));
}

/* .init: pcc_init() (tcp_pcc.c:725-757). The storage is created zeroed and zeroed again on a re-initialisation, as the
 * module's state starts from the kernel's zeroed icsk_ca_priv and kzalloc(); without it (allocation failed) the
 * socket keeps its defaults and every other hook does nothing, as the module's "init fails". */
SEC("struct_ops/vv_init")
void BPF_PROG(vv_init, struct sock *sk)
{
	struct vv_state *st = bpf_sk_storage_get(&pcc_vivace_state, sk, NULL, BPF_SK_STORAGE_GET_F_CREATE);

	if (!st)
		return;
	__builtin_memset(st, 0, sizeof(*st));
	st->rate = VV_START_RATE;
	st->prev_rate = VV_START_RATE;
	st->starting = true;
	st->amp = VV_AMP_START;
	st->bound = VV_BOUND_MIN;
	st->mi[0].utility = VV_S64_MIN;	/* so that the first MI's utility is a rise */
	tcp_sk(sk)->snd_ssthresh = TCP_INFINITE_SSTHRESH;
	vv_arm_probes(st);
	vv_pace(sk, st);
	if (sk->sk_pacing_status == SK_PACING_NONE)	/* difference 6 */
		sk->sk_pacing_status = SK_PACING_NEEDED;
}

/* .undo_cwnd: pcc_undo_cwnd() (tcp_pcc.c:766-772) keeps cwnd as it is */
SEC("struct_ops/vv_undo_cwnd")
__u32 BPF_PROG(vv_undo_cwnd, struct sock *sk)
{
	return tcp_sk(sk)->snd_cwnd;
}

/* .ssthresh: pcc_ssthresh() (tcp_pcc.c:774-777); the rate, not ssthresh, governs */
SEC("struct_ops/vv_ssthresh")
__u32 BPF_PROG(vv_ssthresh, struct sock *sk)
{
	return TCP_INFINITE_SSTHRESH;
}

/* .set_state: pcc_set_state() (tcp_pcc.c:779-807; the module's literal state 4 is TCP_CA_Loss). Entering
 * TCP_CA_Loss freezes the MIs (idle at .rate); leaving it sets up a new probing round, start_mode and moving untouched.
 * On leaving, .spare becomes delivered + lost + in flight - data_segs_out (mod 2^32): the module's three s32/u32
 * steps add (that - .spare) to .spare, which is the same. */
SEC("struct_ops/vv_set_state")
void BPF_PROG(vv_set_state, struct sock *sk, __u8 new_state)
{
	struct vv_state *st = bpf_sk_storage_get(&pcc_vivace_state, sk, NULL, 0);
	struct tcp_sock *tp = tcp_sk(sk);

	if (!vv_valid(st))
		return;
	if (new_state == TCP_CA_Loss) {
		if (st->in_loss)
			return;
		st->in_loss = true;
		st->idle = true;
	} else {
		if (!st->in_loss)
			return;
		st->spare = tp->delivered + tp->lost + tcp_packets_in_flight(tp) - tp->data_segs_out;
		st->in_loss = false;
		vv_arm_probes(st);
	}
	vv_pace(sk, st);
}

/* the hooks the module fills with code (tcp_pcc.c:825-841; difference 7) */
SEC(".struct_ops")
struct tcp_congestion_ops pcc_vivace = {
	.flags		= TCP_CONG_NON_RESTRICTED,
	.name		= "pcc_vivace",
	.init		= (void *)vv_init,
	.cong_control	= (void *)vv_cong_control,
	.undo_cwnd	= (void *)vv_undo_cwnd,
	.ssthresh	= (void *)vv_ssthresh,
	.set_state	= (void *)vv_set_state,
};
