/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015)
 * as a ConnectX's firmware exposes it: the notification point's CNP interval and the
 * reaction point's rate machine. Time is passed in, in nanoseconds, and timers are caught
 * up when the QP next sends or gets a CNP: an idle QP costs nothing, and the result is
 * the one periodic timers would have given (doc/congestion.md, "The algorithm").
 */
#include "droce_cc.h"

#define NS_PER_US	1000u
#define KBPS_PER_MBPS	1000u
/*
 * Expirations caught up in one call: alpha is below 2^-10 after that many periods at any
 * dce_tcp_g below 1023 (the rest of the decay is skipped: 0), and a QP that got no CNP for
 * that many rate increase periods is unlimited again (droce_cc_rp_update).
 */
#define CATCH_UP_MAX	16384u

bool
droce_cc_np_ce(const struct droce_cc_params *p, struct droce_cc_np *np, uint64_t now_ns)
{
	if (np->sent && now_ns - np->last_cnp_ns < (uint64_t)p->min_time_between_cnps * NS_PER_US)
		return false;
	np->sent = true;
	np->last_cnp_ns = now_ns;
	return true;
}

void
droce_cc_rp_init(const struct droce_cc_params *p, struct droce_cc_rp *rp, uint64_t line_kbps)
{
	uint64_t max = p->rpg_max_rate != 0 ? (uint64_t)p->rpg_max_rate * KBPS_PER_MBPS : line_kbps;

	*rp = (struct droce_cc_rp){
		.alpha = p->initial_alpha_value << DROCE_CC_ALPHA_SHIFT,
		.rc_kbps = max,
		.rt_kbps = max,
		.max_kbps = max,
		.bytes_per_bc = (uint64_t)p->rpg_byte_reset * DROCE_CC_BYTE_UNIT,
	};
}

/* alpha <- (1 - g) alpha + g when a CNP came in the period, else (1 - g) alpha. */
static uint32_t
alpha_step(const struct droce_cc_params *p, uint32_t alpha, bool cnp)
{
	uint32_t kept = (uint32_t)(((uint64_t)alpha * p->dce_tcp_g) / DROCE_CC_ALPHA_ONE);

	return cnp ? kept + ((DROCE_CC_ALPHA_ONE - p->dce_tcp_g) << DROCE_CC_ALPHA_SHIFT) : kept;
}

/*
 * One rate increase event of the timer (timer) or the byte counter. T and BC count the
 * earlier expirations since the cut: below F both, fast recovery; above F both, hyper
 * increase by (min(T, BC) - F) steps; else additive increase. The rate then moves half
 * way to the target. Near the max it is the max again, and the QP is no longer limited.
 */
static void
rp_increase(const struct droce_cc_params *p, struct droce_cc_rp *rp, bool timer)
{
	uint32_t f = p->rpg_threshold, t = rp->t_stage, bc = rp->bc_stage;
	enum droce_cc_step step;

	if (t < f && bc < f) {
		step = DROCE_CC_FAST_RECOVERY;
	} else if (t > f && bc > f) {
		step = DROCE_CC_HYPER;
		rp->rt_kbps += (uint64_t)((t < bc ? t : bc) - f) * p->rpg_hai_rate * KBPS_PER_MBPS;
	} else {
		step = DROCE_CC_ADDITIVE;
		rp->rt_kbps += (uint64_t)p->rpg_ai_rate * KBPS_PER_MBPS;
	}
	if (rp->rt_kbps > rp->max_kbps)
		rp->rt_kbps = rp->max_kbps;
	rp->rc_kbps = (rp->rt_kbps + rp->rc_kbps) / 2;
	rp->increases[step]++;
	if (timer)
		rp->t_stage++;
	else
		rp->bc_stage++;
	/* Back within 1/1024 of the max: unlimited again, as before the first CNP. */
	if (rp->rt_kbps == rp->max_kbps &&
	    rp->max_kbps - rp->rc_kbps <= rp->max_kbps / DROCE_CC_ALPHA_ONE) {
		rp->rc_kbps = rp->max_kbps;
		rp->limited = false;
	}
}

void
droce_cc_rp_update(const struct droce_cc_params *p, struct droce_cc_rp *rp, uint64_t now_ns)
{
	uint64_t period, k, i;

	if (!rp->limited)
		return;
	period = (uint64_t)p->dce_tcp_rtt * NS_PER_US;
	if (now_ns - rp->alpha_ns >= period) {
		k = (now_ns - rp->alpha_ns) / period;
		rp->alpha_ns += k * period;
		rp->alpha = alpha_step(p, rp->alpha, rp->cnp_in_period);
		rp->cnp_in_period = false;
		for (i = 1; i < k && rp->alpha != 0; i++) {
			if (i == CATCH_UP_MAX) {
				rp->alpha = 0;
				break;
			}
			rp->alpha = alpha_step(p, rp->alpha, false);
		}
	}
	period = (uint64_t)p->rpg_time_reset * NS_PER_US;
	if (now_ns - rp->timer_ns >= period) {
		k = (now_ns - rp->timer_ns) / period;
		rp->timer_ns += k * period;
		for (i = 0; i < k && i < CATCH_UP_MAX && rp->limited; i++)
			rp_increase(p, rp, true);
		/*
		 * An idle spell longer than that: no CNP came for CATCH_UP_MAX increase periods
		 * (5 s at the default), so the path is as good as uncongested: back to the max
		 * at once rather than by more steps on the engine's thread.
		 */
		if (i == CATCH_UP_MAX && rp->limited) {
			rp->rc_kbps = rp->rt_kbps = rp->max_kbps;
			rp->limited = false;
		}
	}
}

void
droce_cc_rp_cnp(const struct droce_cc_params *p, struct droce_cc_rp *rp, uint64_t now_ns)
{
	uint64_t dec, dec_max, min;

	droce_cc_rp_update(p, rp, now_ns);
	rp->cnps++;
	rp->cnp_in_period = true;
	if (!rp->limited) {
		/* The first CNP (since the rate last recovered): alpha starts over. */
		rp->limited = true;
		rp->alpha = p->initial_alpha_value << DROCE_CC_ALPHA_SHIFT;
		rp->alpha_ns = now_ns;
		if (p->rate_to_set_on_first_cnp != 0) {
			rp->rc_kbps = (uint64_t)p->rate_to_set_on_first_cnp * KBPS_PER_MBPS;
			if (rp->rc_kbps > rp->max_kbps)
				rp->rc_kbps = rp->max_kbps;
			rp->rt_kbps = rp->rc_kbps;
			goto reset;
		}
	} else if (now_ns - rp->cut_ns < (uint64_t)p->rate_reduce_monitor_period * NS_PER_US) {
		return;		/* one cut per monitor period; alpha still counts the CNP */
	}
	/* RT = RC; RC = RC (1 - alpha / 2), alpha / 2 being alpha(1024ths) / 2^rpg_gd. */
	rp->rt_kbps = rp->rc_kbps;
	dec = (rp->rc_kbps * rp->alpha) >> (p->rpg_gd + DROCE_CC_ALPHA_SHIFT);
	dec_max = rp->rc_kbps * p->rpg_min_dec_fac / 100;
	rp->rc_kbps -= dec < dec_max ? dec : dec_max;
	min = (uint64_t)p->rpg_min_rate * KBPS_PER_MBPS;
	if (rp->rc_kbps < min)
		rp->rc_kbps = min;
	rp->cuts++;
reset:
	rp->t_stage = 0;
	rp->bc_stage = 0;
	rp->bytes = 0;
	rp->timer_ns = now_ns;
	rp->cut_ns = now_ns;
}

void
droce_cc_rp_sent(const struct droce_cc_params *p, struct droce_cc_rp *rp, uint32_t bytes,
		 uint64_t now_ns)
{
	if (!rp->limited)
		return;
	droce_cc_rp_update(p, rp, now_ns);
	rp->bytes += bytes;
	while (rp->limited && rp->bytes >= rp->bytes_per_bc) {
		rp->bytes -= rp->bytes_per_bc;
		rp_increase(p, rp, false);
	}
}
