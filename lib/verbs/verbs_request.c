/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * The control socket: connecting to droced and one request/response round trip, with the
 * descriptors that travel beside each message (droce_shm_proto.h). A context's round trips
 * are serialised by its req_lock, so responses arrive in the order of the requests.
 * Never on the fast path.
 */

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "verbs_loc.h"

const char *
verbs_socket_path(void)
{
	return droce_proto_socket_path();
}

/*
 * Silent by default: a verbs library must not write on the application's stderr, except
 * through verbs_warn() for a mistake whose errno alone would not explain itself.
 */
void
verbs_debug(const char *fmt, ...)
{
	const char *d = getenv(VERBS_DEBUG_ENV);
	va_list ap;

	if (d == NULL || strcmp(d, "1") != 0)
		return;
	fputs("libdroce: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Always printed, like rdma-core's own "libibverbs: Warning" lines. */
void
verbs_warn(const char *fmt, ...)
{
	va_list ap;

	fputs("libdroce: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* A connected SOCK_SEQPACKET socket, or -1 with *err = errno. */
int
verbs_sock_connect(const char *path, int *err)
{
	int s = droce_proto_connect(path);

	if (s < 0) {
		*err = -s;
		return -1;
	}
	return s;
}

static const struct {
	const char *key;
	const char *what;
} limits[DROCE_PROTO_LIMIT_COUNT] = {
#define LIMIT_ROW(NAME, k, w) [DROCE_PROTO_LIMIT_##NAME] = { k, w },
	DROCE_PROTO_LIMIT_LIST(LIMIT_ROW)
#undef LIMIT_ROW
};

/*
 * A request droced refused at one of its [limits]: says which and the key that raises it,
 * once per limit and process (a program probing how many QPs it may have is not flooded).
 */
static void
limit_warn(uint32_t op, uint32_t limit)
{
	static atomic_uint said;

	if (limit == DROCE_PROTO_LIMIT_NONE || limit >= DROCE_PROTO_LIMIT_COUNT ||
	    (atomic_fetch_or(&said, 1u << limit) & (1u << limit)))
		return;
	verbs_warn("droced refused %s: the %s reached its limit; [limits] %s in droced's "
		   "configuration raises it (doc/configuration.md)", droce_proto_op_name(op),
		   limits[limit].what, limits[limit].key);
}

/*
 * Sends req (op set by the caller) with nfds descriptors and receives its response and
 * up to max_rfds descriptors. Returns 0 or a positive errno: the transport's, EPROTO for
 * a response that does not answer this request, or -resp->status (descriptors received
 * with a failed status are closed).
 */
int
verbs_sock_call(int sock, uint32_t seq, struct droce_proto_req *req, const int *fds,
		unsigned int nfds, struct droce_proto_resp *resp, int *rfds,
		unsigned int max_rfds, unsigned int *nrfds)
{
	unsigned int got = 0;
	ssize_t n;
	int ret;

	if (nrfds != NULL)
		*nrfds = 0;
	req->seq = seq;
	ret = droce_proto_send(sock, req, sizeof(*req), fds, nfds);
	if (ret < 0)
		return -ret;
	memset(resp, 0, sizeof(*resp));
	n = droce_proto_recv(sock, resp, sizeof(*resp), rfds, max_rfds, &got);
	if (n < 0)
		return (int)-n;
	if (n == 0)
		return ECONNRESET;	/* droced closed the connection */
	if ((size_t)n < offsetof(struct droce_proto_resp, limit) || resp->op != req->op ||
	    resp->seq != seq || resp->status > 0) {
		while (got > 0)
			close(rfds[--got]);
		return EPROTO;
	}
	if (resp->status != 0) {
		while (got > 0)
			close(rfds[--got]);
		limit_warn(req->op, resp->limit);
		return -resp->status;
	}
	if (nrfds != NULL)
		*nrfds = got;
	else
		while (got > 0)
			close(rfds[--got]);
	return 0;
}

/*
 * With droced gone (verbs_fatal.c) a verb has no one to ask: destroying succeeds, as
 * there is nothing left to tear down but libdroce's own memory (so a program can clean
 * up and exit, as after a NIC's fatal error); everything else fails with EIO.
 */
static int
request_dead(struct verbs_dctx *c, const struct droce_proto_req *req)
{
	verbs_fatal(c);
	switch (req->op) {
	case DROCE_PROTO_OP_DEALLOC_PD:
	case DROCE_PROTO_OP_DEREG_MR:
	case DROCE_PROTO_OP_DESTROY_CQ:
	case DROCE_PROTO_OP_DESTROY_SRQ:
	case DROCE_PROTO_OP_DESTROY_QP:
	case DROCE_PROTO_OP_DESTROY_AH:
		return 0;
	default:
		return EIO;
	}
}

/* The transport's verdict on droced: these mean the other end of the socket is gone. */
static bool
request_lost(int ret)
{
	return ret == ECONNRESET || ret == EPIPE || ret == ENOTCONN;
}

static int
request_call(struct verbs_dctx *c, struct droce_proto_req *req, const int *fds,
	     unsigned int nfds, struct droce_proto_resp *resp, int *rfds, unsigned int max_rfds,
	     unsigned int *nrfds)
{
	int ret;

	if (nrfds != NULL)
		*nrfds = 0;
	if (verbs_dead(c))
		return request_dead(c, req);
	pthread_mutex_lock(&c->req_lock);
	ret = verbs_sock_call(c->sock, ++c->seq, req, fds, nfds, resp, rfds, max_rfds, nrfds);
	pthread_mutex_unlock(&c->req_lock);
	if (request_lost(ret))
		ret = request_dead(c, req);
	if (ret != 0)
		verbs_debug("%s: %s", droce_proto_op_name(req->op), strerror(ret));
	return ret;
}

int
verbs_request_fds(struct verbs_dctx *c, struct droce_proto_req *req,
		  struct droce_proto_resp *resp, int *rfds, unsigned int max_rfds,
		  unsigned int *nrfds)
{
	return request_call(c, req, NULL, 0, resp, rfds, max_rfds, nrfds);
}

/* A round trip on a context's socket that returns no descriptors. */
int
verbs_request(struct verbs_dctx *c, struct droce_proto_req *req, const int *fds,
	      unsigned int nfds, struct droce_proto_resp *resp)
{
	return request_call(c, req, fds, nfds, resp, NULL, 0, NULL);
}
