/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The first thing to check when the engine breaks: one RC SEND of five MTUs between two
 * engines joined by net_ring, every completion field on both sides, the bytes, and the
 * packet count; the engine that naps (idle_sleep_us); QPs destroyed under traffic. The
 * other test_engine_*.c files cover each part in depth.
 */
#include <string.h>
#include <unistd.h>

#include <rte_ethdev.h>

#include "droce_test.h"
#include "engine_client.h"

static struct tc_qp *
rc_qp(struct tc_host *h, uint8_t type, struct tc_cq *cq, unsigned int engine)
{
	struct tc_qp_init in = {
		.type = type, .engine = engine, .scq = cq, .rcq = cq,
		.sq_size = 256, .rq_size = 256, .max_sge = 4, .max_inline = 128,
	};

	return tc_qp_create(h, &in);
}

DROCE_TEST(rc_send_one)
{
	struct tc_host a, b;
	struct tc_path path = { .mtu = IBV_MTU_1024, .timeout = 14, .retry_cnt = 7,
				.rnr_retry = 7, .min_rnr_timer = 1, .psn_a = 100, .psn_b = 0xFFFFF0 };
	struct ibv_wc wc[4];
	struct tc_cq *ca, *cb;
	struct tc_qp *qa, *qb;
	struct tc_mr *ma, *mb;
	unsigned int i;

	tc_pair_open(&a, &b, 1, 1);
	ca = tc_cq_create(&a, 64);
	cb = tc_cq_create(&b, 64);
	qa = rc_qp(&a, DROCE_SHM_QPT_RC, ca, 0);
	qb = rc_qp(&b, DROCE_SHM_QPT_RC, cb, 0);
	ma = tc_mr_reg(&a, 1 << 16, IBV_ACCESS_LOCAL_WRITE);
	mb = tc_mr_reg(&b, 1 << 16, IBV_ACCESS_LOCAL_WRITE);
	tc_connect(qa, qb, &path);
	for (i = 0; i < 5000; i++)
		ma->buf[i] = (uint8_t)(i * 7 + 3);
	CHECK_EQ_I64(tc_recv(qb, 77, mb, 0, 8192), 0);
	CHECK_EQ_I64(tc_send(qa, 55, ma, 0, 5000, IBV_SEND_SIGNALED), 0);
	CHECK_EQ_I64(tc_wait(cb, 1, wc, 5000), 1);
	CHECK_EQ_U64(wc[0].wr_id, 77);
	CHECK_EQ_U64(wc[0].status, IBV_WC_SUCCESS);
	CHECK_EQ_U64(wc[0].opcode, IBV_WC_RECV);
	CHECK_EQ_U64(wc[0].byte_len, 5000);
	CHECK_EQ_U64(wc[0].qp_num, qb->qpn);
	CHECK_EQ_U64(wc[0].src_qp, qa->qpn);
	CHECK_EQ_U64(wc[0].wc_flags, 0);
	CHECK_MEM(mb->buf, ma->buf, 5000);
	CHECK_EQ_I64(tc_wait(ca, 1, wc, 5000), 1);
	CHECK_EQ_U64(wc[0].wr_id, 55);
	CHECK_EQ_U64(wc[0].status, IBV_WC_SUCCESS);
	CHECK_EQ_U64(wc[0].opcode, IBV_WC_SEND);
	CHECK_EQ_U64(wc[0].qp_num, qa->qpn);
	if (tc_counter(&a, "req_pkts") != 5) {
		tc_dump(&a);
		tc_dump(&b);
	}
	CHECK_EQ_U64(tc_counter(&a, "req_pkts"), 5);
	tc_pair_close(&a, &b);
}


/*
 * An engine that naps: the control thread applies a command itself while the engine
 * sleeps (cmds_in_nap), and ends the nap when the command gave the engine work. Engine a
 * naps 200 ms at a time and b polls, so a SEND posted while a's QP was in SQD must arrive
 * well within those 200 ms of the SQD -> RTS change.
 */
DROCE_TEST(napping_engine)
{
	struct tc_host a, b;
	struct tc_path path = { .mtu = IBV_MTU_1024, .timeout = 14, .retry_cnt = 7,
				.rnr_retry = 7, .min_rnr_timer = 1, .psn_a = 1, .psn_b = 2 };
	struct droce_shm_qp_attr attr;
	struct ibv_wc wc[2];
	struct tc_cq *ca, *cb;
	struct tc_qp *qa, *qb;
	struct tc_mr *ma, *mb;
	uint64_t in_nap;

	tc_next_pair_idle(200000, 0);
	tc_pair_open(&a, &b, 1, 1);
	ca = tc_cq_create(&a, 64);
	cb = tc_cq_create(&b, 64);
	qa = rc_qp(&a, DROCE_SHM_QPT_RC, ca, 0);
	qb = rc_qp(&b, DROCE_SHM_QPT_RC, cb, 0);
	ma = tc_mr_reg(&a, 4096, IBV_ACCESS_LOCAL_WRITE);
	mb = tc_mr_reg(&b, 4096, IBV_ACCESS_LOCAL_WRITE);
	tc_connect(qa, qb, &path);
	memset(&attr, 0, sizeof(attr));
	attr.mask = DROCE_SHM_QP_STATE;
	attr.qp_state = DROCE_SHM_QPS_SQD;
	CHECK_EQ_I64(tc_modify(qa, &attr), 0);
	memset(ma->buf, 0x5a, 100);
	CHECK_EQ_I64(tc_recv(qb, 1, mb, 0, 4096), 0);
	CHECK_EQ_I64(tc_send(qa, 2, ma, 0, 100, IBV_SEND_SIGNALED), 0);
	/* SQD holds it; a, idle far longer than it waits before a nap, is asleep. */
	usleep(50000);
	CHECK_EQ_I64(tc_poll(cb, 1, wc), 0);
	in_nap = tc_counter(&a, "cmds_in_nap");
	attr.qp_state = DROCE_SHM_QPS_RTS;
	CHECK_EQ_I64(tc_modify(qa, &attr), 0);
	CHECK_EQ_U64(tc_counter(&a, "cmds_in_nap"), in_nap + 1);
	CHECK_EQ_U64(tc_qp_state(qa), DROCE_SHM_QPS_RTS);
	CHECK_EQ_I64(tc_wait(cb, 1, wc, 100), 1);
	CHECK_EQ_U64(wc[0].status, IBV_WC_SUCCESS);
	CHECK_EQ_U64(wc[0].byte_len, 100);
	CHECK_MEM(mb->buf, ma->buf, 100);
	tc_pair_close(&a, &b);
}

/*
 * QPs destroyed while their packets still come in, round after round. droce_engine_qp_
 * destroy unpublishes a QP and waits out every pass that may hold it before taking it off
 * its engine's lists: in the other order, a packet handled in between (an ACK owed, a
 * timer armed) put the QP back on a list, it was freed while listed, and the engine later
 * walked freed memory (droced crashed in qp_list_del under ibv_xsrq_pingpong:
 * doc/reliability.md). Each round streams RDMA WRITEs from a to b, destroys b's QP as the
 * first completes (a's packets keep arriving for it), then a's with its timers armed; the
 * engines must go on serving a new pair, and under ASan touch no freed QP.
 */
#define DESTROY_ROUNDS	300
#define DESTROY_WRITES	64
#define DESTROY_LEN	4096

DROCE_TEST(destroy_under_traffic)
{
	struct tc_host a, b;
	struct tc_path path = { .mtu = IBV_MTU_1024, .timeout = 8, .retry_cnt = 7,
				.rnr_retry = 7, .min_rnr_timer = 1, .psn_a = 100, .psn_b = 200,
				.access_b = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE };
	struct ibv_wc wc[DESTROY_WRITES];
	struct tc_cq *ca, *cb;
	struct tc_qp *qa, *qb;
	struct tc_mr *ma, *mb;
	unsigned int r, i;

	tc_pair_open(&a, &b, 1, 1);
	ca = tc_cq_create(&a, 4096);
	cb = tc_cq_create(&b, 4096);
	ma = tc_mr_reg(&a, DESTROY_LEN, IBV_ACCESS_LOCAL_WRITE);
	mb = tc_mr_reg(&b, DESTROY_LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	for (r = 0; r < DESTROY_ROUNDS; r++) {
		qa = rc_qp(&a, DROCE_SHM_QPT_RC, ca, 0);
		qa->view.supported_wr |= 1u << DROCE_SHM_WR_RDMA_WRITE;
		qb = rc_qp(&b, DROCE_SHM_QPT_RC, cb, 0);
		tc_connect(qa, qb, &path);
		for (i = 0; i < DESTROY_WRITES; i++) {
			struct ibv_send_wr wr = {
				.wr_id = i, .opcode = IBV_WR_RDMA_WRITE,
				.send_flags = IBV_SEND_SIGNALED,
				.wr.rdma = { .remote_addr = (uintptr_t)mb->buf, .rkey = mb->rkey },
			};

			CHECK_EQ_I64(tc_post_one(qa, &wr, ma, 0, DESTROY_LEN), 0);
		}
		CHECK_EQ_I64(tc_wait(ca, 1, wc, 5000), 1);
		CHECK_EQ_U64(wc[0].status, IBV_WC_SUCCESS);
		tc_qp_destroy(qb);
		tc_qp_destroy(qa);
		/* What the destroyed QPs left in the CQs. */
		while (tc_poll(ca, DESTROY_WRITES, wc) > 0)
			;
	}
	/* The engines still serve: one more pair, one WRITE, completed. */
	qa = rc_qp(&a, DROCE_SHM_QPT_RC, ca, 0);
	qa->view.supported_wr |= 1u << DROCE_SHM_WR_RDMA_WRITE;
	qb = rc_qp(&b, DROCE_SHM_QPT_RC, cb, 0);
	tc_connect(qa, qb, &path);
	memset(ma->buf, 0x5A, DESTROY_LEN);
	{
		struct ibv_send_wr wr = {
			.wr_id = 7, .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = (uintptr_t)mb->buf, .rkey = mb->rkey },
		};

		CHECK_EQ_I64(tc_post_one(qa, &wr, ma, 0, DESTROY_LEN), 0);
	}
	CHECK_EQ_I64(tc_wait(ca, 1, wc, 5000), 1);
	CHECK_EQ_U64(wc[0].wr_id, 7);
	CHECK_EQ_U64(wc[0].status, IBV_WC_SUCCESS);
	CHECK_MEM(mb->buf, ma->buf, DESTROY_LEN);
	tc_pair_close(&a, &b);
}
