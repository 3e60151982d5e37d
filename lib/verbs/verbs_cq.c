/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Completion queues and completion channels. A CQ's ring lives in the client region; the
 * poll and arm paths (context->ops) are droce_shm_poll_cq / droce_shm_req_notify_cq under
 * the CQ's spinlock: no system call. A completion channel is an epoll fd over the
 * notification fds of its CQs (the read end of a pipe droced makes for each CQ created with
 * a channel, droce_shm_proto.h), so the channel fd is pollable like a kernel one;
 * ibv_get_cq_event waits on it and drains the fd of the CQ that fired. Blocking follows
 * the channel fd's O_NONBLOCK, as with a kernel completion channel.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "verbs_loc.h"

/* ---- Fast path (the application thread; owns the CQ's consumer index under lock) ---- */

int
verbs_cq_poll(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc)
{
	struct dv_cq *cq = to_dcq(ibcq);
	int n;

	pthread_spin_lock(&cq->lock);
	n = droce_shm_poll_cq(&cq->view, num_entries, wc);
	pthread_spin_unlock(&cq->lock);
	return n;
}

int
verbs_cq_req_notify(struct ibv_cq *ibcq, int solicited_only)
{
	struct dv_cq *cq = to_dcq(ibcq);

	pthread_spin_lock(&cq->lock);
	droce_shm_req_notify_cq(&cq->view, solicited_only != 0);
	pthread_spin_unlock(&cq->lock);
	return 0;
}

/* ---- Completion channels ---- */

VERBS_EXPORT struct ibv_comp_channel *
ibv_create_comp_channel(struct ibv_context *context)
{
	struct ibv_comp_channel *ch;

	if (context == NULL)
		return verbs_err_null(EINVAL);
	ch = calloc(1, sizeof(*ch));
	if (ch == NULL)
		return verbs_err_null(ENOMEM);
	ch->fd = epoll_create1(EPOLL_CLOEXEC);
	if (ch->fd < 0) {
		int err = errno;

		free(ch);
		return verbs_err_null(err);
	}
	ch->context = context;
	return ch;
}

/* EBUSY while a CQ still uses the channel (ibv_destroy_comp_channel(3)). */
VERBS_EXPORT int
ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	if (channel == NULL)
		return verbs_err(EINVAL);
	if (__atomic_load_n(&channel->refcnt, __ATOMIC_ACQUIRE) != 0)
		return verbs_err(EBUSY);
	close(channel->fd);
	free(channel);
	return 0;
}

/* ibv_get_cq_event(3): 0, or -1 with errno (EAGAIN on a non-blocking channel). */
VERBS_EXPORT int
ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	struct epoll_event ev;
	struct dv_cq *dcq;
	uint8_t buf[64];
	int flags, n;

	if (channel == NULL || cq == NULL || cq_context == NULL) {
		errno = EINVAL;
		return -1;
	}
	flags = fcntl(channel->fd, F_GETFL);
	if (flags < 0)
		return -1;
	n = epoll_wait(channel->fd, &ev, 1, (flags & O_NONBLOCK) ? 0 : -1);
	if (n < 0)
		return -1;
	if (n == 0) {
		errno = EAGAIN;
		return -1;
	}
	dcq = ev.data.ptr;
	/* Non-blocking read end: several notifications pending make one event. */
	while (read(dcq->efd, buf, sizeof(buf)) == (ssize_t)sizeof(buf))
		;
	pthread_mutex_lock(&dcq->ibcq.mutex);
	dcq->comp_reported++;
	pthread_mutex_unlock(&dcq->ibcq.mutex);
	*cq = &dcq->ibcq;
	*cq_context = dcq->ibcq.cq_context;
	return 0;
}

VERBS_EXPORT void
ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	if (cq == NULL)
		return;
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_broadcast(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}

/* ---- Create / destroy ---- */

static void
cq_list_del(struct dv_context *c, struct dv_cq *cq)
{
	struct dv_cq **pp;

	pthread_mutex_lock(&c->obj_lock);
	for (pp = &c->cqs; *pp != NULL; pp = &(*pp)->next)
		if (*pp == cq) {
			*pp = cq->next;
			break;
		}
	pthread_mutex_unlock(&c->obj_lock);
}

static void
cq_free(struct dv_cq *cq)
{
	if (cq->efd >= 0) {
		epoll_ctl(cq->ibcq.channel->fd, EPOLL_CTL_DEL, cq->efd, NULL);
		close(cq->efd);
		__atomic_sub_fetch(&cq->ibcq.channel->refcnt, 1, __ATOMIC_ACQ_REL);
	}
	pthread_spin_destroy(&cq->lock);
	pthread_mutex_destroy(&cq->ibcq.mutex);
	pthread_cond_destroy(&cq->ibcq.cond);
	free(cq);
}

static unsigned int
log2_of(uint32_t pow2)
{
	unsigned int k = 0;

	while ((1u << k) < pow2)
		k++;
	return k;
}

VERBS_EXPORT struct ibv_cq *
ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
	      struct ibv_comp_channel *channel, int comp_vector)
{
	unsigned int nfds = 0;
	struct droce_proto_req req = { .op = DROCE_OP_CREATE_CQ };
	struct droce_proto_resp resp;
	struct dv_context *c;
	struct dv_cq *cq;
	int ret;

	if (context == NULL)
		return verbs_err_null(EINVAL);
	c = to_dctx(context);
	if (cqe < 1 || (uint32_t)cqe > c->limits.max_cqe || comp_vector < 0 ||
	    comp_vector >= context->num_comp_vectors ||
	    (channel != NULL && channel->context != context))
		return verbs_err_null(EINVAL);
	cq = calloc(1, sizeof(*cq));
	if (cq == NULL)
		return verbs_err_null(ENOMEM);
	cq->efd = -1;
	req.create_cq.cqe = (uint32_t)cqe;
	req.create_cq.notify = channel != NULL;
	ret = verbs_ctl_call_fds(c, &req, &resp, &cq->efd, channel != NULL ? 1 : 0, &nfds);
	if (ret == 0 && channel != NULL && nfds != 1)
		ret = EPROTO;
	/* Only this process reads it, after epoll said it is readable: never block on it. */
	if (ret == 0 && channel != NULL && fcntl(cq->efd, F_SETFL, O_NONBLOCK) != 0)
		ret = errno;
	if (ret == 0 && (resp.cq.size < (uint32_t)cqe || (resp.cq.size & (resp.cq.size - 1)) ||
			 resp.cq.size > DROCE_SHM_MAX_CQE ||
			 !verbs_region_ok(c, resp.cq.ctl_off, sizeof(struct droce_shm_cq)) ||
			 !verbs_region_ok(c, resp.cq.ring_off,
					  (uint64_t)resp.cq.size * sizeof(struct droce_shm_cqe))))
		ret = EPROTO;
	if (ret == 0 && channel != NULL) {
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = cq };

		if (epoll_ctl(channel->fd, EPOLL_CTL_ADD, cq->efd, &ev) < 0)
			ret = errno;
	}
	if (ret != 0) {
		if (cq->efd >= 0)
			close(cq->efd);
		free(cq);
		return verbs_err_null(ret);
	}
	if (channel != NULL)
		__atomic_add_fetch(&channel->refcnt, 1, __ATOMIC_ACQ_REL);
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	cq->view.ctl = (struct droce_shm_cq *)(c->region + resp.cq.ctl_off);
	cq->view.ring = (struct droce_shm_cqe *)(c->region + resp.cq.ring_off);
	cq->view.size = resp.cq.size;
	cq->view.log2_size = log2_of(resp.cq.size);
	cq->ibcq.context = context;
	cq->ibcq.channel = channel;
	cq->ibcq.cq_context = cq_context;
	cq->ibcq.handle = resp.cq.handle;
	cq->ibcq.cqe = (int)resp.cq.size;
	pthread_mutex_init(&cq->ibcq.mutex, NULL);
	pthread_cond_init(&cq->ibcq.cond, NULL);
	pthread_mutex_lock(&c->obj_lock);
	cq->next = c->cqs;
	c->cqs = cq;
	pthread_mutex_unlock(&c->obj_lock);
	return &cq->ibcq;
}

/* The ring cannot grow in place: EOPNOTSUPP. */
VERBS_EXPORT int
ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	(void)cq; (void)cqe;
	return verbs_err(EOPNOTSUPP);
}

/*
 * EBUSY while a QP uses the CQ (droced). As rdma-core does, waits until every completion
 * and async event handed out for this CQ has been acknowledged before freeing it.
 */
VERBS_EXPORT int
ibv_destroy_cq(struct ibv_cq *ibcq)
{
	struct droce_proto_req req = { .op = DROCE_OP_DESTROY_CQ };
	struct droce_proto_resp resp;
	struct dv_context *c;
	struct dv_cq *cq;
	int ret;

	if (ibcq == NULL)
		return verbs_err(EINVAL);
	cq = to_dcq(ibcq);
	c = to_dctx(ibcq->context);
	req.obj.handle = ibcq->handle;
	ret = verbs_ctl_call(c, &req, NULL, 0, &resp);
	if (ret != 0)
		return verbs_err(ret);
	cq_list_del(c, cq);
	pthread_mutex_lock(&ibcq->mutex);
	while (ibcq->comp_events_completed != cq->comp_reported ||
	       ibcq->async_events_completed != cq->async_reported)
		pthread_cond_wait(&ibcq->cond, &ibcq->mutex);
	pthread_mutex_unlock(&ibcq->mutex);
	cq_free(cq);
	return 0;
}
