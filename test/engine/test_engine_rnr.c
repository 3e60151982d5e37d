/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receiver-not-ready and retry exhaustion (IB 9.7.5.2.8, 9.7.6.1.3): a receiver that
 * posts late gets its message after RNR retries; rnr_retry 0 fails the send with
 * IBV_WC_RNR_RETRY_EXC_ERR; a peer that vanished fails it with IBV_WC_RETRY_EXC_ERR within
 * the configured timeout, the QP goes to ERR and the rest is flushed.
 */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "droce_test.h"
#include "engine_client.h"

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

struct rnr_env {
	struct tc_host a, b;
	struct tc_cq *ca, *cb;
	struct tc_qp *qa, *qb;
	struct tc_mr *ma, *mb;
};

static void
env_open(struct rnr_env *env, uint8_t rnr_retry, uint8_t min_rnr_timer, uint8_t timeout,
	 uint8_t retry_cnt)
{
	struct tc_path path = { .mtu = IBV_MTU_1024, .timeout = timeout, .retry_cnt = retry_cnt,
				.rnr_retry = rnr_retry, .min_rnr_timer = min_rnr_timer,
				.psn_a = 0x123456, .psn_b = 42 };
	struct tc_qp_init in = { .type = DROCE_SHM_QPT_RC, .sq_size = 64, .rq_size = 64,
				 .max_sge = 1, .max_inline = 0 };
	unsigned int i;

	tc_pair_open(&env->a, &env->b, 1, 1);
	env->ca = tc_cq_create(&env->a, 256);
	env->cb = tc_cq_create(&env->b, 256);
	in.scq = in.rcq = env->ca;
	env->qa = tc_qp_create(&env->a, &in);
	in.scq = in.rcq = env->cb;
	env->qb = tc_qp_create(&env->b, &in);
	env->ma = tc_mr_reg(&env->a, 1 << 20, IBV_ACCESS_LOCAL_WRITE);
	env->mb = tc_mr_reg(&env->b, 1 << 20, IBV_ACCESS_LOCAL_WRITE);
	for (i = 0; i < (1u << 20); i++)
		env->ma->buf[i] = (uint8_t)(i * 13 + 1);
	tc_connect(env->qa, env->qb, &path);
}

DROCE_TEST(late_receiver_gets_message_after_rnr_retries)
{
	struct rnr_env env;
	struct ibv_wc wc[2];

	/* min_rnr_timer 14: 1.28 ms per retry; rnr_retry 7: for ever. */
	env_open(&env, 7, 14, 14, 7);
	CHECK_EQ_I64(tc_send(env.qa, 1, env.ma, 0, 3000, IBV_SEND_SIGNALED), 0);
	usleep(30000);
	/* Nothing delivered and nothing completed yet; RNR NAKs went out. */
	CHECK_EQ_I64(tc_poll(env.ca, 2, wc), 0);
	CHECK(tc_counter(&env.b, "nak_rnr_sent") >= 2);
	CHECK(tc_counter(&env.a, "nak_rnr_rcvd") >= 2);
	/* Under Linux's names: each RNR NAK is a request without a receive WQE at b and an
	 * RNR NAK within the retries at a, on the QP and in the port's sum. */
	CHECK_EQ_U64(tc_qp_counter(env.qb, "out_of_buffer"), tc_counter(&env.b, "nak_rnr_sent"));
	CHECK_EQ_U64(tc_qp_counter(env.qa, "rnr_nak_retry_err"),
		     tc_counter(&env.a, "nak_rnr_rcvd"));
	CHECK_EQ_U64(tc_port_counter(&env.a, "rnr_nak_retry_err"),
		     tc_qp_counter(env.qa, "rnr_nak_retry_err"));
	CHECK_EQ_U64(tc_qp_state(env.qa), DROCE_SHM_QPS_RTS);
	CHECK_EQ_I64(tc_recv(env.qb, 9, env.mb, 0, 4096), 0);
	CHECK_EQ_I64(tc_wait(env.cb, 1, wc, 5000), 1);
	CHECK_EQ_U64(wc[0].wr_id, 9);
	CHECK_EQ_U64(wc[0].status, IBV_WC_SUCCESS);
	CHECK_EQ_U64(wc[0].byte_len, 3000);
	CHECK_MEM(env.mb->buf, env.ma->buf, 3000);
	CHECK_EQ_I64(tc_wait(env.ca, 1, wc, 5000), 1);
	CHECK_EQ_U64(wc[0].wr_id, 1);
	CHECK_EQ_U64(wc[0].status, IBV_WC_SUCCESS);
	CHECK_EQ_U64(wc[0].opcode, IBV_WC_SEND);
	/* Exactly once: no second receive completion. */
	usleep(20000);
	CHECK_EQ_I64(tc_poll(env.cb, 2, wc), 0);
	tc_pair_close(&env.a, &env.b);
}

DROCE_TEST(rnr_retry_zero_fails_with_rnr_retry_exc)
{
	struct rnr_env env;
	struct ibv_wc wc[4];

	env_open(&env, 0, 1, 14, 7);
	CHECK_EQ_I64(tc_send(env.qa, 1, env.ma, 0, 100, 0), 0);
	CHECK_EQ_I64(tc_send(env.qa, 2, env.ma, 0, 100, IBV_SEND_SIGNALED), 0);
	CHECK_EQ_I64(tc_wait(env.ca, 2, wc, 5000), 2);
	/* The failed WR completes although unsignaled; the next one is flushed. */
	CHECK_EQ_U64(wc[0].wr_id, 1);
	CHECK_EQ_U64(wc[0].status, IBV_WC_RNR_RETRY_EXC_ERR);
	CHECK_EQ_U64(wc[0].qp_num, env.qa->qpn);
	CHECK_EQ_U64(wc[1].wr_id, 2);
	CHECK_EQ_U64(wc[1].status, IBV_WC_WR_FLUSH_ERR);
	CHECK_EQ_U64(tc_qp_state(env.qa), DROCE_SHM_QPS_ERR);
	CHECK_EQ_U64(tc_counter(&env.b, "nak_rnr_sent"), 1);
	CHECK_EQ_U64(tc_counter(&env.a, "comp_err_rnr_nak"), 1);
	/* The RNR NAK that ended the retries is not one "within" them (mlx5's meaning); the
	 * failed WR is an error completion, the next a flush. */
	CHECK_EQ_U64(tc_qp_counter(env.qa, "rnr_nak_retry_err"), 0);
	CHECK_EQ_U64(tc_qp_counter(env.qa, "req_rnr_retries_exceeded"), 1);
	CHECK_EQ_U64(tc_qp_counter(env.qa, "req_cqe_error"), 1);
	CHECK_EQ_U64(tc_qp_counter(env.qa, "req_cqe_flush_error"), 1);
	/* A WR posted in ERR is flushed too. */
	CHECK_EQ_I64(tc_send(env.qa, 3, env.ma, 0, 100, 0), 0);
	CHECK_EQ_I64(tc_wait(env.ca, 1, wc, 5000), 1);
	CHECK_EQ_U64(wc[0].wr_id, 3);
	CHECK_EQ_U64(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	tc_pair_close(&env.a, &env.b);
}

DROCE_TEST(rnr_retry_three_fails_after_four_tries)
{
	struct rnr_env env;
	struct ibv_wc wc[1];

	env_open(&env, 3, 1, 14, 7);
	CHECK_EQ_I64(tc_send(env.qa, 1, env.ma, 0, 100, 0), 0);
	CHECK_EQ_I64(tc_wait(env.ca, 1, wc, 5000), 1);
	CHECK_EQ_U64(wc[0].status, IBV_WC_RNR_RETRY_EXC_ERR);
	/* The first try and three retries, each refused. */
	CHECK_EQ_U64(tc_counter(&env.b, "nak_rnr_sent"), 4);
	tc_pair_close(&env.a, &env.b);
}

DROCE_TEST(vanished_peer_fails_with_retry_exc_within_timeout)
{
	struct rnr_env env;
	struct ibv_wc wc[8];
	struct droce_shm_qp_attr err = { .mask = DROCE_SHM_QP_STATE,
					 .qp_state = DROCE_SHM_QPS_RESET };
	uint64_t t0, dt;
	unsigned int i;

	/* timeout 12: 16.8 ms per try, retry_cnt 3: gone after 4 tries, ~67 ms. */
	env_open(&env, 7, 1, 12, 3);
	CHECK_EQ_I64(tc_recv(env.qb, 1, env.mb, 0, 4096), 0);
	CHECK_EQ_I64(tc_send(env.qa, 100, env.ma, 0, 1000, IBV_SEND_SIGNALED), 0);
	CHECK_EQ_I64(tc_wait(env.ca, 1, wc, 5000), 1);
	CHECK_EQ_U64(wc[0].status, IBV_WC_SUCCESS);
	/* The peer QP vanishes: in RESET it drops everything silently. */
	CHECK_EQ_I64(tc_modify(env.qb, &err), 0);
	t0 = now_us();
	for (i = 0; i < 5; i++)
		CHECK_EQ_I64(tc_send(env.qa, 200 + i, env.ma, 0, 2000 + i, 0), 0);
	CHECK_EQ_I64(tc_wait(env.ca, 5, wc, 5000), 5);
	dt = now_us() - t0;
	CHECK_EQ_U64(wc[0].wr_id, 200);
	CHECK_EQ_U64(wc[0].status, IBV_WC_RETRY_EXC_ERR);
	CHECK_EQ_U64(wc[0].qp_num, env.qa->qpn);
	for (i = 1; i < 5; i++) {
		CHECK_EQ_U64(wc[i].wr_id, 200 + i);
		CHECK_EQ_U64(wc[i].status, IBV_WC_WR_FLUSH_ERR);
	}
	CHECK_EQ_U64(tc_qp_state(env.qa), DROCE_SHM_QPS_ERR);
	CHECK_EQ_U64(tc_counter(&env.a, "req_timeout"), 4);
	/* 4 x 16.8 ms, plus scheduling slack, never much later. */
	CHECK(dt >= 60000);
	CHECK(dt < 1000000);
	tc_pair_close(&env.a, &env.b);
}
