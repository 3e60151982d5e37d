/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * The context's watcher thread, and what happens when droced dies under an application.
 *
 * Each context has one thread that sleeps in poll() on three descriptors: droced's async
 * notification pipe (a byte: events wait in the region's ring; end of file: droced is
 * gone), the control socket (POLLHUP: droced is gone) and a stop eventfd of its own
 * (ibv_close_device). It costs nothing while nothing happens and makes both async events
 * and a dead daemon visible at once, whatever the application is doing.
 *
 * A dead droced is a failed device (as a NIC after a catastrophic error, IB 11.6.2):
 *   - IBV_EVENT_DEVICE_FATAL is queued, and async_fd stays readable (verbs_async.c);
 *   - every work request still outstanding completes with IBV_WC_WR_FLUSH_ERR: sends
 *     between the engine's consumer index and ours, receives likewise. These completions
 *     are libdroce's own (verbs_dcq.flush), handed out by ibv_poll_cq after what the engines
 *     had written to the ring, since nothing else will ever write there again;
 *   - completion channels wake: the CQ notification pipes reach end of file (and each
 *     channel watches droced's async pipe for its hang-up, so one without CQs wakes too),
 *     and ibv_get_cq_event reports each CQ once more so its owner polls the flushes;
 *   - posting fails with EIO, control verbs fail with EIO, destroy verbs succeed (there
 *     is nothing left to tear down but the library's own memory).
 * Whoever notices first runs verbs_fatal (the watcher, or an application thread that met
 * the end of a pipe); it runs once per context.
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "verbs_loc.h"

/* enum ibv_wr_opcode of a send WQE -> the completion opcode its flush reports. */
static enum ibv_wc_opcode
flush_opcode(uint8_t wr_opcode)
{
	switch (wr_opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	default:
		return IBV_WC_SEND;
	}
}

/* Appends n completions to the CQ's flush list (once, from verbs_fatal). */
static void
cq_flush_append(struct verbs_dcq *cq, const struct ibv_wc *wc, uint32_t n)
{
	struct ibv_wc *grown;

	if (n == 0)
		return;
	pthread_spin_lock(&cq->lock);
	grown = realloc(cq->flush, (size_t)(cq->flush_len + n) * sizeof(*wc));
	if (grown != NULL) {
		memcpy(grown + cq->flush_len, wc, (size_t)n * sizeof(*wc));
		cq->flush = grown;
		cq->flush_len += n;
	}
	pthread_spin_unlock(&cq->lock);
	if (grown == NULL)
		verbs_warn("droced is gone; no memory for %u flush completions", n);
}

/*
 * The flushes of one ring: entries [cons, prod) read from the slots the application
 * wrote (the engine copies WQEs and never writes a slot). Returns how many. More than
 * the ring holds: the oldest slots were posted over (a receive being filled, its slot
 * reused by a full ring) or the region lies after a crash; the newest size are flushed.
 */
static uint32_t
ring_flushes(const struct verbs_dqp *qp, bool send, uint32_t cons, uint32_t prod,
	     struct ibv_wc *wc)
{
	const struct droce_shm_client_qp *v = &qp->view;
	uint32_t size = send ? v->sq_size : v->rq_size, n = 0, i;

	if (prod - cons > size)
		cons = prod - size;
	for (i = cons; i != prod; i++, n++) {
		struct ibv_wc *w = &wc[n];

		memset(w, 0, sizeof(*w));
		w->status = IBV_WC_WR_FLUSH_ERR;
		w->qp_num = v->qp_num;
		if (send) {
			const struct droce_shm_swqe *s = (const struct droce_shm_swqe *)
				(v->sq + (size_t)(i & (size - 1)) * v->sq_stride);

			w->wr_id = s->wr_id;
			w->opcode = flush_opcode(s->opcode);
		} else {
			const struct droce_shm_rwqe *r = (const struct droce_shm_rwqe *)
				(v->rq + (size_t)(i & (size - 1)) * v->rq_stride);

			w->wr_id = r->wr_id;
			w->opcode = IBV_WC_RECV;
		}
	}
	return n;
}

/*
 * Every outstanding WR of every QP, flushed into its CQ. Called with obj_lock and with
 * the context already marked dead: a post that takes a ring lock after we did sees that
 * and fails, one that took it before is inside [cons, prod).
 */
static void
flush_all(struct verbs_dctx *c)
{
	struct verbs_dqp *qp;

	for (qp = c->qps; qp != NULL; qp = qp->next) {
		struct ibv_qp *ib = &qp->qpx.qp_base;
		uint32_t max = qp->view.sq_size > qp->view.rq_size ?
			       qp->view.sq_size : qp->view.rq_size;
		struct ibv_wc *wc = calloc(max != 0 ? max : 1, sizeof(*wc));
		uint32_t n;

		if (wc == NULL) {
			verbs_warn("droced is gone; no memory to flush QP %u", qp->view.qp_num);
			continue;
		}
		pthread_spin_lock(&qp->sq_lock);
		n = ring_flushes(qp, true,
				 __atomic_load_n(&qp->view.ctl->sq.cons, __ATOMIC_ACQUIRE),
				 qp->view.sq_prod, wc);
		pthread_spin_unlock(&qp->sq_lock);
		if (ib->send_cq != NULL)	/* an XRC target has none (and never a WQE) */
			cq_flush_append(to_dcq(ib->send_cq), wc, n);
		if (qp->view.rq != NULL) {
			/* From rq_done: the receive an engine was filling never completed. */
			pthread_spin_lock(&qp->rq_lock);
			n = ring_flushes(qp, false,
					 __atomic_load_n(&qp->view.ctl->rq_done, __ATOMIC_ACQUIRE),
					 qp->view.rq_prod, wc);
			pthread_spin_unlock(&qp->rq_lock);
			cq_flush_append(to_dcq(ib->recv_cq), wc, n);
		}
		free(wc);
	}
}

void
verbs_fatal(struct verbs_dctx *c)
{
	pthread_mutex_lock(&c->fatal_lock);
	if (verbs_dead(c)) {
		pthread_mutex_unlock(&c->fatal_lock);
		return;
	}
	verbs_debug("droced is gone: device fatal, outstanding work requests flushed");
	__atomic_store_n(&c->dead, 1, __ATOMIC_RELEASE);
	/* Whatever droced wrote before it died is still read, in order, first. */
	verbs_async_pull(c);
	pthread_mutex_lock(&c->obj_lock);
	flush_all(c);
	pthread_mutex_unlock(&c->obj_lock);
	/* Last, so that a program that reads the event finds the flushes. */
	verbs_async_fatal(c);
	pthread_mutex_unlock(&c->fatal_lock);
}

static void *
watch_main(void *arg)
{
	struct verbs_dctx *c = arg;
	struct pollfd p[3] = {
		{ .fd = c->ev_pipe, .events = POLLIN },
		/* No events asked: POLLHUP and POLLERR are always reported. */
		{ .fd = c->sock, .events = 0 },
		{ .fd = c->watch_stop, .events = POLLIN },
	};
	uint8_t buf[64];
	ssize_t r;

	for (;;) {
		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			/* EFAULT/EINVAL cannot happen; ENOMEM: nothing to watch with any more. */
			verbs_warn("the watcher of %s stops: poll: %s", c->dev->ibdev.name,
				   strerror(errno));
			return NULL;
		}
		if (p[2].revents != 0)
			return NULL;
		if (p[1].revents & (POLLHUP | POLLERR | POLLNVAL)) {
			verbs_fatal(c);
			return NULL;
		}
		if (p[0].revents == 0)
			continue;
		/* The pipe is non-blocking: drain every pending byte, then look at the ring. */
		do
			r = read(c->ev_pipe, buf, sizeof(buf));
		while (r == (ssize_t)sizeof(buf));
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
			verbs_fatal(c);
			return NULL;
		}
		verbs_async_pull(c);
	}
}

int
verbs_watch_start(struct verbs_dctx *c)
{
	sigset_t all, old;
	int err;

	pthread_mutex_init(&c->fatal_lock, NULL);
	c->watch_stop = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->watch_stop < 0) {
		err = errno;
		pthread_mutex_destroy(&c->fatal_lock);
		return err;
	}
	/* Application signals are for application threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&c->watcher, NULL, watch_main, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err != 0) {
		close(c->watch_stop);
		pthread_mutex_destroy(&c->fatal_lock);
		return err;
	}
	c->watcher_pid = getpid();
	return 0;
}

void
verbs_watch_stop(struct verbs_dctx *c)
{
	uint64_t one = 1;

	/* A forked child has the context's memory but not its thread. */
	if (c->watcher_pid == getpid()) {
		if (write(c->watch_stop, &one, sizeof(one)) != (ssize_t)sizeof(one))
			verbs_debug("stopping the watcher: %s", strerror(errno));
		pthread_join(c->watcher, NULL);
	}
	close(c->watch_stop);
	pthread_mutex_destroy(&c->fatal_lock);
}
