/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * rdma_cm ids: each call is one round trip to droced's CM on the id's channel, with the
 * argument checks and defaults of rdma-core's cma.c first. An id created without a
 * channel is synchronous: it gets a private channel, and the calls that start something
 * (resolve, connect, accept, disconnect, rdma_get_request) wait there for its event and
 * keep it in id->event until the next call acks it, as rdma-core's ucma_complete does.
 */

#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include <droce_wire_gid.h>
#include <droce_wire_hdr.h>

#include "rdmacm_loc.h"

int
rcm_addrlen(const struct sockaddr *sa)
{
	if (sa == NULL)
		return 0;
	switch (sa->sa_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	default:
		/* AF_IB among them: droce is RoCE only, as rdma-core without AF_IB support. */
		return 0;
	}
}

/* IPv4 travels IPv4-mapped (::ffff:a.b.c.d), like droce's GIDs. */
int
rcm_addr_to_proto(const struct sockaddr *sa, struct droce_proto_cm_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (sa == NULL)
		return 0;
	switch (sa->sa_family) {
	case AF_INET: {
		const struct sockaddr_in *s = (const struct sockaddr_in *)sa;

		a->family = AF_INET;
		a->port = s->sin_port;
		droce_gid_from_ipv4(a->addr, (const uint8_t *)&s->sin_addr);
		return 0;
	}
	case AF_INET6: {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)sa;

		a->family = AF_INET6;
		a->port = s->sin6_port;
		a->scope_id = s->sin6_scope_id;
		memcpy(a->addr, &s->sin6_addr, 16);
		return 0;
	}
	default:
		return EINVAL;
	}
}

static void
addr_from_proto(const struct droce_proto_cm_addr *a, struct sockaddr_storage *ss)
{
	if (a->family == AF_INET) {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;

		memset(ss, 0, sizeof(*ss));
		s->sin_family = AF_INET;
		s->sin_port = a->port;
		memcpy(&s->sin_addr, &a->addr[12], 4);
	} else if (a->family == AF_INET6) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;

		memset(ss, 0, sizeof(*ss));
		s->sin6_family = AF_INET6;
		s->sin6_port = a->port;
		s->sin6_scope_id = a->scope_id;
		memcpy(&s->sin6_addr, a->addr, 16);
	}
}

/*
 * What CM_QUERY (or CM_BIND) said about an id: its addresses, GIDs, device and, once the
 * route is resolved, its one path record, shaped as Linux shapes a RoCE path (permissive
 * LIDs, P_Key 0xffff, packet life time 16, rate left 0: droce does not pace by path).
 */
int
rcm_id_fill(struct rcm_id *r, const struct droce_proto_cm_id_info *info)
{
	struct rdma_addr *ra = &r->id.route.addr;
	uint16_t pkey = info->pkey != 0 ? info->pkey : DROCE_PKEY_DEFAULT;

	addr_from_proto(&info->src, &ra->src_storage);
	addr_from_proto(&info->dst, &ra->dst_storage);
	memcpy(ra->addr.ibaddr.sgid.raw, info->sgid, 16);
	memcpy(ra->addr.ibaddr.dgid.raw, info->dgid, 16);
	ra->addr.ibaddr.pkey = htobe16(pkey);
	if (info->port != DROCE_PROTO_NO_HANDLE && r->dev == NULL) {
		int err;
		struct rcm_device *d = rcm_device_get(info->port, &err);

		if (d == NULL)
			return err;
		r->dev = d;
		r->id.verbs = d->verbs;
		r->id.port_num = info->port_num != 0 ? info->port_num : RCM_PORT_NUM;
		if (r->id.pd == NULL)
			r->id.pd = d->pd;
	}
	if (info->route_resolved) {
		struct ibv_sa_path_rec *p = &r->path;

		memset(p, 0, sizeof(*p));
		memcpy(p->sgid.raw, info->sgid, 16);
		memcpy(p->dgid.raw, info->dgid, 16);
		p->slid = htobe16(RCM_LID_PERMISSIVE);
		p->dlid = htobe16(RCM_LID_PERMISSIVE);
		p->hop_limit = info->hop_limit;
		p->traffic_class = info->traffic_class;
		p->reversible = 1;
		p->numb_path = 1;
		p->pkey = htobe16(pkey);
		p->mtu_selector = 2;	/* IB SA: exactly */
		p->mtu = info->path_mtu;
		p->rate_selector = 2;
		p->packet_life_time_selector = 2;
		p->packet_life_time = RCM_IBOE_PACKET_LIFETIME;
		r->id.route.path_rec = p;
		r->id.route.num_paths = 1;
	}
	return 0;
}

int
rcm_id_query(struct rcm_id *r)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_CM_QUERY };
	struct droce_proto_resp resp;
	int ret;

	req.cm_id.id = r->handle;
	ret = rcm_call(to_rch(r->id.channel), &req, &resp);
	if (ret != 0)
		return ret;
	return rcm_id_fill(r, &resp.cm_query);
}

struct rcm_id *
rcm_id_alloc(struct rdma_event_channel *channel, void *context, enum rdma_port_space ps,
	     enum ibv_qp_type qp_type)
{
	struct rcm_id *r = calloc(1, sizeof(*r));
	int err;

	if (r == NULL)
		return rcm_err_null(ENOMEM);
	r->id.context = context;
	r->id.ps = ps;
	r->id.qp_type = qp_type;
	r->handle = DROCE_PROTO_NO_HANDLE;
	if (channel == NULL) {
		struct rcm_channel *c = rcm_channel_open(&err);

		if (c == NULL) {
			free(r);
			return rcm_err_null(err);
		}
		channel = &c->ch;
		r->sync = true;
	}
	r->id.channel = channel;
	pthread_mutex_init(&r->mut, NULL);
	pthread_cond_init(&r->cond, NULL);
	return r;
}

void
rcm_id_free(struct rcm_id *r)
{
	if (r->sync)
		rcm_channel_close(to_rch(r->id.channel));
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->mut);
	free(r->qp_init_attr);
	free(r);
}

int
rcm_id_create(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
	      enum rdma_port_space ps, enum ibv_qp_type qp_type)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_CM_CREATE_ID };
	struct droce_proto_resp resp;
	struct rcm_id *r;
	int ret;

	if (id == NULL)
		return rcm_err(EINVAL);
	r = rcm_id_alloc(channel, context, ps, qp_type);
	if (r == NULL)
		return -1;
	req.cm_create_id.uctx = (uintptr_t)r;
	req.cm_create_id.ps = ps;
	req.cm_create_id.qp_type = qp_type;
	ret = rcm_call(to_rch(r->id.channel), &req, &resp);
	if (ret != 0) {
		rcm_id_free(r);
		return rcm_err(ret);
	}
	r->handle = resp.cm_id.id;
	rcm_channel_link(to_rch(r->id.channel), r);
	*id = &r->id;
	return 0;
}

RCM_EXPORT int
rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
	       enum rdma_port_space ps)
{
	enum ibv_qp_type qp_type = ps == RDMA_PS_IPOIB || ps == RDMA_PS_UDP ?
				   IBV_QPT_UD : IBV_QPT_RC;

	return rcm_id_create(channel, id, context, ps, qp_type);
}

RCM_EXPORT int
rdma_destroy_id(struct rdma_cm_id *id)
{
	struct rcm_id *r;
	int ret;

	if (id == NULL)
		return rcm_err(EINVAL);
	r = to_rid(id);
	ret = rcm_destroy_call(to_rch(id->channel), r);
	if (ret != 0)
		return rcm_err(ret);
	if (id->event != NULL) {
		rdma_ack_cm_event(id->event);
		id->event = NULL;
	}
	/* As rdma-core: every event handed out for the id must be acked before it goes. */
	pthread_mutex_lock(&r->mut);
	while (r->events_completed < r->events_reported)
		pthread_cond_wait(&r->cond, &r->mut);
	pthread_mutex_unlock(&r->mut);
	/* droced forgot the id's joins with it; its QP leaves their groups here. */
	rcm_mc_release(r);
	rcm_id_free(r);
	return 0;
}

/*
 * A synchronous id's wait for the event its call started (rdma-core's ucma_complete).
 * The event stays in id->event until the next call or rdma_destroy_id acks it.
 */
int
rcm_complete(struct rcm_id *r)
{
	struct rdma_cm_event *e;

	if (!r->sync)
		return 0;
	if (r->id.event != NULL) {
		rdma_ack_cm_event(r->id.event);
		r->id.event = NULL;
	}
	if (rdma_get_cm_event(r->id.channel, &r->id.event) != 0)
		return -1;
	e = r->id.event;
	if (e->event == RDMA_CM_EVENT_DEVICE_REMOVAL)
		return rcm_err(ENODEV);
	if (e->status == 0)
		return 0;
	if (e->event == RDMA_CM_EVENT_REJECTED)
		return rcm_err(ECONNREFUSED);
	return rcm_err(e->status < 0 ? -e->status : e->status);
}

RCM_EXPORT int
rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_CM_BIND };
	struct droce_proto_resp resp;
	struct rcm_id *r;
	int ret;

	if (id == NULL || rcm_addrlen(addr) == 0)
		return rcm_err(EINVAL);
	r = to_rid(id);
	req.cm_bind.id = r->handle;
	rcm_addr_to_proto(addr, &req.cm_bind.addr);
	ret = rcm_call(to_rch(id->channel), &req, &resp);
	if (ret == 0)
		ret = rcm_id_fill(r, &resp.cm_query);
	return ret != 0 ? rcm_err(ret) : 0;
}

RCM_EXPORT int
rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr, struct sockaddr *dst_addr,
		  int timeout_ms)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_CM_RESOLVE_ADDR };
	struct droce_proto_resp resp;
	struct rcm_id *r;
	int dst_len, ret;

	dst_len = rcm_addrlen(dst_addr);
	if (id == NULL || dst_len == 0 || (src_addr != NULL && rcm_addrlen(src_addr) == 0))
		return rcm_err(EINVAL);
	r = to_rid(id);
	req.cm_resolve_addr.id = r->handle;
	req.cm_resolve_addr.timeout_ms = timeout_ms < 0 ? 0 : (uint32_t)timeout_ms;
	rcm_addr_to_proto(src_addr, &req.cm_resolve_addr.src);
	rcm_addr_to_proto(dst_addr, &req.cm_resolve_addr.dst);
	ret = rcm_call(to_rch(id->channel), &req, &resp);
	if (ret != 0)
		return rcm_err(ret);
	memcpy(&id->route.addr.dst_storage, dst_addr, dst_len);
	return rcm_complete(r);
}

RCM_EXPORT int
rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_CM_RESOLVE_ROUTE };
	struct droce_proto_resp resp;
	int ret;

	if (id == NULL)
		return rcm_err(EINVAL);
	req.cm_id.id = to_rid(id)->handle;
	req.cm_id.timeout_ms = timeout_ms < 0 ? 0 : (uint32_t)timeout_ms;
	ret = rcm_call(to_rch(id->channel), &req, &resp);
	if (ret != 0)
		return rcm_err(ret);
	return rcm_complete(to_rid(id));
}

RCM_EXPORT int
rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_CM_LISTEN };
	struct droce_proto_resp resp;
	int ret;

	if (id == NULL)
		return rcm_err(EINVAL);
	req.cm_listen.id = to_rid(id)->handle;
	req.cm_listen.backlog = backlog;
	ret = rcm_call(to_rch(id->channel), &req, &resp);
	if (ret == 0)
		ret = rcm_id_query(to_rid(id));
	return ret != 0 ? rcm_err(ret) : 0;
}

/* rdma-core's ucma_valid_param: only the TCP port space checks against the device. */
static int
valid_param(struct rcm_id *r, const struct rdma_conn_param *p)
{
	if (r->id.ps != RDMA_PS_TCP)
		return 0;
	if (r->id.qp == NULL && p == NULL)
		return EINVAL;
	if (p == NULL)
		return 0;
	if (r->dev == NULL)
		return EINVAL;
	if (p->responder_resources != RDMA_MAX_RESP_RES &&
	    p->responder_resources > r->dev->max_resp_res)
		return EINVAL;
	if (p->initiator_depth != RDMA_MAX_INIT_DEPTH &&
	    p->initiator_depth > r->dev->max_init_depth)
		return EINVAL;
	return 0;
}

/* struct rdma_conn_param -> the protocol's, with rdma-core's defaults for a NULL one. */
static int
conn_to_proto(const struct rcm_id *r, const struct rdma_conn_param *p, uint32_t qp_num,
	      uint8_t srq, struct droce_proto_cm_conn *c)
{
	memset(c, 0, sizeof(*c));
	c->qp_num = qp_num;
	c->qp_type = r->id.qp_type;
	c->srq = srq;
	c->responder_resources = r->responder_resources;
	c->initiator_depth = r->initiator_depth;
	if (p == NULL) {
		c->retry_count = RCM_DEFAULT_RETRY;
		c->rnr_retry_count = RCM_DEFAULT_RNR_RETRY;
		return 0;
	}
	c->flow_control = p->flow_control;
	c->retry_count = p->retry_count;
	c->rnr_retry_count = p->rnr_retry_count;
	if (p->private_data != NULL && p->private_data_len > 0) {
		if (p->private_data_len > DROCE_PROTO_CM_PDATA_MAX)
			return EINVAL;
		memcpy(c->private_data, p->private_data, p->private_data_len);
		c->private_data_len = p->private_data_len;
	}
	return 0;
}

RCM_EXPORT int
rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_CM_CONNECT };
	struct droce_proto_resp resp;
	uint32_t qp_num = conn_param != NULL ? conn_param->qp_num : 0;
	uint8_t srq = conn_param != NULL ? conn_param->srq : 0;
	struct rcm_id *r;
	int ret;

	if (id == NULL)
		return rcm_err(EINVAL);
	r = to_rid(id);
	ret = valid_param(r, conn_param);
	if (ret != 0)
		return rcm_err(ret);
	if (conn_param != NULL && conn_param->initiator_depth != RDMA_MAX_INIT_DEPTH)
		r->initiator_depth = conn_param->initiator_depth;
	else
		r->initiator_depth = r->dev != NULL ? r->dev->max_init_depth : 0;
	if (conn_param != NULL && conn_param->responder_resources != RDMA_MAX_RESP_RES)
		r->responder_resources = conn_param->responder_resources;
	else
		r->responder_resources = r->dev != NULL ? r->dev->max_resp_res : 0;
	if (id->qp != NULL) {
		qp_num = id->qp->qp_num;
		srq = id->qp->srq != NULL;
		/* droced moves it on the REP and sends the RTU (rcm_event_fill's ESTABLISHED). */
		if (id->qp_type != IBV_QPT_UD)
			req.cm_conn.flags = DROCE_PROTO_CM_CONN_F_MOVE_QP;
	}
	req.cm_conn.id = r->handle;
	ret = conn_to_proto(r, conn_param, qp_num, srq, &req.cm_conn.conn);
	if (ret == 0)
		ret = rcm_call(to_rch(id->channel), &req, &resp);
	if (ret != 0)
		return rcm_err(ret);
	return rcm_complete(r);
}

/* The Q_Key a UD accept announces in its SIDR_REP: the QP's own, when it has one. */
static uint32_t
ud_qkey(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;

	if (id->qp == NULL || ibv_query_qp(id->qp, &attr, IBV_QP_QKEY, &init) != 0)
		return 0;
	return attr.qkey;
}

RCM_EXPORT int
rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_CM_ACCEPT };
	struct droce_proto_resp resp;
	uint32_t qp_num;
	uint8_t srq, lim;
	struct rcm_id *r;
	int ret;

	if (id == NULL)
		return rcm_err(EINVAL);
	r = to_rid(id);
	ret = valid_param(r, conn_param);
	if (ret != 0)
		return rcm_err(ret);
	qp_num = id->qp != NULL ? id->qp->qp_num : conn_param != NULL ? conn_param->qp_num : 0;
	srq = id->qp != NULL ? id->qp->srq != NULL : conn_param != NULL ? conn_param->srq : 0;
	if (conn_param == NULL || conn_param->initiator_depth == RDMA_MAX_INIT_DEPTH) {
		lim = r->dev != NULL ? r->dev->max_init_depth : 0;
		if (r->initiator_depth > lim)
			r->initiator_depth = lim;
	} else {
		r->initiator_depth = conn_param->initiator_depth;
	}
	if (conn_param == NULL || conn_param->responder_resources == RDMA_MAX_RESP_RES) {
		lim = r->dev != NULL ? r->dev->max_resp_res : 0;
		if (r->responder_resources > lim)
			r->responder_resources = lim;
	} else {
		r->responder_resources = conn_param->responder_resources;
	}
	req.cm_conn.id = r->handle;
	ret = conn_to_proto(r, conn_param, qp_num, srq, &req.cm_conn.conn);
	if (ret != 0)
		return rcm_err(ret);
	if (id->qp_type == IBV_QPT_UD) {
		req.cm_conn.conn.qkey = ud_qkey(id);
		ret = rcm_call(to_rch(id->channel), &req, &resp);
		if (ret != 0) {
			rcm_qp_err(id);
			return rcm_err(ret);
		}
		return 0;
	}
	if (id->qp != NULL) {
		/*
		 * One round trip: droced moves the QP to RTR and RTS, then sends the REP
		 * (DROCE_PROTO_CM_CONN_F_MOVE_QP). If it could not move it, it sent nothing
		 * and the QP is moved from here, as rdma-core's ucma_modify_qp_rtr/rts do.
		 */
		req.cm_conn.flags = DROCE_PROTO_CM_CONN_F_MOVE_QP;
		ret = rcm_call(to_rch(id->channel), &req, &resp);
		if (ret == 0 && resp.cm_accept.moved) {
			id->qp->state = IBV_QPS_RTS;
			return rcm_complete(r);
		}
		req.cm_conn.flags = 0;
	}
	if (ret == 0) {
		if (rcm_qp_connect(id, r->responder_resources, r->initiator_depth) != 0)
			return -1;
		ret = rcm_call(to_rch(id->channel), &req, &resp);
	}
	if (ret != 0) {
		rcm_qp_err(id);
		return rcm_err(ret);
	}
	return rcm_complete(r);
}

static int
reject_with_reason(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len,
		   uint16_t reason)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_CM_REJECT };
	struct droce_proto_resp resp;
	int ret;

	if (id == NULL || private_data_len > DROCE_PROTO_CM_PDATA_MAX)
		return rcm_err(EINVAL);
	req.cm_reject.id = to_rid(id)->handle;
	req.cm_reject.reason = reason;
	if (private_data != NULL && private_data_len > 0) {
		memcpy(req.cm_reject.private_data, private_data, private_data_len);
		req.cm_reject.private_data_len = private_data_len;
	}
	ret = rcm_call(to_rch(id->channel), &req, &resp);
	return ret != 0 ? rcm_err(ret) : 0;
}

RCM_EXPORT int
rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	return reject_with_reason(id, private_data, private_data_len, 0);
}

RCM_EXPORT int
rdma_reject_ece(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	return reject_with_reason(id, private_data, private_data_len,
				  RCM_REJ_VENDOR_OPTION_NOT_SUPPORTED);
}

RCM_EXPORT int
rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_CM_NOTIFY };
	struct droce_proto_resp resp;
	int ret;

	if (id == NULL)
		return rcm_err(EINVAL);
	req.cm_notify.id = to_rid(id)->handle;
	req.cm_notify.event = event;
	ret = rcm_call(to_rch(id->channel), &req, &resp);
	return ret != 0 ? rcm_err(ret) : 0;
}

RCM_EXPORT int
rdma_disconnect(struct rdma_cm_id *id)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_CM_DISCONNECT };
	struct droce_proto_resp resp;
	int ret;

	/* rdma-core's ucma_shutdown: an id without a device has nothing to disconnect. */
	if (id == NULL || id->verbs == NULL)
		return rcm_err(EINVAL);
	if (rcm_qp_err(id) != 0)
		return -1;
	req.cm_id.id = to_rid(id)->handle;
	ret = rcm_call(to_rch(id->channel), &req, &resp);
	if (ret != 0)
		return rcm_err(ret);
	return rcm_complete(to_rid(id));
}

RCM_EXPORT int
rdma_establish(struct rdma_cm_id *id)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_CM_ESTABLISH };
	struct droce_proto_resp resp;
	int ret;

	/* With a QP, the library sent the RTU itself when the CONNECT_RESPONSE came. */
	if (id == NULL || id->qp != NULL)
		return rcm_err(EINVAL);
	req.cm_id.id = to_rid(id)->handle;
	ret = rcm_call(to_rch(id->channel), &req, &resp);
	return ret != 0 ? rcm_err(ret) : 0;
}

RCM_EXPORT int
rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct rdma_cm_event *event;
	int ret;

	if (listen == NULL || id == NULL || !to_rid(listen)->sync)
		return rcm_err(EINVAL);
	if (listen->event != NULL) {
		rdma_ack_cm_event(listen->event);
		listen->event = NULL;
	}
	if (rdma_get_cm_event(listen->channel, &event) != 0)
		return -1;
	if (event->event == RDMA_CM_EVENT_REJECTED) {
		ret = rcm_err(ECONNREFUSED);
		goto err;
	}
	if (event->status != 0) {
		ret = rcm_err(event->status < 0 ? -event->status : event->status);
		goto err;
	}
	if (event->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		ret = rcm_err(event->event == RDMA_CM_EVENT_DEVICE_REMOVAL ? ENODEV : EINVAL);
		goto err;
	}
	if (to_rid(listen)->qp_init_attr != NULL) {
		struct ibv_qp_init_attr attr = *to_rid(listen)->qp_init_attr;

		ret = rdma_create_qp(event->id, listen->pd, &attr);
		if (ret != 0)
			goto err;
	}
	*id = event->id;
	(*id)->event = event;
	return 0;
err:
	listen->event = event;
	return ret;
}

RCM_EXPORT int
rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval, size_t optlen)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_CM_SET_OPTION };
	struct droce_proto_resp resp;
	int ret;

	if (id == NULL || optval == NULL)
		return rcm_err(EINVAL);
	/*
	 * RDMA_OPTION_IB_PATH sets a path resolved elsewhere (ib_acm): droced resolves RoCE
	 * routes itself and takes none. Unknown levels and names: ENOSYS, as the kernel's.
	 */
	if (level != RDMA_OPTION_ID)
		return rcm_err(ENOSYS);
	switch (optname) {
	case RDMA_OPTION_ID_TOS:
	case RDMA_OPTION_ID_ACK_TIMEOUT:
		if (optlen != sizeof(uint8_t))
			return rcm_err(EINVAL);
		req.cm_set_option.value = *(uint8_t *)optval;
		break;
	case RDMA_OPTION_ID_REUSEADDR:
	case RDMA_OPTION_ID_AFONLY:
		if (optlen != sizeof(int))
			return rcm_err(EINVAL);
		req.cm_set_option.value = *(int *)optval != 0;
		break;
	default:
		return rcm_err(ENOSYS);
	}
	req.cm_set_option.id = to_rid(id)->handle;
	req.cm_set_option.name = optname;
	ret = rcm_call(to_rch(id->channel), &req, &resp);
	return ret != 0 ? rcm_err(ret) : 0;
}

RCM_EXPORT int
rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct rcm_channel *to, *from;
	struct rcm_id *r;
	bool sync;
	int err, ret;

	if (id == NULL)
		return rcm_err(EINVAL);
	r = to_rid(id);
	if (r->sync && channel == NULL)
		return rcm_err(EINVAL);
	sync = channel == NULL;
	if (sync) {
		to = rcm_channel_open(&err);
		if (to == NULL)
			return rcm_err(err);
	} else {
		to = to_rch(channel);
	}
	from = to_rch(id->channel);
	ret = rcm_migrate_call(to, r);
	if (ret != 0) {
		if (sync)
			rcm_channel_close(to);
		return rcm_err(ret);
	}
	if (r->sync) {
		if (id->event != NULL) {
			rdma_ack_cm_event(id->event);
			id->event = NULL;
		}
		rcm_channel_close(from);
	}
	/* As rdma-core: the events already handed out on the old channel are acked first. */
	pthread_mutex_lock(&r->mut);
	r->sync = sync;
	id->channel = &to->ch;
	while (r->events_completed < r->events_reported)
		pthread_cond_wait(&r->cond, &r->mut);
	pthread_mutex_unlock(&r->mut);
	return 0;
}

static __be16
addr_port(const struct sockaddr *sa)
{
	switch (sa->sa_family) {
	case AF_INET:
		return ((const struct sockaddr_in *)sa)->sin_port;
	case AF_INET6:
		return ((const struct sockaddr_in6 *)sa)->sin6_port;
	default:
		return 0;
	}
}

RCM_EXPORT __be16
rdma_get_src_port(struct rdma_cm_id *id)
{
	return addr_port(&id->route.addr.src_addr);
}

RCM_EXPORT __be16
rdma_get_dst_port(struct rdma_cm_id *id)
{
	return addr_port(&id->route.addr.dst_addr);
}
