/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef WIRE_LOC_H
#define WIRE_LOC_H

/* Helpers shared by the files of lib/wire, grouped by the file that defines them. */

#include <stdint.h>

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

#endif /* WIRE_LOC_H */
