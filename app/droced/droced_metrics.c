/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Prometheus metrics over HTTP ([metrics] listen, doc/operations.md): GET /metrics answers
 * in Prometheus' text exposition format (version 0.0.4), served by libmicrohttpd on its
 * own thread, never an engine's. The samples come from droced's views, made on the
 * control thread (droced_loop_call): each row's leading numbers that name it (port,
 * engine, qpn, client, pid) become labels, its gauges and counters one metric each
 * (droce_<view>_<field>, counters with _total), and its text fields one droce_<view>_info
 * series of value 1, Prometheus' way of carrying text. The QPs are there only while there
 * are at most [metrics] max_qps of them (a series per QP and counter otherwise floods a
 * server); droce_metrics_qps_omitted says when they are not. MRs, CQs, SRQs and the CM's
 * ids are not exported (droce-ctl and telemetry show them).
 */

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "droced_loc.h"

#define METRICS_WAIT_MS		5000
#define METRICS_FAMILIES	1024	/* hash slots: more than the views' fields together */
#define METRICS_CONN_TIMEOUT_S	10
#define METRICS_MAX_CONNS	16

/* A growing string. */
struct sbuf {
	char *p;
	size_t len, cap;
	bool failed;
};

static void
sbuf_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->failed)
		return;
	for (;;) {
		size_t room = b->cap - b->len;

		va_start(ap, fmt);
		n = vsnprintf(b->p != NULL ? b->p + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->failed = true;
			return;
		}
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		room = RTE_MAX(b->cap * 2, b->len + (size_t)n + 1024);
		char *p = realloc(b->p, room);

		if (p == NULL) {
			b->failed = true;
			return;
		}
		b->p = p;
		b->cap = room;
	}
}

/* One metric family: its samples gathered while the rows go by, printed together. */
struct family {
	char name[128];
	const char *help;
	bool counter;
	struct sbuf samples;
};

struct prom_sink {
	struct droced_view_sink s;	/* first */
	const char *view;
	struct family *fam[METRICS_FAMILIES];
	struct family *order[METRICS_FAMILIES];	/* in the order first seen */
	uint32_t nb_fam;
	/* The row in progress: its naming labels, and its text for the _info series. */
	struct sbuf labels;
	struct sbuf info;
	bool naming;		/* still in the row's leading numbers */
	uint32_t rows;
	bool failed;
};

static uint32_t
name_hash(const char *s)
{
	uint32_t h = 5381;

	while (*s != '\0')
		h = h * 33 + (uint8_t)*s++;
	return h;
}

static struct family *
family_get(struct prom_sink *ps, const char *name, const char *help, bool counter)
{
	uint32_t i = name_hash(name) % METRICS_FAMILIES;
	struct family *f;

	while ((f = ps->fam[i]) != NULL) {
		if (strcmp(f->name, name) == 0)
			return f;
		i = (i + 1) % METRICS_FAMILIES;
	}
	if (ps->nb_fam == METRICS_FAMILIES - 1 || (f = calloc(1, sizeof(*f))) == NULL) {
		ps->failed = true;
		return NULL;
	}
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->help = help;
	f->counter = counter;
	ps->fam[i] = f;
	ps->order[ps->nb_fam++] = f;
	return f;
}

/* A label value, escaped as the exposition format says (backslash, quote, newline). */
static void
label_value(struct sbuf *b, const char *v)
{
	for (; *v != '\0'; v++) {
		if (*v == '\\' || *v == '"')
			sbuf_printf(b, "\\%c", *v);
		else if (*v == '\n')
			sbuf_printf(b, "\\n");
		else
			sbuf_printf(b, "%c", *v);
	}
}

static void
label_add(struct sbuf *b, const char *name, const char *v)
{
	sbuf_printf(b, "%s%s=\"", b->len != 0 ? "," : "", name);
	label_value(b, v);
	sbuf_printf(b, "\"");
}

/*
 * One sample of droce_<view>_<field>: names in lower case, a counter's with _total (once),
 * milliseconds as seconds (Prometheus' base unit): what promtool's lint asks for.
 */
static void
sample(struct prom_sink *ps, const char *field, const char *help, bool counter,
       const char *labels, uint64_t v)
{
	size_t flen = strlen(field), i;
	bool ms = flen > 3 && strcmp(field + flen - 3, "_ms") == 0;
	char name[128], value[32];
	struct family *f;
	int n;

	bool total = flen > 6 && strcmp(field + flen - 6, "_total") == 0;
	const char *unit = ms ? "_seconds" : total && !counter ? "_capacity" : "";

	/* A gauge named _total (mbufs_total: a pool's size) is its capacity to Prometheus. */
	n = snprintf(name, sizeof(name), "droce_%s_%.*s%s", ps->view,
		     (int)(ms ? flen - 3 : total && !counter ? flen - 6 : flen), field, unit);
	if (n > 0 && counter && !total)
		snprintf(name + n, sizeof(name) - (size_t)n, "_total");
	for (i = 0; name[i] != '\0'; i++)
		name[i] = (char)tolower((unsigned char)name[i]);
	if (ms)
		snprintf(value, sizeof(value), "%" PRIu64 ".%03u", v / 1000, (unsigned int)(v % 1000));
	else
		snprintf(value, sizeof(value), "%" PRIu64, v);
	f = family_get(ps, name, help, counter);
	if (f == NULL)
		return;
	if (labels[0] != '\0')
		sbuf_printf(&f->samples, "%s{%s} %s\n", name, labels, value);
	else
		sbuf_printf(&f->samples, "%s %s\n", name, value);
}

/* The row in progress is done: its text as one _info series. */
static void
row_flush(struct prom_sink *ps)
{
	struct sbuf all = { 0 };

	if (ps->rows == 0 || ps->info.len == 0)
		return;
	sbuf_printf(&all, "%s%s%s", ps->labels.len != 0 ? ps->labels.p : "",
		    ps->labels.len != 0 ? "," : "", ps->info.p);
	if (!all.failed)
		sample(ps, "info", "the row's text fields as labels (value 1)", false, all.p, 1);
	free(all.p);
}

static bool
prom_row(struct droced_view_sink *s, uint64_t key)
{
	struct prom_sink *ps = (struct prom_sink *)s;

	RTE_SET_USED(key);
	row_flush(ps);
	ps->labels.len = ps->info.len = 0;
	if (ps->labels.p != NULL)
		ps->labels.p[0] = '\0';
	if (ps->info.p != NULL)
		ps->info.p[0] = '\0';
	ps->naming = true;
	ps->rows++;
	return true;
}

static void
prom_num(struct droced_view_sink *s, uint8_t tag, const char *name, uint64_t v, const char *help)
{
	struct prom_sink *ps = (struct prom_sink *)s;
	char buf[24];

	if (tag == DROCE_PROTO_VIEW_TAG_ID) {
		snprintf(buf, sizeof(buf), "%" PRIu64, v);
		/* The numbers that lead a row name it; later ones (a peer's QPN) are text. */
		label_add(ps->naming ? &ps->labels : &ps->info, name, buf);
		return;
	}
	ps->naming = false;
	sample(ps, name, help, tag == DROCE_PROTO_VIEW_TAG_COUNTER,
	       ps->labels.len != 0 ? ps->labels.p : "", v);
}

static void
prom_text(struct droced_view_sink *s, const char *name, const char *v)
{
	struct prom_sink *ps = (struct prom_sink *)s;

	ps->naming = false;
	label_add(&ps->info, name, v);
}

struct metrics_call {
	struct sbuf out;
};

static void
prom_view(struct droced *d, uint32_t v, struct sbuf *out)
{
	struct prom_sink ps = {
		.s = { .row = prom_row, .num = prom_num, .text = prom_text, .viewer = 0 },
		.view = droced_view_name(v),
	};
	uint32_t i;

	if (droced_view_run(d, v, 0, &ps.s) >= 0)
		row_flush(&ps);
	for (i = 0; i < ps.nb_fam; i++) {
		struct family *f = ps.order[i];

		sbuf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", f->name,
			    f->help != NULL ? f->help : f->name, f->name,
			    f->counter ? "counter" : "gauge");
		if (f->samples.len != 0)
			sbuf_printf(out, "%s", f->samples.p);
		free(f->samples.p);
		free(f);
	}
	free(ps.labels.p);
	free(ps.info.p);
	if (ps.failed || ps.labels.failed || ps.info.failed)
		out->failed = true;
}

/* On the control thread: every exported view. */
static void
metrics_run(struct droced *d, void *arg)
{
	struct metrics_call *mc = arg;
	static const uint32_t views[] = {
		DROCE_PROTO_VIEW_STATUS, DROCE_PROTO_VIEW_PORTS, DROCE_PROTO_VIEW_COUNTERS,
		DROCE_PROTO_VIEW_ENGINES, DROCE_PROTO_VIEW_CLIENTS,
	};
	struct droce_proto_status st;
	bool qps;
	uint32_t i;

	for (i = 0; i < RTE_DIM(views); i++)
		prom_view(d, views[i], &mc->out);
	droced_status_get(d, &st);
	qps = st.qps <= d->cfg.metrics.max_qps;
	if (qps)
		prom_view(d, DROCE_PROTO_VIEW_QPS, &mc->out);
	sbuf_printf(&mc->out, "# HELP droce_metrics_qps_omitted 1: more QPs than [metrics] "
		    "max_qps, so no droce_qps_ series\n# TYPE droce_metrics_qps_omitted gauge\n"
		    "droce_metrics_qps_omitted %d\n", !qps);
}

static struct droced *metrics_droced;
static struct MHD_Daemon *metrics_daemon;

static enum MHD_Result
answer(struct MHD_Connection *conn, unsigned int status, const char *type, char *body,
       size_t len)
{
	struct MHD_Response *r;
	enum MHD_Result rc;

	r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (r == NULL) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", type);
	rc = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return rc;
}

static enum MHD_Result
metrics_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
		const char *version, const char *upload_data, size_t *upload_data_size,
		void **con_cls)
{
	struct metrics_call mc = { .out = { 0 } };
	char *msg;

	RTE_SET_USED(cls);
	RTE_SET_USED(version);
	RTE_SET_USED(upload_data);
	RTE_SET_USED(con_cls);
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
		msg = strdup("only GET\n");
		return msg != NULL ? answer(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", msg,
					    strlen(msg)) : MHD_NO;
	}
	if (*upload_data_size != 0)
		return MHD_NO;
	if (strcmp(url, "/metrics") != 0) {
		msg = strdup("droced: the metrics are at /metrics\n");
		return msg != NULL ? answer(conn, MHD_HTTP_NOT_FOUND, "text/plain", msg,
					    strlen(msg)) : MHD_NO;
	}
	if (droced_loop_call(metrics_droced, metrics_run, &mc, METRICS_WAIT_MS) != 0 ||
	    mc.out.failed) {
		free(mc.out.p);
		msg = strdup("droced: no answer from the control thread\n");
		return msg != NULL ? answer(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain", msg,
					    strlen(msg)) : MHD_NO;
	}
	return answer(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", mc.out.p,
		      mc.out.len);
}

int
droced_metrics_init(struct droced *d)
{
	const struct droced_metrics_config *m = &d->cfg.metrics;
	struct sockaddr_in sa;

	if (!m->enabled)
		return 0;
	metrics_droced = d;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons(m->port);
	memcpy(&sa.sin_addr, m->addr, sizeof(m->addr));
	metrics_daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG,
					  m->port, NULL, NULL, metrics_request, NULL,
					  MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
					  MHD_OPTION_CONNECTION_TIMEOUT,
					  (unsigned int)METRICS_CONN_TIMEOUT_S,
					  MHD_OPTION_CONNECTION_LIMIT, (unsigned int)METRICS_MAX_CONNS,
					  MHD_OPTION_END);
	if (metrics_daemon == NULL) {
		DROCED_LOG(ERR, "[metrics] cannot serve on %u.%u.%u.%u:%u: %s", m->addr[0],
			   m->addr[1], m->addr[2], m->addr[3], m->port, strerror(errno));
		return -1;
	}
	DROCED_LOG(NOTICE, "metrics on http://%u.%u.%u.%u:%u/metrics", m->addr[0], m->addr[1],
		   m->addr[2], m->addr[3], m->port);
	return 0;
}

void
droced_metrics_fini(void)
{
	if (metrics_daemon != NULL)
		MHD_stop_daemon(metrics_daemon);
	metrics_daemon = NULL;
}
