/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The bottleneck queue of drivers/net/fault (fault_bn.c) through the library form, over a
 * net_ring loopback port (what the port sends comes back on its rx queue): the drain rate
 * measured with the TSC, no credit banked by an idle link, tail drop exactly past the
 * buffer, ECN marking by depth (none at or below ecn_min, all from ecn_max, the profile's
 * rate in between, the same marks for the same seed) on IPv4, IPv6 and 802.1Q frames with
 * valid checksums, small and empty polls, the faults after it, and bad arguments.
 *
 * To make the depth each packet sees exact, most cases put all their packets in the ring
 * first and let one rx burst take them: they reach the bottleneck at one instant, before
 * any has left. The departure times are checked to the cycle on a queue of the engine
 * alone (fault_loc.h), its bursts run with a clock the test sets.
 */

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "droce_fault.h"
#include "droce_test.h"
#include "fault_check.h"
#include "fault_loc.h"
#include "test_eal.h"

#define NB_MBUFS 8191u
/* The ring holds every packet of a case sent at once. */
#define RING_SIZE 8192u
#define MAX_FRAME 2048u
#define TX_BURST 32u
#define RX_BURST 32u
#define ARGS_LEN 256u
#define DRAIN_TIMEOUT_S 5u
#define BITS_PER_BYTE 8u
#define BITS_PER_MBIT 1000000u

/* Drain rate: 1.5 MB at 200 Mb/s, 60 ms. */
#define RATE_MBPS 200u
#define RATE_FRAME 1000u
#define RATE_PKTS 1500u
/* Measured rate at least this share of the configured one (percent)... */
#define RATE_MIN_PCT 85u
/* ...in one of this many tries: a descheduled test measures its own pause, not the link. */
#define RATE_TRIES 3u
#define IDLE_PKTS 50u
#define IDLE_US 20000u

/* Tail drop: frames of 60..1514 bytes into a 16 KiB buffer, far past it. */
#define DROP_BUFFER 16384u
#define DROP_PKTS 64u
/* Or frames of which this many fill it to the byte. */
#define DROP_FIT 32u
#define MIN_FRAME (RTE_ETHER_MIN_LEN - RTE_ETHER_CRC_LEN)
#define MAX_STD_FRAME (RTE_ETHER_MAX_LEN - RTE_ETHER_CRC_LEN)

/*
 * ECN by band: 500-byte frames of every kind, the depth rising 500 B a packet; ecn_min and
 * ecn_max the depths that two ECN-capable packets see, so that both bounds are tested.
 */
#define BAND_FRAME 500u
#define BAND_ROUNDS 8u
#define BAND_MIN_PKT 16u
#define BAND_MAX_PKT 36u
/* ECN middle band: 4000 frames of 100 B, all in (ecn_min, ecn_max) but the first ones. */
#define MID_FRAME 100u
#define MID_PKTS 4000u
#define MID_MIN 20000u
#define MID_MAX 420000u
#define MID_PMAX 500000u
#define MID_RATE_MBPS 10000u
/* Bounds of a sum of Bernoulli draws: mean +- 6 standard deviations. */
#define MARK_SIGMAS 6.0

#define DSCP 26u
#define DSCP_SHIFT 2u
#define VLAN_TCI 0x6064u
#define PKT_TTL 64u
#define IPV4_VHL 0x45u
#define IPV6_VERSION 6u
#define IPV6_VERSION_SHIFT 28u
#define ECN_NOT_ECT 0u
#define ECN_ECT1 1u
#define ECN_ECT0 2u
#define ECN_CE 3u
#define CSUM_OK 0xffffu

struct bn_env {
	struct rte_mempool *mp;
	struct rte_ring *ring;
	struct droce_fault *f;
	uint16_t port_id;
	char port_name[RTE_ETH_NAME_MAX_LEN];
};

enum pkt_kind {
	PKT_IPV4,
	PKT_IPV6,
	PKT_VLAN_IPV4,
	PKT_VLAN_IPV6,
	PKT_ARP,		/* not IP: never marked */
	PKT_SHORT_IPV4,		/* ethertype IPv4, the header cut short: never marked */
	PKT_SPLIT_IPV4,		/* the IPv4 header in the 2nd segment: never marked */
};

struct pkt_spec {
	enum pkt_kind kind;
	uint8_t ecn;
	uint16_t len;
};

/* What came out of the port, in order. */
struct bn_run {
	struct droce_fault_stats st;
	uint32_t nb_out;
	uint32_t *seq;
	uint64_t *tsc;
	bool *marked;
};

static unsigned int env_count;

/* A one-queue net_ring port, configured, with the bottleneck args attached, started. */
static void
env_open(struct bn_env *env, const char *args)
{
	struct rte_eth_conf conf = { 0 };
	char name[RTE_RING_NAMESIZE], full[ARGS_LEN];
	int ret;

	test_eal_init();
	snprintf(name, sizeof(name), "bn_t%u", ++env_count);
	env->mp = rte_pktmbuf_pool_create(name, NB_MBUFS, 0, 0,
					  RTE_PKTMBUF_HEADROOM + MAX_FRAME, SOCKET_ID_ANY);
	CHECK(env->mp != NULL);
	env->ring = rte_ring_create(name, RING_SIZE, SOCKET_ID_ANY,
				    RING_F_SP_ENQ | RING_F_SC_DEQ);
	CHECK(env->ring != NULL);
	ret = rte_eth_from_rings(name, &env->ring, 1, &env->ring, 1, SOCKET_ID_ANY);
	CHECK(ret >= 0);
	env->port_id = (uint16_t)ret;
	CHECK(rte_eth_dev_get_name_by_port(env->port_id, env->port_name) == 0);
	CHECK(rte_eth_dev_configure(env->port_id, 1, 1, &conf) == 0);
	CHECK(rte_eth_rx_queue_setup(env->port_id, 0, RING_SIZE, SOCKET_ID_ANY, NULL,
				     env->mp) == 0);
	CHECK(rte_eth_tx_queue_setup(env->port_id, 0, RING_SIZE, SOCKET_ID_ANY, NULL) == 0);
	snprintf(full, sizeof(full), "port=%s%s%s", env->port_name, args[0] ? "," : "", args);
	droce_test_ctx("args '%s'", full);
	env->f = droce_fault_attach(full);
	CHECK(env->f != NULL);
	droce_test_ctx("%s", "");
	CHECK(rte_eth_dev_start(env->port_id) == 0);
}

/* Detaches (freeing what is queued), closes; then every mbuf is back in the pool. */
static void
env_close(struct bn_env *env)
{
	CHECK(rte_eth_dev_stop(env->port_id) == 0);
	droce_fault_detach(env->f);
	CHECK(rte_eth_dev_close(env->port_id) == 0);
	CHECK_EQ_U64(rte_mempool_avail_count(env->mp), NB_MBUFS);
	rte_ring_free(env->ring);
	rte_mempool_free(env->mp);
}

static struct droce_fault_stats
env_stats(const struct bn_env *env)
{
	struct droce_fault_stats st;

	CHECK(droce_fault_stats_get(env->f, -1, &st) == 0);
	return st;
}

static uint32_t
pkt_l2_len(enum pkt_kind kind)
{
	bool vlan = kind == PKT_VLAN_IPV4 || kind == PKT_VLAN_IPV6;

	return sizeof(struct rte_ether_hdr) + (vlan ? sizeof(struct rte_vlan_hdr) : 0);
}

static bool
pkt_is_v6(enum pkt_kind kind)
{
	return kind == PKT_IPV6 || kind == PKT_VLAN_IPV6;
}

/* The frames the bottleneck may mark: whole IP headers in the first segment, ECT. */
static bool
pkt_ect(const struct pkt_spec *s)
{
	return (s->kind == PKT_IPV4 || s->kind == PKT_IPV6 || s->kind == PKT_VLAN_IPV4 ||
		s->kind == PKT_VLAN_IPV6) && (s->ecn == ECN_ECT0 || s->ecn == ECN_ECT1);
}

/*
 * The bytes of frame seq as sent, or (ce) as it is once marked: ECN field CE, all else the
 * same, the IPv4 checksum computed afresh.
 */
static void
pkt_bytes(uint8_t *buf, const struct pkt_spec *s, uint32_t seq, bool ce)
{
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)buf;
	uint32_t l2 = pkt_l2_len(s->kind), l3 = s->len - l2, i;
	uint8_t ecn = ce ? ECN_CE : s->ecn;
	uint16_t ip_type;

	for (i = 0; i < MAX_FRAME; i++)
		buf[i] = fault_payload_byte(seq, i);
	ip_type = pkt_is_v6(s->kind) ? RTE_ETHER_TYPE_IPV6 : RTE_ETHER_TYPE_IPV4;
	memset(&eth->dst_addr, 0x02, sizeof(eth->dst_addr));
	memset(&eth->src_addr, 0x04, sizeof(eth->src_addr));
	eth->ether_type = rte_cpu_to_be_16(s->kind == PKT_ARP ? RTE_ETHER_TYPE_ARP : ip_type);
	if (s->kind == PKT_VLAN_IPV4 || s->kind == PKT_VLAN_IPV6) {
		struct rte_vlan_hdr *vlan = (struct rte_vlan_hdr *)(eth + 1);

		eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_VLAN);
		vlan->vlan_tci = rte_cpu_to_be_16(VLAN_TCI);
		vlan->eth_proto = rte_cpu_to_be_16(ip_type);
	}
	if (s->kind == PKT_ARP)
		return;
	if (pkt_is_v6(s->kind)) {
		struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(buf + l2);

		uint32_t tc = DSCP << DSCP_SHIFT | ecn;

		ip->vtc_flow = rte_cpu_to_be_32(IPV6_VERSION << IPV6_VERSION_SHIFT |
						tc << RTE_IPV6_HDR_TC_SHIFT |
						(seq & RTE_IPV6_HDR_FL_MASK));
		ip->payload_len = rte_cpu_to_be_16((uint16_t)(l3 - sizeof(*ip)));
		ip->proto = IPPROTO_UDP;
		ip->hop_limits = PKT_TTL;
	} else {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(buf + l2);

		ip->version_ihl = IPV4_VHL;
		ip->type_of_service = (uint8_t)(DSCP << DSCP_SHIFT | ecn);
		ip->total_length = rte_cpu_to_be_16((uint16_t)l3);
		ip->packet_id = rte_cpu_to_be_16((uint16_t)seq);
		ip->fragment_offset = 0;
		ip->time_to_live = PKT_TTL;
		ip->next_proto_id = IPPROTO_UDP;
		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
	}
}

/* Frame seq of spec s as an mbuf (two segments for PKT_SPLIT_IPV4), numbered in hash.usr. */
static struct rte_mbuf *
pkt_mbuf(struct bn_env *env, const struct pkt_spec *s, uint32_t seq)
{
	uint32_t first = s->kind == PKT_SPLIT_IPV4 ? sizeof(struct rte_ether_hdr) : s->len;
	struct rte_mbuf *m = rte_pktmbuf_alloc(env->mp);
	uint8_t buf[MAX_FRAME];

	CHECK(m != NULL);
	pkt_bytes(buf, s, seq, false);
	memcpy(rte_pktmbuf_append(m, (uint16_t)first), buf, first);
	if (first < s->len) {
		struct rte_mbuf *tail = rte_pktmbuf_alloc(env->mp);

		CHECK(tail != NULL);
		memcpy(rte_pktmbuf_append(tail, (uint16_t)(s->len - first)), buf + first,
		       s->len - first);
		CHECK(rte_pktmbuf_chain(m, tail) == 0);
	}
	m->hash.usr = seq;
	return m;
}

/*
 * Whether the bottleneck marked frame m (spec s): unchanged, or, only if it is
 * ECN-capable, CE with everything else unchanged and a valid IPv4 header checksum.
 */
static bool
pkt_marked(const struct rte_mbuf *m, const struct pkt_spec *s)
{
	uint8_t got[MAX_FRAME], want[MAX_FRAME];
	uint32_t seq = m->hash.usr, l2 = pkt_l2_len(s->kind);
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(got + l2);
	const size_t csum_off = l2 + offsetof(struct rte_ipv4_hdr, hdr_checksum);
	const void *p;

	droce_test_ctx("packet %u kind %d ecn %u len %u", seq, s->kind, s->ecn, s->len);
	CHECK_EQ_U64(rte_pktmbuf_pkt_len(m), s->len);
	p = rte_pktmbuf_read(m, 0, s->len, got);
	CHECK(p != NULL);
	if (p != got)
		memcpy(got, p, s->len);
	pkt_bytes(want, s, seq, false);
	if (memcmp(got, want, s->len) == 0)
		return false;
	CHECK(pkt_ect(s));
	pkt_bytes(want, s, seq, true);
	if (pkt_is_v6(s->kind)) {
		CHECK_MEM(got, want, s->len);
	} else {
		/* Whichever of the checksum's two encodings of zero it holds, it is valid. */
		CHECK_MEM(got, want, csum_off);
		CHECK_MEM(got + csum_off + sizeof(ip->hdr_checksum),
			  want + csum_off + sizeof(ip->hdr_checksum),
			  s->len - csum_off - sizeof(ip->hdr_checksum));
		CHECK_EQ_U64(rte_raw_cksum(ip, sizeof(*ip)), CSUM_OK);
	}
	return true;
}

static void
run_alloc(struct bn_run *run, uint32_t cap)
{
	memset(run, 0, sizeof(*run));
	run->seq = droce_test_malloc(cap * sizeof(run->seq[0]));
	run->tsc = droce_test_malloc(cap * sizeof(run->tsc[0]));
	run->marked = droce_test_malloc(cap * sizeof(run->marked[0]));
}

/* One rx burst of at most burst packets; records each (its number, when, if marked). */
static uint16_t
bn_poll(struct bn_env *env, const struct pkt_spec *specs, uint32_t nb_specs,
	struct bn_run *run, uint32_t cap, uint16_t burst)
{
	struct rte_mbuf *pkts[RX_BURST];
	uint16_t n, i;
	uint64_t now;

	CHECK(burst <= RX_BURST);
	n = rte_eth_rx_burst(env->port_id, 0, pkts, burst);
	now = rte_rdtsc();
	CHECK(n <= burst);
	for (i = 0; i < n; i++) {
		uint32_t seq = pkts[i]->hash.usr;

		CHECK(run->nb_out < cap);
		CHECK(seq < nb_specs);
		run->seq[run->nb_out] = seq;
		run->tsc[run->nb_out] = now;
		run->marked[run->nb_out++] = pkt_marked(pkts[i], &specs[seq]);
		rte_pktmbuf_free(pkts[i]);
	}
	return n;
}

/* Polls until nothing is queued or held any more; reads the counters into run->st. */
static void
bn_drain(struct bn_env *env, const struct pkt_spec *specs, uint32_t nb_specs,
	 struct bn_run *run, uint32_t cap, uint16_t burst)
{
	uint64_t deadline = rte_rdtsc() + DRAIN_TIMEOUT_S * rte_get_tsc_hz();

	do {
		bn_poll(env, specs, nb_specs, run, cap, burst);
		run->st = env_stats(env);
	} while ((run->st.bn_held > 0 || run->st.held > 0) && rte_rdtsc() < deadline);
	CHECK_EQ_U64(run->st.bn_held + run->st.held, 0);
	CHECK_EQ_U64(run->st.bn_depth, 0);
	/* Every packet is accounted for. */
	CHECK_EQ_U64(run->st.received, run->st.bn_queued + run->st.bn_dropped);
	CHECK_EQ_U64(run->st.received + run->st.duplicated,
		     run->st.delivered + run->st.dropped + run->st.overflowed + run->st.held +
		     run->st.bn_dropped + run->st.bn_held);
}

/* Puts packets first..first + n - 1 of specs into the port's ring. */
static void
bn_send(struct bn_env *env, const struct pkt_spec *specs, uint32_t first, uint32_t n)
{
	struct rte_mbuf *pkts[TX_BURST];
	uint32_t done = 0, i;

	while (done < n) {
		uint32_t burst = RTE_MIN(TX_BURST, n - done);

		for (i = 0; i < burst; i++)
			pkts[i] = pkt_mbuf(env, &specs[first + done + i], first + done + i);
		CHECK_EQ_U64(rte_eth_tx_burst(env->port_id, 0, pkts, (uint16_t)burst), burst);
		done += burst;
	}
}

/*
 * Sends specs[0..n) and has one rx burst take them all: they reach the bottleneck at one
 * instant, and the depth each sees is the bytes accepted before it. The link is slow
 * enough that none leaves in that burst.
 */
static void
bn_send_at_once(struct bn_env *env, const struct pkt_spec *specs, uint32_t n)
{
	struct rte_mbuf **pkts = droce_test_malloc(n * sizeof(*pkts));

	bn_send(env, specs, 0, n);
	CHECK_EQ_U64(rte_ring_count(env->ring), n);
	CHECK_EQ_U64(rte_eth_rx_burst(env->port_id, 0, pkts, (uint16_t)n), 0);
	CHECK_EQ_U64(rte_ring_count(env->ring), 0);
	droce_test_free(pkts);
}

static struct pkt_spec *
specs_same(uint32_t n, enum pkt_kind kind, uint8_t ecn, uint16_t len)
{
	struct pkt_spec *specs = droce_test_malloc(n * sizeof(*specs));
	uint32_t i;

	for (i = 0; i < n; i++)
		specs[i] = (struct pkt_spec){ .kind = kind, .ecn = ecn, .len = len };
	return specs;
}

/* TSC cycles that bytes take at rate_mbps, rounded down, in 128 bits: never overflows. */
static uint64_t
link_tsc(uint64_t bytes, uint32_t rate_mbps)
{
	return (uint64_t)((unsigned __int128)bytes * BITS_PER_BYTE * rte_get_tsc_hz() /
			  ((unsigned __int128)rate_mbps * BITS_PER_MBIT));
}

/*
 * Sends packets first..first + n - 1 of specs faster than the link drains them, receiving
 * after each burst of sends, then until all are out. From the first send, t0, the packet
 * that is i-th out cannot be out before i + 1 frame times have passed.
 */
static uint64_t
bn_send_paced(struct bn_env *env, const struct pkt_spec *specs, uint32_t first, uint32_t n,
	      struct bn_run *run, uint32_t cap)
{
	uint32_t done = 0, out0 = run->nb_out, i;
	uint64_t t0 = rte_rdtsc(), deadline;

	while (done < n) {
		uint32_t burst = RTE_MIN(TX_BURST, n - done);

		bn_send(env, specs, first + done, burst);
		done += burst;
		bn_poll(env, specs, first + n, run, cap, RX_BURST);
	}
	deadline = rte_rdtsc() + DRAIN_TIMEOUT_S * rte_get_tsc_hz();
	while (run->nb_out < out0 + n && rte_rdtsc() < deadline)
		bn_poll(env, specs, first + n, run, cap, RX_BURST);
	CHECK_EQ_U64(run->nb_out, out0 + n);
	for (i = 0; i < n; i++) {
		uint64_t bytes = (uint64_t)(i + 1) * specs[first + i].len;

		droce_test_ctx("packet %u", first + i);
		/* In order, none lost, and never faster than the link. */
		CHECK_EQ_U64(run->seq[out0 + i], first + i);
		CHECK(run->tsc[out0 + i] - t0 >= link_tsc(bytes, RATE_MBPS));
	}
	droce_test_ctx("%s", "");
	return t0;
}

DROCE_TEST(drain_rate_is_the_configured_rate)
{
	struct pkt_spec *specs = specs_same(RATE_PKTS, PKT_IPV4, ECN_NOT_ECT, RATE_FRAME);
	uint64_t bytes = (uint64_t)RATE_PKTS * RATE_FRAME, elapsed = 0;
	char args[ARGS_LEN];
	uint32_t try;

	snprintf(args, sizeof(args), "rate=%u,buffer=4194304", RATE_MBPS);
	for (try = 0; try < RATE_TRIES; try++) {
		struct bn_run run;
		struct bn_env env;
		uint64_t t0;

		env_open(&env, args);
		run_alloc(&run, RATE_PKTS);
		t0 = bn_send_paced(&env, specs, 0, RATE_PKTS, &run, RATE_PKTS);
		elapsed = run.tsc[RATE_PKTS - 1] - t0;
		bn_drain(&env, specs, RATE_PKTS, &run, RATE_PKTS, RX_BURST);
		CHECK_EQ_U64(run.st.bn_queued, RATE_PKTS);
		CHECK_EQ_U64(run.st.bn_dropped, 0);
		CHECK_EQ_U64(run.st.bn_bytes, bytes);
		CHECK_EQ_U64(run.st.delivered, RATE_PKTS);
		CHECK(run.st.bn_depth_max > 0 && run.st.bn_depth_max <= bytes);
		CHECK_EQ_U64(run.st.bn_ect + run.st.bn_marked, 0);
		env_close(&env);
		/* Slower than the rate only if the test lost the CPU: try again. */
		if (elapsed * RATE_MIN_PCT <= link_tsc(bytes, RATE_MBPS) * 100)
			break;
		printf("# try %u: %.1f Mb/s measured, the link has %u\n", try,
		       (double)bytes * BITS_PER_BYTE * rte_get_tsc_hz() / elapsed /
		       BITS_PER_MBIT, RATE_MBPS);
	}
	CHECK(try < RATE_TRIES);
}

DROCE_TEST(idle_link_banks_no_credit)
{
	struct pkt_spec *specs = specs_same(2 * IDLE_PKTS, PKT_IPV6, ECN_NOT_ECT, RATE_FRAME);
	struct bn_run run;
	struct bn_env env;
	char args[ARGS_LEN];

	snprintf(args, sizeof(args), "rate=%u", RATE_MBPS);
	env_open(&env, args);
	run_alloc(&run, 2 * IDLE_PKTS);
	bn_send_paced(&env, specs, 0, IDLE_PKTS, &run, 2 * IDLE_PKTS);
	/* The link idles longer than the next packets take: they still go at its rate. */
	rte_delay_us_block(IDLE_US);
	bn_send_paced(&env, specs, IDLE_PKTS, IDLE_PKTS, &run, 2 * IDLE_PKTS);
	bn_drain(&env, specs, 2 * IDLE_PKTS, &run, 2 * IDLE_PKTS, RX_BURST);
	CHECK_EQ_U64(run.st.bn_bytes, 2 * IDLE_PKTS * RATE_FRAME);
	env_close(&env);
}

DROCE_TEST(small_and_empty_polls)
{
	struct pkt_spec *specs = specs_same(DROP_PKTS, PKT_IPV4, ECN_ECT0, BAND_FRAME);
	struct bn_run run;
	struct bn_env env;
	uint32_t i;

	env_open(&env, "rate=1000");
	run_alloc(&run, DROP_PKTS);
	/* An empty bottleneck gives nothing, at any burst size. */
	CHECK_EQ_U64(bn_poll(&env, specs, DROP_PKTS, &run, DROP_PKTS, RX_BURST), 0);
	CHECK_EQ_U64(bn_poll(&env, specs, DROP_PKTS, &run, DROP_PKTS, 1), 0);
	CHECK_EQ_U64(bn_poll(&env, specs, DROP_PKTS, &run, DROP_PKTS, 0), 0);
	bn_send_at_once(&env, specs, DROP_PKTS);
	/* Wait until all have departed: a burst of 0 takes none, a burst of 1 one each. */
	rte_delay_us_block((uint32_t)(link_tsc((uint64_t)DROP_PKTS * BAND_FRAME, 1000) *
				      US_PER_S / rte_get_tsc_hz()) + 1);
	CHECK_EQ_U64(bn_poll(&env, specs, DROP_PKTS, &run, DROP_PKTS, 0), 0);
	CHECK_EQ_U64(env_stats(&env).bn_held, DROP_PKTS);
	CHECK_EQ_U64(env_stats(&env).bn_depth, 0);
	for (i = 0; i < DROP_PKTS; i++)
		CHECK_EQ_U64(bn_poll(&env, specs, DROP_PKTS, &run, DROP_PKTS, 1), 1);
	CHECK_EQ_U64(bn_poll(&env, specs, DROP_PKTS, &run, DROP_PKTS, 1), 0);
	bn_drain(&env, specs, DROP_PKTS, &run, DROP_PKTS, 1);
	CHECK_EQ_U64(run.nb_out, DROP_PKTS);
	for (i = 0; i < DROP_PKTS; i++)
		CHECK_EQ_U64(run.seq[i], i);
	CHECK_EQ_U64(run.st.bn_bytes, (uint64_t)DROP_PKTS * BAND_FRAME);
	env_close(&env);
}

/* Frames of random kinds and ECN fields, sizes from the Ethernet minimum to its maximum. */
static struct pkt_spec *
specs_random(uint32_t n)
{
	static const enum pkt_kind kinds[] = { PKT_IPV4, PKT_IPV6, PKT_VLAN_IPV4, PKT_ARP };
	struct pkt_spec *specs = droce_test_malloc(n * sizeof(*specs));
	uint32_t i;

	for (i = 0; i < n; i++)
		specs[i] = (struct pkt_spec){
			.kind = kinds[droce_test_rand_below(RTE_DIM(kinds))],
			.ecn = (uint8_t)droce_test_rand_below(ECN_CE + 1),
			.len = (uint16_t)(MIN_FRAME + droce_test_rand_below(MAX_STD_FRAME -
									     MIN_FRAME + 1)),
		};
	return specs;
}

/*
 * specs[0..DROP_PKTS) arrive at once at a buffer of buffer bytes: exactly those that do
 * not fit are dropped (a frame that does not fit is dropped, smaller ones after it may
 * still fit; frames shorter than the Ethernet minimum may run out of slots first), and the
 * others come out in order.
 */
static void
tail_drop(const struct pkt_spec *specs, uint32_t buffer)
{
	uint32_t slots = buffer / MIN_FRAME + 1;
	bool *kept = droce_test_malloc(DROP_PKTS * sizeof(*kept));
	uint64_t depth = 0, nb_kept = 0;
	struct droce_fault_stats st;
	struct bn_run run;
	struct bn_env env;
	char args[ARGS_LEN];
	uint32_t i, out = 0;

	for (i = 0; i < DROP_PKTS; i++) {
		kept[i] = depth + specs[i].len <= buffer && nb_kept < slots;
		depth += kept[i] ? specs[i].len : 0;
		nb_kept += kept[i];
	}
	CHECK(nb_kept < DROP_PKTS);
	snprintf(args, sizeof(args), "rate=100,buffer=%u", buffer);
	env_open(&env, args);
	bn_send_at_once(&env, specs, DROP_PKTS);
	st = env_stats(&env);
	CHECK_EQ_U64(st.received, DROP_PKTS);
	CHECK_EQ_U64(st.bn_queued, nb_kept);
	CHECK_EQ_U64(st.bn_dropped, DROP_PKTS - nb_kept);
	CHECK_EQ_U64(st.bn_held, nb_kept);
	CHECK_EQ_U64(st.bn_depth, depth);
	CHECK_EQ_U64(st.bn_depth_max, depth);
	CHECK_EQ_U64(st.bn_bytes, 0);
	/* The dropped ones are freed. */
	CHECK_EQ_U64(rte_mempool_avail_count(env.mp), NB_MBUFS - nb_kept);

	run_alloc(&run, DROP_PKTS);
	bn_drain(&env, specs, DROP_PKTS, &run, DROP_PKTS, RX_BURST);
	CHECK_EQ_U64(run.nb_out, nb_kept);
	for (i = 0; i < DROP_PKTS; i++) {
		if (!kept[i])
			continue;
		droce_test_ctx("packet %u", i);
		CHECK_EQ_U64(run.seq[out], i);
		CHECK(!run.marked[out]);
		out++;
	}
	CHECK_EQ_U64(run.st.bn_bytes, depth);
	CHECK_EQ_U64(run.st.delivered, nb_kept);
	env_close(&env);
}

DROCE_TEST(tail_drop_drops_exactly_what_does_not_fit)
{
	/* Frames that fill the buffer to the byte: the last one that fits is kept. */
	tail_drop(specs_same(DROP_PKTS, PKT_IPV4, ECN_ECT0, DROP_BUFFER / DROP_FIT),
		  DROP_BUFFER);
	tail_drop(specs_random(DROP_PKTS), DROP_BUFFER);
	/* Runt frames (an Ethernet header, no more) in the smallest buffer: slots run out. */
	tail_drop(specs_same(DROP_PKTS, PKT_ARP, ECN_NOT_ECT, sizeof(struct rte_ether_hdr)),
		  RTE_ETHER_MAX_LEN);
}

/* Every kind of frame, ECN-capable or not, BAND_ROUNDS times over. */
static const struct pkt_spec band_kinds[] = {
	{ PKT_IPV4, ECN_ECT0, BAND_FRAME },
	{ PKT_IPV4, ECN_ECT1, BAND_FRAME },
	{ PKT_IPV6, ECN_ECT0, BAND_FRAME },
	{ PKT_IPV6, ECN_ECT1, BAND_FRAME },
	{ PKT_VLAN_IPV4, ECN_ECT1, BAND_FRAME },
	{ PKT_VLAN_IPV6, ECN_ECT0, BAND_FRAME },
	{ PKT_IPV4, ECN_NOT_ECT, BAND_FRAME },
	{ PKT_VLAN_IPV6, ECN_NOT_ECT, BAND_FRAME },
	{ PKT_IPV4, ECN_CE, BAND_FRAME },
	{ PKT_ARP, ECN_ECT0, BAND_FRAME },
	{ PKT_SHORT_IPV4, ECN_ECT0, sizeof(struct rte_ether_hdr) +
				    sizeof(struct rte_ipv4_hdr) - 1 },
	{ PKT_SPLIT_IPV4, ECN_ECT0, BAND_FRAME },
};

/*
 * Marks by band, with the depth each packet saw: none up to ecn_min, all ECN-capable ones
 * from ecn_max, and in between none with ecn_pmax 0. Returns how many were marked there.
 */
static uint32_t
ecn_bands(const char *profile, bool mid_marks)
{
	uint32_t n = RTE_DIM(band_kinds) * BAND_ROUNDS, i, mid = 0, ect = 0, marked = 0;
	struct pkt_spec *specs = droce_test_malloc(n * sizeof(*specs));
	uint64_t *depth = droce_test_malloc(n * sizeof(*depth)), d = 0, ecn_min, ecn_max;
	struct bn_run run;
	struct bn_env env;
	char args[ARGS_LEN];

	for (i = 0; i < n; i++) {
		specs[i] = band_kinds[i % RTE_DIM(band_kinds)];
		depth[i] = d;
		d += specs[i].len;
		ect += pkt_ect(&specs[i]);
	}
	CHECK(pkt_ect(&specs[BAND_MIN_PKT]) && pkt_ect(&specs[BAND_MAX_PKT]));
	ecn_min = depth[BAND_MIN_PKT];
	ecn_max = depth[BAND_MAX_PKT];
	snprintf(args, sizeof(args), "rate=100,buffer=65536,ecn_min=%" PRIu64 ",ecn_max=%"
		 PRIu64 "%s", ecn_min, ecn_max, profile);
	env_open(&env, args);
	bn_send_at_once(&env, specs, n);
	run_alloc(&run, n);
	bn_drain(&env, specs, n, &run, n, RX_BURST);
	CHECK_EQ_U64(run.nb_out, n);
	for (i = 0; i < n; i++) {
		uint32_t seq = run.seq[i];

		droce_test_ctx("packet %u depth %" PRIu64, seq, depth[seq]);
		CHECK_EQ_U64(seq, i);
		marked += run.marked[i];
		if (!pkt_ect(&specs[seq]) || depth[seq] <= ecn_min)
			CHECK(!run.marked[i]);
		else if (depth[seq] >= ecn_max)
			CHECK(run.marked[i]);
		else if (!mid_marks)
			CHECK(!run.marked[i]);
		else
			mid += run.marked[i];
	}
	droce_test_ctx("%s", "");
	CHECK_EQ_U64(run.st.bn_ect, ect);
	CHECK_EQ_U64(run.st.bn_marked, marked);
	CHECK_EQ_U64(run.st.bn_dropped, 0);
	env_close(&env);
	return mid;
}

DROCE_TEST(ecn_marks_by_band_ipv4_ipv6_vlan)
{
	/* ecn_pmax defaults to 1000000: near ecn_max nearly all marked. */
	CHECK(ecn_bands("", true) > 0);
	CHECK_EQ_U64(ecn_bands(",ecn_pmax=0", false), 0);
}

/* Marks per packet (numbered in order) of the middle-band run with seed. */
static bool *
ecn_mid_run(uint64_t seed, struct droce_fault_stats *st)
{
	struct pkt_spec *specs = specs_same(MID_PKTS, PKT_IPV4, ECN_ECT0, MID_FRAME);
	bool *marks = droce_test_malloc(MID_PKTS * sizeof(*marks));
	struct bn_run run;
	struct bn_env env;
	char args[ARGS_LEN];
	uint32_t i;

	snprintf(args, sizeof(args), "rate=%u,ecn_min=%u,ecn_max=%u,ecn_pmax=%u,seed=%" PRIu64,
		 MID_RATE_MBPS, MID_MIN, MID_MAX, MID_PMAX, seed);
	env_open(&env, args);
	bn_send_at_once(&env, specs, MID_PKTS);
	run_alloc(&run, MID_PKTS);
	bn_drain(&env, specs, MID_PKTS, &run, MID_PKTS, RX_BURST);
	CHECK_EQ_U64(run.nb_out, MID_PKTS);
	for (i = 0; i < MID_PKTS; i++) {
		CHECK_EQ_U64(run.seq[i], i);
		marks[i] = run.marked[i];
	}
	*st = run.st;
	env_close(&env);
	return marks;
}

/* marks[first..last) against the profile: within MARK_SIGMAS of the expected count. */
static void
check_mid_band(const bool *marks, uint32_t first, uint32_t last)
{
	double mean = 0, var = 0, dev;
	uint32_t i, count = 0;

	for (i = first; i < last; i++) {
		uint64_t depth = (uint64_t)i * MID_FRAME;
		double p = 0;

		if (depth > MID_MIN)
			p = (double)MID_PMAX * (depth - MID_MIN) / (MID_MAX - MID_MIN) /
			    DROCE_FAULT_PPM;
		mean += p;
		var += p * (1 - p);
		count += marks[i];
	}
	dev = MARK_SIGMAS * sqrt(var);
	droce_test_ctx("packets %u..%u: %u marked, %.1f expected", first, last, count, mean);
	CHECK(count >= mean - dev && count <= mean + dev);
	droce_test_ctx("%s", "");
}

DROCE_TEST(ecn_middle_band_follows_the_profile_and_the_seed)
{
	struct droce_fault_stats st_a, st_b, st_c;
	bool *a = ecn_mid_run(7, &st_a), *b = ecn_mid_run(7, &st_b);
	bool *c = ecn_mid_run(8, &st_c);
	uint32_t i, first_mid = MID_MIN / MID_FRAME;

	/* At or below ecn_min none; the rising probability checked per half of the band. */
	for (i = 0; i <= first_mid; i++)
		CHECK(!a[i]);
	check_mid_band(a, 0, MID_PKTS / 2);
	check_mid_band(a, MID_PKTS / 2, MID_PKTS);
	CHECK_EQ_U64(st_a.bn_ect, MID_PKTS);
	/* The same seed marks the same packets; another seed others. */
	CHECK_MEM(a, b, MID_PKTS * sizeof(*a));
	CHECK_EQ_U64(st_a.bn_marked, st_b.bn_marked);
	CHECK(memcmp(a, c, MID_PKTS * sizeof(*a)) != 0);
}

/*
 * A queue of the engine alone (fault_rx.c, fault_bn.c), its bursts driven by the test
 * with a clock of its own: departure times can be checked to the cycle. args are for
 * env's port.
 */
static struct fault_queue *
clock_queue(const struct bn_env *env, const char *args, struct droce_fault **fp)
{
	char full[ARGS_LEN];

	snprintf(full, sizeof(full), "port=%s,%s", env->port_name, args);
	droce_test_ctx("args '%s'", full);
	CHECK(fault_new(full, fp) == 0);
	droce_test_ctx("%s", "");
	(*fp)->nb_queues = 1;
	CHECK(fault_queue_setup(*fp, 0, SOCKET_ID_ANY) == 0);
	return (*fp)->q[0];
}

static struct droce_fault_stats
clock_stats(const struct droce_fault *f)
{
	struct droce_fault_stats st;

	CHECK(droce_fault_stats_get(f, 0, &st) == 0);
	return st;
}

/* Arbitrary, far from 0 and from the end of the TSC's range. */
#define CLOCK_T0 (UINT64_C(1) << 40)
/* A rate in Mb/s whose byte time is no whole number of cycles on any TSC worth testing. */
#define CLOCK_RATE_MBPS 997u
#define CLOCK_PKTS 1000u
#define CLOCK_IDLE_S 1u

/*
 * Frames of random sizes arriving at once leave the link exactly when their bytes, and
 * all the bytes before them, have gone through at the rate: never a cycle early or late,
 * the remainders of the byte times carried, however long the run. Then, after the link
 * has been idle, a frame takes its own time again: no credit was banked.
 */
DROCE_TEST(departures_are_exact_to_the_cycle)
{
	struct pkt_spec *specs = specs_random(CLOCK_PKTS);
	struct rte_mbuf **pkts = droce_test_malloc(CLOCK_PKTS * sizeof(*pkts)), *out;
	uint64_t bytes = 0, total = 0, depart = 0, t;
	struct droce_fault *f;
	struct fault_queue *q;
	struct bn_env env;
	char args[ARGS_LEN];
	uint32_t i;

	env_open(&env, "");
	snprintf(args, sizeof(args), "rate=%u", CLOCK_RATE_MBPS);
	q = clock_queue(&env, args, &f);
	for (i = 0; i < CLOCK_PKTS; i++) {
		pkts[i] = pkt_mbuf(&env, &specs[i], i);
		total += specs[i].len;
	}
	CHECK_EQ_U64(fault_bn_burst(q, pkts, CLOCK_PKTS, &out, 1, CLOCK_T0), 0);
	CHECK_EQ_U64(clock_stats(f).bn_depth, total);
	for (i = 0; i < CLOCK_PKTS; i++) {
		droce_test_ctx("packet %u", i);
		bytes += specs[i].len;
		depart = CLOCK_T0 + link_tsc(bytes, CLOCK_RATE_MBPS);
		CHECK_EQ_U64(fault_bn_burst(q, NULL, 0, &out, 1, depart - 1), 0);
		CHECK_EQ_U64(clock_stats(f).bn_depth, total - bytes + specs[i].len);
		CHECK_EQ_U64(fault_bn_burst(q, NULL, 0, &out, 1, depart), 1);
		CHECK(out == pkts[i]);
		CHECK_EQ_U64(clock_stats(f).bn_depth, total - bytes);
		rte_pktmbuf_free(out);
	}
	droce_test_ctx("%s", "");
	CHECK_EQ_U64(clock_stats(f).bn_bytes, total);
	t = depart + CLOCK_IDLE_S * rte_get_tsc_hz();
	pkts[0] = pkt_mbuf(&env, &specs[0], 0);
	CHECK_EQ_U64(fault_bn_burst(q, pkts, 1, &out, 1, t), 0);
	depart = t + link_tsc(specs[0].len, CLOCK_RATE_MBPS);
	CHECK_EQ_U64(fault_bn_burst(q, NULL, 0, &out, 1, depart - 1), 0);
	CHECK_EQ_U64(fault_bn_burst(q, NULL, 0, &out, 1, depart), 1);
	rte_pktmbuf_free(out);
	fault_free(f);
	env_close(&env);
}

#define DEQ_PKTS 8u
#define DEQ_FRAME 1000u

/* Is m, an IPv4 frame of pkt_mbuf's, marked CE? */
static bool
ipv4_ce(const struct rte_mbuf *m)
{
	const struct rte_ipv4_hdr *ip =
		rte_pktmbuf_mtod_offset(m, const struct rte_ipv4_hdr *, sizeof(struct rte_ether_hdr));

	return (ip->type_of_service & RTE_IPV4_HDR_ECN_MASK) == RTE_IPV4_HDR_ECN_CE;
}

/*
 * ecn_dequeue: a packet is marked as it leaves, by the bytes queued behind it. Eight
 * frames arrive at once; marking always from 4 frames, never up to 2: with ecn_dequeue
 * the first four out are marked (7..4 frames behind them), the last three not; marking at
 * enqueue is the other way round (0..2 frames before the first three).
 */
DROCE_TEST(ecn_dequeue_marks_by_the_depth_behind)
{
	struct pkt_spec *specs = specs_same(DEQ_PKTS, PKT_IPV4, ECN_ECT0, DEQ_FRAME);
	struct rte_mbuf *pkts[DEQ_PKTS], *out;
	struct droce_fault *f;
	struct fault_queue *q;
	struct bn_env env;
	char args[ARGS_LEN];
	unsigned int deq;
	uint32_t i;

	env_open(&env, "");
	for (deq = 0; deq <= 1; deq++) {
		snprintf(args, sizeof(args), "rate=%u,ecn_min=%u,ecn_max=%u,ecn_dequeue=%u",
			 CLOCK_RATE_MBPS, 2 * DEQ_FRAME, 4 * DEQ_FRAME, deq);
		q = clock_queue(&env, args, &f);
		for (i = 0; i < DEQ_PKTS; i++)
			pkts[i] = pkt_mbuf(&env, &specs[i], i);
		CHECK_EQ_U64(fault_bn_burst(q, pkts, DEQ_PKTS, &out, 1, CLOCK_T0), 0);
		for (i = 0; i < DEQ_PKTS; i++) {
			uint64_t t = CLOCK_T0 + link_tsc((uint64_t)(i + 1) * DEQ_FRAME,
							 CLOCK_RATE_MBPS);

			droce_test_ctx("ecn_dequeue=%u packet %u", deq, i);
			CHECK_EQ_U64(fault_bn_burst(q, NULL, 0, &out, 1, t), 1);
			CHECK(out == pkts[i]);
			if (deq ? i < 4 : i >= 4)
				CHECK(ipv4_ce(out));
			else if (deq ? i > 4 : i < 3)
				CHECK(!ipv4_ce(out));
			rte_pktmbuf_free(out);
		}
		droce_test_ctx("%s", "");
		CHECK_EQ_U64(clock_stats(f).bn_ect, DEQ_PKTS);
		fault_free(f);
	}
	env_close(&env);
}

/* The largest frame the largest buffer holds, at the highest rate. */
#define HUGE_FRAME (UINT32_C(1) << 24)

/* A runt of pkt_len len, as a frame that big is to the bottleneck: it reads no more. */
static struct rte_mbuf *
clock_huge(struct bn_env *env, uint32_t len)
{
	static const struct pkt_spec runt = { PKT_ARP, ECN_NOT_ECT, MIN_FRAME };
	struct rte_mbuf *m = pkt_mbuf(env, &runt, 0);

	m->pkt_len = len;
	return m;
}

static void
clock_huge_free(struct rte_mbuf *m)
{
	m->pkt_len = m->data_len;
	rte_pktmbuf_free(m);
}

/* Departure times at the limits of the arguments stay exact: the 64-bit arithmetic holds. */
DROCE_TEST(departures_are_exact_at_the_limits)
{
	struct rte_mbuf *pkts[2], *out[2];
	struct droce_fault *f;
	struct fault_queue *q;
	struct bn_env env;
	uint64_t depart;

	env_open(&env, "");
	q = clock_queue(&env, "rate=1000000,buffer=16777216", &f);
	CHECK_EQ_U64(HUGE_FRAME, FAULT_MAX_BUFFER);
	/* Two halves of the buffer, the second carrying the first's remainder... */
	pkts[0] = clock_huge(&env, HUGE_FRAME / 2);
	pkts[1] = clock_huge(&env, HUGE_FRAME / 2);
	CHECK_EQ_U64(fault_bn_burst(q, pkts, 2, out, 2, CLOCK_T0), 0);
	depart = CLOCK_T0 + link_tsc(HUGE_FRAME / 2, FAULT_MAX_RATE_MBPS);
	CHECK_EQ_U64(fault_bn_burst(q, NULL, 0, out, 2, depart), 1);
	clock_huge_free(out[0]);
	depart = CLOCK_T0 + link_tsc(HUGE_FRAME, FAULT_MAX_RATE_MBPS);
	CHECK_EQ_U64(fault_bn_burst(q, NULL, 0, out, 2, depart - 1), 0);
	CHECK_EQ_U64(fault_bn_burst(q, NULL, 0, out, 2, depart), 1);
	clock_huge_free(out[0]);
	/* ...then, on the link idle since, one that fills it and one a byte too big for it. */
	pkts[0] = clock_huge(&env, HUGE_FRAME);
	pkts[1] = clock_huge(&env, HUGE_FRAME + 1);
	CHECK_EQ_U64(fault_bn_burst(q, pkts, 2, out, 2, depart + 1), 0);
	CHECK_EQ_U64(clock_stats(f).bn_dropped, 1);
	depart += 1 + link_tsc(HUGE_FRAME, FAULT_MAX_RATE_MBPS);
	CHECK_EQ_U64(fault_bn_burst(q, NULL, 0, out, 2, depart - 1), 0);
	CHECK_EQ_U64(fault_bn_burst(q, NULL, 0, out, 2, depart), 1);
	clock_huge_free(out[0]);
	fault_free(f);
	env_close(&env);
}

/* A frame that takes no time on the link (here, an empty one) leaves in its own burst. */
DROCE_TEST(frames_of_no_time_leave_at_once)
{
	struct pkt_spec *specs = specs_same(TX_BURST, PKT_ARP, ECN_NOT_ECT, 0);
	struct rte_mbuf *pkts[TX_BURST];
	struct bn_env env;

	env_open(&env, "rate=1000000");
	bn_send(&env, specs, 0, TX_BURST);
	CHECK_EQ_U64(rte_eth_rx_burst(env.port_id, 0, pkts, TX_BURST), TX_BURST);
	rte_pktmbuf_free_bulk(pkts, TX_BURST);
	CHECK_EQ_U64(env_stats(&env).bn_queued, TX_BURST);
	env_close(&env);
}

DROCE_TEST(faults_apply_to_what_leaves_the_bottleneck)
{
	struct pkt_spec *specs = specs_random(DROP_PKTS);
	struct droce_fault_stats st;
	struct bn_run run;
	struct bn_env env;
	char args[ARGS_LEN];

	snprintf(args, sizeof(args), "rate=100,buffer=%u,drop=200000,dup=200000,seed=3",
		 DROP_BUFFER);
	env_open(&env, args);
	bn_send_at_once(&env, specs, DROP_PKTS);
	/* Nothing has left: the faults have seen nothing yet. */
	st = env_stats(&env);
	CHECK(st.bn_dropped > 0 && st.bn_held > 0);
	CHECK_EQ_U64(st.dropped + st.duplicated + st.delivered, 0);
	CHECK_EQ_U64(st.received + st.duplicated,
		     st.delivered + st.dropped + st.overflowed + st.held + st.bn_dropped +
		     st.bn_held);
	run_alloc(&run, 2 * DROP_PKTS);
	bn_drain(&env, specs, DROP_PKTS, &run, 2 * DROP_PKTS, RX_BURST);
	CHECK(run.st.dropped > 0 && run.st.duplicated > 0);
	CHECK_EQ_U64(run.st.bn_queued, run.st.delivered - run.st.duplicated + run.st.dropped);
	CHECK_EQ_U64(run.nb_out, run.st.delivered);
	env_close(&env);
}

DROCE_TEST(detach_frees_queued_packets)
{
	struct pkt_spec *specs = specs_same(TX_BURST, PKT_IPV4, ECN_ECT1, RATE_FRAME);
	struct bn_env env;

	/* At 1 Mb/s a frame takes 8 ms: all of them are still queued at the detach. */
	env_open(&env, "rate=1");
	bn_send_at_once(&env, specs, TX_BURST);
	CHECK_EQ_U64(env_stats(&env).bn_held, TX_BURST);
	CHECK_EQ_U64(rte_mempool_avail_count(env.mp), NB_MBUFS - TX_BURST);
	env_close(&env);
}

DROCE_TEST(bad_bottleneck_args_are_refused)
{
	static const struct {
		const char *args;
		const char *key;
	} bad[] = {
		{ "rate=1000001", "'rate'" },
		{ "rate=abc", "'rate'" },
		{ "rate=100,rate=200", "'rate'" },
		{ "rate=100,buffer=16777217", "'buffer'" },
		/* No room for a full-size frame. */
		{ "rate=100,buffer=1517", "'buffer'" },
		{ "rate=100,buffer=0", "'buffer'" },
		/* Nothing to apply them to without a rate. */
		{ "buffer=65536", "'buffer'" },
		{ "ecn_max=8000", "'ecn_max'" },
		{ "rate=0,ecn_max=8000", "'ecn_max'" },
		{ "rate=100,ecn_min=5000,ecn_max=5000", "'ecn_min'" },
		{ "rate=100,ecn_min=6000,ecn_max=5000", "'ecn_min'" },
		{ "rate=100,ecn_min=100", "'ecn_min'" },
		{ "rate=100,ecn_pmax=100", "'ecn_pmax'" },
		{ "rate=100,ecn_max=8000,ecn_pmax=1000001", "'ecn_pmax'" },
		{ "rate=100,ecn_max=16777217", "'ecn_max'" },
	};
	static const char *const good[] = {
		"rate=0,buffer=0,ecn_min=0,ecn_max=0,ecn_pmax=0",
		"rate=100,buffer=1518",
		"rate=1000000,buffer=16777216,ecn_min=16777215,ecn_max=16777216",
		"rate=100,ecn_max=1",
	};
	struct bn_env env;
	char args[ARGS_LEN];
	uint32_t i;

	env_open(&env, "rate=100");
	for (i = 0; i < RTE_DIM(bad); i++) {
		snprintf(args, sizeof(args), "port=%s,%s", env.port_name, bad[i].args);
		fault_check_refused(args, EINVAL, bad[i].key);
	}
	for (i = 0; i < RTE_DIM(good); i++) {
		struct droce_fault *f;

		snprintf(args, sizeof(args), "port=%s,%s", env.port_name, good[i]);
		droce_test_ctx("args '%s'", args);
		f = droce_fault_attach(args);
		CHECK(f != NULL);
		droce_fault_detach(f);
	}
	droce_test_ctx("%s", "");
	env_close(&env);
}
