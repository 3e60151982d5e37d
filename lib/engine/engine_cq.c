/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion queues, shared by engines: a slot is reserved with an atomic add, filled,
 * and published by its owner bit (droce_shm.h). Overrun (IB 11.4.2.1): the CQ goes
 * to error, IBV_EVENT_CQ_ERR is raised once, nothing more is written to it.
 */
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>

#include "engine_loc.h"

void
engine_event(struct droce_engine_domain *dom, uint32_t type, uint32_t handle)
{
	struct droce_engine_event ev = { .type = type, .handle = handle };

	uint64_t one = 1;

	/* A full event ring loses the event: the control path drains it promptly. */
	rte_ring_mp_enqueue_elem(dom->events, &ev, sizeof(ev));
	/* Events are rare: the control thread is woken for each (droce_engine_conf). */
	if (dom->dev->ctl_wake_fd >= 0 && write(dom->dev->ctl_wake_fd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is full, so the control thread wakes anyway */
	}
}

static void
cq_notify(struct droce_engine_cq *cq, const struct engine_wc *wc)
{
	uint64_t one = 1;
	uint32_t arm, n, served;

	/*
	 * Pairs with the fence after the application's arm store: either we see its arm
	 * request, or it sees our CQE when it polls again after arming. Never neither.
	 */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	arm = __atomic_load_n(&cq->ctl->arm, __ATOMIC_ACQUIRE);
	n = arm >> 1;
	served = atomic_load_explicit(&cq->arm_served, memory_order_relaxed);

	if (n == served)
		return;		/* not armed */
	/* Solicited-only: solicited receives and every error completion (11.4.2.2). */
	if ((arm & 1) && !wc->solicited && wc->status == DROCE_SHM_WC_SUCCESS)
		return;
	if (!atomic_compare_exchange_strong(&cq->arm_served, &served, n))
		return;		/* another engine served this request */
	if (cq->eventfd >= 0 && write(cq->eventfd, &one, sizeof(one)) < 0)
		ENGINE_LOG(WARNING, "CQ %u: eventfd write failed\n", cq->handle);
}

void
engine_cqe_flush(struct droce_engine_qp *qp, bool send, const uint64_t *wr_id, uint32_t n)
{
	struct droce_engine_cq *cq = send ? qp->scq : qp->rcq;
	struct engine_wc wc;
	uint32_t i;

	if (send)
		ENGINE_QP_ADD(qp, req_cqe_flush_error, n);
	else
		ENGINE_QP_ADD(qp, resp_cqe_flush_error, n);

	/* 11.6.3: only wr_id, status and qp_num mean anything in a flush completion. */
	memset(&wc, 0, sizeof(wc));
	wc.status = DROCE_SHM_WC_WR_FLUSH_ERR;
	wc.qp_num = qp->qpn;
	for (i = 0; i < n; i++) {
		wc.wr_id = wr_id[i];
		engine_cqe_write(qp->engine, cq, &wc);
	}
}

bool
engine_cqe_write(struct droce_engine *e, struct droce_engine_cq *cq, const struct engine_wc *wc)
{
	struct droce_shm_cqe *cqe;
	uint32_t slot, cons;

	if (atomic_load_explicit(&cq->error, memory_order_relaxed)) {
		ENGINE_STAT(e, cq_overrun);
		return false;
	}
	slot = atomic_fetch_add_explicit(&cq->head, 1, memory_order_relaxed);
	/* The application's consumer index: a value that lies only overruns its own CQ. */
	cons = __atomic_load_n(&cq->ctl->ring.cons, __ATOMIC_ACQUIRE);
	if (slot - cons >= cq->size) {
		ENGINE_STAT(e, cq_overrun);
		if (atomic_exchange(&cq->error, 1) == 0) {
			__atomic_store_n(&cq->ctl->error, 1, __ATOMIC_RELEASE);
			engine_event(cq->dom, DROCE_ENGINE_EVENT_CQ_ERR, cq->handle);
		}
		return false;
	}
	cqe = &cq->ring[slot & (cq->size - 1)];
	cqe->wr_id = wc->wr_id;
	cqe->byte_len = wc->byte_len;
	cqe->imm_data = wc->imm_data;
	cqe->qp_num = wc->qp_num;
	cqe->src_qp = wc->src_qp;
	cqe->vendor_err = 0;
	cqe->wc_flags = wc->wc_flags;
	cqe->status = wc->status;
	cqe->opcode = wc->opcode;
	cqe->pkey_index = 0;
	cqe->slid = 0;
	cqe->sl = wc->sl;
	cqe->dlid_path_bits = 0;
	/* Read now, not the pass's e->now: completion timestamps time single messages. */
	cqe->timestamp = cq->timestamps ? rte_rdtsc() : 0;
	__atomic_store_n(&cqe->owner, droce_shm_cqe_owner(slot, cq->log2_size), __ATOMIC_RELEASE);
	ENGINE_STAT(e, cqe);
	cq_notify(cq, wc);
	return true;
}
