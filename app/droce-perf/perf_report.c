/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Output: perftest's tables (its RESULT_FMT_G / REPORT_FMT and RESULT_FMT_LAT /
 * REPORT_FMT_LAT, src/perftest_parameters.h, spacing kept so scripts that parse
 * ib_write_bw and ib_send_lat parse this), testpmd's per-port statistics at the end, and
 * with --json one JSON object per line for each figure and each port instead.
 */
#include <inttypes.h>
#include <stdio.h>

#include <rte_ethdev.h>

#include "perf.h"

#define RESULT_LINE	"---------------------------------------------------------------------------------------\n"
#define RESULT_FMT_G	" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
#define REPORT_FMT	" %-7lu    %-10" PRIu64 "       %-7.2lf            %-7.2lf\t\t     %-7.6lf\n"
#define RESULT_FMT_LAT	" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99%% percentile[usec]   99.9%% percentile[usec] \n"
#define REPORT_FMT_LAT	" %-7lu %" PRIu64 "          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f\n"

static const char *
conn_name(const struct perf_run *r)
{
	if (perf_mode_is_raw(r->o->mode))
		return "raw";
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
		       "(host a) and %u (host b)\n", perf_mode_names[o->mode], conn_name(r),
		       perf_mode_is_raw(o->mode) ? 0 : o->qps, r->a.nb_engines, 128u << o->mtu,
		       r->a.port, r->b.port);
	else
		printf(" droce-perf %s, %s, %u QP(s), MTU %u, port 0: host %s, the %s, peer %s "
		       "(TCP port %u)\n", perf_mode_names[o->mode], conn_name(r), o->qps,
		       128u << o->mtu, o->role == PERF_ROLE_CLIENT ? "a" : "b",
		       o->role == PERF_ROLE_CLIENT ? "client" : "server", perf_peer_name(r),
		       o->tcp_port);
	printf(RESULT_LINE);
	printf(o->mode == PERF_MODE_LAT ? RESULT_FMT_LAT : RESULT_FMT_G);
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

	if (o->json)
		printf("{\"figure\": \"bw\", \"mode\": \"%s\", \"connection\": \"%s\", "
		       "\"qps\": %u, \"mtu\": %u, \"bytes\": %u, \"iterations\": %" PRIu64 ", "
		       "\"seconds\": %.6f, \"bw_peak_gbps\": %.6f, \"bw_average_gbps\": %.6f, "
		       "\"msg_rate_mpps\": %.6f, \"sent\": %s, \"received\": %s}\n",
		       perf_mode_names[o->mode], conn_name(r), perf_mode_is_raw(o->mode) ? 0 : o->qps,
		       128u << o->mtu, f->size, f->iters, f->secs, f->peak_gbps, f->avg_gbps,
		       f->mpps, count_json(f->sent, f->sent_known, sent),
		       count_json(f->received, f->received_known, received));
	else
		printf(REPORT_FMT, (unsigned long)f->size, f->iters, f->peak_gbps, f->avg_gbps,
		       f->mpps);
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
		       perf_mode_names[o->mode], conn_name(r), 128u << o->mtu, f->size, f->iters,
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
	const struct perf_host *h[2] = { &r->a, &r->b };
	struct rte_eth_stats st;
	int i;

	for (i = 0; i < 2; i++) {
		if (!h[i]->port_started || rte_eth_stats_get(h[i]->port, &st) != 0)
			continue;
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
		printf("  ############################################################################\n");
	}
	fflush(stdout);
}
