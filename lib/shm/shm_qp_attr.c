/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * The rules of ibv_modify_qp: one table of the QP state transitions a modify may make, with
 * the attributes each one requires and allows per QP type, then value checks of whatever
 * attributes the mask carries. The table is the IB spec's (Vol 1, 10.3.1 QP state diagram;
 * 11.2.4.2 Modify Queue Pair and its table of required and optional attributes per state
 * transition and service type). test_shm_ctl.c checks every cell against its own encoding.
 */

#include <errno.h>

#include "droce_shm_qp_attr.h"

/* QP types droce implements, as indices of the table's per-type columns. */
enum qpt_index {
	QPT_IDX_RC,
	QPT_IDX_UC,
	QPT_IDX_UD,
	QPT_IDX_COUNT,
};

#define M(bit)		DROCE_SHM_QP_##bit
#define TYPE(t)		(1u << QPT_IDX_##t)
#define ALL_TYPES	(TYPE(RC) | TYPE(UC) | TYPE(UD))

/* Every mask bit rdma-core defines (bits 21..24 are reserved in the kernel ABI). */
#define KNOWN_MASK (M(STATE) | M(CUR_STATE) | M(EN_SQD_ASYNC_NOTIFY) | M(ACCESS_FLAGS) | \
		    M(PKEY_INDEX) | M(PORT) | M(QKEY) | M(AV) | M(PATH_MTU) | M(TIMEOUT) | \
		    M(RETRY_CNT) | M(RNR_RETRY) | M(RQ_PSN) | M(MAX_QP_RD_ATOMIC) | M(ALT_PATH) | \
		    M(MIN_RNR_TIMER) | M(SQ_PSN) | M(MAX_DEST_RD_ATOMIC) | M(PATH_MIG_STATE) | \
		    M(CAP) | M(DEST_QPN) | M(RATE_LIMIT))

/*
 * Bits droce refuses wherever they appear. CAP: droce cannot resize a QP's rings.
 * RATE_LIMIT: a verbs extension (raw packet QPs), no spec attribute. ALT_PATH,
 * PATH_MIG_STATE: automatic path migration needs an alternate path, which struct
 * droce_shm_qp_attr does not carry (Linux refuses alternate paths on RoCE ports too).
 */
#define UNSUPPORTED_MASK (M(CAP) | M(RATE_LIMIT) | M(ALT_PATH) | M(PATH_MIG_STATE))

/* Allowed access flags (the spec's remote access enables and local write, 11.2.4.2). */
#define KNOWN_ACCESS (DROCE_SHM_ACCESS_LOCAL_WRITE | DROCE_SHM_ACCESS_REMOTE_WRITE | \
		      DROCE_SHM_ACCESS_REMOTE_READ | DROCE_SHM_ACCESS_REMOTE_ATOMIC | \
		      DROCE_SHM_ACCESS_FLUSH_GLOBAL | DROCE_SHM_ACCESS_FLUSH_PERSISTENT)

/* One transition: the QP types that may make it and their required and optional bits. */
struct qp_transition {
	uint8_t types;
	uint32_t req[QPT_IDX_COUNT];
	uint32_t opt[QPT_IDX_COUNT];
};

#define RESET	DROCE_SHM_QPS_RESET
#define INIT	DROCE_SHM_QPS_INIT
#define RTR	DROCE_SHM_QPS_RTR
#define RTS	DROCE_SHM_QPS_RTS
#define SQD	DROCE_SHM_QPS_SQD
#define SQE	DROCE_SHM_QPS_SQE
#define ERR	DROCE_SHM_QPS_ERR
#define NB_STATES	(DROCE_SHM_QPS_ERR + 1)

/* Any state may be moved to Reset or Error with no attribute (10.3.1, 11.2.4.2). */
#define TO_RESET_OR_ERR \
	[RESET] = { .types = ALL_TYPES }, \
	[ERR] = { .types = ALL_TYPES }

/* Optional on every move into RTS from RTR, RTS, SQD: what a connected QP may change live. */
#define OPT_INTO_RTS_RC	(M(CUR_STATE) | M(ALT_PATH) | M(ACCESS_FLAGS) | M(MIN_RNR_TIMER) | \
			 M(PATH_MIG_STATE))
#define OPT_INTO_RTS_UC	(M(CUR_STATE) | M(ALT_PATH) | M(ACCESS_FLAGS) | M(PATH_MIG_STATE))
#define OPT_INTO_RTS_UD	(M(CUR_STATE) | M(QKEY))

static const struct qp_transition qp_transitions[NB_STATES][NB_STATES] = {
	[RESET] = {
		TO_RESET_OR_ERR,
		[INIT] = {
			.types = ALL_TYPES,
			.req = {
				[QPT_IDX_RC] = M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS),
				[QPT_IDX_UC] = M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS),
				[QPT_IDX_UD] = M(PKEY_INDEX) | M(PORT) | M(QKEY),
			},
		},
	},
	[INIT] = {
		TO_RESET_OR_ERR,
		[INIT] = {
			.types = ALL_TYPES,
			.opt = {
				[QPT_IDX_RC] = M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS),
				[QPT_IDX_UC] = M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS),
				[QPT_IDX_UD] = M(PKEY_INDEX) | M(PORT) | M(QKEY),
			},
		},
		[RTR] = {
			.types = ALL_TYPES,
			.req = {
				[QPT_IDX_RC] = M(AV) | M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN) |
					       M(MAX_DEST_RD_ATOMIC) | M(MIN_RNR_TIMER),
				[QPT_IDX_UC] = M(AV) | M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN),
			},
			.opt = {
				[QPT_IDX_RC] = M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX),
				[QPT_IDX_UC] = M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX),
				[QPT_IDX_UD] = M(PKEY_INDEX) | M(QKEY),
			},
		},
	},
	[RTR] = {
		TO_RESET_OR_ERR,
		[RTS] = {
			.types = ALL_TYPES,
			.req = {
				[QPT_IDX_RC] = M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) | M(SQ_PSN) |
					       M(MAX_QP_RD_ATOMIC),
				[QPT_IDX_UC] = M(SQ_PSN),
				[QPT_IDX_UD] = M(SQ_PSN),
			},
			.opt = {
				[QPT_IDX_RC] = OPT_INTO_RTS_RC,
				[QPT_IDX_UC] = OPT_INTO_RTS_UC,
				[QPT_IDX_UD] = OPT_INTO_RTS_UD,
			},
		},
	},
	[RTS] = {
		TO_RESET_OR_ERR,
		[RTS] = {
			.types = ALL_TYPES,
			.opt = {
				[QPT_IDX_RC] = OPT_INTO_RTS_RC,
				[QPT_IDX_UC] = OPT_INTO_RTS_UC,
				[QPT_IDX_UD] = OPT_INTO_RTS_UD,
			},
		},
		[SQD] = {
			.types = ALL_TYPES,
			.opt = {
				[QPT_IDX_RC] = M(EN_SQD_ASYNC_NOTIFY),
				[QPT_IDX_UC] = M(EN_SQD_ASYNC_NOTIFY),
				[QPT_IDX_UD] = M(EN_SQD_ASYNC_NOTIFY),
			},
		},
	},
	[SQD] = {
		TO_RESET_OR_ERR,
		[RTS] = {
			.types = ALL_TYPES,
			.opt = {
				[QPT_IDX_RC] = OPT_INTO_RTS_RC,
				[QPT_IDX_UC] = OPT_INTO_RTS_UC,
				[QPT_IDX_UD] = OPT_INTO_RTS_UD,
			},
		},
		/* Drained: the path and the transport timers may change too. */
		[SQD] = {
			.types = ALL_TYPES,
			.opt = {
				[QPT_IDX_RC] = M(PORT) | M(AV) | M(TIMEOUT) | M(RETRY_CNT) |
					       M(RNR_RETRY) | M(MAX_QP_RD_ATOMIC) |
					       M(MAX_DEST_RD_ATOMIC) | M(ALT_PATH) |
					       M(ACCESS_FLAGS) | M(PKEY_INDEX) | M(MIN_RNR_TIMER) |
					       M(PATH_MIG_STATE),
				[QPT_IDX_UC] = M(AV) | M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX) |
					       M(PATH_MIG_STATE),
				[QPT_IDX_UD] = M(PKEY_INDEX) | M(QKEY),
			},
		},
	},
	/*
	 * Only UC and UD send queues stop in SQE (10.3.1): an RC send queue error takes the
	 * whole QP to Error.
	 */
	[SQE] = {
		TO_RESET_OR_ERR,
		[RTS] = {
			.types = TYPE(UC) | TYPE(UD),
			.opt = {
				[QPT_IDX_UC] = M(CUR_STATE) | M(ACCESS_FLAGS),
				[QPT_IDX_UD] = M(CUR_STATE) | M(QKEY),
			},
		},
	},
	[ERR] = {
		TO_RESET_OR_ERR,
	},
};

static const char *const qp_state_names[NB_STATES] = {
	[RESET] = "RESET",
	[INIT] = "INIT",
	[RTR] = "RTR",
	[RTS] = "RTS",
	[SQD] = "SQD",
	[SQE] = "SQE",
	[ERR] = "ERR",
};

const char *
droce_shm_qp_state_name(uint8_t state)
{
	return state < NB_STATES ? qp_state_names[state] : "UNKNOWN";
}

static int
qpt_index(uint8_t qp_type)
{
	switch (qp_type) {
	case DROCE_SHM_QPT_RC:
	case DROCE_SHM_QPT_XRC_SEND:
	case DROCE_SHM_QPT_XRC_RECV:
		return QPT_IDX_RC;
	case DROCE_SHM_QPT_UC:
		return QPT_IDX_UC;
	case DROCE_SHM_QPT_UD:
		return QPT_IDX_UD;
	default:
		return -1;
	}
}

/*
 * XRC's two halves take RC's column, less what a half without a receive side (the
 * initiator's responder resources and RNR timer) or a send side (the target's retries
 * and READ depth) does not need: those are optional there, as in the kernel's table.
 */
static void
xrc_relax(uint8_t qp_type, uint8_t cur, uint8_t next, uint32_t *req, uint32_t *opt)
{
	uint32_t drop = 0;

	if (qp_type == DROCE_SHM_QPT_XRC_SEND && cur == INIT && next == RTR)
		drop = M(MAX_DEST_RD_ATOMIC) | M(MIN_RNR_TIMER);
	else if (qp_type == DROCE_SHM_QPT_XRC_RECV && cur == RTR && next == RTS)
		drop = M(RETRY_CNT) | M(RNR_RETRY) | M(MAX_QP_RD_ATOMIC);
	*opt |= *req & drop;
	*req &= ~drop;
}

static bool
port_ok(uint8_t port, const struct droce_shm_qp_limits *lim)
{
	return port >= 1 && port <= lim->phys_port_cnt;
}

/* The values of the attributes present in mask against the wire's widths and lim. */
static int
check_values(uint32_t mask, const struct droce_shm_qp_attr *attr,
	     const struct droce_shm_qp_limits *lim)
{
	if ((mask & M(PATH_MTU)) &&
	    (attr->path_mtu < DROCE_SHM_MTU_256 || attr->path_mtu > DROCE_SHM_MTU_4096))
		return -EINVAL;
	if ((mask & M(TIMEOUT)) && attr->timeout > DROCE_SHM_TIMER_CODE_MAX)
		return -EINVAL;
	if ((mask & M(MIN_RNR_TIMER)) && attr->min_rnr_timer > DROCE_SHM_TIMER_CODE_MAX)
		return -EINVAL;
	if ((mask & M(RETRY_CNT)) && attr->retry_cnt > DROCE_SHM_RETRY_MAX)
		return -EINVAL;
	if ((mask & M(RNR_RETRY)) && attr->rnr_retry > DROCE_SHM_RETRY_MAX)
		return -EINVAL;
	if ((mask & M(RQ_PSN)) && attr->rq_psn > DROCE_SHM_PSN_MAX)
		return -EINVAL;
	if ((mask & M(SQ_PSN)) && attr->sq_psn > DROCE_SHM_PSN_MAX)
		return -EINVAL;
	if ((mask & M(DEST_QPN)) && attr->dest_qp_num > DROCE_SHM_QPN_MAX)
		return -EINVAL;
	if ((mask & M(PORT)) && !port_ok(attr->port_num, lim))
		return -EINVAL;
	if ((mask & M(PKEY_INDEX)) && attr->pkey_index >= lim->pkey_tbl_len)
		return -EINVAL;
	if ((mask & M(MAX_QP_RD_ATOMIC)) && attr->max_rd_atomic > lim->max_rd_atomic)
		return -EINVAL;
	if ((mask & M(MAX_DEST_RD_ATOMIC)) && attr->max_dest_rd_atomic > lim->max_dest_rd_atomic)
		return -EINVAL;
	if ((mask & M(ACCESS_FLAGS)) && (attr->qp_access_flags & ~(uint32_t)KNOWN_ACCESS) != 0)
		return -EINVAL;
	if (mask & M(AV)) {
		/* RoCE addresses every packet by its GRH (RoCE annexes A16, A17): no GRH, no path. */
		if (attr->ah.is_global != 1)
			return -EINVAL;
		if (attr->ah.sgid_index >= lim->gid_tbl_len)
			return -EINVAL;
		if (attr->ah.flow_label > DROCE_SHM_FLOW_LABEL_MAX)
			return -EINVAL;
		/* 0: the QP's own port. */
		if (attr->ah.port_num != 0 && !port_ok(attr->ah.port_num, lim))
			return -EINVAL;
	}
	return 0;
}

int
droce_shm_qp_attr_check(uint8_t qp_type, uint8_t cur, const struct droce_shm_qp_attr *attr,
			const struct droce_shm_qp_limits *lim)
{
	const struct qp_transition *t;
	uint32_t mask, req, opt;
	uint8_t next;
	int idx;

	if (attr == NULL || lim == NULL)
		return -EINVAL;
	idx = qpt_index(qp_type);
	if (idx < 0 || cur >= NB_STATES)
		return -EINVAL;
	mask = attr->mask;
	if ((mask & ~(uint32_t)KNOWN_MASK) != 0 || (mask & UNSUPPORTED_MASK) != 0)
		return -EINVAL;
	next = droce_shm_qp_attr_next(cur, attr);
	if (next >= NB_STATES)
		return -EINVAL;

	t = &qp_transitions[cur][next];
	if ((t->types & (1u << idx)) == 0)
		return -EINVAL;
	req = t->req[idx];
	opt = t->opt[idx];
	xrc_relax(qp_type, cur, next, &req, &opt);
	if ((mask & req) != req || (mask & ~(req | opt | M(STATE))) != 0)
		return -EINVAL;
	/* The consumer's idea of the current state must be right (11.2.4.2). */
	if ((mask & M(CUR_STATE)) && attr->cur_qp_state != cur)
		return -EINVAL;
	return check_values(mask, attr, lim);
}
