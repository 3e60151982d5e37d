/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * How an idle engine waits (doc/engine.md, "Sleeping engines"): it spins, or it sleeps in
 * the kernel on one epoll set holding everything that can give it work: its command
 * eventfd (commands, handoffs, slow_tx frames), one eventfd per client domain (doorbells),
 * and its rx queue's interrupt. The timeout is its nearest timer, or idle_sleep_us when
 * the port cannot wake it.
 *
 * A lost wake-up is the bug this file can have. Every producer of work publishes its work
 * and then looks whether the engine sleeps; the engine publishes that it sleeps and then
 * looks for work, with a full fence between on both sides. One of the two sees the other,
 * so either the engine finds the work or the producer writes the eventfd, whose count
 * stays set until the engine reads it after its sleep.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/prctl.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_pause.h>

#include "engine_loc.h"

/* What an epoll entry is: the tag in the low bits of its data, the fd above them. */
enum { WAIT_CMD, WAIT_DOORBELL, WAIT_RX };
#define WAIT_TAG_BITS	2
#define WAIT_EVENTS	16
/* The sleeping thread's timer slack: short sleeps end when asked, not 50 us later. */
#define WAIT_TIMER_SLACK_NS	1000

static const char *const wait_names[] = {
	[DROCE_ENGINE_WAIT_POLL] = "poll",
	[DROCE_ENGINE_WAIT_ADAPTIVE] = "adaptive",
	[DROCE_ENGINE_WAIT_INTERRUPT] = "interrupt",
};

const char *
droce_engine_wait_name(enum droce_engine_wait w)
{
	return (unsigned int)w < RTE_DIM(wait_names) ? wait_names[w] : NULL;
}

static int
wait_ctl(struct droce_engine *e, int op, int fd, unsigned int tag)
{
	struct epoll_event ev = {
		.events = EPOLLIN,
		.data.u64 = ((uint64_t)(uint32_t)fd << WAIT_TAG_BITS) | tag,
	};

	return epoll_ctl(e->epfd, op, fd, &ev) == 0 ? 0 : -errno;
}

/*
 * Whether the queue's interrupt fd is an eventfd, which counts interrupts and stays
 * readable until read (vfio-pci's MSI-X vectors, as EAL's eal_intr_proc_rxtx_intr reads
 * them), or a fd the rx burst itself drains (net_tap's queue fd). An eventfd left unread
 * ends every later sleep at once: the engine would spin through its sleeps.
 */
static bool
fd_is_eventfd(int fd)
{
	char path[64], target[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return false;
	target[n] = '\0';
	return strcmp(target, "anon_inode:[eventfd]") == 0;
}

int
engine_wait_init(struct droce_engine *e, const struct droce_engine_conf *conf)
{
	uint32_t spin_us = conf->idle_spin_us != 0 ? conf->idle_spin_us : DROCE_ENGINE_IDLE_SPIN_US;
	int rc;

	e->wait = conf->wait;
	e->idle_sleep_us = conf->idle_sleep_us != 0 ? conf->idle_sleep_us :
			   DROCE_ENGINE_IDLE_SLEEP_US;
	e->idle_spin_tsc = conf->wait == DROCE_ENGINE_WAIT_ADAPTIVE ?
			   e->tsc_hz / 1000000 * spin_us : 0;
	e->rx_intr_fd = -1;
	e->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (e->epfd < 0)
		return -errno;
	rc = wait_ctl(e, EPOLL_CTL_ADD, e->cmd_wake_fd, WAIT_CMD);
	if (rc != 0)
		return rc;
	if (conf->wait == DROCE_ENGINE_WAIT_POLL || !conf->rx_intr)
		return 0;
	/*
	 * rte_eth_dev_rx_intr_ctl_q_get_fd() gives the queue's fd when the PMD supports rx
	 * interrupts and the port was configured with intr_conf.rxq (net_tap, most NICs under
	 * vfio-pci); net_memif, net_ring, net_af_packet and net_af_xdp give none (DPDK 22.11).
	 */
	e->rx_intr_fd = rte_eth_dev_rx_intr_ctl_q_get_fd(e->port_id, e->rx_queue);
	if (e->rx_intr_fd < 0 || wait_ctl(e, EPOLL_CTL_ADD, e->rx_intr_fd, WAIT_RX) != 0) {
		e->rx_intr_fd = -1;
		ENGINE_LOG(NOTICE, "engine %u: port %u queue %u has no rx interrupt: the idle "
			   "engine sleeps %u us at a time\n", e->id, e->port_id, e->rx_queue,
			   e->idle_sleep_us);
		return 0;
	}
	e->rx_intr_counts = fd_is_eventfd(e->rx_intr_fd);
	return 0;
}

void
engine_wait_fini(struct droce_engine *e)
{
	if (e->epfd >= 0)
		close(e->epfd);
	e->epfd = -1;
}

int
engine_wait_fd_add(struct droce_engine *e, int fd)
{
	return wait_ctl(e, EPOLL_CTL_ADD, fd, WAIT_DOORBELL);
}

void
engine_wait_fd_del(struct droce_engine *e, int fd)
{
	(void)wait_ctl(e, EPOLL_CTL_DEL, fd, WAIT_DOORBELL);
}

/* The sleeping word of e's doorbell block in each domain, and e's own (handoffs). */
static void
sleeping_publish(struct droce_engine *e, uint32_t v)
{
	uint32_t d;

	atomic_store_explicit(&e->asleep, v, memory_order_relaxed);
	for (d = 0; d < e->nb_doms; d++)
		__atomic_store_n(&e->doms[d]->db[e->id]->sleeping, v, __ATOMIC_RELAXED);
}

/*
 * Work that arrived since the last pass, looked for after sleeping was published: a
 * doorbell, a command, a handoff, a slow_tx frame; or work the lists still hold.
 */
static bool
wait_work_pending(const struct droce_engine *e)
{
	uint32_t d;

	for (d = 0; d < e->nb_doms; d++) {
		if (__atomic_load_n(&e->doms[d]->db[e->id]->summary, __ATOMIC_RELAXED) != 0)
			return true;
	}
	return !rte_ring_empty(e->cmds) || !rte_ring_empty(e->handoff) ||
	       (e->slow_tx != NULL && !rte_ring_empty(e->slow_tx)) ||
	       !TAILQ_EMPTY(&e->acks) || !TAILQ_EMPTY(&e->reads) || !TAILQ_EMPTY(&e->errs);
}

/*
 * The sleep's timeout: the nearest timer (retransmission, RNR, early retransmission), and
 * sleep_bound_us at most when the port cannot wake the engine, DROCE_ENGINE_RX_INTR_CHECK_US
 * when it can. NULL: none (sleep until woken).
 */
static const struct timespec *
wait_timeout(const struct droce_engine *e, struct timespec *ts)
{
	uint64_t ns = UINT64_MAX;

	if (!TAILQ_EMPTY(&e->timers)) {
		uint64_t now = rte_rdtsc();

		ns = e->timer_next <= now ? 0 :
		     (uint64_t)((double)(e->timer_next - now) * 1e9 / (double)e->tsc_hz);
	}
	/* no rx interrupt, or packets the port refused to retry: a bounded sleep */
	if ((e->rx_intr_fd < 0 || e->nb_tx != 0) && ns > (uint64_t)e->sleep_bound_us * 1000)
		ns = (uint64_t)e->sleep_bound_us * 1000;
	/* the rx interrupt is trusted for so long (engine_wait_rx_checked) */
	if (e->rx_intr_fd >= 0 && ns > (uint64_t)DROCE_ENGINE_RX_INTR_CHECK_US * 1000)
		ns = (uint64_t)DROCE_ENGINE_RX_INTR_CHECK_US * 1000;
	if (ns == UINT64_MAX)
		return NULL;
	ts->tv_sec = (time_t)(ns / 1000000000);
	ts->tv_nsec = (long)(ns % 1000000000);
	return ts;
}

/*
 * A sleep that ended at its timeout. Where the port cannot wake the engine, each such one
 * in a row doubles the next sleep's bound, up to DROCE_ENGINE_IDLE_SLEEP_MAX_US: a daemon
 * idle for long costs a thousand wake-ups a second, not one every idle_sleep_us; the
 * first packet after it waits up to that long. Work ends the spell and the doubling.
 */
static void
wait_timed_out(struct droce_engine *e)
{
	ENGINE_STAT(e, timeout_wakeups);
	/* the next rx burst tells whether the interrupt should have ended this sleep */
	e->rx_intr_check = e->rx_intr_fd >= 0;
	if ((e->rx_intr_fd < 0 || e->nb_tx != 0) &&
	    e->sleep_bound_us < DROCE_ENGINE_IDLE_SLEEP_MAX_US)
		e->sleep_bound_us = RTE_MIN(2 * e->sleep_bound_us,
					    (uint32_t)DROCE_ENGINE_IDLE_SLEEP_MAX_US);
}

/* Reads what woke the engine: the eventfds' counts, and counts the causes. */
static void
wait_drain(struct droce_engine *e)
{
	struct epoll_event evs[WAIT_EVENTS];
	uint64_t n;
	int i, got;

	got = epoll_wait(e->epfd, evs, WAIT_EVENTS, 0);
	if (got <= 0) {
		wait_timed_out(e);
		return;
	}
	for (i = 0; i < got; i++) {
		unsigned int tag = evs[i].data.u64 & ((1u << WAIT_TAG_BITS) - 1);
		int fd = (int)(evs[i].data.u64 >> WAIT_TAG_BITS);

		switch (tag) {
		case WAIT_CMD:
			ENGINE_STAT(e, cmd_wakeups);
			break;
		case WAIT_DOORBELL:
			ENGINE_STAT(e, doorbell_wakeups);
			break;
		default:
			ENGINE_STAT(e, rx_intr_wakeups);
			e->rx_intr_misses = 0;
			/* net_tap's queue fd: the rx burst takes what it holds */
			if (!e->rx_intr_counts)
				continue;
			break;
		}
		if (read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
			ENGINE_LOG(DEBUG, "engine %u: wake-up fd: %s\n", e->id, strerror(errno));
	}
}

/*
 * A packet that reached the queue after the pass's last burst but before the rx interrupt
 * was enabled raises no interrupt on every NIC: virtio's device reads the used ring's
 * "interrupt me" flag when it adds a buffer, not when the driver sets it, so that packet
 * would wait for the sleep's bound. One burst after the enabling closes the window; what
 * it takes is the next rx stage's (e->rx_stash).
 */
static bool
wait_rx_look(struct droce_engine *e)
{
	uint16_t n;

	if (e->rx_intr_fd < 0 || atomic_load_explicit(&e->port_paused, memory_order_relaxed))
		return false;
	n = rte_eth_rx_burst(e->port_id, e->rx_queue, e->rx_stash, ENGINE_BURST);
	e->nb_rx_stash = n;
	e->st.rx_pkts += n;
	if (n == 0)
		return false;
	ENGINE_STAT(e, rx_intr_late);
	return true;
}

/*
 * The sleep. The engine publishes that it sleeps and makes its last look while it still
 * owns its state (its domains' list may change once it lets go); then the state word goes
 * NAP, so that the control thread may apply commands and send slow_tx frames itself
 * meanwhile (engine_cmd.c): a command queued before that wrote the command eventfd, one
 * applied during the sleep writes it when it gave the engine work. The word comes back
 * NAP -> RUN once such a command is done, and only then is the sleep's cause read.
 */
static void
engine_sleep(struct droce_engine *e)
{
	struct pollfd pfd = { .fd = e->epfd, .events = POLLIN };
	struct timespec ts;
	uint32_t nap;
	int woken;

	sleeping_publish(e, 1);
	if (e->rx_intr_fd >= 0)
		rte_eth_dev_rx_intr_enable(e->port_id, e->rx_queue);
	/* Dekker: sleeping (and the interrupt) before the last look at the work. */
	atomic_thread_fence(memory_order_seq_cst);
	if (wait_work_pending(e) || atomic_load_explicit(&e->stop, memory_order_acquire) ||
	    wait_rx_look(e)) {
		ENGINE_STAT(e, sleeps_skipped);
		goto awake;
	}
	ENGINE_STAT(e, sleeps);
	atomic_store_explicit(&e->own, ENGINE_OWN_NAP, memory_order_release);
	/* ppoll on the epoll fd: a timeout in nanoseconds, where epoll_wait has ms */
	woken = ppoll(&pfd, 1, wait_timeout(e, &ts), NULL);
	for (;;) {
		nap = ENGINE_OWN_NAP;
		if (atomic_compare_exchange_weak_explicit(&e->own, &nap, ENGINE_OWN_RUN,
							  memory_order_acquire,
							  memory_order_relaxed))
			break;
		rte_pause();
	}
	if (woken > 0)
		wait_drain(e);
	else
		wait_timed_out(e);
awake:
	if (e->rx_intr_fd >= 0)
		rte_eth_dev_rx_intr_disable(e->port_id, e->rx_queue);
	/* a domain a command added during the sleep was published sleeping too */
	sleeping_publish(e, 0);
}

/*
 * A PMD may take rx interrupts and never raise them (QEMU's e1000e under vfio-pci with
 * DPDK's em driver: doc/nics.md): a sleep on them would last until the next timer, or for
 * ever. So such a sleep is bounded (wait_timeout), and packets found waiting after one
 * that ended at its bound, DROCE_ENGINE_RX_INTR_MISSES times in a row with no interrupt
 * in between, make the engine sleep as on a port without rx interrupts. (A packet that
 * lands just as a bounded sleep ends looks the same; it takes that many in a row.)
 */
void
engine_wait_rx_checked(struct droce_engine *e, unsigned int n)
{
	e->rx_intr_check = false;
	if (n == 0 || e->rx_intr_fd < 0)
		return;
	ENGINE_STAT(e, rx_intr_missed);
	if (++e->rx_intr_misses < DROCE_ENGINE_RX_INTR_MISSES)
		return;
	rte_eth_dev_rx_intr_disable(e->port_id, e->rx_queue);
	(void)wait_ctl(e, EPOLL_CTL_DEL, e->rx_intr_fd, WAIT_RX);
	e->rx_intr_fd = -1;
	e->sleep_bound_us = e->idle_sleep_us;
	ENGINE_LOG(NOTICE, "engine %u: port %u queue %u takes rx interrupts but did not raise "
		   "%u in a row: the idle engine sleeps %u us at a time\n", e->id, e->port_id,
		   e->rx_queue, DROCE_ENGINE_RX_INTR_MISSES, e->idle_sleep_us);
}

void
engine_idle(struct droce_engine *e)
{
	if (e->wait == DROCE_ENGINE_WAIT_POLL) {
		rte_pause();
		return;
	}
	if (e->idle_since == 0) {
		e->idle_since = e->now;
		e->sleep_bound_us = e->idle_sleep_us;	/* a new idle spell */
	}
	if (e->now - e->idle_since >= e->idle_spin_tsc)
		engine_sleep(e);
	else
		sched_yield();	/* the spin leaves the CPU to whoever shares it (an application) */
}

void
engine_wait_thread_init(const struct droce_engine *e)
{
	if (e->wait != DROCE_ENGINE_WAIT_POLL)
		prctl(PR_SET_TIMERSLACK, WAIT_TIMER_SLACK_NS, 0, 0, 0);
}

void
engine_handoffs_wake(struct droce_engine *e)
{
	uint64_t to = e->handoff_to, sleepers = 0;
	struct droce_engine *t;

	e->handoff_to = 0;
	for (; to != 0; to &= to - 1) {
		t = e->dev->engines[__builtin_ctzll(to)];
		if (t != NULL && t->wait != DROCE_ENGINE_WAIT_POLL)
			sleepers |= to & -to;
	}
	if (sleepers == 0)
		return;		/* polling engines find their handoffs in their next pass */
	/* Dekker: the enqueues before the looks at asleep (engine_sleep's fence pairs). */
	atomic_thread_fence(memory_order_seq_cst);
	for (; sleepers != 0; sleepers &= sleepers - 1) {
		t = e->dev->engines[__builtin_ctzll(sleepers)];
		if (atomic_load_explicit(&t->asleep, memory_order_relaxed) != 0)
			droce_engine_wake(t);
	}
}
