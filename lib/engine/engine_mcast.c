/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UD multicast (IB 10.5: a UD QP attached to a multicast GID receives what is sent to the
 * group; RoCEv2 maps the GID to an IP multicast address, A17). The device keeps one table
 * of groups, each with the QPNs attached, of any domain. The control thread changes it by
 * copy and publish (engine_obj_mcast.c), then quiesces before freeing the old copy, so an
 * engine reads it without a lock.
 *
 * A packet to a group (BTH DestQP 0xFFFFFF) is copied once per attached QP and each copy
 * goes through that QP's engine's handoff ring with its DestQP set to the QP: from there
 * on it is a UD packet for that QP (Q_Key check, receive WQE, the group's GID in the GRH
 * area). A packet the port sends to a group is also delivered here, as NICs loop multicast
 * back to their own QPs.
 */
#include <errno.h>
#include <string.h>

#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "engine_loc.h"

int
mcast_mac(const uint8_t gid[16], uint8_t mac[6])
{
	if (!droce_gid_is_multicast(gid))
		return -EINVAL;
	if (gid[0] == 0xFF) {
		/* RFC 2464: 33:33 and the address's last 32 bits */
		mac[0] = mac[1] = 0x33;
		memcpy(mac + 2, gid + 12, 4);
	} else {
		/* RFC 1112: 01:00:5e and the group's low 23 bits */
		mac[0] = 0x01;
		mac[1] = 0x00;
		mac[2] = 0x5E;
		mac[3] = gid[13] & 0x7F;
		mac[4] = gid[14];
		mac[5] = gid[15];
	}
	return 0;
}

const struct engine_mcast_table *
mcast_table(const struct droce_engine_dev *dev)
{
	return atomic_load_explicit(&((struct droce_engine_dev *)dev)->mcast,
				    memory_order_acquire);
}

struct engine_mcast_group *
mcast_find(const struct engine_mcast_table *t, const uint8_t gid[16])
{
	uint32_t i;

	if (t == NULL)
		return NULL;
	for (i = 0; i < t->nb; i++)
		if (memcmp(t->grp[i].mgid, gid, 16) == 0)
			return (struct engine_mcast_group *)&t->grp[i];
	return NULL;
}

bool
mcast_any(const struct droce_engine_dev *dev)
{
	const struct engine_mcast_table *t = mcast_table(dev);

	return t != NULL && t->nb != 0;
}

void
mcast_rx(struct droce_engine *e, struct rte_mbuf *m, const struct droce_wire_pkt *pkt)
{
	const struct engine_mcast_group *g;
	uint8_t gid[16];
	uint32_t i;

	/* The destination GID: the IPv4-mapped form of an IPv4 destination (A17.4.1). */
	if (pkt->ip_version == 4) {
		droce_gid_from_ipv4(gid, droce_pkt_ipv4(pkt)->dst);
	} else {
		memcpy(gid, droce_pkt_ipv6(pkt)->dst, 16);
	}
	g = mcast_find(mcast_table(e->dev), gid);
	if (g == NULL || !(pkt->info->flags & DROCE_OPF_SEND) ||
	    pkt->info->transport != DROCE_TRANSPORT_UD) {
		ENGINE_STAT(e, mcast_no_group);
		return;
	}
	for (i = 0; i < g->nb; i++) {
		struct droce_engine_qp *qp = dev_qp(e->dev, g->qpn[i]);
		struct rte_mbuf *c;
		struct droce_bth *bth;

		if (qp == NULL)
			continue;
		c = rte_pktmbuf_copy(m, e->mp, 0, UINT32_MAX);
		if (c == NULL) {
			ENGINE_STAT(e, tx_nombuf);
			continue;
		}
		/* This copy is the member's: a UD packet to its QPN (ICRC not checked again). */
		bth = rte_pktmbuf_mtod_offset(c, struct droce_bth *, pkt->bth_off);
		bth->fb_dqpn = htobe32((be32toh(bth->fb_dqpn) & ~DROCE_QPN_MASK) | qp->qpn);
		if (rte_ring_mp_enqueue(qp->engine->handoff, c) != 0) {
			ENGINE_STAT(e, rx_handoff_drop);
			rte_pktmbuf_free(c);
			continue;
		}
		e->handoff_to |= 1ull << qp->engine->id;
		ENGINE_STAT(e, mcast_copies);
	}
}
