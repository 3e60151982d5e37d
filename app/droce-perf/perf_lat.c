/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lat: RC SEND ping-pong on one QP, perftest's ib_send_lat, every send signaled, its
 * figures half the round trip from a histogram. The pinger (host a) sends first and then
 * after each answer, the ponger (host b) answers each message; with both hosts here the
 * pinger warms up first and alone is measured, b on the main lcore in turn with a or on
 * its own (perf_lcores.c); with a peer process (perftest does no warm-up) each end sends
 * exactly -n and measures its own round trips.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_cycles.h>

#include "perf.h"

/* The QP's rings: one ping out at a time, shallow rings suffice. */
#define LAT_DEPTH		64
#define LAT_WARMUP		16
/* Latency histogram: 10 ns buckets up to 1 ms; beyond that the last bucket (max is exact). */
#define HIST_NS			10
#define HIST_BUCKETS		100000

/* Half round trips, as a histogram and sums (ns). */
struct lat_samples {
	uint32_t *hist;
	uint64_t n;
	double sum, sum2, min, max;
};

/*
 * One end of the ping-pong (perftest's run_iter_lat_send): the pinger (host a) sends
 * first and then after each answer, the ponger (host b) answers each message. Each end
 * takes the time from its send to the next message it receives: a round trip.
 */
struct lat_end {
	/* its own cache line: host b's end may run on its own lcore */
	struct perf_host *h __rte_cache_aligned;
	struct perf_qp *q;
	bool pinger;
	uint64_t total;		/* messages each way; UINT64_MAX: until told */
	uint64_t skip;		/* round trips of warm-up, not sampled */
	uint64_t scnt, rcnt;
	uint64_t scomp;		/* sends complete */
	uint64_t t_sent;
	struct lat_samples *smp;	/* NULL: not measured */
	struct perf_run *r;
	uint32_t size;
};

static void
lat_sample(struct lat_samples *s, double ns)
{
	uint64_t b = (uint64_t)(ns / HIST_NS);

	s->hist[RTE_MIN(b, (uint64_t)HIST_BUCKETS - 1)]++;
	if (s->n == 0 || ns < s->min)
		s->min = ns;
	if (ns > s->max)
		s->max = ns;
	s->sum += ns;
	s->sum2 += ns * ns;
	s->n++;
}

static int
lat_send(struct perf_host *h, struct perf_qp *q, uint32_t size)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;

	sge.addr = (uintptr_t)h->buf;
	sge.length = size;
	sge.lkey = h->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = q->posted++;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	return droce_shm_post_send(&q->view, &wr, &bad);
}

/* One pass of one end: its engines, a message received, its send if its turn. Or -1. */
static int
lat_step(struct lat_end *e, uint32_t size)
{
	const char *who = e->pinger ? "pinger" : "ponger";
	struct ibv_wc wc[PERF_POLL_BURST];
	uint64_t now;
	int got, i;

	perf_host_poll(e->h);
	got = droce_shm_poll_cq(&e->h->rcq.view, 1, wc);
	now = rte_rdtsc();
	if (got < 0)
		return -1;
	if (got == 1) {
		if (!perf_wc_ok(&wc[0], who) || perf_qp_post_recvs(e->h, e->q, 1) != 1)
			return -1;
		e->q->rdone++;
		e->h->rdone_sum++;
		e->rcnt++;
		if (e->smp != NULL && e->scnt > e->skip && e->scnt > 0)
			/* half the round trip, as perftest's send_lat */
			lat_sample(e->smp, (double)(now - e->t_sent) * 1e9 /
					   (double)rte_get_tsc_hz() / 2);
	}
	if (e->scnt < e->total && (e->pinger ? e->scnt == e->rcnt : e->rcnt > e->scnt)) {
		e->t_sent = rte_rdtsc();
		if (lat_send(e->h, e->q, size) != 0)
			return -1;
		e->scnt++;
	}
	got = droce_shm_poll_cq(&e->h->scq.view, PERF_POLL_BURST, wc);
	for (i = 0; i < got; i++) {
		if (!perf_wc_ok(&wc[i], who))
			return -1;
		e->scomp++;
	}
	return got < 0 ? -1 : 0;
}

/* The ponger on host b's own lcore (perf_lcores.c): it answers until the round ends. */
static int
lat_b_main(void *arg)
{
	struct lat_end *e = arg;
	struct perf_run *r = e->r;

	while (!perf_split_flag(&r->split.quit)) {
		if (lat_step(e, e->size) != 0) {
			perf_split_set(&r->split.b_failed);
			return -1;
		}
	}
	return 0;
}

/*
 * Done: every message sent and received, and the last answer complete (acknowledged),
 * since a peer process stops polling us after it: the engine sends only when polled.
 */
static bool
lat_end_done(const struct lat_end *e)
{
	return e->scnt == e->total && e->rcnt == e->total && e->scomp == e->scnt;
}

/*
 * The value below which a fraction q of the samples lie, from the histogram (ns): the
 * middle of its bucket, within the exact min and max.
 */
static double
hist_quantile(const uint32_t *hist, uint64_t n, double q, double min, double max)
{
	uint64_t want = (uint64_t)ceil(q * (double)n), seen = 0;
	uint32_t i;

	if (want == 0)
		want = 1;
	for (i = 0; i < HIST_BUCKETS; i++) {
		seen += hist[i];
		if (seen >= want)
			return RTE_MAX(min, RTE_MIN(max, (i + 0.5) * HIST_NS));
	}
	return max;
}

/*
 * lat at one size: perftest's send_lat figures, half the round trip of each ping. Both
 * hosts here: the pinger warms up first and alone is measured; a peer process (perftest
 * does no warm-up) and this end each send exactly -n and measure their own round trips.
 */
static int
lat_run(struct perf_run *r, uint32_t size)
{
	const struct perf_opts *o = r->o;
	bool has_a = perf_run_has_a(r), has_b = perf_run_has_b(r), alone = r->remote != NULL;
	bool split = perf_run_splits(r);
	uint64_t hz = rte_get_tsc_hz(), t_end, t_last, progress = 0;
	struct lat_end ea, eb, *m;
	struct lat_samples smp;
	double mean;
	struct perf_lat f;

	memset(&smp, 0, sizeof(smp));
	smp.hist = calloc(HIST_BUCKETS, sizeof(*smp.hist));
	if (smp.hist == NULL)
		return -1;
	memset(&ea, 0, sizeof(ea));
	memset(&eb, 0, sizeof(eb));
	ea.h = &r->a;
	ea.pinger = true;
	ea.skip = alone ? 0 : LAT_WARMUP;
	ea.total = o->iters != 0 ? o->iters + ea.skip : UINT64_MAX;
	eb.h = &r->b;
	eb.total = alone ? o->iters : UINT64_MAX;
	eb.r = r;
	eb.size = size;
	m = has_a ? &ea : &eb;
	m->smp = &smp;
	if (has_a) {
		ea.q = &r->a.qps[0];
		perf_qp_fill_recvs(&r->a, ea.q);
	}
	if (has_b) {
		eb.q = &r->b.qps[0];
		perf_qp_fill_recvs(&r->b, eb.q);
	}
	if (perf_peer_run_start(r) != 0)
		goto fail_launch;
	t_last = rte_rdtsc();
	t_end = o->duration_s > 0 ? t_last + (uint64_t)(o->duration_s * (double)hz) : UINT64_MAX;
	if (split && perf_split_launch(r, lat_b_main, &eb) != 0)
		goto fail_launch;
	while (!lat_end_done(m)) {
		if (has_a && lat_step(&ea, size) != 0)
			goto fail;
		if (has_b && !split && lat_step(&eb, size) != 0)
			goto fail;
		if (split && perf_split_flag(&r->split.b_failed))
			goto fail;
		/* time is up, or the prompt's stop: the ping out is the last */
		if (has_a && ea.total != ea.scnt && (perf_run_stopping(r) ||
		    (ea.total == UINT64_MAX && rte_rdtsc() >= t_end)))
			ea.total = ea.scnt;
		if (m->rcnt + m->scnt != progress) {
			progress = m->rcnt + m->scnt;
			t_last = rte_rdtsc();
		} else if (rte_rdtsc() - t_last > PERF_STALL_S * hz) {
			fprintf(stderr, "droce-perf: no answer to a ping in %d s\n", PERF_STALL_S);
			goto fail;
		}
	}
	if (split && perf_split_join(r) != 0)
		goto fail_launch;
	if (smp.n == 0) {
		fprintf(stderr, "droce-perf: no ping completed in the time given\n");
		goto fail_launch;
	}
	mean = smp.sum / (double)smp.n;
	memset(&f, 0, sizeof(f));
	f.size = size;
	/* the pinger's round trips; the ponger's messages answered (one fewer round trip) */
	f.iters = m->pinger ? smp.n : m->rcnt;
	f.min_us = smp.min / 1000;
	f.max_us = smp.max / 1000;
	f.typical_us = hist_quantile(smp.hist, smp.n, 0.5, smp.min, smp.max) / 1000;
	f.avg_us = mean / 1000;
	f.stdev_us = sqrt(RTE_MAX(smp.sum2 / (double)smp.n - mean * mean, 0.0)) / 1000;
	f.p99_us = hist_quantile(smp.hist, smp.n, 0.99, smp.min, smp.max) / 1000;
	f.p999_us = hist_quantile(smp.hist, smp.n, 0.999, smp.min, smp.max) / 1000;
	perf_report_lat(r, &f);
	free(smp.hist);
	return 0;
fail:
	if (split)
		perf_split_join(r);
fail_launch:
	free(smp.hist);
	return -1;
}

/* perftest's: no --rate (one ping at a time), one QP, RC. */
static int
lat_check_opts(const struct perf_opts *o)
{
	if (o->rate > 0) {
		fprintf(stderr, "droce-perf: --rate: lat sends one ping at a time, it has no "
			"rate to limit\n");
		return -1;
	}
	return 0;
}

const struct perf_mode_ops perf_mode_lat = {
	.name = "lat",
	.default_size = PERF_DEFAULT_LAT_SIZE,
	.default_iters = PERF_DEFAULT_LAT_ITERS,
	.peer = PERF_PEER_SEND,
	.check_opts = lat_check_opts,
	.qp_depth = LAT_DEPTH,
	.two_sided = true,
	.latency = true,
	.run = lat_run,
};
