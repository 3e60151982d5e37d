/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * read: host a reads SIZE bytes of host b's slot into its own, RDMA READs on every QP, RC
 * only (perftest's ib_read_bw), on perf_stream.c's round. b's application posts nothing:
 * its responder's READ response packets (rd_resp_sent) say how many READs it answered,
 * and after the round that it sent each READ's packets once.
 */
#include <stdio.h>

#include <rte_common.h>

#include "perf.h"

static uint64_t
packets_per_msg(const struct perf_run *r, uint32_t size)
{
	uint32_t mtu = 128u << r->o->mtu;

	return (size + mtu - 1) / mtu;
}

static void
read_wr(struct perf_run *r, struct perf_qp *q, struct ibv_send_wr *wr, struct ibv_sge *sge,
	uint32_t size)
{
	wr->opcode = IBV_WR_RDMA_READ;
	wr->wr.rdma.remote_addr = perf_stream_remote(r, q, sge, size);
	wr->wr.rdma.rkey = r->peer_b.rkey;
}

/*
 * READs answered: response packets over packets per READ, at most sent (responses sent
 * again after a loss do not answer more READs; read_check counts them).
 */
static uint64_t
read_delivered(const struct perf_run *r, const struct droce_engine_stats *b0,
	       const struct droce_engine_stats *b1, uint32_t size, uint64_t sent)
{
	return RTE_MIN((b1->rd_resp_sent - b0->rd_resp_sent) / packets_per_msg(r, size), sent);
}

/* b sent each READ's response packets once (again after a loss, so more then). */
static int
read_check(struct perf_run *r, const struct droce_engine_stats *b0,
	   const struct droce_engine_stats *b1, uint64_t sent, uint32_t size)
{
	struct droce_engine_stats a1;
	uint64_t resp, want;

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

const struct perf_mode_ops perf_mode_read = {
	.name = "read",
	.default_size = PERF_DEFAULT_BW_SIZE,
	.default_iters = PERF_DEFAULT_BW_ITERS,
	.several_qps = true,
	.run = perf_stream_run,
	.wr = read_wr,
	.delivered = read_delivered,
	.check = read_check,
};
