/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory keys, the control side (control thread): MRs registered, re-registered and
 * deregistered, memory windows allocated and freed, all in the domain's key table. Engines
 * resolve the keys and bind the windows (engine_mr.c); an entry is published with a release
 * store, and unpublished before engine_quiesce(), so no engine copies through a stale key.
 */
#include <errno.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "engine_loc.h"

/*
 * Control thread: a free entry of the key table for an MR or a window of kind, its key
 * made; the caller fills it and sets valid. Index 0 stays unused so that key 0 never
 * resolves; the low byte changes at every registration, so a stale key misses.
 */
static struct engine_mr *
key_take(struct droce_engine_domain *dom, uint8_t kind)
{
	uint32_t i;

	for (i = 1; i < dom->max_mrs; i++) {
		struct engine_mr *e = &dom->mrs[i];

		if (atomic_load_explicit(&e->valid, memory_order_relaxed))
			continue;
		e->kind = kind;
		e->key = (i << 8) | (dom->mr_next++ & 0xFF);
		return e;
	}
	return NULL;
}

/* Control thread: the valid entry of key, an MR's (mr) or a window's (!mr); else NULL. */
static struct engine_mr *
key_find(struct droce_engine_domain *dom, uint32_t key, bool mr)
{
	uint32_t idx = key >> 8;
	struct engine_mr *e;

	if (idx == 0 || idx >= dom->max_mrs)
		return NULL;
	e = &dom->mrs[idx];
	if (!atomic_load_explicit(&e->valid, memory_order_relaxed) ||
	    (e->kind == KEY_MR) != mr || e->key != key)
		return NULL;
	return e;
}

int
droce_engine_mr_reg(struct droce_engine_domain *dom, uint32_t pd, void *base, uint64_t iova,
	     uint64_t length, uint32_t access, uint32_t *lkey, uint32_t *rkey)
{
	struct engine_mr *mr;

	if (base == NULL || length == 0 || iova + length < iova)
		return -EINVAL;
	mr = key_take(dom, KEY_MR);
	if (mr == NULL)
		return -ENOMEM;
	mr->base = base;
	mr->iova = iova;
	mr->length = length;
	mr->access = access;
	mr->pd = pd;
	atomic_store_explicit(&mr->valid, 1, memory_order_release);
	*lkey = *rkey = mr->key;
	dom->nb_mrs++;
	dom->dev->objs.mrs++;
	return 0;
}

int
droce_engine_mr_dereg(struct droce_engine_domain *dom, uint32_t lkey)
{
	struct engine_mr *mr = key_find(dom, lkey, true);

	if (mr == NULL)
		return -EINVAL;
	atomic_store_explicit(&mr->valid, 0, memory_order_release);
	dom->nb_mrs--;
	dom->dev->objs.mrs--;
	/* An engine in the middle of a copy through this key finishes before we return. */
	engine_quiesce(dom->dev);
	return 0;
}

int
droce_engine_mr_rereg(struct droce_engine_domain *dom, uint32_t lkey, uint32_t pd,
		      void *base, uint64_t iova, uint64_t length, uint32_t access)
{
	struct engine_mr *mr;

	if (base == NULL || length == 0 || iova + length < iova)
		return -EINVAL;
	mr = key_find(dom, lkey, true);
	if (mr == NULL)
		return -EINVAL;
	atomic_store_explicit(&mr->valid, 0, memory_order_release);
	/* Nobody reads the old fields any more once every engine passed a quiescent point. */
	engine_quiesce(dom->dev);
	mr->base = base;
	mr->iova = iova;
	mr->length = length;
	mr->access = access;
	mr->pd = pd;
	atomic_store_explicit(&mr->valid, 1, memory_order_release);
	return 0;
}

int
droce_engine_mw_alloc(struct droce_engine_domain *dom, uint32_t pd, uint32_t type,
		      uint32_t *rkey)
{
	struct engine_mr *mw;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2)
		return -EINVAL;
	mw = key_take(dom, type == IBV_MW_TYPE_1 ? KEY_MW1 : KEY_MW2);
	if (mw == NULL)
		return -ENOMEM;
	mw->base = NULL;
	mw->iova = mw->length = 0;
	mw->access = 0;
	mw->pd = pd;
	/* No engine reads an invalid entry's binding: no lock needed to start it. */
	memset(&mw->mw, 0, sizeof(mw->mw));
	mw->mw.key = mw->key;
	atomic_store_explicit(&mw->valid, 1, memory_order_release);
	*rkey = mw->key;
	dom->nb_mws++;
	dom->dev->objs.mws++;
	return 0;
}

int
droce_engine_mw_dealloc(struct droce_engine_domain *dom, uint32_t rkey)
{
	struct engine_mr *mw = key_find(dom, rkey, false);

	if (mw == NULL)
		return -EINVAL;
	/* Unbound first, so an engine that still finds it valid grants nothing. */
	mw_unbind_all(mw);
	atomic_store_explicit(&mw->valid, 0, memory_order_release);
	dom->nb_mws--;
	dom->dev->objs.mws--;
	engine_quiesce(dom->dev);
	return 0;
}
