/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef DROCE_SHM_H
#define DROCE_SHM_H

/*
 * The app <-> engine contract: everything an application and an engine both read or write
 * in shared memory. One region per application (client); every object in it is named by
 * its byte offset from the region start, never by a pointer, because each side maps the
 * region at its own address.
 *
 * Who writes what (the engine trusts nothing the application can write):
 *   - send, receive and SRQ rings: the application produces WQEs and the producer index;
 *     the engine copies each WQE into private memory before it validates it, and publishes
 *     the consumer index;
 *   - completion rings: engines write CQEs (owner bit last); the application publishes its
 *     consumer index, which engines read only to detect an overrun;
 *   - doorbells: the application sets bits, the owning engine clears them.
 * Every index the engine reads is checked against the geometry it was given by the
 * control path (never the geometry stored here), and a QP whose rings lie goes to error.
 *
 * Shared fields are plain integers that both sides access with the __atomic builtins, never
 * _Atomic types: C11 lets an _Atomic type differ in size and alignment from the plain one,
 * and this layout is the ABI. <stdatomic.h> is for one process's own state (the engine's).
 *
 * Numeric values of opcodes, flags, states and statuses are rdma-core's (libibverbs ABI):
 * lib/shm/shm_abi_check.c asserts that against <infiniband/verbs.h>.
 */

#include <stdalign.h>
#include <stdint.h>

#define DROCE_SHM_MAGIC		0x314d48534543524full	/* "ORCESHM1" read little-endian */
#define DROCE_SHM_ABI_VERSION	1u
#define DROCE_SHM_CACHE_LINE	64

/* ---- Limits (the engine rejects larger values at create time) ---- */
#define DROCE_SHM_MAX_ENGINES	64
#define DROCE_SHM_DB_WORDS	64	/* doorbell bitmap: 64 x 64 QP slots per engine */
#define DROCE_SHM_DB_SLOTS	(DROCE_SHM_DB_WORDS * 64)
#define DROCE_SHM_MAX_WR	32768	/* entries of any work or completion ring */
#define DROCE_SHM_MAX_CQE	(1u << 20)
#define DROCE_SHM_MAX_SGE	32
#define DROCE_SHM_MAX_INLINE	960	/* largest SQ stride (1024) minus the WQE header */
#define DROCE_SHM_MAX_SQ_STRIDE	1024
#define DROCE_SHM_EVENT_RING	256	/* entries of the async event ring (a power of two) */

/*
 * Region header at offset 0. Written by the control path before the region is handed to
 * the application; read-only afterwards.
 */
struct droce_shm_region_hdr {
	uint64_t magic;			/* DROCE_SHM_MAGIC */
	uint32_t abi_version;		/* DROCE_SHM_ABI_VERSION */
	uint32_t hdr_size;		/* sizeof(struct droce_shm_region_hdr) */
	uint64_t size;			/* bytes of the whole region */
	uint32_t nb_engines;
	uint32_t rsvd;
	/* Offset of each engine's doorbell block (struct droce_shm_doorbell). */
	uint64_t doorbell_off[DROCE_SHM_MAX_ENGINES];
};

/*
 * Producer and consumer index of one ring, each alone on its cache line. Indices run
 * freely over 32 bits; entry i lives in slot i & (size - 1); entries in use = prod - cons.
 */
struct droce_shm_ring {
	alignas(DROCE_SHM_CACHE_LINE) uint32_t prod;
	alignas(DROCE_SHM_CACHE_LINE) uint32_t cons;
};

/* ---- Work requests ---- */

/* enum ibv_wr_opcode */
enum droce_shm_wr_opcode {
	DROCE_SHM_WR_RDMA_WRITE = 0,
	DROCE_SHM_WR_RDMA_WRITE_WITH_IMM = 1,
	DROCE_SHM_WR_SEND = 2,
	DROCE_SHM_WR_SEND_WITH_IMM = 3,
	DROCE_SHM_WR_RDMA_READ = 4,
	DROCE_SHM_WR_ATOMIC_CMP_AND_SWP = 5,
	DROCE_SHM_WR_ATOMIC_FETCH_AND_ADD = 6,
	DROCE_SHM_WR_LOCAL_INV = 7,
	DROCE_SHM_WR_BIND_MW = 8,
	DROCE_SHM_WR_SEND_WITH_INV = 9,
	/* IBA 1.5 (rdma-core 45's IBV_WR_FLUSH; rdma-core 44's IBV_WR_ATOMIC_WRITE) */
	DROCE_SHM_WR_FLUSH = 14,
	DROCE_SHM_WR_ATOMIC_WRITE = 15,
};

/* enum ibv_send_flags (all fit in the WQE's 8-bit flags) */
enum droce_shm_send_flag {
	DROCE_SHM_SEND_FENCE = 1u << 0,
	DROCE_SHM_SEND_SIGNALED = 1u << 1,
	DROCE_SHM_SEND_SOLICITED = 1u << 2,
	DROCE_SHM_SEND_INLINE = 1u << 3,
	DROCE_SHM_SEND_IP_CSUM = 1u << 4,
};

/* struct ibv_sge */
struct droce_shm_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

/*
 * Send WQE: this 64-byte header, then num_sge SGEs or inline_len bytes of inline data, in
 * a slot of the QP's send stride (a power of two, 64..DROCE_SHM_MAX_SQ_STRIDE).
 */
struct droce_shm_swqe {
	uint64_t wr_id;
	uint8_t opcode;		/* enum droce_shm_wr_opcode */
	uint8_t flags;		/* enum droce_shm_send_flag */
	uint8_t num_sge;	/* 0 with DROCE_SHM_SEND_INLINE */
	uint8_t rsvd0;
	uint32_t inline_len;	/* bytes after the header when DROCE_SHM_SEND_INLINE */
	uint32_t imm_data;	/* network byte order, as ibv_send_wr.imm_data; or invalidate rkey
				 * (SEND_WITH_INV, LOCAL_INV) */
	uint32_t xrc_srqn;	/* XRC_SEND: the remote XRC SRQ (qp_type.xrc.remote_srqn) */
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
			uint32_t rsvd;
		} rdma;
		struct {
			uint64_t remote_addr;
			uint64_t compare_add;
			uint64_t swap;
			uint32_t rkey;
			uint32_t rsvd;
		} atomic;
		struct {
			uint32_t ah;		/* address handle number in the client's AH table */
			uint32_t remote_qpn;
			uint32_t remote_qkey;	/* high bit set: use the QP's own Q_Key (C10-15) */
			uint32_t rsvd;
		} ud;
		/*
		 * FLUSH: the range (or, level DROCE_SHM_FLUSH_MR, the whole MR of rkey)
		 * made durable as type says (doc/verbs-coverage.md, "ATOMIC WRITE and FLUSH").
		 */
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
			uint32_t length;
			uint8_t type;		/* DROCE_SHM_FLUSH_GLOBAL | _PERSISTENT */
			uint8_t level;		/* DROCE_SHM_FLUSH_RANGE or _MR */
			uint8_t rsvd[6];
		} flush;
		/* BIND_MW (ibv_bind_mw too): the window mw_rkey names takes rkey's low byte. */
		struct {
			uint64_t addr;		/* bound range, in the MR's address space */
			uint64_t length;	/* 0: unbind (type 1 only) */
			uint32_t mr_lkey;
			uint32_t mw_rkey;
			uint32_t rkey;		/* the window's key once bound */
			uint32_t access;	/* enum ibv_access_flags */
		} bind;
	};
	uint64_t rsvd2;
};

/* rdma-core 45's enum ibv_placement_type and enum ibv_selectivity_level (IBA 1.5 FETH). */
#define DROCE_SHM_FLUSH_GLOBAL		0x1
#define DROCE_SHM_FLUSH_PERSISTENT	0x2
#define DROCE_SHM_FLUSH_RANGE		0
#define DROCE_SHM_FLUSH_MR		1

/* Receive WQE: this header, then num_sge SGEs, in a slot of the ring's receive stride. */
struct droce_shm_rwqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t rsvd;
};

/* ---- Completions ---- */

/* enum ibv_wc_status */
enum droce_shm_wc_status {
	DROCE_SHM_WC_SUCCESS = 0,
	DROCE_SHM_WC_LOC_LEN_ERR = 1,
	DROCE_SHM_WC_LOC_QP_OP_ERR = 2,
	DROCE_SHM_WC_LOC_PROT_ERR = 4,
	DROCE_SHM_WC_WR_FLUSH_ERR = 5,
	DROCE_SHM_WC_MW_BIND_ERR = 6,
	DROCE_SHM_WC_BAD_RESP_ERR = 7,
	DROCE_SHM_WC_LOC_ACCESS_ERR = 8,
	DROCE_SHM_WC_REM_INV_REQ_ERR = 9,
	DROCE_SHM_WC_REM_ACCESS_ERR = 10,
	DROCE_SHM_WC_REM_OP_ERR = 11,
	DROCE_SHM_WC_RETRY_EXC_ERR = 12,
	DROCE_SHM_WC_RNR_RETRY_EXC_ERR = 13,
	DROCE_SHM_WC_FATAL_ERR = 19,
	DROCE_SHM_WC_GENERAL_ERR = 21,
};

/* enum ibv_wc_opcode */
enum droce_shm_wc_opcode {
	DROCE_SHM_WC_SEND = 0,
	DROCE_SHM_WC_RDMA_WRITE = 1,
	DROCE_SHM_WC_RDMA_READ = 2,
	DROCE_SHM_WC_COMP_SWAP = 3,
	DROCE_SHM_WC_FETCH_ADD = 4,
	DROCE_SHM_WC_BIND_MW = 5,
	DROCE_SHM_WC_LOCAL_INV = 6,
	DROCE_SHM_WC_FLUSH = 8,
	DROCE_SHM_WC_ATOMIC_WRITE = 9,
	DROCE_SHM_WC_RECV = 128,
	DROCE_SHM_WC_RECV_RDMA_WITH_IMM = 129,
};

/* enum ibv_wc_flags */
enum droce_shm_wc_flag {
	DROCE_SHM_WC_GRH = 1u << 0,
	DROCE_SHM_WC_WITH_IMM = 1u << 1,
	DROCE_SHM_WC_WITH_INV = 1u << 3,
};

/*
 * One completion, one cache line. The engine writes every other field, then owner with a
 * release store; the application reads owner with an acquire load. Entry i of a ring of
 * size 2^k is valid when owner == 1 - ((i >> k) & 1): the ring starts zeroed, the first
 * lap writes 1, the second 0, and so on, so a stale entry never looks fresh.
 */
struct droce_shm_cqe {
	uint64_t wr_id;
	uint32_t byte_len;
	uint32_t imm_data;	/* network byte order; the invalidated rkey with WITH_INV */
	uint32_t qp_num;
	uint32_t src_qp;
	uint32_t vendor_err;
	uint16_t wc_flags;	/* enum droce_shm_wc_flag */
	uint8_t status;		/* enum droce_shm_wc_status */
	uint8_t opcode;		/* enum droce_shm_wc_opcode */
	uint16_t pkey_index;
	uint16_t slid;
	uint8_t sl;
	uint8_t dlid_path_bits;
	uint8_t rsvd0[2];
	/*
	 * The engine's TSC when it wrote the entry, in a CQ created with timestamps (else 0):
	 * ibv_wc_read_completion_ts's raw clock, hca_core_clock = the TSC's kHz (droced's
	 * HELLO answer gives its rate).
	 */
	uint64_t timestamp;
	uint8_t rsvd[15];
	uint8_t owner;		/* written last */
};

/* ---- Objects ---- */

/* enum ibv_qp_state */
enum droce_shm_qp_state {
	DROCE_SHM_QPS_RESET = 0,
	DROCE_SHM_QPS_INIT = 1,
	DROCE_SHM_QPS_RTR = 2,
	DROCE_SHM_QPS_RTS = 3,
	DROCE_SHM_QPS_SQD = 4,
	DROCE_SHM_QPS_SQE = 5,
	DROCE_SHM_QPS_ERR = 6,
};

/* enum ibv_qp_type */
enum droce_shm_qp_type {
	DROCE_SHM_QPT_RC = 2,
	DROCE_SHM_QPT_UC = 3,
	DROCE_SHM_QPT_UD = 4,
	DROCE_SHM_QPT_XRC_SEND = 9,	/* XRC initiator: RC's send side, to an XRC SRQ */
	DROCE_SHM_QPT_XRC_RECV = 10,	/* XRC target: RC's receive side, no queues */
};

/*
 * A QP's shared part: send ring (app produces, engine consumes: the consumer index moves
 * when a WQE is retired, so the app may reuse a slot once cons has passed it), receive ring
 * (unused with an SRQ), and the state as the engine last set it (the engine is the only
 * writer; libdroce reads it to refuse posts in RESET and to learn of a move to ERR).
 * rq_done: receive ring entries whose completion is written, released after each; it
 * trails rq.cons by the receive being filled (taken at a message's first packet). Only
 * libdroce's flush after droced died reads it: the receives from rq_done on never
 * completed.
 */
struct droce_shm_qp {
	struct droce_shm_ring sq;
	struct droce_shm_ring rq;
	alignas(DROCE_SHM_CACHE_LINE) uint32_t state;	/* enum droce_shm_qp_state */
	uint32_t rq_done;
};

/*
 * A CQ's shared part. ring.cons is the application's consumer index (release store after
 * it has read the entries); ring.prod is unused: owner bits mark valid entries.
 * arm: the application requests one notification with a release store of
 * ((n << 1) | solicited_only) where n is one more than in its previous request; the engine
 * notifies (eventfd) at the next completion that qualifies and remembers n as served.
 * A request races with completions as a store-then-load on each side (arm, then the
 * application's re-poll; owner, then the engine's read of arm): the application issues a
 * full fence after its arm store and the engine one between a CQE's owner store and its
 * read of arm, so a completion is always either notified or seen by the re-poll.
 * error: set by the engine on overrun; the CQ is unusable from then on.
 */
struct droce_shm_cq {
	struct droce_shm_ring ring;
	alignas(DROCE_SHM_CACHE_LINE) uint32_t arm;
	uint32_t error;
};

/* An SRQ's shared part: app produces receive WQEs, engines consume them. */
struct droce_shm_srq {
	struct droce_shm_ring ring;
};

/*
 * Doorbells of one engine for one client: bit s of words[s / 64] says "look at the QP in
 * doorbell slot s"; bit w of summary says words[w] may have bits set. The application
 * sets the word bit, then the summary bit (both fetch-or, release); the engine exchanges
 * the summary with 0, then each flagged word with 0 (acquire), and then reads the rings.
 *
 * sleeping is non-zero while the engine sleeps in the kernel (doc/engine.md, "Sleeping
 * engines"): after its summary bit the application then writes the engine's wake-up
 * eventfd for this client (CREATE_QP's fd, which comes only from an engine that may
 * sleep: without it, the application neither fences nor looks). The engine stores sleeping before its last
 * look at summary, the application its summary bit before its look at sleeping, each with
 * a full fence between (Dekker): one of the two sees the other's store, so no doorbell
 * is left for an engine that sleeps on.
 */
struct droce_shm_doorbell {
	alignas(DROCE_SHM_CACHE_LINE) uint64_t summary;
	uint32_t sleeping;	/* the engine writes; 0 or 1 */
	alignas(DROCE_SHM_CACHE_LINE) uint64_t words[DROCE_SHM_DB_WORDS];
};

/*
 * The client's asynchronous events (ibv_get_async_event), one ring per region at the
 * offset HELLO answers (droce_shm_proto.h). droced is the only producer (it forwards what
 * engines report, and writes lost when the ring is full); the application consumes and
 * publishes ring.cons. Entry i lives in ev[i & (DROCE_SHM_EVENT_RING - 1)].
 */
/*
 * enum ibv_event_type, for droced and the engines, which do not include rdma-core's
 * headers (shm_abi_check.c proves every value equal to rdma-core's).
 */
enum droce_shm_event_type {
	DROCE_SHM_EVENT_CQ_ERR = 0,
	DROCE_SHM_EVENT_QP_FATAL = 1,
	DROCE_SHM_EVENT_QP_REQ_ERR = 2,
	DROCE_SHM_EVENT_QP_ACCESS_ERR = 3,
	DROCE_SHM_EVENT_COMM_EST = 4,
	DROCE_SHM_EVENT_SQ_DRAINED = 5,
	DROCE_SHM_EVENT_PATH_MIG = 6,
	DROCE_SHM_EVENT_PATH_MIG_ERR = 7,
	DROCE_SHM_EVENT_DEVICE_FATAL = 8,
	DROCE_SHM_EVENT_PORT_ACTIVE = 9,
	DROCE_SHM_EVENT_PORT_ERR = 10,
	DROCE_SHM_EVENT_LID_CHANGE = 11,
	DROCE_SHM_EVENT_PKEY_CHANGE = 12,
	DROCE_SHM_EVENT_SM_CHANGE = 13,
	DROCE_SHM_EVENT_SRQ_ERR = 14,
	DROCE_SHM_EVENT_SRQ_LIMIT_REACHED = 15,
	DROCE_SHM_EVENT_QP_LAST_WQE_REACHED = 16,
	DROCE_SHM_EVENT_CLIENT_REREGISTER = 17,
	DROCE_SHM_EVENT_GID_CHANGE = 18,
	DROCE_SHM_EVENT_WQ_FATAL = 19,
};

struct droce_shm_event {
	uint32_t type;		/* enum droce_shm_event_type (ibv_event_type) */
	uint32_t handle;	/* CQ or SRQ handle, QPN for QP events; unused for device events */
};

struct droce_shm_event_ring {
	struct droce_shm_ring ring;
	uint64_t lost;		/* events dropped because the ring was full (droced writes) */
	/* The port's state now (DROCE_PROTO_PORT_*), as ibv_query_port reports it: droced
	 * writes it before the PORT_ERR or PORT_ACTIVE event that tells of the change. */
	uint32_t port_state;
	uint32_t rsvd;
	struct droce_shm_event ev[DROCE_SHM_EVENT_RING];
};

/* ---- Layout checks: this header is an ABI ---- */
#include <stddef.h>
_Static_assert(sizeof(struct droce_shm_region_hdr) == 32 + 8 * DROCE_SHM_MAX_ENGINES, "region hdr");
_Static_assert(sizeof(struct droce_shm_ring) == 128, "ring");
_Static_assert(offsetof(struct droce_shm_ring, cons) == 64, "ring cons");
_Static_assert(sizeof(struct droce_shm_sge) == 16, "sge");
_Static_assert(sizeof(struct droce_shm_swqe) == 64, "swqe");
_Static_assert(offsetof(struct droce_shm_swqe, opcode) == 8, "swqe opcode");
_Static_assert(offsetof(struct droce_shm_swqe, inline_len) == 12, "swqe inline_len");
_Static_assert(offsetof(struct droce_shm_swqe, imm_data) == 16, "swqe imm");
_Static_assert(offsetof(struct droce_shm_swqe, xrc_srqn) == 20, "swqe xrc srqn");
_Static_assert(offsetof(struct droce_shm_swqe, rdma) == 24, "swqe rdma");
_Static_assert(offsetof(struct droce_shm_swqe, atomic.rkey) == 48, "swqe atomic rkey");
_Static_assert(offsetof(struct droce_shm_swqe, ud.remote_qkey) == 32, "swqe ud qkey");
_Static_assert(offsetof(struct droce_shm_swqe, bind.access) == 52, "swqe bind access");
_Static_assert(offsetof(struct droce_shm_swqe, flush.level) == 41, "swqe flush level");
_Static_assert(sizeof(struct droce_shm_rwqe) == 16, "rwqe");
_Static_assert(sizeof(struct droce_shm_cqe) == 64, "cqe");
_Static_assert(offsetof(struct droce_shm_cqe, status) == 30, "cqe status");
_Static_assert(offsetof(struct droce_shm_cqe, owner) == 63, "cqe owner");
_Static_assert(offsetof(struct droce_shm_cqe, timestamp) == 40, "cqe timestamp");
_Static_assert(sizeof(struct droce_shm_qp) == 320, "qp");
_Static_assert(offsetof(struct droce_shm_qp, state) == 256, "qp state");
_Static_assert(offsetof(struct droce_shm_qp, rq_done) == 260, "qp rq_done");
_Static_assert(sizeof(struct droce_shm_cq) == 192, "cq");
_Static_assert(sizeof(struct droce_shm_srq) == 128, "srq");
_Static_assert(sizeof(struct droce_shm_doorbell) == 64 + 8 * DROCE_SHM_DB_WORDS, "doorbell");
_Static_assert(sizeof(struct droce_shm_event) == 8, "event");
_Static_assert(offsetof(struct droce_shm_event_ring, lost) == 128, "event ring lost");
_Static_assert(offsetof(struct droce_shm_event_ring, port_state) == 136, "event ring port");
_Static_assert(offsetof(struct droce_shm_event_ring, ev) == 144, "event ring ev");
_Static_assert(sizeof(struct droce_shm_event_ring) == 2240, "event ring");
_Static_assert(DROCE_SHM_MAX_INLINE + sizeof(struct droce_shm_swqe) == DROCE_SHM_MAX_SQ_STRIDE,
	       "inline fits the largest stride");

/* Slot stride of a send ring: header plus SGEs or inline data, a power of two >= 64. */
static inline uint32_t
droce_shm_sq_stride(uint32_t max_sge, uint32_t max_inline)
{
	uint32_t body = max_sge * sizeof(struct droce_shm_sge);
	uint32_t need = sizeof(struct droce_shm_swqe) + (body > max_inline ? body : max_inline);
	uint32_t stride = 64;

	while (stride < need)
		stride <<= 1;
	return stride;
}

/* Slot stride of a receive or SRQ ring: header plus SGEs, a power of two >= 32. */
static inline uint32_t
droce_shm_rq_stride(uint32_t max_sge)
{
	uint32_t need = sizeof(struct droce_shm_rwqe) + max_sge * sizeof(struct droce_shm_sge);
	uint32_t stride = 32;

	while (stride < need)
		stride <<= 1;
	return stride;
}

/* Is CQE slot index idx (free-running) of a ring of 2^log2_size entries written? */
static inline uint8_t
droce_shm_cqe_owner(uint32_t idx, unsigned int log2_size)
{
	return 1u - ((idx >> log2_size) & 1u);
}

#endif /* DROCE_SHM_H */
