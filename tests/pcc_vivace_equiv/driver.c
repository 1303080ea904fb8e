// SPDX-License-Identifier: GPL-2.0
/* Differential check of testbed/cc/pcc_vivace.bpf.c against PCC-Kernel's tcp_pcc.c (tests/test_pcc_vivace_equivalence.py).
 *
 * Events. A sequence starts a socket (.init) and then feeds it random events: ACKs (packets sent, delivered and marked
 * lost, the clock, srtt, the in-flight counters; .cong_control), RTOs and the state changes after them, other
 * set_state calls, the kernel setting cwnd, SO_MAX_PACING_RATE, MSS changes, re-initialisation (a new
 * setsockopt(TCP_CONGESTION)), and calls of .undo_cwnd and .ssthresh. Scenarios vary loss, clock steps, RTT noise, MSS,
 * counters starting just below 2^32 (wrap-around), no RTT sample at .init, pacing caps and cwnd clamps, and a failed
 * allocation at .init. An event is a set of socket fields to assign and a hook to call (struct event); a sequence ends
 * after EVENTS events or once the rate passes 2^36 bytes/s (the module would go on until its s64 arithmetic wraps).
 *
 * Modes:
 *   driver live SEQUENCES EVENTS SEED    the module and the port side by side (needs the module: mod_glue.c linked):
 *                                        after every event the socket (all fields) and the whole algorithm state
 *                                        (struct equiv_state) must be equal. Prints "port NAME mismatches N events M"
 *                                        and "coverage RULE COUNT" lines.
 *   driver record SEED EVENTS SEQ[:CAP]... the module alone (needs mod_glue.c): writes a trace of sequences SEQ... of
 *                                        SEED to stdout (format below), each at most EVENTS (or CAP) events long.
 *   driver replay [port|module]          reads a trace on stdin and replays it on one side (default: the port),
 *                                        comparing what the side computes with what the trace recorded. Prints
 *                                        "replay NAME sequences S events M checkpoints C mismatches N" and coverage.
 *   driver scan SEED FIRST COUNT EVENTS  the module alone: per sequence, its length, trace size and the rules reached
 *                                        (to choose the sequences a trace holds).
 * Exit status 0 when nothing differed, 1 otherwise, 2 on a usage or format error.
 *
 * Trace format (text, one line per item; tests/pcc_vivace_equiv/traces/README.md):
 *   "# ..."                  a comment (the first line names the format: "# pcc_vivace_equiv trace 1")
 *   event line               KIND [rHEX] [ASSIGNMENTS] | [CHANGES] [qUNDO,SSTHRESH] #TAG
 *     KIND: I0 / I1 .init of a new socket (1: its allocation fails; rHEX seeds the random source), A an ACK
 *     (.cong_control), Sn .set_state(n), N socket fields only, R re-initialisation, Q .undo_cwnd and .ssthresh.
 *     ASSIGNMENTS: the socket fields the event sets before the hook, each as its key (a-p, fld[] below) and the signed
 *     difference to the field's value before the event (modulo the field's width; a new socket starts all 0).
 *     CHANGES: every field the hook changed, upper-case key and signed difference (pacing rate, pacing status, cwnd,
 *     ssthresh: a hook that changed another field would show here too). q: the two return values.
 *     TAG: the low 16 bits of the state digest after the event (chain_hash() below), 4 hex digits.
 *   "F #DIGEST v0 ... v112"  after the event before it: the 64-bit state digest and the whole algorithm state
 *                            (state_fields() order, decimal); every CHECKPOINT events and after a sequence's last event
 *   "X N"                    the sequence ended after N events (not counting the .init) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "equiv.h"

u64 equiv_rng_state[2];

#define CHECKPOINT 500
#ifndef MISMATCH_REPORTS
#define MISMATCH_REPORTS 5	/* mismatches printed in detail */
#endif

/* ---- the event generator's random source (splitmix64), seeded per sequence ---- */
static u64 gen;
static u64 rnd64(void)
{
	u64 z = (gen += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}
static u64 rnd(u64 n)	/* 0 .. n-1 */
{
	return n ? rnd64() % n : 0;
}
static int chance(double p)
{
	return (double)(rnd64() >> 11) / 9007199254740992.0 < p;
}
static void seed_sequence(u64 seed, unsigned long seq)
{
	gen = seed * 0x100000001b3ULL ^ ((u64)seq * 0xd1b54a32d192ed03ULL);
	rnd64();
}

/* ---- the socket fields, by key ---- */
enum { F_STATUS, F_PACING, F_MAX_PACING, F_MSS, F_CWND, F_CLAMP, F_SSTHRESH, F_SRTT, F_PACKETS_OUT, F_SACKED_OUT,
       F_LOST_OUT, F_RETRANS_OUT, F_SEGS_OUT, F_DELIVERED, F_LOST, F_MSTAMP, F_N };
static const struct {
	size_t off;
	int size;
	const char *name;
} fld[F_N] = {
#define FLD(member, name) { offsetof(struct tcp_sock, member), (int)sizeof(((struct tcp_sock *)0)->member), name }
	FLD(sk.sk_pacing_status, "sk_pacing_status"), FLD(sk.sk_pacing_rate, "sk_pacing_rate"),
	FLD(sk.sk_max_pacing_rate, "sk_max_pacing_rate"), FLD(mss_cache, "mss_cache"), FLD(snd_cwnd, "snd_cwnd"),
	FLD(snd_cwnd_clamp, "snd_cwnd_clamp"), FLD(snd_ssthresh, "snd_ssthresh"), FLD(srtt_us, "srtt_us"),
	FLD(packets_out, "packets_out"), FLD(sacked_out, "sacked_out"), FLD(lost_out, "lost_out"),
	FLD(retrans_out, "retrans_out"), FLD(data_segs_out, "data_segs_out"), FLD(delivered, "delivered"),
	FLD(lost, "lost"), FLD(tcp_mstamp, "tcp_mstamp"),
#undef FLD
};

static u64 fget(const struct tcp_sock *tp, int f)
{
	const char *p = (const char *)tp + fld[f].off;
	u32 v32;
	u64 v64;

	if (fld[f].size == 4) {
		memcpy(&v32, p, 4);
		return v32;
	}
	memcpy(&v64, p, 8);
	return v64;
}

static void fset(struct tcp_sock *tp, int f, u64 v)
{
	char *p = (char *)tp + fld[f].off;
	u32 v32 = (u32)v;

	if (fld[f].size == 4)
		memcpy(p, &v32, 4);
	else
		memcpy(p, &v, 8);
}

/* new - old as a signed value of the field's width */
static long long fdelta(int f, u64 from, u64 to)
{
	return fld[f].size == 4 ? (long long)(s32)(u32)(to - from) : (long long)(to - from);
}

/* ---- the algorithm state in canonical order ---- */
#define NSTATE (1 + 8 * 12 + 16)
static const char *const iv_name[12] = { "rate", "recv_start", "recv_end", "send_start", "send_end", "start_rtt",
					 "end_rtt", "sent_base", "sent_end", "utility", "lost", "delivered" };
static const int iv_size[12] = { 8, -8, -8, -8, -8, -8, -8, 4, 4, -8, 4, 4 };	/* bytes; negative: signed */
static const char *const top_name[16] = { "send_index", "recv_index", "rate", "last_rate", "start_mode", "moving",
					  "loss_state", "wait", "last_decision", "lost_base", "delivered_base",
					  "counted", "spare", "amplifier", "swing_buffer", "change_bound" };
static const int top_size[16] = { -4, -4, -8, -8, 1, 1, 1, 1, -4, 4, 4, 4, 4, -4, -4, -4 };

static int state_size(int i)
{
	if (i == 0)
		return 1;
	if (i <= 96)
		return iv_size[(i - 1) % 12];
	return top_size[i - 97];
}

static void state_name(int i, char *buf, size_t n)
{
	if (i == 0)
		snprintf(buf, n, "valid");
	else if (i <= 96)
		snprintf(buf, n, "interval[%d].%s", (i - 1) / 12, iv_name[(i - 1) % 12]);
	else
		snprintf(buf, n, "%s", top_name[i - 97]);
}

/* the values, each as a u64 holding the field's bits (signed fields sign-extended) */
static void state_fields(const struct equiv_state *s, u64 v[NSTATE])
{
	int n = 0, k;

	v[n++] = (u64)(s->valid != 0);
	for (k = 0; k < 8; k++) {
		const struct equiv_interval *iv = &s->iv[k];

		v[n++] = iv->rate;
		v[n++] = (u64)iv->recv_start;
		v[n++] = (u64)iv->recv_end;
		v[n++] = (u64)iv->send_start;
		v[n++] = (u64)iv->send_end;
		v[n++] = (u64)iv->start_rtt;
		v[n++] = (u64)iv->end_rtt;
		v[n++] = iv->sent_base;
		v[n++] = iv->sent_end;
		v[n++] = (u64)iv->utility;
		v[n++] = iv->lost;
		v[n++] = iv->delivered;
	}
	v[n++] = (u64)(s64)s->send_index;
	v[n++] = (u64)(s64)s->recv_index;
	v[n++] = (u64)s->rate;
	v[n++] = (u64)s->last_rate;
	v[n++] = (u64)(s->start_mode != 0);
	v[n++] = (u64)(s->moving != 0);
	v[n++] = (u64)(s->loss_state != 0);
	v[n++] = (u64)(s->wait != 0);
	v[n++] = (u64)(s64)s->last_decision;
	v[n++] = s->lost_base;
	v[n++] = s->delivered_base;
	v[n++] = s->counted;
	v[n++] = s->spare;
	v[n++] = (u64)(s64)s->amplifier;
	v[n++] = (u64)(s64)s->swing_buffer;
	v[n++] = (u64)(s64)s->change_bound;
}

/* The state digest, chained over a sequence: 64-bit FNV-1a over the previous digest (8 bytes, little-endian) and the
 * state's canonical bytes (each field little-endian in its width, state_size()). A sequence starts from FNV's offset
 * basis. An event line holds the low 16 bits, a state line all 64. Chained, a difference in the state at one event
 * changes every later digest: an event line catches it with probability 1 - 2^-16, each later one again, and the next
 * state line (at most CHECKPOINT events later) for certain, with the values that differ. */
#define CHAIN_START 0xcbf29ce484222325ULL
static u64 chain_hash(u64 prev, const struct equiv_state *s)
{
	u64 v[NSTATE], h = CHAIN_START;
	int i, b, w;

	for (b = 0; b < 8; b++) {
		h ^= (u8)(prev >> (8 * b));
		h *= 0x100000001b3ULL;
	}
	state_fields(s, v);
	for (i = 0; i < NSTATE; i++) {
		w = abs(state_size(i));
		for (b = 0; b < w; b++) {
			h ^= (u8)(v[i] >> (8 * b));
			h *= 0x100000001b3ULL;
		}
	}
	return h;
}

static void print_state_value(FILE *out, int i, u64 v)
{
	if (state_size(i) < 0)
		fprintf(out, " %lld", (long long)v);
	else
		fprintf(out, " %llu", (unsigned long long)v);
}

/* ---- events ---- */
struct event {
	char kind;	/* I A S N R Q (file comment) */
	int arg;	/* S: the new state; I: 1 if the allocation fails */
	u64 rng;	/* I: seed of the side's random source */
	u32 set;	/* bit f: val[f] is assigned to field f before the hook */
	u64 val[F_N];
};

/* assign the event's fields, call its hook; ret: .undo_cwnd and .ssthresh for Q */
static void apply(const struct equiv_side *side, struct tcp_sock *tp, const struct event *ev, u32 ret[2])
{
	int f;

	for (f = 0; f < F_N; f++)
		if (ev->set & (1u << f))
			fset(tp, f, ev->val[f]);
	switch (ev->kind) {
	case 'I':
		equiv_rng_state[side->rng] = ev->rng;
		*side->alloc_fail = ev->arg;
		side->init(&tp->sk);
		*side->alloc_fail = 0;
		break;
	case 'A':
		side->cong_control(&tp->sk);
		break;
	case 'S':
		side->set_state(&tp->sk, (u8)ev->arg);
		break;
	case 'R':
		/* tcp_reinit_congestion_control(): .release, icsk_ca_priv zeroed, .init. The BPF port has no .release; its
		 * storage stays and its .init zeroes it. */
		if (side->release)
			side->release(&tp->sk);
		memset(tp->icsk_ca_priv, 0, sizeof(tp->icsk_ca_priv));
		side->init(&tp->sk);
		break;
	case 'Q':
		ret[0] = side->undo_cwnd(&tp->sk);
		ret[1] = side->ssthresh(&tp->sk);
		break;
	}
}

/* one event on one side: pre, the socket before; mid, after the event's assignments (before the hook); tp, after the
 * hook; a, the state after; *chain, the state digest after */
static void step(const struct equiv_side *side, struct tcp_sock *tp, const struct event *ev, struct tcp_sock *pre,
		 struct tcp_sock *mid, u32 ret[2], struct equiv_state *a, u64 *chain)
{
	int f;

	*pre = *tp;
	*mid = *tp;
	for (f = 0; f < F_N; f++)
		if (ev->set & (1u << f))
			fset(mid, f, ev->val[f]);
	apply(side, tp, ev, ret);
	side->dump(&tp->sk, a);
	*chain = chain_hash(*chain, a);
}

struct scenario {
	double p_loss, p_rto;
	u32 dt_max, jitter, burst;
	int ca_state;
};

#define SET(f, v) do { fset(&t, (f), (u64)(v)); ev->val[f] = fget(&t, (f)); ev->set |= 1u << (f); } while (0)

/* the first event of a sequence: a new socket and its .init */
static void gen_init(struct scenario *sc, struct event *ev)
{
	static const double p_loss_v[] = { 0, 0.002, 0.02, 0.2 };
	static const u32 dt_v[] = { 50, 500, 5000, 50000 };
	static const u32 jit_v[] = { 0, 10, 300, 5000 };
	static const double p_rto_v[] = { 0, 1e-4, 2e-3 };
	static const u32 burst_v[] = { 3, 7, 25 };
	struct tcp_sock t;
	u32 base, rtt_us;

	memset(&t, 0, sizeof(t));
	memset(ev, 0, sizeof(*ev));
	ev->kind = 'I';
	sc->p_loss = p_loss_v[rnd(4)];
	sc->p_rto = p_rto_v[rnd(3)];
	sc->dt_max = dt_v[rnd(4)];
	sc->jitter = jit_v[rnd(4)];
	sc->burst = burst_v[rnd(3)];
	sc->ca_state = TCP_CA_Open;
	base = chance(0.3) ? (u32)(0u - 1 - rnd(20000)) : (u32)rnd(1000);
	rtt_us = chance(0.5) ? 1 + rnd(200) : 1 + rnd(300000);
	ev->rng = rnd64() | 1;
	SET(F_MSS, chance(0.7) ? 1448 : chance(0.5) ? 536 : 88 + rnd(9000));
	SET(F_CWND, 10);
	SET(F_CLAMP, chance(0.9) ? ~0U : 4 + rnd(2000));
	SET(F_SSTHRESH, 0x7fffffff);
	SET(F_MAX_PACING, chance(0.9) ? ~0UL : 1 + rnd(200000000));
	SET(F_PACING, ~0UL);
	SET(F_STATUS, chance(0.2) ? SK_PACING_FQ : SK_PACING_NONE);
	SET(F_SRTT, chance(0.05) ? 0 : rtt_us << 3);
	SET(F_SEGS_OUT, base + 10);
	SET(F_DELIVERED, base + 1);
	SET(F_LOST, base);
	SET(F_MSTAMP, rnd(1ULL << 40));
	ev->arg = chance(0.01);	/* the allocation at .init fails: the socket stays inert */
}

/* the in-flight counters (read only by .set_state, through tcp_packets_in_flight()), drawn afresh for a state change */
#define SET_IN_FLIGHT(out) do { SET(F_PACKETS_OUT, (out)); SET(F_SACKED_OUT, rnd((out) / 4 + 1ULL)); \
				SET(F_LOST_OUT, rnd((out) / 8 + 1ULL)); SET(F_RETRANS_OUT, rnd(t.lost_out + 1ULL)); } while (0)

/* the next event, from the reference socket as it is now */
static void gen_next(const struct tcp_sock *ref, struct scenario *sc, struct event *ev)
{
	struct tcp_sock t = *ref;
	double r = (double)(rnd64() >> 11) / 9007199254740992.0;
	u32 out = t.data_segs_out - t.delivered - t.lost;	/* sent, neither delivered nor marked lost */

	memset(ev, 0, sizeof(*ev));
	if (r < 0.001) {
		ev->kind = 'S';
		sc->ca_state = (int)rnd(5);
		ev->arg = sc->ca_state;
		SET_IN_FLIGHT(out);
	} else if (r < 0.0015) {
		ev->kind = 'N';		/* the kernel sets cwnd */
		SET(F_CWND, 1 + rnd(3000));
	} else if (r < 0.002) {
		u64 cap = chance(0.5) ? ~0UL : 1 + rnd(300000000);

		ev->kind = 'N';		/* SO_MAX_PACING_RATE */
		SET(F_MAX_PACING, cap);
		SET(F_PACING, t.sk.sk_pacing_rate < cap ? t.sk.sk_pacing_rate : cap);
	} else if (r < 0.0022) {
		ev->kind = 'R';
	} else if (r < 0.003) {
		ev->kind = 'Q';
	} else if (r < 0.0035) {
		ev->kind = 'N';		/* the MSS changes */
		SET(F_MSS, chance(0.5) ? 1448 : 88 + rnd(9000));
	} else if (sc->ca_state != TCP_CA_Loss && chance(sc->p_rto)) {
		/* RTO: tcp_enter_loss() marks what is out lost, sets cwnd = in flight + 1, calls set_state */
		ev->kind = 'S';
		ev->arg = TCP_CA_Loss;
		SET(F_PACKETS_OUT, out);
		SET(F_SACKED_OUT, rnd(out / 4 + 1ULL));
		SET(F_LOST, t.lost + rnd((u64)out + 1));
		SET(F_LOST_OUT, out);
		SET(F_RETRANS_OUT, 0);
		SET(F_CWND, 1 + rnd(4));
		sc->ca_state = TCP_CA_Loss;
	} else if (sc->ca_state == TCP_CA_Loss && chance(0.01)) {
		ev->kind = 'S';		/* the loss state ends */
		sc->ca_state = chance(0.7) ? TCP_CA_Open : (int)rnd(4);
		ev->arg = sc->ca_state;
		SET_IN_FLIGHT(out);
	} else {
		/* an ACK: packets sent (also retransmissions), delivered, marked lost; the clock and srtt move. The
		 * in-flight counters stay as the last state change left them (.cong_control does not read them). */
		u32 sent = (u32)rnd(chance(0.05) ? 5ULL * sc->burst : sc->burst);
		u32 d, l = 0;
		s64 srtt;

		ev->kind = 'A';
		SET(F_SEGS_OUT, t.data_segs_out + sent);
		out += sent;
		d = (u32)rnd((out < 12 ? out : 12) + 1ULL);
		if (chance(sc->p_loss))
			l = (u32)rnd((out - d < 4 ? out - d : 4) + 1ULL);
		SET(F_DELIVERED, t.delivered + d);
		SET(F_LOST, t.lost + l);
		SET(F_MSTAMP, t.tcp_mstamp + 1 + rnd(sc->dt_max));
		if (t.srtt_us || chance(0.01)) {
			srtt = (s64)(t.srtt_us >> 3) + (s64)rnd(2ULL * sc->jitter + 1) - (s64)sc->jitter;
			if (chance(0.001))
				srtt *= 3;	/* a queue builds */
			if (srtt < 1)
				srtt = 1;
			if (srtt > 4000000)
				srtt = 4000000;
			SET(F_SRTT, (u32)srtt << 3);
		}
	}
}
#undef SET_IN_FLIGHT
#undef SET

/* ---- which rules of the module were reached ---- */
enum cov {
	COV_START_GROW, COV_START_EXIT, COV_PROBE_AGREE, COV_PROBE_DISAGREE, COV_MOVE_ON, COV_MOVE_END,
	COV_LOSS_ENTER, COV_LOSS_EXIT, COV_LOSS_EXIT_STARTING, COV_LOSS_EXIT_MOVING, COV_BOUND_CAPPED, COV_SWING,
	COV_AMP5, COV_RATE_ABOVE_U32, COV_UTIL_NO_DELIVERY, COV_UTIL_PENALISED, COV_CWND_CLAMPED, COV_PACING_CAPPED,
	COV_PACKET_MIN_RATE, COV_NO_RTT_SAMPLE, COV_COUNTER_WRAP, COV_INIT_FAILED, COV_REINIT, COV_N
};
static const char *cov_name[COV_N] = {
	"starting_grows_1.5x", "starting_ends", "probing_agrees", "probing_disagrees", "moving_continues",
	"moving_ends", "loss_enter", "loss_exit", "loss_exit_still_starting", "loss_exit_still_moving",
	"change_bound_capped", "swing_buffer_positive", "amplifier_ge_5", "rate_above_2^32", "utility_no_delivery",
	"utility_penalised", "cwnd_clamped", "pacing_capped", "moving_packet_min_rate", "no_rtt_sample",
	"counter_wrap", "init_failed", "reinit",
};
static unsigned long cov[COV_N];
static long first_hit[COV_N];	/* scan: the event of the sequence that first reached each rule, -1 if none */

/* b, a: the state before and after the event; pre, tp: the socket before the event's assignments and after its hook */
static void observe(const struct event *ev, const struct equiv_state *b, const struct equiv_state *a,
		    const struct tcp_sock *pre, const struct tcp_sock *tp)
{
	switch (ev->kind) {
	case 'I':
		if (!tp->srtt_us)
			cov[COV_NO_RTT_SAMPLE]++;
		if (ev->arg)
			cov[COV_INIT_FAILED]++;
		goto socket;
	case 'R':
		cov[COV_REINIT]++;
		goto socket;
	case 'S':
		if (!b->loss_state && a->loss_state)
			cov[COV_LOSS_ENTER]++;
		if (b->loss_state && !a->loss_state) {
			cov[COV_LOSS_EXIT]++;
			if (a->start_mode)
				cov[COV_LOSS_EXIT_STARTING]++;
			if (a->moving)
				cov[COV_LOSS_EXIT_MOVING]++;
		}
		goto socket;
	case 'A':
		if (tp->delivered < pre->delivered || tp->lost < pre->lost)
			cov[COV_COUNTER_WRAP]++;
		break;
	}
	if (!b->valid || !a->valid)
		goto socket;
	if (b->start_mode && a->start_mode && a->rate > b->rate)
		cov[COV_START_GROW]++;
	if (b->start_mode && !a->start_mode)
		cov[COV_START_EXIT]++;
	if (!b->start_mode && !b->moving && a->moving)
		cov[COV_PROBE_AGREE]++;
	if (!b->start_mode && !b->moving && !a->moving && b->recv_index == 3 && a->recv_index == 0)
		cov[COV_PROBE_DISAGREE]++;
	if (b->moving && a->moving && a->rate != b->rate)
		cov[COV_MOVE_ON]++;
	if (b->moving && !a->moving)
		cov[COV_MOVE_END]++;
	if (b->moving && a->rate != b->rate) {
		u32 rtt = tp->srtt_us ? ((tp->srtt_us >> 3) ? (tp->srtt_us >> 3) : 1) : 1000;

		if (a->rate == (s64)(1000000L * 2 * tp->mss_cache) / rtt)
			cov[COV_PACKET_MIN_RATE]++;
	}
	if (a->change_bound > 100 && a->change_bound != b->change_bound)
		cov[COV_BOUND_CAPPED]++;
	if (a->swing_buffer > 0 && b->swing_buffer == 0)
		cov[COV_SWING]++;
	if (a->amplifier >= 5 && b->amplifier < 5)
		cov[COV_AMP5]++;
	if (a->rate > 0xffffffffLL && b->rate <= 0xffffffffLL)
		cov[COV_RATE_ABOVE_U32]++;
	if (a->iv[0].utility != b->iv[0].utility || a->iv[3].utility != b->iv[3].utility) {
		for (int i = 0; i < 4; i++) {
			if (a->iv[i].delivered == 0 && a->iv[i].utility == 0 && a->iv[i].sent_end)
				cov[COV_UTIL_NO_DELIVERY]++;
			if (a->iv[i].delivered && a->iv[i].utility < (s64)a->iv[i].rate)
				cov[COV_UTIL_PENALISED]++;
		}
	}
socket:
	if (tp->snd_cwnd == tp->snd_cwnd_clamp && tp->snd_cwnd_clamp != ~0U)
		cov[COV_CWND_CLAMPED]++;
	if (tp->sk.sk_pacing_rate == tp->sk.sk_max_pacing_rate && tp->sk.sk_max_pacing_rate != ~0UL)
		cov[COV_PACING_CAPPED]++;
}

static void print_coverage(void)
{
	for (int i = 0; i < COV_N; i++)
		printf("coverage %s %lu\n", cov_name[i], cov[i]);
}

/* beyond any real rate: the sequence ends */
static int runaway(const struct equiv_state *a)
{
	return a->rate > (1LL << 36) || a->rate < 0;
}

static const char *kind_name(char k)
{
	switch (k) {
	case 'I': return ".init";
	case 'A': return "ack";
	case 'S': return "set_state";
	case 'N': return "socket fields";
	case 'R': return "re-initialisation";
	case 'Q': return "undo_cwnd/ssthresh";
	}
	return "?";
}

/* ---- live: the module and the port side by side ---- */
static unsigned long mismatches;

static int compare_live(const struct tcp_sock *m, const struct tcp_sock *p, const u32 mret[2], const u32 pret[2],
			const struct event *ev, unsigned long seq, unsigned long evno)
{
	struct equiv_state a, b;
	u64 va[NSTATE], vb[NSTATE];
	int f, i, bad = 0;
	char name[64];

	equiv_module_side.dump((struct sock *)&m->sk, &a);
	equiv_port_side.dump((struct sock *)&p->sk, &b);
	state_fields(&a, va);
	state_fields(&b, vb);
	for (f = 0; f < F_N; f++)
		bad |= fget(m, f) != fget(p, f);
	for (i = 0; i < NSTATE; i++)
		bad |= va[i] != vb[i];
	if (ev->kind == 'Q')
		bad |= mret[0] != pret[0] || mret[1] != pret[1];
	if (!bad)
		return 0;
	if (mismatches < MISMATCH_REPORTS) {
		printf("MISMATCH seq %lu event %lu (%s), module / port:", seq, evno, kind_name(ev->kind));
		for (f = 0; f < F_N; f++)
			if (fget(m, f) != fget(p, f))
				printf(" %s %llu / %llu", fld[f].name, (unsigned long long)fget(m, f),
				       (unsigned long long)fget(p, f));
		for (i = 0; i < NSTATE; i++)
			if (va[i] != vb[i]) {
				state_name(i, name, sizeof(name));
				printf(" %s %lld / %lld", name, (long long)va[i], (long long)vb[i]);
			}
		if (ev->kind == 'Q')
			printf(" returns %u,%u / %u,%u", mret[0], mret[1], pret[0], pret[1]);
		printf("\n");
	}
	mismatches++;
	return 1;
}

static unsigned long live_sequence(u64 seed, unsigned long seq, unsigned long events)
{
	struct tcp_sock *m = calloc(1, sizeof(*m)), *p = calloc(1, sizeof(*p)), pre;
	struct scenario sc;
	struct event ev;
	struct equiv_state b, a;
	u32 mret[2] = { 0, 0 }, pret[2] = { 0, 0 };
	unsigned long n = 0;

	seed_sequence(seed, seq);
	gen_init(&sc, &ev);
	memset(&b, 0, sizeof(b));
	for (;;) {
		pre = *m;
		apply(&equiv_module_side, m, &ev, mret);
		apply(&equiv_port_side, p, &ev, pret);
		if (compare_live(m, p, mret, pret, &ev, seq, n))
			break;
		equiv_module_side.dump(&m->sk, &a);
		observe(&ev, &b, &a, &pre, m);
		if (runaway(&a) || n == events)
			break;
		b = a;
		gen_next(m, &sc, &ev);
		n++;
	}
	equiv_module_side.destroy(&m->sk);
	equiv_port_side.destroy(&p->sk);
	free(m);
	free(p);
	return n;
}

/* ---- record: the module alone, writing a trace ---- */
static void write_event(FILE *out, const struct event *ev, const struct tcp_sock *pre, const struct tcp_sock *mid,
			const struct tcp_sock *post, const u32 ret[2], u64 chain)
{
	int f;

	fputc(ev->kind, out);
	if (ev->kind == 'S' || ev->kind == 'I')
		fprintf(out, "%d", ev->arg);
	if (ev->kind == 'I')
		fprintf(out, " r%llx", (unsigned long long)ev->rng);
	for (f = 0; f < F_N; f++)
		if ((ev->set & (1u << f)) && fget(mid, f) != fget(pre, f))
			fprintf(out, " %c%lld", 'a' + f, fdelta(f, fget(pre, f), fget(mid, f)));
	fputs(" |", out);
	for (f = 0; f < F_N; f++)
		if (fget(post, f) != fget(mid, f))
			fprintf(out, " %c%lld", 'A' + f, fdelta(f, fget(mid, f), fget(post, f)));
	if (ev->kind == 'Q')
		fprintf(out, " q%u,%u", ret[0], ret[1]);
	fprintf(out, " #%04x\n", (u32)chain & 0xffff);
}

static void write_state(FILE *out, const struct equiv_state *a, u64 chain)
{
	u64 v[NSTATE];

	state_fields(a, v);
	fprintf(out, "F #%016llx", (unsigned long long)chain);
	for (int i = 0; i < NSTATE; i++)
		print_state_value(out, i, v[i]);
	fputc('\n', out);
}

static unsigned long record_sequence(FILE *out, u64 seed, unsigned long seq, unsigned long events)
{
	const struct equiv_side *side = &equiv_module_side;
	struct tcp_sock *tp = calloc(1, sizeof(*tp)), pre, mid;
	struct scenario sc;
	struct event ev;
	struct equiv_state b, a;
	u32 ret[2] = { 0, 0 };
	unsigned long n = 0;
	u64 chain = CHAIN_START;
	int f;

	seed_sequence(seed, seq);
	gen_init(&sc, &ev);
	fprintf(out, "# sequence %llu/%lu: p_loss %g p_rto %g dt_max %u us jitter %u us burst %u\n",
		(unsigned long long)seed, seq, sc.p_loss, sc.p_rto, sc.dt_max, sc.jitter, sc.burst);
	memset(&b, 0, sizeof(b));
	for (;;) {
		step(side, tp, &ev, &pre, &mid, ret, &a, &chain);
		write_event(out, &ev, &pre, &mid, tp, ret, chain);
		{
			unsigned long seen[COV_N];

			memcpy(seen, cov, sizeof(cov));
			observe(&ev, &b, &a, &pre, tp);
			for (f = 0; f < COV_N; f++)
				if (cov[f] != seen[f] && first_hit[f] < 0)
					first_hit[f] = (long)n;
		}
		if (runaway(&a) || n == events)
			break;
		if (n && n % CHECKPOINT == 0)
			write_state(out, &a, chain);
		b = a;
		gen_next(tp, &sc, &ev);
		n++;
	}
	write_state(out, &a, chain);
	fprintf(out, "X %lu\n", n);
	side->destroy(&tp->sk);
	free(tp);
	return n;
}

/* ---- replay: one side against a trace ---- */
static int parse_event(char *line, struct event *ev, const struct tcp_sock *tp, long long out[F_N], u32 *outset,
		       u32 ret[2], u32 *tag)
{
	char *tok, *save = NULL, *end;
	int after_bar = 0, have_hash = 0;

	memset(ev, 0, sizeof(*ev));
	*outset = 0;
	tok = strtok_r(line, " \n", &save);
	if (!tok || !strchr("IASNRQ", tok[0]))
		return -1;
	ev->kind = tok[0];
	if (ev->kind == 'I' || ev->kind == 'S')
		ev->arg = (int)strtol(tok + 1, NULL, 10);
	while ((tok = strtok_r(NULL, " \n", &save))) {
		if (!strcmp(tok, "|")) {
			after_bar = 1;
		} else if (tok[0] == 'r' && !after_bar) {
			ev->rng = strtoull(tok + 1, &end, 16);
		} else if (tok[0] >= 'a' && tok[0] < 'a' + F_N && !after_bar) {
			int f = tok[0] - 'a';

			ev->val[f] = fget(tp, f) + (u64)strtoll(tok + 1, &end, 10);
			ev->set |= 1u << f;
		} else if (tok[0] >= 'A' && tok[0] < 'A' + F_N && after_bar) {
			int f = tok[0] - 'A';

			out[f] = strtoll(tok + 1, &end, 10);
			*outset |= 1u << f;
		} else if (tok[0] == 'q' && after_bar) {
			if (sscanf(tok + 1, "%u,%u", &ret[0], &ret[1]) != 2)
				return -1;
		} else if (tok[0] == '#' && after_bar) {
			*tag = (u32)strtoul(tok + 1, &end, 16);
			have_hash = 1;
		} else {
			return -1;
		}
	}
	return after_bar && have_hash ? 0 : -1;
}

static int replay(const struct equiv_side *side)
{
	static char line[1 << 16];
	struct tcp_sock *tp = NULL, pre, mid;
	struct equiv_state b, a;
	struct event ev;
	unsigned long lineno = 1, seqs = 0, events = 0, checkpoints = 0, evno = 0, bad_seqs = 0;
	int diverged = 0, skip = 0, reported = 0, f, i;
	u64 chain = CHAIN_START;
	char name[64];

	if (!fgets(line, sizeof(line), stdin) || strncmp(line, "# pcc_vivace_equiv trace 1", 26)) {
		fprintf(stderr, "replay: not a pcc_vivace_equiv trace (format 1)\n");
		return 2;
	}
	while (fgets(line, sizeof(line), stdin)) {
		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (line[0] == 'X') {
			unsigned long n = strtoul(line + 1, NULL, 10);

			if (!tp || n != evno) {
				fprintf(stderr, "replay: line %lu: sequence end does not match (%lu events read)\n", lineno,
					evno);
				return 2;
			}
			if (diverged)
				bad_seqs++;
			side->destroy(&tp->sk);
			free(tp);
			tp = NULL;
			continue;
		}
		if (line[0] == 'F') {
			u64 want[NSTATE], have[NSTATE], want_chain;
			char *s = line + 1, *end;

			if (!tp || strncmp(s, " #", 2)) {
				fprintf(stderr, "replay: line %lu: misplaced or malformed state line\n", lineno);
				return 2;
			}
			want_chain = strtoull(s + 2, &end, 16);
			s = end;
			for (i = 0; i < NSTATE; i++) {
				want[i] = state_size(i) < 0 ? (u64)strtoll(s, &end, 10) : strtoull(s, &end, 10);
				if (end == s) {
					fprintf(stderr, "replay: line %lu: short state line\n", lineno);
					return 2;
				}
				s = end;
			}
			if (skip)
				continue;
			state_fields(&a, have);
			checkpoints++;
			for (i = 0; i < NSTATE; i++)
				if (have[i] != want[i]) {
					if (reported < MISMATCH_REPORTS) {
						state_name(i, name, sizeof(name));
						printf("  state at line %lu, trace / %s: %s %lld / %lld\n", lineno, side->name,
						       name, (long long)want[i], (long long)have[i]);
					}
					diverged = 1;
				}
			if (!diverged && chain != want_chain) {
				if (reported < MISMATCH_REPORTS)
					printf("MISMATCH line %lu sequence %lu: state digest %016llx, trace %016llx\n", lineno,
					       seqs, (unsigned long long)chain, (unsigned long long)want_chain);
				reported++;
				diverged = 1;
			}
			if (diverged)
				skip = 1;
			continue;
		}
		{
			long long out[F_N];
			u32 outset, ret[2] = { 0, 0 }, want_ret[2] = { 0, 0 }, tag = 0;
			int bad = 0;

			if (line[0] == 'I') {
				if (tp) {
					fprintf(stderr, "replay: line %lu: .init inside a sequence\n", lineno);
					return 2;
				}
				tp = calloc(1, sizeof(*tp));
				seqs++;
				evno = 0;
				diverged = skip = 0;
				chain = CHAIN_START;
				memset(&b, 0, sizeof(b));
			} else if (!tp) {
				fprintf(stderr, "replay: line %lu: event outside a sequence\n", lineno);
				return 2;
			} else {
				evno++;
			}
			if (parse_event(line, &ev, tp, out, &outset, want_ret, &tag)) {
				fprintf(stderr, "replay: line %lu: cannot parse the event\n", lineno);
				return 2;
			}
			if (skip)
				continue;
			step(side, tp, &ev, &pre, &mid, ret, &a, &chain);
			events++;
			if (diverged)
				continue;	/* on to the next state line, which names what differs */
			for (f = 0; f < F_N; f++) {
				long long d = fdelta(f, fget(&mid, f), fget(tp, f));
				long long w = (outset & (1u << f)) ? out[f] : 0;

				if (d != w) {
					if (reported < MISMATCH_REPORTS)
						printf("MISMATCH line %lu sequence %lu event %lu (%s): %s changed by %lld, "
						       "trace %lld\n", lineno, seqs, evno, kind_name(ev.kind), fld[f].name,
						       d, w);
					bad = 1;
				}
			}
			if (ev.kind == 'Q' && (ret[0] != want_ret[0] || ret[1] != want_ret[1])) {
				if (reported < MISMATCH_REPORTS)
					printf("MISMATCH line %lu sequence %lu event %lu: returns %u,%u, trace %u,%u\n",
					       lineno, seqs, evno, ret[0], ret[1], want_ret[0], want_ret[1]);
				bad = 1;
			}
			if (((u32)chain & 0xffff) != tag) {
				if (reported < MISMATCH_REPORTS)
					printf("MISMATCH line %lu sequence %lu event %lu (%s): state digest %04x, trace "
					       "%04x\n", lineno, seqs, evno, kind_name(ev.kind), (u32)chain & 0xffff, tag);
				bad = 1;
			}
			if (bad) {
				diverged = 1;
				reported++;
				continue;
			}
			observe(&ev, &b, &a, &pre, tp);
			b = a;
		}
	}
	if (tp) {
		fprintf(stderr, "replay: the trace ends inside a sequence (truncated?)\n");
		return 2;
	}
	printf("replay %s sequences %lu events %lu checkpoints %lu mismatches %lu\n", side->name, seqs, events,
	       checkpoints, bad_seqs);
	print_coverage();
	return bad_seqs ? 1 : 0;
}

static int need_module(void)
{
	if (&equiv_module_side == NULL) {
		fprintf(stderr, "this driver was built without the module (testbed/cc/pcc-kernel/README.md)\n");
		return 0;
	}
	if (equiv_module_side.setup && equiv_module_side.setup() != 0) {
		fprintf(stderr, "the module's registration failed\n");
		return 0;
	}
	return 1;
}

int main(int argc, char **argv)
{
	memset(first_hit, 0xff, sizeof(first_hit));
	const char *mode = argc > 1 ? argv[1] : "";

	if (!strcmp(mode, "live") && argc == 5) {
		unsigned long seqs = strtoul(argv[2], NULL, 10), events = strtoul(argv[3], NULL, 10), total = 0;
		u64 seed = strtoull(argv[4], NULL, 10);

		if (!need_module())
			return 2;
		for (unsigned long seq = 0; seq < seqs; seq++)
			total += live_sequence(seed, seq, events);
		printf("port %s mismatches %lu events %lu\n", equiv_port_side.name, mismatches, total);
		print_coverage();
		return mismatches ? 1 : 0;
	}
	if (!strcmp(mode, "record") && argc >= 5) {
		u64 seed = strtoull(argv[2], NULL, 10);
		unsigned long events = strtoul(argv[3], NULL, 10);

		if (!need_module())
			return 2;
		printf("# pcc_vivace_equiv trace 1: PCC-Kernel tcp_pcc.c (sha256 fb044cd5...) under "
		       "tests/pcc_vivace_equiv/driver.c, seed %llu, at most %lu events a sequence\n",
		       (unsigned long long)seed, events);
		for (int i = 4; i < argc; i++) {
			char *end;
			unsigned long seq = strtoul(argv[i], &end, 10);

			record_sequence(stdout, seed, seq, *end == ':' ? strtoul(end + 1, NULL, 10) : events);
		}
		return 0;
	}
	if (!strcmp(mode, "scan") && argc == 6) {
		u64 seed = strtoull(argv[2], NULL, 10);
		unsigned long first = strtoul(argv[3], NULL, 10), count = strtoul(argv[4], NULL, 10);
		unsigned long events = strtoul(argv[5], NULL, 10);
		FILE *sink = tmpfile();

		if (!need_module() || !sink)
			return 2;
		for (unsigned long seq = first; seq < first + count; seq++) {
			unsigned long before[COV_N], n;

			rewind(sink);
			memcpy(before, cov, sizeof(cov));
			memset(first_hit, 0xff, sizeof(first_hit));
			n = record_sequence(sink, seed, seq, events);
			printf("seq %lu events %lu bytes %ld cov", seq, n, ftell(sink));
			for (int i = 0; i < COV_N; i++)
				printf(" %lu", cov[i] - before[i]);
			printf(" first");
			for (int i = 0; i < COV_N; i++)
				printf(" %ld", first_hit[i]);
			printf("\n");
		}
		return 0;
	}
	if (!strcmp(mode, "replay") && argc <= 3) {
		const char *which = argc == 3 ? argv[2] : "port";

		if (!strcmp(which, "port"))
			return replay(&equiv_port_side);
		if (!strcmp(which, "module"))
			return need_module() ? replay(&equiv_module_side) : 2;
	}
	fprintf(stderr, "usage: %s live SEQUENCES EVENTS SEED | record SEED EVENTS SEQ[:CAP]... | replay [port|module] | "
		"scan SEED FIRST COUNT EVENTS\n", argv[0]);
	return 2;
}
