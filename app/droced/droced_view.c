/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Views: what droced holds, as rows of named fields (droce_shm_proto.h, QUERY_VIEW),
 * made here once for three readers: droce-ctl through the control socket
 * (droced_session.c encodes the rows), DPDK telemetry's /droce/ commands
 * (droced_telemetry.c) and the Prometheus metrics (droced_metrics.c). A view walks its
 * objects in increasing key order from a start key and stops when the sink has no room,
 * so a reader pages through any number of QPs. A viewer other than root sees only the
 * clients of its own uid and their objects, and no memory keys: an R_Key is what a peer
 * needs to read and write memory (doc/operations.md).
 */

#include <arpa/inet.h>
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_lcore.h>
#include <rte_mempool.h>

#include "droced_loc.h"

#define KEY_HANDLE_BITS	32	/* a client's object: its client id above its handle */

static const char *const view_names[DROCE_PROTO_VIEW_COUNT] = {
#define VIEW_NAME(NAME, name) [DROCE_PROTO_VIEW_##NAME] = name,
	DROCE_PROTO_VIEW_LIST(VIEW_NAME)
#undef VIEW_NAME
};

const char *
droced_view_name(uint32_t v)
{
	return v < DROCE_PROTO_VIEW_COUNT ? view_names[v] : NULL;
}

/* ---- Fields ---- */

static void
id(struct droced_view_sink *s, const char *name, uint64_t v)
{
	s->num(s, DROCE_PROTO_VIEW_TAG_ID, name, v, NULL);
}

static void
gauge(struct droced_view_sink *s, const char *name, uint64_t v, const char *help)
{
	s->num(s, DROCE_PROTO_VIEW_TAG_GAUGE, name, v, help);
}

static void
counter(struct droced_view_sink *s, const char *name, uint64_t v, const char *help)
{
	s->num(s, DROCE_PROTO_VIEW_TAG_COUNTER, name, v, help);
}

static void
text(struct droced_view_sink *s, const char *name, const char *v)
{
	s->text(s, name, v);
}

static void
text_ipv4(struct droced_view_sink *s, const char *name, uint32_t be)
{
	char buf[INET_ADDRSTRLEN];
	struct in_addr a = { .s_addr = be };

	text(s, name, inet_ntop(AF_INET, &a, buf, sizeof(buf)) != NULL ? buf : "?");
}

/* A GID as an address: IPv4-mapped GIDs as a.b.c.d, the rest as IPv6. */
static void
text_gid(struct droced_view_sink *s, const char *name, const uint8_t gid[16])
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
	char buf[INET6_ADDRSTRLEN];

	if (memcmp(gid, v4mapped, sizeof(v4mapped)) == 0)
		inet_ntop(AF_INET, gid + 12, buf, sizeof(buf));
	else
		inet_ntop(AF_INET6, gid, buf, sizeof(buf));
	text(s, name, buf);
}

static void
text_cm_addr(struct droced_view_sink *s, const char *name, const struct droce_proto_cm_addr *a)
{
	char ip[INET6_ADDRSTRLEN], buf[INET6_ADDRSTRLEN + 16];

	if (a->family == AF_INET)
		inet_ntop(AF_INET, a->addr, ip, sizeof(ip));
	else if (a->family == AF_INET6)
		inet_ntop(AF_INET6, a->addr, ip, sizeof(ip));
	else
		snprintf(ip, sizeof(ip), "-");
	snprintf(buf, sizeof(buf), a->family == AF_INET6 ? "[%s]:%u" : "%s:%u", ip,
		 ntohs(a->port));
	text(s, name, buf);
}

static const char *
qp_type_name(uint8_t type)
{
	switch (type) {
	case DROCE_SHM_QPT_RC: return "RC";
	case DROCE_SHM_QPT_UC: return "UC";
	case DROCE_SHM_QPT_UD: return "UD";
	case DROCE_SHM_QPT_XRC_SEND: return "XRC_SEND";
	case DROCE_SHM_QPT_XRC_RECV: return "XRC_RECV";
	default: return "?";
	}
}

static const char *
cm_ps_name(uint16_t ps)
{
	switch (ps) {
	case DROCE_PROTO_CM_PS_TCP: return "TCP";
	case DROCE_PROTO_CM_PS_UDP: return "UDP";
	case DROCE_PROTO_CM_PS_IB: return "IB";
	case DROCE_PROTO_CM_PS_IPOIB: return "IPOIB";
	default: return "?";
	}
}

/* ibv_access_flags as rdma-core's names, joined by '|'. */
static void
text_access(struct droced_view_sink *s, const char *name, uint32_t access)
{
	static const struct { uint32_t bit; const char *name; } bits[] = {
		{ DROCE_SHM_ACCESS_LOCAL_WRITE, "LOCAL_WRITE" },
		{ DROCE_SHM_ACCESS_REMOTE_WRITE, "REMOTE_WRITE" },
		{ DROCE_SHM_ACCESS_REMOTE_READ, "REMOTE_READ" },
		{ DROCE_SHM_ACCESS_REMOTE_ATOMIC, "REMOTE_ATOMIC" },
		{ 1u << 4, "MW_BIND" },		/* IBV_ACCESS_MW_BIND */
		{ 1u << 5, "ZERO_BASED" },	/* IBV_ACCESS_ZERO_BASED */
		{ DROCE_SHM_ACCESS_FLUSH_GLOBAL, "FLUSH_GLOBAL" },
		{ DROCE_SHM_ACCESS_FLUSH_PERSISTENT, "FLUSH_PERSISTENT" },
	};
	char buf[96] = "";
	size_t i, n = 0;

	for (i = 0; i < RTE_DIM(bits); i++)
		if ((access & bits[i].bit) && n < sizeof(buf))
			n += snprintf(buf + n, sizeof(buf) - n, "%s%s", n ? "|" : "", bits[i].name);
	text(s, name, n ? buf : "-");
}

static const char *
yes_no(uint32_t v)
{
	return v ? "yes" : "no";
}

static const char *
on_off(uint32_t v)
{
	return v ? "on" : "off";
}

/* ---- Who may see what ---- */

static bool
may_see(const struct droced_view_sink *s, const struct droced_client *c)
{
	return s->viewer == 0 || s->viewer == c->uid;
}

/* A client that holds objects: a device context or a CM channel (not a query like ours). */
static bool
client_listed(const struct droced_view_sink *s, const struct droced_client *c)
{
	return !c->dead && (c->hello || c->cm != NULL) && may_see(s, c);
}

static void
client_ids(struct droced_view_sink *s, const struct droced_client *c)
{
	id(s, "client", c->id);
	id(s, "pid", (uint64_t)c->pid);
}

/* ---- The views ---- */

static void
client_status(const struct droced_client *c, struct droce_proto_status *st)
{
	if (!c->hello)
		return;
	st->nb_clients++;
	st->pds += c->pds.nb;
	st->mrs += c->mrs.nb;
	st->cqs += c->cqs.nb;
	st->srqs += c->srqs.nb;
	st->qps += c->qps.nb;
	st->ahs += c->nb_ahs;
	st->mr_bytes += c->mr_bytes;
}

void
droced_status_get(const struct droced *d, struct droce_proto_status *st)
{
	const struct droced_client *c;
	struct droce_engine_dev_objects objs;
	struct mallinfo2 mi;
	uint32_t i;

	memset(st, 0, sizeof(*st));
	st->pid = (uint32_t)getpid();
	st->proto_version = DROCE_PROTO_VERSION;
	st->nb_ports = d->nb_ports;
	st->nb_engines = d->nb_engines;
	TAILQ_FOREACH(c, &d->clients, next)
		client_status(c, st);
	st->clients_total = d->clients_total;
	st->clients_torn_down = d->clients_torn_down;
	st->uptime_ms = droced_now_ms() - d->start_ms;
	droce_engine_dev_objects_get(d->dev, &objs);
	st->engine_domains = objs.domains;
	st->engine_qps = objs.qps;
	st->engine_cqs = objs.cqs;
	st->engine_srqs = objs.srqs;
	st->engine_mrs = objs.mrs;
	st->engine_ahs = objs.ahs;
	st->mcast_groups = objs.mcast_groups;
	st->mcast_attached = objs.mcast_attached;
	st->neighbours = objs.neighbours;
	for (i = 0; i < d->nb_engines; i++)
		st->timer_qps += droce_engine_timer_qps(d->engines[i]);
	for (i = 0; i < d->nb_ports; i++) {
		st->mbufs_in_use += rte_mempool_in_use_count(d->ports[i].mp);
		st->mbufs_total += d->ports[i].mp->size;
	}
	mi = mallinfo2();
	st->heap_in_use = mi.uordblks + mi.hblkhd;
	droced_rdmacm_status(d, st);
}


/* droced itself: one row (droce-ctl status's fields). */
static int
view_status(struct droced *d, uint64_t start, struct droced_view_sink *s)
{
	struct droce_proto_status st;
	char name[64];
	uint32_t i;

	if (start > 0 || !s->row(s, 0))
		return start > 0 ? 0 : 1;
	droced_status_get(d, &st);
	gauge(s, "pid", st.pid, "droced's process id");
	gauge(s, "proto_version", st.proto_version, "its control protocol's version");
	gauge(s, "clients", st.nb_clients, "applications with a device context");
	gauge(s, "ports", st.nb_ports, "ports");
	gauge(s, "engines", st.nb_engines, "engines");
	gauge(s, "pds", st.pds, "protection domains, all clients");
	gauge(s, "mrs", st.mrs, "memory regions, all clients");
	gauge(s, "cqs", st.cqs, "completion queues, all clients");
	gauge(s, "srqs", st.srqs, "shared receive queues, all clients");
	gauge(s, "qps", st.qps, "queue pairs, all clients");
	gauge(s, "ahs", st.ahs, "address handles, all clients");
	gauge(s, "mr_bytes", st.mr_bytes, "bytes of memory regions, all clients");
	counter(s, "clients_total", st.clients_total, "device contexts opened since start");
	counter(s, "clients_torn_down", st.clients_torn_down,
		"clients gone with objects still alive (droced released them)");
	gauge(s, "uptime_ms", st.uptime_ms, "time since droced started");
	/* What the engines hold: equal to the counts above unless droced lost track. */
	gauge(s, "engine_domains", st.engine_domains, "the engines' domains (clients)");
	gauge(s, "engine_qps", st.engine_qps, "the engines' QPs");
	gauge(s, "engine_cqs", st.engine_cqs, "the engines' CQs");
	gauge(s, "engine_srqs", st.engine_srqs, "the engines' SRQs");
	gauge(s, "engine_mrs", st.engine_mrs, "the engines' MRs");
	gauge(s, "engine_ahs", st.engine_ahs, "the engines' AHs");
	gauge(s, "cm_channels", st.cm_channels, "rdma_cm event channels");
	gauge(s, "cm_ids", st.cm_ids, "rdma_cm ids");
	gauge(s, "cm_listeners", st.cm_listeners, "rdma_cm ids listening");
	gauge(s, "cm_conns", st.cm_conns, "CM connections, orphans included");
	counter(s, "cm_rx_mads", st.cm_rx_mads, "CM MADs QP1 took");
	counter(s, "cm_rx_bad", st.cm_rx_bad, "MADs QP1 dropped");
	counter(s, "cm_tx_mads", st.cm_tx_mads, "CM MADs QP1 sent");
	counter(s, "cm_qp_moves", st.cm_qp_moves, "QPs droced's CM moved to RTS");
	counter(s, "cm_qp_move_fallbacks", st.cm_qp_move_fallbacks,
		"QP moves left to the library");
	for (i = 0; i < DROCE_PROTO_CM_ID_STATES; i++) {
		snprintf(name, sizeof(name), "cm_ids_%s", droce_proto_cm_id_state_name(i));
		gauge(s, name, st.cm_id_state[i], "rdma_cm ids in this state");
	}
	gauge(s, "timer_qps", st.timer_qps, "QPs with an ACK or RNR timer running");
	gauge(s, "mcast_groups", st.mcast_groups, "multicast groups with a QP attached");
	gauge(s, "mcast_attached", st.mcast_attached, "QP attachments over all groups");
	gauge(s, "neighbours", st.neighbours, "MACs ARP learnt");
	gauge(s, "mbufs_in_use", st.mbufs_in_use, "the ports' mbufs taken");
	gauge(s, "mbufs_total", st.mbufs_total, "the ports' mbufs");
	gauge(s, "heap_in_use", st.heap_in_use, "bytes of droced's C heap in use");
	return 0;
}

static int
view_ports(struct droced *d, uint64_t start, struct droced_view_sink *s)
{
	uint32_t i;

	for (i = (uint32_t)RTE_MIN(start, (uint64_t)d->nb_ports); i < d->nb_ports; i++) {
		const struct droced_port *p = &d->ports[i];
		struct droce_proto_port_detail pd;
		struct droce_proto_port_info info;
		char mac[24], guid[24];
		const uint8_t *g;

		if (!s->row(s, i))
			return 1;
		memset(&pd, 0, sizeof(pd));
		droced_port_info(p, &info);
		droced_port_detail(p, &pd);
		snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x", info.mac[0], info.mac[1],
			 info.mac[2], info.mac[3], info.mac[4], info.mac[5]);
		g = (const uint8_t *)&info.node_guid;
		snprintf(guid, sizeof(guid), "%02x%02x:%02x%02x:%02x%02x:%02x%02x", g[0], g[1],
			 g[2], g[3], g[4], g[5], g[6], g[7]);
		id(s, "port", i);
		text(s, "name", p->cfg->name);
		text(s, "mac", mac);
		text_ipv4(s, "ipv4", info.ipv4);
		text(s, "guid", guid);
		text(s, "state", info.state == DROCE_PROTO_PORT_ACTIVE ? "ACTIVE" : "DOWN");
		/* The NIC under it (doc/nics.md). */
		text(s, "driver", pd.driver);
		text(s, "pci", yes_no(pd.flags & DROCE_PROTO_NIC_PCI));
		text(s, "rss", on_off(pd.flags & DROCE_PROTO_NIC_RSS));
		text(s, "link_intr", on_off(pd.flags & DROCE_PROTO_NIC_LSC));
		text(s, "rx_intr", on_off(pd.flags & DROCE_PROTO_NIC_RX_INTR));
		text(s, "rx_ip_csum", on_off(pd.flags & DROCE_PROTO_NIC_RX_IP_CSUM));
		text(s, "filter", droced_nic_filter_name((enum droced_nic_filter)pd.filter));
		gauge(s, "up", info.state == DROCE_PROTO_PORT_ACTIVE, "1 while the link is up");
		gauge(s, "mtu", p->cfg->mtu, "RoCE MTU in bytes");
		gauge(s, "eth_mtu", pd.eth_mtu, "Ethernet MTU set on the NIC (0: its default)");
		gauge(s, "queues", pd.nb_queues, "rx and tx queue pairs: one per engine");
		gauge(s, "rxd", pd.nb_rxd, "descriptors of each rx queue");
		gauge(s, "txd", pd.nb_txd, "descriptors of each tx queue");
		gauge(s, "mc_macs", pd.nb_mc, "multicast MACs the NIC was asked to take");
		gauge(s, "speed_mbps", pd.link_speed_mbps, "link speed");
		gauge(s, "mbufs_in_use", p->mp != NULL ? rte_mempool_in_use_count(p->mp) : 0,
		      "the port's mbufs taken from its pool (lcore caches count as free)");
		gauge(s, "mbufs_total", p->mp != NULL ? p->mp->size : 0, "the port's pool");
		counter(s, "link_downs", p->link_downs, "times the link was seen going down");
		counter(s, "restarts", p->restarts, "times droced restarted the port");
		counter(s, "rx_packets", pd.rx_packets, "frames the NIC received (ethdev)");
		counter(s, "tx_packets", pd.tx_packets, "frames the NIC sent (ethdev)");
		counter(s, "rx_bytes", pd.rx_bytes, "bytes the NIC received (ethdev)");
		counter(s, "tx_bytes", pd.tx_bytes, "bytes the NIC sent (ethdev)");
		counter(s, "rx_missed", pd.rx_missed, "frames dropped: no rx descriptor free");
		counter(s, "rx_errors", pd.rx_errors, "frames received in error (ethdev)");
		counter(s, "tx_errors", pd.tx_errors, "frames failed to send (ethdev)");
		counter(s, "rx_nombuf", pd.rx_nombuf, "rx descriptors not refilled: no mbuf");
	}
	return 0;
}

/*
 * A port's counters: Linux's RDMA hardware counters (mlx5's names, then rxe's where they
 * say something mlx5's do not), then droce's own engine counters, each summed over the
 * port's engines. doc/operations.md has the table.
 */
static int
view_counters(struct droced *d, uint64_t start, struct droced_view_sink *s)
{
	uint32_t i, k, j;

	for (i = (uint32_t)RTE_MIN(start, (uint64_t)d->nb_ports); i < d->nb_ports; i++) {
		const struct droced_port *p = &d->ports[i];
		struct droce_engine_qp_counters q, qsum;
		struct droce_engine_stats st, sum;
		uint64_t *qv = (uint64_t *)&qsum, *sv = (uint64_t *)&sum;

		if (!s->row(s, i))
			return 1;
		memset(&qsum, 0, sizeof(qsum));
		memset(&sum, 0, sizeof(sum));
		for (k = 0; k < p->nb_engines; k++) {
			const struct droce_engine *e = d->engines[p->engines[k]];

			if (e == NULL)
				continue;
			droce_engine_qp_counters_total(e, &q);
			droce_engine_stats_get(e, &st);
			for (j = 0; j < DROCE_ENGINE_NB_QP_COUNTERS; j++)
				qv[j] += ((const uint64_t *)&q)[j];
			for (j = 0; j < DROCE_ENGINE_NB_COUNTERS; j++)
				sv[j] += ((const uint64_t *)&st)[j];
		}
		id(s, "port", i);
		text(s, "name", p->cfg->name);
		for (j = 0; j < DROCE_ENGINE_NB_QP_COUNTERS; j++)
			counter(s, droce_engine_qp_counter_names[j], qv[j],
				droce_engine_qp_counter_descs[j]);
		/* rxe's (drivers/infiniband/sw/rxe/rxe_hw_counters.c) that mlx5 has no name for. */
		counter(s, "rcvd_rnr_err", sum.nak_rnr_rcvd, "RNR NAKs received (rxe's name)");
		counter(s, "send_rnr_err", sum.nak_rnr_sent, "RNR NAKs sent (rxe's name)");
		counter(s, "rcvd_seq_err", sum.nak_seq_rcvd,
			"PSN sequence error NAKs received (rxe's name)");
		counter(s, "link_downed", p->link_downs, "times the link went down (rxe's name)");
		for (j = 0; j < DROCE_ENGINE_NB_COUNTERS; j++)
			counter(s, droce_engine_counter_names[j], sv[j], droce_engine_counter_descs[j]);
	}
	return 0;
}

static int
view_engines(struct droced *d, uint64_t start, struct droced_view_sink *s)
{
	uint32_t i, pi, k, j;

	for (i = (uint32_t)RTE_MIN(start, (uint64_t)d->nb_engines); i < d->nb_engines; i++) {
		const struct droce_engine *e = d->engines[i];
		struct droce_engine_stats st;

		/* Its port, and its queue there (the engine's place in the port's list). */
		for (pi = 0; pi < d->nb_ports; pi++) {
			for (k = 0; k < d->ports[pi].nb_engines; k++)
				if (d->ports[pi].engines[k] == i)
					break;
			if (k < d->ports[pi].nb_engines)
				break;
		}
		if (e == NULL || pi == d->nb_ports)
			continue;
		if (!s->row(s, i))
			return 1;
		droce_engine_stats_get(e, &st);
		id(s, "engine", i);
		id(s, "port", pi);
		id(s, "queue", k);
		id(s, "lcore", d->cfg.lcores[i]);
		gauge(s, "timer_qps", droce_engine_timer_qps(e), "QPs with an ACK or RNR timer running");
		for (j = 0; j < DROCE_ENGINE_NB_COUNTERS; j++)
			counter(s, droce_engine_counter_names[j], ((const uint64_t *)&st)[j],
				droce_engine_counter_descs[j]);
	}
	return 0;
}

static const char *
client_kind(const struct droced_client *c)
{
	return c->hello ? "verbs" : "rdma_cm";
}

static int
view_clients(struct droced *d, uint64_t start, struct droced_view_sink *s)
{
	const struct droced_client *c;

	TAILQ_FOREACH(c, &d->clients, next) {
		uint32_t h = 0, cm_ids = 0;
		struct droced_rdmacm_id_view v;

		if (c->id < start || !client_listed(s, c))
			continue;
		if (!s->row(s, c->id))
			return 1;
		for (; droced_rdmacm_id_next(c, &h, &v) == 0; h++)
			cm_ids++;
		client_ids(s, c);
		id(s, "uid", c->uid);
		text(s, "kind", client_kind(c));
		text(s, "command", c->comm);
		text(s, "port", c->port != NULL ? c->port->cfg->name : "-");
		gauge(s, "pds", c->pds.nb, "protection domains");
		gauge(s, "mrs", c->mrs.nb, "memory regions");
		gauge(s, "mws", c->mws.nb, "memory windows");
		gauge(s, "cqs", c->cqs.nb, "completion queues");
		gauge(s, "srqs", c->srqs.nb, "shared receive queues");
		gauge(s, "qps", c->qps.nb, "queue pairs");
		gauge(s, "ahs", c->nb_ahs, "address handles");
		gauge(s, "xrcds", c->xrcds.nb, "XRC domains opened");
		gauge(s, "cm_ids", cm_ids, "rdma_cm ids");
		gauge(s, "pinned_bytes", c->mr_bytes, "bytes of its memory regions");
		gauge(s, "region_bytes", c->region_size, "its shared region: rings and doorbells");
	}
	return 0;
}

/* The client whose domain owns a QP: NULL when none does (droced's own, or gone). */
static const struct droced_client *
qp_owner(struct droced *d, const struct droce_engine_domain *dom)
{
	const struct droced_client *c;

	TAILQ_FOREACH(c, &d->clients, next)
		if (c->dom == dom)
			return c;
	return NULL;
}

static int
view_qps(struct droced *d, uint64_t start, struct droced_view_sink *s)
{
	struct droce_engine_qp *qp;
	uint32_t qpn = (uint32_t)RTE_MIN(start, (uint64_t)UINT32_MAX), j;

	if (d->dev == NULL || start > UINT32_MAX)
		return 0;
	for (qp = droce_engine_dev_qp_next(d->dev, qpn); qp != NULL;
	     qp = droce_engine_dev_qp_next(d->dev, qpn + 1)) {
		struct droce_engine_qp_counters cnt;
		const struct droced_client *c;
		struct droce_engine_qp_info info;
		struct droce_engine_qp_cc cc;

		droce_engine_qp_info_get(qp, &info);
		qpn = info.qpn;
		c = qp_owner(d, info.dom);
		if (c == NULL || !may_see(s, c))
			continue;
		if (!s->row(s, qpn))
			return 1;
		droce_engine_qp_cc_get(qp, &cc);
		droce_engine_qp_counters_get(qp, &cnt);
		id(s, "qpn", qpn);
		client_ids(s, c);
		id(s, "port", c->port != NULL ? c->port->index : 0);
		id(s, "engine", info.engine);
		text(s, "type", qp_type_name(info.type));
		text(s, "state", droce_shm_qp_state_name(info.state));
		id(s, "pd", info.pd);
		if (info.type == DROCE_SHM_QPT_RC || info.type == DROCE_SHM_QPT_UC ||
		    info.type == DROCE_SHM_QPT_XRC_SEND || info.type == DROCE_SHM_QPT_XRC_RECV) {
			id(s, "dest_qpn", info.dest_qpn);
			text_gid(s, "dest", info.dgid);
		}
		gauge(s, "mtu", info.mtu, "path MTU in bytes (0 before RTR)");
		gauge(s, "sq_psn", info.sq_psn, "the next PSN to send");
		gauge(s, "sq_una", info.sq_una, "the oldest PSN not acknowledged");
		gauge(s, "rq_psn", info.rq_psn, "the PSN the responder expects");
		gauge(s, "sq_size", info.sq_size, "send queue slots");
		gauge(s, "rq_size", info.rq_size, "receive queue slots");
		gauge(s, "timeout", info.timeout, "local ACK timeout exponent (4.096 us * 2^n)");
		gauge(s, "retry_cnt", info.retry_cnt, "transport retries");
		gauge(s, "rnr_retry", info.rnr_retry, "RNR retries (7: for ever)");
		/* Its congestion control (doc/congestion.md), as droce-ctl's qps always showed. */
		id(s, "prio", cc.prio);
		gauge(s, "rp", cc.rp, "1: the reaction point paces it on CNPs");
		gauge(s, "limited", cc.limited, "1: paced below the line rate since a CNP");
		gauge(s, "rate_kbps", cc.rate_kbps, "its current rate");
		gauge(s, "target_kbps", cc.target_kbps, "DCQCN's target rate");
		gauge(s, "alpha", cc.alpha, "DCQCN's alpha, in 1024ths");
		counter(s, "ce_rcvd", cc.ce_rcvd, "CE-marked packets received");
		counter(s, "cnp_sent", cc.cnp_sent, "CNPs sent");
		counter(s, "cnp_rcvd", cc.cnp_rcvd, "CNPs received");
		counter(s, "rate_cuts", cc.rate_cuts, "rate cuts on CNPs");
		for (j = 0; j < DROCE_ENGINE_NB_QP_COUNTERS; j++)
			counter(s, droce_engine_qp_counter_names[j], ((const uint64_t *)&cnt)[j],
				droce_engine_qp_counter_descs[j]);
	}
	return 0;
}

/* A client's object: rows keyed by client id and handle. */
static uint64_t
obj_key(const struct droced_client *c, uint32_t handle)
{
	return c->id << KEY_HANDLE_BITS | handle;
}

/* The first handle of c to look at for start (past the end: UINT32_MAX). */
static bool
obj_first(const struct droced_client *c, uint64_t start, uint32_t *handle)
{
	uint64_t cid = start >> KEY_HANDLE_BITS;

	if (c->id < cid)
		return false;
	*handle = c->id == cid ? (uint32_t)start : 0;
	return true;
}

/* A client's object, as one kind of view walks it. */
union obj {
	const void *ptr;		/* a table's entry (CQ, SRQ) */
	struct droced_mr_info mr;
	struct droced_rdmacm_id_view cm;
};

struct obj_kind {
	/* c's object with the lowest handle >= *h (*h set to it): true, or false: none left */
	bool (*next)(const struct droced_client *c, uint32_t *h, union obj *o);
	/* whether the view shows it (NULL: all) */
	bool (*want)(const union obj *o);
	/* its fields, after its owner's */
	void (*fields)(struct droced_view_sink *s, uint32_t h, const union obj *o);
};

/* Every listed client's objects of a kind, keyed by client id and handle. */
static int
view_objects(struct droced *d, uint64_t start, struct droced_view_sink *s,
	     const struct obj_kind *k)
{
	const struct droced_client *c;

	TAILQ_FOREACH(c, &d->clients, next) {
		union obj o;
		uint32_t h;

		if (!client_listed(s, c) || !obj_first(c, start, &h))
			continue;
		for (; k->next(c, &h, &o); h++) {
			if (k->want != NULL && !k->want(&o))
				continue;
			if (!s->row(s, obj_key(c, h)))
				return 1;
			client_ids(s, c);
			k->fields(s, h, &o);
		}
	}
	return 0;
}

static bool
cq_next(const struct droced_client *c, uint32_t *h, union obj *o)
{
	return (o->ptr = droced_table_next(&c->cqs, h)) != NULL;
}

static void
cq_fields(struct droced_view_sink *s, uint32_t h, const union obj *o)
{
	const struct droced_cq *cq = o->ptr;

	id(s, "cq", h);
	gauge(s, "size", cq->size, "entries");
	gauge(s, "channel", cq->efd >= 0, "1: with a completion channel");
	gauge(s, "error", droce_engine_cq_in_error(cq->cq), "1: overrun, in error (IBV_EVENT_CQ_ERR)");
}

static bool
srq_next(const struct droced_client *c, uint32_t *h, union obj *o)
{
	return (o->ptr = droced_table_next(&c->srqs, h)) != NULL;
}

static void
srq_fields(struct droced_view_sink *s, uint32_t h, const union obj *o)
{
	const struct droced_srq *srq = o->ptr;

	id(s, "srq", h);
	id(s, "pd", srq->pd);
	text(s, "kind", srq->xrcd != DROCE_PROTO_NO_HANDLE ? "XRC" : "basic");
	id(s, "srq_num", droce_engine_srq_num(srq->srq));
	gauge(s, "size", srq->size, "ring entries");
	gauge(s, "max_sge", srq->max_sge, "SGEs per WQE");
	gauge(s, "limit", droce_engine_srq_limit(srq->srq), "the limit armed (0: none, or it fired)");
}

static bool
mr_next(const struct droced_client *c, uint32_t *h, union obj *o)
{
	return droced_mr_next(c, h, &o->mr) == 0;
}

static void
mr_fields(struct droced_view_sink *s, uint32_t h, const union obj *o)
{
	id(s, "mr", h);
	id(s, "pd", o->mr.pd);
	text_access(s, "access", o->mr.access);
	gauge(s, "length", o->mr.length, "bytes");
	/* Keys and addresses: root only, even to the MR's owner's own uid. */
	if (s->viewer == 0) {
		id(s, "iova", o->mr.iova);
		id(s, "lkey", o->mr.lkey);
		id(s, "rkey", o->mr.rkey);
	}
}

static bool
cm_next(const struct droced_client *c, uint32_t *h, union obj *o)
{
	return droced_rdmacm_id_next(c, h, &o->cm) == 0;
}

static bool
cm_listening(const union obj *o)
{
	return o->cm.state == DROCE_PROTO_CM_ID_LISTEN;
}

static void
cm_fields(struct droced_view_sink *s, uint32_t h, const union obj *o)
{
	const struct droced_rdmacm_id_view *v = &o->cm;

	RTE_SET_USED(h);
	id(s, "id", v->handle);
	text(s, "ps", cm_ps_name(v->ps));
	text_cm_addr(s, "src", &v->src);
	text(s, "state", droce_proto_cm_id_state_name(v->state));
	text(s, "qp_type", qp_type_name(v->qp_type));
	text_cm_addr(s, "dst", &v->dst);
	text(s, "conn", v->conn != NULL ? v->conn : "-");
	id(s, "qpn", v->qpn);
	id(s, "remote_qpn", v->remote_qpn);
	id(s, "local_comm_id", v->local_comm_id);
	id(s, "remote_comm_id", v->remote_comm_id);
	gauge(s, "mcast", v->nb_mcast, "multicast groups it joined");
}

static void
listener_fields(struct droced_view_sink *s, uint32_t h, const union obj *o)
{
	const struct droced_rdmacm_id_view *v = &o->cm;

	RTE_SET_USED(h);
	id(s, "id", v->handle);
	text(s, "ps", cm_ps_name(v->ps));
	text_cm_addr(s, "src", &v->src);
	gauge(s, "backlog", (uint64_t)v->backlog, "rdma_listen's backlog");
	gauge(s, "pending", (uint64_t)v->pending, "connection requests not yet taken");
}

static const struct obj_kind kind_cq = { cq_next, NULL, cq_fields };
static const struct obj_kind kind_srq = { srq_next, NULL, srq_fields };
static const struct obj_kind kind_mr = { mr_next, NULL, mr_fields };
static const struct obj_kind kind_cm = { cm_next, NULL, cm_fields };
static const struct obj_kind kind_listener = { cm_next, cm_listening, listener_fields };

static int
view_mcast(struct droced *d, uint64_t start, struct droced_view_sink *s)
{
	uint8_t gid[16];
	uint32_t i, members;

	if (d->dev == NULL || start > UINT32_MAX)
		return 0;
	for (i = (uint32_t)start; droce_engine_mcast_group_get(d->dev, i, gid, &members) == 0;
	     i++) {
		if (!s->row(s, i))
			return 1;
		id(s, "group", i);
		text_gid(s, "mgid", gid);
		gauge(s, "members", members, "QPs attached");
	}
	return 0;
}

int
droced_view_run(struct droced *d, uint32_t v, uint64_t start, struct droced_view_sink *s)
{
	switch (v) {
	case DROCE_PROTO_VIEW_STATUS: return view_status(d, start, s);
	case DROCE_PROTO_VIEW_PORTS: return view_ports(d, start, s);
	case DROCE_PROTO_VIEW_COUNTERS: return view_counters(d, start, s);
	case DROCE_PROTO_VIEW_ENGINES: return view_engines(d, start, s);
	case DROCE_PROTO_VIEW_CLIENTS: return view_clients(d, start, s);
	case DROCE_PROTO_VIEW_QPS: return view_qps(d, start, s);
	case DROCE_PROTO_VIEW_CQS: return view_objects(d, start, s, &kind_cq);
	case DROCE_PROTO_VIEW_SRQS: return view_objects(d, start, s, &kind_srq);
	case DROCE_PROTO_VIEW_MRS: return view_objects(d, start, s, &kind_mr);
	case DROCE_PROTO_VIEW_CM: return view_objects(d, start, s, &kind_cm);
	case DROCE_PROTO_VIEW_LISTENERS: return view_objects(d, start, s, &kind_listener);
	case DROCE_PROTO_VIEW_MCAST: return view_mcast(d, start, s);
	default: return -EINVAL;
	}
}
