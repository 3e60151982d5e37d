/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Ports: each configured device is probed, given one rx/tx queue per engine that serves it
 * (engine i serves port i % nb_ports), a mempool, and two rings for the frames that are
 * not RoCE: slow_rx (engines -> control thread: ARP, ICMP) and slow_tx (control thread ->
 * the port's first engine, which transmits them). lib/net owns the port's addresses, GID
 * table and neighbours; this file is its glue: frames in from slow_rx, frames out to
 * slow_tx, time from the TSC, and resolved neighbours copied into the engines' table.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "droced_loc.h"

#define GID_STR_MAX	INET6_ADDRSTRLEN
#define LINE_MAX_LEN	1024

/* The layers above, told what the ports see (droced_ports_set_hooks). */
static struct droced_port_hooks hooks;

void
droced_ports_set_hooks(const struct droced_port_hooks *h)
{
	hooks = *h;
}


uint8_t
droced_mtu_enum(uint32_t mtu)
{
	uint8_t e = DROCE_SHM_MTU_256;

	while (e < DROCE_SHM_MTU_4096 && ((uint32_t)DROCED_CONFIG_MTU_MIN << (e - 1)) < mtu)
		e++;
	return e;
}

/* ---- lib/net callbacks (control thread) ---- */

static void
net_tx(void *arg, struct rte_mbuf *m)
{
	struct droced_port *p = arg;

	if (rte_ring_sp_enqueue(p->slow_tx, m) != 0)
		rte_pktmbuf_free(m);
	else
		droced_port_tx_wake(p);
}

void
droced_port_tx_wake(struct droced_port *p)
{
	/* slow_tx's consumer is the port's first engine (droced_port_engine_conf). */
	if (p->nb_engines > 0 && p->d->engines[p->engines[0]] != NULL)
		droce_engine_slow_tx_push(p->d->engines[p->engines[0]]);
}

/*
 * The port's speed, the reaction point's max rate (doc/congestion.md): the link's if it is
 * up already, else the fastest the device says it can do (a NIC just started is still
 * negotiating), else 0 (the engine's 100 Gb/s), as net_ring and net_memif.
 */
static uint32_t
droced_port_speed_mbps(uint16_t port_id)
{
	static const uint32_t speeds[] = {
		RTE_ETH_SPEED_NUM_200G, RTE_ETH_SPEED_NUM_100G,
		RTE_ETH_SPEED_NUM_56G, RTE_ETH_SPEED_NUM_50G, RTE_ETH_SPEED_NUM_40G,
		RTE_ETH_SPEED_NUM_25G, RTE_ETH_SPEED_NUM_20G, RTE_ETH_SPEED_NUM_10G,
		RTE_ETH_SPEED_NUM_5G, RTE_ETH_SPEED_NUM_2_5G, RTE_ETH_SPEED_NUM_1G,
	};
	struct rte_eth_dev_info info;
	struct rte_eth_link link;
	unsigned int i;

	if (rte_eth_link_get_nowait(port_id, &link) == 0 && link.link_status == RTE_ETH_LINK_UP &&
	    link.link_speed != RTE_ETH_SPEED_NUM_NONE &&
	    link.link_speed != RTE_ETH_SPEED_NUM_UNKNOWN)
		return link.link_speed;
	if (rte_eth_dev_info_get(port_id, &info) != 0)
		return 0;
	for (i = 0; i < RTE_DIM(speeds); i++)
		if (info.speed_capa & rte_eth_speed_bitflag(speeds[i], RTE_ETH_LINK_FULL_DUPLEX))
			return speeds[i];
	return 0;
}

static void
net_resolved(void *arg, uint32_t ip, const uint8_t *mac, int status)
{
	struct droced_port *p = arg;
	uint8_t gid[16];

	if (status == 0) {
		droce_gid_from_ipv4_host(gid, ip);
		if (droce_engine_dev_neigh_add(p->d->dev, gid, mac) != 0)
			status = -EHOSTUNREACH;
	}
	hooks.resolved(p, ip, status);
}

/* ---- Start-up ---- */

static int
port_probe(struct droced_port *p)
{
	char name[RTE_ETH_NAME_MAX_LEN];
	size_t len = strcspn(p->cfg->device, ",");
	int rc;

	snprintf(name, sizeof(name), "%.*s", (int)len, p->cfg->device);
	/* A PCI device EAL probed on its bus scan is there already: probing it again only
	 * logs a failure (its arguments come from EAL's -a instead). */
	if (rte_eth_dev_get_port_by_name(name, &p->port_id) == 0) {
		p->probed = true;
		return 0;
	}
	rc = rte_dev_probe(p->cfg->device);
	/* -EEXIST: EAL probed it already (under another name than the one configured). */
	if (rc != 0 && rc != -EEXIST) {
		/* The vdev bus answers -EFAULT when no driver takes the name. */
		DROCED_LOG(ERR, "[port %s]: cannot probe device '%s': %s", p->cfg->name,
			   p->cfg->device, rc == -EFAULT ? "no such device or no driver for it" :
			   strerror(-rc));
		return -1;
	}
	if (rte_eth_dev_get_port_by_name(name, &p->port_id) != 0) {
		DROCED_LOG(ERR, "[port %s]: device '%s' is not an ethdev port", p->cfg->name,
			   p->cfg->device);
		return -1;
	}
	p->probed = true;
	return 0;
}

static int
port_setup(const struct droced *d, struct droced_port *p)
{
	char name[RTE_MEMZONE_NAMESIZE];

	snprintf(name, sizeof(name), "droced_srx%u", p->index);
	p->slow_rx = rte_ring_create(name, DROCED_SLOW_RING, SOCKET_ID_ANY, RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "droced_stx%u", p->index);
	p->slow_tx = rte_ring_create(name, DROCED_SLOW_RING, SOCKET_ID_ANY,
				     RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (p->slow_rx == NULL || p->slow_tx == NULL) {
		DROCED_LOG(ERR, "[port %s]: no memory for rings: %s", p->cfg->name,
			   rte_strerror(rte_errno));
		return -1;
	}
	/*
	 * Engines that may sleep sleep on their rx queue's interrupt where the PMD has them
	 * (droce_engine_conf.rx_intr); a PMD that refuses the setting is configured without
	 * it, and its engines sleep idle_sleep_us at a time.
	 */
	return droced_nic_setup(p, d->cfg.wait != DROCED_CONFIG_WAIT_POLL, d->cfg.idle_sleep_us);
}

static int
port_net(struct droced_port *p)
{
	struct droce_net_conf nc;
	struct rte_ether_addr ea;
	enum droce_net_gid_type type;
	uint32_t i;
	int rc;

	rc = rte_eth_macaddr_get(p->port_id, &ea);
	if (rc != 0 || !rte_is_unicast_ether_addr(&ea) || rte_is_zero_ether_addr(&ea)) {
		/*
		 * net_ring has no address: take a locally administered one made of the port's
		 * IPv4 address (02:00:a:b:c:d), unique wherever the addresses are.
		 */
		ea.addr_bytes[0] = RTE_ETHER_LOCAL_ADMIN_ADDR;
		ea.addr_bytes[1] = 0;
		memcpy(&ea.addr_bytes[2], p->cfg->ipv4.addr, 4);
		rte_eth_dev_default_mac_addr_set(p->port_id, &ea);
	}
	memcpy(p->mac, ea.addr_bytes, 6);
	memset(&nc, 0, sizeof(nc));
	memcpy(nc.mac, p->mac, 6);
	nc.ipv4 = (uint32_t)p->cfg->ipv4.addr[0] << 24 | (uint32_t)p->cfg->ipv4.addr[1] << 16 |
		  (uint32_t)p->cfg->ipv4.addr[2] << 8 | p->cfg->ipv4.addr[3];
	nc.ipv4_prefix_len = p->cfg->ipv4.len;
	for (i = 0; i < p->cfg->nb_ipv6; i++) {
		memcpy(nc.ipv6[i].addr, p->cfg->ipv6[i].addr, 16);
		nc.ipv6[i].prefix_len = p->cfg->ipv6[i].len;
	}
	nc.nb_ipv6 = p->cfg->nb_ipv6;
	nc.mp = p->mp;
	nc.hz = rte_get_tsc_hz();
	nc.ops.tx = net_tx;
	nc.ops.resolved = net_resolved;
	nc.ops.arg = p;
	p->net = droce_net_create(&nc);
	if (p->net == NULL) {
		DROCED_LOG(ERR, "[port %s]: lib/net: %s", p->cfg->name, rte_strerror(rte_errno));
		return -1;
	}
	p->nb_gids = RTE_MIN(droce_net_gid_count(p->net), (uint32_t)DROCE_ENGINE_MAX_GIDS);
	for (i = 0; i < p->nb_gids; i++) {
		p->gid_valid[i] = droce_net_gid_query(p->net, i, p->gids[i], &type) == 0;
		p->gid_type[i] = p->gid_valid[i] ? type : 0;
		if (!p->gid_valid[i])
			memset(p->gids[i], 0, 16);
	}
	return 0;
}

int
droced_ports_init(struct droced *d)
{
	uint32_t i;

	d->nb_ports = d->cfg.nb_ports;
	/* Made before the engines, which get it in their configuration (slow_rx_wake_fd). */
	d->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->wake_fd < 0) {
		DROCED_LOG(ERR, "eventfd: %s", strerror(errno));
		return -1;
	}
	for (i = 0; i < d->nb_ports; i++) {
		d->ports[i].cfg = &d->cfg.ports[i];
		d->ports[i].index = i;
		d->ports[i].d = d;
	}
	for (i = 0; i < d->cfg.nb_lcores; i++) {
		struct droced_port *p = &d->ports[i % d->nb_ports];

		p->engines[p->nb_engines++] = i;
	}
	for (i = 0; i < d->nb_ports; i++) {
		struct droced_port *p = &d->ports[i];

		if (port_probe(p) != 0 || port_setup(d, p) != 0 || port_net(p) != 0)
			return -1;
		droced_port_mcast_sync(p);
		p->link_up = true;	/* until seen down after up (port_link_check) */
	}
	return 0;
}

void
droced_port_engine_conf(const struct droced *d, uint32_t id, struct droce_engine_conf *ec)
{
	const struct droced_port *p = &d->ports[id % d->nb_ports];
	uint16_t q = id / d->nb_ports;	/* its position among the port's engines */

	memset(ec, 0, sizeof(*ec));
	ec->port_id = p->port_id;
	ec->rx_queue = q;
	ec->tx_queue = q;
	ec->mp = p->mp;
	memcpy(ec->mac, p->mac, 6);
	memcpy(ec->gids, p->gids, sizeof(ec->gids));
	ec->nb_gids = p->nb_gids;
	ec->wait = (enum droce_engine_wait)d->cfg.wait;
	ec->idle_spin_us = d->cfg.idle_spin_us;
	ec->idle_sleep_us = d->cfg.idle_sleep_us;
	ec->rx_intr = p->rx_intr;
	ec->early_retransmit = d->cfg.early_retransmit;
	ec->rx_no_icrc = p->cfg->rx_no_icrc;
	ec->cc = &p->cfg->cc;
	ec->line_mbps = droced_port_speed_mbps(p->port_id);
	ec->slow_rx = p->slow_rx;
	ec->slow_rx_wake_fd = d->wake_fd;
	/* slow_tx is single-consumer: the port's first engine sends the control frames. */
	ec->slow_tx = q == 0 ? p->slow_tx : NULL;
}

static void
port_log(const struct droced_port *p)
{
	char line[LINE_MAX_LEN], gid[GID_STR_MAX];
	size_t n;
	uint32_t i;

	n = snprintf(line, sizeof(line), "port %u [port %s] %s: mac %02x:%02x:%02x:%02x:%02x:%02x"
		     " ipv4 %u.%u.%u.%u/%u mtu %u engines", p->index, p->cfg->name,
		     p->cfg->device, p->mac[0], p->mac[1], p->mac[2], p->mac[3], p->mac[4],
		     p->mac[5], p->cfg->ipv4.addr[0], p->cfg->ipv4.addr[1], p->cfg->ipv4.addr[2],
		     p->cfg->ipv4.addr[3], p->cfg->ipv4.len, p->cfg->mtu);
	for (i = 0; i < p->nb_engines && n < sizeof(line); i++)
		n += snprintf(line + n, sizeof(line) - n, "%s%u", i ? "," : " ", p->engines[i]);
	/* What the NIC was set up with (doc/nics.md): droce-ctl ports shows it too. */
	if (n < sizeof(line))
		n += snprintf(line + n, sizeof(line) - n, " driver %s queues %u (%u/%u descriptors) "
			      "rss %s link %s multicast %s", p->nic.driver, p->nic.nb_queues,
			      p->nic.nb_rxd, p->nic.nb_txd, p->nic.rss_hf != 0 ? "on" : "off",
			      p->nic.lsc ? "interrupt" : "polled",
			      droced_nic_filter_name(p->nic.filter));
	for (i = 0; i < p->nb_gids && n < sizeof(line); i++) {
		if (!p->gid_valid[i])
			continue;
		inet_ntop(AF_INET6, p->gids[i], gid, sizeof(gid));
		n += snprintf(line + n, sizeof(line) - n, " gid%u %s", i, gid);
	}
	DROCED_LOG(NOTICE, "%s", line);
}

int
droced_ports_announce(struct droced *d)
{
	uint32_t i, j, k;

	for (i = 0; i < d->nb_ports; i++) {
		struct droced_port *p = &d->ports[i];

		for (j = 0; j < p->cfg->nb_neigh; j++) {
			const struct droced_neighbour *nb = &p->cfg->neigh[j];
			uint8_t gid[16];
			int rc;

			if (nb->family == AF_INET) {
				uint32_t ip = (uint32_t)nb->ip[0] << 24 | (uint32_t)nb->ip[1] << 16 |
					      (uint32_t)nb->ip[2] << 8 | nb->ip[3];

				droce_gid_from_ipv4_host(gid, ip);
				rc = droce_net_neigh_add_static(p->net, ip, nb->mac);
			} else {
				memcpy(gid, nb->ip, 16);
				rc = droce_net_neigh6_add_static(p->net, nb->ip, nb->mac);
			}
			if (rc == 0)
				rc = droce_engine_dev_neigh_add(d->dev, gid, nb->mac);
			if (rc != 0) {
				DROCED_LOG(ERR, "[port %s]: static neighbour %u: %s", p->cfg->name,
					   j, strerror(-rc));
				return -1;
			}
		}
		/* Own GIDs reach our own MAC: the engine delivers those packets locally. */
		for (k = 0; k < p->nb_gids; k++) {
			if (p->gid_valid[k] && droce_engine_dev_neigh_add(d->dev, p->gids[k], p->mac) != 0) {
				DROCED_LOG(ERR, "[port %s]: neighbour table full", p->cfg->name);
				return -1;
			}
		}
		/* RFC 5227 2.4: tell the link who has our address (and refresh stale caches). */
		droce_net_garp(p->net, rte_get_tsc_cycles());
		port_log(p);
	}
	return 0;
}

/* ---- The control thread's tick ---- */

static void port_link_check(struct droced *d, struct droced_port *p, uint64_t now);

unsigned int
droced_ports_rx(struct droced *d)
{
	struct rte_mbuf *pkts[DROCED_SLOW_BURST];
	uint64_t now = rte_get_tsc_cycles();
	unsigned int n, i, j, total = 0;

	for (i = 0; i < d->nb_ports; i++) {
		struct droced_port *p = &d->ports[i];

		if (p->net == NULL)
			continue;
		/* Bounded per call, so a flood of ARP or MADs cannot starve the clients. */
		n = rte_ring_sc_dequeue_burst(p->slow_rx, (void **)pkts, RTE_DIM(pkts), NULL);
		for (j = 0; j < n; j++)
			if (!hooks.qp1_rx(p, pkts[j]))
				droce_net_rx(p->net, pkts[j], now);
		total += n;
		/* Woken by a link interrupt: the link is looked at now, not at the next tick. */
		if (__atomic_load_n(&p->nic.lsc_pending, __ATOMIC_ACQUIRE))
			port_link_check(d, p, now);
	}
	/* MADs between two ends on this droced, after the ones that came in. */
	total += hooks.qp1_flush(d);
	return total;
}

/*
 * A virtual port down since its last restart is stopped and started again: a PMD whose peer
 * went away may connect again only at start (net_memif's client after its server restarted).
 * Its engines keep off its queues meanwhile; if the start fails they stay off until a
 * later one succeeds.
 */
static void
port_restart(struct droced *d, struct droced_port *p, uint64_t now)
{
	uint64_t hz = rte_get_tsc_hz();
	int rc;

	droce_engine_dev_port_pause(d->dev, p->port_id, true);
	rc = p->started ? rte_eth_dev_stop(p->port_id) : 0;
	if (rc == 0 || rc == -EBUSY || rc == -ENOTSUP)
		rc = rte_eth_dev_start(p->port_id);
	p->restarts++;
	p->started = rc == 0;
	if (rc == 0) {
		/* ethdev restores the MAC, promiscuous and allmulticast; not the list. */
		droced_port_mcast_sync(p);
		droce_engine_dev_port_pause(d->dev, p->port_id, false);
	}
	else
		DROCED_LOG(WARNING, "[port %s]: restart %" PRIu64 " failed: %s (again in %u ms)",
			   p->cfg->name, p->restarts, rte_strerror(-rc), p->restart_ms);
	p->restart_tsc = now + hz / 1000 * p->restart_ms;
	p->restart_ms = RTE_MIN(p->restart_ms * 2, (uint32_t)DROCED_PORT_RESTART_MAX_MS);
}

/*
 * The link, every DROCED_LINK_CHECK_MS: a port reports ACTIVE until its link, once seen
 * up, goes down (a port whose peer is not there yet, a memif server before its client,
 * stays ACTIVE as it always did); each change is an IBV_EVENT_PORT_ERR or PORT_ACTIVE to
 * the port's clients, as a NIC's driver raises them. The link's first coming up, and each
 * return, announces our address (RFC 5227 2.4): a peer that restarted, or missed the
 * announcement at our start because the link was down, learns our MAC again.
 */
static void
port_link_check(struct droced *d, struct droced_port *p, uint64_t now)
{
	uint64_t hz = rte_get_tsc_hz();
	struct rte_eth_link link;
	bool up;

	/* A link interrupt (droced_nic.c) asks for a look now. */
	if (droced_nic_lsc_take(p))
		p->link_check_tsc = now;
	if (now < p->link_check_tsc)
		return;
	p->link_check_tsc = now + hz / 1000 * DROCED_LINK_CHECK_MS;
	memset(&link, 0, sizeof(link));
	if (rte_eth_link_get_nowait(p->port_id, &link) != 0)
		return;
	up = link.link_status == RTE_ETH_LINK_UP;
	if (up && !p->link_seen_up) {
		p->link_seen_up = true;
		droce_net_garp(p->net, now);
	}
	if (up == p->link_up) {
		/* A NIC's link comes back by itself: stopping it would only lose its set-up
		 * (rx interrupts under vfio-pci do not survive a stop and start of net_virtio). */
		if (!up && !p->nic.pci && now >= p->restart_tsc)
			port_restart(d, p, now);
		return;
	}
	if (!up && !p->link_seen_up)
		return;
	p->link_up = up;
	if (up) {
		DROCED_LOG(NOTICE, "[port %s]: link up again (%" PRIu64 " restarts of the port)",
			   p->cfg->name, p->restarts);
		droce_net_garp(p->net, now);
	} else {
		p->link_downs++;
		p->restart_ms = DROCED_PORT_RESTART_MS;
		p->restart_tsc = now + hz / 1000 * p->restart_ms;
		DROCED_LOG(WARNING, "[port %s]: link down (%" PRIu64 " so far): its clients get "
			   "IBV_EVENT_PORT_ERR; the port is restarted until it comes back",
			   p->cfg->name, p->link_downs);
	}
	hooks.link(p, up);
}

void
droced_ports_tick(struct droced *d)
{
	uint64_t now = rte_get_tsc_cycles();
	unsigned int i;

	droced_ports_rx(d);
	for (i = 0; i < d->nb_ports; i++) {
		if (d->ports[i].net == NULL)
			continue;
		droce_net_timer(d->ports[i].net, now);
		port_link_check(d, &d->ports[i], now);
	}
}

int
droced_neigh_ensure(struct droced_port *p, const uint8_t dgid[16])
{
	uint8_t mac[6];
	uint32_t i;
	int rc;

	/* A multicast group: the engines derive its MAC from the address (no ARP). */
	if (droce_gid_is_multicast(dgid))
		return 0;
	/* A GID of this daemon: its MAC went into the engines' table at start. */
	for (i = 0; i < p->d->nb_ports; i++)
		if (p->d->ports[i].net != NULL && droce_net_gid_find(p->d->ports[i].net, dgid) >= 0)
			return 0;
	rc = droce_net_gid_resolve(p->net, dgid, NULL, mac, rte_get_tsc_cycles());
	if (rc == -EAGAIN)
		return rc;
	if (rc != 0)
		return -EHOSTUNREACH;
	/* Learned or static: the engines address it with what lib/net knows now. */
	if (droce_engine_dev_neigh_add(p->d->dev, dgid, mac) != 0)
		return -EHOSTUNREACH;
	return 0;
}

void
droced_route_av(struct droce_shm_ah_attr *ah)
{
	/* Linux keeps the caller's hop limit only for multicast (and RoCE v1, not ours). */
	if (ah->is_global && !droce_gid_is_multicast(ah->dgid))
		ah->hop_limit = DROCED_ROUTE_HOP_LIMIT;
}

void
droced_port_mcast_sync(struct droced_port *p)
{
	uint8_t macs[DROCE_NET_MAX_MCAST + 2][6];
	struct rte_ether_addr ea[RTE_DIM(macs)];
	uint32_t i, n;

	if (p->net == NULL)
		return;
	n = RTE_MIN(droce_net_mcast_macs(p->net, macs, RTE_DIM(macs)), (uint32_t)RTE_DIM(macs));
	for (i = 0; i < n; i++)
		memcpy(ea[i].addr_bytes, macs[i], 6);
	droced_nic_mc_set(p, ea, n);
}

void
droced_port_detail(const struct droced_port *p, struct droce_proto_port_detail *pd)
{
	struct rte_eth_link link;
	uint32_t q;

	memset(pd, 0, sizeof(*pd));
	pd->port = p->index;
	snprintf(pd->driver, sizeof(pd->driver), "%s", p->nic.driver);
	pd->flags = (p->nic.rss_hf != 0 ? DROCE_PROTO_NIC_RSS : 0) |
		    (p->nic.lsc ? DROCE_PROTO_NIC_LSC : 0) |
		    (p->rx_intr ? DROCE_PROTO_NIC_RX_INTR : 0) |
		    (p->nic.rx_ip_csum ? DROCE_PROTO_NIC_RX_IP_CSUM : 0) |
		    (p->nic.pci ? DROCE_PROTO_NIC_PCI : 0);
	pd->nb_queues = p->nic.nb_queues;
	pd->nb_rxd = p->nic.nb_rxd;
	pd->nb_txd = p->nic.nb_txd;
	pd->filter = (uint8_t)p->nic.filter;
	pd->nb_mc = p->nic.nb_mc;
	pd->eth_mtu = p->nic.eth_mtu;
	pd->rss_hf = p->nic.rss_hf;
	pd->link_downs = p->link_downs;
	memset(&link, 0, sizeof(link));
	if (rte_eth_link_get_nowait(p->port_id, &link) == 0 &&
	    link.link_speed != RTE_ETH_SPEED_NUM_UNKNOWN)
		pd->link_speed_mbps = link.link_speed;
	droced_nic_counters(p, pd);
	for (q = 0; q < p->nb_engines && q < DROCE_PROTO_PORT_MAX_QUEUES; q++) {
		struct droce_engine *e = p->d->engines[p->engines[q]];
		struct droce_engine_stats st;

		pd->queue[q].engine = p->engines[q];
		if (e == NULL)
			continue;
		droce_engine_stats_get(e, &st);
		pd->queue[q].engine_rx_packets = st.rx_pkts;
		pd->queue[q].handoff_out = st.rx_handoff_out;
		pd->queue[q].handoff_in = st.rx_handoff_in;
		pd->queue[q].handoff_drop = st.rx_handoff_drop;
		pd->queue[q].engine_loops = st.loops;
		pd->queue[q].engine_sleeps = st.sleeps;
		pd->queue[q].rx_intr_wakeups = st.rx_intr_wakeups;
	}
}

void
droced_port_info(const struct droced_port *p, struct droce_proto_port_info *info)
{
	uint8_t guid[8];

	memset(info, 0, sizeof(*info));
	memcpy(info->mac, p->mac, 6);
	info->state = p->link_up ? DROCE_PROTO_PORT_ACTIVE : DROCE_PROTO_PORT_DOWN;
	info->max_mtu = droced_mtu_enum(p->cfg->mtu);
	memcpy(&info->ipv4, p->cfg->ipv4.addr, 4);
	/* EUI-64 of the MAC (RFC 4291 2.5.1): U/L bit flipped, ff:fe in the middle. */
	guid[0] = p->mac[0] ^ 0x02;
	guid[1] = p->mac[1];
	guid[2] = p->mac[2];
	guid[3] = 0xff;
	guid[4] = 0xfe;
	guid[5] = p->mac[3];
	guid[6] = p->mac[4];
	guid[7] = p->mac[5];
	memcpy(&info->node_guid, guid, sizeof(guid));
	/* Names longer than the protocol's field are cut (NUL-ended when they fit). */
	memcpy(info->name, p->cfg->name, RTE_MIN(strlen(p->cfg->name), sizeof(info->name)));
}

void
droced_ports_fini(struct droced *d)
{
	struct rte_mbuf *m;
	uint32_t i;

	for (i = 0; i < d->nb_ports; i++) {
		struct droced_port *p = &d->ports[i];

		droced_nic_close(p);
		droce_net_free(p->net);
		p->net = NULL;
		while (p->slow_rx != NULL && rte_ring_dequeue(p->slow_rx, (void **)&m) == 0)
			rte_pktmbuf_free(m);
		while (p->slow_tx != NULL && rte_ring_dequeue(p->slow_tx, (void **)&m) == 0)
			rte_pktmbuf_free(m);
		rte_ring_free(p->slow_rx);
		rte_ring_free(p->slow_tx);
		rte_mempool_free(p->mp);
		p->slow_rx = p->slow_tx = NULL;
		p->mp = NULL;
	}
	if (d->wake_fd >= 0)
		close(d->wake_fd);
	d->wake_fd = -1;
}
