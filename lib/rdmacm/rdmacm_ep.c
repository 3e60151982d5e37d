/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * rdma_create_ep / rdma_destroy_ep as rdma-core's: a synchronous id; passive, it is bound
 * to the source address and remembers the PD and QP attributes, which rdma_get_request
 * uses for each new connection's QP; active, its address and route are resolved (2 s
 * each) and, given QP attributes, its QP is created (with CQs made for it).
 */

#include <errno.h>
#include <stdlib.h>

#include "rdmacm_loc.h"

static int
passive_ep(struct rdma_cm_id *id, struct rdma_addrinfo *res, struct ibv_pd *pd,
	   struct ibv_qp_init_attr *qp_init_attr)
{
	struct rcm_id *r = to_rid(id);

	if (rdma_bind_addr(id, res->ai_src_addr) != 0)
		return -1;
	if (pd != NULL)
		id->pd = pd;
	if (qp_init_attr != NULL) {
		r->qp_init_attr = malloc(sizeof(*qp_init_attr));
		if (r->qp_init_attr == NULL)
			return rcm_err(ENOMEM);
		*r->qp_init_attr = *qp_init_attr;
		r->qp_init_attr->qp_type = res->ai_qp_type;
	}
	return 0;
}

RCM_EXPORT int
rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res, struct ibv_pd *pd,
	       struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cm_id;
	int err;

	if (id == NULL || res == NULL)
		return rcm_err(EINVAL);
	if (rcm_id_create(NULL, &cm_id, NULL, res->ai_port_space, res->ai_qp_type) != 0)
		return -1;
	if (res->ai_flags & RAI_PASSIVE) {
		if (passive_ep(cm_id, res, pd, qp_init_attr) != 0)
			goto err;
		*id = cm_id;
		return 0;
	}
	/* droce's rdma_getaddrinfo never returns ai_route: the route is always resolved. */
	if (rdma_resolve_addr(cm_id, res->ai_src_addr, res->ai_dst_addr, RCM_EP_TIMEOUT_MS) != 0 ||
	    rdma_resolve_route(cm_id, RCM_EP_TIMEOUT_MS) != 0)
		goto err;
	if (qp_init_attr != NULL) {
		qp_init_attr->qp_type = res->ai_qp_type;
		if (rdma_create_qp(cm_id, pd, qp_init_attr) != 0)
			goto err;
	}
	*id = cm_id;
	return 0;
err:
	err = errno;
	rdma_destroy_ep(cm_id);
	return rcm_err(err);
}

RCM_EXPORT void
rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (id == NULL)
		return;
	if (id->qp != NULL)
		rdma_destroy_qp(id);
	if (id->srq != NULL)
		rdma_destroy_srq(id);
	rdma_destroy_id(id);
}
