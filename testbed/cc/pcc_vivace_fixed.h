/* SPDX-License-Identifier: GPL-2.0 */
/* Fixed-point power function for pcc_vivace_usp.bpf.c (BPF has no floating point).
 *
 * Representation: "Q16" = an unsigned integer holding value * 2^16.
 *   pv_log2_q16(v)        log2(v) for an integer v >= 1, Q16 (0 .. 64 << 16)
 *   pv_exp2_q16(y)        2^y for y >= 0 given in Q16, result Q16 (y is capped at 46, result < 2^63)
 *   pv_pow_q16(v, p, q)   v^(p/q) = 2^((p/q) * log2 v), Q16; exact rational exponent (0.9 = 9/10, 1.2 = 6/5)
 * log2 splits v = 2^n * m (m in [1, 2)); log2 m and 2^f (f in [0, 1)) come from 65-entry tables (step 1/64,
 * entries rounded to Q16) with linear interpolation between entries.
 *
 * Error bound (analytic): linear interpolation with step h = 1/64 errs by at most h^2/8 * max|f''|:
 * log2(1+m): (1/64)^2/8 / ln 2 = 4.4e-5 (absolute, log2 units); 2^f: (1/64)^2/8 * ln(2)^2 * 2 = 2.9e-5 (relative);
 * table/Q16 rounding adds ~1 LSB = 1.5e-5 each. For v^0.9 that is a relative error below
 * 0.9 * ln2 * (4.4e-5 + 2 * 1.5e-5) + 2.9e-5 + 3e-5 = 1.05e-4. Measured by compiling this header with gcc
 * (docs/pcc-vivace.md, "Fixed-point check"): max relative error 5.5e-5 for v^0.9 over v = 1 .. 10^7 (every v up to 10^5,
 * then a log grid), i.e. x^0.9 in Vivace's utility is off by at most 0.0055 %.
 *
 * The header only needs __u32/__u64 (vmlinux.h in BPF, <linux/types.h> in the user-space check) and has no BPF
 * helpers, so the same code is what the check measures. Table indices are masked so the verifier sees them bounded.
 */
#ifndef PCC_VIVACE_FIXED_H
#define PCC_VIVACE_FIXED_H

#ifndef PV_INLINE
#define PV_INLINE static __always_inline
#endif

/* round(log2(1 + i/64) * 2^16), i = 0..64 */
static const __u32 pv_log2_tbl[65] = {
	0, 1466, 2909, 4331, 5732, 7112, 8473, 9814,
	11136, 12440, 13727, 14996, 16248, 17484, 18704, 19909,
	21098, 22272, 23433, 24579, 25711, 26830, 27936, 29029,
	30109, 31178, 32234, 33279, 34312, 35334, 36346, 37346,
	38336, 39316, 40286, 41246, 42196, 43137, 44068, 44990,
	45904, 46809, 47705, 48593, 49472, 50344, 51207, 52063,
	52911, 53751, 54584, 55410, 56229, 57040, 57845, 58643,
	59434, 60219, 60997, 61769, 62534, 63294, 64047, 64794,
	65536,
};

/* round(2^(i/64) * 2^16), i = 0..64 */
static const __u32 pv_exp2_tbl[65] = {
	65536, 66250, 66971, 67700, 68438, 69183, 69936, 70698,
	71468, 72246, 73032, 73828, 74632, 75444, 76266, 77096,
	77936, 78785, 79642, 80510, 81386, 82273, 83169, 84074,
	84990, 85915, 86851, 87796, 88752, 89719, 90696, 91684,
	92682, 93691, 94711, 95743, 96785, 97839, 98905, 99982,
	101070, 102171, 103283, 104408, 105545, 106694, 107856, 109031,
	110218, 111418, 112631, 113858, 115098, 116351, 117618, 118899,
	120194, 121502, 122825, 124163, 125515, 126882, 128263, 129660,
	131072,
};

/* index of the most significant set bit (v > 0) */
PV_INLINE __u32 pv_fls64(__u64 v)
{
	__u32 n = 0;

	if (v >> 32) { v >>= 32; n += 32; }
	if (v >> 16) { v >>= 16; n += 16; }
	if (v >> 8) { v >>= 8; n += 8; }
	if (v >> 4) { v >>= 4; n += 4; }
	if (v >> 2) { v >>= 2; n += 2; }
	if (v >> 1) n += 1;
	return n;
}

/* interpolate a 65-entry table at f / 2^16, f in [0, 2^16) */
PV_INLINE __u64 pv_interp(const __u32 *tbl, __u32 f)
{
	__u32 idx = (f >> 10) & 63, rem = f & 1023;
	__u32 a = tbl[idx], b = tbl[idx + 1];

	return a + ((((__u64)(b - a)) * rem + 512) >> 10);
}

PV_INLINE __u64 pv_log2_q16(__u64 v)
{
	__u32 n;
	__u64 m;

	if (!v)
		return 0;
	n = pv_fls64(v);
	m = n >= 16 ? v >> (n - 16) : v << (16 - n);	/* m in [2^16, 2^17) */
	return ((__u64)n << 16) + pv_interp(pv_log2_tbl, (__u32)(m & 0xffff));
}

PV_INLINE __u64 pv_exp2_q16(__u64 y)
{
	__u64 i = y >> 16;

	if (i > 46)
		i = 46;
	return pv_interp(pv_exp2_tbl, (__u32)(y & 0xffff)) << i;
}

/* v^(p/q) in Q16, v >= 1 */
PV_INLINE __u64 pv_pow_q16(__u64 v, __u32 p, __u32 q)
{
	return pv_exp2_q16(pv_log2_q16(v) * p / q);
}

#endif
