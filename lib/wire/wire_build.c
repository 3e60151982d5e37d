/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Packet builder: headers from a per-flow template plus the per-packet BTH and
 * extension headers the opcode table names, then pad and ICRC.
 */

#include <errno.h>
#include <string.h>

#include "droce_wire_pkt.h"
#include "wire_loc.h"

static const uint8_t v4_mapped_prefix[12] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF
};

static bool
gid_is_v4(const uint8_t gid[16])
{
	return memcmp(gid, v4_mapped_prefix, sizeof(v4_mapped_prefix)) == 0;
}

int
droce_wire_tmpl_init(struct droce_wire_tmpl *tmpl, const struct droce_wire_addr *addr)
{
	struct droce_eth_hdr *eth = (struct droce_eth_hdr *)tmpl->bytes;
	uint8_t ttl = addr->hop_limit != 0 ? addr->hop_limit : 64;
	struct droce_udp_hdr *udp;
	bool v4 = gid_is_v4(addr->src_gid);
	uint16_t l3_type = v4 ? DROCE_ETHERTYPE_IPV4 : DROCE_ETHERTYPE_IPV6;

	if (v4 != gid_is_v4(addr->dst_gid))
		return -EINVAL;

	memset(tmpl, 0, sizeof(*tmpl));
	memcpy(eth->dst, addr->dst_mac, 6);
	memcpy(eth->src, addr->src_mac, 6);
	tmpl->l3_off = DROCE_ETH_HLEN;
	if (addr->vlan) {
		struct droce_vlan_hdr *vlan = (struct droce_vlan_hdr *)(eth + 1);

		droce_eth_set_type(eth, DROCE_ETHERTYPE_VLAN);
		vlan->tci = htobe16(addr->vlan_tci);
		vlan->ethertype = htobe16(l3_type);
		tmpl->l3_off += DROCE_VLAN_HLEN;
	} else {
		droce_eth_set_type(eth, l3_type);
	}

	if (v4) {
		struct droce_ipv4_hdr *ip = (struct droce_ipv4_hdr *)(tmpl->bytes + tmpl->l3_off);

		ip->ver_ihl = 0x45;
		ip->tos = addr->traffic_class;
		ip->frag = htobe16(DROCE_IPV4_DF);	/* A17.4.1: RoCEv2 never fragments */
		ip->ttl = ttl;
		ip->proto = DROCE_IPPROTO_UDP;
		memcpy(ip->src, addr->src_gid + 12, 4);
		memcpy(ip->dst, addr->dst_gid + 12, 4);
		/* total_len and csum are per packet: keep the sum of the rest. */
		tmpl->ipv4_partial_csum = wire_csum_add(0, ip, DROCE_IPV4_HLEN);
		tmpl->ip_version = 4;
		tmpl->l4_off = tmpl->l3_off + DROCE_IPV4_HLEN;
	} else {
		struct droce_ipv6_hdr *ip = (struct droce_ipv6_hdr *)(tmpl->bytes + tmpl->l3_off);

		ip->vtc_flow = htobe32(6u << 28 | (uint32_t)addr->traffic_class << 20 |
				       (addr->flow_label & 0xFFFFF));
		ip->next_hdr = DROCE_IPPROTO_UDP;
		ip->hop_limit = ttl;
		memcpy(ip->src, addr->src_gid, 16);
		memcpy(ip->dst, addr->dst_gid, 16);
		tmpl->ip_version = 6;
		tmpl->l4_off = tmpl->l3_off + DROCE_IPV6_HLEN;
	}

	udp = (struct droce_udp_hdr *)(tmpl->bytes + tmpl->l4_off);
	udp->sport = htobe16(addr->udp_sport);
	udp->dport = htobe16(DROCE_ROCEV2_UDP_PORT);
	udp->csum = 0;	/* A17.4.2: RoCEv2 does not use the UDP checksum */
	tmpl->len = tmpl->l4_off + DROCE_UDP_HLEN;
	return 0;
}

uint16_t
droce_wire_udp_sport(uint32_t lqpn, uint32_t rqpn)
{
	/* The flow label of the QPN pair, as Linux computes it for RoCEv2 ... */
	uint64_t fl = (uint64_t)lqpn * rqpn;

	fl ^= fl >> 20;
	fl ^= fl >> 40;
	fl &= 0xFFFFF;
	/* ... folded into the dynamic port range A17.4.2 reserves for RoCEv2 sources. */
	return (uint16_t)(((fl & 0x3FFF) ^ (fl >> 14)) | 0xC000);
}

/* Writes the extension headers of opcode info oi after the BTH at bth. */
static void
build_ext_hdrs(const struct droce_opcode_info *oi, const struct droce_wire_hdrs *h,
	       uint8_t *bth)
{
	uint32_t m = oi->ext_mask;

	if (m & DROCE_EXT_BIT(DROCE_EXT_DETH))
		droce_deth_set((void *)(bth + oi->ext_off[DROCE_EXT_DETH]), h->deth.qkey,
			       h->deth.src_qp);
	if (m & DROCE_EXT_BIT(DROCE_EXT_XRCETH))
		droce_xrceth_set((void *)(bth + oi->ext_off[DROCE_EXT_XRCETH]), h->xrc_srqn);
	if (m & DROCE_EXT_BIT(DROCE_EXT_FETH))
		droce_feth_set((void *)(bth + oi->ext_off[DROCE_EXT_FETH]), h->feth.sel,
			       h->feth.plt);
	if (m & DROCE_EXT_BIT(DROCE_EXT_RETH))
		droce_reth_set((void *)(bth + oi->ext_off[DROCE_EXT_RETH]), h->reth.va,
			       h->reth.rkey, h->reth.len);
	if (m & DROCE_EXT_BIT(DROCE_EXT_ATMETH))
		droce_atmeth_set((void *)(bth + oi->ext_off[DROCE_EXT_ATMETH]), h->atomic.va,
				 h->atomic.rkey, h->atomic.swap_add, h->atomic.compare);
	if (m & DROCE_EXT_BIT(DROCE_EXT_AETH))
		droce_aeth_set((void *)(bth + oi->ext_off[DROCE_EXT_AETH]), h->aeth.syndrome,
			       h->aeth.msn);
	if (m & DROCE_EXT_BIT(DROCE_EXT_ATMACK))
		droce_atmack_set((void *)(bth + oi->ext_off[DROCE_EXT_ATMACK]),
				 h->atomic_ack_orig);
	if (m & DROCE_EXT_BIT(DROCE_EXT_IMMDT))
		droce_immdt_set_be((void *)(bth + oi->ext_off[DROCE_EXT_IMMDT]), h->imm_be);
	if (m & DROCE_EXT_BIT(DROCE_EXT_IETH))
		droce_ieth_set((void *)(bth + oi->ext_off[DROCE_EXT_IETH]), h->ieth_rkey);
	if (m & DROCE_EXT_BIT(DROCE_EXT_CNP_RSVD))
		memset(bth + oi->ext_off[DROCE_EXT_CNP_RSVD], 0, DROCE_CNP_RSVD_LEN);
}

int
droce_wire_build_hdrs(const struct droce_wire_tmpl *tmpl, const struct droce_wire_hdrs *h,
		      uint32_t payload_len, void *hdr, uint32_t cap)
{
	const struct droce_opcode_info *oi = droce_opcode_info(h->opcode);
	uint8_t *out = hdr;
	unsigned int pad = droce_wire_pad(payload_len);
	uint32_t hdr_len, udp_len;

	if (oi == NULL || payload_len > DROCE_WIRE_MAX_PAYLOAD)
		return -EINVAL;
	if (!(oi->flags & DROCE_OPF_PAYLOAD) && payload_len != 0)
		return -EINVAL;
	if (oi->payload_fixed != 0 && payload_len != oi->payload_fixed)
		return -EINVAL;
	/* 9.2.4: only a LAST or ONLY packet pads; FIRST/MIDDLE carry whole words (MTU). */
	if (pad != 0 && !(oi->flags & DROCE_OPF_LAST))
		return -EINVAL;
	hdr_len = tmpl->len + oi->hdr_len;
	if (cap < hdr_len)
		return -ENOSPC;

	/*
	 * The template in one fixed-size copy when the buffer has room: vector moves, where a
	 * copy of tmpl->len bytes is a rep movs whose start-up costs more than its 42..66
	 * bytes. What lies past the template is overwritten below, or by the payload, or is
	 * past the packet (droce_wire_build_hdrs' contract).
	 */
	if (cap >= DROCE_WIRE_TMPL_MAX)
		memcpy(out, tmpl->bytes, DROCE_WIRE_TMPL_MAX);
	else
		memcpy(out, tmpl->bytes, tmpl->len);
	udp_len = DROCE_UDP_HLEN + oi->hdr_len + payload_len + pad + DROCE_ICRC_LEN;
	droce_udp_set_len((void *)(out + tmpl->l4_off), udp_len);
	if (tmpl->ip_version == 4) {
		struct droce_ipv4_hdr *ip = (struct droce_ipv4_hdr *)(out + tmpl->l3_off);
		uint16_t total = DROCE_IPV4_HLEN + udp_len;

		droce_ipv4_set_total_len(ip, total);
		ip->csum = htobe16(wire_csum_fold(tmpl->ipv4_partial_csum + total));
	} else {
		droce_ipv6_set_payload_len((void *)(out + tmpl->l3_off), udp_len);
	}

	droce_bth_set((struct droce_bth *)(out + tmpl->len), h->opcode, h->se, h->mig, pad,
		      h->pkey, h->fecn, h->becn, h->dqpn, h->ackreq, h->psn);
	build_ext_hdrs(oi, h, out + tmpl->len);
	return (int)hdr_len;
}

void
droce_wire_build_trailer(const struct droce_wire_tmpl *tmpl,
			 const struct droce_wire_seg *segs, unsigned int nseg, void *trailer)
{
	const struct droce_bth *bth =
		(const struct droce_bth *)((const uint8_t *)segs[0].data + tmpl->len);
	unsigned int pad = droce_bth_pad(bth);
	uint8_t *out = trailer;
	uint32_t len = 0, crc;
	unsigned int i;

	for (i = 0; i < nseg; i++)
		len += segs[i].len;
	memset(out, 0, pad);
	crc = droce_icrc_calc(segs, nseg, tmpl->l3_off, len);
	crc = wire_crc_update(crc, out, pad);	/* pad bytes are covered too */
	/* The ICRC goes out least-significant byte first (A17.3.3). */
	out[pad + 0] = crc & 0xFF;
	out[pad + 1] = (crc >> 8) & 0xFF;
	out[pad + 2] = (crc >> 16) & 0xFF;
	out[pad + 3] = crc >> 24;
}

void
droce_wire_icrc_fill(void *pkt, uint32_t l3_off, uint32_t icrc_off)
{
	struct droce_wire_seg seg = { .data = pkt, .len = icrc_off };
	uint8_t *out = (uint8_t *)pkt + icrc_off;
	uint32_t crc = droce_icrc_calc(&seg, 1, l3_off, icrc_off);

	/* Least-significant byte first (A17.3.3), as droce_wire_build_trailer(). */
	out[0] = crc & 0xFF;
	out[1] = (crc >> 8) & 0xFF;
	out[2] = (crc >> 16) & 0xFF;
	out[3] = crc >> 24;
}

int
droce_wire_build(const struct droce_wire_tmpl *tmpl, const struct droce_wire_hdrs *h,
		 const struct droce_wire_seg *payload, unsigned int npayload, void *out,
		 uint32_t cap)
{
	uint8_t *pkt = out;
	uint32_t payload_len = 0, off;
	struct droce_wire_seg whole;
	unsigned int i;
	int hdr_len;

	for (i = 0; i < npayload; i++) {
		/* Checked before adding, so no list of lengths can wrap the sum. */
		if (payload[i].len > DROCE_WIRE_MAX_PAYLOAD - payload_len)
			return -EINVAL;
		payload_len += payload[i].len;
	}
	hdr_len = droce_wire_build_hdrs(tmpl, h, payload_len, pkt, cap);
	if (hdr_len < 0)
		return hdr_len;
	off = (uint32_t)hdr_len;
	if (cap - off < payload_len + droce_wire_pad(payload_len) + DROCE_ICRC_LEN)
		return -ENOSPC;
	for (i = 0; i < npayload; i++) {
		if (payload[i].len == 0)
			continue;	/* data may be NULL */
		memcpy(pkt + off, payload[i].data, payload[i].len);
		off += payload[i].len;
	}
	whole.data = pkt;
	whole.len = off;
	droce_wire_build_trailer(tmpl, &whole, 1, pkt + off);
	return (int)(off + droce_wire_pad(payload_len) + DROCE_ICRC_LEN);
}
