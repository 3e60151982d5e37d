/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The link without RoCE, testpmd's txonly / rxonly / io: the baseline the RoCE modes are
 * measured against. Host a's port transmits frames the size of a RoCEv2 SEND ONLY of SIZE
 * bytes (at most the MTU) over IPv4; host b's port receives them and frees them (raw-tx:
 * the figure is what a sent; raw-rx: what b received) or sends each back (raw-io: the
 * figure is what b forwarded). No engine runs: the ports are polled directly.
 */
#include <stdio.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_memcpy.h>

#include <droce_wire_hdr.h>

#include "perf.h"

#define RAW_BURST		32
/* An Ethertype for local experiments (IEEE 802): no host stack on a veth touches it. */
#define RAW_ETHERTYPE		0x88b5
/* After the last frame is sent, wait this long for the rest to arrive. */
#define DRAIN_MS		200

_Static_assert(PERF_MAX_BURST <= RAW_BURST, "--burst beyond the tx array");

struct raw_counts {
	uint64_t tx, rx_b, fwd_b, rx_a;
};

/* b's side: receive, and free (raw-tx, raw-rx) or send back (raw-io). */
static void
raw_b_pass(struct perf_run *r, struct raw_counts *c)
{
	struct rte_mbuf *pkts[RAW_BURST];
	uint16_t n, sent;

	n = rte_eth_rx_burst(r->b.port, 0, pkts, RAW_BURST);
	c->rx_b += n;
	if (n == 0)
		return;
	if (r->o->mode != PERF_MODE_RAW_IO) {
		rte_pktmbuf_free_bulk(pkts, n);
		return;
	}
	sent = rte_eth_tx_burst(r->b.port, 0, pkts, n);
	c->fwd_b += sent;
	if (sent < n)
		rte_pktmbuf_free_bulk(pkts + sent, n - sent);
}

/* a's side in raw-io: what b sent back. */
static void
raw_a_rx(struct perf_run *r, struct raw_counts *c)
{
	struct rte_mbuf *pkts[RAW_BURST];
	uint16_t n = rte_eth_rx_burst(r->a.port, 0, pkts, RAW_BURST);

	c->rx_a += n;
	rte_pktmbuf_free_bulk(pkts, n);
}

int
perf_raw_run(struct perf_run *r, uint32_t size)
{
	const struct perf_opts *o = r->o;
	uint32_t payload = RTE_MIN(size, 128u << o->mtu);
	uint32_t len = DROCE_ETH_HLEN + DROCE_IPV4_HLEN + DROCE_UDP_HLEN + DROCE_BTH_LEN +
		       payload + DROCE_ICRC_LEN;
	uint64_t hz = rte_get_tsc_hz(), t0, t_end, now, idle_end, win_t, win_n = 0, counted;
	double per_tick = perf_rate_msgs(o, len) / (double)hz;	/* --rate, of a's frames */
	struct rte_mbuf *pkts[RAW_BURST];
	struct raw_counts c = { 0 };
	uint8_t hdr[DROCE_ETH_HLEN];
	double peak = 0, secs;
	struct perf_bw f;
	bool io = o->mode == PERF_MODE_RAW_IO;
	unsigned int i;

	/* Ethernet: to b's MAC from a's; the rest of the frame is left as the pool gave it. */
	memcpy(hdr, r->b.mac, 6);
	memcpy(hdr + 6, r->a.mac, 6);
	hdr[12] = RAW_ETHERTYPE >> 8;
	hdr[13] = RAW_ETHERTYPE & 0xff;
	t0 = rte_rdtsc();
	t_end = o->duration_s > 0 ? t0 + (uint64_t)(o->duration_s * (double)hz) : UINT64_MAX;
	win_t = t0;
	for (;;) {
		uint64_t want = o->iters != 0 ? o->iters - c.tx : RAW_BURST;
		uint16_t k = (uint16_t)RTE_MIN(want, (uint64_t)o->burst), sent;

		now = rte_rdtsc();
		if (now >= t_end || k == 0 || perf_run_stopping(r))
			break;
		if (per_tick > 0) {
			/* frames due by now (at t0, t0 + 1/rate, ...) less those sent */
			uint64_t due = (uint64_t)((double)(now - t0) * per_tick) + 1;

			k = (uint16_t)RTE_MIN((uint64_t)k, due > c.tx ? due - c.tx : 0);
		}
		if (k != 0 && rte_pktmbuf_alloc_bulk(r->a.mp, pkts, k) == 0) {
			for (i = 0; i < k; i++) {
				rte_memcpy(rte_pktmbuf_mtod(pkts[i], void *), hdr, sizeof(hdr));
				pkts[i]->data_len = (uint16_t)len;
				pkts[i]->pkt_len = len;
			}
			sent = rte_eth_tx_burst(r->a.port, 0, pkts, k);
			c.tx += sent;
			if (sent < k)
				rte_pktmbuf_free_bulk(pkts + sent, k - sent);
		}
		raw_b_pass(r, &c);
		if (io)
			raw_a_rx(r, &c);
		counted = o->mode == PERF_MODE_RAW_TX ? c.tx : io ? c.fwd_b : c.rx_b;
		if (now - win_t >= hz / 1000) {
			peak = RTE_MAX(peak, (double)(counted - win_n) * len * 8 /
				       ((double)(now - win_t) / (double)hz) / 1e9);
			win_t = now;
			win_n = counted;
		}
	}
	secs = (double)(rte_rdtsc() - t0) / (double)hz;
	/* What is still on the link arrives; on a lossless link every frame does. */
	idle_end = rte_rdtsc() + hz / 1000 * DRAIN_MS;
	while (rte_rdtsc() < idle_end && (c.rx_b < c.tx || (io && c.rx_a < c.fwd_b))) {
		raw_b_pass(r, &c);
		if (io)
			raw_a_rx(r, &c);
	}
	counted = o->mode == PERF_MODE_RAW_TX ? c.tx : io ? c.fwd_b : c.rx_b;
	memset(&f, 0, sizeof(f));
	f.size = size;
	f.iters = counted;
	f.secs = secs;
	f.avg_gbps = (double)counted * len * 8 / secs / 1e9;
	f.mpps = (double)counted / secs / 1e6;
	f.peak_gbps = peak > 0 ? RTE_MAX(peak, f.avg_gbps) : f.avg_gbps;
	/* sent by a, received by b (raw-io: sent back by b, received by a) */
	f.sent = io ? c.fwd_b : c.tx;
	f.received = io ? c.rx_a : c.rx_b;
	f.sent_known = f.received_known = true;
	perf_report_bw(r, &f);
	return 0;
}
