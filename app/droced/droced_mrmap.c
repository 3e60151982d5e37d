/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * A memory region's view: its pieces mapped one after another into one reserved range,
 * contiguous as in the application (droce_shm_proto.h, struct droce_proto_mr_piece).
 *
 * - A memfd piece comes with its fd, sealed against shrinking (piece_check): it can never
 *   fault in droced.
 * - A MAPPING piece is a shared mapping of the client's own, registered in place: droced
 *   opens the file the client maps there, /proc/<pid>/map_files/<start>-<end>, after
 *   reading /proc/<pid>/maps: the mappings over the piece are shared, readable, of one file
 *   at the piece's offset, and writable when the MR allows a write (else EFAULT, as the
 *   kernel's pin of a read-only page for writing). The opened file must be the one the
 *   maps line names (device and inode), so a client that swaps its mapping between the
 *   read and the open gains nothing. Opening map_files takes CAP_SYS_ADMIN (or
 *   CAP_CHECKPOINT_RESTORE) and ptrace access to the client: droced's, not the client's.
 * - Such a file cannot be sealed: anyone may truncate it under droced's mapping, and an
 *   engine touching a page past the new end takes SIGBUS. droced's SIGBUS handler maps an
 *   anonymous page over the faulting page when it lies in an in-place view, so the access
 *   is done again on that page (reads see zeros, writes go nowhere, as the client's own
 *   access past the end of its file would fail); any other SIGBUS kills as before.
 *
 * Views keep the client's alignment (a view address is congruent to the client's address
 * modulo the largest page size of its pieces), so hugetlb pieces map at huge page
 * boundaries. Control thread only, but for the signal handler.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "droced_loc.h"

#define HUGETLBFS_MAGIC	0x958458f6
/* In-place views the SIGBUS handler looks after: at most this many MRs hold such pieces. */
#define GUARD_SLOTS	4096

/* Access bits that let droced write the memory. */
#define ACCESS_WRITES	(DROCE_SHM_ACCESS_LOCAL_WRITE | DROCE_SHM_ACCESS_REMOTE_WRITE | \
			 DROCE_SHM_ACCESS_REMOTE_ATOMIC)

/* ---- the SIGBUS guard ---- */

static struct {
	_Atomic uintptr_t lo[GUARD_SLOTS];	/* 0: free */
	_Atomic uintptr_t hi[GUARD_SLOTS];
	_Atomic uint64_t pgsize[GUARD_SLOTS];
	struct sigaction prev;
	bool installed;
} guard;

static void
guard_handler(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	uint32_t i;

	for (i = 0; i < GUARD_SLOTS; i++) {
		uintptr_t lo = atomic_load(&guard.lo[i]);
		uint64_t pg;

		if (lo == 0 || a < lo || a >= atomic_load(&guard.hi[i]))
			continue;
		pg = atomic_load(&guard.pgsize[i]);
		/* mmap is a system call: async-signal-safe. */
		if (mmap((void *)(a & ~(pg - 1)), pg, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED |
			 (pg > DROCED_PAGE ? MAP_HUGETLB | (__builtin_ctzll(pg) << MAP_HUGE_SHIFT) :
			  0), -1, 0) != MAP_FAILED)
			return;
		/* No huge page to put there: small pages over the whole huge page. */
		if (mmap((void *)(a & ~(pg - 1)), pg, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED)
			return;
		break;
	}
	if (guard.prev.sa_flags & SA_SIGINFO) {
		guard.prev.sa_sigaction(sig, si, uc);
		return;
	}
	if (guard.prev.sa_handler != SIG_DFL && guard.prev.sa_handler != SIG_IGN) {
		guard.prev.sa_handler(sig);
		return;
	}
	signal(sig, SIG_DFL);	/* the access runs again and kills as it would have */
}

static int
guard_add(uintptr_t lo, uintptr_t hi, uint64_t pgsize)
{
	struct sigaction sa;
	uint32_t i;

	if (!guard.installed) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = guard_handler;
		sa.sa_flags = SA_SIGINFO | SA_NODEFER;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGBUS, &sa, &guard.prev) != 0)
			return -errno;
		guard.installed = true;
	}
	for (i = 0; i < GUARD_SLOTS; i++)
		if (atomic_load(&guard.lo[i]) == 0) {
			atomic_store(&guard.hi[i], hi);
			atomic_store(&guard.pgsize[i], pgsize);
			atomic_store(&guard.lo[i], lo);
			return 0;
		}
	DROCED_LOG(WARNING, "%u in-place memory regions: no room for another", GUARD_SLOTS);
	return -ENOMEM;
}

static void
guard_del(uintptr_t lo)
{
	uint32_t i;

	for (i = 0; i < GUARD_SLOTS; i++)
		if (atomic_load(&guard.lo[i]) == lo) {
			atomic_store(&guard.lo[i], 0);
			return;
		}
}

/* ---- pieces ---- */

/*
 * A memfd piece's file must really hold [off, off + len) and must stay that long: an
 * access past the end of a shared file mapping is a SIGBUS in droced. Sealing it against
 * shrinking (libdroce creates its memfds with MFD_ALLOW_SEALING) makes the check permanent.
 */
static int
piece_check(int fd, const struct droce_proto_mr_piece *pc)
{
	struct stat st;
	int seals;

	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < pc->off + pc->len)
		return -EINVAL;
	seals = fcntl(fd, F_GET_SEALS);
	if (seals >= 0 && !(seals & F_SEAL_SHRINK) && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) == 0)
		seals |= F_SEAL_SHRINK;
	if (seals < 0 || !(seals & F_SEAL_SHRINK))
		return -EINVAL;
	return 0;
}

/* One line of /proc/<pid>/maps. */
struct maps_line {
	uintptr_t lo;
	uintptr_t hi;
	char perms[8];
	uint64_t pgoff;
	dev_t dev;
	ino_t ino;
};

/*
 * The client's mappings over [addr, addr + len): they must follow each other, all shared
 * and readable, of one file at offsets continuing off, writable when write is asked. The
 * first one in *first. 0, -EFAULT (not mapped there, or not writable for a write), or
 * -EINVAL (not a shared file mapping at that offset).
 */
static int
maps_check(pid_t pid, uint64_t addr, uint64_t len, uint64_t off, bool write,
	   struct maps_line *first)
{
	char path[64], *line = NULL;
	uint64_t cur = addr, end = addr + len;
	size_t cap = 0;
	FILE *f;
	int ret = -EFAULT;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return -errno;
	while (cur < end && getline(&line, &cap, f) > 0) {
		struct maps_line m;
		unsigned long lo, hi, ino;
		unsigned long long pgoff;
		unsigned int maj, mnr;

		if (sscanf(line, "%lx-%lx %7s %llx %x:%x %lu", &lo, &hi, m.perms, &pgoff, &maj,
			   &mnr, &ino) != 7 || hi <= cur)
			continue;
		if (lo > cur)
			break;	/* a hole */
		m.lo = lo;
		m.hi = hi;
		m.pgoff = pgoff;
		m.dev = makedev(maj, mnr);
		m.ino = (ino_t)ino;
		if (cur == addr)
			*first = m;
		if (m.perms[3] != 's' || ino == 0 || m.dev != first->dev || m.ino != first->ino ||
		    pgoff + (cur - lo) != off + (cur - addr)) {
			ret = -EINVAL;
			break;
		}
		if (m.perms[0] != 'r' || (write && m.perms[1] != 'w'))
			break;
		cur = hi;
	}
	if (cur >= end)
		ret = 0;
	free(line);
	fclose(f);
	return ret;
}

/*
 * The file the client maps at a MAPPING piece, opened for droced, and its page size. An fd
 * or -errno.
 */
static int
mapping_open(pid_t pid, const struct droce_proto_mr_piece *pc, bool write, uint64_t *pgsize)
{
	struct maps_line m = { 0 };
	char path[96];
	struct statfs sfs;
	struct stat st;
	int fd, ret;

	ret = maps_check(pid, pc->addr, pc->len, pc->off, write, &m);
	if (ret != 0)
		return ret;
	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIxPTR "-%" PRIxPTR, (int)pid, m.lo,
		 m.hi);
	fd = open(path, (write ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		DROCED_LOG(NOTICE, "client pid %d: cannot open its mapping %s: %s", (int)pid, path,
			   strerror(errno));
		return ret;
	}
	if (fstat(fd, &st) != 0 || st.st_dev != m.dev || st.st_ino != m.ino ||
	    fstatfs(fd, &sfs) != 0) {
		close(fd);
		return -EINVAL;
	}
	*pgsize = DROCED_PAGE;
	if ((unsigned long)sfs.f_type == HUGETLBFS_MAGIC)
		*pgsize = (uint64_t)st.st_blksize;
	return fd;
}

/* The page size of a memfd piece's file: its huge page size when hugetlbfs. */
static uint64_t
fd_pgsize(int fd)
{
	struct statfs sfs;
	struct stat st;

	if (fstatfs(fd, &sfs) == 0 && (unsigned long)sfs.f_type == HUGETLBFS_MAGIC &&
	    fstat(fd, &st) == 0)
		return (uint64_t)st.st_blksize;
	return DROCED_PAGE;
}

/* A range of len bytes whose start is congruent to want modulo align, or NULL. */
static uint8_t *
view_reserve(uint64_t len, uint64_t align, uint64_t want)
{
	uint8_t *v = mmap(NULL, len + align, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uintptr_t start, r;

	if (v == MAP_FAILED)
		return NULL;
	r = (uintptr_t)v % align;
	start = (uintptr_t)v + ((want % align) + align - r) % align;
	if (start > (uintptr_t)v)
		munmap(v, start - (uintptr_t)v);
	if ((uintptr_t)v + len + align > start + len)
		munmap((void *)(start + len), (uintptr_t)v + len + align - (start + len));
	return (uint8_t *)start;
}

int
droced_mr_view_map(const struct droced_client *c, const struct droce_proto_mr_piece *pieces,
		   uint32_t np, const int *fds, unsigned int nfds, uint32_t access,
		   uint64_t first_off, uint64_t length, struct droced_mr_view *out)
{
	const bool write = access & ACCESS_WRITES;
	int pfd[DROCE_PROTO_MR_MAX_PIECES];
	uint64_t pg[DROCE_PROTO_MR_MAX_PIECES];
	uint64_t total = 0, pos = 0, align = DROCED_PAGE;
	bool in_place = false;
	unsigned int k = 0;
	uint32_t i;
	uint8_t *v;
	int rc = 0;

	for (i = 0; i < np; i++)
		pfd[i] = -1;
	for (i = 0; i < np && rc == 0; i++) {
		const struct droce_proto_mr_piece *pc = &pieces[i];

		if (pc->len == 0 || pc->off % DROCED_PAGE != 0 || pc->len % DROCED_PAGE != 0 ||
		    pc->off + pc->len < pc->off || (pc->flags & ~DROCE_PROTO_PIECE_MAPPING) ||
		    total + pc->len < total) {
			rc = -EINVAL;
			break;
		}
		total += pc->len;
		if (pc->flags & DROCE_PROTO_PIECE_MAPPING) {
			rc = mapping_open(c->pid, pc, write, &pg[i]);
			if (rc >= 0) {
				pfd[i] = rc;
				rc = 0;
			}
			in_place = true;
		} else if (k >= nfds) {
			rc = -EINVAL;
		} else {
			rc = piece_check(fds[k], pc);
			pg[i] = fd_pgsize(fds[k]);
			pfd[i] = fds[k++];
		}
		/* At its place in the view (aligned as the client's), whole pages of its file. */
		if (rc == 0 && (pc->off % pg[i] != 0 || pc->len % pg[i] != 0 ||
				(pieces[0].addr + total - pc->len) % pg[i] != 0))
			rc = -EINVAL;
		if (rc == 0 && pg[i] > align)
			align = pg[i];
	}
	if (rc == 0 && (k != nfds || length == 0 || first_off >= total ||
			length > total - first_off))
		rc = -EINVAL;
	v = rc == 0 ? view_reserve(total, align, pieces[0].addr) : NULL;
	if (rc == 0 && v == NULL)
		rc = -ENOMEM;
	/* Memfds always writable: a later rereg may add write access. */
	for (i = 0; rc == 0 && i < np; i++) {
		bool ro = !write && (pieces[i].flags & DROCE_PROTO_PIECE_MAPPING);

		if (mmap(v + pos, pieces[i].len, ro ? PROT_READ : PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, pfd[i], (off_t)pieces[i].off) == MAP_FAILED)
			rc = errno == ENOMEM ? -ENOMEM : -EINVAL;
		pos += pieces[i].len;
	}
	if (rc == 0 && in_place)
		rc = guard_add((uintptr_t)v, (uintptr_t)v + total, align);
	if (rc != 0 && v != NULL)
		munmap(v, total);
	for (i = 0; i < np; i++)
		if (pfd[i] >= 0 && (pieces[i].flags & DROCE_PROTO_PIECE_MAPPING))
			close(pfd[i]);
	if (rc != 0)
		return rc;
	out->base = v;
	out->len = total;
	out->read_only = in_place && !write;
	return 0;
}

void
droced_mr_view_unmap(struct droced_mr_view *view)
{
	if (view->base == NULL)
		return;
	guard_del((uintptr_t)view->base);
	munmap(view->base, view->len);
	view->base = NULL;
}
