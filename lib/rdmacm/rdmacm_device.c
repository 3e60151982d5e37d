/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Devices: an id on droced port N uses the verbs device "droce<N>" of droce's
 * libibverbs.so.1. Each is opened once per process, when an id first needs it or
 * rdma_get_devices lists it, and kept (as rdma-core keeps its cma_devices), with the
 * default PD that rdma_create_qp(id, NULL, ...) uses and the limits that stand for
 * RDMA_MAX_RESP_RES and RDMA_MAX_INIT_DEPTH.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmacm_loc.h"

static pthread_mutex_t rcm_dev_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rcm_device rcm_devs[DROCE_PROTO_MAX_PORTS];

static int
dev_open_locked(uint32_t port, struct ibv_device *dev)
{
	struct rcm_device *d = &rcm_devs[port];
	struct ibv_device_attr attr;
	struct ibv_context *ctx;
	int ret;

	ctx = ibv_open_device(dev);
	if (ctx == NULL)
		return errno != 0 ? errno : ENODEV;
	ret = ibv_query_device(ctx, &attr);
	if (ret == 0) {
		d->pd = ibv_alloc_pd(ctx);
		if (d->pd == NULL)
			ret = errno != 0 ? errno : ENOMEM;
	}
	if (ret != 0) {
		ibv_close_device(ctx);
		return ret;
	}
	d->max_resp_res = attr.max_qp_rd_atom > UINT8_MAX ? UINT8_MAX : attr.max_qp_rd_atom;
	d->max_init_depth = attr.max_qp_init_rd_atom > UINT8_MAX ? UINT8_MAX :
			    attr.max_qp_init_rd_atom;
	d->verbs = ctx;
	return 0;
}

static bool
dev_port(struct ibv_device *dev, uint32_t *port)
{
	unsigned int n;
	char tail;

	if (sscanf(ibv_get_device_name(dev), RCM_DEV_PREFIX "%u%c", &n, &tail) != 1 ||
	    n >= DROCE_PROTO_MAX_PORTS)
		return false;
	*port = n;
	return true;
}

/* The open context of droced port port: NULL with *err when it cannot be opened. */
struct rcm_device *
rcm_device_get(uint32_t port, int *err)
{
	struct ibv_device **list;
	struct rcm_device *d = NULL;
	uint32_t p;
	int i, n = 0;

	if (port >= DROCE_PROTO_MAX_PORTS) {
		*err = ENODEV;
		return NULL;
	}
	pthread_mutex_lock(&rcm_dev_lock);
	if (rcm_devs[port].verbs != NULL) {
		d = &rcm_devs[port];
		goto out;
	}
	*err = ENODEV;
	list = ibv_get_device_list(&n);
	if (list == NULL) {
		*err = errno;
		goto out;
	}
	for (i = 0; i < n; i++)
		if (dev_port(list[i], &p) && p == port) {
			*err = dev_open_locked(port, list[i]);
			if (*err == 0)
				d = &rcm_devs[port];
			break;
		}
	ibv_free_device_list(list);
out:
	pthread_mutex_unlock(&rcm_dev_lock);
	return d;
}

RCM_EXPORT struct ibv_context **
rdma_get_devices(int *num_devices)
{
	struct ibv_context **devs = NULL;
	struct ibv_device **list;
	uint32_t p;
	int i, n = 0, cnt = 0;

	list = ibv_get_device_list(&n);
	if (list == NULL)
		goto out;
	pthread_mutex_lock(&rcm_dev_lock);
	for (i = 0; i < n; i++)
		if (dev_port(list[i], &p) && rcm_devs[p].verbs == NULL)
			dev_open_locked(p, list[i]);
	for (p = 0; p < DROCE_PROTO_MAX_PORTS; p++)
		cnt += rcm_devs[p].verbs != NULL;
	/* As rdma-core: no device at all is an error (ENODEV), not an empty list. */
	if (cnt == 0) {
		errno = ENODEV;
	} else {
		devs = calloc(cnt + 1, sizeof(*devs));
		if (devs != NULL) {
			cnt = 0;
			for (p = 0; p < DROCE_PROTO_MAX_PORTS; p++)
				if (rcm_devs[p].verbs != NULL)
					devs[cnt++] = rcm_devs[p].verbs;
		} else {
			errno = ENOMEM;
		}
	}
	pthread_mutex_unlock(&rcm_dev_lock);
	ibv_free_device_list(list);
out:
	if (num_devices != NULL)
		*num_devices = devs != NULL ? cnt : 0;
	return devs;
}

/* Only the array: the contexts stay open for the ids of the process. */
RCM_EXPORT void
rdma_free_devices(struct ibv_context **list)
{
	free(list);
}
