/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine trusts nothing an application can write: lying ring indices, WQEs with
 * impossible fields, bad keys and doorbells for empty slots end in an error completion or
 * the lying QP in ERR, never in a crash, a read outside the rings or harm to another QP
 * (this suite also runs under ASan). Garbage is written straight into shared memory, as a
 * broken or hostile libdroce could.
 */
#include <string.h>
#include <unistd.h>

#include "droce_test.h"
#include "engine_client.h"

struct garbage_env {
	struct tc_host a, b;
	struct tc_cq *ca, *cb;
	struct tc_qp *victim_a, *victim_b;	/* the QP pair that gets garbage */
	struct tc_qp *good_a, *good_b;		/* a pair that must keep working */
	struct tc_mr *ma, *mb;
};

static void
env_open(struct garbage_env *g)
{
	struct tc_path path = { .mtu = IBV_MTU_1024, .timeout = 14, .retry_cnt = 7,
				.rnr_retry = 7, .min_rnr_timer = 1, .psn_a = 10, .psn_b = 20 };
	struct tc_qp_init in = { .type = DROCE_SHM_QPT_RC, .sq_size = 16, .rq_size = 16,
				 .max_sge = 2, .max_inline = 64 };

	tc_pair_open(&g->a, &g->b, 1, 1);
	g->ca = tc_cq_create(&g->a, 256);
	g->cb = tc_cq_create(&g->b, 256);
	in.scq = in.rcq = g->ca;
	g->victim_a = tc_qp_create(&g->a, &in);
	g->good_a = tc_qp_create(&g->a, &in);
	in.scq = in.rcq = g->cb;
	g->victim_b = tc_qp_create(&g->b, &in);
	g->good_b = tc_qp_create(&g->b, &in);
	g->ma = tc_mr_reg(&g->a, 1 << 16, IBV_ACCESS_LOCAL_WRITE);
	g->mb = tc_mr_reg(&g->b, 1 << 16, IBV_ACCESS_LOCAL_WRITE);
	tc_connect(g->victim_a, g->victim_b, &path);
	tc_connect(g->good_a, g->good_b, &path);
}

/* The good pair still moves a message, byte-exact, with the right completions. */
static void
good_pair_works(struct garbage_env *g, uint64_t id)
{
	struct ibv_wc wc[4];
	int n;

	memset(g->ma->buf + 4096, (int)(id & 0xFF), 3000);
	CHECK_EQ_I64(tc_recv(g->good_b, id, g->mb, 8192, 4096), 0);
	CHECK_EQ_I64(tc_send(g->good_a, id, g->ma, 4096, 3000, IBV_SEND_SIGNALED), 0);
	/* The victim's completions may come first: skip them, find the good pair's. */
	for (n = 0; n < 20; n++) {
		CHECK_EQ_I64(tc_wait(g->cb, 1, wc, 5000), 1);
		if (wc[0].qp_num == g->good_b->qpn)
			break;
	}
	CHECK_EQ_U64(wc[0].qp_num, g->good_b->qpn);
	CHECK_EQ_U64(wc[0].status, IBV_WC_SUCCESS);
	CHECK_EQ_U64(wc[0].wr_id, id);
	CHECK_EQ_U64(wc[0].byte_len, 3000);
	CHECK_MEM(g->mb->buf + 8192, g->ma->buf + 4096, 3000);
	for (n = 0; n < 20; n++) {
		CHECK_EQ_I64(tc_wait(g->ca, 1, wc, 5000), 1);
		if (wc[0].qp_num == g->good_a->qpn)
			break;
	}
	CHECK_EQ_U64(wc[0].qp_num, g->good_a->qpn);
	CHECK_EQ_U64(wc[0].status, IBV_WC_SUCCESS);
	CHECK_EQ_U64(wc[0].wr_id, id);
}

/* Rings the victim's doorbell as the client does after a post. */
static void
ring(struct tc_qp *qp)
{
	struct droce_shm_doorbell *db = qp->view.db.block;
	uint32_t slot = qp->view.db.slot;

	__atomic_fetch_or(&db->words[slot / 64], 1ull << (slot % 64), __ATOMIC_RELEASE);
	__atomic_fetch_or(&db->summary, 1ull << (slot / 64), __ATOMIC_RELEASE);
}

/* The QP's next send slot, filled with byte fill, for the test to write by hand. */
static struct droce_shm_swqe *
sq_slot(struct tc_qp *qp, int fill)
{
	struct droce_shm_swqe *s = (struct droce_shm_swqe *)(qp->view.sq +
		(size_t)(qp->view.sq_prod & (qp->view.sq_size - 1)) * qp->view.sq_stride);

	memset(s, fill, qp->view.sq_stride);
	return s;
}

/* Publishes the slot sq_slot() gave, as a post does, and rings the doorbell. */
static void
sq_publish(struct tc_qp *qp)
{
	qp->view.sq_prod++;
	__atomic_store_n(&qp->view.ctl->sq.prod, qp->view.sq_prod, __ATOMIC_RELEASE);
	ring(qp);
}

static uint32_t
wait_state(struct tc_qp *qp, uint32_t state)
{
	int i;

	for (i = 0; i < 2000 && tc_qp_state(qp) != state; i++)
		usleep(1000);
	return tc_qp_state(qp);
}

/* The victim sender's WQE completes with status, alone, and the QP ends in ERR. */
static void
expect_send_error(struct garbage_env *g, uint64_t wr_id, uint8_t status)
{
	struct ibv_wc wc[1];

	CHECK_EQ_I64(tc_wait(g->ca, 1, wc, 5000), 1);
	CHECK_EQ_U64(wc[0].wr_id, wr_id);
	CHECK_EQ_U64(wc[0].status, status);
	CHECK_EQ_U64(wc[0].qp_num, g->victim_a->qpn);
	CHECK_EQ_U64(wait_state(g->victim_a, DROCE_SHM_QPS_ERR), DROCE_SHM_QPS_ERR);
}

DROCE_TEST(send_ring_producer_far_ahead_errors_only_that_qp)
{
	struct garbage_env g;

	env_open(&g);
	/* A producer index a million WQEs ahead of a 16-entry ring. */
	__atomic_store_n(&g.victim_a->view.ctl->sq.prod, 1000000u, __ATOMIC_RELEASE);
	ring(g.victim_a);
	CHECK_EQ_U64(wait_state(g.victim_a, DROCE_SHM_QPS_ERR), DROCE_SHM_QPS_ERR);
	good_pair_works(&g, 1);
	tc_pair_close(&g.a, &g.b);
}

DROCE_TEST(wqe_with_impossible_fields_completes_in_error)
{
	struct garbage_env g;
	struct droce_shm_swqe *s;

	env_open(&g);
	/* A slot written by hand: num_sge 255 in a 2-SGE ring, the rest 0xA5. */
	s = sq_slot(g.victim_a, 0xA5);
	s->wr_id = 77;
	s->opcode = DROCE_SHM_WR_SEND;
	s->flags = DROCE_SHM_SEND_SIGNALED;
	s->num_sge = 255;
	sq_publish(g.victim_a);
	expect_send_error(&g, 77, IBV_WC_LOC_QP_OP_ERR);
	good_pair_works(&g, 2);
	tc_pair_close(&g.a, &g.b);
}

DROCE_TEST(inline_length_and_opcode_garbage)
{
	struct garbage_env g;
	struct droce_shm_swqe *s;
	uint32_t i;
	static const struct {
		uint8_t opcode;
		uint8_t flags;
		uint32_t inline_len;
		uint8_t status;
	} cases[] = {
		/* Inline longer than the stride can hold: a length error, nothing read past it. */
		{ DROCE_SHM_WR_SEND, DROCE_SHM_SEND_INLINE | DROCE_SHM_SEND_SIGNALED, 5000,
		  IBV_WC_LOC_LEN_ERR },
		{ DROCE_SHM_WR_SEND, DROCE_SHM_SEND_INLINE | DROCE_SHM_SEND_SIGNALED, 0xFFFFFFF0u,
		  IBV_WC_LOC_LEN_ERR },
		/* An opcode no QP has. */
		{ 0xEE, DROCE_SHM_SEND_SIGNALED, 0, IBV_WC_LOC_QP_OP_ERR },
	};

	for (i = 0; i < RTE_DIM(cases); i++) {
		droce_test_ctx("case %u", i);
		env_open(&g);
		s = sq_slot(g.victim_a, 0);
		s->wr_id = 100 + i;
		s->opcode = cases[i].opcode;
		s->flags = cases[i].flags;
		s->inline_len = cases[i].inline_len;
		sq_publish(g.victim_a);
		expect_send_error(&g, 100 + i, cases[i].status);
		good_pair_works(&g, 3 + i);
		tc_pair_close(&g.a, &g.b);
	}
}

DROCE_TEST(sge_outside_any_mr_is_a_protection_error)
{
	struct garbage_env g;
	struct droce_shm_swqe *s;
	struct droce_shm_sge *sge;

	env_open(&g);
	s = sq_slot(g.victim_a, 0);
	s->wr_id = 55;
	s->opcode = DROCE_SHM_WR_SEND;
	s->flags = DROCE_SHM_SEND_SIGNALED;
	s->num_sge = 1;
	sge = (struct droce_shm_sge *)(s + 1);
	/* The MR's key, but an address range far past its end: the engine must not read it. */
	sge->addr = (uintptr_t)g.ma->buf + (1u << 20);
	sge->length = 100;
	sge->lkey = g.ma->lkey;
	sq_publish(g.victim_a);
	expect_send_error(&g, 55, IBV_WC_LOC_PROT_ERR);
	good_pair_works(&g, 6);
	tc_pair_close(&g.a, &g.b);
}

DROCE_TEST(receive_ring_lies_and_bad_receive_sges)
{
	struct garbage_env g;
	struct droce_shm_rwqe *r;
	struct droce_shm_sge *sge;
	struct ibv_wc wc[4];
	uint32_t prod;

	/* A receive ring producer far ahead: the next message to it errors that QP only. */
	env_open(&g);
	__atomic_store_n(&g.victim_b->view.ctl->rq.prod, 0x80000000u, __ATOMIC_RELEASE);
	CHECK_EQ_I64(tc_send(g.victim_a, 1, g.ma, 0, 10, IBV_SEND_SIGNALED), 0);
	CHECK_EQ_U64(wait_state(g.victim_b, DROCE_SHM_QPS_ERR), DROCE_SHM_QPS_ERR);
	good_pair_works(&g, 7);
	tc_pair_close(&g.a, &g.b);

	/* A receive WQE whose SGE points outside its MR: LOC_PROT_ERR there, NAK here. */
	env_open(&g);
	prod = g.victim_b->view.rq_prod;
	r = (struct droce_shm_rwqe *)(g.victim_b->view.rq +
		(size_t)(prod & (g.victim_b->view.rq_size - 1)) * g.victim_b->view.rq_stride);
	r->wr_id = 88;
	r->num_sge = 1;
	sge = (struct droce_shm_sge *)(r + 1);
	sge->addr = (uintptr_t)g.mb->buf - 4096;
	sge->length = 4096;
	sge->lkey = g.mb->lkey;
	g.victim_b->view.rq_prod = prod + 1;
	__atomic_store_n(&g.victim_b->view.ctl->rq.prod, prod + 1, __ATOMIC_RELEASE);
	CHECK_EQ_I64(tc_send(g.victim_a, 2, g.ma, 0, 10, IBV_SEND_SIGNALED), 0);
	CHECK_EQ_I64(tc_wait(g.cb, 1, wc, 5000), 1);
	CHECK_EQ_U64(wc[0].wr_id, 88);
	CHECK_EQ_U64(wc[0].status, IBV_WC_LOC_PROT_ERR);
	CHECK_EQ_I64(tc_wait(g.ca, 1, wc, 5000), 1);
	CHECK_EQ_U64(wc[0].wr_id, 2);
	CHECK_EQ_U64(wc[0].status, IBV_WC_REM_OP_ERR);
	good_pair_works(&g, 8);
	tc_pair_close(&g.a, &g.b);
}

DROCE_TEST(cq_consumer_index_lie_overruns_only_that_cq)
{
	struct garbage_env g;
	struct droce_engine_event ev;
	struct tc_cq *lying;
	struct ibv_wc wc[2];
	struct tc_qp *qa, *qb;
	struct tc_path path = { .mtu = IBV_MTU_1024, .timeout = 14, .retry_cnt = 7,
				.rnr_retry = 7, .min_rnr_timer = 1, .psn_a = 1, .psn_b = 2 };
	struct tc_qp_init in = { .type = DROCE_SHM_QPT_RC, .sq_size = 16, .rq_size = 16,
				 .max_sge = 1, .max_inline = 0 };

	env_open(&g);
	lying = tc_cq_create(&g.b, 64);
	in.scq = in.rcq = g.ca;
	qa = tc_qp_create(&g.a, &in);
	in.scq = in.rcq = lying;
	qb = tc_qp_create(&g.b, &in);
	tc_connect(qa, qb, &path);
	/* A consumer index ahead of anything written: the next completion is an overrun. */
	__atomic_store_n(&lying->view.ctl->ring.cons, 0x7FFFFFFFu, __ATOMIC_RELEASE);
	CHECK_EQ_I64(tc_recv(qb, 1, g.mb, 0, 64), 0);
	CHECK_EQ_I64(tc_send(qa, 1, g.ma, 0, 10, 0), 0);
	CHECK_EQ_I64(tc_event(&g.b, &ev, 5000), 1);
	CHECK_EQ_U64(ev.type, DROCE_ENGINE_EVENT_CQ_ERR);
	CHECK_EQ_U64(ev.handle, lying->handle);
	CHECK(tc_poll(lying, 2, wc) < 0);
	CHECK_EQ_U64(wait_state(qb, DROCE_SHM_QPS_ERR), DROCE_SHM_QPS_ERR);
	good_pair_works(&g, 9);
	tc_pair_close(&g.a, &g.b);
}

DROCE_TEST(doorbells_for_empty_slots_are_ignored)
{
	struct garbage_env g;
	struct droce_shm_doorbell *db;
	unsigned int w;

	env_open(&g);
	db = g.victim_a->view.db.block;
	/* Every bit of every word: slots without a QP, and the QPs' own with nothing new. */
	for (w = 0; w < DROCE_SHM_DB_WORDS; w++)
		__atomic_store_n(&db->words[w], ~0ull, __ATOMIC_RELEASE);
	__atomic_store_n(&db->summary, ~0ull, __ATOMIC_RELEASE);
	usleep(20000);
	CHECK_EQ_U64(tc_qp_state(g.victim_a), DROCE_SHM_QPS_RTS);
	good_pair_works(&g, 10);
	tc_pair_close(&g.a, &g.b);
}
