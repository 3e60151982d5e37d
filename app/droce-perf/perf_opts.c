/* SPDX-License-Identifier: BSD-3-Clause */
/* droce-perf's own options (after EAL's "--"): every one has a --help line. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <arpa/inet.h>

#include <droce_shm.h>

#include "perf_oob.h"

#include "perf.h"

#define MAX_DURATION_S		86400.0
#define PCT_TO_PPM		10000.0
#define DEFAULT_FAULT_SEED	1

/* Long options without a short form. */
enum {
	OPT_ATOMIC_TYPE = 256,
	OPT_IPV6,
	OPT_LOSS,
	OPT_REORDER,
	OPT_DUP,
	OPT_CORRUPT,
	OPT_FAULT_SEED,
	OPT_BOTTLENECK,
	OPT_CC,
	OPT_DCQCN,
	OPT_ENGINES,
	OPT_PER_QP,
};
#define MAX_STATS_PERIOD_S	86400
/* --rate: up to 10^12 messages or bits a second, far above any link */
#define MAX_RATE		1e12

void
perf_usage(const char *prog)
{
	printf("usage: %s [EAL options] -- [options]\n"
	       "RoCEv2 traffic between two droce engines in this process: host a on port 0,\n"
	       "host b on port 1 of the EAL line's devices, or over an internal net_ring pair\n"
	       "when the EAL line gives none; or one host on its one port with --server or\n"
	       "--client, the peer another process (doc/tools/droce-perf.md).\n"
	       "  --mode MODE         send: RC/UC/UD SENDs a -> b, bandwidth and message rate;\n"
	       "                      write: RC/UC RDMA WRITEs a -> b, the same;\n"
	       "                      read: RC RDMA READs by a of b's buffer, the same;\n"
	       "                      atomic: RC atomics by a on 8-byte words of b's buffer;\n"
	       "                      lat: RC SEND ping-pong, half round trip;\n"
	       "                      raw-tx, raw-rx: frames a -> b without RoCE, the rate\n"
	       "                      sent (raw-tx) or received (raw-rx); raw-io: b sends back\n"
	       "                      what it receives (testpmd's io) (default send)\n"
	       "  -s, --size BYTES    message size, %u..%u (default %u; lat %u; raw %u: the\n"
	       "                      payload of a RoCE packet, at most the MTU)\n"
	       "  -a, --all           every power of two from %u to %u bytes\n"
	       "  -q, --qps N         QP pairs, 1..%u, in send, write, read and atomic (default\n"
	       "                      1; CMP_AND_SWAP at most %u); a host has an engine (and a\n"
	       "                      queue each way) per 4096 QPs\n"
	       "  -n, --iters N       messages per QP per size (default %u; lat %u; raw:\n"
	       "                      frames, %u)\n"
	       "  -D, --duration SECS measure for SECS seconds per size instead of -n\n"
	       "  -c, --connection T  RC or UC, in send and write; UD in send, messages at most\n"
	       "                      the MTU (default RC)\n"
	       "  -m, --mtu BYTES     path MTU: 256, 512, 1024, 2048 or 4096 (default 4096)\n"
	       "  -u, --timeout N     the local ACK timeout, 4.096 us * 2^N, 1..31 (perftest's\n"
	       "                      -u; default 18, 1.07 s; 14, 67 ms, under the loss options)\n"
	       "      --atomic-type T atomic: FETCH_AND_ADD or CMP_AND_SWAP (default\n"
	       "                      FETCH_AND_ADD); size 8\n"
	       "      --ipv6          IPv6 GIDs fd00:dc::1 and ::2: RoCEv2 over IPv6 (default\n"
	       "                      IPv4, ::ffff:192.0.2.1 and .2)\n"
	       "      --loss PCT      the fault driver on both hosts' ports drops PCT %% of the\n"
	       "                      packets each receives (a decimal, 0..100)\n"
	       "      --reorder PCT   ... holds PCT %% until a later burst\n"
	       "      --dup PCT       ... delivers PCT %% twice\n"
	       "      --corrupt PCT   ... flips a bit in PCT %%\n"
	       "      --fault-seed N  the fault driver's seed (default %u; host b's N + 1)\n",
	       prog, PERF_MIN_SIZE, PERF_MAX_SIZE, PERF_DEFAULT_BW_SIZE, PERF_DEFAULT_LAT_SIZE,
	       PERF_DEFAULT_RAW_SIZE, PERF_MIN_SIZE, PERF_MAX_SIZE, PERF_MAX_QPS,
	       PERF_ATOMIC_WORDS, PERF_DEFAULT_BW_ITERS, PERF_DEFAULT_LAT_ITERS,
	       PERF_DEFAULT_RAW_ITERS, DEFAULT_FAULT_SEED);
	perf_cc_usage();
	printf("      --json          one JSON object per line, per figure and per port, instead\n"
	       "                      of the tables\n"
	       "      --burst N       WRs per post call, 1..%u (raw: frames per tx burst)\n"
	       "                      (default %u)\n"
	       "      --rate R        a rate limit per QP (raw: of the link): R messages (raw:\n"
	       "                      frames) a second, or Rbps bits of payload (raw: of\n"
	       "                      frames) a second; R a decimal with an optional k, M or G\n"
	       "                      (10^3, 10^6, 10^9): 20000, 2.5k, 10Mbps, 1.5Gbps; off\n"
	       "                      for none (default off)\n"
	       "  (EAL -l 0,1 without -i and --stats-period: host a on the main lcore, host b\n"
	       "  on the worker, in RC and the raw modes)\n"
	       "  -i, --interactive   the prompt (help lists its commands): the run goes on a\n"
	       "                      worker lcore, so the EAL line needs two (-l 0,1); start\n"
	       "                      runs by -n or -D, or until stop when neither is given\n"
	       "      --auto-start    with -i, start a run at once (without -i a run always\n"
	       "                      starts at once)\n"
	       "      --stats-period N  every N seconds while a run goes, the ports' statistics\n"
	       "                      and rates; the run goes on a worker lcore (-l 0,1) and,\n"
	       "                      without -n and -D, until SIGINT or SIGTERM\n"
	       "      --server        one host, on the EAL line's one port: host b, which\n"
	       "                      receives (lat: answers); waits on TCP --port for the\n"
	       "                      peer, droce-perf --client or a perftest client; raw\n"
	       "                      modes: until the client's end (its -n or -D)\n"
	       "      --client HOST   one host, on the EAL line's one port: host a, which sends\n"
	       "                      (lat: pings); connects to HOST's --port, droce-perf\n"
	       "                      --server or a perftest server (ib_send_bw, ib_write_bw,\n"
	       "                      ib_send_lat); both sides need the same -s, -n, -q, -c\n"
	       "                      (raw modes: the same --mode and -s, both droce-perf)\n"
	       "  -p, --port PORT     the out-of-band TCP port (default %u, perftest's)\n"
	       "      --ip ADDR[/LEN] this host's IPv4 address and subnet with --server or\n"
	       "                      --client, its GID ::ffff:ADDR; the peer's MAC is learnt\n"
	       "                      by ARP (default 192.0.2.1/24 client, 192.0.2.2/24 server)\n"
	       "  -h, --help          this text\n",
	       PERF_MAX_BURST, PERF_MAX_BURST, PERF_OOB_DEFAULT_PORT);
}

/* A whole decimal number in [min, max], or -1 with a message naming the option. */
static int
parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *v)
{
	char *end;
	unsigned long long x;

	errno = 0;
	x = strtoull(s, &end, 10);
	if (s[0] == '\0' || s[0] == '-' || *end != '\0' || errno != 0) {
		fprintf(stderr, "droce-perf: %s '%s': not a number\n", opt, s);
		return -1;
	}
	if (x < min || x > max) {
		fprintf(stderr, "droce-perf: %s %llu: out of range %" PRIu64 "..%" PRIu64 "\n",
			opt, x, min, max);
		return -1;
	}
	*v = x;
	return 0;
}

static int
parse_mtu(const char *s, uint8_t *mtu)
{
	uint64_t v;
	uint8_t m;

	if (parse_u64("--mtu", s, 256, 4096, &v) != 0)
		return -1;
	for (m = IBV_MTU_256; m <= IBV_MTU_4096; m++) {
		if (v == 128u << m) {
			*mtu = m;
			return 0;
		}
	}
	fprintf(stderr, "droce-perf: --mtu %s: not 256, 512, 1024, 2048 or 4096\n", s);
	return -1;
}

/* --ip ADDR[/LEN]: a unicast IPv4 address and its on-link prefix (default /24). */
static int
parse_ipv4(const char *s, uint32_t *ip, uint8_t *len)
{
	char buf[INET_ADDRSTRLEN];
	const char *slash = strchr(s, '/');
	size_t n = slash != NULL ? (size_t)(slash - s) : strlen(s);
	struct in_addr a;
	uint64_t v = 24;

	if (n >= sizeof(buf)) {
		fprintf(stderr, "droce-perf: --ip '%s': not an IPv4 address\n", s);
		return -1;
	}
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (inet_pton(AF_INET, buf, &a) != 1 || a.s_addr == 0) {
		fprintf(stderr, "droce-perf: --ip '%s': not an IPv4 address\n", s);
		return -1;
	}
	if (slash != NULL && parse_u64("--ip's prefix length", slash + 1, 1, 32, &v) != 0)
		return -1;
	*ip = ntohl(a.s_addr);
	*len = (uint8_t)v;
	return 0;
}

/*
 * What a peer in another process cannot run: perftest exchanges no test settings, so both
 * ends stop after the -n they were each given, at one size (its -a runs other sizes than
 * ours). The raw modes have droce-perf's own exchange (perf_peer.c), which tells the
 * server when the client is done: the client's -n or -D ends the run.
 */
static int
perf_opts_check_peer(const struct perf_opts *o)
{
	const char *role = o->role == PERF_ROLE_SERVER ? "server" : "client";
	bool raw = o->mode->raw;

	if (o->mode->peer == PERF_PEER_NONE) {
		fprintf(stderr, "droce-perf: --%s: only send, write, lat and the raw modes have a "
			"peer in another process\n", role);
		return -1;
	}
	if (raw && o->role == PERF_ROLE_SERVER && (o->iters != 0 || o->duration_s > 0)) {
		fprintf(stderr, "droce-perf: --server: in the raw modes the client's -n or -D ends "
			"the run: give them to the client\n");
		return -1;
	}
	if (o->qp_type == DROCE_SHM_QPT_UD || o->ipv6) {
		fprintf(stderr, "droce-perf: --%s: the peer in another process is met over RC or "
			"UC and IPv4 (--ip)\n", role);
		return -1;
	}
	/* UC under loss counts what b's fault driver dropped: b is the other process */
	if (o->fault.on && o->qp_type != DROCE_SHM_QPT_RC) {
		fprintf(stderr, "droce-perf: --%s: the loss options with a peer in another "
			"process: RC only\n", role);
		return -1;
	}
	if (o->interactive || o->stats_period != 0) {
		fprintf(stderr, "droce-perf: --%s: -i and --stats-period run both hosts in this "
			"process\n", role);
		return -1;
	}
	if (o->all_sizes || (o->duration_s > 0 && !raw)) {
		fprintf(stderr, "droce-perf: --%s: one size and -n iterations (no --all; "
			"--duration in the raw modes only): both ends must agree on them\n", role);
		return -1;
	}
	return 0;
}

/* A percentage 0..100 (a decimal) as parts per million, for the fault driver. */
static int
parse_pct(const char *opt, const char *s, uint32_t *ppm)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (s[0] == '\0' || *end != '\0' || errno != 0 || v != v) {
		fprintf(stderr, "droce-perf: %s '%s': not a percentage\n", opt, s);
		return -1;
	}
	if (v < 0 || v > 100) {
		fprintf(stderr, "droce-perf: %s %s: out of range 0..100 (percent)\n", opt, s);
		return -1;
	}
	*ppm = (uint32_t)(v * PCT_TO_PPM + 0.5);
	return 0;
}

/* A row of the mode table (perf_modes.c) by its name. */
int
perf_opt_mode(const char *s, const struct perf_mode_ops **mode)
{
	unsigned int m;

	for (m = 0; perf_modes[m] != NULL; m++) {
		if (strcmp(s, perf_modes[m]->name) == 0) {
			*mode = perf_modes[m];
			return 0;
		}
	}
	fprintf(stderr, "droce-perf: --mode '%s': not one of", s);
	for (m = 0; perf_modes[m] != NULL; m++)
		fprintf(stderr, " %s", perf_modes[m]->name);
	fprintf(stderr, "\n");
	return -1;
}

int
perf_opt_size(const char *s, uint32_t *size)
{
	uint64_t v;

	if (parse_u64("--size", s, PERF_MIN_SIZE, PERF_MAX_SIZE, &v) != 0)
		return -1;
	*size = (uint32_t)v;
	return 0;
}

int
perf_opt_qps(const char *s, uint32_t *qps)
{
	uint64_t v;

	if (parse_u64("--qps", s, 1, PERF_MAX_QPS, &v) != 0)
		return -1;
	*qps = (uint32_t)v;
	return 0;
}

int
perf_opt_burst(const char *s, uint32_t *burst)
{
	uint64_t v;

	if (parse_u64("--burst", s, 1, PERF_MAX_BURST, &v) != 0)
		return -1;
	*burst = (uint32_t)v;
	return 0;
}

/* "off", or a decimal with an optional k, M or G, then "bps" for bits a second. */
int
perf_opt_rate(const char *s, double *rate, bool *bits)
{
	static const struct { char c; double mult; } si[] = {
		{ 'k', 1e3 }, { 'M', 1e6 }, { 'G', 1e9 },
	};
	char *end;
	double v;
	unsigned int i;

	if (strcmp(s, "off") == 0) {
		*rate = 0;
		*bits = false;
		return 0;
	}
	errno = 0;
	v = strtod(s, &end);
	if (s[0] == '\0' || end == s || errno != 0 || !isfinite(v))
		goto bad;
	for (i = 0; i < RTE_DIM(si); i++) {
		if (*end == si[i].c) {
			v *= si[i].mult;
			end++;
			break;
		}
	}
	*bits = strcmp(end, "bps") == 0;
	if (*end != '\0' && !*bits)
		goto bad;
	if (!(v >= 1 && v <= MAX_RATE)) {
		fprintf(stderr, "droce-perf: --rate %s: out of range 1..%.0e %s a second\n", s,
			MAX_RATE, *bits ? "bits" : "messages");
		return -1;
	}
	*rate = v;
	return 0;
bad:
	fprintf(stderr, "droce-perf: --rate '%s': not R (messages a second), Rbps (bits a "
		"second) with R a decimal and an optional k, M or G, or off\n", s);
	return -1;
}

/*
 * The rules every mode follows, from its row (what it allows: several QPs, UC, UD), then
 * the mode's own (its row's check_opts: atomic's size, the raw modes' IPv4 and no loss,
 * lat's one ping at a time).
 */
int
perf_opts_check(const struct perf_opts *o)
{
	const struct perf_mode_ops *m = o->mode;
	uint32_t largest = perf_largest_size(o);

	if (o->qps != 1 && !m->several_qps) {
		fprintf(stderr, "droce-perf: --qps: only send, write, read and atomic run several "
			"QPs\n");
		return -1;
	}
	if (o->qp_type == DROCE_SHM_QPT_UD && !m->ud) {
		fprintf(stderr, "droce-perf: --connection UD: only send (UD carries SENDs only, "
			"IB 9.8.3)\n");
		return -1;
	}
	if (o->qp_type == DROCE_SHM_QPT_UC && !m->raw && !m->uc) {
		fprintf(stderr, "droce-perf: --connection UC: %s is RC only (UC has no RDMA READ "
			"or atomics, IB 9.8.2; lat pings RC)\n", m->name);
		return -1;
	}
	if (o->qp_type != DROCE_SHM_QPT_RC && m->raw) {
		fprintf(stderr, "droce-perf: --connection: the raw modes have no QPs\n");
		return -1;
	}
	if (o->qp_type == DROCE_SHM_QPT_UD && !o->all_sizes && o->size > 128u << o->mtu) {
		fprintf(stderr, "droce-perf: --size %u: a UD message is one packet, at most the "
			"MTU (%u)\n", o->size, 128u << o->mtu);
		return -1;
	}
	if (m->check_opts != NULL && m->check_opts(o) != 0)
		return -1;
	if (o->qp_timeout != 0 && (m->raw || o->qp_type != DROCE_SHM_QPT_RC)) {
		fprintf(stderr, "droce-perf: --timeout: the local ACK timer is RC's\n");
		return -1;
	}
	/* The run counts a stall after STALL_S s without progress: a message a second at least. */
	if (o->rate > 0 && perf_rate_msgs(o, largest) < 1) {
		fprintf(stderr, "droce-perf: --rate %.0fbps: less than one message a second "
			"of %u bytes\n", o->rate, largest);
		return -1;
	}
	return 0;
}

int
perf_opts_parse(int argc, char **argv, struct perf_opts *o)
{
	static const struct option longopts[] = {
		{ "mode", required_argument, NULL, 'M' },
		{ "size", required_argument, NULL, 's' },
		{ "all", no_argument, NULL, 'a' },
		{ "qps", required_argument, NULL, 'q' },
		{ "iters", required_argument, NULL, 'n' },
		{ "duration", required_argument, NULL, 'D' },
		{ "connection", required_argument, NULL, 'c' },
		{ "mtu", required_argument, NULL, 'm' },
		{ "timeout", required_argument, NULL, 'u' },
		{ "json", no_argument, NULL, 'J' },
		{ "server", no_argument, NULL, 'S' },
		{ "client", required_argument, NULL, 'C' },
		{ "port", required_argument, NULL, 'p' },
		{ "ip", required_argument, NULL, 'I' },
		{ "atomic-type", required_argument, NULL, OPT_ATOMIC_TYPE },
		{ "ipv6", no_argument, NULL, OPT_IPV6 },
		{ "loss", required_argument, NULL, OPT_LOSS },
		{ "reorder", required_argument, NULL, OPT_REORDER },
		{ "dup", required_argument, NULL, OPT_DUP },
		{ "corrupt", required_argument, NULL, OPT_CORRUPT },
		{ "fault-seed", required_argument, NULL, OPT_FAULT_SEED },
		{ "bottleneck", required_argument, NULL, OPT_BOTTLENECK },
		{ "cc", required_argument, NULL, OPT_CC },
		{ "dcqcn", required_argument, NULL, OPT_DCQCN },
		{ "engines", required_argument, NULL, OPT_ENGINES },
		{ "per-qp", required_argument, NULL, OPT_PER_QP },
		{ "burst", required_argument, NULL, 'B' },
		{ "rate", required_argument, NULL, 'R' },
		{ "interactive", no_argument, NULL, 'i' },
		{ "auto-start", no_argument, NULL, 'A' },
		{ "stats-period", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool have_size = false, have_iters = false, have_type = false;
	const char *fault_opt = NULL, *name;
	bool have_peer_opt = false;
	uint64_t v;
	char *end;
	int c;

	memset(o, 0, sizeof(*o));
	o->mode = &perf_mode_send;
	o->qps = 1;
	o->qp_type = DROCE_SHM_QPT_RC;
	o->mtu = IBV_MTU_4096;
	o->fault.seed = DEFAULT_FAULT_SEED;
	droce_cc_params_default(&o->cc.params);
	o->burst = PERF_MAX_BURST;
	o->tcp_port = PERF_OOB_DEFAULT_PORT;
	optind = 1;
	opterr = 0;	/* our own messages, which name the option */
	while ((c = getopt_long(argc, argv, ":s:aq:n:D:c:m:u:p:ih", longopts, NULL)) != -1) {
		switch (c) {
		case 'M':
			if (perf_opt_mode(optarg, &o->mode) != 0)
				return -1;
			break;
		case 's':
			if (perf_opt_size(optarg, &o->size) != 0)
				return -1;
			have_size = true;
			break;
		case 'a':
			o->all_sizes = true;
			break;
		case 'q':
			if (perf_opt_qps(optarg, &o->qps) != 0)
				return -1;
			break;
		case 'n':
			if (parse_u64("--iters", optarg, 1, UINT32_MAX, &v) != 0)
				return -1;
			o->iters = v;
			have_iters = true;
			break;
		case 'D':
			errno = 0;
			o->duration_s = strtod(optarg, &end);
			if (optarg[0] == '\0' || *end != '\0' || errno != 0 ||
			    !(o->duration_s > 0 && o->duration_s <= MAX_DURATION_S)) {
				fprintf(stderr, "droce-perf: --duration '%s': not a number of "
					"seconds in (0, %.0f]\n", optarg, MAX_DURATION_S);
				return -1;
			}
			break;
		case 'c':
			if (strcmp(optarg, "RC") == 0) {
				o->qp_type = DROCE_SHM_QPT_RC;
			} else if (strcmp(optarg, "UC") == 0) {
				o->qp_type = DROCE_SHM_QPT_UC;
			} else if (strcmp(optarg, "UD") == 0) {
				o->qp_type = DROCE_SHM_QPT_UD;
			} else {
				fprintf(stderr, "droce-perf: --connection '%s': not RC, UC or UD\n",
					optarg);
				return -1;
			}
			break;
		case 'm':
			if (parse_mtu(optarg, &o->mtu) != 0)
				return -1;
			break;
		case 'J':
			o->json = true;
			break;
		case 'u':
			/* 0 would mean an infinite timer (IB 9.7.6.1.3): not offered */
			if (parse_u64("--timeout", optarg, 1, 31, &v) != 0)
				return -1;
			o->qp_timeout = (uint8_t)v;
			break;
		case OPT_ATOMIC_TYPE:
			/* perftest's -A names */
			if (strcmp(optarg, "CMP_AND_SWAP") == 0) {
				o->atomic_cas = true;
			} else if (strcmp(optarg, "FETCH_AND_ADD") == 0) {
				o->atomic_cas = false;
			} else {
				fprintf(stderr, "droce-perf: --atomic-type '%s': not FETCH_AND_ADD or "
					"CMP_AND_SWAP\n", optarg);
				return -1;
			}
			have_type = true;
			break;
		case OPT_IPV6:
			o->ipv6 = true;
			break;
		case OPT_LOSS:
		case OPT_REORDER:
		case OPT_DUP:
		case OPT_CORRUPT:
			name = c == OPT_LOSS ? "--loss" : c == OPT_REORDER ? "--reorder" :
			       c == OPT_DUP ? "--dup" : "--corrupt";
			if (parse_pct(name, optarg,
				      c == OPT_LOSS ? &o->fault.drop : c == OPT_REORDER ?
				      &o->fault.reorder : c == OPT_DUP ? &o->fault.dup :
				      &o->fault.corrupt) != 0)
				return -1;
			if (fault_opt == NULL)
				fault_opt = name;
			o->fault.on = true;
			break;
		case OPT_BOTTLENECK:
		case OPT_CC:
		case OPT_DCQCN:
		case OPT_ENGINES:
		case OPT_PER_QP:
			if (perf_cc_opt(o, c == OPT_BOTTLENECK ? PERF_CC_OPT_BOTTLENECK :
					c == OPT_CC ? PERF_CC_OPT_PARAM :
					c == OPT_DCQCN ? PERF_CC_OPT_DCQCN :
					c == OPT_ENGINES ? PERF_CC_OPT_ENGINES : PERF_CC_OPT_PER_QP,
					optarg) != 0)
				return -1;
			if (c == OPT_BOTTLENECK && fault_opt == NULL)
				fault_opt = "--bottleneck";
			break;
		case OPT_FAULT_SEED:
			if (parse_u64("--fault-seed", optarg, 0, UINT64_MAX - 1, &o->fault.seed) != 0)
				return -1;
			break;
		case 'B':
			if (perf_opt_burst(optarg, &o->burst) != 0)
				return -1;
			break;
		case 'R':
			if (perf_opt_rate(optarg, &o->rate, &o->rate_bits) != 0)
				return -1;
			break;
		case 'i':
			o->interactive = true;
			break;
		case 'A':
			o->auto_start = true;
			break;
		case 'P':
			if (parse_u64("--stats-period", optarg, 1, MAX_STATS_PERIOD_S, &v) != 0)
				return -1;
			o->stats_period = (uint32_t)v;
			break;
		case 'S':
		case 'C':
			if (o->role != PERF_ROLE_BOTH) {
				fprintf(stderr, "droce-perf: --server and --client exclude each "
					"other\n");
				return -1;
			}
			o->role = c == 'S' ? PERF_ROLE_SERVER : PERF_ROLE_CLIENT;
			o->peer = c == 'C' ? optarg : NULL;
			break;
		case 'p':
			if (parse_u64("--port", optarg, 1, UINT16_MAX, &v) != 0)
				return -1;
			o->tcp_port = (uint16_t)v;
			have_peer_opt = true;
			break;
		case 'I':
			if (parse_ipv4(optarg, &o->ipv4, &o->ipv4_prefix_len) != 0)
				return -1;
			have_peer_opt = true;
			break;
		case 'h':
			perf_usage(argv[0]);
			return 1;
		case ':':
			fprintf(stderr, "droce-perf: %s needs an argument\n", argv[optind - 1]);
			return -1;
		default:
			fprintf(stderr, "droce-perf: unknown option '%s' (--help lists them)\n",
				argv[optind - 1]);
			return -1;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "droce-perf: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	if (have_size && o->all_sizes) {
		fprintf(stderr, "droce-perf: --size and --all exclude each other\n");
		return -1;
	}
	if (have_iters && o->duration_s > 0) {
		fprintf(stderr, "droce-perf: --iters and --duration exclude each other\n");
		return -1;
	}
	/* by name: the option is atomic's own */
	if (have_type && strcmp(o->mode->name, "atomic") != 0) {
		fprintf(stderr, "droce-perf: --atomic-type: only with --mode atomic\n");
		return -1;
	}
	if (o->mode->raw && fault_opt != NULL) {
		fprintf(stderr, "droce-perf: %s: the loss options apply to the RoCE modes, not "
			"the raw link\n", fault_opt);
		return -1;
	}
	if (o->interactive && o->stats_period != 0) {
		fprintf(stderr, "droce-perf: --stats-period and -i exclude each other (show port "
			"stats all gives the statistics at the prompt)\n");
		return -1;
	}
	if (have_peer_opt && o->role == PERF_ROLE_BOTH) {
		fprintf(stderr, "droce-perf: --port and --ip need --server or --client\n");
		return -1;
	}
	if (o->role != PERF_ROLE_BOTH && perf_opts_check_peer(o) != 0)
		return -1;
	if (!have_size)
		o->size = o->mode->default_size;
	/* UD: one packet a message */
	if (!have_size && o->qp_type == DROCE_SHM_QPT_UD)
		o->size = RTE_MIN(o->size, 128u << o->mtu);
	/* The prompt and --stats-period run until stop or a signal when neither is given. */
	if (!have_iters && o->duration_s == 0 && !o->interactive && o->stats_period == 0)
		o->iters = o->mode->default_iters;
	return perf_opts_check(o);
}
