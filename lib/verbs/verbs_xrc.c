/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * XRC (ibv_open_xrcd(3), ibv_create_srq_ex(3), ibv_get_srq_num(3)): XRC domains are
 * droced's, one per file as the kernel's, so processes that open the same file share one
 * (their XRC targets take requests for each other's XRC SRQs); an XRC SRQ is an SRQ with
 * a domain, a CQ of its own and a device-wide number, which initiators name in each
 * request. XRC QPs are created by ibv_create_qp_ex (verbs_qp.c).
 */

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>

#include "verbs_loc.h"

struct ibv_xrcd *
verbs_xrcd_open(struct ibv_context *context, struct ibv_xrcd_init_attr *attr)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_OPEN_XRCD };
	struct droce_proto_resp resp;
	struct verbs_dxrcd *x;
	int fd = -1, ret;

	if (attr == NULL ||
	    (attr->comp_mask & ~(uint32_t)(IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS)))
		return verbs_err_null(EINVAL);
	if (attr->comp_mask & IBV_XRCD_INIT_ATTR_FD)
		fd = attr->fd;
	if (attr->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS)
		req.open_xrcd.oflags = (uint32_t)attr->oflags;
	/* ibv_open_xrcd(3): oflags O_CREAT and O_EXCL only; a file needs O_CREAT to make one. */
	if (req.open_xrcd.oflags & ~(uint32_t)(O_CREAT | O_EXCL))
		return verbs_err_null(EINVAL);
	x = calloc(1, sizeof(*x));
	if (x == NULL)
		return verbs_err_null(ENOMEM);
	ret = verbs_request(to_dctx(context), &req, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0,
			    &resp);
	if (ret != 0) {
		free(x);
		return verbs_err_null(ret);
	}
	x->xrcd.context = context;
	x->handle = resp.obj.handle;
	return &x->xrcd;
}

/* EBUSY while an XRC SRQ or XRC target still uses it (droced knows). */
int
verbs_xrcd_close(struct ibv_xrcd *xrcd)
{
	struct verbs_dxrcd *x = verbs_container_of(xrcd, struct verbs_dxrcd, xrcd);
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_CLOSE_XRCD };
	struct droce_proto_resp resp;
	int ret;

	req.obj.handle = x->handle;
	ret = verbs_request(to_dctx(xrcd->context), &req, NULL, 0, &resp);
	if (ret != 0)
		return ret;
	free(x);
	return 0;
}

/*
 * ibv_create_srq_ex(3): a basic SRQ (a PD), or an XRC SRQ (a PD, an XRC domain and a CQ);
 * tag-matching SRQs are not offered (EOPNOTSUPP).
 */
struct ibv_srq *
verbs_srq_create_ex(struct ibv_context *context, struct ibv_srq_init_attr_ex *a)
{
	const uint32_t known = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			       IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
	enum ibv_srq_type type = (a->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) ? a->srq_type :
				 IBV_SRQT_BASIC;
	struct ibv_srq_init_attr attr = { .srq_context = a->srq_context, .attr = a->attr };
	struct verbs_dxrcd *x = NULL;
	struct ibv_srq *srq;

	if (a->comp_mask & ~known)
		return verbs_err_null(EOPNOTSUPP);
	if (type != IBV_SRQT_BASIC && type != IBV_SRQT_XRC)
		return verbs_err_null(EOPNOTSUPP);
	if (!(a->comp_mask & IBV_SRQ_INIT_ATTR_PD) || a->pd == NULL || a->pd->context != context)
		return verbs_err_null(EINVAL);
	if (type == IBV_SRQT_XRC) {
		if ((a->comp_mask & (IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ)) !=
		    (IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ) || a->xrcd == NULL ||
		    a->cq == NULL || a->xrcd->context != context || a->cq->context != context)
			return verbs_err_null(EINVAL);
		x = verbs_container_of(a->xrcd, struct verbs_dxrcd, xrcd);
	}
	srq = verbs_srq_create(a->pd, &attr, x, a->cq);
	if (srq != NULL)
		a->attr = attr.attr;
	return srq;
}

/* ibv_get_srq_num(3): an XRC SRQ's number, the one initiators name (remote_srqn). */
int
verbs_srq_num(struct ibv_srq *srq, uint32_t *srq_num)
{
	const struct verbs_dsrq *s = to_dsrq(srq);

	if (s->srq_num == 0)
		return EINVAL;
	*srq_num = s->srq_num;
	return 0;
}
