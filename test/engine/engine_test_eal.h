/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ENGINE_TEST_EAL_H
#define ENGINE_TEST_EAL_H

/*
 * EAL for test/engine: started once per process on first use, without hugepages, PCI,
 * shared files or telemetry, on one lcore; cleaned up at exit.
 */
void engine_test_eal_init(void);

#endif /* ENGINE_TEST_EAL_H */
