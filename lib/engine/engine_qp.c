/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * QP state machine, applied on the owning engine: RESET -> INIT -> RTR -> RTS, SQD, ERR
 * (IB spec 10.3.1, 11.2.4.2), the engine's lists a QP sits on, and completion of send WQEs.
 */
#include <errno.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "engine_loc.h"

/* ---- Engine lists ---- */

void
qp_list_add(struct droce_engine_qp *qp, enum engine_qp_list which)
{
	struct droce_engine *e = qp->engine;

	if (qp->lists & which)
		return;
	qp->lists |= which;
	switch (which) {
	case QP_ON_ACTIVE:
		TAILQ_INSERT_TAIL(&e->active, qp, active_link);
		break;
	case QP_ON_READ:
		TAILQ_INSERT_TAIL(&e->reads, qp, read_link);
		break;
	case QP_ON_TIMER:
		TAILQ_INSERT_TAIL(&e->timers, qp, timer_link);
		atomic_store_explicit(&e->nb_timer_qps,
				      atomic_load_explicit(&e->nb_timer_qps, memory_order_relaxed) + 1,
				      memory_order_relaxed);
		break;
	case QP_ON_ACK:
		TAILQ_INSERT_TAIL(&e->acks, qp, ack_link);
		break;
	case QP_ON_ERR:
		TAILQ_INSERT_TAIL(&e->errs, qp, err_link);
		break;
	}
}

void
qp_list_del(struct droce_engine_qp *qp, enum engine_qp_list which)
{
	struct droce_engine *e = qp->engine;
	uint32_t on = qp->lists & which;

	if (on & QP_ON_ACTIVE)
		TAILQ_REMOVE(&e->active, qp, active_link);
	if (on & QP_ON_READ)
		TAILQ_REMOVE(&e->reads, qp, read_link);
	if (on & QP_ON_TIMER) {
		TAILQ_REMOVE(&e->timers, qp, timer_link);
		atomic_store_explicit(&e->nb_timer_qps,
				      atomic_load_explicit(&e->nb_timer_qps, memory_order_relaxed) - 1,
				      memory_order_relaxed);
	}
	if (on & QP_ON_ACK)
		TAILQ_REMOVE(&e->acks, qp, ack_link);
	if (on & QP_ON_ERR)
		TAILQ_REMOVE(&e->errs, qp, err_link);
	qp->lists &= ~on;
}

void
qp_timer_arm(struct droce_engine_qp *qp, uint64_t deadline)
{
	struct droce_engine *e = qp->engine;

	qp_list_add(qp, QP_ON_TIMER);
	if (deadline < e->timer_next)
		e->timer_next = deadline;
}

static void
qp_publish_state(struct droce_engine_qp *qp, uint8_t state)
{
	qp->state = state;
	/* The engine is the only writer; libdroce reads it with acquire. */
	__atomic_store_n(&qp->ctl->state, state, __ATOMIC_RELEASE);
}

/* ---- Completions ---- */

/* A failed send completion's counters, by its status (mlx5's extended error counters). */
static void
qp_count_send_error(struct droce_engine_qp *qp, uint8_t status)
{
	if (status == DROCE_SHM_WC_WR_FLUSH_ERR) {
		ENGINE_QP_COUNT(qp, req_cqe_flush_error);
		return;
	}
	ENGINE_QP_COUNT(qp, req_cqe_error);
	if (status == DROCE_SHM_WC_RETRY_EXC_ERR)
		ENGINE_QP_COUNT(qp, req_transport_retries_exceeded);
	else if (status == DROCE_SHM_WC_RNR_RETRY_EXC_ERR)
		ENGINE_QP_COUNT(qp, req_rnr_retries_exceeded);
	else if (status == DROCE_SHM_WC_REM_ACCESS_ERR)
		ENGINE_QP_COUNT(qp, req_remote_access_errors);
	else if (status == DROCE_SHM_WC_REM_INV_REQ_ERR)
		ENGINE_QP_COUNT(qp, req_remote_invalid_request);
}

void
qp_send_complete(struct droce_engine_qp *qp, struct engine_swqe *w, uint8_t status)
{
	struct engine_wc wc;

	/* Unsignaled WQEs complete silently unless they fail (IB 10.8.3.1). */
	if (status == DROCE_SHM_WC_SUCCESS && !qp->sq_sig_all &&
	    !(w->wqe->flags & DROCE_SHM_SEND_SIGNALED))
		return;
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = w->wqe->wr_id;
	wc.status = status;
	wc.qp_num = qp->qpn;
	if (status == DROCE_SHM_WC_SUCCESS) {
		wc.opcode = w->wc_opcode;
		wc.byte_len = w->len;
	}
	if (status != DROCE_SHM_WC_SUCCESS)
		qp_count_send_error(qp, status);
	if (!engine_cqe_write(qp->engine, qp->scq, &wc))
		qp_to_error(qp);
}

/* ---- Send queue drain ---- */

void
qp_sqd_check(struct droce_engine_qp *qp)
{
	/*
	 * SQD is drained once no message that was started is unfinished: none half sent and,
	 * on RC, none unacknowledged (UC and UD retire a message as its last packet goes out).
	 * An empty send queue is drained at once (10.3.1).
	 */
	if (qp->state != DROCE_SHM_QPS_SQD || qp->req.drained || qp->req.cur_off != 0 ||
	    qp->req.cur != qp->req.cons ||
	    (qp->reliable && qp->req.una != qp->req.psn_max))
		return;
	qp->req.drained = true;
	if (qp->attr.en_sqd_async_notify)
		engine_event(qp->dom, DROCE_ENGINE_EVENT_SQ_DRAINED, qp->qpn);
}

/* ---- Error state ---- */

/*
 * Flushes the send ring: the private copies first, then whatever is still in the ring.
 * Slots are given back (cons stored) before their completions are written, so that an
 * application that polls a completion may post into its slot at once; the wr_ids of
 * slots still in the ring are read first, in chunks, since the slot is reused after.
 */
static void
qp_flush_send(struct droce_engine_qp *qp)
{
	uint64_t wr_id[ENGINE_BURST];
	uint32_t prod, n;

	prod = __atomic_load_n(&qp->ctl->sq.prod, __ATOMIC_ACQUIRE);
	/* A producer index more than a ring ahead is a lie: flush only what we hold. */
	if (prod - qp->req.cons > qp->sq_size)
		prod = qp->req.fetch;
	while (qp->req.cons != prod) {
		for (n = 0; n < ENGINE_BURST && qp->req.cons + n != prod; n++) {
			uint32_t k = qp->req.cons + n;

			if (k - qp->req.fetch < prod - qp->req.fetch)	/* k >= fetch */
				wr_id[n] = ((const struct droce_shm_swqe *)(qp->sq_ring +
					(size_t)(k & (qp->sq_size - 1)) * qp->sq_stride))->wr_id;
			else
				wr_id[n] = qp_swqe(qp, k)->wqe->wr_id;
		}
		qp->req.cons += n;
		if (qp->req.cons - qp->req.fetch <= prod - qp->req.fetch)
			qp->req.fetch = qp->req.cons;
		__atomic_store_n(&qp->ctl->sq.cons, qp->req.cons, __ATOMIC_RELEASE);
		engine_cqe_flush(qp, true, wr_id, n);
	}
	qp->req.fetch = qp->req.cur = prod;
	qp->req.cur_off = 0;
}

/*
 * n more receive-ring entries have their completions written (in the ring's order: a QP
 * completes its receives in the order they were posted). Published for libdroce's flush
 * should droced die (droce_shm.h); SRQ entries are the SRQ's, not counted here.
 */
void
qp_rq_done(struct droce_engine_qp *qp, uint32_t n)
{
	if (qp->srq != NULL)
		return;
	qp->resp.rq_done += n;
	__atomic_store_n(&qp->ctl->rq_done, qp->resp.rq_done, __ATOMIC_RELEASE);
}

/* The receive ring's half of qp_flush(). */
static void
qp_flush_recv(struct droce_engine_qp *qp)
{
	uint64_t wr_id[ENGINE_BURST];
	uint32_t prod, n;

	if (qp->resp.have_wqe) {
		qp->resp.have_wqe = false;
		engine_cqe_flush(qp, false, &qp->resp.wqe.wr_id, 1);
		qp_rq_done(qp, 1);
	}
	if (qp->srq != NULL || qp->rq_ring == NULL)
		return;		/* SRQ WQEs belong to the SRQ, not to this QP; XRC: no RQ */
	prod = __atomic_load_n(&qp->ctl->rq.prod, __ATOMIC_ACQUIRE);
	if (prod - qp->resp.rq_cons > qp->rq_size)
		prod = qp->resp.rq_cons;	/* a lie: flush nothing */
	/* As for the send ring: wr_ids read, slots given back, then the completions. */
	while (qp->resp.rq_cons != prod) {
		for (n = 0; n < ENGINE_BURST && qp->resp.rq_cons + n != prod; n++)
			wr_id[n] = ((const struct droce_shm_rwqe *)(qp->rq_ring +
				(size_t)((qp->resp.rq_cons + n) & (qp->rq_size - 1)) *
				qp->rq_stride))->wr_id;
		qp->resp.rq_cons += n;
		__atomic_store_n(&qp->ctl->rq.cons, qp->resp.rq_cons, __ATOMIC_RELEASE);
		engine_cqe_flush(qp, false, wr_id, n);
		qp_rq_done(qp, n);
	}
}

void
qp_flush(struct droce_engine_qp *qp)
{
	qp_flush_send(qp);
	qp_flush_recv(qp);
}

/* QPs in ERR: anything posted since is flushed at once (11.6.3: WRs posted in ERR). */
void
qp_stage_errors(struct droce_engine *e)
{
	struct droce_engine_qp *qp;

	TAILQ_FOREACH(qp, &e->errs, err_link)
		qp_flush(qp);
}

void
qp_to_error(struct droce_engine_qp *qp)
{
	if (qp->state == DROCE_SHM_QPS_ERR)
		return;
	qp_publish_state(qp, DROCE_SHM_QPS_ERR);
	ENGINE_STAT(qp->engine, qp_error);
	/* Where it stood when it failed: the responder's state, the requester's place. */
	ENGINE_LOG(DEBUG, "QP %u to ERR: responder %s%s (last step %s), PSN %u expected; "
		   "requester at PSN %u, oldest unacknowledged %u, %u WQEs not retired\n",
		   qp->qpn, resp_state_name(qp->resp.state),
		   qp->resp.have_wqe ? " (receive WQE held)" : "", resp_step_name(qp->resp.step),
		   qp->resp.epsn, qp->req.psn, qp->req.una, qp->req.fetch - qp->req.cons);
	qp_list_del(qp, QP_ON_ACTIVE | QP_ON_READ | QP_ON_TIMER | QP_ON_ACK);
	qp->req.ack_deadline = qp->req.early_deadline = 0;
	qp->req.rnr_wait = false;
	qp_list_add(qp, QP_ON_ERR);
	qp_flush(qp);
	/* 11.6.3.5: a QP on an SRQ tells the application when it took its last WQE. */
	if (qp->srq != NULL)
		engine_event(qp->dom, DROCE_ENGINE_EVENT_QP_LAST_WQE_REACHED, qp->qpn);
}

/* ---- Modify ---- */

/* Modify to RESET discards every WQE without a completion (11.2.4.2). */
static void
qp_reset(struct droce_engine_qp *qp)
{
	uint32_t sq_prod = __atomic_load_n(&qp->ctl->sq.prod, __ATOMIC_ACQUIRE);
	uint32_t rq_prod = __atomic_load_n(&qp->ctl->rq.prod, __ATOMIC_ACQUIRE);

	qp_list_del(qp, QP_ON_ACTIVE | QP_ON_READ | QP_ON_TIMER | QP_ON_ACK | QP_ON_ERR);
	qp->req.fetch = qp->req.cons = qp->req.cur = sq_prod;
	qp->req.cur_off = 0;
	qp->req.psn = qp->req.psn_max = qp->req.una = qp->req.next_psn = 0;
	qp->req.ack_deadline = qp->req.rnr_deadline = qp->req.early_deadline = 0;
	qp->req.rtt_sent = qp->req.srtt = qp->req.rttvar = 0;
	qp->req.early_count = qp->req.early_shift = 0;
	qp->req.early_at = 0;
	qp->req.rnr_wait = false;
	qp->req.kick = false;
	qp->req.rd_resume = false;
	qp->req.drained = false;
	qp->req.since_ackreq = 0;
	qp->req.comp_failed_in = 0;
	/* No path, so no rate: the next RTR's path starts unlimited (its counters stay). */
	qp->cc.rp = false;
	cc_qp_restart(qp);
	__atomic_store_n(&qp->ctl->sq.cons, sq_prod, __ATOMIC_RELEASE);
	memset(&qp->resp, 0, sizeof(qp->resp));
	if (qp->srq == NULL) {
		qp->resp.rq_cons = qp->resp.rq_done = rq_prod;
		__atomic_store_n(&qp->ctl->rq.cons, rq_prod, __ATOMIC_RELEASE);
		__atomic_store_n(&qp->ctl->rq_done, rq_prod, __ATOMIC_RELEASE);
	}
	memset(&qp->attr, 0, sizeof(qp->attr));
	qp->mtu = 0;
	qp->dest_qpn = 0;
	qp->qkey = 0;
	qp->ack_timeout_tsc = 0;
}

int
qp_modify_apply(struct droce_engine_qp *qp, const struct droce_shm_qp_attr *attr,
		const struct droce_wire_addr *addr)
{
	struct droce_engine *e = qp->engine;
	struct droce_shm_qp_limits lim = {
		.max_rd_atomic = DROCE_ENGINE_MAX_INIT_RD_ATOMIC,
		.max_dest_rd_atomic = DROCE_ENGINE_MAX_DEST_RD_ATOMIC,
		.phys_port_cnt = 1,
		.pkey_tbl_len = 1,
		.gid_tbl_len = (uint16_t)e->nb_gids,
	};
	uint32_t m = attr->mask;
	uint8_t next;
	int rc;

	rc = droce_shm_qp_attr_check(qp->type, qp->state, attr, &lim);
	if (rc != 0)
		return rc;
	next = droce_shm_qp_attr_next(qp->state, attr);
	if (next == DROCE_SHM_QPS_RESET) {
		qp_reset(qp);
		qp_publish_state(qp, next);
		return 0;
	}
	if (next == DROCE_SHM_QPS_ERR) {
		qp_to_error(qp);
		return 0;
	}
	if (m & DROCE_SHM_QP_AV) {
		struct droce_wire_addr a = *addr;
		uint32_t dqpn = (m & DROCE_SHM_QP_DEST_QPN) ? attr->dest_qp_num : qp->dest_qpn;

		/* The Linux flow-label rule for the UDP source port (A17.2.1 leaves it open). */
		a.udp_sport = droce_wire_udp_sport(qp->qpn, dqpn);
		if (droce_wire_tmpl_init(&qp->tmpl, &a) != 0 || cc_qp_path(qp, &a, attr->ah.sl) != 0)
			return -EINVAL;
		qp->attr.ah = attr->ah;
	}
	if (m & DROCE_SHM_QP_DEST_QPN) {
		qp->dest_qpn = attr->dest_qp_num;
		qp->attr.dest_qp_num = attr->dest_qp_num;
	}
	if (m & DROCE_SHM_QP_PATH_MTU) {
		qp->mtu = 128u << attr->path_mtu;
		qp->attr.path_mtu = attr->path_mtu;
	}
	if (m & DROCE_SHM_QP_QKEY) {
		qp->qkey = attr->qkey;
		qp->attr.qkey = attr->qkey;
	}
	if (m & DROCE_SHM_QP_RQ_PSN) {
		qp->resp.epsn = attr->rq_psn;
		qp->attr.rq_psn = attr->rq_psn;
	}
	if (m & DROCE_SHM_QP_SQ_PSN) {
		qp->req.psn = qp->req.psn_max = qp->req.una = qp->req.next_psn = attr->sq_psn;
		qp->attr.sq_psn = attr->sq_psn;
	}
	if (m & DROCE_SHM_QP_TIMEOUT) {
		qp->ack_timeout_tsc = engine_ack_timeout_tsc(e, attr->timeout);
		qp->attr.timeout = attr->timeout;
	}
	if (m & DROCE_SHM_QP_RETRY_CNT) {
		qp->attr.retry_cnt = attr->retry_cnt;
		qp->req.retry_left = attr->retry_cnt;
	}
	if (m & DROCE_SHM_QP_RNR_RETRY) {
		qp->attr.rnr_retry = attr->rnr_retry;
		qp->req.rnr_left = attr->rnr_retry;
	}
	if (m & DROCE_SHM_QP_MIN_RNR_TIMER)
		qp->attr.min_rnr_timer = attr->min_rnr_timer;
	if (m & DROCE_SHM_QP_ACCESS_FLAGS)
		qp->attr.qp_access_flags = attr->qp_access_flags;
	if (m & DROCE_SHM_QP_PKEY_INDEX)
		qp->attr.pkey_index = attr->pkey_index;
	if (m & DROCE_SHM_QP_PORT)
		qp->attr.port_num = attr->port_num;
	if (m & DROCE_SHM_QP_MAX_QP_RD_ATOMIC)
		qp->attr.max_rd_atomic = attr->max_rd_atomic;
	if (m & DROCE_SHM_QP_MAX_DEST_RD_ATOMIC)
		qp->attr.max_dest_rd_atomic = attr->max_dest_rd_atomic;
	/* The drain event is asked for by each move into SQD (11.2.4.2), not remembered. */
	if (next == DROCE_SHM_QPS_SQD && qp->state != DROCE_SHM_QPS_SQD)
		qp->attr.en_sqd_async_notify = (m & DROCE_SHM_QP_EN_SQD_ASYNC_NOTIFY) ?
					       attr->en_sqd_async_notify : 0;
	if (qp->type == DROCE_SHM_QPT_UD && qp->mtu == 0)
		qp->mtu = DROCE_WIRE_MAX_PAYLOAD;	/* UD: the port MTU */
	/* One drain per move into SQD: SQD -> SQD does not start another. */
	if (next == DROCE_SHM_QPS_SQD && qp->state != DROCE_SHM_QPS_SQD)
		qp->req.drained = false;
	qp_publish_state(qp, next);
	/*
	 * Leaving SQD (or entering RTS) may let queued WQEs go: the requester fetches what was
	 * posted meanwhile (req.kick) in this pass's requester stage.
	 */
	if (next == DROCE_SHM_QPS_RTS) {
		uint32_t prod = __atomic_load_n(&qp->ctl->sq.prod, __ATOMIC_ACQUIRE);

		qp->req.kick = true;
		if ((prod != qp->req.fetch || qp->req.cur != qp->req.fetch) && !qp->req.rnr_wait)
			qp_list_add(qp, QP_ON_ACTIVE);
	}
	/* Nothing in flight: drained now, no ACK or packet will come to say so. */
	if (next == DROCE_SHM_QPS_SQD)
		qp_sqd_check(qp);
	return 0;
}
