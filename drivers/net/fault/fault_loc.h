/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef FAULT_LOC_H
#define FAULT_LOC_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_common.h>
#include <rte_ethdev.h>
#include <rte_log.h>
#include <rte_mbuf.h>

#include "droce_fault.h"

/* Held (delayed or reordered) packets per queue; when full the oldest is released. */
#define FAULT_HOLD_MAX 1024u
/* rte_eth_rx_burst()'s max_pkts is a uint16_t: the per-queue copy of a burst fits all. */
#define FAULT_BURST_MAX (UINT16_MAX + 1u)
#define FAULT_DEFAULT_SEED 1u
#define FAULT_DEFAULT_DELAY_US 100u
/* Longest delay accepted: 10 s, far past any retransmission timer worth testing. */
#define FAULT_MAX_DELAY_US 10000000u
#define FAULT_US_PER_S 1000000u

/* splitmix64's increment (the golden ratio in 64 bits); also spreads queue ids. */
#define FAULT_RNG_GAMMA UINT64_C(0x9E3779B97F4A7C15)

/* splitmix64 (Steele, Lea, Flood 2014): one 64-bit draw per call. */
static inline uint64_t
fault_rng_next(uint64_t *state)
{
	uint64_t z = (*state += FAULT_RNG_GAMMA);

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

/* Uniform in [0, n) from the draw's high 32 bits (multiply-shift, no modulo bias worth
 * noticing at these rates). */
static inline uint32_t
fault_below(uint64_t r, uint32_t n)
{
	return (uint32_t)(((r >> 32) * n) >> 32);
}

static inline bool
fault_hit(uint64_t r, uint32_t ppm)
{
	return fault_below(r, DROCE_FAULT_PPM) < ppm;
}

extern int fault_logtype;
#define FAULT_LOG(level, ...) \
	rte_log(RTE_LOG_##level, fault_logtype, "droce.fault: " __VA_ARGS__)

struct fault_cfg {
	/* The port whose rx bursts are faulted: attached to, or wrapped by the vdev. */
	uint16_t port_id;
	uint64_t seed;
	/* Parts per million, 0..DROCE_FAULT_PPM. */
	uint32_t drop;
	uint32_t dup;
	uint32_t corrupt;
	uint32_t delay;
	uint32_t reorder;
	uint64_t delay_us;
	/* What the port sends: the vdev's tx burst only (fault_vdev.c). */
	uint32_t tx_drop;
};

struct fault_hold {
	struct rte_mbuf *m;
	/* Released on a burst after burst number `call`, once the TSC reaches due_tsc. */
	uint64_t due_tsc;
	uint64_t call;
};

/*
 * The faults of one rx queue. The lcore that polls the queue owns all of it (PRNG, hold
 * buffer, counters); the control path reads the counters without locks.
 */
struct fault_queue {
	const struct fault_cfg *cfg;
	uint16_t queue_id;
	uint64_t rng;
	uint64_t call;
	uint64_t delay_tsc;
	struct droce_fault_stats st;
	uint32_t nb_held;
	struct fault_hold hold[FAULT_HOLD_MAX];
	/* This burst as the port returned it; the output overwrites pkts[]. */
	struct rte_mbuf *in[FAULT_BURST_MAX];
} __rte_cache_aligned;

/*
 * One fault instance: a library attachment (fault_cb.c) or a net_fault port (fault_vdev.c).
 * q[i] is NULL for a queue not set up (yet, or any more).
 */
struct droce_fault {
	struct fault_cfg cfg;
	uint16_t nb_queues;
	struct fault_queue *q[RTE_MAX_QUEUES_PER_PORT];
	/* The library form's rx callbacks; the vdev has none. */
	const struct rte_eth_rxtx_callback *cb[RTE_MAX_QUEUES_PER_PORT];
};

/* fault_args.c */
/* Fills cfg from a devargs string; logs the offending key. 0, -EINVAL or -ENODEV. */
int fault_args_parse(const char *args, struct fault_cfg *cfg);

/* fault_rx.c */
/* A new instance from a devargs string, no queues yet. 0, -EINVAL, -ENODEV or -ENOMEM. */
int fault_new(const char *args, struct droce_fault **fp);
/* Frees the queues (and their held packets) and f; callbacks must be gone. NULL: no-op. */
void fault_free(struct droce_fault *f);
/* Sets up f->q[queue] on socket, a fresh stream from the seed. 0 or -ENOMEM. */
int fault_queue_setup(struct droce_fault *f, uint16_t queue, int socket);
/* Frees f->q[queue] and the packets it holds; NULL-safe. */
void fault_queue_release(struct droce_fault *f, uint16_t queue);
/*
 * Run by the lcore polling queue q: applies the faults to the nb_pkts packets the port
 * returned in pkts[], then appends the held packets now due; returns how many of at most
 * max_pkts it left in pkts[].
 */
uint16_t fault_rx_burst(struct fault_queue *q, struct rte_mbuf *pkts[], uint16_t nb_pkts,
			uint16_t max_pkts);
/* Zeroes the counters of every queue (held packets stay held). Control path. */
void fault_stats_reset(struct droce_fault *f);

#endif /* FAULT_LOC_H */
