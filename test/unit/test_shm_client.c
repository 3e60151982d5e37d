/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * The application side of the shared-memory ABI (droce_shm_client.h) against a fake
 * engine written here: the test allocates the rings, fills the views, posts and polls
 * through the library, and reads or writes the shared memory as an engine would. Two
 * stress tests run the fake engine on its own thread to check the memory orders.
 */

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "droce_shm_client.h"
#include "droce_test.h"

#define SQ_SIZE		8
#define RQ_SIZE		8
#define SRQ_SIZE	4
#define MAX_SGE		4
#define MAX_INLINE	100
#define CQ_LOG2		2
#define CQ_SIZE		(1u << CQ_LOG2)
/* Doorbell slot 77: word 1, bit 13. */
#define DB_SLOT		77
#define DB_WORD		1
#define DB_BIT		13
/* Unwritten ring bytes, so a field the library forgets to write shows. */
#define POISON		0xA5
#define ALL_OPS		0x3FFu	/* enum droce_shm_wr_opcode 0..9 */

/* Fake MR table. */
#define LKEY_RW		0x100	/* buf_rw, local write */
#define LKEY_RO		0x200	/* buf_ro, no access bits */
#define LKEY_HUGE	0x300	/* any range, local write: for the 2^31 limit */
#define LKEY_BAD	0xBAD
#define BUF_LEN		256
#define AH_LIVE		5
#define AH_DEAD		6

/* Records what the library asked the fake MR and AH tables, and what was published then. */
struct checker {
	const struct droce_shm_qp *ctl;
	const struct droce_shm_srq *srq_ctl;
	const struct droce_shm_doorbell *db;
	uint8_t *buf_rw;
	uint8_t *buf_ro;
	unsigned int lkey_calls;
	unsigned int ah_calls;
	unsigned int last_access;
	uint32_t last_ah;
	/* Shared state seen by the latest lkey check: publication must wait for the end. */
	uint32_t seen_sq_prod;
	uint32_t seen_rq_prod;
	uint32_t seen_srq_prod;
	uint64_t seen_summary;
};

struct fake {
	struct droce_shm_qp *ctl;
	struct droce_shm_doorbell *db;
	struct droce_shm_srq *srq_ctl;
	struct droce_shm_cq *cq_ctl;
	struct droce_shm_client_qp qp;
	struct droce_shm_client_srq srq;
	struct droce_shm_client_cq cq;
	struct checker chk;
	struct ibv_ah ah;
	struct ibv_mw mw;		/* what a BIND_MW names */
	struct ibv_mr mr;
	struct ibv_sge sge[MAX_SGE + 2];
};

/* size bytes at a cache-line boundary, zeroed; freed when the test ends. */
static void *
alloc_line(size_t size)
{
	uintptr_t p = (uintptr_t)droce_test_malloc(size + DROCE_SHM_CACHE_LINE);

	p = (p + DROCE_SHM_CACHE_LINE - 1) & ~(uintptr_t)(DROCE_SHM_CACHE_LINE - 1);
	memset((void *)p, 0, size);
	return (void *)p;
}

static bool
fake_lkey_check(void *arg, uint32_t lkey, uint64_t addr, uint64_t len, unsigned int access)
{
	struct checker *c = arg;
	uint64_t base;
	unsigned int mr_access;

	c->lkey_calls++;
	c->last_access = access;
	c->seen_sq_prod = __atomic_load_n(&c->ctl->sq.prod, __ATOMIC_RELAXED);
	c->seen_rq_prod = __atomic_load_n(&c->ctl->rq.prod, __ATOMIC_RELAXED);
	c->seen_srq_prod = __atomic_load_n(&c->srq_ctl->ring.prod, __ATOMIC_RELAXED);
	c->seen_summary = __atomic_load_n(&c->db->summary, __ATOMIC_RELAXED);
	switch (lkey) {
	case LKEY_RW:
		base = (uintptr_t)c->buf_rw;
		mr_access = IBV_ACCESS_LOCAL_WRITE;
		break;
	case LKEY_RO:
		base = (uintptr_t)c->buf_ro;
		mr_access = 0;
		break;
	case LKEY_HUGE:
		return true;
	default:
		return false;
	}
	return addr >= base && addr + len <= base + BUF_LEN && (access & ~mr_access) == 0;
}

static bool
fake_ah_check(void *arg, uint32_t ah)
{
	struct checker *c = arg;

	c->ah_calls++;
	c->last_ah = ah;
	return ah == AH_LIVE;
}

/* A QP of qp_type in state with an RQ (or an SRQ), a CQ, all rings poisoned. */
static void
fake_init(struct fake *f, uint8_t qp_type, uint32_t state, bool with_srq)
{
	uint32_t sq_stride = droce_shm_sq_stride(MAX_SGE, MAX_INLINE);
	uint32_t rq_stride = droce_shm_rq_stride(MAX_SGE);
	int i;

	memset(f, 0, sizeof(*f));
	f->ctl = alloc_line(sizeof(*f->ctl));
	f->db = alloc_line(sizeof(*f->db));
	f->srq_ctl = alloc_line(sizeof(*f->srq_ctl));
	f->cq_ctl = alloc_line(sizeof(*f->cq_ctl));
	f->ctl->state = state;

	f->chk.ctl = f->ctl;
	f->chk.srq_ctl = f->srq_ctl;
	f->chk.db = f->db;
	f->chk.buf_rw = droce_test_malloc(BUF_LEN);
	f->chk.buf_ro = droce_test_malloc(BUF_LEN);
	droce_test_rand_fill(f->chk.buf_rw, BUF_LEN);
	droce_test_rand_fill(f->chk.buf_ro, BUF_LEN);

	f->qp = (struct droce_shm_client_qp){
		.ctl = f->ctl,
		.sq = alloc_line((size_t)SQ_SIZE * sq_stride),
		.rq = with_srq ? NULL : alloc_line((size_t)RQ_SIZE * rq_stride),
		.sq_size = SQ_SIZE,
		.sq_stride = sq_stride,
		.sq_max_sge = MAX_SGE,
		.max_inline = MAX_INLINE,
		.rq_size = with_srq ? 0 : RQ_SIZE,
		.rq_stride = rq_stride,
		.rq_max_sge = MAX_SGE,
		.qp_num = 0x123,
		.qp_type = qp_type,
		.supported_wr = ALL_OPS,
		.db = { .block = f->db, .slot = DB_SLOT, .wake_fd = -1 },
		.lkey_check = fake_lkey_check,
		.ah_check = fake_ah_check,
		.check_arg = &f->chk,
	};
	memset(f->qp.sq, POISON, (size_t)SQ_SIZE * sq_stride);
	if (f->qp.rq != NULL)
		memset(f->qp.rq, POISON, (size_t)RQ_SIZE * rq_stride);

	f->srq = (struct droce_shm_client_srq){
		.ctl = f->srq_ctl,
		.ring = alloc_line((size_t)SRQ_SIZE * rq_stride),
		.size = SRQ_SIZE,
		.stride = rq_stride,
		.max_sge = MAX_SGE,
		.lkey_check = fake_lkey_check,
		.check_arg = &f->chk,
	};
	memset(f->srq.ring, POISON, (size_t)SRQ_SIZE * rq_stride);

	f->cq = (struct droce_shm_client_cq){
		.ctl = f->cq_ctl,
		.ring = alloc_line(CQ_SIZE * sizeof(struct droce_shm_cqe)),
		.size = CQ_SIZE,
		.log2_size = CQ_LOG2,
	};

	f->ah.handle = AH_LIVE;
	for (i = 0; i < MAX_SGE + 2; i++)
		f->sge[i] = (struct ibv_sge){
			.addr = (uintptr_t)f->chk.buf_rw + 16 * i,
			.length = 8 + i,
			.lkey = LKEY_RW,
		};
}

static uint8_t *
sq_slot(const struct fake *f, uint32_t idx)
{
	return f->qp.sq + (size_t)(idx & (SQ_SIZE - 1)) * f->qp.sq_stride;
}

static uint8_t *
rq_slot(const struct fake *f, uint32_t idx)
{
	return f->qp.rq + (size_t)(idx & (RQ_SIZE - 1)) * f->qp.rq_stride;
}

static uint8_t *
srq_slot(const struct fake *f, uint32_t idx)
{
	return f->srq.ring + (size_t)(idx & (SRQ_SIZE - 1)) * f->srq.stride;
}

static void
check_poisoned(const uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != POISON)
			droce_test_fail(__FILE__, __LINE__, "byte %zu of %zu written: 0x%02x",
					i, len, p[i]);
	droce_test_checks++;
}

/* The doorbell holds exactly our slot's bit (or nothing). */
static void
check_doorbell(const struct fake *f, bool rung)
{
	int w;

	CHECK_EQ_U64(f->db->summary, rung ? 1ull << DB_WORD : 0);
	for (w = 0; w < DROCE_SHM_DB_WORDS; w++)
		CHECK_EQ_U64(f->db->words[w], rung && w == DB_WORD ? 1ull << DB_BIT : 0);
}

/* The engine's side of a doorbell: take every bit. */
static void
doorbell_clear(struct fake *f)
{
	memset(f->db, 0, sizeof(*f->db));
}

/* A one-SGE SEND for f's QP type (UD: AH_LIVE, QPN and Q_Key set). */
static void
base_wr(struct fake *f, struct ibv_send_wr *wr, uint64_t wr_id)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = wr_id;
	wr->opcode = IBV_WR_SEND;
	wr->sg_list = &f->sge[0];
	wr->num_sge = 1;
	wr->send_flags = IBV_SEND_SIGNALED;
	/* Read only by a BIND_MW (its own union): a window, an MR, a range. */
	f->mw.rkey = 0x4242;
	f->mr.lkey = LKEY_RW;
	wr->bind_mw.mw = &f->mw;
	wr->bind_mw.rkey = 0x4243;
	wr->bind_mw.bind_info = (struct ibv_mw_bind_info){ .mr = &f->mr, .addr = 0x1000,
							   .length = 0x2000,
							   .mw_access_flags = IBV_ACCESS_REMOTE_WRITE };
	if (f->qp.qp_type == DROCE_SHM_QPT_UD) {
		wr->wr.ud.ah = &f->ah;
		wr->wr.ud.remote_qpn = 0xABCDEF;
		wr->wr.ud.remote_qkey = 0x80000000;
	}
}

static void
chain_send(struct ibv_send_wr *wr, int n)
{
	int i;

	for (i = 0; i < n; i++)
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
}

static void
chain_recv(struct ibv_recv_wr *wr, int n)
{
	int i;

	for (i = 0; i < n; i++)
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
}

/* The WQE header the library must write for a (non-inline) wr, built field by field. */
static void
expect_swqe(const struct fake *f, const struct ibv_send_wr *wr, struct droce_shm_swqe *e)
{
	memset(e, 0, sizeof(*e));
	e->wr_id = wr->wr_id;
	e->opcode = (uint8_t)wr->opcode;
	e->flags = (uint8_t)wr->send_flags;
	/* The local operations carry no SGEs. */
	e->num_sge = wr->opcode == IBV_WR_LOCAL_INV || wr->opcode == IBV_WR_BIND_MW ? 0 :
		     (uint8_t)wr->num_sge;
	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_LOCAL_INV:
		e->imm_data = wr->imm_data;
		break;
	default:
		break;
	}
	if (f->qp.qp_type == DROCE_SHM_QPT_UD) {
		e->ud.ah = wr->wr.ud.ah->handle;
		e->ud.remote_qpn = wr->wr.ud.remote_qpn;
		e->ud.remote_qkey = wr->wr.ud.remote_qkey;
		return;
	}
	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		e->rdma.remote_addr = wr->wr.rdma.remote_addr;
		e->rdma.rkey = wr->wr.rdma.rkey;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		e->atomic.remote_addr = wr->wr.atomic.remote_addr;
		e->atomic.compare_add = wr->wr.atomic.compare_add;
		e->atomic.swap = wr->wr.atomic.swap;
		e->atomic.rkey = wr->wr.atomic.rkey;
		break;
	case IBV_WR_BIND_MW:
		e->bind.addr = wr->bind_mw.bind_info.addr;
		e->bind.length = wr->bind_mw.bind_info.length;
		e->bind.mr_lkey = wr->bind_mw.bind_info.mr->lkey;
		e->bind.mw_rkey = wr->bind_mw.mw->rkey;
		e->bind.rkey = wr->bind_mw.rkey;
		e->bind.access = wr->bind_mw.bind_info.mw_access_flags;
		break;
	default:
		break;
	}
}

/* Slot holds wr as a non-inline WQE: header, SGEs, and nothing written past them. */
static void
check_swqe(const struct fake *f, const uint8_t *slot, const struct ibv_send_wr *wr)
{
	struct droce_shm_swqe e;
	size_t sges;

	expect_swqe(f, wr, &e);
	sges = (size_t)e.num_sge * sizeof(struct ibv_sge);
	CHECK_MEM(slot, &e, sizeof(e));
	CHECK_MEM(slot + sizeof(e), wr->sg_list, sges);
	check_poisoned(slot + sizeof(e) + sges, f->qp.sq_stride - sizeof(e) - sges);
}

/* ---- post_send: what lands in the slot ---- */

DROCE_TEST(send_every_rc_opcode_fields)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_SEND,
		IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP,
		IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_LOCAL_INV, IBV_WR_BIND_MW,
		IBV_WR_SEND_WITH_INV,
	};
	const unsigned int n = sizeof(ops) / sizeof(ops[0]);
	struct ibv_send_wr wr[sizeof(ops) / sizeof(ops[0])], *bad = NULL;
	struct ibv_sge atomic_sge;
	struct fake f;
	unsigned int i;

	fake_init(&f, DROCE_SHM_QPT_RC, DROCE_SHM_QPS_RTS, false);
	/* An atomic's local buffer is exactly its 8-byte result. */
	atomic_sge = f.sge[0];
	atomic_sge.length = 8;
	for (i = 0; i < n; i++) {
		base_wr(&f, &wr[i], 0x1111000000000000ull + i);
		wr[i].opcode = ops[i];
		wr[i].num_sge = (int)(i % (MAX_SGE + 1));
		if (ops[i] == IBV_WR_ATOMIC_CMP_AND_SWP || ops[i] == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			wr[i].sg_list = &atomic_sge;
			wr[i].num_sge = 1;
		}
		wr[i].send_flags = (unsigned int)i & (IBV_SEND_FENCE | IBV_SEND_SIGNALED |
						      IBV_SEND_SOLICITED);
		wr[i].imm_data = 0xA1B2C3D4 + i;
		/* The union's widest member, so every byte of it is defined. */
		wr[i].wr.atomic.remote_addr = 0x7000000000000008ull + 8 * i;
		wr[i].wr.atomic.compare_add = 0x0102030405060708ull * (i + 1);
		wr[i].wr.atomic.swap = 0x1122334455667788ull + i;
		wr[i].wr.atomic.rkey = 0xCAFE0000 + i;
	}
	/* Ten WRs, eight slots: two calls. */
	chain_send(wr, (int)n);
	wr[SQ_SIZE - 1].next = NULL;
	CHECK_EQ_I64(droce_shm_post_send(&f.qp, &wr[0], &bad), 0);
	CHECK(bad == NULL);
	CHECK_EQ_U64(f.qp.sq_prod, SQ_SIZE);
	CHECK_EQ_U64(f.ctl->sq.prod, SQ_SIZE);
	for (i = 0; i < SQ_SIZE; i++) {
		droce_test_ctx("opcode %d", (int)ops[i]);
		check_swqe(&f, sq_slot(&f, i), &wr[i]);
	}
	f.ctl->sq.cons = n - SQ_SIZE;
	CHECK_EQ_I64(droce_shm_post_send(&f.qp, &wr[SQ_SIZE], &bad), 0);
	CHECK_EQ_U64(f.ctl->sq.prod, n);
	for (i = SQ_SIZE; i < n; i++) {
		droce_test_ctx("opcode %d", (int)ops[i]);
		check_swqe(&f, sq_slot(&f, i), &wr[i]);
	}
	/* The last one checked, a SEND_WITH_INV, asked for no access bit. */
	CHECK_EQ_U64(f.chk.last_access, 0);
}

/* The HCA writes into the local buffer of a READ or an atomic: local write is asked. */
DROCE_TEST(send_access_asked_per_opcode)
{
	static const struct {
		enum ibv_wr_opcode op;
		unsigned int access;
	} cases[] = {
		{ IBV_WR_RDMA_WRITE, 0 },
		{ IBV_WR_RDMA_WRITE_WITH_IMM, 0 },
		{ IBV_WR_SEND, 0 },
		{ IBV_WR_SEND_WITH_IMM, 0 },
		{ IBV_WR_SEND_WITH_INV, 0 },
		{ IBV_WR_RDMA_READ, IBV_ACCESS_LOCAL_WRITE },
		{ IBV_WR_ATOMIC_CMP_AND_SWP, IBV_ACCESS_LOCAL_WRITE },
		{ IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_ACCESS_LOCAL_WRITE },
	};
	struct ibv_send_wr wr, *bad = NULL;
	struct fake f;
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		droce_test_ctx("opcode %d", (int)cases[i].op);
		fake_init(&f, DROCE_SHM_QPT_RC, DROCE_SHM_QPS_RTS, false);
		base_wr(&f, &wr, 1);
		wr.opcode = cases[i].op;
		f.chk.last_access = 0xFFFF;
		CHECK_EQ_I64(droce_shm_post_send(&f.qp, &wr, &bad), 0);
		CHECK_EQ_U64(f.chk.lkey_calls, 1);
		CHECK_EQ_U64(f.chk.last_access, cases[i].access);
	}
}

DROCE_TEST(send_ud_fields)
{
	struct ibv_send_wr wr[2], *bad = NULL;
	struct fake f;

	fake_init(&f, DROCE_SHM_QPT_UD, DROCE_SHM_QPS_RTS, false);
	base_wr(&f, &wr[0], 42);
	base_wr(&f, &wr[1], 43);
	wr[1].opcode = IBV_WR_SEND_WITH_IMM;
	wr[1].imm_data = 0x44332211;
	wr[1].wr.ud.remote_qpn = 0x000001;
	wr[1].wr.ud.remote_qkey = 0x11111111;
	wr[1].num_sge = 2;
	chain_send(wr, 2);
	CHECK_EQ_I64(droce_shm_post_send(&f.qp, wr, &bad), 0);
	CHECK_EQ_U64(f.chk.ah_calls, 2);
	CHECK_EQ_U64(f.chk.last_ah, AH_LIVE);
	check_swqe(&f, sq_slot(&f, 0), &wr[0]);
	check_swqe(&f, sq_slot(&f, 1), &wr[1]);
	/* The raw bytes too, in case expect_swqe and the library agree on a wrong member. */
	CHECK_EQ_U64(((struct droce_shm_swqe *)sq_slot(&f, 1))->ud.ah, AH_LIVE);
	CHECK_EQ_U64(((struct droce_shm_swqe *)sq_slot(&f, 1))->ud.remote_qkey, 0x11111111);
}

DROCE_TEST(send_inline_copies_now)
{
	uint8_t src[MAX_INLINE], want[MAX_INLINE];
	struct ibv_sge sge[3];
	struct ibv_send_wr wr, *bad = NULL;
	struct droce_shm_swqe e;
	struct fake f;
	const uint8_t *slot;

	fake_init(&f, DROCE_SHM_QPT_RC, DROCE_SHM_QPS_RTS, false);
	droce_test_rand_fill(src, sizeof(src));
	/* Three pieces, no registered memory at all: inline needs no lkey. */
	sge[0] = (struct ibv_sge){ .addr = (uintptr_t)&src[0], .length = 10, .lkey = LKEY_BAD };
	sge[1] = (struct ibv_sge){ .addr = (uintptr_t)&src[50], .length = 0, .lkey = LKEY_BAD };
	sge[2] = (struct ibv_sge){ .addr = (uintptr_t)&src[20], .length = 25, .lkey = 0 };
	memcpy(want, &src[0], 10);
	memcpy(want + 10, &src[20], 25);
	base_wr(&f, &wr, 77);
	wr.sg_list = sge;
	wr.num_sge = 3;
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.imm_data = 0x01020304;
	wr.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
	CHECK_EQ_I64(droce_shm_post_send(&f.qp, &wr, &bad), 0);
	CHECK_EQ_U64(f.chk.lkey_calls, 0);
	/* The application may reuse its buffer as soon as post returns. */
	memset(src, 0, sizeof(src));
	slot = sq_slot(&f, 0);
	memset(&e, 0, sizeof(e));
	e.wr_id = 77;
	e.opcode = IBV_WR_SEND_WITH_IMM;
	e.flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
	e.num_sge = 0;
	e.inline_len = 35;
	e.imm_data = 0x01020304;
	CHECK_MEM(slot, &e, sizeof(e));
	CHECK_MEM(slot + sizeof(e), want, 35);
	check_poisoned(slot + sizeof(e) + 35, f.qp.sq_stride - sizeof(e) - 35);

	/* Exactly max_inline fits, RDMA WRITE too. */
	droce_test_rand_fill(src, sizeof(src));
	memcpy(want, src, sizeof(src));
	sge[0] = (struct ibv_sge){ .addr = (uintptr_t)src, .length = MAX_INLINE };
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = 0x1000;
	wr.wr.rdma.rkey = 0x77;
	wr.send_flags = IBV_SEND_INLINE;
	CHECK_EQ_I64(droce_shm_post_send(&f.qp, &wr, &bad), 0);
	slot = sq_slot(&f, 1);
	CHECK_EQ_U64(((const struct droce_shm_swqe *)slot)->inline_len, MAX_INLINE);
	CHECK_EQ_U64(((const struct droce_shm_swqe *)slot)->rdma.rkey, 0x77);
	CHECK_EQ_U64(((const struct droce_shm_swqe *)slot)->imm_data, 0);
	CHECK_MEM(slot + sizeof(e), want, MAX_INLINE);
	CHECK_EQ_U64(f.chk.lkey_calls, 0);
}

/* READ's local buffer is a destination: INLINE does not apply, the SGEs are checked. */
DROCE_TEST(send_inline_ignored_on_read_and_atomic)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD,
	};
	struct ibv_send_wr wr, *bad = NULL;
	struct droce_shm_swqe *h;
	struct fake f;
	unsigned int i;

	for (i = 0; i < 3; i++) {
		droce_test_ctx("opcode %d", (int)ops[i]);
		fake_init(&f, DROCE_SHM_QPT_RC, DROCE_SHM_QPS_RTS, false);
		base_wr(&f, &wr, 5);
		wr.opcode = ops[i];
		wr.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
		CHECK_EQ_I64(droce_shm_post_send(&f.qp, &wr, &bad), 0);
		CHECK_EQ_U64(f.chk.lkey_calls, 1);
		h = (struct droce_shm_swqe *)sq_slot(&f, 0);
		CHECK_EQ_U64(h->flags, IBV_SEND_SIGNALED);
		CHECK_EQ_U64(h->num_sge, 1);
		CHECK_EQ_U64(h->inline_len, 0);
		CHECK_MEM(h + 1, &f.sge[0], sizeof(f.sge[0]));
	}
}

DROCE_TEST(send_flags_copied)
{
	struct ibv_send_wr wr, *bad = NULL;
	struct fake f;

	fake_init(&f, DROCE_SHM_QPT_RC, DROCE_SHM_QPS_RTS, false);
	base_wr(&f, &wr, 5);
	/* Every verbs flag of the WQE's byte, and a high bit that is not ours to pass. */
	wr.send_flags = IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED |
			IBV_SEND_IP_CSUM | 0x80000000u;
	CHECK_EQ_I64(droce_shm_post_send(&f.qp, &wr, &bad), 0);
	CHECK_EQ_U64(((struct droce_shm_swqe *)sq_slot(&f, 0))->flags,
		     IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_IP_CSUM);
}

/* ---- post_send: validation ---- */

/*
 * Opcode against QP type, every pair: UD sends only, UC adds RDMA WRITE, RC everything.
 * Then again with an engine that supports nothing: what the type allows is EOPNOTSUPP,
 * the rest still EINVAL.
 */
DROCE_TEST(send_opcode_per_qp_type)
{
	static const uint8_t types[] = { DROCE_SHM_QPT_RC, DROCE_SHM_QPT_UC, DROCE_SHM_QPT_UD };
	static const char *const allowed[] = {
		"1111111111000011",	/* RC: opcodes 0..9, FLUSH (14), ATOMIC WRITE (15) */
		"1111000000000000",	/* UC */
		"0011000000000000",	/* UD */
	};
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge8;
	struct fake f;
	unsigned int t, op, sup;

	for (sup = 0; sup < 2; sup++) {
		for (t = 0; t < 3; t++) {
			for (op = 0; op <= IBV_WR_ATOMIC_WRITE + 6; op++) {
				bool ok = op <= IBV_WR_ATOMIC_WRITE && allowed[t][op] == '1';
				int want = ok && sup == 0 ? 0 : ok ? EOPNOTSUPP : EINVAL;

				droce_test_ctx("qp type %u opcode %u supported %s", types[t], op,
					       sup == 0 ? "all" : "none");
				fake_init(&f, types[t], DROCE_SHM_QPS_RTS, false);
				f.qp.supported_wr = sup == 0 ? 0xFFFFFFFFu : 0;
				base_wr(&f, &wr, op);
				wr.opcode = (enum ibv_wr_opcode)op;
				/* a FLUSH names a placement type, an ATOMIC WRITE has 8 bytes */
				if (op == DROCE_SHM_WR_FLUSH)
					wr.qp_type.xrc.remote_srqn = DROCE_SHM_FLUSH_GLOBAL;
				if (op == IBV_WR_ATOMIC_WRITE) {
					sge8 = f.sge[0];
					sge8.length = 8;
					wr.sg_list = &sge8;
				}
				bad = NULL;
				CHECK_EQ_I64(droce_shm_post_send(&f.qp, &wr, &bad), want);
				CHECK(bad == (want == 0 ? NULL : &wr));
				CHECK_EQ_U64(f.ctl->sq.prod, want == 0 ? 1 : 0);
			}
		}
	}
}

struct send_err_case {
	const char *name;
	uint8_t qp_type;
	uint32_t supported;
	void (*spoil)(struct fake *f, struct ibv_send_wr *wr);
	int err;
};

static void
spoil_sge_over(struct fake *f, struct ibv_send_wr *wr)
{
	wr->sg_list = f->sge;
	wr->num_sge = MAX_SGE + 1;
}

static void
spoil_sge_negative(struct fake *f, struct ibv_send_wr *wr)
{
	(void)f;
	wr->num_sge = -1;
}

static void
spoil_op_write(struct fake *f, struct ibv_send_wr *wr)
{
	(void)f;
	wr->opcode = IBV_WR_RDMA_WRITE;
}

static void
spoil_op_read(struct fake *f, struct ibv_send_wr *wr)
{
	(void)f;
	wr->opcode = IBV_WR_RDMA_READ;
}

static void
spoil_op_send_inv(struct fake *f, struct ibv_send_wr *wr)
{
	(void)f;
	wr->opcode = IBV_WR_SEND_WITH_INV;
}

static void
spoil_op_tso(struct fake *f, struct ibv_send_wr *wr)
{
	(void)f;
	wr->opcode = IBV_WR_TSO;
}

static void
spoil_op_huge(struct fake *f, struct ibv_send_wr *wr)
{
	(void)f;
	wr->opcode = (enum ibv_wr_opcode)1000;
}

static void
spoil_op_bind_mw(struct fake *f, struct ibv_send_wr *wr)
{
	(void)f;
	wr->opcode = IBV_WR_BIND_MW;
}

static void
spoil_bind_no_mw(struct fake *f, struct ibv_send_wr *wr)
{
	spoil_op_bind_mw(f, wr);
	wr->bind_mw.mw = NULL;
}

static void
spoil_bind_no_mr(struct fake *f, struct ibv_send_wr *wr)
{
	spoil_op_bind_mw(f, wr);
	wr->bind_mw.bind_info.mr = NULL;	/* with a length: only an unbind has no MR */
}

static void
spoil_op_fadd(struct fake *f, struct ibv_send_wr *wr)
{
	(void)f;
	wr->opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
}

static void
spoil_inline_long(struct fake *f, struct ibv_send_wr *wr)
{
	/* Two pieces adding up to one byte over max_inline. */
	wr->sg_list = &f->sge[MAX_SGE];
	wr->num_sge = 2;
	f->sge[MAX_SGE].length = MAX_INLINE / 2;
	f->sge[MAX_SGE + 1].length = MAX_INLINE - MAX_INLINE / 2 + 1;
	wr->send_flags |= IBV_SEND_INLINE;
}

static void
spoil_lkey(struct fake *f, struct ibv_send_wr *wr)
{
	/* The third SGE of three is the bad one. */
	wr->sg_list = &f->sge[MAX_SGE - 1];
	wr->num_sge = 3;
	f->sge[MAX_SGE + 1].lkey = LKEY_BAD;
}

static void
spoil_range(struct fake *f, struct ibv_send_wr *wr)
{
	wr->sg_list = &f->sge[MAX_SGE];
	f->sge[MAX_SGE].addr = (uintptr_t)f->chk.buf_rw + BUF_LEN - 4;
	f->sge[MAX_SGE].length = 5;
}

static void
spoil_read_ro(struct fake *f, struct ibv_send_wr *wr)
{
	wr->opcode = IBV_WR_RDMA_READ;
	wr->sg_list = &f->sge[MAX_SGE];
	f->sge[MAX_SGE].lkey = LKEY_RO;
	f->sge[MAX_SGE].addr = (uintptr_t)f->chk.buf_ro;
}

static void
spoil_atomic_ro(struct fake *f, struct ibv_send_wr *wr)
{
	spoil_read_ro(f, wr);
	wr->opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
}

static void
spoil_too_long(struct fake *f, struct ibv_send_wr *wr)
{
	/* 2^31 + 1 bytes in two SGEs. */
	wr->sg_list = &f->sge[MAX_SGE];
	wr->num_sge = 2;
	f->sge[MAX_SGE] = (struct ibv_sge){ .addr = 0x10000, .length = 1u << 30,
					    .lkey = LKEY_HUGE };
	f->sge[MAX_SGE + 1] = (struct ibv_sge){ .addr = 0x10000, .length = (1u << 30) + 1,
						.lkey = LKEY_HUGE };
}

static void
spoil_too_long_overflow(struct fake *f, struct ibv_send_wr *wr)
{
	/* Two SGEs of 2^32 - 1: a 32-bit sum would wrap to a small length. */
	spoil_too_long(f, wr);
	f->sge[MAX_SGE].length = UINT32_MAX;
	f->sge[MAX_SGE + 1].length = 2;
}

static void
spoil_ah_null(struct fake *f, struct ibv_send_wr *wr)
{
	(void)f;
	wr->wr.ud.ah = NULL;
}

static void
spoil_ah_dead(struct fake *f, struct ibv_send_wr *wr)
{
	static struct ibv_ah dead = { .handle = AH_DEAD };

	(void)f;
	wr->wr.ud.ah = &dead;
}

static const struct send_err_case send_err_cases[] = {
	{ "too many SGEs", DROCE_SHM_QPT_RC, ALL_OPS, spoil_sge_over, EINVAL },
	{ "negative num_sge", DROCE_SHM_QPT_RC, ALL_OPS, spoil_sge_negative, EINVAL },
	{ "RDMA WRITE on UD", DROCE_SHM_QPT_UD, ALL_OPS, spoil_op_write, EINVAL },
	{ "RDMA READ on UC", DROCE_SHM_QPT_UC, ALL_OPS, spoil_op_read, EINVAL },
	{ "SEND_WITH_INV on UC", DROCE_SHM_QPT_UC, ALL_OPS, spoil_op_send_inv, EINVAL },
	{ "TSO opcode", DROCE_SHM_QPT_RC, 0xFFFFFFFFu, spoil_op_tso, EINVAL },
	{ "opcode 1000", DROCE_SHM_QPT_RC, 0xFFFFFFFFu, spoil_op_huge, EINVAL },
	/* The type check comes first: an opcode both wrong and unsupported is EINVAL. */
	{ "READ on UD, unsupported", DROCE_SHM_QPT_UD, 1u << IBV_WR_SEND, spoil_op_read, EINVAL },
	{ "BIND_MW unsupported", DROCE_SHM_QPT_RC, ALL_OPS & ~(1u << IBV_WR_BIND_MW),
	  spoil_op_bind_mw, EOPNOTSUPP },
	{ "BIND_MW on UC", DROCE_SHM_QPT_UC, ALL_OPS, spoil_op_bind_mw, EINVAL },
	{ "BIND_MW without a window", DROCE_SHM_QPT_RC, ALL_OPS, spoil_bind_no_mw, EINVAL },
	{ "BIND_MW of a range without an MR", DROCE_SHM_QPT_RC, ALL_OPS, spoil_bind_no_mr,
	  EINVAL },
	{ "atomics unsupported", DROCE_SHM_QPT_RC, ALL_OPS & ~(1u << IBV_WR_ATOMIC_FETCH_AND_ADD),
	  spoil_op_fadd, EOPNOTSUPP },
	{ "inline over max_inline", DROCE_SHM_QPT_RC, ALL_OPS, spoil_inline_long, EINVAL },
	{ "bad lkey", DROCE_SHM_QPT_RC, ALL_OPS, spoil_lkey, EINVAL },
	{ "SGE past its MR", DROCE_SHM_QPT_RC, ALL_OPS, spoil_range, EINVAL },
	{ "READ into read-only MR", DROCE_SHM_QPT_RC, ALL_OPS, spoil_read_ro, EINVAL },
	{ "atomic into read-only MR", DROCE_SHM_QPT_RC, ALL_OPS, spoil_atomic_ro, EINVAL },
	{ "2^31 + 1 bytes", DROCE_SHM_QPT_RC, ALL_OPS, spoil_too_long, EINVAL },
	{ "length over 2^32", DROCE_SHM_QPT_UC, ALL_OPS, spoil_too_long_overflow, EINVAL },
	{ "UD without AH", DROCE_SHM_QPT_UD, ALL_OPS, spoil_ah_null, EINVAL },
	{ "UD with a dead AH", DROCE_SHM_QPT_UD, ALL_OPS, spoil_ah_dead, EINVAL },
};

/*
 * Each bad WR in the middle of three: the first is posted (slot written, prod 1,
 * published, doorbell rung), the bad one and the one after are not (slots untouched).
 * Then the bad WR first: nothing posted, no doorbell.
 */
DROCE_TEST(send_errors_stop_at_bad_wr)
{
	struct ibv_send_wr wr[3], *bad;
	struct fake f;
	unsigned int i, pos, k;

	for (i = 0; i < sizeof(send_err_cases) / sizeof(send_err_cases[0]); i++) {
		const struct send_err_case *c = &send_err_cases[i];

		for (pos = 0; pos < 2; pos++) {
			droce_test_ctx("%s, bad WR %u", c->name, pos);
			fake_init(&f, c->qp_type, DROCE_SHM_QPS_RTS, false);
			f.qp.supported_wr = c->supported;
			for (k = 0; k < 3; k++)
				base_wr(&f, &wr[k], 100 + k);
			chain_send(wr, 3);
			c->spoil(&f, &wr[pos]);
			bad = NULL;
			CHECK_EQ_I64(droce_shm_post_send(&f.qp, wr, &bad), c->err);
			CHECK(bad == &wr[pos]);
			CHECK_EQ_U64(f.qp.sq_prod, pos);
			CHECK_EQ_U64(f.ctl->sq.prod, pos);
			check_doorbell(&f, pos > 0);
			if (pos > 0)
				check_swqe(&f, sq_slot(&f, 0), &wr[0]);
			for (k = pos; k < SQ_SIZE; k++)
				check_poisoned(sq_slot(&f, k), f.qp.sq_stride);
		}
	}
}

/* The limits themselves are accepted: MAX_SGE SGEs, exactly 2^31 bytes. */
DROCE_TEST(send_limits_accepted)
{
	struct ibv_send_wr wr, *bad = NULL;
	struct fake f;

	fake_init(&f, DROCE_SHM_QPT_RC, DROCE_SHM_QPS_RTS, false);
	base_wr(&f, &wr, 1);
	wr.num_sge = MAX_SGE;
	CHECK_EQ_I64(droce_shm_post_send(&f.qp, &wr, &bad), 0);
	check_swqe(&f, sq_slot(&f, 0), &wr);
	spoil_too_long(&f, &wr);
	f.sge[MAX_SGE + 1].length = 1u << 30;
	CHECK_EQ_I64(droce_shm_post_send(&f.qp, &wr, &bad), 0);
	check_swqe(&f, sq_slot(&f, 1), &wr);
	/* No SGE at all: a zero-length SEND. */
	wr.num_sge = 0;
	CHECK_EQ_I64(droce_shm_post_send(&f.qp, &wr, &bad), 0);
	check_swqe(&f, sq_slot(&f, 2), &wr);
	CHECK(bad == NULL);
	/* An empty list posts nothing and rings nothing. */
	doorbell_clear(&f);
	CHECK_EQ_I64(droce_shm_post_send(&f.qp, NULL, &bad), 0);
	CHECK_EQ_U64(f.ctl->sq.prod, 3);
	check_doorbell(&f, false);
}

/* RESET, INIT, RTR refuse (first WR, nothing posted); RTS, SQD, SQE, ERR accept. */
DROCE_TEST(send_per_qp_state)
{
	struct ibv_send_wr wr[2], *bad;
	struct fake f;
	uint32_t st;

	for (st = DROCE_SHM_QPS_RESET; st <= DROCE_SHM_QPS_ERR + 1; st++) {
		bool ok = st >= DROCE_SHM_QPS_RTS && st <= DROCE_SHM_QPS_ERR;

		droce_test_ctx("state %u", st);
		fake_init(&f, DROCE_SHM_QPT_RC, st, false);
		base_wr(&f, &wr[0], 1);
		base_wr(&f, &wr[1], 2);
		chain_send(wr, 2);
		bad = NULL;
		CHECK_EQ_I64(droce_shm_post_send(&f.qp, wr, &bad), ok ? 0 : EINVAL);
		CHECK(bad == (ok ? NULL : &wr[0]));
		CHECK_EQ_U64(f.ctl->sq.prod, ok ? 2 : 0);
		CHECK_EQ_U64(f.qp.sq_prod, ok ? 2 : 0);
		check_doorbell(&f, ok);
		if (ok) {
			check_swqe(&f, sq_slot(&f, 0), &wr[0]);
			check_swqe(&f, sq_slot(&f, 1), &wr[1]);
		} else {
			check_poisoned(sq_slot(&f, 0), f.qp.sq_stride);
		}
	}
}

/* ENOMEM at exactly sq_size in flight; slots wrap; cons is re-read when it moves. */
DROCE_TEST(send_ring_full)
{
	struct ibv_send_wr wr[SQ_SIZE + 3], *bad;
	struct fake f;
	unsigned int i;

	fake_init(&f, DROCE_SHM_QPT_RC, DROCE_SHM_QPS_RTS, false);
	for (i = 0; i < SQ_SIZE + 3; i++)
		base_wr(&f, &wr[i], 1000 + i);
	chain_send(wr, SQ_SIZE + 3);
	bad = NULL;
	CHECK_EQ_I64(droce_shm_post_send(&f.qp, wr, &bad), ENOMEM);
	CHECK(bad == &wr[SQ_SIZE]);
	CHECK_EQ_U64(f.ctl->sq.prod, SQ_SIZE);
	check_doorbell(&f, true);
	doorbell_clear(&f);
	/* Still full: nothing more, no doorbell. */
	CHECK_EQ_I64(droce_shm_post_send(&f.qp, &wr[SQ_SIZE], &bad), ENOMEM);
	CHECK(bad == &wr[SQ_SIZE]);
	CHECK_EQ_U64(f.ctl->sq.prod, SQ_SIZE);
	check_doorbell(&f, false);
	/* The engine retires two: two more go in, into slots 0 and 1. */
	__atomic_store_n(&f.ctl->sq.cons, 2, __ATOMIC_RELEASE);
	CHECK_EQ_I64(droce_shm_post_send(&f.qp, &wr[SQ_SIZE], &bad), ENOMEM);
	CHECK(bad == &wr[SQ_SIZE + 2]);
	CHECK_EQ_U64(f.ctl->sq.prod, SQ_SIZE + 2);
	check_swqe(&f, sq_slot(&f, 0), &wr[SQ_SIZE]);
	check_swqe(&f, sq_slot(&f, 1), &wr[SQ_SIZE + 1]);
	check_swqe(&f, sq_slot(&f, 2), &wr[2]);
	check_doorbell(&f, true);
}

/*
 * The producer index and the doorbell are published once, after the whole list: while
 * the library checks the third WR of a call, the engine still sees the old prod and no
 * doorbell. The last doorbell slot exercises word 63, bit 63.
 */
DROCE_TEST(send_publishes_once_per_call)
{
	struct ibv_send_wr wr[3], *bad = NULL;
	struct fake f;
	int k;

	fake_init(&f, DROCE_SHM_QPT_RC, DROCE_SHM_QPS_RTS, false);
	for (k = 0; k < 3; k++)
		base_wr(&f, &wr[k], k);
	chain_send(wr, 3);
	CHECK_EQ_I64(droce_shm_post_send(&f.qp, wr, &bad), 0);
	CHECK_EQ_U64(f.chk.lkey_calls, 3);
	CHECK_EQ_U64(f.chk.seen_sq_prod, 0);
	CHECK_EQ_U64(f.chk.seen_summary, 0);
	CHECK_EQ_U64(f.ctl->sq.prod, 3);
	check_doorbell(&f, true);
	/* The engine took the doorbell; the next call rings again. */
	doorbell_clear(&f);
	CHECK_EQ_I64(droce_shm_post_send(&f.qp, wr, &bad), 0);
	CHECK_EQ_U64(f.chk.seen_sq_prod, 3);
	CHECK_EQ_U64(f.chk.seen_summary, 0);
	CHECK_EQ_U64(f.ctl->sq.prod, 6);
	check_doorbell(&f, true);

	doorbell_clear(&f);
	f.qp.db.slot = DROCE_SHM_DB_SLOTS - 1;
	f.ctl->sq.cons = 6;
	CHECK_EQ_I64(droce_shm_post_send(&f.qp, wr, &bad), 0);
	CHECK_EQ_U64(f.db->summary, 1ull << 63);
	CHECK_EQ_U64(f.db->words[DROCE_SHM_DB_WORDS - 1], 1ull << 63);
	CHECK_EQ_U64(f.db->words[DB_WORD], 0);
	/* Bits already set by an earlier post stay set (fetch-or, not a store). */
	f.qp.db.slot = DB_SLOT;
	CHECK_EQ_I64(droce_shm_post_send(&f.qp, &wr[2], &bad), 0);
	CHECK_EQ_U64(f.db->summary, (1ull << 63) | (1ull << DB_WORD));
	CHECK_EQ_U64(f.db->words[DROCE_SHM_DB_WORDS - 1], 1ull << 63);
	CHECK_EQ_U64(f.db->words[DB_WORD], 1ull << DB_BIT);
}

/*
 * A sleeping engine (droce_shm_doorbell.sleeping) gets its eventfd written after the
 * doorbell, once per call; an awake one gets no system call.
 */
DROCE_TEST(send_wakes_only_a_sleeping_engine)
{
	struct ibv_send_wr wr[2], *bad = NULL;
	uint64_t n = 0;
	struct fake f;
	int efd, k;

	efd = eventfd(0, EFD_NONBLOCK);
	CHECK(efd >= 0);
	fake_init(&f, DROCE_SHM_QPT_RC, DROCE_SHM_QPS_RTS, false);
	f.qp.db.wake_fd = efd;
	for (k = 0; k < 2; k++)
		base_wr(&f, &wr[k], k);
	chain_send(wr, 2);
	CHECK_EQ_I64(droce_shm_post_send(&f.qp, wr, &bad), 0);
	CHECK(read(efd, &n, sizeof(n)) < 0 && errno == EAGAIN);	/* awake: not written */

	doorbell_clear(&f);
	f.db->sleeping = 1;
	f.ctl->sq.cons = 2;
	CHECK_EQ_I64(droce_shm_post_send(&f.qp, wr, &bad), 0);
	CHECK_EQ_I64(read(efd, &n, sizeof(n)), (int64_t)sizeof(n));
	CHECK_EQ_U64(n, 1);
	check_doorbell(&f, true);
	close(efd);
}

/* ---- post_recv and post_srq_recv ---- */

static void
base_recv(struct fake *f, struct ibv_recv_wr *wr, uint64_t wr_id, int num_sge)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = wr_id;
	wr->sg_list = f->sge;
	wr->num_sge = num_sge;
}

static void
check_rwqe(const uint8_t *slot, uint32_t stride, const struct ibv_recv_wr *wr)
{
	struct droce_shm_rwqe e = { .wr_id = wr->wr_id, .num_sge = (uint32_t)wr->num_sge };
	size_t sges = (size_t)wr->num_sge * sizeof(struct ibv_sge);

	CHECK_MEM(slot, &e, sizeof(e));
	CHECK_MEM(slot + sizeof(e), wr->sg_list, sges);
	check_poisoned(slot + sizeof(e) + sges, stride - sizeof(e) - sges);
}

DROCE_TEST(recv_fields_and_no_doorbell)
{
	struct ibv_recv_wr wr[MAX_SGE + 1], *bad = NULL;
	struct fake f;
	int k;

	fake_init(&f, DROCE_SHM_QPT_RC, DROCE_SHM_QPS_INIT, false);
	for (k = 0; k <= MAX_SGE; k++)
		base_recv(&f, &wr[k], 0x5000000000000000ull + (uint64_t)k, k);
	chain_recv(wr, MAX_SGE + 1);
	CHECK_EQ_I64(droce_shm_post_recv(&f.qp, wr, &bad), 0);
	CHECK(bad == NULL);
	CHECK_EQ_U64(f.chk.last_access, IBV_ACCESS_LOCAL_WRITE);
	/* Published once, at the end. */
	CHECK_EQ_U64(f.chk.seen_rq_prod, 0);
	CHECK_EQ_U64(f.ctl->rq.prod, MAX_SGE + 1);
	CHECK_EQ_U64(f.qp.rq_prod, MAX_SGE + 1);
	for (k = 0; k <= MAX_SGE; k++)
		check_rwqe(rq_slot(&f, (uint32_t)k), f.qp.rq_stride, &wr[k]);
	check_poisoned(rq_slot(&f, MAX_SGE + 1), f.qp.rq_stride);
	check_doorbell(&f, false);
	CHECK_EQ_U64(f.ctl->sq.prod, 0);
}

/* RESET refuses; every other state accepts (ERR: the engine flushes them). */
DROCE_TEST(recv_per_qp_state)
{
	struct ibv_recv_wr wr, *bad;
	struct fake f;
	uint32_t st;

	for (st = DROCE_SHM_QPS_RESET; st <= DROCE_SHM_QPS_ERR; st++) {
		droce_test_ctx("state %u", st);
		fake_init(&f, DROCE_SHM_QPT_UD, st, false);
		base_recv(&f, &wr, 9, 1);
		bad = NULL;
		CHECK_EQ_I64(droce_shm_post_recv(&f.qp, &wr, &bad),
			     st == DROCE_SHM_QPS_RESET ? EINVAL : 0);
		CHECK(bad == (st == DROCE_SHM_QPS_RESET ? &wr : NULL));
		CHECK_EQ_U64(f.ctl->rq.prod, st == DROCE_SHM_QPS_RESET ? 0 : 1);
	}
}

DROCE_TEST(recv_with_srq_refused)
{
	struct ibv_recv_wr wr, *bad = NULL;
	struct fake f;

	fake_init(&f, DROCE_SHM_QPT_RC, DROCE_SHM_QPS_RTS, true);
	base_recv(&f, &wr, 9, 1);
	CHECK_EQ_I64(droce_shm_post_recv(&f.qp, &wr, &bad), EINVAL);
	CHECK(bad == &wr);
	CHECK_EQ_U64(f.ctl->rq.prod, 0);
	CHECK_EQ_U64(f.qp.rq_prod, 0);
}

enum recv_spoil { RS_SGE_OVER, RS_SGE_NEG, RS_LKEY, RS_READ_ONLY, RS_RANGE, RS_COUNT };
static const char *const recv_spoil_name[RS_COUNT] = {
	"too many SGEs", "negative num_sge", "bad lkey", "read-only MR", "SGE past its MR",
};

static void
recv_spoil(struct fake *f, struct ibv_recv_wr *wr, enum recv_spoil s)
{
	switch (s) {
	case RS_SGE_OVER:
		wr->num_sge = MAX_SGE + 1;
		break;
	case RS_SGE_NEG:
		wr->num_sge = -1;
		break;
	case RS_LKEY:
		wr->sg_list = &f->sge[MAX_SGE];
		wr->num_sge = 2;
		f->sge[MAX_SGE + 1].lkey = LKEY_BAD;
		break;
	case RS_READ_ONLY:
		wr->sg_list = &f->sge[MAX_SGE];
		f->sge[MAX_SGE].lkey = LKEY_RO;
		f->sge[MAX_SGE].addr = (uintptr_t)f->chk.buf_ro;
		break;
	case RS_RANGE:
		wr->sg_list = &f->sge[MAX_SGE];
		f->sge[MAX_SGE].addr = (uintptr_t)f->chk.buf_rw - 1;
		break;
	case RS_COUNT:
		break;
	}
}

/* Three receive WRs, the one at pos spoiled by sp, into the SRQ or the QP's RQ. */
static void
recv_error_case(bool srq, enum recv_spoil sp, unsigned int pos)
{
	struct ibv_recv_wr wr[3], *bad = NULL;
	struct fake f;
	unsigned int k;

	droce_test_ctx("%s: %s, bad WR %u", srq ? "SRQ" : "RQ", recv_spoil_name[sp], pos);
	fake_init(&f, DROCE_SHM_QPT_RC, DROCE_SHM_QPS_RTR, srq);
	for (k = 0; k < 3; k++)
		base_recv(&f, &wr[k], 200 + k, 1);
	chain_recv(wr, 3);
	recv_spoil(&f, &wr[pos], sp);
	CHECK_EQ_I64(srq ? droce_shm_post_srq_recv(&f.srq, wr, &bad) :
			   droce_shm_post_recv(&f.qp, wr, &bad), EINVAL);
	CHECK(bad == &wr[pos]);
	CHECK_EQ_U64(srq ? f.srq_ctl->ring.prod : f.ctl->rq.prod, pos);
	CHECK_EQ_U64(srq ? f.srq.prod : f.qp.rq_prod, pos);
	for (k = 0; k < 3; k++) {
		const uint8_t *slot = srq ? srq_slot(&f, k) : rq_slot(&f, k);

		if (k < pos)
			check_rwqe(slot, f.srq.stride, &wr[k]);
		else
			check_poisoned(slot, f.srq.stride);
	}
	check_doorbell(&f, false);
}

/* Every receive error, in the RQ and in the SRQ: same rules as post_send. */
DROCE_TEST(recv_and_srq_errors_stop_at_bad_wr)
{
	unsigned int sp, pos;

	for (sp = 0; sp < RS_COUNT; sp++) {
		for (pos = 0; pos < 2; pos++) {
			recv_error_case(false, (enum recv_spoil)sp, pos);
			recv_error_case(true, (enum recv_spoil)sp, pos);
		}
	}
}

DROCE_TEST(recv_and_srq_ring_full)
{
	struct ibv_recv_wr wr[RQ_SIZE + 2], *bad;
	struct fake f;
	unsigned int k;

	fake_init(&f, DROCE_SHM_QPT_RC, DROCE_SHM_QPS_RTS, false);
	for (k = 0; k < RQ_SIZE + 2; k++)
		base_recv(&f, &wr[k], 300 + k, 1);
	chain_recv(wr, RQ_SIZE + 2);
	bad = NULL;
	CHECK_EQ_I64(droce_shm_post_recv(&f.qp, wr, &bad), ENOMEM);
	CHECK(bad == &wr[RQ_SIZE]);
	CHECK_EQ_U64(f.ctl->rq.prod, RQ_SIZE);
	__atomic_store_n(&f.ctl->rq.cons, 1, __ATOMIC_RELEASE);
	CHECK_EQ_I64(droce_shm_post_recv(&f.qp, &wr[RQ_SIZE], &bad), ENOMEM);
	CHECK(bad == &wr[RQ_SIZE + 1]);
	CHECK_EQ_U64(f.ctl->rq.prod, RQ_SIZE + 1);
	check_rwqe(rq_slot(&f, 0), f.qp.rq_stride, &wr[RQ_SIZE]);
	check_rwqe(rq_slot(&f, 1), f.qp.rq_stride, &wr[1]);

	fake_init(&f, DROCE_SHM_QPT_RC, DROCE_SHM_QPS_RTS, true);
	for (k = 0; k < SRQ_SIZE + 2; k++)
		base_recv(&f, &wr[k], 400 + k, 2);
	chain_recv(wr, SRQ_SIZE + 2);
	bad = NULL;
	CHECK_EQ_I64(droce_shm_post_srq_recv(&f.srq, wr, &bad), ENOMEM);
	CHECK(bad == &wr[SRQ_SIZE]);
	CHECK_EQ_U64(f.srq_ctl->ring.prod, SRQ_SIZE);
	CHECK_EQ_U64(f.chk.seen_srq_prod, 0);
	for (k = 0; k < SRQ_SIZE; k++)
		check_rwqe(srq_slot(&f, k), f.srq.stride, &wr[k]);
	__atomic_store_n(&f.srq_ctl->ring.cons, 2, __ATOMIC_RELEASE);
	CHECK_EQ_I64(droce_shm_post_srq_recv(&f.srq, &wr[SRQ_SIZE], &bad), 0);
	CHECK_EQ_U64(f.srq_ctl->ring.prod, SRQ_SIZE + 2);
	check_rwqe(srq_slot(&f, 0), f.srq.stride, &wr[SRQ_SIZE]);
	check_rwqe(srq_slot(&f, 1), f.srq.stride, &wr[SRQ_SIZE + 1]);
	check_doorbell(&f, false);
}

/* ---- poll_cq and req_notify_cq ---- */

static const uint8_t wc_statuses[] = {
	IBV_WC_SUCCESS, IBV_WC_LOC_LEN_ERR, IBV_WC_LOC_QP_OP_ERR, IBV_WC_LOC_PROT_ERR,
	IBV_WC_WR_FLUSH_ERR, IBV_WC_BAD_RESP_ERR, IBV_WC_LOC_ACCESS_ERR, IBV_WC_REM_INV_REQ_ERR,
	IBV_WC_REM_ACCESS_ERR, IBV_WC_REM_OP_ERR, IBV_WC_RETRY_EXC_ERR, IBV_WC_RNR_RETRY_EXC_ERR,
	IBV_WC_FATAL_ERR, IBV_WC_GENERAL_ERR,
};
static const uint8_t wc_opcodes[] = {
	IBV_WC_SEND, IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ, IBV_WC_COMP_SWAP, IBV_WC_FETCH_ADD,
	IBV_WC_RECV, IBV_WC_RECV_RDMA_WITH_IMM,
};

/* CQE number i of a test, every field different and derived from i. */
static void
make_cqe(uint32_t i, struct droce_shm_cqe *c)
{
	memset(c, 0, sizeof(*c));
	c->wr_id = 0xC0DE000000000000ull | ((uint64_t)i << 8) | 0x5A;
	c->byte_len = i * 7 + 1;
	c->imm_data = 0xA0000000u ^ i;
	c->qp_num = 0x00123456u ^ i;
	c->src_qp = 0x00ABCDEFu ^ i;
	c->vendor_err = 0x100u + i;
	c->wc_flags = (uint16_t)(i & (DROCE_SHM_WC_GRH | DROCE_SHM_WC_WITH_IMM |
				      DROCE_SHM_WC_WITH_INV));
	c->status = wc_statuses[i % sizeof(wc_statuses)];
	c->opcode = wc_opcodes[i % sizeof(wc_opcodes)];
	c->pkey_index = (uint16_t)(0xFFF0u + i);
	c->slid = (uint16_t)(0x8000u ^ i);
	c->sl = (uint8_t)(i & 15);
	c->dlid_path_bits = (uint8_t)(0x7Fu ^ i);
}

/* The engine's write of CQE idx: every field, then the owner bit (release). */
static void
engine_write_cqe(struct droce_shm_cqe *ring, uint32_t size, unsigned int log2_size,
		 uint32_t idx, const struct droce_shm_cqe *c)
{
	struct droce_shm_cqe *slot = &ring[idx & (size - 1)];

	memcpy(slot, c, offsetof(struct droce_shm_cqe, owner));
	__atomic_store_n(&slot->owner, droce_shm_cqe_owner(idx, log2_size), __ATOMIC_RELEASE);
}

static void
check_wc(const struct ibv_wc *w, uint32_t i)
{
	struct droce_shm_cqe c;

	make_cqe(i, &c);
	droce_test_ctx("completion %u", i);
	CHECK_EQ_U64(w->wr_id, c.wr_id);
	CHECK_EQ_U64(w->status, c.status);
	CHECK_EQ_U64(w->opcode, c.opcode);
	CHECK_EQ_U64(w->vendor_err, c.vendor_err);
	CHECK_EQ_U64(w->byte_len, c.byte_len);
	CHECK_EQ_U64(w->imm_data, c.imm_data);
	CHECK_EQ_U64(w->invalidated_rkey, c.imm_data);
	CHECK_EQ_U64(w->qp_num, c.qp_num);
	CHECK_EQ_U64(w->src_qp, c.src_qp);
	CHECK_EQ_U64(w->wc_flags, c.wc_flags);
	CHECK_EQ_U64(w->pkey_index, c.pkey_index);
	CHECK_EQ_U64(w->slid, c.slid);
	CHECK_EQ_U64(w->sl, c.sl);
	CHECK_EQ_U64(w->dlid_path_bits, c.dlid_path_bits);
}

static void
engine_write(struct fake *f, uint32_t idx)
{
	struct droce_shm_cqe c;

	make_cqe(idx, &c);
	engine_write_cqe(f->cq.ring, CQ_SIZE, CQ_LOG2, idx, &c);
}

DROCE_TEST(poll_every_field_partial_and_zero)
{
	struct ibv_wc wc[CQ_SIZE + 2];
	struct fake f;

	fake_init(&f, DROCE_SHM_QPT_RC, DROCE_SHM_QPS_RTS, false);
	memset(wc, POISON, sizeof(wc));
	CHECK_EQ_I64(droce_shm_poll_cq(&f.cq, CQ_SIZE + 2, wc), 0);
	engine_write(&f, 0);
	engine_write(&f, 1);
	engine_write(&f, 2);
	CHECK_EQ_I64(droce_shm_poll_cq(&f.cq, 0, wc), 0);
	CHECK_EQ_I64(droce_shm_poll_cq(&f.cq, -1, wc), 0);
	CHECK_EQ_U64(f.cq_ctl->ring.cons, 0);
	CHECK_EQ_U64(f.cq.cons, 0);
	/* Partial: two of three, then the last; nothing beyond the count is written. */
	CHECK_EQ_I64(droce_shm_poll_cq(&f.cq, 2, wc), 2);
	check_wc(&wc[0], 0);
	check_wc(&wc[1], 1);
	check_poisoned((const uint8_t *)&wc[2], sizeof(wc[2]));
	CHECK_EQ_U64(f.cq_ctl->ring.cons, 2);
	CHECK_EQ_I64(droce_shm_poll_cq(&f.cq, CQ_SIZE + 2, wc), 1);
	check_wc(&wc[0], 2);
	CHECK_EQ_U64(f.cq_ctl->ring.cons, 3);
	CHECK_EQ_I64(droce_shm_poll_cq(&f.cq, CQ_SIZE + 2, wc), 0);
	CHECK_EQ_U64(f.cq_ctl->ring.cons, 3);
}

/*
 * A QP's move to RESET cleans the CQ of its completions (droce_shm_cq_clean): the others
 * come out in order, exactly once, across the ring's wrap; entries written after the
 * clean still come out.
 */
DROCE_TEST(cq_clean_removes_one_qp)
{
	struct ibv_wc wc[CQ_SIZE + 1];
	struct droce_shm_cqe c;
	uint32_t i, qpn_gone;
	struct fake f;
	int n;

	fake_init(&f, DROCE_SHM_QPT_RC, DROCE_SHM_QPS_RTS, false);
	/* move the ring half way first, so that the entries wrap */
	for (i = 0; i < CQ_SIZE / 2; i++)
		engine_write(&f, i);
	CHECK_EQ_I64(droce_shm_poll_cq(&f.cq, CQ_SIZE, wc), CQ_SIZE / 2);
	/* a full ring: entries i of QP (i odd ? gone : kept) */
	make_cqe(1, &c);
	qpn_gone = c.qp_num;
	for (i = CQ_SIZE / 2; i < CQ_SIZE / 2 + CQ_SIZE; i++) {
		make_cqe(i, &c);
		if (i % 2 == 1)
			c.qp_num = qpn_gone;
		engine_write_cqe(f.cq.ring, CQ_SIZE, CQ_LOG2, i, &c);
	}
	CHECK_EQ_U64(droce_shm_cq_clean(&f.cq, qpn_gone), CQ_SIZE / 2);
	CHECK_EQ_U64(f.cq_ctl->ring.cons, CQ_SIZE / 2 + CQ_SIZE / 2);
	n = droce_shm_poll_cq(&f.cq, CQ_SIZE + 1, wc);
	CHECK_EQ_I64(n, CQ_SIZE / 2);
	for (i = 0; i < (uint32_t)n; i++)
		check_wc(&wc[i], CQ_SIZE / 2 + 2 * i);
	/* nothing of that QP left: cleaning again removes nothing; new entries still come */
	CHECK_EQ_U64(droce_shm_cq_clean(&f.cq, qpn_gone), 0);
	engine_write(&f, CQ_SIZE / 2 + CQ_SIZE);
	CHECK_EQ_I64(droce_shm_poll_cq(&f.cq, CQ_SIZE + 1, wc), 1);
	check_wc(&wc[0], CQ_SIZE / 2 + CQ_SIZE);
}

/*
 * Many laps of a 4-entry ring with random write and poll sizes: entries come out in
 * order, exactly once, and a slot holding last lap's entry never looks fresh.
 */
DROCE_TEST(poll_owner_bit_over_laps)
{
	struct ibv_wc wc[CQ_SIZE + 1];
	uint32_t written = 0, polled = 0;
	struct fake f;
	int n, k;

	fake_init(&f, DROCE_SHM_QPT_RC, DROCE_SHM_QPS_RTS, false);
	while (polled < 40 * CQ_SIZE) {
		uint32_t room = CQ_SIZE - (written - polled);
		uint32_t w = droce_test_rand_below(room + 1);
		uint32_t want = droce_test_rand_below(CQ_SIZE + 2);

		while (w-- > 0)
			engine_write(&f, written++);
		droce_test_ctx("written %u polled %u asked %u", written, polled, want);
		n = droce_shm_poll_cq(&f.cq, (int)want, wc);
		CHECK_EQ_I64(n, want < written - polled ? want : written - polled);
		for (k = 0; k < n; k++)
			check_wc(&wc[k], polled + (uint32_t)k);
		polled += (uint32_t)n;
		CHECK_EQ_U64(f.cq_ctl->ring.cons, polled);
		/* Everything written is visible to a large enough poll. */
		if (written - polled > 0 && droce_test_rand_below(2) == 0) {
			n = droce_shm_poll_cq(&f.cq, CQ_SIZE + 1, wc);
			CHECK_EQ_I64(n, written - polled);
			for (k = 0; k < n; k++)
				check_wc(&wc[k], polled + (uint32_t)k);
			polled += (uint32_t)n;
		}
	}
	/* A full lap written and polled, then one entry: exactly one, not the stale three. */
	n = droce_shm_poll_cq(&f.cq, CQ_SIZE + 1, wc);
	polled += (uint32_t)(n > 0 ? n : 0);
	for (k = 0; k < (int)CQ_SIZE; k++)
		engine_write(&f, written++);
	CHECK_EQ_I64(droce_shm_poll_cq(&f.cq, CQ_SIZE + 1, wc), CQ_SIZE);
	polled += CQ_SIZE;
	engine_write(&f, written++);
	CHECK_EQ_I64(droce_shm_poll_cq(&f.cq, CQ_SIZE + 1, wc), 1);
	check_wc(&wc[0], polled);
}

/* Once the engine flags an overrun, every poll fails and nothing is consumed. */
DROCE_TEST(poll_error_flag)
{
	struct ibv_wc wc[CQ_SIZE];
	struct fake f;

	fake_init(&f, DROCE_SHM_QPT_RC, DROCE_SHM_QPS_RTS, false);
	engine_write(&f, 0);
	engine_write(&f, 1);
	CHECK_EQ_I64(droce_shm_poll_cq(&f.cq, 1, wc), 1);
	__atomic_store_n(&f.cq_ctl->error, 1, __ATOMIC_RELEASE);
	CHECK_EQ_I64(droce_shm_poll_cq(&f.cq, CQ_SIZE, wc), -EIO);
	CHECK_EQ_I64(droce_shm_poll_cq(&f.cq, 0, wc), -EIO);
	CHECK_EQ_U64(f.cq.cons, 1);
	CHECK_EQ_U64(f.cq_ctl->ring.cons, 1);
}

DROCE_TEST(req_notify_arm_values)
{
	struct fake f;

	fake_init(&f, DROCE_SHM_QPT_RC, DROCE_SHM_QPS_RTS, false);
	droce_shm_req_notify_cq(&f.cq, false);
	CHECK_EQ_U64(f.cq_ctl->arm, (1u << 1) | 0);
	droce_shm_req_notify_cq(&f.cq, true);
	CHECK_EQ_U64(f.cq_ctl->arm, (2u << 1) | 1);
	droce_shm_req_notify_cq(&f.cq, false);
	CHECK_EQ_U64(f.cq_ctl->arm, (3u << 1) | 0);
	CHECK_EQ_U64(f.cq.arm_seq, 3);
	/* n runs over 31 bits and wraps. */
	f.cq.arm_seq = 0x7FFFFFFF;
	droce_shm_req_notify_cq(&f.cq, true);
	CHECK_EQ_U64(f.cq_ctl->arm, 1);
	CHECK_EQ_U64(f.cq_ctl->ring.cons, 0);
	CHECK_EQ_U64(f.cq_ctl->error, 0);
}

/* ---- Two threads: the library against an engine on another core ---- */

#define STRESS_N		1000000u
#define STRESS_RING		64u
#define STRESS_LOG2		6u
#define STRESS_MAX_BATCH	16u
#define STRESS_TIMEOUT_S	30
/*
 * Idle turns before a waiting side naps: long enough that two sides on two cores meet
 * inside each other's race windows, short enough that a side sharing its core (a loaded
 * machine, a parallel meson test) hands the core over instead of burning it.
 */
#define STRESS_SPINS		256u
#define STRESS_NAP_NS		1000000
/*
 * Once in STRESS_DRAIN_ONE_IN post calls the SQ poster waits (at most STRESS_DRAIN_S) for
 * the engine to retire everything, which it does only if that call's doorbell worked.
 */
#define STRESS_DRAIN_ONE_IN	16u
#define STRESS_DRAIN_S		2.0
/* The CQ poller pauses for up to STRESS_PAUSE_MAX turns once in STRESS_PAUSE_ONE_IN polls. */
#define STRESS_PAUSE_ONE_IN	8u
#define STRESS_PAUSE_MAX	4096u

struct stress;
typedef bool stress_ready_fn(const struct stress *s);

/*
 * Where one side of a stress test sleeps until the other has made enough progress for it
 * (ready, evaluated by the waker under mu, so a side is not woken for every small step).
 */
struct stress_nap {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint32_t sleeping;
	stress_ready_fn *ready;
};

/* Shared by the two threads; the results are read by the main thread after the join. */
struct stress {
	struct fake f;
	struct droce_shm_cqe *cq_ring;
	struct stress_nap engine_nap;
	struct stress_nap app_nap;
	uint32_t engine_idx;		/* CQ engine: the entry it waits to write */
	uint32_t app_need;		/* entries (CQ) or slots (SQ) the application waits for */
	uint32_t aborted;		/* either side gave up: the other stops too */
	uint64_t mismatches;
	uint64_t first_bad;		/* index of the first mismatch */
	uint64_t done;			/* entries the engine handled */
	uint64_t stray_bits;		/* doorbell bits that were not ours */
	uint64_t lost_doorbells;	/* posts the engine never retired */
	uint64_t rounds;		/* doorbells that brought work */
	uint64_t partial_rounds;	/* ... while the ring was not full: real overlap */
};

static void
stress_init(struct stress *s)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->engine_nap.mu, NULL);
	pthread_cond_init(&s->engine_nap.cv, NULL);
	pthread_mutex_init(&s->app_nap.mu, NULL);
	pthread_cond_init(&s->app_nap.cv, NULL);
	fake_init(&s->f, DROCE_SHM_QPT_RC, DROCE_SHM_QPS_RTS, false);
}

static void
stress_fini(struct stress *s)
{
	pthread_mutex_destroy(&s->engine_nap.mu);
	pthread_cond_destroy(&s->engine_nap.cv);
	pthread_mutex_destroy(&s->app_nap.mu);
	pthread_cond_destroy(&s->app_nap.cv);
}

/*
 * Called by a side after it made progress (always: true when it gave up). The fence
 * orders its ring stores before the read of sleeping; nap() orders the store of sleeping
 * before its own check of the rings: either the napper sees the progress or this side
 * sees it napping, and then checks its condition under the mutex the napper waits with.
 */
static void
nap_wake(struct stress_nap *n, const struct stress *s, bool always)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&n->sleeping, __ATOMIC_RELAXED) != 0) {
		pthread_mutex_lock(&n->mu);
		/* Still napping (it may have left): then its fields are not changing. */
		if (n->sleeping != 0 && (always || n->ready(s)))
			pthread_cond_broadcast(&n->cv);
		pthread_mutex_unlock(&n->mu);
	}
}

/* Sleeps until ready(s) holds, at most STRESS_NAP_NS. */
static void
nap(struct stress_nap *n, stress_ready_fn *ready, const struct stress *s)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += STRESS_NAP_NS;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&n->mu);
	n->ready = ready;
	__atomic_store_n(&n->sleeping, 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	while (!ready(s) && !__atomic_load_n(&s->aborted, __ATOMIC_RELAXED))
		if (pthread_cond_timedwait(&n->cv, &n->mu, &ts) != 0)
			break;
	__atomic_store_n(&n->sleeping, 0, __ATOMIC_RELAXED);
	n->ready = NULL;
	pthread_mutex_unlock(&n->mu);
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * One idle turn of a side waiting for the other: nap now and then, give up after
 * STRESS_TIMEOUT_S or when the other side gave up. false: stop.
 */
static bool
stress_wait(struct stress *s, struct stress_nap *n, stress_ready_fn *ready, uint32_t *spins,
	    double start)
{
	if (__atomic_load_n(&s->aborted, __ATOMIC_RELAXED))
		return false;
	if ((++*spins % STRESS_SPINS) == 0) {
		nap(n, ready, s);
		if (now_s() - start > STRESS_TIMEOUT_S) {
			__atomic_store_n(&s->aborted, 1, __ATOMIC_RELAXED);
			nap_wake(&s->engine_nap, s, true);
			nap_wake(&s->app_nap, s, true);
			return false;
		}
	}
	return true;
}

/* Busy for about n loop turns: lets the other side run ahead. */
static void
stress_pause(uint32_t n)
{
	while (n-- > 0)
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static void
stress_mismatch(struct stress *s, uint64_t idx)
{
	if (s->mismatches++ == 0)
		s->first_bad = idx;
}

/* The engine thread's own generator (droce_test_rand belongs to the main thread). */
static uint32_t
engine_rand_below(uint64_t *state, uint32_t n)
{
	uint64_t z = (*state += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return (uint32_t)((z ^ (z >> 31)) % n);
}

static bool
stress_accept(void *arg, uint32_t lkey, uint64_t addr, uint64_t len, unsigned int access)
{
	(void)arg;
	(void)addr;
	(void)len;
	(void)access;
	return lkey == LKEY_RW;
}

/* SQ engine: a doorbell is waiting. */
static bool
sq_engine_ready(const struct stress *s)
{
	return __atomic_load_n(&s->f.db->summary, __ATOMIC_RELAXED) != 0;
}

/* SQ poster: the engine freed room for the rest of the batch. */
static bool
sq_app_ready(const struct stress *s)
{
	return STRESS_RING - (s->f.qp.sq_prod -
			      __atomic_load_n(&s->f.ctl->sq.cons, __ATOMIC_RELAXED)) >=
	       s->app_need;
}

/* SQ poster: the engine retired everything posted. */
static bool
sq_app_drained(const struct stress *s)
{
	return __atomic_load_n(&s->f.ctl->sq.cons, __ATOMIC_RELAXED) == s->f.qp.sq_prod;
}

/*
 * Waits until the engine has retired every WR posted: the engine reads prod only when a
 * doorbell tells it to, so a post call whose doorbell can be missed (rung before prod is
 * published, say) leaves WRs behind. false: give up (counted as a lost doorbell).
 */
static bool
sq_wait_drained(struct stress *s, uint32_t *spins, double start)
{
	double t0 = now_s();

	while (!sq_app_drained(s)) {
		if (!stress_wait(s, &s->app_nap, sq_app_drained, spins, start))
			return false;
		if ((*spins % STRESS_SPINS) == 0 && now_s() - t0 > STRESS_DRAIN_S) {
			s->lost_doorbells++;
			return false;
		}
	}
	return true;
}

/* Checks the WQE copied out of slot idx against what the stress poster wrote there. */
static void
sq_stress_check(struct stress *s, uint32_t idx, const struct droce_shm_swqe *h,
		const struct droce_shm_sge *sge)
{
	if (h->wr_id != idx || h->opcode != IBV_WR_SEND || h->num_sge != idx % 3 ||
	    h->flags != IBV_SEND_SIGNALED ||
	    (h->num_sge > 0 && (sge[0].addr != (uint64_t)idx << 4 ||
				sge[0].length != (idx & 0xFFF) || sge[0].lkey != LKEY_RW)))
		stress_mismatch(s, idx);
}

/*
 * The engine of the SQ test: reads prod (acquire) only after taking a doorbell (exchange
 * summary, then the word, with acquire), so a lost doorbell hangs the test instead of
 * passing. It retires what it saw in random steps, copying each WQE out before a release
 * store of cons frees its slot, so the poster meets cons at every position of the ring.
 */
static void *
sq_engine(void *arg)
{
	struct stress *s = arg;
	struct droce_shm_client_qp *qp = &s->f.qp;
	uint32_t cons = 0, prod = 0, spins = 0;
	uint64_t rng = 1;
	double start = now_s();

	while (cons < STRESS_N) {
		uint64_t sum, word;
		uint32_t step;

		if (cons == prod) {
			sum = __atomic_exchange_n(&s->f.db->summary, 0, __ATOMIC_ACQUIRE);
			if (sum == 0) {
				if (!stress_wait(s, &s->engine_nap, sq_engine_ready, &spins, start))
					break;
				continue;
			}
			if (sum != 1ull << DB_WORD)
				s->stray_bits |= sum;
			word = __atomic_exchange_n(&s->f.db->words[DB_WORD], 0, __ATOMIC_ACQUIRE);
			if (word & ~(1ull << DB_BIT))
				s->stray_bits |= word;
			prod = __atomic_load_n(&qp->ctl->sq.prod, __ATOMIC_ACQUIRE);
			if (prod - cons > STRESS_RING) {
				stress_mismatch(s, cons);
				__atomic_store_n(&s->aborted, 1, __ATOMIC_RELAXED);
				nap_wake(&s->app_nap, s, true);
				break;
			}
			if (prod != cons)
				s->rounds++;
			if (prod != cons && prod - cons < STRESS_RING)
				s->partial_rounds++;
			continue;
		}
		step = 1 + engine_rand_below(&rng, prod - cons);
		while (step-- > 0) {
			struct {
				struct droce_shm_swqe h;
				struct droce_shm_sge sge[2];
			} copy;

			memcpy(&copy, qp->sq + (size_t)(cons & (STRESS_RING - 1)) * qp->sq_stride,
			       sizeof(copy));
			sq_stress_check(s, cons, &copy.h, copy.sge);
			cons++;
		}
		__atomic_store_n(&qp->ctl->sq.cons, cons, __ATOMIC_RELEASE);
		nap_wake(&s->app_nap, s, false);
	}
	s->done = cons;
	return NULL;
}

DROCE_TEST(stress_sq_two_threads)
{
	struct ibv_send_wr wr[STRESS_MAX_BATCH], *bad, *next;
	struct ibv_sge sge[STRESS_MAX_BATCH][2];
	struct stress *s = droce_test_malloc(sizeof(*s));
	uint64_t posted = 0, errors = 0;
	uint32_t sq_stride = droce_shm_sq_stride(2, 0);
	uint32_t spins = 0;
	double start = now_s();
	pthread_t th;
	int ret;

	stress_init(s);
	s->f.qp.sq = alloc_line((size_t)STRESS_RING * sq_stride);
	s->f.qp.sq_size = STRESS_RING;
	s->f.qp.sq_stride = sq_stride;
	s->f.qp.sq_max_sge = 2;
	s->f.qp.max_inline = 0;
	s->f.qp.lkey_check = stress_accept;
	if (pthread_create(&th, NULL, sq_engine, s) != 0) {
		stress_fini(s);
		CHECK(!"pthread_create");
	}
	/* No CHECK until the join: a failed check longjmps out of this frame. */
	while (posted < STRESS_N) {
		uint32_t n = 1 + droce_test_rand_below(STRESS_MAX_BATCH);
		uint32_t k;

		if (n > STRESS_N - posted)
			n = (uint32_t)(STRESS_N - posted);
		for (k = 0; k < n; k++) {
			uint64_t id = posted + k;

			sge[k][0] = (struct ibv_sge){ .addr = id << 4, .length = id & 0xFFF,
						      .lkey = LKEY_RW };
			sge[k][1] = sge[k][0];
			wr[k] = (struct ibv_send_wr){
				.wr_id = id, .sg_list = sge[k], .num_sge = (int)(id % 3),
				.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
				.next = k + 1 < n ? &wr[k + 1] : NULL,
			};
		}
		next = wr;
		while (next != NULL) {
			bad = NULL;
			ret = droce_shm_post_send(&s->f.qp, next, &bad);
			nap_wake(&s->engine_nap, s, false);
			if (ret == 0) {
				posted += (uint64_t)(wr + n - next);
				break;
			}
			if (ret != ENOMEM || bad == NULL) {
				errors++;
				break;
			}
			posted += (uint64_t)(bad - next);
			next = bad;
			s->app_need = (uint32_t)(wr + n - next);
			if (!stress_wait(s, &s->app_nap, sq_app_ready, &spins, start))
				break;
		}
		if (errors != 0 || __atomic_load_n(&s->aborted, __ATOMIC_RELAXED))
			break;
		if (droce_test_rand_below(STRESS_DRAIN_ONE_IN) == 0 &&
		    !sq_wait_drained(s, &spins, start))
			break;
	}
	if (posted < STRESS_N) {
		__atomic_store_n(&s->aborted, 1, __ATOMIC_RELAXED);
		nap_wake(&s->engine_nap, s, true);
	}
	pthread_join(th, NULL);
	stress_fini(s);
	/* How much the threads overlapped depends on the machine's load: reported, not checked. */
	droce_test_ctx("%" PRIu64 " doorbells with work, %" PRIu64 " before the ring was full",
		       s->rounds, s->partial_rounds);
	CHECK_EQ_U64(errors, 0);
	CHECK_EQ_U64(s->lost_doorbells, 0);
	CHECK_EQ_U64(s->aborted, 0);
	CHECK_EQ_U64(posted, STRESS_N);
	CHECK_EQ_U64(s->done, STRESS_N);
	CHECK_EQ_U64(s->mismatches, 0);
	CHECK_EQ_U64(s->stray_bits, 0);
	CHECK_EQ_U64(s->f.qp.sq_prod, STRESS_N);
}

/* CQ engine: the application freed STRESS_MAX_BATCH slots. */
static bool
cq_engine_ready(const struct stress *s)
{
	return s->engine_idx - __atomic_load_n(&s->f.cq_ctl->ring.cons, __ATOMIC_RELAXED) <=
	       STRESS_RING - STRESS_MAX_BATCH;
}

/* CQ poller: app_need entries from its cons on are written. */
static bool
cq_app_ready(const struct stress *s)
{
	const struct droce_shm_client_cq *cq = &s->f.cq;
	uint32_t last = cq->cons + s->app_need - 1;

	return __atomic_load_n(&cq->ring[last & (cq->size - 1)].owner, __ATOMIC_RELAXED) ==
	       droce_shm_cqe_owner(last, cq->log2_size);
}

/*
 * The engine of the CQ test: writes STRESS_N CQEs, waiting for room by an acquire load
 * of the application's cons (an overrun would be a test failure, not an error flag).
 */
static void *
cq_engine(void *arg)
{
	struct stress *s = arg;
	uint32_t idx, cons = 0, spins = 0;
	double start = now_s();
	struct droce_shm_cqe c;

	for (idx = 0; idx < STRESS_N; idx++) {
		s->engine_idx = idx;
		while (idx - cons >= STRESS_RING) {
			cons = __atomic_load_n(&s->f.cq_ctl->ring.cons, __ATOMIC_ACQUIRE);
			/* The application consumed entries never written. */
			if (idx - cons > STRESS_RING) {
				stress_mismatch(s, idx);
				__atomic_store_n(&s->aborted, 1, __ATOMIC_RELAXED);
				nap_wake(&s->app_nap, s, true);
				goto out;
			}
			if (idx - cons == STRESS_RING &&
			    !stress_wait(s, &s->engine_nap, cq_engine_ready, &spins, start))
				goto out;
		}
		make_cqe(idx, &c);
		engine_write_cqe(s->cq_ring, STRESS_RING, STRESS_LOG2, idx, &c);
		nap_wake(&s->app_nap, s, false);
	}
out:
	s->done = idx;
	return NULL;
}

DROCE_TEST(stress_cq_two_threads)
{
	struct ibv_wc wc[STRESS_MAX_BATCH];
	struct stress *s = droce_test_malloc(sizeof(*s));
	uint32_t polled = 0, spins = 0;
	uint64_t mismatches = 0, first_bad = 0, errors = 0;
	double start = now_s();
	pthread_t th;
	int n, k;

	stress_init(s);
	s->cq_ring = alloc_line(STRESS_RING * sizeof(struct droce_shm_cqe));
	s->f.cq.ring = s->cq_ring;
	s->f.cq.size = STRESS_RING;
	s->f.cq.log2_size = STRESS_LOG2;
	if (pthread_create(&th, NULL, cq_engine, s) != 0) {
		stress_fini(s);
		CHECK(!"pthread_create");
	}
	/* No CHECK until the join. */
	while (polled < STRESS_N) {
		n = droce_shm_poll_cq(&s->f.cq, 1 + (int)droce_test_rand_below(STRESS_MAX_BATCH),
				      wc);
		if (n < 0) {
			errors++;
			break;
		}
		if (n == 0) {
			s->app_need = STRESS_N - polled < STRESS_MAX_BATCH ? STRESS_N - polled :
									      STRESS_MAX_BATCH;
			if (!stress_wait(s, &s->app_nap, cq_app_ready, &spins, start))
				break;
			continue;
		}
		nap_wake(&s->engine_nap, s, false);
		for (k = 0; k < n; k++, polled++) {
			struct droce_shm_cqe c;

			make_cqe(polled, &c);
			if (wc[k].wr_id != c.wr_id || wc[k].byte_len != c.byte_len ||
			    wc[k].imm_data != c.imm_data || wc[k].qp_num != c.qp_num ||
			    wc[k].src_qp != c.src_qp || wc[k].vendor_err != c.vendor_err ||
			    wc[k].wc_flags != c.wc_flags || wc[k].status != c.status ||
			    wc[k].opcode != c.opcode || wc[k].pkey_index != c.pkey_index ||
			    wc[k].slid != c.slid || wc[k].sl != c.sl ||
			    wc[k].dlid_path_bits != c.dlid_path_bits) {
				if (mismatches++ == 0)
					first_bad = polled;
			}
		}
		/*
		 * Now and then fall behind, so the engine waits for room and then writes into
		 * the slots just polled: the window a misplaced cons store would open.
		 */
		if (droce_test_rand_below(STRESS_PAUSE_ONE_IN) == 0)
			stress_pause(droce_test_rand_below(STRESS_PAUSE_MAX));
	}
	if (polled < STRESS_N) {
		__atomic_store_n(&s->aborted, 1, __ATOMIC_RELAXED);
		nap_wake(&s->engine_nap, s, true);
	}
	pthread_join(th, NULL);
	stress_fini(s);
	droce_test_ctx("first bad completion %" PRIu64, first_bad);
	CHECK_EQ_U64(errors, 0);
	CHECK_EQ_U64(mismatches, 0);
	CHECK_EQ_U64(polled, STRESS_N);
	CHECK_EQ_U64(s->done, STRESS_N);
	CHECK_EQ_U64(s->mismatches, 0);
	CHECK_EQ_U64(s->f.cq_ctl->ring.cons, STRESS_N);
	/* Drained: nothing more, and the stale owner bits of the last lap do not show. */
	CHECK_EQ_I64(droce_shm_poll_cq(&s->f.cq, STRESS_MAX_BATCH, wc), 0);
}
