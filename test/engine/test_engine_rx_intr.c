/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A port that takes rx interrupts and never raises them (QEMU's e1000e under vfio-pci with
 * DPDK's em driver, doc/nics.md) must not put a sleeping engine to sleep for good: such a
 * sleep lasts DROCE_ENGINE_RX_INTR_CHECK_US at most, and after DROCE_ENGINE_RX_INTR_MISSES
 * of them in a row that ended with packets waiting, the engine sleeps as on a port without
 * rx interrupts (lib/engine/engine_wait.c). net_ring has none, so the test gives host a's
 * engine an interrupt fd that never fires (white box: an eventfd nobody writes), as the
 * PMD's would be; host b polls and sends to a.
 */
#include <stdatomic.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_launch.h>

#include "droce_test.h"
#include "engine_client.h"
#include "engine_loc.h"		/* white box: the engine's rx interrupt fd */

#define IDLE_US		20000	/* a's sleeps without rx interrupts: 20 ms, doubling to 20 ms */
#define MSG_LEN		1000
#define NB_MSGS		(DROCE_ENGINE_RX_INTR_MISSES + 3)
/* A message must not take much longer than one bounded sleep (a loaded machine's
 * scheduling included); without the bound it would never arrive. */
#define MSG_WAIT_MS	5000

static struct tc_qp *
rc_qp(struct tc_host *h, struct tc_cq *cq)
{
	struct tc_qp_init in = {
		.type = DROCE_SHM_QPT_RC, .engine = 0, .scq = cq, .rcq = cq,
		.sq_size = 16, .rq_size = 16, .max_sge = 1, .max_inline = 0,
	};

	return tc_qp_create(h, &in);
}

/* a's engine, stopped, given an rx interrupt fd that never fires, started again. */
static int
give_silent_rx_intr(struct tc_host *a)
{
	struct droce_engine *e = a->eng[0];
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

	CHECK(efd >= 0);
	droce_engine_stop(e);
	CHECK_EQ_I64(rte_eal_wait_lcore(a->lcore[0]), 0);
	CHECK_EQ_I64(e->rx_intr_fd, -1);
	e->rx_intr_fd = efd;
	e->rx_intr_counts = true;
	atomic_store(&e->stop, 0);
	CHECK_EQ_I64(rte_eal_remote_launch(droce_engine_run, e, a->lcore[0]), 0);
	return efd;
}

DROCE_TEST(silent_rx_interrupt_is_given_up)
{
	struct tc_path path = { .mtu = IBV_MTU_1024, .timeout = 14, .retry_cnt = 7,
				.rnr_retry = 7, .min_rnr_timer = 1, .psn_a = 1, .psn_b = 2 };
	struct tc_host a, b;
	struct tc_cq *ca, *cb;
	struct tc_qp *qa, *qb;
	struct tc_mr *ma, *mb;
	struct ibv_wc wc;
	unsigned int i;
	int efd;

	tc_next_pair_idle(IDLE_US, 0);
	tc_next_pair_wait(DROCE_ENGINE_WAIT_INTERRUPT, DROCE_ENGINE_WAIT_POLL);
	tc_pair_open(&a, &b, 1, 1);
	ca = tc_cq_create(&a, 64);
	cb = tc_cq_create(&b, 64);
	qa = rc_qp(&a, ca);
	qb = rc_qp(&b, cb);
	ma = tc_mr_reg(&a, 4096, IBV_ACCESS_LOCAL_WRITE);
	mb = tc_mr_reg(&b, 4096, IBV_ACCESS_LOCAL_WRITE);
	tc_connect(qa, qb, &path);
	efd = give_silent_rx_intr(&a);

	for (i = 0; i < NB_MSGS; i++) {
		droce_test_ctx("message %u", i);
		memset(mb->buf, (int)i + 1, MSG_LEN);
		CHECK_EQ_I64(tc_recv(qa, i, ma, 0, MSG_LEN), 0);
		/* a is asleep on the silent fd by now (nothing else to do for 20 ms idle) */
		usleep(50 * 1000);
		CHECK_EQ_I64(tc_send(qb, i, mb, 0, MSG_LEN, IBV_SEND_SIGNALED), 0);
		CHECK_EQ_I64(tc_wait(ca, 1, &wc, MSG_WAIT_MS), 1);
		CHECK_EQ_U64(wc.status, IBV_WC_SUCCESS);
		CHECK_EQ_U64(wc.byte_len, MSG_LEN);
		CHECK_MEM(ma->buf, mb->buf, MSG_LEN);
		CHECK_EQ_I64(tc_wait(cb, 1, &wc, MSG_WAIT_MS), 1);
		CHECK_EQ_U64(wc.status, IBV_WC_SUCCESS);
	}
	droce_test_ctx("after %u messages", NB_MSGS);
	/* Given up after exactly that many misses; no interrupt ever woke the engine. */
	CHECK_EQ_U64(tc_counter(&a, "rx_intr_missed"), DROCE_ENGINE_RX_INTR_MISSES);
	CHECK_EQ_U64(tc_counter(&a, "rx_intr_wakeups"), 0);
	CHECK(tc_counter(&a, "sleeps") >= NB_MSGS);
	tc_pair_close(&a, &b);
	close(efd);
}
