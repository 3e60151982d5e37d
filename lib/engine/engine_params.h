/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ENGINE_PARAMS_H
#define ENGINE_PARAMS_H

/*
 * lib/engine's tunable parameters and internal limits: bursts, ring and buffer sizes, the
 * requester's window and quantum, early retransmission's timing, the protocol's bounds.
 * They are one kind of thing, read together when the engine is tuned, and kept apart from
 * the objects whose arrays they size; the limits an application sees are droce_engine.h's.
 */

#include "droce_engine.h"

#define ENGINE_BURST		32	/* rx burst, handoff dequeue, doorbell batch */
#define ENGINE_CTL_SPIN_US	50	/* control thread: spin this long waiting for an engine */
#define ENGINE_TX_MAX		256	/* packets an engine holds for the port */
#define ENGINE_REQ_QUANTUM	16	/* packets one QP sends before the next QP's turn */
#define ENGINE_WINDOW		256	/* request packets in flight per QP */
/*
 * Early retransmission (engine_timer.c): an ACK may be this late without one; at most
 * this many per una, each after twice the wait of the one before.
 */
#define ENGINE_EARLY_RTO_MIN_US	250
#define ENGINE_EARLY_MAX	6
#define ENGINE_EARLY_RTO_INIT_US	2000
#define ENGINE_EARLY_SHIFT_MAX	6	/* the wait backs off to 64x at most */
#define ENGINE_ACKREQ_EVERY	16	/* AckReq at least this often in a long message */
#define ENGINE_CMD_RING		64
#define ENGINE_HANDOFF_RING	4096
#define ENGINE_RNR_TIMER_INF	7	/* rnr_retry 7: retry for ever (IB 9.7.5.2.8) */
#define ENGINE_MSG_MAX		(1u << 31)	/* longest message and RETH length */
#define ENGINE_ATOMIC_LEN	8	/* an atomic's operands, target and local buffer (9.4.5) */
/* Responder resources kept per QP: max_dest_rd_atomic's largest value, a power of two. */
#define ENGINE_RD_RES		DROCE_ENGINE_MAX_DEST_RD_ATOMIC

#endif /* ENGINE_PARAMS_H */
