/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control side's device and engines (the object API, run on the control thread): the
 * device with its QPN table and its count of objects, engines created on a started port and
 * destroyed, their counters and a QP's debug line; and the library's log type and counter
 * names. In every engine_obj_*.c file, what changes an engine's state goes to that engine as
 * a command (engine_cmd_run), and what engines only read is published with release stores
 * and retired after engine_quiesce().
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "engine_loc.h"

RTE_LOG_REGISTER(droce_engine_logtype, droce.engine, NOTICE);

const char *const droce_engine_counter_names[] = {
#define COUNTER_NAME(name, desc) #name,
	DROCE_ENGINE_COUNTERS(COUNTER_NAME)
#undef COUNTER_NAME
};

const char *const droce_engine_counter_descs[] = {
#define COUNTER_DESC(name, desc) desc,
	DROCE_ENGINE_COUNTERS(COUNTER_DESC)
#undef COUNTER_DESC
};

const char *const droce_engine_qp_counter_names[] = {
#define COUNTER_NAME(name, desc) #name,
	DROCE_ENGINE_QP_COUNTERS(COUNTER_NAME)
#undef COUNTER_NAME
};

const char *const droce_engine_qp_counter_descs[] = {
#define COUNTER_DESC(name, desc) desc,
	DROCE_ENGINE_QP_COUNTERS(COUNTER_DESC)
#undef COUNTER_DESC
};

/* ---- Device ---- */

struct droce_engine_dev *
droce_engine_dev_create(const struct droce_engine_dev_conf *conf)
{
	struct droce_engine_dev *dev;

	if (!is_pow2(conf->max_qps) || conf->max_qps < 4 || conf->max_qps > (1u << 24)) {
		rte_errno = EINVAL;
		return NULL;
	}
	dev = rte_zmalloc("droce_dev", sizeof(*dev), RTE_CACHE_LINE_SIZE);
	if (dev == NULL)
		goto nomem;
	dev->qps = rte_zmalloc("droce_qpn_table", sizeof(dev->qps[0]) * conf->max_qps,
			       RTE_CACHE_LINE_SIZE);
	dev->xsrqs = rte_zmalloc("droce_xsrq_table", sizeof(dev->xsrqs[0]) * DROCE_ENGINE_MAX_XSRQS,
				 RTE_CACHE_LINE_SIZE);
	if (dev->qps == NULL || dev->xsrqs == NULL) {
		rte_free(dev->qps);
		rte_free(dev->xsrqs);
		rte_free(dev);
		goto nomem;
	}
	dev->xsrqn_next = 1;
	dev->max_qps = conf->max_qps;
	dev->qpn_next = 2;	/* QP0 and QP1 are the special QPs (IB 10.2.5.1) */
	dev->ctl_wake_fd = -1;
	LIST_INIT(&dev->doms);
	engine_port_dev_track(dev, true);
	return dev;
nomem:
	rte_errno = ENOMEM;
	return NULL;
}

void
droce_engine_dev_destroy(struct droce_engine_dev *dev)
{
	struct droce_engine_domain *dom;

	if (dev == NULL)
		return;
	engine_port_dev_track(dev, false);
	while ((dom = LIST_FIRST(&dev->doms)) != NULL)
		droce_engine_domain_destroy(dom);
	rte_free(dev->qps);
	rte_free(dev->xsrqs);
	rte_free(atomic_load(&dev->mcast));
	rte_free(dev);
}

struct droce_engine_qp *
droce_engine_dev_qp_next(struct droce_engine_dev *dev, uint32_t qpn)
{
	for (; qpn < dev->max_qps; qpn++) {
		struct droce_engine_qp *qp = dev_qp(dev, qpn);

		if (qp != NULL)
			return qp;
	}
	return NULL;
}

void
droce_engine_dev_objects_get(const struct droce_engine_dev *dev, struct droce_engine_dev_objects *o)
{
	const struct engine_mcast_table *t = mcast_table(dev);
	uint32_t i;

	*o = dev->objs;
	o->mcast_groups = t != NULL ? t->nb : 0;
	o->mcast_attached = 0;
	for (i = 0; i < o->mcast_groups; i++)
		o->mcast_attached += t->grp[i].nb;
	o->neighbours = dev->nb_neigh;
}

/* ---- Engines: create, destroy, counters ---- */

uint32_t
droce_engine_timer_qps(const struct droce_engine *e)
{
	return atomic_load_explicit(&e->nb_timer_qps, memory_order_relaxed);
}

/* Counters one thread writes, copied whole by another (no value torn, no order). */
static void
counters_copy(uint64_t *dst, const void *src, size_t n)
{
	const volatile uint64_t *s = src;
	size_t i;

	for (i = 0; i < n; i++)
		dst[i] = s[i];
}

void
droce_engine_qp_counters_total(const struct droce_engine *e, struct droce_engine_qp_counters *c)
{
	counters_copy((uint64_t *)c, &e->qp_total, DROCE_ENGINE_NB_QP_COUNTERS);
}

void
droce_engine_qp_info_get(const struct droce_engine_qp *qp, struct droce_engine_qp_info *info)
{
	memset(info, 0, sizeof(*info));
	info->qpn = qp->qpn;
	info->engine = qp->engine->id;
	info->dom = qp->dom;
	info->type = qp->type;
	info->state = qp->state;
	info->retry_cnt = qp->attr.retry_cnt;
	info->rnr_retry = qp->attr.rnr_retry;
	info->timeout = qp->attr.timeout;
	info->pd = qp->pd;
	info->mtu = qp->state >= DROCE_SHM_QPS_RTR ? qp->mtu : 0;
	info->dest_qpn = qp->dest_qpn;
	info->sq_psn = qp->req.psn;
	info->sq_una = qp->req.una;
	info->rq_psn = qp->resp.epsn;
	info->sq_size = qp->sq_size;
	info->rq_size = qp->rq_size;
	memcpy(info->dgid, qp->attr.ah.dgid, sizeof(info->dgid));
}

void
droce_engine_qp_counters_get(const struct droce_engine_qp *qp, struct droce_engine_qp_counters *c)
{
	counters_copy((uint64_t *)c, &qp->cnt, DROCE_ENGINE_NB_QP_COUNTERS);
}

void
droce_engine_stats_get(const struct droce_engine *e, struct droce_engine_stats *st)
{
	counters_copy((uint64_t *)st, &e->st, DROCE_ENGINE_NB_COUNTERS);
}

void
droce_engine_stats_print(FILE *f, const struct droce_engine *e)
{
	struct droce_engine_stats st;
	size_t i;

	droce_engine_stats_get(e, &st);
	for (i = 0; i < DROCE_ENGINE_NB_COUNTERS; i++) {
		uint64_t v = ((const uint64_t *)&st)[i];

		if (v != 0)
			fprintf(f, " %s=%" PRIu64, droce_engine_counter_names[i], v);
	}
}

void
droce_engine_qp_print(FILE *f, const struct droce_engine_qp *qp)
{
	fprintf(f, "QP %u %s: requester psn %u una %u psn_max %u%s; responder %s, step %s, "
		"epsn %u%s%s; completer %s%s\n", qp->qpn, droce_shm_qp_state_name(qp->state),
		qp->req.psn, qp->req.una, qp->req.psn_max, qp->req.rnr_wait ? " (RNR wait)" : "",
		resp_state_name(qp->resp.state), resp_step_name(qp->resp.step), qp->resp.epsn,
		qp->resp.nak_sent ? " (NAK sent)" : "", qp->resp.have_wqe ? " (WQE in hand)" : "",
		qp->req.comp_failed_in != 0 ? "failed in " : "no failure",
		qp->req.comp_failed_in != 0 ? comp_state_name(qp->req.comp_failed_in - 1u) : "");
}

struct droce_engine *
droce_engine_create(struct droce_engine_dev *dev, uint32_t id, const struct droce_engine_conf *conf)
{
	char name[RTE_RING_NAMESIZE];
	struct droce_engine *e;

	if (id >= DROCE_ENGINE_MAX || dev->engines[id] != NULL || conf->mp == NULL ||
	    conf->nb_gids > DROCE_ENGINE_MAX_GIDS || !rte_eth_dev_is_valid_port(conf->port_id) ||
	    droce_engine_wait_name(conf->wait) == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	e = rte_zmalloc("droce_engine", sizeof(*e), RTE_CACHE_LINE_SIZE);
	if (e == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	e->dev = dev;
	e->id = id;
	e->port_id = conf->port_id;
	e->rx_queue = conf->rx_queue;
	e->tx_queue = conf->tx_queue;
	e->mp = conf->mp;
	memcpy(e->mac, conf->mac, sizeof(e->mac));
	memcpy(e->gids, conf->gids, sizeof(e->gids));
	e->nb_gids = conf->nb_gids;
	e->early_retransmit = conf->early_retransmit;
	e->parse_flags = conf->rx_no_icrc ? DROCE_WIRE_PARSE_NO_ICRC : 0;
	e->slow_rx = conf->slow_rx;
	e->slow_rx_wake_fd = conf->slow_rx_wake_fd;
	if (conf->slow_rx_wake_fd >= 0)
		dev->ctl_wake_fd = conf->slow_rx_wake_fd;
	e->slow_tx = conf->slow_tx;
	e->tsc_hz = rte_get_tsc_hz();
	cc_engine_init(e, conf);
	e->timer_next = UINT64_MAX;
	TAILQ_INIT(&e->active);
	TAILQ_INIT(&e->timers);
	TAILQ_INIT(&e->acks);
	TAILQ_INIT(&e->errs);
	TAILQ_INIT(&e->reads);
	snprintf(name, sizeof(name), "droce_cmd_%p", (void *)e);
	e->cmds = rte_ring_create(name, ENGINE_CMD_RING, SOCKET_ID_ANY, RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "droce_hoff_%p", (void *)e);
	e->handoff = rte_ring_create(name, ENGINE_HANDOFF_RING, SOCKET_ID_ANY, RING_F_SC_DEQ);
	/* Non-blocking: a command's write never waits, the idle engine's read never blocks. */
	e->cmd_wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	e->cmd_done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	e->epfd = -1;
	if (e->cmds == NULL || e->handoff == NULL || e->cmd_wake_fd < 0 || e->cmd_done_fd < 0 ||
	    engine_wait_init(e, conf) != 0) {
		engine_wait_fini(e);
		rte_ring_free(e->cmds);
		rte_ring_free(e->handoff);
		if (e->cmd_wake_fd >= 0)
			close(e->cmd_wake_fd);
		if (e->cmd_done_fd >= 0)
			close(e->cmd_done_fd);
		rte_free(e);
		rte_errno = ENOMEM;
		return NULL;
	}
	dev->engines[id] = e;
	return e;
}

void
droce_engine_destroy(struct droce_engine *e)
{
	void *m;

	if (e == NULL)
		return;
	engine_tx_flush(e);
	rte_pktmbuf_free_bulk(e->tx, e->nb_tx);
	rte_pktmbuf_free_bulk(e->mb_stash, e->nb_mb_stash);
	rte_pktmbuf_free_bulk(e->rx_stash, e->nb_rx_stash);
	while (rte_ring_sc_dequeue(e->handoff, &m) == 0)
		rte_pktmbuf_free(m);
	rte_ring_free(e->handoff);
	rte_ring_free(e->cmds);
	engine_wait_fini(e);
	close(e->cmd_wake_fd);
	close(e->cmd_done_fd);
	/* Not while an unmapping on the interrupt thread looks at the engines (engine_port.c). */
	engine_port_lock();
	e->dev->engines[e->id] = NULL;
	engine_port_unlock();
	rte_free(e);
}
