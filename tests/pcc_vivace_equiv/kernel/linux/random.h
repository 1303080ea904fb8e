/* SPDX-License-Identifier: GPL-2.0 */
/* Stub of <linux/random.h>: get_random_bytes() draws from the module side's random source (equiv.h), one draw per
 * byte, the low byte of each; the port side's bpf_get_prandom_u32() draws from its own source seeded alike. */
#ifndef PCC_EQUIV_LINUX_RANDOM_H
#define PCC_EQUIV_LINUX_RANDOM_H
#include "equiv.h"

static inline void get_random_bytes(void *buf, int nbytes)
{
	int i;

	for (i = 0; i < nbytes; i++)
		((u8 *)buf)[i] = (u8)equiv_rng_next(0);
}

#endif
