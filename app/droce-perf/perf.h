/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef PERF_H
#define PERF_H

/*
 * droce-perf: a testpmd-style RoCEv2 traffic generator that embeds droce engines (no
 * droced). Two hosts, a and b, each a device with one engine on one port, live in this
 * process: over an internal net_ring pair when the EAL line gives no port, or on ports 0
 * and 1 of whatever the EAL line gives (net_memif server and client, net_af_packet on a
 * veth pair, a NIC pair). The main lcore runs both hosts' applications and polls both
 * engines (droce_engine_poll()), as an application linking the engine in-process does.
 * With --server or --client and one port on the EAL line, this process is one host and
 * its peer another process (droce-perf or an unmodified perftest) met over perftest's
 * out-of-band TCP exchange: the client is host a, which sends, the server host b.
 *
 * Files by role: perf_main.c (EAL, ports, hosts, the run), perf_opts.c (options, --help),
 * perf_traffic.c (send, write, lat), perf_raw.c (raw-tx, raw-rx, raw-io),
 * perf_report.c (perftest's tables, --json lines, port statistics), perf_peer.c (the peer
 * in another process: its out-of-band exchange in perftest's order, ARP), perf_oob.c
 * (perftest's out-of-band messages).
 */

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include <rte_mempool.h>
#include <rte_ring.h>

#include <droce_engine.h>
#include <droce_engine_region.h>
#include <droce_net.h>
#include <droce_shm.h>
#include <droce_shm_arena.h>
#include <droce_shm_client.h>

#define PERF_MIN_SIZE		1u
#define PERF_MAX_SIZE		(1u << 20)
#define PERF_MAX_QPS		10000u
/*
 * An engine has DROCE_SHM_DB_SLOTS (4096) doorbell slots per domain: a host has as many
 * engines as its QPs need, each on its own rx and tx queue of the port, QP i on engine
 * i % engines; the main lcore polls them all.
 */
#define PERF_MAX_ENGINES	((PERF_MAX_QPS + DROCE_SHM_DB_SLOTS - 1) / DROCE_SHM_DB_SLOTS)

enum perf_mode {
	PERF_MODE_SEND,
	PERF_MODE_WRITE,
	PERF_MODE_LAT,
	PERF_MODE_RAW_TX,
	PERF_MODE_RAW_RX,
	PERF_MODE_RAW_IO,
	PERF_NB_MODES,
};

extern const char *const perf_mode_names[PERF_NB_MODES];

static inline bool
perf_mode_is_raw(enum perf_mode m)
{
	return m == PERF_MODE_RAW_TX || m == PERF_MODE_RAW_RX || m == PERF_MODE_RAW_IO;
}

/* Which hosts this process runs. */
enum perf_role {
	PERF_ROLE_BOTH,		/* host a and host b */
	PERF_ROLE_CLIENT,	/* host a: connects to the peer, sends (lat: pings first) */
	PERF_ROLE_SERVER,	/* host b: waits for the peer, receives (lat: answers) */
};

struct perf_opts {
	enum perf_mode mode;
	uint32_t size;			/* message (or raw frame payload) bytes */
	bool all_sizes;			/* -a: every power of two 1..PERF_MAX_SIZE */
	uint32_t qps;
	uint64_t iters;			/* per QP (raw: frames); 0 when by duration */
	double duration_s;		/* 0 when by iterations */
	uint8_t qp_type;		/* DROCE_SHM_QPT_RC or _UC */
	uint8_t mtu;			/* enum ibv_mtu */
	bool json;
	enum perf_role role;
	const char *peer;		/* --client's host */
	uint16_t tcp_port;		/* the out-of-band exchange's */
	uint32_t ipv4;			/* host order; 0: 192.0.2.<host id> */
	uint8_t ipv4_prefix_len;
};

/* perf_opts.c: the options after EAL's "--". 0, or -1 after printing why; 1 for --help. */
int perf_opts_parse(int argc, char **argv, struct perf_opts *o);
void perf_usage(const char *prog);

/* ---- Hosts (perf_main.c) ---- */

struct perf_cq {
	struct droce_engine_cq *cq;
	struct droce_shm_client_cq view;
};

struct perf_qp {
	struct droce_engine_qp *qp;
	struct droce_shm_client_qp view;
	uint32_t qpn;
	uint32_t next_slot;		/* message buffer slot of the next post */
	uint64_t posted;		/* sends (or receives) posted so far: the next wr_id */
	uint64_t done;			/* sends known complete (the signaled wr_id + 1) */
	uint64_t round_posted;		/* sends of the current size */
	bool closed;			/* the last send posted was signaled */
	uint64_t rposted;		/* receives posted so far */
	uint64_t rdone;			/* receives completed */
};

/*
 * What one end tells the other to connect its QPs: today filled in place for the peer
 * host of this process; the out-of-band exchange of two processes (perftest's TCP
 * handshake, app/droce-perf's perf_oob) will carry the same fields.
 */
struct perf_peer {
	uint8_t mac[6];
	uint8_t gid[16];
	uint32_t nb_qps;
	const uint32_t *qpns;		/* nb_qps QP numbers */
	uint32_t psn;			/* every QP's first send PSN */
	uint64_t buf_addr;		/* the remote buffer of RDMA WRITEs */
	uint32_t rkey;
	uint64_t buf_len;
	const uint64_t *vaddrs;		/* each QP's buffer (perftest's); NULL: buf_addr */
	const uint32_t *psns;		/* each QP's first PSN (perftest's); NULL: psn */
};

struct perf_host {
	const char *name;
	uint8_t id;
	uint16_t port;
	bool port_started;
	bool port_ours;			/* an internal net_ring port: closed at the end */
	struct rte_mempool *mp;
	/* net_ring topology: the rings this port receives, one per queue */
	struct rte_ring *link_in[PERF_MAX_ENGINES];
	struct droce_engine_dev *dev;
	struct droce_engine *eng[PERF_MAX_ENGINES];
	uint32_t nb_engines;
	void *region;
	uint64_t region_size;
	struct droce_shm_arena arena;
	struct droce_engine_domain *dom;
	uint32_t next_db_slot[PERF_MAX_ENGINES];
	uint8_t mac[6];
	uint8_t gid[16];
	uint8_t *buf;			/* the one MR: buf_slots slots of slot_size bytes */
	uint64_t buf_len;
	uint32_t slot_size;
	uint32_t buf_slots;
	uint32_t lkey, rkey;
	uint64_t buf_min;		/* a peer process may WRITE this much at buf */
	struct perf_cq scq, rcq;
	struct perf_qp *qps;
	uint32_t nb_qps;
	uint32_t *qpns;
	struct perf_qp **by_qpn;	/* max_qps entries */
	uint32_t max_qps;
	uint32_t psn;
	/* Alone (perf_peer.c): ARP and ICMP through the engines' slow path; else NULL. */
	struct droce_net *net;
	struct rte_ring *slow_rx, *slow_tx;
	uint64_t net_tick;
};

struct perf_run {
	const struct perf_opts *o;
	struct perf_host a, b;
	uint32_t max_size;		/* the largest size of the run: buffer slots */
	struct perf_peer peer_b;	/* what host a knows of host b: WRITEs' target */
	struct perf_remote *remote;	/* the peer process (perf_peer.c); NULL: both here */
};

static inline bool
perf_run_has_a(const struct perf_run *r)
{
	return r->o->role != PERF_ROLE_SERVER;
}

static inline bool
perf_run_has_b(const struct perf_run *r)
{
	return r->o->role != PERF_ROLE_CLIENT;
}

/* One figure of a bandwidth run (perf_traffic.c, perf_raw.c -> perf_report.c). */
struct perf_bw {
	uint32_t size;
	uint64_t iters;			/* messages (frames) counted */
	double peak_gbps, avg_gbps, mpps;
	uint64_t sent, received;	/* the two ends' counts, which must agree */
	bool sent_known, received_known;	/* false: the other process's, not told */
	double secs;
};

struct perf_lat {
	uint32_t size;
	uint64_t iters;
	double min_us, max_us, typical_us, avg_us, stdev_us, p99_us, p999_us;
};

/* perf_main.c: one pass of every engine of h; h's engines' counters summed. */
void perf_host_poll(struct perf_host *h);
void perf_host_stats(const struct perf_host *h, struct droce_engine_stats *st);

/* perf_peer.c: the peer in another process, in the order its perftest test speaks. */
int perf_peer_open(struct perf_run *r, struct perf_host *h, struct perf_opts *o);
int perf_peer_exchange(struct perf_run *r, struct perf_host *h, struct perf_peer *p);
int perf_peer_connected(struct perf_run *r);
int perf_peer_run_start(struct perf_run *r);
int perf_peer_run_end(struct perf_run *r, struct perf_bw *f);
bool perf_peer_end_ready(struct perf_run *r);
int perf_peer_close(struct perf_run *r);
void perf_peer_free(struct perf_run *r);
void perf_peer_host_release(struct perf_host *h);
void perf_peer_slow_poll(struct perf_host *h);
const char *perf_peer_name(const struct perf_run *r);

/* perf_traffic.c */
int perf_traffic_run(struct perf_run *r, uint32_t size);
/* perf_raw.c */
int perf_raw_run(struct perf_run *r, uint32_t size);

/* perf_report.c */
void perf_report_header(const struct perf_run *r);
void perf_report_bw(const struct perf_run *r, const struct perf_bw *f);
void perf_report_lat(const struct perf_run *r, const struct perf_lat *f);
void perf_report_footer(const struct perf_run *r);
void perf_report_ports(const struct perf_run *r);

#endif /* PERF_H */
