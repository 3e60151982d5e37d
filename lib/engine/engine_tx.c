/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Transmit: packets are built into mbufs here (engine_pkt_start/finish) and queued in the
 * engine's tx buffer, flushed once per pass; packets to the port's own MAC are looped back
 * through the engine's handoff ring; the control thread's slow_tx frames join the buffer.
 */
#include <string.h>

#include <rte_ethdev.h>

#include "engine_loc.h"

/*
 * Queues m, a RoCE packet whose ICRC is still to be written (at l3_off: its IP header),
 * for transmission, or loops it back; dropped without room (tx_drop).
 */
static void
engine_tx(struct droce_engine *e, struct rte_mbuf *m, uint8_t l3_off)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);

	/*
	 * A packet to our own MAC (the destination GID is one of the port's: loopback, as RoCE
	 * NICs and rxe do) would not come back from the wire: deliver it here, through our own
	 * handoff ring, so it is received in a later pass like any other packet.
	 */
	if (rte_is_same_ether_addr(&eth->dst_addr, (const struct rte_ether_addr *)e->mac)) {
		droce_wire_icrc_fill(rte_pktmbuf_mtod(m, void *), l3_off,
				     m->data_len - DROCE_ICRC_LEN);
		if (rte_ring_mp_enqueue(e->handoff, m) != 0) {
			ENGINE_STAT(e, tx_drop);
			rte_pktmbuf_free(m);
			return;
		}
		ENGINE_STAT(e, tx_loopback);
		return;
	}
	if (e->nb_tx == ENGINE_TX_MAX) {
		ENGINE_STAT(e, tx_drop);
		rte_pktmbuf_free(m);
		return;
	}
	/*
	 * To a multicast group with QPs of this device attached: a copy comes back in, as a
	 * NIC loops multicast back to its own QPs (the wire would not bring it back).
	 */
	if ((eth->dst_addr.addr_bytes[0] & 1) && mcast_any(e->dev)) {
		struct rte_mbuf *c = rte_pktmbuf_copy(m, e->mp, 0, UINT32_MAX);

		if (c != NULL && rte_ring_mp_enqueue(e->handoff, c) == 0)
			ENGINE_STAT(e, tx_loopback);
		else
			rte_pktmbuf_free(c);
	}
	e->tx_icrc_l3[e->nb_tx] = l3_off;
	e->tx[e->nb_tx++] = m;
}

/*
 * The ICRCs of the packets queued since the last flush, one after another: each is a
 * chain of dependent folds that takes longer than its instructions, and only chains
 * computed back to back overlap in the core (doc/engine.md, "ICRCs by the burst").
 */
static void
engine_tx_icrcs(struct droce_engine *e)
{
	uint16_t i;

	for (i = 0; i < e->nb_tx; i++) {
		struct rte_mbuf *m = e->tx[i];

		if (e->tx_icrc_l3[i] == 0)
			continue;
		droce_wire_icrc_fill(rte_pktmbuf_mtod(m, void *), e->tx_icrc_l3[i],
				     m->data_len - DROCE_ICRC_LEN);
		e->tx_icrc_l3[i] = 0;
	}
}

uint16_t
engine_tx_flush(struct droce_engine *e)
{
	uint16_t sent;

	if (e->nb_tx == 0)
		return 0;
	if (unlikely(atomic_load_explicit(&e->port_paused, memory_order_relaxed))) {
		rte_pktmbuf_free_bulk(e->tx, e->nb_tx);
		memset(e->tx_icrc_l3, 0, e->nb_tx * sizeof(e->tx_icrc_l3[0]));
		e->st.tx_port_paused += e->nb_tx;
		e->nb_tx = 0;
		e->tx_tapped = 0;
		return 0;
	}
	engine_tx_icrcs(e);
	/* A capture sees each frame once: those kept from a refused burst were seen then. */
	if (unlikely(atomic_load_explicit(&e->tap, memory_order_relaxed) != NULL) &&
	    e->nb_tx > e->tx_tapped)
		engine_tap_burst(e, atomic_load_explicit(&e->tap, memory_order_acquire),
				 e->tx + e->tx_tapped, e->nb_tx - e->tx_tapped, false);
	sent = rte_eth_tx_burst(e->port_id, e->tx_queue, e->tx, e->nb_tx);
	e->st.tx_pkts += sent;
	/*
	 * Keep what the port refused for the next pass: RoCE tolerates delay better than loss.
	 * Their ICRCs are written (tx_icrc_l3 all 0).
	 */
	if (sent > 0 && sent < e->nb_tx)
		memmove(e->tx, e->tx + sent, (e->nb_tx - sent) * sizeof(e->tx[0]));
	e->nb_tx -= sent;
	e->tx_tapped = e->nb_tx;
	return sent;
}

/*
 * An mbuf for the next packet, from a stash filled a burst at a time: one trip to the
 * mempool per ENGINE_BURST packets instead of one each. Near an empty pool, one by one.
 */
static struct rte_mbuf *
engine_mbuf(struct droce_engine *e)
{
	if (e->nb_mb_stash == 0) {
		if (rte_pktmbuf_alloc_bulk(e->mp, e->mb_stash, ENGINE_BURST) != 0)
			return rte_pktmbuf_alloc(e->mp);
		e->nb_mb_stash = ENGINE_BURST;
	}
	return e->mb_stash[--e->nb_mb_stash];
}

uint8_t *
engine_pkt_start(struct droce_engine *e, const struct droce_wire_tmpl *tmpl,
		 const struct droce_wire_hdrs *h, uint32_t payload_len, struct rte_mbuf **mp)
{
	struct rte_mbuf *m = engine_mbuf(e);
	uint32_t total, cap;
	uint8_t *p;
	int hlen;

	*mp = NULL;
	if (m == NULL) {
		ENGINE_STAT(e, tx_nombuf);
		return NULL;
	}
	p = rte_pktmbuf_mtod(m, uint8_t *);
	cap = rte_pktmbuf_tailroom(m);
	hlen = droce_wire_build_hdrs(tmpl, h, payload_len, p, cap);
	total = (uint32_t)hlen + payload_len + droce_wire_pad(payload_len) + DROCE_ICRC_LEN;
	if (hlen < 0 || total > cap) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	m->data_len = (uint16_t)total;
	m->pkt_len = total;
	*mp = m;
	return p + hlen;
}

void
engine_pkt_finish(struct droce_engine *e, struct droce_engine_qp *qp,
		  const struct droce_wire_tmpl *tmpl, struct rte_mbuf *m)
{
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
	/* The trailer is BTH.PadCnt pad bytes, zeros, and the ICRC, written at the flush. */
	uint32_t pad = droce_bth_pad((const struct droce_bth *)(p + tmpl->len));

	memset(p + m->data_len - DROCE_ICRC_LEN - pad, 0, pad);
	ENGINE_QP_COUNT(qp, rdma_tx_packets);
	ENGINE_QP_ADD(qp, rdma_tx_bytes, m->pkt_len);
	engine_tx(e, m, (uint8_t)tmpl->l3_off);
}

/* Frames from the control thread (ARP, ICMP replies): sent as they are. */
unsigned int
engine_tx_slow(struct droce_engine *e)
{
	struct rte_mbuf *pkts[ENGINE_BURST];
	unsigned int n, i, room;

	if (e->slow_tx == NULL)
		return 0;
	room = engine_tx_room(e);
	if (room == 0)
		return 0;
	n = rte_ring_sc_dequeue_burst(e->slow_tx, (void **)pkts,
				      RTE_MIN(room, (unsigned int)ENGINE_BURST), NULL);
	for (i = 0; i < n; i++) {
		e->tx_icrc_l3[e->nb_tx] = 0;	/* complete as the control thread built it */
		e->tx[e->nb_tx++] = pkts[i];
	}
	e->st.tx_slow += n;
	return n;
}
