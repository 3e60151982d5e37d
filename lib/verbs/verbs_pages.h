/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VERBS_PAGES_H
#define VERBS_PAGES_H

/*
 * The application memory behind ibv_reg_mr, made reachable by droced without changing
 * what the program sees (doc/verbs-coverage.md, "Memory registration"):
 *
 * - Shared file mappings (POSIX and SysV shared memory, regular, tmpfs and hugetlbfs files,
 *   anonymous shared memory) are registered in place: a piece names the mapping and droced
 *   maps the same file range (DROCE_PROTO_PIECE_MAPPING). Nothing moves.
 * - Private memory moves: its pages are copied into a memfd that is mapped MAP_SHARED over
 *   the same addresses, while the range is write-protected (verbs_pages_move.c) so that a
 *   concurrent writer waits for the move instead of losing its write. Moved pages are
 *   counted per memfd page range; when the last registration over them goes
 *   (verbs_pages_release) they are moved back, under the same protection, into private
 *   anonymous memory, so MADV_DONTNEED, fork and the process's accounting treat them as
 *   before.
 * - fork(): moved ranges are MADV_DONTFORK; a child gets a private copy of them made at
 *   the fork (verbs_pages_fork.c), or, after verbs_pages_fork_safe (ibv_fork_init,
 *   RDMAV_FORK_SAFE), nothing there.
 *
 * Separate from the rest of libdroce (no socket, no context) so that the unit tests can
 * call it on their own. Control path only: never called while posting.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * One piece of a registered range: len bytes at offset off of a file, mapped at addr in
 * this process. fd is a dup of one of our memfds that the caller closes (verbs_pieces_close),
 * or -1 for a shared mapping of the application's own, registered in place. dev and ino name
 * the file, for verbs_pages_release.
 */
struct verbs_piece {
	int fd;
	uint64_t off;
	uint64_t len;
	uint64_t addr;
	dev_t dev;
	ino_t ino;
};

/* How many registrations hold each page range of a memfd: runs with refs > 0, sorted. */
struct verbs_pages_run {
	uint64_t lo;
	uint64_t hi;
	uint32_t refs;
};

struct verbs_pages_fd {
	int fd;
	dev_t dev;
	ino_t ino;
	uint64_t pgsize;	/* its pages: the base page, or a huge page for a hugetlb memfd */
	uint32_t nb_runs;
	uint32_t cap_runs;
	struct verbs_pages_run *runs;
};

/* The memfds this process created for moved pages, and what holds them. */
struct verbs_pages {
	pthread_mutex_t lock;
	uint32_t nb;
	uint32_t cap;
	struct verbs_pages_fd *fds;
	/* Hugetlb pages go into ordinary memfds, as when the pool has none free (tests). */
	bool no_huge_memfd;
	/* Moves run on a thread of their own (tests: as when the caller's stack is in range). */
	bool move_on_thread;
	/* No userfaultfd: every writable page is frozen instead (tests: as without one). */
	bool no_uffd;
	struct verbs_pages *next;	/* in the list the fork handlers walk */
};

void verbs_pages_init(struct verbs_pages *p);
/* Closes the table's memfds; pages still moved stay mapped where they are. */
void verbs_pages_fini(struct verbs_pages *p);

/*
 * Makes the pages under [addr, addr + len) reachable by droced and describes them: up to
 * max_pieces pieces, in address order, that together cover exactly the page-aligned range,
 * and *first_off = addr minus the range's first page. Every piece holds a reference on its
 * pages until verbs_pages_release. In hugetlb memory the range's pages are its huge pages.
 * 0, or -errno with no piece returned and nothing held:
 *   -EINVAL  len 0, addr + len wraps, or a page that cannot be registered ([vdso] and the
 *            like, a hugetlb mapping split off-size);
 *   -EFAULT  a page in the range is not mapped, or not readable;
 *   -E2BIG   more than max_pieces pieces would be needed;
 *   -EPERM   private memory must move and no write protection can be had for it
 *            (userfaultfd refused, see verbs_pages_move.c);
 *   -ENOMEM and other errnos from memfd_create, ftruncate, write, mmap, userfaultfd.
 */
int verbs_pages_share(struct verbs_pages *p, const void *addr, size_t len,
		      struct verbs_piece *pieces, unsigned int max_pieces,
		      unsigned int *nb_pieces, uint64_t *first_off);

/*
 * Drops the references of n pieces that verbs_pages_share returned (their fds may be closed
 * already). Pages of ours that no registration holds any more are moved back into private
 * anonymous memory where they are mapped, and their memfd pages freed.
 */
void verbs_pages_release(struct verbs_pages *p, const struct verbs_piece *pieces,
			 unsigned int n);

/* The protection a /proc/self/maps perms field ("rw-p") names. */
int verbs_pages_prot(const char *perms);

/* Closes the fds of n pieces (those >= 0) and marks them closed. */
void verbs_pieces_close(struct verbs_piece *pieces, unsigned int n);

/*
 * From now on a forked child gets no copy of the moved ranges (they are absent in it, as
 * with ibv_fork_init on a kernel that pins): fork costs no copy. verbs_pages_fork_safe()
 * tells whether it is on (also when RDMAV_FORK_SAFE or IBV_FORK_SAFE is set).
 */
void verbs_pages_set_fork_safe(void);
bool verbs_pages_fork_safe(void);

/* ---- verbs_pages_move.c: moves under write protection ---- */

/* A range of one mapping, as /proc/self/maps describes it. */
struct verbs_pages_span {
	uintptr_t lo;
	uintptr_t hi;
	int prot;
	bool uffd_ok;		/* anonymous, shmem or hugetlb: userfaultfd can protect it */
};

/*
 * Copies the private pages of spans[0..n) (contiguous, one page size pgsize) into a new
 * memfd and maps it MAP_SHARED over them, keeping their protection; writers of the range
 * wait until it is done. The memfd, or -errno.
 */
int verbs_pages_move_in(const struct verbs_pages *p, const struct verbs_pages_span *spans,
			unsigned int n, uint64_t pgsize, bool huge_memfd);

/*
 * Puts private anonymous memory holding a copy of memfd fd's [off, off + span.hi - span.lo)
 * in place of span (where the process maps that memfd range), writers waiting. 0 or -errno
 * (the range then stays as it was).
 */
int verbs_pages_move_out(const struct verbs_pages *p, int fd, uint64_t off, uint64_t pgsize,
			 const struct verbs_pages_span *span);

/* Copies memfd fd's [off, off + len) into dst, leaving dst's pages for holes untouched. */
int verbs_pages_copy_out(int fd, uint64_t off, uint64_t len, void *dst);

/* ---- verbs_pages_fork.c ---- */

/* Adds p to what the fork handlers look after (installed once). */
void verbs_pages_fork_track(struct verbs_pages *p);
void verbs_pages_fork_untrack(struct verbs_pages *p);

#endif /* VERBS_PAGES_H */
