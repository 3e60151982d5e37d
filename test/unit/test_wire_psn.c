/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * 24-bit PSN arithmetic (IB spec 9.7.1) against a reference written with plain 64-bit
 * arithmetic and the definitions in droce_wire_psn.h: add and dist are modulo 2^24,
 * diff is the signed difference a - b taken into [-2^23, 2^23), and the comparisons
 * are diff's sign.
 */

#include "droce_test.h"
#include "droce_wire_psn.h"

#define SPACE		(1ll << 24)
#define HALF		(1ll << 23)
#define RANDOM_PAIRS	200000

static int64_t
mod_space(int64_t v)
{
	return ((v % SPACE) + SPACE) % SPACE;
}

static uint32_t ref_add(uint32_t a, uint32_t n) { return (uint32_t)mod_space((int64_t)a + n); }
static uint32_t ref_dist(uint32_t a, uint32_t b) { return (uint32_t)mod_space((int64_t)b - a); }

static int32_t
ref_diff(uint32_t a, uint32_t b)
{
	int64_t d = mod_space((int64_t)a - b);

	return (int32_t)(d >= HALF ? d - SPACE : d);
}

static bool
ref_in_window(uint32_t psn, uint32_t start, uint32_t size)
{
	return (int64_t)ref_dist(start, psn) < (int64_t)size;
}

static uint32_t
rand_psn(void)
{
	return droce_test_rand_below((uint32_t)SPACE);
}

/* Every function on (a, b) against the reference. */
static void
check_pair(uint32_t a, uint32_t b)
{
	int32_t d = ref_diff(a, b);

	droce_test_ctx("a 0x%06x b 0x%06x", a, b);
	CHECK_EQ_U64(droce_psn_dist(a, b), ref_dist(a, b));
	CHECK_EQ_I64(droce_psn_diff(a, b), d);
	CHECK_EQ_U64(droce_psn_lt(a, b), d < 0);
	CHECK_EQ_U64(droce_psn_le(a, b), d <= 0);
	CHECK_EQ_U64(droce_psn_gt(a, b), d > 0);
	CHECK_EQ_U64(droce_psn_ge(a, b), d >= 0);
	CHECK_EQ_U64(droce_psn_add(a, droce_psn_dist(a, b)), b);
}

DROCE_TEST(psn_add_wraps)
{
	CHECK_EQ_U64(droce_psn_add(0xFFFFFF, 1), 0);
	CHECK_EQ_U64(droce_psn_add(0xFFFFFF, 2), 1);
	CHECK_EQ_U64(droce_psn_add(0xFFFFF0, 0x20), 0x10);
	CHECK_EQ_U64(droce_psn_add(0, 0), 0);
	CHECK_EQ_U64(droce_psn_add(5, 0x1000000), 5);	/* a whole turn */
	CHECK_EQ_U64(droce_psn_add(5, 0xFFFFFFFF), 4);	/* 2^32 - 1 is -1 modulo 2^24 */
	CHECK_EQ_U64(droce_psn_add(0x123456, 0xFFFFFFFF), 0x123455);
	CHECK_EQ_U64(droce_psn_add(0x800000, 0x800000), 0);
}

DROCE_TEST(psn_dist_wraps)
{
	CHECK_EQ_U64(droce_psn_dist(0xFFFFFF, 0), 1);
	CHECK_EQ_U64(droce_psn_dist(0, 0xFFFFFF), 0xFFFFFF);
	CHECK_EQ_U64(droce_psn_dist(0xFFFFF0, 0x10), 0x20);
	CHECK_EQ_U64(droce_psn_dist(7, 7), 0);
}

DROCE_TEST(psn_compare_across_wrap)
{
	/* 0 comes right after 0xFFFFFF. */
	CHECK(droce_psn_lt(0xFFFFFF, 0));
	CHECK(droce_psn_le(0xFFFFFF, 0));
	CHECK(!droce_psn_gt(0xFFFFFF, 0));
	CHECK(!droce_psn_ge(0xFFFFFF, 0));
	CHECK(droce_psn_gt(0, 0xFFFFFF));
	CHECK(droce_psn_ge(0, 0xFFFFFF));
	CHECK_EQ_I64(droce_psn_diff(0, 0xFFFFFF), 1);
	CHECK_EQ_I64(droce_psn_diff(0xFFFFFF, 0), -1);
	CHECK_EQ_I64(droce_psn_diff(0x10, 0xFFFFF0), 0x20);
	/* Equal PSNs. */
	CHECK(!droce_psn_lt(0x123, 0x123));
	CHECK(droce_psn_le(0x123, 0x123));
	CHECK(!droce_psn_gt(0x123, 0x123));
	CHECK(droce_psn_ge(0x123, 0x123));
	CHECK_EQ_I64(droce_psn_diff(0x123, 0x123), 0);
}

DROCE_TEST(psn_half_space_boundary)
{
	/* Just under half the space apart: ordered, in both directions. */
	CHECK(droce_psn_lt(0, HALF - 1));
	CHECK(droce_psn_gt(HALF - 1, 0));
	CHECK_EQ_I64(droce_psn_diff(HALF - 1, 0), HALF - 1);
	CHECK_EQ_I64(droce_psn_diff(0, HALF - 1), -(HALF - 1));
	/* Just over: the order flips, b is now before a. */
	CHECK(droce_psn_gt(0, HALF + 1));
	CHECK(droce_psn_lt(HALF + 1, 0));
	CHECK_EQ_I64(droce_psn_diff(0, HALF + 1), HALF - 1);
	/* Exactly half: diff is -2^23 both ways (its range is [-2^23, 2^23)). */
	CHECK_EQ_I64(droce_psn_diff(0, HALF), -HALF);
	CHECK_EQ_I64(droce_psn_diff(HALF, 0), -HALF);
	CHECK_EQ_I64(droce_psn_diff(0xFFFFFF, 0x7FFFFF), -HALF);
	CHECK(droce_psn_lt(0, HALF) && droce_psn_lt(HALF, 0));
	/* Around the boundary, across the wrap too. */
	for (int64_t k = -3; k <= 3; k++) {
		check_pair(0, (uint32_t)mod_space(HALF + k));
		check_pair(0xFFFFFE, (uint32_t)mod_space(0xFFFFFE + HALF + k));
		check_pair((uint32_t)mod_space(HALF + k), 0);
	}
}

DROCE_TEST(psn_random_pairs)
{
	unsigned int i;

	for (i = 0; i < RANDOM_PAIRS; i++)
		check_pair(rand_psn(), rand_psn());
	/* Pairs close together, where the wrap and small distances matter. */
	for (i = 0; i < RANDOM_PAIRS; i++) {
		uint32_t a = droce_test_rand_below(4) == 0 ? (uint32_t)SPACE - 1 -
				droce_test_rand_below(64) : rand_psn();
		int64_t delta = (int64_t)droce_test_rand_below(256) - 128;

		check_pair(a, (uint32_t)mod_space(a + delta));
		check_pair(a, (uint32_t)mod_space(a + HALF + delta));
	}
}

DROCE_TEST(psn_random_add)
{
	unsigned int i;

	for (i = 0; i < RANDOM_PAIRS; i++) {
		uint32_t a = rand_psn();
		uint32_t n = (uint32_t)droce_test_rand();

		droce_test_ctx("a 0x%06x n 0x%08x", a, n);
		CHECK_EQ_U64(droce_psn_add(a, n), ref_add(a, n));
		CHECK_EQ_U64(droce_psn_add(a, n & 0xFF), ref_add(a, n & 0xFF));
	}
}

DROCE_TEST(psn_window)
{
	unsigned int i;

	/* A window of 32 that straddles the wrap. */
	for (uint32_t k = 0; k < 32; k++)
		CHECK(droce_psn_in_window(droce_psn_add(0xFFFFF0, k), 0xFFFFF0, 32));
	CHECK(!droce_psn_in_window(0x10, 0xFFFFF0, 32));
	CHECK(!droce_psn_in_window(0xFFFFEF, 0xFFFFF0, 32));
	/* Empty and whole-space windows. */
	CHECK(!droce_psn_in_window(5, 5, 0));
	CHECK(droce_psn_in_window(5, 5, 1));
	CHECK(!droce_psn_in_window(6, 5, 1));
	CHECK(droce_psn_in_window(4, 5, (uint32_t)SPACE));
	CHECK(!droce_psn_in_window(4, 5, (uint32_t)SPACE - 1));
	for (i = 0; i < RANDOM_PAIRS; i++) {
		uint32_t start = rand_psn(), psn, size;

		/* Half the time near the window's edges, where mistakes live. */
		size = droce_test_rand_below(2) ? droce_test_rand_below(1024) : rand_psn();
		psn = droce_test_rand_below(2) ? rand_psn() :
		      droce_psn_add(start, size + droce_test_rand_below(5) - 2);
		droce_test_ctx("psn 0x%06x start 0x%06x size %u", psn, start, size);
		CHECK_EQ_U64(droce_psn_in_window(psn, start, size),
			     ref_in_window(psn, start, size));
	}
}
