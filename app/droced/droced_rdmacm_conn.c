/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * The rdma_cm side's connections (droced_rdmacm_loc.h): rdma_connect, rdma_accept,
 * rdma_reject, rdma_disconnect and rdma_notify turned into the IB CM side's calls, what
 * that side reports back (droced_rdmacm_conn_event), QP attributes for
 * rdma_init_qp_attr, and the QP moves droced makes for librdmacm (droced_qp.c).
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_random.h>

#include "droced_rdmacm_loc.h"

uint64_t rdmacm_qp_moves, rdmacm_qp_move_fallbacks;

/* ---- Events from the wire ---- */

static int qp_connect(struct droced_rdmacm_id *id, uint32_t qpn, const struct droce_proto_cm_conn *cp);

static void
conn_params_req(struct droce_proto_cm_conn *cp, const struct droce_cm_req *r)
{
	cp->qp_num = r->local_qpn;
	cp->qp_type = r->transport_service_type == 1 ? DROCE_SHM_QPT_UC : DROCE_SHM_QPT_RC;
	cp->srq = r->srq;
	/* cma_set_req_event_data: the peer's resources swapped, as the id sees them. */
	cp->responder_resources = r->initiator_depth;
	cp->initiator_depth = r->responder_resources;
	cp->flow_control = r->end_to_end_flow_control;
	cp->retry_count = r->retry_count;
	cp->rnr_retry_count = r->rnr_retry_count;
	cp->private_data_len = DROCE_CM_REQ_PDATA_LEN - DROCE_CM_IP_HDR_LEN;
	memcpy(cp->private_data, r->private_data + DROCE_CM_IP_HDR_LEN, cp->private_data_len);
}

static void
ud_attr(const struct droced_rdmacm_id *id, struct droce_proto_cm_qp_attr *a)
{
	a->ah.is_global = 1;
	memcpy(a->ah.dgid, id->dgid, 16);
	a->ah.sgid_index = id->sgid_index;
	a->ah.hop_limit = DROCED_ROUTE_HOP_LIMIT;
	a->ah.traffic_class = id->tos;
	a->ah.port_num = 1;
}

void
droced_rdmacm_conn_event(struct droced_rdmacm_id *id, enum droce_cm_event ev,
			 const struct droce_cm_msg *m, uint16_t rej_reason)
{
	struct cm_event *e;
	size_t len;

	switch (ev) {
	case DROCE_CM_EVENT_REQ_RECEIVED:
	case DROCE_CM_EVENT_SIDR_REQ_RECEIVED:
		e = rdmacm_ev_new(id, DROCE_PROTO_CM_EVENT_CONNECT_REQUEST, 0);
		if (e == NULL)
			return;
		e->ev.listen_id = id->listener->handle;
		if (m->attr_id == DROCE_CM_ATTR_REQ) {
			conn_params_req(&e->ev.conn, &m->req);
		} else {
			e->ev.conn.qp_type = DROCE_SHM_QPT_UD;
			len = DROCE_CM_SIDR_REQ_PDATA_LEN - DROCE_CM_IP_HDR_LEN;
			e->ev.conn.private_data_len = (uint8_t)len;
			memcpy(e->ev.conn.private_data,
			       m->sidr_req.private_data + DROCE_CM_IP_HDR_LEN, len);
		}
		rdmacm_ev_queue(id->ch, e);
		return;
	case DROCE_CM_EVENT_REP_RECEIVED: {
		const struct droce_cm_rep *r = &m->rep;

		id->remote_qpn = r->local_qpn;
		id->remote_psn = r->starting_psn;
		/* cm_rep_handler: what the passive end accepted, seen from here. */
		id->initiator_depth = r->responder_resources;
		id->responder_resources = r->initiator_depth;
		id->rnr_retry_count = r->rnr_retry_count;
		if (!id->ack_timeout_set)
			id->local_ack_timeout = droce_cm_ack_timeout(r->target_ack_delay, CM_PACKET_LIFETIME);
		e = rdmacm_ev_new(id, DROCE_PROTO_CM_EVENT_CONNECT_RESPONSE, 0);
		if (e == NULL)
			return;
		e->ev.conn.qp_num = r->local_qpn;
		e->ev.conn.qp_type = id->qp_type;
		e->ev.conn.srq = r->srq;
		e->ev.conn.responder_resources = r->initiator_depth;
		e->ev.conn.initiator_depth = r->responder_resources;
		e->ev.conn.flow_control = r->end_to_end_flow_control;
		e->ev.conn.rnr_retry_count = r->rnr_retry_count;
		e->ev.conn.private_data_len = DROCE_CM_REP_PDATA_LEN;
		memcpy(e->ev.conn.private_data, r->private_data, DROCE_CM_REP_PDATA_LEN);
		/*
		 * The id's QP is librdmacm's: move it and confirm with the RTU here, as Linux's
		 * cma_rep_recv does for a kernel consumer; the application sees ESTABLISHED. If
		 * the QP cannot be moved, the CONNECT_RESPONSE lets the library do both.
		 */
		if (id->move_qp && qp_connect(id, id->qpn, NULL) == 0 && rdmacm_op_establish(id) == 0)
			e->ev.event = DROCE_PROTO_CM_EVENT_ESTABLISHED;
		rdmacm_ev_queue(id->ch, e);
		return;
	}
	case DROCE_CM_EVENT_ESTABLISHED:
		id->state = ID_ESTABLISHED;
		rdmacm_ev_simple(id, DROCE_PROTO_CM_EVENT_ESTABLISHED, 0);
		return;
	case DROCE_CM_EVENT_REJECTED:
		id->state = ID_DISCONNECT;
		e = rdmacm_ev_new(id, DROCE_PROTO_CM_EVENT_REJECTED, rej_reason);
		if (e == NULL)
			return;
		if (m != NULL && m->attr_id == DROCE_CM_ATTR_REJ) {
			e->ev.conn.private_data_len = DROCE_CM_REJ_PDATA_LEN;
			memcpy(e->ev.conn.private_data, m->rej.private_data, DROCE_CM_REJ_PDATA_LEN);
		}
		rdmacm_ev_queue(id->ch, e);
		return;
	case DROCE_CM_EVENT_DISCONNECTED:
		id->state = ID_DISCONNECT;
		/* A DREQ whose retries ran out: Linux's DREQ_ERROR, status -ETIMEDOUT. */
		rdmacm_ev_simple(id, DROCE_PROTO_CM_EVENT_DISCONNECTED, m == NULL ? -ETIMEDOUT : 0);
		return;
	case DROCE_CM_EVENT_TIMEWAIT_EXIT:
		rdmacm_ev_simple(id, DROCE_PROTO_CM_EVENT_TIMEWAIT_EXIT, 0);
		return;
	case DROCE_CM_EVENT_UNREACHABLE:
		id->state = ID_DISCONNECT;
		rdmacm_ev_simple(id, DROCE_PROTO_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
		return;
	case DROCE_CM_EVENT_SIDR_REP_RECEIVED: {
		const struct droce_cm_sidr_rep *r = &m->sidr_rep;

		if (r->status != 0) {
			id->state = ID_DISCONNECT;
			rdmacm_ev_simple(id, DROCE_PROTO_CM_EVENT_UNREACHABLE, r->status);
			return;
		}
		id->remote_qpn = r->qpn;
		id->remote_qkey = r->qkey;
		id->state = ID_ESTABLISHED;
		e = rdmacm_ev_new(id, DROCE_PROTO_CM_EVENT_ESTABLISHED, 0);
		if (e == NULL)
			return;
		e->ev.ud.qp_state = DROCE_SHM_QPS_RTS;
		e->ev.ud.dest_qp_num = r->qpn;
		e->ev.ud.qkey = r->qkey;
		ud_attr(id, &e->ev.ud);
		e->ev.conn.qp_num = r->qpn;
		e->ev.conn.qkey = r->qkey;
		e->ev.conn.qp_type = DROCE_SHM_QPT_UD;
		e->ev.conn.private_data_len = DROCE_CM_SIDR_REP_PDATA_LEN;
		memcpy(e->ev.conn.private_data, r->private_data, DROCE_CM_SIDR_REP_PDATA_LEN);
		rdmacm_ev_queue(id->ch, e);
		return;
	}
	default:
		return;
	}
}

/* ---- Connecting ---- */

/* Linux's cma_get_roce_udp_flow_label for IPv4: the rdma_cm ports hashed. */
static uint32_t
flow_label(const struct droced_rdmacm_id *id)
{
	return ((uint32_t)ntohs(id->src.port) * 31 + ntohs(id->dst.port)) & DROCE_SHM_FLOW_LABEL_MAX;
}

static int
cma_hdr(const struct droced_rdmacm_id *id, uint8_t *pdata)
{
	struct droce_cm_ip_hdr h;

	memset(&h, 0, sizeof(h));
	h.ip_version = rdmacm_addr_v4(&id->src) ? 4 : 6;
	/* cma_format_hdr: the active end's own (source) port. */
	h.port = ntohs(id->src.port);
	memcpy(h.src_addr, id->src.addr, 16);
	memcpy(h.dst_addr, id->dst.addr, 16);
	return droce_cm_ip_hdr_build(&h, pdata);
}

int
rdmacm_op_connect(struct droced_rdmacm_id *id, const struct droce_proto_cm_conn *cp, uint32_t flags)
{
	struct droce_cm_out out;
	struct droced_ibcm_conn *conn;
	uint64_t guid;
	int rc;

	if (id->state != ID_ROUTE_RESOLVED)
		return -EINVAL;
	if (id->qp_type == DROCE_SHM_QPT_UD) {
		struct droce_cm_sidr_req sr;

		if (cp->private_data_len > DROCE_CM_SIDR_REQ_PDATA_LEN - DROCE_CM_IP_HDR_LEN)
			return -EINVAL;
		memset(&sr, 0, sizeof(sr));
		sr.partition_key = DROCE_PKEY_DEFAULT;
		sr.service_id = droce_cm_service_id(id->ps, ntohs(id->dst.port));
		if (cma_hdr(id, sr.private_data) != 0)
			return -EINVAL;
		memcpy(sr.private_data + DROCE_CM_IP_HDR_LEN, cp->private_data,
		       cp->private_data_len);
		conn = droced_ibcm_conn_new(id, id->port, id->sgid, id->dgid, id->dmac, id->tos);
		if (conn == NULL)
			return -ENOMEM;
		rc = droce_cm_sidr_req(droced_ibcm_conn_sm(conn), &sr, CM_RESPONSE_TIMEOUT,
				       CM_MAX_RETRIES, droced_now_ns(), &out);
	} else {
		struct droce_cm_req r;
		struct droce_proto_port_info info;

		if (cp->private_data_len > DROCE_CM_REQ_PDATA_LEN - DROCE_CM_IP_HDR_LEN)
			return -EINVAL;
		memset(&r, 0, sizeof(r));
		droced_port_info(id->port, &info);
		memcpy(&guid, &info.node_guid, 8);
		r.service_id = droce_cm_service_id(id->ps, ntohs(id->dst.port));
		r.local_ca_guid = be64toh(guid);
		r.local_qpn = cp->qp_num & DROCE_SHM_QPN_MAX;
		r.responder_resources = cp->responder_resources;
		r.initiator_depth = cp->initiator_depth;
		r.remote_cm_response_timeout = CM_RESPONSE_TIMEOUT;
		r.local_cm_response_timeout = CM_RESPONSE_TIMEOUT;
		r.transport_service_type = id->qp_type == DROCE_SHM_QPT_UC ? 1 : 0;
		r.end_to_end_flow_control = cp->flow_control & 1;
		r.starting_psn = id->psn;
		r.retry_count = RTE_MIN(cp->retry_count, (uint8_t)DROCE_SHM_RETRY_MAX);
		r.rnr_retry_count = RTE_MIN(cp->rnr_retry_count, (uint8_t)DROCE_SHM_RETRY_MAX);
		r.partition_key = DROCE_PKEY_DEFAULT;
		r.path_mtu = id->path_mtu;
		r.max_cm_retries = CM_MAX_RETRIES;
		r.srq = cp->srq & 1;
		/* cm_format_req on RoCE: permissive LIDs, the path's GIDs, hop limit, class. */
		r.primary.local_lid = CM_PERMISSIVE_LID;
		r.primary.remote_lid = CM_PERMISSIVE_LID;
		memcpy(r.primary.local_gid, id->sgid, 16);
		memcpy(r.primary.remote_gid, id->dgid, 16);
		r.primary.flow_label = flow_label(id);
		r.primary.traffic_class = id->tos;
		r.primary.hop_limit = DROCED_ROUTE_HOP_LIMIT;
		r.primary.local_ack_timeout = id->ack_timeout_set ? id->ack_timeout :
			droce_cm_ack_timeout(CM_ACK_DELAY, CM_PACKET_LIFETIME);
		if (cma_hdr(id, r.private_data) != 0)
			return -EINVAL;
		memcpy(r.private_data + DROCE_CM_IP_HDR_LEN, cp->private_data,
		       cp->private_data_len);
		conn = droced_ibcm_conn_new(id, id->port, id->sgid, id->dgid, id->dmac, id->tos);
		if (conn == NULL)
			return -ENOMEM;
		rc = droce_cm_connect(droced_ibcm_conn_sm(conn), &r, droced_now_ns(), &out);
		id->responder_resources = cp->responder_resources;
		id->initiator_depth = cp->initiator_depth;
		id->retry_count = r.retry_count;
		id->rnr_retry_count = r.rnr_retry_count;
	}
	if (rc != 0) {
		/* Never in IDLE; an orphan in IDLE is freed at once. */
		droced_ibcm_conn_orphan(conn);
		return rc;
	}
	id->qpn = cp->qp_num & DROCE_SHM_QPN_MAX;
	id->srq = cp->srq;
	id->move_qp = (flags & DROCE_PROTO_CM_CONN_F_MOVE_QP) && id->qp_type != DROCE_SHM_QPT_UD;
	droced_rdmacm_id_attach(id, conn);
	id->state = ID_CONNECT;
	droced_ibcm_conn_out(conn, &out, NULL);
	return 0;
}

int
rdmacm_op_accept(struct droced_rdmacm_id *id, const struct droce_proto_cm_conn *cp, uint32_t flags,
	  struct droce_proto_resp *resp)
{
	struct droce_cm_out out;
	struct droce_cm_conn *sm;
	int rc;

	if (id->state != ID_CONNECT || id->conn == NULL)
		return -EINVAL;
	sm = droced_ibcm_conn_sm(id->conn);
	if (sm->active)
		return -EINVAL;
	if (id->qp_type == DROCE_SHM_QPT_UD) {
		struct droce_cm_sidr_rep rep;

		if (cp->private_data_len > DROCE_CM_SIDR_REP_PDATA_LEN)
			return -EINVAL;
		memset(&rep, 0, sizeof(rep));
		rep.qpn = cp->qp_num & DROCE_SHM_QPN_MAX;
		rep.qkey = cp->qkey != 0 ? cp->qkey : DROCE_PROTO_CM_UDP_QKEY;
		rep.service_id = droce_cm_service_id(id->ps, ntohs(id->src.port));
		memcpy(rep.private_data, cp->private_data, cp->private_data_len);
		rc = droce_cm_sidr_rep(sm, &rep, droced_now_ns(), &out);
		if (rc == 0)
			id->state = ID_ESTABLISHED;
	} else {
		struct droce_cm_rep rep;
		struct droce_proto_port_info info;
		uint64_t guid;

		if (cp->private_data_len > DROCE_CM_REP_PDATA_LEN)
			return -EINVAL;
		/* The QP must be in RTR before the REP leaves: the RTU may come with data. */
		if (flags & DROCE_PROTO_CM_CONN_F_MOVE_QP) {
			if (qp_connect(id, cp->qp_num & DROCE_SHM_QPN_MAX, cp) != 0)
				return 0;	/* not moved: the library moves it, then accepts */
			resp->cm_accept.moved = 1;
		}
		memset(&rep, 0, sizeof(rep));
		droced_port_info(id->port, &info);
		memcpy(&guid, &info.node_guid, 8);
		rep.local_qpn = cp->qp_num & DROCE_SHM_QPN_MAX;
		rep.starting_psn = id->psn;
		rep.responder_resources = cp->responder_resources;
		rep.initiator_depth = cp->initiator_depth;
		rep.target_ack_delay = CM_ACK_DELAY;
		rep.end_to_end_flow_control = cp->flow_control & 1;
		rep.rnr_retry_count = RTE_MIN(cp->rnr_retry_count, (uint8_t)DROCE_SHM_RETRY_MAX);
		rep.srq = cp->srq & 1;
		rep.local_ca_guid = be64toh(guid);
		memcpy(rep.private_data, cp->private_data, cp->private_data_len);
		rc = droce_cm_accept(sm, &rep, droced_now_ns(), &out);
		if (rc == 0) {
			id->qpn = rep.local_qpn;
			id->responder_resources = cp->responder_resources;
			id->initiator_depth = cp->initiator_depth;
		}
	}
	if (rc != 0)
		return rc;
	droced_ibcm_conn_out(id->conn, &out, NULL);
	return 0;
}

/* Puts len bytes of private data into the MAD a lib/cm call left in out (it sends none). */
static void
out_pdata(struct droce_cm_out *out, const uint8_t *pdata, size_t len)
{
	struct droce_cm_msg m;
	uint8_t *dst;
	size_t max;

	if (len == 0 || out->nmads == 0 ||
	    droce_cm_mad_parse(out->mads[0], DROCE_CM_MAD_LEN, &m) != DROCE_CM_OK)
		return;
	switch (m.attr_id) {
	case DROCE_CM_ATTR_REJ: dst = m.rej.private_data; max = DROCE_CM_REJ_PDATA_LEN; break;
	case DROCE_CM_ATTR_DREQ: dst = m.dreq.private_data; max = DROCE_CM_DREQ_PDATA_LEN; break;
	case DROCE_CM_ATTR_RTU: dst = m.rtu.private_data; max = DROCE_CM_RTU_PDATA_LEN; break;
	default: return;
	}
	memcpy(dst, pdata, RTE_MIN(len, max));
	droce_cm_mad_build(&m, out->mads[0]);
}

int
rdmacm_op_reject(struct droced_rdmacm_id *id, const struct droce_proto_req *req)
{
	struct droce_cm_out out;
	struct droce_cm_conn *sm;
	int rc;

	if (id->conn == NULL)
		return -EINVAL;
	sm = droced_ibcm_conn_sm(id->conn);
	if (req->cm_reject.private_data_len > DROCE_CM_REJ_PDATA_LEN)
		return -EINVAL;
	if (sm->state == DROCE_CM_STATE_SIDR_REQ_RCVD) {
		struct droce_cm_sidr_rep rep;

		memset(&rep, 0, sizeof(rep));
		rep.status = DROCE_CM_SIDR_REJECT;
		memcpy(rep.private_data, req->cm_reject.private_data,
		       RTE_MIN((size_t)req->cm_reject.private_data_len,
			       (size_t)DROCE_CM_SIDR_REP_PDATA_LEN));
		rc = droce_cm_sidr_rep(sm, &rep, droced_now_ns(), &out);
	} else {
		rc = droce_cm_reject(sm, req->cm_reject.reason ? req->cm_reject.reason :
				     DROCE_CM_REJ_CONSUMER_DEFINED, droced_now_ns(), &out);
		out_pdata(&out, req->cm_reject.private_data, req->cm_reject.private_data_len);
	}
	if (rc != 0)
		return rc;
	id->state = ID_DISCONNECT;
	droced_ibcm_conn_out(id->conn, &out, NULL);
	return 0;
}

int
rdmacm_op_establish(struct droced_rdmacm_id *id)
{
	struct droce_cm_out out;
	int rc;

	if (id->conn == NULL)
		return -EINVAL;
	rc = droce_cm_rtu(droced_ibcm_conn_sm(id->conn), droced_now_ns(), &out);
	if (rc != 0)
		return rc;
	/*
	 * No event: librdmacm reports the CONNECT_RESPONSE it answered as ESTABLISHED itself,
	 * as rdma-core's does, and Linux's rdma_establish() raises none either.
	 */
	id->state = ID_ESTABLISHED;
	droced_ibcm_conn_out(id->conn, &out, NULL);
	return 0;
}

int
rdmacm_op_disconnect(struct droced_rdmacm_id *id)
{
	struct droce_cm_out out;
	struct droce_cm_conn *sm;

	if (id->conn == NULL)
		return id->connected_once ? 0 : -EINVAL;
	sm = droced_ibcm_conn_sm(id->conn);
	/* rdma_disconnect: a DREQ when it can, else nothing to do (the DREQ was answered). */
	if (sm->state != DROCE_CM_STATE_ESTABLISHED)
		return 0;
	if (droce_cm_disconnect(sm, droced_now_ns(), &out) != 0)
		return 0;
	id->state = ID_DISCONNECT;
	droced_ibcm_conn_out(id->conn, &out, NULL);
	return 0;
}

int
rdmacm_op_notify(struct droced_rdmacm_id *id, uint32_t event)
{
	struct droce_cm_out out;
	struct droce_cm_conn *sm;
	struct droce_cm_msg m;

	if (event != DROCE_SHM_EVENT_COMM_EST)
		return -EINVAL;
	if (id->conn == NULL)
		return -EINVAL;
	sm = droced_ibcm_conn_sm(id->conn);
	if (sm->state != DROCE_CM_STATE_REP_SENT && sm->state != DROCE_CM_STATE_MRA_REP_RCVD)
		return 0;
	/* cm_establish: the first packet on the QP stands for the RTU that got lost. */
	memset(&m, 0, sizeof(m));
	m.attr_id = DROCE_CM_ATTR_RTU;
	m.tid = sm->tid;
	m.rtu.local_comm_id = sm->remote_id;
	m.rtu.remote_comm_id = sm->local_id;
	droce_cm_input(sm, &m, droced_now_ns(), &out);
	droced_ibcm_conn_out(id->conn, &out, &m);
	return 0;
}

/* ---- QP attributes (rdma_init_qp_attr) ---- */

int
rdmacm_op_init_qp_attr(struct droced_rdmacm_id *id, uint32_t state, struct droce_proto_cm_qp_attr *a)
{
	bool ud = id->qp_type == DROCE_SHM_QPT_UD, rc = id->qp_type == DROCE_SHM_QPT_RC;

	memset(a, 0, sizeof(*a));
	a->qp_state = state;
	if (id->port == NULL)
		return -EINVAL;
	switch (state) {
	case DROCE_SHM_QPS_INIT:
		a->mask = DROCE_SHM_QP_STATE | DROCE_SHM_QP_PKEY_INDEX | DROCE_SHM_QP_PORT;
		a->port_num = 1;
		if (ud) {
			a->mask |= DROCE_SHM_QP_QKEY;
			a->qkey = DROCE_PROTO_CM_UDP_QKEY;
			return 0;
		}
		a->mask |= DROCE_SHM_QP_ACCESS_FLAGS;
		/* cm_init_qp_init_attr once the CM has the connection; 0 before (cma.c). */
		if (id->connected_once) {
			a->qp_access_flags = DROCE_SHM_ACCESS_REMOTE_WRITE;
			if (id->responder_resources != 0)
				a->qp_access_flags |= DROCE_SHM_ACCESS_REMOTE_READ |
						      DROCE_SHM_ACCESS_REMOTE_ATOMIC;
		}
		return 0;
	case DROCE_SHM_QPS_RTR:
		a->mask = DROCE_SHM_QP_STATE;
		if (ud)
			return 0;
		if (!id->connected_once)
			return -EINVAL;
		a->mask |= DROCE_SHM_QP_AV | DROCE_SHM_QP_PATH_MTU | DROCE_SHM_QP_DEST_QPN |
			   DROCE_SHM_QP_RQ_PSN;
		ud_attr(id, a);
		a->ah.flow_label = flow_label(id);
		a->path_mtu = id->path_mtu;
		a->dest_qp_num = id->remote_qpn;
		/* rdma_init_qp_attr: rq_psn is the id's own advertised PSN (Linux's seq_num). */
		a->rq_psn = id->psn;
		if (rc) {
			a->mask |= DROCE_SHM_QP_MAX_DEST_RD_ATOMIC | DROCE_SHM_QP_MIN_RNR_TIMER;
			a->max_dest_rd_atomic = id->responder_resources;
			a->min_rnr_timer = 0;
		}
		return 0;
	case DROCE_SHM_QPS_RTS:
		a->mask = DROCE_SHM_QP_STATE | DROCE_SHM_QP_SQ_PSN;
		if (ud)
			return 0;
		if (!id->connected_once)
			return -EINVAL;
		/* cm_init_qp_rts_attr: the peer's advertised PSN (see rq_psn). */
		a->sq_psn = id->remote_psn;
		if (rc) {
			a->mask |= DROCE_SHM_QP_TIMEOUT | DROCE_SHM_QP_RETRY_CNT |
				   DROCE_SHM_QP_RNR_RETRY | DROCE_SHM_QP_MAX_QP_RD_ATOMIC;
			a->timeout = id->ack_timeout_set ? id->ack_timeout : id->local_ack_timeout;
			a->retry_cnt = id->retry_count;
			a->rnr_retry = id->rnr_retry_count;
			a->max_rd_atomic = id->initiator_depth;
		}
		return 0;
	default:
		return -EINVAL;
	}
}

/* DROCE_PROTO_CM_QPS_CONNECT: INIT, RTR and RTS in one answer. */
int
rdmacm_op_init_qp_attrs(struct droced_rdmacm_id *id, struct droce_proto_cm_qp_attr a[3])
{
	static const uint32_t states[3] = {
		DROCE_SHM_QPS_INIT, DROCE_SHM_QPS_RTR, DROCE_SHM_QPS_RTS
	};
	unsigned int i;
	int rc;

	for (i = 0; i < 3; i++) {
		rc = rdmacm_op_init_qp_attr(id, states[i], &a[i]);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* A CM_INIT_QP_ATTR answer as a modify of droced's own (what ibv_modify_qp would send). */
static void
qp_attr_to_shm(const struct droce_proto_cm_qp_attr *a, struct droce_shm_qp_attr *s)
{
	memset(s, 0, sizeof(*s));
	s->mask = a->mask;
	s->qp_state = (uint8_t)a->qp_state;
	s->qp_access_flags = a->qp_access_flags;
	s->dest_qp_num = a->dest_qp_num;
	s->rq_psn = a->rq_psn;
	s->sq_psn = a->sq_psn;
	s->qkey = a->qkey;
	s->pkey_index = a->pkey_index;
	s->port_num = a->port_num;
	s->path_mtu = a->path_mtu;
	s->max_dest_rd_atomic = a->max_dest_rd_atomic;
	s->max_rd_atomic = a->max_rd_atomic;
	s->min_rnr_timer = a->min_rnr_timer;
	s->timeout = a->timeout;
	s->retry_cnt = a->retry_cnt;
	s->rnr_retry = a->rnr_retry;
	s->ah = a->ah;
}

/*
 * Moves QP qpn of the id's process to RTR, then RTS (DROCE_PROTO_CM_CONN_F_MOVE_QP), with
 * the attributes op_init_qp_attrs gives, as librdmacm's rcm_qp_connect applies them: the
 * QP is in INIT since rdma_create_qp, so INIT's access flags and P_Key index ride on the
 * RTR change (optional there, IBA 11.2.4.2), and an accept's responder resources and
 * initiator depth (cp; NULL on the active side) replace the CM's. Not 0: nothing the
 * library could not redo (at worst the QP is left in RTR, which it moves on from).
 */
static int
qp_connect(struct droced_rdmacm_id *id, uint32_t qpn, const struct droce_proto_cm_conn *cp)
{
	struct droce_proto_cm_qp_attr a[3];
	struct droce_shm_qp_attr rtr, rts;
	int rc;

	rc = rdmacm_op_init_qp_attrs(id, a);
	if (rc == 0) {
		qp_attr_to_shm(&a[1], &rtr);
		rtr.mask |= a[0].mask & (DROCE_SHM_QP_ACCESS_FLAGS | DROCE_SHM_QP_PKEY_INDEX);
		rtr.qp_access_flags = a[0].qp_access_flags;
		rtr.pkey_index = a[0].pkey_index;
		qp_attr_to_shm(&a[2], &rts);
		if (cp != NULL) {
			rtr.max_dest_rd_atomic = cp->responder_resources;
			rts.max_rd_atomic = cp->initiator_depth;
		}
		rc = droced_qp_modify_num(id->ch->c, qpn, &rtr);
	}
	if (rc == 0)
		rc = droced_qp_modify_num(id->ch->c, qpn, &rts);
	if (rc != 0) {
		rdmacm_qp_move_fallbacks++;
		DROCED_LOG(DEBUG, "cm: id %u: QP %u not moved (%s): the library moves it\n",
			   id->handle, qpn, strerror(-rc));
		return rc;
	}
	rdmacm_qp_moves++;
	return 0;
}

int
rdmacm_op_set_option(struct droced_rdmacm_id *id, uint32_t name, uint32_t value)
{
	switch (name) {
	case DROCE_PROTO_CM_OPT_TOS:
		id->tos = (uint8_t)value;
		return 0;
	case DROCE_PROTO_CM_OPT_REUSEADDR:
		/* cma.c: only before binding. */
		if (id->state != ID_IDLE)
			return -EINVAL;
		id->reuseaddr = value != 0;
		return 0;
	case DROCE_PROTO_CM_OPT_AFONLY:
		if (id->state != ID_IDLE)
			return -EINVAL;
		id->afonly = value != 0;
		return 0;
	case DROCE_PROTO_CM_OPT_ACK_TIMEOUT:
		id->ack_timeout_set = true;
		id->ack_timeout = (uint8_t)RTE_MIN(value, (uint32_t)DROCE_SHM_TIMER_CODE_MAX);
		return 0;
	default:
		return -ENOSYS;
	}
}
