/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Memory registration of a client: MRs (their pieces mapped into droced by
 * droced_mrmap.c, then registered with the engines), ibv_rereg_mr in place, and memory
 * windows (allocated here, bound by the application's own work requests).
 */

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "droced_loc.h"

struct droced_mr {
	struct droced_mr_view view;	/* the pieces, mapped one after another */
	uint64_t first_off;	/* the MR's first byte in the view */
	uint64_t iova;
	uint64_t length;
	uint32_t lkey;
	uint32_t rkey;
	uint32_t pd;
	uint32_t access;
};

struct droced_mw {
	uint32_t rkey;		/* as allocated: names it to the engine */
	uint32_t pd;
};

/* ---- MR ---- */

/* IB 10.6.3.1: remote write or atomic access needs local write. */
static bool
access_ok(uint32_t access)
{
	const uint32_t remote = DROCE_SHM_ACCESS_REMOTE_WRITE | DROCE_SHM_ACCESS_REMOTE_ATOMIC;

	return !(access & remote) || (access & DROCE_SHM_ACCESS_LOCAL_WRITE);
}

int
droced_mr_reg(struct droced_client *c, struct droced_call *call)
{
	const struct droce_proto_req *req = call->req;
	size_t n = call->len;
	const int *fds = call->fds;
	unsigned int nfds = call->nfds;
	struct droce_proto_resp *resp = call->resp;
	uint32_t np = req->reg_mr.nb_pieces;
	struct droced_pd *pd = droced_pd_get(c, req->reg_mr.pd);
	struct droced_mr *mr;
	int rc;

	if (np == 0 || np > DROCE_PROTO_MR_MAX_PIECES || nfds > np ||
	    n < offsetof(struct droce_proto_req, reg_mr.pieces) + np * sizeof(req->reg_mr.pieces[0]))
		return -EINVAL;
	if (pd == NULL || req->reg_mr.length == 0 || !access_ok(req->reg_mr.access))
		return -EINVAL;
	if (c->mrs.nb >= c->mrs.max)
		return droced_limit(call, DROCE_PROTO_LIMIT_MRS, -ENOMEM);
	if (req->reg_mr.length > c->d->cfg.limits.max_mr_bytes - c->mr_bytes)
		return droced_limit(call, DROCE_PROTO_LIMIT_MR_BYTES, -ENOMEM);
	mr = calloc(1, sizeof(*mr));
	if (mr == NULL)
		return -ENOMEM;
	rc = droced_mr_view_map(c, req->reg_mr.pieces, np, fds, nfds, req->reg_mr.access,
				req->reg_mr.first_off, req->reg_mr.length, &mr->view);
	if (rc != 0) {
		free(mr);
		return rc;
	}
	rc = droce_engine_mr_reg(c->dom, req->reg_mr.pd, mr->view.base + req->reg_mr.first_off,
				 req->reg_mr.iova, req->reg_mr.length, req->reg_mr.access,
				 &mr->lkey, &resp->obj.rkey);
	if (rc != 0)
		goto fail;
	rc = droced_table_add(&c->mrs, mr, &resp->obj.handle);
	if (rc != 0) {
		droce_engine_mr_dereg(c->dom, mr->lkey);
		goto fail;
	}
	mr->first_off = req->reg_mr.first_off;
	mr->iova = req->reg_mr.iova;
	mr->length = req->reg_mr.length;
	mr->pd = req->reg_mr.pd;
	mr->access = req->reg_mr.access;
	mr->rkey = resp->obj.rkey;
	pd->users++;
	c->mr_bytes += mr->length;
	resp->obj.lkey = mr->lkey;
	return 0;
fail:
	droced_mr_view_unmap(&mr->view);
	free(mr);
	return rc;
}

/*
 * ibv_rereg_mr in place: the same handle and keys, what flags name changed (a new
 * translation: new pieces, mapped before the engine switches, the old unmapped after).
 * On failure the MR is as it was.
 */
int
droced_mr_rereg(struct droced_client *c, struct droced_call *call)
{
	const struct droce_proto_req *req = call->req;
	size_t n = call->len;
	const int *fds = call->fds;
	unsigned int nfds = call->nfds;
	struct droce_proto_resp *resp = call->resp;
	const uint32_t known = DROCE_PROTO_REREG_TRANSLATION | DROCE_PROTO_REREG_PD |
			       DROCE_PROTO_REREG_ACCESS;
	struct droced_mr *mr = droced_table_get(&c->mrs, req->rereg_mr.handle);
	uint32_t flags = req->rereg_mr.flags, np = req->rereg_mr.nb_pieces;
	bool trans = flags & DROCE_PROTO_REREG_TRANSLATION;
	uint32_t pd = flags & DROCE_PROTO_REREG_PD ? req->rereg_mr.pd : mr != NULL ? mr->pd : 0;
	uint32_t access = flags & DROCE_PROTO_REREG_ACCESS ? req->rereg_mr.access :
			  mr != NULL ? mr->access : 0;
	struct droced_mr_view view = { 0 };
	uint64_t length, first_off, iova;
	int rc;

	if (mr == NULL || flags == 0 || (flags & ~known) || droced_pd_get(c, pd) == NULL ||
	    !access_ok(access))
		return -EINVAL;
	if (trans) {
		if (np == 0 || np > DROCE_PROTO_MR_MAX_PIECES || nfds > np ||
		    n < offsetof(struct droce_proto_req, rereg_mr.pieces) +
			np * sizeof(req->rereg_mr.pieces[0]))
			return -EINVAL;
		length = req->rereg_mr.length;
		first_off = req->rereg_mr.first_off;
		iova = req->rereg_mr.iova;
		if (length > c->d->cfg.limits.max_mr_bytes - (c->mr_bytes - mr->length))
			return droced_limit(call, DROCE_PROTO_LIMIT_MR_BYTES, -ENOMEM);
		rc = droced_mr_view_map(c, req->rereg_mr.pieces, np, fds, nfds, access,
					first_off, length, &view);
		if (rc != 0)
			return rc;
	} else {
		/* Pages mapped for reading cannot take writes: re-register the translation. */
		if (nfds != 0 || !droced_mr_view_allows(&mr->view, access))
			return -EINVAL;
		length = mr->length;
		first_off = mr->first_off;
		iova = mr->iova;
	}
	rc = droce_engine_mr_rereg(c->dom, mr->lkey, pd,
				   (trans ? view.base : mr->view.base) + first_off, iova, length,
				   access);
	if (rc != 0) {
		droced_mr_view_unmap(&view);
		return rc;
	}
	if (trans) {
		droced_mr_view_unmap(&mr->view);
		mr->view = view;
		mr->first_off = first_off;
		mr->iova = iova;
		c->mr_bytes = c->mr_bytes - mr->length + length;
		mr->length = length;
	}
	droced_pd_get(c, mr->pd)->users--;
	droced_pd_get(c, pd)->users++;
	mr->pd = pd;
	mr->access = access;
	resp->obj.handle = req->rereg_mr.handle;
	resp->obj.lkey = resp->obj.rkey = mr->rkey = mr->lkey;
	return 0;
}

int
droced_mr_dereg(struct droced_client *c, struct droced_call *call)
{
	uint32_t handle = call->req->obj.handle;
	struct droced_mr *mr = droced_table_get(&c->mrs, handle);
	int rc;

	if (mr == NULL)
		return -EINVAL;
	rc = droce_engine_mr_dereg(c->dom, mr->lkey);
	if (rc != 0)
		return rc;
	droced_mr_view_unmap(&mr->view);
	droced_pd_get(c, mr->pd)->users--;
	c->mr_bytes -= mr->length;
	droced_table_del(&c->mrs, handle);
	free(mr);
	return 0;
}

/* ---- Memory windows ---- */

int
droced_mw_alloc(struct droced_client *c, struct droced_call *call)
{
	const struct droce_proto_req *req = call->req;
	struct droce_proto_resp *resp = call->resp;
	struct droced_pd *pd = droced_pd_get(c, req->alloc_mw.pd);
	struct droced_mw *mw;
	int rc;

	/* A type other than 1 and 2: -EINVAL from the engine, as rxe answers. */
	if (pd == NULL)
		return -EINVAL;
	if (c->mws.nb >= c->mws.max)
		return -ENOMEM;
	mw = calloc(1, sizeof(*mw));
	if (mw == NULL)
		return -ENOMEM;
	rc = droce_engine_mw_alloc(c->dom, req->alloc_mw.pd, req->alloc_mw.type, &mw->rkey);
	if (rc != 0) {
		free(mw);
		return rc;
	}
	rc = droced_table_add(&c->mws, mw, &resp->obj.handle);
	if (rc != 0) {
		droce_engine_mw_dealloc(c->dom, mw->rkey);
		free(mw);
		return rc;
	}
	mw->pd = req->alloc_mw.pd;
	pd->users++;
	resp->obj.rkey = mw->rkey;
	return 0;
}

int
droced_mw_dealloc(struct droced_client *c, struct droced_call *call)
{
	uint32_t handle = call->req->obj.handle;
	struct droced_mw *mw = droced_table_get(&c->mws, handle);
	int rc;

	if (mw == NULL)
		return -EINVAL;
	rc = droce_engine_mw_dealloc(c->dom, mw->rkey);
	if (rc != 0)
		return rc;
	droced_pd_get(c, mw->pd)->users--;
	droced_table_del(&c->mws, handle);
	free(mw);
	return 0;
}

int
droced_mr_next(const struct droced_client *c, uint32_t *handle, struct droced_mr_info *info)
{
	const struct droced_mr *mr = droced_table_next(&c->mrs, handle);

	if (mr == NULL)
		return -ENOENT;
	info->iova = mr->iova;
	info->length = mr->length;
	info->lkey = mr->lkey;
	info->rkey = mr->rkey;
	info->pd = mr->pd;
	info->access = mr->access;
	return 0;
}

/* At the client's end, after its domain (no engine can reach a view any more). */
void
droced_mr_release_all(struct droced_client *c)
{
	uint32_t i;

	for (i = 0; i < c->mrs.cap; i++) {
		struct droced_mr *mr = c->mrs.obj[i];

		if (mr != NULL) {
			droced_mr_view_unmap(&mr->view);
			free(mr);
		}
	}
	for (i = 0; i < c->mws.cap; i++)
		free(c->mws.obj[i]);
	droced_table_free(&c->mrs);
	droced_table_free(&c->mws);
	c->mr_bytes = 0;
}
