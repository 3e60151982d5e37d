/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef DROCE_SHM_QP_ATTR_H
#define DROCE_SHM_QP_ATTR_H

/*
 * QP attributes as they travel from ibv_modify_qp to the owning engine (fixed layout,
 * rdma-core's mask bits and values) and the transition rules every modify is checked
 * against (shm_qp_attr.c): the control path's half of the app <-> engine contract, with
 * the region arena (droce_shm_arena.h). None of this runs on the fast path.
 */

#include <stdbool.h>
#include <stdint.h>

#include "droce_shm.h"

/* enum ibv_qp_attr_mask bits (same values) */
enum droce_shm_qp_mask {
	DROCE_SHM_QP_STATE = 1u << 0,
	DROCE_SHM_QP_CUR_STATE = 1u << 1,
	DROCE_SHM_QP_EN_SQD_ASYNC_NOTIFY = 1u << 2,
	DROCE_SHM_QP_ACCESS_FLAGS = 1u << 3,
	DROCE_SHM_QP_PKEY_INDEX = 1u << 4,
	DROCE_SHM_QP_PORT = 1u << 5,
	DROCE_SHM_QP_QKEY = 1u << 6,
	DROCE_SHM_QP_AV = 1u << 7,
	DROCE_SHM_QP_PATH_MTU = 1u << 8,
	DROCE_SHM_QP_TIMEOUT = 1u << 9,
	DROCE_SHM_QP_RETRY_CNT = 1u << 10,
	DROCE_SHM_QP_RNR_RETRY = 1u << 11,
	DROCE_SHM_QP_RQ_PSN = 1u << 12,
	DROCE_SHM_QP_MAX_QP_RD_ATOMIC = 1u << 13,
	DROCE_SHM_QP_ALT_PATH = 1u << 14,
	DROCE_SHM_QP_MIN_RNR_TIMER = 1u << 15,
	DROCE_SHM_QP_SQ_PSN = 1u << 16,
	DROCE_SHM_QP_MAX_DEST_RD_ATOMIC = 1u << 17,
	DROCE_SHM_QP_PATH_MIG_STATE = 1u << 18,
	DROCE_SHM_QP_CAP = 1u << 19,
	DROCE_SHM_QP_DEST_QPN = 1u << 20,
	DROCE_SHM_QP_RATE_LIMIT = 1u << 25,
};

/* enum ibv_access_flags: the ones a QP's qp_access_flags may carry; droce refuses others. */
enum droce_shm_access {
	DROCE_SHM_ACCESS_LOCAL_WRITE = 1u << 0,
	DROCE_SHM_ACCESS_REMOTE_WRITE = 1u << 1,
	DROCE_SHM_ACCESS_REMOTE_READ = 1u << 2,
	DROCE_SHM_ACCESS_REMOTE_ATOMIC = 1u << 3,
	/* rdma-core 45's IBV_ACCESS_FLUSH_GLOBAL and _PERSISTENT (IBA 1.5 FLUSH) */
	DROCE_SHM_ACCESS_FLUSH_GLOBAL = 1u << 8,
	DROCE_SHM_ACCESS_FLUSH_PERSISTENT = 1u << 9,
};

/* enum ibv_mtu: path_mtu is one of these. */
enum droce_shm_mtu {
	DROCE_SHM_MTU_256 = 1,
	DROCE_SHM_MTU_512 = 2,
	DROCE_SHM_MTU_1024 = 3,
	DROCE_SHM_MTU_2048 = 4,
	DROCE_SHM_MTU_4096 = 5,
};

/*
 * Field widths on the wire: BTH PSN and QPN, GRH flow label, the 5-bit timer codes and
 * 3-bit retry counters of a QP context.
 */
#define DROCE_SHM_PSN_MAX		0xFFFFFFu	/* 24-bit PSN */
#define DROCE_SHM_QPN_MAX		0xFFFFFFu	/* 24-bit QPN */
#define DROCE_SHM_TIMER_CODE_MAX	31		/* 5-bit local ACK timeout, RNR timer */
#define DROCE_SHM_RETRY_MAX		7		/* 3-bit retry counts; 7 RNR = infinite */
#define DROCE_SHM_FLOW_LABEL_MAX	0xFFFFFu	/* 20-bit GRH flow label */

/* struct ibv_ah_attr of a RoCEv2 port: the GRH is what addresses a packet. */
struct droce_shm_ah_attr {
	uint8_t dgid[16];
	uint32_t flow_label;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t is_global;	/* must be 1 on an Ethernet port */
	uint8_t sl;
	uint8_t port_num;
	uint8_t rsvd[2];
};

/* struct ibv_qp_attr, the parts droce uses, at fixed offsets. */
struct droce_shm_qp_attr {
	uint32_t mask;			/* enum droce_shm_qp_mask */
	uint32_t qkey;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qp_num;
	uint32_t qp_access_flags;	/* enum ibv_access_flags */
	uint16_t pkey_index;
	uint8_t qp_state;		/* enum droce_shm_qp_state */
	uint8_t cur_qp_state;
	uint8_t path_mtu;		/* enum ibv_mtu: 1 = 256 .. 5 = 4096 */
	uint8_t en_sqd_async_notify;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;		/* RNR timer code 0..31 */
	uint8_t port_num;
	uint8_t timeout;		/* 0..31: 4.096 us * 2^timeout, 0 = infinite */
	uint8_t retry_cnt;		/* 0..7 */
	uint8_t rnr_retry;		/* 0..7, 7 = infinite */
	uint8_t rsvd[3];
	struct droce_shm_ah_attr ah;
};

_Static_assert(sizeof(struct droce_shm_ah_attr) == 28, "ah attr");
_Static_assert(sizeof(struct droce_shm_qp_attr) == 68, "qp attr");

/* What the device supports, for the value checks of a modify. */
struct droce_shm_qp_limits {
	uint8_t max_rd_atomic;		/* largest max_rd_atomic (as initiator) */
	uint8_t max_dest_rd_atomic;	/* largest max_dest_rd_atomic (as responder) */
	uint8_t phys_port_cnt;		/* ports are 1..phys_port_cnt */
	uint16_t pkey_tbl_len;
	uint16_t gid_tbl_len;
};

/*
 * Is the modify described by attr allowed on a QP of qp_type (enum droce_shm_qp_type) in
 * state cur (enum droce_shm_qp_state)? Checks the transition (IB spec 11.2.4.2 and its
 * table of required and optional attributes per transition and QP type: a required
 * attribute missing or an attribute not allowed -> -EINVAL) and every value against lim
 * (out-of-range state, MTU, timeout, retry counts, RNR timer, PSNs, QPN, port, P_Key index,
 * GID index, flow label, rd_atomic depths, a non-global AV -> -EINVAL). 0 when allowed. Without
 * DROCE_SHM_QP_STATE in mask the QP stays in cur (RTS -> RTS and the like).
 * Also -EINVAL: a QP type other than RC, UC, UD; unknown mask bits; CUR_STATE != cur; and
 * what droce does not implement even where the spec allows it: CAP (no resize), RATE_LIMIT,
 * ALT_PATH and PATH_MIG_STATE (no automatic path migration on RoCE; this struct carries
 * no alternate path). Any Q_Key value is accepted.
 */
int droce_shm_qp_attr_check(uint8_t qp_type, uint8_t cur, const struct droce_shm_qp_attr *attr,
			    const struct droce_shm_qp_limits *lim);

/* The state a modify moves to: attr->qp_state with DROCE_SHM_QP_STATE, else cur. */
static inline uint8_t
droce_shm_qp_attr_next(uint8_t cur, const struct droce_shm_qp_attr *attr)
{
	return (attr->mask & DROCE_SHM_QP_STATE) ? attr->qp_state : cur;
}

/* "RESET", "RTS", ...; "UNKNOWN" out of range. */
const char *droce_shm_qp_state_name(uint8_t state);

#endif /* DROCE_SHM_QP_ATTR_H */
