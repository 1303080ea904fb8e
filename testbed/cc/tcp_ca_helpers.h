/* SPDX-License-Identifier: GPL-2.0 */
/* What the kernel's congestion controls get from <net/tcp.h> and <linux/jiffies.h>, for BPF struct_ops ports.
 * Each helper is the kernel's inline function of the same name (Linux 6.1 include/net/tcp.h, include/linux/jiffies.h;
 * unchanged through 6.18), rewritten over the BTF types of vmlinux.h (generated from the running kernel, see Makefile).
 * The kernel's exported tcp_reno_* / tcp_slow_start / tcp_cong_avoid_ai are called as kfuncs (net/ipv4/bpf_tcp_ca.c
 * registers them for BPF_PROG_TYPE_STRUCT_OPS), so the ports share the kernel's code for them instead of copies. */
#ifndef MPCC_TCP_CA_HELPERS_H
#define MPCC_TCP_CA_HELPERS_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

/* include/linux/tcp.h: TCP_CONG_NON_RESTRICTED. Set on every port: it puts the CC in
 * net.ipv4.tcp_allowed_congestion_control, so a namespace may select it without CAP_NET_ADMIN tricks and a failed
 * attempt to make a restricted BPF CC a namespace's default (EPERM) cannot leak a module reference
 * (docs/testbed.md). */
#define TCP_CONG_NON_RESTRICTED 0x1

#define BPF_STRUCT_OPS(name, args...) SEC("struct_ops/" #name) BPF_PROG(name, args)

/* include/net/tcp.h: tcp_jiffies32 is (u32)jiffies */
#define tcp_jiffies32 ((__u32)bpf_jiffies64())

/* HZ of the running kernel (250 on the development kernel and on Debian's) */
extern unsigned long CONFIG_HZ __kconfig;
#define HZ CONFIG_HZ
#define USEC_PER_SEC 1000000UL

#define min(a, b) ((a) < (b) ? (a) : (b))
#define max(a, b) ((a) > (b) ? (a) : (b))
#define min_t(type, a, b) min((type)(a), (type)(b))
#define max_t(type, a, b) max((type)(a), (type)(b))

/* kfuncs: the kernel's own functions (net/ipv4/tcp_cong.c) */
extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;
extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __ksym;
extern void tcp_cong_avoid_ai(struct tcp_sock *tp, __u32 w, __u32 acked) __ksym;

static __always_inline struct inet_connection_sock *inet_csk(const struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

/* include/net/inet_connection_sock.h: the CC's private area (ICSK_CA_PRIV_SIZE bytes) */
static __always_inline void *inet_csk_ca(const struct sock *sk)
{
	return (void *)inet_csk(sk)->icsk_ca_priv;
}

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline __u32 tcp_snd_cwnd(const struct tcp_sock *tp)
{
	return tp->snd_cwnd;
}

static __always_inline void tcp_snd_cwnd_set(struct tcp_sock *tp, __u32 val)
{
	tp->snd_cwnd = val;
}

static __always_inline bool tcp_in_slow_start(const struct tcp_sock *tp)
{
	return tcp_snd_cwnd(tp) < tp->snd_ssthresh;
}

/* include/net/tcp.h (6.1): tcp_is_cwnd_limited() */
static __always_inline bool tcp_is_cwnd_limited(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	if (BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited))
		return true;

	/* If in slow start, ensure cwnd grows to twice what was ACKed. */
	if (tcp_in_slow_start(tp))
		return tcp_snd_cwnd(tp) < 2 * tp->max_packets_out;

	return false;
}

/* include/linux/jiffies.h: _usecs_to_jiffies() for HZ dividing USEC_PER_SEC (HZ = 100, 250, 1000: every Debian
 * and upstream x86 choice but 300). Rounds up, as the kernel does. */
static __always_inline __u32 usecs_to_jiffies(__u32 u)
{
	return (u + (USEC_PER_SEC / HZ) - 1) / (USEC_PER_SEC / HZ);
}

#endif
