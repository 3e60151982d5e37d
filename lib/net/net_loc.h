/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef NET_LOC_H
#define NET_LOC_H

/*
 * lib/net internals, grouped by the file that defines them. Everything belongs to the one
 * thread that calls the public API (droced's control thread): no locks, no atomics.
 */

#include <stdbool.h>

#include <rte_common.h>
#include <rte_log.h>

#include <droce_wire_hdr.h>

#include "droce_net.h"

extern int droce_net_logtype;
#define NET_LOG(level, ...) \
	rte_log(RTE_LOG_ ## level, droce_net_logtype, "droce.net: " __VA_ARGS__)

/* ---- Wire constants and headers not in lib/wire ---- */

#define NET_ETHERTYPE_ARP	0x0806
/* 802.3 minimum frame without FCS: short frames are padded, as not every PMD does it. */
#define NET_ETH_MIN_LEN		60
#define NET_MS_PER_S		1000u
#define NET_IPV4_BITS		32

/* RFC 826 over Ethernet and IPv4 (hardware type 1, RFC 5494 opcodes). */
#define NET_ARP_HTYPE_ETHER	1
#define NET_ARP_OP_REQUEST	1
#define NET_ARP_OP_REPLY	2
#define NET_ARP_LEN		28
#define NET_ARP_HLEN_ETHER	6	/* hardware address length */
#define NET_ARP_PLEN_IPV4	4	/* protocol address length */

struct net_arp_hdr {
	uint16_t htype;		/* big-endian */
	uint16_t ptype;		/* big-endian */
	uint8_t hlen;
	uint8_t plen;
	uint16_t op;		/* big-endian */
	uint8_t sha[6];
	uint8_t spa[4];
	uint8_t tha[6];
	uint8_t tpa[4];
} DROCE_PACKED;

/* RFC 792 */
#define NET_IPPROTO_ICMP	1
#define NET_ICMP_ECHO_REPLY	0
#define NET_ICMP_ECHO_REQUEST	8
#define NET_ICMP_HLEN		8
#define NET_IPV4_VERSION	4
#define NET_IPV4_IHL_MIN	5
#define NET_IPV4_TTL		64

struct net_icmp_hdr {
	uint8_t type;
	uint8_t code;
	uint16_t csum;
	uint16_t id;
	uint16_t seq;
} DROCE_PACKED;

/* ---- Objects ---- */

struct net_neigh {
	uint8_t addr[16];	/* IPv4-mapped for IPv4 */
	uint8_t mac[6];
	enum droce_net_neigh_state state;	/* NONE: free slot */
	uint64_t deadline;	/* INCOMPLETE: next request; REACHABLE, FAILED: expiry */
	uint32_t tries;		/* requests sent while INCOMPLETE */
	uint32_t q_head;	/* oldest held packet */
	uint32_t q_len;
	struct rte_mbuf *q[DROCE_NET_ARP_QUEUE_LEN];
};

struct droce_net {
	struct droce_net_conf conf;
	uint64_t retry_ticks;
	uint64_t reachable_ticks;
	uint32_t ipv4_mask;	/* host order, from ipv4_prefix_len */
	uint16_t ip_id;		/* IPv4 identification of the frames we originate */
	uint32_t nb_gids;
	bool gid_valid[DROCE_NET_MAX_GIDS];
	uint8_t gids[DROCE_NET_MAX_GIDS][16];
	struct net_neigh neigh[DROCE_NET_MAX_NEIGH];
	struct droce_net_stats st;
};

/* net_port.c */
/* An empty frame of len bytes (zeroed) from the port's mempool, or NULL (counted). */
struct rte_mbuf *net_frame_alloc(struct droce_net *n, uint32_t len);
void net_tx(struct droce_net *n, struct rte_mbuf *m);
bool net_mac_is_unicast(const uint8_t mac[6]);
extern const uint8_t net_mac_broadcast[6];

/* net_gid.c */
void net_gid_table_init(struct droce_net *n);
void net_ipv4_to_mapped(uint32_t ip, uint8_t addr[16]);

/* net_neigh.c */
struct net_neigh *net_neigh_find(const struct droce_net *n, const uint8_t addr[16]);
/* A free slot, else the learned or failed entry closest to expiry; NULL (counted) if none. */
struct net_neigh *net_neigh_alloc(struct droce_net *n, const uint8_t addr[16]);
/* Learned from ARP: creates the entry only when create; never touches a static entry. */
void net_neigh_learn(struct droce_net *n, uint32_t ip, const uint8_t mac[6], bool create,
		     uint64_t now);
/* Fills in the Ethernet destination of every held packet and sends it. */
void net_neigh_flush(struct droce_net *n, struct net_neigh *e);
/* Frees the held packets; counted in queue_failed when count. */
void net_neigh_drop_queue(struct droce_net *n, struct net_neigh *e, bool count);
/* Holds m (oldest dropped when full). */
void net_neigh_hold(struct droce_net *n, struct net_neigh *e, struct rte_mbuf *m);
uint32_t net_neigh_ipv4(const struct net_neigh *e);

/* net_arp.c */
int net_arp_rx(struct droce_net *n, struct rte_mbuf *m, uint64_t now);
/* A broadcast request for ip (host order); false when no mbuf. */
bool net_arp_request(struct droce_net *n, uint32_t ip);

/* net_icmp.c */
int net_ipv4_rx(struct droce_net *n, struct rte_mbuf *m);

#endif /* NET_LOC_H */
