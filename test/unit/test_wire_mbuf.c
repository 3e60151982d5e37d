/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * droce_wire_mbuf_segs over chains of struct rte_mbuf filled in by hand: DPDK's headers
 * only, no EAL, no mempool. Then a packet scattered over such a chain is parsed.
 */

#include <string.h>

#include <rte_mbuf.h>

#include "droce_test.h"
#include "droce_wire.h"
#include "droce_wire_mbuf.h"
#include "wire_test_util.h"

#define NMBUF		5
#define MBUF_BUF_LEN	2048
#define PAYLOAD_LEN	3001	/* spans several mbufs; odd, so the packet has a pad */

struct chain {
	struct rte_mbuf m[NMBUF];
	uint8_t buf[NMBUF][MBUF_BUF_LEN];
};

/*
 * Links the first n mbufs of c; mbuf i's data starts at data_off[i] and holds len[i]
 * bytes taken from src (when src is not NULL).
 */
static struct rte_mbuf *
chain_init(struct chain *c, unsigned int n, const uint16_t *data_off, const uint16_t *len,
	   const uint8_t *src)
{
	uint32_t pkt_len = 0;
	unsigned int i;

	memset(c->m, 0, sizeof(c->m));
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = &c->m[i];

		CHECK((uint32_t)data_off[i] + len[i] <= MBUF_BUF_LEN);
		m->buf_addr = c->buf[i];
		m->buf_len = MBUF_BUF_LEN;
		m->data_off = data_off[i];
		m->data_len = len[i];
		m->next = i + 1 < n ? &c->m[i + 1] : NULL;
		if (src != NULL)
			memcpy(c->buf[i] + data_off[i], src + pkt_len, len[i]);
		pkt_len += len[i];
	}
	c->m[0].nb_segs = (uint16_t)n;
	c->m[0].pkt_len = pkt_len;
	return &c->m[0];
}

DROCE_TEST(mbuf_single_segment)
{
	static const uint16_t off[] = { RTE_PKTMBUF_HEADROOM };
	static const uint16_t len[] = { 60 };
	struct chain c;
	struct droce_wire_seg segs[4];
	struct rte_mbuf *m = chain_init(&c, 1, off, len, NULL);

	CHECK_EQ_U64(droce_wire_mbuf_segs(m, segs, 4), 1);
	CHECK(segs[0].data == c.buf[0] + RTE_PKTMBUF_HEADROOM);
	CHECK_EQ_U64(segs[0].len, 60);
}

DROCE_TEST(mbuf_chain_segments)
{
	static const uint16_t off[NMBUF] = { RTE_PKTMBUF_HEADROOM, 0, 17, 1000, 1 };
	static const uint16_t len[NMBUF] = { 100, 0, 1, 1048, 2047 };
	struct droce_wire_seg segs[NMBUF];
	struct chain c;
	struct rte_mbuf *m = chain_init(&c, NMBUF, off, len, NULL);
	unsigned int i;

	CHECK_EQ_U64(droce_wire_mbuf_segs(m, segs, NMBUF), NMBUF);
	for (i = 0; i < NMBUF; i++) {
		droce_test_ctx("segment %u", i);
		CHECK(segs[i].data == c.buf[i] + off[i]);
		CHECK_EQ_U64(segs[i].len, len[i]);
	}
}

DROCE_TEST(mbuf_chain_too_long)
{
	static const uint16_t off[NMBUF] = { 0, 0, 0, 0, 0 };
	static const uint16_t len[NMBUF] = { 1, 2, 3, 4, 5 };
	struct droce_wire_seg segs[NMBUF];
	struct chain c;
	struct rte_mbuf *m = chain_init(&c, NMBUF, off, len, NULL);

	/* More segments than room: 0, the caller drops the packet. */
	CHECK_EQ_U64(droce_wire_mbuf_segs(m, segs, NMBUF - 1), 0);
	CHECK_EQ_U64(droce_wire_mbuf_segs(m, segs, 0), 0);
	CHECK_EQ_U64(droce_wire_mbuf_segs(m, segs, NMBUF), NMBUF);
	/* A shorter chain within the limit. */
	c.m[1].next = NULL;
	CHECK_EQ_U64(droce_wire_mbuf_segs(m, segs, 2), 2);
	CHECK_EQ_U64(droce_wire_mbuf_segs(NULL, segs, 2), 0);
}

/* Builds an IPv6 RC SEND ONLY with PAYLOAD_LEN bytes into pkt; returns its length. */
static uint32_t
build_packet(uint8_t *pkt, uint32_t cap, uint8_t *payload, struct droce_wire_hdrs *h)
{
	struct droce_wire_addr addr;
	struct droce_wire_tmpl tmpl;
	struct droce_wire_seg pay = { payload, PAYLOAD_LEN };
	int len;

	wt_random_addr(&addr, true, true);
	CHECK_EQ_I64(droce_wire_tmpl_init(&tmpl, &addr), 0);
	wt_random_hdrs(h, DROCE_OP_RC_SEND_ONLY);
	droce_test_rand_fill(payload, PAYLOAD_LEN);
	len = droce_wire_build(&tmpl, h, &pay, 1, pkt, cap);
	CHECK(len > 0);
	return (uint32_t)len;
}

DROCE_TEST(mbuf_parse_chain)
{
	uint8_t pkt[DROCE_WIRE_HDR_MAX + PAYLOAD_LEN + 8], payload[PAYLOAD_LEN];
	uint8_t copy[PAYLOAD_LEN];
	struct droce_wire_seg segs[NMBUF];
	struct droce_wire_hdrs h;
	struct droce_wire_pkt p;
	struct chain c;
	uint32_t len = build_packet(pkt, sizeof(pkt), payload, &h);
	uint32_t hdr_len = len - PAYLOAD_LEN - droce_wire_pad(PAYLOAD_LEN) - DROCE_ICRC_LEN;
	/* Headers and a little payload, an empty mbuf, a large one, a 1-byte one, the rest. */
	uint16_t off[NMBUF] = { RTE_PKTMBUF_HEADROOM, 64, 3, 0, 7 };
	uint16_t seg_len[NMBUF] = { (uint16_t)(hdr_len + 5), 0, 2000, 1, 0 };
	unsigned int n;

	seg_len[4] = (uint16_t)(len - seg_len[0] - seg_len[2] - seg_len[3]);
	n = droce_wire_mbuf_segs(chain_init(&c, NMBUF, off, seg_len, pkt), segs, NMBUF);
	CHECK_EQ_U64(n, NMBUF);
	CHECK_EQ_U64(droce_wire_parse(segs, n, 0, &p), DROCE_WIRE_OK);
	CHECK_EQ_U64(p.len, len);
	CHECK_EQ_U64(p.payload_len, PAYLOAD_LEN);
	CHECK_EQ_U64(p.payload_off, hdr_len);
	CHECK_EQ_U64(droce_bth_psn(droce_pkt_bth(&p)), h.psn);
	CHECK_EQ_U64(droce_bth_dqpn(droce_pkt_bth(&p)), h.dqpn);
	CHECK_EQ_U64(droce_wire_payload_copy(&p, segs, n, 0, copy, sizeof(copy)), PAYLOAD_LEN);
	CHECK_MEM(copy, payload, PAYLOAD_LEN);
	CHECK_EQ_U64(p.icrc, wt_get_icrc(pkt, len - DROCE_ICRC_LEN));

	/* Headers that run into the second mbuf: refused, not read across the boundary. */
	seg_len[0] = (uint16_t)(hdr_len - 1);
	seg_len[1] = 6;
	n = droce_wire_mbuf_segs(chain_init(&c, NMBUF, off, seg_len, pkt), segs, NMBUF);
	CHECK_EQ_U64(droce_wire_parse(segs, n, 0, &p), DROCE_WIRE_HDR_SPLIT);

	/* A corrupted byte in the last mbuf fails the ICRC. */
	seg_len[0] = (uint16_t)(hdr_len + 5);
	seg_len[1] = 0;
	n = droce_wire_mbuf_segs(chain_init(&c, NMBUF, off, seg_len, pkt), segs, NMBUF);
	c.buf[4][off[4]] ^= 0x01;
	CHECK_EQ_U64(droce_wire_parse(segs, n, 0, &p), DROCE_WIRE_BAD_ICRC);
}
