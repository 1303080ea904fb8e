/* SPDX-License-Identifier: GPL-2.0 */
/* Stand-in for testbed/cc/tcp_ca_helpers.h (and the vmlinux.h and libbpf headers it includes) for compiling
 * testbed/cc/pcc_vivace.bpf.c as ordinary C in user space (tests/test_pcc_vivace_equivalence.py copies the port next
 * to this file). BPF_PROG(name, args...) becomes a plain function name(args); the sk_storage map becomes a pointer in
 * the stub socket, created zeroed on BPF_SK_STORAGE_GET_F_CREATE as the kernel creates it; bpf_get_prandom_u32()
 * draws from the port side's random source (equiv.h). min(), max() and USEC_PER_SEC are copied from
 * testbed/cc/tcp_ca_helpers.h (the test checks that they still read the same there). */
#ifndef MPCC_TCP_CA_HELPERS_H
#define MPCC_TCP_CA_HELPERS_H
#include <stdlib.h>
#include "equiv.h"

#undef __always_inline
#define __always_inline inline __attribute__((always_inline))
#define SEC(name)
#define BPF_PROG(name, args...) name(args)
#define __uint(name, val) int (*name)[val]
#define __type(name, val) __typeof__(val) *name
enum { BPF_MAP_TYPE_SK_STORAGE = 24 };
#define BPF_F_NO_PREALLOC (1U << 0)
#define BPF_SK_STORAGE_GET_F_CREATE (1ULL << 0)

#define TCP_CONG_NON_RESTRICTED 0x1
#define USEC_PER_SEC 1000000UL

#define min(a, b) ((a) < (b) ? (a) : (b))
#define max(a, b) ((a) > (b) ? (a) : (b))

static inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

extern int port_alloc_fail;
static inline void *equiv_sk_storage_get(struct sock *sk, size_t size, u64 flags)
{
	if (!sk->bpf_storage && (flags & BPF_SK_STORAGE_GET_F_CREATE) && !port_alloc_fail)
		sk->bpf_storage = calloc(1, size);
	return sk->bpf_storage;
}
#define bpf_sk_storage_get(map_, sk_, value_, flags_) \
	equiv_sk_storage_get((struct sock *)(sk_), sizeof(*(map_)->value), (flags_))

static inline u32 bpf_get_prandom_u32(void)
{
	return equiv_rng_next(1);
}

/* libbpf's struct_ops section: the hooks as untyped pointers, called through by port_glue.c */
struct tcp_congestion_ops {
	void *ssthresh, *cong_avoid, *set_state, *cwnd_event, *in_ack_event, *pkts_acked, *min_tso_segs, *cong_control,
	     *undo_cwnd, *sndbuf_expand, *get_info;
	char name[16];
	u32 flags;
	void *init, *release;
};

#endif
