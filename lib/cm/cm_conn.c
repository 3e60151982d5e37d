/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * The IB CM connection state machine (IB spec vol. 1 ch. 12.6, 12.9): one switch per
 * input over the state, following what Linux's drivers/infiniband/core/cm.c does where
 * the spec leaves a choice. The state table is in doc/cm.md.
 */

#include <errno.h>
#include <string.h>

#include "droce_cm_conn.h"

/* The largest 5-bit CM time exponent. */
#define CM_TIME_MAX_EXP		31
/* 4.096 us, the CM's time unit. */
#define CM_TIME_UNIT_NS		4096ull

static const char *const state_names[] = {
#define STATE_NAME(name) [DROCE_CM_STATE_##name] = #name,
	DROCE_CM_STATE_LIST(STATE_NAME)
#undef STATE_NAME
};

static const char *const event_names[] = {
#define EVENT_NAME(name) [DROCE_CM_EVENT_##name] = #name,
	DROCE_CM_EVENT_LIST(EVENT_NAME)
#undef EVENT_NAME
};

const char *
droce_cm_state_name(enum droce_cm_state s)
{
	if ((unsigned int)s >= DROCE_CM_STATE_COUNT)
		return "?";
	return state_names[s];
}

const char *
droce_cm_event_name(enum droce_cm_event e)
{
	if ((unsigned int)e >= DROCE_CM_EVENT_COUNT)
		return "?";
	return event_names[e];
}

uint64_t
droce_cm_time_ns(uint8_t t)
{
	if (t > CM_TIME_MAX_EXP)
		t = CM_TIME_MAX_EXP;
	return CM_TIME_UNIT_NS << t;
}

uint8_t
droce_cm_ack_timeout(uint8_t ca_ack_delay, uint8_t packet_life_time)
{
	/* 12.7.34: twice the packet lifetime plus the ACK delay, each a power of two. */
	int t = packet_life_time + 1;

	if (t >= ca_ack_delay)
		t += ca_ack_delay >= t - 1;
	else
		t = ca_ack_delay + (t >= ca_ack_delay - 1);
	return (uint8_t)(t < CM_TIME_MAX_EXP ? t : CM_TIME_MAX_EXP);
}

void
droce_cm_conn_init(struct droce_cm_conn *c, uint32_t local_id, uint64_t first_tid)
{
	memset(c, 0, sizeof(*c));
	c->state = DROCE_CM_STATE_IDLE;
	c->local_id = local_id;
	c->next_tid = first_tid;
}

int
droce_cm_msg_ids(const struct droce_cm_msg *m, uint32_t *sender_id, uint32_t *receiver_id)
{
	switch (m->attr_id) {
	case DROCE_CM_ATTR_REQ:
		*sender_id = m->req.local_comm_id;
		*receiver_id = 0;
		return 0;
	case DROCE_CM_ATTR_MRA:
		*sender_id = m->mra.local_comm_id;
		*receiver_id = m->mra.remote_comm_id;
		return 0;
	case DROCE_CM_ATTR_REJ:
		*sender_id = m->rej.local_comm_id;
		*receiver_id = m->rej.remote_comm_id;
		return 0;
	case DROCE_CM_ATTR_REP:
		*sender_id = m->rep.local_comm_id;
		*receiver_id = m->rep.remote_comm_id;
		return 0;
	case DROCE_CM_ATTR_RTU:
		*sender_id = m->rtu.local_comm_id;
		*receiver_id = m->rtu.remote_comm_id;
		return 0;
	case DROCE_CM_ATTR_DREQ:
		*sender_id = m->dreq.local_comm_id;
		*receiver_id = m->dreq.remote_comm_id;
		return 0;
	case DROCE_CM_ATTR_DREP:
		*sender_id = m->drep.local_comm_id;
		*receiver_id = m->drep.remote_comm_id;
		return 0;
	case DROCE_CM_ATTR_SIDR_REQ:
		*sender_id = m->sidr_req.request_id;
		*receiver_id = 0;
		return 0;
	case DROCE_CM_ATTR_SIDR_REP:
		*sender_id = 0;
		*receiver_id = m->sidr_rep.request_id;
		return 0;
	default:
		return -EINVAL;
	}
}

static void
out_reset(struct droce_cm_out *out)
{
	memset(out, 0, sizeof(*out));
}

/* Builds m into the next outgoing slot; remembered in c->sent when `keep`. */
static void
emit(struct droce_cm_conn *c, struct droce_cm_msg *m, bool keep, struct droce_cm_out *out)
{
	uint8_t *mad = out->mads[out->nmads++];

	/* Only known attributes reach here, so the build cannot fail. */
	(void)droce_cm_mad_build(m, mad);
	if (keep)
		memcpy(c->sent, mad, DROCE_CM_MAD_LEN);
}

static void
resend(struct droce_cm_conn *c, struct droce_cm_out *out)
{
	memcpy(out->mads[out->nmads++], c->sent, DROCE_CM_MAD_LEN);
}

static void
new_msg(struct droce_cm_msg *m, uint16_t attr, uint64_t tid)
{
	memset(m, 0, sizeof(*m));
	m->attr_id = attr;
	m->tid = tid;
}

/* A request this end retransmits until answered: the first timer and the retry budget. */
static void
arm_retries(struct droce_cm_conn *c, uint64_t timeout_ns, uint64_t now_ns)
{
	c->timeout_ns = timeout_ns;
	c->retries_left = c->max_retries;
	c->deadline_ns = now_ns + timeout_ns;
}

static void
enter_timewait(struct droce_cm_conn *c, uint64_t now_ns)
{
	c->state = DROCE_CM_STATE_TIMEWAIT;
	c->deadline_ns = now_ns + c->timewait_ns;
}

static void
enter_idle(struct droce_cm_conn *c)
{
	c->state = DROCE_CM_STATE_IDLE;
	c->deadline_ns = 0;
}

static void
send_rej(struct droce_cm_conn *c, uint16_t reason, uint8_t rejected, struct droce_cm_out *out)
{
	struct droce_cm_msg m;

	new_msg(&m, DROCE_CM_ATTR_REJ, c->tid);
	m.rej.local_comm_id = c->local_id;
	m.rej.remote_comm_id = c->remote_id;
	m.rej.message_rejected = rejected;
	m.rej.reason = reason;
	emit(c, &m, false, out);
}

static void
send_drep(struct droce_cm_conn *c, uint64_t tid, struct droce_cm_out *out)
{
	struct droce_cm_msg m;

	new_msg(&m, DROCE_CM_ATTR_DREP, tid);
	m.drep.local_comm_id = c->local_id;
	m.drep.remote_comm_id = c->remote_id;
	emit(c, &m, false, out);
}

int
droce_cm_connect(struct droce_cm_conn *c, const struct droce_cm_req *req, uint64_t now_ns,
		 struct droce_cm_out *out)
{
	struct droce_cm_msg m;

	out_reset(out);
	if (c->state != DROCE_CM_STATE_IDLE)
		return -EINVAL;
	c->active = true;
	c->remote_id = 0;
	c->tid = c->next_tid++;
	c->max_retries = req->max_cm_retries;
	/* The REQ's Remote CM Response Timeout is how long the passive end may take. */
	c->peer_timeout_ns = droce_cm_time_ns(req->remote_cm_response_timeout);
	c->timewait_ns = droce_cm_time_ns(req->primary.local_ack_timeout);
	new_msg(&m, DROCE_CM_ATTR_REQ, c->tid);
	m.req = *req;
	m.req.local_comm_id = c->local_id;
	emit(c, &m, true, out);
	c->state = DROCE_CM_STATE_REQ_SENT;
	arm_retries(c, c->peer_timeout_ns, now_ns);
	out->deadline_ns = c->deadline_ns;
	return 0;
}

int
droce_cm_accept(struct droce_cm_conn *c, const struct droce_cm_rep *rep, uint64_t now_ns,
		struct droce_cm_out *out)
{
	struct droce_cm_msg m;

	out_reset(out);
	if (c->state != DROCE_CM_STATE_REQ_RCVD && c->state != DROCE_CM_STATE_MRA_REQ_SENT)
		return -EINVAL;
	new_msg(&m, DROCE_CM_ATTR_REP, c->tid);
	m.rep = *rep;
	m.rep.local_comm_id = c->local_id;
	m.rep.remote_comm_id = c->remote_id;
	emit(c, &m, true, out);
	c->state = DROCE_CM_STATE_REP_SENT;
	arm_retries(c, c->peer_timeout_ns, now_ns);
	out->deadline_ns = c->deadline_ns;
	return 0;
}

int
droce_cm_rtu(struct droce_cm_conn *c, uint64_t now_ns, struct droce_cm_out *out)
{
	struct droce_cm_msg m;

	(void)now_ns;
	out_reset(out);
	if (c->state != DROCE_CM_STATE_REP_RCVD && c->state != DROCE_CM_STATE_MRA_REP_SENT)
		return -EINVAL;
	new_msg(&m, DROCE_CM_ATTR_RTU, c->tid);
	m.rtu.local_comm_id = c->local_id;
	m.rtu.remote_comm_id = c->remote_id;
	/* Kept: a duplicate REP (our RTU was lost) gets these bytes again (12.9.8.2). */
	emit(c, &m, true, out);
	c->state = DROCE_CM_STATE_ESTABLISHED;
	c->deadline_ns = 0;
	return 0;
}

int
droce_cm_mra(struct droce_cm_conn *c, uint8_t service_timeout, uint64_t now_ns,
	     struct droce_cm_out *out)
{
	struct droce_cm_msg m;
	enum droce_cm_state next;
	uint8_t mraed;

	(void)now_ns;
	out_reset(out);
	if (c->state == DROCE_CM_STATE_REQ_RCVD) {
		next = DROCE_CM_STATE_MRA_REQ_SENT;
		mraed = DROCE_CM_MSG_REQ;
	} else if (c->state == DROCE_CM_STATE_REP_RCVD) {
		next = DROCE_CM_STATE_MRA_REP_SENT;
		mraed = DROCE_CM_MSG_REP;
	} else {
		return -EINVAL;
	}
	new_msg(&m, DROCE_CM_ATTR_MRA, c->tid);
	m.mra.local_comm_id = c->local_id;
	m.mra.remote_comm_id = c->remote_id;
	m.mra.message_mraed = mraed;
	m.mra.service_timeout = service_timeout;
	/* Kept: each duplicate of the REQ or REP gets the MRA again (12.6.6). */
	emit(c, &m, true, out);
	c->state = next;
	return 0;
}

int
droce_cm_reject(struct droce_cm_conn *c, uint16_t reason, uint64_t now_ns,
		struct droce_cm_out *out)
{
	uint8_t rejected;

	(void)now_ns;
	out_reset(out);
	switch (c->state) {
	case DROCE_CM_STATE_REQ_RCVD:
	case DROCE_CM_STATE_MRA_REQ_SENT:
		rejected = DROCE_CM_MSG_REQ;
		break;
	case DROCE_CM_STATE_REP_RCVD:
	case DROCE_CM_STATE_MRA_REP_SENT:
		rejected = DROCE_CM_MSG_REP;
		break;
	default:
		return -EINVAL;
	}
	send_rej(c, reason, rejected, out);
	enter_idle(c);
	return 0;
}

int
droce_cm_disconnect(struct droce_cm_conn *c, uint64_t now_ns, struct droce_cm_out *out)
{
	struct droce_cm_msg m;

	out_reset(out);
	if (c->state != DROCE_CM_STATE_ESTABLISHED)
		return -EINVAL;
	new_msg(&m, DROCE_CM_ATTR_DREQ, c->next_tid++);
	m.dreq.local_comm_id = c->local_id;
	m.dreq.remote_comm_id = c->remote_id;
	m.dreq.remote_qpn_eecn = c->remote_qpn;
	emit(c, &m, true, out);
	c->state = DROCE_CM_STATE_DREQ_SENT;
	arm_retries(c, c->peer_timeout_ns, now_ns);
	out->deadline_ns = c->deadline_ns;
	return 0;
}

int
droce_cm_sidr_req(struct droce_cm_conn *c, const struct droce_cm_sidr_req *req,
		  uint8_t timeout, uint8_t max_retries, uint64_t now_ns, struct droce_cm_out *out)
{
	struct droce_cm_msg m;

	out_reset(out);
	if (c->state != DROCE_CM_STATE_IDLE)
		return -EINVAL;
	c->active = true;
	c->remote_id = 0;
	c->tid = c->next_tid++;
	c->max_retries = max_retries;
	new_msg(&m, DROCE_CM_ATTR_SIDR_REQ, c->tid);
	m.sidr_req = *req;
	m.sidr_req.request_id = c->local_id;
	emit(c, &m, true, out);
	c->state = DROCE_CM_STATE_SIDR_REQ_SENT;
	arm_retries(c, droce_cm_time_ns(timeout), now_ns);
	out->deadline_ns = c->deadline_ns;
	return 0;
}

int
droce_cm_sidr_rep(struct droce_cm_conn *c, const struct droce_cm_sidr_rep *rep,
		  uint64_t now_ns, struct droce_cm_out *out)
{
	struct droce_cm_msg m;

	(void)now_ns;
	out_reset(out);
	if (c->state != DROCE_CM_STATE_SIDR_REQ_RCVD)
		return -EINVAL;
	new_msg(&m, DROCE_CM_ATTR_SIDR_REP, c->tid);
	m.sidr_rep = *rep;
	m.sidr_rep.request_id = c->remote_id;
	emit(c, &m, false, out);
	/* As Linux: the exchange is over once answered; a duplicate SIDR_REQ starts anew. */
	enter_idle(c);
	return 0;
}

/* A REQ: in IDLE it makes this the passive end; a duplicate may be answered again. */
static bool
on_req(struct droce_cm_conn *c, const struct droce_cm_msg *m, struct droce_cm_out *out)
{
	const struct droce_cm_req *req = &m->req;

	if (c->state == DROCE_CM_STATE_IDLE) {
		c->active = false;
		c->remote_id = req->local_comm_id;
		c->remote_qpn = req->local_qpn;
		c->tid = m->tid;
		c->max_retries = req->max_cm_retries;
		/* The active end answers a REP within its Local CM Response Timeout. */
		c->peer_timeout_ns = droce_cm_time_ns(req->local_cm_response_timeout);
		c->timewait_ns = droce_cm_time_ns(req->primary.local_ack_timeout);
		c->state = DROCE_CM_STATE_REQ_RCVD;
		out->event = DROCE_CM_EVENT_REQ_RECEIVED;
		return true;
	}
	if (c->active || req->local_comm_id != c->remote_id)
		return false;
	switch (c->state) {
	case DROCE_CM_STATE_MRA_REQ_SENT:
	case DROCE_CM_STATE_REP_SENT:
	case DROCE_CM_STATE_MRA_REP_RCVD:
		/*
		 * The peer did not get our MRA or REP: the same bytes again (12.9.8.1). Linux
		 * leaves the REP to its MAD retries; answering at once costs one MAD and
		 * saves the active end a REP timeout.
		 */
		resend(c, out);
		return true;
	default:
		return false;
	}
}

static bool
on_mra(struct droce_cm_conn *c, const struct droce_cm_mra *mra, uint64_t now_ns,
       struct droce_cm_out *out)
{
	enum droce_cm_state next;

	if (c->state == DROCE_CM_STATE_REQ_SENT && mra->message_mraed == DROCE_CM_MSG_REQ)
		next = DROCE_CM_STATE_MRA_REQ_RCVD;
	else if (c->state == DROCE_CM_STATE_REP_SENT && mra->message_mraed == DROCE_CM_MSG_REP)
		next = DROCE_CM_STATE_MRA_REP_RCVD;
	else
		return false;	/* a duplicate MRA changes nothing, as in Linux */
	/*
	 * The peer asked for Service Timeout more: from now on the wait between
	 * retransmissions is that, and the retries left stay as they are (Linux modifies
	 * the outstanding MAD's timeout the same way).
	 */
	c->state = next;
	c->timeout_ns = droce_cm_time_ns(mra->service_timeout);
	c->deadline_ns = now_ns + c->timeout_ns;
	out->deadline_ns = c->deadline_ns;
	return true;
}

static bool
on_rej(struct droce_cm_conn *c, const struct droce_cm_rej *rej, uint64_t now_ns,
       struct droce_cm_out *out)
{
	switch (c->state) {
	case DROCE_CM_STATE_REQ_SENT:
	case DROCE_CM_STATE_MRA_REQ_RCVD:
	case DROCE_CM_STATE_REQ_RCVD:
	case DROCE_CM_STATE_MRA_REQ_SENT:
	case DROCE_CM_STATE_REP_SENT:
	case DROCE_CM_STATE_MRA_REP_RCVD:
	case DROCE_CM_STATE_REP_RCVD:
	case DROCE_CM_STATE_MRA_REP_SENT:
		/* A stale connection's QP must sit out its timewait (12.9.8.3.1). */
		if (rej->reason == DROCE_CM_REJ_STALE_CONN)
			enter_timewait(c, now_ns);
		else
			enter_idle(c);
		break;
	case DROCE_CM_STATE_ESTABLISHED:
	case DROCE_CM_STATE_DREQ_SENT:
		enter_timewait(c, now_ns);
		break;
	default:
		return false;
	}
	out->event = DROCE_CM_EVENT_REJECTED;
	out->rej_reason = rej->reason;
	out->deadline_ns = c->deadline_ns;
	return true;
}

static bool
on_rep(struct droce_cm_conn *c, const struct droce_cm_msg *m, struct droce_cm_out *out)
{
	const struct droce_cm_rep *rep = &m->rep;

	switch (c->state) {
	case DROCE_CM_STATE_REQ_SENT:
	case DROCE_CM_STATE_MRA_REQ_RCVD:
		c->remote_id = rep->local_comm_id;
		c->remote_qpn = rep->local_qpn;
		c->state = DROCE_CM_STATE_REP_RCVD;
		c->deadline_ns = 0;
		out->event = DROCE_CM_EVENT_REP_RECEIVED;
		return true;
	case DROCE_CM_STATE_MRA_REP_SENT:
	case DROCE_CM_STATE_ESTABLISHED:
		/* Our MRA or RTU was lost: send it again (12.9.8.2). */
		if (!c->active || rep->local_comm_id != c->remote_id)
			return false;
		resend(c, out);
		return true;
	default:
		return false;
	}
}

static bool
on_rtu(struct droce_cm_conn *c, struct droce_cm_out *out)
{
	if (c->state != DROCE_CM_STATE_REP_SENT && c->state != DROCE_CM_STATE_MRA_REP_RCVD)
		return false;
	c->state = DROCE_CM_STATE_ESTABLISHED;
	c->deadline_ns = 0;
	out->event = DROCE_CM_EVENT_ESTABLISHED;
	return true;
}

static bool
on_dreq(struct droce_cm_conn *c, const struct droce_cm_msg *m, uint64_t now_ns,
	struct droce_cm_out *out)
{
	switch (c->state) {
	case DROCE_CM_STATE_REP_SENT:
	case DROCE_CM_STATE_MRA_REP_RCVD:
	case DROCE_CM_STATE_ESTABLISHED:
	case DROCE_CM_STATE_DREQ_SENT:
		/*
		 * rdma_cm answers a DREQ at once, so droce does too instead of resting in
		 * DREQ_RCVD. A DREQ in REP_SENT means the RTU was lost (12.9.8.4).
		 */
		send_drep(c, m->tid, out);
		enter_timewait(c, now_ns);
		out->event = DROCE_CM_EVENT_DISCONNECTED;
		out->deadline_ns = c->deadline_ns;
		return true;
	case DROCE_CM_STATE_TIMEWAIT:
		/* Our DREP was lost (12.9.8.5). */
		send_drep(c, m->tid, out);
		out->deadline_ns = c->deadline_ns;
		return true;
	default:
		return false;
	}
}

static bool
on_sidr_req(struct droce_cm_conn *c, const struct droce_cm_msg *m, struct droce_cm_out *out)
{
	if (c->state != DROCE_CM_STATE_IDLE)
		return false;
	c->active = false;
	c->remote_id = m->sidr_req.request_id;
	c->tid = m->tid;
	c->state = DROCE_CM_STATE_SIDR_REQ_RCVD;
	out->event = DROCE_CM_EVENT_SIDR_REQ_RECEIVED;
	return true;
}

static bool
on_sidr_rep(struct droce_cm_conn *c, struct droce_cm_out *out)
{
	if (c->state != DROCE_CM_STATE_SIDR_REQ_SENT)
		return false;
	enter_idle(c);
	out->event = DROCE_CM_EVENT_SIDR_REP_RECEIVED;
	return true;
}

static bool
on_drep(struct droce_cm_conn *c, uint64_t now_ns, struct droce_cm_out *out)
{
	if (c->state != DROCE_CM_STATE_DREQ_SENT)
		return false;
	enter_timewait(c, now_ns);
	out->event = DROCE_CM_EVENT_DISCONNECTED;
	out->deadline_ns = c->deadline_ns;
	return true;
}

/* Past the REQ, a MAD must name both ends as this connection knows them. */
static bool
ids_match(const struct droce_cm_conn *c, const struct droce_cm_msg *m)
{
	uint32_t sender, receiver;

	if (droce_cm_msg_ids(m, &sender, &receiver) != 0)
		return false;
	if (m->attr_id == DROCE_CM_ATTR_REQ || m->attr_id == DROCE_CM_ATTR_SIDR_REQ)
		return true;
	if (receiver != c->local_id)
		return false;
	/* Until the REP, the active end does not know the peer's ID: REJ and MRA name it. */
	return c->remote_id == 0 || sender == c->remote_id;
}

void
droce_cm_input(struct droce_cm_conn *c, const struct droce_cm_msg *m, uint64_t now_ns,
	       struct droce_cm_out *out)
{
	bool taken = false;

	out_reset(out);
	out->deadline_ns = c->deadline_ns;
	if (ids_match(c, m)) {
		switch (m->attr_id) {
		case DROCE_CM_ATTR_REQ:
			taken = on_req(c, m, out);
			break;
		case DROCE_CM_ATTR_MRA:
			taken = on_mra(c, &m->mra, now_ns, out);
			break;
		case DROCE_CM_ATTR_REJ:
			taken = on_rej(c, &m->rej, now_ns, out);
			break;
		case DROCE_CM_ATTR_REP:
			taken = on_rep(c, m, out);
			break;
		case DROCE_CM_ATTR_RTU:
			taken = on_rtu(c, out);
			break;
		case DROCE_CM_ATTR_DREQ:
			taken = on_dreq(c, m, now_ns, out);
			break;
		case DROCE_CM_ATTR_DREP:
			taken = on_drep(c, now_ns, out);
			break;
		case DROCE_CM_ATTR_SIDR_REQ:
			taken = on_sidr_req(c, m, out);
			break;
		case DROCE_CM_ATTR_SIDR_REP:
			taken = on_sidr_rep(c, out);
			break;
		default:
			break;
		}
	}
	if (!taken) {
		c->ignored++;
		out->ignored = true;
	}
	out->deadline_ns = c->deadline_ns;
}

void
droce_cm_timer(struct droce_cm_conn *c, uint64_t now_ns, struct droce_cm_out *out)
{
	out_reset(out);
	out->deadline_ns = c->deadline_ns;
	if (c->deadline_ns == 0 || now_ns < c->deadline_ns)
		return;
	switch (c->state) {
	case DROCE_CM_STATE_REQ_SENT:
	case DROCE_CM_STATE_MRA_REQ_RCVD:
	case DROCE_CM_STATE_REP_SENT:
	case DROCE_CM_STATE_MRA_REP_RCVD:
	case DROCE_CM_STATE_DREQ_SENT:
	case DROCE_CM_STATE_SIDR_REQ_SENT:
		if (c->retries_left > 0) {
			c->retries_left--;
			resend(c, out);
			c->deadline_ns = now_ns + c->timeout_ns;
			break;
		}
		if (c->state == DROCE_CM_STATE_DREQ_SENT) {
			/* Linux: DREQ_ERROR and timewait; the QP is gone either way. */
			enter_timewait(c, now_ns);
			out->event = DROCE_CM_EVENT_DISCONNECTED;
			break;
		}
		if (c->state == DROCE_CM_STATE_SIDR_REQ_SENT) {
			/* Linux: SIDR_REQ_ERROR, IDLE; SIDR has no REJ. */
			enter_idle(c);
			out->event = DROCE_CM_EVENT_UNREACHABLE;
			break;
		}
		/*
		 * A REJ with reason Timeout, so that a peer which did get the REQ or REP
		 * lets go of its end. Linux's cm_process_send_error() only resets to IDLE
		 * (REQ_ERROR/REP_ERROR) and sends this REJ only when an ID still in
		 * REQ_SENT is destroyed; sending it always costs one MAD and frees the
		 * peer's resources sooner.
		 */
		send_rej(c, DROCE_CM_REJ_TIMEOUT,
			 c->active ? DROCE_CM_MSG_REQ : DROCE_CM_MSG_REP, out);
		enter_idle(c);
		out->event = DROCE_CM_EVENT_UNREACHABLE;
		break;
	case DROCE_CM_STATE_TIMEWAIT:
		enter_idle(c);
		out->event = DROCE_CM_EVENT_TIMEWAIT_EXIT;
		break;
	default:
		c->deadline_ns = 0;
		break;
	}
	out->deadline_ns = c->deadline_ns;
}
