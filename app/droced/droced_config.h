/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef DROCED_CONFIG_H
#define DROCED_CONFIG_H

/*
 * droced's configuration file (INI, read with DPDK's rte_cfgfile; no EAL needed): the
 * schema is doc/configuration.md. droced_config_load() checks everything that can be
 * checked without EAL; whether a port's device exists is droced's to find out when it
 * probes it.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <droce_cc.h>
#include <droce_net.h>
#include <droce_shm.h>
#include <droce_shm_qp_attr.h>

#define DROCED_CONFIG_MAX_PORTS		8
#define DROCED_CONFIG_NAME_MAX		32	/* port names, with the NUL */
#define DROCED_CONFIG_VALUE_MAX		256	/* rte_cfgfile's CFG_VALUE_LEN, with the NUL */
#define DROCED_CONFIG_SOCKET_MAX	108	/* sizeof(sockaddr_un.sun_path) */
/* lib/net's GID table: the IPv4-mapped and link-local GIDs, then these. */
#define DROCED_CONFIG_MAX_IPV6		DROCE_NET_MAX_IPV6
/* Static entries; the rest of lib/net's DROCE_NET_MAX_NEIGH is left to ARP. */
#define DROCED_CONFIG_MAX_NEIGH		64
#define DROCED_CONFIG_MAX_LCORES	DROCE_SHM_MAX_ENGINES

/* RoCE path MTUs (IB 9.6.2: 256, 512, 1024, 2048 or 4096 bytes of payload). */
#define DROCED_CONFIG_MTU_MIN		256
#define DROCED_CONFIG_MTU_MAX		4096
#define DROCED_CONFIG_MTU_DEFAULT	4096

#define DROCED_CONFIG_IDLE_SLEEP_MAX	1000000	/* 1 s */
#define DROCED_CONFIG_IDLE_SPIN_MAX	1000000	/* 1 s */
#define DROCED_CONFIG_WAIT_POLL		0
#define DROCED_CONFIG_WAIT_ADAPTIVE	1
#define DROCED_CONFIG_WAIT_INTERRUPT	2
#define DROCED_CONFIG_SOCKET_DEFAULT	"/run/droce/droced.sock"

/* Per-client limits: defaults, and the most the engine and the key formats allow. */
#define DROCED_LIMIT_QPS_DEFAULT	1024
#define DROCED_LIMIT_CQS_DEFAULT	1024
#define DROCED_LIMIT_SRQS_DEFAULT	64
#define DROCED_LIMIT_MRS_DEFAULT	1024
#define DROCED_LIMIT_MR_BYTES_DEFAULT	(1ull << 30)
#define DROCED_LIMIT_AHS_DEFAULT	1024
#define DROCED_LIMIT_CQE_DEFAULT	65536
#define DROCED_LIMIT_WR_DEFAULT		4096
#define DROCED_LIMIT_REGION_MB_DEFAULT	64

#define DROCED_LIMIT_QPS_MAX		(DROCE_SHM_QPN_MAX - 1)	/* QPNs 0 and 1 are special */
#define DROCED_LIMIT_CQS_MAX		65536
#define DROCED_LIMIT_SRQS_MAX		65536
#define DROCED_LIMIT_MRS_MAX		((1u << 24) - 1)	/* key = index << 8 | variant */
#define DROCED_LIMIT_MR_BYTES_MAX	(1ull << 40)
#define DROCED_LIMIT_AHS_MAX		65536
#define DROCED_LIMIT_CQE_MAX		DROCE_SHM_MAX_CQE
#define DROCED_LIMIT_WR_MAX		DROCE_SHM_MAX_WR
#define DROCED_LIMIT_REGION_MB_MAX	4096	/* a client's ring memory: 4 GiB */

struct droced_ipv4_prefix {
	uint8_t addr[4];	/* network order */
	uint8_t len;
};

struct droced_ipv6_prefix {
	uint8_t addr[16];
	uint8_t len;
};

struct droced_neighbour {
	int family;		/* AF_INET or AF_INET6 */
	uint8_t ip[16];		/* AF_INET: the first 4 bytes */
	uint8_t mac[6];
};

struct droced_port_config {
	char name[DROCED_CONFIG_NAME_MAX];	/* from [port NAME] */
	char device[DROCED_CONFIG_VALUE_MAX];	/* PCI address or vdev string */
	struct droced_ipv4_prefix ipv4;
	struct droced_ipv6_prefix ipv6[DROCED_CONFIG_MAX_IPV6];
	uint32_t nb_ipv6;
	uint32_t mtu;				/* RoCE path MTU, 256..4096 */
	struct droced_neighbour neigh[DROCED_CONFIG_MAX_NEIGH];
	uint32_t nb_neigh;
	bool rx_no_icrc;
	bool rss;		/* spread received packets over the queues by RSS (doc/nics.md) */
	bool promiscuous;	/* the NIC takes every frame (else its MAC and filtered multicast) */
	/* [congestion], then [congestion NAME]: traffic classes and DCQCN (doc/congestion.md). */
	struct droce_cc_params cc;
};

struct droced_limits {
	uint32_t max_qps;
	uint32_t max_cqs;
	uint32_t max_srqs;
	uint32_t max_mrs;
	uint64_t max_mr_bytes;
	uint32_t max_ahs;
	uint32_t max_cqe;
	uint32_t max_wr;
	uint32_t region_mb;	/* MiB of the client's shared region (rings, doorbells) */
};

/* [metrics]: Prometheus' endpoint (droced_metrics.c, doc/operations.md). */
#define DROCED_METRICS_QPS_DEFAULT	256	/* QPs exported, series per QP and counter */
#define DROCED_METRICS_QPS_MAX		100000
struct droced_metrics_config {
	bool enabled;		/* listen was given */
	uint8_t addr[4];	/* network order */
	uint16_t port;
	uint32_t max_qps;	/* more QPs than this: no per-QP series */
};

struct droced_config {
	/* [eal] args split on spaces: nb_eal_args words, each ended by a NUL, one after another. */
	char eal_args[DROCED_CONFIG_VALUE_MAX];
	uint32_t nb_eal_args;
	struct droced_port_config ports[DROCED_CONFIG_MAX_PORTS];	/* in file order */
	uint32_t nb_ports;
	uint32_t lcores[DROCED_CONFIG_MAX_LCORES];	/* engine i runs on lcores[i] */
	uint32_t nb_lcores;
	/*
	 * [engines] mode: how idle engines wait, enum droce_engine_wait's values (poll 0,
	 * adaptive 1, interrupt 2). Absent: adaptive when idle_sleep_us is set, else poll.
	 */
	uint32_t wait;
	uint32_t idle_spin_us;	/* adaptive's spin before a sleep; 0: the engine's default */
	uint32_t idle_sleep_us;	/* longest sleep where the port cannot wake an engine */
	bool early_retransmit;	/* [engines] early_retransmit, default true */
	char socket[DROCED_CONFIG_SOCKET_MAX];
	int64_t allowed_uid;	/* -1: any */
	int64_t allowed_gid;	/* -1: any */
	struct droced_limits limits;
	struct droced_metrics_config metrics;
};

/*
 * Reads and checks the file at path into *cfg. 0 on success; -1 on any error, with err
 * set to "PATH:LINE: message" naming the offending line (a missing key names its
 * section's line), or "PATH: message" when no line is to blame (the file cannot be read,
 * a required section is missing).
 */
int droced_config_load(const char *path, struct droced_config *cfg, char *err, size_t errlen);

/*
 * The built-in configuration droced runs without --config: the values config/default.ini
 * spells out (one net_ring0 port that receives what it sends), set from code so that the
 * daemon needs no file to start.
 */
void droced_config_builtin(struct droced_config *cfg);

#endif /* DROCED_CONFIG_H */
