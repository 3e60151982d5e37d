/* SPDX-License-Identifier: BSD-3-Clause */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_log.h>

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

void
fault_check_refused(const char *args, int err, const char *key)
{
	char *log_buf = NULL;
	size_t log_len = 0;
	FILE *log = open_memstream(&log_buf, &log_len);
	FILE *old = rte_log_get_stream();

	droce_test_ctx("args '%s'", args == NULL ? "(null)" : args);
	CHECK(log != NULL);
	CHECK(rte_openlog_stream(log) == 0);
	rte_errno = 0;
	CHECK(droce_fault_attach(args) == NULL);
	rte_openlog_stream(old == stderr ? NULL : old);
	fclose(log);
	droce_test_ctx("args '%s', log '%s'", args == NULL ? "(null)" : args, log_buf);
	CHECK_EQ_I64(rte_errno, err);
	CHECK(strstr(log_buf, key) != NULL);
	free(log_buf);
	droce_test_ctx("%s", "");
}

uint8_t
fault_payload_byte(uint32_t seq, uint32_t i)
{
	return (uint8_t)(seq * 31u + i * 7u + 1u);
}
