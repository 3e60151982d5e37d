/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net-pkt-runner: lib/net fed from a pcap file, its frames written to another, driven by
 * test/interop/test_net_scapy.py and test/net/test_net_mcast_scapy.py. The port is
 * 02:00:00:00:00:02 / 10.99.0.2/24 (GID 1: fe80::ff:fe00:2). At start it sends a
 * gratuitous ARP, starts resolving 10.99.0.1 with one held packet (the Ethernet header
 * of the port and the payload "droce-held") and joins the groups of --join; then every
 * input frame goes to droce_net_rx, one millisecond apart, or, with --pcap-time, at the
 * time its pcap record says (in ms from 0), droce_net_timer called for every millisecond
 * before it. --drain MS then calls the timer for every millisecond of MS more, and the
 * groups of --leave are left. The output records carry the time (ms) of each frame.
 * Prints one line: the counters.
 *
 * usage: net-pkt-runner [--pcap-time] [--join GID]... [--drain MS] [--leave GID]...
 *                       IN.pcap OUT.pcap
 *
 * Not a DROCE_TEST executable: the failure hook of test_eal.c's CHECKs is
 * test/common/runner_check.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcap/pcap.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "droce_net.h"
#include "droce_test.h"
#include "test_eal.h"

#define RUNNER_NB_MBUFS		511u
#define RUNNER_MBUF_ROOM	(2048u + RTE_PKTMBUF_HEADROOM)
#define RUNNER_SNAPLEN		65535
#define RUNNER_HZ		1000u	/* now in ms */
#define RUNNER_SELF_IP		0x0A630002u
#define RUNNER_PEER_IP		0x0A630001u
#define RUNNER_PREFIX_LEN	24
#define RUNNER_HELD_PAYLOAD	"droce-held"
#define RUNNER_ETH_HLEN		14u
#define RUNNER_ETHERTYPE_TEST	0x88B5	/* IEEE 802 local experimental */
#define RUNNER_MAX_GROUPS	16
#define RUNNER_US_PER_MS	1000u

static const uint8_t self_mac[6] = { 0x02, 0, 0, 0, 0, 0x02 };

struct runner {
	pcap_t *dead;
	pcap_dumper_t *dump;
	uint32_t nb_out;
	uint64_t now;		/* ms: the time of the frames sent now */
	bool pcap_time;
	uint64_t drain_ms;
	uint32_t nb_join, nb_leave;
	uint8_t join[RUNNER_MAX_GROUPS][16];
	uint8_t leave[RUNNER_MAX_GROUPS][16];
};

static void
runner_tx(void *arg, struct rte_mbuf *m)
{
	struct runner *r = arg;
	static uint8_t buf[RUNNER_SNAPLEN];
	struct pcap_pkthdr ph = { 0 };
	const void *d;

	d = rte_pktmbuf_read(m, 0, rte_pktmbuf_pkt_len(m), buf);
	CHECK(d != NULL);
	r->nb_out++;
	ph.ts.tv_sec = r->now / RUNNER_HZ;
	ph.ts.tv_usec = r->now % RUNNER_HZ * RUNNER_US_PER_MS;
	ph.caplen = rte_pktmbuf_pkt_len(m);
	ph.len = ph.caplen;
	pcap_dump((u_char *)r->dump, &ph, d);
	rte_pktmbuf_free(m);
}

static void
usage(void)
{
	fprintf(stderr, "usage: net-pkt-runner [--pcap-time] [--join GID]... [--drain MS] "
		"[--leave GID]... IN.pcap OUT.pcap\n");
	exit(2);
}

static void
add_gid(uint8_t (*list)[16], uint32_t *nb, const char *s)
{
	if (*nb == RUNNER_MAX_GROUPS || inet_pton(AF_INET6, s, list[*nb]) != 1)
		usage();
	(*nb)++;
}

static void
parse_args(struct runner *r, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pcap-time", no_argument, NULL, 't' },
		{ "join", required_argument, NULL, 'j' },
		{ "leave", required_argument, NULL, 'l' },
		{ "drain", required_argument, NULL, 'd' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			r->pcap_time = true;
			break;
		case 'j':
			add_gid(r->join, &r->nb_join, optarg);
			break;
		case 'l':
			add_gid(r->leave, &r->nb_leave, optarg);
			break;
		case 'd':
			r->drain_ms = strtoull(optarg, NULL, 10);
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 2)
		usage();
}

/* Calls the timer for every millisecond before t; r->now is t after. */
static void
run_until(struct runner *r, struct droce_net *n, uint64_t t)
{
	while (r->now < t) {
		droce_net_timer(n, r->now);
		r->now++;
	}
}

int
main(int argc, char **argv)
{
	char errbuf[PCAP_ERRBUF_SIZE];
	struct droce_net_conf c = { 0 };
	const uint8_t *data;
	struct pcap_pkthdr *ph;
	struct runner r = { 0 };
	struct rte_mempool *mp;
	struct droce_net *n;
	struct rte_mbuf *m;
	const char *in_path, *out_path;
	uint8_t mac[6];
	pcap_t *in;
	uint8_t *p;
	uint32_t i;
	int rc;

	parse_args(&r, argc, argv);
	in_path = argv[optind];
	out_path = argv[optind + 1];
	/* test_eal_init's EAL arguments are its own: getopt starts over for them. */
	optind = 0;
	test_eal_init();
	mp = rte_pktmbuf_pool_create("net_runner", RUNNER_NB_MBUFS, 0, 0, RUNNER_MBUF_ROOM,
				     SOCKET_ID_ANY);
	CHECK(mp != NULL);
	in = pcap_open_offline(in_path, errbuf);
	if (in == NULL)
		droce_test_fail(__FILE__, __LINE__, "%s: %s", in_path, errbuf);
	CHECK(pcap_datalink(in) == DLT_EN10MB);
	r.dead = pcap_open_dead(DLT_EN10MB, RUNNER_SNAPLEN);
	r.dump = pcap_dump_open(r.dead, out_path);
	if (r.dump == NULL)
		droce_test_fail(__FILE__, __LINE__, "%s: %s", out_path, pcap_geterr(r.dead));

	memcpy(c.mac, self_mac, 6);
	c.ipv4 = RUNNER_SELF_IP;
	c.ipv4_prefix_len = RUNNER_PREFIX_LEN;
	c.mp = mp;
	c.hz = RUNNER_HZ;
	c.ops.tx = runner_tx;
	c.ops.arg = &r;
	n = droce_net_create(&c);
	CHECK(n != NULL);
	CHECK(droce_net_garp(n, r.now) == 0);

	m = rte_pktmbuf_alloc(mp);
	CHECK(m != NULL);
	p = (uint8_t *)rte_pktmbuf_append(m, RUNNER_ETH_HLEN + strlen(RUNNER_HELD_PAYLOAD));
	CHECK(p != NULL);
	memset(p, 0, 6);
	memcpy(p + 6, self_mac, 6);
	p[12] = RUNNER_ETHERTYPE_TEST >> 8;
	p[13] = RUNNER_ETHERTYPE_TEST & 0xFF;
	memcpy(p + RUNNER_ETH_HLEN, RUNNER_HELD_PAYLOAD, strlen(RUNNER_HELD_PAYLOAD));
	CHECK(droce_net_resolve(n, RUNNER_PEER_IP, m, mac, r.now) == -EAGAIN);
	for (i = 0; i < r.nb_join; i++)
		CHECK(droce_net_mcast_join(n, r.join[i], r.now) == 0);

	while ((rc = pcap_next_ex(in, &ph, &data)) == 1) {
		if (r.pcap_time) {
			uint64_t t = (uint64_t)ph->ts.tv_sec * RUNNER_HZ +
				     (uint64_t)ph->ts.tv_usec / RUNNER_US_PER_MS;

			CHECK(t >= r.now);
			run_until(&r, n, t);
		} else {
			r.now++;
		}
		m = rte_pktmbuf_alloc(mp);
		CHECK(m != NULL);
		p = (uint8_t *)rte_pktmbuf_append(m, ph->caplen);
		CHECK(p != NULL);
		memcpy(p, data, ph->caplen);
		droce_net_rx(n, m, r.now);
		if (!r.pcap_time)
			droce_net_timer(n, r.now);
	}
	CHECK(rc == PCAP_ERROR_BREAK);
	pcap_close(in);
	run_until(&r, n, r.now + r.drain_ms);
	for (i = 0; i < r.nb_leave; i++)
		CHECK(droce_net_mcast_leave(n, r.leave[i], r.now) == 0);
	droce_net_stats_print(stdout, n);
	fputc('\n', stdout);
	droce_net_free(n);
	pcap_dump_close(r.dump);
	pcap_close(r.dead);
	CHECK(rte_mempool_avail_count(mp) == RUNNER_NB_MBUFS);
	rte_mempool_free(mp);
	return 0;
}
