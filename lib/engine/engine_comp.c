/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completer (IB spec 9.7.5.1-9.7.5.2): ACKs, NAKs and RNR NAKs of RC requests. ACKs are
 * cumulative: one retires every WQE whose last PSN it covers, in order. Runs on the QP's
 * engine.
 */
#include "engine_loc.h"

/* Completes the WQE at cons in error and moves the QP to ERR (IB 9.9.2). */
static void
comp_fail(struct droce_qp *qp, uint8_t status)
{
	if (qp->req.cons != qp->req.fetch) {
		qp->req.cons++;
		__atomic_store_n(&qp->ctl->sq.cons, qp->req.cons, __ATOMIC_RELEASE);
		qp_send_complete(qp, qp_swqe(qp, qp->req.cons - 1), status);
	}
	qp_to_error(qp);
}

/* Is ack a PSN this QP has sent and not yet seen acknowledged? (una - 1 counts: no-op) */
static bool
comp_psn_valid(const struct droce_qp *qp, uint32_t ack)
{
	return droce_psn_dist(qp->req.una, droce_psn_add(ack, 1)) <=
	       droce_psn_dist(qp->req.una, qp->req.psn_max);
}

void
comp_retire(struct droce_qp *qp, uint32_t ack)
{
	struct droce_engine *e = qp->engine;
	uint32_t una = droce_psn_add(ack, 1);
	uint32_t cons = qp->req.cons;

	if (!comp_psn_valid(qp, ack))
		return;
	while (qp->req.cons != qp->req.fetch) {
		struct engine_swqe *w = qp_swqe(qp, qp->req.cons);
		uint32_t last = droce_psn_add(w->first_psn, w->npkts - 1);

		if (w->status != DROCE_SHM_WC_SUCCESS || droce_psn_gt(last, ack))
			break;
		qp->req.cons++;
	}
	/*
	 * Slots first, completions after: an application that polled a send completion
	 * may post into its slot at once (the CQE's release store publishes cons too).
	 */
	if (qp->req.cons != cons)
		__atomic_store_n(&qp->ctl->sq.cons, qp->req.cons, __ATOMIC_RELEASE);
	for (; cons != qp->req.cons; cons++) {
		qp_send_complete(qp, qp_swqe(qp, cons), DROCE_SHM_WC_SUCCESS);
		if (qp->state == DROCE_SHM_QPS_ERR)
			return;		/* the CQ overran: everything was flushed */
	}
	if (una != qp->req.una) {
		/* Forward progress resets both retry counters (9.7.5.2.8, 9.7.6.1.3). */
		qp->req.una = una;
		qp->req.retry_left = qp->attr.retry_cnt;
		qp->req.rnr_left = qp->attr.rnr_retry;
	}
	/* Acknowledged beyond where a rewind left us: do not send those again. */
	if (droce_psn_lt(qp->req.psn, una))
		req_seek(qp, una);
	/* A WQE that failed before it was sent completes once those before it are done. */
	if (qp->req.cons == qp->req.cur && qp->req.cons != qp->req.fetch &&
	    qp_swqe(qp, qp->req.cons)->status != DROCE_SHM_WC_SUCCESS) {
		comp_fail(qp, qp_swqe(qp, qp->req.cons)->status);
		return;
	}
	if (qp->req.una == qp->req.psn_max) {
		qp->req.ack_deadline = 0;
		qp_sqd_check(qp);
	} else if (qp->ack_timeout_tsc != 0) {
		qp->req.ack_deadline = e->now + qp->ack_timeout_tsc;
		qp_timer_arm(qp, qp->req.ack_deadline);
	}
	if (qp->req.cur != qp->req.fetch && !qp->req.rnr_wait)
		qp_list_add(qp, QP_ON_ACTIVE);
}

void
comp_rx(struct droce_qp *qp, const struct droce_wire_pkt *pkt)
{
	struct droce_engine *e = qp->engine;
	const struct droce_aeth *aeth = droce_pkt_aeth(pkt);
	uint32_t psn = droce_bth_psn(droce_pkt_bth(pkt));
	uint8_t syn, code;

	if (qp->state != DROCE_SHM_QPS_RTS && qp->state != DROCE_SHM_QPS_SQD) {
		ENGINE_STAT(e, rx_bad_state);
		return;
	}
	if (aeth == NULL || !(pkt->info->flags & DROCE_OPF_ACK)) {
		/* Read responses and atomic ACKs: droce sends no READ or atomic yet. */
		ENGINE_STAT(e, rx_bad_opcode);
		return;
	}
	syn = droce_aeth_syndrome(aeth);
	code = syn & DROCE_AETH_VALUE_MASK;
	switch (syn & DROCE_AETH_TYPE_MASK) {
	case DROCE_AETH_ACK:
		if (!comp_psn_valid(qp, psn)) {
			ENGINE_STAT(e, ack_stale);
			return;
		}
		ENGINE_STAT(e, ack_rcvd);
		comp_retire(qp, psn);
		return;
	case DROCE_AETH_RNR_NAK:
		/* The NAK's PSN is the request that found no receive WQE; before it all landed. */
		if (!comp_psn_valid(qp, droce_psn_add(psn, DROCE_PSN_MASK)) ||
		    psn == qp->req.psn_max) {
			ENGINE_STAT(e, ack_stale);
			return;
		}
		ENGINE_STAT(e, nak_rnr_rcvd);
		comp_retire(qp, droce_psn_add(psn, DROCE_PSN_MASK));
		if (qp->state == DROCE_SHM_QPS_ERR)
			return;
		if (qp->req.rnr_left == 0) {
			comp_fail(qp, DROCE_SHM_WC_RNR_RETRY_EXC_ERR);
			return;
		}
		if (qp->attr.rnr_retry != ENGINE_RNR_TIMER_INF)
			qp->req.rnr_left--;
		/* Wait the responder's timer, then resend from the refused PSN (9.7.5.2.8). */
		qp->req.rnr_wait = true;
		qp->req.rnr_deadline = e->now + engine_rnr_timer_tsc(e, code);
		qp->req.ack_deadline = 0;
		qp_list_del(qp, QP_ON_ACTIVE);
		req_seek(qp, psn);
		qp_timer_arm(qp, qp->req.rnr_deadline);
		return;
	case DROCE_AETH_NAK:
		if (!comp_psn_valid(qp, droce_psn_add(psn, DROCE_PSN_MASK)) ||
		    psn == qp->req.psn_max) {
			ENGINE_STAT(e, ack_stale);
			return;
		}
		if (code == DROCE_NAK_PSN_SEQ_ERR) {
			ENGINE_STAT(e, nak_seq_rcvd);
			comp_retire(qp, droce_psn_add(psn, DROCE_PSN_MASK));
			if (qp->state == DROCE_SHM_QPS_ERR || qp->req.rnr_wait)
				return;
			/*
			 * Go back without spending the retry counter: a NAK proves the peer
			 * and the path alive, and on a lossy or reordering link NAKs without
			 * progress come in runs. Only local ACK timeouts count (9.7.6.1.3), so
			 * retry_cnt bounds how long a dead peer goes unnoticed.
			 */
			ENGINE_STAT(e, req_go_back);
			req_seek(qp, psn);
			return;
		}
		ENGINE_STAT(e, nak_err_rcvd);
		comp_retire(qp, droce_psn_add(psn, DROCE_PSN_MASK));
		if (qp->state == DROCE_SHM_QPS_ERR)
			return;
		comp_fail(qp, code == DROCE_NAK_INVALID_REQ ? DROCE_SHM_WC_REM_INV_REQ_ERR :
			      code == DROCE_NAK_REMOTE_ACCESS ? DROCE_SHM_WC_REM_ACCESS_ERR :
			      DROCE_SHM_WC_REM_OP_ERR);
		return;
	default:
		ENGINE_STAT(e, rx_bad_opcode);
		return;
	}
}
