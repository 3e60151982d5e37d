/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef FAULT_CHECK_H
#define FAULT_CHECK_H

/* What test_fault.c (the library form) and test_fault_vdev.c (the vdev) both check. */

#include <stdint.h>

/*
 * count is a plausible draw of Binomial(n, ppm / 1e6): within 6 standard deviations of
 * the mean, which fails by chance about once in 1e9 runs.
 */
void fault_check_binomial(uint64_t count, uint32_t n, uint32_t ppm);

/* droce_fault_attach(args) fails with rte_errno err, and what it logged names key. */
void fault_check_refused(const char *args, int err, const char *key);

/* Byte i of the payload of the packet numbered seq. */
uint8_t fault_payload_byte(uint32_t seq, uint32_t i);

#endif /* FAULT_CHECK_H */
