/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The mode table, testpmd's fwd_engines[]: --mode and the prompt's set mode look a name
 * up here, --mode's message lists the names in this order. Each row is in its mode's
 * file; a new mode is its file and a line here (doc/tools/droce-perf.md, "Adding a
 * mode").
 */
#include <stddef.h>

#include "perf.h"

const struct perf_mode_ops *const perf_modes[] = {
	&perf_mode_send,
	&perf_mode_write,
	&perf_mode_read,
	&perf_mode_atomic,
	&perf_mode_lat,
	&perf_mode_raw_tx,
	&perf_mode_raw_rx,
	&perf_mode_raw_io,
	NULL,
};
