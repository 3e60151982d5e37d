/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs_memory: what ibv_reg_mr must leave as it found it in a program's memory (issue
 * 24), through the plain verbs API only. One subcommand per case; test_memory.py runs each
 * against real droced daemons.
 *
 *   lost-writes    threads incrementing words on pages that are registered and
 *                  deregistered again and again lose no increment
 *   fork           after a fork the child has its own copy of registered memory; the
 *                  parent's MR still takes an RDMA WRITE; the child can register memory
 *   fork-safe      the same after ibv_fork_init() or with RDMAV_FORK_SAFE: the child has
 *                  no access to registered memory at all
 *   dontneed       deregistered memory is private anonymous memory again
 *   calloc-churn   allocations registered, deregistered and freed: calloc stays zero
 *   posix-shm, file, hugetlbfs, sysv
 *                  a shared file mapping registered in place (the target side): `writer`,
 *                  on another droced, RDMA-WRITEs into it and the file shows the data
 *   writer         the peer of the in-place cases
 *   shm-read       a third process that reads the POSIX segment of posix-shm by name
 *
 * Messages say "verbs_memory CASE: ..."; exit status: 0 every check passed, 1 a check
 * failed, 2 usage error, 77 the case cannot run here (the reason is printed).
 */

#include <arpa/inet.h>
#include <dlfcn.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define EXIT_FAIL	1
#define EXIT_USAGE	2
#define EXIT_SKIP	77	/* automake's and meson's "skipped" */

#define DEFAULT_CYCLES	10000
#define DEFAULT_WRITERS	3
#define MAX_WRITERS	8
#define DEFAULT_ITERS	4000
#define DEFAULT_SEED	1
#define DEFAULT_PORT	19420
#define DEFAULT_TIMEOUT	60
#define DEFAULT_INPLACE	(1u << 20)	/* posix-shm, file and sysv regions */
#define FORK_BUF	(64u << 10)	/* what the fork cases register */
#define DONTNEED_BUF	(1u << 20)
#define CHILD_BUF	(16u << 10)	/* what a forked child registers of its own */

/* lost-writes: the pages writers write and the main thread registers over. */
#define LW_PAGES	64
#define LW_SPAN_MAX	8		/* pages a range across pages may cover */
#define LW_WRITER_NICE	19		/* the writers' priority: see lw_write */
#define LW_EPOCH_CYCLES	500		/* registrations over one allocation of the pages */

/* calloc-churn: live blocks, and the sizes that take each of glibc's paths. */
#define CC_SLOTS	48
#define CC_SMALL_MAX	4096		/* tcache and bins */
#define CC_MEDIUM_MAX	(120u << 10)	/* the heap, below glibc's first mmap threshold */
#define CC_LARGE_MIN	(256u << 10)	/* mmap, until the threshold has grown past it */
#define CC_LARGE_MAX	(4u << 20)

/* QPs: local ACK timeout 14 (67 ms), 7 retries; what one WRITE carries. */
#define QP_DEPTH	16
#define QP_ACK_TIMEOUT	14
#define QP_RETRIES	7
#define QP_MIN_RNR	1		/* RNR NAK timer code 1: 0.01 ms */
#define QP_HOP_LIMIT	64
#define WRITE_CHUNK	(256u << 10)
#define WC_WAIT_MS	20000
#define POLL_SLEEP_NS	50000
#define CONNECT_RETRY_US 100000
#define WIRE_MAGIC	0x64724d45u	/* "drME" */
#define MSG_DONE	'D'		/* writer -> target: every WRITE has completed */
#define MSG_GOOD	'K'		/* target -> writer: the data is right */
#define MSG_READY	'R'		/* target -> writer: its QP is at RTS */

/* The part of an in-place region the writer leaves alone at each end: both edges of the
 * written window fall inside a page, so an offset error shows at either end. */
#define WIN_HEAD	123
#define WIN_TAIL	77
#define OLD_SEED_XOR	0x5a5a5a5au	/* seed of the bytes before the write */
#define MAPS_TEXT	512		/* a maps line as messages quote it */

struct opts {
	unsigned long cycles;	/* lost-writes */
	unsigned int writers;	/* lost-writes */
	unsigned long iters;	/* calloc-churn */
	const char *allocator;	/* calloc-churn: the allocator that must be in use */
	uint32_t seed;
	bool no_fork_init;	/* fork-safe: RDMAV_FORK_SAFE asks for it, not a call */
	uint16_t port;		/* in-place cases and writer: TCP port of the exchange */
	const char *peer;	/* writer: the target's address */
	const char *name;	/* posix-shm, shm-read: the segment's name */
	const char *path;	/* file, hugetlbfs: the file to create */
	size_t size;		/* in-place cases: region size (0: the case's own) */
	bool hugetlb;		/* sysv: SHM_HUGETLB */
	unsigned int timeout_s;
};

struct mem_case {
	const char *name;
	void (*run)(const struct opts *o);
	const char *help;
};

/* Set once in main (the case's name, the page size) and in a forked child (which must
 * _exit). */
static const char *case_name = "verbs_memory";
static bool in_child;
static size_t page;
/* How far a long case got (registrations, churn steps): the watchdog's message says it. */
static volatile sig_atomic_t steps_done;

/* ---- Messages, watchdog, patterns ---- */

static void __attribute__((noreturn, format(printf, 2, 3)))
quit(int status, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	va_start(ap, fmt);
	fprintf(stderr, "verbs_memory %s: %s", case_name, status == EXIT_SKIP ? "SKIP: " :
		status != 0 ? "FAIL: " : "");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	/* A child shares libdroce's state with its parent: no atexit handler may run there. */
	if (in_child)
		_exit(status);
	exit(status);
}

#define fail(...) quit(EXIT_FAIL, __VA_ARGS__)

static void __attribute__((format(printf, 1, 2)))
say(const char *fmt, ...)
{
	va_list ap;

	printf("verbs_memory %s: ", case_name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static void
on_alarm(int sig)
{
	static const char who[] = "verbs_memory ";
	static const char msg[] = ": FAIL: timeout (hang): the case did not end within "
				  "--timeout; steps done: ";
	char num[24];
	size_t i = sizeof(num);
	unsigned long n = (unsigned long)steps_done;

	(void)sig;
	/* Only async-signal-safe calls here: the number formatted by hand. */
	num[--i] = '\n';
	do {
		num[--i] = (char)('0' + n % 10);
		n /= 10;
	} while (n != 0);
	if (write(STDERR_FILENO, who, sizeof(who) - 1) < 0 ||
	    write(STDERR_FILENO, case_name, strlen(case_name)) < 0 ||
	    write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0 ||
	    write(STDERR_FILENO, num + i, sizeof(num) - i) < 0)
		_exit(EXIT_FAIL);
	_exit(EXIT_FAIL);
}

/* A hang becomes a failure with a message (the harness's timeout only kills). */
static void
watchdog(unsigned int seconds)
{
	signal(SIGALRM, on_alarm);
	alarm(seconds);
}

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Byte off of a region filled from seed: never 0, so zeroed memory never passes for it. */
static inline uint8_t
pattern(uint32_t seed, uint64_t off)
{
	uint64_t x = (off + 1) * 0x9E3779B97F4A7C15ull ^ (seed + 1ull) * 0xC2B2AE3D27D4EB4Full;

	x ^= x >> 29;
	x *= 0xBF58476D1CE4E5B9ull;
	x ^= x >> 32;
	return (uint8_t)(x % 255 + 1);
}

static void
pattern_fill(uint8_t *buf, size_t len, uint32_t seed, uint64_t base)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = pattern(seed, base + i);
}

/* Offset of the first byte that is not pattern(seed, base + i), or len. */
static size_t
pattern_diff(const uint8_t *buf, size_t len, uint32_t seed, uint64_t base)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (buf[i] != pattern(seed, base + i))
			return i;
	return len;
}

/* Offset of the first byte that is not c, or len. */
static size_t
byte_diff(const uint8_t *buf, size_t len, uint8_t c)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (buf[i] != c)
			return i;
	return len;
}

static uint64_t
xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A uniform draw in [lo, hi]. */
static uint64_t
draw(uint64_t *s, uint64_t lo, uint64_t hi)
{
	return lo + xorshift(s) % (hi - lo + 1);
}

/* ---- /proc/self/maps ---- */

struct map_line {
	uintptr_t lo, hi;
	char perms[5];
	uint64_t off;
	unsigned int major, minor;
	uint64_t inode;
	char path[256];
};

/* The line of /proc/self/maps that holds addr; false when none does. */
static bool
maps_find(uintptr_t addr, struct map_line *m)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char *line = NULL;
	size_t cap = 0;
	bool found = false;

	if (f == NULL)
		fail("/proc/self/maps: %s", strerror(errno));
	while (!found && getline(&line, &cap, f) > 0) {
		unsigned long lo, hi;
		int n = 0;

		memset(m, 0, sizeof(*m));
		if (sscanf(line, "%lx-%lx %4s %" SCNx64 " %x:%x %" SCNu64 " %n", &lo, &hi,
			   m->perms, &m->off, &m->major, &m->minor, &m->inode, &n) < 7)
			continue;
		if (addr < lo || addr >= hi)
			continue;
		m->lo = lo;
		m->hi = hi;
		snprintf(m->path, sizeof(m->path), "%s", line + n);
		m->path[strcspn(m->path, "\n")] = '\0';
		found = true;
	}
	free(line);
	fclose(f);
	return found;
}

static void
maps_describe(const struct map_line *m, char *out, size_t len)
{
	snprintf(out, len, "%" PRIxPTR "-%" PRIxPTR " %s %" PRIx64 " %02x:%02x %" PRIu64 " %s",
		 m->lo, m->hi, m->perms, m->off, m->major, m->minor, m->inode, m->path);
}

/* Every page of [buf, buf + len) is private anonymous memory ('p', no file). */
static void
expect_private_anon(const uint8_t *buf, size_t len, const char *when)
{
	uintptr_t a = (uintptr_t)buf, end = (uintptr_t)buf + len;
	struct map_line m;
	char d[MAPS_TEXT];

	while (a < end) {
		if (!maps_find(a, &m))
			fail("%s: nothing mapped at %#" PRIxPTR, when, a);
		maps_describe(&m, d, sizeof(d));
		if (m.perms[3] != 'p' || m.inode != 0 || m.major != 0 || m.minor != 0)
			fail("%s: %#" PRIxPTR " is not private anonymous memory: %s", when, a, d);
		a = m.hi;
	}
}

/* ---- Verbs set-up: one device, its PD and CQ; RC QPs; WRITEs ---- */

struct dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	union ibv_gid gid;
};

static void
dev_open(struct dev *d)
{
	struct ibv_device **list;
	int n;

	memset(d, 0, sizeof(*d));
	list = ibv_get_device_list(&n);
	if (list == NULL || n == 0)
		fail("no verbs device (is droced running, DROCE_SOCKET set?)");
	d->ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (d->ctx == NULL)
		fail("ibv_open_device: %s", strerror(errno));
	d->pd = ibv_alloc_pd(d->ctx);
	if (d->pd == NULL)
		fail("ibv_alloc_pd: %s", strerror(errno));
	d->cq = ibv_create_cq(d->ctx, 2 * QP_DEPTH, NULL, NULL, 0);
	if (d->cq == NULL)
		fail("ibv_create_cq: %s", strerror(errno));
	if (ibv_query_gid(d->ctx, 1, 0, &d->gid) != 0)
		fail("ibv_query_gid: %s", strerror(errno));
}

static void
dev_close(struct dev *d)
{
	if (ibv_destroy_cq(d->cq) != 0)
		fail("ibv_destroy_cq failed");
	if (ibv_dealloc_pd(d->pd) != 0)
		fail("ibv_dealloc_pd failed");
	if (ibv_close_device(d->ctx) != 0)
		fail("ibv_close_device failed");
}

static struct ibv_mr *
mr_reg(struct ibv_pd *pd, void *addr, size_t len, int access, const char *what)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, addr, len, access);

	if (mr == NULL)
		fail("ibv_reg_mr(%s, %p, %zu): %s", what, addr, len, strerror(errno));
	if (mr->addr != addr || mr->length != len)
		fail("ibv_reg_mr(%s): the MR says %p+%zu, asked %p+%zu", what, mr->addr,
		     mr->length, addr, len);
	return mr;
}

static void
mr_dereg(struct ibv_mr *mr, const char *what)
{
	int ret = ibv_dereg_mr(mr);

	if (ret != 0)
		fail("ibv_dereg_mr(%s): %s", what, strerror(ret));
}

static struct ibv_qp *
qp_create(const struct dev *d)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = d->cq, .recv_cq = d->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = QP_DEPTH, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(d->pd, &ia);

	if (qp == NULL)
		fail("ibv_create_qp: %s", strerror(errno));
	return qp;
}

/* RESET -> INIT -> RTR -> RTS towards QP dqpn at dgid; both directions start at PSN 0. */
static void
qp_connect(struct ibv_qp *qp, uint32_t dqpn, const union ibv_gid *dgid)
{
	struct ibv_qp_attr a;
	int ret;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			    IBV_QP_ACCESS_FLAGS);
	if (ret != 0)
		fail("modify QP to INIT: %s", strerror(ret));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.min_rnr_timer = QP_MIN_RNR;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *dgid;
	a.ah_attr.grh.hop_limit = QP_HOP_LIMIT;
	a.ah_attr.port_num = 1;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			    IBV_QP_MIN_RNR_TIMER);
	if (ret != 0)
		fail("modify QP to RTR: %s", strerror(ret));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = QP_ACK_TIMEOUT;
	a.retry_cnt = QP_RETRIES;
	a.rnr_retry = QP_RETRIES;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			    IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	if (ret != 0)
		fail("modify QP to RTS: %s", strerror(ret));
}

/*
 * RDMA WRITEs of lmr's [laddr, laddr + len) to raddr under rkey, in chunks of WRITE_CHUNK
 * (several WRs in flight), each completion waited for and checked.
 */
static void
rdma_write(const struct dev *d, struct ibv_qp *qp, const struct ibv_mr *lmr, uint64_t laddr,
	   uint64_t len, uint64_t raddr, uint32_t rkey)
{
	uint64_t posted = 0, done = 0, deadline = now_ms() + WC_WAIT_MS;
	unsigned int outstanding = 0;
	struct timespec nap = { .tv_nsec = POLL_SLEEP_NS };

	while (done < len) {
		struct ibv_wc wc;
		int n;

		while (posted < len && outstanding < QP_DEPTH) {
			uint32_t chunk = len - posted > WRITE_CHUNK ? WRITE_CHUNK :
					 (uint32_t)(len - posted);
			struct ibv_sge sge = { .addr = laddr + posted, .length = chunk,
					       .lkey = lmr->lkey };
			struct ibv_send_wr wr = {
				.wr_id = chunk, .sg_list = &sge, .num_sge = 1,
				.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
				.wr.rdma = { .remote_addr = raddr + posted, .rkey = rkey },
			}, *bad;
			int ret = ibv_post_send(qp, &wr, &bad);

			if (ret != 0)
				fail("ibv_post_send(RDMA WRITE): %s", strerror(ret));
			posted += chunk;
			outstanding++;
		}
		n = ibv_poll_cq(d->cq, 1, &wc);
		if (n < 0)
			fail("ibv_poll_cq failed");
		if (n == 0) {
			if (now_ms() > deadline)
				fail("no completion for an RDMA WRITE in %d ms (%" PRIu64 " of %"
				     PRIu64 " bytes done)", WC_WAIT_MS, done, len);
			nanosleep(&nap, NULL);
			continue;
		}
		if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RDMA_WRITE)
			fail("RDMA WRITE completed with %s (status %d, opcode %d)",
			     ibv_wc_status_str(wc.status), wc.status, wc.opcode);
		done += wc.wr_id;
		outstanding--;
		deadline = now_ms() + WC_WAIT_MS;
	}
}

/* ---- TCP: the in-place cases' exchange between the target and the writer ---- */

/* What each side tells the other (network order). The target fills the region fields. */
struct wire {
	uint32_t magic;
	uint32_t qpn;
	uint8_t gid[16];
	uint64_t addr;		/* the region's address */
	uint64_t len;		/* the region's length */
	uint64_t win_off;	/* the window to write: its offset in the region */
	uint64_t win_len;
	uint32_t rkey;
	uint32_t seed;
};

static void
io_wait(int fd, short events, uint64_t deadline, const char *what)
{
	struct pollfd p = { .fd = fd, .events = events };
	uint64_t t = now_ms();

	if (t >= deadline || poll(&p, 1, (int)(deadline - t)) != 1)
		fail("timeout (hang) waiting for %s", what);
}

static void
send_all(int fd, const void *buf, size_t len, const char *what)
{
	const uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n <= 0)
			fail("sending %s: %s", what, n < 0 ? strerror(errno) : "closed");
		p += n;
		len -= (size_t)n;
	}
}

static void
recv_all(int fd, void *buf, size_t len, unsigned int timeout_s, const char *what)
{
	uint64_t deadline = now_ms() + (uint64_t)timeout_s * 1000;
	uint8_t *p = buf;

	while (len > 0) {
		ssize_t n;

		io_wait(fd, POLLIN, deadline, what);
		n = recv(fd, p, len, 0);
		if (n <= 0)
			fail("receiving %s: %s", what, n < 0 ? strerror(errno) :
			     "the peer closed the connection");
		p += n;
		len -= (size_t)n;
	}
}

static int
tcp_accept(uint16_t port, unsigned int timeout_s)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1, ls, s;

	ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ls < 0)
		fail("socket: %s", strerror(errno));
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(ls, 1) < 0)
		fail("listen on 127.0.0.1:%u: %s", port, strerror(errno));
	say("listening on 127.0.0.1:%u", port);
	io_wait(ls, POLLIN, now_ms() + (uint64_t)timeout_s * 1000, "the writer to connect");
	s = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
	if (s < 0)
		fail("accept: %s", strerror(errno));
	close(ls);
	return s;
}

static int
tcp_connect(const char *ip, uint16_t port, unsigned int timeout_s)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	uint64_t deadline = now_ms() + (uint64_t)timeout_s * 1000;

	if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1)
		quit(EXIT_USAGE, "--peer %s: not an IPv4 address", ip);
	/* The target may not listen yet: retry until the timeout. */
	while (now_ms() < deadline) {
		int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (s < 0)
			fail("socket: %s", strerror(errno));
		if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return s;
		close(s);
		usleep(CONNECT_RETRY_US);
	}
	fail("cannot connect to %s:%u in %u s", ip, port, timeout_s);
}

static void
wire_send(int s, const struct wire *w)
{
	struct wire n = *w;

	n.magic = htonl(WIRE_MAGIC);
	n.qpn = htonl(w->qpn);
	n.addr = htobe64(w->addr);
	n.len = htobe64(w->len);
	n.win_off = htobe64(w->win_off);
	n.win_len = htobe64(w->win_len);
	n.rkey = htonl(w->rkey);
	n.seed = htonl(w->seed);
	send_all(s, &n, sizeof(n), "the QP and region information");
}

static void
wire_recv(int s, struct wire *w, unsigned int timeout_s)
{
	recv_all(s, w, sizeof(*w), timeout_s, "the peer's QP and region information");
	if (ntohl(w->magic) != WIRE_MAGIC)
		fail("the peer is not verbs_memory (magic %#x)", ntohl(w->magic));
	w->qpn = ntohl(w->qpn);
	w->addr = be64toh(w->addr);
	w->len = be64toh(w->len);
	w->win_off = be64toh(w->win_off);
	w->win_len = be64toh(w->win_len);
	w->rkey = ntohl(w->rkey);
	w->seed = ntohl(w->seed);
}

static void
msg_send(int s, char c)
{
	send_all(s, &c, 1, "a message");
}

static char
msg_recv(int s, unsigned int timeout_s, const char *what)
{
	char c;

	recv_all(s, &c, 1, timeout_s, what);
	return c;
}

/* ---- In-place regions: the target side, shared by posix-shm, file, hugetlbfs, sysv ---- */

/* A shared file mapping to register in place, and what /proc/self/maps said of it. */
struct region {
	const char *what;	/* for messages */
	uint8_t *buf;
	size_t len;
	int fd;			/* -1: none (SysV) */
	uint64_t inode;		/* expected in maps: the file's, or the SysV shmid */
	struct map_line before;
};

/* The bytes the writer writes: all but the first page and WIN_HEAD, and the last page
 * and WIN_TAIL, so both ends of the window sit inside a page. */
static void
window(size_t len, uint64_t *off, uint64_t *wlen)
{
	*off = page + WIN_HEAD;
	*wlen = len - *off - page - WIN_TAIL;
}

static uint8_t
expected(uint32_t seed, size_t len, uint64_t o)
{
	uint64_t off, wlen;

	window(len, &off, &wlen);
	if (o >= off && o < off + wlen)
		return pattern(seed, o);
	return pattern(seed ^ OLD_SEED_XOR, o);
}

/* The whole region after the write: the window written, the rest as before. */
static void
region_check(const uint8_t *buf, size_t len, uint32_t seed, const char *how)
{
	uint64_t off, wlen, o;

	window(len, &off, &wlen);
	for (o = 0; o < len; o++)
		if (buf[o] != expected(seed, len, o))
			fail("%s: byte %" PRIu64 " is 0x%02x, want 0x%02x (%s; the window "
			     "written is [%" PRIu64 ", %" PRIu64 "))", how, o, buf[o],
			     expected(seed, len, o), o >= off && o < off + wlen ?
			     "not written by the peer" : "written outside the window", off,
			     off + wlen);
}

static void
map_line_of(const struct region *r, struct map_line *m, const char *when)
{
	char d[MAPS_TEXT];

	if (!maps_find((uintptr_t)r->buf, m))
		fail("%s: %s at %p is not in /proc/self/maps", when, r->what, (void *)r->buf);
	maps_describe(m, d, sizeof(d));
	if (m->hi < (uintptr_t)r->buf + r->len)
		fail("%s: %s is not one mapping: %s", when, r->what, d);
	if (m->perms[3] != 's' || m->inode != r->inode)
		fail("%s: %s is not a shared mapping of inode %" PRIu64 ": %s", when, r->what,
		     r->inode, d);
}

/* What the region is before registration: the file it maps, filled with the old bytes. */
static void
region_prepare(struct region *r, uint32_t seed)
{
	struct stat st;
	char d[MAPS_TEXT];

	memset(&st, 0, sizeof(st));
	if (r->fd >= 0) {
		if (fstat(r->fd, &st) != 0)
			fail("fstat(%s): %s", r->what, strerror(errno));
		r->inode = st.st_ino;
	}
	map_line_of(r, &r->before, "before ibv_reg_mr");
	maps_describe(&r->before, d, sizeof(d));
	if (r->fd >= 0 && (r->before.major != major(st.st_dev) ||
			   r->before.minor != minor(st.st_dev)))
		fail("%s: maps names device %02x:%02x, fstat %02x:%02x: %s", r->what,
		     r->before.major, r->before.minor, major(st.st_dev), minor(st.st_dev), d);
	pattern_fill(r->buf, r->len, seed ^ OLD_SEED_XOR, 0);
	say("%s: %zu bytes at %p: %s", r->what, r->len, (void *)r->buf, d);
}

/* The file mapped at the region is still the one mapped there before registration. */
static void
region_same_file(const struct region *r, const char *when)
{
	struct map_line m;
	char was[MAPS_TEXT], now[MAPS_TEXT];

	map_line_of(r, &m, when);
	maps_describe(&r->before, was, sizeof(was));
	maps_describe(&m, now, sizeof(now));
	if (m.major != r->before.major || m.minor != r->before.minor ||
	    m.inode != r->before.inode || m.off - (m.lo - r->before.lo) != r->before.off ||
	    strcmp(m.perms, r->before.perms) != 0)
		fail("%s: the mapping of %s changed: was %s, now %s", when, r->what, was, now);
}

/* Registration in place changes nothing: the address, the bytes, the file mapped there. */
static void
region_unchanged(const struct region *r, uint32_t seed)
{
	size_t bad;

	region_same_file(r, "after ibv_reg_mr");
	bad = pattern_diff(r->buf, r->len, seed ^ OLD_SEED_XOR, 0);
	if (bad != r->len)
		fail("ibv_reg_mr changed the contents of %s: byte %zu is 0x%02x, was 0x%02x",
		     r->what, bad, r->buf[bad], pattern(seed ^ OLD_SEED_XOR, bad));
}

/* The file's bytes as read(2) sees them: what the peer wrote is in the file. */
static void
region_pread_check(const struct region *r, uint32_t seed)
{
	uint8_t *copy = malloc(r->len);
	ssize_t n;

	if (copy == NULL)
		fail("out of memory");
	n = pread(r->fd, copy, r->len, 0);
	if (n != (ssize_t)r->len)
		fail("pread(%s): %zd of %zu bytes (%s)", r->what, n, r->len,
		     n < 0 ? strerror(errno) : "short");
	region_check(copy, r->len, seed, "pread() of the file");
	free(copy);
}

/*
 * The target's whole part: the region checked, registered for REMOTE_WRITE and checked
 * unchanged, a QP towards the writer, the writer's WRITEs awaited, the bytes checked
 * through the mapping (and pread for a file), the writer told, the MR deregistered.
 */
static void
target_serve(struct region *r, const struct opts *o)
{
	struct wire mine, peer;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct dev d;
	int s;

	region_prepare(r, o->seed);
	dev_open(&d);
	mr = mr_reg(d.pd, r->buf, r->len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
		    r->what);
	region_unchanged(r, o->seed);
	say("%s registered in place: same address, bytes and file", r->what);
	qp = qp_create(&d);
	s = tcp_accept(o->port, o->timeout_s);
	memset(&mine, 0, sizeof(mine));
	mine.qpn = qp->qp_num;
	memcpy(mine.gid, d.gid.raw, sizeof(mine.gid));
	mine.addr = (uintptr_t)r->buf;
	mine.len = r->len;
	window(r->len, &mine.win_off, &mine.win_len);
	mine.rkey = mr->rkey;
	mine.seed = o->seed;
	wire_send(s, &mine);
	wire_recv(s, &peer, o->timeout_s);
	qp_connect(qp, peer.qpn, (const union ibv_gid *)peer.gid);
	msg_send(s, MSG_READY);
	if (msg_recv(s, o->timeout_s, "the writer's end of its WRITEs") != MSG_DONE)
		fail("the writer sent something else than its end");
	region_check(r->buf, r->len, o->seed, "the registered mapping");
	if (r->fd >= 0)
		region_pread_check(r, o->seed);
	msg_send(s, MSG_GOOD);
	say("the peer's %" PRIu64 " bytes are in %s", mine.win_len, r->what);
	close(s);
	if (ibv_destroy_qp(qp) != 0)
		fail("ibv_destroy_qp failed");
	mr_dereg(mr, r->what);
	dev_close(&d);
	/* Deregistration changes nothing either: the file is still mapped there. */
	region_same_file(r, "after ibv_dereg_mr");
	region_check(r->buf, r->len, o->seed, "the mapping after ibv_dereg_mr");
}

/* The huge page size of the default pool (/proc/meminfo Hugepagesize), 0 when none. */
static size_t
huge_page_size(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	char line[128];
	size_t kb = 0;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "Hugepagesize: %zu kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

static size_t
region_size(const struct opts *o, size_t dflt)
{
	size_t len = o->size != 0 ? o->size : dflt;

	if (len < 4 * page || len % page != 0)
		quit(EXIT_USAGE, "--size %zu: at least 4 pages, whole pages", len);
	return len;
}

static void
need(const char *value, const char *option)
{
	if (value == NULL)
		quit(EXIT_USAGE, "%s is required (--help)", option);
}

/* Case 5: a POSIX shared memory segment, left for shm-read (which removes it). */
static void
case_posix_shm(const struct opts *o)
{
	struct region r = { .what = "the POSIX shm segment" };

	need(o->name, "--name");
	r.len = region_size(o, DEFAULT_INPLACE);
	r.fd = shm_open(o->name, O_CREAT | O_EXCL | O_RDWR, 0600);
	if (r.fd < 0)
		fail("shm_open(%s): %s", o->name, strerror(errno));
	if (ftruncate(r.fd, (off_t)r.len) != 0)
		fail("ftruncate(%s): %s", o->name, strerror(errno));
	r.buf = mmap(NULL, r.len, PROT_READ | PROT_WRITE, MAP_SHARED, r.fd, 0);
	if (r.buf == MAP_FAILED)
		fail("mmap(%s): %s", o->name, strerror(errno));
	target_serve(&r, o);
	munmap(r.buf, r.len);
	close(r.fd);
	say("OK: %s registered in place, written by the peer; left for shm-read", o->name);
}

/* Case 5's third process: the segment mapped by name shows the peer's bytes. */
static void
case_shm_read(const struct opts *o)
{
	struct stat st;
	uint8_t *buf;
	int fd;

	need(o->name, "--name");
	fd = shm_open(o->name, O_RDONLY, 0);
	if (fd < 0)
		fail("shm_open(%s): %s", o->name, strerror(errno));
	if (fstat(fd, &st) != 0 || st.st_size < (off_t)(4 * page))
		fail("%s: no segment of at least 4 pages", o->name);
	buf = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (buf == MAP_FAILED)
		fail("mmap(%s): %s", o->name, strerror(errno));
	region_check(buf, (size_t)st.st_size, o->seed, "another process's mapping of the segment");
	munmap(buf, (size_t)st.st_size);
	close(fd);
	if (shm_unlink(o->name) != 0)
		fail("shm_unlink(%s): %s", o->name, strerror(errno));
	say("OK: %s mapped by name in another process holds the peer's bytes", o->name);
}

/* A new file at path for a region, and the file system it is on. */
static int
region_file(const char *path, struct statfs *fs)
{
	int fd = open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);

	if (fd < 0)
		fail("open(%s): %s", path, strerror(errno));
	if (fstatfs(fd, fs) != 0)
		fail("fstatfs(%s): %s", path, strerror(errno));
	return fd;
}

static void
region_file_done(struct region *r, const char *path)
{
	munmap(r->buf, r->len);
	close(r->fd);
	if (unlink(path) != 0)
		fail("unlink(%s): %s", path, strerror(errno));
}

/* Case 6: a regular file on a disk file system, read back with pread(). */
static void
case_file(const struct opts *o)
{
	struct region r = { .what = "the file mapping" };
	struct statfs fs;

	need(o->path, "--path");
	r.len = region_size(o, DEFAULT_INPLACE);
	r.fd = region_file(o->path, &fs);
	/* tmpfs and ramfs files are shmem, as POSIX shm is: this case is about the page cache
	 * of a disk file system. */
	if (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC) {
		unlink(o->path);
		quit(EXIT_SKIP, "%s is on tmpfs or ramfs, not a disk file system", o->path);
	}
	if (ftruncate(r.fd, (off_t)r.len) != 0)
		fail("ftruncate(%s): %s", o->path, strerror(errno));
	r.buf = mmap(NULL, r.len, PROT_READ | PROT_WRITE, MAP_SHARED, r.fd, 0);
	if (r.buf == MAP_FAILED)
		fail("mmap(%s): %s", o->path, strerror(errno));
	say("%s: file system type %#lx", o->path, (unsigned long)fs.f_type);
	target_serve(&r, o);
	region_file_done(&r, o->path);
	say("OK: %s registered in place, written by the peer, read back with pread()", o->path);
}

/* Case 7: a hugetlbfs file, mapped as DPDK maps its memory. */
static void
case_hugetlbfs(const struct opts *o)
{
	struct region r = { .what = "the hugetlbfs file mapping" };
	struct statfs fs;

	need(o->path, "--path");
	r.fd = region_file(o->path, &fs);
	if (fs.f_type != HUGETLBFS_MAGIC) {
		unlink(o->path);
		quit(EXIT_USAGE, "%s is not on hugetlbfs", o->path);
	}
	/* hugetlbfs gives its page size as the block size: one huge page by default. */
	r.len = region_size(o, (size_t)fs.f_bsize);
	if (ftruncate(r.fd, (off_t)r.len) != 0)
		fail("ftruncate(%s): %s", o->path, strerror(errno));
	r.buf = mmap(NULL, r.len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r.fd, 0);
	if (r.buf == MAP_FAILED) {
		int err = errno;

		unlink(o->path);
		if (err == ENOMEM)
			quit(EXIT_SKIP, "no free huge page for %zu bytes of %s", r.len, o->path);
		fail("mmap(%s): %s", o->path, strerror(err));
	}
	say("%s: huge pages of %ld KiB", o->path, (long)fs.f_bsize / 1024);
	target_serve(&r, o);
	region_file_done(&r, o->path);
	say("OK: %s registered in place, written by the peer, read back with pread()", o->path);
}

/* Case 8: a SysV segment, marked for removal as soon as it is attached (as UCX does). */
static void
case_sysv(const struct opts *o)
{
	struct region r = { .what = "the SysV segment", .fd = -1 };
	size_t hp = huge_page_size();
	struct map_line m;
	int id, err;

	if (o->hugetlb && hp == 0)
		quit(EXIT_SKIP, "no huge page size in /proc/meminfo");
	r.len = region_size(o, o->hugetlb ? hp : DEFAULT_INPLACE);
	id = shmget(IPC_PRIVATE, r.len, IPC_CREAT | 0600 | (o->hugetlb ? SHM_HUGETLB : 0));
	if (id < 0) {
		if (o->hugetlb && errno == ENOMEM)
			quit(EXIT_SKIP, "no free huge page for a SHM_HUGETLB segment");
		fail("shmget(%zu%s): %s", r.len, o->hugetlb ? ", SHM_HUGETLB" : "", strerror(errno));
	}
	/* test_memory.py removes the segment by these should this process die before
	 * IPC_RMID. */
	say("shmid %d pid %d", id, (int)getpid());
	r.buf = shmat(id, NULL, 0);
	err = errno;
	if (shmctl(id, IPC_RMID, NULL) != 0)
		fail("shmctl(%d, IPC_RMID): %s", id, strerror(errno));
	if (r.buf == (void *)-1)
		fail("shmat(%d): %s", id, strerror(err));
	/* The kernel numbers a segment's inode by its id: maps shows it. */
	r.inode = (uint64_t)id;
	target_serve(&r, o);
	if (shmdt(r.buf) != 0)
		fail("shmdt(%p) after ibv_dereg_mr: %s (the segment is no longer attached there)",
		     (void *)r.buf, strerror(errno));
	if (maps_find((uintptr_t)r.buf, &m) && m.inode == (uint64_t)id)
		fail("shmdt() returned 0 but the segment is still mapped at %p", (void *)r.buf);
	say("OK: SysV segment %d%s registered in place, written by the peer, shmdt() after",
	    id, o->hugetlb ? " (SHM_HUGETLB)" : "");
}

/* The peer of cases 5-8: RDMA-WRITEs the window the target names, from its own memory. */
static void
case_writer(const struct opts *o)
{
	struct wire mine, peer;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	struct dev d;
	uint8_t *src;
	int s;

	dev_open(&d);
	qp = qp_create(&d);
	s = tcp_connect(o->peer, o->port, o->timeout_s);
	memset(&mine, 0, sizeof(mine));
	mine.qpn = qp->qp_num;
	memcpy(mine.gid, d.gid.raw, sizeof(mine.gid));
	wire_send(s, &mine);
	wire_recv(s, &peer, o->timeout_s);
	if (peer.win_len == 0 || peer.win_off + peer.win_len > peer.len)
		fail("the target names a window [%" PRIu64 ", +%" PRIu64 ") outside its %" PRIu64
		     " bytes", peer.win_off, peer.win_len, peer.len);
	src = malloc(peer.win_len);
	if (src == NULL)
		fail("out of memory");
	pattern_fill(src, peer.win_len, peer.seed, peer.win_off);
	mr = mr_reg(d.pd, src, peer.win_len, IBV_ACCESS_LOCAL_WRITE, "the writer's source");
	qp_connect(qp, peer.qpn, (const union ibv_gid *)peer.gid);
	if (msg_recv(s, o->timeout_s, "the target's QP to be ready") != MSG_READY)
		fail("the target sent something else than ready");
	rdma_write(&d, qp, mr, (uintptr_t)src, peer.win_len, peer.addr + peer.win_off,
		   peer.rkey);
	msg_send(s, MSG_DONE);
	if (msg_recv(s, o->timeout_s, "the target's check of the data") != MSG_GOOD)
		fail("the target found the data wrong (see its output)");
	close(s);
	if (ibv_destroy_qp(qp) != 0)
		fail("ibv_destroy_qp failed");
	mr_dereg(mr, "the writer's source");
	free(src);
	dev_close(&d);
	say("OK: wrote %" PRIu64 " bytes at %#" PRIx64 " (rkey %#x); the target checked them",
	    peer.win_len, peer.addr + peer.win_off, peer.rkey);
}

/* ---- Case 1: lost-writes ---- */

struct lw_writer {
	pthread_t thread;
	uint8_t *region;
	unsigned int idx;
	atomic_bool *stop;
	atomic_uint *started;
	uint64_t rounds;	/* the writer's own count (no registered page), set at its end */
};

/*
 * Writer w's two words on page p: one in the last bytes of the page, which shares the
 * page with the one-page buffers (its first half) without being inside them, one three
 * quarters in, inside every range that covers the page whole.
 */
static volatile uint64_t *
lw_word(uint8_t *region, size_t p, unsigned int w, bool end)
{
	size_t off = end ? page - sizeof(uint64_t) * (w + 1) : page * 3 / 4 + sizeof(uint64_t) * w;

	return (volatile uint64_t *)(region + p * page + off);
}

static void *
lw_write(void *arg)
{
	struct lw_writer *w = arg;
	uint64_t rounds = 0;
	size_t p;

	/*
	 * Below the registering thread and droced: spinning writers would otherwise starve
	 * the registrations they race with on a small machine. They still run whenever a CPU
	 * is free (while a range is copied or droced answers, the other CPU), and whoever
	 * runs, a page being moved is write-protected.
	 */
	if (setpriority(PRIO_PROCESS, (id_t)gettid(), LW_WRITER_NICE) != 0)
		fail("setpriority: %s", strerror(errno));
	atomic_fetch_add(w->started, 1);
	while (!atomic_load_explicit(w->stop, memory_order_relaxed)) {
		for (p = 0; p < LW_PAGES; p++) {
			(*lw_word(w->region, p, w->idx, true))++;
			(*lw_word(w->region, p, w->idx, false))++;
		}
		rounds++;
	}
	w->rounds = rounds;
	return NULL;
}

/* One registration's range, as an offset and length in the region. */
static void
lw_range(uint64_t *rng, size_t *lo, size_t *len)
{
	size_t half = page / 2, p = draw(rng, 0, LW_PAGES - 1), k;

	switch (xorshift(rng) % 4) {
	case 0:		/* one buffer: the first half of a page */
		*lo = p * page;
		*len = half;
		break;
	case 1:		/* a piece of one, at any offset */
		*lo = p * page + draw(rng, 0, half - 1);
		*len = draw(rng, 1, p * page + half - *lo);
		break;
	case 2:		/* from inside one page to inside a later one: whole pages between */
		k = draw(rng, 1, LW_SPAN_MAX - 1);
		p = p + k < LW_PAGES ? p : LW_PAGES - 1 - k;
		*lo = p * page + draw(rng, 0, half - 1);
		*len = (p + k) * page + draw(rng, 1, half) - *lo;
		break;
	default:	/* whole pages */
		k = draw(rng, 1, LW_SPAN_MAX / 2);
		p = p + k <= LW_PAGES ? p : LW_PAGES - k;
		*lo = p * page;
		*len = k * page;
		break;
	}
}

/* The buffer bytes (each page's first half) in [lo, lo + len) still hold their pattern. */
static void
lw_buffers_check(const uint8_t *region, size_t lo, size_t len, uint32_t seed,
		 unsigned long cycle, const char *when)
{
	size_t p, half = page / 2;

	for (p = lo / page; p * page < lo + len; p++) {
		size_t a = p * page > lo ? p * page : lo;
		size_t b = p * page + half < lo + len ? p * page + half : lo + len;
		size_t bad;

		if (a >= b)
			continue;
		bad = pattern_diff(region + a, b - a, seed, a);
		if (bad != b - a)
			fail("cycle %lu, %s: buffer byte at region offset %zu is 0x%02x, want "
			     "0x%02x", cycle, when, a + bad, region[a + bad],
			     pattern(seed, a + bad));
	}
}

/* Every writer's words hold its own count; the first mismatch is printed. */
static void
lw_counts_check(uint8_t *region, const struct lw_writer *w, unsigned int nb)
{
	unsigned long lost_words = 0;
	unsigned int i;
	size_t p;
	int e;

	for (i = 0; i < nb; i++)
		for (p = 0; p < LW_PAGES; p++)
			for (e = 0; e < 2; e++) {
				volatile uint64_t *word = lw_word(region, p, i, e);

				if (*word == w[i].rounds || lost_words++ != 0)
					continue;
				fprintf(stderr, "verbs_memory %s: first mismatch: writer %u's "
					"word at page %zu offset %zu (%s) is %" PRIu64 ", its own "
					"count %" PRIu64 " (%" PRId64 " increments lost)\n",
					case_name, i, p,
					(size_t)((uintptr_t)word - (uintptr_t)region - p * page),
					e ? "end of the page, beside the buffer" :
					"inside ranges of whole pages", *word, w[i].rounds,
					(int64_t)(w[i].rounds - *word));
			}
	if (lost_words != 0)
		fail("%lu of %u words lost increments: writes lost while their pages were "
		     "registered or deregistered (first mismatch above)", lost_words,
		     nb * 2 * LW_PAGES);
}

/*
 * One epoch of lost-writes: new pages (posix_memalign, as a program allocates a buffer),
 * writers on them while the main thread registers and deregisters n ranges over them,
 * then every count and buffer byte checked and the pages freed. Returns the fewest
 * rounds a writer made.
 */
static uint64_t
lw_epoch(const struct opts *o, struct ibv_pd *pd, uint64_t *rng, unsigned long first,
	 unsigned long n)
{
	static const int access[] = {
		IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
		IBV_ACCESS_REMOTE_READ,
	};
	struct lw_writer w[MAX_WRITERS];
	atomic_bool stop = false;
	atomic_uint started = 0;
	uint64_t min_rounds = UINT64_MAX;
	uint8_t *region;
	unsigned long c;
	unsigned int i;
	size_t p;
	int ret;

	/* Heap memory, as a program's buffers are (glibc serves this much from mmap). */
	ret = posix_memalign((void **)&region, page, LW_PAGES * page);
	if (ret != 0)
		fail("posix_memalign: %s", strerror(ret));
	memset(region, 0, LW_PAGES * page);
	for (p = 0; p < LW_PAGES; p++)
		pattern_fill(region + p * page, page / 2, o->seed, p * page);
	for (i = 0; i < o->writers; i++) {
		w[i] = (struct lw_writer){ .region = region, .idx = i, .stop = &stop,
					   .started = &started };
		ret = pthread_create(&w[i].thread, NULL, lw_write, &w[i]);
		if (ret != 0)
			fail("pthread_create: %s", strerror(ret));
	}
	while (atomic_load(&started) < o->writers)
		sched_yield();
	for (c = first; c < first + n; c++) {
		struct ibv_mr *mr;
		size_t lo, len;

		lw_range(rng, &lo, &len);
		mr = mr_reg(pd, region + lo, len, access[c % 3], "a buffer the writers share");
		lw_buffers_check(region, lo, len, o->seed, c, "after ibv_reg_mr");
		mr_dereg(mr, "a buffer the writers share");
		lw_buffers_check(region, lo, len, o->seed, c, "after ibv_dereg_mr");
		steps_done = (sig_atomic_t)(c + 1);
	}
	atomic_store(&stop, true);
	for (i = 0; i < o->writers; i++) {
		pthread_join(w[i].thread, NULL);
		if (w[i].rounds < min_rounds)
			min_rounds = w[i].rounds;
	}
	lw_buffers_check(region, 0, LW_PAGES * page, o->seed, c, "at the end of an epoch");
	lw_counts_check(region, w, o->writers);
	free(region);
	return min_rounds;
}

static void
case_lost_writes(const struct opts *o)
{
	uint64_t rng = o->seed * 0x9E3779B97F4A7C15ull + 1, t0 = now_ms(), rounds = 0;
	unsigned long c, n;
	struct dev d;

	dev_open(&d);
	/*
	 * Epochs of fresh pages: the first registration over a page is its first move, which
	 * then happens again and again, not only in the first few cycles.
	 */
	for (c = 0; c < o->cycles; c += n) {
		n = o->cycles - c < LW_EPOCH_CYCLES ? o->cycles - c : LW_EPOCH_CYCLES;
		rounds += lw_epoch(o, d.pd, &rng, c, n);
	}
	dev_close(&d);
	say("%lu registrations in %.1f s", o->cycles, (double)(now_ms() - t0) / 1000);
	say("OK: %u writers, at least %" PRIu64 " increments each on each of %d words on %d "
	    "pages (%lu epochs of fresh pages), none lost; the buffers unchanged", o->writers,
	    rounds, 2 * LW_PAGES, LW_PAGES, (o->cycles + LW_EPOCH_CYCLES - 1) / LW_EPOCH_CYCLES);
}

/* ---- Cases 2 and 3: fork ---- */

/* Two RC QPs of one device connected to each other (loopback through droced). */
struct loop {
	struct dev d;
	struct ibv_qp *a, *b;
};

static void
loop_open(struct loop *l)
{
	dev_open(&l->d);
	l->a = qp_create(&l->d);
	l->b = qp_create(&l->d);
	qp_connect(l->a, l->b->qp_num, &l->d.gid);
	qp_connect(l->b, l->a->qp_num, &l->d.gid);
}

static void
loop_close(struct loop *l)
{
	if (ibv_destroy_qp(l->a) != 0 || ibv_destroy_qp(l->b) != 0)
		fail("ibv_destroy_qp failed");
	dev_close(&l->d);
}

static const char *
fork_status_name(enum ibv_fork_status s)
{
	switch (s) {
	case IBV_FORK_DISABLED: return "IBV_FORK_DISABLED";
	case IBV_FORK_ENABLED: return "IBV_FORK_ENABLED";
	case IBV_FORK_UNNEEDED: return "IBV_FORK_UNNEEDED";
	default: return "(unknown)";
	}
}

/* In a forked child: droce opens again and registers memory of the child's own. */
static void
child_registers(uint32_t seed)
{
	struct ibv_mr *mr;
	struct dev d;
	uint8_t *b;

	dev_open(&d);
	b = malloc(CHILD_BUF);
	if (b == NULL)
		fail("child: out of memory");
	pattern_fill(b, CHILD_BUF, seed, 0);
	mr = mr_reg(d.pd, b, CHILD_BUF, IBV_ACCESS_LOCAL_WRITE, "the child's own buffer");
	if (pattern_diff(b, CHILD_BUF, seed, 0) != CHILD_BUF)
		fail("child: registering its own buffer changed it");
	mr_dereg(mr, "the child's own buffer");
	free(b);
	dev_close(&d);
}

static pid_t
fork_child(unsigned int timeout_s)
{
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		fail("fork: %s", strerror(errno));
	if (pid == 0) {
		in_child = true;
		/* fork() cleared the parent's alarm. */
		watchdog(timeout_s);
	}
	return pid;
}

static int
wait_child(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		fail("waitpid: %s", strerror(errno));
	return st;
}

/* fork: the child reads 'P', writes 'C' over it and registers memory of its own. */
static void __attribute__((noreturn))
fork_child_copy(uint8_t *buf, uint32_t seed)
{
	size_t bad = byte_diff(buf, FORK_BUF, 'P');

	if (bad != FORK_BUF)
		fail("child: reads 0x%02x at offset %zu of the registered buffer, want 'P'",
		     buf[bad], bad);
	memset(buf, 'C', FORK_BUF);
	child_registers(seed);
	_exit(0);
}

/* fork-safe: the child registers memory of its own, then must fault on the parent's. */
static void __attribute__((noreturn))
fork_child_none(uint8_t *buf, uint32_t seed)
{
	struct rlimit no_core = { 0, 0 };
	volatile uint8_t *v = buf;
	uint8_t c;

	child_registers(seed);
	/* The fault below is the expected end: no core file for it. */
	setrlimit(RLIMIT_CORE, &no_core);
	c = v[0];
	memset(buf, 'C', FORK_BUF);
	fail("child: read 0x%02x at %p and wrote 'C' over the parent's registered buffer "
	     "without a fault", c, (void *)buf);
}

static void
fork_case(const struct opts *o, bool safe)
{
	enum ibv_fork_status want = safe ? IBV_FORK_ENABLED : IBV_FORK_UNNEEDED, got;
	bool env = getenv("RDMAV_FORK_SAFE") != NULL || getenv("IBV_FORK_SAFE") != NULL;
	struct ibv_mr *mr, *smr;
	uint8_t *buf, *src;
	struct loop l;
	size_t bad;
	pid_t pid;
	int st;

	if (!safe && env)
		quit(EXIT_USAGE, "fork runs without RDMAV_FORK_SAFE and IBV_FORK_SAFE (fork-safe "
		     "is the case with them)");
	if (safe && o->no_fork_init && !env)
		quit(EXIT_USAGE, "--no-fork-init: RDMAV_FORK_SAFE must be in the environment");
	if (safe && !o->no_fork_init) {
		int ret = ibv_fork_init();

		if (ret != 0)
			fail("ibv_fork_init: %s", strerror(ret));
	}
	got = ibv_is_fork_initialized();
	if (got != want)
		fail("ibv_is_fork_initialized() = %s, want %s (%s)", fork_status_name(got),
		     fork_status_name(want), !safe ? "no ibv_fork_init, no RDMAV_FORK_SAFE" :
		     o->no_fork_init ? "RDMAV_FORK_SAFE in the environment" :
		     "after ibv_fork_init()");
	loop_open(&l);
	/*
	 * fork-safe: whole pages, as rdma-core asks after ibv_fork_init(): the child goes
	 * without the registered pages, so they must hold nothing else it needs (malloc's
	 * chunk headers).
	 */
	if (safe) {
		if (posix_memalign((void **)&buf, page, FORK_BUF) != 0 ||
		    posix_memalign((void **)&src, page, FORK_BUF) != 0)
			fail("out of memory");
	} else {
		buf = malloc(FORK_BUF);
		src = malloc(FORK_BUF);
		if (buf == NULL || src == NULL)
			fail("out of memory");
	}
	memset(buf, 'P', FORK_BUF);
	pattern_fill(src, FORK_BUF, o->seed, 0);
	mr = mr_reg(l.d.pd, buf, FORK_BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
		    "the 'P' buffer");
	smr = mr_reg(l.d.pd, src, FORK_BUF, IBV_ACCESS_LOCAL_WRITE, "the WRITE's source");
	pid = fork_child(o->timeout_s);
	if (pid == 0 && safe)
		fork_child_none(buf, o->seed + 1);
	if (pid == 0)
		fork_child_copy(buf, o->seed + 1);
	st = wait_child(pid);
	if (safe && !(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV))
		fail("the child touching the registered range %s, want death by SIGSEGV",
		     WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : WEXITSTATUS(st) == 0 ?
		     "exited 0" : "exited with an error (its message above)");
	if (!safe && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
		fail("the child failed: %s", WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) :
		     "its message above");
	bad = byte_diff(buf, FORK_BUF, 'P');
	if (bad != FORK_BUF)
		fail("the parent reads 0x%02x ('%c') at offset %zu after the child's memset 'C': "
		     "the child wrote the parent's registered memory", buf[bad],
		     buf[bad] >= 0x20 && buf[bad] < 0x7f ? buf[bad] : '?', bad);
	say("the child %s; the parent still reads 'P'",
	    safe ? "registered memory of its own, then died of SIGSEGV touching the parent's "
	    "registered range" : "read 'P', wrote 'C' and registered memory of its own");
	/* The parent's MR survives the fork: an RDMA WRITE into it lands where it reads. */
	rdma_write(&l.d, l.a, smr, (uintptr_t)src, FORK_BUF, (uintptr_t)buf, mr->rkey);
	bad = pattern_diff(buf, FORK_BUF, o->seed, 0);
	if (bad != FORK_BUF)
		fail("after the fork, an RDMA WRITE into the parent's MR: offset %zu reads 0x%02x, "
		     "written 0x%02x", bad, buf[bad], pattern(o->seed, bad));
	if (ibv_is_fork_initialized() != want)
		fail("ibv_is_fork_initialized() changed after the fork");
	mr_dereg(smr, "the WRITE's source");
	mr_dereg(mr, "the 'P' buffer");
	free(src);
	free(buf);
	loop_close(&l);
	say("OK: %s; the MR took an RDMA WRITE after the fork", fork_status_name(want));
}

static void
case_fork(const struct opts *o)
{
	fork_case(o, false);
}

static void
case_fork_safe(const struct opts *o)
{
	fork_case(o, true);
}

/* ---- Case 3: dontneed ---- */

static void
case_dontneed(const struct opts *o)
{
	const size_t len = DONTNEED_BUF;
	size_t bad, nonzero = 0, i;
	struct ibv_mr *mr;
	struct dev d;
	uint8_t *buf;
	pid_t pid;
	int st;

	dev_open(&d);
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		fail("mmap: %s", strerror(errno));
	pattern_fill(buf, len, o->seed, 0);
	expect_private_anon(buf, len, "before ibv_reg_mr");
	mr = mr_reg(d.pd, buf, len, IBV_ACCESS_LOCAL_WRITE, "1 MiB of private anonymous memory");
	if (pattern_diff(buf, len, o->seed, 0) != len)
		fail("ibv_reg_mr changed the bytes");
	mr_dereg(mr, "1 MiB of private anonymous memory");
	bad = pattern_diff(buf, len, o->seed, 0);
	if (bad != len)
		fail("ibv_dereg_mr changed the bytes: offset %zu", bad);
	if (madvise(buf, len, MADV_DONTNEED) != 0)
		fail("madvise(MADV_DONTNEED): %s", strerror(errno));
	for (i = 0; i < len; i++)
		nonzero += buf[i] != 0;
	bad = byte_diff(buf, len, 0);
	if (bad != len)
		fail("after ibv_dereg_mr, MADV_DONTNEED left %zu of %zu bytes non-zero (first: "
		     "offset %zu = 0x%02x, the old byte): the range is not private anonymous "
		     "memory again", nonzero, len, bad, buf[bad]);
	expect_private_anon(buf, len, "after ibv_dereg_mr");
	/* And fork copies it, as any private memory. */
	pattern_fill(buf, len, o->seed + 1, 0);
	pid = fork_child(o->timeout_s);
	if (pid == 0) {
		if (pattern_diff(buf, len, o->seed + 1, 0) != len)
			fail("child: the deregistered range is not the parent's copy");
		memset(buf, 'C', len);
		_exit(0);
	}
	st = wait_child(pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail("the child failed (its message above)");
	bad = pattern_diff(buf, len, o->seed + 1, 0);
	if (bad != len)
		fail("the child's memset 'C' of the deregistered range shows in the parent: "
		     "offset %zu reads 0x%02x", bad, buf[bad]);
	munmap(buf, len);
	dev_close(&d);
	say("OK: after ibv_dereg_mr: MADV_DONTNEED zeros, private anonymous in maps, fork "
	    "copies");
}

/* ---- Case 4: calloc-churn ---- */

struct cc_block {
	uint8_t *p;
	size_t size;
	uint8_t fill;
	struct ibv_mr *mr;
	bool registered;	/* registered since it was allocated */
};

struct cc_stats {
	unsigned long callocs, mallocs, frees, regs, after_reg, reused;
	size_t biggest;
};

static size_t
cc_size(uint64_t *rng)
{
	uint64_t r = xorshift(rng) % 10;

	if (r < 5)
		return draw(rng, 1, CC_SMALL_MAX);
	if (r < 8)
		return draw(rng, CC_SMALL_MAX + 1, CC_MEDIUM_MAX);
	return draw(rng, CC_LARGE_MIN, CC_LARGE_MAX);
}

static void
cc_zero_check(const uint8_t *p, size_t size, unsigned long it, const char *when)
{
	size_t bad = byte_diff(p, size, 0);

	if (bad != size)
		fail("iteration %lu: calloc(%zu)%s = %p: byte %zu is 0x%02x, not zero", it, size,
		     when, (const void *)p, bad, p[bad]);
}

static void
cc_fill_check(const struct cc_block *b, unsigned long it, const char *when)
{
	size_t bad = byte_diff(b->p, b->size, b->fill);

	if (bad != b->size)
		fail("iteration %lu: %s changed a block of %zu bytes at %p: byte %zu is 0x%02x, "
		     "was 0x%02x", it, when, b->size, (void *)b->p, bad, b->p[bad], b->fill);
}

/* New non-zero bytes over the whole block: whatever the allocator gets back is dirty. */
static void
cc_dirty(struct cc_block *b, uint64_t *rng)
{
	b->fill = (uint8_t)draw(rng, 1, UINT8_MAX);
	memset(b->p, b->fill, b->size);
}

static void
cc_alloc(struct cc_block *b, uint64_t *rng, struct cc_stats *s, unsigned long it)
{
	b->size = cc_size(rng);
	if (xorshift(rng) % 3 != 0) {
		b->p = calloc(1, b->size);
		if (b->p == NULL)
			fail("calloc(%zu): out of memory", b->size);
		cc_zero_check(b->p, b->size, it, "");
		s->callocs++;
	} else {
		b->p = malloc(b->size);
		if (b->p == NULL)
			fail("malloc(%zu): out of memory", b->size);
		s->mallocs++;
	}
	b->registered = false;
	if (b->size > s->biggest)
		s->biggest = b->size;
	cc_dirty(b, rng);
}

/* Frees a block; one that was registered is replaced at once by a calloc of its size,
 * which the allocators most often serve from the same memory. */
static void
cc_free(struct cc_block *b, uint64_t *rng, struct cc_stats *s, unsigned long it)
{
	uintptr_t was = (uintptr_t)b->p;

	if (b->mr != NULL) {
		mr_dereg(b->mr, "a live allocation");
		b->mr = NULL;
		cc_fill_check(b, it, "ibv_dereg_mr");
	}
	free(b->p);
	s->frees++;
	if (!b->registered) {
		b->p = NULL;
		return;
	}
	b->p = calloc(1, b->size);
	if (b->p == NULL)
		fail("calloc(%zu): out of memory", b->size);
	cc_zero_check(b->p, b->size, it, " after the free of a deregistered block");
	s->callocs++;
	s->after_reg++;
	s->reused += (uintptr_t)b->p == was;
	b->registered = false;
	cc_dirty(b, rng);
}

static void
cc_reg_toggle(struct cc_block *b, struct ibv_pd *pd, struct cc_stats *s, unsigned long it)
{
	if (b->mr == NULL) {
		b->mr = mr_reg(pd, b->p, b->size, IBV_ACCESS_LOCAL_WRITE, "a live allocation");
		b->registered = true;
		s->regs++;
		cc_fill_check(b, it, "ibv_reg_mr");
	} else {
		mr_dereg(b->mr, "a live allocation");
		b->mr = NULL;
		cc_fill_check(b, it, "ibv_dereg_mr");
	}
}

static void
case_calloc_churn(const struct opts *o)
{
	/* jemalloc's own API: present only when jemalloc is the malloc in use. */
	const char *allocator = dlsym(RTLD_DEFAULT, "mallctl") != NULL ? "jemalloc" : "glibc";
	uint64_t rng = o->seed * 0xD1B54A32D192ED03ull + 1;
	struct cc_block blocks[CC_SLOTS];
	struct cc_stats s;
	unsigned long it;
	unsigned int i;
	struct dev d;

	if (o->allocator != NULL && strcmp(o->allocator, allocator) != 0)
		fail("the malloc in use is %s's, not %s's (LD_PRELOAD?)", allocator, o->allocator);
	memset(blocks, 0, sizeof(blocks));
	memset(&s, 0, sizeof(s));
	dev_open(&d);
	for (it = 0; it < o->iters; it++) {
		struct cc_block *b = &blocks[draw(&rng, 0, CC_SLOTS - 1)];

		steps_done = (sig_atomic_t)it;
		if (b->p == NULL) {
			cc_alloc(b, &rng, &s, it);
			continue;
		}
		switch (xorshift(&rng) % 4) {
		case 0:
			cc_reg_toggle(b, d.pd, &s, it);
			break;
		case 1:
		case 2:
			cc_free(b, &rng, &s, it);
			break;
		default:
			cc_dirty(b, &rng);
			break;
		}
	}
	for (i = 0; i < CC_SLOTS; i++) {
		if (blocks[i].mr != NULL)
			mr_dereg(blocks[i].mr, "a live allocation");
		free(blocks[i].p);
	}
	dev_close(&d);
	say("%s: %lu callocs (all zero), %lu mallocs, %lu frees, %lu registrations, %lu "
	    "callocs right after a registered block's free, %lu of them at the same address; "
	    "largest block %zu bytes", allocator, s.callocs, s.mallocs, s.frees, s.regs,
	    s.after_reg, s.reused, s.biggest);
	if (s.reused == 0)
		fail("no calloc returned the memory of a block just deregistered and freed: the "
		     "churn never tested calloc over deregistered memory");
	say("OK");
}

/* ---- Command line ---- */

static const struct mem_case cases[] = {
	{ "lost-writes", case_lost_writes,
	  "--writers threads increment words on pages the main thread registers and\n"
	  "deregisters --cycles times (ranges inside one page beside the words, and over\n"
	  "several pages around them): no increment lost, no registered byte changed" },
	{ "fork", case_fork,
	  "64 KiB of 'P' registered, fork: the child reads 'P', writes 'C' and registers\n"
	  "memory of its own; the parent still reads 'P' and its MR takes an RDMA WRITE\n"
	  "(loopback QPs); ibv_is_fork_initialized() is IBV_FORK_UNNEEDED" },
	{ "fork-safe", case_fork_safe,
	  "the same after ibv_fork_init() (or RDMAV_FORK_SAFE, --no-fork-init):\n"
	  "IBV_FORK_ENABLED, and the child dies of SIGSEGV touching the registered range" },
	{ "dontneed", case_dontneed,
	  "1 MiB private anonymous, registered and deregistered: MADV_DONTNEED then reads\n"
	  "zeros, maps shows private anonymous memory, a fork copies it" },
	{ "calloc-churn", case_calloc_churn,
	  "--iters steps of malloc/calloc/free (small, heap, mmap sizes) with\n"
	  "registrations of live blocks: every calloc'd byte is zero, including callocs\n"
	  "that reuse a block just deregistered and freed (--allocator: must be in use)" },
	{ "posix-shm", case_posix_shm,
	  "target: shm_open(--name) mapped shared, registered in place; the writer\n"
	  "RDMA-WRITEs it; the segment is left for shm-read" },
	{ "file", case_file,
	  "target: a new file --path (a disk file system) mapped shared, registered in\n"
	  "place, RDMA-written, read back with pread()" },
	{ "hugetlbfs", case_hugetlbfs,
	  "target: a new file --path on hugetlbfs mapped shared and populated as DPDK\n"
	  "maps, registered in place, RDMA-written, read back with pread()" },
	{ "sysv", case_sysv,
	  "target: shmget(IPC_PRIVATE) (--hugetlb: SHM_HUGETLB), shmat, IPC_RMID at once,\n"
	  "registered in place, RDMA-written; shmdt() after deregistration" },
	{ "writer", case_writer,
	  "the in-place cases' peer: connects to --peer:--port and RDMA-WRITEs the window\n"
	  "the target names" },
	{ "shm-read", case_shm_read,
	  "maps --name (posix-shm's segment) read-only, checks the writer's bytes, unlinks it" },
};

#define NB_CASES	(sizeof(cases) / sizeof(cases[0]))

static void
usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: verbs_memory CASE [options]\n"
		"What ibv_reg_mr and ibv_dereg_mr must leave alone in a program's memory, through\n"
		"the first verbs device (droce: DROCE_SOCKET names droced's socket).\n\n"
		"cases:\n");
	for (i = 0; i < NB_CASES; i++) {
		const char *h = cases[i].help;

		fprintf(f, "  %s\n", cases[i].name);
		while (*h != '\0') {
			size_t n = strcspn(h, "\n");

			fprintf(f, "      %.*s\n", (int)n, h);
			h += n + (h[n] == '\n');
		}
	}
	fprintf(f, "\noptions:\n"
		"  --cycles N       lost-writes: registrations (default %d)\n"
		"  --writers N      lost-writes: writer threads, 1..%d (default %d)\n"
		"  --iters N        calloc-churn: steps (default %d)\n"
		"  --allocator A    calloc-churn: fail unless A (glibc, jemalloc) is the malloc\n"
		"  --seed N         the data patterns and random choices (default %d)\n"
		"  --no-fork-init   fork-safe: no ibv_fork_init() call (RDMAV_FORK_SAFE is set)\n"
		"  --port P         in-place cases, writer: TCP port of the exchange (default %d)\n"
		"  --peer IP        writer: the target's address (default 127.0.0.1)\n"
		"  --name NAME      posix-shm, shm-read: the segment's name (/...)\n"
		"  --path PATH      file, hugetlbfs: the file to create (removed at the end)\n"
		"  --size BYTES     in-place cases: the region (default 1 MiB; hugetlbfs and\n"
		"                   sysv --hugetlb: one huge page)\n"
		"  --hugetlb        sysv: a SHM_HUGETLB segment\n"
		"  --timeout S      fail after S seconds (default %d)\n"
		"  -h, --help\n"
		"exit: 0 passed, 1 failed, 2 usage, 77 cannot run here (skipped)\n",
		DEFAULT_CYCLES, MAX_WRITERS, DEFAULT_WRITERS, DEFAULT_ITERS, DEFAULT_SEED,
		DEFAULT_PORT, DEFAULT_TIMEOUT);
}

static uint64_t
number(const char *s, const char *option, uint64_t min, uint64_t max)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0 || end == s || *end != '\0' || s[0] == '-' || v < min || v > max)
		quit(EXIT_USAGE, "%s %s: want %" PRIu64 "..%" PRIu64, option, s, min, max);
	return v;
}

static void
parse_opts(struct opts *o, int argc, char **argv)
{
	/* Long options only; values past any character's. */
	enum { OPT_CYCLES = 256, OPT_WRITERS, OPT_ITERS, OPT_ALLOC, OPT_SEED, OPT_NO_FORK_INIT,
	       OPT_PORT, OPT_PEER, OPT_NAME, OPT_PATH, OPT_SIZE, OPT_HUGETLB, OPT_TIMEOUT };
	static const struct option lo[] = {
		{ "cycles", required_argument, NULL, OPT_CYCLES },
		{ "writers", required_argument, NULL, OPT_WRITERS },
		{ "iters", required_argument, NULL, OPT_ITERS },
		{ "allocator", required_argument, NULL, OPT_ALLOC },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "no-fork-init", no_argument, NULL, OPT_NO_FORK_INIT },
		{ "port", required_argument, NULL, OPT_PORT },
		{ "peer", required_argument, NULL, OPT_PEER },
		{ "name", required_argument, NULL, OPT_NAME },
		{ "path", required_argument, NULL, OPT_PATH },
		{ "size", required_argument, NULL, OPT_SIZE },
		{ "hugetlb", no_argument, NULL, OPT_HUGETLB },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->cycles = DEFAULT_CYCLES;
	o->writers = DEFAULT_WRITERS;
	o->iters = DEFAULT_ITERS;
	o->seed = DEFAULT_SEED;
	o->port = DEFAULT_PORT;
	o->peer = "127.0.0.1";
	o->timeout_s = DEFAULT_TIMEOUT;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case OPT_CYCLES:
			o->cycles = number(optarg, "--cycles", 1, INT32_MAX);
			break;
		case OPT_WRITERS:
			o->writers = (unsigned int)number(optarg, "--writers", 1, MAX_WRITERS);
			break;
		case OPT_ITERS:
			o->iters = number(optarg, "--iters", 1, INT32_MAX);
			break;
		case OPT_ALLOC:
			o->allocator = optarg;
			break;
		case OPT_SEED:
			o->seed = (uint32_t)number(optarg, "--seed", 0, UINT32_MAX);
			break;
		case OPT_NO_FORK_INIT:
			o->no_fork_init = true;
			break;
		case OPT_PORT:
			o->port = (uint16_t)number(optarg, "--port", 1, UINT16_MAX);
			break;
		case OPT_PEER:
			o->peer = optarg;
			break;
		case OPT_NAME:
			if (optarg[0] != '/')
				quit(EXIT_USAGE, "--name %s: a POSIX shm name starts with '/'",
				     optarg);
			o->name = optarg;
			break;
		case OPT_PATH:
			o->path = optarg;
			break;
		case OPT_SIZE:
			o->size = number(optarg, "--size", 1, 1ull << 34);
			break;
		case OPT_HUGETLB:
			o->hugetlb = true;
			break;
		case OPT_TIMEOUT:
			o->timeout_s = (unsigned int)number(optarg, "--timeout", 1, 3600);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(EXIT_USAGE);
		}
	}
	if (optind != argc)
		quit(EXIT_USAGE, "unexpected argument %s (--help)", argv[optind]);
}

int
main(int argc, char **argv)
{
	const struct mem_case *mc = NULL;
	struct opts o;
	size_t i;

	if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : 0;
	}
	for (i = 0; i < NB_CASES; i++)
		if (strcmp(argv[1], cases[i].name) == 0)
			mc = &cases[i];
	if (mc == NULL) {
		fprintf(stderr, "verbs_memory: no case %s (--help lists them)\n", argv[1]);
		return EXIT_USAGE;
	}
	case_name = mc->name;
	page = (size_t)sysconf(_SC_PAGESIZE);
	/* The case's arguments: argv[1] (its name) stands where getopt expects a program. */
	parse_opts(&o, argc - 1, argv + 1);
	watchdog(o.timeout_s);
	mc->run(&o);
	return 0;
}
