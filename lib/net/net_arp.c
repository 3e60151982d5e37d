/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * ARP (RFC 826) for the port's IPv4 address: requests answered, requests and replies
 * learned from, requests sent for resolution and as gratuitous ARP (RFC 5227 2.4).
 */

#include <errno.h>
#include <string.h>

#include "net_loc.h"

static void
ip_to_bytes(uint32_t ip, uint8_t b[4])
{
	b[0] = ip >> 24;
	b[1] = ip >> 16;
	b[2] = ip >> 8;
	b[3] = ip;
}

static uint32_t
ip_from_bytes(const uint8_t b[4])
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

/* One ARP frame over Ethernet, padded to the minimum frame size. */
static bool
arp_send(struct droce_net *n, const uint8_t eth_dst[6], uint16_t op, const uint8_t tha[6],
	 uint32_t tpa)
{
	struct droce_eth_hdr *eth;
	struct net_arp_hdr *arp;
	struct rte_mbuf *m;

	m = net_frame_alloc(n, NET_ETH_MIN_LEN);
	if (m == NULL)
		return false;
	eth = rte_pktmbuf_mtod(m, struct droce_eth_hdr *);
	memcpy(eth->dst, eth_dst, 6);
	memcpy(eth->src, n->conf.mac, 6);
	droce_eth_set_type(eth, NET_ETHERTYPE_ARP);
	arp = (struct net_arp_hdr *)(eth + 1);
	arp->htype = htobe16(NET_ARP_HTYPE_ETHER);
	arp->ptype = htobe16(DROCE_ETHERTYPE_IPV4);
	arp->hlen = NET_ARP_HLEN_ETHER;
	arp->plen = NET_ARP_PLEN_IPV4;
	arp->op = htobe16(op);
	memcpy(arp->sha, n->conf.mac, 6);
	ip_to_bytes(n->conf.ipv4, arp->spa);
	memcpy(arp->tha, tha, 6);
	ip_to_bytes(tpa, arp->tpa);
	net_tx(n, m);
	return true;
}

bool
net_arp_request(struct droce_net *n, uint32_t ip)
{
	static const uint8_t unknown[6];

	if (!arp_send(n, net_mac_broadcast, NET_ARP_OP_REQUEST, unknown, ip))
		return false;
	n->st.tx_arp_request++;
	return true;
}

int
droce_net_garp(struct droce_net *n, uint64_t now)
{
	static const uint8_t unknown[6];

	RTE_SET_USED(now);
	if (n->conf.ipv4 == 0)
		return -EINVAL;
	/* RFC 5227 2.4: an announcement has sender and target address both ours. */
	if (!arp_send(n, net_mac_broadcast, NET_ARP_OP_REQUEST, unknown, n->conf.ipv4))
		return -ENOMEM;
	n->st.tx_garp++;
	return 0;
}

int
net_arp_rx(struct droce_net *n, struct rte_mbuf *m, uint64_t now)
{
	struct net_arp_hdr arp_buf;
	const struct net_arp_hdr *arp;
	uint32_t spa, tpa;
	uint16_t op;

	arp = rte_pktmbuf_read(m, sizeof(struct droce_eth_hdr), sizeof(arp_buf), &arp_buf);
	if (arp == NULL)
		return -EBADMSG;
	/* RFC 826: only the (Ethernet, IPv4) pair is ours to answer. */
	if (be16toh(arp->htype) != NET_ARP_HTYPE_ETHER ||
	    be16toh(arp->ptype) != DROCE_ETHERTYPE_IPV4)
		return -ENOENT;
	op = be16toh(arp->op);
	if (arp->hlen != NET_ARP_HLEN_ETHER || arp->plen != NET_ARP_PLEN_IPV4 ||
	    (op != NET_ARP_OP_REQUEST && op != NET_ARP_OP_REPLY) ||
	    !net_mac_is_unicast(arp->sha))
		return -EBADMSG;
	if (n->conf.ipv4 == 0)
		return -ENOENT;
	spa = ip_from_bytes(arp->spa);
	tpa = ip_from_bytes(arp->tpa);
	if (spa == n->conf.ipv4) {
		/* Our own announcement looped back is not a conflict. */
		if (memcmp(arp->sha, n->conf.mac, 6) != 0) {
			n->st.rx_arp_conflict++;
			NET_LOG(WARNING, "another station claims our IPv4 address\n");
		}
		return -ENOENT;
	}
	if (tpa != n->conf.ipv4) {
		/* RFC 826 merge: refresh an entry we have, create none for others' traffic. */
		n->st.rx_arp_not_ours++;
		if (spa != 0)
			net_neigh_learn(n, spa, arp->sha, false, now);
		return -ENOENT;
	}
	/* A probe (RFC 5227 2.1.1) has sender address 0: nothing to learn. */
	if (spa != 0)
		net_neigh_learn(n, spa, arp->sha, true, now);
	if (op == NET_ARP_OP_REPLY) {
		n->st.rx_arp_reply++;
		return 0;
	}
	n->st.rx_arp_request++;
	if (arp_send(n, arp->sha, NET_ARP_OP_REPLY, arp->sha, spa))
		n->st.tx_arp_reply++;
	return 0;
}
