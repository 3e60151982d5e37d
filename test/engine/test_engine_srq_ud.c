/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared receive and completion queues across engines, and the unreliable transports:
 *   - one SRQ serving 64 RC QPs on two engines (steering, unordered WQE use, srq_limit,
 *     RNR retries while the receiver has posted nothing);
 *   - UD over IPv4 and IPv6: the 40-byte GRH area, immediates, Q_Key rules, drops without
 *     a WQE, short buffers, sends longer than the MTU;
 *   - UC segmentation at every MTU, and UC over a lossy link (messages lost whole);
 *   - one CQ written by QPs on two engines for tens of thousands of completions.
 * Every message carries its sender and sequence number, so each delivery is checked for
 * the exact bytes of the exact message.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "droce_test.h"
#include "engine_client.h"
#include "test_eal.h"

/* Engines of the largest pair opened here: the EAL is started once, sized for it. */
#define MAX_WORKERS		4
#define MSG_HDR_LEN		6	/* sender (16 bits) and sequence (32 bits), little-endian */
#define POLL_BATCH		64
#define WAIT_MS			5000
#define LOOP_MS			40000
#define QUIET_MS		20	/* how long "nothing more arrives" is watched for */
#define QKEY			0x11110000u
#define QKEY_OTHER		0x22220000u
#define QKEY_WRONG		0x33330000u
#define QKEY_USE_OWN		0x80000000u	/* C10-15: the sender QP's own Q_Key */
#define IMM_TAG			0xA5000000u
#define TTL			64		/* tc_ah_attr's hop limit */
/*
 * Local ACK timeout 4.096 us << 16 = 268 ms: longer than a round trip through engines
 * that share two CPUs with other test processes, so timeouts stay rare and retry_cnt 7
 * is never used up by a slow machine.
 */
#define RC_TIMEOUT		16

/* ---- Helpers ---- */

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
pair_open(struct tc_host *a, struct tc_host *b, unsigned int na, unsigned int nb,
	  const char *fault_b)
{
	/* Whichever test runs first starts the EAL: give it lcores for every test. */
	test_eal_init_lcores(MAX_WORKERS);
	tc_pair_open_faults(a, b, na, nb, NULL, fault_b);
}

/* A deterministic mix of three values (splitmix64 finaliser). */
static uint64_t
mix(uint64_t x, uint64_t y, uint64_t z)
{
	uint64_t v = x * 0x9E3779B97F4A7C15ull ^ y * 0xBF58476D1CE4E5B9ull ^
		     z * 0x94D049BB133111EBull;

	v ^= v >> 30;
	v *= 0xBF58476D1CE4E5B9ull;
	v ^= v >> 27;
	v *= 0x94D049BB133111EBull;
	return v ^ (v >> 31);
}

/* Length of message seq of sender src in a test that sends 0..max bytes. */
static uint32_t
msg_size(uint32_t src, uint32_t seq, uint32_t max)
{
	return (uint32_t)(mix(src, seq, max) % (max + 1));
}

/*
 * The bytes of message seq from sender src: a header naming both, then a pattern of
 * sender, sequence and offset that differs between any two 256-byte blocks, so a
 * misplaced packet shows.
 */
static void
msg_fill(uint8_t *p, uint32_t len, uint32_t src, uint32_t seq)
{
	uint8_t hdr[MSG_HDR_LEN] = {
		(uint8_t)src, (uint8_t)(src >> 8),
		(uint8_t)seq, (uint8_t)(seq >> 8), (uint8_t)(seq >> 16), (uint8_t)(seq >> 24),
	};
	uint32_t i;

	for (i = 0; i < len; i++)
		p[i] = i < MSG_HDR_LEN ? hdr[i] :
		       (uint8_t)((i >> 8) * 131 + i * 7 + src * 29 + seq * 17 + 1);
}

static uint32_t
msg_seq(const uint8_t *p)
{
	return p[2] | (uint32_t)p[3] << 8 | (uint32_t)p[4] << 16 | (uint32_t)p[5] << 24;
}

/* Are the len bytes at got message seq of src? scratch holds len bytes. */
static void
msg_check(const uint8_t *got, uint32_t len, uint32_t src, uint32_t seq, uint8_t *scratch)
{
	msg_fill(scratch, len, src, seq);
	CHECK_MEM(got, scratch, len);
}

/* The index of the QP numbered qpn in qps[0..n-1]; fails the test if none. */
static unsigned int
qp_index(struct tc_qp *const *qps, unsigned int n, uint32_t qpn)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (qps[i]->qpn == qpn)
			return i;
	}
	droce_test_ctx("completion for unknown QPN %u", qpn);
	CHECK(i < n);
	return n;
}

static struct tc_qp *
qp_make(struct tc_host *h, uint8_t type, unsigned int engine, struct tc_cq *scq,
	struct tc_cq *rcq, struct tc_srq *srq, uint32_t sq_size, uint32_t rq_size)
{
	struct tc_qp_init in = {
		.type = type, .engine = engine, .scq = scq, .rcq = rcq, .srq = srq,
		.sq_size = sq_size, .rq_size = rq_size, .max_sge = 1,
	};

	return tc_qp_create(h, &in);
}

/* Where a UD send goes; NULL for RC/UC. */
struct ud_dest {
	struct ibv_ah *ah;
	uint32_t qpn;
	uint32_t qkey;
};

/* One signaled SEND (or SEND_WITH_IMM when imm) of len bytes at mr + off. */
static void
post_msg(struct tc_qp *qp, uint64_t wr_id, const struct tc_mr *mr, uint64_t off, uint32_t len,
	 bool imm, uint32_t imm_host, const struct ud_dest *ud)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(mr->buf + off), .length = len, .lkey = mr->lkey,
	};
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = htobe32(imm_host);
	if (ud != NULL) {
		wr.wr.ud.ah = ud->ah;
		wr.wr.ud.remote_qpn = ud->qpn;
		wr.wr.ud.remote_qkey = ud->qkey;
	}
	CHECK_EQ_I64(tc_post_send(qp, &wr, &bad), 0);
}

/* Checks a successful send completion. */
static void
check_send_wc(const struct ibv_wc *wc, uint64_t wr_id, uint32_t qpn)
{
	CHECK_EQ_U64(wc->status, IBV_WC_SUCCESS);
	CHECK_EQ_U64(wc->opcode, IBV_WC_SEND);
	CHECK_EQ_U64(wc->wr_id, wr_id);
	CHECK_EQ_U64(wc->qp_num, qpn);
}

/* Expects nothing more in cq for QUIET_MS. */
static void
check_cq_quiet(struct tc_cq *cq)
{
	struct ibv_wc wc;

	CHECK_EQ_I64(tc_wait(cq, 1, &wc, QUIET_MS), 0);
}

/* Expects no asynchronous event on h for QUIET_MS. */
static void
check_no_event(struct tc_host *h)
{
	struct droce_engine_event ev;
	int n = tc_event(h, &ev, QUIET_MS);

	if (n != 0)
		droce_test_ctx("unexpected event type %u handle %u", (unsigned int)ev.type,
			       (unsigned int)ev.handle);
	CHECK_EQ_I64(n, 0);
}

/* Waits until counter name of h reaches at least want. */
static void
wait_counter(const struct tc_host *h, const char *name, uint64_t want)
{
	uint64_t end = now_ms() + WAIT_MS;

	while (tc_counter(h, name) < want) {
		if (now_ms() > end) {
			droce_test_ctx("counter %s: %llu < %llu", name,
				       (unsigned long long)tc_counter(h, name),
				       (unsigned long long)want);
			CHECK(tc_counter(h, name) >= want);
		}
		usleep(50);
	}
}

/* Returns once every engine of h has completed two more loop passes. */
static void
engines_pass(const struct tc_host *h)
{
	uint64_t start[TC_MAX_ENGINES];
	unsigned int i;

	for (i = 0; i < h->nb_eng; i++)
		start[i] = tc_engine_counter(h, i, "loops");
	for (i = 0; i < h->nb_eng; i++) {
		uint64_t end = now_ms() + WAIT_MS;

		while (tc_engine_counter(h, i, "loops") < start[i] + 2) {
			CHECK(now_ms() <= end);
			usleep(20);
		}
	}
}

/* ---- 1. One SRQ, 64 RC QPs over two engines ---- */

#define SRQ_NB_QPS		64
#define SRQ_MSGS		48		/* per QP: 3072 messages */
#define SRQ_MAX_MSG		16384
#define SRQ_SIZE		512
#define SRQ_SQ_DEPTH		16		/* messages in flight per sending QP */
#define SRQ_SLOT_BITS		16		/* SRQ wr_id: generation << 16 | buffer slot */
#define SRQ_SLOT_MASK		((1u << SRQ_SLOT_BITS) - 1)
#define SRQ_WR_CONSUMED		UINT64_MAX

static const struct tc_path rc_path = {
	.mtu = IBV_MTU_2048, .timeout = RC_TIMEOUT, .retry_cnt = 7, .rnr_retry = 7,
	.min_rnr_timer = 1, .psn_a = 0xFFFF80, .psn_b = 0x10,
};

static uint64_t
srq_post(struct tc_srq *srq, const struct tc_mr *mr, uint32_t slot, uint32_t gen)
{
	uint64_t wr_id = (uint64_t)gen << SRQ_SLOT_BITS | slot;
	struct ibv_sge sge = {
		.addr = (uintptr_t)(mr->buf + (uint64_t)slot * SRQ_MAX_MSG),
		.length = SRQ_MAX_MSG, .lkey = mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	CHECK_EQ_I64(tc_post_srq_recv(srq, &wr, &bad), 0);
	return wr_id;
}

DROCE_TEST(srq_shared_by_64_qps_on_2_engines)
{
	uint8_t *scratch = droce_test_malloc(SRQ_MAX_MSG);
	uint64_t *wr_of_slot = droce_test_malloc(sizeof(uint64_t) * SRQ_SIZE);
	uint32_t sent[SRQ_NB_QPS], acked[SRQ_NB_QPS], rcvd[SRQ_NB_QPS];
	struct tc_qp *qa[SRQ_NB_QPS], *qb[SRQ_NB_QPS];
	uint32_t gen = 0, delivered = 0, i;
	struct tc_cq *ca, *cb, *cb_send;
	struct ibv_wc wc[POLL_BATCH];
	struct tc_host a, b;
	struct tc_srq *srq;
	struct tc_mr *ma, *mb;
	uint64_t end;
	int got, k;

	pair_open(&a, &b, 1, 2, NULL);
	ca = tc_cq_create(&a, 2 * SRQ_NB_QPS * SRQ_SQ_DEPTH);
	cb = tc_cq_create(&b, 2 * SRQ_SIZE);
	cb_send = tc_cq_create(&b, 64);
	srq = tc_srq_create(&b, SRQ_SIZE, 1, 0);
	ma = tc_mr_reg(&a, (uint64_t)SRQ_NB_QPS * SRQ_SQ_DEPTH * SRQ_MAX_MSG,
		       IBV_ACCESS_LOCAL_WRITE);
	mb = tc_mr_reg(&b, (uint64_t)SRQ_SIZE * SRQ_MAX_MSG, IBV_ACCESS_LOCAL_WRITE);
	for (i = 0; i < SRQ_NB_QPS; i++) {
		qa[i] = qp_make(&a, DROCE_SHM_QPT_RC, 0, ca, ca, NULL, SRQ_SQ_DEPTH, 16);
		/* Alternate engines: odd QPs get their packets only through steering. */
		qb[i] = qp_make(&b, DROCE_SHM_QPT_RC, i % 2, cb_send, cb, srq, 16, 0);
		tc_connect(qa[i], qb[i], &rc_path);
		sent[i] = acked[i] = rcvd[i] = 0;
	}
	for (i = 0; i < SRQ_SIZE; i++)
		wr_of_slot[i] = srq_post(srq, mb, i, gen++);

	end = now_ms() + LOOP_MS;
	while (delivered < SRQ_NB_QPS * SRQ_MSGS) {
		for (i = 0; i < SRQ_NB_QPS; i++) {
			while (sent[i] < SRQ_MSGS && sent[i] - acked[i] < SRQ_SQ_DEPTH) {
				uint64_t off = ((uint64_t)i * SRQ_SQ_DEPTH +
						sent[i] % SRQ_SQ_DEPTH) * SRQ_MAX_MSG;
				uint32_t len = msg_size(i, sent[i], SRQ_MAX_MSG);

				msg_fill(ma->buf + off, len, i, sent[i]);
				post_msg(qa[i], (uint64_t)i << 32 | sent[i], ma, off, len, false,
					 0, NULL);
				sent[i]++;
			}
		}
		got = tc_poll(ca, POLL_BATCH, wc);
		CHECK(got >= 0);
		for (k = 0; k < got; k++) {
			i = qp_index(qa, SRQ_NB_QPS, wc[k].qp_num);
			droce_test_ctx("send QP %u seq %u", i, acked[i]);
			/* RC completes each QP's sends in order. */
			check_send_wc(&wc[k], (uint64_t)i << 32 | acked[i], qa[i]->qpn);
			acked[i]++;
		}
		got = tc_poll(cb, POLL_BATCH, wc);
		CHECK(got >= 0);
		for (k = 0; k < got; k++) {
			uint32_t slot = wc[k].wr_id & SRQ_SLOT_MASK, len;

			i = qp_index(qb, SRQ_NB_QPS, wc[k].qp_num);
			droce_test_ctx("recv QP %u seq %u wr_id 0x%llx", i, rcvd[i],
				       (unsigned long long)wc[k].wr_id);
			CHECK_EQ_U64(wc[k].status, IBV_WC_SUCCESS);
			CHECK_EQ_U64(wc[k].opcode, IBV_WC_RECV);
			CHECK_EQ_U64(wc[k].src_qp, qa[i]->qpn);
			CHECK_EQ_U64(wc[k].wc_flags, 0);
			/* Each posted SRQ WQE comes back once, in whatever order. */
			CHECK(slot < SRQ_SIZE);
			CHECK_EQ_U64(wc[k].wr_id, wr_of_slot[slot]);
			wr_of_slot[slot] = SRQ_WR_CONSUMED;
			CHECK(rcvd[i] < SRQ_MSGS);
			len = msg_size(i, rcvd[i], SRQ_MAX_MSG);
			CHECK_EQ_U64(wc[k].byte_len, len);
			msg_check(mb->buf + (uint64_t)slot * SRQ_MAX_MSG, len, i, rcvd[i], scratch);
			rcvd[i]++;
			delivered++;
			wr_of_slot[slot] = srq_post(srq, mb, slot, gen++);
		}
		if (now_ms() > end) {
			tc_dump(&a);
			tc_dump(&b);
			droce_test_ctx("delivered %u of %u", delivered, SRQ_NB_QPS * SRQ_MSGS);
			CHECK(now_ms() <= end);
		}
		if (got == 0)
			usleep(10);
	}
	droce_test_ctx("after the run");
	/* The last ACKs may still be on their way. */
	for (i = 0; i < SRQ_NB_QPS; i++) {
		while (acked[i] < SRQ_MSGS) {
			unsigned int j;

			CHECK_EQ_I64(tc_wait(ca, 1, wc, WAIT_MS), 1);
			j = qp_index(qa, SRQ_NB_QPS, wc[0].qp_num);
			CHECK(acked[j] < SRQ_MSGS);
			check_send_wc(&wc[0], (uint64_t)j << 32 | acked[j], qa[j]->qpn);
			acked[j]++;
		}
	}
	check_cq_quiet(cb);
	check_cq_quiet(ca);
	check_cq_quiet(cb_send);
	for (i = 0; i < SRQ_SIZE; i++)
		CHECK(wr_of_slot[i] != SRQ_WR_CONSUMED);
	CHECK_EQ_U64(tc_counter(&b, "resp_msgs"), SRQ_NB_QPS * SRQ_MSGS);
	/* Steering: engine 0 took every packet off the port and handed the odd QPs' over. */
	CHECK(tc_engine_counter(&b, 0, "rx_handoff_out") > 0);
	CHECK(tc_engine_counter(&b, 1, "rx_handoff_in") > 0);
	CHECK_EQ_U64(tc_engine_counter(&b, 1, "rx_pkts"), 0);
	/* Both engines claimed WQEs of the one SRQ and completed into the one CQ. */
	CHECK(tc_engine_counter(&b, 0, "cqe") > 0);
	CHECK(tc_engine_counter(&b, 1, "cqe") > 0);
	CHECK_EQ_U64(tc_counter(&b, "cq_overrun"), 0);
	CHECK_EQ_U64(tc_counter(&b, "qp_error"), 0);
	CHECK_EQ_U64(tc_counter(&a, "qp_error"), 0);
	check_no_event(&b);
	tc_pair_close(&a, &b);
}

/* ---- srq_limit and receivers that post late ---- */

#define LIM_NB_QPS		4
#define LIM_SRQ_SIZE		64
#define LIM_BUF			256
#define LIM_FIRST_POST		32
#define LIM_LIMIT		8
#define LIM_LATE_MSGS		8
#define LIM_REPOST		20
#define LIM_LIMIT2		10
#define LIM_LOW			2		/* WQEs left after consuming past the limit */

struct lim_ctx {
	struct tc_host *a, *b;
	struct tc_qp *qa[LIM_NB_QPS], *qb[LIM_NB_QPS];
	struct tc_cq *ca, *cb;
	struct tc_srq *srq;
	struct tc_mr *ma, *mb;
	uint32_t sent, rcvd, posted;	/* sends, deliveries, SRQ WQEs posted (all time) */
	uint8_t *scratch;
};

/* Posts n more SRQ WQEs, buffer slot = post number % size. */
static void
lim_post(struct lim_ctx *c, uint32_t n)
{
	struct ibv_recv_wr wr[LIM_SRQ_SIZE], *bad = NULL;
	struct ibv_sge sge[LIM_SRQ_SIZE];
	uint32_t i;

	/*
	 * One chained post: the WQEs appear to the engines all at once. Posted one by one,
	 * an engine retrying the RNR-NAKed messages could take one while fewer than the
	 * limit were posted, and the limit event would then be right to fire.
	 */
	CHECK(n > 0 && n <= LIM_SRQ_SIZE);
	for (i = 0; i < n; i++) {
		uint64_t off = (uint64_t)((c->posted + i) % LIM_SRQ_SIZE) * LIM_BUF;

		sge[i] = (struct ibv_sge){ .addr = (uintptr_t)(c->mb->buf + off),
					   .length = LIM_BUF, .lkey = c->mb->lkey };
		wr[i] = (struct ibv_recv_wr){ .wr_id = c->posted + i, .sg_list = &sge[i],
					      .num_sge = 1, .next = i + 1 < n ? &wr[i + 1] : NULL };
	}
	CHECK_EQ_I64(tc_post_srq_recv(c->srq, &wr[0], &bad), 0);
	c->posted += n;
}

/* Sends message number sent from QP sent % LIM_NB_QPS, sender id = that QP's index. */
static void
lim_send(struct lim_ctx *c)
{
	uint32_t q = c->sent % LIM_NB_QPS, seq = c->sent;
	uint32_t len = msg_size(q, seq, LIM_BUF);
	uint64_t off = (uint64_t)(seq % LIM_SRQ_SIZE) * LIM_BUF;

	msg_fill(c->ma->buf + off, len, q, seq);
	post_msg(c->qa[q], seq, c->ma, off, len, false, 0, NULL);
	c->sent++;
}

/* Waits for the next n deliveries, in order (each QP in order, one message at a time). */
static void
lim_deliver(struct lim_ctx *c, uint32_t n)
{
	struct ibv_wc wc;

	while (n-- > 0) {
		uint32_t seq = c->rcvd, q = seq % LIM_NB_QPS;
		uint32_t len = msg_size(q, seq, LIM_BUF);
		uint32_t slot;

		droce_test_ctx("srq_limit: delivery %u", seq);
		CHECK_EQ_I64(tc_wait(c->cb, 1, &wc, WAIT_MS), 1);
		CHECK_EQ_U64(wc.status, IBV_WC_SUCCESS);
		CHECK_EQ_U64(wc.opcode, IBV_WC_RECV);
		CHECK_EQ_U64(wc.qp_num, c->qb[q]->qpn);
		CHECK_EQ_U64(wc.src_qp, c->qa[q]->qpn);
		CHECK_EQ_U64(wc.byte_len, len);
		/* One message at a time or all of a backlog in order: WQEs go in post order. */
		CHECK_EQ_U64(wc.wr_id, seq);
		slot = (uint32_t)wc.wr_id % LIM_SRQ_SIZE;
		msg_check(c->mb->buf + (uint64_t)slot * LIM_BUF, len, q, seq, c->scratch);
		CHECK_EQ_I64(tc_wait(c->ca, 1, &wc, WAIT_MS), 1);
		check_send_wc(&wc, seq, c->qa[q]->qpn);
		c->rcvd++;
	}
}

/* Consumes n SRQ WQEs one message at a time, expecting no event after any of them. */
static void
lim_consume_quiet(struct lim_ctx *c, uint32_t n)
{
	struct droce_engine_event ev;

	while (n-- > 0) {
		lim_send(c);
		lim_deliver(c, 1);
		/* The engine raises the event before it writes the completion. */
		droce_test_ctx("srq_limit: no event after delivery %u", c->rcvd - 1);
		CHECK_EQ_I64(droce_engine_domain_event_get(c->b->dom, &ev), 0);
	}
}

static void
lim_expect_event(struct lim_ctx *c)
{
	struct droce_engine_event ev;

	lim_send(c);
	lim_deliver(c, 1);
	droce_test_ctx("srq_limit: event after delivery %u", c->rcvd - 1);
	CHECK_EQ_I64(droce_engine_domain_event_get(c->b->dom, &ev), 1);
	CHECK_EQ_U64(ev.type, DROCE_ENGINE_EVENT_SRQ_LIMIT_REACHED);
	CHECK_EQ_U64(ev.handle, c->srq->handle);
	/* Fired: disarmed until set again (10.2.9.4), and reads 0. */
	CHECK_EQ_U64(droce_engine_srq_limit(c->srq->srq), 0);
	CHECK_EQ_I64(droce_engine_domain_event_get(c->b->dom, &ev), 0);
}

/*
 * The LIM_LATE_MSGS messages sent before any WQE, delivered once WQEs came: each QP's
 * in order, the QPs' among themselves in any order, each into a different WQE.
 */
static void
lim_late_deliveries(struct lim_ctx *c)
{
	struct ibv_wc wc[LIM_LATE_MSGS];
	uint32_t next[LIM_NB_QPS] = { 0 };
	bool seen[LIM_FIRST_POST] = { false };
	int k;

	CHECK_EQ_I64(tc_wait(c->cb, LIM_LATE_MSGS, wc, WAIT_MS), LIM_LATE_MSGS);
	for (k = 0; k < LIM_LATE_MSGS; k++) {
		uint32_t q = qp_index(c->qb, LIM_NB_QPS, wc[k].qp_num);
		uint32_t seq = next[q] * LIM_NB_QPS + q;
		uint32_t len = msg_size(q, seq, LIM_BUF);

		droce_test_ctx("late delivery %d (QP %u seq %u)", k, q, seq);
		CHECK_EQ_U64(wc[k].status, IBV_WC_SUCCESS);
		CHECK_EQ_U64(wc[k].opcode, IBV_WC_RECV);
		CHECK_EQ_U64(wc[k].src_qp, c->qa[q]->qpn);
		CHECK_EQ_U64(wc[k].byte_len, len);
		CHECK(wc[k].wr_id < LIM_FIRST_POST && !seen[wc[k].wr_id]);
		seen[wc[k].wr_id] = true;
		msg_check(c->mb->buf + wc[k].wr_id * LIM_BUF, len, q, seq, c->scratch);
		next[q]++;
	}
	CHECK_EQ_I64(tc_wait(c->ca, LIM_LATE_MSGS, wc, WAIT_MS), LIM_LATE_MSGS);
	for (k = 0; k < LIM_LATE_MSGS; k++) {
		uint32_t q = qp_index(c->qa, LIM_NB_QPS, wc[k].qp_num);

		CHECK_EQ_U64(wc[k].status, IBV_WC_SUCCESS);
		CHECK_EQ_U64(wc[k].opcode, IBV_WC_SEND);
		CHECK_EQ_U64(wc[k].wr_id % LIM_NB_QPS, q);
	}
	c->rcvd = LIM_LATE_MSGS;
}

DROCE_TEST(srq_limit_and_late_receiver)
{
	struct tc_host a, b;
	struct lim_ctx c;
	uint32_t i;

	memset(&c, 0, sizeof(c));
	c.a = &a;
	c.b = &b;
	c.scratch = droce_test_malloc(LIM_BUF);
	pair_open(&a, &b, 1, 2, NULL);
	c.ca = tc_cq_create(&a, 256);
	c.cb = tc_cq_create(&b, 256);
	c.srq = tc_srq_create(&b, LIM_SRQ_SIZE, 1, LIM_LIMIT);
	c.ma = tc_mr_reg(&a, (uint64_t)LIM_SRQ_SIZE * LIM_BUF, IBV_ACCESS_LOCAL_WRITE);
	c.mb = tc_mr_reg(&b, (uint64_t)LIM_SRQ_SIZE * LIM_BUF, IBV_ACCESS_LOCAL_WRITE);
	for (i = 0; i < LIM_NB_QPS; i++) {
		c.qa[i] = qp_make(&a, DROCE_SHM_QPT_RC, 0, c.ca, c.ca, NULL, 64, 16);
		c.qb[i] = qp_make(&b, DROCE_SHM_QPT_RC, i % 2, c.cb, c.cb, c.srq, 16, 0);
		tc_connect(c.qa[i], c.qb[i], &rc_path);
	}
	CHECK_EQ_U64(droce_engine_srq_limit(c.srq->srq), LIM_LIMIT);

	/* Messages arrive before any WQE: RNR NAKs, retried for ever (rnr_retry 7). */
	for (i = 0; i < LIM_LATE_MSGS; i++)
		lim_send(&c);
	/* A retry was refused again: the requester keeps trying. */
	wait_counter(&a, "nak_rnr_rcvd", LIM_NB_QPS + 1);
	usleep(QUIET_MS * 1000);
	check_cq_quiet(c.cb);
	check_cq_quiet(c.ca);
	for (i = 0; i < LIM_NB_QPS; i++)
		CHECK_EQ_U64(tc_qp_state(c.qa[i]), DROCE_SHM_QPS_RTS);
	/* An empty SRQ consumed nothing: no limit event. */
	check_no_event(&b);
	lim_post(&c, LIM_FIRST_POST);
	lim_late_deliveries(&c);
	CHECK(tc_counter(&b, "nak_rnr_sent") >= LIM_NB_QPS + 1);
	CHECK_EQ_U64(tc_counter(&b, "resp_msgs"), LIM_LATE_MSGS);
	check_no_event(&b);

	/* Down to LIM_LIMIT WQEs left is quiet; one below fires once. */
	lim_consume_quiet(&c, LIM_FIRST_POST - LIM_LATE_MSGS - LIM_LIMIT);
	CHECK_EQ_U64(droce_engine_srq_limit(c.srq->srq), LIM_LIMIT);
	lim_expect_event(&c);
	/* Disarmed: further below the limit, nothing more. */
	lim_consume_quiet(&c, LIM_LIMIT - 1 - LIM_LOW);
	check_no_event(&b);

	/* Re-armed at a new limit: quiet down to it, once below it, then quiet again. */
	lim_post(&c, LIM_REPOST);
	CHECK_EQ_I64(droce_engine_srq_set_limit(c.srq->srq, LIM_LIMIT2), 0);
	CHECK_EQ_U64(droce_engine_srq_limit(c.srq->srq), LIM_LIMIT2);
	lim_consume_quiet(&c, LIM_LOW + LIM_REPOST - LIM_LIMIT2);
	lim_expect_event(&c);
	lim_consume_quiet(&c, LIM_LIMIT2 - 1 - LIM_LOW);
	check_no_event(&b);
	CHECK_EQ_U64(tc_counter(&b, "srq_limit_events"), 2);
	CHECK_EQ_I64(droce_engine_srq_set_limit(c.srq->srq, LIM_SRQ_SIZE + 1), -EINVAL);
	CHECK_EQ_U64(tc_counter(&b, "qp_error"), 0);
	tc_pair_close(&a, &b);
}

/* ---- 2. UD ---- */

#define UD_MAX_MSG		4096		/* the port MTU */
#define UD_BUF			(DROCE_GRH_LEN + UD_MAX_MSG)
#define UD_SLOT			4160		/* UD_BUF rounded up to 64 */
#define UD_BATCH		128
#define UD_RQ			256
#define UD_SQ			256

/* One's complement sum of an IPv4 header: 0xFFFF when its checksum is right (RFC 1071). */
static uint16_t
ipv4_sum(const uint8_t *h)
{
	uint32_t s = 0;
	unsigned int i;

	for (i = 0; i < DROCE_IPV4_HLEN; i += 2)
		s += (uint32_t)h[i] << 8 | h[i + 1];
	while (s >> 16)
		s = (s & 0xFFFF) + (s >> 16);
	return (uint16_t)s;
}

/* UDP length of a UD SEND_ONLY[_WITH_IMMEDIATE] of plen bytes. */
static uint32_t
ud_udp_len(uint32_t plen, bool imm)
{
	return DROCE_UDP_HLEN + DROCE_BTH_LEN + DROCE_DETH_LEN + (imm ? DROCE_IMMDT_LEN : 0) +
	       plen + droce_wire_pad(plen) + DROCE_ICRC_LEN;
}

/*
 * The GRH area (IB 11.4.1.1, RoCEv2 A17.4.5.1): IPv4 header in bytes 20..39 (0..19 are
 * undefined), or the whole IPv6 header, as it came off the wire from src to dst.
 */
static void
check_grh(const uint8_t *grh, bool ipv6, const struct tc_host *src, const struct tc_host *dst,
	  uint32_t plen, bool imm)
{
	if (!ipv6) {
		const uint8_t *v4 = grh + DROCE_GRH_LEN - DROCE_IPV4_HLEN;
		const struct droce_ipv4_hdr *ip = (const void *)v4;

		CHECK_EQ_U64(droce_ipv4_version(ip), 4);
		CHECK_EQ_U64(droce_ipv4_hdr_len(ip), DROCE_IPV4_HLEN);
		CHECK_EQ_U64(ip->proto, DROCE_IPPROTO_UDP);
		CHECK_EQ_U64(ip->ttl, TTL);
		CHECK_EQ_U64(droce_ipv4_frag(ip), DROCE_IPV4_DF);
		CHECK_EQ_U64(droce_ipv4_total_len(ip), DROCE_IPV4_HLEN + ud_udp_len(plen, imm));
		CHECK_MEM(ip->src, src->gid + 12, 4);
		CHECK_MEM(ip->dst, dst->gid + 12, 4);
		CHECK_EQ_U64(ipv4_sum(v4), 0xFFFF);
	} else {
		const struct droce_ipv6_hdr *ip = (const void *)grh;

		CHECK_EQ_U64(droce_ipv6_version(ip), 6);
		CHECK_EQ_U64(ip->next_hdr, DROCE_IPPROTO_UDP);
		CHECK_EQ_U64(ip->hop_limit, TTL);
		CHECK_EQ_U64(droce_ipv6_payload_len(ip), ud_udp_len(plen, imm));
		CHECK_MEM(ip->src, src->gid6, 16);
		CHECK_MEM(ip->dst, dst->gid6, 16);
	}
}

static void
ud_recv(struct tc_qp *qp, uint64_t wr_id, const struct tc_mr *mr, uint64_t off, uint32_t len)
{
	CHECK_EQ_I64(tc_recv(qp, wr_id, mr, off, len), 0);
}

/*
 * Every payload size 0..4096 from a UD QP on a to two UD QPs on b (engines 0 and 1),
 * SEND and SEND_WITH_IMM alternating, over IPv4 or IPv6 GIDs.
 */
static void
ud_all_sizes(bool ipv6)
{
	uint8_t *scratch = droce_test_malloc(UD_MAX_MSG);
	uint32_t next_wr[2] = { 0, 1 }, done[2] = { 0, 0 };
	struct ibv_wc wc[UD_BATCH];
	struct tc_host a, b;
	struct tc_cq *ca, *cb;
	struct tc_qp *qa, *qb[2];
	struct tc_mr *ma, *mb;
	struct ibv_ah ah;
	struct ud_dest dest[2];
	uint32_t ahn, base, m, q;
	int k;

	pair_open(&a, &b, 1, 2, NULL);
	ca = tc_cq_create(&a, 2 * UD_SQ);
	cb = tc_cq_create(&b, 2 * UD_RQ);
	qa = qp_make(&a, DROCE_SHM_QPT_UD, 0, ca, ca, NULL, UD_SQ, 16);
	for (q = 0; q < 2; q++) {
		qb[q] = qp_make(&b, DROCE_SHM_QPT_UD, q, cb, cb, NULL, 16, UD_RQ);
		tc_ud_ready(qb[q], QKEY, 0);
	}
	tc_ud_ready(qa, QKEY, 0xFFFFFE);
	CHECK_EQ_I64(tc_ah_create(&a, 0, &b, ipv6, &ahn), 0);
	memset(&ah, 0, sizeof(ah));
	ah.handle = ahn;
	for (q = 0; q < 2; q++) {
		dest[q].ah = &ah;
		dest[q].qpn = qb[q]->qpn;
		dest[q].qkey = QKEY;
	}
	ma = tc_mr_reg(&a, (uint64_t)UD_BATCH * UD_SLOT, IBV_ACCESS_LOCAL_WRITE);
	mb = tc_mr_reg(&b, (uint64_t)UD_BATCH * UD_SLOT, IBV_ACCESS_LOCAL_WRITE);

	for (base = 0; base <= UD_MAX_MSG; base += UD_BATCH) {
		uint32_t nb = RTE_MIN((uint32_t)UD_BATCH, UD_MAX_MSG + 1 - base);

		/* Message m goes to QP m % 2 into buffer slot m % UD_BATCH, posted first. */
		for (m = base; m < base + nb; m++) {
			q = m % 2;
			CHECK_EQ_U64(next_wr[q], m);
			ud_recv(qb[q], m, mb, (uint64_t)(m % UD_BATCH) * UD_SLOT, UD_BUF);
			next_wr[q] = m + 2;
		}
		for (m = base; m < base + nb; m++) {
			uint64_t off = (uint64_t)(m % UD_BATCH) * UD_SLOT;

			msg_fill(ma->buf + off, m, 0, m);
			post_msg(qa, m, ma, off, m, m % 4 >= 2, IMM_TAG | m, &dest[m % 2]);
		}
		CHECK_EQ_I64(tc_wait(ca, (int)nb, wc, WAIT_MS), nb);
		for (k = 0; k < (int)nb; k++)
			check_send_wc(&wc[k], base + k, qa->qpn);
		CHECK_EQ_I64(tc_wait(cb, (int)nb, wc, WAIT_MS), nb);
		for (k = 0; k < (int)nb; k++) {
			bool imm;

			q = qp_index(qb, 2, wc[k].qp_num);
			m = done[q] * 2 + q;
			imm = m % 4 >= 2;
			droce_test_ctx("%s UD message %u to QP %u", ipv6 ? "IPv6" : "IPv4", m, q);
			CHECK_EQ_U64(wc[k].status, IBV_WC_SUCCESS);
			CHECK_EQ_U64(wc[k].opcode, IBV_WC_RECV);
			CHECK_EQ_U64(wc[k].wr_id, m);
			CHECK_EQ_U64(wc[k].byte_len, DROCE_GRH_LEN + m);
			CHECK_EQ_U64(wc[k].src_qp, qa->qpn);
			CHECK_EQ_U64(wc[k].wc_flags, IBV_WC_GRH | (imm ? IBV_WC_WITH_IMM : 0));
			if (imm)
				CHECK_EQ_U64(be32toh(wc[k].imm_data), IMM_TAG | m);
			check_grh(mb->buf + (uint64_t)(m % UD_BATCH) * UD_SLOT, ipv6, &a, &b, m, imm);
			msg_check(mb->buf + (uint64_t)(m % UD_BATCH) * UD_SLOT + DROCE_GRH_LEN, m, 0,
				  m, scratch);
			done[q]++;
		}
	}
	droce_test_ctx("%s UD after the run", ipv6 ? "IPv6" : "IPv4");
	CHECK_EQ_U64(done[0] + done[1], UD_MAX_MSG + 1);
	check_cq_quiet(cb);
	CHECK_EQ_U64(tc_counter(&b, "ud_drop"), 0);
	CHECK_EQ_U64(tc_counter(&a, "req_ud_too_long"), 0);
	CHECK_EQ_U64(tc_counter(&a, "req_pkts"), UD_MAX_MSG + 1);
	CHECK(tc_engine_counter(&b, 1, "rx_handoff_in") > 0);
	tc_pair_close(&a, &b);
}

DROCE_TEST(ud_ipv4_grh_all_sizes)
{
	ud_all_sizes(false);
}

DROCE_TEST(ud_ipv6_grh_all_sizes)
{
	ud_all_sizes(true);
}

/*
 * Waits until b's engines have handled every packet a sent: b's port (or its fault
 * injector) has received them all, the engine that took them finished that pass, and the
 * handoffs it made were handled too.
 */
static void
link_drained(const struct tc_host *a, const struct tc_host *b)
{
	uint64_t end = now_ms() + WAIT_MS;

	for (;;) {
		struct droce_fault_stats fst;
		uint64_t rx = tc_counter(b, "rx_pkts");

		if (b->fault != NULL) {
			CHECK_EQ_I64(droce_fault_stats_get(b->fault, -1, &fst), 0);
			rx = fst.received;
		}
		if (rx >= tc_counter(a, "tx_pkts"))
			break;
		CHECK(now_ms() <= end);
		usleep(20);
	}
	engines_pass(b);
	while (tc_counter(b, "rx_handoff_in") < tc_counter(b, "rx_handoff_out")) {
		CHECK(now_ms() <= end);
		usleep(20);
	}
	engines_pass(b);
}

/* Q_Key rules, drops without a WQE, sends over the MTU, short receive buffers. */
DROCE_TEST(ud_qkey_drops_and_lengths)
{
	uint8_t *scratch = droce_test_malloc(UD_MAX_MSG + 1);
	struct tc_qp *qa, *qa_other, *qb, *qb_short[2];
	struct ud_dest to_b, to_short[2];
	struct tc_host a, b;
	struct tc_cq *ca, *cb;
	struct tc_mr *ma, *mb;
	struct ibv_ah ah;
	struct ibv_wc wc;
	uint64_t pkts;
	uint32_t ahn, i;

	pair_open(&a, &b, 1, 2, NULL);
	ca = tc_cq_create(&a, 64);
	cb = tc_cq_create(&b, 64);
	qa = qp_make(&a, DROCE_SHM_QPT_UD, 0, ca, ca, NULL, 16, 16);
	qa_other = qp_make(&a, DROCE_SHM_QPT_UD, 0, ca, ca, NULL, 16, 16);
	qb = qp_make(&b, DROCE_SHM_QPT_UD, 1, cb, cb, NULL, 16, 16);
	tc_ud_ready(qa, QKEY, 0);
	tc_ud_ready(qa_other, QKEY_OTHER, 0);
	tc_ud_ready(qb, QKEY, 0);
	for (i = 0; i < 2; i++) {
		qb_short[i] = qp_make(&b, DROCE_SHM_QPT_UD, i, cb, cb, NULL, 16, 16);
		tc_ud_ready(qb_short[i], QKEY, 0);
	}
	CHECK_EQ_I64(tc_ah_create(&a, 0, &b, false, &ahn), 0);
	memset(&ah, 0, sizeof(ah));
	ah.handle = ahn;
	to_b = (struct ud_dest){ .ah = &ah, .qpn = qb->qpn, .qkey = QKEY };
	ma = tc_mr_reg(&a, 4 * UD_SLOT, IBV_ACCESS_LOCAL_WRITE);
	mb = tc_mr_reg(&b, 4 * UD_SLOT, IBV_ACCESS_LOCAL_WRITE);
	for (i = 0; i < 4; i++)
		msg_fill(ma->buf + (uint64_t)i * UD_SLOT, UD_MAX_MSG + 1, 0, i);

	/* C10-15: a Q_Key that is not the receiver's drops the message, WQE untouched. */
	droce_test_ctx("wrong Q_Key");
	ud_recv(qb, 100, mb, 0, UD_BUF);
	to_b.qkey = QKEY_WRONG;
	post_msg(qa, 1, ma, 0, 64, false, 0, &to_b);
	CHECK_EQ_I64(tc_wait(ca, 1, &wc, WAIT_MS), 1);
	check_send_wc(&wc, 1, qa->qpn);
	wait_counter(&b, "ud_drop", 1);
	check_cq_quiet(cb);
	/* The high bit selects the sender's own Q_Key: qa_other's does not match. */
	droce_test_ctx("own Q_Key, not the receiver's");
	to_b.qkey = QKEY_USE_OWN | QKEY_WRONG;
	post_msg(qa_other, 2, ma, 0, 64, false, 0, &to_b);
	CHECK_EQ_I64(tc_wait(ca, 1, &wc, WAIT_MS), 1);
	check_send_wc(&wc, 2, qa_other->qpn);
	wait_counter(&b, "ud_drop", 2);
	check_cq_quiet(cb);
	/* ... and qa's does: delivered into the WQE the drops left alone. */
	droce_test_ctx("own Q_Key, the receiver's");
	post_msg(qa, 3, ma, UD_SLOT, 77, true, 3, &to_b);
	CHECK_EQ_I64(tc_wait(ca, 1, &wc, WAIT_MS), 1);
	check_send_wc(&wc, 3, qa->qpn);
	CHECK_EQ_I64(tc_wait(cb, 1, &wc, WAIT_MS), 1);
	CHECK_EQ_U64(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ_U64(wc.wr_id, 100);
	CHECK_EQ_U64(wc.qp_num, qb->qpn);
	CHECK_EQ_U64(wc.src_qp, qa->qpn);
	CHECK_EQ_U64(wc.byte_len, DROCE_GRH_LEN + 77);
	CHECK_EQ_U64(wc.wc_flags, IBV_WC_GRH | IBV_WC_WITH_IMM);
	CHECK_EQ_U64(be32toh(wc.imm_data), 3);
	check_grh(mb->buf, false, &a, &b, 77, true);
	msg_check(mb->buf + DROCE_GRH_LEN, 77, 0, 1, scratch);
	CHECK_EQ_U64(tc_counter(&b, "ud_drop"), 2);

	/* No receive WQE: UD drops the message silently, the QP stays usable (unlike RC). */
	droce_test_ctx("no receive WQE");
	to_b.qkey = QKEY;
	post_msg(qa, 4, ma, 0, 10, false, 0, &to_b);
	CHECK_EQ_I64(tc_wait(ca, 1, &wc, WAIT_MS), 1);
	check_send_wc(&wc, 4, qa->qpn);
	wait_counter(&b, "ud_drop", 3);
	check_cq_quiet(cb);
	CHECK_EQ_U64(tc_qp_state(qb), DROCE_SHM_QPS_RTS);
	CHECK_EQ_U64(tc_counter(&b, "qp_error"), 0);

	/* Longer than the MTU: completes successfully, nothing goes out. */
	droce_test_ctx("UD send over the MTU");
	ud_recv(qb, 101, mb, 0, UD_BUF);
	pkts = tc_counter(&a, "req_pkts");
	post_msg(qa, 5, ma, 0, UD_MAX_MSG + 1, false, 0, &to_b);
	CHECK_EQ_I64(tc_wait(ca, 1, &wc, WAIT_MS), 1);
	check_send_wc(&wc, 5, qa->qpn);
	CHECK_EQ_U64(tc_counter(&a, "req_ud_too_long"), 1);
	CHECK_EQ_U64(tc_counter(&a, "req_pkts"), pkts);
	link_drained(&a, &b);
	check_cq_quiet(cb);
	/* The MTU itself fits, into the WQE the long one did not reach. */
	post_msg(qa, 6, ma, 2 * UD_SLOT, UD_MAX_MSG, false, 0, &to_b);
	CHECK_EQ_I64(tc_wait(ca, 1, &wc, WAIT_MS), 1);
	check_send_wc(&wc, 6, qa->qpn);
	CHECK_EQ_I64(tc_wait(cb, 1, &wc, WAIT_MS), 1);
	CHECK_EQ_U64(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ_U64(wc.wr_id, 101);
	CHECK_EQ_U64(wc.byte_len, DROCE_GRH_LEN + UD_MAX_MSG);
	CHECK_EQ_U64(wc.wc_flags, IBV_WC_GRH);
	msg_check(mb->buf + DROCE_GRH_LEN, UD_MAX_MSG, 0, 2, scratch);
	CHECK_EQ_U64(tc_counter(&a, "req_pkts"), pkts + 1);

	/*
	 * A buffer shorter than GRH + payload: IBV_WC_LOC_LEN_ERR on the receiver (one byte
	 * short with a payload; under the GRH area with none). Only wr_id, status and
	 * qp_num are defined on an error completion.
	 */
	for (i = 0; i < 2; i++) {
		uint32_t plen = i == 0 ? 100 : 0;

		droce_test_ctx("short receive buffer, payload %u", plen);
		to_short[i] = (struct ud_dest){ .ah = &ah, .qpn = qb_short[i]->qpn, .qkey = QKEY };
		ud_recv(qb_short[i], 200 + i, mb, (uint64_t)(3 + i) * 64,
			DROCE_GRH_LEN + plen - 1);
		post_msg(qa, 7 + i, ma, 0, plen, false, 0, &to_short[i]);
		CHECK_EQ_I64(tc_wait(ca, 1, &wc, WAIT_MS), 1);
		check_send_wc(&wc, 7 + i, qa->qpn);
		CHECK_EQ_I64(tc_wait(cb, 1, &wc, WAIT_MS), 1);
		CHECK_EQ_U64(wc.status, IBV_WC_LOC_LEN_ERR);
		CHECK_EQ_U64(wc.wr_id, 200 + i);
		CHECK_EQ_U64(wc.qp_num, qb_short[i]->qpn);
	}
	check_cq_quiet(cb);
	/* The sender is not affected by any of this. */
	CHECK_EQ_U64(tc_qp_state(qa), DROCE_SHM_QPS_RTS);
	CHECK_EQ_U64(tc_qp_state(qb), DROCE_SHM_QPS_RTS);
	tc_pair_close(&a, &b);
}

/* ---- 3. UC ---- */

#define UC_POISON		0xEE
#define UC_TAIL			64		/* poisoned bytes checked after each message */
#define UC_MAX_MSG		16384
#define UC_SLOT			(UC_MAX_MSG + UC_TAIL)

/* Sizes around the MTU and several packets long, for each MTU. */
static uint32_t
uc_size(unsigned int i, uint32_t mtu)
{
	const uint32_t sizes[] = {
		0, 1, 3, 4, mtu - 1, mtu, mtu + 1, 2 * mtu - 4, 2 * mtu, 3 * mtu + 5,
		4 * mtu - 1, UC_MAX_MSG - 3, UC_MAX_MSG,
	};

	return i < RTE_DIM(sizes) ? sizes[i] : UINT32_MAX;
}

DROCE_TEST(uc_sizes_across_mtus)
{
	uint8_t *scratch = droce_test_malloc(UC_SLOT);
	uint8_t poison[UC_TAIL];
	struct tc_host a, b;
	struct tc_cq *ca, *cb;
	struct tc_mr *ma, *mb;
	struct ibv_wc wc;
	uint8_t mtu_enum;
	unsigned int i;

	memset(poison, UC_POISON, sizeof(poison));
	pair_open(&a, &b, 1, 2, NULL);
	ca = tc_cq_create(&a, 64);
	cb = tc_cq_create(&b, 64);
	ma = tc_mr_reg(&a, UC_SLOT, IBV_ACCESS_LOCAL_WRITE);
	mb = tc_mr_reg(&b, UC_SLOT, IBV_ACCESS_LOCAL_WRITE);
	for (mtu_enum = IBV_MTU_256; mtu_enum <= IBV_MTU_4096; mtu_enum++) {
		struct tc_path path = { .mtu = mtu_enum, .psn_a = 0xFFFFFD, .psn_b = 7 };
		uint32_t mtu = 128u << mtu_enum, len;
		uint64_t pkts = tc_counter(&a, "req_pkts"), want = 0;
		struct tc_qp *qa, *qb;

		qa = qp_make(&a, DROCE_SHM_QPT_UC, 0, ca, ca, NULL, 16, 16);
		qb = qp_make(&b, DROCE_SHM_QPT_UC, mtu_enum % 2, cb, cb, NULL, 16, 16);
		tc_connect(qa, qb, &path);
		for (i = 0; (len = uc_size(i, mtu)) != UINT32_MAX; i++) {
			bool imm = i % 2 == 1;

			droce_test_ctx("UC MTU %u message %u (%u bytes)", mtu, i, len);
			memset(mb->buf, UC_POISON, UC_SLOT);
			CHECK_EQ_I64(tc_recv(qb, 1000 + i, mb, 0, UC_SLOT), 0);
			msg_fill(ma->buf, len, mtu, i);
			post_msg(qa, i, ma, 0, len, imm, IMM_TAG | i, NULL);
			CHECK_EQ_I64(tc_wait(ca, 1, &wc, WAIT_MS), 1);
			check_send_wc(&wc, i, qa->qpn);
			CHECK_EQ_I64(tc_wait(cb, 1, &wc, WAIT_MS), 1);
			CHECK_EQ_U64(wc.status, IBV_WC_SUCCESS);
			CHECK_EQ_U64(wc.opcode, IBV_WC_RECV);
			CHECK_EQ_U64(wc.wr_id, 1000 + i);
			CHECK_EQ_U64(wc.qp_num, qb->qpn);
			CHECK_EQ_U64(wc.src_qp, qa->qpn);
			CHECK_EQ_U64(wc.byte_len, len);
			CHECK_EQ_U64(wc.wc_flags, imm ? IBV_WC_WITH_IMM : 0);
			if (imm)
				CHECK_EQ_U64(be32toh(wc.imm_data), IMM_TAG | i);
			msg_check(mb->buf, len, mtu, i, scratch);
			CHECK_MEM(mb->buf + len, poison, UC_TAIL);
			/* Segmentation: full-MTU packets, then the rest; a 0-byte message is one. */
			want += len == 0 ? 1 : (len + mtu - 1) / mtu;
			CHECK_EQ_U64(tc_counter(&a, "req_pkts"), pkts + want);
		}
		tc_qp_destroy(qa);
		tc_qp_destroy(qb);
	}
	CHECK_EQ_U64(tc_counter(&b, "uc_drop"), 0);
	check_cq_quiet(cb);
	tc_pair_close(&a, &b);
}

#define UCL_MSGS		3000
#define UCL_BATCH		200
#define UCL_MTU			IBV_MTU_1024
#define UCL_MAX_MSG		4096		/* 0..4 packets at 1024 */
#define UCL_SQ			256
#define UCL_RQ			512
#define UCL_FAULTS		"seed=7,drop=50000"	/* 5% of what b receives */

/* Message seq: odd ones carry their number as immediate, even ones in >= 6 bytes. */
static uint32_t
ucl_size(uint32_t seq)
{
	uint32_t len = msg_size(1, seq, UCL_MAX_MSG);

	return seq % 2 == 0 && len < MSG_HDR_LEN ? MSG_HDR_LEN : len;
}

static void
ucl_post_recv(struct tc_qp *qb, const struct tc_mr *mb, uint32_t n)
{
	CHECK_EQ_I64(tc_recv(qb, n, mb, (uint64_t)(n % UCL_RQ) * UCL_MAX_MSG, UCL_MAX_MSG), 0);
}

DROCE_TEST(uc_lossy_link_drops_whole_messages)
{
	uint8_t *scratch = droce_test_malloc(UCL_MAX_MSG);
	struct tc_path path = { .mtu = UCL_MTU, .psn_a = 0xFFFF00, .psn_b = 1 };
	struct droce_fault_stats fst;
	struct ibv_wc wc[POLL_BATCH];
	uint32_t sent = 0, delivered = 0, posted = 0, consumed = 0, next_wr = 0;
	int64_t last_seq = -1;
	struct tc_host a, b;
	struct tc_cq *ca, *cb;
	struct tc_qp *qa, *qb;
	struct tc_mr *ma, *mb;
	int got, k;

	pair_open(&a, &b, 1, 2, UCL_FAULTS);
	ca = tc_cq_create(&a, 2 * UCL_SQ);
	cb = tc_cq_create(&b, 2 * UCL_RQ);
	qa = qp_make(&a, DROCE_SHM_QPT_UC, 0, ca, ca, NULL, UCL_SQ, 16);
	qb = qp_make(&b, DROCE_SHM_QPT_UC, 1, cb, cb, NULL, 16, UCL_RQ);
	tc_connect(qa, qb, &path);
	ma = tc_mr_reg(&a, (uint64_t)UCL_SQ * UCL_MAX_MSG, IBV_ACCESS_LOCAL_WRITE);
	mb = tc_mr_reg(&b, (uint64_t)UCL_RQ * UCL_MAX_MSG, IBV_ACCESS_LOCAL_WRITE);
	while (posted < UCL_RQ)
		ucl_post_recv(qb, mb, posted++);

	while (sent < UCL_MSGS) {
		uint32_t first = sent, s;

		/* A batch cannot use up the RQ: the receiver refills it between batches. */
		for (; sent < UCL_MSGS && sent < first + UCL_BATCH; sent++) {
			uint64_t off = (uint64_t)(sent % UCL_SQ) * UCL_MAX_MSG;
			uint32_t len = ucl_size(sent);

			msg_fill(ma->buf + off, len, 1, sent);
			post_msg(qa, sent, ma, off, len, sent % 2 == 1, sent, NULL);
		}
		/* The sender completes every message, lost or not. */
		for (s = first; s < sent; s++) {
			droce_test_ctx("UC lossy: send completion %u", s);
			CHECK_EQ_I64(tc_wait(ca, 1, wc, WAIT_MS), 1);
			check_send_wc(&wc[0], s, qa->qpn);
		}
		link_drained(&a, &b);
		while ((got = tc_poll(cb, POLL_BATCH, wc)) > 0) {
			for (k = 0; k < got; k++) {
				const struct ibv_wc *w = &wc[k];
				const uint8_t *buf = mb->buf + (w->wr_id % UCL_RQ) * UCL_MAX_MSG;
				bool imm = (w->wc_flags & IBV_WC_WITH_IMM) != 0;
				uint32_t seq;

				droce_test_ctx("UC lossy: delivery %u (wr_id %llu)", delivered,
					       (unsigned long long)w->wr_id);
				CHECK_EQ_U64(w->status, IBV_WC_SUCCESS);
				CHECK_EQ_U64(w->opcode, IBV_WC_RECV);
				CHECK_EQ_U64(w->qp_num, qb->qpn);
				CHECK_EQ_U64(w->src_qp, qa->qpn);
				/* Receive WQEs are used in order, one per delivered message. */
				CHECK_EQ_U64(w->wr_id, next_wr);
				next_wr++;
				if (imm) {
					seq = be32toh(w->imm_data);
					CHECK_EQ_U64(w->wc_flags, IBV_WC_WITH_IMM);
					CHECK_EQ_U64(seq % 2, 1);
				} else {
					CHECK_EQ_U64(w->wc_flags, 0);
					CHECK(w->byte_len >= MSG_HDR_LEN);
					seq = msg_seq(buf);
					CHECK_EQ_U64(seq % 2, 0);
				}
				droce_test_ctx("UC lossy: delivery %u is message %u", delivered, seq);
				/* In order, never twice, and only what was sent. */
				CHECK((int64_t)seq > last_seq && seq < sent);
				last_seq = seq;
				CHECK_EQ_U64(w->byte_len, ucl_size(seq));
				msg_check(buf, w->byte_len, 1, seq, scratch);
				delivered++;
				consumed++;
			}
		}
		CHECK(got == 0);
		for (; consumed > 0; consumed--)
			ucl_post_recv(qb, mb, posted++);
	}
	droce_test_ctx("UC lossy: delivered %u of %u", delivered, UCL_MSGS);
	CHECK_EQ_I64(droce_fault_stats_get(b.fault, -1, &fst), 0);
	if (delivered == UCL_MSGS || fst.dropped == 0) {
		tc_dump(&a);
		tc_dump(&b);
	}
	CHECK(fst.dropped > 0);
	CHECK(delivered < UCL_MSGS);
	/* 5% of packets: most messages of 1..4 packets still arrive. */
	CHECK(delivered > UCL_MSGS / 2);
	CHECK(tc_counter(&b, "uc_drop") > 0);
	CHECK_EQ_U64(tc_counter(&b, "resp_msgs"), delivered);
	CHECK_EQ_U64(tc_counter(&b, "qp_error"), 0);
	CHECK_EQ_U64(tc_counter(&a, "qp_error"), 0);
	CHECK_EQ_U64(tc_qp_state(qb), DROCE_SHM_QPS_RTS);
	tc_pair_close(&a, &b);
}

/* ---- 4. One CQ per host, QPs on two engines each ---- */

#define CQS_NB_QPS		8
#define CQS_MSGS		2500		/* per QP and direction: 40000 CQEs per CQ */
#define CQS_MAX_MSG		2048		/* 0..2 packets at 1024 */
#define CQS_SQ			64
#define CQS_RQ			128
#define CQS_CQ			4096		/* > CQS_NB_QPS * (CQS_SQ + CQS_RQ): no overrun */

struct cqs_side {
	struct tc_host *h;
	struct tc_qp *qp[CQS_NB_QPS];
	struct tc_cq *cq;
	struct tc_mr *smr, *rmr;
	uint32_t sent[CQS_NB_QPS], sdone[CQS_NB_QPS], rdone[CQS_NB_QPS];
};

static uint32_t
cqs_src(unsigned int side, unsigned int i)
{
	return side << 8 | i;
}

static uint64_t
cqs_roff(unsigned int i, uint32_t n)
{
	return ((uint64_t)i * CQS_RQ + n % CQS_RQ) * CQS_MAX_MSG;
}

static void
cqs_post_recv(struct cqs_side *s, unsigned int i, uint32_t n)
{
	CHECK_EQ_I64(tc_recv(s->qp[i], (uint64_t)i << 32 | n, s->rmr, cqs_roff(i, n),
			     CQS_MAX_MSG), 0);
}

/* Polls side me's CQ once: every completion in order for its QP and direction. */
static int
cqs_poll(struct cqs_side *sd, unsigned int me, uint8_t *scratch)
{
	struct cqs_side *s = &sd[me], *peer = &sd[1 - me];
	struct ibv_wc wc[POLL_BATCH];
	int got, k;

	got = tc_poll(s->cq, POLL_BATCH, wc);
	CHECK(got >= 0);
	for (k = 0; k < got; k++) {
		unsigned int i = qp_index(s->qp, CQS_NB_QPS, wc[k].qp_num);

		if (wc[k].status != IBV_WC_SUCCESS) {
			tc_dump(s->h);
			tc_dump(peer->h);
		}
		if (wc[k].opcode == IBV_WC_SEND) {
			droce_test_ctx("host %s QP %u send %u", s->h->name, i, s->sdone[i]);
			CHECK(s->sdone[i] < s->sent[i]);
			check_send_wc(&wc[k], (uint64_t)i << 32 | s->sdone[i], s->qp[i]->qpn);
			s->sdone[i]++;
		} else {
			uint32_t n = s->rdone[i];
			uint32_t len = msg_size(cqs_src(1 - me, i), n, CQS_MAX_MSG);

			droce_test_ctx("host %s QP %u recv %u", s->h->name, i, n);
			CHECK(n < CQS_MSGS);
			CHECK_EQ_U64(wc[k].status, IBV_WC_SUCCESS);
			CHECK_EQ_U64(wc[k].opcode, IBV_WC_RECV);
			CHECK_EQ_U64(wc[k].wr_id, (uint64_t)i << 32 | n);
			CHECK_EQ_U64(wc[k].src_qp, peer->qp[i]->qpn);
			CHECK_EQ_U64(wc[k].byte_len, len);
			CHECK_EQ_U64(wc[k].wc_flags, 0);
			msg_check(s->rmr->buf + cqs_roff(i, n), len, cqs_src(1 - me, i), n, scratch);
			s->rdone[i]++;
			if (n + CQS_RQ < CQS_MSGS)
				cqs_post_recv(s, i, n + CQS_RQ);
		}
	}
	return got;
}

DROCE_TEST(cq_shared_by_qps_on_2_engines)
{
	uint8_t *scratch = droce_test_malloc(CQS_MAX_MSG);
	struct tc_path path = {
		.mtu = IBV_MTU_1024, .timeout = RC_TIMEOUT, .retry_cnt = 7, .rnr_retry = 7,
		.min_rnr_timer = 1, .psn_a = 0x800000, .psn_b = 0xFFFFFF,
	};
	struct cqs_side sd[2];
	struct tc_host a, b;
	unsigned int s, i, e;
	uint64_t end, want;
	bool done = false;

	memset(sd, 0, sizeof(sd));
	sd[0].h = &a;
	sd[1].h = &b;
	pair_open(&a, &b, 2, 2, NULL);
	for (s = 0; s < 2; s++) {
		sd[s].cq = tc_cq_create(sd[s].h, CQS_CQ);
		sd[s].smr = tc_mr_reg(sd[s].h, (uint64_t)CQS_NB_QPS * CQS_SQ * CQS_MAX_MSG,
				      IBV_ACCESS_LOCAL_WRITE);
		sd[s].rmr = tc_mr_reg(sd[s].h, (uint64_t)CQS_NB_QPS * CQS_RQ * CQS_MAX_MSG,
				      IBV_ACCESS_LOCAL_WRITE);
		for (i = 0; i < CQS_NB_QPS; i++) {
			/* a: engines 0,1,0,1...; b: 0,0,1,1...: every engine pairing. */
			e = s == 0 ? i % 2 : (i / 2) % 2;
			sd[s].qp[i] = qp_make(sd[s].h, DROCE_SHM_QPT_RC, e, sd[s].cq, sd[s].cq,
					      NULL, CQS_SQ, CQS_RQ);
		}
	}
	for (i = 0; i < CQS_NB_QPS; i++) {
		tc_connect(sd[0].qp[i], sd[1].qp[i], &path);
		for (s = 0; s < 2; s++) {
			uint32_t n;

			for (n = 0; n < CQS_RQ; n++)
				cqs_post_recv(&sd[s], i, n);
		}
	}

	end = now_ms() + LOOP_MS;
	while (!done) {
		int got = 0;

		for (s = 0; s < 2; s++) {
			struct cqs_side *x = &sd[s];

			for (i = 0; i < CQS_NB_QPS; i++) {
				while (x->sent[i] < CQS_MSGS && x->sent[i] - x->sdone[i] < CQS_SQ) {
					uint32_t n = x->sent[i];
					uint32_t len = msg_size(cqs_src(s, i), n, CQS_MAX_MSG);
					uint64_t off = ((uint64_t)i * CQS_SQ + n % CQS_SQ) *
						       CQS_MAX_MSG;

					msg_fill(x->smr->buf + off, len, cqs_src(s, i), n);
					post_msg(x->qp[i], (uint64_t)i << 32 | n, x->smr, off, len,
						 false, 0, NULL);
					x->sent[i]++;
				}
			}
		}
		for (s = 0; s < 2; s++)
			got += cqs_poll(sd, s, scratch);
		done = true;
		for (s = 0; s < 2; s++) {
			for (i = 0; i < CQS_NB_QPS; i++)
				done = done && sd[s].sdone[i] == CQS_MSGS &&
				       sd[s].rdone[i] == CQS_MSGS;
		}
		if (now_ms() > end) {
			tc_dump(&a);
			tc_dump(&b);
			CHECK(now_ms() <= end);
		}
		if (got == 0)
			usleep(10);
	}
	droce_test_ctx("after the run");
	want = 2ull * CQS_NB_QPS * CQS_MSGS;
	for (s = 0; s < 2; s++) {
		check_cq_quiet(sd[s].cq);
		/* Exactly one CQE per send and per receive: none lost, none doubled. */
		CHECK_EQ_U64(tc_counter(sd[s].h, "cqe"), want);
		CHECK_EQ_U64(tc_counter(sd[s].h, "cq_overrun"), 0);
		CHECK_EQ_U64(tc_counter(sd[s].h, "qp_error"), 0);
		for (e = 0; e < 2; e++)
			CHECK(tc_engine_counter(sd[s].h, e, "cqe") > 0);
	}
	tc_pair_close(&a, &b);
}
