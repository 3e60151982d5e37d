/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef DROCE_FAULT_H
#define DROCE_FAULT_H

/*
 * Seeded fault injection on the receive path of an ethdev port: packets that
 * rte_eth_rx_burst() returns are dropped, duplicated, corrupted, delayed or reordered at
 * configured rates before the application sees them. Before the faults, optionally, a
 * bottleneck queue: a link of a given rate with a tail-drop buffer that marks ECN as a
 * switch port does. The same seed and the same packets in the same order give the same
 * decisions. Two forms share one engine: the net_fault vdev
 * (--vdev=net_fault0,port=net_ring0,drop=10000), a port of its own wrapping another, and
 * droce_fault_attach(), rx callbacks on an existing port. The vdev also drops what its
 * port sends (tx_drop=PPM). See doc/drivers/fault.md.
 */

#include <stdint.h>

/* Rates are parts per million of the packets a queue's faults see. */
#define DROCE_FAULT_PPM 1000000u

/*
 * Counters, one X(name, description) per line. Per queue, every packet is accounted for:
 *	received + duplicated ==
 *		delivered + dropped + overflowed + held + bn_dropped + bn_held
 * The bn_ ones are the bottleneck queue's (rate=MBPS), which packets cross before the
 * faults: received == bn_queued + bn_dropped, and the faults apply to what leaves it.
 * held, bn_depth and bn_held are gauges; bn_depth_max is the highest bn_depth since the
 * last reset, and over all queues the highest of the queues', not a sum.
 */
#define DROCE_FAULT_COUNTERS(X) \
	X(received, "packets returned by the wrapped port's rx burst") \
	X(delivered, "packets handed to the application, copies and released ones included") \
	X(dropped, "packets freed by the drop fault") \
	X(duplicated, "copies made by the dup fault") \
	X(dup_failed, "dup faults not applied: the mempool had no mbuf for the copy") \
	X(corrupted, "packets with one bit flipped by the corrupt fault") \
	X(delayed, "packets held for delay_us by the delay fault") \
	X(reordered, "packets held until a later burst by the reorder fault") \
	X(overflowed, "held packets freed: hold buffer full and no room in the burst") \
	X(held, "packets in the hold buffer now") \
	X(bn_queued, "packets accepted into the bottleneck queue") \
	X(bn_dropped, "packets tail-dropped: the bottleneck queue's buffer was full") \
	X(bn_marked, "ECN-capable packets marked CE by the bottleneck queue") \
	X(bn_ect, "ECN-capable packets (ECT(0), ECT(1)) accepted into the bottleneck queue") \
	X(bn_bytes, "bytes that left the bottleneck queue at its drain rate") \
	X(bn_depth, "bytes in the bottleneck queue now, not yet departed") \
	X(bn_depth_max, "highest bn_depth since the last reset") \
	X(bn_held, "packets in the bottleneck queue now, departed ones not polled yet too")

struct droce_fault_stats {
#define DROCE_FAULT_FIELD(name, desc) uint64_t name;
	DROCE_FAULT_COUNTERS(DROCE_FAULT_FIELD)
#undef DROCE_FAULT_FIELD
};

struct droce_fault;

/*
 * Attaches fault injection to every rx queue of a port, from a devargs-style string:
 *	port=NAME,seed=U64,drop=PPM,dup=PPM,corrupt=PPM,delay=PPM,delay_us=US,reorder=PPM,
 *	rate=MBPS,buffer=BYTES,ecn_min=BYTES,ecn_max=BYTES,ecn_pmax=PPM
 * port is the ethdev name (e.g. net_ring0) and is required; every other key is optional
 * (seed 1, rates 0, delay_us 100, no bottleneck; with rate, buffer 1048576 and no ECN
 * marking; with ecn_max, ecn_min 0 and ecn_pmax 1000000). Call after
 * rte_eth_dev_configure(). Returns NULL with rte_errno set (EINVAL: bad args, logged
 * naming the key; ENODEV: no such port; ENOMEM).
 */
struct droce_fault *droce_fault_attach(const char *args);

/*
 * The fault instance of a net_fault port, for droce_fault_stats_get(); owned by the port
 * (freed when it is closed: never pass it to droce_fault_detach()). NULL with rte_errno
 * ENODEV when port_id is not a net_fault port, as always in a build without the vdev.
 */
struct droce_fault *droce_fault_from_port(uint16_t port_id);

/*
 * Counters of one rx queue, or the sum of all with queue == -1 (a queue not set up counts
 * zeros). 0, or -EINVAL.
 */
int droce_fault_stats_get(const struct droce_fault *f, int32_t queue,
			  struct droce_fault_stats *st);

/* Names and descriptions of the counters, in struct order; DROCE_FAULT_NB_COUNTERS long. */
extern const char *const droce_fault_counter_names[];
extern const char *const droce_fault_counter_descs[];
#define DROCE_FAULT_NB_COUNTERS \
	(sizeof(struct droce_fault_stats) / sizeof(uint64_t))

/*
 * Removes the callbacks, frees the held packets and f. Call only when no thread is in
 * rte_eth_rx_burst() on the port (e.g. after rte_eth_dev_stop()). NULL is a no-op.
 */
void droce_fault_detach(struct droce_fault *f);

#endif /* DROCE_FAULT_H */
