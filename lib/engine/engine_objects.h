/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ENGINE_OBJECTS_H
#define ENGINE_OBJECTS_H

/*
 * lib/engine's objects as the engines and the control thread share them: the device and
 * its engines, domains, keys (MRs, memory windows) and AHs, CQs, SRQs, QPs with the WQEs
 * and responder resources they keep, and the multicast table; each with its small inline
 * accessors. They are in one header because every file of the library works on them; the
 * functions are engine_loc.h's, grouped by the file that defines them.
 *
 * Ownership: a QP's mutable state belongs to its engine alone; CQs and SRQs may be shared
 * by engines and are touched through atomics only; device, domain and MR/AH tables are
 * written by the control thread and read by engines (entries published with release, read
 * with acquire, retired after every engine has passed a quiescent point: engine_quiesce()).
 */

#include <stdatomic.h>
#include <sys/queue.h>

#include <rte_mbuf.h>
#include <rte_ring.h>

#include "droce_engine.h"
#include "engine_params.h"

/* ---- Device (engine_obj_dev.c) ---- */

struct droce_engine_dev {
	/*
	 * Non-zero while the control thread moves a CQ's ring (droce_engine_cq_resize): no
	 * engine runs a pass, so no completion is written meanwhile (engine_loop.c).
	 */
	_Atomic uint32_t freeze;
	uint32_t max_qps;
	struct droce_engine_qp *_Atomic *qps;	/* by QPN */
	uint32_t qpn_next;		/* control thread: allocation cursor */
	/* UD multicast groups (engine_mcast.c): replaced whole by the control thread. */
	struct engine_mcast_table *_Atomic mcast;
	/* XRC SRQs by number (the XRCETH's), DROCE_ENGINE_MAX_XSRQS of them; 0 unused. */
	struct droce_engine_srq *_Atomic *xsrqs;
	uint32_t xsrqn_next;		/* control thread: allocation cursor */
	struct droce_engine *engines[DROCE_ENGINE_MAX];
	LIST_HEAD(, droce_engine_domain) doms;
	struct droce_engine_dev_objects objs;	/* control thread */
	int ctl_wake_fd;		/* the engines' slow_rx_wake_fd: asynchronous events */
	uint32_t nb_neigh;
	struct {
		uint8_t gid[16];
		uint8_t mac[6];
	} neigh[256];
};

/* The XRC SRQ numbered srqn, or NULL (any engine; valid for the rest of the pass). */
static inline struct droce_engine_srq *
dev_xsrq(struct droce_engine_dev *dev, uint32_t srqn)
{
	if (srqn >= DROCE_ENGINE_MAX_XSRQS)
		return NULL;
	return atomic_load_explicit(&dev->xsrqs[srqn], memory_order_acquire);
}

/* The QP of QPN qpn, or NULL (any engine). */
static inline struct droce_engine_qp *
dev_qp(struct droce_engine_dev *dev, uint32_t qpn)
{
	if (qpn >= dev->max_qps)
		return NULL;
	return atomic_load_explicit(&dev->qps[qpn], memory_order_acquire);
}

/* ---- Engine (engine_obj_dev.c creates it, engine_loop.c runs it) ---- */

TAILQ_HEAD(engine_qp_list_head, droce_engine_qp);

enum { ENGINE_OWN_RUN, ENGINE_OWN_NAP, ENGINE_OWN_CTL };

struct droce_engine {
	struct droce_engine_dev *dev;
	uint32_t id;
	uint16_t port_id;
	uint16_t rx_queue;
	uint16_t tx_queue;
	struct rte_mempool *mp;
	uint8_t mac[6];
	uint8_t gids[DROCE_ENGINE_MAX_GIDS][16];
	uint32_t nb_gids;
	enum droce_engine_wait wait;	/* droce_engine_conf's */
	uint32_t idle_sleep_us;
	bool early_retransmit;
	/*
	 * Every QP's round-trip samples, smoothed (TSC ticks; 0: none yet): a QP's first wait
	 * before it has samples of its own (engine_timer.c). With thousands of QPs a round
	 * trip is the time the engine takes to come round to a QP again, far above 2 ms.
	 */
	uint64_t rtt_all;
	uint32_t parse_flags;
	struct droce_cc_params cc;	/* the port's congestion parameters (engine_cc.c) */
	uint64_t cc_line_kbps;
	uint64_t cc_slack_tsc;
	struct rte_ring *cmds;		/* control -> engine */
	int cmd_wake_fd;		/* eventfd: a command was queued (ends an idle nap) */
	int cmd_done_fd;		/* eventfd: commands were applied (wakes their caller) */
	struct rte_ring *handoff;	/* other engines -> engine: packets of its QPs */
	struct rte_ring *slow_rx;	/* engine -> control thread: ARP, ICMP, ... */
	int slow_rx_wake_fd;		/* eventfd written after a burst that queued MADs */
	bool slow_rx_wake;		/* this burst queued a QP1 packet */
	struct rte_ring *slow_tx;	/* control thread -> engine: frames to send */
	uint64_t tsc_hz;
	uint64_t now;			/* TSC at the start of this loop pass */
	uint64_t timer_next;		/* earliest deadline on the timer list (lazy) */
	uint64_t idle_since;		/* TSC of the first idle pass of this idle spell, or 0 */
	uint64_t idle_spin_tsc;		/* idle this long before sleeping (engine_wait.c) */
	uint32_t sleep_bound_us;	/* this sleep's bound without rx interrupts */
	int epfd;			/* what wakes it: cmd_wake_fd, domains' fds, rx interrupt */
	int rx_intr_fd;			/* its rx queue's interrupt fd, or -1 */
	bool rx_intr_counts;		/* it is an eventfd: read it to re-arm (engine_wait.c) */
	bool rx_intr_check;		/* the last sleep ended at its bound: is the port empty? */
	uint8_t rx_intr_misses;		/* such sleeps in a row that found packets waiting */
	/* What the look after enabling the rx interrupt took from the port (engine_wait.c):
	 * the next rx stage's burst. */
	struct rte_mbuf *rx_stash[ENGINE_BURST];
	uint16_t nb_rx_stash;
	/*
	 * Non-zero while the engine sleeps or is about to (engine_wait.c): another engine that
	 * hands it a packet then writes cmd_wake_fd. Its store and the check of the handoff
	 * ring are Dekker's pair, as with the doorbells' sleeping word.
	 */
	_Atomic uint32_t asleep;
	uint64_t handoff_to;		/* this burst's handoff targets, bit = engine id */
	/*
	 * Who may touch the engine's state: its thread (ENGINE_OWN_RUN), nobody while it
	 * naps (ENGINE_OWN_NAP), or the control thread applying a command during the nap
	 * (ENGINE_OWN_CTL; engine_cmd_run). The nap ends with NAP -> RUN.
	 */
	_Atomic uint32_t own;
	_Atomic uint32_t stop;
	_Atomic uint32_t running;
	_Atomic uint64_t epoch;		/* loop passes; odd while inside one */

	struct engine_qp_list_head active;
	struct engine_qp_list_head timers;
	/*
	 * Non-zero while droced restarts the port (droce_engine_dev_port_pause): the engine
	 * neither receives from nor sends to its queues, and frees what it would send.
	 */
	_Atomic uint32_t port_paused;
	/* QPs on the timer list: written by whoever owns the engine, read by anyone (a gauge
	 * droced's status reports: a list that only grows is a leak) */
	_Atomic uint32_t nb_timer_qps;
	struct engine_qp_list_head acks;
	struct engine_qp_list_head errs;
	struct engine_qp_list_head reads;
	struct droce_engine_domain *doms[64];	/* domains with doorbells on this engine */
	uint32_t nb_doms;

	uint16_t nb_tx;
	struct rte_mbuf *tx[ENGINE_TX_MAX];
	/*
	 * Per tx[] entry: the IP header's offset of a RoCE packet whose ICRC engine_tx_flush()
	 * still has to write (ICRCs by the burst, doc/engine.md), or 0 for a frame that is
	 * complete (the control thread's, or one refused by the port and kept).
	 */
	uint8_t tx_icrc_l3[ENGINE_TX_MAX];
	/* mbufs taken from the pool a burst at a time, for engine_pkt_start (engine_tx.c) */
	struct rte_mbuf *mb_stash[ENGINE_BURST];
	uint16_t nb_mb_stash;
	struct droce_engine_stats st;
	/* A capture of its port's frames (engine_tap.c); NULL: none, what costs nothing. */
	struct droce_engine_tap *_Atomic tap;
	uint16_t tx_tapped;	/* tx[] entries from the front already captured (kept, refused) */
	/* Its QPs' counters summed, destroyed QPs' included: the port's figures. */
	struct droce_engine_qp_counters qp_total;
};

struct droce_engine_tap {
	struct droce_engine_dev *dev;
	struct droce_engine_tap_conf conf;
	_Atomic uint64_t copied;
	_Atomic uint64_t dropped;
};

_Static_assert(DROCE_ENGINE_MAX <= 64, "handoff_to has a bit per engine");

#define ENGINE_STAT(e, name) ((e)->st.name++)
/* A QP counter, on the QP and in its engine's sum (on the QP's own engine only). */
#define ENGINE_QP_ADD(qp, name, n) do { \
		(qp)->cnt.name += (n); \
		(qp)->engine->qp_total.name += (n); \
	} while (0)
#define ENGINE_QP_COUNT(qp, name) ENGINE_QP_ADD(qp, name, 1)

/* Room for n more packets in the tx buffer. */
static inline unsigned int
engine_tx_room(const struct droce_engine *e)
{
	return ENGINE_TX_MAX - e->nb_tx;
}

/* ---- Domain (engine_obj_domain.c) ---- */

struct droce_engine_domain {
	struct droce_engine_dev *dev;
	uint8_t *region;
	uint64_t region_size;
	struct engine_mr *mrs;
	uint32_t max_mrs;
	uint32_t mr_next;		/* control thread: key variant counter */
	uint32_t nb_mrs;		/* control thread: valid MRs */
	uint32_t nb_mws;		/* control thread: allocated memory windows */
	uint32_t nb_ahs;		/* control thread: valid AHs */
	struct engine_ah *ahs;
	uint32_t max_ahs;
	struct rte_ring *events;	/* engines produce (MP), the control path consumes */
	/* Per engine: its doorbell block in the region and the QP behind each slot. */
	struct droce_shm_doorbell *db[DROCE_ENGINE_MAX];
	struct droce_engine_qp **db_qp[DROCE_ENGINE_MAX];
	int wake_fd[DROCE_ENGINE_MAX];	/* eventfd the client writes to wake engine i, or -1 */
	LIST_ENTRY(droce_engine_domain) next;	/* in the device */
	uint32_t nb_qps;		/* control thread */
};

/* ---- Memory keys: MRs and memory windows (engine_obj_mr.c, engine_mr.c) ---- */

/* What an entry of the domain's key table is (IB 10.6: MRs and MWs share the R_Key space). */
enum engine_key_kind {
	KEY_MR,
	KEY_MW1,		/* memory window type 1: bound by ibv_bind_mw, any QP of its PD */
	KEY_MW2,		/* type 2 (2B): bound by a BIND_MW WQE, to that QP and PD */
};

/*
 * A memory window's binding, as one unit (engine_mr.c's seqlock): a range of an MR (its
 * index and its key then, so a re-registered or deregistered MR is never reached through
 * a stale window) with remote rights. length 0: unbound (a type 2 window is then free).
 */
struct engine_mw_binding {
	uint64_t iova;
	uint64_t length;
	uint32_t access;	/* IBV_ACCESS_REMOTE_* */
	uint32_t key;		/* the window's current R_Key */
	uint32_t mr_idx;
	uint32_t mr_key;
	uint32_t qpn;		/* type 2: the QP it is bound to */
};

/*
 * One key: an MR (base..length, access, pd, key) or a memory window (pd, kind, and the
 * binding under seq, which engines change: bind, invalidate). valid: allocated.
 */
struct engine_mr {
	uint8_t *base;		/* this process's address of iova */
	uint64_t iova;
	uint64_t length;
	uint32_t access;	/* enum ibv_access_flags */
	uint32_t pd;
	uint32_t key;
	_Atomic uint32_t valid;
	uint8_t kind;		/* enum engine_key_kind */
	_Atomic uint32_t seq;	/* windows: odd while a writer changes mw */
	struct engine_mw_binding mw;
};

/* ---- Address handles (engine_obj_ah.c) ---- */

struct engine_ah {
	struct droce_wire_tmpl tmpl;
	uint32_t pd;
	_Atomic uint32_t valid;
};

/* ---- CQ and SRQ (engine_obj_cq.c, engine_obj_srq.c), shared by engines ---- */

struct droce_engine_cq {
	struct droce_engine_domain *dom;
	struct droce_shm_cq *ctl;
	struct droce_shm_cqe *ring;
	uint32_t size;
	unsigned int log2_size;
	uint32_t handle;
	int eventfd;
	_Atomic uint32_t head;		/* next slot to reserve (engines) */
	_Atomic uint32_t arm_served;	/* n of the last notification given */
	_Atomic uint32_t error;		/* overrun seen */
	bool timestamps;		/* droce_shm_cqe.timestamp: the TSC at the write */
	uint32_t nb_qps;		/* control thread */
};

struct droce_engine_srq {
	struct droce_engine_domain *dom;
	struct droce_shm_srq *ctl;
	uint8_t *ring;
	uint32_t size;
	uint32_t stride;
	uint32_t max_sge;
	uint32_t pd;
	uint32_t handle;
	/* Multi-consumer claim, as rte_ring's: reserve at head, copy, then release in order. */
	_Atomic uint32_t head;
	_Atomic uint32_t tail;
	_Atomic uint32_t limit;		/* 0 when disarmed */
	uint32_t nb_qps;		/* control thread */
	uint32_t xrcd;			/* XRC SRQ: its XRC domain; 0: not XRC */
	uint32_t srqn;			/* XRC SRQ: its number in dev->xsrqs */
	struct droce_engine_cq *cq;	/* XRC SRQ: where its receives complete */
};

/* A receive WQE as an engine keeps it: a validated copy. */
struct engine_rwqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t total;			/* sum of SGE lengths, bounded */
	struct droce_shm_sge sge[DROCE_SHM_MAX_SGE];
};

/*
 * A READ or atomic the responder accepted (its responder resources, shared by both as
 * max_dest_rd_atomic counts them): the request as it came, and where its response stands.
 * A duplicate request re-arms the response from its PSN; an atomic's keeps the original
 * value, so that a duplicate is answered without executing it again (IB 9.7.5.1.2).
 */
struct engine_rd_res {
	bool atomic;		/* an atomic: one ATOMIC ACKNOWLEDGE carrying orig */
	uint32_t xsrqn;		/* XRC target: the SRQ whose PD and keys the READ is checked in */
	uint64_t orig;		/* atomic: the target's value before the operation */
	uint32_t first_psn;	/* of the original request */
	uint32_t npkts;		/* PSNs it spans */
	uint64_t va;		/* the original RETH */
	uint32_t rkey;
	uint32_t len;
	uint32_t start_psn;	/* the request being answered: FIRST/ONLY goes there */
	uint32_t psn;		/* next response packet */
	uint32_t off;		/* its byte offset in the transfer */
	uint32_t left;		/* response packets still to send */
};

/* ---- QP (engine_obj_qp.c, engine_qp.c) ---- */

/* A send WQE as the engine keeps it: the validated copy plus its place in the PSN space. */
struct engine_swqe {
	uint32_t first_psn;
	uint32_t npkts;		/* PSNs it spans (a READ: its response packets) */
	uint32_t rd_got;	/* READ/atomic: response packets placed, in order */
	uint32_t len;
	uint8_t status;		/* enum droce_shm_wc_status, for a WQE failed at fetch */
	uint8_t wc_opcode;
	bool local_done;	/* a local operation (npkts 0) executed: never again */
	struct droce_shm_swqe *wqe;	/* header + SGEs/inline in the private copy */
};

enum engine_qp_list {
	QP_ON_ACTIVE = 1u << 0,	/* engine->active: has packets to send */
	QP_ON_TIMER = 1u << 1,	/* engine->timers: ACK or RNR timer running */
	QP_ON_ACK = 1u << 2,	/* engine->acks: an ACK to send at the end of the rx burst */
	QP_ON_ERR = 1u << 3,	/* engine->errs: in ERR, watched for new posts to flush */
	QP_ON_READ = 1u << 4,	/* engine->reads: READ or atomic responses to send */
};

struct droce_engine_qp {
	/* ---- Fixed at create (control thread), read by any engine ---- */
	uint32_t qpn;
	uint8_t type;
	bool reliable;			/* RC and both XRC halves: ACKs, retries, READs */
	struct droce_engine *engine;
	struct droce_engine_domain *dom;
	uint32_t pd;
	uint32_t xrcd;			/* XRC target: its XRC domain */
	struct droce_engine_cq *scq;
	struct droce_engine_cq *rcq;
	struct droce_engine_srq *srq;
	bool sq_sig_all;
	struct droce_shm_qp *ctl;
	uint8_t *sq_ring;
	uint32_t sq_size;
	uint32_t sq_stride;
	uint32_t sq_max_sge;
	uint32_t max_inline;
	uint8_t *rq_ring;
	uint32_t rq_size;
	uint32_t rq_stride;
	uint32_t rq_max_sge;
	uint32_t db_slot;

	/* ---- Owned by the engine ---- */
	/*
	 * Where R_Keys arriving here are resolved: the QP's domain and PD, or for an XRC
	 * target the SRQ's of the request in hand (resp_xrc sets them per packet).
	 */
	struct droce_engine_domain *key_dom;
	uint32_t key_pd;
	uint8_t state;
	uint32_t lists;			/* enum engine_qp_list */
	TAILQ_ENTRY(droce_engine_qp) active_link;
	TAILQ_ENTRY(droce_engine_qp) timer_link;
	TAILQ_ENTRY(droce_engine_qp) ack_link;
	TAILQ_ENTRY(droce_engine_qp) err_link;
	TAILQ_ENTRY(droce_engine_qp) read_link;
	struct droce_shm_qp_attr attr;	/* as last applied, for query */
	struct droce_wire_tmpl tmpl;	/* RC/UC: the path to the peer */
	uint32_t mtu;
	uint32_t dest_qpn;
	uint32_t qkey;
	uint64_t ack_timeout_tsc;	/* 0: no local ACK timer */

	/* Congestion control (engine_cc.c, doc/congestion.md). */
	struct {
		bool rp;		/* reaction point on: ECN-capable, CNPs cut its rate */
		uint8_t prio;		/* 802.1p priority of its path */
		struct droce_cc_rp rp_state;
		struct droce_cc_np np;
		uint64_t next_tsc;	/* pacing: the next request packet may leave then */
		uint64_t pace_deadline;	/* TSC; 0: not waiting for its rate */
		struct droce_wire_tmpl cnp_tmpl;	/* RC/UC: the path for CNPs */
	} cc;

	/* Linux's names (droce_engine.h); its owner engine alone writes them. */
	struct droce_engine_qp_counters cnt;

	/* Requester and completer (engine_req.c, engine_comp.c). */
	struct {
		uint8_t *copy;		/* sq_size slots of sq_stride bytes */
		struct engine_swqe *wq;	/* sq_size entries */
		uint32_t fetch;		/* next SQ index to copy from the ring */
		uint32_t cons;		/* oldest WQE not retired */
		uint32_t cur;		/* WQE being sent */
		uint32_t cur_off;	/* its bytes already sent */
		uint32_t psn;		/* next PSN to send */
		uint32_t psn_max;	/* one past the highest PSN ever sent */
		uint32_t una;		/* oldest PSN not acknowledged */
		uint32_t next_psn;	/* first PSN of the next WQE fetched */
		uint32_t since_ackreq;	/* packets sent since the last AckReq */
		uint8_t retry_left;
		uint8_t rnr_left;
		bool rnr_wait;
		bool kick;		/* moved to RTS: fetch what was posted (req_send) */
		bool rd_resume;		/* a READ was asked again: wait for its answer */
		bool drained;		/* SQD reached with nothing outstanding */
		/* enum comp_state a send last failed in + 1 (0: none), for debug output. */
		uint8_t comp_failed_in;
		uint64_t ack_deadline;	/* TSC; 0: no ACK timer running */
		uint64_t rnr_deadline;
		/*
		 * Early retransmission (doc/engine.md): the round trip, smoothed as RFC 6298
		 * does, from one packet at a time (rtt_sent: when the sampled PSN rtt_psn left;
		 * 0: none in flight); and the deadline before the local ACK timeout at which
		 * the requester goes back to una once for that una, without spending a retry.
		 */
		uint64_t rtt_sent;
		uint32_t rtt_psn;
		uint8_t early_count;	/* early go-backs since una last moved */
		uint8_t early_shift;	/* the early wait x 2^shift: spurious ones seen */
		uint64_t early_at;	/* TSC of the last early go-back; 0: none pending */
		uint64_t srtt, rttvar;	/* TSC ticks; srtt 0: no sample yet */
		uint64_t early_deadline;	/* TSC; 0: none */
	} req;

	/* Responder (engine_resp.c). */
	struct {
		uint32_t epsn;		/* next PSN expected */
		uint32_t msn;
		uint32_t rq_cons;	/* next RQ index to take (no SRQ) */
		uint32_t xsrqn;		/* XRC target: the SRQ of the message in progress */
		uint32_t rq_done;	/* RQ entries completed (published: ctl->rq_done) */
		bool nak_sent;		/* in an out-of-sequence episode (one NAK per episode) */
		uint8_t state;		/* enum resp_state: the message in progress */
		uint8_t step;		/* enum resp_step: where the last RC request got to */
		bool have_wqe;
		uint32_t off;		/* bytes of the message placed */
		uint32_t ack_psn;	/* PSN the next coalesced ACK acknowledges */
		struct engine_rwqe wqe;
		/* The RDMA WRITE in progress, from its RETH (9.4.3). */
		uint64_t va;		/* where its next byte goes */
		uint32_t rkey;
		uint32_t resid;		/* bytes still to come */
		uint32_t dma_len;	/* the whole transfer */
		/* READs: the last ones accepted, slot i & (ENGINE_RD_RES - 1). */
		struct engine_rd_res rd[ENGINE_RD_RES];
		uint32_t rd_head;	/* slot of the next READ */
		uint32_t rd_send;	/* oldest slot that may have responses to send */
		bool ack_deferred;	/* an ACK waits behind READ responses */
		bool comm_est;		/* COMM_EST raised since RESET (resp_rx) */
	} resp;
};

/*
 * FLUSH and ATOMIC WRITE (IBA 1.5): one PSN each, answered like a READ of nothing, an RDMA
 * READ RESPONSE ONLY without payload, and so counted as READs (responder resources).
 */
static inline bool
swqe_read_ack(const struct engine_swqe *w)
{
	return w->wc_opcode == DROCE_SHM_WC_FLUSH || w->wc_opcode == DROCE_SHM_WC_ATOMIC_WRITE;
}

/* A READ or an atomic: answered by response packets, counted by max_rd_atomic. */
static inline bool
swqe_rd_atomic(const struct engine_swqe *w)
{
	return w->wc_opcode == DROCE_SHM_WC_RDMA_READ || w->wc_opcode == DROCE_SHM_WC_COMP_SWAP ||
	       w->wc_opcode == DROCE_SHM_WC_FETCH_ADD || swqe_read_ack(w);
}

/* A local memory operation (BIND_MW, LOCAL_INV): no packet, no PSN (npkts 0). */
static inline bool
swqe_local(const struct engine_swqe *w)
{
	return w->wc_opcode == DROCE_SHM_WC_BIND_MW || w->wc_opcode == DROCE_SHM_WC_LOCAL_INV;
}

/* The engine's private copy of slot i of the send ring. */
static inline struct engine_swqe *
qp_swqe(const struct droce_engine_qp *qp, uint32_t i)
{
	return &qp->req.wq[i & (qp->sq_size - 1)];
}

/* ---- UD multicast (engine_obj_mcast.c, engine_mcast.c) ---- */

struct engine_mcast_group {
	uint8_t mgid[16];
	uint32_t nb;
	uint32_t qpn[DROCE_ENGINE_MAX_MCAST_QPS];
};

struct engine_mcast_table {
	uint32_t nb;
	struct engine_mcast_group grp[DROCE_ENGINE_MAX_MCAST_GRPS];
};

#endif /* ENGINE_OBJECTS_H */
