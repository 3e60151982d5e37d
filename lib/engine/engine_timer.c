/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Timers: the local ACK timeout and the RNR timer in TSC ticks, and the engine's earliest
 * deadline, which keeps the timer stage (req_stage_timers) from scanning its list before
 * anything can have expired. A QP's timer is armed by qp_timer_arm() (engine_qp.c: the
 * engine's lists are the QP's business).
 */
#include "engine_loc.h"

uint64_t
engine_ack_timeout_tsc(const struct droce_engine *e, unsigned int timeout)
{
	if (timeout == 0)
		return 0;
	/* 4.096 us * 2^timeout = 4096 ns << timeout */
	return (uint64_t)((double)e->tsc_hz * 4096e-9 * (double)(1ull << timeout));
}

/* IB spec table 45 (RNR NAK timer field encoding), in units of 10 us. */
static const uint32_t rnr_timer_10us[32] = {
	65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768,
	1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
};

uint64_t
engine_rnr_timer_tsc(const struct droce_engine *e, unsigned int code)
{
	return e->tsc_hz / 100000 * rnr_timer_10us[code & 31];
}

/* Has the earliest deadline of e's timer list possibly passed (e->now)? */
bool
engine_timers_due(const struct droce_engine *e)
{
	return e->now >= e->timer_next;
}

/* The earlier of next and qp's running timers' deadlines. */
uint64_t
engine_timer_earliest(const struct droce_engine_qp *qp, uint64_t next)
{
	if (!(qp->lists & QP_ON_TIMER))
		return next;
	if (qp->req.ack_deadline != 0 && qp->req.ack_deadline < next)
		next = qp->req.ack_deadline;
	if (qp->req.rnr_wait && qp->req.rnr_deadline < next)
		next = qp->req.rnr_deadline;
	return next;
}
