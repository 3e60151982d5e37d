/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * write: host a streams SIZE-byte RDMA WRITEs of its slots into the same slots of host b's
 * buffer, RC or UC (perftest's ib_write_bw), on perf_stream.c's round. b's application
 * posts nothing: what its responder placed is its engines' resp_writes counter.
 */
#include "perf.h"

static void
write_wr(struct perf_run *r, struct perf_qp *q, struct ibv_send_wr *wr, struct ibv_sge *sge,
	 uint32_t size)
{
	wr->opcode = IBV_WR_RDMA_WRITE;
	wr->wr.rdma.remote_addr = perf_stream_remote(r, q, sge, size);
	wr->wr.rdma.rkey = r->peer_b.rkey;
}

static uint64_t
write_delivered(const struct perf_run *r, const struct droce_engine_stats *b0,
		const struct droce_engine_stats *b1, uint32_t size, uint64_t sent)
{
	(void)r;
	(void)size;
	(void)sent;
	return b1->resp_writes - b0->resp_writes;
}

const struct perf_mode_ops perf_mode_write = {
	.name = "write",
	.default_size = PERF_DEFAULT_BW_SIZE,
	.default_iters = PERF_DEFAULT_BW_ITERS,
	.several_qps = true,
	.uc = true,
	.peer = PERF_PEER_WRITE,
	.shared_qps = true,
	.run = perf_stream_run,
	.wr = write_wr,
	.delivered = write_delivered,
};
