/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef DROCE_WIRE_MBUF_H
#define DROCE_WIRE_MBUF_H

/*
 * rte_mbuf chains as lib/wire segment lists. Header-only, so lib/wire itself links no
 * DPDK: the engine and droce-perf include this, libdroce never does.
 */

#include <rte_mbuf.h>

#include "droce_wire_pkt.h"

/*
 * Fills segs with the data of each segment of chain m, at most max of them. Returns the
 * number of segments, or 0 when the chain has more than max (the caller drops it).
 */
static inline unsigned int
droce_wire_mbuf_segs(const struct rte_mbuf *m, struct droce_wire_seg *segs, unsigned int max)
{
	unsigned int n = 0;

	for (; m != NULL; m = m->next) {
		if (n == max)
			return 0;
		segs[n].data = rte_pktmbuf_mtod(m, const void *);
		segs[n].len = m->data_len;
		n++;
	}
	return n;
}

#endif /* DROCE_WIRE_MBUF_H */
