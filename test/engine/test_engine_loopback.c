/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Traffic that never reaches the wire, and traffic that is not RoCEv2:
 *   - loopback: QPs of one host reach each other through the host's own GID (own GID ->
 *     own MAC in the neighbour table). engine_tx() hands a packet to the port's own MAC
 *     to the engine's handoff ring (tx_loopback); the port sends nothing. RC at every
 *     size around the MTU up to 1 MiB, on one engine and across two (steering), RC with
 *     an SRQ, UD over IPv4 and IPv6 GIDs;
 *   - the slow path: non-RoCEv2 frames the port receives (ARP, UDP to another port,
 *     ICMP) go to the control thread's slow_rx ring intact (rx_slow), or are dropped when
 *     it is full (rx_slow_drop); frames the control thread puts on slow_tx leave by the
 *     port unchanged (tx_slow).
 * Host b of each pair is the far end of the link: in the loopback cases it must see
 * nothing at all.
 */
#include <endian.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_arp.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_udp.h>

#include "droce_test.h"
#include "engine_client.h"
#include "test_eal.h"

/* Engines of the largest pair opened here: the EAL is started once, sized for it. */
#define MAX_WORKERS		3
#define MTU			1024			/* IBV_MTU_1024 */
#define UD_MTU			4096			/* the port's: UD messages up to this */
#define BIG_MSG			(1u << 20)
#define GUARD			64	/* bytes after each receive that must stay untouched */
#define GUARD_BYTE		0xA5
#define WAIT_MS			20000
#define QKEY			0x11110000u
#define IMM_TAG			0x5A000000u
#define TTL			64	/* tc_ah_attr's hop limit */
/* 4.096 us << 16 = 268 ms: well above scheduling delays on two shared CPUs. */
#define RC_TIMEOUT		16
#define SLOW_FULL_CAP		2	/* slow_rx entries in the ring-full case */
#define UDP_OTHER_PORT		53
#define ICMP_PROTO		1

/* RC message sizes: empty, one byte, around one MTU, many MTUs. */
static const uint32_t rc_sizes[] = { 0, 1, MTU - 1, MTU, MTU + 1, 64 * 1024, BIG_MSG };
/* UD message sizes: empty, one byte, around 1024 bytes, up to the port MTU. */
static const uint32_t ud_sizes[] = { 0, 1, MTU - 1, MTU, MTU + 1, UD_MTU - 1, UD_MTU };

/* ---- Helpers ---- */

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Host a with every engine slot it may need, then own GIDs -> own MAC on a (loopback). */
static void
pair_open_loop(struct tc_host *a, struct tc_host *b, unsigned int na)
{
	test_eal_init_lcores(MAX_WORKERS);
	tc_pair_open(a, b, na, 1);
	CHECK_EQ_I64(droce_engine_dev_neigh_add(a->dev, a->gid, a->mac), 0);
	CHECK_EQ_I64(droce_engine_dev_neigh_add(a->dev, a->gid6, a->mac), 0);
}

static struct tc_qp *
qp_make(struct tc_host *h, uint8_t type, unsigned int engine, struct tc_cq *scq,
	struct tc_cq *rcq, struct tc_srq *srq)
{
	struct tc_qp_init in = {
		.type = type, .engine = engine, .scq = scq, .rcq = rcq, .srq = srq,
		.sq_size = 64, .rq_size = 64, .max_sge = 2, .max_inline = 64,
	};

	return tc_qp_create(h, &in);
}

/* Message bytes that differ by message number and position. */
static void
msg_fill(uint8_t *p, uint32_t len, uint32_t msg)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 131 + (i >> 8) * 7 + msg * 29 + 1);
}

static void
post_send(struct tc_qp *qp, uint64_t wr_id, const struct tc_mr *mr, uint32_t len, bool imm,
	  uint32_t imm_host, struct ibv_ah *ah, uint32_t dqpn)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)mr->buf, .length = len, .lkey = mr->lkey,
	};
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = htobe32(imm_host);
	if (ah != NULL) {
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = dqpn;
		wr.wr.ud.remote_qkey = QKEY;
	}
	CHECK_EQ_I64(tc_post_send(qp, &wr, &bad), 0);
}

static void
check_send_wc(const struct ibv_wc *wc, uint64_t wr_id, uint32_t qpn)
{
	CHECK_EQ_U64(wc->status, IBV_WC_SUCCESS);
	CHECK_EQ_U64(wc->opcode, IBV_WC_SEND);
	CHECK_EQ_U64(wc->wr_id, wr_id);
	CHECK_EQ_U64(wc->qp_num, qpn);
}

static void
check_recv_wc(const struct ibv_wc *wc, uint64_t wr_id, uint32_t qpn, uint32_t src_qp,
	      uint32_t byte_len, unsigned int flags, uint32_t imm_host)
{
	CHECK_EQ_U64(wc->status, IBV_WC_SUCCESS);
	CHECK_EQ_U64(wc->opcode, IBV_WC_RECV);
	CHECK_EQ_U64(wc->wr_id, wr_id);
	CHECK_EQ_U64(wc->qp_num, qpn);
	CHECK_EQ_U64(wc->src_qp, src_qp);
	CHECK_EQ_U64(wc->byte_len, byte_len);
	CHECK_EQ_U64(wc->wc_flags, flags);
	if (flags & IBV_WC_WITH_IMM)
		CHECK_EQ_U64(be32toh(wc->imm_data), imm_host);
}

/* The message is in buf, and the GUARD bytes after it are as they were. */
static void
check_received(const uint8_t *buf, const uint8_t *want, uint32_t len)
{
	unsigned int i;

	CHECK_MEM(buf, want, len);
	for (i = 0; i < GUARD; i++)
		CHECK_EQ_U64(buf[len + i], GUARD_BYTE);
}

/* Nothing to or from the port: the far host received nothing, and neither side sent. */
static void
check_wire_silent(const struct tc_host *a, const struct tc_host *b)
{
	CHECK_EQ_U64(tc_counter(a, "tx_pkts"), 0);
	CHECK_EQ_U64(tc_counter(a, "rx_pkts"), 0);
	CHECK_EQ_U64(tc_counter(b, "rx_pkts"), 0);
	CHECK_EQ_U64(tc_counter(b, "tx_pkts"), 0);
	CHECK_EQ_U64(tc_counter(b, "rx_handoff_in"), 0);
}

/*
 * Waits until every packet looped back has been handled: each is received once from the
 * engine's own handoff ring, and once more by the owner when it is steered on.
 */
static void
loopback_drained(const struct tc_host *h)
{
	uint64_t end = now_ms() + WAIT_MS;

	while (tc_counter(h, "rx_handoff_in") !=
	       tc_counter(h, "tx_loopback") + tc_counter(h, "rx_handoff_out")) {
		if (now_ms() > end) {
			tc_dump(h);
			CHECK_EQ_U64(tc_counter(h, "rx_handoff_in"),
				     tc_counter(h, "tx_loopback") +
				     tc_counter(h, "rx_handoff_out"));
		}
		usleep(100);
	}
}

/*
 * Every packet the host built went to loopback: request packets, ACKs and NAKs, none
 * dropped or lost for want of mbufs.
 */
static void
check_all_looped(const struct tc_host *h)
{
	CHECK_EQ_U64(tc_counter(h, "tx_drop"), 0);
	CHECK_EQ_U64(tc_counter(h, "tx_nombuf"), 0);
	CHECK_EQ_U64(tc_counter(h, "rx_handoff_drop"), 0);
	CHECK_EQ_U64(tc_counter(h, "tx_loopback"),
		     tc_counter(h, "req_pkts") + tc_counter(h, "ack_sent") +
		     tc_counter(h, "nak_seq_sent") + tc_counter(h, "nak_rnr_sent") +
		     tc_counter(h, "nak_err_sent"));
	CHECK_EQ_U64(tc_counter(h, "rx_foreign"), 0);
	CHECK_EQ_U64(tc_counter(h, "rx_malformed"), 0);
	CHECK_EQ_U64(tc_counter(h, "rx_slow"), 0);
}

static uint32_t
rc_pkts(uint32_t len)
{
	return len == 0 ? 1 : (len + MTU - 1) / MTU;
}

/* ---- Loopback: RC ---- */

/* One end of a loopback RC connection: its QP, CQ, send and receive buffers. */
struct rc_end {
	struct tc_qp *qp;
	struct tc_cq *cq;
	struct tc_mr *tx, *rx;
};

static void
rc_end_make(struct tc_host *h, struct rc_end *x, unsigned int engine, struct tc_srq *srq,
	    struct tc_cq *rcq)
{
	x->cq = tc_cq_create(h, 64);
	x->qp = qp_make(h, DROCE_SHM_QPT_RC, engine, x->cq, rcq != NULL ? rcq : x->cq, srq);
	x->tx = tc_mr_reg(h, BIG_MSG, IBV_ACCESS_LOCAL_WRITE);
	x->rx = tc_mr_reg(h, BIG_MSG + GUARD, IBV_ACCESS_LOCAL_WRITE);
}

/*
 * Message msg of len bytes from s to r; the receive goes to srq when there is one, and
 * its completion to rcq. Checks both completions, the bytes and the guard after them.
 */
static void
rc_one(struct rc_end *s, struct rc_end *r, struct tc_srq *srq, struct tc_cq *rcq,
       uint32_t msg, uint32_t len)
{
	bool imm = msg % 2 == 1;
	unsigned int flags = imm ? IBV_WC_WITH_IMM : 0;
	struct ibv_wc wc;

	droce_test_ctx("message %u of %u bytes from QP %u to QP %u%s", msg, len, s->qp->qpn,
		       r->qp->qpn, srq != NULL ? " (SRQ)" : "");
	memset(r->rx->buf, GUARD_BYTE, len + GUARD);
	msg_fill(s->tx->buf, len, msg);
	if (srq != NULL)
		CHECK_EQ_I64(tc_srq_recv(srq, 1000 + msg, r->rx, 0, BIG_MSG), 0);
	else
		CHECK_EQ_I64(tc_recv(r->qp, 1000 + msg, r->rx, 0, BIG_MSG), 0);
	post_send(s->qp, msg, s->tx, len, imm, IMM_TAG | msg, NULL, 0);
	CHECK_EQ_I64(tc_wait(rcq, 1, &wc, WAIT_MS), 1);
	check_recv_wc(&wc, 1000 + msg, r->qp->qpn, s->qp->qpn, len, flags, IMM_TAG | msg);
	check_received(r->rx->buf, s->tx->buf, len);
	CHECK_EQ_I64(tc_wait(s->cq, 1, &wc, WAIT_MS), 1);
	check_send_wc(&wc, msg, s->qp->qpn);
}

/*
 * Every RC size both ways between two QPs of host a, on engines 0 and na - 1, through
 * a's own IPv4 GID (or IPv6 GID, index 1); with srq, both receive from one SRQ.
 */
static void
rc_loopback(unsigned int na, bool ipv6, bool use_srq)
{
	struct tc_path path = { .mtu = IBV_MTU_1024, .timeout = RC_TIMEOUT, .retry_cnt = 7,
				.rnr_retry = 7, .min_rnr_timer = 1, .psn_a = 0xFFFFF8,
				.psn_b = 12345, .ipv6 = ipv6 };
	uint64_t want_pkts = 0;
	struct tc_srq *srq = NULL;
	struct tc_cq *rcq = NULL;
	struct rc_end x, y;
	struct tc_host a, b;
	struct ibv_wc wc;
	uint32_t i, msg = 0;

	pair_open_loop(&a, &b, na);
	if (use_srq) {
		srq = tc_srq_create(&a, 16, 2, 0);
		rcq = tc_cq_create(&a, 64);
	}
	rc_end_make(&a, &x, 0, srq, rcq);
	rc_end_make(&a, &y, na - 1, srq, rcq);
	tc_connect(x.qp, y.qp, &path);
	for (i = 0; i < RTE_DIM(rc_sizes); i++) {
		rc_one(&x, &y, srq, srq != NULL ? rcq : y.cq, msg++, rc_sizes[i]);
		rc_one(&y, &x, srq, srq != NULL ? rcq : x.cq, msg++, rc_sizes[i]);
		want_pkts += 2 * rc_pkts(rc_sizes[i]);
	}
	droce_test_ctx("after the run (%u engines)", na);
	CHECK_EQ_I64(tc_poll(x.cq, 1, &wc), 0);
	CHECK_EQ_I64(tc_poll(y.cq, 1, &wc), 0);
	loopback_drained(&a);
	check_wire_silent(&a, &b);
	check_all_looped(&a);
	CHECK_EQ_U64(tc_counter(&a, "req_pkts") - tc_counter(&a, "req_retransmit"), want_pkts);
	CHECK_EQ_U64(tc_counter(&a, "resp_msgs"), 2 * RTE_DIM(rc_sizes));
	if (na > 1) {
		/*
		 * Each engine loops back its QP's packets to itself, then steers them to the
		 * other engine, the owner of the destination QP.
		 */
		CHECK(tc_engine_counter(&a, 0, "tx_loopback") > 0);
		CHECK(tc_engine_counter(&a, 1, "tx_loopback") > 0);
		CHECK_EQ_U64(tc_engine_counter(&a, 0, "rx_handoff_out"),
			     tc_engine_counter(&a, 0, "tx_loopback"));
		CHECK_EQ_U64(tc_engine_counter(&a, 1, "rx_handoff_out"),
			     tc_engine_counter(&a, 1, "tx_loopback"));
	} else {
		CHECK_EQ_U64(tc_counter(&a, "rx_handoff_out"), 0);
		CHECK_EQ_U64(tc_counter(&a, "rx_handoff_in"), tc_counter(&a, "tx_loopback"));
	}
	tc_pair_close(&a, &b);
}

DROCE_TEST(rc_loopback_one_engine)
{
	rc_loopback(1, false, false);
}

DROCE_TEST(rc_loopback_two_engines)
{
	rc_loopback(2, false, false);
}

DROCE_TEST(rc_loopback_ipv6_gid)
{
	rc_loopback(2, true, false);
}

DROCE_TEST(rc_loopback_srq_one_engine)
{
	rc_loopback(1, false, true);
}

DROCE_TEST(rc_loopback_srq_two_engines)
{
	rc_loopback(2, false, true);
}

/* ---- Loopback: UD ---- */

static void
check_grh_v4(const uint8_t *grh, const struct tc_host *h)
{
	const struct rte_ipv4_hdr *ip =
		(const void *)(grh + DROCE_GRH_LEN - sizeof(struct rte_ipv4_hdr));

	CHECK_EQ_U64(ip->version_ihl, RTE_IPV4_VHL_DEF);
	CHECK_EQ_U64(ip->next_proto_id, IPPROTO_UDP);
	CHECK_EQ_U64(ip->time_to_live, TTL);
	CHECK_MEM(&ip->src_addr, h->gid + 12, 4);
	CHECK_MEM(&ip->dst_addr, h->gid + 12, 4);
}

static void
check_grh_v6(const uint8_t *grh, const struct tc_host *h)
{
	const struct rte_ipv6_hdr *ip = (const void *)grh;

	CHECK_EQ_U64(ip->proto, IPPROTO_UDP);
	CHECK_EQ_U64(ip->hop_limits, TTL);
	CHECK_MEM(ip->src_addr, h->gid6, 16);
	CHECK_MEM(ip->dst_addr, h->gid6, 16);
}

/*
 * UD from a QP on engine 0 of host a to two QPs of a, one on the same engine, one on
 * engine 1, through a's own GIDs: every size up to the port MTU, IPv4 and IPv6 AHs.
 */
DROCE_TEST(ud_loopback)
{
	struct tc_host a, b;
	struct tc_cq *cs, *cr;
	struct tc_qp *qs, *qr[2];
	struct tc_mr *ms, *mr;
	struct ibv_ah ah[2];
	uint32_t i, msg = 0, ahn;
	unsigned int v6, q;
	struct ibv_wc wc;

	pair_open_loop(&a, &b, 2);
	cs = tc_cq_create(&a, 64);
	cr = tc_cq_create(&a, 64);
	qs = qp_make(&a, DROCE_SHM_QPT_UD, 0, cs, cs, NULL);
	tc_ud_ready(qs, QKEY, 0xFFFFFF);
	for (q = 0; q < 2; q++) {
		qr[q] = qp_make(&a, DROCE_SHM_QPT_UD, q, cr, cr, NULL);
		tc_ud_ready(qr[q], QKEY, 0);
	}
	for (v6 = 0; v6 < 2; v6++) {
		CHECK_EQ_I64(tc_ah_create(&a, 0, &a, v6 != 0, &ahn), 0);
		memset(&ah[v6], 0, sizeof(ah[v6]));
		ah[v6].handle = ahn;
	}
	ms = tc_mr_reg(&a, UD_MTU, IBV_ACCESS_LOCAL_WRITE);
	mr = tc_mr_reg(&a, DROCE_GRH_LEN + UD_MTU + GUARD, IBV_ACCESS_LOCAL_WRITE);
	for (v6 = 0; v6 < 2; v6++) {
		for (i = 0; i < RTE_DIM(ud_sizes); i++) {
			for (q = 0; q < 2; q++, msg++) {
				uint32_t len = ud_sizes[i];
				bool imm = msg % 2 == 1;

				droce_test_ctx("UD %s message %u of %u bytes to engine %u",
					       v6 ? "IPv6" : "IPv4", msg, len, q);
				memset(mr->buf, GUARD_BYTE, DROCE_GRH_LEN + len + GUARD);
				msg_fill(ms->buf, len, msg);
				CHECK_EQ_I64(tc_recv(qr[q], 2000 + msg, mr, 0,
						     DROCE_GRH_LEN + UD_MTU), 0);
				post_send(qs, msg, ms, len, imm, IMM_TAG | msg, &ah[v6],
					  qr[q]->qpn);
				CHECK_EQ_I64(tc_wait(cr, 1, &wc, WAIT_MS), 1);
				check_recv_wc(&wc, 2000 + msg, qr[q]->qpn, qs->qpn,
					      DROCE_GRH_LEN + len,
					      IBV_WC_GRH | (imm ? IBV_WC_WITH_IMM : 0),
					      IMM_TAG | msg);
				if (v6)
					check_grh_v6(mr->buf, &a);
				else
					check_grh_v4(mr->buf, &a);
				check_received(mr->buf + DROCE_GRH_LEN, ms->buf, len);
				CHECK_EQ_I64(tc_wait(cs, 1, &wc, WAIT_MS), 1);
				check_send_wc(&wc, msg, qs->qpn);
			}
		}
	}
	droce_test_ctx("UD after the run");
	loopback_drained(&a);
	check_wire_silent(&a, &b);
	check_all_looped(&a);
	CHECK_EQ_U64(tc_counter(&a, "req_pkts"), msg);
	CHECK_EQ_U64(tc_counter(&a, "ud_drop"), 0);
	/* All sent by engine 0; half of them steered on to engine 1. */
	CHECK_EQ_U64(tc_engine_counter(&a, 0, "tx_loopback"), msg);
	CHECK_EQ_U64(tc_engine_counter(&a, 0, "rx_handoff_out"), msg / 2);
	CHECK_EQ_U64(tc_engine_counter(&a, 1, "rx_handoff_in"), msg / 2);
	tc_pair_close(&a, &b);
}

/*
 * The far host's GID still goes to the port while a's own is looped back: one message
 * to each over one engine.
 */
DROCE_TEST(rc_loopback_and_wire_side_by_side)
{
	struct tc_path path = { .mtu = IBV_MTU_1024, .timeout = RC_TIMEOUT, .retry_cnt = 7,
				.rnr_retry = 7, .min_rnr_timer = 1, .psn_a = 7, .psn_b = 9 };
	struct rc_end x, y, w, z;
	struct tc_host a, b;

	pair_open_loop(&a, &b, 1);
	rc_end_make(&a, &x, 0, NULL, NULL);
	rc_end_make(&a, &y, 0, NULL, NULL);
	rc_end_make(&a, &w, 0, NULL, NULL);
	rc_end_make(&b, &z, 0, NULL, NULL);
	tc_connect(x.qp, y.qp, &path);
	tc_connect(w.qp, z.qp, &path);
	rc_one(&x, &y, NULL, y.cq, 0, 3 * MTU);
	rc_one(&w, &z, NULL, z.cq, 1, 3 * MTU);
	droce_test_ctx("after the run");
	loopback_drained(&a);
	/* x -> y: 3 requests and at least one ACK looped; w -> z: 3 requests on the wire. */
	CHECK(tc_counter(&a, "tx_loopback") >= 4);
	CHECK(tc_counter(&a, "tx_pkts") >= 3);
	CHECK_EQ_U64(tc_counter(&a, "tx_pkts") + tc_counter(&a, "tx_loopback"),
		     tc_counter(&a, "req_pkts") + tc_counter(&a, "ack_sent") +
		     tc_counter(&a, "nak_seq_sent") + tc_counter(&a, "nak_rnr_sent") +
		     tc_counter(&a, "nak_err_sent"));
	CHECK_EQ_U64(tc_counter(&b, "resp_msgs"), 1);
	CHECK_EQ_U64(tc_counter(&b, "rx_pkts"), tc_counter(&a, "tx_pkts"));
	tc_pair_close(&a, &b);
}

/* ---- The slow path ---- */

/* Frames as the far host's port would send them: from b's MAC, or broadcast. */
enum frame_kind {
	FRAME_ARP,		/* who-has a's IPv4 address, broadcast */
	FRAME_UDP,		/* IPv4 UDP to port 53 */
	FRAME_ICMP,		/* IPv4 ICMP echo request */
	FRAME_UDP6,		/* IPv6 UDP to port 53 */
	FRAME_ROCE_TRUNC,	/* UDP to 4791 that ends inside the BTH: malformed RoCEv2 */
};

static struct rte_mbuf *
frame_make(struct rte_mempool *mp, enum frame_kind kind, const struct tc_host *from,
	   const struct tc_host *to, uint32_t seq, uint32_t payload)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
	struct rte_ether_hdr *eth;
	uint8_t *p;
	uint32_t len, l3, i;

	CHECK(m != NULL);
	p = rte_pktmbuf_mtod(m, uint8_t *);
	eth = (struct rte_ether_hdr *)p;
	memcpy(&eth->src_addr, from->mac, RTE_ETHER_ADDR_LEN);
	memcpy(&eth->dst_addr, to->mac, RTE_ETHER_ADDR_LEN);
	l3 = sizeof(*eth);
	if (kind == FRAME_ARP) {
		struct rte_arp_hdr *arp = (struct rte_arp_hdr *)(p + l3);

		memset(&eth->dst_addr, 0xFF, RTE_ETHER_ADDR_LEN);
		eth->ether_type = htobe16(RTE_ETHER_TYPE_ARP);
		arp->arp_hardware = htobe16(RTE_ARP_HRD_ETHER);
		arp->arp_protocol = htobe16(RTE_ETHER_TYPE_IPV4);
		arp->arp_hlen = RTE_ETHER_ADDR_LEN;
		arp->arp_plen = 4;
		arp->arp_opcode = htobe16(RTE_ARP_OP_REQUEST);
		memcpy(&arp->arp_data.arp_sha, from->mac, RTE_ETHER_ADDR_LEN);
		memcpy(&arp->arp_data.arp_sip, from->gid + 12, 4);
		memset(&arp->arp_data.arp_tha, 0, RTE_ETHER_ADDR_LEN);
		memcpy(&arp->arp_data.arp_tip, to->gid + 12, 4);
		len = l3 + sizeof(*arp);
	} else if (kind == FRAME_UDP6) {
		struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(p + l3);
		struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);

		eth->ether_type = htobe16(RTE_ETHER_TYPE_IPV6);
		memset(ip, 0, sizeof(*ip));
		ip->vtc_flow = htobe32(6u << 28);
		ip->payload_len = htobe16(sizeof(*udp) + payload);
		ip->proto = IPPROTO_UDP;
		ip->hop_limits = TTL;
		memcpy(ip->src_addr, from->gid6, 16);
		memcpy(ip->dst_addr, to->gid6, 16);
		udp->src_port = htobe16(40000 + seq);
		udp->dst_port = htobe16(UDP_OTHER_PORT);
		udp->dgram_len = ip->payload_len;
		udp->dgram_cksum = 0;
		len = l3 + sizeof(*ip) + sizeof(*udp) + payload;
	} else {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(p + l3);
		uint8_t *l4 = (uint8_t *)(ip + 1);
		uint32_t l4_len = kind == FRAME_ICMP ? 8 + payload :
				  kind == FRAME_ROCE_TRUNC ? sizeof(struct rte_udp_hdr) + 4 :
				  sizeof(struct rte_udp_hdr) + payload;

		eth->ether_type = htobe16(RTE_ETHER_TYPE_IPV4);
		memset(ip, 0, sizeof(*ip));
		ip->version_ihl = RTE_IPV4_VHL_DEF;
		ip->total_length = htobe16(sizeof(*ip) + l4_len);
		ip->packet_id = htobe16(seq);
		ip->time_to_live = TTL;
		ip->next_proto_id = kind == FRAME_ICMP ? ICMP_PROTO : IPPROTO_UDP;
		memcpy(&ip->src_addr, from->gid + 12, 4);
		memcpy(&ip->dst_addr, to->gid + 12, 4);
		ip->hdr_checksum = rte_ipv4_cksum(ip);
		if (kind == FRAME_ICMP) {
			memset(l4, 0, 8);
			l4[0] = 8;		/* echo request */
		} else {
			struct rte_udp_hdr *udp = (struct rte_udp_hdr *)l4;

			udp->src_port = htobe16(40000 + seq);
			udp->dst_port = htobe16(kind == FRAME_ROCE_TRUNC ?
						DROCE_ROCEV2_UDP_PORT : UDP_OTHER_PORT);
			udp->dgram_len = htobe16(l4_len);
			udp->dgram_cksum = 0;
		}
		len = l3 + sizeof(*ip) + l4_len;
		if (kind == FRAME_ROCE_TRUNC)
			payload = 4;
	}
	/* The payload: bytes of this frame only; ARP frames get Ethernet's padding. */
	for (i = 0; i < payload && kind != FRAME_ARP; i++)
		p[len - payload + i] = (uint8_t)(seq * 17 + i * 3);
	if (len < RTE_ETHER_MIN_LEN - RTE_ETHER_CRC_LEN) {
		memset(p + len, 0, RTE_ETHER_MIN_LEN - RTE_ETHER_CRC_LEN - len);
		len = RTE_ETHER_MIN_LEN - RTE_ETHER_CRC_LEN;
	}
	CHECK(rte_pktmbuf_append(m, len) != NULL);
	return m;
}

/* A copy of m's bytes, to compare with what comes out at the other end. */
struct frame_copy {
	uint8_t bytes[2048];
	uint32_t len;
};

static void
frame_copy(struct frame_copy *c, const struct rte_mbuf *m)
{
	CHECK(m->nb_segs == 1 && m->data_len <= sizeof(c->bytes));
	c->len = m->data_len;
	memcpy(c->bytes, rte_pktmbuf_mtod(m, const uint8_t *), c->len);
}

static void
frame_check(const struct rte_mbuf *m, const struct frame_copy *want)
{
	CHECK_EQ_U64(m->nb_segs, 1);
	CHECK_EQ_U64(m->pkt_len, want->len);
	CHECK_MEM(rte_pktmbuf_mtod(m, const uint8_t *), want->bytes, want->len);
}

/* Waits until ring r holds n entries. */
static void
ring_wait(const struct rte_ring *r, unsigned int n)
{
	uint64_t end = now_ms() + WAIT_MS;

	while (rte_ring_count(r) < n && now_ms() <= end)
		usleep(100);
	CHECK_EQ_U64(rte_ring_count(r), n);
}

static void
counter_wait(const struct tc_host *h, const char *name, uint64_t want)
{
	uint64_t end = now_ms() + WAIT_MS;

	while (tc_counter(h, name) < want && now_ms() <= end)
		usleep(100);
	CHECK_EQ_U64(tc_counter(h, name), want);
}

static struct rte_ring *
slow_ring(const char *name, unsigned int cap)
{
	struct rte_ring *r = rte_ring_create(name, cap, SOCKET_ID_ANY, RING_F_EXACT_SZ);

	CHECK(r != NULL);
	return r;
}

static void
ring_drain_free(struct rte_ring *r)
{
	void *m;

	while (rte_ring_dequeue(r, &m) == 0)
		rte_pktmbuf_free(m);
	rte_ring_free(r);
}

#define NB_SLOW_FRAMES	8

static const enum frame_kind slow_kinds[NB_SLOW_FRAMES] = {
	FRAME_ARP, FRAME_UDP, FRAME_ICMP, FRAME_UDP6, FRAME_UDP, FRAME_ARP, FRAME_UDP6,
	FRAME_ICMP,
};
static const uint32_t slow_payloads[NB_SLOW_FRAMES] = { 0, 1, 56, 100, 1400, 0, 0, 1000 };

/*
 * ARP, IPv4 UDP and ICMP, IPv6 UDP frames on the link to a come out of a's slow_rx, in
 * order and unchanged; a truncated RoCEv2 frame does not (it is malformed, not foreign);
 * host b, without slow_rx, drops such frames as before. RC traffic between a and b at the
 * same time is not disturbed.
 */
DROCE_TEST(slow_rx_takes_foreign_frames)
{
	struct tc_path path = { .mtu = IBV_MTU_1024, .timeout = RC_TIMEOUT, .retry_cnt = 7,
				.rnr_retry = 7, .min_rnr_timer = 1, .psn_a = 1, .psn_b = 2 };
	struct frame_copy want[NB_SLOW_FRAMES];
	struct tc_slow slow_a = { .rx = NULL };
	struct rte_ring *ab, *ba;
	struct rc_end x, y;
	struct tc_host a, b;
	struct rte_mbuf *m;
	unsigned int i;

	test_eal_init_lcores(MAX_WORKERS);
	slow_a.rx = slow_ring("lb_slow_rx1", 64);
	tc_pair_open_slow(&a, &b, 2, 1, &slow_a, NULL, &ab, &ba);
	rc_end_make(&a, &x, 0, NULL, NULL);
	rc_end_make(&b, &y, 0, NULL, NULL);
	tc_connect(x.qp, y.qp, &path);
	for (i = 0; i < NB_SLOW_FRAMES; i++) {
		m = frame_make(b.mp, slow_kinds[i], &b, &a, i, slow_payloads[i]);
		frame_copy(&want[i], m);
		CHECK_EQ_I64(rte_ring_enqueue(ba, m), 0);
		if (i == NB_SLOW_FRAMES / 2) {
			m = frame_make(b.mp, FRAME_ROCE_TRUNC, &b, &a, i, 0);
			CHECK_EQ_I64(rte_ring_enqueue(ba, m), 0);
			rc_one(&x, &y, NULL, y.cq, 0, 4 * MTU + 5);
			rc_one(&y, &x, NULL, x.cq, 1, 7);
		}
	}
	/* The same frames to b, which has no slow_rx: dropped as foreign. */
	for (i = 0; i < NB_SLOW_FRAMES; i++)
		CHECK_EQ_I64(rte_ring_enqueue(ab, frame_make(a.mp, slow_kinds[i], &a, &b, i,
							    slow_payloads[i])), 0);
	droce_test_ctx("waiting for the slow frames");
	ring_wait(slow_a.rx, NB_SLOW_FRAMES);
	for (i = 0; i < NB_SLOW_FRAMES; i++) {
		droce_test_ctx("slow frame %u", i);
		CHECK_EQ_I64(rte_ring_dequeue(slow_a.rx, (void **)&m), 0);
		frame_check(m, &want[i]);
		rte_pktmbuf_free(m);
	}
	droce_test_ctx("counters");
	counter_wait(&b, "rx_foreign", NB_SLOW_FRAMES);
	CHECK_EQ_U64(tc_counter(&a, "rx_slow"), NB_SLOW_FRAMES);
	CHECK_EQ_U64(tc_counter(&a, "rx_foreign"), NB_SLOW_FRAMES);
	CHECK_EQ_U64(tc_counter(&a, "rx_slow_drop"), 0);
	CHECK_EQ_U64(tc_counter(&a, "rx_malformed"), 1);
	CHECK_EQ_U64(tc_counter(&b, "rx_slow"), 0);
	CHECK_EQ_U64(tc_counter(&b, "rx_slow_drop"), 0);
	CHECK_EQ_U64(tc_counter(&a, "resp_msgs"), 1);
	CHECK_EQ_U64(tc_counter(&b, "resp_msgs"), 1);
	CHECK_EQ_U64(tc_counter(&a, "tx_loopback"), 0);
	CHECK_EQ_U64(rte_ring_count(slow_a.rx), 0);
	tc_pair_close(&a, &b);
	rte_ring_free(slow_a.rx);
}

/* A full slow_rx drops the frame, counted in rx_slow_drop and freed (the leak check). */
DROCE_TEST(slow_rx_full_drops)
{
	struct frame_copy want[SLOW_FULL_CAP + 1];
	struct tc_slow slow_a = { .rx = NULL };
	struct rte_ring *ab, *ba;
	struct tc_host a, b;
	struct rte_mbuf *m;
	unsigned int i;

	test_eal_init_lcores(MAX_WORKERS);
	slow_a.rx = slow_ring("lb_slow_rx2", SLOW_FULL_CAP);
	tc_pair_open_slow(&a, &b, 1, 1, &slow_a, NULL, &ab, &ba);
	for (i = 0; i < SLOW_FULL_CAP + 3; i++) {
		m = frame_make(b.mp, slow_kinds[i], &b, &a, i, slow_payloads[i]);
		if (i < SLOW_FULL_CAP)
			frame_copy(&want[i], m);
		CHECK_EQ_I64(rte_ring_enqueue(ba, m), 0);
	}
	counter_wait(&a, "rx_foreign", SLOW_FULL_CAP + 3);
	CHECK_EQ_U64(tc_counter(&a, "rx_slow"), SLOW_FULL_CAP);
	CHECK_EQ_U64(tc_counter(&a, "rx_slow_drop"), 3);
	CHECK_EQ_U64(rte_ring_count(slow_a.rx), SLOW_FULL_CAP);
	/* Room again: the next frame is taken. */
	CHECK_EQ_I64(rte_ring_dequeue(slow_a.rx, (void **)&m), 0);
	frame_check(m, &want[0]);
	rte_pktmbuf_free(m);
	m = frame_make(b.mp, FRAME_UDP, &b, &a, 99, 33);
	frame_copy(&want[SLOW_FULL_CAP], m);
	CHECK_EQ_I64(rte_ring_enqueue(ba, m), 0);
	counter_wait(&a, "rx_slow", SLOW_FULL_CAP + 1);
	CHECK_EQ_U64(tc_counter(&a, "rx_slow_drop"), 3);
	for (i = 1; i <= SLOW_FULL_CAP; i++) {
		droce_test_ctx("slow frame %u", i);
		CHECK_EQ_I64(rte_ring_dequeue(slow_a.rx, (void **)&m), 0);
		frame_check(m, &want[i]);
		rte_pktmbuf_free(m);
	}
	tc_pair_close(&a, &b);
	rte_ring_free(slow_a.rx);
}

/*
 * Frames on a's slow_tx leave by a's port unchanged: b's engine, whose slow_rx collects
 * them, receives them from the link byte for byte, in order.
 */
DROCE_TEST(slow_tx_sends_frames)
{
	struct frame_copy want[NB_SLOW_FRAMES];
	struct tc_slow slow_a = { .rx = NULL }, slow_b = { .rx = NULL };
	struct rte_ring *ab, *ba;
	struct tc_host a, b;
	struct rte_mbuf *m;
	unsigned int i;

	test_eal_init_lcores(MAX_WORKERS);
	slow_a.tx = slow_ring("lb_slow_tx3", 64);
	slow_b.rx = slow_ring("lb_slow_rx3", 64);
	tc_pair_open_slow(&a, &b, 2, 1, &slow_a, &slow_b, &ab, &ba);
	for (i = 0; i < NB_SLOW_FRAMES; i++) {
		m = frame_make(a.mp, slow_kinds[i], &a, &b, i, slow_payloads[i]);
		frame_copy(&want[i], m);
		CHECK_EQ_I64(rte_ring_enqueue(slow_a.tx, m), 0);
	}
	ring_wait(slow_b.rx, NB_SLOW_FRAMES);
	for (i = 0; i < NB_SLOW_FRAMES; i++) {
		droce_test_ctx("slow frame %u", i);
		CHECK_EQ_I64(rte_ring_dequeue(slow_b.rx, (void **)&m), 0);
		frame_check(m, &want[i]);
		rte_pktmbuf_free(m);
	}
	droce_test_ctx("counters");
	CHECK_EQ_U64(tc_counter(&a, "tx_slow"), NB_SLOW_FRAMES);
	CHECK_EQ_U64(tc_engine_counter(&a, 0, "tx_slow"), NB_SLOW_FRAMES);
	CHECK_EQ_U64(tc_counter(&a, "tx_pkts"), NB_SLOW_FRAMES);
	CHECK_EQ_U64(tc_counter(&b, "rx_pkts"), NB_SLOW_FRAMES);
	CHECK_EQ_U64(tc_counter(&b, "rx_slow"), NB_SLOW_FRAMES);
	CHECK_EQ_U64(rte_ring_count(slow_a.tx), 0);
	tc_pair_close(&a, &b);
	ring_drain_free(slow_a.tx);
	ring_drain_free(slow_b.rx);
}

/* ---- A NIC's IPv4 checksum verdicts (RTE_ETH_RX_OFFLOAD_IPV4_CKSUM) ---- */

#define CSUM_PAYLOAD	64
#define CSUM_SRC_QP	0x123

/*
 * A UD SEND ONLY from b to qpn on a, as b's port would put it on the wire, with the IPv4
 * header checksum spoiled when asked and the NIC's verdict in the mbuf's flags.
 */
static struct rte_mbuf *
csum_frame(const struct tc_host *from, const struct tc_host *to, uint32_t qpn, uint32_t psn,
	   bool spoil, uint64_t ol_flags)
{
	struct droce_wire_addr addr = { .hop_limit = TTL, .udp_sport = 0xC000 };
	struct droce_wire_hdrs h = { .opcode = DROCE_OP_UD_SEND_ONLY, .pkey = DROCE_PKEY_DEFAULT,
				     .dqpn = qpn, .psn = psn };
	uint8_t payload[CSUM_PAYLOAD];
	struct droce_wire_seg seg = { payload, sizeof(payload) };
	struct droce_wire_tmpl tmpl;
	struct rte_mbuf *m = rte_pktmbuf_alloc(from->mp);
	struct rte_ipv4_hdr *ip;
	int len;

	CHECK(m != NULL);
	memcpy(addr.src_mac, from->mac, 6);
	memcpy(addr.dst_mac, to->mac, 6);
	memcpy(addr.src_gid, from->gid, 16);
	memcpy(addr.dst_gid, to->gid, 16);
	h.deth.qkey = QKEY;
	h.deth.src_qp = CSUM_SRC_QP;
	msg_fill(payload, sizeof(payload), psn);
	CHECK_EQ_I64(droce_wire_tmpl_init(&tmpl, &addr), 0);
	len = droce_wire_build(&tmpl, &h, &seg, 1, rte_pktmbuf_mtod(m, void *),
			       rte_pktmbuf_tailroom(m));
	CHECK(len > 0);
	m->data_len = m->pkt_len = (uint32_t)len;
	ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, tmpl.l3_off);
	/* The ICRC leaves the IP checksum out (IBTA A17.3.3): the packet stays valid. */
	if (spoil)
		ip->hdr_checksum ^= htobe16(0x0101);
	m->ol_flags = ol_flags;
	return m;
}

/*
 * What the engine does with the NIC's verdict: BAD drops a packet whose checksum is right
 * (counted in rx_nic_bad_ip_csum), GOOD takes one whose checksum the engine would have
 * refused (its own check is skipped), no verdict (UNKNOWN) leaves the engine to check,
 * and it refuses the spoiled one itself.
 */
DROCE_TEST(nic_ip_csum_verdicts)
{
	static const struct {
		bool spoil;
		uint64_t flags;
		bool delivered;
	} cases[] = {
		{ false, RTE_MBUF_F_RX_IP_CKSUM_BAD, false },
		{ true, RTE_MBUF_F_RX_IP_CKSUM_GOOD, true },
		{ true, RTE_MBUF_F_RX_IP_CKSUM_UNKNOWN, false },
		{ false, RTE_MBUF_F_RX_IP_CKSUM_UNKNOWN, true },
		{ false, RTE_MBUF_F_RX_IP_CKSUM_GOOD, true },
	};
	struct rte_ring *ab, *ba;
	struct tc_host a, b;
	struct tc_cq *cr;
	struct tc_qp *qr;
	struct tc_mr *mr;
	struct ibv_wc wc;
	uint64_t malformed = 0, bad = 0;
	unsigned int i;

	test_eal_init_lcores(MAX_WORKERS);
	tc_pair_open_slow(&a, &b, 1, 1, NULL, NULL, &ab, &ba);
	cr = tc_cq_create(&a, 16);
	qr = qp_make(&a, DROCE_SHM_QPT_UD, 0, cr, cr, NULL);
	tc_ud_ready(qr, QKEY, 0);
	mr = tc_mr_reg(&a, DROCE_GRH_LEN + CSUM_PAYLOAD, IBV_ACCESS_LOCAL_WRITE);
	/* One receive posted at a time: a dropped packet leaves it for the next case. */
	CHECK_EQ_I64(tc_recv(qr, 0, mr, 0, DROCE_GRH_LEN + CSUM_PAYLOAD), 0);
	for (i = 0; i < RTE_DIM(cases); i++) {
		uint8_t want[CSUM_PAYLOAD];

		droce_test_ctx("case %u: checksum %s, verdict %#" PRIx64, i,
			       cases[i].spoil ? "spoiled" : "right", cases[i].flags);
		memset(mr->buf, 0, DROCE_GRH_LEN + CSUM_PAYLOAD);
		CHECK_EQ_I64(rte_ring_enqueue(ba, csum_frame(&b, &a, qr->qpn, i, cases[i].spoil,
							     cases[i].flags)), 0);
		if (cases[i].flags == RTE_MBUF_F_RX_IP_CKSUM_BAD)
			bad++;
		if (!cases[i].delivered) {
			malformed++;
			counter_wait(&a, "rx_malformed", malformed);
			CHECK_EQ_U64(tc_counter(&a, "rx_nic_bad_ip_csum"), bad);
			continue;
		}
		CHECK_EQ_I64(tc_wait(cr, 1, &wc, WAIT_MS), 1);
		CHECK_EQ_U64(wc.status, IBV_WC_SUCCESS);
		CHECK_EQ_U64(wc.byte_len, DROCE_GRH_LEN + CSUM_PAYLOAD);
		CHECK_EQ_U64(wc.src_qp, CSUM_SRC_QP);
		msg_fill(want, sizeof(want), i);
		CHECK_MEM(mr->buf + DROCE_GRH_LEN, want, CSUM_PAYLOAD);
		CHECK_EQ_I64(tc_recv(qr, i + 1, mr, 0, DROCE_GRH_LEN + CSUM_PAYLOAD), 0);
	}
	droce_test_ctx("counters");
	CHECK_EQ_U64(tc_counter(&a, "rx_malformed"), malformed);
	CHECK_EQ_U64(tc_counter(&a, "rx_nic_bad_ip_csum"), bad);
	CHECK_EQ_U64(tc_counter(&a, "rx_pkts"), RTE_DIM(cases));
	tc_pair_close(&a, &b);
}
