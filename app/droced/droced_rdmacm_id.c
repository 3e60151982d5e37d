/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * The rdma_cm side's ids (droced_rdmacm_loc.h): their table in the channel, their events
 * and the channel's pipe, binding to ports as Linux's cma_get_port and cma_check_port
 * do, and the addresses and GIDs they are given.
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

struct rdmacm_id_list rdmacm_bound_ids = TAILQ_HEAD_INITIALIZER(rdmacm_bound_ids);
struct rdmacm_id_list rdmacm_resolving = TAILQ_HEAD_INITIALIZER(rdmacm_resolving);
uint32_t rdmacm_nb_ids;
static uint16_t port_users[CM_PS_COUNT][65536];
static uint32_t next_port;
static uint64_t events_lost;	/* past CM_MAX_EVENTS (a channel that never reads) */

/* ---- Small helpers ---- */

/* lib/cm's port spaces (the service IDs on the wire) are the protocol's (rdma-core's). */
_Static_assert(DROCE_CM_PS_IPOIB == DROCE_PROTO_CM_PS_IPOIB, "port space");
_Static_assert(DROCE_CM_PS_IB == DROCE_PROTO_CM_PS_IB, "port space");
_Static_assert(DROCE_CM_PS_TCP == DROCE_PROTO_CM_PS_TCP, "port space");
_Static_assert(DROCE_CM_PS_UDP == DROCE_PROTO_CM_PS_UDP, "port space");

int
rdmacm_ps_index(uint16_t ps)
{
	switch (ps) {
	case DROCE_PROTO_CM_PS_TCP: return 0;
	case DROCE_PROTO_CM_PS_UDP: return 1;
	case DROCE_PROTO_CM_PS_IB: return 2;
	case DROCE_PROTO_CM_PS_IPOIB: return 3;
	default: return -1;
	}
}

bool
rdmacm_addr_any(const struct droce_proto_cm_addr *a)
{
	static const uint8_t zero[16];

	if (memcmp(a->addr, zero, 16) == 0)
		return true;
	return droce_gid_is_ipv4(a->addr) && memcmp(a->addr + DROCE_GID_V4_OFF, zero, 4) == 0;
}

bool
rdmacm_addr_v4(const struct droce_proto_cm_addr *a)
{
	return droce_gid_is_ipv4(a->addr);
}

bool
rdmacm_addr_loopback(const struct droce_proto_cm_addr *a)
{
	static const uint8_t v6_lo[16] = { [15] = 1 };

	return (rdmacm_addr_v4(a) && a->addr[12] == 127) || memcmp(a->addr, v6_lo, 16) == 0;
}

/* The port owning address a (its IPv4 address or one of its GIDs), or NULL. */
struct droced_port *
rdmacm_addr_port(struct droced *d, const struct droce_proto_cm_addr *a)
{
	uint32_t i;

	for (i = 0; i < d->nb_ports; i++) {
		struct droced_port *p = &d->ports[i];

		if (p->net != NULL && droce_net_gid_find(p->net, a->addr) >= 0)
			return p;
	}
	return NULL;
}

void
rdmacm_port_gid0(const struct droced_port *p, uint8_t gid[16], uint8_t *index)
{
	uint32_t i;

	for (i = 0; i < p->nb_gids; i++) {
		if (p->gid_valid[i]) {
			memcpy(gid, p->gids[i], 16);
			*index = (uint8_t)i;
			return;
		}
	}
	memset(gid, 0, 16);
	*index = 0;
}

/* Leading bits a and b share. */
static unsigned int
gid_common_bits(const uint8_t a[16], const uint8_t b[16])
{
	unsigned int i, n = 0;

	for (i = 0; i < 16 && a[i] == b[i]; i++)
		n += 8;
	if (i < 16)
		n += (unsigned int)__builtin_clz((unsigned int)(a[i] ^ b[i]) << 24);
	return n;
}

/*
 * The port's IPv6 GID to reach an IPv6 dst from (not an IPv4-mapped one: a RoCEv2 packet
 * has one IP version): the one sharing the longest prefix with dst, RFC 6724's last rule,
 * so a link-local destination gets the link-local GID. false (and *bits 0) when the port
 * has none.
 */
bool
rdmacm_port_gid_v6(const struct droced_port *p, const uint8_t dst[16], uint8_t gid[16],
	    unsigned int *bits)
{
	bool found = false;
	uint32_t i;

	*bits = 0;
	for (i = 0; i < p->nb_gids; i++) {
		unsigned int n;

		if (!p->gid_valid[i] || droce_gid_is_ipv4(p->gids[i]))
			continue;
		n = gid_common_bits(p->gids[i], dst);
		if (!found || n > *bits) {
			memcpy(gid, p->gids[i], 16);
			*bits = n;
			found = true;
		}
	}
	return found;
}

void
rdmacm_id_set_sgid(struct droced_rdmacm_id *id, const uint8_t gid[16])
{
	int k = droce_net_gid_find(id->port->net, gid);

	memcpy(id->sgid, gid, 16);
	id->sgid_index = k < 0 ? 0 : (uint8_t)k;
}

/* ---- Events and the pipe ---- */

void
rdmacm_pipe_flush(struct droced_rdmacm_chan *ch)
{
	static const uint8_t ones[CM_PIPE_CHUNK] = { 1 };

	while (ch->owed != 0) {
		ssize_t n = write(ch->efd, ones, RTE_MIN(ch->owed, (uint64_t)CM_PIPE_CHUNK));

		if (n <= 0) {
			/* EPIPE: nobody reads any more; EAGAIN: the tick writes the rest. */
			if (n < 0 && errno == EPIPE)
				ch->owed = 0;
			return;
		}
		ch->owed -= (uint64_t)n;
	}
}

struct cm_event *
rdmacm_ev_new(struct droced_rdmacm_id *id, uint32_t type, int32_t status)
{
	struct cm_event *e = calloc(1, sizeof(*e));

	if (e == NULL)
		return NULL;
	e->id = id;
	e->ev.event = type;
	e->ev.status = status;
	e->ev.uctx = id->uctx;
	e->ev.listen_id = DROCE_PROTO_NO_HANDLE;
	return e;
}

void
rdmacm_ev_queue(struct droced_rdmacm_chan *ch, struct cm_event *e)
{
	if (e == NULL)
		return;
	if (ch->nb_events >= CM_MAX_EVENTS) {
		events_lost++;
		free(e);
		return;
	}
	TAILQ_INSERT_TAIL(&ch->events, e, next);
	ch->nb_events++;
	ch->owed++;
	rdmacm_pipe_flush(ch);
}

void
rdmacm_ev_simple(struct droced_rdmacm_id *id, uint32_t type, int32_t status)
{
	rdmacm_ev_queue(id->ch, rdmacm_ev_new(id, type, status));
}

static bool
ev_mcast(const struct cm_event *e)
{
	return e->ev.event == DROCE_PROTO_CM_EVENT_MULTICAST_JOIN ||
	       e->ev.event == DROCE_PROTO_CM_EVENT_MULTICAST_ERROR;
}

/*
 * Drops the queued events of id, or only those of its join mc (its bytes stay: CM_GET_EVENT
 * answers -EAGAIN for them).
 */
void
rdmacm_ev_drop_mc(struct droced_rdmacm_id *id, const struct cm_mcast *mc)
{
	struct cm_event *e, *next;

	for (e = TAILQ_FIRST(&id->ch->events); e != NULL; e = next) {
		next = TAILQ_NEXT(e, next);
		if (e->id != id || (mc != NULL && (!ev_mcast(e) || e->ev.mc != mc->uid)))
			continue;
		TAILQ_REMOVE(&id->ch->events, e, next);
		id->ch->nb_events--;
		free(e);
	}
}

static void
ev_drop(struct droced_rdmacm_id *id)
{
	rdmacm_ev_drop_mc(id, NULL);
}

/* ---- Ids ---- */

struct droced_rdmacm_id *
rdmacm_id_get(const struct droced_rdmacm_chan *ch, uint32_t handle)
{
	return droced_table_get(&ch->ids, handle);
}

int
rdmacm_id_table_add(struct droced_rdmacm_chan *ch, struct droced_rdmacm_id *id)
{
	uint32_t h;
	int rc = droced_table_add(&ch->ids, id, &h);

	if (rc != 0)
		return rc;
	id->ch = ch;
	id->handle = h;
	return 0;
}

static void
id_table_del(struct droced_rdmacm_id *id)
{
	droced_table_del(&id->ch->ids, id->handle);
}

struct droced_rdmacm_id *
rdmacm_id_new(struct droced_rdmacm_chan *ch, uint64_t uctx, uint16_t ps, uint8_t qp_type)
{
	struct droced_rdmacm_id *id = calloc(1, sizeof(*id));

	if (id == NULL || rdmacm_id_table_add(ch, id) != 0) {
		free(id);
		return NULL;
	}
	id->uctx = uctx;
	id->ps = ps;
	id->qp_type = qp_type;
	id->state = ID_IDLE;
	LIST_INIT(&id->mcast);
	/* Linux's __rdma_create_id: a random 24-bit starting PSN per id. */
	id->psn = (uint32_t)rte_rand() & DROCE_SHM_PSN_MAX;
	id->local_ack_timeout = droce_cm_ack_timeout(CM_ACK_DELAY, CM_PACKET_LIFETIME);
	rdmacm_nb_ids++;
	return id;
}

static void
id_unbind(struct droced_rdmacm_id *id)
{
	if (!id->bound)
		return;
	TAILQ_REMOVE(&rdmacm_bound_ids, id, lnext);
	port_users[rdmacm_ps_index(id->ps)][ntohs(id->src.port)]--;
	id->bound = false;
}

void
rdmacm_id_destroy(struct droced_rdmacm_id *id)
{
	struct cm_mcast *mc;
	uint32_t h;

	ev_drop(id);
	while ((mc = LIST_FIRST(&id->mcast)) != NULL) {
		LIST_REMOVE(mc, next);
		free(mc);
	}
	id->ch->nb_mcast -= id->nb_mcast;
	if (id->resolving)
		TAILQ_REMOVE(&rdmacm_resolving, id, rnext);
	if (id->state == ID_LISTEN) {
		/* Linux: the requests a listener had not handed out go with it (rejected). */
		for (h = 0; h < id->ch->ids.cap; h++) {
			struct droced_rdmacm_id *child = rdmacm_id_get(id->ch, h);

			if (child != NULL && child->listener == id)
				rdmacm_id_destroy(child);
		}
	}
	if (id->listener != NULL)
		id->listener->pending--;
	id_unbind(id);
	if (id->conn != NULL)
		droced_ibcm_conn_orphan(id->conn);
	id_table_del(id);
	rdmacm_nb_ids--;
	free(id);
}

void
droced_rdmacm_id_attach(struct droced_rdmacm_id *id, struct droced_ibcm_conn *conn)
{
	id->conn = conn;
	if (conn != NULL)
		id->connected_once = true;
}

/* ---- Binding (cma_get_port, cma_check_port) ---- */

bool
rdmacm_bind_conflict(const struct droced_rdmacm_id *id, uint16_t port)
{
	const struct droced_rdmacm_id *o;

	if (port_users[rdmacm_ps_index(id->ps)][ntohs(port)] == 0)
		return false;
	TAILQ_FOREACH(o, &rdmacm_bound_ids, lnext) {
		if (o == id || o->ps != id->ps || o->src.port != port)
			continue;
		/* cma_check_port: REUSEADDR ids share a port while neither listens. */
		if (id->state != ID_LISTEN && id->reuseaddr && o->reuseaddr &&
		    o->state != ID_LISTEN)
			continue;
		if (!rdmacm_addr_any(&id->src) && !rdmacm_addr_any(&o->src) &&
		    memcmp(id->src.addr, o->src.addr, 16) != 0)
			continue;
		return true;
	}
	return false;
}

static int
id_bind_port(struct droced_rdmacm_id *id)
{
	uint32_t i, range = CM_PORT_HI - CM_PORT_LO + 1;

	if (id->src.port == 0) {
		if (next_port == 0)
			next_port = (uint32_t)rte_rand();
		for (i = 0; i < range; i++) {
			uint16_t port = htons((uint16_t)(CM_PORT_LO + (next_port++ % range)));

			if (port_users[rdmacm_ps_index(id->ps)][ntohs(port)] == 0) {
				id->src.port = port;
				break;
			}
		}
		if (id->src.port == 0)
			return -EADDRNOTAVAIL;
	} else if (rdmacm_bind_conflict(id, id->src.port)) {
		return -EADDRINUSE;
	}
	TAILQ_INSERT_TAIL(&rdmacm_bound_ids, id, lnext);
	port_users[rdmacm_ps_index(id->ps)][ntohs(id->src.port)]++;
	id->bound = true;
	return 0;
}

/* Binds id to addr (IDLE -> ADDR_BOUND), as rdma_bind_addr. */
int
rdmacm_id_bind(struct droced_rdmacm_id *id, const struct droce_proto_cm_addr *addr)
{
	struct droced_port *p = NULL;
	int rc;

	if (addr->family != AF_INET && addr->family != AF_INET6)
		return -EAFNOSUPPORT;
	if (!rdmacm_addr_any(addr)) {
		p = rdmacm_addr_port(id->ch->c->d, addr);
		if (p == NULL && rdmacm_addr_loopback(addr))
			p = &id->ch->c->d->ports[0];
		if (p == NULL)
			return -EADDRNOTAVAIL;
	}
	id->src = *addr;
	rc = id_bind_port(id);
	if (rc != 0) {
		memset(&id->src, 0, sizeof(id->src));
		return rc;
	}
	if (p != NULL) {
		uint8_t gid[16];

		id->port = p;
		if (rdmacm_addr_loopback(addr))
			rdmacm_port_gid0(p, gid, &id->sgid_index);
		else
			memcpy(gid, addr->addr, 16);
		rdmacm_id_set_sgid(id, gid);
	}
	id->state = ID_ADDR_BOUND;
	return 0;
}

void
rdmacm_id_info(const struct droced_rdmacm_id *id, struct droce_proto_cm_id_info *info)
{
	memset(info, 0, sizeof(*info));
	info->port = id->port != NULL ? id->port->index : DROCE_PROTO_NO_HANDLE;
	info->port_num = id->port != NULL;
	info->state = (uint8_t)id->state;
	info->sgid_index = id->sgid_index;
	info->route_resolved = id->route;
	info->pkey = DROCE_PKEY_DEFAULT;
	info->path_mtu = id->path_mtu;
	info->hop_limit = DROCED_ROUTE_HOP_LIMIT;
	info->traffic_class = id->tos;
	info->src = id->src;
	info->dst = id->dst;
	memcpy(info->sgid, id->sgid, 16);
	memcpy(info->dgid, id->dgid, 16);
}
