/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * droce_engine_region.h's embedding API: a CQ's or QP's control block and rings placed in
 * a client region by its arena, the engine object made over them (the control side's
 * object API, engine_obj_*.c), and the lib/shm views an embedding program posts and polls
 * through, as libdroce does over droced's regions.
 */

#include <errno.h>
#include <string.h>

#include <droce_shm.h>

#include "droce_engine_region.h"

/* The region at off, or NULL when the arena had no room (off < 0). */
static void *
region_at(const struct droce_engine_region *r, int64_t off)
{
	return off > 0 ? (uint8_t *)r->base + off : NULL;
}

static int64_t
region_alloc(const struct droce_engine_region *r, uint64_t len)
{
	return droce_shm_arena_alloc(r->arena, len, DROCE_SHM_CACHE_LINE);
}

struct droce_engine_cq *
droce_engine_region_cq_create(const struct droce_engine_region *r, uint32_t size, int eventfd,
			uint32_t handle, struct droce_engine_region_cq_mem *mem,
			struct droce_shm_client_cq *view)
{
	struct droce_engine_cq_conf conf;
	struct droce_engine_cq *cq;

	mem->ctl_off = region_alloc(r, sizeof(struct droce_shm_cq));
	mem->ring_off = region_alloc(r, (uint64_t)size * sizeof(struct droce_shm_cqe));
	memset(&conf, 0, sizeof(conf));
	conf.ctl = region_at(r, mem->ctl_off);
	conf.ring = region_at(r, mem->ring_off);
	conf.size = size;
	conf.eventfd = eventfd;
	conf.handle = handle;
	if (conf.ctl == NULL || conf.ring == NULL)
		return NULL;
	cq = droce_engine_cq_create(r->dom, &conf);
	if (cq == NULL)
		return NULL;
	view->ctl = conf.ctl;
	view->ring = conf.ring;
	view->size = size;
	view->log2_size = (unsigned int)__builtin_ctz(size);
	return cq;
}

int
droce_engine_region_cq_free(const struct droce_engine_region *r, const struct droce_engine_region_cq_mem *mem,
		      uint32_t size)
{
	if (droce_shm_arena_free(r->arena, mem->ctl_off, sizeof(struct droce_shm_cq)) != 0 ||
	    droce_shm_arena_free(r->arena, mem->ring_off,
				 (uint64_t)size * sizeof(struct droce_shm_cqe)) != 0)
		return -1;
	return 0;
}

int
droce_engine_region_cq_resize(const struct droce_engine_region *r, struct droce_engine_cq *cq,
			   struct droce_engine_region_cq_mem *mem, uint32_t old_size, uint32_t size,
			   struct droce_shm_client_cq *view)
{
	int64_t off = region_alloc(r, (uint64_t)size * sizeof(struct droce_shm_cqe));
	struct droce_shm_cqe *ring = region_at(r, off);
	int rc;

	if (ring == NULL)
		return -ENOMEM;
	rc = droce_engine_cq_resize(cq, ring, size);
	if (rc != 0) {
		droce_shm_arena_free(r->arena, off, (uint64_t)size * sizeof(struct droce_shm_cqe));
		return rc;
	}
	droce_shm_arena_free(r->arena, mem->ring_off, (uint64_t)old_size * sizeof(struct droce_shm_cqe));
	mem->ring_off = off;
	view->ring = ring;
	view->size = size;
	view->log2_size = (unsigned int)__builtin_ctz(size);
	view->cons = 0;
	return 0;
}

struct droce_engine_qp *
droce_engine_region_qp_create(const struct droce_engine_region *r, struct droce_engine_qp_conf *conf,
			struct droce_engine_region_qp_mem *mem, struct droce_shm_client_qp *view)
{
	const struct droce_shm_region_hdr *hdr = r->base;
	uint32_t sq_stride = droce_shm_sq_stride(conf->sq_max_sge, conf->max_inline);
	uint32_t rq_stride = droce_shm_rq_stride(conf->rq_max_sge);
	/* XRC QPs have no receive ring of their own, as QPs on an SRQ. */
	bool own_rq = conf->srq == NULL && conf->qp_type != DROCE_SHM_QPT_XRC_SEND &&
		      conf->qp_type != DROCE_SHM_QPT_XRC_RECV;
	struct droce_engine_qp *qp;

	mem->sq_len = (uint64_t)conf->sq_size * sq_stride;
	mem->rq_len = own_rq ? (uint64_t)conf->rq_size * rq_stride : 0;
	mem->ctl_off = region_alloc(r, sizeof(struct droce_shm_qp));
	mem->sq_off = region_alloc(r, mem->sq_len);
	mem->rq_off = own_rq ? region_alloc(r, mem->rq_len) : 0;
	conf->ctl = region_at(r, mem->ctl_off);
	conf->sq = region_at(r, mem->sq_off);
	conf->rq = own_rq ? region_at(r, mem->rq_off) : NULL;
	if (conf->ctl == NULL || conf->sq == NULL || (own_rq && conf->rq == NULL))
		return NULL;
	qp = droce_engine_qp_create(r->dom, conf);
	if (qp == NULL)
		return NULL;
	memset(view, 0, sizeof(*view));
	view->ctl = conf->ctl;
	view->sq = conf->sq;
	view->rq = conf->rq;
	view->sq_size = conf->sq_size;
	view->sq_stride = sq_stride;
	view->sq_max_sge = conf->sq_max_sge;
	view->max_inline = conf->max_inline;
	view->rq_size = conf->rq_size;
	view->rq_stride = rq_stride;
	view->rq_max_sge = conf->rq_max_sge;
	view->qp_num = droce_engine_qp_num(qp);
	view->qp_type = conf->qp_type;
	view->supported_wr = 1u << DROCE_SHM_WR_SEND;
	view->db.block = (struct droce_shm_doorbell *)((uint8_t *)r->base +
						       hdr->doorbell_off[conf->engine_id]);
	view->db.slot = conf->db_slot;
	view->db.wake_fd = droce_engine_domain_wake_fd(r->dom, conf->engine_id);
	return qp;
}

int
droce_engine_region_qp_free(const struct droce_engine_region *r, const struct droce_engine_region_qp_mem *mem)
{
	if (droce_shm_arena_free(r->arena, mem->ctl_off, sizeof(struct droce_shm_qp)) != 0 ||
	    droce_shm_arena_free(r->arena, mem->sq_off, mem->sq_len) != 0)
		return -1;
	if (mem->rq_len != 0 && droce_shm_arena_free(r->arena, mem->rq_off, mem->rq_len) != 0)
		return -1;
	return 0;
}
