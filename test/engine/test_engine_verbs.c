/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The verbs contracts of the engine, end to end between two hosts joined by net_ring:
 * ibv_modify_qp's state machine and attribute rules for RC, UC and UD on live QPs
 * (IB 10.3.1, 11.2.4.2), post lists that stop at a bad WR, the error state's flush and
 * the reset's discard, completion notification (solicited-only included), CQ overrun and
 * the send queue drain (SQD).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_common.h>

#include "droce_test.h"
#include "engine_client.h"

/*
 * Every case opens the same pair: the EAL's lcores are fixed by the first open of the
 * process. Host b has two engines, so a QP can sit where packets arrive only by steering.
 */
#define ENG_A		1
#define ENG_B		2

#define QKEY		0x11111111u
#define QKEY2		0x22222222u
#define SQ_SIZE		64
#define RQ_SIZE		64
#define MAX_SGE		2
#define MAX_INLINE	64
#define CQ_SIZE		1024
#define SLOT		4096		/* MR bytes per message */
#define MR_LEN		(64u * SLOT)
#define RX_SLOTS	8		/* receive slots, reused in turn */
#define GRH_LEN		40		/* UD receive buffers start with the GRH area */
#define WAIT_MS		5000		/* for what must happen */
#define QUIET_MS	50		/* watched for what must not happen */
#define US_PER_MS	1000
#define US_PER_S	1000000
#define NS_PER_US	1000
#define LIST_LEN	6
#define BAD_AT		3		/* the bad WR of a list: 3 good before it, 2 after */
#define DEAD_AH		1000		/* an AH number the client never created */
#define BAD_OPCODE	42		/* outside enum ibv_wr_opcode */
#define PSN_A		0xFFFFC0u	/* x's sends cross the 24-bit wrap */
#define PSN_B		0x000123u
#define HOP_LIMIT	17
#define TCLASS		0x20
#define FLOW_LABEL	0x12345u
/* Attribute values one past what the wire or the device allows. */
#define BAD_MTU		6
#define BAD_TIMER	32
#define BAD_RETRY	8
#define BAD_PSN		(1u << 24)
#define BAD_FLOW	(1u << 20)
#define BAD_DEST_RD_ATOMIC	17	/* the responder keeps 16 */
#define BAD_RD_ATOMIC	129		/* a requester keeps 128 out */
#define BAD_SGID	2		/* the GID table has 2 entries */
#define BAD_ACCESS	(1u << 4)	/* IBV_ACCESS_MW_BIND: not a QP access flag */
/* Mask bits rdma-core reserves (21..24) or does not define (26..31). */
#define RESERVED_BIT	(1u << 21)
#define UNKNOWN_BIT	(1u << 31)

/* One side of a connection: its QP, CQs, memory and (UD) the AH to the other side. */
struct end {
	struct tc_host *h;
	struct tc_qp *qp;
	struct tc_cq *scq, *rcq;
	struct tc_srq *srq;
	struct tc_mr *mr;
	struct ibv_ah ah;
};

static const struct tc_path path_std = {
	/* 1 s: no spurious retransmission on a loaded machine */
	.mtu = IBV_MTU_1024, .timeout = 18, .retry_cnt = 7, .rnr_retry = 7,
	.min_rnr_timer = 14, .psn_a = PSN_A, .psn_b = PSN_B,
};

static const char *
type_name(uint8_t type)
{
	return type == DROCE_SHM_QPT_RC ? "RC" : type == DROCE_SHM_QPT_UC ? "UC" : "UD";
}

static void
pair_open(struct tc_host *a, struct tc_host *b)
{
	tc_pair_open(a, b, ENG_A, ENG_B);
}

static void
end_make_on(struct end *x, struct tc_host *h, uint8_t type, unsigned int engine,
	    struct tc_cq *scq, struct tc_cq *rcq, struct tc_srq *srq, uint32_t sq_size)
{
	struct tc_qp_init in = {
		.type = type, .engine = engine, .scq = scq, .rcq = rcq, .srq = srq,
		.sq_size = sq_size, .rq_size = RQ_SIZE, .max_sge = MAX_SGE,
		.max_inline = MAX_INLINE,
	};

	memset(x, 0, sizeof(*x));
	x->h = h;
	x->scq = scq;
	x->rcq = rcq;
	x->srq = srq;
	x->qp = tc_qp_create(h, &in);
	x->mr = tc_mr_reg(h, MR_LEN, IBV_ACCESS_LOCAL_WRITE);
}

/* A QP with its own send and receive CQs. */
static void
end_make(struct end *x, struct tc_host *h, uint8_t type, uint32_t sq_size)
{
	end_make_on(x, h, type, 0, tc_cq_create(h, CQ_SIZE), tc_cq_create(h, CQ_SIZE), NULL,
		    sq_size);
}

/* RC/UC: connected both ways; UD: ready, with an AH to the other side each. */
static void
end_link(struct end *x, struct end *y, const struct tc_path *p)
{
	uint32_t ahn;

	if (x->qp->view.qp_type != DROCE_SHM_QPT_UD) {
		tc_connect(x->qp, y->qp, p);
		return;
	}
	tc_ud_ready(x->qp, QKEY, p->psn_a);
	tc_ud_ready(y->qp, QKEY, p->psn_b);
	CHECK_EQ_I64(tc_ah_create(x->h, x->qp->engine, y->h, p->ipv6, &ahn), 0);
	x->ah.handle = ahn;
	CHECK_EQ_I64(tc_ah_create(y->h, y->qp->engine, x->h, p->ipv6, &ahn), 0);
	y->ah.handle = ahn;
}

/* ---- Data and work requests ---- */

static uint8_t *
slot_ptr(const struct end *x, uint32_t slot)
{
	return x->mr->buf + (size_t)slot * SLOT;
}

/* Different bytes for every (seed, offset). */
static void
fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	uint32_t i;

	for (i = 0; i < len; i++) {
		uint32_t v = seed * 0x9E3779B1u ^ i * 0x85EBCA77u;

		p[i] = (uint8_t)(v ^ (v >> 13) ^ (v >> 24));
	}
}

/* A signaled-or-not SEND of len bytes from x's slot, addressed to y (UD). */
static void
send_wr_init(struct ibv_send_wr *wr, struct ibv_sge *sge, struct end *x, const struct end *y,
	     uint64_t wr_id, uint32_t slot, uint32_t len, unsigned int flags)
{
	memset(wr, 0, sizeof(*wr));
	sge->addr = (uintptr_t)slot_ptr(x, slot);
	sge->length = len;
	sge->lkey = x->mr->lkey;
	wr->wr_id = wr_id;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->opcode = IBV_WR_SEND;
	wr->send_flags = flags;
	if (x->qp->view.qp_type == DROCE_SHM_QPT_UD) {
		wr->wr.ud.ah = &x->ah;
		wr->wr.ud.remote_qpn = y->qp->qpn;
		wr->wr.ud.remote_qkey = QKEY;
	}
}

static int
post_send1(struct end *x, const struct end *y, uint64_t wr_id, uint32_t slot, uint32_t len,
	   unsigned int flags)
{
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge sge;

	send_wr_init(&wr, &sge, x, y, wr_id, slot, len, flags);
	return tc_post_send(x->qp, &wr, &bad);
}

/* A receive of a whole slot, into the QP's RQ or its SRQ. */
static int
post_recv1(struct end *y, uint64_t wr_id, uint32_t slot)
{
	if (y->srq != NULL)
		return tc_srq_recv(y->srq, wr_id, y->mr, (uint64_t)slot * SLOT, SLOT);
	return tc_recv(y->qp, wr_id, y->mr, (uint64_t)slot * SLOT, SLOT);
}

/* ---- Completions ---- */

static void
wait_wc(struct tc_cq *cq, struct ibv_wc *wc)
{
	CHECK_EQ_I64(tc_wait(cq, 1, wc, WAIT_MS), 1);
}

static void
check_send_wc(const struct ibv_wc *wc, uint64_t wr_id, const struct end *x)
{
	CHECK_EQ_U64(wc->wr_id, wr_id);
	CHECK_EQ_U64(wc->status, IBV_WC_SUCCESS);
	CHECK_EQ_U64(wc->opcode, IBV_WC_SEND);
	CHECK_EQ_U64(wc->qp_num, x->qp->qpn);
}

/* y received len bytes of x's slot sslot in its own slot rslot. */
static void
check_recv_wc(const struct ibv_wc *wc, uint64_t wr_id, const struct end *y, const struct end *x,
	      uint32_t rslot, uint32_t sslot, uint32_t len)
{
	bool ud = y->qp->view.qp_type == DROCE_SHM_QPT_UD;
	uint32_t grh = ud ? GRH_LEN : 0;

	CHECK_EQ_U64(wc->wr_id, wr_id);
	CHECK_EQ_U64(wc->status, IBV_WC_SUCCESS);
	CHECK_EQ_U64(wc->opcode, IBV_WC_RECV);
	CHECK_EQ_U64(wc->byte_len, len + grh);
	CHECK_EQ_U64(wc->qp_num, y->qp->qpn);
	CHECK_EQ_U64(wc->src_qp, x->qp->qpn);
	CHECK_EQ_U64(wc->wc_flags, ud ? IBV_WC_GRH : 0);
	CHECK_MEM(slot_ptr(y, rslot) + grh, slot_ptr(x, sslot), len);
}

/* On a flushed WR only wr_id, status, qp_num and vendor_err are defined (11.4.2.1). */
static void
check_flush_wc(const struct ibv_wc *wc, uint64_t wr_id, const struct tc_qp *qp)
{
	CHECK_EQ_U64(wc->wr_id, wr_id);
	CHECK_EQ_U64(wc->status, IBV_WC_WR_FLUSH_ERR);
	CHECK_EQ_U64(wc->qp_num, qp->qpn);
	CHECK_EQ_U64(wc->vendor_err, 0);
}

static void
quiet(void)
{
	usleep(QUIET_MS * US_PER_MS);
}

static void
check_empty(struct tc_cq *cq)
{
	struct ibv_wc wc;

	CHECK_EQ_I64(tc_poll(cq, 1, &wc), 0);
}

/* One message x -> y, received in y's slot 0: both completions and the bytes. */
static void
exchange(struct end *x, struct end *y, uint64_t wr_id, uint32_t len)
{
	struct ibv_wc wc;

	fill(slot_ptr(x, 0), len, (uint32_t)wr_id);
	CHECK_EQ_I64(post_recv1(y, wr_id, 0), 0);
	CHECK_EQ_I64(post_send1(x, y, wr_id, 0, len, IBV_SEND_SIGNALED), 0);
	wait_wc(y->rcq, &wc);
	check_recv_wc(&wc, wr_id, y, x, 0, 0, len);
	wait_wc(x->scq, &wc);
	check_send_wc(&wc, wr_id, x);
}

/* Traffic of the modify and flush checks: 3 packets at MTU 1024, one (UD's limit) for UD. */
static uint32_t
one_pkt_len(uint8_t type)
{
	return type == DROCE_SHM_QPT_UD ? 1000 : 3000;
}

/* ---- Modify helpers ---- */

static struct droce_shm_qp_attr
attr_state(uint8_t state)
{
	struct droce_shm_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.mask = DROCE_SHM_QP_STATE;
	a.qp_state = state;
	return a;
}

static struct droce_shm_qp_attr
attr_init(uint8_t type)
{
	struct droce_shm_qp_attr a = attr_state(DROCE_SHM_QPS_INIT);

	a.mask |= DROCE_SHM_QP_PKEY_INDEX | DROCE_SHM_QP_PORT;
	a.mask |= type == DROCE_SHM_QPT_UD ? DROCE_SHM_QP_QKEY : DROCE_SHM_QP_ACCESS_FLAGS;
	a.port_num = 1;
	a.qkey = QKEY;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE;
	return a;
}

/* The path to host to: IPv4 GIDs for RC, IPv6 for UC, so both GID types are used. */
static void
attr_av(struct droce_shm_ah_attr *ah, uint8_t type, const struct tc_host *to)
{
	bool v6 = type == DROCE_SHM_QPT_UC;

	memset(ah, 0, sizeof(*ah));
	memcpy(ah->dgid, v6 ? to->gid6 : to->gid, 16);
	ah->sgid_index = v6 ? 1 : 0;
	ah->is_global = 1;
	ah->hop_limit = HOP_LIMIT;
	ah->traffic_class = TCLASS;
	ah->flow_label = FLOW_LABEL;
	ah->port_num = 1;
}

static struct droce_shm_qp_attr
attr_rtr(uint8_t type, const struct tc_qp *peer, uint32_t rq_psn)
{
	struct droce_shm_qp_attr a = attr_state(DROCE_SHM_QPS_RTR);

	if (type == DROCE_SHM_QPT_UD)
		return a;
	a.mask |= DROCE_SHM_QP_AV | DROCE_SHM_QP_PATH_MTU | DROCE_SHM_QP_DEST_QPN |
		  DROCE_SHM_QP_RQ_PSN;
	attr_av(&a.ah, type, peer->h);
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer->qpn;
	a.rq_psn = rq_psn;
	if (type == DROCE_SHM_QPT_RC) {
		a.mask |= DROCE_SHM_QP_MAX_DEST_RD_ATOMIC | DROCE_SHM_QP_MIN_RNR_TIMER;
		a.max_dest_rd_atomic = 4;
		a.min_rnr_timer = 3;
	}
	return a;
}

static struct droce_shm_qp_attr
attr_rts(uint8_t type, uint32_t sq_psn)
{
	struct droce_shm_qp_attr a = attr_state(DROCE_SHM_QPS_RTS);

	a.mask |= DROCE_SHM_QP_SQ_PSN;
	a.sq_psn = sq_psn;
	if (type == DROCE_SHM_QPT_RC) {
		a.mask |= DROCE_SHM_QP_TIMEOUT | DROCE_SHM_QP_RETRY_CNT | DROCE_SHM_QP_RNR_RETRY |
			  DROCE_SHM_QP_MAX_QP_RD_ATOMIC;
		a.timeout = 18;
		a.retry_cnt = 6;
		a.rnr_retry = 7;
		a.max_rd_atomic = 2;
	}
	return a;
}

static struct droce_shm_qp_attr
query(const struct tc_qp *qp)
{
	struct droce_shm_qp_attr q;

	CHECK_EQ_I64(droce_engine_qp_query(qp->qp, &q), 0);
	return q;
}

static void
modify_ok(struct tc_qp *qp, const struct droce_shm_qp_attr *a, uint8_t state, const char *what)
{
	droce_test_ctx("%s QP %u: %s", type_name(qp->view.qp_type), qp->qpn, what);
	CHECK_EQ_I64(tc_modify(qp, a), 0);
	CHECK_EQ_U64(tc_qp_state(qp), state);
	CHECK_EQ_U64(query(qp).qp_state, state);
}

/* A refused modify changes nothing: neither the state nor any attribute. */
static void
modify_bad(struct tc_qp *qp, const struct droce_shm_qp_attr *a, int err, const char *what)
{
	struct droce_shm_qp_attr before = query(qp), after;
	uint32_t state = tc_qp_state(qp);

	droce_test_ctx("%s QP %u in %s: %s", type_name(qp->view.qp_type), qp->qpn,
		       droce_shm_qp_state_name(state), what);
	CHECK_EQ_I64(tc_modify(qp, a), err);
	CHECK_EQ_U64(tc_qp_state(qp), state);
	after = query(qp);
	CHECK_MEM(&after, &before, sizeof(after));
}

/* Each attribute a transition requires, left out in turn, makes the modify fail. */
static void
modify_bad_missing(struct tc_qp *qp, const struct droce_shm_qp_attr *a)
{
	uint32_t rest = a->mask & ~(uint32_t)DROCE_SHM_QP_STATE;

	while (rest != 0) {
		struct droce_shm_qp_attr m = *a;
		uint32_t bit = rest & -rest;
		char what[64];

		rest &= rest - 1;
		m.mask &= ~bit;
		snprintf(what, sizeof(what), "to %s without mask bit 0x%x",
			 droce_shm_qp_state_name(a->qp_state), bit);
		modify_bad(qp, &m, -EINVAL, what);
	}
}

static void
modify_bad_extra(struct tc_qp *qp, const struct droce_shm_qp_attr *a, uint32_t bit,
		 const char *what)
{
	struct droce_shm_qp_attr m = *a;

	m.mask |= bit;
	modify_bad(qp, &m, -EINVAL, what);
}

/* Walks x from RESET up to state, addressed at peer. */
static void
walk_to(struct tc_qp *x, const struct tc_qp *peer, uint8_t state, uint32_t sq_psn,
	uint32_t rq_psn)
{
	uint8_t type = x->view.qp_type;
	struct droce_shm_qp_attr a;

	CHECK_EQ_U64(tc_qp_state(x), DROCE_SHM_QPS_RESET);
	if (state == DROCE_SHM_QPS_RESET)
		return;
	a = attr_init(type);
	modify_ok(x, &a, DROCE_SHM_QPS_INIT, "RESET->INIT");
	if (state == DROCE_SHM_QPS_INIT)
		return;
	a = attr_rtr(type, peer, rq_psn);
	modify_ok(x, &a, DROCE_SHM_QPS_RTR, "INIT->RTR");
	if (state == DROCE_SHM_QPS_RTR)
		return;
	a = attr_rts(type, sq_psn);
	modify_ok(x, &a, DROCE_SHM_QPS_RTS, "RTR->RTS");
	if (state == DROCE_SHM_QPS_RTS)
		return;
	a = attr_state(DROCE_SHM_QPS_SQD);
	modify_ok(x, &a, DROCE_SHM_QPS_SQD, "RTS->SQD");
}

/* ---- 1. modify_qp: the state machine on a live QP ---- */

static void
modify_reset_state(struct tc_qp *x, const struct tc_qp *peer)
{
	uint8_t type = x->view.qp_type;
	struct droce_shm_qp_attr a;

	a = attr_state(DROCE_SHM_QPS_RESET);
	modify_ok(x, &a, DROCE_SHM_QPS_RESET, "RESET->RESET");
	a = attr_rtr(type, peer, PSN_B);
	modify_bad(x, &a, -EINVAL, "RESET->RTR");
	a = attr_rts(type, PSN_A);
	modify_bad(x, &a, -EINVAL, "RESET->RTS");
	a = attr_state(DROCE_SHM_QPS_SQD);
	modify_bad(x, &a, -EINVAL, "RESET->SQD");
	/* SQE is entered on a send error only, never by a modify (10.3.1). */
	a = attr_state(DROCE_SHM_QPS_SQE);
	modify_bad(x, &a, -EINVAL, "RESET->SQE");
	a = attr_state(DROCE_SHM_QPS_ERR + 1);
	modify_bad(x, &a, -EINVAL, "state out of range");

	a = attr_init(type);
	modify_bad_missing(x, &a);
	modify_bad_extra(x, &a, DROCE_SHM_QP_SQ_PSN, "RESET->INIT with SQ_PSN");
	modify_bad_extra(x, &a, DROCE_SHM_QP_CUR_STATE, "RESET->INIT with CUR_STATE");
	modify_bad_extra(x, &a, type == DROCE_SHM_QPT_UD ? DROCE_SHM_QP_ACCESS_FLAGS :
			 DROCE_SHM_QP_QKEY, "RESET->INIT with the other type's attribute");
	modify_bad_extra(x, &a, RESERVED_BIT, "reserved mask bit");
	modify_bad_extra(x, &a, UNKNOWN_BIT, "unknown mask bit");
	modify_bad_extra(x, &a, DROCE_SHM_QP_CAP, "CAP (no resize)");
	modify_bad_extra(x, &a, DROCE_SHM_QP_RATE_LIMIT, "RATE_LIMIT");
	a.port_num = 0;
	modify_bad(x, &a, -EINVAL, "port 0");
	a.port_num = 2;
	modify_bad(x, &a, -EINVAL, "port 2 of a 1-port device");
	a = attr_init(type);
	a.pkey_index = 1;
	modify_bad(x, &a, -EINVAL, "P_Key index 1 of a 1-entry table");
	if (type != DROCE_SHM_QPT_UD) {
		a = attr_init(type);
		a.qp_access_flags |= BAD_ACCESS;
		modify_bad(x, &a, -EINVAL, "unknown access flag");
	}
}

static void
modify_init_state(struct tc_qp *x, const struct tc_qp *peer)
{
	uint8_t type = x->view.qp_type;
	struct droce_shm_qp_attr a, q;

	a = attr_init(type);
	modify_ok(x, &a, DROCE_SHM_QPS_INIT, "RESET->INIT");
	q = query(x);
	CHECK_EQ_U64(q.port_num, 1);
	CHECK_EQ_U64(q.pkey_index, 0);
	if (type == DROCE_SHM_QPT_UD)
		CHECK_EQ_U64(q.qkey, QKEY);
	else
		CHECK_EQ_U64(q.qp_access_flags, IBV_ACCESS_LOCAL_WRITE);

	/* INIT -> INIT: the INIT attributes may change again, with or without the state. */
	a = attr_init(type);
	a.qkey = QKEY2;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	modify_ok(x, &a, DROCE_SHM_QPS_INIT, "INIT->INIT");
	a.mask &= ~(uint32_t)DROCE_SHM_QP_STATE;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;
	modify_ok(x, &a, DROCE_SHM_QPS_INIT, "INIT attributes without the state");
	q = query(x);
	if (type == DROCE_SHM_QPT_UD)
		CHECK_EQ_U64(q.qkey, QKEY2);
	else
		CHECK_EQ_U64(q.qp_access_flags, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);

	a = attr_rts(type, PSN_A);
	modify_bad(x, &a, -EINVAL, "INIT->RTS");
	a = attr_state(DROCE_SHM_QPS_SQD);
	modify_bad(x, &a, -EINVAL, "INIT->SQD");
	a = attr_state(DROCE_SHM_QPS_INIT);
	modify_bad_extra(x, &a, DROCE_SHM_QP_PATH_MTU, "INIT->INIT with PATH_MTU");

	a = attr_rtr(type, peer, PSN_B);
	modify_bad_extra(x, &a, DROCE_SHM_QP_SQ_PSN, "INIT->RTR with SQ_PSN");
	modify_bad_extra(x, &a, UNKNOWN_BIT, "INIT->RTR with an unknown mask bit");
	modify_bad_extra(x, &a, DROCE_SHM_QP_ALT_PATH, "INIT->RTR with ALT_PATH");
	if (type == DROCE_SHM_QPT_UD) {
		struct droce_shm_qp_attr m = a;

		/* UD has no path and no peer: connection attributes are not allowed. */
		m.mask |= DROCE_SHM_QP_AV;
		attr_av(&m.ah, DROCE_SHM_QPT_RC, peer->h);
		modify_bad(x, &m, -EINVAL, "UD INIT->RTR with AV");
		modify_bad_extra(x, &a, DROCE_SHM_QP_PATH_MTU, "UD INIT->RTR with PATH_MTU");
		modify_bad_extra(x, &a, DROCE_SHM_QP_DEST_QPN, "UD INIT->RTR with DEST_QPN");
		modify_bad_extra(x, &a, DROCE_SHM_QP_RQ_PSN, "UD INIT->RTR with RQ_PSN");
		return;
	}
	modify_bad_missing(x, &a);
	if (type == DROCE_SHM_QPT_UC) {
		modify_bad_extra(x, &a, DROCE_SHM_QP_MIN_RNR_TIMER, "UC with MIN_RNR_TIMER");
		modify_bad_extra(x, &a, DROCE_SHM_QP_MAX_DEST_RD_ATOMIC,
				 "UC with MAX_DEST_RD_ATOMIC");
	} else {
		modify_bad_extra(x, &a, DROCE_SHM_QP_TIMEOUT, "RC INIT->RTR with TIMEOUT");
		a.min_rnr_timer = BAD_TIMER;
		modify_bad(x, &a, -EINVAL, "min_rnr_timer 32");
		a = attr_rtr(type, peer, PSN_B);
		a.max_dest_rd_atomic = BAD_DEST_RD_ATOMIC;
		modify_bad(x, &a, -EINVAL, "max_dest_rd_atomic 17");
	}
	a = attr_rtr(type, peer, PSN_B);
	a.path_mtu = BAD_MTU;
	modify_bad(x, &a, -EINVAL, "path_mtu 6");
	a.path_mtu = 0;
	modify_bad(x, &a, -EINVAL, "path_mtu 0");
	a = attr_rtr(type, peer, BAD_PSN);
	modify_bad(x, &a, -EINVAL, "rq_psn 1 << 24");
	a = attr_rtr(type, peer, PSN_B);
	a.dest_qp_num = DROCE_SHM_QPN_MAX + 1;
	modify_bad(x, &a, -EINVAL, "dest_qp_num 1 << 24");
	a = attr_rtr(type, peer, PSN_B);
	a.ah.sgid_index = BAD_SGID;
	modify_bad(x, &a, -EINVAL, "sgid_index past the GID table");
	a = attr_rtr(type, peer, PSN_B);
	a.ah.is_global = 0;
	modify_bad(x, &a, -EINVAL, "AV without GRH");
	a = attr_rtr(type, peer, PSN_B);
	a.ah.flow_label = BAD_FLOW;
	modify_bad(x, &a, -EINVAL, "flow label 1 << 20");
	a = attr_rtr(type, peer, PSN_B);
	a.ah.port_num = 2;
	modify_bad(x, &a, -EINVAL, "AV port 2");
	a = attr_rtr(type, peer, PSN_B);
	a.ah.sgid_index ^= 1;
	modify_bad(x, &a, -EINVAL, "source and destination GIDs of different IP versions");
	a = attr_rtr(type, peer, PSN_B);
	a.ah.dgid[15] ^= 0x40;
	modify_bad(x, &a, -EHOSTUNREACH, "destination GID without a neighbour");
}

/* x in INIT, all the refusals checked: on to RTS and the query of every attribute. */
static void
modify_up(struct tc_qp *x, const struct tc_qp *peer)
{
	uint8_t type = x->view.qp_type;
	struct droce_shm_qp_attr a, q, rtr = attr_rtr(type, peer, PSN_B);

	if (type == DROCE_SHM_QPT_UD) {
		rtr.mask |= DROCE_SHM_QP_QKEY;
		rtr.qkey = QKEY;
	}
	modify_ok(x, &rtr, DROCE_SHM_QPS_RTR, "INIT->RTR");
	q = query(x);
	if (type == DROCE_SHM_QPT_UD) {
		CHECK_EQ_U64(q.qkey, QKEY);
	} else {
		CHECK_EQ_U64(q.path_mtu, IBV_MTU_1024);
		CHECK_EQ_U64(q.dest_qp_num, peer->qpn);
		CHECK_EQ_U64(q.rq_psn, PSN_B);
		CHECK_MEM(&q.ah, &rtr.ah, sizeof(q.ah));
	}
	if (type == DROCE_SHM_QPT_RC) {
		CHECK_EQ_U64(q.max_dest_rd_atomic, rtr.max_dest_rd_atomic);
		CHECK_EQ_U64(q.min_rnr_timer, rtr.min_rnr_timer);
	}

	a = attr_state(DROCE_SHM_QPS_RTR);
	modify_bad(x, &a, -EINVAL, "RTR->RTR");
	a = attr_state(DROCE_SHM_QPS_SQD);
	modify_bad(x, &a, -EINVAL, "RTR->SQD");
	a = attr_init(type);
	modify_bad(x, &a, -EINVAL, "RTR->INIT");

	a = attr_rts(type, PSN_A);
	modify_bad_missing(x, &a);
	modify_bad_extra(x, &a, DROCE_SHM_QP_PATH_MTU, "RTR->RTS with PATH_MTU");
	modify_bad_extra(x, &a, DROCE_SHM_QP_RQ_PSN, "RTR->RTS with RQ_PSN");
	modify_bad_extra(x, &a, DROCE_SHM_QP_DEST_QPN, "RTR->RTS with DEST_QPN");
	if (type != DROCE_SHM_QPT_RC)
		modify_bad_extra(x, &a, DROCE_SHM_QP_TIMEOUT, "RTR->RTS with TIMEOUT");
	a.sq_psn = BAD_PSN;
	modify_bad(x, &a, -EINVAL, "sq_psn 1 << 24");
	if (type == DROCE_SHM_QPT_RC) {
		a = attr_rts(type, PSN_A);
		a.timeout = BAD_TIMER;
		modify_bad(x, &a, -EINVAL, "timeout 32");
		a = attr_rts(type, PSN_A);
		a.retry_cnt = BAD_RETRY;
		modify_bad(x, &a, -EINVAL, "retry_cnt 8");
		a = attr_rts(type, PSN_A);
		a.rnr_retry = BAD_RETRY;
		modify_bad(x, &a, -EINVAL, "rnr_retry 8");
		a = attr_rts(type, PSN_A);
		a.max_rd_atomic = BAD_RD_ATOMIC;
		modify_bad(x, &a, -EINVAL, "max_rd_atomic 129");
	}
	/* CUR_STATE is optional into RTS and must name the state the QP is in. */
	a = attr_rts(type, PSN_A);
	a.mask |= DROCE_SHM_QP_CUR_STATE;
	a.cur_qp_state = DROCE_SHM_QPS_INIT;
	modify_bad(x, &a, -EINVAL, "CUR_STATE INIT in RTR");
	a.cur_qp_state = DROCE_SHM_QPS_RTR;
	modify_ok(x, &a, DROCE_SHM_QPS_RTS, "RTR->RTS");
	q = query(x);
	CHECK_EQ_U64(q.sq_psn, PSN_A);
	if (type == DROCE_SHM_QPT_RC) {
		CHECK_EQ_U64(q.timeout, a.timeout);
		CHECK_EQ_U64(q.retry_cnt, a.retry_cnt);
		CHECK_EQ_U64(q.rnr_retry, a.rnr_retry);
		CHECK_EQ_U64(q.max_rd_atomic, a.max_rd_atomic);
		/* Set at RTR, still there. */
		CHECK_EQ_U64(q.min_rnr_timer, rtr.min_rnr_timer);
	}
}

/* The attributes RTS -> RTS and SQD -> SQD may change, per QP type. */
static struct droce_shm_qp_attr
attr_live(uint8_t type, uint8_t state, bool with_state, uint32_t qkey, uint32_t access)
{
	struct droce_shm_qp_attr a = attr_state(state);

	if (!with_state)
		a.mask = 0;
	if (type == DROCE_SHM_QPT_UD) {
		a.mask |= DROCE_SHM_QP_QKEY;
		a.qkey = qkey;
		return a;
	}
	a.mask |= DROCE_SHM_QP_ACCESS_FLAGS;
	a.qp_access_flags = access;
	if (type == DROCE_SHM_QPT_RC) {
		a.mask |= DROCE_SHM_QP_MIN_RNR_TIMER;
		a.min_rnr_timer = 5;
	}
	return a;
}

static void
check_live(const struct tc_qp *x, uint32_t qkey, uint32_t access)
{
	struct droce_shm_qp_attr q = query(x);

	if (x->view.qp_type == DROCE_SHM_QPT_UD) {
		CHECK_EQ_U64(q.qkey, qkey);
		return;
	}
	CHECK_EQ_U64(q.qp_access_flags, access);
	if (x->view.qp_type == DROCE_SHM_QPT_RC)
		CHECK_EQ_U64(q.min_rnr_timer, 5);
}

static void
modify_live(struct end *x, struct end *y)
{
	uint8_t type = x->qp->view.qp_type;
	uint32_t rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	struct droce_shm_qp_attr a, q;
	struct droce_engine_event ev;

	/* RTS -> RTS: without the state bit, then with it. */
	a = attr_live(type, DROCE_SHM_QPS_RTS, false, QKEY2, rw);
	modify_ok(x->qp, &a, DROCE_SHM_QPS_RTS, "RTS attributes without the state");
	check_live(x->qp, QKEY2, rw);
	a = attr_live(type, DROCE_SHM_QPS_RTS, true, QKEY, IBV_ACCESS_LOCAL_WRITE);
	modify_ok(x->qp, &a, DROCE_SHM_QPS_RTS, "RTS->RTS");
	check_live(x->qp, QKEY, IBV_ACCESS_LOCAL_WRITE);
	exchange(x, y, 11, one_pkt_len(type));
	exchange(y, x, 12, one_pkt_len(type));

	a = attr_state(DROCE_SHM_QPS_RTS);
	modify_bad_extra(x->qp, &a, DROCE_SHM_QP_SQ_PSN, "RTS->RTS with SQ_PSN");
	modify_bad_extra(x->qp, &a, DROCE_SHM_QP_PATH_MTU, "RTS->RTS with PATH_MTU");
	modify_bad_extra(x->qp, &a, DROCE_SHM_QP_PORT, "RTS->RTS with PORT");
	a = attr_init(type);
	modify_bad(x->qp, &a, -EINVAL, "RTS->INIT");
	a = attr_state(DROCE_SHM_QPS_RTR);
	modify_bad(x->qp, &a, -EINVAL, "RTS->RTR");
	a = attr_state(DROCE_SHM_QPS_SQE);
	modify_bad(x->qp, &a, -EINVAL, "RTS->SQE");

	/* RTS -> SQD -> SQD -> RTS, and traffic again. */
	a = attr_state(DROCE_SHM_QPS_SQD);
	modify_bad_extra(x->qp, &a, DROCE_SHM_QP_SQ_PSN, "RTS->SQD with SQ_PSN");
	modify_ok(x->qp, &a, DROCE_SHM_QPS_SQD, "RTS->SQD");
	a = attr_state(DROCE_SHM_QPS_RTR);
	modify_bad(x->qp, &a, -EINVAL, "SQD->RTR");
	a = attr_state(DROCE_SHM_QPS_SQD);
	modify_bad_extra(x->qp, &a, DROCE_SHM_QP_SQ_PSN, "SQD->SQD with SQ_PSN");
	a = attr_live(type, DROCE_SHM_QPS_SQD, true, QKEY2, rw);
	if (type != DROCE_SHM_QPT_UD) {
		/* Drained: the path may change (same destination, another hop limit). */
		a.mask |= DROCE_SHM_QP_AV;
		attr_av(&a.ah, type, y->h);
		a.ah.hop_limit = HOP_LIMIT + 1;
	}
	if (type == DROCE_SHM_QPT_RC) {
		a.mask |= DROCE_SHM_QP_TIMEOUT | DROCE_SHM_QP_RETRY_CNT | DROCE_SHM_QP_RNR_RETRY;
		a.timeout = 15;
		a.retry_cnt = 5;
		a.rnr_retry = 6;
	}
	modify_ok(x->qp, &a, DROCE_SHM_QPS_SQD, "SQD->SQD");
	check_live(x->qp, QKEY2, rw);
	q = query(x->qp);
	if (type != DROCE_SHM_QPT_UD)
		CHECK_MEM(&q.ah, &a.ah, sizeof(q.ah));
	if (type == DROCE_SHM_QPT_RC) {
		CHECK_EQ_U64(q.timeout, 15);
		CHECK_EQ_U64(q.retry_cnt, 5);
		CHECK_EQ_U64(q.rnr_retry, 6);
	}
	a = attr_live(type, DROCE_SHM_QPS_RTS, true, QKEY, IBV_ACCESS_LOCAL_WRITE);
	modify_ok(x->qp, &a, DROCE_SHM_QPS_RTS, "SQD->RTS");
	exchange(x, y, 13, one_pkt_len(type));
	exchange(y, x, 14, one_pkt_len(type));
	/* en_sqd_async_notify was not asked for: no event. */
	CHECK_EQ_I64(tc_event(x->h, &ev, 0), 0);
}

/* From every state the QP can be in, ERR then RESET, and RESET directly (10.3.1). */
static void
modify_any_to_err_reset(struct end *x, struct end *y)
{
	static const uint8_t from[] = {
		DROCE_SHM_QPS_RESET, DROCE_SHM_QPS_INIT, DROCE_SHM_QPS_RTR, DROCE_SHM_QPS_RTS,
		DROCE_SHM_QPS_SQD,
	};
	struct droce_shm_qp_attr a;
	struct ibv_wc wc;
	unsigned int i;

	for (i = 0; i < RTE_DIM(from); i++) {
		walk_to(x->qp, y->qp, from[i], PSN_A, PSN_B);
		if (from[i] != DROCE_SHM_QPS_RESET) {
			/* Receives posted from INIT on are flushed by the move to ERR. */
			CHECK_EQ_I64(post_recv1(x, 100 + i, 1), 0);
		}
		a = attr_state(DROCE_SHM_QPS_ERR);
		modify_ok(x->qp, &a, DROCE_SHM_QPS_ERR, "to ERR");
		if (from[i] != DROCE_SHM_QPS_RESET) {
			wait_wc(x->rcq, &wc);
			check_flush_wc(&wc, 100 + i, x->qp);
		}
		a = attr_init(x->qp->view.qp_type);
		modify_bad(x->qp, &a, -EINVAL, "ERR->INIT");
		a = attr_state(DROCE_SHM_QPS_RTS);
		modify_bad(x->qp, &a, -EINVAL, "ERR->RTS");
		a = attr_state(DROCE_SHM_QPS_ERR);
		modify_ok(x->qp, &a, DROCE_SHM_QPS_ERR, "ERR->ERR");
		a = attr_state(DROCE_SHM_QPS_RESET);
		modify_ok(x->qp, &a, DROCE_SHM_QPS_RESET, "ERR->RESET");
		walk_to(x->qp, y->qp, from[i], PSN_A, PSN_B);
		modify_ok(x->qp, &a, DROCE_SHM_QPS_RESET, "to RESET");
	}
	quiet();
	check_empty(x->scq);
	check_empty(x->rcq);
}

static void
modify_walk(struct tc_host *ha, struct tc_host *hb, uint8_t type)
{
	struct droce_shm_qp_attr a;
	struct end x, y;
	uint32_t ahn;

	end_make(&x, ha, type, SQ_SIZE);
	end_make(&y, hb, type, SQ_SIZE);
	CHECK_EQ_U64(tc_qp_state(x.qp), DROCE_SHM_QPS_RESET);
	if (type == DROCE_SHM_QPT_UD) {
		CHECK_EQ_I64(tc_ah_create(ha, 0, hb, false, &ahn), 0);
		x.ah.handle = ahn;
		CHECK_EQ_I64(tc_ah_create(hb, 0, ha, false, &ahn), 0);
		y.ah.handle = ahn;
	}

	modify_reset_state(x.qp, y.qp);
	modify_init_state(x.qp, y.qp);
	modify_up(x.qp, y.qp);
	walk_to(y.qp, x.qp, DROCE_SHM_QPS_RTS, PSN_B, PSN_A);
	exchange(&x, &y, 1, one_pkt_len(type));
	exchange(&y, &x, 2, one_pkt_len(type));
	modify_live(&x, &y);

	/* RTS -> ERR -> RESET, then both ends anew: the QP works again. */
	a = attr_state(DROCE_SHM_QPS_ERR);
	modify_ok(x.qp, &a, DROCE_SHM_QPS_ERR, "RTS->ERR");
	a = attr_state(DROCE_SHM_QPS_RESET);
	modify_ok(x.qp, &a, DROCE_SHM_QPS_RESET, "ERR->RESET");
	modify_any_to_err_reset(&x, &y);
	a = attr_state(DROCE_SHM_QPS_ERR);
	modify_ok(y.qp, &a, DROCE_SHM_QPS_ERR, "peer RTS->ERR");
	a = attr_state(DROCE_SHM_QPS_RESET);
	modify_ok(y.qp, &a, DROCE_SHM_QPS_RESET, "peer ERR->RESET");
	walk_to(x.qp, y.qp, DROCE_SHM_QPS_RTS, PSN_B, PSN_A);
	walk_to(y.qp, x.qp, DROCE_SHM_QPS_RTS, PSN_A, PSN_B);
	exchange(&x, &y, 3, one_pkt_len(type));
	exchange(&y, &x, 4, one_pkt_len(type));
	quiet();
	check_empty(x.scq);
	check_empty(x.rcq);
	check_empty(y.scq);
	check_empty(y.rcq);
}

DROCE_TEST(modify_qp)
{
	static const uint8_t types[] = {
		DROCE_SHM_QPT_RC, DROCE_SHM_QPT_UC, DROCE_SHM_QPT_UD,
	};
	struct tc_host ha, hb;
	unsigned int t;

	pair_open(&ha, &hb);
	for (t = 0; t < RTE_DIM(types); t++)
		modify_walk(&ha, &hb, types[t]);
	tc_pair_close(&ha, &hb);
}

/* ---- 2. Post lists with a bad WR in the middle ---- */

struct send_list {
	struct ibv_send_wr wr[LIST_LEN];
	struct ibv_sge sge[LIST_LEN][MAX_SGE + 1];
	uint32_t len[LIST_LEN];
};

/*
 * Six good SENDs from x's slots 0..5, all signaled: one inline, one of two SGEs, each of
 * its own length; ids base + i.
 */
static void
send_list_init(struct send_list *l, struct end *x, const struct end *y, uint64_t base,
	       uint32_t seed)
{
	unsigned int i;

	memset(l, 0, sizeof(*l));
	for (i = 0; i < LIST_LEN; i++) {
		l->len[i] = i == 1 ? MAX_INLINE - 3 : 100 + 37 * i + seed % 64;
		fill(slot_ptr(x, i), l->len[i], seed * LIST_LEN + i);
		send_wr_init(&l->wr[i], l->sge[i], x, y, base + i, i, l->len[i],
			     IBV_SEND_SIGNALED);
		if (i > 0)
			l->wr[i - 1].next = &l->wr[i];
	}
	l->wr[1].send_flags |= IBV_SEND_INLINE;
	/* WR 2 gathers from two SGEs. */
	l->sge[2][1] = l->sge[2][0];
	l->sge[2][0].length = 10;
	l->sge[2][1].addr += 10;
	l->sge[2][1].length -= 10;
	l->wr[2].num_sge = 2;
}

static void
spoil_lkey(struct ibv_send_wr *wr, struct end *x)
{
	(void)x;
	wr->sg_list[0].lkey ^= 0x5A;
}

static void
spoil_range(struct ibv_send_wr *wr, struct end *x)
{
	wr->sg_list[0].addr = (uintptr_t)(x->mr->buf + MR_LEN - 8);
	wr->sg_list[0].length = 16;
}

static void
spoil_nsge(struct ibv_send_wr *wr, struct end *x)
{
	struct ibv_sge *sge = wr->sg_list;
	unsigned int i;

	(void)x;
	for (i = 1; i <= MAX_SGE; i++)
		sge[i] = sge[0];
	wr->num_sge = MAX_SGE + 1;
}

static void
spoil_inline(struct ibv_send_wr *wr, struct end *x)
{
	(void)x;
	wr->send_flags |= IBV_SEND_INLINE;
	wr->sg_list[0].length = MAX_INLINE + 1;
}

static void
spoil_write(struct ibv_send_wr *wr, struct end *x)
{
	(void)x;
	wr->opcode = IBV_WR_RDMA_WRITE;
}

static void
spoil_read(struct ibv_send_wr *wr, struct end *x)
{
	(void)x;
	wr->opcode = IBV_WR_RDMA_READ;
}

static void
spoil_atomic(struct ibv_send_wr *wr, struct end *x)
{
	(void)x;
	wr->opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
}

static void
spoil_inv(struct ibv_send_wr *wr, struct end *x)
{
	(void)x;
	wr->opcode = IBV_WR_SEND_WITH_INV;
}

static void
spoil_opcode(struct ibv_send_wr *wr, struct end *x)
{
	(void)x;
	wr->opcode = (enum ibv_wr_opcode)BAD_OPCODE;
}

static struct ibv_ah dead_ah = { .handle = DEAD_AH };

static void
spoil_ah(struct ibv_send_wr *wr, struct end *x)
{
	(void)x;
	wr->wr.ud.ah = &dead_ah;
}

static void
spoil_no_ah(struct ibv_send_wr *wr, struct end *x)
{
	(void)x;
	wr->wr.ud.ah = NULL;
}

struct send_case {
	const char *name;
	int err;
	void (*spoil)(struct ibv_send_wr *wr, struct end *x);
};

static const struct send_case rc_send_cases[] = {
	{ "bad lkey", EINVAL, spoil_lkey },
	{ "SGE past the MR", EINVAL, spoil_range },
	{ "too many SGEs", EINVAL, spoil_nsge },
	{ "inline too long", EINVAL, spoil_inline },
	{ "opcode out of range", EINVAL, spoil_opcode },
	/* Allowed on RC, but not in the QP's supported_wr (tc_qp_create advertises SENDs). */
	{ "RDMA WRITE", EOPNOTSUPP, spoil_write },
	{ "RDMA READ", EOPNOTSUPP, spoil_read },
	{ "atomic", EOPNOTSUPP, spoil_atomic },
};

static const struct send_case uc_send_cases[] = {
	{ "bad lkey", EINVAL, spoil_lkey },
	{ "too many SGEs", EINVAL, spoil_nsge },
	{ "inline too long", EINVAL, spoil_inline },
	/* Not allowed on UC (IB table of operations per service type). */
	{ "RDMA READ", EINVAL, spoil_read },
	{ "atomic", EINVAL, spoil_atomic },
	{ "SEND with invalidate", EINVAL, spoil_inv },
	/* Allowed on UC, but not in the QP's supported_wr. */
	{ "RDMA WRITE", EOPNOTSUPP, spoil_write },
};

static const struct send_case ud_send_cases[] = {
	{ "bad lkey", EINVAL, spoil_lkey },
	{ "too many SGEs", EINVAL, spoil_nsge },
	{ "inline too long", EINVAL, spoil_inline },
	{ "RDMA WRITE", EINVAL, spoil_write },
	{ "RDMA READ", EINVAL, spoil_read },
	{ "SEND with invalidate", EINVAL, spoil_inv },
	{ "dead AH", EINVAL, spoil_ah },
	{ "no AH", EINVAL, spoil_no_ah },
};

/*
 * Each case posts 3 good, 1 bad, 2 good: the errno, *bad_wr at the bad one, and exactly
 * the 3 before it sent, received byte-exact and completed on both sides. y keeps 3 spare
 * receives posted, so a 4th message would show.
 */
static void
send_list_cases(struct tc_host *ha, struct tc_host *hb, uint8_t type,
		const struct send_case *cases, unsigned int nb)
{
	struct send_list l;
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	struct end x, y;
	uint32_t rx_posted = 0, rx_done = 0;
	unsigned int c, i;

	end_make(&x, ha, type, SQ_SIZE);
	end_make(&y, hb, type, SQ_SIZE);
	end_link(&x, &y, &path_std);
	for (; rx_posted < BAD_AT; rx_posted++)
		CHECK_EQ_I64(post_recv1(&y, rx_posted, rx_posted % RX_SLOTS), 0);
	for (c = 0; c < nb; c++) {
		uint64_t pkts = tc_counter(ha, "req_pkts");
		uint32_t prod = x.qp->view.sq_prod;

		droce_test_ctx("%s post_send: %s", type_name(type), cases[c].name);
		for (i = 0; i < BAD_AT; i++, rx_posted++)
			CHECK_EQ_I64(post_recv1(&y, rx_posted, rx_posted % RX_SLOTS), 0);
		send_list_init(&l, &x, &y, 100 * (c + 1), c);
		cases[c].spoil(&l.wr[BAD_AT], &x);
		bad = NULL;
		CHECK_EQ_I64(tc_post_send(x.qp, l.wr, &bad), cases[c].err);
		CHECK(bad == &l.wr[BAD_AT]);
		CHECK_EQ_U64(x.qp->view.sq_prod - prod, BAD_AT);
		for (i = 0; i < BAD_AT; i++, rx_done++) {
			droce_test_ctx("%s post_send: %s: message %u", type_name(type),
				       cases[c].name, i);
			wait_wc(y.rcq, &wc);
			check_recv_wc(&wc, rx_done, &y, &x, rx_done % RX_SLOTS, i, l.len[i]);
			wait_wc(x.scq, &wc);
			check_send_wc(&wc, 100 * (c + 1) + i, &x);
		}
		quiet();
		check_empty(y.rcq);
		check_empty(x.scq);
		CHECK_EQ_U64(tc_counter(ha, "req_pkts") - pkts, BAD_AT);
	}
}

/*
 * Sends are refused before RTS (RESET, INIT, RTR) and receives in RESET: the whole list,
 * *bad_wr at its head, nothing in the ring. Once up, only what was posted since flows.
 */
static void
post_wrong_state(struct tc_host *ha, struct tc_host *hb)
{
	static const uint8_t states[] = {
		DROCE_SHM_QPS_RESET, DROCE_SHM_QPS_INIT, DROCE_SHM_QPS_RTR,
	};
	struct ibv_recv_wr rwr[2], *rbad;
	struct ibv_send_wr *bad;
	struct droce_shm_qp_attr a;
	struct ibv_sge rsge[2];
	struct send_list l;
	struct end x, y, u, v;
	struct ibv_wc wc;
	uint64_t msgs = tc_counter(hb, "resp_msgs");
	unsigned int s;
	uint32_t ahn;

	end_make(&x, ha, DROCE_SHM_QPT_RC, SQ_SIZE);
	end_make(&y, hb, DROCE_SHM_QPT_RC, SQ_SIZE);
	memset(rwr, 0, sizeof(rwr));
	rsge[0] = (struct ibv_sge){ .addr = (uintptr_t)slot_ptr(&x, 7), .length = SLOT,
				    .lkey = x.mr->lkey };
	rsge[1] = rsge[0];
	rwr[0] = (struct ibv_recv_wr){ .wr_id = 70, .next = &rwr[1], .sg_list = &rsge[0],
				       .num_sge = 1 };
	rwr[1] = (struct ibv_recv_wr){ .wr_id = 71, .sg_list = &rsge[1], .num_sge = 1 };
	rbad = NULL;
	CHECK_EQ_I64(tc_post_recv(x.qp, rwr, &rbad), EINVAL);
	CHECK(rbad == &rwr[0]);
	CHECK_EQ_U64(x.qp->view.ctl->rq.prod, 0);
	for (s = 0; s < RTE_DIM(states); s++) {
		droce_test_ctx("post_send in %s", droce_shm_qp_state_name(states[s]));
		if (states[s] == DROCE_SHM_QPS_INIT) {
			a = attr_init(DROCE_SHM_QPT_RC);
			modify_ok(x.qp, &a, DROCE_SHM_QPS_INIT, "RESET->INIT");
			/* Receives are taken from INIT on. */
			CHECK_EQ_I64(tc_post_recv(x.qp, rwr, &rbad), 0);
			CHECK_EQ_U64(x.qp->view.ctl->rq.prod, 2);
		} else if (states[s] == DROCE_SHM_QPS_RTR) {
			a = attr_rtr(DROCE_SHM_QPT_RC, y.qp, PSN_B);
			modify_ok(x.qp, &a, DROCE_SHM_QPS_RTR, "INIT->RTR");
		}
		send_list_init(&l, &x, &y, 10 * s, s);
		bad = NULL;
		CHECK_EQ_I64(tc_post_send(x.qp, l.wr, &bad), EINVAL);
		CHECK(bad == &l.wr[0]);
		CHECK_EQ_U64(x.qp->view.sq_prod, 0);
		CHECK_EQ_U64(x.qp->view.ctl->sq.prod, 0);
	}
	a = attr_rts(DROCE_SHM_QPT_RC, PSN_A);
	modify_ok(x.qp, &a, DROCE_SHM_QPS_RTS, "RTR->RTS");
	walk_to(y.qp, x.qp, DROCE_SHM_QPS_RTS, PSN_B, PSN_A);
	/* Exactly one message each way: the refused lists left nothing behind. */
	exchange(&x, &y, 90, 2000);
	fill(slot_ptr(&y, 1), 500, 91);
	CHECK_EQ_I64(post_send1(&y, &x, 91, 1, 500, IBV_SEND_SIGNALED), 0);
	wait_wc(x.rcq, &wc);
	check_recv_wc(&wc, 70, &x, &y, 7, 1, 500);
	wait_wc(y.scq, &wc);
	check_send_wc(&wc, 91, &y);
	quiet();
	check_empty(x.scq);
	check_empty(x.rcq);
	check_empty(y.scq);
	check_empty(y.rcq);
	CHECK_EQ_U64(tc_counter(hb, "resp_msgs") - msgs, 1);

	/* UD: RTR receives but does not send. */
	end_make(&u, ha, DROCE_SHM_QPT_UD, SQ_SIZE);
	end_make(&v, hb, DROCE_SHM_QPT_UD, SQ_SIZE);
	walk_to(u.qp, v.qp, DROCE_SHM_QPS_RTR, PSN_A, PSN_B);
	CHECK_EQ_I64(tc_ah_create(ha, 0, hb, false, &ahn), 0);
	u.ah.handle = ahn;
	send_list_init(&l, &u, &v, 0, 0);
	bad = NULL;
	CHECK_EQ_I64(tc_post_send(u.qp, l.wr, &bad), EINVAL);
	CHECK(bad == &l.wr[0]);
	CHECK_EQ_U64(u.qp->view.ctl->sq.prod, 0);
}

DROCE_TEST(post_send_list)
{
	struct tc_host ha, hb;

	pair_open(&ha, &hb);
	send_list_cases(&ha, &hb, DROCE_SHM_QPT_RC, rc_send_cases, RTE_DIM(rc_send_cases));
	send_list_cases(&ha, &hb, DROCE_SHM_QPT_UC, uc_send_cases, RTE_DIM(uc_send_cases));
	send_list_cases(&ha, &hb, DROCE_SHM_QPT_UD, ud_send_cases, RTE_DIM(ud_send_cases));
	post_wrong_state(&ha, &hb);
	tc_pair_close(&ha, &hb);
}

/* ---- Receive lists ---- */

static void
rspoil_lkey(struct ibv_recv_wr *wr, const struct tc_mr *ro)
{
	(void)ro;
	wr->sg_list[0].lkey ^= 0x5A;
}

static void
rspoil_range(struct ibv_recv_wr *wr, const struct tc_mr *ro)
{
	(void)ro;
	wr->sg_list[0].length = MR_LEN;
}

static void
rspoil_nsge(struct ibv_recv_wr *wr, const struct tc_mr *ro)
{
	(void)ro;
	wr->sg_list[1] = wr->sg_list[0];
	wr->sg_list[2] = wr->sg_list[0];
	wr->num_sge = MAX_SGE + 1;
}

/* The HCA writes a receive buffer: its MR must grant local write. */
static void
rspoil_no_write(struct ibv_recv_wr *wr, const struct tc_mr *ro)
{
	wr->sg_list[0].addr = (uintptr_t)ro->buf;
	wr->sg_list[0].lkey = ro->lkey;
}

struct recv_case {
	const char *name;
	/* ro: an MR of the receiver without local write access */
	void (*spoil)(struct ibv_recv_wr *wr, const struct tc_mr *ro);
};

static const struct recv_case recv_cases[] = {
	{ "bad lkey", rspoil_lkey },
	{ "SGE past the MR", rspoil_range },
	{ "too many SGEs", rspoil_nsge },
	{ "MR without local write", rspoil_no_write },
};

/*
 * y posts 3 good, 1 bad, 2 good receives (to its RQ or its SRQ): the errno, *bad_wr,
 * and exactly 3 WQEs in the ring. x then sends 4 messages: 3 land in those WQEs and the
 * 4th finds none (RC: RNR NAKs until one more receive is posted; UD: dropped).
 */
static void
recv_list_cases(struct tc_host *ha, struct tc_host *hb, uint8_t type, bool use_srq,
		unsigned int nb)
{
	struct ibv_recv_wr rwr[LIST_LEN], *bad;
	struct ibv_sge rsge[LIST_LEN][MAX_SGE + 1];
	struct tc_mr *ro;
	struct ibv_wc wc;
	struct end x, y;
	unsigned int c, i;
	bool rc = type == DROCE_SHM_QPT_RC;

	end_make(&x, ha, type, SQ_SIZE);
	if (use_srq)
		end_make_on(&y, hb, type, 0, tc_cq_create(hb, CQ_SIZE),
			    tc_cq_create(hb, CQ_SIZE), tc_srq_create(hb, RQ_SIZE, MAX_SGE, 0),
			    SQ_SIZE);
	else
		end_make(&y, hb, type, SQ_SIZE);
	ro = tc_mr_reg(hb, SLOT, 0);
	end_link(&x, &y, &path_std);
	for (c = 0; c < nb; c++) {
		uint64_t base = 100 * (c + 1);
		uint32_t *prod = use_srq ? &y.srq->view.ctl->ring.prod : &y.qp->view.ctl->rq.prod;
		uint32_t prod0 = *prod;
		uint64_t drops = tc_counter(hb, "ud_drop");
		uint64_t rnr = tc_counter(hb, "nak_rnr_sent");
		int ret;

		droce_test_ctx("%s%s post_recv: %s", type_name(type), use_srq ? " SRQ" : "",
			       recv_cases[c].name);
		memset(rwr, 0, sizeof(rwr));
		for (i = 0; i < LIST_LEN; i++) {
			rsge[i][0] = (struct ibv_sge){ .addr = (uintptr_t)slot_ptr(&y, i),
						       .length = SLOT, .lkey = y.mr->lkey };
			rwr[i].wr_id = base + i;
			rwr[i].sg_list = rsge[i];
			rwr[i].num_sge = 1;
			rwr[i].next = i + 1 < LIST_LEN ? &rwr[i + 1] : NULL;
		}
		recv_cases[c].spoil(&rwr[BAD_AT], ro);
		bad = NULL;
		ret = use_srq ? tc_post_srq_recv(y.srq, rwr, &bad) : tc_post_recv(y.qp, rwr, &bad);
		CHECK_EQ_I64(ret, EINVAL);
		CHECK(bad == &rwr[BAD_AT]);
		CHECK_EQ_U64(*prod - prod0, BAD_AT);

		for (i = 0; i <= BAD_AT; i++) {
			fill(slot_ptr(&x, i), 200 + i, (uint32_t)(base + i));
			CHECK_EQ_I64(post_send1(&x, &y, base + i, i, 200 + i,
						IBV_SEND_SIGNALED), 0);
		}
		for (i = 0; i < BAD_AT; i++) {
			wait_wc(y.rcq, &wc);
			check_recv_wc(&wc, base + i, &y, &x, i, i, 200 + i);
			wait_wc(x.scq, &wc);
			check_send_wc(&wc, base + i, &x);
		}
		if (!rc) {
			/* UD completes a send once it is out; the receiver dropped it. */
			wait_wc(x.scq, &wc);
			check_send_wc(&wc, base + BAD_AT, &x);
		}
		quiet();
		check_empty(y.rcq);
		check_empty(x.scq);
		if (rc)
			CHECK(tc_counter(hb, "nak_rnr_sent") > rnr);
		else
			CHECK_EQ_U64(tc_counter(hb, "ud_drop") - drops, 1);

		/* One more receive: RC's 4th message lands there, UD needs a 5th. */
		CHECK_EQ_I64(post_recv1(&y, base + LIST_LEN, BAD_AT), 0);
		if (!rc) {
			fill(slot_ptr(&x, BAD_AT), 200 + BAD_AT, (uint32_t)(base + BAD_AT));
			CHECK_EQ_I64(post_send1(&x, &y, base + LIST_LEN, BAD_AT, 200 + BAD_AT,
						IBV_SEND_SIGNALED), 0);
		}
		wait_wc(y.rcq, &wc);
		check_recv_wc(&wc, base + LIST_LEN, &y, &x, BAD_AT, BAD_AT, 200 + BAD_AT);
		wait_wc(x.scq, &wc);
		check_send_wc(&wc, rc ? base + BAD_AT : base + LIST_LEN, &x);
		quiet();
		check_empty(y.rcq);
		check_empty(x.scq);
	}
}

DROCE_TEST(post_recv_list)
{
	struct tc_host ha, hb;

	pair_open(&ha, &hb);
	recv_list_cases(&ha, &hb, DROCE_SHM_QPT_RC, false, RTE_DIM(recv_cases));
	recv_list_cases(&ha, &hb, DROCE_SHM_QPT_RC, true, RTE_DIM(recv_cases));
	recv_list_cases(&ha, &hb, DROCE_SHM_QPT_UD, false, 1);
	tc_pair_close(&ha, &hb);
}

/* ---- 3. Error state: flush ---- */

/* Sends outstanding at the move to ERR: 1600 packets, more than the window holds. */
#define NB_OUT		200
#define OUT_LEN		2048	/* 8 packets at MTU 256 */
#define OUT_INLINE	50

/*
 * An RC QP whose peer has gone to ERR (its packets are dropped, nothing is acknowledged)
 * with NB_OUT sends and 4 receives outstanding: the move to ERR completes every one with
 * WR_FLUSH_ERR, unsignaled ones included, in post order; so does everything posted after.
 */
static void
flush_rc(struct tc_host *ha, struct tc_host *hb)
{
	struct tc_path p = path_std;
	struct droce_shm_qp_attr a;
	struct ibv_wc wc;
	struct end x, y;
	uint64_t errs = tc_counter(ha, "qp_error");
	unsigned int i;
	uint64_t pkts;

	p.mtu = IBV_MTU_256;
	p.timeout = 20;		/* 4 s: no retry gives up during the test */
	end_make(&x, ha, DROCE_SHM_QPT_RC, 256);
	end_make(&y, hb, DROCE_SHM_QPT_RC, SQ_SIZE);
	end_link(&x, &y, &p);
	exchange(&x, &y, 1, 1000);

	CHECK_EQ_I64(post_recv1(&y, 900, 1), 0);
	CHECK_EQ_I64(post_recv1(&y, 901, 2), 0);
	a = attr_state(DROCE_SHM_QPS_ERR);
	modify_ok(y.qp, &a, DROCE_SHM_QPS_ERR, "peer RTS->ERR");
	for (i = 0; i < 2; i++) {
		wait_wc(y.rcq, &wc);
		check_flush_wc(&wc, 900 + i, y.qp);
	}

	for (i = 0; i < 4; i++)
		CHECK_EQ_I64(post_recv1(&x, 500 + i, i), 0);
	pkts = tc_counter(ha, "req_pkts");
	for (i = 0; i < NB_OUT; i++) {
		bool inl = i % 5 == 4;

		CHECK_EQ_I64(post_send1(&x, &y, i, i % RX_SLOTS, inl ? OUT_INLINE : OUT_LEN,
					(i % 2 ? IBV_SEND_SIGNALED : 0) |
					(inl ? IBV_SEND_INLINE : 0)), 0);
	}
	quiet();
	check_empty(x.scq);
	check_empty(x.rcq);
	CHECK_EQ_U64(tc_qp_state(x.qp), DROCE_SHM_QPS_RTS);
	CHECK(tc_counter(ha, "req_pkts") > pkts);

	a = attr_state(DROCE_SHM_QPS_ERR);
	modify_ok(x.qp, &a, DROCE_SHM_QPS_ERR, "RTS->ERR");
	for (i = 0; i < NB_OUT; i++) {
		droce_test_ctx("outstanding send %u", i);
		wait_wc(x.scq, &wc);
		check_flush_wc(&wc, i, x.qp);
	}
	for (i = 0; i < 4; i++) {
		droce_test_ctx("outstanding receive %u", i);
		wait_wc(x.rcq, &wc);
		check_flush_wc(&wc, 500 + i, x.qp);
	}

	/* Posted in ERR: flushed at once, in order, signaled or not. */
	droce_test_ctx("posted in ERR");
	CHECK_EQ_I64(post_send1(&x, &y, 300, 0, 100, IBV_SEND_SIGNALED), 0);
	CHECK_EQ_I64(post_recv1(&x, 600, 0), 0);
	CHECK_EQ_I64(post_send1(&x, &y, 301, 0, 100, 0), 0);
	CHECK_EQ_I64(post_send1(&x, &y, 302, 0, OUT_INLINE, IBV_SEND_INLINE), 0);
	CHECK_EQ_I64(post_recv1(&x, 601, 0), 0);
	for (i = 0; i < 3; i++) {
		wait_wc(x.scq, &wc);
		check_flush_wc(&wc, 300 + i, x.qp);
	}
	for (i = 0; i < 2; i++) {
		wait_wc(x.rcq, &wc);
		check_flush_wc(&wc, 600 + i, x.qp);
	}
	/* A receive rings no doorbell: alone, it is flushed all the same. */
	quiet();
	CHECK_EQ_I64(post_recv1(&x, 602, 0), 0);
	wait_wc(x.rcq, &wc);
	check_flush_wc(&wc, 602, x.qp);
	quiet();
	check_empty(x.scq);
	check_empty(x.rcq);
	check_empty(y.scq);
	check_empty(y.rcq);
	CHECK_EQ_U64(tc_counter(ha, "qp_error") - errs, 1);
}

/* UC and UD complete sends once out: their flush is of receives and of new posts. */
static void
flush_uc_ud(struct tc_host *ha, struct tc_host *hb)
{
	static const uint8_t types[] = { DROCE_SHM_QPT_UC, DROCE_SHM_QPT_UD };
	struct droce_shm_qp_attr a;
	struct ibv_wc wc;
	struct end x, y;
	unsigned int t, i;

	for (t = 0; t < RTE_DIM(types); t++) {
		droce_test_ctx("%s", type_name(types[t]));
		end_make(&x, ha, types[t], SQ_SIZE);
		end_make(&y, hb, types[t], SQ_SIZE);
		end_link(&x, &y, &path_std);
		exchange(&y, &x, 1, 500);
		for (i = 0; i < 3; i++)
			CHECK_EQ_I64(post_recv1(&x, 10 + i, i), 0);
		a = attr_state(DROCE_SHM_QPS_ERR);
		modify_ok(x.qp, &a, DROCE_SHM_QPS_ERR, "RTS->ERR");
		for (i = 0; i < 3; i++) {
			wait_wc(x.rcq, &wc);
			check_flush_wc(&wc, 10 + i, x.qp);
		}
		CHECK_EQ_I64(post_recv1(&y, 30, 0), 0);
		CHECK_EQ_I64(post_send1(&x, &y, 20, 0, 100, 0), 0);
		CHECK_EQ_I64(post_send1(&x, &y, 21, 0, 100, IBV_SEND_SIGNALED), 0);
		CHECK_EQ_I64(post_recv1(&x, 22, 0), 0);
		for (i = 0; i < 2; i++) {
			wait_wc(x.scq, &wc);
			check_flush_wc(&wc, 20 + i, x.qp);
		}
		wait_wc(x.rcq, &wc);
		check_flush_wc(&wc, 22, x.qp);
		quiet();
		CHECK_EQ_I64(post_recv1(&x, 23, 0), 0);
		wait_wc(x.rcq, &wc);
		check_flush_wc(&wc, 23, x.qp);
		/* Nothing of it reached the peer. */
		quiet();
		check_empty(x.scq);
		check_empty(x.rcq);
		check_empty(y.rcq);
	}
}

/*
 * Modify to RESET discards every outstanding WR without a completion (10.3.1); brought
 * up again, the QP carries only what is posted afterwards.
 */
static void
reset_discards(struct tc_host *ha, struct tc_host *hb)
{
	struct tc_path p = path_std;
	struct droce_shm_qp_attr a;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_sge rsge;
	uint64_t msgs_a = tc_counter(ha, "resp_msgs");
	uint64_t msgs_b = tc_counter(hb, "resp_msgs");
	struct end x, y;
	unsigned int i;

	p.timeout = 20;
	end_make(&x, ha, DROCE_SHM_QPT_RC, SQ_SIZE);
	end_make(&y, hb, DROCE_SHM_QPT_RC, SQ_SIZE);
	end_link(&x, &y, &p);
	a = attr_state(DROCE_SHM_QPS_ERR);
	modify_ok(y.qp, &a, DROCE_SHM_QPS_ERR, "peer RTS->ERR");
	for (i = 0; i < 4; i++)
		CHECK_EQ_I64(post_recv1(&x, 700 + i, i), 0);
	for (i = 0; i < 10; i++)
		CHECK_EQ_I64(post_send1(&x, &y, i, 0, 3000, i % 2 ? IBV_SEND_SIGNALED : 0), 0);
	quiet();
	a = attr_state(DROCE_SHM_QPS_RESET);
	modify_ok(x.qp, &a, DROCE_SHM_QPS_RESET, "RTS->RESET");
	CHECK_EQ_U64(x.qp->view.ctl->sq.cons, x.qp->view.ctl->sq.prod);
	CHECK_EQ_U64(x.qp->view.ctl->rq.cons, x.qp->view.ctl->rq.prod);
	rsge = (struct ibv_sge){ .addr = (uintptr_t)slot_ptr(&x, 0), .length = SLOT,
				 .lkey = x.mr->lkey };
	rwr = (struct ibv_recv_wr){ .wr_id = 799, .sg_list = &rsge, .num_sge = 1 };
	CHECK_EQ_I64(tc_post_recv(x.qp, &rwr, &rbad), EINVAL);
	quiet();
	check_empty(x.scq);
	check_empty(x.rcq);

	a = attr_state(DROCE_SHM_QPS_RESET);
	modify_ok(y.qp, &a, DROCE_SHM_QPS_RESET, "peer ERR->RESET");
	check_empty(y.rcq);
	p.psn_a = PSN_B;
	p.psn_b = PSN_A;
	end_link(&x, &y, &p);
	exchange(&x, &y, 50, 3000);
	/* The receives posted before the reset are gone: this one is used. */
	exchange(&y, &x, 51, 3000);
	quiet();
	check_empty(x.scq);
	check_empty(x.rcq);
	check_empty(y.scq);
	check_empty(y.rcq);
	CHECK_EQ_U64(tc_counter(hb, "resp_msgs") - msgs_b, 1);
	CHECK_EQ_U64(tc_counter(ha, "resp_msgs") - msgs_a, 1);
}

DROCE_TEST(error_flush)
{
	struct tc_host ha, hb;

	pair_open(&ha, &hb);
	flush_rc(&ha, &hb);
	flush_uc_ud(&ha, &hb);
	reset_discards(&ha, &hb);
	tc_pair_close(&ha, &hb);
}

/* ---- 4. Completion notification ---- */

/* Events on the completion channel so far (an eventfd sums its writes); 0 if none. */
static uint64_t
efd_take(const struct tc_cq *cq)
{
	uint64_t v = 0;

	if (read(cq->efd, &v, sizeof(v)) != (ssize_t)sizeof(v))
		return 0;
	return v;
}

/* Waits for an event, then counts whatever else comes within QUIET_MS. */
static uint64_t
efd_wait(const struct tc_cq *cq)
{
	uint64_t n = 0;
	unsigned int ms;

	for (ms = 0; ms < WAIT_MS && n == 0; ms++) {
		n = efd_take(cq);
		if (n == 0)
			usleep(US_PER_MS);
	}
	quiet();
	return n + efd_take(cq);
}

static uint64_t
efd_quiet(const struct tc_cq *cq)
{
	quiet();
	return efd_take(cq);
}

/* Is the CQE at the consumer index written (without consuming it)? */
static bool
cqe_ready(const struct tc_cq *cq)
{
	const struct droce_shm_cqe *e = &cq->view.ring[cq->view.cons & (cq->view.size - 1)];

	return __atomic_load_n(&e->owner, __ATOMIC_ACQUIRE) ==
	       droce_shm_cqe_owner(cq->view.cons, cq->view.log2_size);
}

/* x sends one message to y with flags; y's receive completes. */
static void
notify_msg(struct end *x, struct end *y, uint64_t wr_id, unsigned int flags)
{
	struct ibv_wc wc;

	fill(slot_ptr(x, 0), 300, (uint32_t)wr_id);
	CHECK_EQ_I64(post_recv1(y, wr_id, 0), 0);
	CHECK_EQ_I64(post_send1(x, y, wr_id, 0, 300, flags), 0);
	wait_wc(y->rcq, &wc);
	check_recv_wc(&wc, wr_id, y, x, 0, 0, 300);
}

static void
notify_cases(struct end *x, struct end *y)
{
	struct ibv_send_wr l[3];
	struct ibv_sge sge[3];
	struct ibv_send_wr *bad;
	struct ibv_wc wc[3];
	unsigned int i;
	uint64_t t;

	/* Not armed: no event. */
	droce_test_ctx("%s not armed", type_name(x->qp->view.qp_type));
	CHECK_EQ_U64(efd_take(y->rcq), 0);
	notify_msg(x, y, 1, 0);
	CHECK_EQ_U64(efd_quiet(y->rcq), 0);

	/* One arm, one event; no event for the completion after it. */
	droce_test_ctx("%s armed once", type_name(x->qp->view.qp_type));
	droce_shm_req_notify_cq(&y->rcq->view, false);
	CHECK_EQ_U64(efd_quiet(y->rcq), 0);
	notify_msg(x, y, 2, 0);
	CHECK_EQ_U64(efd_wait(y->rcq), 1);
	notify_msg(x, y, 3, 0);
	CHECK_EQ_U64(efd_quiet(y->rcq), 0);

	/* One arm, three completions: one event. Two arms before a completion: one. */
	droce_test_ctx("%s one arm, three completions", type_name(x->qp->view.qp_type));
	droce_shm_req_notify_cq(&y->rcq->view, false);
	for (i = 0; i < 3; i++) {
		CHECK_EQ_I64(post_recv1(y, 10 + i, i), 0);
		fill(slot_ptr(x, i), 100, 10 + i);
		send_wr_init(&l[i], &sge[i], x, y, 10 + i, i, 100, 0);
		l[i].next = i < 2 ? &l[i + 1] : NULL;
	}
	CHECK_EQ_I64(tc_post_send(x->qp, l, &bad), 0);
	CHECK_EQ_I64(tc_wait(y->rcq, 3, wc, WAIT_MS), 3);
	for (i = 0; i < 3; i++)
		check_recv_wc(&wc[i], 10 + i, y, x, i, i, 100);
	CHECK_EQ_U64(efd_wait(y->rcq), 1);
	droce_shm_req_notify_cq(&y->rcq->view, false);
	droce_shm_req_notify_cq(&y->rcq->view, false);
	notify_msg(x, y, 4, 0);
	CHECK_EQ_U64(efd_wait(y->rcq), 1);
	notify_msg(x, y, 5, 0);
	CHECK_EQ_U64(efd_quiet(y->rcq), 0);

	/* A completion already in the CQ at the arm does not fire it; the next one does. */
	droce_test_ctx("%s armed over an unpolled CQE", type_name(x->qp->view.qp_type));
	CHECK_EQ_I64(post_recv1(y, 6, 0), 0);
	CHECK_EQ_I64(post_send1(x, y, 6, 0, 300, 0), 0);
	for (t = 0; t < WAIT_MS && !cqe_ready(y->rcq); t++)
		usleep(US_PER_MS);
	CHECK(cqe_ready(y->rcq));
	droce_shm_req_notify_cq(&y->rcq->view, false);
	CHECK_EQ_U64(efd_quiet(y->rcq), 0);
	wait_wc(y->rcq, wc);
	check_recv_wc(wc, 6, y, x, 0, 0, 300);
	notify_msg(x, y, 7, 0);
	CHECK_EQ_U64(efd_wait(y->rcq), 1);

	/* Solicited-only: an unsolicited receive does not fire, a solicited one does. */
	droce_test_ctx("%s solicited only", type_name(x->qp->view.qp_type));
	droce_shm_req_notify_cq(&y->rcq->view, true);
	notify_msg(x, y, 8, 0);
	CHECK_EQ_U64(efd_quiet(y->rcq), 0);
	notify_msg(x, y, 9, IBV_SEND_SIGNALED);
	CHECK_EQ_U64(efd_quiet(y->rcq), 0);
	notify_msg(x, y, 10, IBV_SEND_SOLICITED);
	CHECK_EQ_U64(efd_wait(y->rcq), 1);
	notify_msg(x, y, 11, IBV_SEND_SOLICITED);
	CHECK_EQ_U64(efd_quiet(y->rcq), 0);

	/* A successful send completion is never solicited. */
	droce_test_ctx("%s solicited only, send CQ", type_name(x->qp->view.qp_type));
	while (tc_poll(x->scq, 3, wc) > 0)
		;
	droce_shm_req_notify_cq(&x->scq->view, true);
	notify_msg(x, y, 12, IBV_SEND_SIGNALED | IBV_SEND_SOLICITED);
	wait_wc(x->scq, wc);
	check_send_wc(wc, 12, x);
	CHECK_EQ_U64(efd_quiet(x->scq), 0);
	droce_shm_req_notify_cq(&x->scq->view, false);
	CHECK_EQ_I64(post_recv1(y, 13, 0), 0);
	CHECK_EQ_I64(post_send1(x, y, 13, 0, 300, IBV_SEND_SIGNALED), 0);
	wait_wc(x->scq, wc);
	check_send_wc(wc, 13, x);
	CHECK_EQ_U64(efd_wait(x->scq), 1);
	wait_wc(y->rcq, wc);
	check_recv_wc(wc, 13, y, x, 0, 0, 300);
	CHECK_EQ_U64(efd_take(y->rcq), 0);
}

/* Error completions fire a solicited-only request (11.4.2.2): y to ERR with receives. */
static void
notify_error(struct end *y)
{
	struct droce_shm_qp_attr a = attr_state(DROCE_SHM_QPS_ERR);
	struct ibv_wc wc;
	unsigned int i;

	droce_test_ctx("%s solicited only, error completion", type_name(y->qp->view.qp_type));
	for (i = 0; i < 2; i++)
		CHECK_EQ_I64(post_recv1(y, 20 + i, i), 0);
	droce_shm_req_notify_cq(&y->rcq->view, true);
	modify_ok(y->qp, &a, DROCE_SHM_QPS_ERR, "RTS->ERR");
	for (i = 0; i < 2; i++) {
		wait_wc(y->rcq, &wc);
		check_flush_wc(&wc, 20 + i, y->qp);
	}
	CHECK_EQ_U64(efd_wait(y->rcq), 1);
}

DROCE_TEST(notify)
{
	static const uint8_t types[] = { DROCE_SHM_QPT_RC, DROCE_SHM_QPT_UD };
	struct tc_host ha, hb;
	struct end x, y;
	unsigned int t;

	pair_open(&ha, &hb);
	for (t = 0; t < RTE_DIM(types); t++) {
		end_make(&x, &ha, types[t], SQ_SIZE);
		end_make(&y, &hb, types[t], SQ_SIZE);
		end_link(&x, &y, &path_std);
		notify_cases(&x, &y);
		notify_error(&y);
	}
	tc_pair_close(&ha, &hb);
}

/* ---- 5. CQ overrun ---- */

#define SMALL_CQ	4

/*
 * A receive CQ of 4 entries gets a 5th completion: CQ_ERR naming it, polls fail from then
 * on, and droce_engine_cq_error_qps() moves every QP on it to ERR, on either engine of host b.
 * QPs and CQs of b that do not use it carry on.
 */
static void
cq_overrun_case(struct tc_host *ha, struct tc_host *hb)
{
	struct tc_path p = path_std;
	struct end x0, y0, x1, y1, x2, y2, x3, y3;
	struct tc_cq *small, *big, *other;
	struct droce_engine_event ev;
	struct ibv_wc wc[SMALL_CQ + 1];
	unsigned int i;

	p.timeout = 10;		/* y0 stops answering: x0 gives up soon */
	p.retry_cnt = 1;
	small = tc_cq_create(hb, SMALL_CQ);
	big = tc_cq_create(hb, CQ_SIZE);
	other = tc_cq_create(hb, CQ_SIZE);
	end_make(&x0, ha, DROCE_SHM_QPT_RC, SQ_SIZE);
	end_make(&x1, ha, DROCE_SHM_QPT_RC, SQ_SIZE);
	end_make(&x2, ha, DROCE_SHM_QPT_RC, SQ_SIZE);
	end_make(&x3, ha, DROCE_SHM_QPT_RC, SQ_SIZE);
	/* On the small CQ: y0 (engine 0) receives into it, y1 (engine 1) sends into it. */
	end_make_on(&y0, hb, DROCE_SHM_QPT_RC, 0, big, small, NULL, SQ_SIZE);
	end_make_on(&y1, hb, DROCE_SHM_QPT_RC, 1, small, big, NULL, SQ_SIZE);
	/* Not on it: y2 on engine 1, y3 on engine 0. */
	end_make_on(&y2, hb, DROCE_SHM_QPT_RC, 1, other, other, NULL, SQ_SIZE);
	end_make_on(&y3, hb, DROCE_SHM_QPT_RC, 0, other, other, NULL, SQ_SIZE);
	end_link(&x0, &y0, &p);
	end_link(&x1, &y1, &path_std);
	end_link(&x2, &y2, &path_std);
	end_link(&x3, &y3, &path_std);
	exchange(&x1, &y1, 1, 100);
	exchange(&y1, &x1, 2, 100);	/* y1's send completion was the small CQ's first */
	CHECK_EQ_I64(post_recv1(&y1, 30, 1), 0);
	CHECK_EQ_I64(post_recv1(&y1, 31, 2), 0);

	for (i = 0; i < 2 * SMALL_CQ; i++)
		CHECK_EQ_I64(post_recv1(&y0, 10 + i, i), 0);
	for (i = 0; i <= SMALL_CQ; i++)
		CHECK_EQ_I64(post_send1(&x0, &y0, 10 + i, 0, 100, IBV_SEND_SIGNALED), 0);
	CHECK_EQ_I64(tc_event(hb, &ev, WAIT_MS), 1);
	CHECK_EQ_U64(ev.type, DROCE_ENGINE_EVENT_CQ_ERR);
	CHECK_EQ_U64(ev.handle, small->handle);
	CHECK(droce_engine_cq_in_error(small->cq));
	CHECK(tc_poll(small, SMALL_CQ + 1, wc) < 0);
	CHECK(tc_poll(small, 1, wc) < 0);
	CHECK(tc_counter(hb, "cq_overrun") >= 1);
	/* The engine moved the QP that overran it; the control path moves the others. */
	CHECK_EQ_U64(tc_qp_state(y0.qp), DROCE_SHM_QPS_ERR);
	CHECK_EQ_U64(tc_qp_state(y1.qp), DROCE_SHM_QPS_RTS);
	CHECK_EQ_I64(droce_engine_cq_error_qps(small->cq), 2);
	/* 11.6.3.1: each of them reports its local work queue catastrophic error. */
	{
		bool fatal0 = false, fatal1 = false;

		for (i = 0; i < 2; i++) {
			CHECK_EQ_I64(tc_event(hb, &ev, WAIT_MS), 1);
			CHECK_EQ_U64(ev.type, DROCE_ENGINE_EVENT_QP_FATAL);
			CHECK(ev.handle == y0.qp->qpn || ev.handle == y1.qp->qpn);
			fatal0 |= ev.handle == y0.qp->qpn;
			fatal1 |= ev.handle == y1.qp->qpn;
		}
		CHECK(fatal0 && fatal1);
	}
	CHECK_EQ_U64(tc_qp_state(y0.qp), DROCE_SHM_QPS_ERR);
	CHECK_EQ_U64(tc_qp_state(y1.qp), DROCE_SHM_QPS_ERR);
	CHECK_EQ_U64(tc_qp_state(y2.qp), DROCE_SHM_QPS_RTS);
	CHECK_EQ_U64(tc_qp_state(y3.qp), DROCE_SHM_QPS_RTS);
	/* y1's receives are flushed into its receive CQ, which works. */
	for (i = 0; i < 2; i++) {
		wait_wc(big, wc);
		check_flush_wc(wc, 30 + i, y1.qp);
	}
	CHECK(tc_poll(small, 1, wc) < 0);
	CHECK_EQ_I64(tc_event(hb, &ev, QUIET_MS), 0);

	exchange(&x2, &y2, 3, 4000);
	exchange(&y2, &x2, 4, 4000);
	exchange(&x3, &y3, 5, 4000);
	exchange(&y3, &x3, 6, 4000);
}

DROCE_TEST(cq_overrun)
{
	struct tc_host ha, hb;

	pair_open(&ha, &hb);
	cq_overrun_case(&ha, &hb);
	tc_pair_close(&ha, &hb);
}

/* ---- 6. Send queue drain ---- */

#define SQD_MSGS	32
/* RC: 16 packets at MTU 256; SQD_MSGS of them are twice the window. */
#define SQD_LEN		4096
/*
 * UC: 12 packets, while the engine sends 16 per QP and loop pass, and the SQD modify is
 * taken between passes: it finds a message half sent (unless all are out already).
 */
#define SQD_LEN_UC	3000
#define SQD_MSGS_UC	56
#define SQD_LEN_UD	1000
#define SQD_MSGS_UD	8
#define SQD_MORE	4

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * US_PER_S + (uint64_t)ts.tv_nsec / NS_PER_US;
}

/* Spins (no sleep: the moment matters) until counter name of h exceeds base. */
static void
wait_counter_above(const struct tc_host *h, const char *name, uint64_t base)
{
	uint64_t end = now_us() + (uint64_t)WAIT_MS * US_PER_MS;

	while (tc_counter(h, name) == base && now_us() < end)
		;
	CHECK(tc_counter(h, name) > base);
}

static struct droce_shm_qp_attr
attr_sqd_notify(void)
{
	struct droce_shm_qp_attr a = attr_state(DROCE_SHM_QPS_SQD);

	a.mask |= DROCE_SHM_QP_EN_SQD_ASYNC_NOTIFY;
	a.en_sqd_async_notify = 1;
	return a;
}

static void
wait_drained(struct tc_host *h, const struct tc_qp *qp)
{
	struct droce_engine_event ev;

	CHECK_EQ_I64(tc_event(h, &ev, WAIT_MS), 1);
	CHECK_EQ_U64(ev.type, DROCE_ENGINE_EVENT_SQ_DRAINED);
	CHECK_EQ_U64(ev.handle, qp->qpn);
	/* Once. */
	CHECK_EQ_I64(tc_event(h, &ev, QUIET_MS), 0);
}

/*
 * x posts its messages and goes to SQD: SQ_DRAINED once every message that was started
 * is acknowledged (RC) or out (UC, UD), and only then. Nothing new starts in SQD, posted
 * before or during it; SQD -> RTS sends the rest, in order.
 *
 * RC makes "started" certain: y has no receive yet, so x's first message meets RNR NAKs
 * while the window fills with others; the drain waits for the receives and then for the
 * ACKs of every started message, and the messages beyond the window stay unsent.
 */
static void
sqd_case(struct tc_host *ha, struct tc_host *hb, uint8_t type)
{
	bool rc = type == DROCE_SHM_QPT_RC;
	unsigned int i, k, n = rc ? SQD_MSGS : type == DROCE_SHM_QPT_UC ? SQD_MSGS_UC :
				    SQD_MSGS_UD;
	uint32_t len = rc ? SQD_LEN : type == DROCE_SHM_QPT_UC ? SQD_LEN_UC : SQD_LEN_UD;
	struct tc_path p = path_std;
	struct droce_shm_qp_attr a;
	struct droce_engine_event ev;
	uint64_t pkts, msgs;
	struct ibv_wc wc;
	struct end x, y;

	p.mtu = IBV_MTU_256;
	end_make(&x, ha, type, SQ_SIZE);
	end_make(&y, hb, type, SQ_SIZE);
	end_link(&x, &y, &p);

	/* Nothing outstanding: drained at once. */
	a = attr_sqd_notify();
	modify_ok(x.qp, &a, DROCE_SHM_QPS_SQD, "RTS->SQD, send queue empty");
	wait_drained(ha, x.qp);
	a = attr_state(DROCE_SHM_QPS_RTS);
	modify_ok(x.qp, &a, DROCE_SHM_QPS_RTS, "SQD->RTS");

	droce_test_ctx("%s SQD with sends outstanding", type_name(type));
	/* Started: RC's first message was refused, UC's and UD's first packet is out. */
	pkts = tc_counter(rc ? hb : ha, rc ? "nak_rnr_sent" : "req_pkts");
	for (i = 0; i < n + SQD_MORE; i++) {
		if (!rc)
			CHECK_EQ_I64(post_recv1(&y, i, i), 0);
		fill(slot_ptr(&x, i), len, 1000 + i);
	}
	for (i = 0; i < n; i++)
		CHECK_EQ_I64(post_send1(&x, &y, i, i, len, IBV_SEND_SIGNALED), 0);
	/* UC and UD: modify as soon as the first packet is out, while the rest go. */
	wait_counter_above(rc ? hb : ha, rc ? "nak_rnr_sent" : "req_pkts", pkts);
	a = attr_sqd_notify();
	modify_ok(x.qp, &a, DROCE_SHM_QPS_SQD, "RTS->SQD, sends outstanding");
	if (rc) {
		/* Started and not acknowledged: not drained. */
		CHECK_EQ_I64(tc_event(ha, &ev, QUIET_MS), 0);
		check_empty(x.scq);
		for (i = 0; i < n + SQD_MORE; i++)
			CHECK_EQ_I64(post_recv1(&y, i, i), 0);
	}
	wait_drained(ha, x.qp);
	/* Drained: every message started is complete on both sides, nothing else. */
	for (k = 0; tc_poll(x.scq, 1, &wc) == 1; k++)
		check_send_wc(&wc, k, &x);
	CHECK(k >= 1 && k <= n);
	/* RC: the messages beyond the window were never started. */
	if (rc)
		CHECK(k < n);
	for (i = 0; i < k; i++) {
		wait_wc(y.rcq, &wc);
		check_recv_wc(&wc, i, &y, &x, i, i, len);
	}
	pkts = tc_counter(ha, "req_pkts");
	msgs = tc_counter(hb, "resp_msgs");

	for (i = n; i < n + SQD_MORE; i++)
		CHECK_EQ_I64(post_send1(&x, &y, i, i, len, IBV_SEND_SIGNALED), 0);
	quiet();
	check_empty(x.scq);
	check_empty(y.rcq);
	CHECK_EQ_U64(tc_counter(ha, "req_pkts"), pkts);
	CHECK_EQ_U64(tc_counter(hb, "resp_msgs"), msgs);
	CHECK_EQ_U64(tc_qp_state(x.qp), DROCE_SHM_QPS_SQD);

	a = attr_state(DROCE_SHM_QPS_RTS);
	modify_ok(x.qp, &a, DROCE_SHM_QPS_RTS, "SQD->RTS");
	for (i = k; i < n + SQD_MORE; i++) {
		droce_test_ctx("%s after SQD: message %u", type_name(type), i);
		wait_wc(y.rcq, &wc);
		check_recv_wc(&wc, i, &y, &x, i, i, len);
		wait_wc(x.scq, &wc);
		check_send_wc(&wc, i, &x);
	}
	quiet();
	check_empty(x.scq);
	check_empty(y.rcq);
	CHECK_EQ_I64(tc_event(ha, &ev, 0), 0);
}

DROCE_TEST(sqd)
{
	static const uint8_t types[] = {
		DROCE_SHM_QPT_RC, DROCE_SHM_QPT_UC, DROCE_SHM_QPT_UD,
	};
	struct tc_host ha, hb;
	unsigned int t;

	pair_open(&ha, &hb);
	for (t = 0; t < RTE_DIM(types); t++)
		sqd_case(&ha, &hb, types[t]);
	tc_pair_close(&ha, &hb);
}
