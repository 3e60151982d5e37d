/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * IBA 1.5's ATOMIC WRITE and FLUSH (RC) between two engines joined by net_ring. ATOMIC
 * WRITE stores its 8 bytes exactly, from an SGE or inline, answered by a READ response
 * without payload (IBV_WC_ATOMIC_WRITE); FLUSH of a range or a whole MR completes with
 * IBV_WC_FLUSH after the WRITEs before it. The responder's checks: alignment, lengths, the
 * QP's remote write or flush access, the MR's rights per placement type, range and key,
 * each with its status, both QPs in ERR and memory untouched. Through loss, reordering
 * and duplication each one runs exactly once and everything completes in order.
 */
#include <stdio.h>
#include <string.h>

#include "droce_test.h"
#include "engine_client.h"

#define TGT_LEN		(1u << 16)
#define SRC_LEN		(1u << 16)
#define FILL		0xEE
#define WAIT_MS		5000
#define FLUSH_BOTH	(DROCE_SHM_FLUSH_GLOBAL | DROCE_SHM_FLUSH_PERSISTENT)
#define QP_FLUSH	(DROCE_SHM_ACCESS_FLUSH_GLOBAL | DROCE_SHM_ACCESS_FLUSH_PERSISTENT)
#define REMOTE		(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

#define WR_OPS		((1u << DROCE_SHM_WR_RDMA_WRITE) | (1u << DROCE_SHM_WR_FLUSH) | \
			 (1u << DROCE_SHM_WR_ATOMIC_WRITE))

struct env {
	struct tc_host a, b;
	struct tc_cq *ca, *cb;
	struct tc_qp *qa, *qb;
	struct tc_mr *src;	/* a: WRITE data and ATOMIC WRITE operands */
	struct tc_mr *tgt;	/* b: the target */
};

/*
 * Local ACK timeout codes: 10 (4 ms) keeps the cases without loss quick; through faults,
 * where a lost request or response costs a timeout, 12 (16.8 ms): seven retries of 4 ms
 * gave a loaded ASan run 33 ms for b to answer, and it once did not (doc/reliability.md).
 */
#define ACK_TIMEOUT		10
#define ACK_TIMEOUT_LOSSY	12

/*
 * b's QP has access flags qp_access, its target MR mr_access; depth: READ depth; timeout:
 * the local ACK timeout code.
 */
static void
env_open(struct env *env, const char *faults, uint32_t qp_access, uint32_t mr_access,
	 uint8_t depth, uint8_t timeout)
{
	struct tc_path path = { .mtu = IBV_MTU_1024, .timeout = timeout, .retry_cnt = 7,
				.rnr_retry = 7, .min_rnr_timer = 1, .psn_a = 0xFFFFF0,
				.psn_b = 77, .rd_atomic = depth };
	struct tc_qp_init in = { .type = DROCE_SHM_QPT_RC, .sq_size = 256, .rq_size = 64,
				 .max_sge = 2, .max_inline = 0 };
	uint32_t i;

	memset(env, 0, sizeof(*env));
	tc_pair_open_seeded(&env->a, &env->b, faults, 31);
	env->ca = tc_cq_create(&env->a, 1024);
	env->cb = tc_cq_create(&env->b, 1024);
	in.scq = in.rcq = env->ca;
	env->qa = tc_qp_create(&env->a, &in);
	in.scq = in.rcq = env->cb;
	env->qb = tc_qp_create(&env->b, &in);
	env->qa->view.supported_wr |= WR_OPS;
	env->src = tc_mr_reg(&env->a, SRC_LEN, IBV_ACCESS_LOCAL_WRITE);
	env->tgt = tc_mr_reg(&env->b, TGT_LEN, mr_access);
	for (i = 0; i < SRC_LEN; i++)
		env->src->buf[i] = (uint8_t)(i * 13 + 5);
	memset(env->tgt->buf, FILL, TGT_LEN);
	path.access_b = qp_access;
	tc_connect(env->qa, env->qb, &path);
}

static uint64_t
tgt(const struct env *env, uint64_t off)
{
	return (uintptr_t)env->tgt->buf + off;
}

/* ATOMIC WRITE of src[soff, soff + 8) (inline: the bytes in the WQE) to raddr. */
static int
post_atomic_write(struct env *env, uint64_t wr_id, uint64_t soff, uint64_t raddr,
		  uint32_t rkey, bool inline_data)
{
	struct ibv_send_wr wr = { .wr_id = wr_id, .opcode = IBV_WR_ATOMIC_WRITE,
				  .send_flags = IBV_SEND_SIGNALED |
						(inline_data ? IBV_SEND_INLINE : 0),
				  .wr.rdma = { .remote_addr = raddr, .rkey = rkey } };

	return tc_post_one(env->qa, &wr, env->src, soff, 8);
}

static int
post_flush(struct env *env, uint64_t wr_id, uint64_t raddr, uint32_t len, uint32_t rkey,
	   uint8_t type, uint8_t level)
{
	struct ibv_send_wr wr = { .wr_id = wr_id, .send_flags = IBV_SEND_SIGNALED }, *bad;

	droce_shm_flush_wr(&wr, rkey, raddr, len, type, level);
	return tc_post_send(env->qa, &wr, &bad);
}

static int
post_write(struct env *env, uint64_t wr_id, uint64_t soff, uint32_t len, uint64_t raddr)
{
	struct ibv_send_wr wr = { .wr_id = wr_id, .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { .remote_addr = raddr, .rkey = env->tgt->rkey } };

	return tc_post_one(env->qa, &wr, env->src, soff, len);
}

static void
expect_wc(struct tc_cq *cq, uint64_t wr_id, enum ibv_wc_status status, enum ibv_wc_opcode op,
	  uint32_t byte_len)
{
	struct ibv_wc wc;

	CHECK_EQ_I64(tc_wait(cq, 1, &wc, WAIT_MS), 1);
	CHECK_EQ_U64(wc.wr_id, wr_id);
	CHECK_EQ_U64(wc.status, status);
	if (status == IBV_WC_SUCCESS) {
		CHECK_EQ_U64(wc.opcode, op);
		CHECK_EQ_U64(wc.byte_len, byte_len);
	}
}

/*
 * ATOMIC WRITEs from an SGE and inline land their 8 bytes exactly, nothing around them
 * moves, and each is answered by one READ response; FLUSHes of a range, of nothing, and
 * of the whole MR (any address) complete after the WRITE before them.
 */
DROCE_TEST(atomic_write_and_flush)
{
	struct env env;

	env_open(&env, NULL, IBV_ACCESS_LOCAL_WRITE | REMOTE | QP_FLUSH,
		 IBV_ACCESS_LOCAL_WRITE | REMOTE | QP_FLUSH, 4, ACK_TIMEOUT);
	CHECK_EQ_I64(post_atomic_write(&env, 1, 8, tgt(&env, 64), env.tgt->rkey, false), 0);
	CHECK_EQ_I64(post_atomic_write(&env, 2, 16, tgt(&env, TGT_LEN - 8), env.tgt->rkey, true),
		     0);
	expect_wc(env.ca, 1, IBV_WC_SUCCESS, IBV_WC_ATOMIC_WRITE, 8);
	expect_wc(env.ca, 2, IBV_WC_SUCCESS, IBV_WC_ATOMIC_WRITE, 8);
	CHECK_MEM(env.tgt->buf + 64, env.src->buf + 8, 8);
	CHECK_MEM(env.tgt->buf + TGT_LEN - 8, env.src->buf + 16, 8);
	CHECK_EQ_I64(tc_first_not(env.tgt->buf, 0, 64, FILL), -1);
	CHECK_EQ_I64(tc_first_not(env.tgt->buf, 72, TGT_LEN - 8, FILL), -1);
	CHECK_EQ_U64(tc_counter(&env.b, "atomic_write_exec"), 2);
	/*
	 * One READ response each. The ACK timer (timeout 10: 4 ms) may fire when an engine
	 * thread is off its CPU that long on a loaded machine (a loaded run: rd_resp_sent 4):
	 * then a repeats, and b answers the duplicate again without executing it (9.7.5.1.2;
	 * atomic_write_exec above stays 2). Exactly 2 unless a timed out.
	 */
	if (tc_counter(&env.a, "req_timeout") == 0)
		CHECK_EQ_U64(tc_counter(&env.b, "rd_resp_sent"), 2);
	else
		CHECK(tc_counter(&env.b, "rd_resp_sent") >= 2);
	CHECK_EQ_U64(tc_counter(&env.a, "nak_seq_rcvd"), 0);

	CHECK_EQ_I64(post_write(&env, 3, 0, 5000, tgt(&env, 1000)), 0);
	CHECK_EQ_I64(post_flush(&env, 4, tgt(&env, 1000), 5000, env.tgt->rkey,
				DROCE_SHM_FLUSH_GLOBAL, DROCE_SHM_FLUSH_RANGE), 0);
	CHECK_EQ_I64(post_flush(&env, 5, tgt(&env, 0), 0, env.tgt->rkey,
				DROCE_SHM_FLUSH_PERSISTENT, DROCE_SHM_FLUSH_RANGE), 0);
	CHECK_EQ_I64(post_flush(&env, 6, 0x1234, 0, env.tgt->rkey, FLUSH_BOTH,
				DROCE_SHM_FLUSH_MR), 0);
	expect_wc(env.ca, 3, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 5000);
	expect_wc(env.ca, 4, IBV_WC_SUCCESS, (enum ibv_wc_opcode)DROCE_SHM_WC_FLUSH, 0);
	expect_wc(env.ca, 5, IBV_WC_SUCCESS, (enum ibv_wc_opcode)DROCE_SHM_WC_FLUSH, 0);
	expect_wc(env.ca, 6, IBV_WC_SUCCESS, (enum ibv_wc_opcode)DROCE_SHM_WC_FLUSH, 0);
	CHECK_MEM(env.tgt->buf + 1000, env.src->buf, 5000);
	CHECK_EQ_U64(tc_counter(&env.b, "flush_exec"), 3);
	CHECK_EQ_U64(tc_qp_state(env.qb), DROCE_SHM_QPS_RTS);
	tc_pair_close(&env.a, &env.b);
}

enum refusal {
	REF_AW_MISALIGNED,	/* ATOMIC WRITE to an address not 8-byte aligned */
	REF_AW_QP_NO_WRITE,	/* ATOMIC WRITE to a QP without remote write */
	REF_AW_BAD_RKEY,
	REF_AW_MR_NO_WRITE,	/* an MR without remote write */
	REF_FLUSH_QP,		/* FLUSH persistent to a QP allowing global visibility only */
	REF_FLUSH_MR,		/* FLUSH persistent to an MR allowing global visibility only */
	REF_FLUSH_RANGE,	/* a range past the MR */
	REF_FLUSH_MR_KEY,	/* level MR with a key that is no MR */
};

static const struct {
	const char *name;
	uint32_t qp_access, mr_access;
	enum ibv_wc_status status;
	const char *counter;
} refusals[] = {
	[REF_AW_MISALIGNED] = { "ATOMIC WRITE misaligned", REMOTE, REMOTE,
				IBV_WC_REM_INV_REQ_ERR, "resp_err_atomic_invalid" },
	[REF_AW_QP_NO_WRITE] = { "ATOMIC WRITE, QP without remote write",
				 IBV_ACCESS_REMOTE_READ, REMOTE, IBV_WC_REM_INV_REQ_ERR,
				 "resp_err_write_invalid" },
	[REF_AW_BAD_RKEY] = { "ATOMIC WRITE, bad R_Key", REMOTE, REMOTE, IBV_WC_REM_ACCESS_ERR,
			      "resp_err_write_access" },
	[REF_AW_MR_NO_WRITE] = { "ATOMIC WRITE, MR without remote write", REMOTE,
				 IBV_ACCESS_REMOTE_READ, IBV_WC_REM_ACCESS_ERR,
				 "resp_err_write_access" },
	[REF_FLUSH_QP] = { "FLUSH persistent, QP global only",
			   REMOTE | DROCE_SHM_ACCESS_FLUSH_GLOBAL, REMOTE | QP_FLUSH,
			   IBV_WC_REM_INV_REQ_ERR, "resp_err_flush_invalid" },
	[REF_FLUSH_MR] = { "FLUSH persistent, MR global only", REMOTE | QP_FLUSH,
			   REMOTE | DROCE_SHM_ACCESS_FLUSH_GLOBAL, IBV_WC_REM_ACCESS_ERR,
			   "resp_err_flush_access" },
	[REF_FLUSH_RANGE] = { "FLUSH past the MR", REMOTE | QP_FLUSH, REMOTE | QP_FLUSH,
			      IBV_WC_REM_ACCESS_ERR, "resp_err_flush_access" },
	[REF_FLUSH_MR_KEY] = { "FLUSH of the MR, bad key", REMOTE | QP_FLUSH, REMOTE | QP_FLUSH,
			       IBV_WC_REM_ACCESS_ERR, "resp_err_flush_access" },
};

/* Each refusal: its status, the WQE after it flushed, both QPs in ERR, nothing written. */
DROCE_TEST(responder_refusals)
{
	unsigned int k;

	for (k = 0; k <= REF_FLUSH_MR_KEY; k++) {
		struct env env;
		uint32_t rkey;
		int rc;

		droce_test_ctx("%s", refusals[k].name);
		env_open(&env, NULL, IBV_ACCESS_LOCAL_WRITE | refusals[k].qp_access,
			 IBV_ACCESS_LOCAL_WRITE | refusals[k].mr_access, 1, ACK_TIMEOUT);
		rkey = env.tgt->rkey;
		switch ((enum refusal)k) {
		case REF_AW_MISALIGNED:
			rc = post_atomic_write(&env, 1, 0, tgt(&env, 68), rkey, false);
			break;
		case REF_AW_BAD_RKEY:
			rc = post_atomic_write(&env, 1, 0, tgt(&env, 64), rkey ^ 0x80, false);
			break;
		case REF_AW_QP_NO_WRITE:
		case REF_AW_MR_NO_WRITE:
			rc = post_atomic_write(&env, 1, 0, tgt(&env, 64), rkey, false);
			break;
		case REF_FLUSH_QP:
		case REF_FLUSH_MR:
			rc = post_flush(&env, 1, tgt(&env, 0), 64, rkey, DROCE_SHM_FLUSH_PERSISTENT,
					DROCE_SHM_FLUSH_RANGE);
			break;
		case REF_FLUSH_RANGE:
			rc = post_flush(&env, 1, tgt(&env, TGT_LEN - 64), 65, rkey,
					DROCE_SHM_FLUSH_GLOBAL, DROCE_SHM_FLUSH_RANGE);
			break;
		default:
			rc = post_flush(&env, 1, 0, 0, rkey ^ 0x80, DROCE_SHM_FLUSH_GLOBAL,
					DROCE_SHM_FLUSH_MR);
			break;
		}
		CHECK_EQ_I64(rc, 0);
		CHECK_EQ_I64(post_write(&env, 2, 0, 64, tgt(&env, 0)), 0);
		expect_wc(env.ca, 1, refusals[k].status, 0, 0);
		expect_wc(env.ca, 2, IBV_WC_WR_FLUSH_ERR, 0, 0);
		CHECK_EQ_U64(tc_qp_state(env.qa), DROCE_SHM_QPS_ERR);
		CHECK_EQ_U64(tc_qp_state(env.qb), DROCE_SHM_QPS_ERR);
		CHECK_EQ_U64(tc_counter(&env.b, refusals[k].counter), 1);
		CHECK_EQ_I64(tc_first_not(env.tgt->buf, 0, TGT_LEN, FILL), -1);
		tc_pair_close(&env.a, &env.b);
	}
}

/* What the library refuses at post time: EINVAL, nothing posted. */
DROCE_TEST(post_checks)
{
	struct ibv_send_wr wr = { .wr_id = 1, .opcode = IBV_WR_ATOMIC_WRITE,
				  .wr.rdma = { .remote_addr = 64 } }, *bad;
	struct env env;

	env_open(&env, NULL, IBV_ACCESS_LOCAL_WRITE | REMOTE | QP_FLUSH,
		 IBV_ACCESS_LOCAL_WRITE | REMOTE | QP_FLUSH, 1, ACK_TIMEOUT);
	/* an ATOMIC WRITE of 4 bytes, of 16 */
	CHECK_EQ_I64(tc_post_one(env.qa, &wr, env.src, 0, 4), EINVAL);
	CHECK_EQ_I64(tc_post_one(env.qa, &wr, env.src, 0, 16), EINVAL);
	/* a FLUSH of no placement type, of an unknown one, at an unknown level */
	memset(&wr, 0, sizeof(wr));
	droce_shm_flush_wr(&wr, env.tgt->rkey, tgt(&env, 0), 8, 0, DROCE_SHM_FLUSH_RANGE);
	CHECK_EQ_I64(tc_post_send(env.qa, &wr, &bad), EINVAL);
	droce_shm_flush_wr(&wr, env.tgt->rkey, tgt(&env, 0), 8, 4, DROCE_SHM_FLUSH_RANGE);
	CHECK_EQ_I64(tc_post_send(env.qa, &wr, &bad), EINVAL);
	droce_shm_flush_wr(&wr, env.tgt->rkey, tgt(&env, 0), 8, DROCE_SHM_FLUSH_GLOBAL, 2);
	CHECK_EQ_I64(tc_post_send(env.qa, &wr, &bad), EINVAL);
	CHECK_EQ_U64(env.qa->view.sq_prod, 0);
	tc_pair_close(&env.a, &env.b);
}

/*
 * A stream of WRITE, FLUSH, ATOMIC WRITE (a counter) through loss, reordering and
 * duplication: all complete in order, every ATOMIC WRITE and FLUSH ran exactly once (a
 * duplicate is answered from its responder resource), and the target ends exact.
 */
#define STREAM_ROUNDS	150

static void
stream(const char *faults, uint8_t depth)
{
	struct ibv_wc wc[3 * STREAM_ROUNDS];
	struct env env;
	uint32_t i;
	int n = 0;

	droce_test_ctx("%s, depth %u", faults, depth);
	tc_next_pair_early();
	env_open(&env, faults, IBV_ACCESS_LOCAL_WRITE | REMOTE | QP_FLUSH,
		 IBV_ACCESS_LOCAL_WRITE | REMOTE | QP_FLUSH, depth, ACK_TIMEOUT_LOSSY);
	for (i = 0; i < STREAM_ROUNDS; i++) {
		uint64_t v = 1000 + i;

		/* the operand: written into a's buffer before the WQE that reads it */
		memcpy(env.src->buf + 32768 + 8 * (i % 64), &v, 8);
		CHECK_EQ_I64(post_write(&env, 3 * i, (i * 97) % 4096, 2000,
					tgt(&env, 4096 + (i % 16) * 2048)), 0);
		CHECK_EQ_I64(post_flush(&env, 3 * i + 1, tgt(&env, 4096 + (i % 16) * 2048), 2000,
					env.tgt->rkey, FLUSH_BOTH, DROCE_SHM_FLUSH_RANGE), 0);
		CHECK_EQ_I64(post_atomic_write(&env, 3 * i + 2, 32768 + 8 * (i % 64),
					       tgt(&env, 8 * (i % 64)), env.tgt->rkey, i % 2),
			     0);
		while (n < (int)(3 * i)) {
			int got = tc_wait(env.ca, 3 * (int)i - n, wc + n, 4 * WAIT_MS);

			CHECK(got > 0);
			n += got;
		}
	}
	while (n < 3 * STREAM_ROUNDS) {
		int got = tc_wait(env.ca, 3 * STREAM_ROUNDS - n, wc + n, 4 * WAIT_MS);

		CHECK(got > 0);
		n += got;
	}
	for (i = 0; i < 3 * STREAM_ROUNDS; i++) {
		static const enum ibv_wc_opcode ops[] = {
			IBV_WC_RDMA_WRITE, (enum ibv_wc_opcode)DROCE_SHM_WC_FLUSH,
			IBV_WC_ATOMIC_WRITE };

		droce_test_ctx("%s, depth %u, completion %u", faults, depth, i);
		CHECK_EQ_U64(wc[i].wr_id, i);
		CHECK_EQ_U64(wc[i].status, IBV_WC_SUCCESS);
		CHECK_EQ_U64(wc[i].opcode, ops[i % 3]);
	}
	for (i = STREAM_ROUNDS - 64; i < STREAM_ROUNDS; i++) {
		uint64_t v;

		memcpy(&v, env.tgt->buf + 8 * (i % 64), 8);
		CHECK_EQ_U64(v, 1000 + i);
	}
	CHECK_EQ_U64(tc_counter(&env.b, "atomic_write_exec"), STREAM_ROUNDS);
	CHECK_EQ_U64(tc_counter(&env.b, "flush_exec"), STREAM_ROUNDS);
	CHECK(tc_counter(&env.a, "req_retransmit") > 0);
	CHECK_EQ_U64(tc_qp_state(env.qa), DROCE_SHM_QPS_RTS);
	tc_pair_close(&env.a, &env.b);
}

DROCE_TEST(stream_through_faults)
{
	stream("drop=50000,reorder=30000,dup=50000", 4);
	stream("drop=30000,dup=100000", 1);
}
