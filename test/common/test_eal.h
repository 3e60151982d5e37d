/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef TEST_EAL_H
#define TEST_EAL_H

/*
 * EAL for the EAL-level tests (test/engine, test/net, test/fault): started once per process
 * on first use, without hugepages, PCI, shared files or telemetry, on one lcore; cleaned up
 * at exit.
 */
void test_eal_init(void);
/* The same with workers more lcores for engines, all floating over CPUs 0-1. */
void test_eal_init_lcores(unsigned int workers);
/*
 * The same with a --vdev (name and devargs) and shared config files, as drivers using the
 * multi-process channel need (net_memif).
 */
void test_eal_init_vdev(unsigned int workers, const char *vdev);

#endif /* TEST_EAL_H */
