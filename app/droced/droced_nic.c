/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * The ethdev under a port (doc/nics.md): one rx and one tx queue per engine of the port,
 * received RoCE spread over them by RSS where the device hashes UDP (RoCEv2 senders vary
 * the UDP source port per QP), descriptor rings and the mbuf pool sized within the
 * device's limits on its NUMA socket, the Ethernet MTU the RoCE MTU needs, the receive
 * filter (the port's MAC, broadcast and the multicast MACs lib/net wants; promiscuous only
 * when configured), the IPv4 header checksum checked by the NIC where it can, and the
 * link's changes as interrupts where the PMD raises them. This file tells the device what
 * droced_port.c decided; nothing here knows RoCE or calls up.
 */

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "droced_loc.h"

/* Hashes that spread RoCEv2 by its UDP source port, else by its addresses only. */
#define NIC_RSS_UDP	(RTE_ETH_RSS_NONFRAG_IPV4_UDP | RTE_ETH_RSS_NONFRAG_IPV6_UDP)
#define NIC_RSS_IP	(RTE_ETH_RSS_IPV4 | RTE_ETH_RSS_IPV6)

const char *
droced_nic_filter_name(enum droced_nic_filter f)
{
	switch (f) {
	case DROCED_NIC_FILTER_LIST:
		return "list";
	case DROCED_NIC_FILTER_ALLMULTI:
		return "allmulticast";
	case DROCED_NIC_FILTER_PROMISC:
		return "promiscuous";
	case DROCED_NIC_FILTER_NONE:
		break;
	}
	return "none";
}

static bool
nic_is_pci(const struct rte_eth_dev_info *info)
{
	const struct rte_bus *bus = info->device != NULL ? rte_dev_bus(info->device) : NULL;

	return bus != NULL && strcmp(rte_bus_name(bus), "pci") == 0;
}

/* net_af_xdp: a kernel netdev's XDP socket, whose frames are its mbuf pool's elements. */
static bool
nic_is_af_xdp(const struct rte_eth_dev_info *info)
{
	return strcmp(info->driver_name, "net_af_xdp") == 0;
}

/*
 * Devices that carry frames of any length whatever MTU they report: net_memif chains its
 * buffers, net_ring passes mbufs. A RoCE MTU above their report is no cause for a warning
 * (the shipped memif pair runs 64 KiB messages at MTU 4096).
 */
static bool
nic_any_frame(const struct rte_eth_dev_info *info)
{
	return strcmp(info->driver_name, "net_memif") == 0 ||
	       strcmp(info->driver_name, "net_ring") == 0;
}

/*
 * The Ethernet MTU the RoCE MTU needs, set in conf unless the device cannot take it: a PCI
 * NIC or net_af_xdp (frames within a page) is then refused, as its frames would be
 * dropped; another virtual device keeps its default, with a warning unless it carries
 * any frame (nic_any_frame).
 */
static int
nic_mtu(struct droced_port *p, const struct rte_eth_dev_info *info, struct rte_eth_conf *conf)
{
	uint32_t want = p->cfg->mtu + DROCED_ROCE_HDR_ROOM, limit, fits;

	/* ethdev refuses an MTU whose frame exceeds max_rx_pktlen, whatever max_mtu says. */
	limit = RTE_MIN((uint32_t)info->max_mtu, info->max_rx_pktlen - RTE_MIN(info->max_rx_pktlen,
			(uint32_t)(RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN)));
	if (want <= limit) {
		if (want >= info->min_mtu)
			conf->rxmode.mtu = want;
		p->nic.eth_mtu = conf->rxmode.mtu;
		return 0;
	}
	for (fits = p->cfg->mtu; fits >= DROCED_CONFIG_MTU_MIN &&
	     fits + DROCED_ROCE_HDR_ROOM > limit; fits /= 2)
		;
	if (p->nic.pci || nic_is_af_xdp(info)) {
		if (fits < DROCED_CONFIG_MTU_MIN)
			DROCED_LOG(ERR, "[port %s]: '%s' (%s) takes frames of at most %u bytes of "
				   "IP: too small for any RoCE MTU", p->cfg->name, p->cfg->device,
				   info->driver_name, limit);
		else
			DROCED_LOG(ERR, "[port %s]: RoCE MTU %u needs an Ethernet MTU of %u, '%s' (%s)"
				   " takes at most %u: set mtu = %u in [port %s]", p->cfg->name,
				   p->cfg->mtu, want, p->cfg->device, info->driver_name, limit, fits,
				   p->cfg->name);
		return -1;
	}
	if (!nic_any_frame(info))
		DROCED_LOG(NOTICE, "[port %s]: RoCE MTU %u needs an Ethernet MTU of %u, the "
			   "device reports at most %u: larger frames may not pass", p->cfg->name,
			   p->cfg->mtu, want, limit);
	return 0;
}

/*
 * net_af_xdp's frames are its pool's elements, and a kernel before 6.6 takes none larger
 * than a page (nor a later one unless the pool is in hugepages): for a RoCE MTU of 2048 or
 * less its mbufs hold what that needs. Every other device keeps room for 4096 (net_af_packet
 * refuses mbufs smaller than its frames, which users size for 4096).
 */
static uint16_t
nic_mbuf_room(const struct droced_port *p, const struct rte_eth_dev_info *info)
{
	if (p->cfg->mtu <= 2048 && nic_is_af_xdp(info))
		return DROCED_MBUF_ROOM_XDP_2K;
	return DROCED_MBUF_ROOM;
}

/* RSS over the port's queues when it has more than one and the device hashes IP. */
static void
nic_rss(struct droced_port *p, const struct rte_eth_dev_info *info, struct rte_eth_conf *conf)
{
	uint64_t hf = info->flow_type_rss_offloads & NIC_RSS_UDP;

	p->nic.rss_hf = 0;
	if (p->nic.nb_queues < 2 || !p->cfg->rss)
		return;
	if (hf == 0)
		hf = info->flow_type_rss_offloads & NIC_RSS_IP;
	if (hf == 0) {
		DROCED_LOG(NOTICE, "[port %s]: '%s' (%s) has no RSS for IP: each packet is handed "
			   "to its QP's engine from the queue it lands on", p->cfg->name,
			   p->cfg->device, info->driver_name);
		return;
	}
	conf->rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
	conf->rx_adv_conf.rss_conf.rss_hf = hf;
	conf->rx_adv_conf.rss_conf.rss_key = NULL;	/* the PMD's own key */
	p->nic.rss_hf = hf;
}

/* ethdev calls this on its interrupt thread: the control thread looks at the link now. */
static int
nic_lsc_event(uint16_t port_id, enum rte_eth_event_type type, void *arg, void *ret)
{
	struct droced_port *p = arg;
	uint64_t one = 1;

	RTE_SET_USED(port_id);
	RTE_SET_USED(type);
	RTE_SET_USED(ret);
	__atomic_store_n(&p->nic.lsc_pending, true, __ATOMIC_RELEASE);
	/* A full eventfd counter leaves a wake-up pending anyway. */
	if (write(p->d->wake_fd, &one, sizeof(one)) < 0)
		return 0;
	return 0;
}

bool
droced_nic_lsc_take(struct droced_port *p)
{
	return __atomic_exchange_n(&p->nic.lsc_pending, false, __ATOMIC_ACQ_REL);
}

/*
 * rte_eth_dev_configure with what the device takes: rx interrupts and link interrupts
 * are dropped, in that order, when it refuses them (the engines then sleep on timers, the
 * link is polled).
 */
static int
nic_configure(struct droced_port *p, struct rte_eth_conf *conf, uint32_t idle_sleep_us)
{
	uint16_t nq = p->nic.nb_queues;
	int rc;

	for (;;) {
		rc = rte_eth_dev_configure(p->port_id, nq, nq, conf);
		if (rc == 0)
			break;
		if (conf->intr_conf.rxq) {
			DROCED_LOG(NOTICE, "[port %s]: '%s' refuses rx interrupts (%s): its engines "
				   "sleep %u us at a time", p->cfg->name, p->cfg->device,
				   strerror(-rc), idle_sleep_us);
			conf->intr_conf.rxq = 0;
		} else if (conf->intr_conf.lsc) {
			DROCED_LOG(NOTICE, "[port %s]: '%s' refuses link interrupts (%s): its link is "
				   "polled every %u ms", p->cfg->name, p->cfg->device, strerror(-rc),
				   DROCED_LINK_CHECK_MS);
			conf->intr_conf.lsc = 0;
		} else {
			DROCED_LOG(ERR, "[port %s]: cannot configure '%s': %s", p->cfg->name,
				   p->cfg->device, strerror(-rc));
			return -1;
		}
	}
	p->rx_intr = conf->intr_conf.rxq != 0;
	p->nic.lsc = conf->intr_conf.lsc != 0;
	return 0;
}

int
droced_nic_setup(struct droced_port *p, bool rx_intr, uint32_t idle_sleep_us)
{
	struct rte_eth_dev_info info;
	struct rte_eth_conf conf;
	struct rte_eth_rxconf rxconf;
	char name[RTE_MEMZONE_NAMESIZE];
	uint16_t q, nq = p->nb_engines, nb_rxd = DROCED_NB_RXD, nb_txd = DROCED_NB_TXD;
	int socket = rte_eth_dev_socket_id(p->port_id);
	uint32_t nb_mbufs;
	int rc;

	rc = rte_eth_dev_info_get(p->port_id, &info);
	if (rc != 0) {
		DROCED_LOG(ERR, "[port %s]: no device info: %s", p->cfg->name, strerror(-rc));
		return -1;
	}
	snprintf(p->nic.driver, sizeof(p->nic.driver), "%s", info.driver_name);
	p->nic.pci = nic_is_pci(&info);
	if (nq > info.max_rx_queues || nq > info.max_tx_queues) {
		DROCED_LOG(ERR, "[port %s]: device '%s' (%s) has %u rx / %u tx queues, its %u "
			   "engines need one each", p->cfg->name, p->cfg->device, info.driver_name,
			   info.max_rx_queues, info.max_tx_queues, nq);
		return -1;
	}
	p->nic.nb_queues = nq;
	memset(&conf, 0, sizeof(conf));
	if (nic_mtu(p, &info, &conf) != 0)
		return -1;
	/* A frame larger than one mbuf (e1000's 4 KiB rx buffers) arrives as a chain. */
	conf.rxmode.offloads |= info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER;
	/* The NIC checks IPv4 header checksums: the engines skip theirs on packets it passed. */
	conf.rxmode.offloads |= info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_IPV4_CKSUM;
	p->nic.rx_ip_csum = (conf.rxmode.offloads & RTE_ETH_RX_OFFLOAD_IPV4_CKSUM) != 0;
	nic_rss(p, &info, &conf);
	/* Engines that may sleep sleep on their rx queue's interrupt where the PMD has them. */
	conf.intr_conf.rxq = rx_intr ? 1 : 0;
	conf.intr_conf.lsc = (*info.dev_flags & RTE_ETH_DEV_INTR_LSC) ? 1 : 0;
	if (nic_configure(p, &conf, idle_sleep_us) != 0)
		return -1;
	rc = rte_eth_dev_adjust_nb_rx_tx_desc(p->port_id, &nb_rxd, &nb_txd);
	if (rc != 0) {
		DROCED_LOG(ERR, "[port %s]: descriptor counts: %s", p->cfg->name, strerror(-rc));
		return -1;
	}
	p->nic.nb_rxd = nb_rxd;
	p->nic.nb_txd = nb_txd;
	/* Every queue's rings full of mbufs, and as many again for the engines' bursts and
	 * retransmission copies and the slow path. */
	nb_mbufs = RTE_MAX((uint32_t)DROCED_NB_MBUFS, 2u * nq * (nb_rxd + nb_txd));
	snprintf(name, sizeof(name), "droced_mp%u", p->index);
	p->mp = rte_pktmbuf_pool_create(name, nb_mbufs, DROCED_MBUF_CACHE, 0,
					nic_mbuf_room(p, &info), socket);
	if (p->mp == NULL) {
		DROCED_LOG(ERR, "[port %s]: no memory for %u mbufs on socket %d: %s", p->cfg->name,
			   nb_mbufs, socket, rte_strerror(rte_errno));
		return -1;
	}
	rxconf = info.default_rxconf;
	rxconf.offloads = conf.rxmode.offloads;
	for (q = 0; q < nq; q++) {
		rc = rte_eth_rx_queue_setup(p->port_id, q, nb_rxd, socket, &rxconf, p->mp);
		if (rc == 0)
			rc = rte_eth_tx_queue_setup(p->port_id, q, nb_txd, socket, NULL);
		if (rc != 0) {
			DROCED_LOG(ERR, "[port %s]: queue %u: %s", p->cfg->name, q, strerror(-rc));
			return -1;
		}
	}
	if (p->nic.lsc) {
		rc = rte_eth_dev_callback_register(p->port_id, RTE_ETH_EVENT_INTR_LSC,
						   nic_lsc_event, p);
		if (rc != 0) {
			DROCED_LOG(ERR, "[port %s]: link callback: %s", p->cfg->name, strerror(-rc));
			return -1;
		}
		p->nic.lsc_registered = true;
	}
	/* Not every PMD has the switch; lib/net ignores frames for others anyway. */
	if (p->cfg->promiscuous) {
		rc = rte_eth_promiscuous_enable(p->port_id);
		p->nic.filter = rc == 0 ? DROCED_NIC_FILTER_PROMISC : DROCED_NIC_FILTER_NONE;
	} else {
		rte_eth_promiscuous_disable(p->port_id);
	}
	rc = rte_eth_dev_start(p->port_id);
	if (rc != 0) {
		DROCED_LOG(ERR, "[port %s]: cannot start '%s': %s", p->cfg->name, p->cfg->device,
			   strerror(-rc));
		return -1;
	}
	p->started = true;
	return 0;
}

/*
 * The multicast MACs to take besides the port's own and broadcast: the device's list
 * where it has one (a NIC filters the rest), else every multicast frame (allmulticast),
 * else whatever the PMD passes (net_ring, net_memif pass everything). Once a device has
 * refused a list, it stays in allmulticast.
 */
void
droced_nic_mc_set(struct droced_port *p, const struct rte_ether_addr *macs, uint32_t n)
{
	int rc;

	if (p->nic.filter == DROCED_NIC_FILTER_PROMISC)
		return;
	if (p->nic.filter != DROCED_NIC_FILTER_ALLMULTI) {
		rc = rte_eth_dev_set_mc_addr_list(p->port_id,
						  (struct rte_ether_addr *)(uintptr_t)macs, n);
		if (rc == 0) {
			p->nic.filter = DROCED_NIC_FILTER_LIST;
			p->nic.nb_mc = n;
			return;
		}
		DROCED_LOG(NOTICE, "[port %s]: '%s' (%s) takes no list of %u multicast MACs (%s): "
			   "it receives all multicast frames", p->cfg->name, p->cfg->device,
			   p->nic.driver, n, strerror(-rc));
	}
	rc = rte_eth_allmulticast_enable(p->port_id);
	p->nic.filter = rc == 0 ? DROCED_NIC_FILTER_ALLMULTI : DROCED_NIC_FILTER_NONE;
	p->nic.nb_mc = n;
}

void
droced_nic_counters(const struct droced_port *p, struct droce_proto_port_detail *pd)
{
	struct rte_eth_stats st;
	uint32_t q;

	if (rte_eth_stats_get(p->port_id, &st) != 0)
		return;
	pd->rx_packets = st.ipackets;
	pd->tx_packets = st.opackets;
	pd->rx_bytes = st.ibytes;
	pd->tx_bytes = st.obytes;
	pd->rx_missed = st.imissed;
	pd->rx_errors = st.ierrors;
	pd->tx_errors = st.oerrors;
	pd->rx_nombuf = st.rx_nombuf;
	for (q = 0; q < p->nic.nb_queues && q < DROCE_PROTO_PORT_MAX_QUEUES &&
	     q < RTE_ETHDEV_QUEUE_STAT_CNTRS; q++) {
		pd->queue[q].nic_rx_packets = st.q_ipackets[q];
		pd->queue[q].nic_tx_packets = st.q_opackets[q];
	}
}

void
droced_nic_close(struct droced_port *p)
{
	if (p->nic.lsc_registered)
		rte_eth_dev_callback_unregister(p->port_id, RTE_ETH_EVENT_INTR_LSC, nic_lsc_event, p);
	p->nic.lsc_registered = false;
	/* net_memif: on the interrupt thread, with the peer's disconnect (engine_port.c) */
	droce_engine_port_close(p->port_id, p->started, p->probed);
	p->started = false;
}
