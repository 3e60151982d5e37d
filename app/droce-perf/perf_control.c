/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A run on a worker lcore, controlled from the main lcore (-i's prompt, perf_prompt.c, and
 * --stats-period): launch runs perf_run_sizes() on the first worker lcore; stop sets the
 * run's stop flag, which the traffic loops honour as the end of -D (the last sends
 * complete and are counted), and waits for the worker; the figures, perftest's footer
 * and the ports' statistics follow, as testpmd's at stop.
 */
#include <stdio.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>

#include "perf.h"

/* The worker lcore: the run's sizes, then the flag the main lcore polls. */
static int
worker_run(void *arg)
{
	struct perf_control *c = arg;
	int ret = perf_run_sizes(c->r);

	__atomic_store_n(&c->finished, true, __ATOMIC_RELEASE);
	return ret;
}

bool
perf_control_finished(const struct perf_control *c)
{
	return __atomic_load_n(&c->finished, __ATOMIC_ACQUIRE);
}

/* Counts as they are now: the first periodic block's rates start here. */
static void
ports_mark(const struct perf_run *r, struct perf_port_mark mark[2])
{
	const struct perf_host *h[2] = { &r->a, &r->b };
	struct rte_eth_stats st;
	int i;

	for (i = 0; i < 2; i++) {
		memset(&mark[i], 0, sizeof(mark[i]));
		if (!h[i]->port_started || rte_eth_stats_get(h[i]->port, &st) != 0)
			continue;
		mark[i].tsc = rte_rdtsc();
		mark[i].ipackets = st.ipackets;
		mark[i].opackets = st.opackets;
		mark[i].ibytes = st.ibytes;
		mark[i].obytes = st.obytes;
	}
}

/* Settings checked, hosts fit for them, perftest's header, the worker launched. */
int
perf_control_launch(struct perf_control *c)
{
	struct perf_run *r = c->r;

	if (perf_opts_check(c->next) != 0)
		return -1;
	c->active = *c->next;
	r->o = &c->active;
	if (perf_hosts_fit(r) != 0)
		return -1;
	__atomic_store_n(&r->stop, false, __ATOMIC_RELAXED);
	/* the worker runs both hosts; the main lcore stays in control */
	r->a_lcore = r->b_lcore = c->worker;
	c->finished = false;
	ports_mark(r, c->mark);
	perf_report_header(r);
	if (rte_eal_remote_launch(worker_run, c, c->worker) != 0) {
		fprintf(stderr, "droce-perf: lcore %u is busy\n", c->worker);
		return -1;
	}
	c->launched = true;
	return 0;
}

/*
 * After stop (or when the run ended by itself): the worker waited for, its figures out,
 * then perftest's footer and, as testpmd at stop, the ports' statistics.
 */
int
perf_control_join(struct perf_control *c)
{
	struct perf_run *r = c->r;
	int ret = rte_eal_wait_lcore(c->worker);

	c->launched = false;
	__atomic_store_n(&r->stop, false, __ATOMIC_RELAXED);
	perf_report_footer(r);
	perf_report_ports(r);
	if (ret != 0)
		fprintf(stderr, "droce-perf: the run failed; the next start sets the hosts up "
			"again\n");
	fflush(stdout);
	return ret;
}

int
perf_control_stop(struct perf_control *c)
{
	__atomic_store_n(&c->r->stop, true, __ATOMIC_RELAXED);
	return perf_control_join(c);
}

void
perf_control_init(struct perf_control *c, struct perf_run *r, struct perf_opts *o)
{
	memset(c, 0, sizeof(*c));
	c->r = r;
	c->next = o;
	c->worker = rte_get_next_lcore(-1, 1, 0);
}

/*
 * --stats-period without -i: one run, as without it, on the worker lcore; every period
 * the ports' statistics with their rates; SIGINT or SIGTERM end the run as stop does.
 */
int
perf_periodic(struct perf_run *r, struct perf_opts *o)
{
	uint64_t hz = rte_get_tsc_hz(), period = o->stats_period * hz, next;
	struct perf_control c;
	int ret;

	perf_control_init(&c, r, o);
	if (perf_control_launch(&c) != 0) {
		r->o = o;
		return 1;
	}
	next = rte_rdtsc() + period;
	while (!perf_control_finished(&c)) {
		rte_delay_us_sleep(PERF_WATCH_MS * 1000);
		if (rte_rdtsc() >= next && !perf_control_finished(&c)) {
			next += period;
			perf_report_ports_since(r, c.mark);
			fflush(stdout);
		}
	}
	ret = perf_control_join(&c);
	r->o = o;
	return ret == 0 ? 0 : 1;
}
