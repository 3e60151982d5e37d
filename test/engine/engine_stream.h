/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ENGINE_STREAM_H
#define ENGINE_STREAM_H

/*
 * RC message streams for the loss tests: message q/seq has a size and content that both
 * ends compute, so a receiver checks order, length and every byte on its own, in one
 * process or across two. Sizes are mostly small, some span many MTUs, a few are 1 MiB.
 */

#include <stdint.h>

#include "engine_client.h"

#define ES_SLOTS	8		/* messages in flight per stream */
#define ES_MAX_MSG	(1u << 20)

struct es_stream {
	uint32_t q;			/* stream number: part of every byte */
	uint32_t total;			/* messages to move */
	struct tc_qp *tx, *rx;		/* sending and receiving QP; either may be NULL */
	struct tc_mr *smr, *rmr;	/* ES_SLOTS x ES_MAX_MSG each */
	uint32_t peer_qpn;		/* src_qp every receive must show */
	uint32_t sent, send_done;
	uint32_t posted_rx, received;
};

uint32_t es_msg_size(uint32_t q, uint32_t seq);

/* Registers the buffers the stream's ends need on their hosts. */
void es_init(struct es_stream *s, uint32_t q, uint32_t total, struct tc_qp *tx,
	     struct tc_qp *rx, uint32_t peer_qpn);

/*
 * n RC streams a -> b of total messages each: QP pairs as in (sends on scq of a, receives
 * on rcq of b), connected by path with stream q's PSNs psn_a0 + q * psn_a_step on a and
 * q * 1000 on b, each stream's buffers registered.
 */
void es_open_pairs(struct es_stream *st, unsigned int n, uint32_t total, struct tc_host *a,
		   struct tc_host *b, struct tc_qp_init *in, struct tc_cq *scq, struct tc_cq *rcq,
		   struct tc_path *path, uint32_t psn_a0, uint32_t psn_a_step);

/*
 * Moves every stream to the end: posts receives and sends, polls scq and rcq (either may
 * be NULL), checks every completion and every received byte. Fails the test on any
 * error completion, reordering, loss, duplicate or corrupt byte, or after timeout_s.
 */
void es_run(struct es_stream *st, unsigned int n, struct tc_cq *scq, struct tc_cq *rcq,
	    unsigned int timeout_s);

#endif /* ENGINE_STREAM_H */
