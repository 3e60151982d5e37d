/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Captures, the control side: a capture is published to its port's engines (one pointer
 * each, engine_tap.c does the copying) and retired once no engine can be copying any more
 * (engine_quiesce: a pass that loaded the pointer ends before the capture is freed).
 */
#include <errno.h>
#include <stdlib.h>

#include <rte_errno.h>

#include "engine_loc.h"

struct droce_engine_tap *
droce_engine_tap_start(struct droce_engine_dev *dev, const struct droce_engine_tap_conf *conf)
{
	struct droce_engine_tap *tap;
	uint32_t i;

	if (conf->ring == NULL || conf->mp == NULL || conf->nb_qpns > DROCE_ENGINE_TAP_QPNS) {
		rte_errno = EINVAL;
		return NULL;
	}
	for (i = 0; i < DROCE_ENGINE_MAX; i++) {
		struct droce_engine *e = dev->engines[i];

		if (e != NULL && e->port_id == conf->port_id &&
		    atomic_load_explicit(&e->tap, memory_order_relaxed) != NULL) {
			rte_errno = EBUSY;
			return NULL;
		}
	}
	tap = calloc(1, sizeof(*tap));
	if (tap == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	tap->dev = dev;
	tap->conf = *conf;
	for (i = 0; i < DROCE_ENGINE_MAX; i++) {
		struct droce_engine *e = dev->engines[i];

		if (e != NULL && e->port_id == conf->port_id)
			atomic_store_explicit(&e->tap, tap, memory_order_release);
	}
	return tap;
}

void
droce_engine_tap_counts(const struct droce_engine_tap *tap, uint64_t *copied, uint64_t *dropped)
{
	*copied = atomic_load_explicit(&tap->copied, memory_order_relaxed);
	*dropped = atomic_load_explicit(&tap->dropped, memory_order_relaxed);
}

void
droce_engine_tap_stop(struct droce_engine_tap *tap)
{
	struct droce_engine_dev *dev = tap->dev;
	uint32_t i;

	for (i = 0; i < DROCE_ENGINE_MAX; i++) {
		struct droce_engine *e = dev->engines[i];

		if (e != NULL && atomic_load_explicit(&e->tap, memory_order_relaxed) == tap)
			atomic_store_explicit(&e->tap, NULL, memory_order_relaxed);
	}
	engine_quiesce(dev);
	free(tap);
}
