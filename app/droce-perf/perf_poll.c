/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A host's engines at work: one pass of each, and of its lib/net when its peer is another
 * process (perf_net.c); their counters summed. What every traffic loop, wait and check
 * calls, on the lcore that runs the host.
 */
#include <string.h>

#include "perf.h"

void
perf_host_poll(struct perf_host *h)
{
	uint32_t i;

	for (i = 0; i < h->nb_engines; i++)
		droce_engine_poll(h->eng[i]);
	if (h->net != NULL)
		perf_net_poll(h);
}

void
perf_host_stats(const struct perf_host *h, struct droce_engine_stats *st)
{
	struct droce_engine_stats one;
	uint64_t *sum = (uint64_t *)st;
	const uint64_t *add = (const uint64_t *)&one;
	uint32_t i, k;

	memset(st, 0, sizeof(*st));
	for (i = 0; i < h->nb_engines; i++) {
		droce_engine_stats_get(h->eng[i], &one);
		for (k = 0; k < DROCE_ENGINE_NB_COUNTERS; k++)
			sum[k] += add[k];
	}
}
