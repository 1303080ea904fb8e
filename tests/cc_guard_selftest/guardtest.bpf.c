// SPDX-License-Identifier: GPL-2.0
/*
 * tests/test_cc_guard.py's congestion control "ccguardtest": Reno (the kernel's tcp_reno_* as kfuncs) with
 * testbed/cc/cc_guard.h in every hook, as the ports have it, and an injected fault: every INJECT_EVERY-th ACK its
 * .in_ack_event writes into snd_ssthresh the value the kernel defect writes (2165326096, docs/cc-guard.md) after the
 * guard has run, so the rest of that ACK's processing and the kernel's rate reduction see it, as they see the
 * defect's. The guard must repair every injection at a later hook: injected and repaired are counted here.
 */
#include "cc_guard.h"

char _license[] SEC("license") = "GPL";

#ifndef INJECT_EVERY
#define INJECT_EVERY 32
#endif
#define DEFECT_SSTHRESH 2165326096U

__u64 acks, injected;

SEC("struct_ops/gt_init")
void BPF_PROG(gt_init, struct sock *sk)
{
	cc_guard_init(sk);
}

SEC("struct_ops/gt_ssthresh")
__u32 BPF_PROG(gt_ssthresh, struct sock *sk)
{
	cc_guard(sk);
	return tcp_reno_ssthresh(sk);
}

SEC("struct_ops/gt_cong_avoid")
void BPF_PROG(gt_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	cc_guard(sk);
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC("struct_ops/gt_undo_cwnd")
__u32 BPF_PROG(gt_undo_cwnd, struct sock *sk)
{
	cc_guard(sk);
	return tcp_reno_undo_cwnd(sk);
}

SEC("struct_ops/gt_ack")
void BPF_PROG(gt_ack, struct sock *sk, __u32 ack_flags)
{
	cc_guard(sk);
	if (++acks % INJECT_EVERY == 0) {
		tcp_sk(sk)->snd_ssthresh = DEFECT_SSTHRESH;
		injected++;
	}
}

SEC("struct_ops/gt_state")
void BPF_PROG(gt_state, struct sock *sk, __u8 new_state)
{
	cc_guard(sk);
}

SEC("struct_ops/gt_min_tso_segs")
__u32 BPF_PROG(gt_min_tso_segs, struct sock *sk)
{
	return cc_guard_min_tso_segs(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops ccguardtest = {
	.init		= (void *)gt_init,
	.ssthresh	= (void *)gt_ssthresh,
	.cong_avoid	= (void *)gt_cong_avoid,
	.undo_cwnd	= (void *)gt_undo_cwnd,
	.in_ack_event	= (void *)gt_ack,
	.set_state	= (void *)gt_state,
	.min_tso_segs	= (void *)gt_min_tso_segs,
	.flags		= TCP_CONG_NON_RESTRICTED,
	.name		= "ccguardtest",
};
