/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_resize_cq's engine side (droce_engine_cq_resize): completions waiting in a CQ move
 * to the new ring in order, none lost, none repeated, whether it grows or shrinks; fewer
 * entries than waiting completions is refused and changes nothing; and a CQ resized again
 * and again while both engines write to it (the receiver's completions of SENDs in flight
 * on two QPs of two engines) loses and repeats nothing. Sends posted before the call
 * count among the waiting completions.
 */
#include <string.h>
#include <unistd.h>

#include "droce_test.h"
#include "engine_client.h"

#define MSG	64

struct pair {
	struct tc_host a, b;
	struct tc_cq *ca, *cb;
	struct tc_qp *qa[2], *qb[2];
	struct tc_mr *ma, *mb;
};

static void
pair_open(struct pair *p, uint32_t cq_size)
{
	struct tc_path path = { .mtu = IBV_MTU_1024, .timeout = 14, .retry_cnt = 7,
				.rnr_retry = 7, .min_rnr_timer = 1 };
	struct tc_qp_init in = { .type = DROCE_SHM_QPT_RC, .sq_size = 512, .rq_size = 512,
				 .max_sge = 1, .max_inline = 64 };
	unsigned int q;

	tc_pair_open(&p->a, &p->b, 2, 2);
	p->ca = tc_cq_create(&p->a, 2048);
	p->cb = tc_cq_create(&p->b, cq_size);
	p->ma = tc_mr_reg(&p->a, 1 << 16, IBV_ACCESS_LOCAL_WRITE);
	p->mb = tc_mr_reg(&p->b, 1 << 20, IBV_ACCESS_LOCAL_WRITE);
	for (q = 0; q < 2; q++) {
		in.engine = q;
		in.scq = in.rcq = p->ca;
		p->qa[q] = tc_qp_create(&p->a, &in);
		in.scq = in.rcq = p->cb;
		p->qb[q] = tc_qp_create(&p->b, &in);
		path.psn_a = q * 10;
		path.psn_b = q * 20;
		tc_connect(p->qa[q], p->qb[q], &path);
	}
}

/* n receives on b's QP q and n SENDs to them: wr_id base + i on both sides. */
static void
sends(struct pair *p, unsigned int q, uint64_t base, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		CHECK_EQ_I64(tc_recv(p->qb[q], base + i, p->mb, ((base + i) % 1024) * MSG, MSG), 0);
	/* unsignaled: a's CQ is not the one under test, and nobody polls it */
	for (i = 0; i < n; i++)
		CHECK_EQ_I64(tc_send(p->qa[q], base + i, p->ma, 0, MSG, 0), 0);
}

/* Until b's engines have written n receive completions (not polled). */
static void
written(struct pair *p, uint64_t n)
{
	uint64_t end = 0;

	while (tc_counter(&p->b, "cqe") < n && end++ < 5000000)
		usleep(1);
	CHECK(tc_counter(&p->b, "cqe") >= n);
}

/* n completions from cb: those of QP q carry base_q + 0, 1, ... in order. */
static void
poll_in_order(struct pair *p, unsigned int n, uint64_t next[2])
{
	struct ibv_wc wc[64];
	unsigned int got = 0;
	int k, i;

	while (got < n) {
		k = tc_wait(p->cb, (int)(n - got < 64 ? n - got : 64), wc, 5000);
		if (k <= 0) {
			tc_dump(&p->a);
			tc_dump(&p->b);
		}
		CHECK(k > 0);
		for (i = 0; i < k; i++) {
			unsigned int q = wc[i].qp_num == p->qb[0]->qpn ? 0 : 1;

			droce_test_ctx("completion %u", got + i);
			CHECK_EQ_U64(wc[i].status, IBV_WC_SUCCESS);
			CHECK_EQ_U64(wc[i].qp_num, p->qb[q]->qpn);
			CHECK_EQ_U64(wc[i].wr_id, next[q]);
			next[q]++;
		}
		got += (unsigned int)k;
	}
	droce_test_ctx("%s", "");
}

DROCE_TEST(resize_with_completions_waiting)
{
	uint64_t next[2] = { 0, 1000000 };
	struct ibv_wc wc[1];
	struct pair p;
	unsigned int i;

	pair_open(&p, 64);
	/* 40 waiting in a ring of 64, then it grows to 256: all 40 come out, in order */
	sends(&p, 0, 0, 40);
	written(&p, 40);
	CHECK_EQ_I64(tc_cq_resize(p.cb, 256), 0);
	CHECK_EQ_U64(p.cb->view.size, 256);
	poll_in_order(&p, 40, next);
	CHECK_EQ_I64(tc_poll(p.cb, 1, wc), 0);
	/* 100 waiting: shrinking to 64 is refused and changes nothing; to 128 it works */
	sends(&p, 0, 40, 100);
	written(&p, 140);
	CHECK_EQ_I64(tc_cq_resize(p.cb, 64), -EINVAL);
	CHECK_EQ_U64(p.cb->view.size, 256);
	CHECK_EQ_I64(tc_cq_resize(p.cb, 128), 0);
	poll_in_order(&p, 100, next);
	/* the resized ring goes on taking completions, laps and all (100 at a time: 128) */
	for (i = 0; i < 3; i++) {
		sends(&p, 1, 1000000 + i * 100, 100);
		poll_in_order(&p, 100, next);
	}
	CHECK_EQ_U64(tc_counter(&p.b, "cq_overrun"), 0);
	tc_pair_close(&p.a, &p.b);
}

/*
 * Sends posted just before the resize count among the completions waiting, as on a NIC
 * that fetched them long before: 100 signaled SENDs, then at once a shrink of their CQ to
 * 64 is refused; 128 takes all 100, in order.
 */
DROCE_TEST(resize_counts_sends_posted)
{
	struct ibv_wc wc[16];
	struct pair p;
	unsigned int i, got = 0;
	int k;

	pair_open(&p, 256);
	for (i = 0; i < 100; i++)
		CHECK_EQ_I64(tc_recv(p.qb[0], i, p.mb, i * MSG, MSG), 0);
	for (i = 0; i < 100; i++)
		CHECK_EQ_I64(tc_send(p.qa[0], i, p.ma, 0, MSG, IBV_SEND_SIGNALED), 0);
	CHECK_EQ_I64(tc_cq_resize(p.ca, 64), -EINVAL);
	CHECK_EQ_U64(p.ca->view.size, 2048);
	CHECK_EQ_I64(tc_cq_resize(p.ca, 128), 0);
	while (got < 100) {
		k = tc_wait(p.ca, 16, wc, 5000);
		CHECK(k > 0);
		for (i = 0; i < (unsigned int)k; i++) {
			CHECK_EQ_U64(wc[i].status, IBV_WC_SUCCESS);
			CHECK_EQ_U64(wc[i].opcode, IBV_WC_SEND);
			CHECK_EQ_U64(wc[i].wr_id, got + i);
		}
		got += (unsigned int)k;
	}
	CHECK_EQ_I64(tc_poll(p.ca, 16, wc), 0);
	CHECK_EQ_U64(tc_counter(&p.a, "cq_overrun"), 0);
	tc_pair_close(&p.a, &p.b);
}

DROCE_TEST(resize_while_engines_write)
{
	uint64_t next[2] = { 0, 1000000 };
	static const uint32_t sizes[] = { 256, 512, 1024 };
	unsigned int round;
	struct pair p;

	unsigned int k;

	/* polling engines: b's write completions the whole time the resizes run */
	tc_next_pair_idle(0, 0);
	pair_open(&p, 256);
	for (round = 0; round < 300; round++) {
		/* 100 SENDs on each QP; the CQ is resized three times while their completions come */
		sends(&p, 0, next[0], 100);
		sends(&p, 1, next[1], 100);
		for (k = 0; k < 3; k++)
			CHECK_EQ_I64(tc_cq_resize(p.cb, sizes[(round + k) % 3]), 0);
		poll_in_order(&p, 200, next);
	}
	CHECK_EQ_U64(next[0], 30000);
	CHECK_EQ_U64(next[1], 1000000 + 30000);
	CHECK_EQ_U64(tc_counter(&p.b, "cq_overrun"), 0);
	tc_pair_close(&p.a, &p.b);
}
