/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * fork() with moved pages (verbs_pages.h). Moved ranges are shared memfd mappings marked
 * MADV_DONTFORK, so a child never shares them with its parent. What the child finds there
 * instead is Linux's answer for pinned pages:
 *
 * - by default (what rdma-core calls IBV_FORK_UNNEEDED: Linux 5.13 and later copy pinned
 *   pages for the child), a private copy made at the fork: the prepare handler copies every
 *   moved range that is mapped into private memory aside, the child puts those copies in
 *   place, the parent drops them. Cost: one copy of the moved memory per fork;
 * - after ibv_fork_init() or with RDMAV_FORK_SAFE / IBV_FORK_SAFE set (IBV_FORK_ENABLED),
 *   nothing: the ranges are absent in the child, as with rdma-core's MADV_DONTFORK. No copy.
 *
 * A child owns none of its parent's registrations: its tables start empty. The handlers are
 * installed with the first table; processes that never register pay nothing at fork.
 */

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "verbs_pages.h"

/* One moved range copied aside for the child. */
struct fork_copy {
	void *copy;
	uintptr_t at;
	uint64_t len;
};

static struct {
	pthread_mutex_t lock;		/* the list; held from prepare to parent/child */
	struct verbs_pages *head;
	pthread_once_t once;
	atomic_bool safe;
	struct fork_copy *copies;
	unsigned int nb_copies;
	unsigned int cap_copies;
} fk = { .lock = PTHREAD_MUTEX_INITIALIZER, .once = PTHREAD_ONCE_INIT };

void
verbs_pages_set_fork_safe(void)
{
	atomic_store(&fk.safe, true);
}

bool
verbs_pages_fork_safe(void)
{
	return atomic_load(&fk.safe) || getenv("RDMAV_FORK_SAFE") != NULL ||
	       getenv("IBV_FORK_SAFE") != NULL;
}

static int
copy_push(void *copy, uintptr_t at, uint64_t len)
{
	if (fk.nb_copies == fk.cap_copies) {
		unsigned int cap = fk.cap_copies != 0 ? fk.cap_copies * 2 : 16;
		struct fork_copy *v = realloc(fk.copies, cap * sizeof(*v));

		if (v == NULL)
			return -ENOMEM;
		fk.copies = v;
		fk.cap_copies = cap;
	}
	fk.copies[fk.nb_copies++] = (struct fork_copy){ copy, at, len };
	return 0;
}

/* The table memfd of p behind (dev, ino), or NULL. */
static const struct verbs_pages_fd *
fd_of(const struct verbs_pages *p, dev_t dev, ino_t ino)
{
	uint32_t i;

	for (i = 0; i < p->nb; i++)
		if (p->fds[i].dev == dev && p->fds[i].ino == ino)
			return &p->fds[i];
	return NULL;
}

/*
 * Copies aside every mapping of a table memfd, with its protection. A copy that cannot be
 * made leaves that range absent in the child (as with fork_safe): never shared.
 */
static void
copies_make(void)
{
	FILE *maps = fopen("/proc/self/maps", "re");
	char *line = NULL;
	size_t cap = 0;

	if (maps == NULL)
		return;
	while (getline(&line, &cap, maps) > 0) {
		unsigned long lo, hi, ino;
		unsigned long long pgoff;
		unsigned int maj, mnr;
		const struct verbs_pages_fd *f = NULL;
		const struct verbs_pages *p;
		char perms[8];
		void *copy;
		int prot;

		if (sscanf(line, "%lx-%lx %7s %llx %x:%x %lu", &lo, &hi, perms, &pgoff, &maj, &mnr,
			   &ino) != 7 || perms[3] != 's')
			continue;
		for (p = fk.head; p != NULL && f == NULL; p = p->next)
			f = fd_of(p, makedev(maj, mnr), (ino_t)ino);
		if (f == NULL)
			continue;
		copy = mmap(NULL, hi - lo, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			    -1, 0);
		if (copy == MAP_FAILED)
			continue;
		prot = verbs_pages_prot(perms);
		if (verbs_pages_copy_out(f->fd, pgoff, hi - lo, copy) != 0 ||
		    (prot != (PROT_READ | PROT_WRITE) && mprotect(copy, hi - lo, prot) != 0) ||
		    copy_push(copy, lo, hi - lo) != 0)
			munmap(copy, hi - lo);
	}
	free(line);
	fclose(maps);
}

static void
fork_prepare(void)
{
	struct verbs_pages *p;

	pthread_mutex_lock(&fk.lock);
	for (p = fk.head; p != NULL; p = p->next)
		pthread_mutex_lock(&p->lock);
	fk.nb_copies = 0;
	if (!verbs_pages_fork_safe())
		copies_make();
}

static void
fork_parent(void)
{
	struct verbs_pages *p;
	unsigned int i;

	for (i = 0; i < fk.nb_copies; i++)
		munmap(fk.copies[i].copy, fk.copies[i].len);
	fk.nb_copies = 0;
	for (p = fk.head; p != NULL; p = p->next)
		pthread_mutex_unlock(&p->lock);
	pthread_mutex_unlock(&fk.lock);
}

/*
 * The child: the copies where the moved ranges were (absent since MADV_DONTFORK), and
 * tables that hold nothing (the registrations are the parent's).
 */
static void
fork_child(void)
{
	struct verbs_pages *p;
	unsigned int i;
	uint32_t k;

	for (i = 0; i < fk.nb_copies; i++)
		if (mremap(fk.copies[i].copy, fk.copies[i].len, fk.copies[i].len,
			   MREMAP_MAYMOVE | MREMAP_FIXED, (void *)fk.copies[i].at) == MAP_FAILED)
			munmap(fk.copies[i].copy, fk.copies[i].len);
	fk.nb_copies = 0;
	for (p = fk.head; p != NULL; p = p->next) {
		for (k = 0; k < p->nb; k++) {
			close(p->fds[k].fd);
			free(p->fds[k].runs);
		}
		p->nb = 0;
		pthread_mutex_init(&p->lock, NULL);
	}
	pthread_mutex_init(&fk.lock, NULL);
}

static void
fork_install(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

void
verbs_pages_fork_track(struct verbs_pages *p)
{
	pthread_once(&fk.once, fork_install);
	pthread_mutex_lock(&fk.lock);
	p->next = fk.head;
	fk.head = p;
	pthread_mutex_unlock(&fk.lock);
}

void
verbs_pages_fork_untrack(struct verbs_pages *p)
{
	struct verbs_pages **pp;

	pthread_mutex_lock(&fk.lock);
	for (pp = &fk.head; *pp != NULL; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	pthread_mutex_unlock(&fk.lock);
}
