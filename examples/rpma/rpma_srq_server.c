/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * rpma_srq_server: one shared receive queue for the connections of -c clients
 * (rpma_srq_new with its own receive CQ, rpma_conn_cfg_set_srq), as rpma_srq_recv(3)
 * describes. Every receive is posted with rpma_srq_recv and every message of every client
 * is taken from the SRQ's CQ (rpma_srq_get_rcq); wc.qp_num names the connection. The
 * clients are rpma_ping_pong clients with distinct --id: the server answers each value v
 * with v + 1 on the client's own connection and checks that every (client id, value)
 * arrives exactly once.
 *
 * One thread polls the endpoint (new clients) and the SRQ's CQ together, so clients that
 * connected early are served while others are still connecting.
 */

#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpma_common.h"

/* Receives in the SRQ per client: each client has at most one message in flight. */
#define SRQ_PER_CLIENT	2
#define RCQ_BATCH	16
#define POLL_EP		0
#define POLL_RCQ	1

struct srq_opts {
	const char *addr;
	const char *port;
	uint32_t clients;
	uint32_t iters;
	uint32_t timeout_s;
	bool verbose;
};

struct srq_client {
	struct rpma_conn *conn;
	struct rpma_cq *cq;	/* its send CQ */
	uint32_t qp_num;
	uint32_t received;
	bool send_pending;
};

struct srq_server {
	const struct srq_opts *o;
	struct rpma_peer *peer;
	struct rpma_srq *srq;
	struct rpma_cq *rcq;
	struct rpma_conn_cfg *cfg;
	struct rpma_ep *ep;
	struct rpma_mr_local *recv_mr;
	struct rpma_mr_local *send_mr;
	uint8_t *rbuf;		/* depth receive slots */
	uint8_t *sbuf;		/* one answer slot per client */
	uint32_t depth;
	struct srq_client *cl;	/* indexed by client id */
	uint32_t connected;
	uint64_t received;
	uint8_t *seen;		/* [client id][value] */
};

static void
usage(FILE *f)
{
	fprintf(f,
"Usage: %s [options] ADDR PORT\n"
"\n"
"Serves -c rpma_ping_pong clients through one shared receive queue: every receive is\n"
"posted to the SRQ (rpma_srq_recv) and every message of every client is taken from the\n"
"SRQ's receive CQ. Each client (rpma_ping_pong --id ID -n M client ADDR PORT, ids 0..N-1)\n"
"sends the values 0..M-1; the server answers each value v with v + 1 on that client's\n"
"connection and checks that every (client id, value) arrives exactly once. Clients may\n"
"connect in any order and at any time before the timeout.\n"
"\n"
"Options:\n"
"  -c, --clients N  clients to serve (1..%d, default 1)\n"
"  -n, --iters M    messages each client sends (default %d); a client announcing\n"
"                   another count is refused\n"
"  -T, --timeout SEC  give up after SEC seconds in all (default %d); alarm(2) ends the\n"
"                   process %d s later if a call blocks inside librpma\n"
"  -v, --verbose    librpma's notices on stderr\n"
"  -h, --help       this text\n"
"\n"
"Prints a line per client connected and done, then 'N clients x M messages ok'.\n"
"Exit status: 0 when every message of every client arrived exactly once, 1 otherwise,\n"
"2 on bad usage.\n",
		rc_prog, RC_MAX_CLIENTS, RC_DEFAULT_ITERS, RC_DEFAULT_TIMEOUT_S,
		RC_ALARM_GRACE_S);
}

static int
parse(int argc, char **argv, struct srq_opts *o)
{
	static const struct option longopts[] = {
		{ "clients", required_argument, NULL, 'c' },
		{ "iters", required_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	int ret;

	o->clients = 1;
	o->iters = RC_DEFAULT_ITERS;
	o->timeout_s = RC_DEFAULT_TIMEOUT_S;
	while ((c = getopt_long(argc, argv, "c:n:T:vh", longopts, NULL)) != -1) {
		ret = rc_parse_opt(c, optarg, &o->timeout_s, &o->verbose, usage);
		if (ret != RC_OPT_NOT_SHARED) {
			if (ret != 0)
				return ret;
			continue;
		}
		switch (c) {
		case 'c':
			if (rc_parse_u32("-c", optarg, 1, RC_MAX_CLIENTS, &o->clients) != 0)
				return RC_EXIT_USAGE;
			break;
		case 'n':
			if (rc_parse_u32("-n", optarg, 1, RC_MAX_ITERS, &o->iters) != 0)
				return RC_EXIT_USAGE;
			break;
		default:
			return rc_usage_error("unknown option");
		}
	}
	if (argc - optind != 2)
		return rc_usage_error("want ADDR PORT");
	o->addr = argv[optind];
	o->port = argv[optind + 1];
	return 0;
}

static int
post_slot(struct srq_server *s, uint32_t slot)
{
	int ret = rpma_srq_recv(s->srq, s->recv_mr, (size_t)slot * RC_MSG_SIZE, RC_MSG_SIZE,
				(const void *)(uintptr_t)slot);

	return ret != 0 ? rc_rpma_err("rpma_srq_recv", ret) : 0;
}

/* Accept one client: its hello names its id and count; refuse what does not fit. */
static int
accept_client(struct srq_server *s)
{
	struct rpma_conn_private_data pd;
	struct rpma_conn_req *req = NULL;
	struct srq_client *c;
	struct rc_hello h;
	int ret;

	if (rc_next_conn_req(s->ep, s->cfg, &req) != 0)
		return -1;
	ret = rpma_conn_req_get_private_data(req, &pd);
	if (ret != 0 || rc_hello_get(&pd, &h) != 0) {
		if (ret != 0)
			rc_rpma_err("rpma_conn_req_get_private_data", ret);
		(void)rpma_conn_req_delete(&req);
		return -1;
	}
	if (h.id >= s->o->clients || s->cl[h.id].conn != NULL || h.count != s->o->iters) {
		rc_err("refusing client %" PRIu32 " announcing %" PRIu32 " messages: want ids "
		       "0..%" PRIu32 " once each, %" PRIu32 " messages", h.id, h.count,
		       s->o->clients - 1, s->o->iters);
		(void)rpma_conn_req_delete(&req);
		return -1;
	}
	c = &s->cl[h.id];
	ret = rpma_conn_req_connect(&req, NULL, &c->conn);
	if (ret != 0)
		return rc_rpma_err("rpma_conn_req_connect (accept)", ret);
	/* Known before the first message can be taken from the SRQ's CQ. */
	ret = rpma_conn_get_qp_num(c->conn, &c->qp_num);
	if (ret == 0)
		ret = rpma_conn_get_cq(c->conn, &c->cq);
	if (ret != 0) {
		rc_rpma_err("rpma_conn_get_qp_num/get_cq", ret);
		rc_conn_abort(&c->conn);
		return -1;
	}
	if (rc_conn_expect(c->conn, RPMA_CONN_ESTABLISHED) != 0) {
		rc_conn_abort(&c->conn);
		return -1;
	}
	s->connected++;
	rc_step("client %" PRIu32 " connected (qp 0x%" PRIx32 ", %" PRIu32 " of %" PRIu32 ")",
		h.id, c->qp_num, s->connected, s->o->clients);
	return 0;
}

/* The previous answer to c must have completed before its slot is written again. */
static int
reap_send(struct srq_client *c)
{
	struct ibv_wc wc;

	if (!c->send_pending)
		return 0;
	if (rc_cq_take(c->cq, &wc, 1, "an answer's send completion") != 1 ||
	    rc_wc_check(&wc, IBV_WC_SEND, "answer") != 0)
		return -1;
	c->send_pending = false;
	return 0;
}

static struct srq_client *
client_of_qp(struct srq_server *s, uint32_t qp_num, uint32_t *id)
{
	uint32_t i;

	for (i = 0; i < s->o->clients; i++) {
		if (s->cl[i].conn != NULL && s->cl[i].qp_num == qp_num) {
			*id = i;
			return &s->cl[i];
		}
	}
	rc_err("message on qp 0x%" PRIx32 ", which is no client's", qp_num);
	return NULL;
}

/* One receive completion from the SRQ's CQ: check, record, repost, answer. */
static int
handle_recv(struct srq_server *s, const struct ibv_wc *wc)
{
	uint32_t slot = (uint32_t)wc->wr_id;
	struct srq_client *c;
	struct rc_msg m;
	uint8_t *seen;
	uint32_t id;
	int ret;

	if (rc_wc_check(wc, IBV_WC_RECV, "SRQ receive") != 0)
		return -1;
	if (slot >= s->depth || wc->byte_len != RC_MSG_SIZE) {
		rc_err("SRQ receive: wr_id %" PRIu64 ", %" PRIu32 " bytes", wc->wr_id,
		       wc->byte_len);
		return -1;
	}
	c = client_of_qp(s, wc->qp_num, &id);
	if (c == NULL || rc_msg_get(s->rbuf + (size_t)slot * RC_MSG_SIZE, &m) != 0)
		return -1;
	if (m.id != id || m.value >= s->o->iters) {
		rc_err("client %" PRIu32 " sent id %" PRIu32 " value %" PRIu64 ", want id %"
		       PRIu32 " and a value below %" PRIu32, id, m.id, m.value, id, s->o->iters);
		return -1;
	}
	seen = &s->seen[(size_t)id * s->o->iters + m.value];
	if (*seen != 0) {
		rc_err("client %" PRIu32 " value %" PRIu64 " arrived twice", id, m.value);
		return -1;
	}
	*seen = 1;
	c->received++;
	s->received++;
	if (post_slot(s, slot) != 0 || reap_send(c) != 0)
		return -1;
	rc_msg_put(s->sbuf + (size_t)id * RC_MSG_SIZE, id, m.value + 1);
	ret = rpma_send(c->conn, s->send_mr, (size_t)id * RC_MSG_SIZE, RC_MSG_SIZE,
			RPMA_F_COMPLETION_ALWAYS, NULL);
	if (ret != 0)
		return rc_rpma_err("rpma_send", ret);
	c->send_pending = true;
	if (c->received == s->o->iters)
		rc_step("client %" PRIu32 ": %" PRIu32 " messages ok", id, c->received);
	return 0;
}

/* Take what the SRQ's CQ holds; the number taken, or -1. */
static int
drain_rcq(struct srq_server *s)
{
	struct ibv_wc wc[RCQ_BATCH];
	int n = 0;
	int i;
	int ret = rpma_cq_get_wc(s->rcq, RCQ_BATCH, wc, &n);

	if (ret == RPMA_E_NO_COMPLETION)
		return 0;
	if (ret != 0)
		return rc_rpma_err("rpma_cq_get_wc (SRQ)", ret);
	for (i = 0; i < n; i++) {
		if (handle_recv(s, &wc[i]) != 0)
			return -1;
	}
	return n;
}

/* Until every client connected and sent everything: new clients and messages, as they come. */
static int
serve(struct srq_server *s)
{
	uint64_t total = (uint64_t)s->o->clients * s->o->iters;
	struct pollfd p[2] = { { .events = POLLIN }, { .events = POLLIN } };
	int ret;

	ret = rpma_ep_get_fd(s->ep, &p[POLL_EP].fd);
	if (ret == 0)
		ret = rpma_cq_get_fd(s->rcq, &p[POLL_RCQ].fd);
	if (ret != 0)
		return rc_rpma_err("rpma_ep_get_fd/rpma_cq_get_fd", ret);

	while (s->received < total || s->connected < s->o->clients) {
		int n = drain_rcq(s);

		if (n < 0)
			return -1;
		if (n > 0)
			continue;
		/* No more clients to come: stop watching the endpoint. */
		if (s->connected == s->o->clients)
			p[POLL_EP].fd = -1;
		n = poll(p, 2, rc_remaining_ms());
		if (n == 0) {
			rc_err("timeout: %" PRIu32 " of %" PRIu32 " clients connected, %" PRIu64
			       " of %" PRIu64 " messages", s->connected, s->o->clients, s->received,
			       total);
			return -1;
		}
		if (n < 0)
			continue;	/* EINTR; the deadline still holds */
		if ((p[POLL_EP].revents & POLLIN) != 0 && accept_client(s) != 0)
			return -1;
		if ((p[POLL_RCQ].revents & POLLIN) != 0) {
			/* Acknowledges the event and re-arms; the next drain finds the rest. */
			ret = rpma_cq_wait(s->rcq);
			if (ret != 0)
				return rc_rpma_err("rpma_cq_wait (SRQ)", ret);
		}
	}
	return 0;
}

/* Every (client, value) exactly once: duplicates failed on arrival; look for holes. */
static int
check_seen(const struct srq_server *s)
{
	uint64_t i;
	uint64_t total = (uint64_t)s->o->clients * s->o->iters;

	for (i = 0; i < total; i++) {
		if (s->seen[i] == 0) {
			rc_err("client %" PRIu64 " value %" PRIu64 " never arrived",
			       i / s->o->iters, i % s->o->iters);
			return -1;
		}
	}
	return 0;
}

/* Wait for the last answers and each client's disconnection; deletes every connection. */
static int
finish_clients(struct srq_server *s, bool ok)
{
	uint32_t i;
	int rc = ok ? 0 : -1;

	for (i = 0; i < s->o->clients; i++) {
		struct srq_client *c = &s->cl[i];

		if (c->conn == NULL)
			continue;
		if (rc != 0) {
			rc_conn_abort(&c->conn);
			continue;
		}
		if (reap_send(c) != 0 || rc_disconnect_after_peer(&c->conn) != 0) {
			rc = -1;
			if (c->conn != NULL)
				rc_conn_abort(&c->conn);
		}
	}
	if (rc == 0)
		rc_step("all %" PRIu32 " clients disconnected", s->o->clients);
	return rc;
}

/* Everything before the first client: SRQ, its CQ, the receives, the endpoint. */
static int
setup(struct srq_server *s)
{
	struct rpma_srq_cfg *scfg = NULL;
	uint32_t i;
	int ret;

	s->depth = s->o->clients * SRQ_PER_CLIENT;
	s->rbuf = rc_alloc((size_t)s->depth * RC_MSG_SIZE);
	s->sbuf = rc_alloc((size_t)s->o->clients * RC_MSG_SIZE);
	s->cl = calloc(s->o->clients, sizeof(*s->cl));
	s->seen = calloc((size_t)s->o->clients * s->o->iters, 1);
	if (s->rbuf == NULL || s->sbuf == NULL || s->cl == NULL || s->seen == NULL) {
		rc_err("out of memory");
		return -1;
	}
	if (rc_peer_new(s->o->addr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &s->peer) != 0)
		return -1;

	ret = rpma_srq_cfg_new(&scfg);
	if (ret != 0)
		return rc_rpma_err("rpma_srq_cfg_new", ret);
	ret = rpma_srq_cfg_set_rq_size(scfg, s->depth);
	/* A receive CQ of the SRQ's own: rpma_srq_get_rcq returns it. */
	if (ret == 0)
		ret = rpma_srq_cfg_set_rcq_size(scfg, s->depth);
	if (ret == 0)
		ret = rpma_srq_new(s->peer, scfg, &s->srq);
	(void)rpma_srq_cfg_delete(&scfg);
	if (ret != 0)
		return rc_rpma_err("rpma_srq_new", ret);
	ret = rpma_srq_get_rcq(s->srq, &s->rcq);
	if (ret != 0 || s->rcq == NULL) {
		rc_err("rpma_srq_get_rcq: %s", ret != 0 ? rpma_err_2str(ret) : "no receive CQ");
		return -1;
	}
	rc_step("shared RQ: %" PRIu32 " receives, its own receive CQ", s->depth);

	ret = rpma_conn_cfg_new(&s->cfg);
	if (ret == 0)
		ret = rpma_conn_cfg_set_srq(s->cfg, s->srq);
	if (ret != 0)
		return rc_rpma_err("rpma_conn_cfg_new/set_srq", ret);

	ret = rpma_mr_reg(s->peer, s->rbuf, (size_t)s->depth * RC_MSG_SIZE, RPMA_MR_USAGE_RECV,
			  &s->recv_mr);
	if (ret != 0)
		return rc_rpma_err("rpma_mr_reg (receives)", ret);
	ret = rpma_mr_reg(s->peer, s->sbuf, (size_t)s->o->clients * RC_MSG_SIZE,
			  RPMA_MR_USAGE_SEND, &s->send_mr);
	if (ret != 0)
		return rc_rpma_err("rpma_mr_reg (answers)", ret);
	/* Every receive is in place before any client can connect. */
	for (i = 0; i < s->depth; i++) {
		if (post_slot(s, i) != 0)
			return -1;
	}

	ret = rpma_ep_listen(s->peer, s->o->addr, s->o->port, &s->ep);
	if (ret != 0)
		return rc_rpma_err("rpma_ep_listen", ret);
	rc_step("listening on %s:%s for %" PRIu32 " clients", s->o->addr, s->o->port,
		s->o->clients);
	return 0;
}

/* Deletes what setup made, in reverse; NULL members are skipped by librpma. */
static int
teardown(struct srq_server *s)
{
	int rc = 0;
	int ret;

	if (s->ep != NULL && (ret = rpma_ep_shutdown(&s->ep)) != 0)
		rc = rc_rpma_err("rpma_ep_shutdown", ret);
	if (s->send_mr != NULL && (ret = rpma_mr_dereg(&s->send_mr)) != 0)
		rc = rc_rpma_err("rpma_mr_dereg", ret);
	if (s->recv_mr != NULL && (ret = rpma_mr_dereg(&s->recv_mr)) != 0)
		rc = rc_rpma_err("rpma_mr_dereg", ret);
	if (s->cfg != NULL && (ret = rpma_conn_cfg_delete(&s->cfg)) != 0)
		rc = rc_rpma_err("rpma_conn_cfg_delete", ret);
	if (s->srq != NULL && (ret = rpma_srq_delete(&s->srq)) != 0)
		rc = rc_rpma_err("rpma_srq_delete", ret);
	if (s->peer != NULL && (ret = rpma_peer_delete(&s->peer)) != 0)
		rc = rc_rpma_err("rpma_peer_delete", ret);
	free(s->seen);
	free(s->cl);
	free(s->sbuf);
	free(s->rbuf);
	return rc;
}

int
main(int argc, char **argv)
{
	struct srq_opts o = { 0 };
	struct srq_server s = { .o = &o };
	int rc;
	int ret;

	rc_prog = argv[0];
	ret = parse(argc, argv, &o);
	if (ret != 0)
		return ret;
	rc_start(o.timeout_s, o.verbose);

	rc = setup(&s);
	if (rc == 0)
		rc = serve(&s);
	if (rc == 0)
		rc = check_seen(&s);
	if (s.cl != NULL && finish_clients(&s, rc == 0) != 0)
		rc = -1;
	if (teardown(&s) != 0)
		rc = -1;
	if (rc != 0)
		return RC_EXIT_FAIL;
	rc_step("%" PRIu32 " clients x %" PRIu32 " messages ok", o.clients, o.iters);
	return RC_EXIT_OK;
}
