/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fault engine, shared by the library form (fault_cb.c) and the net_fault vdev
 * (fault_vdev.c): per rx queue, the bottleneck queue (fault_bn.c) if there is one, then
 * the faults applied to what leaves it. The lcore that polls a queue owns that queue's
 * state (PRNGs, hold buffer, bottleneck, counters); no locks, no threads: held and queued
 * packets leave on later bursts of the same queue.
 */

#include <errno.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_malloc.h>

#include "fault_loc.h"

RTE_LOG_REGISTER(fault_logtype, droce.fault, NOTICE);

const char *const droce_fault_counter_names[] = {
#define FAULT_NAME(name, desc) #name,
	DROCE_FAULT_COUNTERS(FAULT_NAME)
#undef FAULT_NAME
};

const char *const droce_fault_counter_descs[] = {
#define FAULT_DESC(name, desc) desc,
	DROCE_FAULT_COUNTERS(FAULT_DESC)
#undef FAULT_DESC
};

/* The output of one burst: the application's array and its size. */
struct fault_burst {
	struct rte_mbuf **pkts;
	uint16_t n;
	uint16_t max;
};

static uint64_t
fault_rand(struct fault_queue *q)
{
	return fault_rng_next(&q->rng);
}

/* Hands m to the application, or defers it to the next burst when this one is full. */
static void fault_hold_push(struct fault_queue *q, struct fault_burst *b, struct rte_mbuf *m,
			    uint64_t due_tsc);

static void
fault_emit(struct fault_queue *q, struct fault_burst *b, struct rte_mbuf *m)
{
	if (b->n < b->max) {
		b->pkts[b->n++] = m;
		q->st.delivered++;
		return;
	}
	fault_hold_push(q, b, m, 0);
}

/* Holds m until a later burst and due_tsc; a full buffer releases (or frees) its oldest. */
static void
fault_hold_push(struct fault_queue *q, struct fault_burst *b, struct rte_mbuf *m,
		uint64_t due_tsc)
{
	if (q->nb_held == FAULT_HOLD_MAX) {
		struct rte_mbuf *oldest = q->hold[0].m;

		q->nb_held--;
		memmove(&q->hold[0], &q->hold[1], q->nb_held * sizeof(q->hold[0]));
		if (b->n < b->max) {
			b->pkts[b->n++] = oldest;
			q->st.delivered++;
		} else {
			rte_pktmbuf_free(oldest);
			q->st.overflowed++;
		}
	}
	q->hold[q->nb_held++] = (struct fault_hold){ .m = m, .due_tsc = due_tsc,
						     .call = q->call };
}

/* Flips bit (r mod 8) of byte r' of the packet data, whichever segment holds it. */
static void
fault_corrupt(struct rte_mbuf *m, uint64_t r)
{
	uint32_t off = fault_below(r, m->pkt_len);
	struct rte_mbuf *seg = m;

	while (off >= seg->data_len) {
		off -= seg->data_len;
		seg = seg->next;
	}
	*rte_pktmbuf_mtod_offset(seg, uint8_t *, off) ^= 1u << (r % FAULT_BITS_PER_BYTE);
}

/*
 * Decides the faults of one packet. Every packet takes the same six draws whatever the
 * rates, so one kind's decisions do not depend on the others' rates.
 */
static void
fault_one(struct fault_queue *q, struct fault_burst *b, struct rte_mbuf *m, uint64_t now)
{
	const struct fault_cfg *cfg = q->cfg;
	uint64_t r_drop = fault_rand(q), r_dup = fault_rand(q), r_corrupt = fault_rand(q);
	uint64_t r_pos = fault_rand(q), r_delay = fault_rand(q), r_reorder = fault_rand(q);
	struct rte_mbuf *copy = NULL;

	if (fault_hit(r_drop, cfg->drop)) {
		rte_pktmbuf_free(m);
		q->st.dropped++;
		return;
	}
	/* The copy is taken first: corrupting the original leaves it intact. */
	if (fault_hit(r_dup, cfg->dup)) {
		copy = rte_pktmbuf_copy(m, m->pool, 0, UINT32_MAX);
		if (copy == NULL)
			q->st.dup_failed++;
		else
			q->st.duplicated++;
	}
	if (fault_hit(r_corrupt, cfg->corrupt) && m->pkt_len > 0) {
		fault_corrupt(m, r_pos);
		q->st.corrupted++;
	}
	if (fault_hit(r_delay, cfg->delay)) {
		fault_hold_push(q, b, m, now + q->delay_tsc);
		q->st.delayed++;
	} else if (fault_hit(r_reorder, cfg->reorder)) {
		fault_hold_push(q, b, m, 0);
		q->st.reordered++;
	} else {
		fault_emit(q, b, m);
	}
	if (copy != NULL)
		fault_emit(q, b, copy);
}

/* Appends the held packets that are due, oldest first, while the burst has room. */
static void
fault_release(struct fault_queue *q, struct fault_burst *b, uint64_t now)
{
	uint32_t i, kept = 0;

	for (i = 0; i < q->nb_held; i++) {
		struct fault_hold *h = &q->hold[i];

		if (h->call < q->call && now >= h->due_tsc && b->n < b->max) {
			b->pkts[b->n++] = h->m;
			q->st.delivered++;
		} else {
			q->hold[kept++] = *h;
		}
	}
	q->nb_held = kept;
}

uint16_t
fault_rx_burst(struct fault_queue *q, struct rte_mbuf *pkts[], uint16_t nb_pkts,
	       uint16_t max_pkts)
{
	struct fault_burst b = { .pkts = pkts, .n = 0, .max = max_pkts };
	uint64_t now = rte_rdtsc();
	uint16_t i, n = nb_pkts;

	q->call++;
	q->st.received += nb_pkts;
	if (q->bn.nb_slots != 0)
		n = fault_bn_burst(q, pkts, nb_pkts, q->in, max_pkts, now);
	else
		memcpy(q->in, pkts, nb_pkts * sizeof(pkts[0]));
	for (i = 0; i < n; i++)
		fault_one(q, &b, q->in[i], now);
	fault_release(q, &b, now);
	return b.n;
}

void
fault_queue_release(struct droce_fault *f, uint16_t queue)
{
	struct fault_queue *q = f->q[queue];
	uint32_t i;

	if (q == NULL)
		return;
	for (i = 0; i < q->nb_held; i++)
		rte_pktmbuf_free(q->hold[i].m);
	fault_bn_free(q);
	rte_free(q);
	f->q[queue] = NULL;
}

int
fault_queue_setup(struct droce_fault *f, uint16_t queue, int socket)
{
	size_t size = sizeof(struct fault_queue) +
		      fault_bn_nb_slots(&f->cfg) * sizeof(struct fault_bn_slot);
	struct fault_queue *q;

	fault_queue_release(f, queue);
	q = rte_zmalloc_socket("droce_fault_queue", size, RTE_CACHE_LINE_SIZE, socket);
	if (q == NULL)
		return -ENOMEM;
	q->cfg = &f->cfg;
	q->queue_id = queue;
	/* Each queue its own stream, so queues do not perturb each other. */
	q->rng = f->cfg.seed ^ ((uint64_t)(queue + 1) * FAULT_RNG_GAMMA);
	q->delay_tsc = f->cfg.delay_us * rte_get_tsc_hz() / FAULT_US_PER_S;
	fault_bn_setup(q, queue);
	f->q[queue] = q;
	return 0;
}

int
fault_new(const char *args, struct droce_fault **fp)
{
	struct droce_fault *f;
	int ret;

	f = rte_zmalloc("droce_fault", sizeof(*f), 0);
	if (f == NULL)
		return -ENOMEM;
	ret = fault_args_parse(args, &f->cfg);
	if (ret != 0) {
		rte_free(f);
		return ret;
	}
	*fp = f;
	return 0;
}

void
fault_free(struct droce_fault *f)
{
	uint16_t i;

	if (f == NULL)
		return;
	for (i = 0; i < RTE_DIM(f->q); i++)
		fault_queue_release(f, i);
	rte_free(f);
}

void
fault_stats_reset(struct droce_fault *f)
{
	uint16_t i;

	for (i = 0; i < f->nb_queues; i++) {
		struct fault_queue *q = f->q[i];

		if (q == NULL)
			continue;
		memset(&q->st, 0, sizeof(q->st));
		/* The highest depth since the reset starts from the depth now. */
		q->st.bn_depth_max = q->bn.depth;
	}
}

int
droce_fault_stats_get(const struct droce_fault *f, int32_t queue,
		      struct droce_fault_stats *st)
{
	uint64_t depth_max = 0;
	int32_t i;

	if (f == NULL || st == NULL || queue < -1 || queue >= (int32_t)f->nb_queues)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	for (i = 0; i < (int32_t)f->nb_queues; i++) {
		struct fault_queue *q = f->q[i];

		if (q == NULL || (queue != -1 && queue != i))
			continue;
#define FAULT_SUM(name, desc) st->name += q->st.name;
		DROCE_FAULT_COUNTERS(FAULT_SUM)
#undef FAULT_SUM
		st->held += q->nb_held;
		st->bn_depth += q->bn.depth;
		st->bn_held += q->bn.nb;
		/* Peaks of different queues at different times do not add up. */
		depth_max = RTE_MAX(depth_max, q->st.bn_depth_max);
	}
	st->bn_depth_max = depth_max;
	return 0;
}
