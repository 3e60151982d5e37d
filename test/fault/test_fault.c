/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * drivers/net/fault over a net_ring loopback port (one ring: what the port sends comes
 * back on its rx queue). Each case sends numbered packets, receives what the fault layer
 * delivers, and checks the delivered packets against the driver's counters exactly and
 * the counters against binomial bounds of the configured rate.
 */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "droce_fault.h"
#include "droce_test.h"
#include "fault_check.h"
#include "test_eal.h"

#define PKT_LEN 64u
/* The sequence number is written three times, so a flipped bit in one copy is outvoted. */
#define SEQ_COPIES 3u
#define PAYLOAD_OFF (SEQ_COPIES * sizeof(uint32_t))
#define NB_MBUFS 8191u
#define RING_SIZE 1024u
#define TX_BURST 32u
#define RX_BURST 64u
#define NB_PKTS 10000u
/* Fewer for delay: 10% of them held at once must stay far below the hold buffer (1024). */
#define NB_PKTS_DELAY 4000u
#define RATE_10PCT 100000u
#define DELAY_US 50000u
#define DRAIN_TIMEOUT_S 5u
#define TEST_US_PER_S 1000000u

#define MAX_QUEUES 2u

struct fault_env {
	struct rte_mempool *mp;
	struct rte_ring *ring[MAX_QUEUES];
	uint16_t nb_queues;
	uint16_t port_id;
	char port_name[RTE_ETH_NAME_MAX_LEN];
};

struct fault_run {
	struct droce_fault_stats st;
	uint32_t nb_out;
	/* What the application received, in order, and when (TSC). */
	uint8_t (*out)[PKT_LEN];
	uint64_t *out_tsc;
	/* When each sequence number was sent (TSC). */
	uint64_t *tx_tsc;
};

static unsigned int env_count;

/* A net_ring port with nb_queues queues, queue i sending into and receiving from ring i. */
static void
env_open_queues(struct fault_env *env, uint16_t nb_queues)
{
	struct rte_eth_conf conf = { 0 };
	char name[RTE_RING_NAMESIZE];
	uint16_t q;
	int ret;

	test_eal_init();
	env->nb_queues = nb_queues;
	snprintf(name, sizeof(name), "fault_t%u", ++env_count);
	env->mp = rte_pktmbuf_pool_create(name, NB_MBUFS, 0, 0,
					  RTE_PKTMBUF_HEADROOM + PKT_LEN, SOCKET_ID_ANY);
	CHECK(env->mp != NULL);
	for (q = 0; q < nb_queues; q++) {
		char rname[RTE_RING_NAMESIZE];

		snprintf(rname, sizeof(rname), "fault_t%u_q%u", env_count, q);
		env->ring[q] = rte_ring_create(rname, RING_SIZE, SOCKET_ID_ANY,
					       RING_F_SP_ENQ | RING_F_SC_DEQ);
		CHECK(env->ring[q] != NULL);
	}
	ret = rte_eth_from_rings(name, env->ring, nb_queues, env->ring, nb_queues,
				 SOCKET_ID_ANY);
	CHECK(ret >= 0);
	env->port_id = (uint16_t)ret;
	CHECK(rte_eth_dev_get_name_by_port(env->port_id, env->port_name) == 0);
	CHECK(rte_eth_dev_configure(env->port_id, nb_queues, nb_queues, &conf) == 0);
	for (q = 0; q < nb_queues; q++) {
		CHECK(rte_eth_rx_queue_setup(env->port_id, q, RING_SIZE, SOCKET_ID_ANY, NULL,
					     env->mp) == 0);
		CHECK(rte_eth_tx_queue_setup(env->port_id, q, RING_SIZE, SOCKET_ID_ANY,
					     NULL) == 0);
	}
}

static void
env_open(struct fault_env *env)
{
	env_open_queues(env, 1);
}

/* Stops and closes the port; then every mbuf must be back in the pool (no leak). */
static void
env_close(struct fault_env *env)
{
	uint16_t q;

	CHECK(rte_eth_dev_stop(env->port_id) == 0);
	CHECK(rte_eth_dev_close(env->port_id) == 0);
	CHECK_EQ_U64(rte_mempool_avail_count(env->mp), NB_MBUFS);
	for (q = 0; q < env->nb_queues; q++)
		rte_ring_free(env->ring[q]);
	rte_mempool_free(env->mp);
}

static void
pkt_fill(uint8_t *data, uint32_t seq)
{
	uint32_t i;

	for (i = 0; i < SEQ_COPIES; i++)
		memcpy(data + i * sizeof(seq), &seq, sizeof(seq));
	for (i = PAYLOAD_OFF; i < PKT_LEN; i++)
		data[i] = fault_payload_byte(seq, i);
}

/* The sequence number of a delivered packet: the majority of its three copies. */
static uint32_t
pkt_seq(const uint8_t *data)
{
	uint32_t s[SEQ_COPIES];
	uint32_t i;

	for (i = 0; i < SEQ_COPIES; i++)
		memcpy(&s[i], data + i * sizeof(s[0]), sizeof(s[0]));
	return s[0] == s[1] || s[0] == s[2] ? s[0] : s[1];
}

/* Bits in which a delivered packet differs from the one sent with its number. */
static uint32_t
pkt_bit_errors(const uint8_t *data)
{
	uint8_t want[PKT_LEN];
	uint32_t i, bits = 0;

	pkt_fill(want, pkt_seq(data));
	for (i = 0; i < PKT_LEN; i++)
		bits += (uint32_t)__builtin_popcount(want[i] ^ data[i]);
	return bits;
}

static void
rx_all(struct fault_env *env, uint16_t queue, struct fault_run *run, uint32_t cap)
{
	struct rte_mbuf *pkts[RX_BURST];
	uint16_t n, i;
	uint64_t now;

	n = rte_eth_rx_burst(env->port_id, queue, pkts, RX_BURST);
	now = rte_rdtsc();
	for (i = 0; i < n; i++) {
		CHECK(run->nb_out < cap);
		CHECK_EQ_U64(pkts[i]->pkt_len, PKT_LEN);
		memcpy(run->out[run->nb_out], rte_pktmbuf_mtod(pkts[i], uint8_t *), PKT_LEN);
		run->out_tsc[run->nb_out++] = now;
		rte_pktmbuf_free(pkts[i]);
	}
}

/*
 * Sends nb packets through one queue of the port, receiving after each burst, then polls
 * until nothing is held on that queue; reads its counters.
 */
static void
queue_traffic(struct fault_env *env, struct droce_fault *f, uint16_t queue, uint32_t nb,
	      struct fault_run *run)
{
	uint32_t cap = 2 * nb, seq = 0, i;
	uint64_t deadline;

	memset(run, 0, sizeof(*run));
	run->out = droce_test_malloc(cap * sizeof(run->out[0]));
	run->out_tsc = droce_test_malloc(cap * sizeof(run->out_tsc[0]));
	run->tx_tsc = droce_test_malloc(nb * sizeof(run->tx_tsc[0]));
	while (seq < nb) {
		struct rte_mbuf *pkts[TX_BURST];
		uint32_t burst = RTE_MIN(TX_BURST, nb - seq);

		CHECK(rte_pktmbuf_alloc_bulk(env->mp, pkts, burst) == 0);
		for (i = 0; i < burst; i++) {
			pkt_fill((uint8_t *)rte_pktmbuf_append(pkts[i], PKT_LEN), seq + i);
			run->tx_tsc[seq + i] = rte_rdtsc();
		}
		CHECK_EQ_U64(rte_eth_tx_burst(env->port_id, queue, pkts, (uint16_t)burst),
			     burst);
		seq += burst;
		rx_all(env, queue, run, cap);
	}
	deadline = rte_rdtsc() + DRAIN_TIMEOUT_S * rte_get_tsc_hz();
	do {
		rx_all(env, queue, run, cap);
		CHECK(droce_fault_stats_get(f, queue, &run->st) == 0);
	} while (run->st.held > 0 && rte_rdtsc() < deadline);
	CHECK_EQ_U64(run->st.held, 0);
	CHECK_EQ_U64(run->st.received, nb);
	CHECK_EQ_U64(run->st.delivered, run->nb_out);
	CHECK_EQ_U64(run->st.overflowed, 0);
	CHECK_EQ_U64(run->st.dup_failed, 0);
	/* Every packet is accounted for. */
	CHECK_EQ_U64(run->st.received + run->st.duplicated,
		     run->st.delivered + run->st.dropped + run->st.overflowed + run->st.held);
}

/* Attaches "port=NAME," + args to env's port and starts it. */
static struct droce_fault *
env_attach(struct fault_env *env, const char *args)
{
	char full[256];
	struct droce_fault *f;

	snprintf(full, sizeof(full), "port=%s%s%s", env->port_name, args[0] ? "," : "",
		 args);
	f = droce_fault_attach(full);
	CHECK(f != NULL);
	CHECK(rte_eth_dev_start(env->port_id) == 0);
	return f;
}

/* queue_traffic on a fresh one-queue port; then detaches and checks for leaks. */
static void
run_traffic(const char *args, uint32_t nb, struct fault_run *run)
{
	struct fault_env env;
	struct droce_fault *f;

	env_open(&env);
	f = env_attach(&env, args);
	queue_traffic(&env, f, 0, nb, run);
	droce_fault_detach(f);
	env_close(&env);
}

/* Per sequence number, how many times it was delivered. */
static uint8_t *
count_seqs(const struct fault_run *run, uint32_t nb)
{
	uint8_t *times = droce_test_malloc(nb);
	uint32_t i;

	memset(times, 0, nb);
	for (i = 0; i < run->nb_out; i++) {
		uint32_t seq = pkt_seq(run->out[i]);

		CHECK(seq < nb);
		times[seq]++;
	}
	return times;
}

DROCE_TEST(no_faults_passes_all_in_order)
{
	struct fault_run run;
	uint32_t i;

	run_traffic("seed=5", NB_PKTS, &run);
	CHECK_EQ_U64(run.nb_out, NB_PKTS);
	for (i = 0; i < run.nb_out; i++) {
		CHECK_EQ_U64(pkt_seq(run.out[i]), i);
		CHECK_EQ_U64(pkt_bit_errors(run.out[i]), 0);
	}
	CHECK_EQ_U64(run.st.dropped + run.st.duplicated + run.st.corrupted + run.st.delayed +
		     run.st.reordered, 0);
}

DROCE_TEST(drop_loses_exactly_the_counted_packets)
{
	struct fault_run run;
	uint32_t i, prev = 0;

	run_traffic("drop=100000", NB_PKTS, &run);
	fault_check_binomial(run.st.dropped, NB_PKTS, RATE_10PCT);
	CHECK_EQ_U64(run.nb_out, NB_PKTS - run.st.dropped);
	for (i = 0; i < run.nb_out; i++) {
		uint32_t seq = pkt_seq(run.out[i]);

		/* In order, each once, intact: only drops happened. */
		CHECK(i == 0 || seq > prev);
		CHECK_EQ_U64(pkt_bit_errors(run.out[i]), 0);
		prev = seq;
	}
	CHECK_EQ_U64(run.st.duplicated + run.st.corrupted + run.st.delayed + run.st.reordered,
		     0);
}

DROCE_TEST(dup_delivers_exact_copies)
{
	struct fault_run run;
	uint32_t i, seq = 0, copies = 0;

	run_traffic("dup=100000", NB_PKTS, &run);
	fault_check_binomial(run.st.duplicated, NB_PKTS, RATE_10PCT);
	CHECK_EQ_U64(run.nb_out, NB_PKTS + run.st.duplicated);
	/* Each packet in order, its copy (if any) right after it, byte for byte. */
	for (i = 0; i < run.nb_out; i++, seq++) {
		droce_test_ctx("delivered %u", i);
		CHECK_EQ_U64(pkt_seq(run.out[i]), seq);
		CHECK_EQ_U64(pkt_bit_errors(run.out[i]), 0);
		if (i + 1 < run.nb_out && pkt_seq(run.out[i + 1]) == seq) {
			CHECK_MEM(run.out[i + 1], run.out[i], PKT_LEN);
			copies++;
			i++;
		}
	}
	CHECK_EQ_U64(seq, NB_PKTS);
	CHECK_EQ_U64(copies, run.st.duplicated);
}

DROCE_TEST(corrupt_flips_one_bit_in_the_counted_packets)
{
	struct fault_run run;
	uint32_t i, corrupted = 0;

	run_traffic("corrupt=100000,seed=99", NB_PKTS, &run);
	fault_check_binomial(run.st.corrupted, NB_PKTS, RATE_10PCT);
	CHECK_EQ_U64(run.nb_out, NB_PKTS);
	for (i = 0; i < run.nb_out; i++) {
		uint32_t bits = pkt_bit_errors(run.out[i]);

		droce_test_ctx("delivered %u", i);
		CHECK_EQ_U64(pkt_seq(run.out[i]), i);
		CHECK(bits <= 1);
		corrupted += bits;
	}
	CHECK_EQ_U64(corrupted, run.st.corrupted);
}

/* Packets delivered after one with a higher number: those held back. */
static uint32_t
count_overtaken(const struct fault_run *run)
{
	uint32_t i, max = 0, overtaken = 0;

	for (i = 0; i < run->nb_out; i++) {
		uint32_t seq = pkt_seq(run->out[i]);

		if (i > 0 && seq < max)
			overtaken++;
		max = RTE_MAX(max, seq);
	}
	return overtaken;
}

DROCE_TEST(reorder_delivers_a_permutation)
{
	struct fault_run run;
	uint8_t *times;
	uint32_t i, overtaken;

	run_traffic("reorder=100000,seed=3", NB_PKTS, &run);
	fault_check_binomial(run.st.reordered, NB_PKTS, RATE_10PCT);
	CHECK_EQ_U64(run.nb_out, NB_PKTS);
	times = count_seqs(&run, NB_PKTS);
	for (i = 0; i < NB_PKTS; i++) {
		CHECK_EQ_U64(times[i], 1);
		CHECK_EQ_U64(pkt_bit_errors(run.out[i]), 0);
	}
	/*
	 * A held packet leaves after the next burst's packets, so it is overtaken unless it
	 * was held in the last burst behind only held packets; an unheld one never is.
	 */
	overtaken = count_overtaken(&run);
	CHECK(overtaken <= run.st.reordered);
	CHECK(overtaken + TX_BURST >= run.st.reordered);
}

DROCE_TEST(delay_holds_at_least_delay_us_then_delivers_all)
{
	struct fault_run run;
	uint64_t min_delay = (uint64_t)DELAY_US * rte_get_tsc_hz() / TEST_US_PER_S;
	uint8_t *times;
	uint32_t i, late = 0;
	char args[64];

	test_eal_init();
	snprintf(args, sizeof(args), "delay=%u,delay_us=%u,seed=11", RATE_10PCT, DELAY_US);
	run_traffic(args, NB_PKTS_DELAY, &run);
	fault_check_binomial(run.st.delayed, NB_PKTS_DELAY, RATE_10PCT);
	CHECK_EQ_U64(run.nb_out, NB_PKTS_DELAY);
	times = count_seqs(&run, NB_PKTS_DELAY);
	for (i = 0; i < run.nb_out; i++) {
		uint32_t seq = pkt_seq(run.out[i]);

		CHECK_EQ_U64(times[seq], 1);
		CHECK_EQ_U64(pkt_bit_errors(run.out[i]), 0);
		/* Unheld packets come back in the same loop turn, microseconds after. */
		if (run.out_tsc[i] - run.tx_tsc[seq] >= min_delay)
			late++;
	}
	CHECK_EQ_U64(late, run.st.delayed);
}

DROCE_TEST(all_faults_at_once_add_up)
{
	struct fault_run run;
	uint8_t *times;
	uint32_t i, lost = 0, twice = 0, corrupted = 0;

	run_traffic("drop=100000,dup=100000,corrupt=100000,delay=100000,delay_us=1000,"
		    "reorder=100000,seed=42", NB_PKTS, &run);
	fault_check_binomial(run.st.dropped, NB_PKTS, RATE_10PCT);
	/* Dropped packets are neither duplicated, corrupted, delayed nor reordered. */
	fault_check_binomial(run.st.duplicated, NB_PKTS - run.st.dropped, RATE_10PCT);
	fault_check_binomial(run.st.corrupted, NB_PKTS - run.st.dropped, RATE_10PCT);
	fault_check_binomial(run.st.delayed, NB_PKTS - run.st.dropped, RATE_10PCT);
	fault_check_binomial(run.st.reordered, NB_PKTS - run.st.dropped - run.st.delayed,
		       RATE_10PCT);
	CHECK_EQ_U64(run.nb_out, NB_PKTS - run.st.dropped + run.st.duplicated);
	times = count_seqs(&run, NB_PKTS);
	for (i = 0; i < NB_PKTS; i++) {
		CHECK(times[i] <= 2);
		lost += times[i] == 0;
		twice += times[i] == 2;
	}
	for (i = 0; i < run.nb_out; i++) {
		uint32_t bits = pkt_bit_errors(run.out[i]);

		CHECK(bits <= 1);
		corrupted += bits;
	}
	CHECK_EQ_U64(lost, run.st.dropped);
	CHECK_EQ_U64(twice, run.st.duplicated);
	CHECK_EQ_U64(corrupted, run.st.corrupted);
}

static const char *const mixed = "drop=100000,dup=100000,corrupt=100000,reorder=100000";

DROCE_TEST(same_seed_same_faults_other_seed_other_faults)
{
	struct fault_run a, b, c;
	char args[128];

	snprintf(args, sizeof(args), "%s,seed=7", mixed);
	run_traffic(args, NB_PKTS, &a);
	run_traffic(args, NB_PKTS, &b);
	snprintf(args, sizeof(args), "%s,seed=8", mixed);
	run_traffic(args, NB_PKTS, &c);
	/* Identical packets in identical order, counters identical. */
	CHECK_EQ_U64(a.nb_out, b.nb_out);
	CHECK_MEM(a.out, b.out, a.nb_out * sizeof(a.out[0]));
	CHECK_MEM(&a.st, &b.st, sizeof(a.st));
	CHECK(c.nb_out != a.nb_out ||
	      memcmp(a.out, c.out, a.nb_out * sizeof(a.out[0])) != 0);
}

DROCE_TEST(queues_have_own_streams_and_counters)
{
	struct fault_run run[MAX_QUEUES];
	struct droce_fault_stats total;
	struct fault_env env;
	struct droce_fault *f;

	env_open_queues(&env, MAX_QUEUES);
	f = env_attach(&env, "drop=100000");
	queue_traffic(&env, f, 0, NB_PKTS, &run[0]);
	queue_traffic(&env, f, 1, NB_PKTS, &run[1]);
	/* Same traffic, same seed, other queue: other drops. */
	CHECK(run[0].nb_out != run[1].nb_out ||
	      memcmp(run[0].out, run[1].out, run[0].nb_out * sizeof(run[0].out[0])) != 0);
	CHECK(droce_fault_stats_get(f, -1, &total) == 0);
	CHECK_EQ_U64(total.received, 2 * NB_PKTS);
	CHECK_EQ_U64(total.dropped, run[0].st.dropped + run[1].st.dropped);
	CHECK_EQ_U64(total.delivered, run[0].nb_out + run[1].nb_out);
	CHECK(droce_fault_stats_get(f, MAX_QUEUES, &total) == -EINVAL);
	CHECK(droce_fault_stats_get(f, -2, &total) == -EINVAL);
	droce_fault_detach(f);
	env_close(&env);
}

DROCE_TEST(detach_frees_held_packets)
{
	struct fault_env env;
	struct rte_mbuf *pkts[TX_BURST];
	struct droce_fault_stats st;
	struct droce_fault *f;
	char args[128];
	uint32_t i;

	env_open(&env);
	snprintf(args, sizeof(args), "port=%s,reorder=1000000", env.port_name);
	f = droce_fault_attach(args);
	CHECK(f != NULL);
	CHECK(rte_eth_dev_start(env.port_id) == 0);
	CHECK(rte_pktmbuf_alloc_bulk(env.mp, pkts, TX_BURST) == 0);
	for (i = 0; i < TX_BURST; i++)
		pkt_fill((uint8_t *)rte_pktmbuf_append(pkts[i], PKT_LEN), i);
	CHECK_EQ_U64(rte_eth_tx_burst(env.port_id, 0, pkts, TX_BURST), TX_BURST);
	/* Every packet is held: the burst the application sees is empty. */
	CHECK_EQ_U64(rte_eth_rx_burst(env.port_id, 0, pkts, TX_BURST), 0);
	CHECK(droce_fault_stats_get(f, -1, &st) == 0);
	CHECK_EQ_U64(st.held, TX_BURST);
	CHECK_EQ_U64(st.reordered, TX_BURST);
	CHECK_EQ_U64(rte_mempool_avail_count(env.mp), NB_MBUFS - TX_BURST);
	droce_fault_detach(f);
	env_close(&env);
}

DROCE_TEST(bad_args_are_refused_naming_the_key)
{
	struct fault_env env;
	char args[128];

	env_open(&env);
	fault_check_refused(NULL, EINVAL, "'port'");
	fault_check_refused("", EINVAL, "'port'");
	fault_check_refused("drop=10", EINVAL, "'port'");
	fault_check_refused("port=no_such_port", ENODEV, "'port'");
	snprintf(args, sizeof(args), "port=%s,drop=1000001", env.port_name);
	fault_check_refused(args, EINVAL, "'drop'");
	snprintf(args, sizeof(args), "port=%s,dup=abc", env.port_name);
	fault_check_refused(args, EINVAL, "'dup'");
	snprintf(args, sizeof(args), "port=%s,corrupt=-1", env.port_name);
	fault_check_refused(args, EINVAL, "'corrupt'");
	snprintf(args, sizeof(args), "port=%s,delay_us=99999999999", env.port_name);
	fault_check_refused(args, EINVAL, "'delay_us'");
	snprintf(args, sizeof(args), "port=%s,seed=1,seed=2", env.port_name);
	fault_check_refused(args, EINVAL, "'seed'");
	snprintf(args, sizeof(args), "port=%s,reorder=", env.port_name);
	fault_check_refused(args, EINVAL, "'reorder'");
	snprintf(args, sizeof(args), "port=%s,bogus=1", env.port_name);
	fault_check_refused(args, EINVAL, "bogus");
	/* An rx callback cannot fault transmission: that is the vdev's. */
	snprintf(args, sizeof(args), "port=%s,tx_drop=1000", env.port_name);
	fault_check_refused(args, EINVAL, "'tx_drop'");
	CHECK(rte_eth_dev_start(env.port_id) == 0);
	env_close(&env);
}
