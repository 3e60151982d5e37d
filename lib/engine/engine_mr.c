/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory keys (IB 10.6.3): the only way an engine reaches application memory. Every
 * address the engine dereferences was bounded here first.
 */
#include "engine_loc.h"

uint8_t *
mr_resolve(const struct droce_engine_domain *dom, uint32_t key, uint32_t pd, uint32_t access,
	   uint64_t addr, uint64_t len)
{
	uint32_t idx = key >> 8;
	const struct engine_mr *mr;

	if (idx >= dom->max_mrs)
		return NULL;
	mr = &dom->mrs[idx];
	if (!atomic_load_explicit(&((struct engine_mr *)mr)->valid, memory_order_acquire))
		return NULL;
	if (mr->key != key || mr->pd != pd || (mr->access & access) != access)
		return NULL;
	if (addr < mr->iova || len > mr->length || addr - mr->iova > mr->length - len)
		return NULL;
	return mr->base + (addr - mr->iova);
}
