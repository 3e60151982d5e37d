/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Addresses, the control side (control thread): the device's static neighbour table, the
 * path an AV resolves to from an engine (its MAC and GID, the neighbour's MAC, the DSCP and
 * ECN engine_cc.c gives it), and address handles, a UD send's template in the domain's AH
 * table. A connected QP's path comes from here too (droce_engine_qp_modify, engine_obj_qp.c).
 */
#include <errno.h>
#include <string.h>

#include "engine_loc.h"

int
droce_engine_dev_neigh_add(struct droce_engine_dev *dev, const uint8_t gid[16], const uint8_t mac[6])
{
	uint32_t i;

	for (i = 0; i < dev->nb_neigh; i++) {
		if (memcmp(dev->neigh[i].gid, gid, 16) == 0)
			break;
	}
	if (i == RTE_DIM(dev->neigh))
		return -ENOSPC;
	memcpy(dev->neigh[i].gid, gid, 16);
	memcpy(dev->neigh[i].mac, mac, 6);
	if (i == dev->nb_neigh)
		dev->nb_neigh++;
	return 0;
}

int
dev_neigh_lookup(const struct droce_engine_dev *dev, const uint8_t gid[16], uint8_t mac[6])
{
	uint32_t i;

	/* A multicast group has no neighbour: its MAC follows from the address. */
	if (mcast_mac(gid, mac) == 0)
		return 0;
	for (i = 0; i < dev->nb_neigh; i++) {
		if (memcmp(dev->neigh[i].gid, gid, 16) == 0) {
			memcpy(mac, dev->neigh[i].mac, 6);
			return 0;
		}
	}
	return -EHOSTUNREACH;
}

/*
 * Builds the addresses of a path from engine e to the AV's destination: a connected QP's
 * (qp: DCQCN may make it ECN-capable) or a UD AH's.
 */
int
path_resolve(struct droce_engine *e, const struct droce_shm_ah_attr *ah, bool qp,
	     struct droce_wire_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (!ah->is_global || ah->sgid_index >= e->nb_gids)
		return -EINVAL;
	memcpy(a->src_mac, e->mac, 6);
	memcpy(a->src_gid, e->gids[ah->sgid_index], 16);
	memcpy(a->dst_gid, ah->dgid, 16);
	a->traffic_class = ah->traffic_class;
	a->hop_limit = ah->hop_limit;
	a->flow_label = ah->flow_label & 0xFFFFF;
	cc_path_qos(e, ah->sl, qp, a);
	return dev_neigh_lookup(e->dev, ah->dgid, a->dst_mac);
}

int
droce_engine_ah_create(struct droce_engine_domain *dom, uint32_t engine_id, uint32_t pd,
		const struct droce_shm_ah_attr *attr, uint32_t *ahn)
{
	struct droce_engine *e = engine_id < DROCE_ENGINE_MAX ? dom->dev->engines[engine_id] : NULL;
	struct droce_wire_addr a;
	uint32_t i;
	int rc;

	if (e == NULL)
		return -EINVAL;
	rc = path_resolve(e, attr, false, &a);
	if (rc != 0)
		return rc;
	for (i = 0; i < dom->max_ahs; i++) {
		struct engine_ah *ah = &dom->ahs[i];

		if (atomic_load_explicit(&ah->valid, memory_order_relaxed))
			continue;
		if (droce_wire_tmpl_init(&ah->tmpl, &a) != 0)
			return -EINVAL;
		ah->pd = pd;
		atomic_store_explicit(&ah->valid, 1, memory_order_release);
		*ahn = i;
		dom->nb_ahs++;
		dom->dev->objs.ahs++;
		return 0;
	}
	return -ENOMEM;
}

int
droce_engine_ah_destroy(struct droce_engine_domain *dom, uint32_t ahn)
{
	if (ahn >= dom->max_ahs ||
	    !atomic_load_explicit(&dom->ahs[ahn].valid, memory_order_relaxed))
		return -EINVAL;
	atomic_store_explicit(&dom->ahs[ahn].valid, 0, memory_order_release);
	dom->nb_ahs--;
	dom->dev->objs.ahs--;
	engine_quiesce(dom->dev);
	return 0;
}
