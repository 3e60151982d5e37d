/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * The rdma_cm side of droced's CM (droced_rdmacm_*): event channels, ids and what
 * librdmacm asks of them (the "rdma_cm" section of droce_shm_proto.h). A channel is a
 * client connection that opened with CM_OPEN; its ids are named by per-channel handles,
 * every one checked. Events wait in the channel's queue, one byte in its pipe each (bytes
 * the full pipe refused are owed and written on the tick, never blocking). Addresses,
 * ports, listeners and multicast joins follow Linux's cma.c; the connections themselves,
 * on the wire, are the IB CM side's (droced_ibcm.c). This file: the requests (the rows of
 * droced_dispatch.c), address resolution, listening, multicast, channels, the tick and
 * status; connecting is droced_rdmacm_conn.c's, ids and their events droced_rdmacm_id.c's.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_random.h>

#include "droced_rdmacm_loc.h"

static TAILQ_HEAD(, droced_rdmacm_chan) chans = TAILQ_HEAD_INITIALIZER(chans);

/* ---- Address resolution ---- */

/* The port for a destination: same IPv4 subnet as a port's address, else the first. */
static struct droced_port *
route_port(struct droced *d, const struct droce_proto_cm_addr *dst)
{
	uint32_t i;

	if (!rdmacm_addr_v4(dst)) {
		/* IPv6: the port with a GID sharing the longest prefix with dst. */
		struct droced_port *best = NULL;
		unsigned int best_bits = 0, bits;
		uint8_t gid[16];

		for (i = 0; i < d->nb_ports; i++)
			if (rdmacm_port_gid_v6(&d->ports[i], dst->addr, gid, &bits) &&
			    (best == NULL || bits > best_bits)) {
				best = &d->ports[i];
				best_bits = bits;
			}
		return best != NULL ? best : &d->ports[0];
	}
	for (i = 0; i < d->nb_ports; i++) {
		const struct droced_port *p = &d->ports[i];
		uint32_t a, b, mask;

		if (p->cfg->ipv4.len == 0)
			continue;
		memcpy(&a, p->cfg->ipv4.addr, 4);
		memcpy(&b, dst->addr + 12, 4);
		mask = htonl(p->cfg->ipv4.len >= 32 ? 0xFFFFFFFFu :
			     ~(0xFFFFFFFFu >> p->cfg->ipv4.len));
		if (((a ^ b) & mask) == 0)
			return &d->ports[i];
	}
	return &d->ports[0];
}

/*
 * The MAC of dgid: 0, -EAGAIN (ARP running), -EHOSTUNREACH. A multicast group's needs no
 * ARP (Linux's neighbour entry for one is NUD_NOARP): rdmacm_resolving to a group, as mckey and
 * rdma-core's multicast tests do before they join, succeeds at once.
 */
static int
id_neigh(struct droced_rdmacm_id *id)
{
	struct droced_port *own = rdmacm_addr_port(id->ch->c->d, &id->dst);
	int rc;

	if (droce_gid_is_multicast(id->dgid)) {
		droce_net_mcast_mac(id->dgid, id->dmac);
		return 0;
	}
	if (own != NULL) {
		memcpy(id->dmac, own->mac, 6);
		return 0;
	}
	rc = droced_neigh_ensure(id->port, id->dgid);
	if (rc != 0)
		return rc;
	rc = droce_net_gid_resolve(id->port->net, id->dgid, NULL, id->dmac, rte_get_tsc_cycles());
	return rc == 0 ? 0 : -EHOSTUNREACH;
}

static void
resolve_done(struct droced_rdmacm_id *id, int status)
{
	if (id->resolving)
		TAILQ_REMOVE(&rdmacm_resolving, id, rnext);
	id->resolving = false;
	if (status == 0) {
		id->state = ID_ADDR_RESOLVED;
		rdmacm_ev_simple(id, DROCE_PROTO_CM_EVENT_ADDR_RESOLVED, 0);
	} else {
		/* Linux goes back to ADDR_BOUND: the id may try again. */
		id->state = ID_ADDR_BOUND;
		rdmacm_ev_simple(id, DROCE_PROTO_CM_EVENT_ADDR_ERROR, status);
	}
}

static int
op_resolve_addr(struct droced_rdmacm_id *id, const struct droce_proto_req *req)
{
	const struct droce_proto_cm_addr *src = &req->cm_resolve_addr.src;
	struct droce_proto_cm_addr dst = req->cm_resolve_addr.dst;
	uint8_t gid[16];
	int rc;

	if (dst.family != AF_INET && dst.family != AF_INET6)
		return -EAFNOSUPPORT;
	if (rdmacm_addr_any(&dst))
		return -EINVAL;
	if (id->state == ID_IDLE) {
		struct droce_proto_cm_addr a;

		if (src->family != 0) {
			a = *src;
		} else {
			memset(&a, 0, sizeof(a));
			a.family = dst.family;
			if (dst.family == AF_INET)
				droce_gid_from_ipv4(a.addr, (const uint8_t[4]){ 0 });
		}
		rc = rdmacm_id_bind(id, &a);
		if (rc != 0)
			return rc;
	} else if (id->state != ID_ADDR_BOUND) {
		return -EINVAL;
	}
	if (id->port == NULL) {
		id->port = route_port(id->ch->c->d, &dst);
		rdmacm_port_gid0(id->port, gid, &id->sgid_index);
		/* An IPv4 destination from the port's IPv4 GID, an IPv6 one from an IPv6 GID. */
		if (rdmacm_addr_v4(&dst) && id->port->cfg->ipv4.len != 0) {
			droce_gid_from_ipv4(gid, id->port->cfg->ipv4.addr);
		} else if (!rdmacm_addr_v4(&dst)) {
			unsigned int bits;

			if (!rdmacm_port_gid_v6(id->port, dst.addr, gid, &bits)) {
				id->port = NULL;
				return -EADDRNOTAVAIL;
			}
		}
		rdmacm_id_set_sgid(id, gid);
		memcpy(id->src.addr, id->sgid, 16);
	}
	id->dst = dst;
	if (rdmacm_addr_loopback(&dst)) {
		/* Loopback reaches this port itself, as Linux's cma_bind_loopback. */
		memcpy(id->dgid, id->sgid, 16);
		memcpy(id->dst.addr, id->sgid, 16);
	} else {
		memcpy(id->dgid, dst.addr, 16);
	}
	id->path_mtu = droced_mtu_enum(id->port->cfg->mtu);
	id->state = ID_ADDR_QUERY;
	rc = id_neigh(id);
	if (rc == -EAGAIN) {
		id->resolving = true;
		id->resolve_deadline_ns = droced_now_ns() +
			(uint64_t)(req->cm_resolve_addr.timeout_ms ? req->cm_resolve_addr.timeout_ms :
				   DROCED_PARK_TIMEOUT_MS) * 1000000ull;
		TAILQ_INSERT_TAIL(&rdmacm_resolving, id, rnext);
		return 0;
	}
	resolve_done(id, rc);
	return 0;
}

void
droced_rdmacm_resolved(struct droced_port *p, uint32_t ip, int status)
{
	struct droced_rdmacm_id *id, *next;
	uint32_t want;
	int rc;

	for (id = TAILQ_FIRST(&rdmacm_resolving); id != NULL; id = next) {
		next = TAILQ_NEXT(id, rnext);
		if (id->port != p || droce_net_gid_to_ipv4(id->dgid, &want) != 0 || want != ip)
			continue;
		rc = status == 0 ? id_neigh(id) : -EHOSTUNREACH;
		/* Another address on the way (IPv6 has no ARP): the tick's timeout ends it. */
		if (rc != -EAGAIN)
			resolve_done(id, rc);
	}
}

/* ---- Listening and incoming requests ---- */

static int
op_listen(struct droced_rdmacm_id *id, int backlog)
{
	int rc;

	if (id->state == ID_LISTEN) {
		id->backlog = backlog > 0 && backlog < CM_MAX_BACKLOG ? backlog : CM_MAX_BACKLOG;
		return 0;
	}
	if (id->state == ID_IDLE) {
		struct droce_proto_cm_addr a;

		memset(&a, 0, sizeof(a));
		a.family = AF_INET6;
		rc = rdmacm_id_bind(id, &a);
		if (rc != 0)
			return rc;
	}
	if (id->state != ID_ADDR_BOUND)
		return -EINVAL;
	/* A listener shares its port with nobody, reuseaddr or not (cma_check_port). */
	id->state = ID_LISTEN;
	if (rdmacm_bind_conflict(id, id->src.port)) {
		id->state = ID_ADDR_BOUND;
		return -EADDRINUSE;
	}
	/* ucma: 0, negative or too many means the most. */
	id->backlog = backlog > 0 && backlog < CM_MAX_BACKLOG ? backlog : CM_MAX_BACKLOG;
	return 0;
}

static struct droced_rdmacm_id *
find_listener(uint16_t ps, uint16_t port, const uint8_t addr[16], bool *any)
{
	struct droced_rdmacm_id *id;

	*any = false;
	TAILQ_FOREACH(id, &rdmacm_bound_ids, lnext) {
		if (id->state != ID_LISTEN || id->ps != ps || ntohs(id->src.port) != port)
			continue;
		*any = true;
		if (rdmacm_addr_any(&id->src) || memcmp(id->src.addr, addr, 16) == 0)
			return id;
	}
	return NULL;
}

struct droced_rdmacm_id *
droced_rdmacm_req_listener(struct droced_port *p, const uint8_t dgid[16],
			   const struct droce_cm_msg *m, uint16_t *reject)
{
	bool sidr = m->attr_id == DROCE_CM_ATTR_SIDR_REQ;
	uint64_t sid = sidr ? m->sidr_req.service_id : m->req.service_id;
	const uint8_t *pdata = sidr ? m->sidr_req.private_data : m->req.private_data;
	size_t plen = sidr ? DROCE_CM_SIDR_REQ_PDATA_LEN : DROCE_CM_REQ_PDATA_LEN;
	struct droce_cm_ip_hdr h;
	struct droced_rdmacm_id *l, *id;
	bool any;

	*reject = DROCE_CM_REJ_INVALID_SERVICE_ID;
	if ((sid >> 32) != 0 || rdmacm_ps_index(droce_cm_service_id_ps(sid)) < 0)
		return NULL;
	if (droce_cm_ip_hdr_parse(pdata, plen, &h) != DROCE_CM_OK) {
		/* Linux: the CM has a listener, rdma_cm refuses the header (REJ 28). */
		find_listener(droce_cm_service_id_ps(sid), droce_cm_service_id_port(sid), dgid, &any);
		*reject = any ? DROCE_CM_REJ_CONSUMER_DEFINED : DROCE_CM_REJ_INVALID_SERVICE_ID;
		return NULL;
	}
	l = find_listener(droce_cm_service_id_ps(sid), droce_cm_service_id_port(sid), h.dst_addr,
			  &any);
	if (l == NULL) {
		*reject = any ? DROCE_CM_REJ_CONSUMER_DEFINED : DROCE_CM_REJ_INVALID_SERVICE_ID;
		return NULL;
	}
	if (!sidr && l->qp_type == DROCE_SHM_QPT_UD) {
		*reject = DROCE_CM_REJ_CONSUMER_DEFINED;
		return NULL;
	}
	/* Backlog full: dropped without a REJ, so the peer's retry may get in (Linux -ENOMEM). */
	*reject = 0;
	if (l->pending >= l->backlog)
		return NULL;
	id = rdmacm_id_new(l->ch, l->uctx, l->ps, sidr ? DROCE_SHM_QPT_UD :
		    (m->req.transport_service_type == 1 ? DROCE_SHM_QPT_UC : DROCE_SHM_QPT_RC));
	if (id == NULL)
		return NULL;
	id->listener = l;
	l->pending++;
	id->port = p;
	rdmacm_id_set_sgid(id, dgid);
	/* The peer's GID: the REQ's path names it; a SIDR_REQ has only the CMA header's. */
	memcpy(id->dgid, sidr ? h.src_addr : m->req.primary.local_gid, 16);
	id->src.family = h.ip_version == 4 ? AF_INET : AF_INET6;
	id->src.port = l->src.port;
	memcpy(id->src.addr, h.dst_addr, 16);
	id->dst.family = id->src.family;
	id->dst.port = htons(h.port);
	memcpy(id->dst.addr, h.src_addr, 16);
	id->tos = l->tos;
	id->route = true;
	id->state = ID_CONNECT;
	if (!sidr) {
		const struct droce_cm_req *r = &m->req;

		id->remote_qpn = r->local_qpn;
		id->remote_psn = r->starting_psn;
		id->path_mtu = RTE_MIN(r->path_mtu, droced_mtu_enum(p->cfg->mtu));
		/* cm_req_handler: what the peer offers, seen from here. */
		id->responder_resources = r->initiator_depth;
		id->initiator_depth = r->responder_resources;
		id->retry_count = r->retry_count;
		id->rnr_retry_count = r->rnr_retry_count;
		id->local_ack_timeout = r->primary.local_ack_timeout;
	}
	return id;
}

/* ---- Multicast (rdma_join_multicast, rdma_leave_multicast) ---- */

/*
 * A join, as Linux's rdma_join_multicast and cma_iboe_join_multicast on a RoCEv2 port: a
 * UD id with a device, bound or its address resolved (not while rdmacm_resolving, not after the
 * route), and a group of its source's IP version (a RoCEv2 packet has one); the MGID is the
 * group's address, IPv4-mapped for IPv4 (Linux refuses IPv6 groups on RoCEv2 with
 * ENOTSUPP: droce takes them). Nothing on the wire answers a RoCE join: the event is queued
 * at once, behind the id's earlier events. It carries what ib_init_ah_from_mcmember makes
 * of Linux's record: the MGID, the id's source GID, hop limit 64, traffic class, SL and
 * flow label 0; QPN 0xFFFFFF and the id's Q_Key. The QP is librdmacm's to attach (the
 * port announces the group then: droced_client.c).
 */
static int
op_join(struct droced_rdmacm_id *id, const struct droce_proto_req *req)
{
	const struct droce_proto_cm_addr *a = &req->cm_mcast.addr;
	struct cm_mcast *mc;
	struct cm_event *e;

	if (req->cm_mcast.flags != DROCE_PROTO_CM_MC_FULLMEMBER &&
	    req->cm_mcast.flags != DROCE_PROTO_CM_MC_SENDONLY_FULLMEMBER)
		return -EINVAL;
	if (id->port == NULL || (id->state != ID_ADDR_BOUND && id->state != ID_ADDR_RESOLVED) ||
	    id->qp_type != DROCE_SHM_QPT_UD)
		return -EINVAL;
	if (a->family != AF_INET && a->family != AF_INET6)
		return -EINVAL;
	if (!droce_gid_is_multicast(a->addr))
		return -EINVAL;
	if (rdmacm_addr_v4(a) != droce_gid_is_ipv4(id->sgid))
		return -EINVAL;
	if (id->ch->nb_mcast >= CM_MAX_MCAST)
		return -ENOMEM;
	mc = calloc(1, sizeof(*mc));
	e = rdmacm_ev_new(id, DROCE_PROTO_CM_EVENT_MULTICAST_JOIN, 0);
	if (mc == NULL || e == NULL) {
		free(mc);
		free(e);
		return -ENOMEM;
	}
	mc->uid = req->cm_mcast.uid;
	memcpy(mc->mgid, a->addr, 16);
	LIST_INSERT_HEAD(&id->mcast, mc, next);
	id->nb_mcast++;
	id->ch->nb_mcast++;
	e->ev.mc = mc->uid;
	e->ev.ud.ah.is_global = 1;
	memcpy(e->ev.ud.ah.dgid, mc->mgid, 16);
	e->ev.ud.ah.sgid_index = id->sgid_index;
	e->ev.ud.ah.hop_limit = CM_MCAST_HOP_LIMIT;
	e->ev.ud.ah.port_num = 1;
	e->ev.ud.dest_qp_num = DROCE_PROTO_CM_MC_QPN;
	e->ev.ud.qkey = DROCE_PROTO_CM_UDP_QKEY;
	e->ev.conn.qp_type = DROCE_SHM_QPT_UD;
	rdmacm_ev_queue(id->ch, e);
	return 0;
}

/* rdma_leave_multicast: the join of that uid goes, with its events not yet handed out. */
static int
op_leave(struct droced_rdmacm_id *id, uint32_t uid)
{
	struct cm_mcast *mc;

	LIST_FOREACH(mc, &id->mcast, next)
		if (mc->uid == uid)
			break;
	if (mc == NULL)
		return -ENOENT;	/* ucma's answer for a join it does not know */
	rdmacm_ev_drop_mc(id, mc);
	LIST_REMOVE(mc, next);
	id->nb_mcast--;
	id->ch->nb_mcast--;
	free(mc);
	return 0;
}

/* ---- Channels ---- */

static struct droced_rdmacm_chan *
chan_by_token(uint32_t token)
{
	struct droced_rdmacm_chan *ch;

	TAILQ_FOREACH(ch, &chans, next)
		if (ch->token == token)
			return ch;
	return NULL;
}

static int
op_open(struct droced_client *c, const struct droce_proto_req *req,
	struct droce_proto_resp *resp, int *out_fds, unsigned int *out_nfds)
{
	struct droced_rdmacm_chan *ch;
	int p[2];

	if (c->hello || c->cm != NULL)
		return -EPROTO;
	if (req->cm_open.version != DROCE_PROTO_CM_VERSION)
		return -EPROTO;
	ch = calloc(1, sizeof(*ch));
	if (ch == NULL)
		return -ENOMEM;
	if (pipe2(p, O_CLOEXEC) != 0 || fcntl(p[1], F_SETFL, O_NONBLOCK) != 0) {
		free(ch);
		return -ENOMEM;
	}
	ch->rfd = p[0];
	ch->efd = p[1];
	droced_table_init(&ch->ids, CM_MAX_IDS, true);
	TAILQ_INIT(&ch->events);
	/* Tokens are random (and unique): another process cannot guess one to migrate from. */
	do
		ch->token = (uint32_t)rte_rand();
	while (ch->token == 0 || chan_by_token(ch->token) != NULL);
	ch->c = c;
	c->cm = ch;
	TAILQ_INSERT_TAIL(&chans, ch, next);
	resp->cm_open.version = DROCE_PROTO_CM_VERSION;
	resp->cm_open.token = ch->token;
	out_fds[0] = ch->rfd;
	*out_nfds = 1;
	return 0;
}

void
droced_rdmacm_chan_free(struct droced_client *c)
{
	struct droced_rdmacm_chan *ch = c->cm;
	struct cm_event *e;
	uint32_t h;

	if (ch == NULL)
		return;
	/* Listeners first: their unreported requests go with them, rejected. */
	for (h = 0; h < ch->ids.cap; h++)
		if (rdmacm_id_get(ch, h) != NULL && rdmacm_id_get(ch, h)->state == ID_LISTEN)
			rdmacm_id_destroy(rdmacm_id_get(ch, h));
	for (h = 0; h < ch->ids.cap; h++)
		if (rdmacm_id_get(ch, h) != NULL)
			rdmacm_id_destroy(rdmacm_id_get(ch, h));
	while ((e = TAILQ_FIRST(&ch->events)) != NULL) {
		TAILQ_REMOVE(&ch->events, e, next);
		free(e);
	}
	TAILQ_REMOVE(&chans, ch, next);
	close(ch->rfd);
	close(ch->efd);
	droced_table_free(&ch->ids);
	free(ch);
	c->cm = NULL;
}

static int
op_get_event(struct droced_rdmacm_chan *ch, struct droce_proto_resp *resp)
{
	struct cm_event *e = TAILQ_FIRST(&ch->events);

	if (e == NULL)
		return -EAGAIN;
	TAILQ_REMOVE(&ch->events, e, next);
	ch->nb_events--;
	resp->cm_event = e->ev;
	resp->cm_event.id = e->id->handle;
	/* The id as CM_QUERY would show it now: librdmacm needs no round trip of its own. */
	switch (e->ev.event) {
	case DROCE_PROTO_CM_EVENT_ADDR_RESOLVED:
	case DROCE_PROTO_CM_EVENT_ROUTE_RESOLVED:
	case DROCE_PROTO_CM_EVENT_CONNECT_REQUEST:
		rdmacm_id_info(e->id, &resp->cm_event.info);
		resp->cm_event.flags |= DROCE_PROTO_CM_EVENT_F_INFO;
		break;
	default:
		break;
	}
	if (e->ev.event == DROCE_PROTO_CM_EVENT_CONNECT_REQUEST && e->id->listener != NULL) {
		/* Handed out: the new id is the application's now, and leaves the backlog. */
		e->id->listener->pending--;
		e->id->listener = NULL;
	}
	free(e);
	return 0;
}

static int
op_migrate(struct droced_rdmacm_chan *ch, const struct droce_proto_req *req,
	   struct droce_proto_resp *resp)
{
	struct droced_rdmacm_chan *from = chan_by_token(req->cm_migrate.from_channel);
	struct droced_rdmacm_id *id;
	struct cm_event *e, *next;
	uint32_t old;

	if (from == NULL)
		return -EINVAL;
	/* The token is a capability, and only between processes of one user. */
	if (from->c->uid != ch->c->uid)
		return -EPERM;
	id = rdmacm_id_get(from, req->cm_migrate.id);
	if (id == NULL || id->listener != NULL)
		return -EINVAL;
	if (from == ch) {
		resp->cm_id.id = id->handle;
		return 0;
	}
	old = id->handle;
	if (rdmacm_id_table_add(ch, id) != 0) {
		id->ch = from;
		id->handle = old;
		return -ENOMEM;
	}
	droced_table_del(&from->ids, old);
	from->nb_mcast -= id->nb_mcast;
	ch->nb_mcast += id->nb_mcast;
	/* Its events follow it, each with a byte in the new pipe (the old ones read -EAGAIN). */
	for (e = TAILQ_FIRST(&from->events); e != NULL; e = next) {
		next = TAILQ_NEXT(e, next);
		if (e->id != id)
			continue;
		TAILQ_REMOVE(&from->events, e, next);
		from->nb_events--;
		TAILQ_INSERT_TAIL(&ch->events, e, next);
		ch->nb_events++;
		ch->owed++;
	}
	rdmacm_pipe_flush(ch);
	resp->cm_id.id = id->handle;
	return 0;
}

/* ---- The requests (droced_dispatch.c's table names these) ---- */

struct droced_rdmacm_id *
droced_rdmacm_id_lookup(const struct droced_client *c, uint32_t handle)
{
	return rdmacm_id_get(c->cm, handle);
}

int
droced_rdmacm_open(struct droced_client *c, struct droced_call *call)
{
	return op_open(c, call->req, call->resp, call->out_fds, call->out_nfds);
}

int
droced_rdmacm_create_id(struct droced_client *c, struct droced_call *call)
{
	const struct droce_proto_req *req = call->req;
	uint16_t ps = (uint16_t)req->cm_create_id.ps;
	uint32_t qpt = req->cm_create_id.qp_type;
	struct droced_rdmacm_id *id;

	if (req->cm_create_id.ps > UINT16_MAX || rdmacm_ps_index(ps) < 0)
		return -EINVAL;
	/* ucma_get_qp_type: TCP is RC, UDP and IPoIB are UD, IB takes what it is given. */
	if (ps == DROCE_PROTO_CM_PS_TCP)
		qpt = DROCE_SHM_QPT_RC;
	else if (ps == DROCE_PROTO_CM_PS_UDP || ps == DROCE_PROTO_CM_PS_IPOIB)
		qpt = DROCE_SHM_QPT_UD;
	else if (qpt != DROCE_SHM_QPT_RC && qpt != DROCE_SHM_QPT_UC && qpt != DROCE_SHM_QPT_UD)
		return -EINVAL;
	id = rdmacm_id_new(c->cm, req->cm_create_id.uctx, ps, (uint8_t)qpt);
	if (id == NULL)
		return -ENOMEM;
	call->resp->cm_id.id = id->handle;
	return 0;
}

int
droced_rdmacm_get_event(struct droced_client *c, struct droced_call *call)
{
	return op_get_event(c->cm, call->resp);
}

int
droced_rdmacm_migrate(struct droced_client *c, struct droced_call *call)
{
	return op_migrate(c->cm, call->req, call->resp);
}

int
droced_rdmacm_destroy_id(struct droced_client *c, struct droced_call *call)
{
	RTE_SET_USED(c);
	rdmacm_id_destroy(call->cm_id);
	return 0;
}

int
droced_rdmacm_bind(struct droced_client *c, struct droced_call *call)
{
	struct droced_rdmacm_id *id = call->cm_id;
	int rc;

	RTE_SET_USED(c);
	if (id->state != ID_IDLE)
		return -EINVAL;
	rc = rdmacm_id_bind(id, &call->req->cm_bind.addr);
	if (rc == 0)
		rdmacm_id_info(id, &call->resp->cm_query);
	return rc;
}

int
droced_rdmacm_resolve_addr(struct droced_client *c, struct droced_call *call)
{
	RTE_SET_USED(c);
	return op_resolve_addr(call->cm_id, call->req);
}

int
droced_rdmacm_resolve_route(struct droced_client *c, struct droced_call *call)
{
	struct droced_rdmacm_id *id = call->cm_id;

	RTE_SET_USED(c);
	if (id->state != ID_ADDR_RESOLVED)
		return -EINVAL;
	id->state = ID_ROUTE_RESOLVED;
	id->route = true;
	rdmacm_ev_simple(id, DROCE_PROTO_CM_EVENT_ROUTE_RESOLVED, 0);
	return 0;
}

int
droced_rdmacm_query(struct droced_client *c, struct droced_call *call)
{
	RTE_SET_USED(c);
	rdmacm_id_info(call->cm_id, &call->resp->cm_query);
	return 0;
}

int
droced_rdmacm_listen(struct droced_client *c, struct droced_call *call)
{
	RTE_SET_USED(c);
	return op_listen(call->cm_id, call->req->cm_listen.backlog);
}

int
droced_rdmacm_connect(struct droced_client *c, struct droced_call *call)
{
	RTE_SET_USED(c);
	return rdmacm_op_connect(call->cm_id, &call->req->cm_conn.conn, call->req->cm_conn.flags);
}

int
droced_rdmacm_accept(struct droced_client *c, struct droced_call *call)
{
	RTE_SET_USED(c);
	return rdmacm_op_accept(call->cm_id, &call->req->cm_conn.conn, call->req->cm_conn.flags,
			 call->resp);
}

int
droced_rdmacm_establish(struct droced_client *c, struct droced_call *call)
{
	RTE_SET_USED(c);
	return rdmacm_op_establish(call->cm_id);
}

int
droced_rdmacm_reject(struct droced_client *c, struct droced_call *call)
{
	RTE_SET_USED(c);
	return rdmacm_op_reject(call->cm_id, call->req);
}

int
droced_rdmacm_disconnect(struct droced_client *c, struct droced_call *call)
{
	RTE_SET_USED(c);
	return rdmacm_op_disconnect(call->cm_id);
}

int
droced_rdmacm_init_qp_attr(struct droced_client *c, struct droced_call *call)
{
	RTE_SET_USED(c);
	if (call->req->cm_init_qp_attr.qp_state == DROCE_PROTO_CM_QPS_CONNECT)
		return rdmacm_op_init_qp_attrs(call->cm_id, call->resp->cm_qp_attrs);
	return rdmacm_op_init_qp_attr(call->cm_id, call->req->cm_init_qp_attr.qp_state,
			       &call->resp->cm_qp_attr);
}

int
droced_rdmacm_set_option(struct droced_client *c, struct droced_call *call)
{
	RTE_SET_USED(c);
	return rdmacm_op_set_option(call->cm_id, call->req->cm_set_option.name,
			     call->req->cm_set_option.value);
}

int
droced_rdmacm_notify(struct droced_client *c, struct droced_call *call)
{
	RTE_SET_USED(c);
	return rdmacm_op_notify(call->cm_id, call->req->cm_notify.event);
}

int
droced_rdmacm_join_mcast(struct droced_client *c, struct droced_call *call)
{
	RTE_SET_USED(c);
	return op_join(call->cm_id, call->req);
}

int
droced_rdmacm_leave_mcast(struct droced_client *c, struct droced_call *call)
{
	RTE_SET_USED(c);
	return op_leave(call->cm_id, call->req->cm_mcast.uid);
}

/* ---- Time, shutdown, status ---- */

void
droced_rdmacm_tick(uint64_t now_ns)
{
	struct droced_rdmacm_id *id, *next;
	struct droced_rdmacm_chan *ch;

	for (id = TAILQ_FIRST(&rdmacm_resolving); id != NULL; id = next) {
		next = TAILQ_NEXT(id, rnext);
		if (now_ns >= id->resolve_deadline_ns)
			resolve_done(id, -ETIMEDOUT);
	}
	droced_ibcm_conn_timers(now_ns);
	TAILQ_FOREACH(ch, &chans, next)
		if (ch->owed != 0)
			rdmacm_pipe_flush(ch);
}

void
droced_rdmacm_shutdown(struct droced *d)
{
	struct droced_rdmacm_chan *ch;
	char line[256];
	size_t n;
	uint32_t h;

	n = (size_t)snprintf(line, sizeof(line), "QP1: %" PRIu64 " CM MADs in, %" PRIu64
			     " out (%" PRIu64 " to ourselves, %" PRIu64 " not sent); dropped:",
			     d->gsi.rx_mads, d->gsi.tx_mads, d->gsi.tx_local,
			     d->gsi.tx_drop);
	for (h = 0; h < DROCED_GSI_BAD_COUNT && n < sizeof(line); h++)
		if (d->gsi.rx_bad[h] != 0)
			n += (size_t)snprintf(line + n, sizeof(line) - n, " %s %" PRIu64,
					      droced_gsi_bad_names[h], d->gsi.rx_bad[h]);
	DROCED_LOG(NOTICE, "%s", line);

	TAILQ_FOREACH(ch, &chans, next)
		for (h = 0; h < ch->ids.cap; h++)
			if (rdmacm_id_get(ch, h) != NULL && rdmacm_id_get(ch, h)->port != NULL)
				rdmacm_ev_simple(rdmacm_id_get(ch, h), DROCE_PROTO_CM_EVENT_DEVICE_REMOVAL, 0);
}

void
droced_rdmacm_status(const struct droced *d, struct droce_proto_status *st)
{
	const struct droced_rdmacm_chan *ch;
	const struct droced_rdmacm_id *id;
	unsigned int i;

	TAILQ_FOREACH(ch, &chans, next)
		st->cm_channels++;
	st->cm_ids = rdmacm_nb_ids;
	TAILQ_FOREACH(id, &rdmacm_bound_ids, lnext)
		st->cm_listeners += id->state == ID_LISTEN;
	st->cm_conns = droced_ibcm_conn_count();
	st->cm_rx_mads = d->gsi.rx_mads;
	st->cm_tx_mads = d->gsi.tx_mads;
	for (i = 0; i < DROCED_GSI_BAD_COUNT; i++)
		st->cm_rx_bad += d->gsi.rx_bad[i];
	TAILQ_FOREACH(ch, &chans, next)
		for (i = 0; i < ch->ids.cap; i++)
			if (rdmacm_id_get(ch, i) != NULL)
				st->cm_id_state[rdmacm_id_get(ch, i)->state]++;
	st->cm_qp_moves = rdmacm_qp_moves;
	st->cm_qp_move_fallbacks = rdmacm_qp_move_fallbacks;
}

int
droced_rdmacm_id_next(const struct droced_client *c, uint32_t *handle,
		      struct droced_rdmacm_id_view *v)
{
	const struct droced_rdmacm_id *id;
	const struct droce_cm_conn *sm;

	if (c->cm == NULL)
		return -ENOENT;
	id = droced_table_next(&c->cm->ids, handle);
	if (id == NULL)
		return -ENOENT;
	memset(v, 0, sizeof(*v));
	v->handle = id->handle;
	v->state = id->state;
	v->ps = id->ps;
	v->qp_type = id->qp_type;
	v->port = id->port != NULL ? id->port->index : DROCE_PROTO_NO_HANDLE;
	v->src = id->src;
	v->dst = id->dst;
	v->qpn = id->qpn;
	v->remote_qpn = id->remote_qpn;
	v->backlog = id->backlog;
	v->pending = id->pending;
	v->nb_mcast = id->nb_mcast;
	if (id->conn != NULL) {
		sm = droced_ibcm_conn_sm(id->conn);
		v->conn = droce_cm_state_name(sm->state);
		v->local_comm_id = sm->local_id;
		v->remote_comm_id = sm->remote_id;
	}
	return 0;
}
