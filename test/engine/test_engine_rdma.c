/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RDMA WRITE and WRITE with immediate (RC, UC) and RDMA READ (RC) between two engines
 * joined by net_ring: sizes from 0 bytes to 1 MiB (PSNs wrapping), byte-exact targets with
 * every byte around them untouched, exact completions on both sides, receive WQEs
 * consumed only by WRITE with immediate (RQ and SRQ, RNR when there is none), R_Key,
 * range and access failures (RC: the NAK's status and both QPs in ERR; UC: the message
 * dropped), READ depth, fence and ordering, and byte-exact results through loss,
 * reordering and duplication.
 */
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "droce_test.h"
#include "engine_client.h"

#define MTU		1024			/* IBV_MTU_1024 */
#define GUARD		4096			/* untouched bytes on each side of a target */
#define DST_LEN		((1u << 20) + 2 * GUARD)
#define SRC_LEN		((1u << 20) + GUARD)
#define RBUF_LEN	(1u << 16)
#define FILL		0xEE			/* what a target holds before a WRITE */
#define WAIT_MS		5000
#define QUIET_MS	100			/* how long "nothing arrives" is watched */

#define WR_RDMA_OPS	((1u << DROCE_SHM_WR_RDMA_WRITE) | \
			 (1u << DROCE_SHM_WR_RDMA_WRITE_WITH_IMM) | \
			 (1u << DROCE_SHM_WR_RDMA_READ))

struct env {
	struct tc_host a, b;
	struct tc_cq *ca, *cb;
	struct tc_qp *qa, *qb;
	struct tc_srq *srq;
	struct tc_mr *src;	/* a: what is written */
	struct tc_mr *dst;	/* b: the target, remote write allowed */
	struct tc_mr *rbuf;	/* b: receive buffers, must stay untouched by WRITEs */
	uint8_t type;
};

/*
 * Opens the pair (faults: drivers/net/fault arguments for both receive sides, or NULL),
 * one QP each of type, connected with a's PSNs about to wrap; b's QP has remote access
 * flags access, both have READ depth depth.
 */
static void
env_open_depth(struct env *env, uint8_t type, bool use_srq, const char *faults,
	       uint32_t access, uint8_t depth)
{
	struct tc_path path = { .mtu = IBV_MTU_1024, .timeout = 12, .retry_cnt = 7,
				.rnr_retry = 7, .min_rnr_timer = 1, .psn_a = 0xFFFFF0,
				.psn_b = 77 };
	struct tc_qp_init in = { .type = type, .sq_size = 64, .rq_size = 128, .max_sge = 4,
				 .max_inline = 128 };
	uint32_t i;

	memset(env, 0, sizeof(*env));
	env->type = type;
	tc_pair_open_seeded(&env->a, &env->b, faults, 11);
	env->ca = tc_cq_create(&env->a, 1024);
	env->cb = tc_cq_create(&env->b, 1024);
	in.scq = in.rcq = env->ca;
	env->qa = tc_qp_create(&env->a, &in);
	if (use_srq)
		in.srq = env->srq = tc_srq_create(&env->b, 128, 4, 0);
	in.scq = in.rcq = env->cb;
	env->qb = tc_qp_create(&env->b, &in);
	env->qa->view.supported_wr |= WR_RDMA_OPS;
	env->qb->view.supported_wr |= WR_RDMA_OPS;
	env->src = tc_mr_reg(&env->a, SRC_LEN, IBV_ACCESS_LOCAL_WRITE);
	env->dst = tc_mr_reg(&env->b, DST_LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			     IBV_ACCESS_REMOTE_READ);
	env->rbuf = tc_mr_reg(&env->b, RBUF_LEN, IBV_ACCESS_LOCAL_WRITE);
	for (i = 0; i < SRC_LEN; i++)
		env->src->buf[i] = (uint8_t)(i * 131 + (i >> 11) + 1);
	memset(env->dst->buf, FILL, DST_LEN);
	path.access_b = access;
	path.rd_atomic = depth;
	tc_connect(env->qa, env->qb, &path);
}

/* The WRITE tests' pair: b's QP takes remote writes unless remote_write is false. */
static void
env_open(struct env *env, uint8_t type, bool use_srq, const char *faults, bool remote_write)
{
	env_open_depth(env, type, use_srq, faults, IBV_ACCESS_LOCAL_WRITE |
		       (remote_write ? IBV_ACCESS_REMOTE_WRITE : 0), 1);
}

static uint64_t
dst_addr(const struct env *env, uint64_t off)
{
	return (uintptr_t)env->dst->buf + off;
}

/* Posts one RDMA WRITE (with immediate when op says so) of src[soff, soff + len). */
static int
post_write(struct env *env, uint64_t wr_id, enum ibv_wr_opcode op, uint64_t soff, uint32_t len,
	   uint64_t raddr, uint32_t rkey, uint32_t imm, unsigned int flags)
{
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .opcode = op, .send_flags = flags, .imm_data = htobe32(imm),
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	};

	return tc_post_one(env->qa, &wr, env->src, soff, len);
}

static int
post_recv(struct env *env, uint64_t wr_id, uint64_t off, uint32_t len)
{
	if (env->srq != NULL)
		return tc_srq_recv(env->srq, wr_id, env->rbuf, off, len);
	return tc_recv(env->qb, wr_id, env->rbuf, off, len);
}

/* The target holds src[soff, soff + len) at off and FILL everywhere else. */
static void
check_target(const struct env *env, uint64_t off, uint64_t soff, uint32_t len)
{
	CHECK_MEM(env->dst->buf + off, env->src->buf + soff, len);
	CHECK_EQ_I64(tc_first_not(env->dst->buf, 0, off, FILL), -1);
	CHECK_EQ_I64(tc_first_not(env->dst->buf, off + len, DST_LEN, FILL), -1);
}

static void
check_send_wc(const struct ibv_wc *wc, uint64_t wr_id, uint32_t qpn, enum ibv_wc_opcode op,
	      uint32_t len)
{
	CHECK_EQ_U64(wc->wr_id, wr_id);
	CHECK_EQ_U64(wc->status, IBV_WC_SUCCESS);
	CHECK_EQ_U64(wc->opcode, op);
	CHECK_EQ_U64(wc->byte_len, len);
	CHECK_EQ_U64(wc->qp_num, qpn);
}

static void
check_imm_wc(const struct env *env, const struct ibv_wc *wc, uint64_t wr_id, uint32_t len,
	     uint32_t imm)
{
	CHECK_EQ_U64(wc->wr_id, wr_id);
	CHECK_EQ_U64(wc->status, IBV_WC_SUCCESS);
	CHECK_EQ_U64(wc->opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	CHECK_EQ_U64(wc->byte_len, len);
	CHECK_EQ_U64(wc->wc_flags, IBV_WC_WITH_IMM);
	CHECK_EQ_U64(wc->imm_data, htobe32(imm));
	CHECK_EQ_U64(wc->qp_num, env->qb->qpn);
	CHECK_EQ_U64(wc->src_qp, env->qa->qpn);
}

/*
 * A SEND after the WRITEs on the same QP: its arrival proves they landed (UC has no ACK
 * to say so), and the receive it takes is wr_id: no WRITE consumed one.
 */
static void
fence_send(struct env *env, uint64_t wr_id)
{
	struct ibv_wc wc;

	CHECK_EQ_I64(post_recv(env, wr_id, 0, 64), 0);
	CHECK_EQ_I64(tc_send(env->qa, wr_id, env->src, 0, 4, IBV_SEND_SIGNALED), 0);
	CHECK_EQ_I64(tc_wait(env->cb, 1, &wc, WAIT_MS), 1);
	CHECK_EQ_U64(wc.wr_id, wr_id);
	CHECK_EQ_U64(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ_U64(wc.opcode, IBV_WC_RECV);
	CHECK_EQ_U64(wc.byte_len, 4);
	CHECK_EQ_I64(tc_wait(env->ca, 1, &wc, WAIT_MS), 1);
	check_send_wc(&wc, wr_id, env->qa->qpn, IBV_WC_SEND, 4);
}

static void
write_sizes(uint8_t type)
{
	static const uint32_t sizes[] = { 0, 1, MTU, 3 * MTU + 7, 1u << 20 };
	struct env env;
	struct ibv_wc wc;
	unsigned int i;

	env_open(&env, type, false, NULL, true);
	for (i = 0; i < RTE_DIM(sizes); i++) {
		uint32_t len = sizes[i];
		/* Odd offsets on both sides, except for the MiB that fills the target. */
		uint64_t off = GUARD + (len == (1u << 20) ? 0 : 5 + i);
		uint64_t soff = len == (1u << 20) ? 0 : 3 * i + 1;
		uint32_t npkts = len == 0 ? 1 : (len + MTU - 1) / MTU;
		uint64_t pkts = tc_counter(&env.a, "req_pkts");
		/* A zero-length WRITE checks no R_Key: give it one that matches nothing. */
		uint32_t rkey = len == 0 ? env.dst->rkey ^ 0x5A5A5A00 : env.dst->rkey;

		droce_test_ctx("%s WRITE of %u bytes", type == DROCE_SHM_QPT_RC ? "RC" : "UC",
			       len);
		memset(env.dst->buf, FILL, DST_LEN);
		CHECK_EQ_I64(post_write(&env, 100 + i, IBV_WR_RDMA_WRITE, soff, len,
					dst_addr(&env, off), rkey, 0, IBV_SEND_SIGNALED), 0);
		CHECK_EQ_I64(tc_wait(env.ca, 1, &wc, WAIT_MS), 1);
		check_send_wc(&wc, 100 + i, env.qa->qpn, IBV_WC_RDMA_WRITE, len);
		fence_send(&env, 200 + i);
		check_target(&env, off, soff, len);
		/* One packet per MTU (one for 0 bytes), and the fence's. */
		CHECK_EQ_U64(tc_counter(&env.a, "req_pkts") - pkts, npkts + 1);
	}
	CHECK_EQ_I64(tc_poll(env.cb, 1, &wc), 0);
	CHECK_EQ_U64(tc_counter(&env.b, "uc_drop"), 0);
	CHECK_EQ_U64(tc_qp_state(env.qa), DROCE_SHM_QPS_RTS);
	CHECK_EQ_U64(tc_qp_state(env.qb), DROCE_SHM_QPS_RTS);
	tc_pair_close(&env.a, &env.b);
}

DROCE_TEST(rc_write_sizes)
{
	write_sizes(DROCE_SHM_QPT_RC);
}

DROCE_TEST(uc_write_sizes)
{
	write_sizes(DROCE_SHM_QPT_UC);
}

/* Gathered from three SGEs, and inline, unsignaled between signaled ones. */
DROCE_TEST(rc_write_sge_inline)
{
	struct env env;
	struct ibv_sge sge[3];
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc[1];
	uint8_t expect[3000];

	env_open(&env, DROCE_SHM_QPT_RC, false, NULL, true);
	sge[0] = (struct ibv_sge){ (uintptr_t)env.src->buf + 10, 100, env.src->lkey };
	sge[1] = (struct ibv_sge){ (uintptr_t)env.src->buf + 5000, 2000, env.src->lkey };
	sge[2] = (struct ibv_sge){ (uintptr_t)env.src->buf + 9, 33, env.src->lkey };
	memcpy(expect, env.src->buf + 10, 100);
	memcpy(expect + 100, env.src->buf + 5000, 2000);
	memcpy(expect + 2100, env.src->buf + 9, 33);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.sg_list = sge;
	wr.num_sge = 3;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = dst_addr(&env, GUARD + 1);
	wr.wr.rdma.rkey = env.dst->rkey;
	CHECK_EQ_I64(tc_post_send(env.qa, &wr, &bad), 0);
	/* Inline: the source may change right after the post. */
	memcpy(expect + 2133, env.src->buf + 700, 100);
	CHECK_EQ_I64(post_write(&env, 2, IBV_WR_RDMA_WRITE, 700, 100,
				dst_addr(&env, GUARD + 1 + 2133), env.dst->rkey, 0,
				IBV_SEND_SIGNALED | IBV_SEND_INLINE), 0);
	env.src->buf[700] ^= 0xFF;
	/* The first WRITE is unsignaled: one completion. */
	CHECK_EQ_I64(tc_wait(env.ca, 1, wc, WAIT_MS), 1);
	check_send_wc(&wc[0], 2, env.qa->qpn, IBV_WC_RDMA_WRITE, 100);
	CHECK_EQ_I64(tc_poll(env.ca, 1, wc), 0);
	env.src->buf[700] ^= 0xFF;
	CHECK_MEM(env.dst->buf + GUARD + 1, expect, 2233);
	CHECK_EQ_I64(tc_first_not(env.dst->buf, 0, GUARD + 1, FILL), -1);
	CHECK_EQ_I64(tc_first_not(env.dst->buf, GUARD + 1 + 2233, DST_LEN, FILL), -1);
	tc_pair_close(&env.a, &env.b);
}

/* WRITE with immediate: one receive WQE each, the RETH length as byte_len, no bytes in it. */
static void
write_imm(uint8_t type, bool use_srq)
{
	struct env env;
	struct ibv_wc wc[3];
	uint32_t len = 3 * MTU + 7;

	env_open(&env, type, use_srq, NULL, true);
	CHECK_EQ_I64(post_recv(&env, 1000, 0, 4096), 0);
	CHECK_EQ_I64(post_recv(&env, 1001, 4096, 4096), 0);
	CHECK_EQ_I64(post_write(&env, 1, IBV_WR_RDMA_WRITE_WITH_IMM, 11, len,
				dst_addr(&env, GUARD + 3), env.dst->rkey, 0x12345678,
				IBV_SEND_SIGNALED), 0);
	CHECK_EQ_I64(post_write(&env, 2, IBV_WR_RDMA_WRITE_WITH_IMM, 0, 0, 0, 0, 0xCAFEBABE,
				IBV_SEND_SIGNALED), 0);
	CHECK_EQ_I64(tc_wait(env.cb, 2, wc, WAIT_MS), 2);
	check_imm_wc(&env, &wc[0], 1000, len, 0x12345678);
	check_imm_wc(&env, &wc[1], 1001, 0, 0xCAFEBABE);
	CHECK_EQ_I64(tc_wait(env.ca, 2, wc, WAIT_MS), 2);
	check_send_wc(&wc[0], 1, env.qa->qpn, IBV_WC_RDMA_WRITE, len);
	check_send_wc(&wc[1], 2, env.qa->qpn, IBV_WC_RDMA_WRITE, 0);
	check_target(&env, GUARD + 3, 11, len);
	CHECK_EQ_I64(tc_first_not(env.rbuf->buf, 0, RBUF_LEN, 0), -1);
	fence_send(&env, 1002);
	CHECK_EQ_I64(tc_wait(env.cb, 1, wc, QUIET_MS), 0);
	CHECK_EQ_U64(tc_counter(&env.b, "uc_drop"), 0);
	tc_pair_close(&env.a, &env.b);
}

DROCE_TEST(rc_write_imm_rq)
{
	write_imm(DROCE_SHM_QPT_RC, false);
}

DROCE_TEST(uc_write_imm_rq)
{
	write_imm(DROCE_SHM_QPT_UC, false);
}

DROCE_TEST(rc_write_imm_srq)
{
	write_imm(DROCE_SHM_QPT_RC, true);
}

DROCE_TEST(uc_write_imm_srq)
{
	write_imm(DROCE_SHM_QPT_UC, true);
}

/*
 * A plain WRITE needs no receive WQE; a WRITE with immediate without one is RNR NAKed
 * and lands once a receive is posted, its data exactly once.
 */
DROCE_TEST(rc_write_imm_rnr)
{
	struct env env;
	struct ibv_wc wc;
	uint32_t len = 2 * MTU + 5;

	env_open(&env, DROCE_SHM_QPT_RC, false, NULL, true);
	CHECK_EQ_I64(post_write(&env, 1, IBV_WR_RDMA_WRITE, 0, 100, dst_addr(&env, GUARD),
				env.dst->rkey, 0, IBV_SEND_SIGNALED), 0);
	CHECK_EQ_I64(tc_wait(env.ca, 1, &wc, WAIT_MS), 1);
	check_send_wc(&wc, 1, env.qa->qpn, IBV_WC_RDMA_WRITE, 100);
	CHECK_EQ_U64(tc_counter(&env.b, "nak_rnr_sent"), 0);
	CHECK_EQ_I64(post_write(&env, 2, IBV_WR_RDMA_WRITE_WITH_IMM, 200, len,
				dst_addr(&env, GUARD + 100), env.dst->rkey, 77,
				IBV_SEND_SIGNALED), 0);
	CHECK_EQ_I64(tc_wait(env.ca, 1, &wc, QUIET_MS), 0);
	CHECK(tc_counter(&env.b, "nak_rnr_sent") > 0);
	CHECK_EQ_I64(post_recv(&env, 5, 0, 16), 0);
	CHECK_EQ_I64(tc_wait(env.cb, 1, &wc, WAIT_MS), 1);
	check_imm_wc(&env, &wc, 5, len, 77);
	CHECK_EQ_I64(tc_wait(env.ca, 1, &wc, WAIT_MS), 1);
	check_send_wc(&wc, 2, env.qa->qpn, IBV_WC_RDMA_WRITE, len);
	CHECK_MEM(env.dst->buf + GUARD, env.src->buf, 100);
	CHECK_MEM(env.dst->buf + GUARD + 100, env.src->buf + 200, len);
	CHECK_EQ_I64(tc_first_not(env.dst->buf, 0, GUARD, FILL), -1);
	CHECK_EQ_I64(tc_first_not(env.dst->buf, GUARD + 100 + len, DST_LEN, FILL), -1);
	CHECK_EQ_I64(tc_wait(env.cb, 1, &wc, QUIET_MS), 0);
	tc_pair_close(&env.a, &env.b);
}

/* droce_engine_qp_print's line for x contains want. */
static void
qp_line_has(const struct tc_qp *x, const char *want)
{
	char *line = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&line, &len);

	CHECK(f != NULL);
	droce_engine_qp_print(f, x->qp);
	CHECK_EQ_I64(fclose(f), 0);
	if (strstr(line, want) == NULL)
		fprintf(stderr, "QP line: %s", line);
	CHECK(strstr(line, want) != NULL);
	free(line);
}

enum bad_write {
	BAD_RKEY,		/* an R_Key of no region */
	BAD_RANGE,		/* one byte past the region */
	BAD_MR_ACCESS,		/* a region without remote write */
	BAD_QP_ACCESS,		/* a QP without remote write */
};

static const char *const bad_names[] = { "bad rkey", "out of range", "MR without remote write",
					 "QP without remote write" };

/*
 * RC: the bad WRITE completes with the NAK's status, what follows is flushed, both QPs
 * go to ERR (the responder's receive is flushed too), and no byte of the target moved.
 */
static void
rc_bad_write(enum bad_write kind)
{
	struct env env;
	struct ibv_wc wc[3];
	struct tc_mr *ro;
	uint32_t len = 2 * MTU + 3;
	uint64_t raddr;
	uint32_t rkey;

	droce_test_ctx("%s", bad_names[kind]);
	env_open(&env, DROCE_SHM_QPT_RC, false, NULL, kind != BAD_QP_ACCESS);
	ro = tc_mr_reg(&env.b, 1 << 16, IBV_ACCESS_LOCAL_WRITE);
	memset(ro->buf, FILL, 1 << 16);
	raddr = dst_addr(&env, GUARD);
	rkey = env.dst->rkey;
	switch (kind) {
	case BAD_RKEY:
		rkey ^= 1;
		break;
	case BAD_RANGE:
		raddr = dst_addr(&env, DST_LEN - len + 1);
		break;
	case BAD_MR_ACCESS:
		raddr = (uintptr_t)ro->buf;
		rkey = ro->rkey;
		break;
	case BAD_QP_ACCESS:
		break;
	}
	CHECK_EQ_I64(post_recv(&env, 500, 0, 64), 0);
	CHECK_EQ_I64(post_write(&env, 1, IBV_WR_RDMA_WRITE, 0, len, raddr, rkey, 0,
				IBV_SEND_SIGNALED), 0);
	CHECK_EQ_I64(post_write(&env, 2, IBV_WR_RDMA_WRITE, 0, 64, dst_addr(&env, GUARD),
				env.dst->rkey, 0, IBV_SEND_SIGNALED), 0);
	CHECK_EQ_I64(tc_send(env.qa, 3, env.src, 0, 4, 0), 0);
	CHECK_EQ_I64(tc_wait(env.ca, 3, wc, WAIT_MS), 3);
	CHECK_EQ_U64(wc[0].wr_id, 1);
	CHECK_EQ_U64(wc[0].status, kind == BAD_QP_ACCESS ? IBV_WC_REM_INV_REQ_ERR :
				   IBV_WC_REM_ACCESS_ERR);
	CHECK_EQ_U64(wc[0].qp_num, env.qa->qpn);
	CHECK_EQ_U64(wc[1].wr_id, 2);
	CHECK_EQ_U64(wc[1].status, IBV_WC_WR_FLUSH_ERR);
	CHECK_EQ_U64(wc[2].wr_id, 3);
	CHECK_EQ_U64(wc[2].status, IBV_WC_WR_FLUSH_ERR);
	CHECK_EQ_U64(tc_qp_state(env.qa), DROCE_SHM_QPS_ERR);
	CHECK_EQ_U64(tc_qp_state(env.qb), DROCE_SHM_QPS_ERR);
	CHECK_EQ_I64(tc_wait(env.cb, 1, wc, WAIT_MS), 1);
	CHECK_EQ_U64(wc[0].wr_id, 500);
	CHECK_EQ_U64(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	CHECK_EQ_I64(tc_first_not(env.dst->buf, 0, DST_LEN, FILL), -1);
	CHECK_EQ_I64(tc_first_not(ro->buf, 0, 1 << 16, FILL), -1);
	CHECK_EQ_U64(tc_counter(&env.b, "nak_err_sent"), 1);
	/* Counted by the responder's reason and by the completer's state. */
	CHECK_EQ_U64(tc_counter(&env.b, kind == BAD_QP_ACCESS ? "resp_err_write_invalid" :
						       "resp_err_write_access"), 1);
	CHECK_EQ_U64(tc_counter(&env.a, "comp_err_err_nak"), 1);
	/* Under Linux's names, on both QPs. */
	CHECK_EQ_U64(tc_qp_counter(env.qb, "resp_remote_access_errors"),
		     kind == BAD_QP_ACCESS ? 0 : 1);
	CHECK_EQ_U64(tc_qp_counter(env.qa, kind == BAD_QP_ACCESS ? "req_remote_invalid_request" :
				   "req_remote_access_errors"), 1);
	CHECK_EQ_U64(tc_qp_counter(env.qa, "req_cqe_error"), 1);
	CHECK_EQ_U64(tc_qp_counter(env.qa, "req_cqe_flush_error"), 2);
	CHECK_EQ_U64(tc_qp_counter(env.qb, "resp_cqe_flush_error"), 1);
	CHECK(tc_qp_counter(env.qb, "rx_write_requests") >= 1);
	/* The per-QP debug line names where each side stood. */
	qp_line_has(env.qa, "completer failed in error NAK");
	qp_line_has(env.qb, "step WRITE");
	tc_pair_close(&env.a, &env.b);
}

DROCE_TEST(rc_write_bad_rkey)
{
	rc_bad_write(BAD_RKEY);
}

DROCE_TEST(rc_write_out_of_range)
{
	rc_bad_write(BAD_RANGE);
}

DROCE_TEST(rc_write_mr_without_remote_write)
{
	rc_bad_write(BAD_MR_ACCESS);
}

DROCE_TEST(rc_write_qp_without_remote_write)
{
	rc_bad_write(BAD_QP_ACCESS);
}

/*
 * UC: each refused WRITE with immediate is dropped whole (no receive taken, no byte
 * written), the requester completes it (UC has no ACK), and the next good one lands.
 */
DROCE_TEST(uc_write_refused_is_dropped)
{
	static const enum bad_write kinds[] = { BAD_RKEY, BAD_RANGE, BAD_MR_ACCESS };
	struct env env;
	struct ibv_wc wc[2];
	struct tc_mr *ro;
	uint32_t len = 2 * MTU + 3;
	unsigned int i;

	env_open(&env, DROCE_SHM_QPT_UC, false, NULL, true);
	ro = tc_mr_reg(&env.b, 1 << 16, IBV_ACCESS_LOCAL_WRITE);
	memset(ro->buf, FILL, 1 << 16);
	for (i = 0; i < RTE_DIM(kinds); i++) {
		uint64_t raddr = dst_addr(&env, GUARD + 8192);
		uint32_t rkey = env.dst->rkey;
		uint64_t drops = tc_counter(&env.b, "uc_drop");

		droce_test_ctx("UC %s", bad_names[kinds[i]]);
		if (kinds[i] == BAD_RKEY) {
			rkey ^= 1;
		} else if (kinds[i] == BAD_RANGE) {
			raddr = dst_addr(&env, DST_LEN - len + 1);
		} else {
			raddr = (uintptr_t)ro->buf;
			rkey = ro->rkey;
		}
		memset(env.dst->buf, FILL, DST_LEN);
		CHECK_EQ_I64(post_recv(&env, 600 + i, 0, 64), 0);
		CHECK_EQ_I64(post_write(&env, 1, IBV_WR_RDMA_WRITE_WITH_IMM, 0, len, raddr, rkey,
					0xBAD, IBV_SEND_SIGNALED), 0);
		CHECK_EQ_I64(post_write(&env, 2, IBV_WR_RDMA_WRITE_WITH_IMM, 50, 300,
					dst_addr(&env, GUARD), env.dst->rkey, 0x600D,
					IBV_SEND_SIGNALED), 0);
		CHECK_EQ_I64(tc_wait(env.ca, 2, wc, WAIT_MS), 2);
		check_send_wc(&wc[0], 1, env.qa->qpn, IBV_WC_RDMA_WRITE, len);
		check_send_wc(&wc[1], 2, env.qa->qpn, IBV_WC_RDMA_WRITE, 300);
		CHECK_EQ_I64(tc_wait(env.cb, 2, wc, QUIET_MS), 1);
		check_imm_wc(&env, &wc[0], 600 + i, 300, 0x600D);
		check_target(&env, GUARD, 50, 300);
		CHECK_EQ_I64(tc_first_not(ro->buf, 0, 1 << 16, FILL), -1);
		CHECK(tc_counter(&env.b, "uc_drop") > drops);
	}
	CHECK_EQ_U64(tc_qp_state(env.qa), DROCE_SHM_QPS_RTS);
	CHECK_EQ_U64(tc_qp_state(env.qb), DROCE_SHM_QPS_RTS);
	tc_pair_close(&env.a, &env.b);
}

/*
 * RC WRITEs and WRITEs with immediate through the faults given: every one completes in
 * order on both sides, each receive WQE is taken once, and every target slot is exact.
 */
#define LOSS_MSGS	250
#define LOSS_SLOT	4096
#define LOSS_WINDOW	48

static uint32_t
loss_len(uint32_t i)
{
	return i % 17 == 0 ? 0 : (i * 2654435761u) % (3 * MTU + 9);
}

static void
rc_write_faults(const char *faults, bool expect_dups)
{
	struct env env;
	struct ibv_wc wc[LOSS_WINDOW];
	uint32_t posted = 0, done = 0, recvd = 0, nb_imm = 0, i;
	int n, k;

	env_open(&env, DROCE_SHM_QPT_RC, false, faults, true);
	for (i = 0; i < LOSS_MSGS; i++)
		nb_imm += i % 5 == 0;
	/* Receives for every WRITE with immediate, and spares that must stay unused. */
	for (i = 0; i < nb_imm + 8; i++)
		CHECK_EQ_I64(post_recv(&env, 10000 + i, 0, 16), 0);
	while (done < LOSS_MSGS) {
		while (posted < LOSS_MSGS && posted - done < LOSS_WINDOW) {
			i = posted;
			CHECK_EQ_I64(post_write(&env, i, i % 5 == 0 ? IBV_WR_RDMA_WRITE_WITH_IMM :
						IBV_WR_RDMA_WRITE, (i * 97) % 4096, loss_len(i),
						dst_addr(&env, GUARD + (uint64_t)i * LOSS_SLOT),
						env.dst->rkey, i, IBV_SEND_SIGNALED), 0);
			posted++;
		}
		n = tc_wait(env.ca, 1, wc, 20000);
		if (n == 0) {
			tc_dump(&env.a);
			tc_dump(&env.b);
		}
		CHECK_EQ_I64(n, 1);
		droce_test_ctx("WRITE %u", done);
		check_send_wc(&wc[0], done, env.qa->qpn, IBV_WC_RDMA_WRITE, loss_len(done));
		done++;
	}
	while (recvd < nb_imm) {
		n = tc_wait(env.cb, (int)RTE_MIN(nb_imm - recvd, RTE_DIM(wc)), wc, WAIT_MS);
		CHECK(n > 0);
		for (k = 0; k < n; k++, recvd++) {
			droce_test_ctx("receive %u", recvd);
			check_imm_wc(&env, &wc[k], 10000 + recvd, loss_len(recvd * 5), recvd * 5);
		}
	}
	CHECK_EQ_I64(tc_wait(env.cb, 1, wc, QUIET_MS), 0);
	for (i = 0; i < LOSS_MSGS; i++) {
		uint64_t off = GUARD + (uint64_t)i * LOSS_SLOT;
		uint32_t len = loss_len(i);

		droce_test_ctx("slot %u", i);
		CHECK_MEM(env.dst->buf + off, env.src->buf + (i * 97) % 4096, len);
		CHECK_EQ_I64(tc_first_not(env.dst->buf, off + len, off + LOSS_SLOT, FILL), -1);
	}
	droce_test_ctx("after the run");
	CHECK_EQ_I64(tc_first_not(env.dst->buf, 0, GUARD, FILL), -1);
	/* The spare receives are next in line: no duplicate took one. */
	fence_send(&env, 10000 + nb_imm);
	CHECK_EQ_U64(tc_qp_state(env.qa), DROCE_SHM_QPS_RTS);
	CHECK_EQ_U64(tc_qp_state(env.qb), DROCE_SHM_QPS_RTS);
	printf("  a: %llu request packets, %llu retransmitted; b: %llu duplicates, "
	       "%llu out of sequence\n",
	       (unsigned long long)tc_counter(&env.a, "req_pkts"),
	       (unsigned long long)tc_counter(&env.a, "req_retransmit"),
	       (unsigned long long)tc_counter(&env.b, "resp_dup"),
	       (unsigned long long)tc_counter(&env.b, "resp_out_of_seq"));
	if (expect_dups)
		CHECK(tc_counter(&env.b, "resp_dup") > 0);
	else
		CHECK(tc_counter(&env.a, "req_retransmit") > 0);
	/* Linux's names count the same events, per QP (one QP each here). */
	CHECK_EQ_U64(tc_qp_counter(env.qb, "duplicate_request"), tc_counter(&env.b, "resp_dup"));
	CHECK_EQ_U64(tc_qp_counter(env.qb, "out_of_sequence"),
		     tc_counter(&env.b, "resp_out_of_seq"));
	CHECK_EQ_U64(tc_qp_counter(env.qa, "packet_seq_err"), tc_counter(&env.a, "nak_seq_rcvd"));
	CHECK_EQ_U64(tc_qp_counter(env.qa, "rdma_tx_packets"),
		     tc_counter(&env.a, "req_pkts") + tc_counter(&env.a, "ack_sent"));
	tc_pair_close(&env.a, &env.b);
}

DROCE_TEST(rc_write_loss_reorder_dup)
{
	rc_write_faults("drop=50000,reorder=30000,dup=30000", false);
}

DROCE_TEST(rc_write_duplicates)
{
	rc_write_faults("dup=300000", true);
}

/* ---- RDMA READ (RC): a reads b's dst into its own src region ---- */

#define RD_ACCESS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

/* Posts one READ of len bytes at raddr into a's src[loff, loff + len). */
static int
post_read(struct env *env, uint64_t wr_id, uint64_t loff, uint32_t len, uint64_t raddr,
	  uint32_t rkey, unsigned int flags)
{
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .opcode = IBV_WR_RDMA_READ, .send_flags = flags,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	};

	return tc_post_one(env->qa, &wr, env->src, loff, len);
}

/* b's dst holds a pattern to read; a's src is FILL. */
static void
read_prepare(struct env *env)
{
	uint32_t i;

	for (i = 0; i < DST_LEN; i++)
		env->dst->buf[i] = (uint8_t)(i * 7 + (i >> 10) + 3);
	memset(env->src->buf, FILL, SRC_LEN);
}

/* a's src holds dst[roff, roff + len) at loff and FILL everywhere else. */
static void
check_read(const struct env *env, uint64_t loff, uint64_t roff, uint32_t len)
{
	CHECK_MEM(env->src->buf + loff, env->dst->buf + roff, len);
	CHECK_EQ_I64(tc_first_not(env->src->buf, 0, loff, FILL), -1);
	CHECK_EQ_I64(tc_first_not(env->src->buf, loff + len, SRC_LEN, FILL), -1);
}

DROCE_TEST(rc_read_sizes)
{
	static const uint32_t sizes[] = { 0, 1, MTU, 3 * MTU + 7, 1u << 20 };
	struct env env;
	struct ibv_wc wc;
	unsigned int i;

	env_open_depth(&env, DROCE_SHM_QPT_RC, false, NULL, RD_ACCESS, 1);
	read_prepare(&env);
	for (i = 0; i < RTE_DIM(sizes); i++) {
		uint32_t len = sizes[i];
		uint64_t loff = len == (1u << 20) ? 0 : 9 + i;
		uint64_t roff = GUARD + (len == (1u << 20) ? 0 : 5 + 3 * i);
		uint64_t pkts = tc_counter(&env.a, "req_pkts");
		uint64_t resp = tc_counter(&env.b, "rd_resp_sent");
		/* A zero-length READ checks no R_Key either. */
		uint32_t rkey = len == 0 ? env.dst->rkey ^ 0x5A5A5A00 : env.dst->rkey;

		droce_test_ctx("READ of %u bytes", len);
		memset(env.src->buf, FILL, SRC_LEN);
		CHECK_EQ_I64(post_read(&env, 300 + i, loff, len, dst_addr(&env, roff), rkey,
				       IBV_SEND_SIGNALED), 0);
		CHECK_EQ_I64(tc_wait(env.ca, 1, &wc, WAIT_MS), 1);
		check_send_wc(&wc, 300 + i, env.qa->qpn, IBV_WC_RDMA_READ, len);
		check_read(&env, loff, roff, len);
		/* One request packet; one response packet per MTU (one for 0 bytes). */
		CHECK_EQ_U64(tc_counter(&env.a, "req_pkts") - pkts, 1);
		CHECK_EQ_U64(tc_counter(&env.b, "rd_resp_sent") - resp,
			     len == 0 ? 1 : (len + MTU - 1) / MTU);
	}
	CHECK_EQ_I64(tc_poll(env.cb, 1, &wc), 0);
	CHECK_EQ_U64(tc_counter(&env.a, "rd_retry"), 0);
	CHECK_EQ_U64(tc_qp_state(env.qa), DROCE_SHM_QPS_RTS);
	CHECK_EQ_U64(tc_qp_state(env.qb), DROCE_SHM_QPS_RTS);
	tc_pair_close(&env.a, &env.b);
}

/* Scattered over three SGEs; a buffer without local write is refused at post. */
DROCE_TEST(rc_read_sges)
{
	struct env env;
	struct ibv_sge sge[3];
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;
	struct tc_mr *ro;
	uint8_t *d;

	env_open_depth(&env, DROCE_SHM_QPT_RC, false, NULL, RD_ACCESS, 1);
	read_prepare(&env);
	d = env.dst->buf + GUARD + 1;
	sge[0] = (struct ibv_sge){ (uintptr_t)env.src->buf + 10, 100, env.src->lkey };
	sge[1] = (struct ibv_sge){ (uintptr_t)env.src->buf + 5000, 2000, env.src->lkey };
	sge[2] = (struct ibv_sge){ (uintptr_t)env.src->buf + 200, 33, env.src->lkey };
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 9;
	wr.sg_list = sge;
	wr.num_sge = 3;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)d;
	wr.wr.rdma.rkey = env.dst->rkey;
	CHECK_EQ_I64(tc_post_send(env.qa, &wr, &bad), 0);
	CHECK_EQ_I64(tc_wait(env.ca, 1, &wc, WAIT_MS), 1);
	check_send_wc(&wc, 9, env.qa->qpn, IBV_WC_RDMA_READ, 2133);
	CHECK_MEM(env.src->buf + 10, d, 100);
	CHECK_MEM(env.src->buf + 5000, d + 100, 2000);
	CHECK_MEM(env.src->buf + 200, d + 2100, 33);
	CHECK_EQ_I64(tc_first_not(env.src->buf, 0, 10, FILL), -1);
	CHECK_EQ_I64(tc_first_not(env.src->buf, 110, 200, FILL), -1);
	CHECK_EQ_I64(tc_first_not(env.src->buf, 233, 5000, FILL), -1);
	CHECK_EQ_I64(tc_first_not(env.src->buf, 7000, SRC_LEN, FILL), -1);
	/* The HCA writes a READ's local buffer: its MR needs local write (ibv_post_send). */
	ro = tc_mr_reg(&env.a, 4096, 0);
	sge[0] = (struct ibv_sge){ (uintptr_t)ro->buf, 64, ro->lkey };
	wr.num_sge = 1;
	CHECK_EQ_I64(tc_post_send(env.qa, &wr, &bad), EINVAL);
	tc_pair_close(&env.a, &env.b);
}

/*
 * Ordering on one QP: a READ sees the WRITE posted before it; a fenced WRITE waits for the
 * READ before it, so the READ returns the old bytes; SENDs around them complete in order
 * (a READ response acknowledges the requests before it).
 */
DROCE_TEST(rc_read_write_ordering)
{
	struct env env;
	struct ibv_wc wc[8];
	uint8_t old[4096];
	unsigned int i;

	env_open_depth(&env, DROCE_SHM_QPT_RC, false, NULL, RD_ACCESS, 4);
	read_prepare(&env);
	for (i = 0; i < SRC_LEN; i++)
		env.src->buf[i] = (uint8_t)(i * 131 + 1);
	memcpy(old, env.dst->buf + GUARD + 8192, sizeof(old));
	CHECK_EQ_I64(post_recv(&env, 50, 0, 64), 0);
	CHECK_EQ_I64(post_recv(&env, 51, 64, 64), 0);
	CHECK_EQ_I64(tc_send(env.qa, 1, env.src, 0, 16, IBV_SEND_SIGNALED), 0);
	/* WRITE src[0, 3000) to dst+GUARD, then READ it back into src+200000. */
	CHECK_EQ_I64(post_write(&env, 2, IBV_WR_RDMA_WRITE, 0, 3000, dst_addr(&env, GUARD),
				env.dst->rkey, 0, IBV_SEND_SIGNALED), 0);
	CHECK_EQ_I64(post_read(&env, 3, 200000, 3000, dst_addr(&env, GUARD), env.dst->rkey,
			       IBV_SEND_SIGNALED), 0);
	/* READ dst+GUARD+8192 into src+300000, then a fenced WRITE over it. */
	CHECK_EQ_I64(post_read(&env, 4, 300000, 4096, dst_addr(&env, GUARD + 8192),
			       env.dst->rkey, IBV_SEND_SIGNALED), 0);
	CHECK_EQ_I64(post_write(&env, 5, IBV_WR_RDMA_WRITE, 100000, 4096,
				dst_addr(&env, GUARD + 8192), env.dst->rkey, 0,
				IBV_SEND_SIGNALED | IBV_SEND_FENCE), 0);
	CHECK_EQ_I64(tc_send(env.qa, 6, env.src, 0, 16, IBV_SEND_SIGNALED), 0);
	CHECK_EQ_I64(tc_wait(env.ca, 6, wc, WAIT_MS), 6);
	check_send_wc(&wc[0], 1, env.qa->qpn, IBV_WC_SEND, 16);
	check_send_wc(&wc[1], 2, env.qa->qpn, IBV_WC_RDMA_WRITE, 3000);
	check_send_wc(&wc[2], 3, env.qa->qpn, IBV_WC_RDMA_READ, 3000);
	check_send_wc(&wc[3], 4, env.qa->qpn, IBV_WC_RDMA_READ, 4096);
	check_send_wc(&wc[4], 5, env.qa->qpn, IBV_WC_RDMA_WRITE, 4096);
	check_send_wc(&wc[5], 6, env.qa->qpn, IBV_WC_SEND, 16);
	CHECK_MEM(env.src->buf + 200000, env.src->buf, 3000);
	CHECK_MEM(env.src->buf + 300000, old, sizeof(old));
	CHECK_MEM(env.dst->buf + GUARD + 8192, env.src->buf + 100000, 4096);
	CHECK_EQ_I64(tc_wait(env.cb, 2, wc, WAIT_MS), 2);
	CHECK_EQ_U64(wc[0].wr_id, 50);
	CHECK_EQ_U64(wc[1].wr_id, 51);
	/* A READ and a SEND in one post: the SEND's ACK must not pass the READ's response. */
	for (i = 0; i < 8; i++) {
		struct ibv_sge sge[2] = {
			{ (uintptr_t)env.src->buf + 400000, 8 * MTU, env.src->lkey },
			{ (uintptr_t)env.src->buf, 16, env.src->lkey },
		};
		struct ibv_send_wr wr[2], *bad;

		memset(wr, 0, sizeof(wr));
		wr[0].wr_id = 7;
		wr[0].sg_list = &sge[0];
		wr[0].num_sge = 1;
		wr[0].opcode = IBV_WR_RDMA_READ;
		wr[0].wr.rdma.remote_addr = dst_addr(&env, GUARD);
		wr[0].wr.rdma.rkey = env.dst->rkey;
		wr[0].next = &wr[1];
		wr[1].wr_id = 8;
		wr[1].sg_list = &sge[1];
		wr[1].num_sge = 1;
		wr[1].opcode = IBV_WR_SEND;
		wr[1].send_flags = IBV_SEND_SIGNALED;
		CHECK_EQ_I64(post_recv(&env, 60 + i, 0, 64), 0);
		CHECK_EQ_I64(tc_post_send(env.qa, wr, &bad), 0);
		CHECK_EQ_I64(tc_wait(env.ca, 1, wc, WAIT_MS), 1);
		check_send_wc(&wc[0], 8, env.qa->qpn, IBV_WC_SEND, 16);
		CHECK_EQ_I64(tc_wait(env.cb, 1, wc, WAIT_MS), 1);
		CHECK_EQ_U64(wc[0].wr_id, 60 + i);
		CHECK_MEM(env.src->buf + 400000, env.dst->buf + GUARD, 8 * MTU);
	}
	/* No ACK overtook a READ response (that would have made a retry). */
	CHECK_EQ_U64(tc_counter(&env.a, "rd_retry"), 0);
	CHECK_EQ_U64(tc_counter(&env.b, "rd_replay"), 0);
	tc_pair_close(&env.a, &env.b);
}

/*
 * More READs than the depth posted at once: the requester keeps at most max_rd_atomic
 * out (the responder keeps as many; one more would cost the oldest its answer).
 */
static void
read_burst(uint8_t depth)
{
	struct env env;
	struct ibv_wc wc[32];
	unsigned int i;

	env_open_depth(&env, DROCE_SHM_QPT_RC, false, NULL, RD_ACCESS, depth);
	read_prepare(&env);
	for (i = 0; i < 32; i++)
		CHECK_EQ_I64(post_read(&env, i, (uint64_t)i * 8192, 5 * MTU + i,
				       dst_addr(&env, GUARD + (uint64_t)i * 8192), env.dst->rkey,
				       IBV_SEND_SIGNALED), 0);
	CHECK_EQ_I64(tc_wait(env.ca, 32, wc, WAIT_MS), 32);
	for (i = 0; i < 32; i++) {
		droce_test_ctx("READ %u", i);
		check_send_wc(&wc[i], i, env.qa->qpn, IBV_WC_RDMA_READ, 5 * MTU + i);
		CHECK_MEM(env.src->buf + (uint64_t)i * 8192,
			  env.dst->buf + GUARD + (uint64_t)i * 8192, 5 * MTU + i);
	}
	CHECK_EQ_U64(tc_counter(&env.a, "rd_retry"), 0);
	CHECK_EQ_U64(tc_counter(&env.b, "rd_replay"), 0);
	tc_pair_close(&env.a, &env.b);
}

DROCE_TEST(rc_read_depth_1)
{
	read_burst(1);
}

DROCE_TEST(rc_read_depth_16)
{
	read_burst(16);
}

enum bad_read {
	BAD_READ_RKEY,
	BAD_READ_RANGE,
	BAD_READ_MR_ACCESS,
	BAD_READ_QP_ACCESS,
};

/* The bad READ fails with the NAK's status, the rest is flushed, both QPs go to ERR. */
static void
rc_bad_read(enum bad_read kind)
{
	struct env env;
	struct ibv_wc wc[2];
	struct tc_mr *wo;
	uint64_t raddr;
	uint32_t rkey, len = 2 * MTU + 3;

	env_open_depth(&env, DROCE_SHM_QPT_RC, false, NULL, kind == BAD_READ_QP_ACCESS ?
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE : RD_ACCESS, 1);
	read_prepare(&env);
	wo = tc_mr_reg(&env.b, 1 << 16, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	raddr = dst_addr(&env, GUARD);
	rkey = env.dst->rkey;
	if (kind == BAD_READ_RKEY)
		rkey ^= 1;
	else if (kind == BAD_READ_RANGE)
		raddr = dst_addr(&env, DST_LEN - len + 1);
	else if (kind == BAD_READ_MR_ACCESS)
		raddr = (uintptr_t)wo->buf, rkey = wo->rkey;
	CHECK_EQ_I64(post_read(&env, 1, 0, len, raddr, rkey, IBV_SEND_SIGNALED), 0);
	CHECK_EQ_I64(post_read(&env, 2, 8192, 16, dst_addr(&env, GUARD), env.dst->rkey, 0), 0);
	CHECK_EQ_I64(tc_wait(env.ca, 2, wc, WAIT_MS), 2);
	CHECK_EQ_U64(wc[0].wr_id, 1);
	CHECK_EQ_U64(wc[0].status, kind == BAD_READ_QP_ACCESS ? IBV_WC_REM_INV_REQ_ERR :
				   IBV_WC_REM_ACCESS_ERR);
	CHECK_EQ_U64(wc[1].wr_id, 2);
	CHECK_EQ_U64(wc[1].status, IBV_WC_WR_FLUSH_ERR);
	CHECK_EQ_U64(tc_qp_state(env.qa), DROCE_SHM_QPS_ERR);
	CHECK_EQ_U64(tc_qp_state(env.qb), DROCE_SHM_QPS_ERR);
	CHECK_EQ_I64(tc_first_not(env.src->buf, 0, SRC_LEN, FILL), -1);
	CHECK_EQ_U64(tc_counter(&env.b, "rd_resp_sent"), 0);
	tc_pair_close(&env.a, &env.b);
}

DROCE_TEST(rc_read_bad_rkey)
{
	rc_bad_read(BAD_READ_RKEY);
}

DROCE_TEST(rc_read_out_of_range)
{
	rc_bad_read(BAD_READ_RANGE);
}

DROCE_TEST(rc_read_mr_without_remote_read)
{
	rc_bad_read(BAD_READ_MR_ACCESS);
}

DROCE_TEST(rc_read_qp_without_remote_read)
{
	rc_bad_read(BAD_READ_QP_ACCESS);
}

/*
 * READs (single and multi-packet, several out) mixed with WRITEs and SENDs through loss,
 * reordering and duplication: every completion in order, every READ returns what the
 * target held when it came (the responder executes in order: it sees the WRITEs posted
 * before it), the target ends as the WRITEs left it, and each SEND takes one receive.
 */
#define RL_MSGS		300
#define RL_SLOT		2048
#define RL_WSRC		(SRC_LEN - 8192)	/* a: what the WRITEs send */
#define RL_BIG_OFF	(640u * 1024)		/* a: where the big READ lands */
#define RL_BIG_LEN	(320u * 1024)

static uint32_t
rl_len(uint32_t i)
{
	return i % 13 == 0 ? 0 : (i * 2654435761u) % (6 * MTU + 11);
}

static void
rc_read_faults(const char *faults, uint8_t depth)
{
	struct env env;
	struct ibv_wc wc[16];
	uint32_t posted = 0, done = 0, nb_send = 0, i;
	uint8_t *shadow = droce_test_malloc(DST_LEN);
	uint8_t *expect = droce_test_malloc(SRC_LEN);
	int n, k;

	env_open_depth(&env, DROCE_SHM_QPT_RC, false, faults, RD_ACCESS, depth);
	read_prepare(&env);
	for (i = 0; i < 8192; i++)
		env.src->buf[RL_WSRC + i] = (uint8_t)(i * 29 + 5);
	memcpy(shadow, env.dst->buf, DST_LEN);
	memcpy(expect, env.src->buf, SRC_LEN);
	for (i = 0; i < RL_MSGS; i++)
		nb_send += i % 7 == 3;
	for (i = 0; i < nb_send; i++)
		CHECK_EQ_I64(post_recv(&env, 20000 + i, 0, 64), 0);
	while (done < RL_MSGS + 1) {
		while (posted < RL_MSGS + 1 && posted - done < 48) {
			uint64_t roff = GUARD + (uint64_t)posted * RL_SLOT;
			uint64_t loff = 4096 + (uint64_t)posted * RL_SLOT;
			uint32_t len = rl_len(posted);

			i = posted++;
			if (i == RL_MSGS) {
				/* Last, one big READ of what the WRITEs left. */
				memcpy(expect + RL_BIG_OFF, shadow + GUARD, RL_BIG_LEN);
				CHECK_EQ_I64(post_read(&env, i, RL_BIG_OFF, RL_BIG_LEN,
						       dst_addr(&env, GUARD), env.dst->rkey,
						       IBV_SEND_SIGNALED), 0);
			} else if (i % 7 == 3) {
				CHECK_EQ_I64(tc_send(env.qa, i, env.src, RL_WSRC, 4,
						     IBV_SEND_SIGNALED), 0);
			} else if (i % 5 == 1) {
				/* Spills over the next slots: later READs must see it. */
				memcpy(shadow + roff, env.src->buf + RL_WSRC, len);
				CHECK_EQ_I64(post_write(&env, i, IBV_WR_RDMA_WRITE, RL_WSRC, len,
							dst_addr(&env, roff), env.dst->rkey, 0,
							IBV_SEND_SIGNALED), 0);
			} else {
				len %= RL_SLOT;
				memcpy(expect + loff, shadow + roff, len);
				CHECK_EQ_I64(post_read(&env, i, loff, len, dst_addr(&env, roff),
						       env.dst->rkey, IBV_SEND_SIGNALED), 0);
			}
		}
		n = tc_wait(env.ca, 1, wc, 20000);
		if (n == 0) {
			tc_dump(&env.a);
			tc_dump(&env.b);
		}
		CHECK_EQ_I64(n, 1);
		droce_test_ctx("WR %u", done);
		CHECK_EQ_U64(wc[0].wr_id, done);
		CHECK_EQ_U64(wc[0].status, IBV_WC_SUCCESS);
		CHECK_EQ_U64(wc[0].opcode, done == RL_MSGS ? IBV_WC_RDMA_READ :
					   done % 7 == 3 ? IBV_WC_SEND :
					   done % 5 == 1 ? IBV_WC_RDMA_WRITE : IBV_WC_RDMA_READ);
		done++;
	}
	droce_test_ctx("after the run");
	CHECK_MEM(env.src->buf, expect, SRC_LEN);
	CHECK_MEM(env.dst->buf, shadow, DST_LEN);
	for (i = 0; i < nb_send; i += k) {
		n = tc_wait(env.cb, (int)RTE_MIN(nb_send - i, RTE_DIM(wc)), wc, WAIT_MS);
		CHECK(n > 0);
		for (k = 0; k < n; k++) {
			CHECK_EQ_U64(wc[k].wr_id, 20000 + i + k);
			CHECK_EQ_U64(wc[k].status, IBV_WC_SUCCESS);
			CHECK_EQ_U64(wc[k].byte_len, 4);
		}
	}
	CHECK_EQ_I64(tc_wait(env.cb, 1, wc, QUIET_MS), 0);
	CHECK_EQ_U64(tc_qp_state(env.qa), DROCE_SHM_QPS_RTS);
	CHECK_EQ_U64(tc_qp_state(env.qb), DROCE_SHM_QPS_RTS);
	printf("  a: %llu request packets, %llu retransmitted, %llu READ retries; "
	       "b: %llu READ replays, %llu duplicates\n",
	       (unsigned long long)tc_counter(&env.a, "req_pkts"),
	       (unsigned long long)tc_counter(&env.a, "req_retransmit"),
	       (unsigned long long)tc_counter(&env.a, "rd_retry"),
	       (unsigned long long)tc_counter(&env.b, "rd_replay"),
	       (unsigned long long)tc_counter(&env.b, "resp_dup"));
	CHECK(tc_counter(&env.a, "rd_retry") > 0);
	CHECK(tc_counter(&env.b, "rd_replay") > 0);
	tc_pair_close(&env.a, &env.b);
}

DROCE_TEST(rc_read_loss_reorder_dup)
{
	rc_read_faults("drop=50000,reorder=30000,dup=30000", 4);
}

DROCE_TEST(rc_read_loss_depth_1)
{
	rc_read_faults("drop=30000,dup=100000", 1);
}
