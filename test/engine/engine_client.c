/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <rte_bus_vdev.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "droce_test.h"
#include "engine_client.h"
#include <droce_shm_bringup.h>
#include "test_eal.h"

#define TC_NB_MBUFS	8192
/* Headroom plus the largest packet: headers (<= 106 bytes), 4096 of payload, pad, ICRC. */
#define TC_MBUF_ROOM	(RTE_PKTMBUF_HEADROOM + 4352)
#define TC_RING_SIZE	4096
#define TC_REGION_SIZE	(64u << 20)
#define TC_MAX_OBJS	1024
#define TC_IDLE_US	20

/* Objects a host made, freed by tc_host_close in reverse kind order. */
struct tc_objs {
	struct tc_qp *qps[TC_MAX_OBJS];
	struct tc_cq *cqs[TC_MAX_OBJS];
	struct tc_srq *srqs[TC_MAX_OBJS];
	unsigned int nb_qps, nb_cqs, nb_srqs;
	bool ah_valid[TC_MAX_OBJS];
	struct rte_ring *rings[2 * TC_MAX_ENGINES];
	unsigned int nb_rings;
};

static struct tc_objs tc_objs_of[4];
/*
 * Engines running on lcores, by lcore: stopped at exit even when a check failed mid-test
 * (the hosts themselves may be gone with the failed test's stack frame).
 */
static struct droce_engine *tc_running[RTE_MAX_LCORE];
static unsigned int tc_nb_hosts;
/* Counts pairs opened, so that every DPDK object name is new (ports are not reusable). */
static unsigned int tc_generation;
static unsigned int tc_next_lcore = UINT_MAX;	/* rte_get_next_lcore starts at +1 */

static struct tc_objs *
objs(const struct tc_host *h)
{
	return &tc_objs_of[h->pd];
}

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- Client-side key checks (libdroce keeps the same tables) ---- */

static bool
tc_lkey_check(void *arg, uint32_t lkey, uint64_t addr, uint64_t len, unsigned int access)
{
	struct tc_host *h = arg;
	unsigned int i;

	for (i = 0; i < h->nb_mrs; i++) {
		const struct tc_mr *mr = &h->mrs[i];
		uint64_t base = (uintptr_t)mr->buf;

		if (mr->lkey != lkey)
			continue;
		return (mr->access & access) == access && addr >= base && len <= mr->len &&
		       addr - base <= mr->len - len;
	}
	return false;
}

static bool
tc_ah_check(void *arg, uint32_t ah)
{
	const struct tc_host *h = arg;

	return ah < TC_MAX_OBJS && objs(h)->ah_valid[ah];
}

/* ---- Hosts ---- */

static void
host_addr(struct tc_host *h, uint8_t id)
{
	static const uint8_t v4map[12] = { [10] = 0xff, [11] = 0xff };

	memset(h->mac, 0, 6);
	h->mac[0] = 0x02;
	h->mac[5] = id;
	memcpy(h->gid, v4map, 12);
	h->gid[12] = 10;
	h->gid[13] = 99;
	h->gid[14] = 0;
	h->gid[15] = id;
	memset(h->gid6, 0, 16);
	h->gid6[0] = 0xfe;
	h->gid6[1] = 0x80;
	h->gid6[15] = id;
}

static uint32_t tc_idle_next[2];	/* tc_next_pair_idle: hosts a and b (pd 0 and 1) */
static bool tc_idle_next_set;
static bool tc_early_next;		/* tc_next_pair_early */
static enum droce_engine_wait tc_wait_next[2];	/* tc_next_pair_wait */
static bool tc_wait_next_set;
static const struct droce_cc_params *tc_cc;	/* tc_hosts_cc */

void
tc_hosts_cc(const struct droce_cc_params *p)
{
	tc_cc = p;
}

void
tc_next_pair_early(void)
{
	tc_early_next = true;
}

void
tc_next_pair_wait(enum droce_engine_wait a, enum droce_engine_wait b)
{
	tc_wait_next[0] = a;
	tc_wait_next[1] = b;
	tc_wait_next_set = true;
}

void
tc_next_pair_idle(uint32_t a_us, uint32_t b_us)
{
	tc_idle_next[0] = a_us;
	tc_idle_next[1] = b_us;
	tc_idle_next_set = true;
}

/* Addresses and mempool: what a port needs before it exists. */
static void
host_prepare(struct tc_host *h, const char *name, unsigned int nb_eng, uint8_t id)
{
	char pname[64];

	CHECK(nb_eng >= 1 && nb_eng <= TC_MAX_ENGINES && tc_nb_hosts < RTE_DIM(tc_objs_of));
	memset(h, 0, sizeof(*h));
	h->name = name;
	h->nb_eng = nb_eng;
	h->pd = tc_nb_hosts++;
	memset(objs(h), 0, sizeof(*objs(h)));
	host_addr(h, id);
	snprintf(pname, sizeof(pname), "tc_mp_%s%u", name, tc_generation);
	h->mp = rte_pktmbuf_pool_create(pname, TC_NB_MBUFS, 256, 0, TC_MBUF_ROOM,
					SOCKET_ID_ANY);
	CHECK(h->mp != NULL);
}

/*
 * Device, engines on the port, the client region and its domain; the engines get the
 * slow-path rings of slow (NULL: none).
 */
static void
host_finish(struct tc_host *h, uint16_t port, uint8_t peer_id, const uint8_t peer_mac[6],
	    const struct tc_slow *slow)
{
	struct droce_engine_dev_conf dconf = { .max_qps = 4096 };
	struct droce_engine_domain_conf domconf;
	struct tc_host peer;
	unsigned int i;

	h->port = port;
	host_addr(&peer, peer_id);
	h->dev = droce_engine_dev_create(&dconf);
	CHECK(h->dev != NULL);
	CHECK(droce_engine_dev_neigh_add(h->dev, peer.gid, peer_mac) == 0);
	CHECK(droce_engine_dev_neigh_add(h->dev, peer.gid6, peer_mac) == 0);
	for (i = 0; i < h->nb_eng; i++) {
		struct droce_engine_conf ec;

		memset(&ec, 0, sizeof(ec));
		ec.slow_rx_wake_fd = -1;
		ec.port_id = port;
		ec.rx_queue = i;
		ec.tx_queue = i;
		ec.mp = h->mp;
		memcpy(ec.mac, h->mac, 6);
		memcpy(ec.gids[0], h->gid, 16);
		memcpy(ec.gids[1], h->gid6, 16);
		ec.nb_gids = 2;
		ec.idle_sleep_us = tc_idle_next_set && h->pd < 2 ? tc_idle_next[h->pd] : TC_IDLE_US;
		if (tc_wait_next_set && h->pd < 2)
			ec.wait = tc_wait_next[h->pd];
		else
			ec.wait = ec.idle_sleep_us != 0 ? DROCE_ENGINE_WAIT_ADAPTIVE :
				  DROCE_ENGINE_WAIT_POLL;
		ec.early_retransmit = tc_early_next;
		ec.cc = tc_cc;
		if (slow != NULL) {
			ec.slow_rx = slow->rx;
			/* slow_tx has one consumer: the first engine. */
			ec.slow_tx = i == 0 ? slow->tx : NULL;
		}
		h->eng[i] = droce_engine_create(h->dev, i, &ec);
		CHECK(h->eng[i] != NULL);
	}
	h->region_size = TC_REGION_SIZE;
	h->region = aligned_alloc(4096, h->region_size);
	CHECK(h->region != NULL);
	memset(h->region, 0, h->region_size);
	CHECK(droce_shm_arena_init(&h->arena, h->region, h->region_size, h->nb_eng) == 0);
	memset(&domconf, 0, sizeof(domconf));
	domconf.region = h->region;
	domconf.region_size = h->region_size;
	domconf.max_mrs = TC_MAX_MRS + 1;
	domconf.max_ahs = TC_MAX_OBJS;
	domconf.max_events = 1024;
	h->dom = droce_engine_domain_create(h->dev, &domconf);
	CHECK(h->dom != NULL);
}

void
tc_host_open_vdev(struct tc_host *h, const char *name, const char *vdev, const char *args,
		  unsigned int nb_eng, uint8_t host_id, uint8_t peer_id)
{
	char full[512];
	struct rte_eth_conf conf;
	struct tc_host peer;
	uint16_t port;
	unsigned int q;

	snprintf(full, sizeof(full), "%s,%s", vdev, args);
	test_eal_init_vdev(nb_eng, full);
	tc_generation++;
	host_prepare(h, name, nb_eng, host_id);
	CHECK(rte_eth_dev_get_port_by_name(vdev, &port) == 0);
	memset(&conf, 0, sizeof(conf));
	CHECK(rte_eth_dev_configure(port, nb_eng, nb_eng, &conf) == 0);
	for (q = 0; q < nb_eng; q++) {
		CHECK(rte_eth_rx_queue_setup(port, q, 1024, SOCKET_ID_ANY, NULL, h->mp) == 0);
		CHECK(rte_eth_tx_queue_setup(port, q, 1024, SOCKET_ID_ANY, NULL) == 0);
	}
	CHECK(rte_eth_dev_start(port) == 0);
	host_addr(&peer, peer_id);
	host_finish(h, port, peer_id, peer.mac, NULL);
	tc_host_start(h);
}

static void
tc_stop_all(void)
{
	unsigned int lc;

	for (lc = 0; lc < RTE_MAX_LCORE; lc++) {
		if (tc_running[lc] == NULL)
			continue;
		droce_engine_stop(tc_running[lc]);
		rte_eal_wait_lcore(lc);
		tc_running[lc] = NULL;
	}
}

void
tc_host_start(struct tc_host *h)
{
	static bool registered;
	unsigned int i;

	if (!registered) {
		atexit(tc_stop_all);
		registered = true;
	}
	for (i = 0; i < h->nb_eng; i++) {
		unsigned int lc = rte_get_next_lcore(tc_next_lcore, 1, 0);

		CHECK(lc < RTE_MAX_LCORE && tc_running[lc] == NULL);
		tc_next_lcore = lc;
		h->lcore[i] = lc;
		tc_running[lc] = h->eng[i];
		CHECK(rte_eal_remote_launch(droce_engine_run, h->eng[i], lc) == 0);
	}
}

static struct rte_ring *
tc_ring(struct tc_host *h, const char *what, unsigned int i)
{
	char name[RTE_RING_NAMESIZE];
	struct rte_ring *r;

	snprintf(name, sizeof(name), "tc_%s%u_%s%u", h->name, tc_generation, what, i);
	r = rte_ring_create(name, TC_RING_SIZE, SOCKET_ID_ANY, 0);
	CHECK(r != NULL);
	objs(h)->rings[objs(h)->nb_rings++] = r;
	return r;
}

static uint16_t
tc_ring_port(struct tc_host *h, struct rte_ring *rx0, struct rte_ring *tx)
{
	struct rte_ring *rx[TC_MAX_ENGINES], *txs[TC_MAX_ENGINES];
	unsigned int q, nq = h->nb_eng;
	struct rte_eth_conf conf;
	char name[64];
	int port;

	for (q = 0; q < nq; q++) {
		/* Queue 0 gets the link; the others see only what steering hands them. */
		rx[q] = q == 0 ? rx0 : tc_ring(h, "idle", q);
		txs[q] = tx;
	}
	snprintf(name, sizeof(name), "net_tc_%s%u", h->name, tc_generation);
	port = rte_eth_from_rings(name, rx, nq, txs, nq, SOCKET_ID_ANY);
	CHECK(port >= 0);
	memset(&conf, 0, sizeof(conf));
	CHECK(rte_eth_dev_configure(port, nq, nq, &conf) == 0);
	for (q = 0; q < nq; q++) {
		CHECK(rte_eth_rx_queue_setup(port, q, TC_RING_SIZE, SOCKET_ID_ANY, NULL,
					     h->mp) == 0);
		CHECK(rte_eth_tx_queue_setup(port, q, TC_RING_SIZE, SOCKET_ID_ANY, NULL) == 0);
	}
	CHECK(rte_eth_dev_start(port) == 0);
	return (uint16_t)port;
}

static void
tc_fault_attach(struct tc_host *h, const char *args)
{
	char full[256], pname[RTE_ETH_NAME_MAX_LEN];

	if (args == NULL)
		return;
	CHECK(rte_eth_dev_get_name_by_port(h->port, pname) == 0);
	snprintf(full, sizeof(full), "port=%s,%s", pname, args);
	h->fault = droce_fault_attach(full);
	CHECK(h->fault != NULL);
}

void
tc_pair_open(struct tc_host *a, struct tc_host *b, unsigned int nb_eng_a,
	     unsigned int nb_eng_b)
{
	tc_pair_open_faults(a, b, nb_eng_a, nb_eng_b, NULL, NULL);
}

int64_t
tc_first_not(const uint8_t *buf, uint64_t from, uint64_t to, uint8_t b)
{
	uint64_t i;

	for (i = from; i < to; i++)
		if (buf[i] != b)
			return (int64_t)i;
	return -1;
}

void
tc_pair_open_seeded(struct tc_host *a, struct tc_host *b, const char *faults, unsigned int seed)
{
	char fa[128], fb[128];

	if (faults == NULL) {
		tc_pair_open(a, b, 1, 1);
		return;
	}
	snprintf(fa, sizeof(fa), "seed=%u,%s", seed, faults);
	snprintf(fb, sizeof(fb), "seed=%u,%s", seed + 1, faults);
	tc_pair_open_faults(a, b, 1, 1, fa, fb);
}

void
tc_pair_open_faults(struct tc_host *a, struct tc_host *b, unsigned int nb_eng_a,
		    unsigned int nb_eng_b, const char *fault_a, const char *fault_b)
{
	struct rte_ring *ab, *ba;

	test_eal_init_lcores(nb_eng_a + nb_eng_b);
	/* A test that failed before closing its pair left engines and hosts behind. */
	tc_stop_all();
	tc_nb_hosts = 0;
	tc_next_lcore = UINT_MAX;
	tc_generation++;
	host_prepare(a, "a", nb_eng_a, 1);
	host_prepare(b, "b", nb_eng_b, 2);
	ab = tc_ring(a, "link", 0);
	ba = tc_ring(b, "link", 0);
	host_finish(a, tc_ring_port(a, ba, ab), 2, b->mac, NULL);
	host_finish(b, tc_ring_port(b, ab, ba), 1, a->mac, NULL);
	tc_idle_next_set = false;
	tc_wait_next_set = false;
	tc_early_next = false;
	tc_fault_attach(a, fault_a);
	tc_fault_attach(b, fault_b);
	tc_host_start(a);
	tc_host_start(b);
}

static void
tc_host_stop(struct tc_host *h)
{
	unsigned int i;

	for (i = 0; i < h->nb_eng; i++) {
		if (h->lcore[i] == 0)
			continue;
		droce_engine_stop(h->eng[i]);
		rte_eal_wait_lcore(h->lcore[i]);
		tc_running[h->lcore[i]] = NULL;
		h->lcore[i] = 0;
	}
}

static void
tc_host_free(struct tc_host *h)
{
	struct tc_objs *o = objs(h);
	unsigned int i;
	void *m;

	while (o->nb_qps > 0)
		tc_qp_destroy(o->qps[0]);
	while (o->nb_srqs > 0)
		tc_srq_destroy(o->srqs[0]);
	while (o->nb_cqs > 0)
		tc_cq_destroy(o->cqs[0]);
	droce_engine_domain_destroy(h->dom);
	for (i = 0; i < h->nb_eng; i++)
		droce_engine_destroy(h->eng[i]);
	droce_engine_dev_destroy(h->dev);
	if (h->fault != NULL) {
		droce_fault_detach(h->fault);
		h->fault = NULL;
	}
	CHECK(rte_eth_dev_stop(h->port) == 0);
	CHECK(rte_eth_dev_close(h->port) == 0);
	free(h->region);
	for (i = 0; i < h->nb_mrs; i++)
		free(h->mrs[i].buf);
	h->nb_mrs = 0;
	/* Packets still on the links go back to their pools before the pools are checked. */
	for (i = 0; i < o->nb_rings; i++) {
		while (rte_ring_dequeue(o->rings[i], &m) == 0)
			rte_pktmbuf_free(m);
	}
}

static void
tc_host_release(struct tc_host *h)
{
	struct tc_objs *o = objs(h);
	unsigned int i;

	/* Every mbuf came back: nothing leaked on any path. */
	CHECK_EQ_U64(rte_mempool_avail_count(h->mp), TC_NB_MBUFS);
	rte_mempool_free(h->mp);
	for (i = 0; i < o->nb_rings; i++)
		rte_ring_free(o->rings[i]);
	o->nb_rings = 0;
}

void
tc_host_close(struct tc_host *h)
{
	tc_host_stop(h);
	tc_host_free(h);
	tc_host_release(h);
}

void
tc_pair_close(struct tc_host *a, struct tc_host *b)
{
	tc_host_stop(a);
	tc_host_stop(b);
	tc_host_free(a);
	tc_host_free(b);
	/* A link ring of one host may hold the other's mbufs: drain both before checking. */
	tc_host_release(a);
	tc_host_release(b);
	tc_nb_hosts = 0;
	tc_next_lcore = UINT_MAX;
}

/* ---- Objects ---- */

static void *
region_ptr(struct tc_host *h, int64_t off)
{
	CHECK(off > 0);
	return (uint8_t *)h->region + off;
}

/* An MR of len zeroed bytes at iova (NULL: the buffer's own address, as ibv_reg_mr). */
static struct tc_mr *
mr_reg(struct tc_host *h, uint64_t len, uint32_t access, const uint64_t *iova)
{
	struct tc_mr *mr;

	CHECK(h->nb_mrs < TC_MAX_MRS);
	mr = &h->mrs[h->nb_mrs];
	mr->len = len;
	mr->access = access;
	mr->buf = aligned_alloc(4096, (len + 4095) & ~4095ull);
	CHECK(mr->buf != NULL);
	memset(mr->buf, 0, len);
	CHECK(droce_engine_mr_reg(h->dom, h->pd, mr->buf, iova != NULL ? *iova : (uintptr_t)mr->buf,
				  len, access, &mr->lkey, &mr->rkey) == 0);
	h->nb_mrs++;
	return mr;
}

struct tc_mr *
tc_mr_reg_iova(struct tc_host *h, uint64_t len, uint32_t access, uint64_t iova)
{
	return mr_reg(h, len, access, &iova);
}

struct tc_mr *
tc_mr_reg(struct tc_host *h, uint64_t len, uint32_t access)
{
	return mr_reg(h, len, access, NULL);
}

int
tc_mr_dereg(struct tc_host *h, struct tc_mr *mr)
{
	return droce_engine_mr_dereg(h->dom, mr->lkey);
}

void
tc_mw_alloc(struct tc_host *h, enum ibv_mw_type type, struct ibv_mw *mw)
{
	memset(mw, 0, sizeof(*mw));
	mw->type = type;
	CHECK_EQ_I64(droce_engine_mw_alloc(h->dom, h->pd, type, &mw->rkey), 0);
	mw->handle = mw->rkey;
}

int
tc_mw_dealloc(struct tc_host *h, struct ibv_mw *mw)
{
	/* handle: the key it was allocated with (bindings change rkey's low byte). */
	return droce_engine_mw_dealloc(h->dom, mw->handle);
}

/* The host's region as lib/engine/droce_engine_region.h takes it. */
static struct droce_engine_region
host_region(struct tc_host *h)
{
	return (struct droce_engine_region){ .base = h->region, .arena = &h->arena, .dom = h->dom };
}

struct tc_cq *
tc_cq_create(struct tc_host *h, uint32_t size)
{
	struct tc_cq *cq = calloc(1, sizeof(*cq));
	struct droce_engine_region r = host_region(h);

	CHECK(cq != NULL && objs(h)->nb_cqs < TC_MAX_OBJS);
	cq->h = h;
	cq->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	CHECK(cq->efd >= 0);
	cq->handle = ++h->next_handle;
	cq->cq = droce_engine_region_cq_create(&r, size, cq->efd, cq->handle, &cq->mem, &cq->view);
	CHECK(cq->cq != NULL);
	objs(h)->cqs[objs(h)->nb_cqs++] = cq;
	return cq;
}

static void
objs_remove(void **arr, unsigned int *n, void *p)
{
	unsigned int i;

	for (i = 0; i < *n; i++) {
		if (arr[i] == p) {
			arr[i] = arr[--*n];
			return;
		}
	}
}

int
tc_cq_resize(struct tc_cq *cq, uint32_t size)
{
	struct droce_engine_region r = host_region(cq->h);

	return droce_engine_region_cq_resize(&r, cq->cq, &cq->mem, cq->view.size, size, &cq->view);
}

void
tc_cq_destroy(struct tc_cq *cq)
{
	struct tc_host *h = cq->h;
	struct droce_engine_region r = host_region(h);

	CHECK(droce_engine_cq_destroy(cq->cq) == 0);
	CHECK(droce_engine_region_cq_free(&r, &cq->mem, cq->view.size) == 0);
	close(cq->efd);
	objs_remove((void **)objs(h)->cqs, &objs(h)->nb_cqs, cq);
	free(cq);
}

static struct tc_srq *
srq_create(struct tc_host *h, uint32_t size, uint32_t max_sge, uint32_t limit, uint32_t xrcd,
	   struct tc_cq *cq)
{
	struct tc_srq *srq = calloc(1, sizeof(*srq));
	struct droce_engine_srq_conf conf;

	CHECK(srq != NULL && objs(h)->nb_srqs < TC_MAX_OBJS);
	srq->h = h;
	srq->ring_len = (uint64_t)size * droce_shm_rq_stride(max_sge);
	srq->ctl_off = droce_shm_arena_alloc(&h->arena, sizeof(struct droce_shm_srq), 64);
	srq->ring_off = droce_shm_arena_alloc(&h->arena, srq->ring_len, 64);
	srq->handle = ++h->next_handle;
	memset(&conf, 0, sizeof(conf));
	conf.ctl = region_ptr(h, srq->ctl_off);
	conf.ring = region_ptr(h, srq->ring_off);
	conf.size = size;
	conf.max_sge = max_sge;
	conf.pd = h->pd;
	conf.limit = limit;
	conf.handle = srq->handle;
	conf.xrcd = xrcd;
	conf.cq = cq != NULL ? cq->cq : NULL;
	srq->srq = droce_engine_srq_create(h->dom, &conf);
	CHECK(srq->srq != NULL);
	srq->view.ctl = conf.ctl;
	srq->view.ring = conf.ring;
	srq->view.size = size;
	srq->view.stride = droce_shm_rq_stride(max_sge);
	srq->view.max_sge = max_sge;
	srq->view.lkey_check = tc_lkey_check;
	srq->view.check_arg = h;
	objs(h)->srqs[objs(h)->nb_srqs++] = srq;
	return srq;
}

struct tc_srq *
tc_srq_create(struct tc_host *h, uint32_t size, uint32_t max_sge, uint32_t limit)
{
	return srq_create(h, size, max_sge, limit, 0, NULL);
}

struct tc_srq *
tc_srq_create_xrc(struct tc_host *h, uint32_t size, uint32_t max_sge, uint32_t xrcd,
		  struct tc_cq *cq)
{
	return srq_create(h, size, max_sge, 0, xrcd, cq);
}

void
tc_srq_destroy(struct tc_srq *srq)
{
	struct tc_host *h = srq->h;

	CHECK(droce_engine_srq_destroy(srq->srq) == 0);
	CHECK(droce_shm_arena_free(&h->arena, srq->ctl_off, sizeof(struct droce_shm_srq)) == 0);
	CHECK(droce_shm_arena_free(&h->arena, srq->ring_off, srq->ring_len) == 0);
	objs_remove((void **)objs(h)->srqs, &objs(h)->nb_srqs, srq);
	free(srq);
}

struct tc_qp *
tc_qp_create(struct tc_host *h, const struct tc_qp_init *in)
{
	struct tc_qp *qp = calloc(1, sizeof(*qp));
	struct droce_engine_region r = host_region(h);
	struct droce_engine_qp_conf c;

	CHECK(qp != NULL && objs(h)->nb_qps < TC_MAX_OBJS && in->engine < h->nb_eng);
	qp->h = h;
	qp->engine = in->engine;
	memset(&c, 0, sizeof(c));
	c.qp_type = in->type;
	c.engine_id = in->engine;
	c.pd = in->type == DROCE_SHM_QPT_XRC_RECV ? 0 : h->pd;
	c.xrcd = in->xrcd;
	c.send_cq = in->type == DROCE_SHM_QPT_XRC_RECV ? NULL : in->scq->cq;
	c.recv_cq = in->type == DROCE_SHM_QPT_XRC_RECV || in->type == DROCE_SHM_QPT_XRC_SEND ?
		    NULL : in->rcq->cq;
	c.srq = in->srq != NULL ? in->srq->srq : NULL;
	c.sq_sig_all = in->sq_sig_all;
	c.sq_size = in->sq_size;
	c.sq_max_sge = in->max_sge;
	c.max_inline = in->max_inline;
	c.rq_size = in->srq != NULL ? 0 : in->rq_size;
	c.rq_max_sge = in->srq != NULL ? 0 : in->max_sge;
	c.db_slot = h->next_slot[in->engine]++;
	qp->qp = droce_engine_region_qp_create(&r, &c, &qp->mem, &qp->view);
	CHECK(qp->qp != NULL);
	qp->qpn = qp->view.qp_num;
	qp->view.supported_wr = (1u << DROCE_SHM_WR_SEND) | (1u << DROCE_SHM_WR_SEND_WITH_IMM) |
				(1u << DROCE_SHM_WR_SEND_WITH_INV);
	qp->view.lkey_check = tc_lkey_check;
	qp->view.ah_check = tc_ah_check;
	qp->view.check_arg = h;
	objs(h)->qps[objs(h)->nb_qps++] = qp;
	return qp;
}

void
tc_qp_destroy(struct tc_qp *qp)
{
	struct tc_host *h = qp->h;
	struct droce_engine_region r = host_region(h);

	CHECK(droce_engine_qp_destroy(qp->qp) == 0);
	CHECK(droce_engine_region_qp_free(&r, &qp->mem) == 0);
	objs_remove((void **)objs(h)->qps, &objs(h)->nb_qps, qp);
	free(qp);
}

int
tc_modify(struct tc_qp *qp, const struct droce_shm_qp_attr *attr)
{
	return droce_engine_qp_modify(qp->qp, attr);
}

static void
tc_ah_attr(const struct tc_host *to, bool ipv6, struct droce_shm_ah_attr *ah)
{
	droce_shm_bringup_ah(ah, ipv6 ? to->gid6 : to->gid, ipv6 ? 1 : 0);
}

/* Applies INIT, RTR and RTS in turn: each must be accepted. */
static void
tc_modify_steps(struct tc_qp *x, const struct droce_shm_qp_attr attr[DROCE_SHM_BRINGUP_STEPS])
{
	unsigned int i;

	for (i = 0; i < DROCE_SHM_BRINGUP_STEPS; i++)
		CHECK_EQ_I64(tc_modify(x, &attr[i]), 0);
}

static void
tc_connect_one(struct tc_qp *x, uint32_t dest_qpn, const struct tc_host *to,
	       const struct tc_path *p, uint32_t sq_psn, uint32_t rq_psn, uint32_t access)
{
	struct droce_shm_qp_attr attr[DROCE_SHM_BRINGUP_STEPS];
	struct droce_shm_bringup_path path = {
		.qp_type = x->view.qp_type,
		.access = access != 0 ? access : IBV_ACCESS_LOCAL_WRITE,
		.mtu = p->mtu,
		.dest_qpn = dest_qpn,
		.sq_psn = sq_psn,
		.rq_psn = rq_psn,
		.timeout = p->timeout,
		.retry_cnt = p->retry_cnt,
		.rnr_retry = p->rnr_retry,
		.min_rnr_timer = p->min_rnr_timer,
		.rd_atomic = p->rd_atomic != 0 ? p->rd_atomic : 1,
	};

	tc_ah_attr(to, p->ipv6, &path.ah);
	droce_shm_bringup_connected(&path, attr);
	tc_modify_steps(x, attr);
}

void
tc_connect(struct tc_qp *a, struct tc_qp *b, const struct tc_path *p)
{
	tc_connect_one(a, b->qpn, b->h, p, p->psn_a, p->psn_b, p->access_a);
	tc_connect_one(b, a->qpn, a->h, p, p->psn_b, p->psn_a, p->access_b);
}

void
tc_connect_remote(struct tc_qp *qp, uint32_t dest_qpn, uint8_t peer_id, const struct tc_path *p)
{
	struct tc_host peer;

	host_addr(&peer, peer_id);
	tc_connect_one(qp, dest_qpn, &peer, p, p->psn_a, p->psn_b, p->access_a);
}

void
tc_ud_ready(struct tc_qp *qp, uint32_t qkey, uint32_t sq_psn)
{
	struct droce_shm_qp_attr attr[DROCE_SHM_BRINGUP_STEPS];

	droce_shm_bringup_ud(qkey, sq_psn, attr);
	tc_modify_steps(qp, attr);
}

int
tc_ah_create(struct tc_host *h, unsigned int engine, const struct tc_host *to, bool ipv6,
	     uint32_t *ah)
{
	struct droce_shm_ah_attr attr;
	int rc;

	tc_ah_attr(to, ipv6, &attr);
	rc = droce_engine_ah_create(h->dom, engine, h->pd, &attr, ah);
	if (rc == 0 && *ah < TC_MAX_OBJS)
		objs(h)->ah_valid[*ah] = true;
	return rc;
}

int
tc_ah_create_gid(struct tc_host *h, unsigned int engine, const uint8_t gid[16], uint32_t *ah)
{
	static const uint8_t v4map[12] = { [10] = 0xff, [11] = 0xff };
	struct droce_shm_ah_attr attr;
	int rc;

	droce_shm_bringup_ah(&attr, gid, memcmp(gid, v4map, 12) == 0 ? 0 : 1);
	rc = droce_engine_ah_create(h->dom, engine, h->pd, &attr, ah);
	if (rc == 0 && *ah < TC_MAX_OBJS)
		objs(h)->ah_valid[*ah] = true;
	return rc;
}

/* ---- Posting and polling ---- */

int
tc_post_send(struct tc_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	return droce_shm_post_send(&qp->view, wr, bad);
}

int
tc_post_recv(struct tc_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return droce_shm_post_recv(&qp->view, wr, bad);
}

int
tc_post_srq_recv(struct tc_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return droce_shm_post_srq_recv(&srq->view, wr, bad);
}

int
tc_send(struct tc_qp *qp, uint64_t wr_id, const struct tc_mr *mr, uint64_t off, uint32_t len,
	unsigned int flags)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(mr->buf + off), .length = len, .lkey = mr->lkey,
	};
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = flags;
	return tc_post_send(qp, &wr, &bad);
}

int
tc_recv(struct tc_qp *qp, uint64_t wr_id, const struct tc_mr *mr, uint64_t off, uint32_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(mr->buf + off), .length = len, .lkey = mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return tc_post_recv(qp, &wr, &bad);
}

int
tc_srq_recv(struct tc_srq *srq, uint64_t wr_id, const struct tc_mr *mr, uint64_t off,
	    uint32_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(mr->buf + off), .length = len, .lkey = mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return tc_post_srq_recv(srq, &wr, &bad);
}

int
tc_post_one(struct tc_qp *qp, struct ibv_send_wr *wr, const struct tc_mr *mr, uint64_t off,
	    uint32_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(mr->buf + off), .length = len, .lkey = mr->lkey,
	};
	struct ibv_send_wr *bad;

	wr->sg_list = &sge;
	wr->num_sge = 1;
	wr->next = NULL;
	return tc_post_send(qp, wr, &bad);
}

int
tc_poll(struct tc_cq *cq, int n, struct ibv_wc *wc)
{
	return droce_shm_poll_cq(&cq->view, n, wc);
}

int
tc_wait(struct tc_cq *cq, int n, struct ibv_wc *wc, unsigned int timeout_ms)
{
	uint64_t end = now_ms() + timeout_ms;
	int got = 0;

	while (got < n) {
		int r = tc_poll(cq, n - got, wc + got);

		if (r < 0)
			return got;
		got += r;
		if (r == 0) {
			if (now_ms() > end)
				break;
			usleep(20);
		}
	}
	return got;
}

int
tc_event(struct tc_host *h, struct droce_engine_event *ev, unsigned int timeout_ms)
{
	uint64_t end = now_ms() + timeout_ms;

	for (;;) {
		if (droce_engine_domain_event_get(h->dom, ev) == 1)
			return 1;
		if (now_ms() > end)
			return 0;
		usleep(100);
	}
}

uint32_t
tc_qp_state(const struct tc_qp *qp)
{
	return droce_shm_client_qp_state(&qp->view);
}

uint64_t
tc_engine_counter(const struct tc_host *h, unsigned int eng, const char *name)
{
	struct droce_engine_stats st;
	unsigned int c;

	droce_engine_stats_get(h->eng[eng], &st);
	for (c = 0; c < DROCE_ENGINE_NB_COUNTERS; c++) {
		if (strcmp(droce_engine_counter_names[c], name) == 0)
			return ((const uint64_t *)&st)[c];
	}
	CHECK(c < DROCE_ENGINE_NB_COUNTERS);
	return 0;
}

/* Index of a Linux-named QP counter; aborts on a name that is not one (a typo in a test). */
static unsigned int
qp_counter_index(const char *name)
{
	unsigned int c;

	for (c = 0; c < DROCE_ENGINE_NB_QP_COUNTERS; c++)
		if (strcmp(droce_engine_qp_counter_names[c], name) == 0)
			return c;
	fprintf(stderr, "no QP counter named %s\n", name);
	abort();
}

uint64_t
tc_qp_counter(const struct tc_qp *q, const char *name)
{
	struct droce_engine_qp_counters c;

	droce_engine_qp_counters_get(q->qp, &c);
	return ((const uint64_t *)&c)[qp_counter_index(name)];
}

uint64_t
tc_port_counter(const struct tc_host *h, const char *name)
{
	struct droce_engine_qp_counters c;
	unsigned int i, k = qp_counter_index(name);
	uint64_t sum = 0;

	for (i = 0; i < h->nb_eng; i++) {
		droce_engine_qp_counters_total(h->eng[i], &c);
		sum += ((const uint64_t *)&c)[k];
	}
	return sum;
}

uint64_t
tc_counter(const struct tc_host *h, const char *name)
{
	struct droce_engine_stats st;
	uint64_t sum = 0;
	unsigned int i, c;

	for (i = 0; i < h->nb_eng; i++) {
		droce_engine_stats_get(h->eng[i], &st);
		for (c = 0; c < DROCE_ENGINE_NB_COUNTERS; c++) {
			if (strcmp(droce_engine_counter_names[c], name) == 0)
				sum += ((const uint64_t *)&st)[c];
		}
	}
	return sum;
}

void
tc_dump(const struct tc_host *h)
{
	unsigned int i;

	for (i = 0; i < h->nb_eng; i++) {
		fprintf(stderr, "host %s engine %u:", h->name, i);
		droce_engine_stats_print(stderr, h->eng[i]);
		fprintf(stderr, "\n");
	}
	for (i = 0; i < objs(h)->nb_qps; i++) {
		fprintf(stderr, "host %s ", h->name);
		droce_engine_qp_print(stderr, objs(h)->qps[i]->qp);
	}
}

/* ---- A host on rings the caller fills and drains ---- */

void
tc_host_open_rings(struct tc_host *h, const char *name, const struct tc_host_addr *self,
		   const struct tc_host_addr *peer, struct rte_ring **rx, struct rte_ring **tx)
{
	/* The caller polls the engine itself: no worker lcore. */
	test_eal_init();
	host_prepare(h, name, 1, 0);
	memcpy(h->mac, self->mac, sizeof(h->mac));
	memcpy(h->gid, self->gid, sizeof(h->gid));
	memcpy(h->gid6, self->gid6, sizeof(h->gid6));
	*rx = tc_ring(h, "rx", 0);
	*tx = tc_ring(h, "tx", 0);
	/* host_finish adds the derived neighbours of peer 0 too: unused, harmless. */
	host_finish(h, tc_ring_port(h, *rx, *tx), 0, peer->mac, NULL);
	CHECK(droce_engine_dev_neigh_add(h->dev, peer->gid, peer->mac) == 0);
	CHECK(droce_engine_dev_neigh_add(h->dev, peer->gid6, peer->mac) == 0);
}

/* ---- Hosts with slow-path rings ---- */

void
tc_pair_open_slow(struct tc_host *a, struct tc_host *b, unsigned int nb_eng_a,
		  unsigned int nb_eng_b, const struct tc_slow *slow_a,
		  const struct tc_slow *slow_b, struct rte_ring **ab, struct rte_ring **ba)
{
	test_eal_init_lcores(nb_eng_a + nb_eng_b);
	/* A test that failed before closing its pair left engines and hosts behind. */
	tc_stop_all();
	tc_nb_hosts = 0;
	tc_next_lcore = UINT_MAX;
	tc_generation++;
	host_prepare(a, "a", nb_eng_a, 1);
	host_prepare(b, "b", nb_eng_b, 2);
	*ab = tc_ring(a, "link", 0);
	*ba = tc_ring(b, "link", 0);
	host_finish(a, tc_ring_port(a, *ba, *ab), 2, b->mac, slow_a);
	host_finish(b, tc_ring_port(b, *ab, *ba), 1, a->mac, slow_b);
	tc_host_start(a);
	tc_host_start(b);
}
