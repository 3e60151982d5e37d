/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The net_fault vdev (drivers/net/fault/fault_vdev.c) over a net_ring loopback port:
 * created with rte_vdev_init() and the devargs an application gives to --vdev, then
 * configured, started and used through the net_fault port only. The fault engine itself
 * is tested in test_fault.c; here: that the vdev runs it (each fault kind, determinism,
 * the same decisions as the library form), forwards the port's control and data paths,
 * exposes the counters as xstats, refuses bad devargs, and frees everything on uninit.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_bus_vdev.h>
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "droce_fault.h"
#include "droce_test.h"
#include "fault_check.h"
#include "test_eal.h"

#define PKT_LEN 64u
#define NB_MBUFS 8191u
#define RING_SIZE 1024u
#define TX_BURST 32u
#define RX_BURST 64u
#define NB_PKTS 10000u
/* Fewer for delay: 10% of them held at once must stay far below the hold buffer (1024). */
#define NB_PKTS_DELAY 2000u
#define RATE_10PCT 100000u
#define DELAY_US 20000u
#define DRAIN_TIMEOUT_S 5u
#define TEST_US_PER_S 1000000u
#define MAX_QUEUES 2u
#define ARGS_LEN 256u
#define XSTATS_MAX 256u
#define XSTAT_PREFIX "fault_"

struct vdev_env {
	struct rte_mempool *mp;
	struct rte_ring *ring[MAX_QUEUES];
	uint16_t nb_queues;
	uint16_t ring_port;
	uint16_t port;
	char ring_name[RTE_ETH_NAME_MAX_LEN];
	char name[RTE_ETH_NAME_MAX_LEN];
};

/* What the application received through one queue, in order. */
struct vdev_run {
	struct droce_fault_stats st;
	uint32_t nb_out;
	uint32_t *seq;
	/* Bits that differ from what was sent with that number. */
	uint32_t *bit_errors;
	/* Time from sending to receiving, in TSC cycles. */
	uint64_t *latency;
};

static unsigned int env_count;

/* The mempool and nb_queues rings of a test, each ring its own loopback. */
static void
env_pool(struct vdev_env *env, uint16_t nb_queues)
{
	char name[RTE_RING_NAMESIZE];
	uint16_t q;

	test_eal_init();
	memset(env, 0, sizeof(*env));
	env->nb_queues = nb_queues;
	snprintf(name, sizeof(name), "vdev_t%u", ++env_count);
	env->mp = rte_pktmbuf_pool_create(name, NB_MBUFS, 0, 0,
					  RTE_PKTMBUF_HEADROOM + PKT_LEN, SOCKET_ID_ANY);
	CHECK(env->mp != NULL);
	for (q = 0; q < nb_queues; q++) {
		snprintf(name, sizeof(name), "vdev_t%u_q%u", env_count, q);
		env->ring[q] = rte_ring_create(name, RING_SIZE, SOCKET_ID_ANY,
					       RING_F_SP_ENQ | RING_F_SC_DEQ);
		CHECK(env->ring[q] != NULL);
	}
	snprintf(env->name, sizeof(env->name), "net_fault_t%u", env_count);
}

/* The net_ring port over the env's rings, neither configured nor started: the net_fault
 * port does that. */
static void
env_ring_port(struct vdev_env *env)
{
	char name[RTE_RING_NAMESIZE];
	int ret;

	snprintf(name, sizeof(name), "vdev_t%u", env_count);
	ret = rte_eth_from_rings(name, env->ring, env->nb_queues, env->ring, env->nb_queues,
				 SOCKET_ID_ANY);
	CHECK(ret >= 0);
	env->ring_port = (uint16_t)ret;
	CHECK(rte_eth_dev_get_name_by_port(env->ring_port, env->ring_name) == 0);
}

static void
env_ring(struct vdev_env *env, uint16_t nb_queues)
{
	env_pool(env, nb_queues);
	env_ring_port(env);
}

static void
env_free(struct vdev_env *env)
{
	uint16_t q;

	for (q = 0; q < env->nb_queues; q++)
		rte_ring_free(env->ring[q]);
	rte_mempool_free(env->mp);
}

/* rte_vdev_init(net_fault, "port=RING," + args), as --vdev=net_fault...,port=... does. */
static int
env_vdev_init(struct vdev_env *env, const char *args)
{
	char full[ARGS_LEN];

	snprintf(full, sizeof(full), "port=%s%s%s", env->ring_name, args[0] ? "," : "",
		 args);
	return rte_vdev_init(env->name, full);
}

/* Configures and starts the net_fault port, queues of the env's pool. */
static void
env_start(struct vdev_env *env)
{
	struct rte_eth_conf conf = { 0 };
	uint16_t q;

	CHECK(rte_eth_dev_get_port_by_name(env->name, &env->port) == 0);
	CHECK(rte_eth_dev_configure(env->port, env->nb_queues, env->nb_queues, &conf) == 0);
	for (q = 0; q < env->nb_queues; q++) {
		CHECK(rte_eth_rx_queue_setup(env->port, q, RING_SIZE, SOCKET_ID_ANY, NULL,
					     env->mp) == 0);
		CHECK(rte_eth_tx_queue_setup(env->port, q, RING_SIZE, SOCKET_ID_ANY,
					     NULL) == 0);
	}
	CHECK(rte_eth_dev_start(env->port) == 0);
}

static void
env_open(struct vdev_env *env, uint16_t nb_queues, const char *args)
{
	env_ring(env, nb_queues);
	CHECK(env_vdev_init(env, args) == 0);
	env_start(env);
}

/*
 * Stops the net_fault port and removes it, which closes the wrapped port too; then both
 * ports are gone and every mbuf, held ones included, is back in the pool.
 */
static void
env_uninit(struct vdev_env *env)
{
	uint16_t port;

	CHECK(rte_eth_dev_stop(env->port) == 0);
	CHECK(rte_vdev_uninit(env->name) == 0);
	CHECK(rte_eth_dev_get_port_by_name(env->name, &port) != 0);
	CHECK(rte_eth_dev_get_port_by_name(env->ring_name, &port) != 0);
	CHECK_EQ_U64(rte_mempool_avail_count(env->mp), NB_MBUFS);
}

static void
env_close(struct vdev_env *env)
{
	env_uninit(env);
	env_free(env);
}

/* Blocks allocated from DPDK's heap (rte_malloc, memzones), which ASan does not see. */
static uint64_t
heap_blocks(void)
{
	struct rte_malloc_socket_stats st;

	CHECK(rte_malloc_get_socket_stats((int)rte_socket_id(), &st) == 0);
	return st.alloc_count;
}

static void
pkt_fill(uint8_t *data, uint32_t seq)
{
	uint32_t i;

	for (i = 0; i < PKT_LEN; i++)
		data[i] = fault_payload_byte(seq, i);
}

/* Bits in which data differs from the payload sent with number seq. */
static uint32_t
pkt_bit_errors(const uint8_t *data, uint32_t seq)
{
	uint32_t i, bits = 0;

	for (i = 0; i < PKT_LEN; i++)
		bits += (uint32_t)__builtin_popcount(data[i] ^ fault_payload_byte(seq, i));
	return bits;
}

/*
 * Receives one burst on env->port. The sequence number travels in the mbuf's hash.usr,
 * which a loopback ring does not touch and rte_pktmbuf_copy() copies, so the corrupt
 * fault (payload bytes only) cannot change it.
 */
static void
rx_all(struct vdev_env *env, uint16_t queue, struct vdev_run *run, uint32_t cap,
       const uint64_t *tx_tsc)
{
	struct rte_mbuf *pkts[RX_BURST];
	uint16_t n, i;
	uint64_t now;

	n = rte_eth_rx_burst(env->port, queue, pkts, RX_BURST);
	now = rte_rdtsc();
	for (i = 0; i < n; i++) {
		uint32_t seq = pkts[i]->hash.usr;

		CHECK(run->nb_out < cap);
		CHECK_EQ_U64(pkts[i]->pkt_len, PKT_LEN);
		run->seq[run->nb_out] = seq;
		run->bit_errors[run->nb_out] =
			pkt_bit_errors(rte_pktmbuf_mtod(pkts[i], uint8_t *), seq);
		run->latency[run->nb_out++] = now - tx_tsc[seq];
		rte_pktmbuf_free(pkts[i]);
	}
}

/*
 * Sends nb numbered packets through one queue of env->port, receiving after each burst,
 * then polls until nothing is held; reads the queue's counters from f and checks that
 * every packet is accounted for.
 */
static void
queue_traffic(struct vdev_env *env, struct droce_fault *f, uint16_t queue, uint32_t nb,
	      struct vdev_run *run)
{
	uint64_t *tx_tsc = droce_test_malloc(nb * sizeof(*tx_tsc));
	uint32_t cap = 2 * nb, seq = 0, i;
	uint64_t deadline;

	CHECK(f != NULL);
	memset(run, 0, sizeof(*run));
	run->seq = droce_test_malloc(cap * sizeof(run->seq[0]));
	run->bit_errors = droce_test_malloc(cap * sizeof(run->bit_errors[0]));
	run->latency = droce_test_malloc(cap * sizeof(run->latency[0]));
	while (seq < nb) {
		struct rte_mbuf *pkts[TX_BURST];
		uint32_t burst = RTE_MIN(TX_BURST, nb - seq);

		CHECK(rte_pktmbuf_alloc_bulk(env->mp, pkts, burst) == 0);
		for (i = 0; i < burst; i++) {
			pkt_fill((uint8_t *)rte_pktmbuf_append(pkts[i], PKT_LEN), seq + i);
			pkts[i]->hash.usr = seq + i;
			tx_tsc[seq + i] = rte_rdtsc();
		}
		CHECK_EQ_U64(rte_eth_tx_burst(env->port, queue, pkts, (uint16_t)burst), burst);
		seq += burst;
		rx_all(env, queue, run, cap, tx_tsc);
	}
	deadline = rte_rdtsc() + DRAIN_TIMEOUT_S * rte_get_tsc_hz();
	do {
		rx_all(env, queue, run, cap, tx_tsc);
		CHECK(droce_fault_stats_get(f, queue, &run->st) == 0);
	} while (run->st.held > 0 && rte_rdtsc() < deadline);
	CHECK_EQ_U64(run->st.held, 0);
	CHECK_EQ_U64(run->st.received, nb);
	CHECK_EQ_U64(run->st.delivered, run->nb_out);
	CHECK_EQ_U64(run->st.overflowed + run->st.dup_failed, 0);
	CHECK_EQ_U64(run->st.received + run->st.duplicated,
		     run->st.delivered + run->st.dropped);
}

/* queue_traffic on a fresh one-queue net_fault port made with args; then uninit. */
static void
run_traffic(const char *args, uint32_t nb, struct vdev_run *run)
{
	struct vdev_env env;

	env_open(&env, 1, args);
	queue_traffic(&env, droce_fault_from_port(env.port), 0, nb, run);
	env_close(&env);
}

static uint32_t
sum_bit_errors(const struct vdev_run *run)
{
	uint32_t i, bits = 0;

	for (i = 0; i < run->nb_out; i++) {
		CHECK(run->bit_errors[i] <= 1);
		bits += run->bit_errors[i];
	}
	return bits;
}

/* Packets delivered after one with a higher number. */
static uint32_t
count_overtaken(const struct vdev_run *run)
{
	uint32_t i, max = 0, overtaken = 0;

	for (i = 0; i < run->nb_out; i++) {
		if (i > 0 && run->seq[i] < max)
			overtaken++;
		max = RTE_MAX(max, run->seq[i]);
	}
	return overtaken;
}

DROCE_TEST(no_faults_passes_everything_through_in_order)
{
	struct vdev_run run;
	uint32_t i;

	run_traffic("seed=5", NB_PKTS, &run);
	CHECK_EQ_U64(run.nb_out, NB_PKTS);
	for (i = 0; i < run.nb_out; i++)
		CHECK_EQ_U64(run.seq[i], i);
	CHECK_EQ_U64(sum_bit_errors(&run), 0);
	CHECK_EQ_U64(run.st.dropped + run.st.duplicated + run.st.corrupted + run.st.delayed +
		     run.st.reordered, 0);
}

DROCE_TEST(drop_through_the_vdev)
{
	struct vdev_run run;
	uint32_t i;

	run_traffic("drop=100000,seed=2", NB_PKTS, &run);
	fault_check_binomial(run.st.dropped, NB_PKTS, RATE_10PCT);
	CHECK_EQ_U64(run.nb_out, NB_PKTS - run.st.dropped);
	for (i = 1; i < run.nb_out; i++)
		CHECK(run.seq[i] > run.seq[i - 1]);
	CHECK_EQ_U64(run.st.duplicated + run.st.corrupted + run.st.delayed +
		     run.st.reordered, 0);
}

DROCE_TEST(dup_through_the_vdev)
{
	struct vdev_run run;
	uint32_t i, twice = 0;

	run_traffic("dup=100000,seed=3", NB_PKTS, &run);
	fault_check_binomial(run.st.duplicated, NB_PKTS, RATE_10PCT);
	CHECK_EQ_U64(run.nb_out, NB_PKTS + run.st.duplicated);
	for (i = 1; i < run.nb_out; i++) {
		/* A copy comes right after its original. */
		CHECK(run.seq[i] >= run.seq[i - 1]);
		twice += run.seq[i] == run.seq[i - 1];
	}
	CHECK_EQ_U64(twice, run.st.duplicated);
	CHECK_EQ_U64(sum_bit_errors(&run), 0);
}

DROCE_TEST(corrupt_through_the_vdev)
{
	struct vdev_run run;

	run_traffic("corrupt=100000,seed=4", NB_PKTS, &run);
	fault_check_binomial(run.st.corrupted, NB_PKTS, RATE_10PCT);
	CHECK_EQ_U64(run.nb_out, NB_PKTS);
	CHECK_EQ_U64(sum_bit_errors(&run), run.st.corrupted);
}

DROCE_TEST(reorder_through_the_vdev)
{
	struct vdev_run run;
	uint32_t overtaken;

	run_traffic("reorder=100000,seed=6", NB_PKTS, &run);
	fault_check_binomial(run.st.reordered, NB_PKTS, RATE_10PCT);
	CHECK_EQ_U64(run.nb_out, NB_PKTS);
	/* A held packet is overtaken by the next burst's, unless nothing followed it. */
	overtaken = count_overtaken(&run);
	CHECK(overtaken <= run.st.reordered);
	CHECK(overtaken + TX_BURST >= run.st.reordered);
	CHECK(overtaken > 0);
}

DROCE_TEST(delay_through_the_vdev)
{
	struct vdev_run run;
	uint64_t min_delay;
	uint32_t i, late = 0;
	char args[ARGS_LEN];

	test_eal_init();
	min_delay = (uint64_t)DELAY_US * rte_get_tsc_hz() / TEST_US_PER_S;
	snprintf(args, sizeof(args), "delay=%u,delay_us=%u,seed=7", RATE_10PCT, DELAY_US);
	run_traffic(args, NB_PKTS_DELAY, &run);
	fault_check_binomial(run.st.delayed, NB_PKTS_DELAY, RATE_10PCT);
	CHECK_EQ_U64(run.nb_out, NB_PKTS_DELAY);
	for (i = 0; i < run.nb_out; i++)
		late += run.latency[i] >= min_delay;
	CHECK_EQ_U64(late, run.st.delayed);
}

static const char *const mixed = "drop=100000,dup=100000,corrupt=100000,reorder=100000";

static bool
runs_equal(const struct vdev_run *a, const struct vdev_run *b)
{
	return a->nb_out == b->nb_out &&
	       memcmp(a->seq, b->seq, a->nb_out * sizeof(a->seq[0])) == 0 &&
	       memcmp(a->bit_errors, b->bit_errors, a->nb_out * sizeof(a->bit_errors[0])) == 0;
}

DROCE_TEST(same_seed_same_faults_other_seed_other_faults)
{
	struct vdev_run a, b, c;
	char args[ARGS_LEN];

	snprintf(args, sizeof(args), "%s,seed=42", mixed);
	run_traffic(args, NB_PKTS, &a);
	run_traffic(args, NB_PKTS, &b);
	snprintf(args, sizeof(args), "%s,seed=43", mixed);
	run_traffic(args, NB_PKTS, &c);
	CHECK(runs_equal(&a, &b));
	CHECK_MEM(&a.st, &b.st, sizeof(a.st));
	CHECK(!runs_equal(&a, &c));
}

/*
 * The library form over a plain ring port, with the same seed and traffic, makes the same
 * decisions: both forms run one engine.
 */
DROCE_TEST(vdev_and_library_form_agree)
{
	struct rte_eth_conf conf = { 0 };
	struct vdev_run vdev, lib;
	struct droce_fault *f;
	struct vdev_env env;
	char args[ARGS_LEN];

	snprintf(args, sizeof(args), "%s,seed=9", mixed);
	run_traffic(args, NB_PKTS, &vdev);

	/* The library form, on a ring port the test configures and drives itself. */
	env_ring(&env, 1);
	CHECK(rte_eth_dev_configure(env.ring_port, 1, 1, &conf) == 0);
	CHECK(rte_eth_rx_queue_setup(env.ring_port, 0, RING_SIZE, SOCKET_ID_ANY, NULL,
				     env.mp) == 0);
	CHECK(rte_eth_tx_queue_setup(env.ring_port, 0, RING_SIZE, SOCKET_ID_ANY, NULL) == 0);
	snprintf(args, sizeof(args), "port=%s,%s,seed=9", env.ring_name, mixed);
	f = droce_fault_attach(args);
	CHECK(f != NULL);
	CHECK(rte_eth_dev_start(env.ring_port) == 0);
	env.port = env.ring_port;
	/* Not a net_fault port. */
	CHECK(droce_fault_from_port(env.ring_port) == NULL);
	CHECK_EQ_I64(rte_errno, ENODEV);
	queue_traffic(&env, f, 0, NB_PKTS, &lib);
	CHECK(runs_equal(&vdev, &lib));
	CHECK_MEM(&vdev.st, &lib.st, sizeof(vdev.st));
	CHECK(rte_eth_dev_stop(env.ring_port) == 0);
	droce_fault_detach(f);
	CHECK(rte_eth_dev_close(env.ring_port) == 0);
	CHECK_EQ_U64(rte_mempool_avail_count(env.mp), NB_MBUFS);
	env_free(&env);
}

/* The index of xstat name among names[0..n), or n. */
static int xstat_index(const struct rte_eth_xstat_name *names, int n, const char *name);

/* The value of xstat name of port (which must have it). */
static uint64_t
xstat_value(uint16_t port, const char *name)
{
	struct rte_eth_xstat_name names[XSTATS_MAX];
	struct rte_eth_xstat xs[XSTATS_MAX];
	int n = rte_eth_xstats_get_names(port, names, XSTATS_MAX), i;

	CHECK(n > 0 && n <= (int)XSTATS_MAX);
	CHECK_EQ_I64(rte_eth_xstats_get(port, xs, XSTATS_MAX), n);
	i = xstat_index(names, n, name);
	droce_test_ctx("xstat %s", name);
	CHECK(i < n);
	droce_test_ctx("%s", "");
	return xs[i].value;
}

/*
 * tx_drop: what the port sends is lost at the rate asked, in order otherwise, and the
 * sender is told every packet went (as a lossy link would); the dropped mbufs are freed.
 */
DROCE_TEST(tx_drop_through_the_vdev)
{
	uint64_t *tx_tsc = droce_test_malloc(NB_PKTS * sizeof(*tx_tsc));
	struct droce_fault_stats st;
	struct vdev_run run = { 0 };
	struct vdev_env env;
	uint64_t passed, dropped;
	uint32_t seq = 0, i;

	env_open(&env, 1, "tx_drop=100000,seed=4");
	run.seq = droce_test_malloc(NB_PKTS * sizeof(run.seq[0]));
	run.bit_errors = droce_test_malloc(NB_PKTS * sizeof(run.bit_errors[0]));
	run.latency = droce_test_malloc(NB_PKTS * sizeof(run.latency[0]));
	while (seq < NB_PKTS) {
		struct rte_mbuf *pkts[TX_BURST];
		uint32_t burst = RTE_MIN(TX_BURST, NB_PKTS - seq);

		CHECK(rte_pktmbuf_alloc_bulk(env.mp, pkts, burst) == 0);
		for (i = 0; i < burst; i++) {
			pkt_fill((uint8_t *)rte_pktmbuf_append(pkts[i], PKT_LEN), seq + i);
			pkts[i]->hash.usr = seq + i;
			tx_tsc[seq + i] = rte_rdtsc();
		}
		CHECK_EQ_U64(rte_eth_tx_burst(env.port, 0, pkts, (uint16_t)burst), burst);
		seq += burst;
		rx_all(&env, 0, &run, NB_PKTS, tx_tsc);
	}
	rx_all(&env, 0, &run, NB_PKTS, tx_tsc);
	passed = xstat_value(env.port, XSTAT_PREFIX "tx_passed");
	dropped = xstat_value(env.port, XSTAT_PREFIX "tx_dropped");
	fault_check_binomial(dropped, NB_PKTS, RATE_10PCT);
	CHECK_EQ_U64(passed + dropped, NB_PKTS);
	CHECK_EQ_U64(run.nb_out, passed);
	for (i = 1; i < run.nb_out; i++)
		CHECK(run.seq[i] > run.seq[i - 1]);
	CHECK_EQ_U64(sum_bit_errors(&run), 0);
	/* The receive side saw no fault of its own. */
	CHECK(droce_fault_stats_get(droce_fault_from_port(env.port), -1, &st) == 0);
	CHECK_EQ_U64(st.received, passed);
	CHECK_EQ_U64(st.dropped, 0);
	CHECK(rte_eth_xstats_reset(env.port) == 0);
	CHECK_EQ_U64(xstat_value(env.port, XSTAT_PREFIX "tx_dropped"), 0);
	CHECK_EQ_U64(xstat_value(env.port, XSTAT_PREFIX "tx_passed"), 0);
	env_close(&env);
}

static int
xstat_index(const struct rte_eth_xstat_name *names, int n, const char *name)
{
	int i;

	for (i = 0; i < n; i++)
		if (strcmp(names[i].name, name) == 0)
			break;
	return i;
}

DROCE_TEST(xstats_name_and_count_the_faults_per_port)
{
	struct rte_eth_xstat_name names[XSTATS_MAX];
	struct rte_eth_xstat xs[XSTATS_MAX];
	struct droce_fault_stats total, st;
	struct vdev_run run[MAX_QUEUES];
	struct rte_eth_dev_info info;
	struct droce_fault *f;
	struct vdev_env env;
	const uint64_t *v = (const uint64_t *)&total;
	int n, first, i;
	uint16_t port;
	bool saw_ring = false, saw_fault = false;

	env_open(&env, MAX_QUEUES, "drop=100000,dup=50000,corrupt=20000,seed=11");
	CHECK(rte_eth_dev_info_get(env.port, &info) == 0);
	CHECK_EQ_STR(info.driver_name, "net_fault");
	/* net_fault owns the wrapped port: applications iterating the ports skip it. */
	RTE_ETH_FOREACH_DEV(port) {
		saw_ring |= port == env.ring_port;
		saw_fault |= port == env.port;
	}
	CHECK(saw_fault && !saw_ring);
	f = droce_fault_from_port(env.port);
	CHECK(f != NULL);
	queue_traffic(&env, f, 0, NB_PKTS, &run[0]);
	queue_traffic(&env, f, 1, NB_PKTS, &run[1]);
	/* Same traffic, other queue: another stream of decisions. */
	CHECK(!runs_equal(&run[0], &run[1]));
	CHECK(droce_fault_stats_get(f, -1, &total) == 0);
	CHECK_EQ_U64(total.received, 2 * NB_PKTS);
	CHECK_EQ_U64(total.dropped, run[0].st.dropped + run[1].st.dropped);

	n = rte_eth_xstats_get_names(env.port, names, XSTATS_MAX);
	CHECK(n > 0 && n <= (int)XSTATS_MAX);
	CHECK_EQ_I64(rte_eth_xstats_get(env.port, xs, XSTATS_MAX), n);
	first = xstat_index(names, n, XSTAT_PREFIX "received");
	CHECK(first + (int)DROCE_FAULT_NB_COUNTERS <= n);
	for (i = 0; i < (int)DROCE_FAULT_NB_COUNTERS; i++) {
		char want[RTE_ETH_XSTATS_NAME_SIZE];

		snprintf(want, sizeof(want), XSTAT_PREFIX "%s", droce_fault_counter_names[i]);
		droce_test_ctx("xstat %s", want);
		CHECK_EQ_STR(names[first + i].name, want);
		CHECK_EQ_U64(xs[first + i].id, (uint64_t)(first + i));
		CHECK_EQ_U64(xs[first + i].value, v[i]);
	}
	droce_test_ctx("%s", "");
	/* The basic counters are the wrapped port's. */
	{
		struct rte_eth_stats es;

		CHECK(rte_eth_stats_get(env.port, &es) == 0);
		CHECK_EQ_U64(es.ipackets, total.received);
		CHECK_EQ_U64(es.opackets, 2 * NB_PKTS);
	}
	/* Reset clears the fault counters too. */
	CHECK(rte_eth_xstats_reset(env.port) == 0);
	CHECK(droce_fault_stats_get(f, -1, &st) == 0);
	CHECK_EQ_U64(st.received + st.dropped + st.delivered + st.duplicated, 0);
	CHECK_EQ_I64(rte_eth_xstats_get(env.port, xs, XSTATS_MAX), n);
	for (i = 0; i < (int)DROCE_FAULT_NB_COUNTERS; i++)
		CHECK_EQ_U64(xs[first + i].value, 0);
	env_close(&env);
}

/* Frames of PKT_LEN bytes the bottleneck of bottleneck_through_the_vdev keeps, and sent. */
#define BN_KEPT 256u
#define BN_SENT 300u

/* Sends n numbered packets from seq on through env->port, without receiving. */
static void
send_only(struct vdev_env *env, uint32_t seq, uint32_t n)
{
	struct rte_mbuf *pkts[TX_BURST];
	uint32_t end = seq + n, i;

	while (seq < end) {
		uint32_t burst = RTE_MIN(TX_BURST, end - seq);

		CHECK(rte_pktmbuf_alloc_bulk(env->mp, pkts, burst) == 0);
		for (i = 0; i < burst; i++) {
			pkt_fill((uint8_t *)rte_pktmbuf_append(pkts[i], PKT_LEN), seq + i);
			pkts[i]->hash.usr = seq + i;
		}
		CHECK_EQ_U64(rte_eth_tx_burst(env->port, 0, pkts, (uint16_t)burst), burst);
		seq += burst;
	}
}

/*
 * The bottleneck queue through the vdev: its keys in the devargs, its counters as xstats
 * (fault_bn_...), tail drop past the buffer, a reset that starts bn_depth_max from the
 * depth at the reset, and the packets still queued freed at uninit.
 */
DROCE_TEST(bottleneck_through_the_vdev)
{
	struct rte_mbuf **pkts = droce_test_malloc(BN_SENT * sizeof(*pkts));
	uint32_t nb_out = 0, i;
	struct vdev_env env;
	uint64_t deadline;
	char args[ARGS_LEN];

	/* Not IP (the payload's ethertype bytes are none of IPv4, IPv6, 802.1Q): no mark. */
	snprintf(args, sizeof(args), "rate=100,buffer=%u,ecn_max=%u", BN_KEPT * PKT_LEN,
		 BN_KEPT * PKT_LEN / 2);
	env_open(&env, 1, args);
	send_only(&env, 0, BN_SENT);
	/* One burst takes them all at one instant: the first BN_KEPT fit, none has left. */
	CHECK_EQ_U64(rte_eth_rx_burst(env.port, 0, pkts, BN_SENT), 0);
	CHECK_EQ_U64(xstat_value(env.port, XSTAT_PREFIX "received"), BN_SENT);
	CHECK_EQ_U64(xstat_value(env.port, XSTAT_PREFIX "bn_queued"), BN_KEPT);
	CHECK_EQ_U64(xstat_value(env.port, XSTAT_PREFIX "bn_dropped"), BN_SENT - BN_KEPT);
	CHECK_EQ_U64(xstat_value(env.port, XSTAT_PREFIX "bn_held"), BN_KEPT);
	CHECK_EQ_U64(xstat_value(env.port, XSTAT_PREFIX "bn_depth"), BN_KEPT * PKT_LEN);
	CHECK_EQ_U64(xstat_value(env.port, XSTAT_PREFIX "bn_depth_max"), BN_KEPT * PKT_LEN);
	CHECK_EQ_U64(xstat_value(env.port, XSTAT_PREFIX "bn_ect"), 0);
	CHECK_EQ_U64(rte_mempool_avail_count(env.mp), NB_MBUFS - BN_KEPT);
	/* A reset: the counts start again, the gauges stay, the highest depth is the depth. */
	CHECK(rte_eth_xstats_reset(env.port) == 0);
	CHECK_EQ_U64(xstat_value(env.port, XSTAT_PREFIX "bn_queued"), 0);
	CHECK_EQ_U64(xstat_value(env.port, XSTAT_PREFIX "bn_dropped"), 0);
	CHECK_EQ_U64(xstat_value(env.port, XSTAT_PREFIX "bn_held"), BN_KEPT);
	CHECK_EQ_U64(xstat_value(env.port, XSTAT_PREFIX "bn_depth_max"), BN_KEPT * PKT_LEN);

	deadline = rte_rdtsc() + DRAIN_TIMEOUT_S * rte_get_tsc_hz();
	while (nb_out < BN_KEPT && rte_rdtsc() < deadline) {
		uint16_t n = rte_eth_rx_burst(env.port, 0, pkts, RX_BURST);

		for (i = 0; i < n; i++, nb_out++) {
			const uint8_t *data = rte_pktmbuf_mtod(pkts[i], const uint8_t *);

			CHECK_EQ_U64(pkts[i]->hash.usr, nb_out);
			CHECK_EQ_U64(pkt_bit_errors(data, nb_out), 0);
			rte_pktmbuf_free(pkts[i]);
		}
	}
	CHECK_EQ_U64(nb_out, BN_KEPT);
	CHECK_EQ_U64(xstat_value(env.port, XSTAT_PREFIX "bn_bytes"), BN_KEPT * PKT_LEN);
	CHECK_EQ_U64(xstat_value(env.port, XSTAT_PREFIX "bn_depth"), 0);
	CHECK_EQ_U64(xstat_value(env.port, XSTAT_PREFIX "bn_depth_max"), BN_KEPT * PKT_LEN);
	CHECK_EQ_U64(xstat_value(env.port, XSTAT_PREFIX "delivered"), BN_KEPT);
	CHECK(rte_eth_xstats_reset(env.port) == 0);
	CHECK_EQ_U64(xstat_value(env.port, XSTAT_PREFIX "bn_depth_max"), 0);

	/* Queued at the uninit: freed with the port (env_uninit counts the mbufs). */
	send_only(&env, 0, TX_BURST);
	CHECK_EQ_U64(rte_eth_rx_burst(env.port, 0, pkts, TX_BURST), 0);
	CHECK_EQ_U64(xstat_value(env.port, XSTAT_PREFIX "bn_held"), TX_BURST);
	env_close(&env);
}

/* rte_vdev_init(args) fails, logs a message naming key, and leaves nothing behind. */
static void
check_refused(struct vdev_env *env, const char *args, const char *key)
{
	uint16_t before = rte_eth_dev_count_total(), port;
	uint64_t blocks = heap_blocks();
	FILE *old = rte_log_get_stream();
	char *log_buf = NULL;
	size_t log_len = 0;
	FILE *log = open_memstream(&log_buf, &log_len);
	int ret;

	droce_test_ctx("devargs '%s'", args);
	CHECK(log != NULL);
	CHECK(rte_openlog_stream(log) == 0);
	ret = rte_vdev_init(env->name, args);
	rte_openlog_stream(old == stderr ? NULL : old);
	fclose(log);
	droce_test_ctx("devargs '%s', log '%s'", args, log_buf);
	CHECK(ret < 0);
	CHECK(strstr(log_buf, key) != NULL);
	free(log_buf);
	CHECK(rte_eth_dev_get_port_by_name(env->name, &port) != 0);
	CHECK_EQ_U64(rte_eth_dev_count_total(), before);
	CHECK_EQ_U64(heap_blocks(), blocks);
	droce_test_ctx("%s", "");
}

DROCE_TEST(bad_devargs_are_refused)
{
	struct vdev_env env, other;
	char args[ARGS_LEN];

	env_ring(&env, 1);
	check_refused(&env, "", "'port'");
	check_refused(&env, "drop=1000", "'port'");
	check_refused(&env, "port=no_such_port", "'port'");
	snprintf(args, sizeof(args), "port=%s,drop=1000001", env.ring_name);
	check_refused(&env, args, "'drop'");
	snprintf(args, sizeof(args), "port=%s,delay_us=abc", env.ring_name);
	check_refused(&env, args, "'delay_us'");
	snprintf(args, sizeof(args), "port=%s,bogus=1", env.ring_name);
	check_refused(&env, args, "bogus");
	snprintf(args, sizeof(args), "port=%s,seed=1,seed=2", env.ring_name);
	check_refused(&env, args, "'seed'");
	snprintf(args, sizeof(args), "port=%s,tx_drop=1000001", env.ring_name);
	check_refused(&env, args, "'tx_drop'");
	snprintf(args, sizeof(args), "port=%s,rate=100,ecn_min=8000,ecn_max=8000",
		 env.ring_name);
	check_refused(&env, args, "'ecn_min'");
	snprintf(args, sizeof(args), "port=%s,rate=100,buffer=100", env.ring_name);
	check_refused(&env, args, "'buffer'");
	/* A port is wrapped once: a second net_fault cannot take it. */
	CHECK(env_vdev_init(&env, "") == 0);
	env_ring(&other, 1);
	snprintf(args, sizeof(args), "port=%s", env.ring_name);
	check_refused(&other, args, "owned already");
	/* Nothing was configured: removing the vdevs frees everything all the same. */
	CHECK(rte_eth_dev_get_port_by_name(env.name, &env.port) == 0);
	CHECK(rte_vdev_uninit(env.name) == 0);
	CHECK(rte_eth_dev_get_port_by_name(env.ring_name, &env.port) != 0);
	CHECK(rte_eth_dev_close(other.ring_port) == 0);
	env_free(&env);
	env_free(&other);
}

DROCE_TEST(uninit_frees_held_packets_and_the_wrapped_port)
{
	struct rte_mbuf *pkts[TX_BURST];
	struct droce_fault_stats st;
	struct vdev_env env;
	uint64_t blocks;
	uint16_t before;
	uint32_t i;

	env_pool(&env, 1);
	blocks = heap_blocks();
	before = rte_eth_dev_count_total();
	env_ring_port(&env);
	CHECK(env_vdev_init(&env, "reorder=1000000") == 0);
	CHECK_EQ_U64(rte_eth_dev_count_total(), before + 2);
	env_start(&env);
	CHECK(rte_pktmbuf_alloc_bulk(env.mp, pkts, TX_BURST) == 0);
	for (i = 0; i < TX_BURST; i++)
		pkt_fill((uint8_t *)rte_pktmbuf_append(pkts[i], PKT_LEN), i);
	CHECK_EQ_U64(rte_eth_tx_burst(env.port, 0, pkts, TX_BURST), TX_BURST);
	/* Every packet is held: the application gets none. */
	CHECK_EQ_U64(rte_eth_rx_burst(env.port, 0, pkts, TX_BURST), 0);
	CHECK(droce_fault_stats_get(droce_fault_from_port(env.port), -1, &st) == 0);
	CHECK_EQ_U64(st.held, TX_BURST);
	CHECK_EQ_U64(rte_mempool_avail_count(env.mp), NB_MBUFS - TX_BURST);
	/* The held mbufs are back, both ports gone, and all they allocated freed. */
	env_uninit(&env);
	CHECK_EQ_U64(rte_eth_dev_count_total(), before);
	CHECK_EQ_U64(heap_blocks(), blocks);
	env_free(&env);
}
