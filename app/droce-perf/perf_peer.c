/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The peer in another process: droce-perf --server/--client, or an unmodified perftest
 * (ib_write_bw, ib_send_bw, ib_send_lat) on a ConnectX, soft-RoCE or droced. perftest
 * exchanges no test settings, only QPs and barriers (doc/tools/droce-perf-oob.md), and
 * each of its tests has its own order of them, which this file follows as the mode's row
 * says (its peer: PERF_PEER_WRITE, PERF_PEER_SEND; read from the tests' main() in
 * perftest 4.5-0.17; n is the number of QPs):
 *
 *	write (ib_write_bw): n destinations, connect, n again, barrier ("RTR"), traffic,
 *		end barrier, bandwidth reports (the server prints the client's), close
 *	send (ib_send_bw): n destinations, connect, barrier, n again, receives posted,
 *		barrier, traffic, report, close (its -a, which we do not run, adds a
 *		barrier after each size)
 *	lat (ib_send_lat): n destinations, connect, barrier, n again, receives posted,
 *		barrier, traffic, report, close
 *
 * perftest sends no MAC: the host learns the peer's by ARP (lib/net, as droced does,
 * perf_net.c), and it answers the peer's ARP requests (droced resolves droce-perf's
 * address before the peer's QP can reach RTR). Every wait on the TCP connection polls
 * the engines meanwhile.
 *
 * The raw modes are droce-perf's own (perftest has none), on the same connection after
 * perftest's set-up: a hello each way (mode, size, the MAC the frames go to), a start
 * barrier, and at the end reports of the counts, the client's first, each answered:
 * the client's frames sent and its time, the server's received (and sent back), and in
 * the end what came back to the client. No ARP, no engine: the ports are polled directly.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include <rte_common.h>
#include <rte_cycles.h>

#include "perf.h"
#include "perf_oob.h"

/* The peer's next message: it may be a perftest starting up (it sleeps 1 s) or busy. */
#define OOB_TIMEOUT_MS		30000
#define CACHE_LINE		64	/* perftest's default cache line size */
/* ARP (perf_net.c): how long the peer's MAC may take. */
#define ARP_WAIT_S		10
/* What perftest's destination says of its reads in flight (ib_write_bw sends 1). */
#define OUT_READS		1
/*
 * The raw hello: text, as long as perftest's destination, which a peer in a RoCE mode
 * sends in its place: both ends then read one message and tell the user what differs.
 */
#define RAW_HELLO_LEN		PERF_OOB_DEST_GID_LEN
#define RAW_HELLO		"droce-perf raw"

struct perf_remote {
	struct perf_oob_conn conn;
	struct perf_host *h;		/* the local host */
	struct perf_oob_dest *mine, *theirs;	/* one per QP */
	uint32_t *qpns, *psns;
	uint64_t *vaddrs;
};

const char *
perf_peer_name(const struct perf_run *r)
{
	return r->o->role == PERF_ROLE_CLIENT ? r->o->peer : "a client";
}

static int
oob_fail(struct perf_run *r, const char *what)
{
	fprintf(stderr, "droce-perf: out-of-band exchange with %s, %s: %s\n", perf_peer_name(r),
		what, r->remote->conn.err);
	return -1;
}

/* The waits on the TCP connection keep the local engines and ARP going, once made. */
static void
oob_idle(void *arg)
{
	struct perf_host *h = arg;

	if (h->eng[h->nb_engines - 1] != NULL)
		perf_host_poll(h);
}

/*
 * The raw modes' hello, each way: "droce-perf raw MODE SIZE MAC". Both ends must run the
 * same mode and size; the peer's MAC is where the frames go. One destination (zeros) for
 * the start and close barriers.
 */
static int
raw_hello(struct perf_run *r, const struct perf_host *h)
{
	struct perf_remote *rm = r->remote;
	const struct perf_opts *o = r->o;
	char mine[RAW_HELLO_LEN], theirs[RAW_HELLO_LEN + 1], mode[16];
	unsigned int size, m[6];
	int i;

	rm->mine = calloc(1, sizeof(*rm->mine));
	rm->theirs = calloc(1, sizeof(*rm->theirs));
	if (rm->mine == NULL || rm->theirs == NULL)
		return -1;
	memset(mine, 0, sizeof(mine));
	snprintf(mine, sizeof(mine), RAW_HELLO " %s %u %02x:%02x:%02x:%02x:%02x:%02x",
		 o->mode->name, o->size, h->mac[0], h->mac[1], h->mac[2], h->mac[3],
		 h->mac[4], h->mac[5]);
	if (perf_oob_xchg(&rm->conn, mine, theirs, RAW_HELLO_LEN) != 0)
		return oob_fail(r, "the raw hello");
	theirs[RAW_HELLO_LEN] = '\0';
	if (sscanf(theirs, RAW_HELLO " %15s %u %x:%x:%x:%x:%x:%x", mode, &size, &m[0], &m[1],
		   &m[2], &m[3], &m[4], &m[5]) != 8) {
		fprintf(stderr, "droce-perf: %s is not droce-perf in a raw mode (it sent "
			"\"%.40s\"): give both ends the same --mode\n", perf_peer_name(r), theirs);
		return -1;
	}
	if (strcmp(mode, o->mode->name) != 0 || size != o->size) {
		fprintf(stderr, "droce-perf: %s runs %s with -s %u, this side %s with -s %u: "
			"give both ends the same --mode and -s\n", perf_peer_name(r), mode, size,
			o->mode->name, o->size);
		return -1;
	}
	for (i = 0; i < 6; i++)
		r->peer_mac[i] = (uint8_t)m[i];
	return 0;
}

/*
 * The TCP connection and perftest's first messages (versions, page size and cache line,
 * MTU), which come before any resource: the MTU is the smaller of both ends', and the
 * peer WRITEs within max(size, the larger page size) of our buffer (perftest's cycle
 * buffer: its write_bw cycles its remote address over it).
 */
int
perf_peer_open(struct perf_run *r, struct perf_host *h, struct perf_opts *o)
{
	struct perf_oob_params prm;
	struct perf_remote *rm;
	char err[256];
	long page = sysconf(_SC_PAGESIZE);
	int lfd;

	rm = calloc(1, sizeof(*rm));
	if (rm == NULL)
		return -1;
	rm->conn.fd = -1;
	rm->h = h;
	r->remote = rm;
	/* raw: frames to the MAC the hello gives, no ARP */
	if (o->mode->peer != PERF_PEER_RAW && perf_net_open(h, o) != 0)
		return -1;
	if (o->role == PERF_ROLE_CLIENT) {
		if (perf_oob_connect(&rm->conn, o->peer, o->tcp_port, OOB_TIMEOUT_MS) != 0)
			return oob_fail(r, "connecting");
	} else {
		lfd = perf_oob_listen(o->tcp_port, err, sizeof(err));
		if (lfd < 0) {
			fprintf(stderr, "droce-perf: --server: listening: %s\n", err);
			return -1;
		}
		/* on stderr, which --json leaves free: scripts start the client after it */
		fprintf(stderr, "droce-perf: --server: waiting for the client on TCP port %u\n",
			o->tcp_port);
		if (perf_oob_accept(&rm->conn, lfd, OOB_TIMEOUT_MS) != 0) {
			close(lfd);
			return oob_fail(r, "accepting");
		}
		close(lfd);
	}
	rm->conn.idle = oob_idle;
	rm->conn.idle_arg = h;
	memset(&prm, 0, sizeof(prm));
	prm.cycle_buffer = page > 0 ? (uint32_t)page : 4096;
	prm.cache_line_size = CACHE_LINE;
	prm.mtu = o->mtu;
	prm.use_gid = true;	/* RoCE: destinations carry the GID */
	if (perf_oob_setup(&rm->conn, &prm) != 0)
		return oob_fail(r, "set-up");
	o->mtu = (uint8_t)rm->conn.mtu;
	h->buf_min = RTE_MAX((uint64_t)o->size, (uint64_t)rm->conn.cycle_buffer);
	return o->mode->peer == PERF_PEER_RAW ? raw_hello(r, h) : 0;
}

/* All destinations, QP by QP (perftest's loop of ctx_hand_shake). */
static int
xchg_dests(struct perf_run *r)
{
	struct perf_remote *rm = r->remote;
	uint32_t i;

	for (i = 0; i < rm->h->nb_qps; i++) {
		if (perf_oob_hand_shake(&rm->conn, &rm->mine[i], &rm->theirs[i]) != 0)
			return oob_fail(r, "destinations");
	}
	return 0;
}

static int
barrier(struct perf_run *r, const char *what)
{
	struct perf_remote *rm = r->remote;
	struct perf_oob_dest d;

	return perf_oob_hand_shake(&rm->conn, &rm->mine[0], &d) != 0 ? oob_fail(r, what) : 0;
}

/* The peer's MAC by ARP, the engines and lib/net polled meanwhile. */
static int
arp_peer(struct perf_host *h, const uint8_t gid[16], uint8_t mac[6])
{
	uint64_t hz = rte_get_tsc_hz(), t0 = rte_rdtsc();
	int rc;

	for (;;) {
		rc = droce_net_gid_resolve(h->net, gid, NULL, mac, rte_rdtsc());
		if (rc != -EAGAIN)
			break;
		perf_host_poll(h);
		if (rte_rdtsc() - t0 > ARP_WAIT_S * hz)
			break;
	}
	if (rc != 0)
		fprintf(stderr, "droce-perf: the peer's address %u.%u.%u.%u: no ARP answer (%s); "
			"is it on this host's subnet (--ip)?\n", gid[12], gid[13], gid[14],
			gid[15], strerror(rc == -EAGAIN ? ETIMEDOUT : -rc));
	return rc == 0 ? 0 : -1;
}

/*
 * Our destinations for theirs, and the peer as struct perf_peer: its QPs one by one
 * (QP i to its QP i), its first PSN, the buffer each of its QPs is WRITEn at, its GID,
 * and its MAC by ARP.
 */
int
perf_peer_exchange(struct perf_run *r, struct perf_host *h, struct perf_peer *p)
{
	struct perf_remote *rm = r->remote;
	uint32_t i, n = h->nb_qps;

	rm->mine = calloc(n, sizeof(*rm->mine));
	rm->theirs = calloc(n, sizeof(*rm->theirs));
	rm->qpns = calloc(n, sizeof(*rm->qpns));
	rm->psns = calloc(n, sizeof(*rm->psns));
	rm->vaddrs = calloc(n, sizeof(*rm->vaddrs));
	if (rm->mine == NULL || rm->theirs == NULL || rm->qpns == NULL || rm->psns == NULL ||
	    rm->vaddrs == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		rm->mine[i].out_reads = OUT_READS;
		rm->mine[i].qpn = h->qps[i].qpn;
		rm->mine[i].psn = h->psn;
		rm->mine[i].rkey = h->rkey;
		rm->mine[i].vaddr = (uintptr_t)h->buf;
		memcpy(rm->mine[i].gid, h->gid, sizeof(h->gid));
	}
	if (xchg_dests(r) != 0)
		return -1;
	if (perf_oob_check_gid(&rm->conn, &rm->mine[0], &rm->theirs[0]) != 0)
		return oob_fail(r, "GIDs");
	memset(p, 0, sizeof(*p));
	for (i = 0; i < n; i++) {
		/* one MR and one GID (perftest's default, no --mr_per_qp), as our WRITEs assume */
		if (rm->theirs[i].rkey != rm->theirs[0].rkey ||
		    memcmp(rm->theirs[i].gid, rm->theirs[0].gid, sizeof(p->gid)) != 0) {
			fprintf(stderr, "droce-perf: the peer's QPs differ in rkey or GID\n");
			return -1;
		}
		rm->qpns[i] = rm->theirs[i].qpn;
		rm->psns[i] = rm->theirs[i].psn;
		rm->vaddrs[i] = rm->theirs[i].vaddr;
	}
	memcpy(p->gid, rm->theirs[0].gid, sizeof(p->gid));
	p->nb_qps = n;
	p->qpns = rm->qpns;
	p->psn = rm->theirs[0].psn;
	p->rkey = rm->theirs[0].rkey;
	p->buf_addr = rm->theirs[0].vaddr;
	p->vaddrs = rm->vaddrs;
	p->psns = rm->psns;
	/* what perftest's MR holds at each QP's address: max(size, cycle buffer) */
	p->buf_len = RTE_MAX((uint64_t)r->o->size, (uint64_t)rm->conn.cycle_buffer);
	return arp_peer(h, p->gid, p->mac);
}

/* After our QPs reached RTS: the rest of the set-up, in the peer test's order. */
int
perf_peer_connected(struct perf_run *r)
{
	if (r->o->mode->peer == PERF_PEER_WRITE)
		return xchg_dests(r) != 0 || barrier(r, "the RTR barrier") != 0 ? -1 : 0;
	return barrier(r, "the barrier after connecting") != 0 || xchg_dests(r) != 0 ? -1 : 0;
}

/* send and lat: the barrier once the server's receives are posted (write: none). */
int
perf_peer_run_start(struct perf_run *r)
{
	if (r->remote == NULL || r->o->mode->peer == PERF_PEER_WRITE)
		return 0;
	return barrier(r, "the barrier before the run");
}

/* write: the client's end barrier has come, which the server reads after its run. */
bool
perf_peer_end_ready(struct perf_run *r)
{
	struct perf_remote *rm = r->remote;
	char c;

	return recv(rm->conn.fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) != -1 || errno != EAGAIN;
}

/*
 * After the run. write: the end barrier and the bandwidth reports, the server taking the
 * client's (what it posted: f->sent) as perftest's server prints it. send, lat: nothing.
 */
int
perf_peer_run_end(struct perf_run *r, struct perf_bw *f)
{
	struct perf_oob_bw_report mine, theirs;
	struct perf_remote *rm = r->remote;

	if (rm == NULL || r->o->mode->peer != PERF_PEER_WRITE)
		return 0;
	if (barrier(r, "the end barrier") != 0)
		return -1;
	memset(&mine, 0, sizeof(mine));
	mine.size = f->size;
	mine.iters = r->o->role == PERF_ROLE_CLIENT ? f->sent : f->received;
	mine.bw_peak = f->peak_gbps;
	mine.bw_avg = f->avg_gbps;
	mine.msg_rate_avg = f->mpps;
	if (perf_oob_xchg_bw_report(&rm->conn, &mine, &theirs) != 0)
		return oob_fail(r, "the bandwidth reports");
	if (r->o->role == PERF_ROLE_SERVER) {
		if (theirs.size != f->size) {
			fprintf(stderr, "droce-perf: the client wrote %llu-byte messages, not %u "
				"(-s)\n", (unsigned long long)theirs.size, f->size);
			return -1;
		}
		f->sent = theirs.iters;
		f->sent_known = true;
		f->peak_gbps = theirs.bw_peak;
		f->avg_gbps = theirs.bw_avg;
		f->mpps = theirs.msg_rate_avg;
	}
	return 0;
}

int
perf_peer_close(struct perf_run *r)
{
	struct perf_remote *rm = r->remote;
	struct perf_oob_dest d;

	/*
	 * The engines stay polled through the closing exchange: the client's run ends when
	 * its last ACK came, the server's when its last receive completed, so either may be
	 * waiting here while the other still needs it (a lost last ACK is resent only if the
	 * server still answers). Both ports are open until the exchange is over
	 * (perf_host.c: perf_hosts_peer_close).
	 */
	if (perf_oob_close(&rm->conn, &rm->mine[0], &d) != 0)
		return oob_fail(r, "closing");
	return 0;
}

void
perf_peer_free(struct perf_run *r)
{
	struct perf_remote *rm = r->remote;

	if (rm == NULL)
		return;
	perf_oob_conn_close(&rm->conn);
	free(rm->mine);
	free(rm->theirs);
	free(rm->qpns);
	free(rm->psns);
	free(rm->vaddrs);
	free(rm);
	r->remote = NULL;
}

int
perf_peer_raw_start(struct perf_run *r)
{
	return barrier(r, "the start barrier");
}

int
perf_peer_raw_send(struct perf_run *r, const struct perf_raw_report *m)
{
	uint64_t v[6] = { htobe64(m->tx), htobe64(m->back), htobe64(m->rx), htobe64(m->fwd),
			  htobe64(m->ns), 0 };

	memcpy(&v[5], &m->peak_gbps, sizeof(v[5]));
	v[5] = htobe64(v[5]);
	return perf_oob_send(&r->remote->conn, v, sizeof(v)) != 0 ?
	       oob_fail(r, "the raw counts") : 0;
}

int
perf_peer_raw_recv(struct perf_run *r, struct perf_raw_report *m, void (*idle)(void *),
		   void *arg)
{
	struct perf_oob_conn *c = &r->remote->conn;
	uint64_t v[6];
	int rc;

	c->idle = idle;
	c->idle_arg = arg;
	rc = perf_oob_recv(c, v, sizeof(v));
	c->idle = NULL;
	if (rc != 0)
		return oob_fail(r, "the raw counts");
	m->tx = be64toh(v[0]);
	m->back = be64toh(v[1]);
	m->rx = be64toh(v[2]);
	m->fwd = be64toh(v[3]);
	m->ns = be64toh(v[4]);
	v[5] = be64toh(v[5]);
	memcpy(&m->peak_gbps, &v[5], sizeof(v[5]));
	return 0;
}
