/* SPDX-License-Identifier: GPL-2.0 */
/* Stub of <net/tcp.h> (and what it pulls in) for compiling PCC-Kernel's tcp_pcc.c in user space
 * (tests/test_pcc_vivace_equivalence.py). Declarations follow Linux 6.1: struct tcp_congestion_ops with the 6.1
 * prototypes (.cong_control(sk, rs)), so that gcc -Werror=incompatible-pointer-types checks the module's hooks
 * against them; min()/max() evaluate as the kernel's (include/linux/minmax.h: x < y ? x : y in the usual arithmetic
 * conversions, the type checks aside); USEC_PER_SEC and USEC_PER_MSEC are signed long (include/vdso/time64.h). */
#ifndef PCC_EQUIV_NET_TCP_H
#define PCC_EQUIV_NET_TCP_H
#include <stdlib.h>
#include "equiv.h"

#define __read_mostly
#define KERN_INFO "\0016"
#define printk(...) ((void)0)
#define BUILD_BUG_ON(cond) _Static_assert(!(cond), "BUILD_BUG_ON(" #cond ")")

#define USEC_PER_MSEC 1000L
#define USEC_PER_SEC 1000000L
#define S64_MAX ((s64)(~0ULL >> 1))
#define S64_MIN (-S64_MAX - 1)

#define min(x, y) ((x) < (y) ? (x) : (y))
#define max(x, y) ((x) > (y) ? (x) : (y))

/* the kernel's cmpxchg: store new if *ptr == old, return the old value */
#define cmpxchg(ptr, old, new) ({ __typeof__(*(ptr)) __o = *(ptr); if (__o == (old)) *(ptr) = (new); __o; })

#define GFP_KERNEL 0
extern int mod_alloc_fail;
static inline void *kzalloc(size_t size, int flags)
{
	(void)flags;
	return mod_alloc_fail ? NULL : calloc(1, size);
}
static inline void kfree(const void *p)
{
	free((void *)p);
}

#define TCP_INFINITE_SSTHRESH 0x7fffffff
#define TCP_CONG_NON_RESTRICTED 0x1

struct rate_sample;
struct ack_sample;
union tcp_cc_info;
enum tcp_ca_event { CA_EVENT_TX_START, CA_EVENT_CWND_RESTART, CA_EVENT_COMPLETE_CWR, CA_EVENT_LOSS,
		    CA_EVENT_ECN_NO_CE, CA_EVENT_ECN_IS_CE };

static inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static inline void *inet_csk_ca(const struct sock *sk)
{
	return (void *)((struct tcp_sock *)sk)->icsk_ca_priv;
}

static inline unsigned int tcp_left_out(const struct tcp_sock *tp)
{
	return tp->sacked_out + tp->lost_out;
}

static inline unsigned int tcp_packets_in_flight(const struct tcp_sock *tp)
{
	return tp->packets_out - tcp_left_out(tp) + tp->retrans_out;
}

/* 6.1 include/net/tcp.h */
struct tcp_congestion_ops {
	u32 (*ssthresh)(struct sock *sk);
	void (*cong_avoid)(struct sock *sk, u32 ack, u32 acked);
	void (*set_state)(struct sock *sk, u8 new_state);
	void (*cwnd_event)(struct sock *sk, enum tcp_ca_event ev);
	void (*in_ack_event)(struct sock *sk, u32 flags);
	void (*pkts_acked)(struct sock *sk, const struct ack_sample *sample);
	u32 (*min_tso_segs)(struct sock *sk);
	void (*cong_control)(struct sock *sk, const struct rate_sample *rs);
	u32 (*undo_cwnd)(struct sock *sk);
	u32 (*sndbuf_expand)(struct sock *sk);
	size_t (*get_info)(struct sock *sk, u32 ext, int *attr, union tcp_cc_info *info);
	char name[16];
	struct module *owner;
	u32 key;
	u32 flags;
	void (*init)(struct sock *sk);
	void (*release)(struct sock *sk);
};

static inline int tcp_register_congestion_control(struct tcp_congestion_ops *ca)
{
	(void)ca;
	return 0;
}

static inline void tcp_unregister_congestion_control(struct tcp_congestion_ops *ca)
{
	(void)ca;
}

#endif
