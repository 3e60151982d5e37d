/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * rpma_connection: one librpma connection and its private data, both ways. The client's
 * string travels in the connection request (rdma_connect's private data, read by the
 * server from the request before it accepts), the server's in the reply (rdma_accept's,
 * read by the client from the ESTABLISHED event). The client then disconnects and the
 * server waits for that.
 */

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpma_common.h"

/* At most what a REQ carries after rdma_cm's header (56 bytes), terminator included. */
#define PDATA_MAX	56
#define DEFAULT_SERVER_STR	"rpma_connection server"
#define DEFAULT_CLIENT_STR	"rpma_connection client"

enum {
	OPT_SEND = 256,
	OPT_EXPECT,
};

struct conn_opts {
	bool server;
	const char *addr;
	const char *port;
	const char *send;	/* string this side sends */
	const char *expect;	/* string it wants from the peer */
	uint32_t timeout_s;
	bool verbose;
};

static void
usage(FILE *f)
{
	fprintf(f,
"Usage: %s [options] server ADDR PORT   listen on ADDR:PORT, accept one connection\n"
"       %s [options] client ADDR PORT   connect to the server at ADDR:PORT\n"
"\n"
"One librpma connection with private data both ways. The client sends its string in\n"
"the connection request; the server checks it before it accepts and answers with its\n"
"own, which the client checks once the connection is established. The client then\n"
"disconnects; the server waits for the disconnection. Each step prints one line.\n"
"ADDR is the server's address (an IP address of an RDMA device) on both sides.\n"
"\n"
"Options:\n"
"  --send STR     the string this side sends (default: '%s' from the\n"
"                 server, '%s' from the client; at most %d bytes)\n"
"  --expect STR   the string wanted from the peer (default: the peer's default)\n"
"  -T, --timeout SEC  give up after SEC seconds in all (default %d); alarm(2) ends the\n"
"                 process %d s later if a call blocks inside librpma\n"
"  -v, --verbose  librpma's notices on stderr\n"
"  -h, --help     this text\n"
"\n"
"Exit status: 0 when every check passed, 1 on any failure (a mismatch: the server\n"
"rejects the connection), 2 on bad usage.\n",
		rc_prog, rc_prog, DEFAULT_SERVER_STR, DEFAULT_CLIENT_STR, PDATA_MAX - 1,
		RC_DEFAULT_TIMEOUT_S, RC_ALARM_GRACE_S);
}

static int
parse(int argc, char **argv, struct conn_opts *o)
{
	static const struct option longopts[] = {
		{ "send", required_argument, NULL, OPT_SEND },
		{ "expect", required_argument, NULL, OPT_EXPECT },
		{ "timeout", required_argument, NULL, 'T' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	int ret;

	o->timeout_s = RC_DEFAULT_TIMEOUT_S;
	while ((c = getopt_long(argc, argv, "T:vh", longopts, NULL)) != -1) {
		ret = rc_parse_opt(c, optarg, &o->timeout_s, &o->verbose, usage);
		if (ret != RC_OPT_NOT_SHARED) {
			if (ret != 0)
				return ret;
			continue;
		}
		switch (c) {
		case OPT_SEND:
			o->send = optarg;
			break;
		case OPT_EXPECT:
			o->expect = optarg;
			break;
		default:
			return rc_usage_error("unknown option");
		}
	}
	if (rc_parse_role(argc, argv, optind, &o->server, &o->addr, &o->port) != 0)
		return RC_EXIT_USAGE;
	if (o->send == NULL)
		o->send = o->server ? DEFAULT_SERVER_STR : DEFAULT_CLIENT_STR;
	if (o->expect == NULL)
		o->expect = o->server ? DEFAULT_CLIENT_STR : DEFAULT_SERVER_STR;
	if (strlen(o->send) >= PDATA_MAX)
		return rc_usage_error("--send: longer than %d bytes", PDATA_MAX - 1);
	return 0;
}

/*
 * The received length is the CM message's private-data size, which may exceed what the
 * peer passed: the string must be there with its terminator.
 */
static int
check_pdata(const struct rpma_conn_private_data *pd, const char *want, const char *from)
{
	size_t n = strlen(want) + 1;

	if (pd->ptr == NULL || pd->len < n || memcmp(pd->ptr, want, n) != 0) {
		rc_err("%s private data: '%.*s' (%u bytes), want '%s'", from,
		       pd->ptr == NULL ? 0 : (int)strnlen(pd->ptr, pd->len), (const char *)pd->ptr,
		       pd->ptr == NULL ? 0u : (unsigned int)pd->len, want);
		return -1;
	}
	rc_step("%s private data '%s' ok", from, want);
	return 0;
}

static int
run_server(const struct conn_opts *o, struct rpma_peer *peer,
	   struct rpma_conn_private_data *mine)
{
	struct rpma_conn_private_data theirs;
	struct rpma_conn_req *req = NULL;
	struct rpma_conn *conn = NULL;
	struct rpma_ep *ep = NULL;
	int rc = -1;
	int ret;

	ret = rpma_ep_listen(peer, o->addr, o->port, &ep);
	if (ret != 0)
		return rc_rpma_err("rpma_ep_listen", ret);
	rc_step("listening on %s:%s", o->addr, o->port);

	if (rc_next_conn_req(ep, NULL, &req) != 0)
		goto out;
	rc_step("connection request received");
	ret = rpma_conn_req_get_private_data(req, &theirs);
	if (ret != 0) {
		rc_rpma_err("rpma_conn_req_get_private_data", ret);
		(void)rpma_conn_req_delete(&req);
		goto out;
	}
	if (check_pdata(&theirs, o->expect, "client") != 0) {
		/* rpma_conn_req_delete rejects the request. */
		(void)rpma_conn_req_delete(&req);
		rc_step("connection rejected");
		goto out;
	}
	ret = rpma_conn_req_connect(&req, mine, &conn);
	if (ret != 0) {
		rc_rpma_err("rpma_conn_req_connect (accept)", ret);
		goto out;
	}
	rc_step("connection accepted with private data '%s'", o->send);
	if (rc_conn_expect(conn, RPMA_CONN_ESTABLISHED) != 0) {
		rc_conn_abort(&conn);
		goto out;
	}
	rc_step("connection established");
	if (rc_disconnect_after_peer(&conn) != 0)
		goto out;
	rc_step("connection closed by the client");
	rc = 0;
out:
	ret = rpma_ep_shutdown(&ep);
	if (ret != 0)
		rc = rc_rpma_err("rpma_ep_shutdown", ret);
	return rc;
}

static int
run_client(const struct conn_opts *o, struct rpma_peer *peer,
	   struct rpma_conn_private_data *mine)
{
	struct rpma_conn_private_data theirs;
	struct rpma_conn_cfg *cfg = NULL;
	struct rpma_conn *conn = NULL;
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
	if (rc_client_connect(peer, o->addr, o->port, cfg, mine, NULL, 0, 0, &conn) != 0)
		goto out;
	rc_step("connected to %s:%s with private data '%s'", o->addr, o->port, o->send);
	ret = rpma_conn_get_private_data(conn, &theirs);
	if (ret != 0) {
		rc_rpma_err("rpma_conn_get_private_data", ret);
		rc_conn_abort(&conn);
		goto out;
	}
	if (check_pdata(&theirs, o->expect, "server") != 0) {
		(void)rc_disconnect_first(&conn);
		goto out;
	}
	if (rc_disconnect_first(&conn) != 0)
		goto out;
	rc_step("disconnected");
	rc = 0;
out:
	ret = rpma_conn_cfg_delete(&cfg);
	if (ret != 0)
		rc = rc_rpma_err("rpma_conn_cfg_delete", ret);
	return rc;
}

int
main(int argc, char **argv)
{
	struct conn_opts o = { 0 };
	struct rpma_conn_private_data mine;
	struct rpma_peer *peer = NULL;
	char buf[PDATA_MAX] = { 0 };
	int rc;
	int ret;

	rc_prog = argv[0];
	ret = parse(argc, argv, &o);
	if (ret != 0)
		return ret;
	rc_start(o.timeout_s, o.verbose);

	/* The terminator goes on the wire: the peer checks it. */
	memcpy(buf, o.send, strlen(o.send) + 1);
	mine.ptr = buf;
	mine.len = (uint8_t)(strlen(o.send) + 1);

	if (rc_peer_new(o.addr, o.server ? RPMA_UTIL_IBV_CONTEXT_LOCAL :
			RPMA_UTIL_IBV_CONTEXT_REMOTE, &peer) != 0)
		return RC_EXIT_FAIL;
	rc = o.server ? run_server(&o, peer, &mine) : run_client(&o, peer, &mine);
	ret = rpma_peer_delete(&peer);
	if (ret != 0)
		rc = rc_rpma_err("rpma_peer_delete", ret);
	if (rc != 0)
		return RC_EXIT_FAIL;
	rc_step("%s: all checks passed", o.server ? "server" : "client");
	return RC_EXIT_OK;
}
