/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * One client connection: its region, its domain, its objects by handle, and the verbs it
 * asks for. The socket is untrusted input: every handle is looked up in this client's own
 * tables (so it can never name another client's object), every size and count is checked
 * before anything is allocated, and every resource limit answers -ENOMEM as rdma-core does.
 * When the connection goes, droced_client_free() releases everything, QPs first (they
 * hold CQs and SRQs), while the engines still run.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/queue.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_mempool.h>

#include "droced_loc.h"

#define TABLE_MIN_CAP	16
/* ibv_srq_attr_mask */
#define SRQ_MAX_WR	(1u << 0)
#define SRQ_LIMIT	(1u << 1)
/* enum ibv_srq_type's XRC */
#define DROCED_SRQT_XRC	1

#define REQ_SIZE(member) \
	(offsetof(struct droce_proto_req, member) + sizeof(((struct droce_proto_req *)0)->member))
#define REQ_HDR_SIZE	offsetof(struct droce_proto_req, hello)

struct droced_pd {
	uint32_t users;		/* MRs, SRQs, QPs and AHs on it: DEALLOC_PD -> -EBUSY */
};

struct droced_mr {
	struct droced_mr_view view;	/* the pieces, mapped one after another */
	uint64_t first_off;	/* the MR's first byte in the view */
	uint64_t iova;
	uint64_t length;
	uint32_t lkey;
	uint32_t pd;
	uint32_t access;
};

struct droced_mw {
	uint32_t rkey;		/* as allocated: names it to the engine */
	uint32_t pd;
};

struct droced_cq {
	struct droce_engine_cq *cq;
	int64_t ctl_off, ring_off;
	uint32_t size;
	int efd;		/* notification pipe: write end (the engine's), -1 without */
	int rfd;		/* its read end, the application's copy sent with CREATE_CQ */
};

struct droced_srq {
	struct droce_engine_srq *srq;
	int64_t ctl_off, ring_off;
	uint64_t ring_len;
	uint32_t size, stride, max_sge, pd;
	uint32_t xrcd;		/* XRC SRQ: its XRC domain's handle; else DROCE_PROTO_NO_HANDLE */
};

/*
 * An XRC domain (ibv_open_xrcd): droced-wide, one per file, shared by every context that
 * opens that file, as the kernel's are (the processes of an MPI job share their receive
 * queues through one); one opened without a file is its context's alone. Its id is what
 * the engines compare: an XRC target takes requests only for XRC SRQs of its domain.
 */
struct droced_xrcd {
	dev_t dev;
	ino_t ino;
	bool anon;
	uint32_t id;
	uint32_t refs;		/* opens, over all clients */
	LIST_ENTRY(droced_xrcd) next;
};

static LIST_HEAD(, droced_xrcd) droced_xrcds = LIST_HEAD_INITIALIZER(droced_xrcds);
static uint32_t droced_xrcd_next = 1;

/* A client's open of an XRC domain. */
struct droced_xrcd_ref {
	struct droced_xrcd *x;
	uint32_t users;		/* its XRC SRQs and targets: CLOSE_XRCD -> -EBUSY */
};

static void
xrcd_put(struct droced_xrcd *x)
{
	if (--x->refs != 0)
		return;
	LIST_REMOVE(x, next);
	free(x);
}

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

/* ---- Notification pipes (droce_shm_proto.h) ---- */

/*
 * A notification on the write end of a notification pipe (droce_shm_proto.h): non-blocking
 * and droced's alone, so this never blocks. EAGAIN (the pipe is full: the application has
 * notifications to read already) and EPIPE (it closed its end) are fine.
 */
static void
notify_kick(int wfd)
{
	uint8_t one = 1;
	ssize_t n;

	if (wfd < 0)
		return;
	n = write(wfd, &one, sizeof(one));
	RTE_SET_USED(n);
}

/*
 * A notification pipe: *rfd for the application, *wfd (non-blocking) for droced or an
 * engine. 0 or -errno.
 */
static int
notify_pipe(int *rfd, int *wfd)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC) != 0)
		return -errno;
	/* O_NONBLOCK is per file description: the write end's alone, never the reader's. */
	if (fcntl(p[1], F_SETFL, O_NONBLOCK) != 0) {
		int rc = -errno;

		close(p[0]);
		close(p[1]);
		return rc;
	}
	*rfd = p[0];
	*wfd = p[1];
	return 0;
}

static void
notify_pipe_close(int rfd, int wfd)
{
	if (rfd >= 0)
		close(rfd);
	if (wfd >= 0)
		close(wfd);
}

/* ---- Handle tables: index = handle, grown on demand up to the client's limit ---- */

static void
table_init(struct droced_table *t, uint32_t max)
{
	memset(t, 0, sizeof(*t));
	t->max = max;
}

static int
table_add(struct droced_table *t, void *obj, uint32_t *handle)
{
	uint32_t i;

	if (t->nb >= t->max)
		return -ENOMEM;
	if (t->nb == t->cap) {
		uint32_t cap = RTE_MIN(RTE_MAX(t->cap * 2, (uint32_t)TABLE_MIN_CAP), t->max);
		void **o = realloc(t->obj, sizeof(*o) * cap);

		if (o == NULL)
			return -ENOMEM;
		memset(o + t->cap, 0, sizeof(*o) * (cap - t->cap));
		t->obj = o;
		t->hint = t->cap;
		t->cap = cap;
	}
	for (i = t->hint % t->cap; t->obj[i] != NULL; i = (i + 1) % t->cap)
		;
	t->obj[i] = obj;
	t->nb++;
	t->hint = i + 1;
	*handle = i;
	return 0;
}

static void *
table_get(const struct droced_table *t, uint32_t handle)
{
	return handle < t->cap ? t->obj[handle] : NULL;
}

static void
table_del(struct droced_table *t, uint32_t handle)
{
	t->obj[handle] = NULL;
	t->nb--;
}

static void
table_free(struct droced_table *t)
{
	free(t->obj);
	t->obj = NULL;
	t->cap = t->nb = 0;
}

static struct droced_xrcd_ref *
xrcd_get(struct droced_client *c, uint32_t handle)
{
	return table_get(&c->xrcds, handle);
}

static uint32_t
pow2_at_least(uint32_t n)
{
	return rte_align32pow2(RTE_MAX(n, 1u));
}

static void *
region_ptr(const struct droced_client *c, int64_t off)
{
	return c->region + off;
}

/* ---- Connection ---- */

struct droced_client *
droced_client_new(int fd)
{
	struct droced_client *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->p.kind = DROCED_FD_CLIENT;
	c->fd = fd;
	c->region_fd = -1;
	c->async_efd = c->async_rfd = -1;
	return c;
}

static int
region_create(struct droced_client *c)
{
	uint64_t size = (uint64_t)droced.cfg.limits.region_mb * DROCED_MIB;
	int fd = -1;

	/* Hugepages when the system has them to give: fallocate() makes sure it does. */
	if (size % DROCED_HUGE_PAGE == 0) {
		fd = memfd_create("droce-region", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_HUGETLB);
		if (fd >= 0 && (ftruncate(fd, size) != 0 || fallocate(fd, 0, 0, size) != 0)) {
			close(fd);
			fd = -1;
		}
		c->region_huge = fd >= 0;
	}
	if (fd < 0) {
		fd = memfd_create("droce-region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		if (fd < 0)
			return -errno;
		if (ftruncate(fd, size) != 0) {
			close(fd);
			return -ENOMEM;
		}
	}
	c->region_fd = fd;
	/* A client that shrank the file would make our next access to it a SIGBUS. */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
		return -errno;
	c->region = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (c->region == MAP_FAILED) {
		c->region = NULL;
		return -ENOMEM;
	}
	c->region_size = size;
	return 0;
}

/* Everything HELLO set up and every object since; safe on a half-built client. */
static uint32_t
client_release(struct droced_client *c)
{
	struct droce_shm_qp_attr err;
	uint32_t i, alive = c->pds.nb + c->mrs.nb + c->mws.nb + c->xrcds.nb + c->cqs.nb + c->srqs.nb + c->qps.nb + c->nb_ahs;

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
	for (i = 0; i < c->srqs.cap; i++) {
		struct droced_srq *srq = c->srqs.obj[i];

		if (srq != NULL) {
			droce_engine_srq_destroy(srq->srq);
			free(srq);
		}
	}
	for (i = 0; i < c->cqs.cap; i++) {
		struct droced_cq *cq = c->cqs.obj[i];

		if (cq == NULL)
			continue;
		droce_engine_cq_destroy(cq->cq);
		notify_pipe_close(cq->rfd, cq->efd);
		free(cq);
	}
	/* MRs and AHs go with the domain; the MR views only after no engine can use them. */
	if (c->dom != NULL)
		droce_engine_domain_destroy(c->dom);
	c->dom = NULL;
	for (i = 0; i < c->mrs.cap; i++) {
		struct droced_mr *mr = c->mrs.obj[i];

		if (mr != NULL) {
			droced_mr_view_unmap(&mr->view);
			free(mr);
		}
	}
	for (i = 0; i < c->mws.cap; i++)
		free(c->mws.obj[i]);
	for (i = 0; i < c->xrcds.cap; i++) {
		struct droced_xrcd_ref *ref = c->xrcds.obj[i];

		if (ref != NULL) {
			xrcd_put(ref->x);
			free(ref);
		}
	}
	table_free(&c->xrcds);
	for (i = 0; i < c->pds.cap; i++)
		free(c->pds.obj[i]);
	table_free(&c->pds);
	table_free(&c->mrs);
	table_free(&c->mws);
	table_free(&c->cqs);
	table_free(&c->srqs);
	table_free(&c->qps);
	free(c->ah_pd);
	c->ah_pd = NULL;
	c->nb_ahs = 0;
	c->mr_bytes = 0;
	free(c->db_used);
	c->db_used = NULL;
	free(c->arena);
	c->arena = NULL;
	if (c->region != NULL)
		munmap(c->region, c->region_size);
	c->region = NULL;
	c->evring = NULL;
	if (c->region_fd >= 0)
		close(c->region_fd);
	notify_pipe_close(c->async_rfd, c->async_efd);
	c->region_fd = c->async_efd = c->async_rfd = -1;
	return alive;
}

void
droced_client_free(struct droced_client *c)
{
	droced_cm_chan_free(c);
	if (client_release(c) != 0) {
		droced.clients_torn_down++;
		DROCED_LOG(INFO, "client pid %d gone: its objects were torn down", (int)c->pid);
	}
	close(c->fd);
	free(c);
}

/* ---- Events ---- */

static void
event_ring_put(struct droced_client *c, uint32_t type, uint32_t handle)
{
	struct droce_shm_event_ring *r = c->evring;
	uint32_t cons = __atomic_load_n(&r->ring.cons, __ATOMIC_ACQUIRE);

	/* cons is the application's; a lying one only loses or overwrites its own events. */
	if (c->ev_prod - cons >= DROCE_SHM_EVENT_RING) {
		r->lost++;
		return;
	}
	r->ev[c->ev_prod & (DROCE_SHM_EVENT_RING - 1)] = (struct droce_shm_event){
		.type = type, .handle = handle,
	};
	c->ev_prod++;
	__atomic_store_n(&r->ring.prod, c->ev_prod, __ATOMIC_RELEASE);
}

void
droced_client_event_put(struct droced_client *c, uint32_t type, uint32_t handle)
{
	if (c->evring == NULL)
		return;
	event_ring_put(c, type, handle);
	notify_kick(c->async_efd);
}

void
droced_clients_port_event(struct droced_port *p, bool up)
{
	struct droced_client *c;

	TAILQ_FOREACH(c, &droced.clients, next) {
		if (c->port != p || c->evring == NULL)
			continue;
		/* The state first: an application that reads the event and queries the port
		 * sees the state the event announced. */
		__atomic_store_n(&c->evring->port_state,
				 up ? DROCE_PROTO_PORT_ACTIVE : DROCE_PROTO_PORT_DOWN, __ATOMIC_RELEASE);
		droced_client_event_put(c, up ? DROCE_ENGINE_EVENT_PORT_ACTIVE :
				       DROCE_ENGINE_EVENT_PORT_ERR, 0);
	}
}

void
droced_client_events(struct droced_client *c)
{
	struct droce_engine_event ev;
	bool any = false;

	if (c->dom == NULL)
		return;
	while (droce_engine_domain_event_get(c->dom, &ev) == 1) {
		if (ev.type == DROCE_ENGINE_EVENT_CQ_ERR) {
			struct droced_cq *cq = table_get(&c->cqs, ev.handle);

			/* 11.4.2.1: an overrun CQ takes its QPs to the error state. */
			if (cq != NULL)
				droce_engine_cq_error_qps(cq->cq);
		}
		event_ring_put(c, ev.type, ev.handle);
		any = true;
	}
	if (any)
		notify_kick(c->async_efd);
}

/* ---- Devices ---- */

static void
limits_fill(struct droce_proto_limits *l)
{
	const struct droced_limits *cl = &droced.cfg.limits;

	memset(l, 0, sizeof(*l));
	l->max_qp = cl->max_qps;
	l->max_qp_wr = cl->max_wr;
	l->max_sge = DROCE_SHM_MAX_SGE;
	l->max_inline = DROCE_SHM_MAX_INLINE;
	l->max_cq = cl->max_cqs;
	l->max_cqe = cl->max_cqe;
	l->max_mr = cl->max_mrs;
	l->max_mr_size = cl->max_mr_bytes;
	l->max_pd = DROCED_MAX_PDS;
	l->max_srq = cl->max_srqs;
	l->max_srq_wr = cl->max_wr;
	l->max_srq_sge = DROCE_SHM_MAX_SGE;
	l->max_ah = cl->max_ahs;
	l->max_qp_rd_atom = DROCE_ENGINE_MAX_DEST_RD_ATOMIC;
	l->max_qp_init_rd_atom = DROCE_ENGINE_MAX_INIT_RD_ATOMIC;
	l->max_mcast_grp = DROCE_ENGINE_MAX_MCAST_GRPS;
	l->max_mcast_qp_attach = DROCE_ENGINE_MAX_MCAST_QPS;
}

static int
op_query_ports(struct droce_proto_resp *resp)
{
	uint32_t i;

	resp->ports.nb_ports = RTE_MIN(droced.nb_ports, (uint32_t)DROCE_PROTO_MAX_PORTS);
	for (i = 0; i < resp->ports.nb_ports; i++)
		droced_port_info(&droced.ports[i], &resp->ports.port[i]);
	return 0;
}

/* Every engine's QPs from start_qpn on, a page at a time, for droce-ctl qps. */
static int
op_query_qps(const struct droce_proto_req *req, struct droce_proto_resp *resp)
{
	struct droce_engine_qp *qp = droce_engine_dev_qp_next(droced.dev, req->query_qps.start_qpn);

	for (; qp != NULL; qp = droce_engine_dev_qp_next(droced.dev, resp->qps.next_qpn)) {
		struct droce_proto_qp_cc *o;
		struct droce_engine_qp_cc cc;

		droce_engine_qp_cc_get(qp, &cc);
		resp->qps.next_qpn = cc.qpn + 1;
		if (resp->qps.nb_qps == DROCE_PROTO_QPS_MAX) {
			resp->qps.next_qpn = cc.qpn;
			return 0;
		}
		o = &resp->qps.qp[resp->qps.nb_qps++];
		o->qpn = cc.qpn;
		o->engine = cc.engine;
		o->type = cc.type;
		o->state = cc.state;
		o->prio = cc.prio;
		o->flags = (cc.rp ? DROCE_PROTO_QP_CC_RP : 0) |
			   (cc.limited ? DROCE_PROTO_QP_CC_LIMITED : 0);
		o->alpha = cc.alpha;
		o->rate_kbps = cc.rate_kbps;
		o->target_kbps = cc.target_kbps;
		o->ce_rcvd = cc.ce_rcvd;
		o->cnp_sent = cc.cnp_sent;
		o->cnp_rcvd = cc.cnp_rcvd;
		o->rate_cuts = cc.rate_cuts;
	}
	resp->qps.next_qpn = 0;
	return 0;
}

static int
op_status(struct droce_proto_resp *resp)
{
	struct droce_proto_status *st = &resp->stat;
	const struct droced_client *c;
	struct droce_engine_dev_objects objs;
	struct mallinfo2 mi;
	uint32_t i;

	st->pid = (uint32_t)getpid();
	st->nb_ports = droced.nb_ports;
	st->nb_engines = droced.nb_engines;
	TAILQ_FOREACH(c, &droced.clients, next)
		droced_client_status(c, st);
	st->clients_total = droced.clients_total;
	st->clients_torn_down = droced.clients_torn_down;
	st->uptime_ms = droced_now_ms() - droced.start_ms;
	droce_engine_dev_objects_get(droced.dev, &objs);
	st->engine_domains = objs.domains;
	st->engine_qps = objs.qps;
	st->engine_cqs = objs.cqs;
	st->engine_srqs = objs.srqs;
	st->engine_mrs = objs.mrs;
	st->engine_ahs = objs.ahs;
	st->mcast_groups = objs.mcast_groups;
	st->mcast_attached = objs.mcast_attached;
	st->neighbours = objs.neighbours;
	for (i = 0; i < droced.nb_engines; i++)
		st->timer_qps += droce_engine_timer_qps(droced.engines[i]);
	for (i = 0; i < droced.nb_ports; i++) {
		st->mbufs_in_use += rte_mempool_in_use_count(droced.ports[i].mp);
		st->mbufs_total += droced.ports[i].mp->size;
	}
	mi = mallinfo2();
	st->heap_in_use = mi.uordblks + mi.hblkhd;
	droced_cm_status(st);
	return 0;
}

void
droced_client_status(const struct droced_client *c, struct droce_proto_status *st)
{
	if (!c->hello)
		return;
	st->nb_clients++;
	st->pds += c->pds.nb;
	st->mrs += c->mrs.nb;
	st->cqs += c->cqs.nb;
	st->srqs += c->srqs.nb;
	st->qps += c->qps.nb;
	st->ahs += c->nb_ahs;
	st->mr_bytes += c->mr_bytes;
}

static int
op_hello(struct droced_client *c, const struct droce_proto_req *req,
	 struct droce_proto_resp *resp, int *out_fds, unsigned int *out_nfds)
{
	const struct droced_limits *l = &droced.cfg.limits;
	struct droce_engine_domain_conf dc;
	struct droced_port *p;
	int64_t off;
	uint32_t i;
	int rc;

	if (c->hello)
		return -EINVAL;
	if (req->hello.version != DROCE_PROTO_VERSION)
		return -EPROTO;
	if (req->hello.port >= droced.nb_ports)
		return -EINVAL;
	p = &droced.ports[req->hello.port];
	rc = region_create(c);
	if (rc != 0)
		goto fail;
	rc = -ENOMEM;
	c->arena = malloc(sizeof(*c->arena));
	c->ah_pd = calloc(l->max_ahs, sizeof(*c->ah_pd));
	c->db_used = calloc(droced.nb_engines, sizeof(*c->db_used));
	if (c->arena == NULL || c->ah_pd == NULL || c->db_used == NULL)
		goto fail;
	rc = droce_shm_arena_init(c->arena, c->region, c->region_size, droced.nb_engines);
	if (rc != 0)
		goto fail;
	off = droce_shm_arena_alloc(c->arena, sizeof(*c->evring), DROCE_SHM_CACHE_LINE);
	if (off < 0) {
		rc = (int)off;
		goto fail;
	}
	c->evring = region_ptr(c, off);
	c->evring->port_state = p->link_up ? DROCE_PROTO_PORT_ACTIVE : DROCE_PROTO_PORT_DOWN;
	rc = notify_pipe(&c->async_rfd, &c->async_efd);
	if (rc != 0)
		goto fail;
	memset(&dc, 0, sizeof(dc));
	dc.region = c->region;
	dc.region_size = c->region_size;
	/* MRs and MWs share the key table; index 0 is never used (key 0 never resolves). */
	dc.max_mrs = 2 * l->max_mrs + 1;
	dc.max_ahs = l->max_ahs;
	dc.max_events = DROCED_MAX_EVENTS;
	c->dom = droce_engine_domain_create(droced.dev, &dc);
	if (c->dom == NULL) {
		rc = -rte_errno;
		goto fail;
	}
	table_init(&c->pds, DROCED_MAX_PDS);
	table_init(&c->mrs, l->max_mrs);
	table_init(&c->mws, l->max_mrs);
	table_init(&c->xrcds, DROCED_MAX_PDS);
	table_init(&c->cqs, l->max_cqs);
	table_init(&c->srqs, l->max_srqs);
	table_init(&c->qps, l->max_qps);
	c->port = p;
	c->hello = true;
	droced.clients_total++;

	resp->hello.version = DROCE_PROTO_VERSION;
	resp->hello.nb_engines = droced.nb_engines;
	resp->hello.region_size = c->region_size;
	resp->hello.event_ring_off = (uint64_t)off;
	droced_port_info(p, &resp->hello.port);
	limits_fill(&resp->hello.limits);
	/* the clock of CQE timestamps: every engine's TSC, one invariant counter */
	resp->hello.tsc_hz = rte_get_tsc_hz();
	resp->hello.nb_gids = RTE_MIN(p->nb_gids, (uint32_t)DROCE_PROTO_MAX_GIDS);
	for (i = 0; i < resp->hello.nb_gids; i++) {
		memcpy(resp->hello.gids[i].gid, p->gids[i], 16);
		resp->hello.gids[i].type = p->gid_type[i];
		resp->hello.gids[i].valid = p->gid_valid[i];
	}
	out_fds[0] = c->region_fd;
	out_fds[1] = c->async_rfd;
	*out_nfds = 2;
	DROCED_LOG(INFO, "client pid %d: device droce%u, region %" PRIu64 " MiB%s", (int)c->pid,
		   p->index, (uint64_t)(c->region_size / DROCED_MIB), c->region_huge ? " (hugepages)" : "");
	return 0;
fail:
	client_release(c);
	return rc;
}

/* ---- PD and MR ---- */

static struct droced_pd *
pd_get(const struct droced_client *c, uint32_t handle)
{
	return table_get(&c->pds, handle);
}

static int
op_alloc_pd(struct droced_client *c, struct droce_proto_resp *resp)
{
	struct droced_pd *pd = calloc(1, sizeof(*pd));
	int rc;

	if (pd == NULL)
		return -ENOMEM;
	rc = table_add(&c->pds, pd, &resp->obj.handle);
	if (rc != 0)
		free(pd);
	return rc;
}

static int
op_dealloc_pd(struct droced_client *c, uint32_t handle)
{
	struct droced_pd *pd = pd_get(c, handle);

	if (pd == NULL)
		return -EINVAL;
	if (pd->users != 0)
		return -EBUSY;
	table_del(&c->pds, handle);
	free(pd);
	return 0;
}

/* IB 10.6.3.1: remote write or atomic access needs local write. */
static bool
access_ok(uint32_t access)
{
	const uint32_t remote = DROCE_SHM_ACCESS_REMOTE_WRITE | DROCE_SHM_ACCESS_REMOTE_ATOMIC;

	return !(access & remote) || (access & DROCE_SHM_ACCESS_LOCAL_WRITE);
}

static int
op_reg_mr(struct droced_client *c, const struct droce_proto_req *req, size_t n, const int *fds,
	  unsigned int nfds, struct droce_proto_resp *resp)
{
	uint32_t np = req->reg_mr.nb_pieces;
	struct droced_pd *pd = pd_get(c, req->reg_mr.pd);
	struct droced_mr *mr;
	int rc;

	if (np == 0 || np > DROCE_PROTO_MR_MAX_PIECES || nfds > np ||
	    n < offsetof(struct droce_proto_req, reg_mr.pieces) + np * sizeof(req->reg_mr.pieces[0]))
		return -EINVAL;
	if (pd == NULL || req->reg_mr.length == 0 || !access_ok(req->reg_mr.access))
		return -EINVAL;
	if (c->mrs.nb >= c->mrs.max ||
	    req->reg_mr.length > droced.cfg.limits.max_mr_bytes - c->mr_bytes)
		return -ENOMEM;
	mr = calloc(1, sizeof(*mr));
	if (mr == NULL)
		return -ENOMEM;
	rc = droced_mr_view_map(c, req->reg_mr.pieces, np, fds, nfds, req->reg_mr.access,
				req->reg_mr.first_off, req->reg_mr.length, &mr->view);
	if (rc != 0) {
		free(mr);
		return rc;
	}
	rc = droce_engine_mr_reg(c->dom, req->reg_mr.pd, mr->view.base + req->reg_mr.first_off,
				 req->reg_mr.iova, req->reg_mr.length, req->reg_mr.access,
				 &mr->lkey, &resp->obj.rkey);
	if (rc != 0)
		goto fail;
	rc = table_add(&c->mrs, mr, &resp->obj.handle);
	if (rc != 0) {
		droce_engine_mr_dereg(c->dom, mr->lkey);
		goto fail;
	}
	mr->first_off = req->reg_mr.first_off;
	mr->iova = req->reg_mr.iova;
	mr->length = req->reg_mr.length;
	mr->pd = req->reg_mr.pd;
	mr->access = req->reg_mr.access;
	pd->users++;
	c->mr_bytes += mr->length;
	resp->obj.lkey = mr->lkey;
	return 0;
fail:
	droced_mr_view_unmap(&mr->view);
	free(mr);
	return rc;
}

/*
 * ibv_rereg_mr in place: the same handle and keys, what flags name changed (a new
 * translation: new pieces, mapped before the engine switches, the old unmapped after).
 * On failure the MR is as it was.
 */
static int
op_rereg_mr(struct droced_client *c, const struct droce_proto_req *req, size_t n,
	    const int *fds, unsigned int nfds, struct droce_proto_resp *resp)
{
	const uint32_t known = DROCE_PROTO_REREG_TRANSLATION | DROCE_PROTO_REREG_PD |
			       DROCE_PROTO_REREG_ACCESS;
	struct droced_mr *mr = table_get(&c->mrs, req->rereg_mr.handle);
	uint32_t flags = req->rereg_mr.flags, np = req->rereg_mr.nb_pieces;
	bool trans = flags & DROCE_PROTO_REREG_TRANSLATION;
	uint32_t pd = flags & DROCE_PROTO_REREG_PD ? req->rereg_mr.pd : mr != NULL ? mr->pd : 0;
	uint32_t access = flags & DROCE_PROTO_REREG_ACCESS ? req->rereg_mr.access :
			  mr != NULL ? mr->access : 0;
	struct droced_mr_view view = { 0 };
	uint64_t length, first_off, iova;
	int rc;

	if (mr == NULL || flags == 0 || (flags & ~known) || pd_get(c, pd) == NULL ||
	    !access_ok(access))
		return -EINVAL;
	if (trans) {
		if (np == 0 || np > DROCE_PROTO_MR_MAX_PIECES || nfds > np ||
		    n < offsetof(struct droce_proto_req, rereg_mr.pieces) +
			np * sizeof(req->rereg_mr.pieces[0]))
			return -EINVAL;
		length = req->rereg_mr.length;
		first_off = req->rereg_mr.first_off;
		iova = req->rereg_mr.iova;
		if (length > droced.cfg.limits.max_mr_bytes - (c->mr_bytes - mr->length))
			return -ENOMEM;
		rc = droced_mr_view_map(c, req->rereg_mr.pieces, np, fds, nfds, access,
					first_off, length, &view);
		if (rc != 0)
			return rc;
	} else {
		/* Pages mapped for reading cannot take writes: re-register the translation. */
		if (nfds != 0 || !droced_mr_view_allows(&mr->view, access))
			return -EINVAL;
		length = mr->length;
		first_off = mr->first_off;
		iova = mr->iova;
	}
	rc = droce_engine_mr_rereg(c->dom, mr->lkey, pd,
				   (trans ? view.base : mr->view.base) + first_off, iova, length,
				   access);
	if (rc != 0) {
		droced_mr_view_unmap(&view);
		return rc;
	}
	if (trans) {
		droced_mr_view_unmap(&mr->view);
		mr->view = view;
		mr->first_off = first_off;
		mr->iova = iova;
		c->mr_bytes = c->mr_bytes - mr->length + length;
		mr->length = length;
	}
	pd_get(c, mr->pd)->users--;
	pd_get(c, pd)->users++;
	mr->pd = pd;
	mr->access = access;
	resp->obj.handle = req->rereg_mr.handle;
	resp->obj.lkey = resp->obj.rkey = mr->lkey;
	return 0;
}

static int
op_dereg_mr(struct droced_client *c, uint32_t handle)
{
	struct droced_mr *mr = table_get(&c->mrs, handle);
	int rc;

	if (mr == NULL)
		return -EINVAL;
	rc = droce_engine_mr_dereg(c->dom, mr->lkey);
	if (rc != 0)
		return rc;
	droced_mr_view_unmap(&mr->view);
	pd_get(c, mr->pd)->users--;
	c->mr_bytes -= mr->length;
	table_del(&c->mrs, handle);
	free(mr);
	return 0;
}

/* ---- Memory windows ---- */

static int
op_alloc_mw(struct droced_client *c, const struct droce_proto_req *req,
	    struct droce_proto_resp *resp)
{
	struct droced_pd *pd = pd_get(c, req->alloc_mw.pd);
	struct droced_mw *mw;
	int rc;

	/* A type other than 1 and 2: -EINVAL from the engine, as rxe answers. */
	if (pd == NULL)
		return -EINVAL;
	if (c->mws.nb >= c->mws.max)
		return -ENOMEM;
	mw = calloc(1, sizeof(*mw));
	if (mw == NULL)
		return -ENOMEM;
	rc = droce_engine_mw_alloc(c->dom, req->alloc_mw.pd, req->alloc_mw.type, &mw->rkey);
	if (rc != 0) {
		free(mw);
		return rc;
	}
	rc = table_add(&c->mws, mw, &resp->obj.handle);
	if (rc != 0) {
		droce_engine_mw_dealloc(c->dom, mw->rkey);
		free(mw);
		return rc;
	}
	mw->pd = req->alloc_mw.pd;
	pd->users++;
	resp->obj.rkey = mw->rkey;
	return 0;
}

static int
op_dealloc_mw(struct droced_client *c, uint32_t handle)
{
	struct droced_mw *mw = table_get(&c->mws, handle);
	int rc;

	if (mw == NULL)
		return -EINVAL;
	rc = droce_engine_mw_dealloc(c->dom, mw->rkey);
	if (rc != 0)
		return rc;
	pd_get(c, mw->pd)->users--;
	table_del(&c->mws, handle);
	free(mw);
	return 0;
}

/* ---- XRC domains ---- */

/*
 * ibv_open_xrcd(3): with a file, its domain, made with O_CREAT if there is none yet
 * (without: -EINVAL), refused with O_EXCL if there is (-EEXIST), as the kernel does;
 * without a file, a new domain.
 */
static int
op_open_xrcd(struct droced_client *c, const struct droce_proto_req *req, const int *fds,
	     unsigned int nfds, struct droce_proto_resp *resp)
{
	uint32_t oflags = req->open_xrcd.oflags;
	struct droced_xrcd_ref *ref;
	struct droced_xrcd *x = NULL;
	struct stat st;
	int rc;

	if (nfds > 1 || (oflags & ~(uint32_t)(O_CREAT | O_EXCL)))
		return -EINVAL;
	if (nfds == 1) {
		if (fstat(fds[0], &st) != 0)
			return -EINVAL;
		LIST_FOREACH(x, &droced_xrcds, next)
			if (!x->anon && x->dev == st.st_dev && x->ino == st.st_ino)
				break;
		if (x != NULL && (oflags & O_EXCL))
			return -EEXIST;
		if (x == NULL && !(oflags & O_CREAT))
			return -EINVAL;
	}
	ref = calloc(1, sizeof(*ref));
	if (ref == NULL)
		return -ENOMEM;
	if (x == NULL) {
		x = calloc(1, sizeof(*x));
		if (x == NULL) {
			free(ref);
			return -ENOMEM;
		}
		x->anon = nfds == 0;
		if (nfds == 1) {
			x->dev = st.st_dev;
			x->ino = st.st_ino;
		}
		x->id = droced_xrcd_next++;
		if (droced_xrcd_next == 0)
			droced_xrcd_next = 1;
		LIST_INSERT_HEAD(&droced_xrcds, x, next);
	}
	x->refs++;
	ref->x = x;
	rc = table_add(&c->xrcds, ref, &resp->obj.handle);
	if (rc != 0) {
		xrcd_put(x);
		free(ref);
	}
	return rc;
}

static int
op_close_xrcd(struct droced_client *c, uint32_t handle)
{
	struct droced_xrcd_ref *ref = xrcd_get(c, handle);

	if (ref == NULL)
		return -EINVAL;
	if (ref->users != 0)
		return -EBUSY;
	xrcd_put(ref->x);
	table_del(&c->xrcds, handle);
	free(ref);
	return 0;
}

/* ---- CQ ---- */

static int
op_create_cq(struct droced_client *c, const struct droce_proto_req *req, unsigned int nfds,
	     struct droce_proto_resp *resp, int *out_fds, unsigned int *out_nfds)
{
	struct droce_engine_cq_conf conf;
	struct droced_cq *cq;
	uint32_t handle;
	int rc;

	if (req->create_cq.notify > 1 || nfds != 0 ||
	    req->create_cq.cqe > droced.cfg.limits.max_cqe ||
	    (req->create_cq.flags & ~(uint32_t)DROCE_PROTO_CQ_TIMESTAMPS))
		return -EINVAL;
	cq = calloc(1, sizeof(*cq));
	if (cq == NULL)
		return -ENOMEM;
	cq->efd = cq->rfd = -1;
	cq->size = pow2_at_least(req->create_cq.cqe);
	rc = table_add(&c->cqs, cq, &handle);
	if (rc != 0) {
		free(cq);
		return rc;
	}
	if (req->create_cq.notify) {
		rc = notify_pipe(&cq->rfd, &cq->efd);
		if (rc != 0) {
			table_del(&c->cqs, handle);
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
	conf.ctl = region_ptr(c, cq->ctl_off);
	conf.ring = region_ptr(c, cq->ring_off);
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
	notify_pipe_close(cq->rfd, cq->efd);
	table_del(&c->cqs, handle);
	free(cq);
	return rc;
}

/*
 * ibv_resize_cq: a new ring in the region, the waiting completions moved into it by the
 * engine layer (droce_engine_cq_resize), the old ring freed. libdroce holds the CQ's poll
 * lock throughout, so the application's consumer index starts again at 0 with the ring.
 */
static int
op_resize_cq(struct droced_client *c, const struct droce_proto_req *req,
	     struct droce_proto_resp *resp)
{
	struct droced_cq *cq = table_get(&c->cqs, req->resize_cq.handle);
	uint32_t size;
	int64_t off;
	int rc;

	if (cq == NULL || req->resize_cq.cqe == 0 ||
	    req->resize_cq.cqe > droced.cfg.limits.max_cqe)
		return -EINVAL;
	size = pow2_at_least(req->resize_cq.cqe);
	off = droce_shm_arena_alloc(c->arena, (uint64_t)size * sizeof(struct droce_shm_cqe),
				    DROCE_SHM_CACHE_LINE);
	if (off < 0)
		return -ENOMEM;
	rc = droce_engine_cq_resize(cq->cq, region_ptr(c, off), size);
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

static int
op_destroy_cq(struct droced_client *c, uint32_t handle)
{
	struct droced_cq *cq = table_get(&c->cqs, handle);
	int rc;

	if (cq == NULL)
		return -EINVAL;
	rc = droce_engine_cq_destroy(cq->cq);
	if (rc != 0)
		return rc;
	droce_shm_arena_free(c->arena, cq->ctl_off, sizeof(struct droce_shm_cq));
	droce_shm_arena_free(c->arena, cq->ring_off, (uint64_t)cq->size * sizeof(struct droce_shm_cqe));
	notify_pipe_close(cq->rfd, cq->efd);
	table_del(&c->cqs, handle);
	free(cq);
	return 0;
}

/* ---- SRQ ---- */

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

static int
op_create_srq(struct droced_client *c, const struct droce_proto_req *req,
	      struct droce_proto_resp *resp)
{
	struct droced_pd *pd = pd_get(c, req->create_srq.pd);
	bool xrc = req->create_srq.srq_type == DROCED_SRQT_XRC;
	struct droced_xrcd_ref *xrcd = xrc ? xrcd_get(c, req->create_srq.xrcd) : NULL;
	struct droced_cq *cq = xrc ? table_get(&c->cqs, req->create_srq.cq) : NULL;
	struct droce_engine_srq_conf conf;
	struct droced_srq *srq;
	uint32_t handle;
	int rc;

	/* An XRC SRQ names its domain and CQ (ibv_create_srq_ex(3)); TM SRQs: not offered. */
	if (req->create_srq.srq_type > DROCED_SRQT_XRC || (xrc && (xrcd == NULL || cq == NULL)))
		return req->create_srq.srq_type > DROCED_SRQT_XRC ? -EOPNOTSUPP : -EINVAL;
	if (pd == NULL || req->create_srq.max_wr == 0 ||
	    req->create_srq.max_wr > droced.cfg.limits.max_wr || req->create_srq.max_sge == 0 ||
	    req->create_srq.max_sge > DROCE_SHM_MAX_SGE ||
	    req->create_srq.srq_limit > req->create_srq.max_wr)
		return -EINVAL;
	srq = calloc(1, sizeof(*srq));
	if (srq == NULL)
		return -ENOMEM;
	srq->size = pow2_at_least(req->create_srq.max_wr);
	srq->stride = droce_shm_rq_stride(req->create_srq.max_sge);
	/* Whatever the stride has room for is what the SRQ honours. */
	srq->max_sge = RTE_MIN((srq->stride - (uint32_t)sizeof(struct droce_shm_rwqe)) /
			       (uint32_t)sizeof(struct droce_shm_sge), (uint32_t)DROCE_SHM_MAX_SGE);
	srq->ring_len = (uint64_t)srq->size * srq->stride;
	srq->pd = req->create_srq.pd;
	srq->xrcd = xrc ? req->create_srq.xrcd : DROCE_PROTO_NO_HANDLE;
	rc = table_add(&c->srqs, srq, &handle);
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
	conf.ctl = region_ptr(c, srq->ctl_off);
	conf.ring = region_ptr(c, srq->ring_off);
	conf.size = srq->size;
	conf.max_sge = srq->max_sge;
	conf.pd = srq->pd;
	conf.limit = req->create_srq.srq_limit;
	conf.handle = handle;
	if (xrc) {
		conf.xrcd = xrcd->x->id;
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
	table_del(&c->srqs, handle);
	free(srq);
	return rc;
}

static int
op_modify_srq(struct droced_client *c, const struct droce_proto_req *req)
{
	struct droced_srq *srq = table_get(&c->srqs, req->modify_srq.handle);

	if (srq == NULL || (req->modify_srq.mask & ~(SRQ_MAX_WR | SRQ_LIMIT)) != 0)
		return -EINVAL;
	/* No resizing: the ring lives in the region at a fixed size. */
	if (req->modify_srq.mask & SRQ_MAX_WR)
		return -EOPNOTSUPP;
	if (req->modify_srq.mask & SRQ_LIMIT)
		return droce_engine_srq_set_limit(srq->srq, req->modify_srq.srq_limit);
	return 0;
}

static int
op_query_srq(struct droced_client *c, uint32_t handle, struct droce_proto_resp *resp)
{
	struct droced_srq *srq = table_get(&c->srqs, handle);

	if (srq == NULL)
		return -EINVAL;
	srq_resp(srq, handle, resp);
	return 0;
}

static int
op_destroy_srq(struct droced_client *c, uint32_t handle)
{
	struct droced_srq *srq = table_get(&c->srqs, handle);
	int rc;

	if (srq == NULL)
		return -EINVAL;
	rc = droce_engine_srq_destroy(srq->srq);
	if (rc != 0)
		return rc;
	droce_shm_arena_free(c->arena, srq->ctl_off, sizeof(struct droce_shm_srq));
	droce_shm_arena_free(c->arena, srq->ring_off, srq->ring_len);
	pd_get(c, srq->pd)->users--;
	if (srq->xrcd != DROCE_PROTO_NO_HANDLE)
		xrcd_get(c, srq->xrcd)->users--;
	table_del(&c->srqs, handle);
	free(srq);
	return 0;
}

/* ---- QP ---- */

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

/*
 * An XRC target (IBV_QPT_XRC_RECV): its XRC domain instead of a PD, no CQ, no queue to
 * post to (the engine keeps a one-entry send ring it never reads), RC's responder.
 */
static int
create_xrc_target(struct droced_client *c, const struct droce_proto_req *req,
		  struct droce_proto_resp *resp, int *out_fds, unsigned int *out_nfds)
{
	struct droced_xrcd_ref *xrcd = xrcd_get(c, req->create_qp.xrcd);
	struct droce_engine_qp_conf conf;
	struct droced_qp *qp;
	uint32_t handle;
	int rc;

	if (xrcd == NULL || req->create_qp.sq_sig_all > 1)
		return -EINVAL;
	if (c->qps.nb >= c->qps.max)
		return -ENOMEM;
	qp = calloc(1, sizeof(*qp));
	if (qp == NULL)
		return -ENOMEM;
	qp->engine_id = c->port->engines[c->rr++ % c->port->nb_engines];
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
	conf.xrcd = xrcd->x->id;
	conf.ctl = region_ptr(c, qp->ctl_off);
	conf.sq = region_ptr(c, qp->sq_off);
	conf.sq_size = 1;
	conf.db_slot = qp->db_slot;
	qp->qp = droce_engine_qp_create(c->dom, &conf);
	if (qp->qp == NULL) {
		rc = rte_errno == ENOSPC ? -ENOMEM : -rte_errno;
		goto fail;
	}
	rc = table_add(&c->qps, qp, &handle);
	if (rc != 0) {
		droce_engine_qp_destroy(qp->qp);
		goto fail;
	}
	qp->xrcd = req->create_qp.xrcd;
	xrcd->users++;
	resp->qp.handle = handle;
	resp->qp.qp_num = droce_engine_qp_num(qp->qp);
	resp->qp.engine_id = qp->engine_id;
	resp->qp.db_slot = qp->db_slot;
	resp->qp.supported_wr = 0;
	resp->qp.sq_size = 1;
	resp->qp.sq_stride = (uint32_t)qp->sq_len;
	resp->qp.ctl_off = qp->ctl_off;
	resp->qp.sq_off = qp->sq_off;
	out_fds[0] = droce_engine_domain_wake_fd(c->dom, qp->engine_id);
	*out_nfds = out_fds[0] >= 0 ? 1 : 0;
	return 0;
fail:
	qp_free_mem(c, qp);
	db_slot_free(c, qp->engine_id, qp->db_slot);
	free(qp);
	return rc;
}

static int
op_create_qp(struct droced_client *c, const struct droce_proto_req *req,
	     struct droce_proto_resp *resp, int *out_fds, unsigned int *out_nfds)
{
	const struct droce_proto_cap *cap = &req->create_qp.cap;
	uint32_t max_wr = droced.cfg.limits.max_wr, handle, sq_size, rq_size = 0;
	uint32_t sq_stride, rq_stride = 0, send_sge, recv_sge = 0, inl;
	struct droced_pd *pd = pd_get(c, req->create_qp.pd);
	struct droced_cq *scq = table_get(&c->cqs, req->create_qp.send_cq);
	struct droced_cq *rcq = table_get(&c->cqs, req->create_qp.recv_cq);
	struct droced_srq *srq = NULL;
	uint8_t type = req->create_qp.qp_type;
	struct droce_engine_qp_conf conf;
	struct droced_qp *qp;
	int rc;

	if (type == DROCE_SHM_QPT_XRC_RECV)
		return create_xrc_target(c, req, resp, out_fds, out_nfds);
	if (req->create_qp.srq != DROCE_PROTO_NO_HANDLE) {
		srq = table_get(&c->srqs, req->create_qp.srq);
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
	if (cap->max_send_wr > max_wr || cap->max_send_sge > DROCE_SHM_MAX_SGE ||
	    cap->max_inline_data > DROCE_SHM_MAX_INLINE ||
	    (srq == NULL && rcq != NULL &&
	     (cap->max_recv_wr > max_wr || cap->max_recv_sge > DROCE_SHM_MAX_SGE)))
		return -EINVAL;
	if (c->qps.nb >= c->qps.max)
		return -ENOMEM;
	/* What the rings have room for is what the QP honours (and reports). */
	sq_size = pow2_at_least(cap->max_send_wr);
	sq_stride = droce_shm_sq_stride(cap->max_send_sge, cap->max_inline_data);
	send_sge = RTE_MIN((sq_stride - (uint32_t)sizeof(struct droce_shm_swqe)) /
			   (uint32_t)sizeof(struct droce_shm_sge), (uint32_t)DROCE_SHM_MAX_SGE);
	inl = RTE_MIN(sq_stride - (uint32_t)sizeof(struct droce_shm_swqe),
		      (uint32_t)DROCE_SHM_MAX_INLINE);
	if (srq == NULL && rcq != NULL) {
		rq_size = pow2_at_least(cap->max_recv_wr);
		rq_stride = droce_shm_rq_stride(RTE_MAX(cap->max_recv_sge, 1u));
		recv_sge = RTE_MIN((rq_stride - (uint32_t)sizeof(struct droce_shm_rwqe)) /
				   (uint32_t)sizeof(struct droce_shm_sge),
				   (uint32_t)DROCE_SHM_MAX_SGE);
	}
	qp = calloc(1, sizeof(*qp));
	if (qp == NULL)
		return -ENOMEM;
	qp->engine_id = c->port->engines[c->rr++ % c->port->nb_engines];
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
	conf.ctl = region_ptr(c, qp->ctl_off);
	conf.sq = region_ptr(c, qp->sq_off);
	conf.sq_size = sq_size;
	conf.sq_max_sge = send_sge;
	conf.max_inline = inl;
	conf.rq = srq != NULL || rcq == NULL ? NULL : region_ptr(c, qp->rq_off);
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
	rc = table_add(&c->qps, qp, &handle);
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
	resp->qp.handle = handle;
	resp->qp.qp_num = droce_engine_qp_num(qp->qp);
	resp->qp.engine_id = qp->engine_id;
	resp->qp.db_slot = qp->db_slot;
	resp->qp.supported_wr = supported_wr(type);
	resp->qp.sq_size = sq_size;
	resp->qp.sq_stride = sq_stride;
	resp->qp.rq_size = rq_size;
	resp->qp.rq_stride = rq_stride;
	resp->qp.cap = qp->cap;
	resp->qp.ctl_off = qp->ctl_off;
	resp->qp.sq_off = qp->sq_off;
	resp->qp.rq_off = qp->rq_off;
	/* The engine's wake-up eventfd for this client: its doorbells reach a sleeping engine. */
	out_fds[0] = droce_engine_domain_wake_fd(c->dom, qp->engine_id);
	*out_nfds = out_fds[0] >= 0 ? 1 : 0;
	return 0;
fail:
	qp_free_mem(c, qp);
	db_slot_free(c, qp->engine_id, qp->db_slot);
	free(qp);
	return rc;
}

/* Parks the request until lib/net answers for dgid (or the timeout). */
static int
park(struct droced_client *c, const struct droce_proto_req *req, const uint8_t dgid[16])
{
	c->parked = true;
	c->park_done = false;
	c->park_status = 0;
	if (droce_net_gid_to_ipv4(dgid, &c->park_ip) != 0)
		c->park_ip = 0;
	c->park_deadline_ms = droced_now_ms() + DROCED_PARK_TIMEOUT_MS;
	c->park_req = *req;
	droced_loop_client_pause(c, true);
	return 1;
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

static int
op_modify_qp(struct droced_client *c, const struct droce_proto_req *req)
{
	struct droce_shm_qp_attr attr = req->modify_qp.attr;
	struct droced_qp *qp = table_get(&c->qps, req->modify_qp.handle);
	int rc;

	if (qp == NULL)
		return -EINVAL;
	rc = qp_modify_routed(c, qp, &attr);
	return rc == -EAGAIN ? park(c, req, attr.ah.dgid) : rc;
}

int
droced_client_qp_modify_num(const struct droced_client *owner, uint32_t qpn,
			    const struct droce_shm_qp_attr *attr)
{
	struct droce_shm_qp_attr a = *attr;
	struct droced_client *c;
	uint32_t i;

	TAILQ_FOREACH(c, &droced.clients, next) {
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

static int
op_query_qp(struct droced_client *c, uint32_t handle, struct droce_proto_resp *resp)
{
	struct droced_qp *qp = table_get(&c->qps, handle);
	int rc;

	if (qp == NULL)
		return -EINVAL;
	rc = droce_engine_qp_query(qp->qp, &resp->query_qp.attr);
	resp->query_qp.cap = qp->cap;
	resp->query_qp.sq_sig_all = qp->sq_sig_all;
	return rc;
}

static int
op_destroy_qp(struct droced_client *c, uint32_t handle)
{
	struct droced_qp *qp = table_get(&c->qps, handle);
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
		xrcd_get(c, qp->xrcd)->users--;
	else
		pd_get(c, qp->pd)->users--;
	table_del(&c->qps, handle);
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
	if (droce_engine_mcast_members(droced.dev, gid) == 1 && c->port->net != NULL)
		droce_net_mcast_join(c->port->net, gid, rte_get_tsc_cycles());
	return 0;
}

static void
mcast_detach(struct droced_client *c, struct droced_qp *qp, struct droced_mcast *m)
{
	if (droce_engine_mcast_detach(qp->qp, m->gid) == 0 &&
	    droce_engine_mcast_members(droced.dev, m->gid) == 0 && c->port->net != NULL)
		droce_net_mcast_leave(c->port->net, m->gid, rte_get_tsc_cycles());
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
op_mcast(struct droced_client *c, const struct droce_proto_req *req, bool attach)
{
	struct droced_qp *qp = table_get(&c->qps, req->mcast.qp);
	struct droced_mcast *m;

	if (qp == NULL || !droced_gid_is_multicast(req->mcast.gid))
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

/* ---- AH ---- */

static int
op_create_ah(struct droced_client *c, const struct droce_proto_req *req,
	     struct droce_proto_resp *resp)
{
	struct droce_shm_ah_attr attr = req->create_ah.attr;
	struct droced_pd *pd = pd_get(c, req->create_ah.pd);
	uint32_t ahn;
	int rc;

	if (pd == NULL || !attr.is_global)
		return -EINVAL;
	if (c->nb_ahs >= droced.cfg.limits.max_ahs)
		return -ENOMEM;
	rc = droced_neigh_ensure(c->port, attr.dgid);
	if (rc == -EAGAIN)
		return park(c, req, attr.dgid);
	if (rc != 0)
		return rc;
	droced_route_av(&attr);
	/* Any engine of the port builds the same headers: they share its MAC and GIDs. */
	rc = droce_engine_ah_create(c->dom, c->port->engines[0], req->create_ah.pd, &attr, &ahn);
	if (rc != 0)
		return rc;
	c->ah_pd[ahn] = req->create_ah.pd + 1;
	c->nb_ahs++;
	pd->users++;
	resp->obj.handle = ahn;
	return 0;
}

static int
op_destroy_ah(struct droced_client *c, uint32_t handle)
{
	int rc;

	if (handle >= droced.cfg.limits.max_ahs || c->ah_pd[handle] == 0)
		return -EINVAL;
	rc = droce_engine_ah_destroy(c->dom, handle);
	if (rc != 0)
		return rc;
	pd_get(c, c->ah_pd[handle] - 1)->users--;
	c->ah_pd[handle] = 0;
	c->nb_ahs--;
	return 0;
}

/* ---- Dispatch ---- */

/* The smallest message each request may come in (the union member it uses). */
static const size_t req_min[DROCE_PROTO_OP_MAX] = {
	[DROCE_PROTO_OP_QUERY_PORTS] = REQ_HDR_SIZE,
	[DROCE_PROTO_OP_STATUS] = REQ_HDR_SIZE,
	[DROCE_PROTO_OP_QUERY_QPS] = REQ_SIZE(query_qps),
	[DROCE_PROTO_OP_REREG_MR] = offsetof(struct droce_proto_req, rereg_mr.pieces),
	[DROCE_PROTO_OP_HELLO] = REQ_SIZE(hello),
	[DROCE_PROTO_OP_ALLOC_PD] = REQ_HDR_SIZE,
	[DROCE_PROTO_OP_DEALLOC_PD] = REQ_SIZE(obj),
	[DROCE_PROTO_OP_REG_MR] = offsetof(struct droce_proto_req, reg_mr.pieces),
	[DROCE_PROTO_OP_DEREG_MR] = REQ_SIZE(obj),
	[DROCE_PROTO_OP_ALLOC_MW] = REQ_SIZE(alloc_mw),
	[DROCE_PROTO_OP_OPEN_XRCD] = REQ_SIZE(open_xrcd),
	[DROCE_PROTO_OP_ATTACH_MCAST] = REQ_SIZE(mcast),
	[DROCE_PROTO_OP_DETACH_MCAST] = REQ_SIZE(mcast),
	[DROCE_PROTO_OP_CLOSE_XRCD] = REQ_SIZE(obj),
	[DROCE_PROTO_OP_DEALLOC_MW] = REQ_SIZE(obj),
	[DROCE_PROTO_OP_CREATE_CQ] = REQ_SIZE(create_cq),
	[DROCE_PROTO_OP_DESTROY_CQ] = REQ_SIZE(obj),
	[DROCE_PROTO_OP_RESIZE_CQ] = REQ_SIZE(resize_cq),
	[DROCE_PROTO_OP_CREATE_SRQ] = REQ_SIZE(create_srq),
	[DROCE_PROTO_OP_MODIFY_SRQ] = REQ_SIZE(modify_srq),
	[DROCE_PROTO_OP_QUERY_SRQ] = REQ_SIZE(obj),
	[DROCE_PROTO_OP_DESTROY_SRQ] = REQ_SIZE(obj),
	[DROCE_PROTO_OP_CREATE_QP] = REQ_SIZE(create_qp),
	[DROCE_PROTO_OP_MODIFY_QP] = REQ_SIZE(modify_qp),
	[DROCE_PROTO_OP_QUERY_QP] = REQ_SIZE(obj),
	[DROCE_PROTO_OP_DESTROY_QP] = REQ_SIZE(obj),
	[DROCE_PROTO_OP_CREATE_AH] = REQ_SIZE(create_ah),
	[DROCE_PROTO_OP_DESTROY_AH] = REQ_SIZE(obj),
	[DROCE_PROTO_OP_CM_OPEN] = REQ_SIZE(cm_open),
	[DROCE_PROTO_OP_CM_CREATE_ID] = REQ_SIZE(cm_create_id),
	[DROCE_PROTO_OP_CM_DESTROY_ID] = REQ_SIZE(cm_id),
	[DROCE_PROTO_OP_CM_BIND] = REQ_SIZE(cm_bind),
	[DROCE_PROTO_OP_CM_RESOLVE_ADDR] = REQ_SIZE(cm_resolve_addr),
	[DROCE_PROTO_OP_CM_RESOLVE_ROUTE] = REQ_SIZE(cm_id),
	[DROCE_PROTO_OP_CM_QUERY] = REQ_SIZE(cm_id),
	[DROCE_PROTO_OP_CM_LISTEN] = REQ_SIZE(cm_listen),
	[DROCE_PROTO_OP_CM_CONNECT] = REQ_SIZE(cm_conn),
	[DROCE_PROTO_OP_CM_ACCEPT] = REQ_SIZE(cm_conn),
	[DROCE_PROTO_OP_CM_ESTABLISH] = REQ_SIZE(cm_id),
	[DROCE_PROTO_OP_CM_REJECT] = REQ_SIZE(cm_reject),
	[DROCE_PROTO_OP_CM_DISCONNECT] = REQ_SIZE(cm_id),
	[DROCE_PROTO_OP_CM_INIT_QP_ATTR] = REQ_SIZE(cm_init_qp_attr),
	[DROCE_PROTO_OP_CM_SET_OPTION] = REQ_SIZE(cm_set_option),
	[DROCE_PROTO_OP_CM_MIGRATE] = REQ_SIZE(cm_migrate),
	[DROCE_PROTO_OP_CM_GET_EVENT] = REQ_HDR_SIZE,
	[DROCE_PROTO_OP_CM_NOTIFY] = REQ_SIZE(cm_notify),
	[DROCE_PROTO_OP_CM_JOIN_MCAST] = REQ_SIZE(cm_mcast),
	[DROCE_PROTO_OP_CM_LEAVE_MCAST] = REQ_SIZE(cm_mcast),
};

int
droced_client_handle(struct droced_client *c, const struct droce_proto_req *req, size_t n,
		     int *fds, unsigned int nfds, struct droce_proto_resp *resp,
		     int *out_fds, unsigned int *out_nfds)
{
	uint32_t op = req->op;
	int rc;

	memset(resp, 0, sizeof(*resp));
	resp->op = op;
	resp->seq = req->seq;
	*out_nfds = 0;
	if (n < REQ_HDR_SIZE || op == 0 || op >= DROCE_PROTO_OP_MAX || n < req_min[op]) {
		resp->status = -EINVAL;
		return 0;
	}
	/* A CM channel (CM_OPEN) speaks rdma_cm only; a device context (HELLO) never does. */
	if (droced_cm_op(op)) {
		rc = c->hello ? -EPROTO : droced_cm_handle(c, req, n, resp, out_fds, out_nfds);
		goto done;
	}
	if (c->cm != NULL && op != DROCE_PROTO_OP_QUERY_PORTS && op != DROCE_PROTO_OP_STATUS &&
	    op != DROCE_PROTO_OP_QUERY_QPS) {
		resp->status = -EPROTO;
		return 0;
	}
	/* Before HELLO a connection is only a device list or a status query. */
	if (!c->hello && op != DROCE_PROTO_OP_QUERY_PORTS && op != DROCE_PROTO_OP_STATUS &&
	    op != DROCE_PROTO_OP_QUERY_QPS && op != DROCE_PROTO_OP_HELLO) {
		resp->status = -EPROTO;
		return 0;
	}
	switch (op) {
	case DROCE_PROTO_OP_QUERY_PORTS:
		rc = op_query_ports(resp);
		break;
	case DROCE_PROTO_OP_STATUS:
		rc = op_status(resp);
		break;
	case DROCE_PROTO_OP_QUERY_QPS:
		rc = op_query_qps(req, resp);
		break;
	case DROCE_PROTO_OP_HELLO:
		rc = op_hello(c, req, resp, out_fds, out_nfds);
		break;
	case DROCE_PROTO_OP_ALLOC_PD:
		rc = op_alloc_pd(c, resp);
		break;
	case DROCE_PROTO_OP_DEALLOC_PD:
		rc = op_dealloc_pd(c, req->obj.handle);
		break;
	case DROCE_PROTO_OP_REG_MR:
		rc = op_reg_mr(c, req, n, fds, nfds, resp);
		break;
	case DROCE_PROTO_OP_REREG_MR:
		rc = op_rereg_mr(c, req, n, fds, nfds, resp);
		break;
	case DROCE_PROTO_OP_DEREG_MR:
		rc = op_dereg_mr(c, req->obj.handle);
		break;
	case DROCE_PROTO_OP_ALLOC_MW:
		rc = op_alloc_mw(c, req, resp);
		break;
	case DROCE_PROTO_OP_DEALLOC_MW:
		rc = op_dealloc_mw(c, req->obj.handle);
		break;
	case DROCE_PROTO_OP_OPEN_XRCD:
		rc = op_open_xrcd(c, req, fds, nfds, resp);
		break;
	case DROCE_PROTO_OP_CLOSE_XRCD:
		rc = op_close_xrcd(c, req->obj.handle);
		break;
	case DROCE_PROTO_OP_ATTACH_MCAST:
	case DROCE_PROTO_OP_DETACH_MCAST:
		rc = op_mcast(c, req, op == DROCE_PROTO_OP_ATTACH_MCAST);
		break;
	case DROCE_PROTO_OP_CREATE_CQ:
		rc = op_create_cq(c, req, nfds, resp, out_fds, out_nfds);
		break;
	case DROCE_PROTO_OP_DESTROY_CQ:
		rc = op_destroy_cq(c, req->obj.handle);
		break;
	case DROCE_PROTO_OP_RESIZE_CQ:
		rc = op_resize_cq(c, req, resp);
		break;
	case DROCE_PROTO_OP_CREATE_SRQ:
		rc = op_create_srq(c, req, resp);
		break;
	case DROCE_PROTO_OP_MODIFY_SRQ:
		rc = op_modify_srq(c, req);
		break;
	case DROCE_PROTO_OP_QUERY_SRQ:
		rc = op_query_srq(c, req->obj.handle, resp);
		break;
	case DROCE_PROTO_OP_DESTROY_SRQ:
		rc = op_destroy_srq(c, req->obj.handle);
		break;
	case DROCE_PROTO_OP_CREATE_QP:
		rc = op_create_qp(c, req, resp, out_fds, out_nfds);
		break;
	case DROCE_PROTO_OP_MODIFY_QP:
		rc = op_modify_qp(c, req);
		break;
	case DROCE_PROTO_OP_QUERY_QP:
		rc = op_query_qp(c, req->obj.handle, resp);
		break;
	case DROCE_PROTO_OP_DESTROY_QP:
		rc = op_destroy_qp(c, req->obj.handle);
		break;
	case DROCE_PROTO_OP_CREATE_AH:
		rc = op_create_ah(c, req, resp);
		break;
	case DROCE_PROTO_OP_DESTROY_AH:
		rc = op_destroy_ah(c, req->obj.handle);
		break;
	default:
		rc = -EINVAL;
		break;
	}
done:
	if (rc == 1)
		return 1;
	if (rc != 0) {
		/* A failed request answers with its status only. */
		memset(resp, 0, sizeof(*resp));
		resp->op = op;
		resp->seq = req->seq;
		*out_nfds = 0;
	}
	resp->status = rc;
	return 0;
}

/* ---- Requests waiting for ARP ---- */

void
droced_client_resolved(struct droced_port *p, uint32_t ip, int status)
{
	struct droced_client *c;

	TAILQ_FOREACH(c, &droced.clients, next) {
		if (c->parked && !c->park_done && c->port == p && c->park_ip == ip) {
			c->park_done = true;
			c->park_status = status;
		}
	}
}

void
droced_client_unpark(struct droced_client *c, int status)
{
	struct droce_proto_resp resp;
	unsigned int nfds;
	int fds[1];

	c->parked = false;
	if (status == 0) {
		/* The neighbour is known now: run the request again, this time to the end. */
		if (droced_client_handle(c, &c->park_req, sizeof(c->park_req), NULL, 0, &resp, fds,
					 &nfds) == 1)
			return;
	} else {
		memset(&resp, 0, sizeof(resp));
		resp.op = c->park_req.op;
		resp.seq = c->park_req.seq;
		resp.status = -EHOSTUNREACH;
	}
	droced_loop_respond(c, &resp, NULL, 0);
	droced_loop_client_pause(c, false);
}
