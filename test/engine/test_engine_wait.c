/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Engines that sleep (droce_engine_conf.wait, doc/engine.md "Sleeping engines"). net_ring
 * gives no rx interrupt, so a sleeping engine here wakes only for what the tests aim at:
 * a doorbell's eventfd, a command, or its nearest timer; its idle_sleep_us bound is 5 s,
 * far beyond any wait below, so a wake-up that did not come shows as a stall of seconds.
 * Host a sleeps; host b polls (it must see a's packets as they come).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>

#include "droce_test.h"
#include "engine_client.h"

#define SLEEP_BOUND_US	5000000	/* a's longest sleep without a wake-up */
#define ROUND_BOUND_MS	1000	/* a round that took this long lost a wake-up */
#define DROP_SEED	"77777"	/* drop=500000: drops the first two packets, not the third */

static struct tc_qp *
rc_qp(struct tc_host *h, struct tc_cq *cq)
{
	struct tc_qp_init in = {
		.type = DROCE_SHM_QPT_RC, .engine = 0, .scq = cq, .rcq = cq,
		.sq_size = 64, .rq_size = 64, .max_sge = 1, .max_inline = 0,
	};

	return tc_qp_create(h, &in);
}

static void
spin_us(uint32_t us)
{
	uint64_t end = rte_get_timer_cycles() + rte_get_timer_hz() / 1000000 * us;

	while (rte_get_timer_cycles() < end)
		;
}

/*
 * Host a sleeps (wait, SLEEP_BOUND_US), host b polls, with the fault driver's fault_b on
 * b's receive side (or none); one RC QP and a CQ on each, a 4 KiB MR on a and b_mr_len
 * bytes on b. The QPs are not connected.
 */
struct sleep_pair {
	struct tc_host a, b;
	struct tc_cq *ca, *cb;
	struct tc_qp *qa, *qb;
	struct tc_mr *ma, *mb;
};

static void
sleep_pair_open(struct sleep_pair *p, enum droce_engine_wait wait, const char *fault_b,
		uint64_t b_mr_len)
{
	tc_next_pair_idle(SLEEP_BOUND_US, 0);
	tc_next_pair_wait(wait, DROCE_ENGINE_WAIT_POLL);
	tc_pair_open_faults(&p->a, &p->b, 1, 1, NULL, fault_b);
	p->ca = tc_cq_create(&p->a, 64);
	p->cb = tc_cq_create(&p->b, 64);
	p->qa = rc_qp(&p->a, p->ca);
	p->qb = rc_qp(&p->b, p->cb);
	p->ma = tc_mr_reg(&p->a, 4096, IBV_ACCESS_LOCAL_WRITE);
	p->mb = tc_mr_reg(&p->b, b_mr_len, IBV_ACCESS_LOCAL_WRITE);
}

/*
 * Doorbells against the sleep: sends posted after random gaps of 0 to 60 us, around the
 * 20 us an adaptive engine spins before it sleeps, so that posts land before, during and
 * just after the engine publishes that it sleeps. Every message arrives, intact and in
 * order, and no round stalls. A waits for its ACKs on its ACK timer (16 ms; seven retries
 * leave b, which must answer, 130 ms on a busy machine): the ring cannot wake a.
 */
static void
doorbells_race_sleep(enum droce_engine_wait wait, unsigned int rounds)
{
	struct tc_path path = { .mtu = IBV_MTU_1024, .timeout = 12, .retry_cnt = 7,
				.rnr_retry = 7, .min_rnr_timer = 1, .psn_a = 10, .psn_b = 20 };
	struct sleep_pair p;
	struct ibv_wc wc[4];
	uint64_t t0, worst = 0, hz;
	unsigned int i, burst;
	unsigned int seed = 12345;

	sleep_pair_open(&p, wait, NULL, 4096 * 4);
	hz = rte_get_timer_hz();
	tc_connect(p.qa, p.qb, &path);
	usleep(20000);	/* a is asleep */
	for (i = 0; i < rounds; i++) {
		unsigned int k;

		burst = 1 + rand_r(&seed) % 3;
		spin_us(rand_r(&seed) % 61);
		for (k = 0; k < burst; k++) {
			p.ma->buf[k] = (uint8_t)(i + k);
			CHECK_EQ_I64(tc_recv(p.qb, k, p.mb, 4096 * k, 4096), 0);
		}
		t0 = rte_get_timer_cycles();
		for (k = 0; k < burst; k++)
			CHECK_EQ_I64(tc_send(p.qa, k, p.ma, k, 1, IBV_SEND_SIGNALED), 0);
		CHECK_EQ_I64(tc_wait(p.cb, (int)burst, wc, ROUND_BOUND_MS), (int64_t)burst);
		for (k = 0; k < burst; k++) {
			CHECK_EQ_U64(wc[k].status, IBV_WC_SUCCESS);
			CHECK_EQ_U64(wc[k].wr_id, k);
			CHECK_EQ_U64(p.mb->buf[4096 * k], (uint8_t)(i + k));
		}
		CHECK_EQ_I64(tc_wait(p.ca, (int)burst, wc, ROUND_BOUND_MS), (int64_t)burst);
		for (k = 0; k < burst; k++)
			CHECK_EQ_U64(wc[k].status, IBV_WC_SUCCESS);
		if (rte_get_timer_cycles() - t0 > worst)
			worst = rte_get_timer_cycles() - t0;
	}
	printf("# %s: %u rounds, slowest %.3f ms; a slept %" PRIu64 " times, woken by "
	       "doorbells %" PRIu64 ", timers %" PRIu64 ", sleeps given up %" PRIu64 "\n",
	       droce_engine_wait_name(wait), rounds, (double)worst * 1000 / (double)hz,
	       tc_counter(&p.a, "sleeps"), tc_counter(&p.a, "doorbell_wakeups"),
	       tc_counter(&p.a, "timeout_wakeups"), tc_counter(&p.a, "sleeps_skipped"));
	/*
	 * The engine did sleep, and doorbells, not only timers, ended its sleeps: in most
	 * rounds when it sleeps at its first idle pass; at least once when it spins first
	 * (with the CPU taken by others, its yields outlast the gaps and it seldom sleeps).
	 */
	if (wait == DROCE_ENGINE_WAIT_INTERRUPT) {
		CHECK(tc_counter(&p.a, "sleeps") >= rounds / 2);
		CHECK(tc_counter(&p.a, "doorbell_wakeups") >= rounds / 4);
	} else {
		CHECK(tc_counter(&p.a, "sleeps") >= 1);
		CHECK(tc_counter(&p.a, "doorbell_wakeups") >= 1);
	}
	CHECK_EQ_U64(tc_counter(&p.b, "sleeps"), 0);
	tc_pair_close(&p.a, &p.b);
}

DROCE_TEST(adaptive_doorbells_race_sleep)
{
	doorbells_race_sleep(DROCE_ENGINE_WAIT_ADAPTIVE, 150);
}

DROCE_TEST(interrupt_doorbells_race_sleep)
{
	doorbells_race_sleep(DROCE_ENGINE_WAIT_INTERRUPT, 150);
}

/*
 * The retransmission timer fires while the engine sleeps: b's QP stays in RESET, which
 * drops a's SEND, so only a's ACK timer (67 ms) can bring a back to send it again; once
 * b's QP is ready, a retransmission gets through and the SEND completes, long before a's
 * 5 s bound.
 */
DROCE_TEST(timer_fires_while_asleep)
{
	struct tc_path pa = { .mtu = IBV_MTU_1024, .timeout = 14, .retry_cnt = 7,
			      .rnr_retry = 7, .min_rnr_timer = 1, .psn_a = 10, .psn_b = 20 };
	struct tc_path pb = pa;
	struct sleep_pair p;
	struct ibv_wc wc[2];
	uint64_t timeouts;

	sleep_pair_open(&p, DROCE_ENGINE_WAIT_INTERRUPT, NULL, 4096);
	tc_connect_remote(p.qa, p.qb->qpn, 2, &pa);
	memset(p.ma->buf, 0x3c, 64);
	CHECK_EQ_I64(tc_send(p.qa, 7, p.ma, 0, 64, IBV_SEND_SIGNALED), 0);
	usleep(150000);		/* two ACK timeouts; five retries (335 ms) left for b's set-up */
	timeouts = tc_counter(&p.a, "req_timeout");
	CHECK(timeouts >= 1);
	CHECK(tc_counter(&p.a, "timeout_wakeups") >= 1);
	CHECK_EQ_I64(tc_poll(p.ca, 1, wc), 0);
	pb.psn_a = pa.psn_b;
	pb.psn_b = pa.psn_a;
	tc_connect_remote(p.qb, p.qa->qpn, 1, &pb);
	CHECK_EQ_I64(tc_recv(p.qb, 8, p.mb, 0, 4096), 0);	/* before it: RNR NAK, retried */
	CHECK_EQ_I64(tc_wait(p.cb, 1, wc, ROUND_BOUND_MS), 1);
	CHECK_EQ_U64(wc[0].status, IBV_WC_SUCCESS);
	CHECK_EQ_U64(wc[0].byte_len, 64);
	CHECK_MEM(p.mb->buf, p.ma->buf, 64);
	CHECK_EQ_I64(tc_wait(p.ca, 1, wc, ROUND_BOUND_MS), 1);
	CHECK_EQ_U64(wc[0].status, IBV_WC_SUCCESS);
	CHECK_EQ_U64(wc[0].wr_id, 7);
	tc_pair_close(&p.a, &p.b);
}

/*
 * The same with the fault driver on b's receive side, as a lossy link does it: the only
 * request packet in flight is dropped, and its first resend too (DROP_SEED), so only a's
 * ACK timer, firing during a's sleep, sends it again, once per drop. Counted, not timed:
 * on a loaded machine b's ACK may come after a's timer fired once more, and that resend
 * reaches b as a duplicate (a loaded ASan run did this: doc/reliability.md).
 */
DROCE_TEST(timer_resends_a_dropped_packet_while_asleep)
{
	struct tc_path path = { .mtu = IBV_MTU_1024, .timeout = 12, .retry_cnt = 7,
				.rnr_retry = 7, .min_rnr_timer = 1, .psn_a = 10, .psn_b = 20 };
	struct droce_fault_stats fs;
	struct sleep_pair p;
	struct ibv_wc wc[2];
	uint64_t sent, timeouts, dups;
	int waited_ms = 0;

	sleep_pair_open(&p, DROCE_ENGINE_WAIT_INTERRUPT, "seed=" DROP_SEED ",drop=500000", 4096);
	tc_connect(p.qa, p.qb, &path);
	usleep(20000);	/* a is asleep */
	memset(p.ma->buf, 0x5a, 100);
	CHECK_EQ_I64(tc_recv(p.qb, 1, p.mb, 0, 4096), 0);
	CHECK_EQ_I64(tc_send(p.qa, 2, p.ma, 0, 100, IBV_SEND_SIGNALED), 0);
	CHECK_EQ_I64(tc_wait(p.cb, 1, wc, ROUND_BOUND_MS), 1);
	CHECK_EQ_U64(wc[0].status, IBV_WC_SUCCESS);
	CHECK_EQ_U64(wc[0].byte_len, 100);
	CHECK_MEM(p.mb->buf, p.ma->buf, 100);
	CHECK_EQ_I64(tc_wait(p.ca, 1, wc, ROUND_BOUND_MS), 1);
	CHECK_EQ_U64(wc[0].status, IBV_WC_SUCCESS);
	/* Until b has taken every packet a sent: a late resend may still be on the link. */
	sent = tc_counter(&p.a, "req_pkts");
	while (droce_fault_stats_get(p.b.fault, -1, &fs) == 0 && fs.received < sent &&
	       waited_ms++ < ROUND_BOUND_MS)
		usleep(1000);
	timeouts = tc_counter(&p.a, "req_timeout");
	dups = tc_counter(&p.b, "resp_dup");
	printf("# link a->b: %" PRIu64 " packets, %" PRIu64 " dropped; a: %" PRIu64 " sent, %"
	       PRIu64 " timeouts, %" PRIu64 " sleeps ended by a timer; b: %" PRIu64
	       " duplicates\n", fs.received, fs.dropped, sent, timeouts,
	       tc_counter(&p.a, "timeout_wakeups"), dups);
	CHECK(fs.dropped >= 1);
	CHECK_EQ_U64(fs.received, sent);
	/* Every packet after the first is a timer's resend: none of another cause. */
	CHECK_EQ_U64(sent, 1 + timeouts);
	CHECK_EQ_U64(tc_counter(&p.a, "req_early_retransmit"), 0);
	/* One timeout per drop, and one more only for a resend b took as a duplicate. */
	CHECK_EQ_U64(timeouts, fs.dropped + dups);
	CHECK_EQ_U64(fs.received, fs.dropped + 1 + dups);
	CHECK(tc_counter(&p.a, "timeout_wakeups") >= fs.dropped);
	tc_pair_close(&p.a, &p.b);
}
