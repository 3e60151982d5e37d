/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Event channels: the connection to droced's CM (CM_OPEN), one round trip at a time, and
 * the events. The channel's fd is the read end of droced's event pipe: one byte per queued
 * event, read before each CM_GET_EVENT, so a blocking rdma_get_cm_event sleeps in read()
 * and one the application made non-blocking gets EAGAIN, as with the kernel's rdma_cm
 * file. End of file on the pipe means droced is gone: every id of the channel that had a
 * device then gets one RDMA_CM_EVENT_DEVICE_REMOVAL, and after those, ENODEV.
 *
 * Events are processed as rdma-core's cma.c does with the kernel's: the route of a
 * resolved id is queried, a CONNECT_REQUEST gets a new id, a MULTICAST_JOIN attaches the
 * id's QP to the group (rdmacm_mcast.c). An id with a QP of the library's own hears
 * ESTABLISHED when the REP came: droced moved the QP to RTR and RTS and sent the RTU
 * (DROCE_PROTO_CM_CONN_F_MOVE_QP). Only if droced could not is the event a
 * CONNECT_RESPONSE, and the library does both (CM_ESTABLISH) before it reports ESTABLISHED.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "rdmacm_loc.h"

void
rcm_debug(const char *fmt, ...)
{
	const char *d = getenv(RCM_DEBUG_ENV);
	va_list ap;

	if (d == NULL || strcmp(d, "1") != 0)
		return;
	fputs("librdmacm: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* The transport's verdict on droced: these mean the other end of the socket is gone. */
static bool
sock_lost(int err)
{
	return err == ECONNRESET || err == EPIPE || err == ENOTCONN;
}

/*
 * One round trip with up to max_rfds descriptors back; the caller holds the channel's lock
 * (or owns the channel alone). 0 or a positive errno; ENODEV once droced is gone.
 */
static int
call_locked(struct rcm_channel *c, struct droce_proto_req *req, struct droce_proto_resp *resp,
	    int *rfds, unsigned int max_rfds, unsigned int *nrfds)
{
	unsigned int got = 0;
	ssize_t n;
	int ret;

	if (nrfds != NULL)
		*nrfds = 0;
	if (c->lost)
		return ENODEV;
	req->seq = ++c->seq;
	ret = droce_proto_send(c->sock, req, sizeof(*req), NULL, 0);
	if (ret < 0) {
		ret = -ret;
		goto out;
	}
	memset(resp, 0, sizeof(*resp));
	n = droce_proto_recv(c->sock, resp, sizeof(*resp), rfds, max_rfds, &got);
	if (n < 0) {
		ret = (int)-n;
		goto out;
	}
	if (n == 0) {
		ret = ECONNRESET;
		goto out;
	}
	if ((size_t)n < offsetof(struct droce_proto_resp, limit) || resp->op != req->op ||
	    resp->seq != req->seq || resp->status > 0)
		ret = EPROTO;
	else
		ret = -resp->status;
	if (ret != 0)
		while (got > 0)
			close(rfds[--got]);
	if (nrfds != NULL)
		*nrfds = got;
out:
	if (sock_lost(ret)) {
		c->lost = true;
		ret = ENODEV;
	}
	if (ret != 0)
		rcm_debug("%s: %s", droce_proto_op_name(req->op), strerror(ret));
	return ret;
}

int
rcm_call(struct rcm_channel *c, struct droce_proto_req *req, struct droce_proto_resp *resp)
{
	int ret;

	pthread_mutex_lock(&c->lock);
	ret = call_locked(c, req, resp, NULL, 0, NULL);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

/*
 * A new channel: ENODEV when droced does not answer (not running, or without a CM),
 * as rdma-core's librdmacm fails when the system has no RDMA device.
 */
struct rcm_channel *
rcm_channel_open(int *err)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_CM_OPEN };
	struct droce_proto_resp resp;
	struct rcm_channel *c;
	unsigned int nfds = 0;
	int fd = -1, flags, ret;

	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		*err = ENOMEM;
		return NULL;
	}
	c->sock = droce_proto_connect(droce_proto_socket_path());
	ret = c->sock < 0 ? -c->sock : 0;
	if (c->sock < 0) {
		rcm_debug("droced at %s: %s", droce_proto_socket_path(), strerror(ret));
		free(c);
		*err = ENODEV;
		return NULL;
	}
	pthread_mutex_init(&c->lock, NULL);
	req.cm_open.version = DROCE_PROTO_CM_VERSION;
	ret = call_locked(c, &req, &resp, &fd, 1, &nfds);
	if (ret == 0 && (nfds != 1 || resp.cm_open.version != DROCE_PROTO_CM_VERSION))
		ret = EPROTO;
	if (ret != 0) {
		rcm_debug("CM_OPEN: %s", strerror(ret));
		if (nfds == 1)
			close(fd);
		close(c->sock);
		pthread_mutex_destroy(&c->lock);
		free(c);
		*err = ret == ENOMEM ? ENOMEM : ENODEV;
		return NULL;
	}
	/*
	 * O_NONBLOCK belongs to the pipe's file description, which droced created: start
	 * blocking, as the kernel's rdma_cm file does; the application may change it.
	 */
	flags = fcntl(fd, F_GETFL);
	if (flags >= 0 && (flags & O_NONBLOCK))
		fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
	c->ch.fd = fd;
	c->token = resp.cm_open.token;
	return c;
}

/*
 * A thread still blocked in rdma_get_cm_event on a channel being destroyed (rping's CM
 * thread, when its main thread cleans up) must not wake with an error: with the kernel's
 * rdma_cm file its read keeps the file open and sleeps until the process exits. So such a
 * channel is left open and allocated (droced keeps its pipe, which never gets another
 * byte: its ids are gone) and the waiter never returns; see rdma_get_cm_event.
 */
void
rcm_channel_close(struct rcm_channel *c)
{
	pthread_mutex_lock(&c->lock);
	if (__atomic_load_n(&c->waiters, __ATOMIC_ACQUIRE) > 0) {
		__atomic_store_n(&c->closed, true, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&c->lock);
		return;
	}
	pthread_mutex_unlock(&c->lock);
	close(c->ch.fd);
	close(c->sock);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/*
 * A channel's ids: a list (DEVICE_REMOVAL walks it) and a table by handle (every event
 * looks its id up: thousands of ids on one channel must not make that a walk). The caller
 * holds c's lock.
 */
static void
ids_add_locked(struct rcm_channel *c, struct rcm_id *r)
{
	struct rcm_id **b = &c->by_handle[r->handle % RCM_ID_BUCKETS];

	r->next = c->ids;
	if (c->ids != NULL)
		c->ids->pprev = &r->next;
	r->pprev = &c->ids;
	c->ids = r;
	r->hnext = *b;
	*b = r;
}

static void
ids_del_locked(struct rcm_channel *c, struct rcm_id *r)
{
	struct rcm_id **p;

	if (r->pprev == NULL)
		return;		/* not on a list */
	*r->pprev = r->next;
	if (r->next != NULL)
		r->next->pprev = r->pprev;
	r->next = NULL;
	r->pprev = NULL;
	for (p = &c->by_handle[r->handle % RCM_ID_BUCKETS]; *p != NULL; p = &(*p)->hnext)
		if (*p == r) {
			*p = r->hnext;
			break;
		}
	r->hnext = NULL;
}

void
rcm_channel_link(struct rcm_channel *c, struct rcm_id *r)
{
	pthread_mutex_lock(&c->lock);
	ids_add_locked(c, r);
	pthread_mutex_unlock(&c->lock);
}

void
rcm_channel_unlink(struct rcm_channel *c, struct rcm_id *r)
{
	pthread_mutex_lock(&c->lock);
	ids_del_locked(c, r);
	pthread_mutex_unlock(&c->lock);
}

static struct rcm_id *
lookup_locked(struct rcm_channel *c, uint32_t handle)
{
	struct rcm_id *r;

	for (r = c->by_handle[handle % RCM_ID_BUCKETS]; r != NULL; r = r->hnext)
		if (r->handle == handle)
			return r;
	return NULL;
}

static void
event_reported(struct rcm_id *r)
{
	pthread_mutex_lock(&r->mut);
	r->events_reported++;
	pthread_mutex_unlock(&r->mut);
}

void
rcm_event_complete(struct rcm_id *r)
{
	pthread_mutex_lock(&r->mut);
	r->events_completed++;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->mut);
}

RCM_EXPORT struct rdma_event_channel *
rdma_create_event_channel(void)
{
	struct rcm_channel *c;
	int err;

	c = rcm_channel_open(&err);
	if (c == NULL)
		return rcm_err_null(err);
	return &c->ch;
}

RCM_EXPORT void
rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	if (channel != NULL)
		rcm_channel_close(to_rch(channel));
}

/* ---- Events ---- */

static void
copy_conn(struct rcm_event *e, const struct droce_proto_cm_conn *src)
{
	struct rdma_conn_param *d = &e->event.param.conn;
	uint8_t len = src->private_data_len;

	if (len > DROCE_PROTO_CM_PDATA_MAX)
		len = DROCE_PROTO_CM_PDATA_MAX;
	d->private_data_len = len;
	if (len > 0) {
		memcpy(e->private_data, src->private_data, len);
		d->private_data = e->private_data;
	}
	d->responder_resources = src->responder_resources;
	d->initiator_depth = src->initiator_depth;
	d->flow_control = src->flow_control;
	d->retry_count = src->retry_count;
	d->rnr_retry_count = src->rnr_retry_count;
	d->srq = src->srq;
	d->qp_num = src->qp_num;
}

static void
copy_ud(struct rcm_event *e, const struct droce_proto_cm_event *src)
{
	struct rdma_ud_param *d = &e->event.param.ud;
	uint8_t len = src->conn.private_data_len;

	if (len > DROCE_PROTO_CM_PDATA_MAX)
		len = DROCE_PROTO_CM_PDATA_MAX;
	d->private_data_len = len;
	if (len > 0) {
		memcpy(e->private_data, src->conn.private_data, len);
		d->private_data = e->private_data;
	}
	rcm_ah_from_proto(&src->ud.ah, &d->ah_attr);
	d->qp_num = src->ud.dest_qp_num;
	d->qkey = src->ud.qkey;
}

static void
copy_param(struct rcm_event *e, const struct rcm_id *r, const struct droce_proto_cm_event *src)
{
	if (r->id.qp_type == IBV_QPT_UD)
		copy_ud(e, src);
	else
		copy_conn(e, &src->conn);
}

/*
 * A CONNECT_RESPONSE on an id with a QP: RTR, RTS, then the RTU. On failure the QP goes
 * to ERR and the REP is rejected, so the passive side does not wait for an RTU.
 */
static int
conn_resp(struct rcm_id *r)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_CM_ESTABLISH };
	struct droce_proto_resp resp;
	int ret;

	if (rcm_qp_connect(&r->id, RDMA_MAX_RESP_RES, RDMA_MAX_INIT_DEPTH) != 0) {
		ret = errno;
		goto err;
	}
	req.cm_id.id = r->handle;
	ret = rcm_call(to_rch(r->id.channel), &req, &resp);
	if (ret == 0)
		return 0;
err:
	rcm_qp_err(&r->id);
	if (ret != ENODEV) {
		struct droce_proto_req rej = { .op = DROCE_PROTO_OP_CM_REJECT };

		rej.cm_reject.id = r->handle;
		rcm_call(to_rch(r->id.channel), &rej, &resp);
	}
	return ret;
}

/*
 * The id's addresses, device and route: from the event when droced put them there
 * (DROCE_PROTO_CM_EVENT_F_INFO), else by CM_QUERY.
 */
static int
id_info(struct rcm_id *r, const struct droce_proto_cm_event *ev)
{
	if (ev->flags & DROCE_PROTO_CM_EVENT_F_INFO)
		return rcm_id_fill(r, &ev->info);
	return rcm_id_query(r);
}

/*
 * The new id of a CONNECT_REQUEST, on the listener's channel (already linked there).
 * A synchronous listener's new id moves to a private channel of its own, as rdma-core's.
 */
static int
conn_req(struct rcm_event *e, struct rcm_id *nid, const struct droce_proto_cm_event *ev)
{
	nid->initiator_depth = e->event.param.conn.initiator_depth;
	nid->responder_resources = e->event.param.conn.responder_resources;
	if (e->owner->sync && rdma_migrate_id(&nid->id, NULL) != 0)
		return errno;
	return id_info(nid, ev);
}

/* The next event droced queued on c: 0 with *e filled, EAGAIN when its byte was stale. */
static int
fetch(struct rcm_channel *c, struct rcm_event *e)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_CM_GET_EVENT };
	struct droce_proto_resp resp;
	const struct droce_proto_cm_event *ev = &resp.cm_event;
	struct rcm_id *r, *nid = NULL;
	struct rcm_mc *mc = NULL;
	bool mcast;
	int ret;

	pthread_mutex_lock(&c->lock);
	ret = call_locked(c, &req, &resp, NULL, 0, NULL);
	if (ret != 0) {
		pthread_mutex_unlock(&c->lock);
		return ret;
	}
	/* The id's reported count goes up under the lock its destroy takes first. */
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		r = lookup_locked(c, ev->listen_id);
		if (r != NULL) {
			nid = rcm_id_alloc(&c->ch, r->id.context, r->id.ps, r->id.qp_type);
			if (nid != NULL) {
				nid->handle = ev->id;
				ids_add_locked(c, nid);
			}
		}
	} else {
		r = lookup_locked(c, ev->id);
	}
	mcast = ev->event == RDMA_CM_EVENT_MULTICAST_JOIN ||
		ev->event == RDMA_CM_EVENT_MULTICAST_ERROR;
	if (r != NULL && mcast) {
		/* Counted for the join too; dropped if it left meanwhile (leave waits for it). */
		mc = rcm_mc_reported(r, ev->mc);
		if (mc == NULL)
			r = NULL;
	} else if (r != NULL) {
		event_reported(r);
	}
	pthread_mutex_unlock(&c->lock);

	if (r == NULL) {
		rcm_debug("event %u for an unknown id %u: dropped", ev->event, ev->id);
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			/* Its listener is gone: so is the new id droced made for it. */
			struct droce_proto_req d = { .op = DROCE_PROTO_OP_CM_DESTROY_ID };

			d.cm_id.id = ev->id;
			rcm_call(c, &d, &resp);
		}
		return EAGAIN;
	}
	memset(e, 0, sizeof(*e));
	e->owner = r;
	e->event.id = &r->id;
	e->event.event = ev->event;
	e->event.status = ev->status;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		ret = id_info(r, ev);
		if (ret != 0) {
			e->event.event = RDMA_CM_EVENT_ADDR_ERROR;
			e->event.status = -ret;
		}
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		ret = id_info(r, ev);
		if (ret != 0) {
			e->event.event = RDMA_CM_EVENT_ROUTE_ERROR;
			e->event.status = -ret;
		}
		break;
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		copy_param(e, r, ev);
		if (nid == NULL) {
			/* Out of memory: droced's id is destroyed, the peer times out. */
			struct droce_proto_req d = { .op = DROCE_PROTO_OP_CM_DESTROY_ID };

			d.cm_id.id = ev->id;
			rcm_call(c, &d, &resp);
			rcm_event_complete(r);
			return EAGAIN;
		}
		ret = conn_req(e, nid, ev);
		if (ret != 0) {
			rdma_destroy_id(&nid->id);
			rcm_event_complete(r);
			return EAGAIN;
		}
		e->event.listen_id = &r->id;
		e->event.id = &nid->id;
		break;
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		copy_conn(e, &ev->conn);
		if (r->id.qp != NULL) {
			ret = conn_resp(r);
			if (ret == 0) {
				e->event.event = RDMA_CM_EVENT_ESTABLISHED;
			} else {
				e->event.event = RDMA_CM_EVENT_CONNECT_ERROR;
				e->event.status = -ret;
				r->connect_error = true;
			}
		}
		break;
	case RDMA_CM_EVENT_REJECTED:
		if (r->connect_error) {
			rcm_event_complete(r);
			return EAGAIN;
		}
		copy_conn(e, &ev->conn);
		rcm_qp_err(&r->id);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		if (r->connect_error) {
			rcm_event_complete(r);
			return EAGAIN;
		}
		copy_conn(e, &ev->conn);
		break;
	case RDMA_CM_EVENT_MULTICAST_JOIN:
	case RDMA_CM_EVENT_MULTICAST_ERROR:
		copy_ud(e, ev);
		rcm_mc_event(e, mc);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		copy_param(e, r, ev);
		/* Active side: droced moved the QP on the REP (DROCE_PROTO_CM_CONN_F_MOVE_QP). */
		if (r->id.qp != NULL && r->id.qp_type != IBV_QPT_UD)
			r->id.qp->state = IBV_QPS_RTS;
		break;
	default:
		copy_param(e, r, ev);
		break;
	}
	return 0;
}

/*
 * droced is gone: the next id of c with a device gets its DEVICE_REMOVAL (status 0, as
 * the kernel's); ENODEV when none is left.
 */
static int
removal(struct rcm_channel *c, struct rcm_event *e)
{
	struct rcm_id *r;

	pthread_mutex_lock(&c->lock);
	for (r = c->ids; r != NULL; r = r->next)
		if (r->dev != NULL && !r->removal_reported)
			break;
	if (r != NULL) {
		r->removal_reported = true;
		event_reported(r);
	}
	pthread_mutex_unlock(&c->lock);
	if (r == NULL)
		return ENODEV;
	memset(e, 0, sizeof(*e));
	e->owner = r;
	e->event.id = &r->id;
	e->event.event = RDMA_CM_EVENT_DEVICE_REMOVAL;
	return 0;
}

RCM_EXPORT int
rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct rcm_channel *c;
	struct rcm_event *e;
	uint8_t byte;
	ssize_t n;
	int ret;

	if (channel == NULL || event == NULL)
		return rcm_err(EINVAL);
	c = to_rch(channel);
	e = malloc(sizeof(*e));
	if (e == NULL)
		return rcm_err(ENOMEM);
	__atomic_add_fetch(&c->waiters, 1, __ATOMIC_ACQ_REL);
	for (;;) {
		if (__atomic_load_n(&c->closed, __ATOMIC_ACQUIRE))
			for (;;)	/* destroyed under us: sleep as the kernel's reader would */
				pause();
		if (__atomic_load_n(&c->eof, __ATOMIC_ACQUIRE)) {
			ret = removal(c, e);
			break;
		}
		n = read(c->ch.fd, &byte, 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = errno;	/* EAGAIN: a non-blocking channel without events */
			break;
		}
		if (n == 0) {
			__atomic_store_n(&c->eof, true, __ATOMIC_RELEASE);
			continue;
		}
		ret = fetch(c, e);
		if (ret == ENODEV) {
			/* The socket died before the pipe's EOF reached us: same verdict. */
			__atomic_store_n(&c->eof, true, __ATOMIC_RELEASE);
			continue;
		}
		if (ret != EAGAIN)
			break;
	}
	if (__atomic_load_n(&c->closed, __ATOMIC_ACQUIRE))
		for (;;)
			pause();
	__atomic_sub_fetch(&c->waiters, 1, __ATOMIC_ACQ_REL);
	if (ret != 0) {
		free(e);
		return rcm_err(ret);
	}
	*event = &e->event;
	return 0;
}

RCM_EXPORT int
rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct rcm_event *e;

	if (event == NULL)
		return rcm_err(EINVAL);
	e = rcm_container_of(event, struct rcm_event, event);
	if (e->mc != NULL)
		rcm_mc_event_complete(e->owner, e->mc);
	else
		rcm_event_complete(e->owner);
	free(e);
	return 0;
}

RCM_EXPORT const char *
rdma_event_str(enum rdma_cm_event_type event)
{
	switch (event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		return "RDMA_CM_EVENT_ADDR_RESOLVED";
	case RDMA_CM_EVENT_ADDR_ERROR:
		return "RDMA_CM_EVENT_ADDR_ERROR";
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		return "RDMA_CM_EVENT_ROUTE_RESOLVED";
	case RDMA_CM_EVENT_ROUTE_ERROR:
		return "RDMA_CM_EVENT_ROUTE_ERROR";
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		return "RDMA_CM_EVENT_CONNECT_REQUEST";
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		return "RDMA_CM_EVENT_CONNECT_RESPONSE";
	case RDMA_CM_EVENT_CONNECT_ERROR:
		return "RDMA_CM_EVENT_CONNECT_ERROR";
	case RDMA_CM_EVENT_UNREACHABLE:
		return "RDMA_CM_EVENT_UNREACHABLE";
	case RDMA_CM_EVENT_REJECTED:
		return "RDMA_CM_EVENT_REJECTED";
	case RDMA_CM_EVENT_ESTABLISHED:
		return "RDMA_CM_EVENT_ESTABLISHED";
	case RDMA_CM_EVENT_DISCONNECTED:
		return "RDMA_CM_EVENT_DISCONNECTED";
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		return "RDMA_CM_EVENT_DEVICE_REMOVAL";
	case RDMA_CM_EVENT_MULTICAST_JOIN:
		return "RDMA_CM_EVENT_MULTICAST_JOIN";
	case RDMA_CM_EVENT_MULTICAST_ERROR:
		return "RDMA_CM_EVENT_MULTICAST_ERROR";
	case RDMA_CM_EVENT_ADDR_CHANGE:
		return "RDMA_CM_EVENT_ADDR_CHANGE";
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		return "RDMA_CM_EVENT_TIMEWAIT_EXIT";
	default:
		return "UNKNOWN EVENT";
	}
}

/* droce copies droced's values untranslated (droce_shm_proto.h): they must be rdma_cm's. */
_Static_assert(DROCE_PROTO_CM_EVENT_ADDR_RESOLVED == RDMA_CM_EVENT_ADDR_RESOLVED, "event");
_Static_assert(DROCE_PROTO_CM_EVENT_ADDR_ERROR == RDMA_CM_EVENT_ADDR_ERROR, "event");
_Static_assert(DROCE_PROTO_CM_EVENT_ROUTE_RESOLVED == RDMA_CM_EVENT_ROUTE_RESOLVED, "event");
_Static_assert(DROCE_PROTO_CM_EVENT_ROUTE_ERROR == RDMA_CM_EVENT_ROUTE_ERROR, "event");
_Static_assert(DROCE_PROTO_CM_EVENT_CONNECT_REQUEST == RDMA_CM_EVENT_CONNECT_REQUEST, "event");
_Static_assert(DROCE_PROTO_CM_EVENT_CONNECT_RESPONSE == RDMA_CM_EVENT_CONNECT_RESPONSE,
	       "event");
_Static_assert(DROCE_PROTO_CM_EVENT_CONNECT_ERROR == RDMA_CM_EVENT_CONNECT_ERROR, "event");
_Static_assert(DROCE_PROTO_CM_EVENT_UNREACHABLE == RDMA_CM_EVENT_UNREACHABLE, "event");
_Static_assert(DROCE_PROTO_CM_EVENT_REJECTED == RDMA_CM_EVENT_REJECTED, "event");
_Static_assert(DROCE_PROTO_CM_EVENT_ESTABLISHED == RDMA_CM_EVENT_ESTABLISHED, "event");
_Static_assert(DROCE_PROTO_CM_EVENT_DISCONNECTED == RDMA_CM_EVENT_DISCONNECTED, "event");
_Static_assert(DROCE_PROTO_CM_EVENT_DEVICE_REMOVAL == RDMA_CM_EVENT_DEVICE_REMOVAL, "event");
_Static_assert(DROCE_PROTO_CM_EVENT_TIMEWAIT_EXIT == RDMA_CM_EVENT_TIMEWAIT_EXIT, "event");
_Static_assert(DROCE_PROTO_CM_EVENT_MULTICAST_JOIN == RDMA_CM_EVENT_MULTICAST_JOIN, "event");
_Static_assert(DROCE_PROTO_CM_EVENT_MULTICAST_ERROR == RDMA_CM_EVENT_MULTICAST_ERROR, "event");
_Static_assert(DROCE_PROTO_CM_MC_FULLMEMBER == RDMA_MC_JOIN_FLAG_FULLMEMBER, "join flag");
_Static_assert(DROCE_PROTO_CM_MC_SENDONLY_FULLMEMBER == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER,
	       "join flag");
_Static_assert(DROCE_PROTO_CM_UDP_QKEY == RDMA_UDP_QKEY, "UDP Q_Key");
_Static_assert(DROCE_PROTO_CM_PS_IPOIB == RDMA_PS_IPOIB, "port space");
_Static_assert(DROCE_PROTO_CM_PS_IB == RDMA_PS_IB, "port space");
_Static_assert(DROCE_PROTO_CM_PS_TCP == RDMA_PS_TCP, "port space");
_Static_assert(DROCE_PROTO_CM_PS_UDP == RDMA_PS_UDP, "port space");
_Static_assert(DROCE_PROTO_CM_OPT_TOS == RDMA_OPTION_ID_TOS, "option");
_Static_assert(DROCE_PROTO_CM_OPT_REUSEADDR == RDMA_OPTION_ID_REUSEADDR, "option");
_Static_assert(DROCE_PROTO_CM_OPT_AFONLY == RDMA_OPTION_ID_AFONLY, "option");
_Static_assert(DROCE_PROTO_CM_OPT_ACK_TIMEOUT == RDMA_OPTION_ID_ACK_TIMEOUT, "option");
_Static_assert(DROCE_PROTO_CM_PDATA_MAX <= UINT8_MAX, "private_data_len is a byte");

/*
 * CM_DESTROY_ID and the id's removal from c's list under one hold of c's lock, so no
 * event fetched meanwhile finds it, and no id droced creates later with the same handle
 * is mistaken for it. ENODEV (droced gone) still unlinks: there is nothing left to destroy.
 */
int
rcm_destroy_call(struct rcm_channel *c, struct rcm_id *r)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_CM_DESTROY_ID };
	struct droce_proto_resp resp;
	int ret;

	req.cm_id.id = r->handle;
	pthread_mutex_lock(&c->lock);
	ret = call_locked(c, &req, &resp, NULL, 0, NULL);
	if (ret == 0 || ret == ENODEV) {
		ids_del_locked(c, r);
		ret = 0;
	}
	pthread_mutex_unlock(&c->lock);
	return ret;
}

/*
 * CM_MIGRATE on the destination channel; on success the id leaves its old channel's list
 * and joins to's with its new handle, both locks held (taken in address order), so no
 * event on either channel sees it half moved.
 */
int
rcm_migrate_call(struct rcm_channel *to, struct rcm_id *r)
{
	struct rcm_channel *from = to_rch(r->id.channel);
	struct rcm_channel *first = from < to ? from : to, *second = from < to ? to : from;
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_CM_MIGRATE };
	struct droce_proto_resp resp;
	int ret;

	req.cm_migrate.from_channel = from->token;
	req.cm_migrate.id = r->handle;
	pthread_mutex_lock(&first->lock);
	if (second != first)
		pthread_mutex_lock(&second->lock);
	ret = call_locked(to, &req, &resp, NULL, 0, NULL);
	if (ret == 0) {
		ids_del_locked(from, r);
		r->handle = resp.cm_id.id;
		ids_add_locked(to, r);
	}
	if (second != first)
		pthread_mutex_unlock(&second->lock);
	pthread_mutex_unlock(&first->lock);
	return ret;
}
