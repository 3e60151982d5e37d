/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * atomic: FETCH_AND_ADD or CMP_AND_SWAP (--atomic-type) on 8-byte words of host b's
 * buffer, RC only (perftest's ib_atomic_bw, -A), on perf_stream.c's round: QP i on word
 * i mod nb_words, the original value into the same word of a's buffer. b's application
 * posts nothing: its engines' atomic_exec counter says what its responder executed, and
 * after the round its words must have moved by exactly what the QPs issued.
 */
#include <stdio.h>
#include <string.h>

#include <rte_common.h>

#include "perf.h"

/* FETCH_AND_ADD's addend and CMP_AND_SWAP's step: the words count the operations. */
#define ATOMIC_ADD		1u

static uint64_t *
host_word(const struct perf_host *h, uint32_t w)
{
	return (uint64_t *)(void *)(h->buf + (uint64_t)w * PERF_ATOMIC_SIZE);
}

static uint32_t
qp_word(const struct perf_run *r, const struct perf_qp *q)
{
	return (uint32_t)(q - r->a.qps) % r->nb_words;
}

/* One size, 8 bytes; a word of b's buffer per CMP_AND_SWAP chain. */
static int
atomic_check_opts(const struct perf_opts *o)
{
	if (o->all_sizes) {
		fprintf(stderr, "droce-perf: --all: atomic has one size, %u bytes\n",
			PERF_ATOMIC_SIZE);
		return -1;
	}
	if (o->size != PERF_ATOMIC_SIZE) {
		fprintf(stderr, "droce-perf: --size %u: an atomic operates on %u bytes\n", o->size,
			PERF_ATOMIC_SIZE);
		return -1;
	}
	if (o->atomic_cas && o->qps > PERF_ATOMIC_WORDS) {
		fprintf(stderr, "droce-perf: --qps %u: CMP_AND_SWAP chains take a word of host b's "
			"buffer each, at most %u QPs\n", o->qps, PERF_ATOMIC_WORDS);
		return -1;
	}
	return 0;
}

/* Before the round: b's words as they are, where each CMP_AND_SWAP chain starts. */
static void
atomic_prepare(struct perf_run *r)
{
	uint32_t w;

	r->nb_words = (uint32_t)RTE_MIN(r->b.buf_len / PERF_ATOMIC_SIZE,
					(uint64_t)PERF_ATOMIC_WORDS);
	for (w = 0; w < r->nb_words; w++) {
		r->words0[w] = *host_word(&r->b, w);
		r->cas_next[w] = r->words0[w];
	}
}

static void
atomic_wr(struct perf_run *r, struct perf_qp *q, struct ibv_send_wr *wr, struct ibv_sge *sge,
	  uint32_t size)
{
	const struct perf_peer *peer = &r->peer_b;
	uint32_t w = qp_word(r, q);

	(void)size;
	/* a QP's results in order in one word: the last one stays (atomic_check) */
	sge->addr = (uintptr_t)host_word(&r->a, w);
	wr->wr.atomic.remote_addr = peer->buf_addr + (uint64_t)w * PERF_ATOMIC_SIZE;
	wr->wr.atomic.rkey = peer->rkey;
	if (r->o->atomic_cas) {
		/* compare = the value the previous swap of this QP left: every one succeeds */
		wr->opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
		wr->wr.atomic.compare_add = r->cas_next[w];
		wr->wr.atomic.swap = r->cas_next[w] + ATOMIC_ADD;
		r->cas_next[w] += ATOMIC_ADD;
	} else {
		wr->opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr->wr.atomic.compare_add = ATOMIC_ADD;
	}
}

static uint64_t
atomic_delivered(const struct perf_run *r, const struct droce_engine_stats *b0,
		 const struct droce_engine_stats *b1, uint32_t size, uint64_t sent)
{
	(void)r;
	(void)size;
	(void)sent;
	return b1->atomic_exec - b0->atomic_exec;
}

/*
 * Each word of b moved by exactly ATOMIC_ADD per operation its QPs issued (FETCH_AND_ADD),
 * or its chain of CMP_AND_SWAPs all succeeded (a failed compare leaves the word behind);
 * and where a word has one QP, the last operation returned the value before it (IB 9.4.5:
 * the original value), as a's word holds.
 */
static int
atomic_check(struct perf_run *r, const struct droce_engine_stats *b0,
	     const struct droce_engine_stats *b1, uint64_t sent, uint32_t size)
{
	uint64_t ops[PERF_ATOMIC_WORDS], want;
	uint32_t i, w;

	(void)b0;
	(void)b1;
	(void)sent;
	(void)size;
	memset(ops, 0, sizeof(ops));
	for (i = 0; i < r->a.nb_qps; i++)
		ops[i % r->nb_words] += r->a.qps[i].round_posted;
	for (w = 0; w < r->nb_words; w++) {
		uint64_t now = *host_word(&r->b, w);

		want = r->words0[w] + ops[w] * ATOMIC_ADD;
		if (now != want) {
			fprintf(stderr, "droce-perf: atomic %s: host b's word %u is %#llx after %llu "
				"operations from %#llx, not %#llx\n",
				r->o->atomic_cas ? "CMP_AND_SWAP" : "FETCH_AND_ADD", w,
				(unsigned long long)now, (unsigned long long)ops[w],
				(unsigned long long)r->words0[w], (unsigned long long)want);
			return -1;
		}
		if (r->a.nb_qps > r->nb_words || ops[w] == 0)
			continue;
		want -= ATOMIC_ADD;
		if (*host_word(&r->a, w) != want) {
			fprintf(stderr, "droce-perf: atomic: the last operation on host b's word %u "
				"returned %#llx, not %#llx\n", w,
				(unsigned long long)*host_word(&r->a, w), (unsigned long long)want);
			return -1;
		}
	}
	return 0;
}

const struct perf_mode_ops perf_mode_atomic = {
	.name = "atomic",
	.default_size = PERF_ATOMIC_SIZE,
	.default_iters = PERF_DEFAULT_BW_ITERS,
	.several_qps = true,
	.check_opts = atomic_check_opts,
	.run = perf_stream_run,
	.prepare = atomic_prepare,
	.wr = atomic_wr,
	.delivered = atomic_delivered,
	.check = atomic_check,
};
