/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef FAULT_LOC_H
#define FAULT_LOC_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_common.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
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
#define FAULT_BITS_PER_BYTE 8u

/* The bottleneck queue (fault_bn.c). Fastest drain rate accepted: 1 Tb/s. */
#define FAULT_MAX_RATE_MBPS 1000000u
#define FAULT_BITS_PER_MBIT 1000000u
#define FAULT_BN_DEFAULT_BUFFER 1048576u
/*
 * Largest buffer: 16 MiB per queue, more than a shallow-buffer switch gives one port. It
 * bounds a queued frame's length, which keeps fault_bn.c's departure arithmetic in 64 bits.
 */
#define FAULT_MAX_BUFFER 16777216u
/* Smallest buffer: room for one full-size frame, or every frame would be dropped. */
#define FAULT_MIN_BUFFER ((uint64_t)RTE_ETHER_MAX_LEN)
/* Slots per queue are sized for the buffer full of minimum frames (60 B without FCS). */
#define FAULT_BN_MIN_FRAME (RTE_ETHER_MIN_LEN - RTE_ETHER_CRC_LEN)

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
	/* The bottleneck queue (fault_bn.c), before the faults above; rate 0: none. */
	uint64_t rate_mbps;
	uint64_t buffer;		/* bytes */
	uint64_t ecn_min;		/* bytes; marking is off when ecn_max is 0 */
	uint64_t ecn_max;		/* bytes */
	uint32_t ecn_pmax;		/* ppm */
	/*
	 * Mark as packets leave, by the depth behind them, rather than as they arrive: the
	 * CE mark then reaches the receiver without waiting out the queue it reports, as
	 * switches that mark at egress do (a shorter loop for DCQCN).
	 */
	uint64_t ecn_dequeue;		/* 0 or 1 */
};

struct fault_hold {
	struct rte_mbuf *m;
	/* Released on a burst after burst number `call`, once the TSC reaches due_tsc. */
	uint64_t due_tsc;
	uint64_t call;
};

struct fault_bn_slot {
	struct rte_mbuf *m;
	uint64_t depart_tsc;
};

/*
 * The bottleneck queue of one rx queue: a ring of nb_slots slots (fault_queue's bn_slot[]),
 * the packets in slots head.. head + nb - 1 (mod nb_slots), oldest first. The first
 * nb_gone of them have departed (their time has passed) and wait for a burst with room;
 * the others make up depth. Departure times are TSC cycles plus a remainder in units of
 * 1 / bits_per_s cycles, so that a long run keeps the rate exactly.
 */
struct fault_bn {
	uint64_t rng;			/* marks: a stream apart from the faults' */
	uint64_t bits_per_s;
	/* One byte's time on the link: byte_tsc + byte_rem / bits_per_s cycles. */
	uint64_t byte_tsc;
	uint64_t byte_rem;
	uint64_t last_depart;		/* of the last packet queued */
	uint64_t last_rem;
	uint64_t depth;			/* bytes queued, not departed */
	uint32_t nb_slots;
	uint32_t head;
	uint32_t nb;
	uint32_t nb_gone;
};

/*
 * The faults of one rx queue. The lcore that polls the queue owns all of it (PRNG, hold
 * buffer, bottleneck, counters); the control path reads the counters without locks.
 */
struct fault_queue {
	const struct fault_cfg *cfg;
	uint16_t queue_id;
	uint64_t rng;
	uint64_t call;
	uint64_t delay_tsc;
	struct droce_fault_stats st;
	struct fault_bn bn;
	uint32_t nb_held;
	struct fault_hold hold[FAULT_HOLD_MAX];
	/* The packets the faults apply to in this burst; the output overwrites pkts[]. */
	struct rte_mbuf *in[FAULT_BURST_MAX];
	/* bn.nb_slots of them (none without a bottleneck), allocated with the queue. */
	struct fault_bn_slot bn_slot[];
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

/* fault_bn.c */
/* Slots a queue's bottleneck needs (0: no bottleneck), for fault_queue_setup(). */
uint32_t fault_bn_nb_slots(const struct fault_cfg *cfg);
/* Sets up the bottleneck of q, queue number queue, allocated zeroed with its slots. */
void fault_bn_setup(struct fault_queue *q, uint16_t queue);
/*
 * Run by the lcore polling q's queue, at TSC now: queues the nb packets the port returned
 * (tail drop, ECN marking), then moves up to max of those whose departure time has passed
 * to out[], in order; returns how many.
 */
uint16_t fault_bn_burst(struct fault_queue *q, struct rte_mbuf *pkts[], uint16_t nb,
			struct rte_mbuf *out[], uint16_t max, uint64_t now);
/* Frees the packets in q's bottleneck. Control path, no burst running. */
void fault_bn_free(struct fault_queue *q);

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
