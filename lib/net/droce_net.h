/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef DROCE_NET_H
#define DROCE_NET_H

/*
 * lib/net: one port's addresses, GID table, neighbour table, ARP (RFC 826), ICMP echo
 * (RFC 792) and multicast membership (IGMPv2, RFC 2236; MLDv1, RFC 2710), for droced's
 * control thread. Not fast path, and no port I/O: the caller hands
 * received frames to droce_net_rx(), gets frames to send through ops.tx, and drives time
 * by calling droce_net_timer() with a monotonic "now" in units of conf.hz per second (TSC
 * or nanoseconds). One thread uses one struct droce_net; nothing here locks.
 */

#include <stdint.h>
#include <stdio.h>

#include <rte_mbuf.h>
#include <rte_mempool.h>

#define DROCE_NET_MAX_IPV6		8	/* configured IPv6 addresses per port */
/* GID 0: IPv4-mapped, GID 1: IPv6 link-local from the MAC, then the IPv6 addresses. */
#define DROCE_NET_MAX_GIDS		(2 + DROCE_NET_MAX_IPV6)
#define DROCE_NET_GID_IPV4		0
#define DROCE_NET_GID_LINK_LOCAL	1
#define DROCE_NET_MAX_NEIGH		256	/* neighbour entries per port */
#define DROCE_NET_ARP_QUEUE_LEN		8	/* packets held per unresolved neighbour */
#define DROCE_NET_MAX_MCAST		256	/* multicast groups joined per port */

#define DROCE_NET_ARP_RETRY_MS_DEFAULT	100
#define DROCE_NET_ARP_TRIES_DEFAULT	3
#define DROCE_NET_REACHABLE_MS_DEFAULT	30000
/* A join's unsolicited report is repeated once, this long after (RFC 3376's 1 s). */
#define DROCE_NET_MCAST_REPORT_MS_DEFAULT 1000

/* rdma-core's enum ibv_gid_type values, so libdroce passes them on untranslated. */
enum droce_net_gid_type {
	DROCE_NET_GID_TYPE_IB = 0,
	DROCE_NET_GID_TYPE_ROCE_V1 = 1,
	DROCE_NET_GID_TYPE_ROCE_V2 = 2,
};

enum droce_net_neigh_state {
	DROCE_NET_NEIGH_NONE,		/* no entry */
	DROCE_NET_NEIGH_INCOMPLETE,	/* ARP requests out, packets may be queued */
	DROCE_NET_NEIGH_REACHABLE,	/* learned; expires after reachable_ms */
	DROCE_NET_NEIGH_STATIC,		/* configured; never expires, ARP never changes it */
	DROCE_NET_NEIGH_FAILED,		/* no answer to arp_tries requests */
};

/* The state's name ("reachable"), for logs and status output. */
const char *droce_net_neigh_state_name(enum droce_net_neigh_state s);

struct droce_net_ops {
	/* A frame to send on the port; the callee owns m (sends or frees it). */
	void (*tx)(void *arg, struct rte_mbuf *m);
	/*
	 * An INCOMPLETE neighbour was resolved (status 0, mac valid) or failed (status
	 * -EHOSTUNREACH, mac NULL). ip is host order. Optional.
	 */
	void (*resolved)(void *arg, uint32_t ip, const uint8_t *mac, int status);
	void *arg;
};

struct droce_net_ipv6_addr {
	uint8_t addr[16];
	uint8_t prefix_len;
};

struct droce_net_conf {
	uint8_t mac[6];
	uint32_t ipv4;			/* host order; 0: none (GID 0 empty, no ARP) */
	uint8_t ipv4_prefix_len;	/* the on-link subnet: 0..32 */
	struct droce_net_ipv6_addr ipv6[DROCE_NET_MAX_IPV6];
	uint32_t nb_ipv6;
	struct rte_mempool *mp;		/* ARP and ICMP frames are built from it */
	uint64_t hz;			/* units of "now" per second: rte_get_tsc_hz(), 1e9 */
	uint32_t arp_retry_ms;		/* between ARP requests; 0: default */
	uint32_t arp_tries;		/* requests before FAILED; 0: default */
	uint32_t reachable_ms;		/* lifetime of learned and failed entries; 0: default */
	uint32_t mcast_report_ms;	/* join report to its repeat; 0: default */
	struct droce_net_ops ops;
};

/* Counters, one X-macro list (name, description). */
#define DROCE_NET_COUNTERS(X) \
	X(rx_frames, "frames handed to droce_net_rx") \
	X(rx_foreign, "frames ignored: not for this port, not ARP, an echo request, IGMP or MLD") \
	X(rx_malformed, "frames rejected: short, bad lengths or checksums, bad ARP, IGMP or MLD") \
	X(rx_arp_request, "ARP requests for our address") \
	X(rx_arp_reply, "ARP replies for our address") \
	X(rx_arp_not_ours, "ARP packets for another address (only existing entries updated)") \
	X(rx_arp_conflict, "ARP packets claiming our address from another MAC") \
	X(rx_icmp_echo, "ICMP echo requests for our address") \
	X(tx_arp_request, "ARP requests sent (resolution and retries)") \
	X(tx_arp_reply, "ARP replies sent") \
	X(tx_garp, "gratuitous ARPs sent") \
	X(tx_icmp_echo_reply, "ICMP echo replies sent") \
	X(tx_queued, "held packets sent after their neighbour was resolved") \
	X(tx_nombuf, "frames not built: the mempool was empty or too small") \
	X(neigh_learned, "neighbour entries created or completed from ARP") \
	X(neigh_updated, "neighbour entries whose MAC changed") \
	X(neigh_expired, "learned or failed entries removed after reachable_ms") \
	X(neigh_failed, "resolutions that failed after arp_tries requests") \
	X(neigh_full, "entries not created: the table was full") \
	X(resolve_queued, "packets held while their neighbour resolves") \
	X(queue_overflow, "held packets dropped: the queue was full (oldest dropped)") \
	X(queue_failed, "held packets freed because resolution failed") \
	X(rx_igmp_query, "IGMP queries (general or for one group) received") \
	X(rx_mld_query, "MLD queries (general or for one group) received") \
	X(rx_mcast_report, "other hosts' reports for a joined group (our pending one cancelled)") \
	X(tx_igmp_report, "IGMPv2 membership reports sent (joins, repeats, answers)") \
	X(tx_igmp_leave, "IGMPv2 leave group messages sent") \
	X(tx_mld_report, "MLDv1 multicast listener reports sent (joins, repeats, answers)") \
	X(tx_mld_done, "MLDv1 multicast listener done messages sent")

struct droce_net_stats {
#define DROCE_NET_STAT_FIELD(name, desc) uint64_t name;
	DROCE_NET_COUNTERS(DROCE_NET_STAT_FIELD)
#undef DROCE_NET_STAT_FIELD
};

extern const char *const droce_net_counter_names[];
extern const char *const droce_net_counter_descs[];
#define DROCE_NET_NB_COUNTERS (sizeof(struct droce_net_stats) / sizeof(uint64_t))

struct droce_net;

/* NULL with rte_errno EINVAL (bad conf) or ENOMEM. */
struct droce_net *droce_net_create(const struct droce_net_conf *conf);
/* Frees held packets (not counted: the port is going away). NULL is a no-op. */
void droce_net_free(struct droce_net *n);

void droce_net_stats_get(const struct droce_net *n, struct droce_net_stats *st);
/* Writes " name=value" for every non-zero counter to f. */
void droce_net_stats_print(FILE *f, const struct droce_net *n);

/*
 * A received frame (Ethernet II, no VLAN tag; may be a chain). Always takes m: answers
 * ARP requests and ICMP echo requests for our address through ops.tx, learns from ARP,
 * schedules the reports IGMP and MLD queries ask for, frees the rest. 0: handled;
 * -ENOENT: not for us (ignored); -EBADMSG: malformed.
 */
int droce_net_rx(struct droce_net *n, struct rte_mbuf *m, uint64_t now);

/*
 * Retries ARP requests, fails and expires entries, sends the multicast reports whose time
 * has come.
 */
void droce_net_timer(struct droce_net *n, uint64_t now);

/* A gratuitous ARP (a broadcast request for our own address, RFC 5227 2.4). */
int droce_net_garp(struct droce_net *n, uint64_t now);

/*
 * The MAC of ip (host order), for a packet to send.
 * 0: mac filled; m, if any, stays with the caller.
 * -EAGAIN: resolution is under way; m (may be NULL) is held and, once the neighbour
 *   answers, sent through ops.tx with its Ethernet destination filled in, or freed when
 *   resolution fails. m must hold at least an Ethernet header.
 * -ENETUNREACH: ip is not on the port's subnet and has no static entry (no routing).
 * -ENOSPC: the table is full; -EINVAL: bad m or no IPv4 address. m stays with the caller.
 */
int droce_net_resolve(struct droce_net *n, uint32_t ip, struct rte_mbuf *m, uint8_t mac[6],
		      uint64_t now);

/* A static IPv4 neighbour: replaces any entry for ip (held packets are sent to mac). */
int droce_net_neigh_add_static(struct droce_net *n, uint32_t ip, const uint8_t mac[6]);
/* A static IPv6 neighbour (no ND yet: the only way to reach an IPv6 GID). */
int droce_net_neigh6_add_static(struct droce_net *n, const uint8_t addr[16],
				const uint8_t mac[6]);
/* Removes an entry of any state; held packets are freed. 0 or -ENOENT. */
int droce_net_neigh_del(struct droce_net *n, uint32_t ip);
/* The entry of ip: its state (NONE when absent) and, if REACHABLE or STATIC, its MAC. */
enum droce_net_neigh_state droce_net_neigh_lookup(const struct droce_net *n, uint32_t ip,
						  uint8_t mac[6]);

/*
 * The MAC for a destination GID: an IPv4-mapped GID is resolved with ARP as
 * droce_net_resolve() does; any other GID is IPv6, which needs a static entry
 * (0, or -EOPNOTSUPP: no Neighbour Discovery yet).
 */
int droce_net_gid_resolve(struct droce_net *n, const uint8_t gid[16], struct rte_mbuf *m,
			  uint8_t mac[6], uint64_t now);
/* The IPv4 address (host order) of an IPv4-mapped GID: 0, or -EOPNOTSUPP for IPv6. */
int droce_net_gid_to_ipv4(const uint8_t gid[16], uint32_t *ip);

/* Entries in the GID table (2 + IPv6 addresses); GID 0 may be empty (no IPv4). */
uint32_t droce_net_gid_count(const struct droce_net *n);
/* GID index: 0, -EINVAL (index out of range) or -ENODATA (empty entry). */
int droce_net_gid_query(const struct droce_net *n, uint32_t index, uint8_t gid[16],
			enum droce_net_gid_type *type);
/* The index of gid in the table (for loopback), or -ENOENT. */
int droce_net_gid_find(const struct droce_net *n, const uint8_t gid[16]);

/*
 * Multicast membership of the port (for UD multicast, ibv_attach_mcast). A multicast GID
 * is IPv4-mapped ::ffff:a.b.c.d with a.b.c.d in 224.0.0.0/4 (IGMPv2), or IPv6 ff00::/8
 * (MLDv1). The caller counts the QPs of a group: join for the first, leave for the last.
 */

/*
 * The Ethernet address of a multicast GID: 01:00:5e + low 23 bits of the IPv4 group
 * (RFC 1112 6.4), 33:33 + low 32 bits of the IPv6 group (RFC 2464 7). 0 or -EINVAL.
 */
int droce_net_mcast_mac(const uint8_t gid[16], uint8_t mac[6]);

/*
 * Joins group gid: a membership report (IGMPv2 or MLDv1) goes out now and once more
 * conf.mcast_report_ms later (from droce_net_timer), and queries are answered until
 * droce_net_mcast_leave. 224.0.0.1, ff02::1 and IPv6 groups of scope 0 or 1 are joined
 * without a message. 0; -EINVAL: not a multicast GID; -EEXIST: joined already;
 * -ENOMEM: DROCE_NET_MAX_MCAST groups joined. A report that finds no mbuf is counted in
 * tx_nombuf; the group is joined all the same (the repeat and queries follow).
 */
int droce_net_mcast_join(struct droce_net *n, const uint8_t gid[16], uint64_t now);
/* Leaves group gid: an IGMPv2 Leave to 224.0.0.2 or an MLD Done to ff02::2. 0 or -ENOENT. */
int droce_net_mcast_leave(struct droce_net *n, const uint8_t gid[16], uint64_t now);
/* Groups joined, and the GID of the index-th (0 .. count - 1): 0 or -EINVAL. */
uint32_t droce_net_mcast_count(const struct droce_net *n);
int droce_net_mcast_query(const struct droce_net *n, uint32_t index, uint8_t gid[16]);
/*
 * The multicast MACs the port must receive, each once, for the NIC's filter
 * (rte_eth_dev_set_mc_addr_list): 224.0.0.1's and ff02::1's (where general queries go)
 * and each joined group's. Writes at most cap; returns how many there are.
 */
uint32_t droce_net_mcast_macs(const struct droce_net *n, uint8_t (*macs)[6], uint32_t cap);

#endif /* DROCE_NET_H */
