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
#include <droce_wire_gid.h>

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

/* RFC 2236 (IGMPv2); RFC 3376 (IGMPv3) only for telling its queries apart. */
#define NET_IPPROTO_IGMP	2
#define NET_IGMP_QUERY		0x11
#define NET_IGMP_V1_REPORT	0x12
#define NET_IGMP_V2_REPORT	0x16
#define NET_IGMP_LEAVE		0x17
#define NET_IGMP_HLEN		8	/* IGMPv1/v2 messages; an IGMPv3 query is >= 12 */
#define NET_IGMP_V3_QUERY_MIN	12
#define NET_IGMP_TOS		0xC0	/* Internetwork Control, as Linux sends IGMP */
#define NET_IGMP_TTL		1
/* RFC 2113 Router Alert, value 0: "routers shall examine this packet". */
#define NET_IPV4_OPT_RA		0x94
#define NET_IPV4_OPT_RA_LEN	4
#define NET_IPV4_ALL_HOSTS	0xE0000001u	/* 224.0.0.1 */
#define NET_IPV4_ALL_ROUTERS	0xE0000002u	/* 224.0.0.2 */
/* An IGMPv1 query (Max Resp Time 0) means 10 s (RFC 2236 4); Max Resp Time is in 1/10 s. */
#define NET_IGMP_V1_MAX_RESP	100
#define NET_IGMP_RESP_PER_S	10

struct net_igmp_hdr {
	uint8_t type;
	uint8_t max_resp;	/* 1/10 s; an IGMPv3 query's Max Resp Code */
	uint16_t csum;
	uint8_t group[4];
} DROCE_PACKED;

/* RFC 2710 (MLDv1) in ICMPv6 (RFC 4443) after a Hop-by-Hop header (RFC 8200 4.3). */
#define NET_IPV6_VERSION	6
#define NET_IPPROTO_HOPOPTS	0
#define NET_IPPROTO_ICMPV6	58
#define NET_MLD_QUERY		130
#define NET_MLD_REPORT		131
#define NET_MLD_DONE		132
#define NET_MLD_LEN		24	/* an MLDv1 message; an MLDv2 query is >= 28 */
#define NET_MLD_V2_QUERY_MIN	28
#define NET_MLD_HOP_LIMIT	1
#define NET_IPV6_HBH_LEN	8	/* our Hop-by-Hop header: Router Alert and PadN */
/* Hop-by-Hop options: Pad1, PadN, RFC 2711 Router Alert (value 0: MLD). */
#define NET_IPV6_OPT_PAD1	0
#define NET_IPV6_OPT_PADN	1
#define NET_IPV6_OPT_RA		5
#define NET_IPV6_OPT_RA_LEN	2
/* The two high bits of an option type: what to do when it is unknown (00: skip it). */
#define NET_IPV6_OPT_ACTION(t)	((t) >> 6)

struct net_mld_hdr {
	uint8_t type;
	uint8_t code;
	uint16_t csum;
	uint16_t max_delay;	/* ms, big-endian; an MLDv2 query's Maximum Response Code */
	uint16_t reserved;
	uint8_t addr[16];
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

/* A joined multicast group, with its one report timer (RFC 2236 "Delaying Member"). */
struct net_mcast {
	uint8_t gid[16];	/* IPv4-mapped for IPv4 */
	bool pending;		/* a report is due at deadline */
	uint64_t deadline;
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
	uint64_t mcast_report_ticks;
	uint32_t nb_mcast;
	struct net_mcast mcast[DROCE_NET_MAX_MCAST];	/* dense: [0, nb_mcast) */
	struct droce_net_stats st;
};

/* net_port.c */
/* An empty frame of len bytes (zeroed) from the port's mempool, or NULL (counted). */
struct rte_mbuf *net_frame_alloc(struct droce_net *n, uint32_t len);
void net_tx(struct droce_net *n, struct rte_mbuf *m);
bool net_mac_is_unicast(const uint8_t mac[6]);
extern const uint8_t net_mac_broadcast[6];
/*
 * The Internet checksum (RFC 1071), in pieces: a 32-bit partial sum of bytes in network
 * order (of len bytes at p, or at off in m, checked to be there; a piece of odd length
 * must be the last), then net_cksum_fold: the 16-bit one's complement, 0 for a stored
 * checksum that verifies.
 */
uint32_t net_sum_bytes(const void *p, uint32_t len);
uint32_t net_mbuf_sum(const struct rte_mbuf *m, uint32_t off, uint32_t len);
uint16_t net_cksum_fold(uint32_t sum);
/* len bytes at off in m (checked to be there) to dst, across segments. */
void net_mbuf_copy(const struct rte_mbuf *m, uint32_t off, uint32_t len, void *dst);

/* net_gid.c */
void net_gid_table_init(struct droce_net *n);

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

/*
 * net_icmp.c: IPv4 receive. eth is the frame's header; group_mac: it was sent to the MAC
 * of a group we listen on (only IGMP is taken from those).
 */
int net_ipv4_rx(struct droce_net *n, struct rte_mbuf *m, const struct droce_eth_hdr *eth,
		bool group_mac, uint64_t now);

/* net_mcast.c */
/* Is mac the MAC of a group we listen on (all-hosts, all-nodes, a joined group)? */
bool net_mcast_mac_wanted(const struct droce_net *n, const uint8_t mac[6]);
/* IGMP after ip, the checked IPv4 header of m: ihl bytes of it, tot bytes in all. */
int net_igmp_rx(struct droce_net *n, struct rte_mbuf *m, const struct droce_eth_hdr *eth,
		const struct droce_ipv4_hdr *ip, uint32_t ihl, uint32_t tot, uint64_t now);
/* IPv6 receive, only for frames to a group MAC: MLD queries and other hosts' reports. */
int net_ipv6_rx(struct droce_net *n, struct rte_mbuf *m, const struct droce_eth_hdr *eth,
		uint64_t now);
/* Sends the reports whose time has come. */
void net_mcast_timer(struct droce_net *n, uint64_t now);

#endif /* NET_LOC_H */
