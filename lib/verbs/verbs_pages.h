/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef VERBS_PAGES_H
#define VERBS_PAGES_H

/*
 * Moving application pages into shared memory in place, for ibv_reg_mr (DESIGN.md
 * "Memory"): the pages under a range are copied into a memfd that is then mapped
 * MAP_SHARED|MAP_FIXED over the same addresses, so the application keeps its pointers and
 * its data while droced can map the same pages. Pages moved once stay moved (and shared)
 * for the life of the mapping; a later registration that covers them reuses them.
 *
 * Separate from the rest of libdroce (no socket, no context) so that the unit tests can
 * call it on their own.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One piece of a page range: len bytes at offset off of memfd fd (a dup the caller owns). */
struct verbs_piece {
	int fd;
	uint64_t off;
	uint64_t len;
};

struct verbs_pages_fd {
	int fd;
	dev_t dev;
	ino_t ino;
	uint64_t pgsize;	/* its pages: the base page, or a huge page for a hugetlb memfd */
};

/*
 * The memfds this process created for moved pages. A memfd no longer mapped anywhere in
 * the process (the application unmapped or freed the memory) is closed at the next call,
 * so its pages are freed once droced lets go of them too.
 */
struct verbs_pages {
	pthread_mutex_t lock;
	uint32_t nb;
	uint32_t cap;
	struct verbs_pages_fd *fds;
	/* Hugetlb pages go into ordinary memfds, as when the pool has none free (tests). */
	bool no_huge_memfd;
};

#define VERBS_PAGES_INITIALIZER	{ .lock = PTHREAD_MUTEX_INITIALIZER }

void verbs_pages_init(struct verbs_pages *p);
/* Closes the table's memfds; moved pages stay mapped where they are. */
void verbs_pages_fini(struct verbs_pages *p);

/*
 * Makes the pages under [addr, addr + len) shared and describes them: up to max_pieces
 * pieces, in address order, that together cover exactly the page-aligned range, and
 * *first_off = addr minus the range's first page. In hugetlb memory (MAP_HUGETLB) the
 * range's pages are its huge pages: the pieces cover them whole, moved into a hugetlb
 * memfd of the same page size (an ordinary memfd when the pool has no free huge pages).
 * Pages already in a memfd of the table are not moved again. 0, or -errno with no piece
 * returned:
 *   -EINVAL  len 0, addr + len wraps, or a page that cannot be moved (a shared mapping
 *            that is not one of ours, [vdso] and the like, a hugetlb mapping split off-size);
 *   -EFAULT  a page in the range is not mapped, or not readable;
 *   -E2BIG   more than max_pieces pieces would be needed;
 *   -ENOMEM and other errnos from memfd_create, ftruncate, write, mmap.
 * Pages moved before a failure stay moved (their contents are unchanged).
 * Not safe against another thread writing the same pages while they move: a write between
 * the copy and the remap is lost, as with a fork during a copy.
 */
int verbs_pages_share(struct verbs_pages *p, const void *addr, size_t len,
		      struct verbs_piece *pieces, unsigned int max_pieces,
		      unsigned int *nb_pieces, uint64_t *first_off);

/* Closes the fds of n pieces. */
void verbs_pieces_close(struct verbs_piece *pieces, unsigned int n);

#endif /* VERBS_PAGES_H */
