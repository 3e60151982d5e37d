/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completer (IB spec 9.7.5.1-9.7.5.2): ACKs, NAKs and RNR NAKs of RC requests, and READ
 * responses. ACKs are cumulative: one retires every WQE whose last PSN it covers, in
 * order; a READ retires once its whole response is in. Runs on the QP's engine.
 */
#include <errno.h>
#include <string.h>

#include <infiniband/verbs.h>

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
	bool implied_nak = false;

	if (!comp_psn_valid(qp, ack))
		return;
	while (qp->req.cons != qp->req.fetch) {
		struct engine_swqe *w = qp_swqe(qp, qp->req.cons);
		uint32_t last = droce_psn_add(w->first_psn, w->npkts - 1);

		if (w->status != DROCE_SHM_WC_SUCCESS || droce_psn_gt(last, ack))
			break;
		if (swqe_rd_atomic(w) && w->rd_got != w->npkts)
			break;
		qp->req.cons++;
	}
	/*
	 * An ACK acknowledges no READ or atomic response that did not come: an ACK beyond
	 * what the oldest READ received means the rest of its response was lost (an implied
	 * NAK, as rxe treats it): ask again from the first packet missing. An atomic asked
	 * again is a duplicate the responder answers from its saved value.
	 */
	if (qp->req.cons != qp->req.fetch) {
		const struct engine_swqe *w = qp_swqe(qp, qp->req.cons);
		uint32_t got = droce_psn_add(w->first_psn, w->rd_got);

		if (swqe_rd_atomic(w) && w->status == DROCE_SHM_WC_SUCCESS &&
		    droce_psn_gt(una, got)) {
			una = got;
			implied_nak = true;
		}
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
	if (implied_nak && !qp->req.rd_resume && qp->state != DROCE_SHM_QPS_ERR) {
		ENGINE_STAT(e, rd_retry);
		qp->req.rd_resume = true;
		req_seek(qp, una);
	}
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

/*
 * Writes a READ response's payload at message offset off into the WQE's SGEs, each
 * checked through its lkey for local write: 0 or -EACCES.
 */
static int
comp_read_place(struct droce_qp *qp, const struct engine_swqe *w, uint32_t off,
		const struct droce_wire_pkt *pkt, const struct droce_wire_seg *segs,
		unsigned int nseg)
{
	const struct droce_shm_sge *sge = (const void *)(w->wqe + 1);
	uint32_t len = pkt->payload_len;
	uint32_t i, base = 0, done = 0;

	for (i = 0; i < w->wqe->num_sge && done < len; i++) {
		uint32_t at = off + done, in, n;
		uint8_t *dst;

		if (at >= base + sge[i].length) {
			base += sge[i].length;
			continue;
		}
		in = at - base;
		n = RTE_MIN(sge[i].length - in, len - done);
		dst = mr_resolve(qp->dom, sge[i].lkey, qp->pd, IBV_ACCESS_LOCAL_WRITE,
				 sge[i].addr + in, n);
		if (dst == NULL)
			return -EACCES;
		droce_wire_payload_copy(pkt, segs, nseg, done, dst, n);
		done += n;
		base += sge[i].length;
	}
	return done == len ? 0 : -EACCES;
}

/*
 * A READ response packet: in PSN order, each one the next the READ waits for.
 * Its arrival acknowledges every request before the READ (the responder executes in
 * order); a gap means response packets were lost: the READ is asked again from the first
 * one missing, once until an answer comes (the ACK timer covers a lost retry).
 */
static void
comp_read_resp(struct droce_qp *qp, const struct droce_wire_pkt *pkt,
	       const struct droce_wire_seg *segs, unsigned int nseg)
{
	struct droce_engine *e = qp->engine;
	uint32_t psn = droce_bth_psn(droce_pkt_bth(pkt));
	uint32_t flags = pkt->info->flags;
	struct engine_swqe *w = NULL;
	uint32_t i, k, want, expect;
	bool last;

	if (droce_psn_dist(qp->req.una, psn) >= droce_psn_dist(qp->req.una, qp->req.psn_max)) {
		ENGINE_STAT(e, ack_stale);	/* before una (a duplicate), or never asked */
		return;
	}
	for (i = qp->req.cons; i != qp->req.fetch; i++) {
		struct engine_swqe *x = qp_swqe(qp, i);

		if (droce_psn_dist(x->first_psn, psn) < x->npkts) {
			w = x;
			break;
		}
	}
	if (w == NULL || w->wc_opcode != DROCE_SHM_WC_RDMA_READ ||
	    w->status != DROCE_SHM_WC_SUCCESS) {
		ENGINE_STAT(e, rx_bad_opcode);
		return;
	}
	comp_retire(qp, droce_psn_add(w->first_psn, DROCE_PSN_MASK));
	if (qp->state == DROCE_SHM_QPS_ERR || qp_swqe(qp, qp->req.cons) != w)
		return;		/* an earlier READ lost part of its response: it goes first */
	expect = droce_psn_add(w->first_psn, w->rd_got);
	if (psn != expect) {
		if (droce_psn_lt(psn, expect)) {
			ENGINE_STAT(e, ack_stale);
			return;
		}
		if (!qp->req.rd_resume) {
			ENGINE_STAT(e, rd_retry);
			qp->req.rd_resume = true;
			req_seek(qp, expect);
		}
		return;
	}
	k = w->rd_got;
	last = k == w->npkts - 1;
	want = last ? w->len - k * qp->mtu : qp->mtu;
	if (pkt->payload_len != want || last != ((flags & DROCE_OPF_LAST) != 0)) {
		comp_fail(qp, DROCE_SHM_WC_BAD_RESP_ERR);
		return;
	}
	if (want != 0 && comp_read_place(qp, w, k * qp->mtu, pkt, segs, nseg) != 0) {
		comp_fail(qp, DROCE_SHM_WC_LOC_PROT_ERR);
		return;
	}
	w->rd_got++;
	qp->req.rd_resume = false;
	/* Acknowledges this PSN; the last one retires the READ. */
	comp_retire(qp, psn);
}

/*
 * An ATOMIC ACKNOWLEDGE (9.4.5): the original value for the atomic at its PSN, written
 * into the WQE's 8-byte local buffer in host byte order. Like a READ response it
 * acknowledges every request before it; a second answer to the same atomic is stale.
 */
static void
comp_atomic_ack(struct droce_qp *qp, const struct droce_wire_pkt *pkt)
{
	struct droce_engine *e = qp->engine;
	const struct droce_aeth *aeth = droce_pkt_aeth(pkt);
	const struct droce_atmack *ack = droce_pkt_atmack(pkt);
	uint32_t psn = droce_bth_psn(droce_pkt_bth(pkt));
	const struct droce_shm_sge *sge;
	struct engine_swqe *w = NULL;
	uint8_t val[ENGINE_ATOMIC_LEN];
	uint64_t orig;
	uint32_t i, done;

	if (aeth == NULL || ack == NULL ||
	    (droce_aeth_syndrome(aeth) & DROCE_AETH_TYPE_MASK) != DROCE_AETH_ACK) {
		ENGINE_STAT(e, rx_bad_opcode);
		return;
	}
	if (droce_psn_dist(qp->req.una, psn) >= droce_psn_dist(qp->req.una, qp->req.psn_max)) {
		ENGINE_STAT(e, ack_stale);	/* before una (a duplicate), or never asked */
		return;
	}
	for (i = qp->req.cons; i != qp->req.fetch; i++) {
		struct engine_swqe *x = qp_swqe(qp, i);

		if (droce_psn_dist(x->first_psn, psn) < x->npkts) {
			w = x;
			break;
		}
	}
	if (w == NULL || !swqe_rd_atomic(w) || w->wc_opcode == DROCE_SHM_WC_RDMA_READ ||
	    w->status != DROCE_SHM_WC_SUCCESS) {
		ENGINE_STAT(e, rx_bad_opcode);
		return;
	}
	comp_retire(qp, droce_psn_add(psn, DROCE_PSN_MASK));
	if (qp->state == DROCE_SHM_QPS_ERR || qp_swqe(qp, qp->req.cons) != w)
		return;		/* an earlier READ lost part of its response: it goes first */
	if (w->rd_got != 0) {
		ENGINE_STAT(e, ack_stale);
		return;
	}
	ENGINE_STAT(e, ack_rcvd);
	orig = droce_atmack_orig(ack);
	memcpy(val, &orig, sizeof(val));
	sge = (const void *)(w->wqe + 1);
	for (i = 0, done = 0; i < w->wqe->num_sge && done < sizeof(val); i++) {
		uint32_t n = RTE_MIN(sge[i].length, (uint32_t)sizeof(val) - done);
		uint8_t *dst;

		if (n == 0)
			continue;
		dst = mr_resolve(qp->dom, sge[i].lkey, qp->pd, IBV_ACCESS_LOCAL_WRITE,
				 sge[i].addr, n);
		if (dst == NULL) {
			comp_fail(qp, DROCE_SHM_WC_LOC_PROT_ERR);
			return;
		}
		memcpy(dst, val + done, n);
		done += n;
	}
	w->rd_got = 1;
	qp->req.rd_resume = false;
	comp_retire(qp, psn);
}

void
comp_rx(struct droce_qp *qp, const struct droce_wire_pkt *pkt,
	const struct droce_wire_seg *segs, unsigned int nseg)
{
	struct droce_engine *e = qp->engine;
	const struct droce_aeth *aeth = droce_pkt_aeth(pkt);
	uint32_t psn = droce_bth_psn(droce_pkt_bth(pkt));
	uint8_t syn, code;

	if (qp->state != DROCE_SHM_QPS_RTS && qp->state != DROCE_SHM_QPS_SQD) {
		ENGINE_STAT(e, rx_bad_state);
		return;
	}
	if (pkt->info->flags & DROCE_OPF_READ_RESP) {
		comp_read_resp(qp, pkt, segs, nseg);
		return;
	}
	if (pkt->info->flags & DROCE_OPF_ATOMIC_ACK) {
		comp_atomic_ack(qp, pkt);
		return;
	}
	if (aeth == NULL || !(pkt->info->flags & DROCE_OPF_ACK)) {
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
		/* From una, which is behind psn when a READ before it lost its response. */
		req_seek(qp, qp->req.una);
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
			/* From una, which is behind psn when a READ before it lost its response. */
			req_seek(qp, qp->req.una);
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
