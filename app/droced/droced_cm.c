/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * rdma_cm in droced: event channels, ids and what librdmacm asks of them (the "rdma_cm"
 * section of droce_shm_proto.h). A channel is a client connection that opened with
 * CM_OPEN; its ids are named by per-channel handles, every one checked. Events wait in
 * the channel's queue, one byte in its pipe each (bytes the full pipe refused are owed and
 * written on the tick, never blocking). Addresses, ports, listeners and multicast joins
 * follow Linux's cma.c; the connections themselves, on the wire, are droced_cm_wire.c's.
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

#include "droced_loc.h"

#define CM_MAX_IDS		65536	/* per channel: -ENOMEM beyond */
#define CM_MAX_EVENTS		65536	/* queued per channel: more are dropped and counted */
#define CM_PIPE_CHUNK		256
#define CM_MAX_BACKLOG		1024	/* Linux's ucma max_backlog: also the default */
/* Linux's ephemeral range (net.ipv4.ip_local_port_range) and cma.c's constants. */
#define CM_PORT_LO		32768
#define CM_PORT_HI		60999
#define CM_RESPONSE_TIMEOUT	20	/* CMA_CM_RESPONSE_TIMEOUT */
#define CM_MAX_RETRIES		15	/* CMA_MAX_CM_RETRIES */
#define CM_PACKET_LIFETIME	18	/* CMA_IBOE_PACKET_LIFETIME */
#define CM_ACK_DELAY		15	/* our target ACK delay in a REP, rxe's */
#define CM_UDP_QKEY		0x01234567u	/* RDMA_UDP_QKEY */
#define CM_PERMISSIVE_LID	0xFFFF
#define CM_PKEY			0xFFFF
#define CM_PS_COUNT		4
#define CM_MCAST_HOP_LIMIT	64	/* IPV6_DEFAULT_HOPLIMIT: Linux's RoCEv2 joins */
#define CM_MAX_MCAST		65536	/* multicast joins per channel: -ENOMEM beyond */

#define CM_ID_STATE_LIST(X) \
	X(IDLE) X(ADDR_BOUND) X(ADDR_QUERY) X(ADDR_RESOLVED) X(ROUTE_RESOLVED) X(LISTEN) \
	X(CONNECT) X(ESTABLISHED) X(DISCONNECT)

enum cm_id_state {
#define CM_ID_STATE_ENUM(name) ID_##name,
	CM_ID_STATE_LIST(CM_ID_STATE_ENUM)
#undef CM_ID_STATE_ENUM
};

struct cm_event {
	TAILQ_ENTRY(cm_event) next;
	struct droced_cm_id *id;
	struct droce_proto_cm_event ev;
};

struct droced_cm_chan {
	struct droced_client *c;
	TAILQ_ENTRY(droced_cm_chan) next;
	uint32_t token;
	int efd;			/* the pipe's write end, non-blocking, ours */
	int rfd;			/* its read end, passed with CM_OPEN */
	uint64_t owed;			/* bytes the full pipe did not take yet */
	uint32_t nb_events;
	TAILQ_HEAD(, cm_event) events;
	struct droced_cm_id **ids;
	uint32_t cap, nb;
	uint32_t hint;			/* no free handle below it */
	uint32_t nb_mcast;		/* its ids' multicast joins */
};

/* A multicast join of an id (rdma_join_multicast): the library's uid names it. */
struct cm_mcast {
	LIST_ENTRY(cm_mcast) next;
	uint32_t uid;
	uint8_t mgid[16];
};

struct droced_cm_id {
	struct droced_cm_chan *ch;
	uint32_t handle;
	uint64_t uctx;
	uint16_t ps;
	uint8_t qp_type;
	enum cm_id_state state;
	struct droced_port *port;	/* NULL: no device yet */
	uint8_t sgid_index;
	struct droce_proto_cm_addr src, dst;
	uint8_t sgid[16], dgid[16], dmac[6];
	bool bound;
	bool reuseaddr, afonly;
	uint8_t tos;
	bool ack_timeout_set;
	uint8_t ack_timeout;
	bool route;
	uint8_t path_mtu;
	/* Listener. */
	int backlog;
	int pending;			/* CONNECT_REQUESTs not yet taken */
	/* Passive id: its listener until its CONNECT_REQUEST is taken. */
	struct droced_cm_id *listener;
	/* Address resolution waiting for ARP. */
	bool resolving;
	uint64_t resolve_deadline_ns;
	/* The connection. */
	struct droced_cm_conn *conn;
	bool connected_once;		/* a REQ was sent or received: QP attributes via the CM */
	uint32_t qpn, psn;		/* own QP and advertised starting PSN */
	uint32_t remote_qpn, remote_psn, remote_qkey;
	uint8_t responder_resources, initiator_depth;
	uint8_t retry_count, rnr_retry_count;
	uint8_t local_ack_timeout;	/* the RTS timeout (Linux av.timeout) */
	uint8_t srq;
	bool move_qp;			/* CM_CONNECT's DROCE_PROTO_CM_CONN_F_MOVE_QP */
	/* Multicast joins. */
	LIST_HEAD(, cm_mcast) mcast;
	uint32_t nb_mcast;
	TAILQ_ENTRY(droced_cm_id) lnext;	/* bound or listening list */
	TAILQ_ENTRY(droced_cm_id) rnext;	/* resolving list */
};

static TAILQ_HEAD(, droced_cm_chan) chans = TAILQ_HEAD_INITIALIZER(chans);
static TAILQ_HEAD(, droced_cm_id) bound_ids = TAILQ_HEAD_INITIALIZER(bound_ids);
static TAILQ_HEAD(, droced_cm_id) resolving = TAILQ_HEAD_INITIALIZER(resolving);
static uint16_t port_users[CM_PS_COUNT][65536];
static uint32_t next_port;
static uint32_t nb_ids;
static uint64_t events_lost;	/* past CM_MAX_EVENTS (a channel that never reads) */
static uint64_t qp_moves, qp_move_fallbacks;	/* DROCE_PROTO_CM_CONN_F_MOVE_QP */

static const uint8_t v4_prefix[12] = { [10] = 0xFF, [11] = 0xFF };

/* ---- Small helpers ---- */

static int
ps_index(uint16_t ps)
{
	switch (ps) {
	case DROCE_PROTO_CM_PS_TCP: return 0;
	case DROCE_PROTO_CM_PS_UDP: return 1;
	case DROCE_PROTO_CM_PS_IB: return 2;
	case DROCE_PROTO_CM_PS_IPOIB: return 3;
	default: return -1;
	}
}

static bool
addr_any(const struct droce_proto_cm_addr *a)
{
	static const uint8_t zero[16];

	if (memcmp(a->addr, zero, 16) == 0)
		return true;
	return memcmp(a->addr, v4_prefix, 12) == 0 && memcmp(a->addr + 12, zero, 4) == 0;
}

static bool
addr_v4(const struct droce_proto_cm_addr *a)
{
	return memcmp(a->addr, v4_prefix, 12) == 0;
}

static bool
addr_loopback(const struct droce_proto_cm_addr *a)
{
	static const uint8_t v6_lo[16] = { [15] = 1 };

	return (addr_v4(a) && a->addr[12] == 127) || memcmp(a->addr, v6_lo, 16) == 0;
}

/* The port owning address a (its IPv4 address or one of its GIDs), or NULL. */
static struct droced_port *
addr_port(const struct droce_proto_cm_addr *a)
{
	uint32_t i;

	for (i = 0; i < droced.nb_ports; i++) {
		struct droced_port *p = &droced.ports[i];

		if (p->net != NULL && droce_net_gid_find(p->net, a->addr) >= 0)
			return p;
	}
	return NULL;
}

static void
port_gid0(const struct droced_port *p, uint8_t gid[16], uint8_t *index)
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
static bool
port_gid_v6(const struct droced_port *p, const uint8_t dst[16], uint8_t gid[16],
	    unsigned int *bits)
{
	bool found = false;
	uint32_t i;

	*bits = 0;
	for (i = 0; i < p->nb_gids; i++) {
		unsigned int n;

		if (!p->gid_valid[i] || memcmp(p->gids[i], v4_prefix, 12) == 0)
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

static void
id_set_sgid(struct droced_cm_id *id, const uint8_t gid[16])
{
	int k = droce_net_gid_find(id->port->net, gid);

	memcpy(id->sgid, gid, 16);
	id->sgid_index = k < 0 ? 0 : (uint8_t)k;
}

/* ---- Events and the pipe ---- */

static void
pipe_flush(struct droced_cm_chan *ch)
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

static struct cm_event *
ev_new(struct droced_cm_id *id, uint32_t type, int32_t status)
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

static void
ev_queue(struct droced_cm_chan *ch, struct cm_event *e)
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
	pipe_flush(ch);
}

static void
ev_simple(struct droced_cm_id *id, uint32_t type, int32_t status)
{
	ev_queue(id->ch, ev_new(id, type, status));
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
static void
ev_drop_mc(struct droced_cm_id *id, const struct cm_mcast *mc)
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
ev_drop(struct droced_cm_id *id)
{
	ev_drop_mc(id, NULL);
}

/* ---- Ids ---- */

static struct droced_cm_id *
id_get(const struct droced_cm_chan *ch, uint32_t handle)
{
	return handle < ch->cap ? ch->ids[handle] : NULL;
}

static int
id_table_add(struct droced_cm_chan *ch, struct droced_cm_id *id)
{
	uint32_t h;

	if (ch->nb == ch->cap) {
		uint32_t cap = ch->cap == 0 ? 16 : ch->cap * 2;
		struct droced_cm_id **ids;

		if (ch->cap >= CM_MAX_IDS)
			return -ENOMEM;
		ids = realloc(ch->ids, cap * sizeof(*ids));
		if (ids == NULL)
			return -ENOMEM;
		memset(ids + ch->cap, 0, (cap - ch->cap) * sizeof(*ids));
		ch->ids = ids;
		ch->cap = cap;
	}
	for (h = ch->hint; h < ch->cap && ch->ids[h] != NULL; h++)
		;
	ch->hint = h + 1;
	ch->ids[h] = id;
	ch->nb++;
	id->ch = ch;
	id->handle = h;
	return 0;
}

static void
id_table_del(struct droced_cm_id *id)
{
	id->ch->ids[id->handle] = NULL;
	id->ch->nb--;
	if (id->handle < id->ch->hint)
		id->ch->hint = id->handle;
}

static struct droced_cm_id *
id_new(struct droced_cm_chan *ch, uint64_t uctx, uint16_t ps, uint8_t qp_type)
{
	struct droced_cm_id *id = calloc(1, sizeof(*id));

	if (id == NULL || id_table_add(ch, id) != 0) {
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
	nb_ids++;
	return id;
}

static void
id_unbind(struct droced_cm_id *id)
{
	if (!id->bound)
		return;
	TAILQ_REMOVE(&bound_ids, id, lnext);
	port_users[ps_index(id->ps)][ntohs(id->src.port)]--;
	id->bound = false;
}

static void
id_destroy(struct droced_cm_id *id)
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
		TAILQ_REMOVE(&resolving, id, rnext);
	if (id->state == ID_LISTEN) {
		/* Linux: the requests a listener had not handed out go with it (rejected). */
		for (h = 0; h < id->ch->cap; h++) {
			struct droced_cm_id *child = id->ch->ids[h];

			if (child != NULL && child->listener == id)
				id_destroy(child);
		}
	}
	if (id->listener != NULL)
		id->listener->pending--;
	id_unbind(id);
	if (id->conn != NULL)
		droced_cm_conn_orphan(id->conn);
	id_table_del(id);
	nb_ids--;
	free(id);
}

void
droced_cm_id_attach(struct droced_cm_id *id, struct droced_cm_conn *conn)
{
	id->conn = conn;
	if (conn != NULL)
		id->connected_once = true;
}

/* ---- Binding (cma_get_port, cma_check_port) ---- */

static bool
bind_conflict(const struct droced_cm_id *id, uint16_t port)
{
	const struct droced_cm_id *o;

	if (port_users[ps_index(id->ps)][ntohs(port)] == 0)
		return false;
	TAILQ_FOREACH(o, &bound_ids, lnext) {
		if (o == id || o->ps != id->ps || o->src.port != port)
			continue;
		/* cma_check_port: REUSEADDR ids share a port while neither listens. */
		if (id->state != ID_LISTEN && id->reuseaddr && o->reuseaddr &&
		    o->state != ID_LISTEN)
			continue;
		if (!addr_any(&id->src) && !addr_any(&o->src) &&
		    memcmp(id->src.addr, o->src.addr, 16) != 0)
			continue;
		return true;
	}
	return false;
}

static int
id_bind_port(struct droced_cm_id *id)
{
	uint32_t i, range = CM_PORT_HI - CM_PORT_LO + 1;

	if (id->src.port == 0) {
		if (next_port == 0)
			next_port = (uint32_t)rte_rand();
		for (i = 0; i < range; i++) {
			uint16_t port = htons((uint16_t)(CM_PORT_LO + (next_port++ % range)));

			if (port_users[ps_index(id->ps)][ntohs(port)] == 0) {
				id->src.port = port;
				break;
			}
		}
		if (id->src.port == 0)
			return -EADDRNOTAVAIL;
	} else if (bind_conflict(id, id->src.port)) {
		return -EADDRINUSE;
	}
	TAILQ_INSERT_TAIL(&bound_ids, id, lnext);
	port_users[ps_index(id->ps)][ntohs(id->src.port)]++;
	id->bound = true;
	return 0;
}

/* Binds id to addr (IDLE -> ADDR_BOUND), as rdma_bind_addr. */
static int
id_bind(struct droced_cm_id *id, const struct droce_proto_cm_addr *addr)
{
	struct droced_port *p = NULL;
	int rc;

	if (addr->family != AF_INET && addr->family != AF_INET6)
		return -EAFNOSUPPORT;
	if (!addr_any(addr)) {
		p = addr_port(addr);
		if (p == NULL && addr_loopback(addr))
			p = &droced.ports[0];
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
		if (addr_loopback(addr))
			port_gid0(p, gid, &id->sgid_index);
		else
			memcpy(gid, addr->addr, 16);
		id_set_sgid(id, gid);
	}
	id->state = ID_ADDR_BOUND;
	return 0;
}

static void
id_info(const struct droced_cm_id *id, struct droce_proto_cm_id_info *info)
{
	memset(info, 0, sizeof(*info));
	info->port = id->port != NULL ? id->port->index : DROCE_PROTO_NO_HANDLE;
	info->port_num = id->port != NULL;
	info->state = (uint8_t)id->state;
	info->sgid_index = id->sgid_index;
	info->route_resolved = id->route;
	info->pkey = CM_PKEY;
	info->path_mtu = id->path_mtu;
	info->hop_limit = DROCED_ROUTE_HOP_LIMIT;
	info->traffic_class = id->tos;
	info->src = id->src;
	info->dst = id->dst;
	memcpy(info->sgid, id->sgid, 16);
	memcpy(info->dgid, id->dgid, 16);
}

/* ---- Address resolution ---- */

/* The port for a destination: same IPv4 subnet as a port's address, else the first. */
static struct droced_port *
route_port(const struct droce_proto_cm_addr *dst)
{
	uint32_t i;

	if (!addr_v4(dst)) {
		/* IPv6: the port with a GID sharing the longest prefix with dst. */
		const struct droced_port *best = NULL;
		unsigned int best_bits = 0, bits;
		uint8_t gid[16];

		for (i = 0; i < droced.nb_ports; i++)
			if (port_gid_v6(&droced.ports[i], dst->addr, gid, &bits) &&
			    (best == NULL || bits > best_bits)) {
				best = &droced.ports[i];
				best_bits = bits;
			}
		return best != NULL ? (struct droced_port *)best : &droced.ports[0];
	}
	if (addr_v4(dst)) {
		for (i = 0; i < droced.nb_ports; i++) {
			const struct droced_port *p = &droced.ports[i];
			uint32_t a, b, mask;

			if (p->cfg->ipv4.len == 0)
				continue;
			memcpy(&a, p->cfg->ipv4.addr, 4);
			memcpy(&b, dst->addr + 12, 4);
			mask = htonl(p->cfg->ipv4.len >= 32 ? 0xFFFFFFFFu :
				     ~(0xFFFFFFFFu >> p->cfg->ipv4.len));
			if (((a ^ b) & mask) == 0)
				return &droced.ports[i];
		}
	}
	return &droced.ports[0];
}

/*
 * The MAC of dgid: 0, -EAGAIN (ARP running), -EHOSTUNREACH. A multicast group's needs no
 * ARP (Linux's neighbour entry for one is NUD_NOARP): resolving to a group, as mckey and
 * rdma-core's multicast tests do before they join, succeeds at once.
 */
static int
id_neigh(struct droced_cm_id *id)
{
	struct droced_port *own = addr_port(&id->dst);
	int rc;

	if (droced_gid_is_multicast(id->dgid)) {
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
resolve_done(struct droced_cm_id *id, int status)
{
	if (id->resolving)
		TAILQ_REMOVE(&resolving, id, rnext);
	id->resolving = false;
	if (status == 0) {
		id->state = ID_ADDR_RESOLVED;
		ev_simple(id, DROCE_PROTO_CM_EVENT_ADDR_RESOLVED, 0);
	} else {
		/* Linux goes back to ADDR_BOUND: the id may try again. */
		id->state = ID_ADDR_BOUND;
		ev_simple(id, DROCE_PROTO_CM_EVENT_ADDR_ERROR, status);
	}
}

static int
op_resolve_addr(struct droced_cm_id *id, const struct droce_proto_req *req)
{
	const struct droce_proto_cm_addr *src = &req->cm_resolve_addr.src;
	struct droce_proto_cm_addr dst = req->cm_resolve_addr.dst;
	uint8_t gid[16];
	int rc;

	if (dst.family != AF_INET && dst.family != AF_INET6)
		return -EAFNOSUPPORT;
	if (addr_any(&dst))
		return -EINVAL;
	if (id->state == ID_IDLE) {
		struct droce_proto_cm_addr a;

		if (src->family != 0) {
			a = *src;
		} else {
			memset(&a, 0, sizeof(a));
			a.family = dst.family;
			if (dst.family == AF_INET)
				memcpy(a.addr, v4_prefix, 12);
		}
		rc = id_bind(id, &a);
		if (rc != 0)
			return rc;
	} else if (id->state != ID_ADDR_BOUND) {
		return -EINVAL;
	}
	if (id->port == NULL) {
		id->port = route_port(&dst);
		port_gid0(id->port, gid, &id->sgid_index);
		/* An IPv4 destination from the port's IPv4 GID, an IPv6 one from an IPv6 GID. */
		if (addr_v4(&dst) && id->port->cfg->ipv4.len != 0) {
			memcpy(gid, v4_prefix, 12);
			memcpy(gid + 12, id->port->cfg->ipv4.addr, 4);
		} else if (!addr_v4(&dst)) {
			unsigned int bits;

			if (!port_gid_v6(id->port, dst.addr, gid, &bits)) {
				id->port = NULL;
				return -EADDRNOTAVAIL;
			}
		}
		id_set_sgid(id, gid);
		memcpy(id->src.addr, id->sgid, 16);
	}
	id->dst = dst;
	if (addr_loopback(&dst)) {
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
		TAILQ_INSERT_TAIL(&resolving, id, rnext);
		return 0;
	}
	resolve_done(id, rc);
	return 0;
}

void
droced_cm_resolved(struct droced_port *p, uint32_t ip, int status)
{
	struct droced_cm_id *id, *next;
	uint32_t want;
	int rc;

	for (id = TAILQ_FIRST(&resolving); id != NULL; id = next) {
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
op_listen(struct droced_cm_id *id, int backlog)
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
		rc = id_bind(id, &a);
		if (rc != 0)
			return rc;
	}
	if (id->state != ID_ADDR_BOUND)
		return -EINVAL;
	/* A listener shares its port with nobody, reuseaddr or not (cma_check_port). */
	id->state = ID_LISTEN;
	if (bind_conflict(id, id->src.port)) {
		id->state = ID_ADDR_BOUND;
		return -EADDRINUSE;
	}
	/* ucma: 0, negative or too many means the most. */
	id->backlog = backlog > 0 && backlog < CM_MAX_BACKLOG ? backlog : CM_MAX_BACKLOG;
	return 0;
}

static struct droced_cm_id *
find_listener(uint16_t ps, uint16_t port, const uint8_t addr[16], bool *any)
{
	struct droced_cm_id *id;

	*any = false;
	TAILQ_FOREACH(id, &bound_ids, lnext) {
		if (id->state != ID_LISTEN || id->ps != ps || ntohs(id->src.port) != port)
			continue;
		*any = true;
		if (addr_any(&id->src) || memcmp(id->src.addr, addr, 16) == 0)
			return id;
	}
	return NULL;
}

struct droced_cm_id *
droced_cm_req_listener(struct droced_port *p, const uint8_t dgid[16],
		       const struct droce_cm_msg *m, uint16_t *reject)
{
	bool sidr = m->attr_id == DROCE_CM_ATTR_SIDR_REQ;
	uint64_t sid = sidr ? m->sidr_req.service_id : m->req.service_id;
	const uint8_t *pdata = sidr ? m->sidr_req.private_data : m->req.private_data;
	size_t plen = sidr ? DROCE_CM_SIDR_REQ_PDATA_LEN : DROCE_CM_REQ_PDATA_LEN;
	struct droce_cm_ip_hdr h;
	struct droced_cm_id *l, *id;
	bool any;

	*reject = DROCE_CM_REJ_INVALID_SERVICE_ID;
	if ((sid >> 32) != 0 || ps_index(droce_cm_service_id_ps(sid)) < 0)
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
	id = id_new(l->ch, l->uctx, l->ps, sidr ? DROCE_SHM_QPT_UD :
		    (m->req.transport_service_type == 1 ? DROCE_SHM_QPT_UC : DROCE_SHM_QPT_RC));
	if (id == NULL)
		return NULL;
	id->listener = l;
	l->pending++;
	id->port = p;
	id_set_sgid(id, dgid);
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

/* ---- Events from the wire ---- */

static int qp_connect(struct droced_cm_id *id, uint32_t qpn, const struct droce_proto_cm_conn *cp);
static int op_establish(struct droced_cm_id *id);

static void
conn_params_req(struct droce_proto_cm_conn *cp, const struct droce_cm_req *r)
{
	cp->qp_num = r->local_qpn;
	cp->qp_type = r->transport_service_type == 1 ? DROCE_SHM_QPT_UC : DROCE_SHM_QPT_RC;
	cp->srq = r->srq;
	/* cma_set_req_event_data: the peer's resources swapped, as the id sees them. */
	cp->responder_resources = r->initiator_depth;
	cp->initiator_depth = r->responder_resources;
	cp->flow_control = r->end_to_end_flow_control;
	cp->retry_count = r->retry_count;
	cp->rnr_retry_count = r->rnr_retry_count;
	cp->private_data_len = DROCE_CM_REQ_PDATA_LEN - DROCE_CM_IP_HDR_LEN;
	memcpy(cp->private_data, r->private_data + DROCE_CM_IP_HDR_LEN, cp->private_data_len);
}

static void
ud_attr(const struct droced_cm_id *id, struct droce_proto_cm_qp_attr *a)
{
	a->ah.is_global = 1;
	memcpy(a->ah.dgid, id->dgid, 16);
	a->ah.sgid_index = id->sgid_index;
	a->ah.hop_limit = DROCED_ROUTE_HOP_LIMIT;
	a->ah.traffic_class = id->tos;
	a->ah.port_num = 1;
}

void
droced_cm_conn_event(struct droced_cm_id *id, enum droce_cm_event ev,
		     const struct droce_cm_msg *m, uint16_t rej_reason)
{
	struct cm_event *e;
	size_t len;

	switch (ev) {
	case DROCE_CM_EVENT_REQ_RECEIVED:
	case DROCE_CM_EVENT_SIDR_REQ_RECEIVED:
		e = ev_new(id, DROCE_PROTO_CM_EVENT_CONNECT_REQUEST, 0);
		if (e == NULL)
			return;
		e->ev.listen_id = id->listener->handle;
		if (m->attr_id == DROCE_CM_ATTR_REQ) {
			conn_params_req(&e->ev.conn, &m->req);
		} else {
			e->ev.conn.qp_type = DROCE_SHM_QPT_UD;
			len = DROCE_CM_SIDR_REQ_PDATA_LEN - DROCE_CM_IP_HDR_LEN;
			e->ev.conn.private_data_len = (uint8_t)len;
			memcpy(e->ev.conn.private_data,
			       m->sidr_req.private_data + DROCE_CM_IP_HDR_LEN, len);
		}
		ev_queue(id->ch, e);
		return;
	case DROCE_CM_EVENT_REP_RECEIVED: {
		const struct droce_cm_rep *r = &m->rep;

		id->remote_qpn = r->local_qpn;
		id->remote_psn = r->starting_psn;
		/* cm_rep_handler: what the passive end accepted, seen from here. */
		id->initiator_depth = r->responder_resources;
		id->responder_resources = r->initiator_depth;
		id->rnr_retry_count = r->rnr_retry_count;
		if (!id->ack_timeout_set)
			id->local_ack_timeout = droce_cm_ack_timeout(r->target_ack_delay, CM_PACKET_LIFETIME);
		e = ev_new(id, DROCE_PROTO_CM_EVENT_CONNECT_RESPONSE, 0);
		if (e == NULL)
			return;
		e->ev.conn.qp_num = r->local_qpn;
		e->ev.conn.qp_type = id->qp_type;
		e->ev.conn.srq = r->srq;
		e->ev.conn.responder_resources = r->initiator_depth;
		e->ev.conn.initiator_depth = r->responder_resources;
		e->ev.conn.flow_control = r->end_to_end_flow_control;
		e->ev.conn.rnr_retry_count = r->rnr_retry_count;
		e->ev.conn.private_data_len = DROCE_CM_REP_PDATA_LEN;
		memcpy(e->ev.conn.private_data, r->private_data, DROCE_CM_REP_PDATA_LEN);
		/*
		 * The id's QP is librdmacm's: move it and confirm with the RTU here, as Linux's
		 * cma_rep_recv does for a kernel consumer; the application sees ESTABLISHED. If
		 * the QP cannot be moved, the CONNECT_RESPONSE lets the library do both.
		 */
		if (id->move_qp && qp_connect(id, id->qpn, NULL) == 0 && op_establish(id) == 0)
			e->ev.event = DROCE_PROTO_CM_EVENT_ESTABLISHED;
		ev_queue(id->ch, e);
		return;
	}
	case DROCE_CM_EVENT_ESTABLISHED:
		id->state = ID_ESTABLISHED;
		ev_simple(id, DROCE_PROTO_CM_EVENT_ESTABLISHED, 0);
		return;
	case DROCE_CM_EVENT_REJECTED:
		id->state = ID_DISCONNECT;
		e = ev_new(id, DROCE_PROTO_CM_EVENT_REJECTED, rej_reason);
		if (e == NULL)
			return;
		if (m != NULL && m->attr_id == DROCE_CM_ATTR_REJ) {
			e->ev.conn.private_data_len = DROCE_CM_REJ_PDATA_LEN;
			memcpy(e->ev.conn.private_data, m->rej.private_data, DROCE_CM_REJ_PDATA_LEN);
		}
		ev_queue(id->ch, e);
		return;
	case DROCE_CM_EVENT_DISCONNECTED:
		id->state = ID_DISCONNECT;
		/* A DREQ whose retries ran out: Linux's DREQ_ERROR, status -ETIMEDOUT. */
		ev_simple(id, DROCE_PROTO_CM_EVENT_DISCONNECTED, m == NULL ? -ETIMEDOUT : 0);
		return;
	case DROCE_CM_EVENT_TIMEWAIT_EXIT:
		ev_simple(id, DROCE_PROTO_CM_EVENT_TIMEWAIT_EXIT, 0);
		return;
	case DROCE_CM_EVENT_UNREACHABLE:
		id->state = ID_DISCONNECT;
		ev_simple(id, DROCE_PROTO_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
		return;
	case DROCE_CM_EVENT_SIDR_REP_RECEIVED: {
		const struct droce_cm_sidr_rep *r = &m->sidr_rep;

		if (r->status != 0) {
			id->state = ID_DISCONNECT;
			ev_simple(id, DROCE_PROTO_CM_EVENT_UNREACHABLE, r->status);
			return;
		}
		id->remote_qpn = r->qpn;
		id->remote_qkey = r->qkey;
		id->state = ID_ESTABLISHED;
		e = ev_new(id, DROCE_PROTO_CM_EVENT_ESTABLISHED, 0);
		if (e == NULL)
			return;
		e->ev.ud.qp_state = DROCE_SHM_QPS_RTS;
		e->ev.ud.dest_qp_num = r->qpn;
		e->ev.ud.qkey = r->qkey;
		ud_attr(id, &e->ev.ud);
		e->ev.conn.qp_num = r->qpn;
		e->ev.conn.qkey = r->qkey;
		e->ev.conn.qp_type = DROCE_SHM_QPT_UD;
		e->ev.conn.private_data_len = DROCE_CM_SIDR_REP_PDATA_LEN;
		memcpy(e->ev.conn.private_data, r->private_data, DROCE_CM_SIDR_REP_PDATA_LEN);
		ev_queue(id->ch, e);
		return;
	}
	default:
		return;
	}
}

/* ---- Connecting ---- */

/* Linux's cma_get_roce_udp_flow_label for IPv4: the rdma_cm ports hashed. */
static uint32_t
flow_label(const struct droced_cm_id *id)
{
	return ((uint32_t)ntohs(id->src.port) * 31 + ntohs(id->dst.port)) & DROCE_SHM_FLOW_LABEL_MAX;
}

static int
cma_hdr(const struct droced_cm_id *id, uint8_t *pdata)
{
	struct droce_cm_ip_hdr h;

	memset(&h, 0, sizeof(h));
	h.ip_version = addr_v4(&id->src) ? 4 : 6;
	/* cma_format_hdr: the active end's own (source) port. */
	h.port = ntohs(id->src.port);
	memcpy(h.src_addr, id->src.addr, 16);
	memcpy(h.dst_addr, id->dst.addr, 16);
	return droce_cm_ip_hdr_build(&h, pdata);
}

static int
op_connect(struct droced_cm_id *id, const struct droce_proto_cm_conn *cp, uint32_t flags)
{
	struct droce_cm_out out;
	struct droced_cm_conn *conn;
	uint64_t guid;
	int rc;

	if (id->state != ID_ROUTE_RESOLVED)
		return -EINVAL;
	if (id->qp_type == DROCE_SHM_QPT_UD) {
		struct droce_cm_sidr_req sr;

		if (cp->private_data_len > DROCE_CM_SIDR_REQ_PDATA_LEN - DROCE_CM_IP_HDR_LEN)
			return -EINVAL;
		memset(&sr, 0, sizeof(sr));
		sr.partition_key = CM_PKEY;
		sr.service_id = droce_cm_service_id(id->ps, ntohs(id->dst.port));
		if (cma_hdr(id, sr.private_data) != 0)
			return -EINVAL;
		memcpy(sr.private_data + DROCE_CM_IP_HDR_LEN, cp->private_data,
		       cp->private_data_len);
		conn = droced_cm_conn_new(id, id->port, id->sgid, id->dgid, id->dmac, id->tos);
		if (conn == NULL)
			return -ENOMEM;
		rc = droce_cm_sidr_req(droced_cm_conn_sm(conn), &sr, CM_RESPONSE_TIMEOUT,
				       CM_MAX_RETRIES, droced_now_ns(), &out);
	} else {
		struct droce_cm_req r;
		struct droce_proto_port_info info;

		if (cp->private_data_len > DROCE_CM_REQ_PDATA_LEN - DROCE_CM_IP_HDR_LEN)
			return -EINVAL;
		memset(&r, 0, sizeof(r));
		droced_port_info(id->port, &info);
		memcpy(&guid, &info.node_guid, 8);
		r.service_id = droce_cm_service_id(id->ps, ntohs(id->dst.port));
		r.local_ca_guid = be64toh(guid);
		r.local_qpn = cp->qp_num & DROCE_SHM_QPN_MAX;
		r.responder_resources = cp->responder_resources;
		r.initiator_depth = cp->initiator_depth;
		r.remote_cm_response_timeout = CM_RESPONSE_TIMEOUT;
		r.local_cm_response_timeout = CM_RESPONSE_TIMEOUT;
		r.transport_service_type = id->qp_type == DROCE_SHM_QPT_UC ? 1 : 0;
		r.end_to_end_flow_control = cp->flow_control & 1;
		r.starting_psn = id->psn;
		r.retry_count = RTE_MIN(cp->retry_count, (uint8_t)DROCE_SHM_RETRY_MAX);
		r.rnr_retry_count = RTE_MIN(cp->rnr_retry_count, (uint8_t)DROCE_SHM_RETRY_MAX);
		r.partition_key = CM_PKEY;
		r.path_mtu = id->path_mtu;
		r.max_cm_retries = CM_MAX_RETRIES;
		r.srq = cp->srq & 1;
		/* cm_format_req on RoCE: permissive LIDs, the path's GIDs, hop limit, class. */
		r.primary.local_lid = CM_PERMISSIVE_LID;
		r.primary.remote_lid = CM_PERMISSIVE_LID;
		memcpy(r.primary.local_gid, id->sgid, 16);
		memcpy(r.primary.remote_gid, id->dgid, 16);
		r.primary.flow_label = flow_label(id);
		r.primary.traffic_class = id->tos;
		r.primary.hop_limit = DROCED_ROUTE_HOP_LIMIT;
		r.primary.local_ack_timeout = id->ack_timeout_set ? id->ack_timeout :
			droce_cm_ack_timeout(CM_ACK_DELAY, CM_PACKET_LIFETIME);
		if (cma_hdr(id, r.private_data) != 0)
			return -EINVAL;
		memcpy(r.private_data + DROCE_CM_IP_HDR_LEN, cp->private_data,
		       cp->private_data_len);
		conn = droced_cm_conn_new(id, id->port, id->sgid, id->dgid, id->dmac, id->tos);
		if (conn == NULL)
			return -ENOMEM;
		rc = droce_cm_connect(droced_cm_conn_sm(conn), &r, droced_now_ns(), &out);
		id->responder_resources = cp->responder_resources;
		id->initiator_depth = cp->initiator_depth;
		id->retry_count = r.retry_count;
		id->rnr_retry_count = r.rnr_retry_count;
	}
	if (rc != 0) {
		/* Never in IDLE; an orphan in IDLE is freed at once. */
		droced_cm_conn_orphan(conn);
		return rc;
	}
	id->qpn = cp->qp_num & DROCE_SHM_QPN_MAX;
	id->srq = cp->srq;
	id->move_qp = (flags & DROCE_PROTO_CM_CONN_F_MOVE_QP) && id->qp_type != DROCE_SHM_QPT_UD;
	droced_cm_id_attach(id, conn);
	id->state = ID_CONNECT;
	droced_cm_conn_out(conn, &out, NULL);
	return 0;
}

static int
op_accept(struct droced_cm_id *id, const struct droce_proto_cm_conn *cp, uint32_t flags,
	  struct droce_proto_resp *resp)
{
	struct droce_cm_out out;
	struct droce_cm_conn *sm;
	int rc;

	if (id->state != ID_CONNECT || id->conn == NULL)
		return -EINVAL;
	sm = droced_cm_conn_sm(id->conn);
	if (sm->active)
		return -EINVAL;
	if (id->qp_type == DROCE_SHM_QPT_UD) {
		struct droce_cm_sidr_rep rep;

		if (cp->private_data_len > DROCE_CM_SIDR_REP_PDATA_LEN)
			return -EINVAL;
		memset(&rep, 0, sizeof(rep));
		rep.qpn = cp->qp_num & DROCE_SHM_QPN_MAX;
		rep.qkey = cp->qkey != 0 ? cp->qkey : CM_UDP_QKEY;
		rep.service_id = droce_cm_service_id(id->ps, ntohs(id->src.port));
		memcpy(rep.private_data, cp->private_data, cp->private_data_len);
		rc = droce_cm_sidr_rep(sm, &rep, droced_now_ns(), &out);
		if (rc == 0)
			id->state = ID_ESTABLISHED;
	} else {
		struct droce_cm_rep rep;
		struct droce_proto_port_info info;
		uint64_t guid;

		if (cp->private_data_len > DROCE_CM_REP_PDATA_LEN)
			return -EINVAL;
		/* The QP must be in RTR before the REP leaves: the RTU may come with data. */
		if (flags & DROCE_PROTO_CM_CONN_F_MOVE_QP) {
			if (qp_connect(id, cp->qp_num & DROCE_SHM_QPN_MAX, cp) != 0)
				return 0;	/* not moved: the library moves it, then accepts */
			resp->cm_accept.moved = 1;
		}
		memset(&rep, 0, sizeof(rep));
		droced_port_info(id->port, &info);
		memcpy(&guid, &info.node_guid, 8);
		rep.local_qpn = cp->qp_num & DROCE_SHM_QPN_MAX;
		rep.starting_psn = id->psn;
		rep.responder_resources = cp->responder_resources;
		rep.initiator_depth = cp->initiator_depth;
		rep.target_ack_delay = CM_ACK_DELAY;
		rep.end_to_end_flow_control = cp->flow_control & 1;
		rep.rnr_retry_count = RTE_MIN(cp->rnr_retry_count, (uint8_t)DROCE_SHM_RETRY_MAX);
		rep.srq = cp->srq & 1;
		rep.local_ca_guid = be64toh(guid);
		memcpy(rep.private_data, cp->private_data, cp->private_data_len);
		rc = droce_cm_accept(sm, &rep, droced_now_ns(), &out);
		if (rc == 0) {
			id->qpn = rep.local_qpn;
			id->responder_resources = cp->responder_resources;
			id->initiator_depth = cp->initiator_depth;
		}
	}
	if (rc != 0)
		return rc;
	droced_cm_conn_out(id->conn, &out, NULL);
	return 0;
}

/* Puts len bytes of private data into the MAD a lib/cm call left in out (it sends none). */
static void
out_pdata(struct droce_cm_out *out, const uint8_t *pdata, size_t len)
{
	struct droce_cm_msg m;
	uint8_t *dst;
	size_t max;

	if (len == 0 || out->nmads == 0 ||
	    droce_cm_mad_parse(out->mads[0], DROCE_CM_MAD_LEN, &m) != DROCE_CM_OK)
		return;
	switch (m.attr_id) {
	case DROCE_CM_ATTR_REJ: dst = m.rej.private_data; max = DROCE_CM_REJ_PDATA_LEN; break;
	case DROCE_CM_ATTR_DREQ: dst = m.dreq.private_data; max = DROCE_CM_DREQ_PDATA_LEN; break;
	case DROCE_CM_ATTR_RTU: dst = m.rtu.private_data; max = DROCE_CM_RTU_PDATA_LEN; break;
	default: return;
	}
	memcpy(dst, pdata, RTE_MIN(len, max));
	droce_cm_mad_build(&m, out->mads[0]);
}

static int
op_reject(struct droced_cm_id *id, const struct droce_proto_req *req)
{
	struct droce_cm_out out;
	struct droce_cm_conn *sm;
	int rc;

	if (id->conn == NULL)
		return -EINVAL;
	sm = droced_cm_conn_sm(id->conn);
	if (req->cm_reject.private_data_len > DROCE_CM_REJ_PDATA_LEN)
		return -EINVAL;
	if (sm->state == DROCE_CM_STATE_SIDR_REQ_RCVD) {
		struct droce_cm_sidr_rep rep;

		memset(&rep, 0, sizeof(rep));
		rep.status = DROCE_CM_SIDR_REJECT;
		memcpy(rep.private_data, req->cm_reject.private_data,
		       RTE_MIN((size_t)req->cm_reject.private_data_len,
			       (size_t)DROCE_CM_SIDR_REP_PDATA_LEN));
		rc = droce_cm_sidr_rep(sm, &rep, droced_now_ns(), &out);
	} else {
		rc = droce_cm_reject(sm, req->cm_reject.reason ? req->cm_reject.reason :
				     DROCE_CM_REJ_CONSUMER_DEFINED, droced_now_ns(), &out);
		out_pdata(&out, req->cm_reject.private_data, req->cm_reject.private_data_len);
	}
	if (rc != 0)
		return rc;
	id->state = ID_DISCONNECT;
	droced_cm_conn_out(id->conn, &out, NULL);
	return 0;
}

static int
op_establish(struct droced_cm_id *id)
{
	struct droce_cm_out out;
	int rc;

	if (id->conn == NULL)
		return -EINVAL;
	rc = droce_cm_rtu(droced_cm_conn_sm(id->conn), droced_now_ns(), &out);
	if (rc != 0)
		return rc;
	/*
	 * No event: librdmacm reports the CONNECT_RESPONSE it answered as ESTABLISHED itself,
	 * as rdma-core's does, and Linux's rdma_establish() raises none either.
	 */
	id->state = ID_ESTABLISHED;
	droced_cm_conn_out(id->conn, &out, NULL);
	return 0;
}

static int
op_disconnect(struct droced_cm_id *id)
{
	struct droce_cm_out out;
	struct droce_cm_conn *sm;

	if (id->conn == NULL)
		return id->connected_once ? 0 : -EINVAL;
	sm = droced_cm_conn_sm(id->conn);
	/* rdma_disconnect: a DREQ when it can, else nothing to do (the DREQ was answered). */
	if (sm->state != DROCE_CM_STATE_ESTABLISHED)
		return 0;
	if (droce_cm_disconnect(sm, droced_now_ns(), &out) != 0)
		return 0;
	id->state = ID_DISCONNECT;
	droced_cm_conn_out(id->conn, &out, NULL);
	return 0;
}

static int
op_notify(struct droced_cm_id *id, uint32_t event)
{
	struct droce_cm_out out;
	struct droce_cm_conn *sm;
	struct droce_cm_msg m;

	if (event != DROCE_SHM_EVENT_COMM_EST)
		return -EINVAL;
	if (id->conn == NULL)
		return -EINVAL;
	sm = droced_cm_conn_sm(id->conn);
	if (sm->state != DROCE_CM_STATE_REP_SENT && sm->state != DROCE_CM_STATE_MRA_REP_RCVD)
		return 0;
	/* cm_establish: the first packet on the QP stands for the RTU that got lost. */
	memset(&m, 0, sizeof(m));
	m.attr_id = DROCE_CM_ATTR_RTU;
	m.tid = sm->tid;
	m.rtu.local_comm_id = sm->remote_id;
	m.rtu.remote_comm_id = sm->local_id;
	droce_cm_input(sm, &m, droced_now_ns(), &out);
	droced_cm_conn_out(id->conn, &out, &m);
	return 0;
}

/* ---- QP attributes (rdma_init_qp_attr) ---- */

static int
op_init_qp_attr(struct droced_cm_id *id, uint32_t state, struct droce_proto_cm_qp_attr *a)
{
	bool ud = id->qp_type == DROCE_SHM_QPT_UD, rc = id->qp_type == DROCE_SHM_QPT_RC;

	memset(a, 0, sizeof(*a));
	a->qp_state = state;
	if (id->port == NULL)
		return -EINVAL;
	switch (state) {
	case DROCE_SHM_QPS_INIT:
		a->mask = DROCE_SHM_QP_STATE | DROCE_SHM_QP_PKEY_INDEX | DROCE_SHM_QP_PORT;
		a->port_num = 1;
		if (ud) {
			a->mask |= DROCE_SHM_QP_QKEY;
			a->qkey = CM_UDP_QKEY;
			return 0;
		}
		a->mask |= DROCE_SHM_QP_ACCESS_FLAGS;
		/* cm_init_qp_init_attr once the CM has the connection; 0 before (cma.c). */
		if (id->connected_once) {
			a->qp_access_flags = DROCE_SHM_ACCESS_REMOTE_WRITE;
			if (id->responder_resources != 0)
				a->qp_access_flags |= DROCE_SHM_ACCESS_REMOTE_READ |
						      DROCE_SHM_ACCESS_REMOTE_ATOMIC;
		}
		return 0;
	case DROCE_SHM_QPS_RTR:
		a->mask = DROCE_SHM_QP_STATE;
		if (ud)
			return 0;
		if (!id->connected_once)
			return -EINVAL;
		a->mask |= DROCE_SHM_QP_AV | DROCE_SHM_QP_PATH_MTU | DROCE_SHM_QP_DEST_QPN |
			   DROCE_SHM_QP_RQ_PSN;
		ud_attr(id, a);
		a->ah.flow_label = flow_label(id);
		a->path_mtu = id->path_mtu;
		a->dest_qp_num = id->remote_qpn;
		/* rdma_init_qp_attr: rq_psn is the id's own advertised PSN (Linux's seq_num). */
		a->rq_psn = id->psn;
		if (rc) {
			a->mask |= DROCE_SHM_QP_MAX_DEST_RD_ATOMIC | DROCE_SHM_QP_MIN_RNR_TIMER;
			a->max_dest_rd_atomic = id->responder_resources;
			a->min_rnr_timer = 0;
		}
		return 0;
	case DROCE_SHM_QPS_RTS:
		a->mask = DROCE_SHM_QP_STATE | DROCE_SHM_QP_SQ_PSN;
		if (ud)
			return 0;
		if (!id->connected_once)
			return -EINVAL;
		/* cm_init_qp_rts_attr: the peer's advertised PSN (see rq_psn). */
		a->sq_psn = id->remote_psn;
		if (rc) {
			a->mask |= DROCE_SHM_QP_TIMEOUT | DROCE_SHM_QP_RETRY_CNT |
				   DROCE_SHM_QP_RNR_RETRY | DROCE_SHM_QP_MAX_QP_RD_ATOMIC;
			a->timeout = id->ack_timeout_set ? id->ack_timeout : id->local_ack_timeout;
			a->retry_cnt = id->retry_count;
			a->rnr_retry = id->rnr_retry_count;
			a->max_rd_atomic = id->initiator_depth;
		}
		return 0;
	default:
		return -EINVAL;
	}
}

/* DROCE_PROTO_CM_QPS_CONNECT: INIT, RTR and RTS in one answer. */
static int
op_init_qp_attrs(struct droced_cm_id *id, struct droce_proto_cm_qp_attr a[3])
{
	static const uint32_t states[3] = {
		DROCE_SHM_QPS_INIT, DROCE_SHM_QPS_RTR, DROCE_SHM_QPS_RTS
	};
	unsigned int i;
	int rc;

	for (i = 0; i < 3; i++) {
		rc = op_init_qp_attr(id, states[i], &a[i]);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* A CM_INIT_QP_ATTR answer as a modify of droced's own (what ibv_modify_qp would send). */
static void
qp_attr_to_shm(const struct droce_proto_cm_qp_attr *a, struct droce_shm_qp_attr *s)
{
	memset(s, 0, sizeof(*s));
	s->mask = a->mask;
	s->qp_state = (uint8_t)a->qp_state;
	s->qp_access_flags = a->qp_access_flags;
	s->dest_qp_num = a->dest_qp_num;
	s->rq_psn = a->rq_psn;
	s->sq_psn = a->sq_psn;
	s->qkey = a->qkey;
	s->pkey_index = a->pkey_index;
	s->port_num = a->port_num;
	s->path_mtu = a->path_mtu;
	s->max_dest_rd_atomic = a->max_dest_rd_atomic;
	s->max_rd_atomic = a->max_rd_atomic;
	s->min_rnr_timer = a->min_rnr_timer;
	s->timeout = a->timeout;
	s->retry_cnt = a->retry_cnt;
	s->rnr_retry = a->rnr_retry;
	s->ah = a->ah;
}

/*
 * Moves QP qpn of the id's process to RTR, then RTS (DROCE_PROTO_CM_CONN_F_MOVE_QP), with
 * the attributes op_init_qp_attrs gives, as librdmacm's rcm_qp_connect applies them: the
 * QP is in INIT since rdma_create_qp, so INIT's access flags and P_Key index ride on the
 * RTR change (optional there, IBA 11.2.4.2), and an accept's responder resources and
 * initiator depth (cp; NULL on the active side) replace the CM's. Not 0: nothing the
 * library could not redo (at worst the QP is left in RTR, which it moves on from).
 */
static int
qp_connect(struct droced_cm_id *id, uint32_t qpn, const struct droce_proto_cm_conn *cp)
{
	struct droce_proto_cm_qp_attr a[3];
	struct droce_shm_qp_attr rtr, rts;
	int rc;

	rc = op_init_qp_attrs(id, a);
	if (rc == 0) {
		qp_attr_to_shm(&a[1], &rtr);
		rtr.mask |= a[0].mask & (DROCE_SHM_QP_ACCESS_FLAGS | DROCE_SHM_QP_PKEY_INDEX);
		rtr.qp_access_flags = a[0].qp_access_flags;
		rtr.pkey_index = a[0].pkey_index;
		qp_attr_to_shm(&a[2], &rts);
		if (cp != NULL) {
			rtr.max_dest_rd_atomic = cp->responder_resources;
			rts.max_rd_atomic = cp->initiator_depth;
		}
		rc = droced_client_qp_modify_num(id->ch->c, qpn, &rtr);
	}
	if (rc == 0)
		rc = droced_client_qp_modify_num(id->ch->c, qpn, &rts);
	if (rc != 0) {
		qp_move_fallbacks++;
		DROCED_LOG(DEBUG, "cm: id %u: QP %u not moved (%s): the library moves it\n",
			   id->handle, qpn, strerror(-rc));
		return rc;
	}
	qp_moves++;
	return 0;
}

static int
op_set_option(struct droced_cm_id *id, uint32_t name, uint32_t value)
{
	switch (name) {
	case DROCE_PROTO_CM_OPT_TOS:
		id->tos = (uint8_t)value;
		return 0;
	case DROCE_PROTO_CM_OPT_REUSEADDR:
		/* cma.c: only before binding. */
		if (id->state != ID_IDLE)
			return -EINVAL;
		id->reuseaddr = value != 0;
		return 0;
	case DROCE_PROTO_CM_OPT_AFONLY:
		if (id->state != ID_IDLE)
			return -EINVAL;
		id->afonly = value != 0;
		return 0;
	case DROCE_PROTO_CM_OPT_ACK_TIMEOUT:
		id->ack_timeout_set = true;
		id->ack_timeout = (uint8_t)RTE_MIN(value, (uint32_t)DROCE_SHM_TIMER_CODE_MAX);
		return 0;
	default:
		return -ENOSYS;
	}
}

/* ---- Multicast (rdma_join_multicast, rdma_leave_multicast) ---- */

/*
 * A join, as Linux's rdma_join_multicast and cma_iboe_join_multicast on a RoCEv2 port: a
 * UD id with a device, bound or its address resolved (not while resolving, not after the
 * route), and a group of its source's IP version (a RoCEv2 packet has one); the MGID is the
 * group's address, IPv4-mapped for IPv4 (Linux refuses IPv6 groups on RoCEv2 with
 * ENOTSUPP: droce takes them). Nothing on the wire answers a RoCE join: the event is queued
 * at once, behind the id's earlier events. It carries what ib_init_ah_from_mcmember makes
 * of Linux's record: the MGID, the id's source GID, hop limit 64, traffic class, SL and
 * flow label 0; QPN 0xFFFFFF and the id's Q_Key. The QP is librdmacm's to attach (the
 * port announces the group then: droced_client.c).
 */
static int
op_join(struct droced_cm_id *id, const struct droce_proto_req *req)
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
	if (!droced_gid_is_multicast(a->addr))
		return -EINVAL;
	if (addr_v4(a) != (memcmp(id->sgid, v4_prefix, sizeof(v4_prefix)) == 0))
		return -EINVAL;
	if (id->ch->nb_mcast >= CM_MAX_MCAST)
		return -ENOMEM;
	mc = calloc(1, sizeof(*mc));
	e = ev_new(id, DROCE_PROTO_CM_EVENT_MULTICAST_JOIN, 0);
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
	e->ev.ud.qkey = CM_UDP_QKEY;
	e->ev.conn.qp_type = DROCE_SHM_QPT_UD;
	ev_queue(id->ch, e);
	return 0;
}

/* rdma_leave_multicast: the join of that uid goes, with its events not yet handed out. */
static int
op_leave(struct droced_cm_id *id, uint32_t uid)
{
	struct cm_mcast *mc;

	LIST_FOREACH(mc, &id->mcast, next)
		if (mc->uid == uid)
			break;
	if (mc == NULL)
		return -ENOENT;	/* ucma's answer for a join it does not know */
	ev_drop_mc(id, mc);
	LIST_REMOVE(mc, next);
	id->nb_mcast--;
	id->ch->nb_mcast--;
	free(mc);
	return 0;
}

/* ---- Channels ---- */

static struct droced_cm_chan *
chan_by_token(uint32_t token)
{
	struct droced_cm_chan *ch;

	TAILQ_FOREACH(ch, &chans, next)
		if (ch->token == token)
			return ch;
	return NULL;
}

static int
op_open(struct droced_client *c, const struct droce_proto_req *req,
	struct droce_proto_resp *resp, int *out_fds, unsigned int *out_nfds)
{
	struct droced_cm_chan *ch;
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
droced_cm_chan_free(struct droced_client *c)
{
	struct droced_cm_chan *ch = c->cm;
	struct cm_event *e;
	uint32_t h;

	if (ch == NULL)
		return;
	/* Listeners first: their unreported requests go with them, rejected. */
	for (h = 0; h < ch->cap; h++)
		if (ch->ids[h] != NULL && ch->ids[h]->state == ID_LISTEN)
			id_destroy(ch->ids[h]);
	for (h = 0; h < ch->cap; h++)
		if (ch->ids[h] != NULL)
			id_destroy(ch->ids[h]);
	while ((e = TAILQ_FIRST(&ch->events)) != NULL) {
		TAILQ_REMOVE(&ch->events, e, next);
		free(e);
	}
	TAILQ_REMOVE(&chans, ch, next);
	close(ch->rfd);
	close(ch->efd);
	free(ch->ids);
	free(ch);
	c->cm = NULL;
}

static int
op_get_event(struct droced_cm_chan *ch, struct droce_proto_resp *resp)
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
		id_info(e->id, &resp->cm_event.info);
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
op_migrate(struct droced_cm_chan *ch, const struct droce_proto_req *req,
	   struct droce_proto_resp *resp)
{
	struct droced_cm_chan *from = chan_by_token(req->cm_migrate.from_channel);
	struct droced_cm_id *id;
	struct cm_event *e, *next;
	uint32_t old;

	if (from == NULL)
		return -EINVAL;
	/* The token is a capability, and only between processes of one user. */
	if (from->c->uid != ch->c->uid)
		return -EPERM;
	id = id_get(from, req->cm_migrate.id);
	if (id == NULL || id->listener != NULL)
		return -EINVAL;
	if (from == ch) {
		resp->cm_id.id = id->handle;
		return 0;
	}
	old = id->handle;
	if (id_table_add(ch, id) != 0) {
		id->ch = from;
		id->handle = old;
		return -ENOMEM;
	}
	from->ids[old] = NULL;
	from->nb--;
	from->nb_mcast -= id->nb_mcast;
	ch->nb_mcast += id->nb_mcast;
	if (old < from->hint)
		from->hint = old;
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
	pipe_flush(ch);
	resp->cm_id.id = id->handle;
	return 0;
}

bool
droced_cm_op(uint32_t op)
{
	return (op >= DROCE_PROTO_OP_CM_OPEN && op <= DROCE_PROTO_OP_CM_NOTIFY) ||
	       op == DROCE_PROTO_OP_CM_JOIN_MCAST || op == DROCE_PROTO_OP_CM_LEAVE_MCAST;
}

int
droced_cm_handle(struct droced_client *c, const struct droce_proto_req *req, size_t n,
		 struct droce_proto_resp *resp, int *out_fds, unsigned int *out_nfds)
{
	struct droced_cm_chan *ch = c->cm;
	struct droced_cm_id *id;
	uint32_t handle;

	RTE_SET_USED(n);	/* droced_client checked the size against req_min */
	if (req->op == DROCE_PROTO_OP_CM_OPEN)
		return op_open(c, req, resp, out_fds, out_nfds);
	if (ch == NULL)
		return -EPROTO;
	switch (req->op) {
	case DROCE_PROTO_OP_CM_CREATE_ID: {
		uint16_t ps = (uint16_t)req->cm_create_id.ps;
		uint32_t qpt = req->cm_create_id.qp_type;

		if (req->cm_create_id.ps > UINT16_MAX || ps_index(ps) < 0)
			return -EINVAL;
		/* ucma_get_qp_type: TCP is RC, UDP and IPoIB are UD, IB takes what it is given. */
		if (ps == DROCE_PROTO_CM_PS_TCP)
			qpt = DROCE_SHM_QPT_RC;
		else if (ps == DROCE_PROTO_CM_PS_UDP || ps == DROCE_PROTO_CM_PS_IPOIB)
			qpt = DROCE_SHM_QPT_UD;
		else if (qpt != DROCE_SHM_QPT_RC && qpt != DROCE_SHM_QPT_UC &&
			 qpt != DROCE_SHM_QPT_UD)
			return -EINVAL;
		id = id_new(ch, req->cm_create_id.uctx, ps, (uint8_t)qpt);
		if (id == NULL)
			return -ENOMEM;
		resp->cm_id.id = id->handle;
		return 0;
	}
	case DROCE_PROTO_OP_CM_GET_EVENT:
		return op_get_event(ch, resp);
	case DROCE_PROTO_OP_CM_MIGRATE:
		return op_migrate(ch, req, resp);
	default:
		break;
	}
	/* Every other op names an id first (cm_id, cm_bind, cm_conn, ... all begin with it). */
	handle = req->cm_id.id;
	id = id_get(ch, handle);
	if (id == NULL)
		return -EINVAL;
	switch (req->op) {
	case DROCE_PROTO_OP_CM_DESTROY_ID:
		id_destroy(id);
		return 0;
	case DROCE_PROTO_OP_CM_BIND: {
		int rc;

		if (id->state != ID_IDLE)
			return -EINVAL;
		rc = id_bind(id, &req->cm_bind.addr);
		if (rc == 0)
			id_info(id, &resp->cm_query);
		return rc;
	}
	case DROCE_PROTO_OP_CM_RESOLVE_ADDR:
		return op_resolve_addr(id, req);
	case DROCE_PROTO_OP_CM_RESOLVE_ROUTE:
		if (id->state != ID_ADDR_RESOLVED)
			return -EINVAL;
		id->state = ID_ROUTE_RESOLVED;
		id->route = true;
		ev_simple(id, DROCE_PROTO_CM_EVENT_ROUTE_RESOLVED, 0);
		return 0;
	case DROCE_PROTO_OP_CM_QUERY:
		id_info(id, &resp->cm_query);
		return 0;
	case DROCE_PROTO_OP_CM_LISTEN:
		return op_listen(id, req->cm_listen.backlog);
	case DROCE_PROTO_OP_CM_CONNECT:
		return op_connect(id, &req->cm_conn.conn, req->cm_conn.flags);
	case DROCE_PROTO_OP_CM_ACCEPT:
		return op_accept(id, &req->cm_conn.conn, req->cm_conn.flags, resp);
	case DROCE_PROTO_OP_CM_ESTABLISH:
		return op_establish(id);
	case DROCE_PROTO_OP_CM_REJECT:
		return op_reject(id, req);
	case DROCE_PROTO_OP_CM_DISCONNECT:
		return op_disconnect(id);
	case DROCE_PROTO_OP_CM_INIT_QP_ATTR:
		if (req->cm_init_qp_attr.qp_state == DROCE_PROTO_CM_QPS_CONNECT)
			return op_init_qp_attrs(id, resp->cm_qp_attrs);
		return op_init_qp_attr(id, req->cm_init_qp_attr.qp_state, &resp->cm_qp_attr);
	case DROCE_PROTO_OP_CM_SET_OPTION:
		return op_set_option(id, req->cm_set_option.name, req->cm_set_option.value);
	case DROCE_PROTO_OP_CM_NOTIFY:
		return op_notify(id, req->cm_notify.event);
	case DROCE_PROTO_OP_CM_JOIN_MCAST:
		return op_join(id, req);
	case DROCE_PROTO_OP_CM_LEAVE_MCAST:
		return op_leave(id, req->cm_mcast.uid);
	default:
		return -EINVAL;
	}
}

/* ---- Time, shutdown, status ---- */

void
droced_cm_tick(uint64_t now_ns)
{
	struct droced_cm_id *id, *next;
	struct droced_cm_chan *ch;

	for (id = TAILQ_FIRST(&resolving); id != NULL; id = next) {
		next = TAILQ_NEXT(id, rnext);
		if (now_ns >= id->resolve_deadline_ns)
			resolve_done(id, -ETIMEDOUT);
	}
	droced_cm_conn_timers(now_ns);
	TAILQ_FOREACH(ch, &chans, next)
		if (ch->owed != 0)
			pipe_flush(ch);
}

void
droced_cm_shutdown(void)
{
	struct droced_cm_chan *ch;
	char line[256];
	size_t n;
	uint32_t h;

	n = (size_t)snprintf(line, sizeof(line), "QP1: %" PRIu64 " CM MADs in, %" PRIu64
			     " out (%" PRIu64 " to ourselves, %" PRIu64 " not sent); dropped:",
			     droced.gsi.rx_mads, droced.gsi.tx_mads, droced.gsi.tx_local,
			     droced.gsi.tx_drop);
	for (h = 0; h < DROCED_GSI_BAD_COUNT && n < sizeof(line); h++)
		if (droced.gsi.rx_bad[h] != 0)
			n += (size_t)snprintf(line + n, sizeof(line) - n, " %s %" PRIu64,
					      droced_gsi_bad_names[h], droced.gsi.rx_bad[h]);
	DROCED_LOG(NOTICE, "%s", line);

	TAILQ_FOREACH(ch, &chans, next)
		for (h = 0; h < ch->cap; h++)
			if (ch->ids[h] != NULL && ch->ids[h]->port != NULL)
				ev_simple(ch->ids[h], DROCE_PROTO_CM_EVENT_DEVICE_REMOVAL, 0);
}

void
droced_cm_status(struct droce_proto_status *st)
{
	const struct droced_cm_chan *ch;
	const struct droced_cm_id *id;
	unsigned int i;

	TAILQ_FOREACH(ch, &chans, next)
		st->cm_channels++;
	st->cm_ids = nb_ids;
	TAILQ_FOREACH(id, &bound_ids, lnext)
		st->cm_listeners += id->state == ID_LISTEN;
	st->cm_conns = droced_cm_conn_count();
	st->cm_rx_mads = droced.gsi.rx_mads;
	st->cm_tx_mads = droced.gsi.tx_mads;
	for (i = 0; i < DROCED_GSI_BAD_COUNT; i++)
		st->cm_rx_bad += droced.gsi.rx_bad[i];
	st->cm_qp_moves = qp_moves;
	st->cm_qp_move_fallbacks = qp_move_fallbacks;
}
