/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * droce-bench-wire: what lib/wire costs per packet. Builds (with ICRC) and parses (with
 * ICRC verification, and without) one RC SEND ONLY packet over and over, and computes
 * its ICRC alone, next to two baselines measured in the same run over the same bytes: ISA-L's
 * crc32_gzip_refl, the CRC the ICRC is made of, and memcpy, the cost of touching the
 * bytes at all. The packet stays in L1: this is compute cost, not the memory system's.
 * devtools/bench-wire.sh runs it; doc/performance.md has results.
 */

#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <isa-l/crc.h>

#include "droce_wire.h"

#define NS_PER_S		1000000000ull
#define NS_PER_MS		1000000ull
#define DEFAULT_RUNS		5
#define MAX_RUNS		99
#define DEFAULT_MS		300	/* per measurement: 0.2-0.5 s keeps timer noise out */
/* Calibration: grow the batch until one takes this fraction of a measurement. */
#define CALIB_DIV		16

/* Packet sizes measured: a small message and a full 4096-byte MTU. */
#define SMALL_PAYLOAD		64
#define LARGE_PAYLOAD		DROCE_WIRE_MAX_PAYLOAD
#define PKT_CAP			(DROCE_WIRE_HDR_MAX + DROCE_WIRE_MAX_PAYLOAD + DROCE_ICRC_LEN + 4)

/* Targets from doc/performance.md. */
#define TARGET_PARSE_NS		30.0	/* parse + ICRC verify, 64-byte payload */
#define TARGET_ICRC_GBPS	30.0	/* ICRC over a 4 KiB-payload packet */

/* Keeps the compiler from dropping a store it thinks nobody reads. */
#define CLOBBER(p) __asm__ volatile("" : : "r"(p) : "memory")

/* Every result lands here so no call can be optimised away. */
static volatile uint64_t sink;

/* One packet and what every operation needs to work on it. */
struct bench_pkt {
	uint32_t payload_len;
	struct droce_wire_tmpl tmpl;
	struct droce_wire_hdrs hdrs;
	uint8_t payload[DROCE_WIRE_MAX_PAYLOAD];
	struct droce_wire_seg payload_seg;
	uint8_t pkt[PKT_CAP];		/* the built packet, parsed over and over */
	struct droce_wire_seg pkt_seg;
	uint8_t out[PKT_CAP];		/* where the builder and memcpy write */
	uint32_t icrc_off;
	uint32_t covered;		/* bytes the ICRC covers: IP header to ICRC */
};

struct bench_op {
	const char *name;
	void (*run)(struct bench_pkt *bp, uint64_t iters);
};

static void
run_build(struct bench_pkt *bp, uint64_t iters)
{
	uint64_t i;

	for (i = 0; i < iters; i++) {
		sink += (uint64_t)droce_wire_build(&bp->tmpl, &bp->hdrs, &bp->payload_seg, 1,
						   bp->out, sizeof(bp->out));
		CLOBBER(bp->out);
	}
}

static void
run_parse(struct bench_pkt *bp, uint64_t iters)
{
	struct droce_wire_pkt pkt;
	uint64_t i;

	for (i = 0; i < iters; i++) {
		sink += droce_wire_parse(&bp->pkt_seg, 1, 0, &pkt);
		sink += pkt.icrc_calc;
	}
}

/* The parse without the ICRC, as when the NIC has checked it: what the ICRC adds. */
static void
run_parse_no_icrc(struct bench_pkt *bp, uint64_t iters)
{
	struct droce_wire_pkt pkt;
	uint64_t i;

	for (i = 0; i < iters; i++) {
		sink += droce_wire_parse(&bp->pkt_seg, 1, DROCE_WIRE_PARSE_NO_ICRC, &pkt);
		sink += pkt.payload_len;
	}
}

static void
run_icrc(struct bench_pkt *bp, uint64_t iters)
{
	uint64_t i;

	for (i = 0; i < iters; i++)
		sink += droce_icrc_calc(&bp->pkt_seg, 1, bp->tmpl.l3_off, bp->icrc_off);
}

static void
run_crc32(struct bench_pkt *bp, uint64_t iters)
{
	const uint8_t *l3 = bp->pkt + bp->tmpl.l3_off;
	uint64_t i;

	for (i = 0; i < iters; i++) {
		CLOBBER(l3);
		sink += crc32_gzip_refl(0, l3, bp->covered);
	}
}

static void
run_memcpy(struct bench_pkt *bp, uint64_t iters)
{
	const uint8_t *l3 = bp->pkt + bp->tmpl.l3_off;
	uint64_t i;

	for (i = 0; i < iters; i++) {
		memcpy(bp->out, l3, bp->covered);
		CLOBBER(bp->out);
	}
}

/* The packet under test: too big for the stack with its buffers. */
static struct bench_pkt bp;

enum { OP_BUILD, OP_PARSE, OP_PARSE_NO_ICRC, OP_ICRC, OP_CRC32, OP_MEMCPY, OP_COUNT };

static const struct bench_op ops[OP_COUNT] = {
	[OP_BUILD] = { "build + ICRC (droce_wire_build)", run_build },
	[OP_PARSE] = { "parse + ICRC verify (droce_wire_parse)", run_parse },
	[OP_PARSE_NO_ICRC] = { "parse, ICRC not checked (PARSE_NO_ICRC)", run_parse_no_icrc },
	[OP_ICRC] = { "ICRC alone (droce_icrc_calc)", run_icrc },
	[OP_CRC32] = { "baseline: crc32_gzip_refl", run_crc32 },
	[OP_MEMCPY] = { "baseline: memcpy", run_memcpy },
};

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* An RC SEND ONLY over IPv4 without VLAN, the common case; -1 if it does not parse. */
static int
bench_pkt_init(struct bench_pkt *bp, uint32_t payload_len)
{
	struct droce_wire_addr addr = {
		.src_mac = { 0x02, 0, 0, 0, 0, 1 },
		.dst_mac = { 0x02, 0, 0, 0, 0, 2 },
		/* ::ffff:192.0.2.1 -> ::ffff:192.0.2.2 (RFC 5737) */
		.src_gid = { [10] = 0xFF, [11] = 0xFF, 192, 0, 2, 1 },
		.dst_gid = { [10] = 0xFF, [11] = 0xFF, 192, 0, 2, 2 },
	};
	struct droce_wire_pkt pkt;
	uint32_t i;
	int len;

	memset(bp, 0, sizeof(*bp));
	bp->payload_len = payload_len;
	for (i = 0; i < payload_len; i++)
		bp->payload[i] = (uint8_t)i;
	bp->payload_seg.data = bp->payload;
	bp->payload_seg.len = payload_len;
	addr.udp_sport = droce_wire_udp_sport(1, 2);
	bp->hdrs.opcode = DROCE_OP_RC_SEND_ONLY;
	bp->hdrs.pkey = DROCE_PKEY_DEFAULT;
	bp->hdrs.dqpn = 2;
	bp->hdrs.ackreq = true;
	if (droce_wire_tmpl_init(&bp->tmpl, &addr) != 0)
		return -1;
	len = droce_wire_build(&bp->tmpl, &bp->hdrs, &bp->payload_seg, 1, bp->pkt,
			       sizeof(bp->pkt));
	if (len < 0)
		return -1;
	bp->pkt_seg.data = bp->pkt;
	bp->pkt_seg.len = (uint32_t)len;
	if (droce_wire_parse(&bp->pkt_seg, 1, 0, &pkt) != DROCE_WIRE_OK)
		return -1;
	bp->icrc_off = pkt.icrc_off;
	bp->covered = pkt.icrc_off - pkt.l3_off;
	return 0;
}

/* A batch size that takes about ms milliseconds (warms the caches on the way). */
static uint64_t
calibrate(const struct bench_op *op, struct bench_pkt *bp, unsigned int ms)
{
	uint64_t target = ms * NS_PER_MS, iters = 1, t;

	for (;;) {
		t = now_ns();
		op->run(bp, iters);
		t = now_ns() - t;
		if (t >= target / CALIB_DIV)
			break;
		iters *= 2;
	}
	return iters * target / (t != 0 ? t : 1) + 1;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

struct result {
	double median;		/* ns per packet */
	double min;
	double max;
};

static void
measure(const struct bench_op *op, struct bench_pkt *bp, unsigned int runs, unsigned int ms,
	struct result *res)
{
	double ns[MAX_RUNS];
	uint64_t iters = calibrate(op, bp, ms), t;
	unsigned int i;

	for (i = 0; i < runs; i++) {
		t = now_ns();
		op->run(bp, iters);
		ns[i] = (double)(now_ns() - t) / (double)iters;
	}
	qsort(ns, runs, sizeof(ns[0]), cmp_double);
	res->median = runs % 2 ? ns[runs / 2] : (ns[runs / 2 - 1] + ns[runs / 2]) / 2;
	res->min = ns[0];
	res->max = ns[runs - 1];
}

/* Pins to cpu, or to the last CPU we may run on when cpu < 0; returns the CPU or -1. */
static int
pin(int cpu)
{
	cpu_set_t set;
	int i;

	if (cpu < 0) {
		if (sched_getaffinity(0, sizeof(set), &set) != 0)
			return -1;
		for (i = CPU_SETSIZE - 1; i >= 0 && !CPU_ISSET(i, &set); i--)
			;
		cpu = i;
	}
	if (cpu < 0 || cpu >= CPU_SETSIZE)
		return -1;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) == 0 ? cpu : -1;
}

static void
usage(const char *prog)
{
	printf("usage: %s [-r RUNS] [-m MS] [-c CPU]\n"
	       "Measures lib/wire per packet: build + ICRC, parse with and without the ICRC\n"
	       "check, and the ICRC alone at %u- and %u-byte payloads, with crc32_gzip_refl and\n"
	       "memcpy over the same bytes as baselines from the same run.\n"
	       "  -r RUNS  measurements per figure; the median is reported (default %u, max %u)\n"
	       "  -m MS    length of one measurement in ms (default %u)\n"
	       "  -c CPU   pin to this CPU (default: the last one allowed)\n",
	       prog, SMALL_PAYLOAD, LARGE_PAYLOAD, DEFAULT_RUNS, MAX_RUNS, DEFAULT_MS);
}

int
main(int argc, char **argv)
{
	static const uint32_t sizes[] = { SMALL_PAYLOAD, LARGE_PAYLOAD };
	struct result res[OP_COUNT];
	unsigned int runs = DEFAULT_RUNS, ms = DEFAULT_MS, s, o;
	double parse_small_ns = 0, icrc_large_gbps = 0;
	int cpu = -1, c;

	while ((c = getopt(argc, argv, "r:m:c:h")) != -1) {
		switch (c) {
		case 'r':
			runs = (unsigned int)atoi(optarg);
			break;
		case 'm':
			ms = (unsigned int)atoi(optarg);
			break;
		case 'c':
			cpu = atoi(optarg);
			break;
		case 'h':
			usage(argv[0]);
			return 0;
		default:
			usage(argv[0]);
			return 2;
		}
	}
	if (runs == 0 || runs > MAX_RUNS || ms == 0) {
		usage(argv[0]);
		return 2;
	}

	cpu = pin(cpu);
	if (cpu < 0)
		printf("warning: could not pin to a CPU; figures will be noisier\n");
	else
		printf("pinned to CPU %d; %u runs of ~%u ms per figure, median [min..max]\n",
		       cpu, runs, ms);
	printf("bytes = what the ICRC covers (IP header to ICRC); GB/s = bytes / ns;\n"
	       "x crc32 and x memcpy = time relative to the baselines over those bytes\n\n");
	printf("%-40s %7s %6s %9s %19s %7s %8s %8s\n", "operation", "payload", "bytes",
	       "ns/pkt", "[min..max]", "GB/s", "x crc32", "x memcpy");

	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		if (bench_pkt_init(&bp, sizes[s]) != 0) {
			fprintf(stderr, "could not build and parse a %u-byte packet\n", sizes[s]);
			return 1;
		}
		for (o = 0; o < OP_COUNT; o++)
			measure(&ops[o], &bp, runs, ms, &res[o]);
		for (o = 0; o < OP_COUNT; o++) {
			char spread[32];

			snprintf(spread, sizeof(spread), "[%.2f..%.2f]", res[o].min, res[o].max);
			printf("%-40s %7u %6u %9.2f %19s %7.2f %8.2f %8.2f\n", ops[o].name,
			       bp.payload_len, bp.covered, res[o].median, spread,
			       bp.covered / res[o].median, res[o].median / res[OP_CRC32].median,
			       res[o].median / res[OP_MEMCPY].median);
		}
		if (sizes[s] == SMALL_PAYLOAD)
			parse_small_ns = res[OP_PARSE].median;
		else
			icrc_large_gbps = bp.covered / res[OP_ICRC].median;
	}

	printf("\ntarget: parse + ICRC verify, %u-byte payload <= %.0f ns: %.2f ns, %s\n",
	       SMALL_PAYLOAD, TARGET_PARSE_NS, parse_small_ns,
	       parse_small_ns <= TARGET_PARSE_NS ? "met" : "MISSED");
	printf("target: ICRC, %u-byte payload >= %.0f GB/s: %.2f GB/s, %s\n", LARGE_PAYLOAD,
	       TARGET_ICRC_GBPS, icrc_large_gbps,
	       icrc_large_gbps >= TARGET_ICRC_GBPS ? "met" : "MISSED");
	return 0;
}
