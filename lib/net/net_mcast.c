/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Multicast membership of the port, kept as a host's IP stack keeps it for the groups it
 * joined, so that a snooping switch or a multicast router forwards them to the port:
 * IGMPv2 (RFC 2236) for IPv4-mapped GIDs, MLDv1 (RFC 2710) for IPv6 ones.
 *
 * A join sends an unsolicited report and repeats it once, mcast_report_ms later (RFC 2236
 * 3: "repeated once or twice after short delays"). A query sets the group's report timer
 * to a random time within its Max Response Time, unless the timer would fire sooner; a
 * report from another host for the group stops it (RFC 2236 3, RFC 2710 4: suppression).
 * A leave sends Leave Group to 224.0.0.2 or Done to ff02::2. The all-hosts and all-nodes
 * groups, and IPv6 groups of scope 0 or 1, are never reported (RFC 2236 6, RFC 2710 5).
 * IGMPv3 and MLDv2 queries are answered as an IGMPv2 or MLDv1 host answers them (RFC
 * 3376 7, RFC 3810 8), with IGMPv2 and MLDv1 reports. One timer per group: the repeat of
 * a join and the answer to a query are the same report.
 */

#include <errno.h>
#include <string.h>

#include <rte_common.h>
#include <rte_random.h>

#include "net_loc.h"

#define IPV4_MCAST_MASK		0xF0000000u	/* 224.0.0.0/4 (RFC 5771) */
#define IPV4_MCAST_NET		0xE0000000u
#define IPV4_MAC_LOW_MASK	0x7F		/* RFC 1112 6.4: the low 23 bits */
#define IPV6_MCAST_PREFIX	0xFF		/* ff00::/8 (RFC 4291 2.7) */
#define IPV6_SCOPE_MASK		0x0F
#define IPV6_SCOPE_LINK_LOCAL	2		/* scopes 0 and 1 are never reported */
/* IGMPv3 Max Resp Code (RFC 3376 4.1.1), MLDv2 Maximum Response Code (RFC 3810 5.1.3). */
#define IGMP_V3_CODE_EXP	0x80
#define MLD_V2_CODE_EXP		0x8000

static const uint8_t ipv4_mcast_mac_prefix[3] = { 0x01, 0x00, 0x5E };
static const uint8_t ipv6_mcast_mac_prefix[2] = { 0x33, 0x33 };
static const uint8_t ipv6_all_nodes[16] = { 0xFF, 0x02, [15] = 0x01 };	/* ff02::1 */
static const uint8_t ipv6_all_routers[16] = { 0xFF, 0x02, [15] = 0x02 };	/* ff02::2 */

static bool
ipv4_is_mcast(uint32_t ip)
{
	return (ip & IPV4_MCAST_MASK) == IPV4_MCAST_NET;
}

static void
put_be32(uint8_t p[4], uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static uint32_t
get_be32(const uint8_t p[4])
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int
droce_net_mcast_mac(const uint8_t gid[16], uint8_t mac[6])
{
	uint32_t ip;

	if (droce_net_gid_to_ipv4(gid, &ip) == 0) {
		if (!ipv4_is_mcast(ip))
			return -EINVAL;
		memcpy(mac, ipv4_mcast_mac_prefix, sizeof(ipv4_mcast_mac_prefix));
		mac[3] = (ip >> 16) & IPV4_MAC_LOW_MASK;
		mac[4] = ip >> 8;
		mac[5] = ip;
		return 0;
	}
	if (gid[0] != IPV6_MCAST_PREFIX)
		return -EINVAL;
	memcpy(mac, ipv6_mcast_mac_prefix, sizeof(ipv6_mcast_mac_prefix));
	memcpy(mac + sizeof(ipv6_mcast_mac_prefix), gid + 12, 4);
	return 0;
}

/* Groups a host never sends a report or a leave for. */
static bool
mcast_reportable(const uint8_t gid[16])
{
	uint32_t ip;

	if (droce_net_gid_to_ipv4(gid, &ip) == 0)
		return ip != NET_IPV4_ALL_HOSTS;
	return (gid[1] & IPV6_SCOPE_MASK) >= IPV6_SCOPE_LINK_LOCAL &&
		memcmp(gid, ipv6_all_nodes, 16) != 0;
}

static bool
mcast_is_ipv4(const uint8_t gid[16])
{
	uint32_t ip;

	return droce_net_gid_to_ipv4(gid, &ip) == 0;
}

static struct net_mcast *
mcast_find(const struct droce_net *n, const uint8_t gid[16])
{
	uint32_t i;

	for (i = 0; i < n->nb_mcast; i++) {
		if (memcmp(n->mcast[i].gid, gid, 16) == 0)
			return (struct net_mcast *)(uintptr_t)&n->mcast[i];
	}
	return NULL;
}

/* Every host listens to 224.0.0.1 and ff02::1: that is where general queries go. */
static const uint8_t mcast_always_macs[][6] = {
	{ 0x01, 0x00, 0x5E, 0x00, 0x00, 0x01 },
	{ 0x33, 0x33, 0x00, 0x00, 0x00, 0x01 },
};

bool
net_mcast_mac_wanted(const struct droce_net *n, const uint8_t mac[6])
{
	uint8_t gm[6];
	uint32_t i;

	if (net_mac_is_unicast(mac))
		return false;
	for (i = 0; i < RTE_DIM(mcast_always_macs); i++)
		if (memcmp(mac, mcast_always_macs[i], 6) == 0)
			return true;
	for (i = 0; i < n->nb_mcast; i++) {
		if (droce_net_mcast_mac(n->mcast[i].gid, gm) == 0 && memcmp(mac, gm, 6) == 0)
			return true;
	}
	return false;
}

/* mac is one of the always-wanted ones, or group i's MAC is also an earlier group's. */
static bool
mcast_mac_seen(const struct droce_net *n, uint32_t i, const uint8_t mac[6])
{
	uint8_t gm[6];
	uint32_t j;

	for (j = 0; j < RTE_DIM(mcast_always_macs); j++)
		if (memcmp(mac, mcast_always_macs[j], 6) == 0)
			return true;
	for (j = 0; j < i; j++)
		if (droce_net_mcast_mac(n->mcast[j].gid, gm) == 0 && memcmp(mac, gm, 6) == 0)
			return true;
	return false;
}

uint32_t
droce_net_mcast_macs(const struct droce_net *n, uint8_t (*macs)[6], uint32_t cap)
{
	uint8_t gm[6];
	uint32_t i, nb = 0;

	for (i = 0; i < RTE_DIM(mcast_always_macs); i++) {
		if (nb < cap)
			memcpy(macs[nb], mcast_always_macs[i], 6);
		nb++;
	}
	for (i = 0; i < n->nb_mcast; i++) {
		/* Groups may share a MAC (RFC 1112 maps 32 groups to each): once in the list. */
		if (droce_net_mcast_mac(n->mcast[i].gid, gm) != 0 ||
		    mcast_mac_seen(n, i, gm))
			continue;
		if (nb < cap)
			memcpy(macs[nb], gm, 6);
		nb++;
	}
	return nb;
}

/*
 * An IGMPv2 message (RFC 2236 2) for group to dst: TTL 1, the Router Alert option (RFC
 * 2113), from our address (0.0.0.0 without one), TOS and DF as Linux sends them.
 */
static bool
igmp_send(struct droce_net *n, uint8_t type, uint32_t dst, uint32_t group)
{
	const uint32_t ip_len = DROCE_IPV4_HLEN + NET_IPV4_OPT_RA_LEN;
	struct droce_eth_hdr *eth;
	struct droce_ipv4_hdr *ip;
	struct net_igmp_hdr *igmp;
	struct rte_mbuf *m;
	uint8_t gid[16];
	uint8_t *opt;

	m = net_frame_alloc(n, RTE_MAX((uint32_t)NET_ETH_MIN_LEN,
				       (uint32_t)sizeof(*eth) + ip_len + NET_IGMP_HLEN));
	if (m == NULL)
		return false;
	eth = rte_pktmbuf_mtod(m, struct droce_eth_hdr *);
	droce_gid_from_ipv4_host(gid, dst);
	droce_net_mcast_mac(gid, eth->dst);
	memcpy(eth->src, n->conf.mac, 6);
	droce_eth_set_type(eth, DROCE_ETHERTYPE_IPV4);
	ip = (struct droce_ipv4_hdr *)(eth + 1);
	ip->ver_ihl = NET_IPV4_VERSION << 4 | ip_len / 4;
	ip->tos = NET_IGMP_TOS;
	droce_ipv4_set_total_len(ip, ip_len + NET_IGMP_HLEN);
	ip->id = htobe16(n->ip_id++);
	ip->frag = htobe16(DROCE_IPV4_DF);
	ip->ttl = NET_IGMP_TTL;
	ip->proto = NET_IPPROTO_IGMP;
	put_be32(ip->src, n->conf.ipv4);
	put_be32(ip->dst, dst);
	opt = (uint8_t *)(ip + 1);
	opt[0] = NET_IPV4_OPT_RA;
	opt[1] = NET_IPV4_OPT_RA_LEN;	/* value 0, already zero */
	ip->csum = htobe16(net_cksum_fold(net_sum_bytes(ip, ip_len)));
	igmp = (struct net_igmp_hdr *)(opt + NET_IPV4_OPT_RA_LEN);
	igmp->type = type;
	put_be32(igmp->group, group);
	igmp->csum = htobe16(net_cksum_fold(net_sum_bytes(igmp, NET_IGMP_HLEN)));
	net_tx(n, m);
	return true;
}

/* The ICMPv6 pseudo-header (RFC 8200 8.1) of len bytes from src to dst. */
static uint32_t
icmp6_pseudo_sum(const uint8_t src[16], const uint8_t dst[16], uint32_t len)
{
	return net_sum_bytes(src, 16) + net_sum_bytes(dst, 16) + (len >> 16) + (len & 0xFFFF) +
		NET_IPPROTO_ICMPV6;
}

/*
 * An MLDv1 message (RFC 2710 3) for group to dst: from our link-local address (GID 1),
 * hop limit 1, a Hop-by-Hop header with the Router Alert option (RFC 2711, value 0: MLD).
 */
static bool
mld_send(struct droce_net *n, uint8_t type, const uint8_t dst[16], const uint8_t group[16])
{
	struct droce_eth_hdr *eth;
	struct droce_ipv6_hdr *ip;
	struct net_mld_hdr *mld;
	struct rte_mbuf *m;
	uint8_t *hbh;

	m = net_frame_alloc(n, sizeof(*eth) + DROCE_IPV6_HLEN + NET_IPV6_HBH_LEN + NET_MLD_LEN);
	if (m == NULL)
		return false;
	eth = rte_pktmbuf_mtod(m, struct droce_eth_hdr *);
	droce_net_mcast_mac(dst, eth->dst);
	memcpy(eth->src, n->conf.mac, 6);
	droce_eth_set_type(eth, DROCE_ETHERTYPE_IPV6);
	ip = (struct droce_ipv6_hdr *)(eth + 1);
	ip->vtc_flow = htobe32((uint32_t)NET_IPV6_VERSION << 28);
	droce_ipv6_set_payload_len(ip, NET_IPV6_HBH_LEN + NET_MLD_LEN);
	ip->next_hdr = NET_IPPROTO_HOPOPTS;
	ip->hop_limit = NET_MLD_HOP_LIMIT;
	memcpy(ip->src, n->gids[DROCE_NET_GID_LINK_LOCAL], 16);
	memcpy(ip->dst, dst, 16);
	hbh = (uint8_t *)(ip + 1);
	hbh[0] = NET_IPPROTO_ICMPV6;
	hbh[1] = 0;			/* (0 + 1) * 8 bytes */
	hbh[2] = NET_IPV6_OPT_RA;
	hbh[3] = NET_IPV6_OPT_RA_LEN;	/* hbh[4..5]: value 0 */
	hbh[6] = NET_IPV6_OPT_PADN;	/* hbh[7]: no padding bytes follow */
	mld = (struct net_mld_hdr *)(hbh + NET_IPV6_HBH_LEN);
	mld->type = type;
	memcpy(mld->addr, group, 16);
	mld->csum = htobe16(net_cksum_fold(icmp6_pseudo_sum(ip->src, ip->dst, NET_MLD_LEN) +
					   net_sum_bytes(mld, NET_MLD_LEN)));
	net_tx(n, m);
	return true;
}

/* RFC 2236 2, RFC 2710 3: a report goes to the group itself. */
static void
mcast_send_report(struct droce_net *n, const uint8_t gid[16])
{
	uint32_t ip;

	if (droce_net_gid_to_ipv4(gid, &ip) == 0) {
		if (igmp_send(n, NET_IGMP_V2_REPORT, ip, ip))
			n->st.tx_igmp_report++;
	} else if (mld_send(n, NET_MLD_REPORT, gid, gid)) {
		n->st.tx_mld_report++;
	}
}

static void
mcast_send_leave(struct droce_net *n, const uint8_t gid[16])
{
	uint32_t ip;

	if (droce_net_gid_to_ipv4(gid, &ip) == 0) {
		if (igmp_send(n, NET_IGMP_LEAVE, NET_IPV4_ALL_ROUTERS, ip))
			n->st.tx_igmp_leave++;
	} else if (mld_send(n, NET_MLD_DONE, ipv6_all_routers, gid)) {
		n->st.tx_mld_done++;
	}
}

int
droce_net_mcast_join(struct droce_net *n, const uint8_t gid[16], uint64_t now)
{
	struct net_mcast *g;
	uint8_t mac[6];

	if (droce_net_mcast_mac(gid, mac) != 0)
		return -EINVAL;
	if (mcast_find(n, gid) != NULL)
		return -EEXIST;
	if (n->nb_mcast == DROCE_NET_MAX_MCAST)
		return -ENOMEM;
	g = &n->mcast[n->nb_mcast++];
	memset(g, 0, sizeof(*g));
	memcpy(g->gid, gid, 16);
	if (!mcast_reportable(gid))
		return 0;
	/* Now, and once more in case the first is lost; even if this one found no mbuf. */
	mcast_send_report(n, gid);
	g->pending = true;
	g->deadline = now + n->mcast_report_ticks;
	return 0;
}

int
droce_net_mcast_leave(struct droce_net *n, const uint8_t gid[16], uint64_t now)
{
	struct net_mcast *g = mcast_find(n, gid);

	RTE_SET_USED(now);
	if (g == NULL)
		return -ENOENT;
	/*
	 * RFC 2236 3 lets a host that was not the last to report skip the Leave; like Linux,
	 * we always send it: a snooping switch may not have passed on the others' reports.
	 */
	if (mcast_reportable(gid))
		mcast_send_leave(n, gid);
	*g = n->mcast[--n->nb_mcast];
	return 0;
}

uint32_t
droce_net_mcast_count(const struct droce_net *n)
{
	return n->nb_mcast;
}

int
droce_net_mcast_query(const struct droce_net *n, uint32_t index, uint8_t gid[16])
{
	if (index >= n->nb_mcast)
		return -EINVAL;
	memcpy(gid, n->mcast[index].gid, 16);
	return 0;
}

void
net_mcast_timer(struct droce_net *n, uint64_t now)
{
	uint32_t i;

	for (i = 0; i < n->nb_mcast; i++) {
		struct net_mcast *g = &n->mcast[i];

		if (g->pending && now >= g->deadline) {
			g->pending = false;
			mcast_send_report(n, g->gid);
		}
	}
}

/*
 * A query for group (NULL: a general query of the family) asks for a report within
 * max_ticks: at a random time in [0, max_ticks), unless the group's timer fires by then
 * (RFC 2236 3, RFC 2710 4).
 */
static void
mcast_queried(struct droce_net *n, bool ipv4, const uint8_t *group, uint64_t max_ticks,
	      uint64_t now)
{
	uint32_t i;

	for (i = 0; i < n->nb_mcast; i++) {
		struct net_mcast *g = &n->mcast[i];

		if (group != NULL ? memcmp(g->gid, group, 16) != 0 : mcast_is_ipv4(g->gid) != ipv4)
			continue;
		if (!mcast_reportable(g->gid) || (g->pending && g->deadline <= now + max_ticks))
			continue;
		g->pending = true;
		g->deadline = now + (max_ticks > 0 ? rte_rand_max(max_ticks) : 0);
	}
}

/* Another host reported gid: our pending report (query answer or repeat) is not needed. */
static int
mcast_heard_report(struct droce_net *n, const struct droce_eth_hdr *eth,
		   const uint8_t gid[16])
{
	struct net_mcast *g = mcast_find(n, gid);

	/* Our own report looped back by the link is not another host's. */
	if (g == NULL || memcmp(eth->src, n->conf.mac, 6) == 0)
		return -ENOENT;
	n->st.rx_mcast_report++;
	g->pending = false;
	return 0;
}

/* RFC 3376 4.1.1: in 1/10 s, a floating-point form from 128 up. */
static uint32_t
igmp_v3_max_resp(uint8_t code)
{
	if (code < IGMP_V3_CODE_EXP)
		return code;
	return (uint32_t)((code & 0x0F) | 0x10) << (((code >> 4) & 0x07) + 3);
}

/* RFC 3810 5.1.3: in ms, a floating-point form from 32768 up. */
static uint32_t
mld_v2_max_resp(uint16_t code)
{
	if (code < MLD_V2_CODE_EXP)
		return code;
	return (uint32_t)((code & 0x0FFF) | 0x1000) << (((code >> 12) & 0x07) + 3);
}

int
net_igmp_rx(struct droce_net *n, struct rte_mbuf *m, const struct droce_eth_hdr *eth,
	    const struct droce_ipv4_hdr *ip, uint32_t ihl, uint32_t tot, uint64_t now)
{
	const uint32_t off = sizeof(struct droce_eth_hdr) + ihl, len = tot - ihl;
	struct net_igmp_hdr igmp_buf;
	const struct net_igmp_hdr *igmp;
	uint32_t dst, group, max_ds;
	uint8_t gid[16], mac[6];

	if ((droce_ipv4_frag(ip) & (DROCE_IPV4_MF | DROCE_IPV4_FRAG_MASK)) != 0)
		return -ENOENT;
	/* To all hosts or a group we joined, behind its MAC; or to us (a unicast query). */
	dst = get_be32(ip->dst);
	if (ipv4_is_mcast(dst)) {
		droce_gid_from_ipv4_host(gid, dst);
		droce_net_mcast_mac(gid, mac);
		if (memcmp(eth->dst, mac, 6) != 0 ||
		    (dst != NET_IPV4_ALL_HOSTS && mcast_find(n, gid) == NULL))
			return -ENOENT;
	} else if (n->conf.ipv4 == 0 || dst != n->conf.ipv4 ||
		   memcmp(eth->dst, n->conf.mac, 6) != 0) {
		return -ENOENT;
	}
	igmp = rte_pktmbuf_read(m, off, sizeof(igmp_buf), &igmp_buf);
	if (len < NET_IGMP_HLEN || igmp == NULL ||
	    net_cksum_fold(net_mbuf_sum(m, off, len)) != 0)
		return -EBADMSG;
	group = get_be32(igmp->group);
	droce_gid_from_ipv4_host(gid, group);
	switch (igmp->type) {
	case NET_IGMP_QUERY:
		/* RFC 3376 7.1: 8 bytes is IGMPv1 (code 0) or v2, 12 or more IGMPv3. */
		if (len == NET_IGMP_HLEN)
			max_ds = igmp->max_resp != 0 ? igmp->max_resp : NET_IGMP_V1_MAX_RESP;
		else if (len >= NET_IGMP_V3_QUERY_MIN)
			max_ds = igmp_v3_max_resp(igmp->max_resp);
		else
			return -EBADMSG;
		if (group != 0 && !ipv4_is_mcast(group))
			return -EBADMSG;
		n->st.rx_igmp_query++;
		mcast_queried(n, true, group == 0 ? NULL : gid,
			      n->conf.hz * max_ds / NET_IGMP_RESP_PER_S, now);
		return 0;
	case NET_IGMP_V1_REPORT:
	case NET_IGMP_V2_REPORT:
		return mcast_heard_report(n, eth, gid);
	default:
		/* Leaves are for routers; IGMPv3 reports do not suppress ours. */
		return -ENOENT;
	}
}

/*
 * The options of the Hop-by-Hop header at off (len bytes, its 2-byte start included):
 * 0 and whether MLD's Router Alert is among them; -ENOENT: an unknown option that says
 * the packet is to be discarded; -EBADMSG: an option runs past the header.
 */
static int
hbh_options(const struct rte_mbuf *m, uint32_t off, uint32_t len, bool *ra)
{
	uint32_t i = 2, type, olen;
	const uint8_t *o;
	uint8_t buf[2];

	/* The caller checked that the len bytes are in m. */
	*ra = false;
	while (i < len) {
		o = rte_pktmbuf_read(m, off + i, 1, buf);
		if (o[0] == NET_IPV6_OPT_PAD1) {
			i++;
			continue;
		}
		if (i + 2 > len)
			return -EBADMSG;
		o = rte_pktmbuf_read(m, off + i, 2, buf);
		type = o[0];
		olen = o[1];
		if (i + 2 + olen > len)
			return -EBADMSG;
		if (type == NET_IPV6_OPT_RA) {
			if (olen != NET_IPV6_OPT_RA_LEN)
				return -EBADMSG;
			o = rte_pktmbuf_read(m, off + i + 2, NET_IPV6_OPT_RA_LEN, buf);
			if (o[0] == 0 && o[1] == 0)
				*ra = true;
		} else if (type != NET_IPV6_OPT_PADN && NET_IPV6_OPT_ACTION(type) != 0) {
			return -ENOENT;
		}
		i += 2 + olen;
	}
	return 0;
}

static bool
ipv6_is_link_local(const uint8_t a[16])
{
	return a[0] == 0xFE && (a[1] & 0xC0) == 0x80;	/* fe80::/10 */
}

static bool
ipv6_is_unspecified(const uint8_t a[16])
{
	static const uint8_t zero[16];

	return memcmp(a, zero, 16) == 0;
}

int
net_ipv6_rx(struct droce_net *n, struct rte_mbuf *m, const struct droce_eth_hdr *eth,
	    uint64_t now)
{
	const uint32_t ip_off = sizeof(struct droce_eth_hdr);
	const uint32_t hbh_off = ip_off + DROCE_IPV6_HLEN;
	struct droce_ipv6_hdr ip_buf;
	const struct droce_ipv6_hdr *ip;
	struct net_mld_hdr mld_buf;
	const struct net_mld_hdr *mld;
	uint32_t plen, hbh_len, icmp_off, icmp_len, max_ms;
	const uint8_t *p;
	uint8_t buf[2], mac[6];
	bool ra;
	int rc;

	ip = rte_pktmbuf_read(m, ip_off, sizeof(ip_buf), &ip_buf);
	if (ip == NULL || droce_ipv6_version(ip) != NET_IPV6_VERSION)
		return -EBADMSG;
	plen = droce_ipv6_payload_len(ip);
	if (hbh_off + plen > rte_pktmbuf_pkt_len(m))
		return -EBADMSG;
	/* To all nodes or a group we joined, behind its MAC. */
	if (ip->dst[0] != IPV6_MCAST_PREFIX || droce_net_mcast_mac(ip->dst, mac) != 0 ||
	    memcmp(eth->dst, mac, 6) != 0 ||
	    (memcmp(ip->dst, ipv6_all_nodes, 16) != 0 && mcast_find(n, ip->dst) == NULL))
		return -ENOENT;
	/* MLD comes after a Hop-by-Hop header (its Router Alert); nothing else is ours. */
	if (ip->next_hdr != NET_IPPROTO_HOPOPTS)
		return -ENOENT;
	p = rte_pktmbuf_read(m, hbh_off, 2, buf);
	if (plen < 2 || p == NULL)
		return -EBADMSG;
	hbh_len = (p[1] + 1u) * 8;
	if (hbh_len > plen)
		return -EBADMSG;
	if (p[0] != NET_IPPROTO_ICMPV6)
		return -ENOENT;
	rc = hbh_options(m, hbh_off, hbh_len, &ra);
	if (rc != 0)
		return rc;
	icmp_off = hbh_off + hbh_len;
	icmp_len = plen - hbh_len;
	p = rte_pktmbuf_read(m, icmp_off, 1, buf);
	if (p == NULL || icmp_len == 0)
		return -EBADMSG;
	if (p[0] != NET_MLD_QUERY && p[0] != NET_MLD_REPORT)
		return -ENOENT;
	mld = rte_pktmbuf_read(m, icmp_off, sizeof(mld_buf), &mld_buf);
	if (icmp_len < NET_MLD_LEN || mld == NULL ||
	    net_cksum_fold(icmp6_pseudo_sum(ip->src, ip->dst, icmp_len) +
			   net_mbuf_sum(m, icmp_off, icmp_len)) != 0)
		return -EBADMSG;
	/* RFC 2710 3, RFC 3810 5.1.14: from a link-local address, hop limit 1, Router Alert. */
	if (!ipv6_is_link_local(ip->src) || ip->hop_limit != NET_MLD_HOP_LIMIT || !ra)
		return -EBADMSG;
	if (mld->type == NET_MLD_REPORT)
		return mcast_heard_report(n, eth, mld->addr);
	/* RFC 3810 8.1: 24 bytes is MLDv1, 28 or more MLDv2. */
	if (icmp_len == NET_MLD_LEN)
		max_ms = be16toh(mld->max_delay);
	else if (icmp_len >= NET_MLD_V2_QUERY_MIN)
		max_ms = mld_v2_max_resp(be16toh(mld->max_delay));
	else
		return -EBADMSG;
	if (!ipv6_is_unspecified(mld->addr) && mld->addr[0] != IPV6_MCAST_PREFIX)
		return -EBADMSG;
	n->st.rx_mld_query++;
	mcast_queried(n, false, ipv6_is_unspecified(mld->addr) ? NULL : mld->addr,
		      n->conf.hz * max_ms / NET_MS_PER_S, now);
	return 0;
}
