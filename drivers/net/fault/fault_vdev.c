/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The net_fault vdev: a port of its own wrapping another port (devargs port=NAME). Its rx
 * burst polls the wrapped port's queue of the same number and runs the fault engine on
 * what it returns; its tx burst and its control path are the wrapped port's. net_fault
 * owns the wrapped port (rte_eth_dev_owner_set), so applications that iterate the ports
 * see net_fault only. Built only with DPDK's driver SDK headers, which Debian's
 * libdpdk-dev leaves out (devtools/fetch-dpdk-driver-headers.sh, doc/drivers/fault.md).
 */

#include <errno.h>
#include <stdio.h>

#include <bus_vdev_driver.h>
#include <ethdev_driver.h>
#include <ethdev_vdev.h>
#include <rte_errno.h>
#include <rte_malloc.h>

#include "fault_loc.h"

#define FAULT_XSTAT_PREFIX "fault_"

/* dev->data->dev_private */
struct fault_vdev {
	struct droce_fault *f;
	/* Our ownership of the wrapped port, f->cfg.port_id. */
	uint64_t owner_id;
};

/*
 * A tx queue: the wrapped port's queue of the same number, and the tx_drop fault. The
 * lcore sending on the queue owns it; the control path reads the counters.
 */
struct fault_vdev_txq {
	uint16_t port_id;
	uint16_t queue_id;
	uint32_t tx_drop;		/* ppm */
	uint64_t rng;
	uint64_t tx_passed;		/* handed to the wrapped port, which took them */
	uint64_t tx_dropped;		/* freed by the tx_drop fault, reported as sent */
};

#define FAULT_TX_XSTATS(X) \
	X(tx_passed, "packets sent through the wrapped port") \
	X(tx_dropped, "packets freed by the tx_drop fault (reported to the sender as sent)")
#define FAULT_NB_TX_XSTATS 2u

static const struct eth_dev_ops fault_vdev_ops;

static uint16_t
fault_vdev_port(const struct rte_eth_dev *dev)
{
	const struct fault_vdev *fv = dev->data->dev_private;

	return fv->f->cfg.port_id;
}

/* rx burst, run by the lcore polling this queue; it owns q (fault_loc.h). */
static uint16_t
fault_vdev_rx(void *rxq, struct rte_mbuf **pkts, uint16_t nb_pkts)
{
	struct fault_queue *q = rxq;
	uint16_t n = rte_eth_rx_burst(q->cfg->port_id, q->queue_id, pkts, nb_pkts);

	return fault_rx_burst(q, pkts, n, nb_pkts);
}

/*
 * tx burst, run by the lcore sending on this queue, which owns t. Without tx_drop it is
 * the wrapped port's. With it, a dropped packet is freed and counted as sent, as a link
 * that loses it would; the packets kept go to the wrapped port in runs, and the burst
 * stops at the first one the port refuses, so what the caller gets back is exactly the
 * unsent tail of its array (decisions for those are drawn again when they are resent).
 */
static uint16_t
fault_vdev_tx(void *txq, struct rte_mbuf **pkts, uint16_t nb_pkts)
{
	struct fault_vdev_txq *t = txq;
	uint16_t done = 0, run, sent;

	if (t->tx_drop == 0)
		return rte_eth_tx_burst(t->port_id, t->queue_id, pkts, nb_pkts);
	while (done < nb_pkts) {
		/* Kept packets from done on, up to the next dropped one. */
		run = 0;
		while (done + run < nb_pkts && !fault_hit(fault_rng_next(&t->rng), t->tx_drop))
			run++;
		sent = run == 0 ? 0 : rte_eth_tx_burst(t->port_id, t->queue_id, &pkts[done],
							run);
		t->tx_passed += sent;
		done += sent;
		if (sent < run)
			return done;
		if (done < nb_pkts) {
			rte_pktmbuf_free(pkts[done]);
			t->tx_dropped++;
			done++;
		}
	}
	return done;
}

static uint16_t
fault_vdev_tx_prepare(void *txq, struct rte_mbuf **pkts, uint16_t nb_pkts)
{
	const struct fault_vdev_txq *t = txq;

	return rte_eth_tx_prepare(t->port_id, t->queue_id, pkts, nb_pkts);
}

static int
fault_vdev_configure(struct rte_eth_dev *dev)
{
	struct fault_vdev *fv = dev->data->dev_private;
	struct rte_eth_dev_data *data = dev->data;
	int ret;

	ret = rte_eth_dev_configure(fv->f->cfg.port_id, data->nb_rx_queues,
				    data->nb_tx_queues, &data->dev_conf);
	if (ret == 0)
		fv->f->nb_queues = data->nb_rx_queues;
	return ret;
}

static void
fault_vdev_queue_states(struct rte_eth_dev *dev, uint8_t state)
{
	uint16_t i;

	for (i = 0; i < dev->data->nb_rx_queues; i++)
		dev->data->rx_queue_state[i] = state;
	for (i = 0; i < dev->data->nb_tx_queues; i++)
		dev->data->tx_queue_state[i] = state;
}

static int
fault_vdev_start(struct rte_eth_dev *dev)
{
	int ret = rte_eth_dev_start(fault_vdev_port(dev));

	if (ret == 0)
		fault_vdev_queue_states(dev, RTE_ETH_QUEUE_STATE_STARTED);
	return ret;
}

static int
fault_vdev_stop(struct rte_eth_dev *dev)
{
	int ret = rte_eth_dev_stop(fault_vdev_port(dev));

	if (ret == 0)
		fault_vdev_queue_states(dev, RTE_ETH_QUEUE_STATE_STOPPED);
	return ret;
}

/*
 * Frees the queues and the packets they hold, then gives the wrapped port back and closes
 * it, unless it is gone already: rte_eal_cleanup() removes the vdevs in the order they
 * were given, the wrapped one first.
 */
static int
fault_vdev_close(struct rte_eth_dev *dev)
{
	struct fault_vdev *fv = dev->data->dev_private;
	uint16_t port = fv->f->cfg.port_id;
	struct rte_eth_dev_owner owner;
	uint16_t i;

	if (rte_eal_process_type() != RTE_PROC_PRIMARY)
		return 0;
	for (i = 0; i < dev->data->nb_rx_queues; i++)
		dev->data->rx_queues[i] = NULL;
	for (i = 0; i < dev->data->nb_tx_queues; i++) {
		rte_free(dev->data->tx_queues[i]);
		dev->data->tx_queues[i] = NULL;
	}
	fault_free(fv->f);
	fv->f = NULL;
	if (rte_eth_dev_owner_get(port, &owner) != 0 || owner.id != fv->owner_id)
		return 0;
	rte_eth_dev_owner_unset(port, fv->owner_id);
	return rte_eth_dev_close(port);
}

/* The wrapped port's capabilities, less what would need more than one MAC or runtime
 * queue setup under a polling lcore. */
static int
fault_vdev_infos_get(struct rte_eth_dev *dev, struct rte_eth_dev_info *info)
{
	struct rte_eth_dev_info wrapped;
	int ret;

	ret = rte_eth_dev_info_get(fault_vdev_port(dev), &wrapped);
	if (ret != 0)
		return ret;
	wrapped.device = info->device;
	wrapped.switch_info = info->switch_info;
	wrapped.if_index = 0;
	wrapped.max_mac_addrs = 1;
	wrapped.max_hash_mac_addrs = 0;
	wrapped.max_vfs = 0;
	wrapped.max_vmdq_pools = 0;
	wrapped.dev_capa &= ~(RTE_ETH_DEV_CAPA_RUNTIME_RX_QUEUE_SETUP |
			      RTE_ETH_DEV_CAPA_RUNTIME_TX_QUEUE_SETUP);
	*info = wrapped;
	return 0;
}

static int
fault_vdev_link_update(struct rte_eth_dev *dev, int wait_to_complete)
{
	struct rte_eth_link link;
	int ret;

	if (wait_to_complete)
		ret = rte_eth_link_get(fault_vdev_port(dev), &link);
	else
		ret = rte_eth_link_get_nowait(fault_vdev_port(dev), &link);
	if (ret != 0)
		return ret;
	return rte_eth_linkstatus_set(dev, &link);
}

static int
fault_vdev_promiscuous_enable(struct rte_eth_dev *dev)
{
	return rte_eth_promiscuous_enable(fault_vdev_port(dev));
}

static int
fault_vdev_promiscuous_disable(struct rte_eth_dev *dev)
{
	return rte_eth_promiscuous_disable(fault_vdev_port(dev));
}

static int
fault_vdev_allmulticast_enable(struct rte_eth_dev *dev)
{
	return rte_eth_allmulticast_enable(fault_vdev_port(dev));
}

static int
fault_vdev_allmulticast_disable(struct rte_eth_dev *dev)
{
	return rte_eth_allmulticast_disable(fault_vdev_port(dev));
}

static int
fault_vdev_mtu_set(struct rte_eth_dev *dev, uint16_t mtu)
{
	return rte_eth_dev_set_mtu(fault_vdev_port(dev), mtu);
}

/* The basic counters are the wrapped port's: what reached it, before any fault. */
static int
fault_vdev_stats_get(struct rte_eth_dev *dev, struct rte_eth_stats *stats)
{
	return rte_eth_stats_get(fault_vdev_port(dev), stats);
}

/* Also what rte_eth_xstats_reset() runs: there is no xstats_reset op. */
static int
fault_vdev_stats_reset(struct rte_eth_dev *dev)
{
	struct fault_vdev *fv = dev->data->dev_private;

	uint16_t q;

	fault_stats_reset(fv->f);
	for (q = 0; q < dev->data->nb_tx_queues; q++) {
		struct fault_vdev_txq *t = dev->data->tx_queues[q];

		if (t != NULL)
			t->tx_passed = t->tx_dropped = 0;
	}
	return rte_eth_stats_reset(fv->f->cfg.port_id);
}

/* The fault counters summed over the queues, "fault_" + the X-macro names, in order. */
static int
fault_vdev_xstats_get(struct rte_eth_dev *dev, struct rte_eth_xstat *xstats, unsigned int n)
{
	struct fault_vdev *fv = dev->data->dev_private;
	struct droce_fault_stats st;
	unsigned int i = 0;

	uint64_t tx_passed = 0, tx_dropped = 0;
	uint16_t q;

	if (xstats == NULL || n < DROCE_FAULT_NB_COUNTERS + FAULT_NB_TX_XSTATS)
		return (int)(DROCE_FAULT_NB_COUNTERS + FAULT_NB_TX_XSTATS);
	droce_fault_stats_get(fv->f, -1, &st);
#define FAULT_XSTAT(name, desc) \
	xstats[i] = (struct rte_eth_xstat){ .id = i, .value = st.name }; \
	i++;
	DROCE_FAULT_COUNTERS(FAULT_XSTAT)
#undef FAULT_XSTAT
	for (q = 0; q < dev->data->nb_tx_queues; q++) {
		const struct fault_vdev_txq *t = dev->data->tx_queues[q];

		if (t != NULL) {
			tx_passed += t->tx_passed;
			tx_dropped += t->tx_dropped;
		}
	}
#define FAULT_TX_XSTAT(name, desc) \
	xstats[i] = (struct rte_eth_xstat){ .id = i, .value = name }; \
	i++;
	FAULT_TX_XSTATS(FAULT_TX_XSTAT)
#undef FAULT_TX_XSTAT
	return i;
}

static int
fault_vdev_xstats_get_names(struct rte_eth_dev *dev __rte_unused,
			    struct rte_eth_xstat_name *names, unsigned int size)
{
	static const char *const tx_names[] = {
#define FAULT_TX_NAME(name, desc) #name,
		FAULT_TX_XSTATS(FAULT_TX_NAME)
#undef FAULT_TX_NAME
	};
	unsigned int i;

	if (names == NULL || size < DROCE_FAULT_NB_COUNTERS + FAULT_NB_TX_XSTATS)
		return (int)(DROCE_FAULT_NB_COUNTERS + FAULT_NB_TX_XSTATS);
	for (i = 0; i < DROCE_FAULT_NB_COUNTERS; i++)
		snprintf(names[i].name, sizeof(names[i].name), FAULT_XSTAT_PREFIX "%s",
			 droce_fault_counter_names[i]);
	for (; i < DROCE_FAULT_NB_COUNTERS + FAULT_NB_TX_XSTATS; i++)
		snprintf(names[i].name, sizeof(names[i].name), FAULT_XSTAT_PREFIX "%s",
			 tx_names[i - DROCE_FAULT_NB_COUNTERS]);
	return i;
}

static int
fault_vdev_rx_queue_setup(struct rte_eth_dev *dev, uint16_t queue, uint16_t nb_desc,
			  unsigned int socket, const struct rte_eth_rxconf *conf,
			  struct rte_mempool *mp)
{
	struct fault_vdev *fv = dev->data->dev_private;
	int ret;

	ret = rte_eth_rx_queue_setup(fv->f->cfg.port_id, queue, nb_desc, socket, conf, mp);
	if (ret == 0)
		ret = fault_queue_setup(fv->f, queue, (int)socket);
	if (ret == 0)
		dev->data->rx_queues[queue] = fv->f->q[queue];
	return ret;
}

static void
fault_vdev_rx_queue_release(struct rte_eth_dev *dev, uint16_t queue)
{
	struct fault_vdev *fv = dev->data->dev_private;

	fault_queue_release(fv->f, queue);
}

static int
fault_vdev_tx_queue_setup(struct rte_eth_dev *dev, uint16_t queue, uint16_t nb_desc,
			  unsigned int socket, const struct rte_eth_txconf *conf)
{
	struct fault_vdev *fv = dev->data->dev_private;
	struct fault_vdev_txq *t;
	int ret;

	ret = rte_eth_tx_queue_setup(fault_vdev_port(dev), queue, nb_desc, socket, conf);
	if (ret != 0)
		return ret;
	t = rte_zmalloc_socket("net_fault_txq", sizeof(*t), 0, (int)socket);
	if (t == NULL)
		return -ENOMEM;
	t->port_id = fault_vdev_port(dev);
	t->queue_id = queue;
	t->tx_drop = fv->f->cfg.tx_drop;
	/* A stream of its own, apart from the rx queues' (fault_queue_setup). */
	t->rng = ~fv->f->cfg.seed ^ ((uint64_t)(queue + 1) * FAULT_RNG_GAMMA);
	dev->data->tx_queues[queue] = t;
	return 0;
}

static void
fault_vdev_tx_queue_release(struct rte_eth_dev *dev, uint16_t queue)
{
	rte_free(dev->data->tx_queues[queue]);
}

static const struct eth_dev_ops fault_vdev_ops = {
	.dev_configure = fault_vdev_configure,
	.dev_start = fault_vdev_start,
	.dev_stop = fault_vdev_stop,
	.dev_close = fault_vdev_close,
	.dev_infos_get = fault_vdev_infos_get,
	.link_update = fault_vdev_link_update,
	.promiscuous_enable = fault_vdev_promiscuous_enable,
	.promiscuous_disable = fault_vdev_promiscuous_disable,
	.allmulticast_enable = fault_vdev_allmulticast_enable,
	.allmulticast_disable = fault_vdev_allmulticast_disable,
	.mtu_set = fault_vdev_mtu_set,
	.stats_get = fault_vdev_stats_get,
	.stats_reset = fault_vdev_stats_reset,
	.xstats_get = fault_vdev_xstats_get,
	.xstats_get_names = fault_vdev_xstats_get_names,
	.rx_queue_setup = fault_vdev_rx_queue_setup,
	.rx_queue_release = fault_vdev_rx_queue_release,
	.tx_queue_setup = fault_vdev_tx_queue_setup,
	.tx_queue_release = fault_vdev_tx_queue_release,
};

/* Takes the wrapped port: its MAC address, and ownership, which fails if it is taken. */
static int
fault_vdev_take(struct rte_eth_dev *dev, const char *name)
{
	struct fault_vdev *fv = dev->data->dev_private;
	struct rte_eth_dev_owner owner = { 0 };
	uint16_t port = fv->f->cfg.port_id;
	int ret;

	dev->data->mac_addrs = rte_zmalloc(name, sizeof(dev->data->mac_addrs[0]), 0);
	if (dev->data->mac_addrs == NULL)
		return -ENOMEM;
	ret = rte_eth_macaddr_get(port, &dev->data->mac_addrs[0]);
	if (ret == 0)
		ret = rte_eth_dev_owner_new(&owner.id);
	if (ret != 0)
		return ret;
	snprintf(owner.name, sizeof(owner.name), "%s", name);
	ret = rte_eth_dev_owner_set(port, &owner);
	if (ret != 0) {
		FAULT_LOG(ERR, "%s: key 'port': port %u is owned already (wrapped by another "
			  "net_fault?)\n", name, port);
		return ret;
	}
	fv->owner_id = owner.id;
	return 0;
}

static int
fault_vdev_probe(struct rte_vdev_device *vdev)
{
	const char *name = rte_vdev_device_name(vdev);
	struct rte_eth_dev *dev;
	struct fault_vdev *fv;
	struct droce_fault *f;
	int ret;

	if (rte_eal_process_type() != RTE_PROC_PRIMARY) {
		FAULT_LOG(ERR, "%s: net_fault runs in the primary process only\n", name);
		return -ENOTSUP;
	}
	ret = fault_new(rte_vdev_device_args(vdev), &f);
	if (ret != 0)
		return ret;
	dev = rte_eth_vdev_allocate(vdev, sizeof(*fv));
	if (dev == NULL) {
		fault_free(f);
		return -ENOMEM;
	}
	fv = dev->data->dev_private;
	fv->f = f;
	ret = fault_vdev_take(dev, name);
	if (ret != 0) {
		fault_free(f);
		rte_eth_dev_release_port(dev);
		return ret;
	}
	dev->dev_ops = &fault_vdev_ops;
	dev->rx_pkt_burst = fault_vdev_rx;
	dev->tx_pkt_burst = fault_vdev_tx;
	dev->tx_pkt_prepare = fault_vdev_tx_prepare;
	rte_eth_dev_probing_finish(dev);
	FAULT_LOG(INFO, "%s: wrapping port %u, seed %" PRIu64 "\n", name, f->cfg.port_id,
		  f->cfg.seed);
	return 0;
}

/* rte_vdev_uninit() and rte_eal_cleanup(); after rte_eth_dev_close() the port is gone. */
static int
fault_vdev_remove(struct rte_vdev_device *vdev)
{
	struct rte_eth_dev *dev = rte_eth_dev_allocated(rte_vdev_device_name(vdev));

	if (dev == NULL)
		return 0;
	if (rte_eal_process_type() != RTE_PROC_PRIMARY)
		return rte_eth_dev_release_port(dev);
	if (dev->data->dev_started)
		rte_eth_dev_stop(dev->data->port_id);
	return rte_eth_dev_close(dev->data->port_id);
}

struct droce_fault *
droce_fault_from_port(uint16_t port_id)
{
	if (!rte_eth_dev_is_valid_port(port_id) ||
	    rte_eth_devices[port_id].dev_ops != &fault_vdev_ops) {
		rte_errno = ENODEV;
		return NULL;
	}
	return ((struct fault_vdev *)rte_eth_devices[port_id].data->dev_private)->f;
}

static struct rte_vdev_driver fault_vdev_driver = {
	.probe = fault_vdev_probe,
	.remove = fault_vdev_remove,
};

RTE_PMD_REGISTER_VDEV(net_fault, fault_vdev_driver);
RTE_PMD_REGISTER_PARAM_STRING(net_fault,
	"port=<ethdev name> seed=<u64> drop=<ppm> dup=<ppm> corrupt=<ppm> delay=<ppm> "
	"delay_us=<us> reorder=<ppm> tx_drop=<ppm> rate=<Mb/s> buffer=<bytes> "
	"ecn_min=<bytes> ecn_max=<bytes> ecn_pmax=<ppm>");
