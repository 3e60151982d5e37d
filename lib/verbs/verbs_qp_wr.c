/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * The extended QP's wr_* API (ibv_wr_post(3)): ibv_wr_start, the wr_* builders and
 * ibv_wr_complete over a per-QP batch of ibv_send_wrs, which wr_complete posts through
 * the QP's ordinary post path (verbs_qp.c) in one go; ibv_wr_abort drops the batch. A QP
 * gets it when it is created with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS (verbs_qp_batch_init).
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "droce_verbs.h"
#include "verbs_loc.h"

static inline struct verbs_dqp *
qpx_to_dqp(struct ibv_qp_ex *qpx)
{
	return verbs_container_of(qpx, struct verbs_dqp, qpx);
}

/*
 * Each WR of the batch has max_send_sge SGEs and max_inline_data bytes of its own, at
 * least one and 8: an ATOMIC WRITE carries its 8 bytes inline whatever the caps.
 */
static inline size_t
batch_sge_stride(const struct verbs_dqp *qp)
{
	return qp->cap.max_send_sge > 1 ? qp->cap.max_send_sge : 1;
}

static inline size_t
batch_inline_stride(const struct verbs_dqp *qp)
{
	return qp->cap.max_inline_data > sizeof(uint64_t) ? qp->cap.max_inline_data :
								sizeof(uint64_t);
}

/* The next WR of the batch, its common fields set; NULL (and batch_err) when full. */
static struct ibv_send_wr *
wr_new(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode)
{
	struct verbs_dqp *qp = qpx_to_dqp(qpx);
	struct ibv_send_wr *w;

	if (qp->batch_n == qp->batch_max) {
		qp->batch_err = ENOMEM;
		return NULL;
	}
	w = &qp->batch[qp->batch_n];
	memset(w, 0, sizeof(*w));
	w->wr_id = qpx->wr_id;
	w->send_flags = qpx->wr_flags;
	w->opcode = opcode;
	w->sg_list = &qp->batch_sge[(size_t)qp->batch_n * batch_sge_stride(qp)];
	qp->batch_n++;
	return w;
}

/* The WR the last wr_<opcode> call started, for the wr_set_* calls. */
static struct ibv_send_wr *
wr_cur(struct ibv_qp_ex *qpx)
{
	struct verbs_dqp *qp = qpx_to_dqp(qpx);

	if (qp->batch_n == 0) {
		qp->batch_err = EINVAL;
		return NULL;
	}
	return &qp->batch[qp->batch_n - 1];
}

static void
wr_start(struct ibv_qp_ex *qpx)
{
	struct verbs_dqp *qp = qpx_to_dqp(qpx);

	qp->batch_n = 0;
	qp->batch_err = 0;
}

static int
wr_complete(struct ibv_qp_ex *qpx)
{
	struct verbs_dqp *qp = qpx_to_dqp(qpx);
	struct ibv_send_wr *bad;
	uint32_t i;
	int ret = qp->batch_err;

	if (ret == 0 && qp->batch_n > 0) {
		for (i = 0; i + 1 < qp->batch_n; i++)
			qp->batch[i].next = &qp->batch[i + 1];
		qp->batch[qp->batch_n - 1].next = NULL;
		ret = verbs_qp_post_send(&qpx->qp_base, qp->batch, &bad);
	}
	qp->batch_n = 0;
	qp->batch_err = 0;
	return ret;
}

static void
wr_abort(struct ibv_qp_ex *qpx)
{
	wr_start(qpx);
}

static void
wr_send(struct ibv_qp_ex *qpx)
{
	wr_new(qpx, IBV_WR_SEND);
}

static void
wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm)
{
	struct ibv_send_wr *w = wr_new(qpx, IBV_WR_SEND_WITH_IMM);

	if (w != NULL)
		w->imm_data = imm;
}

static void
wr_send_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	struct ibv_send_wr *w = wr_new(qpx, IBV_WR_SEND_WITH_INV);

	if (w != NULL)
		w->invalidate_rkey = rkey;
}

static void
wr_local_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	struct ibv_send_wr *w = wr_new(qpx, IBV_WR_LOCAL_INV);

	if (w != NULL)
		w->invalidate_rkey = rkey;
}

static void
wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw, uint32_t rkey,
	   const struct ibv_mw_bind_info *info)
{
	struct ibv_send_wr *w = wr_new(qpx, IBV_WR_BIND_MW);

	if (w == NULL)
		return;
	w->bind_mw.mw = mw;
	w->bind_mw.rkey = rkey;
	w->bind_mw.bind_info = *info;
}

static void
wr_rdma(struct ibv_qp_ex *qpx, enum ibv_wr_opcode op, uint32_t rkey, uint64_t raddr,
	__be32 imm)
{
	struct ibv_send_wr *w = wr_new(qpx, op);

	if (w == NULL)
		return;
	w->wr.rdma.rkey = rkey;
	w->wr.rdma.remote_addr = raddr;
	w->imm_data = imm;
}

static void
wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr)
{
	wr_rdma(qpx, IBV_WR_RDMA_WRITE, rkey, raddr, 0);
}

static void
wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr, __be32 imm)
{
	wr_rdma(qpx, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, raddr, imm);
}

static void
wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr)
{
	wr_rdma(qpx, IBV_WR_RDMA_READ, rkey, raddr, 0);
}

static void
wr_atomic(struct ibv_qp_ex *qpx, enum ibv_wr_opcode op, uint32_t rkey, uint64_t raddr,
	  uint64_t compare_add, uint64_t swap)
{
	struct ibv_send_wr *w = wr_new(qpx, op);

	if (w == NULL)
		return;
	w->wr.atomic.rkey = rkey;
	w->wr.atomic.remote_addr = raddr;
	w->wr.atomic.compare_add = compare_add;
	w->wr.atomic.swap = swap;
}

static void
wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr, uint64_t compare,
		  uint64_t swap)
{
	wr_atomic(qpx, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, raddr, compare, swap);
}

static void
wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr, uint64_t add)
{
	wr_atomic(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, raddr, add, 0);
}

/*
 * ATOMIC WRITE (IBA 1.5): the 8 bytes at atomic_wr are copied now, as rdma-core's providers
 * do, and go inline.
 */
static void
wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr, const void *atomic_wr)
{
	struct verbs_dqp *qp = qpx_to_dqp(qpx);
	struct ibv_send_wr *w = wr_new(qpx, IBV_WR_ATOMIC_WRITE);
	uint8_t *dst;

	if (w == NULL)
		return;
	dst = &qp->batch_inline[(size_t)(w - qp->batch) * batch_inline_stride(qp)];
	memcpy(dst, atomic_wr, sizeof(uint64_t));
	w->wr.rdma.rkey = rkey;
	w->wr.rdma.remote_addr = raddr;
	w->send_flags |= IBV_SEND_INLINE;
	w->num_sge = 1;
	w->sg_list[0] = (struct ibv_sge){ .addr = (uintptr_t)dst, .length = sizeof(uint64_t) };
}

/* FLUSH (IBA 1.5; rdma-core 45's ibv_wr_flush, in the slot after rdma-core 44's qp_ex). */
static void
wr_flush(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr, size_t len, uint8_t type,
	 uint8_t level)
{
	struct verbs_dqp *qp = qpx_to_dqp(qpx);
	struct ibv_send_wr *w;

	/* The RETH's DMA length is 32 bits, and the IB spec's largest message 2^31 bytes. */
	if (len > (1ull << 31)) {
		qp->batch_err = EINVAL;
		return;
	}
	w = wr_new(qpx, (enum ibv_wr_opcode)DROCE_SHM_WR_FLUSH);
	if (w != NULL)
		droce_shm_flush_wr(w, rkey, raddr, (uint32_t)len, type, level);
}

static void
wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah, uint32_t remote_qpn,
	       uint32_t remote_qkey)
{
	struct ibv_send_wr *w = wr_cur(qpx);

	if (w == NULL)
		return;
	w->wr.ud.ah = ah;
	w->wr.ud.remote_qpn = remote_qpn;
	w->wr.ud.remote_qkey = remote_qkey;
}

/* TSO is not offered (EOPNOTSUPP at create); a call anyway fails the batch, not the process. */
static void
wr_send_tso(struct ibv_qp_ex *qpx, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	(void)hdr;
	(void)hdr_sz;
	(void)mss;
	qpx_to_dqp(qpx)->batch_err = EOPNOTSUPP;
}

/* XRC initiator: the remote XRC SRQ of the WR in hand (ibv_wr_set_xrc_srqn(3)). */
static void
wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t remote_srqn)
{
	struct ibv_send_wr *w = wr_cur(qpx);

	if (w != NULL)
		w->qp_type.xrc.remote_srqn = remote_srqn;
}

static void
wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge, const struct ibv_sge *sg_list)
{
	struct verbs_dqp *qp = qpx_to_dqp(qpx);
	struct ibv_send_wr *w = wr_cur(qpx);

	if (w == NULL)
		return;
	if (num_sge > qp->cap.max_send_sge) {
		qp->batch_err = EINVAL;
		return;
	}
	memcpy(w->sg_list, sg_list, num_sge * sizeof(*sg_list));
	w->num_sge = (int)num_sge;
}

static void
wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	wr_set_sge_list(qpx, 1, &sge);
}

/* Inline data is copied now (ibv_wr_post(3)): into the WR's slot of the batch. */
static void
wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num_buf,
			const struct ibv_data_buf *buf_list)
{
	struct verbs_dqp *qp = qpx_to_dqp(qpx);
	struct ibv_send_wr *w = wr_cur(qpx);
	uint8_t *dst;
	size_t i, total = 0;

	if (w == NULL)
		return;
	dst = &qp->batch_inline[(size_t)(w - qp->batch) * batch_inline_stride(qp)];
	for (i = 0; i < num_buf; i++) {
		if (buf_list[i].length > qp->cap.max_inline_data - total) {
			qp->batch_err = EINVAL;
			return;
		}
		memcpy(dst + total, buf_list[i].addr, buf_list[i].length);
		total += buf_list[i].length;
	}
	if (qp->cap.max_send_sge == 0 && total > 0) {
		qp->batch_err = EINVAL;
		return;
	}
	w->send_flags |= IBV_SEND_INLINE;
	w->num_sge = total > 0 ? 1 : 0;
	if (total > 0)
		w->sg_list[0] = (struct ibv_sge){ .addr = (uintptr_t)dst, .length = (uint32_t)total };
}

static void
wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr, size_t length)
{
	struct ibv_data_buf b = { .addr = addr, .length = length };

	wr_set_inline_data_list(qpx, 1, &b);
}

int
verbs_qp_batch_init(struct verbs_dqp *qp)
{
	struct ibv_qp_ex *x = &qp->qpx;

	qp->batch_max = qp->cap.max_send_wr;
	qp->batch = calloc(qp->batch_max, sizeof(*qp->batch));
	qp->batch_sge = calloc((size_t)qp->batch_max * batch_sge_stride(qp),
			       sizeof(*qp->batch_sge));
	qp->batch_inline = calloc((size_t)qp->batch_max * batch_inline_stride(qp), 1);
	if (qp->batch == NULL || qp->batch_sge == NULL || qp->batch_inline == NULL)
		return ENOMEM;
	x->wr_start = wr_start;
	x->wr_complete = wr_complete;
	x->wr_abort = wr_abort;
	x->wr_send = wr_send;
	x->wr_send_imm = wr_send_imm;
	x->wr_send_inv = wr_send_inv;
	x->wr_local_inv = wr_local_inv;
	x->wr_bind_mw = wr_bind_mw;
	x->wr_rdma_write = wr_rdma_write;
	x->wr_rdma_write_imm = wr_rdma_write_imm;
	x->wr_rdma_read = wr_rdma_read;
	x->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	x->wr_atomic_fetch_add = wr_atomic_fetch_add;
	x->wr_atomic_write = wr_atomic_write;
	x->wr_set_xrc_srqn = wr_set_xrc_srqn;
	x->wr_send_tso = wr_send_tso;
	qp->wr_flush = wr_flush;
	x->wr_set_ud_addr = wr_set_ud_addr;
	x->wr_set_sge = wr_set_sge;
	x->wr_set_sge_list = wr_set_sge_list;
	x->wr_set_inline_data = wr_set_inline_data;
	x->wr_set_inline_data_list = wr_set_inline_data_list;
	return 0;
}
