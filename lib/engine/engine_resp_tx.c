/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every packet the responder sends: READ responses and atomic acknowledges, from the
 * responder resources engine_resp.c keeps, in their own stage; and the AETH packets:
 * coalesced ACKs in the ACK stage at the end of the rx burst, NAKs and RNR NAKs at once.
 * They are one file because no ACK or NAK may overtake the READ responses owed before it
 * (9.7.5.1.4). Runs on the QP's engine.
 */
#include <errno.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "engine_loc.h"

/*
 * The response opcode of RC opcode rc for qp: an XRC target answers with XRC's, which
 * table 38 numbers as RC's plus the XRC transport bits.
 */
_Static_assert((DROCE_OP_RC_ACKNOWLEDGE | DROCE_TRANSPORT_XRC) == DROCE_OP_XRC_ACKNOWLEDGE &&
	       (DROCE_OP_RC_ATOMIC_ACKNOWLEDGE | DROCE_TRANSPORT_XRC) ==
	       DROCE_OP_XRC_ATOMIC_ACKNOWLEDGE &&
	       (DROCE_OP_RC_RDMA_READ_RESPONSE_FIRST | DROCE_TRANSPORT_XRC) ==
	       DROCE_OP_XRC_RDMA_READ_RESPONSE_FIRST, "XRC responses are RC's in the XRC block");

static inline uint8_t
resp_opcode(const struct droce_engine_qp *qp, uint8_t rc)
{
	return qp->type == DROCE_SHM_QPT_XRC_RECV ? (uint8_t)(rc | DROCE_TRANSPORT_XRC) : rc;
}

void
read_resp_aeth(struct droce_engine_qp *qp, uint32_t psn, uint8_t syndrome)
{
	struct droce_wire_hdrs h;
	struct rte_mbuf *m;

	memset(&h, 0, sizeof(h));
	h.opcode = resp_opcode(qp, DROCE_OP_RC_ACKNOWLEDGE);
	h.pkey = DROCE_PKEY_DEFAULT;
	h.dqpn = qp->dest_qpn;
	h.psn = psn;
	h.aeth.syndrome = syndrome;
	h.aeth.msn = qp->resp.msn;
	if (engine_pkt_start(qp->engine, &qp->tmpl, &h, 0, &m) == NULL)
		return;		/* the requester's timer recovers a lost answer */
	engine_pkt_finish(qp->engine, qp, &qp->tmpl, m);
}

/* Has a READ accepted earlier responses left to send? Skips the finished ones. */
bool
read_resp_pending(struct droce_engine_qp *qp)
{
	while (qp->resp.rd_send != qp->resp.rd_head &&
	       qp->resp.rd[qp->resp.rd_send & (ENGINE_RD_RES - 1)].left == 0)
		qp->resp.rd_send++;
	return qp->resp.rd_send != qp->resp.rd_head;
}

/*
 * The next response packet of READ r: FIRST/ONLY where the request being answered
 * starts, LAST at its end, AETH on those. 0, -EAGAIN (no mbuf) or -EACCES
 * (the region went away: remote access error NAK, and the QP goes to ERR).
 */
static int
read_resp_packet(struct droce_engine_qp *qp, struct engine_rd_res *r)
{
	struct droce_engine *e = qp->engine;
	uint32_t plen = RTE_MIN(qp->mtu, r->len - r->off);
	bool first = r->psn == r->start_psn, last = r->left == 1;
	const uint8_t *src = NULL;
	struct droce_wire_hdrs h;
	struct rte_mbuf *m;
	uint8_t *payload;

	if (r->atomic) {
		/* The one answer of an atomic: AETH and the original value (9.3.6). */
		memset(&h, 0, sizeof(h));
		h.opcode = resp_opcode(qp, DROCE_OP_RC_ATOMIC_ACKNOWLEDGE);
		h.pkey = DROCE_PKEY_DEFAULT;
		h.dqpn = qp->dest_qpn;
		h.psn = r->psn;
		h.aeth.syndrome = DROCE_AETH_ACK | DROCE_AETH_CREDITS_INVALID;
		h.aeth.msn = qp->resp.msn;
		h.atomic_ack_orig = r->orig;
		if (engine_pkt_start(e, &qp->tmpl, &h, 0, &m) == NULL)
			return -EAGAIN;
		engine_pkt_finish(e, qp, &qp->tmpl, m);
		ENGINE_STAT(e, rd_resp_sent);
		r->left = 0;
		return 0;
	}
	if (plen != 0) {
		/* An XRC target reads in the keys of the SRQ the READ named (resp_xrc). */
		if (qp->type == DROCE_SHM_QPT_XRC_RECV) {
			const struct droce_engine_srq *srq = dev_xsrq(e->dev, r->xsrqn);

			qp->key_dom = srq != NULL ? srq->dom : qp->dom;
			qp->key_pd = srq != NULL ? srq->pd : 0;
		}
		src = mr_resolve_rkey(qp, r->rkey, IBV_ACCESS_REMOTE_READ, r->va + r->off, plen);
		if (src == NULL) {
			ENGINE_STAT(e, nak_err_sent);
			read_resp_aeth(qp, r->psn, DROCE_AETH_NAK | DROCE_NAK_REMOTE_ACCESS);
			qp_to_error(qp);
			return -EACCES;
		}
	}
	memset(&h, 0, sizeof(h));
	h.opcode = resp_opcode(qp, first && last ? DROCE_OP_RC_RDMA_READ_RESPONSE_ONLY :
				   first ? DROCE_OP_RC_RDMA_READ_RESPONSE_FIRST :
				   last ? DROCE_OP_RC_RDMA_READ_RESPONSE_LAST :
				   DROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE);
	h.pkey = DROCE_PKEY_DEFAULT;
	h.dqpn = qp->dest_qpn;
	h.psn = r->psn;
	h.aeth.syndrome = DROCE_AETH_ACK | DROCE_AETH_CREDITS_INVALID;
	h.aeth.msn = qp->resp.msn;
	payload = engine_pkt_start(e, &qp->tmpl, &h, plen, &m);
	if (payload == NULL)
		return -EAGAIN;
	if (plen != 0)
		memcpy(payload, src, plen);
	engine_pkt_finish(e, qp, &qp->tmpl, m);
	ENGINE_STAT(e, rd_resp_sent);
	r->psn = droce_psn_add(r->psn, 1);
	r->off += plen;
	r->left--;
	return 0;
}

/* Sends up to budget READ response packets of qp, oldest READ first; returns how many. */
unsigned int
read_resp_send(struct droce_engine_qp *qp, unsigned int budget)
{
	unsigned int n = 0;

	if (!read_resp_pending(qp))
		return 0;
	if (qp->state != DROCE_SHM_QPS_RTR && qp->state != DROCE_SHM_QPS_RTS &&
	    qp->state != DROCE_SHM_QPS_SQD)
		return 0;
	while (n < budget && read_resp_pending(qp)) {
		int rc = read_resp_packet(qp,
					  &qp->resp.rd[qp->resp.rd_send & (ENGINE_RD_RES - 1)]);

		if (rc == -EAGAIN)
			break;
		if (rc != 0)
			return n;
		n++;
	}
	if (read_resp_pending(qp)) {
		qp_list_add(qp, QP_ON_READ);
	} else if (qp->resp.ack_deferred) {
		/* The ACK that waited for them (resp_send_ack), now that it cannot pass them. */
		qp->resp.ack_deferred = false;
		ENGINE_STAT(qp->engine, ack_sent);
		read_resp_aeth(qp, qp->resp.ack_psn, DROCE_AETH_ACK | DROCE_AETH_CREDITS_INVALID);
	}
	return n;
}

/*
 * The READ-response stage: round robin over QPs with responses owed, one quantum of at
 * most ENGINE_REQ_QUANTUM packets each, bounded by the room left in the tx buffer; a QP
 * with more goes to the back for the next pass (as the requester's stage does).
 */
unsigned int
read_resp_stage(struct droce_engine *e)
{
	struct engine_qp_list_head turn = TAILQ_HEAD_INITIALIZER(turn);
	unsigned int sent = 0;
	struct droce_engine_qp *qp;

	TAILQ_CONCAT(&turn, &e->reads, read_link);
	while ((qp = TAILQ_FIRST(&turn)) != NULL) {
		unsigned int room = engine_tx_room(e);

		if (room == 0) {
			TAILQ_CONCAT(&turn, &e->reads, read_link);
			TAILQ_CONCAT(&e->reads, &turn, read_link);
			break;
		}
		TAILQ_REMOVE(&turn, qp, read_link);
		qp->lists &= ~QP_ON_READ;
		if (qp->reliable)
			sent += read_resp_send(qp, RTE_MIN(room, (unsigned int)ENGINE_REQ_QUANTUM));
	}
	return sent;
}

/* ---- ACKs and NAKs ---- */

/* Sends the coalesced ACK of qp (end of an rx burst). */
static void
resp_send_ack(struct droce_engine_qp *qp)
{
	if (qp->state == DROCE_SHM_QPS_ERR)
		return;
	/*
	 * An ACK goes after the READ responses before it: one that overtook them would tell
	 * the requester they were lost (an implied NAK) and make it ask again.
	 */
	if (read_resp_pending(qp)) {
		qp->resp.ack_deferred = true;
		return;
	}
	ENGINE_STAT(qp->engine, ack_sent);
	read_resp_aeth(qp, qp->resp.ack_psn, DROCE_AETH_ACK | DROCE_AETH_CREDITS_INVALID);
}

void
resp_schedule_ack(struct droce_engine_qp *qp, uint32_t psn)
{
	qp->resp.ack_psn = psn;
	qp_list_add(qp, QP_ON_ACK);
}

void
resp_nak(struct droce_engine_qp *qp, uint8_t code)
{
	unsigned int room = engine_tx_room(qp->engine);

	/*
	 * The NAK acknowledges every request before it, so the READ and atomic responses
	 * still owed go out first (as many as the tx buffer takes): else the requester
	 * would see the NAK before the answers of the earlier requests and fail them.
	 */
	if (read_resp_pending(qp) && room > 1) {
		read_resp_send(qp, room - 1);
		if (qp->state == DROCE_SHM_QPS_ERR)
			return;		/* a READ's region went away: that NAK went out */
	}
	ENGINE_STAT(qp->engine, nak_err_sent);
	read_resp_aeth(qp, qp->resp.epsn, DROCE_AETH_NAK | code);
}

/* 9.7.5.2.8: no receive WQE -> RNR NAK with psn; later packets stay silent. */
void
resp_rnr_nak(struct droce_engine_qp *qp, uint32_t psn)
{
	ENGINE_STAT(qp->engine, nak_rnr_sent);
	ENGINE_QP_COUNT(qp, out_of_buffer);
	qp->resp.nak_sent = true;
	read_resp_aeth(qp, psn, DROCE_AETH_RNR_NAK |
		       (qp->attr.min_rnr_timer & DROCE_AETH_VALUE_MASK));
}

/* One ACK per QP per burst, for the newest PSN: ACKs are cumulative (IB 9.7.5.1.4). */
void
resp_stage_acks(struct droce_engine *e)
{
	struct droce_engine_qp *qp;

	while ((qp = TAILQ_FIRST(&e->acks)) != NULL) {
		qp_list_del(qp, QP_ON_ACK);
		resp_send_ack(qp);
	}
}
