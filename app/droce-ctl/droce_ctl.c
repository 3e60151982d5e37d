/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * droce-ctl: droced's operator tool, a client of its control socket that speaks only the
 * requests allowed before HELLO (STATUS, QUERY_PORT_DETAIL, QUERY_VIEW), so it opens no
 * device and droced creates nothing for it. Each object droced holds has a view (ports,
 * counters, engines, clients, QPs, ...): one line of name=value fields per object, or
 * with -j a JSON array as iproute2's rdma -j prints; watch shows a view's counters as
 * rates. Parts: ctl.h.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <droce_shm_proto.h>
#include <droce_shm_qp_attr.h>

#include "ctl.h"

static const char *socket_path;

static void
usage(FILE *f, const char *prog)
{
	fprintf(f, "Usage: %s [--socket PATH] [-j|--json] COMMAND\n"
	       "  status      droced's status: clients, objects alive, uptime\n"
	       "  ports       ports: addresses, link, the NIC under each and its counters\n"
	       "  counters    each port's counters: Linux's RDMA hardware counter names, then\n"
	       "              droce's own (doc/operations.md maps them)\n"
	       "  engines     engines: port, queue, lcore, counters\n"
	       "  queues      each port's queues: the engine, packets the NIC and the engine took,\n"
	       "              packets handed to the engine owning their QP (doc/nics.md)\n"
	       "  clients     applications: pid, uid, command line, objects, pinned bytes\n"
	       "  qps         QPs: owner, type, state, PSNs, peer, congestion control, counters\n"
	       "  cqs, srqs, mrs\n"
	       "              completion queues, shared receive queues, memory regions\n"
	       "  cm          rdma_cm ids and their connections\n"
	       "  listeners   rdma_cm ids listening\n"
	       "  mcast       multicast groups and the QPs attached\n"
	       "  capture -w FILE [-p PORT] [-c COUNT] [-d SECONDS] [-s SNAPLEN] [-q QPN]...\n"
	       "          [-a ADDRESS]\n"
	       "              the port's frames (default 0) to a pcapng file (\"-\": standard\n"
	       "              output) until COUNT frames, SECONDS or Ctrl-C; -s: bytes kept of\n"
	       "              each; -q: RoCE packets to that QPN only (up to 8); -a: frames\n"
	       "              from or to that address only. Root only\n"
	       "  watch [-i SECONDS] [-n COUNT] [-a] VIEW\n"
	       "              VIEW again every SECONDS (default 1), its counters as rates per\n"
	       "              second (name_per_s; -a: the ones that did not move and the gauges\n"
	       "              too), COUNT times (default: until interrupted)\n"
	       "Text output is one line of name=value per object (values with spaces in double\n"
	       "quotes); -j prints JSON. A user other than root sees only its own applications'\n"
	       "objects. The socket is PATH, else $%s, else %s.\n",
	       prog, DROCE_PROTO_SOCKET_ENV, DROCE_PROTO_SOCKET_DEFAULT);
}

/* Why droced cannot be reached, in words that say what to do. */
static void
connect_error(const char *path, int err)
{
	switch (err) {
	case ENOENT:
	case ECONNREFUSED:
		fprintf(stderr, "droce-ctl: no droced is serving %s (%s). Start one (droced "
			"--config FILE), or name its socket with --socket or $%s.\n", path,
			strerror(err), DROCE_PROTO_SOCKET_ENV);
		break;
	case EACCES:
	case EPERM:
		fprintf(stderr, "droce-ctl: permission denied on %s: droced takes root and the "
			"users its [control] section allows (doc/configuration.md).\n", path);
		break;
	default:
		fprintf(stderr, "droce-ctl: cannot reach droced at %s: %s\n", path,
			strerror(err));
	}
}

static int
connect_droced(const char *path)
{
	struct sockaddr_un sa;
	int s, err;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "droce-ctl: socket path too long: %s\n", path);
		return -1;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		err = errno;
		if (s >= 0)
			close(s);
		connect_error(path, err);
		return -1;
	}
	return s;
}

int
ctl_request(int s, const struct droce_proto_req *req, void *answer, size_t len)
{
	return ctl_request_fd(s, req, -1, answer, len);
}

int
ctl_request_fd(int s, const struct droce_proto_req *req, int fd, void *answer, size_t len)
{
	struct droce_proto_resp *resp = answer;
	unsigned int nfds;
	ssize_t n;
	int rc;

	rc = droce_proto_send(s, req, sizeof(*req), fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0);
	if (rc != 0) {
		fprintf(stderr, "droce-ctl: send: %s\n", strerror(-rc));
		return -1;
	}
	memset(answer, 0, len);
	n = droce_proto_recv(s, answer, len, NULL, 0, &nfds);
	if (n <= 0) {
		/* A droced that closes the connection at once refused this user (SO_PEERCRED). */
		fprintf(stderr, "droce-ctl: no answer from droced at %s: %s\n", socket_path,
			n == 0 ? "it closed the connection (is this user allowed in its "
			"[control] section?)" : strerror((int)-n));
		return -1;
	}
	if (resp->op != req->op || resp->status != 0) {
		fprintf(stderr, "droce-ctl: %s failed: %s\n", droce_proto_op_name(req->op),
			strerror(-resp->status));
		return -1;
	}
	return 0;
}

/* arg: QUERY_PORT_DETAIL's port. */
static int
request(int s, uint32_t op, uint32_t arg, struct droce_proto_resp *resp)
{
	struct droce_proto_req req;

	memset(&req, 0, sizeof(req));
	req.op = op;
	req.seq = 1;
	if (op == DROCE_PROTO_OP_QUERY_PORT_DETAIL)
		req.query_port_detail.port = arg;
	return ctl_request(s, &req, resp, sizeof(*resp));
}

/* One line per queue of each port. */
static int
print_queues(int s, struct ctl_out *o)
{
	struct droce_proto_resp resp, detail;
	uint32_t i, nb, q;

	if (request(s, DROCE_PROTO_OP_QUERY_PORTS, 0, &resp) != 0)
		return -1;
	nb = resp.ports.nb_ports < DROCE_PROTO_MAX_PORTS ? resp.ports.nb_ports :
	     DROCE_PROTO_MAX_PORTS;
	ctl_out_begin(o, o->json);
	for (i = 0; i < nb; i++) {
		const struct droce_proto_port_detail *d = &detail.port_detail;

		if (request(s, DROCE_PROTO_OP_QUERY_PORT_DETAIL, i, &detail) != 0)
			return -1;
		for (q = 0; q < d->nb_queues && q < DROCE_PROTO_PORT_MAX_QUEUES; q++) {
			const struct droce_proto_port_queue *pq = &d->queue[q];

			ctl_out_record(o);
			ctl_out_num(o, "port", i);
			ctl_out_num(o, "queue", q);
			ctl_out_num(o, "engine", pq->engine);
			ctl_out_num(o, "nic_rx_packets", pq->nic_rx_packets);
			ctl_out_num(o, "nic_tx_packets", pq->nic_tx_packets);
			ctl_out_num(o, "engine_rx_packets", pq->engine_rx_packets);
			ctl_out_num(o, "handoff_out", pq->handoff_out);
			ctl_out_num(o, "handoff_in", pq->handoff_in);
			ctl_out_num(o, "handoff_drop", pq->handoff_drop);
			ctl_out_num(o, "loops", pq->engine_loops);
			ctl_out_num(o, "sleeps", pq->engine_sleeps);
			ctl_out_num(o, "rx_intr_wakeups", pq->rx_intr_wakeups);
			ctl_out_record_end(o);
		}
	}
	ctl_out_end(o);
	return 0;
}

/* Views need a droced that has them: say so rather than "QUERY_VIEW failed". */
static int
check_version(int s)
{
	struct droce_proto_resp resp;

	if (request(s, DROCE_PROTO_OP_STATUS, 0, &resp) != 0)
		return -1;
	if (resp.stat.proto_version == 0) {
		fprintf(stderr, "droce-ctl: droced at %s is older than this droce-ctl: it has no "
			"views (protocol version below %u). Use the droce-ctl built with it.\n",
			socket_path, DROCE_PROTO_VERSION);
		return -1;
	}
	if (resp.stat.proto_version != DROCE_PROTO_VERSION) {
		fprintf(stderr, "droce-ctl: droced at %s speaks protocol version %" PRIu32
			" and this droce-ctl %u: use the droce-ctl built with that droced.\n",
			socket_path, resp.stat.proto_version, DROCE_PROTO_VERSION);
		return -1;
	}
	return 0;
}

static int
parse_uint(const char *arg, const char *what, unsigned int max, unsigned int *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno != 0 || end == arg || *end != '\0' || v > max) {
		fprintf(stderr, "droce-ctl: %s: not a number up to %u: %s\n", what, max, arg);
		return -1;
	}
	*out = (unsigned int)v;
	return 0;
}

/* watch [-i SECONDS] [-n COUNT] [-a] VIEW */
static int
watch(int s, struct ctl_out *o, int argc, char **argv)
{
	unsigned int secs = 1, count = 0;
	bool all = false;
	int i, v = -1;

	for (i = 0; i < argc; i++) {
		if (strcmp(argv[i], "-i") == 0 && i + 1 < argc) {
			if (parse_uint(argv[++i], "-i", 3600, &secs) != 0)
				return -1;
		} else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
			if (parse_uint(argv[++i], "-n", 1000000, &count) != 0)
				return -1;
		} else if (strcmp(argv[i], "-a") == 0) {
			all = true;
		} else if (v < 0 && (v = ctl_view_find(argv[i])) >= 0) {
			continue;
		} else {
			fprintf(stderr, "droce-ctl: watch: not a view or option: %s\n", argv[i]);
			return -1;
		}
	}
	if (v < 0 || secs == 0) {
		fprintf(stderr, "droce-ctl: watch needs a view and an interval of 1 s or more\n");
		return -1;
	}
	return ctl_view_watch(s, v, o, secs * 1000, count, all);
}

int
main(int argc, char **argv)
{
	struct ctl_out o = { 0 };
	const char *cmd = NULL;
	int i, s, rc, view, cmd_at = argc;

	socket_path = getenv(DROCE_PROTO_SOCKET_ENV);
	for (i = 1; i < argc && cmd == NULL; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout, argv[0]);
			return EXIT_SUCCESS;
		} else if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc) {
			socket_path = argv[++i];
		} else if (strcmp(argv[i], "-j") == 0 || strcmp(argv[i], "--json") == 0) {
			o.json = true;
		} else if (argv[i][0] != '-') {
			cmd = argv[i];
			cmd_at = i + 1;
		} else {
			fprintf(stderr, "droce-ctl: unknown option %s\n", argv[i]);
			usage(stderr, argv[0]);
			return EXIT_FAILURE;
		}
	}
	if (socket_path == NULL || socket_path[0] == '\0')
		socket_path = DROCE_PROTO_SOCKET_DEFAULT;
	view = cmd != NULL ? ctl_view_find(cmd) : -1;
	if (cmd == NULL || (view < 0 && strcmp(cmd, "queues") != 0 &&
			    strcmp(cmd, "watch") != 0 && strcmp(cmd, "capture") != 0)) {
		if (cmd != NULL)
			fprintf(stderr, "droce-ctl: unknown command %s\n", cmd);
		usage(stderr, argv[0]);
		return EXIT_FAILURE;
	}
	if (strcmp(cmd, "watch") != 0 && strcmp(cmd, "capture") != 0 && cmd_at < argc) {
		fprintf(stderr, "droce-ctl: %s takes no arguments: %s\n", cmd, argv[cmd_at]);
		return EXIT_FAILURE;
	}
	s = connect_droced(socket_path);
	if (s < 0)
		return EXIT_FAILURE;
	if (strcmp(cmd, "queues") == 0) {
		rc = print_queues(s, &o);
	} else {
		/* What older droceds do not have: said so, not "failed". */
		rc = check_version(s);
		if (rc == 0 && view >= 0)
			rc = ctl_view_print(s, view, &o);
		else if (rc == 0 && strcmp(cmd, "capture") == 0)
			rc = ctl_capture(s, argc - cmd_at, argv + cmd_at);
		else if (rc == 0)
			rc = watch(s, &o, argc - cmd_at, argv + cmd_at);
	}
	close(s);
	return rc == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
