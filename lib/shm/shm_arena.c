/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * The region arena: lays out a client region (header, then one doorbell block per engine)
 * and hands out cache-line aligned blocks from the rest, first fit over the sorted table of
 * free extents. Extents never touch (a freed block merges with its neighbours), so the
 * table is also the exact picture of what is free. Control path only. The application maps
 * the region, so after init the arena reads nothing back from it (the layout lives in
 * struct droce_shm_arena); droce_shm_region_check is the application's side.
 */

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "droce_shm_arena.h"

#define LINE	DROCE_SHM_CACHE_LINE

static uint64_t
align_up(uint64_t v, uint64_t align)
{
	return (v + align - 1) & ~(align - 1);
}

static bool
is_pow2(uint64_t v)
{
	return v != 0 && (v & (v - 1)) == 0;
}

/* Where the first allocatable byte lies for nb_engines engines. */
static uint64_t
layout_end(uint32_t nb_engines)
{
	return align_up(sizeof(struct droce_shm_region_hdr), LINE) +
	       (uint64_t)nb_engines * align_up(sizeof(struct droce_shm_doorbell), LINE);
}

int
droce_shm_arena_init(struct droce_shm_arena *a, void *base, uint64_t size,
		     uint32_t nb_engines)
{
	struct droce_shm_region_hdr *hdr = base;
	uint64_t start, end, off;
	uint32_t i;

	if (a == NULL || base == NULL)
		return -EINVAL;
	if (nb_engines == 0 || nb_engines > DROCE_SHM_MAX_ENGINES)
		return -EINVAL;
	if ((uintptr_t)base % LINE != 0)
		return -EINVAL;
	/* Offsets travel as int64_t (alloc's result). */
	if (size > INT64_MAX)
		return -EINVAL;
	start = layout_end(nb_engines);
	if (size < start)
		return -EINVAL;

	memset(base, 0, start);
	hdr->magic = DROCE_SHM_MAGIC;
	hdr->abi_version = DROCE_SHM_ABI_VERSION;
	hdr->hdr_size = sizeof(*hdr);
	hdr->size = size;
	hdr->nb_engines = nb_engines;
	off = align_up(sizeof(*hdr), LINE);
	for (i = 0; i < nb_engines; i++) {
		hdr->doorbell_off[i] = off;
		off += align_up(sizeof(struct droce_shm_doorbell), LINE);
	}

	a->base = base;
	a->size = size;
	a->start = start;
	/* A trailing partial cache line is never handed out: blocks own whole lines. */
	end = size & ~(uint64_t)(LINE - 1);
	a->nb_free = 0;
	if (end > start) {
		a->free[0].off = start;
		a->free[0].len = end - start;
		a->nb_free = 1;
	}
	return 0;
}

static void
remove_extent(struct droce_shm_arena *a, uint32_t i)
{
	memmove(&a->free[i], &a->free[i + 1], (a->nb_free - i - 1) * sizeof(a->free[0]));
	a->nb_free--;
}

/* Makes room at i; the caller has checked the table is not full. */
static void
insert_extent(struct droce_shm_arena *a, uint32_t i, uint64_t off, uint64_t len)
{
	memmove(&a->free[i + 1], &a->free[i], (a->nb_free - i) * sizeof(a->free[0]));
	a->free[i].off = off;
	a->free[i].len = len;
	a->nb_free++;
}

int64_t
droce_shm_arena_alloc(struct droce_shm_arena *a, uint64_t len, uint64_t align)
{
	uint64_t ext_off, ext_end, blk, blk_end;
	uint32_t i;

	if (a == NULL || len == 0 || align < LINE || !is_pow2(align))
		return -EINVAL;
	/* Also keeps the roundings below from wrapping. */
	if (len > a->size || align > a->size)
		return -ENOMEM;
	len = align_up(len, LINE);

	for (i = 0; i < a->nb_free; i++) {
		ext_off = a->free[i].off;
		ext_end = ext_off + a->free[i].len;
		blk = align_up(ext_off, align);
		if (blk >= ext_end || ext_end - blk < len)
			continue;
		blk_end = blk + len;
		if (blk > ext_off && blk_end < ext_end) {
			/* Head and tail both stay free: one more extent. */
			if (a->nb_free == DROCE_SHM_ARENA_MAX_FREE)
				continue;
			a->free[i].len = blk - ext_off;
			insert_extent(a, i + 1, blk_end, ext_end - blk_end);
		} else if (blk > ext_off) {
			a->free[i].len = blk - ext_off;
		} else if (blk_end < ext_end) {
			a->free[i].off = blk_end;
			a->free[i].len = ext_end - blk_end;
		} else {
			remove_extent(a, i);
		}
		memset(a->base + blk, 0, len);
		return (int64_t)blk;
	}
	return -ENOMEM;
}

int
droce_shm_arena_free(struct droce_shm_arena *a, uint64_t off, uint64_t len)
{
	uint64_t end, limit;
	bool merge_prev, merge_next;
	uint32_t i;

	if (a == NULL || len == 0 || off % LINE != 0)
		return -EINVAL;
	limit = a->size & ~(uint64_t)(LINE - 1);
	if (off < a->start || off > limit || len > limit - off)
		return -EINVAL;
	len = align_up(len, LINE);
	end = off + len;

	/* i: the first extent after the block; every extent before it must end by off. */
	for (i = 0; i < a->nb_free && a->free[i].off < end; i++)
		if (a->free[i].off + a->free[i].len > off)
			return -EINVAL;

	merge_prev = i > 0 && a->free[i - 1].off + a->free[i - 1].len == off;
	merge_next = i < a->nb_free && a->free[i].off == end;
	if (merge_prev && merge_next) {
		a->free[i - 1].len += len + a->free[i].len;
		remove_extent(a, i);
	} else if (merge_prev) {
		a->free[i - 1].len += len;
	} else if (merge_next) {
		a->free[i].off = off;
		a->free[i].len += len;
	} else {
		if (a->nb_free == DROCE_SHM_ARENA_MAX_FREE)
			return -ENOMEM;
		insert_extent(a, i, off, len);
	}
	return 0;
}

int
droce_shm_region_check(const void *base, uint64_t mapped_size)
{
	const struct droce_shm_region_hdr *hdr = base;
	uint64_t db_len = sizeof(struct droce_shm_doorbell);
	uint64_t off, other;
	uint32_t i, j;

	if (base == NULL || (uintptr_t)base % LINE != 0 || mapped_size < sizeof(*hdr))
		return -EINVAL;
	if (hdr->magic != DROCE_SHM_MAGIC || hdr->abi_version != DROCE_SHM_ABI_VERSION ||
	    hdr->hdr_size != sizeof(*hdr))
		return -EPROTO;
	if (hdr->size != mapped_size)
		return -EINVAL;
	if (hdr->nb_engines == 0 || hdr->nb_engines > DROCE_SHM_MAX_ENGINES)
		return -EINVAL;
	for (i = 0; i < hdr->nb_engines; i++) {
		off = hdr->doorbell_off[i];
		if (off % LINE != 0 || off < sizeof(*hdr) || off > mapped_size ||
		    mapped_size - off < db_len)
			return -EINVAL;
		for (j = 0; j < i; j++) {
			other = hdr->doorbell_off[j];
			if (off < other + db_len && other < off + db_len)
				return -EINVAL;
		}
	}
	return 0;
}
