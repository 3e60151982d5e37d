/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The responder's receive WQEs: one taken from the QP's RQ or its SRQ (a validated copy;
 * an SRQ is claimed by several engines at once, as rte_ring's multi-consumer dequeue
 * does), the payload scattered into its buffers through their lkeys, and its completion
 * written on the receive CQ. engine_resp.c decides when; this file only touches the
 * receive side's rings and memory. Runs on the QP's engine.
 */
#include <errno.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "engine_loc.h"

/*
 * Writes len bytes from src into the WQE's buffers starting at message offset off, each
 * SGE checked through its lkey for local write (IB 10.6.3.3): 0 or -EACCES.
 */
int
resp_place(struct droce_engine_qp *qp, const struct engine_rwqe *w, uint32_t off, uint32_t len,
	   const struct resp_src *src)
{
	uint32_t i, base = 0, done = 0;

	for (i = 0; i < w->num_sge && done < len; i++) {
		const struct droce_shm_sge *s = &w->sge[i];
		uint32_t at = off + done, in, n;
		uint8_t *dst;

		if (at >= base + s->length) {
			base += s->length;
			continue;
		}
		in = at - base;
		n = RTE_MIN(s->length - in, len - done);
		/*
		 * SRQ buffers belong to the SRQ's PD (11.2.3.1), the others to the QP's; an
		 * XRC SRQ may be another process's (its domain's keys).
		 */
		dst = qp->srq != NULL ?
		      mr_resolve(qp->srq->dom, s->lkey, qp->srq->pd, IBV_ACCESS_LOCAL_WRITE,
				 s->addr + in, n) :
		      mr_resolve(qp->dom, s->lkey, qp->pd, IBV_ACCESS_LOCAL_WRITE, s->addr + in, n);
		if (dst == NULL)
			return -EACCES;
		resp_src_copy(src, done, dst, n);
		done += n;
		base += s->length;
	}
	return done == len ? 0 : -EACCES;
}

/* Validated copy of a receive ring slot: 0, or -EINVAL for a WQE that lies. */
static int
resp_copy_rwqe(const uint8_t *slot, uint32_t stride, uint32_t max_sge, struct engine_rwqe *w)
{
	const struct droce_shm_rwqe *r = (const void *)slot;
	uint64_t total = 0;
	uint32_t i, n;

	w->wr_id = r->wr_id;
	n = r->num_sge;
	if (n > max_sge || sizeof(*r) + n * sizeof(w->sge[0]) > stride)
		return -EINVAL;
	memcpy(w->sge, r + 1, n * sizeof(w->sge[0]));
	for (i = 0; i < n; i++)
		total += w->sge[i].length;
	w->num_sge = n;
	w->total = total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
	return 0;
}

/* One WQE from the QP's own receive ring: 1, 0 when empty, -EIO for lying indices. */
static int
resp_rq_take(struct droce_engine_qp *qp, struct engine_rwqe *w)
{
	uint32_t prod = __atomic_load_n(&qp->ctl->rq.prod, __ATOMIC_ACQUIRE);
	uint32_t i = qp->resp.rq_cons;
	int rc;

	if (prod == i)
		return 0;
	if (prod - i > qp->rq_size)
		return -EIO;
	rc = resp_copy_rwqe(qp->rq_ring + (size_t)(i & (qp->rq_size - 1)) * qp->rq_stride,
			    qp->rq_stride, qp->rq_max_sge, w);
	qp->resp.rq_cons = i + 1;
	/* The slot is copied: the application may reuse it. */
	__atomic_store_n(&qp->ctl->rq.cons, i + 1, __ATOMIC_RELEASE);
	return rc == 0 ? 1 : -EIO;
}

int
engine_srq_take(struct droce_engine *e, struct droce_engine_srq *srq, struct engine_rwqe *w)
{
	uint32_t h, prod, lim;
	int rc;

	h = atomic_load_explicit(&srq->head, memory_order_relaxed);
	do {
		prod = __atomic_load_n(&srq->ctl->ring.prod, __ATOMIC_ACQUIRE);
		if (prod == h)
			return 0;
		if (prod - h > srq->size)
			return -EIO;
	} while (!atomic_compare_exchange_weak_explicit(&srq->head, &h, h + 1,
							memory_order_acquire,
							memory_order_relaxed));
	rc = resp_copy_rwqe(srq->ring + (size_t)(h & (srq->size - 1)) * srq->stride,
			    srq->stride, srq->max_sge, w);
	/* Release slots in claim order, as rte_ring's multi-consumer tail does. */
	while (atomic_load_explicit(&srq->tail, memory_order_acquire) != h)
		rte_pause();
	atomic_store_explicit(&srq->tail, h + 1, memory_order_release);
	__atomic_store_n(&srq->ctl->ring.cons, h + 1, __ATOMIC_RELEASE);
	/* 10.2.9.4: below the limit -> one SRQ_LIMIT_REACHED, and the limit disarms. */
	lim = atomic_load_explicit(&srq->limit, memory_order_relaxed);
	if (lim != 0 && prod - (h + 1) < lim &&
	    atomic_compare_exchange_strong(&srq->limit, &lim, 0)) {
		ENGINE_STAT(e, srq_limit_events);
		engine_event(srq->dom, DROCE_ENGINE_EVENT_SRQ_LIMIT_REACHED, srq->handle);
	}
	return rc == 0 ? 1 : -EIO;
}

int
resp_take(struct droce_engine_qp *qp)
{
	int rc = qp->srq != NULL ? engine_srq_take(qp->engine, qp->srq, &qp->resp.wqe) :
				   resp_rq_take(qp, &qp->resp.wqe);

	if (rc == 1) {
		qp->resp.have_wqe = true;
		qp->resp.off = 0;
	}
	return rc;
}

/* Completes the WQE in hand (error or success) on the receive CQ. */
void
resp_complete(struct droce_engine_qp *qp, const struct droce_wire_pkt *pkt, uint8_t status,
	      uint32_t byte_len)
{
	struct engine_wc wc;
	bool written;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = qp->resp.wqe.wr_id;
	wc.status = status;
	wc.qp_num = qp->qpn;
	qp->resp.have_wqe = false;
	qp->resp.state = RESP_ST_IDLE;
	qp->resp.off = 0;
	if (status == DROCE_SHM_WC_SUCCESS) {
		const struct droce_bth *bth = droce_pkt_bth(pkt);

		wc.opcode = (pkt->info->flags & DROCE_OPF_WRITE) ?
			    DROCE_SHM_WC_RECV_RDMA_WITH_IMM : DROCE_SHM_WC_RECV;
		wc.byte_len = byte_len;
		wc.solicited = droce_bth_se(bth);
		if (pkt->info->flags & DROCE_OPF_IMM) {
			wc.wc_flags |= DROCE_SHM_WC_WITH_IMM;
			wc.imm_data = droce_immdt_be(droce_pkt_immdt(pkt));
		}
		if (pkt->info->flags & DROCE_OPF_INV) {
			wc.wc_flags |= DROCE_SHM_WC_WITH_INV;
			wc.imm_data = droce_ieth_rkey(droce_pkt_ieth(pkt));
		}
		if (qp->type == DROCE_SHM_QPT_UD) {
			wc.src_qp = droce_deth_src_qp(droce_pkt_deth(pkt));
			wc.wc_flags |= DROCE_SHM_WC_GRH;
			wc.sl = ENGINE_WC_SL_ROCEV2 |
				(pkt->ip_version == 4 ? ENGINE_WC_SL_IPV4 : ENGINE_WC_SL_IPV6);
		} else {
			wc.src_qp = qp->dest_qpn;
		}
		ENGINE_STAT(qp->engine, resp_msgs);
	}
	if (status != DROCE_SHM_WC_SUCCESS)
		ENGINE_QP_COUNT(qp, resp_cqe_error);
	written = engine_cqe_write(qp->engine, qp->rcq, &wc);
	/* Done either way: an overrun CQ is in error, nothing more is read from it. */
	qp_rq_done(qp, 1);
	if (!written || status != DROCE_SHM_WC_SUCCESS)
		qp_to_error(qp);
}
