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
 *   anonymous zero page over the faulting page when it lies in an in-place piece, so the
 *   access is done again on that page (reads see zeros, writes go nowhere, as the client's
 *   own access past the end of its file would fail) and counts it; any other SIGBUS kills
 *   as before.
 *
 * Views keep the client's alignment (a view address is congruent to the client's address
 * modulo the largest page size of its pieces) and every piece must start on a page of its
 * own size there, so hugetlb pieces map at huge page boundaries. Control thread only, but
 * for the signal handler, which runs on the engine that faulted.
 */

#include <assert.h>
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
/* In-place pieces the SIGBUS handler looks after: at most this many are mapped at once. */
#define GUARD_SLOTS	8192

/* Access bits that let droced write the memory (an MW writes only through such an MR, C10-74). */
#define ACCESS_WRITES	(DROCE_SHM_ACCESS_LOCAL_WRITE | DROCE_SHM_ACCESS_REMOTE_WRITE | \
			 DROCE_SHM_ACCESS_REMOTE_ATOMIC)

/* The handler reads the table: an atomic's lock could be held by the thread it interrupted. */
static_assert(ATOMIC_LONG_LOCK_FREE == 2 && ATOMIC_LLONG_LOCK_FREE == 2,
	      "the SIGBUS guard needs lock-free atomics");

/* ---- the SIGBUS guard ---- */

/*
 * One slot per in-place piece mapped: [lo, hi) in a view, its page size, the pages the
 * handler replaced. The control thread fills hi, pgsize and zeroed before lo (lo 0: free);
 * it empties a slot only after no engine can be inside the view (droced_mr_view_unmap).
 */
static struct {
	_Atomic uintptr_t lo[GUARD_SLOTS];
	_Atomic uintptr_t hi[GUARD_SLOTS];
	_Atomic uint64_t pgsize[GUARD_SLOTS];
	_Atomic uint64_t zeroed[GUARD_SLOTS];
	struct sigaction prev;
	bool installed;
} guard;

/* The slot whose piece holds a, or GUARD_SLOTS. Async-signal-safe. */
static uint32_t
guard_find(uintptr_t a)
{
	uint32_t i;

	for (i = 0; i < GUARD_SLOTS; i++) {
		uintptr_t lo = atomic_load(&guard.lo[i]);

		if (lo != 0 && a >= lo && a < atomic_load(&guard.hi[i]))
			return i;
	}
	return GUARD_SLOTS;
}

/*
 * An anonymous zero page of size pg over the page of a: a huge page in a hugetlb piece
 * (whose mapping can only be replaced whole), or small ones when the pool has none.
 * mmap is a system call: async-signal-safe.
 */
static bool
guard_zero_page(uintptr_t a, uint64_t pg)
{
	void *page = (void *)(a & ~(uintptr_t)(pg - 1));
	const int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED;
	const int huge = MAP_HUGETLB | (__builtin_ctzll(pg) << MAP_HUGE_SHIFT);

	if (pg > DROCED_PAGE &&
	    mmap(page, pg, PROT_READ | PROT_WRITE, flags | huge, -1, 0) != MAP_FAILED)
		return true;
	return mmap(page, pg, PROT_READ | PROT_WRITE, flags, -1, 0) != MAP_FAILED;
}

/* Not ours: whoever had SIGBUS before, or the default action (death, as without droced's). */
static void
guard_pass_on(int sig, siginfo_t *si, void *uc)
{
	struct sigaction dfl;

	if (guard.prev.sa_flags & SA_SIGINFO) {
		guard.prev.sa_sigaction(sig, si, uc);
		return;
	}
	if (guard.prev.sa_handler != SIG_DFL && guard.prev.sa_handler != SIG_IGN) {
		guard.prev.sa_handler(sig);
		return;
	}
	/* A fault's SIGBUS cannot be ignored: SIG_IGN dies too. */
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	raise(sig);
}

/* SIGBUS on any thread; for an engine's access past the end of an in-place piece's file. */
static void
guard_handler(int sig, siginfo_t *si, void *uc)
{
	uint32_t i;

	/* BUS_ADRERR: a page past the file's end; a machine check or a kill() is not ours. */
	if (si->si_code == BUS_ADRERR) {
		i = guard_find((uintptr_t)si->si_addr);
		if (i < GUARD_SLOTS &&
		    guard_zero_page((uintptr_t)si->si_addr, atomic_load(&guard.pgsize[i]))) {
			atomic_fetch_add(&guard.zeroed[i], 1);
			return;
		}
	}
	guard_pass_on(sig, si, uc);
}

/* Once, at the first in-place registration: droced without any never changes SIGBUS. */
static int
guard_install(void)
{
	struct sigaction sa;

	if (guard.installed)
		return 0;
	/* prev complete before the handler can run and read it. */
	if (sigaction(SIGBUS, NULL, &guard.prev) != 0)
		return -errno;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = guard_handler;
	/* SA_NODEFER: the default action raised from inside the handler takes effect at once. */
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, NULL) != 0)
		return -errno;
	guard.installed = true;
	return 0;
}

static int
guard_add(uintptr_t lo, uintptr_t hi, uint64_t pgsize)
{
	uint32_t i;
	int rc = guard_install();

	if (rc != 0)
		return rc;
	for (i = 0; i < GUARD_SLOTS; i++)
		if (atomic_load(&guard.lo[i]) == 0) {
			atomic_store(&guard.hi[i], hi);
			atomic_store(&guard.pgsize[i], pgsize);
			atomic_store(&guard.zeroed[i], 0);
			atomic_store(&guard.lo[i], lo);
			return 0;
		}
	DROCED_LOG(WARNING, "%u in-place memory region pieces: no room for another",
		   GUARD_SLOTS);
	return -ENOMEM;
}

/* Frees the slots of the pieces in [lo, hi); the pages their handler replaced. */
static uint64_t
guard_del(uintptr_t lo, uintptr_t hi)
{
	uint64_t zeroed = 0;
	uint32_t i;

	for (i = 0; i < GUARD_SLOTS; i++) {
		uintptr_t l = atomic_load(&guard.lo[i]);

		if (l != 0 && l >= lo && l < hi) {
			zeroed += atomic_load(&guard.zeroed[i]);
			atomic_store(&guard.lo[i], 0);
		}
	}
	return zeroed;
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

/* The page size of a piece's file: its huge page size when hugetlbfs. */
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
 * The client's mappings over [addr, addr + len): they must follow each other (one VMA, or
 * a file mapping the kernel split in several, e.g. by an mprotect), all shared and
 * readable, of one file at offsets continuing off, writable when write is asked. The
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

	if (end <= addr)
		return -EFAULT;
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
		/* Inode 0 is a file too: a SysV segment of id 0 (the fstat below checks). */
		if (m.perms[3] != 's' || m.dev != first->dev || m.ino != first->ino ||
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
	/*
	 * The file the maps line named (not another mapped there since), and a regular one:
	 * a device node opened anew by droced need not map what the client's open does.
	 */
	if (fstat(fd, &st) != 0 || st.st_dev != m.dev || st.st_ino != m.ino ||
	    !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	*pgsize = fd_pgsize(fd);
	/*
	 * Pages past the file's end cannot be registered (the kernel's pin fails on them too);
	 * a truncation after this check is the SIGBUS guard's.
	 */
	if (pc->off + pc->len > ((uint64_t)st.st_size + *pgsize - 1) / *pgsize * *pgsize) {
		close(fd);
		return -EFAULT;
	}
	return fd;
}

/*
 * The fd of piece pc and its page size: for a MAPPING piece the file opened here (the
 * caller closes it), else the next of the fds passed (*k counts them), checked. An fd or
 * -errno.
 */
static int
piece_open(const struct droced_client *c, const struct droce_proto_mr_piece *pc, bool write,
	   const int *fds, unsigned int nfds, unsigned int *k, uint64_t *pgsize)
{
	int fd, rc;

	if (pc->flags & DROCE_PROTO_PIECE_MAPPING)
		return mapping_open(c->pid, pc, write, pgsize);
	if (*k >= nfds)
		return -EINVAL;
	fd = fds[(*k)++];
	rc = piece_check(fd, pc);
	if (rc != 0)
		return rc;
	*pgsize = fd_pgsize(fd);
	return fd;
}

/* A range of len bytes whose start is congruent to want modulo align, or NULL. */
static uint8_t *
view_reserve(uint64_t len, uint64_t align, uint64_t want)
{
	uint8_t *v;
	uintptr_t start;

	if (len > UINT64_MAX - align)
		return NULL;
	v = mmap(NULL, len + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
		 0);
	if (v == MAP_FAILED)
		return NULL;
	start = (uintptr_t)v + (want % align + align - (uintptr_t)v % align) % align;
	if (start > (uintptr_t)v)
		munmap(v, start - (uintptr_t)v);
	/* start < v + align: a tail is always left over. */
	munmap((void *)(start + len), (uintptr_t)v + align - start);
	return (uint8_t *)start;
}

/*
 * Each piece at its place in view v, over the reservation. Memfds always writable: a later
 * rereg may add write access; in-place pieces as the access allows, as droced opened them.
 */
static int
pieces_map(uint8_t *v, const struct droce_proto_mr_piece *pieces, uint32_t np, const int *pfd,
	   bool write)
{
	uint64_t pos = 0;
	uint32_t i;

	for (i = 0; i < np; i++) {
		bool ro = !write && (pieces[i].flags & DROCE_PROTO_PIECE_MAPPING);

		if (mmap(v + pos, pieces[i].len, ro ? PROT_READ : PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, pfd[i], (off_t)pieces[i].off) == MAP_FAILED)
			return errno == ENOMEM ? -ENOMEM : -EINVAL;
		pos += pieces[i].len;
	}
	return 0;
}

/* The in-place pieces of view v [v, v + len) into the SIGBUS guard, all or none. */
static int
pieces_guard(uint8_t *v, uint64_t len, const struct droce_proto_mr_piece *pieces, uint32_t np,
	     const uint64_t *pg)
{
	uint64_t pos = 0;
	uint32_t i;
	int rc;

	for (i = 0; i < np; pos += pieces[i++].len) {
		if (!(pieces[i].flags & DROCE_PROTO_PIECE_MAPPING))
			continue;
		rc = guard_add((uintptr_t)v + pos, (uintptr_t)v + pos + pieces[i].len, pg[i]);
		if (rc != 0) {
			guard_del((uintptr_t)v, (uintptr_t)v + len);
			return rc;
		}
	}
	return 0;
}

int
droced_mr_view_map(const struct droced_client *c, const struct droce_proto_mr_piece *pieces,
		   uint32_t np, const int *fds, unsigned int nfds, uint32_t access,
		   uint64_t first_off, uint64_t length, struct droced_mr_view *out)
{
	const bool write = access & ACCESS_WRITES;
	int pfd[DROCE_PROTO_MR_MAX_PIECES];
	uint64_t pg[DROCE_PROTO_MR_MAX_PIECES];
	uint64_t total = 0, align = DROCED_PAGE;
	bool in_place = false;
	unsigned int k = 0;
	uint32_t i;
	uint8_t *v = NULL;
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
		in_place |= pc->flags & DROCE_PROTO_PIECE_MAPPING;
		rc = piece_open(c, pc, write, fds, nfds, &k, &pg[i]);
		if (rc < 0)
			break;
		pfd[i] = rc;
		rc = 0;
		/*
		 * Whole pages of its file, on a page of that size in the view: the view keeps
		 * the client's address modulo the largest page, so the client's place decides.
		 */
		if (pc->off % pg[i] != 0 || pc->len % pg[i] != 0 ||
		    (pieces[0].addr + total - pc->len) % pg[i] != 0)
			rc = -EINVAL;
		if (pg[i] > align)
			align = pg[i];
	}
	if (rc == 0 && (k != nfds || length == 0 || first_off >= total ||
			length > total - first_off))
		rc = -EINVAL;
	if (rc == 0) {
		v = view_reserve(total, align, pieces[0].addr);
		if (v == NULL)
			rc = -ENOMEM;
	}
	if (rc == 0)
		rc = pieces_map(v, pieces, np, pfd, write);
	if (rc == 0 && in_place)
		rc = pieces_guard(v, total, pieces, np, pg);
	if (rc != 0 && v != NULL)
		munmap(v, total);
	/* The fds opened here; the memfds are the caller's. */
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

bool
droced_mr_view_allows(const struct droced_mr_view *view, uint32_t access)
{
	return !(view->read_only && (access & ACCESS_WRITES));
}

void
droced_mr_view_unmap(struct droced_mr_view *view)
{
	uint64_t zeroed;

	if (view->base == NULL)
		return;
	zeroed = guard_del((uintptr_t)view->base, (uintptr_t)view->base + view->len);
	if (zeroed != 0)
		DROCED_LOG(NOTICE, "in-place memory region: %" PRIu64 " pages read or written past "
			   "the end of its file (truncated), zero pages mapped there", zeroed);
	munmap(view->base, view->len);
	view->base = NULL;
}
