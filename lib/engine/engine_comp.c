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
comp_fail(struct droce_engine_qp *qp, uint8_t status)
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
comp_psn_valid(const struct droce_engine_qp *qp, uint32_t ack)
{
	return droce_psn_dist(qp->req.una, droce_psn_add(ack, 1)) <=
	       droce_psn_dist(qp->req.una, qp->req.psn_max);
}

/* Retires the WQEs acknowledged by PSN ack (cumulative). */
static void
comp_retire(struct droce_engine_qp *qp, uint32_t ack)
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
		/* A local operation spans no PSN: it retires once the requester executed it. */
		if (swqe_local(w) && !w->local_done)
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
		engine_rtt_acked(qp, droce_psn_lt(qp->req.psn, una));
	}
	/* Acknowledged beyond where a rewind left us: do not send those again. */
	if (droce_psn_lt(qp->req.psn, una))
		req_seek(qp, una);
	if (implied_nak && !qp->req.rd_resume && qp->state != DROCE_SHM_QPS_ERR) {
		ENGINE_STAT(e, rd_retry);
		ENGINE_QP_COUNT(qp, implied_nak_seq_err);
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
		qp->req.ack_deadline = qp->req.early_deadline = 0;
		qp_sqd_check(qp);
	} else if (qp->ack_timeout_tsc != 0) {
		qp->req.ack_deadline = e->now + qp->ack_timeout_tsc;
		qp_timer_arm(qp, qp->req.ack_deadline);
		req_early_arm(qp);
	}
	if (qp->req.cur != qp->req.fetch && !qp->req.rnr_wait)
		qp_list_add(qp, QP_ON_ACTIVE);
}

/*
 * Writes a READ response's payload at message offset off into the WQE's SGEs, each
 * checked through its lkey for local write: 0 or -EACCES.
 */
static int
comp_read_place(struct droce_engine_qp *qp, const struct engine_swqe *w, uint32_t off,
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

/* One response on its way through the completer's states (comp_rx). */
struct comp_pkt {
	const struct droce_wire_pkt *pkt;
	const struct droce_wire_seg *segs;
	unsigned int nseg;
	uint32_t psn;
	uint8_t code;		/* AETH syndrome value: NAK code or RNR timer */
	uint8_t status;		/* COMP_ST_ERROR: how the oldest WQE completes */
};

/*
 * Response kind first, then the PSN check, then what it does (9.7.5.2). STALE and BAD
 * drop it; ERROR completes the oldest WQE with status and moves the QP to ERR.
 */
static enum comp_state
comp_classify(struct droce_engine_qp *qp, struct comp_pkt *c)
{
	const struct droce_aeth *aeth = droce_pkt_aeth(c->pkt);
	uint32_t flags = c->pkt->info->flags;
	uint8_t syn;

	RTE_SET_USED(qp);
	if (flags & DROCE_OPF_READ_RESP)
		return COMP_ST_READ_RESP;
	if (flags & DROCE_OPF_ATOMIC_ACK)
		return COMP_ST_ATOMIC_ACK;
	if (aeth == NULL || !(flags & DROCE_OPF_ACK))
		return COMP_ST_BAD;
	syn = droce_aeth_syndrome(aeth);
	c->code = syn & DROCE_AETH_VALUE_MASK;
	switch (syn & DROCE_AETH_TYPE_MASK) {
	case DROCE_AETH_ACK:
		return COMP_ST_ACK;
	case DROCE_AETH_RNR_NAK:
		return COMP_ST_RNR_NAK;
	case DROCE_AETH_NAK:
		return c->code == DROCE_NAK_PSN_SEQ_ERR ? COMP_ST_SEQ_NAK : COMP_ST_ERR_NAK;
	default:
		return COMP_ST_BAD;
	}
}

/*
 * The WQE a READ response or atomic acknowledge at psn answers, or NULL: the response is
 * stale (before una, a duplicate, or never asked: *stale set) or answers nothing.
 */
static struct engine_swqe *
comp_rd_atomic_wqe(struct droce_engine_qp *qp, uint32_t psn, bool *stale)
{
	uint32_t i;

	*stale = droce_psn_dist(qp->req.una, psn) >=
		 droce_psn_dist(qp->req.una, qp->req.psn_max);
	if (*stale)
		return NULL;
	for (i = qp->req.cons; i != qp->req.fetch; i++) {
		struct engine_swqe *x = qp_swqe(qp, i);

		if (droce_psn_dist(x->first_psn, psn) < x->npkts)
			return x;
	}
	return NULL;
}

/*
 * A READ response packet: in PSN order, each one the next the READ waits for.
 * Its arrival acknowledges every request before the READ (the responder executes in
 * order); a gap means response packets were lost: the READ is asked again from the first
 * one missing, once until an answer comes (the ACK timer covers a lost retry).
 */
static enum comp_state
comp_read_resp(struct droce_engine_qp *qp, struct comp_pkt *c)
{
	struct droce_engine *e = qp->engine;
	uint32_t psn = c->psn;
	uint32_t flags = c->pkt->info->flags;
	struct engine_swqe *w;
	uint32_t k, want, expect;
	bool last, stale;

	w = comp_rd_atomic_wqe(qp, psn, &stale);
	if (stale)
		return COMP_ST_STALE;
	/* FLUSH and ATOMIC WRITE are answered by a READ response without payload. */
	if (w == NULL || (w->wc_opcode != DROCE_SHM_WC_RDMA_READ && !swqe_read_ack(w)) ||
	    w->status != DROCE_SHM_WC_SUCCESS)
		return COMP_ST_BAD;
	comp_retire(qp, droce_psn_add(w->first_psn, DROCE_PSN_MASK));
	if (qp->state == DROCE_SHM_QPS_ERR || qp_swqe(qp, qp->req.cons) != w)
		return COMP_ST_DONE;	/* an earlier READ lost part of its response: it goes first */
	expect = droce_psn_add(w->first_psn, w->rd_got);
	if (psn != expect) {
		if (droce_psn_lt(psn, expect))
			return COMP_ST_STALE;
		if (!qp->req.rd_resume) {
			ENGINE_STAT(e, rd_retry);
			ENGINE_QP_COUNT(qp, implied_nak_seq_err);
			qp->req.rd_resume = true;
			req_seek(qp, expect);
		}
		return COMP_ST_DONE;
	}
	k = w->rd_got;
	last = k == w->npkts - 1;
	want = swqe_read_ack(w) ? 0 : last ? w->len - k * qp->mtu : qp->mtu;
	if (c->pkt->payload_len != want || last != ((flags & DROCE_OPF_LAST) != 0)) {
		c->status = DROCE_SHM_WC_BAD_RESP_ERR;
		return COMP_ST_ERROR;
	}
	if (want != 0 && comp_read_place(qp, w, k * qp->mtu, c->pkt, c->segs, c->nseg) != 0) {
		c->status = DROCE_SHM_WC_LOC_PROT_ERR;
		return COMP_ST_ERROR;
	}
	w->rd_got++;
	qp->req.rd_resume = false;
	/* Acknowledges this PSN; the last one retires the READ. */
	comp_retire(qp, psn);
	return COMP_ST_DONE;
}

/*
 * An ATOMIC ACKNOWLEDGE (9.4.5): the original value for the atomic at its PSN, written
 * into the WQE's 8-byte local buffer in host byte order. Like a READ response it
 * acknowledges every request before it; a second answer to the same atomic is stale.
 */
static enum comp_state
comp_atomic_ack(struct droce_engine_qp *qp, struct comp_pkt *c)
{
	struct droce_engine *e = qp->engine;
	const struct droce_aeth *aeth = droce_pkt_aeth(c->pkt);
	const struct droce_atmack *ack = droce_pkt_atmack(c->pkt);
	const struct droce_shm_sge *sge;
	struct engine_swqe *w;
	uint8_t val[ENGINE_ATOMIC_LEN];
	uint64_t orig;
	uint32_t i, done;
	bool stale;

	if (aeth == NULL || ack == NULL ||
	    (droce_aeth_syndrome(aeth) & DROCE_AETH_TYPE_MASK) != DROCE_AETH_ACK)
		return COMP_ST_BAD;
	w = comp_rd_atomic_wqe(qp, c->psn, &stale);
	if (stale)
		return COMP_ST_STALE;
	if (w == NULL || (w->wc_opcode != DROCE_SHM_WC_COMP_SWAP &&
			  w->wc_opcode != DROCE_SHM_WC_FETCH_ADD) ||
	    w->status != DROCE_SHM_WC_SUCCESS)
		return COMP_ST_BAD;
	comp_retire(qp, droce_psn_add(c->psn, DROCE_PSN_MASK));
	if (qp->state == DROCE_SHM_QPS_ERR || qp_swqe(qp, qp->req.cons) != w)
		return COMP_ST_DONE;	/* an earlier READ lost part of its response: it goes first */
	if (w->rd_got != 0)
		return COMP_ST_STALE;
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
			c->status = DROCE_SHM_WC_LOC_PROT_ERR;
			return COMP_ST_ERROR;
		}
		memcpy(dst, val + done, n);
		done += n;
	}
	w->rd_got = 1;
	qp->req.rd_resume = false;
	comp_retire(qp, c->psn);
	return COMP_ST_DONE;
}

static enum comp_state
comp_ack(struct droce_engine_qp *qp, struct comp_pkt *c)
{
	if (!comp_psn_valid(qp, c->psn))
		return COMP_ST_STALE;
	ENGINE_STAT(qp->engine, ack_rcvd);
	comp_retire(qp, c->psn);
	return COMP_ST_DONE;
}

/*
 * A NAK's PSN is the request it refuses: everything before it was executed, so it
 * acknowledges up to psn - 1. One for a PSN not outstanding is stale.
 */
static bool
comp_nak_psn_valid(const struct droce_engine_qp *qp, uint32_t psn)
{
	return comp_psn_valid(qp, droce_psn_add(psn, DROCE_PSN_MASK)) && psn != qp->req.psn_max;
}

static enum comp_state
comp_rnr_nak(struct droce_engine_qp *qp, struct comp_pkt *c)
{
	struct droce_engine *e = qp->engine;

	/* The NAK's PSN is the request that found no receive WQE; before it all landed. */
	if (!comp_nak_psn_valid(qp, c->psn))
		return COMP_ST_STALE;
	ENGINE_STAT(e, nak_rnr_rcvd);
	comp_retire(qp, droce_psn_add(c->psn, DROCE_PSN_MASK));
	if (qp->state == DROCE_SHM_QPS_ERR)
		return COMP_ST_DONE;
	if (qp->req.rnr_left == 0) {
		c->status = DROCE_SHM_WC_RNR_RETRY_EXC_ERR;
		return COMP_ST_ERROR;
	}
	/* mlx5's meaning: an RNR NAK within the QP's retries. */
	ENGINE_QP_COUNT(qp, rnr_nak_retry_err);
	if (qp->attr.rnr_retry != ENGINE_RNR_TIMER_INF)
		qp->req.rnr_left--;
	/* Wait the responder's timer, then resend from the refused PSN (9.7.5.2.8). */
	qp->req.rnr_wait = true;
	qp->req.rnr_deadline = e->now + engine_rnr_timer_tsc(e, c->code);
	qp->req.ack_deadline = qp->req.early_deadline = 0;
	qp_list_del(qp, QP_ON_ACTIVE);
	/* From una, which is behind psn when a READ before it lost its response. */
	req_seek(qp, qp->req.una);
	qp_timer_arm(qp, qp->req.rnr_deadline);
	return COMP_ST_DONE;
}

static enum comp_state
comp_seq_nak(struct droce_engine_qp *qp, struct comp_pkt *c)
{
	struct droce_engine *e = qp->engine;

	if (!comp_nak_psn_valid(qp, c->psn))
		return COMP_ST_STALE;
	ENGINE_STAT(e, nak_seq_rcvd);
	ENGINE_QP_COUNT(qp, packet_seq_err);
	comp_retire(qp, droce_psn_add(c->psn, DROCE_PSN_MASK));
	if (qp->state == DROCE_SHM_QPS_ERR || qp->req.rnr_wait)
		return COMP_ST_DONE;
	/*
	 * Go back without spending the retry counter: a NAK proves the peer and the path
	 * alive, and on a lossy or reordering link NAKs without progress come in runs. Only
	 * local ACK timeouts count (9.7.6.1.3), so retry_cnt bounds how long a dead peer
	 * goes unnoticed.
	 */
	ENGINE_STAT(e, req_go_back);
	/* From una, which is behind psn when a READ before it lost its response. */
	req_seek(qp, qp->req.una);
	return COMP_ST_DONE;
}

/* An error NAK (9.7.5.2.2): the request at its PSN fails with the NAK's reason. */
static enum comp_state
comp_err_nak(struct droce_engine_qp *qp, struct comp_pkt *c)
{
	if (!comp_nak_psn_valid(qp, c->psn))
		return COMP_ST_STALE;
	ENGINE_STAT(qp->engine, nak_err_rcvd);
	comp_retire(qp, droce_psn_add(c->psn, DROCE_PSN_MASK));
	if (qp->state == DROCE_SHM_QPS_ERR)
		return COMP_ST_DONE;
	c->status = c->code == DROCE_NAK_INVALID_REQ ? DROCE_SHM_WC_REM_INV_REQ_ERR :
		    c->code == DROCE_NAK_REMOTE_ACCESS ? DROCE_SHM_WC_REM_ACCESS_ERR :
		    DROCE_SHM_WC_REM_OP_ERR;
	return COMP_ST_ERROR;
}

/*
 * The completer as a state machine over one response: each state does its part and
 * names the next, until DONE. A send fails in one place, COMP_ST_ERROR, which logs the
 * state it came from.
 */
/* The counter of the state a send failed in (comp_err_*). */
static void
comp_err_count(struct droce_engine *e, enum comp_state from)
{
	switch (from) {
	case COMP_ST_READ_RESP:
		ENGINE_STAT(e, comp_err_read_resp);
		break;
	case COMP_ST_ATOMIC_ACK:
		ENGINE_STAT(e, comp_err_atomic_ack);
		break;
	case COMP_ST_RNR_NAK:
		ENGINE_STAT(e, comp_err_rnr_nak);
		break;
	default:
		ENGINE_STAT(e, comp_err_err_nak);
		break;
	}
}

void
comp_rx(struct droce_engine_qp *qp, const struct droce_wire_pkt *pkt,
	const struct droce_wire_seg *segs, unsigned int nseg)
{
	struct droce_engine *e = qp->engine;
	struct comp_pkt c = {
		.pkt = pkt, .segs = segs, .nseg = nseg,
		.psn = droce_bth_psn(droce_pkt_bth(pkt)),
	};
	enum comp_state st = COMP_ST_CLASSIFY, from = COMP_ST_CLASSIFY;

	if (qp->state != DROCE_SHM_QPS_RTS && qp->state != DROCE_SHM_QPS_SQD) {
		ENGINE_STAT(e, rx_bad_state);
		return;
	}
	while (st != COMP_ST_DONE) {
		enum comp_state next = COMP_ST_DONE;

		switch (st) {
		case COMP_ST_CLASSIFY:
			next = comp_classify(qp, &c);
			break;
		case COMP_ST_READ_RESP:
			next = comp_read_resp(qp, &c);
			break;
		case COMP_ST_ATOMIC_ACK:
			next = comp_atomic_ack(qp, &c);
			break;
		case COMP_ST_ACK:
			next = comp_ack(qp, &c);
			break;
		case COMP_ST_RNR_NAK:
			next = comp_rnr_nak(qp, &c);
			break;
		case COMP_ST_SEQ_NAK:
			next = comp_seq_nak(qp, &c);
			break;
		case COMP_ST_ERR_NAK:
			next = comp_err_nak(qp, &c);
			break;
		case COMP_ST_STALE:
			ENGINE_STAT(e, ack_stale);	/* a duplicate, or never asked */
			break;
		case COMP_ST_BAD:
			ENGINE_STAT(e, rx_bad_opcode);
			break;
		case COMP_ST_ERROR:
			ENGINE_LOG(DEBUG, "QP %u: completer %s, PSN %u: status %u\n", qp->qpn,
				   comp_state_name(from), c.psn, c.status);
			comp_err_count(e, from);
			qp->req.comp_failed_in = (uint8_t)(from + 1);
			comp_fail(qp, c.status);
			break;
		case COMP_ST_DONE:
			break;
		}
		from = st;
		st = next;
	}
}
