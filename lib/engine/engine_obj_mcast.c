/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UD multicast, the control side (control thread): attach and detach change the device's
 * group table by copy and publish, then quiesce before freeing the old copy, so that
 * engines read it without a lock (engine_mcast.c); a destroyed QP leaves its groups.
 */
#include <errno.h>
#include <string.h>

#include <rte_malloc.h>

#include "engine_loc.h"

/* Control thread: a copy of the current table to change and publish with mcast_publish. */
static struct engine_mcast_table *
mcast_copy(const struct droce_engine_dev *dev)
{
	const struct engine_mcast_table *t = mcast_table(dev);
	struct engine_mcast_table *n = rte_zmalloc("droce_mcast", sizeof(*n), 0);

	if (n != NULL && t != NULL)
		memcpy(n, t, sizeof(*n));
	return n;
}

/* Publishes n; the old table is freed once no engine can still be reading it. */
static void
mcast_publish(struct droce_engine_dev *dev, struct engine_mcast_table *n)
{
	struct engine_mcast_table *old = atomic_exchange_explicit(&dev->mcast, n,
								  memory_order_acq_rel);

	engine_quiesce(dev);
	rte_free(old);
}

int
droce_engine_mcast_attach(struct droce_engine_qp *qp, const uint8_t gid[16])
{
	struct droce_engine_dev *dev = qp->dom->dev;
	struct engine_mcast_group *g;
	struct engine_mcast_table *n;
	uint32_t i;

	if (qp->type != DROCE_SHM_QPT_UD || !droce_gid_is_multicast(gid))
		return -EINVAL;
	n = mcast_copy(dev);
	if (n == NULL)
		return -ENOMEM;
	g = mcast_find(n, gid);
	if (g == NULL) {
		if (n->nb == DROCE_ENGINE_MAX_MCAST_GRPS) {
			rte_free(n);
			return -ENOMEM;
		}
		g = &n->grp[n->nb++];
		memcpy(g->mgid, gid, 16);
		g->nb = 0;
	}
	for (i = 0; i < g->nb; i++) {
		if (g->qpn[i] == qp->qpn) {
			rte_free(n);
			return -EEXIST;
		}
	}
	if (g->nb == DROCE_ENGINE_MAX_MCAST_QPS) {
		rte_free(n);
		return -ENOMEM;
	}
	g->qpn[g->nb++] = qp->qpn;
	mcast_publish(dev, n);
	return 0;
}

/* Removes qpn from group g of table n, and the group once it is empty. */
static void
mcast_remove(struct engine_mcast_table *n, struct engine_mcast_group *g, uint32_t i)
{
	g->qpn[i] = g->qpn[--g->nb];
	if (g->nb == 0)
		*g = n->grp[--n->nb];
}

int
droce_engine_mcast_detach(struct droce_engine_qp *qp, const uint8_t gid[16])
{
	struct droce_engine_dev *dev = qp->dom->dev;
	struct engine_mcast_group *g;
	struct engine_mcast_table *n;
	uint32_t i;

	g = mcast_find(mcast_table(dev), gid);
	if (g == NULL)
		return -EINVAL;
	for (i = 0; i < g->nb && g->qpn[i] != qp->qpn; i++)
		;
	if (i == g->nb)
		return -EINVAL;
	n = mcast_copy(dev);
	if (n == NULL)
		return -ENOMEM;
	g = mcast_find(n, gid);
	mcast_remove(n, g, i);
	mcast_publish(dev, n);
	return 0;
}

uint32_t
droce_engine_mcast_members(const struct droce_engine_dev *dev, const uint8_t gid[16])
{
	const struct engine_mcast_group *g = mcast_find(mcast_table(dev), gid);

	return g != NULL ? g->nb : 0;
}

int
droce_engine_mcast_group_get(const struct droce_engine_dev *dev, uint32_t i, uint8_t gid[16],
			     uint32_t *members)
{
	const struct engine_mcast_table *t = mcast_table(dev);

	if (t == NULL || i >= t->nb)
		return -ENOENT;
	memcpy(gid, t->grp[i].mgid, 16);
	*members = t->grp[i].nb;
	return 0;
}

/* Control thread: a QP being destroyed leaves every group it is attached to. */
void
mcast_qp_gone(struct droce_engine_dev *dev, uint32_t qpn)
{
	const struct engine_mcast_table *t = mcast_table(dev);
	struct engine_mcast_table *n;
	bool found = false;
	uint32_t k, i;

	for (k = 0; t != NULL && k < t->nb && !found; k++)
		for (i = 0; i < t->grp[k].nb && !found; i++)
			found = t->grp[k].qpn[i] == qpn;
	if (!found)
		return;
	n = mcast_copy(dev);
	if (n == NULL)
		return;		/* the QPN stays listed: its packets find no QP, or a new one */
	for (k = 0; k < n->nb; k++) {
		for (i = 0; i < n->grp[k].nb; i++) {
			if (n->grp[k].qpn[i] == qpn) {
				mcast_remove(n, &n->grp[k], i);
				k--;	/* the slot now holds another group, or the same one */
				break;
			}
		}
	}
	mcast_publish(dev, n);
}
