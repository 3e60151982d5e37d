/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs_stream: two processes stream messages at each other at once over one QP pair (RC,
 * UC or UD), through the plain verbs API, and check every byte received. Written for the
 * integration tests (many applications on one droced, kill -9 of one of them, garbage from
 * another client meanwhile) but runs on any verbs device.
 *
 *   server: verbs_stream [options]
 *   client: verbs_stream [options] SERVER_IP
 *
 * The two sides exchange QPN, PSN and GID over TCP (as ibv_rc_pingpong does) and keep that
 * connection as a side channel for receive credits: a side sends message i only when the
 * peer has said that it waits for no message before i - rx_depth any more (each has been
 * received, or is lost), so a receive is always posted when a message arrives (no RNR,
 * however slow the peer is scheduled) and UC/UD losses cannot stall the window.
 *
 * UC and UD deliver in any order: the network may reorder and duplicate packets, and a UC
 * responder takes the first packet of any message whose PSN is not the one it expects as
 * the start of a new one, older or newer (IBA 9.8.3; Linux's rxe and hfi1 alike). So the
 * receiver of UC or UD checks each message that arrives against the pattern of its own
 * index and counts each index once: the messages a later one skips count as lost at once,
 * and one of them that still comes is received after all ("late"); a second copy is
 * checked, not counted ("dup"). Its credit leaves out the skipped messages among its last
 * rx_depth, which may still come and take a receive (one that comes later than that, or a
 * copy, may find none, which only loses it). A sender held back by the credit with all its
 * sends out says so (REC_SENT); what has not come GIVEUP_MS later is lost for good, and
 * the credit moves on: no window of lost messages can stall the stream.
 *
 * Exit status: 0 all done and checked; 1 setup or usage error; 2 payload mismatch;
 * 3 error completion; 4 no progress for -T seconds.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define EXIT_OK		0
#define EXIT_SETUP	1
#define EXIT_MISMATCH	2
#define EXIT_ERR_WC	3
#define EXIT_HANG	4

#define DEFAULT_PORT	18517
#define DEFAULT_N	1000
#define DEFAULT_SIZE	4096
#define DEFAULT_WINDOW	16
#define DEFAULT_MTU	1024
#define DEFAULT_TIMEOUT	60
/*
 * Local ACK timeout 16 (4.096 us * 2^16 = 268 ms) and 7 retries: a vanished peer is an
 * error completion within about 2 s. Not less: with 67 ms and 3 retries, a loaded 2-CPU
 * run (the soak beside builds, load 10) saw both ends of a live RC pair give up
 * ("transport retry counter exceeded") when their engines were off the CPU for 0.3 s.
 * RNR timer code 1 (0.01 ms).
 */
#define QP_TIMEOUT	16
#define QP_RETRY_CNT	7
#define QP_RNR_RETRY	3
#define QP_MIN_RNR	1
#define UD_QKEY		0x11111111u
#define GRH_LEN		40
#define PSN_MASK	0xFFFFFFu
#define WIRE_MAGIC	0x64725354u	/* "drST" */
#define POLL_BATCH	32
#define IDLE_SLEEP_NS	20000
#define UD_GRACE_MS	500		/* UC/UD: time for stragglers after the peer is done */
#define GIVEUP_MS	20		/* UC/UD: the same when the peer waits for credit */
#define WR_SEND		(1ull << 32)
#define GAP_BURST_MAX	4		/* --gaps: sends per burst, 1 to this */
#define GAP_US_MAX	1000000
/* UC/UD: the receiver remembers which of its last SEEN_WINDOW message indices arrived. */
#define SEEN_WINDOW	(1u << 16)

/* Side-channel records (network order). */
enum rec_type {
	REC_CREDIT = 1,		/* value: messages the receiver waits for no more (credit) */
	REC_DONE,		/* value: the sender's message count; it sends no more */
	REC_FIN,		/* the sender has finished everything; teardown may start */
	REC_SENT,		/* UC/UD, value: messages sent, all out; it waits for credit */
};

struct rec {
	uint32_t type;
	uint32_t value;
};

/* What each side tells the other at connection time (network order). */
struct wire_info {
	uint32_t magic;
	uint32_t qp_type;
	uint32_t qpn;
	uint32_t psn;
	uint32_t n;
	uint32_t size;
	uint32_t forever;
	uint32_t rx_depth;
	uint8_t gid[16];
};

struct opts {
	const char *server;
	const char *dev;
	uint16_t port;
	enum ibv_qp_type type;
	uint64_t n;
	uint32_t size;
	uint32_t window;
	int gid_index;
	uint32_t mtu;
	unsigned int timeout_s;
	bool verbose;
	bool forever;
	bool events;
	bool inline_data;
	uint32_t gap_us;	/* --gaps: pause 0..gap_us after each burst of sends */
	uint32_t stall_ms;	/* --stall-ms: the hang bound in ms (else timeout_s) */
};

struct stream {
	struct opts o;
	uint32_t my_id, peer_id;	/* 0 server, 1 client: part of the payload pattern */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *chan;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	struct ibv_mr *smr, *rmr;
	uint8_t *sbuf, *rbuf;
	uint32_t rslot;			/* bytes per receive slot (UD: + GRH) */
	uint32_t rx_depth;
	uint32_t max_inline;
	union ibv_gid my_gid;
	struct wire_info peer;
	int tcp;
	bool peer_gone;
	uint8_t tcp_buf[sizeof(struct rec) * 64];
	size_t tcp_len;
	/* Sender state */
	uint64_t sent;			/* posted */
	uint64_t send_done;		/* completed */
	uint64_t credit;		/* peer: messages it waits for no more (REC_CREDIT) */
	uint32_t *free_slots;
	uint32_t nb_free;
	bool done_reported;
	uint64_t sent_reported;		/* the last REC_SENT */
	/* Receiver state */
	uint64_t expected;		/* next message index (UC/UD: past the highest arrived) */
	uint64_t received;		/* distinct messages */
	uint64_t lost;			/* below expected and not (yet) arrived */
	uint64_t holes;			/* UC/UD: of those, the ones waited for (below) */
	uint64_t given_up;		/* UC/UD: holes are the lost in the last rx_depth from here */
	uint64_t late;			/* UC/UD: arrived after a later one, counted lost before */
	uint64_t dups;			/* UC/UD: copies of messages counted already */
	uint64_t stale;			/* UC/UD: older than SEEN_WINDOW: checked, not counted */
	uint8_t *seen;			/* UC/UD: SEEN_WINDOW bits, message i at bit i % window */
	uint64_t credit_reported;
	uint64_t last_rx_ms;		/* the last receive completion */
	uint64_t peer_sent;		/* REC_SENT's value and when it came */
	uint64_t peer_sent_ms;
	bool peer_done;
	uint64_t peer_count;
	uint64_t peer_done_ms;
	bool fin_sent;
	bool peer_fin;
	uint64_t last_progress_ms;
	uint64_t worst_stall_ms;	/* the longest wait for a completion */
	/* --gaps: sends left in this burst, when the next burst may start, the draw */
	uint32_t burst_left;
	uint64_t next_send_ns;
	unsigned int seed;
};

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* Byte off of message idx from sender: every byte depends on all three. */
static inline uint8_t
pattern(uint32_t sender, uint32_t idx, uint32_t off)
{
	uint32_t x = off * 0x9E3779B1u ^ idx * 0x85EBCA6Bu ^ (sender + 1) * 0xC2B2AE35u;

	x ^= x >> 15;
	x *= 0x2C1B3C6Du;
	x ^= x >> 12;
	return (uint8_t)x;
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

static void
usage(const char *argv0)
{
	printf("usage: %s [options] [SERVER_IP]\n"
	       "  -p, --port PORT      TCP port of the exchange (default %d)\n"
	       "  -d, --ib-dev NAME    device (default: the first)\n"
	       "  -t, --type rc|uc|ud  transport (default rc)\n"
	       "  -n, --iters N        messages each way (default %d)\n"
	       "  -s, --size BYTES     message size (default %d; UD: at most the MTU)\n"
	       "  -w, --window W       sends outstanding (default %d)\n"
	       "  -g, --gid-idx I      local GID index (default 0)\n"
	       "  -m, --mtu BYTES      path MTU 256..4096 (default %d)\n"
	       "  -T, --timeout S      give up after S seconds without progress (default %d)\n"
	       "  -e, --events         sleep on completion events instead of polling\n"
	       "  -i, --inline         send inline (asks max_inline_data = size)\n"
	       "  -v, --verbose        print progress every second\n"
	       "      --forever        stream until killed or an error completion\n"
	       "      --gaps US        sends in bursts of 1 to %d, each followed by a pause of\n"
	       "                       0 to US microseconds (random; spinning, no sleep)\n"
	       "      --stall-ms MS    a hang is MS milliseconds without progress (not -T)\n"
	       "  -h, --help\n"
	       "exit: 0 ok, 1 setup/usage, 2 payload mismatch, 3 error completion, 4 timeout\n",
	       argv0, DEFAULT_PORT, DEFAULT_N, DEFAULT_SIZE, DEFAULT_WINDOW, DEFAULT_MTU,
	       DEFAULT_TIMEOUT, GAP_BURST_MAX);
}

static bool
parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0 || end == s || *end != '\0' || s[0] == '-' || v < min || v > max)
		return false;
	*out = v;
	return true;
}

static enum ibv_mtu
mtu_enum(uint32_t bytes)
{
	switch (bytes) {
	case 256: return IBV_MTU_256;
	case 512: return IBV_MTU_512;
	case 1024: return IBV_MTU_1024;
	case 2048: return IBV_MTU_2048;
	case 4096: return IBV_MTU_4096;
	default: return 0;
	}
}

static int
parse_opts(struct opts *o, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "ib-dev", required_argument, NULL, 'd' },
		{ "type", required_argument, NULL, 't' },
		{ "iters", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 's' },
		{ "window", required_argument, NULL, 'w' },
		{ "gid-idx", required_argument, NULL, 'g' },
		{ "mtu", required_argument, NULL, 'm' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "events", no_argument, NULL, 'e' },
		{ "inline", no_argument, NULL, 'i' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "forever", no_argument, NULL, 'F' },
		{ "gaps", required_argument, NULL, 'G' },
		{ "stall-ms", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int c;

	memset(o, 0, sizeof(*o));
	o->port = DEFAULT_PORT;
	o->type = IBV_QPT_RC;
	o->n = DEFAULT_N;
	o->size = DEFAULT_SIZE;
	o->window = DEFAULT_WINDOW;
	o->mtu = DEFAULT_MTU;
	o->timeout_s = DEFAULT_TIMEOUT;
	while ((c = getopt_long(argc, argv, "p:d:t:n:s:w:g:m:T:eivh", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (!parse_u64(optarg, 1, UINT16_MAX, &v))
				goto bad;
			o->port = (uint16_t)v;
			break;
		case 'd':
			o->dev = optarg;
			break;
		case 't':
			if (strcmp(optarg, "rc") == 0)
				o->type = IBV_QPT_RC;
			else if (strcmp(optarg, "uc") == 0)
				o->type = IBV_QPT_UC;
			else if (strcmp(optarg, "ud") == 0)
				o->type = IBV_QPT_UD;
			else
				goto bad;
			break;
		case 'n':
			if (!parse_u64(optarg, 1, UINT32_MAX, &o->n))
				goto bad;
			break;
		case 's':
			if (!parse_u64(optarg, 0, 1u << 30, &v))
				goto bad;
			o->size = (uint32_t)v;
			break;
		case 'w':
			if (!parse_u64(optarg, 1, 4096, &v))
				goto bad;
			o->window = (uint32_t)v;
			break;
		case 'g':
			if (!parse_u64(optarg, 0, 255, &v))
				goto bad;
			o->gid_index = (int)v;
			break;
		case 'm':
			if (!parse_u64(optarg, 256, 4096, &v) || mtu_enum((uint32_t)v) == 0)
				goto bad;
			o->mtu = (uint32_t)v;
			break;
		case 'T':
			if (!parse_u64(optarg, 1, 86400, &v))
				goto bad;
			o->timeout_s = (unsigned int)v;
			break;
		case 'e':
			o->events = true;
			break;
		case 'i':
			o->inline_data = true;
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'F':
			o->forever = true;
			break;
		case 'G':
			if (!parse_u64(optarg, 1, GAP_US_MAX, &v))
				goto bad;
			o->gap_us = (uint32_t)v;
			break;
		case 'S':
			if (!parse_u64(optarg, 1, 86400000, &v))
				goto bad;
			o->stall_ms = (uint32_t)v;
			break;
		case 'h':
			usage(argv[0]);
			exit(EXIT_OK);
		default:
			goto bad;
		}
	}
	if (optind + 1 == argc)
		o->server = argv[optind];
	else if (optind != argc)
		goto bad;
	if (o->type == IBV_QPT_UD && o->size > o->mtu) {
		fprintf(stderr, "UD messages are at most the MTU (%u bytes)\n", o->mtu);
		return -1;
	}
	return 0;
bad:
	usage(argv[0]);
	return -1;
}

/* ---- TCP: connection set-up and the side channel ---- */

static int
tcp_connect(const struct opts *o)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res, *r;
	char service[8];
	uint64_t deadline = now_ms() + (uint64_t)o->timeout_s * 1000;
	int s = -1;

	snprintf(service, sizeof(service), "%u", o->port);
	if (getaddrinfo(o->server, service, &hints, &res) != 0) {
		fprintf(stderr, "cannot resolve %s\n", o->server);
		return -1;
	}
	/* The server may not listen yet: retry until the timeout. */
	while (s < 0 && now_ms() < deadline) {
		for (r = res; r != NULL; r = r->ai_next) {
			s = socket(r->ai_family, r->ai_socktype, r->ai_protocol);
			if (s < 0)
				continue;
			if (connect(s, r->ai_addr, r->ai_addrlen) == 0)
				break;
			close(s);
			s = -1;
		}
		if (s < 0)
			usleep(100000);
	}
	freeaddrinfo(res);
	if (s < 0)
		fprintf(stderr, "cannot connect to %s:%u\n", o->server, o->port);
	return s;
}

static int
tcp_accept(const struct opts *o)
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT };
	struct pollfd pfd;
	int one = 1, ls, s;

	sa.sin6_port = htons(o->port);
	ls = socket(AF_INET6, SOCK_STREAM, 0);
	if (ls < 0) {
		perror("socket");
		return -1;
	}
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(ls, 1) < 0) {
		fprintf(stderr, "cannot listen on port %u: %s\n", o->port, strerror(errno));
		close(ls);
		return -1;
	}
	pfd.fd = ls;
	pfd.events = POLLIN;
	if (poll(&pfd, 1, (int)o->timeout_s * 1000) != 1) {
		fprintf(stderr, "timeout (hang): no client connected in %u s\n", o->timeout_s);
		close(ls);
		return -2;
	}
	s = accept(ls, NULL, NULL);
	close(ls);
	if (s < 0)
		perror("accept");
	return s;
}

static int
tcp_exchange(struct stream *st, const struct wire_info *mine)
{
	uint8_t *p = (uint8_t *)&st->peer;
	size_t got = 0;
	struct pollfd pfd = { .fd = st->tcp, .events = POLLIN };

	if (send(st->tcp, mine, sizeof(*mine), MSG_NOSIGNAL) != (ssize_t)sizeof(*mine)) {
		perror("send");
		return -1;
	}
	while (got < sizeof(st->peer)) {
		ssize_t n;

		if (poll(&pfd, 1, (int)st->o.timeout_s * 1000) != 1) {
			fprintf(stderr, "timeout (hang): no peer information\n");
			return -2;
		}
		n = recv(st->tcp, p + got, sizeof(st->peer) - got, 0);
		if (n <= 0) {
			fprintf(stderr, "peer closed during the exchange\n");
			return -1;
		}
		got += (size_t)n;
	}
	return 0;
}

static void
rec_send(struct stream *st, uint32_t type, uint32_t value)
{
	struct rec r = { .type = htonl(type), .value = htonl(value) };

	if (st->peer_gone)
		return;
	if (send(st->tcp, &r, sizeof(r), MSG_NOSIGNAL) != (ssize_t)sizeof(r))
		st->peer_gone = true;
}

/* Reconstructs a 64-bit count from its low 32 bits, near ref. */
static uint64_t
widen(uint64_t ref, uint32_t low)
{
	return ref + (uint64_t)(int64_t)(int32_t)(low - (uint32_t)ref);
}

/* Reads whatever records have arrived, without blocking. */
static void
rec_poll(struct stream *st)
{
	size_t off = 0;
	ssize_t n;

	if (st->peer_gone)
		return;
	n = recv(st->tcp, st->tcp_buf + st->tcp_len, sizeof(st->tcp_buf) - st->tcp_len,
		 MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
		st->peer_gone = true;
		if (st->o.verbose)
			say("peer closed the TCP connection");
		return;
	}
	if (n < 0)
		return;
	st->tcp_len += (size_t)n;
	while (st->tcp_len - off >= sizeof(struct rec)) {
		struct rec r;
		uint64_t v;

		memcpy(&r, st->tcp_buf + off, sizeof(r));
		off += sizeof(r);
		switch (ntohl(r.type)) {
		case REC_CREDIT:
			v = widen(st->credit, ntohl(r.value));
			if (v > st->credit) {
				st->credit = v;
				st->last_progress_ms = now_ms();
			}
			break;
		case REC_DONE:
			st->peer_done = true;
			st->peer_count = widen(st->expected, ntohl(r.value));
			st->peer_done_ms = now_ms();
			break;
		case REC_FIN:
			st->peer_fin = true;
			break;
		case REC_SENT:
			v = widen(st->expected, ntohl(r.value));
			if (v > st->peer_sent) {
				st->peer_sent = v;
				st->peer_sent_ms = now_ms();
			}
			break;
		default:
			break;
		}
	}
	memmove(st->tcp_buf, st->tcp_buf + off, st->tcp_len - off);
	st->tcp_len -= off;
}

/* ---- Verbs set-up ---- */

static int
open_device(struct stream *st)
{
	struct ibv_device **list;
	int i, num;

	list = ibv_get_device_list(&num);
	if (list == NULL || num == 0) {
		fprintf(stderr, "no verbs device (%s)\n", strerror(errno));
		if (list != NULL)
			ibv_free_device_list(list);
		return -1;
	}
	for (i = 0; i < num; i++)
		if (st->o.dev == NULL || strcmp(ibv_get_device_name(list[i]), st->o.dev) == 0)
			break;
	if (i == num) {
		fprintf(stderr, "device %s not found\n", st->o.dev);
		ibv_free_device_list(list);
		return -1;
	}
	st->ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (st->ctx == NULL) {
		fprintf(stderr, "ibv_open_device: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

static int
create_objects(struct stream *st)
{
	struct ibv_qp_init_attr ia;
	uint32_t i, cqe;
	size_t sbytes, rbytes;

	st->rx_depth = st->o.window * 2 < 16 ? 16 : st->o.window * 2;
	st->rslot = st->o.size + (st->o.type == IBV_QPT_UD ? GRH_LEN : 0);
	if (st->rslot == 0)
		st->rslot = 1;
	st->pd = ibv_alloc_pd(st->ctx);
	if (st->pd == NULL) {
		fprintf(stderr, "ibv_alloc_pd: %s\n", strerror(errno));
		return -1;
	}
	sbytes = (size_t)st->o.window * (st->o.size ? st->o.size : 1);
	rbytes = (size_t)st->rx_depth * st->rslot;
	if (posix_memalign((void **)&st->sbuf, 4096, sbytes) != 0 ||
	    posix_memalign((void **)&st->rbuf, 4096, rbytes) != 0) {
		fprintf(stderr, "out of memory\n");
		return -1;
	}
	memset(st->rbuf, 0, rbytes);
	st->smr = ibv_reg_mr(st->pd, st->sbuf, sbytes, IBV_ACCESS_LOCAL_WRITE);
	st->rmr = ibv_reg_mr(st->pd, st->rbuf, rbytes, IBV_ACCESS_LOCAL_WRITE);
	if (st->smr == NULL || st->rmr == NULL) {
		fprintf(stderr, "ibv_reg_mr: %s\n", strerror(errno));
		return -1;
	}
	if (st->o.events) {
		st->chan = ibv_create_comp_channel(st->ctx);
		if (st->chan == NULL) {
			fprintf(stderr, "ibv_create_comp_channel: %s\n", strerror(errno));
			return -1;
		}
	}
	cqe = st->o.window + st->rx_depth;
	st->cq = ibv_create_cq(st->ctx, (int)cqe, NULL, st->chan, 0);
	if (st->cq == NULL) {
		fprintf(stderr, "ibv_create_cq(%u): %s\n", cqe, strerror(errno));
		return -1;
	}
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = st->cq;
	ia.recv_cq = st->cq;
	ia.qp_type = st->o.type;
	ia.cap.max_send_wr = st->o.window;
	ia.cap.max_recv_wr = st->rx_depth;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = st->o.inline_data ? st->o.size : 0;
	st->qp = ibv_create_qp(st->pd, &ia);
	if (st->qp == NULL) {
		fprintf(stderr, "ibv_create_qp: %s\n", strerror(errno));
		return -1;
	}
	st->max_inline = st->o.inline_data ? ia.cap.max_inline_data : 0;
	st->free_slots = calloc(st->o.window, sizeof(*st->free_slots));
	if (st->free_slots == NULL)
		return -1;
	if (st->o.type != IBV_QPT_RC) {
		st->seen = calloc(SEEN_WINDOW / 8, 1);
		if (st->seen == NULL)
			return -1;
	}
	for (i = 0; i < st->o.window; i++)
		st->free_slots[st->nb_free++] = st->o.window - 1 - i;
	if (ibv_query_gid(st->ctx, 1, st->o.gid_index, &st->my_gid) != 0) {
		fprintf(stderr, "ibv_query_gid(%d): %s\n", st->o.gid_index, strerror(errno));
		return -1;
	}
	return 0;
}

static int
post_recv(struct stream *st, uint32_t slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(st->rbuf + (size_t)slot * st->rslot),
		.length = st->rslot,
		.lkey = st->rmr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad = NULL;
	int ret = ibv_post_recv(st->qp, &wr, &bad);

	if (ret != 0)
		fprintf(stderr, "ibv_post_recv: %s\n", strerror(ret));
	return ret;
}

static int
modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask, const char *what)
{
	int ret = ibv_modify_qp(qp, a, mask);

	if (ret != 0)
		fprintf(stderr, "ibv_modify_qp(%s): %s\n", what, strerror(ret));
	return ret;
}

static int
to_init(struct stream *st)
{
	struct ibv_qp_attr a;
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	if (st->o.type == IBV_QPT_UD) {
		a.qkey = UD_QKEY;
		mask |= IBV_QP_QKEY;
	} else {
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	return modify(st->qp, &a, mask, "INIT");
}

static void
fill_ah(struct stream *st, struct ibv_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	ah->port_num = 1;
	memcpy(ah->grh.dgid.raw, st->peer.gid, sizeof(st->peer.gid));
	ah->grh.sgid_index = (uint8_t)st->o.gid_index;
	ah->grh.hop_limit = 64;
}

static int
to_rts(struct stream *st, uint32_t my_psn)
{
	struct ibv_qp_attr a;
	int mask;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	mask = IBV_QP_STATE;
	if (st->o.type != IBV_QPT_UD) {
		a.path_mtu = mtu_enum(st->o.mtu);
		a.dest_qp_num = ntohl(st->peer.qpn);
		a.rq_psn = ntohl(st->peer.psn);
		fill_ah(st, &a.ah_attr);
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		if (st->o.type == IBV_QPT_RC) {
			a.max_dest_rd_atomic = 0;
			a.min_rnr_timer = QP_MIN_RNR;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
	}
	if (modify(st->qp, &a, mask, "RTR") != 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = my_psn;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (st->o.type == IBV_QPT_RC) {
		a.timeout = QP_TIMEOUT;
		a.retry_cnt = QP_RETRY_CNT;
		a.rnr_retry = QP_RNR_RETRY;
		a.max_rd_atomic = 0;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	if (modify(st->qp, &a, mask, "RTS") != 0)
		return -1;
	if (st->o.type == IBV_QPT_UD) {
		struct ibv_ah_attr ah;

		fill_ah(st, &ah);
		st->ah = ibv_create_ah(st->pd, &ah);
		if (st->ah == NULL) {
			fprintf(stderr, "ibv_create_ah: %s\n", strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* ---- Streaming ---- */

static bool
sending_done(const struct stream *st)
{
	return !st->o.forever && st->sent == st->o.n;
}

static int
post_send(struct stream *st)
{
	uint32_t slot = st->free_slots[--st->nb_free];
	uint8_t *buf = st->sbuf + (size_t)slot * st->o.size;
	uint32_t idx = (uint32_t)st->sent;
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = st->o.size,
			       .lkey = st->smr->lkey };
	struct ibv_send_wr wr, *bad = NULL;
	uint32_t off;
	int ret;

	for (off = 0; off < st->o.size; off++)
		buf[off] = pattern(st->my_id, idx, off);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = WR_SEND | slot;
	wr.sg_list = &sge;
	wr.num_sge = st->o.size > 0 ? 1 : 0;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (st->o.size > 0 && st->o.size <= st->max_inline)
		wr.send_flags |= IBV_SEND_INLINE;
	/*
	 * UC and UD may lose messages: the receiver learns each index from the immediate.
	 * RC delivers in order, so every other message goes without one (both opcodes tested).
	 */
	if (st->o.type != IBV_QPT_RC || (idx & 1) == 0) {
		wr.opcode = IBV_WR_SEND_WITH_IMM;
		wr.imm_data = htonl(idx);
	} else {
		wr.opcode = IBV_WR_SEND;
	}
	if (st->o.type == IBV_QPT_UD) {
		wr.wr.ud.ah = st->ah;
		wr.wr.ud.remote_qpn = ntohl(st->peer.qpn);
		wr.wr.ud.remote_qkey = UD_QKEY;
	}
	ret = ibv_post_send(st->qp, &wr, &bad);
	if (ret != 0) {
		st->nb_free++;
		fprintf(stderr, "ibv_post_send: %s\n", strerror(ret));
		return -1;
	}
	st->sent++;
	return 0;
}

static inline bool
seen_get(const struct stream *st, uint64_t idx)
{
	uint32_t bit = (uint32_t)(idx % SEEN_WINDOW);

	return (st->seen[bit / 8] >> (bit % 8)) & 1;
}

static inline void
seen_put(struct stream *st, uint64_t idx, bool on)
{
	uint32_t bit = (uint32_t)(idx % SEEN_WINDOW);

	if (on)
		st->seen[bit / 8] |= (uint8_t)(1u << (bit % 8));
	else
		st->seen[bit / 8] &= (uint8_t)~(1u << (bit % 8));
}

/*
 * UC/UD: expected moves on to to; the messages from expected to to have not arrived. They
 * count as lost and their bits say so (the indices those bits held leave the window). The
 * ones among the last rx_depth, from given_up on, are holes, which the credit leaves out:
 * they may still come and take a receive. A hole that leaves the last rx_depth is given up.
 */
static void
skip_to(struct stream *st, uint64_t to)
{
	uint64_t e = st->expected, r = st->rx_depth, i, end;

	if (to <= e)
		return;
	i = e > r ? e - r : 0;
	if (i < st->given_up)
		i = st->given_up;
	end = to > r ? to - r : 0;
	for (; i < end && i < e; i++)
		if (!seen_get(st, i))
			st->holes--;
	for (i = to - e > SEEN_WINDOW ? to - SEEN_WINDOW : e; i < to; i++)
		seen_put(st, i, false);
	st->holes += to - (to - e > r ? to - r : e);
	st->lost += to - e;
	st->expected = to;
}

/* UC/UD: message idx, below expected and counted lost until now, has arrived. */
static void
arrived(struct stream *st, uint64_t idx)
{
	seen_put(st, idx, true);
	st->lost--;
	st->received++;
	if (st->expected - idx <= st->rx_depth && idx >= st->given_up)
		st->holes--;
}

/*
 * UC/UD: the peer has sent every message below peer_sent and waits for credit that the
 * holes, or messages not come at all, hold back. When nothing has arrived for GIVEUP_MS
 * since it said so, what has not come is lost for good, and the credit moves on to
 * peer_sent. (Without this, a window whose messages are all lost stalls both sides.)
 */
static void
give_up(struct stream *st, uint64_t now)
{
	if (st->peer_sent < st->credit_reported + st->rx_depth ||
	    now - st->peer_sent_ms < GIVEUP_MS || now - st->last_rx_ms < GIVEUP_MS)
		return;
	skip_to(st, st->peer_sent);
	st->given_up = st->expected;
	st->holes = 0;
}

/*
 * UC/UD: counts message idx, checked already, at most once. One beyond the highest so far
 * makes those it skips lost; one below it that had been counted lost is received after
 * all, late; one that arrived already is a copy. Further back than the window, which of
 * these it is is not known: it only counts as stale. received + lost stays expected.
 */
static void
note_unordered(struct stream *st, uint64_t idx)
{
	if (idx >= st->expected) {
		skip_to(st, idx + 1);
		arrived(st, idx);
	} else if (st->expected - idx > SEEN_WINDOW) {
		st->stale++;
	} else if (seen_get(st, idx)) {
		st->dups++;
	} else {
		arrived(st, idx);
		st->late++;
	}
}

/* Checks a received message; returns an exit status (0 good). */
static int
check_recv(struct stream *st, const struct ibv_wc *wc)
{
	const uint8_t *buf = st->rbuf + (size_t)wc->wr_id * st->rslot;
	uint32_t expect_len = st->o.size, off;
	uint64_t idx;

	if (st->o.type == IBV_QPT_UD) {
		buf += GRH_LEN;
		expect_len += GRH_LEN;
		if (wc->src_qp != ntohl(st->peer.qpn)) {
			say("payload mismatch: message from QP 0x%x, not the peer's 0x%x",
			    wc->src_qp, ntohl(st->peer.qpn));
			return EXIT_MISMATCH;
		}
	}
	if (wc->opcode != IBV_WC_RECV) {
		say("payload mismatch: receive completion with opcode %d", wc->opcode);
		return EXIT_MISMATCH;
	}
	if (wc->wc_flags & IBV_WC_WITH_IMM) {
		idx = widen(st->expected, ntohl(wc->imm_data));
	} else if (st->o.type == IBV_QPT_RC && (st->expected & 1) == 1) {
		idx = st->expected;
	} else {
		say("payload mismatch: message %" PRIu64 " came without its immediate",
		    st->expected);
		return EXIT_MISMATCH;
	}
	/* RC delivers each message once, in order; UC and UD in any order (note_unordered). */
	if (st->o.type == IBV_QPT_RC && idx != st->expected) {
		say("payload mismatch: message %" PRIu64 " arrived, %" PRIu64 " expected", idx,
		    st->expected);
		return EXIT_MISMATCH;
	}
	if (!st->o.forever && idx >= st->o.n) {
		say("payload mismatch: message %" PRIu64 " beyond the %" PRIu64 " sent", idx,
		    st->o.n);
		return EXIT_MISMATCH;
	}
	if (wc->byte_len != expect_len) {
		say("payload mismatch: message %" PRIu64 " has %u bytes, %u expected", idx,
		    wc->byte_len, expect_len);
		return EXIT_MISMATCH;
	}
	for (off = 0; off < st->o.size; off++) {
		uint8_t want = pattern(st->peer_id, (uint32_t)idx, off);

		if (buf[off] != want) {
			say("payload mismatch: message %" PRIu64 " offset %u: 0x%02x, expected "
			    "0x%02x", idx, off, buf[off], want);
			return EXIT_MISMATCH;
		}
	}
	if (st->o.type == IBV_QPT_RC) {
		st->expected = idx + 1;
		st->received++;
	} else {
		note_unordered(st, idx);
	}
	return EXIT_OK;
}

static int
handle_wc(struct stream *st, const struct ibv_wc *wc)
{
	int ret;

	if (wc->status != IBV_WC_SUCCESS) {
		say("error completion: %s (status %d) wr_id 0x%" PRIx64 " vendor_err %u opcode %d "
		    "sent=%" PRIu64 " received=%" PRIu64, ibv_wc_status_str(wc->status),
		    wc->status, wc->wr_id, wc->vendor_err, wc->opcode, st->send_done,
		    st->received);
		return EXIT_ERR_WC;
	}
	if (now_ms() - st->last_progress_ms > st->worst_stall_ms)
		st->worst_stall_ms = now_ms() - st->last_progress_ms;
	st->last_progress_ms = now_ms();
	if (wc->wr_id & WR_SEND) {
		if (wc->opcode != IBV_WC_SEND) {
			say("payload mismatch: send completion with opcode %d", wc->opcode);
			return EXIT_MISMATCH;
		}
		st->free_slots[st->nb_free++] = (uint32_t)wc->wr_id;
		st->send_done++;
		return EXIT_OK;
	}
	if (wc->wr_id >= st->rx_depth) {
		say("payload mismatch: receive completion with unknown wr_id 0x%" PRIx64,
		    wc->wr_id);
		return EXIT_MISMATCH;
	}
	st->last_rx_ms = st->last_progress_ms;
	ret = check_recv(st, wc);
	if (ret != EXIT_OK)
		return ret;
	return post_recv(st, (uint32_t)wc->wr_id) == 0 ? EXIT_OK : EXIT_SETUP;
}

static bool
receiving_done(struct stream *st, uint64_t now)
{
	if (st->o.forever)
		return false;
	if (st->expected == st->o.n)
		return true;
	/* UC/UD: what has not come some time after the peer's last send never will. */
	if (st->o.type != IBV_QPT_RC && st->peer_done && now - st->peer_done_ms >= UD_GRACE_MS &&
	    now - st->last_progress_ms >= UD_GRACE_MS) {
		skip_to(st, st->peer_count);
		return true;
	}
	return false;
}

/* Waits a little for completions or side-channel records when there is nothing to do. */
static int
idle_wait(struct stream *st)
{
	struct timespec ts = { .tv_nsec = IDLE_SLEEP_NS };
	struct pollfd pfd[2];
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	int n;

	if (!st->o.events) {
		nanosleep(&ts, NULL);
		return 0;
	}
	pfd[0].fd = st->chan->fd;
	pfd[0].events = POLLIN;
	pfd[1].fd = st->tcp;
	pfd[1].events = POLLIN;
	/* UC/UD: a give_up due wakes no one: it takes a timeout of its own. */
	n = poll(pfd, st->peer_gone ? 1 : 2, st->o.type != IBV_QPT_RC &&
		 st->peer_sent >= st->credit_reported + st->rx_depth ? GIVEUP_MS : 100);
	if (n > 0 && (pfd[0].revents & POLLIN)) {
		if (ibv_get_cq_event(st->chan, &ev_cq, &ev_ctx) != 0) {
			fprintf(stderr, "ibv_get_cq_event: %s\n", strerror(errno));
			return -1;
		}
		ibv_ack_cq_events(ev_cq, 1);
		if (ev_cq != st->cq) {
			fprintf(stderr, "ibv_get_cq_event returned a CQ not ours\n");
			return -1;
		}
	}
	if (ibv_req_notify_cq(st->cq, 0) != 0) {
		fprintf(stderr, "ibv_req_notify_cq failed\n");
		return -1;
	}
	return 0;
}

/*
 * --gaps: whether a send may go now. Sends come in bursts of 1 to GAP_BURST_MAX, each
 * burst after a pause of 0 to gap_us microseconds, drawn from a seed of the side's own, so
 * that doorbells land before, while and after the engine goes to sleep.
 */
static bool
gap_over(struct stream *st)
{
	if (st->o.gap_us == 0 || st->burst_left != 0)
		return true;
	if (now_ns() < st->next_send_ns)
		return false;
	st->burst_left = 1 + (uint32_t)rand_r(&st->seed) % GAP_BURST_MAX;
	return true;
}

static void
gap_next(struct stream *st)
{
	if (st->o.gap_us == 0 || --st->burst_left != 0)
		return;
	st->next_send_ns = now_ns() + (uint64_t)((uint32_t)rand_r(&st->seed) %
						(st->o.gap_us + 1)) * 1000;
}

static int
run(struct stream *st)
{
	struct ibv_wc wc[POLL_BATCH];
	uint64_t last_print = now_ms(), t;
	uint64_t hang_ms = st->o.stall_ms != 0 ? st->o.stall_ms : (uint64_t)st->o.timeout_s * 1000;
	uint64_t credit;
	int i, n, ret;

	st->credit = 0;
	st->seed = 0x5eed + st->my_id;
	st->last_progress_ms = st->last_rx_ms = now_ms();
	if (st->o.events && ibv_req_notify_cq(st->cq, 0) != 0) {
		fprintf(stderr, "ibv_req_notify_cq failed\n");
		return EXIT_SETUP;
	}
	for (;;) {
		bool busy = false;

		rec_poll(st);
		/* Credits: the peer's rx_depth receives cover everything from its credit on. */
		while (!sending_done(st) && st->nb_free > 0 &&
		       (st->peer_gone || st->sent < st->credit + ntohl(st->peer.rx_depth)) &&
		       gap_over(st)) {
			if (post_send(st) != 0)
				return EXIT_SETUP;
			gap_next(st);
			busy = true;
		}
		/* UC/UD: held back by the credit with every send out: the peer may wait for
		 * messages that are lost (give_up). */
		if (st->o.type != IBV_QPT_RC && !sending_done(st) && st->send_done == st->sent &&
		    st->sent >= st->credit + ntohl(st->peer.rx_depth) &&
		    st->sent != st->sent_reported) {
			rec_send(st, REC_SENT, (uint32_t)st->sent);
			st->sent_reported = st->sent;
		}
		if (sending_done(st) && st->send_done == st->sent && !st->done_reported) {
			rec_send(st, REC_DONE, (uint32_t)st->sent);
			st->done_reported = true;
		}
		n = ibv_poll_cq(st->cq, POLL_BATCH, wc);
		if (n < 0) {
			say("error completion: ibv_poll_cq failed (status %d) wr_id 0", n);
			return EXIT_ERR_WC;
		}
		for (i = 0; i < n; i++) {
			ret = handle_wc(st, &wc[i]);
			if (ret != EXIT_OK)
				return ret;
		}
		if (n > 0)
			busy = true;
		else if (st->o.type != IBV_QPT_RC)
			give_up(st, now_ms());
		/* Every message below expected is received or lost, but the holes (UC/UD). */
		credit = st->expected - st->holes;
		if (credit - st->credit_reported >= (st->rx_depth + 3) / 4 ||
		    (credit != st->credit_reported && n == 0)) {
			rec_send(st, REC_CREDIT, (uint32_t)credit);
			st->credit_reported = credit;
		}
		t = now_ms();
		if (st->o.verbose && t - last_print >= 1000) {
			say("progress sent=%" PRIu64 " received=%" PRIu64 " lost=%" PRIu64,
			    st->send_done, st->received, st->lost);
			last_print = t;
		}
		if (sending_done(st) && st->send_done == st->sent && receiving_done(st, t)) {
			if (!st->fin_sent) {
				rec_send(st, REC_FIN, 0);
				st->fin_sent = true;
			}
			/* The peer may still wait for our ACKs (RC): stay until it has all. */
			if (st->peer_fin || st->peer_gone)
				return EXIT_OK;
		}
		if (st->peer_gone && st->o.type != IBV_QPT_RC && st->o.forever) {
			say("peer closed the TCP connection: stopping");
			return EXIT_OK;
		}
		if (t - st->last_progress_ms > hang_ms) {
			say("timeout (hang): no progress for %" PRIu64 " ms sent=%" PRIu64
			    " completed=%" PRIu64 " received=%" PRIu64 " credit=%" PRIu64, hang_ms,
			    st->sent, st->send_done, st->received, st->credit);
			return EXIT_HANG;
		}
		/* --gaps spins through its pauses: a sleep would stretch them past what is asked. */
		if (!busy && st->o.gap_us == 0 && idle_wait(st) != 0)
			return EXIT_SETUP;
	}
}

/* Destroys everything; 0 when every destroy call succeeded. */
static int
teardown(struct stream *st)
{
	int bad = 0;

	if (st->ah != NULL && ibv_destroy_ah(st->ah) != 0)
		bad |= 1;
	if (st->qp != NULL && ibv_destroy_qp(st->qp) != 0)
		bad |= 2;
	if (st->cq != NULL && ibv_destroy_cq(st->cq) != 0)
		bad |= 4;
	if (st->chan != NULL && ibv_destroy_comp_channel(st->chan) != 0)
		bad |= 8;
	if (st->smr != NULL && ibv_dereg_mr(st->smr) != 0)
		bad |= 16;
	if (st->rmr != NULL && ibv_dereg_mr(st->rmr) != 0)
		bad |= 32;
	if (st->pd != NULL && ibv_dealloc_pd(st->pd) != 0)
		bad |= 64;
	if (st->ctx != NULL && ibv_close_device(st->ctx) != 0)
		bad |= 128;
	if (bad != 0)
		fprintf(stderr, "teardown: destroy calls failed (mask 0x%x)\n", bad);
	free(st->sbuf);
	free(st->rbuf);
	free(st->free_slots);
	free(st->seen);
	if (st->tcp >= 0)
		close(st->tcp);
	return bad;
}

int
main(int argc, char **argv)
{
	struct stream st;
	struct wire_info mine;
	uint32_t psn, i;
	int ret;

	memset(&st, 0, sizeof(st));
	st.tcp = -1;
	if (parse_opts(&st.o, argc, argv) != 0)
		return EXIT_SETUP;
	setvbuf(stdout, NULL, _IOLBF, 0);
	st.my_id = st.o.server != NULL;
	st.peer_id = !st.my_id;
	srand48(getpid() ^ time(NULL));
	psn = (uint32_t)lrand48() & PSN_MASK;
	ret = EXIT_SETUP;
	if (open_device(&st) != 0 || create_objects(&st) != 0 || to_init(&st) != 0)
		goto out;
	/* Every receive is posted before the peer can send (INIT allows it). */
	for (i = 0; i < st.rx_depth; i++)
		if (post_recv(&st, i) != 0)
			goto out;
	st.tcp = st.o.server != NULL ? tcp_connect(&st.o) : tcp_accept(&st.o);
	if (st.tcp < 0) {
		ret = st.tcp == -2 ? EXIT_HANG : EXIT_SETUP;
		st.tcp = -1;
		goto out;
	}
	memset(&mine, 0, sizeof(mine));
	mine.magic = htonl(WIRE_MAGIC);
	mine.qp_type = htonl(st.o.type);
	mine.qpn = htonl(st.qp->qp_num);
	mine.psn = htonl(psn);
	mine.n = htonl((uint32_t)st.o.n);
	mine.size = htonl(st.o.size);
	mine.forever = htonl(st.o.forever);
	mine.rx_depth = htonl(st.rx_depth);
	memcpy(mine.gid, st.my_gid.raw, sizeof(mine.gid));
	ret = tcp_exchange(&st, &mine);
	if (ret != 0) {
		ret = ret == -2 ? EXIT_HANG : EXIT_SETUP;
		goto out;
	}
	ret = EXIT_SETUP;
	if (st.peer.magic != mine.magic || st.peer.qp_type != mine.qp_type ||
	    st.peer.n != mine.n || st.peer.size != mine.size || st.peer.forever != mine.forever) {
		fprintf(stderr, "the peer runs with other options (type, -n, -s, --forever)\n");
		goto out;
	}
	if (to_rts(&st, psn) != 0)
		goto out;
	/*
	 * Once more, as a barrier: neither side sends before the other's QP is ready to
	 * receive, so no first message is dropped and waits out an ACK timeout.
	 */
	ret = tcp_exchange(&st, &mine);
	if (ret != 0) {
		ret = ret == -2 ? EXIT_HANG : EXIT_SETUP;
		goto out;
	}
	ret = EXIT_SETUP;
	if (st.o.verbose)
		say("qpn 0x%x peer qpn 0x%x", st.qp->qp_num, ntohl(st.peer.qpn));
	say("ready");
	ret = run(&st);
	if (ret == EXIT_OK)
		say("done sent=%" PRIu64 " received=%" PRIu64 " lost=%" PRIu64
		    " worst_stall_ms=%" PRIu64 " late=%" PRIu64 " dup=%" PRIu64 " stale=%" PRIu64,
		    st.send_done, st.received, st.lost, st.worst_stall_ms, st.late, st.dups,
		    st.stale);
out:
	if (teardown(&st) != 0 && ret == EXIT_OK)
		ret = EXIT_SETUP;
	return ret;
}
