/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs_churn: a workload for long soak runs. Each case makes and unmakes one kind of
 * object through droced again and again, with sizes and choices drawn from a seeded PRNG,
 * and checks every byte, completion and event it gets back. The soak kills it on purpose
 * at any moment and then checks that droced's object tables are back where they started.
 *
 *   verbs_churn [-n ITER] [-s SEED] [-b IPV4] CASE...
 *
 * CASE is one or more of these, run in the order named, each once (all: all four)
 *   mr     a buffer per iteration (malloc'd, mmap'd, a 1-4 MiB mmap, in turn; an mmap'd
 *          MR may start and end mid-page), filled from (seed, iteration) and registered:
 *          its bytes unchanged; RDMA WRITEs of random ranges into it through a loopback
 *          RC pair: the written ranges hold the source's bytes and every other byte of
 *          the mapping is unchanged; sometimes ibv_rereg_mr to a new buffer (both buffers
 *          unchanged, the WRITEs land in the new one) or to other access rights (RDMA
 *          READs then read what was written; without REMOTE_WRITE a WRITE completes with
 *          IBV_WC_REM_ACCESS_ERR and changes nothing); after ibv_dereg_mr the buffer
 *          still holds exactly what was last written
 *   cq     a CQ of random size takes K signalled SENDs of one or two loopback RC QPs
 *          (K < its size), some polled, then ibv_resize_cq up or down (never below what
 *          it may hold), once or twice: every wr_id comes exactly once and in order per
 *          QP, nothing more; the receives carry the bytes sent, in order
 *   srq    an SRQ of random size behind one or two loopback RC QPs, srq_limit armed at
 *          random: SENDs that leave it at the limit raise nothing, one more raises
 *          IBV_EVENT_SRQ_LIMIT_REACHED for that SRQ (poll() on async_fd, then
 *          ibv_get_async_event) and disarm the limit (ibv_query_srq reads 0); refilled
 *          and re-armed one to three times per iteration
 *   mcast  rdma_cm: an id (RDMA_PS_UDP) bound to -b's address with a UD QP
 *          (rdma_create_qp) joins one or two random groups 239.x.y.z: one
 *          RDMA_CM_EVENT_MULTICAST_JOIN each, with the join's context, the group's GID,
 *          QPN 0xFFFFFF and RDMA_UDP_QKEY; sometimes a UD SEND to each group comes back
 *          to the QP (droce loops a port's multicast back to its own attached QPs, as
 *          NICs do: doc/verbs-coverage.md); rdma_leave_multicast (again: EADDRNOTAVAIL;
 *          a SEND to a group left is not delivered), or rdma_destroy_id leaves it;
 *          no CM event but the joins'
 *
 *   -n ITER   iterations per case (default 20)
 *   -s SEED   the seed (default: from the clock). It is printed; each case draws from a
 *             stream of its own, so a case run alone with a seed repeats what it did
 *             among others with that seed
 *   -b IPV4   droced's own address, for mcast (which needs it)
 *
 * The device is the first one (DROCE_SOCKET selects the daemon). Each iteration releases
 * all it made; only a case's device context lives across its iterations (and, for mcast,
 * the device librdmacm opens once per process). Nothing outlives the process (no files,
 * no shared memory of its own), so a SIGKILL at any moment leaves droced the clean-up of
 * any dead client.
 *
 * Output: "verbs_churn: seed S, N iterations per case", then one line per case
 * "verbs_churn CASE: ok N iterations (figures, seconds)". Exit status: 0 every check passed;
 * 1 a check or a verb failed ("verbs_churn CASE: FAIL: iteration I: what, want vs got");
 * 2 usage error; 3 a hang: a wait past its deadline, or a verb still blocked when the
 * iteration's watchdog fired.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "verbs_test_util.h"

#define EXIT_FAIL	1
#define EXIT_USAGE	2
#define EXIT_HANG	3

#define DEFAULT_ITERS	20
#define MAX_ITERS	1000000000ul

/*
 * One alarm per iteration (vt_watch): a verb that blocks anywhere in it, in a wait or
 * not, ends the program with EXIT_HANG. Each wait has a deadline of its own, well inside
 * the alarm, whose message says what never came. An iteration takes well under a second;
 * both are generous for a small machine busy with other tests, yet short of the soak's
 * two minutes per application, so a hang is reported here rather than killed there.
 */
#define ITER_WATCHDOG_S	30
#define WAIT_MS		10000
/* How long something that must not happen is given to happen anyway: the engines answer
 * in microseconds when they are not starved. */
#define QUIET_MS	50
#define POLL_NAP_NS	20000	/* between empty polls: the engines share our CPUs */
#define QP_TIMEOUT	14	/* local ACK timeout code: 67 ms */

/* mr: the three kinds of buffer and what a WRITE or READ reads from. */
#define MR_MALLOC_MAX	(256u << 10)
#define MR_MMAP_PAGES	64
#define MR_LARGE_MIN	(1u << 20)
#define MR_LARGE_MAX	(4u << 20)
#define MR_SRC_MIN	(4u << 10)
#define MR_SRC_MAX	(1u << 20)
#define MR_MAX_OPS	4	/* WRITEs or READs posted at once */
#define MR_QP_DEPTH	8
#define MR_ACCESS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ)

/* cq: sizes asked for, and what one SEND carries. */
#define CQ_MAX		1024
#define CQ_MSG		32
#define CQ_HDR		16

/* srq: sizes asked for, what one SEND carries, rounds of arm and refill. */
#define SRQ_MIN		8
#define SRQ_MAX		256
#define SRQ_MSG		32
#define SRQ_MAX_ROUNDS	3

/* mcast: receives kept posted, the GRH area before a UD payload, the payload. */
#define MC_RECVS	16
#define MC_SENDS	4
#define MC_GRH		40
#define MC_MSG		64
#define MC_MAGIC	0x6d63684eu	/* first word of this program's messages */
#define MC_QPN		0xFFFFFFu	/* a group's QPN (IB 10.5) */
#define MC_MAX_SENDS	8		/* per iteration: two groups, before and after leaving */

struct churn_case {
	const char *name;
	void (*run)(void);
};

struct opts {
	unsigned long iters;
	uint64_t seed;
	struct in_addr bind;
	bool have_bind;
};

static struct opts o;
/* The running case and iteration, in every message. */
static const char *case_name = "verbs_churn";
static unsigned int case_idx;
static unsigned long iter;
static bool in_iter;
static char fail_prefix[64];
static size_t page;
static uint64_t rng;

/* ---- Messages ---- */

static void __attribute__((noreturn, format(printf, 2, 3)))
quit(int status, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "verbs_churn %s: FAIL: ", case_name);
	if (in_iter)
		fprintf(stderr, "iteration %lu: ", iter);
	if (status == EXIT_HANG)
		fputs("hang: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(status);
}

#define fail(...) quit(EXIT_FAIL, __VA_ARGS__)
#define hang(...) quit(EXIT_HANG, __VA_ARGS__)

static void __attribute__((noreturn, format(printf, 1, 2)))
usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("verbs_churn: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nusage: verbs_churn [-n ITER] [-s SEED] [-b IPV4] mr|cq|srq|mcast|all...\n",
	      stderr);
	exit(EXIT_USAGE);
}

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
nap(void)
{
	struct timespec ts = { .tv_nsec = POLL_NAP_NS };

	nanosleep(&ts, NULL);
}

/* The iteration's alarm: see ITER_WATCHDOG_S. vt_init's name is the prefix of the
 * watchdog's message, so it reads as this program's other failures do. */
static void
iter_begin(unsigned long i)
{
	iter = i;
	in_iter = true;
	vt_watch(ITER_WATCHDOG_S, EXIT_HANG);
}

static void
iter_end(void)
{
	vt_unwatch();
	in_iter = false;
}

/* ---- PRNG and patterns ---- */

static uint64_t
mix(uint64_t x)
{
	/* splitmix64's finaliser: seeds that differ in one bit give unrelated streams. */
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

static uint64_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* A draw in [lo, hi] (lo when hi < lo). */
static uint64_t
draw(uint64_t lo, uint64_t hi)
{
	if (hi <= lo)
		return lo;
	return lo + rnd() % (hi - lo + 1);
}

static bool
one_in(unsigned int n)
{
	return rnd() % n == 0;
}

/* The seed of a buffer's bytes: the run's seed, the case, the iteration, and which of the
 * iteration's buffers (so no two buffers look alike, and a rerun makes the same ones). */
static uint64_t
fill_seed(unsigned int which)
{
	return mix(mix(o.seed ^ mix(case_idx + 1)) + iter * 16 + which);
}

/* Byte off of a buffer filled from seed: never 0, so zeroed memory never passes for it. */
static inline uint8_t
pattern(uint64_t seed, uint64_t off)
{
	uint64_t x = (off + 1) * 0x9E3779B97F4A7C15ull ^ seed;

	x ^= x >> 29;
	x *= 0xBF58476D1CE4E5B9ull;
	x ^= x >> 32;
	return (uint8_t)(x % 255 + 1);
}

static void
pattern_fill(uint8_t *p, size_t len, uint64_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = pattern(seed, i);
}

/* Offset of the first byte where a and b differ, or len. */
static size_t
first_diff(const uint8_t *a, const uint8_t *b, size_t len)
{
	size_t i;

	if (memcmp(a, b, len) == 0)
		return len;
	for (i = 0; a[i] == b[i]; i++)
		;
	return i;
}

static double
mib(uint64_t bytes)
{
	return (double)bytes / (1 << 20);
}

/* ---- Verbs helpers ---- */

struct dev {
	struct ibv_context *ctx;
	struct ibv_device_attr attr;
};

static void
dev_open(struct dev *d)
{
	d->ctx = vt_open_first();
	if (ibv_query_device(d->ctx, &d->attr) != 0)
		fail("ibv_query_device: %s", strerror(errno));
}

static void
dev_close(struct dev *d)
{
	int ret = ibv_close_device(d->ctx);

	if (ret != 0)
		fail("ibv_close_device: %s", strerror(ret));
}

static struct ibv_pd *
pd_new(struct ibv_context *ctx)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);

	if (pd == NULL)
		fail("ibv_alloc_pd: %s", strerror(errno));
	return pd;
}

static struct ibv_cq *
cq_new(struct ibv_context *ctx, int cqe)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, cqe, NULL, NULL, 0);

	if (cq == NULL)
		fail("ibv_create_cq(%d): %s", cqe, strerror(errno));
	if (cq->cqe < cqe)
		fail("ibv_create_cq(%d): cq->cqe %d, want at least %d", cqe, cq->cqe, cqe);
	return cq;
}

static struct ibv_mr *
mr_new(struct ibv_pd *pd, void *addr, size_t len, int access, const char *what)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, addr, len, access);

	if (mr == NULL)
		fail("ibv_reg_mr(%s, %p, %zu): %s", what, addr, len, strerror(errno));
	if (mr->addr != addr || mr->length != len)
		fail("ibv_reg_mr(%s): the MR says %p+%zu, want %p+%zu", what, mr->addr,
		     mr->length, addr, len);
	return mr;
}

/* Every destroy checked: a refusal is an object left in droced's tables. */
static void
mr_del(struct ibv_mr *mr, const char *what)
{
	int ret = ibv_dereg_mr(mr);

	if (ret != 0)
		fail("ibv_dereg_mr(%s): %s", what, strerror(ret));
}

static void
qp_del(struct ibv_qp *qp)
{
	int ret = ibv_destroy_qp(qp);

	if (ret != 0)
		fail("ibv_destroy_qp: %s", strerror(ret));
}

static void
cq_del(struct ibv_cq *cq)
{
	int ret = ibv_destroy_cq(cq);

	if (ret != 0)
		fail("ibv_destroy_cq: %s", strerror(ret));
}

static void
pd_del(struct ibv_pd *pd)
{
	int ret = ibv_dealloc_pd(pd);

	if (ret != 0)
		fail("ibv_dealloc_pd: %s", strerror(ret));
}

/* An RC QP in INIT, every send signalled (so every WR has its completion to check). */
static struct ibv_qp *
rc_qp(struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq, struct ibv_srq *srq,
      uint32_t send_wr, uint32_t recv_wr, unsigned int access)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = scq, .recv_cq = rcq, .srq = srq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = send_wr, .max_recv_wr = srq != NULL ? 0 : recv_wr,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_all = 1,
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	if (qp == NULL)
		fail("ibv_create_qp(RC, %u send, %u receive WRs%s): %s", send_wr, recv_wr,
		     srq != NULL ? ", SRQ" : "", strerror(errno));
	vt_qp_init(qp, access);
	return qp;
}

/* Two QPs of one context connected to each other, through the port's GID 0. */
static void
rc_connect(struct ibv_qp *a, struct ibv_qp *b)
{
	vt_qp_connect(a, b->qp_num, QP_TIMEOUT);
	vt_qp_connect(b, a->qp_num, QP_TIMEOUT);
}

/* Polls cq until n completions are in wc (never more: what follows is the caller's). */
static void
wait_wcs(struct ibv_cq *cq, struct ibv_wc *wc, int n, const char *what)
{
	uint64_t deadline = now_ms() + WAIT_MS;
	int got = 0, r;

	while (got < n) {
		r = ibv_poll_cq(cq, n - got, wc + got);
		if (r < 0)
			fail("ibv_poll_cq (%s): %d", what, r);
		if (r > 0) {
			got += r;
			continue;
		}
		if (now_ms() > deadline)
			hang("%d of %d completions of %s within %d ms", got, n, what, WAIT_MS);
		nap();
	}
}

/* Nothing more in cq: a completion nobody asked for is a duplicate. */
static void
expect_cq_empty(struct ibv_cq *cq, const char *what)
{
	struct ibv_wc wc;
	int r = ibv_poll_cq(cq, 1, &wc);

	if (r < 0)
		fail("ibv_poll_cq (%s): %d", what, r);
	if (r > 0)
		fail("%s: one completion too many: wr_id %#" PRIx64 " status %s opcode %d "
		     "qp_num %#x", what, wc.wr_id, ibv_wc_status_str(wc.status), wc.opcode,
		     wc.qp_num);
}

static void
expect_wc(const struct ibv_wc *wc, enum ibv_wc_opcode op, const char *what)
{
	if (wc->status != IBV_WC_SUCCESS)
		fail("%s: wr_id %#" PRIx64 " completed with %s, want success", what, wc->wr_id,
		     ibv_wc_status_str(wc->status));
	if (wc->opcode != op)
		fail("%s: wr_id %#" PRIx64 " has opcode %d, want %d", what, wc->wr_id,
		     wc->opcode, op);
}

/* Waits up to ms for fd to become readable: true if it did. */
static bool
fd_readable(int fd, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	uint64_t deadline = now_ms() + (uint64_t)ms;
	int n;

	for (;;) {
		n = poll(&pfd, 1, ms);
		if (n > 0)
			return true;
		if (n == 0)
			return false;
		if (errno != EINTR)
			fail("poll: %s", strerror(errno));
		ms = (int)(deadline > now_ms() ? deadline - now_ms() : 0);
	}
}

/* ---- Case mr ---- */

enum buf_kind { BUF_MALLOC, BUF_MMAP, BUF_LARGE, NB_KINDS };

static const char *const kind_name[NB_KINDS] = { "malloc'd", "mmap'd", "large mmap'd" };

/*
 * A buffer of the program's and what each of its bytes must read. The MR covers
 * [base + off, base + off + len); span is all the program owns of it (a mapping's whole
 * pages), and all of span is checked: registration works on pages, and the bytes beside
 * an MR in its first and last page are as much the program's as the others.
 */
struct region {
	enum buf_kind kind;
	uint8_t *base;
	size_t span, off, len;
	uint8_t *want;
	const char *name;
};

static void
region_alloc(struct region *r, enum buf_kind kind, size_t span, size_t off, size_t len,
	     unsigned int which, const char *name)
{
	r->kind = kind;
	r->span = span;
	r->off = off;
	r->len = len;
	r->name = name;
	if (kind == BUF_MALLOC) {
		r->base = malloc(span);
		if (r->base == NULL)
			fail("malloc(%zu): out of memory", span);
	} else {
		r->base = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
		if (r->base == MAP_FAILED)
			fail("mmap(%zu): %s", span, strerror(errno));
	}
	r->want = malloc(span);
	if (r->want == NULL)
		fail("malloc(%zu): out of memory", span);
	pattern_fill(r->base, span, fill_seed(which));
	memcpy(r->want, r->base, span);
}

/* A target buffer of the kind: sizes at random within the kind's. */
static void
region_draw(struct region *r, enum buf_kind kind, unsigned int which, const char *name)
{
	size_t span, off = 0, len;

	switch (kind) {
	case BUF_MALLOC:
		span = draw(1, MR_MALLOC_MAX);
		len = span;
		break;
	case BUF_MMAP:
		span = draw(1, MR_MMAP_PAGES) * page;
		if (one_in(2))
			off = draw(0, page - 1);
		len = draw(1, span - off);
		break;
	default:
		span = (draw(MR_LARGE_MIN, MR_LARGE_MAX) + page - 1) / page * page;
		if (one_in(2))
			off = draw(0, page - 1);
		len = span - off - draw(0, page - 1);
		break;
	}
	region_alloc(r, kind, span, off, len, which, name);
}

static uint8_t *
region_mr_addr(const struct region *r)
{
	return r->base + r->off;
}

static void
region_check(const struct region *r, const char *when)
{
	size_t bad = first_diff(r->base, r->want, r->span);

	if (bad == r->span)
		return;
	fail("%s: %s (%s, %zu bytes, the MR at +%zu, %zu bytes): byte %zu (%s the MR) "
	     "reads 0x%02x, want 0x%02x", when, r->name, kind_name[r->kind], r->span, r->off,
	     r->len, bad, bad >= r->off && bad < r->off + r->len ? "inside" : "outside",
	     r->base[bad], r->want[bad]);
}

static void
region_free(struct region *r)
{
	if (r->kind == BUF_MALLOC)
		free(r->base);
	else if (munmap(r->base, r->span) != 0)
		fail("munmap: %s", strerror(errno));
	free(r->want);
	r->base = r->want = NULL;
}

struct mr_stats {
	unsigned long regs, rereg_trans, rereg_access, writes, reads, refused;
	uint64_t write_bytes, read_bytes;
	size_t biggest;
};

/* One iteration's objects. */
struct mr_iter {
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *tx, *rx;
	struct region src, dst;
	struct ibv_mr *smr, *mr;
	int access;
	struct mr_stats *s;
};

static void
mr_post(struct mr_iter *m, enum ibv_wr_opcode op, uint64_t wr_id, size_t soff, size_t doff,
	size_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(m->src.base + soff), .length = (uint32_t)len,
			       .lkey = m->smr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = len != 0, .opcode = op,
		.wr.rdma = { .remote_addr = (uintptr_t)(region_mr_addr(&m->dst) + doff),
			     .rkey = m->mr->rkey },
	}, *bad;
	int ret = ibv_post_send(m->tx, &wr, &bad);

	if (ret != 0)
		fail("ibv_post_send(%s of %zu bytes): %s",
		     op == IBV_WR_RDMA_WRITE ? "RDMA WRITE" : "RDMA READ", len, strerror(ret));
}

static size_t
mr_max_op(const struct mr_iter *m)
{
	return m->dst.len < m->src.len ? m->dst.len : m->src.len;
}

/* The n operations posted (wr_ids 0..n-1) complete in order; then every byte of both. */
static void
mr_ops_done(struct mr_iter *m, unsigned int n, enum ibv_wc_opcode opcode, const char *what)
{
	struct ibv_wc wc[MR_MAX_OPS];
	unsigned int i;

	wait_wcs(m->cq, wc, (int)n, what);
	for (i = 0; i < n; i++) {
		expect_wc(&wc[i], opcode, what);
		if (wc[i].wr_id != i)
			fail("%s: completion %u is wr_id %" PRIu64 ", want %u (in order)", what,
			     i, wc[i].wr_id, i);
	}
	region_check(&m->dst, what);
	region_check(&m->src, what);
}

/*
 * n RDMA WRITEs from the source to random ranges of the MR (now and then of no bytes),
 * posted together: RC runs them in order, so overlaps land as posted. Then every byte of
 * both buffers.
 */
static void
mr_writes(struct mr_iter *m, unsigned int n, const char *when)
{
	char what[96];
	unsigned int i;

	for (i = 0; i < n; i++) {
		size_t len = one_in(8) ? 0 : draw(1, mr_max_op(m));
		size_t doff = draw(0, m->dst.len - len), soff = draw(0, m->src.len - len);

		mr_post(m, IBV_WR_RDMA_WRITE, i, soff, doff, len);
		memcpy(m->dst.want + m->dst.off + doff, m->src.want + soff, len);
		m->s->writes++;
		m->s->write_bytes += len;
	}
	snprintf(what, sizeof(what), "%u RDMA WRITEs %s", n, when);
	mr_ops_done(m, n, IBV_WC_RDMA_WRITE, what);
}

/* n RDMA READs of random ranges of the MR into the source: the bytes last written. */
static void
mr_reads(struct mr_iter *m, unsigned int n)
{
	char what[64];
	unsigned int i;

	for (i = 0; i < n; i++) {
		size_t len = draw(1, mr_max_op(m));
		size_t doff = draw(0, m->dst.len - len), soff = draw(0, m->src.len - len);

		mr_post(m, IBV_WR_RDMA_READ, i, soff, doff, len);
		memcpy(m->src.want + soff, m->dst.want + m->dst.off + doff, len);
		m->s->reads++;
		m->s->read_bytes += len;
	}
	snprintf(what, sizeof(what), "%u RDMA READs", n);
	mr_ops_done(m, n, IBV_WC_RDMA_READ, what);
}

static void
mr_rereg_access(struct mr_iter *m, int access)
{
	int ret = ibv_rereg_mr(m->mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, access);

	if (ret != 0)
		fail("ibv_rereg_mr(CHANGE_ACCESS %#x): %d, errno %s", (unsigned int)access, ret,
		     strerror(errno));
	m->access = access;
	m->s->rereg_access++;
	region_check(&m->dst, "ibv_rereg_mr(CHANGE_ACCESS)");
}

/* The MR moved to a new buffer of a kind at random: both buffers unchanged by it. */
static void
mr_rereg_translation(struct mr_iter *m)
{
	struct region old = m->dst;
	uint8_t *addr;
	int ret;

	region_draw(&m->dst, (enum buf_kind)draw(0, NB_KINDS - 1), 2, "the new translation");
	addr = region_mr_addr(&m->dst);
	ret = ibv_rereg_mr(m->mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, addr, m->dst.len, 0);
	if (ret != 0)
		fail("ibv_rereg_mr(CHANGE_TRANSLATION to %s %p+%zu): %d, errno %s",
		     kind_name[m->dst.kind], (void *)addr, m->dst.len, ret, strerror(errno));
	if (m->mr->addr != addr || m->mr->length != m->dst.len)
		fail("ibv_rereg_mr(CHANGE_TRANSLATION): the MR says %p+%zu, want %p+%zu",
		     m->mr->addr, m->mr->length, (void *)addr, m->dst.len);
	m->s->rereg_trans++;
	if (m->dst.len > m->s->biggest)
		m->s->biggest = m->dst.len;
	region_check(&m->dst, "ibv_rereg_mr(CHANGE_TRANSLATION), the new buffer");
	old.name = "the old translation";
	region_check(&old, "ibv_rereg_mr(CHANGE_TRANSLATION), the old buffer");
	region_free(&old);
}

/*
 * The MR without REMOTE_WRITE: a WRITE into it completes with IBV_WC_REM_ACCESS_ERR and
 * changes no byte. The QPs are in error after it: the iteration's last use of them.
 */
static void
mr_refused_write(struct mr_iter *m)
{
	struct ibv_wc wc;
	size_t len;

	mr_rereg_access(m, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	len = draw(1, mr_max_op(m));
	mr_post(m, IBV_WR_RDMA_WRITE, 0, draw(0, m->src.len - len), draw(0, m->dst.len - len),
		len);
	wait_wcs(m->cq, &wc, 1, "a WRITE into an MR without REMOTE_WRITE");
	if (wc.status != IBV_WC_REM_ACCESS_ERR)
		fail("a WRITE into an MR without REMOTE_WRITE completed with %s, want %s",
		     ibv_wc_status_str(wc.status), ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
	region_check(&m->dst, "a WRITE refused for the MR's access");
	m->s->refused++;
}

static void
mr_iteration(struct dev *d, struct mr_stats *s)
{
	struct mr_iter m = { .s = s };
	size_t len;

	m.pd = pd_new(d->ctx);
	m.cq = cq_new(d->ctx, 2 * MR_QP_DEPTH);
	m.tx = rc_qp(m.pd, m.cq, m.cq, NULL, MR_QP_DEPTH, 1, 0);
	m.rx = rc_qp(m.pd, m.cq, m.cq, NULL, 1, 1,
		     IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	rc_connect(m.tx, m.rx);
	/* The WRITEs' source and the READs' target, malloc'd, a pattern of its own. */
	len = draw(MR_SRC_MIN, MR_SRC_MAX);
	region_alloc(&m.src, BUF_MALLOC, len, 0, len, 0, "the source");
	m.smr = mr_new(m.pd, m.src.base, m.src.len, IBV_ACCESS_LOCAL_WRITE, "the source");
	region_check(&m.src, "ibv_reg_mr");
	/* The buffer under test: the three kinds in turn. */
	region_draw(&m.dst, (enum buf_kind)(iter % NB_KINDS), 1, "the target");
	m.mr = mr_new(m.pd, region_mr_addr(&m.dst), m.dst.len, MR_ACCESS, "the target");
	m.access = MR_ACCESS;
	s->regs++;
	if (m.dst.len > s->biggest)
		s->biggest = m.dst.len;
	region_check(&m.dst, "ibv_reg_mr");

	mr_writes(&m, (unsigned int)draw(1, MR_MAX_OPS), "into the new MR");
	if (one_in(3)) {
		mr_rereg_translation(&m);
		mr_writes(&m, (unsigned int)draw(1, MR_MAX_OPS), "into the new translation");
	}
	if (one_in(3)) {
		/* Without REMOTE_READ, then with all again: WRITEs go on landing. */
		mr_rereg_access(&m, one_in(2) ? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE :
				    MR_ACCESS);
		mr_writes(&m, (unsigned int)draw(1, MR_MAX_OPS), "after CHANGE_ACCESS");
	}
	if ((m.access & IBV_ACCESS_REMOTE_READ) && one_in(2))
		mr_reads(&m, (unsigned int)draw(1, MR_MAX_OPS));
	if (one_in(4))
		mr_refused_write(&m);

	qp_del(m.tx);
	qp_del(m.rx);
	/* Deregistration must leave the bytes as the last WRITE (or READ) left them. */
	mr_del(m.mr, "the target");
	region_check(&m.dst, "ibv_dereg_mr");
	mr_del(m.smr, "the source");
	region_check(&m.src, "ibv_dereg_mr");
	cq_del(m.cq);
	pd_del(m.pd);
	region_free(&m.dst);
	region_free(&m.src);
}

static void
case_mr(void)
{
	struct mr_stats s = { 0 };
	struct dev d;
	unsigned long i;

	vt_watch(ITER_WATCHDOG_S, EXIT_HANG);
	dev_open(&d);
	vt_unwatch();
	for (i = 0; i < o.iters; i++) {
		iter_begin(i);
		mr_iteration(&d, &s);
		iter_end();
	}
	vt_watch(ITER_WATCHDOG_S, EXIT_HANG);
	dev_close(&d);
	vt_unwatch();
	printf("verbs_churn mr: ok %lu iterations (%lu MRs up to %.2f MiB, %lu translation and "
	       "%lu access re-registrations, %lu WRITEs of %.1f MiB, %lu READs of %.1f MiB, "
	       "%lu WRITEs refused",
	       o.iters, s.regs, mib(s.biggest), s.rereg_trans, s.rereg_access, s.writes,
	       mib(s.write_bytes), s.reads, mib(s.read_bytes), s.refused);
}

/* ---- Case cq ---- */

struct cq_stats {
	unsigned long up, down, same, partial, wcs;
	int smallest, largest;
};

/* What SEND seq of QP q carries: a header, then bytes from (seed, iteration, q, seq). */
static void
cq_msg(uint8_t *p, size_t len, unsigned int q, uint32_t seq)
{
	uint32_t hdr[4] = { (uint32_t)iter, q, seq, (uint32_t)len };

	memcpy(p, hdr, sizeof(hdr));
	pattern_fill(p + CQ_HDR, len - CQ_HDR, fill_seed(q) + seq);
}

/* SEND seq of QP q (wr_id q << 32 | seq) from p, which it fills first. */
static void
cq_send(struct ibv_qp *qp, const struct ibv_mr *mr, uint8_t *p, size_t len, unsigned int q,
	uint32_t seq)
{
	struct ibv_sge sge = { .addr = (uintptr_t)p, .length = (uint32_t)len, .lkey = mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = ((uint64_t)q << 32) | seq, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND,
	}, *bad;
	int ret;

	cq_msg(p, len, q, seq);
	ret = ibv_post_send(qp, &wr, &bad);
	if (ret != 0)
		fail("ibv_post_send SEND %u of QP %u: %s", seq, q, strerror(ret));
}

/* Checks the send completions in wc against the next wr_id of each QP. */
static void
cq_check_sends(struct ibv_wc *wc, int n, struct ibv_qp **tx, unsigned int nq, uint32_t *next,
	       const char *when)
{
	unsigned int q;
	int i;

	for (i = 0; i < n; i++) {
		uint64_t id = wc[i].wr_id;

		expect_wc(&wc[i], IBV_WC_SEND, when);
		q = (unsigned int)(id >> 32);
		if (q >= nq || wc[i].qp_num != tx[q]->qp_num)
			fail("%s: wr_id %#" PRIx64 " on QP %#x: no such QP's", when, id,
			     wc[i].qp_num);
		if ((uint32_t)id != next[q])
			fail("%s: QP %u's completion is wr_id %u, want %u (each once, in order)",
			     when, q, (uint32_t)id, next[q]);
		next[q]++;
	}
}

static void
cq_iteration(struct dev *d, struct cq_stats *s)
{
	static struct ibv_wc wc[CQ_MAX], rwc[CQ_MAX];
	struct ibv_qp *tx[2], *rx[2];
	uint32_t k[2] = { 0, 0 }, posted[2] = { 0, 0 }, next[2] = { 0, 0 }, rnext[2] = { 0, 0 };
	int max_cqe = d->attr.max_cqe < CQ_MAX ? d->attr.max_cqe : CQ_MAX;
	int max_wr = d->attr.max_qp_wr;
	unsigned int nq = one_in(2) ? 2 : 1, q, resizes, r;
	struct ibv_pd *pd = pd_new(d->ctx);
	struct ibv_cq *cq, *rcq;
	struct ibv_mr *mr;
	uint8_t *buf, *rbuf;
	uint16_t *lens;
	int ask, limit, total, polled, i, held;
	char what[96];

	/* Sizes spread over the powers of two, not crowded at the top. */
	ask = (int)draw(2, (uint64_t)2 << draw(0, 9));
	if (ask > max_cqe)
		ask = max_cqe;
	cq = cq_new(d->ctx, ask);
	if (cq->cqe < s->smallest)
		s->smallest = cq->cqe;
	/* K < the CQ's size: it never overruns, whatever the resizes do. */
	limit = cq->cqe - 1 < CQ_MAX - 1 ? cq->cqe - 1 : CQ_MAX - 1;
	if (limit > max_wr)
		limit = max_wr;
	total = (int)draw(1, (uint64_t)limit);
	if (total < 2)
		nq = 1;
	k[0] = nq == 1 ? (uint32_t)total : (uint32_t)draw(1, (uint64_t)total - 1);
	k[1] = (uint32_t)total - k[0];
	/* The receive side completes into a CQ of its own: the one under test holds only
	 * the sends' completions. */
	rcq = cq_new(d->ctx, total);
	buf = calloc(2 * (size_t)total, CQ_MSG);
	lens = calloc((size_t)total, sizeof(*lens));
	if (buf == NULL || lens == NULL)
		fail("calloc: out of memory");
	rbuf = buf + (size_t)total * CQ_MSG;
	mr = mr_new(pd, buf, 2 * (size_t)total * CQ_MSG, IBV_ACCESS_LOCAL_WRITE, "messages");
	for (q = 0; q < nq; q++) {
		tx[q] = rc_qp(pd, cq, rcq, NULL, k[q], 1, 0);
		rx[q] = rc_qp(pd, rcq, rcq, NULL, 1, k[q], 0);
		rc_connect(tx[q], rx[q]);
	}
	/* Receives: slot j of QP q at (q ? k[0] : 0) + j, as the sends. */
	for (q = 0; q < nq; q++) {
		uint32_t j;

		for (j = 0; j < k[q]; j++) {
			size_t slot = (q ? k[0] : 0) + j;
			struct ibv_sge sge = { .addr = (uintptr_t)(rbuf + slot * CQ_MSG),
					       .length = CQ_MSG, .lkey = mr->lkey };
			struct ibv_recv_wr wr = { .wr_id = ((uint64_t)q << 32) | j,
						  .sg_list = &sge, .num_sge = 1 }, *bad;
			int ret = ibv_post_recv(rx[q], &wr, &bad);

			if (ret != 0)
				fail("ibv_post_recv %u of QP %u: %s", j, q, strerror(ret));
		}
	}
	/* The SENDs, the two QPs' interleaved at random. */
	for (i = 0; i < total; i++) {
		size_t slot;

		q = nq == 2 && posted[1] < k[1] && (posted[0] == k[0] || one_in(2)) ? 1 : 0;
		slot = (q ? k[0] : 0) + posted[q];
		lens[slot] = (uint16_t)draw(CQ_HDR, CQ_MSG);
		cq_send(tx[q], mr, buf + slot * CQ_MSG, lens[slot], q, posted[q]++);
	}
	/* Every receive in: the SENDs have all arrived (their ACKs are on their way). */
	snprintf(what, sizeof(what), "%d receives", total);
	wait_wcs(rcq, rwc, total, what);
	for (i = 0; i < total; i++) {
		uint64_t id = rwc[i].wr_id;
		size_t slot;

		expect_wc(&rwc[i], IBV_WC_RECV, what);
		q = (unsigned int)(id >> 32);
		if (q >= nq || rwc[i].qp_num != rx[q]->qp_num)
			fail("%s: wr_id %#" PRIx64 " on QP %#x: no such QP's", what, id,
			     rwc[i].qp_num);
		if ((uint32_t)id != rnext[q])
			fail("%s: QP %u's receive is wr_id %u, want %u (in order)", what, q,
			     (uint32_t)id, rnext[q]);
		slot = (q ? k[0] : 0) + rnext[q];
		if (rwc[i].byte_len != lens[slot])
			fail("%s: QP %u's receive %u has %u bytes, want %u", what, q, rnext[q],
			     rwc[i].byte_len, lens[slot]);
		if (memcmp(rbuf + slot * CQ_MSG, buf + slot * CQ_MSG, lens[slot]) != 0)
			fail("%s: QP %u's receive %u: the bytes differ from the SEND's", what, q,
			     rnext[q]);
		rnext[q]++;
	}
	/* Some taken before the resize: the ring moved is then not one that starts at 0. */
	polled = total > 1 && one_in(2) ? (int)draw(1, (uint64_t)total - 1) : 0;
	if (polled > 0) {
		wait_wcs(cq, wc, polled, "the sends polled before the resize");
		cq_check_sends(wc, polled, tx, nq, next, "before the resize");
		s->partial++;
	}
	/* It holds at most what is left: never resized below that. */
	held = total - polled;
	resizes = one_in(3) ? 2 : 1;
	for (r = 0; r < resizes; r++) {
		int old = cq->cqe, want, ret;

		if (one_in(2) && old < max_cqe)
			want = (int)draw((uint64_t)old + 1, (uint64_t)(4 * old < max_cqe ?
								       4 * old : max_cqe));
		else if (old / 2 >= held && old / 2 >= 1)
			want = (int)draw((uint64_t)(held > 1 ? held : 1), (uint64_t)old / 2);
		else
			want = (int)draw((uint64_t)(held > 1 ? held : 1),
					 (uint64_t)(old - 1 > held ? old - 1 : held));
		ret = ibv_resize_cq(cq, want);
		if (ret != 0)
			fail("ibv_resize_cq(%d -> %d) holding up to %d: %s", old, want, held,
			     strerror(ret));
		if (cq->cqe < want)
			fail("ibv_resize_cq(%d -> %d): cq->cqe %d, want at least %d", old, want,
			     cq->cqe, want);
		if (cq->cqe > old)
			s->up++;
		else if (cq->cqe < old)
			s->down++;
		else
			s->same++;
		if (cq->cqe > s->largest)
			s->largest = cq->cqe;
		if (cq->cqe < s->smallest)
			s->smallest = cq->cqe;
	}
	snprintf(what, sizeof(what), "%d sends after the resize to %d", total - polled, cq->cqe);
	wait_wcs(cq, wc, total - polled, what);
	cq_check_sends(wc, total - polled, tx, nq, next, what);
	for (q = 0; q < nq; q++)
		if (next[q] != k[q])
			fail("QP %u: %u send completions, want %u", q, next[q], k[q]);
	expect_cq_empty(cq, "the CQ under test after all its sends");
	expect_cq_empty(rcq, "the receive CQ");
	s->wcs += (unsigned long)total;

	for (q = 0; q < nq; q++) {
		qp_del(tx[q]);
		qp_del(rx[q]);
	}
	mr_del(mr, "messages");
	cq_del(cq);
	cq_del(rcq);
	pd_del(pd);
	free(buf);
	free(lens);
}

static void
case_cq(void)
{
	struct cq_stats s = { .smallest = CQ_MAX * 4 };
	struct dev d;
	unsigned long i;

	vt_watch(ITER_WATCHDOG_S, EXIT_HANG);
	dev_open(&d);
	vt_unwatch();
	for (i = 0; i < o.iters; i++) {
		iter_begin(i);
		cq_iteration(&d, &s);
		iter_end();
	}
	vt_watch(ITER_WATCHDOG_S, EXIT_HANG);
	dev_close(&d);
	vt_unwatch();
	printf("verbs_churn cq: ok %lu iterations (CQs of %d to %d entries, %lu resizes up, "
	       "%lu down, %lu to the same size, %lu after a partial poll, %lu send "
	       "completions each once and in order",
	       o.iters, s.smallest, s.largest, s.up, s.down, s.same, s.partial, s.wcs);
}

/* ---- Case srq ---- */

struct srq_stats {
	unsigned long events, exact, sends, srqs2;
	unsigned long port_events;	/* PORT_ERR, PORT_ACTIVE passed over */
	uint32_t smallest, largest;
};

struct srq_iter {
	struct dev *d;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *tx[2], *rx[2];
	unsigned int nq;
	struct ibv_mr *mr;
	uint8_t *sbuf, *rbuf;
	uint32_t max_wr;
	/* Receives: serials posted and consumed (FIFO: the outstanding ones are a window). */
	uint64_t rposted, rtaken;
	/* Per pair: SENDs posted and completed, receives seen. */
	uint32_t sent[2], sdone[2], rseen[2];
	struct srq_stats *s;
};

static void
srq_post_recvs(struct srq_iter *m, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		uint64_t serial = m->rposted++;
		struct ibv_sge sge = {
			.addr = (uintptr_t)(m->rbuf + (serial % m->max_wr) * SRQ_MSG),
			.length = SRQ_MSG, .lkey = m->mr->lkey,
		};
		struct ibv_recv_wr wr = { .wr_id = serial, .sg_list = &sge, .num_sge = 1 }, *bad;
		int ret = ibv_post_srq_recv(m->srq, &wr, &bad);

		if (ret != 0)
			fail("ibv_post_srq_recv (%" PRIu64 " posted, %" PRIu64 " taken, max_wr "
			     "%u): %s", m->rposted - 1, m->rtaken, m->max_wr, strerror(ret));
	}
}

/*
 * A receive completion of a batch of n SENDs whose receives start at serial first. The
 * SRQ hands out its receives in the order posted: the batch takes the next n serials,
 * each once, each QP's in increasing order (last: the QP's latest, plus one), and each
 * QP receives its sender's SENDs in the order sent.
 */
static void
srq_check_recv(struct srq_iter *m, const struct ibv_wc *w, uint64_t first, uint32_t n,
	       bool *taken, uint64_t *last, const char *what)
{
	unsigned int q = m->nq == 2 && w->qp_num == m->rx[1]->qp_num ? 1 : 0;
	const uint8_t *p = m->rbuf + (w->wr_id % m->max_wr) * SRQ_MSG;
	const uint8_t *want = m->sbuf + ((size_t)q * m->max_wr + m->rseen[q] % m->max_wr) *
			      SRQ_MSG;
	uint32_t hdr[3];

	expect_wc(w, IBV_WC_RECV, what);
	if (w->qp_num != m->rx[q]->qp_num)
		fail("%s: a receive completion of QP %#x, not a receiver", what, w->qp_num);
	if (w->wr_id < first || w->wr_id >= first + n || taken[w->wr_id - first] ||
	    w->wr_id + 1 <= last[q])
		fail("%s: pair %u's receive is wr_id %" PRIu64 ", want one of %" PRIu64 "..%"
		     PRIu64 " not taken yet, above its previous (%" PRId64 ")", what, q,
		     w->wr_id, first, first + n - 1, (int64_t)last[q] - 1);
	taken[w->wr_id - first] = true;
	last[q] = w->wr_id + 1;
	memcpy(hdr, p, sizeof(hdr));
	if (w->byte_len != SRQ_MSG || memcmp(p, want, SRQ_MSG) != 0)
		fail("%s: pair %u's receive (wr_id %" PRIu64 ", %u bytes) holds SEND %u of pair "
		     "%u, want SEND %u (%d bytes, in order)", what, q, w->wr_id, w->byte_len,
		     hdr[2], hdr[1], m->rseen[q], SRQ_MSG);
	m->rseen[q]++;
	m->rtaken++;
}

/* n SENDs spread over the pairs at random, then all their completions, both sides. */
static void
srq_send(struct srq_iter *m, uint32_t n)
{
	static struct ibv_wc wc[4 * SRQ_MAX];
	static bool taken[2 * SRQ_MAX];
	uint64_t first = m->rtaken, last[2] = { 0, 0 };
	uint32_t i;
	char what[64];
	int got;

	if (n == 0)
		return;
	memset(taken, 0, n * sizeof(taken[0]));
	for (i = 0; i < n; i++) {
		unsigned int q = m->nq == 2 && one_in(2) ? 1 : 0;
		uint32_t seq = m->sent[q]++;
		uint8_t *p = m->sbuf + ((size_t)q * m->max_wr + seq % m->max_wr) * SRQ_MSG;
		uint32_t hdr[3] = { (uint32_t)iter, q, seq };
		struct ibv_sge sge = { .addr = (uintptr_t)p, .length = SRQ_MSG,
				       .lkey = m->mr->lkey };
		struct ibv_send_wr wr = { .wr_id = seq, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND }, *bad;
		int ret;

		memcpy(p, hdr, sizeof(hdr));
		pattern_fill(p + sizeof(hdr), SRQ_MSG - sizeof(hdr), fill_seed(q) + seq);
		ret = ibv_post_send(m->tx[q], &wr, &bad);
		if (ret != 0)
			fail("ibv_post_send SEND %u of pair %u: %s", seq, q, strerror(ret));
	}
	m->s->sends += n;
	snprintf(what, sizeof(what), "%u SENDs and their receives", n);
	wait_wcs(m->cq, wc, 2 * (int)n, what);
	for (got = 0; got < 2 * (int)n; got++) {
		struct ibv_wc *w = &wc[got];
		unsigned int q;

		if (w->opcode == IBV_WC_SEND || w->status != IBV_WC_SUCCESS) {
			expect_wc(w, IBV_WC_SEND, what);
			q = m->nq == 2 && w->qp_num == m->tx[1]->qp_num ? 1 : 0;
			if (w->qp_num != m->tx[q]->qp_num)
				fail("%s: a send completion of QP %#x, not a sender", what,
				     w->qp_num);
			if (w->wr_id != m->sdone[q])
				fail("%s: pair %u's send completion is wr_id %" PRIu64 ", want %u "
				     "(in order)", what, q, w->wr_id, m->sdone[q]);
			m->sdone[q]++;
			continue;
		}
		srq_check_recv(m, w, first, n, taken, last, what);
	}
	if (m->rtaken != first + n)
		fail("%s: %" PRIu64 " receives taken, want %u", what, m->rtaken - first, n);
	expect_cq_empty(m->cq, what);
}

static void
srq_expect_limit(struct srq_iter *m, uint32_t want)
{
	struct ibv_srq_attr a;

	if (ibv_query_srq(m->srq, &a) != 0)
		fail("ibv_query_srq: %s", strerror(errno));
	if (a.srq_limit != want)
		fail("ibv_query_srq: srq_limit %u, want %u%s", a.srq_limit, want,
		     want == 0 ? " (the event disarms it)" : " (armed)");
	if (a.max_wr < m->max_wr)
		fail("ibv_query_srq: max_wr %u, want at least %u", a.max_wr, m->max_wr);
}

/*
 * The next event that is not the port's, within ms: false if none came. The port's own
 * (its link going down and coming back: the droced at the other end restarted) are
 * acknowledged and passed over, as an application that only watches its SRQ would.
 */
static bool
srq_next_event(struct srq_iter *m, struct ibv_async_event *ev, int ms, const char *when)
{
	uint64_t end = now_ms() + (uint64_t)ms;

	for (;;) {
		uint64_t now = now_ms();

		if (!fd_readable(m->d->ctx->async_fd, now < end ? (int)(end - now) : 0))
			return false;
		if (ibv_get_async_event(m->d->ctx, ev) != 0)
			fail("%s: poll() said readable, ibv_get_async_event: %s", when,
			     strerror(errno));
		if (ev->event_type != IBV_EVENT_PORT_ACTIVE && ev->event_type != IBV_EVENT_PORT_ERR)
			return true;
		ibv_ack_async_event(ev);
		m->s->port_events++;
	}
}

static void
srq_expect_quiet(struct srq_iter *m, int ms, const char *when)
{
	struct ibv_async_event ev;

	if (srq_next_event(m, &ev, ms, when))
		fail("%s: unexpected event %s", when, ibv_event_type_str(ev.event_type));
}

/* One round: arm at a random limit, go down to it (no event), then below (one event). */
static void
srq_round(struct srq_iter *m, uint32_t outstanding)
{
	struct ibv_srq_attr lim;
	struct ibv_async_event ev;
	uint32_t limit = (uint32_t)draw(1, outstanding), extra;
	bool exact = one_in(2);
	char when[96];

	lim.srq_limit = limit;
	if (ibv_modify_srq(m->srq, &lim, IBV_SRQ_LIMIT) != 0)
		fail("ibv_modify_srq(IBV_SRQ_LIMIT %u): %s", limit, strerror(errno));
	srq_expect_limit(m, limit);
	srq_expect_quiet(m, 0, "armed above the limit");
	/* Down to the limit, not below: 10.2.9.4 raises the event below it. */
	extra = (uint32_t)draw(0, limit - 1);
	if (exact) {
		srq_send(m, outstanding - limit);
		snprintf(when, sizeof(when), "%u receives left, limit %u", limit, limit);
		srq_expect_quiet(m, QUIET_MS, when);
		srq_expect_limit(m, limit);
		srq_send(m, 1 + extra);
		m->s->exact++;
	} else {
		srq_send(m, outstanding - limit + 1 + extra);
	}
	snprintf(when, sizeof(when), "IBV_EVENT_SRQ_LIMIT_REACHED (%u receives left, limit %u)",
		 limit - 1 - extra, limit);
	if (!srq_next_event(m, &ev, WAIT_MS, when))
		hang("no %s within %d ms", when, WAIT_MS);
	if (ev.event_type != IBV_EVENT_SRQ_LIMIT_REACHED || ev.element.srq != m->srq)
		fail("want %s for SRQ %p, got %s (element %p)", when, (void *)m->srq,
		     ibv_event_type_str(ev.event_type), ev.element.srq);
	ibv_ack_async_event(&ev);
	m->s->events++;
	srq_expect_limit(m, 0);
	srq_expect_quiet(m, 0, "after the limit event (it is raised once)");
}

static void
srq_iteration(struct dev *d, struct srq_stats *s)
{
	struct srq_iter m = { .d = d, .s = s };
	uint32_t cap = d->attr.max_srq_wr < SRQ_MAX ? (uint32_t)d->attr.max_srq_wr : SRQ_MAX;
	struct ibv_srq_init_attr sa = { .attr = { .max_sge = 1 } };
	unsigned int q, rounds, r;
	size_t len;
	uint32_t outstanding;
	int ret;

	m.nq = one_in(2) ? 2 : 1;
	m.pd = pd_new(d->ctx);
	sa.attr.max_wr = (uint32_t)draw(SRQ_MIN, cap);
	m.srq = ibv_create_srq(m.pd, &sa);
	if (m.srq == NULL)
		fail("ibv_create_srq(max_wr %u): %s", sa.attr.max_wr, strerror(errno));
	/* What it granted: at least what was asked (the rings are powers of two). */
	m.max_wr = sa.attr.max_wr;
	if (m.max_wr > SRQ_MAX * 2)
		m.max_wr = SRQ_MAX * 2;
	if (m.max_wr < s->smallest)
		s->smallest = m.max_wr;
	if (m.max_wr > s->largest)
		s->largest = m.max_wr;
	m.cq = cq_new(d->ctx, 2 * (int)m.max_wr + 2);
	len = (2 + 1) * (size_t)m.max_wr * SRQ_MSG;
	m.sbuf = calloc(1, len);
	if (m.sbuf == NULL)
		fail("calloc(%zu): out of memory", len);
	m.rbuf = m.sbuf + 2 * (size_t)m.max_wr * SRQ_MSG;
	m.mr = mr_new(m.pd, m.sbuf, len, IBV_ACCESS_LOCAL_WRITE, "messages");
	for (q = 0; q < m.nq; q++) {
		m.tx[q] = rc_qp(m.pd, m.cq, m.cq, NULL, m.max_wr, 1, 0);
		m.rx[q] = rc_qp(m.pd, m.cq, m.cq, m.srq, 1, 0, 0);
		rc_connect(m.tx[q], m.rx[q]);
	}
	if (m.nq == 2)
		s->srqs2++;
	srq_post_recvs(&m, (uint32_t)draw(2, m.max_wr));
	rounds = (unsigned int)draw(1, SRQ_MAX_ROUNDS);
	for (r = 0; r < rounds; r++) {
		outstanding = (uint32_t)(m.rposted - m.rtaken);
		srq_round(&m, outstanding);
		/* Refilled to a new count at random, at least what is left (plus one). */
		outstanding = (uint32_t)(m.rposted - m.rtaken);
		srq_post_recvs(&m, (uint32_t)draw(1, m.max_wr - outstanding));
	}
	srq_expect_quiet(&m, 0, "at the end of the iteration");
	for (q = 0; q < m.nq; q++) {
		qp_del(m.tx[q]);
		qp_del(m.rx[q]);
	}
	ret = ibv_destroy_srq(m.srq);
	if (ret != 0)
		fail("ibv_destroy_srq: %s", strerror(ret));
	mr_del(m.mr, "messages");
	cq_del(m.cq);
	pd_del(m.pd);
	free(m.sbuf);
}

static void
case_srq(void)
{
	struct srq_stats s = { .smallest = UINT32_MAX };
	struct dev d;
	unsigned long i;

	vt_watch(ITER_WATCHDOG_S, EXIT_HANG);
	dev_open(&d);
	vt_unwatch();
	/* Nothing of anyone else's may be queued: every event read here must be ours. */
	if (fd_readable(d.ctx->async_fd, 0))
		fail("async_fd readable on a new context");
	for (i = 0; i < o.iters; i++) {
		iter_begin(i);
		srq_iteration(&d, &s);
		iter_end();
	}
	vt_watch(ITER_WATCHDOG_S, EXIT_HANG);
	dev_close(&d);
	vt_unwatch();
	printf("verbs_churn srq: ok %lu iterations (SRQs of %u to %u WRs, %lu with two QPs, "
	       "%lu limit events, %lu of them after a check at the limit itself, %lu SENDs, "
	       "%lu port events passed over",
	       o.iters, s.smallest, s.largest, s.srqs2, s.events, s.exact, s.sends,
	       s.port_events);
}

/* ---- Case mcast ---- */

struct mc_stats {
	unsigned long joins, doubles, sent, looped, echoes, leaves, by_destroy, again,
		      undelivered, foreign;
};

struct mc_group {
	struct sockaddr_in sin;
	struct ibv_ah_attr ah_attr;
	struct ibv_ah *ah;
	bool joined, seen;
};

struct mc_msg {
	uint32_t magic, pid, iter, n, group;
};

struct mc_iter {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;		/* MC_RECVS receive slots, then one send slot */
	struct mc_group g[2];
	unsigned int ng;
	uint32_t n;		/* SENDs so far */
	uint8_t copies[MC_MAX_SENDS];	/* of each SEND, come back */
	bool expected[MC_MAX_SENDS];	/* each SEND: to a group the QP is in */
	struct mc_stats *s;
};

#define MC_SLOT		(MC_GRH + MC_MSG)

static void
mc_post_recv(struct mc_iter *m, unsigned int slot)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(m->buf + (size_t)slot * MC_SLOT),
			       .length = MC_SLOT, .lkey = m->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;
	int ret = ibv_post_recv(m->qp, &wr, &bad);

	if (ret != 0)
		fail("ibv_post_recv on the UD QP: %s", strerror(ret));
}

static void
mc_join_events(struct mc_iter *m)
{
	unsigned int i, j;

	for (i = 0; i < m->ng; i++) {
		struct rdma_cm_event *ev;
		const struct rdma_ud_param *ud;
		struct mc_group *g = NULL;
		uint8_t mgid[16] = { [10] = 0xff, [11] = 0xff };

		if (!fd_readable(m->ch->fd, WAIT_MS))
			hang("%u of %u RDMA_CM_EVENT_MULTICAST_JOIN within %d ms", i, m->ng,
			     WAIT_MS);
		if (rdma_get_cm_event(m->ch, &ev) != 0)
			fail("rdma_get_cm_event: %s", strerror(errno));
		if (ev->event != RDMA_CM_EVENT_MULTICAST_JOIN || ev->status != 0)
			fail("want RDMA_CM_EVENT_MULTICAST_JOIN, got %s status %d",
			     rdma_event_str(ev->event), ev->status);
		if (ev->id != m->id)
			fail("the join's event names id %p, want %p", (void *)ev->id,
			     (void *)m->id);
		ud = &ev->param.ud;
		for (j = 0; j < m->ng; j++)
			if (ud->private_data == &m->g[j] && !m->g[j].seen)
				g = &m->g[j];
		if (g == NULL)
			fail("the join's event has context %p: none of the joins' (%p, %p) not "
			     "yet reported", ud->private_data, (void *)&m->g[0],
			     m->ng > 1 ? (void *)&m->g[1] : NULL);
		g->seen = true;
		memcpy(mgid + 12, &g->sin.sin_addr, 4);
		if (ud->qp_num != MC_QPN || ud->qkey != RDMA_UDP_QKEY)
			fail("the join's event: QPN %#x, Q_Key %#x, want %#x and %#x", ud->qp_num,
			     ud->qkey, MC_QPN, RDMA_UDP_QKEY);
		if (!ud->ah_attr.is_global || memcmp(ud->ah_attr.grh.dgid.raw, mgid, 16) != 0 ||
		    ud->ah_attr.port_num != 1 || ud->ah_attr.grh.hop_limit == 0 ||
		    ud->ah_attr.grh.sgid_index >= 16)
			fail("the join's event: AH is_global %u, port %u, hop limit %u, SGID "
			     "index %u, DGID %s; want global, port 1, a hop limit, an SGID "
			     "index, the group's ::ffff:%s", ud->ah_attr.is_global,
			     ud->ah_attr.port_num, ud->ah_attr.grh.hop_limit,
			     ud->ah_attr.grh.sgid_index,
			     inet_ntop(AF_INET6, ud->ah_attr.grh.dgid.raw, (char[64]){ 0 }, 64),
			     inet_ntoa(g->sin.sin_addr));
		g->ah_attr = ud->ah_attr;
		if (rdma_ack_cm_event(ev) != 0)
			fail("rdma_ack_cm_event: %s", strerror(errno));
		g->ah = ibv_create_ah(m->pd, &g->ah_attr);
		if (g->ah == NULL)
			fail("ibv_create_ah from the join's event: %s", strerror(errno));
		m->s->joins++;
	}
}

/*
 * A UD SEND to group gi (its own message n), then the QP's completions: the SEND's, and,
 * when expect, the message back through the group; otherwise QUIET_MS with none of it.
 * Packets of other programs (another soak run on the same group) are counted, not failed.
 * A message may come back twice: the port loops it back to its own QPs, and a link that
 * reflects the port's own frames (net_ring0 is such a loop; a switch is not) brings it in
 * again. A third copy, or one of a message never sent, is a failure.
 */
static void
mc_send(struct mc_iter *m, unsigned int gi, bool expect)
{
	struct mc_group *g = &m->g[gi];
	uint8_t *p = m->buf + (size_t)MC_RECVS * MC_SLOT;
	struct mc_msg msg = { MC_MAGIC, (uint32_t)getpid(), (uint32_t)iter, m->n++, gi };
	struct ibv_sge sge = { .addr = (uintptr_t)p, .length = MC_MSG, .lkey = m->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = msg.n, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.wr.ud = { .ah = g->ah, .remote_qpn = MC_QPN, .remote_qkey = RDMA_UDP_QKEY },
	}, *bad;
	uint64_t deadline = now_ms() + WAIT_MS, quiet_until = 0;
	bool sent = false, back = false;
	int ret;

	memcpy(p, &msg, sizeof(msg));
	pattern_fill(p + sizeof(msg), MC_MSG - sizeof(msg), fill_seed(gi) + msg.n);
	if (msg.n >= MC_MAX_SENDS)
		fail("more than %d UD SENDs in an iteration", MC_MAX_SENDS);
	m->expected[msg.n] = expect;
	ret = ibv_post_send(m->qp, &wr, &bad);
	if (ret != 0)
		fail("ibv_post_send(UD SEND to %s): %s", inet_ntoa(g->sin.sin_addr),
		     strerror(ret));
	m->s->sent++;
	for (;;) {
		struct ibv_wc wc;
		const uint8_t *slot;
		struct mc_msg got;
		int n = ibv_poll_cq(m->cq, 1, &wc);

		if (n < 0)
			fail("ibv_poll_cq on the UD QP's CQ: %d", n);
		if (n == 0) {
			uint64_t now = now_ms();

			if (sent && (expect ? back : quiet_until != 0 && now >= quiet_until))
				break;
			if (now > deadline)
				hang("UD SEND to %s: %s within %d ms", inet_ntoa(g->sin.sin_addr),
				     sent ? "no packet back" : "no send completion", WAIT_MS);
			nap();
			continue;
		}
		if (wc.status != IBV_WC_SUCCESS)
			fail("a completion of the UD QP (wr_id %" PRIu64 ", opcode %d): %s, want "
			     "success", wc.wr_id, wc.opcode, ibv_wc_status_str(wc.status));
		if (wc.opcode == IBV_WC_SEND) {
			sent = true;
			quiet_until = now_ms() + QUIET_MS;
			continue;
		}
		expect_wc(&wc, IBV_WC_RECV, "a UD receive");
		slot = m->buf + (size_t)wc.wr_id * MC_SLOT;
		memcpy(&got, slot + MC_GRH, sizeof(got));
		if (wc.byte_len < MC_GRH + sizeof(got) || got.magic != MC_MAGIC ||
		    got.pid != msg.pid) {
			m->s->foreign++;
		} else if (got.iter != msg.iter || got.n > msg.n || got.group >= m->ng) {
			fail("the UD QP received message %u (group %u, iteration %u), want %u "
			     "(group %u) or an earlier one", got.n, got.group, got.iter, msg.n,
			     gi);
		} else if (!m->expected[got.n]) {
			fail("a SEND to %s, a group the QP had left, came back to it (message "
			     "%u)", inet_ntoa(m->g[got.group].sin.sin_addr), got.n);
		} else if (m->copies[got.n]++ != 0 || got.n != msg.n) {
			/* A copy after the first (whose message was awaited until it came). */
			if (m->copies[got.n] > 2)
				fail("message %u came back %u times, want once (twice on a link "
				     "that reflects the port's frames)", got.n, m->copies[got.n]);
			m->s->echoes++;
		} else {
			/* The GRH area holds the IPv4 header in its last 20 bytes: the group is
			 * its destination. */
			if (!(wc.wc_flags & IBV_WC_GRH) || wc.byte_len != MC_GRH + MC_MSG ||
			    wc.src_qp != m->qp->qp_num ||
			    memcmp(slot + MC_GRH - 4, &g->sin.sin_addr, 4) != 0 ||
			    memcmp(slot + MC_GRH, p, MC_MSG) != 0)
				fail("the message back from %s: GRH flag %d, %u bytes, source QP "
				     "%#x, destination %u.%u.%u.%u; want the GRH, %d bytes, QP %#x, "
				     "the group, the bytes sent", inet_ntoa(g->sin.sin_addr),
				     !!(wc.wc_flags & IBV_WC_GRH), wc.byte_len, wc.src_qp,
				     slot[MC_GRH - 4], slot[MC_GRH - 3], slot[MC_GRH - 2],
				     slot[MC_GRH - 1], MC_GRH + MC_MSG, m->qp->qp_num);
			back = true;
			m->s->looped++;
		}
		mc_post_recv(m, (unsigned int)wc.wr_id);
	}
}

static void
mc_leave(struct mc_iter *m, unsigned int gi, bool send_after)
{
	struct mc_group *g = &m->g[gi];

	if (rdma_leave_multicast(m->id, (struct sockaddr *)&g->sin) != 0)
		fail("rdma_leave_multicast(%s): %s", inet_ntoa(g->sin.sin_addr), strerror(errno));
	g->joined = false;
	m->s->leaves++;
	if (one_in(3)) {
		errno = 0;
		if (rdma_leave_multicast(m->id, (struct sockaddr *)&g->sin) == 0 ||
		    errno != EADDRNOTAVAIL)
			fail("rdma_leave_multicast(%s) a second time: %s, want EADDRNOTAVAIL",
			     inet_ntoa(g->sin.sin_addr), errno ? strerror(errno) : "success");
		m->s->again++;
	}
	if (send_after) {
		mc_send(m, gi, false);
		m->s->undelivered++;
	}
}

static void
mc_iteration(struct mc_stats *s)
{
	struct mc_iter m = { .s = s };
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr = o.bind };
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_UD, .sq_sig_all = 1,
		.cap = { .max_send_wr = MC_SENDS, .max_recv_wr = MC_RECVS, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	bool sends = one_in(2);
	unsigned int i, first;
	size_t len = (MC_RECVS + 1) * (size_t)MC_SLOT;
	int ret;

	m.ch = rdma_create_event_channel();
	if (m.ch == NULL)
		fail("rdma_create_event_channel: %s", strerror(errno));
	if (rdma_create_id(m.ch, &m.id, NULL, RDMA_PS_UDP) != 0)
		fail("rdma_create_id(RDMA_PS_UDP): %s", strerror(errno));
	if (rdma_bind_addr(m.id, (struct sockaddr *)&sin) != 0)
		fail("rdma_bind_addr(%s): %s", inet_ntoa(o.bind), strerror(errno));
	if (m.id->verbs == NULL)
		fail("rdma_bind_addr(%s): the id has no device", inet_ntoa(o.bind));
	m.pd = pd_new(m.id->verbs);
	m.cq = cq_new(m.id->verbs, MC_RECVS + MC_SENDS);
	qa.send_cq = qa.recv_cq = m.cq;
	if (rdma_create_qp(m.id, m.pd, &qa) != 0)
		fail("rdma_create_qp(UD): %s", strerror(errno));
	m.qp = m.id->qp;
	m.buf = calloc(1, len);
	if (m.buf == NULL)
		fail("calloc(%zu): out of memory", len);
	m.mr = mr_new(m.pd, m.buf, len, IBV_ACCESS_LOCAL_WRITE, "UD messages");
	for (i = 0; i < MC_RECVS; i++)
		mc_post_recv(&m, i);

	/* One group or two at once, 239.0.0.0/8 (organisation-local scope), distinct. */
	m.ng = one_in(3) ? 2 : 1;
	if (m.ng == 2)
		s->doubles++;
	for (i = 0; i < m.ng; i++) {
		uint32_t a;

		do {
			a = 0xEF000000u | (uint32_t)draw(1, 0xFFFFFE);
		} while (i == 1 && htonl(a) == m.g[0].sin.sin_addr.s_addr);
		m.g[i].sin.sin_family = AF_INET;
		m.g[i].sin.sin_addr.s_addr = htonl(a);
		if (rdma_join_multicast(m.id, (struct sockaddr *)&m.g[i].sin, &m.g[i]) != 0)
			fail("rdma_join_multicast(%s): %s", inet_ntoa(m.g[i].sin.sin_addr),
			     strerror(errno));
		m.g[i].joined = true;
	}
	mc_join_events(&m);
	if (sends)
		for (i = 0; i < m.ng; i++)
			mc_send(&m, i, true);
	/* Left in an order at random; the last one now and then by rdma_destroy_id. */
	first = m.ng == 2 && one_in(2) ? 1 : 0;
	for (i = 0; i < m.ng; i++) {
		unsigned int gi = (first + i) % m.ng;

		if (i == m.ng - 1 && one_in(4)) {
			s->by_destroy++;
			break;
		}
		mc_leave(&m, gi, sends);
	}
	/* No CM event but the joins': nothing else may be queued for the id. */
	if (fd_readable(m.ch->fd, 0)) {
		struct rdma_cm_event *ev;

		if (rdma_get_cm_event(m.ch, &ev) == 0)
			fail("an unexpected CM event: %s status %d", rdma_event_str(ev->event),
			     ev->status);
		fail("the channel's fd readable, rdma_get_cm_event: %s", strerror(errno));
	}
	for (i = 0; i < m.ng; i++) {
		ret = ibv_destroy_ah(m.g[i].ah);
		if (ret != 0)
			fail("ibv_destroy_ah: %s", strerror(ret));
	}
	rdma_destroy_qp(m.id);
	mr_del(m.mr, "UD messages");
	cq_del(m.cq);
	pd_del(m.pd);
	if (rdma_destroy_id(m.id) != 0)
		fail("rdma_destroy_id: %s", strerror(errno));
	rdma_destroy_event_channel(m.ch);
	free(m.buf);
}

static void
case_mcast(void)
{
	struct mc_stats s = { 0 };
	unsigned long i;

	for (i = 0; i < o.iters; i++) {
		iter_begin(i);
		mc_iteration(&s);
		iter_end();
	}
	printf("verbs_churn mcast: ok %lu iterations (%lu joins, %lu iterations with two "
	       "groups, %lu of %lu UD SENDs back through the group (%lu echoes from the "
	       "link), %lu leaves, %lu of them repeated (EADDRNOTAVAIL), %lu SENDs to a group "
	       "left not delivered, %lu joins left to rdma_destroy_id, %lu foreign packets",
	       o.iters, s.joins, s.doubles, s.looped, s.sent - s.undelivered, s.echoes, s.leaves,
	       s.again, s.undelivered, s.by_destroy, s.foreign);
}

/* ---- Command line ---- */

static const struct churn_case cases[] = {
	{ "mr", case_mr },
	{ "cq", case_cq },
	{ "srq", case_srq },
	{ "mcast", case_mcast },
};

#define NB_CASES	(sizeof(cases) / sizeof(cases[0]))

static uint64_t
number(const char *s, const char *option, uint64_t min, uint64_t max)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0 || end == s || *end != '\0' || s[0] == '-' || v < min || v > max)
		usage_error("%s %s: want %" PRIu64 "..%" PRIu64, option, s, min, max);
	return v;
}

int
main(int argc, char **argv)
{
	size_t order[NB_CASES], i, j, k, nrun = 0;
	struct timespec ts;
	int c;

	o.iters = DEFAULT_ITERS;
	clock_gettime(CLOCK_REALTIME, &ts);
	/* Small enough to type back in: -s reproduces a run. */
	o.seed = (uint32_t)mix((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec +
			       (uint64_t)getpid());
	while ((c = getopt(argc, argv, "n:s:b:h")) != -1) {
		switch (c) {
		case 'n':
			o.iters = number(optarg, "-n", 1, MAX_ITERS);
			break;
		case 's':
			o.seed = number(optarg, "-s", 0, UINT64_MAX);
			break;
		case 'b':
			if (inet_pton(AF_INET, optarg, &o.bind) != 1)
				usage_error("-b %s: not an IPv4 address", optarg);
			o.have_bind = true;
			break;
		case 'h':
			printf("usage: verbs_churn [-n ITER] [-s SEED] [-b IPV4] "
			       "mr|cq|srq|mcast|all...\n");
			return 0;
		default:
			usage_error("unknown option");
		}
	}
	if (optind == argc)
		usage_error("no case");
	/* The cases in the order named, each once. */
	for (; optind < argc; optind++) {
		bool all = strcmp(argv[optind], "all") == 0, found = all;

		for (j = 0; j < NB_CASES; j++) {
			if (!all && strcmp(argv[optind], cases[j].name) != 0)
				continue;
			found = true;
			for (k = 0; k < nrun && order[k] != j; k++)
				;
			if (k == nrun)
				order[nrun++] = j;
		}
		if (!found)
			usage_error("no case %s", argv[optind]);
	}
	for (k = 0; k < nrun; k++)
		if (cases[order[k]].run == case_mcast && !o.have_bind)
			usage_error("mcast needs -b, droced's own IPv4 address");
	page = (size_t)sysconf(_SC_PAGESIZE);
	printf("verbs_churn: seed %" PRIu64 ", %lu iterations per case\n", o.seed, o.iters);
	fflush(stdout);
	for (k = 0; k < nrun; k++) {
		uint64_t t0;

		i = order[k];
		case_name = cases[i].name;
		case_idx = (unsigned int)i;
		snprintf(fail_prefix, sizeof(fail_prefix), "verbs_churn %s: FAIL", case_name);
		vt_init(fail_prefix);
		/* Each case its own stream: alone or among others, a seed makes the same run. */
		rng = mix(o.seed ^ mix(i + 1)) | 1;
		t0 = now_ms();
		cases[i].run();
		printf(", %.1f s)\n", (double)(now_ms() - t0) / 1000);
		fflush(stdout);
	}
	return 0;
}
