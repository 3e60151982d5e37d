/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * send over UD (-c UD): each host's QP i sends to the peer's QP i through the host's one
 * address handle towards the peer (a domain's AHs serve all its engines, which share the
 * port), with one Q_Key on both sides. A receive buffer has room for the 40-byte GRH before the message
 * (IB 11.4.1.1; RoCEv2 A17.4.5.1), and a message is at most the path MTU (UD sends one
 * packet, IB 9.8.3; perf_opts.c refuses bigger).
 */
#include <stdio.h>
#include <string.h>

#include <droce_shm_bringup.h>

#include "perf.h"

/* perftest's Q_Key (DEF_QKEY), so a perftest UD peer would match it. */
#define PERF_QKEY	0x11111111u

uint32_t
perf_recv_room(const struct perf_opts *o)
{
	return o->qp_type == DROCE_SHM_QPT_UD ? DROCE_GRH_LEN : 0;
}

/* The AHs towards p (its neighbour entry is in already), then h's QPs to RTS. */
int
perf_ud_connect(struct perf_host *h, const struct perf_peer *p, uint32_t pd)
{
	struct droce_shm_qp_attr steps[DROCE_SHM_BRINGUP_STEPS];
	struct droce_shm_ah_attr attr;
	uint32_t i, k;
	int ret;

	droce_shm_bringup_ah(&attr, p->gid, 0);
	memset(&h->ah, 0, sizeof(h->ah));
	ret = droce_engine_ah_create(h->dom, 0, pd, &attr, &h->ah.handle);
	if (ret != 0) {
		fprintf(stderr, "droce-perf: host %s: address handle: %s\n", h->name,
			strerror(-ret));
		return -1;
	}
	h->have_ah = true;
	h->qkey = PERF_QKEY;
	droce_shm_bringup_ud(h->qkey, h->psn, steps);
	for (i = 0; i < h->nb_qps; i++) {
		for (k = 0; k < DROCE_SHM_BRINGUP_STEPS; k++) {
			ret = droce_engine_qp_modify(h->qps[i].qp, &steps[k]);
			if (ret != 0) {
				fprintf(stderr, "droce-perf: host %s: UD QP %u to state %u: %s\n",
					h->name, h->qps[i].qpn, steps[k].qp_state, strerror(-ret));
				return -1;
			}
		}
	}
	return 0;
}

bool
perf_ud_ah_valid(const struct perf_host *h, uint32_t ah)
{
	return h->have_ah && h->ah.handle == ah;
}

/* a's QP q to the peer's QP of the same index. */
void
perf_ud_wr(const struct perf_run *r, const struct perf_qp *q, struct ibv_send_wr *wr,
	   const struct perf_peer *peer)
{
	const struct perf_host *a = &r->a;
	uint32_t i = (uint32_t)(q - a->qps);

	wr->wr.ud.ah = (struct ibv_ah *)(uintptr_t)&a->ah;
	wr->wr.ud.remote_qpn = peer->qpns[i];
	wr->wr.ud.remote_qkey = a->qkey;
}
