/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * droce-rc-pingpong: a ping-pong over one connected queue pair (RC, or UC with -t uc).
 * The client sends a message, the server answers with one of the same size, -n times;
 * each side waits for the other's message before sending, so at most one message is in
 * flight per direction. That is why a single receive buffer serves every posted receive:
 * the next message into it cannot arrive before this one has been checked and answered.
 */

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "example_common.h"

#define WRID_SEND	1
#define WRID_RECV	2
#define CQ_BATCH	16
#define SEND_DEPTH	2

/* Streams of the payload pattern, one per direction. */
#define STREAM_TO_SERVER	0
#define STREAM_TO_CLIENT	1

enum {
	OPT_SRQ = 256,
};

struct rc_opts {
	struct ex_opts ex;
	enum ibv_qp_type qp_type;
	bool check;
	bool use_srq;
	bool quiet;
};

struct rc_ctx {
	const struct rc_opts *o;
	struct ex_res r;		/* r.buf: send buffer, then receive buffer */
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	uint8_t *sbuf;
	uint8_t *rbuf;
	enum ibv_mtu mtu;
	uint32_t sends_done;
	uint32_t recvs_done;
	uint32_t local_stream;
	uint32_t peer_stream;
};

static void
usage(FILE *f)
{
	fprintf(f,
"Usage: %s [options]           run the server\n"
"       %s [options] SERVER    run the client against the server on host SERVER\n"
"\n"
"Ping-pong over one RC (or UC) queue pair: the client sends a message, the server\n"
"answers with one of the same size, -n times. QPN, PSN and GID are exchanged over TCP\n"
"first. Messages larger than the path MTU are split into packets by the transport.\n"
"\n"
"Options:\n"
"  -p, --port=PORT       TCP port of the exchange (default %u)\n"
"  -d, --ib-dev=DEV      RDMA device (default: the first one found)\n"
"  -i, --ib-port=PORT    port of that device (default 1)\n"
"  -g, --gid-idx=INDEX   local GID index (default 0; on droce: 0 = the IPv4 RoCEv2 GID)\n"
"  -s, --size=BYTES      message size, 1 .. %u (default %u)\n"
"  -n, --iters=N         number of ping-pong exchanges (default %u)\n"
"  -m, --mtu=BYTES       path MTU: 256, 512, 1024, 2048 or 4096 (default: the port's\n"
"                        active MTU; larger is refused)\n"
"  -t, --qp-type=TYPE    rc or uc (default rc); UC works the same minus reliability\n"
"      --srq             post receives to a shared receive queue\n"
"  -e, --events          sleep on a completion channel instead of busy polling\n"
"  -c, --check           fill every message with a pattern derived from the iteration\n"
"                        and the byte offset, and verify every received byte\n"
"  -T, --timeout=SEC     give up when one step (TCP connect or accept, an exchange, a\n"
"                        completion) takes longer than SEC seconds (default %u)\n"
"  -q, --quiet           print only the result line\n"
"  -h, --help            print this help and exit\n"
"\n"
"Both sides must be given the same -s, -n and -t (-s and -n are checked).\n"
"At the end each side prints:\n"
"  iters=N size=S bytes=B usec=U Mbit/s=X usec/iter=Y\n"
"where B counts both directions (2 * N * S) and U is the time of the N exchanges.\n"
"Exit status: 0 when every exchange completed successfully (and, with -c, every byte\n"
"matched), 1 on any failure, 2 on bad usage.\n"
"\n"
"Example through droce, the memif pair of droced (config/pair-a.ini, pair-b.ini), both\n"
"programs on this machine so the client reaches the server's TCP port on 127.0.0.1:\n"
"  DROCE_SOCKET=/run/droce/a.sock %s -c -s 65536 -n 100\n"
"  DROCE_SOCKET=/run/droce/b.sock %s -c -s 65536 -n 100 127.0.0.1\n"
"On an RDMA NIC or rxe, run the same commands without DROCE_SOCKET.\n",
		ex_prog, ex_prog, EX_DEFAULT_TCP_PORT, EX_MAX_SIZE, EX_DEFAULT_SIZE,
		EX_DEFAULT_ITERS, EX_DEFAULT_TIMEOUT_S, ex_prog, ex_prog);
}

/* 0 to run, or the exit status (help or usage error). */
static int
parse_args(int argc, char **argv, struct rc_opts *o, bool *done)
{
	static const struct option long_opts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "ib-dev", required_argument, NULL, 'd' },
		{ "ib-port", required_argument, NULL, 'i' },
		{ "gid-idx", required_argument, NULL, 'g' },
		{ "size", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'n' },
		{ "mtu", required_argument, NULL, 'm' },
		{ "qp-type", required_argument, NULL, 't' },
		{ "srq", no_argument, NULL, OPT_SRQ },
		{ "events", no_argument, NULL, 'e' },
		{ "check", no_argument, NULL, 'c' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;
	int ret;

	*done = false;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "p:d:i:g:s:n:m:t:ecT:qh", long_opts, NULL)) != -1) {
		ret = ex_parse_opt(opt, optarg, EX_MAX_SIZE, &o->ex);
		if (ret != EX_OPT_NOT_SHARED) {
			if (ret != EX_EXIT_OK)
				return ret;
			continue;
		}
		switch (opt) {
		case 't':
			if (strcmp(optarg, "rc") == 0)
				o->qp_type = IBV_QPT_RC;
			else if (strcmp(optarg, "uc") == 0)
				o->qp_type = IBV_QPT_UC;
			else
				return ex_usage_error("-t: '%s' is not rc or uc", optarg);
			break;
		case OPT_SRQ:
			o->use_srq = true;
			break;
		case 'c':
			o->check = true;
			break;
		case 'q':
			o->quiet = true;
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
	return ex_parse_peer(argc, argv, &o->ex);
}

static int
post_recv(struct rc_ctx *c)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)c->rbuf,
		.length = c->o->ex.size,
		.lkey = c->r.mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = WRID_RECV, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;
	int ret;

	if (c->srq != NULL)
		ret = ibv_post_srq_recv(c->srq, &wr, &bad);
	else
		ret = ibv_post_recv(c->qp, &wr, &bad);
	if (ret != 0)
		ex_err("%s: %s", c->srq != NULL ? "ibv_post_srq_recv" : "ibv_post_recv",
		       strerror(ret));
	return ret != 0 ? -1 : 0;
}

static int
post_send(struct rc_ctx *c, uint32_t iter)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)c->sbuf,
		.length = c->o->ex.size,
		.lkey = c->r.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = WRID_SEND,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr *bad;
	int ret;

	/* The previous send has completed (see wait_until), so its buffer is free. */
	if (c->o->check)
		ex_pattern_fill(c->sbuf, c->o->ex.size, c->local_stream, iter);
	ret = ibv_post_send(c->qp, &wr, &bad);
	if (ret != 0) {
		ex_err("iteration %" PRIu32 ": ibv_post_send: %s", iter, strerror(ret));
		return -1;
	}
	return 0;
}

static int
handle_wc(struct rc_ctx *c, const struct ibv_wc *wc)
{
	uint32_t iter;

	switch (wc->wr_id) {
	case WRID_SEND:
		if (wc->status != IBV_WC_SUCCESS) {
			ex_wc_err(wc, "send", c->sends_done);
			return -1;
		}
		c->sends_done++;
		return 0;
	case WRID_RECV:
		iter = c->recvs_done;
		if (wc->status != IBV_WC_SUCCESS) {
			ex_wc_err(wc, "receive", iter);
			return -1;
		}
		if (wc->byte_len != c->o->ex.size) {
			ex_err("iteration %" PRIu32 ": received %" PRIu32 " bytes, expected %" PRIu32,
			       iter, wc->byte_len, c->o->ex.size);
			return -1;
		}
		if (c->o->check &&
		    ex_pattern_check(c->rbuf, c->o->ex.size, c->peer_stream, iter) != 0)
			return -1;
		c->recvs_done++;
		return post_recv(c);
	default:
		ex_err("completion with unknown wr_id %" PRIu64, wc->wr_id);
		return -1;
	}
}

/*
 * Poll until sends and receives reach the given totals. A receive may complete ahead of
 * the totals (the peer's next message can beat our send completion): it is handled at
 * once, with its own iteration number.
 */
static int
wait_until(struct rc_ctx *c, uint32_t sends, uint32_t recvs)
{
	struct ibv_wc wc[CQ_BATCH];
	int n, i;

	while (c->sends_done < sends || c->recvs_done < recvs) {
		n = ex_cq_wait(c->r.cq, c->r.ch, wc, CQ_BATCH, (int)c->o->ex.timeout_s);
		if (n < 0) {
			ex_err("stuck after %" PRIu32 " sends and %" PRIu32 " receives",
			       c->sends_done, c->recvs_done);
			return -1;
		}
		for (i = 0; i < n; i++)
			if (handle_wc(c, &wc[i]) != 0)
				return -1;
	}
	return 0;
}

static int
run_client(struct rc_ctx *c)
{
	uint32_t i;

	for (i = 0; i < c->o->ex.iters; i++) {
		if (post_send(c, i) != 0 || wait_until(c, i + 1, i + 1) != 0)
			return -1;
	}
	return 0;
}

static int
run_server(struct rc_ctx *c)
{
	uint32_t i;

	for (i = 0; i < c->o->ex.iters; i++) {
		if (wait_until(c, i, i + 1) != 0 || post_send(c, i) != 0)
			return -1;
	}
	return wait_until(c, c->o->ex.iters, c->o->ex.iters);
}

static int
create_resources(struct rc_ctx *c)
{
	const struct rc_opts *o = c->o;
	size_t len = 2 * (size_t)o->ex.size;
	struct ibv_qp_init_attr qp_attr = {
		.qp_type = o->qp_type,
		.sq_sig_all = 1,
		.cap = {
			.max_send_wr = SEND_DEPTH,
			.max_recv_wr = o->use_srq ? 0 : EX_RX_DEPTH,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
	};

	if (ex_res_create(&c->r, len, EX_RX_DEPTH + SEND_DEPTH, o->ex.events) != 0)
		return -1;
	c->sbuf = c->r.buf;
	c->rbuf = c->r.buf + o->ex.size;
	if (o->use_srq) {
		struct ibv_srq_init_attr srq_attr = {
			.attr = { .max_wr = EX_RX_DEPTH, .max_sge = 1 },
		};

		c->srq = ibv_create_srq(c->r.pd, &srq_attr);
		if (c->srq == NULL) {
			ex_err("ibv_create_srq: %s", strerror(errno));
			return -1;
		}
	}
	qp_attr.send_cq = c->r.cq;
	qp_attr.recv_cq = c->r.cq;
	qp_attr.srq = c->srq;
	c->qp = ibv_create_qp(c->r.pd, &qp_attr);
	if (c->qp == NULL) {
		ex_err("ibv_create_qp: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static int
destroy_resources(struct rc_ctx *c)
{
	int fail = 0;
	int ret;

	if (c->qp != NULL && (ret = ibv_destroy_qp(c->qp)) != 0) {
		ex_err("ibv_destroy_qp: %s", strerror(ret));
		fail = -1;
	}
	if (c->srq != NULL && (ret = ibv_destroy_srq(c->srq)) != 0) {
		ex_err("ibv_destroy_srq: %s", strerror(ret));
		fail = -1;
	}
	if (ex_res_destroy(&c->r) != 0)
		fail = -1;
	return fail;
}

/* Everything between opening the device and tearing down: 0 on success. */
static int
run(struct rc_ctx *c, int lfd)
{
	const struct rc_opts *o = c->o;
	int tmo = (int)o->ex.timeout_s;
	struct ex_dest local = { .size = o->ex.size, .iters = o->ex.iters };
	struct ex_dest remote;
	struct ibv_port_attr port_attr;
	uint64_t t0, usec;
	int fd = -1;
	int ret = -1;

	if (ex_query_port_gid(c->r.ctx, (uint8_t)o->ex.ib_port, (int)o->ex.gid_index, &port_attr,
			      &local.gid) != 0)
		return -1;
	if (ex_path_mtu(&port_attr, (uint8_t)o->ex.ib_port, o->ex.mtu_set, o->ex.mtu, &c->mtu) != 0)
		return -1;
	if (o->ex.size > port_attr.max_msg_sz) {
		ex_err("message size %" PRIu32 " exceeds the port's maximum %" PRIu32, o->ex.size,
		       port_attr.max_msg_sz);
		return -1;
	}
	if (create_resources(c) != 0 ||
	    ex_qp_init(c->qp, o->qp_type, (uint8_t)o->ex.ib_port, 0) != 0)
		return -1;
	/*
	 * Receives may be posted from INIT on (IB spec, QP state table: not in RESET); posting
	 * them before RTR means no message of the peer ever finds the queue empty.
	 */
	for (int i = 0; i < EX_RX_DEPTH; i++)
		if (post_recv(c) != 0)
			return -1;
	local.qpn = c->qp->qp_num;
	local.psn = ex_random_psn();

	fd = o->ex.server != NULL ? ex_tcp_connect(o->ex.server, (uint16_t)o->ex.tcp_port, tmo) :
				 ex_tcp_accept(lfd, tmo);
	if (fd < 0)
		return -1;
	if (ex_tcp_exchange_dest(fd, &local, &remote, tmo) != 0)
		goto out;
	if (!o->quiet) {
		printf("%s: device %s port %" PRIu32 " GID index %" PRIu32 ", %s%s, path MTU %u, "
		       "%" PRIu32 " x %" PRIu32 " bytes\n", ex_prog,
		       ibv_get_device_name(c->r.ctx->device), o->ex.ib_port, o->ex.gid_index,
		       o->qp_type == IBV_QPT_RC ? "RC" : "UC", o->use_srq ? " with SRQ" : "",
		       ex_mtu_bytes(c->mtu), o->ex.iters, o->ex.size);
		ex_print_dest("local", &local);
		ex_print_dest("remote", &remote);
		fflush(stdout);
	}
	if (ex_qp_connect(c->qp, o->qp_type, c->mtu, (uint8_t)o->ex.ib_port, (uint8_t)o->ex.gid_index,
			  &local, &remote) != 0)
		goto out;
	/* Neither side sends before the other's QP is ready to receive. */
	if (ex_tcp_send_tag(fd, EX_TAG_READY, tmo) != 0 ||
	    ex_tcp_recv_tag(fd, EX_TAG_READY, tmo) != 0)
		goto out;

	t0 = ex_now_us();
	if ((o->ex.server != NULL ? run_client(c) : run_server(c)) != 0)
		goto out;
	usec = ex_now_us() - t0;

	/* Keep the QP until the peer is done too: destroying it early could fail the
	 * peer's last completion. */
	if (ex_tcp_send_tag(fd, EX_TAG_DONE, tmo) != 0 ||
	    ex_tcp_recv_tag(fd, EX_TAG_DONE, tmo) != 0)
		goto out;
	ex_print_result(o->ex.iters, o->ex.size, 2 * (uint64_t)o->ex.size * o->ex.iters, usec);
	ret = 0;
out:
	close(fd);
	return ret;
}

int
main(int argc, char **argv)
{
	struct rc_opts o = {
		.ex = EX_OPTS_DEFAULT(EX_DEFAULT_SIZE),
		.qp_type = IBV_QPT_RC,
	};
	struct rc_ctx c = { .o = &o };
	bool done;
	int lfd = -1;
	int ret;

	ex_prog = "droce-rc-pingpong";
	ret = parse_args(argc, argv, &o, &done);
	if (ret != EX_EXIT_OK || done)
		return ret;
	c.local_stream = o.ex.server != NULL ? STREAM_TO_SERVER : STREAM_TO_CLIENT;
	c.peer_stream = o.ex.server != NULL ? STREAM_TO_CLIENT : STREAM_TO_SERVER;

	/* The server listens first, so a port in use is reported before any setup. */
	if (o.ex.server == NULL) {
		lfd = ex_tcp_listen((uint16_t)o.ex.tcp_port);
		if (lfd < 0)
			return EX_EXIT_FAIL;
	}
	c.r.ctx = ex_open_device(o.ex.dev_name);
	ret = c.r.ctx != NULL ? run(&c, lfd) : -1;
	if (destroy_resources(&c) != 0)
		ret = -1;
	if (lfd >= 0)
		close(lfd);
	return ret == 0 ? EX_EXIT_OK : EX_EXIT_FAIL;
}
