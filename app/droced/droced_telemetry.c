/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * droced's commands on DPDK's telemetry socket, beside DPDK's own /ethdev/ ones, so that
 * Debian's unmodified dpdk-telemetry.py reads them (doc/operations.md):
 *   /droce/<view>          a view's row keys (QPNs, port numbers, ...), the first 512
 *   /droce/<view>,+KEY     the keys from KEY on (the next 512)
 *   /droce/<view>,KEY      that row: its fields
 *   /droce/status          droced's status, a view of one row
 * The telemetry thread asks; the control thread, which alone reads droced's state, answers
 * (droced_loop_call). The socket is the runtime directory's, root's alone: keys are shown.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_telemetry.h>

#include "droced_loc.h"

#define TEL_PREFIX	"/droce/"
#define TEL_WAIT_MS	2000	/* the control thread answers within a loop pass */

enum tel_mode {
	TEL_KEYS,	/* the row keys from start */
	TEL_ROW,	/* the row whose key is start */
};

struct tel_sink {
	struct droced_view_sink s;	/* first */
	struct rte_tel_data *d;
	enum tel_mode mode;
	uint64_t key;
	uint32_t n;		/* keys listed, or rows seen */
	bool in_row;		/* the row wanted is the one in progress */
	int rc;
};

struct tel_call {
	uint32_t view;
	struct tel_sink ts;
};

static bool
tel_row(struct droced_view_sink *s, uint64_t key)
{
	struct tel_sink *ts = (struct tel_sink *)s;

	if (ts->mode == TEL_KEYS) {
		if (ts->n == RTE_TEL_MAX_ARRAY_ENTRIES)
			return false;
		rte_tel_data_add_array_u64(ts->d, key);
		ts->n++;
		return true;
	}
	/* TEL_ROW: the view starts at the key asked for; any later row ends it. */
	if (ts->n++ > 0 || key != ts->key)
		return false;
	ts->in_row = true;
	return true;
}

static void
tel_num(struct droced_view_sink *s, uint8_t tag, const char *name, uint64_t v, const char *help)
{
	struct tel_sink *ts = (struct tel_sink *)s;

	RTE_SET_USED(tag);
	RTE_SET_USED(help);
	if (ts->in_row)
		rte_tel_data_add_dict_u64(ts->d, name, v);
}

static void
tel_text(struct droced_view_sink *s, const char *name, const char *v)
{
	struct tel_sink *ts = (struct tel_sink *)s;
	char buf[RTE_TEL_MAX_STRING_LEN];

	if (!ts->in_row)
		return;
	/* Telemetry's strings are at most RTE_TEL_MAX_STRING_LEN: a command line is cut. */
	snprintf(buf, sizeof(buf), "%s", v);
	rte_tel_data_add_dict_string(ts->d, name, buf);
}

/* On the control thread. */
static void
tel_run(struct droced *d, void *arg)
{
	struct tel_call *tc = arg;
	int rc;

	rc = droced_view_run(d, tc->view, tc->ts.key, &tc->ts.s);
	tc->ts.rc = rc < 0 ? rc : 0;
	if (tc->ts.mode == TEL_ROW && !tc->ts.in_row)
		tc->ts.rc = -ENOENT;
}

static struct droced *tel_droced;

/* Every /droce/ command: the view is the command's last part. */
static int
tel_cmd(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct tel_call tc = {
		.ts = { .s = { .row = tel_row, .num = tel_num, .text = tel_text, .viewer = 0 },
			.d = d },
	};
	const char *name = cmd + strlen(TEL_PREFIX);
	char *end;
	int rc;

	for (tc.view = 0; tc.view < DROCE_PROTO_VIEW_COUNT; tc.view++)
		if (strcmp(droced_view_name(tc.view), name) == 0)
			break;
	if (tc.view == DROCE_PROTO_VIEW_COUNT)
		return -EINVAL;
	tc.ts.mode = TEL_KEYS;
	if (tc.view == DROCE_PROTO_VIEW_STATUS) {
		tc.ts.mode = TEL_ROW;
	} else if (params != NULL && params[0] != '\0') {
		const char *p = params[0] == '+' ? params + 1 : params;

		errno = 0;
		tc.ts.key = strtoull(p, &end, 0);
		if (errno != 0 || end == p || *end != '\0')
			return -EINVAL;
		tc.ts.mode = params[0] == '+' ? TEL_KEYS : TEL_ROW;
	}
	if (tc.ts.mode == TEL_KEYS)
		rte_tel_data_start_array(d, RTE_TEL_U64_VAL);
	else
		rte_tel_data_start_dict(d);
	rc = droced_loop_call(tel_droced, tel_run, &tc, TEL_WAIT_MS);
	return rc != 0 ? rc : tc.ts.rc;
}

int
droced_telemetry_init(struct droced *d)
{
	static char cmds[DROCE_PROTO_VIEW_COUNT][48];
	static char helps[DROCE_PROTO_VIEW_COUNT][160];
	uint32_t v;

	tel_droced = d;
	for (v = 0; v < DROCE_PROTO_VIEW_COUNT; v++) {
		snprintf(cmds[v], sizeof(cmds[v]), TEL_PREFIX "%s", droced_view_name(v));
		if (v == DROCE_PROTO_VIEW_STATUS)
			snprintf(helps[v], sizeof(helps[v]), "droced's status. No parameters");
		else
			snprintf(helps[v], sizeof(helps[v]),
				 "droced's %s: their keys (the first 512; +KEY: from KEY on), or "
				 "with KEY that row's fields. Parameters: [KEY | +KEY]",
				 droced_view_name(v));
		if (rte_telemetry_register_cmd(cmds[v], tel_cmd, helps[v]) != 0) {
			DROCED_LOG(ERR, "telemetry: cannot register %s", cmds[v]);
			return -1;
		}
	}
	return 0;
}
