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
 * events (struct droce_shm_event_ring in droce_shm.h, at HELLO's event_ring_off), announced
 * on the async notification fd of HELLO.
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
#include "droce_shm_qp_attr.h"

#define DROCE_PROTO_VERSION		7u	/* 7: QUERY_VIEW */
#define DROCE_PROTO_SOCKET_ENV		"DROCE_SOCKET"
#define DROCE_PROTO_SOCKET_DEFAULT	"/run/droce/droced.sock"
#define DROCE_PROTO_MAX_PORTS		8
#define DROCE_PROTO_MAX_GIDS		16
#define DROCE_PROTO_MAX_FDS		64	/* per message */
#define DROCE_PROTO_MR_MAX_PIECES	32	/* a registration spans this many mappings at most */
#define DROCE_PROTO_NO_HANDLE		UINT32_MAX
#define DROCE_PROTO_CAPTURE_QPNS	8

enum droce_proto_op {
	DROCE_PROTO_OP_QUERY_PORTS = 1,	/* no fds; allowed before HELLO */
	DROCE_PROTO_OP_STATUS,		/* no fds; allowed before HELLO */
	DROCE_PROTO_OP_HELLO,		/* -> fds: region memfd, async notification fd */
	DROCE_PROTO_OP_ALLOC_PD,
	DROCE_PROTO_OP_DEALLOC_PD,
	DROCE_PROTO_OP_REG_MR,		/* <- fds: one sealed memfd per piece not MAPPING */
	DROCE_PROTO_OP_DEREG_MR,
	DROCE_PROTO_OP_CREATE_CQ,	/* -> fd: the CQ's notification fd when asked for */
	DROCE_PROTO_OP_DESTROY_CQ,
	DROCE_PROTO_OP_CREATE_SRQ,
	DROCE_PROTO_OP_MODIFY_SRQ,
	DROCE_PROTO_OP_QUERY_SRQ,
	DROCE_PROTO_OP_DESTROY_SRQ,
	DROCE_PROTO_OP_CREATE_QP,	/* -> fd: its engine's wake-up eventfd if it may sleep */
	DROCE_PROTO_OP_MODIFY_QP,
	DROCE_PROTO_OP_QUERY_QP,
	DROCE_PROTO_OP_DESTROY_QP,
	DROCE_PROTO_OP_CREATE_AH,
	DROCE_PROTO_OP_DESTROY_AH,
	/* rdma_cm (librdmacm): on a connection that opened with CM_OPEN, see below */
	DROCE_PROTO_OP_CM_OPEN,		/* -> fd: the channel's event pipe (read end) */
	DROCE_PROTO_OP_CM_CREATE_ID,
	DROCE_PROTO_OP_CM_DESTROY_ID,
	DROCE_PROTO_OP_CM_BIND,
	DROCE_PROTO_OP_CM_RESOLVE_ADDR,
	DROCE_PROTO_OP_CM_RESOLVE_ROUTE,
	DROCE_PROTO_OP_CM_QUERY,
	DROCE_PROTO_OP_CM_LISTEN,
	DROCE_PROTO_OP_CM_CONNECT,
	DROCE_PROTO_OP_CM_ACCEPT,
	DROCE_PROTO_OP_CM_ESTABLISH,
	DROCE_PROTO_OP_CM_REJECT,
	DROCE_PROTO_OP_CM_DISCONNECT,
	DROCE_PROTO_OP_CM_INIT_QP_ATTR,
	DROCE_PROTO_OP_CM_SET_OPTION,
	DROCE_PROTO_OP_CM_MIGRATE,
	DROCE_PROTO_OP_CM_GET_EVENT,
	DROCE_PROTO_OP_CM_NOTIFY,
	DROCE_PROTO_OP_QUERY_QPS,	/* no fds; allowed before HELLO: QPs' congestion state */
	DROCE_PROTO_OP_REREG_MR,	/* <- fds: the new pieces with DROCE_PROTO_REREG_TRANSLATION */
	DROCE_PROTO_OP_RESIZE_CQ,
	DROCE_PROTO_OP_ALLOC_MW,	/* answered in obj: handle and rkey */
	DROCE_PROTO_OP_DEALLOC_MW,
	DROCE_PROTO_OP_OPEN_XRCD,	/* <- fd: the file naming the XRC domain, or none */
	DROCE_PROTO_OP_CLOSE_XRCD,
	DROCE_PROTO_OP_ATTACH_MCAST,
	DROCE_PROTO_OP_DETACH_MCAST,
	/* rdma_cm again (see droced_rdmacm_op): multicast joins of an id */
	DROCE_PROTO_OP_CM_JOIN_MCAST,
	DROCE_PROTO_OP_CM_LEAVE_MCAST,
	DROCE_PROTO_OP_QUERY_PORT_DETAIL,	/* no fds; allowed before HELLO: NIC and queues */
	DROCE_PROTO_OP_QUERY_VIEW,	/* no fds; allowed before HELLO: a view's rows (below) */
	/* droce-ctl capture: a port's frames to a pcapng file; allowed before HELLO */
	DROCE_PROTO_OP_CAPTURE_START,	/* <- fd: the file the pcapng goes to */
	DROCE_PROTO_OP_CAPTURE_STATUS,
	DROCE_PROTO_OP_CAPTURE_STOP,	/* the file is complete once this answers */
	DROCE_PROTO_OP_MAX
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
	uint32_t max_mcast_grp;		/* multicast groups of the device */
	uint32_t max_mcast_qp_attach;	/* QPs attached to one group */
};

struct droce_proto_gid {
	uint8_t gid[16];
	uint8_t type;		/* enum ibv_gid_type: 2 = RoCE v2 */
	uint8_t valid;		/* 0: an empty entry (ibv_query_gid_ex: ENODATA) */
	uint8_t rsvd[2];
};

/* ---- rdma_cm: the RDMA connection manager's channel (librdmacm <-> droced's CM) ----
 *
 * One rdma_event_channel of librdmacm is one connection to droced that starts with
 * CM_OPEN instead of HELLO (it never has a region or verbs objects). droced answers with
 * the read end of a pipe: the channel's fd. droced writes exactly one byte to the pipe for
 * every event it queues on the channel, and librdmacm reads exactly one byte before each
 * CM_GET_EVENT, so the fd is readable exactly while events wait (as the kernel's rdma_cm
 * file is), a blocking rdma_get_cm_event sleeps in read(), and one the program made
 * non-blocking with fcntl() gets EAGAIN. (A byte whose event was dropped since, because its
 * id was destroyed or migrated, makes CM_GET_EVENT answer -EAGAIN: librdmacm then reads
 * the next byte.) The pipe reaching end of file means droced is gone: librdmacm then
 * reports RDMA_CM_EVENT_DEVICE_REMOVAL for each id that had a device.
 *
 * Ids (rdma_cm_id) are named by handles droced assigns per channel connection; closing
 * the connection (rdma_destroy_event_channel, exit, kill -9) destroys its ids, and a
 * connection they had is then ended on the wire as Linux does for a destroyed id (DREQ
 * when established, REJ while connecting). An id's QP is the application's own verbs
 * object: droced's CM never touches it. It tells librdmacm the attributes to move it
 * through INIT, RTR and RTS (CM_INIT_QP_ATTR) and librdmacm calls ibv_modify_qp, as
 * rdma-core's librdmacm does with the kernel's.
 *
 * The values of events, port spaces and options are rdma_cm's own (<rdma/rdma_cma.h>),
 * so librdmacm copies them untranslated; droce_shm_proto.h does not include that header,
 * and librdmacm checks the values at compile time.
 */

#define DROCE_PROTO_CM_VERSION		4u
#define DROCE_PROTO_CM_PDATA_MAX	224	/* the largest private data field (RTU, DREP) */

/* enum rdma_cm_event_type */
#define DROCE_PROTO_CM_EVENT_ADDR_RESOLVED	0
#define DROCE_PROTO_CM_EVENT_ADDR_ERROR		1
#define DROCE_PROTO_CM_EVENT_ROUTE_RESOLVED	2
#define DROCE_PROTO_CM_EVENT_ROUTE_ERROR	3
#define DROCE_PROTO_CM_EVENT_CONNECT_REQUEST	4
#define DROCE_PROTO_CM_EVENT_CONNECT_RESPONSE	5	/* active: REP received, RTU not sent */
#define DROCE_PROTO_CM_EVENT_CONNECT_ERROR	6
#define DROCE_PROTO_CM_EVENT_UNREACHABLE	7
#define DROCE_PROTO_CM_EVENT_REJECTED		8
#define DROCE_PROTO_CM_EVENT_ESTABLISHED	9
#define DROCE_PROTO_CM_EVENT_DISCONNECTED	10
#define DROCE_PROTO_CM_EVENT_DEVICE_REMOVAL	11
#define DROCE_PROTO_CM_EVENT_MULTICAST_JOIN	12
#define DROCE_PROTO_CM_EVENT_MULTICAST_ERROR	13
#define DROCE_PROTO_CM_EVENT_TIMEWAIT_EXIT	15

/*
 * The states of an rdma_cm id in droced, one name table for droced's logs and droce-ctl
 * status (cm_ids_<STATE>): IDLE (created), ADDR_BOUND, ADDR_QUERY (resolving),
 * ADDR_RESOLVED, ROUTE_RESOLVED, LISTEN, CONNECT (REQ or REP sent or taken, not yet
 * established), ESTABLISHED, DISCONNECT (DREQ sent or received).
 */
#define DROCE_PROTO_CM_ID_STATE_LIST(X) \
	X(IDLE) X(ADDR_BOUND) X(ADDR_QUERY) X(ADDR_RESOLVED) X(ROUTE_RESOLVED) X(LISTEN) \
	X(CONNECT) X(ESTABLISHED) X(DISCONNECT)

enum droce_proto_cm_id_state {
#define DROCE_PROTO_CM_ID_STATE_ENUM(name) DROCE_PROTO_CM_ID_##name,
	DROCE_PROTO_CM_ID_STATE_LIST(DROCE_PROTO_CM_ID_STATE_ENUM)
#undef DROCE_PROTO_CM_ID_STATE_ENUM
	DROCE_PROTO_CM_ID_STATES
};

/* RDMA_UDP_QKEY: the Q_Key of rdma_cm's UDP and IPoIB port spaces */
#define DROCE_PROTO_CM_UDP_QKEY	0x01234567u

/* enum rdma_port_space */
#define DROCE_PROTO_CM_PS_IPOIB		0x0002
#define DROCE_PROTO_CM_PS_IB		0x013F
#define DROCE_PROTO_CM_PS_TCP		0x0106
#define DROCE_PROTO_CM_PS_UDP		0x0111

/* rdma_set_option(RDMA_OPTION_ID, name): the names droce takes */
#define DROCE_PROTO_CM_OPT_TOS		0	/* uint8_t */
#define DROCE_PROTO_CM_OPT_REUSEADDR	1	/* int */
#define DROCE_PROTO_CM_OPT_AFONLY	2	/* int */
#define DROCE_PROTO_CM_OPT_ACK_TIMEOUT	3	/* uint8_t: Local ACK Timeout of the QP */

/*
 * Multicast (rdma_join_multicast, _ex, rdma_leave_multicast), as Linux's rdma_cm joins on
 * RoCE: CM_JOIN_MCAST records a join of a UD id that has a device (bound or its address
 * resolved) and queues its RDMA_CM_EVENT_MULTICAST_JOIN on the id's channel, in order with
 * the id's other events: ud.ah to send to the group (is_global, dgid the MGID: the group's
 * IPv4-mapped address or the IPv6 one, sgid_index the id's source GID, hop limit 64 as
 * Linux's RoCEv2 joins), ud.dest_qp_num 0xFFFFFF, ud.qkey the id's (RDMA_UDP_QKEY), and in
 * the event's mc the join's uid, chosen by librdmacm (it finds the join's context and
 * flags with it). A join does not touch the QP: librdmacm attaches it when the event comes
 * (ibv_attach_mcast: ATTACH_MCAST on its device context), as rdma-core's does, and detaches
 * it on leave. CM_LEAVE_MCAST forgets the join of that uid and drops its events still
 * queued (their bytes read -EAGAIN). Errors: EINVAL for an id without a device, in another
 * state or not UD, an address that is not multicast (224.0.0.0/4, ff00::/8) or not of the
 * family of the id's source, flags other than the two; ENOENT for a leave of an unknown uid.
 */
#define DROCE_PROTO_CM_MC_QPN			0xFFFFFFu	/* the event's dest_qp_num */
/* CM_JOIN_MCAST's flags: enum rdma_cm_mc_join_flags */
#define DROCE_PROTO_CM_MC_FULLMEMBER		0
#define DROCE_PROTO_CM_MC_SENDONLY_FULLMEMBER	1

/*
 * An IP address and port as rdma_cm takes them. addr is 16 bytes: an IPv4 address in its
 * IPv4-mapped form (::ffff:a.b.c.d, like droce's GIDs), family says which the caller gave.
 * family 0: none given (an unbound source, a wildcard).
 */
struct droce_proto_cm_addr {
	uint16_t family;	/* AF_INET, AF_INET6 or 0 */
	uint16_t port;		/* network order; 0: any */
	uint32_t scope_id;	/* sin6_scope_id */
	uint8_t addr[16];	/* all zero: the wildcard address */
};

/*
 * CM_CONNECT and CM_ACCEPT of an RC or UC id whose QP librdmacm made (rdma_create_qp; in
 * INIT): droced moves that QP, conn.qp_num, a QP of a device context of the same process,
 * to RTR and RTS itself, with the attributes CM_INIT_QP_ATTR would give, as Linux's rdma_cm
 * moves a kernel consumer's QP. CM_ACCEPT does it before the REP goes (cm_accept.moved
 * says whether it could; if not, nothing was sent and the library moves the QP and
 * accepts without the flag). After CM_CONNECT, a REP makes droced move the QP and send
 * the RTU, and the id's event is ESTABLISHED; when it cannot, the event is
 * CONNECT_RESPONSE and the library does both, as without the flag. Either way the
 * library's round trips for the moves (three per side) are saved.
 */
#define DROCE_PROTO_CM_CONN_F_MOVE_QP	0x1u

/* The connection parameters of CM_CONNECT and CM_ACCEPT (struct rdma_conn_param + QP). */
struct droce_proto_cm_conn {
	uint32_t qp_num;		/* the id's QP (UD accept: the QP the SIDR_REP names) */
	uint32_t qkey;			/* UD: the Q_Key the SIDR_REP carries */
	uint8_t qp_type;		/* enum ibv_qp_type: RC, UC or UD */
	uint8_t srq;			/* the QP takes its receives from an SRQ */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t flow_control;
	uint8_t retry_count;		/* 3 bits */
	uint8_t rnr_retry_count;	/* 3 bits */
	uint8_t private_data_len;
	uint8_t private_data[DROCE_PROTO_CM_PDATA_MAX];
};

/*
 * CM_INIT_QP_ATTR's qp_state asking for the three transitions of a connection at once
 * (rdma_accept, a CONNECT_RESPONSE): the answer is cm_qp_attrs[], INIT, RTR, RTS, each as
 * CM_INIT_QP_ATTR would answer for that state, saving two round trips per side.
 */
#define DROCE_PROTO_CM_QPS_CONNECT	0x100u

/* An ibv_qp_attr that CM_INIT_QP_ATTR fills: mask is enum ibv_qp_attr_mask's bits. */
struct droce_proto_cm_qp_attr {
	uint32_t mask;
	uint32_t qp_state;		/* enum ibv_qp_state asked for */
	uint32_t qp_access_flags;
	uint32_t dest_qp_num;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t qkey;
	uint16_t pkey_index;
	uint8_t port_num;
	uint8_t path_mtu;		/* enum ibv_mtu */
	uint8_t max_dest_rd_atomic;
	uint8_t max_rd_atomic;
	uint8_t min_rnr_timer;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t rsvd[2];
	struct droce_shm_ah_attr ah;	/* is_global, dgid, sgid_index, hop limit, class, SL */
};

/* What CM_QUERY says about an id (also carried by some events, see below). */
struct droce_proto_cm_id_info {
	uint32_t port;			/* droced port index (device droce<port>); NO_HANDLE: none */
	uint8_t port_num;		/* 1 once bound to a device, else 0 */
	uint8_t state;			/* internal, for logs */
	uint8_t sgid_index;
	uint8_t route_resolved;
	uint16_t pkey;
	uint8_t path_mtu;		/* enum ibv_mtu */
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t rsvd[3];
	struct droce_proto_cm_addr src;
	struct droce_proto_cm_addr dst;
	uint8_t sgid[16];
	uint8_t dgid[16];
};

/*
 * An event (CM_GET_EVENT): struct rdma_cm_event with droce's handles. With
 * DROCE_PROTO_CM_EVENT_F_INFO in flags, info is what CM_QUERY would answer for the id
 * (the new id of a CONNECT_REQUEST) at the moment the event is handed out: droced sets it
 * on ADDR_RESOLVED, ROUTE_RESOLVED and CONNECT_REQUEST, the events librdmacm would
 * otherwise follow with a CM_QUERY round trip.
 */
#define DROCE_PROTO_CM_EVENT_F_INFO	0x1u
struct droce_proto_cm_event {
	uint32_t event;			/* DROCE_PROTO_CM_EVENT_* */
	int32_t status;			/* 0, -errno, or a REJ reason (> 0) with REJECTED */
	uint32_t id;			/* the id's handle; CONNECT_REQUEST: a new id */
	uint32_t listen_id;		/* CONNECT_REQUEST: the listener; else NO_HANDLE */
	uint64_t uctx;			/* the id's (the listener's for CONNECT_REQUEST) */
	uint32_t flags;			/* DROCE_PROTO_CM_EVENT_F_* */
	uint32_t mc;			/* MULTICAST_JOIN, _ERROR: the join's uid */
	struct droce_proto_cm_conn conn;	/* CONNECT_REQUEST/RESPONSE, ESTABLISHED, REJECTED,
						 * DISCONNECTED: the peer's parameters and private data */
	struct droce_proto_cm_qp_attr ud;	/* UD ESTABLISHED (SIDR_REP), MULTICAST_JOIN:
						 * qkey, dest_qp_num, ah */
	struct droce_proto_cm_id_info info;	/* with DROCE_PROTO_CM_EVENT_F_INFO */
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
 * A piece the application maps MAP_SHARED from a file of its own (POSIX or SysV shared
 * memory, a regular, tmpfs or hugetlbfs file, anonymous shared memory): registered in
 * place. No fd travels for it: droced opens the file the client maps at addr
 * (/proc/<pid>/map_files), after checking in the client's /proc/<pid>/maps that the
 * mapping is shared, covers [addr, addr + len) at file offset off, and allows the access
 * asked for (writable when any write access is).
 */
#define DROCE_PROTO_PIECE_MAPPING	1u

/*
 * One piece of a memory region: len bytes at offset off of a file. Without flags the file
 * is the memfd passed next in SCM_RIGHTS (the fds go in piece order, one per piece that is
 * not MAPPING). droced maps the pieces one after another into one contiguous range, so
 * the region's bytes are contiguous there as they are in the application.
 */
struct droce_proto_mr_piece {
	uint64_t off;		/* page aligned (huge page aligned in a hugetlb file) */
	uint64_t len;		/* page multiple */
	uint64_t addr;		/* MAPPING: where the client maps the piece's first byte */
	uint32_t flags;		/* DROCE_PROTO_PIECE_* */
	uint32_t rsvd;
};

/* enum ibv_srq_type and enum ibv_srq_attr_mask, rdma-core's numbers (shm_abi_check.c). */
#define DROCE_PROTO_SRQT_BASIC		0
#define DROCE_PROTO_SRQT_XRC		1
#define DROCE_PROTO_SRQ_ATTR_MAX_WR	(1u << 0)
#define DROCE_PROTO_SRQ_ATTR_LIMIT	(1u << 1)

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
			uint32_t start_qpn;	/* the answer starts at the first QP >= it */
		} query_qps;
		struct {
			uint32_t port;		/* droced port index */
		} query_port_detail;
		struct {
			uint32_t view;		/* DROCE_PROTO_VIEW_* */
			uint32_t rsvd;
			uint64_t start_key;	/* the answer starts at the first row >= it */
		} query_view;
		struct {
			uint32_t port;		/* droced port index */
			uint32_t snaplen;	/* bytes of each frame kept; 0: all */
			uint64_t max_packets;	/* stop after this many; 0: at CAPTURE_STOP */
			/* RoCEv2 packets to one of these BTH destination QPNs; 0 listed: all */
			uint32_t nb_qpns;
			uint32_t qpns[DROCE_PROTO_CAPTURE_QPNS];
			uint8_t peer_set;	/* only frames from or to peer */
			uint8_t rsvd[3];
			uint8_t peer[16];	/* IPv4-mapped for IPv4 */
		} capture;
		struct {
			uint32_t pd;
			uint32_t access;	/* enum ibv_access_flags, as given */
			uint64_t iova;		/* what remote and local addresses are relative to */
			uint64_t length;
			uint64_t first_off;	/* the MR's first byte in the mapped pieces */
			uint32_t nb_pieces;	/* 1..DROCE_PROTO_MR_MAX_PIECES */
			uint32_t rsvd;
			struct droce_proto_mr_piece pieces[DROCE_PROTO_MR_MAX_PIECES];
		} reg_mr;
		/*
		 * ibv_rereg_mr: the MR of handle keeps its keys; what flags name changes, the
		 * rest of the fields is read only for it (pieces with TRANSLATION).
		 */
		struct {
			uint32_t handle;
			uint32_t flags;		/* DROCE_PROTO_REREG_* */
			uint32_t pd;
			uint32_t access;
			uint64_t iova;
			uint64_t length;
			uint64_t first_off;
			uint32_t nb_pieces;
			uint32_t rsvd;
			struct droce_proto_mr_piece pieces[DROCE_PROTO_MR_MAX_PIECES];
		} rereg_mr;
		struct {
			uint32_t pd;
			uint32_t type;		/* enum ibv_mw_type */
		} alloc_mw;
		/*
		 * ibv_open_xrcd: with an fd, the XRC domain of that file (shared by every
		 * context that opens it, as the kernel's); without, a new one of its own.
		 */
		struct {
			uint32_t oflags;	/* O_CREAT, O_EXCL */
			uint32_t rsvd;
		} open_xrcd;
		/* ibv_attach_mcast, ibv_detach_mcast: a UD QP and a multicast GID */
		struct {
			uint32_t qp;
			uint16_t lid;		/* unused on RoCE */
			uint16_t rsvd;
			uint8_t gid[16];
		} mcast;
		struct {
			uint32_t cqe;		/* at least this many entries */
			uint32_t notify;	/* 1: answer with a notification fd (a channel) */
			uint32_t flags;		/* DROCE_PROTO_CQ_* */
		} create_cq;
		struct {
			uint32_t handle;
			uint32_t cqe;		/* at least this many entries */
		} resize_cq;		/* answered as CREATE_CQ: the new ring (cq) */
		struct {
			uint32_t pd;
			uint32_t max_wr;
			uint32_t max_sge;
			uint32_t srq_limit;
			uint32_t srq_type;	/* DROCE_PROTO_SRQT_* */
			uint32_t xrcd;		/* XRC: its XRC domain and CQ */
			uint32_t cq;
		} create_srq;
		struct {
			uint32_t handle;
			uint32_t mask;		/* DROCE_PROTO_SRQ_ATTR_* */
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
			/*
			 * Not 0: the QP goes on to INIT on this port (P_Key index 0, no
			 * access flags) before the answer, one round trip for
			 * librdmacm's rdma_create_qp (droce_create_qp_init).
			 */
			uint8_t init_port;
			uint8_t rsvd;
			struct droce_proto_cap cap;
			/*
			 * XRC_RECV: its XRC domain (no PD, CQ, SRQ or queues); XRC_SEND: no
			 * receive side (recv_cq and srq DROCE_PROTO_NO_HANDLE).
			 */
			uint32_t xrcd;
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
		/* ---- rdma_cm ---- */
		struct {
			uint32_t version;	/* DROCE_PROTO_CM_VERSION */
		} cm_open;
		struct {
			uint64_t uctx;		/* echoed in the id's events */
			uint32_t ps;		/* DROCE_PROTO_CM_PS_* */
			uint32_t qp_type;	/* enum ibv_qp_type */
		} cm_create_id;
		/* CM_DESTROY_ID, CM_RESOLVE_ROUTE, CM_QUERY, CM_DISCONNECT, CM_ESTABLISH: the id. */
		struct {
			uint32_t id;
			uint32_t timeout_ms;	/* CM_RESOLVE_ROUTE */
		} cm_id;
		struct {
			uint32_t id;
			uint32_t rsvd;
			struct droce_proto_cm_addr addr;
		} cm_bind;
		struct {
			uint32_t id;
			uint32_t timeout_ms;
			struct droce_proto_cm_addr src;	/* family 0: pick by the destination */
			struct droce_proto_cm_addr dst;
		} cm_resolve_addr;
		struct {
			uint32_t id;
			int32_t backlog;
		} cm_listen;
		/* CM_CONNECT, CM_ACCEPT */
		struct {
			uint32_t id;
			uint32_t flags;		/* DROCE_PROTO_CM_CONN_F_* */
			struct droce_proto_cm_conn conn;
		} cm_conn;
		struct {
			uint32_t id;
			uint8_t private_data_len;
			uint8_t rsvd;
			uint16_t reason;	/* 0: consumer defined (28), as rdma_reject */
			uint8_t private_data[DROCE_PROTO_CM_PDATA_MAX];
		} cm_reject;
		struct {
			uint32_t id;
			uint32_t qp_state;	/* enum ibv_qp_state: INIT, RTR or RTS; or
						 * DROCE_PROTO_CM_QPS_CONNECT */
		} cm_init_qp_attr;
		struct {
			uint32_t id;
			uint32_t name;		/* DROCE_PROTO_CM_OPT_* */
			uint32_t value;
		} cm_set_option;
		struct {
			uint32_t from_channel;	/* the other channel's token (CM_OPEN's answer) */
			uint32_t id;		/* the id's handle there */
		} cm_migrate;
		struct {
			uint32_t id;
			uint32_t event;		/* rdma_notify's enum ibv_event_type */
		} cm_notify;
		/* CM_JOIN_MCAST, CM_LEAVE_MCAST (uid only) */
		struct {
			uint32_t id;
			uint32_t uid;		/* librdmacm's name for the join */
			uint32_t flags;		/* DROCE_PROTO_CM_MC_* */
			uint32_t rsvd;
			struct droce_proto_cm_addr addr;	/* the group */
		} cm_mcast;
	};
};

/* REREG_MR flags: enum ibv_rereg_mr_flags' values. */
#define DROCE_PROTO_REREG_TRANSLATION	0x1
#define DROCE_PROTO_REREG_PD		0x2
#define DROCE_PROTO_REREG_ACCESS	0x4

/* CREATE_CQ flags. */
#define DROCE_PROTO_CQ_TIMESTAMPS	0x1	/* the engine stamps each CQE (droce_shm_cqe) */

/* One QP's congestion control, as droce-ctl shows it (doc/congestion.md). */
#define DROCE_PROTO_QP_CC_RP		0x1	/* reaction point on */
#define DROCE_PROTO_QP_CC_LIMITED	0x2	/* paced below its max since a CNP */
#define DROCE_PROTO_QPS_MAX		24	/* per QUERY_QPS answer */

struct droce_proto_qp_cc {
	uint32_t qpn;
	uint32_t engine;
	uint8_t type;			/* DROCE_SHM_QPT_* */
	uint8_t state;			/* DROCE_SHM_QPS_* */
	uint8_t prio;			/* 802.1p priority of its path */
	uint8_t flags;			/* DROCE_PROTO_QP_CC_* */
	uint32_t alpha;			/* DCQCN's alpha, 1024ths */
	uint64_t rate_kbps;		/* current rate (the max when not limited) */
	uint64_t target_kbps;
	uint64_t ce_rcvd;		/* CE-marked packets received */
	uint64_t cnp_sent;
	uint64_t cnp_rcvd;
	uint64_t rate_cuts;
};

/*
 * One port's NIC as droced configured it, its counters and each of its queues
 * (QUERY_PORT_DETAIL; droce-ctl ports and queues; doc/nics.md). Queue q is engine
 * engine[q]'s: the NIC's own per-queue counts where the PMD keeps them (0 otherwise), and
 * the engine's: what it took from the queue, and the packets it handed to the engine
 * owning their QP or was handed.
 */
#define DROCE_PROTO_PORT_MAX_QUEUES	16
#define DROCE_PROTO_NIC_RSS		0x1	/* RSS spreads received packets over the queues */
#define DROCE_PROTO_NIC_LSC		0x2	/* link changes arrive as interrupts */
#define DROCE_PROTO_NIC_RX_INTR		0x4	/* configured with rx interrupts (sleeping engines) */
#define DROCE_PROTO_NIC_RX_IP_CSUM	0x8	/* the NIC checks received IPv4 header checksums */
#define DROCE_PROTO_NIC_PCI		0x10	/* a PCI device (not a vdev) */

/* The receive filter for multicast */
#define DROCE_PROTO_NIC_FILTER_NONE	0	/* whatever the PMD passes (it has no switch) */
#define DROCE_PROTO_NIC_FILTER_LIST	1	/* the MACs of the joined groups */
#define DROCE_PROTO_NIC_FILTER_ALLMULTI	2	/* every multicast frame */
#define DROCE_PROTO_NIC_FILTER_PROMISC	3	/* every frame (configured) */

struct droce_proto_port_queue {
	uint32_t engine;
	uint32_t rsvd;
	uint64_t nic_rx_packets;
	uint64_t nic_tx_packets;
	uint64_t engine_rx_packets;	/* engine counter rx_pkts */
	uint64_t handoff_out;		/* rx_handoff_out: to the QP's owner */
	uint64_t handoff_in;		/* rx_handoff_in: from other engines */
	uint64_t handoff_drop;		/* rx_handoff_drop */
	uint64_t engine_loops;		/* loops: passes of its run loop, busy or not */
	uint64_t engine_sleeps;		/* sleeps: times it slept in the kernel */
	uint64_t rx_intr_wakeups;	/* sleeps the queue's rx interrupt ended */
};

struct droce_proto_port_detail {
	uint32_t port;
	uint32_t flags;			/* DROCE_PROTO_NIC_* */
	char driver[32];		/* the PMD: net_virtio, net_e1000_em, ... */
	uint16_t nb_queues;
	uint16_t nb_rxd;		/* descriptors of each rx queue */
	uint16_t nb_txd;
	uint8_t filter;			/* DROCE_PROTO_NIC_FILTER_* */
	uint8_t rsvd;
	uint32_t nb_mc;			/* multicast MACs asked for */
	uint32_t eth_mtu;		/* the Ethernet MTU set (0: the device's default) */
	uint64_t rss_hf;		/* RTE_ETH_RSS_* hashed on */
	uint64_t link_downs;		/* the link seen going down */
	uint64_t link_speed_mbps;
	uint64_t rx_packets, tx_packets, rx_bytes, tx_bytes;
	uint64_t rx_missed;		/* no descriptor free */
	uint64_t rx_errors, tx_errors;
	uint64_t rx_nombuf;		/* no mbuf to refill a descriptor */
	struct droce_proto_port_queue queue[DROCE_PROTO_PORT_MAX_QUEUES];
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
	 * What exists in the engines (droce_engine_dev_objects_get), counted where objects are made
	 * and freed: equal to the totals above unless droced lost track of something.
	 */
	uint32_t engine_domains;
	uint32_t engine_qps;
	uint32_t engine_cqs;
	uint32_t engine_srqs;
	uint32_t engine_mrs;
	uint32_t engine_ahs;
	/* rdma_cm: channels (CM_OPEN), their ids (listening ones), connections (orphans too). */
	uint32_t cm_channels;
	uint32_t cm_ids;
	uint32_t cm_listeners;
	uint32_t cm_conns;
	/* QP1: CM MADs taken, dropped (any reason: droced's log names them), sent. */
	uint64_t cm_rx_mads;
	uint64_t cm_rx_bad;
	uint64_t cm_tx_mads;
	/* QPs droced's CM moved to RTS (DROCE_PROTO_CM_CONN_F_MOVE_QP), and moves it left to
	 * the library (no such QP, a neighbour not resolved yet, a refused change). */
	uint64_t cm_qp_moves;
	uint64_t cm_qp_move_fallbacks;
	/*
	 * Gauges of what droced holds for its clients and the link, which must come back to
	 * their idle values when the clients are gone (devtools/soak.sh fits their slopes).
	 */
	uint32_t timer_qps;		/* QPs with an ACK or RNR timer running, all engines */
	uint32_t mcast_groups;		/* multicast groups with a QP attached */
	uint32_t mcast_attached;	/* QP attachments over all groups */
	uint32_t neighbours;		/* the engines' neighbour table (MACs ARP learnt) */
	uint64_t mbufs_in_use;		/* the ports' pools: taken (lcore caches count as free) */
	uint64_t mbufs_total;
	/*
	 * droced's C heap: bytes malloc has handed out and not had back (mallinfo2's
	 * uordblks + hblkhd; 0 under ASan, whose allocator glibc's figures do not see). RSS
	 * also moves with arenas and page reuse; this moves only with what droced holds.
	 */
	uint64_t heap_in_use;
	/* Appended (after every older field, so their offsets stay): rdma_cm ids by state. */
	uint32_t cm_id_state[DROCE_PROTO_CM_ID_STATES];
	/* Appended: droced's DROCE_PROTO_VERSION (0 from a droced older than QUERY_VIEW). */
	uint32_t proto_version;
};

/*
 * Views (QUERY_VIEW): what droced holds, as rows of named fields, the one source of
 * droce-ctl's views, DPDK telemetry's /droce/ commands and the Prometheus metrics
 * (doc/operations.md). A caller other than root sees only its own uid's clients and their
 * objects, and no memory keys. X(NAME, name).
 */
#define DROCE_PROTO_VIEW_LIST(X) \
	X(STATUS, "status") \
	X(PORTS, "ports") \
	X(COUNTERS, "counters") \
	X(ENGINES, "engines") \
	X(CLIENTS, "clients") \
	X(QPS, "qps") \
	X(CQS, "cqs") \
	X(SRQS, "srqs") \
	X(MRS, "mrs") \
	X(CM, "cm") \
	X(LISTENERS, "listeners") \
	X(MCAST, "mcast")

enum droce_proto_view {
#define DROCE_PROTO_VIEW_ENUM(NAME, name) DROCE_PROTO_VIEW_##NAME,
	DROCE_PROTO_VIEW_LIST(DROCE_PROTO_VIEW_ENUM)
#undef DROCE_PROTO_VIEW_ENUM
	DROCE_PROTO_VIEW_COUNT
};

/*
 * QUERY_VIEW's answer, longer than struct droce_proto_resp (at most DROCE_PROTO_VIEW_MAX
 * bytes in all): op, seq and status as every answer, then len bytes of records. A record
 * is a tag byte (DROCE_PROTO_VIEW_TAG_*), a name length byte and the name (no NUL), then
 * the value: 8 bytes little-endian for a number, or a 2-byte little-endian length and the
 * bytes for text. A ROW record (no name; its value the row's key) starts each row; rows
 * come in increasing key order, and a caller asks again from next_key while more is 1.
 */
#define DROCE_PROTO_VIEW_MAX		65536
#define DROCE_PROTO_VIEW_TAG_ROW	1	/* number: the row's key */
#define DROCE_PROTO_VIEW_TAG_LABEL	2	/* text that names the row (a state, an address) */
#define DROCE_PROTO_VIEW_TAG_ID		3	/* a number that names it (a port, a QPN, a pid) */
#define DROCE_PROTO_VIEW_TAG_GAUGE	4	/* a number that goes up and down */
#define DROCE_PROTO_VIEW_TAG_COUNTER	5	/* a number that only grows */

struct droce_proto_view_answer {
	uint32_t op;
	uint32_t seq;
	int32_t status;
	uint32_t len;			/* bytes of records in rows[] */
	uint64_t next_key;
	uint32_t more;
	uint32_t rsvd;
	uint8_t rows[];
};

/*
 * Why droced refused a request at one of its configured [limits] (a response's limit):
 * X(NAME, the key that raises it, what it counts). libdroce names the key to the program.
 */
#define DROCE_PROTO_LIMIT_LIST(X) \
	X(QPS, "max_qps", "QPs of a context") \
	X(CQS, "max_cqs", "CQs of a context") \
	X(SRQS, "max_srqs", "SRQs of a context") \
	X(MRS, "max_mrs", "memory regions of a context") \
	X(MR_BYTES, "max_mr_bytes", "bytes of a context's memory regions") \
	X(AHS, "max_ahs", "address handles of a context") \
	X(CQE, "max_cqe", "entries of a CQ") \
	X(WR, "max_wr", "work requests of a queue")

enum droce_proto_limit {
	DROCE_PROTO_LIMIT_NONE,
#define DROCE_PROTO_LIMIT_ENUM(NAME, key, what) DROCE_PROTO_LIMIT_##NAME,
	DROCE_PROTO_LIMIT_LIST(DROCE_PROTO_LIMIT_ENUM)
#undef DROCE_PROTO_LIMIT_ENUM
	DROCE_PROTO_LIMIT_COUNT
};

struct droce_proto_resp {
	uint32_t op;
	uint32_t seq;
	int32_t status;		/* 0 or -errno */
	uint32_t limit;		/* a refusal at a [limits] key: DROCE_PROTO_LIMIT_*; else 0 */
	union {
		struct {
			uint32_t nb_ports;
			uint32_t rsvd;
			struct droce_proto_port_info port[DROCE_PROTO_MAX_PORTS];
		} ports;
		struct droce_proto_status stat;
		struct droce_proto_port_detail port_detail;
		struct {
			uint32_t nb_qps;
			uint32_t next_qpn;	/* ask again from here; 0: no more */
			struct droce_proto_qp_cc qp[DROCE_PROTO_QPS_MAX];
		} qps;
		struct {
			uint64_t written;	/* frames in the file */
			uint64_t dropped;	/* matched, not kept: the queue or its pool full */
			uint32_t done;		/* max_packets written: the capture has stopped */
			uint32_t rsvd;
		} capture;
		struct {
			uint32_t version;
			uint32_t nb_engines;
			uint64_t region_size;		/* bytes of the region memfd */
			uint64_t event_ring_off;	/* struct droce_shm_event_ring */
			struct droce_proto_port_info port;
			struct droce_proto_limits limits;
			uint32_t nb_gids;
			uint32_t rsvd;
			struct droce_proto_gid gids[DROCE_PROTO_MAX_GIDS];
			/* the engines' TSC rate: CQE timestamps' clock (0: none) */
			uint64_t tsc_hz;
		} hello;
		struct {
			uint32_t handle;		/* PD, MR, MW, AH (= droce_shm_swqe.ud.ah) */
			uint32_t lkey;			/* MR */
			uint32_t rkey;			/* MR, MW */
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
			uint32_t srq_num;		/* XRC SRQ: ibv_get_srq_num's; else 0 */
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
		/* ---- rdma_cm ---- */
		struct {
			uint32_t version;
			uint32_t token;		/* names this channel to CM_MIGRATE */
		} cm_open;
		struct {
			uint32_t id;		/* CM_CREATE_ID, CM_MIGRATE (the id's new handle) */
		} cm_id;
		struct droce_proto_cm_id_info cm_query;	/* also CM_BIND's answer */
		struct {
			uint32_t moved;		/* 1: the QP is in RTS and the REP went */
		} cm_accept;			/* with DROCE_PROTO_CM_CONN_F_MOVE_QP */
		struct droce_proto_cm_qp_attr cm_qp_attr;
		struct droce_proto_cm_qp_attr cm_qp_attrs[3];	/* DROCE_PROTO_CM_QPS_CONNECT */
		struct droce_proto_cm_event cm_event;
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

/* droced's socket: $DROCE_SOCKET when set and not empty, else DROCE_PROTO_SOCKET_DEFAULT. */
const char *droce_proto_socket_path(void);

/*
 * A SOCK_SEQPACKET socket (close-on-exec) connected to path; retries on EINTR. The fd, or
 * -errno (-ENAMETOOLONG for a path that does not fit a sockaddr_un).
 */
int droce_proto_connect(const char *path);

/* "HELLO", "CREATE_QP", ...; "UNKNOWN" out of range. */
const char *droce_proto_op_name(uint32_t op);
/* "IDLE", "LISTEN", ... (enum droce_proto_cm_id_state); "UNKNOWN" out of range. */
const char *droce_proto_cm_id_state_name(uint32_t state);

#endif /* DROCE_SHM_PROTO_H */
