// SPDX-License-Identifier: GPL-2.0
/*
 * BIC as Linux 4.15 computes it, as a BPF struct_ops congestion control registered as "bic415" (docs/kernel-415.md).
 *
 * Study 000 (section 2.1) ran Ubuntu 16.04 with Linux 4.15. Linux 4.15's net/ipv4/tcp_bic.c (Ubuntu's
 * linux-source-4.15.0 4.15.0-54.58) differs from 6.1's, which bic.bpf.c ports, in one function only,
 * bictcp_cong_avoid (4.15's tcp_bic.c:139-153):
 *
 *	if (tcp_in_slow_start(tp))
 *		tcp_slow_start(tp, acked);
 *	else {
 *		bictcp_update(ca, tp->snd_cwnd);
 *		tcp_cong_avoid_ai(tp, ca->cnt, 1);
 *	}
 *
 * i.e. congestion avoidance counts ONE segment per ACK where 6.1 counts `acked`, the segments the ACK covers
 * (6.1: tcp_cong_avoid_ai(tp, ca->cnt, acked)), and slow start does not carry the ACKed segments left over at
 * ssthresh into congestion avoidance. With delayed ACKs (two segments an ACK) 4.15's BIC thus grows its window about
 * half as fast as 6.1's. Everything else
 * (bictcp_update, the ssthresh rule, the delayed-ACK estimate, the state and undo hooks, the module's defaults) is
 * the same text in both versions, so this file is bic.bpf.c compiled with BIC_LINUX_4_15: one source, two
 * congestion controls, and no second copy of the algorithm to drift.
 *
 * Validated against 4.15's own tcp_bic.c built as a module for the Debian VM's 6.1 (testbed/cc/bic415-kernel/,
 * docs/cc-validation.md), as bic.bpf.c was against 6.1's module.
 */
#define BIC_LINUX_4_15 1
#define BIC_OPS bic415
#include "bic.bpf.c"
