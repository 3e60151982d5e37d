/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * The RoCEv2 invariant CRC (IB spec Annex A17.3.3). ISA-L's crc32_gzip_refl computes
 * zlib's crc32() (reflected IEEE polynomial, inversion inside) and continues across
 * calls, which is what a segmented packet needs.
 */

#include <string.h>

#include <isa-l/crc.h>

#include "droce_wire_pkt.h"
#include "wire_loc.h"


/* Largest masked prefix: IPv4 with options (60) or IPv6 (40), UDP, BTH. */
#define ICRC_MASKED_MAX (60 + DROCE_UDP_HLEN + DROCE_BTH_LEN)

/*
 * Copies the IP, UDP and BTH headers starting at l3 into buf with the variant fields set
 * to ones; returns how many bytes it copied.
 */
static uint32_t
icrc_mask_headers(const uint8_t *l3, uint8_t *buf)
{
	uint32_t ip_len;

	if ((l3[0] >> 4) == 4) {
		struct droce_ipv4_hdr *ip = (struct droce_ipv4_hdr *)buf;

		ip_len = (l3[0] & 0xF) * 4u;
		memcpy(buf, l3, ip_len + DROCE_UDP_HLEN + DROCE_BTH_LEN);
		ip->tos = 0xFF;
		ip->ttl = 0xFF;
		ip->csum = 0xFFFF;
	} else {
		struct droce_ipv6_hdr *ip = (struct droce_ipv6_hdr *)buf;

		ip_len = DROCE_IPV6_HLEN;
		memcpy(buf, l3, ip_len + DROCE_UDP_HLEN + DROCE_BTH_LEN);
		/* Keep the version nibble; traffic class and flow label become ones. */
		ip->vtc_flow |= htobe32(0x0FFFFFFF);
		ip->hop_limit = 0xFF;
	}
	((struct droce_udp_hdr *)(buf + ip_len))->csum = 0xFFFF;
	((struct droce_bth *)(buf + ip_len + DROCE_UDP_HLEN))->fb_dqpn |= htobe32(0xFF000000);
	return ip_len + DROCE_UDP_HLEN + DROCE_BTH_LEN;
}

/*
 * The fast way to hash the masked headers. ISA-L reads its input 16 bytes at a time;
 * when that input was just written with byte-sized stores (the masking above), every
 * load waits for the stores to retire, about 30 ns per packet. So the headers are
 * masked in 16-byte vectors instead, into a buffer that is a whole number of vectors:
 *
 *   [zeros][ff ff ff ff][IP + UDP + BTH, variant fields set to ones]
 *
 * crc32_gzip_refl(~0, .) starts from an internal state of 0, which zeros leave at 0;
 * from 0, four 0xFF bytes reach the state that eight 0xFF bytes reach from the usual
 * start. So this buffer hashes to the same CRC as 8 x 0xFF + the masked headers. The
 * lead-in is loaded from the bytes before the IP header (the Ethernet header) and
 * masked away, so the buffer is built from 16-byte loads at one offset.
 *
 * Layout per IP version: lead-in length, masked bytes, and per-byte keep/set masks.
 */
#define ICRC_VEC		16
#define ICRC_V4_LEAD		8	/* 8 + 20 + 8 + 12 = 48 */
#define ICRC_V6_LEAD		4	/* 4 + 40 + 8 + 12 = 64 */
#define ICRC_V4_BUF		48
#define ICRC_V6_BUF		64

typedef uint8_t icrc_vec __attribute__((vector_size(ICRC_VEC)));

/* Offsets in the buffer: lead-in, then the IP header at LEAD. */
#define V4(off)	(ICRC_V4_LEAD + (off))
#define V6(off)	(ICRC_V6_LEAD + (off))

static const uint8_t icrc_v4_keep[ICRC_V4_BUF] = { [ICRC_V4_LEAD ... ICRC_V4_BUF - 1] = 0xFF };
static const uint8_t icrc_v4_set[ICRC_V4_BUF] = {
	[ICRC_V4_LEAD - 4 ... ICRC_V4_LEAD - 1] = 0xFF,
	[V4(1)] = 0xFF,				/* TOS */
	[V4(8)] = 0xFF,				/* TTL */
	[V4(10)] = 0xFF, [V4(11)] = 0xFF,	/* header checksum */
	[V4(26)] = 0xFF, [V4(27)] = 0xFF,	/* UDP checksum */
	[V4(32)] = 0xFF,			/* BTH byte 4 */
};
static const uint8_t icrc_v6_keep[ICRC_V6_BUF] = { [ICRC_V6_LEAD ... ICRC_V6_BUF - 1] = 0xFF };
static const uint8_t icrc_v6_set[ICRC_V6_BUF] = {
	[ICRC_V6_LEAD - 4 ... ICRC_V6_LEAD - 1] = 0xFF,
	[V6(0)] = 0x0F, [V6(1)] = 0xFF, [V6(2)] = 0xFF, [V6(3)] = 0xFF,	/* TC, flow label */
	[V6(7)] = 0xFF,				/* hop limit */
	[V6(46)] = 0xFF, [V6(47)] = 0xFF,	/* UDP checksum */
	[V6(52)] = 0xFF,			/* BTH byte 4 */
};

/* CRC of buf_len bytes loaded from src, masked with keep and set, in vectors. */
static uint32_t
icrc_masked_vectors(const uint8_t *src, const uint8_t *keep, const uint8_t *set,
		    uint32_t buf_len)
{
	uint8_t buf[ICRC_V6_BUF] __attribute__((aligned(ICRC_VEC)));
	uint32_t i;

	for (i = 0; i < buf_len; i += ICRC_VEC) {
		icrc_vec v, k, m;

		memcpy(&v, src + i, ICRC_VEC);
		memcpy(&k, keep + i, ICRC_VEC);
		memcpy(&m, set + i, ICRC_VEC);
		v = (v & k) | m;
		memcpy(buf + i, &v, ICRC_VEC);
	}
	return crc32_gzip_refl(~0u, buf, buf_len);
}

/*
 * CRC state after 8 x 0xFF and the masked IP, UDP and BTH headers at l3; sets *len to
 * the bytes of the packet consumed.
 */
static uint32_t
icrc_headers(const uint8_t *l3, uint32_t l3_off, uint32_t *len)
{
	uint8_t masked[ICRC_MASKED_MAX];

	/* IPv4 without options, or IPv6, with an Ethernet header in front: vectors. */
	if (l3[0] == 0x45 && l3_off >= ICRC_V4_LEAD) {
		*len = ICRC_V4_BUF - ICRC_V4_LEAD;
		return icrc_masked_vectors(l3 - ICRC_V4_LEAD, icrc_v4_keep, icrc_v4_set,
					   ICRC_V4_BUF);
	}
	if ((l3[0] >> 4) == 6 && l3_off >= ICRC_V6_LEAD) {
		*len = ICRC_V6_BUF - ICRC_V6_LEAD;
		return icrc_masked_vectors(l3 - ICRC_V6_LEAD, icrc_v6_keep, icrc_v6_set,
					   ICRC_V6_BUF);
	}
	/* IPv4 options, or no room before the IP header (captures without Ethernet). */
	*len = icrc_mask_headers(l3, masked);
	return crc32_gzip_refl(WIRE_ICRC_SEED, masked, *len);
}

uint32_t
wire_crc_update(uint32_t crc, const void *data, uint32_t len)
{
	/*
	 * ISA-L's folding code has a fixed cost of 10-20 ns however short the input; its
	 * table-driven version is faster below one vector.
	 */
	if (len < ICRC_VEC)	/* declared without const, but it only reads the bytes */
		return crc32_gzip_refl_base(crc, (uint8_t *)(uintptr_t)data, len);
	return crc32_gzip_refl(crc, data, len);
}

uint32_t
droce_icrc_calc(const struct droce_wire_seg *segs, unsigned int nseg, uint32_t l3_off,
		uint32_t icrc_off)
{
	uint32_t hdr_len, covered, seg_start, crc;
	unsigned int i;

	crc = icrc_headers((const uint8_t *)segs[0].data + l3_off, l3_off, &hdr_len);
	covered = l3_off + hdr_len;

	/* Then [covered, icrc_off): the rest of the headers, payload and pad, by segment. */
	seg_start = 0;
	for (i = 0; i < nseg && seg_start < icrc_off; i++) {
		uint32_t seg_end = seg_start + segs[i].len;
		uint32_t from = covered > seg_start ? covered : seg_start;
		uint32_t to = icrc_off < seg_end ? icrc_off : seg_end;

		if (from < to)
			crc = wire_crc_update(crc, (const uint8_t *)segs[i].data +
					      (from - seg_start), to - from);
		seg_start = seg_end;
	}
	return crc;
}
