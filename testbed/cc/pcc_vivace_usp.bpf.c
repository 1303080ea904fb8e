// SPDX-License-Identifier: GPL-2.0
/*
 * PCC Vivace after the Vivace paper and PCC-Uspace, as a BPF struct_ops congestion control registered as
 * "pcc_vivace_usp" (TCP_CA_NAME_MAX is 16 with the NUL, so "pcc_vivace_uspace" cannot be a name).
 *
 * This is NOT PCC-Kernel's vivace module, which study 002 ran: testbed/cc/pcc_vivace.bpf.c ("pcc_vivace") is the port
 * of that module. Until issue 30 this file was registered as "pcc_vivace"; study 002's runs recorded before then ran
 * it (their meta.json cc_impl object_sha256 names the object). docs/pcc-vivace.md says which controller is which;
 * docs/pcc-kernel-vivace-spec.md section 13 lists every difference between this controller and the module.
 * It needs a kernel whose .cong_control has four arguments (>= 6.10): it reads the rate_sample.
 *
 * Algorithm: M. Dong, T. Meng, D. Zarchy, E. Arslan, Y. Gilad, P. B. Godfrey, M. Schapira, "PCC Vivace:
 * Online-Learning Congestion Control", USENIX NSDI 2018.
 * Kernel structure followed: PCC-Kernel, src/tcp_pcc.c of https://github.com/PCCproject/PCC-Kernel (commit
 * ed39d0f0fa07e4a922e97dae0b531ccac8c976c9, a Vivace version; Tomer Gilad, Nathan Jay, Nogah Frankel): a rate-based TCP
 * CC that implements .cong_control, paces with sk_pacing_rate (SK_PACING_NEEDED) and sets cwnd = 2 * rate * srtt.
 * The rate-control constants the paper leaves to the implementation (theta_0, m(tau), omega_0, delta, minimum rate and
 * minimum rate change) are those of the authors' reference implementation PCC-Uspace
 * (https://github.com/PCCproject/PCC-Uspace, src/pcc/pcc_vivace_sender.cpp and pcc_utility_manager.cpp), whose state
 * machine (STARTING / PROBING / DECISION_MADE) this file transcribes, except PROBING's two pairs that must both agree,
 * which is PCC-Kernel's rule (PCC-Uspace at commit 2ca18114 probes with three pairs: docs/pcc-kernel-vivace-spec.md
 * section 15).
 *
 * What it does (one socket):
 * - Monitor intervals (MI): the sender paces at a target rate for one MI of max(srtt, 20 packets) of sending; the
 *   MI's results are the ACKs of the packets sent in it. An ACK's rate_sample.prior_delivered (tp->delivered when the
 *   newest (s)acked packet was sent) says which MI that packet was sent in, so every ACK is attributed exactly; an MI
 *   is complete when a packet sent after it is (s)acked. Between useful MIs the sender keeps the current rate
 *   ("non-useful" intervals of PCC-Uspace / the "wait" state of PCC-Kernel).
 * - Utility of an MI (the paper's latency-aware utility, x in Mbit/s = 10^6 bit/s):
 *       u(x) = x^t - b * x * dRTT/dT - c * x * L,    t = 0.9, b = 900, c = 11.35
 *   dRTT/dT is the least-squares slope of the MI's RTT samples (rate_sample.rtt_us) over their send times
 *   (ack time - RTT), after the noise filter (3, 4 below); L = lost / (lost + (s)acked) with the packets the ACKs
 *   of the MI newly marked lost.
 * - STARTING: one MI at a time; double the rate while the utility increases; on the first decrease go back to the
 *   last rate whose utility increased (= half the current one) and enter PROBING.
 * - PROBING: four MIs, two pairs at r(1+eps) and r(1-eps), eps = 0.05, each pair in random order. If both pairs
 *   agree on the direction, move: rate = r(1 +- eps) then one gradient step (below) and enter DECISION_MADE; if not,
 *   probe again at r.
 * - DECISION_MADE: one MI per step; keep moving in the same direction while the utility keeps improving in it (the
 *   PCC-Uspace test), each step Delta_r = m(tau) * theta_0 * gamma with gamma the utility gradient between this MI and
 *   the previous one; once it stops improving, step back once (with m = 1) and return to PROBING.
 * - Gradient step: gamma = Delta_u / Delta_x (utility per Mbit/s; in PROBING Delta_u is the mean over the two pairs of
 *   |u(r(1+eps)) - u(r(1-eps))| and Delta_x = 2 eps r), theta_0 = 1 (Mbit/s)^2 per unit utility.
 *   Confidence amplifier m(tau) = floor((tau + 1) / 2)^1.2, tau = consecutive steps in one direction (1 in PROBING).
 *   Dynamic change boundary: |Delta_r| <= omega * r, omega = omega_0 + k * delta, omega_0 = delta = 0.05; k + 1 each
 *   time the step was capped, k - 1 (not below 0) each time it was not, k = 0 on (re)entering PROBING.
 *   Steps are at least 0.5 Mbit/s and the rate at least 0.5 Mbit/s (PCC-Uspace kMinRateChange, kMinSendingRate);
 *   a rate at the minimum after a probing round restarts STARTING (as PCC-Uspace does).
 * - cwnd = max(4, 2 * rate * srtt / mss) so that the window never limits the paced rate (PCC-Kernel pcc_set_cwnd).
 *
 * Fixed point (no floats in BPF): rates in bytes/s (u64, as sk_pacing_rate); utilities in micro-units (s64,
 * utility * 10^6); dRTT/dT and L in parts per million (s64). x^0.9 is computed as 2^(0.9 * log2 x) with 65-entry
 * log2/exp2 tables and linear interpolation (pcc_vivace_fixed.h; max relative error 5.5e-5 measured, 1.05e-4 bound).
 * Signed divisions go through pv_sdiv (BPF before cpu v4 has no signed division).
 *
 * Simplifications and implementation choices (all also in docs/pcc-vivace.md, with measurements):
 * 1. x in the utility is the MI's target (pacing) rate, as PCC-Kernel uses interval->rate; the paper's x is the
 *    sending rate, which TCP pacing enforces unless the flow is application- or cwnd-limited (the cwnd never is).
 *    An application-limited flow is therefore not detected (PCC-Uspace's app-limited handling is not ported).
 * 2. dRTT/dT is the least-squares slope over the MI's per-ACK RTT samples (as PCC-Uspace); PCC-Kernel instead
 *    divides the change of srtt over the MI by the MI's duration.
 * 3. RTT-gradient noise filter: |dRTT/dT| < 0.03 counts as 0 (PCC-Kernel PCC_LAT_INFL_FILTER). Build with
 *    -DPV_USPACE_TOLERANCE for PCC-Uspace's rule instead (the slope counts only if it exceeds the fit's RMS
 *    residual / mean RTT; its RTT-trend history machinery is not ported).
 * 4. A negative dRTT/dT (a draining queue) counts as 0, as in PCC-Uspace (CalculateUtilityProportional); the
 *    paper's formula and PCC-Kernel let it raise the utility (PCC-Kernel outside STARTING only). Measured here, the
 *    reward for draining drove a single flow's rate down in cascades (to 70 % of the bottleneck) after every
 *    overshoot. Build with -DPV_KERNEL_NEGATIVE_GRADIENT for PCC-Kernel's treatment of a negative slope (that one
 *    rule only: the build is still this controller, not the module).
 * 5. Losses are attributed to the MI whose packets the ACK that marked them (s)acked, not to the MI the lost packet
 *    was sent in (the kernel only reports a count per ACK); the two differ only for losses marked at an MI boundary.
 * 6. One useful MI at a time in STARTING and DECISION_MADE (as PCC-Kernel's "wait" state does):
 *    decisions come every ~2 RTTs there, every ~5 RTTs in PROBING. Non-useful intervals run at the current rate.
 * 7. On an RTO (TCP_CA_Loss) the current round is dropped (this controller's choice; PCC-Kernel freezes its MIs
 *    during the loss state and keeps STARTING or moving afterwards); when the loss state ends the sender probes again
 *    at the current rate (after STARTING: at half of it).
 *    Fast-recovery losses are not special: they enter the utility through L.
 * 8. MI length: max(srtt, time of 20 packets at the MI's rate) (PCC-Uspace kMonitorIntervalDuration = 1 RTT,
 *    kMinimumPacketsPerInterval = 20 in pcc_sender.cpp at commit 0e6023d8; 5 at 2ca18114), no randomisation. Megabit = 10^6 bit (PCC-Uspace uses 2^20).
 * 9. The initial rate is max(snd_cwnd, 10) * mss / srtt (PCC-Uspace: initial window / initial RTT); with
 *    100 ms for srtt when no RTT sample exists yet.
 * 10. .get_info is left out (BPF congestion controls may not implement it).
 */
#include "tcp_ca_helpers.h"
#include "pcc_vivace_fixed.h"

char _license[] SEC("license") = "GPL";

#define TCP_INFINITE_SSTHRESH	0x7fffffff
#define USEC_PER_MSEC		1000ULL

/* Vivace utility: x^t - b x dRTT/dT - c x L, the paper's default parameters */
#define PV_T_NUM		9	/* t = 0.9 = 9/10 */
#define PV_T_DEN		10
#define PV_B			900	/* b = 900 */
#define PV_C_X100		1135	/* c = 11.35 */
/* 10^6 / 1000^0.9: x^0.9 is computed with x in kbit/s, the utility wants x in Mbit/s and micro-units */
#define PV_KBPS_TO_MBPS_POW_UU	1995262ULL	/* / 1000 */
/* rate control */
#define PV_EPS_PCT		5	/* epsilon = 0.05 (paper; PCC-Uspace kProbingStepSize) */
#define PV_OMEGA0_PCT		5	/* omega_0 (PCC-Uspace kInitialMaxStepSize) */
#define PV_DELTA_PCT		5	/* delta (PCC-Uspace kIncrementalStepSize) */
#define PV_AMP_NUM		6	/* m(tau) exponent 1.2 = 6/5 (PCC-Uspace kRateChangeAmplifyExponent) */
#define PV_AMP_DEN		5
#define PV_MIN_RATE		(500000ULL / 8)	/* 0.5 Mbit/s in bytes/s (PCC-Uspace kMinSendingRate) */
#define PV_MIN_CHANGE		(500000ULL / 8)	/* 0.5 Mbit/s (PCC-Uspace kMinRateChange) */
#define PV_MAX_RATE		(1ULL << 40)	/* 8.8 Tbit/s: keeps every product below 2^63 */
/* monitor intervals */
#define PV_MI_MIN_PKTS		20	/* PCC-Uspace kMinimumPacketsPerInterval */
#define PV_LAT_FILTER_PPM	30000	/* |dRTT/dT| < 0.03 -> 0 (PCC-Kernel PCC_LAT_INFL_FILTER = 30 / 1000) */
#define PV_MAX_SAMPLES		32768	/* RTT samples per MI in the regression (keeps the sums below 2^57) */
#define PV_T_CLAMP		(1LL << 21)	/* |t|, |rtt - rtt_0| clamp in us (2.1 s) for the same reason */
#define PV_NMI			4	/* useful MIs per round: 4 in PROBING, 1 otherwise */

enum pv_mode { PV_STARTING, PV_PROBING, PV_DECISION_MADE };

struct pv_mi {
	__u64 rate;		/* target rate of the MI, bytes/s */
	__u64 t_start;		/* tcp_mstamp (us) when its sending started */
	__u32 d_start;		/* tp->delivered when its sending started */
	__u32 d_end;		/* tp->delivered when its sending ended (valid once ended) */
	__u32 acked;		/* packets (s)acked by ACKs attributed to the MI */
	__u32 lost;		/* packets those ACKs marked lost */
	__u32 n;		/* RTT samples in the regression */
	__u8 ended;		/* sending done */
	__u8 done;		/* all its ACKs seen, utility valid */
	__u8 pad[2];
	__s64 t0, y0;		/* first sample's send time and RTT (us): the sums are taken relative to them */
	__s64 st, sy, stt, sty, syy;	/* regression sums of t, y, t^2, t*y, y^2 */
	/* results (once done) */
	__s64 g_raw_ppm;	/* least-squares dRTT/dT, ppm */
	__s64 msr;		/* mean squared residual of the fit, us^2 */
	__s64 avg_rtt;		/* mean RTT of the samples, us */
	__s64 g_ppm;		/* dRTT/dT that entered the utility (after the noise filter), ppm */
	__s64 utility;		/* micro-units */
};

struct pv {
	__u64 rate;		/* the central sending rate r, bytes/s (PCC-Uspace sending_rate_) */
	__u64 latest_rate;	/* PCC-Uspace latest_utility_info_: the rate ... */
	__s64 latest_util;	/* ... and utility the next MI is compared with */
	__u32 probe_order;	/* random bits: order of each probing pair */
	__u8 mode;		/* enum pv_mode */
	__u8 rounds;		/* PCC-Uspace rounds_: tau for the confidence amplifier */
	__u8 k;			/* dynamic change boundary: omega = omega_0 + k * delta */
	__s8 dir;		/* +1 increase, -1 decrease (DECISION_MADE) */
	__u8 n_planned;		/* useful MIs in this round */
	__u8 n_started;		/* ... started so far */
	__u8 n_done;		/* ... complete so far */
	__u8 sending;		/* a useful MI (index n_started - 1) is being sent */
	__u8 in_loss;		/* TCP_CA_Loss: statistics suspended */
	__u8 have_latest;
	__u8 pad[6];
	struct pv_mi mi[PV_NMI];
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct pv);
} pcc_usp_state SEC(".maps");

#ifdef PV_DEBUG
/* development only (not built by the Makefile): every decision into an array, read with bpftool map dump */
#define PV_LOG_N 4096
struct pv_log {
	__u64 t, rate_before, rate_after;
	__u64 mi_rate[PV_NMI];
	__s64 u[PV_NMI], g[PV_NMI], graw[PV_NMI], err[PV_NMI], avg[PV_NMI];
	__u32 n[PV_NMI], acked[PV_NMI], lost[PV_NMI];
	__u32 mode_before, mode_after, k, rounds;
	__s32 dir;
	__u32 pad;
};
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PV_LOG_N);
	__type(key, __u32);
	__type(value, struct pv_log);
} pv_log SEC(".maps");
__u32 pv_log_idx;
#endif

static __always_inline __s64 pv_abs(__s64 a)
{
	return a < 0 ? -a : a;
}

/* signed division without the BPF cpu-v4 sdiv instruction; b == 0 gives 0 */
static __always_inline __s64 pv_sdiv(__s64 a, __s64 b)
{
	__u64 q, ua = (__u64)pv_abs(a), ub = (__u64)pv_abs(b);

	if (!ub)
		return 0;
	q = ua / ub;
	return ((a < 0) != (b < 0)) ? -(__s64)q : (__s64)q;
}

static __always_inline __u32 pv_srtt_us(const struct tcp_sock *tp)
{
	return tp->srtt_us ? max(tp->srtt_us >> 3, 1U) : 0;
}

static __always_inline void pv_new_round(struct pv *pv, __u8 mode)
{
	int i;

	pv->mode = mode;
	pv->n_planned = mode == PV_PROBING ? PV_NMI : 1;
	pv->n_started = 0;
	pv->n_done = 0;
	pv->sending = 0;
	pv->probe_order = bpf_get_prandom_u32();
	for (i = 0; i < PV_NMI; i++) {
		pv->mi[i].ended = 0;
		pv->mi[i].done = 0;
	}
}

/* Least-squares line through the MI's RTT samples over their send times: the slope dRTT/dT (ppm), the mean RTT
 * and the mean squared residual (us^2), from which PCC-Uspace's rtt_gradient_error = RMS residual / mean RTT. */
static __always_inline void pv_rtt_fit(struct pv_mi *mi)
{
	__s64 n = mi->n, a, b, cov, var, syy, g, expl, ssr, avg;
	int i;

	mi->g_raw_ppm = 0;
	mi->msr = 0;
	mi->avg_rtt = 0;
	if (n < 2)
		return;
	a = pv_sdiv(mi->st, n);		/* ~ mean t, mean y: any a, b give exact centred sums below */
	b = pv_sdiv(mi->sy, n);
	cov = mi->sty - a * mi->sy - b * mi->st + n * a * b;
	var = mi->stt - 2 * a * mi->st + n * a * a;
	syy = mi->syy - 2 * b * mi->sy + n * b * b;
	for (i = 0; i < 24; i++) {	/* keep cov * 10^6 in 62 bits */
		if (pv_abs(cov) < (1LL << 42))
			break;
		cov >>= 1;
		var >>= 1;
	}
	if (var <= 0)
		return;
	g = pv_sdiv(cov * 1000000, var);
	if (g > 1000000)
		g = 1000000;
	if (g < -1000000)
		g = -1000000;
	/* residual sum of squares = syy - cov^2 / var = syy - g * cov */
	expl = pv_sdiv(g * cov, 1000000) << i;
	ssr = syy - expl;
	if (ssr < 0)
		ssr = 0;
	avg = mi->y0 + b;
	if (avg < 1)
		avg = 1;
	mi->g_raw_ppm = g;
	mi->msr = (__s64)((__u64)ssr / (__u64)n);
	mi->avg_rtt = avg;
}

/* Vivace utility of a complete MI, micro-units */
static __always_inline __s64 pv_utility(const struct pv *pv, struct pv_mi *mi)
{
	__s64 x_kbps = (__s64)(mi->rate * 8 / 1000), g_ppm, l_ppm = 0, u;
	__u32 total = mi->acked + mi->lost;

	(void)pv;	/* only the PV_KERNEL_NEGATIVE_GRADIENT variant looks at the mode */
	if (x_kbps < 1)
		x_kbps = 1;
	/* x^0.9 with x in Mbit/s, in micro-units */
	u = (__s64)((pv_pow_q16(x_kbps, PV_T_NUM, PV_T_DEN) * PV_KBPS_TO_MBPS_POW_UU / 1000) >> 16);
	pv_rtt_fit(mi);
	g_ppm = mi->g_raw_ppm;
#ifndef PV_USPACE_TOLERANCE
	/* PCC-Kernel: |dRTT/dT| below PCC_LAT_INFL_FILTER (0.03) is noise */
	if (pv_abs(g_ppm) < PV_LAT_FILTER_PPM)
		g_ppm = 0;
#else
	{
		/* alternative (docs/pcc-vivace.md): PCC-Uspace DetermineToleranceGeneral, the gradient counts only if
		 * it exceeds the fit's error, |g| > RMS residual / mean RTT <=> (|g| * mean RTT)^2 > mean sq. residual */
		__s64 d = pv_abs(g_ppm) * mi->avg_rtt / 1000000;

		if (d * d <= mi->msr)
			g_ppm = 0;
	}
#endif
#ifdef PV_KERNEL_NEGATIVE_GRADIENT
	if (pv->mode == PV_STARTING && g_ppm < 0)	/* PCC-Kernel: negative gradients count except in STARTING */
		g_ppm = 0;
#else
	if (g_ppm < 0)		/* PCC-Uspace: a falling RTT (a draining queue) earns nothing */
		g_ppm = 0;
#endif
	mi->g_ppm = g_ppm;
	if (total)
		l_ppm = (__s64)((__u64)mi->lost * 1000000 / total);
	/* b * x[Mbit/s] * g * 10^6 = 900 * x_kbps * g_ppm / 1000 */
	u -= pv_sdiv(PV_B * x_kbps * g_ppm, 1000);
	/* c * x[Mbit/s] * L * 10^6 = 11.35 * x_kbps * l_ppm / 1000 */
	u -= (__s64)((__u64)(PV_C_X100 * x_kbps) * (__u64)l_ppm / 100000);
	return u;
}

/* PCC-Uspace ComputeRateChange: bytes/s. delta_u micro-units, delta_x bytes/s (> 0) */
static __always_inline __u64 pv_rate_change(struct pv *pv, __s64 delta_u, __u64 delta_x, int amplify)
{
	__u64 dx_kbps = delta_x * 8 / 1000, change_kbps = 0, change, bound;
	__u32 m;

	/* gamma [utility per Mbit/s] = (du / 10^6) / (dx_kbps / 10^3); change [Mbit/s] = theta_0 * gamma with
	 * theta_0 = 1, i.e. change_kbps = 10^3 * gamma = du / dx_kbps */
	if (dx_kbps && delta_u > 0)
		change_kbps = (__u64)delta_u / dx_kbps;
	change = min(change_kbps * 125, PV_MAX_RATE);	/* kbit/s -> bytes/s */
	if (amplify) {
		/* m(tau) = floor((tau + 1) / 2)^1.2 */
		m = ((__u32)pv->rounds + 1) / 2;
		if (m < 1)
			m = 1;
		if (m > 64)
			m = 64;
		change = change * pv_pow_q16(m, PV_AMP_NUM, PV_AMP_DEN) >> 16;
	} else {
		pv->k = 0;
	}
	bound = pv->rate * (PV_OMEGA0_PCT + PV_DELTA_PCT * (__u64)pv->k) / 100;
	if (change > bound) {
		change = bound;
		if (pv->k < 255)
			pv->k++;
	} else if (pv->k > 0) {
		pv->k--;
	}
	return max(change, PV_MIN_CHANGE);
}

/* PCC-Uspace: is the higher rate of pair (i, i+1) the better one? */
static __always_inline int pv_pair_increase(const struct pv *pv, int i)
{
	const struct pv_mi *a = &pv->mi[i & 3], *b = &pv->mi[(i + 1) & 3];

	return a->utility > b->utility ? a->rate > b->rate : a->rate < b->rate;
}

static __always_inline void pv_enter_probing(struct pv *pv)
{
	pv->rounds = 1;
	pv_new_round(pv, PV_PROBING);
}

/* PCC-Uspace EnterDecisionMade: move by one gradient step in pv->dir */
static __always_inline void pv_step(struct pv *pv, __s64 delta_u, __u64 delta_x, int amplify)
{
	__u64 change = pv_rate_change(pv, delta_u, delta_x, amplify);

	if (pv->dir > 0)
		pv->rate += change;
	else
		pv->rate = pv->rate > change ? pv->rate - change : 0;
	if (pv->rate < PV_MIN_RATE) {
		pv->rate = PV_MIN_RATE;
		pv->k = 0;
		pv_enter_probing(pv);
	} else {
		pv_new_round(pv, PV_DECISION_MADE);
	}
}

static __always_inline void pv_decide_mode(struct pv *pv);

/* all useful MIs of the round are complete: the rate decision */
static __always_inline void pv_decide(struct pv *pv)
{
	pv_decide_mode(pv);
	if (pv->rate > PV_MAX_RATE)
		pv->rate = PV_MAX_RATE;
}

static __always_inline void pv_decide_mode(struct pv *pv)
{
	struct pv_mi *mi0 = &pv->mi[0];
	__s64 u = mi0->utility, du;
	__u64 r = mi0->rate, dx;
	int inc0, inc1, cont;

	if (pv->mode == PV_STARTING) {
		if (!pv->have_latest || u > pv->latest_util) {
			pv->latest_rate = r;
			pv->latest_util = u;
			pv->have_latest = 1;
			pv->rate = r * 2;
			if (pv->rounds < 255)
				pv->rounds++;
			pv_new_round(pv, PV_STARTING);
		} else {
			/* back to half the rate (the last rate whose utility increased), then learn */
			pv->rate = max(pv->rate / 2, PV_MIN_RATE);
			pv->k = 0;
			pv_enter_probing(pv);
		}
		return;
	}

	if (pv->mode == PV_PROBING) {
		inc0 = pv_pair_increase(pv, 0);
		inc1 = pv_pair_increase(pv, 2);
		if (inc0 != inc1) {
			/* inconclusive: probe again around the same rate */
			if (pv->rounds < 255)
				pv->rounds++;
			pv_new_round(pv, PV_PROBING);
		} else {
			pv->dir = inc0 ? 1 : -1;
			/* the better MI of the (last) agreeing pair is what the next MI is compared with */
			if (pv->mi[2].utility > pv->mi[3].utility) {
				pv->latest_rate = pv->mi[2].rate;
				pv->latest_util = pv->mi[2].utility;
			} else {
				pv->latest_rate = pv->mi[3].rate;
				pv->latest_util = pv->mi[3].utility;
			}
			pv->have_latest = 1;
			/* from r to r(1 +- eps), then the gradient step; gamma from both pairs */
			pv->rate = pv->rate * (100 + pv->dir * PV_EPS_PCT) / 100;
			pv->rounds = 1;
			du = (__s64)(((__u64)pv_abs(pv->mi[0].utility - pv->mi[1].utility) +
				      (__u64)pv_abs(pv->mi[2].utility - pv->mi[3].utility)) / 2);
			dx = pv->mi[0].rate > pv->mi[1].rate ? pv->mi[0].rate - pv->mi[1].rate :
							       pv->mi[1].rate - pv->mi[0].rate;
			pv_step(pv, du, dx, 0);
		}
		if ((pv->rounds > 1 || pv->mode == PV_DECISION_MADE) && pv->rate <= PV_MIN_RATE) {
			pv->rate = PV_MIN_RATE;
			pv->k = 0;
			pv->rounds = 1;
			pv_new_round(pv, PV_STARTING);
		}
		return;
	}

	/* DECISION_MADE: PCC-Uspace's test whether the utility still improves in the direction of movement */
	cont = pv->dir > 0 ? ((u > pv->latest_util && r > pv->latest_rate) || (u < pv->latest_util && r < pv->latest_rate))
			   : ((u > pv->latest_util && r < pv->latest_rate) || (u < pv->latest_util && r > pv->latest_rate));
	du = pv_abs(u - pv->latest_util);
	dx = r > pv->latest_rate ? r - pv->latest_rate : pv->latest_rate - r;
	if (cont) {
		if (pv->rounds < 255)
			pv->rounds++;
		pv_step(pv, du, dx, 1);
		pv->latest_rate = r;
		pv->latest_util = u;
	} else {
		/* step back once (amplifier 1) and learn again */
		__u64 change;

		pv->rounds = 1;
		change = pv_rate_change(pv, du, dx, 1);
		if (pv->dir > 0)
			pv->rate = pv->rate > change ? pv->rate - change : 0;
		else
			pv->rate += change;
		if (pv->rate < PV_MIN_RATE) {
			pv->rate = PV_MIN_RATE;
			pv->k = 0;
		}
		pv_enter_probing(pv);
	}
}

/* The heavy parts are global BPF functions: the verifier checks each once instead of once per call site and loop
 * iteration. (The verifier treats a global function's pointer argument as possibly NULL.) */

/* all ACKs of MI i are in: its utility */
__attribute__((noinline)) int pv_mi_done(struct pv *pv, __u32 i)
{
	struct pv_mi *mi;

	if (!pv)
		return 0;
	mi = &pv->mi[i & 3];
	mi->done = 1;
	mi->utility = pv_utility(pv, mi);
	pv->n_done++;
	return 0;
}

/* every useful MI of the round is done: the rate decision */
__attribute__((noinline)) int pv_round_done(struct pv *pv, __u64 now)
{
#ifdef PV_DEBUG
	struct pv_log *l;
	__u32 key;
	int i;
#endif

	(void)now;	/* PV_DEBUG's log only */
	if (!pv)
		return 0;
#ifdef PV_DEBUG
	key = pv_log_idx++ % PV_LOG_N;
	l = bpf_map_lookup_elem(&pv_log, &key);
	if (l) {
		l->t = now;
		l->rate_before = pv->rate;
		l->mode_before = pv->mode;
		for (i = 0; i < PV_NMI; i++) {
			l->mi_rate[i] = pv->mi[i].rate;
			l->u[i] = pv->mi[i].utility;
			l->g[i] = pv->mi[i].g_ppm;
			l->graw[i] = pv->mi[i].g_raw_ppm;
			l->err[i] = pv->mi[i].msr;
			l->avg[i] = pv->mi[i].avg_rtt;
			l->n[i] = pv->mi[i].n;
			l->acked[i] = pv->mi[i].acked;
			l->lost[i] = pv->mi[i].lost;
		}
	}
#endif
	pv_decide(pv);
#ifdef PV_DEBUG
	if (l) {
		l->rate_after = pv->rate;
		l->mode_after = pv->mode;
		l->k = pv->k;
		l->rounds = pv->rounds;
		l->dir = pv->dir;
	}
#endif
	return 1;
}

/* attribute an ACK to the MI its newest (s)acked packet was sent in; complete MIs */
static __always_inline void pv_on_ack(struct pv *pv, const struct rate_sample *rs, __u64 now)
{
	__u32 p = rs->prior_delivered, acked = rs->acked_sacked, done = 0;
	__s32 losses = rs->losses;
	long rtt = rs->rtt_us;
	int i;

	if (!rs->prior_mstamp || !acked)
		return;
	for (i = 0; i < PV_NMI; i++) {
		struct pv_mi *mi = &pv->mi[i];

		if (i >= pv->n_started || mi->done)
			continue;
		if ((__s32)(p - mi->d_start) < 0)
			continue;
		if (mi->ended && (__s32)(p - mi->d_end) >= 0) {
			/* a packet sent after the MI was (s)acked: its results are in */
			done |= 1U << i;
			continue;
		}
		mi->acked += acked;
		if (losses > 0)
			mi->lost += losses;
		if (rtt > 0 && mi->n < PV_MAX_SAMPLES) {
			__s64 t = (__s64)(now - (__u64)rtt), y = rtt, dt, dy;

			if (!mi->n) {
				mi->t0 = t;
				mi->y0 = y;
			}
			dt = t - mi->t0;
			dy = y - mi->y0;
			if (dt > PV_T_CLAMP)
				dt = PV_T_CLAMP;
			if (dt < -PV_T_CLAMP)
				dt = -PV_T_CLAMP;
			if (dy > PV_T_CLAMP)
				dy = PV_T_CLAMP;
			if (dy < -PV_T_CLAMP)
				dy = -PV_T_CLAMP;
			mi->n++;
			mi->st += dt;
			mi->sy += dy;
			mi->stt += dt * dt;
			mi->sty += dt * dy;
			mi->syy += dy * dy;
		}
		break;	/* the packet belongs to one MI */
	}
	for (i = 0; i < PV_NMI; i++)
		if (done & (1U << i))
			pv_mi_done(pv, i);
	if (pv->n_planned && pv->n_done >= pv->n_planned)
		pv_round_done(pv, now);
}

static __always_inline __u64 pv_probe_rate(const struct pv *pv, int j)
{
	/* pair j/2 in order (high, low) or (low, high) */
	int high = ((j & 1) == 0) == !((pv->probe_order >> (j >> 1)) & 1);

	return pv->rate * (100 + (high ? PV_EPS_PCT : -PV_EPS_PCT)) / 100;
}

/* end the MI being sent when it is long enough, start the next useful one */
static __always_inline void pv_send_side(struct pv *pv, const struct tcp_sock *tp, const struct rate_sample *rs,
					 __u64 now)
{
	__u32 mss = tp->mss_cache ? tp->mss_cache : 1460, srtt = pv_srtt_us(tp);
	int j;

	if (pv->sending) {
		j = (pv->n_started - 1) & 3;
		struct pv_mi *mi = &pv->mi[j];
		__u64 dur = srtt, pkts_us = mi->rate ? (__u64)PV_MI_MIN_PKTS * mss * 1000000 / mi->rate : 0;

		dur = max(dur, pkts_us);
		/* end only on an ACK that delivered something: every packet sent before it then has
		 * tx.delivered < d_end, every packet sent after it >= d_end */
		if (now - mi->t_start >= dur && rs->acked_sacked && tp->delivered != mi->d_start) {
			mi->d_end = tp->delivered;
			mi->ended = 1;
			pv->sending = 0;
		}
	}
	if (!pv->sending && pv->n_started < pv->n_planned && pv->n_started < PV_NMI) {
		j = pv->n_started & 3;
		struct pv_mi *mi = &pv->mi[j];

		__builtin_memset(mi, 0, sizeof(*mi));
		mi->rate = pv->mode == PV_PROBING ? pv_probe_rate(pv, j) : pv->rate;
		mi->d_start = tp->delivered;
		mi->t_start = now;
		pv->n_started++;
		pv->sending = 1;
	}
}

/* pacing rate of the MI being sent (else the central rate) and a cwnd that does not limit it */
static __always_inline void pv_apply(struct sock *sk, struct pv *pv)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u64 rate = pv->rate, cwnd;
	__u32 srtt = pv_srtt_us(tp), mss = tp->mss_cache ? tp->mss_cache : 1460;

	if (pv->sending && pv->n_started > 0)
		rate = pv->mi[(pv->n_started - 1) & 3].rate;
	rate = max(rate, PV_MIN_RATE);
	rate = min(rate, PV_MAX_RATE);
	rate = min(rate, (__u64)sk->sk_max_pacing_rate);
	sk->sk_pacing_rate = rate;
	if (!srtt)
		srtt = USEC_PER_MSEC;
	cwnd = rate / mss * srtt / USEC_PER_SEC * 2;
	cwnd = max(cwnd, 4ULL);
	cwnd = min(cwnd, (__u64)tp->snd_cwnd_clamp);
	tp->snd_cwnd = (__u32)cwnd;
}

SEC("struct_ops/pcc_usp_init")
void BPF_PROG(pcc_usp_init, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct pv *pv;
	__u32 srtt = pv_srtt_us(tp), mss = tp->mss_cache ? tp->mss_cache : 1460;

	pv = bpf_sk_storage_get(&pcc_usp_state, sk, NULL, BPF_SK_STORAGE_GET_F_CREATE);
	if (!pv)
		return;
	__builtin_memset(pv, 0, sizeof(*pv));
	if (!srtt)
		srtt = 100 * USEC_PER_MSEC;
	pv->rate = (__u64)max(tp->snd_cwnd, 10U) * mss * USEC_PER_SEC / srtt;
	pv->rate = max(pv->rate, PV_MIN_RATE);
	pv->rounds = 1;
	pv->dir = 1;
	pv_new_round(pv, PV_STARTING);
	tp->snd_ssthresh = TCP_INFINITE_SSTHRESH;
	if (sk->sk_pacing_status == SK_PACING_NONE)
		sk->sk_pacing_status = SK_PACING_NEEDED;
	pv_apply(sk, pv);
}

SEC("struct_ops/pcc_usp_cong_control")
void BPF_PROG(pcc_usp_cong_control, struct sock *sk, __u32 ack, int flag, const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct pv *pv = bpf_sk_storage_get(&pcc_usp_state, sk, NULL, 0);
	__u64 now = tp->tcp_mstamp;

	if (!pv)
		return;
	if (!pv->in_loss) {
		pv_on_ack(pv, rs, now);
		pv_send_side(pv, tp, rs, now);
	}
	pv_apply(sk, pv);
}

SEC("struct_ops/pcc_usp_set_state")
void BPF_PROG(pcc_usp_set_state, struct sock *sk, __u8 new_state)
{
	struct pv *pv = bpf_sk_storage_get(&pcc_usp_state, sk, NULL, 0);

	if (!pv)
		return;
	if (new_state == TCP_CA_Loss && !pv->in_loss) {
		/* RTO: the counters of this round cannot be trusted; hold the rate */
		pv->in_loss = 1;
		pv->sending = 0;
		pv->n_planned = 0;
	} else if (new_state != TCP_CA_Loss && pv->in_loss) {
		pv->in_loss = 0;
		if (pv->mode == PV_STARTING)
			pv->rate = max(pv->rate / 2, PV_MIN_RATE);
		pv->k = 0;
		pv_enter_probing(pv);
	}
}

/* PCC does not reduce cwnd on loss (PCC-Kernel pcc_undo_cwnd / pcc_ssthresh) */
SEC("struct_ops/pcc_usp_undo_cwnd")
__u32 BPF_PROG(pcc_usp_undo_cwnd, struct sock *sk)
{
	return tcp_sk(sk)->snd_cwnd;
}

SEC("struct_ops/pcc_usp_ssthresh")
__u32 BPF_PROG(pcc_usp_ssthresh, struct sock *sk)
{
	return TCP_INFINITE_SSTHRESH;
}

SEC(".struct_ops")
struct tcp_congestion_ops pcc_vivace_usp = {
	.init		= (void *)pcc_usp_init,
	.cong_control	= (void *)pcc_usp_cong_control,
	.set_state	= (void *)pcc_usp_set_state,
	.undo_cwnd	= (void *)pcc_usp_undo_cwnd,
	.ssthresh	= (void *)pcc_usp_ssthresh,
	.flags		= TCP_CONG_NON_RESTRICTED,
	.name		= "pcc_vivace_usp",
};
