/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The round of the stream modes, send, write, read and atomic, the run of their rows:
 * host a keeps every QP's send ring full of SIZE-byte work requests, every SIGNAL_EVERY-th
 * signaled, as perftest's bandwidth tests post (its --cq-mod); each WR's opcode is the
 * mode's (its row's wr: SENDs, or RDMA WRITEs into host b's buffer, READs from it, atomics
 * on its words). In a two-sided mode (send) host b reposts each receive as it completes
 * and counts it; in the one-sided ones the row's delivered reads what b's responder did
 * from its counters, and its check looks at the round once it is over. The main lcore
 * runs both hosts' applications and both engines in turn, or host a only while host b
 * runs on its own lcore (perf_lcores.c); a process that is one host (--client, --server)
 * runs its own.
 */
#include <stdio.h>
#include <string.h>

#include <rte_cycles.h>

#include "perf.h"

#define SIGNAL_EVERY		16
#define PEAK_WINDOW_US		1000	/* BW peak: the best window this long */

_Static_assert(PERF_MAX_BURST <= PERF_POST_CHAIN, "--burst beyond the post arrays");

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

/*
 * Where a WRITE (or READ) of a's slot sge lands in the peer's buffer: the same slot of
 * b's buffer as of a's, or, when the peer takes only buf_len bytes at each QP's address
 * (perftest's MR: max(size, its cycle buffer)), the slot's number wrapped into that.
 */
uint64_t
perf_stream_remote(const struct perf_run *r, const struct perf_qp *q,
		   const struct ibv_sge *sge, uint32_t size)
{
	const struct perf_peer *p = &r->peer_b;
	const struct perf_host *a = &r->a;
	uint32_t qi = (uint32_t)(q - a->qps);
	uint64_t off = sge->addr - (uintptr_t)a->buf;
	uint64_t base = p->vaddrs != NULL ? p->vaddrs[qi] : p->buf_addr;

	if (off + size <= p->buf_len)
		return base + off;
	return base + off / a->slot_size % (p->buf_len / size) * size;
}

/*
 * Up to n sends on q; the last one of a batch that ends the round (last) and every
 * SIGNAL_EVERY-th are signaled: a signaled completion with wr_id w says every send up to
 * w is done (in order, IB 10.8.3.1 for RC; UC completes in order too). How many posted.
 */
static uint32_t
post_sends(struct perf_run *r, struct perf_qp *q, uint32_t n, uint32_t size, bool last)
{
	struct ibv_send_wr wr[PERF_POST_CHAIN], *bad = NULL;
	struct ibv_sge sge[PERF_POST_CHAIN];
	const struct perf_mode_ops *m = r->o->mode;
	struct perf_host *h = &r->a;
	uint32_t i, k = RTE_MIN(n, (uint32_t)PERF_POST_CHAIN);

	for (i = 0; i < k; i++) {
		uint64_t id = q->posted + i;

		sge[i].addr = perf_qp_slot(h, q);
		sge[i].length = size;
		sge[i].lkey = h->lkey;
		/*
		 * The fields the post reads for this opcode, not a cleared 128-byte WR: zeroing
		 * it (rep stos) was a fifth of the sender's time at 64 bytes. The row's wr sets
		 * its opcode's fields; imm_data is read only WITH_IMM.
		 */
		wr[i].wr_id = id;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].send_flags = 0;
		m->wr(r, q, &wr[i], &sge[i], size);
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

/* Host b's application: reposts each receive. Messages received, or -1. */
static int
receiver_pass(struct perf_run *r, uint32_t size)
{
	struct perf_host *b = &r->b;
	struct ibv_wc wc[PERF_POLL_BURST];
	int got, i;

	got = droce_shm_poll_cq(&b->rcq.view, PERF_POLL_BURST, wc);
	if (got < 0) {
		fprintf(stderr, "droce-perf: host b: receive CQ overrun\n");
		return -1;
	}
	for (i = 0; i < got; i++) {
		struct perf_qp *q = perf_qp_of(b, wc[i].qp_num);

		if (!perf_wc_ok(&wc[i], "receiver") || q == NULL)
			return -1;
		/* UD: the GRH's 40 bytes before the message (IB 11.4.1.1) */
		if (wc[i].byte_len != size + perf_recv_room(r->o)) {
			fprintf(stderr, "droce-perf: host b: received %u bytes, not %u\n",
				wc[i].byte_len, size + perf_recv_room(r->o));
			return -1;
		}
		q->rdone++;
		b->rdone_sum++;
		if (perf_qp_post_recvs(b, q, 1) != 1) {
			fprintf(stderr, "droce-perf: host b: receive ring full\n");
			return -1;
		}
	}
	return got;
}

/* a's QP q may post again: into the ready ring, unless it is there. */
static void
ready_push(struct perf_host *h, struct perf_qp *q)
{
	if (q->queued)
		return;
	q->queued = true;
	h->ready[(h->ready_head + h->ready_count++) % h->nb_qps] = (uint32_t)(q - h->qps);
}

static struct perf_qp *
ready_pop(struct perf_host *h)
{
	struct perf_qp *q = &h->qps[h->ready[h->ready_head]];

	h->ready_head = h->ready_head + 1 == h->nb_qps ? 0 : h->ready_head + 1;
	h->ready_count--;
	q->queued = false;
	return q;
}

/*
 * Host a's send completions: every signaled one retires all sends up to it, and its QP
 * has room again. Or -1.
 */
static int
sender_poll(struct perf_run *r)
{
	struct perf_host *a = &r->a;
	struct ibv_wc wc[PERF_POLL_BURST];
	int got, i;

	got = droce_shm_poll_cq(&a->scq.view, PERF_POLL_BURST, wc);
	if (got < 0) {
		fprintf(stderr, "droce-perf: host a: send CQ overrun\n");
		return -1;
	}
	for (i = 0; i < got; i++) {
		struct perf_qp *q = perf_qp_of(a, wc[i].qp_num);

		if (!perf_wc_ok(&wc[i], "sender") || q == NULL)
			return -1;
		a->done_sum += wc[i].wr_id + 1 - q->done;
		q->done = wc[i].wr_id + 1;
		ready_push(a, q);
	}
	return 0;
}

/*
 * One send or write round at one size. Host a's part (the sender) and host b's (the
 * receiver) are separate steps: with both hosts here one loop runs both; a process that
 * is one host (--client, --server) runs its own.
 */
struct stream {
	struct perf_run *r;
	uint32_t size;
	bool one_sided;		/* write, read, atomic: no receives at b */
	uint64_t t0, t_end;
	double per_tick;	/* --rate: sends per TSC tick and QP, 0 none */
	bool stopping;		/* time is up (-D), or the prompt's stop, or a signal */
	/* host a */
	uint64_t done0, done, sent;
	uint32_t finished;	/* QPs that posted their -n sends */
	bool all;		/* every QP posted its last send */
	uint64_t sent_final;	/* host b on its own lcore: what a sent, read after a_done */
	/* host b: its own cache line, which its lcore writes when it has one */
	uint64_t recv0 __rte_cache_aligned;
	uint64_t received;
	struct droce_engine_stats sb0;
	bool peer_done;		/* host b alone in write: the client's end barrier came */
};

/* Sends q has left in this round, ring room aside. */
static uint64_t
sender_remaining(const struct perf_run *r, const struct stream *s, const struct perf_qp *q)
{
	if (r->o->iters != 0 && !s->stopping)
		return r->o->iters - q->round_posted;
	if (!s->stopping)
		return UINT64_MAX;
	/* time is up: one more, signaled, if the last was not */
	return q->closed ? 0 : 1;
}

/* Sends q may post now: room in its ring and sends left. */
static uint64_t
sender_left(const struct perf_run *r, const struct stream *s, const struct perf_qp *q)
{
	return RTE_MIN(q->view.sq_size - (q->posted - q->done), sender_remaining(r, s, q));
}

/* q's send ring topped up, at most a burst, as --rate allows. */
static void
sender_post_qp(struct perf_run *r, struct stream *s, struct perf_qp *q, uint64_t now)
{
	const struct perf_opts *o = r->o;
	uint64_t remaining = sender_remaining(r, s, q);
	uint32_t k, n;

	k = (uint32_t)RTE_MIN(sender_left(r, s, q), (uint64_t)o->burst);
	k = (uint32_t)RTE_MIN((uint64_t)k, pace_allowed(q, s->per_tick, s->t0, now));
	if (k == 0)
		return;
	/* the round's last send is signaled: its completion says all are done */
	n = post_sends(r, q, k, s->size, remaining <= k);
	s->sent += n;
	if (o->iters != 0 && !s->stopping && q->round_posted == o->iters)
		s->finished++;
}

/*
 * Host a: completions, then the send rings topped up. A QP gets a turn when a completion
 * made room in its ring (the ready ring), so a pass costs what the completions do, not
 * the number of QPs; with --rate, and once time is up, every QP is looked at. Or -1.
 */
static int
sender_step(struct perf_run *r, struct stream *s, uint64_t now)
{
	const struct perf_opts *o = r->o;
	struct perf_host *a = &r->a;
	uint32_t i, n;

	perf_host_poll(a);
	if (sender_poll(r) != 0)
		return -1;
	if (now >= s->t_end || perf_run_stopping(r))
		s->stopping = true;
	if (s->per_tick != 0 || s->stopping) {
		s->all = true;
		for (i = 0; i < a->nb_qps; i++) {
			struct perf_qp *q = &a->qps[i];

			sender_post_qp(r, s, q, now);
			s->all = s->all && q->closed &&
				 (s->stopping || (o->iters != 0 && q->round_posted == o->iters));
		}
	} else {
		for (n = a->ready_count; n > 0; n--) {
			struct perf_qp *q = ready_pop(a);

			sender_post_qp(r, s, q, now);
			/* a burst short of its room: its turn again in the next pass */
			if (sender_left(r, s, q) != 0)
				ready_push(a, q);
		}
		s->all = o->iters != 0 && s->finished == a->nb_qps;
	}
	s->done = a->done_sum;
	return 0;
}

/* Host b: its engines, and in send its receives counted and reposted. Or -1. */
static int
receiver_step(struct perf_run *r, struct stream *s)
{
	int got;

	perf_host_poll(&r->b);
	if (s->one_sided)
		return 0;
	got = receiver_pass(r, s->size);
	if (got < 0)
		return -1;
	s->received += (uint64_t)got;
	return 0;
}

/*
 * What b's responder delivered of sent: receive completions (two-sided), or what the
 * row's delivered reads in b's counters. sent is a's count as the caller's lcore may read
 * it (s->sent_final on b's own).
 */
static uint64_t
stream_delivered(struct perf_run *r, const struct stream *s, uint64_t sent)
{
	struct droce_engine_stats st;

	if (!s->one_sided)
		return r->b.rdone_sum - s->recv0;
	perf_host_stats(&r->b, &st);
	return r->o->mode->delivered(r, &s->sb0, &st, s->size, sent);
}

/* UC and UD under loss end when every packet sent is accounted for, not delivered. */
static bool
loses_messages(const struct perf_run *r)
{
	return perf_fault_lossy(r) && r->o->qp_type != DROCE_SHM_QPT_RC;
}

/* Host a's part of the round is over: every send posted is complete. */
static bool
sender_over(const struct stream *s)
{
	return s->all && s->done - s->done0 == s->sent;
}

/* What the peak window counts: a's completions, or what b alone was delivered. */
static uint64_t
stream_count(struct perf_run *r, const struct stream *s)
{
	return perf_run_has_a(r) ? s->done - s->done0 : stream_delivered(r, s, s->sent);
}

/*
 * The round ends when every send posted is complete and delivered. Host a alone: when
 * complete (RC: acknowledged; the server counts what it got). Host b alone: when it has
 * the messages of its -n and -q (send), or the client's end barrier came (write: a WRITE
 * completes nothing at its target).
 */
static bool
stream_over(struct perf_run *r, struct stream *s)
{
	bool has_a = perf_run_has_a(r), has_b = perf_run_has_b(r);

	if (has_a && !sender_over(s))
		return false;
	if (!has_b)
		return true;
	if (!has_a)
		return s->one_sided ? s->peer_done : s->received == r->o->iters * r->b.nb_qps;
	if (loses_messages(r))
		return perf_fault_settled(r, &s->sb0, s->received);
	return stream_delivered(r, s, s->sent) == s->sent;
}

/*
 * Host b on its own lcore (perf_lcores.c): its engines and application until a's part is
 * over and b has what a sent, its progress published for the main lcore's stall check.
 */
static int
stream_b_main(void *arg)
{
	struct stream *s = arg;
	struct perf_run *r = s->r;

	while (!perf_split_flag(&r->split.quit)) {
		if (receiver_step(r, s) != 0) {
			perf_split_set(&r->split.b_failed);
			return -1;
		}
		__atomic_store_n(&r->split.b_count, s->received, __ATOMIC_RELAXED);
		if (perf_split_flag(&r->split.a_done) &&
		    stream_delivered(r, s, s->sent_final) == s->sent_final) {
			perf_split_set(&r->split.b_done);
			break;
		}
	}
	return 0;
}

/*
 * The main lcore's end of a split round: a's part over, its count handed over once; then
 * the round is over when b says it has all.
 */
static bool
split_over(struct perf_run *r, struct stream *s)
{
	if (!r->split.a_done && sender_over(s)) {
		s->sent_final = s->sent;
		perf_split_set(&r->split.a_done);
	}
	return r->split.a_done && perf_split_flag(&r->split.b_done);
}

/* A round's checks beyond sent = received (both hosts here). 0, or -1 after printing why. */
static int
round_check(struct perf_run *r, const struct stream *s, const struct perf_bw *f)
{
	struct droce_engine_stats sb1;

	if (loses_messages(r))
		return perf_fault_check(r, f);
	if (f->sent != f->received) {
		fprintf(stderr, "droce-perf: %llu messages sent, %llu received\n",
			(unsigned long long)f->sent, (unsigned long long)f->received);
		return -1;
	}
	if (r->o->mode->check == NULL)
		return 0;
	perf_host_stats(&r->b, &sb1);
	return r->o->mode->check(r, &s->sb0, &sb1, f->sent, f->size);
}

/* send, write, read and atomic at one size. */
int
perf_stream_run(struct perf_run *r, uint32_t size)
{
	const struct perf_opts *o = r->o;
	struct perf_host *a = &r->a, *b = &r->b;
	uint64_t hz = rte_get_tsc_hz(), win = hz / 1000000 * PEAK_WINDOW_US;
	uint64_t t0, now, last_progress, win_t, win_cnt = 0, progress = 0, cnt;
	bool has_a = perf_run_has_a(r), has_b = perf_run_has_b(r), split = perf_run_splits(r);
	double peak = 0, secs;
	struct stream s;
	struct perf_bw f;
	uint64_t received;
	uint32_t i;

	memset(&s, 0, sizeof(s));
	s.r = r;
	s.size = size;
	s.one_sided = !o->mode->two_sided;
	s.per_tick = perf_rate_msgs(o, size) / (double)hz;
	for (i = 0; i < b->nb_qps; i++)
		if (!s.one_sided)
			perf_qp_fill_recvs(b, &b->qps[i]);
	a->ready_head = a->ready_count = 0;
	for (i = 0; i < a->nb_qps; i++) {
		a->qps[i].round_posted = 0;
		a->qps[i].closed = true;	/* nothing to complete yet */
		a->qps[i].queued = false;
		ready_push(a, &a->qps[i]);
	}
	perf_host_stats(b, &s.sb0);
	/* the counters the round's figures and checks are differences of */
	perf_host_stats(a, &r->a0);
	perf_fault_stats(b, &r->fb0);
	if (o->mode->prepare != NULL)
		o->mode->prepare(r);
	s.done0 = a->done_sum;
	s.recv0 = b->rdone_sum;
	/* a peer process: after its receives are posted */
	if (perf_peer_run_start(r) != 0)
		return -1;
	t0 = s.t0 = rte_rdtsc();
	s.t_end = o->duration_s > 0 ? t0 + (uint64_t)(o->duration_s * (double)hz) : UINT64_MAX;
	if (perf_cc_round_start(r, t0) != 0)
		return -1;
	last_progress = win_t = t0;
	if (split && perf_split_launch(r, stream_b_main, &s) != 0)
		return -1;
	for (;;) {
		now = rte_rdtsc();
		if (has_a && sender_step(r, &s, now) != 0)
			goto fail;
		if (has_b && !split && receiver_step(r, &s) != 0)
			goto fail;
		if (split && perf_split_flag(&r->split.b_failed))
			goto fail;
		received = split ? __atomic_load_n(&r->split.b_count, __ATOMIC_RELAXED) :
				   s.received;
		/* posts count too: under --rate a signaled completion can be far off */
		if (s.done + received + s.sent != progress) {
			progress = s.done + received + s.sent;
			last_progress = now;
		} else if (now - last_progress > PERF_STALL_S * hz) {
			fprintf(stderr, "droce-perf: no completion for %d s\n", PERF_STALL_S);
			goto fail;
		}
		if (now - win_t >= win) {
			cnt = stream_count(r, &s);
			peak = RTE_MAX(peak, (double)(cnt - win_cnt) * size * 8 /
					     ((double)(now - win_t) / (double)hz) / 1e9);
			/* host b alone in write sees its progress and the end only here */
			if (cnt != win_cnt)
				last_progress = now;
			if (!has_a && s.one_sided)
				s.peer_done = perf_peer_end_ready(r);
			win_t = now;
			win_cnt = cnt;
		}
		perf_cc_sample(r, now);
		if (split ? split_over(r, &s) : stream_over(r, &s))
			break;
	}
	now = rte_rdtsc();
	/* b's lcore returned: its state is this lcore's to read */
	if (split && perf_split_join(r) != 0)
		return -1;
	secs = (double)(now - t0) / (double)hz;
	memset(&f, 0, sizeof(f));
	f.size = size;
	f.sent = s.sent;
	f.sent_known = has_a;
	f.received = has_b ? stream_delivered(r, &s, s.sent) : 0;
	f.received_known = has_b;
	f.iters = has_a ? f.sent : f.received;
	f.secs = secs;
	if (has_a) {
		struct droce_engine_stats a1;

		perf_host_stats(a, &a1);
		f.retransmits = a1.req_retransmit - r->a0.req_retransmit;
	}
	if (f.sent_known && f.received_known)
		f.lost = f.sent > f.received ? f.sent - f.received : 0;
	/* goodput: what was delivered (all that was sent but on UC and UD under loss) */
	f.avg_gbps = (double)(has_b ? f.received : f.iters) * size * 8 / secs / 1e9;
	f.mpps = (double)(has_b ? f.received : f.iters) / secs / 1e6;
	/* A run shorter than one window has no peak of its own: its average is its peak. */
	f.peak_gbps = peak > 0 ? RTE_MAX(peak, f.avg_gbps) : f.avg_gbps;
	if (perf_peer_run_end(r, &f) != 0)
		return -1;
	perf_report_bw(r, &f);
	perf_cc_round_end(r, now, size);
	if (f.sent_known && f.received_known)
		return round_check(r, &s, &f);
	return 0;
fail:
	if (split)
		perf_split_join(r);
	return -1;
}
