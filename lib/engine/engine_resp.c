/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Responder (IB spec 9.7.5.1, 9.8.3): checks each request's PSN and opcode sequence, takes
 * a receive WQE from the RQ or SRQ, scatters the payload into it, writes the completion,
 * and answers RC requests with coalesced ACKs, NAKs and RNR NAKs. RDMA WRITEs go through
 * the R_Key of their RETH into the QP's memory regions. UC drops what it cannot take; UD
 * adds the 40-byte GRH area. Runs on the QP's engine.
 *
 * This file decides what each request gets. The receive WQEs (take, place, complete) are
 * engine_resp_rwqe.c's, and the packets the responder sends (ACKs, NAKs, READ responses)
 * engine_resp_tx.c's; both are called from here only, never the other way.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "engine_loc.h"

/* ---- Refusals ---- */

/*
 * Why the responder refuses a request, one row each: the NAK an RC requester gets
 * (9.7.5.2.2) and the status of the receive WQE in hand, if there is one; without one the
 * QP just goes to ERR. UC and UD send no NAK.
 */
enum resp_err {
	RESP_ERR_OPCODE,	/* out of the opcode sequence, or a packet of the wrong length */
	RESP_ERR_RQ_BROKEN,	/* the receive ring's indices lie */
	RESP_ERR_TOO_LONG,	/* a SEND longer than its receive WQE */
	RESP_ERR_PLACE,		/* a receive SGE refused by its lkey */
	RESP_ERR_WRITE_INVALID,	/* remote write not allowed, over 2^31, or a length mismatch */
	RESP_ERR_WRITE_ACCESS,	/* the R_Key refuses the WRITE's range */
	RESP_ERR_READ_INVALID,	/* remote read not allowed, or over 2^31 */
	RESP_ERR_READ_ACCESS,	/* the R_Key refuses the READ's range */
	RESP_ERR_ATOMIC_INVALID,	/* remote atomics not allowed, or misaligned */
	RESP_ERR_ATOMIC_ACCESS,	/* the R_Key refuses the atomic's 8 bytes */
	RESP_ERR_INVALIDATE,	/* a Send with Invalidate's R_Key is no window to invalidate */
	RESP_ERR_FLUSH_INVALID,	/* a FLUSH of a placement type the QP does not allow */
	RESP_ERR_FLUSH_ACCESS,	/* the R_Key refuses the FLUSH */
	RESP_ERR_XRC_SRQ,	/* an XRCETH naming no XRC SRQ of the target's XRC domain */
};

#define RESP_ERR_STAT(f)	offsetof(struct droce_engine_stats, f)

static const struct {
	const char *name;
	uint8_t nak;		/* DROCE_NAK_* */
	uint8_t status;		/* enum droce_shm_wc_status of the WQE in hand */
	uint16_t stat;		/* its counter, resp_err_*: offset in the engine's stats */
} resp_errs[] = {
	[RESP_ERR_OPCODE] = { "bad opcode sequence or length", DROCE_NAK_INVALID_REQ,
			      DROCE_SHM_WC_REM_INV_REQ_ERR,
		RESP_ERR_STAT(resp_err_opcode) },
	[RESP_ERR_RQ_BROKEN] = { "receive ring broken", DROCE_NAK_REMOTE_OP,
				 DROCE_SHM_WC_REM_INV_REQ_ERR,
		RESP_ERR_STAT(resp_err_rq_broken) },
	[RESP_ERR_TOO_LONG] = { "message longer than the receive WQE", DROCE_NAK_INVALID_REQ,
				DROCE_SHM_WC_LOC_LEN_ERR,
		RESP_ERR_STAT(resp_err_too_long) },
	[RESP_ERR_PLACE] = { "receive SGE refused", DROCE_NAK_REMOTE_OP,
			     DROCE_SHM_WC_LOC_PROT_ERR,
		RESP_ERR_STAT(resp_err_place) },
	[RESP_ERR_WRITE_INVALID] = { "WRITE refused", DROCE_NAK_INVALID_REQ,
				     DROCE_SHM_WC_REM_INV_REQ_ERR,
		RESP_ERR_STAT(resp_err_write_invalid) },
	[RESP_ERR_WRITE_ACCESS] = { "WRITE R_Key refused", DROCE_NAK_REMOTE_ACCESS,
				    DROCE_SHM_WC_REM_ACCESS_ERR,
		RESP_ERR_STAT(resp_err_write_access) },
	[RESP_ERR_READ_INVALID] = { "READ refused", DROCE_NAK_INVALID_REQ,
				    DROCE_SHM_WC_REM_INV_REQ_ERR,
		RESP_ERR_STAT(resp_err_read_invalid) },
	[RESP_ERR_READ_ACCESS] = { "READ R_Key refused", DROCE_NAK_REMOTE_ACCESS,
				   DROCE_SHM_WC_REM_ACCESS_ERR,
		RESP_ERR_STAT(resp_err_read_access) },
	[RESP_ERR_ATOMIC_INVALID] = { "atomic refused", DROCE_NAK_INVALID_REQ,
				      DROCE_SHM_WC_REM_INV_REQ_ERR,
		RESP_ERR_STAT(resp_err_atomic_invalid) },
	[RESP_ERR_ATOMIC_ACCESS] = { "atomic R_Key refused", DROCE_NAK_REMOTE_ACCESS,
				     DROCE_SHM_WC_REM_ACCESS_ERR,
		RESP_ERR_STAT(resp_err_atomic_access) },
	/* As rxe: invalid request there, the receive WQE in error here (10.6.7.2.3). */
	[RESP_ERR_INVALIDATE] = { "IETH R_Key not invalidated", DROCE_NAK_INVALID_REQ,
				  DROCE_SHM_WC_REM_INV_REQ_ERR,
		RESP_ERR_STAT(resp_err_invalidate) },
	[RESP_ERR_FLUSH_INVALID] = { "FLUSH refused", DROCE_NAK_INVALID_REQ,
				     DROCE_SHM_WC_REM_INV_REQ_ERR,
		RESP_ERR_STAT(resp_err_flush_invalid) },
	[RESP_ERR_FLUSH_ACCESS] = { "FLUSH R_Key refused", DROCE_NAK_REMOTE_ACCESS,
				    DROCE_SHM_WC_REM_ACCESS_ERR,
		RESP_ERR_STAT(resp_err_flush_access) },
	[RESP_ERR_XRC_SRQ] = { "XRC SRQ refused", DROCE_NAK_INVALID_REQ,
			       DROCE_SHM_WC_REM_INV_REQ_ERR,
		RESP_ERR_STAT(resp_err_xrc_srq) },
};

/*
 * The one way a request fails at the responder: its NAK (RC), then the WQE in hand
 * completes with the row's status, which moves the QP to ERR, or the QP goes there now.
 */
static void
resp_fail(struct droce_engine_qp *qp, const struct droce_wire_pkt *pkt, enum resp_err err)
{
	ENGINE_LOG(DEBUG, "QP %u: responder %s, step %s, PSN %u: %s\n", qp->qpn,
		   resp_state_name(qp->resp.state),
		   qp->reliable ? resp_step_name(qp->resp.step) : "-",
		   droce_bth_psn(droce_pkt_bth(pkt)), resp_errs[err].name);
	(*(uint64_t *)((uint8_t *)&qp->engine->st + resp_errs[err].stat))++;
	if (resp_errs[err].nak == DROCE_NAK_REMOTE_ACCESS)
		ENGINE_QP_COUNT(qp, resp_remote_access_errors);
	else if (err == RESP_ERR_TOO_LONG)
		ENGINE_QP_COUNT(qp, resp_local_length_error);
	if (qp->reliable)
		resp_nak(qp, resp_errs[err].nak);
	if (qp->resp.have_wqe)
		resp_complete(qp, pkt, resp_errs[err].status, 0);
	else
		qp_to_error(qp);
}

/* ---- RDMA WRITE ---- */

/*
 * Starts the transfer of a WRITE FIRST or ONLY packet from its RETH: 0, -EINVAL (invalid
 * request: the QP does not allow remote writes, or the length is over 2^31) or -EACCES
 * (the R_Key does not grant remote write on the whole range: remote access error).
 */
static int
resp_write_start(struct droce_engine_qp *qp, const struct droce_wire_pkt *pkt)
{
	const struct droce_reth *reth = droce_pkt_reth(pkt);
	uint64_t va = droce_reth_va(reth);
	uint32_t rkey = droce_reth_rkey(reth);
	uint32_t len = droce_reth_len(reth);

	/* A QP not enabled for remote writes refuses them with invalid request, as rxe does. */
	if (!(qp->attr.qp_access_flags & IBV_ACCESS_REMOTE_WRITE) || len > ENGINE_MSG_MAX)
		return -EINVAL;
	/* A zero-length transfer neither checks nor uses its R_Key (IB spec, RDMA WRITE). */
	if (len != 0 && mr_resolve_rkey(qp, rkey, IBV_ACCESS_REMOTE_WRITE, va, len) ==
	    NULL)
		return -EACCES;
	qp->resp.va = va;
	qp->resp.rkey = rkey;
	qp->resp.resid = len;
	qp->resp.dma_len = len;
	return 0;
}

/*
 * Writes a WRITE packet's plen bytes at the transfer's current address: 0 or -EACCES (the
 * region went away during the transfer). The last byte of a message is stored last, with
 * release: programs poll it to learn the data arrived (ib_write_lat does).
 */
static int
resp_write_data(struct droce_engine_qp *qp, const struct resp_src *src, uint32_t plen, bool last)
{
	uint8_t *dst = mr_resolve_rkey(qp, qp->resp.rkey, IBV_ACCESS_REMOTE_WRITE, qp->resp.va,
				       plen);
	uint8_t tail;

	if (dst == NULL)
		return -EACCES;
	if (last) {
		resp_src_copy(src, 0, dst, plen - 1);
		resp_src_copy(src, plen - 1, &tail, 1);
		__atomic_store_n(dst + plen - 1, tail, __ATOMIC_RELEASE);
	} else {
		resp_src_copy(src, 0, dst, plen);
	}
	qp->resp.va += plen;
	qp->resp.resid -= plen;
	return 0;
}

/*
 * Checks and places one in-sequence WRITE packet (either transport): 0, -EINVAL or
 * -EACCES as resp_write_start() says, or -EAGAIN when a WRITE with immediate found no
 * receive WQE, -EIO when the receive ring lies. The WQE is taken before any byte of the
 * packet lands, so an RNR NAK leaves the packet's PSN unexecuted.
 */
static int
resp_write(struct droce_engine_qp *qp, const struct droce_wire_pkt *pkt, const struct resp_src *src)
{
	uint32_t flags = pkt->info->flags;
	uint32_t plen = pkt->payload_len;
	int rc;

	if (flags & DROCE_OPF_FIRST) {
		rc = resp_write_start(qp, pkt);
		if (rc != 0)
			return rc;
	}
	/* Length check: no byte beyond the RETH length, none missing at the LAST packet. */
	if (plen > qp->resp.resid || ((flags & DROCE_OPF_LAST) && plen != qp->resp.resid))
		return -EINVAL;
	/* Only a WRITE with immediate consumes a receive WQE, on its last packet. */
	if ((flags & DROCE_OPF_RWQE) && !qp->resp.have_wqe) {
		rc = resp_take(qp);
		if (rc <= 0)
			return rc == 0 ? -EAGAIN : -EIO;
	}
	if (plen != 0)
		return resp_write_data(qp, src, plen, (flags & DROCE_OPF_LAST) != 0);
	return 0;
}

/* ---- RDMA READ (RC) ---- */

/* How many READs the responder keeps: max_dest_rd_atomic, at least one. */
static uint32_t
resp_rd_limit(const struct droce_engine_qp *qp)
{
	return RTE_MAX(RTE_MIN((uint32_t)qp->attr.max_dest_rd_atomic, (uint32_t)ENGINE_RD_RES),
		       1u);
}

/*
 * A new responder resource (9.7.5.1) for the request at psn, spanning npkts PSNs: a READ,
 * an atomic, a FLUSH or an ATOMIC WRITE, executed now, answered from the READ-response
 * stage. A requester beyond max_dest_rd_atomic of them loses the oldest one's answer.
 */
static struct engine_rd_res *
resp_rd_res_new(struct droce_engine_qp *qp, uint32_t psn, uint32_t npkts)
{
	uint32_t limit = resp_rd_limit(qp);
	struct engine_rd_res *r;

	if (qp->resp.rd_head - qp->resp.rd_send >= limit)
		qp->resp.rd_send = qp->resp.rd_head - limit + 1;
	r = &qp->resp.rd[qp->resp.rd_head++ & (ENGINE_RD_RES - 1)];
	memset(r, 0, sizeof(*r));
	r->first_psn = r->start_psn = r->psn = psn;
	r->npkts = r->left = npkts;
	r->xsrqn = qp->resp.xsrqn;
	qp->resp.epsn = droce_psn_add(psn, npkts);
	qp->resp.nak_sent = false;
	qp->resp.msn = droce_psn_add(qp->resp.msn, 1);
	qp_list_add(qp, QP_ON_READ);
	return r;
}

/* Resource j answers its one-PSN request at psn again (a duplicate: never re-executed). */
static void
resp_rd_res_replay(struct droce_engine_qp *qp, uint32_t j, uint32_t psn)
{
	struct engine_rd_res *r = &qp->resp.rd[j & (ENGINE_RD_RES - 1)];

	r->start_psn = r->psn = psn;
	r->left = 1;
	if ((int32_t)(qp->resp.rd_send - j) > 0)
		qp->resp.rd_send = j;
	qp_list_add(qp, QP_ON_READ);
}

/*
 * An in-sequence READ request: checked like a WRITE's RETH (remote read this time), then
 * kept as a responder resource whose response the READ-response stage sends.
 * It takes one PSN per response packet and counts as a message at once (MSN).
 */
static void
resp_rc_read(struct droce_engine_qp *qp, const struct droce_wire_pkt *pkt)
{
	const struct droce_reth *reth = droce_pkt_reth(pkt);
	uint32_t psn = droce_bth_psn(droce_pkt_bth(pkt));
	uint64_t va = droce_reth_va(reth);
	uint32_t rkey = droce_reth_rkey(reth);
	uint32_t len = droce_reth_len(reth);
	struct engine_rd_res *r;

	if (!(qp->attr.qp_access_flags & IBV_ACCESS_REMOTE_READ) || len > ENGINE_MSG_MAX) {
		resp_fail(qp, pkt, RESP_ERR_READ_INVALID);
		return;
	}
	if (len != 0 && mr_resolve_rkey(qp, rkey, IBV_ACCESS_REMOTE_READ, va, len) ==
	    NULL) {
		resp_fail(qp, pkt, RESP_ERR_READ_ACCESS);
		return;
	}
	r = resp_rd_res_new(qp, psn, len == 0 ? 1 : (len + qp->mtu - 1) / qp->mtu);
	r->va = va;
	r->rkey = rkey;
	r->len = len;
}

/*
 * A duplicate READ request (9.7.5.1.2): the requester lost part of the response and asks
 * again from psn. It is answered again from the saved request, if one of the last
 * max_dest_rd_atomic READs holds psn and the RETH asks for the same bytes from there on;
 * otherwise it is dropped.
 */
static void
resp_read_dup(struct droce_engine_qp *qp, const struct droce_wire_pkt *pkt)
{
	const struct droce_reth *reth = droce_pkt_reth(pkt);
	uint32_t psn = droce_bth_psn(droce_pkt_bth(pkt));
	uint32_t limit = resp_rd_limit(qp);
	uint32_t k, j, d, off;
	struct engine_rd_res *r = NULL;

	for (k = 1; k <= limit; k++) {
		j = qp->resp.rd_head - k;
		r = &qp->resp.rd[j & (ENGINE_RD_RES - 1)];
		if (droce_psn_dist(r->first_psn, psn) < r->npkts)
			break;
		r = NULL;
	}
	if (r == NULL || r->atomic)
		return;
	d = droce_psn_dist(r->first_psn, psn);
	off = d * qp->mtu;
	if (droce_reth_va(reth) != r->va + off || droce_reth_rkey(reth) != r->rkey ||
	    droce_reth_len(reth) != r->len - off)
		return;
	ENGINE_STAT(qp->engine, rd_replay);
	r->start_psn = r->psn = psn;
	r->off = off;
	r->left = r->npkts - d;
	if ((int32_t)(qp->resp.rd_send - j) > 0)
		qp->resp.rd_send = j;
	qp_list_add(qp, QP_ON_READ);
}

/* ---- Atomics (RC, IB 9.4.5) ---- */

/*
 * An in-sequence COMPARE SWAP or FETCH ADD. Checked as rxe does: the QP must allow
 * remote atomics (else invalid request), the R_Key must grant remote atomic access on the
 * 8 bytes (else remote access error), the address must be 8-byte aligned (else invalid
 * request); each refusal NAKs and moves the QP to ERR. It executes at once, atomically
 * with respect to the CPU and every other engine: a 64-bit __atomic operation on the
 * target in host byte order, as Linux rxe does. The original value is kept in a
 * responder resource (shared with READs) so that a duplicate is answered, never
 * executed again; the ATOMIC ACKNOWLEDGE goes out from the READ-response stage in order
 * with READ responses.
 */
static void
resp_rc_atomic(struct droce_engine_qp *qp, const struct droce_wire_pkt *pkt)
{
	const struct droce_atmeth *ath = droce_pkt_atmeth(pkt);
	uint32_t psn = droce_bth_psn(droce_pkt_bth(pkt));
	uint64_t va = droce_atmeth_va(ath);
	uint64_t swap_add = droce_atmeth_swap_add(ath);
	struct engine_rd_res *r;
	uint64_t *target, orig;

	if (!(qp->attr.qp_access_flags & IBV_ACCESS_REMOTE_ATOMIC)) {
		resp_fail(qp, pkt, RESP_ERR_ATOMIC_INVALID);
		return;
	}
	target = (uint64_t *)mr_resolve_rkey(qp, droce_atmeth_rkey(ath), IBV_ACCESS_REMOTE_ATOMIC,
					     va, ENGINE_ATOMIC_LEN);
	if (target == NULL) {
		resp_fail(qp, pkt, RESP_ERR_ATOMIC_ACCESS);
		return;
	}
	/* Misaligned: invalid request (9.4.5); the host address shares va's alignment. */
	if ((va & (ENGINE_ATOMIC_LEN - 1)) != 0 ||
	    ((uintptr_t)target & (ENGINE_ATOMIC_LEN - 1)) != 0) {
		resp_fail(qp, pkt, RESP_ERR_ATOMIC_INVALID);
		return;
	}
	/* Compare and Swap, in RC's numbering or XRC's (table 38: the same low five bits). */
	if ((droce_bth_opcode(droce_pkt_bth(pkt)) & ~DROCE_TRANSPORT_MASK) ==
	    DROCE_OP_RC_COMPARE_SWAP) {
		orig = droce_atmeth_compare(ath);
		/* On a mismatch orig becomes the value found: either way the original. */
		__atomic_compare_exchange_n(target, &orig, swap_add, false, __ATOMIC_SEQ_CST,
					    __ATOMIC_SEQ_CST);
	} else {
		orig = __atomic_fetch_add(target, swap_add, __ATOMIC_SEQ_CST);
	}
	ENGINE_STAT(qp->engine, atomic_exec);
	r = resp_rd_res_new(qp, psn, 1);
	r->atomic = true;
	r->orig = orig;
	r->va = va;
	r->rkey = droce_atmeth_rkey(ath);
}

/*
 * A duplicate of a one-PSN request that a responder resource answers (9.7.5.1.2: never
 * executed again): an atomic (its saved original value), a FLUSH or an ATOMIC WRITE (a
 * READ response of nothing). Answered again if one of the last max_dest_rd_atomic
 * resources is that request (same PSN, address and key); one no longer kept is dropped,
 * as rxe does: the requester never has more than max_rd_atomic unanswered, so only a
 * stale copy of an answered one can miss.
 */
static void
resp_one_psn_dup(struct droce_engine_qp *qp, uint32_t psn, bool atomic, uint64_t va,
		 uint32_t rkey)
{
	uint32_t limit = resp_rd_limit(qp);
	uint32_t k, j;

	for (k = 1; k <= limit; k++) {
		const struct engine_rd_res *r;

		j = qp->resp.rd_head - k;
		r = &qp->resp.rd[j & (ENGINE_RD_RES - 1)];
		if (r->atomic == atomic && (atomic || r->len == 0) && r->first_psn == psn &&
		    r->va == va && r->rkey == rkey) {
			if (atomic)
				ENGINE_STAT(qp->engine, atomic_replay);
			else
				ENGINE_STAT(qp->engine, rd_replay);
			resp_rd_res_replay(qp, j, psn);
			return;
		}
	}
}

/* ---- FLUSH and ATOMIC WRITE (RC, IBA 1.5) ---- */

/*
 * An in-sequence ATOMIC WRITE: its 8 bytes stored at the RETH's address as one aligned
 * 64-bit store, with release so that everything the responder placed before is visible
 * first (oA19-28), checked as rxe does: the QP must allow remote writes (else invalid
 * request), the R_Key must grant remote write on the 8 bytes (else remote access error),
 * the address must be 8-byte aligned (else invalid request), the RETH length and the
 * payload 8 bytes (else invalid request). Answered, like a READ of nothing, by an RDMA
 * READ RESPONSE ONLY without payload from a responder resource, so a duplicate is
 * answered again and never stored twice.
 */
static void
resp_rc_atomic_write(struct droce_engine_qp *qp, const struct droce_wire_pkt *pkt,
		     const struct resp_src *src)
{
	const struct droce_reth *reth = droce_pkt_reth(pkt);
	uint32_t psn = droce_bth_psn(droce_pkt_bth(pkt));
	uint64_t va = droce_reth_va(reth);
	uint32_t rkey = droce_reth_rkey(reth);
	struct engine_rd_res *r;
	uint64_t *target, v;

	if (!(qp->attr.qp_access_flags & IBV_ACCESS_REMOTE_WRITE)) {
		resp_fail(qp, pkt, RESP_ERR_WRITE_INVALID);
		return;
	}
	if (droce_reth_len(reth) != ENGINE_ATOMIC_LEN || pkt->payload_len != ENGINE_ATOMIC_LEN) {
		resp_fail(qp, pkt, RESP_ERR_OPCODE);
		return;
	}
	target = (uint64_t *)mr_resolve_rkey(qp, rkey, IBV_ACCESS_REMOTE_WRITE, va,
					     ENGINE_ATOMIC_LEN);
	if (target == NULL) {
		resp_fail(qp, pkt, RESP_ERR_WRITE_ACCESS);
		return;
	}
	if ((va & (ENGINE_ATOMIC_LEN - 1)) != 0 ||
	    ((uintptr_t)target & (ENGINE_ATOMIC_LEN - 1)) != 0) {
		resp_fail(qp, pkt, RESP_ERR_ATOMIC_INVALID);
		return;
	}
	/* The bytes as they came: memory holds the payload, as after a WRITE of them. */
	resp_src_copy(src, 0, (uint8_t *)&v, ENGINE_ATOMIC_LEN);
	__atomic_store_n(target, v, __ATOMIC_RELEASE);
	ENGINE_STAT(qp->engine, atomic_write_exec);
	r = resp_rd_res_new(qp, psn, 1);
	r->va = va;
	r->rkey = rkey;
}

/*
 * An in-sequence FLUSH: the placement type (FETH) must be one the QP allows (else invalid
 * request) and the MR of the R_Key (windows grant no FLUSH) must allow it on the range
 * (selectivity RANGE; a zero length is a no-op that still checks the key) or hold the key
 * (selectivity MR) (else remote access error). droced's memory is the application's
 * ordinary memory: a full fence makes everything the responder placed before the FLUSH
 * visible to every CPU, which is all that global visibility and, for this memory,
 * persistence can mean (doc/verbs-coverage.md, "ATOMIC WRITE and FLUSH"). Answered as
 * an ATOMIC WRITE is.
 */
static void
resp_rc_flush(struct droce_engine_qp *qp, const struct droce_wire_pkt *pkt)
{
	const struct droce_reth *reth = droce_pkt_reth(pkt);
	const struct droce_feth *feth = droce_pkt_feth(pkt);
	uint32_t psn = droce_bth_psn(droce_pkt_bth(pkt));
	unsigned int plt = droce_feth_plt(feth), sel = droce_feth_sel(feth);
	uint32_t access = ((plt & DROCE_SHM_FLUSH_GLOBAL) ? DROCE_SHM_ACCESS_FLUSH_GLOBAL : 0) |
			  ((plt & DROCE_SHM_FLUSH_PERSISTENT) ?
			   DROCE_SHM_ACCESS_FLUSH_PERSISTENT : 0);
	struct engine_rd_res *r;

	if (access == 0 || (plt & ~(DROCE_SHM_FLUSH_GLOBAL | DROCE_SHM_FLUSH_PERSISTENT)) ||
	    sel > DROCE_SHM_FLUSH_MR || (qp->attr.qp_access_flags & access) != access) {
		resp_fail(qp, pkt, RESP_ERR_FLUSH_INVALID);
		return;
	}
	if (!mr_rkey_flushable(qp, droce_reth_rkey(reth), access, sel == DROCE_SHM_FLUSH_MR,
			       droce_reth_va(reth), droce_reth_len(reth))) {
		resp_fail(qp, pkt, RESP_ERR_FLUSH_ACCESS);
		return;
	}
	atomic_thread_fence(memory_order_seq_cst);
	ENGINE_STAT(qp->engine, flush_exec);
	r = resp_rd_res_new(qp, psn, 1);
	r->va = droce_reth_va(reth);
	r->rkey = droce_reth_rkey(reth);
}

/* ---- RC ---- */

/* 9.8.3.2: FIRST/ONLY starts a message; MIDDLE/LAST continue one of the same operation. */
static bool
resp_opcode_seq_ok(const struct droce_engine_qp *qp, uint32_t flags)
{
	if (qp->resp.state == RESP_ST_IDLE)
		return (flags & DROCE_OPF_FIRST) != 0;
	return !(flags & DROCE_OPF_FIRST) &&
	       !(flags & DROCE_OPF_WRITE) == (qp->resp.state != RESP_ST_WRITE);
}

/* The rest of an in-sequence RC WRITE packet: placement, answer, completion. */
static void
resp_rc_write(struct droce_engine_qp *qp, const struct droce_wire_pkt *pkt, const struct resp_src *src)
{
	const struct droce_bth *bth = droce_pkt_bth(pkt);
	uint32_t psn = droce_bth_psn(bth);
	uint32_t flags = pkt->info->flags;
	int rc = resp_write(qp, pkt, src);

	if (rc == -EAGAIN) {
		resp_rnr_nak(qp, psn);
		return;
	}
	if (rc != 0) {
		/* As for a SEND the responder cannot take: NAK, and this QP goes to ERR. */
		resp_fail(qp, pkt, rc == -EACCES ? RESP_ERR_WRITE_ACCESS :
			  rc == -EIO ? RESP_ERR_RQ_BROKEN : RESP_ERR_WRITE_INVALID);
		return;
	}
	qp->resp.epsn = droce_psn_add(psn, 1);
	qp->resp.nak_sent = false;
	if (flags & DROCE_OPF_LAST) {
		qp->resp.msn = droce_psn_add(qp->resp.msn, 1);
		qp->resp.state = RESP_ST_IDLE;
		ENGINE_STAT(qp->engine, resp_writes);
		if (flags & DROCE_OPF_RWQE) {
			/* byte_len: the RETH length, as rxe reports it. */
			resp_complete(qp, pkt, DROCE_SHM_WC_SUCCESS, qp->resp.dma_len);
			if (qp->state == DROCE_SHM_QPS_ERR)
				return;
		}
	} else {
		qp->resp.state = RESP_ST_WRITE;
	}
	if (droce_bth_ackreq(bth))
		resp_schedule_ack(qp, psn);
}

static enum resp_step
resp_rc_check_psn(struct droce_engine_qp *qp, uint32_t psn)
{
	int32_t d = droce_psn_diff(psn, qp->resp.epsn);

	return d < 0 ? RESP_STEP_DUPLICATE : d > 0 ? RESP_STEP_OUT_OF_SEQ : RESP_STEP_CHECK_OP;
}

/* 9.7.5.1.2: a duplicate is not executed again, only acknowledged (READ: answered). */
static enum resp_step
resp_rc_duplicate(struct droce_engine_qp *qp, const struct droce_wire_pkt *pkt)
{
	uint32_t flags = pkt->info->flags;

	ENGINE_STAT(qp->engine, resp_dup);
	ENGINE_QP_COUNT(qp, duplicate_request);
	if (flags & DROCE_OPF_READ)
		resp_read_dup(qp, pkt);
	else if (flags & DROCE_OPF_ATOMIC)
		resp_one_psn_dup(qp, droce_bth_psn(droce_pkt_bth(pkt)), true,
				 droce_atmeth_va(droce_pkt_atmeth(pkt)),
				 droce_atmeth_rkey(droce_pkt_atmeth(pkt)));
	else if (flags & (DROCE_OPF_FLUSH | DROCE_OPF_ATOMIC_WRITE))
		resp_one_psn_dup(qp, droce_bth_psn(droce_pkt_bth(pkt)), false,
				 droce_reth_va(droce_pkt_reth(pkt)),
				 droce_reth_rkey(droce_pkt_reth(pkt)));
	else
		resp_schedule_ack(qp, droce_psn_add(qp->resp.epsn, DROCE_PSN_MASK));
	return RESP_STEP_DONE;
}

/*
 * 9.7.5.1.3: one PSN sequence error NAK per episode, then silence until the expected PSN
 * arrives, as Linux's rxe does. When the requester goes back and loses the expected
 * packet again, its timer ends the episode: a second NAK there reached rxe 6.1 in the
 * middle of its resend, and it stalled for good (doc/interop.md).
 */
static enum resp_step
resp_rc_out_of_seq(struct droce_engine_qp *qp)
{
	struct droce_engine *e = qp->engine;

	ENGINE_STAT(e, resp_out_of_seq);
	ENGINE_QP_COUNT(qp, out_of_sequence);
	if (!qp->resp.nak_sent) {
		qp->resp.nak_sent = true;
		ENGINE_STAT(e, nak_seq_sent);
		read_resp_aeth(qp, qp->resp.epsn, DROCE_AETH_NAK | DROCE_NAK_PSN_SEQ_ERR);
	}
	return RESP_STEP_DONE;
}

/* In sequence: a SEND or WRITE that continues what is in progress, of MTU pieces. */
static enum resp_step
resp_rc_check_op(struct droce_engine_qp *qp, const struct droce_wire_pkt *pkt)
{
	uint32_t flags = pkt->info->flags;
	uint32_t plen = pkt->payload_len;

	if (!(flags & (DROCE_OPF_SEND | DROCE_OPF_WRITE | DROCE_OPF_READ | DROCE_OPF_ATOMIC |
		       DROCE_OPF_FLUSH | DROCE_OPF_ATOMIC_WRITE)) ||
	    !resp_opcode_seq_ok(qp, flags) ||
	    plen > qp->mtu || (!(flags & DROCE_OPF_LAST) && plen != qp->mtu)) {
		resp_fail(qp, pkt, RESP_ERR_OPCODE);
		return RESP_STEP_DONE;
	}
	return (flags & DROCE_OPF_WRITE) ? RESP_STEP_WRITE :
	       (flags & DROCE_OPF_READ) ? RESP_STEP_READ :
	       (flags & DROCE_OPF_ATOMIC) ? RESP_STEP_ATOMIC :
	       (flags & DROCE_OPF_FLUSH) ? RESP_STEP_FLUSH :
	       (flags & DROCE_OPF_ATOMIC_WRITE) ? RESP_STEP_ATOMIC_WRITE : RESP_STEP_SEND;
}

/* An in-sequence SEND packet: the receive WQE (RNR NAK without one), its bytes, its end. */
static enum resp_step
resp_rc_send(struct droce_engine_qp *qp, const struct droce_wire_pkt *pkt, const struct resp_src *src)
{
	const struct droce_bth *bth = droce_pkt_bth(pkt);
	uint32_t psn = droce_bth_psn(bth);
	uint32_t flags = pkt->info->flags;
	uint32_t plen = pkt->payload_len;
	int rc;

	if (!qp->resp.have_wqe) {
		rc = resp_take(qp);
		if (rc == 0) {
			resp_rnr_nak(qp, psn);
			return RESP_STEP_DONE;
		}
		if (rc < 0) {
			resp_fail(qp, pkt, RESP_ERR_RQ_BROKEN);
			return RESP_STEP_DONE;
		}
	}
	if (plen > qp->resp.wqe.total - qp->resp.off) {
		/* Too long for the buffer: local length error here, invalid request there. */
		resp_fail(qp, pkt, RESP_ERR_TOO_LONG);
		return RESP_STEP_DONE;
	}
	if (plen != 0 && resp_place(qp, &qp->resp.wqe, qp->resp.off, plen, src) != 0) {
		resp_fail(qp, pkt, RESP_ERR_PLACE);
		return RESP_STEP_DONE;
	}
	/* The window is invalid before the receive completes (10.6.7.2.3). */
	if (flags & DROCE_OPF_INV) {
		if (mw_invalidate(qp, droce_ieth_rkey(droce_pkt_ieth(pkt)), true) != 0) {
			resp_fail(qp, pkt, RESP_ERR_INVALIDATE);
			return RESP_STEP_DONE;
		}
		ENGINE_STAT(qp->engine, resp_invalidate);
	}
	qp->resp.off += plen;
	qp->resp.epsn = droce_psn_add(psn, 1);
	qp->resp.nak_sent = false;
	if (flags & DROCE_OPF_LAST) {
		qp->resp.msn = droce_psn_add(qp->resp.msn, 1);
		resp_complete(qp, pkt, DROCE_SHM_WC_SUCCESS, qp->resp.off);
		if (qp->state == DROCE_SHM_QPS_ERR)
			return RESP_STEP_DONE;
	} else {
		qp->resp.state = RESP_ST_SEND;
	}
	if (droce_bth_ackreq(bth))
		resp_schedule_ack(qp, psn);
	return RESP_STEP_DONE;
}

/*
 * One RC request: steps from the PSN check to DONE, each the next's caller's choice
 * (resp.step says where a QP is, for resp_fail's log). Every refusal goes through
 * resp_fail(), every RNR NAK through resp_rnr_nak().
 */
static void
resp_rc(struct droce_engine_qp *qp, const struct droce_wire_pkt *pkt, const struct resp_src *src)
{
	uint32_t psn = droce_bth_psn(droce_pkt_bth(pkt));
	enum resp_step st = RESP_STEP_CHECK_PSN;

	while (st != RESP_STEP_DONE) {
		qp->resp.step = st;
		switch (st) {
		case RESP_STEP_CHECK_PSN:
			st = resp_rc_check_psn(qp, psn);
			break;
		case RESP_STEP_DUPLICATE:
			st = resp_rc_duplicate(qp, pkt);
			break;
		case RESP_STEP_OUT_OF_SEQ:
			st = resp_rc_out_of_seq(qp);
			break;
		case RESP_STEP_CHECK_OP:
			st = resp_rc_check_op(qp, pkt);
			break;
		case RESP_STEP_WRITE:
			resp_rc_write(qp, pkt, src);
			st = RESP_STEP_DONE;
			break;
		case RESP_STEP_READ:
			resp_rc_read(qp, pkt);
			st = RESP_STEP_DONE;
			break;
		case RESP_STEP_ATOMIC:
			resp_rc_atomic(qp, pkt);
			st = RESP_STEP_DONE;
			break;
		case RESP_STEP_FLUSH:
			resp_rc_flush(qp, pkt);
			st = RESP_STEP_DONE;
			break;
		case RESP_STEP_ATOMIC_WRITE:
			resp_rc_atomic_write(qp, pkt, src);
			st = RESP_STEP_DONE;
			break;
		case RESP_STEP_SEND:
			st = resp_rc_send(qp, pkt, src);
			break;
		case RESP_STEP_DONE:
			break;
		}
	}
}

/* ---- XRC target (IB 9.3.7, 10.2.9.6) ---- */

/*
 * An XRC target is RC's responder with the receive side of the request's XRC SRQ: each
 * request names one in its XRCETH, which must be of the target's XRC domain (else invalid
 * request). A SEND takes its receive WQE from that SRQ and completes on the SRQ's CQ;
 * receive buffers, RDMA and atomics are checked in the SRQ's PD and its owner's keys
 * (the SRQ may be another process's). The SRQ is taken where a message starts, in
 * sequence, and looked up by number for every packet, never kept: one destroyed meanwhile
 * (its number gone) fails the message. Duplicates and packets out of sequence need no SRQ.
 */
static void
resp_xrc(struct droce_engine_qp *qp, const struct droce_wire_pkt *pkt,
	 const struct resp_src *src)
{
	const struct droce_xrceth *x = droce_pkt_xrceth(pkt);
	uint32_t psn = droce_bth_psn(droce_pkt_bth(pkt));
	bool in_seq = psn == qp->resp.epsn;
	struct droce_engine_srq *srq;
	uint32_t srqn;

	srqn = in_seq && (pkt->info->flags & DROCE_OPF_FIRST) ? droce_xrceth_srqn(x) :
	       qp->resp.xsrqn;
	srq = dev_xsrq(qp->engine->dev, srqn);
	if (srq == NULL || srq->xrcd != qp->xrcd) {
		if (in_seq) {
			/* The WQE in hand, if any, was the SRQ's that went away: not ours to complete. */
			qp->resp.have_wqe = false;
			resp_fail(qp, pkt, RESP_ERR_XRC_SRQ);
			return;
		}
		srq = NULL;
	}
	qp->resp.xsrqn = srqn;
	qp->srq = srq;
	qp->rcq = srq != NULL ? srq->cq : NULL;
	qp->key_dom = srq != NULL ? srq->dom : qp->dom;
	qp->key_pd = srq != NULL ? srq->pd : 0;
	resp_rc(qp, pkt, src);
	qp->srq = NULL;
	qp->rcq = NULL;
}

/* ---- UC: no ACKs; a message with a gap is dropped whole (9.8.3.3) ---- */

static void
resp_uc(struct droce_engine_qp *qp, const struct droce_wire_pkt *pkt, const struct resp_src *src)
{
	struct droce_engine *e = qp->engine;
	uint32_t psn = droce_bth_psn(droce_pkt_bth(pkt));
	uint32_t flags = pkt->info->flags;
	uint32_t plen = pkt->payload_len;

	/* A gap ends the message in progress; the WQE in hand serves the next one. */
	if (psn != qp->resp.epsn && qp->resp.state != RESP_ST_IDLE) {
		ENGINE_STAT(e, uc_drop);
		qp->resp.state = RESP_ST_IDLE;
		qp->resp.off = 0;
	}
	qp->resp.epsn = droce_psn_add(psn, 1);
	if (!(flags & (DROCE_OPF_SEND | DROCE_OPF_WRITE))) {
		ENGINE_STAT(e, rx_bad_opcode);
		return;
	}
	if (flags & DROCE_OPF_FIRST) {
		qp->resp.state = RESP_ST_IDLE;
		qp->resp.off = 0;
	} else if (qp->resp.state == RESP_ST_IDLE) {
		ENGINE_STAT(e, uc_drop);	/* the rest of a message we are not taking */
		return;
	}
	if (!resp_opcode_seq_ok(qp, flags) ||
	    plen > qp->mtu || (!(flags & DROCE_OPF_LAST) && plen != qp->mtu)) {
		ENGINE_STAT(e, uc_drop);
		qp->resp.state = RESP_ST_IDLE;
		return;
	}
	if (flags & DROCE_OPF_WRITE) {
		int rc = resp_write(qp, pkt, src);

		/* 9.8.3.3: a UC request the responder cannot execute drops its message. */
		if (rc != 0) {
			ENGINE_STAT(e, uc_drop);
			qp->resp.state = RESP_ST_IDLE;
			if (rc == -EIO)
				qp_to_error(qp);
			return;
		}
		if (!(flags & DROCE_OPF_LAST)) {
			qp->resp.state = RESP_ST_WRITE;
			return;
		}
		ENGINE_STAT(e, resp_writes);
		if (flags & DROCE_OPF_RWQE)
			resp_complete(qp, pkt, DROCE_SHM_WC_SUCCESS, qp->resp.dma_len);
		else
			qp->resp.state = RESP_ST_IDLE;
		return;
	}
	if (!qp->resp.have_wqe) {
		int rc = resp_take(qp);

		if (rc <= 0) {
			ENGINE_STAT(e, uc_drop);
			if (rc < 0)
				qp_to_error(qp);
			else
				ENGINE_QP_COUNT(qp, out_of_buffer);
			return;
		}
	}
	if (plen > qp->resp.wqe.total - qp->resp.off) {
		resp_fail(qp, pkt, RESP_ERR_TOO_LONG);
		return;
	}
	if (plen != 0 && resp_place(qp, &qp->resp.wqe, qp->resp.off, plen, src) != 0) {
		resp_fail(qp, pkt, RESP_ERR_PLACE);
		return;
	}
	qp->resp.off += plen;
	if (flags & DROCE_OPF_LAST)
		resp_complete(qp, pkt, DROCE_SHM_WC_SUCCESS, qp->resp.off);
	else
		qp->resp.state = RESP_ST_SEND;
}

/* ---- UD: Q_Key check, the GRH area, one packet per message (9.8.4, 11.4.1.1) ---- */

static void
resp_ud(struct droce_engine_qp *qp, const struct droce_wire_pkt *pkt, const struct resp_src *src)
{
	struct droce_engine *e = qp->engine;
	const struct droce_deth *deth = droce_pkt_deth(pkt);
	uint8_t grh[DROCE_GRH_LEN];
	struct resp_src grh_src = { .flat = grh };
	uint32_t plen = pkt->payload_len;
	int rc;

	/* C10-15: a Q_Key that does not match drops the packet. */
	if (deth == NULL || droce_deth_qkey(deth) != qp->qkey) {
		ENGINE_STAT(e, ud_drop);
		return;
	}
	rc = resp_take(qp);
	if (rc <= 0) {
		ENGINE_STAT(e, ud_drop);
		if (rc < 0)
			qp_to_error(qp);
		else
			ENGINE_QP_COUNT(qp, out_of_buffer);
		return;
	}
	/* RoCEv2 GRH area: IPv4 header in its last 20 bytes, or the whole IPv6 header. */
	memset(grh, 0, sizeof(grh));
	if (pkt->ip_version == 4)
		memcpy(grh + DROCE_GRH_LEN - DROCE_IPV4_HLEN, pkt->hdr + pkt->l3_off,
		       DROCE_IPV4_HLEN);
	else
		memcpy(grh, pkt->hdr + pkt->l3_off, DROCE_IPV6_HLEN);
	if (DROCE_GRH_LEN + plen > qp->resp.wqe.total) {
		resp_fail(qp, pkt, RESP_ERR_TOO_LONG);
		return;
	}
	if (resp_place(qp, &qp->resp.wqe, 0, DROCE_GRH_LEN, &grh_src) != 0 ||
	    (plen != 0 && resp_place(qp, &qp->resp.wqe, DROCE_GRH_LEN, plen, src) != 0)) {
		resp_fail(qp, pkt, RESP_ERR_PLACE);
		return;
	}
	resp_complete(qp, pkt, DROCE_SHM_WC_SUCCESS, DROCE_GRH_LEN + plen);
}

void
resp_rx(struct droce_engine_qp *qp, const struct droce_wire_pkt *pkt,
	const struct droce_wire_seg *segs, unsigned int nseg)
{
	struct resp_src src = { .pkt = pkt, .segs = segs, .nseg = nseg };

	/* 10.3.1: a QP receives from RTR on; RESET, INIT and ERR drop silently. */
	if (qp->state != DROCE_SHM_QPS_RTR && qp->state != DROCE_SHM_QPS_RTS &&
	    qp->state != DROCE_SHM_QPS_SQD) {
		ENGINE_STAT(qp->engine, rx_bad_state);
		return;
	}
	/*
	 * 11.6.3 (affiliated events): the first packet a connected QP takes in RTR raises Communication
	 * Established, once. A passive rdma_cm end whose RTU was lost learns from it that the
	 * connection is up (rdma_notify), as with a NIC, instead of waiting out a REP retry.
	 */
	if (qp->state == DROCE_SHM_QPS_RTR && !qp->resp.comm_est &&
	    (qp->type == DROCE_SHM_QPT_RC || qp->type == DROCE_SHM_QPT_UC)) {
		qp->resp.comm_est = true;
		engine_event(qp->dom, DROCE_ENGINE_EVENT_COMM_EST, qp->qpn);
	}
	switch (qp->type) {
	case DROCE_SHM_QPT_RC:
		resp_rc(qp, pkt, &src);
		break;
	case DROCE_SHM_QPT_XRC_RECV:
		resp_xrc(qp, pkt, &src);
		break;
	case DROCE_SHM_QPT_UC:
		resp_uc(qp, pkt, &src);
		break;
	default:
		resp_ud(qp, pkt, &src);
		break;
	}
}
