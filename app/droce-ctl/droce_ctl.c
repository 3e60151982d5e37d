/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * droce-ctl: a small client of droced's control socket for people and scripts. It speaks
 * only the requests allowed before HELLO (STATUS, QUERY_PORTS, QUERY_PORT_DETAIL, QUERY_QPS), so
 * it opens no
 * device and droced creates nothing for it. Output is one "key=value" per line (status),
 * or one line per port or QP of "key=value" fields, easy to grep in tests.
 */

#include <arpa/inet.h>
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

/* enum ibv_mtu 1..5 is 256 << (value - 1) bytes. */
#define MTU_BASE	256

static void
usage(const char *prog)
{
	printf("Usage: %s [--socket PATH] COMMAND\n"
	       "  status   droced's status: clients, objects alive, uptime (key=value lines)\n"
	       "  ports    droced's ports: index, name, mac, ipv4, guid, state, mtu, and the NIC:\n"
	       "           driver, queues, RSS, link interrupts, multicast filter, counters\n"
	       "  queues   each port's queues: the engine, packets the NIC and the engine took,\n"
	       "           packets handed to the engine owning their QP (doc/nics.md)\n"
	       "  qps      every QP's congestion control: rate, target, alpha, CE-marked packets,\n"
	       "           CNPs sent and received, rate cuts (doc/congestion.md)\n"
	       "The socket is PATH, else $%s, else %s.\n",
	       prog, DROCE_PROTO_SOCKET_ENV, DROCE_PROTO_SOCKET_DEFAULT);
}

static int
connect_droced(const char *path)
{
	struct sockaddr_un sa;
	int s;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "droce-ctl: socket path too long: %s\n", path);
		return -1;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		fprintf(stderr, "droce-ctl: cannot reach droced at %s: %s\n", path,
			strerror(errno));
		if (s >= 0)
			close(s);
		return -1;
	}
	return s;
}

/* arg: QUERY_QPS's first QPN, QUERY_PORT_DETAIL's port. */
static int
request(int s, uint32_t op, uint32_t arg, struct droce_proto_resp *resp)
{
	struct droce_proto_req req;
	unsigned int nfds;
	ssize_t n;
	int rc;

	memset(&req, 0, sizeof(req));
	req.op = op;
	req.seq = 1;
	if (op == DROCE_PROTO_OP_QUERY_QPS)
		req.query_qps.start_qpn = arg;
	else if (op == DROCE_PROTO_OP_QUERY_PORT_DETAIL)
		req.query_port_detail.port = arg;
	rc = droce_proto_send(s, &req, sizeof(req), NULL, 0);
	if (rc != 0) {
		fprintf(stderr, "droce-ctl: send: %s\n", strerror(-rc));
		return -1;
	}
	memset(resp, 0, sizeof(*resp));
	n = droce_proto_recv(s, resp, sizeof(*resp), NULL, 0, &nfds);
	if (n <= 0) {
		fprintf(stderr, "droce-ctl: no answer from droced: %s\n",
			n == 0 ? "connection closed" : strerror((int)-n));
		return -1;
	}
	if (resp->op != op || resp->status != 0) {
		fprintf(stderr, "droce-ctl: %s failed: %s\n", droce_proto_op_name(op),
			strerror(-resp->status));
		return -1;
	}
	return 0;
}

static void
print_status(const struct droce_proto_status *st)
{
	uint32_t i;

	printf("pid=%" PRIu32 "\nclients=%" PRIu32 "\nports=%" PRIu32 "\nengines=%" PRIu32 "\n"
	       "pds=%" PRIu32 "\nmrs=%" PRIu32 "\ncqs=%" PRIu32 "\nsrqs=%" PRIu32 "\n"
	       "qps=%" PRIu32 "\nahs=%" PRIu32 "\nmr_bytes=%" PRIu64 "\n"
	       "clients_total=%" PRIu64 "\nclients_torn_down=%" PRIu64 "\nuptime_ms=%" PRIu64 "\n",
	       st->pid, st->nb_clients, st->nb_ports, st->nb_engines, st->pds, st->mrs, st->cqs,
	       st->srqs, st->qps, st->ahs, st->mr_bytes, st->clients_total,
	       st->clients_torn_down, st->uptime_ms);
	/* What the engines hold: equal to the counts above unless droced lost track. */
	printf("engine_domains=%" PRIu32 "\nengine_qps=%" PRIu32 "\nengine_cqs=%" PRIu32 "\n"
	       "engine_srqs=%" PRIu32 "\nengine_mrs=%" PRIu32 "\nengine_ahs=%" PRIu32 "\n",
	       st->engine_domains, st->engine_qps, st->engine_cqs, st->engine_srqs,
	       st->engine_mrs, st->engine_ahs);
	/* rdma_cm and QP1's CM MADs. */
	printf("cm_channels=%" PRIu32 "\ncm_ids=%" PRIu32 "\ncm_listeners=%" PRIu32 "\n"
	       "cm_conns=%" PRIu32 "\ncm_rx_mads=%" PRIu64 "\ncm_rx_bad=%" PRIu64 "\n"
	       "cm_tx_mads=%" PRIu64 "\ncm_qp_moves=%" PRIu64 "\ncm_qp_move_fallbacks=%" PRIu64
	       "\n", st->cm_channels, st->cm_ids, st->cm_listeners, st->cm_conns, st->cm_rx_mads,
	       st->cm_rx_bad, st->cm_tx_mads, st->cm_qp_moves, st->cm_qp_move_fallbacks);
	for (i = 0; i < DROCE_PROTO_CM_ID_STATES; i++)
		printf("cm_ids_%s=%" PRIu32 "\n", droce_proto_cm_id_state_name(i),
		       st->cm_id_state[i]);
	/* Gauges that return to their idle values once the clients are gone. */
	printf("timer_qps=%" PRIu32 "\nmcast_groups=%" PRIu32 "\nmcast_attached=%" PRIu32 "\n"
	       "neighbours=%" PRIu32 "\nmbufs_in_use=%" PRIu64 "\nmbufs_total=%" PRIu64 "\n"
	       "heap_in_use=%" PRIu64 "\n",
	       st->timer_qps, st->mcast_groups, st->mcast_attached, st->neighbours,
	       st->mbufs_in_use, st->mbufs_total, st->heap_in_use);
}

static const char *
filter_name(uint8_t f)
{
	return f == DROCE_PROTO_NIC_FILTER_LIST ? "list" :
	       f == DROCE_PROTO_NIC_FILTER_ALLMULTI ? "allmulticast" :
	       f == DROCE_PROTO_NIC_FILTER_PROMISC ? "promiscuous" : "none";
}

static const char *
on_off(uint32_t flags, uint32_t bit)
{
	return (flags & bit) ? "on" : "off";
}

/* The NIC under a port, appended to its line of droce-ctl ports. */
static void
print_port_detail(const struct droce_proto_port_detail *d)
{
	char driver[sizeof(d->driver) + 1];

	memcpy(driver, d->driver, sizeof(d->driver));
	driver[sizeof(d->driver)] = '\0';
	printf(" driver=%s pci=%s queues=%u rxd=%u txd=%u rss=%s link_intr=%s rx_intr=%s "
	       "rx_ip_csum=%s filter=%s mc_macs=%" PRIu32 " eth_mtu=%" PRIu32 " speed_mbps=%" PRIu64
	       " link_downs=%" PRIu64 " rx_packets=%" PRIu64 " tx_packets=%" PRIu64
	       " rx_bytes=%" PRIu64 " tx_bytes=%" PRIu64 " rx_missed=%" PRIu64
	       " rx_errors=%" PRIu64 " tx_errors=%" PRIu64 " rx_nombuf=%" PRIu64,
	       driver, (d->flags & DROCE_PROTO_NIC_PCI) ? "yes" : "no", d->nb_queues, d->nb_rxd, d->nb_txd,
	       on_off(d->flags, DROCE_PROTO_NIC_RSS), on_off(d->flags, DROCE_PROTO_NIC_LSC),
	       on_off(d->flags, DROCE_PROTO_NIC_RX_INTR),
	       on_off(d->flags, DROCE_PROTO_NIC_RX_IP_CSUM), filter_name(d->filter), d->nb_mc,
	       d->eth_mtu, d->link_speed_mbps, d->link_downs, d->rx_packets, d->tx_packets,
	       d->rx_bytes, d->tx_bytes, d->rx_missed, d->rx_errors, d->tx_errors, d->rx_nombuf);
}

/* QUERY_PORTS into resp: the number of ports, or -1. */
static int
query_ports(int s, struct droce_proto_resp *resp)
{
	if (request(s, DROCE_PROTO_OP_QUERY_PORTS, 0, resp) != 0)
		return -1;
	return resp->ports.nb_ports < DROCE_PROTO_MAX_PORTS ? (int)resp->ports.nb_ports :
	       DROCE_PROTO_MAX_PORTS;
}

static int
print_ports(int s)
{
	struct droce_proto_resp resp, detail;
	int i, nb = query_ports(s, &resp);

	if (nb < 0)
		return -1;
	for (i = 0; i < nb; i++) {
		const struct droce_proto_port_info *p = &resp.ports.port[i];
		const uint8_t *g = (const uint8_t *)&p->node_guid;
		char ip[INET_ADDRSTRLEN], name[sizeof(p->name) + 1];

		inet_ntop(AF_INET, &p->ipv4, ip, sizeof(ip));
		memcpy(name, p->name, sizeof(p->name));
		name[sizeof(p->name)] = '\0';
		printf("index=%d name=%s mac=%02x:%02x:%02x:%02x:%02x:%02x ipv4=%s "
		       "guid=%02x%02x:%02x%02x:%02x%02x:%02x%02x state=%s mtu=%u",
		       i, name, p->mac[0], p->mac[1], p->mac[2], p->mac[3], p->mac[4], p->mac[5],
		       ip, g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7],
		       p->state == DROCE_PROTO_PORT_ACTIVE ? "ACTIVE" : "DOWN",
		       p->max_mtu >= 1 && p->max_mtu <= 5 ? MTU_BASE << (p->max_mtu - 1) : 0);
		if (request(s, DROCE_PROTO_OP_QUERY_PORT_DETAIL, (uint32_t)i, &detail) == 0)
			print_port_detail(&detail.port_detail);
		printf("\n");
	}
	return 0;
}

/* One line per queue of each port. */
static int
print_queues(int s)
{
	struct droce_proto_resp resp, detail;
	int i, nb = query_ports(s, &resp);
	uint32_t q;

	if (nb < 0)
		return -1;
	for (i = 0; i < nb; i++) {
		const struct droce_proto_port_detail *d = &detail.port_detail;

		if (request(s, DROCE_PROTO_OP_QUERY_PORT_DETAIL, (uint32_t)i, &detail) != 0)
			return -1;
		for (q = 0; q < d->nb_queues && q < DROCE_PROTO_PORT_MAX_QUEUES; q++) {
			const struct droce_proto_port_queue *pq = &d->queue[q];

			printf("port=%d queue=%" PRIu32 " engine=%" PRIu32
			       " nic_rx_packets=%" PRIu64 " nic_tx_packets=%" PRIu64
			       " engine_rx_packets=%" PRIu64 " handoff_out=%" PRIu64
			       " handoff_in=%" PRIu64 " handoff_drop=%" PRIu64 " loops=%" PRIu64
			       " sleeps=%" PRIu64 " rx_intr_wakeups=%" PRIu64 "\n", i, q, pq->engine,
			       pq->nic_rx_packets, pq->nic_tx_packets, pq->engine_rx_packets,
			       pq->handoff_out, pq->handoff_in, pq->handoff_drop, pq->engine_loops,
			       pq->engine_sleeps, pq->rx_intr_wakeups);
		}
	}
	return 0;
}

static const char *
qp_type_name(uint8_t type)
{
	return type == DROCE_SHM_QPT_RC ? "RC" : type == DROCE_SHM_QPT_UC ? "UC" :
	       type == DROCE_SHM_QPT_UD ? "UD" : "?";
}

/* One line per QP, a page of QUERY_QPS at a time. */
static int
print_qps(int s)
{
	struct droce_proto_resp resp;
	uint32_t start = 0, i;

	do {
		if (request(s, DROCE_PROTO_OP_QUERY_QPS, start, &resp) != 0)
			return -1;
		for (i = 0; i < resp.qps.nb_qps && i < DROCE_PROTO_QPS_MAX; i++) {
			const struct droce_proto_qp_cc *q = &resp.qps.qp[i];

			printf("qpn=%" PRIu32 " engine=%" PRIu32 " type=%s state=%s prio=%u "
			       "dcqcn=%s limited=%s rate_mbps=%.3f target_mbps=%.3f alpha=%" PRIu32
			       " ce_rcvd=%" PRIu64 " cnp_sent=%" PRIu64 " cnp_rcvd=%" PRIu64
			       " rate_cuts=%" PRIu64 "\n", q->qpn, q->engine, qp_type_name(q->type),
			       droce_shm_qp_state_name(q->state), q->prio,
			       (q->flags & DROCE_PROTO_QP_CC_RP) ? "on" : "off",
			       (q->flags & DROCE_PROTO_QP_CC_LIMITED) ? "yes" : "no",
			       (double)q->rate_kbps / 1000.0, (double)q->target_kbps / 1000.0,
			       q->alpha, q->ce_rcvd, q->cnp_sent, q->cnp_rcvd, q->rate_cuts);
		}
		start = resp.qps.next_qpn;
	} while (start != 0);
	return 0;
}

int
main(int argc, char **argv)
{
	const char *path = getenv(DROCE_PROTO_SOCKET_ENV), *cmd = NULL;
	struct droce_proto_resp resp;
	int i, s, rc;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(argv[0]);
			return EXIT_SUCCESS;
		} else if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc) {
			path = argv[++i];
		} else if (cmd == NULL && argv[i][0] != '-') {
			cmd = argv[i];
		} else {
			usage(argv[0]);
			return EXIT_FAILURE;
		}
	}
	if (path == NULL || path[0] == '\0')
		path = DROCE_PROTO_SOCKET_DEFAULT;
	if (cmd == NULL || (strcmp(cmd, "status") != 0 && strcmp(cmd, "ports") != 0 &&
			    strcmp(cmd, "queues") != 0 && strcmp(cmd, "qps") != 0)) {
		usage(argv[0]);
		return EXIT_FAILURE;
	}
	s = connect_droced(path);
	if (s < 0)
		return EXIT_FAILURE;
	if (strcmp(cmd, "qps") == 0) {
		rc = print_qps(s);
	} else if (strcmp(cmd, "ports") == 0) {
		rc = print_ports(s);
	} else if (strcmp(cmd, "queues") == 0) {
		rc = print_queues(s);
	} else {
		rc = request(s, DROCE_PROTO_OP_STATUS, 0, &resp);
		if (rc == 0)
			print_status(&resp.stat);
	}
	close(s);
	return rc == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
