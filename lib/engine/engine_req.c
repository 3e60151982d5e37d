/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Requester (IB spec 9.7.4-9.7.5): copies send WQEs out of the shared ring, segments each
 * message by path MTU, builds and sends request packets within the PSN window, rewinds on
 * NAKs and timeouts (go-back-N). Runs on the QP's engine.
 */
#include <errno.h>
#include <string.h>

#include "engine_loc.h"

static uint8_t
qp_transport(const struct droce_engine_qp *qp)
{
	return qp->type == DROCE_SHM_QPT_RC ? DROCE_TRANSPORT_RC :
	       qp->type == DROCE_SHM_QPT_UC ? DROCE_TRANSPORT_UC :
	       qp->type == DROCE_SHM_QPT_XRC_SEND ? DROCE_TRANSPORT_XRC : DROCE_TRANSPORT_UD;
}

/* RC and XRC initiators: every operation but IBA 1.5's, which have no XRC opcodes. */
static inline bool
qp_rc_ops(const struct droce_engine_qp *qp)
{
	return qp->type == DROCE_SHM_QPT_RC || qp->type == DROCE_SHM_QPT_XRC_SEND;
}

/*
 * lib/wire's opcode for each kind of request packet the requester sends, looked up in the
 * opcode table once rather than per packet (a scan of up to 32 rows cost the 64-byte
 * message rate 5%): by transport (its top three bits) and REQ_OP_* bits; -1 where table 38
 * has none.
 */
#define REQ_OP_WRITE	0x01u
#define REQ_OP_FIRST	0x02u
#define REQ_OP_LAST	0x04u
#define REQ_OP_IMM	0x08u
#define REQ_OP_INV	0x10u
static int16_t req_ops[8][32];

static void __attribute__((constructor))
req_ops_init(void)
{
	unsigned int t, k;

	for (t = 0; t < 8; t++) {
		for (k = 0; k < 32; k++) {
			bool first = k & REQ_OP_FIRST, last = k & REQ_OP_LAST;
			uint32_t what = ((k & REQ_OP_WRITE) ? DROCE_OPF_WRITE : DROCE_OPF_SEND) |
					(first ? DROCE_OPF_FIRST : 0) | (last ? DROCE_OPF_LAST : 0) |
					(!first && !last ? DROCE_OPF_MIDDLE : 0) |
					((k & REQ_OP_IMM) ? DROCE_OPF_IMM : 0) |
					((k & REQ_OP_INV) ? DROCE_OPF_INV : 0);

			req_ops[t][k] = (int16_t)droce_opcode_find((uint8_t)(t << 5), what);
		}
	}
}

/* Status of a freshly copied WQE: success, or why it must complete in error. */
static uint8_t
req_validate(struct droce_engine_qp *qp, struct engine_swqe *w)
{
	const struct droce_shm_swqe *s = w->wqe;
	uint64_t len = 0;
	uint32_t i;

	switch (s->opcode) {
	case DROCE_SHM_WR_SEND:
	case DROCE_SHM_WR_SEND_WITH_IMM:
		break;
	case DROCE_SHM_WR_SEND_WITH_INV:
		if (qp_rc_ops(qp))
			break;
		return DROCE_SHM_WC_LOC_QP_OP_ERR;
	case DROCE_SHM_WR_RDMA_WRITE:
	case DROCE_SHM_WR_RDMA_WRITE_WITH_IMM:
		/* RDMA WRITE is an RC and UC operation, not UD. */
		if (qp->type != DROCE_SHM_QPT_UD)
			break;
		return DROCE_SHM_WC_LOC_QP_OP_ERR;
	case DROCE_SHM_WR_RDMA_READ:
		/* RC only, into SGEs (libdroce drops INLINE: the buffer is a destination). */
		if (qp_rc_ops(qp) && !(s->flags & DROCE_SHM_SEND_INLINE))
			break;
		return DROCE_SHM_WC_LOC_QP_OP_ERR;
	case DROCE_SHM_WR_ATOMIC_CMP_AND_SWP:
	case DROCE_SHM_WR_ATOMIC_FETCH_AND_ADD:
		/* RC and XRC (IB 9.4.5), its 8-byte original value into the SGEs. */
		if (qp_rc_ops(qp) && !(s->flags & DROCE_SHM_SEND_INLINE))
			break;
		return DROCE_SHM_WC_LOC_QP_OP_ERR;
	case DROCE_SHM_WR_ATOMIC_WRITE:
		/* RC only (IBA 1.5), exactly the 8 bytes it stores: checked below. */
		if (qp->type == DROCE_SHM_QPT_RC)
			break;
		return DROCE_SHM_WC_LOC_QP_OP_ERR;
	case DROCE_SHM_WR_FLUSH:
		/* RC only, no data; a placement type and a selectivity level (FETH). */
		if (qp->type == DROCE_SHM_QPT_RC && s->num_sge == 0 &&
		    !(s->flags & DROCE_SHM_SEND_INLINE) && s->flush.type != 0 &&
		    s->flush.type <= (DROCE_SHM_FLUSH_GLOBAL | DROCE_SHM_FLUSH_PERSISTENT) &&
		    s->flush.level <= DROCE_SHM_FLUSH_MR)
			return DROCE_SHM_WC_SUCCESS;
		return DROCE_SHM_WC_LOC_QP_OP_ERR;
	case DROCE_SHM_WR_BIND_MW:
	case DROCE_SHM_WR_LOCAL_INV:
		/* Executed when the requester reaches them (req_local); no data. */
		if (qp_rc_ops(qp))
			return DROCE_SHM_WC_SUCCESS;
		return DROCE_SHM_WC_LOC_QP_OP_ERR;
	default:
		return DROCE_SHM_WC_LOC_QP_OP_ERR;
	}
	if (s->flags & DROCE_SHM_SEND_INLINE) {
		/* An ATOMIC WRITE's 8 bytes may be inline whatever max_inline (lib/shm). */
		if (s->inline_len > qp->max_inline &&
		    !(s->opcode == DROCE_SHM_WR_ATOMIC_WRITE &&
		      s->inline_len <= qp->sq_stride - sizeof(*s)))
			return DROCE_SHM_WC_LOC_LEN_ERR;
		len = s->inline_len;
	} else {
		const struct droce_shm_sge *sge = (const void *)(s + 1);

		if (s->num_sge > qp->sq_max_sge)
			return DROCE_SHM_WC_LOC_QP_OP_ERR;
		for (i = 0; i < s->num_sge; i++)
			len += sge[i].length;
	}
	if (len > (1ull << 31))
		return DROCE_SHM_WC_LOC_LEN_ERR;
	/*
	 * An atomic's local buffer holds exactly the 64-bit original value (IB 9.4.5); an
	 * ATOMIC WRITE's, the 64 bits it stores.
	 */
	if ((s->opcode == DROCE_SHM_WR_ATOMIC_CMP_AND_SWP ||
	     s->opcode == DROCE_SHM_WR_ATOMIC_FETCH_AND_ADD ||
	     s->opcode == DROCE_SHM_WR_ATOMIC_WRITE) && len != ENGINE_ATOMIC_LEN)
		return DROCE_SHM_WC_LOC_LEN_ERR;
	if (qp->type == DROCE_SHM_QPT_UD) {
		uint32_t ah = s->ud.ah;

		if (ah >= qp->dom->max_ahs ||
		    !atomic_load_explicit(&qp->dom->ahs[ah].valid, memory_order_acquire) ||
		    qp->dom->ahs[ah].pd != qp->pd)
			return DROCE_SHM_WC_LOC_QP_OP_ERR;
	}
	w->len = (uint32_t)len;
	return DROCE_SHM_WC_SUCCESS;
}

/* Copies new WQEs from the send ring; false when the ring indices lie (QP -> ERR). */
static bool
req_fetch(struct droce_engine_qp *qp)
{
	uint32_t prod = __atomic_load_n(&qp->ctl->sq.prod, __ATOMIC_ACQUIRE);
	uint32_t mask = qp->sq_size - 1;

	/* The ring can never hold more than its size of WQEs that are not retired. */
	if (prod - qp->req.cons > qp->sq_size)
		return false;
	for (; qp->req.fetch != prod; qp->req.fetch++) {
		uint32_t i = qp->req.fetch;
		size_t off = (size_t)(i & mask) * qp->sq_stride;
		struct engine_swqe *w = qp_swqe(qp, i);

		/* Copy first, validate the copy: the application may rewrite the slot. */
		memcpy(qp->req.copy + off, qp->sq_ring + off, qp->sq_stride);
		w->wqe = (struct droce_shm_swqe *)(qp->req.copy + off);
		w->len = 0;
		w->rd_got = 0;
		w->wc_opcode = w->wqe->opcode == DROCE_SHM_WR_RDMA_WRITE ||
			       w->wqe->opcode == DROCE_SHM_WR_RDMA_WRITE_WITH_IMM ?
			       DROCE_SHM_WC_RDMA_WRITE :
			       w->wqe->opcode == DROCE_SHM_WR_RDMA_READ ?
			       DROCE_SHM_WC_RDMA_READ :
			       w->wqe->opcode == DROCE_SHM_WR_ATOMIC_CMP_AND_SWP ?
			       DROCE_SHM_WC_COMP_SWAP :
			       w->wqe->opcode == DROCE_SHM_WR_ATOMIC_FETCH_AND_ADD ?
			       DROCE_SHM_WC_FETCH_ADD :
			       w->wqe->opcode == DROCE_SHM_WR_BIND_MW ? DROCE_SHM_WC_BIND_MW :
			       w->wqe->opcode == DROCE_SHM_WR_LOCAL_INV ?
			       DROCE_SHM_WC_LOCAL_INV :
			       w->wqe->opcode == DROCE_SHM_WR_FLUSH ? DROCE_SHM_WC_FLUSH :
			       w->wqe->opcode == DROCE_SHM_WR_ATOMIC_WRITE ?
			       DROCE_SHM_WC_ATOMIC_WRITE : DROCE_SHM_WC_SEND;
		w->local_done = false;
		w->status = req_validate(qp, w);
		w->first_psn = qp->req.next_psn;
		/* A READ takes one PSN per response packet, as a SEND one per packet. */
		if (swqe_local(w))
			w->npkts = 0;
		else if (qp->type == DROCE_SHM_QPT_UD || w->wc_opcode == DROCE_SHM_WC_COMP_SWAP ||
			 w->wc_opcode == DROCE_SHM_WC_FETCH_ADD || swqe_read_ack(w))
			w->npkts = 1;
		else
			w->npkts = w->len == 0 ? 1 : (w->len + qp->mtu - 1) / qp->mtu;
		qp->req.next_psn = droce_psn_add(qp->req.next_psn, w->npkts);
	}
	return true;
}

/* Doorbell: new WQEs in the send ring (or new posts to flush in ERR). */
static void
req_doorbell(struct droce_engine_qp *qp)
{
	if (qp->state == DROCE_SHM_QPS_ERR) {
		qp_flush(qp);
		return;
	}
	if (qp->state != DROCE_SHM_QPS_RTS && qp->state != DROCE_SHM_QPS_SQD)
		return;
	if (!req_fetch(qp)) {
		qp_to_error(qp);
		return;
	}
	if (qp->req.cur != qp->req.fetch && !qp->req.rnr_wait)
		qp_list_add(qp, QP_ON_ACTIVE);
}

void
req_seek(struct droce_engine_qp *qp, uint32_t psn)
{
	uint32_t i;

	for (i = qp->req.cons; i != qp->req.fetch; i++) {
		const struct engine_swqe *w = qp_swqe(qp, i);

		if (droce_psn_dist(w->first_psn, psn) < w->npkts)
			break;
	}
	qp->req.cur = i;
	qp->req.cur_off = i == qp->req.fetch ? 0 :
			  droce_psn_dist(qp_swqe(qp, i)->first_psn, psn) * qp->mtu;
	qp->req.psn = psn;
	qp->req.since_ackreq = 0;
	engine_rtt_void(qp);
	if (qp->req.cur != qp->req.fetch && !qp->req.rnr_wait)
		qp_list_add(qp, QP_ON_ACTIVE);
}

/* Copies len bytes of the message at offset off into dst, through the lkeys. */
static int
req_gather(struct droce_engine_qp *qp, const struct droce_shm_swqe *s, uint32_t off, uint8_t *dst,
	   uint32_t len)
{
	const struct droce_shm_sge *sge = (const void *)(s + 1);
	uint32_t i, base = 0;

	if (s->flags & DROCE_SHM_SEND_INLINE) {
		memcpy(dst, (const uint8_t *)(s + 1) + off, len);
		return 0;
	}
	for (i = 0; i < s->num_sge && len > 0; i++) {
		uint32_t sl = sge[i].length;
		uint32_t in, n;
		const uint8_t *src;

		if (off >= base + sl) {
			base += sl;
			continue;
		}
		in = off - base;
		n = RTE_MIN(sl - in, len);
		src = mr_resolve(qp->dom, sge[i].lkey, qp->pd, 0, sge[i].addr + in, n);
		if (src == NULL)
			return -EACCES;
		memcpy(dst, src, n);
		dst += n;
		off += n;
		len -= n;
		base += sl;
	}
	return len == 0 ? 0 : -EACCES;
}

/* A WQE that cannot be sent: completes in error once every WQE before it has retired. */
static bool
req_fail(struct droce_engine_qp *qp, struct engine_swqe *w, uint8_t status)
{
	w->status = status;
	if (qp->req.cur != qp->req.cons)
		return false;	/* the completer finishes it when the earlier ones retire */
	qp->req.cons++;
	__atomic_store_n(&qp->ctl->sq.cons, qp->req.cons, __ATOMIC_RELEASE);
	qp_send_complete(qp, w, status);
	qp_to_error(qp);
	return true;
}

/* UC and UD WQEs complete when their last packet is out: there is no ACK. */
static void
req_complete_unreliable(struct droce_engine_qp *qp, struct engine_swqe *w)
{
	/* The slot is free before the completion shows (comp_retire). */
	qp->req.cons++;
	__atomic_store_n(&qp->ctl->sq.cons, qp->req.cons, __ATOMIC_RELEASE);
	qp_send_complete(qp, w, DROCE_SHM_WC_SUCCESS);
	qp_sqd_check(qp);
}

/*
 * Sends m, a request packet at qp->req.psn that is the whole of the WQE at cur (a READ,
 * an atomic, a FLUSH or an ATOMIC WRITE request), and moves past that WQE: the next PSN
 * to send is next (a READ spans its response packets' PSNs).
 */
static void
req_emit_whole(struct droce_engine_qp *qp, struct rte_mbuf *m, uint32_t next)
{
	struct droce_engine *e = qp->engine;

	if (unlikely(qp->cc.rp_state.limited))
		cc_sent(qp, m->pkt_len);
	engine_pkt_finish(e, qp, &qp->tmpl, m);
	ENGINE_STAT(e, req_pkts);
	if (droce_psn_lt(qp->req.psn, qp->req.psn_max))
		ENGINE_STAT(e, req_retransmit);
	qp->req.psn = next;
	if (droce_psn_gt(qp->req.psn, qp->req.psn_max))
		qp->req.psn_max = qp->req.psn;
	qp->req.since_ackreq = 0;
	qp->req.cur++;
	qp->req.cur_off = 0;
}

/*
 * Sends the READ request of the WQE at cur for what is not received yet: from cur_off,
 * at the PSN of the first response packet missing (a retried READ resumes there). It
 * spans the PSNs of the responses it asks for. 0, or -EAGAIN (no mbuf).
 */
static int
req_read_packet(struct droce_engine_qp *qp, struct engine_swqe *w)
{
	struct droce_engine *e = qp->engine;
	const struct droce_shm_swqe *s = w->wqe;
	uint32_t off = qp->req.cur_off;
	struct droce_wire_hdrs h;
	struct rte_mbuf *m;

	memset(&h, 0, sizeof(h));
	h.opcode = qp->type == DROCE_SHM_QPT_XRC_SEND ? DROCE_OP_XRC_RDMA_READ_REQUEST :
						      DROCE_OP_RC_RDMA_READ_REQUEST;
	h.xrc_srqn = s->xrc_srqn;
	h.pkey = DROCE_PKEY_DEFAULT;
	h.psn = qp->req.psn;
	h.dqpn = qp->dest_qpn;
	h.reth.va = s->rdma.remote_addr + off;
	h.reth.rkey = s->rdma.rkey;
	h.reth.len = w->len - off;
	if (engine_pkt_start(e, &qp->tmpl, &h, 0, &m) == NULL)
		return -EAGAIN;
	req_emit_whole(qp, m, droce_psn_add(w->first_psn, w->npkts));
	return 0;
}

/*
 * The atomic request of the WQE at cur (IB 9.4.5): one PSN, AtomicETH, AckReq always
 * (the responder answers every atomic). 0, or -EAGAIN (no mbuf).
 */
static int
req_atomic_packet(struct droce_engine_qp *qp, struct engine_swqe *w)
{
	struct droce_engine *e = qp->engine;
	const struct droce_shm_swqe *s = w->wqe;
	bool cas = w->wc_opcode == DROCE_SHM_WC_COMP_SWAP;
	struct droce_wire_hdrs h;
	struct rte_mbuf *m;

	memset(&h, 0, sizeof(h));
	if (qp->type == DROCE_SHM_QPT_XRC_SEND)
		h.opcode = cas ? DROCE_OP_XRC_COMPARE_SWAP : DROCE_OP_XRC_FETCH_ADD;
	else
		h.opcode = cas ? DROCE_OP_RC_COMPARE_SWAP : DROCE_OP_RC_FETCH_ADD;
	h.xrc_srqn = s->xrc_srqn;
	h.pkey = DROCE_PKEY_DEFAULT;
	h.psn = qp->req.psn;
	h.dqpn = qp->dest_qpn;
	h.ackreq = true;
	h.atomic.va = s->atomic.remote_addr;
	h.atomic.rkey = s->atomic.rkey;
	/* Compare and Swap: swap data and compare data; Fetch and Add: the add data. */
	h.atomic.swap_add = cas ? s->atomic.swap : s->atomic.compare_add;
	h.atomic.compare = cas ? s->atomic.compare_add : 0;
	if (engine_pkt_start(e, &qp->tmpl, &h, 0, &m) == NULL)
		return -EAGAIN;
	req_emit_whole(qp, m, droce_psn_add(qp->req.psn, 1));
	return 0;
}

/*
 * The FLUSH or ATOMIC WRITE request of the WQE at cur (IBA 1.5): one PSN, a RETH (FLUSH:
 * and its FETH; ATOMIC WRITE: and its 8 bytes), AckReq always. 0, -EAGAIN (no mbuf) or
 * -EACCES (the ATOMIC WRITE's lkey refused its bytes).
 */
static int
req_read_ack_packet(struct droce_engine_qp *qp, struct engine_swqe *w)
{
	struct droce_engine *e = qp->engine;
	const struct droce_shm_swqe *s = w->wqe;
	bool flush = w->wc_opcode == DROCE_SHM_WC_FLUSH;
	struct droce_wire_hdrs h;
	struct rte_mbuf *m;
	uint8_t *payload;

	memset(&h, 0, sizeof(h));
	h.opcode = flush ? DROCE_OP_RC_FLUSH : DROCE_OP_RC_ATOMIC_WRITE;
	h.pkey = DROCE_PKEY_DEFAULT;
	h.psn = qp->req.psn;
	h.dqpn = qp->dest_qpn;
	h.ackreq = true;
	if (flush) {
		h.reth.va = s->flush.remote_addr;
		h.reth.rkey = s->flush.rkey;
		h.reth.len = s->flush.length;
		h.feth.plt = s->flush.type;
		h.feth.sel = s->flush.level;
	} else {
		h.reth.va = s->rdma.remote_addr;
		h.reth.rkey = s->rdma.rkey;
		h.reth.len = ENGINE_ATOMIC_LEN;
	}
	payload = engine_pkt_start(e, &qp->tmpl, &h, flush ? 0 : ENGINE_ATOMIC_LEN, &m);
	if (payload == NULL)
		return -EAGAIN;
	if (!flush && req_gather(qp, s, 0, payload, ENGINE_ATOMIC_LEN) != 0) {
		rte_pktmbuf_free(m);
		return -EACCES;
	}
	req_emit_whole(qp, m, droce_psn_add(qp->req.psn, 1));
	return 0;
}

/* READs and atomics sent and not retired: those between cons and cur. */
static uint32_t
req_reads_out(const struct droce_engine_qp *qp)
{
	uint32_t i, n = 0;

	for (i = qp->req.cons; i != qp->req.cur; i++)
		n += swqe_rd_atomic(qp_swqe(qp, i));
	return n;
}

/*
 * May the WQE at cur start now? A READ or atomic waits while max_rd_atomic of them are
 * out (at least one may always be), a fenced WQE while any is (IBV_SEND_FENCE). The
 * completer puts the QP back on the active list as WQEs retire.
 */
static bool
req_may_start(const struct droce_engine_qp *qp, const struct engine_swqe *w)
{
	bool read = swqe_rd_atomic(w);
	bool fence = (w->wqe->flags & DROCE_SHM_SEND_FENCE) != 0;
	uint32_t out;

	if (!read && !fence)
		return true;
	out = req_reads_out(qp);
	if (fence && out > 0)
		return false;
	return !read || out < RTE_MAX(qp->attr.max_rd_atomic, 1u);
}

/*
 * The local operation at cur (IB 10.6.7.2, 10.6.7.3): executed once, in send queue order,
 * so the WQEs after it see its effect. It completes with the WQEs before it: at once if
 * every one of them has retired, else when the ACK that retires them comes (comp_retire).
 * False when it failed (the QP goes to ERR once those before it are done).
 */
static bool
req_local(struct droce_engine_qp *qp, struct engine_swqe *w)
{
	if (!w->local_done) {
		uint8_t st = DROCE_SHM_WC_SUCCESS;

		if (w->wc_opcode == DROCE_SHM_WC_BIND_MW)
			st = mw_bind(qp, w->wqe);
		else if (mw_invalidate(qp, w->wqe->imm_data, false) != 0)
			st = DROCE_SHM_WC_LOC_QP_OP_ERR;
		if (st != DROCE_SHM_WC_SUCCESS) {
			req_fail(qp, w, st);
			return false;
		}
		ENGINE_STAT(qp->engine, req_local_ops);
		w->local_done = true;
	}
	qp->req.cur++;
	if (qp->req.cons == qp->req.cur - 1) {
		qp->req.cons++;
		__atomic_store_n(&qp->ctl->sq.cons, qp->req.cons, __ATOMIC_RELEASE);
		qp_send_complete(qp, w, DROCE_SHM_WC_SUCCESS);
		qp_sqd_check(qp);
	}
	return qp->state != DROCE_SHM_QPS_ERR;
}

/* Builds and queues the next packet of the WQE at cur: 0, or -EAGAIN (no mbuf), -EACCES. */
static int
req_packet(struct droce_engine_qp *qp, struct engine_swqe *w)
{
	struct droce_engine *e = qp->engine;
	const struct droce_shm_swqe *s = w->wqe;
	const struct droce_wire_tmpl *tmpl = &qp->tmpl;
	uint32_t off = qp->req.cur_off;
	uint32_t plen = RTE_MIN(qp->mtu, w->len - off);
	bool first = off == 0, last = off + plen == w->len;
	bool write = w->wc_opcode == DROCE_SHM_WC_RDMA_WRITE;
	bool imm = s->opcode == DROCE_SHM_WR_SEND_WITH_IMM ||
		   s->opcode == DROCE_SHM_WR_RDMA_WRITE_WITH_IMM;
	bool inv = s->opcode == DROCE_SHM_WR_SEND_WITH_INV;
	struct droce_wire_hdrs h;
	struct rte_mbuf *m;
	uint8_t *payload;
	int op;

	/*
	 * The opcode from lib/wire's table, as the peer's parser checks it: the operation,
	 * the packet's place in the message, and the immediate or invalidate its last
	 * packet carries (9.2, table 38).
	 */
	op = req_ops[qp_transport(qp) >> 5][(write ? REQ_OP_WRITE : 0) |
					     (first ? REQ_OP_FIRST : 0) |
					     (last ? REQ_OP_LAST : 0) |
					     (last && imm ? REQ_OP_IMM : 0) |
					     (last && inv ? REQ_OP_INV : 0)];
	if (op < 0)
		return -EACCES;	/* req_validate admits no such WQE (INV is RC only) */

	memset(&h, 0, sizeof(h));
	h.opcode = (uint8_t)op;
	h.se = last && (s->flags & DROCE_SHM_SEND_SOLICITED);
	h.pkey = DROCE_PKEY_DEFAULT;
	h.psn = qp->req.psn;
	h.dqpn = qp->dest_qpn;
	h.imm_be = s->imm_data;
	h.ieth_rkey = s->imm_data;
	h.xrc_srqn = s->xrc_srqn;
	/*
	 * The RETH of a WRITE FIRST or ONLY packet names the whole transfer. A resend from
	 * the middle (go-back-N) carries the packet's own MIDDLE/LAST opcode, as rxe's does:
	 * the responder kept the transfer's state when it accepted the earlier PSNs.
	 */
	h.reth.va = s->rdma.remote_addr;
	h.reth.rkey = s->rdma.rkey;
	h.reth.len = w->len;
	if (qp->reliable) {
		/* AckReq on every last packet and often enough in a long message (9.7.5.1.3). */
		h.ackreq = last || ++qp->req.since_ackreq >= ENGINE_ACKREQ_EVERY;
		if (h.ackreq)
			qp->req.since_ackreq = 0;
	}
	if (qp->type == DROCE_SHM_QPT_UD) {
		const struct engine_ah *ah = &qp->dom->ahs[s->ud.ah];

		tmpl = &ah->tmpl;
		h.dqpn = s->ud.remote_qpn & DROCE_QPN_MASK;
		/* C10-15: a Q_Key with the high bit set means the QP's own. */
		h.deth.qkey = (s->ud.remote_qkey & 0x80000000u) ? qp->qkey : s->ud.remote_qkey;
		h.deth.src_qp = qp->qpn;
	}
	payload = engine_pkt_start(e, tmpl, &h, plen, &m);
	if (payload == NULL)
		return -EAGAIN;
	if (plen != 0 && req_gather(qp, s, off, payload, plen) != 0) {
		rte_pktmbuf_free(m);
		return -EACCES;
	}
	if (qp->type == DROCE_SHM_QPT_UD) {
		struct droce_udp_hdr *udp = (struct droce_udp_hdr *)
			(rte_pktmbuf_mtod(m, uint8_t *) + tmpl->l4_off);

		udp->sport = htobe16(droce_wire_udp_sport(qp->qpn, h.dqpn));
	}
	if (unlikely(qp->cc.rp_state.limited))
		cc_sent(qp, m->pkt_len);
	engine_pkt_finish(e, qp, tmpl, m);
	ENGINE_STAT(e, req_pkts);
	if (droce_psn_lt(qp->req.psn, qp->req.psn_max))
		ENGINE_STAT(e, req_retransmit);
	qp->req.psn = droce_psn_add(qp->req.psn, 1);
	if (droce_psn_gt(qp->req.psn, qp->req.psn_max))
		qp->req.psn_max = qp->req.psn;
	qp->req.cur_off += plen;
	if (last) {
		qp->req.cur++;
		qp->req.cur_off = 0;
	}
	return 0;
}

void
req_early_arm(struct droce_engine_qp *qp)
{
	qp->req.early_deadline = engine_early_deadline(qp);
	if (qp->req.early_deadline != 0)
		qp_timer_arm(qp, qp->req.early_deadline);
}

/* Sends up to budget packets of qp; returns how many. */
static unsigned int
req_send(struct droce_engine_qp *qp, unsigned int budget)
{
	struct droce_engine *e = qp->engine;
	unsigned int n = 0;

	if (qp->state != DROCE_SHM_QPS_RTS && qp->state != DROCE_SHM_QPS_SQD)
		return n;
	if (qp->req.kick) {
		/* Moved to RTS by a command (qp_modify_apply): the WQEs posted meanwhile. */
		qp->req.kick = false;
		if (!req_fetch(qp)) {
			qp_to_error(qp);
			return n;
		}
	}
	if (qp->req.rnr_wait)
		return n;
	while (n < budget && qp->req.cur != qp->req.fetch) {
		struct engine_swqe *w = qp_swqe(qp, qp->req.cur);
		int rc;

		if (qp->reliable && droce_psn_dist(qp->req.una, qp->req.psn) >= ENGINE_WINDOW)
			return n;	/* the completer puts it back on the list */
		/* Ahead of its DCQCN rate: the pacer's deadline puts it back (req_timer). */
		if (unlikely(qp->cc.rp_state.limited) && e->now < qp->cc.next_tsc) {
			if (qp->cc.pace_deadline == 0) {
				ENGINE_STAT(e, cc_paced);
				qp->cc.pace_deadline = qp->cc.next_tsc;
				qp_timer_arm(qp, qp->cc.pace_deadline);
			}
			return n;
		}
		/* SQD: no new message starts (11.2.4.2, send queue drain). */
		if (qp->state == DROCE_SHM_QPS_SQD && qp->req.cur_off == 0 &&
		    !droce_psn_lt(w->first_psn, qp->req.psn_max))
			return n;
		if (w->status != DROCE_SHM_WC_SUCCESS) {
			req_fail(qp, w, w->status);
			return n;
		}
		if (qp->req.cur_off == 0 && !req_may_start(qp, w))
			return n;
		if (swqe_local(w)) {
			if (!req_local(qp, w))
				return n;
			continue;
		}
		if (swqe_rd_atomic(w)) {
			rc = w->wc_opcode == DROCE_SHM_WC_RDMA_READ ? req_read_packet(qp, w) :
			     swqe_read_ack(w) ? req_read_ack_packet(qp, w) :
			     req_atomic_packet(qp, w);
			if (rc == -EACCES) {
				req_fail(qp, w, DROCE_SHM_WC_LOC_PROT_ERR);
				return n;
			}
			if (rc != 0)
				break;
			n++;
			engine_rtt_sent(qp);
			if (qp->ack_timeout_tsc != 0 && qp->req.ack_deadline == 0) {
				qp->req.ack_deadline = e->now + qp->ack_timeout_tsc;
				qp_timer_arm(qp, qp->req.ack_deadline);
				req_early_arm(qp);
			}
			continue;
		}
		if (qp->type == DROCE_SHM_QPT_UD && w->len > qp->mtu) {
			/* Too long for one packet: nothing is sent, and the
			 * spec lets it complete successfully (see doc/engine.md). */
			ENGINE_STAT(e, req_ud_too_long);
			qp->req.cur++;
			req_complete_unreliable(qp, w);
			continue;
		}
		rc = req_packet(qp, w);
		if (rc == -EAGAIN)
			break;
		if (rc == -EACCES) {
			req_fail(qp, w, DROCE_SHM_WC_LOC_PROT_ERR);
			return n;
		}
		n++;
		if (!qp->reliable) {
			if (qp->req.cur_off == 0)
				req_complete_unreliable(qp, w);
			continue;
		}
		engine_rtt_sent(qp);
		if (qp->ack_timeout_tsc != 0 && qp->req.ack_deadline == 0) {
			qp->req.ack_deadline = e->now + qp->ack_timeout_tsc;
			qp_timer_arm(qp, qp->req.ack_deadline);
			req_early_arm(qp);
		}
	}
	if (qp->req.cur != qp->req.fetch && qp->state != DROCE_SHM_QPS_ERR)
		qp_list_add(qp, QP_ON_ACTIVE);
	return n;
}

/* Local ACK timer and RNR timer expiry. */
static void
req_timer(struct droce_engine_qp *qp, uint64_t now)
{
	struct droce_engine *e = qp->engine;

	if (qp->cc.pace_deadline != 0 && now >= qp->cc.pace_deadline) {
		qp->cc.pace_deadline = 0;
		if (qp->req.cur != qp->req.fetch && !qp->req.rnr_wait)
			qp_list_add(qp, QP_ON_ACTIVE);
	}
	if (qp->req.rnr_wait && now >= qp->req.rnr_deadline) {
		qp->req.rnr_wait = false;
		if (qp->req.cur != qp->req.fetch)
			qp_list_add(qp, QP_ON_ACTIVE);
	}
	if (qp->req.early_deadline != 0 && now >= qp->req.early_deadline) {
		qp->req.early_deadline = 0;
		/* a few times per una, never while an RNR NAK holds the QP (engine_timer.c) */
		if (qp->req.una != qp->req.psn_max && !qp->req.rnr_wait &&
		    qp->req.early_count < ENGINE_EARLY_MAX) {
			qp->req.early_count++;
			qp->req.early_at = now;
			ENGINE_STAT(e, req_early_retransmit);
			req_seek(qp, qp->req.una);
			req_early_arm(qp);
		}
	}
	if (qp->req.ack_deadline != 0 && now >= qp->req.ack_deadline) {
		if (qp->req.una == qp->req.psn_max) {
			qp->req.ack_deadline = 0;
		} else {
			ENGINE_STAT(e, req_timeout);
			/* 9.7.6.1.3: the retry counter counts timeouts; exhausted -> error. */
			if (qp->req.retry_left == 0) {
				struct engine_swqe *w = qp_swqe(qp, qp->req.cons);

				qp->req.cons++;
				__atomic_store_n(&qp->ctl->sq.cons, qp->req.cons, __ATOMIC_RELEASE);
				qp_send_complete(qp, w, DROCE_SHM_WC_RETRY_EXC_ERR);
				qp_to_error(qp);
				return;
			}
			qp->req.retry_left--;
			/* mlx5's meaning: a timeout that did not end the QP's retries. */
			ENGINE_QP_COUNT(qp, local_ack_timeout_err);
			ENGINE_STAT(e, req_go_back);
			req_seek(qp, qp->req.una);
			qp->req.ack_deadline = now + qp->ack_timeout_tsc;
		}
	}
	if (!qp->req.rnr_wait && qp->req.ack_deadline == 0 && qp->req.early_deadline == 0 &&
	    qp->cc.pace_deadline == 0)
		qp_list_del(qp, QP_ON_TIMER);
}

/* ---- Stages ---- */

/*
 * Doorbells: for each domain with QPs on this engine, the summary word, then each flagged
 * word; every set bit names a QP slot whose new WQEs are copied (req_doorbell).
 */
unsigned int
req_stage_doorbells(struct droce_engine *e)
{
	unsigned int work = 0;
	uint32_t d;

	for (d = 0; d < e->nb_doms; d++) {
		struct droce_engine_domain *dom = e->doms[d];
		struct droce_shm_doorbell *db = dom->db[e->id];
		uint64_t summary;

		if (__atomic_load_n(&db->summary, __ATOMIC_RELAXED) == 0)
			continue;
		summary = __atomic_exchange_n(&db->summary, 0, __ATOMIC_ACQUIRE);
		while (summary != 0) {
			unsigned int w = __builtin_ctzll(summary);
			uint64_t bits;

			summary &= summary - 1;
			if (w >= DROCE_SHM_DB_WORDS)
				break;
			bits = __atomic_exchange_n(&db->words[w], 0, __ATOMIC_ACQUIRE);
			while (bits != 0) {
				unsigned int slot = w * 64 + __builtin_ctzll(bits);
				struct droce_engine_qp *qp = __atomic_load_n(&dom->db_qp[e->id][slot],
								      __ATOMIC_ACQUIRE);

				bits &= bits - 1;
				/* A bit for an empty slot is the application's business: ignore it. */
				if (qp != NULL && qp->engine == e) {
					req_doorbell(qp);
					work++;
				}
			}
		}
	}
	return work;
}

/* The requester: round robin over QPs with packets to send. */
unsigned int
req_stage_send(struct droce_engine *e)
{
	struct engine_qp_list_head turn = TAILQ_HEAD_INITIALIZER(turn);
	unsigned int sent = 0;
	struct droce_engine_qp *qp;

	/*
	 * Each QP on the list now gets one quantum: the list is taken whole, and a QP with
	 * more to send puts itself back on e->active for the next pass. QPs waiting in turn
	 * keep QP_ON_ACTIVE, so nothing adds them twice.
	 */
	TAILQ_CONCAT(&turn, &e->active, active_link);
	while ((qp = TAILQ_FIRST(&turn)) != NULL) {
		unsigned int room = engine_tx_room(e);

		if (room == 0) {
			/* No room: the rest keep their place, ahead of any re-added QP. */
			TAILQ_CONCAT(&turn, &e->active, active_link);
			TAILQ_CONCAT(&e->active, &turn, active_link);
			break;
		}
		TAILQ_REMOVE(&turn, qp, active_link);
		qp->lists &= ~QP_ON_ACTIVE;
		sent += req_send(qp, RTE_MIN(room, (unsigned int)ENGINE_REQ_QUANTUM));
	}
	return sent;
}

/* Local ACK and RNR timers, scanned only when the earliest deadline may have passed. */
void
req_stage_timers(struct droce_engine *e)
{
	struct droce_engine_qp *qp, *tmp;
	uint64_t next = UINT64_MAX;

	if (!engine_timers_due(e))
		return;
	for (qp = TAILQ_FIRST(&e->timers); qp != NULL; qp = tmp) {
		tmp = TAILQ_NEXT(qp, timer_link);
		req_timer(qp, e->now);
		next = engine_timer_earliest(qp, next);
	}
	e->timer_next = next;
}
