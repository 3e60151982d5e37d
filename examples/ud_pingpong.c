/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * droce-ud-pingpong: a ping-pong over unreliable datagram QPs. Every receive buffer starts
 * with the 40-byte GRH area (IBA 11.4.1.2); on RoCEv2 the provider puts the IP header of
 * the packet there: an IPv4 header in bytes 20..39 for IPv4 GIDs, else the IPv6 header
 * in bytes 0..39. The receiver reads the source GID from it and checks that it is the
 * peer's. The client addresses the server with ibv_create_ah (the GID learnt over TCP);
 * the server builds its reply address from the first request with ibv_create_ah_from_wc.
 * As in droce-rc-pingpong, one message at most is in flight per direction, so a single
 * receive buffer serves every posted receive.
 */

#include <arpa/inet.h>
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
#define UD_MAX_SIZE	4096
#define UD_DEFAULT_SIZE	1024

#define STREAM_TO_SERVER	0
#define STREAM_TO_CLIENT	1

/* Header offsets inside the GRH area (RFC 791, RFC 8200). */
#define IPV4_HLEN		20
#define IPV4_VER_IHL		0x45
#define IPV4_SRC_OFF		12
#define IPV6_VERSION		6
#define IPV6_SRC_OFF		8
#define GID_V4_OFF		12

struct ud_opts {
	struct ex_opts ex;
	uint32_t qkey;
	bool check;
	bool quiet;
};

struct ud_ctx {
	const struct ud_opts *o;
	struct ex_res r;		/* r.buf: send buffer, then GRH area + receive buffer */
	struct ibv_qp *qp;
	struct ibv_ah *ah;		/* to the peer; the server's comes from a completion */
	uint8_t *sbuf;
	uint8_t *rbuf;
	bool local_v4;
	struct ex_dest remote;
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
"Ping-pong over UD queue pairs: the client sends a datagram, the server answers with one\n"
"of the same size, -n times. QPN, PSN and GID are exchanged over TCP first. Each side\n"
"reads the source address from the 40-byte GRH area of every message it receives (IPv4\n"
"header in bytes 20..39 for an IPv4 GID, else the IPv6 header), prints it once and\n"
"checks it is the peer's GID. The server answers through an address handle made by\n"
"ibv_create_ah_from_wc from the first request; the client uses ibv_create_ah.\n"
"\n"
"Options:\n"
"  -p, --port=PORT       TCP port of the exchange (default %u)\n"
"  -d, --ib-dev=DEV      RDMA device (default: the first one found)\n"
"  -i, --ib-port=PORT    port of that device (default 1)\n"
"  -g, --gid-idx=INDEX   local GID index (default 0; on droce: 0 = the IPv4 RoCEv2 GID)\n"
"  -s, --size=BYTES      datagram size, 1 .. the port's active MTU (default %u)\n"
"  -n, --iters=N         number of ping-pong exchanges (default %u)\n"
"  -k, --qkey=QKEY       Q_Key of both QPs (default 0x%08x)\n"
"  -e, --events          sleep on a completion channel instead of busy polling\n"
"  -c, --check           fill every message with a pattern derived from the iteration\n"
"                        and the byte offset, and verify every received byte\n"
"  -T, --timeout=SEC     give up when one step (TCP connect or accept, an exchange, a\n"
"                        completion) takes longer than SEC seconds (default %u);\n"
"                        UD does not retransmit, so a lost datagram ends the run\n"
"  -q, --quiet           print only the result line\n"
"  -h, --help            print this help and exit\n"
"\n"
"Both sides must be given the same -s, -n (checked) and -k.\n"
"At the end each side prints:\n"
"  iters=N size=S bytes=B usec=U Mbit/s=X usec/iter=Y\n"
"where B counts both directions (2 * N * S) and U is the time of the N exchanges.\n"
"Exit status: 0 when every exchange completed successfully with the peer's GID in the\n"
"GRH (and, with -c, every byte matched), 1 on any failure, 2 on bad usage.\n"
"\n"
"Example through droce, the memif pair of droced (config/pair-a.ini, pair-b.ini), both\n"
"programs on this machine so the client reaches the server's TCP port on 127.0.0.1:\n"
"  DROCE_SOCKET=/run/droce/a.sock %s -c -s 1024\n"
"  DROCE_SOCKET=/run/droce/b.sock %s -c -s 1024 127.0.0.1\n"
"On an RDMA NIC or rxe, run the same commands without DROCE_SOCKET.\n",
		ex_prog, ex_prog, EX_DEFAULT_TCP_PORT, UD_DEFAULT_SIZE, EX_DEFAULT_ITERS, EX_QKEY,
		EX_DEFAULT_TIMEOUT_S, ex_prog, ex_prog);
}

static int
parse_args(int argc, char **argv, struct ud_opts *o, bool *done)
{
	static const struct option long_opts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "ib-dev", required_argument, NULL, 'd' },
		{ "ib-port", required_argument, NULL, 'i' },
		{ "gid-idx", required_argument, NULL, 'g' },
		{ "size", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'n' },
		{ "qkey", required_argument, NULL, 'k' },
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
	while ((opt = getopt_long(argc, argv, "p:d:i:g:s:n:k:ecT:qh", long_opts, NULL)) != -1) {
		ret = ex_parse_opt(opt, optarg, UD_MAX_SIZE, &o->ex);
		if (ret != EX_OPT_NOT_SHARED) {
			if (ret != EX_EXIT_OK)
				return ret;
			continue;
		}
		switch (opt) {
		case 'k':
			if (ex_parse_u32("-k", optarg, 0, UINT32_MAX, &o->qkey) != 0)
				return EX_EXIT_USAGE;
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

/* Internet checksum over an IPv4 header: 0xFFFF when it is valid (RFC 1071). */
static uint16_t
ipv4_csum(const uint8_t *hdr)
{
	uint32_t sum = 0;
	int i;

	for (i = 0; i < IPV4_HLEN; i += 2)
		sum += (uint32_t)hdr[i] << 8 | hdr[i + 1];
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	return (uint16_t)sum;
}

/* The source GID found in the GRH area; -1 with a message if no header is there. */
static int
grh_source_gid(const struct ud_ctx *c, const uint8_t *grh, union ibv_gid *src)
{
	if (c->local_v4) {
		const uint8_t *ip = grh + EX_GRH_IPV4_OFF;

		if (ip[0] != IPV4_VER_IHL || ipv4_csum(ip) != 0xFFFF) {
			ex_err("GRH area: no valid IPv4 header in bytes 20..39");
			return -1;
		}
		/* The IPv4-mapped form ::ffff:a.b.c.d, as RoCEv2 GIDs carry it. */
		memset(src, 0, sizeof(*src));
		src->raw[GID_V4_OFF - 2] = 0xFF;
		src->raw[GID_V4_OFF - 1] = 0xFF;
		memcpy(&src->raw[GID_V4_OFF], ip + IPV4_SRC_OFF, 4);
		return 0;
	}
	if (grh[0] >> 4 != IPV6_VERSION) {
		ex_err("GRH area: no IPv6 header in bytes 0..39");
		return -1;
	}
	memcpy(src->raw, grh + IPV6_SRC_OFF, sizeof(src->raw));
	return 0;
}

static int
post_recv(struct ud_ctx *c)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)c->rbuf,
		.length = EX_GRH_LEN + c->o->ex.size,
		.lkey = c->r.mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = WRID_RECV, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;
	int ret;

	ret = ibv_post_recv(c->qp, &wr, &bad);
	if (ret != 0) {
		ex_err("ibv_post_recv: %s", strerror(ret));
		return -1;
	}
	return 0;
}

static int
post_send(struct ud_ctx *c, uint32_t iter)
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
		.wr.ud = {
			.ah = c->ah,
			.remote_qpn = c->remote.qpn,
			.remote_qkey = c->o->qkey,
		},
	};
	struct ibv_send_wr *bad;
	int ret;

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
handle_recv(struct ud_ctx *c, const struct ibv_wc *wc)
{
	uint32_t iter = c->recvs_done;
	char found[INET6_ADDRSTRLEN], want[INET6_ADDRSTRLEN];
	union ibv_gid src;

	if (wc->status != IBV_WC_SUCCESS) {
		ex_wc_err(wc, "receive", iter);
		return -1;
	}
	if (wc->byte_len != EX_GRH_LEN + c->o->ex.size) {
		ex_err("iteration %" PRIu32 ": received %" PRIu32 " bytes, expected %u (GRH "
		       "area + %" PRIu32 ")", iter, wc->byte_len, EX_GRH_LEN + c->o->ex.size,
		       c->o->ex.size);
		return -1;
	}
	if (!(wc->wc_flags & IBV_WC_GRH)) {
		ex_err("iteration %" PRIu32 ": completion without IBV_WC_GRH: a RoCE datagram "
		       "always has one", iter);
		return -1;
	}
	if (wc->src_qp != c->remote.qpn) {
		ex_err("iteration %" PRIu32 ": datagram from QP 0x%06" PRIx32 ", expected the "
		       "peer's 0x%06" PRIx32, iter, wc->src_qp, c->remote.qpn);
		return -1;
	}
	if (grh_source_gid(c, c->rbuf, &src) != 0)
		return -1;
	ex_gid_str(&src, found, sizeof(found));
	if (memcmp(&src, &c->remote.gid, sizeof(src)) != 0) {
		ex_gid_str(&c->remote.gid, want, sizeof(want));
		ex_err("iteration %" PRIu32 ": GRH source %s is not the peer's GID %s", iter,
		       found, want);
		return -1;
	}
	if (iter == 0 && !c->o->quiet) {
		printf("GRH of the first datagram: %s header, source GID %s\n",
		       c->local_v4 ? "IPv4" : "IPv6", found);
		fflush(stdout);
	}
	if (c->o->check &&
	    ex_pattern_check(c->rbuf + EX_GRH_LEN, c->o->ex.size, c->peer_stream, iter) != 0)
		return -1;
	if (c->ah == NULL) {
		/* The GRH area is still intact: the peer waits for our answer. */
		c->ah = ibv_create_ah_from_wc(c->r.pd, (struct ibv_wc *)wc,
					      (struct ibv_grh *)c->rbuf, (uint8_t)c->o->ex.ib_port);
		if (c->ah == NULL) {
			ex_err("ibv_create_ah_from_wc: %s", strerror(errno));
			return -1;
		}
	}
	c->recvs_done++;
	return post_recv(c);
}

static int
wait_until(struct ud_ctx *c, uint32_t sends, uint32_t recvs)
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
		for (i = 0; i < n; i++) {
			if (wc[i].wr_id == WRID_RECV) {
				if (handle_recv(c, &wc[i]) != 0)
					return -1;
			} else if (wc[i].status != IBV_WC_SUCCESS) {
				ex_wc_err(&wc[i], "send", c->sends_done);
				return -1;
			} else {
				c->sends_done++;
			}
		}
	}
	return 0;
}

static int
run_client(struct ud_ctx *c)
{
	uint32_t i;

	for (i = 0; i < c->o->ex.iters; i++)
		if (post_send(c, i) != 0 || wait_until(c, i + 1, i + 1) != 0)
			return -1;
	return 0;
}

static int
run_server(struct ud_ctx *c)
{
	uint32_t i;

	for (i = 0; i < c->o->ex.iters; i++)
		if (wait_until(c, i, i + 1) != 0 || post_send(c, i) != 0)
			return -1;
	return wait_until(c, c->o->ex.iters, c->o->ex.iters);
}

static int
create_resources(struct ud_ctx *c)
{
	const struct ud_opts *o = c->o;
	size_t len = (size_t)o->ex.size + EX_GRH_LEN + o->ex.size;
	struct ibv_qp_init_attr qp_attr = {
		.qp_type = IBV_QPT_UD,
		.sq_sig_all = 1,
		.cap = {
			.max_send_wr = SEND_DEPTH,
			.max_recv_wr = EX_RX_DEPTH,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
	};
	int i;

	if (ex_res_create(&c->r, len, EX_RX_DEPTH + SEND_DEPTH, o->ex.events) != 0)
		return -1;
	c->sbuf = c->r.buf;
	c->rbuf = c->r.buf + o->ex.size;
	qp_attr.send_cq = c->r.cq;
	qp_attr.recv_cq = c->r.cq;
	c->qp = ibv_create_qp(c->r.pd, &qp_attr);
	if (c->qp == NULL) {
		ex_err("ibv_create_qp: %s", strerror(errno));
		return -1;
	}
	if (ex_qp_init(c->qp, IBV_QPT_UD, (uint8_t)o->ex.ib_port, o->qkey) != 0)
		return -1;
	for (i = 0; i < EX_RX_DEPTH; i++)
		if (post_recv(c) != 0)
			return -1;
	return 0;
}

static int
create_client_ah(struct ud_ctx *c)
{
	struct ibv_ah_attr ah_attr;

	ex_ah_attr(&ah_attr, &c->remote.gid, (uint8_t)c->o->ex.gid_index, (uint8_t)c->o->ex.ib_port);
	c->ah = ibv_create_ah(c->r.pd, &ah_attr);
	if (c->ah == NULL) {
		ex_err("ibv_create_ah: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static int
destroy_resources(struct ud_ctx *c)
{
	int fail = 0;
	int ret;

	if (c->qp != NULL && (ret = ibv_destroy_qp(c->qp)) != 0) {
		ex_err("ibv_destroy_qp: %s", strerror(ret));
		fail = -1;
	}
	if (c->ah != NULL && (ret = ibv_destroy_ah(c->ah)) != 0) {
		ex_err("ibv_destroy_ah: %s", strerror(ret));
		fail = -1;
	}
	if (ex_res_destroy(&c->r) != 0)
		fail = -1;
	return fail;
}

/* EX_EXIT_OK, EX_EXIT_FAIL, or EX_EXIT_USAGE when -s does not fit the port's MTU. */
static int
run(struct ud_ctx *c, int lfd)
{
	const struct ud_opts *o = c->o;
	int tmo = (int)o->ex.timeout_s;
	struct ex_dest local = { .size = o->ex.size, .iters = o->ex.iters };
	struct ibv_port_attr port_attr;
	uint64_t t0, usec;
	int fd = -1;
	int ret = EX_EXIT_FAIL;

	if (ex_query_port_gid(c->r.ctx, (uint8_t)o->ex.ib_port, (int)o->ex.gid_index, &port_attr,
			      &local.gid) != 0)
		return EX_EXIT_FAIL;
	if (o->ex.size > ex_mtu_bytes(port_attr.active_mtu))
		return ex_usage_error("-s %" PRIu32 ": a UD message must fit the active MTU "
				      "(%u bytes) of port %" PRIu32, o->ex.size,
				      ex_mtu_bytes(port_attr.active_mtu), o->ex.ib_port);
	c->local_v4 = ex_gid_is_v4(&local.gid);
	if (create_resources(c) != 0)
		return EX_EXIT_FAIL;
	local.qpn = c->qp->qp_num;
	local.psn = ex_random_psn();

	fd = o->ex.server != NULL ? ex_tcp_connect(o->ex.server, (uint16_t)o->ex.tcp_port, tmo) :
				 ex_tcp_accept(lfd, tmo);
	if (fd < 0)
		return EX_EXIT_FAIL;
	if (ex_tcp_exchange_dest(fd, &local, &c->remote, tmo) != 0)
		goto out;
	if (!o->quiet) {
		printf("%s: device %s port %" PRIu32 " GID index %" PRIu32 ", UD, Q_Key 0x%08"
		       PRIx32 ", %" PRIu32 " x %" PRIu32 " bytes\n", ex_prog,
		       ibv_get_device_name(c->r.ctx->device), o->ex.ib_port, o->ex.gid_index, o->qkey,
		       o->ex.iters, o->ex.size);
		ex_print_dest("local", &local);
		ex_print_dest("remote", &c->remote);
		fflush(stdout);
	}
	if (ex_qp_ud_ready(c->qp, local.psn) != 0)
		goto out;
	if (o->ex.server != NULL && create_client_ah(c) != 0)
		goto out;
	if (ex_tcp_send_tag(fd, EX_TAG_READY, tmo) != 0 ||
	    ex_tcp_recv_tag(fd, EX_TAG_READY, tmo) != 0)
		goto out;

	t0 = ex_now_us();
	if ((o->ex.server != NULL ? run_client(c) : run_server(c)) != 0)
		goto out;
	usec = ex_now_us() - t0;

	if (ex_tcp_send_tag(fd, EX_TAG_DONE, tmo) != 0 ||
	    ex_tcp_recv_tag(fd, EX_TAG_DONE, tmo) != 0)
		goto out;
	ex_print_result(o->ex.iters, o->ex.size, 2 * (uint64_t)o->ex.size * o->ex.iters, usec);
	ret = EX_EXIT_OK;
out:
	close(fd);
	return ret;
}

int
main(int argc, char **argv)
{
	struct ud_opts o = {
		.ex = EX_OPTS_DEFAULT(UD_DEFAULT_SIZE),
		.qkey = EX_QKEY,
	};
	struct ud_ctx c = { .o = &o };
	bool done;
	int lfd = -1;
	int ret;

	ex_prog = "droce-ud-pingpong";
	ret = parse_args(argc, argv, &o, &done);
	if (ret != EX_EXIT_OK || done)
		return ret;
	c.local_stream = o.ex.server != NULL ? STREAM_TO_SERVER : STREAM_TO_CLIENT;
	c.peer_stream = o.ex.server != NULL ? STREAM_TO_CLIENT : STREAM_TO_SERVER;

	if (o.ex.server == NULL) {
		lfd = ex_tcp_listen((uint16_t)o.ex.tcp_port);
		if (lfd < 0)
			return EX_EXIT_FAIL;
	}
	c.r.ctx = ex_open_device(o.ex.dev_name);
	ret = c.r.ctx != NULL ? run(&c, lfd) : EX_EXIT_FAIL;
	if (destroy_resources(&c) != 0 && ret == EX_EXIT_OK)
		ret = EX_EXIT_FAIL;
	if (lfd >= 0)
		close(lfd);
	return ret;
}
