/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * IPv4 for the control path: ICMP echo (RFC 792) to our address is answered, so `ping`
 * works against a port, and IGMP goes to net_mcast.c. Anything else in IPv4 that reaches
 * the control thread is ignored (RoCEv2 belongs to the engines).
 */

#include <errno.h>
#include <string.h>

#include <rte_ip.h>

#include "net_loc.h"

/* The checksum of len bytes at off in m: 0 when a stored checksum is right. */
static uint16_t
mbuf_cksum(const struct rte_mbuf *m, uint32_t off, uint32_t len)
{
	return net_cksum_fold(net_mbuf_sum(m, off, len));
}

int
net_ipv4_rx(struct droce_net *n, struct rte_mbuf *m, const struct droce_eth_hdr *eth,
	    bool group_mac, uint64_t now)
{
	const uint32_t ip_off = sizeof(struct droce_eth_hdr);
	struct droce_ipv4_hdr ip_buf, *rip;
	const struct droce_ipv4_hdr *ip;
	struct net_icmp_hdr icmp_buf, *ricmp;
	const struct net_icmp_hdr *icmp;
	struct droce_eth_hdr *reth;
	uint32_t ihl, tot, icmp_len, dst;
	struct rte_mbuf *r;
	uint16_t sum;

	ip = rte_pktmbuf_read(m, ip_off, sizeof(ip_buf), &ip_buf);
	if (ip == NULL)
		return -EBADMSG;
	ihl = droce_ipv4_hdr_len(ip);
	tot = droce_ipv4_total_len(ip);
	if (droce_ipv4_version(ip) != NET_IPV4_VERSION || ihl < NET_IPV4_IHL_MIN * 4 ||
	    tot < ihl || ip_off + tot > rte_pktmbuf_pkt_len(m) ||
	    mbuf_cksum(m, ip_off, ihl) != 0)
		return -EBADMSG;
	if (ip->proto == NET_IPPROTO_IGMP)
		return net_igmp_rx(n, m, eth, ip, ihl, tot, now);
	if (group_mac)
		return -ENOENT;
	memcpy(&dst, ip->dst, sizeof(dst));
	if (n->conf.ipv4 == 0 || be32toh(dst) != n->conf.ipv4 || ip->proto != NET_IPPROTO_ICMP)
		return -ENOENT;
	/* No reassembly: a fragmented echo request is not answered. */
	if ((droce_ipv4_frag(ip) & (DROCE_IPV4_MF | DROCE_IPV4_FRAG_MASK)) != 0)
		return -ENOENT;
	icmp_len = tot - ihl;
	icmp = rte_pktmbuf_read(m, ip_off + ihl, sizeof(icmp_buf), &icmp_buf);
	if (icmp_len < NET_ICMP_HLEN || icmp == NULL)
		return -EBADMSG;
	if (icmp->type != NET_ICMP_ECHO_REQUEST || icmp->code != 0)
		return -ENOENT;
	if (mbuf_cksum(m, ip_off + ihl, icmp_len) != 0)
		return -EBADMSG;
	n->st.rx_icmp_echo++;

	/* The reply: addresses swapped, no IP options, the echo data returned unchanged. */
	r = net_frame_alloc(n, RTE_MAX((uint32_t)NET_ETH_MIN_LEN,
				       ip_off + DROCE_IPV4_HLEN + icmp_len));
	if (r == NULL)
		return 0;
	reth = rte_pktmbuf_mtod(r, struct droce_eth_hdr *);
	net_mbuf_copy(m, 0, sizeof(*reth), reth);
	memcpy(reth->dst, reth->src, 6);
	memcpy(reth->src, n->conf.mac, 6);
	rip = (struct droce_ipv4_hdr *)(reth + 1);
	rip->ver_ihl = NET_IPV4_VERSION << 4 | NET_IPV4_IHL_MIN;
	rip->tos = ip->tos;
	droce_ipv4_set_total_len(rip, DROCE_IPV4_HLEN + icmp_len);
	rip->id = htobe16(n->ip_id++);
	rip->ttl = NET_IPV4_TTL;
	rip->proto = NET_IPPROTO_ICMP;
	memcpy(rip->src, ip->dst, 4);
	memcpy(rip->dst, ip->src, 4);
	rip->csum = 0;
	rip->csum = ~rte_raw_cksum(rip, DROCE_IPV4_HLEN);
	ricmp = (struct net_icmp_hdr *)(rip + 1);
	net_mbuf_copy(m, ip_off + ihl, icmp_len, ricmp);
	ricmp->type = NET_ICMP_ECHO_REPLY;
	ricmp->csum = 0;
	sum = rte_raw_cksum(ricmp, icmp_len);
	ricmp->csum = (uint16_t)~sum;
	n->st.tx_icmp_echo_reply++;
	net_tx(n, r);
	return 0;
}
