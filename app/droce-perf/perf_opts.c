/* SPDX-License-Identifier: BSD-3-Clause */
/* droce-perf's own options (after EAL's "--"): every one has a --help line. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>

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
};

const char *const perf_mode_names[PERF_NB_MODES] = {
	[PERF_MODE_SEND] = "send",
	[PERF_MODE_WRITE] = "write",
	[PERF_MODE_READ] = "read",
	[PERF_MODE_ATOMIC] = "atomic",
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
	       "      --atomic-type T atomic: FETCH_AND_ADD or CMP_AND_SWAP (default\n"
	       "                      FETCH_AND_ADD); size 8\n"
	       "      --ipv6          IPv6 GIDs fd00:dc::1 and ::2: RoCEv2 over IPv6 (default\n"
	       "                      IPv4, ::ffff:192.0.2.1 and .2)\n"
	       "      --loss PCT      the fault driver on both hosts' ports drops PCT %% of the\n"
	       "                      packets each receives (a decimal, 0..100)\n"
	       "      --reorder PCT   ... holds PCT %% until a later burst\n"
	       "      --dup PCT       ... delivers PCT %% twice\n"
	       "      --corrupt PCT   ... flips a bit in PCT %%\n"
	       "      --fault-seed N  the fault driver's seed (default %u; host b's N + 1)\n"
	       "      --json          one JSON object per line, per figure and per port, instead\n"
	       "                      of the tables\n"
	       "  -h, --help          this text\n",
	       prog, PERF_MIN_SIZE, PERF_MAX_SIZE, DEFAULT_BW_SIZE, DEFAULT_LAT_SIZE,
	       DEFAULT_RAW_SIZE, PERF_MIN_SIZE, PERF_MAX_SIZE, PERF_MAX_QPS, PERF_ATOMIC_WORDS,
	       DEFAULT_BW_ITERS, DEFAULT_LAT_ITERS, DEFAULT_RAW_ITERS, DEFAULT_FAULT_SEED);
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

/*
 * What the modes allow of read, atomic, UD, --ipv6 and the loss options, before the checks
 * of perf_opts_parse. fault_opt: the first loss option given, or NULL. 0, or -1.
 */
static int
modes_check(const struct perf_opts *o, bool have_size, bool have_type, const char *fault_opt)
{
	bool rdma_only = o->mode == PERF_MODE_READ || o->mode == PERF_MODE_ATOMIC;

	if (o->qp_type == DROCE_SHM_QPT_UD && o->mode != PERF_MODE_SEND) {
		fprintf(stderr, "droce-perf: --connection UD: only send (UD carries SENDs only, "
			"IB 9.8.3)\n");
		return -1;
	}
	if (o->qp_type == DROCE_SHM_QPT_UC && rdma_only) {
		fprintf(stderr, "droce-perf: --connection UC: %s is RC only (UC has no RDMA READ "
			"or atomics, IB 9.8.2)\n", perf_mode_names[o->mode]);
		return -1;
	}
	if (o->qp_type == DROCE_SHM_QPT_UD && have_size && o->size > 128u << o->mtu) {
		fprintf(stderr, "droce-perf: --size %u: a UD message is one packet, at most the "
			"MTU (%u)\n", o->size, 128u << o->mtu);
		return -1;
	}
	if (have_type && o->mode != PERF_MODE_ATOMIC) {
		fprintf(stderr, "droce-perf: --atomic-type: only with --mode atomic\n");
		return -1;
	}
	if (o->mode == PERF_MODE_ATOMIC && have_size && o->size != PERF_ATOMIC_SIZE) {
		fprintf(stderr, "droce-perf: --size %u: an atomic operates on %u bytes\n", o->size,
			PERF_ATOMIC_SIZE);
		return -1;
	}
	if (o->mode == PERF_MODE_ATOMIC && o->all_sizes) {
		fprintf(stderr, "droce-perf: --all: atomic has one size, %u bytes\n",
			PERF_ATOMIC_SIZE);
		return -1;
	}
	if (o->mode == PERF_MODE_ATOMIC && o->atomic_cas && o->qps > PERF_ATOMIC_WORDS) {
		fprintf(stderr, "droce-perf: --qps %u: CMP_AND_SWAP chains take a word of host b's "
			"buffer each, at most %u QPs\n", o->qps, PERF_ATOMIC_WORDS);
		return -1;
	}
	if (perf_mode_is_raw(o->mode) && o->ipv6) {
		fprintf(stderr, "droce-perf: --ipv6: the raw modes send IPv4 frames\n");
		return -1;
	}
	if (perf_mode_is_raw(o->mode) && fault_opt != NULL) {
		fprintf(stderr, "droce-perf: %s: the loss options apply to the RoCE modes, not "
			"the raw link\n", fault_opt);
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
		{ "json", no_argument, NULL, 'J' },
		{ "atomic-type", required_argument, NULL, OPT_ATOMIC_TYPE },
		{ "ipv6", no_argument, NULL, OPT_IPV6 },
		{ "loss", required_argument, NULL, OPT_LOSS },
		{ "reorder", required_argument, NULL, OPT_REORDER },
		{ "dup", required_argument, NULL, OPT_DUP },
		{ "corrupt", required_argument, NULL, OPT_CORRUPT },
		{ "fault-seed", required_argument, NULL, OPT_FAULT_SEED },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool have_size = false, have_iters = false, have_qps = false, have_conn = false;
	bool have_type = false;
	const char *fault_opt = NULL, *name;
	uint64_t v;
	char *end;
	int c, m;

	memset(o, 0, sizeof(*o));
	o->mode = PERF_MODE_SEND;
	o->qps = 1;
	o->qp_type = DROCE_SHM_QPT_RC;
	o->mtu = IBV_MTU_4096;
	o->fault.seed = DEFAULT_FAULT_SEED;
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
				fprintf(stderr, "droce-perf: --mode '%s': not send, write, read, "
					"atomic, lat, raw-tx, raw-rx or raw-io\n", optarg);
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
			} else if (strcmp(optarg, "UD") == 0) {
				o->qp_type = DROCE_SHM_QPT_UD;
			} else {
				fprintf(stderr, "droce-perf: --connection '%s': not RC, UC or UD\n",
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
		case OPT_FAULT_SEED:
			if (parse_u64("--fault-seed", optarg, 0, UINT64_MAX - 1, &o->fault.seed) != 0)
				return -1;
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
	if (modes_check(o, have_size, have_type, fault_opt) != 0)
		return -1;
	if (have_qps && o->qps != 1 && (o->mode == PERF_MODE_LAT || perf_mode_is_raw(o->mode))) {
		fprintf(stderr, "droce-perf: --qps: only send, write, read and atomic run several "
			"QPs\n");
		return -1;
	}
	if (have_conn && o->qp_type != DROCE_SHM_QPT_RC && o->mode != PERF_MODE_SEND &&
	    o->mode != PERF_MODE_WRITE) {
		fprintf(stderr, "droce-perf: --connection UC: only send and write (lat is RC)\n");
		return -1;
	}
	if (!have_size)
		o->size = o->mode == PERF_MODE_ATOMIC ? PERF_ATOMIC_SIZE :
			  o->mode == PERF_MODE_LAT ? DEFAULT_LAT_SIZE :
			  perf_mode_is_raw(o->mode) ? DEFAULT_RAW_SIZE : DEFAULT_BW_SIZE;
	/* UD: one packet a message */
	if (!have_size && o->qp_type == DROCE_SHM_QPT_UD)
		o->size = RTE_MIN(o->size, 128u << o->mtu);
	if (!have_iters && o->duration_s == 0)
		o->iters = o->mode == PERF_MODE_LAT ? DEFAULT_LAT_ITERS :
			   perf_mode_is_raw(o->mode) ? DEFAULT_RAW_ITERS : DEFAULT_BW_ITERS;
	return 0;
}
