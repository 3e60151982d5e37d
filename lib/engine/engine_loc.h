/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ENGINE_LOC_H
#define ENGINE_LOC_H

/*
 * lib/engine's internal functions, grouped by the file that defines them, in the order of
 * the layers (layers.txt): the control side's object files, the stages, the services; with
 * the few types that only carry a call's arguments (struct engine_cmd, engine_wc,
 * resp_src) and two small inlines that several files share (is_pow2, resp_src_copy).
 * What the functions work on is elsewhere, by kind: the objects and their inline
 * accessors in engine_objects.h, the tunables and limits in engine_params.h, the
 * responder's and completer's states in engine_states.h. This header includes them all,
 * so a file of the library includes it alone.
 */

#include <string.h>

#include <rte_common.h>
#include <rte_log.h>
#include <rte_mbuf.h>

#include <droce_wire_gid.h>

#include "droce_engine.h"
#include "engine_objects.h"
#include "engine_params.h"
#include "engine_states.h"

/* The library's log type, droce.engine (registered in engine_obj_dev.c). */
extern int droce_engine_logtype;
#define ENGINE_LOG(level, ...) \
	rte_log(RTE_LOG_ ## level, droce_engine_logtype, "droce.engine: " __VA_ARGS__)

/* ---- The control side's object files (engine_obj_*.c) ---- */

/* A size that must be a power of two: rings, tables. */
static inline bool
is_pow2(uint32_t v)
{
	return v != 0 && (v & (v - 1)) == 0;
}

/* ---- Addresses: neighbours, paths, AHs (engine_obj_ah.c) ---- */

/* The neighbour's MAC for gid: 0 or -EHOSTUNREACH. */
int dev_neigh_lookup(const struct droce_engine_dev *dev, const uint8_t gid[16], uint8_t mac[6]);
/*
 * Builds the addresses of a path from engine e to the AV's destination: a connected QP's
 * (qp: DCQCN may make it ECN-capable) or a UD AH's.
 */
int path_resolve(struct droce_engine *e, const struct droce_shm_ah_attr *ah, bool qp,
		 struct droce_wire_addr *a);

/* ---- Ports and the EAL's interrupt thread (engine_port.c) ---- */

/*
 * Devices whose engines an unmapping on the interrupt thread waits for (on: dev_create,
 * off: dev_destroy), and the lock an engine is unpublished under (droce_engine_destroy).
 */
void engine_port_dev_track(struct droce_engine_dev *dev, bool on);
void engine_port_lock(void);
void engine_port_unlock(void);

/* ---- UD multicast: attach and detach (engine_obj_mcast.c) ---- */

/* Control thread: a QP being destroyed leaves every group it is attached to. */
void mcast_qp_gone(struct droce_engine_dev *dev, uint32_t qpn);

/* ---- Receive stage (engine_rx.c) ---- */

/* Receives, steers and dispatches a burst from the port and one from the handoff ring. */
unsigned int rx_stage(struct droce_engine *e);

/* ---- Requester (engine_req.c) ---- */

/* Rewinds the requester to PSN psn (go-back-N) or skips forward to it. */
void req_seek(struct droce_engine_qp *qp, uint32_t psn);
/* The early retransmission deadline armed from now, if there is one (engine_timer.c). */
void req_early_arm(struct droce_engine_qp *qp);
/* Stages: doorbells, the requester's round robin, the timers. */
unsigned int req_stage_doorbells(struct droce_engine *e);
unsigned int req_stage_send(struct droce_engine *e);
void req_stage_timers(struct droce_engine *e);

/* ---- Responder: requests (engine_resp.c) ---- */

void resp_rx(struct droce_engine_qp *qp, const struct droce_wire_pkt *pkt,
	     const struct droce_wire_seg *segs, unsigned int nseg);

/* ---- Responder: receive WQEs (engine_resp_rwqe.c) ---- */

/* Where payload bytes come from: a received packet, or a flat buffer (the GRH area). */
struct resp_src {
	const struct droce_wire_pkt *pkt;
	const struct droce_wire_seg *segs;
	unsigned int nseg;
	const uint8_t *flat;
};

/* len bytes of src from its byte off to dst. */
static inline void
resp_src_copy(const struct resp_src *src, uint32_t off, uint8_t *dst, uint32_t len)
{
	if (src->flat != NULL)
		memcpy(dst, src->flat + off, len);
	else
		droce_wire_payload_copy(src->pkt, src->segs, src->nseg, off, dst, len);
}

/*
 * Writes len bytes from src into the WQE's buffers starting at message offset off, each
 * SGE checked through its lkey for local write (IB 10.6.3.3): 0 or -EACCES.
 */
int resp_place(struct droce_engine_qp *qp, const struct engine_rwqe *w, uint32_t off,
	       uint32_t len, const struct resp_src *src);
/*
 * Takes one WQE from the SRQ into *w (any engine): 1, 0 when empty, -EIO when the ring
 * indices are impossible (the application corrupted them).
 */
int engine_srq_take(struct droce_engine *e, struct droce_engine_srq *srq, struct engine_rwqe *w);
/* qp's next receive WQE into resp.wqe, from its SRQ or its RQ: 1, 0 when empty, -EIO. */
int resp_take(struct droce_engine_qp *qp);
/* Completes the WQE in hand (error or success) on the receive CQ. */
void resp_complete(struct droce_engine_qp *qp, const struct droce_wire_pkt *pkt,
		   uint8_t status, uint32_t byte_len);

/* ---- Responder: packets out, READ responses, ACKs and NAKs (engine_resp_tx.c) ---- */

/* Sends an ACKNOWLEDGE of psn with AETH syndrome (ACK, NAK or RNR NAK) and qp's MSN. */
void read_resp_aeth(struct droce_engine_qp *qp, uint32_t psn, uint8_t syndrome);
/* Has a READ accepted earlier responses left to send? Skips the finished ones. */
bool read_resp_pending(struct droce_engine_qp *qp);
/* Sends up to budget READ response packets of qp; returns how many. */
unsigned int read_resp_send(struct droce_engine_qp *qp, unsigned int budget);
/* Stage: round robin over QPs with READ or atomic responses owed. */
unsigned int read_resp_stage(struct droce_engine *e);
/* An ACK of psn owed: the ACK stage sends one, coalesced, at the end of the rx burst. */
void resp_schedule_ack(struct droce_engine_qp *qp, uint32_t psn);
/* An error NAK (code) at the expected PSN, after the READ responses owed before it. */
void resp_nak(struct droce_engine_qp *qp, uint8_t code);
/* 9.7.5.2.8: no receive WQE -> RNR NAK with psn; later packets stay silent. */
void resp_rnr_nak(struct droce_engine_qp *qp, uint32_t psn);
/* Stage: one coalesced ACK for each QP that asked for one during the rx stage. */
void resp_stage_acks(struct droce_engine *e);

/* ---- Completer (engine_comp.c) ---- */

void comp_rx(struct droce_engine_qp *qp, const struct droce_wire_pkt *pkt,
	     const struct droce_wire_seg *segs, unsigned int nseg);

/* ---- Commands (engine_cmd.c) ---- */

enum engine_cmd_type {
	ENGINE_CMD_QP_MODIFY,
	ENGINE_CMD_QP_DEL,
	ENGINE_CMD_DOMAIN_ADD,
	ENGINE_CMD_DOMAIN_DEL,
	ENGINE_CMD_SYNC,
};

struct engine_cmd {
	enum engine_cmd_type type;
	struct droce_engine_qp *qp;
	struct droce_engine_domain *dom;
	struct droce_shm_qp_attr attr;
	struct droce_wire_addr addr;	/* resolved path of an AV */
	int result;
	_Atomic uint32_t done;
};

/* Runs cmd on engine e and waits for it (control thread). */
int engine_cmd_run(struct droce_engine *e, struct engine_cmd *cmd);
/* Stage: applies every queued command; returns how many. */
unsigned int engine_cmd_stage(struct droce_engine *e);
/* Returns once every running engine has finished the loop pass it was in. */
void engine_quiesce(struct droce_engine_dev *dev);

/* ---- QP (engine_qp.c) ---- */

/* Moves the QP to ERR: completes what failed, flushes the rest (IB 11.6.3). */
void qp_to_error(struct droce_engine_qp *qp);
/* Completes every WR still in the send and receive rings with IBV_WC_WR_FLUSH_ERR. */
void qp_flush(struct droce_engine_qp *qp);
/* Stage: every QP in ERR flushes what was posted since the last pass (11.6.3). */
void qp_stage_errors(struct droce_engine *e);
/* n more receive-ring entries have their completions written. */
void qp_rq_done(struct droce_engine_qp *qp, uint32_t n);
/* Applies a modify on the owning engine. */
int qp_modify_apply(struct droce_engine_qp *qp, const struct droce_shm_qp_attr *attr,
		    const struct droce_wire_addr *addr);
void qp_list_add(struct droce_engine_qp *qp, enum engine_qp_list which);
void qp_list_del(struct droce_engine_qp *qp, enum engine_qp_list which);
/* Puts qp on the timer list; deadline (TSC) may be the engine's earliest. */
void qp_timer_arm(struct droce_engine_qp *qp, uint64_t deadline);
/* Send completion in the send CQ if the WQE asks for one (or failed). */
void qp_send_complete(struct droce_engine_qp *qp, struct engine_swqe *w, uint8_t status);
/* In SQD with nothing started left unfinished: drained, SQ_DRAINED if it was asked for. */
void qp_sqd_check(struct droce_engine_qp *qp);

/* ---- CQ (engine_cq.c) ---- */

/* An asynchronous event on dom's event ring, the control thread woken (any engine). */
void engine_event(struct droce_engine_domain *dom, uint32_t type, uint32_t handle);

/* The completion an engine fills before engine_cqe_write(). */
struct engine_wc {
	uint64_t wr_id;
	uint32_t byte_len;
	uint32_t imm_data;
	uint32_t qp_num;
	uint32_t src_qp;
	uint16_t wc_flags;
	uint8_t status;
	uint8_t opcode;
	uint8_t sl;
	bool solicited;
};

/*
 * A UD receive's wc.sl over RoCE, as mlx5 reports it (its PRM, "responder UD over RoCE"):
 * bit 3 the frame has a UDP header (RoCEv2), bits 2..0 the L3 header: 1 IPv6, 2 IPv4.
 * UCX's ud_verbs reads it (wc.sl & 7) to find the destination address in the GRH area.
 */
#define ENGINE_WC_SL_ROCEV2	0x8u
#define ENGINE_WC_SL_IPV6	0x1u
#define ENGINE_WC_SL_IPV4	0x2u

/*
 * Writes a completion (any engine). false on overrun: the CQ is then in error, the
 * CQ_ERR event raised once, and the caller moves its QP to the error state.
 */
bool engine_cqe_write(struct droce_engine *e, struct droce_engine_cq *cq, const struct engine_wc *wc);
/* n IBV_WC_WR_FLUSH_ERR completions of qp's WRs wr_id[0..n-1]: send WRs on its send CQ,
 * else receive WRs on its receive CQ. */
void engine_cqe_flush(struct droce_engine_qp *qp, bool send, const uint64_t *wr_id, uint32_t n);

/* ---- Memory keys (engine_mr.c) ---- */

/* Where [addr, addr + len) of lkey lives, or NULL: wrong key, PD, access or range. MRs only. */
uint8_t *mr_resolve(const struct droce_engine_domain *dom, uint32_t key, uint32_t pd,
		    uint32_t access, uint64_t addr, uint64_t len);
/*
 * The same for an R_Key arriving at qp: an MR of its PD, or a window bound in its PD (a
 * type 2 one to qp itself) that grants access on the range, over an MR still registered.
 */
uint8_t *mr_resolve_rkey(const struct droce_engine_qp *qp, uint32_t rkey, uint32_t access,
			 uint64_t addr, uint64_t len);
/*
 * May a FLUSH with access (DROCE_SHM_ACCESS_FLUSH_*) reach rkey's MR at qp: the range
 * [addr, addr + len) (whole: the MR itself, whatever the range)? Windows never do.
 */
bool mr_rkey_flushable(const struct droce_engine_qp *qp, uint32_t rkey, uint32_t access,
		       bool whole, uint64_t addr, uint64_t len);
/* Executes a BIND_MW WQE of qp: DROCE_SHM_WC_SUCCESS or DROCE_SHM_WC_MW_BIND_ERR. */
uint8_t mw_bind(struct droce_engine_qp *qp, const struct droce_shm_swqe *s);
/*
 * Invalidates the type 2 window rkey names for qp (LOCAL_INV; remote: Send with Invalidate,
 * which must come to the QP the window is bound to): 0 or -EINVAL.
 */
int mw_invalidate(struct droce_engine_qp *qp, uint32_t rkey, bool remote);
/* Control thread: a window's binding taken away (dealloc), writers excluded. */
void mw_unbind_all(struct engine_mr *mw);

/* ---- UD multicast (engine_mcast.c) ---- */

/* The device's group table now (acquire; valid for the rest of the pass), or NULL. */
const struct engine_mcast_table *mcast_table(const struct droce_engine_dev *dev);
/* Group gid of table t, or NULL. */
struct engine_mcast_group *mcast_find(const struct engine_mcast_table *t, const uint8_t gid[16]);
/* A multicast GID's Ethernet address (RFC 1112, RFC 2464): 0 or -EINVAL. */
int mcast_mac(const uint8_t gid[16], uint8_t mac[6]);
/* Is any QP of the device attached to a group? (any engine) */
bool mcast_any(const struct droce_engine_dev *dev);
/* A packet to DestQP 0xFFFFFF: a copy to every QP attached to its destination's group. */
void mcast_rx(struct droce_engine *e, struct rte_mbuf *m, const struct droce_wire_pkt *pkt);

/* ---- Transmit (engine_tx.c) ---- */

uint16_t engine_tx_flush(struct droce_engine *e);	/* packets the port took */
/* Stage: frames from the control thread's slow_tx ring, as many as there is room for. */
unsigned int engine_tx_slow(struct droce_engine *e);

/*
 * Builds a packet of qp with template tmpl: headers from h, payload_len bytes of payload
 * filled by the caller at the returned pointer (NULL: no mbuf), and closed with
 * engine_pkt_finish() once the payload is in.
 */
uint8_t *engine_pkt_start(struct droce_engine *e, const struct droce_wire_tmpl *tmpl,
			  const struct droce_wire_hdrs *h, uint32_t payload_len,
			  struct rte_mbuf **mp);
void engine_pkt_finish(struct droce_engine *e, struct droce_engine_qp *qp,
		       const struct droce_wire_tmpl *tmpl, struct rte_mbuf *m);

/* ---- Capture (engine_tap.c) ---- */

/*
 * The frames pkts[0..n) of e's port, received (rx) or about to be sent, copied into the
 * capture's ring where they match it. Called only with e->tap set.
 */
void engine_tap_burst(struct droce_engine *e, struct droce_engine_tap *tap,
		      struct rte_mbuf *const *pkts, uint16_t n, bool rx);

/* ---- Timers (engine_timer.c) ---- */

/* 4.096 us * 2^timeout in TSC ticks (IB 9.7.6.1.3); 0 for timeout 0 (no timer). */
uint64_t engine_ack_timeout_tsc(const struct droce_engine *e, unsigned int timeout);
/* RNR NAK timer code (IB table 45) in TSC ticks. */
uint64_t engine_rnr_timer_tsc(const struct droce_engine *e, unsigned int code);
/* Has the earliest deadline of e's timer list possibly passed (e->now)? */
bool engine_timers_due(const struct droce_engine *e);
/* The earlier of next and qp's running timers' deadlines. */
uint64_t engine_timer_earliest(const struct droce_engine_qp *qp, uint64_t next);
/* A request packet left: the next round-trip sample starts with it if none runs. */
void engine_rtt_sent(struct droce_engine_qp *qp);
/*
 * una moved on at e->now: the sample ends if it passed the sampled PSN; no early go-back
 * yet. beyond: una passed the requester's next PSN (what a rewind has resent so far).
 */
void engine_rtt_acked(struct droce_engine_qp *qp, bool beyond);
/* A go-back: the sample is void (Karn: a resent packet's ACK is ambiguous). */
void engine_rtt_void(struct droce_engine_qp *qp);
/* With the local ACK timer armed: the early deadline from e->now, or 0 for none. */
uint64_t engine_early_deadline(const struct droce_engine_qp *qp);

/* ---- Sleeping (engine_wait.c) ---- */

/* The epoll set and the rx interrupt of a new engine: 0, or -errno. */
int engine_wait_init(struct droce_engine *e, const struct droce_engine_conf *conf);
void engine_wait_fini(struct droce_engine *e);
/* A domain's wake-up eventfd for e joins (add) or leaves e's epoll set. 0 or -errno. */
int engine_wait_fd_add(struct droce_engine *e, int fd);
void engine_wait_fd_del(struct droce_engine *e, int fd);
/* The thread that runs e: its timer slack, so that short sleeps end when asked. */
void engine_wait_thread_init(const struct droce_engine *e);
/* The run loop's idle step: spin, or sleep until woken (e->wait). */
void engine_idle(struct droce_engine *e);
/*
 * The first rx burst after a sleep on the rx interrupt that ended at its bound found n
 * packets: an interrupt that never came, after DROCE_ENGINE_RX_INTR_MISSES in a row.
 */
void engine_wait_rx_checked(struct droce_engine *e, unsigned int n);
/*
 * After a burst that put packets on other engines' handoff rings (e->handoff_to): wakes
 * those that sleep, with one fence for the burst.
 */
void engine_handoffs_wake(struct droce_engine *e);

/* ---- Congestion control (engine_cc.c) ---- */

/* The port's congestion parameters and line rate into a new engine. */
void cc_engine_init(struct droce_engine *e, const struct droce_engine_conf *conf);
/*
 * A resolved path's DSCP, ECN and VLAN tag by the port's parameters and the AV's SL;
 * reacts: a connected QP's path, made ECN-capable where its priority runs DCQCN.
 */
void cc_path_qos(const struct droce_engine *e, uint8_t sl, bool reacts, struct droce_wire_addr *a);
/* qp's new path a (cc_path_qos'd, with its AV's sl): CNP template, priority, reaction point. */
int cc_qp_path(struct droce_engine_qp *qp, const struct droce_wire_addr *a, uint8_t sl);
/* qp's rate machine, pacer and CNP interval from scratch (a new path, RESET); counters kept. */
void cc_qp_restart(struct droce_engine_qp *qp);
/* A CE-marked packet for qp: a CNP to its sender, at most one per interval. */
void cc_rx_ce(struct droce_engine_qp *qp, const struct droce_wire_pkt *pkt);
/* A CNP for qp: the reaction point cuts its rate. */
void cc_rx_cnp(struct droce_engine_qp *qp);
/* A limited qp sent bytes: the byte counter and the pacer's next deadline. */
void cc_sent(struct droce_engine_qp *qp, uint32_t bytes);

#endif /* ENGINE_LOC_H */
