/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An unmapping on the EAL's interrupt thread waits for the engines' passes in progress
 * (lib/engine/engine_port.c, "Unmapping under a burst"): DPDK 22.11's net_memif unmaps a
 * connection's rings there when its peer goes, and an engine's burst that began before
 * would read them after the unmap. Which pass is in progress is the engine's epoch (odd:
 * inside one), so the test holds an engine "inside a pass" by writing its epoch, as an
 * engine thread the kernel took off its CPU mid-burst would leave it, and looks at what
 * an munmap from an alarm callback (the interrupt thread) does meanwhile.
 */
#include <stdatomic.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rte_alarm.h>
#include <rte_cycles.h>
#include <rte_interrupts.h>

#include "droce_test.h"
#include "engine_client.h"
#include "engine_loc.h"		/* white box: the engine's epoch and running flag */

/* How long the unmapping must still wait while the pass goes on. */
#define HELD_MS		200
/* How soon it must end once the pass ends (a loaded machine's scheduling included). */
#define RELEASE_MS	5000

struct unmap_call {
	void *addr;
	size_t len;
	_Atomic int done;		/* 0: not yet; 1: munmap returned 0; -1: it failed */
};

static void
unmap_on_intr_thread(void *arg)
{
	struct unmap_call *u = arg;

	CHECK(rte_thread_is_intr());
	atomic_store(&u->done, munmap(u->addr, u->len) == 0 ? 1 : -1);
}

static bool
wait_done(struct unmap_call *u, uint32_t ms)
{
	uint64_t end = rte_get_timer_cycles() + rte_get_timer_hz() / 1000 * ms;

	while (atomic_load(&u->done) == 0 && rte_get_timer_cycles() < end)
		usleep(1000);
	return atomic_load(&u->done) != 0;
}

static bool
mapped(void *addr)
{
	unsigned char vec;

	return mincore(addr, (size_t)sysconf(_SC_PAGESIZE), &vec) == 0;
}

/* Engine 0 of host a, stopped, then held "inside a pass" (running, odd epoch). */
static uint64_t
hold_in_pass(struct tc_host *a)
{
	struct droce_engine *e = a->eng[0];
	uint64_t epoch;

	droce_engine_stop(e);
	CHECK_EQ_I64(rte_eal_wait_lcore(a->lcore[0]), 0);
	epoch = atomic_load(&e->epoch);
	CHECK_EQ_U64(epoch & 1, 0);
	atomic_store(&e->epoch, epoch + 1);
	atomic_store(&e->running, 1);
	return epoch + 1;
}

static void
release_pass(struct tc_host *a, uint64_t epoch)
{
	atomic_store(&a->eng[0]->epoch, epoch + 1);
}

DROCE_TEST(intr_thread_unmap_waits_for_the_pass)
{
	struct tc_host a, b;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct unmap_call u = { .len = page };
	uint64_t epoch;

	tc_pair_open(&a, &b, 1, 1);
	u.addr = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(u.addr != MAP_FAILED);
	epoch = hold_in_pass(&a);

	CHECK_EQ_I64(rte_eal_alarm_set(1, unmap_on_intr_thread, &u), 0);
	CHECK(!wait_done(&u, HELD_MS));
	CHECK(mapped(u.addr));
	release_pass(&a, epoch);
	CHECK(wait_done(&u, RELEASE_MS));
	CHECK_EQ_I64(atomic_load(&u.done), 1);
	CHECK(!mapped(u.addr));

	atomic_store(&a.eng[0]->running, 0);
	tc_pair_close(&a, &b);
}

DROCE_TEST(other_threads_unmap_at_once)
{
	struct tc_host a, b;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint64_t epoch;
	void *p;

	tc_pair_open(&a, &b, 1, 1);
	p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED);
	epoch = hold_in_pass(&a);
	/* The engines' own threads and the control thread never wait: not the thread at risk. */
	CHECK_EQ_I64(munmap(p, page), 0);
	CHECK(!mapped(p));
	/* And the call still reports the C library's errors. */
	CHECK_EQ_I64(munmap((void *)1, page), -1);
	release_pass(&a, epoch);
	atomic_store(&a.eng[0]->running, 0);
	tc_pair_close(&a, &b);
}
