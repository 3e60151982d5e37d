/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * SRQs, the control side (control thread): created over a ring in the client's region,
 * an XRC SRQ numbered in the device's table (where an XRC target finds it by its XRCETH),
 * the limit armed, destroyed once no QP uses it. Engines claim its WQEs (engine_srq_take,
 * engine_resp_rwqe.c).
 */
#include <errno.h>

#include <rte_errno.h>
#include <rte_malloc.h>

#include "engine_loc.h"

/* An XRC SRQ's number, and its place in the device's table: 0 or -ENOSPC. */
static int
xsrq_add(struct droce_engine_dev *dev, struct droce_engine_srq *srq,
	 const struct droce_engine_srq_conf *conf)
{
	uint32_t i;

	for (i = 1; i < DROCE_ENGINE_MAX_XSRQS; i++) {
		uint32_t n = dev->xsrqn_next;

		dev->xsrqn_next = n + 1 == DROCE_ENGINE_MAX_XSRQS ? 1 : n + 1;
		if (atomic_load_explicit(&dev->xsrqs[n], memory_order_relaxed) != NULL)
			continue;
		srq->xrcd = conf->xrcd;
		srq->cq = conf->cq;
		srq->srqn = n;
		/* The CQ is used by the SRQ as by a QP: destroying it is refused meanwhile. */
		conf->cq->nb_qps++;
		atomic_store_explicit(&dev->xsrqs[n], srq, memory_order_release);
		return 0;
	}
	return -ENOSPC;
}

struct droce_engine_srq *
droce_engine_srq_create(struct droce_engine_domain *dom, const struct droce_engine_srq_conf *conf)
{
	struct droce_engine_srq *srq;

	if (conf->ctl == NULL || conf->ring == NULL || !is_pow2(conf->size) ||
	    conf->size > DROCE_SHM_MAX_WR || conf->max_sge == 0 ||
	    conf->max_sge > DROCE_SHM_MAX_SGE || conf->limit > conf->size ||
	    (conf->xrcd != 0) != (conf->cq != NULL) ||
	    (conf->cq != NULL && conf->cq->dom != dom)) {
		rte_errno = EINVAL;
		return NULL;
	}
	srq = rte_zmalloc("droce_srq", sizeof(*srq), RTE_CACHE_LINE_SIZE);
	if (srq == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	srq->dom = dom;
	srq->ctl = conf->ctl;
	srq->ring = conf->ring;
	srq->size = conf->size;
	srq->stride = droce_shm_rq_stride(conf->max_sge);
	srq->max_sge = conf->max_sge;
	srq->pd = conf->pd;
	srq->handle = conf->handle;
	atomic_store(&srq->head, __atomic_load_n(&conf->ctl->ring.cons, __ATOMIC_ACQUIRE));
	atomic_store(&srq->tail, atomic_load(&srq->head));
	atomic_store(&srq->limit, conf->limit);
	if (conf->xrcd != 0 && xsrq_add(dom->dev, srq, conf) != 0) {
		rte_free(srq);
		rte_errno = ENOSPC;
		return NULL;
	}
	dom->dev->objs.srqs++;
	return srq;
}

uint32_t
droce_engine_srq_num(const struct droce_engine_srq *srq)
{
	return srq->srqn;
}

int
droce_engine_srq_set_limit(struct droce_engine_srq *srq, uint32_t limit)
{
	if (limit > srq->size)
		return -EINVAL;
	atomic_store_explicit(&srq->limit, limit, memory_order_release);
	return 0;
}

uint32_t
droce_engine_srq_limit(const struct droce_engine_srq *srq)
{
	return atomic_load_explicit(&((struct droce_engine_srq *)srq)->limit, memory_order_acquire);
}

int
droce_engine_srq_destroy(struct droce_engine_srq *srq)
{
	if (srq->nb_qps != 0)
		return -EBUSY;
	/* No XRC request finds it from now on; those in hand finish before the quiesce. */
	if (srq->xrcd != 0) {
		atomic_store_explicit(&srq->dom->dev->xsrqs[srq->srqn], NULL, memory_order_release);
		srq->cq->nb_qps--;
	}
	engine_quiesce(srq->dom->dev);
	srq->dom->dev->objs.srqs--;
	rte_free(srq);
	return 0;
}
