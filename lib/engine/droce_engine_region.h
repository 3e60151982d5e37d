/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef DROCE_ENGINE_REGION_H
#define DROCE_ENGINE_REGION_H

/*
 * lib/engine's CQs and QPs with their control blocks and rings in a client region, laid
 * out as droced lays them out for libdroce, and the lib/shm client views that post to
 * them and poll them: the small embedding API of the programs that run engines in their
 * own process (app/droce-perf, the engine tests' client test/engine/engine_client.c, and
 * droce-bench-engine). droced lays its clients' regions out itself.
 */

#include <stdint.h>

#include <droce_engine.h>
#include <droce_shm_client.h>
#include <droce_shm_arena.h>
#include <droce_shm_qp_attr.h>

/* A client region and what allocates in it. */
struct droce_engine_region {
	void *base;			/* starts with its struct droce_shm_region_hdr */
	struct droce_shm_arena *arena;
	struct droce_engine_domain *dom;	/* the domain the region belongs to */
};

/* Where a CQ's control block and ring are in the region. */
struct droce_engine_region_cq_mem {
	int64_t ctl_off, ring_off;
};

/* Where a QP's control block and rings are in the region (rq_len 0: an SRQ's QP). */
struct droce_engine_region_qp_mem {
	int64_t ctl_off, sq_off, rq_off;
	uint64_t sq_len, rq_len;
};

/*
 * A CQ of size entries (a power of two) written to eventfd at notifications (-1: none),
 * named handle in events; view polls it. NULL when the region is full or lib/engine
 * refuses.
 */
struct droce_engine_cq *droce_engine_region_cq_create(const struct droce_engine_region *r, uint32_t size,
					 int eventfd, uint32_t handle,
					 struct droce_engine_region_cq_mem *mem,
					 struct droce_shm_client_cq *view);
/* Gives the region back after droce_engine_cq_destroy: 0, or -1 when the arena refuses. */
int droce_engine_region_cq_free(const struct droce_engine_region *r, const struct droce_engine_region_cq_mem *mem,
			  uint32_t size);

/*
 * ibv_resize_cq of a region's CQ: a new ring of size entries (a power of two) in the
 * region, droce_engine_cq_resize, the old ring freed, view following the new one from
 * its first entry; mem and old_size describe the CQ before. 0, or -errno (nothing changed).
 */
int droce_engine_region_cq_resize(const struct droce_engine_region *r, struct droce_engine_cq *cq,
			   struct droce_engine_region_cq_mem *mem, uint32_t old_size, uint32_t size,
			   struct droce_shm_client_cq *view);

/*
 * A QP as conf says, its control block and rings placed in the region here (conf's ctl,
 * sq and rq are set; rq_size and rq_max_sge 0 with an SRQ). view posts to it, through the
 * doorbell block of the QP's engine; its supported_wr (SEND only) and checks (none) are
 * the caller's to set. NULL when the region is full or lib/engine refuses.
 */
struct droce_engine_qp *droce_engine_region_qp_create(const struct droce_engine_region *r,
					 struct droce_engine_qp_conf *conf,
					 struct droce_engine_region_qp_mem *mem,
					 struct droce_shm_client_qp *view);
/* Gives the region back after droce_engine_qp_destroy: 0, or -1 when the arena refuses. */
int droce_engine_region_qp_free(const struct droce_engine_region *r, const struct droce_engine_region_qp_mem *mem);

#endif /* DROCE_ENGINE_REGION_H */
