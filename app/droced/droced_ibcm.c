/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * The IB CM side of droced's CM (droced_ibcm_*), below the rdma_cm side: connections on
 * the wire, one lib/cm state machine (droce_cm_conn.h) per connection end, the MADs QP1
 * receives matched to them, their retransmissions and timewaits. A connection belongs to its rdma_cm id while the id lives and to this file
 * after (an orphan finishing its DREQ retries or its timewait), and is freed when its
 * state machine is back in IDLE.
 *
 * Matching (IB 12.9): a MAD that names our comm ID (its receiver's) is looked up by it: a
 * local comm ID is (generation << 16 | slot), so the slot is an index and the generation
 * tells a stale ID from the slot's current owner. A REQ names none yet: it is looked up by
 * the sender's comm ID and source GID (12.9.8.1's duplicate check), and only a new one
 * goes to a listener (droced_rdmacm.c).
 */

#include <errno.h>
#include <string.h>
#include <sys/queue.h>
#include <time.h>

#include <rte_common.h>
#include <rte_random.h>

#include "droced_loc.h"

#define CONN_SLOT_BITS	16
#define CONN_SLOTS	(1u << CONN_SLOT_BITS)
#define CONN_HASH	4096	/* passive connections by (remote comm ID, remote GID) */
/* REJ's Message REJected for anything but a REQ or a REP (table 108). */
#define REJ_MSG_OTHER	2

struct droced_ibcm_conn {
	struct droce_cm_conn sm;
	struct droced_rdmacm_id *id;	/* NULL: an orphan */
	struct droced_port *port;
	uint8_t lgid[16];
	uint8_t rgid[16];
	uint8_t rmac[6];
	uint8_t tclass;
	bool hashed;
	uint32_t hash;
	uint32_t heap_pos;		/* 1 + its index in the timer heap; 0: no timer */
	uint64_t heap_key;		/* the deadline it is filed under */
	TAILQ_ENTRY(droced_ibcm_conn) hnext;
};

TAILQ_HEAD(conn_list, droced_ibcm_conn);

static struct {
	struct droced_ibcm_conn *slot[CONN_SLOTS];
	uint16_t gen[CONN_SLOTS];
	uint32_t free_slot[CONN_SLOTS];
	uint32_t nb_free;
	bool ready;
	uint32_t nb;
	struct conn_list hash[CONN_HASH];
	/*
	 * Connections with a deadline, a binary min-heap on it: thousands wait out their
	 * timewait at a high set-up rate, and a tick must not walk them all.
	 */
	struct droced_ibcm_conn *heap[CONN_SLOTS];
	uint32_t heap_n;
} cw;

/* The rdma_cm side above (droced_ibcm_set_hooks). */
static struct droced_ibcm_hooks hooks;

void
droced_ibcm_set_hooks(const struct droced_ibcm_hooks *h)
{
	hooks = *h;
}

static void
cw_init(void)
{
	uint32_t i;

	if (cw.ready)
		return;
	/* Slot 0 is never used: a comm ID is never 0, which a REQ's REJ uses for "none". */
	for (i = CONN_SLOTS - 1; i > 0; i--)
		cw.free_slot[cw.nb_free++] = i;
	/* A restarted droced must not reuse the IDs its peers may still hold in timewait. */
	for (i = 0; i < CONN_SLOTS; i++)
		cw.gen[i] = (uint16_t)rte_rand();
	for (i = 0; i < CONN_HASH; i++)
		TAILQ_INIT(&cw.hash[i]);
	cw.ready = true;
}

static uint32_t
conn_hash(uint32_t remote_id, const uint8_t rgid[16])
{
	uint32_t h = remote_id * 2654435761u;
	unsigned int i;

	for (i = 0; i < 16; i++)
		h = (h ^ rgid[i]) * 16777619u;
	return h & (CONN_HASH - 1);
}

struct droced_ibcm_conn *
droced_ibcm_conn_new(struct droced_rdmacm_id *id, struct droced_port *p, const uint8_t lgid[16],
		     const uint8_t rgid[16], const uint8_t rmac[6], uint8_t tclass)
{
	struct droced_ibcm_conn *conn;
	uint32_t s;

	cw_init();
	if (cw.nb_free == 0)
		return NULL;
	conn = calloc(1, sizeof(*conn));
	if (conn == NULL)
		return NULL;
	s = cw.free_slot[--cw.nb_free];
	cw.slot[s] = conn;
	droce_cm_conn_init(&conn->sm, (uint32_t)cw.gen[s] << CONN_SLOT_BITS | s, rte_rand());
	conn->id = id;
	conn->port = p;
	memcpy(conn->lgid, lgid, 16);
	memcpy(conn->rgid, rgid, 16);
	memcpy(conn->rmac, rmac, 6);
	conn->tclass = tclass;
	cw.nb++;
	return conn;
}

struct droce_cm_conn *
droced_ibcm_conn_sm(struct droced_ibcm_conn *conn)
{
	return &conn->sm;
}

uint32_t
droced_ibcm_conn_count(void)
{
	return cw.nb;
}

/* ---- The timer heap ---- */

static void
heap_set(uint32_t i, struct droced_ibcm_conn *conn)
{
	cw.heap[i] = conn;
	conn->heap_pos = i + 1;
}

static void
heap_up(uint32_t i)
{
	struct droced_ibcm_conn *conn = cw.heap[i];

	while (i > 0 && cw.heap[(i - 1) / 2]->heap_key > conn->heap_key) {
		heap_set(i, cw.heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	heap_set(i, conn);
}

static void
heap_down(uint32_t i)
{
	struct droced_ibcm_conn *conn = cw.heap[i];

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= cw.heap_n)
			break;
		if (c + 1 < cw.heap_n && cw.heap[c + 1]->heap_key < cw.heap[c]->heap_key)
			c++;
		if (cw.heap[c]->heap_key >= conn->heap_key)
			break;
		heap_set(i, cw.heap[c]);
		i = c;
	}
	heap_set(i, conn);
}

static void
heap_del(struct droced_ibcm_conn *conn)
{
	uint32_t i = conn->heap_pos - 1;
	struct droced_ibcm_conn *last = cw.heap[--cw.heap_n];

	conn->heap_pos = 0;
	if (last == conn)
		return;
	heap_set(i, last);
	heap_up(i);
	heap_down(last->heap_pos - 1);
}

/* Files the connection under its state machine's deadline (or takes it out: none). */
static void
conn_timer_arm(struct droced_ibcm_conn *conn)
{
	uint64_t d = conn->sm.deadline_ns;

	if (d == 0) {
		if (conn->heap_pos != 0)
			heap_del(conn);
		return;
	}
	if (conn->heap_pos != 0 && conn->heap_key == d)
		return;
	if (conn->heap_pos != 0)
		heap_del(conn);
	conn->heap_key = d;
	heap_set(cw.heap_n++, conn);
	heap_up(cw.heap_n - 1);
}

static void
conn_free(struct droced_ibcm_conn *conn)
{
	uint32_t s = conn->sm.local_id & (CONN_SLOTS - 1);

	if (conn->hashed)
		TAILQ_REMOVE(&cw.hash[conn->hash], conn, hnext);
	if (conn->heap_pos != 0)
		heap_del(conn);
	if (conn->id != NULL)
		hooks.id_attach(conn->id, NULL);
	cw.slot[s] = NULL;
	cw.gen[s]++;
	cw.free_slot[cw.nb_free++] = s;
	cw.nb--;
	free(conn);
}

static void
conn_send(struct droced_ibcm_conn *conn, const uint8_t *mad)
{
	droced_gsi_send(conn->port, conn->lgid, conn->rgid, conn->rmac, conn->tclass, mad);
}

/* Builds and sends m on the connection's path without a state machine (stateless answers). */
static void
path_send(struct droced_port *p, const uint8_t lgid[16], const uint8_t rgid[16],
	  const uint8_t rmac[6], const struct droce_cm_msg *m)
{
	uint8_t mad[DROCE_CM_MAD_LEN];

	if (droce_cm_mad_build(m, mad) == 0)
		droced_gsi_send(p, lgid, rgid, rmac, 0, mad);
}

void
droced_ibcm_conn_out(struct droced_ibcm_conn *conn, const struct droce_cm_out *out,
		     const struct droce_cm_msg *m)
{
	unsigned int i;

	for (i = 0; i < out->nmads; i++) {
		DROCED_LOG(DEBUG, "cm: conn 0x%08x (peer 0x%08x) sends %s", conn->sm.local_id,
			   conn->sm.remote_id, droce_cm_attr_name(
			   (uint16_t)(out->mads[i][16] << 8 | out->mads[i][17])));	/* MAD AttributeID */
		conn_send(conn, out->mads[i]);
	}
	conn_timer_arm(conn);
	if (out->event != DROCE_CM_EVENT_NONE)
		DROCED_LOG(DEBUG, "cm: conn 0x%08x (peer 0x%08x) %s: %s%s", conn->sm.local_id,
			   conn->sm.remote_id, droce_cm_state_name(conn->sm.state),
			   droce_cm_event_name(out->event), conn->id == NULL ? " (orphan)" : "");
	if (out->event != DROCE_CM_EVENT_NONE && conn->id != NULL)
		hooks.conn_event(conn->id, out->event, m, out->rej_reason);
	/* Back in IDLE (rejected, unreachable, timewait over, SIDR done): nothing left to do. */
	if (conn->sm.state == DROCE_CM_STATE_IDLE)
		conn_free(conn);
}

void
droced_ibcm_conn_orphan(struct droced_ibcm_conn *conn)
{
	struct droce_cm_out out;
	struct droce_cm_msg m;
	uint64_t now = droced_now_ns();

	conn->id = NULL;
	memset(&out, 0, sizeof(out));
	switch (conn->sm.state) {
	case DROCE_CM_STATE_ESTABLISHED:
		droce_cm_disconnect(&conn->sm, now, &out);
		break;
	case DROCE_CM_STATE_REQ_RCVD:
	case DROCE_CM_STATE_MRA_REQ_SENT:
	case DROCE_CM_STATE_REP_RCVD:
	case DROCE_CM_STATE_MRA_REP_SENT:
		droce_cm_reject(&conn->sm, DROCE_CM_REJ_CONSUMER_DEFINED, now, &out);
		break;
	case DROCE_CM_STATE_REQ_SENT:
	case DROCE_CM_STATE_MRA_REQ_RCVD:
	case DROCE_CM_STATE_REP_SENT:
	case DROCE_CM_STATE_MRA_REP_RCVD:
		/*
		 * Linux's cm_destroy_id: REJ Timeout for a REQ of ours still unanswered, REJ
		 * Consumer Defined for a REP of ours not yet confirmed; the peer lets go at once.
		 */
		memset(&m, 0, sizeof(m));
		m.attr_id = DROCE_CM_ATTR_REJ;
		m.tid = conn->sm.tid;
		m.rej.local_comm_id = conn->sm.local_id;
		m.rej.remote_comm_id = conn->sm.remote_id;
		if (conn->sm.active && conn->sm.state != DROCE_CM_STATE_REP_SENT &&
		    conn->sm.state != DROCE_CM_STATE_MRA_REP_RCVD) {
			m.rej.message_rejected = DROCE_CM_MSG_REQ;
			m.rej.reason = DROCE_CM_REJ_TIMEOUT;
		} else {
			m.rej.message_rejected = REJ_MSG_OTHER;
			m.rej.reason = DROCE_CM_REJ_CONSUMER_DEFINED;
		}
		path_send(conn->port, conn->lgid, conn->rgid, conn->rmac, &m);
		conn_free(conn);
		return;
	case DROCE_CM_STATE_SIDR_REQ_RCVD:
		memset(&m, 0, sizeof(m));
		m.attr_id = DROCE_CM_ATTR_SIDR_REP;
		m.sidr_rep.status = DROCE_CM_SIDR_REJECT;
		droce_cm_sidr_rep(&conn->sm, &m.sidr_rep, now, &out);
		break;
	case DROCE_CM_STATE_SIDR_REQ_SENT:
		conn_free(conn);
		return;
	default:
		/* DREQ_SENT, TIMEWAIT: they end by themselves. */
		break;
	}
	droced_ibcm_conn_out(conn, &out, NULL);
}

/* A passive end, findable by the REQ's (remote comm ID, source GID) from now on. */
static void
conn_hash_add(struct droced_ibcm_conn *conn)
{
	conn->hash = conn_hash(conn->sm.remote_id, conn->rgid);
	TAILQ_INSERT_TAIL(&cw.hash[conn->hash], conn, hnext);
	conn->hashed = true;
}

static struct droced_ibcm_conn *
conn_find_remote(uint32_t remote_id, const uint8_t rgid[16])
{
	struct droced_ibcm_conn *conn;

	TAILQ_FOREACH(conn, &cw.hash[conn_hash(remote_id, rgid)], hnext)
		if (conn->sm.remote_id == remote_id && memcmp(conn->rgid, rgid, 16) == 0)
			return conn;
	return NULL;
}

/* A REJ for a REQ no connection took: the REQ's IDs swapped, its TID (Linux cm_issue_rej). */
static void
reject_req(struct droced_port *p, const uint8_t lgid[16], const uint8_t rgid[16],
	   const uint8_t rmac[6], const struct droce_cm_msg *req, uint16_t reason)
{
	struct droce_cm_msg m;

	/* Debug level: a port scan must not fill the log; a refused connect is traceable. */
	DROCED_LOG(DEBUG, "cm: %s for service 0x%" PRIx64 " refused (REJ reason %u)",
		   req->attr_id == DROCE_CM_ATTR_SIDR_REQ ? "SIDR REQ" : "REQ",
		   req->attr_id == DROCE_CM_ATTR_SIDR_REQ ? req->sidr_req.service_id :
		   req->req.service_id, reason);
	memset(&m, 0, sizeof(m));
	m.tid = req->tid;
	if (req->attr_id == DROCE_CM_ATTR_SIDR_REQ) {
		m.attr_id = DROCE_CM_ATTR_SIDR_REP;
		m.sidr_rep.request_id = req->sidr_req.request_id;
		m.sidr_rep.service_id = req->sidr_req.service_id;
		m.sidr_rep.status = DROCE_CM_SIDR_UNSUPPORTED;
	} else {
		m.attr_id = DROCE_CM_ATTR_REJ;
		m.rej.remote_comm_id = req->req.local_comm_id;
		m.rej.message_rejected = DROCE_CM_MSG_REQ;
		m.rej.reason = reason;
	}
	path_send(p, lgid, rgid, rmac, &m);
}

static void
new_req(struct droced_port *p, const uint8_t sgid[16], const uint8_t dgid[16],
	const uint8_t smac[6], const struct droce_cm_msg *m)
{
	struct droced_ibcm_conn *conn;
	struct droced_rdmacm_id *id;
	struct droce_cm_out out;
	uint16_t reject = 0;
	uint8_t tclass = m->attr_id == DROCE_CM_ATTR_REQ ? m->req.primary.traffic_class : 0;

	conn = droced_ibcm_conn_new(NULL, p, dgid, sgid, smac, tclass);
	if (conn == NULL)
		return;		/* no room: the peer's retry may find some (Linux: -ENOMEM) */
	id = hooks.req_listener(p, dgid, m, &reject);
	if (id == NULL) {
		conn_free(conn);
		if (reject != 0)
			reject_req(p, dgid, sgid, smac, m, reject);
		else
			p->d->gsi.rx_bad[DROCED_GSI_BAD_UNMATCHED]++;
		return;
	}
	droce_cm_input(&conn->sm, m, droced_now_ns(), &out);
	conn_hash_add(conn);
	conn->id = id;
	hooks.id_attach(id, conn);
	droced_ibcm_conn_out(conn, &out, m);
}

void
droced_ibcm_mad_input(struct droced_port *p, const uint8_t sgid[16], const uint8_t dgid[16],
		      const uint8_t smac[6], const struct droce_cm_msg *m)
{
	struct droced_ibcm_conn *conn;
	struct droce_cm_out out;
	uint32_t sender, receiver;
	uint8_t mac[6];

	cw_init();
	if (droce_cm_msg_ids(m, &sender, &receiver) != 0)
		return;
	DROCED_LOG(DEBUG, "cm: %s to 0x%08x from 0x%08x", droce_cm_attr_name(m->attr_id),
		   receiver, sender);
	/* A local MAD carries no MAC; a peer's comes from its frame (rxe fills none: ARP). */
	memcpy(mac, smac, 6);
	if (m->attr_id == DROCE_CM_ATTR_REQ || m->attr_id == DROCE_CM_ATTR_SIDR_REQ) {
		conn = conn_find_remote(sender, sgid);
		if (conn == NULL) {
			new_req(p, sgid, dgid, mac, m);
			return;
		}
		if (conn->sm.state == DROCE_CM_STATE_TIMEWAIT &&
		    m->attr_id == DROCE_CM_ATTR_REQ) {
			/* 12.9.8.3.1: a REQ from a connection we still hold in timewait. */
			reject_req(p, dgid, sgid, mac, m, DROCE_CM_REJ_STALE_CONN);
			return;
		}
	} else {
		conn = cw.slot[receiver & (CONN_SLOTS - 1)];
		if (conn == NULL || conn->sm.local_id != receiver ||
		    memcmp(conn->rgid, sgid, 16) != 0) {
			p->d->gsi.rx_bad[DROCED_GSI_BAD_UNMATCHED]++;
			/*
			 * A REP for nothing we know gets REJ Invalid Communication ID (table
			 * 109), so a passive side whose active end went away (its process died,
			 * and the one REJ sent then was lost) lets go at its next REP instead of
			 * after all its retries (68 s with rdma_cm's timeouts). Linux stays
			 * silent here (cm_dup_rep_handler); its cm_rej_handler takes this REJ.
			 */
			if (m->attr_id == DROCE_CM_ATTR_REP) {
				struct droce_cm_msg r;

				memset(&r, 0, sizeof(r));
				r.attr_id = DROCE_CM_ATTR_REJ;
				r.tid = m->tid;
				r.rej.local_comm_id = m->rep.remote_comm_id;
				r.rej.remote_comm_id = m->rep.local_comm_id;
				r.rej.message_rejected = DROCE_CM_MSG_REP;
				r.rej.reason = DROCE_CM_REJ_INVALID_COMM_ID;
				path_send(p, dgid, sgid, mac, &r);
			}
			/* Linux cm_issue_drep: a DREQ for nothing we know still gets its DREP. */
			if (m->attr_id == DROCE_CM_ATTR_DREQ) {
				struct droce_cm_msg r;

				memset(&r, 0, sizeof(r));
				r.attr_id = DROCE_CM_ATTR_DREP;
				r.tid = m->tid;
				r.drep.local_comm_id = m->dreq.remote_comm_id;
				r.drep.remote_comm_id = m->dreq.local_comm_id;
				path_send(p, dgid, sgid, mac, &r);
			}
			return;
		}
	}
	droce_cm_input(&conn->sm, m, droced_now_ns(), &out);
	droced_ibcm_conn_out(conn, &out, m);
}

void
droced_ibcm_conn_timers(uint64_t now_ns)
{
	struct droced_ibcm_conn *conn;
	struct droce_cm_out out;
	/* Each connection at most once a call, whatever its state machine does with the time. */
	uint32_t budget = cw.heap_n;

	while (budget-- > 0 && cw.heap_n != 0 && cw.heap[0]->heap_key <= now_ns) {
		conn = cw.heap[0];
		droce_cm_timer(&conn->sm, now_ns, &out);
		/* Re-files conn under its next deadline, or frees it. */
		droced_ibcm_conn_out(conn, &out, NULL);
	}
}
