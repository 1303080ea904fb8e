// SPDX-License-Identifier: GPL-2.0
/* The module's side: PCC-Kernel's tcp_pcc.c as the user obtained it (testbed/cc/pcc-kernel/README.md; this repository
 * does not ship it), unmodified, compiled against the stubs in kernel/ and called through its struct
 * tcp_congestion_ops as the kernel calls it. Only tests/pcc_vivace_equiv/make_traces.py compiles this file, and only
 * after checking the file's sha256. */
#include "tcp_pcc.c"

int mod_alloc_fail;	/* read by the stub kzalloc() (kernel/net/tcp.h) */

static int mod_setup(void)
{
	return pcc_register();
}

static void mod_init(struct sock *sk)
{
	tcp_pcc_cong_ops.init(sk);
}

static void mod_release(struct sock *sk)
{
	tcp_pcc_cong_ops.release(sk);
}

static void mod_cong_control(struct sock *sk)
{
	tcp_pcc_cong_ops.cong_control(sk, NULL);
}

static void mod_set_state(struct sock *sk, u8 state)
{
	tcp_pcc_cong_ops.set_state(sk, state);
}

static u32 mod_undo_cwnd(struct sock *sk)
{
	return tcp_pcc_cong_ops.undo_cwnd(sk);
}

static u32 mod_ssthresh(struct sock *sk)
{
	return tcp_pcc_cong_ops.ssthresh(sk);
}

/* the module's struct pcc_data and its kzalloc()ed intervals, in the common layout of equiv.h */
static void mod_dump(struct sock *sk, struct equiv_state *st)
{
	struct pcc_data *d = inet_csk_ca(sk);
	int k;

	__builtin_memset(st, 0, sizeof(*st));
	st->valid = pcc_valid(d);
	if (!d->intervals)
		return;
	for (k = 0; k < 8; k++) {
		const struct pcc_interval *src = d->intervals + k;
		struct equiv_interval *dst = &st->iv[k];

		dst->rate = src->rate;
		dst->recv_start = src->recv_start;
		dst->recv_end = src->recv_end;
		dst->send_start = src->send_start;
		dst->send_end = src->send_end;
		dst->start_rtt = src->start_rtt;
		dst->end_rtt = src->end_rtt;
		dst->sent_base = src->packets_sent_base;
		dst->sent_end = src->packets_ended;
		dst->utility = src->utility;
		dst->lost = src->lost;
		dst->delivered = src->delivered;
	}
	st->send_index = d->send_index;
	st->recv_index = d->recive_index;
	st->rate = d->rate;
	st->last_rate = d->last_rate;
	st->start_mode = d->start_mode;
	st->moving = d->moving;
	st->loss_state = d->loss_state;
	st->wait = d->wait;
	st->last_decision = d->last_decision;
	st->lost_base = d->lost_base;
	st->delivered_base = d->delivered_base;
	st->counted = d->packets_counted;
	st->spare = d->spare;
	st->amplifier = d->amplifier;
	st->swing_buffer = d->swing_buffer;
	st->change_bound = d->change_bound;
}

/* the socket closes: tcp_cleanup_congestion_control() calls .release */
static void mod_destroy(struct sock *sk)
{
	tcp_pcc_cong_ops.release(sk);
}

const struct equiv_side equiv_module_side = {
	.name = "module",
	.rng = 0,
	.alloc_fail = &mod_alloc_fail,
	.setup = mod_setup,
	.init = mod_init,
	.release = mod_release,
	.cong_control = mod_cong_control,
	.set_state = mod_set_state,
	.undo_cwnd = mod_undo_cwnd,
	.ssthresh = mod_ssthresh,
	.dump = mod_dump,
	.destroy = mod_destroy,
};
