/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VERBS_LOC_H
#define VERBS_LOC_H

/*
 * libdroce internals: the provider objects that embed rdma-core's verbs objects (reached
 * with the to_d*() helpers), the per-context tables the fast path consults, and the
 * helpers shared between the files of lib/verbs, grouped by the file that defines them.
 *
 * The objects are struct verbs_d*: the library's prefix, then d for droce's own object,
 * because rdma-core's <infiniband/verbs.h> and <infiniband/driver.h> already have
 * struct verbs_context, verbs_device, verbs_qp, verbs_cq, verbs_srq, verbs_mr, verbs_dm.
 * They were dv_*, which read as rdma-core's Direct Verbs (mlx5dv_*):
 *   dv_device   -> verbs_ddev   (to_ddev: struct ibv_device)
 *   dv_context  -> verbs_dctx   (to_dctx: struct ibv_context)
 *   dv_cq       -> verbs_dcq    (to_dcq: struct ibv_cq)
 *   dv_srq      -> verbs_dsrq   (to_dsrq: struct ibv_srq)
 *   dv_qp       -> verbs_dqp    (to_dqp: struct ibv_qp)
 *   dv_mr       -> verbs_dmr
 *   dv_key      -> verbs_dkey   (an MR's entry in the context's lkey table)
 *   dv_container_of -> verbs_container_of
 *
 * Locks, outermost first: verbs_dctx.fatal_lock (verbs_fatal, once), req_lock (one control
 * round trip at a time), obj_lock (the lists that map event handles to objects), ev_lock
 * (the async event queue), key_lock (MR and AH tables, read by every post), then each
 * object's own spinlock (its rings). None is held while another of a lower rank is taken,
 * except key_lock under a ring lock (the post path's lkey and AH checks); a QP's ring lock
 * and a CQ's lock are never held together.
 */

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <infiniband/verbs.h>

#include "droce_shm.h"
#include "droce_shm_arena.h"
#include "droce_shm_client.h"
#include "droce_shm_proto.h"
#include "droce_shm_qp_attr.h"
#include "droce_wire_hdr.h"

#define VERBS_EXPORT	__attribute__((visibility("default")))

#define verbs_container_of(ptr, type, member) \
	((type *)(void *)((uint8_t *)(ptr) - offsetof(type, member)))

/* The one port of every droce device (droced's ports are separate devices). */
#define VERBS_PORT_NUM		1
#define VERBS_DEV_PREFIX	"droce"
#define VERBS_FW_VER		"droce"
/*
 * IEEE OUI 0xFFFFFF: no vendor. Not 0, which rdma-core's tests take for an unset value;
 * programs that key on vendor IDs (perftest) then use their generic paths.
 */
#define VERBS_VENDOR_ID		0xFFFFFF
/* Length of every port's GID table (droced fills the first entries). */
#define VERBS_GID_TBL_LEN	DROCE_PROTO_MAX_GIDS
#define VERBS_SYSFS_CLASS	"/sys/class/infiniband/"
#define VERBS_DEV_DIR		"/dev/infiniband/"
#define VERBS_DEBUG_ENV		"DROCE_DEBUG"
#define VERBS_POLL_YIELD_ENV	"DROCE_POLL_YIELD"
/*
 * Empty polls in a row before ibv_poll_cq yields its CPU (well under a microsecond of
 * spinning). 16 by the figures of doc/performance.md, "Sleeping engines": on two shared
 * CPUs, one daemon polling, a ping-pong's median is 1.95 us against 5.02 with 256; two
 * daemons adaptive, equal or better; interrupt engines, no matter.
 */
#define VERBS_POLL_YIELD_DEFAULT	16
/* The IB spec's largest message (and so the largest MR a WR can address): 2^31 bytes. */
#define VERBS_MAX_MSG_SZ	(1u << 31)
/* Local CA ACK delay code reported by query_device (4.096 us * 2^15: software pace). */
#define VERBS_CA_ACK_DELAY	15
/* PortPhysicalState 5: LinkUp (IB spec 14.2.5.6). */
#define VERBS_PHYS_STATE_LINKUP	5
/* The 40-byte area before a UD receive's payload (IB spec 11.4.1.2, RoCEv2 annex A17.4.5.1). */
#define VERBS_GRH_LEN		40
#define VERBS_IPV4_HDR_LEN	20
/* libdroce's async event queue: droced's ring, and room for the events libdroce raises. */
#define VERBS_EVQ_LEN		(DROCE_SHM_EVENT_RING + 16)

/* ibv_query_gid_type()'s numbering (rdma-core's enum ibv_gid_type_sysfs, infiniband/driver.h). */
#define VERBS_GID_TYPE_SYSFS_IB_ROCE_V1	0
#define VERBS_GID_TYPE_SYSFS_ROCE_V2	1

/* A device: one droced port, as ibv_get_device_list found it. Reference counted. */
struct verbs_ddev {
	struct ibv_device ibdev;
	uint32_t refcnt;			/* list entries + open contexts */
	uint32_t port;				/* droced's port index */
	struct droce_proto_port_info info;
	char sock_path[108];			/* sizeof(sockaddr_un.sun_path) */
};

/* One registered range, for the post path's lkey check. */
struct verbs_dkey {
	uint32_t lkey;
	uint32_t access;
	uint64_t iova;
	uint64_t length;
	bool live;
};

struct verbs_dctx {
	struct verbs_ddev *dev;
	int sock;
	uint32_t seq;
	pthread_mutex_t req_lock;
	uint8_t *region;
	uint64_t region_size;
	/*
	 * Async events (verbs_async.c): droced's ring and notification pipe, and the queue
	 * behind context->async_fd (an eventfd set exactly while the queue is non-empty).
	 */
	struct droce_shm_event_ring *evring;
	int ev_pipe;
	pthread_mutex_t ev_lock;		/* the queue, and consumer of evring */
	struct droce_shm_event evq[VERBS_EVQ_LEN];
	uint32_t evq_prod, evq_cons;
	bool evq_signalled;
	bool fatal_queued;			/* an IBV_EVENT_DEVICE_FATAL was queued */
	/* The watcher thread and droced's death (verbs_fatal.c). */
	pthread_t watcher;
	pid_t watcher_pid;
	int watch_stop;				/* eventfd: ibv_close_device stops the watcher */
	pthread_mutex_t fatal_lock;
	int dead;				/* atomic: droced is gone, posts refused */
	int fatal_done;				/* atomic: flushed, DEVICE_FATAL queued */
	uint32_t nb_engines;
	/*
	 * Per engine: the eventfd that wakes it when it sleeps (droce_shm_doorbell.sleeping),
	 * from the first CREATE_QP on it; -1 before. Set once (compare-and-swap), closed with
	 * the context.
	 */
	int wake_fd[DROCE_SHM_MAX_ENGINES];
	struct droce_proto_port_info port;
	struct droce_proto_limits limits;
	uint64_t tsc_hz;			/* CQE timestamps' clock; 0: none (verbs_clock.c) */
	uint32_t poll_yield;			/* empty polls before a yield; 0: never */
	uint32_t nb_gids;			/* table length: VERBS_GID_TBL_LEN */
	struct droce_proto_gid gids[DROCE_PROTO_MAX_GIDS];
	/* Event handle -> object: lists of the live CQs, SRQs and QPs. */
	pthread_mutex_t obj_lock;
	struct verbs_dcq *cqs;
	struct verbs_dsrq *srqs;
	struct verbs_dqp *qps;
	/* Fast-path tables: MRs by lkey index (lkey >> 8), live AH handles. */
	pthread_rwlock_t key_lock;
	struct verbs_dkey *keys;
	uint32_t nb_keys;
	uint8_t *ahs;
	uint32_t nb_ahs;
	struct verbs_context vctx;		/* last: ends with struct ibv_context */
};

/*
 * CQE timestamps (verbs_clock.c): the engines' TSC is the "HCA clock". A wallclock reading
 * is the TSC against CLOCK_REALTIME at one instant, taken at each ibv_start_poll.
 */
struct verbs_clock_anchor {
	uint64_t tsc;
	uint64_t realtime_ns;
};

/* The TSC now: the same counter the engines stamp with; 0 where there is none. */
uint64_t verbs_clock_tsc(void);
/* The TSC's rate droced gave, or 0 where this process cannot read the TSC. */
uint64_t verbs_clock_hz(uint64_t droced_tsc_hz);
void verbs_clock_anchor(struct verbs_clock_anchor *a);
/* tsc as nanoseconds since the epoch, by the anchor and the rate. */
uint64_t verbs_clock_wallclock_ns(const struct verbs_clock_anchor *a, uint64_t tsc_hz,
				  uint64_t tsc);
/* context->query_rt_values: ibv_query_rt_values_ex's raw clock. */
int verbs_query_rt_values(struct ibv_context *context, struct ibv_values_ex *values);

struct verbs_dcq {
	/*
	 * struct ibv_cq_ex begins with struct ibv_cq's fields (rdma-core's
	 * ibv_cq_ex_to_cq() is a cast): every CQ is both, ex is only used by a CQ made
	 * with ibv_create_cq_ex.
	 */
	union {
		struct ibv_cq ibcq;
		struct ibv_cq_ex ibcq_ex;
	};
	pthread_spinlock_t lock;
	struct ibv_wc cur;			/* ibv_start_poll/next_poll's current entry */
	uint64_t cur_ts;			/* its timestamp (TSC), with timestamps */
	struct verbs_clock_anchor anchor;	/* wallclock conversion, from start_poll */
	uint32_t empty_polls;			/* in a row, for the poll yield */
	struct droce_shm_client_cq view;
	int efd;				/* notification fd with a channel, else -1 */
	uint32_t comp_reported;			/* events handed out by ibv_get_cq_event */
	uint32_t async_reported;
	/* After droced died: flushed WRs, handed out after the ring (verbs_fatal.c). */
	struct ibv_wc *flush;
	uint32_t flush_len, flush_next;
	bool fatal_woken;			/* ibv_get_cq_event reported the death */
	struct verbs_dcq *next;
};

struct verbs_dxrcd {
	struct ibv_xrcd xrcd;
	uint32_t handle;			/* droced's */
};

struct verbs_dsrq {
	struct ibv_srq ibsrq;
	pthread_spinlock_t lock;
	struct droce_shm_client_srq view;
	uint32_t max_wr;
	uint32_t srq_num;			/* an XRC SRQ's (ibv_get_srq_num); else 0 */
	uint32_t async_reported;
	struct verbs_dsrq *next;
};

struct verbs_dqp {
	struct ibv_qp_ex qpx;			/* every QP is an ibv_qp_ex */
	/*
	 * rdma-core 45 appended wr_flush to struct ibv_qp_ex; 44's headers end before it.
	 * Programs built against 45 or later call it here.
	 */
	void (*wr_flush)(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t remote_addr, size_t len,
			 uint8_t type, uint8_t level);
	pthread_spinlock_t sq_lock;
	pthread_spinlock_t rq_lock;
	struct droce_shm_client_qp view;
	struct droce_proto_cap cap;
	bool has_send_ops;			/* created with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS */
	uint32_t async_reported;
	/* The wr_* API's batch, posted by wr_complete(). */
	struct ibv_send_wr *batch;
	struct ibv_sge *batch_sge;
	uint8_t *batch_inline;
	uint32_t batch_max;			/* WRs the batch holds: the send ring's size */
	uint32_t batch_n;
	int batch_err;
	struct verbs_dqp *next;
};

_Static_assert(offsetof(struct verbs_dqp, wr_flush) == sizeof(struct ibv_qp_ex),
	       "wr_flush right after rdma-core 44's ibv_qp_ex, where 45's has it");

/* rdma-core 45's IBV_QP_EX_WITH_FLUSH, and the device_cap_flags_ex bits of IBA 1.5. */
#define VERBS_QP_EX_WITH_FLUSH			(1ull << 11)
#define VERBS_DEVICE_FLUSH_GLOBAL		(1ull << 38)
#define VERBS_DEVICE_FLUSH_PERSISTENT		(1ull << 39)
#define VERBS_DEVICE_ATOMIC_WRITE		(1ull << 40)
/* rdma-core 45's IBV_ACCESS_FLUSH_GLOBAL and IBV_ACCESS_FLUSH_PERSISTENT. */
#define VERBS_ACCESS_FLUSH			((1u << 8) | (1u << 9))

struct verbs_piece;

struct verbs_dmr {
	struct ibv_mr ibmr;
	/* What it holds of the application's pages (verbs_pages.h), released at dereg. */
	struct verbs_piece *pieces;
	unsigned int nb_pieces;
};

static inline struct verbs_ddev *
to_ddev(struct ibv_device *d)
{
	return verbs_container_of(d, struct verbs_ddev, ibdev);
}

static inline struct verbs_dctx *
to_dctx(struct ibv_context *c)
{
	return verbs_container_of(c, struct verbs_dctx, vctx.context);
}

static inline struct verbs_dcq *
to_dcq(struct ibv_cq *cq)
{
	return verbs_container_of(cq, struct verbs_dcq, ibcq);
}

static inline struct verbs_dsrq *
to_dsrq(struct ibv_srq *srq)
{
	return verbs_container_of(srq, struct verbs_dsrq, ibsrq);
}

static inline struct verbs_dqp *
to_dqp(struct ibv_qp *qp)
{
	return verbs_container_of(qp, struct verbs_dqp, qpx.qp_base);
}

/* Sets errno to err and returns it: the verbs convention for functions returning int. */
static inline int
verbs_err(int err)
{
	errno = err;
	return err;
}

/* Sets errno to err and returns NULL: the convention for functions returning a pointer. */
static inline void *
verbs_err_null(int err)
{
	errno = err;
	return NULL;
}

/* Is droced gone (verbs_fatal.c)? */
static inline bool
verbs_dead(struct verbs_dctx *c)
{
	return __atomic_load_n(&c->dead, __ATOMIC_ACQUIRE) != 0;
}

/* Has verbs_fatal finished: every flush written, IBV_EVENT_DEVICE_FATAL queued? */
static inline bool
verbs_fatal_done(struct verbs_dctx *c)
{
	return __atomic_load_n(&c->fatal_done, __ATOMIC_ACQUIRE) != 0;
}

/* Is [off, off + len) inside the context's region? */
static inline bool
verbs_region_ok(const struct verbs_dctx *c, uint64_t off, uint64_t len)
{
	return off <= c->region_size && len <= c->region_size - off;
}

/* verbs_request.c: requests to droced over its socket */
int verbs_sock_connect(const char *path, int *err);
/* A round trip that may return up to max_rfds descriptors (*nrfds of them). */
int verbs_request_fds(struct verbs_dctx *c, struct droce_proto_req *req,
		      struct droce_proto_resp *resp, int *rfds, unsigned int max_rfds,
		      unsigned int *nrfds);
int verbs_sock_call(int sock, uint32_t seq, struct droce_proto_req *req, const int *fds,
		    unsigned int nfds, struct droce_proto_resp *resp, int *rfds,
		    unsigned int max_rfds, unsigned int *nrfds);
int verbs_request(struct verbs_dctx *c, struct droce_proto_req *req, const int *fds,
		  unsigned int nfds, struct droce_proto_resp *resp);
const char *verbs_socket_path(void);
void verbs_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void verbs_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* verbs_async.c */
void verbs_async_pull(struct verbs_dctx *c);
void verbs_async_fatal(struct verbs_dctx *c);
void verbs_async_forget(struct verbs_dctx *c);

/* verbs_fatal.c */
void verbs_fatal(struct verbs_dctx *c);
int verbs_watch_start(struct verbs_dctx *c);
void verbs_watch_stop(struct verbs_dctx *c);

/* verbs_device.c */
void verbs_device_put(struct verbs_ddev *d);

/* verbs_mr.c */
bool verbs_lkey_check(void *arg, uint32_t lkey, uint64_t addr, uint64_t len,
		      unsigned int access);

/* verbs_ah.c */
bool verbs_ah_check(void *arg, uint32_t ah);

/* verbs_cq.c */
int verbs_cq_poll(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
/* The completions of QP qpn waiting in cq removed (its move to RESET: droce_shm_cq_clean). */
void verbs_cq_clean(struct ibv_cq *ibcq, uint32_t qpn);
int verbs_cq_req_notify(struct ibv_cq *cq, int solicited_only);
struct ibv_cq_ex *verbs_cq_create_ex(struct ibv_context *context,
				     struct ibv_cq_init_attr_ex *attr);

/* verbs_qp.c */
int verbs_qp_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);

/* verbs_qp_wr.c: the wr_* API of a QP made with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS; 0 or ENOMEM */
int verbs_qp_batch_init(struct verbs_dqp *qp);

/* verbs_srq.c: an SRQ; with xrcd (and its cq), an XRC SRQ */
struct ibv_srq *verbs_srq_create(struct ibv_pd *pd, struct ibv_srq_init_attr *attr,
				 struct verbs_dxrcd *xrcd, struct ibv_cq *cq);

/* verbs_xrc.c: the context's open_xrcd, close_xrcd, create_srq_ex and get_srq_num */
struct ibv_xrcd *verbs_xrcd_open(struct ibv_context *context, struct ibv_xrcd_init_attr *attr);
int verbs_xrcd_close(struct ibv_xrcd *xrcd);
struct ibv_srq *verbs_srq_create_ex(struct ibv_context *context,
				    struct ibv_srq_init_attr_ex *attr);
int verbs_srq_num(struct ibv_srq *srq, uint32_t *srq_num);

/* verbs_mw.c: the context's alloc_mw, dealloc_mw and bind_mw */
struct ibv_mw *verbs_mw_alloc(struct ibv_pd *pd, enum ibv_mw_type type);
int verbs_mw_dealloc(struct ibv_mw *mw);
int verbs_mw_bind(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind);
int verbs_qp_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
struct ibv_qp *verbs_qp_create_ex(struct ibv_context *context,
				  struct ibv_qp_init_attr_ex *attr);

/* verbs_srq.c */
int verbs_srq_post_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr);

/* verbs_device.c */
int verbs_query_port(struct ibv_context *context, uint8_t port_num,
		     struct ibv_port_attr *attr, size_t attr_len);
int verbs_query_device_ex(struct ibv_context *context,
			  const struct ibv_query_device_ex_input *input,
			  struct ibv_device_attr_ex *attr, size_t attr_size);

#endif /* VERBS_LOC_H */
