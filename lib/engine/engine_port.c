/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The end of an engine's port and of the EAL, for the programs that drive ports (droced,
 * droce-perf), and the unmapping of a port's memory under a running burst: all three work
 * round DPDK 22.11's net_memif and its interrupt thread.
 */
/* rte_intr_instance_alloc() and its setters are experimental in DPDK 22.11. */
#define ALLOW_EXPERIMENTAL_API
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include <rte_alarm.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_interrupts.h>

#include "engine_loc.h"

struct port_close {
	uint16_t port;
	bool stop;
	bool close;
	bool done;
};

static void
port_close_alarm(void *arg)
{
	struct port_close *pc = arg;

	if (pc->stop)
		rte_eth_dev_stop(pc->port);
	if (pc->close)
		rte_eth_dev_close(pc->port);
	__atomic_store_n(&pc->done, true, __ATOMIC_RELEASE);
}

static void
port_close_wait(const bool *done)
{
	while (!__atomic_load_n(done, __ATOMIC_ACQUIRE))
		rte_delay_us_sleep(100);
}

/*
 * On the EAL's interrupt thread, the thread on which DPDK 22.11's memif handles a peer's
 * disconnect: memif_disconnect() run there and on the caller's thread at once frees the
 * regions twice ("EAL: Error: Invalid memory", or a crash; seen when the peer closed just
 * before, under load). An alarm runs its callback on that thread, so the two come one
 * after the other, whatever the timing.
 */
void
droce_engine_port_close(uint16_t port, bool stop, bool close)
{
	struct port_close pc = { .port = port, .stop = stop, .close = close };

	if (!stop && !close)
		return;
	if (rte_eal_alarm_set(1, port_close_alarm, &pc) != 0) {
		port_close_alarm(&pc);	/* no alarm: here */
		return;
	}
	port_close_wait(&pc.done);
}

static void
eal_park(void *arg)
{
	__atomic_store_n((bool *)arg, true, __ATOMIC_RELEASE);
	for (;;)
		pause();
}

/*
 * DPDK 22.11's net_memif frees its listener socket's interrupt handle (rte_malloc memory)
 * when the last port of the socket closes, without unregistering it: the interrupt thread
 * keeps it in its list and reads it whenever it rebuilds its epoll set. rte_eal_cleanup()
 * unmaps that memory while the thread still runs, and a rebuild then (a driver's clean-up
 * unregisters a source) crashed droced at its exit. So the thread is parked first, in the
 * callback of an interrupt source of our own that never returns: it reads nothing more,
 * and dies with the process. Not in an alarm callback: the clean-up unregisters the
 * alarms' source synchronously, which would wait for it forever.
 */
/* The parking source: kept here, as the thread holds it until the process ends. */
static struct rte_intr_handle *volatile eal_park_handle;

void
droce_engine_eal_cleanup(void)
{
	struct rte_intr_handle *ih = rte_intr_instance_alloc(RTE_INTR_INSTANCE_F_PRIVATE);
	uint64_t one = 1, end = rte_get_timer_cycles() + rte_get_timer_hz();
	static bool parked;
	int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

	eal_park_handle = ih;

	if (ih != NULL && fd >= 0 && rte_intr_fd_set(ih, fd) == 0 &&
	    rte_intr_type_set(ih, RTE_INTR_HANDLE_EXT) == 0 &&
	    rte_intr_callback_register(ih, eal_park, &parked) == 0 &&
	    write(fd, &one, sizeof(one)) == sizeof(one)) {
		/* a second at most: a thread that does not come is not reading either */
		while (!__atomic_load_n(&parked, __ATOMIC_ACQUIRE) &&
		       rte_get_timer_cycles() < end)
			rte_delay_us_sleep(100);
	}
	rte_eal_cleanup();
}

/* ---- Unmapping under a burst ---- */

/*
 * When its peer goes, DPDK 22.11's net_memif drops the connection on the EAL's interrupt
 * thread (memif_disconnect): it clears the port's "connected" flag, then unmaps the
 * regions its rings and buffers live in (memif_free_regions). An engine's rx or tx burst
 * checks that flag once, at its start: a burst that began just before the flag went, on
 * an engine thread the kernel then took off its CPU, reads the rings after the unmap.
 * droced crashed so (SIGSEGV in eth_memif_rx) when the droced at the other end of its
 * memif link stopped, on a loaded machine (test_congestion).
 *
 * So the program's munmap is this one (the executables export it: lib/engine/meson.build),
 * and on the interrupt thread it first waits until every engine that was inside a loop
 * pass has finished that pass (engine_quiesce). memif cleared the flag before: a pass
 * that begins later does not touch the regions. Elsewhere it is the C library's call.
 * Waiting costs the interrupt thread one pass per engine, and it unmaps rarely.
 */

/* Device tables are few: droced has one, droce-perf one per host. */
#define UNMAP_DEVS	8

static pthread_mutex_t unmap_lock = PTHREAD_MUTEX_INITIALIZER;
static struct droce_engine_dev *unmap_devs[UNMAP_DEVS];
static int (*libc_munmap)(void *addr, size_t len);

__attribute__((constructor)) static void
unmap_init(void)
{
	/* The next definition: the C library's, or a sanitizer's that wraps it. */
	libc_munmap = (int (*)(void *, size_t))dlsym(RTLD_NEXT, "munmap");
}

void
engine_port_lock(void)
{
	pthread_mutex_lock(&unmap_lock);
}

void
engine_port_unlock(void)
{
	pthread_mutex_unlock(&unmap_lock);
}

void
engine_port_dev_track(struct droce_engine_dev *dev, bool on)
{
	uint32_t i;

	engine_port_lock();
	for (i = 0; i < UNMAP_DEVS; i++) {
		if (on && unmap_devs[i] == NULL) {
			unmap_devs[i] = dev;
			break;
		}
		if (!on && unmap_devs[i] == dev) {
			unmap_devs[i] = NULL;
			break;
		}
	}
	engine_port_unlock();
	if (on && i == UNMAP_DEVS)
		ENGINE_LOG(WARNING, "more than %u engine devices: a memif peer's disconnect may "
			   "unmap a port's rings under a burst\n", UNMAP_DEVS);
}

int
munmap(void *addr, size_t len)
{
	uint32_t i;

	if (rte_thread_is_intr()) {
		engine_port_lock();
		for (i = 0; i < UNMAP_DEVS; i++)
			if (unmap_devs[i] != NULL)
				engine_quiesce(unmap_devs[i]);
		engine_port_unlock();
	}
	if (libc_munmap != NULL)
		return libc_munmap(addr, len);
	/* Before the constructor (a sanitizer's start-up): the system call itself. */
	return (int)syscall(SYS_munmap, addr, len);
}
