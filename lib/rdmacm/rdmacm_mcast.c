/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Multicast: rdma_join_multicast, rdma_join_multicast_ex and rdma_leave_multicast, as
 * rdma-core's librdmacm does them over Linux's rdma_cm on a RoCEv2 port.
 *
 * A join is a round trip to droced (CM_JOIN_MCAST), which checks the id (a UD id with a
 * device, bound or its address resolved) and the group (an IPv4 or IPv6 multicast
 * address), records the join and queues its RDMA_CM_EVENT_MULTICAST_JOIN on the id's
 * channel: events stay in droced's order per channel and follow an id that migrates. The
 * event carries what the application needs to send to the group (param.ud: an AH to the
 * MGID, QPN 0xFFFFFF, the Q_Key); param.ud.private_data is the join's context, as
 * rdma-core puts it there. When the event is handed out the id's QP, if it has one, is
 * attached to the group (ibv_attach_mcast), as rdma-core's ucma_process_join does; a
 * send-only join attaches nothing; an attach that fails makes the event
 * RDMA_CM_EVENT_MULTICAST_ERROR with status -1 and errno set, rdma-core's way.
 *
 * rdma_leave_multicast finds the join by its address (byte for byte, as rdma-core compares
 * it; EADDRNOTAVAIL if none), waits until the join's events handed out are acked (as
 * rdma-core's waits), detaches the QP and tells droced (CM_LEAVE_MCAST, which drops the
 * join's events not handed out yet). Two joins of one group on one id are two joins, as
 * with Linux (two events, two leaves); the QP is attached once and detached by the last
 * of them to leave. rdma_destroy_qp detaches the QP first; rdma_destroy_id detaches it
 * from what is still joined (rdma-core leaves that to the QP's destruction).
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rdmacm_loc.h"

/* Another join of r, attached, to the same group: the QP stays in it. The caller holds mut. */
static bool
other_attached_locked(const struct rcm_id *r, const struct rcm_mc *mc)
{
	const struct rcm_mc *o;

	for (o = r->mcs; o != NULL; o = o->next)
		if (o != mc && o->attached && memcmp(&o->mgid, &mc->mgid, sizeof(mc->mgid)) == 0)
			return true;
	return false;
}

struct rcm_mc *
rcm_mc_reported(struct rcm_id *r, uint32_t uid)
{
	struct rcm_mc *mc;

	pthread_mutex_lock(&r->mut);
	for (mc = r->mcs; mc != NULL && mc->uid != uid; mc = mc->next)
		;
	if (mc != NULL) {
		mc->events_reported++;
		r->events_reported++;
	}
	pthread_mutex_unlock(&r->mut);
	return mc;
}

void
rcm_mc_event_complete(struct rcm_id *r, struct rcm_mc *mc)
{
	pthread_mutex_lock(&r->mut);
	mc->events_completed++;
	r->events_completed++;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->mut);
}

/* ucma_process_join: the group's GID noted, the QP attached (0 or an errno). */
static int
process_join(struct rcm_id *r, struct rcm_mc *mc, const union ibv_gid *mgid)
{
	struct ibv_qp *qp = r->id.qp;
	bool attached;
	int ret;

	pthread_mutex_lock(&r->mut);
	mc->mgid = *mgid;
	pthread_mutex_unlock(&r->mut);
	/* A send-only full member sends to the group and receives nothing from it. */
	if (qp == NULL || mc->join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
		return 0;
	pthread_mutex_lock(&r->mut);
	attached = other_attached_locked(r, mc);
	if (attached)
		mc->attached = true;
	pthread_mutex_unlock(&r->mut);
	if (attached)
		return 0;
	/* The LID: the event's DLID, 0 on RoCE. */
	ret = ibv_attach_mcast(qp, mgid, 0);
	if (ret != 0)
		return ret;
	pthread_mutex_lock(&r->mut);
	mc->attached = true;
	pthread_mutex_unlock(&r->mut);
	return 0;
}

void
rcm_mc_event(struct rcm_event *e, struct rcm_mc *mc)
{
	struct rdma_ud_param *ud = &e->event.param.ud;
	int ret;

	e->mc = mc;
	ud->private_data = mc->context;
	ud->private_data_len = 0;
	if (e->event.event != RDMA_CM_EVENT_MULTICAST_JOIN)
		return;
	ret = process_join(e->owner, mc, &ud->ah_attr.grh.dgid);
	if (ret != 0) {
		/* rdma-core: status = rdma_seterrno(ret), which is -1 with errno set. */
		rcm_debug("ibv_attach_mcast: %s", strerror(ret));
		e->event.event = RDMA_CM_EVENT_MULTICAST_ERROR;
		e->event.status = -1;
		errno = ret;
	}
}

/* The QP leaves mc's group unless another join of r keeps it there. */
static void
detach(struct rcm_id *r, struct rcm_mc *mc)
{
	bool last;

	pthread_mutex_lock(&r->mut);
	last = mc->attached && !other_attached_locked(r, mc);
	mc->attached = false;
	pthread_mutex_unlock(&r->mut);
	/* Its answer does not matter (rdma-core ignores it): the QP may be gone already. */
	if (last && r->id.qp != NULL)
		ibv_detach_mcast(r->id.qp, &mc->mgid, 0);
}

void
rcm_mc_qp_gone(struct rcm_id *r)
{
	struct rcm_mc *mc;

	for (mc = r->mcs; mc != NULL; mc = mc->next)
		detach(r, mc);
}

void
rcm_mc_release(struct rcm_id *r)
{
	struct rcm_mc *mc;

	while ((mc = r->mcs) != NULL) {
		detach(r, mc);
		r->mcs = mc->next;
		free(mc);
	}
}

static int
join(struct rdma_cm_id *id, const struct sockaddr *addr, int addrlen, uint16_t flags,
     void *context)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_CM_JOIN_MCAST };
	struct droce_proto_resp resp;
	struct rcm_id *r = to_rid(id);
	struct rcm_mc *mc, **p;
	int ret;

	mc = calloc(1, sizeof(*mc));
	if (mc == NULL)
		return rcm_err(ENOMEM);
	mc->context = context;
	mc->join_flags = flags;
	memcpy(&mc->addr, addr, (size_t)addrlen);
	/* On the list before droced answers: its event may be fetched at once, elsewhere. */
	pthread_mutex_lock(&r->mut);
	mc->uid = r->mc_uid++;
	mc->next = r->mcs;
	r->mcs = mc;
	pthread_mutex_unlock(&r->mut);

	req.cm_mcast.id = r->handle;
	req.cm_mcast.uid = mc->uid;
	req.cm_mcast.flags = flags;
	rcm_addr_to_proto(addr, &req.cm_mcast.addr);
	ret = rcm_call(to_rch(id->channel), &req, &resp);
	if (ret != 0) {
		/* No event was queued for it. */
		pthread_mutex_lock(&r->mut);
		for (p = &r->mcs; *p != mc; p = &(*p)->next)
			;
		*p = mc->next;
		pthread_mutex_unlock(&r->mut);
		free(mc);
		return rcm_err(ret);
	}
	return rcm_complete(r);
}

RCM_EXPORT int
rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	int addrlen = rcm_addrlen(addr);

	if (id == NULL || addrlen == 0)
		return rcm_err(EINVAL);
	return join(id, addr, addrlen, RDMA_MC_JOIN_FLAG_FULLMEMBER, context);
}

/* rdma-core's checks: an unknown comp_mask bit is ENOTSUP, the rest EINVAL. */
RCM_EXPORT int
rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *mc_join_attr,
		       void *context)
{
	int addrlen;

	if (id == NULL || mc_join_attr == NULL)
		return rcm_err(EINVAL);
	if (mc_join_attr->comp_mask >= RDMA_CM_JOIN_MC_ATTR_RESERVED)
		return rcm_err(ENOTSUP);
	if (!(mc_join_attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS))
		return rcm_err(EINVAL);
	if (!(mc_join_attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) ||
	    mc_join_attr->join_flags >= RDMA_MC_JOIN_FLAG_RESERVED)
		return rcm_err(EINVAL);
	addrlen = rcm_addrlen(mc_join_attr->addr);
	if (addrlen == 0)
		return rcm_err(EINVAL);
	return join(id, mc_join_attr->addr, addrlen, (uint16_t)mc_join_attr->join_flags,
		    context);
}

RCM_EXPORT int
rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_CM_LEAVE_MCAST };
	struct droce_proto_resp resp;
	struct rcm_mc *mc, **p;
	struct rcm_id *r;
	int addrlen = rcm_addrlen(addr), ret;

	if (id == NULL || addrlen == 0)
		return rcm_err(EINVAL);
	r = to_rid(id);
	pthread_mutex_lock(&r->mut);
	for (p = &r->mcs; *p != NULL; p = &(*p)->next)
		if (memcmp(&(*p)->addr, addr, (size_t)addrlen) == 0)
			break;
	mc = *p;
	if (mc == NULL) {
		pthread_mutex_unlock(&r->mut);
		return rcm_err(EADDRNOTAVAIL);
	}
	/* Off the list, no event of it is handed out any more: wait for those that were. */
	*p = mc->next;
	while (mc->events_completed < mc->events_reported)
		pthread_cond_wait(&r->cond, &r->mut);
	mc->next = NULL;
	pthread_mutex_unlock(&r->mut);
	detach(r, mc);
	req.cm_mcast.id = r->handle;
	req.cm_mcast.uid = mc->uid;
	ret = rcm_call(to_rch(id->channel), &req, &resp);
	free(mc);
	/* droced gone: nothing is joined any more (a clean-up call, as rdma_destroy_id). */
	return ret != 0 && ret != ENODEV ? rcm_err(ret) : 0;
}
