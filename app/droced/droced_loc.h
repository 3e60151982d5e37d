/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef DROCED_LOC_H
#define DROCED_LOC_H

/*
 * droced's internals, grouped by the file that defines them, in layers (layers.txt: calls
 * go down only; what goes up is a callback droced_main.c registers):
 *   droced_main.c     arguments, EAL, start-up and shut-down, the daemon's state, the wiring
 *   droced_loop.c     the control socket, the epoll loop, the tick
 *   droced_dispatch.c one table of every request: its size, who may make it, its handler
 *   droced_session.c  HELLO, a client's end, engine events to it, device and status queries
 *   droced_pd.c, droced_mr.c, droced_cq.c, droced_srq.c, droced_qp.c  the verbs objects
 *   droced_rdmacm.c, droced_rdmacm_conn.c, droced_rdmacm_id.c  the rdma_cm side: channels,
 *                     ids, their operations and events (droced_rdmacm_loc.h)
 *   droced_client.c   a connection's handle tables, notification pipes, event ring, parking
 *   droced_ibcm.c     the IB CM side: connections on the wire, MADs matched to them, timers
 *   droced_gsi.c      QP1 (the GSI) of every port: CM MADs in and out
 *   droced_port.c     ports, their slow-path rings, lib/net glue, neighbour resolution
 *   droced_nic.c      the ethdev under a port: queues, RSS, MTU, filters, link interrupts
 *   droced_mrmap.c    a memory region's view: its memfds and in-place file mappings mapped
 *   droced_devnodes.c /dev/infiniband/uverbs_droce<N> for programs that check the node
 * Everything here runs on the control thread (the EAL main lcore); engines run on their own
 * lcores and are reached only through lib/engine's control functions.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>
#include <time.h>

#include <rte_log.h>

#include <droce_cm.h>
#include <droce_cm_conn.h>
#include <droce_engine.h>
#include <droce_net.h>
#include <droce_shm_arena.h>
#include <droce_shm_proto.h>
#include <droce_shm_qp_attr.h>
#include <droce_wire_gid.h>

#include "droced_config.h"

extern int droced_logtype;
#define DROCED_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, droced_logtype, "droced: " fmt "\n", ##__VA_ARGS__)

/*
 * droced's one clock: CLOCK_MONOTONIC, in nanoseconds (lib/cm's time, the CM's timers) or
 * milliseconds (parked requests, the loop's tick, uptime).
 */
static inline uint64_t
droced_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t
droced_now_ms(void)
{
	return droced_now_ns() / 1000000;
}

/* ---- Sizes of droced's own resources ---- */

#define DROCED_NB_MBUFS		8192	/* per port: engines' rx rings, tx and slow path */
#define DROCED_MBUF_CACHE	256
/* Headroom plus the largest packet: headers (<= 106 bytes), 4096 of payload, pad, ICRC. */
#define DROCED_MBUF_ROOM	(RTE_PKTMBUF_HEADROOM + 4352)
/* The same for a RoCE MTU of at most 2048 in net_af_xdp's frames, where the kernel keeps
 * the first 256 bytes of each (XDP_PACKET_HEADROOM) for itself (doc/nics.md). */
#define DROCED_MBUF_ROOM_XDP_2K	(RTE_PKTMBUF_HEADROOM + 256 + 2304)
/* The port's Ethernet MTU is the RoCE MTU plus IPv6, UDP, BTH, extension headers, ICRC. */
#define DROCED_ROCE_HDR_ROOM	128
#define DROCED_NB_RXD		1024
#define DROCED_NB_TXD		1024
#define DROCED_SLOW_RING	1024	/* frames between engines and the control thread */
#define DROCED_SLOW_BURST	32
#define DROCED_SLOW_ROUNDS	8	/* slow_rx bursts after a batch of client requests */
#define DROCED_TICK_NS		1000000	/* control thread timer: 1 ms */
/*
 * Engines that sleep ([engines] mode adaptive or interrupt): after DROCED_IDLE_AFTER_MS
 * with nothing but ticks, the control thread ticks every DROCED_IDLE_TICK_NS (an idle
 * daemon costs 20 wake-ups a second, not 1000); any request, MAD or engine wake-up brings
 * the 1 ms tick back. Timers (ARP retries, CM retransmissions) of an idle daemon may then
 * fire up to 50 ms late.
 */
/* The ports' links (droced_port.c): looked at this often; a port down is restarted after
 * the first wait, which doubles up to the max while it stays down. */
#define DROCED_LINK_CHECK_MS	100
#define DROCED_PORT_RESTART_MS	1000
#define DROCED_PORT_RESTART_MAX_MS	30000
#define DROCED_IDLE_AFTER_MS	1000
#define DROCED_IDLE_TICK_NS	50000000
#define DROCED_MAX_EVENTS	1024	/* a domain's engine event ring (power of two) */
#define DROCED_MAX_PDS		65536	/* PDs of one client (no [limits] key: they cost nothing) */
#define DROCED_EPOLL_BATCH	64
#define DROCED_BACKLOG		128
/* A request waiting for ARP gives up after this (lib/net fails earlier: 3 x 100 ms). */
#define DROCED_PARK_TIMEOUT_MS	2000
#define DROCED_HUGE_PAGE	(2u << 20)	/* the region uses hugetlb only in whole 2 MiB pages */
#define DROCED_MIB		(1ull << 20)
#define DROCED_PAGE		4096u
/*
 * The hop limit of a RoCEv2 packet to a unicast GID: the route's, as Linux's RDMA core
 * sets it (ib_resolve_unicast_gid_dmac() replaces the caller's hop_limit with the route's,
 * net.ipv4.ip_default_ttl or the IPv6 default, 64). droced has no routing table.
 */
#define DROCED_ROUTE_HOP_LIMIT	64
/* The start of a client's command line the views show. */
#define DROCED_COMM_MAX		128

/* ---- droced_main.c ---- */

struct droced_client;
struct droced_capture;
struct rte_mbuf;

/* Why QP1 dropped a packet: X(name, description). */
#define DROCED_GSI_BAD_LIST(X) \
	X(OPCODE, "not a UD SEND ONLY") \
	X(PKEY, "P_Key not of the default partition") \
	X(QKEY, "Q_Key is not the GSI's 0x80010000") \
	X(LEN, "payload shorter than a 256-byte MAD") \
	X(DGID, "destination GID is not one of the port's") \
	X(MAD, "not a CM MAD droce reads (class, version, method, attribute)") \
	X(UNMATCHED, "CM MAD for no known connection")

enum droced_gsi_bad {
#define DROCED_GSI_BAD_ENUM(name, desc) DROCED_GSI_BAD_##name,
	DROCED_GSI_BAD_LIST(DROCED_GSI_BAD_ENUM)
#undef DROCED_GSI_BAD_ENUM
	DROCED_GSI_BAD_COUNT
};

struct droced_gsi_stats {
	uint64_t rx_mads;		/* CM MADs taken */
	uint64_t rx_bad[DROCED_GSI_BAD_COUNT];
	uint64_t tx_mads;		/* sent, to the wire or to ourselves */
	uint64_t tx_local;		/* of which to one of our own GIDs */
	uint64_t tx_drop;		/* not sent: no mbuf, ring full */
};

/* Each epoll registration points at one of these, first member of its owner. */
enum droced_fd_kind {
	DROCED_FD_LISTEN,
	DROCED_FD_SIGNAL,
	DROCED_FD_TIMER,
	DROCED_FD_WAKE,
	DROCED_FD_CLIENT,
	DROCED_FD_CALL,
};

struct droced_pollable {
	enum droced_fd_kind kind;
};

/* How the NIC filters multicast (droced_nic_mc_set); DROCE_PROTO_NIC_FILTER_* values. */
enum droced_nic_filter {
	DROCED_NIC_FILTER_NONE = DROCE_PROTO_NIC_FILTER_NONE,
	DROCED_NIC_FILTER_LIST = DROCE_PROTO_NIC_FILTER_LIST,
	DROCED_NIC_FILTER_ALLMULTI = DROCE_PROTO_NIC_FILTER_ALLMULTI,
	DROCED_NIC_FILTER_PROMISC = DROCE_PROTO_NIC_FILTER_PROMISC,
};

/* What droced_nic.c set the port's ethdev up with. */
struct droced_nic {
	char driver[32];		/* the PMD's name */
	uint16_t nb_queues;		/* rx and tx: one each per engine of the port */
	uint16_t nb_rxd, nb_txd;	/* descriptors per queue, within the device's limits */
	uint64_t rss_hf;		/* RSS hash types; 0: no RSS */
	bool rx_ip_csum;		/* the NIC checks received IPv4 header checksums */
	bool lsc;			/* link changes interrupt (else polled) */
	bool lsc_registered;
	bool lsc_pending;		/* set on the interrupt thread, taken by the tick */
	enum droced_nic_filter filter;
	uint32_t nb_mc;			/* multicast MACs last asked for */
	uint32_t eth_mtu;		/* set; 0: the device's default */
	bool pci;			/* a PCI device */
};

struct droced_port {
	struct droced *d;		/* the daemon the port belongs to */
	const struct droced_port_config *cfg;
	uint32_t index;
	uint16_t port_id;
	bool probed;		/* port_id is ours */
	bool started;
	bool rx_intr;		/* configured with rx interrupts (engines that sleep) */
	/* The link as last seen (droced_ports_tick, every DROCED_LINK_CHECK_MS) */
	bool link_up;		/* what the port reports: ACTIVE or DOWN */
	bool link_seen_up;	/* it came up at least once */
	uint64_t link_check_tsc;	/* next look */
	uint64_t restart_tsc;		/* down: the next restart of the port */
	uint32_t restart_ms;		/* down: the wait before that one (doubles) */
	uint64_t link_downs, restarts;	/* counts, for the log */
	struct rte_mempool *mp;
	struct rte_ring *slow_rx;	/* engines -> control thread (MP/SC) */
	struct rte_ring *slow_tx;	/* control thread -> the port's first engine (SP/SC) */
	struct droce_net *net;
	uint8_t mac[6];
	uint8_t gids[DROCE_ENGINE_MAX_GIDS][16];
	uint8_t gid_valid[DROCE_ENGINE_MAX_GIDS];
	uint8_t gid_type[DROCE_ENGINE_MAX_GIDS];
	uint32_t nb_gids;
	uint32_t engines[DROCE_ENGINE_MAX];	/* engine ids serving the port, queue = position */
	uint32_t nb_engines;
	/* The next QP's engine, round robin over the port's QPs, not each client's: an
	 * application with one QP (most of them) would otherwise always get the first. */
	uint32_t qp_rr;
	struct droced_nic nic;
	struct droced_capture *capture;	/* droce-ctl capture running on it, or NULL */
};

struct droced {
	struct droced_config cfg;
	struct droced_port ports[DROCED_CONFIG_MAX_PORTS];
	uint32_t nb_ports;
	struct droce_engine_dev *dev;
	struct droce_engine *engines[DROCE_ENGINE_MAX];
	uint32_t nb_engines;
	bool launched[DROCE_ENGINE_MAX];
	int epfd;
	struct droced_pollable listen_p, signal_p, timer_p, wake_p, call_p;
	int call_fd;		/* eventfd: another thread queued a call (droced_loop_call) */
	int lsock, sigfd, timerfd;
	bool tick_slow;		/* the idle tick (DROCED_IDLE_TICK_NS) is set */
	uint64_t busy_ms;	/* when the loop last saw more than its tick */
	int wake_fd;		/* eventfd: engines queued CM MADs on a slow_rx ring */
	bool socket_bound;	/* the path is ours to unlink */
	TAILQ_HEAD(, droced_client) clients;
	uint64_t start_ms;
	uint64_t clients_accepted;	/* connections since start: the next client's id */
	uint64_t clients_total;
	uint64_t clients_torn_down;
	bool stopping;
	struct droced_gsi_stats gsi;
};



/* ---- droced_port.c ---- */

/*
 * What the ports tell the layers above (droced_main.c sets them before the ports start):
 * the port is the bottom of droced's layers, and these calls go up.
 */
struct droced_port_hooks {
	/* lib/net resolved (status 0) or gave up on ip (host order) */
	void (*resolved)(struct droced_port *p, uint32_t ip, int status);
	/* the port's link went down or came back */
	void (*link)(struct droced_port *p, bool up);
	/* a frame the engines handed over: true when it was QP1's (consumed: taken or dropped) */
	bool (*qp1_rx)(struct droced_port *p, struct rte_mbuf *m);
	/* after each batch of frames: QP1's MADs to our own GIDs delivered; how many */
	unsigned int (*qp1_flush)(struct droced *d);
};

void droced_ports_set_hooks(const struct droced_port_hooks *h);
/* Probes, configures and starts every port; creates rings, mempools and lib/net state. */
int droced_ports_init(struct droced *d);
/* After the engines run: static neighbours, own GIDs, gratuitous ARPs, the start-up lines. */
int droced_ports_announce(struct droced *d);
/* Slow path of every port: received ARP/ICMP to lib/net, lib/net's timers. */
void droced_ports_tick(struct droced *d);
/* The frames engines handed over (ARP, ICMP to lib/net; QP1's MADs to the CM), bounded. */
unsigned int droced_ports_rx(struct droced *d);
void droced_ports_fini(struct droced *d);
/* The engine configuration of engine id on its port (queue, rings, addresses). */
void droced_port_engine_conf(const struct droced *d, uint32_t id, struct droce_engine_conf *ec);
void droced_port_info(const struct droced_port *p, struct droce_proto_port_info *info);
/* enum ibv_mtu of a RoCE MTU in bytes. */
uint8_t droced_mtu_enum(uint32_t mtu);

/*
 * Makes sure the device's neighbour table has a MAC for dgid before an AV is used:
 * 0 (own GID or known: added with droce_engine_dev_neigh_add), -EAGAIN (ARP under way: wait for
 * droced_client_resolved), -EHOSTUNREACH (cannot be resolved).
 */
int droced_neigh_ensure(struct droced_port *p, const uint8_t dgid[16]);
/* After a frame went on p's slow_tx: ends the napping engine's sleep so it sends now. */
void droced_port_tx_wake(struct droced_port *p);
/* Multicast MACs lib/net wants given to the NIC (after a group is joined or left). */
void droced_port_mcast_sync(struct droced_port *p);
/* QUERY_PORT_DETAIL's answer for port p. */
void droced_port_detail(const struct droced_port *p, struct droce_proto_port_detail *pd);

/* ---- droced_nic.c ---- */

struct rte_ether_addr;

/* Configures, sets up and starts p's device (p->mp made here); rx_intr: sleeping engines. */
int droced_nic_setup(struct droced_port *p, bool rx_intr, uint32_t idle_sleep_us);
/* The multicast MACs to receive (besides broadcast and the port's own MAC). */
void droced_nic_mc_set(struct droced_port *p, const struct rte_ether_addr *macs, uint32_t n);
/* True once after a link-change interrupt. */
bool droced_nic_lsc_take(struct droced_port *p);
/* The NIC's counters, and its own per-queue ones, into pd. */
void droced_nic_counters(const struct droced_port *p, struct droce_proto_port_detail *pd);
const char *droced_nic_filter_name(enum droced_nic_filter f);
/* Stops and closes the device (the link callback first). */
void droced_nic_close(struct droced_port *p);
/* The address vector as the wire will carry it (the route's hop limit, see above). */
void droced_route_av(struct droce_shm_ah_attr *ah);

/* ---- droced_gsi.c ---- */

extern const char *const droced_gsi_bad_names[DROCED_GSI_BAD_COUNT];
/* Who takes the CM MADs QP1 receives (the CM's wire side, set at start-up). */
typedef void (*droced_gsi_mad_fn)(struct droced_port *p, const uint8_t sgid[16],
				  const uint8_t dgid[16], const uint8_t smac[6],
				  const struct droce_cm_msg *m);
void droced_gsi_set_handler(droced_gsi_mad_fn fn);
/* A frame from slow_rx: true when it was a RoCEv2 packet to QP1 (consumed: taken or dropped). */
bool droced_gsi_rx(struct droced_port *p, struct rte_mbuf *m);
/*
 * Sends a MAD from QP1 at sgid (a GID of p) to QP1 at dgid through dmac, hop limit 64; to
 * one of our own GIDs it is queued for droced_gsi_flush() instead. 0 or -errno (dropped).
 */
int droced_gsi_send(struct droced_port *p, const uint8_t sgid[16], const uint8_t dgid[16],
		    const uint8_t dmac[6], uint8_t tclass, const uint8_t mad[DROCE_CM_MAD_LEN]);
/* Delivers the MADs queued to our own GIDs; how many. */
unsigned int droced_gsi_flush(struct droced *d);

/* ---- droced_telemetry.c ---- */

/* droced's /droce/ commands on DPDK's telemetry socket (after droced_loop_init). */
int droced_telemetry_init(struct droced *d);

/* ---- droced_metrics.c ---- */

/* The Prometheus endpoint of [metrics], when configured (after droced_loop_init). */
int droced_metrics_init(struct droced *d);
/* Stops serving (after droced_loop_fini: a scrape in progress gets its 503). */
void droced_metrics_fini(void);

/* ---- droced_loop.c ---- */

int droced_loop_init(struct droced *d);
/* The epoll loop: returns when a signal asked droced to stop. */
int droced_loop_run(struct droced *d);
/* Stops accepting, tells and drops every client, removes the socket. */
void droced_loop_fini(struct droced *d);
/*
 * Runs fn(d, arg) on the control thread, from another thread (DPDK telemetry's, the
 * metrics server's), and waits for it: what droced holds is the control thread's alone.
 * 0 once fn ran; -ETIMEDOUT: not started within timeout_ms (it never will be); -ESHUTDOWN:
 * droced is stopping.
 */
int droced_loop_call(struct droced *d, void (*fn)(struct droced *d, void *arg), void *arg,
		     unsigned int timeout_ms);

/* ---- droced_client.c ---- */

struct droced_table {
	void **obj;
	uint32_t cap;
	uint32_t nb;
	uint32_t max;	/* the client's limit: -ENOMEM beyond it */
	uint32_t hint;
	bool lowest_first;	/* a freed handle is the next one given (rdma_cm ids) */
};

struct droced_client {
	struct droced_pollable p;	/* first: epoll's data.ptr */
	struct droced *d;		/* the daemon it talks to */
	TAILQ_ENTRY(droced_client) next;
	uint64_t id;			/* names it in the views: the connections before it, + 1 */
	int fd;
	pid_t pid;
	uid_t uid;
	char comm[DROCED_COMM_MAX];	/* its process's command line (the views) */
	bool hello;
	bool dead;			/* torn down at the end of this loop pass */
	bool paused;
	struct droced_port *port;
	struct droced_rdmacm_chan *cm;	/* a CM channel (CM_OPEN), never with HELLO */
	/* The region: mapped here, its memfd passed to the client at HELLO. */
	uint8_t *region;
	uint64_t region_size;
	bool region_huge;
	int region_fd;
	struct droce_shm_arena *arena;
	struct droce_engine_domain *dom;
	struct droce_shm_event_ring *evring;
	int async_efd;		/* async notification pipe: write end (droced's) */
	int async_rfd;		/* its read end, sent with HELLO */
	uint32_t ev_prod;		/* ours: the copy in the region is the client's to read */
	/* Objects by handle. */
	struct droced_table pds, mrs, mws, cqs, srqs, qps, xrcds;
	uint32_t *ah_pd;		/* by engine AH number: PD handle + 1, 0 unused */
	uint32_t nb_ahs;
	uint64_t mr_bytes;
	uint64_t (*db_used)[DROCE_SHM_DB_WORDS];	/* per engine: doorbell slots in use */
	/* A request waiting for ARP (MODIFY_QP or CREATE_AH); no fds travel with those. */
	struct droced_capture *capture;	/* the capture it started (droced_capture.c) */
	/* An answer longer than struct droce_proto_resp (QUERY_VIEW), sent instead of it. */
	void *answer;
	size_t answer_len;
	bool parked;
	bool park_done;
	int park_status;
	uint32_t park_ip;		/* host order; 0: an IPv6 GID, only the timeout ends it */
	uint64_t park_deadline_ms;
	struct droce_proto_req park_req;
};

struct droced_client *droced_client_new(struct droced *d, int fd);
/*
 * The answer to the request in hand is answer (malloc'd, len bytes, taken over), not the
 * response: its op, seq and status are filled in from the response when it is sent.
 */
void droced_client_answer(struct droced_client *c, void *answer, size_t len);
struct droced_call;
/* A refusal at a configured limit (DROCE_PROTO_LIMIT_*) named in the response; returns rc. */
int droced_limit(struct droced_call *call, uint32_t limit, int rc);
/* Who the client is (SO_PEERCRED's pid and uid) and its command line, from /proc. */
void droced_client_identify(struct droced_client *c, pid_t pid, uid_t uid);
/*
 * Handle tables, droced's one kind: index = handle, grown on demand up to the client's
 * limit (then -ENOMEM); a handle the client sends is only ever looked up in its own
 * tables. Handles are given in turn, so a stale one does not name the next object at
 * once, or, lowest_first, the lowest free one (rdma_cm ids: librdmacm hashes them into a
 * fixed number of buckets).
 */
void droced_table_init(struct droced_table *t, uint32_t max, bool lowest_first);
int droced_table_add(struct droced_table *t, void *obj, uint32_t *handle);
void *droced_table_get(const struct droced_table *t, uint32_t handle);
/* The object of the lowest handle >= *handle (set to it), or NULL: none. */
void *droced_table_next(const struct droced_table *t, uint32_t *handle);
void droced_table_del(struct droced_table *t, uint32_t handle);
void droced_table_free(struct droced_table *t);
/*
 * A notification pipe (droce_shm_proto.h): *rfd for the application, *wfd (non-blocking)
 * for droced or an engine. 0 or -errno. A kick never blocks: a full pipe already has
 * notifications to read, a closed one has nobody to tell.
 */
int droced_notify_pipe(int *rfd, int *wfd);
void droced_notify_pipe_close(int rfd, int wfd);
void droced_notify_kick(int wfd);
uint32_t droced_pow2_at_least(uint32_t n);
/* The address of offset off of the client's region. */
void *droced_region_ptr(const struct droced_client *c, int64_t off);
/* An event to the client's event ring (no notification: see droced_client_event_put). */
void droced_client_event_ring_put(struct droced_client *c, uint32_t type, uint32_t handle);
/* An event droced itself raises (PORT_ERR, DEVICE_FATAL at shut-down), and its notification. */
void droced_client_event_put(struct droced_client *c, uint32_t type, uint32_t handle);
/*
 * Parks req until lib/net answers for dgid (or DROCED_PARK_TIMEOUT_MS): returns 1, what a
 * handler answers for a parked request (droced_dispatch.c).
 */
int droced_client_park(struct droced_client *c, const struct droce_proto_req *req,
		       const uint8_t dgid[16]);
/* lib/net resolved (status 0) or gave up on ip: the requests waiting for it may go on. */
void droced_client_resolved(struct droced_port *p, uint32_t ip, int status);

/* ---- The objects: droced_pd.c, droced_mr.c, droced_cq.c, droced_srq.c, droced_qp.c ---- */

struct droced_rdmacm_id;

/* One request as droced_dispatch hands it to its handler. */
struct droced_call {
	const struct droce_proto_req *req;
	size_t len;			/* the message's bytes */
	const int *fds;			/* what came with it */
	unsigned int nfds;
	struct droce_proto_resp *resp;	/* zeroed; op and seq set */
	int *out_fds;			/* what goes back with the response */
	unsigned int *out_nfds;
	struct droced_rdmacm_id *cm_id;	/* the id a CM request names (GATE_CM_ID) */
};

/* A handler: 0 or -errno (the response's status), or 1: parked (droced_client_park). */
typedef int (*droced_op_fn)(struct droced_client *c, struct droced_call *call);

struct droced_pd {
	uint32_t users;		/* MRs, SRQs, QPs and AHs on it: DEALLOC_PD -> -EBUSY */
};

struct droced_xrcd;

/* A client's open of an XRC domain. */
struct droced_xrcd_ref {
	struct droced_xrcd *x;
	uint32_t users;		/* its XRC SRQs and targets: CLOSE_XRCD -> -EBUSY */
};

struct droced_cq {
	struct droce_engine_cq *cq;
	int64_t ctl_off, ring_off;
	uint32_t size;
	int efd;		/* notification pipe: write end (the engine's), -1 without */
	int rfd;		/* its read end, the application's copy sent with CREATE_CQ */
};

struct droced_srq {
	struct droce_engine_srq *srq;
	int64_t ctl_off, ring_off;
	uint64_t ring_len;
	uint32_t size, stride, max_sge, pd;
	uint32_t xrcd;		/* XRC SRQ: its XRC domain's handle; else DROCE_PROTO_NO_HANDLE */
};

/* droced_pd.c */
int droced_pd_alloc(struct droced_client *c, struct droced_call *call);
int droced_pd_dealloc(struct droced_client *c, struct droced_call *call);
struct droced_pd *droced_pd_get(const struct droced_client *c, uint32_t handle);
int droced_xrcd_open(struct droced_client *c, struct droced_call *call);
int droced_xrcd_close(struct droced_client *c, struct droced_call *call);
struct droced_xrcd_ref *droced_xrcd_get(struct droced_client *c, uint32_t handle);
/* The domain's droced-wide id, what the engines compare. */
uint32_t droced_xrcd_id(const struct droced_xrcd_ref *ref);
int droced_ah_create(struct droced_client *c, struct droced_call *call);
int droced_ah_destroy(struct droced_client *c, struct droced_call *call);
void droced_pd_release_all(struct droced_client *c);
/* droced_mr.c */
int droced_mr_reg(struct droced_client *c, struct droced_call *call);
int droced_mr_rereg(struct droced_client *c, struct droced_call *call);
int droced_mr_dereg(struct droced_client *c, struct droced_call *call);
int droced_mw_alloc(struct droced_client *c, struct droced_call *call);
int droced_mw_dealloc(struct droced_client *c, struct droced_call *call);
void droced_mr_release_all(struct droced_client *c);
/* What the views show of an MR. */
struct droced_mr_info {
	uint64_t iova, length;
	uint32_t lkey, rkey, pd;
	uint32_t access;	/* enum ibv_access_flags */
};
/* c's MR with the lowest handle >= *handle (*handle set to it): 0, or -ENOENT. */
int droced_mr_next(const struct droced_client *c, uint32_t *handle, struct droced_mr_info *info);
/* droced_cq.c */
int droced_cq_create(struct droced_client *c, struct droced_call *call);
int droced_cq_resize(struct droced_client *c, struct droced_call *call);
int droced_cq_destroy(struct droced_client *c, struct droced_call *call);
struct droced_cq *droced_cq_get(const struct droced_client *c, uint32_t handle);
void droced_cq_release_all(struct droced_client *c);
/* droced_srq.c */
int droced_srq_create(struct droced_client *c, struct droced_call *call);
int droced_srq_modify(struct droced_client *c, struct droced_call *call);
int droced_srq_query(struct droced_client *c, struct droced_call *call);
int droced_srq_destroy(struct droced_client *c, struct droced_call *call);
struct droced_srq *droced_srq_get(const struct droced_client *c, uint32_t handle);
void droced_srq_release_all(struct droced_client *c);
/* droced_qp.c */
int droced_qp_create(struct droced_client *c, struct droced_call *call);
int droced_qp_modify(struct droced_client *c, struct droced_call *call);
int droced_qp_query(struct droced_client *c, struct droced_call *call);
int droced_qp_destroy(struct droced_client *c, struct droced_call *call);
int droced_qp_attach_mcast(struct droced_client *c, struct droced_call *call);
int droced_qp_detach_mcast(struct droced_client *c, struct droced_call *call);
/*
 * Modifies QP number qpn of a device context of owner's process (same pid and uid): how
 * droced's CM moves an rdma_cm id's QP (DROCE_PROTO_CM_CONN_F_MOVE_QP). 0; -ENOENT: no
 * such QP of that process; -EAGAIN: the AV's neighbour is not resolved yet (nothing
 * changed); or the engine's refusal.
 */
int droced_qp_modify_num(const struct droced_client *owner, uint32_t qpn,
			 const struct droce_shm_qp_attr *attr);
void droced_qp_release_all(struct droced_client *c);

/* droced_capture.c: droce-ctl capture (CAPTURE_START with the file, _STATUS, _STOP) */
struct droced_capture;
int droced_capture_start(struct droced_client *c, struct droced_call *call);
int droced_capture_status(struct droced_client *c, struct droced_call *call);
int droced_capture_stop(struct droced_client *c, struct droced_call *call);
/* The client's capture, at its end: stopped, its file complete. */
void droced_capture_release(struct droced_client *c);
/* Every pass of the loop: what the engines copied, to the files. */
void droced_captures_drain(struct droced *d);

/* ---- droced_session.c ---- */

int droced_session_hello(struct droced_client *c, struct droced_call *call);
int droced_session_query_ports(struct droced_client *c, struct droced_call *call);
int droced_session_query_qps(struct droced_client *c, struct droced_call *call);
int droced_session_query_port_detail(struct droced_client *c, struct droced_call *call);
int droced_session_status(struct droced_client *c, struct droced_call *call);
/* droced's status (STATUS's answer; telemetry's /droce/status, the metrics). */
void droced_status_get(const struct droced *d, struct droce_proto_status *st);
int droced_session_query_view(struct droced_client *c, struct droced_call *call);
/* Engine events to the client's event ring and notification pipe. */
void droced_client_events(struct droced_client *c);
/* Every client's port state and a PORT_ERR or PORT_ACTIVE event. */
void droced_clients_port_event(struct droced_port *p, bool up);
/* Frees everything the client owned and the client; counts it in clients_torn_down. */
void droced_client_free(struct droced_client *c);

/* ---- droced_view.c ---- */

/*
 * Where a view's rows go (droced_view_run): droce-ctl's answer, DPDK telemetry, the
 * Prometheus metrics. One producer, three encoders.
 */
struct droced_view_sink {
	/* A row with this key begins; false: no room for it (the view stops there). */
	bool (*row)(struct droced_view_sink *s, uint64_t key);
	/* A number of the row: tag DROCE_PROTO_VIEW_TAG_ID, _GAUGE or _COUNTER; help: what it
	 * counts (NULL for an ID). */
	void (*num)(struct droced_view_sink *s, uint8_t tag, const char *name, uint64_t v,
		    const char *help);
	/* A text field of the row (DROCE_PROTO_VIEW_TAG_LABEL). */
	void (*text)(struct droced_view_sink *s, const char *name, const char *v);
	/* Who asks: root (0) sees everything, another uid its own clients' objects, no keys. */
	uid_t viewer;
};

/*
 * Runs view v (DROCE_PROTO_VIEW_*) from its first row with a key >= start into s: 1 when it
 * stopped because s had no room, 0 at its end, -EINVAL: no such view. Control thread.
 */
int droced_view_run(struct droced *d, uint32_t v, uint64_t start, struct droced_view_sink *s);
/* The view's name (droce-ctl's subcommand, the telemetry command), or NULL. */
const char *droced_view_name(uint32_t v);

/* ---- droced_dispatch.c ---- */

/*
 * Handles one request of n bytes with nfds descriptors: fills resp, or returns 1 when the
 * request is parked (no response yet: stop reading the client). Descriptors it keeps are
 * set to -1 in fds.
 */
int droced_dispatch(struct droced_client *c, const struct droce_proto_req *req, size_t n,
		    int *fds, unsigned int nfds, struct droce_proto_resp *resp, int *out_fds,
		    unsigned int *out_nfds);
/*
 * A parked request whose neighbour resolved (status 0) or failed, or that timed out: runs
 * it again or answers its failure in resp (0), or parks it again (1).
 */
int droced_dispatch_resume(struct droced_client *c, int status, struct droce_proto_resp *resp);

/* ---- droced_rdmacm.c ---- */

struct droced_rdmacm_chan;
struct droced_ibcm_conn;

/* The requests of a CM channel (droced_dispatch.c's rows). */
struct droced_rdmacm_id *droced_rdmacm_id_lookup(const struct droced_client *c, uint32_t handle);
int droced_rdmacm_open(struct droced_client *c, struct droced_call *call);
int droced_rdmacm_create_id(struct droced_client *c, struct droced_call *call);
int droced_rdmacm_get_event(struct droced_client *c, struct droced_call *call);
int droced_rdmacm_migrate(struct droced_client *c, struct droced_call *call);
int droced_rdmacm_destroy_id(struct droced_client *c, struct droced_call *call);
int droced_rdmacm_bind(struct droced_client *c, struct droced_call *call);
int droced_rdmacm_resolve_addr(struct droced_client *c, struct droced_call *call);
int droced_rdmacm_resolve_route(struct droced_client *c, struct droced_call *call);
int droced_rdmacm_query(struct droced_client *c, struct droced_call *call);
int droced_rdmacm_listen(struct droced_client *c, struct droced_call *call);
int droced_rdmacm_connect(struct droced_client *c, struct droced_call *call);
int droced_rdmacm_accept(struct droced_client *c, struct droced_call *call);
int droced_rdmacm_establish(struct droced_client *c, struct droced_call *call);
int droced_rdmacm_reject(struct droced_client *c, struct droced_call *call);
int droced_rdmacm_disconnect(struct droced_client *c, struct droced_call *call);
int droced_rdmacm_init_qp_attr(struct droced_client *c, struct droced_call *call);
int droced_rdmacm_set_option(struct droced_client *c, struct droced_call *call);
int droced_rdmacm_notify(struct droced_client *c, struct droced_call *call);
int droced_rdmacm_join_mcast(struct droced_client *c, struct droced_call *call);
int droced_rdmacm_leave_mcast(struct droced_client *c, struct droced_call *call);
/* The channel's connection closed: its ids are destroyed (their connections ended on the wire). */
void droced_rdmacm_chan_free(struct droced_client *c);
/* Address resolutions that ended (lib/net) or timed out; pipe bytes still owed. */
void droced_rdmacm_tick(uint64_t now_ns);
/* lib/net resolved (status 0) or gave up on ip on port p. */
void droced_rdmacm_resolved(struct droced_port *p, uint32_t ip, int status);
/* droced stops: DEVICE_REMOVAL to every id with a device. */
void droced_rdmacm_shutdown(struct droced *d);
/* Channels, ids, connections and QP1's counters, for droce-ctl status. */
void droced_rdmacm_status(const struct droced *d, struct droce_proto_status *st);
/* What the views show of an rdma_cm id. */
struct droced_rdmacm_id_view {
	uint32_t handle;
	uint32_t state;			/* DROCE_PROTO_CM_ID_* */
	uint16_t ps;			/* DROCE_PROTO_CM_PS_* */
	uint8_t qp_type;		/* DROCE_SHM_QPT_* */
	uint32_t port;			/* droced's port index; DROCE_PROTO_NO_HANDLE: none */
	struct droce_proto_cm_addr src, dst;
	uint32_t qpn, remote_qpn;
	int backlog, pending;		/* a listener's */
	const char *conn;		/* its CM connection's state (lib/cm), or NULL */
	uint32_t local_comm_id, remote_comm_id;
	uint32_t nb_mcast;
};
/* c's rdma_cm id with the lowest handle >= *handle (*handle set to it): 0, or -ENOENT. */
int droced_rdmacm_id_next(const struct droced_client *c, uint32_t *handle,
			  struct droced_rdmacm_id_view *v);

/* What droced_ibcm.c calls back (struct droced_ibcm_hooks) when the wire moves a
 * connection. */
void droced_rdmacm_conn_event(struct droced_rdmacm_id *id, enum droce_cm_event ev,
			      const struct droce_cm_msg *m, uint16_t rej_reason);
/* A new REQ or SIDR_REQ to a listener: a new id; NULL (and *reject set) when refused. */
struct droced_rdmacm_id *droced_rdmacm_req_listener(struct droced_port *p, const uint8_t dgid[16],
						    const struct droce_cm_msg *m, uint16_t *reject);
void droced_rdmacm_id_attach(struct droced_rdmacm_id *id, struct droced_ibcm_conn *conn);

/* ---- droced_ibcm.c ---- */

/* The rdma_cm side, called up from the wire side (droced_main.c sets them at start-up). */
struct droced_ibcm_hooks {
	/* the connection of id moved: its event (m: the MAD that caused it, or NULL) */
	void (*conn_event)(struct droced_rdmacm_id *id, enum droce_cm_event ev,
			   const struct droce_cm_msg *m, uint16_t rej_reason);
	/* a new REQ or SIDR_REQ to a listener: a new id; NULL (and *reject set) when refused */
	struct droced_rdmacm_id *(*req_listener)(struct droced_port *p, const uint8_t dgid[16],
					     const struct droce_cm_msg *m, uint16_t *reject);
	/* id now has conn as its connection (NULL: none) */
	void (*id_attach)(struct droced_rdmacm_id *id, struct droced_ibcm_conn *conn);
};

void droced_ibcm_set_hooks(const struct droced_ibcm_hooks *h);

/* A MAD QP1 took, from sgid (MAC smac) to our dgid on port p. */
void droced_ibcm_mad_input(struct droced_port *p, const uint8_t sgid[16], const uint8_t dgid[16],
			   const uint8_t smac[6], const struct droce_cm_msg *m);
/* A connection end for an id, on port p between lgid and rgid (-> NULL: none left). */
struct droced_ibcm_conn *droced_ibcm_conn_new(struct droced_rdmacm_id *id, struct droced_port *p,
					      const uint8_t lgid[16], const uint8_t rgid[16],
					      const uint8_t rmac[6], uint8_t tclass);
struct droce_cm_conn *droced_ibcm_conn_sm(struct droced_ibcm_conn *conn);
/*
 * Sends what a lib/cm call put in out, arms its timer, reports its event to the id (m: the
 * MAD that caused it, or NULL); frees the connection when it is back in IDLE.
 */
void droced_ibcm_conn_out(struct droced_ibcm_conn *conn, const struct droce_cm_out *out,
			  const struct droce_cm_msg *m);
/* The id goes: its connection is ended on the wire as Linux does, then lives on alone. */
void droced_ibcm_conn_orphan(struct droced_ibcm_conn *conn);
/* Retransmissions and timewaits whose deadline passed. */
void droced_ibcm_conn_timers(uint64_t now_ns);
uint32_t droced_ibcm_conn_count(void);

/* ---- droced_args.c ---- */

#define DROCED_ARGS_MAX	(2 * DROCED_CONFIG_VALUE_MAX + 64)	/* EAL's arguments */

struct droced_args {
	const char *config;	/* --config FILE; NULL: the built-in configuration */
	const char *instance;	/* --instance NAME; NULL: none */
};

/* droced's own options: 0, 1 (--help: usage printed), -1 (said why on stderr). */
int droced_args_parse(int argc, char **argv, struct droced_args *a);
/*
 * --instance NAME applied to cfg: %i in its socket, port devices and EAL arguments reads
 * NAME; the socket is /run/droce/NAME.sock and the file prefix droce-NAME unless the file
 * names them with %i. 0 or -1 (said why).
 */
int droced_args_instance(const struct droced_args *a, struct droced_config *cfg);
/* EAL's argument vector (static storage): the file's args, the command line's, lcores. */
int droced_args_eal(const struct droced_config *cfg, int argc, char **argv, char ***eal_argv,
		    int *eal_argc);
/* Before EAL: 0, or -1 when another process holds the file prefix (said who). */
int droced_args_prefix_free(const struct droced_config *cfg, int argc, char **argv);

/* ---- droced_log.c ---- */

/* rte_log's stream: standard output, and syslog off a terminal (before EAL starts). */
int droced_log_init(void);
/* The engines' queue (after EAL, before the engines): they never write a log themselves. */
int droced_log_queue(void);
/* Control thread: writes what the engines queued; how many. */
unsigned int droced_log_flush(void);
/* After the engines stopped: the queue written and gone. */
void droced_log_fini(void);

/* ---- droced_mrmap.c ---- */

/* An MR's pieces as droced maps them, back to back. */
struct droced_mr_view {
	uint8_t *base;
	uint64_t len;
	bool read_only;		/* in-place pieces mapped for reading: no write access later */
};

/*
 * Maps the np pieces of a registration (fds: the memfds of the pieces that are not
 * MAPPING, in order) with access in mind, checked; [first_off, first_off + length) must lie
 * in them. 0 or -errno, nothing left mapped.
 */
int droced_mr_view_map(const struct droced_client *c, const struct droce_proto_mr_piece *pieces,
		       uint32_t np, const int *fds, unsigned int nfds, uint32_t access,
		       uint64_t first_off, uint64_t length, struct droced_mr_view *out);
/* Whether a view can serve access (in-place pieces mapped for reading take no writes). */
bool droced_mr_view_allows(const struct droced_mr_view *view, uint32_t access);
/* Unmaps a view (after no engine can be inside it); a view never mapped is left alone. */
void droced_mr_view_unmap(struct droced_mr_view *view);

/* ---- droced_devnodes.c ---- */

/* /dev/infiniband/uverbs_droce<N> for the ports (see there); never fails droced. */
void droced_devnodes_init(uint32_t nb_ports);
void droced_devnodes_fini(void);

#endif /* DROCED_LOC_H */
