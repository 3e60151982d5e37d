/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Builder and parser of whole packets.
 *
 * Round trips: every opcode, payload lengths 0..70, a stride through the middle and
 * 4093..4096 (so every pad count occurs), IPv4 and IPv6, with and without a VLAN tag,
 * random header values. Each packet is built contiguously and in segments (headers;
 * payload over several segments, empty and 1-byte ones included; pad and ICRC on their
 * own), and both forms must hold the same bytes and parse back to every field. ICRCs
 * are checked against wire_test_util.c's reference. Segments live in buffers of their
 * exact size, so under ASan a read past a segment's end is caught.
 *
 * Rejections: one test per reason in DROCE_WIRE_RESULT_LIST, each made from a good
 * packet by one defect.
 */

#include <errno.h>
#include <string.h>

#include "droce_test.h"
#include "droce_wire.h"
#include "wire_test_util.h"

#define MAX_PAD			3
#define FRAME_MAX		(DROCE_WIRE_HDR_MAX + DROCE_WIRE_MAX_PAYLOAD + MAX_PAD + \
				 DROCE_ICRC_LEN)
/* Room to lengthen a good packet when making a defect. */
#define FRAME_SLACK		64
#define MAX_PAYLOAD_SEGS	16
#define MAX_SEGS		(MAX_PAYLOAD_SEGS + 2)
/* Payload lengths: all of 0..SMALL_MAX, then a stride coprime with 4, then the top. */
#define SMALL_MAX		70
#define MID_STRIDE		67
#define TOP_LENGTHS		4
#define MAX_LENGTHS \
	(SMALL_MAX + 1 + DROCE_WIRE_MAX_PAYLOAD / MID_STRIDE + TOP_LENGTHS)
/* Ethernet's minimum frame without FCS (IEEE 802.3 clause 3.2.8). */
#define ETH_MIN_FRAME		60
/* The UDP destination port ends 4 bytes into the UDP header (RFC 768). */
#define UDP_DPORT_END		4
#define ETHERTYPE_ARP		0x0806
#define IPPROTO_TCP_NUM		6
#define IPV6_HOP_BY_HOP		0
#define DEFAULT_HOP_LIMIT	64

#define ALL_LAYERS (DROCE_WIRE_HAVE_L2 | DROCE_WIRE_HAVE_L3 | DROCE_WIRE_HAVE_L4 | \
		    DROCE_WIRE_HAVE_BTH | DROCE_WIRE_HAVE_ALL)
#define TO_L4 (DROCE_WIRE_HAVE_L2 | DROCE_WIRE_HAVE_L3 | DROCE_WIRE_HAVE_L4)
#define TO_BTH (TO_L4 | DROCE_WIRE_HAVE_BTH)

#define HAS(oi, h) (((oi)->ext_mask & DROCE_EXT_BIT(DROCE_EXT_##h)) != 0)

#define CHECK_RESULT(got, want) do { \
		enum droce_wire_result droce_g_ = (got), droce_w_ = (want); \
		droce_test_checks++; \
		if (droce_g_ != droce_w_) \
			droce_test_fail(__FILE__, __LINE__, "%s: %s, expected %s", #got, \
					droce_wire_result_name(droce_g_), \
					droce_wire_result_name(droce_w_)); \
	} while (0)

/* ------------------------------------------------------------------------------------
 * Helpers
 */

struct flow {
	struct droce_wire_addr addr;
	struct droce_wire_tmpl tmpl;
};

static void
flow_init(struct flow *f, bool ipv6, bool vlan)
{
	wt_random_addr(&f->addr, ipv6, vlan);
	CHECK_EQ_I64(droce_wire_tmpl_init(&f->tmpl, &f->addr), 0);
}

static const struct droce_opcode_info *
info(uint8_t opcode)
{
	const struct droce_opcode_info *oi = droce_opcode_info(opcode);

	CHECK(oi != NULL);
	return oi;
}

/* Whether the builder must accept len bytes of payload for oi, from the spec's rules. */
static bool
payload_allowed(const struct droce_opcode_info *oi, uint32_t len)
{
	if (len > DROCE_WIRE_MAX_PAYLOAD)
		return false;
	if (!(oi->flags & DROCE_OPF_PAYLOAD))
		return len == 0;
	if (oi->payload_fixed != 0)
		return len == oi->payload_fixed;
	/* 9.2.4: only the last packet of a message pads, so FIRST/MIDDLE hold whole words. */
	if (!(oi->flags & DROCE_OPF_LAST))
		return len % 4 == 0;
	return true;
}

static unsigned int
payload_lengths(uint32_t *out)
{
	unsigned int n = 0;
	uint32_t len;

	for (len = 0; len <= SMALL_MAX; len++)
		out[n++] = len;
	for (len = SMALL_MAX + 1; len <= DROCE_WIRE_MAX_PAYLOAD - TOP_LENGTHS; len += MID_STRIDE)
		out[n++] = len;
	for (len = DROCE_WIRE_MAX_PAYLOAD - TOP_LENGTHS + 1; len <= DROCE_WIRE_MAX_PAYLOAD; len++)
		out[n++] = len;
	return n;
}

/* Random chunk lengths summing to total, empty and 1-byte chunks included. */
static unsigned int
random_chunks(uint32_t total, uint32_t *lens, unsigned int max)
{
	unsigned int n = 0;

	while (total > 0 && n + 1 < max) {
		uint32_t pick;

		switch (droce_test_rand_below(5)) {
		case 0:
			pick = 0;
			break;
		case 1:
			pick = 1;
			break;
		case 2:
			pick = droce_test_rand_below(8);
			break;
		default:
			pick = 1 + droce_test_rand_below(total);
			break;
		}
		if (pick > total)
			pick = total;
		lens[n++] = pick;
		total -= pick;
	}
	lens[n++] = total;
	return n;
}

/* A copy of len bytes in a buffer of exactly that size. */
static uint8_t *
exact_copy(const void *src, uint32_t len)
{
	uint8_t *b = droce_test_malloc(len);

	if (len > 0)
		memcpy(b, src, len);
	return b;
}

static void
free_segs(struct droce_wire_seg *segs, unsigned int nseg)
{
	unsigned int i;

	for (i = 0; i < nseg; i++)
		droce_test_free((void *)segs[i].data);
}

/* Parses len bytes from an exact-size copy; pkt's offsets stay valid, pkt->hdr does not. */
static enum droce_wire_result
parse_copy(const uint8_t *b, uint32_t len, uint32_t flags, struct droce_wire_pkt *pkt)
{
	struct droce_wire_seg seg = { exact_copy(b, len), len };
	enum droce_wire_result r = droce_wire_parse(&seg, 1, flags, pkt);

	droce_test_free((void *)seg.data);
	pkt->hdr = NULL;
	return r;
}

/* ------------------------------------------------------------------------------------
 * Checking a parsed packet against what was built
 */

struct expect {
	const struct flow *flow;
	const struct droce_wire_hdrs *h;
	const uint8_t *payload;
	uint32_t plen;
	const uint8_t *frame;	/* the contiguous build */
	uint32_t len;
};

static void
check_l2_l3_l4(const struct expect *e, const struct droce_wire_pkt *pkt)
{
	const struct droce_wire_addr *a = &e->flow->addr;
	const struct droce_eth_hdr *eth = (const struct droce_eth_hdr *)pkt->hdr;
	uint32_t l3 = DROCE_ETH_HLEN + (a->vlan ? DROCE_VLAN_HLEN : 0);
	uint8_t hop = a->hop_limit != 0 ? a->hop_limit : DEFAULT_HOP_LIMIT;
	bool v6 = e->flow->tmpl.ip_version == 6;
	const struct droce_udp_hdr *udp;

	CHECK_MEM(eth->dst, a->dst_mac, 6);
	CHECK_MEM(eth->src, a->src_mac, 6);
	CHECK_EQ_U64(pkt->vlan, a->vlan);
	if (a->vlan) {
		const struct droce_vlan_hdr *vlan = (const void *)(eth + 1);

		CHECK_EQ_U64(droce_eth_type(eth), DROCE_ETHERTYPE_VLAN);
		CHECK_EQ_U64(droce_vlan_tci(vlan), a->vlan_tci);
		CHECK_EQ_U64(pkt->vlan_tci, a->vlan_tci);
		CHECK_EQ_U64(droce_vlan_type(vlan),
			     v6 ? DROCE_ETHERTYPE_IPV6 : DROCE_ETHERTYPE_IPV4);
	} else {
		CHECK_EQ_U64(droce_eth_type(eth), v6 ? DROCE_ETHERTYPE_IPV6 : DROCE_ETHERTYPE_IPV4);
	}
	CHECK_EQ_U64(pkt->l3_off, l3);

	if (v6) {
		const struct droce_ipv6_hdr *ip = droce_pkt_ipv6(pkt);

		CHECK(ip != NULL);
		CHECK(droce_pkt_ipv4(pkt) == NULL);
		CHECK_EQ_U64(pkt->ip_version, 6);
		CHECK_EQ_U64(droce_ipv6_version(ip), 6);
		CHECK_EQ_U64(droce_ipv6_tclass(ip), a->traffic_class);
		CHECK_EQ_U64(droce_ipv6_flow(ip), a->flow_label);
		CHECK_EQ_U64(droce_ipv6_payload_len(ip), e->len - l3 - DROCE_IPV6_HLEN);
		CHECK_EQ_U64(ip->next_hdr, DROCE_IPPROTO_UDP);
		CHECK_EQ_U64(ip->hop_limit, hop);
		CHECK_MEM(ip->src, a->src_gid, 16);
		CHECK_MEM(ip->dst, a->dst_gid, 16);
		CHECK_EQ_U64(pkt->l4_off, l3 + DROCE_IPV6_HLEN);
	} else {
		const struct droce_ipv4_hdr *ip = droce_pkt_ipv4(pkt);

		CHECK(ip != NULL);
		CHECK(droce_pkt_ipv6(pkt) == NULL);
		CHECK_EQ_U64(pkt->ip_version, 4);
		CHECK_EQ_U64(droce_ipv4_version(ip), 4);
		CHECK_EQ_U64(droce_ipv4_hdr_len(ip), DROCE_IPV4_HLEN);
		CHECK_EQ_U64(ip->tos, a->traffic_class);
		CHECK_EQ_U64(droce_ipv4_total_len(ip), e->len - l3);
		/* A17.4.1: DF set, never fragmented. */
		CHECK_EQ_U64(droce_ipv4_frag(ip), DROCE_IPV4_DF);
		CHECK_EQ_U64(ip->ttl, hop);
		CHECK_EQ_U64(ip->proto, DROCE_IPPROTO_UDP);
		CHECK_EQ_U64(wt_ipv4_csum((const uint8_t *)ip), 0);
		CHECK_MEM(ip->src, a->src_gid + 12, 4);
		CHECK_MEM(ip->dst, a->dst_gid + 12, 4);
		CHECK_EQ_U64(pkt->l4_off, l3 + DROCE_IPV4_HLEN);
	}

	udp = droce_pkt_udp(pkt);
	CHECK_EQ_U64(droce_udp_sport(udp), a->udp_sport);
	CHECK_EQ_U64(droce_udp_dport(udp), DROCE_ROCEV2_UDP_PORT);
	CHECK_EQ_U64(droce_udp_len(udp), e->len - pkt->l4_off);
	CHECK_EQ_U64(udp->csum, 0);	/* A17.4.2 */
}

static void
check_transport(const struct expect *e, const struct droce_wire_pkt *pkt)
{
	const struct droce_wire_hdrs *h = e->h;
	const struct droce_opcode_info *oi = info(h->opcode);
	const struct droce_bth *bth = droce_pkt_bth(pkt);

	CHECK_EQ_U64(pkt->bth_off, pkt->l4_off + DROCE_UDP_HLEN);
	CHECK_EQ_U64(droce_bth_opcode(bth), h->opcode);
	CHECK_EQ_U64(droce_bth_se(bth), h->se);
	CHECK_EQ_U64(droce_bth_mig(bth), h->mig);
	CHECK_EQ_U64(droce_bth_pad(bth), droce_wire_pad(e->plen));
	CHECK_EQ_U64(droce_bth_tver(bth), 0);
	CHECK_EQ_U64(droce_bth_pkey(bth), h->pkey);
	CHECK_EQ_U64(droce_bth_fecn(bth), h->fecn);
	CHECK_EQ_U64(droce_bth_becn(bth), h->becn);
	CHECK_EQ_U64(droce_bth_dqpn(bth), h->dqpn);
	CHECK_EQ_U64(droce_bth_ackreq(bth), h->ackreq);
	CHECK_EQ_U64(droce_bth_psn(bth), h->psn);

	if (HAS(oi, RETH)) {
		const struct droce_reth *r = droce_pkt_reth(pkt);

		CHECK(r != NULL);
		CHECK_EQ_U64(droce_reth_va(r), h->reth.va);
		CHECK_EQ_U64(droce_reth_rkey(r), h->reth.rkey);
		CHECK_EQ_U64(droce_reth_len(r), h->reth.len);
	} else {
		CHECK(droce_pkt_reth(pkt) == NULL);
	}
	if (HAS(oi, AETH)) {
		const struct droce_aeth *a = droce_pkt_aeth(pkt);

		CHECK(a != NULL);
		CHECK_EQ_U64(droce_aeth_syndrome(a), h->aeth.syndrome);
		CHECK_EQ_U64(droce_aeth_msn(a), h->aeth.msn);
	} else {
		CHECK(droce_pkt_aeth(pkt) == NULL);
	}
	if (HAS(oi, ATMETH)) {
		const struct droce_atmeth *a = droce_pkt_atmeth(pkt);

		CHECK(a != NULL);
		CHECK_EQ_U64(droce_atmeth_va(a), h->atomic.va);
		CHECK_EQ_U64(droce_atmeth_rkey(a), h->atomic.rkey);
		CHECK_EQ_U64(droce_atmeth_swap_add(a), h->atomic.swap_add);
		CHECK_EQ_U64(droce_atmeth_compare(a), h->atomic.compare);
	} else {
		CHECK(droce_pkt_atmeth(pkt) == NULL);
	}
	if (HAS(oi, ATMACK)) {
		CHECK(droce_pkt_atmack(pkt) != NULL);
		CHECK_EQ_U64(droce_atmack_orig(droce_pkt_atmack(pkt)), h->atomic_ack_orig);
	} else {
		CHECK(droce_pkt_atmack(pkt) == NULL);
	}
	if (HAS(oi, IMMDT)) {
		CHECK(droce_pkt_immdt(pkt) != NULL);
		CHECK_EQ_U64(droce_immdt_be(droce_pkt_immdt(pkt)), h->imm_be);
	} else {
		CHECK(droce_pkt_immdt(pkt) == NULL);
	}
	if (HAS(oi, IETH)) {
		CHECK(droce_pkt_ieth(pkt) != NULL);
		CHECK_EQ_U64(droce_ieth_rkey(droce_pkt_ieth(pkt)), h->ieth_rkey);
	} else {
		CHECK(droce_pkt_ieth(pkt) == NULL);
	}
	if (HAS(oi, DETH)) {
		const struct droce_deth *d = droce_pkt_deth(pkt);

		CHECK(d != NULL);
		CHECK_EQ_U64(droce_deth_qkey(d), h->deth.qkey);
		CHECK_EQ_U64(droce_deth_src_qp(d), h->deth.src_qp);
	} else {
		CHECK(droce_pkt_deth(pkt) == NULL);
	}
	if (HAS(oi, XRCETH)) {
		const struct droce_xrceth *x = droce_pkt_xrceth(pkt);

		CHECK(x != NULL);
		/* 9.3: first after the BTH, reserved byte zero, then the XRC SRQ number. */
		CHECK((const uint8_t *)x == (const uint8_t *)bth + DROCE_BTH_LEN);
		CHECK_EQ_U64(droce_xrceth_srqn(x), h->xrc_srqn);
		CHECK_EQ_U64(e->frame[pkt->bth_off + DROCE_BTH_LEN], 0);
		CHECK_EQ_U64(wt_get_be(e->frame + pkt->bth_off + DROCE_BTH_LEN + 1, 3),
			     h->xrc_srqn);
	} else {
		CHECK(droce_pkt_xrceth(pkt) == NULL);
	}
	if (HAS(oi, FETH)) {
		const struct droce_feth *f = droce_pkt_feth(pkt);

		CHECK(f != NULL);
		CHECK_EQ_U64(droce_feth_sel(f), h->feth.sel);
		CHECK_EQ_U64(droce_feth_plt(f), h->feth.plt);
	} else {
		CHECK(droce_pkt_feth(pkt) == NULL);
	}
	if (HAS(oi, CNP_RSVD)) {
		static const uint8_t zeros[DROCE_CNP_RSVD_LEN];

		CHECK_MEM(e->frame + pkt->bth_off + oi->ext_off[DROCE_EXT_CNP_RSVD], zeros,
			  DROCE_CNP_RSVD_LEN);
	}
}

/* Everything the parse of segs says, against what was built. */
static void
check_parse(const struct expect *e, const struct droce_wire_seg *segs, unsigned int nseg)
{
	static const uint8_t zeros[MAX_PAD];
	uint8_t copy[DROCE_WIRE_MAX_PAYLOAD];
	struct droce_wire_pkt pkt;
	uint32_t pad = droce_wire_pad(e->plen), off, n;

	CHECK_RESULT(droce_wire_parse(segs, nseg, 0, &pkt), DROCE_WIRE_OK);
	CHECK_EQ_U64(pkt.layers, ALL_LAYERS);
	CHECK(pkt.hdr == segs[0].data);
	CHECK(pkt.info == droce_opcode_info(e->h->opcode));
	check_l2_l3_l4(e, &pkt);
	check_transport(e, &pkt);

	CHECK_EQ_U64(pkt.payload_off, pkt.bth_off + pkt.info->hdr_len);
	CHECK_EQ_U64(pkt.payload_len, e->plen);
	CHECK_EQ_U64(pkt.pad, pad);
	CHECK_EQ_U64(pkt.icrc_off, pkt.payload_off + e->plen + pad);
	CHECK_EQ_U64(pkt.len, e->len);
	CHECK_EQ_U64(pkt.icrc_off + DROCE_ICRC_LEN, e->len);
	CHECK_MEM(e->frame + pkt.payload_off + e->plen, zeros, pad);

	CHECK_EQ_U64(droce_wire_payload_copy(&pkt, segs, nseg, 0, copy, sizeof(copy)), e->plen);
	CHECK_MEM(copy, e->payload, e->plen);
	/* A piece from the middle, with a small cap. */
	off = e->plen / 3;
	n = droce_wire_payload_copy(&pkt, segs, nseg, off, copy, 7);
	CHECK_EQ_U64(n, e->plen - off < 7 ? e->plen - off : 7);
	CHECK_MEM(copy, e->payload + off, n);
	CHECK_EQ_U64(droce_wire_payload_copy(&pkt, segs, nseg, e->plen, copy, 7), 0);

	CHECK_EQ_U64(pkt.icrc, wt_get_icrc(e->frame, pkt.icrc_off));
	CHECK_EQ_U64(pkt.icrc_calc, pkt.icrc);
	CHECK_EQ_U64(pkt.icrc, wt_ref_icrc(e->frame, pkt.l3_off, pkt.icrc_off));
}

/*
 * Builds one packet both ways, compares the bytes and checks both parses. The
 * contiguous build gathers the payload from random chunks too.
 */
static void
roundtrip(const struct flow *f, uint8_t opcode, uint32_t plen)
{
	const struct droce_opcode_info *oi = info(opcode);
	uint8_t payload[DROCE_WIRE_MAX_PAYLOAD], frame[FRAME_MAX];
	struct droce_wire_seg psegs[MAX_PAYLOAD_SEGS], segs[MAX_SEGS];
	uint32_t lens[MAX_PAYLOAD_SEGS], hdr_len = f->tmpl.len + oi->hdr_len, off;
	uint32_t trailer_len = droce_wire_pad(plen) + DROCE_ICRC_LEN;
	struct droce_wire_hdrs h;
	struct expect e;
	unsigned int n, i, nseg;
	int len;

	wt_random_hdrs(&h, opcode);
	droce_test_rand_fill(payload, plen);
	n = random_chunks(plen, lens, MAX_PAYLOAD_SEGS);
	for (i = 0, off = 0; i < n; off += lens[i], i++) {
		psegs[i].data = payload + off;
		psegs[i].len = lens[i];
	}

	len = droce_wire_build(&f->tmpl, &h, psegs, n, frame, sizeof(frame));
	CHECK_EQ_I64(len, hdr_len + plen + trailer_len);
	e = (struct expect){ f, &h, payload, plen, frame, (uint32_t)len };

	/* Contiguous, from an exact-size copy. */
	segs[0].data = exact_copy(frame, e.len);
	segs[0].len = e.len;
	check_parse(&e, segs, 1);
	/* The ICRC written in place (the engine's burst path) is the builder's. */
	memset((uint8_t *)(uintptr_t)segs[0].data + e.len - DROCE_ICRC_LEN, 0x5A, DROCE_ICRC_LEN);
	droce_wire_icrc_fill((void *)(uintptr_t)segs[0].data, f->tmpl.l3_off,
			     e.len - DROCE_ICRC_LEN);
	CHECK_MEM(segs[0].data, frame, e.len);
	free_segs(segs, 1);

	/* Segmented: headers, payload chunks (re-split), pad and ICRC. */
	segs[0].data = droce_test_malloc(hdr_len);
	segs[0].len = hdr_len;
	CHECK_EQ_I64(droce_wire_build_hdrs(&f->tmpl, &h, plen, (void *)segs[0].data, hdr_len),
		     hdr_len);
	n = random_chunks(plen, lens, MAX_PAYLOAD_SEGS);
	for (i = 0, off = 0; i < n; off += lens[i], i++) {
		segs[1 + i].data = exact_copy(payload + off, lens[i]);
		segs[1 + i].len = lens[i];
	}
	nseg = 1 + n;
	segs[nseg].data = droce_test_malloc(trailer_len);
	segs[nseg].len = trailer_len;
	droce_wire_build_trailer(&f->tmpl, segs, nseg, (void *)segs[nseg].data);
	nseg++;

	/* The same bytes as the contiguous build. */
	for (i = 0, off = 0; i < nseg; off += segs[i].len, i++) {
		CHECK(off + segs[i].len <= e.len);
		CHECK_MEM(segs[i].data, frame + off, segs[i].len);
	}
	CHECK_EQ_U64(off, e.len);
	check_parse(&e, segs, nseg);
	free_segs(segs, nseg);
}

static void
roundtrip_all(bool ipv6, bool vlan)
{
	uint32_t lens[MAX_LENGTHS];
	unsigned int nlen = payload_lengths(lens), op, i, built = 0;

	for (op = 0; op < 256; op++) {
		const struct droce_opcode_info *oi = droce_opcode_info((uint8_t)op);

		if (oi == NULL)
			continue;
		for (i = 0; i < nlen; i++) {
			struct flow f;

			if (!payload_allowed(oi, lens[i]))
				continue;
			droce_test_ctx("%s %s%s payload %u", oi->name, ipv6 ? "IPv6" : "IPv4",
				       vlan ? " VLAN" : "", lens[i]);
			flow_init(&f, ipv6, vlan);
			roundtrip(&f, (uint8_t)op, lens[i]);
			built++;
		}
	}
	/* Not vacuous: every opcode at least once, the payload ones many times. */
	droce_test_ctx("count");
	CHECK(built > 40 * 2);
}

DROCE_TEST(roundtrip_ipv4)
{
	roundtrip_all(false, false);
}

DROCE_TEST(roundtrip_ipv4_vlan)
{
	roundtrip_all(false, true);
}

DROCE_TEST(roundtrip_ipv6)
{
	roundtrip_all(true, false);
}

DROCE_TEST(roundtrip_ipv6_vlan)
{
	roundtrip_all(true, true);
}

DROCE_TEST(roundtrip_every_pad_count)
{
	unsigned int pads = 0;
	uint32_t len;

	/* The lengths above produce every PadCnt; make that a checked fact. */
	for (len = 0; len < 8; len++) {
		struct flow f;

		flow_init(&f, false, false);
		roundtrip(&f, DROCE_OP_RC_SEND_LAST, len);
		pads |= 1u << droce_wire_pad(len);
	}
	CHECK_EQ_U64(pads, 0xF);
	CHECK_EQ_U64(droce_wire_pad(0), 0);
	CHECK_EQ_U64(droce_wire_pad(1), 3);
	CHECK_EQ_U64(droce_wire_pad(2), 2);
	CHECK_EQ_U64(droce_wire_pad(3), 1);
	CHECK_EQ_U64(droce_wire_pad(4096), 0);
}

DROCE_TEST(build_refuses_wrapping_payload_lengths)
{
	/*
	 * Segment lengths whose 32-bit sum wraps to a small, allowed value: the builder
	 * must refuse them rather than copy 4 GiB (found in review).
	 */
	uint8_t payload[32] = { 0 };
	uint8_t frame[FRAME_MAX];
	const struct droce_wire_seg segs[2] = {
		{ payload, 0xFFFFFFF0u }, { payload, 0x20 },
	};
	struct droce_wire_hdrs h;
	struct flow f;

	flow_init(&f, false, false);
	wt_random_hdrs(&h, DROCE_OP_RC_SEND_ONLY);
	CHECK_EQ_I64(droce_wire_build(&f.tmpl, &h, segs, 2, frame, sizeof(frame)), -EINVAL);
}

DROCE_TEST(build_refuses_bad_payload)
{
	uint8_t payload[DROCE_WIRE_MAX_PAYLOAD * 2] = { 0 };
	uint8_t frame[FRAME_MAX + DROCE_WIRE_MAX_PAYLOAD];
	uint32_t lens[MAX_LENGTHS + 3];
	unsigned int nlen = payload_lengths(lens), op, i;
	struct droce_wire_hdrs h;
	struct flow f;

	lens[nlen++] = DROCE_WIRE_MAX_PAYLOAD + 1;
	lens[nlen++] = DROCE_WIRE_MAX_PAYLOAD + 4;
	lens[nlen++] = 2 * DROCE_WIRE_MAX_PAYLOAD;
	flow_init(&f, false, false);
	for (op = 0; op < 256; op++) {
		const struct droce_opcode_info *oi = droce_opcode_info((uint8_t)op);

		wt_random_hdrs(&h, (uint8_t)op);
		if (oi == NULL) {
			struct droce_wire_seg none = { payload, 0 };

			droce_test_ctx("unknown opcode 0x%02x", op);
			CHECK_EQ_I64(droce_wire_build_hdrs(&f.tmpl, &h, 0, frame, sizeof(frame)),
				     -EINVAL);
			CHECK_EQ_I64(droce_wire_build(&f.tmpl, &h, &none, 1, frame, sizeof(frame)),
				     -EINVAL);
			continue;
		}
		for (i = 0; i < nlen; i++) {
			/* The payload as two segments, to exercise the gathering sum. */
			struct droce_wire_seg segs[2] = {
				{ payload, lens[i] / 2 },
				{ payload + lens[i] / 2, lens[i] - lens[i] / 2 },
			};

			if (payload_allowed(oi, lens[i]))
				continue;
			droce_test_ctx("%s payload %u", oi->name, lens[i]);
			CHECK_EQ_I64(droce_wire_build_hdrs(&f.tmpl, &h, lens[i], frame,
							   sizeof(frame)), -EINVAL);
			CHECK_EQ_I64(droce_wire_build(&f.tmpl, &h, segs, 2, frame, sizeof(frame)),
				     -EINVAL);
		}
	}
}

DROCE_TEST(build_refuses_small_buffer)
{
	static const uint8_t ops[] = {
		DROCE_OP_RC_SEND_ONLY, DROCE_OP_RC_COMPARE_SWAP,
		DROCE_OP_UD_SEND_ONLY_WITH_IMMEDIATE, DROCE_OP_XRC_FETCH_ADD,
		DROCE_OP_XRC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,
	};
	uint8_t payload[13];
	struct droce_wire_seg pay = { payload, sizeof(payload) };
	struct droce_wire_hdrs h;
	unsigned int i;

	droce_test_rand_fill(payload, sizeof(payload));
	for (i = 0; i < sizeof(ops); i++) {
		const struct droce_opcode_info *oi = info(ops[i]);
		uint32_t plen = (oi->flags & DROCE_OPF_PAYLOAD) ? sizeof(payload) : 0;
		struct droce_wire_seg *p = plen != 0 ? &pay : NULL;
		unsigned int np = plen != 0 ? 1 : 0;
		struct flow f;
		uint32_t hdr_len, len, cap;
		uint8_t *b;

		droce_test_ctx("%s", oi->name);
		flow_init(&f, true, true);
		wt_random_hdrs(&h, ops[i]);
		hdr_len = f.tmpl.len + oi->hdr_len;
		len = hdr_len + plen + droce_wire_pad(plen) + DROCE_ICRC_LEN;
		/* Buffers of exactly cap bytes: ASan catches any write past them. */
		for (cap = 0; cap <= len; cap++) {
			int want_hdrs = cap < hdr_len ? -ENOSPC : (int)hdr_len;
			int want = cap < len ? -ENOSPC : (int)len;

			b = droce_test_malloc(cap);
			CHECK_EQ_I64(droce_wire_build_hdrs(&f.tmpl, &h, plen, b, cap), want_hdrs);
			CHECK_EQ_I64(droce_wire_build(&f.tmpl, &h, p, np, b, cap), want);
			droce_test_free(b);
		}
	}
}

DROCE_TEST(build_masks_wide_fields)
{
	uint8_t frame[FRAME_MAX];
	struct droce_wire_seg seg;
	struct droce_wire_hdrs h;
	struct droce_wire_pkt pkt;
	struct flow f;
	int len;

	/* Values wider than their fields are cut and never spill into neighbouring bits. */
	flow_init(&f, false, false);
	wt_random_hdrs(&h, DROCE_OP_UD_SEND_ONLY);
	h.fecn = h.becn = h.ackreq = false;
	h.dqpn = 0xFF123456;
	h.psn = 0xFFABCDEF;
	h.deth.src_qp = 0xFF654321;
	len = droce_wire_build(&f.tmpl, &h, NULL, 0, frame, sizeof(frame));
	CHECK(len > 0);
	seg = (struct droce_wire_seg){ frame, (uint32_t)len };
	CHECK_RESULT(droce_wire_parse(&seg, 1, 0, &pkt), DROCE_WIRE_OK);
	CHECK_EQ_U64(droce_bth_dqpn(droce_pkt_bth(&pkt)), 0x123456);
	CHECK_EQ_U64(droce_bth_psn(droce_pkt_bth(&pkt)), 0xABCDEF);
	CHECK(!droce_bth_fecn(droce_pkt_bth(&pkt)));
	CHECK(!droce_bth_becn(droce_pkt_bth(&pkt)));
	CHECK(!droce_bth_ackreq(droce_pkt_bth(&pkt)));
	CHECK_EQ_U64(droce_deth_src_qp(droce_pkt_deth(&pkt)), 0x654321);
	CHECK_EQ_U64(frame[pkt.bth_off + DROCE_BTH_LEN + 4], 0);	/* DETH reserved byte */

	wt_random_hdrs(&h, DROCE_OP_XRC_SEND_ONLY);
	h.xrc_srqn = 0xFF456789;
	len = droce_wire_build(&f.tmpl, &h, NULL, 0, frame, sizeof(frame));
	seg = (struct droce_wire_seg){ frame, (uint32_t)len };
	CHECK_RESULT(droce_wire_parse(&seg, 1, 0, &pkt), DROCE_WIRE_OK);
	CHECK_EQ_U64(droce_xrceth_srqn(droce_pkt_xrceth(&pkt)), 0x456789);
	CHECK_EQ_U64(frame[pkt.bth_off + DROCE_BTH_LEN], 0);	/* XRCETH reserved byte */

	wt_random_hdrs(&h, DROCE_OP_RC_ACKNOWLEDGE);
	h.aeth.msn = 0xFF000001;
	len = droce_wire_build(&f.tmpl, &h, NULL, 0, frame, sizeof(frame));
	seg = (struct droce_wire_seg){ frame, (uint32_t)len };
	CHECK_RESULT(droce_wire_parse(&seg, 1, 0, &pkt), DROCE_WIRE_OK);
	CHECK_EQ_U64(droce_aeth_msn(droce_pkt_aeth(&pkt)), 1);
	CHECK_EQ_U64(droce_aeth_syndrome(droce_pkt_aeth(&pkt)), h.aeth.syndrome);
}

DROCE_TEST(template_layout)
{
	struct flow f;
	unsigned int v6, vlan;

	for (v6 = 0; v6 < 2; v6++) {
		for (vlan = 0; vlan < 2; vlan++) {
			uint32_t l3 = DROCE_ETH_HLEN + (vlan ? DROCE_VLAN_HLEN : 0);
			uint32_t l4 = l3 + (v6 ? DROCE_IPV6_HLEN : DROCE_IPV4_HLEN);

			droce_test_ctx("IPv%u vlan %u", v6 ? 6 : 4, vlan);
			flow_init(&f, v6, vlan);
			CHECK_EQ_U64(f.tmpl.ip_version, v6 ? 6 : 4);
			CHECK_EQ_U64(f.tmpl.l3_off, l3);
			CHECK_EQ_U64(f.tmpl.l4_off, l4);
			CHECK_EQ_U64(f.tmpl.len, l4 + DROCE_UDP_HLEN);
			CHECK(f.tmpl.len <= DROCE_WIRE_TMPL_MAX);
		}
	}
	/* The largest template fills DROCE_WIRE_TMPL_MAX exactly. */
	CHECK_EQ_U64(f.tmpl.len, DROCE_WIRE_TMPL_MAX);

	/* Source and destination GIDs of different families. */
	wt_random_addr(&f.addr, false, false);
	f.addr.dst_gid[10] = 0;
	CHECK_EQ_I64(droce_wire_tmpl_init(&f.tmpl, &f.addr), -EINVAL);
	wt_random_addr(&f.addr, true, false);
	memset(f.addr.dst_gid, 0, 10);
	f.addr.dst_gid[10] = f.addr.dst_gid[11] = 0xFF;
	CHECK_EQ_I64(droce_wire_tmpl_init(&f.tmpl, &f.addr), -EINVAL);
}

/* ------------------------------------------------------------------------------------
 * droce_wire_udp_sport
 */

DROCE_TEST(udp_sport_rule)
{
	unsigned int i;

	/*
	 * By hand from roce-protocol.md: fl = l * r; fl ^= fl >> 20; fl ^= fl >> 40;
	 * fl &= 0xFFFFF; sport = ((fl & 0x3FFF) ^ (fl >> 14)) | 0xC000.
	 */
	CHECK_EQ_U64(droce_wire_udp_sport(0, 0), 0xC000);
	CHECK_EQ_U64(droce_wire_udp_sport(1, 1), 0xC001);
	/* 0x11 * 0x12 = 0x132: no folding. */
	CHECK_EQ_U64(droce_wire_udp_sport(0x11, 0x12), 0xC132);
	/* 1 * 0x4000: fl = 0x4000, fl >> 14 = 1 lands in bit 0. */
	CHECK_EQ_U64(droce_wire_udp_sport(1, 0x4000), 0xC001);
	/* 2 * 0x80000 = 0x100000: the >> 20 fold brings bit 20 to bit 0. */
	CHECK_EQ_U64(droce_wire_udp_sport(2, 0x80000), 0xC001);
	/* 0xFFFFFF^2 = 0xFFFFFE000001: both folds; fl = 0xFFF1E, sport 0x3F1E ^ 0x3F. */
	CHECK_EQ_U64(droce_wire_udp_sport(0xFFFFFF, 0xFFFFFF), 0xFF21);
	/* 0x123456 * 0xABCDEF = 0xC379A59BA4A: fl = 0xAC3E3, sport 0x03E3 ^ 0x2B. */
	CHECK_EQ_U64(droce_wire_udp_sport(0x123456, 0xABCDEF), 0xC3C8);

	for (i = 0; i < 100000; i++) {
		uint32_t a = droce_test_rand_below(DROCE_QPN_MASK + 1);
		uint32_t b = droce_test_rand_below(DROCE_QPN_MASK + 1);
		uint16_t s = droce_wire_udp_sport(a, b);

		droce_test_ctx("qpns 0x%06x 0x%06x", a, b);
		CHECK_EQ_U64(s, droce_wire_udp_sport(b, a));
		CHECK(s >= 0xC000);
	}
}

/* ------------------------------------------------------------------------------------
 * Good packets to break
 */

struct good {
	uint8_t b[FRAME_MAX + FRAME_SLACK];
	uint32_t len;
	uint32_t l3, l4, bth, icrc_off;
	struct flow flow;
	struct droce_wire_hdrs h;
};

static void
good_init(struct good *g, bool ipv6, bool vlan, uint8_t opcode, uint32_t plen)
{
	uint8_t payload[DROCE_WIRE_MAX_PAYLOAD];
	struct droce_wire_seg pay = { payload, plen };
	int len;

	memset(g->b, 0, sizeof(g->b));
	flow_init(&g->flow, ipv6, vlan);
	wt_random_hdrs(&g->h, opcode);
	droce_test_rand_fill(payload, plen);
	len = droce_wire_build(&g->flow.tmpl, &g->h, &pay, 1, g->b, sizeof(g->b));
	CHECK(len > 0);
	g->len = (uint32_t)len;
	g->l3 = g->flow.tmpl.l3_off;
	g->l4 = g->flow.tmpl.l4_off;
	g->bth = g->flow.tmpl.len;
	g->icrc_off = g->len - DROCE_ICRC_LEN;
}

static bool
good_v6(const struct good *g)
{
	return g->flow.tmpl.ip_version == 6;
}

static enum droce_wire_result
good_parse(const struct good *g, uint32_t flags, struct droce_wire_pkt *pkt)
{
	return parse_copy(g->b, g->len, flags, pkt);
}

static void
good_fix_csum(struct good *g)
{
	if (!good_v6(g))
		wt_ipv4_fix_csum(g->b + g->l3);
}

/* Recomputes the ICRC with the reference, so a defect is the only defect. */
static void
good_fix_icrc(struct good *g)
{
	wt_put_icrc(g->b, g->icrc_off, wt_ref_icrc(g->b, g->l3, g->icrc_off));
}

/*
 * Makes the UDP datagram (and so the IP packet) udp_len bytes long: UDP length, IP
 * length and checksum, the frame length (the bytes added are zeros) and icrc_off.
 */
static void
good_set_udp_len(struct good *g, uint32_t udp_len)
{
	uint32_t end = g->l4 + udp_len;

	CHECK(end <= sizeof(g->b));
	wt_put_be(g->b + g->l4 + WT_UDP_LEN, 2, udp_len);
	if (good_v6(g))
		wt_put_be(g->b + g->l3 + WT_IPV6_PAYLOAD_LEN, 2, udp_len);
	else
		wt_put_be(g->b + g->l3 + WT_IPV4_TOTAL_LEN, 2, g->l4 - g->l3 + udp_len);
	good_fix_csum(g);
	if (end > g->len)
		memset(g->b + g->len, 0, end - g->len);
	g->len = end;
	g->icrc_off = end - DROCE_ICRC_LEN;
}

static uint32_t
good_udp_len(const struct good *g)
{
	return g->len - g->l4;
}

static void
good_set_pad(struct good *g, unsigned int pad)
{
	uint8_t *flags = g->b + g->bth + WT_BTH_FLAGS;

	*flags = (uint8_t)((*flags & ~DROCE_BTH_PAD_MASK) | pad << DROCE_BTH_PAD_SHIFT);
}

/* What droce_wire_malformed_icrc() made of a packet. */
struct micrc {
	enum droce_wire_result r;	/* the parse's */
	enum droce_wire_icrc_status s;
	uint32_t icrc_off, icrc, icrc_calc;
};

static bool
micrc_checked(const struct micrc *m)
{
	return m->s == DROCE_WIRE_ICRC_OK || m->s == DROCE_WIRE_ICRC_BAD;
}

/*
 * Parses the segments, then checks the ICRC as for a malformed packet (whatever the
 * result). A checked ICRC must be the four bytes at icrc_off, its computed value the
 * reference's over the contiguous frame b; nothing else in the view may change.
 */
static struct micrc
malformed_icrc_segs(const uint8_t *b, uint32_t len, const struct droce_wire_seg *segs,
		    unsigned int nseg, uint32_t flags)
{
	struct droce_wire_pkt pkt, before;
	struct micrc m;

	m.r = droce_wire_parse(segs, nseg, flags, &pkt);
	before = pkt;
	m.s = droce_wire_malformed_icrc(segs, nseg, &pkt);
	m.icrc_off = pkt.icrc_off;
	m.icrc = pkt.icrc;
	m.icrc_calc = pkt.icrc_calc;
	CHECK((unsigned int)m.s < DROCE_WIRE_ICRC_STATUS_COUNT);
	CHECK(pkt.hdr == before.hdr && pkt.info == before.info &&
	      pkt.layers == before.layers && pkt.l3_off == before.l3_off &&
	      pkt.l4_off == before.l4_off && pkt.bth_off == before.bth_off &&
	      pkt.payload_off == before.payload_off && pkt.payload_len == before.payload_len &&
	      pkt.pad == before.pad && pkt.len == before.len);
	if (!(before.layers & DROCE_WIRE_HAVE_L4))
		CHECK_EQ_U64(m.s, DROCE_WIRE_ICRC_NOT_ROCE);
	if (micrc_checked(&m)) {
		CHECK(m.icrc_off >= before.l4_off + (uint32_t)(DROCE_UDP_HLEN + DROCE_BTH_LEN));
		CHECK(m.icrc_off + DROCE_ICRC_LEN <= len);
		CHECK_EQ_U64(m.icrc, wt_get_icrc(b, m.icrc_off));
		CHECK_EQ_U64(m.icrc_calc, wt_ref_icrc(b, before.l3_off, m.icrc_off));
		CHECK_EQ_U64(m.s == DROCE_WIRE_ICRC_OK, m.icrc == m.icrc_calc);
	} else {
		CHECK(m.icrc_off == before.icrc_off && m.icrc == before.icrc &&
		      m.icrc_calc == before.icrc_calc);
	}
	return m;
}

/* The same for len bytes at b, from an exact-size copy. */
static struct micrc
malformed_icrc(const uint8_t *b, uint32_t len, uint32_t flags)
{
	struct droce_wire_seg seg = { exact_copy(b, len), len };
	struct micrc m = malformed_icrc_segs(b, len, &seg, 1, flags);

	droce_test_free((void *)seg.data);
	return m;
}

/*
 * Parses g and checks the result, the layers reached, and foreign-ness. For a malformed
 * packet, the ICRC check droce-pcap adds must agree with the reference too.
 */
#define CHECK_REJECT(g, flags, want, want_layers) do { \
		struct droce_wire_pkt droce_p_; \
		CHECK_RESULT(good_parse((g), (flags), &droce_p_), (want)); \
		CHECK_EQ_U64(droce_p_.layers, (want_layers)); \
		(void)malformed_icrc((g)->b, (g)->len, (flags)); \
	} while (0)

/* ------------------------------------------------------------------------------------
 * One test per rejection reason
 */

DROCE_TEST(reject_not_ip)
{
	struct good g;
	struct droce_wire_pkt pkt;

	CHECK(droce_wire_result_is_foreign(DROCE_WIRE_NOT_IP));
	good_init(&g, false, false, DROCE_OP_RC_SEND_ONLY, 4);
	wt_put_be(g.b + 12, 2, ETHERTYPE_ARP);
	CHECK_REJECT(&g, 0, DROCE_WIRE_NOT_IP, DROCE_WIRE_HAVE_L2);
	/* Short like an ARP frame: still foreign, not truncated RoCE. */
	CHECK_RESULT(parse_copy(g.b, DROCE_ETH_HLEN + 28, 0, &pkt), DROCE_WIRE_NOT_IP);
	CHECK_RESULT(parse_copy(g.b, DROCE_ETH_HLEN, 0, &pkt), DROCE_WIRE_NOT_IP);

	/* Behind a VLAN tag. */
	good_init(&g, true, true, DROCE_OP_RC_SEND_ONLY, 4);
	wt_put_be(g.b + DROCE_ETH_HLEN + 2, 2, ETHERTYPE_ARP);
	CHECK_RESULT(good_parse(&g, 0, &pkt), DROCE_WIRE_NOT_IP);
	CHECK_EQ_U64(pkt.layers, DROCE_WIRE_HAVE_L2);
	CHECK(pkt.vlan);
	CHECK_EQ_U64(pkt.vlan_tci, g.flow.addr.vlan_tci);

	/* Parsing from the IP header: the version nibble is all there is. */
	good_init(&g, false, false, DROCE_OP_RC_SEND_ONLY, 4);
	for (unsigned int v = 0; v < 16; v++) {
		if (v == 4 || v == 6)
			continue;
		droce_test_ctx("L3 version %u", v);
		g.b[g.l3] = (uint8_t)(v << 4 | (g.b[g.l3] & 0xF));
		CHECK_RESULT(parse_copy(g.b + g.l3, g.len - g.l3, DROCE_WIRE_PARSE_L3, &pkt),
			     DROCE_WIRE_NOT_IP);
		CHECK_EQ_U64(pkt.layers, 0);
	}
}

DROCE_TEST(reject_not_udp)
{
	struct good g;

	CHECK(droce_wire_result_is_foreign(DROCE_WIRE_NOT_UDP));
	good_init(&g, false, false, DROCE_OP_RC_SEND_ONLY, 4);
	g.b[g.l3 + WT_IPV4_PROTO] = IPPROTO_TCP_NUM;
	good_fix_csum(&g);
	CHECK_REJECT(&g, 0, DROCE_WIRE_NOT_UDP, DROCE_WIRE_HAVE_L2 | DROCE_WIRE_HAVE_L3);
	/* Foreign is decided before malformed: a bad checksum does not change that. */
	g.b[g.l3 + WT_IPV4_CSUM] ^= 0x55;
	CHECK_REJECT(&g, 0, DROCE_WIRE_NOT_UDP, DROCE_WIRE_HAVE_L2 | DROCE_WIRE_HAVE_L3);

	good_init(&g, true, true, DROCE_OP_RC_SEND_ONLY, 4);
	g.b[g.l3 + WT_IPV6_NEXT_HDR] = IPPROTO_TCP_NUM;
	CHECK_REJECT(&g, 0, DROCE_WIRE_NOT_UDP, DROCE_WIRE_HAVE_L2 | DROCE_WIRE_HAVE_L3);
	/* RoCEv2 puts UDP right after the IPv6 header; an extension header is foreign. */
	g.b[g.l3 + WT_IPV6_NEXT_HDR] = IPV6_HOP_BY_HOP;
	CHECK_REJECT(&g, 0, DROCE_WIRE_NOT_UDP, DROCE_WIRE_HAVE_L2 | DROCE_WIRE_HAVE_L3);
}

DROCE_TEST(reject_not_roce_port)
{
	const uint32_t layers = DROCE_WIRE_HAVE_L2 | DROCE_WIRE_HAVE_L3;
	struct good g;

	CHECK(droce_wire_result_is_foreign(DROCE_WIRE_NOT_ROCE_PORT));
	good_init(&g, false, false, DROCE_OP_RC_SEND_ONLY, 4);
	wt_put_be(g.b + g.l4 + WT_UDP_DPORT, 2, DROCE_ROCEV2_UDP_PORT + 1);
	CHECK_REJECT(&g, 0, DROCE_WIRE_NOT_ROCE_PORT, layers);
	/* 4791 byte-swapped is not 4791. */
	wt_put_be(g.b + g.l4 + WT_UDP_DPORT, 2, 0xB712);
	CHECK_REJECT(&g, 0, DROCE_WIRE_NOT_ROCE_PORT, layers);
	/* 4791 as the source port only. */
	wt_put_be(g.b + g.l4, 2, DROCE_ROCEV2_UDP_PORT);
	wt_put_be(g.b + g.l4 + WT_UDP_DPORT, 2, 53);
	CHECK_REJECT(&g, 0, DROCE_WIRE_NOT_ROCE_PORT, layers);
	/* Still foreign with a bad checksum and bad lengths. */
	g.b[g.l3 + WT_IPV4_CSUM] ^= 1;
	wt_put_be(g.b + g.l4 + WT_UDP_LEN, 2, 3);
	CHECK_REJECT(&g, 0, DROCE_WIRE_NOT_ROCE_PORT, layers);

	good_init(&g, true, false, DROCE_OP_RC_SEND_ONLY, 4);
	wt_put_be(g.b + g.l4 + WT_UDP_DPORT, 2, 4790);
	CHECK_REJECT(&g, 0, DROCE_WIRE_NOT_ROCE_PORT, layers);
}

DROCE_TEST(reject_ip_fragment)
{
	const uint32_t layers = DROCE_WIRE_HAVE_L2 | DROCE_WIRE_HAVE_L3;
	static const uint16_t frags[] = {
		DROCE_IPV4_MF, DROCE_IPV4_MF | DROCE_IPV4_DF, 1, DROCE_IPV4_FRAG_MASK,
		DROCE_IPV4_MF | 0x100,
	};
	struct good g;
	unsigned int i;

	CHECK(droce_wire_result_is_foreign(DROCE_WIRE_IP_FRAGMENT));
	for (i = 0; i < sizeof(frags) / sizeof(frags[0]); i++) {
		droce_test_ctx("frag 0x%04x", frags[i]);
		good_init(&g, false, i % 2 == 1, DROCE_OP_RC_SEND_ONLY, 4);
		wt_put_be(g.b + g.l3 + WT_IPV4_FRAG, 2, frags[i]);
		good_fix_csum(&g);
		CHECK_REJECT(&g, 0, DROCE_WIRE_IP_FRAGMENT, layers);
		g.b[g.l3 + WT_IPV4_CSUM] ^= 1;
		CHECK_REJECT(&g, 0, DROCE_WIRE_IP_FRAGMENT, layers);
	}
	/* DF clear is no fragment (the ICRC covers the flags, so recompute it). */
	droce_test_ctx("DF clear");
	good_init(&g, false, false, DROCE_OP_RC_SEND_ONLY, 4);
	wt_put_be(g.b + g.l3 + WT_IPV4_FRAG, 2, 0);
	good_fix_csum(&g);
	good_fix_icrc(&g);
	CHECK_REJECT(&g, 0, DROCE_WIRE_OK, ALL_LAYERS);
}

DROCE_TEST(reject_truncated)
{
	struct droce_wire_pkt pkt;
	unsigned int v6, vlan;
	struct good g;
	uint32_t cut;

	CHECK(!droce_wire_result_is_foreign(DROCE_WIRE_TRUNCATED));
	CHECK(droce_wire_result_is_foreign(DROCE_WIRE_RUNT));
	CHECK_RESULT(droce_wire_parse(NULL, 0, 0, &pkt), DROCE_WIRE_RUNT);
	CHECK_EQ_U64(pkt.layers, 0);
	for (v6 = 0; v6 < 2; v6++) {
		for (vlan = 0; vlan < 2; vlan++) {
			uint32_t ip_hlen;

			good_init(&g, v6, vlan, DROCE_OP_RC_RDMA_WRITE_ONLY, 33);
			ip_hlen = g.l4 - g.l3;
			for (cut = 0; cut < g.len; cut++) {
				enum droce_wire_result want;
				uint32_t layers = 0;

				droce_test_ctx("IPv%u vlan %u cut at %u of %u", v6 ? 6 : 4, vlan,
					       cut, g.len);
				if (cut >= g.l4 + DROCE_UDP_HLEN) {
					/* Past UDP, the IP length says more than arrived. */
					CHECK_RESULT(parse_copy(g.b, cut, 0, &pkt),
						     DROCE_WIRE_BAD_IP_LEN);
					CHECK_EQ_U64(pkt.layers, TO_L4);
					continue;
				}
				if (cut >= g.l3)
					layers |= DROCE_WIRE_HAVE_L2;
				if (cut >= g.l3 + ip_hlen)
					layers |= DROCE_WIRE_HAVE_L3;
				/*
				 * Before the UDP destination port there is no telling it is
				 * RoCEv2 (RUNT, foreign); after it, it is RoCEv2, truncated.
				 */
				want = DROCE_WIRE_RUNT;
				if (cut >= g.l4 + UDP_DPORT_END) {
					layers |= DROCE_WIRE_HAVE_L4;
					want = DROCE_WIRE_TRUNCATED;
				}
				CHECK_RESULT(parse_copy(g.b, cut, 0, &pkt), want);
				CHECK_EQ_U64(pkt.layers, layers);
				/* The same from the IP header on. */
				if (cut >= g.l3) {
					CHECK_RESULT(parse_copy(g.b + g.l3, cut - g.l3,
								DROCE_WIRE_PARSE_L3, &pkt), want);
					CHECK_EQ_U64(pkt.layers, layers & ~DROCE_WIRE_HAVE_L2);
				}
			}
		}
	}
}

DROCE_TEST(reject_hdr_split)
{
	static const struct {
		uint8_t op;
		bool v6, vlan;
	} cases[] = {
		{ DROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, true, true },
		{ DROCE_OP_UD_SEND_ONLY_WITH_IMMEDIATE, false, false },
		{ DROCE_OP_RC_COMPARE_SWAP, false, true },
		{ DROCE_OP_RC_ATOMIC_ACKNOWLEDGE, true, false },
		{ DROCE_OP_XRC_COMPARE_SWAP, true, true },	/* the longest headers */
		{ DROCE_OP_XRC_SEND_LAST_WITH_IMMEDIATE, false, false },
	};
	struct droce_wire_seg segs[2];
	struct droce_wire_pkt pkt;
	unsigned int i;
	uint32_t k;

	CHECK(!droce_wire_result_is_foreign(DROCE_WIRE_HDR_SPLIT));
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct droce_opcode_info *oi = info(cases[i].op);
		struct good g;
		uint32_t hdrs_end;

		good_init(&g, cases[i].v6, cases[i].vlan, cases[i].op,
			  (oi->flags & DROCE_OPF_PAYLOAD) ? 9 : 0);
		hdrs_end = g.bth + oi->hdr_len;
		for (k = 0; k <= g.len; k++) {
			enum droce_wire_result r;

			droce_test_ctx("%s split at %u (headers end at %u)", oi->name, k,
				       hdrs_end);
			segs[0] = (struct droce_wire_seg){ exact_copy(g.b, k), k };
			segs[1] = (struct droce_wire_seg){ exact_copy(g.b + k, g.len - k),
							   g.len - k };
			r = droce_wire_parse(segs, 2, 0, &pkt);
			free_segs(segs, 2);
			/* The whole packet is there, only not in the first segment. */
			CHECK_RESULT(r, k < hdrs_end ? DROCE_WIRE_HDR_SPLIT : DROCE_WIRE_OK);
		}
	}
}

DROCE_TEST(reject_bad_ip_version)
{
	struct droce_wire_pkt pkt;
	struct good g;
	unsigned int v;

	/* Decided before the UDP port is seen: cannot be told to be RoCEv2. */
	CHECK(droce_wire_result_is_foreign(DROCE_WIRE_BAD_IP_VERSION));
	for (v = 0; v < 16; v++) {
		droce_test_ctx("IPv4 ethertype, version %u", v);
		if (v == 4)
			continue;
		good_init(&g, false, v % 2, DROCE_OP_RC_SEND_ONLY, 4);
		g.b[g.l3] = (uint8_t)(v << 4 | (g.b[g.l3] & 0xF));
		good_fix_csum(&g);
		CHECK_REJECT(&g, 0, DROCE_WIRE_BAD_IP_VERSION, DROCE_WIRE_HAVE_L2);
	}
	for (v = 0; v < 16; v++) {
		droce_test_ctx("IPv6 ethertype, version %u", v);
		if (v == 6)
			continue;
		good_init(&g, true, v % 2, DROCE_OP_RC_SEND_ONLY, 4);
		g.b[g.l3] = (uint8_t)(v << 4 | (g.b[g.l3] & 0xF));
		CHECK_REJECT(&g, 0, DROCE_WIRE_BAD_IP_VERSION, DROCE_WIRE_HAVE_L2);
	}
	/* From the IP header there is no ethertype to contradict: not IP at all. */
	good_init(&g, false, false, DROCE_OP_RC_SEND_ONLY, 4);
	g.b[g.l3] = 0x55;
	CHECK_RESULT(parse_copy(g.b + g.l3, g.len - g.l3, DROCE_WIRE_PARSE_L3, &pkt),
		     DROCE_WIRE_NOT_IP);
}

DROCE_TEST(reject_bad_ip_hdr_len)
{
	struct good g;
	unsigned int ihl;

	/* Decided before the UDP port is seen: cannot be told to be RoCEv2. */
	CHECK(droce_wire_result_is_foreign(DROCE_WIRE_BAD_IP_HDR_LEN));
	for (ihl = 0; ihl < 5; ihl++) {
		droce_test_ctx("IHL %u", ihl);
		good_init(&g, false, ihl % 2, DROCE_OP_RC_SEND_ONLY, 4);
		g.b[g.l3] = (uint8_t)(0x40 | ihl);
		CHECK_REJECT(&g, 0, DROCE_WIRE_BAD_IP_HDR_LEN,
			     DROCE_WIRE_HAVE_L2 | DROCE_WIRE_HAVE_L3);
	}
	/* IHL 15 on a frame too short to hold 60 bytes of IP header: the UDP port is out
	 * of reach, so there is no telling it is RoCEv2. */
	droce_test_ctx("IHL 15");
	good_init(&g, false, false, DROCE_OP_RC_SEND_ONLY, 0);
	g.b[g.l3] = 0x4F;
	CHECK(g.len < g.l3 + 60);
	CHECK_REJECT(&g, 0, DROCE_WIRE_RUNT, DROCE_WIRE_HAVE_L2 | DROCE_WIRE_HAVE_L3);
}

DROCE_TEST(ipv4_options_accepted)
{
	static const uint8_t options[] = { 0x01, 0x01, 0x01, 0x00 };	/* NOP x3, EOL */
	uint8_t payload[21], copy[sizeof(payload)];
	struct droce_wire_seg seg;
	struct droce_wire_pkt pkt;
	struct good g;
	uint32_t tail;

	/* Nothing builds options, but a packet with them is valid and the ICRC covers them. */
	good_init(&g, false, true, DROCE_OP_RC_SEND_ONLY, sizeof(payload));
	memcpy(payload, g.b + g.bth + DROCE_BTH_LEN, sizeof(payload));
	tail = g.len - g.l4;
	memmove(g.b + g.l4 + sizeof(options), g.b + g.l4, tail);
	memcpy(g.b + g.l4, options, sizeof(options));
	g.b[g.l3] = 0x46;
	g.l4 += sizeof(options);
	g.bth += sizeof(options);
	g.len += sizeof(options);
	g.icrc_off += sizeof(options);
	good_set_udp_len(&g, tail);
	good_fix_icrc(&g);
	seg = (struct droce_wire_seg){ g.b, g.len };
	CHECK_RESULT(droce_wire_parse(&seg, 1, 0, &pkt), DROCE_WIRE_OK);
	CHECK_EQ_U64(pkt.l4_off, g.l3 + DROCE_IPV4_HLEN + sizeof(options));
	CHECK_EQ_U64(pkt.bth_off, g.bth);
	CHECK_EQ_U64(pkt.payload_len, sizeof(payload));
	CHECK_EQ_U64(droce_wire_payload_copy(&pkt, &seg, 1, 0, copy, sizeof(copy)),
		     sizeof(payload));
	CHECK_MEM(copy, payload, sizeof(payload));
	CHECK_EQ_U64(pkt.icrc_calc, wt_ref_icrc(g.b, g.l3, g.icrc_off));
	/* Options are covered: changing one breaks the ICRC. */
	g.b[g.l3 + DROCE_IPV4_HLEN] = 0x00;
	good_fix_csum(&g);
	CHECK_RESULT(droce_wire_parse(&seg, 1, 0, &pkt), DROCE_WIRE_BAD_ICRC);
}

DROCE_TEST(reject_bad_ip_csum)
{
	const uint32_t layers = DROCE_WIRE_HAVE_L2 | DROCE_WIRE_HAVE_L3;
	struct droce_wire_pkt pkt;
	struct good g;
	unsigned int bit;

	CHECK(!droce_wire_result_is_foreign(DROCE_WIRE_BAD_IP_CSUM));
	for (bit = 0; bit < 16; bit++) {
		droce_test_ctx("checksum bit %u", bit);
		good_init(&g, false, bit % 2, DROCE_OP_RC_SEND_ONLY, 4);
		g.b[g.l3 + WT_IPV4_CSUM + 1 - bit / 8] ^= (uint8_t)(1u << (bit % 8));
		CHECK_REJECT(&g, 0, DROCE_WIRE_BAD_IP_CSUM, layers | DROCE_WIRE_HAVE_L4);
	}
	/* A covered field changed without updating the checksum. */
	droce_test_ctx("TTL");
	good_init(&g, false, false, DROCE_OP_RC_SEND_ONLY, 4);
	g.b[g.l3 + WT_IPV4_TTL]--;
	CHECK_REJECT(&g, 0, DROCE_WIRE_BAD_IP_CSUM, layers | DROCE_WIRE_HAVE_L4);
	/* The same check holds when parsing from the IP header. */
	CHECK_RESULT(parse_copy(g.b + g.l3, g.len - g.l3, DROCE_WIRE_PARSE_L3, &pkt),
		     DROCE_WIRE_BAD_IP_CSUM);
}

DROCE_TEST(reject_bad_ip_len)
{
	struct good g;
	unsigned int v6;

	CHECK(!droce_wire_result_is_foreign(DROCE_WIRE_BAD_IP_LEN));
	for (v6 = 0; v6 < 2; v6++) {
		uint32_t ip_hlen, bad[5], i;

		good_init(&g, v6, true, DROCE_OP_RC_SEND_ONLY, 12);
		ip_hlen = g.l4 - g.l3;
		/* Too small to hold a UDP header (IPv4 counts its own header too). */
		bad[0] = v6 ? 0 : ip_hlen;
		bad[1] = (v6 ? 0 : ip_hlen) + DROCE_UDP_HLEN - 1;
		bad[2] = v6 ? 0 : ip_hlen - 1;
		/* Longer than the frame. */
		bad[3] = (v6 ? g.len - g.l4 : g.len - g.l3) + 1;
		bad[4] = 0xFFFF;
		for (i = 0; i < 5; i++) {
			struct good d = g;

			droce_test_ctx("IPv%u length %u", v6 ? 6 : 4, bad[i]);
			if (v6) {
				wt_put_be(d.b + d.l3 + WT_IPV6_PAYLOAD_LEN, 2, bad[i]);
			} else {
				wt_put_be(d.b + d.l3 + WT_IPV4_TOTAL_LEN, 2, bad[i]);
				good_fix_csum(&d);
			}
			/* A matching UDP length changes nothing. */
			wt_put_be(d.b + d.l4 + WT_UDP_LEN, 2, bad[i] - (v6 ? 0 : ip_hlen));
			CHECK_REJECT(&d, 0, DROCE_WIRE_BAD_IP_LEN, TO_L4);
		}
	}
}

DROCE_TEST(reject_bad_udp_len)
{
	struct good g;
	unsigned int v6, i;

	CHECK(!droce_wire_result_is_foreign(DROCE_WIRE_BAD_UDP_LEN));
	for (v6 = 0; v6 < 2; v6++) {
		uint32_t udp_len, bad[5];

		good_init(&g, v6, false, DROCE_OP_RC_SEND_ONLY, 12);
		udp_len = good_udp_len(&g);
		bad[0] = udp_len - 1;
		bad[1] = udp_len + 1;
		bad[2] = 0;
		bad[3] = DROCE_UDP_HLEN;
		bad[4] = 0xFFFF;
		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			struct good d = g;

			droce_test_ctx("IPv%u UDP length %u", v6 ? 6 : 4, bad[i]);
			wt_put_be(d.b + d.l4 + WT_UDP_LEN, 2, bad[i]);
			CHECK_REJECT(&d, 0, DROCE_WIRE_BAD_UDP_LEN, TO_L4);
		}
		/* An IP packet shorter than the frame, the UDP length still the frame's. */
		droce_test_ctx("IPv%u shorter IP", v6 ? 6 : 4);
		if (v6) {
			wt_put_be(g.b + g.l3 + WT_IPV6_PAYLOAD_LEN, 2, udp_len - 4);
		} else {
			wt_put_be(g.b + g.l3 + WT_IPV4_TOTAL_LEN, 2, g.len - g.l3 - 4);
			good_fix_csum(&g);
		}
		CHECK_REJECT(&g, 0, DROCE_WIRE_BAD_UDP_LEN, TO_L4);
	}
}

DROCE_TEST(reject_bad_tver)
{
	struct good g;
	unsigned int tver;

	CHECK(!droce_wire_result_is_foreign(DROCE_WIRE_BAD_TVER));
	for (tver = 1; tver < 16; tver++) {
		droce_test_ctx("TVer %u", tver);
		good_init(&g, tver % 2, tver % 3 == 0, DROCE_OP_RC_SEND_ONLY, tver);
		g.b[g.bth + WT_BTH_FLAGS] |= (uint8_t)tver;
		good_fix_icrc(&g);
		CHECK_REJECT(&g, 0, DROCE_WIRE_BAD_TVER, TO_BTH);
	}
}

DROCE_TEST(reject_unknown_opcode)
{
	unsigned int op, unknown = 0;
	struct good g;

	CHECK(!droce_wire_result_is_foreign(DROCE_WIRE_UNKNOWN_OPCODE));
	for (op = 0; op < 256; op++) {
		if (droce_opcode_info((uint8_t)op) != NULL)
			continue;
		droce_test_ctx("opcode 0x%02x", op);
		good_init(&g, op % 2, false, DROCE_OP_RC_SEND_ONLY, 16);
		g.b[g.bth] = (uint8_t)op;
		good_fix_icrc(&g);
		CHECK_REJECT(&g, 0, DROCE_WIRE_UNKNOWN_OPCODE, TO_BTH);
		unknown++;
	}
	/* Table 38's RC, UC, UD and XRC rows, FLUSH, ATOMIC WRITE and the CNP: 63 known. */
	CHECK_EQ_U64(unknown, 256 - 63);
}

DROCE_TEST(reject_short_for_opcode)
{
	unsigned int op;
	struct good g;

	CHECK(!droce_wire_result_is_foreign(DROCE_WIRE_SHORT_FOR_OPCODE));
	/* Not even a BTH and an ICRC after the UDP header. */
	good_init(&g, false, false, DROCE_OP_RC_SEND_ONLY, 0);
	good_set_udp_len(&g, DROCE_UDP_HLEN + DROCE_BTH_LEN + DROCE_ICRC_LEN - 1);
	CHECK_REJECT(&g, 0, DROCE_WIRE_SHORT_FOR_OPCODE, TO_L4);
	good_set_udp_len(&g, DROCE_UDP_HLEN);
	CHECK_REJECT(&g, 0, DROCE_WIRE_SHORT_FOR_OPCODE, TO_L4);

	/* Each opcode with extension headers, missing the last 4 bytes of them. */
	for (op = 0; op < 256; op++) {
		const struct droce_opcode_info *oi = droce_opcode_info((uint8_t)op);

		if (oi == NULL || oi->hdr_len == DROCE_BTH_LEN)
			continue;
		droce_test_ctx("%s", oi->name);
		good_init(&g, op % 2, op % 3 == 0, (uint8_t)op, oi->payload_fixed);
		good_set_udp_len(&g, DROCE_UDP_HLEN + oi->hdr_len - 4 + DROCE_ICRC_LEN);
		good_fix_icrc(&g);
		CHECK_REJECT(&g, 0, DROCE_WIRE_SHORT_FOR_OPCODE, TO_BTH);
	}

	/* An opcode whose headers the packet does not have room for. */
	droce_test_ctx("SEND_ONLY turned RDMA_WRITE_ONLY");
	good_init(&g, true, false, DROCE_OP_RC_SEND_ONLY, 0);
	g.b[g.bth] = DROCE_OP_RC_RDMA_WRITE_ONLY;
	good_fix_icrc(&g);
	CHECK_REJECT(&g, 0, DROCE_WIRE_SHORT_FOR_OPCODE, TO_BTH);
}

DROCE_TEST(reject_bad_pad_align)
{
	struct good g;
	unsigned int extra;

	CHECK(!droce_wire_result_is_foreign(DROCE_WIRE_BAD_PAD_ALIGN));
	for (extra = 1; extra < 4; extra++) {
		droce_test_ctx("SEND_ONLY + %u", extra);
		good_init(&g, extra % 2, false, DROCE_OP_RC_SEND_ONLY, 8);
		good_set_udp_len(&g, good_udp_len(&g) + extra);
		good_fix_icrc(&g);
		CHECK_REJECT(&g, 0, DROCE_WIRE_BAD_PAD_ALIGN, TO_BTH);
		/* Alignment is checked first, also where no payload is allowed at all. */
		droce_test_ctx("ACK + %u", extra);
		good_init(&g, extra % 2, true, DROCE_OP_RC_ACKNOWLEDGE, 0);
		good_set_udp_len(&g, good_udp_len(&g) + extra);
		good_fix_icrc(&g);
		CHECK_REJECT(&g, 0, DROCE_WIRE_BAD_PAD_ALIGN, TO_BTH);
	}
}

DROCE_TEST(reject_bad_pad)
{
	unsigned int op, pad, first_middle = 0;
	struct good g;

	CHECK(!droce_wire_result_is_foreign(DROCE_WIRE_BAD_PAD));
	/* 9.2.4: only the last packet of a message may pad. */
	for (op = 0; op < 256; op++) {
		const struct droce_opcode_info *oi = droce_opcode_info((uint8_t)op);

		if (oi == NULL || !(oi->flags & DROCE_OPF_PAYLOAD) || (oi->flags & DROCE_OPF_LAST))
			continue;
		first_middle++;
		for (pad = 1; pad < 4; pad++) {
			droce_test_ctx("%s pad %u", oi->name, pad);
			good_init(&g, pad % 2, false, (uint8_t)op, 16);
			good_set_pad(&g, pad);
			good_fix_icrc(&g);
			CHECK_REJECT(&g, 0, DROCE_WIRE_BAD_PAD, TO_BTH);
		}
	}
	/* FIRST and MIDDLE of SEND and WRITE on RC, UC and XRC, of READ RESPONSE on RC and XRC. */
	CHECK_EQ_U64(first_middle, 16);

	/* A pad longer than the data it pads. */
	for (pad = 1; pad < 4; pad++) {
		droce_test_ctx("SEND_ONLY empty pad %u", pad);
		good_init(&g, false, false, DROCE_OP_RC_SEND_ONLY, 0);
		good_set_pad(&g, pad);
		good_fix_icrc(&g);
		CHECK_REJECT(&g, 0, DROCE_WIRE_BAD_PAD, TO_BTH);
		droce_test_ctx("ACK pad %u", pad);
		good_init(&g, true, false, DROCE_OP_RC_ACKNOWLEDGE, 0);
		good_set_pad(&g, pad);
		good_fix_icrc(&g);
		CHECK_REJECT(&g, 0, DROCE_WIRE_BAD_PAD, TO_BTH);
	}
	/* The limit itself: 4 bytes of data, 3 of them pad, is 1 byte of payload. */
	droce_test_ctx("pad 3 of 4");
	good_init(&g, false, false, DROCE_OP_RC_SEND_LAST, 4);
	good_set_pad(&g, 3);
	good_fix_icrc(&g);
	CHECK_REJECT(&g, 0, DROCE_WIRE_OK, ALL_LAYERS);
}

DROCE_TEST(reject_bad_payload_len)
{
	unsigned int op, no_payload = 0;
	struct good g;

	CHECK(!droce_wire_result_is_foreign(DROCE_WIRE_BAD_PAYLOAD_LEN));
	/* Payload on every opcode that carries none: ACK, READ request, atomics, ... */
	for (op = 0; op < 256; op++) {
		const struct droce_opcode_info *oi = droce_opcode_info((uint8_t)op);

		if (oi == NULL || (oi->flags & DROCE_OPF_PAYLOAD))
			continue;
		no_payload++;
		droce_test_ctx("%s + 4", oi->name);
		good_init(&g, op % 2, false, (uint8_t)op, 0);
		good_set_udp_len(&g, good_udp_len(&g) + 4);
		good_fix_icrc(&g);
		CHECK_REJECT(&g, 0, DROCE_WIRE_BAD_PAYLOAD_LEN, TO_BTH);
	}
	/* READ request, ACK, atomic ACK, compare-swap, fetch-add on RC and XRC; FLUSH, CNP. */
	CHECK_EQ_U64(no_payload, 12);

	/* ATOMIC WRITE carries exactly 8 bytes. */
	droce_test_ctx("ATOMIC_WRITE 12");
	good_init(&g, false, false, DROCE_OP_RC_ATOMIC_WRITE, 8);
	good_set_udp_len(&g, good_udp_len(&g) + 4);
	good_fix_icrc(&g);
	CHECK_REJECT(&g, 0, DROCE_WIRE_BAD_PAYLOAD_LEN, TO_BTH);
	droce_test_ctx("ATOMIC_WRITE 9 (12 with pad 3)");
	good_set_pad(&g, 3);
	good_fix_icrc(&g);
	CHECK_REJECT(&g, 0, DROCE_WIRE_BAD_PAYLOAD_LEN, TO_BTH);
	droce_test_ctx("ATOMIC_WRITE 4");
	good_init(&g, true, false, DROCE_OP_RC_ATOMIC_WRITE, 8);
	good_set_udp_len(&g, good_udp_len(&g) - 4);
	good_fix_icrc(&g);
	CHECK_REJECT(&g, 0, DROCE_WIRE_BAD_PAYLOAD_LEN, TO_BTH);
	droce_test_ctx("ATOMIC_WRITE 0");
	good_set_udp_len(&g, good_udp_len(&g) - 4);
	good_fix_icrc(&g);
	CHECK_REJECT(&g, 0, DROCE_WIRE_BAD_PAYLOAD_LEN, TO_BTH);

	/* More than the largest MTU. */
	droce_test_ctx("SEND_ONLY 4100");
	good_init(&g, false, false, DROCE_OP_RC_SEND_ONLY, DROCE_WIRE_MAX_PAYLOAD);
	good_set_udp_len(&g, good_udp_len(&g) + 4);
	good_fix_icrc(&g);
	CHECK_REJECT(&g, 0, DROCE_WIRE_BAD_PAYLOAD_LEN, TO_BTH);
	droce_test_ctx("SEND_ONLY 4097 (4100 with pad 3)");
	good_set_pad(&g, 3);
	good_fix_icrc(&g);
	CHECK_REJECT(&g, 0, DROCE_WIRE_BAD_PAYLOAD_LEN, TO_BTH);
	droce_test_ctx("SEND_ONLY 4096 (4100 with pad 4 is impossible; pad 0 at 4096 is fine)");
	good_init(&g, true, true, DROCE_OP_RC_SEND_ONLY, DROCE_WIRE_MAX_PAYLOAD);
	CHECK_REJECT(&g, 0, DROCE_WIRE_OK, ALL_LAYERS);
}

/* How a single-bit flip at offset off (from the IP header) bit b must be judged. */
enum flip_class {
	FLIP_MASKED,		/* not in the ICRC; the packet stays good */
	FLIP_MASKED_CSUM,	/* IPv4 checksum: not in the ICRC, fails the checksum */
	FLIP_PLAIN,		/* only the ICRC can tell */
	FLIP_CHECKED,		/* the parser validates it: some rejection */
	FLIP_STRUCT,		/* IP version or header length: changes the layout */
	FLIP_ICRC,		/* the ICRC field itself */
};

static enum flip_class
flip_class(bool v6, uint32_t off, unsigned int b, uint32_t icrc_rel)
{
	uint32_t ip_hlen = v6 ? DROCE_IPV6_HLEN : DROCE_IPV4_HLEN;
	uint32_t udp = ip_hlen, bth = ip_hlen + DROCE_UDP_HLEN;

	if (off >= icrc_rel)
		return FLIP_ICRC;
	if (off >= bth + DROCE_BTH_LEN)
		return FLIP_PLAIN;	/* extension headers, payload, pad */
	if (off >= bth) {
		off -= bth;
		if (off == 0)
			return FLIP_CHECKED;	/* opcode */
		if (off == WT_BTH_FLAGS)	/* SE and M plain; PadCnt and TVer checked */
			return b >= 6 ? FLIP_PLAIN : FLIP_CHECKED;
		return off == WT_BTH_FECN_BYTE ? FLIP_MASKED : FLIP_PLAIN;
	}
	if (off >= udp) {
		off -= udp;
		if (off < WT_UDP_DPORT)
			return FLIP_PLAIN;	/* source port */
		return off >= WT_UDP_CSUM ? FLIP_MASKED : FLIP_CHECKED;
	}
	if (v6) {
		if (off == 0)
			return b >= 4 ? FLIP_STRUCT : FLIP_MASKED;
		if (off < WT_IPV6_PAYLOAD_LEN || off == WT_IPV6_HOP_LIMIT)
			return FLIP_MASKED;	/* traffic class, flow label, hop limit */
		return off < 8 ? FLIP_CHECKED : FLIP_PLAIN;
	}
	if (off == 0)
		return FLIP_STRUCT;
	if (off == WT_IPV4_TOS || off == WT_IPV4_TTL)
		return FLIP_MASKED;
	if (off == WT_IPV4_CSUM || off == WT_IPV4_CSUM + 1)
		return FLIP_MASKED_CSUM;
	if (off == WT_IPV4_ID || off == WT_IPV4_ID + 1 || off >= WT_IPV4_SRC)
		return FLIP_PLAIN;
	/* Flags: the reserved bit and DF are plain, MF and the offset are checked. */
	if (off == WT_IPV4_FRAG && b >= 6)
		return FLIP_PLAIN;
	return FLIP_CHECKED;	/* total length, MF, fragment offset, protocol */
}

/* Flips every bit the ICRC covers, and the ICRC's own, in a small packet. */
static void
flip_every_bit(bool v6)
{
	struct droce_wire_pkt pkt;
	struct droce_wire_seg seg;
	unsigned int counts[FLIP_ICRC + 1] = { 0 };
	struct good g;
	uint32_t off, orig;
	unsigned int b;

	/* ImmDt, 3 bytes of payload and a pad byte after the BTH. */
	good_init(&g, v6, false, DROCE_OP_RC_SEND_ONLY_WITH_IMMEDIATE, 3);
	g.b[g.bth + 2] = g.b[g.bth + 3] = 0xFF;	/* P_Key: keeps IHL flips off port 4791 */
	good_fix_icrc(&g);
	orig = wt_get_icrc(g.b, g.icrc_off);
	seg = (struct droce_wire_seg){ g.b, g.len };
	CHECK_RESULT(droce_wire_parse(&seg, 1, 0, &pkt), DROCE_WIRE_OK);

	for (off = 0; off < g.len - g.l3; off++) {
		for (b = 0; b < 8; b++) {
			enum flip_class c = flip_class(v6, off, b, g.icrc_off - g.l3);
			struct good d = g;
			enum droce_wire_result r;

			droce_test_ctx("IPv%u byte %u (from IP) bit %u class %d", v6 ? 6 : 4,
				       off, b, c);
			d.b[d.l3 + off] ^= (uint8_t)(1u << b);
			/* Keep the IPv4 checksum right, so only the ICRC can object. */
			if (!v6 && off < DROCE_IPV4_HLEN && c != FLIP_MASKED_CSUM)
				good_fix_csum(&d);
			seg = (struct droce_wire_seg){ d.b, d.len };
			r = droce_wire_parse(&seg, 1, 0, &pkt);
			counts[c]++;
			if (c != FLIP_STRUCT) {
				uint32_t calc = droce_icrc_calc(&seg, 1, d.l3, d.icrc_off);

				/* The library's masking agrees with the reference. */
				CHECK_EQ_U64(calc, wt_ref_icrc(d.b, d.l3, d.icrc_off));
				if (c == FLIP_MASKED || c == FLIP_MASKED_CSUM || c == FLIP_ICRC)
					CHECK_EQ_U64(calc, orig);
				else	/* a CRC catches every single-bit error */
					CHECK_NE_U64(calc, orig);
			}
			switch (c) {
			case FLIP_MASKED:
				CHECK_RESULT(r, DROCE_WIRE_OK);
				break;
			case FLIP_MASKED_CSUM:
				CHECK_RESULT(r, DROCE_WIRE_BAD_IP_CSUM);
				break;
			case FLIP_PLAIN:
				CHECK_RESULT(r, DROCE_WIRE_BAD_ICRC);
				CHECK_EQ_U64(pkt.icrc, orig);
				CHECK_NE_U64(pkt.icrc_calc, orig);
				CHECK_EQ_U64(pkt.layers, ALL_LAYERS);
				break;
			case FLIP_ICRC:
				CHECK_RESULT(r, DROCE_WIRE_BAD_ICRC);
				/* The computed ICRC is the unmodified packet's. */
				CHECK_EQ_U64(pkt.icrc_calc, orig);
				CHECK_EQ_U64(pkt.icrc ^ orig,
					     1u << (8 * (off - (g.icrc_off - g.l3)) + b));
				break;
			case FLIP_CHECKED:
			case FLIP_STRUCT:
				CHECK(r != DROCE_WIRE_OK);
				break;
			}
		}
	}
	/* Every class occurred. */
	droce_test_ctx("IPv%u class counts", v6 ? 6 : 4);
	CHECK(counts[FLIP_MASKED] > 0 && counts[FLIP_PLAIN] > 0 && counts[FLIP_CHECKED] > 0 &&
	      counts[FLIP_STRUCT] > 0 && counts[FLIP_ICRC] == 32);
	CHECK_EQ_U64(counts[FLIP_MASKED_CSUM], v6 ? 0 : 16);
}

DROCE_TEST(reject_bad_icrc)
{
	CHECK(!droce_wire_result_is_foreign(DROCE_WIRE_BAD_ICRC));
	flip_every_bit(false);
	flip_every_bit(true);
}

DROCE_TEST(icrc_ignores_masked_fields)
{
	struct droce_wire_pkt pkt;
	struct good g, d;
	unsigned int v;

	good_init(&g, false, true, DROCE_OP_RC_RDMA_WRITE_ONLY, 50);
	for (v = 0; v < 256; v++) {
		droce_test_ctx("IPv4 value %u", v);
		d = g;
		d.b[d.l3 + WT_IPV4_TOS] = (uint8_t)v;
		good_fix_csum(&d);
		CHECK_REJECT(&d, 0, DROCE_WIRE_OK, ALL_LAYERS);
		d = g;
		d.b[d.l3 + WT_IPV4_TTL] = (uint8_t)v;
		good_fix_csum(&d);
		CHECK_REJECT(&d, 0, DROCE_WIRE_OK, ALL_LAYERS);
		d = g;
		d.b[d.bth + WT_BTH_FECN_BYTE] = (uint8_t)v;
		CHECK_REJECT(&d, 0, DROCE_WIRE_OK, ALL_LAYERS);
		d = g;
		wt_put_be(d.b + d.l4 + WT_UDP_CSUM, 2, droce_test_rand());
		CHECK_REJECT(&d, 0, DROCE_WIRE_OK, ALL_LAYERS);
		/* Layer 2 is not covered at all. */
		d = g;
		droce_test_rand_fill(d.b, 2 * 6);
		wt_put_be(d.b + DROCE_ETH_HLEN, 2, droce_test_rand());
		CHECK_REJECT(&d, 0, DROCE_WIRE_OK, ALL_LAYERS);
	}
	CHECK_RESULT(good_parse(&g, 0, &pkt), DROCE_WIRE_OK);

	good_init(&g, true, false, DROCE_OP_UD_SEND_ONLY, 50);
	for (v = 0; v < 256; v++) {
		uint32_t vtc = 6u << 28 | v << 20 | droce_test_rand_below(1u << 20);

		droce_test_ctx("IPv6 value %u", v);
		d = g;
		wt_put_be(d.b + d.l3, 4, vtc);
		d.b[d.l3 + WT_IPV6_HOP_LIMIT] = (uint8_t)v;
		d.b[d.bth + WT_BTH_FECN_BYTE] = (uint8_t)(v * 7);
		wt_put_be(d.b + d.l4 + WT_UDP_CSUM, 2, droce_test_rand());
		CHECK_REJECT(&d, 0, DROCE_WIRE_OK, ALL_LAYERS);
	}
}

/* ------------------------------------------------------------------------------------
 * Accepted variations and parser options
 */

DROCE_TEST(eth_padding_accepted)
{
	static const uint8_t junk[] = { 0xA5, 0x5A, 0xFF, 0x01, 0x80, 0x7E, 0x00, 0x33 };
	struct droce_wire_seg segs[2];
	struct droce_wire_pkt pkt;
	struct good g;
	uint32_t ip_len, n;

	/* The smallest RoCEv2 frame, 58 bytes, padded to Ethernet's 60. */
	good_init(&g, false, false, DROCE_OP_RC_SEND_ONLY, 0);
	ip_len = g.len;
	CHECK(ip_len < ETH_MIN_FRAME);
	memcpy(g.b + g.len, junk, ETH_MIN_FRAME - ip_len);
	g.len = ETH_MIN_FRAME;
	CHECK_RESULT(good_parse(&g, 0, &pkt), DROCE_WIRE_OK);
	CHECK_EQ_U64(pkt.len, ip_len);
	CHECK_EQ_U64(pkt.icrc_off, ip_len - DROCE_ICRC_LEN);
	CHECK_EQ_U64(pkt.payload_len, 0);

	/* Trailing bytes of any length, also in a segment of their own, also from L3. */
	for (n = 1; n <= sizeof(junk); n++) {
		droce_test_ctx("%u trailing bytes", n);
		good_init(&g, n % 2, n % 3 == 0, DROCE_OP_RC_RDMA_WRITE_LAST, 8 + n);
		ip_len = g.len;
		memcpy(g.b + g.len, junk, n);
		g.len += n;
		CHECK_RESULT(good_parse(&g, 0, &pkt), DROCE_WIRE_OK);
		CHECK_EQ_U64(pkt.len, ip_len);
		CHECK_EQ_U64(pkt.payload_len, 8 + n);
		segs[0] = (struct droce_wire_seg){ exact_copy(g.b, ip_len), ip_len };
		segs[1] = (struct droce_wire_seg){ exact_copy(junk, n), n };
		CHECK_RESULT(droce_wire_parse(segs, 2, 0, &pkt), DROCE_WIRE_OK);
		CHECK_EQ_U64(pkt.len, ip_len);
		free_segs(segs, 2);
		CHECK_RESULT(parse_copy(g.b + g.l3, g.len - g.l3, DROCE_WIRE_PARSE_L3, &pkt),
			     DROCE_WIRE_OK);
		CHECK_EQ_U64(pkt.len, ip_len - g.l3);
	}
}

DROCE_TEST(parse_from_l3)
{
	static const uint8_t ops[] = {
		DROCE_OP_RC_SEND_ONLY_WITH_IMMEDIATE, DROCE_OP_RC_RDMA_READ_RESPONSE_ONLY,
		DROCE_OP_UD_SEND_ONLY, DROCE_OP_CNP, DROCE_OP_XRC_SEND_LAST_WITH_INVALIDATE,
	};
	uint8_t copy[200], payload[200];
	unsigned int v6, i;

	for (v6 = 0; v6 < 2; v6++) {
		for (i = 0; i < sizeof(ops); i++) {
			const struct droce_opcode_info *oi = info(ops[i]);
			uint32_t plen = (oi->flags & DROCE_OPF_PAYLOAD) ? 1 + 37 * i : 0;
			uint32_t ip_hlen = v6 ? DROCE_IPV6_HLEN : DROCE_IPV4_HLEN;
			struct droce_wire_seg segs[2];
			struct droce_wire_pkt pkt;
			struct good g;
			uint32_t cut;

			droce_test_ctx("IPv%u %s", v6 ? 6 : 4, oi->name);
			good_init(&g, v6, i % 2, ops[i], plen);
			memcpy(payload, g.b + g.bth + oi->hdr_len, plen);
			/* From the IP header, headers and the rest in two segments. */
			cut = g.bth - g.l3 + oi->hdr_len;
			segs[0] = (struct droce_wire_seg){ exact_copy(g.b + g.l3, cut), cut };
			segs[1] = (struct droce_wire_seg){ exact_copy(g.b + g.l3 + cut,
								      g.len - g.l3 - cut),
							   g.len - g.l3 - cut };
			CHECK_RESULT(droce_wire_parse(segs, 2, DROCE_WIRE_PARSE_L3, &pkt),
				     DROCE_WIRE_OK);
			CHECK_EQ_U64(pkt.layers, ALL_LAYERS & ~DROCE_WIRE_HAVE_L2);
			CHECK(!pkt.vlan);
			CHECK_EQ_U64(pkt.ip_version, v6 ? 6 : 4);
			CHECK_EQ_U64(pkt.l3_off, 0);
			CHECK_EQ_U64(pkt.l4_off, ip_hlen);
			CHECK_EQ_U64(pkt.bth_off, ip_hlen + DROCE_UDP_HLEN);
			CHECK_EQ_U64(pkt.payload_off, cut);
			CHECK_EQ_U64(pkt.len, g.len - g.l3);
			CHECK(pkt.info == oi);
			CHECK_EQ_U64(droce_bth_psn(droce_pkt_bth(&pkt)), g.h.psn);
			CHECK_EQ_U64(droce_bth_dqpn(droce_pkt_bth(&pkt)), g.h.dqpn);
			CHECK_EQ_U64(pkt.payload_len, plen);
			CHECK_EQ_U64(droce_wire_payload_copy(&pkt, segs, 2, 0, copy, sizeof(copy)),
				     plen);
			CHECK_MEM(copy, payload, plen);
			CHECK_EQ_U64(pkt.icrc_calc, wt_get_icrc(g.b, g.icrc_off));
			free_segs(segs, 2);
		}
	}
}

DROCE_TEST(parse_no_icrc)
{
	struct droce_wire_pkt pkt;
	struct good g;

	good_init(&g, true, true, DROCE_OP_RC_SEND_LAST_WITH_INVALIDATE, 77);
	g.b[g.icrc_off] ^= 0x80;
	CHECK_RESULT(good_parse(&g, 0, &pkt), DROCE_WIRE_BAD_ICRC);
	CHECK_RESULT(good_parse(&g, DROCE_WIRE_PARSE_NO_ICRC, &pkt), DROCE_WIRE_OK);
	CHECK_EQ_U64(pkt.layers, ALL_LAYERS);
	CHECK_EQ_U64(pkt.icrc, wt_get_icrc(g.b, g.icrc_off));
	CHECK_EQ_U64(pkt.payload_len, 77);
	/* Corrupt payload too: nothing looks at it. */
	g.b[g.bth + DROCE_BTH_LEN + DROCE_IETH_LEN] ^= 0xFF;
	CHECK_RESULT(good_parse(&g, DROCE_WIRE_PARSE_NO_ICRC, &pkt), DROCE_WIRE_OK);
	CHECK_RESULT(parse_copy(g.b + g.l3, g.len - g.l3,
				DROCE_WIRE_PARSE_NO_ICRC | DROCE_WIRE_PARSE_L3, &pkt),
		     DROCE_WIRE_OK);
	/* Other checks still apply. */
	g.b[g.bth + WT_BTH_FLAGS] |= 1;
	CHECK_RESULT(good_parse(&g, DROCE_WIRE_PARSE_NO_ICRC, &pkt), DROCE_WIRE_BAD_TVER);
}

/* ------------------------------------------------------------------------------------
 * The ICRC of a malformed packet (droce_wire_malformed_icrc)
 */

/* One defect that makes a good packet malformed; the ICRC stays at g->icrc_off. */
enum defect {
	DEFECT_IP_CSUM,		/* IPv4 only */
	DEFECT_IP_LEN_LONG,	/* past the frame: the UDP length places the ICRC */
	DEFECT_IP_LEN_SHORT,	/* shorter than a UDP header: likewise */
	DEFECT_UDP_LEN,		/* the IP length places the ICRC */
	DEFECT_TVER,
	DEFECT_OPCODE,
	DEFECT_SHORT_FOR_OPCODE,
	DEFECT_PAD_ALIGN,
	DEFECT_PAD,
	DEFECT_PAYLOAD_LEN,
	DEFECT_COUNT,
};

/* Applies defect d to a fresh packet; returns the result the parser must give. */
static enum droce_wire_result
defect_apply(struct good *g, enum defect d, bool v6, bool vlan)
{
	uint32_t ip_hlen;

	switch (d) {
	case DEFECT_IP_CSUM:
		good_init(g, v6, vlan, DROCE_OP_RC_SEND_ONLY, 13);
		g->b[g->l3 + WT_IPV4_CSUM] ^= 0x21;
		return DROCE_WIRE_BAD_IP_CSUM;
	case DEFECT_IP_LEN_LONG:
	case DEFECT_IP_LEN_SHORT:
		good_init(g, v6, vlan, DROCE_OP_RC_RDMA_WRITE_ONLY, 20);
		ip_hlen = g->l4 - g->l3;
		if (v6)
			wt_put_be(g->b + g->l3 + WT_IPV6_PAYLOAD_LEN, 2,
				  d == DEFECT_IP_LEN_LONG ? good_udp_len(g) + 4 : 3);
		else
			wt_put_be(g->b + g->l3 + WT_IPV4_TOTAL_LEN, 2,
				  d == DEFECT_IP_LEN_LONG ? g->len - g->l3 + 4 : ip_hlen + 3);
		good_fix_csum(g);
		return DROCE_WIRE_BAD_IP_LEN;
	case DEFECT_UDP_LEN:
		good_init(g, v6, vlan, DROCE_OP_UD_SEND_ONLY, 40);
		wt_put_be(g->b + g->l4 + WT_UDP_LEN, 2, good_udp_len(g) - 4);
		return DROCE_WIRE_BAD_UDP_LEN;
	case DEFECT_TVER:
		good_init(g, v6, vlan, DROCE_OP_RC_SEND_ONLY, 7);
		g->b[g->bth + WT_BTH_FLAGS] |= 2;
		return DROCE_WIRE_BAD_TVER;
	case DEFECT_OPCODE:
		good_init(g, v6, vlan, DROCE_OP_RC_SEND_ONLY, 16);
		g->b[g->bth] = 0x1E;
		return DROCE_WIRE_UNKNOWN_OPCODE;
	case DEFECT_SHORT_FOR_OPCODE:
		good_init(g, v6, vlan, DROCE_OP_RC_SEND_ONLY, 0);
		g->b[g->bth] = DROCE_OP_RC_RDMA_WRITE_ONLY;
		return DROCE_WIRE_SHORT_FOR_OPCODE;
	case DEFECT_PAD_ALIGN:
		good_init(g, v6, vlan, DROCE_OP_RC_SEND_ONLY, 8);
		good_set_udp_len(g, good_udp_len(g) + 1);
		return DROCE_WIRE_BAD_PAD_ALIGN;
	case DEFECT_PAD:
		good_init(g, v6, vlan, DROCE_OP_RC_SEND_FIRST, 16);
		good_set_pad(g, 2);
		return DROCE_WIRE_BAD_PAD;
	case DEFECT_PAYLOAD_LEN:
	default:
		good_init(g, v6, vlan, DROCE_OP_RC_ACKNOWLEDGE, 0);
		good_set_udp_len(g, good_udp_len(g) + 8);
		return DROCE_WIRE_BAD_PAYLOAD_LEN;
	}
}

DROCE_TEST(malformed_icrc_verdicts)
{
	unsigned int v6, vlan, l3_mode;
	enum defect d;

	for (v6 = 0; v6 < 2; v6++)
	for (vlan = 0; vlan < 2; vlan++)
	for (l3_mode = 0; l3_mode < 2; l3_mode++)
	for (d = 0; d < DEFECT_COUNT; d++) {
		uint32_t flags = l3_mode ? DROCE_WIRE_PARSE_L3 : 0;
		enum droce_wire_result want;
		struct micrc m;
		struct good g;
		uint32_t right, start, rel;
		const uint8_t *b;

		if (d == DEFECT_IP_CSUM && v6)
			continue;
		droce_test_ctx("IPv%u vlan %u from %s defect %d", v6 ? 6 : 4, vlan,
			       l3_mode ? "IP" : "Ethernet", d);
		want = defect_apply(&g, d, v6, vlan);
		start = l3_mode ? g.l3 : 0;
		b = g.b + start;
		rel = g.icrc_off - start;

		/* Built wrong, ICRC right for the bytes sent: malformed, ICRC OK. */
		good_fix_icrc(&g);
		right = wt_get_icrc(g.b, g.icrc_off);
		m = malformed_icrc(b, g.len - start, flags);
		CHECK_RESULT(m.r, want);
		CHECK_EQ_U64(m.s, DROCE_WIRE_ICRC_OK);
		CHECK_EQ_U64(m.icrc_off, rel);
		CHECK_EQ_U64(m.icrc_calc, right);

		/* The ICRC field damaged: BAD, and the value it should have. */
		g.b[g.icrc_off + 1] ^= 0x10;
		m = malformed_icrc(b, g.len - start, flags);
		CHECK_RESULT(m.r, want);
		CHECK_EQ_U64(m.s, DROCE_WIRE_ICRC_BAD);
		CHECK_EQ_U64(m.icrc_off, rel);
		CHECK_EQ_U64(m.icrc_calc, right);
		CHECK_EQ_U64(m.icrc, right ^ 0x1000);
		g.b[g.icrc_off + 1] ^= 0x10;

		/* A covered byte (BTH P_Key) damaged: BAD, expecting the changed bytes' ICRC. */
		g.b[g.bth + 3] ^= 0x40;
		m = malformed_icrc(b, g.len - start, flags);
		CHECK_RESULT(m.r, want);
		CHECK_EQ_U64(m.s, DROCE_WIRE_ICRC_BAD);
		CHECK_EQ_U64(m.icrc, right);
		CHECK_NE_U64(m.icrc_calc, right);
		CHECK_EQ_U64(m.icrc_calc, wt_ref_icrc(g.b, g.l3, g.icrc_off));
	}
}

DROCE_TEST(malformed_icrc_position)
{
	struct micrc m;
	struct good g;
	unsigned int v6;

	for (v6 = 0; v6 < 2; v6++) {
		uint32_t udp_len;

		/* The IP packet shorter than the frame and the UDP length: the IP length wins. */
		droce_test_ctx("IPv%u IP length 4 short", v6 ? 6 : 4);
		good_init(&g, v6, false, DROCE_OP_RC_SEND_ONLY, 12);
		udp_len = good_udp_len(&g);
		if (v6) {
			wt_put_be(g.b + g.l3 + WT_IPV6_PAYLOAD_LEN, 2, udp_len - 4);
		} else {
			wt_put_be(g.b + g.l3 + WT_IPV4_TOTAL_LEN, 2, g.len - g.l3 - 4);
			good_fix_csum(&g);
		}
		wt_put_icrc(g.b, g.icrc_off - 4, wt_ref_icrc(g.b, g.l3, g.icrc_off - 4));
		m = malformed_icrc(g.b, g.len, 0);
		CHECK_RESULT(m.r, DROCE_WIRE_BAD_UDP_LEN);
		CHECK_EQ_U64(m.s, DROCE_WIRE_ICRC_OK);
		CHECK_EQ_U64(m.icrc_off, g.icrc_off - 4);

		/* Ethernet padding after the packet is not the ICRC's business. */
		droce_test_ctx("IPv%u padded", v6 ? 6 : 4);
		good_init(&g, v6, false, DROCE_OP_RC_SEND_LAST, 1);
		g.b[g.bth + WT_BTH_FLAGS] |= 1;		/* TVer 1 */
		good_fix_icrc(&g);
		memset(g.b + g.len, 0xEE, 16);
		m = malformed_icrc(g.b, g.len + 16, 0);
		CHECK_RESULT(m.r, DROCE_WIRE_BAD_TVER);
		CHECK_EQ_U64(m.s, DROCE_WIRE_ICRC_OK);
		CHECK_EQ_U64(m.icrc_off, g.icrc_off);

		/* IPv4 options are covered. */
	}
	droce_test_ctx("IPv4 options");
	good_init(&g, false, true, DROCE_OP_RC_SEND_ONLY, 8);
	memmove(g.b + g.l4 + 4, g.b + g.l4, g.len - g.l4);
	memset(g.b + g.l4, 0x01, 4);			/* NOP x4 */
	g.b[g.l3] = 0x46;
	g.l4 += 4;
	g.bth += 4;
	g.len += 4;
	g.icrc_off += 4;
	good_set_udp_len(&g, g.len - g.l4);
	g.b[g.bth] = 0xFF;				/* unknown opcode */
	good_fix_icrc(&g);
	m = malformed_icrc(g.b, g.len, 0);
	CHECK_RESULT(m.r, DROCE_WIRE_UNKNOWN_OPCODE);
	CHECK_EQ_U64(m.s, DROCE_WIRE_ICRC_OK);
	CHECK_EQ_U64(m.icrc_off, g.icrc_off);
	g.b[g.l4 - 1] = 0x00;				/* an option byte: covered */
	good_fix_csum(&g);
	m = malformed_icrc(g.b, g.len, 0);
	CHECK_EQ_U64(m.s, DROCE_WIRE_ICRC_BAD);
}

DROCE_TEST(malformed_icrc_not_available)
{
	struct droce_wire_seg segs[2];
	struct droce_wire_pkt pkt;
	unsigned int v6, vlan;
	struct micrc m;
	struct good g;
	uint32_t cut, k;

	/* Cut anywhere after the UDP port: the lengths run past the end of the frame. */
	for (v6 = 0; v6 < 2; v6++) {
		for (vlan = 0; vlan < 2; vlan++) {
			good_init(&g, v6, vlan, DROCE_OP_RC_RDMA_WRITE_ONLY, 33);
			for (cut = g.l4 + UDP_DPORT_END; cut < g.len; cut++) {
				droce_test_ctx("IPv%u vlan %u cut at %u of %u", v6 ? 6 : 4, vlan,
					       cut, g.len);
				m = malformed_icrc(g.b, cut, 0);
				CHECK_EQ_U64(m.s, DROCE_WIRE_ICRC_CUT);
				m = malformed_icrc(g.b + g.l3, cut - g.l3, DROCE_WIRE_PARSE_L3);
				CHECK_EQ_U64(m.s, DROCE_WIRE_ICRC_CUT);
			}
		}
	}

	/* IP and UDP agree on a datagram with no room for a BTH and an ICRC. */
	for (v6 = 0; v6 < 2; v6++) {
		droce_test_ctx("IPv%u no room", v6 ? 6 : 4);
		good_init(&g, v6, false, DROCE_OP_RC_SEND_ONLY, 0);
		good_set_udp_len(&g, DROCE_UDP_HLEN + DROCE_BTH_LEN + DROCE_ICRC_LEN - 1);
		m = malformed_icrc(g.b, g.len, 0);
		CHECK_RESULT(m.r, DROCE_WIRE_SHORT_FOR_OPCODE);
		CHECK_EQ_U64(m.s, DROCE_WIRE_ICRC_NO_ROOM);
		good_set_udp_len(&g, DROCE_UDP_HLEN);
		m = malformed_icrc(g.b, g.len, 0);
		CHECK_EQ_U64(m.s, DROCE_WIRE_ICRC_NO_ROOM);
		/* An IP length too short, and a UDP length past the end. */
		good_init(&g, v6, false, DROCE_OP_RC_SEND_ONLY, 0);
		wt_put_be(g.b + g.l4 + WT_UDP_LEN, 2, good_udp_len(&g) + 1);
		if (v6) {
			wt_put_be(g.b + g.l3 + WT_IPV6_PAYLOAD_LEN, 2, 2);
		} else {
			wt_put_be(g.b + g.l3 + WT_IPV4_TOTAL_LEN, 2, 22);
			good_fix_csum(&g);
		}
		m = malformed_icrc(g.b, g.len, 0);
		CHECK_RESULT(m.r, DROCE_WIRE_BAD_IP_LEN);
		CHECK_EQ_U64(m.s, DROCE_WIRE_ICRC_CUT);
	}

	/* Not RoCEv2, or not known to be. */
	droce_test_ctx("foreign");
	good_init(&g, false, false, DROCE_OP_RC_SEND_ONLY, 4);
	wt_put_be(g.b + g.l4 + WT_UDP_DPORT, 2, 4790);
	m = malformed_icrc(g.b, g.len, 0);
	CHECK_RESULT(m.r, DROCE_WIRE_NOT_ROCE_PORT);
	CHECK_EQ_U64(m.s, DROCE_WIRE_ICRC_NOT_ROCE);
	m = malformed_icrc(g.b, g.l4 + 2, 0);
	CHECK_RESULT(m.r, DROCE_WIRE_RUNT);
	CHECK_EQ_U64(m.s, DROCE_WIRE_ICRC_NOT_ROCE);
	CHECK_RESULT(droce_wire_parse(NULL, 0, 0, &pkt), DROCE_WIRE_RUNT);
	CHECK_EQ_U64(droce_wire_malformed_icrc(NULL, 0, &pkt), DROCE_WIRE_ICRC_NOT_ROCE);

	/*
	 * Headers split over two segments: HDR_SPLIT while the BTH is not all in the first;
	 * after that the ICRC is computed across the segments.
	 */
	for (v6 = 0; v6 < 2; v6++) {
		good_init(&g, v6, true, DROCE_OP_RC_SEND_ONLY, 21);
		g.b[g.bth + WT_BTH_FLAGS] |= 4;		/* TVer 4 */
		good_fix_icrc(&g);
		for (k = 0; k <= g.len; k++) {
			droce_test_ctx("IPv%u split at %u", v6 ? 6 : 4, k);
			segs[0] = (struct droce_wire_seg){ exact_copy(g.b, k), k };
			segs[1] = (struct droce_wire_seg){ exact_copy(g.b + k, g.len - k),
							   g.len - k };
			m = malformed_icrc_segs(g.b, g.len, segs, 2, 0);
			free_segs(segs, 2);
			if (k < g.l4 + UDP_DPORT_END) {
				CHECK_EQ_U64(m.s, DROCE_WIRE_ICRC_NOT_ROCE);
			} else if (k < g.bth + DROCE_BTH_LEN) {
				CHECK_RESULT(m.r, DROCE_WIRE_HDR_SPLIT);
				CHECK_EQ_U64(m.s, DROCE_WIRE_ICRC_HDR_SPLIT);
			} else {
				CHECK_RESULT(m.r, DROCE_WIRE_BAD_TVER);
				CHECK_EQ_U64(m.s, DROCE_WIRE_ICRC_OK);
				CHECK_EQ_U64(m.icrc_off, g.icrc_off);
			}
		}
	}
}

/*
 * Random damage to random good packets, cut short or not, in up to three segments:
 * whatever the parser says, droce_wire_malformed_icrc() reads only what is there (ASan
 * checks: every segment is an exact-size copy) and agrees with the reference.
 */
DROCE_TEST(malformed_icrc_random)
{
	unsigned int i, checked = 0, not_checked = 0;

	for (i = 0; i < 20000; i++) {
		struct droce_wire_seg segs[3];
		uint32_t len, cut1, cut2, n, j;
		struct micrc whole, split;
		const struct droce_opcode_info *oi;
		uint32_t plen = 0;
		struct good g;
		uint8_t op;

		do
			op = (uint8_t)droce_test_rand_below(256);
		while (droce_opcode_info(op) == NULL);
		oi = info(op);
		/* A payload the builder accepts: only LAST and ONLY packets pad. */
		if (oi->payload_fixed != 0)
			plen = oi->payload_fixed;
		else if (oi->flags & DROCE_OPF_PAYLOAD)
			plen = droce_test_rand_below(64) & ((oi->flags & DROCE_OPF_LAST) ? ~0u : ~3u);
		good_init(&g, droce_test_rand_below(2), droce_test_rand_below(2), op, plen);
		droce_test_ctx("round %u, %s, %u bytes", i, info(op)->name, g.len);
		/*
		 * Up to 3 random bytes from the IP header to the end of the BTH, maybe 1 after.
		 * Not the IP version and header length: the reference ICRC goes by them.
		 */
		n = 1 + droce_test_rand_below(3);
		for (j = 0; j < n; j++)
			g.b[g.l3 + 1 + droce_test_rand_below(g.bth + DROCE_BTH_LEN - g.l3 - 1)] ^=
				(uint8_t)(1 + droce_test_rand_below(255));
		if (droce_test_rand_below(2))
			g.b[g.l3 + droce_test_rand_below(g.len - g.l3)] ^= 0x01;
		if (droce_test_rand_below(2))
			good_fix_csum(&g);
		if (droce_test_rand_below(2))
			good_fix_icrc(&g);
		len = g.len;
		if (droce_test_rand_below(4) == 0)
			len = g.l3 + droce_test_rand_below(g.len - g.l3 + 1);
		else if (droce_test_rand_below(4) == 0)
			len = g.len + droce_test_rand_below(FRAME_SLACK);

		whole = malformed_icrc(g.b, len, 0);
		cut1 = droce_test_rand_below(len + 1);
		cut2 = cut1 + droce_test_rand_below(len - cut1 + 1);
		segs[0] = (struct droce_wire_seg){ exact_copy(g.b, cut1), cut1 };
		segs[1] = (struct droce_wire_seg){ exact_copy(g.b + cut1, cut2 - cut1),
						   cut2 - cut1 };
		segs[2] = (struct droce_wire_seg){ exact_copy(g.b + cut2, len - cut2), len - cut2 };
		split = malformed_icrc_segs(g.b, len, segs, 3, 0);
		free_segs(segs, 3);
		/* Where the headers are all in the first segment, the split changes nothing. */
		if (split.r != DROCE_WIRE_HDR_SPLIT && split.s != DROCE_WIRE_ICRC_HDR_SPLIT &&
		    split.s != DROCE_WIRE_ICRC_NOT_ROCE) {
			CHECK_EQ_U64(split.s, whole.s);
			if (micrc_checked(&whole)) {
				CHECK_EQ_U64(split.icrc_off, whole.icrc_off);
				CHECK_EQ_U64(split.icrc_calc, whole.icrc_calc);
			}
		}
		if (micrc_checked(&whole))
			checked++;
		else
			not_checked++;
	}
	droce_test_ctx("counts");
	CHECK(checked > 1000 && not_checked > 1000);
}

DROCE_TEST(malformed_icrc_strings)
{
	static const char *const want[] = {
		[DROCE_WIRE_ICRC_OK] = "ICRC matches",
		[DROCE_WIRE_ICRC_BAD] = "ICRC does not match",
		[DROCE_WIRE_ICRC_NOT_ROCE] = "not known to be RoCEv2",
		[DROCE_WIRE_ICRC_CUT] = "frame ends before the ICRC",
		[DROCE_WIRE_ICRC_NO_ROOM] = "IP and UDP lengths leave no room for a BTH and an ICRC",
		[DROCE_WIRE_ICRC_HDR_SPLIT] = "headers not all in the first segment",
	};
	unsigned int i;

	CHECK_EQ_U64(sizeof(want) / sizeof(want[0]), DROCE_WIRE_ICRC_STATUS_COUNT);
	for (i = 0; i < DROCE_WIRE_ICRC_STATUS_COUNT; i++)
		CHECK_EQ_STR(droce_wire_icrc_status_str((enum droce_wire_icrc_status)i), want[i]);
	CHECK_EQ_STR(droce_wire_icrc_status_str(DROCE_WIRE_ICRC_STATUS_COUNT), "unknown");
	CHECK_EQ_STR(droce_wire_icrc_status_str((enum droce_wire_icrc_status)1000), "unknown");
}

/* ------------------------------------------------------------------------------------
 * Result names
 */

DROCE_TEST(result_strings)
{
	static const struct {
		enum droce_wire_result r;
		const char *name;
		bool foreign;
	} results[] = {
		{ DROCE_WIRE_OK, "OK", false },
		{ DROCE_WIRE_NOT_IP, "NOT_IP", true },
		{ DROCE_WIRE_NOT_UDP, "NOT_UDP", true },
		{ DROCE_WIRE_NOT_ROCE_PORT, "NOT_ROCE_PORT", true },
		{ DROCE_WIRE_IP_FRAGMENT, "IP_FRAGMENT", true },
		{ DROCE_WIRE_RUNT, "RUNT", true },
		{ DROCE_WIRE_BAD_IP_VERSION, "BAD_IP_VERSION", true },
		{ DROCE_WIRE_BAD_IP_HDR_LEN, "BAD_IP_HDR_LEN", true },
		{ DROCE_WIRE_TRUNCATED, "TRUNCATED", false },
		{ DROCE_WIRE_BAD_IP_CSUM, "BAD_IP_CSUM", false },
		{ DROCE_WIRE_BAD_IP_LEN, "BAD_IP_LEN", false },
		{ DROCE_WIRE_BAD_UDP_LEN, "BAD_UDP_LEN", false },
		{ DROCE_WIRE_BAD_TVER, "BAD_TVER", false },
		{ DROCE_WIRE_UNKNOWN_OPCODE, "UNKNOWN_OPCODE", false },
		{ DROCE_WIRE_SHORT_FOR_OPCODE, "SHORT_FOR_OPCODE", false },
		{ DROCE_WIRE_BAD_PAD_ALIGN, "BAD_PAD_ALIGN", false },
		{ DROCE_WIRE_BAD_PAD, "BAD_PAD", false },
		{ DROCE_WIRE_BAD_PAYLOAD_LEN, "BAD_PAYLOAD_LEN", false },
		{ DROCE_WIRE_HDR_SPLIT, "HDR_SPLIT", false },
		{ DROCE_WIRE_BAD_ICRC, "BAD_ICRC", false },
	};
	const unsigned int n = sizeof(results) / sizeof(results[0]);
	unsigned int i, j;

	CHECK_EQ_U64(n, DROCE_WIRE_RESULT_COUNT);
	for (i = 0; i < n; i++) {
		const char *s = droce_wire_result_str(results[i].r);

		droce_test_ctx("%s", results[i].name);
		CHECK_EQ_U64(results[i].r, i);
		CHECK_EQ_STR(droce_wire_result_name(results[i].r), results[i].name);
		CHECK_EQ_U64(droce_wire_result_is_foreign(results[i].r), results[i].foreign);
		CHECK(s != NULL && s[0] != '\0');
		CHECK(strcmp(s, "unknown") != 0);
		for (j = 0; j < i; j++)
			CHECK(strcmp(s, droce_wire_result_str(results[j].r)) != 0);
	}
	droce_test_ctx("descriptions");
	CHECK_EQ_STR(droce_wire_result_str(DROCE_WIRE_OK), "ok");
	CHECK_EQ_STR(droce_wire_result_str(DROCE_WIRE_BAD_ICRC), "bad ICRC");
	droce_test_ctx("out of range");
	CHECK_EQ_STR(droce_wire_result_str(DROCE_WIRE_RESULT_COUNT), "unknown");
	CHECK_EQ_STR(droce_wire_result_name(DROCE_WIRE_RESULT_COUNT), "UNKNOWN");
	CHECK(!droce_wire_result_is_foreign(DROCE_WIRE_RESULT_COUNT));
	CHECK_EQ_STR(droce_wire_result_str((enum droce_wire_result)1000), "unknown");
	CHECK_EQ_STR(droce_wire_result_name((enum droce_wire_result)1000), "UNKNOWN");
	CHECK(!droce_wire_result_is_foreign((enum droce_wire_result)1000));
}
