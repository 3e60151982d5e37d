/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * rpma_ping_pong: messages over one librpma connection (rpma_send, rpma_recv,
 * rpma_cq_wait, rpma_cq_get_wc). The client sends the values 0..N-1, each after the answer
 * to the previous one; the server answers each value v with v + 1. Both check every value
 * and the client's id in every message. The client announces its id and N in the private
 * data of its connection request, so the server needs neither option; rpma_srq_server
 * speaks the same protocol to many clients at once.
 *
 * One receive is posted at a time on each side, always before the message it is for can
 * be sent: before connecting for the first one, then before each send.
 */

#include <endian.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpma_common.h"

/* Completions taken at once: one send and one receive may be ready. */
#define CQ_BATCH	2

enum {
	OPT_ID = 256,
};

struct pp_opts {
	bool server;
	const char *addr;
	const char *port;
	uint32_t iters;
	uint32_t id;
	uint32_t timeout_s;
	bool verbose;
};

/* One side's progress: completions counted, the value the next message must carry. */
struct pp_state {
	struct rpma_cq *cq;
	const uint8_t *rbuf;
	uint32_t id;
	uint64_t expect;
	uint32_t sends;
	uint32_t recvs;
};

static void
usage(FILE *f)
{
	fprintf(f,
"Usage: %s [options] server ADDR PORT   answer one client on ADDR:PORT\n"
"       %s [options] client ADDR PORT   ping the server at ADDR:PORT\n"
"\n"
"Messages ping-pong over one librpma connection: the client sends the values 0..N-1,\n"
"each after the answer to the previous one; the server answers each value v with v + 1.\n"
"Both sides check every value. The client's hello (its id and N) travels in the\n"
"connection's private data. ADDR is the server's address on both sides. The client also\n"
"serves rpma_srq_server (give each client its own --id).\n"
"\n"
"Options:\n"
"  -n, --iters N  round trips (client only; default %d)\n"
"  --id ID        the client id carried by every message (client only; default 0)\n"
"  -T, --timeout SEC  give up after SEC seconds in all (default %d); alarm(2) ends the\n"
"                 process %d s later if a call blocks inside librpma\n"
"  -v, --verbose  librpma's notices on stderr\n"
"  -h, --help     this text\n"
"\n"
"Both sides end with the line 'N round trips ok'. Exit status: 0 when every message\n"
"arrived and checked, 1 on any failure, 2 on bad usage.\n",
		rc_prog, rc_prog, RC_DEFAULT_ITERS, RC_DEFAULT_TIMEOUT_S, RC_ALARM_GRACE_S);
}

static int
parse(int argc, char **argv, struct pp_opts *o)
{
	static const struct option longopts[] = {
		{ "iters", required_argument, NULL, 'n' },
		{ "id", required_argument, NULL, OPT_ID },
		{ "timeout", required_argument, NULL, 'T' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	int ret;

	o->iters = RC_DEFAULT_ITERS;
	o->timeout_s = RC_DEFAULT_TIMEOUT_S;
	while ((c = getopt_long(argc, argv, "n:T:vh", longopts, NULL)) != -1) {
		ret = rc_parse_opt(c, optarg, &o->timeout_s, &o->verbose, usage);
		if (ret != RC_OPT_NOT_SHARED) {
			if (ret != 0)
				return ret;
			continue;
		}
		switch (c) {
		case 'n':
			if (rc_parse_u32("-n", optarg, 1, RC_MAX_ITERS, &o->iters) != 0)
				return RC_EXIT_USAGE;
			break;
		case OPT_ID:
			if (rc_parse_u32("--id", optarg, 0, RC_MAX_CLIENTS - 1, &o->id) != 0)
				return RC_EXIT_USAGE;
			break;
		default:
			return rc_usage_error("unknown option");
		}
	}
	if (rc_parse_role(argc, argv, optind, &o->server, &o->addr, &o->port) != 0)
		return RC_EXIT_USAGE;
	return 0;
}

/*
 * Take completions until at least sends sends and recvs receives have completed. Each
 * received message is checked as it is taken: the next receive reuses its buffer.
 */
static int
pump(struct pp_state *st, uint32_t sends, uint32_t recvs)
{
	while (st->sends < sends || st->recvs < recvs) {
		struct ibv_wc wc[CQ_BATCH];
		int n = rc_cq_take(st->cq, wc, CQ_BATCH, "a completion");
		int i;

		if (n < 0)
			return -1;
		for (i = 0; i < n; i++) {
			struct rc_msg m;

			if (wc[i].status == IBV_WC_SUCCESS && wc[i].opcode == IBV_WC_SEND) {
				st->sends++;
				continue;
			}
			if (rc_wc_check(&wc[i], IBV_WC_RECV, "message") != 0)
				return -1;
			if (wc[i].byte_len != RC_MSG_SIZE) {
				rc_err("message %" PRIu32 ": %" PRIu32 " bytes, want %u", st->recvs,
				       wc[i].byte_len, RC_MSG_SIZE);
				return -1;
			}
			if (rc_msg_get(st->rbuf, &m) != 0)
				return -1;
			if (m.id != st->id || m.value != st->expect) {
				rc_err("message %" PRIu32 ": id %" PRIu32 " value %" PRIu64
				       ", want id %" PRIu32 " value %" PRIu64, st->recvs, m.id,
				       m.value, st->id, st->expect);
				return -1;
			}
			st->expect++;
			st->recvs++;
		}
	}
	return 0;
}

static int
send_value(struct rpma_conn *conn, struct rpma_mr_local *send_mr, uint8_t *sbuf,
	   uint32_t id, uint64_t value)
{
	int ret;

	rc_msg_put(sbuf, id, value);
	ret = rpma_send(conn, send_mr, 0, RC_MSG_SIZE, RPMA_F_COMPLETION_ALWAYS, NULL);
	return ret != 0 ? rc_rpma_err("rpma_send", ret) : 0;
}

static int
post_recv(struct rpma_conn *conn, struct rpma_mr_local *recv_mr)
{
	int ret = rpma_recv(conn, recv_mr, 0, RC_MSG_SIZE, NULL);

	return ret != 0 ? rc_rpma_err("rpma_recv", ret) : 0;
}

static int
conn_cq(struct rpma_conn *conn, struct pp_state *st)
{
	int ret = rpma_conn_get_cq(conn, &st->cq);

	return ret != 0 ? rc_rpma_err("rpma_conn_get_cq", ret) : 0;
}

static int
serve(const struct pp_opts *o, struct rpma_peer *peer, struct rpma_mr_local *send_mr,
      uint8_t *sbuf, struct rpma_mr_local *recv_mr, struct pp_state *st)
{
	struct rpma_conn_private_data pd;
	struct rpma_conn_req *req = NULL;
	struct rpma_conn *conn = NULL;
	struct rpma_ep *ep = NULL;
	struct rc_hello h;
	uint32_t i;
	int rc = -1;
	int ret;

	ret = rpma_ep_listen(peer, o->addr, o->port, &ep);
	if (ret != 0)
		return rc_rpma_err("rpma_ep_listen", ret);
	rc_step("listening on %s:%s", o->addr, o->port);
	if (rc_next_conn_req(ep, NULL, &req) != 0)
		goto out;
	ret = rpma_conn_req_get_private_data(req, &pd);
	if (ret != 0 || rc_hello_get(&pd, &h) != 0) {
		if (ret != 0)
			rc_rpma_err("rpma_conn_req_get_private_data", ret);
		(void)rpma_conn_req_delete(&req);
		goto out;
	}
	rc_step("client %" PRIu32 " will send %" PRIu32 " messages", h.id, h.count);
	/* The client's first message may follow the accept at once. */
	ret = rpma_conn_req_recv(req, recv_mr, 0, RC_MSG_SIZE, NULL);
	if (ret != 0) {
		rc_rpma_err("rpma_conn_req_recv", ret);
		(void)rpma_conn_req_delete(&req);
		goto out;
	}
	ret = rpma_conn_req_connect(&req, NULL, &conn);
	if (ret != 0) {
		rc_rpma_err("rpma_conn_req_connect (accept)", ret);
		goto out;
	}
	if (rc_conn_expect(conn, RPMA_CONN_ESTABLISHED) != 0 || conn_cq(conn, st) != 0) {
		rc_conn_abort(&conn);
		goto out;
	}
	rc_step("connection established");

	st->id = h.id;
	st->expect = 0;
	for (i = 0; i < h.count; i++) {
		/* Message i, and the send of answer i - 1 (its buffer is reused). */
		if (pump(st, i, i + 1) != 0)
			break;
		if (i + 1 < h.count && post_recv(conn, recv_mr) != 0)
			break;
		if (send_value(conn, send_mr, sbuf, h.id, (uint64_t)i + 1) != 0)
			break;
	}
	if (i == h.count && pump(st, h.count, h.count) == 0) {
		rc_step("%" PRIu32 " round trips ok", h.count);
		rc = 0;
	}
	if (rc != 0)
		rc_conn_abort(&conn);
	else if (rc_disconnect_after_peer(&conn) == 0)
		rc_step("connection closed by the client");
	else
		rc = -1;
out:
	ret = rpma_ep_shutdown(&ep);
	if (ret != 0)
		rc = rc_rpma_err("rpma_ep_shutdown", ret);
	return rc;
}

static int
ping(const struct pp_opts *o, struct rpma_peer *peer, struct rpma_mr_local *send_mr,
     uint8_t *sbuf, struct rpma_mr_local *recv_mr, struct pp_state *st)
{
	struct rc_hello h = {
		.magic = htole32(RC_HELLO_MAGIC),
		.id = htole32(o->id),
		.count = htole32(o->iters),
	};
	struct rpma_conn_private_data pd = { .ptr = &h, .len = sizeof(h) };
	struct rpma_conn_cfg *cfg = NULL;
	struct rpma_conn *conn = NULL;
	uint32_t i;
	int rc = -1;
	int ret;

	ret = rpma_conn_cfg_new(&cfg);
	if (ret != 0)
		return rc_rpma_err("rpma_conn_cfg_new", ret);
	ret = rpma_conn_cfg_set_timeout(cfg, RC_RESOLVE_TIMEOUT_MS);
	if (ret != 0) {
		rc_rpma_err("rpma_conn_cfg_set_timeout", ret);
		goto out;
	}
	/* The receive for the first answer is posted before connecting. */
	if (rc_client_connect(peer, o->addr, o->port, cfg, &pd, recv_mr, 0, RC_MSG_SIZE,
			      &conn) != 0)
		goto out;
	if (conn_cq(conn, st) != 0) {
		rc_conn_abort(&conn);
		goto out;
	}
	rc_step("connected to %s:%s as client %" PRIu32, o->addr, o->port, o->id);

	st->id = o->id;
	st->expect = 1;
	for (i = 0; i < o->iters; i++) {
		if (i > 0 && post_recv(conn, recv_mr) != 0)
			break;
		if (send_value(conn, send_mr, sbuf, o->id, i) != 0)
			break;
		if (pump(st, i + 1, i + 1) != 0)
			break;
	}
	if (i == o->iters) {
		rc_step("%" PRIu32 " round trips ok", o->iters);
		rc = 0;
	}
	if (rc != 0)
		rc_conn_abort(&conn);
	else if (rc_disconnect_first(&conn) == 0)
		rc_step("disconnected");
	else
		rc = -1;
out:
	ret = rpma_conn_cfg_delete(&cfg);
	if (ret != 0)
		rc = rc_rpma_err("rpma_conn_cfg_delete", ret);
	return rc;
}

int
main(int argc, char **argv)
{
	struct pp_opts o = { 0 };
	struct pp_state st = { 0 };
	struct rpma_mr_local *send_mr = NULL;
	struct rpma_mr_local *recv_mr = NULL;
	struct rpma_peer *peer = NULL;
	uint8_t *buf;
	int rc = -1;
	int ret;

	rc_prog = argv[0];
	ret = parse(argc, argv, &o);
	if (ret != 0)
		return ret;
	rc_start(o.timeout_s, o.verbose);

	/* Send buffer, then receive buffer. */
	buf = rc_alloc(2 * RC_MSG_SIZE);
	if (buf == NULL)
		return RC_EXIT_FAIL;
	st.rbuf = buf + RC_MSG_SIZE;
	if (rc_peer_new(o.addr, o.server ? RPMA_UTIL_IBV_CONTEXT_LOCAL :
			RPMA_UTIL_IBV_CONTEXT_REMOTE, &peer) != 0)
		goto out_free;
	ret = rpma_mr_reg(peer, buf, RC_MSG_SIZE, RPMA_MR_USAGE_SEND, &send_mr);
	if (ret != 0) {
		rc_rpma_err("rpma_mr_reg (send)", ret);
		goto out_peer;
	}
	ret = rpma_mr_reg(peer, buf + RC_MSG_SIZE, RC_MSG_SIZE, RPMA_MR_USAGE_RECV, &recv_mr);
	if (ret != 0) {
		rc_rpma_err("rpma_mr_reg (recv)", ret);
		goto out_send_mr;
	}

	rc = o.server ? serve(&o, peer, send_mr, buf, recv_mr, &st) :
			ping(&o, peer, send_mr, buf, recv_mr, &st);

	ret = rpma_mr_dereg(&recv_mr);
	if (ret != 0)
		rc = rc_rpma_err("rpma_mr_dereg", ret);
out_send_mr:
	ret = rpma_mr_dereg(&send_mr);
	if (ret != 0)
		rc = rc_rpma_err("rpma_mr_dereg", ret);
out_peer:
	ret = rpma_peer_delete(&peer);
	if (ret != 0)
		rc = rc_rpma_err("rpma_peer_delete", ret);
out_free:
	free(buf);
	return rc == 0 ? RC_EXIT_OK : RC_EXIT_FAIL;
}
