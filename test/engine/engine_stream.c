/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "droce_test.h"
#include "engine_stream.h"

#define BIG_EVERY	4000		/* a 1 MiB message every this many per stream */

/* The content of message seq of stream q at byte i: any change shows. */
static inline uint8_t
pattern(uint32_t q, uint32_t seq, uint32_t i)
{
	uint32_t x = (q * 0x9E3779B1u) ^ (seq * 0x85EBCA77u) ^ (i * 0xC2B2AE3Du);

	return (uint8_t)(x ^ (x >> 15) ^ (i >> 8));
}

uint32_t
es_msg_size(uint32_t q, uint32_t seq)
{
	uint64_t r = ((uint64_t)q << 32 | seq) * 0x9E3779B97F4A7C15ull;
	uint32_t pick = (uint32_t)(r >> 40) % 1000;

	r ^= r >> 29;
	if (seq % BIG_EVERY == BIG_EVERY / 2)
		return ES_MAX_MSG;
	if (pick < 800)
		return (uint32_t)(r % 513);		/* 0..512 */
	if (pick < 980)
		return 513 + (uint32_t)(r % (32768 - 513));
	return 32768 + (uint32_t)(r % (262144 - 32768));
}

void
es_init(struct es_stream *s, uint32_t q, uint32_t total, struct tc_qp *tx, struct tc_qp *rx,
	uint32_t peer_qpn)
{
	memset(s, 0, sizeof(*s));
	s->q = q;
	s->total = total;
	s->tx = tx;
	s->rx = rx;
	s->peer_qpn = peer_qpn;
	if (tx != NULL)
		s->smr = tc_mr_reg(tx->h, (uint64_t)ES_SLOTS * ES_MAX_MSG, IBV_ACCESS_LOCAL_WRITE);
	if (rx != NULL)
		s->rmr = tc_mr_reg(rx->h, (uint64_t)ES_SLOTS * ES_MAX_MSG, IBV_ACCESS_LOCAL_WRITE);
}

void
es_open_pairs(struct es_stream *st, unsigned int n, uint32_t total, struct tc_host *a,
	      struct tc_host *b, struct tc_qp_init *in, struct tc_cq *scq, struct tc_cq *rcq,
	      struct tc_path *path, uint32_t psn_a0, uint32_t psn_a_step)
{
	unsigned int q;

	for (q = 0; q < n; q++) {
		struct tc_qp *tx, *rx;

		in->scq = in->rcq = scq;
		tx = tc_qp_create(a, in);
		in->scq = in->rcq = rcq;
		rx = tc_qp_create(b, in);
		path->psn_a = (psn_a0 + q * psn_a_step) & DROCE_PSN_MASK;
		path->psn_b = q * 1000;
		tc_connect(tx, rx, path);
		es_init(&st[q], q, total, tx, rx, tx->qpn);
	}
}

static bool
es_done(const struct es_stream *s)
{
	return (s->tx == NULL || s->send_done == s->total) &&
	       (s->rx == NULL || s->received == s->total);
}

static void
es_post(struct es_stream *s)
{
	/* Receives first, each exactly as long as its message. */
	while (s->rx != NULL && s->posted_rx < s->total && s->posted_rx - s->received < ES_SLOTS) {
		CHECK_EQ_I64(tc_recv(s->rx, s->posted_rx, s->rmr,
				     (size_t)(s->posted_rx % ES_SLOTS) * ES_MAX_MSG,
				     es_msg_size(s->q, s->posted_rx)), 0);
		s->posted_rx++;
	}
	while (s->tx != NULL && s->sent < s->total && s->sent - s->send_done < ES_SLOTS) {
		uint8_t *p = s->smr->buf + (size_t)(s->sent % ES_SLOTS) * ES_MAX_MSG;
		uint32_t n = es_msg_size(s->q, s->sent), i;
		/* Every third WR and the last are signaled; the others complete silently. */
		unsigned int flags = (s->sent % 3 == 0 || s->sent + 1 == s->total) ?
				     IBV_SEND_SIGNALED : 0;

		for (i = 0; i < n; i++)
			p[i] = pattern(s->q, s->sent, i);
		CHECK_EQ_I64(tc_send(s->tx, (uint64_t)s->q << 32 | s->sent, s->smr,
				     (size_t)(s->sent % ES_SLOTS) * ES_MAX_MSG, n, flags), 0);
		s->sent++;
	}
}

static void
es_recv_wc(struct es_stream *s, const struct ibv_wc *wc)
{
	uint32_t seq = s->received, i;
	const uint8_t *p = s->rmr->buf + (size_t)(seq % ES_SLOTS) * ES_MAX_MSG;

	droce_test_ctx("recv stream %u msg %u", s->q, seq);
	CHECK_EQ_U64(wc->status, IBV_WC_SUCCESS);
	/* In order and exactly once: receive WQEs complete in post order. */
	CHECK_EQ_U64(wc->wr_id, seq);
	CHECK_EQ_U64(wc->opcode, IBV_WC_RECV);
	CHECK_EQ_U64(wc->byte_len, es_msg_size(s->q, seq));
	CHECK_EQ_U64(wc->src_qp, s->peer_qpn);
	CHECK_EQ_U64(wc->wc_flags, 0);
	for (i = 0; i < wc->byte_len; i++) {
		if (p[i] != pattern(s->q, seq, i))
			droce_test_fail(__FILE__, __LINE__, "byte %u of %u is %#x, expected %#x",
					i, wc->byte_len, p[i], pattern(s->q, seq, i));
	}
	s->received++;
}

static void
es_send_wc(struct es_stream *s, const struct ibv_wc *wc)
{
	uint32_t seq = (uint32_t)wc->wr_id;

	droce_test_ctx("send stream %u completion of msg %u", s->q, seq);
	CHECK_EQ_U64(wc->status, IBV_WC_SUCCESS);
	CHECK_EQ_U64(wc->opcode, IBV_WC_SEND);
	CHECK_EQ_U64(wc->qp_num, s->tx->qpn);
	/* Signaled WRs complete in order; the unsignaled before them are done too. */
	CHECK(seq >= s->send_done && seq < s->sent);
	CHECK(seq % 3 == 0 || seq + 1 == s->total);
	s->send_done = seq + 1;
}

static struct es_stream *
es_find(struct es_stream *st, unsigned int n, uint32_t qpn, bool rx)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		const struct tc_qp *qp = rx ? st[i].rx : st[i].tx;

		if (qp != NULL && qp->qpn == qpn)
			return &st[i];
	}
	droce_test_fail(__FILE__, __LINE__, "completion for unknown QP %u", qpn);
}

void
es_run(struct es_stream *st, unsigned int n, struct tc_cq *scq, struct tc_cq *rcq,
       unsigned int timeout_s)
{
	time_t end = time(NULL) + timeout_s;
	struct ibv_wc wc[64];
	unsigned int done = 0, i;
	int got, k;

	while (done < n) {
		done = 0;
		for (i = 0; i < n; i++) {
			es_post(&st[i]);
			done += es_done(&st[i]);
		}
		got = 0;
		if (rcq != NULL) {
			k = tc_poll(rcq, RTE_DIM(wc), wc);
			CHECK(k >= 0);
			for (got = 0; got < k; got++)
				es_recv_wc(es_find(st, n, wc[got].qp_num, true), &wc[got]);
		}
		if (scq != NULL) {
			k = tc_poll(scq, RTE_DIM(wc), wc);
			CHECK(k >= 0);
			for (i = 0; i < (unsigned int)k; i++)
				es_send_wc(es_find(st, n, wc[i].qp_num, false), &wc[i]);
			got += k;
		}
		if (got == 0) {
			if (time(NULL) > end)
				droce_test_fail(__FILE__, __LINE__, "streams stuck: %u of %u done",
						done, n);
			usleep(10);
		}
	}
}
