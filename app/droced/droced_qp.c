/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Queue pairs of a client: creation (its rings in the client's region, an engine of the
 * port in turn, a doorbell slot), XRC targets, modify (an AV whose neighbour is not known
 * yet parks the request: droced_client_park), query, destroy, UD multicast attachments;
 * and the rdma_cm's move of a QP by number (droced_qp_modify_num).
 */

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_errno.h>

#include <droce_net.h>

#include "droced_loc.h"

/* A multicast group a UD QP is attached to. */
struct droced_mcast {
	uint8_t gid[16];
	LIST_ENTRY(droced_mcast) next;
};

struct droced_qp {
	struct droce_engine_qp *qp;
	LIST_HEAD(, droced_mcast) mcast;	/* its groups: left when it goes */
	uint32_t xrcd;		/* XRC target: its XRC domain's handle; else DROCE_PROTO_NO_HANDLE */
	int64_t ctl_off, sq_off, rq_off;
	uint64_t sq_len, rq_len;
	uint32_t engine_id, db_slot, pd;
	struct droce_proto_cap cap;
	uint8_t sq_sig_all;
};

static void mcast_detach_all(struct droced_client *c, struct droced_qp *qp);

/* A free doorbell slot of engine e in this client's block, or -ENOMEM. */
static int
db_slot_alloc(struct droced_client *c, uint32_t e, uint32_t *slot)
{
	uint32_t w;

	for (w = 0; w < DROCE_SHM_DB_WORDS; w++) {
		uint64_t freebits = ~c->db_used[e][w];

		if (freebits != 0) {
			uint32_t b = __builtin_ctzll(freebits);

			c->db_used[e][w] |= 1ull << b;
			*slot = w * 64 + b;
			return 0;
		}
	}
	return -ENOMEM;
}

static void
db_slot_free(struct droced_client *c, uint32_t e, uint32_t slot)
{
	c->db_used[e][slot / 64] &= ~(1ull << (slot % 64));
}

static uint32_t
supported_wr(uint8_t qp_type)
{
	uint32_t wr = (1u << DROCE_SHM_WR_SEND) | (1u << DROCE_SHM_WR_SEND_WITH_IMM);

	/*
	 * Send with Invalidate is an RC operation (IB 9.4.4; the engine refuses it elsewhere),
	 * and so, in droce, are the memory window operations.
	 */
	if (qp_type == DROCE_SHM_QPT_RC)
		wr |= (1u << DROCE_SHM_WR_SEND_WITH_INV) | (1u << DROCE_SHM_WR_BIND_MW) |
		      (1u << DROCE_SHM_WR_LOCAL_INV);
	/* RDMA WRITE is for the connected services (RC, UC), not UD; RDMA READ is RC only. */
	if (qp_type == DROCE_SHM_QPT_RC || qp_type == DROCE_SHM_QPT_UC)
		wr |= (1u << DROCE_SHM_WR_RDMA_WRITE) | (1u << DROCE_SHM_WR_RDMA_WRITE_WITH_IMM);
	/* RDMA READ, the atomics (IB 9.4.5), FLUSH and ATOMIC WRITE (IBA 1.5) are RC only. */
	if (qp_type == DROCE_SHM_QPT_RC)
		wr |= (1u << DROCE_SHM_WR_RDMA_READ) | (1u << DROCE_SHM_WR_ATOMIC_CMP_AND_SWP) |
		      (1u << DROCE_SHM_WR_ATOMIC_FETCH_AND_ADD) | (1u << DROCE_SHM_WR_FLUSH) |
		      (1u << DROCE_SHM_WR_ATOMIC_WRITE);
	/* An XRC initiator: RC's operations but IBA 1.5's (no XRC opcodes for them). */
	if (qp_type == DROCE_SHM_QPT_XRC_SEND)
		wr = supported_wr(DROCE_SHM_QPT_RC) &
		     ~((1u << DROCE_SHM_WR_FLUSH) | (1u << DROCE_SHM_WR_ATOMIC_WRITE));
	return wr;
}

static void
qp_free_mem(struct droced_client *c, struct droced_qp *qp)
{
	if (qp->ctl_off > 0)
		droce_shm_arena_free(c->arena, qp->ctl_off, sizeof(struct droce_shm_qp));
	if (qp->sq_off > 0)
		droce_shm_arena_free(c->arena, qp->sq_off, qp->sq_len);
	if (qp->rq_off > 0)
		droce_shm_arena_free(c->arena, qp->rq_off, qp->rq_len);
}

/* What every CREATE_QP answers, and the engine's wake-up eventfd for this client: its
 * doorbells reach a sleeping engine. */
static void
qp_created(struct droced_client *c, const struct droced_qp *qp, uint32_t handle,
	   struct droced_call *call)
{
	struct droce_proto_resp *resp = call->resp;

	resp->qp.handle = handle;
	resp->qp.qp_num = droce_engine_qp_num(qp->qp);
	resp->qp.engine_id = qp->engine_id;
	resp->qp.db_slot = qp->db_slot;
	resp->qp.ctl_off = qp->ctl_off;
	resp->qp.sq_off = qp->sq_off;
	call->out_fds[0] = droce_engine_domain_wake_fd(c->dom, qp->engine_id);
	*call->out_nfds = call->out_fds[0] >= 0 ? 1 : 0;
}

/* A QP that failed after its doorbell slot was taken: its memory, slot and struct back. */
static void
qp_unwind(struct droced_client *c, struct droced_qp *qp)
{
	qp_free_mem(c, qp);
	db_slot_free(c, qp->engine_id, qp->db_slot);
	free(qp);
}

/*
 * An XRC target (IBV_QPT_XRC_RECV): its XRC domain instead of a PD, no CQ, no queue to
 * post to (the engine keeps a one-entry send ring it never reads), RC's responder.
 */
static int
create_xrc_target(struct droced_client *c, struct droced_call *call)
{
	const struct droce_proto_req *req = call->req;
	struct droce_proto_resp *resp = call->resp;
	struct droced_xrcd_ref *xrcd = droced_xrcd_get(c, req->create_qp.xrcd);
	struct droce_engine_qp_conf conf;
	struct droced_qp *qp;
	uint32_t handle;
	int rc;

	if (xrcd == NULL || req->create_qp.sq_sig_all > 1)
		return -EINVAL;
	if (c->qps.nb >= c->qps.max)
		return droced_limit(call, DROCE_PROTO_LIMIT_QPS, -ENOMEM);
	qp = calloc(1, sizeof(*qp));
	if (qp == NULL)
		return -ENOMEM;
	qp->engine_id = c->port->engines[c->port->qp_rr++ % c->port->nb_engines];
	rc = db_slot_alloc(c, qp->engine_id, &qp->db_slot);
	if (rc != 0) {
		free(qp);
		return rc;
	}
	qp->sq_len = droce_shm_sq_stride(0, 0);
	qp->ctl_off = droce_shm_arena_alloc(c->arena, sizeof(struct droce_shm_qp),
					    DROCE_SHM_CACHE_LINE);
	qp->sq_off = droce_shm_arena_alloc(c->arena, qp->sq_len, DROCE_SHM_CACHE_LINE);
	if (qp->ctl_off < 0 || qp->sq_off < 0) {
		rc = -ENOMEM;
		goto fail;
	}
	memset(&conf, 0, sizeof(conf));
	conf.qp_type = DROCE_SHM_QPT_XRC_RECV;
	conf.engine_id = qp->engine_id;
	conf.xrcd = droced_xrcd_id(xrcd);
	conf.ctl = droced_region_ptr(c, qp->ctl_off);
	conf.sq = droced_region_ptr(c, qp->sq_off);
	conf.sq_size = 1;
	conf.db_slot = qp->db_slot;
	qp->qp = droce_engine_qp_create(c->dom, &conf);
	if (qp->qp == NULL) {
		rc = rte_errno == ENOSPC ? -ENOMEM : -rte_errno;
		goto fail;
	}
	rc = droced_table_add(&c->qps, qp, &handle);
	if (rc != 0) {
		droce_engine_qp_destroy(qp->qp);
		goto fail;
	}
	qp->xrcd = req->create_qp.xrcd;
	xrcd->users++;
	resp->qp.supported_wr = 0;
	resp->qp.sq_size = 1;
	resp->qp.sq_stride = (uint32_t)qp->sq_len;
	qp_created(c, qp, handle, call);
	return 0;
fail:
	qp_unwind(c, qp);
	return rc;
}

int
droced_qp_create(struct droced_client *c, struct droced_call *call)
{
	const struct droce_proto_req *req = call->req;
	struct droce_proto_resp *resp = call->resp;
	const struct droce_proto_cap *cap = &req->create_qp.cap;
	uint32_t max_wr = c->d->cfg.limits.max_wr, handle, sq_size, rq_size = 0;
	uint32_t sq_stride, rq_stride = 0, send_sge, recv_sge = 0, inl;
	struct droced_pd *pd = droced_pd_get(c, req->create_qp.pd);
	struct droced_cq *scq = droced_cq_get(c, req->create_qp.send_cq);
	struct droced_cq *rcq = droced_cq_get(c, req->create_qp.recv_cq);
	struct droced_srq *srq = NULL;
	uint8_t type = req->create_qp.qp_type;
	struct droce_engine_qp_conf conf;
	struct droced_qp *qp;
	int rc;

	if (type == DROCE_SHM_QPT_XRC_RECV)
		return create_xrc_target(c, call);
	if (req->create_qp.srq != DROCE_PROTO_NO_HANDLE) {
		srq = droced_srq_get(c, req->create_qp.srq);
		/* An XRC SRQ serves XRC targets only, through their XRC domain. */
		if (srq == NULL || srq->xrcd != DROCE_PROTO_NO_HANDLE)
			return -EINVAL;
	}
	/* An XRC initiator has no receive side (ibv_create_qp_ex(3)). */
	if (type == DROCE_SHM_QPT_XRC_SEND) {
		if (srq != NULL)
			return -EINVAL;
		rcq = NULL;
	} else if (rcq == NULL) {
		return -EINVAL;
	}
	if (pd == NULL || scq == NULL || req->create_qp.sq_sig_all > 1 ||
	    (type != DROCE_SHM_QPT_RC && type != DROCE_SHM_QPT_UC && type != DROCE_SHM_QPT_UD &&
	     type != DROCE_SHM_QPT_XRC_SEND))
		return -EINVAL;
	if (cap->max_send_wr > max_wr ||
	    (srq == NULL && rcq != NULL && cap->max_recv_wr > max_wr))
		return droced_limit(call, DROCE_PROTO_LIMIT_WR, -EINVAL);
	if (cap->max_send_sge > DROCE_SHM_MAX_SGE ||
	    cap->max_inline_data > DROCE_SHM_MAX_INLINE ||
	    (srq == NULL && rcq != NULL &&
	     (cap->max_recv_wr > max_wr || cap->max_recv_sge > DROCE_SHM_MAX_SGE)))
		return -EINVAL;
	if (c->qps.nb >= c->qps.max)
		return droced_limit(call, DROCE_PROTO_LIMIT_QPS, -ENOMEM);
	/* What the rings have room for is what the QP honours (and reports). */
	sq_size = droced_pow2_at_least(cap->max_send_wr);
	sq_stride = droce_shm_sq_stride(cap->max_send_sge, cap->max_inline_data);
	send_sge = RTE_MIN((sq_stride - (uint32_t)sizeof(struct droce_shm_swqe)) /
			   (uint32_t)sizeof(struct droce_shm_sge), (uint32_t)DROCE_SHM_MAX_SGE);
	inl = RTE_MIN(sq_stride - (uint32_t)sizeof(struct droce_shm_swqe),
		      (uint32_t)DROCE_SHM_MAX_INLINE);
	if (srq == NULL && rcq != NULL) {
		rq_size = droced_pow2_at_least(cap->max_recv_wr);
		rq_stride = droce_shm_rq_stride(RTE_MAX(cap->max_recv_sge, 1u));
		recv_sge = RTE_MIN((rq_stride - (uint32_t)sizeof(struct droce_shm_rwqe)) /
				   (uint32_t)sizeof(struct droce_shm_sge),
				   (uint32_t)DROCE_SHM_MAX_SGE);
	}
	qp = calloc(1, sizeof(*qp));
	if (qp == NULL)
		return -ENOMEM;
	qp->engine_id = c->port->engines[c->port->qp_rr++ % c->port->nb_engines];
	rc = db_slot_alloc(c, qp->engine_id, &qp->db_slot);
	if (rc != 0) {
		free(qp);
		return rc;
	}
	qp->sq_len = (uint64_t)sq_size * sq_stride;
	qp->rq_len = (uint64_t)rq_size * rq_stride;
	qp->ctl_off = droce_shm_arena_alloc(c->arena, sizeof(struct droce_shm_qp),
					    DROCE_SHM_CACHE_LINE);
	qp->sq_off = droce_shm_arena_alloc(c->arena, qp->sq_len, DROCE_SHM_CACHE_LINE);
	qp->rq_off = srq != NULL || rcq == NULL ? 0 :
		droce_shm_arena_alloc(c->arena, qp->rq_len, DROCE_SHM_CACHE_LINE);
	if (qp->ctl_off < 0 || qp->sq_off < 0 || qp->rq_off < 0) {
		rc = -ENOMEM;
		goto fail;
	}
	memset(&conf, 0, sizeof(conf));
	conf.qp_type = type;
	conf.engine_id = qp->engine_id;
	conf.pd = req->create_qp.pd;
	conf.send_cq = scq->cq;
	conf.recv_cq = rcq != NULL ? rcq->cq : NULL;
	conf.srq = srq != NULL ? srq->srq : NULL;
	conf.sq_sig_all = req->create_qp.sq_sig_all;
	conf.ctl = droced_region_ptr(c, qp->ctl_off);
	conf.sq = droced_region_ptr(c, qp->sq_off);
	conf.sq_size = sq_size;
	conf.sq_max_sge = send_sge;
	conf.max_inline = inl;
	conf.rq = srq != NULL || rcq == NULL ? NULL : droced_region_ptr(c, qp->rq_off);
	conf.rq_size = rq_size;
	conf.rq_max_sge = recv_sge;
	conf.db_slot = qp->db_slot;
	qp->qp = droce_engine_qp_create(c->dom, &conf);
	if (qp->qp == NULL) {
		/* Out of QPNs or slots is a resource limit: ENOMEM, as rdma-core says. */
		rc = rte_errno == ENOSPC ? -ENOMEM : -rte_errno;
		goto fail;
	}
	if (req->create_qp.init_port != 0) {
		struct droce_shm_qp_attr init;

		memset(&init, 0, sizeof(init));
		init.mask = DROCE_SHM_QP_STATE | DROCE_SHM_QP_PKEY_INDEX | DROCE_SHM_QP_PORT |
			    DROCE_SHM_QP_ACCESS_FLAGS;
		init.qp_state = DROCE_SHM_QPS_INIT;
		init.port_num = req->create_qp.init_port;
		rc = droce_engine_qp_modify(qp->qp, &init);
		if (rc != 0) {
			droce_engine_qp_destroy(qp->qp);
			goto fail;
		}
	}
	rc = droced_table_add(&c->qps, qp, &handle);
	if (rc != 0) {
		droce_engine_qp_destroy(qp->qp);
		goto fail;
	}
	qp->pd = req->create_qp.pd;
	qp->xrcd = DROCE_PROTO_NO_HANDLE;
	qp->sq_sig_all = req->create_qp.sq_sig_all;
	qp->cap = (struct droce_proto_cap){
		.max_send_wr = sq_size, .max_recv_wr = rq_size, .max_send_sge = send_sge,
		.max_recv_sge = recv_sge, .max_inline_data = inl,
	};
	pd->users++;
	resp->qp.supported_wr = supported_wr(type);
	resp->qp.sq_size = sq_size;
	resp->qp.sq_stride = sq_stride;
	resp->qp.rq_size = rq_size;
	resp->qp.rq_stride = rq_stride;
	resp->qp.cap = qp->cap;
	resp->qp.rq_off = qp->rq_off;
	qp_created(c, qp, handle, call);
	return 0;
fail:
	qp_unwind(c, qp);
	return rc;
}

/* -EAGAIN: the AV's neighbour is being resolved, nothing was changed. */
static int
qp_modify_routed(struct droced_client *c, struct droced_qp *qp, struct droce_shm_qp_attr *attr)
{
	int rc;

	/* The engine refuses a non-global AV by itself; only a GID needs a neighbour. */
	if ((attr->mask & DROCE_SHM_QP_AV) && attr->ah.is_global) {
		rc = droced_neigh_ensure(c->port, attr->ah.dgid);
		if (rc != 0)
			return rc;
		droced_route_av(&attr->ah);
	}
	return droce_engine_qp_modify(qp->qp, attr);
}

int
droced_qp_modify(struct droced_client *c, struct droced_call *call)
{
	const struct droce_proto_req *req = call->req;
	struct droce_shm_qp_attr attr = req->modify_qp.attr;
	struct droced_qp *qp = droced_table_get(&c->qps, req->modify_qp.handle);
	int rc;

	if (qp == NULL)
		return -EINVAL;
	rc = qp_modify_routed(c, qp, &attr);
	return rc == -EAGAIN ? droced_client_park(c, req, attr.ah.dgid) : rc;
}

int
droced_qp_modify_num(const struct droced_client *owner, uint32_t qpn,
		     const struct droce_shm_qp_attr *attr)
{
	struct droce_shm_qp_attr a = *attr;
	struct droced_client *c;
	uint32_t i;

	TAILQ_FOREACH(c, &owner->d->clients, next) {
		if (!c->hello || c->dead || c->pid != owner->pid || c->uid != owner->uid)
			continue;
		for (i = 0; i < c->qps.cap; i++) {
			struct droced_qp *qp = c->qps.obj[i];

			if (qp != NULL && droce_engine_qp_num(qp->qp) == qpn)
				return qp_modify_routed(c, qp, &a);
		}
	}
	return -ENOENT;
}

int
droced_qp_query(struct droced_client *c, struct droced_call *call)
{
	uint32_t handle = call->req->obj.handle;
	struct droce_proto_resp *resp = call->resp;
	struct droced_qp *qp = droced_table_get(&c->qps, handle);
	int rc;

	if (qp == NULL)
		return -EINVAL;
	rc = droce_engine_qp_query(qp->qp, &resp->query_qp.attr);
	resp->query_qp.cap = qp->cap;
	resp->query_qp.sq_sig_all = qp->sq_sig_all;
	return rc;
}

int
droced_qp_destroy(struct droced_client *c, struct droced_call *call)
{
	uint32_t handle = call->req->obj.handle;
	struct droced_qp *qp = droced_table_get(&c->qps, handle);
	int rc;

	if (qp == NULL)
		return -EINVAL;
	mcast_detach_all(c, qp);
	rc = droce_engine_qp_destroy(qp->qp);
	if (rc != 0)
		return rc;
	qp_free_mem(c, qp);
	db_slot_free(c, qp->engine_id, qp->db_slot);
	if (qp->xrcd != DROCE_PROTO_NO_HANDLE)
		droced_xrcd_get(c, qp->xrcd)->users--;
	else
		droced_pd_get(c, qp->pd)->users--;
	droced_table_del(&c->qps, handle);
	free(qp);
	return 0;
}

/* ---- UD multicast ---- */

/*
 * The port announces a group (IGMP, MLD: lib/net) when the device's first QP joins it and
 * withdraws it when the last leaves; the engines deliver to every QP attached.
 */
static int
mcast_attach(struct droced_client *c, struct droced_qp *qp, const uint8_t gid[16])
{
	struct droced_mcast *m = calloc(1, sizeof(*m));
	int rc;

	if (m == NULL)
		return -ENOMEM;
	rc = droce_engine_mcast_attach(qp->qp, gid);
	if (rc != 0) {
		free(m);
		return rc;
	}
	memcpy(m->gid, gid, 16);
	LIST_INSERT_HEAD(&qp->mcast, m, next);
	if (droce_engine_mcast_members(c->d->dev, gid) == 1 && c->port->net != NULL) {
		droce_net_mcast_join(c->port->net, gid, rte_get_tsc_cycles());
		/* The NIC takes the group's MAC from now on (doc/nics.md, "Receive filter"). */
		droced_port_mcast_sync(c->port);
	}
	return 0;
}

static void
mcast_detach(struct droced_client *c, struct droced_qp *qp, struct droced_mcast *m)
{
	if (droce_engine_mcast_detach(qp->qp, m->gid) == 0 &&
	    droce_engine_mcast_members(c->d->dev, m->gid) == 0 && c->port->net != NULL) {
		droce_net_mcast_leave(c->port->net, m->gid, rte_get_tsc_cycles());
		droced_port_mcast_sync(c->port);
	}
	LIST_REMOVE(m, next);
	free(m);
}

/* Every group qp is in, left (before it is destroyed). */
static void
mcast_detach_all(struct droced_client *c, struct droced_qp *qp)
{
	while (!LIST_EMPTY(&qp->mcast))
		mcast_detach(c, qp, LIST_FIRST(&qp->mcast));
}

/*
 * ibv_attach_mcast(3): a UD QP and a multicast GID (else EINVAL, as the kernel checks); a
 * QP attached already is left as it is (0, as rxe answers). Detach: EINVAL when the QP is
 * not attached to the group.
 */
static int
qp_mcast(struct droced_client *c, const struct droce_proto_req *req, bool attach)
{
	struct droced_qp *qp = droced_table_get(&c->qps, req->mcast.qp);
	struct droced_mcast *m;

	if (qp == NULL || !droce_gid_is_multicast(req->mcast.gid))
		return -EINVAL;
	LIST_FOREACH(m, &qp->mcast, next)
		if (memcmp(m->gid, req->mcast.gid, 16) == 0)
			break;
	if (!attach) {
		if (m == NULL)
			return -EINVAL;
		mcast_detach(c, qp, m);
		return 0;
	}
	return m != NULL ? 0 : mcast_attach(c, qp, req->mcast.gid);
}

int
droced_qp_attach_mcast(struct droced_client *c, struct droced_call *call)
{
	return qp_mcast(c, call->req, true);
}

int
droced_qp_detach_mcast(struct droced_client *c, struct droced_call *call)
{
	return qp_mcast(c, call->req, false);
}


/* At the client's end, first of its objects (they hold CQs and SRQs). */
void
droced_qp_release_all(struct droced_client *c)
{
	struct droce_shm_qp_attr err;
	uint32_t i;

	memset(&err, 0, sizeof(err));
	err.mask = DROCE_SHM_QP_STATE;
	err.qp_state = DROCE_SHM_QPS_ERR;
	for (i = 0; i < c->qps.cap; i++) {
		struct droced_qp *qp = c->qps.obj[i];

		if (qp == NULL)
			continue;
		/* To error first: what it still held is flushed to the client's CQs. */
		droce_engine_qp_modify(qp->qp, &err);
		mcast_detach_all(c, qp);
		droce_engine_qp_destroy(qp->qp);
		free(qp);
	}
	droced_table_free(&c->qps);
	free(c->db_used);
	c->db_used = NULL;
}
