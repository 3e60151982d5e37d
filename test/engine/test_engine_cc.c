/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Congestion control between two engines (doc/congestion.md): RC streams a -> b on four
 * QPs through drivers/net/fault's bottleneck queue on b's receive path (a 200 Mb/s switch
 * port, 256 KiB of buffer, marking CE from 8 KiB to 64 KiB as packets leave). With DCQCN
 * every message still arrives exactly once and byte-exact (engine_stream.c checks each),
 * CE marks are answered with CNPs, CNPs cut the QPs' rates and the requester paces them.
 * Without it the same streams arrive too, through tail drops and go-back-N, with no CNP
 * and nothing paced. The rates and fairness are droce-perf's test (test/perf).
 */
#include <stdio.h>

#include "droce_test.h"
#include "engine_stream.h"

#define NB_QPS		4
#define NB_MSGS		800
#define BOTTLENECK	"rate=200,buffer=262144,ecn_min=8192,ecn_max=65536,ecn_pmax=200000," \
			"ecn_dequeue=1"

struct cc_run {
	uint64_t marked, dropped;	/* at the bottleneck */
	uint64_t cnp_sent, rx_ce;	/* b: the notification point */
	uint64_t rx_cnp, paced, retransmit, cuts;	/* a: the reaction point */
	bool rp;			/* a's QPs' reaction point */
};

static void
cc_streams(const struct droce_cc_params *cc, struct cc_run *out)
{
	struct tc_path path = { .mtu = IBV_MTU_4096, .timeout = 14, .retry_cnt = 7,
				.rnr_retry = 7, .min_rnr_timer = 1 };
	struct tc_qp_init in = { .type = DROCE_SHM_QPT_RC, .sq_size = 64, .rq_size = 64,
				 .max_sge = 2, .max_inline = 64 };
	struct es_stream st[NB_QPS];
	struct droce_fault_stats fs;
	struct tc_cq *scq, *rcq;
	struct tc_host a, b;
	uint32_t q;

	tc_hosts_cc(cc);
	tc_pair_open_faults(&a, &b, 1, 1, NULL, "seed=3," BOTTLENECK);
	scq = tc_cq_create(&a, 1024);
	rcq = tc_cq_create(&b, 1024);
	es_open_pairs(st, NB_QPS, NB_MSGS, &a, &b, &in, scq, rcq, &path, 0, 100);
	es_run(st, NB_QPS, scq, rcq, 120);
	CHECK(droce_fault_stats_get(b.fault, -1, &fs) == 0);
	*out = (struct cc_run){
		.marked = fs.bn_marked, .dropped = fs.bn_dropped,
		.cnp_sent = tc_counter(&b, "cnp_sent"), .rx_ce = tc_counter(&b, "rx_ce"),
		.rx_cnp = tc_counter(&a, "rx_cnp"), .paced = tc_counter(&a, "cc_paced"),
		.retransmit = tc_counter(&a, "req_retransmit"),
	};
	for (q = 0; q < NB_QPS; q++) {
		struct droce_engine_qp_cc c;

		CHECK_EQ_U64(tc_qp_state(st[q].tx), DROCE_SHM_QPS_RTS);
		droce_engine_qp_cc_get(st[q].tx->qp, &c);
		out->cuts += c.rate_cuts;
		out->rp = c.rp;
	}
	printf("  bottleneck: %llu marked, %llu dropped; b: %llu CE, %llu CNPs; a: %llu CNPs, "
	       "%llu cuts, %llu paced, %llu resent\n", (unsigned long long)out->marked,
	       (unsigned long long)out->dropped, (unsigned long long)out->rx_ce,
	       (unsigned long long)out->cnp_sent, (unsigned long long)out->rx_cnp,
	       (unsigned long long)out->cuts, (unsigned long long)out->paced,
	       (unsigned long long)out->retransmit);
	tc_pair_close(&a, &b);
	tc_hosts_cc(NULL);
}

DROCE_TEST(dcqcn_through_a_bottleneck)
{
	struct droce_cc_params cc;
	struct cc_run r;

	droce_cc_params_default(&cc);
	cc.roce_rp_enable = DROCE_CC_PRIO_ALL;
	cc.dce_tcp_rtt = 55;		/* a slow link: the paper's alpha period */
	cc_streams(&cc, &r);
	CHECK(r.rp);
	CHECK(r.marked > 0);
	/* every CE mark reached b's engine; the NP answered them within its interval */
	CHECK(r.rx_ce > 0 && r.rx_ce <= r.marked);
	CHECK(r.cnp_sent > 0 && r.cnp_sent <= r.rx_ce);
	CHECK_EQ_U64(r.rx_cnp, r.cnp_sent);	/* the link back loses nothing */
	CHECK(r.cuts > 0 && r.cuts <= r.rx_cnp);
	CHECK(r.paced > 0);
}

DROCE_TEST(no_dcqcn_tail_drops_and_go_back)
{
	struct droce_cc_params cc;
	struct cc_run r;

	droce_cc_params_default(&cc);
	droce_cc_params_disable(&cc);
	cc_streams(&cc, &r);
	CHECK(!r.rp);
	/* Not-ECT: nothing marked, no CNP; the queue overflows and RC resends */
	CHECK_EQ_U64(r.marked, 0);
	CHECK_EQ_U64(r.rx_ce + r.cnp_sent + r.rx_cnp + r.cuts + r.paced, 0);
	CHECK(r.dropped > 0);
	CHECK(r.retransmit > 0);
}
