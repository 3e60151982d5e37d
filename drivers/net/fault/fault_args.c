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

static const char *const fault_keys[] = {
	FAULT_KEY_PORT, FAULT_KEY_SEED, FAULT_KEY_DROP, FAULT_KEY_DUP, FAULT_KEY_CORRUPT,
	FAULT_KEY_DELAY, FAULT_KEY_DELAY_US, FAULT_KEY_REORDER, FAULT_KEY_TX_DROP, NULL,
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
			  "tx_drop)\n",
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
	rte_kvargs_free(kv);
	return ret;
}
