/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory windows (IB 10.6.7) between two engines joined by net_ring. Host b's MR has no
 * remote rights of its own: every remote access goes through a window bound over part of
 * it. A type 2 window grants exactly its range and rights to the QP that bound it; it is
 * refused after a local or a remote invalidation, a dealloc, the MR's deregistration, to
 * another QP, with a stale key, outside its range. A type 1 window takes a new key at
 * every bind and cannot be invalidated. Bad binds complete with MW_BIND_ERR. Binds and
 * invalidations run once, in send queue order, through loss and retransmission.
 */
#include <endian.h>
#include <string.h>

#include "droce_test.h"
#include "engine_client.h"

#define DST_LEN		(1u << 16)
#define SRC_LEN		(1u << 16)
#define WIN_OFF		4096
#define WIN_LEN		8192
#define FILL		0xEE
#define WAIT_MS		5000
#define REMOTE_ALL	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

#define WR_MW_OPS	((1u << DROCE_SHM_WR_RDMA_WRITE) | (1u << DROCE_SHM_WR_RDMA_READ) | \
			 (1u << DROCE_SHM_WR_ATOMIC_FETCH_AND_ADD) | \
			 (1u << DROCE_SHM_WR_SEND_WITH_INV) | (1u << DROCE_SHM_WR_BIND_MW) | \
			 (1u << DROCE_SHM_WR_LOCAL_INV))

struct env {
	struct tc_host a, b;
	struct tc_cq *ca, *cb;
	struct tc_qp *qa, *qb;
	struct tc_qp *qa2, *qb2;	/* a second connection, for the wrong-QP case */
	struct tc_mr *src;		/* a: what is written, where READs land */
	struct tc_mr *dst;		/* b: LOCAL_WRITE | MW_BIND, nothing remote */
	struct ibv_mr dst_mr;		/* dst as a window bind names it */
	struct ibv_mw mw;		/* b's window */
};

static void
env_open(struct env *env, const char *fault_a, const char *fault_b, bool second)
{
	struct tc_path path = { .mtu = IBV_MTU_1024, .timeout = 12, .retry_cnt = 7,
				.rnr_retry = 7, .min_rnr_timer = 1, .psn_a = 0xFFFFF8,
				.psn_b = 0xFFFFF0, .rd_atomic = 4,
				.access_a = IBV_ACCESS_LOCAL_WRITE | REMOTE_ALL,
				.access_b = IBV_ACCESS_LOCAL_WRITE | REMOTE_ALL };
	struct tc_qp_init in = { .type = DROCE_SHM_QPT_RC, .sq_size = 256, .rq_size = 256,
				 .max_sge = 2, .max_inline = 64 };
	uint32_t i;

	memset(env, 0, sizeof(*env));
	if (fault_a != NULL || fault_b != NULL)
		tc_pair_open_faults(&env->a, &env->b, 1, 1, fault_a, fault_b);
	else
		tc_pair_open(&env->a, &env->b, 1, 1);
	env->ca = tc_cq_create(&env->a, 1024);
	env->cb = tc_cq_create(&env->b, 1024);
	in.scq = in.rcq = env->ca;
	env->qa = tc_qp_create(&env->a, &in);
	if (second)
		env->qa2 = tc_qp_create(&env->a, &in);
	in.scq = in.rcq = env->cb;
	env->qb = tc_qp_create(&env->b, &in);
	if (second)
		env->qb2 = tc_qp_create(&env->b, &in);
	env->qa->view.supported_wr |= WR_MW_OPS;
	env->qb->view.supported_wr |= WR_MW_OPS;
	env->src = tc_mr_reg(&env->a, SRC_LEN, IBV_ACCESS_LOCAL_WRITE);
	env->dst = tc_mr_reg(&env->b, DST_LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	for (i = 0; i < SRC_LEN; i++)
		env->src->buf[i] = (uint8_t)(i * 7 + 3);
	memset(env->dst->buf, FILL, DST_LEN);
	env->dst_mr.addr = env->dst->buf;
	env->dst_mr.length = DST_LEN;
	env->dst_mr.lkey = env->dst->lkey;
	env->dst_mr.rkey = env->dst->rkey;
	tc_connect(env->qa, env->qb, &path);
	if (second) {
		env->qa2->view.supported_wr |= WR_MW_OPS;
		tc_connect(env->qa2, env->qb2, &path);
	}
}

static uint64_t
dst_addr(const struct env *env, uint64_t off)
{
	return (uintptr_t)env->dst->buf + off;
}

/* A BIND_MW WR on qp: mw over mr[addr, addr + len) with key rkey and rights access. */
static int
post_bind(struct tc_qp *qp, uint64_t wr_id, struct ibv_mw *mw, uint32_t rkey, struct ibv_mr *mr,
	  uint64_t addr, uint64_t len, unsigned int access)
{
	struct ibv_send_wr wr = { .wr_id = wr_id, .opcode = IBV_WR_BIND_MW,
				  .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad;

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){ .mr = mr, .addr = addr, .length = len,
							  .mw_access_flags = access };
	return tc_post_send(qp, &wr, &bad);
}

static int
post_local_inv(struct tc_qp *qp, uint64_t wr_id, uint32_t rkey)
{
	struct ibv_send_wr wr = { .wr_id = wr_id, .opcode = IBV_WR_LOCAL_INV,
				  .send_flags = IBV_SEND_SIGNALED, .invalidate_rkey = rkey };
	struct ibv_send_wr *bad;

	return tc_post_send(qp, &wr, &bad);
}

/* One remote operation of a's QP qp on b's window: op with src[soff, soff + len). */
static int
post_remote(struct env *env, struct tc_qp *qp, uint64_t wr_id, enum ibv_wr_opcode op,
	    uint64_t soff, uint32_t len, uint64_t raddr, uint32_t rkey)
{
	struct ibv_send_wr wr = { .wr_id = wr_id, .opcode = op, .send_flags = IBV_SEND_SIGNALED };

	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD)
		wr.wr.atomic = (typeof(wr.wr.atomic)){ .remote_addr = raddr, .rkey = rkey,
						       .compare_add = 5 };
	else
		wr.wr.rdma = (typeof(wr.wr.rdma)){ .remote_addr = raddr, .rkey = rkey };
	return tc_post_one(qp, &wr, env->src, soff, len);
}

/* The next completion of cq is wr_id with status (and opcode, when it succeeded). */
static void
expect_wc(struct tc_cq *cq, uint64_t wr_id, enum ibv_wc_status status, enum ibv_wc_opcode op)
{
	struct ibv_wc wc;

	CHECK_EQ_I64(tc_wait(cq, 1, &wc, WAIT_MS), 1);
	CHECK_EQ_U64(wc.wr_id, wr_id);
	CHECK_EQ_U64(wc.status, status);
	if (status == IBV_WC_SUCCESS)
		CHECK_EQ_U64(wc.opcode, op);
}

/* b binds a new type 2 window over [WIN_OFF, WIN_OFF + WIN_LEN) with access: its key. */
static uint32_t
bind_type2(struct env *env, unsigned int access)
{
	uint32_t key;

	tc_mw_alloc(&env->b, IBV_MW_TYPE_2, &env->mw);
	key = ibv_inc_rkey(env->mw.rkey);
	CHECK_EQ_I64(post_bind(env->qb, 100, &env->mw, key, &env->dst_mr, dst_addr(env, WIN_OFF),
			       WIN_LEN, access), 0);
	expect_wc(env->cb, 100, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	return key;
}

DROCE_TEST(type2_window_grants_its_range)
{
	struct env env;
	uint32_t key;
	uint64_t v;

	env_open(&env, NULL, NULL, false);
	key = bind_type2(&env, REMOTE_ALL);
	/* WRITE across the window's last MTU boundary, up to its last byte */
	CHECK_EQ_I64(post_remote(&env, env.qa, 1, IBV_WR_RDMA_WRITE, 0, 3000,
				 dst_addr(&env, WIN_OFF + WIN_LEN - 3000), key), 0);
	expect_wc(env.ca, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_MEM(env.dst->buf + WIN_OFF + WIN_LEN - 3000, env.src->buf, 3000);
	CHECK_EQ_I64(tc_first_not(env.dst->buf, 0, WIN_OFF + WIN_LEN - 3000, FILL), -1);
	CHECK_EQ_I64(tc_first_not(env.dst->buf, WIN_OFF + WIN_LEN, DST_LEN, FILL), -1);
	/* READ from its first byte */
	env.dst->buf[WIN_OFF] = 0x5A;
	CHECK_EQ_I64(post_remote(&env, env.qa, 2, IBV_WR_RDMA_READ, 8192, 100,
				 dst_addr(&env, WIN_OFF), key), 0);
	expect_wc(env.ca, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	CHECK_MEM(env.src->buf + 8192, env.dst->buf + WIN_OFF, 100);
	/* an atomic inside */
	v = 40;
	memcpy(env.dst->buf + WIN_OFF + 64, &v, 8);
	CHECK_EQ_I64(post_remote(&env, env.qa, 3, IBV_WR_ATOMIC_FETCH_AND_ADD, 16384, 8,
				 dst_addr(&env, WIN_OFF + 64), key), 0);
	expect_wc(env.ca, 3, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD);
	memcpy(&v, env.dst->buf + WIN_OFF + 64, 8);
	CHECK_EQ_U64(v, 45);
	memcpy(&v, env.src->buf + 16384, 8);
	CHECK_EQ_U64(v, 40);
	CHECK_EQ_U64(tc_counter(&env.b, "req_local_ops"), 1);
	CHECK_EQ_I64(tc_mw_dealloc(&env.b, &env.mw), 0);
	tc_pair_close(&env.a, &env.b);
}

enum refusal {
	REF_OUTSIDE,		/* a range of the MR outside the window */
	REF_STALE_KEY,		/* the window's key as allocated, not as bound */
	REF_MR_KEY,		/* the MR's own key: the MR has no remote rights */
	REF_RIGHTS,		/* a READ through a write-only window */
	REF_LOCAL_INV,		/* after LOCAL_INV */
	REF_REMOTE_INV,		/* after a Send with Invalidate */
	REF_DEALLOC,		/* after ibv_dealloc_mw */
	REF_MR_GONE,		/* after the MR under it was deregistered */
	REF_OTHER_QP,		/* through another QP of the same PD (type 2 is the binder's) */
	REF_TYPE1_REBOUND,	/* a type 1 window's key before its last bind */
};

static const char *const refusal_names[] = {
	"outside the window", "stale key", "MR key", "rights", "local invalidate",
	"remote invalidate", "dealloc", "MR deregistered", "other QP", "type 1 rebound",
};

/*
 * One refused access: a's WRITE (or READ) completes with REM_ACCESS_ERR, both QPs go to
 * ERR, and no byte of b's MR moved.
 */
static void
refused(enum refusal r)
{
	enum ibv_wr_opcode op = r == REF_RIGHTS ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
	struct env env;
	struct tc_qp *via;
	uint64_t raddr;
	uint32_t key;

	droce_test_ctx("%s", refusal_names[r]);
	env_open(&env, NULL, NULL, r == REF_OTHER_QP);
	via = r == REF_OTHER_QP ? env.qa2 : env.qa;
	raddr = dst_addr(&env, WIN_OFF + 64);
	if (r == REF_TYPE1_REBOUND) {
		tc_mw_alloc(&env.b, IBV_MW_TYPE_1, &env.mw);
		key = ibv_inc_rkey(env.mw.rkey);
		CHECK_EQ_I64(post_bind(env.qb, 100, &env.mw, key,
				       &env.dst_mr, raddr, 256, REMOTE_ALL), 0);
		expect_wc(env.cb, 100, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
		env.mw.rkey = key;
		/* bound again over the same range: the first key is gone */
		CHECK_EQ_I64(post_bind(env.qb, 101, &env.mw, ibv_inc_rkey(key),
				       &env.dst_mr, raddr, 256, REMOTE_ALL), 0);
		expect_wc(env.cb, 101, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	} else {
		key = bind_type2(&env, r == REF_RIGHTS ? IBV_ACCESS_REMOTE_WRITE :
								 REMOTE_ALL);
	}
	switch (r) {
	case REF_OUTSIDE:
		raddr = dst_addr(&env, WIN_OFF + WIN_LEN - 16);	/* 16 in, 16 out */
		break;
	case REF_STALE_KEY:
		key = env.mw.rkey;
		break;
	case REF_MR_KEY:
		key = env.dst->rkey;
		break;
	case REF_LOCAL_INV:
		CHECK_EQ_I64(post_local_inv(env.qb, 102, key), 0);
		expect_wc(env.cb, 102, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV);
		break;
	case REF_REMOTE_INV: {
		struct ibv_send_wr wr = { .wr_id = 9, .opcode = IBV_WR_SEND_WITH_INV,
					  .send_flags = IBV_SEND_SIGNALED, .invalidate_rkey = key };
		struct ibv_wc wc;

		CHECK_EQ_I64(tc_recv(env.qb, 500, env.dst, 0, 64), 0);
		CHECK_EQ_I64(tc_post_one(env.qa, &wr, env.src, 0, 24), 0);
		expect_wc(env.ca, 9, IBV_WC_SUCCESS, IBV_WC_SEND);
		CHECK_EQ_I64(tc_wait(env.cb, 1, &wc, WAIT_MS), 1);
		CHECK_EQ_U64(wc.wr_id, 500);
		CHECK_EQ_U64(wc.status, IBV_WC_SUCCESS);
		CHECK_EQ_U64(wc.opcode, IBV_WC_RECV);
		CHECK_EQ_U64(wc.byte_len, 24);
		CHECK_EQ_U64(wc.wc_flags & IBV_WC_WITH_INV, IBV_WC_WITH_INV);
		CHECK_EQ_U64(wc.invalidated_rkey, key);
		CHECK_EQ_U64(tc_counter(&env.b, "resp_invalidate"), 1);
		memset(env.dst->buf, FILL, 64);
		break;
	}
	case REF_DEALLOC:
		CHECK_EQ_I64(tc_mw_dealloc(&env.b, &env.mw), 0);
		/* a second dealloc finds nothing */
		CHECK_EQ_I64(tc_mw_dealloc(&env.b, &env.mw), -EINVAL);
		break;
	case REF_MR_GONE:
		CHECK_EQ_I64(tc_mr_dereg(&env.b, env.dst), 0);
		break;
	default:
		break;
	}
	CHECK_EQ_I64(post_remote(&env, via, 1, op, 0, 32, raddr, key), 0);
	expect_wc(env.ca, 1, IBV_WC_REM_ACCESS_ERR,
		  op == IBV_WR_RDMA_READ ? IBV_WC_RDMA_READ : IBV_WC_RDMA_WRITE);
	CHECK_EQ_U64(tc_qp_state(via), DROCE_SHM_QPS_ERR);
	CHECK_EQ_I64(tc_first_not(env.dst->buf, 0, DST_LEN, FILL), -1);
	CHECK_EQ_U64(tc_counter(&env.b, op == IBV_WR_RDMA_READ ? "resp_err_read_access" :
								    "resp_err_write_access"), 1);
	tc_pair_close(&env.a, &env.b);
}

DROCE_TEST(window_refusals)
{
	unsigned int r;

	for (r = 0; r <= REF_TYPE1_REBOUND; r++)
		refused((enum refusal)r);
}

/*
 * LOCAL_INV frees a type 2 window, which binds again with a new key; invalidating a free
 * window fails (LOC_QP_OP_ERR), and so does invalidating a type 1 window or an MR.
 */
DROCE_TEST(local_invalidate)
{
	static const char *const what[] = { "free window", "type 1 window", "MR" };
	unsigned int k;

	for (k = 0; k < 3; k++) {
		struct env env;
		struct ibv_mw mw1;
		uint32_t key, bad;

		droce_test_ctx("%s", what[k]);
		env_open(&env, NULL, NULL, false);
		key = bind_type2(&env, REMOTE_ALL);
		CHECK_EQ_I64(post_local_inv(env.qb, 1, key), 0);
		expect_wc(env.cb, 1, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV);
		key = ibv_inc_rkey(key);
		CHECK_EQ_I64(post_bind(env.qb, 2, &env.mw, key, &env.dst_mr,
				       dst_addr(&env, 0), 128, IBV_ACCESS_REMOTE_WRITE), 0);
		expect_wc(env.cb, 2, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
		CHECK_EQ_I64(post_remote(&env, env.qa, 3, IBV_WR_RDMA_WRITE, 0, 128,
					 dst_addr(&env, 0), key), 0);
		expect_wc(env.ca, 3, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
		CHECK_MEM(env.dst->buf, env.src->buf, 128);
		CHECK_EQ_I64(post_local_inv(env.qb, 4, key), 0);
		expect_wc(env.cb, 4, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV);
		if (k == 0) {
			bad = key;
		} else if (k == 1) {
			tc_mw_alloc(&env.b, IBV_MW_TYPE_1, &mw1);
			bad = ibv_inc_rkey(mw1.rkey);
			CHECK_EQ_I64(post_bind(env.qb, 5, &mw1, bad, &env.dst_mr,
					       dst_addr(&env, 0), 128, IBV_ACCESS_REMOTE_WRITE), 0);
			expect_wc(env.cb, 5, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
		} else {
			bad = env.dst->lkey;
		}
		CHECK_EQ_I64(post_local_inv(env.qb, 6, bad), 0);
		CHECK_EQ_I64(tc_send(env.qb, 7, env.dst, 0, 4, IBV_SEND_SIGNALED), 0);
		expect_wc(env.cb, 6, IBV_WC_LOC_QP_OP_ERR, IBV_WC_LOCAL_INV);
		expect_wc(env.cb, 7, IBV_WC_WR_FLUSH_ERR, IBV_WC_SEND);
		CHECK_EQ_U64(tc_qp_state(env.qb), DROCE_SHM_QPS_ERR);
		tc_pair_close(&env.a, &env.b);
	}
}

/*
 * A Send with Invalidate whose key is no window bound to the receiving QP: invalid
 * request for the sender, the receive completes in error (both QPs in ERR).
 */
DROCE_TEST(remote_invalidate_refused)
{
	struct ibv_send_wr wr = { .wr_id = 9, .opcode = IBV_WR_SEND_WITH_INV,
				  .send_flags = IBV_SEND_SIGNALED };
	struct env env;
	uint32_t key;

	env_open(&env, NULL, NULL, false);
	key = bind_type2(&env, REMOTE_ALL);
	wr.invalidate_rkey = ibv_inc_rkey(key);		/* the window's index, not its key */
	CHECK_EQ_I64(tc_recv(env.qb, 500, env.dst, 0, 64), 0);
	CHECK_EQ_I64(tc_post_one(env.qa, &wr, env.src, 0, 24), 0);
	expect_wc(env.ca, 9, IBV_WC_REM_INV_REQ_ERR, IBV_WC_SEND);
	expect_wc(env.cb, 500, IBV_WC_REM_INV_REQ_ERR, IBV_WC_RECV);
	CHECK_EQ_U64(tc_counter(&env.b, "resp_err_invalidate"), 1);
	CHECK_EQ_U64(tc_qp_state(env.qa), DROCE_SHM_QPS_ERR);
	CHECK_EQ_U64(tc_qp_state(env.qb), DROCE_SHM_QPS_ERR);
	tc_pair_close(&env.a, &env.b);
}

/* A type 1 window: each bind a new key and range; length 0 unbinds it. */
DROCE_TEST(type1_rebind)
{
	struct env env;
	uint32_t k1, k2;

	env_open(&env, NULL, NULL, false);
	tc_mw_alloc(&env.b, IBV_MW_TYPE_1, &env.mw);
	k1 = ibv_inc_rkey(env.mw.rkey);
	CHECK_EQ_I64(post_bind(env.qb, 1, &env.mw, k1, &env.dst_mr, dst_addr(&env, 0), 1024,
			       IBV_ACCESS_REMOTE_WRITE), 0);
	expect_wc(env.cb, 1, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	CHECK_EQ_I64(post_remote(&env, env.qa, 2, IBV_WR_RDMA_WRITE, 0, 1024, dst_addr(&env, 0),
				 k1), 0);
	expect_wc(env.ca, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	k2 = ibv_inc_rkey(k1);
	CHECK_EQ_I64(post_bind(env.qb, 3, &env.mw, k2, &env.dst_mr, dst_addr(&env, 30000), 2048,
			       IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ), 0);
	expect_wc(env.cb, 3, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	CHECK_EQ_I64(post_remote(&env, env.qa, 4, IBV_WR_RDMA_WRITE, 1024, 2048,
				 dst_addr(&env, 30000), k2), 0);
	expect_wc(env.ca, 4, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_EQ_I64(post_remote(&env, env.qa, 5, IBV_WR_RDMA_READ, 40000, 2048,
				 dst_addr(&env, 30000), k2), 0);
	expect_wc(env.ca, 5, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	CHECK_MEM(env.dst->buf, env.src->buf, 1024);
	CHECK_MEM(env.dst->buf + 30000, env.src->buf + 1024, 2048);
	CHECK_MEM(env.src->buf + 40000, env.src->buf + 1024, 2048);
	/* unbound: length 0, no MR */
	CHECK_EQ_I64(post_bind(env.qb, 6, &env.mw, ibv_inc_rkey(k2), NULL, 0, 0, 0), 0);
	expect_wc(env.cb, 6, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	CHECK_EQ_I64(post_remote(&env, env.qa, 7, IBV_WR_RDMA_WRITE, 0, 8, dst_addr(&env, 30000),
				 k2), 0);
	expect_wc(env.ca, 7, IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_WRITE);
	tc_pair_close(&env.a, &env.b);
}

enum bad_bind {
	BIND_NO_BIND_RIGHT,	/* an MR registered without IBV_ACCESS_MW_BIND (C10-73) */
	BIND_PAST_MR,		/* a range beyond the MR (C10-75) */
	BIND_WRITE_ON_RO,	/* a writable window on an MR without local write (C10-74) */
	BIND_TWICE,		/* a type 2 window bound while bound (o10-37.2.30) */
	BIND_ZERO_TYPE2,	/* a type 2 window bound with length 0 (o10-37.2.40) */
	BIND_ZERO_BASED,	/* IBV_ACCESS_ZERO_BASED: not offered */
	BIND_NO_WINDOW,		/* a key that is no window (the MR's) */
};

static const char *const bad_bind_names[] = {
	"MR without MW_BIND", "past the MR", "writable on read-only MR", "bound twice",
	"type 2 zero length", "zero based", "no window",
};

/* Each refused bind: MW_BIND_ERR, the next WQE flushed, the QP in ERR. */
DROCE_TEST(bind_errors)
{
	unsigned int k;

	for (k = 0; k <= BIND_NO_WINDOW; k++) {
		struct ibv_mr plain = { 0 }, ro = { 0 };
		struct tc_mr *p, *r;
		struct env env;
		struct ibv_mr *mr;
		uint64_t addr, len = 256;
		unsigned int access = IBV_ACCESS_REMOTE_WRITE;
		uint32_t key;

		droce_test_ctx("%s", bad_bind_names[k]);
		env_open(&env, NULL, NULL, false);
		p = tc_mr_reg(&env.b, 4096, IBV_ACCESS_LOCAL_WRITE);
		r = tc_mr_reg(&env.b, 4096, IBV_ACCESS_MW_BIND);
		plain.lkey = p->lkey;
		ro.lkey = r->lkey;
		tc_mw_alloc(&env.b, IBV_MW_TYPE_2, &env.mw);
		key = ibv_inc_rkey(env.mw.rkey);
		mr = &env.dst_mr;
		addr = dst_addr(&env, 0);
		switch ((enum bad_bind)k) {
		case BIND_NO_BIND_RIGHT:
			mr = &plain;
			addr = (uintptr_t)p->buf;
			break;
		case BIND_PAST_MR:
			addr = dst_addr(&env, DST_LEN - 128);
			break;
		case BIND_WRITE_ON_RO:
			mr = &ro;
			addr = (uintptr_t)r->buf;
			break;
		case BIND_TWICE:
			CHECK_EQ_I64(post_bind(env.qb, 1, &env.mw, key, mr, addr, len, access), 0);
			expect_wc(env.cb, 1, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
			key = ibv_inc_rkey(key);
			break;
		case BIND_ZERO_TYPE2:
			len = 0;
			break;
		case BIND_ZERO_BASED:
			access |= IBV_ACCESS_ZERO_BASED;
			break;
		case BIND_NO_WINDOW:
			env.mw.rkey = env.dst->rkey;
			break;
		}
		CHECK_EQ_I64(post_bind(env.qb, 2, &env.mw, key, mr, addr, len, access), 0);
		CHECK_EQ_I64(tc_send(env.qb, 3, env.dst, 0, 4, IBV_SEND_SIGNALED), 0);
		expect_wc(env.cb, 2, IBV_WC_MW_BIND_ERR, IBV_WC_BIND_MW);
		expect_wc(env.cb, 3, IBV_WC_WR_FLUSH_ERR, IBV_WC_SEND);
		CHECK_EQ_U64(tc_qp_state(env.qb), DROCE_SHM_QPS_ERR);
		tc_pair_close(&env.a, &env.b);
	}
}

/*
 * b sends to a while it binds and invalidates a type 2 window between its SENDs, with
 * packets lost both ways: every WQE completes in order, and each bind and invalidation
 * ran exactly once (one more run of either would fail: a bound window binds no more, a
 * free one is not invalidated), however often go-back-N passed over them.
 */
#define ORDER_ROUNDS	40

DROCE_TEST(local_ops_in_order_through_loss)
{
	struct env env;
	struct ibv_wc wc[4 * ORDER_ROUNDS];
	uint32_t key, i;
	int n = 0;

	tc_next_pair_early();
	env_open(&env, "seed=21,drop=80000", "seed=22,drop=80000", false);
	tc_mw_alloc(&env.b, IBV_MW_TYPE_2, &env.mw);
	key = env.mw.rkey;
	for (i = 0; i < 2 * ORDER_ROUNDS; i++)
		CHECK_EQ_I64(tc_recv(env.qa, 1000 + i, env.src, (i % 16) * 4096, 4096), 0);
	for (i = 0; i < ORDER_ROUNDS; i++) {
		key = ibv_inc_rkey(key);
		CHECK_EQ_I64(tc_send(env.qb, 4 * i, env.dst, 0, 1500, IBV_SEND_SIGNALED), 0);
		CHECK_EQ_I64(post_bind(env.qb, 4 * i + 1, &env.mw, key, &env.dst_mr,
				       dst_addr(&env, 0), 4096, IBV_ACCESS_REMOTE_WRITE), 0);
		CHECK_EQ_I64(tc_send(env.qb, 4 * i + 2, env.dst, 4096, 3000, IBV_SEND_SIGNALED),
			     0);
		CHECK_EQ_I64(post_local_inv(env.qb, 4 * i + 3, key), 0);
	}
	while (n < 4 * ORDER_ROUNDS) {
		int got = tc_wait(env.cb, 4 * ORDER_ROUNDS - n, wc + n, 4 * WAIT_MS);

		CHECK(got > 0);
		n += got;
	}
	for (i = 0; i < 4 * ORDER_ROUNDS; i++) {
		static const enum ibv_wc_opcode ops[] = { IBV_WC_SEND, IBV_WC_BIND_MW, IBV_WC_SEND,
							  IBV_WC_LOCAL_INV };

		droce_test_ctx("completion %u", i);
		CHECK_EQ_U64(wc[i].wr_id, i);
		CHECK_EQ_U64(wc[i].status, IBV_WC_SUCCESS);
		CHECK_EQ_U64(wc[i].opcode, ops[i % 4]);
	}
	CHECK_EQ_I64(tc_wait(env.ca, 2 * ORDER_ROUNDS, wc, 4 * WAIT_MS), 2 * ORDER_ROUNDS);
	CHECK_EQ_U64(tc_counter(&env.b, "req_local_ops"), 2 * ORDER_ROUNDS);
	CHECK(tc_counter(&env.b, "req_retransmit") > 0);
	CHECK_EQ_U64(tc_qp_state(env.qb), DROCE_SHM_QPS_RTS);
	tc_pair_close(&env.a, &env.b);
}
