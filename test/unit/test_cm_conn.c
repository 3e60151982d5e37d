/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * lib/cm: the connection state machine. Two ends, the active `a` and the passive `p`,
 * driven against each other with a fake clock; every MAD one end hands back is built
 * bytes, parsed with droce_cm_mad_parse before the other end sees it. Losing a MAD is
 * not delivering it.
 */

#include <errno.h>
#include <string.h>

#include "droce_cm.h"
#include "droce_cm_conn.h"
#include "droce_test.h"

#define A_ID		0x0A0A0001u
#define P_ID		0x0B0B0002u
#define A_QPN		0x000123u
#define P_QPN		0x000456u
#define A_TID		0x1000ull
#define P_TID		0x2000ull
#define REMOTE_RT	16	/* REQ's Remote CM Response Timeout: a waits for REP this long */
#define LOCAL_RT	17	/* REQ's Local CM Response Timeout: p waits for RTU this long */
#define ACK_TO		14	/* primary path's Local ACK Timeout: the timewait */
#define RETRIES		3
#define SVC_TO		20	/* MRA's Service Timeout */
#define T0		1000000000ull

struct pair {
	struct droce_cm_conn a, p;
	uint64_t now;
	struct droce_cm_out out;
	uint8_t req[DROCE_CM_MAD_LEN];	/* the first REQ a sent */
	uint8_t rep[DROCE_CM_MAD_LEN];	/* the first REP p sent */
	uint8_t rtu[DROCE_CM_MAD_LEN];	/* the first RTU a sent */
	uint8_t last[DROCE_CM_MAD_LEN];	/* the last MAD a step sent, for the next step */
};

static void
pair_init(struct pair *pp)
{
	memset(pp, 0, sizeof(*pp));
	droce_cm_conn_init(&pp->a, A_ID, A_TID);
	droce_cm_conn_init(&pp->p, P_ID, P_TID);
	pp->now = T0;
}

static void
make_req(struct droce_cm_req *r)
{
	memset(r, 0, sizeof(*r));
	r->service_id = droce_cm_service_id(DROCE_CM_PS_TCP, 4791);
	r->local_qpn = A_QPN;
	r->starting_psn = 0x111;
	r->remote_cm_response_timeout = REMOTE_RT;
	r->local_cm_response_timeout = LOCAL_RT;
	r->max_cm_retries = RETRIES;
	r->primary.local_ack_timeout = ACK_TO;
	r->private_data[0] = 0xAB;
}

static void
make_rep(struct droce_cm_rep *r)
{
	memset(r, 0, sizeof(*r));
	r->local_qpn = P_QPN;
	r->starting_psn = 0x222;
	r->private_data[0] = 0xCD;
}

/* The one MAD in out, parsed; it must be of attribute attr. */
static void
only_mad(const struct droce_cm_out *out, uint16_t attr, struct droce_cm_msg *m)
{
	CHECK_EQ_U64(out->nmads, 1);
	CHECK_EQ_U64(droce_cm_mad_parse(out->mads[0], DROCE_CM_MAD_LEN, m), DROCE_CM_OK);
	CHECK_EQ_U64(m->attr_id, attr);
}

static void
no_mad(const struct droce_cm_out *out)
{
	CHECK_EQ_U64(out->nmads, 0);
}

/* Parses mad and hands it to `to`; the result lands in pp->out. */
static void
deliver(struct pair *pp, struct droce_cm_conn *to, const uint8_t *mad)
{
	struct droce_cm_msg m;

	CHECK_EQ_U64(droce_cm_mad_parse(mad, DROCE_CM_MAD_LEN, &m), DROCE_CM_OK);
	droce_cm_input(to, &m, pp->now, &pp->out);
}

static void
check_state(const struct droce_cm_conn *c, enum droce_cm_state s)
{
	CHECK_EQ_STR(droce_cm_state_name(c->state), droce_cm_state_name(s));
}

/*
 * The scripted connection: each step moves one end to a new state, and the steps pass
 * through every state. Returns the end the last step moved.
 */
enum step {
	S_CONNECT,	/* a: REQ_SENT */
	S_GET_REQ,	/* p: REQ_RCVD */
	S_MRA_REQ,	/* p: MRA_REQ_SENT */
	S_GET_MRA_REQ,	/* a: MRA_REQ_RCVD */
	S_ACCEPT,	/* p: REP_SENT */
	S_GET_REP,	/* a: REP_RCVD */
	S_MRA_REP,	/* a: MRA_REP_SENT */
	S_GET_MRA_REP,	/* p: MRA_REP_RCVD */
	S_RTU,		/* a: ESTABLISHED */
	S_GET_RTU,	/* p: ESTABLISHED */
	S_DISCONNECT,	/* a: DREQ_SENT */
	S_GET_DREQ,	/* p: TIMEWAIT */
	S_COUNT
};

static const enum droce_cm_state step_state[S_COUNT] = {
	DROCE_CM_STATE_REQ_SENT, DROCE_CM_STATE_REQ_RCVD, DROCE_CM_STATE_MRA_REQ_SENT,
	DROCE_CM_STATE_MRA_REQ_RCVD, DROCE_CM_STATE_REP_SENT, DROCE_CM_STATE_REP_RCVD,
	DROCE_CM_STATE_MRA_REP_SENT, DROCE_CM_STATE_MRA_REP_RCVD, DROCE_CM_STATE_ESTABLISHED,
	DROCE_CM_STATE_ESTABLISHED, DROCE_CM_STATE_DREQ_SENT, DROCE_CM_STATE_TIMEWAIT,
};

static struct droce_cm_conn *
step(struct pair *pp, enum step s)
{
	struct droce_cm_req req;
	struct droce_cm_rep rep;
	struct droce_cm_conn *c;

	switch (s) {
	case S_CONNECT:
		make_req(&req);
		CHECK_EQ_I64(droce_cm_connect(&pp->a, &req, pp->now, &pp->out), 0);
		c = &pp->a;
		break;
	case S_ACCEPT:
		make_rep(&rep);
		CHECK_EQ_I64(droce_cm_accept(&pp->p, &rep, pp->now, &pp->out), 0);
		c = &pp->p;
		break;
	case S_MRA_REQ:
		CHECK_EQ_I64(droce_cm_mra(&pp->p, SVC_TO, pp->now, &pp->out), 0);
		c = &pp->p;
		break;
	case S_MRA_REP:
		CHECK_EQ_I64(droce_cm_mra(&pp->a, SVC_TO, pp->now, &pp->out), 0);
		c = &pp->a;
		break;
	case S_RTU:
		CHECK_EQ_I64(droce_cm_rtu(&pp->a, pp->now, &pp->out), 0);
		c = &pp->a;
		break;
	case S_DISCONNECT:
		CHECK_EQ_I64(droce_cm_disconnect(&pp->a, pp->now, &pp->out), 0);
		c = &pp->a;
		break;
	default:
		/* The odd steps hand the last MAD to the other end. */
		c = (s == S_GET_MRA_REQ || s == S_GET_REP) ? &pp->a : &pp->p;
		deliver(pp, c, pp->last);
		CHECK(!pp->out.ignored);
		break;
	}
	if (pp->out.nmads > 0)
		memcpy(pp->last, pp->out.mads[0], DROCE_CM_MAD_LEN);
	check_state(c, step_state[s]);
	return c;
}

#define SIDR_TO		18	/* the SIDR_REQ's wait, a CM time */

static void
make_sidr_req(struct droce_cm_sidr_req *r)
{
	memset(r, 0, sizeof(*r));
	r->service_id = droce_cm_service_id(DROCE_CM_PS_UDP, 4791);
	r->partition_key = 0xFFFF;
	r->private_data[0] = 0xEF;
}

/* a sends a SIDR_REQ; with `deliver_it`, p gets it. Returns the end that moved last. */
static struct droce_cm_conn *
sidr_start(struct pair *pp, bool deliver_it)
{
	struct droce_cm_sidr_req req;

	make_sidr_req(&req);
	CHECK_EQ_I64(droce_cm_sidr_req(&pp->a, &req, SIDR_TO, RETRIES, pp->now, &pp->out), 0);
	memcpy(pp->last, pp->out.mads[0], DROCE_CM_MAD_LEN);
	check_state(&pp->a, DROCE_CM_STATE_SIDR_REQ_SENT);
	if (!deliver_it)
		return &pp->a;
	deliver(pp, &pp->p, pp->last);
	check_state(&pp->p, DROCE_CM_STATE_SIDR_REQ_RCVD);
	return &pp->p;
}

/* Runs the script from the start until an end is in state s; returns that end. */
static struct droce_cm_conn *
reach(struct pair *pp, enum droce_cm_state s)
{
	struct droce_cm_conn *c = &pp->a;
	unsigned int i;

	pair_init(pp);
	if (s == DROCE_CM_STATE_SIDR_REQ_SENT || s == DROCE_CM_STATE_SIDR_REQ_RCVD)
		return sidr_start(pp, s == DROCE_CM_STATE_SIDR_REQ_RCVD);
	for (i = 0; i < S_COUNT && c->state != s; i++)
		c = step(pp, (enum step)i);
	CHECK_EQ_U64(c->state, s);
	return c;
}

/* REQ, REP, RTU without MRAs; the first MAD of each kept in pp. */
static void
connect_pair(struct pair *pp)
{
	struct droce_cm_msg m;

	pair_init(pp);
	step(pp, S_CONNECT);
	memcpy(pp->req, pp->out.mads[0], DROCE_CM_MAD_LEN);
	step(pp, S_GET_REQ);
	step(pp, S_ACCEPT);
	memcpy(pp->rep, pp->out.mads[0], DROCE_CM_MAD_LEN);
	step(pp, S_GET_REP);
	step(pp, S_RTU);
	only_mad(&pp->out, DROCE_CM_ATTR_RTU, &m);
	memcpy(pp->rtu, pp->out.mads[0], DROCE_CM_MAD_LEN);
}

DROCE_TEST(names_and_times)
{
	unsigned int i, j;

	for (i = 0; i < DROCE_CM_STATE_COUNT; i++) {
		CHECK(droce_cm_state_name(i) != NULL);
		CHECK(strcmp(droce_cm_state_name(i), "?") != 0);
		for (j = 0; j < i; j++)
			CHECK(strcmp(droce_cm_state_name(i), droce_cm_state_name(j)) != 0);
	}
	for (i = 0; i < DROCE_CM_EVENT_COUNT; i++) {
		CHECK(strcmp(droce_cm_event_name(i), "?") != 0);
		for (j = 0; j < i; j++)
			CHECK(strcmp(droce_cm_event_name(i), droce_cm_event_name(j)) != 0);
	}
	CHECK_EQ_STR(droce_cm_state_name(DROCE_CM_STATE_MRA_REP_RCVD), "MRA_REP_RCVD");
	CHECK_EQ_STR(droce_cm_state_name(DROCE_CM_STATE_COUNT), "?");
	CHECK_EQ_STR(droce_cm_event_name(DROCE_CM_EVENT_UNREACHABLE), "UNREACHABLE");
	CHECK_EQ_STR(droce_cm_event_name(DROCE_CM_EVENT_COUNT), "?");
	CHECK_EQ_U64(droce_cm_time_ns(0), 4096);
	CHECK_EQ_U64(droce_cm_time_ns(16), 4096ull << 16);	/* 268 ms */
	CHECK_EQ_U64(droce_cm_time_ns(31), 4096ull << 31);
	CHECK_EQ_U64(droce_cm_time_ns(40), 4096ull << 31);
}

/* Linux's cm_ack_timeout() worked by hand for each branch, and the clamp at 31. */
DROCE_TEST(ack_timeout)
{
	CHECK_EQ_U64(droce_cm_ack_timeout(15, 18), 19);	/* rxe's ACK delay, rdma_cm's RoCE path */
	CHECK_EQ_U64(droce_cm_ack_timeout(0, 0), 2);
	CHECK_EQ_U64(droce_cm_ack_timeout(16, 15), 17);
	CHECK_EQ_U64(droce_cm_ack_timeout(20, 18), 21);
	CHECK_EQ_U64(droce_cm_ack_timeout(25, 18), 25);
	CHECK_EQ_U64(droce_cm_ack_timeout(31, 31), 31);
	CHECK_EQ_U64(droce_cm_ack_timeout(0, 31), 31);
}

DROCE_TEST(msg_ids)
{
	static const uint16_t attrs[] = {
		DROCE_CM_ATTR_MRA, DROCE_CM_ATTR_REJ, DROCE_CM_ATTR_REP, DROCE_CM_ATTR_RTU,
		DROCE_CM_ATTR_DREQ, DROCE_CM_ATTR_DREP,
	};
	struct droce_cm_msg m;
	uint32_t s, r;
	unsigned int i;

	memset(&m, 0, sizeof(m));
	m.attr_id = DROCE_CM_ATTR_REQ;
	m.req.local_comm_id = 7;
	CHECK_EQ_I64(droce_cm_msg_ids(&m, &s, &r), 0);
	CHECK_EQ_U64(s, 7);
	CHECK_EQ_U64(r, 0);
	for (i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		uint8_t mad[DROCE_CM_MAD_LEN];

		droce_test_ctx("attr %s", droce_cm_attr_name(attrs[i]));
		memset(&m, 0, sizeof(m));
		m.attr_id = attrs[i];
		/* Every attribute but REQ starts with Local then Remote Communication ID. */
		CHECK_EQ_I64(droce_cm_mad_build(&m, mad), 0);
		mad[24 + 3] = 0x11;
		mad[24 + 7] = 0x22;
		CHECK_EQ_U64(droce_cm_mad_parse(mad, sizeof(mad), &m), DROCE_CM_OK);
		CHECK_EQ_I64(droce_cm_msg_ids(&m, &s, &r), 0);
		CHECK_EQ_U64(s, 0x11);
		CHECK_EQ_U64(r, 0x22);
	}
	memset(&m, 0, sizeof(m));
	m.attr_id = DROCE_CM_ATTR_SIDR_REQ;
	m.sidr_req.request_id = 9;
	CHECK_EQ_I64(droce_cm_msg_ids(&m, &s, &r), 0);
	CHECK_EQ_U64(s, 9);
	CHECK_EQ_U64(r, 0);
	memset(&m, 0, sizeof(m));
	m.attr_id = DROCE_CM_ATTR_SIDR_REP;
	m.sidr_rep.request_id = 9;
	CHECK_EQ_I64(droce_cm_msg_ids(&m, &s, &r), 0);
	CHECK_EQ_U64(s, 0);
	CHECK_EQ_U64(r, 9);
	m.attr_id = 0x0019;
	CHECK_EQ_I64(droce_cm_msg_ids(&m, &s, &r), -EINVAL);
}

DROCE_TEST(connect_and_disconnect)
{
	struct pair pp;
	struct droce_cm_msg m, req;
	uint64_t tw;

	pair_init(&pp);
	make_req(&req.req);
	CHECK_EQ_I64(droce_cm_connect(&pp.a, &req.req, pp.now, &pp.out), 0);
	only_mad(&pp.out, DROCE_CM_ATTR_REQ, &m);
	CHECK_EQ_U64(m.req.local_comm_id, A_ID);
	CHECK_EQ_U64(m.req.local_qpn, A_QPN);
	CHECK_EQ_U64(m.req.private_data[0], 0xAB);
	CHECK_EQ_U64(m.tid, A_TID);
	CHECK_EQ_U64(pp.out.deadline_ns, T0 + droce_cm_time_ns(REMOTE_RT));
	memcpy(pp.req, pp.out.mads[0], DROCE_CM_MAD_LEN);

	pp.now += 1000;
	deliver(&pp, &pp.p, pp.req);
	CHECK_EQ_U64(pp.out.event, DROCE_CM_EVENT_REQ_RECEIVED);
	no_mad(&pp.out);
	check_state(&pp.p, DROCE_CM_STATE_REQ_RCVD);
	CHECK_EQ_U64(pp.p.remote_id, A_ID);
	CHECK_EQ_U64(pp.out.deadline_ns, 0);

	step(&pp, S_ACCEPT);
	only_mad(&pp.out, DROCE_CM_ATTR_REP, &m);
	CHECK_EQ_U64(m.rep.local_comm_id, P_ID);
	CHECK_EQ_U64(m.rep.remote_comm_id, A_ID);
	CHECK_EQ_U64(m.rep.local_qpn, P_QPN);
	CHECK_EQ_U64(m.tid, A_TID);
	CHECK_EQ_U64(pp.out.deadline_ns, pp.now + droce_cm_time_ns(LOCAL_RT));
	memcpy(pp.rep, pp.out.mads[0], DROCE_CM_MAD_LEN);

	deliver(&pp, &pp.a, pp.rep);
	CHECK_EQ_U64(pp.out.event, DROCE_CM_EVENT_REP_RECEIVED);
	no_mad(&pp.out);
	check_state(&pp.a, DROCE_CM_STATE_REP_RCVD);
	CHECK_EQ_U64(pp.a.remote_id, P_ID);
	CHECK_EQ_U64(pp.a.deadline_ns, 0);

	CHECK_EQ_I64(droce_cm_rtu(&pp.a, pp.now, &pp.out), 0);
	only_mad(&pp.out, DROCE_CM_ATTR_RTU, &m);
	CHECK_EQ_U64(m.rtu.local_comm_id, A_ID);
	CHECK_EQ_U64(m.rtu.remote_comm_id, P_ID);
	check_state(&pp.a, DROCE_CM_STATE_ESTABLISHED);
	deliver(&pp, &pp.p, pp.out.mads[0]);
	CHECK_EQ_U64(pp.out.event, DROCE_CM_EVENT_ESTABLISHED);
	check_state(&pp.p, DROCE_CM_STATE_ESTABLISHED);
	CHECK_EQ_U64(pp.p.deadline_ns, 0);

	/* The passive end disconnects this time. */
	pp.now += 5000;
	CHECK_EQ_I64(droce_cm_disconnect(&pp.p, pp.now, &pp.out), 0);
	only_mad(&pp.out, DROCE_CM_ATTR_DREQ, &m);
	CHECK_EQ_U64(m.dreq.local_comm_id, P_ID);
	CHECK_EQ_U64(m.dreq.remote_comm_id, A_ID);
	CHECK_EQ_U64(m.dreq.remote_qpn_eecn, A_QPN);
	CHECK_EQ_U64(m.tid, P_TID);
	CHECK_EQ_U64(pp.out.deadline_ns, pp.now + droce_cm_time_ns(LOCAL_RT));
	check_state(&pp.p, DROCE_CM_STATE_DREQ_SENT);
	deliver(&pp, &pp.a, pp.out.mads[0]);
	CHECK_EQ_U64(pp.out.event, DROCE_CM_EVENT_DISCONNECTED);
	only_mad(&pp.out, DROCE_CM_ATTR_DREP, &m);
	CHECK_EQ_U64(m.drep.local_comm_id, A_ID);
	CHECK_EQ_U64(m.drep.remote_comm_id, P_ID);
	CHECK_EQ_U64(m.tid, P_TID);
	tw = pp.now + droce_cm_time_ns(ACK_TO);
	CHECK_EQ_U64(pp.out.deadline_ns, tw);
	check_state(&pp.a, DROCE_CM_STATE_TIMEWAIT);
	deliver(&pp, &pp.p, pp.out.mads[0]);
	CHECK_EQ_U64(pp.out.event, DROCE_CM_EVENT_DISCONNECTED);
	no_mad(&pp.out);
	check_state(&pp.p, DROCE_CM_STATE_TIMEWAIT);

	/* Timewait: nothing before its end, then IDLE. */
	droce_cm_timer(&pp.a, tw - 1, &pp.out);
	CHECK_EQ_U64(pp.out.event, DROCE_CM_EVENT_NONE);
	no_mad(&pp.out);
	check_state(&pp.a, DROCE_CM_STATE_TIMEWAIT);
	droce_cm_timer(&pp.a, tw, &pp.out);
	CHECK_EQ_U64(pp.out.event, DROCE_CM_EVENT_TIMEWAIT_EXIT);
	check_state(&pp.a, DROCE_CM_STATE_IDLE);
	CHECK_EQ_U64(pp.out.deadline_ns, 0);
	CHECK_EQ_U64(pp.a.ignored + pp.p.ignored, 0);
}

DROCE_TEST(lost_req_retransmitted_then_unreachable)
{
	struct pair pp;
	struct droce_cm_msg m;
	uint64_t to = droce_cm_time_ns(REMOTE_RT);
	unsigned int i;

	pair_init(&pp);
	step(&pp, S_CONNECT);
	memcpy(pp.req, pp.out.mads[0], DROCE_CM_MAD_LEN);
	for (i = 0; i < RETRIES; i++) {
		droce_test_ctx("retry %u", i);
		droce_cm_timer(&pp.a, pp.a.deadline_ns - 1, &pp.out);
		no_mad(&pp.out);
		pp.now = pp.a.deadline_ns;
		droce_cm_timer(&pp.a, pp.now, &pp.out);
		CHECK_EQ_U64(pp.out.nmads, 1);
		CHECK_MEM(pp.out.mads[0], pp.req, DROCE_CM_MAD_LEN);
		CHECK_EQ_U64(pp.out.deadline_ns, pp.now + to);
		CHECK_EQ_U64(pp.out.event, DROCE_CM_EVENT_NONE);
		check_state(&pp.a, DROCE_CM_STATE_REQ_SENT);
	}
	pp.now = pp.a.deadline_ns;
	droce_cm_timer(&pp.a, pp.now, &pp.out);
	CHECK_EQ_U64(pp.out.event, DROCE_CM_EVENT_UNREACHABLE);
	only_mad(&pp.out, DROCE_CM_ATTR_REJ, &m);
	CHECK_EQ_U64(m.rej.reason, DROCE_CM_REJ_TIMEOUT);
	CHECK_EQ_U64(m.rej.message_rejected, DROCE_CM_MSG_REQ);
	CHECK_EQ_U64(m.rej.local_comm_id, A_ID);
	check_state(&pp.a, DROCE_CM_STATE_IDLE);
	CHECK_EQ_U64(pp.out.deadline_ns, 0);
	/* And nothing more. */
	droce_cm_timer(&pp.a, pp.now + 10 * to, &pp.out);
	no_mad(&pp.out);
	CHECK_EQ_U64(pp.out.event, DROCE_CM_EVENT_NONE);
}

DROCE_TEST(lost_rep_answered_on_duplicate_req)
{
	struct pair pp;

	pair_init(&pp);
	step(&pp, S_CONNECT);
	memcpy(pp.req, pp.out.mads[0], DROCE_CM_MAD_LEN);
	step(&pp, S_GET_REQ);
	step(&pp, S_ACCEPT);
	memcpy(pp.rep, pp.out.mads[0], DROCE_CM_MAD_LEN);
	/* The REP is lost; a's REQ timer fires first (REMOTE_RT < LOCAL_RT). */
	pp.now = pp.a.deadline_ns;
	droce_cm_timer(&pp.a, pp.now, &pp.out);
	CHECK_MEM(pp.out.mads[0], pp.req, DROCE_CM_MAD_LEN);
	deliver(&pp, &pp.p, pp.out.mads[0]);
	CHECK(!pp.out.ignored);
	CHECK_EQ_U64(pp.out.event, DROCE_CM_EVENT_NONE);
	CHECK_EQ_U64(pp.out.nmads, 1);
	CHECK_MEM(pp.out.mads[0], pp.rep, DROCE_CM_MAD_LEN);
	check_state(&pp.p, DROCE_CM_STATE_REP_SENT);
	deliver(&pp, &pp.a, pp.out.mads[0]);
	CHECK_EQ_U64(pp.out.event, DROCE_CM_EVENT_REP_RECEIVED);
	check_state(&pp.a, DROCE_CM_STATE_REP_RCVD);
	/* A duplicate REQ from someone else is not ours to answer. */
	{
		struct droce_cm_msg m;

		CHECK_EQ_U64(droce_cm_mad_parse(pp.req, DROCE_CM_MAD_LEN, &m), DROCE_CM_OK);
		m.req.local_comm_id ^= 1;
		droce_cm_input(&pp.p, &m, pp.now, &pp.out);
		CHECK(pp.out.ignored);
		no_mad(&pp.out);
	}
}

DROCE_TEST(lost_rtu_answered_on_rep_retransmit)
{
	struct pair pp;
	uint64_t to = droce_cm_time_ns(LOCAL_RT);

	connect_pair(&pp);
	/* The RTU is lost: p retransmits its REP after LOCAL_RT, a answers with the RTU. */
	droce_cm_timer(&pp.p, pp.p.deadline_ns - 1, &pp.out);
	no_mad(&pp.out);
	pp.now = pp.p.deadline_ns;
	droce_cm_timer(&pp.p, pp.now, &pp.out);
	CHECK_EQ_U64(pp.out.nmads, 1);
	CHECK_MEM(pp.out.mads[0], pp.rep, DROCE_CM_MAD_LEN);
	CHECK_EQ_U64(pp.out.deadline_ns, pp.now + to);
	deliver(&pp, &pp.a, pp.out.mads[0]);
	CHECK(!pp.out.ignored);
	CHECK_EQ_U64(pp.out.nmads, 1);
	CHECK_MEM(pp.out.mads[0], pp.rtu, DROCE_CM_MAD_LEN);
	check_state(&pp.a, DROCE_CM_STATE_ESTABLISHED);
	deliver(&pp, &pp.p, pp.out.mads[0]);
	CHECK_EQ_U64(pp.out.event, DROCE_CM_EVENT_ESTABLISHED);
	check_state(&pp.p, DROCE_CM_STATE_ESTABLISHED);
	CHECK_EQ_U64(pp.out.deadline_ns, 0);
}

DROCE_TEST(lost_rtu_rep_retries_run_out)
{
	struct pair pp;
	struct droce_cm_msg m;
	unsigned int i;

	connect_pair(&pp);
	for (i = 0; i < RETRIES; i++) {
		pp.now = pp.p.deadline_ns;
		droce_cm_timer(&pp.p, pp.now, &pp.out);
		CHECK_MEM(pp.out.mads[0], pp.rep, DROCE_CM_MAD_LEN);
	}
	pp.now = pp.p.deadline_ns;
	droce_cm_timer(&pp.p, pp.now, &pp.out);
	CHECK_EQ_U64(pp.out.event, DROCE_CM_EVENT_UNREACHABLE);
	only_mad(&pp.out, DROCE_CM_ATTR_REJ, &m);
	CHECK_EQ_U64(m.rej.reason, DROCE_CM_REJ_TIMEOUT);
	CHECK_EQ_U64(m.rej.message_rejected, DROCE_CM_MSG_REP);
	CHECK_EQ_U64(m.rej.local_comm_id, P_ID);
	CHECK_EQ_U64(m.rej.remote_comm_id, A_ID);
	check_state(&pp.p, DROCE_CM_STATE_IDLE);
	/* a, established, learns of it and sits out its timewait. */
	deliver(&pp, &pp.a, pp.out.mads[0]);
	CHECK_EQ_U64(pp.out.event, DROCE_CM_EVENT_REJECTED);
	CHECK_EQ_U64(pp.out.rej_reason, DROCE_CM_REJ_TIMEOUT);
	check_state(&pp.a, DROCE_CM_STATE_TIMEWAIT);
}

DROCE_TEST(mra_extends_the_req_deadline)
{
	struct pair pp;
	struct droce_cm_msg m;
	uint64_t svc = droce_cm_time_ns(SVC_TO);
	uint8_t mra[DROCE_CM_MAD_LEN];

	pair_init(&pp);
	step(&pp, S_CONNECT);
	memcpy(pp.req, pp.out.mads[0], DROCE_CM_MAD_LEN);
	step(&pp, S_GET_REQ);
	pp.now += 100;
	step(&pp, S_MRA_REQ);
	only_mad(&pp.out, DROCE_CM_ATTR_MRA, &m);
	CHECK_EQ_U64(m.mra.message_mraed, DROCE_CM_MSG_REQ);
	CHECK_EQ_U64(m.mra.service_timeout, SVC_TO);
	CHECK_EQ_U64(m.mra.remote_comm_id, A_ID);
	memcpy(mra, pp.out.mads[0], DROCE_CM_MAD_LEN);
	deliver(&pp, &pp.a, mra);
	check_state(&pp.a, DROCE_CM_STATE_MRA_REQ_RCVD);
	CHECK_EQ_U64(pp.out.deadline_ns, pp.now + svc);
	CHECK(svc > droce_cm_time_ns(REMOTE_RT));
	/* The REQ's own timeout passes quietly. */
	droce_cm_timer(&pp.a, T0 + droce_cm_time_ns(REMOTE_RT), &pp.out);
	no_mad(&pp.out);
	/* A second MRA changes nothing. */
	deliver(&pp, &pp.a, mra);
	CHECK(pp.out.ignored);
	/* At the MRA's deadline, the REQ again; p answers the duplicate with the MRA. */
	pp.now += svc;
	droce_cm_timer(&pp.a, pp.now, &pp.out);
	CHECK_MEM(pp.out.mads[0], pp.req, DROCE_CM_MAD_LEN);
	CHECK_EQ_U64(pp.out.deadline_ns, pp.now + svc);
	deliver(&pp, &pp.p, pp.out.mads[0]);
	CHECK_EQ_U64(pp.out.nmads, 1);
	CHECK_MEM(pp.out.mads[0], mra, DROCE_CM_MAD_LEN);
	check_state(&pp.p, DROCE_CM_STATE_MRA_REQ_SENT);
	/* Accepting from MRA_REQ_SENT. */
	step(&pp, S_ACCEPT);
	deliver(&pp, &pp.a, pp.out.mads[0]);
	CHECK_EQ_U64(pp.out.event, DROCE_CM_EVENT_REP_RECEIVED);
}

DROCE_TEST(mra_extends_the_rep_deadline)
{
	struct pair pp;
	struct droce_cm_msg m;
	uint64_t svc = droce_cm_time_ns(SVC_TO);
	uint8_t mra[DROCE_CM_MAD_LEN];
	unsigned int i;

	pair_init(&pp);
	for (i = S_CONNECT; i <= S_GET_REQ; i++)
		step(&pp, (enum step)i);
	step(&pp, S_ACCEPT);
	memcpy(pp.rep, pp.out.mads[0], DROCE_CM_MAD_LEN);
	step(&pp, S_GET_REP);
	step(&pp, S_MRA_REP);
	only_mad(&pp.out, DROCE_CM_ATTR_MRA, &m);
	CHECK_EQ_U64(m.mra.message_mraed, DROCE_CM_MSG_REP);
	memcpy(mra, pp.out.mads[0], DROCE_CM_MAD_LEN);
	pp.now += 10;
	deliver(&pp, &pp.p, mra);
	check_state(&pp.p, DROCE_CM_STATE_MRA_REP_RCVD);
	CHECK_EQ_U64(pp.out.deadline_ns, pp.now + svc);
	pp.now += svc;
	droce_cm_timer(&pp.p, pp.now, &pp.out);
	CHECK_MEM(pp.out.mads[0], pp.rep, DROCE_CM_MAD_LEN);
	/* a, still thinking, answers the duplicate REP with its MRA. */
	deliver(&pp, &pp.a, pp.out.mads[0]);
	CHECK_EQ_U64(pp.out.nmads, 1);
	CHECK_MEM(pp.out.mads[0], mra, DROCE_CM_MAD_LEN);
	step(&pp, S_RTU);
	deliver(&pp, &pp.p, pp.out.mads[0]);
	CHECK_EQ_U64(pp.out.event, DROCE_CM_EVENT_ESTABLISHED);
	CHECK_EQ_U64(pp.p.deadline_ns, 0);
}

/* A MAD from the peer of c, with the IDs c knows (a made-up peer before it knows one). */
static void
peer_msg(const struct droce_cm_conn *c, uint16_t attr, struct droce_cm_msg *m)
{
	uint32_t peer = c->remote_id != 0 ? c->remote_id : (c->local_id == A_ID ? P_ID : A_ID);

	memset(m, 0, sizeof(*m));
	m->attr_id = attr;
	m->tid = 0x77;
	switch (attr) {
	case DROCE_CM_ATTR_REQ:
		m->req.local_comm_id = peer;
		m->req.max_cm_retries = RETRIES;
		break;
	case DROCE_CM_ATTR_MRA:
		m->mra.local_comm_id = peer;
		m->mra.remote_comm_id = c->local_id;
		break;
	case DROCE_CM_ATTR_REJ:
		m->rej.local_comm_id = peer;
		m->rej.remote_comm_id = c->local_id;
		m->rej.reason = DROCE_CM_REJ_CONSUMER_DEFINED;
		break;
	case DROCE_CM_ATTR_REP:
		m->rep.local_comm_id = peer;
		m->rep.remote_comm_id = c->local_id;
		break;
	case DROCE_CM_ATTR_RTU:
		m->rtu.local_comm_id = peer;
		m->rtu.remote_comm_id = c->local_id;
		break;
	case DROCE_CM_ATTR_DREQ:
		m->dreq.local_comm_id = peer;
		m->dreq.remote_comm_id = c->local_id;
		break;
	case DROCE_CM_ATTR_DREP:
		m->drep.local_comm_id = peer;
		m->drep.remote_comm_id = c->local_id;
		break;
	case DROCE_CM_ATTR_SIDR_REQ:
		m->sidr_req.request_id = peer;
		break;
	case DROCE_CM_ATTR_SIDR_REP:
		m->sidr_rep.request_id = c->local_id;
		break;
	default:
		break;
	}
}

DROCE_TEST(rej_in_every_state_that_takes_it)
{
	static const struct {
		enum droce_cm_state s, next;
	} rows[] = {
		{ DROCE_CM_STATE_REQ_SENT, DROCE_CM_STATE_IDLE },
		{ DROCE_CM_STATE_REQ_RCVD, DROCE_CM_STATE_IDLE },
		{ DROCE_CM_STATE_MRA_REQ_SENT, DROCE_CM_STATE_IDLE },
		{ DROCE_CM_STATE_MRA_REQ_RCVD, DROCE_CM_STATE_IDLE },
		{ DROCE_CM_STATE_REP_SENT, DROCE_CM_STATE_IDLE },
		{ DROCE_CM_STATE_REP_RCVD, DROCE_CM_STATE_IDLE },
		{ DROCE_CM_STATE_MRA_REP_SENT, DROCE_CM_STATE_IDLE },
		{ DROCE_CM_STATE_MRA_REP_RCVD, DROCE_CM_STATE_IDLE },
		{ DROCE_CM_STATE_ESTABLISHED, DROCE_CM_STATE_TIMEWAIT },
		{ DROCE_CM_STATE_DREQ_SENT, DROCE_CM_STATE_TIMEWAIT },
	};
	struct pair pp;
	struct droce_cm_msg m;
	uint8_t mad[DROCE_CM_MAD_LEN];
	unsigned int i, stale;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		for (stale = 0; stale < 2; stale++) {
			struct droce_cm_conn *c;
			enum droce_cm_state next = rows[i].next;

			droce_test_ctx("%s stale %u", droce_cm_state_name(rows[i].s), stale);
			c = reach(&pp, rows[i].s);
			peer_msg(c, DROCE_CM_ATTR_REJ, &m);
			if (stale) {
				m.rej.reason = DROCE_CM_REJ_STALE_CONN;
				next = DROCE_CM_STATE_TIMEWAIT;
			}
			CHECK_EQ_I64(droce_cm_mad_build(&m, mad), 0);
			pp.now += 50;
			deliver(&pp, c, mad);
			CHECK(!pp.out.ignored);
			CHECK_EQ_U64(pp.out.event, DROCE_CM_EVENT_REJECTED);
			CHECK_EQ_U64(pp.out.rej_reason, m.rej.reason);
			no_mad(&pp.out);
			check_state(c, next);
			CHECK_EQ_U64(pp.out.deadline_ns, next == DROCE_CM_STATE_TIMEWAIT ?
				     pp.now + droce_cm_time_ns(ACK_TO) : 0);
		}
	}
}

DROCE_TEST(reject_calls)
{
	struct pair pp;
	struct droce_cm_msg m;

	/* p refuses the REQ. */
	reach(&pp, DROCE_CM_STATE_REQ_RCVD);
	CHECK_EQ_I64(droce_cm_reject(&pp.p, DROCE_CM_REJ_CONSUMER_DEFINED, pp.now, &pp.out), 0);
	only_mad(&pp.out, DROCE_CM_ATTR_REJ, &m);
	CHECK_EQ_U64(m.rej.message_rejected, DROCE_CM_MSG_REQ);
	CHECK_EQ_U64(m.rej.remote_comm_id, A_ID);
	check_state(&pp.p, DROCE_CM_STATE_IDLE);
	deliver(&pp, &pp.a, pp.out.mads[0]);
	CHECK_EQ_U64(pp.out.event, DROCE_CM_EVENT_REJECTED);
	CHECK_EQ_U64(pp.out.rej_reason, DROCE_CM_REJ_CONSUMER_DEFINED);
	check_state(&pp.a, DROCE_CM_STATE_IDLE);
	CHECK_EQ_U64(pp.a.deadline_ns, 0);

	/* a refuses the REP. */
	reach(&pp, DROCE_CM_STATE_MRA_REP_SENT);
	CHECK_EQ_I64(droce_cm_reject(&pp.a, 5, pp.now, &pp.out), 0);
	only_mad(&pp.out, DROCE_CM_ATTR_REJ, &m);
	CHECK_EQ_U64(m.rej.message_rejected, DROCE_CM_MSG_REP);
	CHECK_EQ_U64(m.rej.remote_comm_id, P_ID);
	deliver(&pp, &pp.p, pp.out.mads[0]);
	CHECK_EQ_U64(pp.out.rej_reason, 5);
	check_state(&pp.p, DROCE_CM_STATE_IDLE);
	CHECK_EQ_U64(pp.p.deadline_ns, 0);
}

DROCE_TEST(lost_dreq_retransmitted_then_timewait)
{
	struct pair pp;
	struct droce_cm_msg m;
	uint8_t dreq[DROCE_CM_MAD_LEN];
	unsigned int i;

	connect_pair(&pp);
	deliver(&pp, &pp.p, pp.rtu);
	CHECK_EQ_I64(droce_cm_disconnect(&pp.a, pp.now, &pp.out), 0);
	only_mad(&pp.out, DROCE_CM_ATTR_DREQ, &m);
	memcpy(dreq, pp.out.mads[0], DROCE_CM_MAD_LEN);
	for (i = 0; i < RETRIES; i++) {
		droce_cm_timer(&pp.a, pp.a.deadline_ns - 1, &pp.out);
		no_mad(&pp.out);
		pp.now = pp.a.deadline_ns;
		droce_cm_timer(&pp.a, pp.now, &pp.out);
		CHECK_EQ_U64(pp.out.nmads, 1);
		CHECK_MEM(pp.out.mads[0], dreq, DROCE_CM_MAD_LEN);
		CHECK_EQ_U64(pp.out.deadline_ns, pp.now + droce_cm_time_ns(REMOTE_RT));
	}
	pp.now = pp.a.deadline_ns;
	droce_cm_timer(&pp.a, pp.now, &pp.out);
	no_mad(&pp.out);
	CHECK_EQ_U64(pp.out.event, DROCE_CM_EVENT_DISCONNECTED);
	check_state(&pp.a, DROCE_CM_STATE_TIMEWAIT);
	CHECK_EQ_U64(pp.out.deadline_ns, pp.now + droce_cm_time_ns(ACK_TO));

	/* The last DREQ does reach p; its DREP is lost, so the duplicate gets another. */
	deliver(&pp, &pp.p, dreq);
	only_mad(&pp.out, DROCE_CM_ATTR_DREP, &m);
	check_state(&pp.p, DROCE_CM_STATE_TIMEWAIT);
	{
		uint8_t drep[DROCE_CM_MAD_LEN];
		uint64_t deadline = pp.p.deadline_ns;

		memcpy(drep, pp.out.mads[0], DROCE_CM_MAD_LEN);
		pp.now += 10;
		deliver(&pp, &pp.p, dreq);
		CHECK(!pp.out.ignored);
		CHECK_EQ_U64(pp.out.event, DROCE_CM_EVENT_NONE);
		CHECK_EQ_U64(pp.out.nmads, 1);
		CHECK_MEM(pp.out.mads[0], drep, DROCE_CM_MAD_LEN);
		check_state(&pp.p, DROCE_CM_STATE_TIMEWAIT);
		/* Answering a duplicate does not restart the timewait. */
		CHECK_EQ_U64(pp.p.deadline_ns, deadline);
		/* a, in timewait too, drops the DREP. */
		deliver(&pp, &pp.a, drep);
		CHECK(pp.out.ignored);
		check_state(&pp.a, DROCE_CM_STATE_TIMEWAIT);
	}
}

DROCE_TEST(simultaneous_disconnect)
{
	struct pair pp;
	uint8_t dreq_a[DROCE_CM_MAD_LEN], dreq_p[DROCE_CM_MAD_LEN];
	uint8_t drep_a[DROCE_CM_MAD_LEN];

	connect_pair(&pp);
	deliver(&pp, &pp.p, pp.rtu);
	CHECK_EQ_I64(droce_cm_disconnect(&pp.a, pp.now, &pp.out), 0);
	memcpy(dreq_a, pp.out.mads[0], DROCE_CM_MAD_LEN);
	CHECK_EQ_I64(droce_cm_disconnect(&pp.p, pp.now, &pp.out), 0);
	memcpy(dreq_p, pp.out.mads[0], DROCE_CM_MAD_LEN);
	deliver(&pp, &pp.a, dreq_p);
	CHECK_EQ_U64(pp.out.event, DROCE_CM_EVENT_DISCONNECTED);
	CHECK_EQ_U64(pp.out.nmads, 1);
	memcpy(drep_a, pp.out.mads[0], DROCE_CM_MAD_LEN);
	check_state(&pp.a, DROCE_CM_STATE_TIMEWAIT);
	deliver(&pp, &pp.p, dreq_a);
	CHECK_EQ_U64(pp.out.event, DROCE_CM_EVENT_DISCONNECTED);
	check_state(&pp.p, DROCE_CM_STATE_TIMEWAIT);
	deliver(&pp, &pp.p, drep_a);
	CHECK(pp.out.ignored);
	CHECK_EQ_U64(pp.out.event, DROCE_CM_EVENT_NONE);
}

DROCE_TEST(calls_in_the_wrong_state)
{
	struct pair pp;
	struct droce_cm_req req;
	struct droce_cm_rep rep;
	struct droce_cm_conn before;

	make_req(&req);
	make_rep(&rep);
	reach(&pp, DROCE_CM_STATE_REQ_SENT);
	before = pp.a;
	CHECK_EQ_I64(droce_cm_connect(&pp.a, &req, pp.now, &pp.out), -EINVAL);
	CHECK_EQ_I64(droce_cm_accept(&pp.a, &rep, pp.now, &pp.out), -EINVAL);
	CHECK_EQ_I64(droce_cm_rtu(&pp.a, pp.now, &pp.out), -EINVAL);
	CHECK_EQ_I64(droce_cm_mra(&pp.a, 1, pp.now, &pp.out), -EINVAL);
	CHECK_EQ_I64(droce_cm_reject(&pp.a, 1, pp.now, &pp.out), -EINVAL);
	CHECK_EQ_I64(droce_cm_disconnect(&pp.a, pp.now, &pp.out), -EINVAL);
	no_mad(&pp.out);
	CHECK(memcmp(&before, &pp.a, sizeof(before)) == 0);
	reach(&pp, DROCE_CM_STATE_ESTABLISHED);
	CHECK_EQ_I64(droce_cm_reject(&pp.a, 1, pp.now, &pp.out), -EINVAL);
	CHECK_EQ_I64(droce_cm_rtu(&pp.a, pp.now, &pp.out), -EINVAL);
	check_state(&pp.a, DROCE_CM_STATE_ESTABLISHED);
}

/*
 * The state table's inputs that do something, as doc/cm.md gives them: every other
 * (state, attribute) pair must be dropped with nothing changed but the counter.
 * MRA is taken only when it names the message the state waits on.
 */
static bool
takes(enum droce_cm_state s, bool active, uint16_t attr, uint8_t mraed)
{
	switch (attr) {
	case DROCE_CM_ATTR_REQ:
		return s == DROCE_CM_STATE_IDLE ||
		       (!active && (s == DROCE_CM_STATE_MRA_REQ_SENT ||
				    s == DROCE_CM_STATE_REP_SENT ||
				    s == DROCE_CM_STATE_MRA_REP_RCVD));
	case DROCE_CM_ATTR_MRA:
		return (s == DROCE_CM_STATE_REQ_SENT && mraed == DROCE_CM_MSG_REQ) ||
		       (s == DROCE_CM_STATE_REP_SENT && mraed == DROCE_CM_MSG_REP);
	case DROCE_CM_ATTR_REJ:
		return s != DROCE_CM_STATE_IDLE && s != DROCE_CM_STATE_TIMEWAIT &&
		       s != DROCE_CM_STATE_SIDR_REQ_SENT && s != DROCE_CM_STATE_SIDR_REQ_RCVD;
	case DROCE_CM_ATTR_REP:
		return s == DROCE_CM_STATE_REQ_SENT || s == DROCE_CM_STATE_MRA_REQ_RCVD ||
		       (active && (s == DROCE_CM_STATE_MRA_REP_SENT ||
				   s == DROCE_CM_STATE_ESTABLISHED));
	case DROCE_CM_ATTR_RTU:
		return s == DROCE_CM_STATE_REP_SENT || s == DROCE_CM_STATE_MRA_REP_RCVD;
	case DROCE_CM_ATTR_DREQ:
		return s == DROCE_CM_STATE_REP_SENT || s == DROCE_CM_STATE_MRA_REP_RCVD ||
		       s == DROCE_CM_STATE_ESTABLISHED || s == DROCE_CM_STATE_DREQ_SENT ||
		       s == DROCE_CM_STATE_TIMEWAIT;
	case DROCE_CM_ATTR_DREP:
		return s == DROCE_CM_STATE_DREQ_SENT;
	case DROCE_CM_ATTR_SIDR_REQ:
		return s == DROCE_CM_STATE_IDLE;
	case DROCE_CM_ATTR_SIDR_REP:
		return s == DROCE_CM_STATE_SIDR_REQ_SENT;
	default:
		return false;
	}
}

DROCE_TEST(every_other_input_dropped)
{
	static const uint16_t attrs[] = {
		0x0010, 0x0011, 0x0012, 0x0013, 0x0014, 0x0015, 0x0016, 0x0017, 0x0018,
	};
	struct pair pp;
	struct droce_cm_msg m;
	struct droce_cm_conn before;
	uint8_t mad[DROCE_CM_MAD_LEN];
	unsigned int st, i, mraed, both, ndropped = 0, ntaken = 0;

	for (st = 0; st < DROCE_CM_STATE_COUNT; st++) {
		/* ESTABLISHED is reached by both ends, which take different input. */
		for (both = 0; both < (st == DROCE_CM_STATE_ESTABLISHED ? 2u : 1u); both++) {
			for (i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
				/* Only an MRA has a Message MRAed to vary. */
				for (mraed = 0; mraed < (attrs[i] == DROCE_CM_ATTR_MRA ? 2u : 1u);
				     mraed++) {
					struct droce_cm_conn *c = reach(&pp, st);

					if (both) {
						step(&pp, S_GET_RTU);
						c = &pp.p;
					}
					droce_test_ctx("%s %s %s mraed %u",
						       c->active ? "active" : "passive",
						       droce_cm_state_name(st),
						       droce_cm_attr_name(attrs[i]), mraed);
					peer_msg(c, attrs[i], &m);
					if (attrs[i] == DROCE_CM_ATTR_MRA)
						m.mra.message_mraed = (uint8_t)mraed;
					CHECK_EQ_I64(droce_cm_mad_build(&m, mad), 0);
					before = *c;
					pp.now += 7;
					deliver(&pp, c, mad);
					if (takes(st, c->active, attrs[i], (uint8_t)mraed)) {
						CHECK(!pp.out.ignored);
						CHECK_EQ_U64(c->ignored, before.ignored);
						ntaken++;
						continue;
					}
					CHECK(pp.out.ignored);
					CHECK_EQ_U64(pp.out.event, DROCE_CM_EVENT_NONE);
					no_mad(&pp.out);
					CHECK_EQ_U64(pp.out.deadline_ns, before.deadline_ns);
					before.ignored++;
					CHECK(memcmp(&before, c, sizeof(before)) == 0);
					ndropped++;
				}
			}
		}
	}
	/* 15 (state, end) rows, 9 attributes, MRA both ways: 150 inputs. */
	CHECK_EQ_U64(ntaken, 32);
	CHECK_EQ_U64(ndropped, 118);
}

DROCE_TEST(wrong_ids_dropped)
{
	static const uint16_t attrs[] = {
		DROCE_CM_ATTR_REJ, DROCE_CM_ATTR_RTU, DROCE_CM_ATTR_DREQ,
	};
	struct pair pp;
	struct droce_cm_msg m;
	struct droce_cm_conn *c;
	unsigned int i, which;

	for (i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		for (which = 0; which < 2; which++) {
			droce_test_ctx("%s which %u", droce_cm_attr_name(attrs[i]), which);
			c = reach(&pp, DROCE_CM_STATE_REP_SENT);
			peer_msg(c, attrs[i], &m);
			/* Local then Remote Comm ID lead every one of these bodies. */
			if (which == 0)
				m.rtu.local_comm_id ^= 0x100;
			else
				m.rtu.remote_comm_id ^= 0x100;
			droce_cm_input(c, &m, pp.now, &pp.out);
			CHECK(pp.out.ignored);
			check_state(c, DROCE_CM_STATE_REP_SENT);
		}
	}
}

DROCE_TEST(sidr_exchange)
{
	struct pair pp;
	struct droce_cm_msg m;
	struct droce_cm_sidr_rep rep;

	pair_init(&pp);
	sidr_start(&pp, false);
	only_mad(&pp.out, DROCE_CM_ATTR_SIDR_REQ, &m);
	CHECK_EQ_U64(m.sidr_req.request_id, A_ID);
	CHECK_EQ_U64(m.sidr_req.private_data[0], 0xEF);
	CHECK_EQ_U64(m.tid, A_TID);
	CHECK_EQ_U64(pp.out.deadline_ns, T0 + droce_cm_time_ns(SIDR_TO));
	deliver(&pp, &pp.p, pp.last);
	CHECK_EQ_U64(pp.out.event, DROCE_CM_EVENT_SIDR_REQ_RECEIVED);
	no_mad(&pp.out);
	CHECK_EQ_U64(pp.p.remote_id, A_ID);
	/* A duplicate while the application thinks is dropped. */
	deliver(&pp, &pp.p, pp.last);
	CHECK(pp.out.ignored);
	memset(&rep, 0, sizeof(rep));
	rep.qpn = P_QPN;
	rep.qkey = 0x11111111;
	rep.service_id = m.sidr_req.service_id;
	CHECK_EQ_I64(droce_cm_sidr_rep(&pp.p, &rep, pp.now, &pp.out), 0);
	only_mad(&pp.out, DROCE_CM_ATTR_SIDR_REP, &m);
	CHECK_EQ_U64(m.sidr_rep.request_id, A_ID);
	CHECK_EQ_U64(m.sidr_rep.qpn, P_QPN);
	CHECK_EQ_U64(m.tid, A_TID);
	check_state(&pp.p, DROCE_CM_STATE_IDLE);
	memcpy(pp.last, pp.out.mads[0], DROCE_CM_MAD_LEN);
	deliver(&pp, &pp.a, pp.last);
	CHECK_EQ_U64(pp.out.event, DROCE_CM_EVENT_SIDR_REP_RECEIVED);
	check_state(&pp.a, DROCE_CM_STATE_IDLE);
	CHECK_EQ_U64(pp.out.deadline_ns, 0);
	/* A late duplicate SIDR_REP finds nothing to answer. */
	deliver(&pp, &pp.a, pp.last);
	CHECK(pp.out.ignored);
	/* Calls in the wrong state. */
	CHECK_EQ_I64(droce_cm_sidr_rep(&pp.a, &rep, pp.now, &pp.out), -EINVAL);
	sidr_start(&pp, false);
	CHECK_EQ_I64(droce_cm_sidr_req(&pp.a, &m.sidr_req, 1, 1, pp.now, &pp.out), -EINVAL);
}

DROCE_TEST(lost_sidr_req_retransmitted_then_unreachable)
{
	struct pair pp;
	uint8_t req[DROCE_CM_MAD_LEN];
	unsigned int i;

	pair_init(&pp);
	sidr_start(&pp, false);
	memcpy(req, pp.last, DROCE_CM_MAD_LEN);
	for (i = 0; i < RETRIES; i++) {
		droce_cm_timer(&pp.a, pp.a.deadline_ns - 1, &pp.out);
		no_mad(&pp.out);
		pp.now = pp.a.deadline_ns;
		droce_cm_timer(&pp.a, pp.now, &pp.out);
		CHECK_EQ_U64(pp.out.nmads, 1);
		CHECK_MEM(pp.out.mads[0], req, DROCE_CM_MAD_LEN);
		CHECK_EQ_U64(pp.out.deadline_ns, pp.now + droce_cm_time_ns(SIDR_TO));
	}
	pp.now = pp.a.deadline_ns;
	droce_cm_timer(&pp.a, pp.now, &pp.out);
	no_mad(&pp.out);
	CHECK_EQ_U64(pp.out.event, DROCE_CM_EVENT_UNREACHABLE);
	check_state(&pp.a, DROCE_CM_STATE_IDLE);
	CHECK_EQ_U64(pp.out.deadline_ns, 0);
}
