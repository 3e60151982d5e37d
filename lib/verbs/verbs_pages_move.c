/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Moving pages between private memory and our memfds without losing a write
 * (verbs_pages.h). A move copies a range and then maps the copy over it; a write between
 * the copy and the remap would land in the old pages and be lost. So the writable part of
 * the range is write-protected for the move:
 *
 * - with userfaultfd (UFFDIO_WRITEPROTECT: anonymous memory since Linux 5.7, shmem and
 *   hugetlb since 5.19, unpopulated pages since 6.4): a writer, user or kernel, sleeps in
 *   the fault until the uffd is closed after the remap, then retries on the new mapping.
 *   Nobody reads the uffd: closing it is what wakes the writers. Unprivileged processes
 *   get a user-mode-only uffd, with which a system call writing a page in the middle of
 *   its move fails with EFAULT instead of waiting;
 * - where userfaultfd cannot protect a mapping (a private file mapping: a program's
 *   initialised data, a file mapped copy-on-write), the range is made read-only and a
 *   SIGSEGV handler holds a writer that faults there until the remap, then returns so
 *   the write is done again on the new mapping. Faults elsewhere go to the handler that
 *   was installed before (the default action when none was).
 *
 * Read-only mappings need neither. The thread doing the move must not write the range
 * itself: between protecting and remapping it only makes system calls (no malloc, no
 * stdio), and when the range is close to its own stack (a stack buffer registered) the
 * move runs on a thread of its own.
 */

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/memfd.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "verbs_pages.h"

#define MEMFD_NAME	"droce-mr"
/* Linux 6.4's: WP on unpopulated anonymous pages (older headers lack the name). */
#ifndef UFFD_FEATURE_WP_UNPOPULATED
#define UFFD_FEATURE_WP_UNPOPULATED	(1 << 13)
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23
#endif
/*
 * How far below the caller's stack pointer the move's own frames and a signal frame can
 * reach, and above it the caller's frames: a range this close moves on another thread.
 */
#define STACK_BELOW	(256u << 10)
#define STACK_ABOVE	(16u << 10)
/* Ranges frozen lately: a writer that faulted in one may reach the handler late. */
#define FREEZE_RECENT	8
/* The most spans one move protects (a run of mappings of one page size). */
#define MOVE_MAX_SPANS	64	/* struct guard's frozen bits */

/* ---- userfaultfd ---- */

static pthread_once_t uffd_once = PTHREAD_ONCE_INIT;
static uint64_t uffd_features;	/* what the kernel offers of the WP features we use */

/*
 * A new userfaultfd, or -errno. In order: the system call (CAP_SYS_PTRACE, or
 * vm.unprivileged_userfaultfd), /dev/userfaultfd (Linux 6.1; its file mode decides), then
 * the user-mode-only kind any process may have (5.11).
 */
static int
uffd_new(void)
{
	int fd, dev;

	fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fd >= 0)
		return fd;
	dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
	if (dev >= 0) {
		fd = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK);
		close(dev);
		if (fd >= 0)
			return fd;
	}
	fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	return fd >= 0 ? fd : -errno;
}

/* UFFDIO_API takes one call per uffd: a throwaway one tells what the kernel has. */
static void
uffd_probe(void)
{
	struct uffdio_api api = { .api = UFFD_API };
	int fd = uffd_new();

	if (fd < 0)
		return;
	if (ioctl(fd, UFFDIO_API, &api) == 0)
		uffd_features = api.features & (UFFD_FEATURE_WP_UNPOPULATED |
						 UFFD_FEATURE_WP_HUGETLBFS_SHMEM);
	close(fd);
}

/* A userfaultfd set up with the WP features the kernel has, or -errno. */
static int
uffd_open(void)
{
	struct uffdio_api api = { .api = UFFD_API };
	int fd, err;

	pthread_once(&uffd_once, uffd_probe);
	fd = uffd_new();
	if (fd < 0)
		return fd;
	api.features = uffd_features;
	if (ioctl(fd, UFFDIO_API, &api) != 0) {
		err = errno;
		close(fd);
		return -err;
	}
	return fd;
}

/*
 * Write-protects [lo, hi) through uffd: 0, or -errno when userfaultfd cannot protect that
 * mapping (-EINVAL: not anonymous, shmem or hugetlb; -EBUSY: the application registered
 * it with a uffd of its own).
 */
static int
uffd_protect(int uffd, uintptr_t lo, uintptr_t hi, bool anon)
{
	struct uffdio_register reg = {
		.range = { .start = lo, .len = hi - lo },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};
	struct uffdio_writeprotect wp = {
		.range = { .start = lo, .len = hi - lo },
		.mode = UFFDIO_WRITEPROTECT_MODE_WP,
	};

	/*
	 * Without WP_UNPOPULATED a page not yet faulted in is not protected: fault them all
	 * in first (the copy would read them anyway).
	 */
	if (anon && !(uffd_features & UFFD_FEATURE_WP_UNPOPULATED))
		madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
	if (!anon && !(uffd_features & UFFD_FEATURE_WP_HUGETLBFS_SHMEM))
		return -EINVAL;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg) != 0)
		return -errno;
	if (ioctl(uffd, UFFDIO_WRITEPROTECT, &wp) != 0) {
		int err = errno;

		ioctl(uffd, UFFDIO_UNREGISTER, &reg.range);
		return -err;
	}
	return 0;
}

/* ---- the SIGSEGV freeze, for what userfaultfd cannot protect ---- */

static struct {
	pthread_mutex_t lock;		/* one freeze at a time */
	struct sigaction prev;		/* the handler before ours: other faults go there */
	_Atomic uint32_t gen;		/* futex word: odd while a freeze is on */
	_Atomic uintptr_t lo[FREEZE_RECENT];
	_Atomic uintptr_t hi[FREEZE_RECENT];
	_Atomic uint32_t next;
} frz = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* A fault of another cause: as if our handler were not there. Async-signal-safe. */
static void
freeze_chain(int sig, siginfo_t *si, void *uc)
{
	if (frz.prev.sa_flags & SA_SIGINFO) {
		frz.prev.sa_sigaction(sig, si, uc);
		return;
	}
	if (frz.prev.sa_handler != SIG_DFL && frz.prev.sa_handler != SIG_IGN) {
		frz.prev.sa_handler(sig);
		return;
	}
	/* The default action: the faulting access runs again and kills as it would have. */
	signal(sig, SIG_DFL);
}

/* Parses a hex number at *p, moving *p past it. */
static uintptr_t
hex_take(const char **p, const char *end)
{
	uintptr_t v = 0;

	for (; *p < end; (*p)++) {
		char c = **p;

		if (c >= '0' && c <= '9')
			v = v * 16 + (uintptr_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v * 16 + (uintptr_t)(c - 'a' + 10);
		else
			break;
	}
	return v;
}

/*
 * Whether the page at a is writable now, from /proc/self/maps with async-signal-safe calls
 * only (open, read, close). Asked for a fault in a range frozen lately while no freeze is
 * on: a writer whose signal came after the freeze ended writes again; a real fault (the
 * program made the page read-only since) goes on to the program's handler.
 */
static bool
writable_now(uintptr_t a)
{
	char buf[4096];
	size_t have = 0;
	bool w = false, done = false;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	while (!done) {
		ssize_t r = read(fd, buf + have, sizeof(buf) - have);
		const char *p = buf, *end, *nl;

		if (r <= 0)
			break;
		end = buf + have + (size_t)r;
		while ((nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
			uintptr_t lo = hex_take(&p, nl), hi;

			p++;	/* '-' */
			hi = hex_take(&p, nl);
			if (a >= lo && a < hi) {
				w = p + 2 < nl && p[2] == 'w';
				done = true;
				break;
			}
			p = nl + 1;
		}
		have = (size_t)(end - p);
		memmove(buf, p, have);
		if (have == sizeof(buf))
			break;
	}
	close(fd);
	return w;
}

/*
 * A write to a frozen range waits for the freeze to end (FUTEX_WAIT, async-signal-safe)
 * and returns: the access is done again, on the new mapping.
 */
static void
freeze_handler(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	uint32_t i, g;
	bool recent;

	if (si->si_code != SEGV_ACCERR) {
		freeze_chain(sig, si, uc);
		return;
	}
	do {
		/* The freeze on now first: an older one may have covered the same page. */
		g = atomic_load(&frz.gen);
		i = (atomic_load(&frz.next) + FREEZE_RECENT - 1) % FREEZE_RECENT;
		if ((g & 1) && a >= atomic_load(&frz.lo[i]) && a < atomic_load(&frz.hi[i])) {
			while (g & 1) {
				syscall(SYS_futex, &frz.gen, FUTEX_WAIT, g, NULL, NULL, 0);
				g = atomic_load(&frz.gen);
			}
			return;
		}
		recent = false;
		for (i = 0; i < FREEZE_RECENT; i++)
			recent |= a >= atomic_load(&frz.lo[i]) && a < atomic_load(&frz.hi[i]);
		if (recent && writable_now(a))
			return;
		/* Not writable: a real fault, unless a freeze began meanwhile. */
	} while (recent && atomic_load(&frz.gen) != g);
	freeze_chain(sig, si, uc);
}

/*
 * Starts a freeze of the writers of [lo, hi): the handler installed (and left so: a writer
 * that faulted may be delivered its signal after the freeze ends). The caller then makes
 * the spans read-only. Takes frz.lock, which freeze_end releases. 0 or -errno.
 */
static int
freeze_begin(uintptr_t lo, uintptr_t hi)
{
	struct sigaction sa, cur;
	uint32_t slot;

	pthread_mutex_lock(&frz.lock);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = freeze_handler;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, &cur) != 0) {
		int err = errno;

		pthread_mutex_unlock(&frz.lock);
		return -err;
	}
	if (!(cur.sa_flags & SA_SIGINFO) || cur.sa_sigaction != freeze_handler)
		frz.prev = cur;
	slot = atomic_load(&frz.next);
	atomic_store(&frz.lo[slot], lo);
	atomic_store(&frz.hi[slot], hi);
	atomic_store(&frz.next, (slot + 1) % FREEZE_RECENT);
	atomic_fetch_add(&frz.gen, 1);	/* odd: on */
	return 0;
}

/* Ends the freeze: the writers held go on (after the remap: on the new mapping). */
static void
freeze_end(void)
{
	atomic_fetch_add(&frz.gen, 1);	/* even: off */
	syscall(SYS_futex, &frz.gen, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
	pthread_mutex_unlock(&frz.lock);
}

/* ---- what holds the writers off a move ---- */

struct guard {
	int uffd;		/* -1: none opened */
	uint64_t frozen;	/* bit i: span i is frozen */
};

/*
 * After the remap (or its failure): the waiting writers go on. A failed move leaves the
 * old mappings, so their protection is taken back first.
 */
static void
guard_off(struct guard *g, const struct verbs_pages_span *spans, unsigned int n, bool moved)
{
	unsigned int i;

	if (!moved)
		for (i = 0; i < n; i++) {
			struct uffdio_range r = { .start = spans[i].lo,
						  .len = spans[i].hi - spans[i].lo };

			if (g->frozen & (1ull << i))
				mprotect((void *)spans[i].lo, spans[i].hi - spans[i].lo,
					 spans[i].prot);
			else if (g->uffd >= 0 && (spans[i].prot & PROT_WRITE))
				ioctl(g->uffd, UFFDIO_UNREGISTER, &r);
		}
	if (g->uffd >= 0)
		close(g->uffd);	/* wakes every writer waiting on it */
	if (g->frozen != 0)
		freeze_end();
}

/*
 * Protects the writable spans of [spans, spans + n) (n <= MOVE_MAX_SPANS). anon: they are
 * private memory (else our shared memfd mappings). What userfaultfd cannot protect (no
 * userfaultfd here, a private file mapping, a range the program registered with a uffd of
 * its own) is frozen. 0 or -errno, nothing protected.
 */
static int
guard_on(struct guard *g, const struct verbs_pages_span *spans, unsigned int n, bool anon,
	 bool no_uffd)
{
	uintptr_t flo = UINTPTR_MAX, fhi = 0;
	bool tried = false;
	unsigned int i;
	int ret;

	g->uffd = -1;
	g->frozen = 0;
	for (i = 0; i < n; i++) {
		if (!(spans[i].prot & PROT_WRITE))
			continue;
		if (spans[i].uffd_ok && !tried && !no_uffd) {
			ret = uffd_open();
			g->uffd = ret >= 0 ? ret : -1;
			tried = true;
		}
		if (!spans[i].uffd_ok || g->uffd < 0 ||
		    uffd_protect(g->uffd, spans[i].lo, spans[i].hi, anon) != 0) {
			g->frozen |= 1ull << i;
			flo = spans[i].lo < flo ? spans[i].lo : flo;
			fhi = spans[i].hi;
		}
	}
	if (g->frozen == 0)
		return 0;
	ret = freeze_begin(flo, fhi);
	if (ret != 0) {
		g->frozen = 0;
		guard_off(g, spans, n, false);
		return ret;
	}
	for (i = 0; i < n; i++)
		if ((g->frozen & (1ull << i)) &&
		    mprotect((void *)spans[i].lo, spans[i].hi - spans[i].lo,
			     spans[i].prot & ~PROT_WRITE) != 0) {
			ret = -errno;
			guard_off(g, spans, n, false);
			return ret;
		}
	return 0;
}

/* ---- copies ---- */

/*
 * A memfd of len bytes (hugetlb pages of pgsize when huge) sealed at its size: droced maps
 * it and must never see it shrink under its mapping (a SIGBUS there); droced refuses
 * pieces of memfds not sealed against shrinking. -errno on failure.
 */
static int
memfd_sized(uint64_t len, uint64_t pgsize, bool huge)
{
	unsigned int flags = MFD_CLOEXEC | MFD_ALLOW_SEALING;
	int fd, err;

	if (huge)
		flags |= MFD_HUGETLB | ((unsigned int)__builtin_ctzll(pgsize) << MFD_HUGE_SHIFT);
	fd = memfd_create(MEMFD_NAME, flags);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)len) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0) {
		err = errno;
		close(fd);
		return -err;
	}
	return fd;
}

/*
 * Copies [lo, lo + len) of the application into fd at 0. Through a second mapping for
 * hugetlb (no write() there); else the kernel reads the application's pages, with the raw
 * system call, not pwrite(): a sanitizer's interceptor would flag the allocator's redzones
 * that share the pages with the buffer. Only system calls: no write to the range.
 */
static int
copy_in(int fd, uintptr_t lo, uint64_t len, bool huge)
{
	uint64_t done = 0;

	if (huge) {
		/* Without MAP_NORESERVE the pages are reserved here: no free page is ENOMEM. */
		void *view = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

		if (view == MAP_FAILED)
			return -errno;
		memcpy(view, (const void *)lo, len);
		munmap(view, len);
		return 0;
	}
	while (done < len) {
		ssize_t w = syscall(SYS_pwrite64, fd, (const void *)(lo + done), len - done,
				    (off_t)done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		done += (uint64_t)w;
	}
	return 0;
}

int
verbs_pages_copy_out(int fd, uint64_t off, uint64_t len, void *dst)
{
	uint64_t pos = off, end = off + len;

	/* Only the memfd's data: its holes stay untouched pages in dst. */
	while (pos < end) {
		off_t data = lseek(fd, (off_t)pos, SEEK_DATA);
		off_t hole;

		if (data < 0 || (uint64_t)data >= end)
			break;
		hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0 || (uint64_t)hole > end)
			hole = (off_t)end;
		pos = (uint64_t)data;
		/* Faulting the pages in at once costs about half of faulting them one by one. */
		madvise((uint8_t *)dst + (pos - off), (uint64_t)hole - pos, MADV_POPULATE_WRITE);
		while (pos < (uint64_t)hole) {
			ssize_t r = syscall(SYS_pread64, fd, (uint8_t *)dst + (pos - off),
					    (uint64_t)hole - pos, (off_t)pos);

			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				return r < 0 ? -errno : -EIO;
			pos += (uint64_t)r;
		}
	}
	return 0;
}

/* ---- moves, on the caller's thread or on one of their own ---- */

struct move {
	const struct verbs_pages_span *spans;
	unsigned int n;
	uint64_t pgsize;
	bool huge;		/* into (in) or from (out) a hugetlb memfd */
	bool in;		/* private -> memfd; else memfd -> private */
	bool no_uffd;		/* verbs_pages.no_uffd */
	int fd;			/* in: the new memfd; out: ours */
	uint64_t off;		/* out: the memfd offset of spans[0].lo */
	void *tmp;		/* out: the private copy, mapped aside */
	int ret;
};

/* Maps fd over the spans, with their protection, and keeps it from being forked. */
static int
map_in(const struct move *m)
{
	uintptr_t lo = m->spans[0].lo, hi = m->spans[m->n - 1].hi;
	unsigned int i;

	if (mmap((void *)lo, hi - lo, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, m->fd,
		 0) == MAP_FAILED)
		return -errno;
	for (i = 0; i < m->n; i++)
		if (m->spans[i].prot != (PROT_READ | PROT_WRITE))
			mprotect((void *)m->spans[i].lo, m->spans[i].hi - m->spans[i].lo,
				 m->spans[i].prot);
	/* A child gets its own copy (verbs_pages_fork.c), never these shared pages. */
	madvise((void *)lo, hi - lo, MADV_DONTFORK);
	return 0;
}

/*
 * The move itself. It writes nothing but its own frame between guard_on and guard_off:
 * *m may be on the caller's stack, in the range (it is only read).
 */
static int
move_work(const struct move *m)
{
	const struct verbs_pages_span *s = m->spans;
	uintptr_t lo = s[0].lo, hi = s[m->n - 1].hi;
	struct guard g;
	int ret;

	ret = guard_on(&g, s, m->n, m->in, m->no_uffd);
	if (ret != 0)
		return ret;
	if (m->in) {
		ret = copy_in(m->fd, lo, hi - lo, m->huge);
		if (ret == 0)
			ret = map_in(m);
	} else {
		ret = verbs_pages_copy_out(m->fd, m->off, hi - lo, m->tmp);
		if (ret == 0 && s[0].prot != (PROT_READ | PROT_WRITE))
			mprotect(m->tmp, hi - lo, s[0].prot);
		/* Atomic: the shared pages give way to the private copy in one step. */
		if (ret == 0 && mremap(m->tmp, hi - lo, hi - lo, MREMAP_MAYMOVE | MREMAP_FIXED,
				       (void *)lo) == MAP_FAILED)
			ret = -errno;
	}
	guard_off(&g, s, m->n, ret == 0);
	return ret;
}

static void *
move_run(void *arg)
{
	struct move *m = arg;

	m->ret = move_work(m);
	return NULL;
}

/* Whether [lo, hi) is where this thread's stack is being written (or its errno). */
static bool
near_own_stack(uintptr_t lo, uintptr_t hi)
{
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	uintptr_t e = (uintptr_t)&errno;

	return (lo < sp + STACK_ABOVE && hi > sp - STACK_BELOW) || (e >= lo && e < hi);
}

static int
move_do(const struct verbs_pages *p, struct move *m)
{
	pthread_t t;

	if (p->move_on_thread || near_own_stack(m->spans[0].lo, m->spans[m->n - 1].hi)) {
		if (pthread_create(&t, NULL, move_run, m) != 0)
			return -EAGAIN;
		pthread_join(t, NULL);
		return m->ret;
	}
	return move_work(m);
}

int
verbs_pages_move_in(const struct verbs_pages *p, const struct verbs_pages_span *spans,
		    unsigned int n, uint64_t pgsize, bool huge_memfd)
{
	uint64_t len = spans[n - 1].hi - spans[0].lo;
	struct move m = { .spans = spans, .n = n, .pgsize = pgsize, .in = true,
			  .no_uffd = p->no_uffd };
	int ret;

	m.huge = huge_memfd;
	m.fd = memfd_sized(len, pgsize, m.huge);
	if (m.fd < 0 && m.huge) {
		/* No free huge pages for the copy: ordinary pages keep contents and addresses. */
		m.huge = false;
		m.fd = memfd_sized(len, pgsize, false);
	}
	if (m.fd < 0)
		return m.fd;
	ret = move_do(p, &m);
	if (ret != 0) {
		close(m.fd);
		return ret;
	}
	return m.fd;
}

int
verbs_pages_move_out(const struct verbs_pages *p, int fd, uint64_t off, uint64_t pgsize,
		     const struct verbs_pages_span *span)
{
	uint64_t len = span->hi - span->lo;
	struct move m = { .spans = span, .n = 1, .pgsize = pgsize, .fd = fd, .off = off,
			  .no_uffd = p->no_uffd };
	int ret;

	/* Hugetlb pages come back as hugetlb pages when the pool has them. */
	m.tmp = MAP_FAILED;
	if (pgsize > (uint64_t)sysconf(_SC_PAGESIZE))
		m.tmp = mmap(NULL, len, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB |
			     (__builtin_ctzll(pgsize) << MAP_HUGE_SHIFT), -1, 0);
	if (m.tmp == MAP_FAILED)
		m.tmp = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			     -1, 0);
	if (m.tmp == MAP_FAILED)
		return -errno;
	ret = move_do(p, &m);
	if (ret != 0)
		munmap(m.tmp, len);
	return ret;
}
