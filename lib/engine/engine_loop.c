/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine loop: one pass is a fixed sequence of stages over bursts
 *   commands -> rx (parse, steer, responder / completer) -> coalesced ACKs -> doorbells
 *   -> slow tx -> READ responses -> requester -> timers -> errors -> tx flush
 * run on the engine's lcore, which owns every QP of the engine (no locks). This file is
 * that sequence, the idle nap and the run loop only; each stage lives in its own file and
 * calls only downwards (devtools/engine-calls.py checks it).
 */
#include <poll.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_pause.h>

#include "engine_loc.h"

unsigned int
droce_engine_poll(struct droce_engine *e)
{
	unsigned int work;

	/* seq_cst: the epoch is published before this pass reads any table (engine_quiesce). */
	atomic_fetch_add_explicit(&e->epoch, 1, memory_order_seq_cst);
	e->now = rte_rdtsc();
	work = engine_cmd_stage(e);			/* engine_cmd.c */
	work += rx_stage(e);				/* engine_rx.c */
	resp_stage_acks(e);				/* engine_resp.c */
	work += req_stage_doorbells(e);			/* engine_req.c */
	/* Before the requester, which could fill the tx buffer pass after pass: ARP first. */
	work += engine_tx_slow(e);			/* engine_tx.c */
	/* READ and atomic responses answer requests older than anything sent now. */
	work += read_resp_stage(e);			/* engine_read_resp.c */
	work += req_stage_send(e);			/* engine_req.c */
	req_stage_timers(e);				/* engine_req.c */
	qp_stage_errors(e);				/* engine_qp.c */
	engine_tx_flush(e);				/* engine_tx.c */
	work += e->nb_tx;
	e->st.loops++;
	if (work != 0)
		e->st.busy_loops++;
	/*
	 * The pass's end: a release store, not a locked add, as this thread is the epoch's only
	 * writer; only the start needs the full fence (seq_cst, above).
	 */
	atomic_store_explicit(&e->epoch, atomic_load_explicit(&e->epoch, memory_order_relaxed) + 1,
			      memory_order_release);
	return work;
}

/*
 * An engine idle for ENGINE_IDLE_NAP_US naps idle_sleep_us. A command that finds it
 * napping is applied by the control thread itself (engine_cmd_apply_napping); one queued
 * while it ran, or a frame queued on slow_tx, ends the nap: engine_cmd_run() and droced
 * write the eventfd after each enqueue (droce_engine_wake()), and its count stays set until
 * read here, so work queued just before the nap ends it at once.
 */
static void
engine_idle_sleep(struct droce_engine *e)
{
	struct pollfd pfd = { .fd = e->cmd_wake_fd, .events = POLLIN };
	struct timespec ts = {
		.tv_sec = e->idle_sleep_us / 1000000,
		.tv_nsec = (long)(e->idle_sleep_us % 1000000) * 1000,
	};
	uint64_t n;
	uint32_t nap;

	atomic_store_explicit(&e->own, ENGINE_OWN_NAP, memory_order_release);
	if (ppoll(&pfd, 1, &ts, NULL) > 0 && read(e->cmd_wake_fd, &n, sizeof(n)) > 0)
		ENGINE_STAT(e, cmd_wakeups);
	/* Back to work, once a command being applied meanwhile is done. */
	for (;;) {
		nap = ENGINE_OWN_NAP;
		if (atomic_compare_exchange_weak_explicit(&e->own, &nap, ENGINE_OWN_RUN,
							  memory_order_acquire,
							  memory_order_relaxed))
			break;
		rte_pause();
	}
}

int
droce_engine_run(void *arg)
{
	struct droce_engine *e = arg;

	atomic_store_explicit(&e->running, 1, memory_order_release);
	while (!atomic_load_explicit(&e->stop, memory_order_acquire)) {
		if (droce_engine_poll(e) != 0) {
			e->idle_since = 0;
			continue;
		}
		if (e->idle_since == 0)
			e->idle_since = e->now;
		if (e->idle_sleep_us != 0 && e->now - e->idle_since >= e->idle_nap_tsc)
			engine_idle_sleep(e);
		else
			rte_pause();
	}
	atomic_store_explicit(&e->running, 0, memory_order_release);
	/* Commands that raced with the stop are applied by their caller (engine_cmd_run). */
	return 0;
}

void
droce_engine_stop(struct droce_engine *e)
{
	atomic_store_explicit(&e->stop, 1, memory_order_release);
	droce_engine_wake(e);	/* a long nap would delay the stop */
}
