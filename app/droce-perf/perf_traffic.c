/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The RoCE modes. send, write, read and atomic: host a keeps every QP's send ring full of
 * SIZE-byte SENDs (or RDMA WRITEs into host b's buffer, READs from it, atomics on its
 * words: perf_rdma.c), every SIGNAL_EVERY-th signaled, as perftest's bandwidth tests post
 * (its --cq-mod); host b reposts each receive as it completes. lat: RC SEND ping-pong on
 * one QP, perftest's send_lat. The main lcore runs both hosts' applications and both
 * engines in turn.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>

#include "perf.h"

#define SIGNAL_EVERY		16
#define POLL_BURST		64
#define POST_CHAIN		32	/* WRs per post call (one doorbell each) */
#define PEAK_WINDOW_US		1000	/* BW peak: the best window this long */
/* A run that moves nothing for this long failed (the local ACK timer is 1 s). */
#define STALL_S			10
#define LAT_WARMUP		16
/* Latency histogram: 10 ns buckets up to 1 ms; beyond that the last bucket (max is exact). */
#define HIST_NS			10
#define HIST_BUCKETS		100000

_Static_assert(PERF_MAX_BURST <= POST_CHAIN, "--burst beyond the post arrays");

/*
 * --rate: how many more sends q may post now. Sends are due at t0, t0 + 1/rate, ...: the
 * count due by now less those posted (a QP that fell behind catches up, so the average
 * over the run is the limit). per_tick: sends per TSC tick, 0 for no limit.
 */
static uint64_t
pace_allowed(const struct perf_qp *q, double per_tick, uint64_t t0, uint64_t now)
{
	uint64_t due;

	if (per_tick == 0)
		return UINT64_MAX;
	due = (uint64_t)((double)(now - t0) * per_tick) + 1;
	return due > q->round_posted ? due - q->round_posted : 0;
}

static uint64_t
buf_addr(struct perf_host *h, struct perf_qp *q)
{
	uint32_t s = q->next_slot;

	q->next_slot = s + 1 == h->buf_slots ? 0 : s + 1;
	return (uintptr_t)h->buf + (uint64_t)s * h->slot_size;
}

/* Receives of the largest size: any message of the run fits. How many were posted. */
static uint32_t
post_recvs(struct perf_host *h, struct perf_qp *q, uint32_t n)
{
	struct ibv_recv_wr wr[POST_CHAIN], *bad = NULL;
	struct ibv_sge sge[POST_CHAIN];
	uint32_t i, k = RTE_MIN(n, (uint32_t)POST_CHAIN);

	for (i = 0; i < k; i++) {
		sge[i].addr = buf_addr(h, q);
		sge[i].length = h->slot_size;
		sge[i].lkey = h->lkey;
		wr[i].wr_id = q->rposted + i;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].next = i + 1 < k ? &wr[i + 1] : NULL;
	}
	if (droce_shm_post_recv(&q->view, wr, &bad) != 0)
		k = (uint32_t)(bad - wr);
	q->rposted += k;
	return k;
}

static void
fill_recvs(struct perf_host *h, struct perf_qp *q)
{
	uint64_t room;

	for (;;) {
		room = q->view.rq_size - (q->rposted - q->rdone);
		if (room == 0 || post_recvs(h, q, (uint32_t)room) == 0)
			break;
	}
}

/*
 * Up to n sends on q; the last one of a batch that ends the round (last) and every
 * SIGNAL_EVERY-th are signaled: a signaled completion with wr_id w says every send up to
 * w is done (in order, IB 10.8.3.1 for RC; UC completes in order too). How many posted.
 */
static uint32_t
post_sends(struct perf_run *r, struct perf_qp *q, uint32_t n, uint32_t size, bool last,
	   const struct perf_peer *peer)
{
	struct ibv_send_wr wr[POST_CHAIN], *bad = NULL;
	struct ibv_sge sge[POST_CHAIN];
	struct perf_host *h = &r->a;
	uint32_t i, k = RTE_MIN(n, (uint32_t)POST_CHAIN);
	bool send = r->o->mode == PERF_MODE_SEND || r->o->mode == PERF_MODE_LAT;

	for (i = 0; i < k; i++) {
		uint64_t id = q->posted + i;
		uint64_t addr = buf_addr(h, q);

		sge[i].addr = addr;
		sge[i].length = size;
		sge[i].lkey = h->lkey;
		memset(&wr[i], 0, sizeof(wr[i]));
		wr[i].wr_id = id;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		if (!send) {
			perf_rdma_wr(r, q, &wr[i], &sge[i], peer);
		} else {
			wr[i].opcode = IBV_WR_SEND;
			if (q->view.qp_type == DROCE_SHM_QPT_UD)
				perf_ud_wr(r, q, &wr[i], peer);
		}
		if (id % SIGNAL_EVERY == SIGNAL_EVERY - 1 || (last && i + 1 == k))
			wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].next = i + 1 < k ? &wr[i + 1] : NULL;
	}
	if (droce_shm_post_send(&q->view, wr, &bad) != 0)
		k = (uint32_t)(bad - wr);
	if (k > 0)
		q->closed = (wr[k - 1].send_flags & IBV_SEND_SIGNALED) != 0;
	q->posted += k;
	q->round_posted += k;
	return k;
}

static bool
wc_ok(const struct ibv_wc *wc, const char *who)
{
	if (wc->status == IBV_WC_SUCCESS)
		return true;
	/* By number: the system libibverbs (ibv_wc_status_str) must not be linked. */
	fprintf(stderr, "droce-perf: %s: completion wr_id %llu qp %u: status %d\n", who,
		(unsigned long long)wc->wr_id, wc->qp_num, (int)wc->status);
	return false;
}

static struct perf_qp *
host_qp(const struct perf_host *h, uint32_t qpn)
{
	return qpn < h->max_qps ? h->by_qpn[qpn] : NULL;
}

/* Host b's application: reposts each receive. Messages received, or -1. */
static int
receiver_pass(struct perf_run *r, uint32_t size)
{
	struct perf_host *b = &r->b;
	struct ibv_wc wc[POLL_BURST];
	int got, i;

	got = droce_shm_poll_cq(&b->rcq.view, POLL_BURST, wc);
	if (got < 0) {
		fprintf(stderr, "droce-perf: host b: receive CQ overrun\n");
		return -1;
	}
	for (i = 0; i < got; i++) {
		struct perf_qp *q = host_qp(b, wc[i].qp_num);

		if (!wc_ok(&wc[i], "receiver") || q == NULL)
			return -1;
		/* UD: the GRH's 40 bytes before the message (IB 11.4.1.1) */
		if (wc[i].byte_len != size + perf_recv_room(r->o)) {
			fprintf(stderr, "droce-perf: host b: received %u bytes, not %u\n",
				wc[i].byte_len, size + perf_recv_room(r->o));
			return -1;
		}
		q->rdone++;
		if (post_recvs(b, q, 1) != 1) {
			fprintf(stderr, "droce-perf: host b: receive ring full\n");
			return -1;
		}
	}
	return got;
}

/* Host a's send completions: every signaled one retires all sends up to it. Or -1. */
static int
sender_poll(struct perf_run *r)
{
	struct perf_host *a = &r->a;
	struct ibv_wc wc[POLL_BURST];
	int got, i;

	got = droce_shm_poll_cq(&a->scq.view, POLL_BURST, wc);
	if (got < 0) {
		fprintf(stderr, "droce-perf: host a: send CQ overrun\n");
		return -1;
	}
	for (i = 0; i < got; i++) {
		struct perf_qp *q = host_qp(a, wc[i].qp_num);

		if (!wc_ok(&wc[i], "sender") || q == NULL)
			return -1;
		q->done = wc[i].wr_id + 1;
	}
	return 0;
}

static uint64_t
sum_done(const struct perf_host *h)
{
	uint64_t s = 0;
	uint32_t i;

	for (i = 0; i < h->nb_qps; i++)
		s += h->qps[i].done;
	return s;
}

static uint64_t
sum_rdone(const struct perf_host *h)
{
	uint64_t s = 0;
	uint32_t i;

	for (i = 0; i < h->nb_qps; i++)
		s += h->qps[i].rdone;
	return s;
}

/* The counters a round starts from: its figures and checks are differences. */
static void
round_start(struct perf_run *r)
{
	perf_host_stats(&r->a, &r->a0);
	perf_fault_stats(&r->b, &r->fb0);
	perf_rdma_prepare(r);
}

/* UC and UD under loss end when every packet sent is accounted for, not delivered. */
static bool
loses_messages(const struct perf_run *r)
{
	return perf_fault_lossy(r) && r->o->qp_type != DROCE_SHM_QPT_RC;
}

/* A round's figures and checks beyond sent = received. 0, or -1 after printing why. */
static int
round_end(struct perf_run *r, struct perf_bw *f, const struct droce_engine_stats *sb0,
	  const struct droce_engine_stats *sb1)
{
	struct droce_engine_stats a1;

	perf_host_stats(&r->a, &a1);
	f->retransmits = a1.req_retransmit - r->a0.req_retransmit;
	f->lost = f->sent > f->received ? f->sent - f->received : 0;
	perf_report_bw(r, f);
	if (loses_messages(r))
		return perf_fault_check(r, f);
	if (f->sent != f->received) {
		fprintf(stderr, "droce-perf: %llu messages sent, %llu received\n",
			(unsigned long long)f->sent, (unsigned long long)f->received);
		return -1;
	}
	return perf_rdma_check(r, sb0, sb1, f->sent, f->size);
}

/* send, write, read and atomic at one size. */
static int
stream_run(struct perf_run *r, uint32_t size)
{
	const struct perf_opts *o = r->o;
	struct perf_host *a = &r->a, *b = &r->b;
	uint64_t hz = rte_get_tsc_hz(), win = hz / 1000000 * PEAK_WINDOW_US;
	double per_tick = perf_rate_msgs(o, size) / (double)hz;
	uint64_t t0, t_end, now, last_progress, win_t, win_done, done0_a;
	uint64_t recv0_b, received = 0, sent = 0, progress = 0, done;
	struct droce_engine_stats sb0, sb1;
	bool one_sided = o->mode != PERF_MODE_SEND, stopping = false;
	double peak = 0, secs;
	struct perf_bw f;
	uint32_t i;
	int got;

	for (i = 0; i < b->nb_qps; i++)
		if (!one_sided)
			fill_recvs(b, &b->qps[i]);
	for (i = 0; i < a->nb_qps; i++) {
		a->qps[i].round_posted = 0;
		a->qps[i].closed = true;	/* nothing to complete yet */
	}
	perf_host_stats(b, &sb0);
	round_start(r);
	done0_a = sum_done(a);
	recv0_b = sum_rdone(b);
	t0 = rte_rdtsc();
	t_end = o->duration_s > 0 ? t0 + (uint64_t)(o->duration_s * (double)hz) : UINT64_MAX;
	last_progress = win_t = t0;
	win_done = done0_a;
	for (;;) {
		bool all = true;

		perf_host_poll(a);
		if (sender_poll(r) != 0)
			return -1;
		now = rte_rdtsc();
		if (now >= t_end || perf_run_stopping(r))
			stopping = true;
		sent = 0;
		for (i = 0; i < a->nb_qps; i++) {
			struct perf_qp *q = &a->qps[i];
			uint64_t room = q->view.sq_size - (q->posted - q->done);
			uint64_t left;
			uint32_t k;

			if (o->iters != 0 && !stopping)
				left = o->iters - q->round_posted;
			else if (!stopping)
				left = UINT64_MAX;
			else
				/* time is up: one more, signaled, if the last was not */
				left = q->closed ? 0 : 1;
			k = (uint32_t)RTE_MIN(RTE_MIN(room, left), (uint64_t)o->burst);
			k = (uint32_t)RTE_MIN((uint64_t)k, pace_allowed(q, per_tick, t0, now));
			if (k != 0)
				post_sends(r, q, k, size, left <= k, &r->peer_b);
			sent += q->round_posted;
			all = all && q->closed &&
			      (stopping || (o->iters != 0 && q->round_posted == o->iters));
		}
		perf_host_poll(b);
		if (!one_sided) {
			got = receiver_pass(r, size);
			if (got < 0)
				return -1;
			received += (uint64_t)got;
		}
		done = sum_done(a);
		/* posts count too: under --rate a signaled completion can be far off */
		if (done + received + sent != progress) {
			progress = done + received + sent;
			last_progress = now;
		} else if (now - last_progress > STALL_S * hz) {
			fprintf(stderr, "droce-perf: no completion for %d s\n", STALL_S);
			return -1;
		}
		if (now - win_t >= win) {
			double g = (double)(done - win_done) * size * 8 /
				   ((double)(now - win_t) / (double)hz) / 1e9;

			peak = RTE_MAX(peak, g);
			win_t = now;
			win_done = done;
		}
		/* The round ends when every send posted is complete and delivered. */
		if (!all || done - done0_a != sent)
			continue;
		if (loses_messages(r)) {
			if (perf_fault_settled(r, &sb0, received))
				break;
			continue;
		}
		if (!one_sided && received == sent)
			break;
		if (one_sided) {
			perf_host_stats(b, &sb1);
			if (perf_rdma_delivered(r, &sb0, &sb1, size, sent) == sent)
				break;
		}
	}
	now = rte_rdtsc();
	secs = (double)(now - t0) / (double)hz;
	perf_host_stats(b, &sb1);
	memset(&f, 0, sizeof(f));
	f.size = size;
	f.iters = sent;
	f.secs = secs;
	f.sent = sent;
	/* What b's responder delivered: receive completions (send), perf_rdma_delivered. */
	f.received = one_sided ? perf_rdma_delivered(r, &sb0, &sb1, size, sent) :
		     sum_rdone(b) - recv0_b;
	/* goodput: what was delivered (all that was sent but on UC and UD under loss) */
	f.avg_gbps = (double)f.received * size * 8 / secs / 1e9;
	f.mpps = (double)f.received / secs / 1e6;
	/* A run shorter than one window has no peak of its own: its average is its peak. */
	f.peak_gbps = peak > 0 ? RTE_MAX(peak, f.avg_gbps) : f.avg_gbps;
	return round_end(r, &f, &sb0, &sb1);
}

/* One ping: a posts, both hosts run until a's receive completes. Round trip in TSC ticks. */
static int
ping_once(struct perf_run *r, uint32_t size, uint64_t *rtt)
{
	struct perf_host *a = &r->a, *b = &r->b;
	struct perf_qp *qa = &a->qps[0], *qb = &b->qps[0];
	struct ibv_wc wc[POLL_BURST];
	uint64_t t0 = rte_rdtsc(), hz = rte_get_tsc_hz();
	int got, i;

	if (post_sends(r, qa, 1, size, true, &r->peer_b) != 1)
		return -1;
	for (;;) {
		perf_host_poll(a);
		got = droce_shm_poll_cq(&a->rcq.view, 1, wc);
		if (got != 0)
			break;
		/* the ponger: answer each message received */
		perf_host_poll(b);
		got = droce_shm_poll_cq(&b->rcq.view, POLL_BURST, wc);
		for (i = 0; i < got; i++) {
			struct ibv_send_wr swr, *bad;
			struct ibv_sge sge;

			qb->rdone++;
			if (!wc_ok(&wc[i], "ponger") || post_recvs(b, qb, 1) != 1)
				return -1;
			sge.addr = (uintptr_t)b->buf;
			sge.length = size;
			sge.lkey = b->lkey;
			memset(&swr, 0, sizeof(swr));
			swr.sg_list = &sge;
			swr.num_sge = 1;
			swr.opcode = IBV_WR_SEND;
			swr.send_flags = IBV_SEND_SIGNALED;
			if (droce_shm_post_send(&qb->view, &swr, &bad) != 0)
				return -1;
		}
		if (got < 0 || droce_shm_poll_cq(&b->scq.view, POLL_BURST, wc) < 0)
			return -1;
		if (rte_rdtsc() - t0 > STALL_S * hz) {
			fprintf(stderr, "droce-perf: no answer to a ping in %d s\n", STALL_S);
			return -1;
		}
	}
	*rtt = rte_rdtsc() - t0;
	qa->rdone++;
	if (got < 0 || !wc_ok(&wc[0], "pinger") || post_recvs(a, qa, 1) != 1)
		return -1;
	got = droce_shm_poll_cq(&a->scq.view, POLL_BURST, wc);
	for (i = 0; i < got; i++) {
		if (!wc_ok(&wc[i], "pinger"))
			return -1;
	}
	return got < 0 ? -1 : 0;
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

/* lat at one size: perftest's send_lat figures, half the round trip of each ping. */
static int
lat_run(struct perf_run *r, uint32_t size)
{
	const struct perf_opts *o = r->o;
	uint64_t hz = rte_get_tsc_hz(), t_end, rtt, n = 0, i;
	double ns, sum = 0, sum2 = 0, min = 0, max = 0, mean;
	struct perf_lat f;
	uint32_t *hist;

	hist = calloc(HIST_BUCKETS, sizeof(*hist));
	if (hist == NULL)
		return -1;
	fill_recvs(&r->a, &r->a.qps[0]);
	fill_recvs(&r->b, &r->b.qps[0]);
	for (i = 0; i < LAT_WARMUP; i++) {
		if (ping_once(r, size, &rtt) != 0)
			goto fail;
	}
	t_end = o->duration_s > 0 ? rte_rdtsc() + (uint64_t)(o->duration_s * (double)hz) :
		UINT64_MAX;
	while ((o->iters != 0 ? n < o->iters : rte_rdtsc() < t_end) && !perf_run_stopping(r)) {
		uint64_t b;

		if (ping_once(r, size, &rtt) != 0)
			goto fail;
		ns = (double)rtt * 1e9 / (double)hz / 2;
		b = (uint64_t)(ns / HIST_NS);
		hist[RTE_MIN(b, (uint64_t)HIST_BUCKETS - 1)]++;
		if (n == 0 || ns < min)
			min = ns;
		if (ns > max)
			max = ns;
		sum += ns;
		sum2 += ns * ns;
		n++;
	}
	if (n == 0) {
		fprintf(stderr, "droce-perf: no ping completed in the time given\n");
		goto fail;
	}
	mean = sum / (double)n;
	memset(&f, 0, sizeof(f));
	f.size = size;
	f.iters = n;
	f.min_us = min / 1000;
	f.max_us = max / 1000;
	f.typical_us = hist_quantile(hist, n, 0.5, min, max) / 1000;
	f.avg_us = mean / 1000;
	f.stdev_us = sqrt(RTE_MAX(sum2 / (double)n - mean * mean, 0.0)) / 1000;
	f.p99_us = hist_quantile(hist, n, 0.99, min, max) / 1000;
	f.p999_us = hist_quantile(hist, n, 0.999, min, max) / 1000;
	perf_report_lat(r, &f);
	free(hist);
	return 0;
fail:
	free(hist);
	return -1;
}

int
perf_traffic_run(struct perf_run *r, uint32_t size)
{
	return r->o->mode == PERF_MODE_LAT ? lat_run(r, size) : stream_run(r, size);
}
