/* SPDX-License-Identifier: BSD-3-Clause */
/* droce-perf's own options (after EAL's "--"): every one has a --help line. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>

#include <droce_shm.h>

#include "perf_oob.h"

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
	       "when the EAL line gives none; or one host on its one port with --server or\n"
	       "--client, the peer another process (doc/tools/droce-perf.md).\n"
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
	       "      --server        one host, on the EAL line's one port: host b, which\n"
	       "                      receives (lat: answers); waits on TCP --port for the\n"
	       "                      peer, droce-perf --client or a perftest client\n"
	       "      --client HOST   one host, on the EAL line's one port: host a, which sends\n"
	       "                      (lat: pings); connects to HOST's --port, droce-perf\n"
	       "                      --server or a perftest server (ib_send_bw, ib_write_bw,\n"
	       "                      ib_send_lat); both sides need the same -s, -n, -q, -c\n"
	       "  -p, --port PORT     the out-of-band TCP port (default %u, perftest's)\n"
	       "      --ip ADDR[/LEN] this host's IPv4 address and subnet with --server or\n"
	       "                      --client, its GID ::ffff:ADDR; the peer's MAC is learnt\n"
	       "                      by ARP (default 192.0.2.1/24 client, 192.0.2.2/24 server)\n"
	       "  -h, --help          this text\n",
	       prog, PERF_MIN_SIZE, PERF_MAX_SIZE, DEFAULT_BW_SIZE, DEFAULT_LAT_SIZE,
	       DEFAULT_RAW_SIZE, PERF_MIN_SIZE, PERF_MAX_SIZE, PERF_MAX_QPS, DEFAULT_BW_ITERS,
	       DEFAULT_LAT_ITERS, DEFAULT_RAW_ITERS, PERF_OOB_DEFAULT_PORT);
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
 * ours), and the raw modes have no peer protocol.
 */
static int
perf_opts_check_peer(const struct perf_opts *o)
{
	if (perf_mode_is_raw(o->mode)) {
		fprintf(stderr, "droce-perf: --%s: only send, write and lat have a peer in "
			"another process\n", o->role == PERF_ROLE_SERVER ? "server" : "client");
		return -1;
	}
	if (o->all_sizes || o->duration_s > 0) {
		fprintf(stderr, "droce-perf: --%s: one size and -n iterations (no --all, no "
			"--duration): both ends must agree on them\n",
			o->role == PERF_ROLE_SERVER ? "server" : "client");
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
		{ "server", no_argument, NULL, 'S' },
		{ "client", required_argument, NULL, 'C' },
		{ "port", required_argument, NULL, 'p' },
		{ "ip", required_argument, NULL, 'I' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool have_size = false, have_iters = false, have_qps = false, have_conn = false;
	bool have_peer_opt = false;
	uint64_t v;
	char *end;
	int c, m;

	memset(o, 0, sizeof(*o));
	o->mode = PERF_MODE_SEND;
	o->qps = 1;
	o->qp_type = DROCE_SHM_QPT_RC;
	o->mtu = IBV_MTU_4096;
	o->tcp_port = PERF_OOB_DEFAULT_PORT;
	optind = 1;
	opterr = 0;	/* our own messages, which name the option */
	while ((c = getopt_long(argc, argv, ":s:aq:n:D:c:m:p:h", longopts, NULL)) != -1) {
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
	if (have_qps && o->qps != 1 && o->mode != PERF_MODE_SEND && o->mode != PERF_MODE_WRITE) {
		fprintf(stderr, "droce-perf: --qps: only send and write run several QPs\n");
		return -1;
	}
	if (have_conn && o->qp_type != DROCE_SHM_QPT_RC && o->mode != PERF_MODE_SEND &&
	    o->mode != PERF_MODE_WRITE) {
		fprintf(stderr, "droce-perf: --connection UC: only send and write (lat is RC)\n");
		return -1;
	}
	if (have_peer_opt && o->role == PERF_ROLE_BOTH) {
		fprintf(stderr, "droce-perf: --port and --ip need --server or --client\n");
		return -1;
	}
	if (o->role != PERF_ROLE_BOTH && perf_opts_check_peer(o) != 0)
		return -1;
	if (!have_size)
		o->size = o->mode == PERF_MODE_LAT ? DEFAULT_LAT_SIZE :
			  perf_mode_is_raw(o->mode) ? DEFAULT_RAW_SIZE : DEFAULT_BW_SIZE;
	if (!have_iters && o->duration_s == 0)
		o->iters = o->mode == PERF_MODE_LAT ? DEFAULT_LAT_ITERS :
			   perf_mode_is_raw(o->mode) ? DEFAULT_RAW_ITERS : DEFAULT_BW_ITERS;
	return 0;
}
