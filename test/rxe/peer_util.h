/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef PEER_UTIL_H
#define PEER_UTIL_H

/*
 * What the soft-RoCE interop suite's programs of our own (mw_peer, mcast_peer) share: the
 * lines they print, which test_rxe_interop.py reads ("NAME: ROLE: ...", "NAME: FAIL ROLE:
 * ...", the verdict), the TCP exchange of fixed-size text messages that sets a run up, the
 * device with its PD and CQ, and a QP on them up to INIT. Each program's struct peer
 * embeds a struct peer_link, which all of this works on; what else a program makes is its
 * own. Built into each program, against rdma-core's headers and the system's libibverbs
 * as they are (test/rxe/meson.build).
 */

#include <stdbool.h>
#include <stddef.h>

#include <infiniband/verbs.h>

/* The longest TCP message a program may use (its msg_len). */
#define PEER_MSG_MAX	160

struct peer_link {
	const char *name;	/* the program's: the first word of every line */
	const char *role;	/* the second: target, writer, receiver, sender */
	/* Every TCP message is msg_len bytes of NUL-padded text (at most PEER_MSG_MAX):
	 * both sides run the same program, so each program keeps its own length. */
	size_t msg_len;
	/* Whether a message that starts with "ABORT" (the peer gave up) fails
	 * peer_recv_msg; without, it is read as any other (and its parsing fails). */
	bool abort_fails;
	int sock;		/* the TCP connection to the peer; -1 before */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	int checks;
	int failures;
};

/* "NAME: FAIL ROLE: ..." and a failure. */
void peer_fail(struct peer_link *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* One check: counted, and a FAIL line when it fails. Returns cond. */
bool peer_check(struct peer_link *l, bool cond, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* "NAME: ROLE: ...". */
void peer_say(const struct peer_link *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/*
 * The last line, "NAME: ROLE: all N checks passed" when rc is 0 and nothing failed,
 * else "NAME: ROLE: F of N checks failed"; returns the exit status (0 or 1).
 */
int peer_verdict(const struct peer_link *l, int rc);

/* Seconds on the monotonic clock. */
double peer_now_s(void);

/*
 * The TCP connection to the peer in l->sock: to host, or (host NULL) the one peer that
 * connects to port on any address of this side. Every message may then take 120 s (the
 * guest runs under TCG).
 */
int peer_tcp_connect(struct peer_link *l, const char *host, int port);
/* One message, formatted, sent whole. */
int peer_send_msg(struct peer_link *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The peer's next message into m (msg_len bytes, NUL-terminated); what names it in
 * failures. */
int peer_recv_msg(struct peer_link *l, char *m, const char *what);

/* The device named dev (NULL: the first) opened in l->ctx, and its attributes. */
int peer_open_device(struct peer_link *l, const char *dev, struct ibv_device_attr *dattr);
/* GID index of port into gid. */
int peer_query_gid(struct peer_link *l, int port, int index, union ibv_gid *gid);
/* l->pd, and l->cq of cqe entries. */
int peer_alloc_pd_cq(struct peer_link *l, int cqe);
/*
 * *qp: a QP as init asks (its CQs l->cq) on l->pd, taken to INIT with attr (state INIT,
 * its port) and what mask adds to IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT. *qp
 * stays set when only the INIT fails, for the program's teardown.
 */
int peer_create_qp(struct peer_link *l, struct ibv_qp_init_attr *init,
		   struct ibv_qp_attr *attr, int mask, struct ibv_qp **qp);
/* The CQ, the PD, the device and the TCP connection, what of them there is: the program
 * has destroyed what it made on them. */
void peer_close(struct peer_link *l);

/* A GID as an IPv6 address (len: INET6_ADDRSTRLEN). */
void peer_gid_str(const union ibv_gid *gid, char *s, size_t len);
/* A GID as 32 hex digits and back, for the TCP messages. */
void peer_gid_to_hex(const union ibv_gid *gid, char hex[33]);
int peer_hex_to_gid(const char *hex, union ibv_gid *gid);

#endif /* PEER_UTIL_H */
