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
