/* SPDX-License-Identifier: BSD-3-Clause */
#include <inttypes.h>
#include <math.h>

#include "droce_fault.h"
#include "droce_test.h"
#include "fault_check.h"

/* Bounds of a binomial count: mean +- 6 standard deviations (fails ~1e-9 by chance). */
#define BINOMIAL_SIGMAS 6.0

void
fault_check_binomial(uint64_t count, uint32_t n, uint32_t ppm)
{
	double p = (double)ppm / DROCE_FAULT_PPM, mean = n * p;
	double dev = BINOMIAL_SIGMAS * sqrt(n * p * (1 - p));

	droce_test_ctx("count %" PRIu64 " of %u at %u ppm", count, n, ppm);
	CHECK((double)count >= mean - dev && (double)count <= mean + dev);
	droce_test_ctx("%s", "");
}

uint8_t
fault_payload_byte(uint32_t seq, uint32_t i)
{
	return (uint8_t)(seq * 31u + i * 7u + 1u);
}
