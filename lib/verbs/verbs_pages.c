/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * ibv_reg_mr's pages (verbs_pages.h): which are registered in place, which move, and the
 * count of registrations over every moved page. What is mapped where is read from
 * /proc/self/maps, not remembered: memory the application freed and mapped again at the
 * same address is something else now. A range is walked mapping by mapping ("clips"):
 *
 *   ours     a shared mapping of one of our memfds (pages moved before): a piece as it is;
 *   shared   any other shared mapping with a file behind it: a piece droced maps in place;
 *   private  private memory: runs of it are moved into a new memfd each (verbs_pages_move.c).
 *
 * Hugetlb mappings are taken whole huge pages at a time (a hugetlb mapping cannot be split
 * inside a page); their page size is read from /proc/self/smaps. Private hugetlb pages
 * move into a hugetlb memfd of the same page size, or an ordinary one when the pool has no
 * free pages (contents and addresses kept, TLB reach not).
 */

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "verbs_pages.h"

/* Initial room for the mappings that overlap a range; grows as needed. */
#define MAPS_INIT	16
/* The most mappings one move takes (verbs_pages_move.c's limit); a longer run is split. */
#define MAPS_RUN_MAX	16

enum clip_kind {
	CLIP_OURS,
	CLIP_SHARED,
	CLIP_PRIVATE,
	CLIP_NO,		/* cannot be registered: -EINVAL, or -EFAULT when unreadable */
};

/* One line of /proc/self/maps, clipped to the range being registered. */
struct clip {
	uintptr_t lo;
	uintptr_t hi;
	uint64_t pgoff;		/* file offset of lo */
	int prot;
	uint64_t pgsize;	/* page size of the mapping: > the base page for hugetlb */
	enum clip_kind kind;
	int table;		/* CLIP_OURS: index in the table */
	bool uffd_ok;		/* CLIP_PRIVATE: userfaultfd can write-protect it */
	dev_t dev;
	ino_t ino;
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
	verbs_pages_fork_track(p);
}

static void
table_close(struct verbs_pages *p)
{
	uint32_t i;

	for (i = 0; i < p->nb; i++) {
		close(p->fds[i].fd);
		free(p->fds[i].runs);
	}
	free(p->fds);
	p->fds = NULL;
	p->nb = 0;
	p->cap = 0;
}

void
verbs_pages_fini(struct verbs_pages *p)
{
	verbs_pages_fork_untrack(p);
	table_close(p);
	pthread_mutex_destroy(&p->lock);
}

void
verbs_pieces_close(struct verbs_piece *pieces, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (pieces[i].fd >= 0) {
			close(pieces[i].fd);
			pieces[i].fd = -1;
		}
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

/* Adds memfd fd, whose pages are its block size (hugetlb's, or the base page). */
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
	p->fds[p->nb] = (struct verbs_pages_fd){ .fd = fd, .dev = st.st_dev, .ino = st.st_ino,
						  .pgsize = (uint64_t)st.st_blksize };
	p->nb++;
	return (int)p->nb - 1;
}

static void
table_del(struct verbs_pages *p, uint32_t t)
{
	close(p->fds[t].fd);
	free(p->fds[t].runs);
	p->fds[t] = p->fds[--p->nb];
}

int
verbs_pages_prot(const char *perms)
{
	return (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
	       (perms[2] == 'x' ? PROT_EXEC : 0);
}

/* ---- registrations per memfd page range ---- */

/*
 * Adds delta (+1 or -1) to the count of [lo, hi) of f, pages not held counting 0. Ranges
 * that fall to 0 are appended to zero[] (at most max_zero, merged when adjacent) and the
 * count of them to *nb_zero. 0 or -ENOMEM (f unchanged).
 */
static int
runs_add(struct verbs_pages_fd *f, uint64_t lo, uint64_t hi, int delta,
	 struct verbs_pages_run *zero, unsigned int max_zero, unsigned int *nb_zero)
{
	uint32_t cap = 3 * f->nb_runs + 3, n = 0, i;
	struct verbs_pages_run *v = malloc(cap * sizeof(*v));
	uint64_t cur = lo;

#define EMIT(a, b, r) do {							\
		if ((a) < (b) && (r) > 0) {					\
			if (n > 0 && v[n - 1].hi == (a) && v[n - 1].refs == (r))	\
				v[n - 1].hi = (b);				\
			else							\
				v[n++] = (struct verbs_pages_run){ (a), (b), (r) };	\
		}								\
	} while (0)

	if (v == NULL)
		return -ENOMEM;
	for (i = 0; i < f->nb_runs; i++) {
		const struct verbs_pages_run *r = &f->runs[i];
		uint64_t a = r->lo > lo ? r->lo : lo, b = r->hi < hi ? r->hi : hi;

		if (r->hi <= lo || r->lo >= hi) {
			if (r->lo >= hi && cur < hi) {
				if (delta > 0)
					EMIT(cur, hi, 1u);
				cur = hi;
			}
			EMIT(r->lo, r->hi, r->refs);
			continue;
		}
		if (delta > 0 && cur < a)
			EMIT(cur, a, 1u);
		EMIT(r->lo, a, r->refs);
		if (delta < 0 && r->refs == 1 && zero != NULL) {
			if (*nb_zero > 0 && zero[*nb_zero - 1].hi == a)
				zero[*nb_zero - 1].hi = b;
			else if (*nb_zero < max_zero)
				zero[(*nb_zero)++] = (struct verbs_pages_run){ a, b, 0 };
		}
		EMIT(a, b, (uint32_t)((int64_t)r->refs + delta));
		EMIT(b, r->hi, r->refs);
		cur = b;
	}
	if (delta > 0 && cur < hi)
		EMIT(cur, hi, 1u);
#undef EMIT
	free(f->runs);
	f->runs = v;
	f->nb_runs = n;
	f->cap_runs = cap;
	return 0;
}

/* ---- reading the mappings ---- */

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
 * Only asked for mappings that may be hugetlb: reading smaps walks every mapping's pages.
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
 * A SysV segment: its file's inode is its shmid, 0 for an IPC namespace's first segment
 * (a fresh machine's), where any other shared mapping's inode is not 0.
 */
static bool
path_is_sysv(const char *path)
{
	return strncmp(path, "/SYSV", 5) == 0;
}

/* What a maps line is for registration; pgsize 0 when its pages are not consistent. */
static enum clip_kind
clip_classify(const char *perms, unsigned long ino, unsigned int maj, const char *path,
	      int table, uint64_t pgsize, bool *uffd_ok)
{
	bool anon = path[0] == '\0' || strcmp(path, "[heap]") == 0 ||
		    strncmp(path, "[stack", 6) == 0;

	/* userfaultfd protects anonymous, shmem and hugetlb memory: device 0 or no file. */
	*uffd_ok = anon || maj == 0;
	if (table >= 0)
		return CLIP_OURS;
	if (perms[0] != 'r' || pgsize == 0)
		return CLIP_NO;
	/* [vdso], [vvar], [vsyscall] are the kernel's. */
	if (path[0] == '[' && !anon)
		return CLIP_NO;
	if (perms[3] == 's')
		return ino != 0 || path_is_sysv(path) ? CLIP_SHARED : CLIP_NO;
	return CLIP_PRIVATE;
}

/* Reads /proc/self/maps: the mappings overlapping [start, end), clipped, into cs. */
static int
maps_read(struct verbs_pages *p, uintptr_t start, uintptr_t end, struct clips *cs)
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

		if (sscanf(line, "%lx-%lx %7s %llx %x:%x %lu %31s", &lo, &hi, perms, &pgoff,
			   &maj, &mnr, &ino, path) < 7)
			continue;
		if (hi <= start || lo >= end)
			continue;
		c.dev = makedev(maj, mnr);
		c.ino = (ino_t)ino;
		c.table = perms[3] == 's' ? table_find(p, c.dev, c.ino) : -1;
		c.pgsize = base;
		if (c.table >= 0)
			c.pgsize = p->fds[c.table].pgsize;
		else if (path_is_anon_hugetlb(path) ||
			 (maj == 0 && (ino != 0 || path_is_sysv(path))))
			c.pgsize = smaps_page_size(lo);
		if (c.pgsize == 0 || (lo | hi) % c.pgsize != 0)
			c.pgsize = 0;	/* unknown or inconsistent: not registrable, below */
		c.lo = lo > start ? lo : start;
		c.hi = hi < end ? hi : end;
		if (c.pgsize > base) {
			c.lo -= (c.lo - lo) % c.pgsize;
			c.hi += (hi - c.hi) % c.pgsize;
		}
		c.pgoff = pgoff + (c.lo - lo);
		c.prot = verbs_pages_prot(perms);
		c.kind = clip_classify(perms, ino, maj, path, c.table, c.pgsize, &c.uffd_ok);
		ret = clips_push(cs, &c);
		if (ret < 0)
			break;
	}
	free(line);
	fclose(f);
	return ret;
}

/* ---- sharing ---- */

/*
 * Where pieces start: at every clip but one that continues a run of private clips of one
 * page size (moved together, into one memfd), runs being at most MAPS_RUN_MAX clips. Also
 * an upper bound of the pieces (pieces of one file may still merge). Sets starts[] and
 * returns their count.
 */
static unsigned int
runs_plan(const struct clips *cs, bool *starts)
{
	unsigned int i, n = 0, run = 0;

	for (i = 0; i < cs->n; i++) {
		const struct clip *a = i > 0 ? &cs->v[i - 1] : NULL, *b = &cs->v[i];

		starts[i] = a == NULL || a->kind != CLIP_PRIVATE || b->kind != CLIP_PRIVATE ||
			    a->pgsize != b->pgsize || run == MAPS_RUN_MAX;
		run = starts[i] ? 1 : run + 1;
		n += starts[i] ? 1 : 0;
	}
	return n;
}

/* Adds a piece, merging it with the previous one when it continues it in the same file. */
static void
piece_add(struct verbs_piece *v, unsigned int *n, const struct verbs_piece *pc)
{
	struct verbs_piece *last = *n > 0 ? &v[*n - 1] : NULL;

	if (last != NULL && last->fd == pc->fd && last->dev == pc->dev && last->ino == pc->ino &&
	    last->off + last->len == pc->off && last->addr + last->len == pc->addr) {
		last->len += pc->len;
		return;
	}
	v[(*n)++] = *pc;
}

/*
 * Pieces that cover cs, moving runs of private clips first; for pieces of ours .fd is the
 * table index until verbs_pages_share dups the memfds. A reference is taken for each piece
 * of ours as it is made; on failure the caller releases the *nb made.
 */
static int
share_locked(struct verbs_pages *p, uintptr_t start, uintptr_t end, struct clips *cs,
	     struct verbs_piece *pieces, unsigned int max_pieces, unsigned int *nb)
{
	const uint64_t base = (uint64_t)sysconf(_SC_PAGESIZE);
	struct verbs_pages_span spans[MAPS_RUN_MAX];
	uintptr_t cur = start;
	unsigned int i, j, k;
	bool *starts;
	int ret = 0;

	*nb = 0;
	/* Unmapped pages first: a range running off its buffer is EFAULT wherever it ends. */
	for (i = 0; i < cs->n; i++) {
		if (cs->v[i].lo != cur)
			return -EFAULT;
		cur = cs->v[i].hi;
	}
	if (cur != end)
		return -EFAULT;
	for (i = 0; i < cs->n; i++)
		if (cs->v[i].kind == CLIP_NO)
			return cs->v[i].prot & PROT_READ ? -EINVAL : -EFAULT;
	starts = malloc(cs->n * sizeof(*starts));
	if (starts == NULL)
		return -ENOMEM;
	if (runs_plan(cs, starts) > max_pieces) {
		free(starts);
		return -E2BIG;
	}
	for (i = 0; i < cs->n && ret == 0; i = j) {
		const struct clip *c = &cs->v[i];
		struct verbs_piece pc = { .fd = c->table, .off = c->pgoff, .len = c->hi - c->lo,
					  .addr = c->lo, .dev = c->dev, .ino = c->ino };
		int t = c->table;

		for (j = i + 1; j < cs->n && !starts[j]; j++)
			;
		if (c->kind == CLIP_SHARED) {
			pc.fd = -1;
			piece_add(pieces, nb, &pc);
			continue;
		}
		if (c->kind == CLIP_PRIVATE) {
			for (k = i; k < j; k++)
				spans[k - i] = (struct verbs_pages_span){
					.lo = cs->v[k].lo, .hi = cs->v[k].hi, .prot = cs->v[k].prot,
					.uffd_ok = cs->v[k].uffd_ok };
			ret = verbs_pages_move_in(p, spans, j - i, c->pgsize, c->pgsize > base &&
						  !p->no_huge_memfd);
			if (ret < 0)
				break;
			t = table_add(p, ret);
			if (t < 0) {
				/* Moved; without a table entry it stays so until unmapped. */
				close(ret);
				ret = t;
				break;
			}
			pc = (struct verbs_piece){ .fd = t, .off = 0, .len = cs->v[j - 1].hi - c->lo,
						   .addr = c->lo, .dev = p->fds[t].dev,
						   .ino = p->fds[t].ino };
		}
		ret = runs_add(&p->fds[t], pc.off, pc.off + pc.len, 1, NULL, 0, NULL);
		if (ret == 0)
			piece_add(pieces, nb, &pc);
	}
	free(starts);
	return ret < 0 ? ret : 0;
}

/* Moves [off, off + len) of table memfd t back wherever the process maps it, and frees it. */
static void
move_back(struct verbs_pages *p, uint32_t t, uint64_t off, uint64_t len)
{
	struct verbs_pages_fd *f = &p->fds[t];
	FILE *maps = fopen("/proc/self/maps", "re");
	struct verbs_pages_span spans[MAPS_INIT];
	uint64_t offs[MAPS_INIT];	/* each span's offset in the memfd */
	unsigned int n = 0, i;
	char *line = NULL;
	size_t cap = 0;
	bool kept = false;

	if (maps == NULL)
		return;
	/* Gathered first: each move changes the maps being read. */
	while (getline(&line, &cap, maps) > 0) {
		unsigned long lo, hi, ino;
		unsigned long long pgoff;
		unsigned int maj, mnr;
		char perms[8];
		uint64_t a, b;

		if (sscanf(line, "%lx-%lx %7s %llx %x:%x %lu", &lo, &hi, perms, &pgoff, &maj, &mnr,
			   &ino) != 7 || perms[3] != 's' || makedev(maj, mnr) != f->dev ||
		    (ino_t)ino != f->ino)
			continue;
		a = pgoff > off ? pgoff : off;
		b = pgoff + (hi - lo) < off + len ? pgoff + (hi - lo) : off + len;
		if (a >= b)
			continue;
		if (n == MAPS_INIT) {
			kept = true;
			break;
		}
		offs[n] = a;
		spans[n++] = (struct verbs_pages_span){
			.lo = lo + (a - pgoff), .hi = lo + (b - pgoff), .uffd_ok = true,
			.prot = verbs_pages_prot(perms) };
	}
	free(line);
	fclose(maps);
	for (i = 0; i < n; i++)
		if (verbs_pages_move_out(p, f->fd, offs[i], f->pgsize, &spans[i]) != 0)
			kept = true;
	if (kept)
		return;
	/* Nobody maps these pages now (droced unmapped them with the MR): give them back. */
	fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len);
	if (f->nb_runs == 0)
		table_del(p, t);
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
	int ret;

	*nb_pieces = 0;
	if (len == 0 || a + len < a || a + len > UINTPTR_MAX - page)
		return -EINVAL;
	start = a & ~(page - 1);
	end = (a + len + page - 1) & ~(page - 1);
	pthread_mutex_lock(&p->lock);
	ret = maps_read(p, start, end, &cs);
	if (ret < 0)
		goto out;
	/* Hugetlb clips at either end were widened to whole huge pages. */
	if (cs.n > 0 && cs.v[0].lo < start)
		start = cs.v[0].lo;
	if (cs.n > 0 && cs.v[cs.n - 1].hi > end)
		end = cs.v[cs.n - 1].hi;
	ret = share_locked(p, start, end, &cs, pieces, max_pieces, &n);
	for (i = 0; ret == 0 && i < n; i++) {
		int fd;

		if (pieces[i].fd < 0)
			continue;
		fd = fcntl(p->fds[pieces[i].fd].fd, F_DUPFD_CLOEXEC, 0);
		if (fd < 0)
			ret = -errno;
		else
			pieces[i].fd = fd;
	}
	if (ret < 0) {
		/* Table indices or fds mixed: the pieces are named by dev and ino to release. */
		pthread_mutex_unlock(&p->lock);
		for (; i < n; i++)
			pieces[i].fd = -1;
		verbs_pieces_close(pieces, n);
		verbs_pages_release(p, pieces, n);
		free(cs.v);
		return ret;
	}
	*nb_pieces = n;
	*first_off = a - start;
out:
	pthread_mutex_unlock(&p->lock);
	free(cs.v);
	return ret;
}

void
verbs_pages_release(struct verbs_pages *p, const struct verbs_piece *pieces, unsigned int n)
{
	struct verbs_pages_run *zero = NULL;
	unsigned int i, k, nz;
	int t;

	pthread_mutex_lock(&p->lock);
	for (i = 0; i < n; i++) {
		t = table_find(p, pieces[i].dev, pieces[i].ino);
		if (t < 0)
			continue;	/* registered in place, or its memfd gone with a fork */
		/* At most one range falls to 0 per run held, and one more. */
		free(zero);
		zero = malloc((p->fds[t].nb_runs + 1) * sizeof(*zero));
		nz = 0;
		if (zero == NULL ||
		    runs_add(&p->fds[t], pieces[i].off, pieces[i].off + pieces[i].len, -1, zero,
			     p->fds[t].nb_runs + 1, &nz) != 0)
			continue;
		/* Backwards: move_back may drop table entry t once it holds nothing. */
		for (k = nz; k > 0; k--) {
			move_back(p, (uint32_t)t, zero[k - 1].lo, zero[k - 1].hi - zero[k - 1].lo);
			if ((uint32_t)t >= p->nb || p->fds[t].dev != pieces[i].dev ||
			    p->fds[t].ino != pieces[i].ino)
				break;
		}
	}
	pthread_mutex_unlock(&p->lock);
	free(zero);
}
