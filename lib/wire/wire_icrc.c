/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * The RoCEv2 invariant CRC (IB spec Annex A17.3.3). ISA-L's crc32_gzip_refl computes
 * zlib's crc32() (reflected IEEE polynomial, inversion inside) and continues across
 * calls, which is what a segmented packet needs.
 */

#include <string.h>

#include <isa-l/crc.h>

#include "droce_wire_pkt.h"

/*
 * crc32() of the 8 bytes of 0xFF that stand in for the LRH's variant fields (A17.3.3):
 * constant, so each ICRC starts from here instead of hashing them again.
 * test_wire_icrc.c checks it against crc32_gzip_refl(0, ff x 8).
 */
#define ICRC_SEED 0x2144DF1Cu

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

uint32_t
droce_icrc_calc(const struct droce_wire_seg *segs, unsigned int nseg, uint32_t l3_off,
		uint32_t icrc_off)
{
	uint8_t masked[ICRC_MASKED_MAX];
	uint32_t covered, seg_start, crc;
	unsigned int i;

	covered = l3_off + icrc_mask_headers((const uint8_t *)segs[0].data + l3_off, masked);
	crc = crc32_gzip_refl(ICRC_SEED, masked, covered - l3_off);

	/* Then [covered, icrc_off): the rest of the headers, payload and pad, by segment. */
	seg_start = 0;
	for (i = 0; i < nseg && seg_start < icrc_off; i++) {
		uint32_t seg_end = seg_start + segs[i].len;
		uint32_t from = covered > seg_start ? covered : seg_start;
		uint32_t to = icrc_off < seg_end ? icrc_off : seg_end;

		if (from < to)
			crc = crc32_gzip_refl(crc, (const uint8_t *)segs[i].data +
					      (from - seg_start), to - from);
		seg_start = seg_end;
	}
	return crc;
}
