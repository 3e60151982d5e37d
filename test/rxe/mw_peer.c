/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * mw_peer: a memory window used across an RC connection, for the soft-RoCE interop suite
 * (test/rxe/test_rxe_interop.py). No packaged program uses memory windows, so this one is
 * ours. It is built against rdma-core's headers and linked with the system's libibverbs,
 * like Debian's own programs, so the same binary runs on both sides: in the QEMU guest on
 * rdma-core's libibverbs and rxe, on droce's side on droce's libibverbs.so.1
 * (LD_LIBRARY_PATH).
 *
 *   mw_peer [options]          the target: owns the memory and the window, waits
 *   mw_peer [options] HOST     the writer: connects to the target on HOST
 *
 * The connection is set up over TCP as ibv_rc_pingpong's (QPN, PSN, GID; RoCEv2 through
 * the GID index of -g). Then, with -t 2 (the default):
 *
 *   target  registers a buffer with LOCAL_WRITE | MW_BIND only (no remote access of its
 *           own), allocates a type 2 window and binds it with IBV_WR_BIND_MW and a new key
 *           (ibv_inc_rkey) over a sub-range of the buffer with REMOTE_WRITE | REMOTE_READ;
 *           checks the IBV_WC_BIND_MW completion; sends the window's address, length and
 *           key; waits for a receive that must carry IBV_WC_WITH_INV and the key in
 *           invalidated_rkey; checks the writer's pattern filled the window exactly and
 *           nothing outside it changed; once the writer reports, that its refused write
 *           changed nothing.
 *   writer  RDMA WRITEs a pattern into the window, READs it back and compares, sends
 *           IBV_WR_SEND_WITH_INV with the key, then WRITEs through the key again: that
 *           must complete with IBV_WC_REM_ACCESS_ERR, the window being invalid.
 *
 * A bind is send queue work, so the target binds once both QPs are in RTS: the window's
 * address and key follow the exchange of QPN, PSN and GID.
 *
 * With -t 1 the window is a type 1 window bound by ibv_bind_mw (which must set mw->rkey to
 * ibv_inc_rkey of the old key); a type 1 window cannot be invalidated remotely, so the
 * writer ends with a plain SEND (whose receive must not carry IBV_WC_WITH_INV), the target
 * unbinds the window (ibv_bind_mw naming the MR, length 0) and says so, and the writer's second WRITE
 * through the old key must fail as above.
 *
 * --rxe-inv-flag is for Linux 6.1's rxe as the target: its receive completions carry the
 * kernel's IB_WC_WITH_INVALIDATE bit (1 << 2, IBV_WC_IP_CSUM_OK in userspace) instead of
 * IBV_WC_WITH_INV; with the option the target takes that bit for IBV_WC_WITH_INV and prints
 * a NOTE line when it does. Without it the check is strict.
 *
 * Every check that fails prints one line "mw_peer: FAIL ..."; the exit status is 0 only
 * when every check passed, and the last line is then "mw_peer: <role>: all N checks
 * passed".
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "peer_util.h"

/* The target's buffer and the window in it: the window starts and ends inside pages and
 * spans several packets at the path MTU (1024), so the WRITE and the READ response are
 * FIRST, MIDDLE..., LAST, and the bytes on either side of it must stay as they were. */
#define BUF_LEN		(3 * 4096)
#define WIN_OFF		1531
#define WIN_LEN		5003
#define PATH_MTU	IBV_MTU_1024
/* Where the writer's buffer takes what it READs back, and its last SEND. */
#define READ_OFF	6144
#define END_OFF		(BUF_LEN - 256)
_Static_assert(WIN_OFF + WIN_LEN <= BUF_LEN && READ_OFF >= WIN_LEN &&
	       READ_OFF + WIN_LEN <= END_OFF, "the buffers overlap");

/* What the target's buffer holds outside the window, and the writer's two patterns: the
 * first never equals the background, the second never equals the first. */
#define BACKGROUND	0x5a
#define PAT1(i)		((uint8_t)(0x80 | ((i) % 127)))
#define PAT2(i)		((uint8_t)((i) % 127))

/* The SEND (with invalidate) that ends the writer's work. */
#define END_MSG		"mw_peer: the end"
#define END_LEN		((uint32_t)sizeof(END_MSG))
#define RECV_LEN	64

/*
 * Linux's IB_WC_WITH_INVALIDATE (include/rdma/ib_verbs.h), which is IBV_WC_IP_CSUM_OK in
 * userspace. Linux 6.1's rxe writes its user CQs' wc_flags with the kernel's values and
 * rdma-core's rxe provider copies them as they are, so a receive that invalidated shows
 * this bit, not IBV_WC_WITH_INV; --rxe-inv-flag takes it for IBV_WC_WITH_INV and says so.
 */
#define KERNEL_WC_WITH_INV	(1 << 2)

/* TCP messages: fixed size, NUL-padded text (peer_util.c). */
#define MSG_LEN		96
#define MAGIC		"MWPEER1"
_Static_assert(MSG_LEN <= PEER_MSG_MAX, "MSG_LEN over PEER_MSG_MAX");

/* Seconds: a completion (the guest runs under TCG). After the peer spoke or went away,
 * how long a completion may still come. */
#define WC_TIMEOUT	60
#define GRACE		3

enum wrid {
	WRID_BIND = 1,
	WRID_UNBIND,
	WRID_RECV,
	WRID_WRITE,
	WRID_READ,
	WRID_SEND,
	WRID_WRITE2,
};

struct opts {
	const char *dev;
	const char *host;
	int ib_port;
	int gid_index;
	int tcp_port;
	int type;
	bool rxe_inv_flag;
};

struct peer {
	struct peer_link link;		/* role, TCP, device, PD, CQ, checks */
	const struct opts *o;
	struct ibv_qp *qp;
	struct ibv_mr *mr;		/* the target's buffer, or the writer's */
	struct ibv_mr *msg_mr;		/* the target's receive buffer */
	struct ibv_mw *mw;
	uint8_t *buf;
	uint8_t *msg;
	uint32_t psn;
	union ibv_gid gid;
};

/* ---- TCP ---- */

/* Whether the peer has sent something or gone (without reading it). */
static bool
peer_spoke(const struct peer *p)
{
	struct pollfd pfd = { .fd = p->link.sock, .events = POLLIN };

	return poll(&pfd, 1, 0) > 0;
}

/* ---- Verbs ---- */

static int
setup(struct peer *p)
{
	struct ibv_device_attr dattr;
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT,
		.port_num = (uint8_t)p->o->ib_port,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};
	uint64_t cap = p->o->type == 2 ? IBV_DEVICE_MEM_WINDOW_TYPE_2B : IBV_DEVICE_MEM_WINDOW;
	int access;

	if (peer_open_device(&p->link, p->o->dev, &dattr) != 0)
		return -1;
	peer_check(&p->link, (dattr.device_cap_flags & cap) != 0 && dattr.max_mw > 0,
		   "the device does not offer type %d windows: device_cap_flags 0x%x, "
		   "max_mw %d", p->o->type, dattr.device_cap_flags, dattr.max_mw);
	if (peer_query_gid(&p->link, p->o->ib_port, p->o->gid_index, &p->gid) != 0 ||
	    peer_alloc_pd_cq(&p->link, 16) != 0)
		return -1;
	/* The target's buffer: no remote access but through the window. */
	p->buf = aligned_alloc(4096, BUF_LEN);
	p->msg = aligned_alloc(4096, 4096);
	if (p->buf == NULL || p->msg == NULL) {
		peer_fail(&p->link, "out of memory");
		return -1;
	}
	access = IBV_ACCESS_LOCAL_WRITE | (p->o->host == NULL ? IBV_ACCESS_MW_BIND : 0);
	p->mr = ibv_reg_mr(p->link.pd, p->buf, BUF_LEN, access);
	p->msg_mr = p->mr ? ibv_reg_mr(p->link.pd, p->msg, 4096, IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (p->msg_mr == NULL) {
		peer_fail(&p->link, "ibv_reg_mr: %s", strerror(errno));
		return -1;
	}
	if (peer_create_qp(&p->link, &init, &attr, IBV_QP_ACCESS_FLAGS, &p->qp) != 0)
		return -1;
	srand48(getpid() * time(NULL));
	p->psn = (uint32_t)lrand48() & 0xffffff;
	return 0;
}

/* Exchanges QPN, PSN and GID with the peer and takes the QP to RTS. */
static int
connect_qp(struct peer *p)
{
	char m[MSG_LEN], hex[33], peer_hex[40], ip[INET6_ADDRSTRLEN];
	unsigned int qpn, psn;
	int type;
	union ibv_gid pgid;
	struct ibv_qp_attr attr;

	peer_gid_to_hex(&p->gid, hex);
	if (peer_send_msg(&p->link, "%s %d %06x %06x %s", MAGIC, p->o->type, p->qp->qp_num,
			  p->psn, hex) != 0 ||
	    peer_recv_msg(&p->link, m, "connection data") != 0)
		return -1;
	if (sscanf(m, MAGIC " %d %x %x %39s", &type, &qpn, &psn, peer_hex) != 4 ||
	    peer_hex_to_gid(peer_hex, &pgid) != 0) {
		peer_fail(&p->link, "the peer is no mw_peer of this version: \"%s\"", m);
		return -1;
	}
	if (!peer_check(&p->link, type == p->o->type,
			"the peer runs type %d windows, this side %d", type, p->o->type))
		return -1;
	peer_gid_str(&pgid, ip, sizeof(ip));
	peer_say(&p->link, "local QPN 0x%06x PSN 0x%06x; remote address: QPN 0x%06x, PSN "
		 "0x%06x, GID %s", p->qp->qp_num, p->psn, qpn, psn, ip);

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	attr.path_mtu = PATH_MTU;
	attr.dest_qp_num = qpn;
	attr.rq_psn = psn;
	attr.max_dest_rd_atomic = 1;
	attr.min_rnr_timer = 12;
	attr.ah_attr.is_global = 1;
	attr.ah_attr.grh.dgid = pgid;
	attr.ah_attr.grh.sgid_index = (uint8_t)p->o->gid_index;
	attr.ah_attr.grh.hop_limit = 1;
	attr.ah_attr.port_num = (uint8_t)p->o->ib_port;
	if (ibv_modify_qp(p->qp, &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			  IBV_QP_MIN_RNR_TIMER) != 0) {
		peer_fail(&p->link, "ibv_modify_qp RTR: %s", strerror(errno));
		return -1;
	}
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTS;
	attr.timeout = 14;
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.sq_psn = p->psn;
	attr.max_rd_atomic = 1;
	if (ibv_modify_qp(p->qp, &attr, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) != 0) {
		peer_fail(&p->link, "ibv_modify_qp RTS: %s", strerror(errno));
		return -1;
	}
	/* Both sides in RTS before either sends a request. */
	if (peer_send_msg(&p->link, "RTS") != 0 || peer_recv_msg(&p->link, m, "RTS") != 0)
		return -1;
	if (strcmp(m, "RTS") != 0) {
		peer_fail(&p->link, "the peer did not reach RTS: \"%s\"", m);
		return -1;
	}
	return 0;
}

/*
 * The next completion into wc; what names it in failures. Gives up after WC_TIMEOUT
 * seconds, or GRACE seconds after the peer spoke or went (it has given up, or is past the
 * point where this completion should have come).
 */
static int
wait_wc(struct peer *p, struct ibv_wc *wc, const char *what)
{
	double deadline = peer_now_s() + WC_TIMEOUT;
	bool spoke = false;
	struct timespec pause = { .tv_nsec = 20000 };

	for (;;) {
		int n = ibv_poll_cq(p->link.cq, 1, wc);

		if (n < 0) {
			peer_fail(&p->link, "%s: ibv_poll_cq: %d", what, n);
			return -1;
		}
		if (n == 1)
			return 0;
		if (!spoke && peer_spoke(p)) {
			spoke = true;
			if (deadline > peer_now_s() + GRACE)
				deadline = peer_now_s() + GRACE;
		}
		if (peer_now_s() > deadline) {
			peer_fail(&p->link, "%s: no completion after %d s%s", what,
				  spoke ? GRACE : WC_TIMEOUT,
				  spoke ? " (and the peer has spoken or gone)" : "");
			return -1;
		}
		nanosleep(&pause, NULL);
	}
}

static const char *
opcode_str(enum ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_SEND: return "IBV_WC_SEND";
	case IBV_WC_RDMA_WRITE: return "IBV_WC_RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "IBV_WC_RDMA_READ";
	case IBV_WC_BIND_MW: return "IBV_WC_BIND_MW";
	case IBV_WC_LOCAL_INV: return "IBV_WC_LOCAL_INV";
	case IBV_WC_RECV: return "IBV_WC_RECV";
	default: return "another opcode";
	}
}

/*
 * Waits for the completion of wr_id and checks its status (and, on success, its opcode).
 * Returns whether it came with that status.
 */
static bool
expect_wc(struct peer *p, struct ibv_wc *wc, uint64_t wr_id, enum ibv_wc_status status,
	  enum ibv_wc_opcode opcode, const char *what)
{
	if (wait_wc(p, wc, what) != 0)
		return false;
	if (!peer_check(&p->link, wc->wr_id == wr_id, "%s: completion of wr_id %" PRIu64
			", want %" PRIu64 " (status %s)", what, wc->wr_id, wr_id,
			ibv_wc_status_str(wc->status)))
		return false;
	if (!peer_check(&p->link, wc->status == status, "%s: completion status %s (%d), want %s",
			what, ibv_wc_status_str(wc->status), wc->status,
			ibv_wc_status_str(status)))
		return false;
	if (status == IBV_WC_SUCCESS)
		return peer_check(&p->link, wc->opcode == opcode,
				  "%s: completion opcode %s (%d), want %s", what,
				  opcode_str(wc->opcode), wc->opcode, opcode_str(opcode));
	return true;
}

/* ---- The target ---- */

/* Whether the buffer holds the background outside the window and pat inside it. */
static void
check_buffer(struct peer *p, bool written, const char *when)
{
	size_t i, bad = 0, first = 0;
	uint8_t want = 0;

	for (i = 0; i < BUF_LEN; i++) {
		bool in = i >= WIN_OFF && i < WIN_OFF + WIN_LEN;
		uint8_t w = in && written ? PAT1(i - WIN_OFF) : BACKGROUND;

		if (p->buf[i] != w && bad++ == 0) {
			first = i;
			want = w;
		}
	}
	if (peer_check(&p->link, bad == 0, "%s: %zu bytes of the buffer wrong, the first at "
		       "offset %zu (%s the window [%d, %d)): 0x%02x, want 0x%02x", when, bad,
		       first, first >= WIN_OFF && first < WIN_OFF + WIN_LEN ? "in" : "outside",
		       WIN_OFF, WIN_OFF + WIN_LEN, p->buf[first], want))
		peer_say(&p->link, "%s: the window holds %s and the %d bytes around it are "
			 "untouched", when, written ? "the writer's pattern" : "what it held",
			 BUF_LEN - WIN_LEN);
}

/* Binds the window over [WIN_OFF, +WIN_LEN) (or unbinds a type 1 window); returns its
 * key, *rkey. */
static int
bind_window(struct peer *p, bool unbind, uint32_t *rkey)
{
	/* The unbind names the MR (at its start, length 0) although libibverbs lets mr be NULL
	 * then: rdma-core 44's rxe provider dereferences it (the program dies). */
	struct ibv_mw_bind_info info = {
		.mr = p->mr,
		.addr = unbind ? (uintptr_t)p->buf : (uintptr_t)(p->buf + WIN_OFF),
		.length = unbind ? 0 : WIN_LEN,
		.mw_access_flags = unbind ? 0 : IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};
	uint32_t old = p->mw->rkey, key = ibv_inc_rkey(old);
	struct ibv_wc wc;
	int rc;

	if (p->o->type == 2) {
		struct ibv_send_wr wr = {
			.wr_id = WRID_BIND,
			.opcode = IBV_WR_BIND_MW,
			.send_flags = IBV_SEND_SIGNALED,
			.bind_mw = { .mw = p->mw, .rkey = key, .bind_info = info },
		}, *bad;

		rc = ibv_post_send(p->qp, &wr, &bad);
		if (rc != 0) {
			peer_fail(&p->link, "ibv_post_send IBV_WR_BIND_MW: %s", strerror(rc));
			return -1;
		}
	} else {
		struct ibv_mw_bind bind = {
			.wr_id = unbind ? WRID_UNBIND : WRID_BIND,
			.send_flags = IBV_SEND_SIGNALED,
			.bind_info = info,
		};

		rc = ibv_bind_mw(p->qp, p->mw, &bind);
		if (rc != 0) {
			peer_fail(&p->link, "ibv_bind_mw%s: %s",
				  unbind ? " (unbind, length 0)" : "", strerror(rc));
			return -1;
		}
		peer_check(&p->link, p->mw->rkey == key, "ibv_bind_mw: mw->rkey 0x%08x after the "
			   "bind, want ibv_inc_rkey(0x%08x) = 0x%08x", p->mw->rkey, old, key);
	}
	if (!expect_wc(p, &wc, unbind ? WRID_UNBIND : WRID_BIND, IBV_WC_SUCCESS, IBV_WC_BIND_MW,
		       unbind ? "unbind" : "bind"))
		return -1;
	*rkey = key;
	return 0;
}

static int
run_target(struct peer *p)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)p->msg, .length = RECV_LEN, .lkey = p->msg_mr->lkey,
	};
	struct ibv_recv_wr rwr = { .wr_id = WRID_RECV, .sg_list = &sge, .num_sge = 1 }, *bad;
	enum ibv_mw_type type = p->o->type == 2 ? IBV_MW_TYPE_2 : IBV_MW_TYPE_1;
	struct ibv_wc wc;
	uint32_t rkey, dead_key;
	char m[MSG_LEN];
	int rc, status;

	memset(p->buf, BACKGROUND, BUF_LEN);
	memset(p->msg, 0, RECV_LEN);
	rc = ibv_post_recv(p->qp, &rwr, &bad);
	if (rc != 0) {
		peer_fail(&p->link, "ibv_post_recv: %s", strerror(rc));
		goto abort;
	}
	p->mw = ibv_alloc_mw(p->link.pd, type);
	if (p->mw == NULL) {
		peer_fail(&p->link, "ibv_alloc_mw type %d: %s", p->o->type, strerror(errno));
		goto abort;
	}
	peer_check(&p->link, p->mw->type == type && p->mw->pd == p->link.pd,
		   "ibv_alloc_mw: type %d, want %d", p->mw->type, type);
	if (bind_window(p, false, &rkey) != 0)
		goto abort;
	peer_say(&p->link, "type %d window bound: addr 0x%" PRIxPTR " length %d rkey 0x%08x (MR "
		 "lkey 0x%08x)", p->o->type, (uintptr_t)(p->buf + WIN_OFF), WIN_LEN, rkey,
		 p->mr->lkey);
	if (peer_send_msg(&p->link, "WIN %" PRIx64 " %x %x",
			  (uint64_t)(uintptr_t)(p->buf + WIN_OFF), rkey, WIN_LEN) != 0)
		return -1;

	/* The writer's last message: a SEND with Invalidate (type 2) or a SEND. */
	if (expect_wc(p, &wc, WRID_RECV, IBV_WC_SUCCESS, IBV_WC_RECV, "the writer's SEND")) {
		peer_check(&p->link,
			   wc.byte_len == END_LEN && memcmp(p->msg, END_MSG, END_LEN) == 0,
			   "received %u bytes \"%.*s\", want %u \"%s\"", wc.byte_len,
			   (int)(wc.byte_len < RECV_LEN ? wc.byte_len : RECV_LEN), p->msg,
			   END_LEN, END_MSG);
		if (p->o->type == 2) {
			bool inv = (wc.wc_flags & IBV_WC_WITH_INV) != 0;

			if (!inv && p->o->rxe_inv_flag && (wc.wc_flags & KERNEL_WC_WITH_INV)) {
				peer_say(&p->link, "NOTE wc_flags 0x%x: no IBV_WC_WITH_INV (0x%x) "
					 "but the kernel's IB_WC_WITH_INVALIDATE (0x%x, "
					 "IBV_WC_IP_CSUM_OK here), taken for it (--rxe-inv-flag)",
					 wc.wc_flags, IBV_WC_WITH_INV, KERNEL_WC_WITH_INV);
				inv = true;
			}
			if (peer_check(&p->link, inv,
				       "the receive has no IBV_WC_WITH_INV (wc_flags 0x%x)",
				       wc.wc_flags) &&
			    peer_check(&p->link, wc.invalidated_rkey == rkey, "invalidated_rkey "
				       "0x%08x, want the window's 0x%08x", wc.invalidated_rkey,
				       rkey))
				peer_say(&p->link, "receive: IBV_WC_WITH_INV, invalidated_rkey "
					 "0x%08x", wc.invalidated_rkey);
		} else {
			peer_check(&p->link, (wc.wc_flags & IBV_WC_WITH_INV) == 0,
				   "a plain SEND completed with IBV_WC_WITH_INV (wc_flags 0x%x, "
				   "rkey 0x%08x)", wc.wc_flags, wc.invalidated_rkey);
		}
	}
	check_buffer(p, true, "after the writer's WRITE");
	dead_key = rkey;
	if (p->o->type == 1) {
		/* A type 1 window is unbound by a bind of length 0 (with a new key). */
		if (bind_window(p, true, &rkey) != 0)
			goto abort;
		peer_say(&p->link, "type 1 window unbound, its key now 0x%08x", rkey);
		if (peer_send_msg(&p->link, "UNBOUND") != 0)
			return -1;
	}
	/* The writer's WRITE through the dead key has come back refused (or not). */
	if (peer_recv_msg(&p->link, m, "report of the second WRITE") != 0)
		return -1;
	if (!peer_check(&p->link, sscanf(m, "DONE %d", &status) == 1,
			"the writer ended with \"%s\"", m))
		return -1;
	peer_check(&p->link, status == IBV_WC_REM_ACCESS_ERR, "the writer's WRITE through key "
		   "0x%08x after %s completed with %s (%d), want %s", dead_key,
		   p->o->type == 2 ? "the invalidation" : "the unbind",
		   ibv_wc_status_str((enum ibv_wc_status)status), status,
		   ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
	check_buffer(p, true, "after the refused WRITE");
	return peer_send_msg(&p->link, "BYE %d", p->link.failures);

abort:
	peer_send_msg(&p->link, "ABORT the target failed");
	return -1;
}

/* ---- The writer ---- */

static int
post_rdma(struct peer *p, enum wrid id, enum ibv_wr_opcode op, uint8_t *local, uint32_t len,
	  uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)local, .length = len, .lkey = p->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	}, *bad;
	int rc;

	if (op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_INV) {
		memset(&wr.wr, 0, sizeof(wr.wr));
		if (op == IBV_WR_SEND_WITH_INV)
			wr.invalidate_rkey = rkey;
	}
	rc = ibv_post_send(p->qp, &wr, &bad);
	if (rc != 0)
		peer_fail(&p->link, "ibv_post_send (opcode %d): %s", op, strerror(rc));
	return rc != 0 ? -1 : 0;
}

static int
run_writer(struct peer *p)
{
	uint8_t *src = p->buf, *dst = p->buf + READ_OFF, *end = p->buf + END_OFF;
	uint64_t addr;
	uint32_t rkey, len, i, bad = 0, first = 0;
	struct ibv_wc wc;
	char m[MSG_LEN];
	int status = -1;

	if (peer_recv_msg(&p->link, m, "window") != 0)
		return -1;
	if (sscanf(m, "WIN %" SCNx64 " %x %x", &addr, &rkey, &len) != 3) {
		peer_fail(&p->link, "no window from the target: \"%s\"", m);
		return -1;
	}
	peer_say(&p->link, "the target's window: addr 0x%" PRIx64 " length %u rkey 0x%08x", addr,
		 len, rkey);
	if (!peer_check(&p->link, len == WIN_LEN, "window length %u, want %d", len, WIN_LEN))
		goto abort;
	/* The writer's buffer: the pattern at 0, the READ at READ_OFF, the SEND at END_OFF. */
	for (i = 0; i < len; i++) {
		src[i] = PAT1(i);
		dst[i] = 0;
	}
	memcpy(end, END_MSG, END_LEN);

	if (post_rdma(p, WRID_WRITE, IBV_WR_RDMA_WRITE, src, len, addr, rkey) != 0 ||
	    !expect_wc(p, &wc, WRID_WRITE, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE,
		       "RDMA WRITE into the window"))
		goto abort;
	peer_say(&p->link, "RDMA WRITE of %u bytes through 0x%08x: ok", len, rkey);
	if (post_rdma(p, WRID_READ, IBV_WR_RDMA_READ, dst, len, addr, rkey) != 0 ||
	    !expect_wc(p, &wc, WRID_READ, IBV_WC_SUCCESS, IBV_WC_RDMA_READ,
		       "RDMA READ from the window"))
		goto abort;
	peer_check(&p->link, wc.byte_len == len, "RDMA READ: byte_len %u, want %u", wc.byte_len,
		   len);
	for (i = 0; i < len; i++)
		if (dst[i] != PAT1(i) && bad++ == 0)
			first = i;
	if (peer_check(&p->link, bad == 0, "RDMA READ: %u of %u bytes differ from what was "
		       "written, the first at %u: 0x%02x, want 0x%02x", bad, len, first,
		       dst[first], PAT1(first)))
		peer_say(&p->link, "RDMA READ of %u bytes: what was written", len);

	/* Type 2: SEND with Invalidate; type 1: a SEND (its window is not remotely
	 * invalidated). */
	if (post_rdma(p, WRID_SEND, p->o->type == 2 ? IBV_WR_SEND_WITH_INV : IBV_WR_SEND, end,
		      END_LEN, 0, rkey) != 0 ||
	    !expect_wc(p, &wc, WRID_SEND, IBV_WC_SUCCESS, IBV_WC_SEND,
		       p->o->type == 2 ? "SEND with Invalidate" : "SEND"))
		goto abort;
	if (p->o->type == 2) {
		peer_say(&p->link, "SEND with Invalidate of 0x%08x: ok", rkey);
	} else {
		if (peer_recv_msg(&p->link, m, "word of the unbind") != 0)
			return -1;
		if (strcmp(m, "UNBOUND") != 0) {
			peer_fail(&p->link, "the target did not unbind its window: \"%s\"", m);
			return -1;
		}
	}

	/* The window is gone: a WRITE through its key must be refused. */
	for (i = 0; i < len; i++)
		src[i] = PAT2(i);
	if (post_rdma(p, WRID_WRITE2, IBV_WR_RDMA_WRITE, src, len, addr, rkey) == 0 &&
	    wait_wc(p, &wc, "the second RDMA WRITE") == 0) {
		status = wc.status;
		if (peer_check(&p->link,
			       wc.wr_id == WRID_WRITE2 && wc.status == IBV_WC_REM_ACCESS_ERR,
			       "the WRITE through 0x%08x after %s: wr_id %" PRIu64 " status %s "
			       "(%d), want %s", rkey,
			       p->o->type == 2 ? "its invalidation" : "its unbind", wc.wr_id,
			       ibv_wc_status_str(wc.status), wc.status,
			       ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR)))
			peer_say(&p->link, "RDMA WRITE through 0x%08x after %s: %s, as it must",
				 rkey, p->o->type == 2 ? "the invalidation" : "the unbind",
				 ibv_wc_status_str(wc.status));
	}
	if (peer_send_msg(&p->link, "DONE %d", status) != 0 ||
	    peer_recv_msg(&p->link, m, "the target's verdict") != 0)
		return -1;
	peer_check(&p->link, strcmp(m, "BYE 0") == 0, "the target's checks failed: \"%s\"", m);
	return 0;

abort:
	peer_send_msg(&p->link, "ABORT the writer failed");
	return -1;
}

static void
teardown(struct peer *p)
{
	int rc;

	if (p->mw != NULL && (rc = ibv_dealloc_mw(p->mw)) != 0)
		peer_fail(&p->link, "ibv_dealloc_mw: %s", strerror(rc));
	if (p->qp != NULL && (rc = ibv_destroy_qp(p->qp)) != 0)
		peer_fail(&p->link, "ibv_destroy_qp: %s", strerror(rc));
	if (p->msg_mr != NULL && (rc = ibv_dereg_mr(p->msg_mr)) != 0)
		peer_fail(&p->link, "ibv_dereg_mr: %s", strerror(rc));
	if (p->mr != NULL && (rc = ibv_dereg_mr(p->mr)) != 0)
		peer_fail(&p->link, "ibv_dereg_mr: %s", strerror(rc));
	peer_close(&p->link);
	free(p->buf);
	free(p->msg);
}

static void
usage(FILE *f, const char *argv0)
{
	fprintf(f,
"Usage: %s [options]         the target: binds a window, waits for a writer\n"
"       %s [options] HOST    the writer: uses the window of the target on HOST\n"
"  -d DEV    the device (default: the first)\n"
"  -i PORT   its port (default 1)\n"
"  -g INDEX  the GID index (default 0)\n"
"  -p PORT   the TCP port of the exchange (default 18515)\n"
"  -t 1|2    the window's type (default 2)\n"
"  --rxe-inv-flag  the target takes the kernel's IB_WC_WITH_INVALIDATE bit (1 << 2)\n"
"            for IBV_WC_WITH_INV, as Linux 6.1's rxe sets it, and says so\n", argv0, argv0);
}

int
main(int argc, char **argv)
{
	struct opts o = { .ib_port = 1, .tcp_port = 18515, .type = 2 };
	struct peer p = {
		.link = { .name = "mw_peer", .msg_len = MSG_LEN, .sock = -1 },
		.o = &o,
	};
	static const struct option longopts[] = {
		{ "rxe-inv-flag", no_argument, NULL, 'K' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, rc;

	while ((c = getopt_long(argc, argv, "d:i:g:p:t:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'K': o.rxe_inv_flag = true; break;
		case 'd': o.dev = optarg; break;
		case 'i': o.ib_port = atoi(optarg); break;
		case 'g': o.gid_index = atoi(optarg); break;
		case 'p': o.tcp_port = atoi(optarg); break;
		case 't': o.type = atoi(optarg); break;
		case 'h': usage(stdout, argv[0]); return 0;
		default: usage(stderr, argv[0]); return 2;
		}
	}
	if (optind + 1 < argc || (o.type != 1 && o.type != 2)) {
		usage(stderr, argv[0]);
		return 2;
	}
	o.host = optind < argc ? argv[optind] : NULL;
	p.link.role = o.host == NULL ? "target" : "writer";

	rc = setup(&p);
	if (rc == 0)
		rc = peer_tcp_connect(&p.link, o.host, o.tcp_port);
	if (rc == 0)
		rc = connect_qp(&p);
	if (rc == 0)
		rc = o.host == NULL ? run_target(&p) : run_writer(&p);
	teardown(&p);
	return peer_verdict(&p.link, rc);
}
