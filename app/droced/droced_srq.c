/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Shared receive queues of a client, XRC SRQs among them (an XRC domain and a CQ of
 * their own); the ring lives in the client's region at a fixed size (no resizing).
 */

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_errno.h>

#include "droced_loc.h"

static void
srq_resp(const struct droced_srq *srq, uint32_t handle, struct droce_proto_resp *resp)
{
	resp->srq.handle = handle;
	resp->srq.size = srq->size;
	resp->srq.stride = srq->stride;
	resp->srq.max_wr = srq->size;
	resp->srq.max_sge = srq->max_sge;
	resp->srq.srq_limit = droce_engine_srq_limit(srq->srq);
	resp->srq.srq_num = droce_engine_srq_num(srq->srq);
	resp->srq.ctl_off = srq->ctl_off;
	resp->srq.ring_off = srq->ring_off;
}

int
droced_srq_create(struct droced_client *c, struct droced_call *call)
{
	const struct droce_proto_req *req = call->req;
	struct droce_proto_resp *resp = call->resp;
	struct droced_pd *pd = droced_pd_get(c, req->create_srq.pd);
	bool xrc = req->create_srq.srq_type == DROCE_PROTO_SRQT_XRC;
	struct droced_xrcd_ref *xrcd = xrc ? droced_xrcd_get(c, req->create_srq.xrcd) : NULL;
	struct droced_cq *cq = xrc ? droced_cq_get(c, req->create_srq.cq) : NULL;
	struct droce_engine_srq_conf conf;
	struct droced_srq *srq;
	uint32_t handle;
	int rc;

	/* An XRC SRQ names its domain and CQ (ibv_create_srq_ex(3)); TM SRQs: not offered. */
	if (req->create_srq.srq_type > DROCE_PROTO_SRQT_XRC || (xrc && (xrcd == NULL || cq == NULL)))
		return req->create_srq.srq_type > DROCE_PROTO_SRQT_XRC ? -EOPNOTSUPP : -EINVAL;
	if (req->create_srq.max_wr > c->d->cfg.limits.max_wr)
		return droced_limit(call, DROCE_PROTO_LIMIT_WR, -EINVAL);
	if (c->srqs.nb >= c->srqs.max)
		return droced_limit(call, DROCE_PROTO_LIMIT_SRQS, -ENOMEM);
	if (pd == NULL || req->create_srq.max_wr == 0 || req->create_srq.max_sge == 0 ||
	    req->create_srq.max_sge > DROCE_SHM_MAX_SGE ||
	    req->create_srq.srq_limit > req->create_srq.max_wr)
		return -EINVAL;
	srq = calloc(1, sizeof(*srq));
	if (srq == NULL)
		return -ENOMEM;
	srq->size = droced_pow2_at_least(req->create_srq.max_wr);
	srq->stride = droce_shm_rq_stride(req->create_srq.max_sge);
	/* Whatever the stride has room for is what the SRQ honours. */
	srq->max_sge = RTE_MIN((srq->stride - (uint32_t)sizeof(struct droce_shm_rwqe)) /
			       (uint32_t)sizeof(struct droce_shm_sge), (uint32_t)DROCE_SHM_MAX_SGE);
	srq->ring_len = (uint64_t)srq->size * srq->stride;
	srq->pd = req->create_srq.pd;
	srq->xrcd = xrc ? req->create_srq.xrcd : DROCE_PROTO_NO_HANDLE;
	rc = droced_table_add(&c->srqs, srq, &handle);
	if (rc != 0) {
		free(srq);
		return rc;
	}
	srq->ctl_off = droce_shm_arena_alloc(c->arena, sizeof(struct droce_shm_srq),
					     DROCE_SHM_CACHE_LINE);
	srq->ring_off = droce_shm_arena_alloc(c->arena, srq->ring_len, DROCE_SHM_CACHE_LINE);
	if (srq->ctl_off < 0 || srq->ring_off < 0) {
		rc = -ENOMEM;
		goto fail;
	}
	memset(&conf, 0, sizeof(conf));
	conf.ctl = droced_region_ptr(c, srq->ctl_off);
	conf.ring = droced_region_ptr(c, srq->ring_off);
	conf.size = srq->size;
	conf.max_sge = srq->max_sge;
	conf.pd = srq->pd;
	conf.limit = req->create_srq.srq_limit;
	conf.handle = handle;
	if (xrc) {
		conf.xrcd = droced_xrcd_id(xrcd);
		conf.cq = cq->cq;
	}
	srq->srq = droce_engine_srq_create(c->dom, &conf);
	if (srq->srq == NULL) {
		rc = rte_errno == ENOSPC ? -ENOMEM : -rte_errno;
		goto fail;
	}
	pd->users++;
	if (xrc)
		xrcd->users++;
	srq_resp(srq, handle, resp);
	return 0;
fail:
	if (srq->ctl_off >= 0)
		droce_shm_arena_free(c->arena, srq->ctl_off, sizeof(struct droce_shm_srq));
	if (srq->ring_off >= 0)
		droce_shm_arena_free(c->arena, srq->ring_off, srq->ring_len);
	droced_table_del(&c->srqs, handle);
	free(srq);
	return rc;
}

int
droced_srq_modify(struct droced_client *c, struct droced_call *call)
{
	const struct droce_proto_req *req = call->req;
	struct droced_srq *srq = droced_table_get(&c->srqs, req->modify_srq.handle);

	if (srq == NULL ||
	    (req->modify_srq.mask & ~(DROCE_PROTO_SRQ_ATTR_MAX_WR | DROCE_PROTO_SRQ_ATTR_LIMIT)) != 0)
		return -EINVAL;
	/* No resizing: the ring lives in the region at a fixed size. */
	if (req->modify_srq.mask & DROCE_PROTO_SRQ_ATTR_MAX_WR)
		return -EOPNOTSUPP;
	if (req->modify_srq.mask & DROCE_PROTO_SRQ_ATTR_LIMIT)
		return droce_engine_srq_set_limit(srq->srq, req->modify_srq.srq_limit);
	return 0;
}

int
droced_srq_query(struct droced_client *c, struct droced_call *call)
{
	uint32_t handle = call->req->obj.handle;
	struct droce_proto_resp *resp = call->resp;
	struct droced_srq *srq = droced_table_get(&c->srqs, handle);

	if (srq == NULL)
		return -EINVAL;
	srq_resp(srq, handle, resp);
	return 0;
}

int
droced_srq_destroy(struct droced_client *c, struct droced_call *call)
{
	uint32_t handle = call->req->obj.handle;
	struct droced_srq *srq = droced_table_get(&c->srqs, handle);
	int rc;

	if (srq == NULL)
		return -EINVAL;
	rc = droce_engine_srq_destroy(srq->srq);
	if (rc != 0)
		return rc;
	droce_shm_arena_free(c->arena, srq->ctl_off, sizeof(struct droce_shm_srq));
	droce_shm_arena_free(c->arena, srq->ring_off, srq->ring_len);
	droced_pd_get(c, srq->pd)->users--;
	if (srq->xrcd != DROCE_PROTO_NO_HANDLE)
		droced_xrcd_get(c, srq->xrcd)->users--;
	droced_table_del(&c->srqs, handle);
	free(srq);
	return 0;
}

struct droced_srq *
droced_srq_get(const struct droced_client *c, uint32_t handle)
{
	return droced_table_get(&c->srqs, handle);
}

/* At the client's end, after its QPs. */
void
droced_srq_release_all(struct droced_client *c)
{
	uint32_t i;

	for (i = 0; i < c->srqs.cap; i++) {
		struct droced_srq *srq = c->srqs.obj[i];

		if (srq != NULL) {
			droce_engine_srq_destroy(srq->srq);
			free(srq);
		}
	}
	droced_table_free(&c->srqs);
}
