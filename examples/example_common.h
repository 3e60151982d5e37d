/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef EXAMPLE_COMMON_H
#define EXAMPLE_COMMON_H

/*
 * The small helper shared by the examples: option parsing, device and GID lookup, the
 * resources every example holds, QP state transitions, the out-of-band TCP exchange of
 * connection information, the payload pattern, completion waits with a deadline, and the
 * result line. Only standard verbs calls are used, so the
 * examples run on libdroce, rxe and RDMA NICs alike.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#define EX_EXIT_OK		0
#define EX_EXIT_FAIL		1
#define EX_EXIT_USAGE		2

#define EX_DEFAULT_TCP_PORT	18516
#define EX_DEFAULT_TIMEOUT_S	30
#define EX_DEFAULT_ITERS	1000
#define EX_DEFAULT_SIZE		4096
#define EX_MAX_SIZE		(1u << 30)
#define EX_MAX_ITERS		1000000000u
#define EX_MAX_TIMEOUT_S	86400
#define EX_MAX_GID_INDEX	255

/* Receives kept posted per QP or SRQ by the ping-pongs: more than a ping-pong ever needs. */
#define EX_RX_DEPTH		16

/* UD receive buffers start with room for the GRH or, on RoCE, the IP header (IBA 11.4.1.2). */
#define EX_GRH_LEN		40
/* A RoCEv2 IPv4 header sits in the last 20 bytes of that area. */
#define EX_GRH_IPV4_OFF		20

#define EX_QKEY			0x11111111u
#define EX_PSN_MASK		0xFFFFFFu
#define EX_HOP_LIMIT		64
/* RC timers: local ACK timeout 4.096 us * 2^14 (~67 ms), 7 retries, RNR retry forever. */
#define EX_RC_TIMEOUT		14
#define EX_RC_RETRY_CNT		7
#define EX_RC_RNR_RETRY		7
#define EX_RC_MIN_RNR_TIMER	12

/* Tags of the TCP synchronisation points. */
#define EX_TAG_READY		'R'
#define EX_TAG_DONE		'D'

/* What each side tells the other over TCP before connecting its QP. */
struct ex_dest {
	uint32_t qpn;
	uint32_t psn;
	uint32_t id;		/* client id given by droce-srq-server; 0 elsewhere */
	uint32_t size;		/* message size: both sides must agree */
	uint32_t iters;		/* iterations: both sides must agree */
	union ibv_gid gid;
};

/* The options the examples share, as far as each program's option string has them. */
struct ex_opts {
	const char *dev_name;		/* -d; NULL: the first device */
	const char *server;		/* the peer to connect to; NULL: run as the server */
	uint32_t tcp_port;		/* -p */
	uint32_t ib_port;		/* -i */
	uint32_t gid_index;		/* -g */
	uint32_t size;			/* -s */
	uint32_t iters;			/* -n */
	uint32_t timeout_s;		/* -T */
	enum ibv_mtu mtu;		/* -m, when mtu_set; else the port's active MTU */
	bool mtu_set;
	bool events;			/* -e: wait on a completion channel */
};

/* The defaults of struct ex_opts, messages of default_size bytes. */
#define EX_OPTS_DEFAULT(default_size) {			\
		.tcp_port = EX_DEFAULT_TCP_PORT,		\
		.ib_port = 1,					\
		.size = (default_size),				\
		.iters = EX_DEFAULT_ITERS,			\
		.timeout_s = EX_DEFAULT_TIMEOUT_S,		\
	}

/* ex_parse_opt: opt is none of the shared options, the program parses it itself. */
#define EX_OPT_NOT_SHARED	(-1)

/* The program name used as a prefix of every message. */
extern const char *ex_prog;

uint64_t ex_now_us(void);

/*
 * Parse a decimal (or 0x hex) number in [min, max] for option opt. On failure print the
 * usage error and return EX_EXIT_USAGE.
 */
int ex_parse_u32(const char *opt, const char *arg, uint32_t min, uint32_t max,
		 uint32_t *out);
/* Parse a path MTU in bytes (256, 512, 1024, 2048, 4096); as ex_parse_u32 on failure. */
int ex_parse_mtu(const char *arg, enum ibv_mtu *out);
/*
 * One option getopt returned: when it is a shared one (-p -d -i -g -s -n -m -e -T, -s up
 * to max_size), its argument into o and EX_EXIT_OK, or EX_EXIT_USAGE after the usage
 * error; EX_OPT_NOT_SHARED for any other.
 */
int ex_parse_opt(int opt, const char *arg, uint32_t max_size, struct ex_opts *o);
/* After the options of a ping-pong: at most one argument, the server to connect to. */
int ex_parse_peer(int argc, char **argv, struct ex_opts *o);
unsigned int ex_mtu_bytes(enum ibv_mtu mtu);

/* Print "PROG: msg" and the hint to --help on stderr; returns EX_EXIT_USAGE. */
int ex_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print "PROG: msg" on stderr. */
void ex_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Open the device named name (NULL: the first one). NULL and a message on failure. */
struct ibv_context *ex_open_device(const char *name);
/* Query the port and the GID at gid_index; the GID must not be empty. */
int ex_query_port_gid(struct ibv_context *ctx, uint8_t port, int gid_index,
		      struct ibv_port_attr *port_attr, union ibv_gid *gid);
/* The GID as an IPv6 address ("::ffff:10.99.0.1" for an IPv4-mapped one). */
void ex_gid_str(const union ibv_gid *gid, char *buf, size_t len);
bool ex_gid_is_v4(const union ibv_gid *gid);
void ex_print_dest(const char *what, const struct ex_dest *d);

uint32_t ex_random_psn(void);
/* Page-aligned, zeroed buffer of at least len bytes; NULL and a message on failure. */
void *ex_alloc_buf(size_t len);

/*
 * What every example holds: the device, a PD, one buffer and its MR (local write), the
 * completion channel when completions are waited for with events, and one CQ.
 */
struct ex_res {
	struct ibv_context *ctx;
	struct ibv_comp_channel *ch;	/* NULL: busy polling */
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
};

/*
 * With r->ctx open: a zeroed buffer of len bytes, the PD, the MR over the buffer, a
 * completion channel when events, and a CQ of cqe entries. -1 after a message; what was
 * created stays in r for ex_res_destroy.
 */
int ex_res_create(struct ex_res *r, size_t len, int cqe, bool events);
/*
 * Destroys what r holds and closes the device; QPs, SRQs and AHs, which hold the CQ or
 * the PD, go first (the caller's). -1 after a message for each that failed.
 */
int ex_res_destroy(struct ex_res *r);

/*
 * The path MTU: mtu when set (-m), else the port's active MTU; -1 after a message when it
 * exceeds the active MTU.
 */
int ex_path_mtu(const struct ibv_port_attr *port_attr, uint8_t port, bool mtu_set,
		enum ibv_mtu mtu, enum ibv_mtu *out);

/* The address of a peer on RoCE, which has no LIDs: every address carries a GRH. */
void ex_ah_attr(struct ibv_ah_attr *ah, const union ibv_gid *dgid, uint8_t sgid_index,
		uint8_t port);
/*
 * RESET -> INIT on port, P_Key index 0: a UD QP with qkey, a connected QP with no remote
 * access. -1 after a message.
 */
int ex_qp_init(struct ibv_qp *qp, enum ibv_qp_type type, uint8_t port, uint32_t qkey);
/*
 * INIT -> RTR -> RTS of a connected (RC or UC) QP towards remote, sending from local->psn,
 * with the EX_RC_* timers on RC. -1 after a message.
 */
int ex_qp_connect(struct ibv_qp *qp, enum ibv_qp_type type, enum ibv_mtu mtu, uint8_t port,
		  uint8_t gid_index, const struct ex_dest *local, const struct ex_dest *remote);
/* INIT -> RTR -> RTS of a UD QP, which has no remote end (IBA 11.2.4.2). */
int ex_qp_ud_ready(struct ibv_qp *qp, uint32_t sq_psn);

/* TCP: every call gives up after timeout_s seconds with a message. */
int ex_tcp_listen(uint16_t port);
int ex_tcp_accept(int lfd, int timeout_s);
/* Retries refused connections until the deadline: the server may start later. */
int ex_tcp_connect(const char *host, uint16_t port, int timeout_s);
int ex_tcp_send_dest(int fd, const struct ex_dest *d, int timeout_s);
int ex_tcp_recv_dest(int fd, struct ex_dest *d, int timeout_s);
int ex_tcp_send_tag(int fd, char tag, int timeout_s);
int ex_tcp_recv_tag(int fd, char tag, int timeout_s);
/*
 * The ping-pongs' exchange: local to the peer, remote from it, which must run the same
 * size and iterations. -1 after a message.
 */
int ex_tcp_exchange_dest(int fd, const struct ex_dest *local, struct ex_dest *remote,
			 int timeout_s);

/*
 * Payload pattern: byte off of message iter on stream stream. Streams keep directions
 * (and clients) apart, so a message delivered to the wrong place fails the check.
 */
void ex_pattern_fill(void *buf, size_t len, uint32_t stream, uint32_t iter);
/* 0, or -1 after a message naming the iteration and the first bad offset. */
int ex_pattern_check(const void *buf, size_t len, uint32_t stream, uint32_t iter);

/*
 * Wait for at least one completion on cq, at most max: busy polling, or sleeping on the
 * completion channel ch when it is not NULL (arming the CQ, acknowledging each event).
 * Returns the number of completions, or -1 after a message on error or timeout.
 */
int ex_cq_wait(struct ibv_cq *cq, struct ibv_comp_channel *ch, struct ibv_wc *wc, int max,
	       int timeout_s);
/* Message for a failed work completion. */
void ex_wc_err(const struct ibv_wc *wc, const char *what, uint32_t iter);

/* The one result line: iters=N size=S bytes=B usec=U Mbit/s=X usec/iter=Y. */
void ex_print_result(uint32_t iters, uint32_t size, uint64_t bytes, uint64_t usec);

#endif /* EXAMPLE_COMMON_H */
