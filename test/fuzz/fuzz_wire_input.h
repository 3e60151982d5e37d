/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef FUZZ_WIRE_INPUT_H
#define FUZZ_WIRE_INPUT_H

/*
 * What fuzz_wire_parse and its seed generator share. The layout of one input, so that
 * the seeds mean what they say:
 *
 *   byte 0        control: parser flags and the segment count
 *   bytes 1..2    payload copy offset (little-endian)
 *   bytes 3..4    payload copy capacity (little-endian)
 *   byte 5        re-split shape: chunk size and whether empty segments go between
 *   bytes 6..19   FUZZ_MAX_SEGS - 1 little-endian 16-bit segment lengths, of which
 *                 the first nseg - 1 are used
 *   then          the packet bytes
 *
 * The control part has a fixed length so that a mutation of the segment count does not
 * shift the packet. Each segment length is taken modulo (bytes left + 1), so any value
 * is valid and 0 makes an empty segment; the last segment takes what is left.
 */

#include <stdint.h>

#define FUZZ_CTL_L3		0x01u	/* DROCE_WIRE_PARSE_L3 */
#define FUZZ_CTL_NO_ICRC	0x02u	/* DROCE_WIRE_PARSE_NO_ICRC */
#define FUZZ_CTL_NSEG_SHIFT	2
#define FUZZ_CTL_NSEG_MASK	0x07u	/* segments: 1 + this field */
#define FUZZ_MAX_SEGS		(FUZZ_CTL_NSEG_MASK + 1)

#define FUZZ_RESPLIT_CHUNK_MASK	0x0Fu	/* chunks of 1 + this many bytes */
#define FUZZ_RESPLIT_EMPTY	0x80u	/* an empty segment after every chunk */

#define FUZZ_SPLIT_OFF		6	/* where the segment lengths start */
#define FUZZ_SPLIT_LEN		2	/* bytes per segment length */
#define FUZZ_CTL_LEN		(FUZZ_SPLIT_OFF + (FUZZ_MAX_SEGS - 1) * FUZZ_SPLIT_LEN)

static inline unsigned int
fuzz_ctl_nseg(uint8_t ctl)
{
	return 1 + ((ctl >> FUZZ_CTL_NSEG_SHIFT) & FUZZ_CTL_NSEG_MASK);
}

static inline uint8_t
fuzz_ctl(uint32_t fuzz_flags, unsigned int nseg)
{
	return (uint8_t)(fuzz_flags | ((nseg - 1) & FUZZ_CTL_NSEG_MASK) << FUZZ_CTL_NSEG_SHIFT);
}

static inline uint16_t
fuzz_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

/* What fuzz_csum16() gives over an IPv4 header whose checksum is right. */
#define FUZZ_CSUM_OK		0xFFFFu

/*
 * One's-complement sum of len bytes as big-endian 16-bit words, folded to 16 bits
 * (RFC 1071). Written here rather than taken from lib/wire, which is what the fuzzer
 * checks.
 */
static inline uint16_t
fuzz_csum16(const uint8_t *p, uint32_t len)
{
	uint32_t sum = 0, i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	while (sum > 0xFFFF)
		sum = (sum & 0xFFFF) + (sum >> 16);
	return (uint16_t)sum;
}

#endif /* FUZZ_WIRE_INPUT_H */
