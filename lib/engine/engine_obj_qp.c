/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * QPs, the control side (control thread): checked, then created in RESET without a command
 * (the engine sees a QP once the QPN table publishes it), the domain's doorbell table and
 * wake-up eventfd set up on the QP's engine the first time; modified and queried by
 * command to the QP's engine, which applies the change (engine_qp.c); destroyed once off
 * its engine's lists, out of its multicast groups, and past every engine's current pass.
 */
#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_errno.h>
#include <rte_malloc.h>

#include "engine_loc.h"

static int
qp_conf_check(const struct droce_engine_domain *dom, const struct droce_engine_qp_conf *c)
{
	bool xrc_ini = c->qp_type == DROCE_SHM_QPT_XRC_SEND;
	bool xrc_tgt = c->qp_type == DROCE_SHM_QPT_XRC_RECV;

	if (c->qp_type != DROCE_SHM_QPT_RC && c->qp_type != DROCE_SHM_QPT_UC &&
	    c->qp_type != DROCE_SHM_QPT_UD && !xrc_ini && !xrc_tgt)
		return -EINVAL;
	if (c->engine_id >= DROCE_ENGINE_MAX || dom->dev->engines[c->engine_id] == NULL ||
	    dom->db[c->engine_id] == NULL || c->db_slot >= DROCE_SHM_DB_SLOTS)
		return -EINVAL;
	/* XRC: the initiator sends only, the target has no CQ, queue or SRQ of its own. */
	if (xrc_ini || xrc_tgt) {
		if ((xrc_ini ? c->send_cq == NULL || c->send_cq->dom != dom :
			       c->send_cq != NULL || c->xrcd == 0) ||
		    c->recv_cq != NULL || c->srq != NULL || c->rq != NULL || c->ctl == NULL ||
		    c->sq == NULL || !is_pow2(c->sq_size) || c->sq_size > DROCE_SHM_MAX_WR ||
		    c->sq_max_sge > DROCE_SHM_MAX_SGE || c->max_inline > DROCE_SHM_MAX_INLINE)
			return -EINVAL;
		if (dom->db_qp[c->engine_id] != NULL &&
		    dom->db_qp[c->engine_id][c->db_slot] != NULL)
			return -EBUSY;
		return 0;
	}
	if (c->send_cq == NULL || c->recv_cq == NULL || c->send_cq->dom != dom ||
	    c->recv_cq->dom != dom || (c->srq != NULL && c->srq->dom != dom))
		return -EINVAL;
	if (c->ctl == NULL || c->sq == NULL || !is_pow2(c->sq_size) ||
	    c->sq_size > DROCE_SHM_MAX_WR || c->sq_max_sge > DROCE_SHM_MAX_SGE ||
	    c->max_inline > DROCE_SHM_MAX_INLINE)
		return -EINVAL;
	if (c->srq == NULL ? (c->rq == NULL || !is_pow2(c->rq_size) ||
			      c->rq_size > DROCE_SHM_MAX_WR || c->rq_max_sge == 0 ||
			      c->rq_max_sge > DROCE_SHM_MAX_SGE) :
			     c->rq != NULL)
		return -EINVAL;
	if (dom->db_qp[c->engine_id] != NULL && dom->db_qp[c->engine_id][c->db_slot] != NULL)
		return -EBUSY;
	return 0;
}

static uint32_t
qpn_alloc(struct droce_engine_dev *dev)
{
	uint32_t i;

	for (i = 0; i < dev->max_qps; i++) {
		uint32_t q = dev->qpn_next;

		dev->qpn_next = dev->qpn_next + 1 == dev->max_qps ? 2 : dev->qpn_next + 1;
		if (q >= 2 && dev->qps[q] == NULL)
			return q;
	}
	return 0;
}

/*
 * dom's first QP on engine e: its doorbell slots' table, the eventfd its client writes to
 * wake e (in e's epoll set before e looks at dom; none for an engine that never sleeps,
 * whose clients then skip the fence and the look at its sleeping word), then e's list of
 * domains.
 */
static int
domain_engine_add(struct droce_engine_domain *dom, struct droce_engine *e)
{
	struct engine_cmd cmd;
	int rc;

	dom->db_qp[e->id] = rte_zmalloc("droce_db_qp",
					sizeof(struct droce_engine_qp *) * DROCE_SHM_DB_SLOTS, 0);
	if (e->wait != DROCE_ENGINE_WAIT_POLL)
		dom->wake_fd[e->id] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (dom->db_qp[e->id] == NULL ||
	    (e->wait != DROCE_ENGINE_WAIT_POLL && dom->wake_fd[e->id] < 0))
		rc = -ENOMEM;
	else if (dom->wake_fd[e->id] >= 0)
		rc = engine_wait_fd_add(e, dom->wake_fd[e->id]);
	else
		rc = 0;
	if (rc == 0) {
		memset(&cmd, 0, sizeof(cmd));
		cmd.type = ENGINE_CMD_DOMAIN_ADD;
		cmd.dom = dom;
		rc = engine_cmd_run(e, &cmd);
		if (rc != 0 && dom->wake_fd[e->id] >= 0)
			engine_wait_fd_del(e, dom->wake_fd[e->id]);
	}
	if (rc != 0) {
		rte_free(dom->db_qp[e->id]);
		dom->db_qp[e->id] = NULL;
		if (dom->wake_fd[e->id] >= 0)
			close(dom->wake_fd[e->id]);
		dom->wake_fd[e->id] = -1;
	}
	return rc;
}

struct droce_engine_qp *
droce_engine_qp_create(struct droce_engine_domain *dom, const struct droce_engine_qp_conf *c)
{
	struct droce_engine_dev *dev = dom->dev;
	struct droce_engine *e;
	struct droce_engine_qp *qp;
	uint32_t qpn;
	int rc;

	rc = qp_conf_check(dom, c);
	if (rc != 0) {
		rte_errno = -rc;
		return NULL;
	}
	e = dev->engines[c->engine_id];
	qpn = qpn_alloc(dev);
	if (qpn == 0) {
		rte_errno = ENOSPC;
		return NULL;
	}
	if (dom->db_qp[e->id] == NULL) {
		rc = domain_engine_add(dom, e);
		if (rc != 0) {
			rte_errno = -rc;
			return NULL;
		}
	}
	qp = rte_zmalloc("droce_qp", sizeof(*qp), RTE_CACHE_LINE_SIZE);
	if (qp == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	qp->qpn = qpn;
	qp->type = c->qp_type;
	qp->reliable = c->qp_type == DROCE_SHM_QPT_RC || c->qp_type == DROCE_SHM_QPT_XRC_SEND ||
		       c->qp_type == DROCE_SHM_QPT_XRC_RECV;
	qp->engine = e;
	cc_qp_restart(qp);	/* no path yet: unlimited, nothing counted */
	qp->dom = dom;
	qp->pd = c->pd;
	qp->xrcd = c->xrcd;
	qp->key_dom = dom;
	qp->key_pd = c->pd;
	qp->scq = c->send_cq;
	qp->rcq = c->recv_cq;
	qp->srq = c->srq;
	qp->sq_sig_all = c->sq_sig_all;
	qp->ctl = c->ctl;
	qp->sq_ring = c->sq;
	qp->sq_size = c->sq_size;
	qp->sq_max_sge = c->sq_max_sge;
	qp->max_inline = c->max_inline;
	qp->sq_stride = droce_shm_sq_stride(c->sq_max_sge, c->max_inline);
	qp->rq_ring = c->rq;
	qp->rq_size = c->rq_size;
	qp->rq_max_sge = c->rq_max_sge;
	qp->rq_stride = c->srq == NULL ? droce_shm_rq_stride(c->rq_max_sge) : 0;
	qp->db_slot = c->db_slot;
	qp->req.copy = rte_malloc("droce_sq_copy", (size_t)qp->sq_size * qp->sq_stride,
				  RTE_CACHE_LINE_SIZE);
	qp->req.wq = rte_zmalloc("droce_sq_wqes", sizeof(qp->req.wq[0]) * qp->sq_size,
				 RTE_CACHE_LINE_SIZE);
	if (qp->req.copy == NULL || qp->req.wq == NULL) {
		rte_free(qp->req.copy);
		rte_free(qp->req.wq);
		rte_free(qp);
		rte_errno = ENOMEM;
		return NULL;
	}
	/* RESET: the engine's indices start where the rings are. */
	qp->req.fetch = qp->req.cons = qp->req.cur =
		__atomic_load_n(&c->ctl->sq.prod, __ATOMIC_ACQUIRE);
	__atomic_store_n(&c->ctl->sq.cons, qp->req.cons, __ATOMIC_RELEASE);
	if (c->srq == NULL && c->rq != NULL) {
		qp->resp.rq_cons = __atomic_load_n(&c->ctl->rq.prod, __ATOMIC_ACQUIRE);
		qp->resp.rq_done = qp->resp.rq_cons;
		__atomic_store_n(&c->ctl->rq.cons, qp->resp.rq_cons, __ATOMIC_RELEASE);
		__atomic_store_n(&c->ctl->rq_done, qp->resp.rq_done, __ATOMIC_RELEASE);
	}
	qp->state = DROCE_SHM_QPS_RESET;
	__atomic_store_n(&c->ctl->state, DROCE_SHM_QPS_RESET, __ATOMIC_RELEASE);
	if (c->send_cq != NULL)
		c->send_cq->nb_qps++;
	if (c->recv_cq != NULL)
		c->recv_cq->nb_qps++;
	if (c->srq != NULL)
		c->srq->nb_qps++;
	dom->nb_qps++;
	__atomic_store_n(&dom->db_qp[e->id][c->db_slot], qp, __ATOMIC_RELEASE);
	atomic_store_explicit(&dev->qps[qpn], qp, memory_order_release);
	dev->objs.qps++;
	return qp;
}

uint32_t
droce_engine_qp_num(const struct droce_engine_qp *qp)
{
	return qp->qpn;
}

int
droce_engine_qp_modify(struct droce_engine_qp *qp, const struct droce_shm_qp_attr *attr)
{
	struct engine_cmd cmd;
	int rc;

	memset(&cmd, 0, sizeof(cmd));
	cmd.type = ENGINE_CMD_QP_MODIFY;
	cmd.qp = qp;
	cmd.attr = *attr;
	if (attr->mask & DROCE_SHM_QP_AV) {
		rc = path_resolve(qp->engine, &attr->ah, true, &cmd.addr);
		if (rc != 0)
			return rc;
	}
	return engine_cmd_run(qp->engine, &cmd);
}

int
droce_engine_qp_query(struct droce_engine_qp *qp, struct droce_shm_qp_attr *attr)
{
	struct engine_cmd cmd;

	/* A sync command orders this read after everything the engine applied. */
	memset(&cmd, 0, sizeof(cmd));
	cmd.type = ENGINE_CMD_SYNC;
	engine_cmd_run(qp->engine, &cmd);
	*attr = qp->attr;
	/* The engine's own state, not the shared copy the application could overwrite. */
	attr->qp_state = __atomic_load_n(&qp->state, __ATOMIC_RELAXED);
	attr->cur_qp_state = attr->qp_state;
	return 0;
}

int
droce_engine_qp_destroy(struct droce_engine_qp *qp)
{
	struct droce_engine_dev *dev = qp->dom->dev;
	struct engine_cmd cmd;

	/*
	 * Unpublished first, so that no packet, doorbell or handoff finds the QP from the next
	 * pass on; the quiesce waits out the passes that may still hold it (a packet of it in
	 * some engine's hands). Only then off its engine's lists: such a pass may have put it
	 * back on one (an ACK to send, a timer armed), and a QP freed while listed is a list
	 * of freed memory (ibv_xsrq_pingpong's QPs destroyed while their peer's last packets
	 * came in crashed droced in qp_list_del: doc/reliability.md).
	 */
	atomic_store_explicit(&dev->qps[qp->qpn], NULL, memory_order_release);
	__atomic_store_n(&qp->dom->db_qp[qp->engine->id][qp->db_slot], NULL, __ATOMIC_RELEASE);
	mcast_qp_gone(dev, qp->qpn);
	engine_quiesce(dev);
	memset(&cmd, 0, sizeof(cmd));
	cmd.type = ENGINE_CMD_QP_DEL;
	cmd.qp = qp;
	engine_cmd_run(qp->engine, &cmd);
	/* An XRC target's srq and rcq are only ever set while it handles a packet. */
	if (qp->type != DROCE_SHM_QPT_XRC_RECV) {
		if (qp->scq != NULL)
			qp->scq->nb_qps--;
		if (qp->rcq != NULL)
			qp->rcq->nb_qps--;
		if (qp->srq != NULL)
			qp->srq->nb_qps--;
	}
	qp->dom->nb_qps--;
	dev->objs.qps--;
	rte_free(qp->req.copy);
	rte_free(qp->req.wq);
	rte_free(qp);
	return 0;
}
