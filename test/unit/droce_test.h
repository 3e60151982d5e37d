/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef DROCE_TEST_H
#define DROCE_TEST_H

/*
 * A tiny unit-test framework: no EAL, no hugepages, one executable per topic.
 *
 * A test is defined and registered once, by name:
 *
 *	DROCE_TEST(psn_wraps)
 *	{
 *		CHECK_EQ_U64(droce_psn_add(0xFFFFFF, 1), 0);
 *	}
 *
 * droce_test.c provides main(): it runs every registered test in definition order (or
 * only those named on the command line), prints "ok NAME" or "FAIL NAME: file:line:
 * message" for each, then a summary, and exits 1 when any test failed (2 for a usage
 * error). The first failed check ends its test; the others still run. Each test starts
 * with the same pseudo-random seed, so a test behaves the same alone or in a batch.
 */

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct droce_test {
	const char *name;
	void (*fn)(void);
	struct droce_test *next;
};

/* Called by DROCE_TEST's constructor; keeps definition order. */
void droce_test_register(struct droce_test *t);

#define DROCE_TEST(tname) \
	static void tname(void); \
	static struct droce_test droce_test_def_##tname = { .name = #tname, .fn = tname }; \
	__attribute__((constructor)) static void \
	droce_test_ctor_##tname(void) \
	{ \
		droce_test_register(&droce_test_def_##tname); \
	} \
	static void tname(void)

/* Ends the running test as failed; the message gets the current context appended. */
_Noreturn void droce_test_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Describes what the running test is doing ("opcode 0x04 len 13"), so a failure inside a
 * loop says which iteration failed. Replaces the previous context; cleared per test.
 */
void droce_test_ctx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Counts the checks evaluated, for the summary line. */
extern uint64_t droce_test_checks;

/* Deterministic pseudo-random numbers (splitmix64), reseeded before every test. */
uint64_t droce_test_rand(void);
/* Uniform in [0, n); n > 0. */
uint32_t droce_test_rand_below(uint32_t n);
void droce_test_rand_fill(void *buf, size_t len);

/*
 * malloc(len) owned by the running test: freed by droce_test_free or, at the latest,
 * when the test ends, passed or failed, so a failed check leaks nothing. The block has
 * exactly len bytes, so ASan catches a read or write past it.
 */
void *droce_test_malloc(size_t len);
void droce_test_free(void *p);

void droce_test_check_mem(const char *file, int line, const char *a_expr, const char *b_expr,
			  const void *a, const void *b, size_t len);
void droce_test_check_str(const char *file, int line, const char *a_expr, const char *b_expr,
			  const char *a, const char *b);

#define CHECK(cond) do { \
		droce_test_checks++; \
		if (!(cond)) \
			droce_test_fail(__FILE__, __LINE__, "CHECK(%s)", #cond); \
	} while (0)

#define CHECK_EQ_U64(a, b) do { \
		uint64_t droce_a_ = (a), droce_b_ = (b); \
		droce_test_checks++; \
		if (droce_a_ != droce_b_) \
			droce_test_fail(__FILE__, __LINE__, \
					"%s == %s: 0x%" PRIx64 " (%" PRIu64 ") != 0x%" PRIx64 \
					" (%" PRIu64 ")", #a, #b, droce_a_, droce_a_, \
					droce_b_, droce_b_); \
	} while (0)

#define CHECK_EQ_I64(a, b) do { \
		int64_t droce_a_ = (a), droce_b_ = (b); \
		droce_test_checks++; \
		if (droce_a_ != droce_b_) \
			droce_test_fail(__FILE__, __LINE__, "%s == %s: %" PRId64 " != %" PRId64, \
					#a, #b, droce_a_, droce_b_); \
	} while (0)

#define CHECK_NE_U64(a, b) do { \
		uint64_t droce_a_ = (a), droce_b_ = (b); \
		droce_test_checks++; \
		if (droce_a_ == droce_b_) \
			droce_test_fail(__FILE__, __LINE__, "%s != %s: both 0x%" PRIx64, \
					#a, #b, droce_a_); \
	} while (0)

/* Equal strings; NULL equals only NULL. */
#define CHECK_EQ_STR(a, b) droce_test_check_str(__FILE__, __LINE__, #a, #b, (a), (b))

/* len bytes equal; on failure names the first differing offset and both bytes. */
#define CHECK_MEM(a, b, len) droce_test_check_mem(__FILE__, __LINE__, #a, #b, (a), (b), (len))

#endif /* DROCE_TEST_H */
