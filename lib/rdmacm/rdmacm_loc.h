/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDMACM_LOC_H
#define RDMACM_LOC_H

/*
 * librdmacm internals: the private objects that embed rdma-core's public ones (reached
 * with the to_r*() helpers), and the helpers shared between the files of lib/rdmacm,
 * grouped by the file that defines them.
 *
 * One event channel is one SOCK_SEQPACKET connection to droced that began with CM_OPEN
 * (droce_shm_proto.h, "rdma_cm"); its fd is the read end of droced's event pipe. The
 * verbs go through droce's libibverbs.so.1, as an application's do, so both share one
 * libdroce and its device contexts.
 *
 * Locks, outermost first: rcm_dev_lock (the device table), a channel's lock (its round
 * trips and its list of ids), an id's lock (its event counters). The channel lock is never
 * held while the pipe is read, so one thread may sleep in rdma_get_cm_event while others
 * use the channel.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "droce_shm_proto.h"

#define RCM_EXPORT	__attribute__((visibility("default")))

#define rcm_container_of(ptr, type, member) \
	((type *)(void *)((uint8_t *)(ptr) - offsetof(type, member)))

/* The one port of every droce device (lib/verbs: VERBS_PORT_NUM). */
#define RCM_PORT_NUM		1
/* Buckets of a channel's id table: droced hands out small handles, lowest free first. */
#define RCM_ID_BUCKETS		1024
#define RCM_DEV_PREFIX		"droce"
/* rdma-core's defaults for a NULL rdma_conn_param (cma.c): retry and RNR retry 7. */
#define RCM_DEFAULT_RETRY	7
#define RCM_DEFAULT_RNR_RETRY	7
/* rdma_create_ep's address and route resolution timeout, as rdma-core's. */
#define RCM_EP_TIMEOUT_MS	2000
/* IBTA CM REJ reason 35: vendor option not supported (rdma_reject_ece, as rdma-core). */
#define RCM_REJ_VENDOR_OPTION_NOT_SUPPORTED	35
/* The permissive LID (IB 4.1.1): what Linux puts in a RoCE path record's LIDs. */
#define RCM_LID_PERMISSIVE	0xFFFF
/* Linux's CMA_IBOE_PACKET_LIFETIME: a RoCE path's packet life time code. */
#define RCM_IBOE_PACKET_LIFETIME	16
/* The channel's DEBUG switch, shared with libdroce. */
#define RCM_DEBUG_ENV		"DROCE_DEBUG"

/* One droced port's verbs context, opened once per process and kept (rdma_get_devices). */
struct rcm_device {
	struct ibv_context *verbs;
	struct ibv_pd *pd;		/* the default PD of rdma_create_qp(id, NULL, ...) */
	uint8_t max_resp_res;		/* max_qp_rd_atom */
	uint8_t max_init_depth;		/* max_qp_init_rd_atom */
};

struct rcm_id;

/*
 * A multicast join of an id (rdma-core's struct cma_multicast): on the id's list from
 * rdma_join_multicast until rdma_leave_multicast or rdma_destroy_id. Its fields after
 * uid change under the id's mut.
 */
struct rcm_mc {
	struct rcm_mc *next;
	uint32_t uid;			/* its name, echoed in droced's events */
	uint16_t join_flags;		/* RDMA_MC_JOIN_FLAG_* */
	bool attached;			/* it attached id.qp to mgid (or found it so) */
	void *context;			/* its events' param.ud.private_data */
	union ibv_gid mgid;		/* from its MULTICAST_JOIN */
	struct sockaddr_storage addr;	/* as given: rdma_leave_multicast compares it */
	uint32_t events_reported;	/* its events handed out, and acked: a leave waits */
	uint32_t events_completed;
};

struct rcm_channel {
	struct rdma_event_channel ch;	/* first: the application sees its fd */
	int sock;
	uint32_t seq;
	uint32_t token;			/* CM_OPEN's answer: names the channel to CM_MIGRATE */
	pthread_mutex_t lock;		/* round trips and ids */
	struct rcm_id *ids;		/* ids whose events arrive here */
	struct rcm_id *by_handle[RCM_ID_BUCKETS];	/* the same ids, by handle */
	bool lost;			/* the socket failed: droced is gone */
	bool eof;			/* the pipe reached end of file */
	uint32_t waiters;		/* threads inside rdma_get_cm_event (atomic) */
	bool closed;			/* destroyed while a thread waited in it (atomic) */
};

struct rcm_id {
	struct rdma_cm_id id;		/* first: the application's rdma_cm_id */
	uint32_t handle;		/* droced's, on id.channel's connection */
	bool sync;			/* created without a channel: id.channel is private */
	bool connect_error;		/* a CONNECT_RESPONSE failed: later REJ/DREQ unreported */
	bool removal_reported;		/* DEVICE_REMOVAL handed out after droced died */
	struct rcm_device *dev;
	uint8_t initiator_depth;
	uint8_t responder_resources;
	/* Events handed out for this id and events acked (rdma_destroy_id waits for both). */
	pthread_mutex_t mut;
	pthread_cond_t cond;
	uint32_t events_reported;
	uint32_t events_completed;
	struct ibv_qp_init_attr *qp_init_attr;	/* passive rdma_create_ep: rdma_get_request */
	struct rcm_mc *mcs;			/* multicast joins, newest first (mut) */
	uint32_t mc_uid;			/* the next join's uid (under mut) */
	struct ibv_sa_path_rec path;		/* id.route.path_rec */
	struct rcm_id *next;			/* on the channel's list */
	struct rcm_id **pprev;			/* what points at it there */
	struct rcm_id *hnext;			/* in the channel's table, by handle */
};

/* An event as handed out: its private data lives with it until rdma_ack_cm_event. */
struct rcm_event {
	struct rdma_cm_event event;
	struct rcm_id *owner;		/* whose events_completed the ack counts */
	struct rcm_mc *mc;		/* MULTICAST_JOIN, _ERROR: the join's, counted too */
	uint8_t private_data[DROCE_PROTO_CM_PDATA_MAX];
};

static inline struct rcm_channel *
to_rch(struct rdma_event_channel *ch)
{
	return rcm_container_of(ch, struct rcm_channel, ch);
}

static inline struct rcm_id *
to_rid(struct rdma_cm_id *id)
{
	return rcm_container_of(id, struct rcm_id, id);
}

/* Sets errno to err and returns -1: librdmacm's convention (rdma-core's ERR()). */
static inline int
rcm_err(int err)
{
	errno = err;
	return -1;
}

static inline void *
rcm_err_null(int err)
{
	errno = err;
	return NULL;
}

/* rdmacm_channel.c */
struct rcm_channel *rcm_channel_open(int *err);
void rcm_channel_close(struct rcm_channel *c);
/* One round trip on the channel: 0 or a positive errno (ENODEV once droced is gone). */
int rcm_call(struct rcm_channel *c, struct droce_proto_req *req,
	     struct droce_proto_resp *resp);
void rcm_channel_link(struct rcm_channel *c, struct rcm_id *r);
void rcm_channel_unlink(struct rcm_channel *c, struct rcm_id *r);
void rcm_event_complete(struct rcm_id *r);
int rcm_destroy_call(struct rcm_channel *c, struct rcm_id *r);
int rcm_migrate_call(struct rcm_channel *to, struct rcm_id *r);
void rcm_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* rdmacm_id.c */
struct rcm_id *rcm_id_alloc(struct rdma_event_channel *channel, void *context,
			    enum rdma_port_space ps, enum ibv_qp_type qp_type);
void rcm_id_free(struct rcm_id *r);
int rcm_id_create(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
		  enum rdma_port_space ps, enum ibv_qp_type qp_type);
int rcm_id_query(struct rcm_id *r);
int rcm_id_fill(struct rcm_id *r, const struct droce_proto_cm_id_info *info);
int rcm_complete(struct rcm_id *r);
int rcm_addr_to_proto(const struct sockaddr *sa, struct droce_proto_cm_addr *a);
int rcm_addrlen(const struct sockaddr *sa);

/* rdmacm_qp.c */
void rcm_ah_from_proto(const struct droce_shm_ah_attr *s, struct ibv_ah_attr *a);
int rcm_qp_connect(struct rdma_cm_id *id, uint8_t resp_res, uint8_t init_depth);
int rcm_qp_err(struct rdma_cm_id *id);

/* rdmacm_mcast.c */
/* The join uid of r, its event counted as handed out (r's too); NULL once it left. */
struct rcm_mc *rcm_mc_reported(struct rcm_id *r, uint32_t uid);
/* A MULTICAST_JOIN or _ERROR of mc, its param.ud copied: rdma-core's ucma_process_join. */
void rcm_mc_event(struct rcm_event *e, struct rcm_mc *mc);
void rcm_mc_event_complete(struct rcm_id *r, struct rcm_mc *mc);
/* id.qp goes (rdma_destroy_qp): detached from every group first. */
void rcm_mc_qp_gone(struct rcm_id *r);
/* rdma_destroy_id: the joins left go, detaching id.qp where it is still attached. */
void rcm_mc_release(struct rcm_id *r);

/* rdmacm_device.c */
struct rcm_device *rcm_device_get(uint32_t port, int *err);

#endif /* RDMACM_LOC_H */
