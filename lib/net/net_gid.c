/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * The GID table of a port: RoCEv2 GIDs are IPv6 addresses (IBA Annex A17.4.4), IPv4 ones
 * in IPv4-mapped form ::ffff:a.b.c.d (RFC 4291 2.5.5.2, lib/wire's droce_wire_gid.h).
 */

#include <errno.h>
#include <string.h>

#include "net_loc.h"

/* fe80::/64, RFC 4291 2.5.6 */
static const uint8_t link_local_prefix[8] = { 0xFE, 0x80, 0, 0, 0, 0, 0, 0 };
/* Modified EUI-64 (RFC 4291 appendix A): FF FE in the middle, universal/local bit flipped. */
#define EUI64_UL_BIT	0x02
#define EUI64_FILL0	0xFF
#define EUI64_FILL1	0xFE

int
droce_net_gid_to_ipv4(const uint8_t gid[16], uint32_t *ip)
{
	if (!droce_gid_is_ipv4(gid))
		return -EOPNOTSUPP;
	*ip = droce_gid_ipv4_host(gid);
	return 0;
}

void
net_gid_table_init(struct droce_net *n)
{
	uint8_t *ll = n->gids[DROCE_NET_GID_LINK_LOCAL];
	const uint8_t *mac = n->conf.mac;
	uint32_t i;

	if (n->conf.ipv4 != 0) {
		droce_gid_from_ipv4_host(n->gids[DROCE_NET_GID_IPV4], n->conf.ipv4);
		n->gid_valid[DROCE_NET_GID_IPV4] = true;
	}
	memcpy(ll, link_local_prefix, sizeof(link_local_prefix));
	ll[8] = mac[0] ^ EUI64_UL_BIT;
	ll[9] = mac[1];
	ll[10] = mac[2];
	ll[11] = EUI64_FILL0;
	ll[12] = EUI64_FILL1;
	ll[13] = mac[3];
	ll[14] = mac[4];
	ll[15] = mac[5];
	n->gid_valid[DROCE_NET_GID_LINK_LOCAL] = true;
	n->nb_gids = DROCE_NET_GID_LINK_LOCAL + 1;
	for (i = 0; i < n->conf.nb_ipv6; i++) {
		const uint8_t *a = n->conf.ipv6[i].addr;

		/* The configured link-local address is already GID 1. */
		if (memcmp(a, ll, 16) == 0)
			continue;
		memcpy(n->gids[n->nb_gids], a, 16);
		n->gid_valid[n->nb_gids] = true;
		n->nb_gids++;
	}
}

uint32_t
droce_net_gid_count(const struct droce_net *n)
{
	return n->nb_gids;
}

int
droce_net_gid_query(const struct droce_net *n, uint32_t index, uint8_t gid[16],
		    enum droce_net_gid_type *type)
{
	if (index >= n->nb_gids)
		return -EINVAL;
	if (!n->gid_valid[index])
		return -ENODATA;
	memcpy(gid, n->gids[index], 16);
	if (type != NULL)
		*type = DROCE_NET_GID_TYPE_ROCE_V2;
	return 0;
}

int
droce_net_gid_find(const struct droce_net *n, const uint8_t gid[16])
{
	uint32_t i;

	for (i = 0; i < n->nb_gids; i++) {
		if (n->gid_valid[i] && memcmp(n->gids[i], gid, 16) == 0)
			return i;
	}
	return -ENOENT;
}

int
droce_net_gid_resolve(struct droce_net *n, const uint8_t gid[16], struct rte_mbuf *m,
		      uint8_t mac[6], uint64_t now)
{
	const struct net_neigh *e;
	uint32_t ip;

	if (droce_net_gid_to_ipv4(gid, &ip) == 0)
		return droce_net_resolve(n, ip, m, mac, now);
	/* IPv6: no Neighbour Discovery (RFC 4861) yet, static entries only. */
	e = net_neigh_find(n, gid);
	if (e == NULL || e->state != DROCE_NET_NEIGH_STATIC)
		return -EOPNOTSUPP;
	memcpy(mac, e->mac, 6);
	return 0;
}
