/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Domains, the control side (control thread): one client's shared-memory region, with its
 * doorbell blocks, its key and AH tables and its asynchronous event ring. A domain joins an
 * engine when its first QP there is created (engine_obj_qp.c); destroying it destroys its
 * QPs first, then takes it off each engine by command.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_errno.h>
#include <rte_malloc.h>

#include "engine_loc.h"

struct droce_engine_domain *
droce_engine_domain_create(struct droce_engine_dev *dev, const struct droce_engine_domain_conf *conf)
{
	const struct droce_shm_region_hdr *hdr = conf->region;
	char name[RTE_RING_NAMESIZE];
	struct droce_engine_domain *dom;
	uint32_t i;

	if (droce_shm_region_check(conf->region, conf->region_size) != 0 ||
	    conf->max_mrs == 0 || conf->max_ahs == 0 || !is_pow2(conf->max_events)) {
		rte_errno = EINVAL;
		return NULL;
	}
	dom = rte_zmalloc("droce_domain", sizeof(*dom), RTE_CACHE_LINE_SIZE);
	if (dom == NULL)
		goto nomem;
	dom->dev = dev;
	dom->region = conf->region;
	dom->region_size = conf->region_size;
	dom->max_mrs = conf->max_mrs;
	dom->max_ahs = conf->max_ahs;
	dom->mrs = rte_zmalloc("droce_mrs", sizeof(dom->mrs[0]) * conf->max_mrs, 0);
	dom->ahs = rte_zmalloc("droce_ahs", sizeof(dom->ahs[0]) * conf->max_ahs, 0);
	snprintf(name, sizeof(name), "droce_ev_%p", (void *)dom);
	dom->events = rte_ring_create_elem(name, sizeof(struct droce_engine_event), conf->max_events,
					   SOCKET_ID_ANY, RING_F_SC_DEQ);
	if (dom->mrs == NULL || dom->ahs == NULL || dom->events == NULL) {
		rte_ring_free(dom->events);
		rte_free(dom->ahs);
		rte_free(dom->mrs);
		rte_free(dom);
		goto nomem;
	}
	for (i = 0; i < hdr->nb_engines && i < DROCE_ENGINE_MAX; i++)
		dom->db[i] = (struct droce_shm_doorbell *)(dom->region + hdr->doorbell_off[i]);
	for (i = 0; i < DROCE_ENGINE_MAX; i++)
		dom->wake_fd[i] = -1;
	dom->mr_next = 1;
	LIST_INSERT_HEAD(&dev->doms, dom, next);
	dev->objs.domains++;
	return dom;
nomem:
	rte_errno = ENOMEM;
	return NULL;
}

void
droce_engine_domain_destroy(struct droce_engine_domain *dom)
{
	struct droce_engine_dev *dev = dom->dev;
	struct engine_cmd cmd;
	uint32_t q, i;

	/* QPs first: they hold the CQs and SRQs, which the caller owns and frees. */
	for (q = 0; q < dev->max_qps; q++) {
		struct droce_engine_qp *qp = dev->qps[q];

		if (qp != NULL && qp->dom == dom)
			droce_engine_qp_destroy(qp);
	}
	for (i = 0; i < DROCE_ENGINE_MAX; i++) {
		if (dom->db_qp[i] == NULL)
			continue;
		memset(&cmd, 0, sizeof(cmd));
		cmd.type = ENGINE_CMD_DOMAIN_DEL;
		cmd.dom = dom;
		if (dev->engines[i] != NULL) {
			engine_cmd_run(dev->engines[i], &cmd);
			if (dom->wake_fd[i] >= 0)
				engine_wait_fd_del(dev->engines[i], dom->wake_fd[i]);
		}
		rte_free(dom->db_qp[i]);
		if (dom->wake_fd[i] >= 0)
			close(dom->wake_fd[i]);
	}
	LIST_REMOVE(dom, next);
	engine_quiesce(dev);
	/* Its MRs and AHs go with it. */
	dev->objs.mrs -= dom->nb_mrs;
	dev->objs.mws -= dom->nb_mws;
	dev->objs.ahs -= dom->nb_ahs;
	dev->objs.domains--;
	rte_ring_free(dom->events);
	rte_free(dom->ahs);
	rte_free(dom->mrs);
	rte_free(dom);
}

int
droce_engine_domain_wake_fd(const struct droce_engine_domain *dom, uint32_t engine_id)
{
	return engine_id < DROCE_ENGINE_MAX ? dom->wake_fd[engine_id] : -1;
}

int
droce_engine_domain_event_get(struct droce_engine_domain *dom, struct droce_engine_event *ev)
{
	return rte_ring_sc_dequeue_elem(dom->events, ev, sizeof(*ev)) == 0 ? 1 : 0;
}
