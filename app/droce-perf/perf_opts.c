/* SPDX-License-Identifier: BSD-3-Clause */
/* droce-perf's own options (after EAL's "--"): every one has a --help line. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <droce_shm.h>

#include "perf.h"

/* perftest's defaults: 5000 iterations for bandwidth, 1000 for latency, 2 B latency size. */
#define DEFAULT_BW_ITERS	5000
#define DEFAULT_LAT_ITERS	1000
#define DEFAULT_RAW_ITERS	1000000
#define DEFAULT_BW_SIZE		65536
#define DEFAULT_LAT_SIZE	2
#define DEFAULT_RAW_SIZE	64
#define MAX_DURATION_S		86400.0

const char *const perf_mode_names[PERF_NB_MODES] = {
	[PERF_MODE_SEND] = "send",
	[PERF_MODE_WRITE] = "write",
	[PERF_MODE_LAT] = "lat",
	[PERF_MODE_RAW_TX] = "raw-tx",
	[PERF_MODE_RAW_RX] = "raw-rx",
	[PERF_MODE_RAW_IO] = "raw-io",
};

void
perf_usage(const char *prog)
{
	printf("usage: %s [EAL options] -- [options]\n"
	       "RoCEv2 traffic between two droce engines in this process: host a on port 0,\n"
	       "host b on port 1 of the EAL line's devices, or over an internal net_ring pair\n"
	       "when the EAL line gives none (doc/tools/droce-perf.md).\n"
	       "  --mode MODE         send: RC/UC SENDs a -> b, bandwidth and message rate;\n"
	       "                      write: RC/UC RDMA WRITEs a -> b, the same;\n"
	       "                      lat: RC SEND ping-pong, half round trip;\n"
	       "                      raw-tx, raw-rx: frames a -> b without RoCE, the rate\n"
	       "                      sent (raw-tx) or received (raw-rx); raw-io: b sends back\n"
	       "                      what it receives (testpmd's io) (default send)\n"
	       "  -s, --size BYTES    message size, %u..%u (default %u; lat %u; raw %u: the\n"
	       "                      payload of a RoCE packet, at most the MTU)\n"
	       "  -a, --all           every power of two from %u to %u bytes\n"
	       "  -q, --qps N         QP pairs, 1..%u, in send and write (default 1); a host\n"
	       "                      has an engine (and a queue each way) per 4096 QPs\n"
	       "  -n, --iters N       messages per QP per size (default %u; lat %u; raw:\n"
	       "                      frames, %u)\n"
	       "  -D, --duration SECS measure for SECS seconds per size instead of -n\n"
	       "  -c, --connection T  RC or UC, in send and write (default RC)\n"
	       "  -m, --mtu BYTES     path MTU: 256, 512, 1024, 2048 or 4096 (default 4096)\n"
	       "      --json          one JSON object per line, per figure and per port, instead\n"
	       "                      of the tables\n"
	       "  -h, --help          this text\n",
	       prog, PERF_MIN_SIZE, PERF_MAX_SIZE, DEFAULT_BW_SIZE, DEFAULT_LAT_SIZE,
	       DEFAULT_RAW_SIZE, PERF_MIN_SIZE, PERF_MAX_SIZE, PERF_MAX_QPS, DEFAULT_BW_ITERS,
	       DEFAULT_LAT_ITERS, DEFAULT_RAW_ITERS);
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
		{ "json", no_argument, NULL, 'J' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool have_size = false, have_iters = false, have_qps = false, have_conn = false;
	uint64_t v;
	char *end;
	int c, m;

	memset(o, 0, sizeof(*o));
	o->mode = PERF_MODE_SEND;
	o->qps = 1;
	o->qp_type = DROCE_SHM_QPT_RC;
	o->mtu = IBV_MTU_4096;
	optind = 1;
	opterr = 0;	/* our own messages, which name the option */
	while ((c = getopt_long(argc, argv, ":s:aq:n:D:c:m:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'M':
			for (m = 0; m < PERF_NB_MODES; m++) {
				if (strcmp(optarg, perf_mode_names[m]) == 0)
					break;
			}
			if (m == PERF_NB_MODES) {
				fprintf(stderr, "droce-perf: --mode '%s': not send, write, lat, "
					"raw-tx, raw-rx or raw-io\n", optarg);
				return -1;
			}
			o->mode = (enum perf_mode)m;
			break;
		case 's':
			if (parse_u64("--size", optarg, PERF_MIN_SIZE, PERF_MAX_SIZE, &v) != 0)
				return -1;
			o->size = (uint32_t)v;
			have_size = true;
			break;
		case 'a':
			o->all_sizes = true;
			break;
		case 'q':
			if (parse_u64("--qps", optarg, 1, PERF_MAX_QPS, &v) != 0)
				return -1;
			o->qps = (uint32_t)v;
			have_qps = true;
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
			} else {
				fprintf(stderr, "droce-perf: --connection '%s': not RC or UC\n",
					optarg);
				return -1;
			}
			have_conn = true;
			break;
		case 'm':
			if (parse_mtu(optarg, &o->mtu) != 0)
				return -1;
			break;
		case 'J':
			o->json = true;
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
	if (have_qps && o->qps != 1 && o->mode != PERF_MODE_SEND && o->mode != PERF_MODE_WRITE) {
		fprintf(stderr, "droce-perf: --qps: only send and write run several QPs\n");
		return -1;
	}
	if (have_conn && o->qp_type != DROCE_SHM_QPT_RC && o->mode != PERF_MODE_SEND &&
	    o->mode != PERF_MODE_WRITE) {
		fprintf(stderr, "droce-perf: --connection UC: only send and write (lat is RC)\n");
		return -1;
	}
	if (!have_size)
		o->size = o->mode == PERF_MODE_LAT ? DEFAULT_LAT_SIZE :
			  perf_mode_is_raw(o->mode) ? DEFAULT_RAW_SIZE : DEFAULT_BW_SIZE;
	if (!have_iters && o->duration_s == 0)
		o->iters = o->mode == PERF_MODE_LAT ? DEFAULT_LAT_ITERS :
			   perf_mode_is_raw(o->mode) ? DEFAULT_RAW_ITERS : DEFAULT_BW_ITERS;
	return 0;
}
