/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * The runner behind droce_test.h: the list of registered tests, failure reporting
 * (a failed check longjmps back here, so checks work inside helper functions too), the
 * per-test pseudo-random generator and main().
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "droce_test.h"

/* Every test starts from this seed: runs are reproducible. */
#define DROCE_TEST_SEED 0x64726F6365746573ull	/* "droctes" */

static struct droce_test *tests;
static struct droce_test **tests_tail = &tests;
static jmp_buf fail_jmp;
static char fail_msg[1024];
static char ctx_msg[256];
static uint64_t rng_state;
/* Blocks from droce_test_malloc not yet freed. */
static void **allocs;
static size_t nallocs, allocs_cap;

uint64_t droce_test_checks;

void
droce_test_register(struct droce_test *t)
{
	t->next = NULL;
	*tests_tail = t;
	tests_tail = &t->next;
}

void
droce_test_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(fail_msg, sizeof(fail_msg), "%s:%d: ", file, line);
	va_start(ap, fmt);
	vsnprintf(fail_msg + n, sizeof(fail_msg) - (size_t)n, fmt, ap);
	va_end(ap);
	if (ctx_msg[0] != '\0') {
		size_t used = strlen(fail_msg);

		snprintf(fail_msg + used, sizeof(fail_msg) - used, " [%s]", ctx_msg);
	}
	longjmp(fail_jmp, 1);
}

void
droce_test_ctx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ctx_msg, sizeof(ctx_msg), fmt, ap);
	va_end(ap);
}

uint64_t
droce_test_rand(void)
{
	uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

uint32_t
droce_test_rand_below(uint32_t n)
{
	return (uint32_t)(droce_test_rand() % n);
}

void
droce_test_rand_fill(void *buf, size_t len)
{
	uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)droce_test_rand();
}

void *
droce_test_malloc(size_t len)
{
	void *p;

	if (nallocs == allocs_cap) {
		size_t cap = allocs_cap != 0 ? 2 * allocs_cap : 64;
		void **a = realloc(allocs, cap * sizeof(*a));

		if (a == NULL)
			droce_test_fail(__FILE__, __LINE__, "out of memory");
		allocs = a;
		allocs_cap = cap;
	}
	/* malloc(0) may return NULL; a 0-byte block must still be a distinct pointer. */
	p = malloc(len);
	if (p == NULL && len == 0)
		p = malloc(1);
	if (p == NULL)
		droce_test_fail(__FILE__, __LINE__, "out of memory");
	allocs[nallocs++] = p;
	return p;
}

void
droce_test_free(void *p)
{
	size_t i;

	/* Newest first: tests free in roughly the reverse order they allocate. */
	for (i = nallocs; i-- > 0;) {
		if (allocs[i] == p) {
			allocs[i] = allocs[--nallocs];
			free(p);
			return;
		}
	}
	droce_test_fail(__FILE__, __LINE__, "droce_test_free of a block it does not own");
}

static void
free_all(void)
{
	while (nallocs > 0)
		free(allocs[--nallocs]);
}

void
droce_test_check_mem(const char *file, int line, const char *a_expr, const char *b_expr,
		     const void *a, const void *b, size_t len)
{
	const uint8_t *pa = a, *pb = b;
	size_t i;

	droce_test_checks++;
	for (i = 0; i < len; i++)
		if (pa[i] != pb[i])
			droce_test_fail(file, line,
					"%s and %s differ at byte %zu of %zu: 0x%02x != 0x%02x",
					a_expr, b_expr, i, len, pa[i], pb[i]);
}

void
droce_test_check_str(const char *file, int line, const char *a_expr, const char *b_expr,
		     const char *a, const char *b)
{
	droce_test_checks++;
	if (a == NULL || b == NULL) {
		if (a != b)
			droce_test_fail(file, line, "%s == %s: \"%s\" != \"%s\"", a_expr, b_expr,
					a != NULL ? a : "(null)", b != NULL ? b : "(null)");
		return;
	}
	if (strcmp(a, b) != 0)
		droce_test_fail(file, line, "%s == %s: \"%s\" != \"%s\"", a_expr, b_expr, a, b);
}

static const struct droce_test *
find_test(const char *name)
{
	const struct droce_test *t;

	for (t = tests; t != NULL; t = t->next)
		if (strcmp(t->name, name) == 0)
			return t;
	return NULL;
}

/* Runs one test; true when it passed. */
static bool
run_test(const struct droce_test *t)
{
	ctx_msg[0] = '\0';
	rng_state = DROCE_TEST_SEED;
	if (setjmp(fail_jmp) != 0) {
		free_all();
		printf("FAIL %s: %s\n", t->name, fail_msg);
		fflush(stdout);
		return false;
	}
	t->fn();
	free_all();
	printf("ok %s\n", t->name);
	fflush(stdout);
	return true;
}

static bool
named(const char *name, int argc, char **argv)
{
	int i;

	if (argc < 2)
		return true;
	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], name) == 0)
			return true;
	return false;
}

int
main(int argc, char **argv)
{
	const struct droce_test *t;
	unsigned int run = 0, failed = 0;
	int i;

	for (i = 1; i < argc; i++) {
		if (find_test(argv[i]) != NULL)
			continue;
		fprintf(stderr, "usage: %s [TEST...]\nno test named '%s'; tests:\n", argv[0],
			argv[i]);
		for (t = tests; t != NULL; t = t->next)
			fprintf(stderr, "  %s\n", t->name);
		return 2;
	}

	for (t = tests; t != NULL; t = t->next) {
		if (!named(t->name, argc, argv))
			continue;
		run++;
		if (!run_test(t))
			failed++;
	}
	printf("%s: %u tests, %u passed, %u failed, %" PRIu64 " checks\n", argv[0], run,
	       run - failed, failed, droce_test_checks);
	free(allocs);
	return failed != 0 ? 1 : 0;
}
