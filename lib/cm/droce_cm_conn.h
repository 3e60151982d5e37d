/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef DROCE_CM_CONN_H
#define DROCE_CM_CONN_H

/*
 * The IB CM connection state machine (IB spec vol. 1 ch. 12.6, 12.9) for one end of one
 * RC/UC connection, as Linux's drivers/infiniband/core/cm.c behaves. A pure library: no
 * sockets, no threads, no clock. The caller passes the time in, sends the MADs each call
 * hands back in a struct droce_cm_out, tells its application the event, and calls
 * droce_cm_timer() when the returned deadline passes. Finding the connection an
 * incoming MAD belongs to is the caller's job (droce_cm_msg_ids() says which comm IDs
 * a MAD carries). The same struct runs one SIDR exchange (12.11), UD's service ID
 * resolution. Not here yet: LAP/APR, DREQ_RCVD as a resting state.
 */

#include <stdbool.h>
#include <stdint.h>

#include "droce_cm.h"

/* REJ reasons droce sends or acts on (IB spec table 109, Linux's enum ib_cm_rej_reason). */
#define DROCE_CM_REJ_TIMEOUT		4
#define DROCE_CM_REJ_INVALID_COMM_ID	6	/* a REP for a connection we do not hold */
#define DROCE_CM_REJ_INVALID_SERVICE_ID	8	/* nobody listens on the REQ's service ID */
#define DROCE_CM_REJ_STALE_CONN		10
#define DROCE_CM_REJ_CONSUMER_DEFINED	28

/* SIDR_REP status (table 121) droce sends: no such service, the service refused. */
#define DROCE_CM_SIDR_UNSUPPORTED	1
#define DROCE_CM_SIDR_REJECT		2

/* REJ's Message REJected and MRA's Message MRAed (tables 107, 108). */
#define DROCE_CM_MSG_REQ		0
#define DROCE_CM_MSG_REP		1

/* X(NAME): the states, in Linux's enum ib_cm_state order (less the ones not kept). */
#define DROCE_CM_STATE_LIST(X) \
	X(IDLE) \
	X(REQ_SENT) \
	X(REQ_RCVD) \
	X(MRA_REQ_SENT) \
	X(MRA_REQ_RCVD) \
	X(REP_SENT) \
	X(REP_RCVD) \
	X(MRA_REP_SENT) \
	X(MRA_REP_RCVD) \
	X(ESTABLISHED) \
	X(DREQ_SENT) \
	X(TIMEWAIT) \
	X(SIDR_REQ_SENT) \
	X(SIDR_REQ_RCVD)

enum droce_cm_state {
#define DROCE_CM_STATE_ENUM(name) DROCE_CM_STATE_##name,
	DROCE_CM_STATE_LIST(DROCE_CM_STATE_ENUM)
#undef DROCE_CM_STATE_ENUM
	DROCE_CM_STATE_COUNT
};

/* What the application is told. */
#define DROCE_CM_EVENT_LIST(X) \
	X(NONE) \
	X(REQ_RECEIVED)		/* passive: accept, reject or MRA it */ \
	X(REP_RECEIVED)		/* active: RTU, reject or MRA it */ \
	X(ESTABLISHED)		/* passive: the RTU came */ \
	X(REJECTED)		/* the peer sent a REJ: out.rej_reason */ \
	X(DISCONNECTED)		/* DREQ or DREP received, or the DREQ's retries ran out */ \
	X(TIMEWAIT_EXIT)	/* back to IDLE: the comm ID and QP may be reused */ \
	X(UNREACHABLE)		/* REQ, REP or SIDR_REQ retries ran out */ \
	X(SIDR_REQ_RECEIVED)	/* answer it with droce_cm_sidr_rep() */ \
	X(SIDR_REP_RECEIVED)	/* the answer to droce_cm_sidr_req() */

enum droce_cm_event {
#define DROCE_CM_EVENT_ENUM(name) DROCE_CM_EVENT_##name,
	DROCE_CM_EVENT_LIST(DROCE_CM_EVENT_ENUM)
#undef DROCE_CM_EVENT_ENUM
	DROCE_CM_EVENT_COUNT
};

/* One connection end. Zero it, then droce_cm_conn_init(). Fields are read-only to callers. */
struct droce_cm_conn {
	enum droce_cm_state state;
	bool active;			/* sent the REQ */
	uint32_t local_id;		/* local communication ID; a SIDR_REQ's Request ID */
	uint32_t remote_id;		/* the peer's, once known; the Request ID received */
	uint32_t remote_qpn;		/* for the DREQ */
	uint64_t tid;			/* of the REQ: REP, RTU, MRA and REJ reuse it */
	uint64_t next_tid;		/* for the next request this end starts */
	uint64_t peer_timeout_ns;	/* how long the peer may take to answer */
	uint64_t timeout_ns;		/* the current wait between retransmissions */
	uint64_t timewait_ns;
	uint64_t deadline_ns;		/* 0: no timer */
	uint8_t max_retries;		/* the REQ's Max CM Retries, or sidr_req's */
	uint8_t retries_left;
	uint8_t sent[DROCE_CM_MAD_LEN];	/* the last MAD sent, for retransmission and dups */
	uint64_t ignored;		/* MADs dropped in a state that takes no such input */
};

#define DROCE_CM_OUT_MADS		1

/* What the caller must do after a call. */
struct droce_cm_out {
	unsigned int nmads;		/* MADs to send to the peer's QP1, in order */
	uint8_t mads[DROCE_CM_OUT_MADS][DROCE_CM_MAD_LEN];
	enum droce_cm_event event;
	uint16_t rej_reason;		/* with DROCE_CM_EVENT_REJECTED */
	bool ignored;			/* the input was dropped (conn->ignored counts it) */
	uint64_t deadline_ns;		/* call droce_cm_timer() then; 0: no timer */
};

const char *droce_cm_state_name(enum droce_cm_state s);
const char *droce_cm_event_name(enum droce_cm_event e);

/*
 * 4.096 us * 2^t, the CM's unit of time (Local/Remote CM Response Timeout, Service
 * Timeout, Local ACK Timeout), in ns; t is 5 bits.
 */
uint64_t droce_cm_time_ns(uint8_t t);

/*
 * The Local ACK Timeout (5 bits) of a path of packet lifetime packet_life_time through a CA
 * whose ACK delay is ca_ack_delay, both CM times: Linux's cm_ack_timeout(), which rdma_cm
 * puts in a REQ and uses for a QP's timeout (rxe: 15 and 18 give 19).
 */
uint8_t droce_cm_ack_timeout(uint8_t ca_ack_delay, uint8_t packet_life_time);

/* An IDLE connection end with this local communication ID; first_tid starts its TIDs. */
void droce_cm_conn_init(struct droce_cm_conn *c, uint32_t local_id, uint64_t first_tid);

/*
 * The communication IDs m carries: the sender's (*sender_id) and the receiver's
 * (*receiver_id, 0 in a REQ, which does not know it yet). A SIDR_REQ's Request ID is its
 * sender's; a SIDR_REP's is its receiver's (the sender's is then 0). -EINVAL for an
 * unknown attribute.
 */
int droce_cm_msg_ids(const struct droce_cm_msg *m, uint32_t *sender_id, uint32_t *receiver_id);

/*
 * The calls below return 0, or -EINVAL (and change nothing, out then empty) when the
 * connection is not in a state that allows the call. They fill *out from scratch.
 */

/* Active: IDLE -> REQ_SENT. req's local_comm_id is overwritten with c's. */
int droce_cm_connect(struct droce_cm_conn *c, const struct droce_cm_req *req, uint64_t now_ns,
		     struct droce_cm_out *out);
/* Passive, after REQ_RECEIVED: REQ_RCVD or MRA_REQ_SENT -> REP_SENT. The IDs are filled in. */
int droce_cm_accept(struct droce_cm_conn *c, const struct droce_cm_rep *rep, uint64_t now_ns,
		    struct droce_cm_out *out);
/* Active, after REP_RECEIVED: REP_RCVD or MRA_REP_SENT -> ESTABLISHED, sends the RTU. */
int droce_cm_rtu(struct droce_cm_conn *c, uint64_t now_ns, struct droce_cm_out *out);
/*
 * Asks the peer for more time (12.6.6): REQ_RCVD -> MRA_REQ_SENT or REP_RCVD ->
 * MRA_REP_SENT; service_timeout (5 bits) is how long it may take.
 */
int droce_cm_mra(struct droce_cm_conn *c, uint8_t service_timeout, uint64_t now_ns,
		 struct droce_cm_out *out);
/* Refuses the REQ (REQ_RCVD, MRA_REQ_SENT) or the REP (REP_RCVD, MRA_REP_SENT): -> IDLE. */
int droce_cm_reject(struct droce_cm_conn *c, uint16_t reason, uint64_t now_ns,
		    struct droce_cm_out *out);
/* ESTABLISHED -> DREQ_SENT. */
int droce_cm_disconnect(struct droce_cm_conn *c, uint64_t now_ns, struct droce_cm_out *out);
/*
 * IDLE -> SIDR_REQ_SENT; req's request_id is overwritten with c's local ID. SIDR_REQ
 * carries no timeout, so the caller gives the wait (a 5-bit CM time) and the retries.
 */
int droce_cm_sidr_req(struct droce_cm_conn *c, const struct droce_cm_sidr_req *req,
		      uint8_t timeout, uint8_t max_retries, uint64_t now_ns,
		      struct droce_cm_out *out);
/* After SIDR_REQ_RECEIVED: SIDR_REQ_RCVD -> IDLE, sends rep with the Request ID. */
int droce_cm_sidr_rep(struct droce_cm_conn *c, const struct droce_cm_sidr_rep *rep,
		      uint64_t now_ns, struct droce_cm_out *out);

/*
 * A parsed MAD the caller matched to c. A REQ (or SIDR_REQ) in IDLE makes c the passive
 * end. Input
 * the state takes no action on is dropped: out->ignored, c->ignored counts it, and
 * nothing changes.
 */
void droce_cm_input(struct droce_cm_conn *c, const struct droce_cm_msg *m, uint64_t now_ns,
		    struct droce_cm_out *out);

/* Retransmissions, their exhaustion and the end of TIMEWAIT; harmless when early. */
void droce_cm_timer(struct droce_cm_conn *c, uint64_t now_ns, struct droce_cm_out *out);

#endif /* DROCE_CM_CONN_H */
