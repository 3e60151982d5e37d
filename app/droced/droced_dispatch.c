/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Every request a client can make, one row each: the smallest message it may come in (the
 * union member it uses), which connections may make it, and its handler. A connection is
 * a device context after HELLO, a CM channel after CM_OPEN, never both; before either it
 * may only ask for the device list or droced's status. A request whose neighbour is being
 * resolved is parked (its handler answers 1): the loop stops reading that client, and
 * droced_dispatch_resume() runs it again once the neighbour is known.
 */

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "droced_loc.h"

#define REQ_SIZE(member) \
	(offsetof(struct droce_proto_req, member) + sizeof(((struct droce_proto_req *)0)->member))
#define REQ_HDR_SIZE	offsetof(struct droce_proto_req, hello)

/* Which connections may make a request. */
enum gate {
	GATE_ANY,	/* any: the device list, droced's status and QPs */
	GATE_HELLO,	/* one that is not a CM channel (HELLO itself refuses a second) */
	GATE_CONTEXT,	/* a device context */
	GATE_CM_OPEN,	/* one that is not a device context (CM_OPEN refuses a second) */
	GATE_CM,	/* a CM channel */
	GATE_CM_ID,	/* a CM channel, naming one of its ids first (call->cm_id) */
};

struct op_row {
	size_t min_len;
	enum gate gate;
	droced_op_fn fn;
};

#define OP(op, len, gate, fn)	[DROCE_PROTO_OP_##op] = { (len), (gate), (fn) }

static const struct op_row ops[DROCE_PROTO_OP_MAX] = {
	OP(QUERY_PORTS, REQ_HDR_SIZE, GATE_ANY, droced_session_query_ports),
	OP(STATUS, REQ_HDR_SIZE, GATE_ANY, droced_session_status),
	OP(QUERY_QPS, REQ_SIZE(query_qps), GATE_ANY, droced_session_query_qps),
	OP(QUERY_PORT_DETAIL, REQ_SIZE(query_port_detail), GATE_ANY,
	   droced_session_query_port_detail),
	OP(QUERY_VIEW, REQ_SIZE(query_view), GATE_ANY, droced_session_query_view),
	OP(CAPTURE_START, REQ_SIZE(capture), GATE_ANY, droced_capture_start),
	OP(CAPTURE_STATUS, REQ_HDR_SIZE, GATE_ANY, droced_capture_status),
	OP(CAPTURE_STOP, REQ_HDR_SIZE, GATE_ANY, droced_capture_stop),
	OP(HELLO, REQ_SIZE(hello), GATE_HELLO, droced_session_hello),
	OP(ALLOC_PD, REQ_HDR_SIZE, GATE_CONTEXT, droced_pd_alloc),
	OP(DEALLOC_PD, REQ_SIZE(obj), GATE_CONTEXT, droced_pd_dealloc),
	OP(REG_MR, offsetof(struct droce_proto_req, reg_mr.pieces), GATE_CONTEXT, droced_mr_reg),
	OP(REREG_MR, offsetof(struct droce_proto_req, rereg_mr.pieces), GATE_CONTEXT,
	   droced_mr_rereg),
	OP(DEREG_MR, REQ_SIZE(obj), GATE_CONTEXT, droced_mr_dereg),
	OP(ALLOC_MW, REQ_SIZE(alloc_mw), GATE_CONTEXT, droced_mw_alloc),
	OP(DEALLOC_MW, REQ_SIZE(obj), GATE_CONTEXT, droced_mw_dealloc),
	OP(OPEN_XRCD, REQ_SIZE(open_xrcd), GATE_CONTEXT, droced_xrcd_open),
	OP(CLOSE_XRCD, REQ_SIZE(obj), GATE_CONTEXT, droced_xrcd_close),
	OP(CREATE_CQ, REQ_SIZE(create_cq), GATE_CONTEXT, droced_cq_create),
	OP(RESIZE_CQ, REQ_SIZE(resize_cq), GATE_CONTEXT, droced_cq_resize),
	OP(DESTROY_CQ, REQ_SIZE(obj), GATE_CONTEXT, droced_cq_destroy),
	OP(CREATE_SRQ, REQ_SIZE(create_srq), GATE_CONTEXT, droced_srq_create),
	OP(MODIFY_SRQ, REQ_SIZE(modify_srq), GATE_CONTEXT, droced_srq_modify),
	OP(QUERY_SRQ, REQ_SIZE(obj), GATE_CONTEXT, droced_srq_query),
	OP(DESTROY_SRQ, REQ_SIZE(obj), GATE_CONTEXT, droced_srq_destroy),
	OP(CREATE_QP, REQ_SIZE(create_qp), GATE_CONTEXT, droced_qp_create),
	OP(MODIFY_QP, REQ_SIZE(modify_qp), GATE_CONTEXT, droced_qp_modify),
	OP(QUERY_QP, REQ_SIZE(obj), GATE_CONTEXT, droced_qp_query),
	OP(DESTROY_QP, REQ_SIZE(obj), GATE_CONTEXT, droced_qp_destroy),
	OP(ATTACH_MCAST, REQ_SIZE(mcast), GATE_CONTEXT, droced_qp_attach_mcast),
	OP(DETACH_MCAST, REQ_SIZE(mcast), GATE_CONTEXT, droced_qp_detach_mcast),
	OP(CREATE_AH, REQ_SIZE(create_ah), GATE_CONTEXT, droced_ah_create),
	OP(DESTROY_AH, REQ_SIZE(obj), GATE_CONTEXT, droced_ah_destroy),
	OP(CM_OPEN, REQ_SIZE(cm_open), GATE_CM_OPEN, droced_rdmacm_open),
	OP(CM_CREATE_ID, REQ_SIZE(cm_create_id), GATE_CM, droced_rdmacm_create_id),
	OP(CM_GET_EVENT, REQ_HDR_SIZE, GATE_CM, droced_rdmacm_get_event),
	OP(CM_MIGRATE, REQ_SIZE(cm_migrate), GATE_CM, droced_rdmacm_migrate),
	/* cm_id, cm_bind, cm_conn, ...: every one of these begins with the id */
	OP(CM_DESTROY_ID, REQ_SIZE(cm_id), GATE_CM_ID, droced_rdmacm_destroy_id),
	OP(CM_BIND, REQ_SIZE(cm_bind), GATE_CM_ID, droced_rdmacm_bind),
	OP(CM_RESOLVE_ADDR, REQ_SIZE(cm_resolve_addr), GATE_CM_ID, droced_rdmacm_resolve_addr),
	OP(CM_RESOLVE_ROUTE, REQ_SIZE(cm_id), GATE_CM_ID, droced_rdmacm_resolve_route),
	OP(CM_QUERY, REQ_SIZE(cm_id), GATE_CM_ID, droced_rdmacm_query),
	OP(CM_LISTEN, REQ_SIZE(cm_listen), GATE_CM_ID, droced_rdmacm_listen),
	OP(CM_CONNECT, REQ_SIZE(cm_conn), GATE_CM_ID, droced_rdmacm_connect),
	OP(CM_ACCEPT, REQ_SIZE(cm_conn), GATE_CM_ID, droced_rdmacm_accept),
	OP(CM_ESTABLISH, REQ_SIZE(cm_id), GATE_CM_ID, droced_rdmacm_establish),
	OP(CM_REJECT, REQ_SIZE(cm_reject), GATE_CM_ID, droced_rdmacm_reject),
	OP(CM_DISCONNECT, REQ_SIZE(cm_id), GATE_CM_ID, droced_rdmacm_disconnect),
	OP(CM_INIT_QP_ATTR, REQ_SIZE(cm_init_qp_attr), GATE_CM_ID, droced_rdmacm_init_qp_attr),
	OP(CM_SET_OPTION, REQ_SIZE(cm_set_option), GATE_CM_ID, droced_rdmacm_set_option),
	OP(CM_NOTIFY, REQ_SIZE(cm_notify), GATE_CM_ID, droced_rdmacm_notify),
	OP(CM_JOIN_MCAST, REQ_SIZE(cm_mcast), GATE_CM_ID, droced_rdmacm_join_mcast),
	OP(CM_LEAVE_MCAST, REQ_SIZE(cm_mcast), GATE_CM_ID, droced_rdmacm_leave_mcast),
};

/* 0, or why c may not make the request of row r (-EPROTO; -EINVAL: no such id). */
static int
gate_check(struct droced_client *c, const struct op_row *r, struct droced_call *call)
{
	switch (r->gate) {
	case GATE_ANY:
		return 0;
	case GATE_HELLO:
		return c->cm != NULL ? -EPROTO : 0;
	case GATE_CONTEXT:
		return c->cm != NULL || !c->hello ? -EPROTO : 0;
	case GATE_CM_OPEN:
		return c->hello ? -EPROTO : 0;
	case GATE_CM:
		return c->hello || c->cm == NULL ? -EPROTO : 0;
	case GATE_CM_ID:
		if (c->hello || c->cm == NULL)
			return -EPROTO;
		call->cm_id = droced_rdmacm_id_lookup(c, call->req->cm_id.id);
		return call->cm_id == NULL ? -EINVAL : 0;
	}
	return -EINVAL;
}

int
droced_dispatch(struct droced_client *c, const struct droce_proto_req *req, size_t n, int *fds,
		unsigned int nfds, struct droce_proto_resp *resp, int *out_fds,
		unsigned int *out_nfds)
{
	struct droced_call call = {
		.req = req, .len = n, .fds = fds, .nfds = nfds, .resp = resp,
		.out_fds = out_fds, .out_nfds = out_nfds,
	};
	uint32_t op = req->op;
	const struct op_row *r;
	int rc;

	memset(resp, 0, sizeof(*resp));
	resp->op = op;
	resp->seq = req->seq;
	*out_nfds = 0;
	if (n < REQ_HDR_SIZE || op >= DROCE_PROTO_OP_MAX || ops[op].fn == NULL ||
	    n < ops[op].min_len) {
		resp->status = -EINVAL;
		return 0;
	}
	r = &ops[op];
	rc = gate_check(c, r, &call);
	if (rc == 0)
		rc = r->fn(c, &call);
	if (rc == 1)
		return 1;
	if (rc != 0) {
		/* A failed request answers with its status only, and the limit it met. */
		uint32_t limit = resp->limit;

		memset(resp, 0, sizeof(*resp));
		resp->op = op;
		resp->seq = req->seq;
		resp->limit = limit;
		*out_nfds = 0;
	}
	resp->status = rc;
	return 0;
}

int
droced_dispatch_resume(struct droced_client *c, int status, struct droce_proto_resp *resp)
{
	unsigned int nfds;
	int fds[1];

	c->parked = false;
	if (status == 0)
		/* The neighbour is known now: run the request again, this time to the end. */
		return droced_dispatch(c, &c->park_req, sizeof(c->park_req), NULL, 0, resp, fds,
				       &nfds);
	memset(resp, 0, sizeof(*resp));
	resp->op = c->park_req.op;
	resp->seq = c->park_req.seq;
	resp->status = -EHOSTUNREACH;
	return 0;
}
