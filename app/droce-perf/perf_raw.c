/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The raw modes, raw-tx, raw-rx and raw-io, one family and three rows: the link without
 * RoCE, testpmd's txonly / rxonly / io: the baseline the RoCE modes are measured against.
 * Host a's port transmits frames the size of a RoCEv2 SEND ONLY of SIZE bytes (at most
 * the MTU) over IPv4; host b's port receives them and frees them (raw-tx: the figure is
 * what a sent; raw-rx: what b received) or sends each back, its MACs swapped (raw-io: the
 * figure is what b sent back). No engine runs: the ports are polled directly, in bursts.
 * Host a runs on the main lcore; host b there too, or on its own lcore (perf_lcores.c),
 * or in a peer process (--client is a, --server is b), the start and the counts then
 * crossing the out-of-band TCP connection (perf_peer.c).
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
/* The peak's window; the server also looks for the client's end this often. */
#define WINDOW_US		1000

_Static_assert(PERF_MAX_BURST <= RAW_BURST, "--burst beyond the tx array");

/* What a raw mode's figure counts: what a sent, what b received, what b sent back. */
enum raw_count {
	RAW_SENT,		/* raw-tx */
	RAW_RECEIVED,		/* raw-rx */
	RAW_SENT_BACK,		/* raw-io: b sends each frame back */
};

/* Host a's counts: the main lcore's (the client's). */
struct raw_a {
	uint64_t tx, back;	/* frames sent; raw-io: frames that came back */
};

/* Host b's counts (the server's): its own cache line, its lcore may be another. */
struct raw_b {
	struct perf_run *r __rte_cache_aligned;
	enum raw_count count;	/* the mode */
	uint64_t rx, fwd;	/* frames received; raw-io: sent back */
	uint8_t eth[12];	/* raw-io: the frames' MACs going back, a's then b's */
	/* raw-io: frames the port refused, sent again before b receives more */
	struct rte_mbuf *held[RAW_BURST];
	uint16_t nb_held;
	uint64_t tx_final;	/* split: what a sent, written before a_done */
	double peak;		/* the server: its best window of what it counts */
};

/*
 * raw-io: b's held frames sent again; what the port still refuses stays held. With a on
 * another lcore (or process) its receive ring can be full for a while: held frames stop
 * b receiving, so the link pushes back (a's port refuses) instead of losing frames.
 */
static void
raw_b_resend(struct raw_b *b)
{
	uint16_t sent = rte_eth_tx_burst(b->r->b.port, 0, b->held, b->nb_held);

	b->fwd += sent;
	b->nb_held -= sent;
	if (sent > 0 && b->nb_held > 0)
		memmove(b->held, b->held + sent, b->nb_held * sizeof(b->held[0]));
}

/* b's side: receive, and free (raw-tx, raw-rx) or send back (raw-io). */
static void
raw_b_pass(struct raw_b *b)
{
	struct perf_run *r = b->r;
	uint16_t n, i;

	if (b->nb_held > 0) {
		raw_b_resend(b);
		if (b->nb_held > 0)
			return;
	}
	n = rte_eth_rx_burst(r->b.port, 0, b->held, RAW_BURST);
	b->rx += n;
	if (n == 0)
		return;
	if (b->count != RAW_SENT_BACK) {
		rte_pktmbuf_free_bulk(b->held, n);
		return;
	}
	/* testpmd's macswap: a NIC that filters by destination MAC takes them back */
	for (i = 0; i < n; i++)
		rte_memcpy(rte_pktmbuf_mtod(b->held[i], void *), b->eth, sizeof(b->eth));
	b->nb_held = n;
	raw_b_resend(b);
}

/* b has every frame a sent (tx), and none held. */
static bool
raw_b_has_all(const struct raw_b *b, uint64_t tx)
{
	return b->rx >= tx && b->nb_held == 0;
}

/* a's side in raw-io: what b sent back. */
static void
raw_a_rx(struct perf_run *r, struct raw_a *a)
{
	struct rte_mbuf *pkts[RAW_BURST];
	uint16_t n = rte_eth_rx_burst(r->a.port, 0, pkts, RAW_BURST);

	a->back += n;
	rte_pktmbuf_free_bulk(pkts, n);
}

/* a's side: k frames of len bytes, their Ethernet header hdr, in one burst. */
static void
raw_a_tx(struct perf_run *r, struct raw_a *a, const uint8_t hdr[DROCE_ETH_HLEN],
	 uint32_t len, uint16_t k)
{
	struct rte_mbuf *pkts[RAW_BURST];
	uint16_t sent, i;

	if (k == 0 || rte_pktmbuf_alloc_bulk(r->a.mp, pkts, k) != 0)
		return;
	for (i = 0; i < k; i++) {
		rte_memcpy(rte_pktmbuf_mtod(pkts[i], void *), hdr, DROCE_ETH_HLEN);
		pkts[i]->data_len = (uint16_t)len;
		pkts[i]->pkt_len = len;
	}
	sent = rte_eth_tx_burst(r->a.port, 0, pkts, k);
	a->tx += sent;
	if (sent < k)
		rte_pktmbuf_free_bulk(pkts + sent, k - sent);
}

/* The client's waits on the TCP connection in raw-io: what comes back is received. */
struct raw_idle {
	struct perf_run *r;
	struct raw_a *a;
};

static void
raw_a_idle(void *arg)
{
	struct raw_idle *i = arg;

	raw_a_rx(i->r, i->a);
}

/*
 * Host b on its own lcore: it receives (and sends back) until a's part is over and it has
 * every frame a sent, or DRAIN_MS after that; its counts published for the main lcore.
 */
static int
raw_b_main(void *arg)
{
	struct raw_b *b = arg;
	struct perf_split *sp = &b->r->split;
	uint64_t drain_end = 0, pass_start;

	while (!perf_split_flag(&sp->quit)) {
		pass_start = rte_rdtsc();
		raw_b_pass(b);
		__atomic_store_n(&sp->b_count, b->rx, __ATOMIC_RELAXED);
		__atomic_store_n(&sp->b_count2, b->fwd, __ATOMIC_RELAXED);
		if (drain_end == 0 && perf_split_flag(&sp->a_done))
			drain_end = rte_rdtsc() + rte_get_tsc_hz() / 1000 * DRAIN_MS;
		if (drain_end != 0 && (raw_b_has_all(b, b->tx_final) || pass_start >= drain_end)) {
			perf_split_set(&sp->b_done);
			break;
		}
	}
	return 0;
}

/* The figure's count: what a sent, what b received, or what b sent back. */
static uint64_t
raw_counted(enum raw_count count, uint64_t tx, uint64_t rx, uint64_t fwd)
{
	return count == RAW_SENT ? tx : count == RAW_SENT_BACK ? fwd : rx;
}

static double
raw_gbps(uint64_t frames, uint32_t len, double secs)
{
	return secs > 0 ? (double)frames * len * 8 / secs / 1e9 : 0;
}

/*
 * The server (host b alone): it receives from the start barrier until the client's end
 * message, looked for once a window (no system call per burst), then until it has what
 * the client sent or DRAIN_MS; the counts go back to the client, which then reports what
 * came back (raw-io). Its figure is the client's time over the mode's count.
 */
static int
raw_server(struct perf_run *r, struct raw_b *b, uint32_t len, struct perf_bw *f)
{
	uint64_t hz = rte_get_tsc_hz(), win = hz / 1000000 * WINDOW_US, now, win_t, win_n = 0;
	uint64_t cnt;
	struct perf_raw_report client, mine;
	uint64_t drain_end;

	if (perf_peer_raw_start(r) != 0)
		return -1;
	win_t = rte_rdtsc();
	for (;;) {
		raw_b_pass(b);
		now = rte_rdtsc();
		if (now - win_t < win)
			continue;
		/* what the server counts: frames received (raw-io: sent back) */
		cnt = b->count == RAW_SENT_BACK ? b->fwd : b->rx;
		b->peak = RTE_MAX(b->peak, raw_gbps(cnt - win_n, len,
						    (double)(now - win_t) / (double)hz));
		win_t = now;
		win_n = cnt;
		if (perf_peer_end_ready(r) || perf_run_stopping(r))
			break;
	}
	if (perf_peer_raw_recv(r, &client, NULL, NULL) != 0)
		return -1;
	drain_end = rte_rdtsc() + hz / 1000 * DRAIN_MS;
	while (!raw_b_has_all(b, client.tx)) {
		now = rte_rdtsc();
		raw_b_pass(b);
		if (now >= drain_end)
			break;
	}
	memset(&mine, 0, sizeof(mine));
	mine.rx = b->rx;
	mine.fwd = b->fwd;
	mine.peak_gbps = b->peak;
	/* the client's last report, what came back to it, answered to end the exchange */
	if (perf_peer_raw_send(r, &mine) != 0 || perf_peer_raw_recv(r, &client, NULL, NULL) != 0 ||
	    perf_peer_raw_send(r, &mine) != 0)
		return -1;
	f->secs = (double)client.ns / 1e9;
	f->iters = raw_counted(b->count, client.tx, b->rx, b->fwd);
	f->peak_gbps = b->count == RAW_SENT ? client.peak_gbps : b->peak;
	/* sent by the client, received by the server (raw-io: back at the client) */
	f->sent = client.tx;
	f->received = b->count == RAW_SENT_BACK ? client.back : b->rx;
	f->server_rx = b->rx;
	f->server_fwd = b->fwd;
	return 0;
}

/*
 * The client's end: its count and time to the server, whose counts come back while what
 * it sends back (raw-io) is still received; then, once it has all or DRAIN_MS passed,
 * what came back, which the server answers. Both ends then know every count.
 */
static int
raw_client_end(struct perf_run *r, enum raw_count count, struct raw_a *a, uint64_t ns,
	       double peak, struct perf_bw *f)
{
	struct perf_raw_report mine, server;
	bool io = count == RAW_SENT_BACK;
	struct raw_idle idle = { r, a };
	uint64_t drain_end;

	memset(&mine, 0, sizeof(mine));
	mine.tx = a->tx;
	mine.ns = ns;
	mine.peak_gbps = peak;
	if (perf_peer_raw_send(r, &mine) != 0 ||
	    perf_peer_raw_recv(r, &server, io ? raw_a_idle : NULL, &idle) != 0)
		return -1;
	drain_end = rte_rdtsc() + rte_get_tsc_hz() / 1000 * DRAIN_MS;
	while (io && a->back < server.fwd) {
		uint64_t pass_start = rte_rdtsc();

		raw_a_rx(r, a);
		if (pass_start >= drain_end)
			break;
	}
	mine.back = a->back;
	if (perf_peer_raw_send(r, &mine) != 0 || perf_peer_raw_recv(r, &server, NULL, NULL) != 0)
		return -1;
	f->iters = raw_counted(count, a->tx, server.rx, server.fwd);
	if (count != RAW_SENT)
		f->peak_gbps = server.peak_gbps;
	f->sent = a->tx;
	f->received = io ? a->back : server.rx;
	f->server_rx = server.rx;
	f->server_fwd = server.fwd;
	return 0;
}

static int
raw_run(struct perf_run *r, uint32_t size, enum raw_count count)
{
	const struct perf_opts *o = r->o;
	uint32_t payload = RTE_MIN(size, 128u << o->mtu);
	uint32_t len = DROCE_ETH_HLEN + DROCE_IPV4_HLEN + DROCE_UDP_HLEN + DROCE_BTH_LEN +
		       payload + DROCE_ICRC_LEN;
	uint64_t hz = rte_get_tsc_hz(), t0, t_end, now, drain_end, win_t, win_n = 0, counted;
	uint64_t rx_b, fwd_b;
	double per_tick = perf_rate_msgs(o, len) / (double)hz;	/* --rate, of a's frames */
	bool io = count == RAW_SENT_BACK, split = perf_run_splits(r);
	bool has_a = perf_run_has_a(r), has_b = perf_run_has_b(r);
	/* a peer process's MAC came over the raw exchange (perf_peer.c) */
	const uint8_t *b_mac = r->remote != NULL ? r->peer_mac : r->b.mac;
	const uint8_t *a_mac = r->remote != NULL ? r->peer_mac : r->a.mac;
	uint8_t hdr[DROCE_ETH_HLEN];
	struct raw_a a = { 0 };
	struct raw_b b;
	double peak = 0;
	struct perf_bw f;

	memset(&b, 0, sizeof(b));
	memset(&f, 0, sizeof(f));
	b.r = r;
	b.count = count;
	/* raw-io's frames go back to a from b: the MACs of a's frames swapped */
	memcpy(b.eth, a_mac, 6);
	memcpy(b.eth + 6, r->b.mac, 6);
	f.size = size;
	f.sent_known = f.received_known = true;
	if (!has_a) {
		if (raw_server(r, &b, len, &f) != 0)
			goto fail;
		goto report;
	}
	/* Ethernet: to b's MAC from a's; the rest of the frame is left as the pool gave it. */
	memcpy(hdr, b_mac, 6);
	memcpy(hdr + 6, r->a.mac, 6);
	hdr[12] = RAW_ETHERTYPE >> 8;
	hdr[13] = RAW_ETHERTYPE & 0xff;
	if (r->remote != NULL && perf_peer_raw_start(r) != 0)
		return -1;
	if (split && perf_split_launch(r, raw_b_main, &b) != 0)
		return -1;
	t0 = rte_rdtsc();
	t_end = o->duration_s > 0 ? t0 + (uint64_t)(o->duration_s * (double)hz) : UINT64_MAX;
	win_t = t0;
	for (;;) {
		uint64_t want = o->iters != 0 ? o->iters - a.tx : RAW_BURST;
		uint16_t k = (uint16_t)RTE_MIN(want, (uint64_t)o->burst);

		now = rte_rdtsc();
		if (now >= t_end || k == 0 || perf_run_stopping(r))
			break;
		if (per_tick > 0) {
			/* frames due by now (at t0, t0 + 1/rate, ...) less those sent */
			uint64_t due = (uint64_t)((double)(now - t0) * per_tick) + 1;

			k = (uint16_t)RTE_MIN((uint64_t)k, due > a.tx ? due - a.tx : 0);
		}
		raw_a_tx(r, &a, hdr, len, k);
		if (has_b && !split)
			raw_b_pass(&b);
		if (io)
			raw_a_rx(r, &a);
		if (now - win_t >= hz / 1000000 * WINDOW_US) {
			rx_b = split ? __atomic_load_n(&r->split.b_count, __ATOMIC_RELAXED) :
				       b.rx;
			fwd_b = split ? __atomic_load_n(&r->split.b_count2, __ATOMIC_RELAXED) :
					b.fwd;
			/* a alone counts what it sent: the server has its own peak of the rest */
			counted = has_b ? raw_counted(count, a.tx, rx_b, fwd_b) : a.tx;
			peak = RTE_MAX(peak, raw_gbps(counted - win_n, len,
						      (double)(now - win_t) / (double)hz));
			win_t = now;
			win_n = counted;
		}
	}
	f.secs = (double)(rte_rdtsc() - t0) / (double)hz;
	f.peak_gbps = peak;
	if (!has_b) {
		uint64_t ns = (uint64_t)(f.secs * 1e9);

		/* the time the server is told, to the ns: both ends print the same figure */
		f.secs = (double)ns / 1e9;
		if (raw_client_end(r, count, &a, ns, peak, &f) != 0)
			goto fail;
		goto report;
	}
	/* What is still on the link arrives; on a lossless link every frame does. */
	drain_end = rte_rdtsc() + hz / 1000 * DRAIN_MS;
	if (split) {
		b.tx_final = a.tx;
		perf_split_set(&r->split.a_done);
		while (!perf_split_flag(&r->split.b_done))
			if (io)
				raw_a_rx(r, &a);
		if (perf_split_join(r) != 0)
			goto fail;
	}
	while (!raw_b_has_all(&b, a.tx) || (io && a.back < b.fwd)) {
		now = rte_rdtsc();
		if (!split)
			raw_b_pass(&b);
		if (io)
			raw_a_rx(r, &a);
		if (now >= drain_end)
			break;
	}
	f.iters = raw_counted(count, a.tx, b.rx, b.fwd);
	/* sent by a, received by b (raw-io: sent back by b, received by a) */
	f.sent = io ? b.fwd : a.tx;
	f.received = io ? a.back : b.rx;
report:
	/* what the port refused to the end (DRAIN_MS) was not sent back */
	rte_pktmbuf_free_bulk(b.held, b.nb_held);
	f.avg_gbps = raw_gbps(f.iters, len, f.secs);
	f.mpps = f.secs > 0 ? (double)f.iters / f.secs / 1e6 : 0;
	f.peak_gbps = f.peak_gbps > 0 ? RTE_MAX(f.peak_gbps, f.avg_gbps) : f.avg_gbps;
	if (r->remote != NULL) {
		f.lost = f.sent > f.received ? f.sent - f.received : 0;
		/* a link between processes loses: both ends print what was lost where */
		f.server_known = true;
		f.back_known = io;
	}
	perf_report_bw(r, &f);
	return 0;
fail:
	rte_pktmbuf_free_bulk(b.held, b.nb_held);
	return -1;
}

static int
raw_tx_run(struct perf_run *r, uint32_t size)
{
	return raw_run(r, size, RAW_SENT);
}

static int
raw_rx_run(struct perf_run *r, uint32_t size)
{
	return raw_run(r, size, RAW_RECEIVED);
}

static int
raw_io_run(struct perf_run *r, uint32_t size)
{
	return raw_run(r, size, RAW_SENT_BACK);
}

/* IPv4 frames of the link, no RoCE to lose. */
static int
raw_check_opts(const struct perf_opts *o)
{
	if (o->ipv6) {
		fprintf(stderr, "droce-perf: --ipv6: the raw modes send IPv4 frames\n");
		return -1;
	}
	if (o->fault.on) {
		fprintf(stderr, "droce-perf: the loss options apply to the RoCE modes, not the raw "
			"link\n");
		return -1;
	}
	return 0;
}

const struct perf_mode_ops perf_mode_raw_tx = {
	.name = "raw-tx",
	.default_size = PERF_DEFAULT_RAW_SIZE,
	.default_iters = PERF_DEFAULT_RAW_ITERS,
	.peer = PERF_PEER_RAW,
	.check_opts = raw_check_opts,
	.raw = true,
	.run = raw_tx_run,
};

const struct perf_mode_ops perf_mode_raw_rx = {
	.name = "raw-rx",
	.default_size = PERF_DEFAULT_RAW_SIZE,
	.default_iters = PERF_DEFAULT_RAW_ITERS,
	.peer = PERF_PEER_RAW,
	.check_opts = raw_check_opts,
	.raw = true,
	.run = raw_rx_run,
};

const struct perf_mode_ops perf_mode_raw_io = {
	.name = "raw-io",
	.default_size = PERF_DEFAULT_RAW_SIZE,
	.default_iters = PERF_DEFAULT_RAW_ITERS,
	.peer = PERF_PEER_RAW,
	.check_opts = raw_check_opts,
	.raw = true,
	.run = raw_io_run,
};
