/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The receive stage: a burst from the port, then one from the handoff ring (packets other
 * engines steered here, and our own loopback), each parsed, steered to the engine that
 * owns its QP, and dispatched: requests to the responder, responses to the completer.
 * A port's burst is parsed whole, then its ICRCs are checked one after another (as the
 * transmit side writes them: doc/engine.md, "ICRCs by the burst"), then it is dispatched.
 */
#include <unistd.h>

#include <rte_ethdev.h>

#include <droce_wire_mbuf.h>

#include "engine_loc.h"

/* One received packet on its way through the stage. */
struct engine_rx_pkt {
	struct droce_wire_seg segs[8];
	unsigned int nseg;
	enum droce_wire_result r;
	struct droce_wire_pkt pkt;
};

/*
 * Parses m without its ICRC (engine_rx_icrcs checks it). A NIC that checks IPv4 header
 * checksums (RTE_ETH_RX_OFFLOAD_IPV4_CKSUM, doc/nics.md) marks each packet: a bad one is
 * dropped as the parser would drop it, a good one's is not summed again.
 */
static void
engine_rx_parse(struct droce_engine *e, struct rte_mbuf *m, struct engine_rx_pkt *rp)
{
	uint64_t ip_csum = m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK;
	uint32_t flags = e->parse_flags | DROCE_WIRE_PARSE_NO_ICRC;

	rp->nseg = droce_wire_mbuf_segs(m, rp->segs, RTE_DIM(rp->segs));
	if (rp->nseg == 0) {
		rp->r = DROCE_WIRE_RUNT;
		return;
	}
	if (ip_csum == RTE_MBUF_F_RX_IP_CKSUM_GOOD)
		flags |= DROCE_WIRE_PARSE_IP_CSUM_OK;
	rp->r = droce_wire_parse(rp->segs, rp->nseg, flags, &rp->pkt);
	if (ip_csum == RTE_MBUF_F_RX_IP_CKSUM_BAD && rp->pkt.ip_version == 4 &&
	    !droce_wire_result_is_foreign(rp->r)) {
		ENGINE_STAT(e, rx_nic_bad_ip_csum);
		rp->r = DROCE_WIRE_BAD_IP_CSUM;
	}
}

/* The ICRCs of a parsed burst, back to back; unless the NIC checked them (rx_no_icrc). */
static void
engine_rx_icrcs(struct droce_engine *e, struct engine_rx_pkt *rps, unsigned int n)
{
	unsigned int i;

	if (e->parse_flags & DROCE_WIRE_PARSE_NO_ICRC)
		return;
	for (i = 0; i < n; i++) {
		struct engine_rx_pkt *rp = &rps[i];

		if (rp->r == DROCE_WIRE_OK &&
		    !droce_wire_icrc_check(rp->segs, rp->nseg, &rp->pkt))
			rp->r = DROCE_WIRE_BAD_ICRC;
	}
}

static void
engine_dispatch(struct droce_engine *e, struct rte_mbuf *m, struct engine_rx_pkt *rp)
{
	struct droce_wire_pkt *pkt = &rp->pkt;
	struct droce_wire_seg *segs = rp->segs;
	unsigned int nseg = rp->nseg;
	enum droce_wire_result r = rp->r;
	struct droce_engine_qp *qp;
	uint32_t flags, dqpn;

	if (nseg == 0) {
		ENGINE_STAT(e, rx_malformed);
		goto drop;
	}
	if (r != DROCE_WIRE_OK) {
		if (droce_wire_result_is_foreign(r)) {
			ENGINE_STAT(e, rx_foreign);
			if (e->slow_rx != NULL) {
				if (rte_ring_mp_enqueue(e->slow_rx, m) == 0) {
					ENGINE_STAT(e, rx_slow);
					e->slow_rx_wake = true;
					return;
				}
				ENGINE_STAT(e, rx_slow_drop);
			}
		} else {
			ENGINE_STAT(e, rx_malformed);
			ENGINE_LOG(DEBUG, "engine %u: dropped: %s (%u segments, %u bytes)\n",
				   e->id, droce_wire_result_name(r), nseg, m->pkt_len);
		}
		goto drop;
	}
	flags = pkt->info->flags;
	dqpn = droce_bth_dqpn(droce_pkt_bth(pkt));
	/* No flow of QP1's is rate-controlled: a CNP for it is not the control thread's. */
	if ((flags & DROCE_OPF_CNP) && dqpn == DROCE_ENGINE_GSI_QPN) {
		ENGINE_STAT(e, rx_cnp_ignored);
		goto drop;
	}
	/* QP1 is the GSI: its MADs (connection management) are the control thread's. */
	if (dqpn == DROCE_ENGINE_GSI_QPN && e->slow_rx != NULL) {
		if (rte_ring_mp_enqueue(e->slow_rx, m) == 0) {
			ENGINE_STAT(e, rx_gsi);
			e->slow_rx_wake = true;
			return;
		}
		ENGINE_STAT(e, rx_slow_drop);
		goto drop;
	}
	/* To a multicast group: a copy for each QP attached (engine_mcast.c). */
	if (dqpn == DROCE_ENGINE_MCAST_QPN) {
		mcast_rx(e, m, pkt);
		goto drop;
	}
	qp = dev_qp(e->dev, dqpn);
	if (qp == NULL) {
		ENGINE_STAT(e, rx_no_qp);
		goto drop;
	}
	if (qp->engine != e) {
		/* Steering: the owner handles every packet of its QPs. */
		if (rte_ring_mp_enqueue(qp->engine->handoff, m) != 0) {
			ENGINE_STAT(e, rx_handoff_drop);
			goto drop;
		}
		e->handoff_to |= 1ull << qp->engine->id;
		ENGINE_STAT(e, rx_handoff_out);
		return;
	}
	ENGINE_QP_COUNT(qp, rdma_rx_packets);
	ENGINE_QP_ADD(qp, rdma_rx_bytes, m->pkt_len);
	if (flags & DROCE_OPF_READ)
		ENGINE_QP_COUNT(qp, rx_read_requests);
	else if (flags & (DROCE_OPF_ATOMIC | DROCE_OPF_ATOMIC_WRITE))
		ENGINE_QP_COUNT(qp, rx_atomic_requests);
	else if ((flags & (DROCE_OPF_WRITE | DROCE_OPF_REQUEST)) ==
		 (DROCE_OPF_WRITE | DROCE_OPF_REQUEST))
		ENGINE_QP_COUNT(qp, rx_write_requests);
	/* A CNP names the QP whose flow met congestion: its reaction point (A17.9.3). */
	if (flags & DROCE_OPF_CNP) {
		ENGINE_STAT(e, rx_cnp);
		cc_rx_cnp(qp);
		goto drop;
	}
	/* The QP's transport; an XRC initiator takes only responses, a target only requests. */
	if (pkt->info->transport != (qp->type == DROCE_SHM_QPT_RC ? DROCE_TRANSPORT_RC :
				    qp->type == DROCE_SHM_QPT_UC ? DROCE_TRANSPORT_UC :
				    qp->type == DROCE_SHM_QPT_UD ? DROCE_TRANSPORT_UD :
				    DROCE_TRANSPORT_XRC) ||
	    (qp->type == DROCE_SHM_QPT_XRC_SEND && (flags & DROCE_OPF_REQUEST)) ||
	    (qp->type == DROCE_SHM_QPT_XRC_RECV && !(flags & DROCE_OPF_REQUEST))) {
		ENGINE_STAT(e, rx_bad_opcode);
		goto drop;
	}
	/* Congestion experienced on the way here (RFC 3168): the notification point. */
	if (unlikely((droce_pkt_tclass(pkt) & DROCE_ECN_MASK) == DROCE_ECN_CE))
		cc_rx_ce(qp, pkt);
	if (flags & DROCE_OPF_REQUEST)
		resp_rx(qp, pkt, segs, nseg);
	else
		comp_rx(qp, pkt, segs, nseg);
drop:
	rte_pktmbuf_free(m);
}

unsigned int
rx_stage(struct droce_engine *e)
{
	struct rte_mbuf *pkts[ENGINE_BURST];
	struct engine_rx_pkt rps[ENGINE_BURST];
	unsigned int n, h, i;

	if (unlikely(e->nb_rx_stash != 0)) {
		/* taken from the port by the look before a sleep (engine_wait.c), counted */
		n = e->nb_rx_stash;
		memcpy(pkts, e->rx_stash, n * sizeof(pkts[0]));
		e->nb_rx_stash = 0;
	} else {
		n = likely(!atomic_load_explicit(&e->port_paused, memory_order_relaxed)) ?
			rte_eth_rx_burst(e->port_id, e->rx_queue, pkts, ENGINE_BURST) : 0;
		e->st.rx_pkts += n;
	}
	if (unlikely(e->rx_intr_check))
		engine_wait_rx_checked(e, n);
	if (unlikely(atomic_load_explicit(&e->tap, memory_order_relaxed) != NULL) && n != 0)
		engine_tap_burst(e, atomic_load_explicit(&e->tap, memory_order_acquire), pkts,
				 (uint16_t)n, true);
	for (i = 0; i < n; i++) {
		if (i + 1 < n)
			rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void *));
		engine_rx_parse(e, pkts[i], &rps[i]);
	}
	engine_rx_icrcs(e, rps, n);
	for (i = 0; i < n; i++)
		engine_dispatch(e, pkts[i], &rps[i]);
	/*
	 * The handoff ring holds packets another engine of this device received and checked,
	 * and our own loopback packets: their ICRCs are not checked again.
	 */
	h = rte_ring_sc_dequeue_burst(e->handoff, (void **)pkts, ENGINE_BURST, NULL);
	e->st.rx_handoff_in += h;
	for (i = 0; i < h; i++) {
		engine_rx_parse(e, pkts[i], &rps[i]);
		engine_dispatch(e, pkts[i], &rps[i]);
	}
	if (e->handoff_to != 0)
		engine_handoffs_wake(e);			/* engine_wait.c */
	if (e->slow_rx_wake) {
		uint64_t one = 1;

		e->slow_rx_wake = false;
		/* Best effort: a full counter already means "wake up". */
		if (e->slow_rx_wake_fd >= 0 && write(e->slow_rx_wake_fd, &one, sizeof(one)) < 0)
			ENGINE_STAT(e, wake_fail);
	}
	return n + h;
}
