/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The library form: droce_fault_attach() puts the fault engine on an existing port's
 * receive path through the public rx-callback API, one callback per rx queue.
 */

#include <errno.h>

#include <rte_errno.h>
#include <rte_malloc.h>

#include "fault_loc.h"

/* rx callback, run by the lcore polling (port, queue) inside rte_eth_rx_burst(). */
static uint16_t
fault_rx_cb(uint16_t port_id __rte_unused, uint16_t queue __rte_unused,
	    struct rte_mbuf *pkts[], uint16_t nb_pkts, uint16_t max_pkts, void *user)
{
	return fault_rx_burst(user, pkts, nb_pkts, max_pkts);
}

void
droce_fault_detach(struct droce_fault *f)
{
	uint16_t i;

	if (f == NULL)
		return;
	for (i = 0; i < f->nb_queues; i++) {
		/* Removed, then freed: the caller guarantees no rx burst is running. */
		if (f->cb[i] != NULL &&
		    rte_eth_remove_rx_callback(f->cfg.port_id, i, f->cb[i]) == 0)
			rte_free((void *)(uintptr_t)f->cb[i]);
	}
	fault_free(f);
}

struct droce_fault *
droce_fault_attach(const char *args)
{
	struct rte_eth_dev_info info;
	struct droce_fault *f;
	uint16_t i;
	int ret;

	ret = fault_new(args, &f);
	/* An rx callback cannot fault what the port sends; the vdev's own tx burst can. */
	if (ret == 0 && f->cfg.tx_drop != 0) {
		FAULT_LOG(ERR, "key 'tx_drop': only the net_fault vdev faults transmission\n");
		fault_free(f);
		ret = -EINVAL;
	}
	if (ret == 0) {
		ret = rte_eth_dev_info_get(f->cfg.port_id, &info);
		if (ret != 0)
			fault_free(f);
	}
	if (ret != 0) {
		rte_errno = -ret;
		return NULL;
	}
	f->nb_queues = info.nb_rx_queues;
	for (i = 0; i < f->nb_queues; i++) {
		ret = fault_queue_setup(f, i, rte_eth_dev_socket_id(f->cfg.port_id));
		if (ret == 0) {
			f->cb[i] = rte_eth_add_rx_callback(f->cfg.port_id, i, fault_rx_cb,
							   f->q[i]);
			ret = f->cb[i] == NULL ? -rte_errno : 0;
		}
		if (ret != 0) {
			droce_fault_detach(f);
			rte_errno = -ret;
			return NULL;
		}
	}
	return f;
}
