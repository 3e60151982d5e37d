/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The hosts: their ports (an internal net_ring pair, ports 0 and 1 of the EAL line, or a
 * port of their own with the peer in another process), their engines, regions, CQs and
 * QPs, connected; set up again for the prompt's next start when the settings changed
 * what they serve, and closed. What a mode needs of them its row says (struct
 * perf_mode_ops: raw, qp_depth, shared_qps); the traffic polls them through perf_poll.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_bus_vdev.h>
#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <droce_shm_bringup.h>

#include "perf.h"

#define NB_MBUFS		16384
/* Headroom plus the largest packet: headers (<= 106 bytes), 4096 of payload, pad, ICRC. */
#define MBUF_ROOM		(RTE_PKTMBUF_HEADROOM + 4352)
#define MBUF_CACHE		256
#define RING_SIZE		1024	/* the internal link and every port's queues */
#define LINK_UP_WAIT_MS		10000
/* Ports kept for the prompt's next start: drained until this long without a packet. */
#define DRAIN_QUIET_MS		20
#define LINK_DOWN_WAIT_MS	1000

/*
 * Sends in flight per QP: deep rings for few QPs; with many, one signaled batch each, as
 * droce-bench-engine found the memory of deeper rings costs more than it gives
 * (doc/performance.md).
 */
#define SQ_DEPTH_FEW		1024
#define SQ_DEPTH_MANY		32
#define FEW_QPS			16
/* Message buffers: distinct slots, so consecutive messages do not share cache lines. */
#define BUF_BYTES		(1u << 20)
#define MAX_BUF_SLOTS		1024
#define MIN_BUF_SLOTS		16
/* The region's header, doorbells and the arena's slack, beside CQs and QPs (region_bytes). */
#define REGION_FIXED		(4ull << 20)

/*
 * Every QP's path: the local ACK timer at 4.096 us * 2^18 (1.07 s: on a shared machine a
 * thread can be off its CPU for longer than a realistic timeout times the retries),
 * retries, the RNR timer.
 */
#define PATH_TIMEOUT		18
/*
 * Under the loss options a lost tail (the last packets of a round, their ACKs) waits for
 * the timer: perftest's default, 4.096 us * 2^14 (67 ms), so goodput measures the
 * transport, not the timer; an early timeout only retransmits.
 */
#define PATH_TIMEOUT_LOSS	14
#define PATH_RETRY		7
#define PATH_RNR_RETRY		7
#define PATH_MIN_RNR_TIMER	1
#define PD			1
#define CQ_SEND			1
#define CQ_RECV			2

static void
host_addr(struct perf_host *h)
{
	const uint8_t ip[4] = { 192, 0, 2, (uint8_t)h->id };

	/* ::ffff:192.0.2.id (RFC 5737): an IPv4 GID, RoCEv2 over IPv4. */
	droce_gid_from_ipv4(h->gid, ip);
}

/* fd00:dc::id (a ULA, RFC 4193): an IPv6 GID, RoCEv2 over IPv6. */
static void
host_addr6(struct perf_host *h)
{
	memset(h->gid, 0, sizeof(h->gid));
	h->gid[0] = 0xfd;
	h->gid[3] = 0xdc;
	h->gid[15] = h->id;
}

static int
host_prepare(struct perf_host *h, const char *name, uint8_t id, bool ring, uint32_t nb_engines)
{
	char n[RTE_MEMPOOL_NAMESIZE];
	uint32_t i;

	h->name = name;
	h->id = id;
	h->nb_engines = nb_engines;
	host_addr(h);
	snprintf(n, sizeof(n), "perf_mp_%s", name);
	h->mp = rte_pktmbuf_pool_create(n, NB_MBUFS * nb_engines, MBUF_CACHE, 0, MBUF_ROOM,
					SOCKET_ID_ANY);
	if (h->mp == NULL) {
		fprintf(stderr, "droce-perf: host %s: mempool: %s\n", name, rte_strerror(rte_errno));
		return -1;
	}
	for (i = 0; ring && i < nb_engines; i++) {
		snprintf(n, sizeof(n), "perf_link_%s%u", name, i);
		h->link_in[i] = rte_ring_create(n, RING_SIZE, SOCKET_ID_ANY,
						RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (h->link_in[i] == NULL) {
			fprintf(stderr, "droce-perf: host %s: ring: %s\n", name,
				rte_strerror(rte_errno));
			return -1;
		}
	}
	return 0;
}

/* An rx and a tx queue per engine, started. */
static int
port_start(struct perf_host *h)
{
	struct rte_eth_conf conf;
	struct rte_ether_addr mac;
	uint32_t q;
	int ret;

	memset(&conf, 0, sizeof(conf));
	ret = rte_eth_dev_configure(h->port, (uint16_t)h->nb_engines, (uint16_t)h->nb_engines,
				    &conf);
	for (q = 0; ret == 0 && q < h->nb_engines; q++) {
		ret = rte_eth_rx_queue_setup(h->port, (uint16_t)q, RING_SIZE, SOCKET_ID_ANY, NULL,
					     h->mp);
		if (ret == 0)
			ret = rte_eth_tx_queue_setup(h->port, (uint16_t)q, RING_SIZE, SOCKET_ID_ANY,
						     NULL);
	}
	if (ret == 0)
		ret = rte_eth_dev_start(h->port);
	if (ret != 0) {
		fprintf(stderr, "droce-perf: port %u: %u queue(s) each way, started: %s\n",
			h->port, h->nb_engines, rte_strerror(-ret));
		return -1;
	}
	h->port_started = true;
	if (rte_eth_macaddr_get(h->port, &mac) != 0)
		return -1;
	memcpy(h->mac, mac.addr_bytes, sizeof(h->mac));
	return 0;
}

/*
 * After both ports started: a memif client connects only to a started server. A --server
 * waits for its link as long as it takes, as perftest's server waits for its client (the
 * client's process may still be starting); its line on stderr says when it waits, so a
 * script starts the client then. Anyone else gives up LINK_UP_WAIT_MS after its port
 * started, judged by when a look at the link began (not after a sleep past the limit).
 */
static int
port_wait_up(const struct perf_run *r, struct perf_host *h)
{
	bool server = r->o->role == PERF_ROLE_SERVER;
	uint64_t end = rte_get_timer_cycles() + rte_get_timer_hz() / 1000 * LINK_UP_WAIT_MS;
	struct rte_eth_link link;
	uint64_t look;

	if (server)
		fprintf(stderr, "droce-perf: --server: port %u started, waiting for its link\n",
			h->port);
	for (;;) {
		look = rte_get_timer_cycles();
		memset(&link, 0, sizeof(link));
		if (rte_eth_link_get_nowait(h->port, &link) == 0 &&
		    link.link_status == RTE_ETH_LINK_UP)
			return 0;
		if (!server && look >= end)
			break;
		rte_delay_ms(1);
	}
	fprintf(stderr, "droce-perf: port %u: link did not come up in %d ms\n", h->port,
		LINK_UP_WAIT_MS);
	return -1;
}

/*
 * The internal link: a's port transmits into b's receive rings and back, queue by queue;
 * with fewer queues on the peer (--engines), the last takes the rest. The rings stay
 * single-producer: a host's engines all run on its one lcore.
 */
static int
ring_port(struct perf_host *h, const struct perf_host *peer)
{
	struct rte_ring *tx[PERF_MAX_ENGINES];
	char name[64];
	uint32_t i;
	int port;

	for (i = 0; i < h->nb_engines; i++)
		tx[i] = peer->link_in[RTE_MIN(i, peer->nb_engines - 1)];
	snprintf(name, sizeof(name), "net_perf_%s", h->name);
	port = rte_eth_from_rings(name, h->link_in, (unsigned int)h->nb_engines, tx,
				  (unsigned int)h->nb_engines, SOCKET_ID_ANY);
	if (port < 0) {
		fprintf(stderr, "droce-perf: net_ring port: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	h->port = (uint16_t)port;
	h->port_ours = true;
	return 0;
}

static uint32_t
mr_access(void)
{
	/* Every remote access, as perftest registers its buffer whatever the test. */
	return IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
	       IBV_ACCESS_REMOTE_ATOMIC;
}

/* Device, engine, region, domain and the one MR (slot_size-byte slots). */
static int
host_engine(struct perf_host *h, uint32_t nb_qps, uint32_t slot_size, uint64_t region_size,
	    const struct droce_cc_params *cc)
{
	struct droce_engine_dev_conf dconf;
	struct droce_engine_domain_conf domconf;
	struct droce_engine_conf ec;
	uint32_t i;

	/* QPNs 2..max_qps-1 (QP0 and QP1 are special) */
	h->max_qps = rte_align32pow2(nb_qps + 2);
	if (h->max_qps < 64)
		h->max_qps = 64;
	dconf.max_qps = h->max_qps;
	h->by_qpn = calloc(h->max_qps, sizeof(*h->by_qpn));
	h->dev = droce_engine_dev_create(&dconf);
	if (h->by_qpn == NULL || h->dev == NULL)
		return -1;
	memset(&ec, 0, sizeof(ec));
	ec.slow_rx_wake_fd = -1;
	ec.port_id = h->port;
	ec.mp = h->mp;
	memcpy(ec.mac, h->mac, sizeof(ec.mac));
	memcpy(ec.gids[0], h->gid, sizeof(h->gid));
	ec.nb_gids = 1;
	ec.wait = DROCE_ENGINE_WAIT_POLL;	/* polled by the main lcore, which never sleeps */
	ec.early_retransmit = true;	/* goodput under loss is what it measures */
	ec.slow_rx = h->slow_rx;	/* ARP for a peer process (perf_peer.c), else NULL */
	ec.cc = cc;			/* --cc, --dcqcn (perf_cc.c) */
	for (i = 0; i < h->nb_engines; i++) {
		ec.rx_queue = (uint16_t)i;
		ec.tx_queue = (uint16_t)i;
		ec.slow_tx = i == 0 ? h->slow_tx : NULL;	/* one consumer */
		h->eng[i] = droce_engine_create(h->dev, i, &ec);
		if (h->eng[i] == NULL)
			return -1;
	}
	h->region_size = region_size;
	h->region = aligned_alloc(DROCE_SHM_CACHE_LINE, h->region_size);
	if (h->region == NULL ||
	    droce_shm_arena_init(&h->arena, h->region, h->region_size, h->nb_engines) != 0)
		return -1;
	memset(&domconf, 0, sizeof(domconf));
	domconf.region = h->region;
	domconf.region_size = h->region_size;
	domconf.max_mrs = 2;
	domconf.max_ahs = 1;
	domconf.max_events = 1024;
	h->dom = droce_engine_domain_create(h->dev, &domconf);
	if (h->dom == NULL)
		return -1;
	h->slot_size = slot_size;
	h->buf_slots = RTE_MIN(RTE_MAX(BUF_BYTES / slot_size, (uint32_t)MIN_BUF_SLOTS),
			       (uint32_t)MAX_BUF_SLOTS);
	h->buf_slots = RTE_MAX(h->buf_slots, (uint32_t)((h->buf_min + slot_size - 1) / slot_size));
	h->buf_len = (uint64_t)h->buf_slots * slot_size;
	h->buf = aligned_alloc(4096, RTE_ALIGN_CEIL(h->buf_len, 4096));
	if (h->buf == NULL)
		return -1;
	memset(h->buf, h->id, h->buf_len);
	return droce_engine_mr_reg(h->dom, PD, h->buf, (uintptr_t)h->buf, h->buf_len,
				   mr_access(), &h->lkey, &h->rkey);
}

static bool
lkey_check(void *arg, uint32_t lkey, uint64_t addr, uint64_t len, unsigned int access)
{
	const struct perf_host *h = arg;
	uint64_t base = (uintptr_t)h->buf;

	(void)access;	/* the one MR has local write */
	return lkey == h->lkey && addr >= base && len <= h->buf_len && addr - base <= h->buf_len - len;
}

static bool
ah_check(void *arg, uint32_t ah)
{
	return perf_ud_ah_valid(arg, ah);
}

static struct droce_engine_region
host_region(struct perf_host *h)
{
	return (struct droce_engine_region){ .base = h->region, .arena = &h->arena, .dom = h->dom };
}

/* The mode's depth (lat's shallow rings), else by the number of QPs. */
static uint32_t
sq_depth(const struct perf_opts *o, uint32_t n)
{
	if (o->mode->qp_depth != 0)
		return o->mode->qp_depth;
	return n <= FEW_QPS ? SQ_DEPTH_FEW : SQ_DEPTH_MANY;
}

/* A receiver holds a ring of delivered, not yet reposted receives plus those in flight. */
static uint32_t
rq_depth(const struct perf_opts *o, uint32_t n)
{
	return o->mode->qp_depth != 0 ? o->mode->qp_depth : 2 * sq_depth(o, n);
}

/* Every WQE that could complete at once: no overrun however late the CQ is polled. */
static uint32_t
cq_size(const struct perf_opts *o, uint32_t n)
{
	uint32_t c = rte_align32pow2(RTE_MAX(n, 1u) * RTE_MAX(sq_depth(o, n), rq_depth(o, n)));

	return RTE_MIN(c, DROCE_SHM_MAX_CQE);
}

/* The client region: header, doorbells and slack, two CQs, each QP's control and rings. */
static uint64_t
region_bytes(const struct perf_opts *o, uint32_t n)
{
	uint64_t qp = sizeof(struct droce_shm_qp) + 2 * DROCE_SHM_CACHE_LINE +
		      (uint64_t)sq_depth(o, n) * droce_shm_sq_stride(1, 0) +
		      (uint64_t)rq_depth(o, n) * droce_shm_rq_stride(1);

	return REGION_FIXED + 2 * (uint64_t)cq_size(o, n) * sizeof(struct droce_shm_cqe) +
	       (uint64_t)n * RTE_ALIGN_CEIL(qp, DROCE_SHM_CACHE_LINE);
}

static int
host_qps(struct perf_host *h, const struct perf_opts *o, uint32_t n)
{
	struct droce_engine_region r = host_region(h);
	uint32_t sq = sq_depth(o, n), rq = rq_depth(o, n), ncqe = cq_size(o, n);
	struct droce_engine_region_cq_mem cmem;
	struct droce_engine_region_qp_mem qmem;
	struct droce_engine_qp_conf c;
	uint32_t i;

	h->scq.cq = droce_engine_region_cq_create(&r, ncqe, -1, CQ_SEND, &cmem, &h->scq.view);
	h->rcq.cq = droce_engine_region_cq_create(&r, ncqe, -1, CQ_RECV, &cmem, &h->rcq.view);
	h->qps = calloc(n, sizeof(*h->qps));
	h->qpns = calloc(n, sizeof(*h->qpns));
	h->ready = calloc(n, sizeof(*h->ready));
	if (h->scq.cq == NULL || h->rcq.cq == NULL || h->qps == NULL || h->qpns == NULL ||
	    h->ready == NULL) {
		fprintf(stderr, "droce-perf: host %s: CQs of %u entries: failed\n", h->name, ncqe);
		return -1;
	}
	for (i = 0; i < n; i++) {
		struct perf_qp *q = &h->qps[i];

		memset(&c, 0, sizeof(c));
		c.qp_type = o->qp_type;
		c.pd = PD;
		c.send_cq = h->scq.cq;
		c.recv_cq = h->rcq.cq;
		c.sq_size = sq;
		c.sq_max_sge = 1;
		c.rq_size = rq;
		c.rq_max_sge = 1;
		/* QPs dealt over the engines */
		c.engine_id = i % h->nb_engines;
		c.db_slot = h->next_db_slot[c.engine_id]++;
		q->qp = droce_engine_region_qp_create(&r, &c, &qmem, &q->view);
		if (q->qp == NULL) {
			fprintf(stderr, "droce-perf: host %s: QP %u: %s\n", h->name, i,
				rte_strerror(rte_errno));
			return -1;
		}
		q->qpn = q->view.qp_num;
		h->qpns[i] = q->qpn;
		h->by_qpn[q->qpn & (h->max_qps - 1)] = q;
		q->view.supported_wr = 1u << DROCE_SHM_WR_SEND | 1u << DROCE_SHM_WR_RDMA_WRITE |
				       1u << DROCE_SHM_WR_RDMA_READ |
				       1u << DROCE_SHM_WR_ATOMIC_CMP_AND_SWP |
				       1u << DROCE_SHM_WR_ATOMIC_FETCH_AND_ADD;
		q->view.lkey_check = lkey_check;
		q->view.ah_check = ah_check;
		q->view.check_arg = h;
	}
	h->nb_qps = n;
	return 0;
}

/*
 * What h tells its peer (struct perf_peer). Two processes will send this over the
 * out-of-band exchange instead of handing it over in memory.
 */
static void
host_describe(const struct perf_host *h, struct perf_peer *p)
{
	memcpy(p->mac, h->mac, sizeof(p->mac));
	memcpy(p->gid, h->gid, sizeof(p->gid));
	p->nb_qps = h->nb_qps;
	p->qpns = h->qpns;
	p->psn = h->psn;
	p->buf_addr = (uintptr_t)h->buf;
	p->rkey = h->rkey;
	p->buf_len = h->buf_len;
	p->vaddrs = NULL;	/* every QP WRITEs at buf_addr */
	p->psns = NULL;		/* every QP starts at psn */
}

/* h's QPs RESET -> INIT -> RTR -> RTS towards the peer's (lib/shm/droce_shm_bringup.h). */
static int
host_connect(struct perf_host *h, const struct perf_opts *o, const struct perf_peer *p)
{
	struct droce_shm_qp_attr steps[DROCE_SHM_BRINGUP_STEPS];
	struct droce_shm_bringup_path path;
	uint32_t i, k;

	if (p->nb_qps != h->nb_qps ||
	    droce_engine_dev_neigh_add(h->dev, p->gid, p->mac) != 0)
		return -1;
	if (o->qp_type == DROCE_SHM_QPT_UD)
		return perf_ud_connect(h, p, PD);
	for (i = 0; i < h->nb_qps; i++) {
		memset(&path, 0, sizeof(path));
		path.qp_type = o->qp_type;
		path.access = mr_access();
		path.mtu = o->mtu;
		path.dest_qpn = p->qpns[i];
		path.sq_psn = h->psn;
		path.rq_psn = p->psns != NULL ? p->psns[i] : p->psn;
		path.timeout = o->qp_timeout != 0 ? o->qp_timeout :
			       o->fault.on ? PATH_TIMEOUT_LOSS : PATH_TIMEOUT;
		path.retry_cnt = PATH_RETRY;
		path.rnr_retry = PATH_RNR_RETRY;
		path.min_rnr_timer = PATH_MIN_RNR_TIMER;
		/* READs and atomics out at once: as many as b's responder keeps for replay */
		path.rd_atomic = DROCE_ENGINE_MAX_DEST_RD_ATOMIC;
		droce_shm_bringup_ah(&path.ah, p->gid, 0);
		droce_shm_bringup_connected(&path, steps);
		for (k = 0; k < DROCE_SHM_BRINGUP_STEPS; k++) {
			int ret = droce_engine_qp_modify(h->qps[i].qp, &steps[k]);

			if (ret != 0) {
				fprintf(stderr, "droce-perf: host %s: QP %u to state %u: %s\n",
					h->name, h->qps[i].qpn, steps[k].qp_state,
					strerror(-ret));
				return -1;
			}
		}
	}
	return 0;
}

static void
host_close(struct perf_host *h)
{
	uint32_t i;

	if (h->dom != NULL)
		droce_engine_domain_destroy(h->dom);	/* QPs, CQs and the MR with it */
	for (i = 0; i < h->nb_engines; i++) {
		if (h->eng[i] != NULL)
			droce_engine_destroy(h->eng[i]);
	}
	if (h->dev != NULL)
		droce_engine_dev_destroy(h->dev);
	perf_net_release(h);
	droce_engine_port_close(h->port, h->port_started, h->port_started || h->port_ours);
	droce_fault_detach(h->fault);	/* after the stop: no rx burst runs */
	free(h->qps);
	free(h->qpns);
	free(h->ready);
	free(h->by_qpn);
	free(h->buf);
	free(h->region);
	/* closed: perf_hosts_close after an early close (perf_hosts_peer_close) finds nothing */
	h->dom = NULL;
	memset(h->eng, 0, sizeof(h->eng));
	h->dev = NULL;
	h->port_started = h->port_ours = false;
	h->fault = NULL;
	h->qps = NULL;
	h->qpns = NULL;
	h->ready = NULL;
	h->by_qpn = NULL;
	h->buf = NULL;
	h->region = NULL;
}

/*
 * The end of a run with a peer process. A port must not close while the other's engine
 * transmits: DPDK 22.11's net_memif unmaps its regions when the peer disconnects, under a
 * polling engine. So the client closes its host only after the closing exchange, which the
 * server enters once its own run is over and without polling its engines again (the
 * client's run can end first: its last ACK precedes the server's count), and the server
 * closes its own once the link went down (or after LINK_DOWN_WAIT_MS, a peer that stays,
 * such as droced).
 */
/* Until h's link is down (its peer closed), wait_ms at most. */
static void
link_down_wait(const struct perf_host *h, int wait_ms)
{
	struct rte_eth_link link;
	int i;

	for (i = 0; i < wait_ms; i++) {
		memset(&link, 0, sizeof(link));
		if (rte_eth_link_get_nowait(h->port, &link) == 0 &&
		    link.link_status == RTE_ETH_LINK_DOWN)
			break;
		rte_delay_ms(1);
	}
}

int
perf_hosts_peer_close(struct perf_run *r)
{
	struct perf_host *h = r->o->role == PERF_ROLE_CLIENT ? &r->a : &r->b;
	int rc;

	rc = perf_peer_close(r);
	if (r->o->role == PERF_ROLE_CLIENT)
		host_close(h);
	else
		link_down_wait(h, LINK_DOWN_WAIT_MS);
	return rc;
}

/* Both link rings are drained before either pool goes: each may hold the other's mbufs. */
static void
hosts_release(struct perf_host *a, struct perf_host *b)
{
	struct perf_host *h[2] = { a, b };
	void *m = NULL;
	int i;
	unsigned int q;

	for (i = 0; i < 2; i++) {
		for (q = 0; q < PERF_MAX_ENGINES; q++) {
			if (h[i]->link_in[q] == NULL)
				continue;
			while (rte_ring_dequeue(h[i]->link_in[q], &m) == 0)
				rte_pktmbuf_free(m);
		}
	}
	for (i = 0; i < 2; i++) {
		for (q = 0; q < PERF_MAX_ENGINES; q++)
			rte_ring_free(h[i]->link_in[q]);
		rte_mempool_free(h[i]->mp);
	}
}

/*
 * Ports of the EAL line kept going with their pools from the last set-up (hosts_close):
 * as many queues as engines, and nothing left in them of the last run's traffic, whose
 * QPNs and PSNs the new QPs take again.
 */
static int
ports_reuse(struct perf_run *r, uint32_t na, uint32_t nb)
{
	struct perf_host *h[2] = { &r->a, &r->b };
	struct rte_mbuf *pkts[RING_SIZE];
	uint64_t quiet_end = rte_get_timer_cycles() + rte_get_timer_hz() / 1000 * DRAIN_QUIET_MS;
	uint32_t q;
	uint16_t got;
	int i;

	if (na != r->a.nb_engines || nb != r->b.nb_engines) {
		if (na == nb && r->a.nb_engines == r->b.nb_engines)
			fprintf(stderr, "droce-perf: ports %u and %u have %u queue(s) each way, "
				"these QPs need %u: run droce-perf again with these settings\n",
				r->a.port, r->b.port, r->a.nb_engines, nb);
		else
			fprintf(stderr, "droce-perf: ports %u and %u have %u and %u queue(s) each "
				"way, these settings need %u and %u (--engines): run droce-perf "
				"again with them\n", r->a.port, r->b.port, r->a.nb_engines,
				r->b.nb_engines, na, nb);
		return -1;
	}
	/* quiet_end judged by when a pass started: the last pass starts after it */
	for (;;) {
		uint64_t pass_start = rte_get_timer_cycles();

		for (i = 0; i < 2; i++) {
			for (q = 0; q < h[i]->nb_engines; q++) {
				got = rte_eth_rx_burst(h[i]->port, (uint16_t)q, pkts, RING_SIZE);
				if (got == 0)
					continue;
				rte_pktmbuf_free_bulk(pkts, got);
				quiet_end = rte_get_timer_cycles() +
					    rte_get_timer_hz() / 1000 * DRAIN_QUIET_MS;
			}
		}
		if (pass_start >= quiet_end)
			return 0;
	}
}

/*
 * The topology. No port on the EAL line: host a and host b joined by an internal net_ring
 * pair. Two ports: host a on port 0, host b on port 1. One port is for --server or
 * --client (host_open_alone).
 */
/* An engine per DROCE_SHM_DB_SLOTS QPs: its doorbell slots in a client region. */
static uint32_t
host_nb_engines(uint32_t nb_qps)
{
	return RTE_MAX((nb_qps + DROCE_SHM_DB_SLOTS - 1) / DROCE_SHM_DB_SLOTS, 1u);
}

static int
hosts_open(struct perf_run *r)
{
	const struct perf_opts *o = r->o;
	uint16_t nb_ports = rte_eth_dev_count_avail();
	bool ring = nb_ports == 0;
	uint32_t n = o->mode->raw ? 0 : o->qps;
	uint32_t ne = host_nb_engines(n);
	/* --engines: host a's QPs spread wider; b keeps what its QPs need */
	uint32_t ne_a = o->cc.a_engines != 0 ? o->cc.a_engines : ne;
	uint64_t region = region_bytes(o, n);
	struct perf_peer pa, pb;

	if (r->a.mp != NULL) {
		/*
		 * the prompt's next start, on ports of the EAL line kept going (hosts_close),
		 * whose fault driver went with the hosts
		 */
		if (ports_reuse(r, ne_a, ne) != 0 || perf_fault_attach(r) != 0)
			return -1;
		goto engines;
	}
	if (nb_ports != 0 && nb_ports != 2) {
		fprintf(stderr, "droce-perf: the EAL line gives %u port(s): give none (an "
			"internal net_ring pair) or two (host a on port 0, host b on port 1), or "
			"one with --server or --client (the peer in another process)\n", nb_ports);
		return -1;
	}
	if (ne_a != ne && !ring) {
		fprintf(stderr, "droce-perf: --engines: only on the internal net_ring pair (no port "
			"on the EAL line)\n");
		return -1;
	}
	if (ne_a < ne) {
		fprintf(stderr, "droce-perf: --engines %u: %u QPs need %u engines (%u doorbell "
			"slots each)\n", ne_a, n, ne, DROCE_SHM_DB_SLOTS);
		return -1;
	}
	if (host_prepare(&r->a, "a", 1, ring, ne_a) != 0 ||
	    host_prepare(&r->b, "b", 2, ring, ne) != 0)
		return -1;
	if (o->ipv6) {
		host_addr6(&r->a);
		host_addr6(&r->b);
	}
	if (ring) {
		if (ring_port(&r->a, &r->b) != 0 || ring_port(&r->b, &r->a) != 0)
			return -1;
	} else {
		r->a.port = 0;
		r->b.port = 1;
	}
	if (port_start(&r->a) != 0 || port_start(&r->b) != 0 ||
	    port_wait_up(r, &r->a) != 0 || port_wait_up(r, &r->b) != 0 || perf_fault_attach(r) != 0)
		return -1;
	if (ring) {
		/* The internal ports' MACs, fixed as droce-bench-engine's: 02:00:00:00:00:id. */
		memset(r->a.mac, 0, sizeof(r->a.mac));
		memset(r->b.mac, 0, sizeof(r->b.mac));
		r->a.mac[0] = r->b.mac[0] = 0x02;	/* locally administered */
		r->a.mac[5] = 1;
		r->b.mac[5] = 2;
	}
engines:
	if (host_engine(&r->a, RTE_MAX(n, 1u), r->max_size + perf_recv_room(o), region,
			&o->cc.params) != 0 ||
	    host_engine(&r->b, RTE_MAX(n, 1u), r->max_size + perf_recv_room(o), region,
			&o->cc.params) != 0) {
		fprintf(stderr, "droce-perf: engines: set-up failed: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	if (n == 0)
		return 0;
	r->a.psn = 0x100;
	r->b.psn = 0x200;
	if (host_qps(&r->a, o, n) != 0 || host_qps(&r->b, o, n) != 0)
		return -1;
	host_describe(&r->a, &pa);
	host_describe(&r->b, &pb);
	r->peer_b = pb;
	return host_connect(&r->a, o, &pb) != 0 || host_connect(&r->b, o, &pa) != 0 ? -1 : 0;
}

/*
 * h's engines, QPs and buffers closed; its port, still started, and its pool kept for
 * hosts_open (ports_reuse).
 */
static void
host_close_keep_port(struct perf_host *h)
{
	struct perf_host keep = *h;

	h->port_started = false;	/* host_close leaves the port alone */
	host_close(h);
	memset(h, 0, sizeof(*h));
	h->name = keep.name;
	h->id = keep.id;
	h->port = keep.port;
	h->port_started = keep.port_started;
	h->mp = keep.mp;
	h->nb_engines = keep.nb_engines;
	memcpy(h->mac, keep.mac, sizeof(h->mac));
	memcpy(h->gid, keep.gid, sizeof(h->gid));
}

/*
 * Both hosts closed: for good at exit; else (the prompt's start with other settings)
 * ready for hosts_open again. Ports of the EAL line then keep going, with their pools:
 * closed, a port would be gone (a vdev is not probed again). The internal net_ring pair
 * goes with its vdevs, whose names ring_port() takes again.
 */
static void
hosts_close(struct perf_run *r, bool for_good)
{
	struct perf_host *h[2] = { &r->a, &r->b };
	char vdev[2][RTE_ETH_NAME_MAX_LEN];
	int i;

	if (!for_good && !r->a.port_ours && r->a.mp != NULL) {
		host_close_keep_port(&r->a);
		host_close_keep_port(&r->b);
		return;
	}
	for (i = 0; i < 2; i++) {
		vdev[i][0] = '\0';
		if (h[i]->port_ours && rte_eth_dev_get_name_by_port(h[i]->port, vdev[i]) != 0)
			vdev[i][0] = '\0';
		host_close(h[i]);
		if (vdev[i][0] != '\0')
			rte_vdev_uninit(vdev[i]);
	}
	hosts_release(&r->a, &r->b);
	memset(&r->a, 0, sizeof(r->a));
	memset(&r->b, 0, sizeof(r->b));
}

/*
 * Whether hosts set up for s serve a run of o: the same QPs (number, type, MTU, queue
 * depths) and buffer slots as large as o's messages. Modes with shared_qps (send and
 * write) share QPs; any other change of mode, lat's shallow queues or the raw modes' lack
 * of QPs, sets them up again.
 */
static bool
hosts_serve(const struct perf_run *r, const struct perf_opts *s, const struct perf_opts *o)
{
	const struct perf_mode_ops *sm = s->mode, *om = o->mode;
	uint32_t largest = perf_largest_size(o);

	if (r->a.dev == NULL || r->b.dev == NULL || largest > r->a.slot_size)
		return false;
	if (sm->raw || om->raw)
		return sm->raw && om->raw;
	return (sm == om || (sm->shared_qps && om->shared_qps)) && s->qps == o->qps &&
	       s->qp_type == o->qp_type && s->mtu == o->mtu;
}

int
perf_hosts_fit(struct perf_run *r)
{
	if (!r->broken && hosts_serve(r, &r->opened, r->o))
		return 0;
	hosts_close(r, false);
	r->broken = true;	/* until hosts_open has set all up */
	r->max_size = perf_largest_size(r->o);
	r->opened = *r->o;
	if (hosts_open(r) != 0) {
		fprintf(stderr, "droce-perf: the hosts could not be set up for these settings\n");
		return -1;
	}
	r->broken = false;
	return 0;
}

/*
 * --server or --client: one host on port 0, its peer another process. The client is host
 * a (it sends), the server host b, as perftest's roles. The out-of-band exchange
 * (perf_peer.c) agrees the MTU and the buffer the peer may WRITE before the engine and
 * its MR exist, then gives the peer's QPs, which the peer's order of messages brackets.
 */
static int
host_open_alone(struct perf_run *r, struct perf_opts *o)
{
	bool client = o->role == PERF_ROLE_CLIENT;
	struct perf_host *h = client ? &r->a : &r->b;
	uint16_t nb_ports = rte_eth_dev_count_avail();
	struct perf_peer p;

	if (nb_ports != 1) {
		fprintf(stderr, "droce-perf: --%s: the EAL line gives %u port(s), not one\n",
			client ? "client" : "server", nb_ports);
		return -1;
	}
	if (host_prepare(h, client ? "a" : "b", client ? 1 : 2, false, host_nb_engines(o->qps)) != 0)
		return -1;
	h->port = 0;
	if (port_start(h) != 0 || port_wait_up(r, h) != 0 || perf_fault_attach(r) != 0 ||
	    perf_peer_open(r, h, o) != 0)
		return -1;
	/* the raw modes: the port alone, polled by perf_raw.c */
	if (o->mode->raw)
		return 0;
	if (host_engine(h, o->qps, r->max_size, region_bytes(o, o->qps), &o->cc.params) != 0) {
		fprintf(stderr, "droce-perf: engine: set-up failed: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	h->psn = client ? 0x100 : 0x200;
	if (host_qps(h, o, o->qps) != 0 || perf_peer_exchange(r, h, &p) != 0)
		return -1;
	if (client)
		r->peer_b = p;
	if (host_connect(h, o, &p) != 0)
		return -1;
	return perf_peer_connected(r);
}

int
perf_hosts_open(struct perf_run *r, struct perf_opts *o)
{
	return o->role == PERF_ROLE_BOTH ? hosts_open(r) : host_open_alone(r, o);
}

void
perf_hosts_close(struct perf_run *r, bool failed)
{
	/*
	 * A server that failed (the client too, most likely: a refused exchange) closes its
	 * port after the client's, as perf_hosts_peer_close orders a run that went well: the
	 * client may still poll its engines.
	 */
	if (failed && r->o->role == PERF_ROLE_SERVER && r->b.port_started)
		link_down_wait(&r->b, LINK_DOWN_WAIT_MS);
	perf_peer_free(r);
	hosts_close(r, true);
}
