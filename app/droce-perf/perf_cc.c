/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Congestion (doc/congestion.md): --bottleneck puts drivers/net/fault's bottleneck queue
 * (a switch port with a drain rate, a buffer and RED-like ECN marking) on host b's receive
 * path, where every QP's data meets; --cc and --dcqcn set both hosts' congestion
 * parameters; --engines spreads host a's QPs over engines of their own; --per-qp samples
 * what each QP delivered, and the bottleneck's counters, every period of a round and
 * prints them with each QP's rate, CNPs and cuts and Jain's fairness index, so a test can
 * tell utilisation, fairness, queue and convergence time apart.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>

#include "perf.h"

/* Longest --per-qp series kept: 100 s at 1 ms; a longer round stops sampling there. */
#define CC_MAX_SAMPLES		100000u
#define CC_MAX_SAMPLE_MS	10000u

/* Per QP at the round's start: what the round's figures are differences of. */
struct cc_qp_mark {
	uint64_t msgs, cuts, cnp_rcvd, peer_ce, peer_cnp_sent;
};

struct perf_cc_samples {
	uint64_t t0, period, next;	/* TSC */
	uint32_t nb_qps;
	uint32_t n, max;
	struct droce_engine_stats b0;	/* host b's counters at the start */
	struct cc_qp_mark *mark;	/* nb_qps */
	uint64_t *t;		/* TSC since t0 of each sample */
	uint64_t *qp_msgs;	/* n x nb_qps: messages each QP delivered since t0 */
	uint64_t *bn;		/* n x 4: bytes out of the bottleneck, depth, drops, marks */
};

enum { BN_BYTES, BN_DEPTH, BN_DROPPED, BN_MARKED, BN_NB };

int
perf_cc_opt(struct perf_opts *o, enum perf_cc_opt opt, const char *arg)
{
	char name[64], err[160];
	const char *eq;
	char *end;
	unsigned long v;

	switch (opt) {
	case PERF_CC_OPT_BOTTLENECK:
		if (strlen(arg) >= sizeof(o->cc.bottleneck) || strstr(arg, "port=") != NULL) {
			fprintf(stderr, "droce-perf: --bottleneck '%s': the fault driver's bottleneck "
				"keys (rate=MBPS,buffer=BYTES,ecn_min=,ecn_max=,ecn_pmax=), at most "
				"%zu characters, no port=\n", arg, sizeof(o->cc.bottleneck) - 1);
			return -1;
		}
		snprintf(o->cc.bottleneck, sizeof(o->cc.bottleneck), "%s", arg);
		o->fault.on = true;
		return 0;
	case PERF_CC_OPT_PARAM:
		eq = strchr(arg, '=');
		if (eq == NULL || (size_t)(eq - arg) >= sizeof(name)) {
			fprintf(stderr, "droce-perf: --cc '%s': NAME=VALUE\n", arg);
			return -1;
		}
		snprintf(name, sizeof(name), "%.*s", (int)(eq - arg), arg);
		if (droce_cc_param_set(&o->cc.params, name, eq + 1, err, sizeof(err)) != 0) {
			fprintf(stderr, "droce-perf: --cc: %s\n", err);
			return -1;
		}
		return 0;
	case PERF_CC_OPT_DCQCN:
		if (strcmp(arg, "off") == 0) {
			droce_cc_params_disable(&o->cc.params);
		} else if (strcmp(arg, "on") == 0) {
			o->cc.params.roce_np_enable = DROCE_CC_PRIO_ALL;
			o->cc.params.roce_rp_enable = DROCE_CC_PRIO_ALL;
		} else {
			fprintf(stderr, "droce-perf: --dcqcn '%s': on or off\n", arg);
			return -1;
		}
		return 0;
	case PERF_CC_OPT_ENGINES:
		v = strtoul(arg, &end, 10);
		if (*arg == '\0' || *end != '\0' || v < 1 || v > PERF_MAX_ENGINES) {
			fprintf(stderr, "droce-perf: --engines '%s': 1..%u\n", arg, PERF_MAX_ENGINES);
			return -1;
		}
		o->cc.a_engines = (uint32_t)v;
		return 0;
	case PERF_CC_OPT_PER_QP:
		v = strtoul(arg, &end, 10);
		if (*arg == '\0' || *end != '\0' || v < 1 || v > CC_MAX_SAMPLE_MS) {
			fprintf(stderr, "droce-perf: --per-qp '%s': a sample period of 1..%u ms\n",
				arg, CC_MAX_SAMPLE_MS);
			return -1;
		}
		o->cc.sample_ms = (uint32_t)v;
		return 0;
	}
	return -1;
}

void
perf_cc_usage(void)
{
	printf("      --bottleneck K  a congested switch port on host b's receive path: the\n"
	       "                      fault driver's keys rate=MBPS,buffer=BYTES,ecn_min=BYTES,\n"
	       "                      ecn_max=BYTES,ecn_pmax=PPM (doc/drivers/fault.md)\n"
	       "      --cc NAME=V     a congestion parameter of both hosts (doc/congestion.md:\n"
	       "                      rpg_ai_rate=10, min_time_between_cnps=0, ...); repeatable\n"
	       "      --dcqcn on|off  ECN, CNPs and DCQCN rate control on every priority, or\n"
	       "                      none (default: CNPs for CE marks, no ECN-capable sends)\n"
	       "      --engines N     host a's engines, 1..%u, QP i on engine i %% N (default\n"
	       "                      one per 4096 QPs); internal net_ring pair only\n"
	       "      --per-qp MS     what each QP delivered, and the bottleneck, every MS ms\n"
	       "                      of the round; each QP's rate, CNPs and cuts; Jain's index\n",
	       PERF_MAX_ENGINES);
}

/* Messages QP i delivered: b's receives (two-sided: send), else a's completions. */
static uint64_t
qp_msgs(const struct perf_run *r, uint32_t i)
{
	return r->o->mode->two_sided ? r->b.qps[i].rdone : r->a.qps[i].done;
}

void
perf_cc_free(struct perf_run *r)
{
	struct perf_cc_samples *s = r->samples;

	if (s == NULL)
		return;
	free(s->t);
	free(s->qp_msgs);
	free(s->bn);
	free(s->mark);
	free(s);
	r->samples = NULL;
}

int
perf_cc_round_start(struct perf_run *r, uint64_t t0)
{
	const struct perf_opts *o = r->o;
	uint32_t nq = r->a.nb_qps, max = CC_MAX_SAMPLES, i;
	struct perf_cc_samples *s;

	perf_cc_free(r);
	if (o->cc.sample_ms == 0 || o->role != PERF_ROLE_BOTH)
		return 0;
	/* -D: the samples it takes, and the one at the end; -n: up to the cap */
	if (o->duration_s > 0 && o->duration_s * 1000 / o->cc.sample_ms + 2 < max)
		max = (uint32_t)(o->duration_s * 1000 / o->cc.sample_ms) + 2;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return -1;
	r->samples = s;
	s->t = calloc(max, sizeof(*s->t));
	s->qp_msgs = calloc((size_t)max * nq, sizeof(*s->qp_msgs));
	s->bn = calloc((size_t)max * BN_NB, sizeof(*s->bn));
	s->mark = calloc(nq, sizeof(*s->mark));
	if (s->t == NULL || s->qp_msgs == NULL || s->bn == NULL || s->mark == NULL) {
		perf_cc_free(r);
		fprintf(stderr, "droce-perf: --per-qp: no memory for %u samples\n", max);
		return -1;
	}
	s->max = max;
	s->nb_qps = nq;
	s->t0 = t0;
	s->period = rte_get_tsc_hz() / 1000 * o->cc.sample_ms;
	s->next = t0 + s->period;
	perf_host_stats(&r->b, &s->b0);
	for (i = 0; i < nq; i++) {
		struct droce_engine_qp_cc ca, cb;

		droce_engine_qp_cc_get(r->a.qps[i].qp, &ca);
		droce_engine_qp_cc_get(r->b.qps[i].qp, &cb);
		s->mark[i] = (struct cc_qp_mark){ .msgs = qp_msgs(r, i), .cuts = ca.rate_cuts,
						  .cnp_rcvd = ca.cnp_rcvd, .peer_ce = cb.ce_rcvd,
						  .peer_cnp_sent = cb.cnp_sent };
	}
	return 0;
}

static void
sample_take(struct perf_run *r, struct perf_cc_samples *s, uint64_t now)
{
	struct droce_fault_stats fb;
	uint64_t *bn = &s->bn[(size_t)s->n * BN_NB];
	uint32_t i;

	s->t[s->n] = now - s->t0;
	for (i = 0; i < s->nb_qps; i++)
		s->qp_msgs[(size_t)s->n * s->nb_qps + i] = qp_msgs(r, i) - s->mark[i].msgs;
	perf_fault_stats(&r->b, &fb);
	bn[BN_BYTES] = fb.bn_bytes - r->fb0.bn_bytes;
	bn[BN_DEPTH] = fb.bn_depth;
	bn[BN_DROPPED] = fb.bn_dropped - r->fb0.bn_dropped;
	bn[BN_MARKED] = fb.bn_marked - r->fb0.bn_marked;
	s->n++;
}

void
perf_cc_sample(struct perf_run *r, uint64_t now)
{
	struct perf_cc_samples *s = r->samples;

	/* the last slot is the round end's */
	if (s == NULL || now < s->next || s->n + 1 >= s->max)
		return;
	s->next += s->period;
	if (s->next <= now)
		s->next = now + s->period;	/* a late pass: no burst of samples */
	sample_take(r, s, now);
}

/* Jain's fairness index of x[0..n-1]: (sum x)^2 / (n sum x^2); 1 when all are equal. */
static double
jain(const double *x, uint32_t n)
{
	double sum = 0, sq = 0;
	uint32_t i;

	for (i = 0; i < n; i++) {
		sum += x[i];
		sq += x[i] * x[i];
	}
	return sq > 0 ? sum * sum / (n * sq) : 1.0;
}

static void
print_series(const struct perf_cc_samples *s, uint32_t col, uint32_t stride, const uint64_t *v)
{
	uint32_t k;

	printf("[");
	for (k = 0; k < s->n; k++)
		printf("%s%" PRIu64, k == 0 ? "" : ",", v[(size_t)k * stride + col]);
	printf("]");
}

void
perf_cc_round_end(struct perf_run *r, uint64_t now, uint32_t size)
{
	struct perf_cc_samples *s = r->samples;
	const struct perf_opts *o = r->o;
	double hz = (double)rte_get_tsc_hz(), secs, *gbps;
	struct droce_engine_stats a1, b1;
	struct droce_fault_stats fb;
	uint32_t i, nq;

	if (s == NULL)
		return;
	sample_take(r, s, now);
	nq = s->nb_qps;
	secs = (double)(now - s->t0) / hz;
	gbps = calloc(nq, sizeof(*gbps));
	if (gbps == NULL)
		return;
	for (i = 0; i < nq; i++)
		gbps[i] = (double)s->qp_msgs[(size_t)(s->n - 1) * nq + i] * (double)size * 8 /
			  secs / 1e9;
	perf_host_stats(&r->a, &a1);
	perf_host_stats(&r->b, &b1);
	perf_fault_stats(&r->b, &fb);
	if (o->json) {
		printf("{\"figure\":\"congestion\",\"bottleneck\":\"%s\",\"secs\":%.6f,\"size\":%u,"
		       "\"jain\":%.6f,\"bn_bytes\":%" PRIu64 ",\"bn_dropped\":%" PRIu64
		       ",\"bn_marked\":%" PRIu64 ",\"bn_depth_max\":%" PRIu64
		       ",\"a_retransmits\":%" PRIu64 ",\"a_cnp_rcvd\":%" PRIu64
		       ",\"b_cnp_sent\":%" PRIu64 ",\"b_ce_rcvd\":%" PRIu64 ",\"qps\":[",
		       o->cc.bottleneck, secs, size, jain(gbps, nq),
		       fb.bn_bytes - r->fb0.bn_bytes, fb.bn_dropped - r->fb0.bn_dropped,
		       fb.bn_marked - r->fb0.bn_marked, fb.bn_depth_max,
		       a1.req_retransmit - r->a0.req_retransmit, a1.rx_cnp - r->a0.rx_cnp,
		       b1.cnp_sent - s->b0.cnp_sent, b1.rx_ce - s->b0.rx_ce);
		for (i = 0; i < nq; i++) {
			struct droce_engine_qp_cc ca, cb;

			droce_engine_qp_cc_get(r->a.qps[i].qp, &ca);
			droce_engine_qp_cc_get(r->b.qps[i].qp, &cb);
			printf("%s{\"qpn\":%u,\"engine\":%u,\"gbps\":%.6f,\"rate_mbps\":%.3f,"
			       "\"limited\":%s,\"rate_cuts\":%" PRIu64 ",\"cnp_rcvd\":%" PRIu64
			       ",\"alpha\":%u,\"peer_ce_rcvd\":%" PRIu64 ",\"peer_cnp_sent\":%" PRIu64
			       "}", i == 0 ? "" : ",", ca.qpn, ca.engine, gbps[i],
			       (double)ca.rate_kbps / 1000.0, ca.limited ? "true" : "false",
			       ca.rate_cuts - s->mark[i].cuts, ca.cnp_rcvd - s->mark[i].cnp_rcvd,
			       ca.alpha, cb.ce_rcvd - s->mark[i].peer_ce,
			       cb.cnp_sent - s->mark[i].peer_cnp_sent);
		}
		printf("],\"samples\":{\"period_ms\":%u,\"t_ns\":[", o->cc.sample_ms);
		for (i = 0; i < s->n; i++)
			printf("%s%.0f", i == 0 ? "" : ",", (double)s->t[i] / hz * 1e9);
		printf("],\"qp_msgs\":[");
		for (i = 0; i < nq; i++) {
			printf(i == 0 ? "" : ",");
			print_series(s, i, nq, s->qp_msgs);
		}
		printf("],\"bn_bytes\":");
		print_series(s, BN_BYTES, BN_NB, s->bn);
		printf(",\"bn_depth\":");
		print_series(s, BN_DEPTH, BN_NB, s->bn);
		printf(",\"bn_dropped\":");
		print_series(s, BN_DROPPED, BN_NB, s->bn);
		printf(",\"bn_marked\":");
		print_series(s, BN_MARKED, BN_NB, s->bn);
		printf("}}\n");
	} else {
		printf(" congestion: bottleneck %s: %.3f Gb/s out, %" PRIu64 " marked, %" PRIu64
		       " dropped, deepest %" PRIu64 " B; CNPs: b sent %" PRIu64 ", a received %"
		       PRIu64 "; a resent %" PRIu64 " packets; Jain's index %.4f\n",
		       o->cc.bottleneck[0] != '\0' ? o->cc.bottleneck : "none",
		       (double)(fb.bn_bytes - r->fb0.bn_bytes) * 8 / secs / 1e9,
		       fb.bn_marked - r->fb0.bn_marked, fb.bn_dropped - r->fb0.bn_dropped,
		       fb.bn_depth_max, b1.cnp_sent - s->b0.cnp_sent, a1.rx_cnp - r->a0.rx_cnp,
		       a1.req_retransmit - r->a0.req_retransmit, jain(gbps, nq));
		for (i = 0; i < nq; i++) {
			struct droce_engine_qp_cc ca;

			droce_engine_qp_cc_get(r->a.qps[i].qp, &ca);
			printf("  QP %u (engine %u): %.3f Gb/s delivered, rate %.1f Mb/s%s, %" PRIu64
			       " CNPs, %" PRIu64 " cuts\n", ca.qpn, ca.engine, gbps[i],
			       (double)ca.rate_kbps / 1000.0, ca.limited ? "" : " (unlimited)",
			       ca.cnp_rcvd - s->mark[i].cnp_rcvd, ca.rate_cuts - s->mark[i].cuts);
		}
	}
	free(gbps);
}
