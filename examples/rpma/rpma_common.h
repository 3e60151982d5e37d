/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RPMA_COMMON_H
#define RPMA_COMMON_H

/*
 * The small helper shared by the librpma examples: option parsing, the run's deadline
 * (alarm(2) as the backstop for calls that block inside librpma), waits on librpma's file
 * descriptors with that deadline, the connection set-up steps, and the small wire
 * formats (the client's hello in the connection private data, the ping-pong message, a
 * server's offer of a region in the private data of its accept).
 * Nothing here knows about droce: the programs run on any RDMA device librpma supports.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <librpma.h>

#define RC_EXIT_OK		0
#define RC_EXIT_FAIL		1
#define RC_EXIT_USAGE		2

#define RC_DEFAULT_TIMEOUT_S	30
#define RC_MAX_TIMEOUT_S	86400
/* Seconds alarm(2) waits past the deadline: the waits here report a timeout first. */
#define RC_ALARM_GRACE_S	2
/* rdma_resolve_addr/rdma_resolve_route (rpma_conn_cfg_set_timeout): ARP may be slow. */
#define RC_RESOLVE_TIMEOUT_MS	5000
/* Pause between connection attempts while the server is not listening yet. */
#define RC_RETRY_MS		100

#define RC_DEFAULT_ITERS	1000
#define RC_MAX_ITERS		100000000u
#define RC_MAX_CLIENTS		64

/* The client's hello, carried in the private data of its connection request. */
#define RC_HELLO_MAGIC		0x4f4c4548u	/* "HELO" */
struct rc_hello {
	uint32_t magic;
	uint32_t id;		/* client id (rpma_srq_server); 0 elsewhere */
	uint32_t count;		/* messages the client will send */
	uint32_t reserved;
};

/* One ping-pong message: the client sends value, the server answers value + 1. */
#define RC_MSG_MAGIC		0x474e4950u	/* "PING" */
#define RC_MSG_SIZE		16u
struct rc_msg {
	uint32_t magic;
	uint32_t id;
	uint64_t value;
};

/*
 * A server's offer of one registered region, in the private data of its accept (the client
 * reads it once the connection is established): the region's descriptor
 * (rpma_mr_get_descriptor) and, when the server declares Direct Write to PMem, its peer
 * configuration's (rpma_peer_cfg_get_descriptor), which the client applies to the
 * connection before rpma_flush(RPMA_FLUSH_TYPE_PERSISTENT) is allowed.
 */
#define RC_OFFER_MAGIC		0x5246464fu	/* "OFFR" */
/* Both descriptors (librpma 1.2: 21 and 1 bytes) with room to spare; 56 bytes in all. */
#define RC_OFFER_DESC_MAX	48u
struct rc_offer {
	uint32_t magic;
	uint8_t mr_desc_size;
	uint8_t pcfg_desc_size;		/* 0: no peer configuration */
	uint8_t reserved[2];
	uint8_t desc[RC_OFFER_DESC_MAX];	/* the region's, then the peer's */
};

/* The program name used as a prefix of every message. */
extern const char *rc_prog;

/* Print "PROG: msg" on stderr. */
void rc_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print "PROG: what: <librpma's error string>" on stderr; returns -1. */
int rc_rpma_err(const char *what, int ret);
/* Print "PROG: msg" and the hint to --help on stderr; returns RC_EXIT_USAGE. */
int rc_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A step done: one line on stdout, flushed (the tests read it while the program runs). */
void rc_step(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * The operands "server|client ADDR PORT" (argv[first..]); as rc_usage_error on failure.
 * The strings are argv's.
 */
int rc_parse_role(int argc, char **argv, int first, bool *server, const char **addr,
		  const char **port);

/* Parse a decimal number in [min, max] for option opt; as rc_usage_error on failure. */
int rc_parse_u32(const char *opt, const char *arg, uint32_t min, uint32_t max,
		 uint32_t *out);

/* rc_parse_opt: opt is none of the shared options, the program parses it itself. */
#define RC_OPT_NOT_SHARED	(-1)

/*
 * One option getopt returned, when the examples share it: -T into timeout_s, -v into
 * verbose, -h (usage(stdout), then exit status RC_EXIT_OK). 0, RC_EXIT_USAGE after the
 * usage error, or RC_OPT_NOT_SHARED for any other.
 */
int rc_parse_opt(int opt, const char *arg, uint32_t *timeout_s, bool *verbose,
		 void (*usage)(FILE *f));

/*
 * Start the run's clock: every wait below gives up at now + timeout_s, and SIGALRM ends
 * the process RC_ALARM_GRACE_S later if a call inside librpma blocks past it. verbose
 * lowers librpma's stderr threshold from WARNING to NOTICE.
 */
void rc_start(uint32_t timeout_s, bool verbose);
/* Milliseconds left before the deadline (0 once passed). */
int rc_remaining_ms(void);

/* Wait until fd is readable; -1 after a message naming what on timeout or error. */
int rc_wait_fd(int fd, const char *what);

/*
 * Take 1..max completions from cq: poll, and when it is empty wait on its completion
 * channel (rpma_cq_get_fd, then rpma_cq_wait, which acknowledges and re-arms) and poll
 * again. Returns the number taken, or -1 after a message on error or timeout.
 */
int rc_cq_take(struct rpma_cq *cq, struct ibv_wc *wc, int max, const char *what);
/* 0 if wc succeeded with opcode want; -1 after a message otherwise. */
int rc_wc_check(const struct ibv_wc *wc, int want, const char *what);

/* The next event of conn, which must be want; -1 after a message otherwise. */
int rc_conn_expect(struct rpma_conn *conn, enum rpma_conn_event want);

/* rpma_utils_get_ibv_context(addr, type) and rpma_peer_new. */
int rc_peer_new(const char *addr, enum rpma_util_ibv_context_type type,
		struct rpma_peer **peer);

/*
 * Client side: connect to addr:port with cfg, sending pdata (may be NULL) and, when
 * recv_mr is not NULL, with one receive of len bytes at offset posted before connecting
 * (rpma_conn_req_recv). A REJECTED or UNREACHABLE connection is retried until the
 * deadline: the server may not be listening yet. Waits for ESTABLISHED.
 */
int rc_client_connect(struct rpma_peer *peer, const char *addr, const char *port,
		      const struct rpma_conn_cfg *cfg, const struct rpma_conn_private_data *pdata,
		      struct rpma_mr_local *recv_mr, size_t offset, size_t len,
		      struct rpma_conn **conn);

/* Server side: the next connection request on ep, waited for with the deadline. */
int rc_next_conn_req(struct rpma_ep *ep, const struct rpma_conn_cfg *cfg,
		     struct rpma_conn_req **req);

/* Client: disconnect, wait for CLOSED, delete. Server: wait for CLOSED, disconnect, delete. */
int rc_disconnect_first(struct rpma_conn **conn);
int rc_disconnect_after_peer(struct rpma_conn **conn);
/* On a failure: disconnect without waiting for the peer, delete. */
void rc_conn_abort(struct rpma_conn **conn);

/* Decode the hello of a connection request's private data; -1 after a message. */
int rc_hello_get(const struct rpma_conn_private_data *pd, struct rc_hello *h);

void rc_msg_put(void *buf, uint32_t id, uint64_t value);
/* Decode buf and check its magic; -1 after a message. */
int rc_msg_get(const void *buf, struct rc_msg *m);

/* Fill o with mr's descriptor and pcfg's (may be NULL), pd pointing at o; -1 on error. */
int rc_offer_put(const struct rpma_mr_local *mr, const struct rpma_peer_cfg *pcfg,
		 struct rc_offer *o, struct rpma_conn_private_data *pd);
/*
 * Decode an offer: *mr (rpma_mr_remote_delete it) and *pcfg (rpma_peer_cfg_delete it), NULL
 * when the server sent no peer configuration. -1 after a message.
 */
int rc_offer_get(const struct rpma_conn_private_data *pd, struct rpma_mr_remote **mr,
		 struct rpma_peer_cfg **pcfg);

/* Page-aligned, zeroed buffer of len bytes; NULL and a message on failure. */
void *rc_alloc(size_t len);

#endif /* RPMA_COMMON_H */
