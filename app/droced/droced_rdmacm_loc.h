/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef DROCED_RDMACM_LOC_H
#define DROCED_RDMACM_LOC_H

/*
 * The rdma_cm side's internals, shared by its three files, each calling only the ones
 * after it (droced's layers.txt checks the files have no cycle):
 *   droced_rdmacm.c       the requests, address resolution, listening, multicast,
 *                         channels, the tick, status
 *   droced_rdmacm_conn.c  connecting: CONNECT, ACCEPT, REJECT, DISCONNECT, what the wire
 *                         side reports, QP attributes (rdma_init_qp_attr), QP moves
 *   droced_rdmacm_id.c    ids, their events and the channel's pipe, binding, addresses
 */

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
#define CM_PERMISSIVE_LID	0xFFFF
#define CM_PS_COUNT		4
#define CM_MCAST_HOP_LIMIT	64	/* IPV6_DEFAULT_HOPLIMIT: Linux's RoCEv2 joins */
#define CM_MAX_MCAST		65536	/* multicast joins per channel: -ENOMEM beyond */

/* An id's state, short names for droce_shm_proto.h's (one list, so the same numbers). */
enum cm_id_state {
#define CM_ID_STATE_ENUM(name) ID_##name = DROCE_PROTO_CM_ID_##name,
	DROCE_PROTO_CM_ID_STATE_LIST(CM_ID_STATE_ENUM)
#undef CM_ID_STATE_ENUM
};

struct cm_event {
	TAILQ_ENTRY(cm_event) next;
	struct droced_rdmacm_id *id;
	struct droce_proto_cm_event ev;
};

struct droced_rdmacm_chan {
	struct droced_client *c;
	TAILQ_ENTRY(droced_rdmacm_chan) next;
	uint32_t token;
	int efd;			/* the pipe's write end, non-blocking, ours */
	int rfd;			/* its read end, passed with CM_OPEN */
	uint64_t owed;			/* bytes the full pipe did not take yet */
	uint32_t nb_events;
	TAILQ_HEAD(, cm_event) events;
	struct droced_table ids;	/* its ids by handle, lowest free first */
	uint32_t nb_mcast;		/* its ids' multicast joins */
};

/* A multicast join of an id (rdma_join_multicast): the library's uid names it. */
struct cm_mcast {
	LIST_ENTRY(cm_mcast) next;
	uint32_t uid;
	uint8_t mgid[16];
};

struct droced_rdmacm_id {
	struct droced_rdmacm_chan *ch;
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
	struct droced_rdmacm_id *listener;
	/* Address resolution waiting for ARP. */
	bool resolving;
	uint64_t resolve_deadline_ns;
	/* The connection. */
	struct droced_ibcm_conn *conn;
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
	TAILQ_ENTRY(droced_rdmacm_id) lnext;	/* bound or listening list */
	TAILQ_ENTRY(droced_rdmacm_id) rnext;	/* resolving list */
};

TAILQ_HEAD(rdmacm_id_list, droced_rdmacm_id);

/* droced_rdmacm_id.c */
extern struct rdmacm_id_list rdmacm_bound_ids;	/* bound or listening: ports in use */
extern struct rdmacm_id_list rdmacm_resolving;	/* address resolutions waiting for ARP */
extern uint32_t rdmacm_nb_ids;
int rdmacm_ps_index(uint16_t ps);
bool rdmacm_addr_any(const struct droce_proto_cm_addr *a);
bool rdmacm_addr_v4(const struct droce_proto_cm_addr *a);
bool rdmacm_addr_loopback(const struct droce_proto_cm_addr *a);
struct droced_port *rdmacm_addr_port(struct droced *d, const struct droce_proto_cm_addr *a);
void rdmacm_port_gid0(const struct droced_port *p, uint8_t gid[16], uint8_t *index);
bool rdmacm_port_gid_v6(const struct droced_port *p, const uint8_t dst[16], uint8_t gid[16],
			unsigned int *bits);
void rdmacm_id_set_sgid(struct droced_rdmacm_id *id, const uint8_t gid[16]);
void rdmacm_pipe_flush(struct droced_rdmacm_chan *ch);
struct cm_event *rdmacm_ev_new(struct droced_rdmacm_id *id, uint32_t type, int32_t status);
void rdmacm_ev_queue(struct droced_rdmacm_chan *ch, struct cm_event *e);
void rdmacm_ev_simple(struct droced_rdmacm_id *id, uint32_t type, int32_t status);
void rdmacm_ev_drop_mc(struct droced_rdmacm_id *id, const struct cm_mcast *mc);
struct droced_rdmacm_id *rdmacm_id_get(const struct droced_rdmacm_chan *ch, uint32_t handle);
int rdmacm_id_table_add(struct droced_rdmacm_chan *ch, struct droced_rdmacm_id *id);
struct droced_rdmacm_id *rdmacm_id_new(struct droced_rdmacm_chan *ch, uint64_t uctx, uint16_t ps,
				       uint8_t qp_type);
void rdmacm_id_destroy(struct droced_rdmacm_id *id);
bool rdmacm_bind_conflict(const struct droced_rdmacm_id *id, uint16_t port);
int rdmacm_id_bind(struct droced_rdmacm_id *id, const struct droce_proto_cm_addr *addr);
void rdmacm_id_info(const struct droced_rdmacm_id *id, struct droce_proto_cm_id_info *info);

/* droced_rdmacm_conn.c */
extern uint64_t rdmacm_qp_moves, rdmacm_qp_move_fallbacks;	/* DROCE_PROTO_CM_CONN_F_MOVE_QP */
int rdmacm_op_connect(struct droced_rdmacm_id *id, const struct droce_proto_cm_conn *cp,
		      uint32_t flags);
int rdmacm_op_accept(struct droced_rdmacm_id *id, const struct droce_proto_cm_conn *cp,
		     uint32_t flags,
		     struct droce_proto_resp *resp);
int rdmacm_op_reject(struct droced_rdmacm_id *id, const struct droce_proto_req *req);
int rdmacm_op_establish(struct droced_rdmacm_id *id);
int rdmacm_op_disconnect(struct droced_rdmacm_id *id);
int rdmacm_op_notify(struct droced_rdmacm_id *id, uint32_t event);
int rdmacm_op_init_qp_attr(struct droced_rdmacm_id *id, uint32_t state,
			   struct droce_proto_cm_qp_attr *a);
int rdmacm_op_init_qp_attrs(struct droced_rdmacm_id *id, struct droce_proto_cm_qp_attr a[3]);
int rdmacm_op_set_option(struct droced_rdmacm_id *id, uint32_t name, uint32_t value);

#endif /* DROCED_RDMACM_LOC_H */
