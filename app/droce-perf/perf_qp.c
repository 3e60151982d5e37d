/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What both RoCE rounds, the stream modes' (perf_stream.c) and lat's (perf_lat.c), do
 * with a host's QPs on the lcore that runs the host: receives posted into its buffer's
 * slots, a QP found by the number a completion gives, a completion's status looked at.
 */
#include <stdio.h>

#include <rte_common.h>

#include "perf.h"

/* Receives of the largest size: any message of the run fits. How many were posted. */
uint32_t
perf_qp_post_recvs(struct perf_host *h, struct perf_qp *q, uint32_t n)
{
	struct ibv_recv_wr wr[PERF_POST_CHAIN], *bad = NULL;
	struct ibv_sge sge[PERF_POST_CHAIN];
	uint32_t i, k = RTE_MIN(n, (uint32_t)PERF_POST_CHAIN);

	for (i = 0; i < k; i++) {
		sge[i].addr = perf_qp_slot(h, q);
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

/* Receives posted until q's receive ring is full. */
void
perf_qp_fill_recvs(struct perf_host *h, struct perf_qp *q)
{
	uint64_t room;

	for (;;) {
		room = q->view.rq_size - (q->rposted - q->rdone);
		if (room == 0 || perf_qp_post_recvs(h, q, (uint32_t)room) == 0)
			break;
	}
}

bool
perf_wc_ok(const struct ibv_wc *wc, const char *who)
{
	if (wc->status == IBV_WC_SUCCESS)
		return true;
	/* By number: the system libibverbs (ibv_wc_status_str) must not be linked. */
	fprintf(stderr, "droce-perf: %s: completion wr_id %llu qp %u: status %d\n", who,
		(unsigned long long)wc->wr_id, wc->qp_num, (int)wc->status);
	return false;
}

/* The QP of a completion's qp_num, or NULL. */
struct perf_qp *
perf_qp_of(const struct perf_host *h, uint32_t qpn)
{
	return qpn < h->max_qps ? h->by_qpn[qpn] : NULL;
}
