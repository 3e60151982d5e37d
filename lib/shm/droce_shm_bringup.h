/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef DROCE_SHM_BRINGUP_H
#define DROCE_SHM_BRINGUP_H

/*
 * A QP's way from RESET to RTS for the programs that speak lib/shm's QP attributes
 * themselves rather than through libdroce: the engine tests' client (test/engine), the
 * hostile client of droced (test/integration/raw_garbage.c), droce-bench-engine and
 * app/droce-perf. This
 * builds the three attributes, INIT, RTR and RTS, with the attributes IB 11.2.4.2 requires
 * of the QP's type; each program applies them its own way (lib/engine's control call,
 * droced's MODIFY_QP request), one after the other, stopping at the first refusal.
 */

#include <stdint.h>

#include <droce_shm_arena.h>
#include <droce_shm_qp_attr.h>

#define DROCE_SHM_BRINGUP_STEPS	3	/* INIT, RTR, RTS */

/* A connected (RC or UC) QP's path to its peer. Values are taken as given: no defaults. */
struct droce_shm_bringup_path {
	uint8_t qp_type;		/* DROCE_SHM_QPT_RC or DROCE_SHM_QPT_UC */
	uint32_t access;		/* qp_access_flags (INIT) */
	uint8_t mtu;			/* enum ibv_mtu */
	uint32_t dest_qpn;
	uint32_t sq_psn;		/* this QP's first send PSN */
	uint32_t rq_psn;		/* the first PSN it expects */
	struct droce_shm_ah_attr ah;	/* the peer (droce_shm_bringup_ah) */
	/* RC only (UC has no acknowledgements and no RDMA READ or atomics). */
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t min_rnr_timer;
	uint8_t rd_atomic;		/* max_rd_atomic and max_dest_rd_atomic */
};

/* The address of a peer reached by GID: dgid from our GID table entry sgid_index, port 1. */
void droce_shm_bringup_ah(struct droce_shm_ah_attr *ah, const uint8_t dgid[16], uint8_t sgid_index);

/* INIT, RTR and RTS of a connected QP. */
void droce_shm_bringup_connected(const struct droce_shm_bringup_path *p,
			  struct droce_shm_qp_attr attr[DROCE_SHM_BRINGUP_STEPS]);

/* INIT (with qkey), RTR and RTS (from sq_psn) of a UD QP. */
void droce_shm_bringup_ud(uint32_t qkey, uint32_t sq_psn,
		   struct droce_shm_qp_attr attr[DROCE_SHM_BRINGUP_STEPS]);

#endif /* DROCE_SHM_BRINGUP_H */
