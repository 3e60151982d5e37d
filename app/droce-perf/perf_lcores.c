/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Host b on a worker lcore of its own, host a on the main lcore, as droce-bench-engine's
 * --lcores 2: with two lcores on the EAL line and neither -i nor --stats-period. Each
 * lcore runs its host's application step and polls only its host's engines; the control
 * calls (create, modify, destroy) happen before the worker is launched and after it
 * returned. A round ends when both ends agree: a publishes that its part is over and its
 * counts (a_done), b runs until it has what a sent and publishes its own (b_done); the
 * main lcore joins the worker before it reads b's state for the figure and the checks.
 */
#include <stdio.h>
#include <string.h>

#include <rte_launch.h>
#include <rte_lcore.h>

#include "perf.h"

bool
perf_run_splits(const struct perf_run *r)
{
	const struct perf_opts *o = r->o;

	if (r->b_lcore == r->a_lcore || o->role != PERF_ROLE_BOTH)
		return false;
	if (o->mode->raw)
		return true;
	return o->qp_type == DROCE_SHM_QPT_RC && !o->fault.on;
}

int
perf_split_launch(struct perf_run *r, lcore_function_t *fn, void *arg)
{
	memset(&r->split, 0, sizeof(r->split));
	if (rte_eal_remote_launch(fn, arg, r->b_lcore) != 0) {
		fprintf(stderr, "droce-perf: lcore %u (host b) is busy\n", r->b_lcore);
		return -1;
	}
	return 0;
}

int
perf_split_join(struct perf_run *r)
{
	perf_split_set(&r->split.quit);
	return rte_eal_wait_lcore(r->b_lcore) == 0 && !r->split.b_failed ? 0 : -1;
}
