/* SPDX-License-Identifier: BSD-3-Clause */
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_eal.h>

#include "droce_test.h"
#include "test_eal.h"

#define PREFIX_LEN 64

static bool eal_started;

static int
remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/*
 * The runtime directory goes with the EAL: empty with --no-shconf, holding the config
 * and memory-map files otherwise.
 */
static void
eal_cleanup(void)
{
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s", rte_eal_get_runtime_dir());
	rte_eal_cleanup();
	nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static void
eal_init(unsigned int workers, bool shconf, const char *vdev)
{
	/*
	 * --no-huge -m: hugepages may not be reserved. --in-memory refuses --no-huge, so
	 * --no-shconf and a per-process --file-prefix keep processes apart instead. Drivers
	 * that need the multi-process channel (net_memif) get shared config files instead,
	 * still under the per-process prefix.
	 * Worker lcores (engines) float with the main one over CPUs 0-1: never more than the
	 * two cores a CI machine has, whatever the number of engines.
	 */
	char prefix[PREFIX_LEN], lcores[PREFIX_LEN], mem[16], vdev_arg[512];
	char *argv[] = {
		"engine_test", "--no-huge", "-m", mem, "--no-pci", prefix, "--no-telemetry",
		lcores, "--log-level=lib.eal:warning", vdev_arg, "--no-shconf",
	};
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int argc = RTE_DIM(argv);

	if (eal_started)
		return;
	snprintf(mem, sizeof(mem), "%u", workers == 0 ? 256 : 768);
	snprintf(prefix, sizeof(prefix), "--file-prefix=droce-engine-%d", (int)getpid());
	if (workers == 0)
		snprintf(lcores, sizeof(lcores), "--lcores=0");
	else
		snprintf(lcores, sizeof(lcores), "--lcores=(0-%u)@(0-%ld)", workers,
			 ncpu >= 2 ? 1L : 0L);
	snprintf(vdev_arg, sizeof(vdev_arg), "--vdev=%s", vdev != NULL ? vdev : "");
	if (shconf)
		argc--;
	if (vdev == NULL) {
		argv[argc - 2] = argv[argc - 1];
		argc--;
	}
	CHECK(rte_eal_init(argc, argv) >= 0);
	eal_started = true;
	atexit(eal_cleanup);
}

void
test_eal_init(void)
{
	eal_init(0, false, NULL);
}

void
test_eal_init_lcores(unsigned int workers)
{
	eal_init(workers, false, NULL);
}

void
test_eal_init_vdev(unsigned int workers, const char *vdev)
{
	eal_init(workers, true, vdev);
}
