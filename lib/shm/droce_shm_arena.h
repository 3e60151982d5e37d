/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef DROCE_SHM_ARENA_H
#define DROCE_SHM_ARENA_H

/*
 * A client region as the control path sees it (shm_arena.c): droced lays out the header
 * and doorbells and carves rings from the rest with the arena; the application checks the
 * region it was handed. None of this runs on the fast path.
 */

#include <stdint.h>

#include "droce_shm.h"

/* The control path's allocator of ring memory inside a client region. */
#define DROCE_SHM_ARENA_MAX_FREE 1024

/*
 * Control-path memory (never in the region): the region's free extents. Every block is
 * cache-line aligned; freed blocks merge with their neighbours.
 */
struct droce_shm_arena {
	uint8_t *base;
	uint64_t size;
	uint64_t start;		/* first allocatable offset (after the doorbell blocks) */
	uint32_t nb_free;
	struct {
		uint64_t off;
		uint64_t len;
	} free[DROCE_SHM_ARENA_MAX_FREE];
};

/*
 * Writes the region header and one zeroed doorbell block per engine at the start of
 * [base, base + size) and makes the rest allocatable (up to size rounded down to a cache
 * line). 0, or -EINVAL (nb_engines 0 or over DROCE_SHM_MAX_ENGINES, base not cache-line
 * aligned, size smaller than header and doorbells or over INT64_MAX).
 */
int droce_shm_arena_init(struct droce_shm_arena *a, void *base, uint64_t size,
			 uint32_t nb_engines);
/*
 * Offset of len zeroed bytes aligned to align (a power of two >= 64), or -ENOMEM / -EINVAL
 * (len 0, bad align). The block is len rounded up to a cache line: no two blocks share one.
 * -ENOMEM also when every extent that fits would have to be split and the free table is full.
 */
int64_t droce_shm_arena_alloc(struct droce_shm_arena *a, uint64_t len, uint64_t align);
/*
 * Returns a block (len as given to alloc; it is rounded the same way). -EINVAL if
 * [off, off + len) is not inside the allocatable part, off is not cache-line aligned or any
 * of it is free already (double free included); the arena keeps no list of blocks, so
 * freeing part of a block is not detected. -ENOMEM, block still allocated, when it merges
 * with no neighbour and the free table is full.
 */
int droce_shm_arena_free(struct droce_shm_arena *a, uint64_t off, uint64_t len);

/*
 * The application's check of a region it was handed. -EPROTO: not a droce region of this
 * ABI (magic, ABI version, header size). -EINVAL: base NULL or not cache-line aligned,
 * mapped_size too small for the header, recorded size != mapped size, nb_engines 0 or over
 * DROCE_SHM_MAX_ENGINES, a doorbell block not cache-line aligned, overlapping the header or
 * another doorbell block, or past the end. 0 when the region is usable.
 */
int droce_shm_region_check(const void *base, uint64_t mapped_size);

#endif /* DROCE_SHM_ARENA_H */
