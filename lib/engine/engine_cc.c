/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Congestion control on the engine (doc/congestion.md): a path's DSCP, ECN and 802.1p
 * priority; the notification point, which answers CE-marked packets with CNPs (RoCEv2
 * Annex A17.9.3); the reaction point, lib/cc's DCQCN rate machine per QP, fed by CNPs and
 * the bytes sent; and the pacer, which holds a limited QP to its rate by a deadline on
 * the engine's timer list, never by spinning. Runs on the QP's engine, except
 * cc_path_qos (the control thread, as it resolves a path) and droce_engine_qp_cc_get.
 */
#include <string.h>

#include "engine_loc.h"

#define CC_NS_PER_S	1000000000ull
#define KBPS_PER_MBPS	1000u
/* The link speed when the port does not say (net_ring, net_memif): 100 Gb/s. */
#define CC_LINE_MBPS_DEFAULT	100000u
/*
 * A paced QP may run this far behind its schedule and catch up at full speed: the engine
 * comes round to a QP late by a loop pass or a burst of other QPs, and without the slack
 * each late turn would be rate lost for good.
 */
#define CC_PACE_SLACK_US	10u

void
cc_engine_init(struct droce_engine *e, const struct droce_engine_conf *conf)
{
	if (conf->cc != NULL)
		e->cc = *conf->cc;
	else
		droce_cc_params_default(&e->cc);
	e->cc_line_kbps = (uint64_t)(conf->line_mbps != 0 ? conf->line_mbps : CC_LINE_MBPS_DEFAULT) *
			  KBPS_PER_MBPS;
	e->cc_slack_tsc = e->tsc_hz / 1000000 * CC_PACE_SLACK_US;
}

/* The engine's clock in nanoseconds, for lib/cc. */
static uint64_t
cc_now_ns(const struct droce_engine *e)
{
	return (uint64_t)((unsigned __int128)e->now * CC_NS_PER_S / e->tsc_hz);
}

void
cc_path_qos(const struct droce_engine *e, uint8_t sl, bool reacts, struct droce_wire_addr *a)
{
	const struct droce_cc_params *p = &e->cc;
	uint8_t dscp = a->traffic_class >> 2, ecn = a->traffic_class & DROCE_ECN_MASK, prio;

	/* The QP's traffic class, else the port's RoCE DSCP (a ConnectX's roce_tos). */
	if (dscp == 0)
		dscp = (uint8_t)p->roce_dscp;
	prio = droce_cc_prio(sl, dscp);
	/* RFC 3168 section 5: a sender never sets CE itself; ECT(0) stands for it. */
	if (ecn == DROCE_ECN_CE)
		ecn = DROCE_ECN_ECT0;
	/*
	 * ECN-capable where the reaction point will answer CNPs (unless the program chose):
	 * a connected QP's path. A UD AH's packets have no connected sender to notify (no
	 * CNP goes for UD), so marking them instead of dropping would only hide their excess.
	 */
	if (ecn == DROCE_ECN_NOT_ECT && reacts && (p->roce_rp_enable & (1u << prio)))
		ecn = DROCE_ECN_ECT0;
	a->traffic_class = (uint8_t)(dscp << 2 | ecn);
	if (p->vlan != DROCE_CC_NO_VLAN) {
		a->vlan = true;
		a->vlan_tci = (uint16_t)(prio << 13 | p->vlan);
	}
}

int
cc_qp_path(struct droce_engine_qp *qp, const struct droce_wire_addr *a, uint8_t sl)
{
	struct droce_engine *e = qp->engine;
	struct droce_wire_addr c = *a;
	uint8_t prio = droce_cc_prio(sl, a->traffic_class >> 2);

	/* CNPs: the CNP DSCP, not ECN-capable (A17.9.3), the CNP priority when tagged. */
	c.traffic_class = (uint8_t)(e->cc.cnp_dscp << 2);
	if (c.vlan)
		c.vlan_tci = (uint16_t)(e->cc.cnp_802p_prio << 13 | (c.vlan_tci & DROCE_VLAN_VID_MASK));
	if (droce_wire_tmpl_init(&qp->cc.cnp_tmpl, &c) != 0)
		return -EINVAL;
	qp->cc.prio = prio;
	qp->cc.rp = (a->traffic_class & DROCE_ECN_MASK) != DROCE_ECN_NOT_ECT &&
		    (e->cc.roce_rp_enable & (1u << prio));
	cc_qp_restart(qp);
	return 0;
}

void
cc_qp_restart(struct droce_engine_qp *qp)
{
	struct droce_engine *e = qp->engine;
	struct droce_cc_rp *rp = &qp->cc.rp_state;
	uint64_t cuts = rp->cuts, cnps = rp->cnps;

	/* A new path starts unlimited; the QP's counters go on (droce-ctl qps). */
	droce_cc_rp_init(&e->cc, rp, e->cc_line_kbps);
	rp->cuts = cuts;
	rp->cnps = cnps;
	qp->cc.next_tsc = 0;
	qp->cc.pace_deadline = 0;
	memset(&qp->cc.np, 0, sizeof(qp->cc.np));
}

/* The 802.1p priority a packet came with: its tag's, else its DSCP's. */
static uint8_t
cc_pkt_prio(const struct droce_wire_pkt *pkt)
{
	if (pkt->vlan)
		return (uint8_t)(pkt->vlan_tci >> 13);
	return (uint8_t)(droce_pkt_tclass(pkt) >> (2 + DROCE_CC_DSCP_PRIO_SHIFT));
}

void
cc_rx_ce(struct droce_engine_qp *qp, const struct droce_wire_pkt *pkt)
{
	struct droce_engine *e = qp->engine;
	struct droce_cc_np np_before;
	struct droce_wire_hdrs h;
	struct rte_mbuf *m;

	ENGINE_STAT(e, rx_ce);
	ENGINE_QP_COUNT(qp, np_ecn_marked_roce_packets);
	/*
	 * RC and UC: the flow's sender is the connected QP, reached on the path RTR set up
	 * (RESET, INIT and ERR have none to answer on). UD would need the DETH's.
	 */
	if (qp->type == DROCE_SHM_QPT_UD || qp->state < DROCE_SHM_QPS_RTR ||
	    qp->state == DROCE_SHM_QPS_ERR || !(e->cc.roce_np_enable & (1u << cc_pkt_prio(pkt))))
		return;
	np_before = qp->cc.np;
	if (!droce_cc_np_ce(&e->cc, &qp->cc.np, cc_now_ns(e)))
		return;
	/* A17.9.3: BTH to the sender's QP, BECN set, PSN 0, 16 reserved zero bytes. */
	memset(&h, 0, sizeof(h));
	h.opcode = DROCE_OP_CNP;
	h.pkey = DROCE_PKEY_DEFAULT;
	h.becn = true;
	h.dqpn = qp->dest_qpn;
	if (engine_pkt_start(e, &qp->cc.cnp_tmpl, &h, 0, &m) == NULL) {
		qp->cc.np = np_before;	/* not sent: the next CE-marked packet may try */
		return;
	}
	engine_pkt_finish(e, qp, &qp->cc.cnp_tmpl, m);
	ENGINE_STAT(e, cnp_sent);
	ENGINE_QP_COUNT(qp, np_cnp_sent);
}

void
cc_rx_cnp(struct droce_engine_qp *qp)
{
	struct droce_engine *e = qp->engine;

	if (!qp->cc.rp) {
		ENGINE_STAT(e, rx_cnp_ignored);
		ENGINE_QP_COUNT(qp, rp_cnp_ignored);
		return;
	}
	ENGINE_QP_COUNT(qp, rp_cnp_handled);
	droce_cc_rp_cnp(&e->cc, &qp->cc.rp_state, cc_now_ns(e));
}

void
cc_sent(struct droce_engine_qp *qp, uint32_t bytes)
{
	struct droce_engine *e = qp->engine;
	struct droce_cc_rp *rp = &qp->cc.rp_state;
	uint64_t start;

	droce_cc_rp_sent(&e->cc, rp, bytes, cc_now_ns(e));
	if (!rp->limited)
		return;
	/* This packet's time on the wire at the current rate, from where the last ended. */
	start = qp->cc.next_tsc + e->cc_slack_tsc < e->now ? e->now - e->cc_slack_tsc :
		qp->cc.next_tsc;
	qp->cc.next_tsc = start + (uint64_t)bytes * 8u * e->tsc_hz / (rp->rc_kbps * 1000u);
}

int
droce_engine_qp_cc_get(const struct droce_engine_qp *qp, struct droce_engine_qp_cc *info)
{
	const struct droce_cc_rp *rp = &qp->cc.rp_state;

	memset(info, 0, sizeof(*info));
	info->qpn = qp->qpn;
	info->engine = qp->engine->id;
	info->type = qp->type;
	info->state = qp->state;
	info->prio = qp->cc.prio;
	info->rp = qp->cc.rp;
	info->limited = rp->limited;
	info->rate_kbps = rp->rc_kbps;
	info->target_kbps = rp->rt_kbps;
	info->alpha = rp->alpha >> DROCE_CC_ALPHA_SHIFT;
	info->ce_rcvd = qp->cnt.np_ecn_marked_roce_packets;
	info->cnp_sent = qp->cnt.np_cnp_sent;
	info->cnp_rcvd = qp->cnt.rp_cnp_handled + qp->cnt.rp_cnp_ignored;
	info->rate_cuts = rp->cuts;
	return 0;
}
