/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * -i's prompt, testpmd's: DPDK's cmdline library, "droce-perf> " on the main lcore, the
 * run on a worker lcore (perf_control.c). set changes the settings of the next start;
 * perf_hosts_fit() sets the hosts up again when they no longer serve them.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmdline.h>
#include <cmdline_parse.h>
#include <cmdline_parse_num.h>
#include <cmdline_parse_string.h>
#include <cmdline_socket.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>

#include "perf.h"

/* show qp stats lists QPs one by one up to this many, then sums them. */
#define QP_LIST_MAX		16

struct prompt {
	struct perf_control c;
	bool quit;
};

/* cmdline's callbacks get no context of ours: the one prompt of the process. */
static struct prompt *prompt_ctl;

/* ---- The prompt's commands: testpmd's way, one token per word ---- */

struct cmd_word_result {
	cmdline_fixed_string_t w[4];
};

struct cmd_set_result {
	cmdline_fixed_string_t set;
	cmdline_fixed_string_t what;
	cmdline_fixed_string_t value;
};

struct cmd_xstats_result {
	cmdline_fixed_string_t w[3];
	uint16_t port;
};

#define WORD(n, s)	TOKEN_STRING_INITIALIZER(struct cmd_word_result, w[n], s)

static void
cmd_start_parsed(void *res, struct cmdline *cl, void *data)
{
	struct perf_control *c = &prompt_ctl->c;

	(void)res;
	(void)cl;
	(void)data;
	if (c->launched && !perf_control_finished(c)) {
		fprintf(stderr, "droce-perf: a run is going: stop ends it\n");
		return;
	}
	if (c->launched)
		perf_control_join(c);
	perf_control_launch(c);
	fflush(stdout);
}

static void
cmd_stop_parsed(void *res, struct cmdline *cl, void *data)
{
	struct perf_control *c = &prompt_ctl->c;

	(void)res;
	(void)cl;
	(void)data;
	if (!c->launched) {
		fprintf(stderr, "droce-perf: no run is going: start begins one\n");
		return;
	}
	perf_control_stop(c);
}

static void
cmd_quit_parsed(void *res, struct cmdline *cl, void *data)
{
	(void)res;
	(void)data;
	prompt_ctl->quit = true;
	cmdline_quit(cl);
}

static void
cmd_port_stats_parsed(void *res, struct cmdline *cl, void *data)
{
	(void)res;
	(void)cl;
	(void)data;
	perf_report_ports_since(prompt_ctl->c.r, prompt_ctl->c.mark);
	fflush(stdout);
}

static void
cmd_port_clear_parsed(void *res, struct cmdline *cl, void *data)
{
	const struct perf_run *r = prompt_ctl->c.r;
	const struct perf_host *h[2] = { &r->a, &r->b };
	int i, ret;

	(void)res;
	(void)cl;
	(void)data;
	for (i = 0; i < 2; i++) {
		if (!h[i]->port_started)
			continue;
		ret = rte_eth_stats_reset(h[i]->port);
		if (ret != 0)
			fprintf(stderr, "droce-perf: port %u: statistics not cleared: %s\n",
				h[i]->port, strerror(-ret));
		else
			printf("\n  NIC statistics for port %u cleared\n", h[i]->port);
	}
	memset(prompt_ctl->c.mark, 0, sizeof(prompt_ctl->c.mark));
	fflush(stdout);
}

/* testpmd's "show port xstats": every extended statistic of the port, by name. */
static void
port_xstats(const struct perf_host *h, bool json)
{
	struct rte_eth_xstat_name *names = NULL;
	struct rte_eth_xstat *vals = NULL;
	int n, i;

	n = rte_eth_xstats_get_names(h->port, NULL, 0);
	if (n >= 0) {
		names = calloc((size_t)n + 1, sizeof(*names));
		vals = calloc((size_t)n + 1, sizeof(*vals));
	}
	if (names == NULL || vals == NULL ||
	    rte_eth_xstats_get_names(h->port, names, (unsigned int)n) != n ||
	    rte_eth_xstats_get(h->port, vals, (unsigned int)n) != n) {
		fprintf(stderr, "droce-perf: port %u: extended statistics unavailable\n", h->port);
		goto out;
	}
	if (json) {
		printf("{\"figure\": \"xstats\", \"port\": %u, \"host\": \"%s\"", h->port, h->name);
		for (i = 0; i < n; i++)
			printf(", \"%s\": %" PRIu64, names[vals[i].id].name, vals[i].value);
		printf("}\n");
	} else {
		printf("###### NIC extended statistics for port %-2u\n", h->port);
		for (i = 0; i < n; i++)
			printf("%s: %" PRIu64 "\n", names[vals[i].id].name, vals[i].value);
	}
out:
	free(names);
	free(vals);
}

static void
cmd_xstats_all_parsed(void *res, struct cmdline *cl, void *data)
{
	const struct perf_run *r = prompt_ctl->c.r;

	(void)res;
	(void)cl;
	(void)data;
	if (r->a.port_started)
		port_xstats(&r->a, r->o->json);
	if (r->b.port_started)
		port_xstats(&r->b, r->o->json);
	fflush(stdout);
}

static void
cmd_xstats_port_parsed(void *res, struct cmdline *cl, void *data)
{
	const struct cmd_xstats_result *x = res;
	const struct perf_run *r = prompt_ctl->c.r;

	(void)cl;
	(void)data;
	if (r->a.port_started && x->port == r->a.port)
		port_xstats(&r->a, r->o->json);
	else if (r->b.port_started && x->port == r->b.port)
		port_xstats(&r->b, r->o->json);
	else
		fprintf(stderr, "droce-perf: port %u: not host a's (%u) or host b's (%u)\n",
			x->port, r->a.port, r->b.port);
	fflush(stdout);
}

/* The counters that tell a RoCE run's story: what went, what came back, what went wrong. */
#define QP_STATS(X) \
	X(tx_pkts) X(rx_pkts) X(req_pkts) X(req_retransmit) X(req_timeout) X(req_go_back) \
	X(ack_rcvd) X(ack_sent) X(nak_seq_rcvd) X(nak_seq_sent) X(nak_rnr_rcvd) \
	X(nak_rnr_sent) X(nak_err_rcvd) X(nak_err_sent) X(resp_msgs) X(resp_writes) \
	X(resp_dup) X(resp_out_of_seq) X(uc_drop) X(cqe) X(cq_overrun) X(qp_error) \
	X(tx_drop) X(tx_nombuf) X(rx_no_qp) X(rx_malformed)

static void
host_qp_stats(const struct perf_host *h, bool json)
{
	struct droce_engine_stats st;
	uint64_t posted = 0, done = 0, rposted = 0, rdone = 0, lo = UINT64_MAX, hi = 0;
	uint32_t i;
	bool first = true;

	perf_host_stats(h, &st);
	for (i = 0; i < h->nb_qps; i++) {
		const struct perf_qp *q = &h->qps[i];

		posted += q->posted;
		done += q->done;
		rposted += q->rposted;
		rdone += q->rdone;
		lo = RTE_MIN(lo, q->done);
		hi = RTE_MAX(hi, q->done);
	}
	if (h->nb_qps == 0)
		lo = 0;
	if (json) {
		printf("{\"figure\": \"qp\", \"host\": \"%s\", \"qps\": %u, \"engines\": %u, "
		       "\"sends_posted\": %" PRIu64 ", \"sends_completed\": %" PRIu64 ", "
		       "\"recvs_posted\": %" PRIu64 ", \"recvs_completed\": %" PRIu64,
		       h->name, h->nb_qps, h->nb_engines, posted, done, rposted, rdone);
#define QP_STAT_JSON(f) printf(", \"" #f "\": %" PRIu64, st.f);
		QP_STATS(QP_STAT_JSON)
#undef QP_STAT_JSON
		printf("}\n");
		return;
	}
	printf("\n  ######################## QP statistics of host %s #########################\n",
	       h->name);
	printf("  %u QP(s) on %u engine(s), port %u\n", h->nb_qps, h->nb_engines, h->port);
	printf("  sends posted: %-12" PRIu64 " completed: %-12" PRIu64 "\n", posted, done);
	printf("  recvs posted: %-12" PRIu64 " completed: %-12" PRIu64 "\n", rposted, rdone);
	if (h->nb_qps > QP_LIST_MAX)
		printf("  sends completed per QP: min %" PRIu64 ", max %" PRIu64 ", mean %.1f\n",
		       lo, hi, (double)done / h->nb_qps);
	for (i = 0; h->nb_qps <= QP_LIST_MAX && i < h->nb_qps; i++) {
		const struct perf_qp *q = &h->qps[i];

		printf("  QP %-6u sends %" PRIu64 "/%" PRIu64 ", recvs %" PRIu64 "/%" PRIu64
		       " (completed/posted)\n", q->qpn, q->done, q->posted, q->rdone, q->rposted);
	}
	printf("  engine counters:");
#define QP_STAT_TEXT(f) \
	printf("%s%s: %" PRIu64, first ? "\n  " : ", ", #f, st.f); \
	first = false;
	QP_STATS(QP_STAT_TEXT)
#undef QP_STAT_TEXT
	printf("\n  ############################################################################\n");
}

static void
cmd_qp_stats_parsed(void *res, struct cmdline *cl, void *data)
{
	const struct perf_run *r = prompt_ctl->c.r;

	(void)res;
	(void)cl;
	(void)data;
	if (r->a.dev == NULL || r->b.dev == NULL) {
		fprintf(stderr, "droce-perf: the hosts are not set up: start sets them up\n");
		return;
	}
	host_qp_stats(&r->a, r->o->json);
	host_qp_stats(&r->b, r->o->json);
	fflush(stdout);
}

enum set_what { SET_MODE, SET_SIZE, SET_QPS, SET_BURST, SET_RATE };

/* A bad value: the command line option's message, and the settings unchanged. */
static void
cmd_set_parsed(void *res, struct cmdline *cl, void *data)
{
	const struct cmd_set_result *s = res;
	struct perf_opts *o = prompt_ctl->c.next;
	struct perf_opts v = *o;

	(void)cl;
	switch ((enum set_what)(uintptr_t)data) {
	case SET_MODE:
		if (perf_opt_mode(s->value, &v.mode) != 0)
			return;
		break;
	case SET_SIZE:
		v.all_sizes = strcmp(s->value, "all") == 0;
		if (!v.all_sizes && perf_opt_size(s->value, &v.size) != 0)
			return;
		break;
	case SET_QPS:
		if (perf_opt_qps(s->value, &v.qps) != 0)
			return;
		break;
	case SET_BURST:
		if (perf_opt_burst(s->value, &v.burst) != 0)
			return;
		break;
	case SET_RATE:
		if (perf_opt_rate(s->value, &v.rate, &v.rate_bits) != 0)
			return;
		break;
	}
	*o = v;
	printf("droce-perf: %s %s from the next start\n", s->what, s->value);
	fflush(stdout);
}

static cmdline_parse_token_string_t start_w0 = WORD(0, "start");
static cmdline_parse_token_string_t stop_w0 = WORD(0, "stop");
static cmdline_parse_token_string_t quit_w0 = WORD(0, "quit");
static cmdline_parse_token_string_t help_w0 = WORD(0, "help");
static cmdline_parse_token_string_t show_w0 = WORD(0, "show");
static cmdline_parse_token_string_t clear_w0 = WORD(0, "clear");
static cmdline_parse_token_string_t port_w1 = WORD(1, "port");
static cmdline_parse_token_string_t qp_w1 = WORD(1, "qp");
static cmdline_parse_token_string_t stats_w2 = WORD(2, "stats");
static cmdline_parse_token_string_t all_w3 = WORD(3, "all");
static cmdline_parse_token_string_t xstats_w0 =
	TOKEN_STRING_INITIALIZER(struct cmd_xstats_result, w[0], "show");
static cmdline_parse_token_string_t xstats_w1 =
	TOKEN_STRING_INITIALIZER(struct cmd_xstats_result, w[1], "port");
static cmdline_parse_token_string_t xstats_w2 =
	TOKEN_STRING_INITIALIZER(struct cmd_xstats_result, w[2], "xstats");
static cmdline_parse_token_string_t xstats_all =
	TOKEN_STRING_INITIALIZER(struct cmd_xstats_result, w[2], "all");
static cmdline_parse_token_num_t xstats_port =
	TOKEN_NUM_INITIALIZER(struct cmd_xstats_result, port, RTE_UINT16);
static cmdline_parse_token_string_t set_w0 =
	TOKEN_STRING_INITIALIZER(struct cmd_set_result, set, "set");
/* any word: perf_opts.c's parsers judge it, with the command line's messages */
static cmdline_parse_token_string_t set_value =
	TOKEN_STRING_INITIALIZER(struct cmd_set_result, value, NULL);

#define SET_WHAT(name) \
	static cmdline_parse_token_string_t set_##name = \
		TOKEN_STRING_INITIALIZER(struct cmd_set_result, what, #name)
SET_WHAT(mode);
SET_WHAT(size);
SET_WHAT(qps);
SET_WHAT(burst);
SET_WHAT(rate);

static void cmd_help_parsed(void *res, struct cmdline *cl, void *data);

static cmdline_parse_inst_t cmd_start = {
	.f = cmd_start_parsed,
	.help_str = "start: a run of the settings (set ...), by -n or -D if given, else "
		    "until stop",
	.tokens = { (void *)&start_w0, NULL },
};

static cmdline_parse_inst_t cmd_stop = {
	.f = cmd_stop_parsed,
	.help_str = "stop: end the run (its last sends complete and count), print its figure "
		    "and the ports' statistics",
	.tokens = { (void *)&stop_w0, NULL },
};

static cmdline_parse_inst_t cmd_show_port_stats = {
	.f = cmd_port_stats_parsed,
	.help_str = "show port stats all: both hosts' ports' statistics, with rates since "
		    "the last show",
	.tokens = { (void *)&show_w0, (void *)&port_w1, (void *)&stats_w2, (void *)&all_w3, NULL },
};

static cmdline_parse_inst_t cmd_show_port_xstats_all = {
	.f = cmd_xstats_all_parsed,
	.help_str = "show port xstats all: both hosts' ports' extended statistics",
	.tokens = { (void *)&xstats_w0, (void *)&xstats_w1, (void *)&xstats_w2,
		    (void *)&xstats_all, NULL },
};

static cmdline_parse_inst_t cmd_show_port_xstats = {
	.f = cmd_xstats_port_parsed,
	.help_str = "show port xstats <port>: one port's extended statistics",
	.tokens = { (void *)&xstats_w0, (void *)&xstats_w1, (void *)&xstats_w2,
		    (void *)&xstats_port, NULL },
};

static cmdline_parse_inst_t cmd_show_qp_stats = {
	.f = cmd_qp_stats_parsed,
	.help_str = "show qp stats: per host, sends and receives posted and completed (per QP "
		    "up to 16) and the engines' counters",
	.tokens = { (void *)&show_w0, (void *)&qp_w1, (void *)&stats_w2, NULL },
};

static cmdline_parse_inst_t cmd_clear_port_stats = {
	.f = cmd_port_clear_parsed,
	.help_str = "clear port stats all: both ports' statistics back to 0",
	.tokens = { (void *)&clear_w0, (void *)&port_w1, (void *)&stats_w2, (void *)&all_w3, NULL },
};

static cmdline_parse_inst_t cmd_set_mode = {
	.f = cmd_set_parsed,
	.data = (void *)(uintptr_t)SET_MODE,
	.help_str = "set mode <mode>: send, write, lat, raw-tx, raw-rx or raw-io (--mode)",
	.tokens = { (void *)&set_w0, (void *)&set_mode, (void *)&set_value, NULL },
};

static cmdline_parse_inst_t cmd_set_size = {
	.f = cmd_set_parsed,
	.data = (void *)(uintptr_t)SET_SIZE,
	.help_str = "set size <bytes>|all: the message size, or every power of two (-s, -a)",
	.tokens = { (void *)&set_w0, (void *)&set_size, (void *)&set_value, NULL },
};

static cmdline_parse_inst_t cmd_set_qps = {
	.f = cmd_set_parsed,
	.data = (void *)(uintptr_t)SET_QPS,
	.help_str = "set qps <n>: QP pairs, 1..10000 (-q)",
	.tokens = { (void *)&set_w0, (void *)&set_qps, (void *)&set_value, NULL },
};

static cmdline_parse_inst_t cmd_set_burst = {
	.f = cmd_set_parsed,
	.data = (void *)(uintptr_t)SET_BURST,
	.help_str = "set burst <n>: WRs per post call (raw: frames per tx burst), 1..32 "
		    "(--burst)",
	.tokens = { (void *)&set_w0, (void *)&set_burst, (void *)&set_value, NULL },
};

static cmdline_parse_inst_t cmd_set_rate = {
	.f = cmd_set_parsed,
	.data = (void *)(uintptr_t)SET_RATE,
	.help_str = "set rate <R>|off: the rate limit per QP, R messages/s or Rbps, k M G "
		    "allowed (--rate)",
	.tokens = { (void *)&set_w0, (void *)&set_rate, (void *)&set_value, NULL },
};

static cmdline_parse_inst_t cmd_quit = {
	.f = cmd_quit_parsed,
	.help_str = "quit: stop the run if one goes, and exit (so does the end of the input)",
	.tokens = { (void *)&quit_w0, NULL },
};

static cmdline_parse_inst_t cmd_help = {
	.f = cmd_help_parsed,
	.help_str = "help: this list",
	.tokens = { (void *)&help_w0, NULL },
};

static cmdline_parse_ctx_t prompt_cmds[] = {
	&cmd_help,
	&cmd_start,
	&cmd_stop,
	&cmd_show_port_stats,
	&cmd_show_port_xstats_all,
	&cmd_show_port_xstats,
	&cmd_show_qp_stats,
	&cmd_clear_port_stats,
	&cmd_set_mode,
	&cmd_set_size,
	&cmd_set_qps,
	&cmd_set_burst,
	&cmd_set_rate,
	&cmd_quit,
	NULL,
};

static void
cmd_help_parsed(void *res, struct cmdline *cl, void *data)
{
	unsigned int i;

	(void)res;
	(void)cl;
	(void)data;
	printf("droce-perf's commands (the settings start as the options gave them; doc/tools/"
	       "droce-perf.md):\n");
	for (i = 0; prompt_cmds[i] != NULL; i++)
		printf("  %s\n", prompt_cmds[i]->help_str);
	fflush(stdout);
}

/*
 * The prompt reads stdin a character at a time, as cmdline_interact() does, but wakes
 * every PERF_WATCH_MS to see a run that ended by itself (its figures, as at stop) and a
 * signal (quit). The end of the input is quit, so a script piped in ends the program.
 */
int
perf_prompt(struct perf_run *r, struct perf_opts *o)
{
	struct prompt p;
	struct perf_control *c = &p.c;
	struct cmdline *cl;
	struct pollfd pfd;
	ssize_t n;
	char ch;

	memset(&p, 0, sizeof(p));
	perf_control_init(c, r, o);
	cl = cmdline_stdin_new(prompt_cmds, "droce-perf> ");
	if (cl == NULL) {
		fprintf(stderr, "droce-perf: the prompt could not start\n");
		return 1;
	}
	prompt_ctl = &p;
	if (o->auto_start)
		perf_control_launch(c);
	while (!p.quit && !__atomic_load_n(&r->interrupted, __ATOMIC_RELAXED)) {
		if (c->launched && perf_control_finished(c))
			perf_control_join(c);
		pfd.fd = STDIN_FILENO;
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (poll(&pfd, 1, PERF_WATCH_MS) <= 0)
			continue;
		n = read(STDIN_FILENO, &ch, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || cmdline_in(cl, &ch, 1) < 0)
			break;
	}
	if (c->launched)
		perf_control_stop(c);
	cmdline_stdin_exit(cl);
	printf("\n");
	fflush(stdout);
	prompt_ctl = NULL;
	r->o = o;
	return 0;
}
