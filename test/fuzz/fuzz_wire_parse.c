/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * libFuzzer target for droce_wire_parse(): any bytes, cut into any segments (empty ones
 * included), in Ethernet or L3 mode, with or without the ICRC check. The parser says it
 * is safe on any bytes (droce_wire_pkt.h): ASan and UBSan check that, with every segment
 * in its own allocation so a read past a segment's end is caught. The checks below hold
 * the view it returns to the bytes and to itself, and abort() on any mismatch.
 * Input layout: fuzz_wire_input.h.
 */

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "droce_wire.h"
#include "fuzz_wire_input.h"

#define CHECK(c) do { \
		if (!(c)) { \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
			abort(); \
		} \
	} while (0)

#define MIN(a, b) ((a) < (b) ? (a) : (b))

/* zlib's CRC-32: the reflected IEEE polynomial (A17.3.3), for the reference ICRC. */
#define REF_CRC_POLY		0xEDB88320u
/* A17.3.3: eight bytes of ones stand in for the LRH's variant fields. */
#define REF_ICRC_LRH_BYTES	8
/* IPv6: the version nibble is covered, traffic class and flow label are not. */
#define REF_IPV6_VTC_FIRST_MASK	0x0F

/* Everything read from a parsed view ends up here, so no read is optimised away. */
static volatile uint64_t sink;

struct fuzz_input {
	uint32_t parse_flags;
	unsigned int nseg;
	uint32_t seg_len[FUZZ_MAX_SEGS];
	uint16_t copy_off;
	uint16_t copy_cap;
	uint8_t resplit;
	const uint8_t *pkt;	/* the packet bytes, contiguous: the segments concatenated */
	uint32_t len;
};

static int
decode_input(const uint8_t *data, size_t size, struct fuzz_input *in)
{
	uint32_t left;
	unsigned int i;

	if (size < FUZZ_CTL_LEN || size - FUZZ_CTL_LEN > UINT32_MAX)
		return -1;
	in->parse_flags = (data[0] & FUZZ_CTL_L3 ? DROCE_WIRE_PARSE_L3 : 0) |
			  (data[0] & FUZZ_CTL_NO_ICRC ? DROCE_WIRE_PARSE_NO_ICRC : 0);
	in->nseg = fuzz_ctl_nseg(data[0]);
	in->copy_off = fuzz_le16(data + 1);
	in->copy_cap = fuzz_le16(data + 3);
	in->resplit = data[5];
	in->pkt = data + FUZZ_CTL_LEN;
	in->len = (uint32_t)(size - FUZZ_CTL_LEN);

	left = in->len;
	for (i = 0; i + 1 < in->nseg; i++) {
		in->seg_len[i] = fuzz_le16(data + FUZZ_SPLIT_OFF + i * FUZZ_SPLIT_LEN) % (left + 1);
		left -= in->seg_len[i];
	}
	in->seg_len[in->nseg - 1] = left;
	return 0;
}

static uint32_t
le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Two views agree on everything but where the first segment is. */
static int
views_equal(const struct droce_wire_pkt *a, const struct droce_wire_pkt *b)
{
	return a->info == b->info && a->layers == b->layers && a->vlan == b->vlan &&
	       a->vlan_tci == b->vlan_tci && a->ip_version == b->ip_version &&
	       a->l3_off == b->l3_off && a->l4_off == b->l4_off && a->bth_off == b->bth_off &&
	       a->payload_off == b->payload_off && a->payload_len == b->payload_len &&
	       a->pad == b->pad && a->icrc_off == b->icrc_off && a->len == b->len &&
	       a->icrc == b->icrc && a->icrc_calc == b->icrc_calc;
}

/* What pkt->layers promises holds for every outcome, OK or not. */
static void
check_layers(enum droce_wire_result r, const struct droce_wire_pkt *pkt,
	     const struct fuzz_input *in, const struct droce_wire_seg *segs)
{
	uint32_t seg0 = segs[0].len;
	uint32_t l2_len = DROCE_ETH_HLEN + (pkt->vlan ? DROCE_VLAN_HLEN : 0);
	int l3_mode = (in->parse_flags & DROCE_WIRE_PARSE_L3) != 0;

	CHECK((unsigned int)r < DROCE_WIRE_RESULT_COUNT);
	CHECK(droce_wire_result_str(r) != NULL);
	CHECK(droce_wire_result_name(r) != NULL);
	CHECK(pkt->hdr == segs[0].data);

	if (pkt->layers & DROCE_WIRE_HAVE_L2) {
		CHECK(!l3_mode);
		CHECK(seg0 >= l2_len);
	} else {
		CHECK(!pkt->vlan);
	}
	if (pkt->layers & DROCE_WIRE_HAVE_L3) {
		CHECK(l3_mode || (pkt->layers & DROCE_WIRE_HAVE_L2));
		CHECK(pkt->ip_version == 4 || pkt->ip_version == 6);
		CHECK(pkt->l3_off == (l3_mode ? 0 : l2_len));
		CHECK(seg0 >= pkt->l3_off + (pkt->ip_version == 4 ? DROCE_IPV4_HLEN :
							     DROCE_IPV6_HLEN));
	}
	if (pkt->layers & DROCE_WIRE_HAVE_L4) {
		CHECK(pkt->layers & DROCE_WIRE_HAVE_L3);
		CHECK(pkt->l4_off >= pkt->l3_off + DROCE_IPV4_HLEN);
		/* The port is there; the rest of the UDP header unless it is cut short. */
		CHECK(seg0 >= pkt->l4_off + (uint32_t)offsetof(struct droce_udp_hdr, len));
		CHECK(droce_udp_dport(droce_pkt_udp(pkt)) == DROCE_ROCEV2_UDP_PORT);
		if (r != DROCE_WIRE_TRUNCATED && r != DROCE_WIRE_HDR_SPLIT)
			CHECK(seg0 >= pkt->l4_off + (uint32_t)DROCE_UDP_HLEN);
	}
	if (pkt->layers & DROCE_WIRE_HAVE_BTH) {
		CHECK(pkt->layers & DROCE_WIRE_HAVE_L4);
		CHECK(pkt->bth_off == pkt->l4_off + DROCE_UDP_HLEN);
		CHECK(seg0 >= pkt->bth_off + (uint32_t)DROCE_BTH_LEN);
	}
	/* The whole view exists exactly when the outcome is OK or BAD_ICRC. */
	if (pkt->layers & DROCE_WIRE_HAVE_ALL)
		CHECK(pkt->layers & DROCE_WIRE_HAVE_BTH);
	CHECK(!!(pkt->layers & DROCE_WIRE_HAVE_ALL) ==
	      (r == DROCE_WIRE_OK || r == DROCE_WIRE_BAD_ICRC));
	if (r == DROCE_WIRE_BAD_ICRC)
		CHECK(!(in->parse_flags & DROCE_WIRE_PARSE_NO_ICRC));
	/*
	 * Whether a packet is RoCEv2 at all is decided before the UDP port is accepted, and
	 * every other outcome after it (HDR_SPLIT aside: that is the caller's layout).
	 */
	if (droce_wire_result_is_foreign(r))
		CHECK(!(pkt->layers & DROCE_WIRE_HAVE_L4));
	else if (r != DROCE_WIRE_HDR_SPLIT)
		CHECK(pkt->layers & DROCE_WIRE_HAVE_L4);
}

/*
 * The ICRC of a malformed packet (droce-pcap): safe on any bytes, changes nothing but
 * the ICRC fields, and when it says OK or BAD the stored and computed values say so too.
 */
static void
check_malformed_icrc(const struct droce_wire_pkt *pkt, const struct droce_wire_seg *segs,
		     unsigned int nseg)
{
	struct droce_wire_pkt m = *pkt;
	enum droce_wire_icrc_status s = droce_wire_malformed_icrc(segs, nseg, &m);

	CHECK((unsigned int)s < DROCE_WIRE_ICRC_STATUS_COUNT);
	CHECK(m.layers == pkt->layers && m.l3_off == pkt->l3_off && m.l4_off == pkt->l4_off);
	if (s == DROCE_WIRE_ICRC_OK || s == DROCE_WIRE_ICRC_BAD)
		CHECK((m.icrc == m.icrc_calc) == (s == DROCE_WIRE_ICRC_OK));
	else
		CHECK(m.icrc_off == pkt->icrc_off);
}

/* The opcode row agrees with the BTH and with itself. */
static void
check_info(const struct droce_wire_pkt *pkt)
{
	const struct droce_opcode_info *oi = pkt->info;
	uint8_t opcode = droce_bth_opcode(droce_pkt_bth(pkt));
	uint32_t end = DROCE_BTH_LEN;
	unsigned int h;

	CHECK(oi != NULL);
	CHECK(oi == droce_opcode_info(opcode));
	CHECK(oi == &droce_opcode_table[opcode]);
	CHECK(oi->name != NULL && oi->name == droce_opcode_name(opcode));
	CHECK((opcode & DROCE_TRANSPORT_MASK) == oi->transport);
	CHECK(!((oi->flags & DROCE_OPF_REQUEST) && (oi->flags & DROCE_OPF_RESPONSE)));
	CHECK(!((oi->flags & DROCE_OPF_MIDDLE) && (oi->flags & DROCE_OPF_ONLY)));
	CHECK(!!(oi->flags & DROCE_OPF_IMM) ==
	      !!(oi->ext_mask & DROCE_EXT_BIT(DROCE_EXT_IMMDT)));
	CHECK(!!(oi->flags & DROCE_OPF_INV) == !!(oi->ext_mask & DROCE_EXT_BIT(DROCE_EXT_IETH)));

	/* Extension headers follow the BTH back to back, in enum (wire) order. */
	for (h = 0; h < DROCE_EXT_COUNT; h++) {
		const uint8_t *e = droce_pkt_ext(pkt, h);

		CHECK(droce_ext_name[h] != NULL);
		if (!(oi->ext_mask & DROCE_EXT_BIT(h))) {
			CHECK(e == NULL);
			CHECK(oi->ext_off[h] == 0);
			continue;
		}
		CHECK(oi->ext_off[h] == end);
		CHECK(e == pkt->hdr + pkt->bth_off + end);
		end += droce_ext_len[h];
	}
	CHECK(end == oi->hdr_len);
}

/* Offsets, lengths and header fields of an OK or BAD_ICRC view. */
static void
check_view(enum droce_wire_result r, const struct droce_wire_pkt *pkt,
	   const struct fuzz_input *in, const struct droce_wire_seg *segs)
{
	const struct droce_opcode_info *oi = pkt->info;
	const struct droce_bth *bth = droce_pkt_bth(pkt);
	const struct droce_udp_hdr *udp = droce_pkt_udp(pkt);
	const struct droce_ipv4_hdr *ip4 = droce_pkt_ipv4(pkt);
	const struct droce_ipv6_hdr *ip6 = droce_pkt_ipv6(pkt);

	CHECK(pkt->layers & DROCE_WIRE_HAVE_L4);
	check_info(pkt);

	/* Offsets increase and add up to the length; the headers are in segment 0. */
	CHECK(pkt->l3_off < pkt->l4_off && pkt->l4_off < pkt->bth_off);
	CHECK(pkt->bth_off + oi->hdr_len == pkt->payload_off);
	CHECK(pkt->payload_off <= segs[0].len);
	CHECK(pkt->payload_off + pkt->payload_len + pkt->pad == pkt->icrc_off);
	CHECK(pkt->payload_off + pkt->payload_len + pkt->pad + DROCE_ICRC_LEN == pkt->len);
	CHECK(pkt->len <= in->len);

	/* 9.2.4 padding; payload rules of the opcode. */
	CHECK(pkt->pad == droce_bth_pad(bth));
	CHECK((pkt->payload_len + pkt->pad) % 4 == 0);
	CHECK(pkt->pad == 0 || (oi->flags & DROCE_OPF_LAST));
	CHECK(pkt->payload_len <= DROCE_WIRE_MAX_PAYLOAD);
	if (!(oi->flags & DROCE_OPF_PAYLOAD))
		CHECK(pkt->payload_len == 0 && pkt->pad == 0);
	if (oi->payload_fixed != 0)
		CHECK(pkt->payload_len == oi->payload_fixed);
	CHECK(droce_bth_tver(bth) == 0);

	/* The lengths the headers state are the view's. */
	CHECK(droce_udp_dport(udp) == DROCE_ROCEV2_UDP_PORT);
	CHECK(droce_udp_len(udp) == pkt->len - pkt->l4_off);
	CHECK((ip4 == NULL) != (ip6 == NULL));
	if (ip4 != NULL) {
		CHECK(droce_ipv4_version(ip4) == 4);
		CHECK(droce_ipv4_hdr_len(ip4) == (uint32_t)(pkt->l4_off - pkt->l3_off));
		CHECK(droce_ipv4_total_len(ip4) == pkt->len - pkt->l3_off);
		CHECK(ip4->proto == DROCE_IPPROTO_UDP);
		CHECK(!(droce_ipv4_frag(ip4) & (DROCE_IPV4_MF | DROCE_IPV4_FRAG_MASK)));
		CHECK(fuzz_csum16((const uint8_t *)ip4, droce_ipv4_hdr_len(ip4)) == FUZZ_CSUM_OK);
	} else {
		CHECK(droce_ipv6_version(ip6) == 6);
		CHECK(pkt->l4_off - pkt->l3_off == DROCE_IPV6_HLEN);
		CHECK(droce_ipv6_payload_len(ip6) == pkt->len - pkt->l4_off);
		CHECK(ip6->next_hdr == DROCE_IPPROTO_UDP);
	}

	/* The ICRC as received is the four bytes at icrc_off, least significant first. */
	CHECK(pkt->icrc == le32(in->pkt + pkt->icrc_off));
	if (in->parse_flags & DROCE_WIRE_PARSE_NO_ICRC)
		CHECK(r == DROCE_WIRE_OK && pkt->icrc_calc == 0);
	else
		CHECK((r == DROCE_WIRE_OK) == (pkt->icrc_calc == pkt->icrc));
}

/* Reads every field of every header present through the accessors. */
static void
read_fields(const struct droce_wire_pkt *pkt, const struct fuzz_input *in)
{
	const struct droce_bth *bth = droce_pkt_bth(pkt);
	const struct droce_udp_hdr *udp = droce_pkt_udp(pkt);
	const struct droce_ipv4_hdr *ip4 = droce_pkt_ipv4(pkt);
	const struct droce_ipv6_hdr *ip6 = droce_pkt_ipv6(pkt);
	const struct droce_reth *reth = droce_pkt_reth(pkt);
	const struct droce_aeth *aeth = droce_pkt_aeth(pkt);
	const struct droce_atmeth *atmeth = droce_pkt_atmeth(pkt);
	const struct droce_atmack *atmack = droce_pkt_atmack(pkt);
	const struct droce_immdt *immdt = droce_pkt_immdt(pkt);
	const struct droce_ieth *ieth = droce_pkt_ieth(pkt);
	const struct droce_deth *deth = droce_pkt_deth(pkt);
	const struct droce_feth *feth = droce_pkt_feth(pkt);
	const struct droce_xrceth *xrceth = droce_pkt_xrceth(pkt);
	uint16_t l3_type = pkt->ip_version == 4 ? DROCE_ETHERTYPE_IPV4 : DROCE_ETHERTYPE_IPV6;
	uint32_t psn = droce_bth_psn(bth);
	uint64_t acc = 0;

	if (pkt->layers & DROCE_WIRE_HAVE_L2) {
		const struct droce_eth_hdr *eth = (const void *)pkt->hdr;

		if (pkt->vlan) {
			const struct droce_vlan_hdr *vlan = (const void *)(eth + 1);

			CHECK(droce_eth_type(eth) == DROCE_ETHERTYPE_VLAN);
			CHECK(droce_vlan_tci(vlan) == pkt->vlan_tci);
			CHECK(droce_vlan_type(vlan) == l3_type);
		} else {
			CHECK(droce_eth_type(eth) == l3_type);
		}
	}
	if (ip4 != NULL)
		acc += droce_ipv4_version(ip4) + droce_ipv4_hdr_len(ip4) +
		       droce_ipv4_total_len(ip4) + droce_ipv4_frag(ip4) + droce_ipv4_csum(ip4);
	if (ip6 != NULL)
		acc += droce_ipv6_version(ip6) + droce_ipv6_tclass(ip6) + droce_ipv6_flow(ip6) +
		       droce_ipv6_payload_len(ip6);
	acc += droce_udp_sport(udp) + droce_udp_dport(udp) + droce_udp_len(udp);

	acc += droce_bth_opcode(bth) + droce_bth_se(bth) + droce_bth_mig(bth) +
	       droce_bth_pad(bth) + droce_bth_tver(bth) + droce_bth_pkey(bth) +
	       droce_bth_fecn(bth) + droce_bth_becn(bth) + droce_bth_ackreq(bth);
	CHECK(droce_bth_dqpn(bth) <= DROCE_QPN_MASK);
	CHECK(psn <= DROCE_PSN_MASK);
	/* 24-bit serial arithmetic on a PSN from the wire (9.7.1); copy_off < 2^23. */
	CHECK(droce_psn_dist(psn, droce_psn_add(psn, in->copy_off)) == in->copy_off);
	CHECK(droce_psn_lt(psn, droce_psn_add(psn, in->copy_off + 1u)));
	acc += droce_bth_dqpn(bth) + psn;

	if (reth != NULL)
		acc += droce_reth_va(reth) + droce_reth_rkey(reth) + droce_reth_len(reth);
	if (aeth != NULL)
		acc += droce_aeth_syndrome(aeth) + droce_aeth_msn(aeth);
	if (atmeth != NULL)
		acc += droce_atmeth_va(atmeth) + droce_atmeth_rkey(atmeth) +
		       droce_atmeth_swap_add(atmeth) + droce_atmeth_compare(atmeth);
	if (atmack != NULL)
		acc += droce_atmack_orig(atmack);
	if (immdt != NULL)
		acc += droce_immdt_be(immdt);
	if (ieth != NULL)
		acc += droce_ieth_rkey(ieth);
	if (deth != NULL) {
		CHECK(droce_deth_src_qp(deth) <= DROCE_QPN_MASK);
		acc += droce_deth_qkey(deth) + droce_deth_src_qp(deth);
	}
	if (feth != NULL)
		acc += droce_feth_plt(feth) + droce_feth_sel(feth);
	if (xrceth != NULL) {
		CHECK(droce_xrceth_srqn(xrceth) <= DROCE_QPN_MASK);
		acc += droce_xrceth_srqn(xrceth);
	}
	sink += acc;
}

/* droce_wire_payload_copy() of the whole payload and of a part chosen by the input. */
static void
check_payload_copy(const struct droce_wire_pkt *pkt, const struct fuzz_input *in,
		   const struct droce_wire_seg *segs)
{
	const uint8_t *payload = in->pkt + pkt->payload_off;
	uint8_t whole[DROCE_WIRE_MAX_PAYLOAD];
	uint32_t off, cap, want, n;
	uint8_t *part;

	n = droce_wire_payload_copy(pkt, segs, in->nseg, 0, whole, sizeof(whole));
	CHECK(n == pkt->payload_len);
	CHECK(n == 0 || memcmp(whole, payload, n) == 0);

	/* Offsets and capacities one past the payload's end included. */
	off = in->copy_off % (pkt->payload_len + 2);
	cap = in->copy_cap % (pkt->payload_len + 2);
	want = off >= pkt->payload_len ? 0 : MIN(cap, pkt->payload_len - off);
	/* Exactly cap bytes, so ASan catches a copy past the capacity. */
	part = malloc(cap);
	CHECK(part != NULL || cap == 0);
	n = droce_wire_payload_copy(pkt, segs, in->nseg, off, part, cap);
	CHECK(n == want);
	CHECK(n == 0 || memcmp(part, payload + off, n) == 0);
	free(part);
}

static uint32_t
ref_crc_byte(uint32_t crc, uint8_t b)
{
	unsigned int k;

	crc ^= b;
	for (k = 0; k < 8; k++)
		crc = (crc & 1) ? (crc >> 1) ^ REF_CRC_POLY : crc >> 1;
	return crc;
}

/* Bits of the byte at offset off that A17.3.3 replaces by ones. */
static uint8_t
ref_icrc_mask(const struct droce_wire_pkt *pkt, uint32_t off)
{
	uint32_t ip = off - pkt->l3_off;
	uint32_t udp_csum = pkt->l4_off + offsetof(struct droce_udp_hdr, csum);

	if (off == udp_csum || off == udp_csum + 1 ||
	    off == pkt->bth_off + offsetof(struct droce_bth, fb_dqpn))
		return 0xFF;
	if (pkt->ip_version == 4)
		return ip == offsetof(struct droce_ipv4_hdr, tos) ||
		       ip == offsetof(struct droce_ipv4_hdr, ttl) ||
		       ip == offsetof(struct droce_ipv4_hdr, csum) ||
		       ip == offsetof(struct droce_ipv4_hdr, csum) + 1 ? 0xFF : 0;
	if (ip == offsetof(struct droce_ipv6_hdr, vtc_flow))
		return REF_IPV6_VTC_FIRST_MASK;
	return ip < sizeof(uint32_t) || ip == offsetof(struct droce_ipv6_hdr, hop_limit) ?
	       0xFF : 0;
}

/*
 * The ICRC computed here from the spec, bit by bit, independently of lib/wire: zlib's
 * crc32() over ones for the LRH, then the bytes from the IP header to the ICRC field
 * with the variant fields masked.
 */
static uint32_t
ref_icrc(const struct droce_wire_pkt *pkt, const uint8_t *bytes)
{
	uint32_t crc = UINT32_MAX, off;
	unsigned int i;

	for (i = 0; i < REF_ICRC_LRH_BYTES; i++)
		crc = ref_crc_byte(crc, 0xFF);
	for (off = pkt->l3_off; off < pkt->icrc_off; off++)
		crc = ref_crc_byte(crc, bytes[off] | ref_icrc_mask(pkt, off));
	return ~crc;
}

/*
 * The ICRC does not depend on how the bytes are split: the input's segments, one
 * contiguous segment and the headers followed by small chunks (empty segments between
 * them when the input says) all give the reference value. The chunked split also parses
 * to the same view.
 */
static void
check_icrc_resplit(enum droce_wire_result r, const struct droce_wire_pkt *pkt,
		   const struct fuzz_input *in, const struct droce_wire_seg *segs)
{
	struct droce_wire_seg whole = { .data = in->pkt, .len = in->len };
	uint32_t chunk = 1 + (in->resplit & FUZZ_RESPLIT_CHUNK_MASK);
	uint32_t ref = ref_icrc(pkt, in->pkt);
	struct droce_wire_pkt again;
	struct droce_wire_seg *re;
	unsigned int n = 0;
	uint32_t off, len;

	CHECK(droce_icrc_calc(&whole, 1, pkt->l3_off, pkt->icrc_off) == ref);
	CHECK(droce_icrc_calc(segs, in->nseg, pkt->l3_off, pkt->icrc_off) == ref);
	if (!(in->parse_flags & DROCE_WIRE_PARSE_NO_ICRC))
		CHECK(pkt->icrc_calc == ref);

	/* Headers, then at most one chunk (and one empty segment) per byte. */
	re = malloc(sizeof(*re) * (2 * (size_t)in->len + 1));
	CHECK(re != NULL);
	re[n].data = in->pkt;
	re[n++].len = pkt->payload_off;
	for (off = pkt->payload_off; off < in->len; off += len) {
		len = MIN(chunk, in->len - off);
		re[n].data = in->pkt + off;
		re[n++].len = len;
		if (in->resplit & FUZZ_RESPLIT_EMPTY) {
			re[n].data = in->pkt + off + len;
			re[n++].len = 0;
		}
	}
	CHECK(droce_icrc_calc(re, n, pkt->l3_off, pkt->icrc_off) == ref);
	CHECK(droce_wire_parse(re, n, in->parse_flags, &again) == r);
	CHECK(views_equal(pkt, &again));
	free(re);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct droce_wire_seg segs[FUZZ_MAX_SEGS];
	struct droce_wire_seg whole;
	struct droce_wire_pkt pkt, contig;
	enum droce_wire_result r;
	struct fuzz_input in;
	uint32_t off = 0;
	unsigned int i;

	if (size > 0) {
		/* Any value, in range or not, has a description and a name. */
		CHECK(droce_wire_result_str((enum droce_wire_result)data[0]) != NULL);
		CHECK(droce_wire_result_name((enum droce_wire_result)data[0]) != NULL);
	}
	if (decode_input(data, size, &in) != 0)
		return 0;

	/* Each segment in its own allocation of exactly its length. */
	for (i = 0; i < in.nseg; i++) {
		uint8_t *buf = malloc(in.seg_len[i]);

		CHECK(buf != NULL || in.seg_len[i] == 0);
		if (in.seg_len[i] != 0)
			memcpy(buf, in.pkt + off, in.seg_len[i]);
		segs[i].data = buf;
		segs[i].len = in.seg_len[i];
		off += in.seg_len[i];
	}

	r = droce_wire_parse(segs, in.nseg, in.parse_flags, &pkt);
	check_layers(r, &pkt, &in, segs);
	if (r != DROCE_WIRE_OK && r != DROCE_WIRE_BAD_ICRC && !droce_wire_result_is_foreign(r))
		check_malformed_icrc(&pkt, segs, in.nseg);
	if (r == DROCE_WIRE_OK || r == DROCE_WIRE_BAD_ICRC) {
		check_view(r, &pkt, &in, segs);
		read_fields(&pkt, &in);
		check_payload_copy(&pkt, &in, segs);
		check_icrc_resplit(r, &pkt, &in, segs);
	}

	/* Splitting changes nothing, except that headers spread over segments are refused. */
	if (r != DROCE_WIRE_HDR_SPLIT) {
		whole.data = in.pkt;
		whole.len = in.len;
		CHECK(droce_wire_parse(&whole, 1, in.parse_flags, &contig) == r);
		CHECK(views_equal(&pkt, &contig));
	}

	for (i = 0; i < in.nseg; i++)
		free((void *)segs[i].data);
	return 0;
}
