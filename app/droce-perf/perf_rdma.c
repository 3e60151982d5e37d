/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one-sided modes' work requests and checks. write: RDMA WRITEs of a's slot into the
 * same slot of b's buffer. read: RDMA READs of b's slot into a's (perftest's ib_read_bw).
 * atomic: FETCH_AND_ADD or CMP_AND_SWAP on 8-byte words of b's buffer, QP i on word
 * i mod nb_words, the original value into the same word of a's buffer (perftest's
 * ib_atomic_bw, -A). b's application posts nothing: what its responder did is read from
 * its engines' counters and its words.
 */
#include <stdio.h>
#include <string.h>

#include <rte_common.h>

#include "perf.h"

/* FETCH_AND_ADD's addend and CMP_AND_SWAP's step: the words count the operations. */
#define ATOMIC_ADD		1u

uint32_t
perf_mr_access(void)
{
	/* Every remote access, as perftest registers its buffer whatever the test. */
	return IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
	       IBV_ACCESS_REMOTE_ATOMIC;
}

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

void
perf_rdma_wr(struct perf_run *r, struct perf_qp *q, struct ibv_send_wr *wr,
	     struct ibv_sge *sge, const struct perf_peer *peer, uint64_t remote)
{
	uint32_t w;

	switch (r->o->mode) {
	case PERF_MODE_READ:
		wr->opcode = IBV_WR_RDMA_READ;
		wr->wr.rdma.remote_addr = remote;
		wr->wr.rdma.rkey = peer->rkey;
		break;
	case PERF_MODE_ATOMIC:
		w = qp_word(r, q);
		/* a QP's results in order in one word: the last one stays (perf_rdma_check) */
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
		break;
	default:
		wr->opcode = IBV_WR_RDMA_WRITE;
		wr->wr.rdma.remote_addr = remote;
		wr->wr.rdma.rkey = peer->rkey;
		break;
	}
}

static uint64_t
packets_per_msg(const struct perf_run *r, uint32_t size)
{
	uint32_t mtu = 128u << r->o->mtu;

	return (size + mtu - 1) / mtu;
}

/*
 * What b's responder did of the round's sent requests: WRITEs placed, atomics executed,
 * READs answered (response packets over packets per READ, at most sent: responses sent
 * again after a loss do not answer more READs; perf_rdma_check counts them).
 */
uint64_t
perf_rdma_delivered(const struct perf_run *r, const struct droce_engine_stats *b0,
		    const struct droce_engine_stats *b1, uint32_t size, uint64_t sent)
{
	switch (r->o->mode) {
	case PERF_MODE_READ:
		return RTE_MIN((b1->rd_resp_sent - b0->rd_resp_sent) / packets_per_msg(r, size),
			       sent);
	case PERF_MODE_ATOMIC:
		return b1->atomic_exec - b0->atomic_exec;
	default:
		return b1->resp_writes - b0->resp_writes;
	}
}

/* Before an atomic round: b's words as they are, where each CMP_AND_SWAP chain starts. */
void
perf_rdma_prepare(struct perf_run *r)
{
	uint32_t w;

	if (r->o->mode != PERF_MODE_ATOMIC)
		return;
	r->nb_words = (uint32_t)RTE_MIN(r->b.buf_len / PERF_ATOMIC_SIZE,
					(uint64_t)PERF_ATOMIC_WORDS);
	for (w = 0; w < r->nb_words; w++) {
		r->words0[w] = *host_word(&r->b, w);
		r->cas_next[w] = r->words0[w];
	}
}

/*
 * After a round of sent requests, every one complete at a. read: b sent each READ's
 * response packets once (again after a loss, so more then). atomic: each word of b moved
 * by exactly ATOMIC_ADD per operation its QPs issued (FETCH_AND_ADD), or its chain of
 * CMP_AND_SWAPs all succeeded (a failed compare leaves the word behind); and where a word
 * has one QP, the last operation returned the value before it (IB 9.4.5: the original
 * value), as a's word holds. 0, or -1 after printing why.
 */
int
perf_rdma_check(struct perf_run *r, const struct droce_engine_stats *b0,
		const struct droce_engine_stats *b1, uint64_t sent, uint32_t size)
{
	uint64_t ops[PERF_ATOMIC_WORDS], resp, want;
	uint32_t i, w;

	if (r->o->mode == PERF_MODE_READ) {
		struct droce_engine_stats a1;

		/* more only when READs were asked again: loss, or an early go-back */
		perf_host_stats(&r->a, &a1);
		resp = b1->rd_resp_sent - b0->rd_resp_sent;
		want = sent * packets_per_msg(r, size);
		if (resp == want || (resp > want && (perf_fault_lossy(r) ||
						     a1.req_retransmit != r->a0.req_retransmit)))
			return 0;
		fprintf(stderr, "droce-perf: read: host b sent %llu READ response packets for "
			"%llu READs of %u bytes, not %llu\n", (unsigned long long)resp,
			(unsigned long long)sent, size, (unsigned long long)want);
		return -1;
	}
	if (r->o->mode != PERF_MODE_ATOMIC)
		return 0;
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
