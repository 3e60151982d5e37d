/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Asynchronous events. droced writes each event into the context's event ring in the
 * region and then a byte into the async notification pipe (droce_shm_proto.h). That pipe
 * is not what the application sees: context->async_fd is an eventfd of libdroce's own,
 * readable exactly while libdroce's event queue holds an event, as a kernel uverbs event
 * file is readable exactly while its list is non-empty. So a readable async_fd always
 * means ibv_get_async_event returns at once (ibv_get_async_event(3)).
 *
 * Events move from droced's ring into the queue in ev_pull, called by the context's
 * watcher thread when the pipe has a byte (verbs_fatal.c) and by ibv_get_async_event
 * itself. An event is queued only while its object is alive (checked under obj_lock), and
 * destroying an object takes its events out of the queue (verbs_async_forget), so the
 * queue never makes async_fd readable for an event it would then drop. (An event droced
 * raised for a destroyed object and delivered after the destroy would reach a new object
 * that took its handle; droced's next-fit handle tables make such quick reuse unlikely.)
 * Handles name CQs and SRQs; QP events carry the QPN.
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
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

/*
 * Fills ev for one event and counts it as handed out to its object (destroy waits for
 * the acks); false when the object is not (or no longer) alive. Called with obj_lock.
 */
static bool
ev_resolve(struct verbs_dctx *c, const struct droce_shm_event *e, struct ibv_async_event *ev)
{
	pthread_mutex_t *m = NULL;
	uint32_t *reported = NULL;

	ev->event_type = (enum ibv_event_type)e->type;
	switch (ev_kind(e->type)) {
	case EV_CQ: {
		struct verbs_dcq *cq;

		for (cq = c->cqs; cq != NULL && cq->ibcq.handle != e->handle; cq = cq->next)
			;
		if (cq == NULL)
			return false;
		ev->element.cq = &cq->ibcq;
		m = &cq->ibcq.mutex;
		reported = &cq->async_reported;
		break;
	}
	case EV_SRQ: {
		struct verbs_dsrq *srq;

		for (srq = c->srqs; srq != NULL && srq->ibsrq.handle != e->handle;
		     srq = srq->next)
			;
		if (srq == NULL)
			return false;
		ev->element.srq = &srq->ibsrq;
		m = &srq->ibsrq.mutex;
		reported = &srq->async_reported;
		break;
	}
	case EV_QP: {
		struct verbs_dqp *qp;

		for (qp = c->qps; qp != NULL && qp->qpx.qp_base.qp_num != e->handle;
		     qp = qp->next)
			;
		if (qp == NULL)
			return false;
		ev->element.qp = &qp->qpx.qp_base;
		m = &qp->qpx.qp_base.mutex;
		reported = &qp->async_reported;
		break;
	}
	case EV_PORT:
		ev->element.port_num = VERBS_PORT_NUM;
		break;
	case EV_DEVICE:
		ev->element.port_num = 0;
		break;
	}
	if (reported != NULL) {
		pthread_mutex_lock(m);
		(*reported)++;
		pthread_mutex_unlock(m);
	}
	return true;
}

static bool
ev_alive(struct verbs_dctx *c, const struct droce_shm_event *e)
{
	switch (ev_kind(e->type)) {
	case EV_CQ: {
		struct verbs_dcq *cq;

		for (cq = c->cqs; cq != NULL && cq->ibcq.handle != e->handle; cq = cq->next)
			;
		return cq != NULL;
	}
	case EV_SRQ: {
		struct verbs_dsrq *srq;

		for (srq = c->srqs; srq != NULL && srq->ibsrq.handle != e->handle;
		     srq = srq->next)
			;
		return srq != NULL;
	}
	case EV_QP: {
		struct verbs_dqp *qp;

		for (qp = c->qps; qp != NULL && qp->qpx.qp_base.qp_num != e->handle;
		     qp = qp->next)
			;
		return qp != NULL;
	}
	default:
		return true;
	}
}

/*
 * async_fd follows the queue: set when it becomes non-empty, cleared when it empties.
 * Both under ev_lock, so the eventfd's counter is 1 exactly while the queue has entries
 * (reading it then cannot block, whatever O_NONBLOCK the application set). Once droced is
 * gone it stays set: ibv_get_async_event then answers at once, with EIO when the queue is
 * empty, as a kernel event file of a disassociated device polls readable (EPOLLERR).
 */
static void
evq_signal(struct verbs_dctx *c)
{
	uint64_t v = 1;
	bool want = c->evq_prod != c->evq_cons || verbs_fatal_done(c);

	if (want == c->evq_signalled)
		return;
	if (want) {
		if (write(c->vctx.context.async_fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
			c->evq_signalled = true;
	} else {
		/*
		 * Read only what is there: after a fork the child shares the eventfd and may
		 * have cleared it, and a read of an empty blocking eventfd would never return.
		 */
		struct pollfd pfd = { .fd = c->vctx.context.async_fd, .events = POLLIN };

		if (poll(&pfd, 1, 0) <= 0 ||
		    read(c->vctx.context.async_fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
			c->evq_signalled = false;
	}
}

/*
 * Appends e (with ev_lock held); false when the queue is full. The last slot is kept for
 * IBV_EVENT_DEVICE_FATAL: a program that reads its events late still learns of it.
 */
static bool
evq_push(struct verbs_dctx *c, const struct droce_shm_event *e)
{
	uint32_t room = e->type == IBV_EVENT_DEVICE_FATAL ? VERBS_EVQ_LEN : VERBS_EVQ_LEN - 1;

	if (c->evq_prod - c->evq_cons >= room)
		return false;
	c->evq[c->evq_prod % VERBS_EVQ_LEN] = *e;
	c->evq_prod++;
	if (e->type == IBV_EVENT_DEVICE_FATAL)
		c->fatal_queued = true;
	return true;
}

/*
 * Moves droced's ring into the queue, dropping events of objects already destroyed.
 * Called with obj_lock and ev_lock. The ring's consumer side: prod is acquired (droced
 * release-stores it after writing the entry), cons is release-stored after the entry is
 * copied, so droced may reuse the slot.
 */
static void
ev_pull_locked(struct verbs_dctx *c)
{
	struct droce_shm_event_ring *r = c->evring;
	uint32_t cons, prod;

	cons = __atomic_load_n(&r->ring.cons, __ATOMIC_RELAXED);
	prod = __atomic_load_n(&r->ring.prod, __ATOMIC_ACQUIRE);
	/* A producer index that runs ahead by more than the ring is droced lying: skip. */
	if (prod - cons > DROCE_SHM_EVENT_RING)
		cons = prod;
	for (; cons != prod; cons++) {
		struct droce_shm_event e = r->ev[cons % DROCE_SHM_EVENT_RING];

		if (ev_alive(c, &e) && !evq_push(c, &e))
			break;	/* full: the rest waits in droced's ring */
	}
	__atomic_store_n(&r->ring.cons, cons, __ATOMIC_RELEASE);
	evq_signal(c);
}

void
verbs_async_pull(struct verbs_dctx *c)
{
	pthread_mutex_lock(&c->obj_lock);
	pthread_mutex_lock(&c->ev_lock);
	ev_pull_locked(c);
	pthread_mutex_unlock(&c->ev_lock);
	pthread_mutex_unlock(&c->obj_lock);
}

/*
 * droced is gone (verbs_fatal.c): IBV_EVENT_DEVICE_FATAL is queued unless droced, stopped
 * by a signal, queued it itself (one killed outright could not), and from now on an empty
 * queue answers EIO. Both at once under ev_lock: a reader sees either neither or both.
 */
void
verbs_async_fatal(struct verbs_dctx *c)
{
	struct droce_shm_event e = { .type = IBV_EVENT_DEVICE_FATAL };

	pthread_mutex_lock(&c->ev_lock);
	if (!c->fatal_queued)
		evq_push(c, &e);
	__atomic_store_n(&c->fatal_done, 1, __ATOMIC_RELEASE);
	evq_signal(c);
	pthread_mutex_unlock(&c->ev_lock);
}

/*
 * Called with obj_lock held, after an object left its list: its queued events go, as
 * the kernel drops an object's unread events when it is destroyed.
 */
void
verbs_async_forget(struct verbs_dctx *c)
{
	uint32_t i, keep;

	pthread_mutex_lock(&c->ev_lock);
	keep = c->evq_cons;
	for (i = c->evq_cons; i != c->evq_prod; i++) {
		struct droce_shm_event e = c->evq[i % VERBS_EVQ_LEN];

		if (ev_alive(c, &e))
			c->evq[keep++ % VERBS_EVQ_LEN] = e;
	}
	c->evq_prod = keep;
	evq_signal(c);
	pthread_mutex_unlock(&c->ev_lock);
}

/*
 * Takes the next queued event into *event: 1; or 0 when the queue is empty; or -1 when
 * it is empty for good (droced is gone and its IBV_EVENT_DEVICE_FATAL was taken).
 */
static int
evq_take(struct verbs_dctx *c, struct ibv_async_event *event)
{
	int got = 0;

	pthread_mutex_lock(&c->obj_lock);
	pthread_mutex_lock(&c->ev_lock);
	ev_pull_locked(c);
	while (!got && c->evq_cons != c->evq_prod) {
		struct droce_shm_event e = c->evq[c->evq_cons % VERBS_EVQ_LEN];

		c->evq_cons++;
		got = ev_resolve(c, &e, event);
	}
	ev_pull_locked(c);	/* room again: what waited in droced's ring comes in */
	if (!got && verbs_fatal_done(c))
		got = -1;
	pthread_mutex_unlock(&c->ev_lock);
	pthread_mutex_unlock(&c->obj_lock);
	return got;
}

/*
 * ibv_get_async_event(3): 0, or -1 with errno: EAGAIN when async_fd is non-blocking and
 * nothing is queued; EIO once droced is gone and its IBV_EVENT_DEVICE_FATAL was read;
 * EINTR when a signal interrupts the wait.
 */
VERBS_EXPORT int
ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	struct verbs_dctx *c;
	struct pollfd pfd;
	int flags, n;

	if (context == NULL || event == NULL) {
		errno = EINVAL;
		return -1;
	}
	c = to_dctx(context);
	for (;;) {
		int got = evq_take(c, event);

		if (got > 0)
			return 0;
		if (got < 0) {
			errno = EIO;
			return -1;
		}
		flags = fcntl(context->async_fd, F_GETFL);
		if (flags < 0)
			return -1;
		if (flags & O_NONBLOCK) {
			errno = EAGAIN;
			return -1;
		}
		/*
		 * The watcher thread sets async_fd when something arrives or droced dies. A
		 * signal ends the wait with EINTR, as the kernel event file's read does.
		 */
		pfd.fd = context->async_fd;
		pfd.events = POLLIN;
		n = poll(&pfd, 1, -1);
		if (n < 0)
			return -1;
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
