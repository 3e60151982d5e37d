/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Asynchronous events: droced writes them into the context's event ring in the region and
 * then a byte into the async notification pipe, whose read end is context->async_fd
 * (droce_shm_proto.h). ibv_get_async_event takes the next entry of the ring; when the ring
 * is empty it waits for the fd to become readable, unless the application made async_fd
 * non-blocking (then EAGAIN), drains it and looks again. An event whose
 * object is already destroyed is dropped. Handles name CQs and SRQs; QP events carry the
 * QPN.
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include "verbs_loc.h"

enum ev_kind { EV_CQ, EV_QP, EV_SRQ, EV_PORT, EV_DEVICE };

static enum ev_kind
ev_kind(uint32_t type)
{
	switch (type) {
	case IBV_EVENT_CQ_ERR:
		return EV_CQ;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		return EV_SRQ;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return EV_QP;
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_CLIENT_REREGISTER:
	case IBV_EVENT_GID_CHANGE:
		return EV_PORT;
	default:
		return EV_DEVICE;
	}
}

/* Fills ev for one ring entry; false when its object is gone (the event is dropped). */
static bool
ev_resolve(struct dv_context *c, const struct droce_proto_event *e, struct ibv_async_event *ev)
{
	bool found = false;

	ev->event_type = (enum ibv_event_type)e->type;
	pthread_mutex_lock(&c->obj_lock);
	switch (ev_kind(e->type)) {
	case EV_CQ: {
		struct dv_cq *cq;

		for (cq = c->cqs; cq != NULL && cq->ibcq.handle != e->handle; cq = cq->next)
			;
		if (cq != NULL) {
			ev->element.cq = &cq->ibcq;
			pthread_mutex_lock(&cq->ibcq.mutex);
			cq->async_reported++;
			pthread_mutex_unlock(&cq->ibcq.mutex);
			found = true;
		}
		break;
	}
	case EV_SRQ: {
		struct dv_srq *srq;

		for (srq = c->srqs; srq != NULL && srq->ibsrq.handle != e->handle;
		     srq = srq->next)
			;
		if (srq != NULL) {
			ev->element.srq = &srq->ibsrq;
			pthread_mutex_lock(&srq->ibsrq.mutex);
			srq->async_reported++;
			pthread_mutex_unlock(&srq->ibsrq.mutex);
			found = true;
		}
		break;
	}
	case EV_QP: {
		struct dv_qp *qp;

		for (qp = c->qps; qp != NULL && qp->qpx.qp_base.qp_num != e->handle;
		     qp = qp->next)
			;
		if (qp != NULL) {
			ev->element.qp = &qp->qpx.qp_base;
			pthread_mutex_lock(&qp->qpx.qp_base.mutex);
			qp->async_reported++;
			pthread_mutex_unlock(&qp->qpx.qp_base.mutex);
			found = true;
		}
		break;
	}
	case EV_PORT:
		ev->element.port_num = VERBS_PORT_NUM;
		found = true;
		break;
	case EV_DEVICE:
		ev->element.port_num = 0;
		found = true;
		break;
	}
	pthread_mutex_unlock(&c->obj_lock);
	return found;
}

/*
 * The ring's consumer side: prod is acquired (droced release-stores it after writing the
 * entry), cons is release-stored after the entry is read, so droced may reuse the slot.
 * Returns 1 with *e, or 0 when empty.
 */
static int
ring_take(struct dv_context *c, struct droce_proto_event *e)
{
	struct droce_proto_event_ring *r = c->evring;
	uint32_t cons, prod;

	pthread_mutex_lock(&c->ev_lock);
	cons = __atomic_load_n(&r->ring.cons, __ATOMIC_RELAXED);
	prod = __atomic_load_n(&r->ring.prod, __ATOMIC_ACQUIRE);
	if (prod == cons || prod - cons > DROCE_PROTO_EVENT_RING) {
		pthread_mutex_unlock(&c->ev_lock);
		return 0;
	}
	*e = r->ev[cons % DROCE_PROTO_EVENT_RING];
	__atomic_store_n(&r->ring.cons, cons + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&c->ev_lock);
	return 1;
}

/* ibv_get_async_event(3): 0, or -1 with errno. */
VERBS_EXPORT int
ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	struct droce_proto_event e;
	struct dv_context *c;
	struct pollfd pfd;
	uint8_t buf[64];
	int flags, n;

	if (context == NULL || event == NULL) {
		errno = EINVAL;
		return -1;
	}
	c = to_dctx(context);
	for (;;) {
		while (ring_take(c, &e))
			if (ev_resolve(c, &e, event))
				return 0;
		/* Empty: wait for droced's next write (EAGAIN when async_fd is non-blocking). */
		flags = fcntl(context->async_fd, F_GETFL);
		if (flags < 0)
			return -1;
		pfd.fd = context->async_fd;
		pfd.events = POLLIN;
		n = poll(&pfd, 1, (flags & O_NONBLOCK) ? 0 : -1);
		if (n < 0 && errno != EINTR)
			return -1;
		if (n == 0) {
			errno = EAGAIN;
			return -1;
		}
		if (n > 0 && read(context->async_fd, buf, sizeof(buf)) == 0) {
			/* droced is gone and every event is read: nothing will come. */
			errno = EIO;
			return -1;
		}
	}
}

VERBS_EXPORT void
ibv_ack_async_event(struct ibv_async_event *event)
{
	pthread_mutex_t *m;
	pthread_cond_t *cv;
	uint32_t *done;

	if (event == NULL)
		return;
	switch (ev_kind(event->event_type)) {
	case EV_CQ:
		m = &event->element.cq->mutex;
		cv = &event->element.cq->cond;
		done = &event->element.cq->async_events_completed;
		break;
	case EV_SRQ:
		m = &event->element.srq->mutex;
		cv = &event->element.srq->cond;
		done = &event->element.srq->events_completed;
		break;
	case EV_QP:
		m = &event->element.qp->mutex;
		cv = &event->element.qp->cond;
		done = &event->element.qp->events_completed;
		break;
	default:
		return;
	}
	pthread_mutex_lock(m);
	(*done)++;
	pthread_cond_broadcast(cv);
	pthread_mutex_unlock(m);
}
