/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * libdroce's page mover (lib/verbs/verbs_pages.h) on its own: ordinary application memory
 * (malloc, posix_memalign, mmap) keeps its address and contents when its pages move into
 * memfds, the memfd pieces alias the application's pages both ways, later registrations
 * reuse pages already moved, and bad ranges fail without side effects.
 */

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
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

/*
 * Shares [addr, addr + len) and checks the pieces: in order they cover exactly the range
 * aligned to pages of pg bytes; each, mapped a second time, shows the application's bytes,
 * and a write on either side is seen on the other. Returns the number of pieces (fds
 * closed).
 */
static unsigned int
share_and_check_pg(struct verbs_pages *p, uint8_t *addr, size_t len, ino_t *inos, size_t pg)
{
	struct verbs_piece pieces[MAX_PIECES];
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

		CHECK_EQ_U64(pieces[i].off % pg, 0);
		CHECK_EQ_U64(pieces[i].len % pg, 0);
		CHECK(lo < hi);
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

static unsigned int
share_and_check(struct verbs_pages *p, uint8_t *addr, size_t len, ino_t *inos)
{
	return share_and_check_pg(p, addr, len, inos, page_size());
}

DROCE_TEST(malloc_buffer_moves_in_place)
{
	struct verbs_pages p;
	size_t len = 3 * page_size() + 123;
	uint8_t *buf = malloc(len);

	CHECK(buf != NULL);
	verbs_pages_init(&p);
	droce_test_rand_fill(buf, len);
	/* An unaligned start and end inside the heap's pages. */
	CHECK_EQ_U64(share_and_check(&p, buf + 7, len - 7, NULL), 1);
	/* The allocator keeps working on memory that now lives in a memfd. */
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
	CHECK_EQ_U64(share_and_check(&p, buf, len, NULL), 3);
	munmap(buf, len);
	verbs_pages_fini(&p);
}

/* librpma's flush page: anonymous shared memory is the process's own, moved like private. */
DROCE_TEST(shared_anonymous_buffer_moves_in_place)
{
	struct verbs_pages p;
	size_t len = 4 * page_size();
	uint8_t *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	CHECK(buf != MAP_FAILED);
	verbs_pages_init(&p);
	droce_test_rand_fill(buf, len);
	CHECK_EQ_U64(share_and_check(&p, buf, len, NULL), 1);
	munmap(buf, len);
	verbs_pages_fini(&p);
}

/* A shared file mapping is someone else's file: not ours to move. */
DROCE_TEST(shared_file_mapping_is_refused)
{
	struct verbs_pages p;
	struct verbs_piece pieces[MAX_PIECES];
	char path[] = "/tmp/droce-test-mr-XXXXXX";
	size_t len = 2 * page_size();
	unsigned int n;
	uint64_t off;
	int fd = mkstemp(path);
	uint8_t *buf;

	CHECK(fd >= 0);
	unlink(path);
	CHECK(ftruncate(fd, (off_t)len) == 0);
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(buf != MAP_FAILED);
	verbs_pages_init(&p);
	CHECK_EQ_I64(verbs_pages_share(&p, buf, len, pieces, MAX_PIECES, &n, &off), -EINVAL);
	munmap(buf, len);
	close(fd);
	verbs_pages_fini(&p);
}

DROCE_TEST(overlapping_and_adjacent_reuse_moved_pages)
{
	struct verbs_pages p;
	const size_t pg = page_size();
	size_t len = 8 * pg;
	ino_t a[MAX_PIECES], b[MAX_PIECES], c[MAX_PIECES], d[MAX_PIECES];
	uint8_t *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CHECK(buf != MAP_FAILED);
	verbs_pages_init(&p);
	droce_test_rand_fill(buf, len);
	/* Pages 0..2, then 2..5 (overlap: page 2 reused), then 6..7 (adjacent: new). */
	CHECK_EQ_U64(share_and_check(&p, buf, 3 * pg, a), 1);
	CHECK_EQ_U64(share_and_check(&p, buf + 2 * pg + 10, 3 * pg, b), 2);
	CHECK_EQ_U64(b[0], a[0]);
	CHECK_NE_U64(b[1], a[0]);
	CHECK_EQ_U64(share_and_check(&p, buf + 6 * pg, 2 * pg, c), 1);
	CHECK_NE_U64(c[0], a[0]);
	CHECK_NE_U64(c[0], b[1]);
	/* The whole buffer: the three memfds, in address order, nothing moved again. */
	CHECK_EQ_U64(share_and_check(&p, buf, len, d), 3);
	CHECK_EQ_U64(d[0], a[0]);
	CHECK_EQ_U64(d[1], b[1]);
	CHECK_EQ_U64(d[2], c[0]);
	CHECK_EQ_U64(p.nb, 3);
	munmap(buf, len);
	verbs_pages_fini(&p);
}

DROCE_TEST(remapped_memory_is_moved_again)
{
	struct verbs_pages p;
	const size_t len = 2 * page_size();
	ino_t a[MAX_PIECES], b[MAX_PIECES];
	uint8_t *buf, *again;

	verbs_pages_init(&p);
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(buf != MAP_FAILED);
	droce_test_rand_fill(buf, len);
	CHECK_EQ_U64(share_and_check(&p, buf, len, a), 1);
	/* Freed and mapped again at the same address: private memory, to be moved anew. */
	munmap(buf, len);
	again = mmap(buf, len, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	CHECK(again == buf);
	droce_test_rand_fill(buf, len);
	CHECK_EQ_U64(share_and_check(&p, buf, len, b), 1);
	CHECK_NE_U64(a[0], b[0]);
	/* The first memfd is mapped nowhere any more: closed. */
	CHECK_EQ_U64(p.nb, 1);
	munmap(buf, len);
	verbs_pages_fini(&p);
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
	/* The read-only page is still read-only, now as a shared mapping: its maps line says so. */
	{
		char want[64], line[256];
		FILE *f = fopen("/proc/self/maps", "r");
		bool found = false;

		snprintf(want, sizeof(want), "%lx-", (unsigned long)(uintptr_t)(buf + page_size()));
		CHECK(f != NULL);
		while (fgets(line, sizeof(line), f) != NULL)
			if (strncmp(line, want, strlen(want)) == 0) {
				found = strstr(line, " r--s ") != NULL;
				break;
			}
		fclose(f);
		CHECK(found);
	}
	CHECK_EQ_U64(buf[len - 1], 0x77);
	munmap(buf, len);
	verbs_pages_fini(&p);
}

DROCE_TEST(bad_ranges_fail_cleanly)
{
	struct verbs_pages p;
	struct verbs_piece pieces[MAX_PIECES];
	const size_t pg = page_size();
	unsigned int n = 99;
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
	/* Too many pieces: pages 0 and 2 moved alone make 0..2 three pieces. */
	CHECK(mprotect(buf + 2 * pg, pg, PROT_READ | PROT_WRITE) == 0);
	CHECK_EQ_U64(share_and_check(&p, buf, 1, NULL), 1);
	CHECK_EQ_U64(share_and_check(&p, buf + 2 * pg, 1, NULL), 1);
	CHECK_EQ_I64(verbs_pages_share(&p, buf, 3 * pg, pieces, 2, &n, &off), -E2BIG);
	CHECK_EQ_U64(p.nb, 2);
	CHECK_EQ_U64(share_and_check(&p, buf, 3 * pg, NULL), 3);
	munmap(buf, 3 * pg);
	verbs_pages_fini(&p);
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
	CHECK(fstat(pc.fd, &st) == 0);
	*blksize = (size_t)st.st_blksize;
	*off = pc.off;
	*plen = pc.len;
	*ino = st.st_ino;
	verbs_pieces_close(&pc, 1);
}

/*
 * UCX's and libfabric's buffer pools (MAP_HUGETLB): moved whole huge pages at a time into
 * a hugetlb memfd, so the application keeps its huge pages; a registration inside a huge
 * page covers the whole page; a later one reuses the memfd.
 */
static void
hugetlb_moves_in_place(int share)
{
	struct verbs_pages p;
	uint8_t *buf = huge_map(share);
	uint64_t off, plen;
	size_t blk;
	ino_t ino, ino2;

	if (buf == NULL)
		return;
	verbs_pages_init(&p);
	droce_test_rand_fill(buf, 2 * HUGE_2M);
	/* A few bytes across the boundary of the two huge pages: both, whole. */
	CHECK_EQ_U64(share_and_check_pg(&p, buf + HUGE_2M - 100, 200, NULL, HUGE_2M), 1);
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
	CHECK(munmap(buf, 2 * HUGE_2M) == 0);
	verbs_pages_fini(&p);
}

DROCE_TEST(private_hugetlb_buffer_moves_in_place)
{
	hugetlb_moves_in_place(MAP_PRIVATE);
}

DROCE_TEST(shared_hugetlb_buffer_moves_in_place)
{
	hugetlb_moves_in_place(MAP_SHARED);
}

/* Huge pages the pool cannot double for the copy: an ordinary memfd, same bytes. */
DROCE_TEST(hugetlb_buffer_without_free_pages_moves_to_small_pages)
{
	struct verbs_pages p;
	uint8_t *buf = huge_map(MAP_PRIVATE);
	uint64_t off, plen;
	size_t blk;
	ino_t ino;

	if (buf == NULL)
		return;
	verbs_pages_init(&p);
	p.no_huge_memfd = true;
	droce_test_rand_fill(buf, 2 * HUGE_2M);
	CHECK_EQ_U64(share_and_check_pg(&p, buf + HUGE_2M + 1, 10, NULL, HUGE_2M), 1);
	/* Small pages now: a later registration there takes only the pages it needs. */
	share_one(&p, buf + HUGE_2M + 1, 10, &blk, &off, &plen, &ino);
	CHECK_EQ_U64(blk, page_size());
	CHECK_EQ_U64(off, 0);
	CHECK_EQ_U64(plen, page_size());
	CHECK_EQ_U64(kernel_page_size(buf), HUGE_2M);
	CHECK_EQ_U64(kernel_page_size(buf + HUGE_2M), page_size());
	/* Across the two kinds: the huge page moved whole, then the memfd as it is. */
	CHECK_EQ_U64(share_and_check_pg(&p, buf, 2 * HUGE_2M, NULL, HUGE_2M), 2);
	CHECK(munmap(buf, 2 * HUGE_2M) == 0);
	verbs_pages_fini(&p);
}
