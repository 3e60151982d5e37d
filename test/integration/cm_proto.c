/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cm_proto: droced's rdma_cm server side driven through its control socket, without
 * librdmacm (droce_shm_proto.h's rdma_cm section spoken by hand). QP numbers are made up:
 * droced's CM never touches a QP, it only carries their numbers.
 *
 *   cm_proto basic IP            one droced: channel, ids, bind/listen rules, bad handles,
 *                                a connection to ourselves, REJ for nobody listening
 *   cm_proto server IP PORT      listen, accept one connection, wait for its DISCONNECTED
 *   cm_proto serve IP PORT       accept connections until killed, destroying each established
 *   cm_proto garbage IP SEED N   N random CM requests on two channels (droced must answer)
 *   cm_proto client IP PORT MODE connect to IP:PORT through droced; MODE: disconnect (then
 *                                DISCONNECTED), hold (wait to be killed), unreach (expect
 *                                ADDR_ERROR), norepeat (expect
 *                                REJECTED status 8), rate:N (N connections, 64 in flight,
 *                                reported per second)
 *
 * DROCE_SOCKET names droced's socket. Prints "ok ..." lines; exit 0 when every check held.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* Header only, nothing linked: rdma-core's ibv_event_type is the oracle for NOTIFY. */
#include <infiniband/verbs.h>

#include "droce_shm.h"
#include "droce_shm_proto.h"
#include "droce_shm_qp_attr.h"

#define EVENT_WAIT_MS	10000
#define FAKE_QPN_SRV	0x000A11
#define FAKE_QPN_CLI	0x000B22
#define RATE_WINDOW	64	/* connections in flight in rate mode */

struct chan {
	int sock;
	int efd;
	uint32_t seq;
	uint32_t token;
};

static int failures;

#define CHECK(cond, ...) do { \
	if (!(cond)) { \
		fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
		fprintf(stderr, __VA_ARGS__); \
		fprintf(stderr, "\n"); \
		failures++; \
	} \
} while (0)

static int
sock_open(void)
{
	const char *path = getenv(DROCE_PROTO_SOCKET_ENV);
	struct sockaddr_un sa;
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s",
		 path != NULL ? path : DROCE_PROTO_SOCKET_DEFAULT);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		perror("cm_proto: connect");
		exit(3);
	}
	return s;
}

/* One request, its response; *fd gets a passed descriptor when there is one. */
static int
call(struct chan *c, struct droce_proto_req *req, struct droce_proto_resp *resp, int *fd)
{
	int fds[DROCE_PROTO_MAX_FDS];
	unsigned int nfds = 0;
	ssize_t n;

	req->seq = ++c->seq;
	if (droce_proto_send(c->sock, req, sizeof(*req), NULL, 0) != 0) {
		fprintf(stderr, "cm_proto: send failed\n");
		exit(1);
	}
	memset(resp, 0, sizeof(*resp));
	n = droce_proto_recv(c->sock, resp, sizeof(*resp), fds, DROCE_PROTO_MAX_FDS, &nfds);
	if (n <= 0 || resp->seq != req->seq) {
		fprintf(stderr, "cm_proto: no response (%zd)\n", n);
		exit(1);
	}
	if (fd != NULL)
		*fd = nfds > 0 ? fds[0] : -1;
	else
		while (nfds > 0)
			close(fds[--nfds]);
	return resp->status;
}

static void
req_init(struct droce_proto_req *req, uint32_t op)
{
	memset(req, 0, sizeof(*req));
	req->op = op;
}

static void
chan_open(struct chan *c)
{
	struct droce_proto_req req;
	struct droce_proto_resp resp;
	int rc;

	memset(c, 0, sizeof(*c));
	c->sock = sock_open();
	req_init(&req, DROCE_PROTO_OP_CM_OPEN);
	req.cm_open.version = DROCE_PROTO_CM_VERSION;
	rc = call(c, &req, &resp, &c->efd);
	if (rc != 0 || c->efd < 0) {
		fprintf(stderr, "cm_proto: CM_OPEN: %d\n", rc);
		exit(1);
	}
	c->token = resp.cm_open.token;
}

static int
create_id(struct chan *c, uint32_t ps, uint32_t qpt, uint64_t uctx, uint32_t *id)
{
	struct droce_proto_req req;
	struct droce_proto_resp resp;
	int rc;

	req_init(&req, DROCE_PROTO_OP_CM_CREATE_ID);
	req.cm_create_id.ps = ps;
	req.cm_create_id.qp_type = qpt;
	req.cm_create_id.uctx = uctx;
	rc = call(c, &req, &resp, NULL);
	*id = resp.cm_id.id;
	return rc;
}

static int
id_op(struct chan *c, uint32_t op, uint32_t id)
{
	struct droce_proto_req req;
	struct droce_proto_resp resp;

	req_init(&req, op);
	req.cm_id.id = id;
	return call(c, &req, &resp, NULL);
}

static void
ip_addr(const char *ip, uint16_t port, struct droce_proto_cm_addr *a)
{
	memset(a, 0, sizeof(*a));
	a->family = AF_INET;
	a->port = htons(port);
	a->addr[10] = a->addr[11] = 0xFF;
	if (ip != NULL && inet_pton(AF_INET, ip, a->addr + 12) != 1) {
		fprintf(stderr, "cm_proto: bad address %s\n", ip);
		exit(3);
	}
}

static int
bind_id(struct chan *c, uint32_t id, const char *ip, uint16_t port)
{
	struct droce_proto_req req;
	struct droce_proto_resp resp;

	req_init(&req, DROCE_PROTO_OP_CM_BIND);
	req.cm_bind.id = id;
	ip_addr(ip, port, &req.cm_bind.addr);
	return call(c, &req, &resp, NULL);
}

static int
listen_id(struct chan *c, uint32_t id, int backlog)
{
	struct droce_proto_req req;
	struct droce_proto_resp resp;

	req_init(&req, DROCE_PROTO_OP_CM_LISTEN);
	req.cm_listen.id = id;
	req.cm_listen.backlog = backlog;
	return call(c, &req, &resp, NULL);
}

/* The next event: a byte from the pipe, then CM_GET_EVENT. -ETIMEDOUT when none came. */
static int
get_event(struct chan *c, struct droce_proto_cm_event *ev, int wait_ms)
{
	struct droce_proto_req req;
	struct droce_proto_resp resp;
	struct pollfd pfd = { .fd = c->efd, .events = POLLIN };
	uint8_t b;
	int rc;

	for (;;) {
		if (poll(&pfd, 1, wait_ms) <= 0)
			return -ETIMEDOUT;
		if (read(c->efd, &b, 1) != 1)
			return -EPIPE;
		req_init(&req, DROCE_PROTO_OP_CM_GET_EVENT);
		rc = call(c, &req, &resp, NULL);
		if (rc == -EAGAIN)
			continue;	/* the event of an id destroyed since */
		if (rc != 0)
			return rc;
		*ev = resp.cm_event;
		return 0;
	}
}

static int
expect_event(struct chan *c, uint32_t type, struct droce_proto_cm_event *ev)
{
	int rc = get_event(c, ev, EVENT_WAIT_MS);

	CHECK(rc == 0, "waiting for event %u: %d", type, rc);
	if (rc != 0)
		return rc;
	CHECK(ev->event == type, "event %u (status %d), wanted %u", ev->event, ev->status, type);
	return ev->event == type ? 0 : -EPROTO;
}

static int
resolve(struct chan *c, uint32_t id, const char *ip, uint16_t port)
{
	struct droce_proto_req req;
	struct droce_proto_resp resp;
	struct droce_proto_cm_event ev;
	int rc;

	req_init(&req, DROCE_PROTO_OP_CM_RESOLVE_ADDR);
	req.cm_resolve_addr.id = id;
	req.cm_resolve_addr.timeout_ms = 2000;
	ip_addr(ip, port, &req.cm_resolve_addr.dst);
	rc = call(c, &req, &resp, NULL);
	CHECK(rc == 0, "RESOLVE_ADDR: %d", rc);
	if (rc != 0 || expect_event(c, DROCE_PROTO_CM_EVENT_ADDR_RESOLVED, &ev) != 0)
		return -1;
	CHECK(ev.id == id, "ADDR_RESOLVED for id %u, not %u", ev.id, id);
	rc = id_op(c, DROCE_PROTO_OP_CM_RESOLVE_ROUTE, id);
	CHECK(rc == 0, "RESOLVE_ROUTE: %d", rc);
	if (rc != 0 || expect_event(c, DROCE_PROTO_CM_EVENT_ROUTE_RESOLVED, &ev) != 0)
		return -1;
	return 0;
}

static int
conn_op(struct chan *c, uint32_t op, uint32_t id, uint32_t qpn, const char *pdata)
{
	struct droce_proto_req req;
	struct droce_proto_resp resp;

	req_init(&req, op);
	req.cm_conn.id = id;
	req.cm_conn.conn.qp_num = qpn;
	req.cm_conn.conn.qp_type = DROCE_SHM_QPT_RC;
	req.cm_conn.conn.responder_resources = 4;
	req.cm_conn.conn.initiator_depth = 2;
	req.cm_conn.conn.retry_count = 7;
	req.cm_conn.conn.rnr_retry_count = 6;
	if (pdata != NULL) {
		req.cm_conn.conn.private_data_len = (uint8_t)strlen(pdata);
		memcpy(req.cm_conn.conn.private_data, pdata, strlen(pdata));
	}
	return call(c, &req, &resp, NULL);
}

static int
qp_attr(struct chan *c, uint32_t id, uint32_t state, struct droce_proto_cm_qp_attr *a)
{
	struct droce_proto_req req;
	struct droce_proto_resp resp;
	int rc;

	req_init(&req, DROCE_PROTO_OP_CM_INIT_QP_ATTR);
	req.cm_init_qp_attr.id = id;
	req.cm_init_qp_attr.qp_state = state;
	rc = call(c, &req, &resp, NULL);
	*a = resp.cm_qp_attr;
	return rc;
}

/* The QP attributes of a connected id: the peer's QPN, PSNs crossed, the path. */
static void
check_qp_attrs(struct chan *c, uint32_t id, uint32_t peer_qpn)
{
	struct droce_proto_cm_qp_attr init, rtr, rts;

	CHECK(qp_attr(c, id, DROCE_SHM_QPS_INIT, &init) == 0, "INIT attr");
	CHECK(init.qp_access_flags == (DROCE_SHM_ACCESS_REMOTE_WRITE |
		DROCE_SHM_ACCESS_REMOTE_READ | DROCE_SHM_ACCESS_REMOTE_ATOMIC),
	      "access %#x", init.qp_access_flags);
	CHECK(init.port_num == 1 && init.pkey_index == 0, "port %u pkey %u", init.port_num,
	      init.pkey_index);
	CHECK(qp_attr(c, id, DROCE_SHM_QPS_RTR, &rtr) == 0, "RTR attr");
	CHECK(rtr.dest_qp_num == peer_qpn, "dest_qp_num %#x want %#x", rtr.dest_qp_num, peer_qpn);
	CHECK(rtr.ah.is_global == 1 && rtr.ah.hop_limit == 64, "ah global %u hop %u",
	      rtr.ah.is_global, rtr.ah.hop_limit);
	CHECK(rtr.path_mtu >= DROCE_SHM_MTU_256 && rtr.path_mtu <= DROCE_SHM_MTU_4096,
	      "path_mtu %u", rtr.path_mtu);
	CHECK(rtr.mask & DROCE_SHM_QP_MAX_DEST_RD_ATOMIC, "RTR mask %#x", rtr.mask);
	CHECK(qp_attr(c, id, DROCE_SHM_QPS_RTS, &rts) == 0, "RTS attr");
	CHECK(rts.retry_cnt == 7, "retry_cnt %u", rts.retry_cnt);
	CHECK(rts.timeout != 0, "timeout %u", rts.timeout);
	printf("ok qp attrs: dest_qp %#x rq_psn %#x sq_psn %#x mtu %u timeout %u "
	       "max_dest_rd %u max_rd %u\n", rtr.dest_qp_num, rtr.rq_psn, rts.sq_psn,
	       rtr.path_mtu, rts.timeout, rtr.max_dest_rd_atomic, rts.max_rd_atomic);
}

/* The passive side of one connection: CONNECT_REQUEST, ACCEPT. The new id. */
static uint32_t
accept_one(struct chan *c, uint32_t listen, const char *want_pdata)
{
	struct droce_proto_cm_event ev;
	int rc;

	if (expect_event(c, DROCE_PROTO_CM_EVENT_CONNECT_REQUEST, &ev) != 0)
		return DROCE_PROTO_NO_HANDLE;
	CHECK(ev.listen_id == listen, "listen_id %u want %u", ev.listen_id, listen);
	CHECK(ev.conn.qp_num == FAKE_QPN_CLI, "peer qp %#x", ev.conn.qp_num);
	/* Swapped as Linux reports them: the peer's initiator depth is our responder side. */
	CHECK(ev.conn.responder_resources == 2 && ev.conn.initiator_depth == 4,
	      "resources %u depth %u", ev.conn.responder_resources, ev.conn.initiator_depth);
	CHECK(ev.conn.private_data_len == 56, "pdata len %u", ev.conn.private_data_len);
	if (want_pdata != NULL)
		CHECK(memcmp(ev.conn.private_data, want_pdata, strlen(want_pdata)) == 0,
		      "pdata %.16s", (const char *)ev.conn.private_data);
	rc = conn_op(c, DROCE_PROTO_OP_CM_ACCEPT, ev.id, FAKE_QPN_SRV, "srv");
	CHECK(rc == 0, "ACCEPT: %d", rc);
	return ev.id;
}

/* The active side up to CONNECT sent. The id, or NO_HANDLE. */
static uint32_t
start_connect(struct chan *c, const char *ip, uint16_t port, const char *pdata)
{
	uint32_t id;
	int rc;

	CHECK(create_id(c, DROCE_PROTO_CM_PS_TCP, DROCE_SHM_QPT_RC, 7, &id) == 0, "CREATE_ID");
	if (resolve(c, id, ip, port) != 0)
		return DROCE_PROTO_NO_HANDLE;
	rc = conn_op(c, DROCE_PROTO_OP_CM_CONNECT, id, FAKE_QPN_CLI, pdata);
	CHECK(rc == 0, "CONNECT: %d", rc);
	return rc == 0 ? id : DROCE_PROTO_NO_HANDLE;
}

/* The active side from CONNECT_RESPONSE to ESTABLISHED. */
static uint32_t
finish_connect(struct chan *c, uint32_t id)
{
	struct droce_proto_cm_event ev;
	int rc;

	if (id == DROCE_PROTO_NO_HANDLE ||
	    expect_event(c, DROCE_PROTO_CM_EVENT_CONNECT_RESPONSE, &ev) != 0)
		return DROCE_PROTO_NO_HANDLE;
	CHECK(ev.id == id, "CONNECT_RESPONSE for %u", ev.id);
	CHECK(ev.conn.qp_num == FAKE_QPN_SRV, "peer qp %#x", ev.conn.qp_num);
	CHECK(memcmp(ev.conn.private_data, "srv", 3) == 0, "REP pdata");
	CHECK(ev.uctx == 7, "uctx %llu", (unsigned long long)ev.uctx);
	check_qp_attrs(c, id, FAKE_QPN_SRV);
	rc = id_op(c, DROCE_PROTO_OP_CM_ESTABLISH, id);
	CHECK(rc == 0, "ESTABLISH: %d", rc);
	/* The RTU is sent; the active end gets no event of its own (librdmacm makes one). */
	return rc == 0 ? id : DROCE_PROTO_NO_HANDLE;
}

static uint32_t
connect_one(struct chan *c, const char *ip, uint16_t port, const char *pdata)
{
	return finish_connect(c, start_connect(c, ip, port, pdata));
}

/* UD (SIDR), options, NOTIFY, MIGRATE and the pipe, on two channels of one droced. */
static void
mode_basic_more(struct chan *a, struct chan *b, const char *ip)
{
	struct droce_proto_req req;
	struct droce_proto_resp resp;
	struct droce_proto_cm_event ev;
	struct droce_proto_cm_qp_attr qa;
	struct chan m;
	uint32_t l, cli, srv;
	int rc;

	/* UDP port space: SIDR_REQ, SIDR_REP with the QPN and Q_Key, ESTABLISHED with them. */
	CHECK(create_id(a, DROCE_PROTO_CM_PS_UDP, DROCE_SHM_QPT_RC, 5, &l) == 0, "CREATE_ID");
	CHECK(bind_id(a, l, ip, 7481) == 0, "BIND");
	CHECK(listen_id(a, l, 4) == 0, "LISTEN");
	CHECK(create_id(b, DROCE_PROTO_CM_PS_UDP, DROCE_SHM_QPT_UD, 6, &cli) == 0, "CREATE_ID");
	CHECK(resolve(b, cli, ip, 7481) == 0, "resolve");
	CHECK(qp_attr(b, cli, DROCE_SHM_QPS_INIT, &qa) == 0 && qa.qkey == 0x01234567 &&
	      (qa.mask & DROCE_SHM_QP_QKEY), "UD INIT qkey %#x mask %#x", qa.qkey, qa.mask);
	req_init(&req, DROCE_PROTO_OP_CM_CONNECT);
	req.cm_conn.id = cli;
	req.cm_conn.conn.qp_num = FAKE_QPN_CLI;
	req.cm_conn.conn.qp_type = DROCE_SHM_QPT_UD;
	req.cm_conn.conn.private_data_len = 3;
	memcpy(req.cm_conn.conn.private_data, "udp", 3);
	CHECK(call(b, &req, &resp, NULL) == 0, "CONNECT UD");
	if (expect_event(a, DROCE_PROTO_CM_EVENT_CONNECT_REQUEST, &ev) == 0) {
		CHECK(ev.conn.qp_type == DROCE_SHM_QPT_UD && ev.conn.private_data_len == 180 &&
		      memcmp(ev.conn.private_data, "udp", 3) == 0, "SIDR_REQ event");
		srv = ev.id;
		req_init(&req, DROCE_PROTO_OP_CM_ACCEPT);
		req.cm_conn.id = srv;
		req.cm_conn.conn.qp_num = FAKE_QPN_SRV;
		req.cm_conn.conn.qkey = 0x11223344;
		req.cm_conn.conn.qp_type = DROCE_SHM_QPT_UD;
		CHECK(call(a, &req, &resp, NULL) == 0, "ACCEPT UD");
		CHECK(id_op(a, DROCE_PROTO_OP_CM_DESTROY_ID, srv) == 0, "DESTROY_ID");
	}
	if (expect_event(b, DROCE_PROTO_CM_EVENT_ESTABLISHED, &ev) == 0)
		CHECK(ev.ud.dest_qp_num == FAKE_QPN_SRV && ev.ud.qkey == 0x11223344 &&
		      ev.ud.ah.is_global == 1, "UD ESTABLISHED qpn %#x qkey %#x", ev.ud.dest_qp_num,
		      ev.ud.qkey);
	CHECK(id_op(b, DROCE_PROTO_OP_CM_DESTROY_ID, cli) == 0, "DESTROY_ID");
	CHECK(id_op(a, DROCE_PROTO_OP_CM_DESTROY_ID, l) == 0, "DESTROY_ID");
	printf("ok UD: SIDR_REQ, SIDR_REP\n");

	/* Options: TOS and ACK timeout reach the QP attributes; unknown ones are refused. */
	CHECK(create_id(a, DROCE_PROTO_CM_PS_TCP, DROCE_SHM_QPT_RC, 1, &l) == 0, "CREATE_ID");
	req_init(&req, DROCE_PROTO_OP_CM_SET_OPTION);
	req.cm_set_option.id = l;
	req.cm_set_option.name = 77;
	CHECK(call(a, &req, &resp, NULL) == -ENOSYS, "unknown option");
	req.cm_set_option.name = DROCE_PROTO_CM_OPT_REUSEADDR;
	req.cm_set_option.value = 1;
	CHECK(call(a, &req, &resp, NULL) == 0, "REUSEADDR");
	req.cm_set_option.name = DROCE_PROTO_CM_OPT_ACK_TIMEOUT;
	req.cm_set_option.value = 14;
	CHECK(call(a, &req, &resp, NULL) == 0, "ACK_TIMEOUT");
	CHECK(bind_id(a, l, ip, 7491) == 0, "BIND");
	req.cm_set_option.name = DROCE_PROTO_CM_OPT_REUSEADDR;
	CHECK(call(a, &req, &resp, NULL) == -EINVAL, "REUSEADDR after BIND");
	CHECK(listen_id(a, l, 1) == 0, "LISTEN backlog 1");
	printf("ok options\n");

	/* NOTIFY(COMM_EST) stands for a lost RTU: the passive end is ESTABLISHED without it. */
	cli = start_connect(b, ip, 7491, NULL);
	srv = accept_one(a, l, NULL);
	if (expect_event(b, DROCE_PROTO_CM_EVENT_CONNECT_RESPONSE, &ev) == 0) {
		CHECK(qp_attr(b, cli, DROCE_SHM_QPS_RTS, &qa) == 0, "RTS");
		/* rdma_notify takes only COMM_EST (rdma-core's value, not a copy of ours). */
		req_init(&req, DROCE_PROTO_OP_CM_NOTIFY);
		req.cm_notify.id = srv;
		req.cm_notify.event = IBV_EVENT_SQ_DRAINED;
		CHECK(call(a, &req, &resp, NULL) == -EINVAL, "NOTIFY(SQ_DRAINED)");
		req.cm_notify.event = IBV_EVENT_COMM_EST;
		CHECK(call(a, &req, &resp, NULL) == 0, "NOTIFY(COMM_EST)");
		CHECK(expect_event(a, DROCE_PROTO_CM_EVENT_ESTABLISHED, &ev) == 0 && ev.id == srv,
		      "ESTABLISHED by NOTIFY");
		CHECK(qp_attr(a, srv, DROCE_SHM_QPS_RTS, &qa) == 0 && qa.timeout == 19,
		      "passive timeout %u", qa.timeout);
		CHECK(id_op(b, DROCE_PROTO_OP_CM_ESTABLISH, cli) == 0, "ESTABLISH");
	}
	printf("ok NOTIFY(COMM_EST)\n");

	/* MIGRATE: the id and its queued event move to a third channel, with a byte each. */
	chan_open(&m);
	CHECK(id_op(b, DROCE_PROTO_OP_CM_DISCONNECT, cli) == 0, "DISCONNECT");
	CHECK(expect_event(a, DROCE_PROTO_CM_EVENT_DISCONNECTED, &ev) == 0, "DISCONNECTED");
	{
		struct pollfd pfd = { .fd = b->efd, .events = POLLIN };

		CHECK(poll(&pfd, 1, EVENT_WAIT_MS) == 1, "DREP event byte");
	}
	req_init(&req, DROCE_PROTO_OP_CM_MIGRATE);
	req.cm_migrate.from_channel = b->token;
	req.cm_migrate.id = cli;
	rc = call(&m, &req, &resp, NULL);
	CHECK(rc == 0, "MIGRATE: %d", rc);
	if (rc == 0) {
		uint32_t moved = resp.cm_id.id;

		CHECK(id_op(b, DROCE_PROTO_OP_CM_QUERY, cli) == -EINVAL, "the id left its channel");
		CHECK(expect_event(&m, DROCE_PROTO_CM_EVENT_DISCONNECTED, &ev) == 0 &&
		      ev.id == moved, "the event followed the id");
		CHECK(id_op(&m, DROCE_PROTO_OP_CM_DESTROY_ID, moved) == 0, "DESTROY_ID");
	}
	req.cm_migrate.from_channel = 0x12345678;
	CHECK(call(&m, &req, &resp, NULL) == -EINVAL, "MIGRATE from no channel");
	/* The byte of the moved event is still in b's pipe: its GET_EVENT says -EAGAIN. */
	rc = get_event(b, &ev, 200);
	CHECK(rc == -ETIMEDOUT, "b has no event left: %d", rc);
	CHECK(id_op(a, DROCE_PROTO_OP_CM_DESTROY_ID, srv) == 0, "DESTROY_ID");
	CHECK(id_op(a, DROCE_PROTO_OP_CM_DESTROY_ID, l) == 0, "DESTROY_ID");
	printf("ok MIGRATE\n");
	close(m.sock);
	close(m.efd);
}

static int
mode_basic(const char *ip)
{
	struct chan a, b;
	struct droce_proto_req req;
	struct droce_proto_resp resp;
	struct droce_proto_cm_event ev;
	uint32_t l, x, y, srv, cli;
	int rc;

	chan_open(&a);
	printf("ok CM_OPEN: pipe fd %d token %#x\n", a.efd, a.token);
	/* A CM channel is not a device context. */
	req_init(&req, DROCE_PROTO_OP_HELLO);
	req.hello.version = DROCE_PROTO_VERSION;
	CHECK(call(&a, &req, &resp, NULL) == -EPROTO, "HELLO on a channel");
	req_init(&req, DROCE_PROTO_OP_ALLOC_PD);
	CHECK(call(&a, &req, &resp, NULL) == -EPROTO, "ALLOC_PD on a channel");
	req_init(&req, DROCE_PROTO_OP_CM_OPEN);
	req.cm_open.version = DROCE_PROTO_CM_VERSION;
	CHECK(call(&a, &req, &resp, NULL) == -EPROTO, "CM_OPEN twice");
	/* Bad handles and arguments. */
	CHECK(id_op(&a, DROCE_PROTO_OP_CM_DESTROY_ID, 0) == -EINVAL, "destroy of no id");
	CHECK(id_op(&a, DROCE_PROTO_OP_CM_QUERY, 12345) == -EINVAL, "query of no id");
	CHECK(id_op(&a, DROCE_PROTO_OP_CM_DISCONNECT, UINT32_MAX) == -EINVAL,
	      "disconnect of no id");
	CHECK(create_id(&a, 0x4242, DROCE_SHM_QPT_RC, 0, &x) == -EINVAL, "bad port space");
	CHECK(create_id(&a, DROCE_PROTO_CM_PS_IB, 99, 0, &x) == -EINVAL, "bad QP type");
	req_init(&req, DROCE_PROTO_OP_CM_GET_EVENT);
	CHECK(call(&a, &req, &resp, NULL) == -EAGAIN, "GET_EVENT with none");
	printf("ok bad handles\n");
	/* Binding rules. */
	CHECK(create_id(&a, DROCE_PROTO_CM_PS_TCP, DROCE_SHM_QPT_RC, 1, &l) == 0, "CREATE_ID");
	CHECK(bind_id(&a, l, ip, 7471) == 0, "BIND");
	CHECK(bind_id(&a, l, ip, 7472) == -EINVAL, "BIND twice");
	CHECK(create_id(&a, DROCE_PROTO_CM_PS_TCP, DROCE_SHM_QPT_RC, 2, &x) == 0, "CREATE_ID");
	CHECK(bind_id(&a, x, ip, 7471) == -EADDRINUSE, "BIND in use");
	CHECK(bind_id(&a, x, "192.0.2.77", 7471) == -EADDRNOTAVAIL, "BIND foreign address");
	CHECK(bind_id(&a, x, NULL, 7473) == 0, "BIND wildcard");
	CHECK(create_id(&a, DROCE_PROTO_CM_PS_UDP, DROCE_SHM_QPT_UD, 3, &y) == 0, "CREATE_ID");
	CHECK(bind_id(&a, y, ip, 7471) == 0, "BIND same port, other space");
	CHECK(bind_id(&a, y, ip, 0) == -EINVAL, "BIND after BIND");
	CHECK(id_op(&a, DROCE_PROTO_OP_CM_RESOLVE_ROUTE, x) == -EINVAL, "RESOLVE_ROUTE unresolved");
	CHECK(conn_op(&a, DROCE_PROTO_OP_CM_CONNECT, x, 1, NULL) == -EINVAL, "CONNECT unresolved");
	CHECK(conn_op(&a, DROCE_PROTO_OP_CM_ACCEPT, x, 1, NULL) == -EINVAL, "ACCEPT nothing");
	CHECK(listen_id(&a, l, 8) == 0, "LISTEN");
	CHECK(listen_id(&a, x, 8) == 0, "LISTEN on another port");
	CHECK(id_op(&a, DROCE_PROTO_OP_CM_DESTROY_ID, x) == 0, "DESTROY_ID");
	CHECK(id_op(&a, DROCE_PROTO_OP_CM_DESTROY_ID, x) == -EINVAL, "DESTROY_ID twice");
	CHECK(id_op(&a, DROCE_PROTO_OP_CM_DESTROY_ID, y) == 0, "DESTROY_ID");
	printf("ok bind/listen rules\n");

	/* A connection to ourselves (two channels, one droced: QP1 without the wire). */
	chan_open(&b);
	cli = start_connect(&b, ip, 7471, "hello");
	srv = accept_one(&a, l, "hello");
	cli = finish_connect(&b, cli);
	if (expect_event(&a, DROCE_PROTO_CM_EVENT_ESTABLISHED, &ev) == 0)
		CHECK(ev.id == srv, "ESTABLISHED for %u", ev.id);
	check_qp_attrs(&a, srv, FAKE_QPN_CLI);
	printf("ok connection to ourselves: REQ, REP, RTU\n");
	CHECK(id_op(&b, DROCE_PROTO_OP_CM_DISCONNECT, cli) == 0, "DISCONNECT");
	if (expect_event(&a, DROCE_PROTO_CM_EVENT_DISCONNECTED, &ev) == 0)
		CHECK(ev.id == srv, "DISCONNECTED for %u", ev.id);
	CHECK(expect_event(&b, DROCE_PROTO_CM_EVENT_DISCONNECTED, &ev) == 0, "DREP");
	CHECK(id_op(&a, DROCE_PROTO_OP_CM_DISCONNECT, srv) == 0, "DISCONNECT after DREQ");
	printf("ok disconnect: DREQ, DREP\n");
	CHECK(id_op(&b, DROCE_PROTO_OP_CM_DESTROY_ID, cli) == 0, "DESTROY_ID");
	CHECK(id_op(&a, DROCE_PROTO_OP_CM_DESTROY_ID, srv) == 0, "DESTROY_ID");

	/* Destroying a connected id ends its connection: the peer is DISCONNECTED. */
	cli = start_connect(&b, ip, 7471, NULL);
	srv = accept_one(&a, l, NULL);
	cli = finish_connect(&b, cli);
	CHECK(expect_event(&a, DROCE_PROTO_CM_EVENT_ESTABLISHED, &ev) == 0, "ESTABLISHED");
	CHECK(id_op(&b, DROCE_PROTO_OP_CM_DESTROY_ID, cli) == 0, "DESTROY_ID connected");
	CHECK(expect_event(&a, DROCE_PROTO_CM_EVENT_DISCONNECTED, &ev) == 0, "DISCONNECTED");
	CHECK(id_op(&a, DROCE_PROTO_OP_CM_DESTROY_ID, srv) == 0, "DESTROY_ID");
	printf("ok destroy while connected\n");

	/* Rejection by the application, with private data. */
	cli = start_connect(&b, ip, 7471, NULL);
	if (expect_event(&a, DROCE_PROTO_CM_EVENT_CONNECT_REQUEST, &ev) == 0) {
		req_init(&req, DROCE_PROTO_OP_CM_REJECT);
		req.cm_reject.id = ev.id;
		req.cm_reject.private_data_len = 4;
		memcpy(req.cm_reject.private_data, "nope", 4);
		CHECK(call(&a, &req, &resp, NULL) == 0, "REJECT");
		CHECK(id_op(&a, DROCE_PROTO_OP_CM_DESTROY_ID, ev.id) == 0, "DESTROY_ID");
	}
	if (expect_event(&b, DROCE_PROTO_CM_EVENT_REJECTED, &ev) == 0) {
		CHECK(ev.status == 28, "REJECTED status %d", ev.status);
		CHECK(memcmp(ev.conn.private_data, "nope", 4) == 0, "REJ pdata");
	}
	CHECK(id_op(&b, DROCE_PROTO_OP_CM_DESTROY_ID, cli) == 0, "DESTROY_ID");
	printf("ok reject with private data\n");

	/* Nobody listens: REJ Invalid Service ID (8), as Linux's CM. */
	cli = start_connect(&b, ip, 7999, NULL);
	if (expect_event(&b, DROCE_PROTO_CM_EVENT_REJECTED, &ev) == 0)
		CHECK(ev.status == 8, "REJECTED status %d", ev.status);
	CHECK(id_op(&b, DROCE_PROTO_OP_CM_DESTROY_ID, cli) == 0, "DESTROY_ID");
	printf("ok nobody listening: rejected 8\n");

	/* A listener destroyed with a request pending rejects it. */
	cli = start_connect(&b, ip, 7471, NULL);
	rc = 0;
	while (rc == 0) {
		struct pollfd pfd = { .fd = a.efd, .events = POLLIN };

		rc = poll(&pfd, 1, EVENT_WAIT_MS) == 1 ? 1 : -1;
	}
	CHECK(rc == 1, "CONNECT_REQUEST byte");
	CHECK(id_op(&a, DROCE_PROTO_OP_CM_DESTROY_ID, l) == 0, "DESTROY_ID listener");
	if (expect_event(&b, DROCE_PROTO_CM_EVENT_REJECTED, &ev) == 0)
		CHECK(ev.status == 28, "REJECTED status %d", ev.status);
	req_init(&req, DROCE_PROTO_OP_CM_GET_EVENT);
	CHECK(call(&a, &req, &resp, NULL) == -EAGAIN, "the request went with its listener");
	printf("ok listener destroyed: pending request rejected\n");
	mode_basic_more(&a, &b, ip);
	close(a.sock);
	close(b.sock);
	return failures;
}

static int
mode_server(const char *ip, uint16_t port)
{
	struct chan c;
	struct droce_proto_cm_event ev;
	uint32_t l, id;

	chan_open(&c);
	CHECK(create_id(&c, DROCE_PROTO_CM_PS_TCP, DROCE_SHM_QPT_RC, 9, &l) == 0, "CREATE_ID");
	CHECK(bind_id(&c, l, ip, port) == 0, "BIND");
	CHECK(listen_id(&c, l, 16) == 0, "LISTEN");
	printf("ready\n");
	fflush(stdout);
	id = accept_one(&c, l, "hello");
	if (expect_event(&c, DROCE_PROTO_CM_EVENT_ESTABLISHED, &ev) == 0)
		printf("ok server established\n");
	check_qp_attrs(&c, id, FAKE_QPN_CLI);
	fflush(stdout);
	if (expect_event(&c, DROCE_PROTO_CM_EVENT_DISCONNECTED, &ev) == 0)
		printf("ok server disconnected (status %d)\n", ev.status);
	return failures;
}

/* Accepts connections until killed; each established one is destroyed (DREQ). */
static int
mode_serve(const char *ip, uint16_t port)
{
	struct chan c;
	struct droce_proto_cm_event ev;
	uint32_t l;
	int rc;

	chan_open(&c);
	CHECK(create_id(&c, DROCE_PROTO_CM_PS_TCP, DROCE_SHM_QPT_RC, 9, &l) == 0, "CREATE_ID");
	CHECK(bind_id(&c, l, ip, port) == 0, "BIND");
	CHECK(listen_id(&c, l, 1024) == 0, "LISTEN");
	printf("ready\n");
	for (;;) {
		rc = get_event(&c, &ev, -1);
		if (rc != 0)
			return failures + 1;
		if (ev.event == DROCE_PROTO_CM_EVENT_CONNECT_REQUEST)
			CHECK(conn_op(&c, DROCE_PROTO_OP_CM_ACCEPT, ev.id, FAKE_QPN_SRV,
				      "srv") == 0, "ACCEPT");
		else if (ev.event == DROCE_PROTO_CM_EVENT_ESTABLISHED)
			id_op(&c, DROCE_PROTO_OP_CM_DESTROY_ID, ev.id);
	}
}

/*
 * n connections, RATE_WINDOW at a time, each destroyed once established: what set-up
 * costs through droced's CM when the library is quick.
 */
static int
mode_rate(const char *ip, uint16_t port, int n)
{
	struct droce_proto_req req;
	struct droce_proto_resp resp;
	struct droce_proto_cm_event ev;
	struct timespec t0, t1;
	struct chan c;
	int started = 0, done = 0, rc;
	uint32_t id;
	double s;

	chan_open(&c);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (done < n) {
		while (started < n && started - done < RATE_WINDOW) {
			CHECK(create_id(&c, DROCE_PROTO_CM_PS_TCP, DROCE_SHM_QPT_RC, 7, &id) == 0,
			      "CREATE_ID");
			req_init(&req, DROCE_PROTO_OP_CM_RESOLVE_ADDR);
			req.cm_resolve_addr.id = id;
			req.cm_resolve_addr.timeout_ms = 2000;
			ip_addr(ip, port, &req.cm_resolve_addr.dst);
			CHECK(call(&c, &req, &resp, NULL) == 0, "RESOLVE_ADDR");
			started++;
		}
		rc = get_event(&c, &ev, EVENT_WAIT_MS);
		CHECK(rc == 0, "event: %d (%d of %d done)", rc, done, n);
		if (rc != 0)
			break;
		switch (ev.event) {
		case DROCE_PROTO_CM_EVENT_ADDR_RESOLVED:
			CHECK(id_op(&c, DROCE_PROTO_OP_CM_RESOLVE_ROUTE, ev.id) == 0,
			      "RESOLVE_ROUTE");
			break;
		case DROCE_PROTO_CM_EVENT_ROUTE_RESOLVED:
			CHECK(conn_op(&c, DROCE_PROTO_OP_CM_CONNECT, ev.id, FAKE_QPN_CLI,
				      NULL) == 0, "CONNECT");
			break;
		case DROCE_PROTO_CM_EVENT_CONNECT_RESPONSE:
			CHECK(id_op(&c, DROCE_PROTO_OP_CM_ESTABLISH, ev.id) == 0, "ESTABLISH");
			done++;
			id_op(&c, DROCE_PROTO_OP_CM_DESTROY_ID, ev.id);
			break;
		default:
			CHECK(0, "event %u status %d", ev.event, ev.status);
			break;
		}
		if (failures != 0)
			break;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("ok %d connections in %.3f s: %.0f/s (%d at a time)\n", done, s, done / s,
	       RATE_WINDOW);
	return failures;
}

static int
mode_client(const char *ip, uint16_t port, const char *mode)
{
	struct chan c;
	struct droce_proto_cm_event ev;
	uint32_t id;

	chan_open(&c);
	if (strcmp(mode, "norepeat") == 0) {
		CHECK(create_id(&c, DROCE_PROTO_CM_PS_TCP, DROCE_SHM_QPT_RC, 1, &id) == 0, "ID");
		if (resolve(&c, id, ip, port) != 0)
			return 1;
		CHECK(conn_op(&c, DROCE_PROTO_OP_CM_CONNECT, id, FAKE_QPN_CLI, NULL) == 0,
		      "CONNECT");
		if (expect_event(&c, DROCE_PROTO_CM_EVENT_REJECTED, &ev) == 0) {
			CHECK(ev.status == 8, "REJECTED status %d", ev.status);
			printf("ok rejected status %d\n", ev.status);
		}
		return failures;
	}
	if (strcmp(mode, "unreach") == 0) {
		struct droce_proto_req req;
		struct droce_proto_resp resp;

		CHECK(create_id(&c, DROCE_PROTO_CM_PS_TCP, DROCE_SHM_QPT_RC, 1, &id) == 0, "ID");
		req_init(&req, DROCE_PROTO_OP_CM_RESOLVE_ADDR);
		req.cm_resolve_addr.id = id;
		req.cm_resolve_addr.timeout_ms = 3000;
		ip_addr(ip, port, &req.cm_resolve_addr.dst);
		CHECK(call(&c, &req, &resp, NULL) == 0, "RESOLVE_ADDR answers at once");
		if (expect_event(&c, DROCE_PROTO_CM_EVENT_ADDR_ERROR, &ev) == 0) {
			CHECK(ev.status == -EHOSTUNREACH || ev.status == -ETIMEDOUT, "status %d",
			      ev.status);
			printf("ok address error status %d\n", ev.status);
		}
		return failures;
	}
	if (strncmp(mode, "rate:", 5) == 0) {
		close(c.sock);
		close(c.efd);
		return mode_rate(ip, port, atoi(mode + 5));
	}
	id = connect_one(&c, ip, port, "hello");
	if (id == DROCE_PROTO_NO_HANDLE)
		return 1;
	printf("ok client established\n");
	fflush(stdout);
	if (strcmp(mode, "hold") == 0) {
		for (;;)
			pause();
	}
	CHECK(id_op(&c, DROCE_PROTO_OP_CM_DISCONNECT, id) == 0, "DISCONNECT");
	if (expect_event(&c, DROCE_PROTO_CM_EVENT_DISCONNECTED, &ev) == 0)
		printf("ok client disconnected\n");
	CHECK(id_op(&c, DROCE_PROTO_OP_CM_DESTROY_ID, id) == 0, "DESTROY_ID");
	return failures;
}

/*
 * Random CM requests on two channels: random ops, bytes and lengths, handles mostly small
 * so that some name real ids, addresses mostly droced's own so that some ids connect to
 * each other. Whatever droced answers is fine; it must answer every one, and STATUS after.
 */
static int
mode_garbage(const char *ip, unsigned int seed, unsigned int rounds)
{
	struct chan ch[2];
	struct droce_proto_req req;
	struct droce_proto_resp resp;
	uint8_t b;
	unsigned int i, k;

	srand(seed);
	chan_open(&ch[0]);
	chan_open(&ch[1]);
	/* Drained below without waiting. */
	fcntl(ch[0].efd, F_SETFL, O_NONBLOCK);
	fcntl(ch[1].efd, F_SETFL, O_NONBLOCK);
	for (i = 0; i < rounds; i++) {
		struct chan *c = &ch[rand() % 2];
		uint8_t *raw = (uint8_t *)&req;

		for (k = 0; k < sizeof(req); k++)
			raw[k] = (uint8_t)rand();
		req.op = DROCE_PROTO_OP_CM_CREATE_ID + (uint32_t)rand() %
			 (DROCE_PROTO_OP_CM_NOTIFY - DROCE_PROTO_OP_CM_CREATE_ID + 1);
		req.cm_id.id = rand() % 4 == 0 ? (uint32_t)rand() : (uint32_t)(rand() % 8);
		switch (req.op) {
		case DROCE_PROTO_OP_CM_CREATE_ID:
			req.cm_create_id.ps = rand() % 2 ? DROCE_PROTO_CM_PS_TCP :
					      DROCE_PROTO_CM_PS_UDP;
			break;
		case DROCE_PROTO_OP_CM_BIND:
			if (rand() % 2)
				ip_addr(rand() % 2 ? ip : NULL, (uint16_t)(7000 + rand() % 4),
					&req.cm_bind.addr);
			break;
		case DROCE_PROTO_OP_CM_RESOLVE_ADDR:
			if (rand() % 2) {
				req.cm_resolve_addr.src.family = 0;
				ip_addr(ip, (uint16_t)(7000 + rand() % 4), &req.cm_resolve_addr.dst);
			}
			req.cm_resolve_addr.timeout_ms %= 1000;
			break;
		case DROCE_PROTO_OP_CM_MIGRATE:
			if (rand() % 2)
				req.cm_migrate.from_channel = ch[rand() % 2].token;
			req.cm_migrate.id %= 8;
			break;
		default:
			break;
		}
		call(c, &req, &resp, NULL);
		/* Drain the pipes now and then: bytes may be owed. */
		if (i % 64 == 0)
			for (k = 0; k < 2; k++)
				while (read(ch[k].efd, &b, 1) == 1 && rand() % 16 != 0)
					;
	}
	req_init(&req, DROCE_PROTO_OP_STATUS);
	CHECK(call(&ch[0], &req, &resp, NULL) == 0, "STATUS after the garbage");
	printf("ok %u random CM requests answered\n", rounds);
	return failures;
}

int
main(int argc, char **argv)
{
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 3 && strcmp(argv[1], "basic") == 0)
		rc = mode_basic(argv[2]);
	else if (argc >= 5 && strcmp(argv[1], "garbage") == 0)
		rc = mode_garbage(argv[2], (unsigned int)atoi(argv[3]), (unsigned int)atoi(argv[4]));
	else if (argc >= 4 && strcmp(argv[1], "serve") == 0)
		rc = mode_serve(argv[2], (uint16_t)atoi(argv[3]));
	else if (argc >= 4 && strcmp(argv[1], "server") == 0)
		rc = mode_server(argv[2], (uint16_t)atoi(argv[3]));
	else if (argc >= 5 && strcmp(argv[1], "client") == 0)
		rc = mode_client(argv[2], (uint16_t)atoi(argv[3]), argv[4]);
	else {
		fprintf(stderr, "usage: cm_proto basic IP | server IP PORT | serve IP PORT | "
			"client IP PORT disconnect|hold|norepeat|rate:N\n");
		return 3;
	}
	printf("%s (%d failures)\n", rc == 0 ? "PASS" : "FAIL", rc);
	return rc == 0 ? 0 : 1;
}
