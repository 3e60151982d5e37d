/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdbool.h>
#include <string.h>

#include "droce_shm_bringup.h"

#define HOP_LIMIT	64

void
droce_shm_bringup_ah(struct droce_shm_ah_attr *ah, const uint8_t dgid[16], uint8_t sgid_index)
{
	memset(ah, 0, sizeof(*ah));
	memcpy(ah->dgid, dgid, sizeof(ah->dgid));
	ah->sgid_index = sgid_index;
	ah->is_global = 1;	/* RoCEv2: every packet carries the GRH's addresses */
	ah->hop_limit = HOP_LIMIT;
	ah->port_num = 1;
}

void
droce_shm_bringup_connected(const struct droce_shm_bringup_path *p,
		     struct droce_shm_qp_attr attr[DROCE_SHM_BRINGUP_STEPS])
{
	/* RC's attributes for XRC's two halves too (the transport is RC's). */
	bool rc = p->qp_type == DROCE_SHM_QPT_RC || p->qp_type == DROCE_SHM_QPT_XRC_SEND ||
		  p->qp_type == DROCE_SHM_QPT_XRC_RECV;
	struct droce_shm_qp_attr *a;

	memset(attr, 0, DROCE_SHM_BRINGUP_STEPS * sizeof(*attr));
	a = &attr[0];
	a->mask = DROCE_SHM_QP_STATE | DROCE_SHM_QP_PKEY_INDEX | DROCE_SHM_QP_PORT |
		  DROCE_SHM_QP_ACCESS_FLAGS;
	a->qp_state = DROCE_SHM_QPS_INIT;
	a->port_num = 1;
	a->qp_access_flags = p->access;

	a = &attr[1];
	a->mask = DROCE_SHM_QP_STATE | DROCE_SHM_QP_AV | DROCE_SHM_QP_PATH_MTU |
		  DROCE_SHM_QP_DEST_QPN | DROCE_SHM_QP_RQ_PSN;
	if (rc)
		a->mask |= DROCE_SHM_QP_MAX_DEST_RD_ATOMIC | DROCE_SHM_QP_MIN_RNR_TIMER;
	a->qp_state = DROCE_SHM_QPS_RTR;
	a->path_mtu = p->mtu;
	a->dest_qp_num = p->dest_qpn;
	a->rq_psn = p->rq_psn;
	a->max_dest_rd_atomic = p->rd_atomic;
	a->min_rnr_timer = p->min_rnr_timer;
	a->ah = p->ah;

	a = &attr[2];
	a->mask = DROCE_SHM_QP_STATE | DROCE_SHM_QP_SQ_PSN;
	if (rc)
		a->mask |= DROCE_SHM_QP_TIMEOUT | DROCE_SHM_QP_RETRY_CNT | DROCE_SHM_QP_RNR_RETRY |
			   DROCE_SHM_QP_MAX_QP_RD_ATOMIC;
	a->qp_state = DROCE_SHM_QPS_RTS;
	a->sq_psn = p->sq_psn;
	a->timeout = p->timeout;
	a->retry_cnt = p->retry_cnt;
	a->rnr_retry = p->rnr_retry;
	a->max_rd_atomic = p->rd_atomic;
}

void
droce_shm_bringup_ud(uint32_t qkey, uint32_t sq_psn, struct droce_shm_qp_attr attr[DROCE_SHM_BRINGUP_STEPS])
{
	memset(attr, 0, DROCE_SHM_BRINGUP_STEPS * sizeof(*attr));
	attr[0].mask = DROCE_SHM_QP_STATE | DROCE_SHM_QP_PKEY_INDEX | DROCE_SHM_QP_PORT |
		       DROCE_SHM_QP_QKEY;
	attr[0].qp_state = DROCE_SHM_QPS_INIT;
	attr[0].port_num = 1;
	attr[0].qkey = qkey;
	attr[1].mask = DROCE_SHM_QP_STATE;
	attr[1].qp_state = DROCE_SHM_QPS_RTR;
	attr[2].mask = DROCE_SHM_QP_STATE | DROCE_SHM_QP_SQ_PSN;
	attr[2].qp_state = DROCE_SHM_QPS_RTS;
	attr[2].sq_psn = sq_psn;
}
