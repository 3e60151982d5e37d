/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine loop: one pass is a fixed sequence of named stages over bursts
 *   commands -> rx burst -> parse -> steer -> responder / completer -> coalesced ACKs
 *   -> doorbells -> requester -> timers -> tx flush
 * run on the engine's lcore, which owns every QP of the engine (no locks).
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_pause.h>

#include <droce_wire_mbuf.h>

#include "engine_loc.h"

RTE_LOG_REGISTER(droce_engine_logtype, droce.engine, NOTICE);

const char *const droce_engine_counter_names[] = {
#define COUNTER_NAME(name, desc) #name,
	DROCE_ENGINE_COUNTERS(COUNTER_NAME)
#undef COUNTER_NAME
};

const char *const droce_engine_counter_descs[] = {
#define COUNTER_DESC(name, desc) desc,
	DROCE_ENGINE_COUNTERS(COUNTER_DESC)
#undef COUNTER_DESC
};

/* ---- Timers ---- */

uint64_t
engine_ack_timeout_tsc(const struct droce_engine *e, unsigned int timeout)
{
	if (timeout == 0)
		return 0;
	/* 4.096 us * 2^timeout = 4096 ns << timeout */
	return (uint64_t)((double)e->tsc_hz * 4096e-9 * (double)(1ull << timeout));
}

/* IB spec table 45 (RNR NAK timer field encoding), in units of 10 us. */
static const uint32_t rnr_timer_10us[32] = {
	65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768,
	1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
};

uint64_t
engine_rnr_timer_tsc(const struct droce_engine *e, unsigned int code)
{
	return e->tsc_hz / 100000 * rnr_timer_10us[code & 31];
}

/* ---- Transmit ---- */

void
engine_tx(struct droce_engine *e, struct rte_mbuf *m)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);

	/*
	 * A packet to our own MAC (the destination GID is one of the port's: loopback, as RoCE
	 * NICs and rxe do) would not come back from the wire: deliver it here, through our own
	 * handoff ring, so it is received in a later pass like any other packet.
	 */
	if (rte_is_same_ether_addr(&eth->dst_addr, (const struct rte_ether_addr *)e->mac)) {
		if (rte_ring_mp_enqueue(e->handoff, m) != 0) {
			ENGINE_STAT(e, tx_drop);
			rte_pktmbuf_free(m);
			return;
		}
		ENGINE_STAT(e, tx_loopback);
		return;
	}
	if (e->nb_tx == ENGINE_TX_MAX) {
		ENGINE_STAT(e, tx_drop);
		rte_pktmbuf_free(m);
		return;
	}
	e->tx[e->nb_tx++] = m;
}

void
engine_tx_flush(struct droce_engine *e)
{
	uint16_t sent;

	if (e->nb_tx == 0)
		return;
	sent = rte_eth_tx_burst(e->port_id, e->tx_queue, e->tx, e->nb_tx);
	e->st.tx_pkts += sent;
	/* Keep what the port refused for the next pass: RoCE tolerates delay better than loss. */
	if (sent > 0 && sent < e->nb_tx)
		memmove(e->tx, e->tx + sent, (e->nb_tx - sent) * sizeof(e->tx[0]));
	e->nb_tx -= sent;
}

uint8_t *
engine_pkt_start(struct droce_engine *e, const struct droce_wire_tmpl *tmpl,
		 const struct droce_wire_hdrs *h, uint32_t payload_len, struct rte_mbuf **mp)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(e->mp);
	uint32_t total, cap;
	uint8_t *p;
	int hlen;

	*mp = NULL;
	if (m == NULL) {
		ENGINE_STAT(e, tx_nombuf);
		return NULL;
	}
	p = rte_pktmbuf_mtod(m, uint8_t *);
	cap = rte_pktmbuf_tailroom(m);
	hlen = droce_wire_build_hdrs(tmpl, h, payload_len, p, cap);
	total = (uint32_t)hlen + payload_len + droce_wire_pad(payload_len) + DROCE_ICRC_LEN;
	if (hlen < 0 || total > cap) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	m->data_len = (uint16_t)total;
	m->pkt_len = total;
	*mp = m;
	return p + hlen;
}

void
engine_pkt_finish(struct droce_engine *e, const struct droce_wire_tmpl *tmpl,
		  struct rte_mbuf *m)
{
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
	/* The trailer is BTH.PadCnt pad bytes and the ICRC. */
	uint32_t trailer = droce_bth_pad((const struct droce_bth *)(p + tmpl->len)) +
			   DROCE_ICRC_LEN;
	struct droce_wire_seg seg = { .data = p, .len = m->data_len - trailer };

	droce_wire_build_trailer(tmpl, &seg, 1, p + seg.len);
	engine_tx(e, m);
}

/* ---- Receive: parse, steer, dispatch ---- */

static void
engine_dispatch(struct droce_engine *e, struct rte_mbuf *m)
{
	struct droce_wire_seg segs[8];
	struct droce_wire_pkt pkt;
	enum droce_wire_result r;
	unsigned int nseg = droce_wire_mbuf_segs(m, segs, RTE_DIM(segs));
	struct droce_qp *qp;
	uint32_t flags, dqpn;

	if (nseg == 0) {
		ENGINE_STAT(e, rx_malformed);
		goto drop;
	}
	r = droce_wire_parse(segs, nseg, e->parse_flags, &pkt);
	if (r != DROCE_WIRE_OK) {
		if (droce_wire_result_is_foreign(r)) {
			ENGINE_STAT(e, rx_foreign);
			if (e->slow_rx != NULL) {
				if (rte_ring_mp_enqueue(e->slow_rx, m) == 0) {
					ENGINE_STAT(e, rx_slow);
					return;
				}
				ENGINE_STAT(e, rx_slow_drop);
			}
		} else {
			ENGINE_STAT(e, rx_malformed);
			ENGINE_LOG(DEBUG, "engine %u: dropped: %s (%u segments, %u bytes)\n",
				   e->id, droce_wire_result_name(r), nseg, m->pkt_len);
		}
		goto drop;
	}
	flags = pkt.info->flags;
	if (flags & DROCE_OPF_CNP) {
		ENGINE_STAT(e, rx_cnp);
		goto drop;
	}
	dqpn = droce_bth_dqpn(droce_pkt_bth(&pkt));
	/* QP1 is the GSI: its MADs (connection management) are the control thread's. */
	if (dqpn == DROCE_ENGINE_GSI_QPN && e->slow_rx != NULL) {
		if (rte_ring_mp_enqueue(e->slow_rx, m) == 0) {
			ENGINE_STAT(e, rx_gsi);
			e->slow_rx_wake = true;
			return;
		}
		ENGINE_STAT(e, rx_slow_drop);
		goto drop;
	}
	qp = dev_qp(e->dev, dqpn);
	if (qp == NULL) {
		ENGINE_STAT(e, rx_no_qp);
		goto drop;
	}
	if (qp->engine != e) {
		/* Steering: the owner handles every packet of its QPs. */
		if (rte_ring_mp_enqueue(qp->engine->handoff, m) != 0) {
			ENGINE_STAT(e, rx_handoff_drop);
			goto drop;
		}
		ENGINE_STAT(e, rx_handoff_out);
		return;
	}
	if (pkt.info->transport != (qp->type == DROCE_SHM_QPT_RC ? DROCE_TRANSPORT_RC :
				    qp->type == DROCE_SHM_QPT_UC ? DROCE_TRANSPORT_UC :
				    DROCE_TRANSPORT_UD)) {
		ENGINE_STAT(e, rx_bad_opcode);
		goto drop;
	}
	if (flags & DROCE_OPF_REQUEST)
		resp_rx(qp, &pkt, segs, nseg);
	else
		comp_rx(qp, &pkt, segs, nseg);
drop:
	rte_pktmbuf_free(m);
}

static unsigned int
engine_stage_rx(struct droce_engine *e)
{
	struct rte_mbuf *pkts[ENGINE_BURST];
	unsigned int n, h, i;

	n = rte_eth_rx_burst(e->port_id, e->rx_queue, pkts, ENGINE_BURST);
	e->st.rx_pkts += n;
	for (i = 0; i < n; i++) {
		if (i + 1 < n)
			rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void *));
		engine_dispatch(e, pkts[i]);
	}
	h = rte_ring_sc_dequeue_burst(e->handoff, (void **)pkts, ENGINE_BURST, NULL);
	e->st.rx_handoff_in += h;
	for (i = 0; i < h; i++)
		engine_dispatch(e, pkts[i]);
	if (e->slow_rx_wake) {
		uint64_t one = 1;

		e->slow_rx_wake = false;
		/* Best effort: a full counter already means "wake up". */
		if (e->slow_rx_wake_fd >= 0 && write(e->slow_rx_wake_fd, &one, sizeof(one)) < 0)
			ENGINE_STAT(e, wake_fail);
	}
	return n + h;
}

/* One ACK per QP per burst, for the newest PSN: ACKs are cumulative (IB 9.7.5.1.4). */
static void
engine_stage_acks(struct droce_engine *e)
{
	struct droce_qp *qp;

	while ((qp = TAILQ_FIRST(&e->acks)) != NULL) {
		qp_list_del(qp, QP_ON_ACK);
		resp_send_ack(qp);
	}
}

/* ---- Doorbells ---- */

static unsigned int
engine_stage_doorbells(struct droce_engine *e)
{
	unsigned int work = 0;
	uint32_t d;

	for (d = 0; d < e->nb_doms; d++) {
		struct droce_domain *dom = e->doms[d];
		struct droce_shm_doorbell *db = dom->db[e->id];
		uint64_t summary;

		if (__atomic_load_n(&db->summary, __ATOMIC_RELAXED) == 0)
			continue;
		summary = __atomic_exchange_n(&db->summary, 0, __ATOMIC_ACQUIRE);
		while (summary != 0) {
			unsigned int w = __builtin_ctzll(summary);
			uint64_t bits;

			summary &= summary - 1;
			if (w >= DROCE_SHM_DB_WORDS)
				break;
			bits = __atomic_exchange_n(&db->words[w], 0, __ATOMIC_ACQUIRE);
			while (bits != 0) {
				unsigned int slot = w * 64 + __builtin_ctzll(bits);
				struct droce_qp *qp = __atomic_load_n(&dom->db_qp[e->id][slot],
								      __ATOMIC_ACQUIRE);

				bits &= bits - 1;
				/* A bit for an empty slot is the application's business: ignore it. */
				if (qp != NULL && qp->engine == e) {
					req_doorbell(qp);
					work++;
				}
			}
		}
	}
	return work;
}

/* ---- Requester: round-robin over QPs with packets to send ---- */

static unsigned int
engine_stage_requester(struct droce_engine *e)
{
	struct engine_qp_list_head turn = TAILQ_HEAD_INITIALIZER(turn);
	unsigned int sent = 0;
	struct droce_qp *qp;

	/*
	 * Each QP on the list now gets one quantum: the list is taken whole, and a QP with
	 * more to send puts itself back on e->active for the next pass. QPs waiting in turn
	 * keep QP_ON_ACTIVE, so nothing adds them twice.
	 */
	TAILQ_CONCAT(&turn, &e->active, active_link);
	while ((qp = TAILQ_FIRST(&turn)) != NULL) {
		unsigned int room = engine_tx_room(e);

		if (room == 0) {
			/* No room: the rest keep their place, ahead of any re-added QP. */
			TAILQ_CONCAT(&turn, &e->active, active_link);
			TAILQ_CONCAT(&e->active, &turn, active_link);
			break;
		}
		TAILQ_REMOVE(&turn, qp, active_link);
		qp->lists &= ~QP_ON_ACTIVE;
		sent += req_send(qp, RTE_MIN(room, (unsigned int)ENGINE_REQ_QUANTUM));
	}
	return sent;
}

/* ---- Timers: scanned only when the earliest deadline may have passed ---- */

static void
engine_stage_timers(struct droce_engine *e)
{
	struct droce_qp *qp, *tmp;
	uint64_t next = UINT64_MAX;

	if (e->now < e->timer_next)
		return;
	for (qp = TAILQ_FIRST(&e->timers); qp != NULL; qp = tmp) {
		tmp = TAILQ_NEXT(qp, timer_link);
		req_timer(qp, e->now);
		if (!(qp->lists & QP_ON_TIMER))
			continue;
		if (qp->req.ack_deadline != 0 && qp->req.ack_deadline < next)
			next = qp->req.ack_deadline;
		if (qp->req.rnr_wait && qp->req.rnr_deadline < next)
			next = qp->req.rnr_deadline;
	}
	e->timer_next = next;
}

/* QPs in ERR: anything posted since is flushed at once (11.6.3: WRs posted in ERR). */
static void
engine_stage_errors(struct droce_engine *e)
{
	struct droce_qp *qp;

	TAILQ_FOREACH(qp, &e->errs, err_link)
		qp_flush(qp);
}

/* ---- Commands from the control thread ---- */

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
		qp_list_del(c->qp, QP_ON_ACTIVE | QP_ON_TIMER | QP_ON_ACK | QP_ON_ERR);
		break;
	case ENGINE_CMD_DOMAIN_ADD:
		if (e->nb_doms == RTE_DIM(e->doms))
			rc = -ENOSPC;
		else
			e->doms[e->nb_doms++] = c->dom;
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

static unsigned int
engine_stage_cmds(struct droce_engine *e)
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
 * One step of the control thread's wait for an engine: spin for the first
 * ENGINE_CTL_SPIN_US (a command takes an engine one loop pass, a few microseconds; a sleep
 * costs the timer slack, 50 us by default, every time), then sleep.
 */
static void
engine_ctl_wait(uint64_t start)
{
	if (rte_rdtsc() - start < rte_get_tsc_hz() / (1000000 / ENGINE_CTL_SPIN_US))
		rte_pause();
	else
		usleep(1);
}

void
droce_engine_wake(struct droce_engine *e)
{
	uint64_t one = 1;

	/* Only a napping engine needs it; a full counter wakes it as well. */
	if (e->idle_sleep_us != 0 && write(e->cmd_wake_fd, &one, sizeof(one)) < 0 &&
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
	work = !TAILQ_EMPTY(&e->active) || !TAILQ_EMPTY(&e->acks);
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
	while (rte_ring_mp_enqueue(e->cmds, cmd) != 0)
		usleep(10);
	droce_engine_wake(e);	/* ends its idle nap (engine_idle_sleep) */
	start = rte_rdtsc();
	while (!atomic_load_explicit(&cmd->done, memory_order_acquire)) {
		if (!atomic_load_explicit(&e->running, memory_order_acquire)) {
			/* The engine stopped with our command queued: run what is left here. */
			engine_stage_cmds(e);
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
			struct pollfd pfd = { .fd = e->cmd_done_fd, .events = POLLIN };
			uint64_t n;

			if (poll(&pfd, 1, 1) > 0 && read(e->cmd_done_fd, &n, sizeof(n)) < 0 &&
			    errno != EAGAIN)
				break;
		}
	}
	return cmd->result;
}

void
engine_quiesce(struct droce_dev *dev)
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

/* ---- The loop ---- */

/* Frames from the control thread (ARP, ICMP replies): sent as they are. */
static unsigned int
engine_stage_slow_tx(struct droce_engine *e)
{
	struct rte_mbuf *pkts[ENGINE_BURST];
	unsigned int n, i, room;

	if (e->slow_tx == NULL)
		return 0;
	room = engine_tx_room(e);
	if (room == 0)
		return 0;
	n = rte_ring_sc_dequeue_burst(e->slow_tx, (void **)pkts,
				      RTE_MIN(room, (unsigned int)ENGINE_BURST), NULL);
	for (i = 0; i < n; i++)
		e->tx[e->nb_tx++] = pkts[i];
	e->st.tx_slow += n;
	return n;
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

	if (e->idle_sleep_us == 0)
		return;		/* a polling engine finds them in its next pass */
	if (!atomic_compare_exchange_strong_explicit(&e->own, &nap, ENGINE_OWN_CTL,
						     memory_order_acquire, memory_order_relaxed)) {
		droce_engine_wake(e);
		return;
	}
	n = engine_stage_slow_tx(e);
	engine_tx_flush(e);
	e->st.slow_tx_in_nap += n;
	left = e->nb_tx != 0 || !rte_ring_empty(e->slow_tx);
	atomic_store_explicit(&e->own, ENGINE_OWN_NAP, memory_order_release);
	if (left)
		droce_engine_wake(e);	/* the port was full: the engine retries */
}

unsigned int
droce_engine_poll(struct droce_engine *e)
{
	unsigned int work;

	/* seq_cst: the epoch is published before this pass reads any table (engine_quiesce). */
	atomic_fetch_add_explicit(&e->epoch, 1, memory_order_seq_cst);
	e->now = rte_rdtsc();
	work = engine_stage_cmds(e);
	work += engine_stage_rx(e);
	engine_stage_acks(e);
	work += engine_stage_doorbells(e);
	/* Before the requester, which could fill the tx buffer pass after pass: ARP first. */
	work += engine_stage_slow_tx(e);
	work += engine_stage_requester(e);
	engine_stage_timers(e);
	engine_stage_errors(e);
	engine_tx_flush(e);
	work += e->nb_tx;
	e->st.loops++;
	if (work != 0)
		e->st.busy_loops++;
	atomic_fetch_add_explicit(&e->epoch, 1, memory_order_release);
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

void
droce_engine_stats_get(const struct droce_engine *e, struct droce_engine_stats *st)
{
	const volatile uint64_t *src = (const volatile uint64_t *)&e->st;
	uint64_t *dst = (uint64_t *)st;
	size_t i;

	for (i = 0; i < DROCE_ENGINE_NB_COUNTERS; i++)
		dst[i] = src[i];
}

void
droce_engine_stats_print(FILE *f, const struct droce_engine *e)
{
	struct droce_engine_stats st;
	size_t i;

	droce_engine_stats_get(e, &st);
	for (i = 0; i < DROCE_ENGINE_NB_COUNTERS; i++) {
		uint64_t v = ((const uint64_t *)&st)[i];

		if (v != 0)
			fprintf(f, " %s=%" PRIu64, droce_engine_counter_names[i], v);
	}
}

/* ---- Create / destroy ---- */

struct droce_engine *
droce_engine_create(struct droce_dev *dev, uint32_t id, const struct droce_engine_conf *conf)
{
	char name[RTE_RING_NAMESIZE];
	struct droce_engine *e;

	if (id >= DROCE_ENGINE_MAX || dev->engines[id] != NULL || conf->mp == NULL ||
	    conf->nb_gids > DROCE_ENGINE_MAX_GIDS || !rte_eth_dev_is_valid_port(conf->port_id)) {
		rte_errno = EINVAL;
		return NULL;
	}
	e = rte_zmalloc("droce_engine", sizeof(*e), RTE_CACHE_LINE_SIZE);
	if (e == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	e->dev = dev;
	e->id = id;
	e->port_id = conf->port_id;
	e->rx_queue = conf->rx_queue;
	e->tx_queue = conf->tx_queue;
	e->mp = conf->mp;
	memcpy(e->mac, conf->mac, sizeof(e->mac));
	memcpy(e->gids, conf->gids, sizeof(e->gids));
	e->nb_gids = conf->nb_gids;
	e->idle_sleep_us = conf->idle_sleep_us;
	e->parse_flags = conf->rx_no_icrc ? DROCE_WIRE_PARSE_NO_ICRC : 0;
	e->slow_rx = conf->slow_rx;
	e->slow_rx_wake_fd = conf->slow_rx_wake_fd;
	e->slow_tx = conf->slow_tx;
	e->tsc_hz = rte_get_tsc_hz();
	e->idle_nap_tsc = e->tsc_hz / 1000000 * ENGINE_IDLE_NAP_US;
	e->timer_next = UINT64_MAX;
	TAILQ_INIT(&e->active);
	TAILQ_INIT(&e->timers);
	TAILQ_INIT(&e->acks);
	TAILQ_INIT(&e->errs);
	snprintf(name, sizeof(name), "droce_cmd_%p", (void *)e);
	e->cmds = rte_ring_create(name, ENGINE_CMD_RING, SOCKET_ID_ANY, RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "droce_hoff_%p", (void *)e);
	e->handoff = rte_ring_create(name, ENGINE_HANDOFF_RING, SOCKET_ID_ANY, RING_F_SC_DEQ);
	/* Non-blocking: a command's write never waits, the idle engine's read never blocks. */
	e->cmd_wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	e->cmd_done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (e->cmds == NULL || e->handoff == NULL || e->cmd_wake_fd < 0 || e->cmd_done_fd < 0) {
		rte_ring_free(e->cmds);
		rte_ring_free(e->handoff);
		if (e->cmd_wake_fd >= 0)
			close(e->cmd_wake_fd);
		if (e->cmd_done_fd >= 0)
			close(e->cmd_done_fd);
		rte_free(e);
		rte_errno = ENOMEM;
		return NULL;
	}
	dev->engines[id] = e;
	return e;
}

void
droce_engine_destroy(struct droce_engine *e)
{
	void *m;

	if (e == NULL)
		return;
	engine_tx_flush(e);
	rte_pktmbuf_free_bulk(e->tx, e->nb_tx);
	while (rte_ring_sc_dequeue(e->handoff, &m) == 0)
		rte_pktmbuf_free(m);
	rte_ring_free(e->handoff);
	rte_ring_free(e->cmds);
	close(e->cmd_wake_fd);
	close(e->cmd_done_fd);
	e->dev->engines[e->id] = NULL;
	rte_free(e);
}
