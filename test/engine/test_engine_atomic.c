/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RC atomics (COMPARE SWAP, FETCH ADD) between two engines joined by net_ring: exact
 * original values in the requester's 8-byte buffers and exact targets (host byte order,
 * 64-bit wrap), the max_rd_atomic depth shared with READs, ordering with WRITE, READ and
 * SEND and the fence, the responder's checks (alignment, QP and MR remote-atomic access,
 * R_Key and range: the NAK's status, both QPs in ERR, the target untouched), and
 * exactly-once execution through loss, reordering and duplication: a duplicate atomic is
 * answered from the saved value, never executed again.
 */
#include <stdio.h>
#include <string.h>

#include "droce_test.h"
#include "engine_client.h"

#define TGT_LEN		4096
#define RES_LEN		(1u << 16)		/* a's result buffers, 8 bytes each */
#define FILL		0xEE
#define WAIT_MS		5000
#define QUIET_MS	100
#define TGT_OFF		256			/* the word the tests work on */

#define ATOMIC_ACCESS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
#define WR_OPS		((1u << DROCE_SHM_WR_RDMA_WRITE) | (1u << DROCE_SHM_WR_RDMA_READ) | \
			 (1u << DROCE_SHM_WR_ATOMIC_CMP_AND_SWP) | \
			 (1u << DROCE_SHM_WR_ATOMIC_FETCH_AND_ADD))

struct env {
	struct tc_host a, b;
	struct tc_cq *ca, *cb;
	struct tc_qp *qa, *qb;
	struct tc_mr *res;	/* a: original values land here */
	struct tc_mr *tgt;	/* b: the atomic targets */
};

/*
 * Local ACK timeout codes: 10 (4 ms) keeps the cases without loss quick; through faults,
 * where a lost request or response costs a timeout, 12 (16.8 ms): seven retries of 4 ms
 * gave a loaded ASan run 33 ms for b to answer, and it once did not (doc/reliability.md).
 */
#define ACK_TIMEOUT		10
#define ACK_TIMEOUT_LOSSY	12

/*
 * b's QP has access flags qp_access, its target MR mr_access; both QPs depth depth; the
 * local ACK timeout code timeout.
 */
static void
env_open(struct env *env, const char *faults, uint32_t qp_access, uint32_t mr_access,
	 uint8_t depth, uint8_t timeout)
{
	struct tc_path path = { .mtu = IBV_MTU_1024, .timeout = timeout, .retry_cnt = 7,
				.rnr_retry = 7, .min_rnr_timer = 1, .psn_a = 0xFFFFF0,
				.psn_b = 77 };
	struct tc_qp_init in = { .type = DROCE_SHM_QPT_RC, .sq_size = 64, .rq_size = 128,
				 .max_sge = 4, .max_inline = 64 };

	memset(env, 0, sizeof(*env));
	tc_pair_open_seeded(&env->a, &env->b, faults, 21);
	env->ca = tc_cq_create(&env->a, 1024);
	env->cb = tc_cq_create(&env->b, 1024);
	in.scq = in.rcq = env->ca;
	env->qa = tc_qp_create(&env->a, &in);
	in.scq = in.rcq = env->cb;
	env->qb = tc_qp_create(&env->b, &in);
	env->qa->view.supported_wr |= WR_OPS;
	env->qb->view.supported_wr |= WR_OPS;
	env->res = tc_mr_reg(&env->a, RES_LEN, IBV_ACCESS_LOCAL_WRITE);
	env->tgt = tc_mr_reg(&env->b, TGT_LEN, mr_access);
	memset(env->res->buf, FILL, RES_LEN);
	memset(env->tgt->buf, FILL, TGT_LEN);
	path.access_b = qp_access;
	path.rd_atomic = depth;
	tc_connect(env->qa, env->qb, &path);
}

static uint64_t
tgt_addr(const struct env *env, uint64_t off)
{
	return (uintptr_t)env->tgt->buf + off;
}

static uint64_t
word(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static void
set_word(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

/* Posts one atomic at raddr whose original value goes to res[loff, loff + len). */
static int
post_atomic_len(struct env *env, uint64_t wr_id, enum ibv_wr_opcode op, uint64_t loff,
		uint32_t len, uint64_t raddr, uint32_t rkey, uint64_t compare_add, uint64_t swap,
		unsigned int flags)
{
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .opcode = op, .send_flags = flags,
		.wr.atomic = { .remote_addr = raddr, .rkey = rkey, .compare_add = compare_add,
			       .swap = swap },
	};

	return tc_post_one(env->qa, &wr, env->res, loff, len);
}

static int
post_atomic(struct env *env, uint64_t wr_id, enum ibv_wr_opcode op, uint64_t loff,
	    uint64_t raddr, uint64_t compare_add, uint64_t swap)
{
	return post_atomic_len(env, wr_id, op, loff, 8, raddr, env->tgt->rkey, compare_add,
			       swap, IBV_SEND_SIGNALED);
}

static void
check_wc(const struct ibv_wc *wc, uint64_t wr_id, uint32_t qpn, enum ibv_wc_opcode op,
	 uint32_t len)
{
	CHECK_EQ_U64(wc->wr_id, wr_id);
	CHECK_EQ_U64(wc->status, IBV_WC_SUCCESS);
	CHECK_EQ_U64(wc->opcode, op);
	CHECK_EQ_U64(wc->byte_len, len);
	CHECK_EQ_U64(wc->qp_num, qpn);
}

/* Only the word at TGT_OFF of b's target may differ from FILL. */
static void
check_tgt_rest(const struct env *env)
{
	CHECK_EQ_I64(tc_first_not(env->tgt->buf, 0, TGT_OFF, FILL), -1);
	CHECK_EQ_I64(tc_first_not(env->tgt->buf, TGT_OFF + 8, TGT_LEN, FILL), -1);
}

DROCE_TEST(rc_cas_faa_values)
{
	struct env env;
	struct ibv_wc wc;
	uint8_t *t;

	env_open(&env, NULL, ATOMIC_ACCESS, ATOMIC_ACCESS, 1, ACK_TIMEOUT);
	t = env.tgt->buf + TGT_OFF;
	set_word(t, 0x1122334455667788ull);
	/* CAS that does not match: the target stays, the original comes back. */
	CHECK_EQ_I64(post_atomic(&env, 1, IBV_WR_ATOMIC_CMP_AND_SWP, 8, tgt_addr(&env, TGT_OFF),
				 0x1122334455667789ull, 0xAAAAAAAAAAAAAAAAull), 0);
	CHECK_EQ_I64(tc_wait(env.ca, 1, &wc, WAIT_MS), 1);
	check_wc(&wc, 1, env.qa->qpn, IBV_WC_COMP_SWAP, 8);
	CHECK_EQ_U64(word(env.res->buf + 8), 0x1122334455667788ull);
	CHECK_EQ_U64(word(t), 0x1122334455667788ull);
	/* CAS that matches: swapped. */
	CHECK_EQ_I64(post_atomic(&env, 2, IBV_WR_ATOMIC_CMP_AND_SWP, 24, tgt_addr(&env, TGT_OFF),
				 0x1122334455667788ull, 0xFFFFFFFFFFFFFFFEull), 0);
	CHECK_EQ_I64(tc_wait(env.ca, 1, &wc, WAIT_MS), 1);
	check_wc(&wc, 2, env.qa->qpn, IBV_WC_COMP_SWAP, 8);
	CHECK_EQ_U64(word(env.res->buf + 24), 0x1122334455667788ull);
	CHECK_EQ_U64(word(t), 0xFFFFFFFFFFFFFFFEull);
	/* FETCH ADD over the 64-bit wrap. */
	CHECK_EQ_I64(post_atomic(&env, 3, IBV_WR_ATOMIC_FETCH_AND_ADD, 40,
				 tgt_addr(&env, TGT_OFF), 5, 0x123), 0);
	CHECK_EQ_I64(tc_wait(env.ca, 1, &wc, WAIT_MS), 1);
	check_wc(&wc, 3, env.qa->qpn, IBV_WC_FETCH_ADD, 8);
	CHECK_EQ_U64(word(env.res->buf + 40), 0xFFFFFFFFFFFFFFFEull);
	CHECK_EQ_U64(word(t), 3);
	/* A large addend in host byte order: 3 + 0x0100000000000000. */
	CHECK_EQ_I64(post_atomic(&env, 4, IBV_WR_ATOMIC_FETCH_AND_ADD, 56,
				 tgt_addr(&env, TGT_OFF), 0x0100000000000000ull, 0), 0);
	CHECK_EQ_I64(tc_wait(env.ca, 1, &wc, WAIT_MS), 1);
	check_wc(&wc, 4, env.qa->qpn, IBV_WC_FETCH_ADD, 8);
	CHECK_EQ_U64(word(env.res->buf + 56), 3);
	CHECK_EQ_U64(word(t), 0x0100000000000003ull);
	check_tgt_rest(&env);
	/* Only the four 8-byte result buffers were written. */
	CHECK_EQ_I64(tc_first_not(env.res->buf, 0, 8, FILL), -1);
	CHECK_EQ_I64(tc_first_not(env.res->buf, 16, 24, FILL), -1);
	CHECK_EQ_I64(tc_first_not(env.res->buf, 32, 40, FILL), -1);
	CHECK_EQ_I64(tc_first_not(env.res->buf, 48, 56, FILL), -1);
	CHECK_EQ_I64(tc_first_not(env.res->buf, 64, RES_LEN, FILL), -1);
	CHECK_EQ_U64(tc_counter(&env.b, "atomic_exec"), 4);
	CHECK_EQ_U64(tc_counter(&env.b, "atomic_replay"), 0);
	CHECK_EQ_U64(tc_counter(&env.a, "req_pkts"), 4);
	/* Nothing on the responder's CQ: atomics consume no receive WQE. */
	CHECK_EQ_I64(tc_poll(env.cb, 1, &wc), 0);
	/* The local buffer must be exactly 8 bytes (rxe refuses others at post too). */
	CHECK_EQ_I64(post_atomic_len(&env, 5, IBV_WR_ATOMIC_FETCH_AND_ADD, 64, 4,
				     tgt_addr(&env, TGT_OFF), env.tgt->rkey, 1, 0,
				     IBV_SEND_SIGNALED), EINVAL);
	CHECK_EQ_I64(post_atomic_len(&env, 5, IBV_WR_ATOMIC_CMP_AND_SWP, 64, 16,
				     tgt_addr(&env, TGT_OFF), env.tgt->rkey, 1, 0,
				     IBV_SEND_SIGNALED), EINVAL);
	CHECK_EQ_U64(tc_qp_state(env.qa), DROCE_SHM_QPS_RTS);
	CHECK_EQ_U64(tc_qp_state(env.qb), DROCE_SHM_QPS_RTS);
	tc_pair_close(&env.a, &env.b);
}

/*
 * 48 FETCH ADDs posted at once with depth depth: the requester queues what is beyond the
 * depth (the responder keeps only depth answers), and every one completes in order with
 * its exact original value.
 */
static void
rc_faa_depth(uint8_t depth)
{
	struct env env;
	struct ibv_wc wc[16];
	uint32_t i, done = 0;
	int n, k;

	env_open(&env, NULL, ATOMIC_ACCESS, ATOMIC_ACCESS, depth, ACK_TIMEOUT);
	set_word(env.tgt->buf + TGT_OFF, 1000);
	for (i = 0; i < 48; i++)
		CHECK_EQ_I64(post_atomic(&env, i, IBV_WR_ATOMIC_FETCH_AND_ADD, 8 * i,
					 tgt_addr(&env, TGT_OFF), i + 1, 0), 0);
	while (done < 48) {
		n = tc_wait(env.ca, 16, wc, WAIT_MS);
		CHECK(n > 0);
		for (k = 0; k < n; k++, done++) {
			droce_test_ctx("WR %u", done);
			check_wc(&wc[k], done, env.qa->qpn, IBV_WC_FETCH_ADD, 8);
			/* 1000 + 1 + 2 + ... + done */
			CHECK_EQ_U64(word(env.res->buf + 8 * done),
				     1000 + (uint64_t)done * (done + 1) / 2);
		}
	}
	CHECK_EQ_U64(word(env.tgt->buf + TGT_OFF), 1000 + 48 * 49 / 2);
	check_tgt_rest(&env);
	CHECK_EQ_U64(tc_counter(&env.b, "atomic_exec"), 48);
	/*
	 * No loss here, so nothing is asked twice on a NAK. The ACK timer (timeout 10: 4 ms)
	 * may still fire when an engine thread is off its CPU that long on a loaded machine:
	 * then a repeats, and b answers the repeat from its saved value (atomic_exec above
	 * stays 48, the returned values stay exact).
	 */
	CHECK_EQ_U64(tc_counter(&env.a, "nak_seq_rcvd"), 0);
	CHECK(tc_counter(&env.a, "req_retransmit") == 0 || tc_counter(&env.a, "req_timeout") > 0);
	CHECK_EQ_U64(tc_qp_state(env.qa), DROCE_SHM_QPS_RTS);
	CHECK_EQ_U64(tc_qp_state(env.qb), DROCE_SHM_QPS_RTS);
	tc_pair_close(&env.a, &env.b);
}

DROCE_TEST(rc_faa_depth_1)
{
	rc_faa_depth(1);
}

DROCE_TEST(rc_faa_depth_4)
{
	rc_faa_depth(4);
}

DROCE_TEST(rc_faa_depth_16)
{
	rc_faa_depth(16);
}

/*
 * WRITE, FETCH ADD, READ, CAS, SEND on the same word, back to back: the responder
 * executes in order, so each sees what the one before it left; a fenced READ after a CAS.
 */
DROCE_TEST(rc_atomic_ordering)
{
	struct env env;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_sge rsge;
	struct ibv_wc wc[8];
	struct tc_mr *rbuf;
	uint64_t v = 0x0000000500000007ull;
	int n;

	env_open(&env, NULL, ATOMIC_ACCESS, ATOMIC_ACCESS, 4, ACK_TIMEOUT);
	rbuf = tc_mr_reg(&env.b, 4096, IBV_ACCESS_LOCAL_WRITE);
	memset(rbuf->buf, 0, 4096);
	/* 1: WRITE v from res[512]. */
	set_word(env.res->buf + 512, v);
	memset(&wr, 0, sizeof(wr));
	sge.addr = (uintptr_t)(env.res->buf + 512);
	sge.length = 8;
	sge.lkey = env.res->lkey;
	wr.wr_id = 1;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = tgt_addr(&env, TGT_OFF);
	wr.wr.rdma.rkey = env.tgt->rkey;
	CHECK_EQ_I64(tc_post_send(env.qa, &wr, &bad), 0);
	/* 2: FETCH ADD 3 sees v. */
	CHECK_EQ_I64(post_atomic(&env, 2, IBV_WR_ATOMIC_FETCH_AND_ADD, 0,
				 tgt_addr(&env, TGT_OFF), 3, 0), 0);
	/* 3: READ the word into res[600]: v + 3. */
	sge.addr = (uintptr_t)(env.res->buf + 600);
	wr.wr_id = 3;
	wr.opcode = IBV_WR_RDMA_READ;
	CHECK_EQ_I64(tc_post_send(env.qa, &wr, &bad), 0);
	/*
	 * 4: CAS v + 3 -> 42 matches. Fenced: a READ's data may be read when its response
	 * goes out, after later requests executed (IB ordering rules); the fence waits.
	 */
	CHECK_EQ_I64(post_atomic_len(&env, 4, IBV_WR_ATOMIC_CMP_AND_SWP, 16, 8,
				     tgt_addr(&env, TGT_OFF), env.tgt->rkey, v + 3, 42,
				     IBV_SEND_SIGNALED | IBV_SEND_FENCE), 0);
	/* 5: fenced READ into res[700]: waits for the CAS, reads 42. */
	sge.addr = (uintptr_t)(env.res->buf + 700);
	wr.wr_id = 5;
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE;
	CHECK_EQ_I64(tc_post_send(env.qa, &wr, &bad), 0);
	/* 6: fenced SEND of the res[0] result. */
	memset(&rwr, 0, sizeof(rwr));
	rsge.addr = (uintptr_t)rbuf->buf;
	rsge.length = 64;
	rsge.lkey = rbuf->lkey;
	rwr.wr_id = 60;
	rwr.sg_list = &rsge;
	rwr.num_sge = 1;
	CHECK_EQ_I64(tc_post_recv(env.qb, &rwr, &rbad), 0);
	CHECK_EQ_I64(tc_send(env.qa, 6, env.res, 0, 8, IBV_SEND_SIGNALED | IBV_SEND_FENCE), 0);
	n = tc_wait(env.ca, 6, wc, WAIT_MS);
	CHECK_EQ_I64(n, 6);
	check_wc(&wc[0], 1, env.qa->qpn, IBV_WC_RDMA_WRITE, 8);
	check_wc(&wc[1], 2, env.qa->qpn, IBV_WC_FETCH_ADD, 8);
	check_wc(&wc[2], 3, env.qa->qpn, IBV_WC_RDMA_READ, 8);
	check_wc(&wc[3], 4, env.qa->qpn, IBV_WC_COMP_SWAP, 8);
	check_wc(&wc[4], 5, env.qa->qpn, IBV_WC_RDMA_READ, 8);
	check_wc(&wc[5], 6, env.qa->qpn, IBV_WC_SEND, 8);
	CHECK_EQ_U64(word(env.res->buf + 0), v);
	CHECK_EQ_U64(word(env.res->buf + 600), v + 3);
	CHECK_EQ_U64(word(env.res->buf + 16), v + 3);
	CHECK_EQ_U64(word(env.res->buf + 700), 42);
	CHECK_EQ_U64(word(env.tgt->buf + TGT_OFF), 42);
	check_tgt_rest(&env);
	/* The SEND carried the FETCH ADD's result: it was in place before the SEND left. */
	CHECK_EQ_I64(tc_wait(env.cb, 1, wc, WAIT_MS), 1);
	CHECK_EQ_U64(wc[0].wr_id, 60);
	CHECK_EQ_U64(wc[0].status, IBV_WC_SUCCESS);
	CHECK_EQ_U64(wc[0].opcode, IBV_WC_RECV);
	CHECK_EQ_U64(wc[0].byte_len, 8);
	CHECK_EQ_U64(word(rbuf->buf), v);
	CHECK_EQ_U64(tc_qp_state(env.qa), DROCE_SHM_QPS_RTS);
	CHECK_EQ_U64(tc_qp_state(env.qb), DROCE_SHM_QPS_RTS);
	tc_pair_close(&env.a, &env.b);
}

enum atomic_fault {
	MISALIGNED,		/* invalid request */
	BAD_RKEY,		/* remote access error */
	OUT_OF_RANGE,
	MR_NO_ATOMIC,
	QP_NO_ATOMIC,		/* invalid request */
};

static void
rc_atomic_refused(enum atomic_fault kind, enum ibv_wr_opcode op)
{
	uint32_t mr_access = kind == MR_NO_ATOMIC ? ATOMIC_ACCESS & ~IBV_ACCESS_REMOTE_ATOMIC :
			     ATOMIC_ACCESS;
	uint32_t qp_access = kind == QP_NO_ATOMIC ? ATOMIC_ACCESS & ~IBV_ACCESS_REMOTE_ATOMIC :
			     ATOMIC_ACCESS;
	uint64_t raddr;
	uint32_t rkey;
	struct env env;
	struct ibv_wc wc[4];
	uint8_t before[TGT_LEN];
	bool all_fail = kind == QP_NO_ATOMIC || kind == MR_NO_ATOMIC;

	env_open(&env, NULL, qp_access, mr_access, 2, ACK_TIMEOUT);
	set_word(env.tgt->buf + TGT_OFF, 77);
	set_word(env.tgt->buf + TGT_OFF + 8, 77);
	memcpy(before, env.tgt->buf, TGT_LEN);
	raddr = tgt_addr(&env, kind == MISALIGNED ? TGT_OFF + 4 :
			 kind == OUT_OF_RANGE ? TGT_LEN - 4 : TGT_OFF);
	rkey = kind == BAD_RKEY ? env.tgt->rkey ^ 0x100 : env.tgt->rkey;
	/* One good atomic first: the failure is the second's. */
	CHECK_EQ_I64(post_atomic(&env, 1, IBV_WR_ATOMIC_FETCH_AND_ADD, 0,
				 tgt_addr(&env, TGT_OFF + 16), 1, 0), 0);
	CHECK_EQ_I64(post_atomic_len(&env, 2, op, 8, 8, raddr, rkey, 77, 99, IBV_SEND_SIGNALED),
		     0);
	CHECK_EQ_I64(post_atomic(&env, 3, IBV_WR_ATOMIC_FETCH_AND_ADD, 16,
				 tgt_addr(&env, TGT_OFF), 1, 0), 0);
	CHECK_EQ_I64(tc_wait(env.ca, 3, wc, WAIT_MS), 3);
	if (all_fail) {
		/* The QP or the MR refuses every atomic: the first one already. */
		CHECK_EQ_U64(wc[0].wr_id, 1);
		CHECK_EQ_U64(wc[0].status, kind == QP_NO_ATOMIC ? IBV_WC_REM_INV_REQ_ERR :
					   IBV_WC_REM_ACCESS_ERR);
		CHECK_EQ_U64(wc[1].status, IBV_WC_WR_FLUSH_ERR);
		CHECK_EQ_U64(wc[2].status, IBV_WC_WR_FLUSH_ERR);
		CHECK_EQ_U64(word(env.tgt->buf + TGT_OFF + 16), word(before + TGT_OFF + 16));
	} else {
		check_wc(&wc[0], 1, env.qa->qpn, IBV_WC_FETCH_ADD, 8);
		CHECK_EQ_U64(wc[1].wr_id, 2);
		CHECK_EQ_U64(wc[1].status, kind == MISALIGNED ? IBV_WC_REM_INV_REQ_ERR :
					   IBV_WC_REM_ACCESS_ERR);
		CHECK_EQ_U64(wc[1].qp_num, env.qa->qpn);
		CHECK_EQ_U64(wc[2].wr_id, 3);
		CHECK_EQ_U64(wc[2].status, IBV_WC_WR_FLUSH_ERR);
		set_word(before + TGT_OFF + 16, word(before + TGT_OFF + 16) + 1);
	}
	/* Nothing else changed: not the target, not the result buffers. */
	CHECK_MEM(env.tgt->buf, before, TGT_LEN);
	CHECK_EQ_I64(tc_first_not(env.res->buf, all_fail ? 0 : 8, RES_LEN, FILL), -1);
	CHECK_EQ_I64(tc_wait(env.ca, 1, wc, QUIET_MS), 0);
	CHECK_EQ_U64(tc_counter(&env.b, "atomic_exec"), all_fail ? 0 : 1);
	CHECK_EQ_U64(tc_qp_state(env.qa), DROCE_SHM_QPS_ERR);
	CHECK_EQ_U64(tc_qp_state(env.qb), DROCE_SHM_QPS_ERR);
	tc_pair_close(&env.a, &env.b);
}

DROCE_TEST(rc_atomic_misaligned)
{
	rc_atomic_refused(MISALIGNED, IBV_WR_ATOMIC_FETCH_AND_ADD);
	rc_atomic_refused(MISALIGNED, IBV_WR_ATOMIC_CMP_AND_SWP);
}

DROCE_TEST(rc_atomic_bad_rkey)
{
	rc_atomic_refused(BAD_RKEY, IBV_WR_ATOMIC_CMP_AND_SWP);
}

DROCE_TEST(rc_atomic_out_of_range)
{
	rc_atomic_refused(OUT_OF_RANGE, IBV_WR_ATOMIC_FETCH_AND_ADD);
}

DROCE_TEST(rc_atomic_mr_no_atomic)
{
	rc_atomic_refused(MR_NO_ATOMIC, IBV_WR_ATOMIC_FETCH_AND_ADD);
	rc_atomic_refused(MR_NO_ATOMIC, IBV_WR_ATOMIC_CMP_AND_SWP);
}

DROCE_TEST(rc_atomic_qp_no_atomic)
{
	rc_atomic_refused(QP_NO_ATOMIC, IBV_WR_ATOMIC_CMP_AND_SWP);
}

/*
 * Exactly once under loss: LOSS_OPS atomics on one word, mostly FETCH ADD 1, every 5th a
 * CAS from the value it must find to one more, every 11th a CAS that must miss. Executed
 * once each and in order, op i finds exactly the count of incrementing ops before it; a
 * duplicate executed again would shift every later value. A WRITE and a READ of a
 * neighbouring word ride along.
 */
#define LOSS_OPS	2000

static bool
loss_cas(uint32_t i)
{
	return i % 5 == 2;
}

static bool
loss_cas_miss(uint32_t i)
{
	return i % 11 == 7 && !loss_cas(i);
}

static void
rc_atomic_faults(const char *faults, uint8_t depth)
{
	struct env env;
	struct ibv_wc wc[16];
	uint64_t *expect = droce_test_malloc(LOSS_OPS * sizeof(uint64_t));
	uint64_t cur = 0;
	uint32_t posted = 0, done = 0, i, incs = 0;
	int n, k;

	env_open(&env, faults, ATOMIC_ACCESS, ATOMIC_ACCESS, depth, ACK_TIMEOUT_LOSSY);
	set_word(env.tgt->buf + TGT_OFF, 0);
	for (i = 0; i < LOSS_OPS; i++) {
		expect[i] = cur;
		if (!loss_cas_miss(i))
			cur++;
	}
	while (done < LOSS_OPS) {
		while (posted < LOSS_OPS && posted - done < 48) {
			uint64_t loff = 8 * (uint64_t)posted;
			uint64_t raddr = tgt_addr(&env, TGT_OFF);

			i = posted++;
			if (loss_cas(i))
				CHECK_EQ_I64(post_atomic(&env, i, IBV_WR_ATOMIC_CMP_AND_SWP, loff,
							 raddr, expect[i], expect[i] + 1), 0);
			else if (loss_cas_miss(i))
				CHECK_EQ_I64(post_atomic(&env, i, IBV_WR_ATOMIC_CMP_AND_SWP, loff,
							 raddr, expect[i] + 12345, 0), 0);
			else
				CHECK_EQ_I64(post_atomic(&env, i, IBV_WR_ATOMIC_FETCH_AND_ADD, loff,
							 raddr, 1, 0), 0);
		}
		n = tc_wait(env.ca, 16, wc, 20000);
		if (n == 0) {
			tc_dump(&env.a);
			tc_dump(&env.b);
		}
		CHECK(n > 0);
		for (k = 0; k < n; k++, done++) {
			droce_test_ctx("atomic %u", done);
			check_wc(&wc[k], done, env.qa->qpn,
				 loss_cas(done) || loss_cas_miss(done) ? IBV_WC_COMP_SWAP :
				 IBV_WC_FETCH_ADD, 8);
			CHECK_EQ_U64(word(env.res->buf + 8 * (uint64_t)done), expect[done]);
			incs += !loss_cas_miss(done);
		}
	}
	droce_test_ctx("after the run");
	CHECK_EQ_U64(word(env.tgt->buf + TGT_OFF), cur);
	CHECK_EQ_U64(incs, cur);
	check_tgt_rest(&env);
	CHECK_EQ_I64(tc_first_not(env.res->buf, 8 * LOSS_OPS, RES_LEN, FILL), -1);
	CHECK_EQ_U64(tc_counter(&env.b, "atomic_exec"), LOSS_OPS);
	CHECK_EQ_U64(tc_qp_state(env.qa), DROCE_SHM_QPS_RTS);
	CHECK_EQ_U64(tc_qp_state(env.qb), DROCE_SHM_QPS_RTS);
	printf("  a: %llu request packets, %llu retransmitted, %llu timeouts; "
	       "b: %llu atomic replays, %llu duplicates\n",
	       (unsigned long long)tc_counter(&env.a, "req_pkts"),
	       (unsigned long long)tc_counter(&env.a, "req_retransmit"),
	       (unsigned long long)tc_counter(&env.a, "req_timeout"),
	       (unsigned long long)tc_counter(&env.b, "atomic_replay"),
	       (unsigned long long)tc_counter(&env.b, "resp_dup"));
	CHECK(tc_counter(&env.b, "atomic_replay") > 0);
	tc_pair_close(&env.a, &env.b);
	droce_test_free(expect);
}

DROCE_TEST(rc_atomic_loss_reorder_dup)
{
	rc_atomic_faults("drop=50000,reorder=30000,dup=30000", 4);
}

DROCE_TEST(rc_atomic_loss_depth_1)
{
	rc_atomic_faults("drop=30000,dup=100000", 1);
}

DROCE_TEST(rc_atomic_loss_depth_16)
{
	rc_atomic_faults("drop=50000,reorder=30000,dup=30000", 16);
}
