/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef DROCE_SHM_PROTO_H
#define DROCE_SHM_PROTO_H

/*
 * The control protocol between libdroce (or droce-ctl) and droced: fixed-size messages on
 * a SOCK_SEQPACKET Unix socket, one request answered by one response, in order. File
 * descriptors travel beside a message as SCM_RIGHTS (the region memfd, eventfds, the memfds
 * behind a memory region). No DPDK here: both sides include it.
 *
 * A connection is one opened device context (ibv_open_device) once it has sent HELLO; before
 * that it may only send QUERY_PORTS or STATUS (ibv_get_device_list, droce-ctl). Everything a
 * context created is torn down by droced when the connection closes.
 *
 * Objects are named by handles that droced assigns per connection (never pointers, never
 * another client's). status in a response is 0 or a negative errno, which libdroce returns
 * as the verb's errno: droced does the checks that need its state (handles, limits,
 * transitions, keys); libdroce does the argument checks it can do alone first.
 *
 * Besides the messages, the region carries one ring that only droced writes: asynchronous
 * events (struct droce_proto_event_ring), announced on the async notification fd of HELLO.
 *
 * Notification fds (the async fd of HELLO, the fd of a CQ created with a channel) are the
 * read ends of pipes that droced creates: droced (or its engine) writes a byte or a few per
 * notification to its own non-blocking write end, the application polls and drains the read
 * end. Not eventfds: an eventfd is one file description shared by both processes, so an
 * application could make droced's write block (fill the counter, clear O_NONBLOCK) and stall
 * an engine; a pipe's write end is droced's alone, and a full pipe just means "readable".
 *
 * Memory-region memfds must be sealed against shrinking (F_SEAL_SHRINK, so created with
 * MFD_ALLOW_SEALING): droced maps them, and a file that shrank under its mapping would fault.
 */

#include <stdint.h>
#include <sys/types.h>

#include "droce_shm.h"
#include "droce_shm_ctl.h"

#define DROCE_PROTO_VERSION		1u
#define DROCE_PROTO_SOCKET_ENV		"DROCE_SOCKET"
#define DROCE_PROTO_SOCKET_DEFAULT	"/run/droce/droced.sock"
#define DROCE_PROTO_MAX_PORTS		8
#define DROCE_PROTO_MAX_GIDS		16
#define DROCE_PROTO_MAX_FDS		64	/* per message */
#define DROCE_PROTO_MR_MAX_PIECES	DROCE_PROTO_MAX_FDS
#define DROCE_PROTO_NO_HANDLE		UINT32_MAX
#define DROCE_PROTO_EVENT_RING		256	/* entries of the async event ring */

enum droce_proto_op {
	DROCE_OP_QUERY_PORTS = 1,	/* no fds; allowed before HELLO */
	DROCE_OP_STATUS,		/* no fds; allowed before HELLO */
	DROCE_OP_HELLO,			/* -> fds: region memfd, async notification fd */
	DROCE_OP_ALLOC_PD,
	DROCE_OP_DEALLOC_PD,
	DROCE_OP_REG_MR,		/* <- fds: one sealed memfd per piece */
	DROCE_OP_DEREG_MR,
	DROCE_OP_CREATE_CQ,		/* -> fd: the CQ's notification fd when asked for */
	DROCE_OP_DESTROY_CQ,
	DROCE_OP_CREATE_SRQ,
	DROCE_OP_MODIFY_SRQ,
	DROCE_OP_QUERY_SRQ,
	DROCE_OP_DESTROY_SRQ,
	DROCE_OP_CREATE_QP,
	DROCE_OP_MODIFY_QP,
	DROCE_OP_QUERY_QP,
	DROCE_OP_DESTROY_QP,
	DROCE_OP_CREATE_AH,
	DROCE_OP_DESTROY_AH,
	DROCE_OP_MAX
};

/* ---- Devices (one per droced port) ---- */

/* rdma-core's enum ibv_port_state values */
#define DROCE_PROTO_PORT_DOWN	1
#define DROCE_PROTO_PORT_ACTIVE	4

struct droce_proto_port_info {
	uint8_t mac[6];
	uint8_t state;			/* DROCE_PROTO_PORT_* */
	uint8_t max_mtu;		/* enum ibv_mtu of the configured RoCE MTU */
	uint32_t ipv4;			/* network order; 0: none */
	uint64_t node_guid;		/* network order: EUI-64 of the MAC */
	char name[16];			/* droced's port name from the configuration */
};

/* What droced honours for one context: ibv_query_device reports exactly these. */
struct droce_proto_limits {
	uint32_t max_qp;
	uint32_t max_qp_wr;
	uint32_t max_sge;
	uint32_t max_inline;
	uint32_t max_cq;
	uint32_t max_cqe;
	uint32_t max_mr;
	uint64_t max_mr_size;		/* bytes over all MRs of the context */
	uint32_t max_pd;
	uint32_t max_srq;
	uint32_t max_srq_wr;
	uint32_t max_srq_sge;
	uint32_t max_ah;
	uint32_t max_qp_rd_atom;	/* as responder: largest max_dest_rd_atomic */
	uint32_t max_qp_init_rd_atom;	/* as initiator: largest max_rd_atomic */
};

struct droce_proto_gid {
	uint8_t gid[16];
	uint8_t type;		/* enum ibv_gid_type: 2 = RoCE v2 */
	uint8_t valid;		/* 0: an empty entry (ibv_query_gid_ex: ENODATA) */
	uint8_t rsvd[2];
};

/* ---- Async event ring (in the region; droced produces, the application consumes) ---- */

struct droce_proto_event {
	uint32_t type;		/* enum ibv_event_type */
	uint32_t handle;	/* CQ or SRQ handle, QPN for QP events; unused for device events */
};

struct droce_proto_event_ring {
	struct droce_shm_ring ring;
	uint64_t lost;		/* events dropped because the ring was full (droced writes) */
	struct droce_proto_event ev[DROCE_PROTO_EVENT_RING];
};

/* ---- Requests ---- */

struct droce_proto_cap {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
};

/*
 * One piece of a memory region: len bytes at offset off of the memfd passed at the same
 * position in SCM_RIGHTS. droced maps the pieces one after another into one contiguous
 * range, so the region's bytes are contiguous there as they are in the application.
 */
struct droce_proto_mr_piece {
	uint64_t off;		/* page aligned */
	uint64_t len;		/* page multiple */
};

struct droce_proto_req {
	uint32_t op;		/* enum droce_proto_op */
	uint32_t seq;		/* echoed in the response */
	union {
		struct {
			uint32_t version;	/* DROCE_PROTO_VERSION */
			uint32_t port;		/* droced port index: device droce<port> */
		} hello;
		struct {
			uint32_t handle;	/* the object's handle, for every destroy/query */
		} obj;
		struct {
			uint32_t pd;
			uint32_t access;	/* enum ibv_access_flags, as given */
			uint64_t iova;		/* what remote and local addresses are relative to */
			uint64_t length;
			uint64_t first_off;	/* the MR's first byte in the mapped pieces */
			uint32_t nb_pieces;	/* memfds passed, 1..DROCE_PROTO_MR_MAX_PIECES */
			uint32_t rsvd;
			struct droce_proto_mr_piece pieces[DROCE_PROTO_MR_MAX_PIECES];
		} reg_mr;
		struct {
			uint32_t cqe;		/* at least this many entries */
			uint32_t notify;	/* 1: answer with a notification fd (a channel) */
		} create_cq;
		struct {
			uint32_t pd;
			uint32_t max_wr;
			uint32_t max_sge;
			uint32_t srq_limit;
		} create_srq;
		struct {
			uint32_t handle;
			uint32_t mask;		/* enum ibv_srq_attr_mask */
			uint32_t max_wr;
			uint32_t srq_limit;
		} modify_srq;
		struct {
			uint32_t pd;
			uint32_t send_cq;
			uint32_t recv_cq;
			uint32_t srq;		/* DROCE_PROTO_NO_HANDLE: own receive queue */
			uint8_t qp_type;	/* enum ibv_qp_type */
			uint8_t sq_sig_all;
			uint8_t rsvd[2];
			struct droce_proto_cap cap;
		} create_qp;
		struct {
			uint32_t handle;
			uint32_t rsvd;
			struct droce_shm_qp_attr attr;
		} modify_qp;
		struct {
			uint32_t pd;
			uint32_t rsvd;
			struct droce_shm_ah_attr attr;
		} create_ah;
	};
};

/* ---- Responses ---- */

struct droce_proto_status {
	uint32_t pid;			/* droced's */
	uint32_t nb_clients;		/* connections that sent HELLO */
	uint32_t nb_ports;
	uint32_t nb_engines;
	/* Objects alive over all clients (the caller's own connection has none). */
	uint32_t pds;
	uint32_t mrs;
	uint32_t cqs;
	uint32_t srqs;
	uint32_t qps;
	uint32_t ahs;
	uint64_t mr_bytes;
	uint64_t clients_total;		/* HELLOs since start */
	uint64_t clients_torn_down;	/* connections that closed with objects still alive */
	uint64_t uptime_ms;
	/*
	 * What exists in the engines (droce_dev_objects_get), counted where objects are made
	 * and freed: equal to the totals above unless droced lost track of something.
	 */
	uint32_t engine_domains;
	uint32_t engine_qps;
	uint32_t engine_cqs;
	uint32_t engine_srqs;
	uint32_t engine_mrs;
	uint32_t engine_ahs;
};

struct droce_proto_resp {
	uint32_t op;
	uint32_t seq;
	int32_t status;		/* 0 or -errno */
	uint32_t rsvd;
	union {
		struct {
			uint32_t nb_ports;
			uint32_t rsvd;
			struct droce_proto_port_info port[DROCE_PROTO_MAX_PORTS];
		} ports;
		struct droce_proto_status stat;
		struct {
			uint32_t version;
			uint32_t nb_engines;
			uint64_t region_size;		/* bytes of the region memfd */
			uint64_t event_ring_off;	/* struct droce_proto_event_ring */
			struct droce_proto_port_info port;
			struct droce_proto_limits limits;
			uint32_t nb_gids;
			uint32_t rsvd;
			struct droce_proto_gid gids[DROCE_PROTO_MAX_GIDS];
		} hello;
		struct {
			uint32_t handle;		/* PD, MR, AH (= droce_shm_swqe.ud.ah) */
			uint32_t lkey;			/* MR */
			uint32_t rkey;			/* MR */
		} obj;
		struct {
			uint32_t handle;
			uint32_t size;			/* entries, a power of two >= cqe requested */
			uint64_t ctl_off;		/* struct droce_shm_cq */
			uint64_t ring_off;		/* size struct droce_shm_cqe */
		} cq;
		struct {
			uint32_t handle;
			uint32_t size;			/* ring entries, a power of two */
			uint32_t stride;
			uint32_t max_wr;		/* what ibv_create_srq reports */
			uint32_t max_sge;
			uint32_t srq_limit;		/* query: 0 once the limit event fired */
			uint64_t ctl_off;		/* struct droce_shm_srq */
			uint64_t ring_off;
		} srq;
		struct {
			uint32_t handle;
			uint32_t qp_num;
			uint32_t engine_id;		/* whose doorbell block */
			uint32_t db_slot;
			uint32_t supported_wr;		/* bits of enum droce_shm_wr_opcode */
			uint32_t sq_size;
			uint32_t sq_stride;
			uint32_t rq_size;		/* 0 with an SRQ */
			uint32_t rq_stride;
			uint32_t rsvd;
			struct droce_proto_cap cap;	/* what ibv_create_qp reports */
			uint64_t ctl_off;		/* struct droce_shm_qp */
			uint64_t sq_off;
			uint64_t rq_off;
		} qp;
		struct {
			struct droce_shm_qp_attr attr;	/* with the current state in qp_state */
			struct droce_proto_cap cap;
			uint8_t sq_sig_all;
			uint8_t rsvd[3];
		} query_qp;
	};
};

_Static_assert(sizeof(struct droce_proto_req) <= 2048, "request fits a small message");
_Static_assert(sizeof(struct droce_proto_resp) <= 2048, "response fits a small message");

/*
 * Sends one message with nfds descriptors (0..DROCE_PROTO_MAX_FDS) beside it; retries on
 * EINTR. 0, or -errno (-EPIPE: the peer is gone).
 */
int droce_proto_send(int sock, const void *msg, size_t len, const int *fds, unsigned int nfds);

/*
 * Receives one message of at most len bytes and up to max_fds descriptors (set close-on-exec;
 * extra ones are closed). Returns the message length (0: the peer closed), or -errno
 * (-EMSGSIZE: the message or its descriptors were truncated; any descriptors are closed).
 * *nfds is set to the number kept.
 */
ssize_t droce_proto_recv(int sock, void *msg, size_t len, int *fds, unsigned int max_fds,
			 unsigned int *nfds);

/* "HELLO", "CREATE_QP", ...; "UNKNOWN" out of range. */
const char *droce_proto_op_name(uint32_t op);

#endif /* DROCE_SHM_PROTO_H */
