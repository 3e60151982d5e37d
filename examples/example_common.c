/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Helpers shared by the examples (example_common.h). Nothing here knows about droce: the
 * examples must run unchanged on any verbs provider.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "example_common.h"

#define US_PER_S		1000000ull
#define US_PER_MS		1000u
#define CONNECT_RETRY_US	100000u
#define LISTEN_BACKLOG		64
#define DEST_MAGIC		"droce-ex1"
/* magic, five 8-digit hex fields and 32 GID hex digits, space separated, NUL padded. */
#define DEST_MSG_LEN		96
#define GID_HEX_LEN		32

const char *ex_prog = "example";

uint64_t
ex_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * US_PER_S + (uint64_t)ts.tv_nsec / 1000u;
}

static void
vmsg(const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", ex_prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void
ex_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
}

int
ex_usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try '%s --help' for more information.\n", ex_prog);
	return EX_EXIT_USAGE;
}

int
ex_parse_u32(const char *opt, const char *arg, uint32_t min, uint32_t max, uint32_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(arg, &end, 0);
	if (arg[0] == '\0' || arg[0] == '-' || *end != '\0' || errno != 0 || v < min ||
	    v > max) {
		return ex_usage_error("%s: '%s' is not a number in [%" PRIu32 ", %" PRIu32 "]", opt,
				      arg, min, max);
	}
	*out = (uint32_t)v;
	return 0;
}

static const struct {
	unsigned int bytes;
	enum ibv_mtu mtu;
} mtu_table[] = {
	{ 256, IBV_MTU_256 },
	{ 512, IBV_MTU_512 },
	{ 1024, IBV_MTU_1024 },
	{ 2048, IBV_MTU_2048 },
	{ 4096, IBV_MTU_4096 },
};

int
ex_parse_mtu(const char *arg, enum ibv_mtu *out)
{
	size_t i;

	for (i = 0; i < sizeof(mtu_table) / sizeof(mtu_table[0]); i++) {
		char s[16];

		snprintf(s, sizeof(s), "%u", mtu_table[i].bytes);
		if (strcmp(arg, s) == 0) {
			*out = mtu_table[i].mtu;
			return 0;
		}
	}
	return ex_usage_error("-m: '%s' is not a path MTU (256, 512, 1024, 2048 or 4096)", arg);
}

int
ex_parse_opt(int opt, const char *arg, uint32_t max_size, struct ex_opts *o)
{
	switch (opt) {
	case 'p':
		return ex_parse_u32("-p", arg, 1, UINT16_MAX, &o->tcp_port);
	case 'd':
		o->dev_name = arg;
		return EX_EXIT_OK;
	case 'i':
		return ex_parse_u32("-i", arg, 1, UINT8_MAX, &o->ib_port);
	case 'g':
		return ex_parse_u32("-g", arg, 0, EX_MAX_GID_INDEX, &o->gid_index);
	case 's':
		return ex_parse_u32("-s", arg, 1, max_size, &o->size);
	case 'n':
		return ex_parse_u32("-n", arg, 1, EX_MAX_ITERS, &o->iters);
	case 'm':
		if (ex_parse_mtu(arg, &o->mtu) != EX_EXIT_OK)
			return EX_EXIT_USAGE;
		o->mtu_set = true;
		return EX_EXIT_OK;
	case 'e':
		o->events = true;
		return EX_EXIT_OK;
	case 'T':
		return ex_parse_u32("-T", arg, 1, EX_MAX_TIMEOUT_S, &o->timeout_s);
	default:
		return EX_OPT_NOT_SHARED;
	}
}

int
ex_parse_peer(int argc, char **argv, struct ex_opts *o)
{
	if (optind < argc)
		o->server = argv[optind++];
	if (optind < argc)
		return ex_usage_error("unexpected argument '%s'", argv[optind]);
	return EX_EXIT_OK;
}

unsigned int
ex_mtu_bytes(enum ibv_mtu mtu)
{
	size_t i;

	for (i = 0; i < sizeof(mtu_table) / sizeof(mtu_table[0]); i++)
		if (mtu_table[i].mtu == mtu)
			return mtu_table[i].bytes;
	return 0;
}

struct ibv_context *
ex_open_device(const char *name)
{
	struct ibv_device **list;
	struct ibv_device *dev = NULL;
	struct ibv_context *ctx;
	int num = 0;
	int i;

	list = ibv_get_device_list(&num);
	if (list == NULL) {
		ex_err("ibv_get_device_list: %s (no RDMA device here?)", strerror(errno));
		return NULL;
	}
	for (i = 0; i < num; i++) {
		if (name == NULL || strcmp(ibv_get_device_name(list[i]), name) == 0) {
			dev = list[i];
			break;
		}
	}
	if (dev == NULL) {
		if (name == NULL)
			ex_err("no RDMA device found (with libdroce: is droced running, and does "
			       "DROCE_SOCKET name its control socket?)");
		else
			ex_err("no RDMA device named '%s'", name);
		ibv_free_device_list(list);
		return NULL;
	}
	ctx = ibv_open_device(dev);
	if (ctx == NULL)
		ex_err("ibv_open_device(%s): %s", ibv_get_device_name(dev), strerror(errno));
	ibv_free_device_list(list);
	return ctx;
}

int
ex_query_port_gid(struct ibv_context *ctx, uint8_t port, int gid_index,
		  struct ibv_port_attr *port_attr, union ibv_gid *gid)
{
	static const union ibv_gid zero_gid;
	int ret;

	ret = ibv_query_port(ctx, port, port_attr);
	if (ret != 0) {
		ex_err("ibv_query_port(%u): %s", port, strerror(ret));
		return -1;
	}
	if (ibv_query_gid(ctx, port, gid_index, gid) != 0) {
		ex_err("ibv_query_gid(port %u, index %d): %s", port, gid_index,
		       strerror(errno != 0 ? errno : EINVAL));
		return -1;
	}
	if (memcmp(gid, &zero_gid, sizeof(*gid)) == 0) {
		ex_err("GID index %d of port %u is empty (choose another with -g)", gid_index,
		       port);
		return -1;
	}
	return 0;
}

void
ex_gid_str(const union ibv_gid *gid, char *buf, size_t len)
{
	if (inet_ntop(AF_INET6, gid->raw, buf, (socklen_t)len) == NULL)
		snprintf(buf, len, "?");
}

bool
ex_gid_is_v4(const union ibv_gid *gid)
{
	/* RoCEv2 IPv4 GIDs are IPv4-mapped IPv6 addresses, ::ffff:a.b.c.d (RFC 4291 2.5.5.2). */
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF };

	return memcmp(gid->raw, prefix, sizeof(prefix)) == 0;
}

void
ex_print_dest(const char *what, const struct ex_dest *d)
{
	char gid[INET6_ADDRSTRLEN];

	ex_gid_str(&d->gid, gid, sizeof(gid));
	printf("%-6s qpn 0x%06" PRIx32 " psn 0x%06" PRIx32 " gid %s\n", what, d->qpn, d->psn,
	       gid);
}

uint32_t
ex_random_psn(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	srand48((long)ts.tv_nsec ^ (long)getpid());
	return (uint32_t)lrand48() & EX_PSN_MASK;
}

void *
ex_alloc_buf(size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *p = NULL;
	int ret;

	len = (len + page - 1) / page * page;
	ret = posix_memalign(&p, page, len);
	if (ret != 0) {
		ex_err("cannot allocate %zu bytes: %s", len, strerror(ret));
		return NULL;
	}
	memset(p, 0, len);
	return p;
}

int
ex_res_create(struct ex_res *r, size_t len, int cqe, bool events)
{
	r->buf = ex_alloc_buf(len);
	if (r->buf == NULL)
		return -1;
	r->pd = ibv_alloc_pd(r->ctx);
	if (r->pd == NULL) {
		ex_err("ibv_alloc_pd: %s", strerror(errno));
		return -1;
	}
	r->mr = ibv_reg_mr(r->pd, r->buf, len, IBV_ACCESS_LOCAL_WRITE);
	if (r->mr == NULL) {
		ex_err("ibv_reg_mr(%zu bytes): %s", len, strerror(errno));
		return -1;
	}
	if (events) {
		r->ch = ibv_create_comp_channel(r->ctx);
		if (r->ch == NULL) {
			ex_err("ibv_create_comp_channel: %s", strerror(errno));
			return -1;
		}
	}
	r->cq = ibv_create_cq(r->ctx, cqe, NULL, r->ch, 0);
	if (r->cq == NULL) {
		ex_err("ibv_create_cq: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int
ex_res_destroy(struct ex_res *r)
{
	int fail = 0;
	int ret;

	if (r->cq != NULL && (ret = ibv_destroy_cq(r->cq)) != 0) {
		ex_err("ibv_destroy_cq: %s", strerror(ret));
		fail = -1;
	}
	if (r->ch != NULL && ibv_destroy_comp_channel(r->ch) != 0) {
		ex_err("ibv_destroy_comp_channel: %s", strerror(errno));
		fail = -1;
	}
	if (r->mr != NULL && (ret = ibv_dereg_mr(r->mr)) != 0) {
		ex_err("ibv_dereg_mr: %s", strerror(ret));
		fail = -1;
	}
	if (r->pd != NULL && (ret = ibv_dealloc_pd(r->pd)) != 0) {
		ex_err("ibv_dealloc_pd: %s", strerror(ret));
		fail = -1;
	}
	if (r->ctx != NULL && ibv_close_device(r->ctx) != 0) {
		ex_err("ibv_close_device: %s", strerror(errno));
		fail = -1;
	}
	free(r->buf);
	return fail;
}

int
ex_path_mtu(const struct ibv_port_attr *port_attr, uint8_t port, bool mtu_set,
	    enum ibv_mtu mtu, enum ibv_mtu *out)
{
	*out = mtu_set ? mtu : port_attr->active_mtu;
	if (*out > port_attr->active_mtu) {
		ex_err("path MTU %u exceeds the active MTU %u of port %u", ex_mtu_bytes(*out),
		       ex_mtu_bytes(port_attr->active_mtu), port);
		return -1;
	}
	return 0;
}

void
ex_ah_attr(struct ibv_ah_attr *ah, const union ibv_gid *dgid, uint8_t sgid_index, uint8_t port)
{
	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	ah->grh.dgid = *dgid;
	ah->grh.sgid_index = sgid_index;
	ah->grh.hop_limit = EX_HOP_LIMIT;
	ah->port_num = port;
}

static int
modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask, const char *state)
{
	int ret = ibv_modify_qp(qp, attr, mask);

	if (ret != 0) {
		ex_err("ibv_modify_qp to %s: %s", state, strerror(ret));
		return -1;
	}
	return 0;
}

int
ex_qp_init(struct ibv_qp *qp, enum ibv_qp_type type, uint8_t port, uint32_t qkey)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = port,
	};
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	if (type == IBV_QPT_UD) {
		attr.qkey = qkey;
		mask |= IBV_QP_QKEY;
	} else {
		attr.qp_access_flags = 0;	/* SENDs only: no remote access */
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	return modify_qp(qp, &attr, mask, "INIT");
}

int
ex_qp_connect(struct ibv_qp *qp, enum ibv_qp_type type, enum ibv_mtu mtu, uint8_t port,
	      uint8_t gid_index, const struct ex_dest *local, const struct ex_dest *remote)
{
	bool rc = type == IBV_QPT_RC;
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = mtu,
		.dest_qp_num = remote->qpn,
		.rq_psn = remote->psn,
		.max_dest_rd_atomic = 1,
		.min_rnr_timer = EX_RC_MIN_RNR_TIMER,
	};
	int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;

	ex_ah_attr(&attr.ah_attr, &remote->gid, gid_index, port);
	if (rc)
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	if (modify_qp(qp, &attr, mask, "RTR") != 0)
		return -1;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = local->psn;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (rc) {
		attr.timeout = EX_RC_TIMEOUT;
		attr.retry_cnt = EX_RC_RETRY_CNT;
		/* A receiver (or an empty SRQ) answers RNR NAK: retrying forever lets it catch up. */
		attr.rnr_retry = EX_RC_RNR_RETRY;
		attr.max_rd_atomic = 1;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	return modify_qp(qp, &attr, mask, "RTS");
}

int
ex_qp_ud_ready(struct ibv_qp *qp, uint32_t sq_psn)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_RTR };

	if (modify_qp(qp, &attr, IBV_QP_STATE, "RTR") != 0)
		return -1;
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = sq_psn;
	return modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN, "RTS");
}

/* Milliseconds left until deadline (microseconds), for poll(); 0 once it has passed. */
static int
ms_left(uint64_t deadline)
{
	uint64_t now = ex_now_us();

	if (now >= deadline)
		return 0;
	return (int)((deadline - now + US_PER_MS - 1) / US_PER_MS);
}

/* 1 when fd is ready for events, 0 on timeout, -1 on error (message printed). */
static int
wait_fd(int fd, short events, uint64_t deadline)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int ret;

	for (;;) {
		ret = poll(&pfd, 1, ms_left(deadline));
		if (ret > 0)
			return 1;
		if (ret == 0) {
			if (ex_now_us() >= deadline)
				return 0;
			continue;
		}
		if (errno != EINTR) {
			ex_err("poll: %s", strerror(errno));
			return -1;
		}
	}
}

static uint64_t
deadline_after(int timeout_s)
{
	return ex_now_us() + (uint64_t)timeout_s * US_PER_S;
}

static void
set_nodelay(int fd)
{
	int one = 1;

	/* Small control messages: do not wait for Nagle. Failure only costs latency. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int
ex_tcp_listen(uint16_t port)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(port),
				   .sin6_addr = IN6ADDR_ANY_INIT };
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_ANY) };
	int one = 1, zero = 0;
	int fd;

	/* One dual-stack socket when IPv6 exists, so clients may name the server either way. */
	fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, (struct sockaddr *)&a6, sizeof(a6)) != 0) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			ex_err("socket: %s", strerror(errno));
			return -1;
		}
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, (struct sockaddr *)&a4, sizeof(a4)) != 0) {
			ex_err("bind to TCP port %u: %s", port, strerror(errno));
			close(fd);
			return -1;
		}
	}
	if (listen(fd, LISTEN_BACKLOG) != 0) {
		ex_err("listen on TCP port %u: %s", port, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

int
ex_tcp_accept(int lfd, int timeout_s)
{
	uint64_t deadline = deadline_after(timeout_s);
	int fd;
	int ret;

	for (;;) {
		ret = wait_fd(lfd, POLLIN, deadline);
		if (ret == 0)
			ex_err("no client connected within %d s", timeout_s);
		if (ret <= 0)
			return -1;
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0)
			break;
		if (errno != EINTR && errno != ECONNABORTED) {
			ex_err("accept: %s", strerror(errno));
			return -1;
		}
	}
	set_nodelay(fd);
	return fd;
}

/* One non-blocking connect attempt to ai; the socket (blocking again) or -1 with errno. */
static int
connect_one(const struct addrinfo *ai, uint64_t deadline)
{
	socklen_t len = sizeof(int);
	int err = 0;
	int fd;

	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    ai->ai_protocol);
	if (fd < 0)
		return -1;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
		if (errno != EINPROGRESS) {
			err = errno;
			goto fail;
		}
		if (wait_fd(fd, POLLOUT, deadline) <= 0) {
			err = ETIMEDOUT;
			goto fail;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
			err = errno;
		if (err != 0)
			goto fail;
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
		err = errno;
		goto fail;
	}
	set_nodelay(fd);
	return fd;
fail:
	close(fd);
	errno = err;
	return -1;
}

int
ex_tcp_connect(const char *host, uint16_t port, int timeout_s)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	uint64_t deadline = deadline_after(timeout_s);
	struct addrinfo *res, *ai;
	char service[8];
	int err = 0;
	int fd = -1;
	int ret;

	snprintf(service, sizeof(service), "%u", port);
	ret = getaddrinfo(host, service, &hints, &res);
	if (ret != 0) {
		ex_err("cannot resolve '%s': %s", host, gai_strerror(ret));
		return -1;
	}
	while (fd < 0) {
		for (ai = res; ai != NULL && fd < 0; ai = ai->ai_next) {
			fd = connect_one(ai, deadline);
			if (fd < 0)
				err = errno;
		}
		if (fd >= 0 || ex_now_us() + CONNECT_RETRY_US >= deadline)
			break;
		/* Refused or unreachable: the server may not listen yet. */
		usleep(CONNECT_RETRY_US);
	}
	freeaddrinfo(res);
	if (fd < 0)
		ex_err("cannot connect to %s port %u within %d s: %s", host, port, timeout_s,
		       strerror(err));
	return fd;
}

static int
send_all(int fd, const void *buf, size_t len, int timeout_s)
{
	uint64_t deadline = deadline_after(timeout_s);
	const char *p = buf;
	ssize_t n;
	int ret;

	while (len > 0) {
		ret = wait_fd(fd, POLLOUT, deadline);
		if (ret == 0)
			ex_err("TCP send to the peer timed out after %d s", timeout_s);
		if (ret <= 0)
			return -1;
		n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			ex_err("TCP send to the peer: %s", strerror(errno));
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int
recv_all(int fd, void *buf, size_t len, int timeout_s)
{
	uint64_t deadline = deadline_after(timeout_s);
	char *p = buf;
	ssize_t n;
	int ret;

	while (len > 0) {
		ret = wait_fd(fd, POLLIN, deadline);
		if (ret == 0)
			ex_err("no answer from the peer over TCP within %d s", timeout_s);
		if (ret <= 0)
			return -1;
		n = recv(fd, p, len, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			ex_err("TCP receive from the peer: %s", strerror(errno));
			return -1;
		}
		if (n == 0) {
			ex_err("the peer closed the TCP connection");
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int
ex_tcp_send_dest(int fd, const struct ex_dest *d, int timeout_s)
{
	char msg[DEST_MSG_LEN] = { 0 };
	size_t off;
	int i;

	off = (size_t)snprintf(msg, sizeof(msg), "%s %08" PRIx32 " %08" PRIx32 " %08" PRIx32
			       " %08" PRIx32 " %08" PRIx32 " ", DEST_MAGIC, d->qpn, d->psn,
			       d->id, d->size, d->iters);
	for (i = 0; i < (int)sizeof(d->gid.raw); i++)
		off += (size_t)snprintf(msg + off, sizeof(msg) - off, "%02x", d->gid.raw[i]);
	return send_all(fd, msg, sizeof(msg), timeout_s);
}

int
ex_tcp_recv_dest(int fd, struct ex_dest *d, int timeout_s)
{
	char msg[DEST_MSG_LEN + 1] = { 0 };
	char magic[sizeof(DEST_MAGIC)];
	char gid[GID_HEX_LEN + 1];
	unsigned int byte;
	int i;

	if (recv_all(fd, msg, DEST_MSG_LEN, timeout_s) != 0)
		return -1;
	if (sscanf(msg, "%9s %" SCNx32 " %" SCNx32 " %" SCNx32 " %" SCNx32 " %" SCNx32 " %32s",
		   magic, &d->qpn, &d->psn, &d->id, &d->size, &d->iters, gid) != 7 ||
	    strcmp(magic, DEST_MAGIC) != 0 || strlen(gid) != GID_HEX_LEN) {
		ex_err("the peer sent no valid connection information (another program on "
		       "this TCP port?)");
		return -1;
	}
	for (i = 0; i < (int)sizeof(d->gid.raw); i++) {
		if (sscanf(gid + 2 * i, "%2x", &byte) != 1) {
			ex_err("the peer sent a bad GID '%s'", gid);
			return -1;
		}
		d->gid.raw[i] = (uint8_t)byte;
	}
	return 0;
}

int
ex_tcp_exchange_dest(int fd, const struct ex_dest *local, struct ex_dest *remote,
		     int timeout_s)
{
	if (ex_tcp_send_dest(fd, local, timeout_s) != 0 ||
	    ex_tcp_recv_dest(fd, remote, timeout_s) != 0)
		return -1;
	if (remote->size != local->size || remote->iters != local->iters) {
		ex_err("the peer runs -s %" PRIu32 " -n %" PRIu32 ", this side -s %" PRIu32
		       " -n %" PRIu32 ": give both the same", remote->size, remote->iters,
		       local->size, local->iters);
		return -1;
	}
	return 0;
}

int
ex_tcp_send_tag(int fd, char tag, int timeout_s)
{
	return send_all(fd, &tag, 1, timeout_s);
}

int
ex_tcp_recv_tag(int fd, char tag, int timeout_s)
{
	char got;

	if (recv_all(fd, &got, 1, timeout_s) != 0)
		return -1;
	if (got != tag) {
		ex_err("the peer is out of step: expected '%c' over TCP, got '%c'", tag, got);
		return -1;
	}
	return 0;
}

static inline uint8_t
pattern_byte(uint32_t stream, uint32_t iter, size_t off)
{
	/* An integer hash of (stream, iter, offset): neighbouring bytes, messages and
	 * streams all differ, so shifted, stale or misrouted data shows up. */
	uint32_t x = stream * 0x85EBCA6Bu + iter * 0xC2B2AE35u + (uint32_t)off * 0x9E3779B1u;

	x ^= x >> 16;
	x *= 0x7FEB352Du;
	x ^= x >> 15;
	return (uint8_t)x;
}

void
ex_pattern_fill(void *buf, size_t len, uint32_t stream, uint32_t iter)
{
	uint8_t *p = buf;
	size_t off;

	for (off = 0; off < len; off++)
		p[off] = pattern_byte(stream, iter, off);
}

int
ex_pattern_check(const void *buf, size_t len, uint32_t stream, uint32_t iter)
{
	const uint8_t *p = buf;
	size_t off;

	for (off = 0; off < len; off++) {
		uint8_t want = pattern_byte(stream, iter, off);

		if (p[off] != want) {
			ex_err("payload mismatch: iteration %" PRIu32 ", offset %zu of %zu: got "
			       "0x%02x, expected 0x%02x", iter, off, len, p[off], want);
			return -1;
		}
	}
	return 0;
}

int
ex_cq_wait(struct ibv_cq *cq, struct ibv_comp_channel *ch, struct ibv_wc *wc, int max,
	   int timeout_s)
{
	uint64_t deadline = deadline_after(timeout_s);
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	int n;
	int ret;

	for (;;) {
		n = ibv_poll_cq(cq, max, wc);
		if (n != 0)
			break;
		if (ch == NULL) {
			if (ex_now_us() >= deadline)
				goto timeout;
			continue;
		}
		ret = ibv_req_notify_cq(cq, 0);
		if (ret != 0) {
			ex_err("ibv_req_notify_cq: %s", strerror(ret));
			return -1;
		}
		/* A completion that arrived before the CQ was armed raises no event. */
		n = ibv_poll_cq(cq, max, wc);
		if (n != 0)
			break;
		ret = wait_fd(ch->fd, POLLIN, deadline);
		if (ret == 0)
			goto timeout;
		if (ret < 0)
			return -1;
		if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx) != 0) {
			ex_err("ibv_get_cq_event: %s", strerror(errno));
			return -1;
		}
		ibv_ack_cq_events(ev_cq, 1);
	}
	if (n < 0) {
		ex_err("ibv_poll_cq failed (%d)", n);
		return -1;
	}
	return n;
timeout:
	ex_err("no completion within %d s (-T)", timeout_s);
	return -1;
}

void
ex_wc_err(const struct ibv_wc *wc, const char *what, uint32_t iter)
{
	ex_err("iteration %" PRIu32 ": %s completion failed: %s (status %d, vendor error 0x%x, "
	       "qp 0x%06x)", iter, what, ibv_wc_status_str(wc->status), wc->status,
	       wc->vendor_err, wc->qp_num);
}

void
ex_print_result(uint32_t iters, uint32_t size, uint64_t bytes, uint64_t usec)
{
	double us = usec != 0 ? (double)usec : 1.0;

	printf("iters=%" PRIu32 " size=%" PRIu32 " bytes=%" PRIu64 " usec=%" PRIu64
	       " Mbit/s=%.2f usec/iter=%.2f\n", iters, size, bytes, usec, (double)bytes * 8.0 / us,
	       iters != 0 ? (double)usec / iters : 0.0);
	fflush(stdout);
}
