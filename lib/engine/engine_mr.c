/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory keys (IB 10.6.3): the only way an engine reaches application memory. Every
 * address the engine dereferences was bounded here first.
 *
 * Memory windows (IB 10.6.7) live in the same key table as MRs. Their binding changes on
 * engines (a BIND_MW or LOCAL_INV WQE, a Send with Invalidate) while other engines may
 * resolve a key through it, so it sits under a sequence lock: a writer makes seq odd with
 * a compare-and-swap (a second writer at the same moment fails, as two binds of one window
 * racing may), a reader copies the binding and keeps the copy only if seq was even and
 * unchanged around it. The MR under a window is found again by index and key at every
 * access, so a deregistered or re-registered MR is never reached through an old binding.
 */
#include <errno.h>

#include <infiniband/verbs.h>
#include <rte_pause.h>

#include "engine_loc.h"

/* Rights a window can carry (LOCAL_WRITE is accepted and means nothing for a window). */
#define MW_ACCESS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
/* Rights that write through the window: the MR must allow local write (C10-74). */
#define MW_WRITES	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)
/* A reader's tries at a binding being rewritten before it counts as no binding. */
#define MW_READ_TRIES	64

static const struct engine_mr *
key_entry(const struct droce_engine_domain *dom, uint32_t key)
{
	uint32_t idx = key >> 8;
	const struct engine_mr *mr;

	if (idx >= dom->max_mrs)
		return NULL;
	mr = &dom->mrs[idx];
	if (!atomic_load_explicit(&((struct engine_mr *)mr)->valid, memory_order_acquire))
		return NULL;
	return mr;
}

/* An MR's bytes for [addr, addr + len) if key, pd and access match. */
static uint8_t *
mr_range(const struct engine_mr *mr, uint32_t key, uint32_t pd, uint32_t access, uint64_t addr,
	 uint64_t len)
{
	if (mr->kind != KEY_MR || mr->key != key || mr->pd != pd ||
	    (mr->access & access) != access)
		return NULL;
	if (addr < mr->iova || len > mr->length || addr - mr->iova > mr->length - len)
		return NULL;
	return mr->base + (addr - mr->iova);
}

uint8_t *
mr_resolve(const struct droce_engine_domain *dom, uint32_t key, uint32_t pd, uint32_t access,
	   uint64_t addr, uint64_t len)
{
	const struct engine_mr *mr = key_entry(dom, key);

	return mr == NULL ? NULL : mr_range(mr, key, pd, access, addr, len);
}

/* A consistent copy of mw's binding: true, or false when writers kept it busy. */
static bool
mw_read(const struct engine_mr *mw, struct engine_mw_binding *b)
{
	struct engine_mr *w = (struct engine_mr *)mw;
	unsigned int i;

	for (i = 0; i < MW_READ_TRIES; i++) {
		uint32_t s = atomic_load_explicit(&w->seq, memory_order_acquire);

		if (s & 1)
			continue;
		*b = mw->mw;
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&w->seq, memory_order_relaxed) == s)
			return true;
	}
	return false;
}

static bool
mw_write_begin(struct engine_mr *mw)
{
	uint32_t s = atomic_load_explicit(&mw->seq, memory_order_relaxed);

	if ((s & 1) || !atomic_compare_exchange_strong_explicit(&mw->seq, &s, s + 1,
								memory_order_acquire,
								memory_order_relaxed))
		return false;
	atomic_thread_fence(memory_order_release);
	return true;
}

static void
mw_write_end(struct engine_mr *mw)
{
	atomic_fetch_add_explicit(&mw->seq, 1, memory_order_release);
}

uint8_t *
mr_resolve_rkey(const struct droce_engine_qp *qp, uint32_t rkey, uint32_t access, uint64_t addr,
		uint64_t len)
{
	const struct engine_mr *e = key_entry(qp->key_dom, rkey), *mr;
	struct engine_mw_binding b;

	if (e == NULL)
		return NULL;
	if (e->kind == KEY_MR)
		return mr_range(e, rkey, qp->key_pd, access, addr, len);
	/* A window: its key, PD, QP (type 2), rights and range (o10-37.2.*), then its MR. */
	if (e->pd != qp->key_pd || !mw_read(e, &b))
		return NULL;
	if (b.key != rkey || b.length == 0 || (b.access & access) != access ||
	    (e->kind == KEY_MW2 && b.qpn != qp->qpn))
		return NULL;
	if (addr < b.iova || len > b.length || addr - b.iova > b.length - len)
		return NULL;
	mr = key_entry(qp->key_dom, b.mr_key);
	if (mr == NULL || (b.mr_key >> 8) != b.mr_idx)
		return NULL;
	return mr_range(mr, b.mr_key, qp->key_pd,
			(access & MW_WRITES) ? IBV_ACCESS_LOCAL_WRITE : 0, addr, len);
}

bool
mr_rkey_flushable(const struct droce_engine_qp *qp, uint32_t rkey, uint32_t access, bool whole,
		  uint64_t addr, uint64_t len)
{
	const struct engine_mr *mr = key_entry(qp->dom, rkey);

	if (mr == NULL || mr->kind != KEY_MR)
		return false;
	if (whole || len == 0)
		return mr->key == rkey && mr->pd == qp->pd && (mr->access & access) == access;
	return mr_range(mr, rkey, qp->pd, access, addr, len) != NULL;
}

uint8_t
mw_bind(struct droce_engine_qp *qp, const struct droce_shm_swqe *s)
{
	struct engine_mr *mw = (struct engine_mr *)key_entry(qp->dom, s->bind.mw_rkey);
	const struct engine_mr *mr = NULL;
	struct engine_mw_binding b;
	uint32_t access = s->bind.access;

	/* The window is the caller's, of the QP's PD (C10-72); no zero-based windows. */
	if (mw == NULL || mw->kind == KEY_MR || mw->pd != qp->pd || (access & ~MW_ACCESS))
		return DROCE_SHM_WC_MW_BIND_ERR;
	if (s->bind.length != 0) {
		mr = key_entry(qp->dom, s->bind.mr_lkey);
		/* An MR of the same PD with bind rights (C10-73), writable if the window is. */
		if (mr == NULL || mr->kind != KEY_MR || mr->key != s->bind.mr_lkey ||
		    mr->pd != qp->pd || !(mr->access & IBV_ACCESS_MW_BIND) ||
		    ((access & MW_WRITES) && !(mr->access & IBV_ACCESS_LOCAL_WRITE)))
			return DROCE_SHM_WC_MW_BIND_ERR;
		/* Inside the MR (C10-75). */
		if (s->bind.addr < mr->iova || s->bind.length > mr->length ||
		    s->bind.addr - mr->iova > mr->length - s->bind.length)
			return DROCE_SHM_WC_MW_BIND_ERR;
	} else if (mw->kind == KEY_MW2) {
		return DROCE_SHM_WC_MW_BIND_ERR;	/* o10-37.2.40: invalidate instead */
	}
	if (!mw_write_begin(mw))
		return DROCE_SHM_WC_MW_BIND_ERR;
	/* A type 2 window is bound only while free (o10-37.2.30). */
	if (mw->kind == KEY_MW2 && mw->mw.length != 0) {
		mw_write_end(mw);
		return DROCE_SHM_WC_MW_BIND_ERR;
	}
	/* The consumer owns the key's low byte (IB 10.6.7.2.1: the key variant). */
	b.key = (mw->mw.key & ~0xFFu) | (s->bind.rkey & 0xFFu);
	b.iova = s->bind.addr;
	b.length = s->bind.length;
	b.access = mr != NULL ? access & (MW_WRITES | IBV_ACCESS_REMOTE_READ) : 0;
	b.mr_idx = s->bind.mr_lkey >> 8;
	b.mr_key = s->bind.mr_lkey;
	b.qpn = mw->kind == KEY_MW2 ? qp->qpn : 0;
	mw->mw = b;
	mw_write_end(mw);
	return DROCE_SHM_WC_SUCCESS;
}

int
mw_invalidate(struct droce_engine_qp *qp, uint32_t rkey, bool remote)
{
	struct engine_mr *mw = (struct engine_mr *)key_entry(qp->dom, rkey);
	int rc = -EINVAL;

	/* Only a type 2 window is invalidated (o10-37.2.26); droce has no fast-register MRs. */
	if (mw == NULL || mw->kind != KEY_MW2 || mw->pd != qp->pd || !mw_write_begin(mw))
		return -EINVAL;
	if (mw->mw.key == rkey && mw->mw.length != 0 && (!remote || mw->mw.qpn == qp->qpn)) {
		mw->mw.length = 0;
		mw->mw.access = 0;
		mw->mw.qpn = 0;
		rc = 0;
	}
	mw_write_end(mw);
	return rc;
}

void
mw_unbind_all(struct engine_mr *mw)
{
	/* Engines hold the lock for a few stores: wait them out. */
	while (!mw_write_begin(mw))
		rte_pause();
	mw->mw.length = 0;
	mw->mw.access = 0;
	mw->mw.qpn = 0;
	mw_write_end(mw);
}
