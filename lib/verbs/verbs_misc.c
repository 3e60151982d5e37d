/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * The rest of the exported API: static rate conversions, fork handling, the kernel-ABI
 * copy helpers, sysfs helpers and the old driver hooks. None touches droced.
 */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/sa.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>

#include "verbs_loc.h"
#include "verbs_pages.h"

#define SYSFS_PATH_ENV		"SYSFS_PATH"
#define SYSFS_PATH_DEFAULT	"/sys"

/* enum ibv_rate -> (multiple of 2.5 Gb/s, Mb/s): the IB spec's static rate table. */
static const struct {
	enum ibv_rate rate;
	int mult;
	int mbps;
} rates[] = {
	{ IBV_RATE_2_5_GBPS, 1, 2500 },
	{ IBV_RATE_5_GBPS, 2, 5000 },
	{ IBV_RATE_10_GBPS, 4, 10000 },
	{ IBV_RATE_20_GBPS, 8, 20000 },
	{ IBV_RATE_30_GBPS, 12, 30000 },
	{ IBV_RATE_40_GBPS, 16, 40000 },
	{ IBV_RATE_60_GBPS, 24, 60000 },
	{ IBV_RATE_80_GBPS, 32, 80000 },
	{ IBV_RATE_120_GBPS, 48, 120000 },
	{ IBV_RATE_14_GBPS, -1, 14062 },
	{ IBV_RATE_56_GBPS, -1, 56250 },
	{ IBV_RATE_112_GBPS, -1, 112500 },
	{ IBV_RATE_168_GBPS, -1, 168750 },
	{ IBV_RATE_25_GBPS, -1, 25781 },
	{ IBV_RATE_100_GBPS, -1, 103125 },
	{ IBV_RATE_200_GBPS, -1, 206250 },
	{ IBV_RATE_300_GBPS, -1, 309375 },
	{ IBV_RATE_28_GBPS, -1, 28125 },
	{ IBV_RATE_50_GBPS, -1, 53125 },
	{ IBV_RATE_400_GBPS, -1, 425000 },
	{ IBV_RATE_600_GBPS, -1, 637500 },
	{ IBV_RATE_800_GBPS, -1, 850000 },
	{ IBV_RATE_1200_GBPS, -1, 1275000 },
};

#define NB_RATES	(sizeof(rates) / sizeof(rates[0]))

VERBS_EXPORT int
ibv_rate_to_mult(enum ibv_rate rate)
{
	size_t i;

	for (i = 0; i < NB_RATES; i++)
		if (rates[i].rate == rate)
			return rates[i].mult;
	return -1;
}

VERBS_EXPORT enum ibv_rate
mult_to_ibv_rate(int mult)
{
	size_t i;

	for (i = 0; i < NB_RATES; i++)
		if (rates[i].mult == mult && mult > 0)
			return rates[i].rate;
	return IBV_RATE_MAX;
}

VERBS_EXPORT int
ibv_rate_to_mbps(enum ibv_rate rate)
{
	size_t i;

	for (i = 0; i < NB_RATES; i++)
		if (rates[i].rate == rate)
			return rates[i].mbps;
	return -1;
}

VERBS_EXPORT enum ibv_rate
mbps_to_ibv_rate(int mbps)
{
	size_t i;

	for (i = 0; i < NB_RATES; i++)
		if (rates[i].mbps == mbps)
			return rates[i].rate;
	return IBV_RATE_MAX;
}

/*
 * fork() (verbs_pages_fork.c): by default a child gets a private copy of the registered
 * pages that moved, made at the fork, as Linux 5.13+ copies pinned pages, so rdma-core
 * would answer "unneeded"; after ibv_fork_init (or with RDMAV_FORK_SAFE / IBV_FORK_SAFE)
 * the child has nothing there instead, as with rdma-core's MADV_DONTFORK, and fork copies
 * nothing: "enabled".
 */
VERBS_EXPORT int
ibv_fork_init(void)
{
	verbs_pages_set_fork_safe();
	return 0;
}

VERBS_EXPORT enum ibv_fork_status
ibv_is_fork_initialized(void)
{
	return verbs_pages_fork_safe() ? IBV_FORK_ENABLED : IBV_FORK_UNNEEDED;
}

int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

VERBS_EXPORT int
ibv_dontfork_range(void *base, size_t size)
{
	(void)base; (void)size;
	return 0;
}

VERBS_EXPORT int
ibv_dofork_range(void *base, size_t size)
{
	(void)base; (void)size;
	return 0;
}

/* ---- Kernel ABI copies (IBVERBS_1.0), field by field ---- */

void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src);
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src);
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src);

VERBS_EXPORT void
ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src)
{
	memcpy(dst->grh.dgid.raw, src->grh.dgid, sizeof(dst->grh.dgid));
	dst->grh.flow_label = src->grh.flow_label;
	dst->grh.sgid_index = src->grh.sgid_index;
	dst->grh.hop_limit = src->grh.hop_limit;
	dst->grh.traffic_class = src->grh.traffic_class;
	dst->dlid = src->dlid;
	dst->sl = src->sl;
	dst->src_path_bits = src->src_path_bits;
	dst->static_rate = src->static_rate;
	dst->is_global = src->is_global;
	dst->port_num = src->port_num;
}

VERBS_EXPORT void
ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src)
{
	dst->cur_qp_state = src->cur_qp_state;
	dst->path_mtu = src->path_mtu;
	dst->path_mig_state = src->path_mig_state;
	dst->qkey = src->qkey;
	dst->rq_psn = src->rq_psn;
	dst->sq_psn = src->sq_psn;
	dst->dest_qp_num = src->dest_qp_num;
	dst->qp_access_flags = src->qp_access_flags;
	dst->cap.max_send_wr = src->max_send_wr;
	dst->cap.max_recv_wr = src->max_recv_wr;
	dst->cap.max_send_sge = src->max_send_sge;
	dst->cap.max_recv_sge = src->max_recv_sge;
	dst->cap.max_inline_data = src->max_inline_data;
	ibv_copy_ah_attr_from_kern(&dst->ah_attr, &src->ah_attr);
	ibv_copy_ah_attr_from_kern(&dst->alt_ah_attr, &src->alt_ah_attr);
	dst->pkey_index = src->pkey_index;
	dst->alt_pkey_index = src->alt_pkey_index;
	dst->en_sqd_async_notify = src->en_sqd_async_notify;
	dst->sq_draining = src->sq_draining;
	dst->max_rd_atomic = src->max_rd_atomic;
	dst->max_dest_rd_atomic = src->max_dest_rd_atomic;
	dst->min_rnr_timer = src->min_rnr_timer;
	dst->port_num = src->port_num;
	dst->timeout = src->timeout;
	dst->retry_cnt = src->retry_cnt;
	dst->rnr_retry = src->rnr_retry;
	dst->alt_port_num = src->alt_port_num;
	dst->alt_timeout = src->alt_timeout;
}

VERBS_EXPORT void
ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src)
{
	memcpy(dst->dgid.raw, src->dgid, sizeof(dst->dgid));
	memcpy(dst->sgid.raw, src->sgid, sizeof(dst->sgid));
	dst->dlid = src->dlid;
	dst->slid = src->slid;
	dst->raw_traffic = src->raw_traffic;
	dst->flow_label = src->flow_label;
	dst->hop_limit = src->hop_limit;
	dst->traffic_class = src->traffic_class;
	dst->reversible = src->reversible;
	dst->numb_path = src->numb_path;
	dst->pkey = src->pkey;
	dst->sl = src->sl;
	dst->mtu_selector = src->mtu_selector;
	dst->mtu = src->mtu;
	dst->rate_selector = src->rate_selector;
	dst->rate = src->rate;
	dst->packet_life_time = src->packet_life_time;
	dst->preference = src->preference;
	dst->packet_life_time_selector = src->packet_life_time_selector;
}

VERBS_EXPORT void
ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src)
{
	memcpy(dst->dgid, src->dgid.raw, sizeof(dst->dgid));
	memcpy(dst->sgid, src->sgid.raw, sizeof(dst->sgid));
	dst->dlid = src->dlid;
	dst->slid = src->slid;
	dst->raw_traffic = src->raw_traffic;
	dst->flow_label = src->flow_label;
	dst->hop_limit = src->hop_limit;
	dst->traffic_class = src->traffic_class;
	dst->reversible = src->reversible;
	dst->numb_path = src->numb_path;
	dst->pkey = src->pkey;
	dst->sl = src->sl;
	dst->mtu_selector = src->mtu_selector;
	dst->mtu = src->mtu;
	dst->rate_selector = src->rate_selector;
	dst->rate = src->rate;
	dst->packet_life_time = src->packet_life_time;
	dst->preference = src->preference;
	dst->packet_life_time_selector = src->packet_life_time_selector;
}

/* ---- sysfs helpers (IBVERBS_1.0) and the old driver hook ---- */

const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
void ibv_register_driver(const char *name, void *init_func);

VERBS_EXPORT const char *
ibv_get_sysfs_path(void)
{
	const char *p = getenv(SYSFS_PATH_ENV);

	return p != NULL && p[0] != '\0' ? p : SYSFS_PATH_DEFAULT;
}

/* Bytes read with a trailing newline dropped, or -1 with errno. */
VERBS_EXPORT int
ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	if (dir == NULL || file == NULL || buf == NULL || size == 0) {
		errno = EINVAL;
		return -1;
	}
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) >= sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, size);
	close(fd);
	if (n < 0)
		return -1;
	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	else if ((size_t)n < size)
		buf[n] = '\0';
	return (int)n;
}

/* Kernel drivers are not used: droce is the only provider. */
VERBS_EXPORT void
ibv_register_driver(const char *name, void *init_func)
{
	(void)name; (void)init_func;
}

/* Neighbour resolution is droced's (ARP): not available to the application. */
VERBS_EXPORT int
ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
			    uint8_t eth_mac[6], uint16_t *vid)
{
	(void)context; (void)attr; (void)eth_mac; (void)vid;
	return verbs_err(EOPNOTSUPP);
}
