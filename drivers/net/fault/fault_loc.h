/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef FAULT_LOC_H
#define FAULT_LOC_H

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

extern int fault_logtype;
#define FAULT_LOG(level, ...) \
	rte_log(RTE_LOG_##level, fault_logtype, "droce.fault: " __VA_ARGS__)

struct fault_cfg {
	uint16_t port_id;
	uint64_t seed;
	/* Parts per million, 0..DROCE_FAULT_PPM. */
	uint32_t drop;
	uint32_t dup;
	uint32_t corrupt;
	uint32_t delay;
	uint32_t reorder;
	uint64_t delay_us;
};

/* fault_args.c */
/* Fills cfg from a devargs string; logs the offending key. 0, -EINVAL or -ENODEV. */
int fault_args_parse(const char *args, struct fault_cfg *cfg);

#endif /* FAULT_LOC_H */
