/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * raw_garbage: a hostile droced client. It speaks the control protocol itself
 * (droce_shm_proto.h; no libdroce), maps its region, builds two RC QPs connected to each
 * other through droced's loopback and a UD QP, and then, per mode, writes garbage into its
 * rings, WQEs, doorbells and region, or sends malformed and foreign requests. Afterwards it
 * checks what it can see: its own QP in ERR where the engine must error it, and droced still
 * answering STATUS and QUERY_PORTS.
 *
 *   raw_garbage [-m MODE|all] [-S SEED] [-v]      (DROCE_SOCKET names droced's socket)
 *
 * Exit: 0 droced answered every request after the garbage (an error status is fine; a
 * connection droced closed because of a protocol violation is fine if a fresh one is
 * answered); 1 droced stopped answering; 2 droced answered but a QP the engine must have
 * put in ERR is not there (or a QP of another client was harmed); 3 usage or set-up error.
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "droce_shm.h"
#include "droce_shm_arena.h"
#include "droce_shm_proto.h"
#include "droce_shm_qp_attr.h"
#include <droce_shm_bringup.h>

#define EXIT_OK		0
#define EXIT_DEAD	1
#define EXIT_STATE	2
#define EXIT_SETUP	3

#define RESP_TIMEOUT_MS	10000	/* droced may park a request on ARP; ours are loopback */
#define STATE_WAIT_MS	3000
#define QP_WR		16
#define QP_SGE		2
#define QP_INLINE	64
#define CQ_SIZE		256
#define UD_QKEY		0x11111111u
#define RANDOM_ROUNDS	200
#define MR_FILE_SIZE	4096
#define MR_CLAIMED	(1u << 20)

struct qp {
	uint32_t handle, qpn, engine, slot;
	uint32_t sq_size, sq_stride, rq_size, rq_stride;
	struct droce_shm_qp *ctl;
	uint8_t *sq, *rq;
	uint32_t sq_prod, rq_prod;
};

struct conn {
	int sock;
	uint32_t seq;
	bool closed;			/* droced closed it */
	uint8_t *region;
	uint64_t region_size;
	int async_fd;
	uint32_t nb_engines;
	uint64_t db_off[DROCE_SHM_MAX_ENGINES];
	struct droce_proto_gid gid0;
	uint32_t pd, cq;
	struct droce_shm_cq *cq_ctl;
	struct qp a, b, ud;
};

static bool verbose;
static uint64_t rng_state;
static int worst = EXIT_OK;

/* Records a finding: droced not answering outranks a QP state not as required. */
static void
verdict(int code)
{
	if (code == EXIT_DEAD)
		worst = EXIT_DEAD;
	else if (code == EXIT_STATE && worst == EXIT_OK)
		worst = EXIT_STATE;
}

static uint64_t
rnd(void)
{
	/* xorshift64*: reproducible garbage from -S SEED. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1Dull;
}

static void
rnd_fill(void *p, size_t len)
{
	uint8_t *b = p;
	size_t i;

	for (i = 0; i < len; i += 8) {
		uint64_t v = rnd();

		memcpy(b + i, &v, len - i < 8 ? len - i : 8);
	}
}

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static const char *
socket_path(void)
{
	const char *p = getenv(DROCE_PROTO_SOCKET_ENV);

	return p != NULL && p[0] != '\0' ? p : DROCE_PROTO_SOCKET_DEFAULT;
}

static int
conn_open(struct conn *c)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = socket_path();

	memset(c, 0, sizeof(*c));
	c->async_fd = -1;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -1;
	strcpy(sa.sun_path, path);
	c->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (c->sock < 0)
		return -1;
	if (connect(c->sock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		printf("cannot connect to %s: %s\n", path, strerror(errno));
		close(c->sock);
		c->sock = -1;
		return -1;
	}
	return 0;
}

static void
conn_close(struct conn *c)
{
	if (c->region != NULL)
		munmap(c->region, c->region_size);
	if (c->async_fd >= 0)
		close(c->async_fd);
	if (c->sock >= 0)
		close(c->sock);
	c->sock = -1;
	c->region = NULL;
	c->async_fd = -1;
}

/*
 * Sends len bytes of msg (any length: garbage too) with fds; waits for one response.
 * Returns 1 with a response in *resp (and fds in rfds), 0 when droced closed the connection,
 * -1 on timeout or another error.
 */
static int
xfer(struct conn *c, const void *msg, size_t len, const int *fds, unsigned int nfds,
     struct droce_proto_resp *resp, int *rfds, unsigned int max_rfds, unsigned int *nrfds)
{
	struct pollfd pfd = { .fd = c->sock, .events = POLLIN };
	int all[DROCE_PROTO_MAX_FDS];
	unsigned int got = 0;
	ssize_t n;
	int ret;

	if (nrfds != NULL)
		*nrfds = 0;
	if (c->closed)
		return 0;
	ret = droce_proto_send(c->sock, msg, len, fds, nfds);
	if (ret == -EPIPE || ret == -ECONNRESET) {
		c->closed = true;
		return 0;
	}
	if (ret < 0) {
		printf("send: %s\n", strerror(-ret));
		return -1;
	}
	if (poll(&pfd, 1, RESP_TIMEOUT_MS) != 1) {
		printf("no response within %d ms\n", RESP_TIMEOUT_MS);
		return -1;
	}
	memset(resp, 0, sizeof(*resp));
	/* Every fd an answer brings (CREATE_QP's wake-up eventfd too); the caller's first. */
	n = droce_proto_recv(c->sock, resp, sizeof(*resp), all, DROCE_PROTO_MAX_FDS, &got);
	while (got > max_rfds)
		close(all[--got]);
	if (got > 0)
		memcpy(rfds, all, got * sizeof(int));
	if (n == 0 || n == -ECONNRESET) {
		c->closed = true;
		return 0;
	}
	if (n < 0) {
		printf("recv: %s\n", strerror((int)-n));
		return -1;
	}
	if (nrfds != NULL)
		*nrfds = got;
	else
		while (got > 0)
			close(rfds[--got]);
	return 1;
}

/* A well-formed request: status (0 or -errno), or INT32_MIN when no response came. */
#define NO_RESPONSE INT32_MIN
static int32_t
call(struct conn *c, struct droce_proto_req *req, const int *fds, unsigned int nfds,
     struct droce_proto_resp *resp, int *rfds, unsigned int max_rfds, unsigned int *nrfds)
{
	req->seq = ++c->seq;
	if (xfer(c, req, sizeof(*req), fds, nfds, resp, rfds, max_rfds, nrfds) != 1)
		return NO_RESPONSE;
	if (resp->seq != req->seq || resp->op != req->op) {
		printf("response op %u seq %u does not answer op %u seq %u\n", resp->op, resp->seq,
		       req->op, req->seq);
		return NO_RESPONSE;
	}
	return resp->status;
}

static int32_t
simple(struct conn *c, uint32_t op, uint32_t handle, struct droce_proto_resp *resp)
{
	struct droce_proto_req req;

	memset(&req, 0, sizeof(req));
	req.op = op;
	req.obj.handle = handle;
	return call(c, &req, NULL, 0, resp, NULL, 0, NULL);
}

/* ---- Set-up: HELLO, PD, CQ, QPs to RTS ---- */

static int
hello(struct conn *c)
{
	struct droce_proto_req req;
	struct droce_proto_resp resp;
	int fds[2];
	unsigned int nfds = 0;
	int32_t st;

	memset(&req, 0, sizeof(req));
	req.op = DROCE_PROTO_OP_HELLO;
	req.hello.version = DROCE_PROTO_VERSION;
	req.hello.port = 0;
	st = call(c, &req, NULL, 0, &resp, fds, 2, &nfds);
	if (st != 0 || nfds != 2) {
		printf("HELLO: status %d, %u fds\n", st, nfds);
		while (nfds > 0)
			close(fds[--nfds]);
		return -1;
	}
	c->async_fd = fds[1];
	c->region_size = resp.hello.region_size;
	c->nb_engines = resp.hello.nb_engines;
	c->region = mmap(NULL, c->region_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	close(fds[0]);
	if (c->region == MAP_FAILED) {
		c->region = NULL;
		printf("mmap region: %s\n", strerror(errno));
		return -1;
	}
	if (droce_shm_region_check(c->region, c->region_size) != 0 || c->nb_engines == 0 ||
	    c->nb_engines > DROCE_SHM_MAX_ENGINES || resp.hello.nb_gids == 0) {
		printf("HELLO: region or GID table unusable\n");
		return -1;
	}
	memcpy(c->db_off, ((struct droce_shm_region_hdr *)c->region)->doorbell_off,
	       sizeof(c->db_off));
	c->gid0 = resp.hello.gids[0];
	return 0;
}

static bool
in_region(const struct conn *c, uint64_t off, uint64_t len)
{
	return off <= c->region_size && len <= c->region_size - off;
}

static int
create_qp(struct conn *c, uint8_t type, struct qp *q)
{
	struct droce_proto_req req;
	struct droce_proto_resp resp;
	int32_t st;

	memset(&req, 0, sizeof(req));
	req.op = DROCE_PROTO_OP_CREATE_QP;
	req.create_qp.pd = c->pd;
	req.create_qp.send_cq = c->cq;
	req.create_qp.recv_cq = c->cq;
	req.create_qp.srq = DROCE_PROTO_NO_HANDLE;
	req.create_qp.qp_type = type;
	req.create_qp.cap.max_send_wr = QP_WR;
	req.create_qp.cap.max_recv_wr = QP_WR;
	req.create_qp.cap.max_send_sge = QP_SGE;
	req.create_qp.cap.max_recv_sge = QP_SGE;
	req.create_qp.cap.max_inline_data = QP_INLINE;
	st = call(c, &req, NULL, 0, &resp, NULL, 0, NULL);
	if (st != 0) {
		printf("CREATE_QP: status %d\n", st);
		return -1;
	}
	q->handle = resp.qp.handle;
	q->qpn = resp.qp.qp_num;
	q->engine = resp.qp.engine_id;
	q->slot = resp.qp.db_slot;
	q->sq_size = resp.qp.sq_size;
	q->sq_stride = resp.qp.sq_stride;
	q->rq_size = resp.qp.rq_size;
	q->rq_stride = resp.qp.rq_stride;
	if (q->engine >= c->nb_engines || q->slot >= DROCE_SHM_DB_SLOTS ||
	    !in_region(c, resp.qp.ctl_off, sizeof(struct droce_shm_qp)) ||
	    !in_region(c, resp.qp.sq_off, (uint64_t)q->sq_size * q->sq_stride) ||
	    !in_region(c, resp.qp.rq_off, (uint64_t)q->rq_size * q->rq_stride) ||
	    q->sq_stride < sizeof(struct droce_shm_swqe) || q->sq_size == 0) {
		printf("CREATE_QP: answer outside the region\n");
		return -1;
	}
	q->ctl = (struct droce_shm_qp *)(c->region + resp.qp.ctl_off);
	q->sq = c->region + resp.qp.sq_off;
	q->rq = c->region + resp.qp.rq_off;
	return 0;
}

static int32_t
modify(struct conn *c, struct qp *q, const struct droce_shm_qp_attr *attr)
{
	struct droce_proto_req req;
	struct droce_proto_resp resp;

	memset(&req, 0, sizeof(req));
	req.op = DROCE_PROTO_OP_MODIFY_QP;
	req.modify_qp.handle = q->handle;
	req.modify_qp.attr = *attr;
	return call(c, &req, NULL, 0, &resp, NULL, 0, NULL);
}

static uint32_t
qp_state(const struct qp *q)
{
	return __atomic_load_n(&q->ctl->state, __ATOMIC_ACQUIRE);
}

static uint32_t
wait_state(const struct qp *q, uint32_t want)
{
	uint64_t end = now_ms() + STATE_WAIT_MS;

	while (qp_state(q) != want && now_ms() < end)
		usleep(1000);
	return qp_state(q);
}

/* INIT, RTR and RTS in turn (droce_shm_bringup.h); -1 at the first droced refuses. */
static int
to_rts(struct conn *c, struct qp *q, const struct droce_shm_qp_attr attr[DROCE_SHM_BRINGUP_STEPS])
{
	unsigned int i;

	for (i = 0; i < DROCE_SHM_BRINGUP_STEPS; i++)
		if (modify(c, q, &attr[i]) != 0)
			return -1;
	return 0;
}

/* To the other RC QP of this connection, through droced's loopback (GID index 0). */
static int
rc_to_rts(struct conn *c, struct qp *q, uint32_t dqpn, uint32_t rq_psn, uint32_t sq_psn)
{
	struct droce_shm_qp_attr attr[DROCE_SHM_BRINGUP_STEPS];
	struct droce_shm_bringup_path path = {
		.qp_type = DROCE_SHM_QPT_RC,
		.mtu = DROCE_SHM_MTU_1024,
		.dest_qpn = dqpn,
		.sq_psn = sq_psn,
		.rq_psn = rq_psn,
		.timeout = 14,
		.retry_cnt = 3,
		.rnr_retry = 3,
		.min_rnr_timer = 12,
	};

	droce_shm_bringup_ah(&path.ah, c->gid0.gid, 0);
	droce_shm_bringup_connected(&path, attr);
	return to_rts(c, q, attr);
}

static int
ud_to_rts(struct conn *c, struct qp *q)
{
	struct droce_shm_qp_attr attr[DROCE_SHM_BRINGUP_STEPS];

	droce_shm_bringup_ud(UD_QKEY, 7, attr);
	return to_rts(c, q, attr);
}

/* A fresh connection with a PD, a CQ, RC QPs a <-> b in RTS and a UD QP in RTS. */
static int
setup(struct conn *c)
{
	struct droce_proto_req req;
	struct droce_proto_resp resp;

	if (conn_open(c) != 0 || hello(c) != 0)
		return -1;
	if (simple(c, DROCE_PROTO_OP_ALLOC_PD, 0, &resp) != 0) {
		printf("ALLOC_PD failed\n");
		return -1;
	}
	c->pd = resp.obj.handle;
	memset(&req, 0, sizeof(req));
	req.op = DROCE_PROTO_OP_CREATE_CQ;
	req.create_cq.cqe = CQ_SIZE;
	if (call(c, &req, NULL, 0, &resp, NULL, 0, NULL) != 0 ||
	    !in_region(c, resp.cq.ctl_off, sizeof(struct droce_shm_cq))) {
		printf("CREATE_CQ failed\n");
		return -1;
	}
	c->cq = resp.cq.handle;
	c->cq_ctl = (struct droce_shm_cq *)(c->region + resp.cq.ctl_off);
	if (create_qp(c, DROCE_SHM_QPT_RC, &c->a) != 0 ||
	    create_qp(c, DROCE_SHM_QPT_RC, &c->b) != 0 ||
	    create_qp(c, DROCE_SHM_QPT_UD, &c->ud) != 0)
		return -1;
	if (rc_to_rts(c, &c->a, c->b.qpn, 200, 100) != 0 ||
	    rc_to_rts(c, &c->b, c->a.qpn, 100, 200) != 0 || ud_to_rts(c, &c->ud) != 0) {
		printf("MODIFY_QP to RTS failed\n");
		return -1;
	}
	if (wait_state(&c->a, DROCE_SHM_QPS_RTS) != DROCE_SHM_QPS_RTS ||
	    wait_state(&c->b, DROCE_SHM_QPS_RTS) != DROCE_SHM_QPS_RTS ||
	    wait_state(&c->ud, DROCE_SHM_QPS_RTS) != DROCE_SHM_QPS_RTS) {
		printf("QPs not in RTS in shared memory (a %u b %u ud %u)\n", qp_state(&c->a),
		       qp_state(&c->b), qp_state(&c->ud));
		return -1;
	}
	if (verbose)
		printf("  set up: qp a 0x%x b 0x%x ud 0x%x, %u engines\n", c->a.qpn, c->b.qpn,
		       c->ud.qpn, c->nb_engines);
	return 0;
}

/* ---- Ring helpers (what libdroce's post does, but with lies) ---- */

static void
ring(struct conn *c, const struct qp *q)
{
	struct droce_shm_doorbell *db = (struct droce_shm_doorbell *)(c->region +
								      c->db_off[q->engine]);

	__atomic_fetch_or(&db->words[q->slot / 64], 1ull << (q->slot % 64), __ATOMIC_RELEASE);
	__atomic_fetch_or(&db->summary, 1ull << (q->slot / 64), __ATOMIC_RELEASE);
}

static struct droce_shm_swqe *
sq_slot(struct qp *q)
{
	struct droce_shm_swqe *s = (struct droce_shm_swqe *)(q->sq +
		(size_t)(q->sq_prod & (q->sq_size - 1)) * q->sq_stride);

	memset(s, 0, q->sq_stride);
	return s;
}

static void
sq_publish(struct conn *c, struct qp *q)
{
	q->sq_prod++;
	__atomic_store_n(&q->ctl->sq.prod, q->sq_prod, __ATOMIC_RELEASE);
	ring(c, q);
}

/* A valid zero-length receive on q. */
static void
post_empty_recv(struct qp *q, uint64_t wr_id)
{
	struct droce_shm_rwqe *r = (struct droce_shm_rwqe *)(q->rq +
		(size_t)(q->rq_prod & (q->rq_size - 1)) * q->rq_stride);

	memset(r, 0, q->rq_stride);
	r->wr_id = wr_id;
	q->rq_prod++;
	__atomic_store_n(&q->ctl->rq.prod, q->rq_prod, __ATOMIC_RELEASE);
}

/* A valid zero-length SEND on q. */
static void
post_empty_send(struct conn *c, struct qp *q, uint64_t wr_id)
{
	struct droce_shm_swqe *s = sq_slot(q);

	s->wr_id = wr_id;
	s->opcode = DROCE_SHM_WR_SEND;
	s->flags = DROCE_SHM_SEND_SIGNALED;
	sq_publish(c, q);
}

/* The engine must put q in ERR: prints the state, records EXIT_STATE if it did not. */
static void
expect_err(const char *what, const struct qp *q)
{
	uint32_t st = wait_state(q, DROCE_SHM_QPS_ERR);

	if (st == DROCE_SHM_QPS_ERR) {
		printf("  qp %u state ERR (%s)\n", q->qpn, what);
		return;
	}
	printf("  FAIL qp %u state %s after %s, expected ERR\n", q->qpn,
	       droce_shm_qp_state_name((uint8_t)st), what);
	verdict(EXIT_STATE);
}

static void
expect_state(const char *what, const struct qp *q, uint32_t want)
{
	uint32_t st = qp_state(q);

	if (st == want) {
		printf("  qp %u state %s (%s)\n", q->qpn, droce_shm_qp_state_name((uint8_t)st),
		       what);
		return;
	}
	printf("  FAIL qp %u state %s after %s, expected %s\n", q->qpn,
	       droce_shm_qp_state_name((uint8_t)st), what,
	       droce_shm_qp_state_name((uint8_t)want));
	verdict(EXIT_STATE);
}

/* A response must come to a malformed message, or droced may close the connection. */
static void
garbage_msg(struct conn *c, const void *msg, size_t len, const char *what)
{
	struct droce_proto_resp resp;
	int r = xfer(c, msg, len, NULL, 0, &resp, NULL, 0, NULL);

	if (r == 1)
		printf("  %s: answered, status %d\n", what, resp.status);
	else if (r == 0)
		printf("  %s: droced closed the connection\n", what);
	else {
		printf("  FAIL %s: no answer\n", what);
		verdict(EXIT_DEAD);
	}
}

/* ---- Modes ---- */

static void
m_sq_prod(struct conn *c)
{
	uint32_t cons = __atomic_load_n(&c->a.ctl->sq.cons, __ATOMIC_ACQUIRE);

	__atomic_store_n(&c->a.ctl->sq.prod, cons + 1000000u, __ATOMIC_RELEASE);
	ring(c, &c->a);
	expect_err("SQ producer a million ahead", &c->a);
}

static void
m_wqe_num_sge(struct conn *c)
{
	struct droce_shm_swqe *s = sq_slot(&c->a);

	s->wr_id = 1;
	s->opcode = DROCE_SHM_WR_SEND;
	s->flags = DROCE_SHM_SEND_SIGNALED;
	s->num_sge = 200;
	sq_publish(c, &c->a);
	expect_err("WQE with num_sge 200", &c->a);
}

static void
m_wqe_inline(struct conn *c)
{
	struct droce_shm_swqe *s = sq_slot(&c->a);

	s->wr_id = 2;
	s->opcode = DROCE_SHM_WR_SEND;
	s->flags = DROCE_SHM_SEND_SIGNALED | DROCE_SHM_SEND_INLINE;
	s->inline_len = 0xFFFFFFF0u;
	sq_publish(c, &c->a);
	expect_err("WQE with inline_len 0xFFFFFFF0", &c->a);
}

static void
m_wqe_opcode(struct conn *c)
{
	struct droce_shm_swqe *s = sq_slot(&c->a);

	s->wr_id = 3;
	s->opcode = 250;
	s->flags = DROCE_SHM_SEND_SIGNALED;
	sq_publish(c, &c->a);
	expect_err("WQE with opcode 250", &c->a);
}

static void
m_wqe_lkey(struct conn *c)
{
	struct droce_shm_swqe *s = sq_slot(&c->a);
	struct droce_shm_sge *sge = (struct droce_shm_sge *)(s + 1);

	s->wr_id = 4;
	s->opcode = DROCE_SHM_WR_SEND;
	s->flags = DROCE_SHM_SEND_SIGNALED;
	s->num_sge = 1;
	sge->addr = rnd();
	sge->length = 4096;
	sge->lkey = (uint32_t)rnd();
	sq_publish(c, &c->a);
	expect_err("SGE outside any MR with a random lkey", &c->a);
}

static void
m_ud_bad_ah(struct conn *c)
{
	struct droce_shm_swqe *s = sq_slot(&c->ud);

	/* A UD send through an address handle this client never created. */
	s->wr_id = 5;
	s->opcode = DROCE_SHM_WR_SEND;
	s->flags = DROCE_SHM_SEND_SIGNALED;
	s->ud.ah = (uint32_t)rnd() | 0x1000u;
	s->ud.remote_qpn = c->ud.qpn;
	s->ud.remote_qkey = UD_QKEY;
	sq_publish(c, &c->ud);
	expect_err("UD send with a foreign AH number", &c->ud);
}

static void
m_rq_prod(struct conn *c)
{
	__atomic_store_n(&c->b.ctl->rq.prod, 0x80000000u, __ATOMIC_RELEASE);
	post_empty_send(c, &c->a, 6);
	expect_err("RQ producer 2^31 ahead, then a message", &c->b);
}

static void
m_cq_cons(struct conn *c)
{
	/* A consumer index ahead of anything written: the next completion overruns the CQ,
	 * which errors the QPs on it. */
	__atomic_store_n(&c->cq_ctl->ring.cons, 0x7FFFFFFFu, __ATOMIC_RELEASE);
	post_empty_recv(&c->b, 7);
	post_empty_send(c, &c->a, 7);
	expect_err("CQ consumer index lie", &c->b);
	if (__atomic_load_n(&c->cq_ctl->error, __ATOMIC_ACQUIRE) == 0) {
		printf("  FAIL CQ error flag not set after the overrun\n");
		verdict(EXIT_STATE);
	} else {
		printf("  cq error flag set\n");
	}
}

static void
m_doorbells(struct conn *c)
{
	uint32_t e;
	unsigned int w;

	/* Every bit of every doorbell block: slots without QPs and QPs with nothing new. */
	for (e = 0; e < c->nb_engines; e++) {
		struct droce_shm_doorbell *db = (struct droce_shm_doorbell *)(c->region +
									      c->db_off[e]);

		for (w = 0; w < DROCE_SHM_DB_WORDS; w++)
			__atomic_store_n(&db->words[w], ~0ull, __ATOMIC_RELEASE);
		__atomic_store_n(&db->summary, ~0ull, __ATOMIC_RELEASE);
	}
	usleep(50000);
	expect_state("all doorbell bits set", &c->a, DROCE_SHM_QPS_RTS);
	expect_state("all doorbell bits set", &c->b, DROCE_SHM_QPS_RTS);
}

static void
m_random_region(struct conn *c)
{
	uint32_t e;

	/* The whole region, header and doorbells included; the engine may do anything to
	 * these QPs but must stay within the region and alive. */
	rnd_fill(c->region, c->region_size);
	for (e = 0; e < c->nb_engines; e++) {
		struct droce_shm_doorbell *db = (struct droce_shm_doorbell *)(c->region +
									      c->db_off[e]);

		__atomic_store_n(&db->summary, ~0ull, __ATOMIC_RELEASE);
	}
	usleep(200000);
	printf("  region of %" PRIu64 " bytes overwritten with random bytes\n", c->region_size);
}

static void
m_random_wqes(struct conn *c)
{
	struct qp *qs[3] = { &c->a, &c->b, &c->ud };
	unsigned int i, k;

	/* Random bytes in every send and receive slot, random producer indices, rung often. */
	for (i = 0; i < RANDOM_ROUNDS; i++) {
		struct qp *q = qs[i % 3];

		for (k = 0; k < q->sq_size; k++)
			rnd_fill(q->sq + (size_t)k * q->sq_stride, q->sq_stride);
		for (k = 0; k < q->rq_size; k++)
			rnd_fill(q->rq + (size_t)k * q->rq_stride, q->rq_stride);
		__atomic_store_n(&q->ctl->sq.prod, (uint32_t)rnd(), __ATOMIC_RELEASE);
		__atomic_store_n(&q->ctl->rq.prod, (uint32_t)rnd(), __ATOMIC_RELEASE);
		ring(c, q);
		if (i % 16 == 0)
			usleep(1000);
	}
	usleep(100000);
	printf("  %d rounds of random WQEs and producer indices\n", RANDOM_ROUNDS);
}

static void
m_hello_twice(struct conn *c)
{
	struct droce_proto_req req;
	struct droce_proto_resp resp;
	int fds[2];
	unsigned int nfds = 0;
	int32_t st;

	memset(&req, 0, sizeof(req));
	req.op = DROCE_PROTO_OP_HELLO;
	req.hello.version = DROCE_PROTO_VERSION;
	req.seq = ++c->seq;
	if (xfer(c, &req, sizeof(req), NULL, 0, &resp, fds, 2, &nfds) == 1) {
		st = resp.status;
		printf("  second HELLO: status %d, %u fds\n", st, nfds);
		if (st == 0)
			printf("  note: droced accepted a second HELLO on one connection\n");
		while (nfds > 0)
			close(fds[--nfds]);
	} else if (c->closed) {
		printf("  second HELLO: droced closed the connection\n");
	} else {
		printf("  FAIL second HELLO: no answer\n");
		verdict(EXIT_DEAD);
	}
	/* A HELLO with a wrong version and port on a fresh connection. */
	{
		struct conn c2;

		if (conn_open(&c2) == 0) {
			req.hello.version = 0xDEAD;
			req.hello.port = 77;
			garbage_msg(&c2, &req, sizeof(req), "HELLO version 0xDEAD port 77");
			conn_close(&c2);
		}
	}
}

static void
m_unknown_ops(struct conn *c)
{
	static const uint32_t ops[] = {
		0, DROCE_PROTO_OP_MAX, DROCE_PROTO_OP_MAX + 1, 1000, UINT32_MAX
	};
	struct droce_proto_req req;
	char what[64];
	unsigned int i;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		memset(&req, 0, sizeof(req));
		req.op = ops[i];
		req.seq = ++c->seq;
		snprintf(what, sizeof(what), "unknown op %u", ops[i]);
		garbage_msg(c, &req, sizeof(req), what);
	}
}

static void
m_truncated(struct conn *c)
{
	static const size_t lens[] = { 1, 4, 8, 12 };
	struct droce_proto_req req;
	uint8_t big[sizeof(struct droce_proto_req) + 512];
	char what[64];
	unsigned int i;

	memset(&req, 0, sizeof(req));
	req.op = DROCE_PROTO_OP_ALLOC_PD;
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		req.seq = ++c->seq;
		snprintf(what, sizeof(what), "ALLOC_PD truncated to %zu bytes", lens[i]);
		garbage_msg(c, &req, lens[i], what);
	}
	req.op = DROCE_PROTO_OP_CREATE_QP;
	req.seq = ++c->seq;
	garbage_msg(c, &req, offsetof(struct droce_proto_req, create_qp.cap),
		    "CREATE_QP cut before its caps");
	memset(big, 0, sizeof(big));
	req.op = DROCE_PROTO_OP_STATUS;
	req.seq = ++c->seq;
	memcpy(big, &req, sizeof(req));
	garbage_msg(c, big, sizeof(big), "STATUS 512 bytes too long");
}

static void
m_foreign_handles(struct conn *c)
{
	static const uint32_t ops[] = {
		DROCE_PROTO_OP_DEALLOC_PD, DROCE_PROTO_OP_DEREG_MR, DROCE_PROTO_OP_DESTROY_CQ,
		DROCE_PROTO_OP_QUERY_SRQ, DROCE_PROTO_OP_DESTROY_SRQ, DROCE_PROTO_OP_QUERY_QP,
		DROCE_PROTO_OP_DESTROY_QP, DROCE_PROTO_OP_DESTROY_AH,
	};
	struct droce_proto_resp resp;
	struct droce_proto_req req;
	struct droce_shm_qp_attr a;
	struct conn other;
	unsigned int i, k;
	int32_t st;

	/* Random handle numbers for every op that names an object. */
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		for (k = 0; k < 8; k++) {
			uint32_t h = k == 0 ? DROCE_PROTO_NO_HANDLE : (uint32_t)rnd() | 0x10000u;

			st = simple(c, ops[i], h, &resp);
			if (st == NO_RESPONSE && !c->closed) {
				printf("  FAIL %s handle %u: no answer\n", droce_proto_op_name(ops[i]),
				       h);
				verdict(EXIT_DEAD);
				return;
			}
			if (st == 0) {
				printf("  FAIL %s of random handle %u succeeded\n",
				       droce_proto_op_name(ops[i]), h);
				verdict(EXIT_STATE);
			}
		}
	printf("  %zu ops x 8 random handles refused\n", sizeof(ops) / sizeof(ops[0]));
	/* CREATE_QP on a foreign PD and CQs. */
	memset(&req, 0, sizeof(req));
	req.op = DROCE_PROTO_OP_CREATE_QP;
	req.create_qp.pd = (uint32_t)rnd() | 0x10000u;
	req.create_qp.send_cq = (uint32_t)rnd();
	req.create_qp.recv_cq = c->cq;
	req.create_qp.srq = (uint32_t)rnd();
	req.create_qp.qp_type = DROCE_SHM_QPT_RC;
	req.create_qp.cap.max_send_wr = 4;
	st = call(c, &req, NULL, 0, &resp, NULL, 0, NULL);
	printf("  CREATE_QP with foreign pd/cq/srq: status %d\n", st);
	if (st == 0)
		verdict(EXIT_STATE);
	/*
	 * Another client uses this one's handle numbers (handles are per client, so they are
	 * either its own objects or nothing): this client's QPs must not change.
	 */
	if (conn_open(&other) == 0 && hello(&other) == 0) {
		memset(&a, 0, sizeof(a));
		a.mask = DROCE_SHM_QP_STATE;
		a.qp_state = DROCE_SHM_QPS_ERR;
		memset(&req, 0, sizeof(req));
		req.op = DROCE_PROTO_OP_MODIFY_QP;
		req.modify_qp.handle = c->a.handle;
		req.modify_qp.attr = a;
		st = call(&other, &req, NULL, 0, &resp, NULL, 0, NULL);
		printf("  other client MODIFY_QP(handle %u -> ERR): status %d\n", c->a.handle, st);
		st = simple(&other, DROCE_PROTO_OP_DESTROY_QP, c->b.handle, &resp);
		printf("  other client DESTROY_QP(handle %u): status %d\n", c->b.handle, st);
		st = simple(&other, DROCE_PROTO_OP_DESTROY_CQ, c->cq, &resp);
		printf("  other client DESTROY_CQ(handle %u): status %d\n", c->cq, st);
		usleep(50000);
		expect_state("another client's requests", &c->a, DROCE_SHM_QPS_RTS);
		expect_state("another client's requests", &c->b, DROCE_SHM_QPS_RTS);
	}
	conn_close(&other);
}

static void
m_modify_random(struct conn *c)
{
	struct droce_proto_req req;
	struct droce_proto_resp resp;
	unsigned int i, ok = 0;
	int32_t st;

	for (i = 0; i < RANDOM_ROUNDS; i++) {
		struct qp *q = i % 3 == 0 ? &c->a : i % 3 == 1 ? &c->b : &c->ud;

		memset(&req, 0, sizeof(req));
		req.op = DROCE_PROTO_OP_MODIFY_QP;
		req.modify_qp.handle = q->handle;
		rnd_fill(&req.modify_qp.attr, sizeof(req.modify_qp.attr));
		if (i % 2 == 0)	/* half with only known mask bits, to get past the first check */
			req.modify_qp.attr.mask &= (1u << 21) - 1;
		st = call(c, &req, NULL, 0, &resp, NULL, 0, NULL);
		if (st == NO_RESPONSE) {
			printf("  FAIL MODIFY_QP with random attributes #%u: no answer\n", i);
			verdict(EXIT_DEAD);
			return;
		}
		if (st == 0)
			ok++;
	}
	printf("  %d MODIFY_QP with random attributes answered (%u accepted)\n", RANDOM_ROUNDS,
	       ok);
}

static void
m_random_requests(struct conn *c)
{
	struct droce_proto_req req;
	struct droce_proto_resp resp;
	unsigned int i;
	int32_t st;

	/* Every op with random bytes after the header (no descriptors). */
	for (i = 0; i < RANDOM_ROUNDS; i++) {
		rnd_fill(&req, sizeof(req));
		req.op = DROCE_PROTO_OP_QUERY_PORTS + i % (DROCE_PROTO_OP_MAX - 1);
		st = call(c, &req, NULL, 0, &resp, NULL, 0, NULL);
		if (st == NO_RESPONSE) {
			if (c->closed) {
				printf("  random %s #%u: droced closed the connection\n",
				       droce_proto_op_name(req.op), i);
				return;
			}
			printf("  FAIL random %s #%u: no answer\n", droce_proto_op_name(req.op), i);
			verdict(EXIT_DEAD);
			return;
		}
	}
	printf("  %d random requests answered\n", RANDOM_ROUNDS);
}

/* REG_MR of a memfd smaller than the pieces claim, then a send from the missing part. */
static void
m_mr_short_memfd(struct conn *c)
{
	struct droce_proto_req req;
	struct droce_proto_resp resp;
	struct droce_shm_swqe *s;
	struct droce_shm_sge *sge;
	int fd = memfd_create("raw_garbage_mr", MFD_CLOEXEC);
	int32_t st;

	if (fd < 0 || ftruncate(fd, MR_FILE_SIZE) != 0) {
		printf("  memfd: %s\n", strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	memset(&req, 0, sizeof(req));
	req.op = DROCE_PROTO_OP_REG_MR;
	req.reg_mr.pd = c->pd;
	req.reg_mr.access = DROCE_SHM_ACCESS_LOCAL_WRITE;
	req.reg_mr.iova = 0x100000000ull;
	req.reg_mr.length = MR_CLAIMED;
	req.reg_mr.nb_pieces = 1;
	req.reg_mr.pieces[0].off = 0;
	req.reg_mr.pieces[0].len = MR_CLAIMED;
	st = call(c, &req, &fd, 1, &resp, NULL, 0, NULL);
	close(fd);
	printf("  REG_MR of %u bytes over a %u-byte memfd: status %d\n", MR_CLAIMED,
	       MR_FILE_SIZE, st);
	if (st != 0)
		return;
	/* droced took it: a send from past the file's end must not kill it (SIGBUS). */
	s = sq_slot(&c->a);
	s->wr_id = 8;
	s->opcode = DROCE_SHM_WR_SEND;
	s->flags = DROCE_SHM_SEND_SIGNALED;
	s->num_sge = 1;
	sge = (struct droce_shm_sge *)(s + 1);
	sge->addr = req.reg_mr.iova + MR_CLAIMED / 2;
	sge->length = 1024;
	sge->lkey = resp.obj.lkey;
	post_empty_recv(&c->b, 8);
	sq_publish(c, &c->a);
	usleep(200000);
}

/* REG_MR of a memfd that is then shrunk to nothing, and a send from it. */
static void
m_mr_shrunk(struct conn *c)
{
	struct droce_proto_req req;
	struct droce_proto_resp resp;
	struct droce_shm_swqe *s;
	struct droce_shm_sge *sge;
	/* Sealable, as libdroce's are: droced seals it against shrinking or refuses it. */
	int fd = memfd_create("raw_garbage_mr", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	int32_t st;

	if (fd < 0 || ftruncate(fd, MR_CLAIMED) != 0) {
		if (fd >= 0)
			close(fd);
		return;
	}
	memset(&req, 0, sizeof(req));
	req.op = DROCE_PROTO_OP_REG_MR;
	req.reg_mr.pd = c->pd;
	req.reg_mr.access = DROCE_SHM_ACCESS_LOCAL_WRITE;
	req.reg_mr.iova = 0x200000000ull;
	req.reg_mr.length = MR_CLAIMED;
	req.reg_mr.nb_pieces = 1;
	req.reg_mr.pieces[0].len = MR_CLAIMED;
	st = call(c, &req, &fd, 1, &resp, NULL, 0, NULL);
	printf("  REG_MR of a %u-byte memfd: status %d\n", MR_CLAIMED, st);
	if (st == 0) {
		int tr = ftruncate(fd, 0);

		printf("  ftruncate to 0 after registration: %s\n",
		       tr == 0 ? "allowed (droced did not seal it)" : strerror(errno));
		if (tr == 0) {
			printf("  FAIL droced maps an MR memfd the client can still shrink\n");
			verdict(EXIT_STATE);
		}
		s = sq_slot(&c->a);
		s->wr_id = 9;
		s->opcode = DROCE_SHM_WR_SEND;
		s->flags = DROCE_SHM_SEND_SIGNALED;
		s->num_sge = 1;
		sge = (struct droce_shm_sge *)(s + 1);
		sge->addr = req.reg_mr.iova + 4096;
		sge->length = 2048;
		sge->lkey = resp.obj.lkey;
		post_empty_recv(&c->b, 9);
		sq_publish(c, &c->a);
		usleep(200000);
	}
	close(fd);
}

/*
 * A REG_MR of one MAPPING piece over [addr, addr + len) at file offset off, with nfds fds
 * (none is right: a MAPPING piece takes none).
 */
static int32_t
reg_in_place(struct conn *c, void *addr, uint32_t len, uint64_t off, uint32_t access,
	     const int *fds, unsigned int nfds, struct droce_proto_resp *resp)
{
	struct droce_proto_req req;

	memset(&req, 0, sizeof(req));
	req.op = DROCE_PROTO_OP_REG_MR;
	req.reg_mr.pd = c->pd;
	req.reg_mr.access = access;
	req.reg_mr.iova = (uintptr_t)addr;
	req.reg_mr.length = len;
	req.reg_mr.nb_pieces = 1;
	req.reg_mr.pieces[0].off = off;
	req.reg_mr.pieces[0].len = len;
	req.reg_mr.pieces[0].addr = (uintptr_t)addr;
	req.reg_mr.pieces[0].flags = DROCE_PROTO_PIECE_MAPPING;
	return call(c, &req, fds, nfds, resp, NULL, 0, NULL);
}

/* A shared file of len bytes in /dev/shm, unlinked: its fd. */
static int
shm_file(uint32_t len)
{
	char path[] = "/dev/shm/raw_garbage_XXXXXX";
	int fd = mkstemp(path);

	if (fd < 0)
		return -1;
	unlink(path);
	if (ftruncate(fd, len) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The file of fd opened again, read-only (a file the client may not write). */
static int
reopen_rdonly(int fd)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return open(path, O_RDONLY | O_CLOEXEC);
}

#define IN_PLACE_REFUSED	6

/*
 * In-place pieces droced must refuse: a mapping not there, a private mapping, a read-only
 * one (of a file opened O_RDONLY) with write access, the wrong file offset, pages past the
 * file's end, an fd sent along. test_hostile.py checks the line printed.
 */
static void
m_mr_in_place_refused(struct conn *c)
{
	static const char *const what[IN_PLACE_REFUSED] = {
		"unmapped", "private", "read-only for writing", "wrong offset", "past the end",
		"with an fd",
	};
	const uint32_t w = DROCE_SHM_ACCESS_LOCAL_WRITE;
	struct droce_proto_resp resp;
	int fd = shm_file(4 * MR_FILE_SIZE), rofd = fd >= 0 ? reopen_rdonly(fd) : -1;
	uint8_t *shared = MAP_FAILED, *priv = MAP_FAILED, *ro = MAP_FAILED, *hole = MAP_FAILED;
	uint8_t *beyond = MAP_FAILED;
	int32_t st[IN_PLACE_REFUSED];
	unsigned int i;

	if (fd < 0 || rofd < 0) {
		printf("  FAIL /dev/shm file: %s\n", strerror(errno));
		verdict(EXIT_STATE);
		goto out;
	}
	shared = mmap(NULL, 4 * MR_FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	priv = mmap(NULL, MR_FILE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	ro = mmap(NULL, MR_FILE_SIZE, PROT_READ, MAP_SHARED, rofd, 0);
	/* Its last two pages lie past the file's end: mmap allows it, a pin would not. */
	beyond = mmap(NULL, 2 * MR_FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		      3 * MR_FILE_SIZE);
	hole = mmap(NULL, MR_FILE_SIZE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED || priv == MAP_FAILED || ro == MAP_FAILED ||
	    beyond == MAP_FAILED || hole == MAP_FAILED) {
		printf("  FAIL mmap: %s\n", strerror(errno));
		verdict(EXIT_STATE);
		goto out;
	}
	munmap(hole, MR_FILE_SIZE);
	st[0] = reg_in_place(c, hole, MR_FILE_SIZE, 0, w, NULL, 0, &resp);
	st[1] = reg_in_place(c, priv, MR_FILE_SIZE, 0, w, NULL, 0, &resp);
	st[2] = reg_in_place(c, ro, MR_FILE_SIZE, 0, w, NULL, 0, &resp);
	st[3] = reg_in_place(c, shared + MR_FILE_SIZE, MR_FILE_SIZE, 0, w, NULL, 0, &resp);
	st[4] = reg_in_place(c, beyond, 2 * MR_FILE_SIZE, 3 * MR_FILE_SIZE, w, NULL, 0, &resp);
	st[5] = reg_in_place(c, shared, MR_FILE_SIZE, 0, w, &fd, 1, &resp);
	printf("  REG_MR in place refused:");
	for (i = 0; i < IN_PLACE_REFUSED; i++)
		printf("%s %s %d", i == 0 ? "" : ",", what[i], st[i]);
	printf("\n");
	for (i = 0; i < IN_PLACE_REFUSED; i++)
		if (st[i] == 0 || st[i] == NO_RESPONSE) {
			printf("  FAIL in-place piece %s: %s\n", what[i],
			       st[i] == 0 ? "accepted" : "unanswered");
			verdict(st[i] == 0 ? EXIT_STATE : EXIT_DEAD);
		}
out:
	/* Any MR droced accepted wrongly goes with the connection. */
	if (shared != MAP_FAILED)
		munmap(shared, 4 * MR_FILE_SIZE);
	if (priv != MAP_FAILED)
		munmap(priv, MR_FILE_SIZE);
	if (ro != MAP_FAILED)
		munmap(ro, MR_FILE_SIZE);
	if (beyond != MAP_FAILED)
		munmap(beyond, 2 * MR_FILE_SIZE);
	if (rofd >= 0)
		close(rofd);
	if (fd >= 0)
		close(fd);
}

/*
 * A shared file registered in place, then truncated to nothing: a SEND from it and a
 * receive into it make the engine touch pages past the file's end (SIGBUS), which droced
 * must survive.
 */
static void
m_mr_in_place_truncated(struct conn *c)
{
	struct droce_proto_resp resp;
	struct droce_shm_swqe *s;
	struct droce_shm_rwqe *r;
	struct droce_shm_sge *sge;
	int fd = shm_file(MR_CLAIMED);
	uint8_t *buf;
	int32_t st;

	if (fd < 0) {
		printf("  FAIL /dev/shm file: %s\n", strerror(errno));
		verdict(EXIT_STATE);
		return;
	}
	buf = mmap(NULL, MR_CLAIMED, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (buf == MAP_FAILED) {
		printf("  FAIL mmap: %s\n", strerror(errno));
		verdict(EXIT_STATE);
		close(fd);
		return;
	}
	memset(buf, 0x5A, MR_CLAIMED);
	st = reg_in_place(c, buf, MR_CLAIMED, 0, DROCE_SHM_ACCESS_LOCAL_WRITE, NULL, 0,
			  &resp);
	printf("  REG_MR in place of a %u-byte shared file: status %d\n", MR_CLAIMED, st);
	if (st != 0) {
		printf("  FAIL a shared file mapping was not registered in place\n");
		verdict(EXIT_STATE);
		goto out;
	}
	printf("  ftruncate to 0 after registration: %s\n",
	       ftruncate(fd, 0) == 0 ? "done" : strerror(errno));
	/* A receive on b into the truncated pages, then a send from them on a. */
	r = (struct droce_shm_rwqe *)(c->b.rq +
				      (size_t)(c->b.rq_prod & (c->b.rq_size - 1)) * c->b.rq_stride);
	memset(r, 0, c->b.rq_stride);
	r->wr_id = 10;
	r->num_sge = 1;
	sge = (struct droce_shm_sge *)(r + 1);
	sge->addr = (uintptr_t)buf + MR_CLAIMED / 2;
	sge->length = 4096;
	sge->lkey = resp.obj.lkey;
	c->b.rq_prod++;
	__atomic_store_n(&c->b.ctl->rq.prod, c->b.rq_prod, __ATOMIC_RELEASE);
	s = sq_slot(&c->a);
	s->wr_id = 10;
	s->opcode = DROCE_SHM_WR_SEND;
	s->flags = DROCE_SHM_SEND_SIGNALED;
	s->num_sge = 1;
	sge = (struct droce_shm_sge *)(s + 1);
	sge->addr = (uintptr_t)buf + 4096;
	sge->length = 2048;
	sge->lkey = resp.obj.lkey;
	sq_publish(c, &c->a);
	usleep(200000);
out:
	munmap(buf, MR_CLAIMED);
	close(fd);
}

struct mode {
	const char *name;
	void (*fn)(struct conn *c);
	const char *what;
};

static const struct mode modes[] = {
	{ "sq_prod", m_sq_prod, "lying SQ producer index" },
	{ "wqe_num_sge", m_wqe_num_sge, "WQE with num_sge 200" },
	{ "wqe_inline", m_wqe_inline, "WQE with a huge inline_len" },
	{ "wqe_opcode", m_wqe_opcode, "WQE with opcode 250" },
	{ "wqe_lkey", m_wqe_lkey, "SGE outside any MR, random lkey" },
	{ "ud_bad_ah", m_ud_bad_ah, "UD WQE naming a foreign AH" },
	{ "rq_prod", m_rq_prod, "lying RQ producer index" },
	{ "cq_cons", m_cq_cons, "lying CQ consumer index" },
	{ "doorbells", m_doorbells, "every doorbell bit set" },
	{ "random_wqes", m_random_wqes, "random WQEs and producer indices" },
	{ "random_region", m_random_region, "random bytes over the whole region" },
	{ "hello_twice", m_hello_twice, "HELLO twice, HELLO with a bad version" },
	{ "unknown_ops", m_unknown_ops, "unknown op numbers" },
	{ "truncated", m_truncated, "truncated and oversized messages" },
	{ "foreign_handles", m_foreign_handles, "handles it does not own" },
	{ "modify_random", m_modify_random, "MODIFY_QP with random attributes" },
	{ "random_requests", m_random_requests, "random request bodies" },
	{ "mr_short_memfd", m_mr_short_memfd, "MR pieces longer than their memfd" },
	{ "mr_shrunk", m_mr_shrunk, "MR memfd shrunk after registration" },
	{ "mr_in_place_refused", m_mr_in_place_refused, "in-place MR pieces it may not map" },
	{ "mr_in_place_truncated", m_mr_in_place_truncated,
	  "in-place MR file truncated after registration" },
};

/* droced answers STATUS and QUERY_PORTS (on c if still open, and on a fresh connection). */
static bool
still_serving(struct conn *c)
{
	struct droce_proto_resp resp;
	struct conn fresh;
	bool ok = true;
	int32_t st;

	if (!c->closed) {
		st = simple(c, DROCE_PROTO_OP_STATUS, 0, &resp);
		if (st == NO_RESPONSE && !c->closed) {
			printf("  FAIL STATUS on the same connection: no answer\n");
			ok = false;
		} else if (st != NO_RESPONSE) {
			printf("  STATUS on the same connection: status %d clients %u qps %u\n", st,
			       resp.stat.nb_clients, resp.stat.qps);
		}
	}
	if (c->closed)
		printf("  droced closed the connection\n");
	if (conn_open(&fresh) != 0) {
		printf("  FAIL cannot connect to droced any more\n");
		return false;
	}
	st = simple(&fresh, DROCE_PROTO_OP_QUERY_PORTS, 0, &resp);
	if (st == NO_RESPONSE) {
		printf("  FAIL QUERY_PORTS on a fresh connection: no answer\n");
		ok = false;
	} else {
		printf("  QUERY_PORTS: status %d, %u ports\n", st, resp.ports.nb_ports);
	}
	st = simple(&fresh, DROCE_PROTO_OP_STATUS, 0, &resp);
	if (st == NO_RESPONSE) {
		printf("  FAIL STATUS on a fresh connection: no answer\n");
		ok = false;
	} else {
		printf("  STATUS: status %d pid %u clients %u qps %u\n", st, resp.stat.pid,
		       resp.stat.nb_clients, resp.stat.qps);
	}
	conn_close(&fresh);
	return ok;
}

static int
run_mode(const struct mode *m)
{
	struct conn c;

	printf("mode %s: %s\n", m->name, m->what);
	if (setup(&c) != 0) {
		conn_close(&c);
		/* Set-up failing after earlier modes may mean droced is gone. */
		memset(&c, 0, sizeof(c));
		c.sock = -1;
		c.closed = true;
		if (!still_serving(&c)) {
			verdict(EXIT_DEAD);
			printf("FAIL mode %s: droced does not answer\n", m->name);
			return EXIT_DEAD;
		}
		printf("FAIL mode %s: set-up failed\n", m->name);
		return EXIT_SETUP;
	}
	m->fn(&c);
	if (!still_serving(&c)) {
		verdict(EXIT_DEAD);
		conn_close(&c);
		printf("FAIL mode %s: droced stopped answering\n", m->name);
		return EXIT_DEAD;
	}
	conn_close(&c);
	printf("ok mode %s\n", m->name);
	return EXIT_OK;
}

static void
usage(const char *argv0)
{
	unsigned int i;

	printf("usage: %s [-m MODE|all] [-S SEED] [-v]\n"
	       "A hostile droced client (DROCE_SOCKET): writes garbage, then checks that droced\n"
	       "still answers and that its own QPs went to ERR where they must.\n"
	       "exit: 0 ok, 1 droced stopped answering, 2 QP state not as required, 3 set-up\n"
	       "modes:\n", argv0);
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		printf("  %-16s %s\n", modes[i].name, modes[i].what);
}

int
main(int argc, char **argv)
{
	const char *mode = "all";
	unsigned int i, ran = 0;
	uint64_t seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	int c, setup_failed = 0;

	while ((c = getopt(argc, argv, "m:S:vh")) != -1) {
		switch (c) {
		case 'm':
			mode = optarg;
			break;
		case 'S':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			usage(argv[0]);
			return EXIT_OK;
		default:
			usage(argv[0]);
			return EXIT_SETUP;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	rng_state = seed != 0 ? seed : 1;
	printf("seed %" PRIu64 "\n", seed);
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		int r;

		if (strcmp(mode, "all") != 0 && strcmp(mode, modes[i].name) != 0)
			continue;
		ran++;
		r = run_mode(&modes[i]);
		if (r == EXIT_SETUP)
			setup_failed++;
		if (r == EXIT_DEAD)
			break;
	}
	if (ran == 0) {
		usage(argv[0]);
		return EXIT_SETUP;
	}
	if (setup_failed > 0 && worst == EXIT_OK) {
		printf("set-up failed in %d modes\n", setup_failed);
		return EXIT_SETUP;
	}
	printf("%s\n", worst == EXIT_OK ? "droced survived every mode" :
	       worst == EXIT_DEAD ? "droced stopped answering" : "QP states not as required");
	return worst;
}
