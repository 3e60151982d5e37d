/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * libdroce's registration pages (lib/verbs/verbs_pages.h) on their own: private memory
 * (malloc, posix_memalign, mmap, a stack buffer, a private file mapping) keeps its address
 * and contents when its pages move into memfds, the memfd pieces alias the application's
 * pages both ways, later registrations reuse pages already moved, pages no registration
 * holds become private memory again, no concurrent write is lost while pages move either
 * way, a forked child gets a copy (or, fork-safe, nothing), shared mappings are named in
 * place without moving, and bad ranges fail without side effects.
 */

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "droce_test.h"
#include "verbs_pages.h"

#define MAX_PIECES	8

static size_t
page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

static ino_t
fd_ino(int fd)
{
	struct stat st;

	CHECK(fstat(fd, &st) == 0);
	return st.st_ino;
}

/* The /proc/self/maps line of the mapping holding addr: its perms, file and offset there. */
struct maps_at {
	char perms[8];
	dev_t dev;
	ino_t ino;
	uint64_t off;		/* file offset of addr */
	char path[64];
};

static bool
maps_at(const void *addr, struct maps_at *m)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	bool found = false;

	CHECK(f != NULL);
	while (fgets(line, sizeof(line), f) != NULL) {
		unsigned long lo, hi, ino;
		unsigned long long pgoff;
		unsigned int maj, mnr;

		m->path[0] = '\0';
		if (sscanf(line, "%lx-%lx %7s %llx %x:%x %lu %63s", &lo, &hi, m->perms, &pgoff,
			   &maj, &mnr, &ino, m->path) < 7)
			continue;
		if ((uintptr_t)addr < lo || (uintptr_t)addr >= hi)
			continue;
		m->dev = makedev(maj, mnr);
		m->ino = (ino_t)ino;
		m->off = pgoff + ((uintptr_t)addr - lo);
		found = true;
		break;
	}
	fclose(f);
	return found;
}

/* Whether the page at addr is private memory of the process again (not one of our memfds). */
static bool
is_private_anon(const void *addr)
{
	struct maps_at m;

	CHECK(maps_at(addr, &m));
	return m.perms[3] == 'p' && m.ino == 0;
}

/*
 * Shares [addr, addr + len) into pieces and checks them: in order they cover exactly the
 * range aligned to pages of pg bytes; each memfd piece, mapped a second time, shows the
 * application's bytes, and a write on either side is seen on the other; each in-place piece
 * names the file the application maps there. Returns the number of pieces, whose fds are
 * closed; the references stay for the caller to release.
 */
static unsigned int
share_check_keep(struct verbs_pages *p, uint8_t *addr, size_t len, ino_t *inos, size_t pg,
		 struct verbs_piece *pieces)
{
	uintptr_t start = (uintptr_t)addr & ~(pg - 1);
	uintptr_t end = ((uintptr_t)addr + len + pg - 1) & ~(pg - 1);
	uint64_t first_off = 0, covered = 0;
	unsigned int n = 0, i;
	uint8_t *before = droce_test_malloc(len);

	memcpy(before, addr, len);
	CHECK_EQ_I64(verbs_pages_share(p, addr, len, pieces, MAX_PIECES, &n, &first_off), 0);
	CHECK(n >= 1);
	CHECK_EQ_U64(first_off, (uintptr_t)addr - start);
	/* Same address, same contents. */
	CHECK_MEM(addr, before, len);
	for (i = 0; i < n; i++) {
		/* Only the buffer's own bytes of each piece: the rest may be allocator redzones. */
		uintptr_t plo = start + covered, phi = plo + pieces[i].len;
		uintptr_t lo = plo > (uintptr_t)addr ? plo : (uintptr_t)addr;
		uintptr_t hi = phi < (uintptr_t)addr + len ? phi : (uintptr_t)addr + len;
		uint8_t *view, *v, *app = (uint8_t *)lo;
		struct maps_at m;

		CHECK_EQ_U64(pieces[i].addr, plo);
		CHECK_EQ_U64(pieces[i].off % pg, 0);
		CHECK_EQ_U64(pieces[i].len % pg, 0);
		CHECK(lo < hi);
		CHECK(maps_at((void *)plo, &m));
		CHECK_EQ_U64(m.dev, pieces[i].dev);
		CHECK_EQ_U64(m.ino, pieces[i].ino);
		CHECK_EQ_U64(m.off, pieces[i].off);
		CHECK(m.perms[3] == 's');
		if (pieces[i].fd < 0) {
			covered += pieces[i].len;
			continue;
		}
		view = mmap(NULL, pieces[i].len, PROT_READ | PROT_WRITE, MAP_SHARED, pieces[i].fd,
			    (off_t)pieces[i].off);
		CHECK(view != MAP_FAILED);
		v = view + (lo - plo);
		CHECK_MEM(v, app, hi - lo);
		/* A write through either mapping is seen through the other. */
		app[0] ^= 0x5A;
		CHECK_EQ_U64(v[0], app[0]);
		v[hi - lo - 1] ^= 0xA5;
		CHECK_EQ_U64(app[hi - lo - 1], v[hi - lo - 1]);
		app[0] ^= 0x5A;
		v[hi - lo - 1] ^= 0xA5;
		munmap(view, pieces[i].len);
		if (inos != NULL)
			inos[i] = fd_ino(pieces[i].fd);
		covered += pieces[i].len;
	}
	CHECK_EQ_U64(covered, end - start);
	CHECK_MEM(addr, before, len);
	verbs_pieces_close(pieces, n);
	droce_test_free(before);
	return n;
}

/* share_check_keep, then released: the pages private again, contents kept. */
static unsigned int
share_and_check_pg(struct verbs_pages *p, uint8_t *addr, size_t len, ino_t *inos, size_t pg)
{
	struct verbs_piece pieces[MAX_PIECES];
	uint8_t *before = droce_test_malloc(len);
	unsigned int n;

	memcpy(before, addr, len);
	n = share_check_keep(p, addr, len, inos, pg, pieces);
	verbs_pages_release(p, pieces, n);
	CHECK_MEM(addr, before, len);
	droce_test_free(before);
	return n;
}

static unsigned int
share_and_check(struct verbs_pages *p, uint8_t *addr, size_t len, ino_t *inos)
{
	return share_and_check_pg(p, addr, len, inos, page_size());
}

DROCE_TEST(malloc_buffer_moves_in_place)
{
	struct verbs_pages p;
	struct verbs_piece pieces[MAX_PIECES];
	size_t len = 3 * page_size() + 123;
	uint8_t *buf = malloc(len);
	unsigned int n;

	CHECK(buf != NULL);
	verbs_pages_init(&p);
	droce_test_rand_fill(buf, len);
	/* An unaligned start and end inside the heap's pages. */
	n = share_check_keep(&p, buf + 7, len - 7, NULL, page_size(), pieces);
	CHECK_EQ_U64(n, 1);
	CHECK(pieces[0].fd == -1);
	CHECK(!is_private_anon(buf + 7));
	verbs_pages_release(&p, pieces, n);
	/* Released: private memory again, the memfd closed. */
	CHECK(is_private_anon(buf + 7));
	CHECK_EQ_U64(p.nb, 0);
	/* The allocator keeps working on memory that moved twice. */
	buf = realloc(buf, len / 2);
	CHECK(buf != NULL);
	free(buf);
	verbs_pages_fini(&p);
}

DROCE_TEST(memalign_buffer_moves_in_place)
{
	struct verbs_pages p;
	size_t len = 5 * page_size();
	void *buf = NULL;

	CHECK_EQ_I64(posix_memalign(&buf, page_size(), len), 0);
	verbs_pages_init(&p);
	droce_test_rand_fill(buf, len);
	CHECK_EQ_U64(share_and_check(&p, buf, len, NULL), 1);
	free(buf);
	verbs_pages_fini(&p);
}

DROCE_TEST(mmap_buffer_moves_in_place)
{
	struct verbs_pages p;
	size_t len = 8 * page_size();
	uint8_t *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CHECK(buf != MAP_FAILED);
	verbs_pages_init(&p);
	droce_test_rand_fill(buf, len);
	CHECK_EQ_U64(share_and_check(&p, buf + page_size(), 1, NULL), 1);
	CHECK_EQ_U64(share_and_check(&p, buf, len, NULL), 1);
	CHECK(is_private_anon(buf));
	munmap(buf, len);
	verbs_pages_fini(&p);
}

/* A buffer on the registering thread's own stack: the move runs on a thread of its own. */
DROCE_TEST(stack_buffer_moves_in_place)
{
	struct verbs_pages p;
	uint8_t buf[3 * 4096];

	verbs_pages_init(&p);
	droce_test_rand_fill(buf, sizeof(buf));
	CHECK_EQ_U64(share_and_check(&p, buf, sizeof(buf), NULL), 1);
	verbs_pages_fini(&p);
}

/*
 * Shared mappings are registered in place: one piece naming the file, nothing moved.
 * Anonymous shared memory (librpma's flush page) is a shmem file too.
 */
static void
shared_in_place(uint8_t *buf, size_t len, uint64_t file_off)
{
	struct verbs_pages p;
	struct verbs_piece pieces[MAX_PIECES];
	struct maps_at before, after;

	verbs_pages_init(&p);
	droce_test_rand_fill(buf, len);
	CHECK(maps_at(buf, &before));
	CHECK_EQ_U64(share_check_keep(&p, buf + 1, len - 2, NULL, page_size(), pieces), 1);
	CHECK(pieces[0].fd == -1);
	CHECK_EQ_U64(pieces[0].off, file_off);
	CHECK(maps_at(buf, &after));
	CHECK_EQ_U64(after.ino, before.ino);
	CHECK_EQ_U64(p.nb, 0);
	verbs_pages_release(&p, pieces, 1);
	CHECK(maps_at(buf, &after));
	CHECK_EQ_U64(after.ino, before.ino);
	verbs_pages_fini(&p);
}

DROCE_TEST(shared_anonymous_buffer_registers_in_place)
{
	size_t len = 4 * page_size();
	uint8_t *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	CHECK(buf != MAP_FAILED);
	shared_in_place(buf, len, 0);
	munmap(buf, len);
}

DROCE_TEST(shared_file_mapping_registers_in_place)
{
	char path[] = "/tmp/droce-test-mr-XXXXXX";
	size_t len = 2 * page_size();
	int fd = mkstemp(path);
	uint8_t *buf;

	CHECK(fd >= 0);
	unlink(path);
	CHECK(ftruncate(fd, (off_t)(4 * len)) == 0);
	/* At file offset len: the piece's offset is the file's, not 0. */
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)len);
	CHECK(buf != MAP_FAILED);
	{
		struct verbs_pages p;
		struct verbs_piece pc[MAX_PIECES];

		verbs_pages_init(&p);
		CHECK_EQ_U64(share_check_keep(&p, buf, len, NULL, page_size(), pc), 1);
		CHECK_EQ_U64(pc[0].off, len);
		verbs_pages_release(&p, pc, 1);
		verbs_pages_fini(&p);
	}
	shared_in_place(buf, len, len);
	munmap(buf, len);
	close(fd);
}

/* A SysV segment, marked for removal at once as UCX does: in place, so shmdt works. */
DROCE_TEST(sysv_segment_registers_in_place)
{
	size_t len = 4 * page_size();
	int id = shmget(IPC_PRIVATE, len, IPC_CREAT | 0600);
	uint8_t *buf;

	CHECK(id >= 0);
	buf = shmat(id, NULL, 0);
	CHECK(buf != (void *)-1);
	CHECK(shmctl(id, IPC_RMID, NULL) == 0);
	shared_in_place(buf, len, 0);
	CHECK(shmdt(buf) == 0);
}

DROCE_TEST(overlapping_registrations_count_their_pages)
{
	struct verbs_pages p;
	const size_t pg = page_size();
	size_t len = 8 * pg;
	ino_t a[MAX_PIECES], b[MAX_PIECES], c[MAX_PIECES];
	struct verbs_piece pa[MAX_PIECES], pb[MAX_PIECES], pc[MAX_PIECES];
	unsigned int na, nb, nc;
	uint8_t *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CHECK(buf != MAP_FAILED);
	verbs_pages_init(&p);
	droce_test_rand_fill(buf, len);
	/* Pages 0..2, then 2..5 (overlap: page 2 reused), then 6..7 (adjacent: new). */
	na = share_check_keep(&p, buf, 3 * pg, a, pg, pa);
	CHECK_EQ_U64(na, 1);
	nb = share_check_keep(&p, buf + 2 * pg + 10, 3 * pg, b, pg, pb);
	CHECK_EQ_U64(nb, 2);
	CHECK_EQ_U64(b[0], a[0]);
	CHECK_NE_U64(b[1], a[0]);
	nc = share_check_keep(&p, buf + 6 * pg, 2 * pg, c, pg, pc);
	CHECK_EQ_U64(nc, 1);
	CHECK_EQ_U64(p.nb, 3);
	/* The whole buffer: the three memfds, in address order, nothing moved again. */
	{
		ino_t d[MAX_PIECES];

		CHECK_EQ_U64(share_and_check(&p, buf, len, d), 3);
		CHECK_EQ_U64(d[0], a[0]);
		CHECK_EQ_U64(d[1], b[1]);
		CHECK_EQ_U64(d[2], c[0]);
	}
	/* The first goes: pages 0 and 1 are its alone, page 2 still the second's. */
	verbs_pages_release(&p, pa, na);
	CHECK(is_private_anon(buf));
	CHECK(is_private_anon(buf + pg));
	CHECK(!is_private_anon(buf + 2 * pg));
	CHECK(!is_private_anon(buf + 5 * pg));
	CHECK(is_private_anon(buf + 6 * pg - 1) == false);
	verbs_pages_release(&p, pb, nb);
	CHECK(is_private_anon(buf + 2 * pg));
	CHECK(is_private_anon(buf + 5 * pg));
	CHECK(!is_private_anon(buf + 6 * pg));
	verbs_pages_release(&p, pc, nc);
	CHECK(is_private_anon(buf + 7 * pg));
	CHECK_EQ_U64(p.nb, 0);
	munmap(buf, len);
	verbs_pages_fini(&p);
}

DROCE_TEST(remapped_memory_is_moved_again)
{
	struct verbs_pages p;
	const size_t len = 2 * page_size();
	struct verbs_piece pa[MAX_PIECES], pb[MAX_PIECES];
	ino_t a[MAX_PIECES], b[MAX_PIECES];
	unsigned int na, nb;
	uint8_t *buf, *again;

	verbs_pages_init(&p);
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(buf != MAP_FAILED);
	droce_test_rand_fill(buf, len);
	na = share_check_keep(&p, buf, len, a, page_size(), pa);
	/* Freed while registered and mapped again at the same address: moved anew. */
	munmap(buf, len);
	again = mmap(buf, len, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	CHECK(again == buf);
	droce_test_rand_fill(buf, len);
	nb = share_check_keep(&p, buf, len, b, page_size(), pb);
	CHECK_NE_U64(a[0], b[0]);
	CHECK_EQ_U64(p.nb, 2);
	/* The old registration going leaves the new memory alone. */
	verbs_pages_release(&p, pa, na);
	CHECK(!is_private_anon(buf));
	CHECK_EQ_U64(p.nb, 1);
	verbs_pages_release(&p, pb, nb);
	CHECK(is_private_anon(buf));
	CHECK_EQ_U64(p.nb, 0);
	munmap(buf, len);
	verbs_pages_fini(&p);
}

/* The perms of the mapping at addr, e.g. "r--s". */
static void
check_perms(const void *addr, const char *want)
{
	struct maps_at m;

	CHECK(maps_at(addr, &m));
	CHECK_EQ_STR(m.perms, want);
}

DROCE_TEST(protection_is_kept)
{
	struct verbs_pages p;
	struct verbs_piece pieces[MAX_PIECES];
	const size_t len = 2 * page_size();
	unsigned int n = 0;
	uint64_t off;
	uint8_t *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CHECK(buf != MAP_FAILED);
	verbs_pages_init(&p);
	memset(buf, 0x77, len);
	CHECK(mprotect(buf + page_size(), page_size(), PROT_READ) == 0);
	CHECK_EQ_I64(verbs_pages_share(&p, buf, len, pieces, MAX_PIECES, &n, &off), 0);
	CHECK_EQ_U64(n, 1);
	verbs_pieces_close(pieces, n);
	/* The read-only page is still read-only, now as a shared mapping. */
	check_perms(buf, "rw-s");
	check_perms(buf + page_size(), "r--s");
	CHECK_EQ_U64(buf[len - 1], 0x77);
	/* And again once private. */
	verbs_pages_release(&p, pieces, n);
	check_perms(buf, "rw-p");
	check_perms(buf + page_size(), "r--p");
	CHECK_EQ_U64(buf[len - 1], 0x77);
	munmap(buf, len);
	verbs_pages_fini(&p);
}

DROCE_TEST(bad_ranges_fail_cleanly)
{
	struct verbs_pages p;
	struct verbs_piece pieces[MAX_PIECES], held[2][MAX_PIECES];
	const size_t pg = page_size();
	unsigned int n = 99, n0, n2;
	uint64_t off;
	uint8_t *buf = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			    -1, 0);

	CHECK(buf != MAP_FAILED);
	verbs_pages_init(&p);
	memset(buf, 0x11, 4 * pg);
	CHECK_EQ_I64(verbs_pages_share(&p, buf, 0, pieces, MAX_PIECES, &n, &off), -EINVAL);
	CHECK_EQ_U64(n, 0);
	CHECK_EQ_I64(verbs_pages_share(&p, buf, SIZE_MAX, pieces, MAX_PIECES, &n, &off), -EINVAL);
	CHECK_EQ_I64(verbs_pages_share(&p, (void *)(UINTPTR_MAX - 10), 5, pieces, MAX_PIECES, &n,
				       &off), -EINVAL);
	/* A huge length from a valid address runs into unmapped memory. */
	CHECK_EQ_I64(verbs_pages_share(&p, buf, (size_t)1 << 46, pieces, MAX_PIECES, &n, &off),
		     -EFAULT);
	/* A hole in the middle, and a PROT_NONE page. */
	CHECK(munmap(buf + 3 * pg, pg) == 0);
	CHECK_EQ_I64(verbs_pages_share(&p, buf + 2 * pg, 2 * pg, pieces, MAX_PIECES, &n, &off),
		     -EFAULT);
	CHECK(mprotect(buf + 2 * pg, pg, PROT_NONE) == 0);
	CHECK_EQ_I64(verbs_pages_share(&p, buf + pg, 2 * pg, pieces, MAX_PIECES, &n, &off),
		     -EFAULT);
	/* Nothing was moved by the failures. */
	CHECK_EQ_U64(p.nb, 0);
	CHECK(is_private_anon(buf));
	/* Too many pieces: pages 0 and 2 held alone make 0..2 three pieces. */
	CHECK(mprotect(buf + 2 * pg, pg, PROT_READ | PROT_WRITE) == 0);
	n0 = share_check_keep(&p, buf, 1, NULL, pg, held[0]);
	n2 = share_check_keep(&p, buf + 2 * pg, 1, NULL, pg, held[1]);
	CHECK_EQ_I64(verbs_pages_share(&p, buf, 3 * pg, pieces, 2, &n, &off), -E2BIG);
	CHECK_EQ_U64(p.nb, 2);
	CHECK(is_private_anon(buf + pg));
	CHECK_EQ_U64(share_and_check(&p, buf, 3 * pg, NULL), 3);
	verbs_pages_release(&p, held[0], n0);
	verbs_pages_release(&p, held[1], n2);
	CHECK_EQ_U64(p.nb, 0);
	munmap(buf, 3 * pg);
	verbs_pages_fini(&p);
}

/* Released pages are private anonymous memory: MADV_DONTNEED gives zeros, as before. */
DROCE_TEST(released_pages_are_private_again)
{
	struct verbs_pages p;
	const size_t len = (size_t)1 << 20;
	uint8_t *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t i;

	CHECK(buf != MAP_FAILED);
	verbs_pages_init(&p);
	memset(buf, 0xAB, len);
	CHECK_EQ_U64(share_and_check(&p, buf, len, NULL), 1);
	CHECK(madvise(buf, len, MADV_DONTNEED) == 0);
	for (i = 0; i < len; i++)
		if (buf[i] != 0)
			break;
	CHECK_EQ_U64(i, len);
	munmap(buf, len);
	verbs_pages_fini(&p);
}

/* ---- concurrent writers ---- */

#define WRITERS		3
#define WRITER_YIELD_EVERY	64	/* increments (a power of two) */

struct writer {
	_Atomic uint64_t *word;	/* on a page that moves */
	uint64_t shadow;	/* what it must read */
	atomic_bool *stop;
	pthread_t t;
};

static void *
writer_run(void *arg)
{
	struct writer *w = arg;

	while (!atomic_load_explicit(w->stop, memory_order_relaxed)) {
		atomic_fetch_add_explicit(w->word, 1, memory_order_relaxed);
		/*
		 * Now and then the CPU to others: three writers spinning on two CPUs left the
		 * thread that moves the pages a fraction of one (a loaded ASan run took over
		 * 120 s). The writers still write all through every move.
		 */
		if ((++w->shadow & (WRITER_YIELD_EVERY - 1)) == 0)
			sched_yield();
	}
	return NULL;
}

/*
 * Writers increment words on the pages of buf (the last word of each of its first pages)
 * while the main thread registers and releases buffers over the start of those pages, and
 * ranges across them, cycles times: every increment must be there at the end, and the
 * registered bytes unchanged.
 */
static void
writers_never_lose(struct verbs_pages *p, uint8_t *buf, size_t pg, unsigned int cycles)
{
	struct writer w[WRITERS];
	atomic_bool stop = false;
	uint8_t pattern[2048];
	unsigned int i, k;

	droce_test_rand_fill(pattern, sizeof(pattern));
	for (k = 0; k < WRITERS; k++) {
		memcpy(buf + k * pg, pattern, sizeof(pattern));
		w[k].word = (_Atomic uint64_t *)(buf + (k + 1) * pg - sizeof(uint64_t));
		atomic_store(w[k].word, 0);
		w[k].shadow = 0;
		w[k].stop = &stop;
		CHECK(pthread_create(&w[k].t, NULL, writer_run, &w[k]) == 0);
	}
	for (i = 0; i < cycles; i++) {
		struct verbs_piece pieces[MAX_PIECES];
		unsigned int n = 0;
		uint64_t off;
		/* 2 KiB at the start of one page, or the first two pages, or all three. */
		size_t at = (i % 5 < 3) ? (i % 3) * pg : 0;
		size_t len = (i % 5 < 3) ? sizeof(pattern) : (i % 5 == 3 ? 2 * pg : 3 * pg - 64);

		CHECK_EQ_I64(verbs_pages_share(p, buf + at, len, pieces, MAX_PIECES, &n, &off), 0);
		verbs_pieces_close(pieces, n);
		verbs_pages_release(p, pieces, n);
	}
	atomic_store(&stop, true);
	for (k = 0; k < WRITERS; k++) {
		CHECK(pthread_join(w[k].t, NULL) == 0);
		droce_test_ctx("writer %u", k);
		CHECK_EQ_U64(atomic_load(w[k].word), w[k].shadow);
		CHECK(w[k].shadow > 0);
		CHECK_MEM(buf + k * pg, pattern, sizeof(pattern));
	}
}

#define WRITE_CYCLES	10000

/* The case: neighbours of a registered buffer on the same heap pages. */
DROCE_TEST(concurrent_writes_to_moving_pages_all_land)
{
	struct verbs_pages p;
	const size_t pg = page_size();
	void *buf = NULL;

	CHECK_EQ_I64(posix_memalign(&buf, pg, WRITERS * pg), 0);
	verbs_pages_init(&p);
	writers_never_lose(&p, buf, pg, WRITE_CYCLES);
	CHECK(is_private_anon(buf));
	free(buf);
	verbs_pages_fini(&p);
}

/* writers_never_lose on fresh anonymous pages, moved as p's knobs say. */
static void
writers_on_anonymous(bool on_thread, bool no_uffd)
{
	struct verbs_pages p;
	const size_t pg = page_size();
	uint8_t *buf = mmap(NULL, WRITERS * pg, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CHECK(buf != MAP_FAILED);
	verbs_pages_init(&p);
	p.move_on_thread = on_thread;
	p.no_uffd = no_uffd;
	writers_never_lose(&p, buf, pg, WRITE_CYCLES / 10);
	CHECK(is_private_anon(buf));
	munmap(buf, WRITERS * pg);
	verbs_pages_fini(&p);
}

/* The same with every move on a thread of its own (as for a stack buffer). */
DROCE_TEST(concurrent_writes_land_with_moves_on_a_thread)
{
	writers_on_anonymous(true, false);
}

/* Without userfaultfd (a seccomp filter, an old kernel) every move freezes its writers. */
DROCE_TEST(concurrent_writes_land_without_userfaultfd)
{
	writers_on_anonymous(false, true);
}

/*
 * A private file mapping (a program's initialised data) cannot be protected by
 * userfaultfd: frozen instead, writers held by the SIGSEGV handler. As in a program's
 * data and bss, the file's page is followed by anonymous pages, moved in the same run.
 */
DROCE_TEST(concurrent_writes_land_in_a_private_file_mapping)
{
	struct verbs_pages p;
	const size_t pg = page_size();
	char path[] = "/var/tmp/droce-test-mr-XXXXXX";
	int fd = mkstemp(path);
	uint8_t *buf;

	CHECK(fd >= 0);
	unlink(path);
	CHECK(ftruncate(fd, (off_t)(WRITERS * pg)) == 0);
	buf = mmap(NULL, WRITERS * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	CHECK(buf != MAP_FAILED);
	CHECK(mmap(buf + pg, (WRITERS - 1) * pg, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == buf + pg);
	verbs_pages_init(&p);
	writers_never_lose(&p, buf, pg, WRITE_CYCLES / 10);
	munmap(buf, WRITERS * pg);
	close(fd);
	verbs_pages_fini(&p);
}

/* ---- fork ---- */

/* In a child: memsets buf to c and exits 0, or 3 when the write faulted. */
static pid_t
child_memset(uint8_t *buf, size_t len, int c)
{
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL);
		memset(buf, c, len);
		_exit(0);
	}
	return pid;
}

/* A forked child writes its own copy of the moved pages; the parent's stay as they were. */
DROCE_TEST(forked_child_gets_a_copy)
{
	struct verbs_pages p;
	struct verbs_piece pieces[MAX_PIECES];
	const size_t len = 64 << 10;
	uint8_t *buf = malloc(len), *want = malloc(len);
	unsigned int n;
	int st;
	pid_t pid;

	CHECK(buf != NULL && want != NULL);
	verbs_pages_init(&p);
	memset(buf, 'P', len);
	n = share_check_keep(&p, buf, len, NULL, page_size(), pieces);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		/* The child's copy holds the parent's bytes, and is private to it. */
		size_t i;

		for (i = 0; i < len; i++)
			if (buf[i] != 'P')
				_exit(2);
		memset(buf, 'C', len);
		_exit(is_private_anon(buf) ? 0 : 4);
	}
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st));
	CHECK_EQ_U64(WEXITSTATUS(st), 0);
	memset(want, 'P', len);
	CHECK_MEM(buf, want, len);
	/* The parent's pages are still the registered ones. */
	CHECK(!is_private_anon(buf));
	verbs_pages_release(&p, pieces, n);
	free(want);
	free(buf);
	verbs_pages_fini(&p);
}

/*
 * Fork-safe (ibv_fork_init): the child has nothing where the moved pages are. Run in a
 * child of its own, since the setting is for the whole process.
 */
DROCE_TEST(fork_safe_child_has_no_registered_pages)
{
	int st;
	pid_t outer = fork();

	CHECK(outer >= 0);
	if (outer == 0) {
		struct verbs_pages p;
		struct verbs_piece pieces[MAX_PIECES];
		const size_t len = 64 << 10;
		uint8_t *buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		uint64_t off;
		unsigned int n;
		pid_t pid;
		size_t i;

		verbs_pages_set_fork_safe();
		verbs_pages_init(&p);
		memset(buf, 'P', len);
		if (!verbs_pages_fork_safe() ||
		    verbs_pages_share(&p, buf, len, pieces, MAX_PIECES, &n, &off) != 0)
			_exit(10);
		verbs_pieces_close(pieces, n);
		pid = child_memset(buf, len, 'C');
		if (waitpid(pid, &st, 0) != pid || !WIFSIGNALED(st) || WTERMSIG(st) != SIGSEGV)
			_exit(11);
		for (i = 0; i < len; i++)
			if (buf[i] != 'P')
				_exit(12);
		verbs_pages_release(&p, pieces, n);
		/* Private again: a child copies it as any memory. */
		pid = child_memset(buf, len, 'C');
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0 ||
		    buf[0] != 'P')
			_exit(13);
		_exit(0);
	}
	CHECK(waitpid(outer, &st, 0) == outer);
	CHECK(WIFEXITED(st));
	CHECK_EQ_U64(WEXITSTATUS(st), 0);
}

#define HUGE_2M		((size_t)2 << 20)

/* Two 2 MiB huge pages of anonymous hugetlb memory, or NULL when the pool has none free. */
static uint8_t *
huge_map(int share)
{
	void *buf = mmap(NULL, 2 * HUGE_2M, PROT_READ | PROT_WRITE,
			 share | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);

	if (buf == MAP_FAILED) {
		printf("# no free 2 MiB huge pages (MAP_HUGETLB: errno %d): hugetlb case skipped\n",
		       errno);
		return NULL;
	}
	return buf;
}

/* KernelPageSize of the mapping holding addr, in bytes (0 when not found). */
static size_t
kernel_page_size(const void *addr)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	char line[512];
	bool in = false;
	size_t kb = 0;

	CHECK(f != NULL);
	while (fgets(line, sizeof(line), f) != NULL) {
		unsigned long lo, hi, v;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
			in = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
			continue;
		}
		if (in && sscanf(line, "KernelPageSize: %lu kB", &v) == 1) {
			kb = v;
			break;
		}
	}
	fclose(f);
	return kb * 1024;
}

/* The one piece of a share of [addr, addr + len): its fd's block size, its offset. */
static void
share_one(struct verbs_pages *p, uint8_t *addr, size_t len, size_t *blksize, uint64_t *off,
	  uint64_t *plen, ino_t *ino)
{
	struct verbs_piece pc;
	struct stat st;
	unsigned int n = 0;
	uint64_t first_off = 0;

	CHECK_EQ_I64(verbs_pages_share(p, addr, len, &pc, 1, &n, &first_off), 0);
	CHECK_EQ_U64(n, 1);
	CHECK(pc.fd >= 0);
	CHECK(fstat(pc.fd, &st) == 0);
	*blksize = (size_t)st.st_blksize;
	*off = pc.off;
	*plen = pc.len;
	*ino = st.st_ino;
	verbs_pieces_close(&pc, 1);
	verbs_pages_release(p, &pc, 1);
}

/*
 * UCX's and libfabric's buffer pools (MAP_HUGETLB, private): moved whole huge pages at a
 * time into a hugetlb memfd, so the application keeps its huge pages; a registration
 * inside a huge page covers the whole page; a later one reuses the memfd; released, they
 * are private huge pages again.
 */
DROCE_TEST(private_hugetlb_buffer_moves_in_place)
{
	struct verbs_pages p;
	struct verbs_piece held[MAX_PIECES];
	uint8_t *buf = huge_map(MAP_PRIVATE);
	uint64_t off, plen;
	size_t blk;
	ino_t ino, ino2;
	unsigned int n;

	if (buf == NULL)
		return;
	verbs_pages_init(&p);
	droce_test_rand_fill(buf, 2 * HUGE_2M);
	/* A few bytes across the boundary of the two huge pages: both, whole. */
	n = share_check_keep(&p, buf + HUGE_2M - 100, 200, NULL, HUGE_2M, held);
	CHECK_EQ_U64(n, 1);
	CHECK_EQ_U64(kernel_page_size(buf), HUGE_2M);
	CHECK_EQ_U64(kernel_page_size(buf + HUGE_2M), HUGE_2M);
	share_one(&p, buf + 5, 17, &blk, &off, &plen, &ino);
	CHECK_EQ_U64(blk, HUGE_2M);
	CHECK_EQ_U64(off, 0);
	CHECK_EQ_U64(plen, HUGE_2M);
	share_one(&p, buf + HUGE_2M + 4096, 4096, &blk, &off, &plen, &ino2);
	CHECK_EQ_U64(off, HUGE_2M);
	CHECK_EQ_U64(plen, HUGE_2M);
	CHECK_EQ_U64(ino2, ino);
	CHECK_EQ_U64(p.nb, 1);
	CHECK_EQ_U64(share_and_check_pg(&p, buf, 2 * HUGE_2M, NULL, HUGE_2M), 1);
	verbs_pages_release(&p, held, n);
	CHECK_EQ_U64(p.nb, 0);
	CHECK(is_private_anon(buf) || kernel_page_size(buf) == HUGE_2M);
	CHECK_EQ_U64(kernel_page_size(buf + HUGE_2M), HUGE_2M);
	CHECK(munmap(buf, 2 * HUGE_2M) == 0);
	verbs_pages_fini(&p);
}

/* Shared hugetlb memory is a hugetlbfs file: registered in place, whole huge pages. */
DROCE_TEST(shared_hugetlb_buffer_registers_in_place)
{
	struct verbs_pages p;
	struct verbs_piece held[MAX_PIECES];
	uint8_t *buf = huge_map(MAP_SHARED);

	if (buf == NULL)
		return;
	verbs_pages_init(&p);
	droce_test_rand_fill(buf, 2 * HUGE_2M);
	CHECK_EQ_U64(share_check_keep(&p, buf + HUGE_2M + 10, 100, NULL, HUGE_2M, held), 1);
	CHECK(held[0].fd == -1);
	CHECK_EQ_U64(held[0].off, HUGE_2M);
	CHECK_EQ_U64(held[0].len, HUGE_2M);
	CHECK_EQ_U64(p.nb, 0);
	verbs_pages_release(&p, held, 1);
	CHECK_EQ_U64(kernel_page_size(buf), HUGE_2M);
	CHECK(munmap(buf, 2 * HUGE_2M) == 0);
	verbs_pages_fini(&p);
}

/* Huge pages the pool cannot double for the copy: an ordinary memfd, same bytes. */
DROCE_TEST(hugetlb_buffer_without_free_pages_moves_to_small_pages)
{
	struct verbs_pages p;
	struct verbs_piece held[MAX_PIECES];
	uint8_t *buf = huge_map(MAP_PRIVATE);
	uint64_t off, plen;
	size_t blk;
	ino_t ino;
	unsigned int n;

	if (buf == NULL)
		return;
	verbs_pages_init(&p);
	p.no_huge_memfd = true;
	droce_test_rand_fill(buf, 2 * HUGE_2M);
	n = share_check_keep(&p, buf + HUGE_2M + 1, 10, NULL, HUGE_2M, held);
	CHECK_EQ_U64(n, 1);
	/* Small pages now: a later registration there takes only the pages it needs. */
	share_one(&p, buf + HUGE_2M + 1, 10, &blk, &off, &plen, &ino);
	CHECK_EQ_U64(blk, page_size());
	CHECK_EQ_U64(off, 0);
	CHECK_EQ_U64(plen, page_size());
	CHECK_EQ_U64(kernel_page_size(buf), HUGE_2M);
	CHECK_EQ_U64(kernel_page_size(buf + HUGE_2M), page_size());
	/* Across the two kinds: the huge page moved whole, then the memfd as it is. */
	CHECK_EQ_U64(share_and_check_pg(&p, buf, 2 * HUGE_2M, NULL, HUGE_2M), 2);
	verbs_pages_release(&p, held, n);
	CHECK_EQ_U64(p.nb, 0);
	CHECK(munmap(buf, 2 * HUGE_2M) == 0);
	verbs_pages_fini(&p);
}
