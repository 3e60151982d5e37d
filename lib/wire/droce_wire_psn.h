/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef DROCE_WIRE_PSN_H
#define DROCE_WIRE_PSN_H

/*
 * 24-bit packet sequence numbers (IB spec 9.7.1). PSNs wrap from 0xFFFFFF to 0 and are
 * compared as serial numbers: a is before b when the forward distance from a to b is
 * less than half the space (2^23). Two PSNs exactly 2^23 apart have no order: diff
 * gives -2^23 both ways, so each is "before" the other. The transport never lets that
 * many packets be outstanding, so the tie never decides anything.
 */

#include <stdbool.h>
#include <stdint.h>

#include "droce_wire_hdr.h"

#define DROCE_PSN_HALF	0x00800000u

/* PSN a + n, wrapped to 24 bits. n may be any 32-bit count. */
static inline uint32_t
droce_psn_add(uint32_t a, uint32_t n)
{
	return (a + n) & DROCE_PSN_MASK;
}

/* Forward distance from a to b, 0..2^24-1: how many increments turn a into b. */
static inline uint32_t
droce_psn_dist(uint32_t a, uint32_t b)
{
	return (b - a) & DROCE_PSN_MASK;
}

/* Signed serial difference a - b in [-2^23, 2^23): negative when a is before b. */
static inline int32_t
droce_psn_diff(uint32_t a, uint32_t b)
{
	/* Shift the 24-bit difference into the top of an int32 and back, sign-extending. */
	return (int32_t)((a - b) << 8) >> 8;
}

static inline bool droce_psn_lt(uint32_t a, uint32_t b) { return droce_psn_diff(a, b) < 0; }
static inline bool droce_psn_le(uint32_t a, uint32_t b) { return droce_psn_diff(a, b) <= 0; }
static inline bool droce_psn_gt(uint32_t a, uint32_t b) { return droce_psn_diff(a, b) > 0; }
static inline bool droce_psn_ge(uint32_t a, uint32_t b) { return droce_psn_diff(a, b) >= 0; }

/* True when psn lies in the window of size PSNs that starts at start (start included). */
static inline bool
droce_psn_in_window(uint32_t psn, uint32_t start, uint32_t size)
{
	return droce_psn_dist(start, psn) < size;
}

#endif /* DROCE_WIRE_PSN_H */
