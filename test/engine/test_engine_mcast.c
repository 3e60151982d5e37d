/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UD multicast between two engines joined by net_ring: a SEND to a group (DestQP 0xFFFFFF,
 * the group's IP and MAC) reaches every UD QP attached to it, on either engine of the
 * receiving host, with the group's address in its GRH area and the sender's QPN, and no QP
 * that is not attached; a Q_Key mismatch drops it for that QP only; a QP that detaches (or
 * is destroyed) stops receiving, also with packets in flight, and nobody else notices; the
 * sender's own host gets a copy too (multicast loopback); attach's errors.
 */
#include <endian.h>
#include <string.h>

#include "droce_test.h"
#include "engine_client.h"

#define WAIT_MS		5000
#define QUIET_MS	150
#define QKEY		0x11110000
#define MSG		256
#define GRH		40
#define NRECV		512

/* 224.1.2.3, 239.255.0.9 as IPv4-mapped GIDs; ff0e::1:7 */
static const uint8_t G1[16] = { [10] = 0xff, [11] = 0xff, 224, 1, 2, 3 };
static const uint8_t G2[16] = { [10] = 0xff, [11] = 0xff, 239, 255, 0, 9 };
static const uint8_t G6[16] = { 0xff, 0x0e, [13] = 0x01, [15] = 0x07 };

struct env {
	struct tc_host a, b;
	struct tc_cq *ca, *cb;
	struct tc_qp *tx;		/* a: the sender */
	struct tc_qp *rx[4];		/* b: 0, 1 on engine 0; 2 on engine 1; 3 never attached */
	struct tc_mr *ma, *mb;
	uint32_t ah1, ah2, ah6;		/* a's AHs to G1, G2, G6 */
};

static struct tc_qp *
ud_qp(struct tc_host *h, struct tc_cq *cq, unsigned int engine)
{
	struct tc_qp_init in = { .type = DROCE_SHM_QPT_UD, .engine = engine, .scq = cq,
				 .rcq = cq, .sq_size = 512, .rq_size = NRECV, .max_sge = 1 };
	struct tc_qp *qp = tc_qp_create(h, &in);

	tc_ud_ready(qp, QKEY, 0);
	return qp;
}

static void
env_open(struct env *env)
{
	unsigned int i, k;

	memset(env, 0, sizeof(*env));
	tc_pair_open(&env->a, &env->b, 1, 2);
	env->ca = tc_cq_create(&env->a, 4096);
	env->cb = tc_cq_create(&env->b, 4096);
	env->tx = ud_qp(&env->a, env->ca, 0);
	for (i = 0; i < 4; i++)
		env->rx[i] = ud_qp(&env->b, env->cb, i == 2 ? 1 : 0);
	env->ma = tc_mr_reg(&env->a, 1 << 20, IBV_ACCESS_LOCAL_WRITE);
	env->mb = tc_mr_reg(&env->b, 4u << 20, IBV_ACCESS_LOCAL_WRITE);
	for (i = 0; i < (1u << 20); i++)
		env->ma->buf[i] = (uint8_t)(i * 3 + 1);
	for (k = 0; k < 4; k++)
		for (i = 0; i < NRECV; i++)
			CHECK_EQ_I64(tc_recv(env->rx[k], k * 10000 + i, env->mb,
					     ((uint64_t)k * NRECV + i) * (GRH + MSG), GRH + MSG), 0);
	CHECK_EQ_I64(tc_ah_create_gid(&env->a, 0, G1, &env->ah1), 0);
	CHECK_EQ_I64(tc_ah_create_gid(&env->a, 0, G2, &env->ah2), 0);
	CHECK_EQ_I64(tc_ah_create_gid(&env->a, 0, G6, &env->ah6), 0);
}

/* a's SEND number n (MSG bytes) to the group of AH ah, with Q_Key qkey. */
static void
send_to(struct env *env, struct tc_qp *from, uint32_t ah, uint32_t n, uint32_t qkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)env->ma->buf + (n % 1024) * MSG, .length = MSG,
			       .lkey = env->ma->lkey };
	struct ibv_ah ibah = { .handle = ah };
	struct ibv_send_wr wr = { .wr_id = n, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_IMM, .imm_data = htobe32(n) }, *bad;

	wr.wr.ud.ah = &ibah;
	wr.wr.ud.remote_qpn = DROCE_ENGINE_MCAST_QPN;
	wr.wr.ud.remote_qkey = qkey;
	CHECK_EQ_I64(tc_post_send(from, &wr, &bad), 0);
}

/* Waits for n receive completions on b; counts them per QP in got[]. */
static void
recv_n(struct env *env, int n, uint32_t got[4], uint32_t want_imm_lo, const uint8_t *gid)
{
	struct ibv_wc wc[64];
	int have = 0;

	while (have < n) {
		int k = tc_wait(env->cb, n - have < 64 ? n - have : 64, wc, WAIT_MS), i;

		CHECK(k > 0);
		for (i = 0; i < k; i++) {
			unsigned int q;

			for (q = 0; q < 4 && env->rx[q]->qpn != wc[i].qp_num; q++)
				;
			CHECK(q < 4);
			CHECK_EQ_U64(wc[i].status, IBV_WC_SUCCESS);
			CHECK_EQ_U64(wc[i].opcode, IBV_WC_RECV);
			CHECK_EQ_U64(wc[i].byte_len, GRH + MSG);
			CHECK_EQ_U64(wc[i].src_qp, env->tx->qpn);
			CHECK(be32toh(wc[i].imm_data) >= want_imm_lo);
			if (gid != NULL) {
				/* the GRH area: an IPv4 header's destination, or the IPv6 one's */
				uint64_t slot = wc[i].wr_id % 10000;
				const uint8_t *grh = env->mb->buf + ((uint64_t)q * NRECV + slot) *
						     (GRH + MSG);

				if (gid[0] == 0xff)
					CHECK_MEM(grh + 24, gid, 16);
				else
					CHECK_MEM(grh + 20 + 16, gid + 12, 4);
			}
			got[q]++;
		}
		have += k;
	}
}

/* Every attached QP, on both engines, gets each SEND once; the others get nothing. */
DROCE_TEST(group_delivery)
{
	struct env env;
	uint32_t got[4] = { 0 }, i;

	env_open(&env);
	for (i = 0; i < 3; i++)
		CHECK_EQ_I64(droce_engine_mcast_attach(env.rx[i]->qp, G1), 0);
	CHECK_EQ_I64(droce_engine_mcast_attach(env.rx[0]->qp, G2), 0);
	CHECK_EQ_I64(droce_engine_mcast_attach(env.rx[1]->qp, G6), 0);
	CHECK_EQ_U64(droce_engine_mcast_members(env.b.dev, G1), 3);
	for (i = 0; i < 20; i++)
		send_to(&env, env.tx, env.ah1, i, QKEY);
	recv_n(&env, 60, got, 0, G1);
	CHECK_EQ_U64(got[0], 20);
	CHECK_EQ_U64(got[1], 20);
	CHECK_EQ_U64(got[2], 20);
	memset(got, 0, sizeof(got));
	send_to(&env, env.tx, env.ah2, 100, QKEY);
	send_to(&env, env.tx, env.ah6, 101, QKEY);
	recv_n(&env, 2, got, 100, NULL);
	CHECK_EQ_U64(got[0], 1);
	CHECK_EQ_U64(got[1], 1);
	CHECK_EQ_I64(tc_wait(env.cb, 1, (struct ibv_wc[1]){ 0 }, QUIET_MS), 0);
	CHECK_EQ_U64(tc_counter(&env.b, "mcast_copies"), 62);
	/* a Q_Key no QP has: dropped by each, nothing delivered */
	send_to(&env, env.tx, env.ah1, 200, QKEY + 1);
	CHECK_EQ_I64(tc_wait(env.cb, 1, (struct ibv_wc[1]){ 0 }, QUIET_MS), 0);
	CHECK_EQ_U64(tc_counter(&env.b, "ud_drop"), 3);
	tc_pair_close(&env.a, &env.b);
}

/* attach's refusals, detach's, and membership after detach and destroy. */
DROCE_TEST(attach_rules)
{
	static const uint8_t unicast[16] = { [10] = 0xff, [11] = 0xff, 10, 99, 0, 2 };
	struct tc_qp_init rc_in;
	struct tc_qp *rc;
	struct env env;
	uint32_t got[4] = { 0 };

	env_open(&env);
	rc_in = (struct tc_qp_init){ .type = DROCE_SHM_QPT_RC, .scq = env.cb, .rcq = env.cb,
				     .sq_size = 4, .rq_size = 4, .max_sge = 1 };
	rc = tc_qp_create(&env.b, &rc_in);
	CHECK_EQ_I64(droce_engine_mcast_attach(rc->qp, G1), -EINVAL);
	CHECK_EQ_I64(droce_engine_mcast_attach(env.rx[0]->qp, unicast), -EINVAL);
	CHECK_EQ_I64(droce_engine_mcast_detach(env.rx[0]->qp, G1), -EINVAL);
	CHECK_EQ_I64(droce_engine_mcast_attach(env.rx[0]->qp, G1), 0);
	CHECK_EQ_I64(droce_engine_mcast_attach(env.rx[0]->qp, G1), -EEXIST);
	CHECK_EQ_I64(droce_engine_mcast_attach(env.rx[1]->qp, G1), 0);
	CHECK_EQ_I64(droce_engine_mcast_detach(env.rx[0]->qp, G1), 0);
	CHECK_EQ_I64(droce_engine_mcast_detach(env.rx[0]->qp, G1), -EINVAL);
	CHECK_EQ_U64(droce_engine_mcast_members(env.b.dev, G1), 1);
	send_to(&env, env.tx, env.ah1, 1, QKEY);
	recv_n(&env, 1, got, 0, G1);
	CHECK_EQ_U64(got[1], 1);
	/* a destroyed QP leaves its groups */
	tc_qp_destroy(env.rx[1]);
	env.rx[1] = env.rx[3];
	CHECK_EQ_U64(droce_engine_mcast_members(env.b.dev, G1), 0);
	send_to(&env, env.tx, env.ah1, 2, QKEY);
	CHECK_EQ_I64(tc_wait(env.cb, 1, (struct ibv_wc[1]){ 0 }, QUIET_MS), 0);
	CHECK(tc_counter(&env.b, "mcast_no_group") >= 1);
	tc_pair_close(&env.a, &env.b);
}

/*
 * A group left while packets are in flight: 300 SENDs to a group of three QPs, QP 2
 * detaching once it has received some and while the rest are still being posted and
 * delivered. QPs 0 and 1 get all 300, QP 2 some of them, nobody anything twice, and after
 * the detach nothing more reaches QP 2.
 */
DROCE_TEST(detach_in_flight)
{
	struct env env;
	uint32_t got[4] = { 0 }, i, at_detach;
	struct ibv_wc wc[1];

	env_open(&env);
	for (i = 0; i < 3; i++)
		CHECK_EQ_I64(droce_engine_mcast_attach(env.rx[i]->qp, G1), 0);
	for (i = 0; i < 150; i++)
		send_to(&env, env.tx, env.ah1, i, QKEY);
	while (got[2] < 10)
		recv_n(&env, 1, got, 0, G1);
	for (; i < 300; i++) {
		send_to(&env, env.tx, env.ah1, i, QKEY);
		if (i == 200)
			CHECK_EQ_I64(droce_engine_mcast_detach(env.rx[2]->qp, G1), 0);
	}
	at_detach = got[2];
	while (got[0] + got[1] < 600) {
		uint32_t before = got[0] + got[1] + got[2];

		recv_n(&env, 1, got, 0, G1);
		CHECK(got[0] + got[1] + got[2] == before + 1);
	}
	/* QP 2's last ones may still be on their way: only QP 2's */
	while (tc_wait(env.cb, 1, wc, QUIET_MS) == 1) {
		CHECK_EQ_U64(wc[0].qp_num, env.rx[2]->qpn);
		got[2]++;
	}
	CHECK_EQ_U64(got[0], 300);
	CHECK_EQ_U64(got[1], 300);
	/* some before the detach, never all: the last 99 were posted after it */
	CHECK(got[2] >= at_detach && got[2] <= 201);
	memset(got, 0, sizeof(got));
	send_to(&env, env.tx, env.ah1, 1000, QKEY);
	recv_n(&env, 2, got, 1000, G1);
	CHECK_EQ_U64(got[2], 0);
	CHECK_EQ_I64(tc_wait(env.cb, 1, wc, QUIET_MS), 0);
	tc_pair_close(&env.a, &env.b);
}

/* A SEND to a group from b itself reaches b's attached QPs (loopback) and a's over the wire. */
DROCE_TEST(loopback)
{
	struct tc_qp *a_rx;
	struct env env;
	struct ibv_wc wc[4];
	uint32_t ah;
	unsigned int i;

	env_open(&env);
	a_rx = ud_qp(&env.a, env.ca, 0);
	for (i = 0; i < 4; i++)
		CHECK_EQ_I64(tc_recv(a_rx, 900 + i, env.ma, 512 * 1024 + i * 512, 512), 0);
	CHECK_EQ_I64(droce_engine_mcast_attach(a_rx->qp, G2), 0);
	CHECK_EQ_I64(droce_engine_mcast_attach(env.rx[0]->qp, G2), 0);
	CHECK_EQ_I64(droce_engine_mcast_attach(env.rx[2]->qp, G2), 0);
	CHECK_EQ_I64(tc_ah_create_gid(&env.b, 0, G2, &ah), 0);
	/* rx[3] sends (it is not attached, so it does not hear itself) */
	{
		struct ibv_sge sge = { .addr = (uintptr_t)env.mb->buf + (3u << 20), .length = 64,
				       .lkey = env.mb->lkey };
		struct ibv_ah ibah = { .handle = ah };
		struct ibv_send_wr wr = { .wr_id = 77, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND }, *bad;

		wr.wr.ud.ah = &ibah;
		wr.wr.ud.remote_qpn = DROCE_ENGINE_MCAST_QPN;
		wr.wr.ud.remote_qkey = QKEY;
		CHECK_EQ_I64(tc_post_send(env.rx[3], &wr, &bad), 0);
	}
	CHECK_EQ_I64(tc_wait(env.cb, 2, wc, WAIT_MS), 2);
	for (i = 0; i < 2; i++) {
		CHECK_EQ_U64(wc[i].status, IBV_WC_SUCCESS);
		CHECK_EQ_U64(wc[i].opcode, IBV_WC_RECV);
		CHECK_EQ_U64(wc[i].src_qp, env.rx[3]->qpn);
		CHECK(wc[i].qp_num == env.rx[0]->qpn || wc[i].qp_num == env.rx[2]->qpn);
	}
	CHECK(wc[0].qp_num != wc[1].qp_num);
	CHECK_EQ_I64(tc_wait(env.ca, 1, wc, WAIT_MS), 1);
	CHECK_EQ_U64(wc[0].qp_num, a_rx->qpn);
	CHECK_EQ_U64(wc[0].src_qp, env.rx[3]->qpn);
	CHECK_EQ_U64(wc[0].byte_len, GRH + 64);
	tc_pair_close(&env.a, &env.b);
}
