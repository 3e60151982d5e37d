/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef DROCE_SHM_CLIENT_H
#define DROCE_SHM_CLIENT_H

/*
 * The application side of the shared-memory ABI: posting work requests and polling
 * completions with rdma-core's types, exactly as libdroce does it (libdroce's ibv_post_send
 * is droce_shm_post_send on the QP's view). No system call, no DPDK.
 *
 * A view holds the application's own pointers into its mapping of the region and its
 * private producer indices; it is filled from the control path's answer to a create call.
 * Thread safety is the caller's, as with a verbs provider: one lock per QP/SRQ/CQ view.
 */

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "droce_shm.h"

/*
 * Is [addr, addr + len) inside a memory region of this client registered under lkey with
 * at least the access bits in access? The view owner provides it (libdroce: its MR table).
 */
typedef bool droce_shm_lkey_check_fn(void *arg, uint32_t lkey, uint64_t addr, uint64_t len,
				     unsigned int access);
/* Is ah a live address handle of this client? */
typedef bool droce_shm_ah_check_fn(void *arg, uint32_t ah);

/* Doorbell of one QP: its engine's block in the client region and its slot there. */
struct droce_shm_client_db {
	struct droce_shm_doorbell *block;
	uint32_t slot;		/* < DROCE_SHM_DB_SLOTS */
	int wake_fd;		/* the engine's wake-up eventfd for this client; -1: none */
};

struct droce_shm_client_qp {
	struct droce_shm_qp *ctl;
	uint8_t *sq;			/* sq_size slots of sq_stride bytes */
	uint8_t *rq;			/* rq_size slots of rq_stride bytes; NULL with an SRQ */
	uint32_t sq_size;		/* power of two */
	uint32_t sq_stride;		/* droce_shm_sq_stride(sq_max_sge, max_inline) */
	uint32_t sq_max_sge;
	uint32_t max_inline;
	uint32_t rq_size;		/* power of two; 0 with an SRQ */
	uint32_t rq_stride;
	uint32_t rq_max_sge;
	uint32_t qp_num;
	uint8_t qp_type;		/* enum droce_shm_qp_type */
	/* Send opcodes (bit = enum droce_shm_wr_opcode) the engine implements: others -> EOPNOTSUPP. */
	uint32_t supported_wr;
	struct droce_shm_client_db db;
	droce_shm_lkey_check_fn *lkey_check;
	droce_shm_ah_check_fn *ah_check;
	void *check_arg;
	/* Private: what this side has published. */
	uint32_t sq_prod;
	uint32_t rq_prod;
};

struct droce_shm_client_srq {
	struct droce_shm_srq *ctl;
	uint8_t *ring;
	uint32_t size;			/* power of two */
	uint32_t stride;
	uint32_t max_sge;
	droce_shm_lkey_check_fn *lkey_check;
	void *check_arg;
	uint32_t prod;			/* private */
};

struct droce_shm_client_cq {
	struct droce_shm_cq *ctl;
	struct droce_shm_cqe *ring;
	uint32_t size;			/* power of two */
	unsigned int log2_size;
	uint32_t cons;			/* private */
	uint32_t arm_seq;		/* private: n of the last notification request */
};

/*
 * ibv_post_send: validates each WR in order and stops at the first bad one: *bad_wr points
 * at it and its errno is returned; WRs before it are posted, none from it onwards.
 * errno: EINVAL for the QP's state (RESET, INIT, RTR), too many SGEs, an opcode the QP type
 * does not allow, inline data longer than max_inline, an lkey the check refuses, a length
 * over 2^31, a bad AH (UD); EOPNOTSUPP for an opcode the engine lacks; ENOMEM when the send
 * ring is full. Then publishes the producer index and rings the doorbell once.
 *
 * IBV_WR_FLUSH (DROCE_SHM_WR_FLUSH, rdma-core 45's, which has no fields of its own in
 * ibv_send_wr): wr.rdma.remote_addr and rkey, the length in invalidate_rkey, and
 * type | level << 8 (DROCE_SHM_FLUSH_*) in qp_type.xrc.remote_srqn; libdroce's
 * ibv_wr_flush builds it so (droce_shm_flush_wr).
 */
int droce_shm_post_send(struct droce_shm_client_qp *qp, struct ibv_send_wr *wr,
			struct ibv_send_wr **bad_wr);

/* ibv_post_recv on a QP without an SRQ: same contract; EINVAL in RESET or with an SRQ. */
int droce_shm_post_recv(struct droce_shm_client_qp *qp, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr);

/* ibv_post_srq_recv: same contract. */
int droce_shm_post_srq_recv(struct droce_shm_client_srq *srq, struct ibv_recv_wr *wr,
			    struct ibv_recv_wr **bad_wr);

/*
 * ibv_poll_cq: up to num_entries completions in order; returns how many, or a negative
 * value once the CQ has had an overrun (the engine set ctl->error).
 */
int droce_shm_poll_cq(struct droce_shm_client_cq *cq, int num_entries, struct ibv_wc *wc);
/*
 * Removes every completion of QP qpn waiting in the CQ, keeping the others in order: a QP
 * moved to RESET has none left (IB 11.2.4.2 discards its work; mlx4 and mlx5's providers
 * clean their CQs so, and programs that restart a QP rely on it). The consumer's side,
 * under the caller's poll lock; only entries the engines have finished (owner set) are
 * moved. Returns how many it removed.
 */
uint32_t droce_shm_cq_clean(struct droce_shm_client_cq *cq, uint32_t qpn);
/* The same, with each entry's droce_shm_cqe.timestamp in ts[] (ts may be NULL). */
int droce_shm_poll_cq_ts(struct droce_shm_client_cq *cq, int num_entries, struct ibv_wc *wc,
			 uint64_t *ts);

/* ibv_req_notify_cq: one notification at the next (solicited, if asked) completion. */
void droce_shm_req_notify_cq(struct droce_shm_client_cq *cq, bool solicited_only);

/* The QP's state as the engine last published it (enum droce_shm_qp_state). */
static inline uint32_t
droce_shm_client_qp_state(const struct droce_shm_client_qp *qp)
{
	return __atomic_load_n(&qp->ctl->state, __ATOMIC_ACQUIRE);
}

/* The ibv_send_wr of a FLUSH, as droce_shm_post_send reads it. */
static inline void
droce_shm_flush_wr(struct ibv_send_wr *wr, uint32_t rkey, uint64_t remote_addr, uint32_t len,
		   uint8_t type, uint8_t level)
{
	wr->opcode = (enum ibv_wr_opcode)DROCE_SHM_WR_FLUSH;
	wr->wr.rdma.rkey = rkey;
	wr->wr.rdma.remote_addr = remote_addr;
	wr->invalidate_rkey = len;
	wr->qp_type.xrc.remote_srqn = (uint32_t)type | (uint32_t)level << 8;
	wr->num_sge = 0;
}

#endif /* DROCE_SHM_CLIENT_H */
