/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * QP1, the General Services Interface (IB 13.5), on every port: the control thread's own
 * UD endpoint for Communication Management MADs. Engines hand every RoCEv2 packet to QP1
 * to slow_rx (lib/engine: rx_gsi); droced_ports_rx() gives them here. What QP1 accepts is
 * what IB 13.5.3 lets through to the GSI: a UD SEND ONLY with the GSI's well-known Q_Key
 * and the default partition, carrying one 256-byte MAD of the CM class. The rest is
 * dropped and counted by reason. MADs go out the same way, from QP1 to the peer's QP1, on
 * the port's slow_tx ring; a MAD to one of this droced's own GIDs never touches the wire:
 * it waits in a small queue that droced_gsi_flush() hands to the CM after the current
 * request, so the CM is never entered from inside itself.
 */

#include <errno.h>
#include <string.h>

#include <rte_mbuf.h>
#include <rte_ring.h>

#include <droce_wire_mbuf.h>

#include "droced_loc.h"

/* MADs to our own GIDs waiting for droced_gsi_flush() (a power of two). */
#define GSI_LOCAL_RING		1024

struct gsi_local {
	uint32_t port;
	uint8_t sgid[16];
	uint8_t dgid[16];
	uint8_t mad[DROCE_CM_MAD_LEN];
};

static struct gsi_local local_q[GSI_LOCAL_RING];
/* The CM's, for every CM MAD QP1 takes (droced_gsi_set_handler). */
static droced_gsi_mad_fn mad_handler;
static uint32_t local_prod, local_cons;
static uint32_t tx_psn;

const char *const droced_gsi_bad_names[DROCED_GSI_BAD_COUNT] = {
#define GSI_BAD_NAME(name, desc) #name,
	DROCED_GSI_BAD_LIST(GSI_BAD_NAME)
#undef GSI_BAD_NAME
};

static void
bad(struct droced_port *p, enum droced_gsi_bad why)
{
	p->d->gsi.rx_bad[why]++;
}

/* The GID of an IP address in a parsed packet: IPv4-mapped for IPv4 (RoCEv2 A17.8). */
static void
pkt_gids(const struct droce_wire_pkt *pkt, uint8_t sgid[16], uint8_t dgid[16])
{
	const struct droce_ipv4_hdr *v4 = droce_pkt_ipv4(pkt);
	const struct droce_ipv6_hdr *v6 = droce_pkt_ipv6(pkt);

	if (v4 != NULL) {
		droce_gid_from_ipv4(sgid, v4->src);
		droce_gid_from_ipv4(dgid, v4->dst);
	} else {
		memcpy(sgid, v6->src, 16);
		memcpy(dgid, v6->dst, 16);
	}
}

/* The MAD's bytes, parsed, to the CM; a MAD the CM class parser refuses is counted. */
static void
gsi_deliver(struct droced_port *p, const uint8_t sgid[16], const uint8_t dgid[16],
	    const uint8_t smac[6], const uint8_t *mad)
{
	struct droce_cm_msg m;

	if (droce_cm_mad_parse(mad, DROCE_CM_MAD_LEN, &m) != DROCE_CM_OK) {
		bad(p, DROCED_GSI_BAD_MAD);
		return;
	}
	p->d->gsi.rx_mads++;
	mad_handler(p, sgid, dgid, smac, &m);
}

void
droced_gsi_set_handler(droced_gsi_mad_fn fn)
{
	mad_handler = fn;
}

bool
droced_gsi_rx(struct droced_port *p, struct rte_mbuf *m)
{
	struct droce_wire_seg segs[8];
	struct droce_wire_pkt pkt;
	const struct droce_deth *deth;
	const struct droce_bth *bth;
	uint8_t sgid[16], dgid[16], smac[6], buf[DROCE_CM_MAD_LEN];
	const uint8_t *mad;
	unsigned int nseg = droce_wire_mbuf_segs(m, segs, RTE_DIM(segs));

	if (nseg == 0 ||
	    droce_wire_parse(segs, nseg, p->cfg->rx_no_icrc ? DROCE_WIRE_PARSE_NO_ICRC : 0,
			     &pkt) != DROCE_WIRE_OK)
		return false;
	bth = droce_pkt_bth(&pkt);
	if (droce_bth_dqpn(bth) != DROCE_CM_GSI_QPN)
		return false;
	/* From here on the packet is QP1's: consumed, taken or dropped. */
	if (droce_bth_opcode(bth) != DROCE_OP_UD_SEND_ONLY) {
		bad(p, DROCED_GSI_BAD_OPCODE);
		goto out;
	}
	deth = droce_pkt_deth(&pkt);
	/* C10-15: a GSI packet's P_Key may be either membership of the default partition. */
	if ((droce_bth_pkey(bth) & DROCE_PKEY_BASE_MASK) !=
	    (DROCE_PKEY_DEFAULT & DROCE_PKEY_BASE_MASK)) {
		bad(p, DROCED_GSI_BAD_PKEY);
		goto out;
	}
	if (droce_deth_qkey(deth) != DROCE_CM_GSI_QKEY) {
		bad(p, DROCED_GSI_BAD_QKEY);
		goto out;
	}
	if (pkt.payload_len < DROCE_CM_MAD_LEN) {
		bad(p, DROCED_GSI_BAD_LEN);
		goto out;
	}
	pkt_gids(&pkt, sgid, dgid);
	if (droce_net_gid_find(p->net, dgid) < 0) {
		bad(p, DROCED_GSI_BAD_DGID);
		goto out;
	}
	memcpy(smac, ((const struct droce_eth_hdr *)pkt.hdr)->src, 6);
	mad = rte_pktmbuf_read(m, pkt.payload_off, DROCE_CM_MAD_LEN, buf);
	if (mad == NULL) {
		bad(p, DROCED_GSI_BAD_LEN);
		goto out;
	}
	gsi_deliver(p, sgid, dgid, smac, mad);
out:
	rte_pktmbuf_free(m);
	return true;
}

/* The port holding GID gid, or NULL. */
static struct droced_port *
own_gid_port(struct droced *d, const uint8_t gid[16])
{
	uint32_t i;

	for (i = 0; i < d->nb_ports; i++)
		if (d->ports[i].net != NULL && droce_net_gid_find(d->ports[i].net, gid) >= 0)
			return &d->ports[i];
	return NULL;
}

int
droced_gsi_send(struct droced_port *p, const uint8_t sgid[16], const uint8_t dgid[16],
		const uint8_t dmac[6], uint8_t tclass, const uint8_t mad[DROCE_CM_MAD_LEN])
{
	struct droced_port *own = own_gid_port(p->d, dgid);
	struct droce_wire_addr a;
	struct droce_wire_tmpl tmpl;
	struct droce_wire_hdrs h;
	struct droce_wire_seg seg = { .data = mad, .len = DROCE_CM_MAD_LEN };
	struct rte_mbuf *m;
	char *buf;
	int len;

	if (own != NULL) {
		struct gsi_local *l;

		if (local_prod - local_cons >= GSI_LOCAL_RING) {
			p->d->gsi.tx_drop++;
			return -ENOBUFS;
		}
		l = &local_q[local_prod++ & (GSI_LOCAL_RING - 1)];
		l->port = own->index;
		memcpy(l->sgid, sgid, 16);
		memcpy(l->dgid, dgid, 16);
		memcpy(l->mad, mad, DROCE_CM_MAD_LEN);
		p->d->gsi.tx_mads++;
		p->d->gsi.tx_local++;
		return 0;
	}
	memset(&a, 0, sizeof(a));
	memcpy(a.src_mac, p->mac, 6);
	memcpy(a.dst_mac, dmac, 6);
	memcpy(a.src_gid, sgid, 16);
	memcpy(a.dst_gid, dgid, 16);
	a.traffic_class = tclass;
	a.hop_limit = DROCED_ROUTE_HOP_LIMIT;
	a.udp_sport = droce_wire_udp_sport(DROCE_CM_GSI_QPN, DROCE_CM_GSI_QPN);
	memset(&h, 0, sizeof(h));
	h.opcode = DROCE_OP_UD_SEND_ONLY;
	h.pkey = DROCE_PKEY_DEFAULT;
	h.dqpn = DROCE_CM_GSI_QPN;
	h.psn = tx_psn++ & DROCE_PSN_MASK;
	h.deth.qkey = DROCE_CM_GSI_QKEY;
	h.deth.src_qp = DROCE_CM_GSI_QPN;
	if (droce_wire_tmpl_init(&tmpl, &a) != 0) {
		p->d->gsi.tx_drop++;
		return -EINVAL;
	}
	m = rte_pktmbuf_alloc(p->mp);
	if (m == NULL) {
		p->d->gsi.tx_drop++;
		return -ENOBUFS;
	}
	buf = rte_pktmbuf_append(m, DROCE_WIRE_HDR_MAX + DROCE_CM_MAD_LEN + DROCE_ICRC_LEN);
	len = buf == NULL ? -ENOSPC :
	      droce_wire_build(&tmpl, &h, &seg, 1, buf,
			       DROCE_WIRE_HDR_MAX + DROCE_CM_MAD_LEN + DROCE_ICRC_LEN);
	if (len < 0 || rte_pktmbuf_trim(m, m->data_len - (uint32_t)len) != 0 ||
	    rte_ring_sp_enqueue(p->slow_tx, m) != 0) {
		rte_pktmbuf_free(m);
		p->d->gsi.tx_drop++;
		return len < 0 ? len : -ENOBUFS;
	}
	p->d->gsi.tx_mads++;
	droced_port_tx_wake(p);
	return 0;
}

unsigned int
droced_gsi_flush(struct droced *d)
{
	static const uint8_t no_mac[6];
	unsigned int n = 0;

	/* Bounded: two ends on this droced answering each other must not hold the loop. */
	while (local_cons != local_prod && n < GSI_LOCAL_RING) {
		struct gsi_local l = local_q[local_cons++ & (GSI_LOCAL_RING - 1)];

		gsi_deliver(&d->ports[l.port], l.sgid, l.dgid, no_mac, l.mad);
		n++;
	}
	return n;
}
