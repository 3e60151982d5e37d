/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * droce-bench-mr: what ibv_reg_mr and ibv_dereg_mr cost through droced (libdroce), per call
 * and per MiB, for devtools/bench-mr.sh. For each size, in this order:
 *   first     ibv_reg_mr on fresh private memory (every page written), then its dereg;
 *             a new mapping for each repetition
 *   repeated  the same buffer registered and deregistered again, N times
 *   held      one MR kept on the buffer, a second MR over it registered and
 *             deregistered N times (its pages are already where droced reaches them)
 *   file      a MAP_SHARED mapping of a POSIX shared memory file (/dev/shm) of the size,
 *             registered and deregistered N times; "refused=ERRNO" when the library
 *             refuses it
 * Every call is timed alone with CLOCK_MONOTONIC; the figures are medians. One line per
 * mode and size, "key=value ..." (or one JSON object with --json), that the script reads.
 * What changed between libdroce's versions, and the results: doc/performance.md, "Memory
 * registration (issue 24)".
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define MR_ACCESS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ)
#define MR_REPS_DEFAULT		5	/* fresh buffers for "first" */
#define MR_ITERS_DEFAULT	20	/* reg + dereg pairs for the other modes */
#define MR_SIZES_DEFAULT	"64K,1M,16M,256M"
#define MR_SIZES_MAX		16
#define MIB			(1024.0 * 1024.0)
/* Each size's buffers hold their own byte, so a page from an earlier size would show. */
#define MR_SEED_BASE		0xa0

enum mr_mode {
	MODE_FIRST,
	MODE_REPEATED,
	MODE_HELD,
	MODE_FILE,
	MODE_COUNT,
};

static const char *const mode_names[MODE_COUNT] = {
	[MODE_FIRST] = "first",
	[MODE_REPEATED] = "repeated",
	[MODE_HELD] = "held",
	[MODE_FILE] = "file",
};

struct bench_mr {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	size_t page;
	unsigned int reps;
	unsigned int iters;
	bool modes[MODE_COUNT];
	bool json;
	double *reg_us;		/* one per call of the mode being measured */
	double *dereg_us;
	double *fill_us;	/* first: writing every page of the fresh mapping */
};

/* The shared memory file of the file mode while it exists, for die() to remove. */
static char shm_name[64];

static void
die(const char *what, int err)
{
	if (shm_name[0] != '\0')
		shm_unlink(shm_name);
	fprintf(stderr, "droce-bench-mr: %s: %s\n", what, strerror(err));
	exit(1);
}

static double
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Sorts v in place: the median of its n values (the mean of the middle two when n is even). */
static double
median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * Issue 24's promise: registering and deregistering never changes what the program sees.
 * One byte per page is enough to catch a page that came back empty or from elsewhere.
 */
static void
check(const struct bench_mr *b, const uint8_t *buf, size_t size, uint8_t seed)
{
	size_t off;

	for (off = 0; off < size; off += b->page)
		if (buf[off] != seed)
			die("the buffer changed under registration", EIO);
	if (buf[size - 1] != seed)
		die("the buffer changed under registration", EIO);
}

static uint8_t *
map_fresh(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap", errno);
	return p;
}

/* One timed ibv_reg_mr: the MR, or NULL with errno set; *us its time. */
static struct ibv_mr *
reg_timed(const struct bench_mr *b, void *buf, size_t size, double *us)
{
	double t = now_us();
	struct ibv_mr *mr = ibv_reg_mr(b->pd, buf, size, MR_ACCESS);

	*us = now_us() - t;
	return mr;
}

static void
dereg_timed(struct ibv_mr *mr, double *us)
{
	double t = now_us();
	int rc = ibv_dereg_mr(mr);

	*us = now_us() - t;
	if (rc != 0)
		die("ibv_dereg_mr", rc);
}

/*
 * One mode's line. first also reports fill: what writing every page of a fresh mapping
 * cost in the same run, the price of new pages on this machine that both a copy into a
 * memfd and a copy back into private memory pay.
 */
static void
report(const struct bench_mr *b, enum mr_mode mode, size_t size, unsigned int n)
{
	double reg = median(b->reg_us, n), dereg = median(b->dereg_us, n);
	double mib = size / MIB;

	if (b->json)
		printf("{\"mode\":\"%s\",\"size\":%zu,\"calls\":%u,\"reg_us\":%.2f,"
		       "\"dereg_us\":%.2f,\"reg_us_per_mib\":%.2f,\"dereg_us_per_mib\":%.2f",
		       mode_names[mode], size, n, reg, dereg, reg / mib, dereg / mib);
	else
		printf("mode=%s size=%zu calls=%u reg_us=%.2f dereg_us=%.2f reg_us_per_mib=%.2f "
		       "dereg_us_per_mib=%.2f", mode_names[mode], size, n, reg, dereg, reg / mib,
		       dereg / mib);
	if (mode == MODE_FIRST) {
		double fill = median(b->fill_us, n);

		printf(b->json ? ",\"fill_us\":%.2f,\"fill_us_per_mib\":%.2f" :
		       " fill_us=%.2f fill_us_per_mib=%.2f", fill, fill / mib);
	}
	printf(b->json ? "}\n" : "\n");
	fflush(stdout);
}

/* The file mode's line when the library refuses the mapping: the errno's name. */
static void
report_refused(const struct bench_mr *b, size_t size, int err)
{
	const char *name = strerrorname_np(err);

	if (b->json)
		printf("{\"mode\":\"%s\",\"size\":%zu,\"refused\":\"%s\"}\n",
		       mode_names[MODE_FILE], size, name != NULL ? name : "?");
	else
		printf("mode=%s size=%zu refused=%s\n", mode_names[MODE_FILE], size,
		       name != NULL ? name : "?");
	fflush(stdout);
}

/* One page registered and deregistered, untimed (see main and unmap_buffer). */
static void
page_round(const struct bench_mr *b)
{
	uint8_t *p = map_fresh(b->page);
	struct ibv_mr *mr;
	double unused;

	memset(p, 1, b->page);
	mr = reg_timed(b, p, b->page, &unused);
	if (mr == NULL)
		die("ibv_reg_mr (one page)", errno);
	dereg_timed(mr, &unused);
	munmap(p, b->page);
}

/*
 * Unmaps a measured buffer. The library before issue 24 closes the memfd of pages it moved
 * only in its next registration, which then frees those pages: an untimed registration
 * here keeps that free out of the next timed call.
 */
static void
unmap_buffer(const struct bench_mr *b, uint8_t *buf, size_t size)
{
	munmap(buf, size);
	page_round(b);
}

/*
 * first: reps fresh mappings, each registered and deregistered once. The last one is
 * returned, still mapped and holding seed, for the modes that reuse the buffer.
 */
static uint8_t *
run_first(struct bench_mr *b, size_t size, uint8_t seed)
{
	uint8_t *buf = NULL;
	unsigned int i;

	for (i = 0; i < b->reps; i++) {
		struct ibv_mr *mr;
		double t;

		if (buf != NULL)
			unmap_buffer(b, buf, size);
		buf = map_fresh(size);
		/* Every page written: the pages exist, as in a buffer the program has used. */
		t = now_us();
		memset(buf, seed, size);
		b->fill_us[i] = now_us() - t;
		mr = reg_timed(b, buf, size, &b->reg_us[i]);
		if (mr == NULL)
			die("ibv_reg_mr (first)", errno);
		dereg_timed(mr, &b->dereg_us[i]);
		check(b, buf, size, seed);
	}
	if (b->modes[MODE_FIRST])
		report(b, MODE_FIRST, size, b->reps);
	return buf;
}

/* reg + dereg of buf, iters times; with hold, under an MR that stays for them all. */
static void
run_again(struct bench_mr *b, enum mr_mode mode, uint8_t *buf, size_t size, uint8_t seed)
{
	struct ibv_mr *hold = NULL;
	double unused;
	unsigned int i;

	if (mode == MODE_HELD) {
		hold = reg_timed(b, buf, size, &unused);
		if (hold == NULL)
			die("ibv_reg_mr (held)", errno);
	}
	for (i = 0; i < b->iters; i++) {
		struct ibv_mr *mr = reg_timed(b, buf, size, &b->reg_us[i]);

		if (mr == NULL)
			die(mode == MODE_HELD ? "ibv_reg_mr (held, second MR)" :
			    "ibv_reg_mr (repeated)", errno);
		dereg_timed(mr, &b->dereg_us[i]);
	}
	if (hold != NULL)
		dereg_timed(hold, &unused);
	check(b, buf, size, seed);
	report(b, mode, size, b->iters);
}

/*
 * file: a shared mapping of a file under /dev/shm, which the library before issue 24
 * refuses and the one after registers in place. The name stays while the mapping is
 * measured, as an application's shared memory would keep it.
 */
static void
run_file(struct bench_mr *b, size_t size, uint8_t seed)
{
	uint8_t *buf;
	unsigned int i;
	int fd;

	snprintf(shm_name, sizeof(shm_name), "/droce-bench-mr-%d", (int)getpid());
	fd = shm_open(shm_name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0) {
		shm_name[0] = '\0';
		die("shm_open", errno);
	}
	if (ftruncate(fd, (off_t)size) != 0)
		die("ftruncate", errno);
	buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (buf == MAP_FAILED)
		die("mmap (shared)", errno);
	close(fd);
	memset(buf, seed, size);
	for (i = 0; i < b->iters; i++) {
		struct ibv_mr *mr = reg_timed(b, buf, size, &b->reg_us[i]);

		if (mr == NULL) {
			report_refused(b, size, errno);
			break;
		}
		dereg_timed(mr, &b->dereg_us[i]);
	}
	if (i == b->iters) {
		check(b, buf, size, seed);
		report(b, MODE_FILE, size, b->iters);
	}
	munmap(buf, size);
	shm_unlink(shm_name);
	shm_name[0] = '\0';
}

static void
run_size(struct bench_mr *b, size_t size, uint8_t seed)
{
	bool own = b->modes[MODE_FIRST] || b->modes[MODE_REPEATED] || b->modes[MODE_HELD];
	uint8_t *buf;

	if (own) {
		/* repeated and held start where first leaves the buffer: registered once. */
		buf = run_first(b, size, seed);
		if (b->modes[MODE_REPEATED])
			run_again(b, MODE_REPEATED, buf, size, seed);
		if (b->modes[MODE_HELD])
			run_again(b, MODE_HELD, buf, size, seed);
		/* Unmapped before the file mode: the library reads this process's mappings. */
		unmap_buffer(b, buf, size);
	}
	if (b->modes[MODE_FILE])
		run_file(b, size, seed);
}

static void
bench_open(struct bench_mr *b)
{
	struct ibv_device **list = ibv_get_device_list(NULL);

	if (list == NULL || list[0] == NULL)
		die("no RDMA device (is droced running? DROCE_SOCKET)", ENODEV);
	b->ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (b->ctx == NULL)
		die("ibv_open_device", errno);
	b->pd = ibv_alloc_pd(b->ctx);
	if (b->pd == NULL)
		die("ibv_alloc_pd", errno);
}

/* "64K", "1M", "2G" or bytes: the size, or 0 when it is not one. */
static size_t
parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	unsigned int shift = 0;

	if (end == s)
		return 0;
	switch (*end) {
	case 'K': case 'k':
		shift = 10;
		end++;
		break;
	case 'M': case 'm':
		shift = 20;
		end++;
		break;
	case 'G': case 'g':
		shift = 30;
		end++;
		break;
	default:
		break;
	}
	if (*end != '\0' || v == 0 || v > (SIZE_MAX >> shift))
		return 0;
	return (size_t)v << shift;
}

/* Comma-separated sizes into sizes[]: their count, or 0 on a bad list. */
static unsigned int
parse_sizes(char *list, size_t *sizes)
{
	unsigned int n = 0;
	char *save = NULL, *tok;

	for (tok = strtok_r(list, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		if (n == MR_SIZES_MAX)
			return 0;
		sizes[n] = parse_size(tok);
		if (sizes[n] == 0)
			return 0;
		n++;
	}
	return n;
}

static bool
parse_modes(char *list, bool *modes)
{
	char *save = NULL, *tok;
	int m;

	memset(modes, 0, MODE_COUNT * sizeof(*modes));
	for (tok = strtok_r(list, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		for (m = 0; m < MODE_COUNT && strcmp(tok, mode_names[m]) != 0; m++)
			;
		if (m == MODE_COUNT)
			return false;
		modes[m] = true;
	}
	return true;
}

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: droce-bench-mr [-s SIZES] [-m MODES] [-r REPS] [-n ITERS] [--json]\n"
		"What ibv_reg_mr and ibv_dereg_mr cost through droced (DROCE_SOCKET names the\n"
		"daemon), on the first device, one PD, access LOCAL_WRITE|REMOTE_WRITE|REMOTE_READ.\n"
		"Each call is timed alone (CLOCK_MONOTONIC); the figures are medians, per call and\n"
		"per MiB. Modes, for each size in turn:\n"
		"  first     fresh private anonymous memory, every page written: reg, then dereg\n"
		"            (a new mapping for each of REPS repetitions)\n"
		"  repeated  the same buffer again: reg + dereg, ITERS times\n"
		"  held      one MR kept on the buffer, a second MR over it: reg + dereg, ITERS\n"
		"            times (its pages already where droced reaches them)\n"
		"  file      a MAP_SHARED mapping of a /dev/shm file (shm_open) of the size:\n"
		"            reg + dereg, ITERS times; \"refused=ERRNO\" when refused\n"
		"Options:\n"
		"  -s, --sizes SIZES  comma-separated, with K, M or G (binary), default %s\n"
		"  -m, --modes MODES  comma-separated, default first,repeated,held,file (repeated\n"
		"                     and held run after first's repetitions even when first is\n"
		"                     not listed)\n"
		"  -r, --reps REPS    fresh buffers for first (default %d)\n"
		"  -n, --iters ITERS  reg + dereg pairs for repeated, held and file (default %d)\n"
		"      --json         one JSON object per line instead of key=value lines\n"
		"  -h, --help         this text\n"
		"Output, one line per mode and size:\n"
		"  mode=M size=BYTES calls=N reg_us=U dereg_us=U reg_us_per_mib=U dereg_us_per_mib=U\n"
		"  (first adds fill_us=U fill_us_per_mib=U: the memset of the fresh mapping, the\n"
		"  machine's price of new pages in the same run)\n"
		"  mode=file size=BYTES refused=ERRNO\n",
		MR_SIZES_DEFAULT, MR_REPS_DEFAULT, MR_ITERS_DEFAULT);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "sizes", required_argument, NULL, 's' },
		{ "modes", required_argument, NULL, 'm' },
		{ "reps", required_argument, NULL, 'r' },
		{ "iters", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'J' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct bench_mr b = { .reps = MR_REPS_DEFAULT, .iters = MR_ITERS_DEFAULT,
			      .modes = { true, true, true, true } };
	char sizes_arg[] = MR_SIZES_DEFAULT;
	char *sizes_list = sizes_arg;
	size_t sizes[MR_SIZES_MAX];
	unsigned int nb_sizes, i;
	int opt;

	while ((opt = getopt_long(argc, argv, "s:m:r:n:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			sizes_list = optarg;
			break;
		case 'm':
			if (!parse_modes(optarg, b.modes)) {
				fprintf(stderr, "droce-bench-mr: bad mode list '%s'\n", optarg);
				return 2;
			}
			break;
		case 'r':
			b.reps = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'n':
			b.iters = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'J':
			b.json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	nb_sizes = parse_sizes(sizes_list, sizes);
	if (nb_sizes == 0) {
		fprintf(stderr, "droce-bench-mr: bad size list (sizes such as 64K or 1M, at "
			"most %d)\n", MR_SIZES_MAX);
		return 2;
	}
	if (optind != argc || b.reps == 0 || b.iters == 0) {
		usage(stderr);
		return 2;
	}
	b.page = (size_t)sysconf(_SC_PAGESIZE);
	b.reg_us = calloc(b.reps > b.iters ? b.reps : b.iters, sizeof(*b.reg_us));
	b.dereg_us = calloc(b.reps > b.iters ? b.reps : b.iters, sizeof(*b.dereg_us));
	b.fill_us = calloc(b.reps, sizeof(*b.fill_us));
	if (b.reg_us == NULL || b.dereg_us == NULL || b.fill_us == NULL)
		die("calloc", ENOMEM);
	bench_open(&b);
	/*
	 * The library's one-time set-up (its page table, the userfaultfd probe, the fork
	 * handlers) is not the cost of the first size's first registration.
	 */
	page_round(&b);
	for (i = 0; i < nb_sizes; i++)
		run_size(&b, sizes[i], (uint8_t)(MR_SEED_BASE + i));
	ibv_dealloc_pd(b.pd);
	ibv_close_device(b.ctx);
	free(b.reg_us);
	free(b.dereg_us);
	free(b.fill_us);
	return 0;
}
