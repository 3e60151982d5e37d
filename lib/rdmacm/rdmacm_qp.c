/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * The id's QP, SRQ and CQs: verbs objects of the application's own, made and moved through
 * droce's libibverbs as rdma-core's librdmacm makes and moves them. droced's CM says which
 * attributes take a QP to INIT, RTR and RTS (CM_INIT_QP_ATTR) and ibv_modify_qp applies
 * them: INIT when the QP is created (a connected QP is created in INIT; UD goes on to RTS
 * at once), ERR on rdma_disconnect and on a rejection. RTR and RTS of a connected QP are droced's own work (it owns the QP and
 * the CM: DROCE_PROTO_CM_CONN_F_MOVE_QP, three round trips fewer per side); rcm_qp_connect
 * below does them only where droced could not: in rdma_accept (before the REP) and on a
 * CONNECT_RESPONSE (before the RTU).
 */

#include <errno.h>
#include <string.h>

#include "droce_verbs.h"
#include "rdmacm_loc.h"

void
rcm_ah_from_proto(const struct droce_shm_ah_attr *s, struct ibv_ah_attr *a)
{
	memset(a, 0, sizeof(*a));
	memcpy(a->grh.dgid.raw, s->dgid, sizeof(s->dgid));
	a->grh.flow_label = s->flow_label;
	a->grh.sgid_index = s->sgid_index;
	a->grh.hop_limit = s->hop_limit;
	a->grh.traffic_class = s->traffic_class;
	a->is_global = s->is_global;
	a->sl = s->sl;
	a->port_num = s->port_num != 0 ? s->port_num : RCM_PORT_NUM;
}

/* As ibv_copy_qp_attr_from_kern: every field is the answer's. */
static void
qp_attr_from_proto(const struct droce_proto_cm_qp_attr *a, struct ibv_qp_attr *qp_attr,
		   int *qp_attr_mask)
{
	memset(qp_attr, 0, sizeof(*qp_attr));
	qp_attr->qp_state = a->qp_state;
	qp_attr->qp_access_flags = a->qp_access_flags;
	qp_attr->dest_qp_num = a->dest_qp_num;
	qp_attr->rq_psn = a->rq_psn;
	qp_attr->sq_psn = a->sq_psn;
	qp_attr->qkey = a->qkey;
	qp_attr->pkey_index = a->pkey_index;
	qp_attr->port_num = a->port_num;
	qp_attr->path_mtu = a->path_mtu;
	qp_attr->max_dest_rd_atomic = a->max_dest_rd_atomic;
	qp_attr->max_rd_atomic = a->max_rd_atomic;
	qp_attr->min_rnr_timer = a->min_rnr_timer;
	qp_attr->timeout = a->timeout;
	qp_attr->retry_cnt = a->retry_cnt;
	qp_attr->rnr_retry = a->rnr_retry;
	rcm_ah_from_proto(&a->ah, &qp_attr->ah_attr);
	*qp_attr_mask = (int)a->mask;
}

RCM_EXPORT int
rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr, int *qp_attr_mask)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_CM_INIT_QP_ATTR };
	struct droce_proto_resp resp;
	int ret;

	if (id == NULL || qp_attr == NULL || qp_attr_mask == NULL)
		return rcm_err(EINVAL);
	req.cm_init_qp_attr.id = to_rid(id)->handle;
	req.cm_init_qp_attr.qp_state = qp_attr->qp_state;
	ret = rcm_call(to_rch(id->channel), &req, &resp);
	if (ret != 0)
		return rcm_err(ret);
	qp_attr_from_proto(&resp.cm_qp_attr, qp_attr, qp_attr_mask);
	return 0;
}

/* CM_INIT_QP_ATTR's attributes to take the id's QP to state: 0 or -1 with errno. */
static int
qp_attr_for(struct rdma_cm_id *id, enum ibv_qp_state state, struct ibv_qp_attr *attr,
	    int *mask)
{
	attr->qp_state = state;
	return rdma_init_qp_attr(id, attr, mask);
}

static int
qp_modify(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	int ret = ibv_modify_qp(qp, attr, mask);

	return ret != 0 ? rcm_err(ret) : 0;
}

/* What an INIT -> INIT change of a connected QP may carry and INIT -> RTR takes as well. */
#define RCM_INIT_FOLDABLE	(IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | \
				 IBV_QP_ACCESS_FLAGS)

/*
 * INIT again (the attributes may have changed since creation), RTR, then RTS, as
 * rdma-core's ucma_modify_qp_rtr and ucma_modify_qp_rts; the three sets of attributes come
 * in one CM_INIT_QP_ATTR (DROCE_PROTO_CM_QPS_CONNECT), fetched before the first change as
 * nothing the QP does alters droced's answer. 0, or -1 with errno.
 */
int
rcm_qp_connect(struct rdma_cm_id *id, uint8_t resp_res, uint8_t init_depth)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_CM_INIT_QP_ATTR };
	struct droce_proto_resp resp;
	struct ibv_qp_attr init, attr;
	int init_mask, mask, ret;

	if (id->qp == NULL)
		return 0;
	req.cm_init_qp_attr.id = to_rid(id)->handle;
	req.cm_init_qp_attr.qp_state = DROCE_PROTO_CM_QPS_CONNECT;
	ret = rcm_call(to_rch(id->channel), &req, &resp);
	if (ret != 0)
		return rcm_err(ret);
	qp_attr_from_proto(&resp.cm_qp_attrs[0], &init, &init_mask);
	qp_attr_from_proto(&resp.cm_qp_attrs[1], &attr, &mask);
	if (id->qp->state == IBV_QPS_INIT && (init_mask & ~RCM_INIT_FOLDABLE) == 0 &&
	    (!(init_mask & IBV_QP_PORT) || init.port_num == RCM_PORT_NUM)) {
		/*
		 * The QP is in INIT already: INIT -> RTR takes the access flags and the P_Key
		 * index as optional attributes (IBA 11.2.4.2), so the INIT -> INIT change is
		 * made by the RTR one; the port is the device's only one. Same end state, one
		 * modify fewer.
		 */
		if (init_mask & IBV_QP_ACCESS_FLAGS) {
			attr.qp_access_flags = init.qp_access_flags;
			mask |= IBV_QP_ACCESS_FLAGS;
		}
		if (init_mask & IBV_QP_PKEY_INDEX) {
			attr.pkey_index = init.pkey_index;
			mask |= IBV_QP_PKEY_INDEX;
		}
	} else if (qp_modify(id->qp, &init, init_mask) != 0) {
		return -1;
	}
	if (resp_res != RDMA_MAX_RESP_RES)
		attr.max_dest_rd_atomic = resp_res;
	if (qp_modify(id->qp, &attr, mask) != 0)
		return -1;
	qp_attr_from_proto(&resp.cm_qp_attrs[2], &attr, &mask);
	if (init_depth != RDMA_MAX_INIT_DEPTH)
		attr.max_rd_atomic = init_depth;
	return qp_modify(id->qp, &attr, mask);
}

int
rcm_qp_err(struct rdma_cm_id *id)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };

	if (id->qp == NULL)
		return 0;
	return qp_modify(id->qp, &attr, IBV_QP_STATE);
}

/*
 * The QP, created in INIT when connected (qp_create); a UD QP goes to INIT and on to RTS
 * with SQ PSN 0, as rdma-core's.
 */
static struct ibv_qp *
qp_create(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	/*
	 * A connected QP's INIT needs nothing from the CM yet: the access flags and P_Key
	 * index it would answer are applied with the RTR change, once the peer's parameters
	 * are known, and a QP in INIT takes no packet meanwhile. So it is created in INIT
	 * with none (droce_create_qp_init: one request for both, where rdma-core makes
	 * three); the end state is rdma-core's.
	 */
	if (id->qp_type != IBV_QPT_UD)
		return droce_create_qp_init(id->verbs, attr, RCM_PORT_NUM);
	return ibv_create_qp_ex(id->verbs, attr);
}

static int
qp_ud_ready(struct rdma_cm_id *id, struct ibv_qp *qp)
{
	struct ibv_qp_attr attr;
	int mask;

	if (qp_attr_for(id, IBV_QPS_INIT, &attr, &mask) != 0 || qp_modify(qp, &attr, mask) != 0)
		return -1;
	attr.qp_state = IBV_QPS_RTR;
	if (qp_modify(qp, &attr, IBV_QP_STATE) != 0)
		return -1;
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = 0;
	return qp_modify(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

static void
cqs_destroy(struct rdma_cm_id *id)
{
	if (id->recv_cq != NULL) {
		ibv_destroy_cq(id->recv_cq);
		if (id->send_cq != NULL && id->send_cq != id->recv_cq) {
			ibv_destroy_cq(id->send_cq);
			id->send_cq = NULL;
		}
		id->recv_cq = NULL;
	}
	if (id->recv_cq_channel != NULL) {
		ibv_destroy_comp_channel(id->recv_cq_channel);
		if (id->send_cq_channel != NULL && id->send_cq_channel != id->recv_cq_channel) {
			ibv_destroy_comp_channel(id->send_cq_channel);
			id->send_cq_channel = NULL;
		}
		id->recv_cq_channel = NULL;
	}
}

/*
 * CQs with completion channels of their own, as rdma-core's ucma_create_cqs makes them
 * (rdma_verbs.h's rdma_get_send_comp / rdma_get_recv_comp wait on those channels).
 * A size of 0: none wanted.
 */
static int
cqs_create(struct rdma_cm_id *id, uint32_t send_size, uint32_t recv_size)
{
	if (recv_size > 0) {
		id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
		if (id->recv_cq_channel == NULL)
			goto err;
		id->recv_cq = ibv_create_cq(id->verbs, (int)recv_size, id, id->recv_cq_channel, 0);
		if (id->recv_cq == NULL)
			goto err;
	}
	if (send_size > 0) {
		id->send_cq_channel = ibv_create_comp_channel(id->verbs);
		if (id->send_cq_channel == NULL)
			goto err;
		id->send_cq = ibv_create_cq(id->verbs, (int)send_size, id, id->send_cq_channel, 0);
		if (id->send_cq == NULL)
			goto err;
	}
	return 0;
err:
	cqs_destroy(id);
	return -1;
}

RCM_EXPORT int
rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp *qp;
	int err;

	if (id == NULL || attr == NULL || id->qp != NULL || id->verbs == NULL)
		return rcm_err(EINVAL);
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || attr->pd == NULL) {
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
		attr->pd = id->pd;
	} else if (attr->pd->context != id->verbs) {
		return rcm_err(EINVAL);
	}
	if (attr->pd == NULL)
		return rcm_err(EINVAL);
	if ((id->recv_cq != NULL && attr->recv_cq != NULL && id->recv_cq != attr->recv_cq) ||
	    (id->send_cq != NULL && attr->send_cq != NULL && id->send_cq != attr->send_cq))
		return rcm_err(EINVAL);
	if (cqs_create(id, attr->send_cq != NULL || id->send_cq != NULL ? 0 : attr->cap.max_send_wr,
		       attr->recv_cq != NULL || id->recv_cq != NULL ? 0 : attr->cap.max_recv_wr) != 0)
		return -1;
	if (attr->send_cq == NULL)
		attr->send_cq = id->send_cq;
	if (attr->recv_cq == NULL)
		attr->recv_cq = id->recv_cq;
	if (id->srq != NULL && attr->srq == NULL)
		attr->srq = id->srq;
	qp = qp_create(id, attr);
	if (qp == NULL)
		goto err_cqs;
	if (id->qp_type == IBV_QPT_UD && qp_ud_ready(id, qp) != 0)
		goto err_qp;
	id->pd = qp->pd;
	id->qp = qp;
	return 0;
err_qp:
	err = errno;
	ibv_destroy_qp(qp);
	errno = err;
err_cqs:
	err = errno;
	cqs_destroy(id);
	return rcm_err(err);
}

RCM_EXPORT int
rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex attr_ex;
	int ret;

	if (id == NULL || qp_init_attr == NULL)
		return rcm_err(EINVAL);
	memset(&attr_ex, 0, sizeof(attr_ex));
	memcpy(&attr_ex, qp_init_attr, sizeof(*qp_init_attr));
	attr_ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	attr_ex.pd = pd != NULL ? pd : id->pd;
	ret = rdma_create_qp_ex(id, &attr_ex);
	memcpy(qp_init_attr, &attr_ex, sizeof(*qp_init_attr));
	return ret;
}

RCM_EXPORT void
rdma_destroy_qp(struct rdma_cm_id *id)
{
	if (id == NULL)
		return;
	if (id->qp != NULL) {
		/* Out of the groups its joins attached it to (as a leave detaches). */
		rcm_mc_qp_gone(to_rid(id));
		ibv_destroy_qp(id->qp);
	}
	id->qp = NULL;
	cqs_destroy(id);
}

RCM_EXPORT int
rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq *srq;

	if (id == NULL || attr == NULL || id->verbs == NULL)
		return rcm_err(EINVAL);
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE))
		return rcm_err(EINVAL);
	/* droce has no XRC (ibv_open_xrcd is EOPNOTSUPP): basic SRQs only. */
	if (attr->srq_type != IBV_SRQT_BASIC)
		return rcm_err(EOPNOTSUPP);
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || attr->pd == NULL) {
		attr->pd = id->pd;
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
	}
	srq = ibv_create_srq_ex(id->verbs, attr);
	if (srq == NULL)
		return -1;
	if (id->pd == NULL)
		id->pd = attr->pd;
	id->srq = srq;
	return 0;
}

RCM_EXPORT int
rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex attr_ex;
	int ret;

	if (id == NULL || attr == NULL)
		return rcm_err(EINVAL);
	memset(&attr_ex, 0, sizeof(attr_ex));
	memcpy(&attr_ex, attr, sizeof(*attr));
	attr_ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	attr_ex.srq_type = IBV_SRQT_BASIC;
	attr_ex.pd = pd;
	ret = rdma_create_srq_ex(id, &attr_ex);
	memcpy(attr, &attr_ex, sizeof(*attr));
	return ret;
}

RCM_EXPORT void
rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (id == NULL)
		return;
	if (id->srq != NULL)
		ibv_destroy_srq(id->srq);
	id->srq = NULL;
	cqs_destroy(id);
}
