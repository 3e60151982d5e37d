/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Memory windows (ibv_alloc_mw(3), ibv_bind_mw(3)): droced allocates the window's key in
 * the engine's key table; binding and invalidation are send queue work the engine executes
 * in order (BIND_MW, LOCAL_INV WQEs; a peer's Send with Invalidate). A type 1 window's
 * ibv_bind_mw is a BIND_MW WQE too, posted here with the window's next key, as rdma-core's
 * providers do: mw->rkey changes when it is posted, and the completion says it took.
 */

#include <errno.h>
#include <stdlib.h>

#include "verbs_loc.h"

struct ibv_mw *
verbs_mw_alloc(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_ALLOC_MW };
	struct droce_proto_resp resp;
	struct ibv_mw *mw;
	int ret;

	mw = calloc(1, sizeof(*mw));
	if (mw == NULL)
		return verbs_err_null(ENOMEM);
	req.alloc_mw.pd = pd->handle;
	req.alloc_mw.type = (uint32_t)type;
	ret = verbs_request(to_dctx(pd->context), &req, NULL, 0, &resp);
	if (ret != 0) {
		free(mw);
		return verbs_err_null(ret);
	}
	mw->context = pd->context;
	mw->pd = pd;
	mw->rkey = resp.obj.rkey;
	mw->handle = resp.obj.handle;
	mw->type = type;
	return mw;
}

int
verbs_mw_dealloc(struct ibv_mw *mw)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_DEALLOC_MW };
	struct droce_proto_resp resp;
	int ret;

	req.obj.handle = mw->handle;
	ret = verbs_request(to_dctx(mw->context), &req, NULL, 0, &resp);
	if (ret != 0)
		return ret;
	free(mw);
	return 0;
}

/* ibv_bind_mw(3) (type 1; libibverbs' inline checked the type, the MR and its PD). */
int
verbs_mw_bind(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr = {
		.wr_id = mw_bind->wr_id,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = mw_bind->send_flags,
	};
	struct ibv_send_wr *bad;
	int ret;

	/* Zero-based windows are not offered (device_cap_flags has no ZERO_BASED). */
	if (mw_bind->bind_info.mw_access_flags & IBV_ACCESS_ZERO_BASED)
		return EINVAL;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = mw_bind->bind_info;
	ret = verbs_qp_post_send(qp, &wr, &bad);
	if (ret == 0)
		mw->rkey = wr.bind_mw.rkey;
	return ret;
}
