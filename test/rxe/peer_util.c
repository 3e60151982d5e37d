/* SPDX-License-Identifier: BSD-3-Clause */
/* What mw_peer and mcast_peer share (peer_util.h). */

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "peer_util.h"

/* Seconds a TCP message may take (the guest runs under TCG). */
#define PEER_MSG_TIMEOUT	120

/* ---- Lines ---- */

/* what: "FAIL " or "". Flushed line by line: stdout is the test's pipe, and a program it
 * kills at its deadline has still said how far it got. */
static void
peer_vreport(const struct peer_link *l, const char *what, const char *fmt, va_list ap)
{
	printf("%s: %s%s: ", l->name, what, l->role);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
}

void
peer_fail(struct peer_link *l, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	peer_vreport(l, "FAIL ", fmt, ap);
	va_end(ap);
	l->failures++;
}

bool
peer_check(struct peer_link *l, bool cond, const char *fmt, ...)
{
	va_list ap;

	l->checks++;
	if (cond)
		return true;
	va_start(ap, fmt);
	peer_vreport(l, "FAIL ", fmt, ap);
	va_end(ap);
	l->failures++;
	return false;
}

void
peer_say(const struct peer_link *l, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	peer_vreport(l, "", fmt, ap);
	va_end(ap);
}

int
peer_verdict(const struct peer_link *l, int rc)
{
	if (l->failures == 0 && rc == 0) {
		printf("%s: %s: all %d checks passed\n", l->name, l->role, l->checks);
		return 0;
	}
	printf("%s: %s: %d of %d checks failed\n", l->name, l->role, l->failures, l->checks);
	return 1;
}

double
peer_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- TCP ---- */

int
peer_tcp_connect(struct peer_link *l, const char *host, int port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res, *ai;
	struct timeval tv = { .tv_sec = PEER_MSG_TIMEOUT };
	char serv[16];
	int fd = -1, rc, one = 1;

	snprintf(serv, sizeof(serv), "%d", port);
	if (host == NULL)
		hints.ai_flags = AI_PASSIVE;
	rc = getaddrinfo(host, serv, &hints, &res);
	if (rc != 0) {
		peer_fail(l, "getaddrinfo %s:%s: %s", host ? host : "*", serv, gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
		if (fd < 0)
			continue;
		if (host != NULL) {
			if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
				break;
		} else {
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 1) == 0)
				break;
		}
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		peer_fail(l, "cannot %s port %s: %s", host ? "connect to" : "listen on", serv,
			  strerror(errno));
		return -1;
	}
	if (host == NULL) {
		int lfd = fd;

		fd = accept(lfd, NULL, NULL);
		close(lfd);
		if (fd < 0) {
			peer_fail(l, "accept: %s", strerror(errno));
			return -1;
		}
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	l->sock = fd;
	return 0;
}

int
peer_send_msg(struct peer_link *l, const char *fmt, ...)
{
	char m[PEER_MSG_MAX] = { 0 };
	va_list ap;
	size_t off = 0;

	va_start(ap, fmt);
	vsnprintf(m, l->msg_len, fmt, ap);
	va_end(ap);
	while (off < l->msg_len) {
		ssize_t n = send(l->sock, m + off, l->msg_len - off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			peer_fail(l, "cannot send \"%s\" to the peer: %s", m, strerror(errno));
			return -1;
		}
		off += (size_t)n;
	}
	return 0;
}

int
peer_recv_msg(struct peer_link *l, char *m, const char *what)
{
	size_t off = 0;

	while (off < l->msg_len) {
		ssize_t n = recv(l->sock, m + off, l->msg_len - off, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			peer_fail(l, "no %s from the peer: %s", what,
				  n == 0 ? "connection closed" : strerror(errno));
			return -1;
		}
		off += (size_t)n;
	}
	m[l->msg_len - 1] = '\0';
	if (l->abort_fails && strncmp(m, "ABORT", 5) == 0) {
		peer_fail(l, "the peer gave up waiting for %s: \"%s\"", what, m);
		return -1;
	}
	return 0;
}

/* ---- Verbs ---- */

int
peer_open_device(struct peer_link *l, const char *dev, struct ibv_device_attr *dattr)
{
	struct ibv_device **list;
	struct ibv_device *found = NULL;
	int n, i;

	list = ibv_get_device_list(&n);
	if (list == NULL || n == 0) {
		peer_fail(l, "no RDMA device");
		if (list != NULL)
			ibv_free_device_list(list);
		return -1;
	}
	for (i = 0; i < n; i++)
		if (dev == NULL || strcmp(ibv_get_device_name(list[i]), dev) == 0) {
			found = list[i];
			break;
		}
	if (found == NULL) {
		peer_fail(l, "no device %s", dev);
		ibv_free_device_list(list);
		return -1;
	}
	l->ctx = ibv_open_device(found);
	if (l->ctx == NULL)
		peer_fail(l, "ibv_open_device %s: %s", ibv_get_device_name(found),
			  strerror(errno));
	ibv_free_device_list(list);
	if (l->ctx == NULL)
		return -1;
	if (ibv_query_device(l->ctx, dattr) != 0) {
		peer_fail(l, "ibv_query_device: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int
peer_query_gid(struct peer_link *l, int port, int index, union ibv_gid *gid)
{
	if (ibv_query_gid(l->ctx, (uint8_t)port, index, gid) != 0) {
		peer_fail(l, "ibv_query_gid %d: %s", index, strerror(errno));
		return -1;
	}
	return 0;
}

int
peer_alloc_pd_cq(struct peer_link *l, int cqe)
{
	l->pd = ibv_alloc_pd(l->ctx);
	l->cq = l->pd ? ibv_create_cq(l->ctx, cqe, NULL, NULL, 0) : NULL;
	if (l->cq == NULL) {
		peer_fail(l, "ibv_alloc_pd / ibv_create_cq: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int
peer_create_qp(struct peer_link *l, struct ibv_qp_init_attr *init, struct ibv_qp_attr *attr,
	       int mask, struct ibv_qp **qp)
{
	init->send_cq = init->recv_cq = l->cq;
	*qp = ibv_create_qp(l->pd, init);
	if (*qp == NULL) {
		/* mcast_peer's failure names its QP's type; mw_peer's, an RC QP, does not. */
		peer_fail(l, "ibv_create_qp%s: %s", init->qp_type == IBV_QPT_UD ? " UD" : "",
			  strerror(errno));
		return -1;
	}
	if (ibv_modify_qp(*qp, attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | mask) != 0) {
		peer_fail(l, "ibv_modify_qp INIT: %s", strerror(errno));
		return -1;
	}
	return 0;
}

void
peer_close(struct peer_link *l)
{
	int rc;

	if (l->cq != NULL && (rc = ibv_destroy_cq(l->cq)) != 0)
		peer_fail(l, "ibv_destroy_cq: %s", strerror(rc));
	if (l->pd != NULL && (rc = ibv_dealloc_pd(l->pd)) != 0)
		peer_fail(l, "ibv_dealloc_pd: %s", strerror(rc));
	if (l->ctx != NULL && ibv_close_device(l->ctx) != 0)
		peer_fail(l, "ibv_close_device");
	if (l->sock >= 0)
		close(l->sock);
}

/* ---- GIDs ---- */

void
peer_gid_str(const union ibv_gid *gid, char *s, size_t len)
{
	inet_ntop(AF_INET6, gid->raw, s, (socklen_t)len);
}

void
peer_gid_to_hex(const union ibv_gid *gid, char hex[33])
{
	int i;

	for (i = 0; i < 16; i++)
		sprintf(hex + 2 * i, "%02x", gid->raw[i]);
}

int
peer_hex_to_gid(const char *hex, union ibv_gid *gid)
{
	unsigned int b;
	int i;

	if (strlen(hex) != 32)
		return -1;
	for (i = 0; i < 16; i++) {
		if (sscanf(hex + 2 * i, "%2x", &b) != 1)
			return -1;
		gid->raw[i] = (uint8_t)b;
	}
	return 0;
}
