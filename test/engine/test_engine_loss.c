/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Reliable delivery under loss: RC streams over several QPs between two engines joined by
 * net_ring, with drivers/net/fault dropping, duplicating, reordering and corrupting packets
 * in both directions. Every message must arrive exactly once, in order, byte-exact, with
 * the right completions on both sides (engine_stream.c checks each one).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "droce_test.h"
#include "engine_stream.h"

#define NB_QPS	4

static void
print_counters(struct tc_host *a, struct tc_host *b)
{
	struct droce_fault_stats fs;

	if (b->fault != NULL && droce_fault_stats_get(b->fault, -1, &fs) == 0)
		printf("  link a->b: %llu packets, %llu dropped, %llu duplicated, %llu corrupted, "
		       "%llu reordered\n", (unsigned long long)fs.received,
		       (unsigned long long)fs.dropped, (unsigned long long)fs.duplicated,
		       (unsigned long long)fs.corrupted, (unsigned long long)fs.reordered);
	printf("  a: %llu request packets, %llu retransmitted, %llu timeouts, %llu NAKs; "
	       "b: %llu duplicates, %llu out of sequence, %llu malformed\n",
	       (unsigned long long)tc_counter(a, "req_pkts"),
	       (unsigned long long)tc_counter(a, "req_retransmit"),
	       (unsigned long long)tc_counter(a, "req_timeout"),
	       (unsigned long long)tc_counter(a, "nak_seq_rcvd"),
	       (unsigned long long)tc_counter(b, "resp_dup"),
	       (unsigned long long)tc_counter(b, "resp_out_of_seq"),
	       (unsigned long long)tc_counter(b, "rx_malformed"));
	if (getenv("DROCE_TEST_VERBOSE") != NULL) {
		tc_dump(a);
		tc_dump(b);
	}
}

/* Host a's counters a test checks after the run. */
struct rc_counts {
	uint64_t timeouts, early, naks;
};

/*
 * nb_msgs messages over each of NB_QPS RC streams a -> b, the data through fault_data
 * (b's receive path), ACKs and NAKs through fault_ack (a's), with the local ACK timeout
 * given.
 */
static void
rc_streams_two(const char *fault_data, const char *fault_ack, uint32_t nb_msgs, uint8_t mtu,
	       uint32_t seed, uint8_t timeout, struct rc_counts *out)
{
	struct tc_path path = { .mtu = mtu, .timeout = timeout, .retry_cnt = 7, .rnr_retry = 7,
				.min_rnr_timer = 1 };
	struct tc_qp_init in = { .type = DROCE_SHM_QPT_RC, .sq_size = 64, .rq_size = 64,
				 .max_sge = 2, .max_inline = 64 };
	struct es_stream st[NB_QPS];
	struct tc_cq *scq, *rcq;
	char fa[128], fb[128];
	struct tc_host a, b;
	uint32_t q;

	snprintf(fa, sizeof(fa), "seed=%u,%s", seed, fault_ack);
	snprintf(fb, sizeof(fb), "seed=%u,%s", seed + 1, fault_data);
	tc_pair_open_faults(&a, &b, 1, 1, fault_ack[0] ? fa : NULL, fault_data[0] ? fb : NULL);
	scq = tc_cq_create(&a, 1024);
	rcq = tc_cq_create(&b, 1024);
	/* a's PSNs wrap during the run */
	es_open_pairs(st, NB_QPS, nb_msgs, &a, &b, &in, scq, rcq, &path, 0xFFFF00, 7);
	es_run(st, NB_QPS, scq, rcq, 240);
	for (q = 0; q < NB_QPS; q++) {
		CHECK_EQ_U64(tc_qp_state(st[q].tx), DROCE_SHM_QPS_RTS);
		CHECK_EQ_U64(tc_qp_state(st[q].rx), DROCE_SHM_QPS_RTS);
	}
	print_counters(&a, &b);
	if (out != NULL) {
		out->timeouts = tc_counter(&a, "req_timeout");
		out->early = tc_counter(&a, "req_early_retransmit");
		out->naks = tc_counter(&a, "nak_seq_rcvd");
	}
	tc_pair_close(&a, &b);
}

/* The same faults both ways; timeout 12 (16.8 ms): engines share two CPUs with the test. */
static void
rc_streams(const char *fault, uint32_t nb_msgs, uint8_t mtu, uint32_t seed)
{
	rc_streams_two(fault, fault, nb_msgs, mtu, seed, 12, NULL);
}

DROCE_TEST(rc_no_loss)
{
	rc_streams("", 6000, IBV_MTU_4096, 1);
}

DROCE_TEST(rc_1pct_loss)
{
	rc_streams("drop=10000", 4000, IBV_MTU_1024, 3);
}

/*
 * A lost NAK, or a lost first resent packet, leaves only the requester's timer: the
 * responder NAKs a sequence error once (IBTA 9.7.5.1.2). With a 1 s local ACK timeout
 * (18) and a fifth of the ACKs and NAKs lost, early retransmission must recover every one
 * of those (go-backs before the timeout) and no timeout may fire: one would mean a
 * second's stall. The data direction loses 1%.
 */
DROCE_TEST(rc_lost_naks_recovered_early)
{
	struct rc_counts c;

	tc_next_pair_early();
	rc_streams_two("drop=10000", "drop=200000", 3000, IBV_MTU_1024, 11, 18, &c);
	printf("  a: %llu early go-backs, %llu timeouts, %llu NAKs\n",
	       (unsigned long long)c.early, (unsigned long long)c.timeouts,
	       (unsigned long long)c.naks);
	CHECK(c.early > 0);
	CHECK_EQ_U64(c.timeouts, 0);
}

DROCE_TEST(rc_10pct_loss_reorder_dup_corrupt)
{
	rc_streams("drop=100000,reorder=20000,dup=20000,corrupt=20000", 2500, IBV_MTU_4096, 5);
}

DROCE_TEST(rc_reorder_dup_corrupt_mtu256)
{
	rc_streams("reorder=50000,dup=50000,corrupt=10000", 1500, IBV_MTU_256, 7);
}

/*
 * UD through the same faults: each message is one packet; what arrives is byte-exact and
 * what is missing is at most what the link dropped or corrupted (the ICRC catches every
 * corrupted one). Receives are always posted ahead, so no loss is the receiver's.
 */
#define UD_MSGS		6000
#define UD_BATCH	64
#define UD_RECVS	256
#define UD_SLOT		(DROCE_GRH_LEN + 4096)

static uint32_t
ud_size(uint32_t seq)
{
	return seq % 7 == 0 ? 4096 : (seq * 2654435761u) % 1500 + 8;
}

static uint8_t
ud_byte(uint32_t seq, uint32_t i)
{
	return (uint8_t)(seq * 31 + i * 7 + (i >> 8));
}

DROCE_TEST(ud_loses_at_most_what_the_link_lost)
{
	struct tc_qp_init in = { .type = DROCE_SHM_QPT_UD, .sq_size = 128, .rq_size = 512,
				 .max_sge = 1, .max_inline = 0 };
	static uint8_t seen[UD_MSGS];
	struct droce_fault_stats fs;
	struct tc_qp *tx, *rx;
	struct tc_mr *smr, *rmr;
	struct tc_cq *scq, *rcq;
	struct tc_host a, b;
	struct ibv_wc wc[64];
	struct ibv_ah ah;
	uint32_t sent = 0, posted = 0, done_rx = 0, unique = 0, i, ahn;
	int n, k;

	memset(seen, 0, sizeof(seen));
	tc_pair_open_faults(&a, &b, 1, 1, NULL,
			    "seed=9,drop=100000,dup=20000,corrupt=20000,reorder=20000");
	scq = tc_cq_create(&a, 1024);
	rcq = tc_cq_create(&b, 1024);
	in.scq = in.rcq = scq;
	tx = tc_qp_create(&a, &in);
	in.scq = in.rcq = rcq;
	rx = tc_qp_create(&b, &in);
	tc_ud_ready(tx, 0x1234, 0);
	tc_ud_ready(rx, 0x1234, 0);
	CHECK_EQ_I64(tc_ah_create(&a, 0, &b, false, &ahn), 0);
	memset(&ah, 0, sizeof(ah));
	ah.handle = ahn;
	smr = tc_mr_reg(&a, (uint64_t)UD_BATCH * 4096, IBV_ACCESS_LOCAL_WRITE);
	rmr = tc_mr_reg(&b, (uint64_t)UD_RECVS * UD_SLOT, IBV_ACCESS_LOCAL_WRITE);
	while (sent < UD_MSGS) {
		uint32_t batch_start = sent;
		uint32_t batch_end = sent + UD_BATCH < UD_MSGS ? sent + UD_BATCH : UD_MSGS;
		int idle = 0;

		/* Keep UD_RECVS receives posted; a batch never outruns them (dups included). */
		while (posted - done_rx < UD_RECVS) {
			CHECK_EQ_I64(tc_recv(rx, posted, rmr, (uint64_t)(posted % UD_RECVS) * UD_SLOT,
					     UD_SLOT), 0);
			posted++;
		}
		for (; sent < batch_end; sent++) {
			uint8_t *p = smr->buf + (size_t)(sent % UD_BATCH) * 4096;
			struct ibv_sge sge = { .addr = (uintptr_t)p, .length = ud_size(sent),
					       .lkey = smr->lkey };
			struct ibv_send_wr wr, *bad;

			for (i = 0; i < sge.length; i++)
				p[i] = ud_byte(sent, i);
			memcpy(p, &sent, sizeof(sent));
			memset(&wr, 0, sizeof(wr));
			wr.wr_id = sent;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.opcode = IBV_WR_SEND;
			wr.send_flags = IBV_SEND_SIGNALED;
			wr.wr.ud.ah = &ah;
			wr.wr.ud.remote_qpn = rx->qpn;
			wr.wr.ud.remote_qkey = 0x1234;
			CHECK_EQ_I64(tc_post_send(tx, &wr, &bad), 0);
		}
		/* UD completes at send time: the batch's slots are free once all completed. */
		CHECK_EQ_I64(tc_wait(scq, (int)(sent - batch_start), wc, 5000),
			     (int)(sent - batch_start));
		for (k = 0; k < (int)(sent - batch_start); k++) {
			CHECK_EQ_U64(wc[k].status, IBV_WC_SUCCESS);
			CHECK_EQ_U64(wc[k].wr_id, batch_start + k);
		}
		/* Collect what arrives until the link has been quiet for 20 ms. */
		while (idle < 200) {
			n = tc_poll(rcq, 64, wc);
			CHECK(n >= 0);
			if (n == 0) {
				idle++;
				usleep(100);
				continue;
			}
			idle = 0;
			for (k = 0; k < n; k++) {
				const uint8_t *p = rmr->buf + (size_t)(wc[k].wr_id % UD_RECVS) * UD_SLOT +
						   DROCE_GRH_LEN;
				uint32_t seq;

				CHECK_EQ_U64(wc[k].status, IBV_WC_SUCCESS);
				CHECK_EQ_U64(wc[k].wr_id, done_rx);
				CHECK(wc[k].byte_len >= DROCE_GRH_LEN + sizeof(seq));
				memcpy(&seq, p, sizeof(seq));
				droce_test_ctx("UD message %u", seq);
				CHECK(seq < sent);
				CHECK_EQ_U64(wc[k].byte_len, DROCE_GRH_LEN + ud_size(seq));
				for (i = sizeof(seq); i < ud_size(seq); i++)
					CHECK_EQ_U64(p[i], ud_byte(seq, i));
				unique += seen[seq] == 0;
				seen[seq] = 1;
				done_rx++;
			}
		}
	}
	CHECK(droce_fault_stats_get(b.fault, -1, &fs) == 0);
	printf("  UD: %u sent, %u delivered (%u unique); link: %llu dropped, %llu corrupted, "
	       "%llu duplicated\n", UD_MSGS, done_rx, unique, (unsigned long long)fs.dropped,
	       (unsigned long long)fs.corrupted, (unsigned long long)fs.duplicated);
	/* Only the link lost messages: none missing beyond its drops and corruptions. */
	CHECK(unique + fs.dropped + fs.corrupted >= UD_MSGS);
	CHECK(unique < UD_MSGS);	/* the faults really applied */
	CHECK_EQ_U64(tc_counter(&b, "ud_drop"), 0);
	/*
	 * Every corrupted packet that was not delivered was refused by the parser; a flip in
	 * the Ethernet addresses (no CRC covers them on a ring) is delivered intact.
	 */
	CHECK(tc_counter(&b, "rx_malformed") > 0);
	CHECK(tc_counter(&b, "rx_malformed") + tc_counter(&b, "rx_foreign") <= fs.corrupted);
	tc_pair_close(&a, &b);
}
