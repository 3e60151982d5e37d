/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef PERF_OOB_H
#define PERF_OOB_H

/*
 * perftest's out-of-band TCP exchange (perftest 4.5, Debian 12's perftest 4.5+0.17-1,
 * which calls itself version "6.06"), ethernet mode (no -R/-z rdma_cm), so droce-perf can
 * be either side against an unmodified ib_write_bw, ib_send_bw, ib_read_bw, ib_*_lat.
 * The message formats are in doc/tools/droce-perf-oob.md. Plain structs only: no engine
 * types. All socket calls are blocking with a poll() timeout; every function returns 0
 * on success or -1 with a message in conn->err.
 *
 * Order (both sides, the client writes first in every exchange, the server reads first):
 *	perf_oob_connect / perf_oob_accept
 *	perf_oob_setup			versions, cycle buffer + cache line, MTU
 *	perf_oob_hand_shake per QP	destinations (twice for the _bw tests: before and
 *					after connecting the QPs)
 *	perf_oob_hand_shake		"QP is RTR" barrier (destination 0 again)
 *	... traffic ...
 *	perf_oob_hand_shake		end barrier (_bw, not duplex)
 *	perf_oob_xchg_bw_report		results (_bw)
 *	perf_oob_close			barrier + "done"
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PERF_OOB_VERSION_LEN	16	/* perftest's MAX_VERSION */
#define PERF_OOB_VERSION	"6.06"	/* what Debian 12's perftest 4.5+0.17 sends */
#define PERF_OOB_MIN_VERSION	5.70	/* perftest refuses older peers */
#define PERF_OOB_DEST_LEN	59	/* destination without GID, NUL included */
#define PERF_OOB_DEST_GID_LEN	108	/* with GID (RoCE), NUL included */
#define PERF_OOB_DEFAULT_PORT	18515

/* One QP's destination: perftest's struct pingpong_dest as it crosses the wire. */
struct perf_oob_dest {
	uint16_t lid;
	uint8_t out_reads;
	uint32_t qpn;		/* 24 bits */
	uint32_t psn;		/* 24 bits */
	uint32_t rkey;
	uint64_t vaddr;
	uint8_t gid[16];
	uint32_t srqn;
};

/* What this side offers in perf_oob_setup. */
struct perf_oob_params {
	char version[PERF_OOB_VERSION_LEN];	/* "" means PERF_OOB_VERSION */
	uint32_t cycle_buffer;		/* page size, perftest's default sysconf(_SC_PAGESIZE) */
	uint32_t cache_line_size;	/* perftest's default 64 */
	int mtu;			/* enum ibv_mtu: 1=256 .. 5=4096 */
	bool use_gid;			/* RoCE: 108-byte destinations with the GID */
};

/* The bandwidth report (_bw tests), in host order. */
struct perf_oob_bw_report {
	uint64_t size;
	uint64_t iters;
	double bw_peak;
	double bw_avg;
	double msg_rate_avg;
};

struct perf_oob_conn {
	int fd;
	bool is_client;		/* client writes first */
	bool use_gid;
	int timeout_ms;
	/*
	 * Called while a read or write waits (NULL: poll() sleeps): droce-perf keeps its
	 * engines and their ARP answers going while the peer is busy, since a perftest peer
	 * over droced waits for droced's ARP request to be answered before it replies.
	 * Set after connect or accept.
	 */
	void (*idle)(void *arg);
	void *idle_arg;
	/* Filled by perf_oob_setup. */
	char rem_version[PERF_OOB_VERSION_LEN + 1];
	uint32_t rem_cycle_buffer, rem_cache_line_size;
	int rem_mtu;
	uint32_t cycle_buffer, cache_line_size;	/* the max of both sides, as perftest */
	int mtu;				/* the min of both sides */
	char err[256];
};

/* Client: connects to host:port, retrying until timeout_ms (perftest's server may start later). */
int perf_oob_connect(struct perf_oob_conn *c, const char *host, uint16_t port, int timeout_ms);
/* Server: a listening socket on port (all addresses); returns the fd or -1. */
int perf_oob_listen(uint16_t port, char *err, size_t errlen);
/* Server: accepts one client on lfd within timeout_ms. */
int perf_oob_accept(struct perf_oob_conn *c, int lfd, int timeout_ms);
void perf_oob_conn_close(struct perf_oob_conn *c);

/* One message of n bytes each way, alone (droce-perf's own exchanges). */
int perf_oob_send(struct perf_oob_conn *c, const void *buf, size_t n);
int perf_oob_recv(struct perf_oob_conn *c, void *buf, size_t n);
/* Exchanges n bytes: client writes then reads, server reads then writes (ctx_xchg_data). */
int perf_oob_xchg(struct perf_oob_conn *c, const void *mine, void *theirs, size_t n);
/* Versions, cycle buffer and cache line size, MTU; rejects a peer older than 5.70. */
int perf_oob_setup(struct perf_oob_conn *c, const struct perf_oob_params *p);

/* Formats a destination as perftest does; returns the length written (59 or 108, NUL included). */
size_t perf_oob_format_dest(const struct perf_oob_dest *d, bool use_gid, char *buf, size_t len);
/* Parses one; -1 when malformed. */
int perf_oob_parse_dest(const char *buf, size_t len, bool use_gid, struct perf_oob_dest *d);
/* Exchanges destinations (ctx_hand_shake); also the barrier. */
int perf_oob_hand_shake(struct perf_oob_conn *c, const struct perf_oob_dest *mine,
			struct perf_oob_dest *theirs);
/* perftest's GID check: both IPv4-mapped or neither; -1 with c->err otherwise. */
int perf_oob_check_gid(struct perf_oob_conn *c, const struct perf_oob_dest *mine,
		       const struct perf_oob_dest *theirs);
/* Exchanges bandwidth reports (xchg_bw_reports, peer version >= 5.33, no per-port). */
int perf_oob_xchg_bw_report(struct perf_oob_conn *c, const struct perf_oob_bw_report *mine,
			    struct perf_oob_bw_report *theirs);
/* ctx_close_connection: a hand shake, then "done\0", then close. */
int perf_oob_close(struct perf_oob_conn *c, const struct perf_oob_dest *mine,
		   struct perf_oob_dest *theirs);

#endif
