/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The bottleneck queue, in front of the faults of each rx queue (fault_rx.c): a switch
 * egress port that is congested. What the port returns arrives at the time of the burst
 * and leaves through a link of rate Mb/s: each packet departs one serialisation time after
 * the later of its arrival and the departure of the packet before it, so an idle link
 * banks no credit, and a burst hands on those whose time has passed, in order. The buffer
 * holds the bytes not yet departed; a packet that does not fit is tail-dropped. At enqueue
 * (or, with ecn_dequeue, as it departs) an ECN-capable packet is marked CE with a
 * probability that rises with the depth (before it; behind it), RED's profile as DCQCN
 * deployments configure it (Kmin, Kmax, Pmax: ecn_min, ecn_max, ecn_pmax). Run by the lcore polling the queue, which owns q->bn: no locks, no timer.
 */

#include <stdbool.h>

#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_ip.h>

#include "fault_loc.h"

/*
 * A queued frame is no longer than the buffer, so a departure's remainder,
 * len * byte_rem + last_rem < (len + 1) * bits_per_s, fits in 64 bits (bn_depart).
 */
_Static_assert((uint64_t)FAULT_MAX_BUFFER + 1 <=
	       UINT64_MAX / ((uint64_t)FAULT_MAX_RATE_MBPS * FAULT_BITS_PER_MBIT),
	       "a frame's departure time overflows 64 bits");

/* One's complement sums are folded to 16 bits (RFC 1071). */
#define FAULT_CSUM_BITS 16u

uint32_t
fault_bn_nb_slots(const struct fault_cfg *cfg)
{
	if (cfg->rate_mbps == 0)
		return 0;
	return (uint32_t)(cfg->buffer / FAULT_BN_MIN_FRAME + 1);
}

void
fault_bn_setup(struct fault_queue *q, uint16_t queue)
{
	struct fault_bn *bn = &q->bn;
	uint64_t byte_bits_hz;

	if (q->cfg->rate_mbps == 0)
		return;
	/*
	 * A stream apart from the queue's (fault_queue_setup) and the other queues': marks are
	 * drawn as packets arrive, the faults' draws as they leave, which the clock decides,
	 * so one stream for both would make the marks depend on timing.
	 */
	bn->rng = q->cfg->seed ^
		    ((uint64_t)(RTE_MAX_QUEUES_PER_PORT + queue + 1) * FAULT_RNG_GAMMA);
	bn->nb_slots = fault_bn_nb_slots(q->cfg);
	bn->bits_per_s = q->cfg->rate_mbps * FAULT_BITS_PER_MBIT;
	byte_bits_hz = FAULT_BITS_PER_BYTE * rte_get_tsc_hz();
	bn->byte_tsc = byte_bits_hz / bn->bits_per_s;
	bn->byte_rem = byte_bits_hz % bn->bits_per_s;
}

/* Slot i of the queue, counted from its oldest packet. */
static struct fault_bn_slot *
bn_at(struct fault_queue *q, uint32_t i)
{
	uint32_t idx = q->bn.head + i;

	return &q->bn_slot[idx >= q->bn.nb_slots ? idx - q->bn.nb_slots : idx];
}

/*
 * The departure time of a len-byte frame queued at now: len byte times after the later of
 * now and the last departure, the remainder carried to the next frame.
 */
static uint64_t
bn_depart(struct fault_bn *bn, uint32_t len, uint64_t now)
{
	uint64_t rem;

	if (bn->last_depart < now) {
		bn->last_depart = now;
		bn->last_rem = 0;
	}
	rem = (uint64_t)len * bn->byte_rem + bn->last_rem;
	bn->last_depart += (uint64_t)len * bn->byte_tsc + rem / bn->bits_per_s;
	bn->last_rem = rem % bn->bits_per_s;
	return bn->last_depart;
}

/* An ECN field of ECT(0) or ECT(1): neither Not-ECT (0) nor CE (RFC 3168 section 5). */
static bool
bn_ect(uint32_t ecn, uint32_t ce)
{
	return ecn != 0 && ecn != ce;
}

static uint16_t
bn_csum_fold(uint32_t sum)
{
	sum = (sum & UINT16_MAX) + (sum >> FAULT_CSUM_BITS);
	sum = (sum & UINT16_MAX) + (sum >> FAULT_CSUM_BITS);
	return (uint16_t)sum;
}

/* Sets the ECN field to CE and updates the header checksum for it (RFC 1624 eqn. 3). */
static void
bn_ipv4_mark(struct rte_ipv4_hdr *ip)
{
	/* The 16-bit word of the header that holds the TOS byte, before and after. */
	uint16_t old = (uint16_t)(ip->version_ihl << FAULT_BITS_PER_BYTE |
				  ip->type_of_service);
	uint16_t new = (uint16_t)(old | RTE_IPV4_HDR_ECN_CE);

	ip->type_of_service |= RTE_IPV4_HDR_ECN_CE;
	/* HC' = ~(~HC + ~m + m') */
	ip->hdr_checksum = rte_cpu_to_be_16((uint16_t)~bn_csum_fold(
		(uint16_t)~rte_be_to_cpu_16(ip->hdr_checksum) + (uint16_t)~old + new));
}

static void
bn_ipv6_mark(struct rte_ipv6_hdr *ip)
{
	ip->vtc_flow = rte_cpu_to_be_32(rte_be_to_cpu_32(ip->vtc_flow) | RTE_IPV6_HDR_ECN_CE);
}

/*
 * The IP header of m if it is ECN-capable: IPv4 or IPv6 after Ethernet and at most one
 * 802.1Q tag, ECT(0) or ECT(1), all its headers in the first segment. NULL otherwise;
 * *v6 says which IP.
 */
static void *
bn_ect_hdr(struct rte_mbuf *m, bool *v6)
{
	uint32_t off = sizeof(struct rte_ether_hdr);
	const struct rte_ether_hdr *eth;
	uint16_t type;

	if (m->data_len < off)
		return NULL;
	eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	type = rte_be_to_cpu_16(eth->ether_type);
	if (type == RTE_ETHER_TYPE_VLAN) {
		const struct rte_vlan_hdr *vlan;

		if (m->data_len < off + sizeof(*vlan))
			return NULL;
		vlan = rte_pktmbuf_mtod_offset(m, const struct rte_vlan_hdr *, off);
		type = rte_be_to_cpu_16(vlan->eth_proto);
		off += sizeof(*vlan);
	}
	if (type == RTE_ETHER_TYPE_IPV4 && m->data_len >= off + sizeof(struct rte_ipv4_hdr)) {
		struct rte_ipv4_hdr *ip =
			rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, off);

		*v6 = false;
		return bn_ect(ip->type_of_service & RTE_IPV4_HDR_ECN_MASK,
			      RTE_IPV4_HDR_ECN_CE) ? ip : NULL;
	}
	if (type == RTE_ETHER_TYPE_IPV6 && m->data_len >= off + sizeof(struct rte_ipv6_hdr)) {
		struct rte_ipv6_hdr *ip =
			rte_pktmbuf_mtod_offset(m, struct rte_ipv6_hdr *, off);

		*v6 = true;
		return bn_ect(rte_be_to_cpu_32(ip->vtc_flow) & RTE_IPV6_HDR_ECN_MASK,
			      RTE_IPV6_HDR_ECN_CE) ? ip : NULL;
	}
	return NULL;
}

/*
 * RED's marking decision with the depth before the packet: never up to ecn_min, always
 * from ecn_max, in between with a probability rising linearly to ecn_pmax; r is the draw.
 */
static bool
bn_mark(const struct fault_cfg *cfg, uint64_t depth, uint64_t r)
{
	if (cfg->ecn_max == 0 || depth <= cfg->ecn_min)
		return false;
	if (depth >= cfg->ecn_max)
		return true;
	/* ecn_pmax <= 10^6 < 2^20, the depths <= FAULT_MAX_BUFFER = 2^24: no overflow. */
	return fault_hit(r, (uint32_t)(cfg->ecn_pmax * (depth - cfg->ecn_min) /
				       (cfg->ecn_max - cfg->ecn_min)));
}

/* ECN-capable m counted, and marked CE if RED says so at depth with draw r. */
static void
bn_ecn(struct fault_queue *q, struct rte_mbuf *m, uint64_t depth, uint64_t r)
{
	bool v6;
	void *ip = bn_ect_hdr(m, &v6);

	if (ip == NULL)
		return;
	q->st.bn_ect++;
	if (!bn_mark(q->cfg, depth, r))
		return;
	if (v6)
		bn_ipv6_mark(ip);
	else
		bn_ipv4_mark(ip);
	q->st.bn_marked++;
}

/*
 * Queues m at now, or tail-drops it: past the buffer, or no slot left (only frames shorter
 * than FAULT_BN_MIN_FRAME, or departed packets not polled, fill the slots first). Every
 * packet takes one draw, so the marks depend on the seed and the depths only.
 */
static void
bn_enqueue(struct fault_queue *q, struct rte_mbuf *m, uint64_t now)
{
	const struct fault_cfg *cfg = q->cfg;
	struct fault_bn *bn = &q->bn;
	uint64_t r = cfg->ecn_dequeue ? 0 : fault_rng_next(&bn->rng);
	uint32_t len = rte_pktmbuf_pkt_len(m);

	if (bn->depth + len > cfg->buffer || bn->nb == bn->nb_slots) {
		rte_pktmbuf_free(m);
		q->st.bn_dropped++;
		return;
	}
	if (!cfg->ecn_dequeue)
		bn_ecn(q, m, bn->depth, r);
	*bn_at(q, bn->nb) = (struct fault_bn_slot){ .m = m,
						    .depart_tsc = bn_depart(bn, len, now) };
	bn->nb++;
	bn->depth += len;
	q->st.bn_queued++;
	q->st.bn_depth_max = RTE_MAX(q->st.bn_depth_max, bn->depth);
}

/* The packets whose time has passed leave the link (and the depth), oldest first. */
static void
bn_drain(struct fault_queue *q, uint64_t now)
{
	struct fault_bn *bn = &q->bn;

	while (bn->nb_gone < bn->nb) {
		const struct fault_bn_slot *s = bn_at(q, bn->nb_gone);

		if (s->depart_tsc > now)
			break;
		bn->depth -= rte_pktmbuf_pkt_len(s->m);
		/* ecn_dequeue: a draw per departure, the depth it leaves behind */
		if (q->cfg->ecn_dequeue)
			bn_ecn(q, s->m, bn->depth, fault_rng_next(&bn->rng));
		q->st.bn_bytes += rte_pktmbuf_pkt_len(s->m);
		bn->nb_gone++;
	}
}

uint16_t
fault_bn_burst(struct fault_queue *q, struct rte_mbuf *pkts[], uint16_t nb,
	       struct rte_mbuf *out[], uint16_t max, uint64_t now)
{
	struct fault_bn *bn = &q->bn;
	uint16_t i, n;

	/* The depth each arrival sees is what has not left by now. */
	bn_drain(q, now);
	for (i = 0; i < nb; i++)
		bn_enqueue(q, pkts[i], now);
	/* At a high rate a small frame departs in the cycle it arrives. */
	bn_drain(q, now);
	n = (uint16_t)RTE_MIN(bn->nb_gone, (uint32_t)max);
	for (i = 0; i < n; i++)
		out[i] = bn_at(q, i)->m;
	bn->head = (bn->head + n) % bn->nb_slots;
	bn->nb -= n;
	bn->nb_gone -= n;
	return n;
}

void
fault_bn_free(struct fault_queue *q)
{
	uint32_t i;

	for (i = 0; i < q->bn.nb; i++)
		rte_pktmbuf_free(bn_at(q, i)->m);
	q->bn.nb = 0;
	q->bn.nb_gone = 0;
}
