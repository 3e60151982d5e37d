/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Shared receive queues: the ring lives in the client region, posting is
 * droce_shm_post_srq_recv under the SRQ's spinlock (context->ops.post_srq_recv); limit
 * changes and queries go to droced, which owns the limit event.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_loc.h"

int
verbs_srq_post_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct verbs_dsrq *srq = to_dsrq(ibsrq);
	struct ibv_recv_wr *bad = NULL;
	int ret;

	pthread_spin_lock(&srq->lock);
	if (verbs_dead(to_dctx(ibsrq->context))) {
		bad = wr;
		ret = EIO;
	} else {
		ret = droce_shm_post_srq_recv(&srq->view, wr, &bad);
	}
	pthread_spin_unlock(&srq->lock);
	if (bad_wr != NULL)
		*bad_wr = bad;
	return ret;
}

VERBS_EXPORT struct ibv_srq *
ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	return verbs_srq_create(pd, attr, NULL, NULL);
}

struct ibv_srq *
verbs_srq_create(struct ibv_pd *pd, struct ibv_srq_init_attr *attr, struct verbs_dxrcd *xrcd,
		 struct ibv_cq *cq)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_CREATE_SRQ };
	struct droce_proto_resp resp;
	const struct droce_proto_limits *l;
	struct verbs_dctx *c;
	struct verbs_dsrq *srq;
	int ret;

	if (pd == NULL || attr == NULL)
		return verbs_err_null(EINVAL);
	c = to_dctx(pd->context);
	l = &c->limits;
	/* ibv_create_srq(3): srq_limit must not exceed max_wr; both within the device's. */
	if (attr->attr.max_wr == 0 || attr->attr.max_wr > l->max_srq_wr ||
	    attr->attr.max_sge > l->max_srq_sge || attr->attr.srq_limit > attr->attr.max_wr)
		return verbs_err_null(EINVAL);
	srq = calloc(1, sizeof(*srq));
	if (srq == NULL)
		return verbs_err_null(ENOMEM);
	req.create_srq.pd = pd->handle;
	req.create_srq.max_wr = attr->attr.max_wr;
	req.create_srq.max_sge = attr->attr.max_sge;
	req.create_srq.srq_limit = attr->attr.srq_limit;
	if (xrcd != NULL) {
		req.create_srq.srq_type = IBV_SRQT_XRC;
		req.create_srq.xrcd = xrcd->handle;
		req.create_srq.cq = cq->handle;
	}
	ret = verbs_request(c, &req, NULL, 0, &resp);
	if (ret == 0 && ((resp.srq.size & (resp.srq.size - 1)) != 0 || resp.srq.size == 0 ||
			 resp.srq.size > DROCE_SHM_MAX_WR ||
			 resp.srq.max_sge > DROCE_SHM_MAX_SGE ||
			 resp.srq.stride < droce_shm_rq_stride(resp.srq.max_sge) ||
			 !verbs_region_ok(c, resp.srq.ctl_off, sizeof(struct droce_shm_srq)) ||
			 !verbs_region_ok(c, resp.srq.ring_off,
					  (uint64_t)resp.srq.size * resp.srq.stride))) {
		struct droce_proto_req d = { .op = DROCE_PROTO_OP_DESTROY_SRQ };
		struct droce_proto_resp dr;

		d.obj.handle = resp.srq.handle;
		verbs_request(c, &d, NULL, 0, &dr);
		ret = EPROTO;
	}
	if (ret != 0) {
		free(srq);
		return verbs_err_null(ret);
	}
	pthread_spin_init(&srq->lock, PTHREAD_PROCESS_PRIVATE);
	srq->view.ctl = (struct droce_shm_srq *)(c->region + resp.srq.ctl_off);
	srq->view.ring = c->region + resp.srq.ring_off;
	srq->view.size = resp.srq.size;
	srq->view.stride = resp.srq.stride;
	srq->view.max_sge = resp.srq.max_sge;
	srq->view.lkey_check = verbs_lkey_check;
	srq->view.check_arg = c;
	srq->max_wr = resp.srq.max_wr;
	srq->srq_num = resp.srq.srq_num;
	srq->ibsrq.context = pd->context;
	srq->ibsrq.srq_context = attr->srq_context;
	srq->ibsrq.pd = pd;
	srq->ibsrq.handle = resp.srq.handle;
	pthread_mutex_init(&srq->ibsrq.mutex, NULL);
	pthread_cond_init(&srq->ibsrq.cond, NULL);
	attr->attr.max_wr = resp.srq.max_wr;
	attr->attr.max_sge = resp.srq.max_sge;
	pthread_mutex_lock(&c->obj_lock);
	srq->next = c->srqs;
	c->srqs = srq;
	pthread_mutex_unlock(&c->obj_lock);
	return &srq->ibsrq;
}

/*
 * IBV_SRQ_LIMIT arms the limit event (droced); IBV_SRQ_MAX_WR asks for a resize, which
 * droced refuses when it cannot grow the ring. Other bits: EINVAL.
 */
VERBS_EXPORT int
ibv_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int mask)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_MODIFY_SRQ };
	struct droce_proto_resp resp;
	struct verbs_dsrq *srq;
	int ret;

	if (ibsrq == NULL || attr == NULL ||
	    ((unsigned int)mask & ~(unsigned int)(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)))
		return verbs_err(EINVAL);
	srq = to_dsrq(ibsrq);
	if ((mask & IBV_SRQ_LIMIT) && !(mask & IBV_SRQ_MAX_WR) && attr->srq_limit > srq->max_wr)
		return verbs_err(EINVAL);
	req.modify_srq.handle = ibsrq->handle;
	req.modify_srq.mask = (uint32_t)mask;
	req.modify_srq.max_wr = attr->max_wr;
	req.modify_srq.srq_limit = attr->srq_limit;
	ret = verbs_request(to_dctx(ibsrq->context), &req, NULL, 0, &resp);
	if (ret != 0)
		return verbs_err(ret);
	return 0;
}

VERBS_EXPORT int
ibv_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_QUERY_SRQ };
	struct droce_proto_resp resp;
	int ret;

	if (ibsrq == NULL || attr == NULL)
		return verbs_err(EINVAL);
	req.obj.handle = ibsrq->handle;
	ret = verbs_request(to_dctx(ibsrq->context), &req, NULL, 0, &resp);
	if (ret != 0)
		return verbs_err(ret);
	attr->max_wr = resp.srq.max_wr;
	attr->max_sge = resp.srq.max_sge;
	attr->srq_limit = resp.srq.srq_limit;
	return 0;
}

/* EBUSY while a QP uses the SRQ (droced); waits for its async events to be acked. */
VERBS_EXPORT int
ibv_destroy_srq(struct ibv_srq *ibsrq)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_DESTROY_SRQ };
	struct droce_proto_resp resp;
	struct verbs_dctx *c;
	struct verbs_dsrq *srq, **pp;
	int ret;

	if (ibsrq == NULL)
		return verbs_err(EINVAL);
	srq = to_dsrq(ibsrq);
	c = to_dctx(ibsrq->context);
	req.obj.handle = ibsrq->handle;
	ret = verbs_request(c, &req, NULL, 0, &resp);
	if (ret != 0)
		return verbs_err(ret);
	pthread_mutex_lock(&c->obj_lock);
	for (pp = &c->srqs; *pp != NULL; pp = &(*pp)->next)
		if (*pp == srq) {
			*pp = srq->next;
			break;
		}
	verbs_async_forget(c);
	pthread_mutex_unlock(&c->obj_lock);
	pthread_mutex_lock(&ibsrq->mutex);
	while (ibsrq->events_completed != srq->async_reported)
		pthread_cond_wait(&ibsrq->cond, &ibsrq->mutex);
	pthread_mutex_unlock(&ibsrq->mutex);
	pthread_spin_destroy(&srq->lock);
	pthread_mutex_destroy(&ibsrq->mutex);
	pthread_cond_destroy(&ibsrq->cond);
	free(srq);
	return 0;
}
