/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine loop: one pass is a fixed sequence of stages over bursts
 *   commands -> rx (parse, steer, responder / completer) -> coalesced ACKs -> doorbells
 *   -> slow tx -> READ responses -> requester -> timers -> errors -> tx flush
 * run on the engine's lcore, which owns every QP of the engine (no locks). This file is
 * that sequence and the run loop only (an idle engine waits in engine_wait.c); each stage lives in its own file and
 * calls only downwards (layers.txt, checked by devtools/layer-check.py).
 */
#include <rte_cycles.h>

#include "engine_loc.h"

unsigned int
droce_engine_poll(struct droce_engine *e)
{
	unsigned int work;

	/* seq_cst: the epoch is published before this pass reads any table (engine_quiesce). */
	atomic_fetch_add_explicit(&e->epoch, 1, memory_order_seq_cst);
	/*
	 * A CQ's ring moving: this pass ends before it starts, and the next waits. The load
	 * after the epoch's seq_cst increment pairs with the freeze store before
	 * engine_quiesce's loads: either the control thread waits for this pass, or this
	 * pass sees the freeze.
	 */
	if (unlikely(atomic_load_explicit(&e->dev->freeze, memory_order_seq_cst))) {
		atomic_store_explicit(&e->epoch,
				      atomic_load_explicit(&e->epoch, memory_order_relaxed) + 1,
				      memory_order_release);
		while (atomic_load_explicit(&e->dev->freeze, memory_order_acquire) &&
		       !atomic_load_explicit(&e->stop, memory_order_acquire))
			rte_pause();
		return 1;	/* not idle: the pass that waited is run next */
	}
	e->now = rte_rdtsc();
	work = engine_cmd_stage(e);			/* engine_cmd.c */
	work += rx_stage(e);				/* engine_rx.c */
	resp_stage_acks(e);				/* engine_resp_tx.c */
	work += req_stage_doorbells(e);			/* engine_req.c */
	/* Before the requester, which could fill the tx buffer pass after pass: ARP first. */
	work += engine_tx_slow(e);			/* engine_tx.c */
	/* READ and atomic responses answer requests older than anything sent now. */
	work += read_resp_stage(e);			/* engine_resp_tx.c */
	work += req_stage_send(e);			/* engine_req.c */
	req_stage_timers(e);				/* engine_req.c */
	qp_stage_errors(e);				/* engine_qp.c */
	/*
	 * Packets sent are work; packets the port keeps refusing (a link down) are not, or an
	 * engine that may sleep would spin on them: it sleeps and retries (engine_wait.c).
	 */
	work += engine_tx_flush(e);			/* engine_tx.c */
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

int
droce_engine_run(void *arg)
{
	struct droce_engine *e = arg;

	engine_wait_thread_init(e);
	atomic_store_explicit(&e->running, 1, memory_order_release);
	while (!atomic_load_explicit(&e->stop, memory_order_acquire)) {
		if (droce_engine_poll(e) != 0) {
			e->idle_since = 0;
			continue;
		}
		engine_idle(e);				/* engine_wait.c */
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
