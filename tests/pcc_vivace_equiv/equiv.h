/* SPDX-License-Identifier: GPL-2.0 */
/* Shared by the two sides of the equivalence check (tests/test_pcc_vivace_equivalence.py): the socket both congestion
 * controls see, the random source both draw their probing order from, and the common view of their state.
 *
 * The socket carries only the fields PCC-Kernel's tcp_pcc.c and testbed/cc/pcc_vivace.bpf.c use, with the types of
 * Linux 6.1 (include/net/sock.h, include/linux/tcp.h, include/net/inet_connection_sock.h; unchanged in 6.18:
 * testbed/cc/build/vmlinux.h), so that the C arithmetic on them is the kernel's. */
#ifndef PCC_EQUIV_H
#define PCC_EQUIV_H

#include <stddef.h>

/* include/uapi/asm-generic/int-ll64.h */
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef signed char s8;
typedef short s16;
typedef int s32;
typedef long long s64;
typedef u8 __u8;
typedef u16 __u16;
typedef u32 __u32;
typedef u64 __u64;
typedef s8 __s8;
typedef s16 __s16;
typedef s32 __s32;
typedef s64 __s64;
typedef _Bool bool;
enum { false = 0, true = 1 };

enum sk_pacing { SK_PACING_NONE = 0, SK_PACING_NEEDED = 1, SK_PACING_FQ = 2 };
enum tcp_ca_state { TCP_CA_Open = 0, TCP_CA_Disorder = 1, TCP_CA_CWR = 2, TCP_CA_Recovery = 3, TCP_CA_Loss = 4 };

struct sock {
	u32 sk_pacing_status;		/* see enum sk_pacing */
	unsigned long sk_pacing_rate;	/* bytes per second */
	unsigned long sk_max_pacing_rate;
	void *bpf_storage;		/* the BPF side's sk_storage value (stub) */
};

#define ICSK_CA_PRIV_SIZE (13 * sizeof(u64))	/* 6.1 include/net/inet_connection_sock.h */

struct tcp_sock {
	struct sock sk;			/* first, as inet_connection_sock / inet_sock / sock are in the kernel */
	u64 icsk_ca_priv[ICSK_CA_PRIV_SIZE / sizeof(u64)];
	u32 mss_cache;
	u32 snd_cwnd;
	u32 snd_cwnd_clamp;
	u32 snd_ssthresh;
	u32 srtt_us;			/* smoothed round trip time << 3 in usecs */
	u32 packets_out;
	u32 sacked_out;
	u32 lost_out;
	u32 retrans_out;
	u32 data_segs_out;
	u32 delivered;
	u32 lost;
	u64 tcp_mstamp;			/* most recent packet received/sent, usecs */
};

/* one random source per side, seeded alike: each side draws its probing order from its own, so both see the same
 * bytes as long as they draw equally often */
extern u64 equiv_rng_state[2];
static inline u32 equiv_rng_next(int side)
{
	u64 x = equiv_rng_state[side];

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	equiv_rng_state[side] = x;
	return (u32)(x >> 11);
}

/* The algorithm's state as both sides hold it, in one common layout (the module's struct pcc_data and its intervals, the
 * port's struct vv_state and its monitor intervals); the glue of each side fills it. */
struct equiv_interval {
	u64 rate;
	s64 recv_start, recv_end, send_start, send_end, start_rtt, end_rtt;
	u32 sent_base, sent_end;
	s64 utility;
	u32 lost, delivered;
};

struct equiv_state {
	int valid;
	struct equiv_interval iv[8];
	int send_index, recv_index;
	s64 rate, last_rate;
	int start_mode, moving, loss_state, wait, last_decision;
	u32 lost_base, delivered_base, counted, spare;
	s32 amplifier, swing_buffer, change_bound;
};

/* One congestion control as the driver calls it (mod_glue.c: the module, port_glue.c: the port). The driver links the
 * module's side only where the module's source is present; equiv_module_side is then non-NULL. */
struct equiv_side {
	const char *name;
	int rng;			/* which of equiv_rng_state it draws from */
	int *alloc_fail;		/* set: the allocation at .init fails */
	int (*setup)(void);		/* once, before the first socket (may be NULL) */
	void (*init)(struct sock *sk);
	void (*release)(struct sock *sk);	/* .release before a re-initialisation (may be NULL) */
	void (*cong_control)(struct sock *sk);
	void (*set_state)(struct sock *sk, u8 state);
	u32 (*undo_cwnd)(struct sock *sk);
	u32 (*ssthresh)(struct sock *sk);
	void (*dump)(struct sock *sk, struct equiv_state *st);
	void (*destroy)(struct sock *sk);	/* the socket closes: free what the side allocated */
};

extern const struct equiv_side equiv_module_side __attribute__((weak));
extern const struct equiv_side equiv_port_side;

#endif
