/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ENGINE_STATES_H
#define ENGINE_STATES_H

/*
 * The state machines of the responder (engine_resp.c) and the completer (engine_comp.c):
 * each an X-macro list, the enum it makes and the table of names it makes, so that logs
 * and droce_engine_qp_print() name a state as the code does. A QP keeps where each machine
 * stands (struct droce_engine_qp, engine_objects.h); adding a state is adding a row here.
 */

/* ---- Responder (engine_resp.c) ---- */

/*
 * The responder between two packets of a QP (9.8.3.2): no message in progress, or inside a
 * SEND or an RDMA WRITE (its FIRST accepted, its LAST not yet), which decides what the next
 * opcode may be. A receive WQE in hand (resp.have_wqe) is a resource, not a state: UC keeps
 * one taken for a message a gap dropped, for the next message.
 */
#define RESP_STATES(X) \
	X(IDLE, "idle") \
	X(SEND, "in a SEND") \
	X(WRITE, "in an RDMA WRITE")

enum resp_state {
#define RESP_STATE_ENUM(name, desc) RESP_ST_##name,
	RESP_STATES(RESP_STATE_ENUM)
#undef RESP_STATE_ENUM
};

/* "in a SEND": the responder's state, for logs and debug output. */
static inline const char *
resp_state_name(unsigned int state)
{
	static const char *const names[] = {
#define RESP_STATE_NAME(name, desc) desc,
		RESP_STATES(RESP_STATE_NAME)
#undef RESP_STATE_NAME
	};

	return state < sizeof(names) / sizeof(names[0]) ? names[state] : "?";
}

/* The steps of one RC request through the responder (9.7.5.1, resp_rc). */
#define RESP_STEPS(X) \
	X(CHECK_PSN, "check PSN") \
	X(DUPLICATE, "duplicate") \
	X(OUT_OF_SEQ, "out of sequence") \
	X(CHECK_OP, "check opcode") \
	X(WRITE, "WRITE") \
	X(READ, "READ") \
	X(ATOMIC, "atomic") \
	X(FLUSH, "FLUSH") \
	X(ATOMIC_WRITE, "ATOMIC WRITE") \
	X(SEND, "SEND") \
	X(DONE, "done")

enum resp_step {
#define RESP_STEP_ENUM(name, desc) RESP_STEP_##name,
	RESP_STEPS(RESP_STEP_ENUM)
#undef RESP_STEP_ENUM
};

/* "check PSN": a responder step, for logs and debug output. */
static inline const char *
resp_step_name(unsigned int step)
{
	static const char *const names[] = {
#define RESP_STEP_NAME(name, desc) desc,
		RESP_STEPS(RESP_STEP_NAME)
#undef RESP_STEP_NAME
	};

	return step < sizeof(names) / sizeof(names[0]) ? names[step] : "?";
}

/* ---- Completer (engine_comp.c) ---- */

/* The completer's states over one response (comp_rx): its kind, then what it does. */
#define COMP_STATES(X) \
	X(CLASSIFY, "classify") \
	X(READ_RESP, "READ response") \
	X(ATOMIC_ACK, "atomic acknowledge") \
	X(ACK, "ACK") \
	X(RNR_NAK, "RNR NAK") \
	X(SEQ_NAK, "PSN sequence error NAK") \
	X(ERR_NAK, "error NAK") \
	X(STALE, "stale") \
	X(BAD, "bad opcode") \
	X(ERROR, "error") \
	X(DONE, "done")

enum comp_state {
#define COMP_STATE_ENUM(name, desc) COMP_ST_##name,
	COMP_STATES(COMP_STATE_ENUM)
#undef COMP_STATE_ENUM
};

/* "RNR NAK": a completer state, for logs and debug output. */
static inline const char *
comp_state_name(unsigned int state)
{
	static const char *const names[] = {
#define COMP_STATE_NAME(name, desc) desc,
		COMP_STATES(COMP_STATE_NAME)
#undef COMP_STATE_NAME
	};

	return state < sizeof(names) / sizeof(names[0]) ? names[state] : "?";
}

#endif /* ENGINE_STATES_H */
