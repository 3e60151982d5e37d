/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * A client's session, above its objects (layers.txt): HELLO (the region, the engine
 * domain, the tables), the end of the connection (droced_client_free releases everything,
 * QPs first, while the engines still run), the engines' events to the client, and the
 * queries any connection may make (devices, droce-ctl's status, QPs and views).
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_mempool.h>

#include "droced_loc.h"

/* ---- Connection ---- */

static int
region_create(struct droced_client *c)
{
	uint64_t size = (uint64_t)c->d->cfg.limits.region_mb * DROCED_MIB;
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
	uint32_t alive = c->pds.nb + c->mrs.nb + c->mws.nb + c->xrcds.nb + c->cqs.nb +
			 c->srqs.nb + c->qps.nb + c->nb_ahs;

	/* QPs first: they hold CQs and SRQs. */
	droced_qp_release_all(c);
	droced_srq_release_all(c);
	droced_cq_release_all(c);
	/* MRs and AHs go with the domain; the MR views only after no engine can use them. */
	if (c->dom != NULL)
		droce_engine_domain_destroy(c->dom);
	c->dom = NULL;
	droced_mr_release_all(c);
	droced_pd_release_all(c);
	free(c->arena);
	c->arena = NULL;
	if (c->region != NULL)
		munmap(c->region, c->region_size);
	c->region = NULL;
	c->evring = NULL;
	if (c->region_fd >= 0)
		close(c->region_fd);
	droced_notify_pipe_close(c->async_rfd, c->async_efd);
	c->region_fd = c->async_efd = c->async_rfd = -1;
	return alive;
}

void
droced_client_free(struct droced_client *c)
{
	droced_rdmacm_chan_free(c);
	droced_capture_release(c);
	if (client_release(c) != 0) {
		c->d->clients_torn_down++;
		DROCED_LOG(INFO, "client pid %d gone: its objects were torn down", (int)c->pid);
	}
	close(c->fd);
	free(c->answer);
	free(c);
}

/* ---- Events ---- */

void
droced_clients_port_event(struct droced_port *p, bool up)
{
	struct droced_client *c;

	TAILQ_FOREACH(c, &p->d->clients, next) {
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
			struct droced_cq *cq = droced_cq_get(c, ev.handle);

			/* 11.4.2.1: an overrun CQ takes its QPs to the error state. */
			if (cq != NULL)
				droce_engine_cq_error_qps(cq->cq);
		}
		droced_client_event_ring_put(c, ev.type, ev.handle);
		any = true;
	}
	if (any)
		droced_notify_kick(c->async_efd);
}

/* ---- Devices ---- */

static void
limits_fill(const struct droced *d, struct droce_proto_limits *l)
{
	const struct droced_limits *cl = &d->cfg.limits;

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

int
droced_session_query_ports(struct droced_client *c, struct droced_call *call)
{
	struct droce_proto_resp *resp = call->resp;
	uint32_t i;

	RTE_SET_USED(c);
	resp->ports.nb_ports = RTE_MIN(c->d->nb_ports, (uint32_t)DROCE_PROTO_MAX_PORTS);
	for (i = 0; i < resp->ports.nb_ports; i++)
		droced_port_info(&c->d->ports[i], &resp->ports.port[i]);
	return 0;
}

/* One port's NIC, counters and queues, for droce-ctl ports and queues. */
int
droced_session_query_port_detail(struct droced_client *c, struct droced_call *call)
{
	const struct droce_proto_req *req = call->req;

	if (req->query_port_detail.port >= c->d->nb_ports)
		return -EINVAL;
	droced_port_detail(&c->d->ports[req->query_port_detail.port], &call->resp->port_detail);
	return 0;
}

/* Every engine's QPs from start_qpn on, a page at a time, for droce-ctl qps. */
int
droced_session_query_qps(struct droced_client *c, struct droced_call *call)
{
	const struct droce_proto_req *req = call->req;
	struct droce_proto_resp *resp = call->resp;
	struct droce_engine_qp *qp = droce_engine_dev_qp_next(c->d->dev, req->query_qps.start_qpn);

	RTE_SET_USED(c);
	for (; qp != NULL; qp = droce_engine_dev_qp_next(c->d->dev, resp->qps.next_qpn)) {
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

int
droced_session_status(struct droced_client *self, struct droced_call *call)
{
	droced_status_get(self->d, &call->resp->stat);
	return 0;
}



int
droced_session_hello(struct droced_client *c, struct droced_call *call)
{
	const struct droce_proto_req *req = call->req;
	struct droce_proto_resp *resp = call->resp;
	int *out_fds = call->out_fds;
	unsigned int *out_nfds = call->out_nfds;
	const struct droced_limits *l = &c->d->cfg.limits;
	struct droce_engine_domain_conf dc;
	struct droced_port *p;
	int64_t off;
	uint32_t i;
	int rc;

	if (c->hello)
		return -EINVAL;
	if (req->hello.version != DROCE_PROTO_VERSION)
		return -EPROTO;
	if (req->hello.port >= c->d->nb_ports)
		return -EINVAL;
	p = &c->d->ports[req->hello.port];
	rc = region_create(c);
	if (rc != 0)
		goto fail;
	rc = -ENOMEM;
	c->arena = malloc(sizeof(*c->arena));
	c->ah_pd = calloc(l->max_ahs, sizeof(*c->ah_pd));
	c->db_used = calloc(c->d->nb_engines, sizeof(*c->db_used));
	if (c->arena == NULL || c->ah_pd == NULL || c->db_used == NULL)
		goto fail;
	rc = droce_shm_arena_init(c->arena, c->region, c->region_size, c->d->nb_engines);
	if (rc != 0)
		goto fail;
	off = droce_shm_arena_alloc(c->arena, sizeof(*c->evring), DROCE_SHM_CACHE_LINE);
	if (off < 0) {
		rc = (int)off;
		goto fail;
	}
	c->evring = droced_region_ptr(c, off);
	c->evring->port_state = p->link_up ? DROCE_PROTO_PORT_ACTIVE : DROCE_PROTO_PORT_DOWN;
	rc = droced_notify_pipe(&c->async_rfd, &c->async_efd);
	if (rc != 0)
		goto fail;
	memset(&dc, 0, sizeof(dc));
	dc.region = c->region;
	dc.region_size = c->region_size;
	/* MRs and MWs share the key table; index 0 is never used (key 0 never resolves). */
	dc.max_mrs = 2 * l->max_mrs + 1;
	dc.max_ahs = l->max_ahs;
	dc.max_events = DROCED_MAX_EVENTS;
	c->dom = droce_engine_domain_create(c->d->dev, &dc);
	if (c->dom == NULL) {
		rc = -rte_errno;
		goto fail;
	}
	droced_table_init(&c->pds, DROCED_MAX_PDS, false);
	droced_table_init(&c->mrs, l->max_mrs, false);
	droced_table_init(&c->mws, l->max_mrs, false);
	droced_table_init(&c->xrcds, DROCED_MAX_PDS, false);
	droced_table_init(&c->cqs, l->max_cqs, false);
	droced_table_init(&c->srqs, l->max_srqs, false);
	droced_table_init(&c->qps, l->max_qps, false);
	c->port = p;
	c->hello = true;
	c->d->clients_total++;

	resp->hello.version = DROCE_PROTO_VERSION;
	resp->hello.nb_engines = c->d->nb_engines;
	resp->hello.region_size = c->region_size;
	resp->hello.event_ring_off = (uint64_t)off;
	droced_port_info(p, &resp->hello.port);
	limits_fill(c->d, &resp->hello.limits);
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

/* ---- QUERY_VIEW: a view's rows, encoded for the socket (droce_shm_proto.h) ---- */

/* Room a row needs at least to be started on a page: a page holds whole rows only. */
#define VIEW_ROW_MIN	512

struct proto_sink {
	struct droced_view_sink s;	/* first */
	uint8_t *buf;			/* the records: after the answer's header */
	size_t len, cap;
	size_t row_off;			/* where the row in progress began */
	uint64_t row_key;
	uint32_t rows;
	bool overflow;			/* the row in progress did not fit */
	bool stopped;			/* a row was refused: ask again from row_key */
};

static void
rec_put(struct proto_sink *ps, uint8_t tag, const char *name, const void *v, size_t vlen)
{
	size_t nlen = name != NULL ? strlen(name) : 0;

	if (ps->overflow || nlen > UINT8_MAX || ps->len + 2 + nlen + vlen > ps->cap) {
		ps->overflow = true;
		return;
	}
	ps->buf[ps->len++] = tag;
	ps->buf[ps->len++] = (uint8_t)nlen;
	if (nlen != 0)		/* a ROW record has no name (memcpy from NULL is undefined) */
		memcpy(ps->buf + ps->len, name, nlen);
	ps->len += nlen;
	memcpy(ps->buf + ps->len, v, vlen);
	ps->len += vlen;
}

static void
rec_u64(struct proto_sink *ps, uint8_t tag, const char *name, uint64_t v)
{
	uint8_t le[8];
	unsigned int i;

	for (i = 0; i < sizeof(le); i++)
		le[i] = (uint8_t)(v >> (8 * i));
	rec_put(ps, tag, name, le, sizeof(le));
}

static bool
proto_row(struct droced_view_sink *s, uint64_t key)
{
	struct proto_sink *ps = (struct proto_sink *)s;

	if (ps->overflow || ps->cap - ps->len < VIEW_ROW_MIN) {
		/* The row in progress (or this one) goes to the next page, whole. */
		if (ps->overflow)
			ps->len = ps->row_off;
		else
			ps->row_key = key;
		ps->stopped = true;
		return false;
	}
	ps->row_off = ps->len;
	ps->row_key = key;
	ps->rows++;
	rec_u64(ps, DROCE_PROTO_VIEW_TAG_ROW, NULL, key);
	return true;
}

static void
proto_num(struct droced_view_sink *s, uint8_t tag, const char *name, uint64_t v,
	  const char *help)
{
	RTE_SET_USED(help);
	rec_u64((struct proto_sink *)s, tag, name, v);
}

static void
proto_text(struct droced_view_sink *s, const char *name, const char *v)
{
	struct proto_sink *ps = (struct proto_sink *)s;
	size_t n = strnlen(v, UINT16_MAX);
	uint8_t tmp[2 + 256];

	/* Text longer than 256 bytes (a command line) is cut there. */
	n = RTE_MIN(n, sizeof(tmp) - 2);
	tmp[0] = (uint8_t)n;
	tmp[1] = (uint8_t)(n >> 8);
	memcpy(tmp + 2, v, n);
	rec_put(ps, DROCE_PROTO_VIEW_TAG_LABEL, name, tmp, n + 2);
}

/*
 * A view's rows from start_key, as many whole rows as DROCE_PROTO_VIEW_MAX holds; the
 * answer is longer than a response, so it goes out as the client's long answer.
 */
int
droced_session_query_view(struct droced_client *c, struct droced_call *call)
{
	const struct droce_proto_req *req = call->req;
	struct droce_proto_view_answer *a;
	struct proto_sink ps = {
		.s = { .row = proto_row, .num = proto_num, .text = proto_text, .viewer = c->uid },
	};
	int rc;

	if (droced_view_name(req->query_view.view) == NULL)
		return -EINVAL;
	a = calloc(1, DROCE_PROTO_VIEW_MAX);
	if (a == NULL)
		return -ENOMEM;
	ps.buf = a->rows;
	ps.cap = DROCE_PROTO_VIEW_MAX - sizeof(*a);
	rc = droced_view_run(c->d, req->query_view.view, req->query_view.start_key, &ps.s);
	if (rc == 0 && ps.overflow) {
		/* The last row did not fit: it starts the next page. */
		ps.len = ps.row_off;
		ps.stopped = true;
	}
	if (rc < 0 || (ps.stopped && ps.len == 0)) {
		free(a);
		return rc < 0 ? rc : -E2BIG;	/* a row larger than a page: never */
	}
	a->len = (uint32_t)ps.len;
	a->more = ps.stopped;
	a->next_key = ps.stopped ? ps.row_key : 0;
	droced_client_answer(c, a, sizeof(*a) + ps.len);
	return 0;
}
