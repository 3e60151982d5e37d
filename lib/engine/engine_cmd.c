/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Commands from the control thread: the command ring and the stage that applies it,
 * engine_cmd_run() (queued, or applied in place while the engine naps, under the
 * ownership word), engine_quiesce(), and droced's slow_tx frames sent during a nap.
 */
#include <errno.h>
#include <sched.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_pause.h>

#include "engine_loc.h"

static void
engine_cmd_apply(struct droce_engine *e, struct engine_cmd *c)
{
	int rc = 0;
	uint32_t d;

	switch (c->type) {
	case ENGINE_CMD_QP_MODIFY:
		rc = qp_modify_apply(c->qp, &c->attr, &c->addr);
		break;
	case ENGINE_CMD_QP_DEL:
		qp_list_del(c->qp, QP_ON_ACTIVE | QP_ON_READ | QP_ON_TIMER | QP_ON_ACK | QP_ON_ERR);
		break;
	case ENGINE_CMD_DOMAIN_ADD:
		if (e->nb_doms == RTE_DIM(e->doms)) {
			rc = -ENOSPC;
			break;
		}
		e->doms[e->nb_doms++] = c->dom;
		/* Applied during a sleep (engine_cmd_apply_napping): its clients wake us too. */
		if (atomic_load_explicit(&e->asleep, memory_order_relaxed) != 0)
			__atomic_store_n(&c->dom->db[e->id]->sleeping, 1, __ATOMIC_RELAXED);
		break;
	case ENGINE_CMD_DOMAIN_DEL:
		for (d = 0; d < e->nb_doms; d++) {
			if (e->doms[d] == c->dom) {
				e->doms[d] = e->doms[--e->nb_doms];
				break;
			}
		}
		break;
	case ENGINE_CMD_SYNC:
		break;
	}
	e->st.cmds++;
	c->result = rc;
	atomic_store_explicit(&c->done, 1, memory_order_release);
}

/* Applies the queued commands in order; their callers are not told. */
static unsigned int
engine_cmds_apply_queued(struct droce_engine *e)
{
	void *c;
	unsigned int n = 0;

	while (rte_ring_sc_dequeue(e->cmds, &c) == 0) {
		engine_cmd_apply(e, c);
		n++;
	}
	return n;
}

unsigned int
engine_cmd_stage(struct droce_engine *e)
{
	unsigned int n = engine_cmds_apply_queued(e);

	if (n != 0) {
		uint64_t one = 1;

		/* Wakes a control thread that stopped spinning for its command (engine_cmd_run). */
		if (write(e->cmd_done_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			ENGINE_STAT(e, wake_fail);
	}
	return n;
}

/*
 * One step of the control thread's wait for an engine to end its loop pass: spin for the
 * first ENGINE_CTL_SPIN_US (a pass takes microseconds), then yield the CPU, which the
 * engine may need on a machine shared with it (a usleep would add the timer slack, 50 us
 * by default, to every step). A sleeping engine is never inside a pass.
 */
static void
engine_ctl_wait(uint64_t start)
{
	if (rte_rdtsc() - start < rte_get_tsc_hz() / (1000000 / ENGINE_CTL_SPIN_US))
		rte_pause();
	else
		sched_yield();
}

/* Until the engine applied commands (its cmd_done_fd), 1 ms at most. */
static void
engine_cmd_done_wait(struct droce_engine *e)
{
	struct pollfd pfd = { .fd = e->cmd_done_fd, .events = POLLIN };
	uint64_t n;

	if (poll(&pfd, 1, 1) > 0 && read(e->cmd_done_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		ENGINE_LOG(DEBUG, "engine %u: cmd_done_fd: %s\n", e->id, strerror(errno));
}

void
droce_engine_wake(struct droce_engine *e)
{
	uint64_t one = 1;

	/* Only an engine that may sleep needs it; a full counter wakes it as well. */
	if (e->wait != DROCE_ENGINE_WAIT_POLL && write(e->cmd_wake_fd, &one, sizeof(one)) < 0 &&
	    errno != EAGAIN)
		ENGINE_LOG(DEBUG, "engine %u: wake-up: %s\n", e->id, strerror(errno));
}

/*
 * Applies cmd on the calling (control) thread while the engine naps: the engine cannot
 * leave its nap until the state is handed back (ENGINE_OWN_CTL -> NAP), and the
 * acquire/release pair orders everything either side wrote. Waking the engine for a
 * command and waiting for its answer costs two thread wake-ups, tens of microseconds each
 * on a VM, and a connection's set-up is several commands per side. Commands still queued
 * go first, in order. The engine is woken afterwards only when the command gave it work
 * its lists hold (a QP to RTS with WQEs posted); a timer armed meanwhile fires at the end
 * of the nap, as timers always do on a napping engine. Returns false if the engine is not
 * napping (the command must be queued).
 */
static bool
engine_cmd_apply_napping(struct droce_engine *e, struct engine_cmd *cmd)
{
	uint32_t nap = ENGINE_OWN_NAP;
	bool work;

	if (!atomic_compare_exchange_strong_explicit(&e->own, &nap, ENGINE_OWN_CTL,
						     memory_order_acquire, memory_order_relaxed))
		return false;
	e->now = rte_rdtsc();
	engine_cmds_apply_queued(e);
	engine_cmd_apply(e, cmd);
	work = !TAILQ_EMPTY(&e->active) || !TAILQ_EMPTY(&e->reads) ||
	       !TAILQ_EMPTY(&e->acks) || !rte_ring_empty(e->handoff);
	atomic_store_explicit(&e->own, ENGINE_OWN_NAP, memory_order_release);
	e->st.cmds_in_nap++;
	if (work)
		droce_engine_wake(e);
	return true;
}

int
engine_cmd_run(struct droce_engine *e, struct engine_cmd *cmd)
{
	uint64_t start;

	atomic_store_explicit(&cmd->done, 0, memory_order_relaxed);
	if (!atomic_load_explicit(&e->running, memory_order_acquire)) {
		/* No thread runs the engine: apply here, nothing can race with it. */
		engine_cmd_apply(e, cmd);
		return cmd->result;
	}
	if (engine_cmd_apply_napping(e, cmd))
		return cmd->result;
	/* A full ring (ENGINE_CMD_RING commands): the engine takes them pass by pass. */
	while (rte_ring_mp_enqueue(e->cmds, cmd) != 0) {
		droce_engine_wake(e);
		engine_cmd_done_wait(e);
	}
	droce_engine_wake(e);	/* ends its sleep (engine_wait.c) */
	start = rte_rdtsc();
	while (!atomic_load_explicit(&cmd->done, memory_order_acquire)) {
		if (!atomic_load_explicit(&e->running, memory_order_acquire)) {
			/* The engine stopped with our command queued: run what is left here. */
			engine_cmd_stage(e);
			continue;
		}
		if (rte_rdtsc() - start < rte_get_tsc_hz() / (1000000 / ENGINE_CTL_SPIN_US)) {
			rte_pause();
		} else {
			/*
			 * Then sleep until the engine says it applied commands (a short sleep
			 * costs a VM 50 us or more each time; a wake-up comes when the work is
			 * done). 1 ms at most: the engine may stop meanwhile (see above).
			 */
			engine_cmd_done_wait(e);
		}
	}
	return cmd->result;
}

void
engine_quiesce(struct droce_engine_dev *dev)
{
	uint64_t seen[DROCE_ENGINE_MAX], start;
	uint32_t i;

	/*
	 * Orders the caller's unpublishing store before the epoch loads (store-load): an
	 * engine that starts a pass after we read its epoch sees the entry gone.
	 */
	atomic_thread_fence(memory_order_seq_cst);

	for (i = 0; i < DROCE_ENGINE_MAX; i++) {
		struct droce_engine *e = dev->engines[i];

		seen[i] = e == NULL ? 0 : atomic_load_explicit(&e->epoch, memory_order_acquire);
	}
	for (i = 0; i < DROCE_ENGINE_MAX; i++) {
		struct droce_engine *e = dev->engines[i];

		if (e == NULL || !(seen[i] & 1))
			continue;
		/* Inside a pass when we looked: wait until that pass ends. */
		start = rte_rdtsc();
		while (atomic_load_explicit(&e->epoch, memory_order_acquire) == seen[i] &&
		       atomic_load_explicit(&e->running, memory_order_acquire))
			engine_ctl_wait(start);
	}
}

void
droce_engine_dev_port_pause(struct droce_engine_dev *dev, uint16_t port_id, bool pause)
{
	uint32_t i;

	for (i = 0; i < DROCE_ENGINE_MAX; i++) {
		struct droce_engine *e = dev->engines[i];

		if (e != NULL && e->port_id == port_id)
			atomic_store_explicit(&e->port_paused, pause, memory_order_relaxed);
	}
	/* A pass that began before the store may still be in a burst: wait it out. */
	if (pause)
		engine_quiesce(dev);
}

/*
 * A napping engine's port queue is free while the control thread holds the engine: CM
 * MADs and ARP go out without a wake-up of the engine (a few per connection), as
 * commands are applied (engine_cmd_apply_napping).
 */
void
droce_engine_slow_tx_push(struct droce_engine *e)
{
	uint32_t nap = ENGINE_OWN_NAP;
	unsigned int n;
	bool left;

	if (e->wait == DROCE_ENGINE_WAIT_POLL)
		return;		/* a polling engine finds them in its next pass */
	if (!atomic_compare_exchange_strong_explicit(&e->own, &nap, ENGINE_OWN_CTL,
						     memory_order_acquire, memory_order_relaxed)) {
		droce_engine_wake(e);
		return;
	}
	n = engine_tx_slow(e);
	engine_tx_flush(e);
	e->st.slow_tx_in_nap += n;
	left = e->nb_tx != 0 || !rte_ring_empty(e->slow_tx);
	atomic_store_explicit(&e->own, ENGINE_OWN_NAP, memory_order_release);
	if (left)
		droce_engine_wake(e);	/* the port was full: the engine retries */
}
