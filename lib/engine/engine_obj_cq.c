/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CQs, the control side (control thread): created over a ring in the client's region,
 * resized while no engine runs a pass (the device's freeze), destroyed once no QP uses
 * them; and the QPs of a CQ in error moved to error. Engines write the completions
 * (engine_cq.c).
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_malloc.h>

#include "engine_loc.h"

struct droce_engine_cq *
droce_engine_cq_create(struct droce_engine_domain *dom, const struct droce_engine_cq_conf *conf)
{
	struct droce_engine_cq *cq;

	if (conf->ctl == NULL || conf->ring == NULL || !is_pow2(conf->size) ||
	    conf->size > DROCE_SHM_MAX_CQE) {
		rte_errno = EINVAL;
		return NULL;
	}
	cq = rte_zmalloc("droce_cq", sizeof(*cq), RTE_CACHE_LINE_SIZE);
	if (cq == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	cq->dom = dom;
	cq->ctl = conf->ctl;
	cq->ring = conf->ring;
	cq->size = conf->size;
	cq->log2_size = __builtin_ctz(conf->size);
	cq->handle = conf->handle;
	cq->eventfd = conf->eventfd;
	cq->timestamps = conf->timestamps;
	/* Start where the ring is: a CQ made over a used ring must not look full or fresh. */
	atomic_store(&cq->head, __atomic_load_n(&conf->ctl->ring.cons, __ATOMIC_ACQUIRE));
	atomic_store(&cq->arm_served, __atomic_load_n(&conf->ctl->arm, __ATOMIC_ACQUIRE) >> 1);
	dom->dev->objs.cqs++;
	return cq;
}

int
droce_engine_cq_error_qps(struct droce_engine_cq *cq)
{
	struct droce_engine_dev *dev = cq->dom->dev;
	struct droce_shm_qp_attr attr;
	int n = 0;
	uint32_t q;

	memset(&attr, 0, sizeof(attr));
	attr.mask = DROCE_SHM_QP_STATE;
	attr.qp_state = DROCE_SHM_QPS_ERR;
	for (q = 0; q < dev->max_qps; q++) {
		struct droce_engine_qp *qp = dev->qps[q];

		if (qp != NULL && (qp->scq == cq || qp->rcq == cq) &&
		    droce_engine_qp_modify(qp, &attr) == 0) {
			/* The local work queue catastrophic error of each (11.6.3.1). */
			engine_event(qp->dom, DROCE_ENGINE_EVENT_QP_FATAL, qp->qpn);
			n++;
		}
	}
	return n;
}

bool
droce_engine_cq_in_error(const struct droce_engine_cq *cq)
{
	return atomic_load_explicit(&((struct droce_engine_cq *)cq)->error, memory_order_acquire) != 0;
}

/*
 * The completions cq will still take for sends already posted (11.2.9.3 counts them among
 * the entries a resize must keep room for, as a NIC that fetched them long ago would):
 * each QP completing its sends on cq, every WQE not yet completed that will make a CQE
 * (signaled, or all of them with sq_sig_all, or all of them once the QP is in error, as
 * errors always complete). Called with every pass ended (the device's freeze): the engine's
 * indices are still; the WQEs it has not fetched are read from the application's ring,
 * their flags only, and never more than the ring holds.
 */
static uint32_t
cq_sends_waiting(const struct droce_engine_cq *cq)
{
	const struct droce_engine_dev *dev = cq->dom->dev;
	uint32_t q, i, n = 0;

	for (q = 0; q < dev->max_qps; q++) {
		const struct droce_engine_qp *qp = atomic_load_explicit(&dev->qps[q],
									memory_order_acquire);
		uint32_t prod, posted;
		bool all;

		if (qp == NULL || qp->scq != cq)
			continue;
		all = qp->sq_sig_all || qp->state == DROCE_SHM_QPS_ERR;
		for (i = qp->req.cons; i != qp->req.fetch; i++)
			n += all || (qp_swqe(qp, i)->wqe->flags & DROCE_SHM_SEND_SIGNALED);
		prod = __atomic_load_n(&qp->ctl->sq.prod, __ATOMIC_ACQUIRE);
		posted = RTE_MIN(prod - qp->req.fetch, qp->sq_size - (qp->req.fetch - qp->req.cons));
		for (i = 0; i < posted; i++) {
			const struct droce_shm_swqe *w = (const void *)(qp->sq_ring +
				(size_t)((qp->req.fetch + i) & (qp->sq_size - 1)) * qp->sq_stride);

			n += all || (__atomic_load_n(&w->flags, __ATOMIC_RELAXED) &
				     DROCE_SHM_SEND_SIGNALED);
		}
	}
	return n;
}

int
droce_engine_cq_resize(struct droce_engine_cq *cq, struct droce_shm_cqe *ring, uint32_t size)
{
	struct droce_engine_dev *dev = cq->dom->dev;
	uint32_t cons, head, n, i;
	int rc = 0;

	if (ring == NULL || size == 0 || (size & (size - 1)) != 0)
		return -EINVAL;
	/* Every pass that may be writing to cq ends; no new one starts (engine_loop.c). */
	atomic_store_explicit(&dev->freeze, 1, memory_order_seq_cst);
	engine_quiesce(dev);
	cons = __atomic_load_n(&cq->ctl->ring.cons, __ATOMIC_ACQUIRE);
	head = atomic_load_explicit(&cq->head, memory_order_relaxed);
	n = head - cons;
	if (atomic_load_explicit(&cq->error, memory_order_relaxed)) {
		rc = -EIO;
	} else if (n > cq->size || n + cq_sends_waiting(cq) > size) {
		/* 11.2.9.3: fewer entries than the completions waiting is refused */
		rc = -EINVAL;
	} else {
		unsigned int log2 = __builtin_ctz(size);

		for (i = 0; i < n; i++) {
			const struct droce_shm_cqe *src = &cq->ring[(cons + i) & (cq->size - 1)];

			memcpy(&ring[i], src, offsetof(struct droce_shm_cqe, owner));
			ring[i].owner = droce_shm_cqe_owner(i, log2);
		}
		cq->ring = ring;
		cq->size = size;
		cq->log2_size = log2;
		atomic_store_explicit(&cq->head, n, memory_order_relaxed);
		__atomic_store_n(&cq->ctl->ring.cons, 0, __ATOMIC_RELEASE);
	}
	/* the new ring and index before any pass runs again */
	atomic_store_explicit(&dev->freeze, 0, memory_order_release);
	return rc;
}

int
droce_engine_cq_destroy(struct droce_engine_cq *cq)
{
	if (cq->nb_qps != 0)
		return -EBUSY;
	engine_quiesce(cq->dom->dev);
	cq->dom->dev->objs.cqs--;
	rte_free(cq);
	return 0;
}
