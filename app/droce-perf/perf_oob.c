/* SPDX-License-Identifier: BSD-3-Clause */
/* perftest's out-of-band TCP exchange; see perf_oob.h and doc/tools/droce-perf-oob.md. */

#include "perf_oob.h"

#include <endian.h>
#include <errno.h>
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

static int
fail(struct perf_oob_conn *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	return -1;
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
wait_fd(struct perf_oob_conn *c, short events, int64_t deadline)
{
	struct pollfd pfd = { .fd = c->fd, .events = events };

	for (;;) {
		int64_t left = deadline - now_ms();
		int r;

		if (left < 0)
			left = 0;
		/* with an idle function: a look without sleeping, then the idle work */
		r = poll(&pfd, 1, c->idle != NULL && left > 0 ? 0 : (int)left);
		if (r > 0)
			return 0;
		if (r == 0 && (c->idle == NULL || left == 0))
			return fail(c, "timed out after %d ms", c->timeout_ms);
		if (r < 0 && errno != EINTR)
			return fail(c, "poll: %s", strerror(errno));
		if (r == 0)
			c->idle(c->idle_arg);
	}
}

/* One message is one write(), as perftest reads each with a single read(). */
static int
send_all(struct perf_oob_conn *c, const void *buf, size_t n)
{
	int64_t deadline = now_ms() + c->timeout_ms;
	size_t done = 0;

	while (done < n) {
		ssize_t w;

		if (wait_fd(c, POLLOUT, deadline))
			return -1;
		w = send(c->fd, (const char *)buf + done, n - done, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return fail(c, "send: %s", strerror(errno));
		}
		done += (size_t)w;
	}
	return 0;
}

static int
recv_all(struct perf_oob_conn *c, void *buf, size_t n)
{
	int64_t deadline = now_ms() + c->timeout_ms;
	size_t done = 0;

	while (done < n) {
		ssize_t r;

		if (wait_fd(c, POLLIN, deadline))
			return -1;
		r = recv(c->fd, (char *)buf + done, n - done, 0);
		if (r < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return fail(c, "recv: %s", strerror(errno));
		}
		if (r == 0)
			return fail(c, "peer closed the connection (%zu of %zu bytes read)", done, n);
		done += (size_t)r;
	}
	return 0;
}

static void
conn_init(struct perf_oob_conn *c, int fd, bool is_client, int timeout_ms)
{
	int one = 1;

	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->is_client = is_client;
	c->timeout_ms = timeout_ms;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int
perf_oob_connect(struct perf_oob_conn *c, const char *host, uint16_t port, int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	char service[8];

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->timeout_ms = timeout_ms;
	snprintf(service, sizeof(service), "%u", port);
	for (;;) {
		struct addrinfo *res, *ai;
		int rc = getaddrinfo(host, service, &hints, &res);

		if (rc)
			return fail(c, "%s: %s", host, gai_strerror(rc));
		for (ai = res; ai; ai = ai->ai_next) {
			int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);

			if (fd < 0)
				continue;
			if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
				freeaddrinfo(res);
				conn_init(c, fd, true, timeout_ms);
				return 0;
			}
			close(fd);
		}
		freeaddrinfo(res);
		if (now_ms() >= deadline)
			return fail(c, "couldn't connect to %s:%u within %d ms", host, port,
				    timeout_ms);
		usleep(100 * 1000);
	}
}

int
perf_oob_listen(uint16_t port, char *err, size_t errlen)
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_port = htons(port),
				   .sin6_addr = IN6ADDR_ANY_INIT };
	int one = 1, zero = 0;
	int fd = socket(AF_INET6, SOCK_STREAM, 0);

	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 1)) {
		snprintf(err, errlen, "port %u: %s", port, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

int
perf_oob_accept(struct perf_oob_conn *c, int lfd, int timeout_ms)
{
	struct pollfd pfd = { .fd = lfd, .events = POLLIN };
	int r, fd;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->timeout_ms = timeout_ms;
	do
		r = poll(&pfd, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return fail(c, "no client within %d ms", timeout_ms);
	if (r < 0)
		return fail(c, "poll: %s", strerror(errno));
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		return fail(c, "accept: %s", strerror(errno));
	conn_init(c, fd, false, timeout_ms);
	return 0;
}

void
perf_oob_conn_close(struct perf_oob_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

int
perf_oob_send(struct perf_oob_conn *c, const void *buf, size_t n)
{
	return send_all(c, buf, n);
}

int
perf_oob_recv(struct perf_oob_conn *c, void *buf, size_t n)
{
	return recv_all(c, buf, n);
}

int
perf_oob_xchg(struct perf_oob_conn *c, const void *mine, void *theirs, size_t n)
{
	if (c->is_client)
		return send_all(c, mine, n) || recv_all(c, theirs, n) ? -1 : 0;
	return recv_all(c, theirs, n) || send_all(c, mine, n) ? -1 : 0;
}

int
perf_oob_setup(struct perf_oob_conn *c, const struct perf_oob_params *p)
{
	char ver[PERF_OOB_VERSION_LEN] = { 0 }, rver[PERF_OOB_VERSION_LEN];
	uint32_t mine, theirs;
	char mtu[2], rmtu[2];
	double rv;

	c->use_gid = p->use_gid;
	/* 1. versions: 16 bytes, NUL-padded. */
	const char *v = p->version[0] ? p->version : PERF_OOB_VERSION;

	memcpy(ver, v, strnlen(v, sizeof(ver) - 1));
	if (perf_oob_xchg(c, ver, rver, sizeof(rver)))
		return -1;
	memcpy(c->rem_version, rver, sizeof(rver));
	c->rem_version[PERF_OOB_VERSION_LEN] = '\0';
	rv = atof(c->rem_version);
	if (rv < PERF_OOB_MIN_VERSION)
		return fail(c, "peer version \"%s\" is older than 5.70, which perftest refuses",
			    c->rem_version);
	/* 2. cycle buffer and cache line size: 4-byte big-endian ints; both keep the max. */
	mine = htonl(p->cycle_buffer);
	if (perf_oob_xchg(c, &mine, &theirs, 4))
		return -1;
	c->rem_cycle_buffer = ntohl(theirs);
	mine = htonl(p->cache_line_size);
	if (perf_oob_xchg(c, &mine, &theirs, 4))
		return -1;
	c->rem_cache_line_size = ntohl(theirs);
	c->cycle_buffer = c->rem_cycle_buffer > p->cycle_buffer ? c->rem_cycle_buffer
								 : p->cycle_buffer;
	c->cache_line_size = c->rem_cache_line_size > p->cache_line_size
				     ? c->rem_cache_line_size : p->cache_line_size;
	/* 3. MTU: the ibv_mtu enum as one decimal digit and a NUL; both keep the min. */
	if (p->mtu < 1 || p->mtu > 5)
		return fail(c, "MTU enum %d is not 1..5", p->mtu);
	mtu[0] = (char)('0' + p->mtu);
	mtu[1] = '\0';
	if (perf_oob_xchg(c, mtu, rmtu, sizeof(rmtu)))
		return -1;
	c->rem_mtu = rmtu[0] - '0';
	c->mtu = (c->rem_mtu >= 1 && c->rem_mtu <= 5 && c->rem_mtu < p->mtu) ? c->rem_mtu
									     : p->mtu;
	return 0;
}

size_t
perf_oob_format_dest(const struct perf_oob_dest *d, bool use_gid, char *buf, size_t len)
{
	size_t need = use_gid ? PERF_OOB_DEST_GID_LEN : PERF_OOB_DEST_LEN;
	int n;

	if (len < need)
		return 0;
	memset(buf, 0, need);
	n = snprintf(buf, need, "%04x:%04x:%06x:%06x:%08x:%016" PRIx64 ":",
		     (unsigned)d->lid, (unsigned)d->out_reads, d->qpn & 0xFFFFFF, d->psn & 0xFFFFFF, d->rkey,
		     d->vaddr);
	if (!use_gid) {
		snprintf(buf + n, need - (size_t)n, "%08x", d->srqn);
		return need;
	}
	for (int i = 0; i < 16; i++)
		n += snprintf(buf + n, need - (size_t)n, "%02x:", d->gid[i]);
	snprintf(buf + n, need - (size_t)n, "%08x:", d->srqn);
	return need;
}

/* One ':'-terminated (or, last, NUL-terminated) hex field of at most width digits. */
static int
hex_field(const char **p, const char *end, int width, char sep, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;
	int n = 0;

	while (s < end && *s != sep) {
		int digit;

		if (*s >= '0' && *s <= '9')
			digit = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			digit = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			digit = *s - 'A' + 10;
		else
			return -1;
		if (++n > width)
			return -1;
		x = x << 4 | (uint64_t)digit;
		s++;
	}
	if (n == 0 || s >= end)
		return -1;
	*p = s + 1;
	*v = x;
	return 0;
}

int
perf_oob_parse_dest(const char *buf, size_t len, bool use_gid, struct perf_oob_dest *d)
{
	static const int width[6] = { 4, 4, 6, 6, 8, 16 };
	const char *p = buf, *end = buf + len;
	uint64_t v[6], x;

	if (len != (use_gid ? PERF_OOB_DEST_GID_LEN : PERF_OOB_DEST_LEN))
		return -1;
	memset(d, 0, sizeof(*d));
	for (int i = 0; i < 6; i++)
		if (hex_field(&p, end, width[i], ':', &v[i]))
			return -1;
	if (v[0] > 0xFFFF || v[1] > 0xFF)
		return -1;
	d->lid = (uint16_t)v[0];
	d->out_reads = (uint8_t)v[1];
	d->qpn = (uint32_t)v[2];
	d->psn = (uint32_t)v[3];
	d->rkey = (uint32_t)v[4];
	d->vaddr = v[5];
	if (use_gid) {
		for (int i = 0; i < 16; i++) {
			if (hex_field(&p, end, 2, ':', &x))
				return -1;
			d->gid[i] = (uint8_t)x;
		}
		if (hex_field(&p, end, 8, ':', &x))
			return -1;
	} else if (hex_field(&p, end, 8, '\0', &x)) {
		return -1;
	}
	d->srqn = (uint32_t)x;
	return 0;
}

int
perf_oob_hand_shake(struct perf_oob_conn *c, const struct perf_oob_dest *mine,
		    struct perf_oob_dest *theirs)
{
	char out[PERF_OOB_DEST_GID_LEN], in[PERF_OOB_DEST_GID_LEN];
	size_t n = perf_oob_format_dest(mine, c->use_gid, out, sizeof(out));

	if (perf_oob_xchg(c, out, in, n))
		return -1;
	if (perf_oob_parse_dest(in, n, c->use_gid, theirs))
		return fail(c, "couldn't parse the peer's destination <%.*s>", (int)n - 1, in);
	return 0;
}

static bool
v4_mapped(const uint8_t *g)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF };

	return memcmp(g, prefix, sizeof(prefix)) == 0;
}

int
perf_oob_check_gid(struct perf_oob_conn *c, const struct perf_oob_dest *mine,
		   const struct perf_oob_dest *theirs)
{
	if (v4_mapped(mine->gid) != v4_mapped(theirs->gid))
		return fail(c, "GID types differ (one IPv4-mapped, one not), which perftest refuses");
	return 0;
}

static uint64_t
be64(uint64_t x)
{
	return htobe64(x);
}

static uint64_t
dbl_bits(double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	return u;
}

static double
bits_dbl(uint64_t u)
{
	double d;

	memcpy(&d, &u, sizeof(d));
	return d;
}

int
perf_oob_xchg_bw_report(struct perf_oob_conn *c, const struct perf_oob_bw_report *mine,
			struct perf_oob_bw_report *theirs)
{
	uint64_t out[5] = { be64(mine->size), be64(mine->iters), be64(dbl_bits(mine->bw_peak)),
			    be64(dbl_bits(mine->bw_avg)), be64(dbl_bits(mine->msg_rate_avg)) };
	uint64_t in[5];

	/* Five exchanges of 8 bytes each, in this order, as perftest does them. */
	for (int i = 0; i < 5; i++)
		if (perf_oob_xchg(c, &out[i], &in[i], 8))
			return -1;
	theirs->size = be64toh(in[0]);
	theirs->iters = be64toh(in[1]);
	theirs->bw_peak = bits_dbl(be64toh(in[2]));
	theirs->bw_avg = bits_dbl(be64toh(in[3]));
	theirs->msg_rate_avg = bits_dbl(be64toh(in[4]));
	return 0;
}

int
perf_oob_close(struct perf_oob_conn *c, const struct perf_oob_dest *mine,
	       struct perf_oob_dest *theirs)
{
	int rc = perf_oob_hand_shake(c, mine, theirs);

	/* Both sides write "done" and its NUL; neither reads the other's. */
	if (rc == 0)
		rc = send_all(c, "done", sizeof("done"));
	perf_oob_conn_close(c);
	return rc;
}
