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
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "verbs_loc.h"

/* Ready CQs looked at by one ibv_get_cq_event (it reports one of them). */
#define VERBS_CHANNEL_BATCH	16

/* ---- Fast path (the application thread; owns the CQ's consumer index under lock) ---- */

/*
 * A program that polls an empty CQ in a loop (ibv_rc_pingpong, perftest) keeps its CPU
 * while the engine that would fill the CQ may be waiting for one: on a machine with
 * fewer CPUs than busy threads, the scheduler lets a woken engine preempt a spinning
 * poller only after its wake-up granularity (about 1 ms). So after poll_yield empty polls
 * in a row the poller yields: nearly free when nothing else is runnable on its CPU, and
 * the engine's turn when it is. DROCE_POLL_YIELD sets the count (0: never yield).
 */
/* ibv_poll_cq, with each entry's timestamp in ts[] when ts is not NULL (flushes: 0). */
static int
cq_poll(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc, uint64_t *ts)
{
	struct verbs_dcq *cq = to_dcq(ibcq);
	uint32_t every;
	int n;

	pthread_spin_lock(&cq->lock);
	n = droce_shm_poll_cq_ts(&cq->view, num_entries, wc, ts);
	/* droced is gone: after its last completions come the flushes (verbs_fatal.c). */
	if (n >= 0 && n < num_entries && cq->flush_next != cq->flush_len) {
		uint32_t k = cq->flush_len - cq->flush_next;

		if (k > (uint32_t)(num_entries - n))
			k = (uint32_t)(num_entries - n);

		memcpy(&wc[n], &cq->flush[cq->flush_next], k * sizeof(*wc));
		if (ts != NULL)
			memset(&ts[n], 0, k * sizeof(*ts));
		cq->flush_next += k;
		n += (int)k;
	}
	pthread_spin_unlock(&cq->lock);
	if (n != 0) {
		cq->empty_polls = 0;
		return n;
	}
	every = to_dctx(ibcq->context)->poll_yield;
	if (every != 0 && ++cq->empty_polls >= every) {
		cq->empty_polls = 0;
		sched_yield();
	}
	return 0;
}

int
verbs_cq_poll(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc)
{
	return cq_poll(ibcq, num_entries, wc, NULL);
}

void
verbs_cq_clean(struct ibv_cq *ibcq, uint32_t qpn)
{
	struct verbs_dcq *cq = to_dcq(ibcq);

	pthread_spin_lock(&cq->lock);
	droce_shm_cq_clean(&cq->view, qpn);
	pthread_spin_unlock(&cq->lock);
}

int
verbs_cq_req_notify(struct ibv_cq *ibcq, int solicited_only)
{
	struct verbs_dcq *cq = to_dcq(ibcq);

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
	/*
	 * droced's async pipe with no event asked: epoll reports only its hang-up, when
	 * droced dies, so that a channel with no CQ wakes then too (data NULL marks it).
	 */
	{
		struct epoll_event ev = { .events = 0, .data.ptr = NULL };

		if (epoll_ctl(ch->fd, EPOLL_CTL_ADD, to_dctx(context)->ev_pipe, &ev) < 0) {
			int err = errno;

			close(ch->fd);
			free(ch);
			return verbs_err_null(err);
		}
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

/*
 * Takes what is pending on the CQ's notification pipe: true when that is a notification,
 * false when droced is gone (end of file), which is then reported once per CQ so that its
 * owner polls the flushed work requests.
 */
static bool
cq_event_take(struct verbs_dcq *dcq)
{
	struct verbs_dctx *c = to_dctx(dcq->ibcq.context);
	uint8_t buf[64];
	ssize_t r;

	/* Non-blocking read end: several notifications pending make one event. */
	do
		r = read(dcq->efd, buf, sizeof(buf));
	while (r == (ssize_t)sizeof(buf));
	if (r != 0)
		return true;
	verbs_fatal(c);
	pthread_spin_lock(&dcq->lock);
	r = !dcq->fatal_woken;
	dcq->fatal_woken = true;
	pthread_spin_unlock(&dcq->lock);
	return r != 0;
}

/*
 * ibv_get_cq_event(3): 0, or -1 with errno: EAGAIN on a non-blocking channel with
 * nothing pending; EIO once droced is gone and every CQ of the channel has reported it.
 */
VERBS_EXPORT int
ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	struct epoll_event ev[VERBS_CHANNEL_BATCH];
	struct verbs_dcq *dcq = NULL;
	int flags, i, n;

	if (channel == NULL || cq == NULL || cq_context == NULL) {
		errno = EINVAL;
		return -1;
	}
	flags = fcntl(channel->fd, F_GETFL);
	if (flags < 0)
		return -1;
	n = epoll_wait(channel->fd, ev, VERBS_CHANNEL_BATCH, (flags & O_NONBLOCK) ? 0 : -1);
	if (n < 0)
		return -1;
	if (n == 0) {
		errno = EAGAIN;
		return -1;
	}
	/* Level-triggered: CQs not taken now are returned by the next call. */
	for (i = 0; i < n && dcq == NULL; i++) {
		if (ev[i].data.ptr == NULL)
			verbs_fatal(to_dctx(channel->context));	/* droced hung up */
		else if (cq_event_take(ev[i].data.ptr))
			dcq = ev[i].data.ptr;
	}
	if (dcq == NULL) {
		errno = EIO;
		return -1;
	}
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
cq_list_del(struct verbs_dctx *c, struct verbs_dcq *cq)
{
	struct verbs_dcq **pp;

	pthread_mutex_lock(&c->obj_lock);
	for (pp = &c->cqs; *pp != NULL; pp = &(*pp)->next)
		if (*pp == cq) {
			*pp = cq->next;
			break;
		}
	verbs_async_forget(c);
	pthread_mutex_unlock(&c->obj_lock);
}

static void
cq_free(struct verbs_dcq *cq)
{
	if (cq->efd >= 0) {
		epoll_ctl(cq->ibcq.channel->fd, EPOLL_CTL_DEL, cq->efd, NULL);
		close(cq->efd);
		__atomic_sub_fetch(&cq->ibcq.channel->refcnt, 1, __ATOMIC_ACQ_REL);
	}
	free(cq->flush);
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

static struct verbs_dcq *
cq_create(struct ibv_context *context, int cqe, void *cq_context,
	  struct ibv_comp_channel *channel, int comp_vector, bool timestamps)
{
	unsigned int nfds = 0;
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_CREATE_CQ };
	struct droce_proto_resp resp;
	struct verbs_dctx *c;
	struct verbs_dcq *cq;
	int ret;

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
	req.create_cq.flags = timestamps ? DROCE_PROTO_CQ_TIMESTAMPS : 0;
	ret = verbs_request_fds(c, &req, &resp, &cq->efd, channel != NULL ? 1 : 0, &nfds);
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
	return cq;
}

VERBS_EXPORT struct ibv_cq *
ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
	      struct ibv_comp_channel *channel, int comp_vector)
{
	struct verbs_dcq *cq;

	if (context == NULL)
		return verbs_err_null(EINVAL);
	cq = cq_create(context, cqe, cq_context, channel, comp_vector, false);
	return cq != NULL ? &cq->ibcq : NULL;
}

/*
 * ---- Extended CQ (ibv_create_cq_ex(3)): the ibv_start_poll / next_poll / end_poll
 * iterator and the ibv_wc_read_* accessors, over the same ring as ibv_poll_cq. Each step
 * takes one entry into cq->cur; the accessors read it. The fields droce can supply are
 * those of struct ibv_wc and the completion timestamps (the engine's TSC, verbs_clock.c);
 * anything else (VLAN, flow tag, tag matching) is refused at creation with EOPNOTSUPP, so
 * no accessor is ever asked for a value it lacks.
 */

#define CQ_EX_WC_FLAGS	(IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | \
			 IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP | \
			 IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL | \
			 IBV_WC_EX_WITH_DLID_PATH_BITS)
#define CQ_EX_WC_TIMESTAMPS	(IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | \
				 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
/* Single-threaded use needs no promise from droce: the CQ locks either way. */
#define CQ_EX_CREATE_FLAGS	IBV_CREATE_CQ_ATTR_SINGLE_THREADED

static inline struct verbs_dcq *
to_dcq_ex(struct ibv_cq_ex *ex)
{
	return verbs_container_of(ex, struct verbs_dcq, ibcq_ex);
}

/* 0 with the next entry current, or ENOENT when the CQ is empty. */
static int
cq_ex_step(struct ibv_cq_ex *ex)
{
	struct verbs_dcq *cq = to_dcq_ex(ex);
	int n = cq_poll(&cq->ibcq, 1, &cq->cur, &cq->cur_ts);

	if (n <= 0)
		return n == 0 ? ENOENT : EINVAL;
	ex->wr_id = cq->cur.wr_id;
	ex->status = cq->cur.status;
	return 0;
}

static int
cq_ex_start_poll(struct ibv_cq_ex *ex, struct ibv_poll_cq_attr *attr)
{
	if (attr == NULL || attr->comp_mask != 0)
		return EINVAL;
	if (ex->read_completion_wallclock_ns != NULL)
		verbs_clock_anchor(&to_dcq_ex(ex)->anchor);
	return cq_ex_step(ex);
}

static int
cq_ex_next_poll(struct ibv_cq_ex *ex)
{
	return cq_ex_step(ex);
}

static void
cq_ex_end_poll(struct ibv_cq_ex *ex)
{
	(void)ex;
}

static enum ibv_wc_opcode
cq_ex_read_opcode(struct ibv_cq_ex *ex)
{
	return to_dcq_ex(ex)->cur.opcode;
}

static uint32_t
cq_ex_read_vendor_err(struct ibv_cq_ex *ex)
{
	return to_dcq_ex(ex)->cur.vendor_err;
}

static uint32_t
cq_ex_read_byte_len(struct ibv_cq_ex *ex)
{
	return to_dcq_ex(ex)->cur.byte_len;
}

static __be32
cq_ex_read_imm_data(struct ibv_cq_ex *ex)
{
	return to_dcq_ex(ex)->cur.imm_data;
}

static uint32_t
cq_ex_read_qp_num(struct ibv_cq_ex *ex)
{
	return to_dcq_ex(ex)->cur.qp_num;
}

static uint32_t
cq_ex_read_src_qp(struct ibv_cq_ex *ex)
{
	return to_dcq_ex(ex)->cur.src_qp;
}

static unsigned int
cq_ex_read_wc_flags(struct ibv_cq_ex *ex)
{
	return to_dcq_ex(ex)->cur.wc_flags;
}

static uint32_t
cq_ex_read_slid(struct ibv_cq_ex *ex)
{
	return to_dcq_ex(ex)->cur.slid;
}

static uint8_t
cq_ex_read_sl(struct ibv_cq_ex *ex)
{
	return to_dcq_ex(ex)->cur.sl;
}

static uint8_t
cq_ex_read_dlid_path_bits(struct ibv_cq_ex *ex)
{
	return to_dcq_ex(ex)->cur.dlid_path_bits;
}

static uint64_t
cq_ex_read_completion_ts(struct ibv_cq_ex *ex)
{
	return to_dcq_ex(ex)->cur_ts;
}

static uint64_t
cq_ex_read_completion_wallclock_ns(struct ibv_cq_ex *ex)
{
	struct verbs_dcq *cq = to_dcq_ex(ex);

	return verbs_clock_wallclock_ns(&cq->anchor, to_dctx(ex->context)->tsc_hz, cq->cur_ts);
}

/* context->create_cq_ex, reached through the inline ibv_create_cq_ex(). */
struct ibv_cq_ex *
verbs_cq_create_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *attr)
{
	struct ibv_cq_ex *ex;
	struct verbs_dcq *cq;

	if (context == NULL || attr == NULL)
		return verbs_err_null(EINVAL);
	if (attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS |
					  IBV_CQ_INIT_ATTR_MASK_PD))
		return verbs_err_null(EINVAL);
	/* A CQ in a parent domain (MASK_PD) needs parent domains: droce has none. */
	if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD)
		return verbs_err_null(EOPNOTSUPP);
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (attr->flags & ~(uint32_t)CQ_EX_CREATE_FLAGS))
		return verbs_err_null(EOPNOTSUPP);
	if (attr->wc_flags & ~(uint64_t)(CQ_EX_WC_FLAGS | CQ_EX_WC_TIMESTAMPS))
		return verbs_err_null(EOPNOTSUPP);
	/* timestamps: droced's engines' TSC, which this process must be able to read too */
	if ((attr->wc_flags & CQ_EX_WC_TIMESTAMPS) && to_dctx(context)->tsc_hz == 0)
		return verbs_err_null(EOPNOTSUPP);
	if (attr->cqe > INT32_MAX || attr->comp_vector > INT32_MAX)
		return verbs_err_null(EINVAL);
	cq = cq_create(context, (int)attr->cqe, attr->cq_context, attr->channel,
		       (int)attr->comp_vector, (attr->wc_flags & CQ_EX_WC_TIMESTAMPS) != 0);
	if (cq == NULL)
		return NULL;
	ex = &cq->ibcq_ex;
	ex->start_poll = cq_ex_start_poll;
	ex->next_poll = cq_ex_next_poll;
	ex->end_poll = cq_ex_end_poll;
	ex->read_opcode = cq_ex_read_opcode;
	ex->read_vendor_err = cq_ex_read_vendor_err;
	ex->read_wc_flags = cq_ex_read_wc_flags;
	ex->read_byte_len = cq_ex_read_byte_len;
	ex->read_imm_data = cq_ex_read_imm_data;
	ex->read_qp_num = cq_ex_read_qp_num;
	ex->read_src_qp = cq_ex_read_src_qp;
	ex->read_slid = cq_ex_read_slid;
	ex->read_sl = cq_ex_read_sl;
	ex->read_dlid_path_bits = cq_ex_read_dlid_path_bits;
	if (attr->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
		ex->read_completion_ts = cq_ex_read_completion_ts;
	if (attr->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
		ex->read_completion_wallclock_ns = cq_ex_read_completion_wallclock_ns;
	return ex;
}

/*
 * ibv_resize_cq(3): droced moves the waiting completions into a new ring of at least cqe
 * entries (RESIZE_CQ), oldest first, while this process holds the poll lock; then the
 * view follows the new ring from its first entry. Fewer entries than completions waiting:
 * EINVAL, and nothing changed. cq->cqe becomes the new size.
 */
VERBS_EXPORT int
ibv_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_RESIZE_CQ };
	struct droce_proto_resp resp;
	struct verbs_dctx *c;
	struct verbs_dcq *cq;
	int ret;

	if (ibcq == NULL || cqe < 1)
		return verbs_err(EINVAL);
	c = to_dctx(ibcq->context);
	if ((uint32_t)cqe > c->limits.max_cqe)
		return verbs_err(EINVAL);
	cq = to_dcq(ibcq);
	req.resize_cq.handle = ibcq->handle;
	req.resize_cq.cqe = (uint32_t)cqe;
	pthread_spin_lock(&cq->lock);
	ret = verbs_request(c, &req, NULL, 0, &resp);
	if (ret == 0 && (resp.cq.size < (uint32_t)cqe || (resp.cq.size & (resp.cq.size - 1)) ||
			 resp.cq.size > DROCE_SHM_MAX_CQE || resp.cq.ctl_off !=
			 (uint64_t)((uint8_t *)cq->view.ctl - c->region) ||
			 !verbs_region_ok(c, resp.cq.ring_off,
					  (uint64_t)resp.cq.size * sizeof(struct droce_shm_cqe))))
		ret = EPROTO;
	if (ret == 0) {
		cq->view.ring = (struct droce_shm_cqe *)(c->region + resp.cq.ring_off);
		cq->view.size = resp.cq.size;
		cq->view.log2_size = log2_of(resp.cq.size);
		cq->view.cons = 0;
		ibcq->cqe = (int)resp.cq.size;
	}
	pthread_spin_unlock(&cq->lock);
	return ret != 0 ? verbs_err(ret) : 0;
}

/*
 * EBUSY while a QP uses the CQ (droced). As rdma-core does, waits until every completion
 * and async event handed out for this CQ has been acknowledged before freeing it.
 */
VERBS_EXPORT int
ibv_destroy_cq(struct ibv_cq *ibcq)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_DESTROY_CQ };
	struct droce_proto_resp resp;
	struct verbs_dctx *c;
	struct verbs_dcq *cq;
	int ret;

	if (ibcq == NULL)
		return verbs_err(EINVAL);
	cq = to_dcq(ibcq);
	c = to_dctx(ibcq->context);
	req.obj.handle = ibcq->handle;
	ret = verbs_request(c, &req, NULL, 0, &resp);
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
