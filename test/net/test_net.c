/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/net without a port: frames are injected with droce_net_rx, what the library sends
 * is recorded by the tx callback, and time is driven explicitly (hz = 1000: "now" is in
 * milliseconds). Every frame produced is checked byte for byte against frames this test
 * builds itself, checksums included (computed here, not by DPDK). Every test ends with
 * the mempool full again: nothing leaks.
 */

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "droce_net.h"
#include "droce_test.h"
#include "test_eal.h"

#define NB_MBUFS	255u
#define MBUF_ROOM	(2048u + RTE_PKTMBUF_HEADROOM)
#define MAX_TX		64u
#define MAX_EVENTS	16u
#define HZ		1000u	/* now in ms */
#define RETRY_MS	100u
#define TRIES		3u
#define REACHABLE_MS	1000u
#define ARP_LEN		42u
#define MIN_FRAME	60u
#define ETH_HLEN	14u
#define IP_HLEN		20u
#define ICMP_HLEN	8u
#define TAG_OFF		20u	/* where a held test packet carries its number */

static const uint8_t our_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
static const uint8_t peer_mac[6] = { 0x52, 0x54, 0x00, 0xAA, 0xBB, 0xCC };
static const uint8_t other_mac[6] = { 0x52, 0x54, 0x00, 0x01, 0x02, 0x03 };
static const uint8_t bcast[6] = { 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF };
static const uint8_t zero_mac[6];
#define OUR_IP		0x0A630001u	/* 10.99.0.1/24 */
#define PEER_IP		0x0A630002u
#define OTHER_IP	0x0A630003u
#define OFFNET_IP	0x0A640002u
static const uint8_t our_ip6[16] = { 0x20, 0x01, 0x0D, 0xB8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 };

struct tx_log {
	struct rte_mbuf *m[MAX_TX];
	uint32_t nb;
	bool discard;		/* free frames as they are sent instead of keeping them */
	uint32_t nb_events;
	uint32_t ev_ip[MAX_EVENTS];
	int ev_status[MAX_EVENTS];
	uint8_t ev_mac[MAX_EVENTS][6];
};

static struct rte_mempool *mp;
static struct tx_log txl;
/* The object of the running test, freed by the next test if this one fails. */
static struct droce_net *cur_net;

static void
rec_tx(void *arg, struct rte_mbuf *m)
{
	struct tx_log *l = arg;

	if (l->discard) {
		rte_pktmbuf_free(m);
		return;
	}
	CHECK(l->nb < MAX_TX);
	l->m[l->nb++] = m;
}

static void
rec_resolved(void *arg, uint32_t ip, const uint8_t *mac, int status)
{
	struct tx_log *l = arg;

	CHECK(l->nb_events < MAX_EVENTS);
	l->ev_ip[l->nb_events] = ip;
	l->ev_status[l->nb_events] = status;
	memcpy(l->ev_mac[l->nb_events], mac != NULL ? mac : zero_mac, 6);
	l->nb_events++;
}

static void
tx_clear(void)
{
	uint32_t i;

	for (i = 0; i < txl.nb; i++)
		rte_pktmbuf_free(txl.m[i]);
	txl.nb = 0;
	txl.nb_events = 0;
}

static void
conf_default(struct droce_net_conf *c)
{
	memset(c, 0, sizeof(*c));
	memcpy(c->mac, our_mac, 6);
	c->ipv4 = OUR_IP;
	c->ipv4_prefix_len = 24;
	memcpy(c->ipv6[0].addr, our_ip6, 16);
	c->ipv6[0].prefix_len = 64;
	c->nb_ipv6 = 1;
	c->mp = mp;
	c->hz = HZ;
	c->arp_retry_ms = RETRY_MS;
	c->arp_tries = TRIES;
	c->reachable_ms = REACHABLE_MS;
	c->ops.tx = rec_tx;
	c->ops.resolved = rec_resolved;
	c->ops.arg = &txl;
}

/* Every mbuf's buffer filled with a pattern, so a byte the library forgets to write shows. */
static void
pool_poison(void)
{
	struct rte_mbuf *all[NB_MBUFS];
	uint32_t i;

	CHECK(rte_pktmbuf_alloc_bulk(mp, all, NB_MBUFS) == 0);
	for (i = 0; i < NB_MBUFS; i++)
		memset(all[i]->buf_addr, 0x5A, all[i]->buf_len);
	rte_pktmbuf_free_bulk(all, NB_MBUFS);
}

static struct droce_net *
net_setup(void)
{
	struct droce_net_conf c;
	struct droce_net *n;

	test_eal_init();
	if (mp == NULL) {
		mp = rte_pktmbuf_pool_create("net_test", NB_MBUFS, 0, 0, MBUF_ROOM,
					     SOCKET_ID_ANY);
		CHECK(mp != NULL);
	}
	/* A failed test may have left frames behind: they must not fail the next one. */
	tx_clear();
	droce_net_free(cur_net);
	cur_net = NULL;
	memset(&txl, 0, sizeof(txl));
	pool_poison();
	conf_default(&c);
	n = droce_net_create(&c);
	CHECK(n != NULL);
	cur_net = n;
	return n;
}

/* Frees everything and checks that every mbuf came back. */
static void
net_teardown(struct droce_net *n)
{
	tx_clear();
	droce_net_free(n);
	cur_net = NULL;
	CHECK_EQ_U64(rte_mempool_avail_count(mp), NB_MBUFS);
}

static struct droce_net_stats
stats(const struct droce_net *n)
{
	struct droce_net_stats st;

	droce_net_stats_get(n, &st);
	return st;
}

static struct rte_mbuf *
mk(const uint8_t *bytes, uint32_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
	char *p;

	CHECK(m != NULL);
	p = rte_pktmbuf_append(m, len);
	CHECK(p != NULL || len == 0);
	if (len > 0)
		memcpy(p, bytes, len);
	return m;
}

/* The same bytes as a chain of two segments split at cut. */
static struct rte_mbuf *
mk_chain(const uint8_t *bytes, uint32_t len, uint32_t cut)
{
	struct rte_mbuf *a = mk(bytes, cut), *b = mk(bytes + cut, len - cut);

	CHECK(rte_pktmbuf_chain(a, b) == 0);
	return a;
}

static void
put_ip(uint8_t *p, uint32_t ip)
{
	p[0] = ip >> 24;
	p[1] = ip >> 16;
	p[2] = ip >> 8;
	p[3] = ip;
}

/* An ARP frame (RFC 826, Ethernet/IPv4) of ARP_LEN bytes, written field by field. */
static void
arp_frame(uint8_t *f, const uint8_t *dst, const uint8_t *src, uint16_t op,
	  const uint8_t *sha, uint32_t spa, const uint8_t *tha, uint32_t tpa)
{
	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	f[12] = 0x08; f[13] = 0x06;
	f[14] = 0x00; f[15] = 0x01;
	f[16] = 0x08; f[17] = 0x00;
	f[18] = 6; f[19] = 4;
	f[20] = 0; f[21] = op;
	memcpy(f + 22, sha, 6);
	put_ip(f + 28, spa);
	memcpy(f + 32, tha, 6);
	put_ip(f + 38, tpa);
}

static int
rx_bytes(struct droce_net *n, const uint8_t *f, uint32_t len, uint64_t now)
{
	return droce_net_rx(n, mk(f, len), now);
}

static void
check_frame(uint32_t i, const uint8_t *expect, uint32_t len)
{
	CHECK(i < txl.nb);
	CHECK_EQ_U64(rte_pktmbuf_pkt_len(txl.m[i]), len);
	CHECK_EQ_U64(txl.m[i]->nb_segs, 1);
	CHECK_MEM(rte_pktmbuf_mtod(txl.m[i], const uint8_t *), expect, len);
}

/* The expected ARP request for ip, padded with zeros. */
static void
check_arp_request(uint32_t i, uint32_t ip)
{
	uint8_t e[MIN_FRAME] = { 0 };

	arp_frame(e, bcast, our_mac, 1, our_mac, OUR_IP, zero_mac, ip);
	check_frame(i, e, sizeof(e));
}

/* RFC 1071, computed byte by byte in network order. */
static uint16_t
csum16(const uint8_t *p, uint32_t len)
{
	uint32_t s = 0, i;

	for (i = 0; i + 1 < len; i += 2)
		s += (uint32_t)p[i] << 8 | p[i + 1];
	if (len & 1)
		s += (uint32_t)p[len - 1] << 8;
	while (s >> 16)
		s = (s & 0xFFFF) + (s >> 16);
	return (uint16_t)~s;
}

DROCE_TEST(gid_table)
{
	static const uint8_t gid0[16] = {
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 10, 99, 0, 1
	};
	/* fe80:: + MAC 52:54:00:12:34:56 as modified EUI-64: 0x52 ^ 0x02, ff:fe inserted. */
	static const uint8_t gid1[16] = {
		0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0x00, 0xFF, 0xFE, 0x12, 0x34, 0x56
	};
	struct droce_net *n = net_setup();
	enum droce_net_gid_type type = DROCE_NET_GID_TYPE_IB;
	struct droce_net_conf c;
	struct droce_net *n4;
	uint8_t gid[16], mac[6];
	uint32_t ip = 0;

	CHECK_EQ_U64(droce_net_gid_count(n), 3);
	CHECK_EQ_I64(droce_net_gid_query(n, 0, gid, &type), 0);
	CHECK_MEM(gid, gid0, 16);
	CHECK_EQ_U64(type, 2);	/* IBV_GID_TYPE_ROCE_V2 */
	type = DROCE_NET_GID_TYPE_IB;
	CHECK_EQ_I64(droce_net_gid_query(n, 1, gid, &type), 0);
	CHECK_MEM(gid, gid1, 16);
	CHECK_EQ_U64(type, DROCE_NET_GID_TYPE_ROCE_V2);
	CHECK_EQ_I64(droce_net_gid_query(n, 2, gid, &type), 0);
	CHECK_MEM(gid, our_ip6, 16);
	CHECK_EQ_I64(droce_net_gid_query(n, 3, gid, &type), -EINVAL);
	CHECK_EQ_I64(droce_net_gid_find(n, gid0), 0);
	CHECK_EQ_I64(droce_net_gid_find(n, gid1), 1);
	CHECK_EQ_I64(droce_net_gid_find(n, our_ip6), 2);
	gid[15] ^= 1;
	CHECK_EQ_I64(droce_net_gid_find(n, gid), -ENOENT);

	CHECK_EQ_I64(droce_net_gid_to_ipv4(gid0, &ip), 0);
	CHECK_EQ_U64(ip, OUR_IP);
	CHECK_EQ_I64(droce_net_gid_to_ipv4(gid1, &ip), -EOPNOTSUPP);
	/* IPv6 peers: static entries only, no ND. */
	CHECK_EQ_I64(droce_net_gid_resolve(n, gid, NULL, mac, 0), -EOPNOTSUPP);
	CHECK_EQ_I64(droce_net_neigh6_add_static(n, gid, peer_mac), 0);
	CHECK_EQ_I64(droce_net_gid_resolve(n, gid, NULL, mac, 0), 0);
	CHECK_MEM(mac, peer_mac, 6);
	CHECK_EQ_I64(droce_net_neigh6_add_static(n, gid0, peer_mac), -EINVAL);
	CHECK_EQ_U64(txl.nb, 0);

	/* Without IPv4, GID 0 is an empty entry; a configured fe80:: GID is not repeated. */
	conf_default(&c);
	c.ipv4 = 0;
	memcpy(c.ipv6[0].addr, gid1, 16);
	memcpy(c.ipv6[1].addr, our_ip6, 16);
	c.nb_ipv6 = 2;
	n4 = droce_net_create(&c);
	CHECK(n4 != NULL);
	CHECK_EQ_U64(droce_net_gid_count(n4), 3);
	CHECK_EQ_I64(droce_net_gid_query(n4, 0, gid, NULL), -ENODATA);
	CHECK_EQ_I64(droce_net_gid_query(n4, 2, gid, NULL), 0);
	CHECK_MEM(gid, our_ip6, 16);
	CHECK_EQ_I64(droce_net_garp(n4, 0), -EINVAL);
	droce_net_free(n4);

	c.nb_ipv6 = DROCE_NET_MAX_IPV6 + 1;
	CHECK(droce_net_create(&c) == NULL);
	CHECK_EQ_I64(rte_errno, EINVAL);
	net_teardown(n);
}

DROCE_TEST(arp_request_answered)
{
	/* Written out in full: the reply to 10.99.0.2 asking who has 10.99.0.1. */
	static const uint8_t reply[MIN_FRAME] = {
		0x52, 0x54, 0x00, 0xAA, 0xBB, 0xCC, 0x52, 0x54, 0x00, 0x12, 0x34, 0x56,
		0x08, 0x06, 0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x02,
		0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 10, 99, 0, 1,
		0x52, 0x54, 0x00, 0xAA, 0xBB, 0xCC, 10, 99, 0, 2,
	};
	struct droce_net *n = net_setup();
	uint8_t f[ARP_LEN], mac[6];

	arp_frame(f, bcast, peer_mac, 1, peer_mac, PEER_IP, zero_mac, OUR_IP);
	CHECK_EQ_I64(rx_bytes(n, f, sizeof(f), 0), 0);
	CHECK_EQ_U64(txl.nb, 1);
	check_frame(0, reply, sizeof(reply));
	/* The asker is learned (RFC 826), without a resolution event. */
	CHECK_EQ_U64(droce_net_neigh_lookup(n, PEER_IP, mac), DROCE_NET_NEIGH_REACHABLE);
	CHECK_MEM(mac, peer_mac, 6);
	CHECK_EQ_U64(txl.nb_events, 0);
	CHECK_EQ_U64(stats(n).rx_arp_request, 1);
	CHECK_EQ_U64(stats(n).tx_arp_reply, 1);
	CHECK_EQ_U64(stats(n).neigh_learned, 1);

	/* The same request in a two-segment chain, unicast to our MAC. */
	arp_frame(f, our_mac, peer_mac, 1, peer_mac, PEER_IP, zero_mac, OUR_IP);
	CHECK_EQ_I64(droce_net_rx(n, mk_chain(f, sizeof(f), 17), 0), 0);
	check_frame(1, reply, sizeof(reply));
	/* An RFC 5227 probe (sender 0.0.0.0) is answered but teaches nothing. */
	arp_frame(f, bcast, other_mac, 1, other_mac, 0, zero_mac, OUR_IP);
	CHECK_EQ_I64(rx_bytes(n, f, sizeof(f), 0), 0);
	CHECK_EQ_U64(txl.nb, 3);
	CHECK_MEM(rte_pktmbuf_mtod(txl.m[2], uint8_t *), other_mac, 6);
	CHECK_EQ_U64(droce_net_neigh_lookup(n, 0, NULL), DROCE_NET_NEIGH_NONE);
	net_teardown(n);
}

DROCE_TEST(garp)
{
	struct droce_net *n = net_setup();

	CHECK_EQ_I64(droce_net_garp(n, 0), 0);
	CHECK_EQ_U64(txl.nb, 1);
	/* RFC 5227 2.4 announcement: a broadcast request, sender = target = our address. */
	check_arp_request(0, OUR_IP);
	CHECK_EQ_U64(stats(n).tx_garp, 1);
	/* It comes back on a shared segment: ours, not a conflict, nothing sent. */
	CHECK_EQ_I64(droce_net_rx(n, mk(rte_pktmbuf_mtod(txl.m[0], uint8_t *), MIN_FRAME), 0),
		     -ENOENT);
	CHECK_EQ_U64(stats(n).rx_arp_conflict, 0);
	CHECK_EQ_U64(txl.nb, 1);
	net_teardown(n);
}

/* A test packet for the peer, numbered at TAG_OFF, Ethernet destination unset. */
static struct rte_mbuf *
held_pkt(uint8_t tag)
{
	uint8_t f[MIN_FRAME] = { 0 };

	memcpy(f + 6, our_mac, 6);
	f[12] = 0x08;
	f[TAG_OFF] = tag;
	return mk(f, sizeof(f));
}

static void
check_held(uint32_t i, uint8_t tag)
{
	uint8_t f[MIN_FRAME] = { 0 };

	memcpy(f, peer_mac, 6);
	memcpy(f + 6, our_mac, 6);
	f[12] = 0x08;
	f[TAG_OFF] = tag;
	check_frame(i, f, sizeof(f));
}

DROCE_TEST(resolve_queues_until_reply)
{
	struct droce_net *n = net_setup();
	uint8_t f[ARP_LEN], mac[6];

	CHECK_EQ_I64(droce_net_resolve(n, PEER_IP, held_pkt(1), mac, 0), -EAGAIN);
	CHECK_EQ_U64(txl.nb, 1);
	check_arp_request(0, PEER_IP);
	CHECK_EQ_U64(droce_net_neigh_lookup(n, PEER_IP, NULL), DROCE_NET_NEIGH_INCOMPLETE);
	/* A second packet waits too, with no second request. */
	CHECK_EQ_I64(droce_net_resolve(n, PEER_IP, held_pkt(2), mac, 10), -EAGAIN);
	CHECK_EQ_I64(droce_net_resolve(n, PEER_IP, NULL, mac, 10), -EAGAIN);
	CHECK_EQ_U64(txl.nb, 1);
	CHECK_EQ_U64(stats(n).resolve_queued, 2);

	arp_frame(f, our_mac, peer_mac, 2, peer_mac, PEER_IP, our_mac, OUR_IP);
	CHECK_EQ_I64(rx_bytes(n, f, sizeof(f), 50), 0);
	CHECK_EQ_U64(txl.nb, 3);
	check_held(1, 1);
	check_held(2, 2);
	CHECK_EQ_U64(txl.nb_events, 1);
	CHECK_EQ_U64(txl.ev_ip[0], PEER_IP);
	CHECK_EQ_I64(txl.ev_status[0], 0);
	CHECK_MEM(txl.ev_mac[0], peer_mac, 6);
	CHECK_EQ_U64(stats(n).tx_queued, 2);
	CHECK_EQ_U64(stats(n).rx_arp_reply, 1);

	/* Resolved now: nothing held, nothing sent. */
	memset(mac, 0, sizeof(mac));
	CHECK_EQ_I64(droce_net_resolve(n, PEER_IP, NULL, mac, 60), 0);
	CHECK_MEM(mac, peer_mac, 6);
	/* No retry after the answer. */
	droce_net_timer(n, 60 + RETRY_MS * TRIES);
	CHECK_EQ_U64(txl.nb, 3);
	/* Our own address is the loopback; off-subnet has no route; short packets refused. */
	CHECK_EQ_I64(droce_net_resolve(n, OUR_IP, NULL, mac, 60), 0);
	CHECK_MEM(mac, our_mac, 6);
	CHECK_EQ_I64(droce_net_resolve(n, OFFNET_IP, NULL, mac, 60), -ENETUNREACH);
	{
		struct rte_mbuf *shortm = mk(f, ETH_HLEN - 1);

		CHECK_EQ_I64(droce_net_resolve(n, OTHER_IP, shortm, mac, 60), -EINVAL);
		rte_pktmbuf_free(shortm);
	}
	net_teardown(n);
}

DROCE_TEST(resolve_retries_then_fails)
{
	struct droce_net *n = net_setup();
	uint8_t mac[6];
	uint32_t i;

	CHECK_EQ_I64(droce_net_resolve(n, PEER_IP, held_pkt(1), mac, 1000), -EAGAIN);
	CHECK_EQ_I64(droce_net_resolve(n, PEER_IP, held_pkt(2), mac, 1000), -EAGAIN);
	CHECK_EQ_U64(txl.nb, 1);
	for (i = 1; i < TRIES; i++) {
		droce_net_timer(n, 1000 + i * RETRY_MS - 1);
		CHECK_EQ_U64(txl.nb, i);
		droce_net_timer(n, 1000 + i * RETRY_MS);
		CHECK_EQ_U64(txl.nb, i + 1);
		check_arp_request(i, PEER_IP);
	}
	droce_net_timer(n, 1000 + TRIES * RETRY_MS - 1);
	CHECK_EQ_U64(droce_net_neigh_lookup(n, PEER_IP, NULL), DROCE_NET_NEIGH_INCOMPLETE);
	CHECK_EQ_U64(txl.nb_events, 0);
	droce_net_timer(n, 1000 + TRIES * RETRY_MS);
	CHECK_EQ_U64(txl.nb, TRIES);
	CHECK_EQ_U64(droce_net_neigh_lookup(n, PEER_IP, NULL), DROCE_NET_NEIGH_FAILED);
	CHECK_EQ_U64(txl.nb_events, 1);
	CHECK_EQ_U64(txl.ev_ip[0], PEER_IP);
	CHECK_EQ_I64(txl.ev_status[0], -EHOSTUNREACH);
	CHECK_EQ_U64(stats(n).neigh_failed, 1);
	CHECK_EQ_U64(stats(n).queue_failed, 2);
	CHECK_EQ_U64(stats(n).tx_arp_request, TRIES);
	/* Held packets were freed: only the requests are out. */
	CHECK_EQ_U64(rte_mempool_avail_count(mp), NB_MBUFS - TRIES);

	/* A failed entry is forgotten after reachable_ms... */
	droce_net_timer(n, 1000 + TRIES * RETRY_MS + REACHABLE_MS);
	CHECK_EQ_U64(droce_net_neigh_lookup(n, PEER_IP, NULL), DROCE_NET_NEIGH_NONE);
	CHECK_EQ_U64(stats(n).neigh_expired, 1);
	/* ...and a new packet starts over. */
	CHECK_EQ_I64(droce_net_resolve(n, PEER_IP, NULL, mac, 5000), -EAGAIN);
	CHECK_EQ_U64(txl.nb, TRIES + 1);
	net_teardown(n);
}

DROCE_TEST(resolve_failed_entry_restarts)
{
	struct droce_net *n = net_setup();
	uint8_t mac[6];

	CHECK_EQ_I64(droce_net_resolve(n, PEER_IP, NULL, mac, 0), -EAGAIN);
	droce_net_timer(n, RETRY_MS);
	droce_net_timer(n, 2 * RETRY_MS);
	droce_net_timer(n, 3 * RETRY_MS);
	CHECK_EQ_U64(droce_net_neigh_lookup(n, PEER_IP, NULL), DROCE_NET_NEIGH_FAILED);
	CHECK_EQ_I64(droce_net_resolve(n, PEER_IP, held_pkt(7), mac, 3 * RETRY_MS + 1), -EAGAIN);
	CHECK_EQ_U64(droce_net_neigh_lookup(n, PEER_IP, NULL), DROCE_NET_NEIGH_INCOMPLETE);
	CHECK_EQ_U64(txl.nb, TRIES + 1);
	check_arp_request(TRIES, PEER_IP);
	/* A static entry added meanwhile completes the resolution. */
	CHECK_EQ_I64(droce_net_neigh_add_static(n, PEER_IP, peer_mac), 0);
	check_held(TRIES + 1, 7);
	CHECK_EQ_U64(txl.nb_events, 2);
	CHECK_EQ_I64(txl.ev_status[1], 0);
	net_teardown(n);
}

DROCE_TEST(queue_overflow)
{
	const uint32_t nb = DROCE_NET_ARP_QUEUE_LEN + 2;
	struct droce_net *n = net_setup();
	uint8_t f[ARP_LEN], mac[6];
	uint32_t i;

	for (i = 0; i < nb; i++)
		CHECK_EQ_I64(droce_net_resolve(n, PEER_IP, held_pkt(i), mac, 0), -EAGAIN);
	CHECK_EQ_U64(stats(n).queue_overflow, 2);
	CHECK_EQ_U64(rte_mempool_avail_count(mp), NB_MBUFS - 1 - DROCE_NET_ARP_QUEUE_LEN);
	arp_frame(f, our_mac, peer_mac, 2, peer_mac, PEER_IP, our_mac, OUR_IP);
	CHECK_EQ_I64(rx_bytes(n, f, sizeof(f), 1), 0);
	/* The oldest were dropped; the rest go out in order. */
	CHECK_EQ_U64(txl.nb, 1 + DROCE_NET_ARP_QUEUE_LEN);
	for (i = 0; i < DROCE_NET_ARP_QUEUE_LEN; i++)
		check_held(1 + i, nb - DROCE_NET_ARP_QUEUE_LEN + i);
	net_teardown(n);
}

DROCE_TEST(dynamic_entries_expire)
{
	struct droce_net *n = net_setup();
	uint8_t f[ARP_LEN], mac[6];

	arp_frame(f, bcast, peer_mac, 1, peer_mac, PEER_IP, zero_mac, OUR_IP);
	CHECK_EQ_I64(rx_bytes(n, f, sizeof(f), 100), 0);
	droce_net_timer(n, 100 + REACHABLE_MS - 1);
	CHECK_EQ_U64(droce_net_neigh_lookup(n, PEER_IP, NULL), DROCE_NET_NEIGH_REACHABLE);
	/* A newer ARP packet refreshes the entry and moves it to the new MAC. */
	arp_frame(f, our_mac, other_mac, 2, other_mac, PEER_IP, our_mac, OUR_IP);
	CHECK_EQ_I64(rx_bytes(n, f, sizeof(f), 500), 0);
	CHECK_EQ_U64(stats(n).neigh_updated, 1);
	droce_net_timer(n, 500 + REACHABLE_MS - 1);
	CHECK_EQ_U64(droce_net_neigh_lookup(n, PEER_IP, mac), DROCE_NET_NEIGH_REACHABLE);
	CHECK_MEM(mac, other_mac, 6);
	droce_net_timer(n, 500 + REACHABLE_MS);
	CHECK_EQ_U64(droce_net_neigh_lookup(n, PEER_IP, NULL), DROCE_NET_NEIGH_NONE);
	CHECK_EQ_U64(stats(n).neigh_expired, 1);
	CHECK_EQ_I64(droce_net_neigh_del(n, PEER_IP), -ENOENT);
	net_teardown(n);
}

DROCE_TEST(static_entries_never_expire)
{
	struct droce_net *n = net_setup();
	uint8_t f[ARP_LEN], mac[6];

	CHECK_EQ_I64(droce_net_neigh_add_static(n, PEER_IP, peer_mac), 0);
	CHECK_EQ_I64(droce_net_neigh_add_static(n, OTHER_IP, bcast), -EINVAL);
	droce_net_timer(n, UINT64_MAX);
	CHECK_EQ_U64(droce_net_neigh_lookup(n, PEER_IP, mac), DROCE_NET_NEIGH_STATIC);
	CHECK_MEM(mac, peer_mac, 6);
	/* ARP does not override configuration. */
	arp_frame(f, our_mac, other_mac, 2, other_mac, PEER_IP, our_mac, OUR_IP);
	CHECK_EQ_I64(rx_bytes(n, f, sizeof(f), 5), 0);
	CHECK_EQ_I64(droce_net_resolve(n, PEER_IP, NULL, mac, UINT64_MAX), 0);
	CHECK_MEM(mac, peer_mac, 6);
	CHECK_EQ_U64(txl.nb, 0);
	/* A static entry reaches beyond the subnet (no ARP needed). */
	CHECK_EQ_I64(droce_net_neigh_add_static(n, OFFNET_IP, other_mac), 0);
	CHECK_EQ_I64(droce_net_resolve(n, OFFNET_IP, NULL, mac, 0), 0);
	CHECK_MEM(mac, other_mac, 6);
	CHECK_EQ_I64(droce_net_neigh_del(n, PEER_IP), 0);
	CHECK_EQ_U64(droce_net_neigh_lookup(n, PEER_IP, NULL), DROCE_NET_NEIGH_NONE);
	CHECK_EQ_U64(droce_net_neigh_state_name(DROCE_NET_NEIGH_STATIC)[0], 's');
	net_teardown(n);
}

/* An echo request from the peer: IPv4 with ihl words of header, data_len bytes of data. */
static uint32_t
echo_request(uint8_t *f, uint32_t ip_dst, uint32_t ihl, uint32_t data_len)
{
	uint32_t ip_len = ihl * 4, tot = ip_len + ICMP_HLEN + data_len, i;
	uint8_t *ip = f + ETH_HLEN, *icmp = ip + ip_len;
	uint16_t s;

	memcpy(f, our_mac, 6);
	memcpy(f + 6, peer_mac, 6);
	f[12] = 0x08; f[13] = 0x00;
	memset(ip, 0, ip_len);
	ip[0] = 0x40 | ihl;
	ip[1] = 0x10;
	ip[2] = tot >> 8; ip[3] = tot;
	ip[4] = 0x12; ip[5] = 0x34;
	ip[6] = 0x40;		/* DF */
	ip[8] = 63;
	ip[9] = 1;
	put_ip(ip + 12, PEER_IP);
	put_ip(ip + 16, ip_dst);
	for (i = 20; i < ip_len; i++)
		ip[i] = 1;	/* NOP options */
	s = csum16(ip, ip_len);
	ip[10] = s >> 8; ip[11] = s;
	icmp[0] = 8; icmp[1] = 0; icmp[2] = 0; icmp[3] = 0;
	icmp[4] = 0xBE; icmp[5] = 0xEF; icmp[6] = 0x00; icmp[7] = 0x07;
	for (i = 0; i < data_len; i++)
		icmp[ICMP_HLEN + i] = (uint8_t)(i * 7 + 3);
	s = csum16(icmp, ICMP_HLEN + data_len);
	icmp[2] = s >> 8; icmp[3] = s;
	return ETH_HLEN + tot;
}

/* The reply this test expects for echo_request(f, ..., data_len) with IP ID id. */
static void
check_echo_reply(uint32_t i, const uint8_t *req, uint32_t ihl, uint32_t data_len, uint16_t id)
{
	uint32_t tot = IP_HLEN + ICMP_HLEN + data_len;
	uint32_t len = RTE_MAX(MIN_FRAME, ETH_HLEN + tot);
	uint8_t e[ETH_HLEN + IP_HLEN + ICMP_HLEN + 1500] = { 0 };
	uint8_t *ip = e + ETH_HLEN, *icmp = ip + IP_HLEN;
	const uint8_t *got;
	uint16_t s;

	memcpy(e, peer_mac, 6);
	memcpy(e + 6, our_mac, 6);
	e[12] = 0x08;
	ip[0] = 0x45;
	ip[1] = 0x10;
	ip[2] = tot >> 8; ip[3] = tot;
	ip[4] = id >> 8; ip[5] = id;
	ip[8] = 64;
	ip[9] = 1;
	put_ip(ip + 12, OUR_IP);
	put_ip(ip + 16, PEER_IP);
	s = csum16(ip, IP_HLEN);
	ip[10] = s >> 8; ip[11] = s;
	memcpy(icmp, req + ETH_HLEN + ihl * 4, ICMP_HLEN + data_len);
	icmp[0] = 0;
	icmp[2] = 0; icmp[3] = 0;
	s = csum16(icmp, ICMP_HLEN + data_len);
	icmp[2] = s >> 8; icmp[3] = s;
	check_frame(i, e, len);
	/* Both checksums verify over what was sent. */
	got = rte_pktmbuf_mtod(txl.m[i], const uint8_t *);
	CHECK_EQ_U64(csum16(got + ETH_HLEN, IP_HLEN), 0);
	CHECK_EQ_U64(csum16(got + ETH_HLEN + IP_HLEN, ICMP_HLEN + data_len), 0);
}

DROCE_TEST(icmp_echo_answered)
{
	static const uint32_t data_lens[] = { 0, 1, 37, 56, 1400 };
	struct droce_net *n = net_setup();
	uint8_t f[ETH_HLEN + 60 + ICMP_HLEN + 1400];
	uint32_t i, len;
	uint16_t id = 0;

	for (i = 0; i < RTE_DIM(data_lens); i++) {
		droce_test_ctx("data_len %u", data_lens[i]);
		len = echo_request(f, OUR_IP, 5, data_lens[i]);
		CHECK_EQ_I64(rx_bytes(n, f, len, 0), 0);
		check_echo_reply(txl.nb - 1, f, 5, data_lens[i], id++);
	}
	/* IP options in the request, and a chain cut inside the ICMP data. */
	len = echo_request(f, OUR_IP, 7, 100);
	CHECK_EQ_I64(droce_net_rx(n, mk_chain(f, len, ETH_HLEN + 28 + 13), 0), 0);
	check_echo_reply(txl.nb - 1, f, 7, 100, id++);
	/* Ethernet padding after the IP datagram is not echoed. */
	len = echo_request(f, OUR_IP, 5, 2);
	memset(f + len, 0xAA, MIN_FRAME - len);
	CHECK_EQ_I64(rx_bytes(n, f, MIN_FRAME, 0), 0);
	check_echo_reply(txl.nb - 1, f, 5, 2, id++);
	CHECK_EQ_U64(stats(n).rx_icmp_echo, RTE_DIM(data_lens) + 2);
	CHECK_EQ_U64(stats(n).tx_icmp_echo_reply, RTE_DIM(data_lens) + 2);
	net_teardown(n);
}

DROCE_TEST(foreign_frames_ignored)
{
	struct droce_net *n = net_setup();
	uint8_t f[ETH_HLEN + IP_HLEN + ICMP_HLEN + 64];
	uint32_t len;

	/* ARP for another address: nothing sent, no entry created. */
	arp_frame(f, bcast, peer_mac, 1, peer_mac, PEER_IP, zero_mac, OTHER_IP);
	CHECK_EQ_I64(rx_bytes(n, f, ARP_LEN, 0), -ENOENT);
	arp_frame(f, bcast, peer_mac, 2, peer_mac, PEER_IP, other_mac, OTHER_IP);
	CHECK_EQ_I64(rx_bytes(n, f, ARP_LEN, 0), -ENOENT);
	CHECK_EQ_U64(droce_net_neigh_lookup(n, PEER_IP, NULL), DROCE_NET_NEIGH_NONE);
	CHECK_EQ_U64(stats(n).rx_arp_not_ours, 2);
	/* ARP for us, but unicast to another station (promiscuous port). */
	arp_frame(f, other_mac, peer_mac, 1, peer_mac, PEER_IP, zero_mac, OUR_IP);
	CHECK_EQ_I64(rx_bytes(n, f, ARP_LEN, 0), -ENOENT);
	/* ARP for another protocol (ptype IPv6). */
	arp_frame(f, bcast, peer_mac, 1, peer_mac, PEER_IP, zero_mac, OUR_IP);
	f[16] = 0x86; f[17] = 0xDD;
	CHECK_EQ_I64(rx_bytes(n, f, ARP_LEN, 0), -ENOENT);
	/* Echo to another address; UDP to us; an echo reply; IPv6; VLAN-tagged. */
	len = echo_request(f, OTHER_IP, 5, 8);
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -ENOENT);
	len = echo_request(f, OUR_IP, 5, 8);
	f[ETH_HLEN + 9] = 17;
	f[ETH_HLEN + 10] = 0; f[ETH_HLEN + 11] = 0;
	{
		uint16_t s = csum16(f + ETH_HLEN, IP_HLEN);

		f[ETH_HLEN + 10] = s >> 8; f[ETH_HLEN + 11] = s;
	}
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -ENOENT);
	len = echo_request(f, OUR_IP, 5, 8);
	f[ETH_HLEN + IP_HLEN] = 0;	/* echo reply, checksum now off by 8 << 8 */
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -ENOENT);
	len = echo_request(f, OUR_IP, 5, 8);
	f[12] = 0x86; f[13] = 0xDD;
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -ENOENT);
	f[12] = 0x81; f[13] = 0x00;
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -ENOENT);
	/* A fragment of an echo request (MF set): no reassembly. */
	len = echo_request(f, OUR_IP, 5, 8);
	f[ETH_HLEN + 6] = 0x20;
	f[ETH_HLEN + 10] = 0; f[ETH_HLEN + 11] = 0;
	{
		uint16_t s = csum16(f + ETH_HLEN, IP_HLEN);

		f[ETH_HLEN + 10] = s >> 8; f[ETH_HLEN + 11] = s;
	}
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -ENOENT);
	CHECK_EQ_U64(txl.nb, 0);
	CHECK_EQ_U64(stats(n).rx_foreign, 10);
	CHECK_EQ_U64(stats(n).rx_malformed, 0);
	net_teardown(n);
}

DROCE_TEST(malformed_frames_rejected)
{
	struct droce_net *n = net_setup();
	uint8_t f[ETH_HLEN + IP_HLEN + ICMP_HLEN + 64];
	uint32_t len, i, nb_bad = 0;

	/* Every truncation of an ARP request and of an echo request. */
	arp_frame(f, bcast, peer_mac, 1, peer_mac, PEER_IP, zero_mac, OUR_IP);
	for (i = 0; i < ARP_LEN; i++) {
		droce_test_ctx("arp len %u", i);
		CHECK_EQ_I64(rx_bytes(n, f, i, 0), -EBADMSG);
		nb_bad++;
	}
	len = echo_request(f, OUR_IP, 5, 16);
	for (i = ETH_HLEN; i < len; i++) {
		droce_test_ctx("echo len %u", i);
		CHECK_EQ_I64(rx_bytes(n, f, i, 0), -EBADMSG);
		nb_bad++;
	}
	droce_test_ctx("fields");
	/* ARP: wrong hardware length, multicast sender, unknown opcode. */
	arp_frame(f, bcast, peer_mac, 1, peer_mac, PEER_IP, zero_mac, OUR_IP);
	f[18] = 8;
	CHECK_EQ_I64(rx_bytes(n, f, ARP_LEN, 0), -EBADMSG);
	arp_frame(f, bcast, peer_mac, 1, bcast, PEER_IP, zero_mac, OUR_IP);
	CHECK_EQ_I64(rx_bytes(n, f, ARP_LEN, 0), -EBADMSG);
	arp_frame(f, bcast, peer_mac, 3, peer_mac, PEER_IP, zero_mac, OUR_IP);
	CHECK_EQ_I64(rx_bytes(n, f, ARP_LEN, 0), -EBADMSG);
	nb_bad += 3;
	/* IPv4: bad header checksum, bad ICMP checksum, ihl < 5, version 6, total < ihl. */
	len = echo_request(f, OUR_IP, 5, 16);
	f[ETH_HLEN + 11] ^= 1;
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -EBADMSG);
	len = echo_request(f, OUR_IP, 5, 16);
	f[len - 1] ^= 1;
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -EBADMSG);
	len = echo_request(f, OUR_IP, 5, 16);
	f[ETH_HLEN] = 0x44;
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -EBADMSG);
	f[ETH_HLEN] = 0x65;
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -EBADMSG);
	len = echo_request(f, OUR_IP, 5, 16);
	f[ETH_HLEN + 2] = 0; f[ETH_HLEN + 3] = 4;
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -EBADMSG);
	nb_bad += 5;
	CHECK_EQ_U64(txl.nb, 0);
	CHECK_EQ_U64(stats(n).rx_malformed, nb_bad);
	CHECK_EQ_U64(droce_net_neigh_lookup(n, PEER_IP, NULL), DROCE_NET_NEIGH_NONE);
	net_teardown(n);
}

DROCE_TEST(arp_conflict_and_merge)
{
	struct droce_net *n = net_setup();
	uint8_t f[ARP_LEN], mac[6];

	/* Someone else claims our address: counted, never answered, never learned. */
	arp_frame(f, bcast, other_mac, 1, other_mac, OUR_IP, zero_mac, OUR_IP);
	CHECK_EQ_I64(rx_bytes(n, f, ARP_LEN, 0), -ENOENT);
	CHECK_EQ_U64(stats(n).rx_arp_conflict, 1);
	/* RFC 826 merge: an entry we hold is refreshed by ARP for others, one we lack is not. */
	CHECK_EQ_I64(droce_net_resolve(n, PEER_IP, held_pkt(9), mac, 0), -EAGAIN);
	arp_frame(f, bcast, peer_mac, 1, peer_mac, PEER_IP, zero_mac, OTHER_IP);
	CHECK_EQ_I64(rx_bytes(n, f, ARP_LEN, 0), -ENOENT);
	CHECK_EQ_U64(droce_net_neigh_lookup(n, PEER_IP, mac), DROCE_NET_NEIGH_REACHABLE);
	CHECK_EQ_U64(txl.nb, 2);
	check_held(1, 9);
	net_teardown(n);
}

DROCE_TEST(table_full)
{
	struct droce_net *n = net_setup();
	struct droce_net_conf c;
	uint8_t mac[6];
	uint32_t i;

	conf_default(&c);
	droce_net_free(n);
	cur_net = NULL;
	/* A /16 so that more addresses than entries are on the subnet. */
	c.ipv4_prefix_len = 16;
	c.ops.resolved = NULL;
	txl.discard = true;
	n = droce_net_create(&c);
	CHECK(n != NULL);
	cur_net = n;
	for (i = 0; i < DROCE_NET_MAX_NEIGH; i++)
		CHECK_EQ_I64(droce_net_resolve(n, OUR_IP + 1 + i, NULL, mac, 0), -EAGAIN);
	/* Resolutions in progress are never evicted. */
	CHECK_EQ_I64(droce_net_resolve(n, OUR_IP + 1 + i, NULL, mac, 0), -ENOSPC);
	CHECK_EQ_U64(stats(n).neigh_full, 1);
	/* Once failed, they make room. */
	for (i = 1; i <= TRIES; i++)
		droce_net_timer(n, i * RETRY_MS);
	CHECK_EQ_I64(droce_net_resolve(n, OUR_IP + 1000, NULL, mac, TRIES * RETRY_MS), -EAGAIN);
	net_teardown(n);
}

/*
 * ---- Multicast membership: IGMPv2 (RFC 2236) and MLDv1 (RFC 2710) ----
 * Every frame lib/net sends is rebuilt here field by field (MACs written out, checksums
 * and the ICMPv6 pseudo-header computed here) and compared byte for byte. Query answers
 * come at random times: the timer is stepped and each report's time checked against the
 * query's Max Response Time.
 */

#define IGMP_LEN	8u
#define IGMP_IP_HLEN	24u	/* with the Router Alert option */
#define IGMP_TOT	(IGMP_IP_HLEN + IGMP_LEN)
#define IP6_HLEN	40u
#define HBH_LEN		8u
#define MLD_LEN		24u
#define MLD_FRAME	(ETH_HLEN + IP6_HLEN + HBH_LEN + MLD_LEN)	/* 86 */
#define REPORT_MS	1000u	/* DROCE_NET_MCAST_REPORT_MS_DEFAULT */
#define ROUTER_IP	0x0A6300FEu
#define NB_MANY		40u	/* groups per family in mcast_query_delays */

/* 239.129.2.3: bit 23 of the address is not in the MAC (RFC 1112 6.4). */
static const uint8_t g4[16] = { [10] = 0xFF, [11] = 0xFF, 239, 129, 2, 3 };
static const uint8_t g4_mac[6] = { 0x01, 0x00, 0x5E, 0x01, 0x02, 0x03 };
static const uint8_t g4b[16] = { [10] = 0xFF, [11] = 0xFF, 224, 0, 0, 251 };
static const uint8_t g4b_mac[6] = { 0x01, 0x00, 0x5E, 0x00, 0x00, 0xFB };
static const uint8_t all_hosts[16] = { [10] = 0xFF, [11] = 0xFF, 224, 0, 0, 1 };
static const uint8_t all_hosts_mac[6] = { 0x01, 0x00, 0x5E, 0x00, 0x00, 0x01 };
static const uint8_t all_routers_mac[6] = { 0x01, 0x00, 0x5E, 0x00, 0x00, 0x02 };
#define ALL_HOSTS_IP	0xE0000001u
#define ALL_ROUTERS_IP	0xE0000002u
/* ff05::1:3 (site scope) */
static const uint8_t g6[16] = { 0xFF, 0x05, [13] = 0x01, [15] = 0x03 };
static const uint8_t g6_mac[6] = { 0x33, 0x33, 0x00, 0x01, 0x00, 0x03 };
/* ff02::1:ff12:3456 (a solicited-node address: link scope is reported) */
static const uint8_t g6b[16] = {
	0xFF, 0x02, [11] = 0x01, [12] = 0xFF, [13] = 0x12, [14] = 0x34, [15] = 0x56
};
static const uint8_t g6b_mac[6] = { 0x33, 0x33, 0xFF, 0x12, 0x34, 0x56 };
static const uint8_t all_nodes[16] = { 0xFF, 0x02, [15] = 0x01 };
static const uint8_t all_nodes_mac[6] = { 0x33, 0x33, 0x00, 0x00, 0x00, 0x01 };
static const uint8_t all_routers6[16] = { 0xFF, 0x02, [15] = 0x02 };
static const uint8_t all_routers6_mac[6] = { 0x33, 0x33, 0x00, 0x00, 0x00, 0x02 };
/* GID 1 of our_mac: fe80::5054:ff:fe12:3456 */
static const uint8_t our_ll[16] = {
	0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0x00, 0xFF, 0xFE, 0x12, 0x34, 0x56
};
static const uint8_t router_ll[16] = { 0xFE, 0x80, [15] = 0x01 };
static const uint8_t router_mac[6] = { 0x52, 0x54, 0x00, 0x0F, 0x0F, 0x0F };
static const uint8_t zero_addr[16];

static uint32_t
get_ip(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

/* The frame IGMP message lib/net must send: 60 bytes, padding zero. */
static void
igmp_expect(uint8_t *e, uint8_t type, const uint8_t *eth_dst, uint32_t ip_dst,
	    uint32_t ip_src, const uint8_t *group_gid, uint16_t id)
{
	uint8_t *ip = e + ETH_HLEN, *igmp = ip + IGMP_IP_HLEN;

	memset(e, 0, MIN_FRAME);
	memcpy(e, eth_dst, 6);
	memcpy(e + 6, our_mac, 6);
	e[12] = 0x08; e[13] = 0x00;
	ip[0] = 0x46;			/* IPv4, 6 words: one option */
	ip[1] = 0xC0;			/* Internetwork Control */
	put16(ip + 2, IGMP_TOT);
	put16(ip + 4, id);
	ip[6] = 0x40;			/* DF */
	ip[8] = 1;			/* TTL 1 */
	ip[9] = 2;			/* IGMP */
	put_ip(ip + 12, ip_src);
	put_ip(ip + 16, ip_dst);
	ip[20] = 0x94; ip[21] = 0x04;	/* Router Alert, value 0 */
	put16(ip + 10, csum16(ip, IGMP_IP_HLEN));
	igmp[0] = type;
	memcpy(igmp + 4, group_gid + 12, 4);
	put16(igmp + 2, csum16(igmp, IGMP_LEN));
}

static void
check_igmp(uint32_t i, uint8_t type, const uint8_t *eth_dst, uint32_t ip_dst,
	   const uint8_t *group_gid, uint16_t id)
{
	uint8_t e[MIN_FRAME];
	const uint8_t *got;

	igmp_expect(e, type, eth_dst, ip_dst, OUR_IP, group_gid, id);
	check_frame(i, e, sizeof(e));
	got = rte_pktmbuf_mtod(txl.m[i], const uint8_t *);
	CHECK_EQ_U64(csum16(got + ETH_HLEN, IGMP_IP_HLEN), 0);
	CHECK_EQ_U64(csum16(got + ETH_HLEN + IGMP_IP_HLEN, IGMP_LEN), 0);
}

/* The ICMPv6 checksum of an MLD message of len bytes (RFC 8200 8.1 pseudo-header). */
static uint16_t
icmp6_csum(const uint8_t *src, const uint8_t *dst, const uint8_t *msg, uint32_t len)
{
	uint8_t b[IP6_HLEN + 64] = { 0 };

	CHECK(len <= 64);
	memcpy(b, src, 16);
	memcpy(b + 16, dst, 16);
	b[34] = len >> 8; b[35] = len;
	b[39] = 58;
	memcpy(b + IP6_HLEN, msg, len);
	return csum16(b, IP6_HLEN + len);
}

static void
mld_expect(uint8_t *e, uint8_t type, const uint8_t *eth_dst, const uint8_t *dst,
	   const uint8_t *group)
{
	uint8_t *ip = e + ETH_HLEN, *hbh = ip + IP6_HLEN, *mld = hbh + HBH_LEN;
	static const uint8_t hbh_ra[HBH_LEN] = { 58, 0, 0x05, 0x02, 0x00, 0x00, 0x01, 0x00 };

	memset(e, 0, MLD_FRAME);
	memcpy(e, eth_dst, 6);
	memcpy(e + 6, our_mac, 6);
	e[12] = 0x86; e[13] = 0xDD;
	ip[0] = 0x60;
	put16(ip + 4, HBH_LEN + MLD_LEN);
	ip[6] = 0;			/* Hop-by-Hop */
	ip[7] = 1;			/* hop limit */
	memcpy(ip + 8, our_ll, 16);
	memcpy(ip + 24, dst, 16);
	memcpy(hbh, hbh_ra, HBH_LEN);
	mld[0] = type;
	memcpy(mld + 8, group, 16);
	put16(mld + 2, icmp6_csum(our_ll, dst, mld, MLD_LEN));
}

static void
check_mld(uint32_t i, uint8_t type, const uint8_t *eth_dst, const uint8_t *dst,
	  const uint8_t *group)
{
	uint8_t e[MLD_FRAME];

	mld_expect(e, type, eth_dst, dst, group);
	check_frame(i, e, sizeof(e));
	CHECK_EQ_U64(icmp6_csum(our_ll, dst, rte_pktmbuf_mtod(txl.m[i], const uint8_t *) +
				ETH_HLEN + IP6_HLEN + HBH_LEN, MLD_LEN), 0);
}

/*
 * An IGMP message from the router: TTL 1, Router Alert, igmp_len bytes (8, or 12 for an
 * IGMPv3 query without sources). Returns the frame length.
 */
static uint32_t
igmp_in(uint8_t *f, const uint8_t *eth_dst, const uint8_t *eth_src, uint32_t ip_dst,
	uint8_t type, uint8_t code, uint32_t group, uint32_t igmp_len)
{
	uint8_t *ip = f + ETH_HLEN, *igmp = ip + IGMP_IP_HLEN;

	memset(f, 0, ETH_HLEN + IGMP_IP_HLEN + igmp_len);
	memcpy(f, eth_dst, 6);
	memcpy(f + 6, eth_src, 6);
	f[12] = 0x08;
	ip[0] = 0x46;
	ip[1] = 0xC0;
	put16(ip + 2, IGMP_IP_HLEN + igmp_len);
	ip[8] = 1;
	ip[9] = 2;
	put_ip(ip + 12, ROUTER_IP);
	put_ip(ip + 16, ip_dst);
	ip[20] = 0x94; ip[21] = 0x04;
	put16(ip + 10, csum16(ip, IGMP_IP_HLEN));
	igmp[0] = type;
	igmp[1] = code;
	put_ip(igmp + 4, group);
	put16(igmp + 2, csum16(igmp, igmp_len));
	return ETH_HLEN + IGMP_IP_HLEN + igmp_len;
}

/* An MLD message as a router sends it; the fields a test breaks are in the struct. */
struct mld_in {
	const uint8_t *eth_dst, *eth_src, *src, *dst, *addr;
	uint8_t type, hop_limit;
	uint16_t code;
	uint32_t len;		/* 24: MLDv1; 28: MLDv2 query without sources */
	uint8_t hbh[HBH_LEN];
};

static struct mld_in
mld_query(const uint8_t *dst, const uint8_t *dst_mac, const uint8_t *addr, uint16_t code)
{
	struct mld_in q = {
		.eth_dst = dst_mac, .eth_src = router_mac, .src = router_ll, .dst = dst,
		.addr = addr, .type = 130, .hop_limit = 1, .code = code, .len = MLD_LEN,
		.hbh = { 58, 0, 0x05, 0x02, 0x00, 0x00, 0x01, 0x00 },
	};

	return q;
}

static uint32_t
mld_in_frame(uint8_t *f, const struct mld_in *q)
{
	uint8_t *ip = f + ETH_HLEN, *hbh = ip + IP6_HLEN, *mld = hbh + HBH_LEN;

	memset(f, 0, ETH_HLEN + IP6_HLEN + HBH_LEN + q->len);
	memcpy(f, q->eth_dst, 6);
	memcpy(f + 6, q->eth_src, 6);
	f[12] = 0x86; f[13] = 0xDD;
	ip[0] = 0x60;
	put16(ip + 4, HBH_LEN + q->len);
	ip[6] = 0;
	ip[7] = q->hop_limit;
	memcpy(ip + 8, q->src, 16);
	memcpy(ip + 24, q->dst, 16);
	memcpy(hbh, q->hbh, HBH_LEN);
	mld[0] = q->type;
	put16(mld + 4, q->code);
	memcpy(mld + 8, q->addr, 16);
	put16(mld + 2, icmp6_csum(q->src, q->dst, mld, q->len));
	return ETH_HLEN + IP6_HLEN + HBH_LEN + q->len;
}

/* Steps the timer over [from, to], recording in when[] the time each new frame went out. */
static void
step_timer(struct droce_net *n, uint64_t from, uint64_t to, uint64_t step, uint64_t *when)
{
	uint64_t t;
	uint32_t i, before;

	for (t = from; t <= to; t += step) {
		before = txl.nb;
		droce_net_timer(n, t);
		for (i = before; i < txl.nb; i++)
			when[i] = t;
	}
}

static const uint8_t *
tx_bytes(uint32_t i)
{
	CHECK(i < txl.nb);
	return rte_pktmbuf_mtod(txl.m[i], const uint8_t *);
}

/* The IP ID lib/net gave frame i (IPv4). */
static uint16_t
tx_ip_id(uint32_t i)
{
	const uint8_t *f = tx_bytes(i);

	return (uint16_t)(f[ETH_HLEN + 4] << 8 | f[ETH_HLEN + 5]);
}

DROCE_TEST(mcast_mac)
{
	static const uint8_t g6_any[16] = {
		0xFF, 0x3E, 0, 0x40, 0x20, 0x01, 0x0D, 0xB8, 0, 0, 0, 0, 0x81, 0x82, 0x83, 0x84
	};
	static const uint8_t g6_any_mac[6] = { 0x33, 0x33, 0x81, 0x82, 0x83, 0x84 };
	static const uint8_t last4[16] = { [10] = 0xFF, [11] = 0xFF, 239, 255, 255, 255 };
	static const uint8_t last4_mac[6] = { 0x01, 0x00, 0x5E, 0x7F, 0xFF, 0xFF };
	static const uint8_t not_mcast[][16] = {
		{ [10] = 0xFF, [11] = 0xFF, 10, 99, 0, 1 },		/* unicast IPv4 */
		{ [10] = 0xFF, [11] = 0xFF, 240, 0, 0, 1 },		/* 240/4, not 224/4 */
		{ [10] = 0xFF, [11] = 0xFF, 223, 255, 255, 255 },
		{ [10] = 0xFF, [11] = 0xFE, 224, 0, 0, 1 },		/* not IPv4-mapped */
		{ [12] = 224, [15] = 1 },				/* IPv4-compatible */
		{ 0xFE, 0x80, [15] = 1 },
		{ 0x20, 0x01, 0x0D, 0xB8, [15] = 1 },
		{ 0 },
	};
	uint8_t mac[6];
	uint32_t i;

	CHECK_EQ_I64(droce_net_mcast_mac(g4, mac), 0);
	CHECK_MEM(mac, g4_mac, 6);
	CHECK_EQ_I64(droce_net_mcast_mac(all_hosts, mac), 0);
	CHECK_MEM(mac, all_hosts_mac, 6);
	CHECK_EQ_I64(droce_net_mcast_mac(last4, mac), 0);
	CHECK_MEM(mac, last4_mac, 6);
	CHECK_EQ_I64(droce_net_mcast_mac(g6, mac), 0);
	CHECK_MEM(mac, g6_mac, 6);
	CHECK_EQ_I64(droce_net_mcast_mac(g6_any, mac), 0);
	CHECK_MEM(mac, g6_any_mac, 6);
	for (i = 0; i < RTE_DIM(not_mcast); i++) {
		droce_test_ctx("not multicast %u", i);
		memset(mac, 0xAA, sizeof(mac));
		CHECK_EQ_I64(droce_net_mcast_mac(not_mcast[i], mac), -EINVAL);
		CHECK_EQ_U64(mac[0], 0xAA);
	}
}

DROCE_TEST(mcast_join_leave_ipv4)
{
	struct droce_net *n = net_setup();
	uint8_t gid[16];

	CHECK_EQ_I64(droce_net_mcast_join(n, g4, 100), 0);
	/* An unsolicited report to the group (RFC 2236 3), at once. */
	CHECK_EQ_U64(txl.nb, 1);
	check_igmp(0, 0x16, g4_mac, 0xEF810203u, g4, 0);
	CHECK_EQ_U64(stats(n).tx_igmp_report, 1);
	CHECK_EQ_I64(droce_net_mcast_join(n, g4, 100), -EEXIST);
	CHECK_EQ_U64(droce_net_mcast_count(n), 1);
	CHECK_EQ_I64(droce_net_mcast_query(n, 0, gid), 0);
	CHECK_MEM(gid, g4, 16);
	CHECK_EQ_I64(droce_net_mcast_query(n, 1, gid), -EINVAL);
	/* Repeated once, REPORT_MS later, and only once. */
	droce_net_timer(n, 100 + REPORT_MS - 1);
	CHECK_EQ_U64(txl.nb, 1);
	droce_net_timer(n, 100 + REPORT_MS);
	CHECK_EQ_U64(txl.nb, 2);
	check_igmp(1, 0x16, g4_mac, 0xEF810203u, g4, 1);
	droce_net_timer(n, 100 + 100 * REPORT_MS);
	CHECK_EQ_U64(txl.nb, 2);
	/* Leave Group to all routers, for the group. */
	CHECK_EQ_I64(droce_net_mcast_leave(n, g4, 200000), 0);
	CHECK_EQ_U64(txl.nb, 3);
	check_igmp(2, 0x17, all_routers_mac, ALL_ROUTERS_IP, g4, 2);
	CHECK_EQ_I64(droce_net_mcast_leave(n, g4, 200000), -ENOENT);
	CHECK_EQ_U64(droce_net_mcast_count(n), 0);
	CHECK_EQ_U64(stats(n).tx_igmp_report, 2);
	CHECK_EQ_U64(stats(n).tx_igmp_leave, 1);
	CHECK_EQ_U64(stats(n).tx_mld_report, 0);

	/* A leave before the repeat cancels it; a join again starts over. */
	CHECK_EQ_I64(droce_net_mcast_join(n, g4b, 0), 0);
	CHECK_EQ_I64(droce_net_mcast_leave(n, g4b, 10), 0);
	droce_net_timer(n, 10 * REPORT_MS);
	CHECK_EQ_U64(txl.nb, 5);
	check_igmp(3, 0x16, g4b_mac, 0xE00000FBu, g4b, 3);
	check_igmp(4, 0x17, all_routers_mac, ALL_ROUTERS_IP, g4b, 4);
	net_teardown(n);
}

/*
 * The MACs a NIC's filter must take: the all-hosts and all-nodes groups' always, then each
 * joined group's, once even when two groups share one (RFC 1112 maps 32 groups to a MAC).
 */
DROCE_TEST(mcast_macs_for_the_nic)
{
	static const uint8_t all_hosts_mac[6] = { 0x01, 0x00, 0x5E, 0x00, 0x00, 0x01 };
	static const uint8_t all_nodes_mac[6] = { 0x33, 0x33, 0x00, 0x00, 0x00, 0x01 };
	/* 239.1.2.3: the same low 23 bits as g4's 239.129.2.3 */
	static const uint8_t g4_twin[16] = { [10] = 0xFF, [11] = 0xFF, 239, 1, 2, 3 };
	struct droce_net *n = net_setup();
	uint8_t macs[8][6];

	memset(macs, 0, sizeof(macs));
	CHECK_EQ_U64(droce_net_mcast_macs(n, macs, RTE_DIM(macs)), 2);
	CHECK_MEM(macs[0], all_hosts_mac, 6);
	CHECK_MEM(macs[1], all_nodes_mac, 6);
	CHECK_EQ_I64(droce_net_mcast_join(n, g4, 0), 0);
	CHECK_EQ_I64(droce_net_mcast_join(n, g6, 0), 0);
	CHECK_EQ_I64(droce_net_mcast_join(n, g4_twin, 0), 0);
	CHECK_EQ_U64(droce_net_mcast_macs(n, macs, RTE_DIM(macs)), 4);
	CHECK_MEM(macs[2], g4_mac, 6);
	CHECK_MEM(macs[3], g6_mac, 6);
	/* Too small an array: filled as far as it goes, the whole count returned. */
	memset(macs, 0, sizeof(macs));
	CHECK_EQ_U64(droce_net_mcast_macs(n, macs, 3), 4);
	CHECK_MEM(macs[2], g4_mac, 6);
	CHECK_EQ_U64(macs[3][0], 0);
	/* The twin keeps g4's MAC wanted after g4 is left. */
	CHECK_EQ_I64(droce_net_mcast_leave(n, g4, 1), 0);
	CHECK_EQ_U64(droce_net_mcast_macs(n, macs, RTE_DIM(macs)), 4);
	CHECK(memcmp(macs[2], g4_mac, 6) == 0 || memcmp(macs[3], g4_mac, 6) == 0);
	CHECK_EQ_I64(droce_net_mcast_leave(n, g4_twin, 2), 0);
	CHECK_EQ_I64(droce_net_mcast_leave(n, g6, 3), 0);
	CHECK_EQ_U64(droce_net_mcast_macs(n, macs, RTE_DIM(macs)), 2);
	net_teardown(n);
}

DROCE_TEST(mcast_join_leave_ipv6)
{
	struct droce_net *n = net_setup();

	CHECK_EQ_I64(droce_net_mcast_join(n, g6, 7), 0);
	CHECK_EQ_U64(txl.nb, 1);
	check_mld(0, 131, g6_mac, g6, g6);
	CHECK_EQ_I64(droce_net_mcast_join(n, g6, 7), -EEXIST);
	droce_net_timer(n, 7 + REPORT_MS - 1);
	CHECK_EQ_U64(txl.nb, 1);
	droce_net_timer(n, 7 + REPORT_MS);
	CHECK_EQ_U64(txl.nb, 2);
	check_mld(1, 131, g6_mac, g6, g6);
	droce_net_timer(n, 7 + 100 * REPORT_MS);
	CHECK_EQ_U64(txl.nb, 2);
	/* Done to all routers (RFC 2710 4). */
	CHECK_EQ_I64(droce_net_mcast_leave(n, g6, 200000), 0);
	CHECK_EQ_U64(txl.nb, 3);
	check_mld(2, 132, all_routers6_mac, all_routers6, g6);
	CHECK_EQ_I64(droce_net_mcast_leave(n, g6, 200000), -ENOENT);
	CHECK_EQ_U64(stats(n).tx_mld_report, 2);
	CHECK_EQ_U64(stats(n).tx_mld_done, 1);
	CHECK_EQ_U64(stats(n).tx_igmp_report, 0);
	net_teardown(n);
}

DROCE_TEST(mcast_special_groups)
{
	/* Never reported: all hosts, all nodes, IPv6 scopes 0 and 1 (RFC 2236 6, RFC 2710 5). */
	static const uint8_t silent[][16] = {
		{ [10] = 0xFF, [11] = 0xFF, 224, 0, 0, 1 },
		{ 0xFF, 0x02, [15] = 0x01 },
		{ 0xFF, 0x01, [15] = 0x05 },
		{ 0xFF, 0x10, [15] = 0x07 },
	};
	static const uint8_t bad[][16] = {
		{ [10] = 0xFF, [11] = 0xFF, 10, 99, 0, 1 },
		{ [10] = 0xFF, [11] = 0xFF, 240, 0, 0, 1 },
		{ 0xFE, 0x80, [15] = 1 },
		{ 0 },
	};
	struct droce_net *n = net_setup();
	struct droce_net_conf c;
	uint8_t gid[16];
	uint32_t i;

	for (i = 0; i < RTE_DIM(silent); i++) {
		droce_test_ctx("silent %u", i);
		CHECK_EQ_I64(droce_net_mcast_join(n, silent[i], 0), 0);
		CHECK_EQ_I64(droce_net_mcast_query(n, i, gid), 0);
		CHECK_MEM(gid, silent[i], 16);
	}
	for (i = 0; i < RTE_DIM(bad); i++) {
		droce_test_ctx("bad %u", i);
		CHECK_EQ_I64(droce_net_mcast_join(n, bad[i], 0), -EINVAL);
		CHECK_EQ_I64(droce_net_mcast_leave(n, bad[i], 0), -ENOENT);
	}
	droce_test_ctx("timer");
	CHECK_EQ_U64(droce_net_mcast_count(n), RTE_DIM(silent));
	droce_net_timer(n, 10 * REPORT_MS);
	for (i = 0; i < RTE_DIM(silent); i++)
		CHECK_EQ_I64(droce_net_mcast_leave(n, silent[i], 0), 0);
	CHECK_EQ_U64(txl.nb, 0);
	CHECK_EQ_U64(droce_net_mcast_count(n), 0);

	/* DROCE_NET_MAX_MCAST groups, then -ENOMEM; a leave makes room. */
	droce_test_ctx("full");
	txl.discard = true;
	memcpy(gid, g4, 16);
	for (i = 0; i < DROCE_NET_MAX_MCAST; i++) {
		gid[14] = i >> 8;
		gid[15] = i;
		CHECK_EQ_I64(droce_net_mcast_join(n, gid, 0), 0);
	}
	CHECK_EQ_I64(droce_net_mcast_join(n, g6, 0), -ENOMEM);
	CHECK_EQ_U64(stats(n).tx_igmp_report, DROCE_NET_MAX_MCAST);
	gid[14] = 0;
	gid[15] = 7;
	CHECK_EQ_I64(droce_net_mcast_leave(n, gid, 0), 0);
	CHECK_EQ_I64(droce_net_mcast_join(n, g6, 0), 0);
	CHECK_EQ_U64(droce_net_mcast_count(n), DROCE_NET_MAX_MCAST);
	txl.discard = false;

	/* A port without IPv4 reports from 0.0.0.0 (RFC 3376 4.2.13 allows it). */
	droce_test_ctx("no ipv4");
	droce_net_free(n);
	conf_default(&c);
	c.ipv4 = 0;
	n = droce_net_create(&c);
	CHECK(n != NULL);
	cur_net = n;
	CHECK_EQ_I64(droce_net_mcast_join(n, g4, 0), 0);
	{
		uint8_t e[MIN_FRAME];

		igmp_expect(e, 0x16, g4_mac, 0xEF810203u, 0, g4, 0);
		check_frame(0, e, sizeof(e));
	}
	net_teardown(n);
}

DROCE_TEST(mcast_join_without_mbuf)
{
	struct rte_mbuf *all[NB_MBUFS];
	struct droce_net *n = net_setup();

	CHECK_EQ_I64(rte_pktmbuf_alloc_bulk(mp, all, NB_MBUFS), 0);
	/* Joined all the same: the report is counted lost, the repeat goes out. */
	CHECK_EQ_I64(droce_net_mcast_join(n, g4, 0), 0);
	CHECK_EQ_I64(droce_net_mcast_join(n, g6, 0), 0);
	CHECK_EQ_U64(stats(n).tx_nombuf, 2);
	CHECK_EQ_U64(stats(n).tx_igmp_report, 0);
	CHECK_EQ_I64(droce_net_mcast_leave(n, g6, 0), 0);
	CHECK_EQ_U64(stats(n).tx_nombuf, 3);
	rte_pktmbuf_free_bulk(all, NB_MBUFS);
	CHECK_EQ_U64(txl.nb, 0);
	droce_net_timer(n, REPORT_MS);
	CHECK_EQ_U64(txl.nb, 1);
	check_igmp(0, 0x16, g4_mac, 0xEF810203u, g4, 0);
	net_teardown(n);
}

/* Joins g4, g4b, g6 and all hosts, and lets the repeats go out; nothing left in txl. */
static void
join_three(struct droce_net *n)
{
	CHECK_EQ_I64(droce_net_mcast_join(n, g4, 0), 0);
	CHECK_EQ_I64(droce_net_mcast_join(n, g4b, 0), 0);
	CHECK_EQ_I64(droce_net_mcast_join(n, g6, 0), 0);
	CHECK_EQ_I64(droce_net_mcast_join(n, all_hosts, 0), 0);
	droce_net_timer(n, REPORT_MS);
	CHECK_EQ_U64(txl.nb, 6);
	tx_clear();
}

/* Frame i is an IGMPv2 report: its group's GID, the frame checked in full. */
static const uint8_t *
igmp_report_group(uint32_t i)
{
	static const uint8_t *const groups[] = { g4, g4b };
	static const uint8_t *const macs[] = { g4_mac, g4b_mac };
	uint32_t k, ip = get_ip(tx_bytes(i) + ETH_HLEN + IGMP_IP_HLEN + 4);

	for (k = 0; k < RTE_DIM(groups); k++) {
		if (ip == get_ip(groups[k] + 12)) {
			check_igmp(i, 0x16, macs[k], ip, groups[k], tx_ip_id(i));
			return groups[k];
		}
	}
	droce_test_fail(__FILE__, __LINE__, "frame %u: report for %08x", i, ip);
}

DROCE_TEST(mcast_igmp_queries)
{
	struct droce_net *n = net_setup();
	uint8_t f[ETH_HLEN + IGMP_IP_HLEN + 16];
	uint64_t when[MAX_TX];
	const uint8_t *a, *b;
	uint32_t len;
	uint16_t id;

	join_three(n);
	id = 4;		/* the IGMP reports of join_three: 0 to 3 */
	/* A general query (to 224.0.0.1, group 0), Max Resp Time 5 s: g4 and g4b, not g6. */
	len = igmp_in(f, all_hosts_mac, router_mac, ALL_HOSTS_IP, 0x11, 50, 0, IGMP_LEN);
	CHECK_EQ_I64(rx_bytes(n, f, len, 10000), 0);
	CHECK_EQ_U64(stats(n).rx_igmp_query, 1);
	step_timer(n, 10000, 20000, 1, when);
	CHECK_EQ_U64(txl.nb, 2);
	a = igmp_report_group(0);
	b = igmp_report_group(1);
	CHECK(a != b);
	CHECK_EQ_U64(tx_ip_id(0), id);
	CHECK_EQ_U64(tx_ip_id(1), (uint16_t)(id + 1));
	CHECK(when[0] < 15000 && when[1] < 15000);
	tx_clear();

	/* A group-specific query (to the group) for g4b, 1 s: only g4b. */
	len = igmp_in(f, g4b_mac, router_mac, 0xE00000FBu, 0x11, 10, 0xE00000FBu, IGMP_LEN);
	CHECK_EQ_I64(rx_bytes(n, f, len, 30000), 0);
	step_timer(n, 30000, 40000, 1, when);
	CHECK_EQ_U64(txl.nb, 1);
	CHECK(igmp_report_group(0) == g4b);
	CHECK(when[0] < 31000);
	tx_clear();

	/*
	 * A general query of 10 s, then a group query of 100 ms for g4: g4's timer is reset
	 * only if it would fire later (RFC 2236 3); either way g4 goes out within 100 ms,
	 * and each group once.
	 */
	len = igmp_in(f, all_hosts_mac, router_mac, ALL_HOSTS_IP, 0x11, 100, 0, IGMP_LEN);
	CHECK_EQ_I64(rx_bytes(n, f, len, 50000), 0);
	len = igmp_in(f, g4_mac, router_mac, 0xEF810203u, 0x11, 1, 0xEF810203u, IGMP_LEN);
	CHECK_EQ_I64(rx_bytes(n, f, len, 50000), 0);
	step_timer(n, 50000, 70000, 1, when);
	CHECK_EQ_U64(txl.nb, 2);
	CHECK(igmp_report_group(0) != igmp_report_group(1));
	CHECK(when[0] < 60000 && when[1] < 60000);
	CHECK(when[igmp_report_group(0) == g4 ? 0 : 1] < 50100);
	tx_clear();

	/*
	 * Another host's report for g4b while ours waits: ours is not sent (RFC 2236 3).
	 * Our own report looped back is not another host's; IGMPv1 reports count too.
	 */
	len = igmp_in(f, all_hosts_mac, router_mac, ALL_HOSTS_IP, 0x11, 100, 0, IGMP_LEN);
	CHECK_EQ_I64(rx_bytes(n, f, len, 80000), 0);
	len = igmp_in(f, g4_mac, our_mac, 0xEF810203u, 0x16, 0, 0xEF810203u, IGMP_LEN);
	CHECK_EQ_I64(rx_bytes(n, f, len, 80000), -ENOENT);
	len = igmp_in(f, g4b_mac, peer_mac, 0xE00000FBu, 0x12, 0, 0xE00000FBu, IGMP_LEN);
	CHECK_EQ_I64(rx_bytes(n, f, len, 80000), 0);
	CHECK_EQ_U64(stats(n).rx_mcast_report, 1);
	step_timer(n, 80000, 100000, 1, when);
	CHECK_EQ_U64(txl.nb, 1);
	CHECK(igmp_report_group(0) == g4);
	tx_clear();

	/* A query unicast to our address and MAC; an IGMPv3 query (12 bytes) of 0.5 s. */
	len = igmp_in(f, our_mac, router_mac, OUR_IP, 0x11, 10, 0xEF810203u, IGMP_LEN);
	CHECK_EQ_I64(rx_bytes(n, f, len, 110000), 0);
	step_timer(n, 110000, 111000, 1, when);
	CHECK_EQ_U64(txl.nb, 1);
	CHECK(igmp_report_group(0) == g4);
	len = igmp_in(f, all_hosts_mac, router_mac, ALL_HOSTS_IP, 0x11, 5, 0, 12);
	CHECK_EQ_I64(droce_net_rx(n, mk_chain(f, len, ETH_HLEN + IGMP_IP_HLEN + 3), 120000), 0);
	step_timer(n, 120000, 121000, 1, when);
	CHECK_EQ_U64(txl.nb, 3);
	CHECK(igmp_report_group(1) != igmp_report_group(2));
	CHECK(when[1] < 120500 && when[2] < 120500);
	CHECK_EQ_U64(stats(n).rx_igmp_query, 7);
	CHECK_EQ_U64(stats(n).tx_mld_report, 2);	/* join_three's */
	CHECK_EQ_U64(stats(n).rx_malformed, 0);
	net_teardown(n);
}

DROCE_TEST(mcast_igmp_ignored)
{
	struct droce_net *n = net_setup();
	uint8_t f[ETH_HLEN + IGMP_IP_HLEN + 16];
	uint64_t foreign, bad;
	uint32_t len;

	join_three(n);
	foreign = stats(n).rx_foreign;
	/* To a group MAC we do not listen on; to all hosts behind another group's MAC. */
	len = igmp_in(f, all_routers_mac, router_mac, ALL_HOSTS_IP, 0x11, 10, 0, IGMP_LEN);
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -ENOENT);
	len = igmp_in(f, g4_mac, router_mac, ALL_HOSTS_IP, 0x11, 10, 0, IGMP_LEN);
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -ENOENT);
	/* 224.129.2.3 shares g4's MAC but is not joined. */
	len = igmp_in(f, g4_mac, router_mac, 0xE0810203u, 0x11, 10, 0xE0810203u, IGMP_LEN);
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -ENOENT);
	/* Unicast to another address; to our address behind the broadcast MAC. */
	len = igmp_in(f, our_mac, router_mac, OTHER_IP, 0x11, 10, 0, IGMP_LEN);
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -ENOENT);
	len = igmp_in(f, bcast, router_mac, OUR_IP, 0x11, 10, 0, IGMP_LEN);
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -ENOENT);
	/* A Leave Group (for routers) and an IGMPv3 report. */
	len = igmp_in(f, all_hosts_mac, router_mac, ALL_HOSTS_IP, 0x17, 0, 0xEF810203u, IGMP_LEN);
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -ENOENT);
	len = igmp_in(f, g4_mac, peer_mac, 0xEF810203u, 0x22, 0, 0, IGMP_LEN);
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -ENOENT);
	/* Only IGMP is taken from a group MAC: an echo request, ARP. */
	len = echo_request(f, OUR_IP, 5, 8);
	memcpy(f, all_hosts_mac, 6);
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -ENOENT);
	arp_frame(f, all_hosts_mac, peer_mac, 1, peer_mac, PEER_IP, zero_mac, OUR_IP);
	CHECK_EQ_I64(rx_bytes(n, f, ARP_LEN, 0), -ENOENT);
	CHECK_EQ_U64(stats(n).rx_foreign - foreign, 9);

	/* Malformed: bad IGMP checksum, a 10-byte query, a group query for a unicast group. */
	bad = stats(n).rx_malformed;
	len = igmp_in(f, all_hosts_mac, router_mac, ALL_HOSTS_IP, 0x11, 10, 0, IGMP_LEN);
	f[ETH_HLEN + IGMP_IP_HLEN + 3] ^= 1;
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -EBADMSG);
	len = igmp_in(f, all_hosts_mac, router_mac, ALL_HOSTS_IP, 0x11, 10, 0, 10);
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -EBADMSG);
	len = igmp_in(f, all_hosts_mac, router_mac, ALL_HOSTS_IP, 0x11, 10, OTHER_IP, IGMP_LEN);
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -EBADMSG);
	/* IGMP truncated inside its message. */
	len = igmp_in(f, all_hosts_mac, router_mac, ALL_HOSTS_IP, 0x11, 10, 0, IGMP_LEN);
	CHECK_EQ_I64(rx_bytes(n, f, len - 1, 0), -EBADMSG);
	CHECK_EQ_U64(stats(n).rx_malformed - bad, 4);
	CHECK_EQ_U64(stats(n).rx_igmp_query, 0);
	droce_net_timer(n, 100000);
	CHECK_EQ_U64(txl.nb, 0);
	net_teardown(n);
}

/* Frame i is an MLDv1 report for g6, checked in full. */
static void
check_mld_g6_report(uint32_t i)
{
	check_mld(i, 131, g6_mac, g6, g6);
}

DROCE_TEST(mcast_mld_queries)
{
	struct droce_net *n = net_setup();
	uint8_t f[ETH_HLEN + IP6_HLEN + HBH_LEN + 64];
	uint64_t when[MAX_TX];
	struct mld_in q;
	uint32_t len;

	join_three(n);
	/* A second IPv6 group, ff02::1:ff12:3456 (link scope), for the queries to tell apart. */
	CHECK_EQ_I64(droce_net_mcast_join(n, g6b, 0), 0);
	droce_net_timer(n, 2 * REPORT_MS);
	CHECK_EQ_U64(txl.nb, 2);
	check_mld(0, 131, g6b_mac, g6b, g6b);
	check_mld(1, 131, g6b_mac, g6b, g6b);
	tx_clear();
	/* A general query (to ff02::1, address ::) of 1 s: g6 and g6b, no IPv4 group. */
	q = mld_query(all_nodes, all_nodes_mac, zero_addr, 1000);
	len = mld_in_frame(f, &q);
	CHECK_EQ_I64(rx_bytes(n, f, len, 10000), 0);
	CHECK_EQ_U64(stats(n).rx_mld_query, 1);
	step_timer(n, 10000, 20000, 1, when);
	CHECK_EQ_U64(txl.nb, 2);
	if (tx_bytes(0)[ETH_HLEN + IP6_HLEN + HBH_LEN + 8 + 1] == 0x05) {
		check_mld_g6_report(0);
		check_mld(1, 131, g6b_mac, g6b, g6b);
	} else {
		check_mld(0, 131, g6b_mac, g6b, g6b);
		check_mld_g6_report(1);
	}
	CHECK(when[0] < 11000 && when[1] < 11000);
	tx_clear();

	/* A group-specific query (to the group) of 200 ms, in a chain cut at an odd offset. */
	q = mld_query(g6, g6_mac, g6, 200);
	len = mld_in_frame(f, &q);
	CHECK_EQ_I64(droce_net_rx(n, mk_chain(f, len, ETH_HLEN + IP6_HLEN + HBH_LEN + 5),
				  30000), 0);
	step_timer(n, 30000, 31000, 1, when);
	CHECK_EQ_U64(txl.nb, 1);
	check_mld_g6_report(0);
	CHECK(when[0] < 30200);
	tx_clear();

	/* An MLDv2 query (28 bytes) is answered as MLDv1 hosts do; Max Resp 0: at once. */
	q = mld_query(all_nodes, all_nodes_mac, zero_addr, 0);
	q.len = 28;
	len = mld_in_frame(f, &q);
	CHECK_EQ_I64(rx_bytes(n, f, len, 40000), 0);
	droce_net_timer(n, 40000);
	CHECK_EQ_U64(txl.nb, 2);
	tx_clear();

	/*
	 * Another listener's report for g6 stops ours (RFC 2710 4), not g6b's; our own
	 * report looped back stops nothing.
	 */
	q = mld_query(all_nodes, all_nodes_mac, zero_addr, 10000);
	len = mld_in_frame(f, &q);
	CHECK_EQ_I64(rx_bytes(n, f, len, 50000), 0);
	q = mld_query(g6, g6_mac, g6, 0);
	q.type = 131;
	q.eth_src = our_mac;
	len = mld_in_frame(f, &q);
	CHECK_EQ_I64(rx_bytes(n, f, len, 50000), -ENOENT);
	q.eth_src = peer_mac;
	len = mld_in_frame(f, &q);
	CHECK_EQ_I64(rx_bytes(n, f, len, 50000), 0);
	CHECK_EQ_U64(stats(n).rx_mcast_report, 1);
	step_timer(n, 50000, 70000, 1, when);
	CHECK_EQ_U64(txl.nb, 1);
	check_mld(0, 131, g6b_mac, g6b, g6b);
	CHECK_EQ_U64(stats(n).rx_mld_query, 4);
	CHECK_EQ_U64(stats(n).tx_igmp_report, 4);	/* join_three's */
	CHECK_EQ_U64(stats(n).tx_mld_report, 2 + 2 + 2 + 1 + 2 + 1);
	net_teardown(n);
}

DROCE_TEST(mcast_mld_ignored)
{
	static const uint8_t global_src[16] = { 0x20, 0x01, 0x0D, 0xB8, [15] = 0x09 };
	static const uint8_t other_group[16] = { 0xFF, 0x05, [13] = 0x01, [15] = 0x04 };
	static const uint8_t other_group_mac[6] = { 0x33, 0x33, 0x00, 0x01, 0x00, 0x04 };
	struct droce_net *n = net_setup();
	uint8_t f[ETH_HLEN + IP6_HLEN + HBH_LEN + 64];
	uint64_t foreign, bad;
	struct mld_in q;
	uint32_t len;

	join_three(n);
	foreign = stats(n).rx_foreign;
	/* A group we did not join (its own MAC); ff02::1 behind g6's MAC; our unicast MAC. */
	q = mld_query(other_group, other_group_mac, other_group, 10);
	len = mld_in_frame(f, &q);
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -ENOENT);
	q = mld_query(all_nodes, g6_mac, zero_addr, 10);
	len = mld_in_frame(f, &q);
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -ENOENT);
	q = mld_query(all_nodes, our_mac, zero_addr, 10);
	len = mld_in_frame(f, &q);
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -ENOENT);
	/* An unknown option whose type says "discard" (RFC 8200 4.2), in place of PadN. */
	q = mld_query(all_nodes, all_nodes_mac, zero_addr, 10);
	q.hbh[6] = 0x5E;
	len = mld_in_frame(f, &q);
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -ENOENT);
	/* Other ICMPv6 after the Hop-by-Hop header (a Done); ICMPv6 without one. */
	q = mld_query(all_nodes, all_nodes_mac, g6, 0);
	q.type = 132;
	len = mld_in_frame(f, &q);
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -ENOENT);
	q = mld_query(all_nodes, all_nodes_mac, zero_addr, 10);
	len = mld_in_frame(f, &q);
	f[ETH_HLEN + 6] = 58;
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -ENOENT);
	CHECK_EQ_U64(stats(n).rx_foreign - foreign, 6);

	/* RFC 3810 5.1.14 and RFC 2710 3: source not link-local, hop limit 2, no Router Alert. */
	bad = stats(n).rx_malformed;
	q = mld_query(all_nodes, all_nodes_mac, zero_addr, 10);
	q.src = global_src;
	len = mld_in_frame(f, &q);
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -EBADMSG);
	q = mld_query(all_nodes, all_nodes_mac, zero_addr, 10);
	q.hop_limit = 2;
	len = mld_in_frame(f, &q);
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -EBADMSG);
	q = mld_query(all_nodes, all_nodes_mac, zero_addr, 10);
	q.hbh[2] = 0x01;	/* PadN of 2 in place of the Router Alert */
	len = mld_in_frame(f, &q);
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -EBADMSG);
	/* Bad checksum; 26 bytes (neither MLDv1 nor v2); an option past the header. */
	q = mld_query(all_nodes, all_nodes_mac, zero_addr, 10);
	len = mld_in_frame(f, &q);
	f[ETH_HLEN + IP6_HLEN + HBH_LEN + 3] ^= 1;
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -EBADMSG);
	q.len = 26;
	len = mld_in_frame(f, &q);
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -EBADMSG);
	q = mld_query(all_nodes, all_nodes_mac, zero_addr, 10);
	q.hbh[7] = 1;
	len = mld_in_frame(f, &q);
	CHECK_EQ_I64(rx_bytes(n, f, len, 0), -EBADMSG);
	/* Truncated: the payload length says more than the frame holds. */
	q = mld_query(all_nodes, all_nodes_mac, zero_addr, 10);
	len = mld_in_frame(f, &q);
	CHECK_EQ_I64(rx_bytes(n, f, len - 1, 0), -EBADMSG);
	CHECK_EQ_U64(stats(n).rx_malformed - bad, 7);
	CHECK_EQ_U64(stats(n).rx_mld_query, 0);
	droce_net_timer(n, 100000);
	CHECK_EQ_U64(txl.nb, 0);
	net_teardown(n);
}

/*
 * Sends a query through rx_bytes at t and steps the timer to t + bound (in steps): every
 * group of the family answers once, none later than the bound; returns the latest time.
 */
static uint64_t
many_answer(struct droce_net *n, const uint8_t *f, uint32_t len, uint64_t t, uint64_t bound,
	    uint64_t step, bool ipv6)
{
	uint64_t when[MAX_TX], last = 0;
	bool seen[NB_MANY] = { false };
	uint32_t i, k;

	tx_clear();
	CHECK_EQ_I64(rx_bytes(n, f, len, t), 0);
	step_timer(n, t, t + bound + step, step, when);
	CHECK_EQ_U64(txl.nb, NB_MANY);
	for (i = 0; i < NB_MANY; i++) {
		const uint8_t *b = tx_bytes(i);

		droce_test_ctx("report %u at %" PRIu64, i, when[i]);
		/*
		 * Due by t + bound, it goes out at the first pass of the timer at or after
		 * that: the passes come every step from t, so the bound rounds up to a step.
		 */
		CHECK(when[i] <= t + RTE_ALIGN_CEIL(bound, step));
		last = RTE_MAX(last, when[i]);
		if (ipv6) {
			uint8_t g[16] = { 0xFF, 0x0E, [14] = 0x01 };
			uint8_t mac[6] = { 0x33, 0x33, 0x00, 0x00, 0x01 };

			k = b[ETH_HLEN + IP6_HLEN + HBH_LEN + 8 + 15];
			CHECK(k < NB_MANY && !seen[k]);
			g[15] = k;
			mac[5] = k;
			check_mld(i, 131, mac, g, g);
		} else {
			uint8_t g[16] = { [10] = 0xFF, [11] = 0xFF, 239, 1, 0 };
			uint8_t mac[6] = { 0x01, 0x00, 0x5E, 0x01, 0x00 };

			k = b[ETH_HLEN + IGMP_IP_HLEN + 7];
			CHECK(k < NB_MANY && !seen[k]);
			g[15] = k;
			mac[5] = k;
			check_igmp(i, 0x16, mac, get_ip(g + 12), g, tx_ip_id(i));
		}
		seen[k] = true;
	}
	droce_test_ctx("after %" PRIu64, t);
	return last;
}

DROCE_TEST(mcast_query_delays)
{
	struct droce_net *n = net_setup();
	uint8_t f[ETH_HLEN + IP6_HLEN + HBH_LEN + 64], g[16];
	struct mld_in q;
	uint32_t i, len;
	uint64_t last;

	/* NB_MANY groups per family: 239.1.0.k and ff0e::1:k. */
	txl.discard = true;
	for (i = 0; i < NB_MANY; i++) {
		uint8_t g6k[16] = { 0xFF, 0x0E, [14] = 0x01 };
		uint8_t g4k[16] = { [10] = 0xFF, [11] = 0xFF, 239, 1, 0 };

		g4k[15] = i;
		g6k[15] = i;
		CHECK_EQ_I64(droce_net_mcast_join(n, g4k, 0), 0);
		CHECK_EQ_I64(droce_net_mcast_join(n, g6k, 0), 0);
	}
	droce_net_timer(n, REPORT_MS);
	txl.discard = false;

	/*
	 * IGMPv2, 2 s: within 2 s, at random times: not all within the first 100 ms (the
	 * odds of that are 20^-40 when the times are uniform).
	 */
	len = igmp_in(f, all_hosts_mac, router_mac, ALL_HOSTS_IP, 0x11, 20, 0, IGMP_LEN);
	last = many_answer(n, f, len, 10000, 2000 - 1, 1, false);
	CHECK(last >= 10000 + 100);
	/* IGMPv1 (Max Resp Time 0): 10 s (RFC 2236 4). */
	len = igmp_in(f, all_hosts_mac, router_mac, ALL_HOSTS_IP, 0x11, 0, 0, IGMP_LEN);
	last = many_answer(n, f, len, 20000, 10000 - 1, 1, false);
	CHECK(last >= 20000 + 2000);
	/* IGMPv3 Max Resp Code 0xFF: (0xF | 0x10) << (7 + 3) tenths = 3174.4 s, not 25.5 s. */
	len = igmp_in(f, all_hosts_mac, router_mac, ALL_HOSTS_IP, 0x11, 0xFF, 0, 12);
	last = many_answer(n, f, len, 40000, 3174400, 100, false);
	CHECK(last > 40000 + 25500);
	/* MLDv1, 1 s. */
	q = mld_query(all_nodes, all_nodes_mac, zero_addr, 1000);
	len = mld_in_frame(f, &q);
	last = many_answer(n, f, len, 4000000, 1000 - 1, 1, true);
	CHECK(last >= 4000000 + 50);
	/* MLDv2 Maximum Response Code 0xFFFF: 0x1FFF << 10 ms = 8387.584 s, not 65.535 s. */
	q.len = 28;
	q.code = 0xFFFF;
	len = mld_in_frame(f, &q);
	last = many_answer(n, f, len, 5000000, 8387584, 1000, true);
	CHECK(last > 5000000 + 65535);

	/* Leaving sends one message per group, and no report is left pending. */
	tx_clear();
	txl.discard = true;
	for (i = 0; i < NB_MANY; i++) {
		CHECK_EQ_I64(droce_net_mcast_query(n, 0, g), 0);
		CHECK_EQ_I64(droce_net_mcast_leave(n, g, 0), 0);
	}
	CHECK_EQ_U64(stats(n).tx_igmp_leave + stats(n).tx_mld_done, NB_MANY);
	txl.discard = false;
	net_teardown(n);
}

DROCE_TEST(mcast_query_keeps_sooner_report)
{
	struct droce_net *n = net_setup();
	uint8_t f[ETH_HLEN + IGMP_IP_HLEN + 16];
	uint64_t when[MAX_TX];
	uint32_t len;

	CHECK_EQ_I64(droce_net_mcast_join(n, g4, 0), 0);
	CHECK_EQ_I64(droce_net_mcast_join(n, g4b, 0), 0);
	tx_clear();
	/*
	 * A query of 25.5 s while the join's repeat is due in 1 s: the repeat is the answer,
	 * at its time (RFC 2236 3: a running timer is reset only if the new one is sooner).
	 */
	len = igmp_in(f, all_hosts_mac, router_mac, ALL_HOSTS_IP, 0x11, 255, 0, IGMP_LEN);
	CHECK_EQ_I64(rx_bytes(n, f, len, 1), 0);
	step_timer(n, 1, 30000, 1, when);
	CHECK_EQ_U64(txl.nb, 2);
	CHECK(igmp_report_group(0) != igmp_report_group(1));
	CHECK_EQ_U64(when[0], REPORT_MS);
	CHECK_EQ_U64(when[1], REPORT_MS);
	net_teardown(n);
}
