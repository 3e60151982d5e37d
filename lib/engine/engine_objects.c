/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control side's objects: device, engines (create, destroy, counters), domains,
 * keys, address handles, CQs, SRQs and QPs. Runs on the control thread; what changes an
 * engine's state goes to that engine as a command (engine_cmd_run), what engines only
 * read is published with release stores and retired after engine_quiesce().
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <infiniband/verbs.h>

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

static bool
is_pow2(uint32_t v)
{
	return v != 0 && (v & (v - 1)) == 0;
}

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

int
droce_engine_dev_neigh_add(struct droce_engine_dev *dev, const uint8_t gid[16], const uint8_t mac[6])
{
	uint32_t i;

	for (i = 0; i < dev->nb_neigh; i++) {
		if (memcmp(dev->neigh[i].gid, gid, 16) == 0)
			break;
	}
	if (i == RTE_DIM(dev->neigh))
		return -ENOSPC;
	memcpy(dev->neigh[i].gid, gid, 16);
	memcpy(dev->neigh[i].mac, mac, 6);
	if (i == dev->nb_neigh)
		dev->nb_neigh++;
	return 0;
}

int
dev_neigh_lookup(const struct droce_engine_dev *dev, const uint8_t gid[16], uint8_t mac[6])
{
	uint32_t i;

	/* A multicast group has no neighbour: its MAC follows from the address. */
	if (mcast_mac(gid, mac) == 0)
		return 0;
	for (i = 0; i < dev->nb_neigh; i++) {
		if (memcmp(dev->neigh[i].gid, gid, 16) == 0) {
			memcpy(mac, dev->neigh[i].mac, 6);
			return 0;
		}
	}
	return -EHOSTUNREACH;
}

/* ---- Domains ---- */

struct droce_engine_domain *
droce_engine_domain_create(struct droce_engine_dev *dev, const struct droce_engine_domain_conf *conf)
{
	const struct droce_shm_region_hdr *hdr = conf->region;
	char name[RTE_RING_NAMESIZE];
	struct droce_engine_domain *dom;
	uint32_t i;

	if (droce_shm_region_check(conf->region, conf->region_size) != 0 ||
	    conf->max_mrs == 0 || conf->max_ahs == 0 || !is_pow2(conf->max_events)) {
		rte_errno = EINVAL;
		return NULL;
	}
	dom = rte_zmalloc("droce_domain", sizeof(*dom), RTE_CACHE_LINE_SIZE);
	if (dom == NULL)
		goto nomem;
	dom->dev = dev;
	dom->region = conf->region;
	dom->region_size = conf->region_size;
	dom->max_mrs = conf->max_mrs;
	dom->max_ahs = conf->max_ahs;
	dom->mrs = rte_zmalloc("droce_mrs", sizeof(dom->mrs[0]) * conf->max_mrs, 0);
	dom->ahs = rte_zmalloc("droce_ahs", sizeof(dom->ahs[0]) * conf->max_ahs, 0);
	snprintf(name, sizeof(name), "droce_ev_%p", (void *)dom);
	dom->events = rte_ring_create_elem(name, sizeof(struct droce_engine_event), conf->max_events,
					   SOCKET_ID_ANY, RING_F_SC_DEQ);
	if (dom->mrs == NULL || dom->ahs == NULL || dom->events == NULL) {
		rte_ring_free(dom->events);
		rte_free(dom->ahs);
		rte_free(dom->mrs);
		rte_free(dom);
		goto nomem;
	}
	for (i = 0; i < hdr->nb_engines && i < DROCE_ENGINE_MAX; i++)
		dom->db[i] = (struct droce_shm_doorbell *)(dom->region + hdr->doorbell_off[i]);
	for (i = 0; i < DROCE_ENGINE_MAX; i++)
		dom->wake_fd[i] = -1;
	dom->mr_next = 1;
	LIST_INSERT_HEAD(&dev->doms, dom, next);
	dev->objs.domains++;
	return dom;
nomem:
	rte_errno = ENOMEM;
	return NULL;
}

void
droce_engine_domain_destroy(struct droce_engine_domain *dom)
{
	struct droce_engine_dev *dev = dom->dev;
	struct engine_cmd cmd;
	uint32_t q, i;

	/* QPs first: they hold the CQs and SRQs, which the caller owns and frees. */
	for (q = 0; q < dev->max_qps; q++) {
		struct droce_engine_qp *qp = dev->qps[q];

		if (qp != NULL && qp->dom == dom)
			droce_engine_qp_destroy(qp);
	}
	for (i = 0; i < DROCE_ENGINE_MAX; i++) {
		if (dom->db_qp[i] == NULL)
			continue;
		memset(&cmd, 0, sizeof(cmd));
		cmd.type = ENGINE_CMD_DOMAIN_DEL;
		cmd.dom = dom;
		if (dev->engines[i] != NULL) {
			engine_cmd_run(dev->engines[i], &cmd);
			if (dom->wake_fd[i] >= 0)
				engine_wait_fd_del(dev->engines[i], dom->wake_fd[i]);
		}
		rte_free(dom->db_qp[i]);
		if (dom->wake_fd[i] >= 0)
			close(dom->wake_fd[i]);
	}
	LIST_REMOVE(dom, next);
	engine_quiesce(dev);
	/* Its MRs and AHs go with it. */
	dev->objs.mrs -= dom->nb_mrs;
	dev->objs.mws -= dom->nb_mws;
	dev->objs.ahs -= dom->nb_ahs;
	dev->objs.domains--;
	rte_ring_free(dom->events);
	rte_free(dom->ahs);
	rte_free(dom->mrs);
	rte_free(dom);
}

int
droce_engine_domain_wake_fd(const struct droce_engine_domain *dom, uint32_t engine_id)
{
	return engine_id < DROCE_ENGINE_MAX ? dom->wake_fd[engine_id] : -1;
}

int
droce_engine_domain_event_get(struct droce_engine_domain *dom, struct droce_engine_event *ev)
{
	return rte_ring_sc_dequeue_elem(dom->events, ev, sizeof(*ev)) == 0 ? 1 : 0;
}

/* ---- Memory regions ---- */

/*
 * Control thread: a free entry of the key table for an MR or a window of kind, its key
 * made; the caller fills it and sets valid. Index 0 stays unused so that key 0 never
 * resolves; the low byte changes at every registration, so a stale key misses.
 */
static struct engine_mr *
key_take(struct droce_engine_domain *dom, uint8_t kind)
{
	uint32_t i;

	for (i = 1; i < dom->max_mrs; i++) {
		struct engine_mr *e = &dom->mrs[i];

		if (atomic_load_explicit(&e->valid, memory_order_relaxed))
			continue;
		e->kind = kind;
		e->key = (i << 8) | (dom->mr_next++ & 0xFF);
		return e;
	}
	return NULL;
}

/* Control thread: the valid entry of key, an MR's (mr) or a window's (!mr); else NULL. */
static struct engine_mr *
key_find(struct droce_engine_domain *dom, uint32_t key, bool mr)
{
	uint32_t idx = key >> 8;
	struct engine_mr *e;

	if (idx == 0 || idx >= dom->max_mrs)
		return NULL;
	e = &dom->mrs[idx];
	if (!atomic_load_explicit(&e->valid, memory_order_relaxed) ||
	    (e->kind == KEY_MR) != mr || e->key != key)
		return NULL;
	return e;
}

int
droce_engine_mr_reg(struct droce_engine_domain *dom, uint32_t pd, void *base, uint64_t iova,
	     uint64_t length, uint32_t access, uint32_t *lkey, uint32_t *rkey)
{
	struct engine_mr *mr;

	if (base == NULL || length == 0 || iova + length < iova)
		return -EINVAL;
	mr = key_take(dom, KEY_MR);
	if (mr == NULL)
		return -ENOMEM;
	mr->base = base;
	mr->iova = iova;
	mr->length = length;
	mr->access = access;
	mr->pd = pd;
	atomic_store_explicit(&mr->valid, 1, memory_order_release);
	*lkey = *rkey = mr->key;
	dom->nb_mrs++;
	dom->dev->objs.mrs++;
	return 0;
}

int
droce_engine_mr_dereg(struct droce_engine_domain *dom, uint32_t lkey)
{
	struct engine_mr *mr = key_find(dom, lkey, true);

	if (mr == NULL)
		return -EINVAL;
	atomic_store_explicit(&mr->valid, 0, memory_order_release);
	dom->nb_mrs--;
	dom->dev->objs.mrs--;
	/* An engine in the middle of a copy through this key finishes before we return. */
	engine_quiesce(dom->dev);
	return 0;
}

int
droce_engine_mr_rereg(struct droce_engine_domain *dom, uint32_t lkey, uint32_t pd,
		      void *base, uint64_t iova, uint64_t length, uint32_t access)
{
	struct engine_mr *mr;

	if (base == NULL || length == 0 || iova + length < iova)
		return -EINVAL;
	mr = key_find(dom, lkey, true);
	if (mr == NULL)
		return -EINVAL;
	atomic_store_explicit(&mr->valid, 0, memory_order_release);
	/* Nobody reads the old fields any more once every engine passed a quiescent point. */
	engine_quiesce(dom->dev);
	mr->base = base;
	mr->iova = iova;
	mr->length = length;
	mr->access = access;
	mr->pd = pd;
	atomic_store_explicit(&mr->valid, 1, memory_order_release);
	return 0;
}

int
droce_engine_mw_alloc(struct droce_engine_domain *dom, uint32_t pd, uint32_t type,
		      uint32_t *rkey)
{
	struct engine_mr *mw;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2)
		return -EINVAL;
	mw = key_take(dom, type == IBV_MW_TYPE_1 ? KEY_MW1 : KEY_MW2);
	if (mw == NULL)
		return -ENOMEM;
	mw->base = NULL;
	mw->iova = mw->length = 0;
	mw->access = 0;
	mw->pd = pd;
	/* No engine reads an invalid entry's binding: no lock needed to start it. */
	memset(&mw->mw, 0, sizeof(mw->mw));
	mw->mw.key = mw->key;
	atomic_store_explicit(&mw->valid, 1, memory_order_release);
	*rkey = mw->key;
	dom->nb_mws++;
	dom->dev->objs.mws++;
	return 0;
}

int
droce_engine_mw_dealloc(struct droce_engine_domain *dom, uint32_t rkey)
{
	struct engine_mr *mw = key_find(dom, rkey, false);

	if (mw == NULL)
		return -EINVAL;
	/* Unbound first, so an engine that still finds it valid grants nothing. */
	mw_unbind_all(mw);
	atomic_store_explicit(&mw->valid, 0, memory_order_release);
	dom->nb_mws--;
	dom->dev->objs.mws--;
	engine_quiesce(dom->dev);
	return 0;
}

/* ---- UD multicast: the group table's changes (its readers: engine_mcast.c) ---- */

/* Control thread: a copy of the current table to change and publish with mcast_publish. */
static struct engine_mcast_table *
mcast_copy(const struct droce_engine_dev *dev)
{
	const struct engine_mcast_table *t = mcast_table(dev);
	struct engine_mcast_table *n = rte_zmalloc("droce_mcast", sizeof(*n), 0);

	if (n != NULL && t != NULL)
		memcpy(n, t, sizeof(*n));
	return n;
}

/* Publishes n; the old table is freed once no engine can still be reading it. */
static void
mcast_publish(struct droce_engine_dev *dev, struct engine_mcast_table *n)
{
	struct engine_mcast_table *old = atomic_exchange_explicit(&dev->mcast, n,
								  memory_order_acq_rel);

	engine_quiesce(dev);
	rte_free(old);
}

int
droce_engine_mcast_attach(struct droce_engine_qp *qp, const uint8_t gid[16])
{
	struct droce_engine_dev *dev = qp->dom->dev;
	struct engine_mcast_group *g;
	struct engine_mcast_table *n;
	uint32_t i;

	if (qp->type != DROCE_SHM_QPT_UD || !mcast_gid(gid))
		return -EINVAL;
	n = mcast_copy(dev);
	if (n == NULL)
		return -ENOMEM;
	g = mcast_find(n, gid);
	if (g == NULL) {
		if (n->nb == DROCE_ENGINE_MAX_MCAST_GRPS) {
			rte_free(n);
			return -ENOMEM;
		}
		g = &n->grp[n->nb++];
		memcpy(g->mgid, gid, 16);
		g->nb = 0;
	}
	for (i = 0; i < g->nb; i++) {
		if (g->qpn[i] == qp->qpn) {
			rte_free(n);
			return -EEXIST;
		}
	}
	if (g->nb == DROCE_ENGINE_MAX_MCAST_QPS) {
		rte_free(n);
		return -ENOMEM;
	}
	g->qpn[g->nb++] = qp->qpn;
	mcast_publish(dev, n);
	return 0;
}

/* Removes qpn from group g of table n, and the group once it is empty. */
static void
mcast_remove(struct engine_mcast_table *n, struct engine_mcast_group *g, uint32_t i)
{
	g->qpn[i] = g->qpn[--g->nb];
	if (g->nb == 0)
		*g = n->grp[--n->nb];
}

int
droce_engine_mcast_detach(struct droce_engine_qp *qp, const uint8_t gid[16])
{
	struct droce_engine_dev *dev = qp->dom->dev;
	struct engine_mcast_group *g;
	struct engine_mcast_table *n;
	uint32_t i;

	g = mcast_find(mcast_table(dev), gid);
	if (g == NULL)
		return -EINVAL;
	for (i = 0; i < g->nb && g->qpn[i] != qp->qpn; i++)
		;
	if (i == g->nb)
		return -EINVAL;
	n = mcast_copy(dev);
	if (n == NULL)
		return -ENOMEM;
	g = mcast_find(n, gid);
	mcast_remove(n, g, i);
	mcast_publish(dev, n);
	return 0;
}

uint32_t
droce_engine_mcast_members(const struct droce_engine_dev *dev, const uint8_t gid[16])
{
	const struct engine_mcast_group *g = mcast_find(mcast_table(dev), gid);

	return g != NULL ? g->nb : 0;
}

static void
mcast_qp_gone(struct droce_engine_dev *dev, uint32_t qpn)
{
	const struct engine_mcast_table *t = mcast_table(dev);
	struct engine_mcast_table *n;
	bool found = false;
	uint32_t k, i;

	for (k = 0; t != NULL && k < t->nb && !found; k++)
		for (i = 0; i < t->grp[k].nb && !found; i++)
			found = t->grp[k].qpn[i] == qpn;
	if (!found)
		return;
	n = mcast_copy(dev);
	if (n == NULL)
		return;		/* the QPN stays listed: its packets find no QP, or a new one */
	for (k = 0; k < n->nb; k++) {
		for (i = 0; i < n->grp[k].nb; i++) {
			if (n->grp[k].qpn[i] == qpn) {
				mcast_remove(n, &n->grp[k], i);
				k--;	/* the slot now holds another group, or the same one */
				break;
			}
		}
	}
	mcast_publish(dev, n);
}

/* ---- Paths ---- */

/*
 * Builds the addresses of a path from engine e to the AV's destination: a connected QP's
 * (qp: DCQCN may make it ECN-capable) or a UD AH's.
 */
static int
path_resolve(struct droce_engine *e, const struct droce_shm_ah_attr *ah, bool qp,
	     struct droce_wire_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (!ah->is_global || ah->sgid_index >= e->nb_gids)
		return -EINVAL;
	memcpy(a->src_mac, e->mac, 6);
	memcpy(a->src_gid, e->gids[ah->sgid_index], 16);
	memcpy(a->dst_gid, ah->dgid, 16);
	a->traffic_class = ah->traffic_class;
	a->hop_limit = ah->hop_limit;
	a->flow_label = ah->flow_label & 0xFFFFF;
	cc_path_qos(e, ah->sl, qp, a);
	return dev_neigh_lookup(e->dev, ah->dgid, a->dst_mac);
}

int
droce_engine_ah_create(struct droce_engine_domain *dom, uint32_t engine_id, uint32_t pd,
		const struct droce_shm_ah_attr *attr, uint32_t *ahn)
{
	struct droce_engine *e = engine_id < DROCE_ENGINE_MAX ? dom->dev->engines[engine_id] : NULL;
	struct droce_wire_addr a;
	uint32_t i;
	int rc;

	if (e == NULL)
		return -EINVAL;
	rc = path_resolve(e, attr, false, &a);
	if (rc != 0)
		return rc;
	for (i = 0; i < dom->max_ahs; i++) {
		struct engine_ah *ah = &dom->ahs[i];

		if (atomic_load_explicit(&ah->valid, memory_order_relaxed))
			continue;
		if (droce_wire_tmpl_init(&ah->tmpl, &a) != 0)
			return -EINVAL;
		ah->pd = pd;
		atomic_store_explicit(&ah->valid, 1, memory_order_release);
		*ahn = i;
		dom->nb_ahs++;
		dom->dev->objs.ahs++;
		return 0;
	}
	return -ENOMEM;
}

int
droce_engine_ah_destroy(struct droce_engine_domain *dom, uint32_t ahn)
{
	if (ahn >= dom->max_ahs ||
	    !atomic_load_explicit(&dom->ahs[ahn].valid, memory_order_relaxed))
		return -EINVAL;
	atomic_store_explicit(&dom->ahs[ahn].valid, 0, memory_order_release);
	dom->nb_ahs--;
	dom->dev->objs.ahs--;
	engine_quiesce(dom->dev);
	return 0;
}

/* ---- CQ and SRQ ---- */

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
 * True when a QP completing its sends on cq has WQEs posted that have not completed yet.
 * The ctl indices are the application's and the engine's; only read here.
 */
static bool
cq_sends_pending(struct droce_engine_cq *cq)
{
	struct droce_engine_dev *dev = cq->dom->dev;
	uint32_t q;

	for (q = 0; q < dev->max_qps; q++) {
		struct droce_engine_qp *qp = atomic_load_explicit(&dev->qps[q],
								  memory_order_acquire);

		if (qp != NULL && qp->scq == cq &&
		    __atomic_load_n(&qp->ctl->sq.prod, __ATOMIC_ACQUIRE) !=
		    __atomic_load_n(&qp->ctl->sq.cons, __ATOMIC_ACQUIRE))
			return true;
	}
	return false;
}

int
droce_engine_cq_resize(struct droce_engine_cq *cq, struct droce_shm_cqe *ring, uint32_t size)
{
	struct droce_engine_dev *dev = cq->dom->dev;
	uint64_t deadline = rte_get_tsc_cycles() + rte_get_tsc_hz() / 100;
	uint32_t cons, head, n, i;
	int rc = 0;

	if (ring == NULL || size == 0 || (size & (size - 1)) != 0)
		return -EINVAL;
	/*
	 * Sends posted before ibv_resize_cq complete into the ring being counted, as they
	 * would on a NIC that has long fetched them: a short wait for the engines to finish
	 * them (bounded: an RC peer may never answer), so the check below sees them.
	 */
	while (cq_sends_pending(cq) && rte_get_tsc_cycles() < deadline)
		rte_delay_us_sleep(100);
	/* Every pass that may be writing to cq ends; no new one starts (engine_loop.c). */
	atomic_store_explicit(&dev->freeze, 1, memory_order_seq_cst);
	engine_quiesce(dev);
	cons = __atomic_load_n(&cq->ctl->ring.cons, __ATOMIC_ACQUIRE);
	head = atomic_load_explicit(&cq->head, memory_order_relaxed);
	n = head - cons;
	if (atomic_load_explicit(&cq->error, memory_order_relaxed)) {
		rc = -EIO;
	} else if (n > size || n > cq->size) {
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

/* ---- QP ---- */

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

	memset(&cmd, 0, sizeof(cmd));
	cmd.type = ENGINE_CMD_QP_DEL;
	cmd.qp = qp;
	engine_cmd_run(qp->engine, &cmd);
	atomic_store_explicit(&dev->qps[qp->qpn], NULL, memory_order_release);
	__atomic_store_n(&qp->dom->db_qp[qp->engine->id][qp->db_slot], NULL, __ATOMIC_RELEASE);
	mcast_qp_gone(dev, qp->qpn);
	/* Packets of this QP may be in another engine's hands or its handoff ring. */
	engine_quiesce(dev);
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

/* ---- Engines: create, destroy, counters ---- */

uint32_t
droce_engine_timer_qps(const struct droce_engine *e)
{
	return atomic_load_explicit(&e->nb_timer_qps, memory_order_relaxed);
}

void
droce_engine_stats_get(const struct droce_engine *e, struct droce_engine_stats *st)
{
	const volatile uint64_t *src = (const volatile uint64_t *)&e->st;
	uint64_t *dst = (uint64_t *)st;
	size_t i;

	for (i = 0; i < DROCE_ENGINE_NB_COUNTERS; i++)
		dst[i] = src[i];
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
	while (rte_ring_sc_dequeue(e->handoff, &m) == 0)
		rte_pktmbuf_free(m);
	rte_ring_free(e->handoff);
	rte_ring_free(e->cmds);
	engine_wait_fini(e);
	close(e->cmd_wake_fd);
	close(e->cmd_done_fd);
	e->dev->engines[e->id] = NULL;
	rte_free(e);
}
