/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * droce-srq-server: one shared receive queue serving many RC clients. The server accepts
 * -q clients over TCP, gives each its own RC QP attached to the one SRQ, and answers
 * every message it receives after checking its payload. It does not repost a receive
 * per message: it refills the SRQ when the device reports IBV_EVENT_SRQ_LIMIT_REACHED on
 * the async event fd (IBA 10.2.9.4: the SRQ dropped below its limit, and the limit is
 * disarmed until set again with ibv_modify_srq(IBV_SRQ_LIMIT)). The server polls the CQ
 * and the async fd (and, with -e, the completion channel) in one loop.
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "example_common.h"

#define CQ_BATCH		32
#define SEND_DEPTH		2
#define SRQ_MAX_CLIENTS		128
#define SRQ_DEFAULT_CLIENTS	2
#define SRQ_DEFAULT_DEPTH	64
#define SRQ_MAX_DEPTH		16384
#define SRQ_DEFAULT_LIMIT	16
#define SRQ_MAX_SIZE		(1u << 20)
/* If the limit event does not come this long after the SRQ ran low, refill anyway, so a
 * provider without the event slows the run down instead of stalling it. */
#define SRQ_EVENT_GRACE_US	200000u
#define US_PER_S		1000000u
#define US_PER_MS		1000u

/* Receive wr_ids are SRQ slot numbers; send wr_ids carry this flag and the client index. */
#define WRID_SEND_FLAG		(1ull << 32)

enum {
	OPT_CLIENT = 256,
};

struct srq_opts {
	struct ex_opts ex;
	uint32_t clients;
	uint32_t depth;
	uint32_t limit;
};

/* Resources both modes use. */
struct srq_res {
	struct ex_res ex;
	struct ibv_srq *srq;
	enum ibv_mtu mtu;
	union ibv_gid gid;
};

struct srv_client {
	struct ibv_qp *qp;
	int fd;
	struct ex_dest remote;
	uint8_t *sbuf;
	uint32_t received;
	uint32_t replies_posted;
	uint32_t replies_done;
	bool reply_busy;
	bool done_seen;			/* the client sent DONE over TCP */
	bool finished;
	bool failed;
};

struct srv {
	const struct srq_opts *o;
	struct srq_res r;
	struct srv_client *clients;
	uint32_t *free_slots;		/* stack of SRQ slots not posted */
	uint32_t nfree;
	uint32_t posted;		/* receives in the SRQ, as far as completions tell */
	uint64_t low_since;		/* when posted fell below the limit; 0: not low */
	uint32_t limit_events;
	uint32_t refills;
	uint32_t refills_no_event;
	uint64_t last_progress;
	bool cq_armed;			/* -e: the CQ will raise an event */
};

static void
usage(FILE *f)
{
	fprintf(f,
"Usage: %s [options]                    run the server\n"
"       %s [options] --client SERVER    run one client against host SERVER\n"
"\n"
"One shared receive queue (SRQ) serves -q clients, one RC QP each. Each client sends -n\n"
"messages of -s bytes whose payload pattern includes its client id; the server checks\n"
"every byte and answers each message with one of the same size, which the client\n"
"checks. The server refills the SRQ and re-arms its limit (ibv_modify_srq with\n"
"IBV_SRQ_LIMIT) each time IBV_EVENT_SRQ_LIMIT_REACHED arrives on the async event fd.\n"
"Clients may run as separate processes at the same time.\n"
"\n"
"Options:\n"
"  -p, --port=PORT       TCP port of the exchange (default %u)\n"
"  -d, --ib-dev=DEV      RDMA device (default: the first one found)\n"
"  -i, --ib-port=PORT    port of that device (default 1)\n"
"  -g, --gid-idx=INDEX   local GID index (default 0; on droce: 0 = the IPv4 RoCEv2 GID)\n"
"  -s, --size=BYTES      message size, 1 .. %u (default %u); same on all sides\n"
"  -n, --iters=N         client: messages to send (default %u)\n"
"  -m, --mtu=BYTES       path MTU: 256, 512, 1024, 2048 or 4096 (default: the port's\n"
"                        active MTU; larger is refused)\n"
"  -q, --clients=N       server: clients to wait for, 1 .. %u (default %u)\n"
"  -r, --rx-depth=N      server: receives in the SRQ when full, 2 .. %u (default %u)\n"
"  -l, --srq-limit=N     server: SRQ limit, 1 .. rx-depth - 1 (default %u)\n"
"      --client SERVER   run a client against the server on host SERVER\n"
"  -e, --events          sleep on a completion channel instead of busy polling\n"
"  -T, --timeout=SEC     give up when one step (TCP connect or accept, an exchange, a\n"
"                        completion) takes longer than SEC seconds (default %u); the\n"
"                        server waits that long for each client to connect\n"
"  -h, --help            print this help and exit\n"
"\n"
"The server prints one line per client and then\n"
"  srq_limit_events=K refills=R refills_without_event=W\n"
"A client prints its id and the result line\n"
"  iters=N size=S bytes=B usec=U Mbit/s=X usec/iter=Y\n"
"Exit status: 0 when every client (the server: all of them) completed every message\n"
"with success and matching payloads, 1 on any failure, 2 on bad usage.\n"
"\n"
"Example through droce, the memif pair of droced (config/pair-a.ini, pair-b.ini), all\n"
"programs on this machine so clients reach the server's TCP port on 127.0.0.1:\n"
"  DROCE_SOCKET=/run/droce/a.sock %s -q 3 -s 8192\n"
"  for i in 1 2 3; do\n"
"    DROCE_SOCKET=/run/droce/b.sock %s -s 8192 -n 500 --client 127.0.0.1 &\n"
"  done; wait\n"
"On an RDMA NIC or rxe, run the same commands without DROCE_SOCKET.\n",
		ex_prog, ex_prog, EX_DEFAULT_TCP_PORT, SRQ_MAX_SIZE, EX_DEFAULT_SIZE,
		EX_DEFAULT_ITERS, SRQ_MAX_CLIENTS, SRQ_DEFAULT_CLIENTS, SRQ_MAX_DEPTH,
		SRQ_DEFAULT_DEPTH, SRQ_DEFAULT_LIMIT, EX_DEFAULT_TIMEOUT_S, ex_prog, ex_prog);
}

static int
parse_args(int argc, char **argv, struct srq_opts *o, bool *done)
{
	static const struct option long_opts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "ib-dev", required_argument, NULL, 'd' },
		{ "ib-port", required_argument, NULL, 'i' },
		{ "gid-idx", required_argument, NULL, 'g' },
		{ "size", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'n' },
		{ "mtu", required_argument, NULL, 'm' },
		{ "clients", required_argument, NULL, 'q' },
		{ "rx-depth", required_argument, NULL, 'r' },
		{ "srq-limit", required_argument, NULL, 'l' },
		{ "client", required_argument, NULL, OPT_CLIENT },
		{ "events", no_argument, NULL, 'e' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;
	int ret;

	*done = false;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "p:d:i:g:s:n:m:q:r:l:eT:h", long_opts,
				  NULL)) != -1) {
		ret = ex_parse_opt(opt, optarg, SRQ_MAX_SIZE, &o->ex);
		if (ret != EX_OPT_NOT_SHARED) {
			if (ret != EX_EXIT_OK)
				return ret;
			continue;
		}
		switch (opt) {
		case 'q':
			if (ex_parse_u32("-q", optarg, 1, SRQ_MAX_CLIENTS, &o->clients) != 0)
				return EX_EXIT_USAGE;
			break;
		case 'r':
			if (ex_parse_u32("-r", optarg, 2, SRQ_MAX_DEPTH, &o->depth) != 0)
				return EX_EXIT_USAGE;
			break;
		case 'l':
			if (ex_parse_u32("-l", optarg, 1, SRQ_MAX_DEPTH - 1, &o->limit) != 0)
				return EX_EXIT_USAGE;
			break;
		case OPT_CLIENT:
			o->ex.server = optarg;
			break;
		case 'h':
			usage(stdout);
			*done = true;
			return EX_EXIT_OK;
		default:
			return ex_usage_error("unknown option or missing argument: '%s'",
					      argv[optind - 1]);
		}
	}
	if (optind < argc)
		return ex_usage_error("unexpected argument '%s' (a client needs --client SERVER)",
				      argv[optind]);
	if (o->limit >= o->depth)
		return ex_usage_error("-l %" PRIu32 " must be below -r %" PRIu32, o->limit,
				      o->depth);
	return EX_EXIT_OK;
}

/* Payload streams: requests and answers of each client are distinct. */
static uint32_t
stream_request(uint32_t id)
{
	return 2 * id;
}

static uint32_t
stream_answer(uint32_t id)
{
	return 2 * id + 1;
}

/* Device, port, PD, buffer + MR, channel and CQ of either mode. */
static int
res_create(struct srq_res *r, const struct srq_opts *o, size_t len, int cqe)
{
	struct ibv_port_attr port_attr;

	r->ex.ctx = ex_open_device(o->ex.dev_name);
	if (r->ex.ctx == NULL)
		return -1;
	if (ex_query_port_gid(r->ex.ctx, (uint8_t)o->ex.ib_port, (int)o->ex.gid_index, &port_attr,
			      &r->gid) != 0)
		return -1;
	if (ex_path_mtu(&port_attr, (uint8_t)o->ex.ib_port, o->ex.mtu_set, o->ex.mtu, &r->mtu) != 0)
		return -1;
	return ex_res_create(&r->ex, len, cqe, o->ex.events);
}

/* Everything but QPs, which the caller destroys first. */
static int
res_destroy(struct srq_res *r)
{
	int fail = 0;
	int ret;

	if (r->srq != NULL && (ret = ibv_destroy_srq(r->srq)) != 0) {
		ex_err("ibv_destroy_srq: %s", strerror(ret));
		fail = -1;
	}
	if (ex_res_destroy(&r->ex) != 0)
		fail = -1;
	return fail;
}

static int
destroy_qp(struct ibv_qp *qp)
{
	int ret;

	if (qp == NULL)
		return 0;
	ret = ibv_destroy_qp(qp);
	if (ret != 0) {
		ex_err("ibv_destroy_qp: %s", strerror(ret));
		return -1;
	}
	return 0;
}

static struct ibv_qp *
create_rc_qp(struct srq_res *r, const struct srq_opts *o, uint32_t max_recv_wr)
{
	struct ibv_qp_init_attr init = {
		.send_cq = r->ex.cq,
		.recv_cq = r->ex.cq,
		.srq = r->srq,
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
		.cap = {
			.max_send_wr = SEND_DEPTH,
			.max_recv_wr = max_recv_wr,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
	};
	struct ibv_qp *qp;

	qp = ibv_create_qp(r->ex.pd, &init);
	if (qp == NULL) {
		ex_err("ibv_create_qp: %s", strerror(errno));
		return NULL;
	}
	if (ex_qp_init(qp, IBV_QPT_RC, (uint8_t)o->ex.ib_port, 0) != 0) {
		destroy_qp(qp);
		return NULL;
	}
	return qp;
}

/* An empty SRQ answers RNR NAK: the EX_RC_* timers retry forever, so the server catches up. */
static int
connect_rc_qp(struct ibv_qp *qp, const struct srq_res *r, const struct srq_opts *o,
	      const struct ex_dest *local, const struct ex_dest *remote)
{
	return ex_qp_connect(qp, IBV_QPT_RC, r->mtu, (uint8_t)o->ex.ib_port, (uint8_t)o->ex.gid_index,
			     local, remote);
}

static int
post_send(struct ibv_qp *qp, uint64_t wr_id, void *buf, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr *bad;
	int ret;

	ret = ibv_post_send(qp, &wr, &bad);
	if (ret != 0) {
		ex_err("ibv_post_send: %s", strerror(ret));
		return -1;
	}
	return 0;
}

/* ---- server ---- */

static uint8_t *
slot_buf(struct srv *s, uint32_t slot)
{
	return s->r.ex.buf + (size_t)slot * s->o->ex.size;
}

/* Post every free slot, then arm the limit again: the device disarmed it when it fired. */
static int
srq_refill(struct srv *s)
{
	struct ibv_srq_attr attr = { .srq_limit = s->o->limit };
	struct ibv_recv_wr *bad;
	int ret;

	while (s->nfree > 0) {
		uint32_t slot = s->free_slots[s->nfree - 1];
		struct ibv_sge sge = {
			.addr = (uintptr_t)slot_buf(s, slot),
			.length = s->o->ex.size,
			.lkey = s->r.ex.mr->lkey,
		};
		struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 };

		ret = ibv_post_srq_recv(s->r.srq, &wr, &bad);
		if (ret != 0) {
			ex_err("ibv_post_srq_recv: %s", strerror(ret));
			return -1;
		}
		s->nfree--;
		s->posted++;
	}
	s->low_since = 0;
	s->refills++;
	ret = ibv_modify_srq(s->r.srq, &attr, IBV_SRQ_LIMIT);
	if (ret != 0) {
		ex_err("ibv_modify_srq(IBV_SRQ_LIMIT %" PRIu32 "): %s", s->o->limit, strerror(ret));
		return -1;
	}
	return 0;
}

static void
client_fail(struct srv *s, uint32_t id)
{
	struct srv_client *cl = &s->clients[id];

	if (cl->failed || cl->finished)
		return;
	cl->failed = true;
	/* The client learns it from the closed connection or its own timeout. */
	if (cl->fd >= 0) {
		close(cl->fd);
		cl->fd = -1;
	}
}

static struct srv_client *
client_by_qpn(struct srv *s, uint32_t qpn, uint32_t *id)
{
	uint32_t i;

	for (i = 0; i < s->o->clients; i++) {
		if (s->clients[i].qp != NULL && s->clients[i].qp->qp_num == qpn) {
			*id = i;
			return &s->clients[i];
		}
	}
	return NULL;
}

static int
post_answer(struct srv *s, uint32_t id)
{
	struct srv_client *cl = &s->clients[id];

	ex_pattern_fill(cl->sbuf, s->o->ex.size, stream_answer(id), cl->replies_posted);
	if (post_send(cl->qp, WRID_SEND_FLAG | id, cl->sbuf, s->o->ex.size, s->r.ex.mr->lkey) != 0)
		return -1;
	cl->reply_busy = true;
	cl->replies_posted++;
	return 0;
}

static void
srv_recv(struct srv *s, const struct ibv_wc *wc)
{
	uint32_t slot = (uint32_t)wc->wr_id;
	struct srv_client *cl;
	uint32_t id;

	s->posted--;
	if (s->posted < s->o->limit && s->low_since == 0)
		s->low_since = ex_now_us();
	cl = client_by_qpn(s, wc->qp_num, &id);
	if (cl == NULL) {
		ex_err("receive completion for unknown QP 0x%06x (%s)", wc->qp_num,
		       ibv_wc_status_str(wc->status));
		s->free_slots[s->nfree++] = slot;
		return;
	}
	if (wc->status != IBV_WC_SUCCESS) {
		ex_err("client %" PRIu32 ":", id);
		ex_wc_err(wc, "receive", cl->received);
		client_fail(s, id);
	} else if (cl->failed) {
		/* Ignore what a failed client still sends. */
	} else if (cl->received >= cl->remote.iters) {
		ex_err("client %" PRIu32 ": more than the %" PRIu32 " messages it announced", id,
		       cl->remote.iters);
		client_fail(s, id);
	} else if (wc->byte_len != s->o->ex.size) {
		ex_err("client %" PRIu32 ": message %" PRIu32 " has %" PRIu32 " bytes, expected %"
		       PRIu32, id, cl->received, wc->byte_len, s->o->ex.size);
		client_fail(s, id);
	} else if (ex_pattern_check(slot_buf(s, slot), s->o->ex.size, stream_request(id),
				    cl->received) != 0) {
		ex_err("client %" PRIu32 ": bad payload (above)", id);
		client_fail(s, id);
	} else {
		cl->received++;
		if (!cl->reply_busy && post_answer(s, id) != 0)
			client_fail(s, id);
	}
	s->free_slots[s->nfree++] = slot;
}

static void
srv_send(struct srv *s, const struct ibv_wc *wc)
{
	uint32_t id = (uint32_t)(wc->wr_id & ~WRID_SEND_FLAG);
	struct srv_client *cl = &s->clients[id];

	cl->reply_busy = false;
	if (wc->status != IBV_WC_SUCCESS) {
		ex_err("client %" PRIu32 ":", id);
		ex_wc_err(wc, "send", cl->replies_done);
		client_fail(s, id);
		return;
	}
	cl->replies_done++;
	/* The next request may have arrived while this answer's buffer was busy. */
	if (!cl->failed && cl->received > cl->replies_posted && post_answer(s, id) != 0)
		client_fail(s, id);
}

static void
srv_async_events(struct srv *s)
{
	struct ibv_async_event ev;
	uint32_t id;

	/* The fd is non-blocking: drain every event the one wake-up stands for. */
	while (ibv_get_async_event(s->r.ex.ctx, &ev) == 0) {
		s->last_progress = ex_now_us();
		switch (ev.event_type) {
		case IBV_EVENT_SRQ_LIMIT_REACHED:
			s->limit_events++;
			if (srq_refill(s) != 0)
				for (id = 0; id < s->o->clients; id++)
					client_fail(s, id);
			break;
		case IBV_EVENT_QP_FATAL:
		case IBV_EVENT_QP_REQ_ERR:
		case IBV_EVENT_QP_ACCESS_ERR:
			for (id = 0; id < s->o->clients; id++) {
				if (s->clients[id].qp == ev.element.qp) {
					ex_err("client %" PRIu32 ": async event %s", id,
					       ibv_event_type_str(ev.event_type));
					client_fail(s, id);
				}
			}
			break;
		case IBV_EVENT_DEVICE_FATAL:
		case IBV_EVENT_CQ_ERR:
		case IBV_EVENT_SRQ_ERR:
			ex_err("async event %s: giving up", ibv_event_type_str(ev.event_type));
			for (id = 0; id < s->o->clients; id++)
				client_fail(s, id);
			break;
		default:
			ex_err("async event %s (ignored)", ibv_event_type_str(ev.event_type));
			break;
		}
		ibv_ack_async_event(&ev);
	}
}

/* The client wrote to its TCP connection: DONE, or it went away. */
static void
srv_client_tcp(struct srv *s, uint32_t id)
{
	struct srv_client *cl = &s->clients[id];
	char tag;
	ssize_t n;

	n = recv(cl->fd, &tag, 1, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n == 1 && tag == EX_TAG_DONE) {
		cl->done_seen = true;
		return;
	}
	ex_err("client %" PRIu32 ": %s after %" PRIu32 " messages", id,
	       n == 0 ? "closed its connection" : "sent garbage over TCP", cl->received);
	client_fail(s, id);
}

static bool
srv_settle(struct srv *s)
{
	bool all = true;
	uint32_t id;

	for (id = 0; id < s->o->clients; id++) {
		struct srv_client *cl = &s->clients[id];

		if (cl->failed || cl->finished)
			continue;
		if (cl->done_seen && cl->received == cl->remote.iters &&
		    cl->replies_done == cl->remote.iters) {
			if (ex_tcp_send_tag(cl->fd, EX_TAG_DONE, (int)s->o->ex.timeout_s) != 0)
				client_fail(s, id);
			else
				cl->finished = true;
			continue;
		}
		all = false;
	}
	return all;
}

/* Sleep (or, busy polling, just look) on the async fd, the channel and the clients. */
static int
srv_wait(struct srv *s, uint64_t now)
{
	struct pollfd pfd[SRQ_MAX_CLIENTS + 2];
	uint32_t owner[SRQ_MAX_CLIENTS + 2];
	uint64_t wake = s->last_progress + (uint64_t)s->o->ex.timeout_s * US_PER_S;
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	int nfd = 0;
	int tmo = 0;
	uint32_t id;
	int i, ret;

	pfd[nfd++] = (struct pollfd){ .fd = s->r.ex.ctx->async_fd, .events = POLLIN };
	if (s->r.ex.ch != NULL) {
		pfd[nfd++] = (struct pollfd){ .fd = s->r.ex.ch->fd, .events = POLLIN };
		if (s->low_since != 0 && s->low_since + SRQ_EVENT_GRACE_US < wake)
			wake = s->low_since + SRQ_EVENT_GRACE_US;
		tmo = wake > now ? (int)((wake - now + US_PER_MS - 1) / US_PER_MS) : 0;
	}
	for (id = 0; id < s->o->clients; id++) {
		if (s->clients[id].fd >= 0 && !s->clients[id].done_seen) {
			owner[nfd] = id;
			pfd[nfd++] = (struct pollfd){ .fd = s->clients[id].fd, .events = POLLIN };
		}
	}
	ret = poll(pfd, (nfds_t)nfd, tmo);
	if (ret < 0) {
		if (errno == EINTR)
			return 0;
		ex_err("poll: %s", strerror(errno));
		return -1;
	}
	for (i = 0; i < nfd && ret > 0; i++) {
		if (pfd[i].revents == 0)
			continue;
		if (pfd[i].fd == s->r.ex.ctx->async_fd) {
			srv_async_events(s);
		} else if (s->r.ex.ch != NULL && pfd[i].fd == s->r.ex.ch->fd) {
			if (ibv_get_cq_event(s->r.ex.ch, &ev_cq, &ev_ctx) != 0) {
				ex_err("ibv_get_cq_event: %s", strerror(errno));
				return -1;
			}
			ibv_ack_cq_events(ev_cq, 1);
			s->cq_armed = false;
		} else {
			srv_client_tcp(s, owner[i]);
		}
	}
	return 0;
}

static int
srv_loop(struct srv *s)
{
	struct ibv_wc wc[CQ_BATCH];
	uint64_t now;
	uint32_t id;
	int n, i, ret;

	s->last_progress = ex_now_us();
	while (!srv_settle(s)) {
		n = ibv_poll_cq(s->r.ex.cq, CQ_BATCH, wc);
		if (n < 0) {
			ex_err("ibv_poll_cq failed (%d)", n);
			return -1;
		}
		for (i = 0; i < n; i++) {
			if (wc[i].wr_id & WRID_SEND_FLAG)
				srv_send(s, &wc[i]);
			else
				srv_recv(s, &wc[i]);
		}
		now = ex_now_us();
		if (n > 0) {
			s->last_progress = now;
			continue;
		}
		if (s->low_since != 0 && now - s->low_since > SRQ_EVENT_GRACE_US) {
			s->refills_no_event++;
			if (srq_refill(s) != 0)
				return -1;
		}
		if (now - s->last_progress > (uint64_t)s->o->ex.timeout_s * US_PER_S) {
			for (id = 0; id < s->o->clients; id++) {
				struct srv_client *cl = &s->clients[id];

				if (cl->failed || cl->finished)
					continue;
				ex_err("client %" PRIu32 ": no progress for %" PRIu32 " s (-T) after %"
				       PRIu32 " messages", id, s->o->ex.timeout_s, cl->received);
				client_fail(s, id);
			}
			continue;
		}
		if (s->r.ex.ch != NULL && !s->cq_armed) {
			ret = ibv_req_notify_cq(s->r.ex.cq, 0);
			if (ret != 0) {
				ex_err("ibv_req_notify_cq: %s", strerror(ret));
				return -1;
			}
			/* Poll once more before sleeping: a completion that came before
			 * the CQ was armed raises no event. */
			s->cq_armed = true;
			continue;
		}
		if (srv_wait(s, now) != 0)
			return -1;
	}
	return 0;
}

/* Accept client id, exchange addresses and connect its QP to the SRQ. */
static int
srv_accept(struct srv *s, int lfd, uint32_t id)
{
	const struct srq_opts *o = s->o;
	struct srv_client *cl = &s->clients[id];
	int tmo = (int)o->ex.timeout_s;
	struct ex_dest local = { .id = id, .size = o->ex.size, .gid = s->r.gid };
	char label[32];

	cl->fd = ex_tcp_accept(lfd, tmo);
	if (cl->fd < 0)
		return -1;
	if (ex_tcp_recv_dest(cl->fd, &cl->remote, tmo) != 0)
		return -1;
	cl->qp = create_rc_qp(&s->r, o, 0);
	if (cl->qp == NULL)
		return -1;
	local.qpn = cl->qp->qp_num;
	local.psn = ex_random_psn();
	local.iters = cl->remote.iters;
	if (ex_tcp_send_dest(cl->fd, &local, tmo) != 0)
		return -1;
	if (cl->remote.size != o->ex.size) {
		ex_err("client %" PRIu32 " runs -s %" PRIu32 ", the server -s %" PRIu32, id,
		       cl->remote.size, o->ex.size);
		return -1;
	}
	snprintf(label, sizeof(label), "client %" PRIu32, id);
	ex_print_dest(label, &cl->remote);
	fflush(stdout);
	return connect_rc_qp(cl->qp, &s->r, o, &local, &cl->remote);
}

static int
run_server(const struct srq_opts *o)
{
	struct srv s = { .o = o };
	size_t len = ((size_t)o->depth + o->clients) * o->ex.size;
	struct ibv_srq_init_attr srq_attr = {
		.attr = { .max_wr = o->depth, .max_sge = 1 },
	};
	bool ok = false;
	int lfd;
	uint32_t id;
	int flags;

	lfd = ex_tcp_listen((uint16_t)o->ex.tcp_port);
	if (lfd < 0)
		return EX_EXIT_FAIL;
	s.clients = calloc(o->clients, sizeof(*s.clients));
	s.free_slots = calloc(o->depth, sizeof(*s.free_slots));
	if (s.clients == NULL || s.free_slots == NULL) {
		ex_err("out of memory");
		goto out;
	}
	for (id = 0; id < o->clients; id++)
		s.clients[id].fd = -1;
	if (res_create(&s.r, o, len, (int)(o->depth + o->clients * SEND_DEPTH)) != 0)
		goto out;
	for (id = 0; id < o->clients; id++)
		s.clients[id].sbuf = s.r.ex.buf + ((size_t)o->depth + id) * o->ex.size;
	s.r.srq = ibv_create_srq(s.r.ex.pd, &srq_attr);
	if (s.r.srq == NULL) {
		ex_err("ibv_create_srq(%" PRIu32 " receives): %s", o->depth, strerror(errno));
		goto out;
	}
	flags = fcntl(s.r.ex.ctx->async_fd, F_GETFL);
	if (flags < 0 || fcntl(s.r.ex.ctx->async_fd, F_SETFL, flags | O_NONBLOCK) != 0) {
		ex_err("cannot make the async event fd non-blocking: %s", strerror(errno));
		goto out;
	}
	for (id = 0; id < o->depth; id++)
		s.free_slots[s.nfree++] = o->depth - 1 - id;
	if (srq_refill(&s) != 0)
		goto out;
	s.refills = 0;
	printf("%s: device %s port %" PRIu32 ", SRQ of %" PRIu32 " receives, limit %" PRIu32
	       ", waiting for %" PRIu32 " clients on TCP port %" PRIu32 "\n", ex_prog,
	       ibv_get_device_name(s.r.ex.ctx->device), o->ex.ib_port, o->depth, o->limit, o->clients,
	       o->ex.tcp_port);
	fflush(stdout);
	for (id = 0; id < o->clients; id++)
		if (srv_accept(&s, lfd, id) != 0)
			goto out;
	/* Start everyone together: requests only arrive once every QP is connected. */
	for (id = 0; id < o->clients; id++)
		if (ex_tcp_send_tag(s.clients[id].fd, EX_TAG_READY, (int)o->ex.timeout_s) != 0)
			goto out;
	if (srv_loop(&s) != 0)
		goto out;
	ok = true;
	for (id = 0; id < o->clients; id++) {
		struct srv_client *cl = &s.clients[id];

		printf("client %" PRIu32 ": messages=%" PRIu32 " answers=%" PRIu32 " of %" PRIu32
		       " %s\n", id, cl->received, cl->replies_done, cl->remote.iters,
		       cl->finished ? "ok" : "FAILED");
		ok = ok && cl->finished;
	}
	printf("srq_limit_events=%" PRIu32 " refills=%" PRIu32 " refills_without_event=%" PRIu32
	       "\n", s.limit_events, s.refills, s.refills_no_event);
	fflush(stdout);
out:
	if (s.clients != NULL) {
		for (id = 0; id < o->clients; id++) {
			if (destroy_qp(s.clients[id].qp) != 0)
				ok = false;
			if (s.clients[id].fd >= 0)
				close(s.clients[id].fd);
		}
	}
	if (res_destroy(&s.r) != 0)
		ok = false;
	free(s.clients);
	free(s.free_slots);
	close(lfd);
	return ok ? EX_EXIT_OK : EX_EXIT_FAIL;
}

/* ---- client ---- */

struct cli {
	const struct srq_opts *o;
	struct srq_res r;
	struct ibv_qp *qp;
	uint8_t *sbuf;
	uint8_t *rbuf;
	uint32_t id;
	uint32_t sends_done;
	uint32_t recvs_done;
};

static int
cli_post_recv(struct cli *c)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)c->rbuf,
		.length = c->o->ex.size,
		.lkey = c->r.ex.mr->lkey,
	};
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;
	int ret;

	ret = ibv_post_recv(c->qp, &wr, &bad);
	if (ret != 0) {
		ex_err("ibv_post_recv: %s", strerror(ret));
		return -1;
	}
	return 0;
}

/* Wait for the answer to request iter and its own send completion. */
static int
cli_wait(struct cli *c, uint32_t iter)
{
	struct ibv_wc wc[CQ_BATCH];
	int n, i;

	while (c->sends_done <= iter || c->recvs_done <= iter) {
		n = ex_cq_wait(c->r.ex.cq, c->r.ex.ch, wc, CQ_BATCH, (int)c->o->ex.timeout_s);
		if (n < 0) {
			ex_err("client %" PRIu32 ": no answer to message %" PRIu32, c->id, iter);
			return -1;
		}
		for (i = 0; i < n; i++) {
			bool send = wc[i].wr_id & WRID_SEND_FLAG;

			if (wc[i].status != IBV_WC_SUCCESS) {
				ex_wc_err(&wc[i], send ? "send" : "receive", iter);
				return -1;
			}
			if (send) {
				c->sends_done++;
				continue;
			}
			if (wc[i].byte_len != c->o->ex.size) {
				ex_err("answer %" PRIu32 " has %" PRIu32 " bytes, expected %" PRIu32,
				       c->recvs_done, wc[i].byte_len, c->o->ex.size);
				return -1;
			}
			if (ex_pattern_check(c->rbuf, c->o->ex.size, stream_answer(c->id),
					     c->recvs_done) != 0)
				return -1;
			c->recvs_done++;
			if (cli_post_recv(c) != 0)
				return -1;
		}
	}
	return 0;
}

static int
cli_run(struct cli *c)
{
	const struct srq_opts *o = c->o;
	int tmo = (int)o->ex.timeout_s;
	struct ex_dest local = { .size = o->ex.size, .iters = o->ex.iters };
	struct ex_dest remote;
	uint64_t t0, usec;
	uint32_t i;
	int fd;
	int ret = -1;

	if (res_create(&c->r, o, 2 * (size_t)o->ex.size, EX_RX_DEPTH + SEND_DEPTH) != 0)
		return -1;
	c->sbuf = c->r.ex.buf;
	c->rbuf = c->r.ex.buf + o->ex.size;
	c->qp = create_rc_qp(&c->r, o, EX_RX_DEPTH);
	if (c->qp == NULL)
		return -1;
	for (i = 0; i < EX_RX_DEPTH; i++)
		if (cli_post_recv(c) != 0)
			return -1;
	local.qpn = c->qp->qp_num;
	local.psn = ex_random_psn();
	local.gid = c->r.gid;

	fd = ex_tcp_connect(o->ex.server, (uint16_t)o->ex.tcp_port, tmo);
	if (fd < 0)
		return -1;
	if (ex_tcp_send_dest(fd, &local, tmo) != 0 || ex_tcp_recv_dest(fd, &remote, tmo) != 0)
		goto out;
	c->id = remote.id;
	if (remote.size != o->ex.size) {
		ex_err("the server runs -s %" PRIu32 ", this client -s %" PRIu32, remote.size,
		       o->ex.size);
		goto out;
	}
	printf("%s: client %" PRIu32 ", %" PRIu32 " x %" PRIu32 " bytes\n", ex_prog, c->id,
	       o->ex.iters, o->ex.size);
	ex_print_dest("local", &local);
	ex_print_dest("server", &remote);
	fflush(stdout);
	if (connect_rc_qp(c->qp, &c->r, o, &local, &remote) != 0 ||
	    ex_tcp_recv_tag(fd, EX_TAG_READY, tmo) != 0)
		goto out;

	t0 = ex_now_us();
	for (i = 0; i < o->ex.iters; i++) {
		ex_pattern_fill(c->sbuf, o->ex.size, stream_request(c->id), i);
		if (post_send(c->qp, WRID_SEND_FLAG, c->sbuf, o->ex.size, c->r.ex.mr->lkey) != 0 ||
		    cli_wait(c, i) != 0)
			goto out;
	}
	usec = ex_now_us() - t0;
	if (ex_tcp_send_tag(fd, EX_TAG_DONE, tmo) != 0 ||
	    ex_tcp_recv_tag(fd, EX_TAG_DONE, tmo) != 0)
		goto out;
	printf("client %" PRIu32 ": ", c->id);
	ex_print_result(o->ex.iters, o->ex.size, 2 * (uint64_t)o->ex.size * o->ex.iters, usec);
	ret = 0;
out:
	close(fd);
	return ret;
}

static int
run_client(const struct srq_opts *o)
{
	struct cli c = { .o = o };
	int ret;

	ret = cli_run(&c);
	if (destroy_qp(c.qp) != 0)
		ret = -1;
	if (res_destroy(&c.r) != 0)
		ret = -1;
	return ret == 0 ? EX_EXIT_OK : EX_EXIT_FAIL;
}

int
main(int argc, char **argv)
{
	struct srq_opts o = {
		.ex = EX_OPTS_DEFAULT(EX_DEFAULT_SIZE),
		.clients = SRQ_DEFAULT_CLIENTS,
		.depth = SRQ_DEFAULT_DEPTH,
		.limit = SRQ_DEFAULT_LIMIT,
	};
	bool done;
	int ret;

	ex_prog = "droce-srq-server";
	ret = parse_args(argc, argv, &o, &done);
	if (ret != EX_EXIT_OK || done)
		return ret;
	return o.ex.server != NULL ? run_client(&o) : run_server(&o);
}
