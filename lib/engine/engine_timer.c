/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Timers: the local ACK timeout and the RNR timer in TSC ticks, the engine's earliest
 * deadline, which keeps the timer stage (req_stage_timers) from scanning its list before
 * anything can have expired, and early retransmission's round-trip estimate. A QP's timer
 * is armed by qp_timer_arm() (engine_qp.c: the engine's lists are the QP's business).
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
	if (qp->req.early_deadline != 0 && qp->req.early_deadline < next)
		next = qp->req.early_deadline;
	if (qp->cc.pace_deadline != 0 && qp->cc.pace_deadline < next)
		next = qp->cc.pace_deadline;
	return next;
}

/*
 * Early retransmission. IBTA 9.7.5.1.2 lets a responder NAK a sequence error once: when
 * that NAK, or the first packet resent for it, is lost, only the local ACK timer recovers,
 * and applications set it for the worst path (perftest: 67 ms; 1% loss then cost 97% of
 * the goodput). So an RC requester with packets out and no ACK for a few round trips goes
 * back to una once, early, as a timeout would, but without spending the retry counter:
 * that stays the timeout's (9.7.6.1.3), so a dead peer is declared so exactly as before.
 * A wrong guess costs a window of duplicates, which the responder acknowledges and drops.
 * The round trip is RFC 6298's estimator on one packet at a time, never a resent one.
 */
void
engine_rtt_sent(struct droce_engine_qp *qp)
{
	if (qp->req.rtt_sent != 0 || qp->req.psn != qp->req.psn_max)
		return;		/* a sample runs, or this was a resent packet */
	qp->req.rtt_sent = qp->engine->now;
	qp->req.rtt_psn = droce_psn_add(qp->req.psn, DROCE_PSN_MASK);	/* psn - 1 */
}

void
engine_rtt_acked(struct droce_engine_qp *qp, bool beyond)
{
	uint64_t r, dev;

	qp->req.early_count = 0;
	/*
	 * After an early go-back, an ACK of PSNs the requester has not resent yet (beyond)
	 * answers the original packets: the go-back was spurious (the peer was only slow: an
	 * engine napping, a CPU shared), so wait twice as long from now on. One that was
	 * needed (the ACK is for resent packets) halves the wait again.
	 */
	if (qp->req.early_at != 0) {
		if (beyond) {
			if (qp->req.early_shift < ENGINE_EARLY_SHIFT_MAX)
				qp->req.early_shift++;
		} else if (qp->req.early_shift > 0) {
			qp->req.early_shift--;
		}
		qp->req.early_at = 0;
	}
	if (qp->req.rtt_sent == 0 || !droce_psn_gt(qp->req.una, qp->req.rtt_psn))
		return;
	r = qp->engine->now - qp->req.rtt_sent;
	qp->req.rtt_sent = 0;
	qp->engine->rtt_all = qp->engine->rtt_all == 0 ? r : (7 * qp->engine->rtt_all + r) / 8;
	if (qp->req.srtt == 0) {
		qp->req.srtt = r;
		qp->req.rttvar = r / 2;
		return;
	}
	dev = r > qp->req.srtt ? r - qp->req.srtt : qp->req.srtt - r;
	qp->req.rttvar = (3 * qp->req.rttvar + dev) / 4;
	qp->req.srtt = (7 * qp->req.srtt + r) / 8;
}

void
engine_rtt_void(struct droce_engine_qp *qp)
{
	qp->req.rtt_sent = 0;
}

uint64_t
engine_early_deadline(const struct droce_engine_qp *qp)
{
	const struct droce_engine *e = qp->engine;
	uint64_t rto, floor = e->tsc_hz / 1000000 * ENGINE_EARLY_RTO_MIN_US;

	if (!e->early_retransmit || qp->req.early_count >= ENGINE_EARLY_MAX ||
	    qp->req.ack_deadline == 0)
		return 0;
	/*
	 * Before the QP's first sample (RFC 6298 2.1 starts at 1 s; a fabric is faster): 2 ms,
	 * or twice what the engine's other QPs see, when that is longer.
	 */
	rto = qp->req.srtt != 0 ? qp->req.srtt + 4 * qp->req.rttvar :
	      RTE_MAX(e->tsc_hz / 1000000 * ENGINE_EARLY_RTO_INIT_US, 2 * e->rtt_all);
	if (rto < floor)
		rto = floor;
	/* the resent packet may be lost too: each further try waits twice as long */
	rto <<= qp->req.early_count + qp->req.early_shift;
	if (e->now + rto >= qp->req.ack_deadline)
		return 0;	/* the timeout itself comes first */
	return e->now + rto;
}
