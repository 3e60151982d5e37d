/* SPDX-License-Identifier: BSD-3-Clause */
/* Parses the devargs string of droce_fault_attach() and of the net_fault vdev (rte_kvargs). */

#include <errno.h>
#include <stdlib.h>

#include <rte_kvargs.h>

#include "fault_loc.h"

#define FAULT_KEY_PORT "port"
#define FAULT_KEY_SEED "seed"
#define FAULT_KEY_DROP "drop"
#define FAULT_KEY_DUP "dup"
#define FAULT_KEY_CORRUPT "corrupt"
#define FAULT_KEY_DELAY "delay"
#define FAULT_KEY_DELAY_US "delay_us"
#define FAULT_KEY_REORDER "reorder"
#define FAULT_KEY_TX_DROP "tx_drop"
#define FAULT_KEY_RATE "rate"
#define FAULT_KEY_BUFFER "buffer"
#define FAULT_KEY_ECN_MIN "ecn_min"
#define FAULT_KEY_ECN_MAX "ecn_max"
#define FAULT_KEY_ECN_PMAX "ecn_pmax"
#define FAULT_KEY_ECN_DEQUEUE "ecn_dequeue"

static const char *const fault_keys[] = {
	FAULT_KEY_PORT, FAULT_KEY_SEED, FAULT_KEY_DROP, FAULT_KEY_DUP, FAULT_KEY_CORRUPT,
	FAULT_KEY_DELAY, FAULT_KEY_DELAY_US, FAULT_KEY_REORDER, FAULT_KEY_TX_DROP,
	FAULT_KEY_RATE, FAULT_KEY_BUFFER, FAULT_KEY_ECN_MIN, FAULT_KEY_ECN_MAX,
	FAULT_KEY_ECN_PMAX, FAULT_KEY_ECN_DEQUEUE, NULL,
};

struct fault_u64_arg {
	uint64_t *out;
	uint64_t max;
};

/* rte_kvargs handler: a decimal (or 0x hex) integer no larger than arg->max. */
static int
fault_parse_u64(const char *key, const char *value, void *opaque)
{
	const struct fault_u64_arg *arg = opaque;
	unsigned long long v;
	char *end;

	if (value == NULL || value[0] == '\0' || value[0] == '-')
		goto bad;
	errno = 0;
	v = strtoull(value, &end, 0);
	if (errno != 0 || *end != '\0' || v > arg->max)
		goto bad;
	*arg->out = v;
	return 0;
bad:
	FAULT_LOG(ERR, "bad value '%s' for key '%s' (an integer 0..%" PRIu64 ")\n",
		  value == NULL ? "" : value, key, arg->max);
	return -EINVAL;
}

/* Parses key (if present) into *out, bounded by max. */
static int
fault_get_u64(struct rte_kvargs *kv, const char *key, uint64_t *out, uint64_t max)
{
	struct fault_u64_arg arg = { .out = out, .max = max };

	if (rte_kvargs_count(kv, key) > 1) {
		FAULT_LOG(ERR, "key '%s' given more than once\n", key);
		return -EINVAL;
	}
	return rte_kvargs_process(kv, key, fault_parse_u64, &arg) < 0 ? -EINVAL : 0;
}

static int
fault_get_ppm(struct rte_kvargs *kv, const char *key, uint32_t *out)
{
	uint64_t v = 0;
	int ret;

	ret = fault_get_u64(kv, key, &v, DROCE_FAULT_PPM);
	*out = (uint32_t)v;
	return ret;
}

static int
fault_get_port(struct rte_kvargs *kv, uint16_t *port_id)
{
	const char *name;

	if (rte_kvargs_count(kv, FAULT_KEY_PORT) != 1) {
		FAULT_LOG(ERR, "key '" FAULT_KEY_PORT "' is required, once "
			  "(the name of the port to wrap, e.g. net_ring0)\n");
		return -EINVAL;
	}
	name = rte_kvargs_get(kv, FAULT_KEY_PORT);
	if (name == NULL || rte_eth_dev_get_port_by_name(name, port_id) != 0) {
		FAULT_LOG(ERR, "key '" FAULT_KEY_PORT "': no ethdev port named '%s'\n",
			  name == NULL ? "" : name);
		return -ENODEV;
	}
	return 0;
}

/* A bottleneck key set (not 0) without the key it needs to mean anything. */
static int
fault_needs(struct rte_kvargs *kv, const char *key, uint64_t value, const char *needed)
{
	if (rte_kvargs_count(kv, key) == 0 || value == 0)
		return 0;
	FAULT_LOG(ERR, "key '%s' needs key '%s' (not 0)\n", key, needed);
	return -EINVAL;
}

/*
 * The bottleneck queue's keys: rate, then buffer and the ECN profile, which need it. The
 * defaults apply only to what is there: buffer with rate, ecn_pmax with ecn_max.
 */
static int
fault_get_bottleneck(struct rte_kvargs *kv, struct fault_cfg *cfg)
{
	int ret;

	ret = fault_get_u64(kv, FAULT_KEY_RATE, &cfg->rate_mbps, FAULT_MAX_RATE_MBPS);
	if (ret == 0)
		ret = fault_get_u64(kv, FAULT_KEY_BUFFER, &cfg->buffer, FAULT_MAX_BUFFER);
	if (ret == 0)
		ret = fault_get_u64(kv, FAULT_KEY_ECN_MIN, &cfg->ecn_min, FAULT_MAX_BUFFER);
	if (ret == 0)
		ret = fault_get_u64(kv, FAULT_KEY_ECN_MAX, &cfg->ecn_max, FAULT_MAX_BUFFER);
	if (ret == 0)
		ret = fault_get_ppm(kv, FAULT_KEY_ECN_PMAX, &cfg->ecn_pmax);
	if (ret == 0)
		ret = fault_get_u64(kv, FAULT_KEY_ECN_DEQUEUE, &cfg->ecn_dequeue, 1);
	if (ret != 0)
		return ret;
	if (cfg->rate_mbps == 0) {
		ret = fault_needs(kv, FAULT_KEY_BUFFER, cfg->buffer, FAULT_KEY_RATE);
		if (ret == 0)
			ret = fault_needs(kv, FAULT_KEY_ECN_MAX, cfg->ecn_max, FAULT_KEY_RATE);
	}
	if (ret == 0 && cfg->ecn_max == 0) {
		ret = fault_needs(kv, FAULT_KEY_ECN_MIN, cfg->ecn_min, FAULT_KEY_ECN_MAX);
		if (ret == 0)
			ret = fault_needs(kv, FAULT_KEY_ECN_PMAX, cfg->ecn_pmax,
					  FAULT_KEY_ECN_MAX);
		if (ret == 0)
			ret = fault_needs(kv, FAULT_KEY_ECN_DEQUEUE, cfg->ecn_dequeue,
					  FAULT_KEY_ECN_MAX);
	}
	if (ret != 0 || cfg->rate_mbps == 0)
		return ret;
	if (rte_kvargs_count(kv, FAULT_KEY_BUFFER) == 0)
		cfg->buffer = FAULT_BN_DEFAULT_BUFFER;
	if (cfg->buffer < FAULT_MIN_BUFFER) {
		FAULT_LOG(ERR, "key '" FAULT_KEY_BUFFER "': %" PRIu64 " bytes hold no "
			  "full-size frame (at least %" PRIu64 ")\n", cfg->buffer,
			  FAULT_MIN_BUFFER);
		return -EINVAL;
	}
	if (cfg->ecn_max == 0)
		return 0;
	if (cfg->ecn_min >= cfg->ecn_max) {
		FAULT_LOG(ERR, "key '" FAULT_KEY_ECN_MIN "' (%" PRIu64 ") must be below key '"
			  FAULT_KEY_ECN_MAX "' (%" PRIu64 ")\n", cfg->ecn_min, cfg->ecn_max);
		return -EINVAL;
	}
	if (rte_kvargs_count(kv, FAULT_KEY_ECN_PMAX) == 0)
		cfg->ecn_pmax = DROCE_FAULT_PPM;
	return 0;
}

int
fault_args_parse(const char *args, struct fault_cfg *cfg)
{
	struct rte_kvargs *kv;
	int ret;

	*cfg = (struct fault_cfg){ .seed = FAULT_DEFAULT_SEED,
				   .delay_us = FAULT_DEFAULT_DELAY_US };
	if (args == NULL) {
		FAULT_LOG(ERR, "key '" FAULT_KEY_PORT "' is required\n");
		return -EINVAL;
	}
	kv = rte_kvargs_parse(args, fault_keys);
	if (kv == NULL) {
		FAULT_LOG(ERR, "cannot parse '%s': unknown key or bad syntax "
			  "(keys: port, seed, drop, dup, corrupt, delay, delay_us, reorder, "
			  "tx_drop, rate, buffer, ecn_min, ecn_max, ecn_pmax, ecn_dequeue)\n",
			  args);
		return -EINVAL;
	}
	ret = fault_get_port(kv, &cfg->port_id);
	if (ret == 0)
		ret = fault_get_u64(kv, FAULT_KEY_SEED, &cfg->seed, UINT64_MAX);
	if (ret == 0)
		ret = fault_get_ppm(kv, FAULT_KEY_DROP, &cfg->drop);
	if (ret == 0)
		ret = fault_get_ppm(kv, FAULT_KEY_DUP, &cfg->dup);
	if (ret == 0)
		ret = fault_get_ppm(kv, FAULT_KEY_CORRUPT, &cfg->corrupt);
	if (ret == 0)
		ret = fault_get_ppm(kv, FAULT_KEY_DELAY, &cfg->delay);
	if (ret == 0)
		ret = fault_get_u64(kv, FAULT_KEY_DELAY_US, &cfg->delay_us, FAULT_MAX_DELAY_US);
	if (ret == 0)
		ret = fault_get_ppm(kv, FAULT_KEY_REORDER, &cfg->reorder);
	if (ret == 0)
		ret = fault_get_ppm(kv, FAULT_KEY_TX_DROP, &cfg->tx_drop);
	if (ret == 0)
		ret = fault_get_bottleneck(kv, cfg);
	rte_kvargs_free(kv);
	return ret;
}
