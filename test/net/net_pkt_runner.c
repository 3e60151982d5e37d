/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net-pkt-runner: lib/net fed from a pcap file, its frames written to another, driven by
 * test/interop/test_net_scapy.py. The port is 02:00:00:00:00:02 / 10.99.0.2/24. At start
 * it sends a gratuitous ARP and starts resolving 10.99.0.1 with one held packet (the
 * Ethernet header of the port and the payload "droce-held"); then every input frame goes
 * to droce_net_rx, one millisecond apart. Prints one line: the counters.
 *
 * Not a DROCE_TEST executable: the failure hook of test_eal.c's CHECKs is
 * test/common/runner_check.c.
 */
#include <errno.h>
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

static const uint8_t self_mac[6] = { 0x02, 0, 0, 0, 0, 0x02 };

struct runner {
	pcap_t *dead;
	pcap_dumper_t *dump;
	uint32_t nb_out;
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
	ph.ts.tv_usec = ++r->nb_out;
	ph.caplen = rte_pktmbuf_pkt_len(m);
	ph.len = ph.caplen;
	pcap_dump((u_char *)r->dump, &ph, d);
	rte_pktmbuf_free(m);
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
	uint64_t now = 0;
	uint8_t mac[6];
	pcap_t *in;
	uint8_t *p;
	int rc;

	if (argc != 3) {
		fprintf(stderr, "usage: net-pkt-runner IN.pcap OUT.pcap\n");
		return 2;
	}
	test_eal_init();
	mp = rte_pktmbuf_pool_create("net_runner", RUNNER_NB_MBUFS, 0, 0, RUNNER_MBUF_ROOM,
				     SOCKET_ID_ANY);
	CHECK(mp != NULL);
	in = pcap_open_offline(argv[1], errbuf);
	if (in == NULL)
		droce_test_fail(__FILE__, __LINE__, "%s: %s", argv[1], errbuf);
	CHECK(pcap_datalink(in) == DLT_EN10MB);
	r.dead = pcap_open_dead(DLT_EN10MB, RUNNER_SNAPLEN);
	r.dump = pcap_dump_open(r.dead, argv[2]);
	if (r.dump == NULL)
		droce_test_fail(__FILE__, __LINE__, "%s: %s", argv[2], pcap_geterr(r.dead));

	memcpy(c.mac, self_mac, 6);
	c.ipv4 = RUNNER_SELF_IP;
	c.ipv4_prefix_len = RUNNER_PREFIX_LEN;
	c.mp = mp;
	c.hz = RUNNER_HZ;
	c.ops.tx = runner_tx;
	c.ops.arg = &r;
	n = droce_net_create(&c);
	CHECK(n != NULL);
	CHECK(droce_net_garp(n, now) == 0);

	m = rte_pktmbuf_alloc(mp);
	CHECK(m != NULL);
	p = (uint8_t *)rte_pktmbuf_append(m, RUNNER_ETH_HLEN + strlen(RUNNER_HELD_PAYLOAD));
	CHECK(p != NULL);
	memset(p, 0, 6);
	memcpy(p + 6, self_mac, 6);
	p[12] = RUNNER_ETHERTYPE_TEST >> 8;
	p[13] = RUNNER_ETHERTYPE_TEST & 0xFF;
	memcpy(p + RUNNER_ETH_HLEN, RUNNER_HELD_PAYLOAD, strlen(RUNNER_HELD_PAYLOAD));
	CHECK(droce_net_resolve(n, RUNNER_PEER_IP, m, mac, now) == -EAGAIN);

	while ((rc = pcap_next_ex(in, &ph, &data)) == 1) {
		now++;
		m = rte_pktmbuf_alloc(mp);
		CHECK(m != NULL);
		p = (uint8_t *)rte_pktmbuf_append(m, ph->caplen);
		CHECK(p != NULL);
		memcpy(p, data, ph->caplen);
		droce_net_rx(n, m, now);
		droce_net_timer(n, now);
	}
	CHECK(rc == PCAP_ERROR_BREAK);
	pcap_close(in);
	droce_net_stats_print(stdout, n);
	fputc('\n', stdout);
	droce_net_free(n);
	pcap_dump_close(r.dump);
	pcap_close(r.dead);
	CHECK(rte_mempool_avail_count(mp) == RUNNER_NB_MBUFS);
	rte_mempool_free(mp);
	return 0;
}
