/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The failure hook of droce_test.h's CHECKs for the packet runners the interop tests
 * drive (engine-pkt-runner, net-pkt-runner): they are not DROCE_TEST executables, so
 * droce_test.c and its main() stay out of them. A failed CHECK prints "PROGRAM: FILE:LINE:
 * message" on stderr and exits 1.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "droce_test.h"

uint64_t droce_test_checks;

void
droce_test_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: %s:%d: ", program_invocation_short_name, file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}
