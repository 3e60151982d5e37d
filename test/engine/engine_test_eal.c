/* SPDX-License-Identifier: BSD-3-Clause */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_eal.h>

#include "droce_test.h"
#include "engine_test_eal.h"

#define PREFIX_LEN 64

static bool eal_started;

/* --no-shconf still makes an (empty) runtime directory: removed with the EAL. */
static void
eal_cleanup(void)
{
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s", rte_eal_get_runtime_dir());
	rte_eal_cleanup();
	rmdir(dir);
}

void
engine_test_eal_init(void)
{
	/*
	 * --no-huge -m: hugepages may not be reserved. --in-memory refuses --no-huge, so
	 * --no-shconf and a per-process --file-prefix keep processes apart instead.
	 */
	char prefix[PREFIX_LEN];
	char *argv[] = {
		"engine_test", "--no-huge", "-m", "256", "--no-pci", "--no-shconf", prefix,
		"--no-telemetry", "-l", "0", "--log-level=lib.eal:warning",
	};

	if (eal_started)
		return;
	snprintf(prefix, sizeof(prefix), "--file-prefix=droce-engine-%d", (int)getpid());
	CHECK(rte_eal_init(RTE_DIM(argv), argv) >= 0);
	eal_started = true;
	atexit(eal_cleanup);
}
