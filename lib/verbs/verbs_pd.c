/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Protection domains (droced's handles, checked by droced on every object that names
 * one) and the import/export verbs, which need a shared kernel uverbs file: EOPNOTSUPP.
 */

#include <errno.h>
#include <stdlib.h>

#include "verbs_loc.h"

VERBS_EXPORT struct ibv_pd *
ibv_alloc_pd(struct ibv_context *context)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_ALLOC_PD };
	struct droce_proto_resp resp;
	struct ibv_pd *pd;
	int ret;

	if (context == NULL)
		return verbs_err_null(EINVAL);
	pd = calloc(1, sizeof(*pd));
	if (pd == NULL)
		return verbs_err_null(ENOMEM);
	ret = verbs_request(to_dctx(context), &req, NULL, 0, &resp);
	if (ret != 0) {
		free(pd);
		return verbs_err_null(ret);
	}
	pd->context = context;
	pd->handle = resp.obj.handle;
	return pd;
}

/* EBUSY while an MR, QP, SRQ or AH still uses the PD (droced knows). */
VERBS_EXPORT int
ibv_dealloc_pd(struct ibv_pd *pd)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_DEALLOC_PD };
	struct droce_proto_resp resp;
	int ret;

	if (pd == NULL)
		return verbs_err(EINVAL);
	req.obj.handle = pd->handle;
	ret = verbs_request(to_dctx(pd->context), &req, NULL, 0, &resp);
	if (ret != 0)
		return verbs_err(ret);
	free(pd);
	return 0;
}

VERBS_EXPORT struct ibv_context *
ibv_import_device(int cmd_fd)
{
	(void)cmd_fd;
	return verbs_err_null(EOPNOTSUPP);
}

VERBS_EXPORT struct ibv_pd *
ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	(void)context; (void)pd_handle;
	return verbs_err_null(EOPNOTSUPP);
}

VERBS_EXPORT void
ibv_unimport_pd(struct ibv_pd *pd)
{
	(void)pd;
}

VERBS_EXPORT struct ibv_mr *
ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	(void)pd; (void)mr_handle;
	return verbs_err_null(EOPNOTSUPP);
}

VERBS_EXPORT void
ibv_unimport_mr(struct ibv_mr *mr)
{
	(void)mr;
}

VERBS_EXPORT struct ibv_dm *
ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	(void)context; (void)dm_handle;
	return verbs_err_null(EOPNOTSUPP);
}

VERBS_EXPORT void
ibv_unimport_dm(struct ibv_dm *dm)
{
	(void)dm;
}
