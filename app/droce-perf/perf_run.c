/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A run: every size of it (one, or -a's powers of two), each a round of its mode (the
 * row's run, which prints the figure), the link settled between RoCE rounds, a failure's
 * engine counters on stderr. main runs it on the main lcore, perf_control.c on a worker.
 */
#include <stdint.h>
#include <stdio.h>

#include <rte_cycles.h>

#include "perf.h"

/* hosts_settle: the link is quiet after this long without a packet; give up after max */
#define SETTLE_QUIET_US		2000
#define SETTLE_MAX_MS		500

/*
 * After a RoCE round with both hosts here: what is still on the link (a spurious early
 * go-back's duplicates, the ACKs of those) is received before anyone reads the ports'
 * counters, so what one port sent the other received. Done when a pass over both hosts
 * moved no packet and none moved for SETTLE_QUIET_US before it; SETTLE_MAX_MS at most.
 * Quiet is judged after a pass, never before one: off its CPU for longer than the quiet
 * time (a loaded machine), the loop would otherwise stop with packets in the rings.
 */
static void
hosts_settle(struct perf_run *r)
{
	uint64_t hz = rte_get_tsc_hz(), t = rte_rdtsc(), moved_at = t, last = UINT64_MAX;
	uint64_t end = t + hz / 1000 * SETTLE_MAX_MS, quiet = hz / 1000000 * SETTLE_QUIET_US;
	struct droce_engine_stats sa, sb;
	uint64_t moved;

	for (;;) {
		perf_host_poll(&r->a);
		perf_host_poll(&r->b);
		perf_host_stats(&r->a, &sa);
		perf_host_stats(&r->b, &sb);
		t = rte_rdtsc();
		moved = sa.rx_pkts + sa.tx_pkts + sa.rx_handoff_in + sb.rx_pkts + sb.tx_pkts +
			sb.rx_handoff_in;
		if (moved != last) {
			last = moved;
			moved_at = t;
		} else if (t - moved_at >= quiet) {
			return;
		}
		if (t >= end) {
			fprintf(stderr, "droce-perf: the link was still busy %d ms after the round\n",
				SETTLE_MAX_MS);
			return;
		}
	}
}

int
perf_run_sizes(struct perf_run *r)
{
	const struct perf_opts *o = r->o;
	uint32_t largest = perf_largest_size(o);
	uint32_t size, i;
	int ret;

	for (size = o->all_sizes ? PERF_MIN_SIZE : o->size; size <= largest; size *= 2) {
		ret = o->mode->run(r, size);
		if (ret != 0) {
			r->broken = true;
			fprintf(stderr, "droce-perf: %s at %u bytes failed; host a:", o->mode->name,
				size);
			for (i = 0; i < r->a.nb_engines; i++)
				droce_engine_stats_print(stderr, r->a.eng[i]);
			fprintf(stderr, "\nhost b:");
			for (i = 0; i < r->b.nb_engines; i++)
				droce_engine_stats_print(stderr, r->b.eng[i]);
			fprintf(stderr, "\n");
			return -1;
		}
		if (o->role == PERF_ROLE_BOTH && !o->mode->raw)
			hosts_settle(r);
		/* stop and signals end -a's sequence too */
		if (!o->all_sizes || perf_run_stopping(r))
			break;
	}
	return 0;
}
