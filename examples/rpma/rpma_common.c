/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Helpers shared by the librpma examples (rpma_common.h). Every wait here polls one of
 * librpma's file descriptors (the endpoint's and the connection's CM event channels, a
 * CQ's completion channel) before the call that would read it, so a peer that never
 * answers ends in a timeout message, not a hang.
 */

#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rpma_common.h"

#define MS_PER_S	1000
#define NS_PER_MS	1000000

_Static_assert(sizeof(struct rc_msg) == RC_MSG_SIZE, "rc_msg is the wire size");
/* An offer fits even in a REQ's private data (56 bytes after rdma_cm's header). */
_Static_assert(sizeof(struct rc_offer) == 56, "rc_offer is the wire size");

const char *rc_prog = "rpma-example";

static struct timespec deadline;

static void
vmsg(const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", rc_prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void
rc_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
}

int
rc_rpma_err(const char *what, int ret)
{
	rc_err("%s: %s", what, rpma_err_2str(ret));
	return -1;
}

int
rc_usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try '%s --help' for more information.\n", rc_prog);
	return RC_EXIT_USAGE;
}

void
rc_step(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

int
rc_parse_role(int argc, char **argv, int first, bool *server, const char **addr,
	      const char **port)
{
	if (argc - first != 3)
		return rc_usage_error("want server|client ADDR PORT");
	if (strcmp(argv[first], "server") == 0)
		*server = true;
	else if (strcmp(argv[first], "client") == 0)
		*server = false;
	else
		return rc_usage_error("'%s' is neither server nor client", argv[first]);
	*addr = argv[first + 1];
	*port = argv[first + 2];
	return 0;
}

int
rc_parse_u32(const char *opt, const char *arg, uint32_t min, uint32_t max, uint32_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (arg[0] == '\0' || arg[0] == '-' || *end != '\0' || errno != 0 || v < min ||
	    v > max) {
		return rc_usage_error("%s: '%s' is not a number in [%" PRIu32 ", %" PRIu32 "]",
				      opt, arg, min, max);
	}
	*out = (uint32_t)v;
	return 0;
}

int
rc_parse_opt(int opt, const char *arg, uint32_t *timeout_s, bool *verbose,
	     void (*usage)(FILE *f))
{
	switch (opt) {
	case 'T':
		if (rc_parse_u32("-T", arg, 1, RC_MAX_TIMEOUT_S, timeout_s) != 0)
			return RC_EXIT_USAGE;
		return 0;
	case 'v':
		*verbose = true;
		return 0;
	case 'h':
		usage(stdout);
		exit(RC_EXIT_OK);
	default:
		return RC_OPT_NOT_SHARED;
	}
}

/* Async-signal-safe: write(2) and _exit(2) only. */
static void
on_alarm(int sig)
{
	static const char msg[] = ": hard timeout (alarm), giving up\n";
	ssize_t r;

	(void)sig;
	r = write(STDERR_FILENO, rc_prog, strlen(rc_prog));
	r = write(STDERR_FILENO, msg, sizeof(msg) - 1);
	(void)r;
	_exit(RC_EXIT_FAIL);
}

void
rc_start(uint32_t timeout_s, bool verbose)
{
	struct sigaction sa;

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += timeout_s;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	alarm(timeout_s + RC_ALARM_GRACE_S);

	/* librpma logs to syslog only by default; its reasons belong on stderr too. */
	rpma_log_set_threshold(RPMA_LOG_THRESHOLD_AUX,
			       verbose ? RPMA_LOG_LEVEL_NOTICE : RPMA_LOG_LEVEL_WARNING);
}

int
rc_remaining_ms(void)
{
	struct timespec now;
	long long ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (long long)(deadline.tv_sec - now.tv_sec) * MS_PER_S +
	     (deadline.tv_nsec - now.tv_nsec) / NS_PER_MS;
	return ms > 0 ? (int)ms : 0;
}

int
rc_wait_fd(int fd, const char *what)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	for (;;) {
		int n = poll(&p, 1, rc_remaining_ms());

		if (n > 0)
			return 0;
		if (n == 0) {
			rc_err("timeout waiting for %s", what);
			return -1;
		}
		if (errno != EINTR) {
			rc_err("poll (%s): %s", what, strerror(errno));
			return -1;
		}
	}
}

int
rc_cq_take(struct rpma_cq *cq, struct ibv_wc *wc, int max, const char *what)
{
	for (;;) {
		int n = 0;
		int fd;
		int ret = rpma_cq_get_wc(cq, max, wc, &n);

		if (ret == 0)
			return n;
		if (ret != RPMA_E_NO_COMPLETION)
			return rc_rpma_err("rpma_cq_get_wc", ret);
		/*
		 * Empty: sleep on the channel. rpma_cq_wait re-arms the CQ, so completions that
		 * came before the re-arm are found by the next poll, not lost.
		 */
		ret = rpma_cq_get_fd(cq, &fd);
		if (ret != 0)
			return rc_rpma_err("rpma_cq_get_fd", ret);
		if (rc_wait_fd(fd, what) != 0)
			return -1;
		ret = rpma_cq_wait(cq);
		if (ret != 0)
			return rc_rpma_err("rpma_cq_wait", ret);
	}
}

int
rc_wc_check(const struct ibv_wc *wc, int want, const char *what)
{
	if (wc->status != IBV_WC_SUCCESS) {
		rc_err("%s: completion status %d (vendor error 0x%x)", what, (int)wc->status,
		       wc->vendor_err);
		return -1;
	}
	if ((int)wc->opcode != want) {
		rc_err("%s: completion opcode %d, want %d", what, (int)wc->opcode, want);
		return -1;
	}
	return 0;
}

int
rc_conn_expect(struct rpma_conn *conn, enum rpma_conn_event want)
{
	enum rpma_conn_event ev = RPMA_CONN_UNDEFINED;
	char what[64];
	int fd;
	int ret;

	snprintf(what, sizeof(what), "connection event %s", rpma_utils_conn_event_2str(want));
	ret = rpma_conn_get_event_fd(conn, &fd);
	if (ret != 0)
		return rc_rpma_err("rpma_conn_get_event_fd", ret);
	if (rc_wait_fd(fd, what) != 0)
		return -1;
	ret = rpma_conn_next_event(conn, &ev);
	if (ret != 0)
		return rc_rpma_err("rpma_conn_next_event", ret);
	if (ev != want) {
		rc_err("connection event %s, want %s", rpma_utils_conn_event_2str(ev),
		       rpma_utils_conn_event_2str(want));
		return -1;
	}
	return 0;
}

int
rc_peer_new(const char *addr, enum rpma_util_ibv_context_type type, struct rpma_peer **peer)
{
	struct ibv_context *ctx = NULL;
	int ret;

	ret = rpma_utils_get_ibv_context(addr, type, &ctx);
	if (ret != 0) {
		rc_err("no RDMA device for %s address %s: %s",
		       type == RPMA_UTIL_IBV_CONTEXT_LOCAL ? "local" : "remote", addr,
		       rpma_err_2str(ret));
		return -1;
	}
	ret = rpma_peer_new(ctx, peer);
	if (ret != 0)
		return rc_rpma_err("rpma_peer_new", ret);
	return 0;
}

int
rc_client_connect(struct rpma_peer *peer, const char *addr, const char *port,
		  const struct rpma_conn_cfg *cfg, const struct rpma_conn_private_data *pdata,
		  struct rpma_mr_local *recv_mr, size_t offset, size_t len,
		  struct rpma_conn **conn)
{
	for (;;) {
		struct rpma_conn_req *req = NULL;
		enum rpma_conn_event ev = RPMA_CONN_UNDEFINED;
		int fd;
		int ret;

		ret = rpma_conn_req_new(peer, addr, port, cfg, &req);
		if (ret != 0)
			return rc_rpma_err("rpma_conn_req_new", ret);
		if (recv_mr != NULL) {
			ret = rpma_conn_req_recv(req, recv_mr, offset, len, NULL);
			if (ret != 0) {
				(void)rpma_conn_req_delete(&req);
				return rc_rpma_err("rpma_conn_req_recv", ret);
			}
		}
		/* Deletes req whatever the result. */
		ret = rpma_conn_req_connect(&req, pdata, conn);
		if (ret != 0)
			return rc_rpma_err("rpma_conn_req_connect", ret);

		ret = rpma_conn_get_event_fd(*conn, &fd);
		if (ret == 0 && rc_wait_fd(fd, "the connection to be established") != 0)
			ret = RPMA_E_UNKNOWN;
		else if (ret == 0)
			ret = rpma_conn_next_event(*conn, &ev);
		if (ret == 0 && ev == RPMA_CONN_ESTABLISHED)
			return 0;
		(void)rpma_conn_delete(conn);
		if (ret != 0)
			return rc_rpma_err("waiting for ESTABLISHED", ret);
		if ((ev != RPMA_CONN_REJECTED && ev != RPMA_CONN_UNREACHABLE) ||
		    rc_remaining_ms() < RC_RETRY_MS) {
			rc_err("connecting to %s:%s: %s", addr, port,
			       rpma_utils_conn_event_2str(ev));
			return -1;
		}
		usleep(RC_RETRY_MS * 1000);
	}
}

int
rc_next_conn_req(struct rpma_ep *ep, const struct rpma_conn_cfg *cfg,
		 struct rpma_conn_req **req)
{
	int fd;
	int ret;

	ret = rpma_ep_get_fd(ep, &fd);
	if (ret != 0)
		return rc_rpma_err("rpma_ep_get_fd", ret);
	if (rc_wait_fd(fd, "a connection request") != 0)
		return -1;
	ret = rpma_ep_next_conn_req(ep, cfg, req);
	if (ret != 0)
		return rc_rpma_err("rpma_ep_next_conn_req", ret);
	return 0;
}

int
rc_disconnect_first(struct rpma_conn **conn)
{
	int ret = rpma_conn_disconnect(*conn);
	int rc = 0;

	if (ret != 0)
		rc = rc_rpma_err("rpma_conn_disconnect", ret);
	else if (rc_conn_expect(*conn, RPMA_CONN_CLOSED) != 0)
		rc = -1;
	ret = rpma_conn_delete(conn);
	if (ret != 0)
		rc = rc_rpma_err("rpma_conn_delete", ret);
	return rc;
}

int
rc_disconnect_after_peer(struct rpma_conn **conn)
{
	int rc = rc_conn_expect(*conn, RPMA_CONN_CLOSED);
	int ret = rpma_conn_disconnect(*conn);

	if (ret != 0)
		rc = rc_rpma_err("rpma_conn_disconnect", ret);
	ret = rpma_conn_delete(conn);
	if (ret != 0)
		rc = rc_rpma_err("rpma_conn_delete", ret);
	return rc;
}

void
rc_conn_abort(struct rpma_conn **conn)
{
	(void)rpma_conn_disconnect(*conn);
	(void)rpma_conn_delete(conn);
}

int
rc_hello_get(const struct rpma_conn_private_data *pd, struct rc_hello *h)
{
	/*
	 * The length is what the CM message carried (56 bytes in a REQ after rdma_cm's
	 * header), not what the client passed: check a prefix, not the length.
	 */
	if (pd->ptr == NULL || pd->len < sizeof(*h)) {
		rc_err("connection request: private data of %u bytes, want at least %zu",
		       pd->ptr == NULL ? 0u : (unsigned int)pd->len, sizeof(*h));
		return -1;
	}
	memcpy(h, pd->ptr, sizeof(*h));
	h->magic = le32toh(h->magic);
	h->id = le32toh(h->id);
	h->count = le32toh(h->count);
	if (h->magic != RC_HELLO_MAGIC) {
		rc_err("connection request: private data magic 0x%08" PRIx32 ", want 0x%08x",
		       h->magic, RC_HELLO_MAGIC);
		return -1;
	}
	return 0;
}

void
rc_msg_put(void *buf, uint32_t id, uint64_t value)
{
	struct rc_msg m = {
		.magic = htole32(RC_MSG_MAGIC),
		.id = htole32(id),
		.value = htole64(value),
	};

	memcpy(buf, &m, sizeof(m));
}

int
rc_msg_get(const void *buf, struct rc_msg *m)
{
	memcpy(m, buf, sizeof(*m));
	m->magic = le32toh(m->magic);
	m->id = le32toh(m->id);
	m->value = le64toh(m->value);
	if (m->magic != RC_MSG_MAGIC) {
		rc_err("message magic 0x%08" PRIx32 ", want 0x%08x", m->magic, RC_MSG_MAGIC);
		return -1;
	}
	return 0;
}

int
rc_offer_put(const struct rpma_mr_local *mr, const struct rpma_peer_cfg *pcfg,
	     struct rc_offer *o, struct rpma_conn_private_data *pd)
{
	size_t mr_size = 0;
	size_t pcfg_size = 0;
	int ret;

	memset(o, 0, sizeof(*o));
	ret = rpma_mr_get_descriptor_size(mr, &mr_size);
	if (ret != 0)
		return rc_rpma_err("rpma_mr_get_descriptor_size", ret);
	if (pcfg != NULL) {
		ret = rpma_peer_cfg_get_descriptor_size(pcfg, &pcfg_size);
		if (ret != 0)
			return rc_rpma_err("rpma_peer_cfg_get_descriptor_size", ret);
	}
	if (mr_size + pcfg_size > RC_OFFER_DESC_MAX) {
		rc_err("descriptors of %zu + %zu bytes, the offer holds %u", mr_size, pcfg_size,
		       RC_OFFER_DESC_MAX);
		return -1;
	}
	ret = rpma_mr_get_descriptor(mr, o->desc);
	if (ret != 0)
		return rc_rpma_err("rpma_mr_get_descriptor", ret);
	if (pcfg != NULL) {
		ret = rpma_peer_cfg_get_descriptor(pcfg, o->desc + mr_size);
		if (ret != 0)
			return rc_rpma_err("rpma_peer_cfg_get_descriptor", ret);
	}
	o->magic = htole32(RC_OFFER_MAGIC);
	o->mr_desc_size = (uint8_t)mr_size;
	o->pcfg_desc_size = (uint8_t)pcfg_size;
	pd->ptr = o;
	pd->len = sizeof(*o);
	return 0;
}

int
rc_offer_get(const struct rpma_conn_private_data *pd, struct rpma_mr_remote **mr,
	     struct rpma_peer_cfg **pcfg)
{
	struct rc_offer o;
	int ret;

	*pcfg = NULL;
	/* As in rc_hello_get: the CM message may carry more than the server passed. */
	if (pd->ptr == NULL || pd->len < sizeof(o)) {
		rc_err("offer: private data of %u bytes, want at least %zu",
		       pd->ptr == NULL ? 0u : (unsigned int)pd->len, sizeof(o));
		return -1;
	}
	memcpy(&o, pd->ptr, sizeof(o));
	if (le32toh(o.magic) != RC_OFFER_MAGIC ||
	    (size_t)o.mr_desc_size + o.pcfg_desc_size > RC_OFFER_DESC_MAX) {
		rc_err("offer: magic 0x%08" PRIx32 ", descriptors of %u + %u bytes: not an offer",
		       le32toh(o.magic), o.mr_desc_size, o.pcfg_desc_size);
		return -1;
	}
	ret = rpma_mr_remote_from_descriptor(o.desc, o.mr_desc_size, mr);
	if (ret != 0)
		return rc_rpma_err("rpma_mr_remote_from_descriptor", ret);
	if (o.pcfg_desc_size == 0)
		return 0;
	ret = rpma_peer_cfg_from_descriptor(o.desc + o.mr_desc_size, o.pcfg_desc_size, pcfg);
	if (ret != 0) {
		(void)rpma_mr_remote_delete(mr);
		return rc_rpma_err("rpma_peer_cfg_from_descriptor", ret);
	}
	return 0;
}

void *
rc_alloc(size_t len)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p = NULL;
	int ret;

	ret = posix_memalign(&p, page > 0 ? (size_t)page : 4096u, len);
	if (ret != 0) {
		rc_err("posix_memalign(%zu): %s", len, strerror(ret));
		return NULL;
	}
	memset(p, 0, len);
	return p;
}
