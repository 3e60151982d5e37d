/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * send: host a streams SIZE-byte SENDs to host b on every QP, RC, UC or UD (perftest's
 * ib_send_bw), on perf_stream.c's round; b reposts each receive as it completes, and its
 * receive completions are what was delivered. Over UD each QP sends to the peer's QP of
 * the same index through the host's address handle (perf_ud.c).
 */
#include "perf.h"

static void
send_wr(struct perf_run *r, struct perf_qp *q, struct ibv_send_wr *wr, struct ibv_sge *sge,
	uint32_t size)
{
	(void)sge;
	(void)size;
	wr->opcode = IBV_WR_SEND;
	if (q->view.qp_type == DROCE_SHM_QPT_UD)
		perf_ud_wr(r, q, wr, &r->peer_b);
}

const struct perf_mode_ops perf_mode_send = {
	.name = "send",
	.default_size = PERF_DEFAULT_BW_SIZE,
	.default_iters = PERF_DEFAULT_BW_ITERS,
	.several_qps = true,
	.uc = true,
	.ud = true,
	.peer = PERF_PEER_SEND,
	.shared_qps = true,
	.two_sided = true,
	.run = perf_stream_run,
	.wr = send_wr,
};
