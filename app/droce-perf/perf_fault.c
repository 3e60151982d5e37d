/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The loss options (--loss, --reorder, --dup, --corrupt, --fault-seed): the fault driver
 * (drivers/net/fault, doc/drivers/fault.md) on the receive path of both hosts' ports, so
 * the data direction (b receives) and the answers' (ACKs, READ responses: a receives) both
 * lose. RC delivers every message anyway (retransmission); UC and UD lose messages, and
 * sent = received + lost must hold with lost as the fault driver's counters on b explain.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_errno.h>

#include "perf.h"

#define FAULT_ARGS_LEN	(256 + PERF_BN_ARGS_LEN)

bool
perf_fault_lossy(const struct perf_run *r)
{
	return r->o->fault.on;
}

/* After both ports are configured and started: the driver's rx callbacks on every queue. */
int
perf_fault_attach(struct perf_run *r)
{
	const struct perf_fault_opts *fo = &r->o->fault;
	struct perf_host *h[2] = { &r->a, &r->b };
	char name[RTE_ETH_NAME_MAX_LEN], args[FAULT_ARGS_LEN];
	int i;

	if (!fo->on)
		return 0;
	for (i = 0; i < 2; i++) {
		/* a process that is one host (--client, --server): its own port only */
		if (!(i == 0 ? perf_run_has_a(r) : perf_run_has_b(r)))
			continue;
		if (rte_eth_dev_get_name_by_port(h[i]->port, name) != 0)
			return -1;
		/* a different stream per host: a's decisions are not b's */
		/* --bottleneck: b's receive path, where every QP's data meets (perf_cc.c) */
		snprintf(args, sizeof(args), "port=%s,seed=%" PRIu64 ",drop=%u,reorder=%u,dup=%u,"
			 "corrupt=%u%s%s", name, fo->seed + (uint64_t)i, fo->drop, fo->reorder,
			 fo->dup, fo->corrupt, i == 1 && r->o->cc.bottleneck[0] != '\0' ? "," : "",
			 i == 1 ? r->o->cc.bottleneck : "");
		h[i]->fault = droce_fault_attach(args);
		if (h[i]->fault == NULL) {
			fprintf(stderr, "droce-perf: host %s: fault driver on %s: %s\n",
				h[i]->name, name, rte_strerror(rte_errno));
			return -1;
		}
	}
	return 0;
}

void
perf_fault_stats(const struct perf_host *h, struct droce_fault_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (h->fault != NULL)
		droce_fault_stats_get(h->fault, -1, st);
}

/*
 * UC or UD under loss, every send of the round complete at a: has everything a sent
 * reached b's port (the fault driver received it), left the hold buffer, been taken by
 * b's engine and, if delivered, polled? Then received and lost are final. Exact counts,
 * no timer: a sends b only data packets (no ACKs on UC and UD).
 */
bool
perf_fault_settled(const struct perf_run *r, const struct droce_engine_stats *b0,
		   uint64_t received)
{
	struct droce_engine_stats a1, b1;
	struct droce_fault_stats fb;

	perf_host_stats(&r->a, &a1);
	perf_host_stats(&r->b, &b1);
	perf_fault_stats(&r->b, &fb);
	/* --bottleneck: nothing still queued in it either (bn_held) */
	return fb.received - r->fb0.received == a1.tx_pkts - r->a0.tx_pkts && fb.held == 0 &&
	       fb.bn_held == 0 &&
	       b1.rx_pkts - b0->rx_pkts == fb.delivered - r->fb0.delivered &&
	       b1.resp_msgs - b0->resp_msgs == received;
}

/*
 * UC or UD under loss: sent = received + lost, lost as the fault driver's counters on b's
 * port explain it for the round. Every dropped packet loses its message; a corrupted one
 * loses its own at most (ICRC; a flipped bit the ICRC does not cover may pass). Both
 * deliver the copies --dup makes of whole messages, having no duplicate detection (UD has
 * no PSN; a UC FIRST or ONLY starts a message whatever its PSN, IB 9.8.2). On UC a packet
 * out of sequence ends the message in progress: a copy of a packet in a message loses at
 * most that one, a reordered packet its own and the one it lands in. With only --loss and
 * messages of one packet this is the equality sent = received + dropped. 0, or -1 after
 * printing why.
 */
int
perf_fault_check(const struct perf_run *r, const struct perf_bw *f)
{
	uint32_t mtu = 128u << r->o->mtu;
	int64_t ppm = (f->size + mtu - 1) / mtu, lost = (int64_t)(f->sent - f->received);
	int64_t dropped, corrupted, reordered, dup, lo, hi;
	struct droce_fault_stats fb;

	perf_fault_stats(&r->b, &fb);
	/* the drop fault's, and the bottleneck's tail drops (--bottleneck) */
	dropped = (int64_t)(fb.dropped - r->fb0.dropped + fb.bn_dropped - r->fb0.bn_dropped);
	corrupted = (int64_t)(fb.corrupted - r->fb0.corrupted);
	reordered = (int64_t)(fb.reordered - r->fb0.reordered);
	dup = (int64_t)(fb.duplicated - r->fb0.duplicated);
	lo = (dropped + ppm - 1) / ppm - dup;
	hi = dropped + corrupted + (r->o->qp_type == DROCE_SHM_QPT_UC ? 2 * reordered + dup : 0);
	if (lost >= lo && lost <= hi)
		return 0;
	fprintf(stderr, "droce-perf: %llu messages sent, %llu received: %lld lost, not "
		"%lld..%lld as host b's fault driver explains (dropped %lld, corrupted %lld, "
		"reordered %lld, duplicated %lld packets; %lld per message)\n",
		(unsigned long long)f->sent, (unsigned long long)f->received, (long long)lost,
		(long long)lo, (long long)hi, (long long)dropped, (long long)corrupted,
		(long long)reordered, (long long)dup, (long long)ppm);
	return -1;
}
