/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Capture (droce-ctl capture, doc/operations.md): the frames an engine takes from its port
 * and gives to it, copied in pcapng form into the capture's ring when they match its
 * filter, a BTH destination QPN or an address at either end. The stages call it only while
 * a capture runs (a NULL pointer tested once per burst otherwise), after a sent packet's
 * ICRC is written, so the copy is the frame on the wire.
 */
/* rte_pcapng_copy() is experimental in DPDK 22.11. */
#define ALLOW_EXPERIMENTAL_API
#include <string.h>

#include <rte_cycles.h>
#include <rte_ether.h>
#include <rte_pcapng.h>
#include <rte_ring.h>

#include "engine_loc.h"

#define TAP_UDP_PORT		4791	/* RoCEv2 */
#define TAP_BTH_DQPN_OFF	5	/* BTH: opcode, flags, P_Key, reserved, then the QPN */

static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };

/* Does the frame in m match the capture's filter? Headers read in place (first segment). */
static bool
tap_match(const struct droce_engine_tap_conf *c, const struct rte_mbuf *m)
{
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t len = m->data_len, off = RTE_ETHER_HDR_LEN, l4 = 0, dqpn, i;
	uint16_t type;
	uint8_t proto = 0;
	bool peer = !c->peer_set;

	if (!c->peer_set && c->nb_qpns == 0)
		return true;
	if (len < off)
		return false;
	type = (uint16_t)(p[12] << 8 | p[13]);
	if (type == RTE_ETHER_TYPE_VLAN && len >= off + 4) {
		type = (uint16_t)(p[16] << 8 | p[17]);
		off += 4;
	}
	if (type == RTE_ETHER_TYPE_IPV4 && len >= off + 20) {
		proto = p[off + 9];
		l4 = off + (p[off] & 0xf) * 4u;
		if (c->peer_set && memcmp(c->peer, v4mapped, sizeof(v4mapped)) == 0)
			peer = memcmp(p + off + 12, c->peer + 12, 4) == 0 ||
			       memcmp(p + off + 16, c->peer + 12, 4) == 0;
	} else if (type == RTE_ETHER_TYPE_IPV6 && len >= off + 40) {
		proto = p[off + 6];
		l4 = off + 40;
		if (c->peer_set)
			peer = memcmp(p + off + 8, c->peer, 16) == 0 ||
			       memcmp(p + off + 24, c->peer, 16) == 0;
	}
	if (!peer)
		return false;
	if (c->nb_qpns == 0)
		return true;
	/* UDP to 4791, then the BTH. */
	if (proto != DROCE_IPPROTO_UDP || len < l4 + 8 + 8 ||
	    (uint16_t)(p[l4 + 2] << 8 | p[l4 + 3]) != TAP_UDP_PORT)
		return false;
	p += l4 + 8 + TAP_BTH_DQPN_OFF;
	dqpn = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
	for (i = 0; i < c->nb_qpns; i++)
		if (c->qpns[i] == dqpn)
			return true;
	return false;
}

void
engine_tap_burst(struct droce_engine *e, struct droce_engine_tap *tap,
		 struct rte_mbuf *const *pkts, uint16_t n, bool rx)
{
	const struct droce_engine_tap_conf *c = &tap->conf;
	uint64_t now = rte_rdtsc();
	uint16_t i;

	for (i = 0; i < n; i++) {
		struct rte_mbuf *copy;

		if (!tap_match(c, pkts[i]))
			continue;
		copy = rte_pcapng_copy(e->port_id, rx ? e->rx_queue : e->tx_queue, pkts[i], c->mp,
				       c->snaplen, now, rx ? RTE_PCAPNG_DIRECTION_IN :
				       RTE_PCAPNG_DIRECTION_OUT);
		if (copy == NULL || rte_ring_mp_enqueue(c->ring, copy) != 0) {
			rte_pktmbuf_free(copy);
			atomic_fetch_add_explicit(&tap->dropped, 1, memory_order_relaxed);
			continue;
		}
		atomic_fetch_add_explicit(&tap->copied, 1, memory_order_relaxed);
	}
}
