/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * droce-bench-engine: what two droce engines deliver over a net_ring link, one figure per
 * run. Two "hosts" live in this process, each a device with one engine behind one
 * net_ring port; a's port transmits into the ring b receives from, and back.
 *
 * With --lcores 2 (the default) exactly two threads spin, one per lcore, each pinned to
 * its own CPU. Each is one host: it runs that host's application (posting, polling,
 * reposting) and polls that host's engine with droce_engine_poll() between its own steps,
 * as an application linking the engine in-process would. Nobody sleeps when idle. The
 * main lcore is host a (the sender, or the pinger), the worker lcore host b (the receiver,
 * or the ponger). With --lcores 1 the main lcore runs both hosts in turn: the CPU cost of
 * both ends on one core, comparable with testpmd forwarding on one core, and immune to
 * the other CPU being taken by something else. Control calls (create, modify, destroy)
 * run only while no thread polls an engine: the engines are not "running" in
 * droce_engine_run()'s sense, so those calls apply on the calling thread.
 *
 * Modes (--mode):
 *   rate  --qps N streams of SIZE-byte RC SENDs (default 64): the sender keeps every send
 *         ring full (unsignaled but every 16th), the receiver reposts each receive as it
 *         completes; messages delivered per second after a warm-up.
 *   bw    the same on one QP with 64 KiB messages: Gb/s of payload.
 *   lat   ping-pong of SIZE-byte RC SENDs, every poll a busy poll: median and 99th
 *         percentile of half the round trip, in microseconds.
 *   raw   the link without droce: the main lcore allocates, fills (a frame the size of a
 *         64-byte RC SEND) and transmits mbufs on a's port, the worker receives them on
 *         b's and frees them.
 * Each run prints one line of key=value pairs on stdout; devtools/bench-engine.sh runs
 * every mode next to testpmd and doc/performance.md has results.
 */

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_memcpy.h>
#include <rte_ring.h>

#include <droce_engine.h>
#include <droce_shm_arena.h>
#include <droce_shm_client.h>
#include <droce_shm_qp_attr.h>
#include <droce_wire_hdr.h>

#include <droce_engine_region.h>
#include <droce_shm_bringup.h>

/* ---- Defaults and sizes ---- */

#define DEFAULT_WARMUP_MS	500
#define DEFAULT_DURATION_MS	2000
#define DEFAULT_SIZE		64
#define BW_SIZE			65536
#define DEFAULT_MTU		IBV_MTU_4096
#define MAX_QPS			2048

#define NB_MBUFS		8192
/* Headroom plus the largest packet: headers (<= 106 bytes), 4096 of payload, pad, ICRC. */
#define MBUF_ROOM		(RTE_PKTMBUF_HEADROOM + 4352)
#define MBUF_CACHE		256
/* The link: as the net_ring vdev makes its rings (single producer and consumer, 1024). */
#define LINK_RING_SIZE		1024
#define REGION_SIZE		(64ull << 20)	/* 1000 QPs' rings and CQs fit */
#define EAL_MEM_MB		"512"

/* Sends: every SIGNAL_EVERY-th is signaled; its completion frees that many slots. */
#define SIGNAL_EVERY		16
#define SQ_DEPTH_ONE		1024	/* per QP when there are few QPs */
/*
 * Per QP above FEW_QPS: one signaled batch in flight per QP, 16,000 messages in all. Deeper
 * rings only grow the memory the rings and WQE copies take (8 MB of send slots at 64):
 * doc/performance.md has the effect.
 */
#define SQ_DEPTH_MANY		16
#define FEW_QPS			16
#define LAT_DEPTH		64
#define POLL_BURST		64
#define POST_CHAIN		32	/* WRs per post call (one doorbell each) */
/* Message buffers: distinct slots, so consecutive messages do not share cache lines. */
#define BUF_BYTES		(1u << 20)
#define MAX_BUF_SLOTS		1024
#define MIN_BUF_SLOTS		16

#define RAW_BURST		32
/* A 64-byte RC SEND ONLY over IPv4: Ethernet, IPv4, UDP, BTH, payload, ICRC. */
#define RAW_FRAME_LEN		(DROCE_ETH_HLEN + DROCE_IPV4_HLEN + DROCE_UDP_HLEN + DROCE_BTH_LEN + \
				 DEFAULT_SIZE + DROCE_ICRC_LEN)

#define LAT_MAX_SAMPLES		(1u << 22)
#define LAT_PERCENTILE		99

/*
 * Path of every QP: the local ACK timer at 4.096 us * 2^18 (1.07 s: on a shared machine a
 * thread can be off its CPU for longer than a realistic timeout times the retries, and the
 * QP would fail), retries, RNR timer.
 */
#define PATH_TIMEOUT		18
#define PATH_RETRY		7
#define PATH_RNR_RETRY		7
#define PATH_MIN_RNR_TIMER	1	/* 0.01 ms */
#define PSN_A			0x100
#define PSN_B			0x200
#define PD			1
/* The CQs' handles (named in events, which nothing here reads). */
#define CQ_SEND			1
#define CQ_RECV			2

#define USEC_PER_S		1000000.0

enum bench_mode { MODE_RATE, MODE_BW, MODE_LAT, MODE_RAW };

static const char *const mode_names[] = {
	[MODE_RATE] = "rate", [MODE_BW] = "bw", [MODE_LAT] = "lat", [MODE_RAW] = "raw",
};

struct bench_opts {
	enum bench_mode mode;
	uint32_t qps;
	uint32_t depth;			/* send ring entries per QP; 0: by the number of QPs */
	uint32_t size;
	uint8_t mtu;			/* enum ibv_mtu */
	unsigned int warmup_ms;
	unsigned int duration_ms;
	unsigned int lcores;		/* 2: a host per lcore; 1: the main lcore runs both */
	int cpu[2];
	bool no_huge;
	char prefix[64];
};

/* ---- Hosts ---- */

struct bench_cq {
	struct droce_engine_cq *cq;
	struct droce_shm_client_cq view;
};

struct bench_qp {
	struct droce_engine_qp *qp;
	struct droce_shm_client_qp view;
	uint32_t qpn;
	uint32_t next_slot;		/* message buffer slot of the next post */
	uint64_t posted;		/* sends (or receives) posted so far */
	uint32_t credit;		/* send slots known free and not yet used */
	bool on_retry;
};

struct bench_host {
	const char *name;
	uint8_t id;
	struct rte_mempool *mp;
	struct rte_ring *link_in;	/* the ring this host's port receives from */
	uint16_t port;
	bool port_ok;
	struct droce_engine_dev *dev;
	struct droce_engine *eng;
	void *region;
	struct droce_shm_arena arena;
	struct droce_engine_domain *dom;
	uint32_t next_db_slot;
	uint8_t mac[6];
	uint8_t gid[16];
	uint8_t *buf;			/* the one MR: buf_slots message buffers */
	uint64_t buf_len;
	uint32_t buf_slots;
	uint32_t lkey;
	struct bench_cq scq, rcq;
	struct bench_qp *qps;
	uint32_t nb_qps;
	struct bench_qp *by_qpn[MAX_QPS * 4];
};

static void
host_addr(uint8_t id, uint8_t mac[6], uint8_t gid[16])
{
	static const uint8_t v4map[12] = { [10] = 0xff, [11] = 0xff };

	memset(mac, 0, 6);
	mac[0] = 0x02;		/* locally administered */
	mac[5] = id;
	memcpy(gid, v4map, sizeof(v4map));
	/* ::ffff:192.0.2.id (RFC 5737) */
	gid[12] = 192;
	gid[13] = 0;
	gid[14] = 2;
	gid[15] = id;
}

static bool
lkey_check(void *arg, uint32_t lkey, uint64_t addr, uint64_t len, unsigned int access)
{
	const struct bench_host *h = arg;
	uint64_t base = (uintptr_t)h->buf;

	(void)access;	/* the one MR has local write */
	return lkey == h->lkey && addr >= base && len <= h->buf_len && addr - base <= h->buf_len - len;
}

static bool
ah_check(void *arg, uint32_t ah)
{
	(void)arg;
	(void)ah;
	return false;	/* RC only */
}

static int
host_prepare(struct bench_host *h, const char *name, uint8_t id)
{
	char n[RTE_MEMPOOL_NAMESIZE];

	memset(h, 0, sizeof(*h));
	h->name = name;
	h->id = id;
	host_addr(id, h->mac, h->gid);
	snprintf(n, sizeof(n), "bench_mp_%s", name);
	h->mp = rte_pktmbuf_pool_create(n, NB_MBUFS, MBUF_CACHE, 0, MBUF_ROOM, SOCKET_ID_ANY);
	snprintf(n, sizeof(n), "bench_link_%s", name);
	h->link_in = rte_ring_create(n, LINK_RING_SIZE, SOCKET_ID_ANY,
				     RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (h->mp == NULL || h->link_in == NULL) {
		fprintf(stderr, "host %s: mempool or ring: %s\n", name, rte_strerror(rte_errno));
		return -1;
	}
	return 0;
}

/* The port: receives from h's link_in, transmits into the peer's. */
static int
host_port(struct bench_host *h, struct rte_ring *tx)
{
	struct rte_eth_conf conf;
	char name[64];
	int port;

	snprintf(name, sizeof(name), "net_bench_%s", h->name);
	port = rte_eth_from_rings(name, &h->link_in, 1, &tx, 1, SOCKET_ID_ANY);
	if (port < 0)
		return -1;
	memset(&conf, 0, sizeof(conf));
	if (rte_eth_dev_configure(port, 1, 1, &conf) != 0 ||
	    rte_eth_rx_queue_setup(port, 0, LINK_RING_SIZE, SOCKET_ID_ANY, NULL, h->mp) != 0 ||
	    rte_eth_tx_queue_setup(port, 0, LINK_RING_SIZE, SOCKET_ID_ANY, NULL) != 0 ||
	    rte_eth_dev_start(port) != 0)
		return -1;
	h->port = (uint16_t)port;
	h->port_ok = true;
	return 0;
}

/* Device, engine, client region and domain, the one MR. */
static int
host_finish(struct bench_host *h, const struct bench_host *peer, uint32_t size)
{
	struct droce_engine_dev_conf dconf = { .max_qps = RTE_DIM(h->by_qpn) };
	struct droce_engine_domain_conf domconf;
	struct droce_engine_conf ec;
	uint32_t rkey;

	h->dev = droce_engine_dev_create(&dconf);
	if (h->dev == NULL || droce_engine_dev_neigh_add(h->dev, peer->gid, peer->mac) != 0)
		return -1;
	memset(&ec, 0, sizeof(ec));
	ec.slow_rx_wake_fd = -1;
	ec.port_id = h->port;
	ec.mp = h->mp;
	memcpy(ec.mac, h->mac, sizeof(ec.mac));
	memcpy(ec.gids[0], h->gid, sizeof(h->gid));
	ec.nb_gids = 1;
	ec.wait = DROCE_ENGINE_WAIT_POLL;	/* polled by the host's thread, which never sleeps */
	h->eng = droce_engine_create(h->dev, 0, &ec);
	if (h->eng == NULL)
		return -1;
	h->region = aligned_alloc(DROCE_SHM_CACHE_LINE, REGION_SIZE);
	if (h->region == NULL)
		return -1;
	if (droce_shm_arena_init(&h->arena, h->region, REGION_SIZE, 1) != 0)
		return -1;
	memset(&domconf, 0, sizeof(domconf));
	domconf.region = h->region;
	domconf.region_size = REGION_SIZE;
	domconf.max_mrs = 2;
	domconf.max_ahs = 1;
	domconf.max_events = 1024;
	h->dom = droce_engine_domain_create(h->dev, &domconf);
	if (h->dom == NULL)
		return -1;
	h->buf_slots = RTE_MIN(RTE_MAX(BUF_BYTES / size, (uint32_t)MIN_BUF_SLOTS),
			       (uint32_t)MAX_BUF_SLOTS);
	h->buf_len = (uint64_t)h->buf_slots * size;
	h->buf = aligned_alloc(4096, RTE_ALIGN_CEIL(h->buf_len, 4096));
	if (h->buf == NULL)
		return -1;
	memset(h->buf, h->id, h->buf_len);
	return droce_engine_mr_reg(h->dom, PD, h->buf, (uintptr_t)h->buf, h->buf_len,
			    IBV_ACCESS_LOCAL_WRITE, &h->lkey, &rkey);
}

static void
host_close(struct bench_host *h)
{
	void *m = NULL;

	if (h->dom != NULL)
		droce_engine_domain_destroy(h->dom);	/* QPs, CQs and the MR with it */
	if (h->eng != NULL)
		droce_engine_destroy(h->eng);
	if (h->dev != NULL)
		droce_engine_dev_destroy(h->dev);
	if (h->port_ok) {
		rte_eth_dev_stop(h->port);
		rte_eth_dev_close(h->port);
	}
	free(h->qps);
	free(h->buf);
	free(h->region);
	if (h->link_in != NULL) {
		while (rte_ring_dequeue(h->link_in, &m) == 0)
			rte_pktmbuf_free(m);
	}
}

/* Both link rings are drained before either pool goes: each may hold the other's mbufs. */
static void
hosts_release(struct bench_host *a, struct bench_host *b)
{
	rte_ring_free(a->link_in);
	rte_ring_free(b->link_in);
	rte_mempool_free(a->mp);
	rte_mempool_free(b->mp);
}

/* The host's region as lib/engine/droce_engine_region.h takes it. */
static struct droce_engine_region
host_region(struct bench_host *h)
{
	return (struct droce_engine_region){ .base = h->region, .arena = &h->arena, .dom = h->dom };
}

static int
cq_create(struct bench_host *h, struct bench_cq *c, uint32_t size, uint32_t handle)
{
	struct droce_engine_region r = host_region(h);
	struct droce_engine_region_cq_mem mem;

	c->cq = droce_engine_region_cq_create(&r, size, -1, handle, &mem, &c->view);
	return c->cq != NULL ? 0 : -1;
}

static int
qp_create(struct bench_host *h, struct bench_qp *q, uint32_t sq_size, uint32_t rq_size)
{
	struct droce_engine_region r = host_region(h);
	struct droce_engine_region_qp_mem mem;
	struct droce_engine_qp_conf c;

	memset(&c, 0, sizeof(c));
	c.qp_type = DROCE_SHM_QPT_RC;
	c.pd = PD;
	c.send_cq = h->scq.cq;
	c.recv_cq = h->rcq.cq;
	c.sq_size = sq_size;
	c.sq_max_sge = 1;
	c.rq_size = rq_size;
	c.rq_max_sge = 1;
	c.db_slot = h->next_db_slot++;
	q->qp = droce_engine_region_qp_create(&r, &c, &mem, &q->view);
	if (q->qp == NULL)
		return -1;
	q->qpn = q->view.qp_num;
	if (q->qpn >= RTE_DIM(h->by_qpn))
		return -1;
	h->by_qpn[q->qpn] = q;
	q->view.lkey_check = lkey_check;
	q->view.ah_check = ah_check;
	q->view.check_arg = h;
	return 0;
}

/* RESET -> INIT -> RTR -> RTS, addressed at peer (lib/shm/droce_shm_bringup.h). */
static int
qp_connect(struct bench_qp *x, const struct bench_qp *y, const struct bench_host *peer,
	   uint8_t mtu, uint32_t sq_psn, uint32_t rq_psn)
{
	struct droce_shm_qp_attr attr[DROCE_SHM_BRINGUP_STEPS];
	struct droce_shm_bringup_path path = {
		.qp_type = DROCE_SHM_QPT_RC,
		.access = IBV_ACCESS_LOCAL_WRITE,
		.mtu = mtu,
		.dest_qpn = y->qpn,
		.sq_psn = sq_psn,
		.rq_psn = rq_psn,
		.timeout = PATH_TIMEOUT,
		.retry_cnt = PATH_RETRY,
		.rnr_retry = PATH_RNR_RETRY,
		.min_rnr_timer = PATH_MIN_RNR_TIMER,
		.rd_atomic = 1,
	};
	unsigned int i;

	droce_shm_bringup_ah(&path.ah, peer->gid, 0);
	droce_shm_bringup_connected(&path, attr);
	for (i = 0; i < DROCE_SHM_BRINGUP_STEPS; i++)
		if (droce_engine_qp_modify(x->qp, &attr[i]) != 0)
			return -1;
	return 0;
}

static uint32_t
pow2_ceil(uint64_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

/*
 * Both hosts with nb_qps connected QP pairs. CQs are sized for every WQE that could
 * complete at once, so no overrun can happen however late a thread polls.
 */
static int
hosts_open(struct bench_host *a, struct bench_host *b, const struct bench_opts *o)
{
	uint32_t n = o->mode == MODE_RAW ? 0 : o->qps, i;
	uint32_t sq = o->mode == MODE_LAT ? LAT_DEPTH : o->depth != 0 ? o->depth :
		      n <= FEW_QPS ? SQ_DEPTH_ONE : SQ_DEPTH_MANY;
	/* A receiver may hold a ring of delivered, not yet reposted receives plus one in flight. */
	uint32_t rq = o->mode == MODE_LAT ? LAT_DEPTH : 2 * sq;
	uint32_t ncqe = pow2_ceil((uint64_t)RTE_MAX(n, 1u) * RTE_MAX(sq, rq));

	if (host_prepare(a, "a", 1) != 0 || host_prepare(b, "b", 2) != 0 ||
	    host_port(a, b->link_in) != 0 || host_port(b, a->link_in) != 0 ||
	    host_finish(a, b, o->size) != 0 || host_finish(b, a, o->size) != 0) {
		fprintf(stderr, "hosts: set-up failed: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	if (n == 0)
		return 0;
	if (ncqe > DROCE_SHM_MAX_CQE || cq_create(a, &a->scq, ncqe, CQ_SEND) != 0 ||
	    cq_create(a, &a->rcq, ncqe, CQ_RECV) != 0 ||
	    cq_create(b, &b->scq, ncqe, CQ_SEND) != 0 ||
	    cq_create(b, &b->rcq, ncqe, CQ_RECV) != 0) {
		fprintf(stderr, "CQs of %u entries: failed\n", ncqe);
		return -1;
	}
	a->qps = calloc(n, sizeof(*a->qps));
	b->qps = calloc(n, sizeof(*b->qps));
	if (a->qps == NULL || b->qps == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		if (qp_create(a, &a->qps[i], sq, rq) != 0 || qp_create(b, &b->qps[i], sq, rq) != 0 ||
		    qp_connect(&a->qps[i], &b->qps[i], b, o->mtu, PSN_A, PSN_B) != 0 ||
		    qp_connect(&b->qps[i], &a->qps[i], a, o->mtu, PSN_B, PSN_A) != 0) {
			fprintf(stderr, "QP pair %u: set-up failed: %s\n", i,
				rte_strerror(rte_errno));
			return -1;
		}
		a->qps[i].credit = sq;
		b->qps[i].credit = sq;
	}
	a->nb_qps = n;
	b->nb_qps = n;
	return 0;
}

/* ---- Posting and polling, as an application does ---- */

/* The next buffer of q: slots rotate so consecutive messages use different lines. */
static uint64_t
buf_next(struct bench_host *h, struct bench_qp *q, uint32_t size)
{
	uint32_t s = q->next_slot;

	q->next_slot = s + 1 == h->buf_slots ? 0 : s + 1;
	return (uintptr_t)h->buf + (uint64_t)s * size;
}

/* Posts up to n receives on q: how many were posted. */
static uint32_t
post_recvs(struct bench_host *h, struct bench_qp *q, uint32_t n, uint32_t size)
{
	struct ibv_recv_wr wr[POST_CHAIN], *bad = NULL;
	struct ibv_sge sge[POST_CHAIN];
	uint32_t i, k = RTE_MIN(n, (uint32_t)POST_CHAIN);

	for (i = 0; i < k; i++) {
		sge[i].addr = buf_next(h, q, size);
		sge[i].length = size;
		sge[i].lkey = h->lkey;
		wr[i].wr_id = q->posted + i;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].next = i + 1 < k ? &wr[i + 1] : NULL;
	}
	if (droce_shm_post_recv(&q->view, wr, &bad) != 0)
		k = (uint32_t)(bad - wr);
	q->posted += k;
	return k;
}

/* The QP a completion names, or NULL. */
static struct bench_qp *
host_qp(const struct bench_host *h, uint32_t qpn)
{
	return qpn < RTE_DIM(h->by_qpn) ? h->by_qpn[qpn] : NULL;
}

/* Fills q's receive ring. */
static void
fill_recvs(struct bench_host *h, struct bench_qp *q, uint32_t size)
{
	while (q->posted < q->view.rq_size &&
	       post_recvs(h, q, q->view.rq_size - (uint32_t)q->posted, size) != 0)
		;
}

/*
 * Posts up to n sends on q, every SIGNAL_EVERY-th (by count since the start) signaled:
 * how many were posted. Fewer when the ring is still full (the completer wrote the CQE
 * that freed the slots before it published the consumer index).
 */
static uint32_t
post_sends(struct bench_host *h, struct bench_qp *q, uint32_t n, uint32_t size)
{
	struct ibv_send_wr wr[POST_CHAIN], *bad = NULL;
	struct ibv_sge sge[POST_CHAIN];
	uint32_t i, k = RTE_MIN(n, (uint32_t)POST_CHAIN);

	for (i = 0; i < k; i++) {
		uint64_t id = q->posted + i;

		sge[i].addr = buf_next(h, q, size);
		sge[i].length = size;
		sge[i].lkey = h->lkey;
		memset(&wr[i], 0, sizeof(wr[i]));
		wr[i].wr_id = id;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_SEND;
		if (id % SIGNAL_EVERY == SIGNAL_EVERY - 1)
			wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].next = i + 1 < k ? &wr[i + 1] : NULL;
	}
	if (droce_shm_post_send(&q->view, wr, &bad) != 0)
		k = (uint32_t)(bad - wr);
	q->posted += k;
	return k;
}

/* A completion that is not a success ends the run: the figures would mean nothing. */
static bool
wc_ok(const struct ibv_wc *wc, const char *who)
{
	if (wc->status == IBV_WC_SUCCESS)
		return true;
	/* By number: the system libibverbs (ibv_wc_status_str) must not be linked. */
	fprintf(stderr, "%s: completion wr_id %llu qp %u: status %d\n", who,
		(unsigned long long)wc->wr_id, wc->qp_num, (int)wc->status);
	return false;
}

/* ---- The run shared by the two threads ---- */

struct bench_run {
	const struct bench_opts *o;
	struct bench_host a, b;
	_Atomic uint32_t stop;
	_Atomic uint32_t failed;
	/* Messages (packets in raw) host b took in: written by b's thread, read by the main. */
	_Atomic uint64_t delivered;
	uint64_t b_delivered;		/* b's thread: its running count */
	/* The worker's thread, for its CPU clock: published before worker_up. */
	pthread_t worker_tid;
	_Atomic uint32_t worker_up;
	/* Main lcore: QPs that still have send credit the ring refused. */
	struct bench_qp **retry;
	uint32_t nb_retry;
	uint64_t *samples;
	/*
	 * TSC spent inside each host's droce_engine_poll() (rate and bw). With one lcore the
	 * main thread's time splits into engine a, engine b and the rest (both applications):
	 * being taken off the CPU lands in each part in proportion to its length, so the
	 * split holds however small the thread's share of the CPU.
	 */
	uint64_t eng_tsc[2];
};

static bool
run_stopped(struct bench_run *r)
{
	return atomic_load_explicit(&r->stop, memory_order_relaxed) != 0;
}

static void
run_fail(struct bench_run *r)
{
	atomic_store_explicit(&r->failed, 1, memory_order_relaxed);
	atomic_store_explicit(&r->stop, 1, memory_order_relaxed);
}

/* One pass of engine e: the TSC ticks it took. */
static uint64_t
engine_poll_timed(struct droce_engine *e)
{
	uint64_t t = rte_rdtsc();

	droce_engine_poll(e);
	return rte_rdtsc() - t;
}

/* Sender: spends q's credit; what the ring refuses is retried on the next pass. */
static void
sender_spend(struct bench_run *r, struct bench_qp *q)
{
	while (q->credit > 0) {
		uint32_t k = post_sends(&r->a, q, q->credit, r->o->size);

		q->credit -= k;
		if (k == 0)
			break;
	}
	if (q->credit > 0 && !q->on_retry) {
		q->on_retry = true;
		r->retry[r->nb_retry++] = q;
	}
}

/* One pass of host a in rate and bw: its engine, its send CQ, its posts. */
static void
sender_pass(struct bench_run *r)
{
	struct bench_host *a = &r->a;
	struct ibv_wc wc[POLL_BURST];
	uint32_t i, n;
	int got;

	r->eng_tsc[0] += engine_poll_timed(a->eng);
	got = droce_shm_poll_cq(&a->scq.view, POLL_BURST, wc);
	if (got < 0) {
		fprintf(stderr, "sender: send CQ overrun\n");
		run_fail(r);
		return;
	}
	for (i = 0; i < (uint32_t)got; i++) {
		struct bench_qp *q = host_qp(a, wc[i].qp_num);

		if (!wc_ok(&wc[i], "sender") || q == NULL) {
			run_fail(r);
			return;
		}
		q->credit += SIGNAL_EVERY;
		sender_spend(r, q);
	}
	n = r->nb_retry;
	r->nb_retry = 0;
	for (i = 0; i < n; i++) {
		struct bench_qp *q = r->retry[i];

		q->on_retry = false;
		sender_spend(r, q);
	}
}

/*
 * One pass of host b in rate and bw: its engine, then its application, which reposts each
 * receive as it completes. -1 when the run failed.
 */
static int
receiver_pass(struct bench_run *r)
{
	struct bench_host *b = &r->b;
	struct ibv_wc wc[POLL_BURST];
	uint32_t size = r->o->size;
	int got, i;

	r->eng_tsc[1] += engine_poll_timed(b->eng);
	got = droce_shm_poll_cq(&b->rcq.view, POLL_BURST, wc);
	if (got < 0) {
		fprintf(stderr, "receiver: receive CQ overrun\n");
		return -1;
	}
	for (i = 0; i < got; i++) {
		struct bench_qp *q = host_qp(b, wc[i].qp_num);

		if (!wc_ok(&wc[i], "receiver") || q == NULL || wc[i].byte_len != size)
			return -1;
		if (post_recvs(b, q, 1, size) != 1) {
			fprintf(stderr, "receiver: receive ring full\n");
			return -1;
		}
	}
	r->b_delivered += (uint64_t)got;
	atomic_store_explicit(&r->delivered, r->b_delivered, memory_order_relaxed);
	return 0;
}

/* One pass of host b in lat: its engine, then the ponger, which answers each message. */
static int
ponger_pass(struct bench_run *r)
{
	struct bench_host *b = &r->b;
	struct bench_qp *q = &b->qps[0];
	struct ibv_wc wc[POLL_BURST];
	uint32_t size = r->o->size;
	int got, i;

	droce_engine_poll(b->eng);
	got = droce_shm_poll_cq(&b->rcq.view, POLL_BURST, wc);
	for (i = 0; i < got; i++) {
		if (!wc_ok(&wc[i], "ponger") || post_recvs(b, q, 1, size) != 1 ||
		    post_sends(b, q, 1, size) != 1)
			return -1;
	}
	if (got < 0)
		return -1;
	got = droce_shm_poll_cq(&b->scq.view, POLL_BURST, wc);
	for (i = 0; i < got; i++) {
		if (!wc_ok(&wc[i], "ponger"))
			return -1;
	}
	return got < 0 ? -1 : 0;
}

/* Main lcore in rate and bw: host a, and host b too when there is one lcore. */
static void
stream_pass(struct bench_run *r)
{
	sender_pass(r);
	if (r->o->lcores == 1 && receiver_pass(r) != 0)
		run_fail(r);
}

static void
worker_announce(struct bench_run *r)
{
	r->worker_tid = pthread_self();
	atomic_store_explicit(&r->worker_up, 1, memory_order_release);
}

/* Worker lcore: host b, one pass after another. */
static int
worker_main(void *arg)
{
	struct bench_run *r = arg;
	int (*pass)(struct bench_run *) = r->o->mode == MODE_LAT ? ponger_pass : receiver_pass;

	worker_announce(r);
	while (!run_stopped(r)) {
		if (pass(r) != 0) {
			run_fail(r);
			return -1;
		}
	}
	return 0;
}

/* Worker lcore in raw: receives and frees what the main lcore sends. */
static int
raw_rx_main(void *arg)
{
	struct bench_run *r = arg;
	struct rte_mbuf *pkts[RAW_BURST];
	uint64_t delivered = 0;

	worker_announce(r);
	while (!run_stopped(r)) {
		uint16_t n = rte_eth_rx_burst(r->b.port, 0, pkts, RAW_BURST);

		rte_pktmbuf_free_bulk(pkts, n);
		delivered += n;
		atomic_store_explicit(&r->delivered, delivered, memory_order_relaxed);
	}
	return 0;
}

/* ---- Measurement ---- */

struct window {
	uint64_t tsc;
	uint64_t delivered;
	double cpu_main, cpu_worker;	/* CPU seconds the threads have had */
	uint64_t eng_tsc[2];
	struct droce_engine_stats sa, sb;
};

static double
clock_secs(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts) != 0)
		return 0;
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * The main lcore's window marks. Besides wall time it takes each thread's CPU time: on a
 * shared machine a spinning thread gets only its share of its CPU, and a figure means
 * something only next to that share.
 */
static void
window_mark(struct bench_run *r, struct window *w)
{
	clockid_t cid;

	w->cpu_main = clock_secs(CLOCK_THREAD_CPUTIME_ID);
	w->cpu_worker = 0;
	if (atomic_load_explicit(&r->worker_up, memory_order_acquire) &&
	    pthread_getcpuclockid(r->worker_tid, &cid) == 0)
		w->cpu_worker = clock_secs(cid);
	w->tsc = rte_rdtsc();
	w->eng_tsc[0] = r->eng_tsc[0];
	w->eng_tsc[1] = r->eng_tsc[1];
	w->delivered = atomic_load_explicit(&r->delivered, memory_order_relaxed);
	if (r->a.eng != NULL)
		droce_engine_stats_get(r->a.eng, &w->sa);
	if (r->b.eng != NULL)
		droce_engine_stats_get(r->b.eng, &w->sb);
}

static uint64_t
ms_tsc(unsigned int ms)
{
	return rte_get_tsc_hz() / 1000 * ms;
}

static double
window_secs(const struct window *w0, const struct window *w1)
{
	return (double)(w1->tsc - w0->tsc) / (double)rte_get_tsc_hz();
}

#define STAT_DELTA(w0, w1, side, name) ((w1)->side.name - (w0)->side.name)

/* Waits until the worker has published its thread (with two lcores). */
static void
worker_wait(struct bench_run *r)
{
	while (r->o->lcores == 2 && !atomic_load_explicit(&r->worker_up, memory_order_acquire) &&
	       !run_stopped(r))
		rte_pause();
}

/*
 * Shares of the CPU each thread had in the window; with one lcore also count per CPU
 * second of the main thread, the figure that does not depend on that share.
 */
static void
print_cpu(const struct bench_run *r, const struct window *w0, const struct window *w1,
	  uint64_t count, const char *per_cpu_key)
{
	double wall = window_secs(w0, w1);
	double cm = w1->cpu_main - w0->cpu_main, cw = w1->cpu_worker - w0->cpu_worker;

	printf(" cpu_share_main=%.3f cpu_share_worker=%.3f", cm / wall, cw / wall);
	if (r->o->lcores == 1 && cm > 0 && per_cpu_key[0] != '\0')
		printf(" %s=%.4f", per_cpu_key, (double)count / cm / USEC_PER_S);
}

/* Main lcore in rate and bw: fills every send ring, then keeps them full. */
static int
run_stream(struct bench_run *r)
{
	const struct bench_opts *o = r->o;
	struct window w0, w1;
	uint64_t end, msgs;
	double secs, mps;
	uint32_t i;

	r->retry = calloc(r->a.nb_qps, sizeof(*r->retry));
	if (r->retry == NULL)
		return -1;
	for (i = 0; i < r->b.nb_qps; i++)
		fill_recvs(&r->b, &r->b.qps[i], o->size);
	for (i = 0; i < r->a.nb_qps; i++)
		sender_spend(r, &r->a.qps[i]);
	if (o->lcores == 2 &&
	    rte_eal_remote_launch(worker_main, r, rte_get_next_lcore(-1, 1, 0)) != 0)
		return -1;
	worker_wait(r);
	end = rte_rdtsc() + ms_tsc(o->warmup_ms);
	while (rte_rdtsc() < end && !run_stopped(r))
		stream_pass(r);
	window_mark(r, &w0);
	end = w0.tsc + ms_tsc(o->duration_ms);
	while (rte_rdtsc() < end && !run_stopped(r))
		stream_pass(r);
	window_mark(r, &w1);
	atomic_store_explicit(&r->stop, 1, memory_order_relaxed);
	rte_eal_mp_wait_lcore();
	free(r->retry);
	if (atomic_load(&r->failed))
		return -1;
	secs = window_secs(&w0, &w1);
	msgs = w1.delivered - w0.delivered;
	mps = (double)msgs / secs;
	printf("mode=%s lcores=%u qps=%u depth=%u size=%u mtu=%u secs=%.3f msgs=%llu mmsg_per_s=%.4f gbps=%.3f "
	       "pkts_per_msg=%.3f acks_per_msg=%.4f rnr_naks=%llu retransmits=%llu "
	       "tx_drop=%llu",
	       mode_names[o->mode], o->lcores, o->qps, r->a.qps[0].view.sq_size, o->size, 128u << o->mtu, secs,
	       (unsigned long long)msgs, mps / USEC_PER_S, mps * o->size * 8 / 1e9,
	       msgs == 0 ? 0.0 : (double)STAT_DELTA(&w0, &w1, sa, req_pkts) / (double)msgs,
	       msgs == 0 ? 0.0 : (double)STAT_DELTA(&w0, &w1, sb, ack_sent) / (double)msgs,
	       (unsigned long long)STAT_DELTA(&w0, &w1, sb, nak_rnr_sent),
	       (unsigned long long)STAT_DELTA(&w0, &w1, sa, req_retransmit),
	       (unsigned long long)(STAT_DELTA(&w0, &w1, sa, tx_drop) +
				    STAT_DELTA(&w0, &w1, sb, tx_drop)));
	print_cpu(r, &w0, &w1, msgs, "mmsg_per_cpu_s");
	if (o->lcores == 1 && msgs != 0) {
		/* The main thread's CPU time per message, split by where its TSC went. */
		double ns = (w1.cpu_main - w0.cpu_main) * 1e9 / (double)msgs;
		double span = (double)(w1.tsc - w0.tsc);
		double ea = (double)(w1.eng_tsc[0] - w0.eng_tsc[0]) / span;
		double eb = (double)(w1.eng_tsc[1] - w0.eng_tsc[1]) / span;

		printf(" ns_per_msg=%.1f engine_a_ns=%.1f engine_b_ns=%.1f apps_ns=%.1f", ns,
		       ns * ea, ns * eb, ns * (1 - ea - eb));
	}
	return 0;
}

static int
cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return (a > b) - (a < b);
}

/* One ping: post, then poll host a (engine and CQs) until the answer is in. */
static int
ping_once(struct bench_run *r, uint64_t *rtt)
{
	struct bench_host *a = &r->a;
	struct bench_qp *q = &a->qps[0];
	struct ibv_wc wc[POLL_BURST];
	uint64_t t0 = rte_rdtsc();
	int got, i;

	if (post_sends(a, q, 1, r->o->size) != 1)
		return -1;
	do {
		droce_engine_poll(a->eng);
		got = droce_shm_poll_cq(&a->rcq.view, 1, wc);
		if (run_stopped(r))
			return -1;
		if (r->o->lcores == 1 && got == 0 && ponger_pass(r) != 0)
			return -1;
	} while (got == 0);
	*rtt = rte_rdtsc() - t0;
	if (got < 0 || !wc_ok(&wc[0], "pinger") || post_recvs(a, q, 1, r->o->size) != 1)
		return -1;
	got = droce_shm_poll_cq(&a->scq.view, POLL_BURST, wc);
	for (i = 0; i < got; i++) {
		if (!wc_ok(&wc[i], "pinger"))
			return -1;
	}
	return got < 0 ? -1 : 0;
}

/* Main lcore in lat. */
static int
run_lat(struct bench_run *r)
{
	const struct bench_opts *o = r->o;
	uint64_t end, rtt, med, p99, min;
	double tsc_per_us = (double)rte_get_tsc_hz() / USEC_PER_S;
	struct window w0, w1;
	uint32_t n;

	r->samples = malloc(LAT_MAX_SAMPLES * sizeof(*r->samples));
	if (r->samples == NULL)
		return -1;
	fill_recvs(&r->a, &r->a.qps[0], o->size);
	fill_recvs(&r->b, &r->b.qps[0], o->size);
	if (o->lcores == 2 &&
	    rte_eal_remote_launch(worker_main, r, rte_get_next_lcore(-1, 1, 0)) != 0)
		return -1;
	worker_wait(r);
	end = rte_rdtsc() + ms_tsc(o->warmup_ms);
	while (rte_rdtsc() < end) {
		if (ping_once(r, &rtt) != 0)
			goto fail;
	}
	window_mark(r, &w0);
	end = w0.tsc + ms_tsc(o->duration_ms);
	for (n = 0; n < LAT_MAX_SAMPLES && rte_rdtsc() < end; n++) {
		if (ping_once(r, &r->samples[n]) != 0)
			goto fail;
	}
	window_mark(r, &w1);
	atomic_store_explicit(&r->stop, 1, memory_order_relaxed);
	rte_eal_mp_wait_lcore();
	if (n == 0 || atomic_load(&r->failed))
		goto out;
	qsort(r->samples, n, sizeof(r->samples[0]), cmp_u64);
	min = r->samples[0];
	med = r->samples[n / 2];
	p99 = r->samples[(uint64_t)n * LAT_PERCENTILE / 100];
	printf("mode=lat lcores=%u size=%u mtu=%u samples=%u half_rtt_us_median=%.3f half_rtt_us_p99=%.3f "
	       "half_rtt_us_min=%.3f",
	       o->lcores, o->size, 128u << o->mtu, n, (double)med / 2 / tsc_per_us,
	       (double)p99 / 2 / tsc_per_us, (double)min / 2 / tsc_per_us);
	print_cpu(r, &w0, &w1, 0, "");
	free(r->samples);
	return 0;
fail:
	run_fail(r);
	rte_eal_mp_wait_lcore();
out:
	free(r->samples);
	return -1;
}

/* Main lcore in raw: allocate, fill and send bursts on a (and receive on b with one lcore). */
static int
run_raw(struct bench_run *r)
{
	const struct bench_opts *o = r->o;
	struct rte_mbuf *pkts[RAW_BURST];
	uint8_t frame[RAW_FRAME_LEN];
	struct window w0, w1;
	uint64_t end, delivered = 0;
	bool one = o->lcores == 1;
	double secs, pps;
	bool measuring = false;
	unsigned int i;

	for (i = 0; i < sizeof(frame); i++)
		frame[i] = (uint8_t)i;
	if (!one && rte_eal_remote_launch(raw_rx_main, r, rte_get_next_lcore(-1, 1, 0)) != 0)
		return -1;
	worker_wait(r);
	end = rte_rdtsc() + ms_tsc(o->warmup_ms);
	for (;;) {
		uint16_t sent;

		if (rte_rdtsc() >= end) {
			if (measuring)
				break;
			window_mark(r, &w0);
			end = w0.tsc + ms_tsc(o->duration_ms);
			measuring = true;
		}
		if (rte_pktmbuf_alloc_bulk(r->a.mp, pkts, RAW_BURST) == 0) {
			for (i = 0; i < RAW_BURST; i++) {
				rte_memcpy(rte_pktmbuf_mtod(pkts[i], void *), frame, sizeof(frame));
				pkts[i]->data_len = sizeof(frame);
				pkts[i]->pkt_len = sizeof(frame);
			}
			sent = rte_eth_tx_burst(r->a.port, 0, pkts, RAW_BURST);
			if (sent < RAW_BURST)
				rte_pktmbuf_free_bulk(pkts + sent, RAW_BURST - sent);
		}
		if (one) {
			uint16_t n = rte_eth_rx_burst(r->b.port, 0, pkts, RAW_BURST);

			rte_pktmbuf_free_bulk(pkts, n);
			delivered += n;
			atomic_store_explicit(&r->delivered, delivered, memory_order_relaxed);
		}
	}
	window_mark(r, &w1);
	atomic_store_explicit(&r->stop, 1, memory_order_relaxed);
	rte_eal_mp_wait_lcore();
	secs = window_secs(&w0, &w1);
	pps = (double)(w1.delivered - w0.delivered) / secs;
	printf("mode=raw lcores=%u frame=%u secs=%.3f pkts=%llu mpps=%.4f", o->lcores,
	       RAW_FRAME_LEN, secs, (unsigned long long)(w1.delivered - w0.delivered),
	       pps / USEC_PER_S);
	print_cpu(r, &w0, &w1, w1.delivered - w0.delivered, "mpps_per_cpu_s");
	return 0;
}

/* ---- EAL and main ---- */

/*
 * Two lcores, each pinned to its own CPU; no PCI; a private file prefix. Hugepages through
 * --in-memory (nothing left in hugetlbfs), or --no-huge.
 */
static int
eal_init(const struct bench_opts *o, const char *prog)
{
	char lcores[64], prefix[96];
	char *argv[16];
	int argc = 0;

	if (o->lcores == 1)
		snprintf(lcores, sizeof(lcores), "--lcores=0@%d", o->cpu[0]);
	else
		snprintf(lcores, sizeof(lcores), "--lcores=0@%d,1@%d", o->cpu[0], o->cpu[1]);
	snprintf(prefix, sizeof(prefix), "--file-prefix=%s", o->prefix);
	argv[argc++] = (char *)(uintptr_t)prog;
	argv[argc++] = "--no-pci";
	argv[argc++] = "--no-telemetry";
	argv[argc++] = lcores;
	argv[argc++] = prefix;
	argv[argc++] = "--log-level=lib.eal:warning";
	argv[argc++] = "-m";
	argv[argc++] = EAL_MEM_MB;
	if (o->no_huge) {
		argv[argc++] = "--no-huge";
		argv[argc++] = "--no-shconf";
	} else {
		argv[argc++] = "--in-memory";
	}
	/* EAL logs to stdout otherwise: keep stdout for the result line. */
	rte_openlog_stream(stderr);
	return rte_eal_init(argc, argv);
}

static void
usage(const char *prog)
{
	printf("usage: %s --mode rate|bw|lat|raw [options]\n"
	       "Two droce engines joined by net_ring in one process, a host per lcore (or both\n"
	       "on one with --lcores 1); prints one line of key=value results\n"
	       "(doc/performance.md).\n"
	       "  --mode M        rate: --qps streams of RC SENDs, messages/s; bw: one QP of\n"
	       "                  %u-byte SENDs, Gb/s; lat: ping-pong, half round trip in us;\n"
	       "                  raw: the link alone (alloc, fill, tx / rx, free), packets/s\n"
	       "  --qps N         QP pairs in rate (default 1, max %u)\n"
	       "  --depth N       send ring entries per QP in rate and bw, a power of two >= %u\n"
	       "                  (default %u up to %u QPs, %u above; receive rings are twice)\n"
	       "  --size BYTES    message size (default %u; %u in bw)\n"
	       "  --mtu M         path MTU: 256, 512, 1024, 2048 or 4096 (default 4096)\n"
	       "  --warmup MS     before measuring (default %u)\n"
	       "  --duration MS   measured time (default %u)\n"
	       "  --lcores N      2: host a on the main lcore, host b on the worker (default);\n"
	       "                  1: the main lcore runs both hosts in turn\n"
	       "  --cpus A,B      CPUs of the main and the worker lcore (default 0,1)\n"
	       "  --no-huge       without hugepages (default: hugepages, --in-memory)\n"
	       "  --file-prefix P EAL file prefix (default droce-bench-engine-PID)\n",
	       prog, BW_SIZE, MAX_QPS, SIGNAL_EVERY, SQ_DEPTH_ONE, FEW_QPS, SQ_DEPTH_MANY,
	       DEFAULT_SIZE, BW_SIZE, DEFAULT_WARMUP_MS,
	       DEFAULT_DURATION_MS);
}

static int
parse_mtu(const char *s, uint8_t *mtu)
{
	unsigned long v = strtoul(s, NULL, 10);
	uint8_t m;

	for (m = IBV_MTU_256; m <= IBV_MTU_4096; m++) {
		if (v == 128ul << m) {
			*mtu = m;
			return 0;
		}
	}
	return -1;
}

static int
parse_opts(int argc, char **argv, struct bench_opts *o)
{
	static const struct option longopts[] = {
		{ "mode", required_argument, NULL, 'M' },
		{ "qps", required_argument, NULL, 'q' },
		{ "depth", required_argument, NULL, 'D' },
		{ "size", required_argument, NULL, 's' },
		{ "mtu", required_argument, NULL, 'u' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "duration", required_argument, NULL, 'd' },
		{ "lcores", required_argument, NULL, 'l' },
		{ "cpus", required_argument, NULL, 'c' },
		{ "no-huge", no_argument, NULL, 'H' },
		{ "file-prefix", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool have_mode = false, have_size = false;
	int c, m;

	memset(o, 0, sizeof(*o));
	o->qps = 1;
	o->mtu = DEFAULT_MTU;
	o->warmup_ms = DEFAULT_WARMUP_MS;
	o->duration_ms = DEFAULT_DURATION_MS;
	o->lcores = 2;
	o->cpu[0] = 0;
	o->cpu[1] = 1;
	snprintf(o->prefix, sizeof(o->prefix), "droce-bench-engine-%d", (int)getpid());
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'M':
			for (m = 0; m < (int)RTE_DIM(mode_names); m++) {
				if (strcmp(optarg, mode_names[m]) == 0)
					break;
			}
			if (m == (int)RTE_DIM(mode_names))
				return -1;
			o->mode = (enum bench_mode)m;
			have_mode = true;
			break;
		case 'q':
			o->qps = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'D':
			o->depth = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 's':
			o->size = (uint32_t)strtoul(optarg, NULL, 10);
			have_size = true;
			break;
		case 'u':
			if (parse_mtu(optarg, &o->mtu) != 0)
				return -1;
			break;
		case 'w':
			o->warmup_ms = (unsigned int)strtoul(optarg, NULL, 10);
			break;
		case 'd':
			o->duration_ms = (unsigned int)strtoul(optarg, NULL, 10);
			break;
		case 'l':
			o->lcores = (unsigned int)strtoul(optarg, NULL, 10);
			break;
		case 'c':
			if (sscanf(optarg, "%d,%d", &o->cpu[0], &o->cpu[1]) != 2)
				return -1;
			break;
		case 'H':
			o->no_huge = true;
			break;
		case 'p':
			snprintf(o->prefix, sizeof(o->prefix), "%s", optarg);
			break;
		case 'h':
			usage(argv[0]);
			exit(0);
		default:
			return -1;
		}
	}
	if (!have_mode || optind != argc)
		return -1;
	if (!have_size)
		o->size = o->mode == MODE_BW ? BW_SIZE : DEFAULT_SIZE;
	if (o->mode == MODE_BW || o->mode == MODE_LAT)
		o->qps = 1;
	if (o->depth != 0 && (o->depth < SIGNAL_EVERY || o->depth > DROCE_SHM_MAX_WR / 2 ||
			      (o->depth & (o->depth - 1)) != 0))
		return -1;
	return o->qps == 0 || o->qps > MAX_QPS || o->size == 0 || o->size > BUF_BYTES ||
	       o->duration_ms == 0 || o->lcores < 1 || o->lcores > 2 ||
	       o->cpu[0] == o->cpu[1] ? -1 : 0;
}

/* The non-zero counters of h's engine, to stderr: what went wrong in a failed run. */
static void
stats_dump(const struct bench_host *h)
{
	if (h->eng == NULL)
		return;
	fprintf(stderr, "host %s: link_in holds %u;", h->name, rte_ring_count(h->link_in));
	droce_engine_stats_print(stderr, h->eng);
	fprintf(stderr, "\n");
}

/* Exit codes: 0 result printed, 1 the run failed, 2 usage, 3 EAL did not start. */
int
main(int argc, char **argv)
{
	struct bench_run *r;
	struct bench_opts o;
	char rundir[PATH_MAX];
	int rc = -1;

	if (parse_opts(argc, argv, &o) != 0) {
		usage(argv[0]);
		return 2;
	}
	if (eal_init(&o, argv[0]) < 0) {
		fprintf(stderr, "EAL: %s\n", rte_strerror(rte_errno));
		return 3;
	}
	/* Two hosts with their QP tables: too big for the stack. */
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		fprintf(stderr, "out of memory\n");
	else if (rte_lcore_count() != o.lcores)
		fprintf(stderr, "EAL started %u lcores, not %u\n", rte_lcore_count(), o.lcores);
	else
		rc = hosts_open(&r->a, &r->b, &o);
	if (rc == 0) {
		r->o = &o;
		switch (o.mode) {
		case MODE_RATE:
		case MODE_BW:
			rc = run_stream(r);
			break;
		case MODE_LAT:
			rc = run_lat(r);
			break;
		case MODE_RAW:
			rc = run_raw(r);
			break;
		}
	}
	if (rc == 0) {
		printf(" mem=%s cpus=%d,%d\n", o.no_huge ? "nohuge" : "huge", o.cpu[0], o.cpu[1]);
	} else if (r != NULL) {
		stats_dump(&r->a);
		stats_dump(&r->b);
	}
	fflush(stdout);
	if (r != NULL) {
		host_close(&r->a);
		host_close(&r->b);
		hosts_release(&r->a, &r->b);
		free(r);
	}
	snprintf(rundir, sizeof(rundir), "%s", rte_eal_get_runtime_dir());
	rte_eal_cleanup();
	/* The runtime directory outlives the EAL even without shared files. */
	rmdir(rundir);
	return rc == 0 ? 0 : 1;
}
