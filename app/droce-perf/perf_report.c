/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Output: perftest's tables (its RESULT_FMT_G / REPORT_FMT and RESULT_FMT_LAT /
 * REPORT_FMT_LAT, src/perftest_parameters.h, spacing kept so scripts that parse
 * ib_write_bw and ib_send_lat parse this), testpmd's per-port statistics at the end, and
 * with --json one JSON object per line for each figure and each port instead.
 */
#include <inttypes.h>
#include <stdio.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>

#include "perf.h"

#define RESULT_LINE	"---------------------------------------------------------------------------------------\n"
#define RESULT_FMT_G	" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
#define REPORT_FMT	" %-7lu    %-10" PRIu64 "       %-7.2lf            %-7.2lf\t\t     %-7.6lf\n"
#define RESULT_FMT_LAT	" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99%% percentile[usec]   99.9%% percentile[usec] \n"
#define REPORT_FMT_LAT	" %-7lu %" PRIu64 "          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f\n"

static const char *
conn_name(const struct perf_run *r)
{
	if (r->o->mode->raw)
		return "raw";
	if (r->o->qp_type == DROCE_SHM_QPT_UD)
		return "UD";
	return r->o->qp_type == DROCE_SHM_QPT_UC ? "UC" : "RC";
}

void
perf_report_header(const struct perf_run *r)
{
	const struct perf_opts *o = r->o;

	if (o->json)
		return;
	printf(RESULT_LINE);
	if (o->role == PERF_ROLE_BOTH)
		printf(" droce-perf %s, %s, %u QP(s), %u engine(s) per host, MTU %u, ports %u "
		       "(host a) and %u (host b)\n", o->mode->name, conn_name(r),
		       o->mode->raw ? 0 : o->qps, r->a.nb_engines, 128u << o->mtu,
		       r->a.port, r->b.port);
	else
		printf(" droce-perf %s, %s, %u QP(s), MTU %u, port 0: host %s, the %s, peer %s "
		       "(TCP port %u)\n", o->mode->name, conn_name(r),
		       o->mode->raw ? 0 : o->qps,
		       128u << o->mtu, o->role == PERF_ROLE_CLIENT ? "a" : "b",
		       o->role == PERF_ROLE_CLIENT ? "client" : "server", perf_peer_name(r),
		       o->tcp_port);
	if (o->role == PERF_ROLE_BOTH && perf_run_splits(r))
		printf(" host a on lcore %u (main), host b on lcore %u\n", r->a_lcore, r->b_lcore);
	else if (o->role == PERF_ROLE_BOTH)
		printf(" both hosts on lcore %u%s\n", r->a_lcore,
		       r->a_lcore == rte_get_main_lcore() ? "" : ", the main lcore in control");
	if (o->ipv6 || o->fault.on)
		printf(" RoCEv2 over %s; fault driver on both ports: loss %u, reorder %u, dup %u, "
		       "corrupt %u ppm, seed %" PRIu64 "\n", o->ipv6 ? "IPv6" : "IPv4",
		       o->fault.drop, o->fault.reorder, o->fault.dup, o->fault.corrupt,
		       o->fault.seed);
	if (o->rate > 0)
		printf(" rate limit %.6g %s per QP, burst %u\n", o->rate,
		       o->rate_bits ? "bits/s" : o->mode->raw ? "frames/s" : "msg/s",
		       o->burst);
	else if (o->burst != PERF_MAX_BURST)
		printf(" burst %u\n", o->burst);
	printf(RESULT_LINE);
	printf(o->mode->latency ? RESULT_FMT_LAT : RESULT_FMT_G);
	fflush(stdout);
}

/* A count for --json, or null: the other process counted it and did not say. */
static const char *
count_json(uint64_t v, bool known, char buf[24])
{
	if (!known)
		return "null";
	snprintf(buf, 24, "%" PRIu64, v);
	return buf;
}

void
perf_report_bw(const struct perf_run *r, const struct perf_bw *f)
{
	const struct perf_opts *o = r->o;
	char sent[24], received[24];

	if (o->json) {
		printf("{\"figure\": \"bw\", \"mode\": \"%s\", \"connection\": \"%s\", "
		       "\"qps\": %u, \"mtu\": %u, \"bytes\": %u, \"iterations\": %" PRIu64 ", "
		       "\"seconds\": %.6f, \"bw_peak_gbps\": %.6f, \"bw_average_gbps\": %.6f, "
		       "\"msg_rate_mpps\": %.6f, \"sent\": %s, \"received\": %s, "
		       "\"lost\": %" PRIu64 ", \"retransmits\": %" PRIu64 ", \"ip\": \"%s\"",
		       o->mode->name, conn_name(r), o->mode->raw ? 0 : o->qps,
		       128u << o->mtu, f->size, f->iters, f->secs, f->peak_gbps, f->avg_gbps,
		       f->mpps, count_json(f->sent, f->sent_known, sent),
		       count_json(f->received, f->received_known, received), f->lost,
		       f->retransmits, o->ipv6 ? "ipv6" : "ipv4");
		if (f->server_known)
			printf(", \"server_received\": %" PRIu64 ", \"server_sent_back\": %" PRIu64,
			       f->server_rx, f->server_fwd);
		printf("}\n");
	} else {
		printf(REPORT_FMT, (unsigned long)f->size, f->iters, f->peak_gbps, f->avg_gbps,
		       f->mpps);
	}
	/*
	 * raw with a peer process: a link between processes drops what arrives while the
	 * receiver is off its CPU; both ends print what was lost where.
	 */
	if (!o->json && f->server_known)
		printf(" # client sent %" PRIu64 ", server received %" PRIu64 ", lost %" PRIu64
		       "%s", f->sent, f->server_rx,
		       f->sent > f->server_rx ? f->sent - f->server_rx : 0,
		       f->back_known ? "" : "\n");
	if (!o->json && f->back_known)
		printf("; server sent back %" PRIu64 ", client received %" PRIu64 "\n",
		       f->server_fwd, f->received);
	/* under loss the figures are goodput: what was delivered, and what it cost */
	if (!o->json && o->fault.on)
		printf(" # sent %" PRIu64 ", received %" PRIu64 ", lost %" PRIu64 ", packets "
		       "retransmitted %" PRIu64 "\n", f->sent, f->received, f->lost,
		       f->retransmits);
	fflush(stdout);
}

void
perf_report_lat(const struct perf_run *r, const struct perf_lat *f)
{
	const struct perf_opts *o = r->o;

	if (o->json)
		printf("{\"figure\": \"lat\", \"mode\": \"%s\", \"connection\": \"%s\", "
		       "\"mtu\": %u, \"bytes\": %u, \"iterations\": %" PRIu64 ", "
		       "\"t_min_us\": %.3f, \"t_max_us\": %.3f, \"t_typical_us\": %.3f, "
		       "\"t_avg_us\": %.3f, \"t_stdev_us\": %.3f, \"p99_us\": %.3f, "
		       "\"p99_9_us\": %.3f}\n",
		       o->mode->name, conn_name(r), 128u << o->mtu, f->size, f->iters,
		       f->min_us, f->max_us, f->typical_us, f->avg_us, f->stdev_us, f->p99_us,
		       f->p999_us);
	else
		printf(REPORT_FMT_LAT, (unsigned long)f->size, f->iters, f->min_us, f->max_us,
		       f->typical_us, f->avg_us, f->stdev_us, f->p99_us, f->p999_us);
	fflush(stdout);
}

void
perf_report_footer(const struct perf_run *r)
{
	if (!r->o->json)
		printf(RESULT_LINE);
}

/* testpmd's "show port stats" block, for each host's port. */
void
perf_report_ports(const struct perf_run *r)
{
	perf_report_ports_since(r, NULL);
}

/* Per second since the mark, which moves to now; 0 the first time, as testpmd's. */
static void
port_rates(const struct rte_eth_stats *st, struct perf_port_mark *m, double rate[4])
{
	uint64_t now = rte_rdtsc();
	double secs = m->tsc != 0 ? (double)(now - m->tsc) / (double)rte_get_tsc_hz() : 0;
	uint64_t d[4] = { st->ipackets - m->ipackets, st->ibytes - m->ibytes,
			  st->opackets - m->opackets, st->obytes - m->obytes };
	int k;

	/* after a clear the counts are below the mark */
	if (st->ipackets < m->ipackets || st->opackets < m->opackets)
		secs = 0;
	for (k = 0; k < 4; k++)
		rate[k] = secs > 0 ? (double)d[k] / secs : 0;
	rate[1] *= 8;
	rate[3] *= 8;
	m->tsc = now;
	m->ipackets = st->ipackets;
	m->ibytes = st->ibytes;
	m->opackets = st->opackets;
	m->obytes = st->obytes;
}

void
perf_report_ports_since(const struct perf_run *r, struct perf_port_mark since[2])
{
	const struct perf_host *h[2] = { &r->a, &r->b };
	struct rte_eth_stats st;
	double rate[4] = { 0 };	/* rx pps, rx bps, tx pps, tx bps */
	int i;

	for (i = 0; i < 2; i++) {
		if (!h[i]->port_started || rte_eth_stats_get(h[i]->port, &st) != 0)
			continue;
		if (since != NULL)
			port_rates(&st, &since[i], rate);
		if (r->o->json && since != NULL) {
			printf("{\"figure\": \"port\", \"port\": %u, \"host\": \"%s\", "
			       "\"rx_packets\": %" PRIu64 ", \"rx_missed\": %" PRIu64 ", "
			       "\"rx_bytes\": %" PRIu64 ", \"rx_errors\": %" PRIu64 ", "
			       "\"rx_nombuf\": %" PRIu64 ", \"tx_packets\": %" PRIu64 ", "
			       "\"tx_errors\": %" PRIu64 ", \"tx_bytes\": %" PRIu64 ", "
			       "\"rx_pps\": %.0f, \"rx_bps\": %.0f, \"tx_pps\": %.0f, "
			       "\"tx_bps\": %.0f}\n",
			       h[i]->port, h[i]->name, st.ipackets, st.imissed, st.ibytes,
			       st.ierrors, st.rx_nombuf, st.opackets, st.oerrors, st.obytes,
			       rate[0], rate[1], rate[2], rate[3]);
			continue;
		}
		if (r->o->json) {
			printf("{\"figure\": \"port\", \"port\": %u, \"host\": \"%s\", "
			       "\"rx_packets\": %" PRIu64 ", \"rx_missed\": %" PRIu64 ", "
			       "\"rx_bytes\": %" PRIu64 ", \"rx_errors\": %" PRIu64 ", "
			       "\"rx_nombuf\": %" PRIu64 ", \"tx_packets\": %" PRIu64 ", "
			       "\"tx_errors\": %" PRIu64 ", \"tx_bytes\": %" PRIu64 "}\n",
			       h[i]->port, h[i]->name, st.ipackets, st.imissed, st.ibytes,
			       st.ierrors, st.rx_nombuf, st.opackets, st.oerrors, st.obytes);
			continue;
		}
		printf("\n  ######################## NIC statistics for port %-2u #########################\n",
		       h[i]->port);
		printf("  RX-packets: %-10" PRIu64 " RX-missed: %-10" PRIu64 " RX-bytes:  %-" PRIu64 "\n",
		       st.ipackets, st.imissed, st.ibytes);
		printf("  RX-errors: %" PRIu64 "\n", st.ierrors);
		printf("  RX-nombuf:  %-10" PRIu64 "\n", st.rx_nombuf);
		printf("  TX-packets: %-10" PRIu64 " TX-errors: %-10" PRIu64 " TX-bytes:  %-" PRIu64 "\n",
		       st.opackets, st.oerrors, st.obytes);
		if (since != NULL)
			printf("\n  Throughput (since last show)\n"
			       "  Rx-pps: %12.0f          Rx-bps: %12.0f\n"
			       "  Tx-pps: %12.0f          Tx-bps: %12.0f\n",
			       rate[0], rate[1], rate[2], rate[3]);
		printf("  ############################################################################\n");
	}
	fflush(stdout);
}

/* The fault driver's counters of each host's port (the loss options), after the ports'. */
void
perf_report_faults(const struct perf_run *r)
{
	const struct perf_host *h[2] = { &r->a, &r->b };
	struct droce_fault_stats st;
	const uint64_t *v = (const uint64_t *)&st;
	size_t k;
	int i;

	for (i = 0; i < 2; i++) {
		if (h[i]->fault == NULL)
			continue;
		perf_fault_stats(h[i], &st);
		if (r->o->json) {
			printf("{\"figure\": \"fault\", \"port\": %u, \"host\": \"%s\"",
			       h[i]->port, h[i]->name);
			for (k = 0; k < DROCE_FAULT_NB_COUNTERS; k++)
				printf(", \"%s\": %" PRIu64, droce_fault_counter_names[k], v[k]);
			printf("}\n");
			continue;
		}
		printf("\n  ####################### Fault statistics for port %-2u #######################\n",
		       h[i]->port);
		for (k = 0; k < DROCE_FAULT_NB_COUNTERS; k++)
			printf("  %-12s %-10" PRIu64 "%s", droce_fault_counter_names[k], v[k],
			       k % 3 == 2 || k + 1 == DROCE_FAULT_NB_COUNTERS ? "\n" : " ");
		printf("  ############################################################################\n");
	}
	fflush(stdout);
}
