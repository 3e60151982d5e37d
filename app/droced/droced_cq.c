/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Completion queues of a client: the control block and ring in the client's region, an
 * optional notification pipe (completion channels), ibv_resize_cq with a new ring.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_errno.h>

#include "droced_loc.h"

int
droced_cq_create(struct droced_client *c, struct droced_call *call)
{
	const struct droce_proto_req *req = call->req;
	unsigned int nfds = call->nfds;
	struct droce_proto_resp *resp = call->resp;
	int *out_fds = call->out_fds;
	unsigned int *out_nfds = call->out_nfds;
	struct droce_engine_cq_conf conf;
	struct droced_cq *cq;
	uint32_t handle;
	int rc;

	if (req->create_cq.notify > 1 || nfds != 0 ||
	    (req->create_cq.flags & ~(uint32_t)DROCE_PROTO_CQ_TIMESTAMPS))
		return -EINVAL;
	if (req->create_cq.cqe > c->d->cfg.limits.max_cqe)
		return droced_limit(call, DROCE_PROTO_LIMIT_CQE, -EINVAL);
	if (c->cqs.nb >= c->cqs.max)
		return droced_limit(call, DROCE_PROTO_LIMIT_CQS, -ENOMEM);
	cq = calloc(1, sizeof(*cq));
	if (cq == NULL)
		return -ENOMEM;
	cq->efd = cq->rfd = -1;
	cq->size = droced_pow2_at_least(req->create_cq.cqe);
	rc = droced_table_add(&c->cqs, cq, &handle);
	if (rc != 0) {
		free(cq);
		return rc;
	}
	if (req->create_cq.notify) {
		rc = droced_notify_pipe(&cq->rfd, &cq->efd);
		if (rc != 0) {
			droced_table_del(&c->cqs, handle);
			free(cq);
			return rc;
		}
	}
	cq->ctl_off = droce_shm_arena_alloc(c->arena, sizeof(struct droce_shm_cq),
					    DROCE_SHM_CACHE_LINE);
	cq->ring_off = droce_shm_arena_alloc(c->arena, (uint64_t)cq->size *
					     sizeof(struct droce_shm_cqe), DROCE_SHM_CACHE_LINE);
	if (cq->ctl_off < 0 || cq->ring_off < 0) {
		rc = -ENOMEM;
		goto fail;
	}
	memset(&conf, 0, sizeof(conf));
	conf.ctl = droced_region_ptr(c, cq->ctl_off);
	conf.ring = droced_region_ptr(c, cq->ring_off);
	conf.size = cq->size;
	conf.eventfd = cq->efd;
	conf.handle = handle;
	conf.timestamps = req->create_cq.flags & DROCE_PROTO_CQ_TIMESTAMPS;
	cq->cq = droce_engine_cq_create(c->dom, &conf);
	if (cq->cq == NULL) {
		rc = -rte_errno;
		goto fail;
	}
	if (cq->rfd >= 0) {
		out_fds[0] = cq->rfd;
		*out_nfds = 1;
	}
	resp->cq.handle = handle;
	resp->cq.size = cq->size;
	resp->cq.ctl_off = cq->ctl_off;
	resp->cq.ring_off = cq->ring_off;
	return 0;
fail:
	if (cq->ctl_off >= 0)
		droce_shm_arena_free(c->arena, cq->ctl_off, sizeof(struct droce_shm_cq));
	if (cq->ring_off >= 0)
		droce_shm_arena_free(c->arena, cq->ring_off,
				     (uint64_t)cq->size * sizeof(struct droce_shm_cqe));
	droced_notify_pipe_close(cq->rfd, cq->efd);
	droced_table_del(&c->cqs, handle);
	free(cq);
	return rc;
}

/*
 * ibv_resize_cq: a new ring in the region, the waiting completions moved into it by the
 * engine layer (droce_engine_cq_resize), the old ring freed. libdroce holds the CQ's poll
 * lock throughout, so the application's consumer index starts again at 0 with the ring.
 */
int
droced_cq_resize(struct droced_client *c, struct droced_call *call)
{
	const struct droce_proto_req *req = call->req;
	struct droce_proto_resp *resp = call->resp;
	struct droced_cq *cq = droced_table_get(&c->cqs, req->resize_cq.handle);
	uint32_t size;
	int64_t off;
	int rc;

	if (cq == NULL || req->resize_cq.cqe == 0)
		return -EINVAL;
	if (req->resize_cq.cqe > c->d->cfg.limits.max_cqe)
		return droced_limit(call, DROCE_PROTO_LIMIT_CQE, -EINVAL);
	size = droced_pow2_at_least(req->resize_cq.cqe);
	off = droce_shm_arena_alloc(c->arena, (uint64_t)size * sizeof(struct droce_shm_cqe),
				    DROCE_SHM_CACHE_LINE);
	if (off < 0)
		return -ENOMEM;
	rc = droce_engine_cq_resize(cq->cq, droced_region_ptr(c, off), size);
	if (rc != 0) {
		droce_shm_arena_free(c->arena, off, (uint64_t)size * sizeof(struct droce_shm_cqe));
		return rc;
	}
	droce_shm_arena_free(c->arena, cq->ring_off, (uint64_t)cq->size *
			     sizeof(struct droce_shm_cqe));
	cq->ring_off = off;
	cq->size = size;
	resp->cq.handle = req->resize_cq.handle;
	resp->cq.size = size;
	resp->cq.ctl_off = (uint64_t)cq->ctl_off;
	resp->cq.ring_off = (uint64_t)off;
	return 0;
}

int
droced_cq_destroy(struct droced_client *c, struct droced_call *call)
{
	uint32_t handle = call->req->obj.handle;
	struct droced_cq *cq = droced_table_get(&c->cqs, handle);
	int rc;

	if (cq == NULL)
		return -EINVAL;
	rc = droce_engine_cq_destroy(cq->cq);
	if (rc != 0)
		return rc;
	droce_shm_arena_free(c->arena, cq->ctl_off, sizeof(struct droce_shm_cq));
	droce_shm_arena_free(c->arena, cq->ring_off, (uint64_t)cq->size * sizeof(struct droce_shm_cqe));
	droced_notify_pipe_close(cq->rfd, cq->efd);
	droced_table_del(&c->cqs, handle);
	free(cq);
	return 0;
}

struct droced_cq *
droced_cq_get(const struct droced_client *c, uint32_t handle)
{
	return droced_table_get(&c->cqs, handle);
}

/* At the client's end, after its QPs and SRQs (which hold CQs). */
void
droced_cq_release_all(struct droced_client *c)
{
	uint32_t i;

	for (i = 0; i < c->cqs.cap; i++) {
		struct droced_cq *cq = c->cqs.obj[i];

		if (cq == NULL)
			continue;
		droce_engine_cq_destroy(cq->cq);
		droced_notify_pipe_close(cq->rfd, cq->efd);
		free(cq);
	}
	droced_table_free(&c->cqs);
}
