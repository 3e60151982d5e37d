/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * The application side of the rings: ibv_post_send, ibv_post_recv, ibv_post_srq_recv,
 * ibv_poll_cq and ibv_req_notify_cq on a view of the client region. Runs on the
 * application thread that holds the object's lock (droce_shm_client.h); it owns the
 * producer indices of the work rings and the consumer index of a CQ, and only reads what
 * the engine publishes (the work rings' consumer indices, the QP state, CQE owner bits,
 * the CQ error flag).
 *
 * Memory orders, one pair per index:
 *   - work ring prod: WQE slots are written with plain stores, then prod is published
 *     with one release store per post call; the engine acquires prod before it copies the
 *     slots;
 *   - work ring cons: the engine release-stores it once it is done with a slot (receive
 *     and SRQ rings: when the WQE is copied out; send rings: when the WQE retires); this
 *     side acquires it before reusing a slot, so the engine's reads of the old WQE
 *     happen before our writes of the new one;
 *   - doorbells: fetch-or with release after the prod store, so an engine that takes the
 *     bit with acquire sees the new prod;
 *   - CQE owner: the engine writes the CQE, then release-stores owner; this side
 *     acquires owner before reading the other fields;
 *   - CQ cons: release-stored after the CQEs are read, so an engine that acquires it may
 *     overwrite those slots.
 * Ring sizes are powers of two: slots are found with a mask, never a division.
 */

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "droce_shm_client.h"

#define OP(o)		(1u << DROCE_SHM_WR_##o)

/*
 * Send opcodes per QP type (the IB spec's table of operations per service type): UD
 * carries only SENDs; UC adds RDMA WRITE; RC has every opcode, including the local
 * memory operations LOCAL_INV and BIND_MW and IBA 1.5's FLUSH and ATOMIC WRITE, which
 * the engine may or may not implement (EOPNOTSUPP via supported_wr, so test suites skip
 * them instead of failing).
 */
#define OPS_UD		(OP(SEND) | OP(SEND_WITH_IMM))
#define OPS_UC		(OPS_UD | OP(RDMA_WRITE) | OP(RDMA_WRITE_WITH_IMM))
#define OPS_RC		(OPS_UC | OP(RDMA_READ) | OP(ATOMIC_CMP_AND_SWP) | \
			 OP(ATOMIC_FETCH_AND_ADD) | OP(LOCAL_INV) | OP(BIND_MW) | \
			 OP(SEND_WITH_INV) | OP(FLUSH) | OP(ATOMIC_WRITE))
/* The local memory operations: no packet, no SGEs (they are ignored). */
#define OPS_LOCAL	(OP(LOCAL_INV) | OP(BIND_MW))
/* Opcodes whose imm_data field means something (immediate or rkey to invalidate). */
#define OPS_IMM		(OP(RDMA_WRITE_WITH_IMM) | OP(SEND_WITH_IMM) | OP(SEND_WITH_INV) | \
			 OP(LOCAL_INV))
#define OPS_RDMA	(OP(RDMA_WRITE) | OP(RDMA_WRITE_WITH_IMM) | OP(RDMA_READ) | \
			 OP(ATOMIC_WRITE))
#define OPS_ATOMIC	(OP(ATOMIC_CMP_AND_SWP) | OP(ATOMIC_FETCH_AND_ADD))
/*
 * Opcodes with an outbound payload, the only ones IBV_SEND_INLINE applies to. On the
 * others (READ and atomics, whose local buffer is a destination; LOCAL_INV) the flag is
 * dropped and the SGEs are used as they are, as a real HCA would.
 */
#define OPS_INLINE	(OPS_UC | OP(SEND_WITH_INV) | OP(ATOMIC_WRITE))
/* The HCA writes the local buffer of these: their SGEs need local write access. */
#define OPS_LOCAL_WRITE	(OP(RDMA_READ) | OPS_ATOMIC)

#define SEND_FLAGS	(DROCE_SHM_SEND_FENCE | DROCE_SHM_SEND_SIGNALED | \
			 DROCE_SHM_SEND_SOLICITED | DROCE_SHM_SEND_INLINE | \
			 DROCE_SHM_SEND_IP_CSUM)

/* The IB spec's largest message: 2^31 bytes. */
#define MAX_MSG_LEN	(1ull << 31)
/* Operand and result of an atomic (IB 9.4.5). */
#define ATOMIC_LEN	8

/* Bit of opcode op in an OPS_* mask; 0 for values outside the enum. */
static inline uint32_t
op_bit(unsigned int op)
{
	return op <= DROCE_SHM_WR_ATOMIC_WRITE ? 1u << op : 0;
}

static uint32_t
qp_type_ops(uint8_t qp_type)
{
	switch (qp_type) {
	case DROCE_SHM_QPT_RC:
		return OPS_RC;
	case DROCE_SHM_QPT_UC:
		return OPS_UC;
	case DROCE_SHM_QPT_UD:
		return OPS_UD;
	case DROCE_SHM_QPT_XRC_SEND:
		/* RC's, but IBA 1.5's, which have no XRC opcodes; an XRC target sends nothing. */
		return OPS_RC & ~(OP(FLUSH) | OP(ATOMIC_WRITE));
	default:
		return 0;
	}
}

/*
 * Send WRs are accepted from RTS on (the IB spec's QP state table); RESET, INIT and RTR
 * refuse them. ERR accepts them: the engine completes them with WR_FLUSH_ERR.
 */
static inline bool
qp_state_can_send(uint32_t state)
{
	return state == DROCE_SHM_QPS_RTS || state == DROCE_SHM_QPS_SQD ||
	       state == DROCE_SHM_QPS_SQE || state == DROCE_SHM_QPS_ERR;
}

/*
 * Checks one send WR against everything but ring space. On success *flags holds the WQE
 * flags (INLINE dropped where it does not apply) and *len the message length.
 */
static inline int
send_wr_check(const struct droce_shm_client_qp *qp, const struct ibv_send_wr *wr,
	      uint32_t allowed, uint32_t supported, uint8_t *flags, uint32_t *len)
{
	uint32_t bit = op_bit((unsigned int)wr->opcode);
	uint8_t f = (uint8_t)(wr->send_flags & SEND_FLAGS);
	unsigned int access;
	uint64_t total = 0;
	int i;

	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->sq_max_sge)
		return EINVAL;
	if ((bit & allowed) == 0)
		return EINVAL;
	if ((bit & supported) == 0)
		return EOPNOTSUPP;
	if ((bit & OPS_INLINE) == 0)
		f &= (uint8_t)~DROCE_SHM_SEND_INLINE;
	if (bit & OPS_LOCAL) {
		/*
		 * A bind names its window and, unless it unbinds (length 0), its MR; the rest
		 * (keys, PDs, range, rights) the engine checks when it executes the WQE, as an
		 * HCA does, and answers a bad one with a MW_BIND_ERR completion.
		 */
		if (bit == OP(BIND_MW) &&
		    (wr->bind_mw.mw == NULL ||
		     (wr->bind_mw.bind_info.length != 0 && wr->bind_mw.bind_info.mr == NULL)))
			return EINVAL;
		*flags = f;
		*len = 0;
		return 0;
	}
	if (bit == OP(FLUSH)) {
		uint32_t tl = wr->qp_type.xrc.remote_srqn;

		/* A placement type (global visibility, persistence or both) and a level. */
		if ((tl & 0xFF) == 0 || (tl & 0xFF) > (DROCE_SHM_FLUSH_GLOBAL |
						       DROCE_SHM_FLUSH_PERSISTENT) ||
		    (tl >> 8) > DROCE_SHM_FLUSH_MR)
			return EINVAL;
		*flags = f;
		*len = 0;
		return 0;
	}
	if (f & DROCE_SHM_SEND_INLINE) {
		/* Inline data is copied now and needs no lkey (ibv_post_send(3)). */
		for (i = 0; i < wr->num_sge; i++)
			total += wr->sg_list[i].length;
		/* ATOMIC WRITE's 8 bytes may go inline whatever max_inline, if the slot has room. */
		if (total > qp->max_inline &&
		    !(bit == OP(ATOMIC_WRITE) &&
		      total <= qp->sq_stride - sizeof(struct droce_shm_swqe)))
			return EINVAL;
	} else {
		access = (bit & OPS_LOCAL_WRITE) ? IBV_ACCESS_LOCAL_WRITE : 0;
		for (i = 0; i < wr->num_sge; i++) {
			const struct ibv_sge *sge = &wr->sg_list[i];

			if (!qp->lkey_check(qp->check_arg, sge->lkey, sge->addr, sge->length,
					    access))
				return EINVAL;
			total += sge->length;
		}
		if (total > MAX_MSG_LEN)
			return EINVAL;
		/* An atomic's local buffer is its 8-byte original value (rxe checks the same). */
		if ((bit & OPS_ATOMIC) && total != ATOMIC_LEN)
			return EINVAL;
	}
	/* ATOMIC WRITE's payload is exactly the 8 bytes it stores (IBA 1.5). */
	if (bit == OP(ATOMIC_WRITE) && total != ATOMIC_LEN)
		return EINVAL;
	if (qp->qp_type == DROCE_SHM_QPT_UD &&
	    (wr->wr.ud.ah == NULL || !qp->ah_check(qp->check_arg, wr->wr.ud.ah->handle)))
		return EINVAL;
	*flags = f;
	*len = (uint32_t)total;
	return 0;
}

/*
 * Writes a checked send WR into slot: the header with every reserved field zero, then the
 * SGE list or the inline bytes.
 */
static inline void
swqe_write(uint8_t *slot, const struct droce_shm_client_qp *qp, const struct ibv_send_wr *wr,
	   uint8_t flags, uint32_t len)
{
	struct droce_shm_swqe h = {
		.wr_id = wr->wr_id,
		.opcode = (uint8_t)wr->opcode,
		.flags = flags,
	};
	uint32_t bit = 1u << wr->opcode;
	uint8_t *body = slot + sizeof(h);
	int i;

	if (bit & OPS_IMM)
		h.imm_data = wr->imm_data;
	if (qp->qp_type == DROCE_SHM_QPT_XRC_SEND)
		h.xrc_srqn = wr->qp_type.xrc.remote_srqn;
	if (qp->qp_type == DROCE_SHM_QPT_UD) {
		h.ud.ah = wr->wr.ud.ah->handle;
		h.ud.remote_qpn = wr->wr.ud.remote_qpn;
		h.ud.remote_qkey = wr->wr.ud.remote_qkey;
	} else if (bit & OPS_RDMA) {
		h.rdma.remote_addr = wr->wr.rdma.remote_addr;
		h.rdma.rkey = wr->wr.rdma.rkey;
	} else if (bit & OPS_ATOMIC) {
		h.atomic.remote_addr = wr->wr.atomic.remote_addr;
		h.atomic.compare_add = wr->wr.atomic.compare_add;
		h.atomic.swap = wr->wr.atomic.swap;
		h.atomic.rkey = wr->wr.atomic.rkey;
	} else if (bit == OP(FLUSH)) {
		h.flush.remote_addr = wr->wr.rdma.remote_addr;
		h.flush.rkey = wr->wr.rdma.rkey;
		h.flush.length = wr->invalidate_rkey;
		h.flush.type = (uint8_t)(wr->qp_type.xrc.remote_srqn & 0xFF);
		h.flush.level = (uint8_t)(wr->qp_type.xrc.remote_srqn >> 8);
	} else if (bit == OP(BIND_MW)) {
		const struct ibv_mw_bind_info *b = &wr->bind_mw.bind_info;

		h.bind.addr = b->addr;
		h.bind.length = b->length;
		h.bind.mr_lkey = b->length != 0 ? b->mr->lkey : 0;
		h.bind.mw_rkey = wr->bind_mw.mw->rkey;
		h.bind.rkey = wr->bind_mw.rkey;
		h.bind.access = b->mw_access_flags;
	}
	if (bit & (OPS_LOCAL | OP(FLUSH))) {
		/* num_sge stays 0: a local operation or a FLUSH moves no data. */
	} else if (flags & DROCE_SHM_SEND_INLINE) {
		/* num_sge stays 0: the body is inline_len bytes of data. */
		h.inline_len = len;
		for (i = 0; i < wr->num_sge; i++) {
			const struct ibv_sge *sge = &wr->sg_list[i];

			memcpy(body, (const void *)(uintptr_t)sge->addr, sge->length);
			body += sge->length;
		}
	} else {
		h.num_sge = (uint8_t)wr->num_sge;
		/* Same layout: shm_abi_check.c. */
		memcpy(body, wr->sg_list, (size_t)wr->num_sge * sizeof(struct droce_shm_sge));
	}
	memcpy(slot, &h, sizeof(h));
}

/*
 * Bit slot of the engine's doorbell block: the word first, then the summary (release);
 * then, if the engine sleeps, its eventfd. The fence orders the summary's store before
 * the load of sleeping, which the engine stores before its last look at the summary
 * (droce_shm_doorbell): without it the load could pass the store and both sides miss.
 */
static inline void
doorbell_ring(const struct droce_shm_client_db *db)
{
	uint32_t w = db->slot >> 6;
	uint64_t one = 1;

	__atomic_fetch_or(&db->block->words[w], 1ull << (db->slot & 63), __ATOMIC_RELEASE);
	__atomic_fetch_or(&db->block->summary, 1ull << w, __ATOMIC_RELEASE);
	if (db->wake_fd < 0)
		return;		/* an engine that never sleeps: no fence, no look */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&db->block->sleeping, __ATOMIC_RELAXED) != 0 &&
	    write(db->wake_fd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is full, so the engine wakes anyway */
	}
}

/*
 * The state is read once per call: a call racing with a modify_qp may see either state,
 * as with any provider.
 */
int
droce_shm_post_send(struct droce_shm_client_qp *qp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr)
{
	const uint32_t allowed = qp_type_ops(qp->qp_type);
	const uint32_t supported = qp->supported_wr;
	const uint32_t size = qp->sq_size;
	const uint32_t mask = size - 1;
	uint32_t prod = qp->sq_prod;
	/* Looks full, so the first WR loads the engine's cons. */
	uint32_t cons = prod - size;
	uint32_t len = 0;
	uint8_t flags = 0;
	int ret = 0;

	if (wr != NULL && !qp_state_can_send(droce_shm_client_qp_state(qp))) {
		ret = EINVAL;
		goto bad;
	}
	for (; wr != NULL; wr = wr->next) {
		ret = send_wr_check(qp, wr, allowed, supported, &flags, &len);
		if (ret != 0)
			goto bad;
		if (prod - cons >= size) {
			cons = __atomic_load_n(&qp->ctl->sq.cons, __ATOMIC_ACQUIRE);
			if (prod - cons >= size) {
				ret = ENOMEM;
				goto bad;
			}
		}
		swqe_write(qp->sq + (size_t)(prod & mask) * qp->sq_stride, qp, wr, flags, len);
		prod++;
	}
	goto publish;
bad:
	*bad_wr = wr;
publish:
	if (prod != qp->sq_prod) {
		qp->sq_prod = prod;
		__atomic_store_n(&qp->ctl->sq.prod, prod, __ATOMIC_RELEASE);
		doorbell_ring(&qp->db);
	}
	return ret;
}

/*
 * Receive WRs into a ring (a QP's RQ or an SRQ): same contract as post_send, one release
 * store of *shared_prod at the end. No doorbell: the engine reads the ring when a packet
 * needs a WQE, and a QP in ERR is flushed by the engine on its own.
 */
static int
recv_post(uint8_t *ring, uint32_t size, uint32_t stride, uint32_t max_sge,
	  droce_shm_lkey_check_fn *lkey_check, void *check_arg, struct droce_shm_ring *shared,
	  uint32_t *priv_prod, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	const uint32_t mask = size - 1;
	uint32_t prod = *priv_prod;
	uint32_t cons = prod - size;
	int ret = 0;
	int i;

	for (; wr != NULL; wr = wr->next) {
		struct droce_shm_rwqe *h;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge) {
			ret = EINVAL;
			break;
		}
		for (i = 0; i < wr->num_sge; i++) {
			const struct ibv_sge *sge = &wr->sg_list[i];

			if (!lkey_check(check_arg, sge->lkey, sge->addr, sge->length,
					IBV_ACCESS_LOCAL_WRITE))
				break;
		}
		if (i < wr->num_sge) {
			ret = EINVAL;
			break;
		}
		if (prod - cons >= size) {
			cons = __atomic_load_n(&shared->cons, __ATOMIC_ACQUIRE);
			if (prod - cons >= size) {
				ret = ENOMEM;
				break;
			}
		}
		h = (struct droce_shm_rwqe *)(ring + (size_t)(prod & mask) * stride);
		h->wr_id = wr->wr_id;
		h->num_sge = (uint32_t)wr->num_sge;
		h->rsvd = 0;
		/* Same layout: shm_abi_check.c. */
		memcpy(h + 1, wr->sg_list, (size_t)wr->num_sge * sizeof(struct droce_shm_sge));
		prod++;
	}
	if (ret != 0)
		*bad_wr = wr;
	if (prod != *priv_prod) {
		*priv_prod = prod;
		__atomic_store_n(&shared->prod, prod, __ATOMIC_RELEASE);
	}
	return ret;
}

int
droce_shm_post_recv(struct droce_shm_client_qp *qp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad_wr)
{
	/* From INIT on (the IB spec's QP state table); with an SRQ, never on the QP. */
	if (wr == NULL)
		return 0;
	if (droce_shm_client_qp_state(qp) == DROCE_SHM_QPS_RESET || qp->rq == NULL) {
		*bad_wr = wr;
		return EINVAL;
	}
	return recv_post(qp->rq, qp->rq_size, qp->rq_stride, qp->rq_max_sge, qp->lkey_check,
			 qp->check_arg, &qp->ctl->rq, &qp->rq_prod, wr, bad_wr);
}

int
droce_shm_post_srq_recv(struct droce_shm_client_srq *srq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr)
{
	return recv_post(srq->ring, srq->size, srq->stride, srq->max_sge, srq->lkey_check,
			 srq->check_arg, &srq->ctl->ring, &srq->prod, wr, bad_wr);
}

/*
 * Returns -EIO once the engine has flagged an overrun (checked before anything else, so
 * even a poll of 0 entries reports it): rdma-core's providers return a negative value on
 * failure, and the CQ's contents can no longer be trusted. num_entries <= 0 polls nothing.
 */
int
droce_shm_poll_cq(struct droce_shm_client_cq *cq, int num_entries, struct ibv_wc *wc)
{
	return droce_shm_poll_cq_ts(cq, num_entries, wc, NULL);
}

int
droce_shm_poll_cq_ts(struct droce_shm_client_cq *cq, int num_entries, struct ibv_wc *wc,
		     uint64_t *ts)
{
	const uint32_t mask = cq->size - 1;
	const unsigned int log2_size = cq->log2_size;
	uint32_t cons = cq->cons;
	int n;

	if (__atomic_load_n(&cq->ctl->error, __ATOMIC_ACQUIRE) != 0)
		return -EIO;
	for (n = 0; n < num_entries; n++) {
		const struct droce_shm_cqe *cqe = &cq->ring[cons & mask];
		struct ibv_wc *w = &wc[n];

		if (__atomic_load_n(&cqe->owner, __ATOMIC_ACQUIRE) !=
		    droce_shm_cqe_owner(cons, log2_size))
			break;
		w->wr_id = cqe->wr_id;
		w->status = (enum ibv_wc_status)cqe->status;
		w->opcode = (enum ibv_wc_opcode)cqe->opcode;
		w->vendor_err = cqe->vendor_err;
		w->byte_len = cqe->byte_len;
		/* imm_data and invalidated_rkey share the union: one copy fills either. */
		w->imm_data = cqe->imm_data;
		w->qp_num = cqe->qp_num;
		w->src_qp = cqe->src_qp;
		w->wc_flags = cqe->wc_flags;
		w->pkey_index = cqe->pkey_index;
		w->slid = cqe->slid;
		w->sl = cqe->sl;
		w->dlid_path_bits = cqe->dlid_path_bits;
		if (ts != NULL)
			ts[n] = cqe->timestamp;
		cons++;
	}
	if (n > 0) {
		cq->cons = cons;
		__atomic_store_n(&cq->ctl->ring.cons, cons, __ATOMIC_RELEASE);
	}
	return n;
}

uint32_t
droce_shm_cq_clean(struct droce_shm_client_cq *cq, uint32_t qpn)
{
	const uint32_t mask = cq->size - 1;
	uint32_t cons = cq->cons, prod, nfreed = 0;

	/* What the engines have finished: from cons, each slot whose owner says this lap. */
	for (prod = cons; prod - cons < cq->size; prod++)
		if (__atomic_load_n(&cq->ring[prod & mask].owner, __ATOMIC_ACQUIRE) !=
		    droce_shm_cqe_owner(prod, cq->log2_size))
			break;
	/*
	 * Backwards, each kept entry moves nfreed slots on, over the removed ones: the kept
	 * end where it was, in order, and cons advances by nfreed. Slots keep their owner
	 * byte (valid for this lap already); an engine writes only beyond prod meanwhile.
	 */
	while (prod != cons) {
		const struct droce_shm_cqe *src = &cq->ring[--prod & mask];

		if (src->qp_num == qpn)
			nfreed++;
		else if (nfreed != 0)
			memcpy(&cq->ring[(prod + nfreed) & mask], src,
			       offsetof(struct droce_shm_cqe, owner));
	}
	if (nfreed != 0) {
		cq->cons = cons + nfreed;
		/* the moves before the engines may reuse the freed slots */
		__atomic_store_n(&cq->ctl->ring.cons, cq->cons, __ATOMIC_RELEASE);
	}
	return nfreed;
}

/*
 * The arm store and the caller's next poll form a store-then-load pair against the
 * engine's CQE write and its read of arm: without a full fence on both sides each could
 * miss the other's store, and a completion that arrived just before the arm would raise
 * no event and not be seen by the re-poll verbs applications do after arming. The fence
 * makes that impossible, given the engine's fence between its owner store and its arm
 * load (droce_shm.h).
 */
void
droce_shm_req_notify_cq(struct droce_shm_client_cq *cq, bool solicited_only)
{
	cq->arm_seq++;
	__atomic_store_n(&cq->ctl->arm, (cq->arm_seq << 1) | (solicited_only ? 1u : 0u),
			 __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}
