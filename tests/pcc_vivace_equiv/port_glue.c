// SPDX-License-Identifier: GPL-2.0
/* The port's side: testbed/cc/pcc_vivace.bpf.c, unmodified, compiled as user-space C against bpf/tcp_ca_helpers.h,
 * called through its SEC(".struct_ops") struct tcp_congestion_ops as the kernel calls a BPF congestion control. */
#include "pcc_vivace.bpf.c"

int port_alloc_fail;	/* read by the stub bpf_sk_storage_get() (bpf/tcp_ca_helpers.h) */

static void port_init(struct sock *sk)
{
	((void (*)(struct sock *))pcc_vivace.init)(sk);
}

static void port_cong_control(struct sock *sk)
{
	((void (*)(struct sock *))pcc_vivace.cong_control)(sk);
}

static void port_set_state(struct sock *sk, u8 state)
{
	((void (*)(struct sock *, u8))pcc_vivace.set_state)(sk, state);
}

static u32 port_undo_cwnd(struct sock *sk)
{
	return ((u32 (*)(struct sock *))pcc_vivace.undo_cwnd)(sk);
}

static u32 port_ssthresh(struct sock *sk)
{
	return ((u32 (*)(struct sock *))pcc_vivace.ssthresh)(sk);
}

/* struct vv_state in the common layout of equiv.h (the port's comments there name the module's fields) */
static void port_dump(struct sock *sk, struct equiv_state *st)
{
	const struct vv_state *v = sk->bpf_storage;
	int k;

	__builtin_memset(st, 0, sizeof(*st));
	st->valid = vv_valid(v);
	if (!v)
		return;
	for (k = 0; k < VV_NR_MI; k++) {
		const struct vv_mi *src = &v->mi[k];
		struct equiv_interval *dst = &st->iv[k];

		dst->rate = src->target;
		dst->recv_start = src->ack_t0;
		dst->recv_end = src->ack_t1;
		dst->send_start = src->tx_t0;
		dst->send_end = src->tx_t1;
		dst->start_rtt = src->srtt0;
		dst->end_rtt = src->srtt1;
		dst->sent_base = src->segs_from;
		dst->sent_end = src->segs_to;
		dst->utility = src->utility;
		dst->lost = src->lost;
		dst->delivered = src->delivered;
	}
	st->send_index = v->tx_mi;
	st->recv_index = v->rx_mi;
	st->rate = v->rate;
	st->last_rate = v->prev_rate;
	st->start_mode = v->starting;
	st->moving = v->moving;
	st->loss_state = v->in_loss;
	st->wait = v->idle;
	st->last_decision = 0;	/* the module's last_decision is never written: PCC_RATE_UP (port, difference 7) */
	st->lost_base = v->lost_seen;
	st->delivered_base = v->delivered_seen;
	st->counted = v->counted;
	st->spare = v->spare;
	st->amplifier = v->amp;
	st->swing_buffer = v->swing;
	st->change_bound = v->bound;
}

/* the socket closes: the sk_storage goes with it */
static void port_destroy(struct sock *sk)
{
	free(sk->bpf_storage);
	sk->bpf_storage = NULL;
}

const struct equiv_side equiv_port_side = {
	.name = "pcc_vivace",
	.rng = 1,
	.alloc_fail = &port_alloc_fail,
	.init = port_init,
	.release = NULL,	/* no .release: the storage stays, .init zeroes it */
	.cong_control = port_cong_control,
	.set_state = port_set_state,
	.undo_cwnd = port_undo_cwnd,
	.ssthresh = port_ssthresh,
	.dump = port_dump,
	.destroy = port_destroy,
};
