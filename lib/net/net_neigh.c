/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * The neighbour table: address -> MAC, with the packets waiting for an answer. A flat
 * array searched linearly: it is the control thread's, a few hundred entries at most.
 * Entry states: INCOMPLETE (requests out) -> REACHABLE (answer) or FAILED (no answer to
 * arp_tries requests); REACHABLE and FAILED entries are removed after reachable_ms;
 * STATIC entries come from the configuration and only droce_net_neigh_del removes them.
 */

#include <errno.h>
#include <string.h>

#include "net_loc.h"

static const char *const neigh_state_names[] = {
	[DROCE_NET_NEIGH_NONE] = "none",
	[DROCE_NET_NEIGH_INCOMPLETE] = "incomplete",
	[DROCE_NET_NEIGH_REACHABLE] = "reachable",
	[DROCE_NET_NEIGH_STATIC] = "static",
	[DROCE_NET_NEIGH_FAILED] = "failed",
};

const char *
droce_net_neigh_state_name(enum droce_net_neigh_state s)
{
	if ((unsigned int)s >= RTE_DIM(neigh_state_names))
		return "?";
	return neigh_state_names[s];
}

uint32_t
net_neigh_ipv4(const struct net_neigh *e)
{
	uint32_t ip = 0;

	droce_net_gid_to_ipv4(e->addr, &ip);
	return ip;
}

struct net_neigh *
net_neigh_find(const struct droce_net *n, const uint8_t addr[16])
{
	uint32_t i;

	for (i = 0; i < DROCE_NET_MAX_NEIGH; i++) {
		const struct net_neigh *e = &n->neigh[i];

		if (e->state != DROCE_NET_NEIGH_NONE && memcmp(e->addr, addr, 16) == 0)
			return (struct net_neigh *)(uintptr_t)e;
	}
	return NULL;
}

struct net_neigh *
net_neigh_alloc(struct droce_net *n, const uint8_t addr[16])
{
	struct net_neigh *victim = NULL;
	uint32_t i;

	for (i = 0; i < DROCE_NET_MAX_NEIGH; i++) {
		struct net_neigh *e = &n->neigh[i];

		if (e->state == DROCE_NET_NEIGH_NONE) {
			victim = e;
			break;
		}
		/* Entries in use by a resolution or configured are never evicted. */
		if ((e->state == DROCE_NET_NEIGH_REACHABLE || e->state == DROCE_NET_NEIGH_FAILED) &&
		    (victim == NULL || e->deadline < victim->deadline))
			victim = e;
	}
	if (victim == NULL) {
		n->st.neigh_full++;
		return NULL;
	}
	memset(victim, 0, sizeof(*victim));
	memcpy(victim->addr, addr, 16);
	return victim;
}

void
net_neigh_hold(struct droce_net *n, struct net_neigh *e, struct rte_mbuf *m)
{
	if (e->q_len == DROCE_NET_ARP_QUEUE_LEN) {
		rte_pktmbuf_free(e->q[e->q_head]);
		e->q_head = (e->q_head + 1) % DROCE_NET_ARP_QUEUE_LEN;
		e->q_len--;
		n->st.queue_overflow++;
	}
	e->q[(e->q_head + e->q_len) % DROCE_NET_ARP_QUEUE_LEN] = m;
	e->q_len++;
	n->st.resolve_queued++;
}

void
net_neigh_drop_queue(struct droce_net *n, struct net_neigh *e, bool count)
{
	while (e->q_len > 0) {
		rte_pktmbuf_free(e->q[e->q_head]);
		e->q[e->q_head] = NULL;
		e->q_head = (e->q_head + 1) % DROCE_NET_ARP_QUEUE_LEN;
		e->q_len--;
		if (count)
			n->st.queue_failed++;
	}
	e->q_head = 0;
}

void
net_neigh_flush(struct droce_net *n, struct net_neigh *e)
{
	while (e->q_len > 0) {
		struct rte_mbuf *m = e->q[e->q_head];

		e->q[e->q_head] = NULL;
		e->q_head = (e->q_head + 1) % DROCE_NET_ARP_QUEUE_LEN;
		e->q_len--;
		/* droce_net_resolve checked that the first segment holds the header. */
		memcpy(rte_pktmbuf_mtod(m, struct droce_eth_hdr *)->dst, e->mac, 6);
		n->st.tx_queued++;
		net_tx(n, m);
	}
	e->q_head = 0;
}

/* INCOMPLETE -> REACHABLE: held packets go out, then the caller hears of it. */
static void
neigh_complete(struct droce_net *n, struct net_neigh *e, const uint8_t mac[6], uint64_t now)
{
	bool was_incomplete = e->state == DROCE_NET_NEIGH_INCOMPLETE;

	memcpy(e->mac, mac, 6);
	e->state = DROCE_NET_NEIGH_REACHABLE;
	e->deadline = now + n->reachable_ticks;
	e->tries = 0;
	net_neigh_flush(n, e);
	if (was_incomplete && n->conf.ops.resolved != NULL)
		n->conf.ops.resolved(n->conf.ops.arg, net_neigh_ipv4(e), e->mac, 0);
}

void
net_neigh_learn(struct droce_net *n, uint32_t ip, const uint8_t mac[6], bool create,
		uint64_t now)
{
	struct net_neigh *e;
	uint8_t addr[16];

	droce_gid_from_ipv4_host(addr, ip);
	e = net_neigh_find(n, addr);
	if (e == NULL) {
		if (!create)
			return;
		e = net_neigh_alloc(n, addr);
		if (e == NULL)
			return;
		n->st.neigh_learned++;
	} else if (e->state == DROCE_NET_NEIGH_STATIC) {
		return;
	} else if (e->state == DROCE_NET_NEIGH_REACHABLE) {
		if (memcmp(e->mac, mac, 6) != 0) {
			n->st.neigh_updated++;
			NET_LOG(INFO, "neighbour %u.%u.%u.%u moved to another MAC\n",
				addr[12], addr[13], addr[14], addr[15]);
		}
	} else {
		n->st.neigh_learned++;
	}
	neigh_complete(n, e, mac, now);
}

static int
neigh_set_static(struct droce_net *n, const uint8_t addr[16], const uint8_t mac[6])
{
	struct net_neigh *e;
	bool was_incomplete;

	if (!net_mac_is_unicast(mac))
		return -EINVAL;
	e = net_neigh_find(n, addr);
	if (e == NULL)
		e = net_neigh_alloc(n, addr);
	if (e == NULL)
		return -ENOSPC;
	was_incomplete = e->state == DROCE_NET_NEIGH_INCOMPLETE;
	memcpy(e->mac, mac, 6);
	e->state = DROCE_NET_NEIGH_STATIC;
	e->deadline = 0;
	e->tries = 0;
	net_neigh_flush(n, e);
	if (was_incomplete && n->conf.ops.resolved != NULL)
		n->conf.ops.resolved(n->conf.ops.arg, net_neigh_ipv4(e), e->mac, 0);
	return 0;
}

int
droce_net_neigh_add_static(struct droce_net *n, uint32_t ip, const uint8_t mac[6])
{
	uint8_t addr[16];

	droce_gid_from_ipv4_host(addr, ip);
	return neigh_set_static(n, addr, mac);
}

int
droce_net_neigh6_add_static(struct droce_net *n, const uint8_t addr[16], const uint8_t mac[6])
{
	uint32_t ip;

	if (droce_net_gid_to_ipv4(addr, &ip) == 0)
		return -EINVAL;
	return neigh_set_static(n, addr, mac);
}

int
droce_net_neigh_del(struct droce_net *n, uint32_t ip)
{
	struct net_neigh *e;
	uint8_t addr[16];

	droce_gid_from_ipv4_host(addr, ip);
	e = net_neigh_find(n, addr);
	if (e == NULL)
		return -ENOENT;
	net_neigh_drop_queue(n, e, true);
	memset(e, 0, sizeof(*e));
	return 0;
}

enum droce_net_neigh_state
droce_net_neigh_lookup(const struct droce_net *n, uint32_t ip, uint8_t mac[6])
{
	const struct net_neigh *e;
	uint8_t addr[16];

	droce_gid_from_ipv4_host(addr, ip);
	e = net_neigh_find(n, addr);
	if (e == NULL)
		return DROCE_NET_NEIGH_NONE;
	if (mac != NULL && (e->state == DROCE_NET_NEIGH_REACHABLE ||
			    e->state == DROCE_NET_NEIGH_STATIC))
		memcpy(mac, e->mac, 6);
	return e->state;
}

/* Starts (or restarts, after FAILED) a resolution: the first request goes out now. */
static void
neigh_start(struct droce_net *n, struct net_neigh *e, uint32_t ip, uint64_t now)
{
	e->state = DROCE_NET_NEIGH_INCOMPLETE;
	e->tries = 1;
	e->deadline = now + n->retry_ticks;
	net_arp_request(n, ip);
}

int
droce_net_resolve(struct droce_net *n, uint32_t ip, struct rte_mbuf *m, uint8_t mac[6],
		  uint64_t now)
{
	struct net_neigh *e;
	uint8_t addr[16];

	if (n->conf.ipv4 == 0)
		return -EINVAL;
	if (m != NULL && rte_pktmbuf_data_len(m) < sizeof(struct droce_eth_hdr))
		return -EINVAL;
	/* Our own address: loopback inside droced. */
	if (ip == n->conf.ipv4) {
		memcpy(mac, n->conf.mac, 6);
		return 0;
	}
	droce_gid_from_ipv4_host(addr, ip);
	e = net_neigh_find(n, addr);
	if (e != NULL && (e->state == DROCE_NET_NEIGH_REACHABLE ||
			  e->state == DROCE_NET_NEIGH_STATIC)) {
		memcpy(mac, e->mac, 6);
		return 0;
	}
	if (e == NULL) {
		/* No routing: ARP only reaches the port's own subnet. */
		if ((ip & n->ipv4_mask) != (n->conf.ipv4 & n->ipv4_mask))
			return -ENETUNREACH;
		e = net_neigh_alloc(n, addr);
		if (e == NULL)
			return -ENOSPC;
		neigh_start(n, e, ip, now);
	} else if (e->state == DROCE_NET_NEIGH_FAILED) {
		neigh_start(n, e, ip, now);
	}
	if (m != NULL)
		net_neigh_hold(n, e, m);
	return -EAGAIN;
}

static void
neigh_timer_one(struct droce_net *n, struct net_neigh *e, uint64_t now)
{
	uint32_t ip;

	if (e->state == DROCE_NET_NEIGH_NONE || e->state == DROCE_NET_NEIGH_STATIC ||
	    now < e->deadline)
		return;
	switch (e->state) {
	case DROCE_NET_NEIGH_INCOMPLETE:
		ip = net_neigh_ipv4(e);
		if (e->tries < n->conf.arp_tries) {
			e->tries++;
			e->deadline = now + n->retry_ticks;
			net_arp_request(n, ip);
			return;
		}
		e->state = DROCE_NET_NEIGH_FAILED;
		e->deadline = now + n->reachable_ticks;
		n->st.neigh_failed++;
		net_neigh_drop_queue(n, e, true);
		NET_LOG(INFO, "no ARP answer from %u.%u.%u.%u\n", e->addr[12], e->addr[13],
			e->addr[14], e->addr[15]);
		if (n->conf.ops.resolved != NULL)
			n->conf.ops.resolved(n->conf.ops.arg, ip, NULL, -EHOSTUNREACH);
		return;
	case DROCE_NET_NEIGH_REACHABLE:
	case DROCE_NET_NEIGH_FAILED:
		n->st.neigh_expired++;
		memset(e, 0, sizeof(*e));
		return;
	default:
		return;
	}
}

void
droce_net_timer(struct droce_net *n, uint64_t now)
{
	uint32_t i;

	for (i = 0; i < DROCE_NET_MAX_NEIGH; i++)
		neigh_timer_one(n, &n->neigh[i], now);
	net_mcast_timer(n, now);
}
