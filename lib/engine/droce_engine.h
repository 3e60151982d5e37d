/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef DROCE_ENGINE_H
#define DROCE_ENGINE_H

/*
 * The RoCEv2 transport: one run-to-completion engine per lcore (doc/engine.md).
 *
 * A device (struct droce_engine_dev) groups the engines of one process and their flat QPN table.
 * A domain is one client: its shared-memory region, memory regions (keys), address handles
 * and asynchronous events. The control path (droced's control thread, or a test) creates
 * objects with the functions below; those that change an engine's state are carried to the
 * owning engine over its command ring and waited for, so engines never take a lock.
 *
 * Everything here is called from the control thread unless it says otherwise.
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <rte_mempool.h>

#include <droce_cc.h>
#include <droce_shm.h>
#include <droce_shm_arena.h>
#include <droce_shm_qp_attr.h>
#include <droce_wire.h>

#define DROCE_ENGINE_MAX	DROCE_SHM_MAX_ENGINES
#define DROCE_ENGINE_MAX_GIDS	16
/* QP1, the GSI (IB 13.5): never an engine QP; its packets go to the control thread. */
#define DROCE_ENGINE_GSI_QPN	1
/*
 * The largest max_dest_rd_atomic a modify accepts: the READs and atomics a responder keeps
 * for replay (ibv_device_attr.max_qp_rd_atom).
 */
#define DROCE_ENGINE_MAX_DEST_RD_ATOMIC	16
/* UD multicast: groups per device, QPs per group (ibv_device_attr's max_mcast_*). */
#define DROCE_ENGINE_MAX_MCAST_GRPS	256
#define DROCE_ENGINE_MAX_MCAST_QPS	64
/* The BTH DestQP of a packet to a multicast group (IB 9.6.1.2). */
#define DROCE_ENGINE_MCAST_QPN		0xFFFFFF
/* XRC SRQs per device (their numbers are 1..DROCE_ENGINE_MAX_XSRQS - 1). */
#define DROCE_ENGINE_MAX_XSRQS	(1u << 16)
/*
 * The largest max_rd_atomic: READs and atomics a requester keeps out at once
 * (max_qp_init_rd_atom). It costs nothing (the send queue holds them), and it is Linux
 * soft-RoCE's: perftest before 4.5-0.20 sets max_rd_atomic to the peer's
 * max_qp_rd_atom, 128 when the peer is rxe (doc/interop.md).
 */
#define DROCE_ENGINE_MAX_INIT_RD_ATOMIC	128

struct droce_engine_dev;
struct droce_engine;
struct droce_engine_domain;
struct droce_engine_qp;
struct droce_engine_cq;
struct droce_engine_srq;

/* ---- Device and engines ---- */

struct droce_engine_dev_conf {
	uint32_t max_qps;	/* QPN table size, a power of two; QPNs are 2..max_qps-1 */
};

struct droce_engine_dev *droce_engine_dev_create(const struct droce_engine_dev_conf *conf);
/* Engines must be stopped and every domain destroyed first. */
void droce_engine_dev_destroy(struct droce_engine_dev *dev);

/*
 * Objects that exist in the engines of dev right now, counted where they are created and
 * freed (not where a caller keeps its tables): what a control path leaked shows here.
 */
struct droce_engine_dev_objects {
	uint32_t domains;
	uint32_t qps;
	uint32_t cqs;
	uint32_t srqs;
	uint32_t mrs;
	uint32_t mws;
	uint32_t ahs;
	uint32_t mcast_groups;		/* multicast groups with a QP attached */
	uint32_t mcast_attached;	/* QP attachments over all groups */
	uint32_t neighbours;		/* static neighbours (droce_engine_dev_neigh_add) */
};

/*
 * Stops (pause true) or lets again (false) every engine of dev on port_id touch the
 * port's queues. On return from a pause no engine is inside a burst on them: the caller
 * may stop and start the port. What the engines would send meanwhile is freed (the link
 * is down; RoCE's retransmission covers it). Control thread.
 */
void droce_engine_dev_port_pause(struct droce_engine_dev *dev, uint16_t port_id, bool pause);

/* What exists now: the control thread's view (it makes and frees every object). */
void droce_engine_dev_objects_get(const struct droce_engine_dev *dev, struct droce_engine_dev_objects *o);

/* A static neighbour: which MAC a GID is reached at (ARP comes with droced). */
int droce_engine_dev_neigh_add(struct droce_engine_dev *dev, const uint8_t gid[16], const uint8_t mac[6]);

enum droce_engine_wait {
	DROCE_ENGINE_WAIT_POLL,		/* never sleeps */
	DROCE_ENGINE_WAIT_ADAPTIVE,	/* spins idle_spin_us, then sleeps until woken */
	DROCE_ENGINE_WAIT_INTERRUPT,	/* sleeps as soon as a pass finds nothing to do */
};

#define DROCE_ENGINE_IDLE_SPIN_US	20
#define DROCE_ENGINE_IDLE_SLEEP_US	20
/* Sleeps without rx interrupts double in an idle spell up to this (engine_wait.c). */
#define DROCE_ENGINE_IDLE_SLEEP_MAX_US	4000
/*
 * A sleep on the port's rx interrupt lasts this long at most; when, this many times in a
 * row, such a sleep ends at that bound and the port holds packets that the interrupt should
 * have announced, the engine stops relying on it and sleeps as without (engine_wait.c).
 */
#define DROCE_ENGINE_RX_INTR_CHECK_US	100000
#define DROCE_ENGINE_RX_INTR_MISSES	3

/* "poll", "adaptive", "interrupt"; NULL out of range. */
const char *droce_engine_wait_name(enum droce_engine_wait w);

struct droce_engine_conf {
	uint16_t port_id;	/* started ethdev port */
	uint16_t rx_queue;
	uint16_t tx_queue;
	struct rte_mempool *mp;	/* mbufs with room for a 4096-byte MTU packet */
	uint8_t mac[6];		/* the port's */
	uint8_t gids[DROCE_ENGINE_MAX_GIDS][16];	/* the port's GID table */
	uint32_t nb_gids;
	/*
	 * How an idle engine waits (doc/engine.md, "Sleeping engines"). POLL spins: a core of
	 * its own. ADAPTIVE spins idle_spin_us of empty passes, then sleeps in the kernel until
	 * something wakes it: a doorbell of a client (droce_shm_doorbell.sleeping), a command,
	 * a handoff, a frame on slow_tx, the rx interrupt of its queue (rx_intr) or its next
	 * timer. INTERRUPT sleeps at the first empty pass. The control thread applies commands
	 * to a sleeping engine itself.
	 */
	enum droce_engine_wait wait;
	uint32_t idle_spin_us;	/* ADAPTIVE's spin; 0: DROCE_ENGINE_IDLE_SPIN_US */
	/*
	 * The first sleep's bound when the port cannot wake the engine (no rx_intr, or a PMD
	 * without rx interrupts, as net_memif and net_ring): packets then wait up to this
	 * long. Each sleep of an idle spell that ends at its bound doubles it, up to
	 * DROCE_ENGINE_IDLE_SLEEP_MAX_US (or idle_sleep_us, when larger).
	 * 0: DROCE_ENGINE_IDLE_SLEEP_US.
	 */
	uint32_t idle_sleep_us;
	/*
	 * The port was configured with intr_conf.rxq = 1: the engine sleeps on its rx queue's
	 * interrupt (rte_eth_dev_rx_intr_ctl_q_get_fd); if the PMD gives none, it says so and
	 * sleeps idle_sleep_us at a time.
	 */
	bool rx_intr;
	bool rx_no_icrc;	/* the NIC verified the ICRC */
	/*
	 * The port's traffic classes and congestion control (doc/congestion.md), copied at
	 * create; NULL: droce_cc_params_default(), DCQCN on every priority as on a ConnectX.
	 */
	const struct droce_cc_params *cc;
	uint32_t line_mbps;	/* the port's speed, the reaction point's max; 0: 100 Gb/s */
	/*
	 * RC requesters go back to the oldest unacknowledged PSN a few round trips into a
	 * silence, before the local ACK timeout and without spending a retry (doc/engine.md,
	 * "Early retransmission"): a lost NAK costs that, not the QP's timeout. Off: only the
	 * timeout recovers, as IBTA 9.7.6.1.3 reads.
	 */
	bool early_retransmit;
	/*
	 * Frames that are not RoCEv2 (ARP, ICMP, ...) and RoCEv2 packets to QP1 (the GSI: CM
	 * MADs, which droced's control thread answers) are enqueued here for droced's control
	 * thread instead of being dropped; NULL: dropped. Multi-producer: engines of one port
	 * may share it; a full ring drops the frame.
	 */
	struct rte_ring *slow_rx;
	/*
	 * An eventfd the engine writes after a burst that put frames on slow_rx, and after it
	 * queued an asynchronous event, so that a control thread asleep in epoll answers a CM
	 * MAD or an ARP request, or passes an event on, at once rather than at its next tick
	 * (a connection's set-up is several MADs each way; an idle droced ticks slowly).
	 * -1: none. Once per burst: never a syscall per packet of the data path.
	 */
	int slow_rx_wake_fd;
	/*
	 * Frames the control thread wants sent on the port: the engine dequeues and transmits
	 * them. NULL: none. Single consumer: give a port's ring to one of its engines.
	 */
	struct rte_ring *slow_tx;
};

/*
 * Stops (stop) and closes (close) an ethdev port the way droced and droce-perf end theirs:
 * on the EAL's interrupt thread, where net_memif handles its peer's disconnect, so that the
 * two never free memif's regions at once (engine_port.c). As testpmd at exit, a memif port
 * is closed before the EAL goes: that unmaps its regions. Returns once done.
 */
void droce_engine_port_close(uint16_t port, bool stop, bool close);
/*
 * rte_eal_cleanup() once the EAL's interrupt thread can no longer read what the clean-up
 * unmaps (engine_port.c: net_memif leaves a freed handle in its list). The process's end:
 * no EAL call after it.
 */
void droce_engine_eal_cleanup(void);

/* Engine number id of dev (0..DROCE_ENGINE_MAX-1, each once). NULL and rte_errno on failure. */
struct droce_engine *droce_engine_create(struct droce_engine_dev *dev, uint32_t id,
					 const struct droce_engine_conf *conf);
void droce_engine_destroy(struct droce_engine *e);
/*
 * Ends e's sleep now: after queuing work it finds only by polling, such as a frame on its
 * slow_tx ring. Any thread; a write to an eventfd when e may sleep.
 */
void droce_engine_wake(struct droce_engine *e);

/*
 * Sends the frames queued on e's slow_tx: on the calling thread, at once, if the engine
 * naps (which it goes on doing), else by ending its nap. The control thread's one caller
 * at a time; it replaces droce_engine_wake() after a slow_tx enqueue.
 */
void droce_engine_slow_tx_push(struct droce_engine *e);

/*
 * The engine loop, for rte_eal_remote_launch(droce_engine_run, e, lcore): runs until
 * droce_engine_stop(). One engine runs on one thread at a time.
 */
int droce_engine_run(void *engine);
void droce_engine_stop(struct droce_engine *e);
/* One pass of the loop on the calling thread (for single-threaded tools); work done. */
unsigned int droce_engine_poll(struct droce_engine *e);

/* Engine counters, one X-macro list (name, description). */
#define DROCE_ENGINE_COUNTERS(X) \
	X(loops, "loop iterations") \
	X(busy_loops, "loop iterations that did work") \
	X(rx_pkts, "packets received from the port") \
	X(rx_handoff_in, "packets handed over by another engine") \
	X(rx_handoff_out, "packets handed to the engine owning their QP") \
	X(rx_handoff_drop, "packets dropped: the owner's handoff ring was full") \
	X(rx_foreign, "packets that are not RoCEv2 (dropped)") \
	X(rx_malformed, "RoCEv2 packets rejected by the parser (ICRC, lengths, ...)") \
	X(rx_nic_bad_ip_csum, "of rx_malformed, RoCEv2 packets whose IPv4 header checksum the NIC found bad") \
	X(rx_no_qp, "packets for a QPN with no QP") \
	X(rx_gsi, "packets to QP1 (CM MADs) handed to the control thread") \
	X(wake_fail, "eventfd wake-ups of the control thread that failed") \
	X(sleeps, "times the idle engine slept in the kernel") \
	X(sleeps_skipped, "sleeps given up: work came in while the engine published it sleeps") \
	X(cmd_wakeups, "sleeps a command, handoff or slow_tx frame ended") \
	X(doorbell_wakeups, "sleeps an application's doorbell ended") \
	X(rx_intr_wakeups, "sleeps the port's rx interrupt ended") \
	X(rx_intr_missed, "sleeps that ended at their bound with packets the rx interrupt did not announce") \
	X(rx_intr_late, "sleeps given up: the look after enabling the rx interrupt found packets") \
	X(timeout_wakeups, "sleeps that ended at their timeout (a timer, or idle_sleep_us)") \
	X(cmds_in_nap, "commands the control thread applied while the engine slept") \
	X(slow_tx_in_nap, "slow_tx frames the control thread sent while the engine slept") \
	X(rx_bad_state, "packets for a QP whose state does not accept them") \
	X(rx_bad_opcode, "packets whose opcode the QP's transport does not take") \
	X(rx_cnp, "CNPs received") \
	X(mcast_copies, "multicast packets copied to an attached QP") \
	X(mcast_no_group, "multicast packets for a group with no QP here, or not UD SENDs") \
	X(rx_cnp_ignored, "CNPs for a QP whose reaction point is off (its priority, or not ECN-capable)") \
	X(rx_ce, "CE-marked (congestion experienced) packets received") \
	X(cnp_sent, "CNPs sent (the notification point, at most one per QP per min_time_between_cnps)") \
	X(cc_paced, "times a rate-limited QP waited for its next packet's time") \
	X(rx_slow, "non-RoCEv2 frames handed to the control thread (ARP, ICMP)") \
	X(rx_slow_drop, "non-RoCEv2 frames dropped: the control thread's ring was full") \
	X(tx_pkts, "packets transmitted") \
	X(tx_drop, "packets dropped: tx buffer full, or a looped-back packet found its handoff ring full") \
	X(tx_nombuf, "packets not built: the mempool was empty") \
	X(tx_slow, "frames sent for the control thread (ARP, ICMP)") \
	X(tx_loopback, "packets to the port's own MAC, delivered inside the daemon") \
	X(req_pkts, "request packets sent, retransmissions included") \
	X(req_retransmit, "request packets sent again after a go-back") \
	X(req_timeout, "local ACK timeouts") \
	X(req_go_back, "go-back-N rewinds") \
	X(req_early_retransmit, "go-backs before the local ACK timeout, no retry spent") \
	X(rd_retry, "READs asked again from the first response packet missing") \
	X(req_ud_too_long, "UD sends longer than the path MTU (completed, not sent)") \
	X(req_local_ops, "memory window binds and local invalidations executed") \
	X(ack_rcvd, "ACKs received") \
	X(ack_stale, "ACKs/NAKs outside the outstanding PSN range (ignored)") \
	X(nak_seq_rcvd, "PSN sequence error NAKs received") \
	X(nak_rnr_rcvd, "RNR NAKs received") \
	X(nak_err_rcvd, "invalid request / access / operational NAKs received") \
	X(resp_msgs, "messages delivered by the responder (completions of receive WQEs)") \
	X(resp_writes, "RDMA WRITE messages placed by the responder (RC, UC; with or without immediate)") \
	X(resp_dup, "duplicate requests (re-ACKed, not delivered again)") \
	X(resp_out_of_seq, "requests beyond the expected PSN (dropped)") \
	X(rd_resp_sent, "READ response packets sent") \
	X(rd_replay, "duplicate READ requests answered again") \
	X(atomic_exec, "atomic requests executed") \
	X(atomic_replay, "duplicate atomic requests answered from the saved value") \
	X(atomic_write_exec, "ATOMIC WRITE requests executed") \
	X(flush_exec, "FLUSH requests executed") \
	X(ack_sent, "ACKs sent") \
	X(nak_seq_sent, "PSN sequence error NAKs sent") \
	X(nak_rnr_sent, "RNR NAKs sent") \
	X(nak_err_sent, "invalid request / access / operational NAKs sent") \
	X(uc_drop, "UC packets dropped (gap, no WQE, message in pieces)") \
	X(ud_drop, "UD packets dropped (Q_Key, no WQE)") \
	X(cqe, "completions written") \
	X(cq_overrun, "completions lost to a CQ overrun") \
	X(qp_error, "QPs moved to the error state") \
	/* Each responder refusal by its reason (engine_resp.c's resp_errs table). */ \
	X(resp_err_opcode, "requests refused: out of the opcode sequence, or a wrong length") \
	X(resp_err_rq_broken, "requests refused: the receive ring's indices lie") \
	X(resp_err_too_long, "requests refused: a SEND longer than its receive WQE") \
	X(resp_err_place, "requests refused: a receive SGE refused by its lkey") \
	X(resp_err_write_invalid, "WRITEs refused: not allowed, over 2^31, or a length mismatch") \
	X(resp_err_write_access, "WRITEs refused by their R_Key") \
	X(resp_err_read_invalid, "READs refused: not allowed, or over 2^31") \
	X(resp_err_read_access, "READs refused by their R_Key") \
	X(resp_err_atomic_invalid, "atomics refused: not allowed, or misaligned") \
	X(resp_err_atomic_access, "atomics refused by their R_Key") \
	X(resp_err_invalidate, "Sends with Invalidate whose R_Key could not be invalidated") \
	X(resp_invalidate, "memory windows invalidated by a Send with Invalidate") \
	X(resp_err_flush_invalid, "FLUSHes refused: a placement type the QP does not allow") \
	X(resp_err_flush_access, "FLUSHes refused by their R_Key") \
	X(resp_err_xrc_srq, "XRC requests refused: no XRC SRQ of the target's domain") \
	/* Each send the completer failed, by the state it failed in (engine_comp.c). */ \
	X(comp_err_read_resp, "sends failed in the completer's READ response state") \
	X(comp_err_atomic_ack, "sends failed in the completer's atomic acknowledge state") \
	X(comp_err_rnr_nak, "sends failed in the completer's RNR NAK state (retries spent)") \
	X(comp_err_err_nak, "sends failed in the completer's error NAK state (the peer's NAK)") \
	X(srq_limit_events, "SRQ limit events raised") \
	X(cmds, "control commands applied") \
	X(tx_port_paused, "packets freed unsent while droced restarted the port (link down)")

struct droce_engine_stats {
#define DROCE_ENGINE_STAT_FIELD(name, desc) uint64_t name;
	DROCE_ENGINE_COUNTERS(DROCE_ENGINE_STAT_FIELD)
#undef DROCE_ENGINE_STAT_FIELD
};

extern const char *const droce_engine_counter_names[];
extern const char *const droce_engine_counter_descs[];
#define DROCE_ENGINE_NB_COUNTERS (sizeof(struct droce_engine_stats) / sizeof(uint64_t))

/*
 * A QP's own counters, under the names and meanings of Linux's RDMA hardware counters
 * (mlx5's queue, congestion and optional counters; `rdma statistic` shows them) so that
 * an operator's dashboards read droce as they read a NIC. Each engine also keeps them
 * summed over every QP it served, destroyed ones included: a port's figures are its
 * engines' sums. doc/operations.md maps each to the engine counters above.
 * X(name, description).
 */
#define DROCE_ENGINE_QP_COUNTERS(X) \
	X(rdma_tx_packets, "RoCE packets the QP sent: requests, responses, ACKs, CNPs") \
	X(rdma_tx_bytes, "bytes of those packets, Ethernet header to ICRC") \
	X(rdma_rx_packets, "RoCE packets received for the QP") \
	X(rdma_rx_bytes, "bytes of those packets, Ethernet header to ICRC") \
	X(rx_write_requests, "RDMA WRITE request packets received") \
	X(rx_read_requests, "RDMA READ requests received") \
	X(rx_atomic_requests, "atomic and ATOMIC WRITE requests received") \
	X(out_of_buffer, "requests that found no receive WQE (RC: RNR NAK sent; UC, UD: dropped)") \
	X(out_of_sequence, "request packets received beyond the expected PSN") \
	X(duplicate_request, "duplicate request packets received (acknowledged again)") \
	X(rnr_nak_retry_err, "RNR NAKs received") \
	X(packet_seq_err, "PSN sequence error NAKs received") \
	X(implied_nak_seq_err, "READ or atomic responses implying an earlier response was lost") \
	X(local_ack_timeout_err, "local ACK timeouts") \
	X(resp_local_length_error, "SENDs longer than their receive WQE") \
	X(resp_cqe_error, "receive completions in error, flushes aside") \
	X(req_cqe_error, "send completions in error, flushes aside") \
	X(req_remote_invalid_request, "sends failed by the peer's invalid request NAK") \
	X(req_remote_access_errors, "sends failed by the peer's remote access NAK") \
	X(resp_remote_access_errors, "requests refused by their R_Key (remote access NAK sent)") \
	X(resp_cqe_flush_error, "receive completions flushed") \
	X(req_cqe_flush_error, "send completions flushed") \
	X(req_transport_retries_exceeded, "sends failed: transport retries exceeded") \
	X(req_rnr_retries_exceeded, "sends failed: RNR retries exceeded") \
	X(np_ecn_marked_roce_packets, "CE-marked packets received (the notification point)") \
	X(np_cnp_sent, "CNPs sent (the notification point)") \
	X(rp_cnp_handled, "CNPs the reaction point acted on") \
	X(rp_cnp_ignored, "CNPs ignored: the reaction point is off")

struct droce_engine_qp_counters {
#define DROCE_ENGINE_QP_COUNTER_FIELD(name, desc) uint64_t name;
	DROCE_ENGINE_QP_COUNTERS(DROCE_ENGINE_QP_COUNTER_FIELD)
#undef DROCE_ENGINE_QP_COUNTER_FIELD
};

extern const char *const droce_engine_qp_counter_names[];
extern const char *const droce_engine_qp_counter_descs[];
#define DROCE_ENGINE_NB_QP_COUNTERS \
	(sizeof(struct droce_engine_qp_counters) / sizeof(uint64_t))

/* QPs on e's timer list now (ACK or RNR timer running); any thread. */
uint32_t droce_engine_timer_qps(const struct droce_engine *e);

/* A snapshot (counters are written by the engine thread only; read without tearing). */
void droce_engine_stats_get(const struct droce_engine *e, struct droce_engine_stats *st);
/* The QP counters of every QP e served, destroyed ones included; as above. */
void droce_engine_qp_counters_total(const struct droce_engine *e,
				    struct droce_engine_qp_counters *c);
/* Writes " name=value" for every non-zero counter of e to f (diagnostics; any thread). */
void droce_engine_stats_print(FILE *f, const struct droce_engine *e);
/*
 * Writes one line about qp to f: its state, the responder's state and the step its last
 * RC request reached, the state the completer last failed a send in, and the PSNs. Reads
 * the engine's own fields without synchronisation: for diagnostics (a failed test, a
 * stopped engine), never for decisions.
 */
void droce_engine_qp_print(FILE *f, const struct droce_engine_qp *qp);

/* A QP's congestion control, for droce-ctl and droce-perf (doc/congestion.md). */
struct droce_engine_qp_cc {
	uint32_t qpn;
	uint32_t engine;
	uint8_t type;		/* DROCE_SHM_QPT_* */
	uint8_t state;		/* DROCE_SHM_QPS_* */
	uint8_t prio;		/* 802.1p priority of its path */
	bool rp;		/* reaction point on */
	bool limited;		/* paced below the max since a CNP */
	uint64_t rate_kbps;	/* current rate (the max when not limited) */
	uint64_t target_kbps;
	uint32_t alpha;		/* 1024ths */
	uint64_t ce_rcvd;	/* CE-marked packets it received */
	uint64_t cnp_sent;	/* CNPs it sent (notification point) */
	uint64_t cnp_rcvd;	/* CNPs it received (reaction point) */
	uint64_t rate_cuts;
};

/*
 * Reads qp's congestion state without synchronisation (diagnostics, as
 * droce_engine_qp_print): any thread. 0.
 */
int droce_engine_qp_cc_get(const struct droce_engine_qp *qp, struct droce_engine_qp_cc *info);
/* A QP's owner, state and path, for droced's views; read as droce_engine_qp_cc_get. */
struct droce_engine_qp_info {
	uint32_t qpn;
	uint32_t engine;
	const struct droce_engine_domain *dom;	/* its owner */
	uint8_t type;		/* DROCE_SHM_QPT_* */
	uint8_t state;		/* DROCE_SHM_QPS_* */
	uint8_t retry_cnt;	/* as last set */
	uint8_t rnr_retry;
	uint8_t timeout;
	uint32_t pd;
	uint32_t mtu;		/* path MTU in bytes; 0 before RTR */
	uint32_t dest_qpn;
	uint32_t sq_psn;	/* the next PSN to send */
	uint32_t sq_una;	/* the oldest PSN not acknowledged */
	uint32_t rq_psn;	/* the PSN the responder expects */
	uint32_t sq_size, rq_size;
	uint8_t dgid[16];	/* the path's destination (RC, UC) */
};

void droce_engine_qp_info_get(const struct droce_engine_qp *qp, struct droce_engine_qp_info *info);
/* qp's counters, read as droce_engine_qp_cc_get reads (any thread, diagnostics). */
void droce_engine_qp_counters_get(const struct droce_engine_qp *qp,
				  struct droce_engine_qp_counters *c);
/* The QP of dev with the lowest QPN >= qpn, or NULL (the control thread). */
struct droce_engine_qp *droce_engine_dev_qp_next(struct droce_engine_dev *dev, uint32_t qpn);

/* ---- Packet capture (engine_obj_tap.c, engine_tap.c) ---- */

#define DROCE_ENGINE_TAP_QPNS	8

/* What a capture takes: frames of one port, copied in pcapng form (rte_pcapng_copy). */
struct droce_engine_tap_conf {
	uint16_t port_id;
	struct rte_ring *ring;		/* multi-producer: the copies, for the caller to write */
	struct rte_mempool *mp;		/* the copies' mbufs (rte_pcapng_mbuf_size(snaplen)) */
	uint32_t snaplen;		/* bytes of each frame kept */
	/* RoCEv2 packets whose BTH destination QPN is one of these; none listed: any frame. */
	uint32_t qpns[DROCE_ENGINE_TAP_QPNS];
	uint32_t nb_qpns;
	/* Packets from or to this address (IPv4-mapped for IPv4) when peer_set. */
	bool peer_set;
	uint8_t peer[16];
};

struct droce_engine_tap;

/*
 * Starts copying the frames the engines of port_id receive from it and send to it (after
 * their ICRCs are written; not those looped back inside the device) that match conf into
 * conf->ring. One capture per port at a time: NULL with rte_errno EBUSY, or ENOMEM.
 * Control thread.
 */
struct droce_engine_tap *droce_engine_tap_start(struct droce_engine_dev *dev,
						const struct droce_engine_tap_conf *conf);
/* Frames copied so far, and frames that matched but found the ring or the pool full. */
void droce_engine_tap_counts(const struct droce_engine_tap *tap, uint64_t *copied,
			     uint64_t *dropped);
/* Stops: once it returns no engine copies into the ring any more, and tap is freed. */
void droce_engine_tap_stop(struct droce_engine_tap *tap);

/* ---- Domains (clients) ---- */

/* The asynchronous events engines raise (droce_shm.h's, which are ibv_event_type's). */
enum droce_engine_event_type {
	DROCE_ENGINE_EVENT_CQ_ERR = DROCE_SHM_EVENT_CQ_ERR,
	DROCE_ENGINE_EVENT_QP_FATAL = DROCE_SHM_EVENT_QP_FATAL,
	/* A connected QP in RTR took its first packet (IB 11.6.3.1, Communication Established). */
	DROCE_ENGINE_EVENT_COMM_EST = DROCE_SHM_EVENT_COMM_EST,
	DROCE_ENGINE_EVENT_SQ_DRAINED = DROCE_SHM_EVENT_SQ_DRAINED,
	/* The port's: droced raises them when the link goes and comes back. */
	DROCE_ENGINE_EVENT_PORT_ACTIVE = DROCE_SHM_EVENT_PORT_ACTIVE,
	DROCE_ENGINE_EVENT_PORT_ERR = DROCE_SHM_EVENT_PORT_ERR,
	DROCE_ENGINE_EVENT_SRQ_LIMIT_REACHED = DROCE_SHM_EVENT_SRQ_LIMIT_REACHED,
	DROCE_ENGINE_EVENT_QP_LAST_WQE_REACHED = DROCE_SHM_EVENT_QP_LAST_WQE_REACHED,
};

struct droce_engine_event {
	uint32_t type;		/* enum droce_engine_event_type */
	uint32_t handle;	/* QPN, CQ handle or SRQ handle */
};

struct droce_engine_domain_conf {
	void *region;		/* the client's shm region as this process maps it */
	uint64_t region_size;	/* already laid out by droce_shm_arena_init() */
	uint32_t max_mrs;
	uint32_t max_ahs;
	uint32_t max_events;	/* power of two */
};

struct droce_engine_domain *droce_engine_domain_create(struct droce_engine_dev *dev,
					 const struct droce_engine_domain_conf *conf);
/* Destroys every object the domain still owns (QPs to error first, then gone). */
void droce_engine_domain_destroy(struct droce_engine_domain *dom);
/* Next asynchronous event: 1, or 0 when there is none. Any thread. */
int droce_engine_domain_event_get(struct droce_engine_domain *dom, struct droce_engine_event *ev);
/*
 * The eventfd that wakes engine engine_id for dom's doorbells (droce_shm_doorbell.sleeping),
 * once dom has a QP there; -1 before, and for an engine that never sleeps (POLL). The domain owns it: droced passes a copy to the
 * client, and an in-process user sets it in its QP views (droce_shm_client_db.wake_fd).
 */
int droce_engine_domain_wake_fd(const struct droce_engine_domain *dom, uint32_t engine_id);

/*
 * Memory regions: key = (index << 8) | variant; the engine resolves it to base + offset
 * after checking range, access and PD. base is where the region's bytes are in this process.
 */
int droce_engine_mr_reg(struct droce_engine_domain *dom, uint32_t pd, void *base, uint64_t iova,
		 uint64_t length, uint32_t access, uint32_t *lkey, uint32_t *rkey);
/* Waits until no engine can still be using the MR before returning. */
/*
 * ibv_rereg_mr in place: the MR of lkey takes pd, base, iova, length and access and keeps
 * its keys. No engine uses it meanwhile: it is invalid while the fields change, after every
 * engine has finished a pass (a remote access then meets an invalid key, as during a
 * re-registration on a NIC). 0 or -EINVAL (no such MR).
 */
int droce_engine_mr_rereg(struct droce_engine_domain *dom, uint32_t lkey, uint32_t pd,
			  void *base, uint64_t iova, uint64_t length, uint32_t access);
int droce_engine_mr_dereg(struct droce_engine_domain *dom, uint32_t lkey);
/*
 * Memory windows (ibv_alloc_mw): a key of the same table, unbound; *rkey names it until
 * dealloc (binding changes only its low byte). type: an enum ibv_mw_type. Binds and
 * invalidations run on engines (BIND_MW, LOCAL_INV WQEs; Send with Invalidate).
 * dealloc waits until no engine can still be using the window.
 */
int droce_engine_mw_alloc(struct droce_engine_domain *dom, uint32_t pd, uint32_t type,
			  uint32_t *rkey);
int droce_engine_mw_dealloc(struct droce_engine_domain *dom, uint32_t rkey);

/* UD address handles: number *ah for droce_shm_swqe.ud.ah. -EHOSTUNREACH: no neighbour. */
int droce_engine_ah_create(struct droce_engine_domain *dom, uint32_t engine_id, uint32_t pd,
		    const struct droce_shm_ah_attr *attr, uint32_t *ah);
int droce_engine_ah_destroy(struct droce_engine_domain *dom, uint32_t ah);

/* ---- CQ, SRQ, QP ---- */

struct droce_engine_cq_conf {
	struct droce_shm_cq *ctl;	/* in the domain's region */
	struct droce_shm_cqe *ring;	/* size entries, zeroed */
	uint32_t size;			/* power of two */
	int eventfd;			/* written at notifications; -1: none */
	uint32_t handle;		/* named in events */
	bool timestamps;		/* stamp each CQE with the engine's TSC */
};

struct droce_engine_cq *droce_engine_cq_create(struct droce_engine_domain *dom, const struct droce_engine_cq_conf *conf);
/* -EBUSY while a QP uses it. */
int droce_engine_cq_destroy(struct droce_engine_cq *cq);
/*
 * ibv_resize_cq: cq's completions move to ring (size entries, a power of two, zeroed),
 * the oldest first at entry 0, and the engines write there from then on; the
 * application's consumer index is set to 0. Every engine of the device waits outside a
 * pass meanwhile. 0; -EINVAL when more completions wait than size holds; -EIO after an
 * overrun. The control thread, while the application does not poll cq.
 */
int droce_engine_cq_resize(struct droce_engine_cq *cq, struct droce_shm_cqe *ring, uint32_t size);
/*
 * After IBV_EVENT_CQ_ERR (overrun): moves every QP that uses cq to ERR, as the control
 * path must (11.4.2.1: the CQ's QPs go to error), and raises IBV_EVENT_QP_FATAL for each.
 * Returns how many it moved.
 */
int droce_engine_cq_error_qps(struct droce_engine_cq *cq);
bool droce_engine_cq_in_error(const struct droce_engine_cq *cq);

struct droce_engine_srq_conf {
	struct droce_shm_srq *ctl;
	uint8_t *ring;
	uint32_t size;			/* power of two */
	uint32_t max_sge;		/* stride is droce_shm_rq_stride(max_sge) */
	uint32_t pd;
	uint32_t limit;			/* srq_limit; 0: disarmed */
	uint32_t handle;
	/*
	 * XRC SRQ (IBV_SRQT_XRC): its XRC domain (a device-wide number the control path
	 * gives, not 0) and the CQ its receives complete on; 0 and NULL otherwise.
	 */
	uint32_t xrcd;
	struct droce_engine_cq *cq;
};

struct droce_engine_srq *droce_engine_srq_create(struct droce_engine_domain *dom, const struct droce_engine_srq_conf *conf);
/* ibv_modify_srq(IBV_SRQ_LIMIT): sets and arms the limit (0 disarms). -EINVAL over size. */
int droce_engine_srq_set_limit(struct droce_engine_srq *srq, uint32_t limit);
/* ibv_query_srq: the limit, 0 once it fired. */
uint32_t droce_engine_srq_limit(const struct droce_engine_srq *srq);
int droce_engine_srq_destroy(struct droce_engine_srq *srq);
/*
 * UD multicast (ibv_attach_mcast): qp (UD) receives what is sent to multicast GID gid.
 * attach: 0, -EINVAL (not UD, not a multicast GID), -EEXIST (attached already), -ENOMEM
 * (DROCE_ENGINE_MAX_MCAST_GRPS groups, DROCE_ENGINE_MAX_MCAST_QPS QPs in one). detach: 0,
 * -EINVAL (not attached). Both wait until no engine reads the old membership. A QP
 * destroyed leaves its groups. members: the QPs attached to gid now.
 */
int droce_engine_mcast_attach(struct droce_engine_qp *qp, const uint8_t gid[16]);
int droce_engine_mcast_detach(struct droce_engine_qp *qp, const uint8_t gid[16]);
uint32_t droce_engine_mcast_members(const struct droce_engine_dev *dev, const uint8_t gid[16]);
/* Group i of dev's multicast table (control thread): its GID and QPs; -ENOENT past the end. */
int droce_engine_mcast_group_get(const struct droce_engine_dev *dev, uint32_t i, uint8_t gid[16],
				 uint32_t *members);

/* An XRC SRQ's device-wide number (ibv_get_srq_num, the XRCETH's); 0 for other SRQs. */
uint32_t droce_engine_srq_num(const struct droce_engine_srq *srq);

/*
 * XRC: an initiator (XRC_SEND) has a send queue and send_cq only (no receive side); a
 * target (XRC_RECV) has neither CQs nor queues (a one-entry send ring that never takes a
 * WQE), its XRC domain instead: each request names the XRC SRQ of that domain it is for.
 */
struct droce_engine_qp_conf {
	uint8_t qp_type;		/* enum droce_shm_qp_type */
	uint32_t engine_id;
	uint32_t pd;			/* 0 for an XRC target */
	uint32_t xrcd;			/* XRC target: its XRC domain */
	struct droce_engine_cq *send_cq;
	struct droce_engine_cq *recv_cq;
	struct droce_engine_srq *srq;		/* NULL: own receive ring */
	bool sq_sig_all;
	struct droce_shm_qp *ctl;
	uint8_t *sq;
	uint32_t sq_size;		/* power of two */
	uint32_t sq_max_sge;
	uint32_t max_inline;
	uint8_t *rq;			/* NULL with an SRQ */
	uint32_t rq_size;
	uint32_t rq_max_sge;
	uint32_t db_slot;		/* doorbell slot in the engine's block of this domain */
};

/* A QP in RESET. NULL and rte_errno (EINVAL, ENOSPC: no QPN or doorbell slot left). */
struct droce_engine_qp *droce_engine_qp_create(struct droce_engine_domain *dom, const struct droce_engine_qp_conf *conf);
uint32_t droce_engine_qp_num(const struct droce_engine_qp *qp);

/* ibv_modify_qp, applied by the owning engine: 0, -EINVAL, -EHOSTUNREACH (no neighbour). */
int droce_engine_qp_modify(struct droce_engine_qp *qp, const struct droce_shm_qp_attr *attr);

/* ibv_query_qp: the attributes as the engine holds them, and the state. */
int droce_engine_qp_query(struct droce_engine_qp *qp, struct droce_shm_qp_attr *attr);

/* Removes the QP from its engine (no completions for what it still held) and frees it. */
int droce_engine_qp_destroy(struct droce_engine_qp *qp);

#endif /* DROCE_ENGINE_H */
