/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * droced's views (QUERY_VIEW, droce_shm_proto.h): fetched a page at a time into rows of
 * fields, printed one line or JSON object per row, or watched: fetched again every
 * interval and printed with each counter as its rate per second since the last fetch
 * (what `rdma statistic` and `ethtool -S` diffs give an operator).
 */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl.h"

static const char *const view_names[DROCE_PROTO_VIEW_COUNT] = {
#define VIEW_NAME(NAME, name) [DROCE_PROTO_VIEW_##NAME] = name,
	DROCE_PROTO_VIEW_LIST(VIEW_NAME)
#undef VIEW_NAME
};

struct field {
	uint8_t tag;		/* DROCE_PROTO_VIEW_TAG_* */
	char name[256];
	uint64_t num;
	char *text;
};

struct row {
	uint64_t key;
	struct field *f;
	uint32_t nb;
};

struct rows {
	struct row *r;
	uint32_t nb, cap;
};

int
ctl_view_find(const char *name)
{
	int v;

	for (v = 0; v < DROCE_PROTO_VIEW_COUNT; v++)
		if (strcmp(view_names[v], name) == 0)
			return v;
	return -1;
}

static void
rows_free(struct rows *rs)
{
	uint32_t i, k;

	for (i = 0; i < rs->nb; i++) {
		for (k = 0; k < rs->r[i].nb; k++)
			free(rs->r[i].f[k].text);
		free(rs->r[i].f);
	}
	free(rs->r);
	memset(rs, 0, sizeof(*rs));
}

static uint64_t
le64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static struct row *
row_add(struct rows *rs, uint64_t key)
{
	if (rs->nb == rs->cap) {
		uint32_t cap = rs->cap ? rs->cap * 2 : 64;
		struct row *r = realloc(rs->r, sizeof(*r) * cap);

		if (r == NULL)
			return NULL;
		rs->r = r;
		rs->cap = cap;
	}
	memset(&rs->r[rs->nb], 0, sizeof(rs->r[0]));
	rs->r[rs->nb].key = key;
	return &rs->r[rs->nb++];
}

static struct field *
field_add(struct row *r)
{
	struct field *f = realloc(r->f, sizeof(*f) * (r->nb + 1));

	if (f == NULL)
		return NULL;
	r->f = f;
	memset(&f[r->nb], 0, sizeof(f[0]));
	return &f[r->nb++];
}

/* One page's records appended to rs: 0, or -1 (a malformed answer, or no memory). */
static int
decode(const uint8_t *p, uint32_t len, struct rows *rs)
{
	const uint8_t *end = p + len;
	struct row *r = NULL;

	while (p < end) {
		uint8_t tag, nlen;
		struct field *f;
		uint16_t tlen;

		if (end - p < 2)
			return -1;
		tag = p[0];
		nlen = p[1];
		p += 2;
		if (end - p < nlen)
			return -1;
		if (tag == DROCE_PROTO_VIEW_TAG_ROW) {
			if (end - p < 8 || (r = row_add(rs, le64(p))) == NULL)
				return -1;
			p += 8;
			continue;
		}
		if (r == NULL || (f = field_add(r)) == NULL)
			return -1;
		f->tag = tag;
		memcpy(f->name, p, nlen);
		f->name[nlen] = '\0';
		p += nlen;
		if (tag == DROCE_PROTO_VIEW_TAG_LABEL) {
			if (end - p < 2)
				return -1;
			tlen = (uint16_t)(p[0] | p[1] << 8);
			p += 2;
			if (end - p < tlen || (f->text = malloc(tlen + 1u)) == NULL)
				return -1;
			memcpy(f->text, p, tlen);
			f->text[tlen] = '\0';
			p += tlen;
		} else {
			if (end - p < 8)
				return -1;
			f->num = le64(p);
			p += 8;
		}
	}
	return 0;
}

/* Every row of view v, page after page. 0 or -1 (said why). */
static int
fetch(int s, int v, struct rows *rs)
{
	struct droce_proto_view_answer *a = malloc(DROCE_PROTO_VIEW_MAX);
	struct droce_proto_req req;
	uint64_t start = 0;
	int rc = 0;

	if (a == NULL)
		return -1;
	do {
		memset(&req, 0, sizeof(req));
		req.op = DROCE_PROTO_OP_QUERY_VIEW;
		req.seq = 1;
		req.query_view.view = (uint32_t)v;
		req.query_view.start_key = start;
		if (ctl_request(s, &req, a, DROCE_PROTO_VIEW_MAX) != 0) {
			rc = -1;
			break;
		}
		if (a->len > DROCE_PROTO_VIEW_MAX - sizeof(*a) || decode(a->rows, a->len, rs) != 0) {
			fprintf(stderr, "droce-ctl: droced's answer to %s is malformed\n",
				view_names[v]);
			rc = -1;
			break;
		}
		/* A page ends before next_key's row: never a step back (a loop). */
		if (a->more && a->next_key < start) {
			fprintf(stderr, "droce-ctl: droced's pages of %s go backwards\n",
				view_names[v]);
			rc = -1;
			break;
		}
		start = a->next_key;
	} while (a->more);
	free(a);
	return rc;
}

static void
print_row(struct ctl_out *o, const struct row *r)
{
	uint32_t k;

	ctl_out_record(o);
	for (k = 0; k < r->nb; k++) {
		const struct field *f = &r->f[k];

		if (f->tag == DROCE_PROTO_VIEW_TAG_LABEL)
			ctl_out_text(o, f->name, f->text);
		else
			ctl_out_num(o, f->name, f->num);
	}
	ctl_out_record_end(o);
}

/* A one-row view (status) as text: one name=value per line. */
static void
print_lines(const struct row *r)
{
	uint32_t k;

	for (k = 0; k < r->nb; k++) {
		if (r->f[k].tag == DROCE_PROTO_VIEW_TAG_LABEL)
			printf("%s=%s\n", r->f[k].name, r->f[k].text);
		else
			printf("%s=%" PRIu64 "\n", r->f[k].name, r->f[k].num);
	}
}

int
ctl_view_print(int s, int v, struct ctl_out *o)
{
	struct rows rs = { 0 };
	uint32_t i;

	if (fetch(s, v, &rs) != 0) {
		rows_free(&rs);
		return -1;
	}
	if (v == DROCE_PROTO_VIEW_STATUS && rs.nb == 1) {
		/* droced itself: a JSON object, or a name=value per line. */
		if (o->json) {
			o->first_record = true;
			print_row(o, &rs.r[0]);
			fputs("\n", stdout);
		} else {
			print_lines(&rs.r[0]);
		}
	} else {
		ctl_out_begin(o, o->json);
		for (i = 0; i < rs.nb; i++)
			print_row(o, &rs.r[i]);
		ctl_out_end(o);
	}
	rows_free(&rs);
	return 0;
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const struct row *
row_find(const struct rows *rs, uint64_t key)
{
	uint32_t lo = 0, hi = rs->nb;

	/* Rows come in increasing key order. */
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (rs->r[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < rs->nb && rs->r[lo].key == key ? &rs->r[lo] : NULL;
}

/*
 * A row of the second fetch with its counters as rates: names and labels as they are,
 * gauges as they are now, counters per second since the first fetch (a row new since
 * then: since its start). all: also counters that did not move.
 */
static void
print_rates(struct ctl_out *o, const struct row *now, const struct row *before, double secs,
	    bool all)
{
	uint32_t k, j;

	ctl_out_record(o);
	for (k = 0; k < now->nb; k++) {
		const struct field *f = &now->f[k];
		uint64_t prev = 0;
		char name[300];

		switch (f->tag) {
		case DROCE_PROTO_VIEW_TAG_LABEL:
			ctl_out_text(o, f->name, f->text);
			break;
		case DROCE_PROTO_VIEW_TAG_ID:
			ctl_out_num(o, f->name, f->num);
			break;
		case DROCE_PROTO_VIEW_TAG_COUNTER:
			for (j = 0; before != NULL && j < before->nb; j++)
				if (strcmp(before->f[j].name, f->name) == 0)
					prev = before->f[j].num;
			if (f->num == prev && !all)
				break;
			snprintf(name, sizeof(name), "%s_per_s", f->name);
			ctl_out_double(o, name, f->num >= prev ? (double)(f->num - prev) / secs : 0);
			break;
		default:
			if (all)
				ctl_out_num(o, f->name, f->num);
			break;
		}
	}
	ctl_out_record_end(o);
}

int
ctl_view_watch(int s, int v, struct ctl_out *o, unsigned int interval_ms, unsigned int count,
	       bool all)
{
	struct rows before = { 0 }, now = { 0 };
	uint64_t t0, t1;
	unsigned int n;
	uint32_t i;

	if (fetch(s, v, &before) != 0)
		goto fail;
	t0 = now_ns();
	for (n = 0; count == 0 || n < count; n++) {
		struct timespec ts = {
			.tv_sec = interval_ms / 1000, .tv_nsec = (long)(interval_ms % 1000) * 1000000,
		};

		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
		if (fetch(s, v, &now) != 0)
			goto fail;
		t1 = now_ns();
		ctl_out_begin(o, o->json);
		for (i = 0; i < now.nb; i++)
			print_rates(o, &now.r[i], row_find(&before, now.r[i].key),
				    (double)(t1 - t0) / 1e9, all);
		ctl_out_end(o);
		if (!o->json)
			fputs("\n", stdout);
		rows_free(&before);
		before = now;
		memset(&now, 0, sizeof(now));
		t0 = t1;
	}
	rows_free(&before);
	return 0;
fail:
	rows_free(&before);
	rows_free(&now);
	return -1;
}
