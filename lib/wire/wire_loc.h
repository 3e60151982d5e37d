/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef WIRE_LOC_H
#define WIRE_LOC_H

/* Helpers shared by the files of lib/wire, grouped by the file that defines them. */

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* wire_icrc.c */

/*
 * crc32() of the 8 bytes of 0xFF that stand in for the LRH's variant fields (A17.3.3):
 * constant, so each ICRC starts from here instead of hashing them again.
 * test_wire_icrc.c checks it against crc32_gzip_refl(0, ff x 8).
 */
#define WIRE_ICRC_SEED 0x2144DF1Cu

/* Continues a zlib-style crc32 over len bytes, choosing ISA-L's fastest routine. */
uint32_t wire_crc_update(uint32_t crc, const void *data, uint32_t len);

/* IPv4 header checksums (wire_build.c, wire_parse.c) */

/* Folds a 32-bit one's-complement sum to 16 bits and complements it (RFC 1071). */
static inline uint16_t
wire_csum_fold(uint32_t sum)
{
	sum = (sum & 0xFFFF) + (sum >> 16);
	sum = (sum & 0xFFFF) + (sum >> 16);
	return (uint16_t)~sum;
}

/* One's-complement sum of len bytes (len even) as big-endian 16-bit words. */
static inline uint32_t
wire_csum_add(uint32_t sum, const void *data, uint32_t len)
{
	const uint8_t *p = data;
	uint32_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	return sum;
}

/*
 * True when the IPv4 header of ihl bytes (a multiple of 4) at hdr has a valid checksum.
 * Sums 32-bit words: a third of the work of 16-bit ones, and the fold gives the same
 * one's-complement result (RFC 1071, 2.(B)).
 */
static inline bool
wire_ipv4_csum_ok(const void *hdr, uint32_t ihl)
{
	const uint8_t *p = hdr;
	uint64_t sum = 0;
	uint32_t i, w;

	for (i = 0; i < ihl; i += 4) {
		memcpy(&w, p + i, sizeof(w));
		sum += w;
	}
	/* Native byte order is fine: a valid header sums to all ones in either order. */
	sum = (sum & 0xFFFFFFFF) + (sum >> 32);
	sum = (sum & 0xFFFFFFFF) + (sum >> 32);
	return wire_csum_fold((uint32_t)sum) == 0;
}

#endif /* WIRE_LOC_H */
