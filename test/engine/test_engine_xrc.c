/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * XRC (IB 9.3.7, 10.2.9.6) between two engines joined by net_ring: an XRC initiator on a
 * sends to an XRC target on b, each request naming in its XRCETH the XRC SRQ it is for.
 * SENDs land in the named SRQ's buffers and complete on that SRQ's CQ (two SRQs, one
 * target, interleaved); RDMA WRITE, READ and atomics are checked in the SRQ's PD; an SRQ
 * of another XRC domain, or one destroyed, is refused (invalid request); and multi-packet
 * SENDs to alternating SRQs survive loss, reordering and duplication, each receive
 * taken once from the right SRQ.
 */
#include <endian.h>
#include <stdio.h>
#include <string.h>

#include "droce_test.h"
#include "engine_client.h"

#define BUF_LEN		(1u << 18)
#define WAIT_MS		5000
#define XRCD		7
#define XRCD_OTHER	8
#define REMOTE		(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
#define WR_OPS		((1u << DROCE_SHM_WR_SEND) | (1u << DROCE_SHM_WR_SEND_WITH_IMM) | \
			 (1u << DROCE_SHM_WR_RDMA_WRITE) | (1u << DROCE_SHM_WR_RDMA_READ) | \
			 (1u << DROCE_SHM_WR_ATOMIC_FETCH_AND_ADD))

struct env {
	struct tc_host a, b;
	struct tc_cq *ca, *cb, *cb2;	/* cb: s1's and s3's CQ; cb2: s2's */
	struct tc_qp *ini, *tgt;
	struct tc_srq *s1, *s2, *s3;	/* s3: another XRC domain */
	struct tc_mr *src, *dst;
};

static void
env_open(struct env *env, const char *faults)
{
	struct tc_path path = { .mtu = IBV_MTU_1024, .timeout = 12, .retry_cnt = 7,
				.rnr_retry = 7, .min_rnr_timer = 1, .psn_a = 0xFFFFF0,
				.psn_b = 300, .rd_atomic = 4, .access_b = REMOTE };
	struct tc_qp_init in = { .type = DROCE_SHM_QPT_XRC_SEND, .sq_size = 256, .max_sge = 2,
				 .max_inline = 64 };
	uint32_t i;

	memset(env, 0, sizeof(*env));
	tc_pair_open_seeded(&env->a, &env->b, faults, 41);
	env->ca = tc_cq_create(&env->a, 1024);
	env->cb = tc_cq_create(&env->b, 1024);
	env->cb2 = tc_cq_create(&env->b, 1024);
	in.scq = env->ca;
	env->ini = tc_qp_create(&env->a, &in);
	env->ini->view.supported_wr = WR_OPS;
	in = (struct tc_qp_init){ .type = DROCE_SHM_QPT_XRC_RECV, .sq_size = 1, .xrcd = XRCD };
	env->tgt = tc_qp_create(&env->b, &in);
	env->s1 = tc_srq_create_xrc(&env->b, 512, 2, XRCD, env->cb);
	env->s2 = tc_srq_create_xrc(&env->b, 512, 2, XRCD, env->cb2);
	env->s3 = tc_srq_create_xrc(&env->b, 16, 2, XRCD_OTHER, env->cb);
	env->src = tc_mr_reg(&env->a, BUF_LEN, IBV_ACCESS_LOCAL_WRITE);
	env->dst = tc_mr_reg(&env->b, BUF_LEN, REMOTE);
	for (i = 0; i < BUF_LEN; i++)
		env->src->buf[i] = (uint8_t)(i * 11 + (i >> 12) + 1);
	tc_connect(env->ini, env->tgt, &path);
}

static uint32_t
srqn(const struct tc_srq *s)
{
	return droce_engine_srq_num(s->srq);
}

/* A SEND of src[soff, soff + len) to XRC SRQ n. */
static int
xsend(struct env *env, uint64_t wr_id, uint32_t n, uint64_t soff, uint32_t len)
{
	struct ibv_send_wr wr = { .wr_id = wr_id, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED };

	wr.qp_type.xrc.remote_srqn = n;
	return tc_post_one(env->ini, &wr, env->src, soff, len);
}

static void
expect_wc(struct tc_cq *cq, uint64_t wr_id, enum ibv_wc_status status, enum ibv_wc_opcode op,
	  uint32_t len, uint32_t qpn)
{
	struct ibv_wc wc;

	CHECK_EQ_I64(tc_wait(cq, 1, &wc, WAIT_MS), 1);
	CHECK_EQ_U64(wc.wr_id, wr_id);
	CHECK_EQ_U64(wc.status, status);
	if (status != IBV_WC_SUCCESS)
		return;
	CHECK_EQ_U64(wc.opcode, op);
	CHECK_EQ_U64(wc.byte_len, len);
	CHECK_EQ_U64(wc.qp_num, qpn);
}

/* SENDs to two SRQs of one target: each in its SRQ's buffer, on its SRQ's CQ. */
DROCE_TEST(sends_to_two_srqs)
{
	struct env env;
	unsigned int i;

	env_open(&env, NULL);
	CHECK(srqn(env.s1) != 0 && srqn(env.s2) != 0 && srqn(env.s1) != srqn(env.s2));
	for (i = 0; i < 8; i++) {
		CHECK_EQ_I64(tc_srq_recv(env.s1, 100 + i, env.dst, 8192 * i, 8192), 0);
		CHECK_EQ_I64(tc_srq_recv(env.s2, 200 + i, env.dst, 65536 + 8192 * i, 8192), 0);
	}
	for (i = 0; i < 8; i++) {
		uint32_t len = 1 + i * 997;

		CHECK_EQ_I64(xsend(&env, 10 + i, i % 2 ? srqn(env.s2) : srqn(env.s1), 4096 * i, len),
			     0);
	}
	for (i = 0; i < 8; i++)
		expect_wc(env.ca, 10 + i, IBV_WC_SUCCESS, IBV_WC_SEND, 1 + i * 997, env.ini->qpn);
	for (i = 0; i < 8; i++) {
		uint32_t len = 1 + i * 997;

		droce_test_ctx("send %u", i);
		if (i % 2) {
			expect_wc(env.cb2, 200 + i / 2, IBV_WC_SUCCESS, IBV_WC_RECV, len,
				  env.tgt->qpn);
			CHECK_MEM(env.dst->buf + 65536 + 8192 * (i / 2), env.src->buf + 4096 * i,
				  len);
		} else {
			expect_wc(env.cb, 100 + i / 2, IBV_WC_SUCCESS, IBV_WC_RECV, len,
				  env.tgt->qpn);
			CHECK_MEM(env.dst->buf + 8192 * (i / 2), env.src->buf + 4096 * i, len);
		}
	}
	CHECK_EQ_U64(tc_qp_state(env.tgt), DROCE_SHM_QPS_RTS);
	tc_pair_close(&env.a, &env.b);
}

/* RDMA WRITE, READ and FETCH ADD through an XRC target, in the SRQ's PD. */
DROCE_TEST(rdma_and_atomics)
{
	struct ibv_send_wr wr;
	struct env env;
	uint64_t v = 41;

	env_open(&env, NULL);
	memset(&wr, 0, sizeof(wr));
	wr = (struct ibv_send_wr){ .wr_id = 1, .opcode = IBV_WR_RDMA_WRITE,
				   .send_flags = IBV_SEND_SIGNALED,
				   .wr.rdma = { .remote_addr = (uintptr_t)env.dst->buf + 100,
						.rkey = env.dst->rkey } };
	wr.qp_type.xrc.remote_srqn = srqn(env.s1);
	CHECK_EQ_I64(tc_post_one(env.ini, &wr, env.src, 0, 5000), 0);
	expect_wc(env.ca, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 5000, env.ini->qpn);
	CHECK_MEM(env.dst->buf + 100, env.src->buf, 5000);
	wr.wr_id = 2;
	wr.opcode = IBV_WR_RDMA_READ;
	CHECK_EQ_I64(tc_post_one(env.ini, &wr, env.src, 100000, 5000), 0);
	expect_wc(env.ca, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 5000, env.ini->qpn);
	CHECK_MEM(env.src->buf + 100000, env.src->buf, 5000);
	memcpy(env.dst->buf + 8192, &v, 8);
	wr = (struct ibv_send_wr){ .wr_id = 3, .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
				   .send_flags = IBV_SEND_SIGNALED,
				   .wr.atomic = { .remote_addr = (uintptr_t)env.dst->buf + 8192,
						  .rkey = env.dst->rkey, .compare_add = 1 } };
	wr.qp_type.xrc.remote_srqn = srqn(env.s2);
	CHECK_EQ_I64(tc_post_one(env.ini, &wr, env.src, 200000, 8), 0);
	expect_wc(env.ca, 3, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, 8, env.ini->qpn);
	memcpy(&v, env.dst->buf + 8192, 8);
	CHECK_EQ_U64(v, 42);
	memcpy(&v, env.src->buf + 200000, 8);
	CHECK_EQ_U64(v, 41);
	tc_pair_close(&env.a, &env.b);
}

/*
 * An XRCETH naming an SRQ of another XRC domain, no SRQ at all, or one destroyed since:
 * invalid request at the initiator, the target in ERR, nothing placed.
 */
DROCE_TEST(srq_refused)
{
	static const char *const what[] = { "other domain", "no such SRQ", "destroyed" };
	unsigned int k;

	for (k = 0; k < 3; k++) {
		struct env env;
		uint32_t n;

		droce_test_ctx("%s", what[k]);
		env_open(&env, NULL);
		CHECK_EQ_I64(tc_srq_recv(env.s3, 300, env.dst, 0, 4096), 0);
		n = k == 0 ? srqn(env.s3) : k == 1 ? 0xABCD : srqn(env.s2);
		if (k == 2)
			tc_srq_destroy(env.s2);
		CHECK_EQ_I64(xsend(&env, 1, n, 0, 100), 0);
		CHECK_EQ_I64(xsend(&env, 2, srqn(env.s1), 0, 100), 0);
		expect_wc(env.ca, 1, IBV_WC_REM_INV_REQ_ERR, 0, 0, 0);
		expect_wc(env.ca, 2, IBV_WC_WR_FLUSH_ERR, 0, 0, 0);
		CHECK_EQ_U64(tc_qp_state(env.tgt), DROCE_SHM_QPS_ERR);
		CHECK_EQ_U64(tc_counter(&env.b, "resp_err_xrc_srq"), 1);
		CHECK_EQ_I64(tc_poll(env.cb, 1, (struct ibv_wc[1]){ 0 }), 0);
		tc_pair_close(&env.a, &env.b);
	}
}

/*
 * Multi-packet SENDs alternating between two SRQs through loss, reordering and
 * duplication: every message lands whole in the right SRQ's next buffer, each receive
 * taken once.
 */
#define LOSS_MSGS	120

DROCE_TEST(sends_through_faults)
{
	struct env env;
	struct ibv_wc wc[LOSS_MSGS];
	unsigned int i, n1 = 0, n2 = 0;
	int got = 0;

	tc_next_pair_early();
	env_open(&env, "drop=40000,reorder=20000,dup=30000");
	for (i = 0; i < LOSS_MSGS / 2; i++) {
		CHECK_EQ_I64(tc_srq_recv(env.s1, 1000 + i, env.dst, 2048 * i, 2048), 0);
		CHECK_EQ_I64(tc_srq_recv(env.s2, 2000 + i, env.dst, 131072 + 2048 * i, 2048), 0);
	}
	for (i = 0; i < LOSS_MSGS; i++)
		CHECK_EQ_I64(xsend(&env, i, i % 2 ? srqn(env.s2) : srqn(env.s1), 512 * i,
				   1024 + i % 1000), 0);
	while (got < LOSS_MSGS) {
		int k = tc_wait(env.ca, LOSS_MSGS - got, wc + got, 4 * WAIT_MS);

		CHECK(k > 0);
		got += k;
	}
	for (i = 0; i < LOSS_MSGS; i++) {
		droce_test_ctx("send completion %u", i);
		CHECK_EQ_U64(wc[i].wr_id, i);
		CHECK_EQ_U64(wc[i].status, IBV_WC_SUCCESS);
	}
	for (i = 0; i < LOSS_MSGS; i++) {
		struct tc_cq *cq = i % 2 ? env.cb2 : env.cb;
		unsigned int k = i / 2;
		uint64_t off = (i % 2 ? 131072 : 0) + 2048 * k;

		droce_test_ctx("receive %u", i);
		expect_wc(cq, (i % 2 ? 2000 : 1000) + k, IBV_WC_SUCCESS, IBV_WC_RECV,
			  1024 + i % 1000, env.tgt->qpn);
		CHECK_MEM(env.dst->buf + off, env.src->buf + 512 * i, 1024 + i % 1000);
		if (i % 2)
			n2++;
		else
			n1++;
	}
	CHECK_EQ_U64(n1 + n2, LOSS_MSGS);
	CHECK(tc_counter(&env.a, "req_retransmit") > 0);
	CHECK_EQ_I64(tc_poll(env.cb, 1, wc), 0);
	CHECK_EQ_I64(tc_poll(env.cb2, 1, wc), 0);
	tc_pair_close(&env.a, &env.b);
}
