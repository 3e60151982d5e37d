/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * ibv_reg_mr's page moving (verbs_pages.h). What is mapped where is read from
 * /proc/self/maps, not remembered: memory the application freed and mapped again at the
 * same address is ordinary private memory again, and must be moved again. A range is
 * walked mapping by mapping: a part backed by one of our memfds (shared mapping, same
 * device and inode) becomes a piece as it is; runs of other pages are copied into a new
 * memfd each, which is then mapped over them with MAP_FIXED, keeping their protection.
 * Control path only: called under the table's lock, never while posting.
 *
 * Hugetlb mappings (mmap MAP_HUGETLB, private or shared) are moved whole huge pages at a
 * time (a hugetlb mapping cannot be split inside a page) into a hugetlb memfd of the same
 * page size, read from /proc/self/smaps, so the application keeps its huge pages. When
 * the pool has no free huge pages for the copy, they go into an ordinary memfd instead:
 * the contents and addresses are kept, the TLB reach is not.
 */

#include <errno.h>
#include <fcntl.h>
#include <linux/memfd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "verbs_pages.h"

#define MEMFD_NAME	"droce-mr"
/* Initial room for the mappings that overlap a range; grows as needed. */
#define MAPS_INIT	16

/* One line of /proc/self/maps, clipped to the range being registered. */
struct clip {
	uintptr_t lo;
	uintptr_t hi;
	uint64_t pgoff;		/* file offset of lo */
	int prot;
	uint64_t pgsize;	/* page size of the mapping: > the base page for hugetlb */
	int table;		/* index in the table when backed by one of our memfds, else -1 */
	bool movable;		/* private memory we may copy: readable, not special */
};

struct clips {
	struct clip *v;
	unsigned int n;
	unsigned int cap;
};

void
verbs_pages_init(struct verbs_pages *p)
{
	memset(p, 0, sizeof(*p));
	pthread_mutex_init(&p->lock, NULL);
}

void
verbs_pages_fini(struct verbs_pages *p)
{
	uint32_t i;

	for (i = 0; i < p->nb; i++)
		close(p->fds[i].fd);
	free(p->fds);
	p->fds = NULL;
	p->nb = 0;
	p->cap = 0;
	pthread_mutex_destroy(&p->lock);
}

void
verbs_pieces_close(struct verbs_piece *pieces, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		close(pieces[i].fd);
}

static int
table_find(const struct verbs_pages *p, dev_t dev, ino_t ino)
{
	uint32_t i;

	for (i = 0; i < p->nb; i++)
		if (p->fds[i].dev == dev && p->fds[i].ino == ino)
			return (int)i;
	return -1;
}

static int
table_add(struct verbs_pages *p, int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (p->nb == p->cap) {
		uint32_t cap = p->cap != 0 ? p->cap * 2 : MAPS_INIT;
		struct verbs_pages_fd *v = realloc(p->fds, cap * sizeof(*v));

		if (v == NULL)
			return -ENOMEM;
		p->fds = v;
		p->cap = cap;
	}
	p->fds[p->nb].fd = fd;
	p->fds[p->nb].dev = st.st_dev;
	p->fds[p->nb].ino = st.st_ino;
	/* hugetlbfs reports its page size as the block size. */
	p->fds[p->nb].pgsize = (uint64_t)st.st_blksize;
	p->nb++;
	return 0;
}

static int
clips_push(struct clips *cs, const struct clip *c)
{
	if (cs->n == cs->cap) {
		unsigned int cap = cs->cap != 0 ? cs->cap * 2 : MAPS_INIT;
		struct clip *v = realloc(cs->v, cap * sizeof(*v));

		if (v == NULL)
			return -ENOMEM;
		cs->v = v;
		cs->cap = cap;
	}
	cs->v[cs->n++] = *c;
	return 0;
}

/*
 * The page size of the mapping that starts at lo (KernelPageSize in /proc/self/smaps), or 0.
 * Only asked for hugetlb mappings: reading smaps walks every mapping's page tables.
 */
static uint64_t
smaps_page_size(unsigned long lo)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	char *line = NULL;
	size_t cap = 0;
	uint64_t kb = 0;
	bool in = false;

	if (f == NULL)
		return 0;
	while (getline(&line, &cap, f) > 0) {
		unsigned long a, b;
		unsigned long long v;

		/* A mapping's first line starts with its range; its fields start with a name. */
		if (sscanf(line, "%lx-%lx ", &a, &b) == 2) {
			if (in)
				break;
			in = a == lo;
			continue;
		}
		if (in && sscanf(line, "KernelPageSize: %llu kB", &v) == 1) {
			kb = v;
			break;
		}
	}
	free(line);
	fclose(f);
	return kb * 1024;
}

/*
 * Anonymous hugetlb memory as /proc/self/maps names it: "/anon_hugepage (deleted)", or
 * "anon_inode:[hugetlb]" on kernels that name it so, for MAP_HUGETLB private and shared.
 */
static bool
path_is_anon_hugetlb(const char *path)
{
	return strcmp(path, "/anon_hugepage") == 0 || strcmp(path, "anon_inode:[hugetlb]") == 0;
}

/*
 * Reads /proc/self/maps: the mappings overlapping [start, end), clipped, into cs, and
 * which table memfds are still mapped anywhere (used[i]). A hugetlb clip is widened to
 * whole huge pages (its mapping is aligned to them).
 */
static int
maps_read(struct verbs_pages *p, uintptr_t start, uintptr_t end, struct clips *cs, bool *used)
{
	const uint64_t base = (uint64_t)sysconf(_SC_PAGESIZE);
	FILE *f = fopen("/proc/self/maps", "re");
	char *line = NULL;
	size_t cap = 0;
	int ret = 0;

	if (f == NULL)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		unsigned long lo, hi, ino;
		unsigned long long pgoff;
		unsigned int maj, mnr;
		char perms[8], path[32] = "";
		struct clip c;
		int t;

		if (sscanf(line, "%lx-%lx %7s %llx %x:%x %lu %31s", &lo, &hi, perms, &pgoff,
			   &maj, &mnr, &ino, path) < 7)
			continue;
		t = perms[3] == 's' ? table_find(p, makedev(maj, mnr), (ino_t)ino) : -1;
		if (t >= 0)
			used[t] = true;
		if (hi <= start || lo >= end)
			continue;
		c.pgsize = base;
		if (t >= 0)
			c.pgsize = p->fds[t].pgsize;
		else if (path_is_anon_hugetlb(path) || strncmp(path, "/SYSV", 5) == 0)
			c.pgsize = smaps_page_size(lo);
		if (c.pgsize == 0 || (lo | hi) % c.pgsize != 0)
			c.pgsize = 0;	/* unknown or inconsistent: not movable, below */
		c.lo = lo > start ? lo : start;
		c.hi = hi < end ? hi : end;
		if (c.pgsize > base) {
			c.lo -= (c.lo - lo) % c.pgsize;
			c.hi += (hi - c.hi) % c.pgsize;
		}
		c.pgoff = pgoff + (c.lo - lo);
		c.prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
			 (perms[2] == 'x' ? PROT_EXEC : 0);
		c.table = t;
		/*
		 * [vdso], [vvar], [vsyscall] are the kernel's; [heap] and [stack] are ours.
		 * Anonymous shared memory (mmap MAP_SHARED|MAP_ANONYMOUS, which maps shows as
		 * /dev/zero (deleted)) is the process's own too: librpma registers such a page
		 * for every connection. Moved like private memory; only a child forked
		 * before the move and sharing it would stop seeing the parent's writes. The
		 * same goes for anonymous hugetlb memory, shared or private (libfabric's
		 * buffer pools), and SysV hugetlb segments (UCX's: shmget(SHM_HUGETLB), then
		 * IPC_RMID at once, so no other process can attach them; shmdt on the moved
		 * range then fails, and the pages stay mapped until munmap or exit).
		 */
		c.movable = t < 0 && perms[0] == 'r' && c.pgsize != 0 &&
			    ((perms[3] == 'p' && (path[0] != '[' || strcmp(path, "[heap]") == 0 ||
						  strncmp(path, "[stack", 6) == 0)) ||
			     (perms[3] == 's' && ino != 0 &&
			      (strcmp(path, "/dev/zero") == 0 || path_is_anon_hugetlb(path) ||
			       (strncmp(path, "/SYSV", 5) == 0 && c.pgsize > base))));
		ret = clips_push(cs, &c);
		if (ret < 0)
			break;
	}
	free(line);
	fclose(f);
	return ret;
}

/*
 * A hugetlb memfd of len bytes in pages of pgsize holding a copy of [lo, lo + len), or
 * -errno: ENOMEM (or another errno from the kernel) when the pool cannot supply the pages.
 * The copy goes through a second mapping: hugetlbfs has no write().
 */
static int
huge_memfd_copy(uintptr_t lo, uint64_t len, uint64_t pgsize)
{
	unsigned int shift = (unsigned int)__builtin_ctzll(pgsize);
	void *view;
	int fd, err;

	fd = memfd_create(MEMFD_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_HUGETLB |
			  (shift << MFD_HUGE_SHIFT));
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)len) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0)
		goto fail;
	/* Without MAP_NORESERVE the pages are reserved here: no free page is ENOMEM, not SIGBUS. */
	view = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (view == MAP_FAILED)
		goto fail;
	memcpy(view, (const void *)lo, len);
	munmap(view, len);
	return fd;
fail:
	err = errno;
	close(fd);
	return -err;
}

/* An ordinary memfd of len bytes holding a copy of [lo, lo + len), or -errno. */
static int
memfd_copy(uintptr_t lo, uint64_t len)
{
	uint64_t done = 0;
	int fd, err;

	fd = memfd_create(MEMFD_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)len) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0)
		goto fail;
	while (done < len) {
		/*
		 * The kernel reads the application's pages (EFAULT if one is not readable).
		 * The raw system call, not pwrite(): a sanitizer's pwrite interceptor would
		 * flag the allocator's redzones that share the pages with the buffer.
		 */
		ssize_t w = syscall(SYS_pwrite64, fd, (const void *)(lo + done), len - done,
				    (off_t)done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			goto fail;
		done += (uint64_t)w;
	}
	return fd;
fail:
	err = errno;
	close(fd);
	return -err;
}

/*
 * Copies [lo, hi) of a run of clips with the same page size into a new memfd and maps it
 * there; returns the fd or -errno.
 */
static int
run_move(const struct verbs_pages *p, const struct clip *run, unsigned int n)
{
	const uint64_t base = (uint64_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = run[0].lo, hi = run[n - 1].hi;
	uint64_t len = hi - lo;
	unsigned int i;
	int fd = -ENOMEM, err;

	/*
	 * Sealed at its size: droced maps it and must never see it shrink under its mapping
	 * (a SIGBUS there); droced refuses pieces of memfds not sealed against shrinking.
	 */
	if (run[0].pgsize > base && !p->no_huge_memfd)
		fd = huge_memfd_copy(lo, len, run[0].pgsize);
	if (fd < 0)
		fd = memfd_copy(lo, len);
	if (fd < 0)
		return fd;
	if (mmap((void *)lo, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
	    MAP_FAILED) {
		err = errno;
		close(fd);
		return -err;
	}
	for (i = 0; i < n; i++)
		if (run[i].prot != (PROT_READ | PROT_WRITE))
			mprotect((void *)run[i].lo, run[i].hi - run[i].lo, run[i].prot);
	return fd;
}

/* Adds a piece, merging it with the previous one when it continues it in the same memfd. */
static void
piece_add(struct verbs_piece *v, unsigned int *n, int t, uint64_t off, uint64_t len)
{
	if (*n > 0 && v[*n - 1].fd == t && v[*n - 1].off + v[*n - 1].len == off) {
		v[*n - 1].len += len;
		return;
	}
	v[*n].fd = t;
	v[*n].off = off;
	v[*n].len = len;
	(*n)++;
}

/* Whether clip i starts a new piece: a table clip, or the first clip of a run to move. */
static bool
run_starts(const struct clips *cs, unsigned int i)
{
	return cs->v[i].table >= 0 || i == 0 || cs->v[i - 1].table >= 0 ||
	       cs->v[i - 1].pgsize != cs->v[i].pgsize;
}

/*
 * Pieces (with table indices in .fd) that cover cs; moving runs of movable clips first.
 * Counts first, so that a range needing too many pieces moves nothing.
 */
static int
share_locked(struct verbs_pages *p, uintptr_t start, uintptr_t end, struct clips *cs,
	     struct verbs_piece *pieces, unsigned int max_pieces, unsigned int *nb)
{
	uintptr_t cur = start;
	unsigned int i, j, n = 0;
	int ret;

	/* Unmapped pages first: a range running off its buffer is EFAULT wherever it ends. */
	for (i = 0; i < cs->n; i++) {
		if (cs->v[i].lo != cur)
			return -EFAULT;
		cur = cs->v[i].hi;
	}
	if (cur != end)
		return -EFAULT;
	for (i = 0; i < cs->n; i++)
		if (cs->v[i].table < 0 && !cs->v[i].movable)
			return cs->v[i].prot & PROT_READ ? -EINVAL : -EFAULT;
	/*
	 * Upper bound of the pieces: one per table clip, one per run of movable clips of one
	 * page size.
	 */
	for (i = 0; i < cs->n; i++)
		if (run_starts(cs, i))
			n++;
	if (n > max_pieces)
		return -E2BIG;
	n = 0;
	for (i = 0; i < cs->n; i = j) {
		if (cs->v[i].table >= 0) {
			piece_add(pieces, &n, cs->v[i].table, cs->v[i].pgoff,
				  cs->v[i].hi - cs->v[i].lo);
			j = i + 1;
			continue;
		}
		for (j = i + 1; j < cs->n && !run_starts(cs, j); j++)
			;
		ret = run_move(p, &cs->v[i], j - i);
		if (ret < 0)
			return ret;
		if (table_add(p, ret) < 0) {
			/* The pages are moved and stay so; without a table entry they cannot be named. */
			close(ret);
			return -ENOMEM;
		}
		piece_add(pieces, &n, (int)p->nb - 1, 0, cs->v[j - 1].hi - cs->v[i].lo);
	}
	*nb = n;
	return 0;
}

/* Closes the memfds nothing maps any more (after the free of what was registered). */
static void
table_gc(struct verbs_pages *p, const bool *used)
{
	uint32_t i, k = 0;

	for (i = 0; i < p->nb; i++) {
		if (used[i])
			p->fds[k++] = p->fds[i];
		else
			close(p->fds[i].fd);
	}
	p->nb = k;
}

int
verbs_pages_share(struct verbs_pages *p, const void *addr, size_t len,
		  struct verbs_piece *pieces, unsigned int max_pieces,
		  unsigned int *nb_pieces, uint64_t *first_off)
{
	const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)addr, start, end;
	struct clips cs = { 0 };
	unsigned int i, n = 0;
	bool *used = NULL;
	int ret;

	*nb_pieces = 0;
	if (len == 0 || a + len < a || a + len > UINTPTR_MAX - page)
		return -EINVAL;
	start = a & ~(page - 1);
	end = (a + len + page - 1) & ~(page - 1);
	pthread_mutex_lock(&p->lock);
	used = calloc(p->nb + 1, sizeof(*used));
	if (used == NULL) {
		ret = -ENOMEM;
		goto out;
	}
	ret = maps_read(p, start, end, &cs, used);
	if (ret < 0)
		goto out;
	/* Hugetlb clips at either end were widened to whole huge pages. */
	if (cs.n > 0 && cs.v[0].lo < start)
		start = cs.v[0].lo;
	if (cs.n > 0 && cs.v[cs.n - 1].hi > end)
		end = cs.v[cs.n - 1].hi;
	/* Before moving: the clips' table indices must survive the compaction. */
	for (i = 0; i < cs.n; i++)
		if (cs.v[i].table >= 0) {
			int t = cs.v[i].table, k, before = 0;

			for (k = 0; k < t; k++)
				before += used[k] ? 1 : 0;
			cs.v[i].table = before;
		}
	table_gc(p, used);
	ret = share_locked(p, start, end, &cs, pieces, max_pieces, &n);
	if (ret < 0)
		goto out;
	for (i = 0; i < n; i++) {
		int fd = fcntl(p->fds[pieces[i].fd].fd, F_DUPFD_CLOEXEC, 0);

		if (fd < 0) {
			ret = -errno;
			verbs_pieces_close(pieces, i);
			goto out;
		}
		pieces[i].fd = fd;
	}
	*nb_pieces = n;
	*first_off = a - start;
out:
	pthread_mutex_unlock(&p->lock);
	free(used);
	free(cs.v);
	return ret;
}
