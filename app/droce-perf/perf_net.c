/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A host whose peer is another process (perf_peer.c) speaks ARP and ICMP echo with
 * lib/net, as droced does (doc/net.md): perftest sends no MAC, so the peer's is learnt by
 * ARP, and the peer (droced) resolves ours before its QP reaches RTR. The engines hand
 * ARP frames to slow_rx, which perf_net_poll gives lib/net on every pass of the host
 * (perf_poll.c), and send lib/net's from slow_tx.
 */
#include <stdio.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "perf.h"

#define SLOW_RING		1024
#define SLOW_BURST		32
#define NET_TICK_US		1000	/* lib/net's timers: ARP retries and expiry */
/* ARP: a peer process answers from its polling loop, which may be off its CPU a while. */
#define ARP_RETRY_MS		100
#define ARP_TRIES		50

/* lib/net's frames leave through the first engine's slow_tx, sent at its next poll. */
static void
net_tx(void *arg, struct rte_mbuf *m)
{
	struct perf_host *h = arg;

	if (rte_ring_sp_enqueue(h->slow_tx, m) != 0)
		rte_pktmbuf_free(m);
}

void
perf_net_poll(struct perf_host *h)
{
	struct rte_mbuf *pkts[SLOW_BURST];
	uint64_t now;
	unsigned int n, i;

	/* called every pass of the traffic loops: the common case is two loads and a compare */
	if (rte_ring_empty(h->slow_rx) && rte_rdtsc() < h->net_tick + h->net_tick_cycles)
		return;
	now = rte_rdtsc();
	n = rte_ring_sc_dequeue_burst(h->slow_rx, (void **)pkts, SLOW_BURST, NULL);
	for (i = 0; i < n; i++)
		droce_net_rx(h->net, pkts[i], now);
	if (now - h->net_tick >= h->net_tick_cycles) {
		droce_net_timer(h->net, now);
		h->net_tick = now;
	}
}

/* h's address (--ip, or 192.0.2.<host id>/24 as the one-process hosts), lib/net, rings. */
int
perf_net_open(struct perf_host *h, const struct perf_opts *o)
{
	struct droce_net_conf nc;
	char name[RTE_RING_NAMESIZE];

	memset(&nc, 0, sizeof(nc));
	nc.ipv4 = o->ipv4 != 0 ? o->ipv4 : (uint32_t)192 << 24 | 2 << 8 | h->id;
	nc.ipv4_prefix_len = o->ipv4 != 0 ? o->ipv4_prefix_len : 24;
	droce_gid_from_ipv4_host(h->gid, nc.ipv4);
	snprintf(name, sizeof(name), "perf_slow_rx_%s", h->name);
	h->slow_rx = rte_ring_create(name, SLOW_RING, SOCKET_ID_ANY, RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "perf_slow_tx_%s", h->name);
	h->slow_tx = rte_ring_create(name, SLOW_RING, SOCKET_ID_ANY,
				     RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (h->slow_rx == NULL || h->slow_tx == NULL) {
		fprintf(stderr, "droce-perf: slow path rings: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	memcpy(nc.mac, h->mac, sizeof(nc.mac));
	nc.mp = h->mp;
	nc.hz = rte_get_tsc_hz();
	nc.arp_retry_ms = ARP_RETRY_MS;
	nc.arp_tries = ARP_TRIES;
	nc.ops.tx = net_tx;
	nc.ops.arg = h;
	h->net = droce_net_create(&nc);
	if (h->net == NULL) {
		fprintf(stderr, "droce-perf: lib/net: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	h->net_tick = rte_rdtsc();
	h->net_tick_cycles = rte_get_tsc_hz() / 1000000 * NET_TICK_US;
	return 0;
}

void
perf_net_release(struct perf_host *h)
{
	void *m;

	droce_net_free(h->net);
	h->net = NULL;
	while (h->slow_rx != NULL && rte_ring_dequeue(h->slow_rx, &m) == 0)
		rte_pktmbuf_free(m);
	while (h->slow_tx != NULL && rte_ring_dequeue(h->slow_tx, &m) == 0)
		rte_pktmbuf_free(m);
	rte_ring_free(h->slow_rx);
	rte_ring_free(h->slow_tx);
	h->slow_rx = h->slow_tx = NULL;
}
