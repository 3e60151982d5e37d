/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Packet parser: Ethernet [+ 802.1Q] + IPv4/IPv6 + UDP 4791 + BTH + extension headers +
 * payload + pad + ICRC. Every length is checked before the bytes it covers are read, so
 * any input is safe; the first failed check names the rejection.
 */

#include <string.h>

#include "droce_wire_pkt.h"
#include "wire_loc.h"

static const char *const result_desc[DROCE_WIRE_RESULT_COUNT] = {
#define RESULT_DESC(name, foreign, desc) [DROCE_WIRE_##name] = desc,
	DROCE_WIRE_RESULT_LIST(RESULT_DESC)
#undef RESULT_DESC
};

static const char *const result_name[DROCE_WIRE_RESULT_COUNT] = {
#define RESULT_NAME(name, foreign, desc) [DROCE_WIRE_##name] = #name,
	DROCE_WIRE_RESULT_LIST(RESULT_NAME)
#undef RESULT_NAME
};

static const bool result_foreign[DROCE_WIRE_RESULT_COUNT] = {
#define RESULT_FOREIGN(name, foreign, desc) [DROCE_WIRE_##name] = foreign,
	DROCE_WIRE_RESULT_LIST(RESULT_FOREIGN)
#undef RESULT_FOREIGN
};

const char *
droce_wire_result_str(enum droce_wire_result r)
{
	return (unsigned int)r < DROCE_WIRE_RESULT_COUNT ? result_desc[r] : "unknown";
}

const char *
droce_wire_result_name(enum droce_wire_result r)
{
	return (unsigned int)r < DROCE_WIRE_RESULT_COUNT ? result_name[r] : "UNKNOWN";
}

bool
droce_wire_result_is_foreign(enum droce_wire_result r)
{
	return (unsigned int)r < DROCE_WIRE_RESULT_COUNT && result_foreign[r];
}

static const char *const icrc_status_desc[DROCE_WIRE_ICRC_STATUS_COUNT] = {
#define ICRC_STATUS_DESC(name, desc) [DROCE_WIRE_ICRC_##name] = desc,
	DROCE_WIRE_ICRC_STATUS_LIST(ICRC_STATUS_DESC)
#undef ICRC_STATUS_DESC
};

const char *
droce_wire_icrc_status_str(enum droce_wire_icrc_status s)
{
	return (unsigned int)s < DROCE_WIRE_ICRC_STATUS_COUNT ? icrc_status_desc[s] : "unknown";
}

/* Copies len bytes at offset off of the segment list; false if they are not all there. */
static bool
segs_copy(const struct droce_wire_seg *segs, unsigned int nseg, uint32_t off, void *dst,
	  uint32_t len)
{
	uint8_t *out = dst;
	unsigned int i;

	for (i = 0; i < nseg && len > 0; i++) {
		uint32_t n;

		if (off >= segs[i].len) {
			off -= segs[i].len;
			continue;
		}
		n = segs[i].len - off;
		if (n > len)
			n = len;
		memcpy(out, (const uint8_t *)segs[i].data + off, n);
		out += n;
		len -= n;
		off = 0;
	}
	return len == 0;
}

uint32_t
droce_wire_payload_copy(const struct droce_wire_pkt *pkt, const struct droce_wire_seg *segs,
			unsigned int nseg, uint32_t offset, void *dst, uint32_t cap)
{
	uint32_t n;

	if (offset >= pkt->payload_len)
		return 0;
	n = pkt->payload_len - offset;
	if (n > cap)
		n = cap;
	return segs_copy(segs, nseg, pkt->payload_off + offset, dst, n) ? n : 0;
}

/* The four ICRC bytes at off, least significant first; the segments must hold them. */
static uint32_t
icrc_read(const struct droce_wire_seg *segs, unsigned int nseg, uint32_t off)
{
	uint8_t b[DROCE_ICRC_LEN];

	segs_copy(segs, nseg, off, b, sizeof(b));
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
	       (uint32_t)b[3] << 24;
}

bool
droce_wire_icrc_check(const struct droce_wire_seg *segs, unsigned int nseg,
		      struct droce_wire_pkt *pkt)
{
	pkt->icrc = icrc_read(segs, nseg, pkt->icrc_off);
	pkt->icrc_calc = droce_icrc_calc(segs, nseg, pkt->l3_off, pkt->icrc_off);
	return pkt->icrc_calc == pkt->icrc;
}

/*
 * The first n bytes must be in the first segment: short (RUNT before the UDP port is
 * known, TRUNCATED after) when the packet is shorter, HDR_SPLIT when it is long enough but
 * the first segment is not.
 */
#define NEED_OR(n, short) do { \
		if ((n) > seg0_len) \
			return (n) > total ? (short) : DROCE_WIRE_HDR_SPLIT; \
	} while (0)
#define NEED_L3(n)	NEED_OR(n, DROCE_WIRE_RUNT)
#define NEED(n)		NEED_OR(n, DROCE_WIRE_TRUNCATED)

/*
 * Ethernet and IP up to the UDP destination port: sets l3_off and l4_off. Everything
 * that decides whether this is RoCEv2 at all (ethertype, protocol, fragment, port) is
 * checked here, before anything that decides whether it is malformed, so a foreign
 * packet is never reported as a malformed RoCEv2 one.
 */
static enum droce_wire_result
parse_to_udp_port(const uint8_t *p, uint32_t seg0_len, uint32_t total, uint32_t flags,
		  struct droce_wire_pkt *pkt)
{
	uint32_t off = 0;
	uint16_t type;

	if (flags & DROCE_WIRE_PARSE_L3) {
		NEED_L3(1u);
		type = (p[0] >> 4) == 6 ? DROCE_ETHERTYPE_IPV6 : DROCE_ETHERTYPE_IPV4;
	} else {
		NEED_L3((uint32_t)DROCE_ETH_HLEN);
		type = droce_eth_type((const struct droce_eth_hdr *)p);
		off = DROCE_ETH_HLEN;
		if (type == DROCE_ETHERTYPE_VLAN) {
			const struct droce_vlan_hdr *vlan = (const void *)(p + off);

			NEED_L3(off + DROCE_VLAN_HLEN);
			pkt->vlan = true;
			pkt->vlan_tci = droce_vlan_tci(vlan);
			type = droce_vlan_type(vlan);
			off += DROCE_VLAN_HLEN;
		}
		pkt->layers |= DROCE_WIRE_HAVE_L2;
	}

	pkt->l3_off = off;
	if (type == DROCE_ETHERTYPE_IPV4) {
		const struct droce_ipv4_hdr *ip = (const void *)(p + off);
		uint32_t ihl;

		NEED_L3(off + DROCE_IPV4_HLEN);
		if (droce_ipv4_version(ip) != 4)
			return (flags & DROCE_WIRE_PARSE_L3) ? DROCE_WIRE_NOT_IP :
							       DROCE_WIRE_BAD_IP_VERSION;
		pkt->ip_version = 4;
		pkt->layers |= DROCE_WIRE_HAVE_L3;
		if (ip->proto != DROCE_IPPROTO_UDP)
			return DROCE_WIRE_NOT_UDP;
		if (droce_ipv4_frag(ip) & (DROCE_IPV4_MF | DROCE_IPV4_FRAG_MASK))
			return DROCE_WIRE_IP_FRAGMENT;
		ihl = droce_ipv4_hdr_len(ip);
		if (ihl < DROCE_IPV4_HLEN)
			return DROCE_WIRE_BAD_IP_HDR_LEN;
		NEED_L3(off + ihl);
		pkt->l4_off = off + ihl;
	} else if (type == DROCE_ETHERTYPE_IPV6) {
		const struct droce_ipv6_hdr *ip = (const void *)(p + off);

		NEED_L3(off + DROCE_IPV6_HLEN);
		if (droce_ipv6_version(ip) != 6)
			return DROCE_WIRE_BAD_IP_VERSION;
		pkt->ip_version = 6;
		pkt->layers |= DROCE_WIRE_HAVE_L3;
		/* RoCEv2 puts UDP right after the IPv6 header: no extension headers. */
		if (ip->next_hdr != DROCE_IPPROTO_UDP)
			return DROCE_WIRE_NOT_UDP;
		pkt->l4_off = off + DROCE_IPV6_HLEN;
	} else {
		return DROCE_WIRE_NOT_IP;
	}

	/* The port first (UDP bytes 2-3), then the rest of the UDP header. */
	NEED_L3(pkt->l4_off + (uint32_t)offsetof(struct droce_udp_hdr, len));
	if (droce_udp_dport((const struct droce_udp_hdr *)(p + pkt->l4_off)) !=
	    DROCE_ROCEV2_UDP_PORT)
		return DROCE_WIRE_NOT_ROCE_PORT;
	pkt->layers |= DROCE_WIRE_HAVE_L4;
	NEED(pkt->l4_off + (uint32_t)DROCE_UDP_HLEN);
	return DROCE_WIRE_OK;
}

/* Where the IP packet ends by its length field, checked against nothing. */
static uint32_t
ip_end_stated(const uint8_t *p, const struct droce_wire_pkt *pkt)
{
	const uint8_t *l3 = p + pkt->l3_off;

	if (pkt->ip_version == 4)
		return pkt->l3_off + droce_ipv4_total_len((const struct droce_ipv4_hdr *)l3);
	return pkt->l4_off + droce_ipv6_payload_len((const struct droce_ipv6_hdr *)l3);
}

/* IP checksum and lengths, UDP length; sets *ip_end, the end of the IP packet. */
static enum droce_wire_result
check_ip_udp(const uint8_t *p, uint32_t total, uint32_t flags, const struct droce_wire_pkt *pkt,
	     uint32_t *ip_end)
{
	uint32_t end;

	if (pkt->ip_version == 4 && !(flags & DROCE_WIRE_PARSE_IP_CSUM_OK) &&
	    !wire_ipv4_csum_ok(p + pkt->l3_off, pkt->l4_off - pkt->l3_off))
		return DROCE_WIRE_BAD_IP_CSUM;
	end = ip_end_stated(p, pkt);
	/* The frame may be longer (Ethernet pads to 60 bytes), never shorter. */
	if (end < pkt->l4_off + (uint32_t)DROCE_UDP_HLEN || end > total)
		return DROCE_WIRE_BAD_IP_LEN;
	if (droce_udp_len((const struct droce_udp_hdr *)(p + pkt->l4_off)) != end - pkt->l4_off)
		return DROCE_WIRE_BAD_UDP_LEN;
	*ip_end = end;
	return DROCE_WIRE_OK;
}

enum droce_wire_result
droce_wire_parse(const struct droce_wire_seg *segs, unsigned int nseg, uint32_t flags,
		 struct droce_wire_pkt *pkt)
{
	const struct droce_opcode_info *oi;
	const struct droce_bth *bth;
	enum droce_wire_result r;
	uint32_t seg0_len, total, ip_end, hdrs_end, data_len, icrc_off;
	const uint8_t *p;
	unsigned int i;

	memset(pkt, 0, sizeof(*pkt));
	if (nseg == 0)
		return DROCE_WIRE_RUNT;
	p = segs[0].data;
	seg0_len = segs[0].len;
	total = 0;
	for (i = 0; i < nseg; i++)
		total += segs[i].len;
	pkt->hdr = p;

	r = parse_to_udp_port(p, seg0_len, total, flags, pkt);
	if (r != DROCE_WIRE_OK)
		return r;
	r = check_ip_udp(p, total, flags, pkt, &ip_end);
	if (r != DROCE_WIRE_OK)
		return r;

	pkt->bth_off = pkt->l4_off + DROCE_UDP_HLEN;
	if (pkt->bth_off + (uint32_t)(DROCE_BTH_LEN + DROCE_ICRC_LEN) > ip_end)
		return DROCE_WIRE_SHORT_FOR_OPCODE;
	NEED(pkt->bth_off + (uint32_t)DROCE_BTH_LEN);
	bth = (const struct droce_bth *)(p + pkt->bth_off);
	pkt->layers |= DROCE_WIRE_HAVE_BTH;
	if (droce_bth_tver(bth) != 0)
		return DROCE_WIRE_BAD_TVER;
	oi = droce_opcode_info(droce_bth_opcode(bth));
	if (oi == NULL)
		return DROCE_WIRE_UNKNOWN_OPCODE;

	icrc_off = ip_end - DROCE_ICRC_LEN;
	hdrs_end = pkt->bth_off + oi->hdr_len;
	if (hdrs_end > icrc_off)
		return DROCE_WIRE_SHORT_FOR_OPCODE;
	NEED(hdrs_end);

	/* 9.2.4: payload plus pad fill whole 4-byte words; only a LAST/ONLY packet pads. */
	data_len = icrc_off - hdrs_end;
	pkt->pad = droce_bth_pad(bth);
	if (data_len % 4 != 0)
		return DROCE_WIRE_BAD_PAD_ALIGN;
	if (!(oi->flags & DROCE_OPF_PAYLOAD) && data_len != 0)
		return DROCE_WIRE_BAD_PAYLOAD_LEN;
	if (pkt->pad != 0 && (!(oi->flags & DROCE_OPF_LAST) || pkt->pad > data_len))
		return DROCE_WIRE_BAD_PAD;
	pkt->payload_len = data_len - pkt->pad;
	if (pkt->payload_len > DROCE_WIRE_MAX_PAYLOAD ||
	    (oi->payload_fixed != 0 && pkt->payload_len != oi->payload_fixed))
		return DROCE_WIRE_BAD_PAYLOAD_LEN;

	pkt->info = oi;
	pkt->payload_off = hdrs_end;
	pkt->icrc_off = icrc_off;
	pkt->len = ip_end;
	pkt->layers |= DROCE_WIRE_HAVE_ALL;
	/* ip_end <= total was checked, so the four ICRC bytes are there. */
	if (flags & DROCE_WIRE_PARSE_NO_ICRC) {
		pkt->icrc = icrc_read(segs, nseg, icrc_off);
		return DROCE_WIRE_OK;
	}
	return droce_wire_icrc_check(segs, nseg, pkt) ? DROCE_WIRE_OK : DROCE_WIRE_BAD_ICRC;
}

enum droce_wire_icrc_status
droce_wire_malformed_icrc(const struct droce_wire_seg *segs, unsigned int nseg,
			  struct droce_wire_pkt *pkt)
{
	uint32_t seg0_len, total, need, ip_end, udp_end = 0, end;
	bool udp_known;
	const uint8_t *p;
	unsigned int i;

	/* HAVE_L4: the IP header is in segs[0], and the UDP port said RoCEv2. */
	if (nseg == 0 || !(pkt->layers & DROCE_WIRE_HAVE_L4))
		return DROCE_WIRE_ICRC_NOT_ROCE;
	p = segs[0].data;
	seg0_len = segs[0].len;
	total = 0;
	for (i = 0; i < nseg; i++)
		total += segs[i].len;

	/* The packet's end: by the IP length, else by the UDP length (if it was read). */
	need = pkt->l4_off + (uint32_t)(DROCE_UDP_HLEN + DROCE_BTH_LEN + DROCE_ICRC_LEN);
	ip_end = ip_end_stated(p, pkt);
	udp_known = seg0_len >= pkt->l4_off + (uint32_t)DROCE_UDP_HLEN;
	if (udp_known)
		udp_end = pkt->l4_off +
			  droce_udp_len((const struct droce_udp_hdr *)(p + pkt->l4_off));
	if (ip_end >= need && ip_end <= total)
		end = ip_end;
	else if (udp_known && udp_end >= need && udp_end <= total)
		end = udp_end;
	else if (ip_end > total || udp_end > total)
		return DROCE_WIRE_ICRC_CUT;
	else
		return DROCE_WIRE_ICRC_NO_ROOM;
	if (seg0_len < need - DROCE_ICRC_LEN)
		return DROCE_WIRE_ICRC_HDR_SPLIT;

	pkt->icrc_off = end - DROCE_ICRC_LEN;
	return droce_wire_icrc_check(segs, nseg, pkt) ? DROCE_WIRE_ICRC_OK : DROCE_WIRE_ICRC_BAD;
}
