/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * The control half of the shm contract: droce_shm_qp_attr_check against the IB spec's
 * transition table written out again here as text (one line per transition, attributes by
 * name, parsed at run time), so a typo in either encoding makes a cell disagree; the value
 * checks at every boundary; and the region arena against exact offsets and a reference
 * bitmap of cache lines.
 */

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "droce_shm_arena.h"
#include "droce_shm_qp_attr.h"
#include "droce_test.h"

/* ---- The transition table, second encoding ---- */

static const char *const state_names[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };
#define NB_STATES	7

/* ibv_qp_attr_mask bit positions, from rdma-core's verbs.h. */
static const struct {
	const char *name;
	unsigned int pos;
} mask_names[] = {
	{ "STATE", 0 }, { "CUR_STATE", 1 }, { "EN_SQD_ASYNC_NOTIFY", 2 },
	{ "ACCESS_FLAGS", 3 }, { "PKEY_INDEX", 4 }, { "PORT", 5 }, { "QKEY", 6 }, { "AV", 7 },
	{ "PATH_MTU", 8 }, { "TIMEOUT", 9 }, { "RETRY_CNT", 10 }, { "RNR_RETRY", 11 },
	{ "RQ_PSN", 12 }, { "MAX_QP_RD_ATOMIC", 13 }, { "ALT_PATH", 14 },
	{ "MIN_RNR_TIMER", 15 }, { "SQ_PSN", 16 }, { "MAX_DEST_RD_ATOMIC", 17 },
	{ "PATH_MIG_STATE", 18 }, { "CAP", 19 }, { "DEST_QPN", 20 }, { "RATE_LIMIT", 25 },
};

/*
 * IB spec Vol 1 11.2.4.2, the table of attributes per transition. types: the QP types a
 * line applies to; from "*": every state.
 */
static const struct {
	const char *types, *from, *to, *req, *opt;
} spec_rows[] = {
	{ "RC UC UD", "*", "RESET", "", "" },
	{ "RC UC UD", "*", "ERR", "", "" },
	{ "RC UC", "RESET", "INIT", "PKEY_INDEX PORT ACCESS_FLAGS", "" },
	{ "UD", "RESET", "INIT", "QKEY PORT PKEY_INDEX", "" },
	{ "RC UC", "INIT", "INIT", "", "ACCESS_FLAGS PORT PKEY_INDEX" },
	{ "UD", "INIT", "INIT", "", "QKEY PKEY_INDEX PORT" },
	{ "RC", "INIT", "RTR", "RQ_PSN DEST_QPN PATH_MTU AV MIN_RNR_TIMER MAX_DEST_RD_ATOMIC",
	  "PKEY_INDEX ACCESS_FLAGS ALT_PATH" },
	{ "UC", "INIT", "RTR", "RQ_PSN DEST_QPN PATH_MTU AV", "PKEY_INDEX ACCESS_FLAGS ALT_PATH" },
	{ "UD", "INIT", "RTR", "", "QKEY PKEY_INDEX" },
	{ "RC", "RTR", "RTS", "SQ_PSN TIMEOUT RETRY_CNT RNR_RETRY MAX_QP_RD_ATOMIC",
	  "CUR_STATE ACCESS_FLAGS MIN_RNR_TIMER ALT_PATH PATH_MIG_STATE" },
	{ "UC", "RTR", "RTS", "SQ_PSN", "CUR_STATE ACCESS_FLAGS ALT_PATH PATH_MIG_STATE" },
	{ "UD", "RTR", "RTS", "SQ_PSN", "CUR_STATE QKEY" },
	{ "RC", "RTS", "RTS", "", "CUR_STATE ACCESS_FLAGS MIN_RNR_TIMER ALT_PATH PATH_MIG_STATE" },
	{ "UC", "RTS", "RTS", "", "CUR_STATE ACCESS_FLAGS ALT_PATH PATH_MIG_STATE" },
	{ "UD", "RTS", "RTS", "", "CUR_STATE QKEY" },
	{ "RC UC UD", "RTS", "SQD", "", "EN_SQD_ASYNC_NOTIFY" },
	{ "RC", "SQD", "RTS", "", "CUR_STATE ACCESS_FLAGS MIN_RNR_TIMER ALT_PATH PATH_MIG_STATE" },
	{ "UC", "SQD", "RTS", "", "CUR_STATE ACCESS_FLAGS ALT_PATH PATH_MIG_STATE" },
	{ "UD", "SQD", "RTS", "", "CUR_STATE QKEY" },
	{ "RC", "SQD", "SQD", "", "PORT AV PKEY_INDEX ACCESS_FLAGS TIMEOUT RETRY_CNT RNR_RETRY "
	  "MIN_RNR_TIMER MAX_QP_RD_ATOMIC MAX_DEST_RD_ATOMIC ALT_PATH PATH_MIG_STATE" },
	{ "UC", "SQD", "SQD", "", "AV PKEY_INDEX ACCESS_FLAGS ALT_PATH PATH_MIG_STATE" },
	{ "UD", "SQD", "SQD", "", "QKEY PKEY_INDEX" },
	{ "UC", "SQE", "RTS", "", "CUR_STATE ACCESS_FLAGS" },
	{ "UD", "SQE", "RTS", "", "CUR_STATE QKEY" },
};
#define NB_SPEC_ROWS	(sizeof(spec_rows) / sizeof(spec_rows[0]))

/* What droce refuses although the spec allows it (see droce_shm_qp_attr_check). */
static const char droce_refuses[] = "ALT_PATH PATH_MIG_STATE CAP RATE_LIMIT";

static const struct {
	const char *name;
	uint8_t value;
} qp_types[] = { { "RC", 2 }, { "UC", 3 }, { "UD", 4 } };

/* Is word a space-separated token of list? */
static bool
has_token(const char *list, const char *word)
{
	size_t n = strlen(word);
	const char *p = list;

	while ((p = strstr(p, word)) != NULL) {
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
			return true;
		p += n;
	}
	return false;
}

static uint32_t
parse_mask(const char *list)
{
	char word[32];
	uint32_t mask = 0;
	size_t i, n;

	while (*list != '\0') {
		while (*list == ' ')
			list++;
		n = strcspn(list, " ");
		if (n == 0)
			break;
		if (n >= sizeof(word))
			droce_test_fail(__FILE__, __LINE__, "mask name too long in '%s'", list);
		memcpy(word, list, n);
		word[n] = '\0';
		list += n;
		for (i = 0; i < sizeof(mask_names) / sizeof(mask_names[0]); i++)
			if (strcmp(mask_names[i].name, word) == 0)
				break;
		if (i == sizeof(mask_names) / sizeof(mask_names[0]))
			droce_test_fail(__FILE__, __LINE__, "unknown mask name '%s'", word);
		mask |= 1u << mask_names[i].pos;
	}
	return mask;
}

/* The row for (type, cur, next), or -1: not a transition of the spec. */
static int
spec_row(const char *type, unsigned int cur, unsigned int next)
{
	int found = -1;
	size_t i;

	for (i = 0; i < NB_SPEC_ROWS; i++) {
		if (!has_token(spec_rows[i].types, type) ||
		    strcmp(spec_rows[i].to, state_names[next]) != 0)
			continue;
		if (strcmp(spec_rows[i].from, "*") != 0 &&
		    strcmp(spec_rows[i].from, state_names[cur]) != 0)
			continue;
		if (found >= 0)
			droce_test_fail(__FILE__, __LINE__, "two spec rows for %s %s->%s", type,
					state_names[cur], state_names[next]);
		found = (int)i;
	}
	return found;
}

static const struct droce_shm_qp_limits test_lim = {
	.max_rd_atomic = 128,
	.max_dest_rd_atomic = 16,
	.phys_port_cnt = 2,
	.pkey_tbl_len = 4,
	.gid_tbl_len = 16,
};

/* Every field valid, so only the mask decides. */
static void
good_attr(struct droce_shm_qp_attr *a, uint8_t cur, uint8_t next, uint32_t mask)
{
	memset(a, 0, sizeof(*a));
	a->mask = mask;
	a->qp_state = next;
	a->cur_qp_state = cur;
	a->qkey = 0x11111111;
	a->rq_psn = 0x123456;
	a->sq_psn = 0xABCDEF;
	a->dest_qp_num = 0x42;
	a->qp_access_flags = DROCE_SHM_ACCESS_LOCAL_WRITE | DROCE_SHM_ACCESS_REMOTE_WRITE |
			     DROCE_SHM_ACCESS_REMOTE_READ | DROCE_SHM_ACCESS_REMOTE_ATOMIC;
	a->pkey_index = 1;
	a->path_mtu = DROCE_SHM_MTU_1024;
	a->max_rd_atomic = 4;
	a->max_dest_rd_atomic = 4;
	a->min_rnr_timer = 12;
	a->port_num = 1;
	a->timeout = 14;
	a->retry_cnt = 7;
	a->rnr_retry = 7;
	a->ah.is_global = 1;
	a->ah.sgid_index = 1;
	a->ah.hop_limit = 64;
	a->ah.port_num = 1;
}

static int
check_mask(uint8_t qpt, uint8_t cur, uint8_t next, uint32_t mask)
{
	struct droce_shm_qp_attr a;

	good_attr(&a, cur, next, mask);
	return droce_shm_qp_attr_check(qpt, cur, &a, &test_lim);
}

static int
expect(int row, uint32_t mask)
{
	uint32_t state = parse_mask("STATE");
	uint32_t req, opt;

	if (row < 0)
		return -EINVAL;
	req = parse_mask(spec_rows[row].req);
	opt = parse_mask(spec_rows[row].opt);
	if ((mask & req) != req || (mask & ~(req | opt | state)) != 0 ||
	    (mask & parse_mask(droce_refuses)) != 0)
		return -EINVAL;
	return 0;
}

static void
check_one(size_t ti, unsigned int cur, unsigned int next, int row, uint32_t mask,
	  const char *what)
{
	droce_test_ctx("%s %s->%s mask 0x%08x (%s)", qp_types[ti].name, state_names[cur],
		       state_names[next], mask, what);
	CHECK_EQ_I64(check_mask(qp_types[ti].value, cur, next, mask),
		     expect(row, mask));
}

/* The masks tried on an allowed transition, with or without the STATE bit. */
static void
check_allowed(size_t ti, unsigned int cur, unsigned int next, int row, uint32_t base)
{
	uint32_t req = parse_mask(spec_rows[row].req) | base;
	uint32_t opt = parse_mask(spec_rows[row].opt);
	unsigned int b;

	check_one(ti, cur, next, row, req, "required only");
	CHECK_EQ_I64(check_mask(qp_types[ti].value, cur, next, req), 0);
	for (b = 0; b < 32; b++) {
		uint32_t bit = 1u << b;

		if (opt & bit)
			check_one(ti, cur, next, row, req | bit, "required + optional");
		else if ((req & bit) && bit != base)
			check_one(ti, cur, next, row, req & ~bit, "required bit missing");
		else if (!(req & bit))
			check_one(ti, cur, next, row, req | bit, "bit not allowed");
	}
	/* Everything the spec allows at once: refused only for droce's own exclusions. */
	check_one(ti, cur, next, row, req | opt, "all optional");
	check_one(ti, cur, next, row, req | (opt & ~parse_mask(droce_refuses)),
		  "all optional droce supports");
}

DROCE_TEST(qp_mask_bits_are_rdma_core)
{
	CHECK_EQ_U64(parse_mask("STATE"), DROCE_SHM_QP_STATE);
	CHECK_EQ_U64(parse_mask("CUR_STATE"), DROCE_SHM_QP_CUR_STATE);
	CHECK_EQ_U64(parse_mask("EN_SQD_ASYNC_NOTIFY"), DROCE_SHM_QP_EN_SQD_ASYNC_NOTIFY);
	CHECK_EQ_U64(parse_mask("ACCESS_FLAGS"), DROCE_SHM_QP_ACCESS_FLAGS);
	CHECK_EQ_U64(parse_mask("PKEY_INDEX"), DROCE_SHM_QP_PKEY_INDEX);
	CHECK_EQ_U64(parse_mask("PORT"), DROCE_SHM_QP_PORT);
	CHECK_EQ_U64(parse_mask("QKEY"), DROCE_SHM_QP_QKEY);
	CHECK_EQ_U64(parse_mask("AV"), DROCE_SHM_QP_AV);
	CHECK_EQ_U64(parse_mask("PATH_MTU"), DROCE_SHM_QP_PATH_MTU);
	CHECK_EQ_U64(parse_mask("TIMEOUT"), DROCE_SHM_QP_TIMEOUT);
	CHECK_EQ_U64(parse_mask("RETRY_CNT"), DROCE_SHM_QP_RETRY_CNT);
	CHECK_EQ_U64(parse_mask("RNR_RETRY"), DROCE_SHM_QP_RNR_RETRY);
	CHECK_EQ_U64(parse_mask("RQ_PSN"), DROCE_SHM_QP_RQ_PSN);
	CHECK_EQ_U64(parse_mask("MAX_QP_RD_ATOMIC"), DROCE_SHM_QP_MAX_QP_RD_ATOMIC);
	CHECK_EQ_U64(parse_mask("ALT_PATH"), DROCE_SHM_QP_ALT_PATH);
	CHECK_EQ_U64(parse_mask("MIN_RNR_TIMER"), DROCE_SHM_QP_MIN_RNR_TIMER);
	CHECK_EQ_U64(parse_mask("SQ_PSN"), DROCE_SHM_QP_SQ_PSN);
	CHECK_EQ_U64(parse_mask("MAX_DEST_RD_ATOMIC"), DROCE_SHM_QP_MAX_DEST_RD_ATOMIC);
	CHECK_EQ_U64(parse_mask("PATH_MIG_STATE"), DROCE_SHM_QP_PATH_MIG_STATE);
	CHECK_EQ_U64(parse_mask("CAP"), DROCE_SHM_QP_CAP);
	CHECK_EQ_U64(parse_mask("DEST_QPN"), DROCE_SHM_QP_DEST_QPN);
	CHECK_EQ_U64(parse_mask("RATE_LIMIT"), DROCE_SHM_QP_RATE_LIMIT);
	CHECK_EQ_U64(parse_mask(" AV  QKEY "), DROCE_SHM_QP_AV | DROCE_SHM_QP_QKEY);
}

/* Every (type, cur, next) against the spec rows. */
DROCE_TEST(qp_transition_table)
{
	uint32_t state = parse_mask("STATE");
	unsigned int cur, next, b;
	size_t ti, r;
	int row, allowed = 0;

	for (ti = 0; ti < sizeof(qp_types) / sizeof(qp_types[0]); ti++) {
		for (cur = 0; cur < NB_STATES; cur++) {
			for (next = 0; next < NB_STATES; next++) {
				row = spec_row(qp_types[ti].name, cur, next);
				if (row >= 0) {
					allowed++;
					check_allowed(ti, cur, next, row, state);
					if (cur == next)
						check_allowed(ti, cur, next, row, 0);
					continue;
				}
				/*
				 * Not a transition: refused whatever the mask, including the
				 * masks of every transition there is.
				 */
				check_one(ti, cur, next, row, state, "not a transition");
				if (cur == next)
					check_one(ti, cur, next, row, 0, "not a transition");
				for (b = 0; b < 32; b++)
					check_one(ti, cur, next, row, state | 1u << b,
						  "not a transition");
				for (r = 0; r < NB_SPEC_ROWS; r++) {
					uint32_t req = parse_mask(spec_rows[r].req) | state;

					check_one(ti, cur, next, row, req, "not a transition");
					check_one(ti, cur, next, row,
						  req | parse_mask(spec_rows[r].opt),
						  "not a transition");
				}
			}
		}
	}
	/* 14 to RESET or ERR per type, 9 more for UD and UC, 8 for RC (no SQE). */
	droce_test_ctx("allowed transitions");
	CHECK_EQ_U64(allowed, 3 * 14 + 9 + 9 + 8);
}

/* A few cells spelled out, in case both encodings share a misreading. */
DROCE_TEST(qp_transition_spot_checks)
{
	struct droce_shm_qp_attr a;
	const uint8_t rc = DROCE_SHM_QPT_RC, uc = DROCE_SHM_QPT_UC, ud = DROCE_SHM_QPT_UD;

	CHECK_EQ_I64(check_mask(rc, DROCE_SHM_QPS_RESET, DROCE_SHM_QPS_INIT,
				DROCE_SHM_QP_STATE | DROCE_SHM_QP_PKEY_INDEX | DROCE_SHM_QP_PORT |
				DROCE_SHM_QP_ACCESS_FLAGS), 0);
	CHECK_EQ_I64(check_mask(ud, DROCE_SHM_QPS_RESET, DROCE_SHM_QPS_INIT,
				DROCE_SHM_QP_STATE | DROCE_SHM_QP_PKEY_INDEX | DROCE_SHM_QP_PORT |
				DROCE_SHM_QP_ACCESS_FLAGS), -EINVAL);
	CHECK_EQ_I64(check_mask(rc, DROCE_SHM_QPS_RESET, DROCE_SHM_QPS_RTR,
				DROCE_SHM_QP_STATE), -EINVAL);
	CHECK_EQ_I64(check_mask(uc, DROCE_SHM_QPS_INIT, DROCE_SHM_QPS_RTS,
				DROCE_SHM_QP_STATE | DROCE_SHM_QP_SQ_PSN), -EINVAL);
	CHECK_EQ_I64(check_mask(ud, DROCE_SHM_QPS_INIT, DROCE_SHM_QPS_RTR, DROCE_SHM_QP_STATE),
		     0);
	CHECK_EQ_I64(check_mask(ud, DROCE_SHM_QPS_SQE, DROCE_SHM_QPS_RTS, DROCE_SHM_QP_STATE),
		     0);
	CHECK_EQ_I64(check_mask(rc, DROCE_SHM_QPS_SQE, DROCE_SHM_QPS_RTS, DROCE_SHM_QP_STATE),
		     -EINVAL);
	CHECK_EQ_I64(check_mask(rc, DROCE_SHM_QPS_RESET, DROCE_SHM_QPS_ERR, DROCE_SHM_QP_STATE),
		     0);
	CHECK_EQ_I64(check_mask(rc, DROCE_SHM_QPS_ERR, DROCE_SHM_QPS_RESET, DROCE_SHM_QP_STATE),
		     0);
	CHECK_EQ_I64(check_mask(rc, DROCE_SHM_QPS_RTR, DROCE_SHM_QPS_RTR, 0), -EINVAL);
	CHECK_EQ_I64(check_mask(rc, DROCE_SHM_QPS_RTS, DROCE_SHM_QPS_RTS,
				DROCE_SHM_QP_MIN_RNR_TIMER), 0);
	CHECK_EQ_I64(check_mask(uc, DROCE_SHM_QPS_RTS, DROCE_SHM_QPS_RTS,
				DROCE_SHM_QP_MIN_RNR_TIMER), -EINVAL);
	CHECK_EQ_I64(check_mask(rc, DROCE_SHM_QPS_RTS, DROCE_SHM_QPS_RTS,
				DROCE_SHM_QP_RATE_LIMIT), -EINVAL);
	CHECK_EQ_I64(check_mask(rc, DROCE_SHM_QPS_SQD, DROCE_SHM_QPS_SQD, DROCE_SHM_QP_CAP),
		     -EINVAL);
	/* Without STATE the QP stays where it is, whatever qp_state says. */
	good_attr(&a, DROCE_SHM_QPS_RTS, 200, DROCE_SHM_QP_MIN_RNR_TIMER);
	CHECK_EQ_I64(droce_shm_qp_attr_check(rc, DROCE_SHM_QPS_RTS, &a, &test_lim), 0);
	CHECK_EQ_U64(droce_shm_qp_attr_next(DROCE_SHM_QPS_RTS, &a), DROCE_SHM_QPS_RTS);
	a.mask |= DROCE_SHM_QP_STATE;
	CHECK_EQ_U64(droce_shm_qp_attr_next(DROCE_SHM_QPS_RTS, &a), 200);
}

DROCE_TEST(qp_bad_states_types_args)
{
	struct droce_shm_qp_attr a;
	unsigned int t, s;

	for (s = NB_STATES; s <= 0xFF; s++) {
		droce_test_ctx("state %u", s);
		good_attr(&a, DROCE_SHM_QPS_RTS, (uint8_t)s, DROCE_SHM_QP_STATE);
		CHECK_EQ_I64(droce_shm_qp_attr_check(DROCE_SHM_QPT_RC, DROCE_SHM_QPS_RTS, &a,
						     &test_lim), -EINVAL);
		good_attr(&a, (uint8_t)s, DROCE_SHM_QPS_ERR, DROCE_SHM_QP_STATE);
		CHECK_EQ_I64(droce_shm_qp_attr_check(DROCE_SHM_QPT_RC, (uint8_t)s, &a,
						     &test_lim), -EINVAL);
		/* cur out of range is refused even when the mask keeps the state. */
		good_attr(&a, (uint8_t)s, (uint8_t)s, 0);
		CHECK_EQ_I64(droce_shm_qp_attr_check(DROCE_SHM_QPT_RC, (uint8_t)s, &a,
						     &test_lim), -EINVAL);
	}
	for (t = 0; t <= 0xFF; t++) {
		droce_test_ctx("qp type %u", t);
		CHECK_EQ_I64(check_mask((uint8_t)t, DROCE_SHM_QPS_RESET, DROCE_SHM_QPS_ERR,
					DROCE_SHM_QP_STATE),
			     (t >= DROCE_SHM_QPT_RC && t <= DROCE_SHM_QPT_UD) ||
			     t == DROCE_SHM_QPT_XRC_SEND || t == DROCE_SHM_QPT_XRC_RECV ? 0 : -EINVAL);
	}
	droce_test_ctx("NULL");
	good_attr(&a, DROCE_SHM_QPS_RESET, DROCE_SHM_QPS_ERR, DROCE_SHM_QP_STATE);
	CHECK_EQ_I64(droce_shm_qp_attr_check(DROCE_SHM_QPT_RC, DROCE_SHM_QPS_RESET, NULL,
					     &test_lim), -EINVAL);
	CHECK_EQ_I64(droce_shm_qp_attr_check(DROCE_SHM_QPT_RC, DROCE_SHM_QPS_RESET, &a, NULL),
		     -EINVAL);
}

/* CUR_STATE must name the state the QP is in. */
DROCE_TEST(qp_cur_state)
{
	static const uint8_t from[] = {
		DROCE_SHM_QPS_RTR, DROCE_SHM_QPS_RTS, DROCE_SHM_QPS_SQD, DROCE_SHM_QPS_SQE
	};
	struct droce_shm_qp_attr a;
	unsigned int i, v;

	for (i = 0; i < sizeof(from); i++) {
		for (v = 0; v <= 0xFF; v++) {
			uint8_t qpt = DROCE_SHM_QPT_UD;	/* the one type with every from state */

			droce_test_ctx("%s->RTS cur_qp_state %u", state_names[from[i]], v);
			good_attr(&a, from[i], DROCE_SHM_QPS_RTS,
				  DROCE_SHM_QP_STATE | DROCE_SHM_QP_CUR_STATE |
				  (from[i] == DROCE_SHM_QPS_RTR ? DROCE_SHM_QP_SQ_PSN : 0));
			a.cur_qp_state = (uint8_t)v;
			CHECK_EQ_I64(droce_shm_qp_attr_check(qpt, from[i], &a, &test_lim),
				     v == from[i] ? 0 : -EINVAL);
		}
	}
	/* Without the bit, cur_qp_state is not looked at. */
	good_attr(&a, DROCE_SHM_QPS_RTS, DROCE_SHM_QPS_RTS, 0);
	a.cur_qp_state = DROCE_SHM_QPS_INIT;
	CHECK_EQ_I64(droce_shm_qp_attr_check(DROCE_SHM_QPT_RC, DROCE_SHM_QPS_RTS, &a, &test_lim),
		     0);
}

/* ---- Value checks ---- */

/*
 * One attribute: where it lives, a transition that allows it (mask: the bits that
 * transition needs anyway plus this one) and its valid range [lo, hi]; lim_hi names a
 * limit that replaces hi.
 */
enum lim_field { LIM_NONE, LIM_PORT, LIM_PORT_AV, LIM_PKEY, LIM_GID, LIM_RD_ATOMIC,
		 LIM_DEST_RD_ATOMIC };

static const struct value_case {
	const char *name;
	size_t off, size;
	uint8_t qpt, cur, next;
	uint32_t mask;
	uint64_t lo, hi;
	enum lim_field lim_hi;
} value_cases[] = {
#define FIELD(f)	offsetof(struct droce_shm_qp_attr, f), \
			sizeof(((struct droce_shm_qp_attr *)0)->f)
#define RC_SQD		DROCE_SHM_QPT_RC, DROCE_SHM_QPS_SQD, DROCE_SHM_QPS_SQD
#define UC_RTR		DROCE_SHM_QPT_UC, DROCE_SHM_QPS_INIT, DROCE_SHM_QPS_RTR
#define UC_RTR_MASK	(DROCE_SHM_QP_STATE | DROCE_SHM_QP_AV | DROCE_SHM_QP_PATH_MTU | \
			 DROCE_SHM_QP_DEST_QPN | DROCE_SHM_QP_RQ_PSN)
	{ "path_mtu", FIELD(path_mtu), UC_RTR, UC_RTR_MASK, 1, 5, LIM_NONE },
	{ "dest_qp_num", FIELD(dest_qp_num), UC_RTR, UC_RTR_MASK, 0, 0xFFFFFF, LIM_NONE },
	{ "rq_psn", FIELD(rq_psn), UC_RTR, UC_RTR_MASK, 0, 0xFFFFFF, LIM_NONE },
	{ "sq_psn", FIELD(sq_psn), DROCE_SHM_QPT_UD, DROCE_SHM_QPS_RTR, DROCE_SHM_QPS_RTS,
	  DROCE_SHM_QP_STATE | DROCE_SHM_QP_SQ_PSN, 0, 0xFFFFFF, LIM_NONE },
	{ "qkey", FIELD(qkey), DROCE_SHM_QPT_UD, DROCE_SHM_QPS_INIT, DROCE_SHM_QPS_INIT,
	  DROCE_SHM_QP_QKEY, 0, 0xFFFFFFFF, LIM_NONE },
	{ "timeout", FIELD(timeout), RC_SQD, DROCE_SHM_QP_TIMEOUT, 0, 31, LIM_NONE },
	{ "retry_cnt", FIELD(retry_cnt), RC_SQD, DROCE_SHM_QP_RETRY_CNT, 0, 7, LIM_NONE },
	{ "rnr_retry", FIELD(rnr_retry), RC_SQD, DROCE_SHM_QP_RNR_RETRY, 0, 7, LIM_NONE },
	{ "min_rnr_timer", FIELD(min_rnr_timer), RC_SQD, DROCE_SHM_QP_MIN_RNR_TIMER, 0, 31,
	  LIM_NONE },
	{ "port_num", FIELD(port_num), RC_SQD, DROCE_SHM_QP_PORT, 1, 0, LIM_PORT },
	{ "pkey_index", FIELD(pkey_index), RC_SQD, DROCE_SHM_QP_PKEY_INDEX, 0, 0, LIM_PKEY },
	{ "max_rd_atomic", FIELD(max_rd_atomic), RC_SQD, DROCE_SHM_QP_MAX_QP_RD_ATOMIC, 0, 0,
	  LIM_RD_ATOMIC },
	{ "max_dest_rd_atomic", FIELD(max_dest_rd_atomic), RC_SQD,
	  DROCE_SHM_QP_MAX_DEST_RD_ATOMIC, 0, 0, LIM_DEST_RD_ATOMIC },
	{ "ah.is_global", FIELD(ah.is_global), RC_SQD, DROCE_SHM_QP_AV, 1, 1, LIM_NONE },
	{ "ah.sgid_index", FIELD(ah.sgid_index), RC_SQD, DROCE_SHM_QP_AV, 0, 0, LIM_GID },
	{ "ah.port_num", FIELD(ah.port_num), RC_SQD, DROCE_SHM_QP_AV, 0, 0, LIM_PORT_AV },
	{ "ah.flow_label", FIELD(ah.flow_label), RC_SQD, DROCE_SHM_QP_AV, 0, 0xFFFFF, LIM_NONE },
	/* No value of these is wrong. */
	{ "ah.hop_limit", FIELD(ah.hop_limit), RC_SQD, DROCE_SHM_QP_AV, 0, 0xFF, LIM_NONE },
	{ "ah.traffic_class", FIELD(ah.traffic_class), RC_SQD, DROCE_SHM_QP_AV, 0, 0xFF,
	  LIM_NONE },
	{ "en_sqd_async_notify", FIELD(en_sqd_async_notify), DROCE_SHM_QPT_RC,
	  DROCE_SHM_QPS_RTS, DROCE_SHM_QPS_SQD,
	  DROCE_SHM_QP_STATE | DROCE_SHM_QP_EN_SQD_ASYNC_NOTIFY, 0, 0xFF, LIM_NONE },
#undef FIELD
};

static void
set_field(struct droce_shm_qp_attr *a, const struct value_case *c, uint64_t v)
{
	uint8_t *p = (uint8_t *)a + c->off;
	uint8_t v8 = (uint8_t)v;
	uint16_t v16 = (uint16_t)v;
	uint32_t v32 = (uint32_t)v;

	switch (c->size) {
	case 1:
		memcpy(p, &v8, 1);
		break;
	case 2:
		memcpy(p, &v16, 2);
		break;
	default:
		memcpy(p, &v32, 4);
		break;
	}
}

static int
check_value(const struct value_case *c, const struct droce_shm_qp_limits *lim, uint64_t v)
{
	struct droce_shm_qp_attr a;

	droce_test_ctx("%s = %" PRIu64 " (limits rd_atomic %u/%u ports %u pkeys %u gids %u)",
		       c->name, v, (unsigned int)lim->max_rd_atomic,
		       (unsigned int)lim->max_dest_rd_atomic,
		       (unsigned int)lim->phys_port_cnt, (unsigned int)lim->pkey_tbl_len,
		       (unsigned int)lim->gid_tbl_len);
	good_attr(&a, c->cur, c->next, c->mask);
	set_field(&a, c, v);
	return droce_shm_qp_attr_check(c->qpt, c->cur, &a, lim);
}

static uint64_t
case_hi(const struct value_case *c, const struct droce_shm_qp_limits *lim)
{
	switch (c->lim_hi) {
	case LIM_PORT:
	case LIM_PORT_AV:
		return lim->phys_port_cnt;
	case LIM_PKEY:
		return lim->pkey_tbl_len - 1u;
	case LIM_GID:
		return lim->gid_tbl_len - 1u;
	case LIM_RD_ATOMIC:
		return lim->max_rd_atomic;
	case LIM_DEST_RD_ATOMIC:
		return lim->max_dest_rd_atomic;
	default:
		return c->hi;
	}
}

static void
check_value_cases(const struct droce_shm_qp_limits *lim)
{
	size_t i;

	for (i = 0; i < sizeof(value_cases) / sizeof(value_cases[0]); i++) {
		const struct value_case *c = &value_cases[i];
		uint64_t field_max = c->size == 4 ? 0xFFFFFFFF : (1ull << (8 * c->size)) - 1;
		uint64_t hi = case_hi(c, lim);

		CHECK_EQ_I64(check_value(c, lim, c->lo), 0);
		CHECK_EQ_I64(check_value(c, lim, hi), 0);
		CHECK_EQ_I64(check_value(c, lim, (c->lo + hi) / 2), 0);
		if (c->lo > 0)
			CHECK_EQ_I64(check_value(c, lim, c->lo - 1), -EINVAL);
		if (hi < field_max) {
			CHECK_EQ_I64(check_value(c, lim, hi + 1), -EINVAL);
			CHECK_EQ_I64(check_value(c, lim, field_max), -EINVAL);
		}
	}
}

DROCE_TEST(qp_value_boundaries)
{
	static const struct droce_shm_qp_limits other = {
		.max_rd_atomic = 1,
		.max_dest_rd_atomic = 2,
		.phys_port_cnt = 1,
		.pkey_tbl_len = 1,
		.gid_tbl_len = 255,
	};

	check_value_cases(&test_lim);
	check_value_cases(&other);
}

/* Port 0 does not exist; with no P_Key or GID table entries nothing is valid. */
DROCE_TEST(qp_value_empty_limits)
{
	static const struct droce_shm_qp_limits none = { 0 };
	struct droce_shm_qp_attr a;

	good_attr(&a, DROCE_SHM_QPS_SQD, DROCE_SHM_QPS_SQD, DROCE_SHM_QP_PORT);
	a.port_num = 0;
	CHECK_EQ_I64(droce_shm_qp_attr_check(DROCE_SHM_QPT_RC, DROCE_SHM_QPS_SQD, &a, &test_lim),
		     -EINVAL);
	a.port_num = 1;
	CHECK_EQ_I64(droce_shm_qp_attr_check(DROCE_SHM_QPT_RC, DROCE_SHM_QPS_SQD, &a, &none),
		     -EINVAL);
	a.mask = DROCE_SHM_QP_PKEY_INDEX;
	a.pkey_index = 0;
	CHECK_EQ_I64(droce_shm_qp_attr_check(DROCE_SHM_QPT_RC, DROCE_SHM_QPS_SQD, &a, &none),
		     -EINVAL);
	a.mask = DROCE_SHM_QP_AV;
	a.ah.sgid_index = 0;
	a.ah.port_num = 0;
	CHECK_EQ_I64(droce_shm_qp_attr_check(DROCE_SHM_QPT_RC, DROCE_SHM_QPS_SQD, &a, &none),
		     -EINVAL);
	a.mask = DROCE_SHM_QP_MAX_QP_RD_ATOMIC;
	a.max_rd_atomic = 0;
	CHECK_EQ_I64(droce_shm_qp_attr_check(DROCE_SHM_QPT_RC, DROCE_SHM_QPS_SQD, &a, &none), 0);
}

DROCE_TEST(qp_access_flags)
{
	struct droce_shm_qp_attr a;
	unsigned int b;

	for (b = 0; b < 32; b++) {
		droce_test_ctx("access bit %u", b);
		good_attr(&a, DROCE_SHM_QPS_INIT, DROCE_SHM_QPS_INIT, DROCE_SHM_QP_ACCESS_FLAGS);
		a.qp_access_flags = 1u << b;
		/*
		 * LOCAL_WRITE, REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC: bits 0..3; FLUSH_GLOBAL
		 * and FLUSH_PERSISTENT (rdma-core 45): bits 8 and 9.
		 */
		CHECK_EQ_I64(droce_shm_qp_attr_check(DROCE_SHM_QPT_RC, DROCE_SHM_QPS_INIT, &a,
						     &test_lim),
			     b < 4 || b == 8 || b == 9 ? 0 : -EINVAL);
		a.qp_access_flags = 0xF | 1u << b;
		CHECK_EQ_I64(droce_shm_qp_attr_check(DROCE_SHM_QPT_UC, DROCE_SHM_QPS_INIT, &a,
						     &test_lim),
			     b < 4 || b == 8 || b == 9 ? 0 : -EINVAL);
	}
	CHECK_EQ_U64(DROCE_SHM_ACCESS_LOCAL_WRITE | DROCE_SHM_ACCESS_REMOTE_WRITE |
		     DROCE_SHM_ACCESS_REMOTE_READ | DROCE_SHM_ACCESS_REMOTE_ATOMIC, 0xF);
	good_attr(&a, DROCE_SHM_QPS_INIT, DROCE_SHM_QPS_INIT, DROCE_SHM_QP_ACCESS_FLAGS);
	a.qp_access_flags = 0;
	CHECK_EQ_I64(droce_shm_qp_attr_check(DROCE_SHM_QPT_RC, DROCE_SHM_QPS_INIT, &a, &test_lim),
		     0);
}

/* Values are checked only for the bits in the mask. */
DROCE_TEST(qp_values_only_when_present)
{
	struct droce_shm_qp_attr a;

	memset(&a, 0xFF, sizeof(a));
	a.mask = DROCE_SHM_QP_STATE;
	a.qp_state = DROCE_SHM_QPS_ERR;
	CHECK_EQ_I64(droce_shm_qp_attr_check(DROCE_SHM_QPT_RC, DROCE_SHM_QPS_RTS, &a, &test_lim),
		     0);
	a.mask = 0;
	CHECK_EQ_I64(droce_shm_qp_attr_check(DROCE_SHM_QPT_RC, DROCE_SHM_QPS_RTS, &a, &test_lim),
		     0);
	a.mask = DROCE_SHM_QP_QKEY;
	CHECK_EQ_I64(droce_shm_qp_attr_check(DROCE_SHM_QPT_UD, DROCE_SHM_QPS_RTS, &a, &test_lim),
		     0);
	a.mask = DROCE_SHM_QP_TIMEOUT;
	CHECK_EQ_I64(droce_shm_qp_attr_check(DROCE_SHM_QPT_RC, DROCE_SHM_QPS_SQD, &a, &test_lim),
		     -EINVAL);
}

DROCE_TEST(qp_state_names)
{
	unsigned int s;

	CHECK_EQ_STR(droce_shm_qp_state_name(DROCE_SHM_QPS_RESET), "RESET");
	CHECK_EQ_STR(droce_shm_qp_state_name(DROCE_SHM_QPS_INIT), "INIT");
	CHECK_EQ_STR(droce_shm_qp_state_name(DROCE_SHM_QPS_RTR), "RTR");
	CHECK_EQ_STR(droce_shm_qp_state_name(DROCE_SHM_QPS_RTS), "RTS");
	CHECK_EQ_STR(droce_shm_qp_state_name(DROCE_SHM_QPS_SQD), "SQD");
	CHECK_EQ_STR(droce_shm_qp_state_name(DROCE_SHM_QPS_SQE), "SQE");
	CHECK_EQ_STR(droce_shm_qp_state_name(DROCE_SHM_QPS_ERR), "ERR");
	for (s = 0; s < NB_STATES; s++)
		CHECK_EQ_STR(droce_shm_qp_state_name((uint8_t)s), state_names[s]);
	for (s = NB_STATES; s <= 0xFF; s++)
		CHECK_EQ_STR(droce_shm_qp_state_name((uint8_t)s), "UNKNOWN");
}

/* ---- Region arena ---- */

#define LINE		64
/* Header: 32 bytes + 64 doorbell offsets = 544, padded to 9 lines. */
#define HDR_SPAN	576
/* Doorbell: a summary line + 64 words = 9 lines. */
#define DB_SPAN		576
#define START(nb)	(HDR_SPAN + (uint64_t)(nb) * DB_SPAN)

/* size bytes at a cache-line aligned address, owned by the test. */
static uint8_t *
region(uint64_t size)
{
	uint8_t *p = droce_test_malloc(size + LINE - 1);

	return (uint8_t *)(((uintptr_t)p + LINE - 1) & ~(uintptr_t)(LINE - 1));
}

static struct droce_shm_arena *
new_arena(void)
{
	return droce_test_malloc(sizeof(struct droce_shm_arena));
}

static bool
all_bytes(const uint8_t *p, uint64_t len, uint8_t v)
{
	uint64_t i;

	for (i = 0; i < len; i++)
		if (p[i] != v)
			return false;
	return true;
}

DROCE_TEST(arena_sizes)
{
	CHECK_EQ_U64(sizeof(struct droce_shm_region_hdr), 544);
	CHECK_EQ_U64(sizeof(struct droce_shm_doorbell), DB_SPAN);
}

DROCE_TEST(arena_init_errors)
{
	struct droce_shm_arena *a = new_arena();
	uint64_t size = START(DROCE_SHM_MAX_ENGINES) + 4096;
	uint8_t *base = region(size + LINE);

	CHECK_EQ_I64(droce_shm_arena_init(NULL, base, size, 1), -EINVAL);
	CHECK_EQ_I64(droce_shm_arena_init(a, NULL, size, 1), -EINVAL);
	CHECK_EQ_I64(droce_shm_arena_init(a, base, size, 0), -EINVAL);
	CHECK_EQ_I64(droce_shm_arena_init(a, base, size, DROCE_SHM_MAX_ENGINES + 1), -EINVAL);
	CHECK_EQ_I64(droce_shm_arena_init(a, base, size, UINT32_MAX), -EINVAL);
	CHECK_EQ_I64(droce_shm_arena_init(a, base + 32, size, 1), -EINVAL);
	CHECK_EQ_I64(droce_shm_arena_init(a, base + 8, size, 1), -EINVAL);
	CHECK_EQ_I64(droce_shm_arena_init(a, base, START(1) - 1, 1), -EINVAL);
	CHECK_EQ_I64(droce_shm_arena_init(a, base, START(2) - 1, 2), -EINVAL);
	CHECK_EQ_I64(droce_shm_arena_init(a, base, (uint64_t)INT64_MAX + 1, 1), -EINVAL);
	CHECK_EQ_I64(droce_shm_arena_init(a, base, UINT64_MAX, 1), -EINVAL);
	CHECK_EQ_I64(droce_shm_arena_init(a, base + LINE, size, DROCE_SHM_MAX_ENGINES), 0);
	/* Room for header and doorbells only: valid, nothing to allocate. */
	CHECK_EQ_I64(droce_shm_arena_init(a, base, START(3), 3), 0);
	CHECK_EQ_U64(a->nb_free, 0);
	CHECK_EQ_I64(droce_shm_arena_alloc(a, 1, LINE), -ENOMEM);
	CHECK_EQ_I64(droce_shm_region_check(base, START(3)), 0);
	/* Less than a line more: still nothing. */
	CHECK_EQ_I64(droce_shm_arena_init(a, base, START(3) + LINE - 1, 3), 0);
	CHECK_EQ_U64(a->nb_free, 0);
	CHECK_EQ_I64(droce_shm_arena_alloc(a, 1, LINE), -ENOMEM);
}

DROCE_TEST(arena_init_layout)
{
	static const uint32_t engines[] = { 1, 2, 7, DROCE_SHM_MAX_ENGINES };
	struct droce_shm_arena *a = new_arena();
	uint64_t size = START(DROCE_SHM_MAX_ENGINES) + 8192 + 40;	/* not a whole line */
	uint8_t *base = region(size);
	const struct droce_shm_region_hdr *hdr = (const void *)base;
	size_t k;
	uint32_t i;

	for (k = 0; k < sizeof(engines) / sizeof(engines[0]); k++) {
		uint32_t nb = engines[k];

		droce_test_ctx("%u engines", nb);
		memset(base, 0xAA, size);
		CHECK_EQ_I64(droce_shm_arena_init(a, base, size, nb), 0);
		CHECK_EQ_U64(hdr->magic, DROCE_SHM_MAGIC);
		CHECK_MEM(base, "ORCESHM1", 8);
		CHECK_EQ_U64(hdr->abi_version, DROCE_SHM_ABI_VERSION);
		CHECK_EQ_U64(hdr->hdr_size, 544);
		CHECK_EQ_U64(hdr->size, size);
		CHECK_EQ_U64(hdr->nb_engines, nb);
		CHECK_EQ_U64(hdr->rsvd, 0);
		for (i = 0; i < DROCE_SHM_MAX_ENGINES; i++)
			CHECK_EQ_U64(hdr->doorbell_off[i], i < nb ? HDR_SPAN + i * DB_SPAN : 0);
		CHECK(all_bytes(base + 544, START(nb) - 544, 0));
		CHECK(all_bytes(base + START(nb), size - START(nb), 0xAA));
		CHECK_EQ_U64(a->nb_free, 1);
		CHECK_EQ_U64(a->free[0].off, START(nb));
		CHECK_EQ_U64(a->free[0].len, (size & ~63ull) - START(nb));
		CHECK_EQ_I64(droce_shm_region_check(base, size), 0);
	}
}

DROCE_TEST(arena_alloc_exact_offsets)
{
	struct droce_shm_arena *a = new_arena();
	const uint64_t s = START(1);	/* 1152: 128-aligned, not 256-aligned */
	uint64_t size = s + 64 * LINE;
	uint8_t *base = region(size);

	CHECK_EQ_I64(droce_shm_arena_init(a, base, size, 1), 0);
	CHECK_EQ_I64(droce_shm_arena_alloc(a, 100, 64), s);		/* 2 lines */
	CHECK_EQ_I64(droce_shm_arena_alloc(a, 64, 64), s + 128);
	CHECK_EQ_U64(a->nb_free, 1);
	/* s + 192 = 1344 is not 256-aligned: the block goes to 1536, 1344..1535 stays free. */
	CHECK_EQ_I64(droce_shm_arena_alloc(a, 1, 256), 1536);
	CHECK_EQ_U64(a->nb_free, 2);
	CHECK_EQ_U64(a->free[0].off, 1344);
	CHECK_EQ_U64(a->free[0].len, 192);
	CHECK_EQ_U64(a->free[1].off, 1600);
	/* First fit: the gap first. */
	CHECK_EQ_I64(droce_shm_arena_alloc(a, 64, 64), 1344);
	CHECK_EQ_I64(droce_shm_arena_alloc(a, 129, 64), 1600);	/* 3 lines: gap too small */
	CHECK_EQ_I64(droce_shm_arena_alloc(a, 128, 64), 1408);	/* fills the gap */
	CHECK_EQ_U64(a->nb_free, 1);
	CHECK_EQ_U64(a->free[0].off, 1792);
	CHECK_EQ_I64(droce_shm_arena_free(a, s, 100), 0);
	CHECK_EQ_U64(a->nb_free, 2);
	CHECK_EQ_I64(droce_shm_arena_alloc(a, 65, 64), s);
	CHECK_EQ_I64(droce_shm_arena_alloc(a, 64, 128), 1792);
	/* Everything left at once, then nothing. */
	CHECK_EQ_I64(droce_shm_arena_alloc(a, size - 1856, 64), 1856);
	CHECK_EQ_U64(a->nb_free, 0);
	CHECK_EQ_I64(droce_shm_arena_alloc(a, 1, 64), -ENOMEM);
	/* Free the 256-aligned one (len as allocated, 1): one line comes back. */
	CHECK_EQ_I64(droce_shm_arena_free(a, 1536, 1), 0);
	CHECK_EQ_I64(droce_shm_arena_alloc(a, 65, 64), -ENOMEM);
	CHECK_EQ_I64(droce_shm_arena_alloc(a, 64, 512), 1536);
}

DROCE_TEST(arena_alloc_errors)
{
	struct droce_shm_arena *a = new_arena();
	uint64_t size = START(1) + 4096;
	uint8_t *base = region(size);

	CHECK_EQ_I64(droce_shm_arena_init(a, base, size, 1), 0);
	CHECK_EQ_I64(droce_shm_arena_alloc(NULL, 64, 64), -EINVAL);
	CHECK_EQ_I64(droce_shm_arena_alloc(a, 0, 64), -EINVAL);
	CHECK_EQ_I64(droce_shm_arena_alloc(a, 64, 0), -EINVAL);
	CHECK_EQ_I64(droce_shm_arena_alloc(a, 64, 1), -EINVAL);
	CHECK_EQ_I64(droce_shm_arena_alloc(a, 64, 32), -EINVAL);
	CHECK_EQ_I64(droce_shm_arena_alloc(a, 64, 63), -EINVAL);
	CHECK_EQ_I64(droce_shm_arena_alloc(a, 64, 96), -EINVAL);
	CHECK_EQ_I64(droce_shm_arena_alloc(a, 64, (1ull << 63) + 64), -EINVAL);
	CHECK_EQ_I64(droce_shm_arena_alloc(a, 64, 1ull << 63), -ENOMEM);
	CHECK_EQ_I64(droce_shm_arena_alloc(a, UINT64_MAX, 64), -ENOMEM);
	CHECK_EQ_I64(droce_shm_arena_alloc(a, UINT64_MAX - 62, 64), -ENOMEM);
	CHECK_EQ_I64(droce_shm_arena_alloc(a, 4097, 64), -ENOMEM);
	/* The region is 1152 + 4096: no 8192-aligned line in it. */
	CHECK_EQ_I64(droce_shm_arena_alloc(a, 64, 8192), -ENOMEM);
	CHECK_EQ_I64(droce_shm_arena_alloc(a, 64, 4096), 4096);
	CHECK_EQ_I64(droce_shm_arena_alloc(a, 4096, 64), -ENOMEM);
	/* The split left 1152..4095 and 4160..5247: fill both exactly. */
	CHECK_EQ_I64(droce_shm_arena_alloc(a, 4096 - 1152, 64), START(1));
	CHECK_EQ_I64(droce_shm_arena_alloc(a, 5248 - 4160, 64), 4096 + 64);
	CHECK_EQ_U64(a->nb_free, 0);
}

DROCE_TEST(arena_free_errors)
{
	struct droce_shm_arena *a = new_arena();
	struct droce_shm_arena *copy = new_arena();
	const uint64_t s = START(2);
	uint64_t size = s + 16 * LINE;
	uint8_t *base = region(size);

	CHECK_EQ_I64(droce_shm_arena_init(a, base, size, 2), 0);
	CHECK_EQ_I64(droce_shm_arena_alloc(a, 4 * LINE, 64), s);
	CHECK_EQ_I64(droce_shm_arena_alloc(a, 4 * LINE, 64), s + 4 * LINE);
	CHECK_EQ_I64(droce_shm_arena_free(a, s + 4 * LINE, 4 * LINE), 0);
	memcpy(copy, a, sizeof(*a));
	/* Double free, whole or in part, and straddling into free space. */
	CHECK_EQ_I64(droce_shm_arena_free(a, s + 4 * LINE, 4 * LINE), -EINVAL);
	CHECK_EQ_I64(droce_shm_arena_free(a, s + 5 * LINE, LINE), -EINVAL);
	CHECK_EQ_I64(droce_shm_arena_free(a, s + 3 * LINE, 2 * LINE), -EINVAL);
	CHECK_EQ_I64(droce_shm_arena_free(a, s, 4 * LINE + 1), -EINVAL);
	CHECK_EQ_I64(droce_shm_arena_free(a, s + 15 * LINE, LINE), -EINVAL);
	/* Header and doorbells are not the arena's. */
	CHECK_EQ_I64(droce_shm_arena_free(a, 0, LINE), -EINVAL);
	CHECK_EQ_I64(droce_shm_arena_free(a, s - LINE, LINE), -EINVAL);
	CHECK_EQ_I64(droce_shm_arena_free(a, s - LINE, 2 * LINE), -EINVAL);
	/* Outside, misaligned, empty, wrapping. */
	CHECK_EQ_I64(droce_shm_arena_free(a, size, LINE), -EINVAL);
	CHECK_EQ_I64(droce_shm_arena_free(a, size - LINE, 2 * LINE), -EINVAL);
	CHECK_EQ_I64(droce_shm_arena_free(a, s + 8, LINE), -EINVAL);
	CHECK_EQ_I64(droce_shm_arena_free(a, s, 0), -EINVAL);
	CHECK_EQ_I64(droce_shm_arena_free(a, UINT64_MAX & ~63ull, LINE), -EINVAL);
	CHECK_EQ_I64(droce_shm_arena_free(a, s, UINT64_MAX), -EINVAL);
	CHECK_EQ_I64(droce_shm_arena_free(a, s, UINT64_MAX - s + 1), -EINVAL);
	CHECK_EQ_I64(droce_shm_arena_free(NULL, s, LINE), -EINVAL);
	/* None of that changed anything. */
	CHECK_MEM(a, copy, sizeof(*a));
	CHECK_EQ_I64(droce_shm_arena_free(a, s, 4 * LINE), 0);
	CHECK_EQ_U64(a->nb_free, 1);
	CHECK_EQ_U64(a->free[0].len, 16 * LINE);
	CHECK_EQ_I64(droce_shm_arena_free(a, s, 4 * LINE), -EINVAL);
}

/* Fill the arena with blocks of random sizes, free them in random order: all one again. */
DROCE_TEST(arena_merge_any_order)
{
	enum { MAX_BLOCKS = 512, ROUNDS = 20 };
	struct droce_shm_arena *a = new_arena();
	const uint64_t s = START(4);
	uint64_t size = s + 256 * 1024;
	uint8_t *base = region(size);
	uint64_t off[MAX_BLOCKS], len[MAX_BLOCKS];
	unsigned int n, i, j, round;
	int64_t r;

	for (round = 0; round < ROUNDS; round++) {
		droce_test_ctx("round %u", round);
		CHECK_EQ_I64(droce_shm_arena_init(a, base, size, 4), 0);
		for (n = 0; n < MAX_BLOCKS; n++) {
			len[n] = 1 + droce_test_rand_below(4000);
			r = droce_shm_arena_alloc(a, len[n], LINE);
			if (r == -ENOMEM)
				break;
			CHECK(r >= 0);
			off[n] = (uint64_t)r;
		}
		/* Fisher-Yates */
		for (i = n; i > 1; i--) {
			uint64_t t;

			j = droce_test_rand_below(i);
			t = off[i - 1], off[i - 1] = off[j], off[j] = t;
			t = len[i - 1], len[i - 1] = len[j], len[j] = t;
		}
		for (i = 0; i < n; i++)
			CHECK_EQ_I64(droce_shm_arena_free(a, off[i], len[i]), 0);
		CHECK_EQ_U64(a->nb_free, 1);
		CHECK_EQ_I64(droce_shm_arena_alloc(a, size - s, LINE), s);
		CHECK_EQ_I64(droce_shm_arena_free(a, s, size - s), 0);
	}
}

DROCE_TEST(arena_alignment)
{
	struct droce_shm_arena *a = new_arena();
	uint64_t size = 1 << 20;
	uint8_t *base = region(size);
	uint64_t align;
	int64_t r;

	CHECK_EQ_I64(droce_shm_arena_init(a, base, size, 3), 0);
	for (align = LINE; align <= 1 << 16; align <<= 1) {
		droce_test_ctx("align %" PRIu64, align);
		r = droce_shm_arena_alloc(a, 1 + droce_test_rand_below(300), align);
		CHECK(r >= (int64_t)START(3));
		CHECK_EQ_U64((uint64_t)r % align, 0);
		CHECK_EQ_U64((uintptr_t)(base + r) % LINE, 0);
	}
}

DROCE_TEST(arena_zeroes_blocks)
{
	struct droce_shm_arena *a = new_arena();
	uint64_t size = START(1) + 64 * LINE;
	uint8_t *base = region(size);
	int64_t r, r2;

	CHECK_EQ_I64(droce_shm_arena_init(a, base, size, 1), 0);
	memset(base + START(1), 0xAA, size - START(1));
	r = droce_shm_arena_alloc(a, 100, LINE);
	CHECK_EQ_I64(r, START(1));
	/* The whole block, both lines, and not a byte more. */
	CHECK(all_bytes(base + r, 128, 0));
	CHECK_EQ_U64(base[r + 128], 0xAA);
	memset(base + r, 0x55, 128);
	CHECK_EQ_I64(droce_shm_arena_free(a, (uint64_t)r, 100), 0);
	r2 = droce_shm_arena_alloc(a, 128, LINE);
	CHECK_EQ_I64(r2, r);
	CHECK(all_bytes(base + r2, 128, 0));
	r = droce_shm_arena_alloc(a, 62 * LINE, LINE);
	CHECK_EQ_I64(r, START(1) + 128);
	CHECK(all_bytes(base + r, 62 * LINE, 0));
}

/*
 * A full free table: a free that merges with nobody is refused (the block stays
 * allocated); an alloc that would split an extent skips it.
 */
DROCE_TEST(arena_free_table_full)
{
	enum { BLOCKS = 2 * DROCE_SHM_ARENA_MAX_FREE + 2 };
	struct droce_shm_arena *a = new_arena();
	const uint64_t s = START(1);
	uint64_t size = s + BLOCKS * LINE;
	uint8_t *base = region(size);
	unsigned int i;

	CHECK_EQ_I64(droce_shm_arena_init(a, base, size, 1), 0);
	for (i = 0; i < BLOCKS; i++)
		CHECK_EQ_I64(droce_shm_arena_alloc(a, LINE, LINE), s + i * LINE);
	CHECK_EQ_U64(a->nb_free, 0);
	for (i = 0; i < DROCE_SHM_ARENA_MAX_FREE; i++) {
		droce_test_ctx("block %u", 2 * i);
		CHECK_EQ_I64(droce_shm_arena_free(a, s + 2 * i * LINE, LINE), 0);
	}
	CHECK_EQ_U64(a->nb_free, DROCE_SHM_ARENA_MAX_FREE);
	/* Block 2048 has allocated neighbours: a new extent, no room. */
	i = 2 * DROCE_SHM_ARENA_MAX_FREE;
	CHECK_EQ_I64(droce_shm_arena_free(a, s + i * LINE, LINE), -ENOMEM);
	CHECK_EQ_I64(droce_shm_arena_free(a, s + i * LINE, LINE), -ENOMEM);
	CHECK_EQ_U64(a->nb_free, DROCE_SHM_ARENA_MAX_FREE);
	/* Block 1 joins 0 and 2: one extent fewer, and then 2048 fits. */
	CHECK_EQ_I64(droce_shm_arena_free(a, s + LINE, LINE), 0);
	CHECK_EQ_U64(a->nb_free, DROCE_SHM_ARENA_MAX_FREE - 1);
	CHECK_EQ_I64(droce_shm_arena_free(a, s + i * LINE, LINE), 0);
	CHECK_EQ_U64(a->nb_free, DROCE_SHM_ARENA_MAX_FREE);
	/* Block 2049 joins 2048 (merge with a neighbour needs no room). */
	CHECK_EQ_I64(droce_shm_arena_free(a, s + (i + 1) * LINE, LINE), 0);
	CHECK_EQ_U64(a->nb_free, DROCE_SHM_ARENA_MAX_FREE);
}

/*
 * A full free table and an alloc whose first candidate extent would have to be split: that
 * extent is skipped, a later one that fits without a split is used.
 */
DROCE_TEST(arena_alloc_split_table_full)
{
	/*
	 * Lines of the arena, all allocated one by one, then freed: the odd lines 1..2043
	 * (1022 extents, none 128-aligned as START(1) is 18 lines), B1 = 128 lines at 2049
	 * (not 4096-aligned, holds a 4096-aligned line in its middle) and B2 = 4 lines at 2222
	 * (4096-aligned): 1024 extents.
	 */
	enum { ODD_LAST = 2043, B1 = 2049, B1_LINES = 128, B2 = 2222, B2_LINES = 4,
	       BLOCKS = B2 + B2_LINES + 1 };
	struct droce_shm_arena *a = new_arena();
	const uint64_t s = START(1);
	uint64_t size = s + BLOCKS * LINE;
	uint8_t *base = region(size);
	const uint64_t b1 = s + B1 * LINE, b2 = s + B2 * LINE;
	unsigned int i;

	CHECK_EQ_U64(b1 % 4096 != 0, 1);
	CHECK_EQ_U64(b2 % 4096, 0);
	CHECK_EQ_I64(droce_shm_arena_init(a, base, size, 1), 0);
	for (i = 0; i < BLOCKS; i++)
		CHECK_EQ_I64(droce_shm_arena_alloc(a, LINE, LINE), s + i * LINE);
	for (i = 0; i < B1_LINES; i++)
		CHECK_EQ_I64(droce_shm_arena_free(a, b1 + i * LINE, LINE), 0);
	for (i = 0; i < B2_LINES; i++)
		CHECK_EQ_I64(droce_shm_arena_free(a, b2 + i * LINE, LINE), 0);
	for (i = 1; i <= ODD_LAST; i += 2)
		CHECK_EQ_I64(droce_shm_arena_free(a, s + i * LINE, LINE), 0);
	CHECK_EQ_U64(a->nb_free, DROCE_SHM_ARENA_MAX_FREE);

	CHECK_EQ_I64(droce_shm_arena_alloc(a, LINE, 4096), b2);
	/* Now only B1 holds a 4096-aligned line, and that needs a split. */
	CHECK_EQ_I64(droce_shm_arena_alloc(a, LINE, 4096), -ENOMEM);
	CHECK_EQ_I64(droce_shm_arena_alloc(a, LINE, 128), -ENOMEM);
	/* Taking the start of B1 needs no split. */
	CHECK_EQ_I64(droce_shm_arena_alloc(a, 2 * LINE, LINE), b1);
	/* A whole small extent goes: room again for a split. */
	CHECK_EQ_I64(droce_shm_arena_alloc(a, LINE, LINE), s + LINE);
	CHECK_EQ_U64(a->nb_free, DROCE_SHM_ARENA_MAX_FREE - 1);
	CHECK_EQ_I64(droce_shm_arena_alloc(a, LINE, 4096), (b1 + 4095) & ~4095ull);
	CHECK_EQ_U64(a->nb_free, DROCE_SHM_ARENA_MAX_FREE);
}

DROCE_TEST(region_check)
{
	struct droce_shm_arena *a = new_arena();
	const uint32_t nb = 3;
	uint64_t size = START(nb) + 4096;
	uint8_t *base = region(size + LINE);
	struct droce_shm_region_hdr *hdr = (void *)base;
	struct droce_shm_region_hdr saved;

	CHECK_EQ_I64(droce_shm_arena_init(a, base, size, nb), 0);
	saved = *hdr;
	CHECK_EQ_I64(droce_shm_region_check(base, size), 0);
	CHECK_EQ_I64(droce_shm_region_check(NULL, size), -EINVAL);
	CHECK_EQ_I64(droce_shm_region_check(base, size - 1), -EINVAL);
	CHECK_EQ_I64(droce_shm_region_check(base, size + 1), -EINVAL);
	CHECK_EQ_I64(droce_shm_region_check(base, sizeof(*hdr) - 1), -EINVAL);
	CHECK_EQ_I64(droce_shm_region_check(base, 0), -EINVAL);

	hdr->magic ^= 1ull << 40;
	CHECK_EQ_I64(droce_shm_region_check(base, size), -EPROTO);
	*hdr = saved;
	hdr->abi_version++;
	CHECK_EQ_I64(droce_shm_region_check(base, size), -EPROTO);
	*hdr = saved;
	hdr->hdr_size--;
	CHECK_EQ_I64(droce_shm_region_check(base, size), -EPROTO);
	*hdr = saved;
	hdr->size = size + LINE;
	CHECK_EQ_I64(droce_shm_region_check(base, size), -EINVAL);
	CHECK_EQ_I64(droce_shm_region_check(base, size + LINE), 0);
	*hdr = saved;
	hdr->nb_engines = 0;
	CHECK_EQ_I64(droce_shm_region_check(base, size), -EINVAL);
	hdr->nb_engines = DROCE_SHM_MAX_ENGINES + 1;
	CHECK_EQ_I64(droce_shm_region_check(base, size), -EINVAL);
	/* More engines than doorbells laid out: offset 0 overlaps the header. */
	hdr->nb_engines = nb + 1;
	CHECK_EQ_I64(droce_shm_region_check(base, size), -EINVAL);
	*hdr = saved;

	/* Doorbell offsets: misaligned, in the header, past the end, wrapping, overlapping. */
	hdr->doorbell_off[1] += 8;
	CHECK_EQ_I64(droce_shm_region_check(base, size), -EINVAL);
	*hdr = saved;
	hdr->doorbell_off[2] = 512;
	CHECK_EQ_I64(droce_shm_region_check(base, size), -EINVAL);
	hdr->doorbell_off[2] = (size - DB_SPAN) & ~63ull;	/* last place that fits */
	CHECK_EQ_I64(droce_shm_region_check(base, size), 0);
	hdr->doorbell_off[2] = ((size - DB_SPAN) & ~63ull) + LINE;
	CHECK_EQ_I64(droce_shm_region_check(base, size), -EINVAL);
	hdr->doorbell_off[2] = size & ~63ull;
	CHECK_EQ_I64(droce_shm_region_check(base, size), -EINVAL);
	hdr->doorbell_off[2] = UINT64_MAX & ~63ull;
	CHECK_EQ_I64(droce_shm_region_check(base, size), -EINVAL);
	*hdr = saved;
	hdr->doorbell_off[2] = hdr->doorbell_off[0] + DB_SPAN - LINE;
	CHECK_EQ_I64(droce_shm_region_check(base, size), -EINVAL);
	hdr->doorbell_off[2] = hdr->doorbell_off[0];
	CHECK_EQ_I64(droce_shm_region_check(base, size), -EINVAL);
	hdr->doorbell_off[0] = hdr->doorbell_off[1] - DB_SPAN + LINE;
	CHECK_EQ_I64(droce_shm_region_check(base, size), -EINVAL);
	*hdr = saved;
	/* Adjacent blocks in another order are fine. */
	hdr->doorbell_off[0] = saved.doorbell_off[2];
	hdr->doorbell_off[2] = saved.doorbell_off[0];
	CHECK_EQ_I64(droce_shm_region_check(base, size), 0);
	/* Offsets beyond nb_engines are not looked at. */
	hdr->doorbell_off[nb] = 8;
	CHECK_EQ_I64(droce_shm_region_check(base, size), 0);
	*hdr = saved;
	/* A base that is not cache-line aligned cannot hold the ring structs. */
	memmove(base + 8, base, sizeof(*hdr));
	CHECK_EQ_I64(droce_shm_region_check(base + 8, size), -EINVAL);
}

/* The free table is exactly the runs of free lines of used[], in order. */
static void
check_free_table(const struct droce_shm_arena *a, const bool *used, uint64_t lines,
		 uint64_t start)
{
	uint64_t l = 0, run;
	uint32_t k = 0;

	while (l < lines) {
		if (used[l]) {
			l++;
			continue;
		}
		for (run = l; run < lines && !used[run]; run++)
			;
		CHECK(k < a->nb_free);
		CHECK_EQ_U64(a->free[k].off, start + l * LINE);
		CHECK_EQ_U64(a->free[k].len, (run - l) * LINE);
		k++;
		l = run;
	}
	CHECK_EQ_U64(k, a->nb_free);
}

/*
 * Random allocs and frees against a bitmap of lines: the arena must give exactly the lowest
 * aligned run of free lines (first fit over merged extents), keep blocks disjoint and
 * inside the region, and its free table must be the bitmap's runs.
 */
DROCE_TEST(arena_random_vs_bitmap)
{
	enum { LINES = 2048, OPS = 20000, MAX_LIVE = 400 };
	struct droce_shm_arena *a = new_arena();
	const uint64_t s = START(2);
	const uint64_t size = s + LINES * LINE + 17;	/* a partial line at the end */
	const uint64_t end = s + LINES * LINE;
	uint8_t *base = region(size);
	bool *used = droce_test_malloc(LINES);
	struct {
		uint64_t off, len;
		uint8_t tag;
	} *live = droce_test_malloc(MAX_LIVE * sizeof(*live));
	unsigned int nb_live = 0, op;
	uint64_t freed_off = 0, freed_len = 0;

	memset(used, 0, LINES);
	CHECK_EQ_I64(droce_shm_arena_init(a, base, size, 2), 0);
	for (op = 0; op < OPS; op++) {
		bool do_alloc = nb_live == 0 ||
				(nb_live < MAX_LIVE && droce_test_rand_below(100) < 55);

		droce_test_ctx("op %u live %u", op, nb_live);
		if (do_alloc) {
			uint64_t len = 1 + droce_test_rand_below(40 * LINE);
			uint64_t align = (uint64_t)LINE << droce_test_rand_below(5);
			uint64_t lines = (len + LINE - 1) / LINE;
			int64_t want = -ENOMEM, got;
			uint64_t o, l;

			for (o = (s + align - 1) & ~(align - 1); o + lines * LINE <= end;
			     o += align) {
				for (l = 0; l < lines; l++)
					if (used[(o - s) / LINE + l])
						break;
				if (l == lines) {
					want = (int64_t)o;
					break;
				}
			}
			got = droce_shm_arena_alloc(a, len, align);
			CHECK_EQ_I64(got, want);
			if (got < 0)
				continue;
			CHECK(all_bytes(base + got, lines * LINE, 0));
			for (l = 0; l < lines; l++)
				used[((uint64_t)got - s) / LINE + l] = true;
			live[nb_live].off = (uint64_t)got;
			live[nb_live].len = len;
			live[nb_live].tag = (uint8_t)(1 + op % 255);
			memset(base + got, live[nb_live].tag, lines * LINE);
			nb_live++;
		} else {
			unsigned int v = droce_test_rand_below(nb_live);
			uint64_t lines = (live[v].len + LINE - 1) / LINE, l;

			/* Nobody wrote into this block while it was allocated. */
			CHECK(all_bytes(base + live[v].off, lines * LINE, live[v].tag));
			CHECK_EQ_I64(droce_shm_arena_free(a, live[v].off, live[v].len), 0);
			for (l = 0; l < lines; l++)
				used[(live[v].off - s) / LINE + l] = false;
			freed_off = live[v].off;
			freed_len = live[v].len;
			live[v] = live[--nb_live];
			/* A double free now and then, while the block is surely still free. */
			if (droce_test_rand_below(8) == 0)
				CHECK_EQ_I64(droce_shm_arena_free(a, freed_off, freed_len), -EINVAL);
		}
		/* A full table would make alloc skip extents; the reference does not model that. */
		CHECK(a->nb_free < DROCE_SHM_ARENA_MAX_FREE);
		check_free_table(a, used, LINES, s);
	}
}

/*
 * XRC's halves take RC's rules, less the kernel's relaxations: an initiator reaches RTR
 * without responder resources or an RNR timer (it has no receive side), a target RTS
 * without retries or READ depth (it has no send side); RC itself still needs them, and
 * each half still takes the RC attributes (ibv_xsrq_pingpong's and pyverbs' masks).
 */
DROCE_TEST(xrc_transitions)
{
	const uint32_t rtr = DROCE_SHM_QP_STATE | DROCE_SHM_QP_AV | DROCE_SHM_QP_PATH_MTU |
			     DROCE_SHM_QP_DEST_QPN | DROCE_SHM_QP_RQ_PSN;
	const uint32_t rtr_rc = rtr | DROCE_SHM_QP_MAX_DEST_RD_ATOMIC | DROCE_SHM_QP_MIN_RNR_TIMER;
	const uint32_t rts = DROCE_SHM_QP_STATE | DROCE_SHM_QP_TIMEOUT | DROCE_SHM_QP_SQ_PSN;
	const uint32_t rts_rc = rts | DROCE_SHM_QP_RETRY_CNT | DROCE_SHM_QP_RNR_RETRY |
				DROCE_SHM_QP_MAX_QP_RD_ATOMIC;

	CHECK_EQ_I64(check_mask(DROCE_SHM_QPT_XRC_SEND, DROCE_SHM_QPS_INIT, DROCE_SHM_QPS_RTR, rtr),
		     0);
	CHECK_EQ_I64(check_mask(DROCE_SHM_QPT_XRC_SEND, DROCE_SHM_QPS_INIT, DROCE_SHM_QPS_RTR,
				rtr_rc), 0);
	CHECK_EQ_I64(check_mask(DROCE_SHM_QPT_RC, DROCE_SHM_QPS_INIT, DROCE_SHM_QPS_RTR, rtr),
		     -EINVAL);
	CHECK_EQ_I64(check_mask(DROCE_SHM_QPT_XRC_RECV, DROCE_SHM_QPS_INIT, DROCE_SHM_QPS_RTR, rtr),
		     -EINVAL);
	CHECK_EQ_I64(check_mask(DROCE_SHM_QPT_XRC_RECV, DROCE_SHM_QPS_RTR, DROCE_SHM_QPS_RTS, rts),
		     0);
	CHECK_EQ_I64(check_mask(DROCE_SHM_QPT_XRC_RECV, DROCE_SHM_QPS_RTR, DROCE_SHM_QPS_RTS,
				rts_rc), 0);
	CHECK_EQ_I64(check_mask(DROCE_SHM_QPT_RC, DROCE_SHM_QPS_RTR, DROCE_SHM_QPS_RTS, rts),
		     -EINVAL);
	CHECK_EQ_I64(check_mask(DROCE_SHM_QPT_XRC_SEND, DROCE_SHM_QPS_RTR, DROCE_SHM_QPS_RTS, rts),
		     -EINVAL);
	/* a QKEY is UD's, for neither half */
	CHECK_EQ_I64(check_mask(DROCE_SHM_QPT_XRC_RECV, DROCE_SHM_QPS_RTR, DROCE_SHM_QPS_RTS,
				rts | DROCE_SHM_QP_QKEY), -EINVAL);
}
